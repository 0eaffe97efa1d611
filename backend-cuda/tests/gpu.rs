//! The CUDA backend against prism-core (the source of truth) and against
//! Embree's reference hits. Each test skips, saying so, where there is no CUDA
//! device (`PRISM_REQUIRE_CUDA=1` makes that a failure).

mod common;

use common::*;
use prism_core::backend::Backend;
use prism_core::glam::Vec3;
use prism_core::image::encode_srgba8;
use prism_core::integrator::render_pixel;
use prism_core::reference::AgreementCounts;
use prism_core::{
    Accel, Error, Hit, Image, Integrator, NoProgress, PixelFormat, Progress, Ray, RenderSettings,
};
use prism_cuda::{CudaBackend, CudaOptions, KernelConfig};

/// A backend with the kernels built for `config` (a GPU is known to be present).
fn gpu_with(config: KernelConfig) -> CudaBackend {
    CudaBackend::with_options(CudaOptions {
        config,
        ..Default::default()
    })
    .unwrap()
}

/// Check that `patch` changes the shipped kernel file `file` (so that a test
/// built on it still breaks what it means to break).
fn assert_patch_applies(file: &str, patch: &dyn Fn(&str, &str) -> String) {
    let shipped = prism_cuda::SOURCES
        .iter()
        .find(|(name, _)| *name == file)
        .unwrap()
        .1;
    assert_ne!(
        patch(file, shipped),
        shipped,
        "the patch of {file} no longer applies"
    );
}

/// A backend whose kernels are built for `config` from sources changed by
/// `patch`, not cached on disk (a GPU is known to be present).
fn gpu_patched(
    config: KernelConfig,
    patch: impl Fn(&str, &str) -> String + Send + Sync + 'static,
) -> CudaBackend {
    CudaBackend::with_options(CudaOptions {
        config,
        source_patch: Some(std::sync::Arc::new(patch)),
        disk_cache: false,
        ..Default::default()
    })
    .unwrap()
}

fn core_hits(accel: &Accel, rays: &[Ray]) -> Vec<Hit> {
    rays.iter().map(|r| accel.intersect(r)).collect()
}

fn gpu_hits(gpu: &mut CudaBackend, rays: &[Ray]) -> Vec<Hit> {
    let mut hits = vec![Hit::MISS; rays.len()];
    gpu.intersect(rays, &mut hits).expect("intersect");
    hits
}

fn gpu_occluded(gpu: &mut CudaBackend, rays: &[Ray]) -> Vec<bool> {
    let mut out = vec![false; rays.len()];
    gpu.occluded(rays, &mut out).expect("occluded");
    out
}

/// Bit-exact equality of hits, with the first difference in the message.
fn assert_same_hits(what: &str, rays: &[Ray], gpu: &[Hit], cpu: &[Hit]) {
    let differ = gpu
        .iter()
        .zip(cpu)
        .filter(|(g, c)| bytemuck::bytes_of(*g) != bytemuck::bytes_of(*c))
        .count();
    if let Some(i) =
        (0..gpu.len()).find(|&i| bytemuck::bytes_of(&gpu[i]) != bytemuck::bytes_of(&cpu[i]))
    {
        panic!(
            "{what}: {differ} of {} hits differ from core; first: ray {i} {:?}: gpu {:?}, core {:?}",
            gpu.len(),
            rays[i],
            gpu[i],
            cpu[i]
        );
    }
}

#[test]
fn triangle_scenes_intersect_exactly_as_core() {
    let Some(mut gpu) = gpu_or_skip() else { return };
    for seed in 1..=4u32 {
        let scene = random_scene(seed, 0, 3000);
        let accel = Accel::build(&scene).unwrap();
        gpu.set_scene(&scene).unwrap();
        let rays = random_rays(seed, 50_000);
        let g = gpu_hits(&mut gpu, &rays);
        assert_same_hits(
            &format!("seed {seed}"),
            &rays,
            &g,
            &core_hits(&accel, &rays),
        );
        let o = gpu_occluded(&mut gpu, &rays);
        let c: Vec<bool> = rays.iter().map(|r| accel.occluded(r)).collect();
        let differ = o.iter().zip(&c).filter(|(a, b)| a != b).count();
        assert_eq!(
            differ, 0,
            "seed {seed}: occluded differs from core on {differ} rays"
        );
        assert!(g.iter().any(|h| h.is_hit()) && g.iter().any(|h| !h.is_hit()));
    }
}

#[test]
fn mixed_scenes_agree_with_core() {
    let Some(mut gpu) = gpu_or_skip() else { return };
    for seed in 10..14u32 {
        let scene = random_scene(seed, 800, 800);
        let accel = Accel::build(&scene).unwrap();
        gpu.set_scene(&scene).unwrap();
        let rays = random_rays(seed, 50_000);
        let g = gpu_hits(&mut gpu, &rays);
        let reference: Vec<(f32, u32)> = core_hits(&accel, &rays)
            .iter()
            .map(|h| (h.t, h.prim))
            .collect();
        let counts = AgreementCounts::compare(&rays, &g, &reference);
        eprintln!("seed {seed}: {counts:?}");
        assert!(
            counts.passed(),
            "seed {seed}: {counts:?}, first mismatch {:?}",
            counts.first_mismatch.map(|i| (rays[i], g[i], reference[i]))
        );
        let o = gpu_occluded(&mut gpu, &rays);
        let differ = o
            .iter()
            .zip(&rays)
            .filter(|(a, r)| **a != accel.occluded(r))
            .count();
        // Sphere tests round differently with FMA: a grazing ray may flip.
        assert!(
            differ <= rays.len() / 10_000,
            "seed {seed}: occluded differs on {differ} rays"
        );
    }
}

#[test]
fn shared_scenes_agree_with_embree_and_core() {
    let Some(mut gpu) = gpu_or_skip() else { return };
    let Some(dir) = scenes_dir() else {
        eprintln!("SKIPPED: ../shared/scenes not found (set PRISM_SCENES to its path)");
        return;
    };
    for (mesh, set) in RAY_SETS {
        let scene = mesh_scene(&dir.join(format!("{mesh}.obj"))).unwrap();
        let accel = Accel::build(&scene).unwrap();
        gpu.set_scene(&scene).unwrap();
        let rays = load_rays(&dir.join(format!("{mesh}.{set}.rays"))).unwrap();
        let reference = load_hits(&dir.join(format!("{mesh}.{set}.hits"))).unwrap();
        let g = gpu_hits(&mut gpu, &rays);
        let counts = AgreementCounts::compare(&rays, &g, &reference);
        eprintln!("{mesh}.{set} vs Embree: {counts:?}");
        assert!(counts.passed(), "{mesh}.{set}: {counts:?}");
        assert_same_hits(
            &format!("{mesh}.{set}"),
            &rays,
            &g,
            &core_hits(&accel, &rays),
        );
        let o = gpu_occluded(&mut gpu, &rays);
        for (i, (r, &occ)) in rays.iter().zip(&o).enumerate() {
            assert_eq!(
                occ,
                accel.occluded(r),
                "{mesh}.{set}: occluded differs from core at ray {i}"
            );
        }
        // Occlusion agrees with the closest hit wherever a hit is not a tie at tmax.
        for (i, (h, &occ)) in g.iter().zip(&o).enumerate() {
            assert_eq!(
                h.is_hit(),
                occ,
                "{mesh}.{set}: ray {i} hit {h:?} but occluded = {occ}"
            );
        }
    }
}

