//! Benchmark of the CUDA backend: the figures of bench/RESULTS.md.
//!
//! ```text
//! gpu_bench [--scenes DIR] [--out DIR] [--sweep] [--frames N] [--repeats N] [--batch N]
//!           [--parts rtiow,whitted,trace,instances,moving,refit,segments]
//!           [--sets bunny.diffuse,...] [--config NAME,...] [--top-on-host]
//! ```
//!
//! For each kernel configuration (the default, or a sweep of block shapes,
//! register budgets and scheduling variants with `--sweep`): compile time,
//! per-kernel resources, `rtiow` 1280x720 30 spp depth 50 (median frame),
//! `whitted19` 8192x8192 RGBA8 (kernel, render + download into pinned memory,
//! the whole call), and the trace kernels alone on each shared ray set repeated
//! to a device-resident batch (closest hit and any hit). Hits of the resident
//! runs are checked against Embree's reference hits. A table comes last; its
//! "hits agree" column says whether every checked hit agreed, and its "images"
//! column whether the rtiow and whitted19 frames are the same bytes as the
//! first row's (a kernel change that must not move a pixel is checked by it).
//! A `--config` entry that starts with `-` (`-DNAME=VALUE`, `-lineinfo` for
//! Nsight Compute's source view; several joined by `+`) is the default
//! configuration with those NVRTC options added.
//!
//! The two-level parts (`examples/gpu_bench_parts/two_level.rs`):
//! `instances`, the trace kernels on resident batches of bunny-x1000 (the
//! shared set tiled to `--batch` rays) checked against Embree's instanced
//! hits; `moving`, a frame of 10,000 bunnies that all move, `update_scene` and
//! 1M resident rays traced, timed whole on the host clock; `refit`, ogre's
//! refit on the device after new vertices (CUDA events). Their figures close
//! the output in a second table, with their goals.
//!
//! `--parts segments` (not in the default list) measures what a wavefront
//! path tracer's extend phase would cost on rtiow: core traces one sample per
//! pixel of the 1280x720 frame on the CPU and records every path segment with
//! its bounce; the trace kernels then run on each bounce's segments, repeated
//! to a device-resident batch, and their hits are checked against core's.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "gpu_bench_parts/two_level.rs"]
mod two_level;

use common::*;
use prism_core::backend::Backend;
use prism_core::reference::AgreementCounts;
use prism_core::{Image, NoProgress, PixelFormat, Ray, RenderStats, Scene};
use prism_cuda::{CudaBackend, CudaOptions, KernelConfig};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

