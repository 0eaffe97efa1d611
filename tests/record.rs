//! Recorded bounces: a frame's path-traced rays written bounce by bounce are
//! the rays the CPU render traces, and replaying a file through `intersect`
//! gives the recorded hits (bit for bit on core's binary tree, the same
//! surfaces on the wide one); bad directories and settings are refused.

use prism::record::{Recorded, bounce_hits, bounce_rays, prepare_dir, record_frame};
use prism::reference::AgreementCounts;
use prism::{Backend, Error, Hit, Image, Integrator, NoProgress, PixelFormat, RenderSettings};
use prism_cpu::{CpuBackend, Traversal};
use std::path::{Path, PathBuf};

/// A fresh directory under the system's temp dir.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("prism-record-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// Record a tiny frame of the built-in scene `name` (path integrator).
fn record(
    name: &str,
    dir: &Path,
    size: u32,
    spp: u32,
    depth: u32,
) -> (prism::scenes::Preset, RenderSettings, Recorded) {
    let preset = prism::scenes::by_name(name).expect("built-in scene");
    let settings = RenderSettings {
        integrator: Integrator::Path,
        spp,
        max_depth: depth,
        ..preset.settings
    };
    let recorded = record_frame(
        &preset.scene,
        &preset.camera,
        &settings,
        size,
        size,
        dir,
        &NoProgress,
    )
    .expect("recording");
    (preset, settings, recorded)
}

/// Replay every recorded bounce on `cpu` and compare with the recorded hits.
fn replay(cpu: &mut CpuBackend, dir: &Path, recorded: &Recorded, exact: bool) {
    for (k, &count) in recorded.bounces.iter().enumerate() {
        let rays = prism::rays::read_rays(bounce_rays(dir, k)).expect("recorded rays");
        assert_eq!(rays.len() as u64, count, "bounce {k}");
        let reference: Vec<(f32, u32, u32)> = if recorded.instanced {
            prism::rays::read_instance_hits(bounce_hits(dir, k, true)).expect("recorded ihits")
        } else {
            prism::rays::read_hits(bounce_hits(dir, k, false))
                .expect("recorded hits")
                .into_iter()
                .map(|(t, p)| {
                    (
                        t,
                        p,
                        if p == Hit::NO_PRIM {
                            Hit::NO_INSTANCE
                        } else {
                            0
                        },
                    )
                })
                .collect()
        };
        assert_eq!(reference.len(), rays.len(), "bounce {k}");
        let mut hits = vec![Hit::MISS; rays.len()];
        cpu.intersect(&rays, &mut hits).expect("intersect");
        if exact {
            for (i, (h, r)) in hits.iter().zip(&reference).enumerate() {
                assert_eq!(
                    (h.t.to_bits(), h.prim, h.instance),
                    (r.0.to_bits(), r.1, r.2),
                    "bounce {k}, ray {i}: {:?}",
                    rays[i]
                );
            }
        } else {
            let flat: Vec<(f32, u32)> = reference.iter().map(|r| (r.0, r.1)).collect();
            let c = AgreementCounts::compare(&rays, &hits, &flat);
            assert!(c.passed(), "bounce {k}: {c:?}");
        }
    }
}

