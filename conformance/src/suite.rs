//! The suite's driver: open the backends, log what was given, then run each
//! kind of check in turn (generated cases and refits, reference ray sets,
//! images) and time each section. The checks themselves live in the child
//! modules, one kind each; what they share (the opened backends, the verdict
//! line, hits as triples) lives here.

mod generated_checks;
mod image_checks;
mod ray_set_checks;
mod sun_checks;

use crate::generated;
use crate::hits::HitCheck;
use crate::{BackendRow, BackendStatus, Candidate, Cases, Config, Note, Report};
use generated_checks::{run_generated, run_refit};
use image_checks::run_images;
use prism_core::Backend;
use ray_set_checks::run_mesh;
use std::time::Instant;
use sun_checks::run_sun;

pub use generated_checks::placed_primitives;
pub use image_checks::image_settings;

struct Live {
    name: String,
    backend: Box<dyn Backend>,
}

/// Open backends into the report's rows. A name given twice fails as a note
/// and its second backend is not used: the report names its images by backend.
fn take_backends(
    candidates: Vec<Candidate>,
    rows: &mut Vec<BackendRow>,
    notes: &mut Vec<Note>,
) -> Vec<Live> {
    let mut live = Vec::new();
    for c in candidates {
        if rows.iter().any(|r| r.name == c.name) {
            notes.push(Note {
                what: format!("backend {}", c.name),
                reason: "given twice: each backend is checked once".into(),
                fails: true,
            });
            continue;
        }
        match c.opened {
            Ok(backend) => {
                let info = backend.info();
                rows.push(BackendRow {
                    name: c.name.clone(),
                    device: info.device,
                    software: info.software,
                    status: BackendStatus::Used,
                });
                live.push(Live {
                    name: c.name,
                    backend,
                });
            }
            Err(why) => rows.push(BackendRow {
                name: c.name,
                device: String::new(),
                software: false,
                status: if c.required {
                    BackendStatus::Missing(why)
                } else {
                    BackendStatus::Skipped(why)
                },
            }),
        }
    }
    live
}

/// Run every check of `cases` and the generated cases on every opened backend.
///
/// Never panics on a backend's failure: an error from a call fails that check
/// and the suite goes on. A ray set with no rays, or with another number of
/// reference hits than rays, fails as a note and is not traced. `log` hears
/// one line per step (for a progress display), starting with every backend's
/// status and every note of `cases`, failing or not.
pub fn run(
    candidates: Vec<Candidate>,
    cases: &Cases,
    config: &Config,
    log: &mut dyn FnMut(&str),
) -> Report {
    let mut report = Report {
        config: *config,
        backends: Vec::new(),
        notes: cases.notes.clone(),
        generated: Vec::new(),
        ray_sets: Vec::new(),
        ray_set_sizes: Vec::new(),
        two_level_meshes: Vec::new(),
        images: Vec::new(),
        sun: Vec::new(),
        timings: Vec::new(),
    };
    let mut live = take_backends(candidates, &mut report.backends, &mut report.notes);
    if live.is_empty() {
        report.notes.push(Note {
            what: "backends".into(),
            reason: "no backend opened: nothing was checked".into(),
            fails: true,
        });
    }
    for b in &report.backends {
        match &b.status {
            BackendStatus::Used => log(&format!("backend {}: {}", b.name, b.device)),
            BackendStatus::Skipped(w) => log(&format!("backend {}: skipped: {w}", b.name)),
            BackendStatus::Missing(w) => log(&format!("backend {}: MISSING: {w}", b.name)),
        }
    }
    for n in &report.notes {
        log(&format!(
            "{}{}: {}",
            if n.fails { "FAILED: " } else { "note: " },
            n.what,
            n.reason
        ));
    }

    let start = Instant::now();
    match config.generated.check() {
        Ok(()) => {
            for case in generated::cases(config.generated) {
                if case.rays.is_empty() {
                    let reason = "no rays: the case checks nothing".to_string();
                    log(&format!("FAILED: generated case {}: {reason}", case.name));
                    report.notes.push(Note {
                        what: format!("generated case {}", case.name),
                        reason,
                        fails: true,
                    });
                    continue;
                }
                report.generated.push(run_generated(&case, &mut live, log));
            }
        }
        Err(reason) => {
            log(&format!("FAILED: generated cases: {reason}"));
            report.notes.push(Note {
                what: "generated cases".into(),
                reason,
                fails: true,
            });
        }
    }
    if config.generated.check().is_ok() {
        for case in generated::refit_cases(config.generated) {
            report.generated.push(run_refit(&case, &mut live, log));
        }
    }
    report.timings.push(("generated cases", start.elapsed()));

    let start = Instant::now();
    for mesh in &cases.meshes {
        run_mesh(mesh, config, &mut live, &mut report, log);
    }
    report.timings.push(("reference ray sets", start.elapsed()));

    let start = Instant::now();
    for case in &cases.images {
        run_images(case, config, &mut live, &mut report, log);
    }
    report.timings.push(("images", start.elapsed()));

    let start = Instant::now();
    for case in &cases.images {
        run_sun(case, config, &mut live, &mut report, log);
    }
    report.timings.push(("sun", start.elapsed()));
    report
}

