//! The conformance suite end to end: CPU and wgpu (lavapipe counts) agree, the
//! report opens in headless Chromium with every image loaded and says PASS, and
//! backends that lie or mirrors broken on purpose make it FAIL.
//!
//! Environment:
//! - `PRISM_REQUIRE_WGPU=1`: fail instead of skipping the wgpu parts when no
//!   adapter (not even a software one) exists.
//! - `PRISM_REQUIRE_CHROMIUM=1`: fail instead of skipping the browser check when
//!   `chromium` is not installed (Debian: `apt-get install -y chromium`).
//! - `PRISM_REQUIRE_CUDA=1`: fail instead of skipping the CUDA broken-kernel test.
//! - `PRISM_CONFORMANCE_KEEP=1`: print the report directory and keep it.

use prism::conformance::{Candidate, Cases, Config, ImageCase, Report, image_cases, run};
use prism::{
    Backend, BackendChoice, BackendInfo, Camera, Error, Hit, Image, Progress, Ray, RenderSettings,
    RenderStats, Scene,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

fn log(line: &str) {
    eprintln!("  {line}");
}

/// A fresh directory under the system's temp dir.
fn temp_dir(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!(
        "prism-conformance-{tag}-{}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

fn cleanup(dir: &Path) {
    if required("PRISM_CONFORMANCE_KEEP") {
        eprintln!("report kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn cpu() -> Box<dyn Backend> {
    Box::new(prism_cpu::CpuBackend::new().unwrap_or_else(|e| panic!("cpu backend: {e}")))
}

/// The wgpu backend opened by name (software adapters count), or `None` with a
/// message when there is no adapter; panics then if `PRISM_REQUIRE_WGPU=1`,
/// and always on any other error (a shader that does not compile is a failure).
fn wgpu_or_skip(what: &str) -> Option<Box<dyn Backend>> {
    match prism::open_with_env(BackendChoice::Wgpu, None) {
        Ok(o) => Some(o.backend),
        Err(e) => {
            assert!(
                matches!(e, Error::BackendUnavailable { .. }),
                "wgpu failed to open for a reason other than a missing adapter: {e:?}"
            );
            assert!(
                !required("PRISM_REQUIRE_WGPU"),
                "PRISM_REQUIRE_WGPU=1 but wgpu cannot be opened: {e}"
            );
            eprintln!(
                "SKIPPED {what}: no wgpu adapter ({e}); set PRISM_REQUIRE_WGPU=1 to fail instead"
            );
            None
        }
    }
}

fn assert_passed(report: &Report) {
    let failures = report.failures();
    assert!(
        failures.is_empty(),
        "{}\n{}",
        report.summary(),
        failures.join("\n")
    );
}

/// Every `src="..."` of the page.
fn image_sources(html: &str) -> Vec<String> {
    html.split("src=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .map(str::to_string)
        .collect()
}

fn find_chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n)))
        .find(|p| p.is_file())
}

/// Run headless Chromium on `page` with `args`; returns stdout. Kills it after `limit`.
fn chromium(exe: &Path, page: &Path, args: &[String], limit: Duration) -> String {
    let profile = temp_dir("chromium-profile");
    // Stdout goes to a file: a pipe nobody reads fills up on a large DOM and
    // blocks the browser.
    let out_path = profile.join("stdout.txt");
    let out =
        std::fs::File::create(&out_path).unwrap_or_else(|e| panic!("{}: {e}", out_path.display()));
    let mut cmd = Command::new(exe);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .arg(format!("file://{}", page.display()))
    .stdin(Stdio::null())
    .stdout(Stdio::from(out))
    .stderr(Stdio::null());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", exe.display()));
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(100)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "chromium did not finish within {limit:?} on {}",
                    page.display()
                );
            }
        }
    }
    let stdout = std::fs::read(&out_path).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&profile);
    String::from_utf8_lossy(&stdout).into_owned()
}

