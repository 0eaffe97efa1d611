//! Check and time the wgpu backend on one adapter, in one run.
//!
//! ```text
//! cargo run --release -p prism-rt-wgpu --example wgpu_bench -- [--scenes DIR] [--runs N] [--batch N] [--variants] [--software] [--quick] [--rays-only] [--build sah|fast|clustered] [--instances] [--no-lane-refill] [--no-overlap] [--no-timestamps] [--timeline]
//! ```
//!
//! 1. `intersect` / `occluded` on every ray set of `DIR` (default
//!    `../shared/scenes`) against Embree's reference hits and against
//!    prism-core, and Mrays/s (median of N, trace time as `prism bench` takes it),
//!    for the set as it is and repeated to a batch of `--batch` rays (default
//!    4,194,304, the batch the CUDA figures use; GPU time of the trace passes),
//!    and that batch kept on the device and traced back to back (the engine's
//!    path and the way the CUDA figures are taken: see `resident_rates`).
//! 2. Renders of three scenes, each integrator, against prism-core's
//!    `render_pixel` computed on the host's cores (per-pixel tolerance as in
//!    `tests/adapter.rs`).
//! 3. The benchmark frames of `prism bench`: `rtiow` 1280x720 30 spp depth 50
//!    and `whitted19` 8192x8192, sRGB 8-bit output, stage times, median of N.
//!    The two scenes are the facade's (`prism::scenes`), the ones `prism bench`
//!    renders.
//! 4. With `--variants`: the same frames and ray sets for other workgroup sizes.
//!
//! `--instances` runs instead the two-level part: the bunny placed 1,000 times
//! (`DIR/instances/bunny-x1000.*`), its primary and diffuse rays repeated to
//! `--batch` rays, closest and any hit in one dispatch a batch with and
//! without lane refill and in the default banded call, Mrays/s and every hit
//! against Embree's `.ihits`; it ends with a table.
//!
//! `--build` picks the tree over the ray sets' meshes (`fast` and `clustered`:
//! built on the device). `--software` accepts a software adapter, `--quick` shrinks the two frames
//! (for a smoke test on lavapipe), `--rays-only` stops after step 1, and
//! `--no-lane-refill` turns [`WgpuOptions::lane_refill`] off, `--no-overlap`
//! [`WgpuOptions::overlap_transfers`] (one dispatch per batch: the kernel
//! figure to set beside CUDA's on resident rays), `--no-timestamps`
//! [`WgpuOptions::timestamps`] (host-clock stage times). `--timeline`
//! replaces steps 2-4 with frame times after each of several operations
//! (ray batches, idle time, busy host cores), one line per phase.
//!
//! Ends with a table of everything measured; exits non-zero if a check failed.

#[path = "../tests/common/mod.rs"]
mod common;

use prism::scenes::{self, Preset};
use prism_core::glam::Vec3;
use prism_core::integrator::render_pixel;
use prism_core::reference::AgreementCounts;
use prism_core::{
    Accel, Backend, BuildQuality, Camera, Error, Hit, Image, Integrator, Material, NoProgress,
    PixelFormat, Ray, RenderSettings, RenderStats, Scene,
};
use prism_wgpu::{WgpuBackend, WgpuOptions};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Least time resident batches run untimed before they are timed: the GPU's
/// clock falls while the host works between sets and climbs back over about
/// a second of steady work.
const WARM_UP: std::time::Duration = std::time::Duration::from_millis(1500);

/// Batches a resident rate is timed over, after WARM_UP.
const RESIDENT_RUNS: usize = 20;

