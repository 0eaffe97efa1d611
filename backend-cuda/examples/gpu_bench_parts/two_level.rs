//! gpu_bench's parts of two-level scenes, each printing one line a
//! measurement and returning rows for the closing table:
//!
//! - `instances`: the trace kernels on 4M-ray resident batches of
//!   bunny-x1000 (the shared set's 65,536 rays tiled), closest and any hit,
//!   diffuse and primary rays, the hits checked against Embree's `.ihits`;
//! - `moving`: a moving frame of 10,000 bunnies, every instance given a new
//!   transform, `update_scene` (the top tree rebuilt on the host), then 1M
//!   resident camera rays traced; the whole frame timed on the host clock,
//!   and the last frame's hits checked against core's;
//! - `refit`: ogre (124k triangles) given new vertices every frame and refit
//!   on the device; the vertices' upload and the kernels timed by CUDA events,
//!   and the device's slots and boxes checked against core's host refit.

use crate::common::*;
use prism_core::backend::Backend;
use prism_core::bvh::RayonFork;
use prism_core::camera::camera_ray;
use prism_core::glam::{Affine3A, Quat, Vec3};
use prism_core::rng::Pcg;
use prism_core::{Accel, Camera, Error, Hit, RefitOn, SceneUpdate};
use prism_cuda::CudaBackend;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// One row of the closing table: part, what is measured, the figure, the goal.
pub type Summary = [String; 4];

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() { 0.0 } else { v[v.len() / 2] }
}

fn scene_error(e: String) -> Error {
    Error::Io {
        path: "shared scenes".into(),
        message: e,
    }
}

/// `instances`: bunny-x1000's ray sets on resident batches of `batch` rays.
pub fn instances_part(
    gpu: &mut CudaBackend,
    scenes: &Path,
    batch: usize,
    repeats: u32,
    log: &mut impl Write,
) -> Result<Vec<Summary>, Error> {
    let dir = scenes.join("instances");
    let mut rows = Vec::new();
    let transforms = load_instances(&dir.join("bunny-x1000.instances")).map_err(scene_error)?;
    let scene = instanced_scene(&scenes.join("bunny.obj"), &transforms).map_err(scene_error)?;
    let t = Instant::now();
    let stats = gpu.set_scene(&scene)?;
    let _ = writeln!(
        log,
        "   bunny-x1000: set_scene {:.1} ms (build {:.1} ms, upload {:.2} ms)",
        t.elapsed().as_secs_f64() * 1e3,
        stats.build.as_secs_f64() * 1e3,
        stats.upload.as_secs_f64() * 1e3
    );
    for (_, stem, set) in INSTANCED_SETS {
        let rays = load_rays(&dir.join(format!("{stem}.{set}.rays"))).map_err(scene_error)?;
        let reference =
            load_ihits(&dir.join(format!("{stem}.{set}.ihits"))).map_err(scene_error)?;
        let b = gpu.intersect_resident_bench(&rays, batch, repeats)?;
        let counts = instanced_agreement(&rays, &b.hits, &reference, Some(&scene));
        // The batch repeats the rays in order: Embree's count over it.
        let expected = (0..b.rays)
            .filter(|&i| reference[i % reference.len()].1 != Hit::NO_PRIM)
            .count();
        let _ = writeln!(
            log,
            "   {stem}.{set}: {} rays resident, closest {:.3} ms = {:.0} Mrays/s [{:.3}..{:.3}], occluded {:.3} ms = {:.0} Mrays/s ({} occluded, Embree's hits {expected}); vs Embree: {} match, {} ties, {} mismatches",
            b.rays,
            b.closest_ms,
            b.closest_mrays_per_s,
            b.closest_range_ms.0,
            b.closest_range_ms.1,
            b.occluded_ms,
            b.occluded_mrays_per_s,
            b.occluded_count,
            counts.matches,
            counts.ties,
            counts.mismatches
        );
        // The first few mismatches, to look at.
        let scales = prism_core::reference::instance_scales(&scene, &rays, &reference);
        let mut shown = 0;
        for (i, (h, r)) in b.hits.iter().zip(&reference).enumerate() {
            let one = prism_core::reference::classify_instanced(&rays[i], h, *r, scales[i]);
            if one == prism_core::reference::Agreement::Mismatch && shown < 5 {
                shown += 1;
                let _ = writeln!(
                    log,
                    "     mismatch at ray {i}: gpu t {} prim {} instance {}; Embree t {} prim {} instance {}",
                    h.t, h.prim, h.instance, r.0, r.1, r.2
                );
            }
        }
        let goal = if set == "diffuse" {
            let verdict = if b.closest_mrays_per_s >= 1500.0 {
                "met"
            } else {
                "NOT met"
            };
            format!(">= 1,500 closest ({verdict})")
        } else {
            String::new()
        };
        rows.push([
            format!("{stem}.{set}, {} rays resident", b.rays),
            "closest / any hit Mrays/s".into(),
            format!(
                "{:.0} / {:.0}",
                b.closest_mrays_per_s, b.occluded_mrays_per_s
            ),
            goal,
        ]);
        rows.push([
            format!("{stem}.{set} hits vs Embree"),
            "match / ties / mismatches".into(),
            format!(
                "{} / {} / {}",
                counts.matches, counts.ties, counts.mismatches
            ),
            "0 mismatches".into(),
        ]);
    }
    Ok(rows)
}