/// Check the written report: every image it references exists and decodes; then,
/// with Chromium, that the browser loads every image and shows the verdict.
fn check_report_in_browser(dir: &Path, expect: &str) {
    let index = dir.join("index.html");
    let html =
        std::fs::read_to_string(&index).unwrap_or_else(|e| panic!("{}: {e}", index.display()));
    let sources = image_sources(&html);
    assert!(!sources.is_empty(), "the report references no image");
    for src in &sources {
        assert!(
            !src.starts_with('/') && !src.contains("://"),
            "image path {src} is not relative"
        );
        let path = dir.join(src);
        let img = image::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(img.width() > 0 && img.height() > 0, "{src} is empty");
    }
    assert!(
        html.contains(&format!("<p id=verdict>{expect}</p>")),
        "the report's verdict is not {expect}"
    );

    let Some(exe) = find_chromium() else {
        assert!(
            !required("PRISM_REQUIRE_CHROMIUM"),
            "PRISM_REQUIRE_CHROMIUM=1 but no chromium in PATH"
        );
        eprintln!(
            "SKIPPED browser check: chromium not found (apt-get install -y chromium); \
             set PRISM_REQUIRE_CHROMIUM=1 to fail instead"
        );
        return;
    };
    // A page beside the report with the same images; after they load (or fail),
    // its script writes how many decoded into the DOM, which --dump-dom prints.
    let mut check = String::from(
        "<!DOCTYPE html><html><head><meta charset=utf-8></head><body><pre id=result>pending</pre>",
    );
    for src in &sources {
        check.push_str(&format!("<img src=\"{src}\">"));
    }
    check.push_str(
        "<script>window.addEventListener('load', function () {\
           var imgs = document.images, ok = 0, bad = [];\
           for (var i = 0; i < imgs.length; i++) {\
             if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++; else bad.push(imgs[i].getAttribute('src'));\
           }\
           document.getElementById('result').textContent = 'loaded ' + ok + ' of ' + imgs.length + (bad.length ? ' missing ' + bad.join(' ') : '');\
         });</script></body></html>",
    );
    let check_page = dir.join("browser-check.html");
    std::fs::write(&check_page, check).unwrap_or_else(|e| panic!("{}: {e}", check_page.display()));
    let limit = Duration::from_secs(180);
    let budget = [
        "--virtual-time-budget=10000".to_string(),
        "--dump-dom".to_string(),
    ];
    let dom = chromium(&exe, &check_page, &budget, limit);
    let want = format!("loaded {n} of {n}", n = sources.len());
    assert!(
        dom.contains(&want),
        "chromium did not load every image: expected '{want}', got: {}",
        dom.lines()
            .find(|l| l.contains("result"))
            .unwrap_or("(no result)")
    );
    let _ = std::fs::remove_file(&check_page);

    // The report itself, as Chromium parsed it.
    let dom = chromium(&exe, &index, &["--dump-dom".to_string()], limit);
    assert!(
        dom.contains(&format!("id=\"verdict\">{expect}<")),
        "chromium's DOM of the report has no {expect} verdict ({} bytes)",
        dom.len()
    );
    // And a screenshot, for a person (kept with PRISM_CONFORMANCE_KEEP=1).
    let shot = dir.join("report.png");
    let args = [
        format!("--screenshot={}", shot.display()),
        "--window-size=1280,2400".to_string(),
    ];
    chromium(&exe, &index, &args, limit);
    let img = image::open(&shot).unwrap_or_else(|e| panic!("screenshot {}: {e}", shot.display()));
    assert_eq!(img.width(), 1280);
    eprintln!(
        "browser check: {} images loaded, verdict {expect} rendered",
        sources.len()
    );
}

/// The whole suite (its full configuration: under a minute on two cores with
/// lavapipe) on CPU and wgpu (skipped without an adapter), with the built-in
/// scenes and the shared reference ray sets; the report must PASS and open in
/// the browser.
#[test]
fn cpu_and_wgpu_agree_and_the_report_opens_in_a_browser() {
    let mut candidates = vec![Candidate {
        name: "cpu".into(),
        opened: Ok(cpu()),
        required: true,
    }];
    if let Some(w) = wgpu_or_skip("the wgpu part of the conformance suite") {
        candidates.push(Candidate {
            name: "wgpu".into(),
            opened: Ok(w),
            required: true,
        });
    }
    let cases = prism::conformance::builtin_cases(None);
    let start = Instant::now();
    let report = run(candidates, &cases, &Config::full(), &mut |l| log(l));
    eprintln!(
        "{} in {:.1} s",
        report.summary(),
        start.elapsed().as_secs_f64()
    );
    let dir = temp_dir("report");
    prism::conformance::write_html(&report, &dir).unwrap_or_else(|e| panic!("report: {e}"));
    check_report_in_browser(&dir, if report.passed() { "PASS" } else { "FAIL" });
    assert_passed(&report);
    assert!(report.check_count() > 0);
    cleanup(&dir);
}