/// Per-image agreement numbers.
#[derive(Debug)]
struct ImageDiff {
    mean_abs: f64,
    #[allow(dead_code)] // printed through Debug
    max_abs: f32,
    off_by_more_than_2: f64,
}

/// Mean and largest difference of the values as displayed (clamped to
/// [0, 1]), and the share of pixels "off": more than 2 levels apart in 8 bits,
/// or, unclamped, more than 2/255 apart relative to the larger of 1 and core's
/// value, so that pixels brighter than white (lights, HDR output) and NaN count.
fn compare_linear(gpu: &[[f32; 4]], cpu: &[Vec3]) -> ImageDiff {
    assert_eq!(gpu.len(), cpu.len(), "image sizes");
    let mut sum = 0.0f64;
    let mut max = 0.0f32;
    let mut off = 0usize;
    for (g, c) in gpu.iter().zip(cpu) {
        let g3 = Vec3::new(g[0], g[1], g[2]);
        let d = (g3.clamp(Vec3::ZERO, Vec3::ONE) - c.clamp(Vec3::ZERO, Vec3::ONE)).abs();
        sum += (d.x + d.y + d.z) as f64 / 3.0;
        max = max.max(d.max_element());
        let (a, b) = (encode_srgba8(g3), encode_srgba8(*c));
        // `cmple` is false for NaN, where `max_element` would skip it.
        let relative = (g3 - *c).abs() / c.abs().max(Vec3::ONE);
        let close = relative.cmple(Vec3::splat(2.0 / 255.0)).all();
        if a.iter().zip(&b).any(|(x, y)| x.abs_diff(*y) > 2) || !close {
            off += 1;
        }
    }
    ImageDiff {
        mean_abs: sum / cpu.len() as f64,
        max_abs: max,
        off_by_more_than_2: off as f64 / cpu.len() as f64,
    }
}

/// Render `preset` (resized) on the GPU and with core's render_pixel; return the diff.
fn render_vs_core(
    gpu: &mut CudaBackend,
    preset: &Preset,
    width: u32,
    height: u32,
    settings: RenderSettings,
) -> ImageDiff {
    let accel = Accel::build(&preset.scene).unwrap();
    gpu.set_scene(&preset.scene).unwrap();
    let mut img = Image::new(width, height, PixelFormat::LinearF32).unwrap();
    let stats = gpu
        .render(&preset.camera, &settings, &mut img, &NoProgress)
        .unwrap();
    let params = settings
        .params(&accel, &preset.camera, width, height)
        .unwrap();
    let mut cpu = Vec::with_capacity((width * height) as usize);
    let mut cpu_rays = 0u64;
    for y in 0..height {
        for x in 0..width {
            let (c, r) = render_pixel(&accel, &params, x, y);
            cpu.push(c);
            cpu_rays += r as u64;
        }
    }
    let diff = compare_linear(img.linear(), &cpu);
    eprintln!(
        "{} {:?} {width}x{height} {} spp: {diff:?}, rays gpu {} core {cpu_rays}",
        preset.name, settings.integrator, settings.spp, stats.rays
    );
    let ray_err = (stats.rays as f64 - cpu_rays as f64).abs() / cpu_rays as f64;
    assert!(
        ray_err < 0.01,
        "{}: rays counted {} vs core {cpu_rays}",
        preset.name,
        stats.rays
    );
    // The 8-bit output is core's encoding of the same linear values, byte for
    // byte (the device encodes through core's Srgb8Table).
    let mut img8 = Image::new(width, height, PixelFormat::Srgba8).unwrap();
    gpu.render(&preset.camera, &settings, &mut img8, &NoProgress)
        .unwrap();
    for (i, (p8, lin)) in img8.rgba8().iter().zip(img.linear()).enumerate() {
        let want = encode_srgba8(Vec3::new(lin[0], lin[1], lin[2]));
        assert_eq!(
            *p8, want,
            "{}: pixel {i} encodes {lin:?} as {p8:?}, core as {want:?}",
            preset.name
        );
    }
    diff
}

fn check_renders(gpu: &mut CudaBackend) {
    let w = whitted19();
    let d = render_vs_core(gpu, &w, 256, 256, w.settings);
    assert!(
        d.off_by_more_than_2 <= 0.002 && d.mean_abs < 1e-3,
        "whitted19: {d:?}"
    );

    let r = rtiow();
    let settings = RenderSettings {
        spp: 4,
        ..r.settings
    };
    let d = render_vs_core(gpu, &r, 160, 90, settings);
    assert!(
        d.off_by_more_than_2 <= 0.03 && d.mean_abs < 0.01,
        "rtiow: {d:?}"
    );

    let c = cornell_mix();
    let d = render_vs_core(gpu, &c, c.width, c.height, c.settings);
    assert!(
        d.off_by_more_than_2 <= 0.05 && d.mean_abs < 0.02,
        "cornell_mix path: {d:?}"
    );
    let ao = RenderSettings {
        integrator: Integrator::Ao,
        spp: 2,
        ao_samples: 8,
        ao_distance: 1.5,
        ao_shadows: true,
        ..c.settings
    };
    let d = render_vs_core(gpu, &c, c.width, c.height, ao);
    assert!(
        d.off_by_more_than_2 <= 0.01 && d.mean_abs < 0.01,
        "cornell_mix ao: {d:?}"
    );
    // The fractional AO count: the same pixels (integrator.cuh ao_rays_at)
    // trace one more ray, so image and ray count stay core's.
    for (ao_extra, ao_shadows) in [(0.37, true), (0.9, false)] {
        let fractional = RenderSettings {
            ao_extra,
            ao_shadows,
            ..ao
        };
        let d = render_vs_core(gpu, &c, c.width, c.height, fractional);
        assert!(
            d.off_by_more_than_2 <= 0.01 && d.mean_abs < 0.01,
            "cornell_mix ao, ao_extra {ao_extra}: {d:?}"
        );
    }
    let wh = RenderSettings {
        integrator: Integrator::Whitted,
        spp: 1,
        max_depth: 3,
        ..c.settings
    };
    let d = render_vs_core(gpu, &c, c.width, c.height, wh);
    assert!(
        d.off_by_more_than_2 <= 0.01 && d.mean_abs < 0.01,
        "cornell_mix whitted: {d:?}"
    );
}

#[test]
fn renders_match_core_render_pixel() {
    let Some(mut gpu) = gpu_or_skip() else { return };
    check_renders(&mut gpu);
}

