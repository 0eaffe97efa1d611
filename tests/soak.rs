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
//! than [`host_margin`]. Device memory is read, where `nvidia-smi` is on the
//! path, as this process's share of the GPU's memory (or, where the driver
//! lists no such share, as the GPU's memory in use: the soak is then the
//! only user), at the same frames; it may grow by at most
//! [`DEVICE_MARGIN_MIB`]. Without `nvidia-smi` the test says device memory
//! was not read.

use prism::glam::{Affine3A, Vec3};
use prism::{Backend, BackendChoice, Hit, Instance, Ray, SceneUpdate};
use std::time::Instant;

/// Most the host's resident memory may grow between frame 100 and the last:
/// 2 MiB (allocator slack) plus 5% of what it was at frame 100: for a process
/// of 8 MiB, a leak of 300 bytes a frame over 10,000 frames fails it.
fn host_margin(at_100: u64) -> u64 {
    (2 << 20) + at_100 / 20
}

/// Most the device memory may grow between frame 100 and the last, in MiB
/// (`nvidia-smi`'s unit): a buffer the size of one frame's upload, left
/// behind every frame, would pass it within a few frames.
const DEVICE_MARGIN_MIB: u64 = 16;

/// MiB of GPU memory this process holds (`nvidia-smi`'s per-process
/// figure), else the GPU's memory in use, else `None` (no `nvidia-smi`).
fn device_mib() -> Option<u64> {
    let query = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("nvidia-smi")
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let pid = std::process::id().to_string();
    let own: u64 = query(&[
        "--query-compute-apps=pid,used_memory",
        "--format=csv,noheader,nounits",
    ])
    .map(|apps| {
        apps.lines()
            .filter_map(|l| l.split_once(','))
            .filter(|(p, _)| p.trim() == pid)
            .filter_map(|(_, m)| m.trim().parse::<u64>().ok())
            .sum()
    })
    .unwrap_or(0);
    if own > 0 {
        return Some(own);
    }
    query(&["--query-gpu=memory.used", "--format=csv,noheader,nounits"])?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
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
        let (mut at_100, mut device_at_100) = (None, None);
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
                device_at_100 = device_mib();
            }
        }
        let (last, device_last) = (rss(), device_mib());
        let secs = start.elapsed().as_secs_f64();
        let line = format!(
            "soak {name} [{}]: {frames} frames in {secs:.1} s ({:.2} ms a frame, {:.1} Mrays/s \
             traced), host RSS at frame 100: {} MiB, at frame {}: {} MiB; device memory \
             (nvidia-smi) at frame 100: {}, at the last frame: {}",
            backend.info().device,
            1e3 * secs / f64::from(frames),
            traced as f64 / secs / 1e6,
            at_100.map_or("?".into(), |b| format!("{:.1}", b as f64 / 1048576.0)),
            frames - 1,
            last.map_or("?".into(), |b| format!("{:.1}", b as f64 / 1048576.0)),
            device_at_100.map_or("not read".into(), |m| format!("{m} MiB")),
            device_last.map_or("not read".into(), |m| format!("{m} MiB")),
        );
        eprintln!("{line}");
        report.push(line);
        if let (Some(a), Some(b)) = (at_100, last) {
            assert!(
                b <= a + host_margin(a),
                "{name}: host memory grew from {a} to {b} bytes over {frames} frames"
            );
        }
        if let (Some(a), Some(b)) = (device_at_100, device_last) {
            assert!(
                b <= a + DEVICE_MARGIN_MIB,
                "{name}: device memory grew from {a} to {b} MiB over {frames} frames"
            );
        }
    }
    assert!(!report.is_empty(), "no backend opened");
}