/// Mrays/s of `rays` as a batch that stays on the device, the engine's path
/// (`record_intersect` and `record_occluded` into one encoder a submission):
/// the rays uploaded once, then batches submitted back to back, untimed for
/// WARM_UP and then RESIDENT_RUNS of them timed on the host around one
/// submission and its wait. Timed kernels of host calls leave the GPU idle
/// while the host copies rays in and hits out; under that duty cycle the
/// driver holds the SM clock at a fraction of its maximum (bench/RESULTS.md),
/// while resident batches keep it up, as CUDA's resident figures do.
fn resident_rates(gpu: &mut WgpuBackend, rays: &[Ray]) -> Result<(f64, f64), Error> {
    let device = gpu.device().clone();
    let queue = gpu.queue().clone();
    let n = rays.len();
    let buffer = |label: &'static str, bytes: usize| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    };
    let ray_buffer = buffer("bench rays", std::mem::size_of_val(rays));
    queue.write_buffer(&ray_buffer, 0, bytemuck::cast_slice(rays));
    let hits = buffer("bench hits", n * 32);
    let flags = buffer("bench occluded", n * 4);
    let mut rate = |occluded: bool| -> Result<f64, Error> {
        let mut run = |batches: usize| -> Result<(), Error> {
            let mut encoder = device.create_command_encoder(&Default::default());
            for _ in 0..batches {
                if occluded {
                    gpu.record_occluded(
                        &mut encoder,
                        ray_buffer.slice(..),
                        flags.slice(..),
                        n as u32,
                    )?;
                } else {
                    gpu.record_intersect(
                        &mut encoder,
                        ray_buffer.slice(..),
                        hits.slice(..),
                        n as u32,
                    )?;
                }
            }
            queue.submit([encoder.finish()]);
            device
                .poll(wgpu::PollType::wait_indefinitely())
                .map_err(|e| Error::Device {
                    backend: "wgpu",
                    operation: "resident batches",
                    message: e.to_string(),
                })?;
            Ok(())
        };
        let warm = Instant::now();
        while warm.elapsed() < WARM_UP {
            run(4)?;
        }
        let t = Instant::now();
        run(RESIDENT_RUNS)?;
        Ok((n * RESIDENT_RUNS) as f64 / t.elapsed().as_secs_f64() / 1e6)
    };
    Ok((rate(false)?, rate(true)?))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() { 0.0 } else { v[v.len() / 2] }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Core's linear image and rays, on every host core.
fn core_render(
    scene: &Scene,
    camera: &Camera,
    settings: &RenderSettings,
    w: u32,
    h: u32,
) -> (Vec<Vec3>, u64) {
    let accel = match Accel::build(scene) {
        Ok(a) => a,
        Err(e) => panic!("scene: {e}"),
    };
    let params = match settings.params(&accel, camera, w, h) {
        Ok(p) => p,
        Err(e) => panic!("params: {e}"),
    };
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
    let mut pixels = vec![Vec3::ZERO; (w * h) as usize];
    let mut rays = 0u64;
    let rows_per = (h as usize).div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = pixels
            .chunks_mut(rows_per * w as usize)
            .enumerate()
            .map(|(k, band)| {
                let (accel, params) = (&accel, &params);
                scope.spawn(move || {
                    let mut r = 0u64;
                    for (i, px) in band.iter_mut().enumerate() {
                        let idx = k * rows_per * w as usize + i;
                        let (c, n) = render_pixel(accel, params, idx as u32 % w, idx as u32 / w);
                        *px = c;
                        r += n as u64;
                    }
                    r
                })
            })
            .collect();
        for h in handles {
            rays += h.join().unwrap_or(0);
        }
    });
    (pixels, rays)
}

/// Share of pixels within 1e-3 of core (relative to brightness), mean abs error, worst.
fn compare(gpu: &[[f32; 4]], core: &[Vec3]) -> (f64, f64, f32) {
    let mut close = 0usize;
    let mut sum = 0.0f64;
    let mut worst = 0.0f32;
    for (g, c) in gpu.iter().zip(core) {
        let d = (Vec3::new(g[0], g[1], g[2]) - *c).abs().max_element();
        let d = if d.is_finite() { d } else { f32::INFINITY };
        if d <= 1e-3 * (1.0 + c.max_element()) {
            close += 1;
        }
        sum += d as f64;
        worst = worst.max(d);
    }
    let n = gpu.len().max(1) as f64;
    (close as f64 / n, sum / n, worst)
}

/// A scene of one mesh file of the shared scenes (grey Lambert, primitive ids in
/// file order), as the facade's conformance run loads it.
/// Its tree is the one `--build` names (the SAH tree by default).
fn load_obj(path: &Path) -> Result<Scene, String> {
    let mesh = prism::mesh::load_mesh(path).map_err(|e| e.to_string())?;
    let (mut scene, _) = prism::mesh_scene(&mesh, Material::lambertian(Vec3::splat(0.7)))
        .map_err(|e| e.to_string())?;
    scene.build_quality = *MESH_TREE.get().unwrap_or(&BuildQuality::Sah);
    Ok(scene)
}

/// The tree `--build` asks for over the ray sets' meshes.
static MESH_TREE: std::sync::OnceLock<BuildQuality> = std::sync::OnceLock::new();

struct Report {
    lines: Vec<String>,
    failed: Vec<String>,
}

impl Report {
    fn line(&mut self, s: String) {
        println!("{s}");
        self.lines.push(s);
    }
    fn check(&mut self, ok: bool, what: String) {
        if !ok {
            println!("CHECK FAILED: {what}");
            self.failed.push(what);
        }
    }
}

/// `src` with `mul_rn` reduced to a plain (fusable) product when `plain`.
fn unfused(name: &str, src: &str, plain: bool) -> String {
    if plain && name == "math.wgsl" {
        src.replace(
            "bitcast<f32>(bitcast<u32>(a * b) | params.opaque_zero)",
            "a * b",
        )
    } else {
        src.to_string()
    }
}