/// Scenes with a sun run the path kernels compiled with its code: with next
/// event estimation and without, they give core's pixels, and a scene without
/// a sun then goes back to the kernels without it.
#[test]
fn path_kernels_with_the_sun_match_core() {
    let Some(mut gpu) = gpu_or_skip() else { return };
    let sunlit = prism::scenes::sunlit();
    assert!(sunlit.scene.sun.is_some());
    for sun_nee in [true, false] {
        let settings = RenderSettings {
            spp: 4,
            sun_nee,
            ..sunlit.settings
        };
        let d = render_vs_core(&mut gpu, &sunlit, 160, 120, settings);
        assert!(
            d.off_by_more_than_2 <= 0.05 && d.mean_abs < 0.02,
            "sunlit, NEE {sun_nee}: {d:?}"
        );
    }
    let plain = cornell_mix();
    let d = render_vs_core(&mut gpu, &plain, plain.width, plain.height, plain.settings);
    assert!(
        d.off_by_more_than_2 <= 0.05 && d.mean_abs < 0.02,
        "cornell_mix after a scene with a sun: {d:?}"
    );
}

#[test]
fn renders_match_core_with_deferred_shading() {
    if gpu_or_skip().is_none() {
        return;
    }
    for defer in [1, 16] {
        let config = KernelConfig {
            path_defer: defer,
            ..Default::default()
        };
        let mut gpu = gpu_with(config);
        check_renders(&mut gpu);
    }
}

#[test]
fn renders_match_core_with_path_regeneration() {
    if gpu_or_skip().is_none() {
        return;
    }
    let config = KernelConfig {
        path_regen: true,
        path_defer: 0,
        persistent: false,
        ..Default::default()
    };
    let mut gpu = gpu_with(config);
    check_renders(&mut gpu);
    // The one-thread-per-ray trace kernels give the same hits.
    let scene = random_scene(3, 200, 2000);
    let accel = Accel::build(&scene).unwrap();
    gpu.set_scene(&scene).unwrap();
    let rays = random_rays(3, 20_000);
    let g = gpu_hits(&mut gpu, &rays);
    let reference: Vec<(f32, u32)> = core_hits(&accel, &rays)
        .iter()
        .map(|h| (h.t, h.prim))
        .collect();
    assert!(AgreementCounts::compare(&rays, &g, &reference).passed());
}

/// How far apart two sets of linear images are: pixels not equal bit for
/// bit, pixels off by more than float rounding can explain (a channel more
/// than 2/255 apart relative to the larger of 1 and the first's value, or
/// NaN), and the mean absolute difference of the channels.
fn rounding_apart(a: &[Vec<[f32; 4]>], b: &[Vec<[f32; 4]>]) -> (usize, usize, f64) {
    assert_eq!(a.len(), b.len());
    let (mut bits, mut off, mut sum, mut n) = (0usize, 0usize, 0.0f64, 0usize);
    for (a, b) in a.iter().zip(b) {
        assert_eq!(a.len(), b.len(), "image sizes");
        for (p, q) in a.iter().zip(b) {
            n += 1;
            if p != q {
                bits += 1;
            }
            // A NaN difference counts as far.
            let far = (0..3).any(|c| {
                let d = (p[c] - q[c]).abs();
                d.is_nan() || d > 2.0 / 255.0 * p[c].abs().max(1.0)
            });
            off += far as usize;
            sum += (0..3).map(|c| (p[c] - q[c]).abs() as f64).sum::<f64>() / 3.0;
        }
    }
    (bits, off, sum / n.max(1) as f64)
}

/// The persistent path kernels (warps taking pieces of the frame until none
/// are left) against the tile kernels, and against each other's layouts of a
/// pixel's samples on lanes: the same paths, so the same pixels up to float
/// rounding. Not bit for bit: each kernel is its own compilation of the
/// inlined path body, and NVRTC contracts a product and a sum into an FMA in
/// one and not in another (compiling that body out of line makes them agree
/// bit for bit, at 37% of rtiow's time; bench/RESULTS.md). A sample traced
/// twice or not at all, or a pixel given another's random numbers, moves a
/// pixel far past rounding. The same kernel run twice gives the same bits.
#[test]
fn persistent_path_warps_give_the_tiles_pixels() {
    if gpu_or_skip().is_none() {
        return;
    }
    assert!(KernelConfig::default().persistent_path);
    let mut tiles = gpu_with(KernelConfig {
        persistent_path: false,
        ..Default::default()
    });
    let mut persistent = gpu_with(KernelConfig::default());
    // Other layouts of a pixel's samples on lanes: four lanes a pixel, and the
    // whole frame laid out as the default lays out its tail.
    let mut quads = gpu_with(KernelConfig {
        path_lanes: 4,
        path_tail_64ths: 0,
        ..Default::default()
    });
    let mut all_tail = gpu_with(KernelConfig {
        path_tail_64ths: 64,
        ..Default::default()
    });
    // Blocks of 96 threads (three warps), as against the default's 256.
    let mut small_blocks = gpu_with(KernelConfig {
        path_threads: 96,
        path_min_blocks: 8,
        ..Default::default()
    });
    // 2 spp: two lanes a pixel; 3: one lane a pixel, four in the tail (one
    // idle); 37: one lane a pixel, 32 in the tail (two steps, 27 lanes idle
    // in the second).
    let path = [
        (Integrator::Path, 2),
        (Integrator::Path, 3),
        (Integrator::Path, 37),
    ];
    // No pixel past rounding, and rounding's mean difference tiny.
    let agree = |what: &str, a: &[Vec<[f32; 4]>], b: &[Vec<[f32; 4]>]| {
        let (bits, off, mean) = rounding_apart(a, b);
        eprintln!(
            "{what}: {bits} pixels not bit for bit, {off} past rounding, mean abs {mean:.2e}"
        );
        assert_eq!(off, 0, "{what}: pixels past rounding");
        assert!(mean <= 1e-5, "{what}: mean abs difference {mean}");
    };
    // rtiow walks the cell grid, whitted19 the octant copies, cornell_mix
    // (triangles and spheres) its tree; 100 x 70 leaves part-covered tiles.
    for preset in [rtiow(), whitted19(), cornell_mix()] {
        let size = (100, 70);
        let a = linear_renders(&mut tiles, &preset, size, &path, false);
        let b = linear_renders(&mut persistent, &preset, size, &path, false);
        agree(&format!("{}: tiles, persistent", preset.name), &a, &b);
        // The next frame counts its pieces from zero again: the same kernel,
        // the same bits.
        let c = linear_renders(&mut persistent, &preset, size, &path, false);
        assert_eq!(rounding_apart(&b, &c).0, 0, "{}: second frame", preset.name);
        for (name, gpu) in [
            ("4 lanes", &mut quads),
            ("all tail", &mut all_tail),
            ("96-thread blocks", &mut small_blocks),
        ] {
            let d = linear_renders(gpu, &preset, size, &path, false);
            agree(&format!("{}: persistent, {name}", preset.name), &b, &d);
        }
    }
    // 64 MiB of linear pixels: a frame of at least two band launches, each of
    // which takes its own pieces.
    let r = rtiow();
    let size = (2048, 2048);
    let one = [(Integrator::Path, 1)];
    let a = linear_renders(&mut tiles, &r, size, &one, false);
    let b = linear_renders(&mut persistent, &r, size, &one, false);
    assert!(persistent.last_frame_times().bands >= 2);
    agree("rtiow in bands", &a, &b);
}