/// Instances of the moving frame.
const MOVING_INSTANCES: usize = 10_000;
/// Camera rays of the moving frame: 1024 x 1024.
const MOVING_SIDE: u32 = 1024;

/// The moving field's placements at `frame`: bunny-x1000's density over a
/// cube `side` wide (the shared set's scale and spread of rotations), each
/// instance bobbing and turning about its own vertical axis.
fn moving_field(base: &[(Vec3, Quat, f32)], frame: u32) -> Vec<Affine3A> {
    let t = frame as f32 * 0.1;
    base.iter()
        .enumerate()
        .map(|(i, &(p, q, s))| {
            let phase = i as f32 * 0.37;
            let bob = Vec3::new(0.0, 0.02 * (t + phase).sin(), 0.0);
            let turn = Quat::from_rotation_y(0.3 * (t * 0.7 + phase).sin());
            Affine3A::from_scale_rotation_translation(Vec3::splat(s), turn * q, p + bob)
        })
        .collect()
}

/// `moving`: 10,000 bunnies, every one moved each frame, then 1M resident rays.
pub fn moving_part(
    gpu: &mut CudaBackend,
    scenes: &Path,
    frames: usize,
    log: &mut impl Write,
) -> Result<Vec<Summary>, Error> {
    // bunny-x1000 fills a cube about 1.75 wide with 1,000 bunnies of scale
    // 0.5-1.5: the same density is a cube 1.75 * cbrt(10) wide here.
    let side = 1.75 * (MOVING_INSTANCES as f32 / 1000.0).cbrt();
    let mut rng = Pcg { state: 0x5EED_0B0B };
    let mut r = move || rng.next_f32();
    let base: Vec<(Vec3, Quat, f32)> = (0..MOVING_INSTANCES)
        .map(|_| {
            let p = (Vec3::new(r(), r(), r()) - 0.5) * side;
            let axis = (Vec3::new(r(), r(), r()) - 0.5)
                .try_normalize()
                .unwrap_or(Vec3::Y);
            let q = Quat::from_axis_angle(axis, r() * std::f32::consts::TAU);
            (p, q, 0.5 + r())
        })
        .collect();
    let scene =
        instanced_scene(&scenes.join("bunny.obj"), &moving_field(&base, 0)).map_err(scene_error)?;
    gpu.set_scene(&scene)?;
    let camera = Camera::look_at(
        Vec3::new(0.3 * side, 0.5 * side, 1.4 * side),
        Vec3::ZERO,
        Vec3::Y,
        60.0,
    );
    let frame = camera.frame(MOVING_SIDE, MOVING_SIDE)?;
    let n = MOVING_SIDE as f32;
    let rays: Vec<prism_core::Ray> = (0..MOVING_SIDE * MOVING_SIDE)
        .map(|i| {
            let (x, y) = (i % MOVING_SIDE, i / MOVING_SIDE);
            camera_ray(
                &frame,
                (x as f32 + 0.5) / n,
                1.0 - (y as f32 + 0.5) / n,
                0.0,
                0.0,
            )
        })
        .collect();
    gpu.set_resident_rays(&rays)?;
    let warm = 5;
    let (mut total, mut build, mut upload, mut trace) = (vec![], vec![], vec![], vec![]);
    let mut last = Vec::new();
    for f in 1..=(warm + frames.max(1)) as u32 {
        // The animation's transforms are the engine's work, made before.
        let field = moving_field(&base, f);
        let mut update = SceneUpdate::new();
        for (i, t) in field.iter().enumerate() {
            update.set_transform(i as u32, *t);
        }
        let t0 = Instant::now();
        let u = gpu.update_scene(&update)?;
        let s = gpu.trace_resident_rays(true)?;
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        if f > warm as u32 {
            total.push(ms);
            build.push(u.stats.build.as_secs_f64() * 1e3);
            upload.push(u.stats.upload.as_secs_f64() * 1e3);
            trace.push(s.trace.as_secs_f64() * 1e3);
        }
        last = field;
    }
    let (t_min, t_max) = (
        total.iter().copied().fold(f64::INFINITY, f64::min),
        total.iter().copied().fold(0.0, f64::max),
    );
    let frame_ms = median(&mut total);
    // Core's part of the host update alone, on a host copy of the scene:
    // through rayon's pool (as update_scene runs it) and on one thread.
    let mut host = Accel::build(&scene)?;
    let (mut forked, mut one_thread) = (vec![], vec![]);
    for f in 1..=(2 * warm + 2 * frames.max(1)) as u32 {
        let mut update = SceneUpdate::new();
        for (i, t) in moving_field(&base, f).iter().enumerate() {
            update.set_transform(i as u32, *t);
        }
        let t0 = Instant::now();
        if f % 2 == 0 {
            host.update_with_fork(&update, RefitOn::Device, &RayonFork)?;
        } else {
            host.update_with(&update, RefitOn::Device)?;
        }
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        if f > 2 * warm as u32 {
            if f % 2 == 0 {
                &mut forked
            } else {
                &mut one_thread
            }
            .push(ms);
        }
    }
    let _ = writeln!(
        log,
        "   moving frame, core's update alone on the host ({} hardware threads): {:.3} ms through rayon's pool, {:.3} ms on one thread (medians)",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        median(&mut forked),
        median(&mut one_thread)
    );
    // The last frame's hits against core's, on every 64th ray.
    let mut hits = vec![Hit::MISS; rays.len()];
    gpu.resident_hits(&mut hits)?;
    let core =
        Accel::build(&instanced_scene(&scenes.join("bunny.obj"), &last).map_err(scene_error)?)?;
    let sample: Vec<usize> = (0..rays.len()).step_by(64).collect();
    let differ = sample
        .iter()
        .filter(|&&i| bytemuck::bytes_of(&hits[i]) != bytemuck::bytes_of(&core.intersect(&rays[i])))
        .count();
    let hit_share = hits.iter().filter(|h| h.is_hit()).count() as f64 / hits.len() as f64;
    let _ = writeln!(
        log,
        "   moving frame, {MOVING_INSTANCES} bunnies all moved, {} resident rays ({:.0}% hit): frame {frame_ms:.3} ms median [{t_min:.3}..{t_max:.3}] over {} frames (update on the host {:.3}, upload {:.3}, trace {:.3} ms medians); last frame vs core: {differ} of {} sampled hits differ",
        rays.len(),
        hit_share * 100.0,
        frames.max(1),
        median(&mut build),
        median(&mut upload),
        median(&mut trace),
        sample.len()
    );
    let verdict = if frame_ms <= 2.0 { "met" } else { "NOT met" };
    Ok(vec![
        [
            format!("moving frame: {MOVING_INSTANCES} bunnies moved, 1M rays"),
            "frame ms, median (update / upload / trace)".into(),
            format!(
                "{frame_ms:.3} ({:.3} / {:.3} / {:.3})",
                build[build.len() / 2],
                upload[upload.len() / 2],
                trace[trace.len() / 2]
            ),
            format!("<= 2 ms ({verdict})"),
        ],
        [
            "moving frame: last frame vs core".into(),
            "sampled hits differing".into(),
            format!("{differ} of {}", sample.len()),
            "0".into(),
        ],
    ])
}