struct Args {
    scenes: Option<PathBuf>,
    out: Option<PathBuf>,
    sweep: bool,
    frames: usize,
    repeats: u32,
    batch: usize,
    parts: Vec<String>,
    sets: Option<Vec<String>>,
    config: Option<String>,
    /// `--top-on-host`: frames of moves placed by the host and uploaded
    /// (`CudaOptions::top_on_device` off), to compare with the device's.
    top_on_host: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        scenes: scenes_dir(),
        out: None,
        sweep: false,
        frames: 9,
        repeats: 15,
        batch: 1 << 22,
        parts: ["rtiow", "whitted", "trace", "instances", "moving", "refit"]
            .map(String::from)
            .to_vec(),
        sets: None,
        config: None,
        top_on_host: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--scenes" => a.scenes = Some(PathBuf::from(value("--scenes")?)),
            "--out" => a.out = Some(PathBuf::from(value("--out")?)),
            "--sweep" => a.sweep = true,
            "--top-on-host" => a.top_on_host = true,
            "--config" => {
                a.config = Some(value("--config")?);
                a.sweep = true;
            }
            "--parts" => a.parts = value("--parts")?.split(',').map(str::to_owned).collect(),
            "--sets" => a.sets = Some(value("--sets")?.split(',').map(str::to_owned).collect()),
            "--frames" => {
                a.frames = value("--frames")?
                    .parse()
                    .map_err(|e| format!("--frames: {e}"))?
            }
            "--repeats" => {
                a.repeats = value("--repeats")?
                    .parse()
                    .map_err(|e| format!("--repeats: {e}"))?
            }
            "--batch" => {
                a.batch = value("--batch")?
                    .parse()
                    .map_err(|e| format!("--batch: {e}"))?
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

fn configs(sweep: bool) -> Vec<(&'static str, KernelConfig)> {
    let d = KernelConfig::default();
    // `tile-path`: the path kernels in tiles instead of persistent warps; the
    // same paths, so the default's pixels but for rounding where NVRTC
    // contracts the inlined shading differently (compare the image hashes).
    let tile_path = KernelConfig {
        persistent_path: false,
        ..d.clone()
    };
    let mut v = vec![("default", d.clone()), ("tile-path", tile_path)];
    if sweep {
        let c = |name: &'static str, f: &dyn Fn(&mut KernelConfig)| {
            let mut k = d.clone();
            f(&mut k);
            (name, k)
        };
        // A render tile shape with the default's resident threads per SM.
        let resident = d.render_min_blocks * d.render_tile[0] * d.render_tile[1];
        let tile = |name: &'static str, shape: [u32; 2]| {
            c(name, &|k| {
                k.render_tile = shape;
                k.render_min_blocks = (resident / (shape[0] * shape[1])).max(1);
            })
        };
        v.extend([
            c("refill8", &|k| {
                k.trace_refill = 8;
                k.occluded_refill = 8;
            }),
            c("refill24", &|k| {
                k.trace_refill = 24;
                k.occluded_refill = 24;
            }),
            c("norefill", &|k| {
                k.trace_refill = 0;
                k.occluded_refill = 0;
            }),
            c("rmin6", &|k| k.render_min_blocks = 6),
            c("tiles1", &|k| k.render_tiles_per_block = 1),
            c("tiles2", &|k| k.render_tiles_per_block = 2),
            c("tiles4", &|k| k.render_tiles_per_block = 4),
            c("tiles16", &|k| k.render_tiles_per_block = 16),
            c("regen", &|k| k.path_regen = true),
            tile("tile8x4", [8, 4]),
            tile("tile16x2", [16, 2]),
            tile("tile32x4", [32, 4]),
            tile("tile8x16", [8, 16]),
            tile("tile8x8", [8, 8]),
            tile("tile16x16", [16, 16]),
            c("defer16", &|k| k.path_defer = 16),
            c("defer24", &|k| k.path_defer = 24),
            c("defer28", &|k| k.path_defer = 28),
            c("rmin8", &|k| k.render_min_blocks = 8),
            c("rmin9", &|k| k.render_min_blocks = 9),
            c("rmin10", &|k| k.render_min_blocks = 10),
            c("branchless", &|k| k.lobe_branches = false),
            c("leaf-checks", &|k| k.tree_checked_on_upload = false),
            c("whitted-rng", &|k| k.whitted_skips_camera_rng = false),
            c("no-octants", &|k| k.octant_trees = false),
            c("no-light-grid", &|k| k.light_grid = false),
            c("no-cell-grid", &|k| k.cell_grid = false),
            c("no-camera-cones", &|k| k.camera_cones = false),
            c("no-reflection-masks", &|k| k.reflection_masks = false),
            c("no-shadow-masks", &|k| k.shadow_masks = false),
            c("serial-bands", &|k| k.overlap_bands = false),
            c("grid-no-early-miss", &|k| {
                k.extra_options = vec!["-DPRISM_GRID_EARLY_MISS=0".into()]
            }),
            c("grid-no-balls", &|k| {
                k.extra_options = vec!["-DPRISM_GRID_BALLS=0".into()]
            }),
            c("grid-nested", &|k| {
                k.extra_options = vec!["-DPRISM_GRID_FLAT_LOOP=0".into()]
            }),
            c("sign-test", &|k| {
                k.extra_options = vec!["-DPRISM_RENDER_TMIN_NONNEG=0".into()]
            }),
            c("node-checks", &|k| {
                k.extra_options = vec!["-DPRISM_NODE_CHECKS=1".into()]
            }),
            c("no-persistent-path", &|k| k.persistent_path = false),
            c("path-lanes1", &|k| {
                k.path_lanes = 1;
                k.path_tail_64ths = 0;
            }),
            c("path-no-tail", &|k| k.path_tail_64ths = 0),
            c("path-lanes4", &|k| k.path_lanes = 4),
            c("path-tail8", &|k| k.path_tail_64ths = 8),
            c("path-block128", &|k| {
                k.path_threads = 128;
                k.path_min_blocks = 8;
            }),
            c("path-block512", &|k| {
                k.path_threads = 512;
                k.path_min_blocks = 2;
            }),
            c("none3", &|k| {
                k.lobe_branches = false;
                k.tree_checked_on_upload = false;
                k.whitted_skips_camera_rng = false;
            }),
        ]);
    }
    v
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() { 0.0 } else { v[v.len() / 2] }
}

