//! Soak: many moving frames of a two-level scene on every backend that opens
//! here, watching memory.
//!
//! On demand only: `PRISM_SOAK=1 cargo test --release --test soak -- --nocapture`
//! (without it the test says so and passes). `PRISM_SOAK_FRAMES=N` sets the
//! number of frames (default 10,000).
//!
//! Each frame, on the built-in `instances` scene (4,097 instances of four
//! geometries): 1,024 instances get new transforms, the rock mesh (geometry 1,
//! placed about 1,400 times) gets new vertices (its tree refit), 16 instances
//! added the frame before are removed and 16 new ones added, and a batch of
//! 4,096 rays is traced (closest hit and occlusion), the hits checked against
//! the scene's bounds. The host's resident memory (`/proc/self/statm`) is read
//! at frame 100 and at the last frame; the test fails when it grew by more
//! than [`host_margin`]. No backend reports its device memory (neither the CUDA
//! nor the wgpu backend has an accessor for it), so device memory is not
//! watched: the figures are the host's alone, and the test says so.

use prism::glam::{Affine3A, Vec3};
use prism::{Backend, BackendChoice, Hit, Instance, Ray, SceneUpdate};
use std::time::Instant;

/// Most the host's resident memory may grow between frame 100 and the last:
/// 2 MiB (allocator slack) plus 5% of what it was at frame 100: for a process
/// of 8 MiB, a leak of 300 bytes a frame over 10,000 frames fails it.
fn host_margin(at_100: u64) -> u64 {
    (2 << 20) + at_100 / 20
}

/// Resident bytes of this process (Linux), or `None` elsewhere.
fn rss() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Every backend that opens here, the CPU first.
fn backends() -> Vec<Box<dyn Backend + Send>> {
    let mut v = Vec::new();
    for choice in [BackendChoice::Cpu, BackendChoice::Cuda, BackendChoice::Wgpu] {
        match prism::open_with_env(choice, None) {
            Ok(o) => v.push(o.backend),
            Err(e) => eprintln!("soak: {choice:?} not run: {e}"),
        }
    }
    v
}

/// 4,096 rays from above the field towards it, in a fixed pattern.
fn rays() -> Vec<Ray> {
    (0..4096u32)
        .map(|i| {
            let (x, z) = ((i % 64) as f32 - 31.5, (i / 64) as f32 - 31.5);
            Ray::new(
                Vec3::new(1.4 * x, 30.0, 1.4 * z + 10.0),
                Vec3::new(0.1, -1.0, -0.3),
            )
        })
        .collect()
}

#[test]
fn moving_frames_keep_memory_flat() {
    if std::env::var("PRISM_SOAK").as_deref() != Ok("1") {
        eprintln!("soak: skipped (set PRISM_SOAK=1 to run it; see the file's docs)");
        return;
    }
    let frames: u32 = std::env::var("PRISM_SOAK_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
        .max(101);
    let preset = prism::scenes::instances();
    let scene = &preset.scene;
    let rock = scene.geometries()[1]
        .mesh_positions()
        .expect("the rock is one mesh")
        .to_vec();
    let rays = rays();
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut occluded = vec![false; rays.len()];
    let mut report = Vec::new();
    for mut backend in backends() {
        let name = backend.info().name;
        backend.set_scene(scene).expect("the instances scene");
        let bounds = prism::Accel::build(scene).expect("builds").bounds();
        let mut added: Vec<u32> = Vec::new();
        let mut at_100 = None;
        let start = Instant::now();
        let mut vertices = rock.clone();
        let mut traced = 0u64;
        for f in 0..frames {
            let mut update = SceneUpdate::new();
            for (i, t) in prism::scenes::instances_frame(scene, f, 1024) {
                update.set_transform(i, t);
            }
            let w = f as f32 * 0.1;
            for (v, p) in vertices.iter_mut().zip(&rock) {
                *v = *p * (1.0 + 0.1 * (w + 3.0 * p.y).sin());
            }
            update.set_vertices(1, &vertices);
            for &i in &added {
                update.remove_instance(i);
            }
            for k in 0..16 {
                let x = (k as f32 - 8.0) * 3.0;
                let t = Affine3A::from_translation(Vec3::new(x, 2.0 + (w + k as f32).sin(), 0.0));
                update.add_instance(Instance::new(1 + k % 3, t).with_mask(0x0F));
            }
            let stats = backend
                .update_scene(&update)
                .unwrap_or_else(|e| panic!("{name}: frame {f}: update_scene: {e}"));
            assert_eq!(stats.changes.added.len(), 16, "{name}: frame {f}");
            added = stats.changes.added;
            backend
                .intersect(&rays, &mut hits)
                .unwrap_or_else(|e| panic!("{name}: frame {f}: intersect: {e}"));
            backend
                .occluded(&rays, &mut occluded)
                .unwrap_or_else(|e| panic!("{name}: frame {f}: occluded: {e}"));
            let hit = hits.iter().filter(|h| h.is_hit()).count();
            assert!(hit > rays.len() / 2, "{name}: frame {f}: only {hit} hits");
            for (h, (r, o)) in hits.iter().zip(rays.iter().zip(&occluded)) {
                assert_eq!(h.is_hit(), *o, "{name}: frame {f}: {r:?}");
                if h.is_hit() {
                    let p = r.at(h.t);
                    assert!(
                        p.y > bounds.min.y - 5.0 && p.y < bounds.max.y + 5.0,
                        "{name}: frame {f}: hit {h:?} at {p}"
                    );
                }
            }
            traced += 2 * rays.len() as u64;
            if f == 100 {
                at_100 = rss();
            }
        }
        let last = rss();
        let secs = start.elapsed().as_secs_f64();
        let line = format!(
            "soak {name} [{}]: {frames} frames in {secs:.1} s ({:.2} ms a frame, {:.1} Mrays/s \
             traced), host RSS at frame 100: {} MiB, at frame {}: {} MiB; device memory: not \
             reported (the backend has no accessor for it)",
            backend.info().device,
            1e3 * secs / f64::from(frames),
            traced as f64 / secs / 1e6,
            at_100.map_or("?".into(), |b| format!("{:.1}", b as f64 / 1048576.0)),
            frames - 1,
            last.map_or("?".into(), |b| format!("{:.1}", b as f64 / 1048576.0)),
        );
        eprintln!("{line}");
        report.push(line);
        if let (Some(a), Some(b)) = (at_100, last) {
            assert!(
                b <= a + host_margin(a),
                "{name}: host memory grew from {a} to {b} bytes over {frames} frames"
            );
        }
    }
    assert!(!report.is_empty(), "no backend opened");
}