/// `refit`: ogre's vertices moved every frame and refit on the device.
pub fn refit_part(
    gpu: &mut CudaBackend,
    scenes: &Path,
    frames: usize,
    log: &mut impl Write,
) -> Result<Vec<Summary>, Error> {
    let mesh = prism::mesh::load_mesh(scenes.join("ogre.obj"))?;
    let scene =
        instanced_scene(&scenes.join("ogre.obj"), &[Affine3A::IDENTITY]).map_err(scene_error)?;
    let mut core = Accel::build(&scene)?;
    gpu.set_scene(&scene)?;
    let size = mesh.bounds().diagonal();
    // A wave through the mesh: every vertex moves, the shape stays.
    let wave = |f: u32| -> Vec<Vec3> {
        let t = f as f32 * 0.2;
        mesh.positions
            .iter()
            .map(|p| *p + Vec3::new(0.0, 0.01 * size * (p.x / size * 20.0 + t).sin(), 0.0))
            .collect()
    };
    let warm = 5;
    let (mut device, mut call, mut host) = (vec![], vec![], vec![]);
    let mut last = Vec::new();
    for f in 1..=(warm + frames.max(1)) as u32 {
        let moved = wave(f);
        let mut update = SceneUpdate::new();
        update.set_vertices(0, &moved);
        let u = gpu.update_scene(&update)?;
        if f > warm as u32 {
            device.push(u.stats.upload.as_secs_f64() * 1e3);
            call.push(u.stats.total.as_secs_f64() * 1e3);
            host.push(u.stats.build.as_secs_f64() * 1e3);
        }
        last = moved;
    }
    let (d_min, d_max) = (
        device.iter().copied().fold(f64::INFINITY, f64::min),
        device.iter().copied().fold(0.0, f64::max),
    );
    let device_ms = median(&mut device);
    // The device's slots and boxes against core's host refit of the last frame.
    let mut update = SceneUpdate::new();
    update.set_vertices(0, &last);
    core.update_with(&update, RefitOn::Host)?;
    let (nodes, prims) = gpu.device_scene_arrays()?;
    let slots_same =
        bytemuck::cast_slice::<_, u32>(&prims) == bytemuck::cast_slice::<_, u32>(core.primitives());
    let (a, b): (&[f32], &[f32]) = (
        bytemuck::cast_slice(&nodes),
        bytemuck::cast_slice(core.nodes()),
    );
    let boxes_same = a.len() == b.len()
        && a.iter().zip(b).enumerate().all(|(i, (x, y))| {
            if i % 4 == 3 {
                x.to_bits() == y.to_bits()
            } else {
                x == y
            }
        });
    let _ = writeln!(
        log,
        "   refit ogre ({} triangles, {} vertices) on the device: vertices' upload + kernels {device_ms:.3} ms median [{d_min:.3}..{d_max:.3}] (CUDA events), update_scene call {:.3} ms, host part {:.3} ms, over {} frames; slots as core's: {slots_same}, boxes as core's: {boxes_same}",
        mesh.triangles.len(),
        mesh.positions.len(),
        median(&mut call),
        median(&mut host),
        frames.max(1)
    );
    let verdict = if device_ms <= 0.2 { "met" } else { "NOT met" };
    Ok(vec![
        [
            format!(
                "ogre refit on the device ({} triangles)",
                mesh.triangles.len()
            ),
            "upload + kernels ms, median (CUDA events)".into(),
            format!("{device_ms:.3} (call {:.3})", call[call.len() / 2]),
            format!("<= 0.2 ms ({verdict})"),
        ],
        [
            "ogre refit vs core's host refit".into(),
            "slots / boxes the same".into(),
            format!("{slots_same} / {boxes_same}"),
            "true / true".into(),
        ],
    ])
}
