//! The HTML report: `DIR/index.html` and PNG images under `DIR/img/`.
//!
//! One self-contained page (inline CSS, no script, relative image paths) that
//! opens from the file system in any browser: the verdict first, then the
//! failures, the backends, the generated cases, the reference ray sets, every
//! image check (renders side by side, diff heat maps, metrics), the thresholds
//! with their reasons, and the run's configuration and timings.

use crate::hits::HitCheck;
use crate::images::tile_means;
use crate::thresholds::{self, PIXEL_OFF_LEVEL};
use crate::{BackendStatus, ImageCheck, Report};
use prism_core::{Image, PixelFormat};
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};

/// Why the report could not be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReportError {
    /// Creating a directory or writing a file failed.
    Io {
        /// The path.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// Encoding a PNG failed.
    Png {
        /// The path.
        path: String,
        /// The encoder's message.
        message: String,
    },
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::Io { path, message } => write!(f, "{path}: {message}"),
            ReportError::Png { path, message } => write!(f, "{path}: PNG: {message}"),
        }
    }
}

impl std::error::Error for ReportError {}

fn io_err(path: &Path, e: std::io::Error) -> ReportError {
    ReportError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// Escape text for HTML.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A file name from `parts`: lowercase ASCII letters and digits kept, every
/// other byte written `_xx` (hex), the parts joined by `-`, then `.{ext}`.
/// Different parts give different names (`Cornell` and `cornell`, `a b` and
/// `a_b` do not share a file), and every name is safe on any file system.
fn file_name(parts: &[&str], ext: &str) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            s.push('-');
        }
        for c in p.chars() {
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                s.push(c);
            } else {
                let mut utf8 = [0u8; 4];
                for b in c.encode_utf8(&mut utf8).bytes() {
                    let _ = write!(s, "_{b:02x}"); // ok: writing to a String cannot fail
                }
            }
        }
    }
    s.push('.');
    s.push_str(ext);
    s
}

fn save_rgba(dir: &Path, name: &str, w: u32, h: u32, rgba: Vec<u8>) -> Result<String, ReportError> {
    let path = dir.join("img").join(name);
    let png = |message: String| ReportError::Png {
        path: path.display().to_string(),
        message,
    };
    let buf = image::RgbaImage::from_raw(w, h, rgba)
        .ok_or_else(|| png(format!("{w}x{h} does not match the pixel data")))?;
    buf.save_with_format(&path, image::ImageFormat::Png)
        .map_err(|e| png(e.to_string()))?;
    Ok(format!("img/{name}"))
}

fn save_image(dir: &Path, name: &str, image: &Image) -> Result<String, ReportError> {
    save_rgba(
        dir,
        name,
        image.width(),
        image.height(),
        image.to_rgba8_bytes().map_err(|e| ReportError::Png {
            path: dir.join("img").join(name).display().to_string(),
            message: e.to_string(),
        })?,
    )
}

/// Heat-map colour of a difference `d` in display units: black for none, then a
/// log scale (`log2(1 + 255 d) / 8`) through purple (2/255), red (16/255) and
/// orange to pale yellow (full scale), in the manner of "inferno".
pub fn heat(d: f64) -> [u8; 4] {
    const STOPS: [(f64, [f64; 3]); 6] = [
        (0.0, [0.0, 0.0, 4.0]),
        (0.2, [40.0, 11.0, 84.0]),
        (0.4, [101.0, 21.0, 110.0]),
        (0.6, [187.0, 55.0, 84.0]),
        (0.8, [249.0, 142.0, 9.0]),
        (1.0, [252.0, 255.0, 164.0]),
    ];
    if d.is_nan() || d <= 0.0 {
        return [0, 0, 0, 255];
    }
    let x = ((1.0 + 255.0 * d).log2() / 8.0).clamp(0.0, 1.0);
    let k = STOPS
        .windows(2)
        .position(|w| x <= w[1].0)
        .unwrap_or(STOPS.len() - 2);
    // ok: `k` indexes a window of two, so `k + 1 < STOPS.len()`.
    let ((x0, c0), (x1, c1)) = (STOPS[k], STOPS[k + 1]);
    let f = (x - x0) / (x1 - x0);
    let mix = |i: usize| (c0[i] + f * (c1[i] - c0[i])).round().clamp(0.0, 255.0) as u8;
    [mix(0), mix(1), mix(2), 255]
}

fn display_of(image: &Image) -> Vec<[f32; 3]> {
    match image.format() {
        PixelFormat::LinearF32 => image
            .linear()
            .iter()
            .map(|p| {
                [
                    crate::images::display(p[0]),
                    crate::images::display(p[1]),
                    crate::images::display(p[2]),
                ]
            })
            .collect(),
        PixelFormat::Srgba8 => image
            .rgba8()
            .iter()
            .map(|p| {
                [
                    p[0] as f32 / 255.0,
                    p[1] as f32 / 255.0,
                    p[2] as f32 / 255.0,
                ]
            })
            .collect(),
    }
}