/// The persistent AO kernels (warps that share their pixels' AO rays over
/// their lanes) against the tile kernels (a pixel's rays on its own lane):
/// the same rays, so the same ray count and the same pixels up to float
/// rounding (each kernel is its own compilation; see the path kernels'
/// test above). An AO ray given another ray's random numbers, traced twice
/// or counted for another pixel moves a pixel far past rounding.
#[test]
fn persistent_ao_warps_give_the_tiles_pixels() {
    if gpu_or_skip().is_none() {
        return;
    }
    assert!(KernelConfig::default().persistent_ao);
    let mut tiles = gpu_with(KernelConfig {
        persistent_ao: false,
        ..Default::default()
    });
    let mut shared = gpu_with(KernelConfig::default());
    // (spp, AO rays, shadows, fractional count): 8 rays, four pixels' rays a
    // round; 37, a pixel's rays over two rounds; a fractional count (pixels
    // of one piece with different counts) and several samples.
    let cases = [
        (1, 8, false, 0.0),
        (1, 37, true, 0.0),
        (2, 5, true, 0.37),
        (3, 1, false, 0.9),
    ];
    // rtiow walks the cell grid, whitted19 the octant copies, cornell_mix its
    // tree; 100 x 70 leaves part-covered tiles and pieces.
    for preset in [rtiow(), whitted19(), cornell_mix()] {
        tiles.set_scene(&preset.scene).unwrap(); // ok: test code
        shared.set_scene(&preset.scene).unwrap(); // ok: test code
        for (spp, ao_samples, ao_shadows, ao_extra) in cases {
            let settings = RenderSettings {
                integrator: Integrator::Ao,
                spp,
                ao_samples,
                ao_shadows,
                ao_extra,
                ..preset.settings
            };
            let mut frames = Vec::new();
            let mut rays = Vec::new();
            for gpu in [&mut tiles, &mut shared] {
                let mut img = Image::new(100, 70, PixelFormat::LinearF32).unwrap(); // ok: test code
                let stats = gpu
                    .render(&preset.camera, &settings, &mut img, &NoProgress)
                    .unwrap(); // ok: test code
                frames.push(vec![img.linear().to_vec()]);
                rays.push(stats.rays);
            }
            let what = format!("{} AO {settings:?}", preset.name);
            assert_eq!(rays[0], rays[1], "{what}: rays");
            let (bits, off, mean) = rounding_apart(&frames[0], &frames[1]);
            eprintln!(
                "{}: {bits} pixels not bit for bit, {off} past rounding",
                preset.name
            );
            assert_eq!(off, 0, "{what}: pixels past rounding");
            assert!(mean <= 1e-5, "{what}: mean abs difference {mean}");
        }
    }
}

/// Every integrator, with the samples per pixel the tests render it at.
const EVERY_INTEGRATOR: [(Integrator, u32); 3] = [
    (Integrator::Path, 3),
    (Integrator::Whitted, 1),
    (Integrator::Ao, 2),
];

/// Linear images of `preset` rendered by `gpu` with each `(integrator, spp)`,
/// AO tracing shadow rays when `ao_shadows`.
fn linear_renders(
    gpu: &mut CudaBackend,
    preset: &Preset,
    (width, height): (u32, u32),
    integrators: &[(Integrator, u32)],
    ao_shadows: bool,
) -> Vec<Vec<[f32; 4]>> {
    gpu.set_scene(&preset.scene).unwrap();
    let mut out = Vec::new();
    for &(integrator, spp) in integrators {
        let settings = RenderSettings {
            integrator,
            spp,
            ao_shadows,
            ..preset.settings
        };
        let mut img = Image::new(width, height, PixelFormat::LinearF32).unwrap();
        gpu.render(&preset.camera, &settings, &mut img, &NoProgress)
            .unwrap();
        out.push(img.linear().to_vec());
    }
    out
}

#[test]
fn skipping_unneeded_work_leaves_every_pixel_as_it_was() {
    if gpu_or_skip().is_none() {
        return;
    }
    let plain = KernelConfig {
        lobe_branches: false,
        tree_checked_on_upload: false,
        whitted_skips_camera_rng: false,
        // The tree as it is, not its octant copies, and camera rays walk it.
        octant_trees: false,
        camera_cones: false,
        // The slab test's sign test of negative exits, which render rays never
        // need; its float entry; the leaf block run at every node; the sphere
        // test's division and square root even for a ray leaving its sphere.
        extra_options: vec![
            "-DPRISM_RENDER_TMIN_NONNEG=0".into(),
            "-DPRISM_SLAB_INT_ENTRY=0".into(),
            "-DPRISM_LEAF_BRANCH=0".into(),
            "-DPRISM_SPHERE_LEFT_BEHIND=0".into(),
        ],
        ..Default::default()
    };
    let mut plain = gpu_with(plain);
    // Camera rays walk the tree here too (camera_cones_and_bounce_masks_give_the_trees_answers
    // covers their candidates).
    let lean_config = KernelConfig {
        lobe_branches: true,
        tree_checked_on_upload: true,
        whitted_skips_camera_rng: true,
        octant_trees: true,
        camera_cones: false,
        ..Default::default()
    };
    // The lean kernels on the tree itself: the same visiting order as `plain`.
    let mut lean_tree = gpu_with(KernelConfig {
        octant_trees: false,
        ..lean_config.clone()
    });
    let mut lean = gpu_with(lean_config);
    // The octant copies with the kernels' own per-node and per-leaf checks.
    let mut checked_copies = gpu_with(KernelConfig {
        tree_checked_on_upload: false,
        octant_trees: true,
        camera_cones: false,
        ..Default::default()
    });
    let differ = |a: &[Vec<[f32; 4]>], b: &[Vec<[f32; 4]>]| -> Vec<usize> {
        a.iter()
            .zip(b)
            .map(|(a, b)| a.iter().zip(b).filter(|(p, q)| p != q).count())
            .collect()
    };
    for preset in [rtiow(), whitted19(), cornell_mix()] {
        let (w, h) = (96, 64);
        let a = linear_renders(
            &mut plain,
            &preset,
            (w, h),
            &EVERY_INTEGRATOR,
            preset.settings.ao_shadows,
        );
        let t = linear_renders(
            &mut lean_tree,
            &preset,
            (w, h),
            &EVERY_INTEGRATOR,
            preset.settings.ao_shadows,
        );
        let b = linear_renders(
            &mut lean,
            &preset,
            (w, h),
            &EVERY_INTEGRATOR,
            preset.settings.ao_shadows,
        );
        let c = linear_renders(
            &mut checked_copies,
            &preset,
            (w, h),
            &EVERY_INTEGRATOR,
            preset.settings.ao_shadows,
        );
        // Leaving work out changes no pixel of the path, Whitted and AO renders.
        assert_eq!(
            differ(&a, &t),
            [0, 0, 0],
            "{}: lean on the tree",
            preset.name
        );
        assert_eq!(differ(&b, &c), [0, 0, 0], "{}: checked copies", preset.name);
        // The near-first copies visit children in another order, which keeps a
        // different primitive only where two tie at exactly the same t: never
        // among the spheres of rtiow and whitted19, now and then where the
        // triangles of cornell_mix's walls meet.
        let reordered = differ(&t, &b);
        eprintln!(
            "{}: pixels differing on the near-first copies: {reordered:?}",
            preset.name
        );
        if preset.name == "cornell_mix" {
            assert!(
                reordered.iter().all(|&n| n * 200 <= (w * h) as usize),
                "{}: {reordered:?} pixels of {} differ",
                preset.name,
                w * h
            );
        } else {
            assert_eq!(reordered, [0, 0, 0], "{}: near-first copies", preset.name);
        }
    }
}