#[derive(Default, Clone)]
struct Row {
    name: String,
    compile_s: f64,
    rtiow_ms: f64,
    rtiow_total_ms: f64,
    rtiow_mrays: f64,
    whitted_kernel_ms: f64,
    whitted_to_pinned_ms: f64,
    whitted_download_ms: f64,
    whitted_total_ms: f64,
    closest: Vec<f64>,
    occluded: Vec<f64>,
    agreement_ok: bool,
    /// FNV-1a of the rtiow and whitted19 images' bytes (0: not rendered).
    image_hashes: [u64; 2],
    /// The two-level parts' rows of their closing table.
    two_level: Vec<two_level::Summary>,
}

/// FNV-1a of an image's RGBA8 bytes: configurations that must not change a
/// pixel are compared by it.
fn image_hash(img: &Image) -> u64 {
    img.rgba8()
        .iter()
        .flatten()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// Write a binary PPM of an RGBA8 image, downsampled by `step`.
fn write_ppm(path: &Path, img: &Image, step: u32) -> std::io::Result<()> {
    let (w, h) = (img.width() / step, img.height() / step);
    let mut out = Vec::with_capacity((w * h * 3) as usize + 32);
    write!(out, "P6\n{w} {h}\n255\n")?;
    let px = img.to_rgba8_bytes().map_err(std::io::Error::other)?;
    for y in 0..h {
        for x in 0..w {
            let i = (((y * step) * img.width() + x * step) * 4) as usize;
            out.extend_from_slice(&px[i..i + 3]);
        }
    }
    std::fs::write(path, out)
}

fn run_config(
    name: &str,
    config: &KernelConfig,
    args: &Args,
    meshes: &[MeshSets],
    log: &mut impl Write,
) -> Result<Row, prism_core::Error> {
    let mut row = Row {
        name: name.to_owned(),
        agreement_ok: true,
        ..Default::default()
    };
    let cache = std::env::temp_dir().join("prism-gpu-bench-cache");
    let t = Instant::now();
    let mut gpu = CudaBackend::with_options(CudaOptions {
        config: config.clone(),
        cache_dir: Some(cache),
        top_on_device: !args.top_on_host,
        ..Default::default()
    })?;
    row.compile_s = t.elapsed().as_secs_f64();
    let _ = writeln!(
        log,
        "\n== {name}: {config:?}\n   opened in {:.2} s (cache: {})",
        row.compile_s,
        gpu.kernels_from_cache()
    );
    for r in gpu.kernel_resources()? {
        // Stack frame and spills only where NVRTC's log held ptxas' report.
        let ptxas = r.ptxas.as_ref().map_or_else(
            || "stack, spills: no ptxas report".to_owned(),
            |p| {
                format!(
                    "{:>4} B stack {:>3}/{:>3} B spill st/ld",
                    p.stack_frame, p.spill_stores, p.spill_loads
                )
            },
        );
        let _ = writeln!(
            log,
            "   {:<22} {:>3} regs {:>4} B local {ptxas}  {:>4} thr x {:>2} blk/SM  occ {:.2}",
            r.name, r.registers, r.local_bytes, r.block_threads, r.blocks_per_sm, r.occupancy
        );
    }

    if let Some(out) = &args.out
        && name == "default"
    {
        let _ = std::fs::write(
            out.join("prism_default.cubin"),
            &gpu.compiled_kernels().cubin,
        );
        // NVRTC's log: ptxas' resource report of every kernel.
        let _ = std::fs::write(out.join("prism_default.log"), &gpu.compiled_kernels().log);
    }
    let part = |p: &str| args.parts.iter().any(|x| x == p);
    if part("rtiow") {
        rtiow_part(&mut gpu, name, args, &mut row, log)?;
    }
    if part("whitted") {
        whitted_part(&mut gpu, name, args, &mut row, log)?;
    }
    if part("trace") {
        trace_part(&mut gpu, args, meshes, &mut row, log)?;
    }
    if part("segments") {
        segments_part(&mut gpu, args, &mut row.agreement_ok, log)?;
    }
    // The two-level parts, with the shared scenes.
    if let Some(scenes) = &args.scenes {
        let frames = args.frames.max(1) * 6;
        if part("instances") {
            let rows = two_level::instances_part(&mut gpu, scenes, args.batch, args.repeats, log)?;
            row.two_level.extend(rows);
        }
        if part("moving") {
            row.two_level
                .extend(two_level::moving_part(&mut gpu, scenes, frames, log)?);
        }
        if part("refit") {
            row.two_level
                .extend(two_level::refit_part(&mut gpu, scenes, frames, log)?);
        }
    }
    Ok(row)
}

fn rtiow_part(
    gpu: &mut CudaBackend,
    name: &str,
    args: &Args,
    row: &mut Row,
    log: &mut impl Write,
) -> Result<(), prism_core::Error> {
    // rtiow 1280x720, 30 spp, depth 50.
    let p = rtiow();
    gpu.set_scene(&p.scene)?;
    let mut img = Image::new(p.width, p.height, PixelFormat::Srgba8)?;
    let mut frames: Vec<RenderStats> = Vec::new();
    for _ in 0..=args.frames {
        frames.push(gpu.render(&p.camera, &p.settings, &mut img, &NoProgress)?);
    }
    let rays = frames[1].rays;
    let mut k: Vec<f64> = frames[1..]
        .iter()
        .map(|s| s.trace.as_secs_f64() * 1e3)
        .collect();
    let mut tot: Vec<f64> = frames[1..]
        .iter()
        .map(|s| s.total.as_secs_f64() * 1e3)
        .collect();
    row.rtiow_ms = median(&mut k);
    row.rtiow_total_ms = median(&mut tot);
    row.rtiow_mrays = rays as f64 / (row.rtiow_ms * 1e3);
    row.image_hashes[0] = image_hash(&img);
    let _ = writeln!(
        log,
        "   rtiow 1280x720 30spp d50: kernel {:.3} ms (min {:.3}, max {:.3}), call {:.3} ms, {} rays, {:.0} Mrays/s",
        row.rtiow_ms,
        k[0],
        k[k.len() - 1],
        row.rtiow_total_ms,
        rays,
        row.rtiow_mrays
    );
    if let Some(out) = &args.out
        && name == "default"
    {
        let _ = write_ppm(&out.join("rtiow.ppm"), &img, 1);
    }

    Ok(())
}

fn whitted_part(
    gpu: &mut CudaBackend,
    name: &str,
    args: &Args,
    row: &mut Row,
    log: &mut impl Write,
) -> Result<(), prism_core::Error> {
    // whitted19 8192x8192, RGBA8.
    let p = whitted19();
    gpu.set_scene(&p.scene)?;
    let mut img = Image::new(p.width, p.height, PixelFormat::Srgba8)?;
    let mut times = Vec::new();
    let mut wrays = 0;
    for i in 0..=args.frames {
        let s = gpu.render(&p.camera, &p.settings, &mut img, &NoProgress)?;
        wrays = s.rays;
        if i > 0 {
            times.push(gpu.last_frame_times());
        }
    }
    let pick = |f: fn(&prism_cuda::FrameTimes) -> f64| {
        let mut v: Vec<f64> = times.iter().map(f).collect();
        median(&mut v)
    };
    row.whitted_kernel_ms = pick(|t| t.kernel_ms);
    row.whitted_to_pinned_ms = pick(|t| t.render_to_pinned_ms);
    row.whitted_download_ms = pick(|t| t.download_ms);
    row.whitted_total_ms = pick(|t| t.total_ms);
    row.image_hashes[1] = image_hash(&img);
    let _ = writeln!(
        log,
        "   whitted19 8192x8192 rgba8: kernel {:.3} ms, render+download to pinned {:.3} ms (DMA {:.3} ms, {} bands), host copy {:.2} ms, call {:.2} ms, {} rays",
        row.whitted_kernel_ms,
        row.whitted_to_pinned_ms,
        row.whitted_download_ms,
        times.first().map_or(0, |t| t.bands),
        pick(|t| t.host_copy_ms),
        row.whitted_total_ms,
        wrays
    );
    if let Some(out) = &args.out
        && name == "default"
    {
        let _ = write_ppm(&out.join("whitted19.ppm"), &img, 8);
    }

    Ok(())
}

/// Rays and core's closest hits (t, scene primitive id), in the same order.
type RaysAndHits = (Vec<Ray>, Vec<(f32, u32)>);
/// A named group of rays with core's closest hits.
type HitGroup = (String, Vec<Ray>, Vec<(f32, u32)>);

/// Rays and core's answers, one list per kind of query.
#[derive(Default)]
struct Recorded {
    /// Closest-hit queries by bounce (0 = camera ray): ray and core's hit
    /// (scene primitive id).
    closest: Vec<RaysAndHits>,
    /// Any-hit queries (shadow rays): ray and core's answer.
    occluded: (Vec<Ray>, Vec<bool>),
}

/// A core tracer that records every query of a path, closest hits with their bounce.
struct Recorder<'a> {
    accel: &'a prism_core::Accel,
    /// Bounce of the next closest-hit query; reset before each path.
    bounce: std::cell::Cell<usize>,
    rec: std::cell::RefCell<Recorded>,
}