/// Per-pixel heat map of the largest channel difference.
fn diff_map(a: &Image, b: &Image) -> Vec<u8> {
    let (da, db) = (display_of(a), display_of(b));
    da.iter()
        .zip(&db)
        .flat_map(|(p, q)| {
            let d = (0..3).map(|c| (p[c] - q[c]).abs()).fold(0.0f32, f32::max);
            heat(d as f64)
        })
        .collect()
}

/// Heat map of tile-mean differences, each tile drawn at full size.
fn tile_map(a: &Image, b: &Image, tile: u32) -> Vec<u8> {
    let (tx, _, ma) = tile_means(a, tile);
    let (_, _, mb) = tile_means(b, tile);
    let tile = tile.max(1);
    let (w, h) = (a.width(), a.height());
    let mut out = Vec::with_capacity(w as usize * h as usize * 4);
    for y in 0..h {
        for x in 0..w {
            let i = ((y / tile) * tx + x / tile) as usize;
            let d = match (ma.get(i), mb.get(i)) {
                (Some(p), Some(q)) => (0..3).map(|c| (p[c] - q[c]).abs()).fold(0.0, f64::max),
                _ => 0.0,
            };
            out.extend(heat(d));
        }
    }
    out
}

/// The colour scale of the heat maps, 256 x 12 pixels.
fn legend() -> Vec<u8> {
    let mut out = Vec::with_capacity(256 * 12 * 4);
    for _ in 0..12 {
        for x in 0..256u32 {
            // Invert the log scale: x / 255 of the way along.
            let d = ((x as f64 / 255.0 * 8.0).exp2() - 1.0) / 255.0;
            out.extend(heat(if x == 0 { 0.0 } else { d }));
        }
    }
    out
}