#[test]
fn a_recorded_frame_is_the_rendered_frame_and_replays_to_its_hits() {
    for name in ["cornell", "rtiow", "whitted19"] {
        let dir = temp_dir(name);
        let (size, spp, depth) = (8, 2, 5);
        let (preset, settings, recorded) = record(name, &dir, size, spp, depth);
        assert!(!recorded.instanced, "{name}");
        // Every pixel sample starts with a camera ray; each later bounce is
        // taken by at most the paths of the one before.
        assert_eq!(recorded.bounces[0], u64::from(size * size * spp), "{name}");
        assert!(recorded.bounces.len() <= depth as usize, "{name}");
        assert!(recorded.bounces.len() >= 2, "{name}: no second bounce");
        assert!(
            recorded.bounces.windows(2).all(|w| w[0] >= w[1]),
            "{name}: {:?}",
            recorded.bounces
        );
        assert!(recorded.shadows.is_empty(), "{name}");
        // The render of the same frame on the CPU (core's binary tree, as
        // recorded) traces as many rays.
        let mut cpu = CpuBackend::new().expect("cpu");
        cpu.set_scene(&preset.scene).expect("set_scene");
        cpu.set_traversal(Traversal::Binary).expect("binary");
        let mut image = Image::new(size, size, PixelFormat::LinearF32).expect("image");
        let stats = cpu
            .render(&preset.camera, &settings, &mut image, &NoProgress)
            .expect("render");
        assert_eq!(stats.rays, recorded.rays(), "{name}");
        // Core's binary tree gives the recorded hits bit for bit; the wide
        // tree the same surfaces (a tie apart).
        replay(&mut cpu, &dir, &recorded, true);
        cpu.set_traversal(Traversal::Wide).expect("wide");
        replay(&mut cpu, &dir, &recorded, false);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_two_level_frame_records_instances() {
    let dir = temp_dir("instances");
    let (preset, _, recorded) = record("instances", &dir, 6, 1, 4);
    assert!(recorded.instanced);
    assert_eq!(recorded.bounces[0], 36);
    assert!(bounce_hits(&dir, 0, true).exists());
    assert!(!bounce_hits(&dir, 0, false).exists());
    let hits = prism::rays::read_instance_hits(bounce_hits(&dir, 0, true)).expect("ihits");
    assert!(
        hits.iter().any(|h| h.1 != Hit::NO_PRIM),
        "the camera sees nothing"
    );
    let mut cpu = CpuBackend::new().expect("cpu");
    cpu.set_scene(&preset.scene).expect("set_scene");
    cpu.set_traversal(Traversal::Binary).expect("binary");
    replay(&mut cpu, &dir, &recorded, true);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_recording_replaces_an_earlier_one_and_nothing_else() {
    let dir = temp_dir("replace");
    for stale in ["bounce40.rays", "bounce40.hits", "shadow3.rays"] {
        std::fs::write(dir.join(stale), [0u8; 32]).expect("stale file");
    }
    std::fs::write(dir.join("notes.txt"), "kept").expect("notes");
    let (_, _, recorded) = record("cornell", &dir, 2, 1, 3);
    assert!(recorded.bounces.len() < 40);
    for stale in ["bounce40.rays", "bounce40.hits", "shadow3.rays"] {
        assert!(!dir.join(stale).exists(), "{stale} outlived the recording");
    }
    assert!(dir.join("notes.txt").exists());
    assert!(bounce_rays(&dir, 0).exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_directories_and_settings_are_refused() {
    let dir = temp_dir("bad");
    let file = dir.join("a_file");
    std::fs::write(&file, "x").expect("a file");
    match prepare_dir(&file) {
        Err(Error::Io { path, message }) => {
            assert_eq!(path, file.display().to_string());
            assert!(message.contains("not a directory"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // Below a file: cannot be made.
    let below = file.join("rec");
    assert!(
        matches!(prepare_dir(&below), Err(Error::Io { path, .. }) if path == below.display().to_string())
    );
    let preset = prism::scenes::by_name("cornell").expect("cornell");
    for integrator in [Integrator::Whitted, Integrator::Ao] {
        let settings = RenderSettings {
            integrator,
            ..preset.settings
        };
        let r = record_frame(
            &preset.scene,
            &preset.camera,
            &settings,
            2,
            2,
            &dir.join("r"),
            &NoProgress,
        );
        assert!(
            matches!(
                r,
                Err(Error::Setting {
                    field: "integrator",
                    ..
                })
            ),
            "{integrator:?}: {r:?}"
        );
    }
    let r = record_frame(
        &preset.scene,
        &preset.camera,
        &preset.settings,
        0,
        2,
        &dir.join("r"),
        &NoProgress,
    );
    assert!(matches!(r, Err(Error::ImageSize { .. })), "{r:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