/// How a [`Misbehaving`] backend departs from the CPU backend it wraps.
#[derive(Clone, Copy, PartialEq)]
enum Lie {
    /// "liar": brightens every linear pixel by 4%, writes a NaN into the last
    /// one, moves the first hit to another primitive and flips the first
    /// occlusion answer.
    Answers,
    /// "swapper": hands back a linear frame when asked for 8-bit output (it
    /// replaces the caller's image), so the 8-bit check cannot run.
    Format,
}

/// A CPU backend that lies in one way ([`Lie`]).
struct Misbehaving(Box<dyn Backend>, Lie);

impl Backend for Misbehaving {
    fn info(&self) -> BackendInfo {
        BackendInfo {
            name: match self.1 {
                Lie::Answers => "liar",
                Lie::Format => "swapper",
            },
            ..self.0.info()
        }
    }
    fn set_scene(&mut self, scene: &Scene) -> Result<RenderStats, Error> {
        self.0.set_scene(scene)
    }
    fn render(
        &mut self,
        camera: &Camera,
        settings: &RenderSettings,
        image: &mut Image,
        progress: &dyn Progress,
    ) -> Result<RenderStats, Error> {
        if self.1 == Lie::Format && image.format() == prism::PixelFormat::Srgba8 {
            *image = Image::new(image.width(), image.height(), prism::PixelFormat::LinearF32)?;
        }
        let stats = self.0.render(camera, settings, image, progress)?;
        if self.1 == Lie::Answers {
            for p in image.linear_mut() {
                for c in &mut p[..3] {
                    *c *= 1.04;
                }
            }
            if let Some(last) = image.linear_mut().last_mut() {
                last[1] = f32::NAN;
            }
        }
        Ok(stats)
    }
    fn intersect(&mut self, rays: &[Ray], hits: &mut [Hit]) -> Result<RenderStats, Error> {
        let stats = self.0.intersect(rays, hits)?;
        if self.1 == Lie::Answers
            && let Some(h) = hits.iter_mut().find(|h| h.is_hit())
        {
            h.prim ^= 1;
            h.t *= 1.01;
        }
        Ok(stats)
    }
    fn occluded(&mut self, rays: &[Ray], occluded: &mut [bool]) -> Result<RenderStats, Error> {
        let stats = self.0.occluded(rays, occluded)?;
        if self.1 == Lie::Answers
            && let Some(o) = occluded.first_mut()
        {
            *o = !*o;
        }
        Ok(stats)
    }
    fn update_scene(&mut self, update: &prism::SceneUpdate) -> Result<prism::UpdateStats, Error> {
        self.0.update_scene(update)
    }
    fn geometry_sah(&mut self, geometry: u32) -> Option<prism::GeometrySah> {
        self.0.geometry_sah(geometry)
    }
}

/// The quick suite on the cornell scene: the CPU backend beside one that lies.
fn run_beside_cpu(lie: Lie) -> Report {
    let cases = Cases {
        images: one_scene(),
        ..Default::default()
    };
    let liar = Misbehaving(cpu(), lie);
    let candidates = vec![
        Candidate::opened("cpu", cpu()),
        Candidate::opened(liar.info().name, Box::new(liar)),
    ];
    run(candidates, &cases, &Config::quick(), &mut |l| log(l))
}

#[test]
fn a_backend_that_returns_another_format_fails_its_renders() {
    let report = run_beside_cpu(Lie::Format);
    let failures = report.failures();
    let swapped: Vec<&String> = failures
        .iter()
        .filter(|f| f.contains("on swapper") && f.contains("returned a"))
        .collect();
    assert_eq!(swapped.len(), 3, "one per integrator: {failures:#?}");
    assert!(
        swapped[0].contains("Srgba8") && swapped[0].contains("LinearF32"),
        "{swapped:?}"
    );
    assert!(
        failures.iter().all(|f| f.contains("swapper")),
        "only the swapper fails: {failures:#?}"
    );
}