/// `(t, prim, instance)` of each hit.
fn triples(hits: &[prism_core::Hit]) -> Vec<(f32, u32, u32)> {
    hits.iter().map(|h| (h.t, h.prim, h.instance)).collect()
}

fn verdict(check: &HitCheck) -> String {
    format!(
        "{} ({} match, {} ties, {} mismatches, occluded off on {}{})",
        if check.passed() { "ok" } else { "FAILED" },
        check.counts.matches,
        check.counts.ties,
        check.counts.mismatches,
        check.occluded_disagreements,
        if check.face_plane > 0 {
            format!(", {} face-plane", check.face_plane)
        } else {
            String::new()
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPU backend, and a configuration whose generated cases take little time.
    fn cpu_only() -> (Vec<Candidate>, Config) {
        let cpu = prism_cpu::CpuBackend::with_threads(1).expect("cpu backend");
        let config = Config {
            generated: generated::GenSize {
                seeds: 1,
                rays: 16,
                triangles: 8,
                spheres: 4,
            },
            ..Config::quick()
        };
        (vec![Candidate::opened("cpu", Box::new(cpu))], config)
    }

    #[test]
    fn a_run_without_a_backend_or_with_one_twice_fails() {
        let report = run(Vec::new(), &Cases::default(), &Config::quick(), &mut |_| {});
        assert_eq!(
            report.failures(),
            ["backends: no backend opened: nothing was checked"]
        );
        assert!(report.summary().starts_with("FAIL"), "{}", report.summary());
        let (mut candidates, config) = cpu_only();
        let again = prism_cpu::CpuBackend::with_threads(1).expect("cpu backend");
        candidates.push(Candidate::opened("cpu", Box::new(again)));
        let report = run(candidates, &Cases::default(), &config, &mut |_| {});
        assert_eq!(
            report.failures(),
            ["backend cpu: given twice: each backend is checked once"]
        );
        assert_eq!(report.backends.len(), 1);
    }

    #[test]
    fn generated_sizes_past_the_limit_fail_instead_of_aborting() {
        let (candidates, mut config) = cpu_only();
        config.generated.rays = usize::MAX;
        let report = run(candidates, &Cases::default(), &config, &mut |_| {});
        assert_eq!(
            report.failures(),
            [format!(
                "generated cases: rays = {} is above the limit {}",
                usize::MAX,
                generated::GenSize::MAX.rays
            )]
        );
        assert!(report.generated.is_empty());
        assert_eq!(generated::GenSize::MAX.check(), Ok(()));
    }

    #[test]
    fn notes_are_logged_and_missing_ray_sets_show_in_the_summary() {
        let cases = Cases {
            notes: vec![Note {
                what: "reference ray sets".into(),
                reason: "scenes not found".into(),
                fails: false,
            }],
            ..Default::default()
        };
        let mut lines = Vec::new();
        let (candidates, config) = cpu_only();
        let report = run(candidates, &cases, &config, &mut |l| {
            lines.push(l.to_string())
        });
        assert!(report.passed(), "{:?}", report.failures());
        assert!(
            lines
                .iter()
                .any(|l| l == "note: reference ray sets: scenes not found"),
            "{lines:?}"
        );
        let summary = report.summary();
        assert!(summary.starts_with("PASS"), "{summary}");
        assert!(summary.contains("; no reference ray sets"), "{summary}");
    }

    #[test]
    fn a_failing_note_is_logged_as_failed() {
        let cases = Cases {
            notes: vec![Note {
                what: "mesh bunny".into(),
                reason: "truncated".into(),
                fails: true,
            }],
            ..Default::default()
        };
        let mut lines = Vec::new();
        let (candidates, config) = cpu_only();
        let report = run(candidates, &cases, &config, &mut |l| {
            lines.push(l.to_string())
        });
        assert!(
            lines.iter().any(|l| l == "FAILED: mesh bunny: truncated"),
            "{lines:?}"
        );
        assert_eq!(report.failures(), vec!["mesh bunny: truncated".to_string()]);
    }
}