fn rays_bench(
    gpu: &mut WgpuBackend,
    dir: &Path,
    runs: usize,
    batch: usize,
    check: bool,
    rep: &mut Report,
    tag: &str,
) -> Result<(), Error> {
    for mesh in ["bunny", "ogre"] {
        let obj = dir.join(format!("{mesh}.obj"));
        let scene = match load_obj(&obj) {
            Ok(s) => s,
            Err(e) => {
                rep.line(format!("skipping {mesh}: {e}"));
                continue;
            }
        };
        let accel = check.then(|| Accel::build(&scene)).transpose()?;
        let set_stats = gpu.set_scene(&scene)?;
        for set in ["primary", "diffuse"] {
            let rays = match prism::rays::read_rays(dir.join(format!("{mesh}.{set}.rays"))) {
                Ok(r) => r,
                Err(e) => {
                    rep.line(format!("skipping {mesh}.{set}: {e}"));
                    continue;
                }
            };
            let mut hits = vec![Hit::MISS; rays.len()];
            let mut occ = vec![false; rays.len()];
            gpu.intersect(&rays, &mut hits)?;
            gpu.occluded(&rays, &mut occ)?;
            let (mut closest, mut occluded, mut closest_total) =
                (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..runs {
                let s = gpu.intersect(&rays, &mut hits)?;
                closest.push(rays.len() as f64 / s.trace.as_secs_f64() / 1e6);
                closest_total.push(rays.len() as f64 / s.total.as_secs_f64() / 1e6);
                let s = gpu.occluded(&rays, &mut occ)?;
                occluded.push(rays.len() as f64 / s.trace.as_secs_f64() / 1e6);
            }
            rep.line(format!(
                "{tag} rays {mesh}.{set}: {} rays, build {:.1} ms upload {:.1} ms, closest {:.1} Mrays/s (whole call {:.1}), occluded {:.1} Mrays/s, median of {runs}",
                rays.len(),
                ms(set_stats.build),
                ms(set_stats.upload),
                median(closest),
                median(closest_total),
                median(occluded)
            ));
            if batch > rays.len() {
                let big: Vec<Ray> = rays.iter().copied().cycle().take(batch).collect();
                let mut big_hits = vec![Hit::MISS; big.len()];
                let mut big_occ = vec![false; big.len()];
                let (mut closest, mut occluded, mut whole) = (Vec::new(), Vec::new(), Vec::new());
                gpu.intersect(&big, &mut big_hits)?;
                for _ in 0..runs {
                    let s = gpu.intersect(&big, &mut big_hits)?;
                    closest.push(big.len() as f64 / s.trace.as_secs_f64() / 1e6);
                    whole.push(big.len() as f64 / s.total.as_secs_f64() / 1e6);
                    let s = gpu.occluded(&big, &mut big_occ)?;
                    occluded.push(big.len() as f64 / s.trace.as_secs_f64() / 1e6);
                }
                let (resident_closest, resident_occluded) = resident_rates(gpu, &big)?;
                rep.line(format!(
                    "{tag} batch {mesh}.{set}: {} rays, closest {:.1} Mrays/s (whole call {:.1}), occluded {:.1} Mrays/s, median of {runs}; resident, back to back: closest {resident_closest:.1}, occluded {resident_occluded:.1} Mrays/s",
                    big.len(),
                    median(closest),
                    median(whole),
                    median(occluded)
                ));
                // The batch's hits are the set's hits, repeated.
                let same = big_hits.chunks(rays.len()).all(|c| {
                    c.iter()
                        .zip(&hits)
                        .all(|(a, b)| a.prim == b.prim && a.t.to_bits() == b.t.to_bits())
                });
                rep.check(same, format!("{mesh}.{set} batch hits equal the set's"));
            }
            if !check {
                continue;
            }
            if let Ok(reference) = prism::rays::read_hits(dir.join(format!("{mesh}.{set}.hits"))) {
                let c = AgreementCounts::compare(&rays, &hits, &reference);
                let occ_bad = occ
                    .iter()
                    .zip(&reference)
                    .filter(|(o, r)| **o != (r.1 != Hit::NO_PRIM))
                    .count();
                rep.line(format!(
                    "  vs Embree: {} match, {} ties, {} mismatches (first {:?}); occluded disagrees on {occ_bad}",
                    c.matches, c.ties, c.mismatches, c.first_mismatch
                ));
                rep.check(
                    c.passed() && reference.len() == rays.len(),
                    format!("{mesh}.{set} intersect vs Embree"),
                );
                rep.check(occ_bad == 0, format!("{mesh}.{set} occluded vs Embree"));
            }
            if let Some(accel) = &accel {
                let core: Vec<(f32, u32)> = rays
                    .iter()
                    .map(|r| accel.intersect(r))
                    .map(|h| (h.t, h.prim))
                    .collect();
                let c = AgreementCounts::compare(&rays, &hits, &core);
                let occ_bad = rays
                    .iter()
                    .zip(&occ)
                    .filter(|(r, o)| accel.occluded(r) != **o)
                    .count();
                rep.line(format!(
                    "  vs core:   {} match, {} ties, {} mismatches; occluded disagrees on {occ_bad}",
                    c.matches, c.ties, c.mismatches
                ));
                rep.check(c.passed(), format!("{mesh}.{set} intersect vs core"));
            }
        }
    }
    Ok(())
}

/// One row of the instanced part's table.
struct InstancedRow {
    set: &'static str,
    variant: &'static str,
    rays: usize,
    closest: f64,
    occluded: f64,
    whole: f64,
    /// Mrays/s of batches that stay on the device (`resident_rates`).
    resident_closest: f64,
    resident_occluded: f64,
    counts: (usize, usize, usize),
    /// Rays whose hit is not core's (beyond the tolerance, no tie).
    core_bad: usize,
    occ_bad: usize,
}

/// Core's closest hits of `rays` on `accel`, on every host core.
fn core_hits(accel: &Accel, rays: &[Ray]) -> Vec<Hit> {
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
    let mut hits = vec![Hit::MISS; rays.len()];
    let part = rays.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for (out, rays) in hits.chunks_mut(part).zip(rays.chunks(part)) {
            scope.spawn(move || {
                for (h, r) in out.iter_mut().zip(rays) {
                    *h = accel.intersect(r);
                }
            });
        }
    });
    hits
}