#[test]
fn the_light_grid_gives_the_trees_shadows() {
    // A grid whose lists never block: shadows vanish wherever the grid answers.
    let unblocked = |name: &str, src: &str| {
        if name == "point_grid.cuh" {
            src.replace(
                "tmax, t, u, v)) {\n            return 1;",
                "tmax, t, u, v)) {\n            return 0;",
            )
        } else {
            src.to_owned()
        }
    };
    assert_patch_applies("point_grid.cuh", &unblocked);
    if gpu_or_skip().is_none() {
        return;
    }
    let mut tree = gpu_with(KernelConfig {
        light_grid: false,
        ..Default::default()
    });
    let mut grid = gpu_with(KernelConfig::default());
    let mut broken = gpu_patched(KernelConfig::default(), unblocked);
    // Whitted (one sample) and AO (two samples), with shadow rays.
    const SHADOWED: [(Integrator, u32); 2] = [(Integrator::Whitted, 1), (Integrator::Ao, 2)];
    let (w, h) = (128, 96);
    for preset in [whitted19(), cornell_mix(), lamp_in_a_crowd()] {
        let t = linear_renders(&mut tree, &preset, (w, h), &SHADOWED, true);
        let g = linear_renders(&mut grid, &preset, (w, h), &SHADOWED, true);
        let b = linear_renders(&mut broken, &preset, (w, h), &SHADOWED, true);
        for (k, integrator) in ["whitted", "ao"].iter().enumerate() {
            let differ =
                |a: &[[f32; 4]], b: &[[f32; 4]]| a.iter().zip(b).filter(|(p, q)| p != q).count();
            // The grid's answers are the tree's: not one pixel differs.
            assert_eq!(differ(&t[k], &g[k]), 0, "{} {integrator}", preset.name);
            // And the grid is what answered: without its blocking hits the
            // shadows change.
            assert!(
                differ(&t[k], &b[k]) > 0,
                "{} {integrator}: the grid was not used",
                preset.name
            );
        }
    }
}

#[test]
fn camera_cones_and_bounce_masks_give_the_trees_answers() {
    // Tiles that list nothing: camera rays see only the sky.
    let listing_nothing = |name: &str, src: &str| {
        if name == "camera_bounds.cuh" {
            src.replace(">= c.w)", ">= 2.0f)")
        } else {
            src.to_owned()
        }
    };
    assert_patch_applies("camera_bounds.cuh", &listing_nothing);
    // Tiles whose mirror rays list nothing: those see only the sky.
    let mirrors_listing_nothing = |name: &str, src: &str| {
        if name == "prism.cu" {
            src.replace("? reflection_tile_mask(", "? 0ull & reflection_tile_mask(")
        } else {
            src.to_owned()
        }
    };
    assert_patch_applies("prism.cu", &mirrors_listing_nothing);
    // Tiles whose shadow rays list nothing: nothing blocks them.
    let shadows_listing_nothing = |name: &str, src: &str| {
        if name == "prism.cu" {
            src.replace("? shadow_tile_mask(", "? 0ull & shadow_tile_mask(")
        } else {
            src.to_owned()
        }
    };
    assert_patch_applies("prism.cu", &shadows_listing_nothing);
    if gpu_or_skip().is_none() {
        return;
    }
    // Whitted (one sample, pixel centres) and AO (jittered samples).
    const KINDS: [(Integrator, u32); 2] = [(Integrator::Whitted, 1), (Integrator::Ao, 3)];
    let (w, h) = (160, 96);
    // Blocks of 16 x 8 pixels (the default; warps of 16 x 2) and 64 x 2
    // (warps of 32 x 1).
    for tile in [[16, 8], [64, 2]] {
        let mut tree = gpu_with(KernelConfig {
            camera_cones: false,
            render_tile: tile,
            ..Default::default()
        });
        let mut cones = gpu_with(KernelConfig {
            render_tile: tile,
            ..Default::default()
        });
        let mut broken = gpu_patched(
            KernelConfig {
                render_tile: tile,
                ..Default::default()
            },
            listing_nothing,
        );
        let mut no_mirrors = gpu_patched(
            KernelConfig {
                render_tile: tile,
                ..Default::default()
            },
            mirrors_listing_nothing,
        );
        let mut no_shadows = gpu_patched(
            KernelConfig {
                render_tile: tile,
                ..Default::default()
            },
            shadows_listing_nothing,
        );
        for preset in [whitted19(), cornell_mix(), lamp_in_a_crowd()] {
            let t = linear_renders(&mut tree, &preset, (w, h), &KINDS, true);
            let c = linear_renders(&mut cones, &preset, (w, h), &KINDS, true);
            let b = linear_renders(&mut broken, &preset, (w, h), &KINDS, true);
            let m = linear_renders(&mut no_mirrors, &preset, (w, h), &KINDS, true);
            let n = linear_renders(&mut no_shadows, &preset, (w, h), &KINDS, true);
            for (k, integrator) in ["whitted", "ao"].iter().enumerate() {
                let differ = |a: &[[f32; 4]], b: &[[f32; 4]]| {
                    a.iter().zip(b).filter(|(p, q)| p != q).count()
                };
                // The candidates' hits are the tree's, tested in another
                // order, which keeps a different primitive only where two tie
                // at exactly the same t: never among spheres, now and then
                // where the triangles of cornell_mix's walls meet.
                let reordered = differ(&t[k], &c[k]);
                if preset.name == "cornell_mix" {
                    assert!(
                        reordered * 200 <= (w * h) as usize,
                        "{} {integrator} tile {tile:?}: {reordered} pixels differ",
                        preset.name
                    );
                } else {
                    assert_eq!(reordered, 0, "{} {integrator} tile {tile:?}", preset.name);
                }
                // And the cones are what answered: listing nothing loses the
                // camera rays' hits.
                assert!(
                    differ(&t[k], &b[k]) > 0,
                    "{} {integrator} tile {tile:?}: the cones were not used",
                    preset.name
                );
                // As are whitted19's reflection masks (its tiles see one
                // sphere at a time; cornell_mix's walls are triangles, and
                // AO has no mirrors).
                if preset.name == "whitted19" && *integrator == "whitted" {
                    assert!(
                        differ(&t[k], &m[k]) > 0,
                        "{} tile {tile:?}: the reflection masks were not used",
                        preset.name
                    );
                }
                // And whitted19's shadow masks, which answer the shadow rays
                // of Whitted's and AO's camera hits.
                if preset.name == "whitted19" {
                    assert!(
                        differ(&t[k], &n[k]) > 0,
                        "{} {integrator} tile {tile:?}: the shadow masks were not used",
                        preset.name
                    );
                }
            }
        }
    }
}