fn one_scene() -> Vec<ImageCase> {
    image_cases()
        .into_iter()
        .filter(|c| c.name == "cornell")
        .collect()
}

#[test]
fn a_lying_backend_fails_every_kind_of_check() {
    let report = run_beside_cpu(Lie::Answers);
    let failures = report.failures();
    assert!(!report.passed());
    assert!(report.summary().starts_with("FAIL"));
    let has = |prefix: &str| {
        failures
            .iter()
            .any(|f| f.starts_with(prefix) && f.contains("liar"))
    };
    assert!(has("hits soup/1 on liar vs brute force"), "{failures:#?}");
    assert!(
        failures
            .iter()
            .any(|f| f.starts_with("hits soup/1 on liar") && f.contains("occluded disagrees")),
        "{failures:#?}"
    );
    assert!(
        failures
            .iter()
            .any(|f| f.starts_with("image cornell/path on liar")
                && f.contains("Srgba8 frame is")
                && f.contains("from its own linear frame")),
        "{failures:#?}"
    );
    assert!(has("image cornell/path: cpu vs liar"), "{failures:#?}");
    assert!(
        failures
            .iter()
            .any(|f| f.starts_with("image cornell/path on liar")
                && f.contains("NaN, infinite or negative")),
        "{failures:#?}"
    );
    // The CPU's own renders pass: every image failure involves the liar.
    assert!(
        failures
            .iter()
            .filter(|f| f.starts_with("image"))
            .all(|f| f.contains("liar")),
        "{failures:#?}"
    );
    let dir = temp_dir("liar");
    prism::conformance::write_html(&report, &dir).unwrap_or_else(|e| panic!("report: {e}"));
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap_or_default();
    assert!(html.contains("<p id=verdict>FAIL</p>"));
    cleanup(&dir);
}

#[test]
fn a_backend_asked_for_but_missing_fails_and_one_not_asked_for_is_skipped() {
    let candidates = vec![
        Candidate {
            name: "gpu-a".into(),
            opened: Err("no device".into()),
            required: false,
        },
        Candidate {
            name: "gpu-b".into(),
            opened: Err("no driver".into()),
            required: true,
        },
    ];
    let config = Config {
        generated: prism::conformance::generated::GenSize {
            seeds: 1,
            rays: 16,
            triangles: 8,
            spheres: 4,
        },
        ..Config::quick()
    };
    let report = run(candidates, &Cases::default(), &config, &mut |_| {});
    let failures = report.failures();
    // The missing backend, and (none opened) a run that checked nothing.
    assert_eq!(failures.len(), 2, "{failures:#?}");
    assert!(failures[0].contains("gpu-b") && failures[0].contains("no driver"));
    assert_eq!(
        failures[1],
        "backends: no backend opened: nothing was checked"
    );
    assert!(
        report.summary().contains("skipped: gpu-a"),
        "{}",
        report.summary()
    );
}

/// `Auto` picks a backend and names none: asked for, it fails the suite
/// instead of being dropped (which left a run that checked nothing to pass).
#[test]
fn auto_asked_of_the_suite_is_a_backend_that_cannot_open() {
    let c = prism::conformance::candidates(Some(&[BackendChoice::Auto]));
    assert_eq!(c.len(), 1);
    assert!(c[0].required);
    assert!(
        c[0].opened
            .as_ref()
            .is_err_and(|why| why.contains("auto picks a backend"))
    );
}

/// The bytes of a one-ray set and its reference hit: a ray (origin, tmin,
/// direction, tmax) from `z = 1` down -z, hitting primitive 0 at `t = 1`.
fn one_ray_and_hit() -> (Vec<u8>, Vec<u8>) {
    let ray = [0.0f32, 0.0, 1.0, 0.0, 0.0, 0.0, -1.0, 1e30]
        .iter()
        .flat_map(|f| f.to_le_bytes())
        .collect();
    let hit = 1.0f32
        .to_le_bytes()
        .into_iter()
        .chain(0u32.to_le_bytes())
        .collect();
    (ray, hit)
}