/// Hits against an instanced reference `(t, prim, instance)` under core's
/// rule (`AgreementCounts::compare_instanced`: the same primitive of the same
/// instance, the tolerance's floor from the rounding of the ray carried into
/// `scene`'s instances): matches, ties, mismatches; and the first mismatch.
fn compare_instanced(
    rays: &[Ray],
    hits: &[Hit],
    reference: &[(f32, u32, u32)],
    scene: &Scene,
) -> ((usize, usize, usize), Option<usize>) {
    let scales = prism_core::reference::instance_scales(scene, rays, reference);
    let c = AgreementCounts::compare_instanced(rays, hits, reference, &scales);
    ((c.matches, c.ties, c.mismatches), c.first_mismatch)
}

/// `--instances`: the bunny placed 1,000 times (`DIR/instances/bunny-x1000.*`),
/// its 65,536 primary and diffuse rays repeated to batches of `batch` rays:
/// closest and any hit, Mrays/s over the trace pass's GPU time (median of
/// `runs`), every hit checked against Embree's `.ihits` and core's walk (a
/// mismatch against Embree passes only where core's walk misses Embree's
/// answer too). Variants: one dispatch a batch (the figure to set beside
/// CUDA's on resident rays) with and without lane refill, the default banded
/// call (its whole-call rate), and refill lanes that enter instances as they
/// come against the default's waiting for a quarter of the subgroup (both
/// through a source patch, which turns wgpu's loop bounding on).
fn instances_bench(
    dir: &Path,
    runs: usize,
    batch: usize,
    software: bool,
    rep: &mut Report,
) -> Result<(), Error> {
    let base = dir.join("instances");
    let io = |path: &Path, message: String| Error::Io {
        path: path.display().to_string(),
        message,
    };
    let obj = dir.join("bunny.obj");
    let mesh = prism::mesh::load_mesh(&obj)?;
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::splat(0.7)));
    let g = scene.add_geometry(prism_core::Geometry::mesh(
        &mesh.positions,
        &mesh.triangles,
        m,
    )?);
    let placements = prism::rays::read_instances(base.join("bunny-x1000.instances"))?;
    if placements.is_empty() {
        return Err(io(&base, "no instances in bunny-x1000.instances".into()));
    }
    for t in placements {
        scene.add_instance(prism_core::Instance::new(g, t));
    }
    // Core's answers, and how many of Embree's core itself misses (the
    // object ray's rounding on a few very short diffuse rays).
    let accel = Accel::build(&scene)?;
    let mut sets = Vec::new();
    for set in ["primary", "diffuse"] {
        let rays = prism::rays::read_rays(base.join(format!("bunny-x1000.{set}.rays")))?;
        let reference =
            prism::rays::read_instance_hits(base.join(format!("bunny-x1000.{set}.ihits")))?;
        let core = core_hits(&accel, &rays);
        let (core_counts, _) = compare_instanced(&rays, &core, &reference, &scene);
        let core_ref: Vec<(f32, u32, u32)> =
            core.iter().map(|h| (h.t, h.prim, h.instance)).collect();
        rep.line(format!(
            "instances: core's walk on bunny-x1000.{set} against Embree: {} match, {} ties, {} mismatches",
            core_counts.0, core_counts.1, core_counts.2
        ));
        sets.push((set, rays, reference, core_ref, core_counts.2));
    }
    // (name, lane refill, banded calls, source patch). A patched module runs
    // with wgpu's loop bounding on, so the patched variant compares with the
    // identity patch: lanes entering instances as they come against the
    // default, which makes them wait for a quarter of the subgroup.
    type Patch = fn(&str, &str) -> String;
    let identity: Patch = |_, src| src.to_string();
    let as_they_come: Patch = |name, src| {
        if name == "refill.wgsl" {
            src.replace(
                "const ENTRY_WAIT_SHARE: u32 = 4u;",
                "const ENTRY_WAIT_SHARE: u32 = 4096u;",
            )
        } else {
            src.to_string()
        }
    };
    let variants: [(&str, bool, bool, Option<Patch>); 5] = [
        ("one dispatch, lane refill", true, false, None),
        ("one dispatch, no refill", false, false, None),
        ("default (banded)", true, true, None),
        ("one dispatch, identity patch", true, false, Some(identity)),
        (
            "one dispatch, identity patch, entries as they come",
            true,
            false,
            Some(as_they_come),
        ),
    ];
    let refill_src = prism_wgpu::REFILL.1;
    rep.check(
        as_they_come("refill.wgsl", refill_src) != refill_src,
        "the entries-as-they-come patch applies to refill.wgsl".into(),
    );
    let mut rows = Vec::new();
    for (variant, refill, overlap, patch) in variants {
        let mut gpu = WgpuBackend::new(WgpuOptions {
            allow_software: software,
            lane_refill: refill,
            overlap_transfers: overlap,
            source_patch: patch.map(|p| Box::new(p) as prism_wgpu::SourcePatch),
            ..Default::default()
        })?;
        if refill && !gpu.lane_refill() {
            rep.line(format!(
                "instances: skipping '{variant}': no lane refill on this adapter"
            ));
            continue;
        }
        let set_stats = gpu.set_scene(&scene)?;
        rep.line(format!(
            "instances {variant}: bunny-x1000 set_scene build {:.1} ms upload {:.1} ms, stack {} entries",
            ms(set_stats.build),
            ms(set_stats.upload),
            gpu.module_config().stack_entries
        ));
        for (set, rays, reference, core, core_mismatches) in &sets {
            let (set, core_mismatches) = (*set, *core_mismatches);
            let n = batch.max(rays.len());
            let big: Vec<Ray> = rays.iter().copied().cycle().take(n).collect();
            let mut hits = vec![Hit::MISS; n];
            let mut occ = vec![false; n];
            // One untimed round (pipelines, buffers).
            gpu.intersect(&big, &mut hits)?;
            gpu.occluded(&big, &mut occ)?;
            let (mut closest, mut occluded, mut whole) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..runs {
                let s = gpu.intersect(&big, &mut hits)?;
                closest.push(n as f64 / s.trace.as_secs_f64() / 1e6);
                whole.push(n as f64 / s.total.as_secs_f64() / 1e6);
                let s = gpu.occluded(&big, &mut occ)?;
                occluded.push(n as f64 / s.trace.as_secs_f64() / 1e6);
            }
            let (resident_closest, resident_occluded) = resident_rates(&mut gpu, &big)?;
            // Every repetition of the set is checked, against Embree and core.
            let reference: Vec<(f32, u32, u32)> =
                reference.iter().copied().cycle().take(n).collect();
            let core: Vec<(f32, u32, u32)> = core.iter().copied().cycle().take(n).collect();
            let (counts, _) = compare_instanced(&big, &hits, &reference, &scene);
            let ((_, _, core_bad), first) = compare_instanced(&big, &hits, &core, &scene);
            let occ_bad = occ
                .iter()
                .zip(&core)
                .filter(|(o, r)| **o != (r.1 != Hit::NO_PRIM))
                .count();
            if let Some(i) = first {
                rep.line(format!(
                    "  first ray not core's: ray {i} {:?}: wgpu {:?}, core {:?}, Embree {:?}",
                    big[i], hits[i], core[i], reference[i]
                ));
            }
            let repeats = n.div_ceil(rays.len());
            rep.check(
                core_bad == 0 && counts.2 <= core_mismatches * repeats,
                format!("bunny-x1000.{set} ({variant}) intersect vs core and Embree"),
            );
            rows.push(InstancedRow {
                set,
                variant,
                rays: n,
                closest: median(closest),
                occluded: median(occluded),
                whole: median(whole),
                resident_closest,
                resident_occluded,
                counts,
                core_bad,
                occ_bad,
            });
        }
    }
    rep.line(String::new());
    rep.line(
        "| instanced set | variant | rays | closest Mrays/s | occluded Mrays/s | resident closest / occluded, back to back | closest, whole call | vs Embree: match / ties / mismatches | not core's | occluded not core's |"
            .into(),
    );
    rep.line("|---|---|---:|---:|---:|---:|---:|---|---:|---:|".into());
    for r in rows {
        rep.line(format!(
            "| bunny-x1000.{} | {} | {} | {:.1} | {:.1} | {:.1} / {:.1} | {:.1} | {} / {} / {} | {} | {} |",
            r.set,
            r.variant,
            r.rays,
            r.closest,
            r.occluded,
            r.resident_closest,
            r.resident_occluded,
            r.whole,
            r.counts.0,
            r.counts.1,
            r.counts.2,
            r.core_bad,
            r.occ_bad
        ));
    }
    Ok(())
}