impl prism_core::integrator::Tracer for Recorder<'_> {
    fn accel(&self) -> &prism_core::Accel {
        self.accel
    }
    fn closest_slot(&self, ray: &Ray) -> prism_core::Hit {
        let hit = self.accel.intersect_slot(ray);
        // The scene primitive id of the slot, as Accel::intersect reports it.
        let id = self
            .accel
            .primitives()
            .get(hit.prim as usize)
            .map_or(hit.prim, |p| p.id());
        let b = self.bounce.get();
        self.bounce.set(b + 1);
        let v = &mut self.rec.borrow_mut().closest;
        if v.len() <= b {
            v.resize_with(b + 1, Default::default);
        }
        v[b].0.push(*ray);
        v[b].1.push((hit.t, id));
        hit
    }
    fn occluded(&self, ray: &Ray) -> bool {
        let o = self.accel.occluded(ray);
        let r = &mut self.rec.borrow_mut().occluded;
        r.0.push(*ray);
        r.1.push(o);
        o
    }
}

/// Every query of one sample per pixel of `p`'s rows `rows`, traced by core.
fn record(p: &Preset, rows: impl Iterator<Item = u32>) -> Result<Recorded, prism_core::Error> {
    let accel = prism_core::Accel::build(&p.scene)?;
    let settings = prism_core::RenderSettings {
        spp: 1,
        ..p.settings
    };
    let params = settings.params(&accel, &p.camera, p.width, p.height)?;
    let rec = Recorder {
        accel: &accel,
        bounce: std::cell::Cell::new(0),
        rec: Default::default(),
    };
    for y in rows {
        for x in 0..p.width {
            rec.bounce.set(0);
            prism_core::integrator::render_pixel(&rec, &params, x, y);
        }
    }
    Ok(rec.rec.into_inner())
}