/// A mesh whose name holds a dot keeps its ray sets: the set is the part after
/// the last dot.
#[test]
fn mesh_names_with_dots_find_their_ray_sets() {
    let dir = temp_dir("dots");
    let (ray, hit) = one_ray_and_hit();
    std::fs::write(
        dir.join("my.tri.obj"),
        b"v -1 -1 0\nv 1 -1 0\nv 0 1 0\nf 1 2 3\n",
    )
    .expect("mesh");
    std::fs::write(dir.join("my.tri.one.rays"), &ray).expect("rays");
    std::fs::write(dir.join("my.tri.one.hits"), &hit).expect("hits");
    let (meshes, notes) = prism::conformance::mesh_cases(&dir);
    assert!(notes.is_empty(), "{notes:#?}");
    assert_eq!(meshes.len(), 1);
    assert_eq!(meshes[0].name, "my.tri");
    assert_eq!(meshes[0].sets.len(), 1);
    assert_eq!(meshes[0].sets[0].name, "one");
    cleanup(&dir);
}

/// Ray sets a caller of `run` builds itself get the checks `mesh_cases` gives
/// files: a set with no rays, or with another number of reference hits than
/// rays, fails as a note and is not traced; a good set beside them is checked.
#[test]
fn run_refuses_ray_sets_that_check_nothing() {
    use prism::conformance::{MeshRays, RaySet};
    let mut scene = Scene::new();
    let m = scene.add_material(prism::Material::lambertian(prism::glam::Vec3::splat(0.5)));
    let v = prism::glam::Vec3::new;
    scene
        .add_mesh(
            &[v(-1.0, -1.0, 0.0), v(1.0, -1.0, 0.0), v(0.0, 1.0, 0.0)],
            &[[0, 1, 2]],
            m,
        )
        .expect("one triangle");
    let ray = Ray::new(v(0.0, 0.0, 1.0), v(0.0, 0.0, -1.0));
    let set = |name: &str, rays: Vec<Ray>, reference: Vec<(f32, u32)>| RaySet {
        name: name.into(),
        rays,
        reference,
        instances: None,
    };
    let cases = Cases {
        meshes: vec![MeshRays {
            name: "tri".into(),
            scene,
            sets: vec![
                set("empty", vec![], vec![]),
                set("short", vec![ray, ray], vec![(1.0, 0)]),
                set("good", vec![ray], vec![(1.0, 0)]),
            ],
        }],
        ..Default::default()
    };
    let config = Config {
        generated: prism::conformance::generated::GenSize {
            seeds: 1,
            rays: 16,
            triangles: 8,
            spheres: 4,
        },
        ..Config::quick()
    };
    let report = run(
        vec![Candidate::opened("cpu", cpu())],
        &cases,
        &config,
        &mut |_| {},
    );
    let failures = report.failures();
    assert_eq!(failures.len(), 2, "{failures:#?}");
    assert!(
        failures[0].contains("tri/empty") && failures[0].contains("no rays"),
        "{failures:#?}"
    );
    assert!(
        failures[1].contains("tri/short") && failures[1].contains("2 rays but 1 reference hits"),
        "{failures:#?}"
    );
    let sizes: Vec<&str> = report.ray_set_sizes.iter().map(|s| s.1.as_str()).collect();
    assert_eq!(sizes, ["good"]);
    // The good set alone is traced: on the SAH tree, then the fast and
    // clustered trees.
    let groups: Vec<&str> = report.ray_sets.iter().map(|c| c.group.as_str()).collect();
    assert_eq!(
        groups,
        [
            "tri/good",
            "tri/good (fast tree)",
            "tri/good (clustered tree)"
        ]
    );
    assert!(report.ray_sets.iter().all(|c| c.passed()));
    assert!(!report.ray_sets.is_empty());
}

/// Replace `from` by `to` in `file` of a shader or kernel set, checking it is there once.
#[cfg(any(feature = "wgpu", feature = "cuda"))]
fn patch_once(files: &[(&str, &str)], file: &str, from: &str, to: &str) -> String {
    let src = files
        .iter()
        .find(|(n, _)| *n == file)
        .map(|(_, s)| *s)
        .unwrap_or_else(|| panic!("no file {file}"));
    assert_eq!(
        src.matches(from).count(),
        1,
        "{file} must contain `{from}` exactly once for this test to break it"
    );
    src.replacen(from, to, 1)
}