#[test]
fn several_tiles_a_block_and_overlapped_bands_render_the_same_pixels() {
    if gpu_or_skip().is_none() {
        return;
    }
    // The persistent path kernels ignore render_tiles_per_block; with them
    // off, the path kernels take it too (and the AO kernels take
    // ao_tiles_per_block). Small frames take as many tiles as asked
    // (render_min_waves 0).
    let config = |tiles| KernelConfig {
        render_tiles_per_block: tiles,
        ao_tiles_per_block: tiles,
        render_min_waves: 0,
        persistent_path: false,
        ..Default::default()
    };
    // One tile a block, and bands one after the other on one stream.
    let mut one = gpu_with(KernelConfig {
        overlap_bands: false,
        ..config(1)
    });
    let mut three = gpu_with(config(3));
    let mut eight = gpu_with(config(8));
    let bits = |renders: &[Vec<[f32; 4]>]| -> Vec<Vec<[u32; 4]>> {
        renders
            .iter()
            .map(|r| r.iter().map(|p| p.map(f32::to_bits)).collect())
            .collect()
    };
    const ALL: [(Integrator, u32); 3] = [
        (Integrator::Path, 2),
        (Integrator::Whitted, 1),
        (Integrator::Ao, 2),
    ];
    // 150 x 77: neither side a multiple of a tile or of a block's tiles.
    for preset in [whitted19(), cornell_mix()] {
        let a = bits(&linear_renders(&mut one, &preset, (150, 77), &ALL, true));
        for (tiles, gpu) in [(3, &mut three), (8, &mut eight)] {
            let b = bits(&linear_renders(gpu, &preset, (150, 77), &ALL, true));
            assert!(a == b, "{}: {tiles} tiles a block", preset.name);
        }
    }
    // Two bands (over 32 MB of linear pixels), overlapped on two streams:
    // the second band's blocks start at its own first row, 728, not a
    // multiple of 3 tiles' 24 rows.
    let preset = whitted19();
    let whitted = [(Integrator::Whitted, 1)];
    let a = bits(&linear_renders(
        &mut one,
        &preset,
        (1448, 1450),
        &whitted,
        true,
    ));
    let b = bits(&linear_renders(
        &mut three,
        &preset,
        (1448, 1450),
        &whitted,
        true,
    ));
    assert!(a == b, "whitted19 in two bands, 3 tiles a block");
}

#[test]
fn the_cell_grid_gives_the_trees_hits() {
    // A walk that stops after its first cell: hits farther on are lost.
    let first_cell_only = |name: &str, src: &str| {
        if name == "cell_grid.cuh" {
            src.replace(
                "if (++walked >= steps || !grid_advance(w, best.t)) {",
                "if (true) {",
            )
        } else {
            src.to_owned()
        }
    };
    assert_patch_applies("cell_grid.cuh", &first_cell_only);
    // rtiow is a scene core's cost model gives a grid.
    let r = rtiow();
    let accel = Accel::build(&r.scene).unwrap();
    let grid = prism_core::cell_grid::CellGrid::build(accel.primitives()).unwrap();
    assert!(
        grid.worthwhile(accel.nodes()),
        "rtiow no longer gets a grid"
    );
    if gpu_or_skip().is_none() {
        return;
    }
    let mut tree = gpu_with(KernelConfig {
        cell_grid: false,
        ..Default::default()
    });
    let mut walk = gpu_with(KernelConfig::default());
    let mut broken = gpu_patched(KernelConfig::default(), first_cell_only);
    const ALL: [(Integrator, u32); 3] = [
        (Integrator::Path, 2),
        (Integrator::Whitted, 1),
        (Integrator::Ao, 2),
    ];
    let (w, h) = (160, 90);
    let t = linear_renders(&mut tree, &r, (w, h), &ALL, true);
    let g = linear_renders(&mut walk, &r, (w, h), &ALL, true);
    let b = linear_renders(&mut broken, &r, (w, h), &ALL, true);
    let differ = |a: &[[f32; 4]], b: &[[f32; 4]]| a.iter().zip(b).filter(|(p, q)| p != q).count();
    // A camera some hundred thousand scene sizes away, zoomed in: its rays are
    // too far to walk (CellGrid::walkable) and take the tree, so the frames
    // are the tree kernels' too.
    let mut far = rtiow();
    far.camera.look_from *= 1e5;
    far.camera.vfov_degrees *= 1e-5;
    far.camera.aperture = 0.0;
    let ft = linear_renders(&mut tree, &far, (w, h), &ALL[..1], true);
    let fg = linear_renders(&mut walk, &far, (w, h), &ALL[..1], true);
    assert_eq!(differ(&ft[0], &fg[0]), 0, "rtiow seen from far away");
    for (k, integrator) in ["path", "whitted", "ao"].iter().enumerate() {
        // The grid's hits are the tree's: not one pixel differs.
        assert_eq!(differ(&t[k], &g[k]), 0, "rtiow {integrator}");
        // And the grid is what answered: a walk cut short changes the image.
        assert!(
            differ(&t[k], &b[k]) > 0,
            "rtiow {integrator}: the grid was not used"
        );
    }
}

#[test]
fn every_trace_kernel_variant_agrees_with_core() {
    if gpu_or_skip().is_none() {
        return;
    }
    // The refill kernels split the rays into ranges with a counter each
    // (PRISM_TRACE_SHARDS, 16 by default): one range and 32 ranges too.
    for (persistent, trace_refill, shards) in [
        (true, 0, None),
        (true, 16, None),
        (true, 1, None),
        (true, 32, None),
        (false, 0, None),
        (true, 16, Some(1)),
        (true, 16, Some(32)),
    ] {
        let config = KernelConfig {
            persistent,
            trace_refill,
            occluded_refill: trace_refill,
            extra_options: shards
                .map(|n: u32| vec![format!("-DPRISM_TRACE_SHARDS={n}")])
                .unwrap_or_default(),
            ..Default::default()
        };
        let mut gpu = gpu_with(config);
        for (seed, spheres, triangles) in [(21, 0, 3000), (22, 500, 500), (23, 800, 0)] {
            let scene = random_scene(seed, spheres, triangles);
            let accel = Accel::build(&scene).unwrap();
            gpu.set_scene(&scene).unwrap();
            let rays = random_rays(seed, 30_000);
            let g = gpu_hits(&mut gpu, &rays);
            let c = core_hits(&accel, &rays);
            if spheres == 0 {
                assert_same_hits(&format!("refill {trace_refill} seed {seed}"), &rays, &g, &c);
                // Fewer rays than ranges: most ranges are empty.
                let few = gpu_hits(&mut gpu, &rays[..7]);
                assert_same_hits(
                    &format!("7 rays, refill {trace_refill}"),
                    &rays[..7],
                    &few,
                    &c[..7],
                );
            }
            let reference: Vec<(f32, u32)> = c.iter().map(|h| (h.t, h.prim)).collect();
            let counts = AgreementCounts::compare(&rays, &g, &reference);
            assert!(
                counts.passed(),
                "persistent {persistent} refill {trace_refill} seed {seed}: {counts:?}"
            );
            let o = gpu_occluded(&mut gpu, &rays);
            let differ = o
                .iter()
                .zip(&rays)
                .filter(|(a, r)| **a != accel.occluded(r))
                .count();
            assert!(
                differ <= rays.len() / 10_000,
                "seed {seed}: occluded differs on {differ} rays"
            );
        }
    }
}