/// Closest-hit groups of a recording: bounces 0, 1, 2 alone, then 3 and deeper
/// together, then every segment (in bounce order).
fn closest_groups(r: &Recorded) -> Vec<HitGroup> {
    let mut groups: Vec<HitGroup> = Vec::new();
    for (b, (rays, hits)) in r.closest.iter().enumerate().take(3) {
        groups.push((format!("bounce {b}"), rays.clone(), hits.clone()));
    }
    if r.closest.len() > 3 {
        let rays = r.closest[3..]
            .iter()
            .flat_map(|b| b.0.iter().copied())
            .collect();
        let hits = r.closest[3..]
            .iter()
            .flat_map(|b| b.1.iter().copied())
            .collect();
        groups.push(("bounce 3+".into(), rays, hits));
    }
    if r.closest.len() > 1 {
        let rays = r.closest.iter().flat_map(|b| b.0.iter().copied()).collect();
        let hits = r.closest.iter().flat_map(|b| b.1.iter().copied()).collect();
        groups.push(("all closest".into(), rays, hits));
    }
    groups
}

/// Time the trace kernels on a recording's groups; returns the closest-hit
/// time per ray of "all closest" (or bounce 0) and the any-hit time per shadow
/// ray, ns. Clears `agree` when a hit or the occluded count differs from core's.
fn time_recording(
    gpu: &mut CudaBackend,
    args: &Args,
    scene: &str,
    r: &Recorded,
    agree: &mut bool,
    log: &mut impl Write,
) -> Result<(f64, f64), prism_core::Error> {
    let mut closest_ns = 0.0;
    for (name, rays, reference) in &closest_groups(r) {
        let b = gpu.intersect_resident_bench(rays, args.batch, args.repeats)?;
        let counts = AgreementCounts::compare(rays, &b.hits, reference);
        *agree &= counts.passed();
        closest_ns = b.closest_ms * 1e6 / b.rays as f64;
        let _ = writeln!(
            log,
            "   {scene} {name}: {} rays, {} resident, closest {:.3} ms = {:.0} Mrays/s (occluded on the same rays {:.0} Mrays/s); vs core: {} match, {} ties, {} mismatches",
            rays.len(),
            b.rays,
            b.closest_ms,
            b.closest_mrays_per_s,
            b.occluded_mrays_per_s,
            counts.matches,
            counts.ties,
            counts.mismatches
        );
    }
    let (rays, blocked) = &r.occluded;
    let mut occluded_ns = 0.0;
    if !rays.is_empty() {
        let b = gpu.intersect_resident_bench(rays, args.batch, args.repeats)?;
        // The batch repeats the rays in order: core's count over the same batch.
        let expected = (0..b.rays).filter(|&i| blocked[i % rays.len()]).count();
        *agree &= b.occluded_count == expected;
        occluded_ns = b.occluded_ms * 1e6 / b.rays as f64;
        let _ = writeln!(
            log,
            "   {scene} shadow rays: {} rays, {} resident, occluded {:.3} ms = {:.0} Mrays/s; {} occluded, core {}",
            rays.len(),
            b.rays,
            b.occluded_ms,
            b.occluded_mrays_per_s,
            b.occluded_count,
            expected
        );
    }
    Ok((closest_ns, occluded_ns))
}