/// A wgpu backend whose `file` has `from` replaced by `to` (on a software
/// adapter if that is all there is).
#[cfg(feature = "wgpu")]
fn broken_wgpu(
    file: &'static str,
    from: &'static str,
    to: &'static str,
) -> Option<Box<dyn Backend>> {
    wgpu_or_skip("the broken-mirror test")?;
    let patched = patch_once(&prism_wgpu::SHADER_FILES, file, from, to);
    let options = prism_wgpu::WgpuOptions {
        allow_software: true,
        source_patch: Some(Box::new(move |name: &str, src: &str| {
            if name == file {
                patched.clone()
            } else {
                src.to_string()
            }
        })),
        ..Default::default()
    };
    Some(Box::new(
        prism_wgpu::WgpuBackend::new(options).unwrap_or_else(|e| panic!("patched wgpu: {e}")),
    ))
}

/// One flipped comparison in the watertight triangle test's sign check.
#[cfg(feature = "wgpu")]
#[test]
fn a_broken_wgpu_triangle_test_is_caught() {
    let Some(backend) = broken_wgpu(
        "intersect.wgsl",
        "(u < 0.0 || v < 0.0 || w < 0.0)",
        "(u < 0.0 || v < 0.0 || w > 0.0)",
    ) else {
        return;
    };
    let cases = Cases {
        images: one_scene(),
        ..Default::default()
    };
    let report = run(
        vec![
            Candidate::opened("cpu", cpu()),
            Candidate::opened("wgpu", backend),
        ],
        &cases,
        &Config::quick(),
        &mut |l| log(l),
    );
    let failures = report.failures();
    eprintln!(
        "{}\nfirst failure: {:?}",
        report.summary(),
        failures.first()
    );
    assert!(!report.passed(), "the broken triangle test went unnoticed");
    assert!(
        failures.iter().any(|f| f.starts_with("hits grazing/")),
        "{failures:#?}"
    );
    assert!(
        failures.iter().any(|f| f.starts_with("image cornell/")),
        "{failures:#?}"
    );
    assert!(
        failures
            .iter()
            .filter(|f| f.starts_with("image"))
            .all(|f| f.contains("wgpu")),
        "{failures:#?}"
    );
}

/// One flipped comparison in the choice of the dominant axis: random rays still
/// trace correctly (any axis with a non-zero component works), rays with zero
/// direction components do not. Only the axis-parallel generated cases catch it.
#[cfg(feature = "wgpu")]
#[test]
fn a_broken_wgpu_axis_choice_is_caught_by_the_axis_parallel_cases() {
    let Some(backend) = broken_wgpu("intersect.wgsl", "if ad.x > ad.y {", "if ad.x < ad.y {")
    else {
        return;
    };
    let report = run(
        vec![
            Candidate::opened("cpu", cpu()),
            Candidate::opened("wgpu", backend),
        ],
        &Cases::default(),
        &Config::quick(),
        &mut |l| log(l),
    );
    let failures = report.failures();
    eprintln!(
        "{}\nfirst failure: {:?}",
        report.summary(),
        failures.first()
    );
    let axis = |f: &String| f.starts_with("hits axis/") && f.contains("wgpu");
    // Caught against the oracle and against the CPU.
    assert!(
        failures
            .iter()
            .any(|f| axis(f) && f.contains("vs brute force")),
        "the broken axis choice went unnoticed by the oracle: {failures:#?}"
    );
    assert!(
        failures
            .iter()
            .any(|f| axis(f) && f.contains("cpu vs wgpu")),
        "the broken axis choice went unnoticed by the CPU: {failures:#?}"
    );
}

