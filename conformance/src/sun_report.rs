//! The report's sun section: next-event estimation on against off, converged
//! and at equal samples and equal time (kept apart from `report`, whose file
//! holds every other section).

use crate::Report;
use crate::thresholds::{MAX_SUN_IMAGE_MEAN_DIFF, MAX_SUN_TILE_MEAN_DIFF};
use std::fmt::Write as _;

/// Append the sun section (nothing when no scene had a sun).
pub(crate) fn sun_section(out: &mut String, report: &Report, esc: fn(&str) -> String) {
    if report.sun.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<h2 id=sun>Sun</h2><p class=lead>Scenes with a sun, on each backend: next-event estimation (NEE, \
         the sun sampled directly at every surface, weighted by multiple importance sampling) against \
         chance hits alone. Converged: linear tile means at the check's high sample count, off against on \
         (limits {:.0}% a tile, {:.1}% the image). Noise: RMSE against a reference of many more samples \
         (NEE on, another seed), over the reference's mean, at equal samples and with NEE off given the \
         time NEE on took.</p>\
         <table><tr><th>scene</th><th>backend</th><th>size</th><th class=num>converged spp</th>\
         <th class=num>tile diff</th><th class=num>image diff</th><th class=num>reference spp</th>\
         <th>run</th><th class=num>spp</th><th class=num>ms</th><th class=num>relative RMSE</th>\
         <th>verdict</th></tr>",
        100.0 * MAX_SUN_TILE_MEAN_DIFF,
        100.0 * MAX_SUN_IMAGE_MEAN_DIFF,
    );
    for c in &report.sun {
        let rows = c.runs.len().max(1);
        let verdict = if c.failures.is_empty() {
            r#"<span class="chip pass">pass</span>"#.to_string()
        } else {
            format!(
                r#"<span class="chip fail">fail</span> {}"#,
                esc(&c.failures.join("; "))
            )
        };
        let _ = write!(
            out,
            "<tr><td rowspan={rows}>{}</td><td rowspan={rows}>{}</td><td rowspan={rows}>{}x{}</td>\
             <td class=num rowspan={rows}>{}</td><td class=num rowspan={rows}>{:.2}%</td>\
             <td class=num rowspan={rows}>{:.3}%</td><td class=num rowspan={rows}>{}</td>",
            esc(&c.scene),
            esc(&c.backend),
            c.width,
            c.height,
            c.converged_spp,
            100.0 * c.max_tile_diff,
            100.0 * c.mean_diff,
            c.reference_spp,
        );
        if c.runs.is_empty() {
            let _ = write!(out, "<td colspan=4>not run</td><td>{verdict}</td></tr>");
        }
        for (i, r) in c.runs.iter().enumerate() {
            let what = match (r.nee, i) {
                (true, _) => "NEE on",
                (false, 1) => "NEE off, equal spp",
                (false, _) => "NEE off, equal time",
            };
            if i > 0 {
                out.push_str("<tr>");
            }
            let _ = write!(
                out,
                "<td>{what}</td><td class=num>{}</td><td class=num>{:.1}</td><td class=num>{:.4}</td>",
                r.spp, r.ms, r.relative_rmse
            );
            if i == 0 {
                let _ = write!(out, "<td rowspan={rows}>{verdict}</td>");
            }
            out.push_str("</tr>");
        }
    }
    out.push_str("</table>");
}