fn frame_bench(
    gpu: &mut WgpuBackend,
    name: &str,
    preset: &Preset,
    runs: usize,
    rep: &mut Report,
    tag: &str,
) -> Result<(), Error> {
    let (w, h, settings) = (preset.width, preset.height, &preset.settings);
    let mut image = Image::new(w, h, PixelFormat::Srgba8)?;
    bench_frame(gpu, preset, &mut image)?;
    let all = (0..runs)
        .map(|_| bench_frame(gpu, preset, &mut image))
        .collect::<Result<Vec<_>, _>>()?;
    let col = |f: &dyn Fn(&(RenderStats, RenderStats)) -> f64| median(all.iter().map(f).collect());
    rep.line(format!(
        "{tag} frame {name} {w}x{h} {} spp depth {}: build {:.2} ms, upload {:.2} ms, trace {:.2} ms, download {:.2} ms, frame {:.2} ms, {} rays, {:.0} Mrays/s ({:?}), median of {runs}",
        settings.spp,
        settings.max_depth,
        col(&|r| ms(r.0.build)),
        col(&|r| ms(r.0.upload)),
        col(&|r| ms(r.1.trace)),
        col(&|r| ms(r.1.download)),
        col(&|r| ms(r.1.total)),
        all.first().map_or(0, |r| r.1.rays),
        col(&|r| r.1.mrays_per_s()),
        all.first().map_or(prism_core::TimingSource::HostClock, |r| r.1.timing),
    ));
    Ok(())
}