#[test]
fn bad_input_is_refused_and_the_backend_stays_usable() {
    let Some(mut gpu) = gpu_or_skip() else { return };
    // Straight down onto the ground sphere.
    let ray = Ray::new(Vec3::ZERO, Vec3::NEG_Y);
    let mut hits = [Hit::MISS; 1];
    assert_eq!(gpu.intersect(&[ray], &mut hits), Err(Error::NoScene));
    let w = whitted19();
    let mut img = Image::new(8, 8, PixelFormat::Srgba8).unwrap();
    assert_eq!(
        gpu.render(&w.camera, &w.settings, &mut img, &NoProgress)
            .err(),
        Some(Error::NoScene)
    );
    assert_eq!(
        gpu.set_scene(&prism_core::Scene::new()).err(),
        Some(Error::EmptyScene)
    );
    gpu.set_scene(&w.scene).unwrap();
    assert!(matches!(
        gpu.intersect(&[ray, ray], &mut hits),
        Err(Error::LengthMismatch { .. })
    ));
    let nan = Ray::new(Vec3::new(f32::NAN, 0.0, 0.0), Vec3::X);
    assert!(matches!(
        gpu.intersect(&[nan], &mut hits),
        Err(Error::InvalidRay { index: 0, .. })
    ));
    let mut flags = [false; 1];
    assert!(matches!(
        gpu.occluded(&[nan], &mut flags),
        Err(Error::InvalidRay { .. })
    ));
    gpu.intersect(&[], &mut []).unwrap();
    let bad = RenderSettings {
        spp: 0,
        ..w.settings
    };
    assert!(matches!(
        gpu.render(&w.camera, &bad, &mut img, &NoProgress),
        Err(Error::Setting { field: "spp", .. })
    ));
    // Still usable.
    gpu.intersect(&[ray], &mut hits).unwrap();
    assert!(hits[0].is_hit());
    gpu.render(&w.camera, &w.settings, &mut img, &NoProgress)
        .unwrap();
    assert!(img.rgba8().iter().any(|p| *p != [0, 0, 0, 255]));
    assert_eq!(gpu.info().name, "cuda");
    assert!(gpu.info().device.contains("sm_"));
}

/// A tree of one leaf has an absent child, whose box lies at +inf. Rays open far
/// behind their origin (`tmin = -f32::MAX`) with every direction component
/// negative (or -0) must miss that box as core's traversal does; at `tmin =
/// -inf` the slab test would enter it (the kernels read no node checks after
/// upload), so such rays are refused before launch.
#[test]
fn rays_open_behind_them_never_enter_the_absent_child() {
    let Some(mut gpu) = gpu_or_skip() else { return };
    let mut scene = prism_core::Scene::new();
    let m = scene.add_material(prism_core::Material::lambertian(Vec3::ONE));
    scene.add_sphere(Vec3::ZERO, 1.0, m);
    let accel = Accel::build(&scene).unwrap();
    assert!(
        accel
            .nodes()
            .iter()
            .any(|n| [n.left_index(), n.right_index()].contains(&prism_core::gpu::EMPTY_CHILD)),
        "the one-sphere tree has an absent child"
    );
    gpu.set_scene(&scene).unwrap();
    let mut rays = Vec::new();
    for origin in [
        Vec3::splat(5.0),
        Vec3::splat(-5.0),
        Vec3::new(3.0, -7.0, 0.5),
    ] {
        for dir in [
            Vec3::NEG_ONE,
            Vec3::new(-0.0, -1.0, -0.0),
            Vec3::new(-1.0, -2.0, -0.0),
        ] {
            for tmin in [-f32::MAX, -1e30, -1.0, 0.0] {
                rays.push(Ray::segment(origin, dir, tmin, f32::INFINITY));
            }
        }
    }
    assert_same_hits(
        "rays open behind",
        &rays,
        &gpu_hits(&mut gpu, &rays),
        &core_hits(&accel, &rays),
    );
    let want: Vec<bool> = rays.iter().map(|r| accel.occluded(r)).collect();
    assert_eq!(gpu_occluded(&mut gpu, &rays), want);
    let open = Ray::segment(
        Vec3::splat(5.0),
        Vec3::NEG_ONE,
        f32::NEG_INFINITY,
        f32::INFINITY,
    );
    let mut hits = [Hit::MISS];
    assert!(matches!(
        gpu.intersect(&[open], &mut hits),
        Err(Error::InvalidRay { index: 0, .. })
    ));
    // Still usable: the sphere is hit from (5, 5, 5).
    gpu.intersect(&rays[..1], &mut hits).unwrap();
    assert_eq!(hits[0].prim, 0);
}

struct CancelAfter(std::sync::atomic::AtomicU64, u64);

impl Progress for CancelAfter {
    fn advance(&self, done: u64, _total: u64) {
        self.0.store(done, std::sync::atomic::Ordering::Relaxed);
    }
    fn cancelled(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed) >= self.1
    }
}

#[test]
fn long_renders_report_progress_and_cancel() {
    let Some(mut gpu) = gpu_or_skip() else { return };
    let w = whitted19();
    gpu.set_scene(&w.scene).unwrap();
    // 4096 x 4096 RGBA8 = 64 MiB: at least two bands.
    let mut img = Image::new(4096, 4096, PixelFormat::Srgba8).unwrap();
    let p = CancelAfter(0.into(), 1);
    assert_eq!(
        gpu.render(&w.camera, &w.settings, &mut img, &p).err(),
        Some(Error::Cancelled)
    );
    let rows = |p: &CancelAfter| p.0.load(std::sync::atomic::Ordering::Relaxed);
    assert!(rows(&p) < 4096, "cancelled after {} of 4096 rows", rows(&p));
    assert_eq!(gpu.last_frame_times(), Default::default());
    let p = CancelAfter(0.into(), u64::MAX);
    let stats = gpu.render(&w.camera, &w.settings, &mut img, &p).unwrap();
    assert_eq!(rows(&p), 4096);
    assert!(gpu.last_frame_times().bands >= 2);
    assert!(stats.rays >= 4096 * 4096);

    // A heavy frame (path tracing, 8192 spp at 512 x 512: some 8.6 G rays by
    // the band plan's estimate) is enqueued two bands ahead of the host, in
    // more than two bands: cancelled after its first, it stops there.
    let heavy = RenderSettings {
        integrator: Integrator::Path,
        spp: 8192,
        max_depth: 4,
        ..w.settings
    };
    let mut img = Image::new(512, 512, PixelFormat::Srgba8).unwrap();
    let p = CancelAfter(0.into(), 1);
    assert_eq!(
        gpu.render(&w.camera, &heavy, &mut img, &p).err(),
        Some(Error::Cancelled)
    );
    let first = rows(&p);
    assert!(
        first > 0 && first <= 256,
        "cancelled after {first} of 512 rows"
    );
    let p = CancelAfter(0.into(), u64::MAX);
    gpu.render(&w.camera, &heavy, &mut img, &p).unwrap();
    assert_eq!(rows(&p), 512);
    assert!(
        gpu.last_frame_times().bands > 2,
        "{:?}",
        gpu.last_frame_times()
    );
}