/// The same flip as the wgpu test, in the CUDA kernel.
#[cfg(feature = "cuda")]
#[test]
fn a_broken_cuda_triangle_test_is_caught() {
    let from = "(u < 0.0f || v < 0.0f || w < 0.0f)";
    let to = "(u < 0.0f || v < 0.0f || w > 0.0f)";
    let patched = patch_once(&prism_cuda::SOURCES, "intersect.cuh", from, to);
    let backend = match prism_cuda::CudaBackend::with_source_patch(move |name: &str, src: &str| {
        if name == "intersect.cuh" {
            patched.clone()
        } else {
            src.to_string()
        }
    }) {
        Ok(b) => b,
        Err(e @ Error::BackendUnavailable { .. }) => {
            assert!(
                !required("PRISM_REQUIRE_CUDA"),
                "PRISM_REQUIRE_CUDA=1 but CUDA cannot be opened: {e}"
            );
            eprintln!("SKIPPED broken CUDA kernel test: {e}");
            return;
        }
        Err(e) => panic!("patched CUDA backend: {e}"),
    };
    let cases = Cases {
        images: one_scene(),
        ..Default::default()
    };
    let report = run(
        vec![
            Candidate::opened("cpu", cpu()),
            Candidate::opened("cuda", Box::new(backend)),
        ],
        &cases,
        &Config::quick(),
        &mut |l| log(l),
    );
    let failures = report.failures();
    eprintln!(
        "{}\nfirst failure: {:?}",
        report.summary(),
        failures.first()
    );
    assert!(
        !report.passed(),
        "the broken CUDA triangle test went unnoticed"
    );
    assert!(
        failures
            .iter()
            .filter(|f| f.starts_with("image"))
            .all(|f| f.contains("cuda")),
        "{failures:#?}"
    );
}

/// `mesh_cases` on a directory with an unloadable mesh of two sets, an empty
/// set and a good one: the mesh is one failing note, the empty set another,
/// and only the good set is kept to be checked.
#[test]
fn reference_sets_that_check_nothing_fail_once_each() {
    let dir = temp_dir("sets");
    let write = |name: &str, bytes: &[u8]| {
        std::fs::write(dir.join(name), bytes).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let (ray, hit) = one_ray_and_hit();
    write("broken.obj", b"v 0 0 0\nf 1 2 3\n");
    for set in ["a", "b"] {
        write(&format!("broken.{set}.rays"), &ray);
        write(&format!("broken.{set}.hits"), &hit);
    }
    write("tri.obj", b"v -1 -1 0\nv 1 -1 0\nv 0 1 0\nf 1 2 3\n");
    write("tri.empty.rays", b"");
    write("tri.empty.hits", b"");
    write("tri.one.rays", &ray);
    write("tri.one.hits", &hit);
    let (meshes, notes) = prism::conformance::mesh_cases(&dir);
    let whats: Vec<&str> = notes.iter().map(|n| n.what.as_str()).collect();
    assert_eq!(whats, ["mesh broken", "ray set tri/empty"], "{notes:#?}");
    assert!(notes.iter().all(|n| n.fails));
    assert!(notes[1].reason.contains("no rays"), "{notes:#?}");
    assert_eq!(meshes.len(), 1);
    assert_eq!(meshes[0].name, "tri");
    let sets: Vec<&str> = meshes[0].sets.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(sets, ["one"]);
    cleanup(&dir);
}

/// The sunlit scene on the CPU backend: next-event estimation on and off
/// converge to the same image (the suite's sun check, thresholds in
/// `prism_conformance::thresholds`), and the check reports the noise of each
/// at equal samples and equal time, next-event estimation the lower.
#[test]
fn the_sun_with_and_without_next_event_estimation_converges_alike() {
    let cases = Cases {
        images: image_cases()
            .into_iter()
            .filter(|c| c.name == "sunlit")
            .collect(),
        ..Cases::default()
    };
    assert_eq!(cases.images.len(), 1, "the sunlit scene is an image case");
    let report = run(
        vec![Candidate::opened("cpu", cpu())],
        &cases,
        &Config::quick(),
        &mut |l| log(l),
    );
    assert_passed(&report);
    assert_eq!(report.sun.len(), 1);
    let check = &report.sun[0];
    assert_eq!(check.runs.len(), 3);
    let (on, off) = (check.runs[0], check.runs[1]);
    assert!(on.nee && !off.nee && on.spp == off.spp);
    assert!(
        on.relative_rmse < off.relative_rmse,
        "NEE on {on:?} against off {off:?}"
    );
}