fn segments_part(
    gpu: &mut CudaBackend,
    args: &Args,
    agree: &mut bool,
    log: &mut impl Write,
) -> Result<(), prism_core::Error> {
    // rtiow: every row, one sample per pixel (30 spp traces 30 times as many).
    let p = rtiow();
    let t = Instant::now();
    let r = record(&p, 0..p.height)?;
    let n: usize = r.closest.iter().map(|b| b.0.len()).sum();
    let _ = writeln!(
        log,
        "   rtiow, 1 spp: {n} closest-hit segments over {} bounces, recorded by core in {:.1} s",
        r.closest.len(),
        t.elapsed().as_secs_f64()
    );
    gpu.set_scene(&p.scene)?;
    let (closest_ns, _) = time_recording(gpu, args, "rtiow", &r, agree, log)?;
    let _ = writeln!(
        log,
        "   rtiow: tracing alone, 30 spp ({} segments) at that rate: {:.2} ms",
        n * 30,
        n as f64 * 30.0 * closest_ns * 1e-6
    );
    // whitted19: every 32nd row of the 8192x8192 frame (rows stay whole, so a
    // warp's rays are as coherent as in the frame).
    let p = whitted19();
    let t = Instant::now();
    let r = record(&p, (16..p.height).step_by(32))?;
    let primary = r.closest.first().map_or(0, |b| b.0.len());
    let n: usize = r.closest.iter().map(|b| b.0.len()).sum();
    let _ = writeln!(
        log,
        "   whitted19, rows 16, 48, ..: {n} closest-hit and {} shadow rays for {primary} pixels, recorded by core in {:.1} s",
        r.occluded.0.len(),
        t.elapsed().as_secs_f64()
    );
    gpu.set_scene(&p.scene)?;
    let (closest_ns, occluded_ns) = time_recording(gpu, args, "whitted19", &r, agree, log)?;
    let scale = (p.width as f64 * p.height as f64) / primary.max(1) as f64;
    let _ = writeln!(
        log,
        "   whitted19: tracing alone, whole frame at those rates: {:.2} ms ({:.0} closest, {:.0} shadow rays)",
        scale * (n as f64 * closest_ns + r.occluded.0.len() as f64 * occluded_ns) * 1e-6,
        scale * n as f64,
        scale * r.occluded.0.len() as f64
    );
    Ok(())
}