#[test]
fn batches_larger_than_one_launch_are_chunked() {
    let Some(mut gpu) = gpu_or_skip() else { return };
    let scene = random_scene(7, 100, 1000);
    let accel = Accel::build(&scene).unwrap();
    gpu.set_scene(&scene).unwrap();
    let base = random_rays(7, 1000);
    let n = prism_cuda::MAX_LAUNCH_RAYS + 4321;
    let rays: Vec<Ray> = base.iter().copied().cycle().take(n).collect();
    let g = gpu_hits(&mut gpu, &rays);
    let c = core_hits(&accel, &base);
    for (i, h) in g
        .iter()
        .enumerate()
        .step_by(997)
        .chain(g.iter().enumerate().skip(n - 5000))
    {
        let want = c[i % base.len()];
        assert_eq!(h.prim, want.prim, "ray {i}");
    }
}

/// A kernel that writes through a null pointer when a ray has tmin = 12345.
fn faulting_patch(name: &str, src: &str) -> String {
    let needle = "    const float4 d = __ldg(r + 1);\n";
    if name == "batch.cuh" {
        src.replace(
            needle,
            &format!("{needle}    if (o.w == 12345.0f) {{ *(volatile int*)0 = 1; }}\n"),
        )
    } else {
        src.to_owned()
    }
}

/// The fault test's name: a kernel fault poisons CUDA for the whole process,
/// so the test re-runs itself alone in a child process.
const FAULT_TEST: &str = "a_kernel_fault_is_an_error_never_a_panic";

#[test]
fn a_kernel_fault_is_an_error_never_a_panic() {
    assert_patch_applies("batch.cuh", &faulting_patch);
    if std::env::var_os("PRISM_CUDA_FAULT_CHILD").is_some() {
        fault_in_this_process();
        return;
    }
    if gpu_or_skip().is_none() {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args(["--exact", FAULT_TEST, "--nocapture", "--test-threads", "1"])
        .env("PRISM_CUDA_FAULT_CHILD", "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("---- child process ----\n{text}---- end of child ----");
    assert!(out.status.success(), "the child process failed");
    assert!(
        text.contains("fault reported as"),
        "the child did not run the fault"
    );
}

fn fault_in_this_process() {
    let mut gpu = CudaBackend::with_source_patch(faulting_patch).unwrap();
    let scene = random_scene(5, 50, 50);
    let accel = Accel::build(&scene).unwrap();
    gpu.set_scene(&scene).unwrap();
    let rays = random_rays(5, 1000);
    let mut bad = rays.clone();
    bad[11].tmin = 12345.0; // a ray over (0, inf): (12345, inf) is valid
    let mut hits = vec![Hit::MISS; rays.len()];
    let e = gpu.intersect(&bad, &mut hits).unwrap_err();
    assert!(matches!(e, Error::Device { .. }), "{e:?}");
    eprintln!("fault reported as: {e}");
    // Every later call returns (drivers differ on whether CUDA can be used
    // again in this process); none panics.
    match gpu.intersect(&rays, &mut hits) {
        Ok(_) => {
            let reference: Vec<(f32, u32)> = core_hits(&accel, &rays)
                .iter()
                .map(|h| (h.t, h.prim))
                .collect();
            assert!(AgreementCounts::compare(&rays, &hits, &reference).passed());
            eprintln!("the next call recovered");
        }
        Err(e) => eprintln!("the next call: {e}"),
    }
    let w = whitted19();
    let mut img = Image::new(16, 16, PixelFormat::Srgba8).unwrap();
    let r = gpu
        .set_scene(&w.scene)
        .and_then(|_| gpu.render(&w.camera, &w.settings, &mut img, &NoProgress));
    eprintln!("render after the fault: {:?}", r.err());
    let _ = gpu.info();
}

#[test]
fn a_broken_mirror_is_caught() {
    // Halve the triangle test's far limit: hits beyond tmax / 2 are lost.
    let patch = |name: &str, src: &str| {
        if name == "intersect.cuh" {
            src.replace(
                "if (t > tmin && t < tmax) {\n        t_out = t;",
                "if (t > tmin && t < tmax * 0.5f) {\n        t_out = t;",
            )
        } else {
            src.to_owned()
        }
    };
    assert_ne!(
        patch("intersect.cuh", prism_cuda::SOURCES[2].1),
        prism_cuda::SOURCES[2].1,
        "the patch no longer applies"
    );
    if gpu_or_skip().is_none() {
        return;
    }
    let mut gpu = CudaBackend::with_source_patch(patch).unwrap();
    let scene = random_scene(9, 0, 2000);
    let accel = Accel::build(&scene).unwrap();
    gpu.set_scene(&scene).unwrap();
    let rays: Vec<Ray> = random_rays(9, 20_000)
        .into_iter()
        .map(|r| Ray::segment(r.origin, r.dir, r.tmin, 8.0))
        .collect();
    let g = gpu_hits(&mut gpu, &rays);
    let reference: Vec<(f32, u32)> = core_hits(&accel, &rays)
        .iter()
        .map(|h| (h.t, h.prim))
        .collect();
    let counts = AgreementCounts::compare(&rays, &g, &reference);
    assert!(
        !counts.passed(),
        "a broken triangle test went unnoticed: {counts:?}"
    );
}

#[test]
fn the_disk_cache_is_used_and_survives_corruption() {
    if gpu_or_skip().is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("prism-cuda-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let options = CudaOptions {
        cache_dir: Some(dir.clone()),
        ..Default::default()
    };
    let a = CudaBackend::with_options(options.clone()).unwrap();
    assert!(!a.kernels_from_cache());
    let b = CudaBackend::with_options(options.clone()).unwrap();
    assert!(b.kernels_from_cache());
    assert_eq!(a.compiled_kernels().cubin, b.compiled_kernels().cubin);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let mut bytes = std::fs::read(&path).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0xff;
        std::fs::write(&path, bytes).unwrap();
    }
    let c = CudaBackend::with_options(options).unwrap();
    assert!(!c.kernels_from_cache(), "a corrupt entry was used");
    // A cache directory that cannot be created is not fatal.
    let blocked = dir.join("file");
    std::fs::write(&blocked, b"x").unwrap();
    let d = CudaBackend::with_options(CudaOptions {
        cache_dir: Some(blocked.join("sub")),
        ..Default::default()
    });
    assert!(d.is_ok());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn resources_and_resident_bench_report() {
    let Some(mut gpu) = gpu_or_skip() else { return };
    let res = gpu.kernel_resources().unwrap();
    // Every kernel of every scene kind, prism_camera_masks and the two refit
    // kernels.
    assert_eq!(res.len(), prism_cuda::KERNEL_NAMES.len() + 3);
    for r in &res {
        eprintln!("{r:?}");
        assert!(r.registers > 0 && r.blocks_per_sm > 0 && r.occupancy > 0.0);
    }
    let scene = random_scene(2, 0, 5000);
    let accel = Accel::build(&scene).unwrap();
    gpu.set_scene(&scene).unwrap();
    let rays = random_rays(2, 10_000);
    let b = gpu.intersect_resident_bench(&rays, 1 << 16, 3).unwrap();
    assert!(b.closest_mrays_per_s > 0.0 && b.occluded_mrays_per_s > 0.0);
    assert_same_hits("resident", &rays, &b.hits, &core_hits(&accel, &rays));
}