/// Trace times in ms of `n` frames of `preset`, each after `set_scene` as
/// `prism bench` renders them.
fn trace_times(gpu: &mut WgpuBackend, preset: &Preset, n: usize) -> Result<Vec<f64>, Error> {
    let mut image = Image::new(preset.width, preset.height, PixelFormat::Srgba8)?;
    (0..n)
        .map(|_| bench_frame(gpu, preset, &mut image).map(|(_, r)| ms(r.trace)))
        .collect()
}

/// One frame of `preset` as `prism bench` times it: `set_scene`, then `render`
/// into `image`; the stats of both.
fn bench_frame(
    gpu: &mut WgpuBackend,
    preset: &Preset,
    image: &mut Image,
) -> Result<(RenderStats, RenderStats), Error> {
    let s = gpu.set_scene(&preset.scene)?;
    let r = gpu.render(&preset.camera, &preset.settings, image, &NoProgress)?;
    Ok((s, r))
}

/// `--timeline`: rtiow and whitted19 frame times after each of the operations
/// a program might run before them, to find what slows later frames.
fn timeline(gpu: &mut WgpuBackend, dir: &Path, rep: &mut Report) -> Result<(), Error> {
    let (rt, wh) = (scenes::rtiow(), scenes::whitted19());
    let start = Instant::now();
    let phase = |gpu: &mut WgpuBackend, rep: &mut Report, what: &str| -> Result<(), Error> {
        let a = trace_times(gpu, &rt, 6)?;
        let b = trace_times(gpu, &wh, 4)?;
        let fmt = |v: &[f64]| {
            v.iter()
                .map(|t| format!("{t:.2}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        rep.line(format!(
            "timeline {:6.1} s {what}: rtiow trace ms [{}] whitted19 [{}]",
            start.elapsed().as_secs_f64(),
            fmt(&a),
            fmt(&b)
        ));
        Ok(())
    };
    phase(gpu, rep, "first frames")?;
    phase(gpu, rep, "again")?;
    let io = |path: &Path, message: String| Error::Io {
        path: path.display().to_string(),
        message,
    };
    let obj = dir.join("bunny.obj");
    let scene = load_obj(&obj).map_err(|m| io(&obj, m))?;
    let rays = prism::rays::read_rays(dir.join("bunny.diffuse.rays"))?;
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut occ = vec![false; rays.len()];
    gpu.set_scene(&scene)?;
    for _ in 0..5 {
        gpu.intersect(&rays, &mut hits)?;
        gpu.occluded(&rays, &mut occ)?;
    }
    phase(
        gpu,
        rep,
        "after 5 x 262,144-ray intersect + occluded (bunny.diffuse)",
    )?;
    std::thread::sleep(std::time::Duration::from_secs(2));
    phase(gpu, rep, "after 2 s idle")?;
    let big: Vec<Ray> = rays.iter().copied().cycle().take(4 << 20).collect();
    let mut big_hits = vec![Hit::MISS; big.len()];
    gpu.set_scene(&scene)?;
    for _ in 0..3 {
        gpu.intersect(&big, &mut big_hits)?;
    }
    phase(gpu, rep, "after 3 x 4M-ray intersect")?;
    phase(gpu, rep, "again")?;
    let mut big_occ = vec![false; big.len()];
    gpu.set_scene(&scene)?;
    for _ in 0..3 {
        gpu.occluded(&big, &mut big_occ)?;
    }
    phase(gpu, rep, "after 3 x 4M-ray occluded")?;
    render_checks(gpu, rep)?;
    phase(
        gpu,
        rep,
        "after the render checks (host cores busy with core's renders)",
    )?;
    std::thread::sleep(std::time::Duration::from_secs(2));
    phase(gpu, rep, "after 2 s idle")?;
    Ok(())
}

fn render_checks(gpu: &mut WgpuBackend, rep: &mut Report) -> Result<(), Error> {
    let (mixed_scene, mixed_camera) = common::render_scene();
    let rt = scenes::rtiow();
    let (rt_scene, rt_camera) = (rt.scene, rt.camera);
    let wh = scenes::whitted19();
    let (wh_scene, wh_camera, wh_settings) = (wh.scene, wh.camera, wh.settings);
    let path = |spp, depth| RenderSettings {
        integrator: Integrator::Path,
        spp,
        max_depth: depth,
        seed: 3,
        ..Default::default()
    };
    let cases: Vec<(&str, &Scene, &Camera, RenderSettings, u32, u32, f64)> = vec![
        (
            "mixed path",
            &mixed_scene,
            &mixed_camera,
            path(8, 8),
            160,
            120,
            0.95,
        ),
        (
            "mixed whitted",
            &mixed_scene,
            &mixed_camera,
            RenderSettings {
                integrator: Integrator::Whitted,
                spp: 1,
                max_depth: 3,
                ..Default::default()
            },
            160,
            120,
            0.99,
        ),
        (
            "mixed ao",
            &mixed_scene,
            &mixed_camera,
            RenderSettings {
                integrator: Integrator::Ao,
                spp: 4,
                ao_samples: 8,
                ao_distance: 1.5,
                ao_shadows: true,
                ..Default::default()
            },
            160,
            120,
            0.95,
        ),
        (
            "rtiow path",
            &rt_scene,
            &rt_camera,
            path(8, 50),
            320,
            180,
            0.95,
        ),
        (
            "whitted19",
            &wh_scene,
            &wh_camera,
            wh_settings,
            1024,
            1024,
            0.99,
        ),
    ];
    for (name, scene, camera, settings, w, h, share) in cases {
        gpu.set_scene(scene)?;
        let mut image = Image::new(w, h, PixelFormat::LinearF32)?;
        let stats = gpu.render(camera, &settings, &mut image, &NoProgress)?;
        let t = Instant::now();
        let (core, core_rays) = core_render(scene, camera, &settings, w, h);
        let core_ms = ms(t.elapsed());
        let (close, mae, worst) = compare(image.linear(), &core);
        let ray_diff = (stats.rays as f64 - core_rays as f64).abs() / core_rays.max(1) as f64;
        rep.line(format!(
            "render {name} {w}x{h}: {:.3}% of pixels within 1e-3 of core, mean abs error {mae:.2e}, worst {worst:.3}; rays gpu {} core {} (core took {core_ms:.0} ms on the host)",
            100.0 * close,
            stats.rays,
            core_rays
        ));
        rep.check(
            close >= share && mae <= 1e-2 && ray_diff < 0.01,
            format!("render {name} vs core"),
        );
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let flag = |name: &str| args.iter().any(|a| a == name);
    let dir = arg("--scenes")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/scenes"));
    let runs: usize = arg("--runs").and_then(|r| r.parse().ok()).unwrap_or(5);
    let batch: usize = arg("--batch")
        .and_then(|r| r.parse().ok())
        .unwrap_or(4 << 20);
    let software = flag("--software");
    let tree = match arg("--build").as_deref() {
        None | Some("sah") => BuildQuality::Sah,
        Some("fast") => BuildQuality::Fast,
        Some("clustered") => BuildQuality::Clustered,
        Some(other) => {
            eprintln!("error: --build {other}: sah, fast or clustered");
            std::process::exit(2);
        }
    };
    let _ = MESH_TREE.set(tree);
    let quick = flag("--quick");
    let mut rep = Report {
        lines: Vec::new(),
        failed: Vec::new(),
    };

    for a in prism_wgpu::adapters() {
        rep.line(format!("adapter: {a} driver {}", a.driver));
    }
    if flag("--instances") {
        // Its own backends, one per variant.
        let started = Instant::now();
        let result = instances_bench(&dir, runs, batch, software, &mut rep);
        finish(rep, result, started);
    }
    let mut gpu = match WgpuBackend::new(WgpuOptions {
        allow_software: software,
        lane_refill: !flag("--no-lane-refill"),
        timestamps: !flag("--no-timestamps"),
        overlap_transfers: !flag("--no-overlap"),
        ..Default::default()
    }) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let info = gpu.info();
    let l = gpu.limits();
    rep.line(format!(
        "using {} (software {}), f64 division {}, lane refill {}, timing {:?}; max storage binding {} MiB, max buffer {} MiB, max workgroups/dim {}",
        info.device,
        info.software,
        gpu.f64_division(),
        gpu.lane_refill(),
        gpu.timing_source(),
        l.max_storage_buffer_binding_size >> 20,
        l.max_buffer_size >> 20,
        l.max_compute_workgroups_per_dimension
    ));
    let started = Instant::now();
    let result = (|| -> Result<(), Error> {
        rays_bench(&mut gpu, &dir, runs, batch, true, &mut rep, "default")?;
        if flag("--rays-only") {
            return Ok(());
        }
        if flag("--timeline") {
            return timeline(&mut gpu, &dir, &mut rep);
        }
        render_checks(&mut gpu, &mut rep)?;
        let (mut rt, mut wh) = (scenes::rtiow(), scenes::whitted19());
        if quick {
            // Smoke-test sizes for software adapters.
            (rt.settings.spp, rt.width, rt.height) = (2, 320, 180);
            (wh.width, wh.height) = (1024, 1024);
        }
        frame_bench(&mut gpu, "rtiow", &rt, runs, &mut rep, "default")?;
        frame_bench(&mut gpu, "whitted19", &wh, runs, &mut rep, "default")?;
        if flag("--variants") {
            // Each variant changes one thing against the default. A source
            // patch also turns wgpu's loop bounding back on, so the patched
            // variants compare against the identity patch.
            type Variant = (&'static str, fn(&mut WgpuOptions));
            let variants: [Variant; 10] = [
                ("no lane refill", |o| o.lane_refill = false),
                ("no cell grid", |o| o.cell_grid = false),
                ("no camera masks", |o| o.camera_masks = false),
                ("identity patch, general module", |o| {
                    // The rewritten constants no longer match: no scene specialisation.
                    o.source_patch = Some(Box::new(|_: &str, src: &str| {
                        src.replace(
                            "const STACK_ENTRIES: u32 = 64u;",
                            "const STACK_ENTRIES: u32 = 64u; ",
                        )
                        .replace(
                            "const SCENE_KINDS: u32 = 3u;",
                            "const SCENE_KINDS: u32 = 3u; ",
                        )
                    }))
                }),
                ("f32 division", |o| o.f64_division = false),
                ("tile 8x8, batch 128", |o| {
                    o.render_tile = (8, 8);
                    o.batch_workgroup = 128;
                }),
                ("identity patch", |o| {
                    o.source_patch = Some(Box::new(|_: &str, src: &str| src.to_string()))
                }),
                ("identity patch, fusable products", |o| {
                    o.source_patch =
                        Some(Box::new(|name: &str, src: &str| unfused(name, src, true)))
                }),
                ("identity patch, core-scale slab exit", |o| {
                    o.source_patch = Some(Box::new(|name: &str, src: &str| {
                        if name == "intersect.wgsl" {
                            src.replace(
                                "return t * select(SLAB_EXIT_SCALE, SLAB_EXIT_SCALE_NEGATIVE, t < 0.0);",
                                "return t * SLAB_EXIT_SCALE;",
                            )
                        } else {
                            src.to_string()
                        }
                    }))
                }),
                ("identity patch, fusable products, f32 division", |o| {
                    o.f64_division = false;
                    o.source_patch =
                        Some(Box::new(|name: &str, src: &str| unfused(name, src, true)))
                }),
            ];
            for (tag, change) in variants {
                let mut options = WgpuOptions {
                    allow_software: software,
                    ..Default::default()
                };
                change(&mut options);
                let mut v = WgpuBackend::new(options)?;
                let tag = tag.to_string();
                rays_bench(&mut v, &dir, runs, batch, false, &mut rep, &tag)?;
                frame_bench(&mut v, "rtiow", &rt, runs, &mut rep, &tag)?;
                frame_bench(&mut v, "whitted19", &wh, runs, &mut rep, &tag)?;
            }
        }
        Ok(())
    })();
    finish(rep, result, started);
}

/// Print the summary of a run begun at `started` that ended with `result`,
/// and exit: 0 when every check passed, 1 otherwise.
fn finish(mut rep: Report, result: Result<(), Error>, started: Instant) -> ! {
    if let Err(e) = result {
        rep.failed.push(format!("error: {e}"));
        println!("error: {e}");
    }
    println!(
        "\n==== summary ({:.0} s) ====",
        started.elapsed().as_secs_f64()
    );
    for l in &rep.lines {
        println!("{l}");
    }
    if rep.failed.is_empty() {
        println!("ALL CHECKS PASSED");
        std::process::exit(0);
    } else {
        println!("FAILED: {}", rep.failed.join("; "));
        std::process::exit(1);
    }
}