type MeshSets = (String, Scene, Vec<(String, Vec<Ray>, Vec<(f32, u32)>)>);

fn trace_part(
    gpu: &mut CudaBackend,
    args: &Args,
    meshes: &[MeshSets],
    row: &mut Row,
    log: &mut impl Write,
) -> Result<(), prism_core::Error> {
    // Trace kernels alone on device-resident batches.
    for (mesh, scene, sets) in meshes {
        let wanted = |set: &str| {
            args.sets
                .as_ref()
                .is_none_or(|l| l.iter().any(|x| *x == format!("{mesh}.{set}")))
        };
        if !sets.iter().any(|(set, _, _)| wanted(set)) {
            continue;
        }
        gpu.set_scene(scene)?;
        for (set, rays, reference) in sets {
            if !wanted(set) {
                continue;
            }
            let b = gpu.intersect_resident_bench(rays, args.batch, args.repeats)?;
            let counts = AgreementCounts::compare(rays, &b.hits, reference);
            row.agreement_ok &= counts.passed();
            row.closest.push(b.closest_mrays_per_s);
            row.occluded.push(b.occluded_mrays_per_s);
            let _ = writeln!(
                log,
                "   {mesh}.{set}: {} rays resident, closest {:.3} ms = {:.0} Mrays/s [{:.3}..{:.3}], occluded {:.3} ms = {:.0} Mrays/s ({} occluded); vs Embree: {} match, {} ties, {} mismatches",
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
        }
    }
    Ok(())
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("gpu_bench: {e}");
            std::process::exit(2);
        }
    };
    let mut log = std::io::stdout();
    let probe = match CudaBackend::new() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("gpu_bench: {e}");
            std::process::exit(1);
        }
    };
    let _ = writeln!(log, "device: {}", probe.info().device);
    drop(probe);
    let mut meshes = Vec::new();
    if let Some(dir) = &args.scenes {
        for mesh in ["bunny", "ogre"] {
            let scene = match mesh_scene(&dir.join(format!("{mesh}.obj"))) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("gpu_bench: {e}");
                    continue;
                }
            };
            let mut sets = Vec::new();
            for (m, set) in RAY_SETS.iter().filter(|(m, _)| *m == mesh) {
                let rays = load_rays(&dir.join(format!("{m}.{set}.rays")));
                let hits = load_hits(&dir.join(format!("{m}.{set}.hits")));
                if let (Ok(r), Ok(h)) = (rays, hits) {
                    sets.push((set.to_string(), r, h));
                }
            }
            meshes.push((mesh.to_string(), scene, sets));
        }
    } else {
        let _ = writeln!(
            log,
            "no shared scenes found (--scenes DIR): ray-set benchmarks skipped"
        );
    }
    let set_names: Vec<String> = meshes
        .iter()
        .flat_map(|(m, _, sets)| sets.iter().map(move |(s, _, _)| format!("{m}.{s}")))
        .collect();
    let mut rows: Vec<Row> = Vec::new();
    let mut all = configs(args.sweep);
    // `--config -DNAME=VALUE+-lineinfo`: the default configuration with those
    // NVRTC options added, to measure a kernel switch without a named entry.
    // `NAME+-DNAME=VALUE`: the named configuration with those options added.
    for name in args.config.iter().flat_map(|c| c.split(',')) {
        let mut parts = name.split('+');
        let base = match parts.next() {
            Some(first) if !first.starts_with('-') => first,
            _ => "default",
        };
        if name.starts_with('-') || name.contains("+-") {
            let Some((_, base_config)) = all.iter().find(|(n, _)| *n == base) else {
                continue;
            };
            let mut k = base_config.clone();
            k.extra_options.extend(
                name.split('+')
                    .filter(|o| o.starts_with('-'))
                    .map(str::to_owned),
            );
            all.push((String::from(name).leak(), k));
        }
    }
    for (name, config) in all {
        if args
            .config
            .as_ref()
            // Without --config: the default (and the sweep), not tile-path.
            .map_or(name == "tile-path" && !args.sweep, |c| {
                !c.split(',').any(|n| n == name)
            })
        {
            continue;
        }
        match run_config(name, &config, &args, &meshes, &mut log) {
            Ok(r) => rows.push(r),
            Err(e) => {
                let _ = writeln!(log, "== {name}: FAILED: {e}");
            }
        }
    }
    let _ = writeln!(
        log,
        "\nMrays/s of the trace kernels on resident batches of {} rays (closest / occluded):",
        args.batch
    );
    let mut header = String::from(
        "| config | open s | rtiow ms | rtiow Mrays/s | whitted kernel ms | whitted render+dl ms | whitted call ms |",
    );
    for s in &set_names {
        header.push_str(&format!(" {s} |"));
    }
    header.push_str(" hits agree | images as first row | image hashes |");
    let _ = writeln!(log, "{header}");
    let _ = writeln!(log, "|{}", "---|".repeat(10 + set_names.len()));
    let first_hashes = rows.first().map(|r| r.image_hashes);
    for r in &rows {
        let mut line = format!(
            "| {} | {:.1} | {:.3} | {:.0} | {:.3} | {:.3} | {:.1} |",
            r.name,
            r.compile_s,
            r.rtiow_ms,
            r.rtiow_mrays,
            r.whitted_kernel_ms,
            r.whitted_to_pinned_ms,
            r.whitted_total_ms
        );
        for (c, o) in r.closest.iter().zip(&r.occluded) {
            line.push_str(&format!(" {c:.0} / {o:.0} |"));
        }
        line.push_str(if r.agreement_ok {
            " ok |"
        } else {
            " MISMATCH |"
        });
        line.push_str(if Some(r.image_hashes) == first_hashes {
            " same |"
        } else {
            " DIFFER |"
        });
        line.push_str(&format!(
            " {:08x} {:08x} |",
            r.image_hashes[0] as u32, r.image_hashes[1] as u32
        ));
        let _ = writeln!(log, "{line}");
    }
    // The two-level parts: one table a configuration that ran them.
    for r in rows.iter().filter(|r| !r.two_level.is_empty()) {
        let _ = writeln!(log, "\nTwo-level scenes, {}:", r.name);
        let _ = writeln!(log, "| part | measure | value | goal |");
        let _ = writeln!(log, "|---|---|---|---|");
        for [part, measure, value, goal] in &r.two_level {
            let _ = writeln!(log, "| {part} | {measure} | {value} | {goal} |");
        }
    }
}