const CSS: &str = r#"
:root { --ok: #1a7f37; --bad: #c62828; --muted: #5f6b7a; --line: #d9dee5; --bg: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: #1f2328; margin: 0; background: #fff; }
main { max-width: 1180px; margin: 0 auto; padding: 0 24px 48px; }
header.banner { padding: 22px 24px; color: #fff; }
header.banner.pass { background: linear-gradient(90deg, #1a7f37, #2da44e); }
header.banner.fail { background: linear-gradient(90deg, #a40e26, #cf222e); }
header.banner .inner { max-width: 1180px; margin: 0 auto; display: flex; align-items: baseline; gap: 20px; flex-wrap: wrap; }
header.banner h1 { font-size: 20px; margin: 0; font-weight: 600; opacity: .95; }
#verdict { font-size: 34px; font-weight: 800; letter-spacing: .06em; margin: 0; }
header.banner .summary { font-size: 15px; margin: 0; }
header.banner .when { font-size: 12px; opacity: .85; margin-left: auto; }
nav { position: sticky; top: 0; background: #fff; border-bottom: 1px solid var(--line); z-index: 1; }
nav .inner { max-width: 1180px; margin: 0 auto; padding: 8px 24px; display: flex; gap: 18px; flex-wrap: wrap; }
nav a { color: #0969da; text-decoration: none; font-weight: 500; }
h2 { font-size: 19px; margin: 34px 0 8px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
h3 { font-size: 16px; margin: 0; }
p.lead { color: var(--muted); margin: 4px 0 12px; max-width: 900px; }
table { border-collapse: collapse; width: 100%; margin: 8px 0 4px; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 5px 8px; text-align: left; vertical-align: top; }
th { background: var(--bg); font-weight: 600; font-size: 12.5px; color: #3d4652; }
td.num, th.num { text-align: right; white-space: nowrap; }
td.group { width: 400px; border-right: 1px solid var(--line); }
td.who { white-space: nowrap; }
td.group .settings { margin-top: 2px; }
tr.detail td { font-size: 12px; color: var(--muted); border-bottom: 1px solid var(--line); padding-top: 0; }
tr.bad td { background: #fff5f5; }
.chip { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; }
.chip.pass { background: #dafbe1; color: var(--ok); }
.chip.fail { background: #ffebe9; color: var(--bad); }
.chip.skip { background: #eef1f4; color: var(--muted); }
.failures { background: #fff5f5; border: 1px solid #f5c2c0; border-radius: 8px; padding: 10px 16px; }
.failures li { margin: 3px 0; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
.card { border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px; margin: 16px 0; }
.card.bad { border-color: #f5c2c0; box-shadow: 0 0 0 3px #ffebe9; }
.card .head { display: flex; align-items: center; gap: 12px; flex-wrap: wrap; }
.card .settings { color: var(--muted); font-size: 12.5px; }
.figs { display: flex; flex-wrap: wrap; gap: 14px; margin: 6px 0 8px; }
figure { margin: 0; }
figure img { display: block; width: 256px; height: auto; image-rendering: pixelated; border: 1px solid var(--line); border-radius: 4px; background: #000; }
figcaption { font-size: 12px; color: var(--muted); margin-top: 3px; max-width: 256px; }
figcaption b { color: #1f2328; }
.badtext { color: var(--bad); font-weight: 600; }
.rowlabel { font-size: 12px; font-weight: 600; color: #3d4652; text-transform: uppercase; letter-spacing: .04em; margin: 12px 0 0; }
figure.missing div { width: 256px; height: 96px; display: flex; align-items: center; justify-content: center; background: var(--bg); border: 1px dashed var(--line); border-radius: 4px; color: var(--muted); }
.legend { display: flex; align-items: center; gap: 10px; font-size: 12px; color: var(--muted); margin: 6px 0 0; }
.legend img { width: 256px; height: 12px; image-rendering: pixelated; border-radius: 2px; }
.ticks { position: relative; width: 256px; height: 14px; }
.ticks span { position: absolute; transform: translateX(-50%); font-size: 11px; }
.mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
footer { color: var(--muted); font-size: 12.5px; margin-top: 36px; }
"#;

fn chip(pass: bool) -> &'static str {
    if pass {
        r#"<span class="chip pass">pass</span>"#
    } else {
        r#"<span class="chip fail">fail</span>"#
    }
}

/// Seconds since 1970 as `YYYY-MM-DD HH:MM UTC`.
fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}

/// A signed number of 8-bit levels, without a minus sign on zero.
fn signed_levels(x: f64) -> String {
    let l = x * 255.0;
    if l.abs() < 0.005 {
        "0.00".into()
    } else {
        format!("{l:+.2}")
    }
}

fn pct(x: f64) -> String {
    format!("{:.3}%", 100.0 * x)
}

/// One table row of a hit check (plus a detail row when it failed). `first`:
/// the first cell's HTML and how many rows it spans (`None`: a row under a
/// spanning cell). `face_plane`: include that column.
fn hit_row(out: &mut String, c: &HitCheck, first: Option<(&str, usize)>, face_plane: bool) {
    let pass = c.passed();
    let _ = write!(out, "<tr{}>", if pass { "" } else { " class=bad" });
    if let Some((html, span)) = first {
        let _ = write!(out, "<td rowspan={span} class=group>{html}</td>");
    }
    let _ = write!(
        out,
        "<td class=who>{}</td><td class=who>{}</td>",
        esc(&c.backend),
        esc(&c.against)
    );
    let _ = write!(
        out,
        "<td class=num>{}</td><td class=num>{}</td>\
         <td class=num>{} <span class=settings>({})</span></td>{}<td class=num>{}</td><td class=num>{}</td>\
         <td class=num>{}</td><td class=num>{:.0} / {:.0}</td><td>{}</td></tr>",
        c.counts.total,
        c.counts.matches,
        c.counts.ties,
        pct(c.tie_share()),
        if face_plane {
            format!("<td class=num>{}</td>", c.face_plane)
        } else {
            String::new()
        },
        c.counts.mismatches,
        c.occluded_disagreements,
        if c.uv_checked {
            c.uv_mismatches.to_string()
        } else {
            "–".into()
        },
        c.intersect_ms,
        c.occluded_ms,
        chip(pass)
    );
    if !pass {
        // Every reason (a check failing on its tie share alone has no first
        // problem), then the first problem ray where there is one.
        let mut detail = c.reasons().join(", ");
        if let Some(p) = c.first_problem.as_ref().filter(|_| c.error.is_none()) {
            detail.push_str(&format!("; first: {p}"));
        }
        // The spanning first cell covers this row, so it has one column less.
        let _ = write!(
            out,
            "<tr class=\"detail bad\"><td colspan={} class=mono>{}</td></tr>",
            if face_plane { 11 } else { 10 },
            esc(&detail)
        );
    }
}

/// The section on two-level scenes: the instanced reference sets (instance
/// ids compared), the generated instanced cases and the refit cases, each
/// also listed in its own section above.
fn two_level_section(out: &mut String, report: &Report) {
    let _ = write!(
        out,
        "<h2 id=two-level>Two-level scenes</h2><p class=lead>Geometries placed by instances: \
         <b>instanced reference sets</b>, every backend against Embree's hits of a mesh placed \
         many times (the same primitive of the same instance within the tolerance is a match, \
         another primitive or instance there a tie; the tolerance's absolute floor is a few ulps \
         of the ray's placement in the instance over the hit's cosine, the rounding every tracer \
         makes carrying a ray into an instance's space); <b>generated instanced cases</b>, random \
         geometries under random rotations, non-uniform scales and translations with random ray \
         and instance masks, against an oracle that tests triangles carried into the world in \
         <span class=mono>f64</span> and spheres in their object space with the ray carried there \
         exactly (an ellipsoid has no world-space test), a masked-out instance never hit; \
         <b>refit</b>, a mesh's vertices moved through <span class=mono>update_scene</span> over \
         several frames (its tree refit), every backend against its own fresh build of the final \
         scene.</p><table>{}",
        hit_head("check", true)
    );
    let mut rows = 0;
    for c in report.ray_sets.iter().filter(|c| {
        report.two_level_meshes.iter().any(|m| {
            c.group
                .strip_prefix(m.as_str())
                .is_some_and(|r| r.starts_with('/'))
        })
    }) {
        let first = format!(
            "<b>{}</b><div class=settings>instanced reference set</div>",
            esc(&c.group)
        );
        hit_row(
            out,
            c,
            Some((first.as_str(), 1 + usize::from(!c.passed()))),
            true,
        );
        rows += 1;
    }
    for g in report
        .generated
        .iter()
        .filter(|g| matches!(g.family, "instances" | "refit"))
    {
        let first = format!(
            "<b>{}</b><div class=settings>{}</div><div class=settings>{} placed primitives</div>",
            esc(&g.name),
            esc(&g.description),
            g.primitives
        );
        let span = g.checks.len() + g.checks.iter().filter(|c| !c.passed()).count();
        for (k, c) in g.checks.iter().enumerate() {
            hit_row(out, c, (k == 0).then_some((first.as_str(), span)), true);
            rows += 1;
        }
    }
    if rows == 0 {
        out.push_str("<tr><td colspan=11>no two-level check ran</td></tr>");
    }
    out.push_str("</table>");
}

fn hit_head(first: &str, face_plane: bool) -> String {
    format!(
        "<tr><th>{first}</th><th>backend</th><th>against</th><th class=num>rays</th>\
         <th class=num>match</th><th class=num>ties</th>{}<th class=num>mismatch</th>\
         <th class=num>occluded off</th><th class=num>uv off</th><th class=num>ms (closest / any)</th><th>result</th></tr>",
        if face_plane {
            "<th class=num title=\"misses the slab test's face-plane convention explains\">face-plane</th>"
        } else {
            ""
        }
    )
}

fn figure(out: &mut String, src: &str, img_w: u32, img_h: u32, alt: &str, caption: &str) {
    let _ = write!(
        out,
        "<figure><img src=\"{src}\" width={img_w} height={img_h} alt=\"{}\"><figcaption>{caption}</figcaption></figure>",
        esc(alt)
    );
}

fn image_card(
    out: &mut String,
    dir: &Path,
    check: &ImageCheck,
    tile: u32,
) -> Result<(), ReportError> {
    let pass = check.passed();
    let s = check.settings;
    let name = check.name();
    let (scene, integ) = (check.scene.as_str(), check.integrator.name());
    let _ = write!(
        out,
        "<div class=\"card{}\" id=\"{}\"><div class=head><h3>{} &middot; {}</h3>{}\
         <span class=settings>{}x{} px, {} spp, seed {}{}</span></div>",
        if pass { "" } else { " bad" },
        esc(&file_name(&["img", scene, integ], "x").replace(".x", "")),
        esc(scene),
        integ,
        chip(pass),
        check.width,
        check.height,
        s.spp,
        s.seed,
        match check.integrator {
            prism_core::Integrator::Ao => format!(
                ", {} AO rays of length {}{}",
                s.ao_samples,
                s.ao_distance,
                if s.ao_shadows { " + shadow ray" } else { "" }
            ),
            prism_core::Integrator::Whitted => format!(", {} mirror bounce(s)", s.max_depth),
            prism_core::Integrator::Path => format!(", depth {}", s.max_depth),
        },
    );
    let find = |b: &str| check.renders.iter().find(|r| r.backend == b);

    // Row 1: the frames at the base sample count, then per-pixel differences.
    let _ = write!(
        out,
        "<div class=rowlabel>frames, {} spp</div><div class=figs>",
        s.spp
    );
    for r in &check.renders {
        let mut c = format!("<b>{}</b>", esc(&r.backend));
        if r.image.is_some() {
            let _ = write!(c, " &middot; {:.0} ms", r.render_ms);
        }
        match &r.determinism {
            Some(Ok(())) => c.push_str(" &middot; re-render identical"),
            Some(Err(d)) => {
                let _ = write!(
                    c,
                    " &middot; <span class=badtext>{} px differ on re-render</span>",
                    d.count
                );
            }
            None => {}
        }
        if let Some((which, b)) = &r.bad_radiance {
            let _ = write!(
                c,
                " &middot; <span class=badtext>{} px of the {which} NaN, infinite or negative</span>",
                b.count
            );
        }
        if let Some(l) = r.srgb8_levels {
            let _ = write!(
                c,
                " &middot; {}sRGB8 within {l} level{}{}",
                if crate::images::srgb8_ok(l) {
                    ""
                } else {
                    "<span class=badtext>"
                },
                if l == 1 { "" } else { "s" },
                if crate::images::srgb8_ok(l) {
                    ""
                } else {
                    "</span>"
                }
            );
        }
        if let Some(e) = &r.error {
            let _ = write!(c, "<br><span class=badtext>{}</span>", esc(e));
        }
        match &r.image {
            Some(img) => {
                let src = save_image(dir, &file_name(&[scene, integ, &r.backend], "png"), img)?;
                figure(
                    out,
                    &src,
                    img.width(),
                    img.height(),
                    &format!("{name} on {}", r.backend),
                    &c,
                );
            }
            None => {
                let _ = write!(
                    out,
                    "<figure class=missing><div>no image</div><figcaption>{c}</figcaption></figure>"
                );
            }
        }
    }
    for p in &check.pairs {
        let (Some(a), Some(b)) = (
            find(&p.a).and_then(|r| r.image.as_ref()),
            find(&p.b).and_then(|r| r.image.as_ref()),
        ) else {
            continue;
        };
        if a.width() != b.width() || a.height() != b.height() {
            continue;
        }
        let src = save_rgba(
            dir,
            &file_name(&[scene, integ, &p.a, "vs", &p.b, "diff"], "png"),
            a.width(),
            a.height(),
            diff_map(a, b),
        )?;
        let detail = if p.pixels.max_diff == 0.0 {
            "identical".to_string()
        } else {
            format!(
                "{} of pixels off by &gt; 2/255, largest {:.2}/255",
                pct(p.pixels.pixels_off),
                p.pixels.max_diff * 255.0
            )
        };
        let caption = format!(
            "<b>|{} &minus; {}|</b> &middot; {detail}",
            esc(&p.a),
            esc(&p.b)
        );
        figure(
            out,
            &src,
            a.width(),
            a.height(),
            &format!("difference {} vs {}", p.a, p.b),
            &caption,
        );
    }
    out.push_str("</div>");

    // Row 2: converged frames and their tile-mean differences.
    let any_converged = check.renders.iter().any(|r| r.converged.is_some());
    if any_converged {
        let _ = write!(
            out,
            "<div class=rowlabel>converged, {} spp, {}x{} px &middot; compared as {tile}x{tile}-pixel tile means</div><div class=figs>",
            check.converged_spp, check.converged_size.0, check.converged_size.1
        );
        for r in &check.renders {
            if let Some(img) = &r.converged {
                let src = save_image(
                    dir,
                    &file_name(&[scene, integ, &r.backend, "converged"], "png"),
                    img,
                )?;
                let caption = format!(
                    "<b>{}</b> &middot; {} spp",
                    esc(&r.backend),
                    check.converged_spp
                );
                figure(
                    out,
                    &src,
                    img.width(),
                    img.height(),
                    &format!("{name} converged on {}", r.backend),
                    &caption,
                );
            }
        }
        for p in &check.pairs {
            let (Some(ca), Some(cb), Some(t)) = (
                find(&p.a).and_then(|r| r.converged.as_ref()),
                find(&p.b).and_then(|r| r.converged.as_ref()),
                p.tiles,
            ) else {
                continue;
            };
            if ca.width() != cb.width() || ca.height() != cb.height() {
                continue;
            }
            let src = save_rgba(
                dir,
                &file_name(&[scene, integ, &p.a, "vs", &p.b, "tiles"], "png"),
                ca.width(),
                ca.height(),
                tile_map(ca, cb, tile),
            )?;
            let detail = if t.max_tile_diff == 0.0 {
                "identical".to_string()
            } else {
                format!(
                    "worst tile {:.2}/255, image mean {}/255",
                    t.max_tile_diff * 255.0,
                    signed_levels(t.mean_diff)
                )
            };
            let caption = format!(
                "<b>tile means |{} &minus; {}|</b> &middot; {detail}",
                esc(&p.a),
                esc(&p.b)
            );
            figure(
                out,
                &src,
                ca.width(),
                ca.height(),
                &format!("tile differences {} vs {}", p.a, p.b),
                &caption,
            );
        }
        out.push_str("</div>");
    }
    if !check.pairs.is_empty() {
        let _ = write!(
            out,
            "<table><tr><th>pair</th><th class=num>MAE (&le; {:.1}/255)</th><th class=num>RMSE (&le; {})</th>\
             <th class=num>px off &gt; 2/255 (&le; {})</th><th class=num>max px diff</th>\
             <th class=num>worst tile (&le; {:.1}/255)</th><th class=num>mean diff (&le; {:.1}/255)</th><th>result</th></tr>",
            thresholds::MAX_MAE * 255.0,
            thresholds::MAX_RMSE,
            pct(thresholds::MAX_PIXELS_OFF_SHARE),
            thresholds::MAX_TILE_MEAN_DIFF * 255.0,
            thresholds::MAX_IMAGE_MEAN_DIFF * 255.0,
        );
        for p in &check.pairs {
            let ok = p.failures.is_empty();
            let _ = write!(
                out,
                "<tr{}><td class=who>{} vs {}</td><td class=num>{:.3}/255</td><td class=num>{:.4}</td><td class=num>{}</td>\
                 <td class=num>{:.2}/255</td><td class=num>{}</td><td class=num>{}</td><td>{}</td></tr>",
                if ok { "" } else { " class=bad" },
                esc(&p.a),
                esc(&p.b),
                p.pixels.mae * 255.0,
                p.pixels.rmse,
                pct(p.pixels.pixels_off),
                p.pixels.max_diff * 255.0,
                p.tiles.map_or("&ndash;".into(), |t| format!(
                    "{:.2}/255",
                    t.max_tile_diff * 255.0
                )),
                p.tiles.map_or("&ndash;".into(), |t| format!(
                    "{}/255",
                    signed_levels(t.mean_diff)
                )),
                chip(ok)
            );
            if !ok {
                let _ = write!(
                    out,
                    "<tr class=\"detail bad\"><td colspan=8 class=mono>{}</td></tr>",
                    esc(&p.failures.join("; "))
                );
            }
        }
        out.push_str("</table>");
    }
    for r in &check.renders {
        let why = r.failures();
        if !why.is_empty() {
            let _ = write!(
                out,
                "<p class=\"mono badtext\">{}: {}</p>",
                esc(&r.backend),
                esc(&why.join("; "))
            );
        }
    }
    out.push_str("</div>");
    Ok(())
}

/// Write `dir/index.html` and its images; returns the path of `index.html`.
pub fn write_html(report: &Report, dir: &Path) -> Result<PathBuf, ReportError> {
    std::fs::create_dir_all(dir.join("img")).map_err(|e| io_err(&dir.join("img"), e))?;
    let failures = report.failures();
    let pass = failures.is_empty();
    let mut out = String::with_capacity(64 * 1024);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>\
         <meta name=viewport content=\"width=device-width, initial-scale=1\">\
         <title>Prism conformance: {}</title><style>{CSS}</style></head><body>\
         <header class=\"banner {}\"><div class=inner><h1>Prism conformance</h1>\
         <p id=verdict>{}</p><p class=summary id=summary>{}</p><span class=when>{}</span></div></header>\
         <nav><div class=inner>{}<a href=\"#backends\">Backends</a><a href=\"#generated\">Generated cases</a>\
         <a href=\"#rays\">Reference ray sets</a><a href=\"#two-level\">Two-level scenes</a>\
         <a href=\"#images\">Images</a><a href=\"#sun\">Sun</a><a href=\"#thresholds\">Thresholds</a>\
         <a href=\"#run\">Run</a></div></nav><main>",
        if pass { "PASS" } else { "FAIL" },
        if pass { "pass" } else { "fail" },
        if pass { "PASS" } else { "FAIL" },
        esc(&report.summary()),
        utc(now),
        if pass {
            ""
        } else {
            "<a href=\"#failures\">Failures</a>"
        },
    );

    if !pass {
        let _ = write!(
            out,
            "<h2 id=failures>Failures ({})</h2><div class=failures><ol>",
            failures.len()
        );
        for f in failures.iter().take(100) {
            let _ = write!(out, "<li>{}</li>", esc(f));
        }
        if failures.len() > 100 {
            let _ = write!(out, "<li>&hellip; and {} more</li>", failures.len() - 100);
        }
        out.push_str("</ol></div>");
    }

    out.push_str(
        "<h2 id=backends>Backends</h2><table><tr><th>backend</th><th>device</th><th>status</th></tr>",
    );
    for b in &report.backends {
        let status = match &b.status {
            BackendStatus::Used => r#"<span class="chip pass">checked</span>"#.to_string(),
            BackendStatus::Skipped(w) => {
                format!(r#"<span class="chip skip">skipped</span> {}"#, esc(w))
            }
            BackendStatus::Missing(w) => format!(
                r#"<span class="chip fail">asked for, unavailable</span> {}"#,
                esc(w)
            ),
        };
        let _ = write!(
            out,
            "<tr><td><b>{}</b></td><td>{}{}</td><td>{status}</td></tr>",
            esc(&b.name),
            esc(&b.device),
            if b.software {
                " <span class=\"chip skip\">software</span>"
            } else {
                ""
            }
        );
    }
    out.push_str("</table>");
    for n in &report.notes {
        let _ = write!(
            out,
            "<p class=lead>{} <b>{}</b>: {}</p>",
            if n.fails {
                chip(false)
            } else {
                r#"<span class="chip skip">skipped</span>"#
            },
            esc(&n.what),
            esc(&n.reason)
        );
    }

    // Generated cases.
    let _ = write!(
        out,
        "<h2 id=generated>Generated cases</h2><p class=lead>Scenes and rays made from a seed, checked \
         against CPU brute force: prism-core's own <span class=mono>ray_triangle</span> and \
         <span class=mono>ray_sphere</span> over every primitive, no BVH. The rule is that of the reference \
         sets; ties are expected here (duplicate triangles, rays through shared edges) and not limited. \
         <i>face-plane</i>: hits missed by a ray that does not move along an axis and lies exactly in a face \
         plane of a box on the way to the primitive; prism-core's slab test, like Embree's, counts such a \
         ray inside one face of the box and outside the other (a documented measure-zero convention). \
         Counted, not failed. Two backends are compared exactly, except on the rays where either one \
         was excused so against the oracle: each walks its own tree (the CPU's 8-wide BVH tests a subset \
         of the binary BVH's boxes), so which face plane culls a primitive may differ. \
         {} cases, {} rays each.</p><table>{}",
        report.generated.len(),
        report.config.generated.rays,
        hit_head("case", true)
    );
    for g in &report.generated {
        let first = format!(
            "<b>{}</b><div class=settings>{}</div><div class=settings>{} primitives &middot; seed {} &middot; \
             oracle: {} hits</div>",
            esc(&g.name),
            esc(&g.description),
            g.primitives,
            g.seed,
            g.oracle_hits
        );
        // A failing check adds a detail row under its own row.
        let span = g.checks.len() + g.checks.iter().filter(|c| !c.passed()).count();
        for (k, c) in g.checks.iter().enumerate() {
            hit_row(
                &mut out,
                c,
                (k == 0).then_some((first.as_str(), span)),
                true,
            );
        }
        if g.checks.is_empty() {
            let _ = write!(
                out,
                "<tr><td class=group>{first}</td><td colspan=11>no backend</td></tr>"
            );
        }
    }
    out.push_str("</table>");

    // Reference ray sets.
    let _ = write!(
        out,
        "<h2 id=rays>Reference ray sets</h2><p class=lead>Every backend's <span class=mono>intersect</span> \
         and <span class=mono>occluded</span> against Embree's hits (same primitive, t within {:e} relative; \
         a different primitive within that tolerance is a tie), then every pair of backends. \
         Ties may be at most {} of rays.{}</p>",
        thresholds::HIT_T_REL,
        pct(thresholds::MAX_TIE_SHARE),
        if report.config.ray_stride > 1 {
            format!(" Quick run: every {}th ray.", report.config.ray_stride)
        } else {
            String::new()
        }
    );
    if !report.ray_set_sizes.is_empty() {
        out.push_str("<p class=lead>");
        let sets: Vec<String> = report
            .ray_set_sizes
            .iter()
            .map(|(m, s, r, _)| format!("{}/{}: {} rays", esc(m), esc(s), r))
            .collect();
        out.push_str(&sets.join(" &middot; "));
        out.push_str("</p>");
    }
    let _ = write!(out, "<table>{}", hit_head("ray set", false));
    for c in &report.ray_sets {
        let first = format!("<b>{}</b>", esc(&c.group));
        hit_row(
            &mut out,
            c,
            Some((first.as_str(), 1 + usize::from(!c.passed()))),
            false,
        );
    }
    if report.ray_sets.is_empty() {
        out.push_str("<tr><td colspan=11>no reference ray sets were checked</td></tr>");
    }
    out.push_str("</table>");

    // Two-level scenes: their rows of the sections above, gathered.
    two_level_section(&mut out, report);

    // Images.
    let legend_src = save_rgba(dir, "legend.png", 256, 12, legend())?;
    let tick = |levels: f64| {
        let x = (1.0 + levels).log2() / 8.0 * 100.0;
        format!("<span style=\"left:{x:.1}%\">{levels}</span>")
    };
    let _ = write!(
        out,
        "<h2 id=images>Images</h2><p class=lead>Every scene with every integrator, the same camera, seed and \
         sample count on every backend. Per pair: mean absolute error, RMSE and the share of pixels off by \
         more than {:.0}/255 (display units: clamped, sRGB-encoded), and a converged comparison of \
         {}x{}-pixel tile means at {} spp, which divergent paths cannot move but a bias would. Each backend \
         also renders the frame twice (bit-identical) and as 8-bit sRGB (its own linear frame, encoded).</p>\
         <div class=legend>difference (8-bit levels)<div><img src=\"{legend_src}\" alt=\"heat map scale\">\
         <div class=ticks>{}{}{}{}{}{}</div></div></div>",
        PIXEL_OFF_LEVEL * 255.0,
        report.config.tile,
        report.config.tile,
        report.config.converged_spp,
        tick(0.0),
        tick(2.0),
        tick(8.0),
        tick(32.0),
        tick(128.0),
        tick(255.0),
    );
    for check in &report.images {
        image_card(&mut out, dir, check, report.config.tile)?;
    }
    if report.images.is_empty() {
        out.push_str("<p class=lead>no image cases were checked</p>");
    }

    crate::sun_report::sun_section(&mut out, report, esc);

    // Thresholds.
    out.push_str(
        "<h2 id=thresholds>Thresholds</h2><p class=lead>Defined once in \
         <span class=mono>prism_conformance::thresholds</span>.</p>\
         <table><tr><th>name</th><th class=num>value</th><th>unit</th><th>why</th></tr>",
    );
    for t in thresholds::ALL {
        let _ = write!(
            out,
            "<tr><td class=mono>{}</td><td class=num>{}</td><td>{}</td><td>{}</td></tr>",
            t.name,
            format_value(t.value, t.unit),
            esc(t.unit),
            esc(t.reason)
        );
    }
    out.push_str("</table>");

    // Run.
    let c = &report.config;
    let _ = write!(
        out,
        "<h2 id=run>Run</h2><table><tr><th>setting</th><th>value</th></tr>\
         <tr><td>mode</td><td>{}</td></tr>\
         <tr><td>images</td><td>{} px wide, {} spp, seed {}, depth capped at {}</td></tr>\
         <tr><td>converged</td><td>{} px wide, {} spp, {}x{} tiles</td></tr>\
         <tr><td>reference rays</td><td>{}</td></tr>\
         <tr><td>generated</td><td>{} seed(s) per family, {} rays, {} triangles, {} spheres</td></tr>",
        if c.quick { "quick" } else { "full" },
        c.image_width,
        c.spp,
        c.seed,
        c.max_depth,
        c.converged_width,
        c.converged_spp,
        c.tile,
        c.tile,
        if c.ray_stride <= 1 {
            "all".to_string()
        } else {
            format!("every {}th", c.ray_stride)
        },
        c.generated.seeds,
        c.generated.rays,
        c.generated.triangles,
        c.generated.spheres
    );
    for (name, d) in &report.timings {
        let _ = write!(
            out,
            "<tr><td>time: {}</td><td>{:.1} s</td></tr>",
            esc(name),
            d.as_secs_f64()
        );
    }
    out.push_str("</table>");
    out.push_str(
        "<footer>Written by <span class=mono>prism conformance</span>. Open with any browser; no server or \
         script needed.</footer></main></body></html>\n",
    );
    let index = dir.join("index.html");
    std::fs::write(&index, out).map_err(|e| io_err(&index, e))?;
    Ok(index)
}

/// A threshold's value for a person: display units as levels of 255, others
/// plainly or with an exponent.
fn format_value(v: f64, unit: &str) -> String {
    let trim = |s: String| s.trim_end_matches('0').trim_end_matches('.').to_string();
    if unit == "display units" {
        return format!("{}/255", trim(format!("{:.2}", v * 255.0)));
    }
    if v == 0.0 || (v.abs() >= 1e-3 && v.abs() < 1e4) {
        trim(format!("{v:.4}"))
    } else {
        // Three significant digits, trailing zeros of the mantissa dropped.
        let s = format!("{v:.2e}");
        match s.split_once('e') {
            Some((m, e)) => format!("{}e{e}", trim(m.to_string())),
            None => s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_escaped() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn file_names_are_plain_and_distinct() {
        assert_eq!(
            file_name(&["rtiow", "path", "cpu/x"], "png"),
            "rtiow-path-cpu_2fx.png"
        );
        // Names that differ only in case or in which character is not a
        // letter get files of their own.
        let names = ["cornell", "Cornell", "a b", "a_b", "a-b", "é", "e"];
        let files: std::collections::HashSet<String> = names
            .iter()
            .map(|n| file_name(&[n, "path"], "png"))
            .collect();
        assert_eq!(files.len(), names.len(), "{files:?}");
        assert!(files.iter().all(|f| {
            f.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-.".contains(c))
        }));
    }

    #[test]
    fn heat_is_black_for_zero_and_bright_for_full_scale() {
        assert_eq!(heat(0.0), [0, 0, 0, 255]);
        let full = heat(1.0);
        assert!(full[0] > 240 && full[1] > 240);
        let small = heat(2.0 / 255.0);
        assert!(small[2] > small[1]);
    }

    #[test]
    fn values_read_well() {
        assert_eq!(format_value(1e-4f32 as f64, "relative t"), "1e-4");
        assert_eq!(format_value(2.0 / 255.0, "display units"), "2/255");
        assert_eq!(format_value(0.5 / 255.0, "display units"), "0.5/255");
        assert_eq!(format_value(0.005, "share"), "0.005");
        assert_eq!(format_value(0.0, "rays"), "0");
        assert_eq!(format_value(1.0, "levels"), "1");
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13 UTC");
    }
}
