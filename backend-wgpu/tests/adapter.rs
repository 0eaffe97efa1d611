//! The wgpu backend on a real adapter (lavapipe in CI) against prism-core.
//!
//! Without an adapter these tests print why and pass, unless
//! `PRISM_REQUIRE_WGPU=1` (CI sets it): then they fail.
//! `PRISM_REQUIRE_LANE_REFILL=1` (set by `bench/gpu_final.sh` on the H100)
//! likewise makes the lane-refill test fail where refill is not in use.
//!
//! All tests share one backend (behind a mutex), so each pipeline is compiled
//! once per run: on lavapipe compiling a render pipeline takes seconds.

mod common;

use common::render_scene;
use prism_core::glam::Vec3;
use prism_core::integrator::render_pixel;
use prism_core::reference::AgreementCounts;
use prism_core::rng::Pcg;
use prism_core::{
    Accel, Backend, Camera, Error, Hit, Image, Integrator, Material, NoProgress, PixelFormat,
    Progress, Ray, RenderSettings, Scene, TimingSource,
};
use prism_wgpu::{WgpuBackend, WgpuOptions};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// Open a backend (see [`common::open_backend`]).
fn open(options: WgpuOptions) -> Option<WgpuBackend> {
    common::open_backend(options)
}

/// Run `f` with the shared backend; returns without calling it when there is no adapter.
fn with_backend(f: impl FnOnce(&mut WgpuBackend)) {
    static SHARED: OnceLock<Mutex<Option<WgpuBackend>>> = OnceLock::new();
    let shared = SHARED.get_or_init(|| Mutex::new(open(WgpuOptions::default())));
    // A failed test poisons the mutex; the backend itself stays usable.
    let mut guard = shared.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(b) = guard.as_mut() {
        f(b);
    }
}

/// Core's closest hits of `rays` as `(t, prim)`, the form `AgreementCounts` compares.
fn core_hits(accel: &Accel, rays: &[Ray]) -> Vec<(f32, u32)> {
    rays.iter()
        .map(|r| accel.intersect(r))
        .map(|h| (h.t, h.prim))
        .collect()
}

/// A uniform float in [lo, hi).
fn uniform(rng: &mut Pcg, lo: f32, hi: f32) -> f32 {
    lo + (hi - lo) * rng.next_f32()
}

fn random_vec(rng: &mut Pcg, lo: f32, hi: f32) -> Vec3 {
    Vec3::new(
        uniform(rng, lo, hi),
        uniform(rng, lo, hi),
        uniform(rng, lo, hi),
    )
}

/// A scene of `n` random spheres and triangles in a 10-unit box, with one of
/// each material kind, blends and a light.
fn random_scene(seed: u32, n: usize) -> Scene {
    random_scene_of(seed, n, 0.5, true)
}

/// [`random_scene`] with a share of spheres among the `n` primitives, with or
/// without its ground plane of two triangles.
fn random_scene_of(seed: u32, n: usize, sphere_share: f32, ground: bool) -> Scene {
    let mut rng = Pcg::for_path(seed, 7, 99);
    let mut scene = Scene::new();
    let mats = [
        scene.add_material(Material::lambertian(Vec3::new(0.7, 0.3, 0.2))),
        scene.add_material(Material::metal(Vec3::new(0.8, 0.8, 0.9), 0.2)),
        scene.add_material(Material::dielectric(1.5)),
        scene.add_material(Material::emissive(Vec3::new(4.0, 3.5, 3.0))),
        scene.add_material(Material::blend(
            Material::lambertian(Vec3::new(0.2, 0.6, 0.3)),
            Material::metal(Vec3::splat(0.9), 0.0),
            0.3,
        )),
    ];
    for i in 0..n {
        let m = mats[i % mats.len()];
        if rng.next_f32() < sphere_share {
            let c = random_vec(&mut rng, -5.0, 5.0);
            scene.add_sphere(c, uniform(&mut rng, 0.05, 0.8), m);
        } else {
            let a = random_vec(&mut rng, -5.0, 5.0);
            let b = a + random_vec(&mut rng, -1.5, 1.5);
            let c = a + random_vec(&mut rng, -1.5, 1.5);
            scene.add_triangle(a, b, c, m);
        }
    }
    if !ground {
        return scene;
    }
    // A ground plane of two triangles sharing an edge (watertightness).
    let g = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
    let (p0, p1, p2, p3) = (
        Vec3::new(-20.0, -6.0, -20.0),
        Vec3::new(20.0, -6.0, -20.0),
        Vec3::new(20.0, -6.0, 20.0),
        Vec3::new(-20.0, -6.0, 20.0),
    );
    scene.add_triangle(p0, p2, p1, g);
    scene.add_triangle(p0, p3, p2, g);
    scene
}

/// Rays from around and inside the scene, some with finite `tmin`/`tmax`, some
/// with axis-aligned or unnormalised directions.
fn random_rays(seed: u32, n: usize) -> Vec<Ray> {
    let mut rng = Pcg::for_path(seed, 3, 5);
    (0..n)
        .map(|i| {
            let origin = random_vec(&mut rng, -8.0, 8.0);
            let mut dir = random_vec(&mut rng, -1.0, 1.0);
            match i % 7 {
                0 => dir = Vec3::new(0.0, 0.0, if dir.z < 0.0 { -1.0 } else { 1.0 }),
                1 => dir *= 10.0,
                _ => {}
            }
            if dir == Vec3::ZERO {
                dir = Vec3::Y;
            }
            let (tmin, tmax) = if i % 5 == 0 {
                (0.5, uniform(&mut rng, 1.0, 10.0))
            } else {
                (0.0, f32::INFINITY)
            };
            Ray::segment(origin, dir, tmin, tmax)
        })
        .collect()
}

#[test]
fn intersect_and_occluded_match_core_on_random_scenes() {
    with_backend(|gpu| {
        // Mixed scenes, then one of spheres only and one of triangles only:
        // each kind runs a module specialised for it (ModuleConfig).
        let kinds = [
            (0.5, true, 3),
            (0.5, true, 3),
            (0.5, true, 3),
            (1.0, false, 1),
            (0.0, true, 2),
        ];
        for (seed, (sphere_share, ground, scene_kinds)) in (0u32..).zip(kinds) {
            let scene = random_scene_of(seed, 300, sphere_share, ground);
            let accel = Accel::build(&scene).expect("scene");
            gpu.set_scene(&scene).expect("set_scene");
            let config = gpu.module_config();
            assert_eq!(config.scene_kinds, scene_kinds, "scene {seed}");
            assert!(
                config.stack_entries >= accel.depth(),
                "scene {seed}: {config:?}"
            );
            let rays = random_rays(seed, 20_000);
            let mut hits = vec![Hit::MISS; rays.len()];
            gpu.intersect(&rays, &mut hits).expect("intersect");
            let reference = core_hits(&accel, &rays);
            let counts = AgreementCounts::compare(&rays, &hits, &reference);
            eprintln!("random scene {seed}: intersect vs core: {counts:?}");
            assert!(
                counts.passed(),
                "scene {seed}: {counts:?}; first mismatch ray {:?}",
                counts
                    .first_mismatch
                    .map(|i| (rays[i], hits[i], reference[i]))
            );
            // Barycentrics of triangle hits agree too.
            for (h, r) in hits.iter().zip(&rays) {
                let c = accel.intersect(r);
                if h.prim == c.prim && h.is_hit() {
                    assert!(
                        (h.u - c.u).abs() < 1e-3 && (h.v - c.v).abs() < 1e-3,
                        "barycentrics {h:?} vs {c:?}"
                    );
                }
            }

            let mut occluded = vec![false; rays.len()];
            gpu.occluded(&rays, &mut occluded).expect("occluded");
            let mut differ = 0;
            for (i, r) in rays.iter().enumerate() {
                let want = accel.occluded(r);
                if occluded[i] != want {
                    // Only a hit within rounding of tmin or tmax may flip.
                    let h = accel.intersect(&Ray::segment(
                        r.origin,
                        r.dir,
                        r.tmin * 0.999,
                        r.tmax * 1.001 + 1e-6,
                    ));
                    let at_end = h.is_hit()
                        && ((h.t - r.tmax).abs() <= 1e-4 * r.tmax
                            || (h.t - r.tmin).abs() <= 1e-4 * r.tmin.max(1e-3));
                    assert!(
                        at_end,
                        "ray {i} {r:?}: gpu occluded {} core {want}",
                        occluded[i]
                    );
                    differ += 1;
                }
            }
            eprintln!("random scene {seed}: occluded differs from core on {differ} boundary rays");
        }
    });
}

/// The scenes directory: `$PRISM_SCENES`, else `../shared/scenes` beside the
/// workspace. `None` when it holds no scenes; then the Embree test skips, unless
/// `PRISM_REQUIRE_SCENES=1`, which fails it here.
fn scenes_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("PRISM_SCENES")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/scenes"));
    let found = dir.join("bunny.obj").exists();
    assert!(
        found || !std::env::var("PRISM_REQUIRE_SCENES").is_ok_and(|v| v == "1"),
        "PRISM_REQUIRE_SCENES=1 but {} holds no bunny.obj",
        dir.display()
    );
    found.then_some(dir)
}

/// A scene of one mesh file of the shared scenes (grey Lambert, primitive ids in
/// file order), as the facade's conformance run loads it.
fn load_obj(path: &std::path::Path) -> Scene {
    let mesh = prism::mesh::load_mesh(path).expect("read obj");
    let (scene, _) =
        prism::mesh_scene(&mesh, Material::lambertian(Vec3::splat(0.5))).expect("mesh");
    scene
}

/// `intersect` against Embree's reference hits (DESIGN.md's rule) on every
/// eighth ray of each set (an eighth keeps lavapipe under a few seconds);
/// `PRISM_FULL_RAYS=1` traces them all.
#[test]
fn intersect_matches_embree_reference_hits() {
    let Some(dir) = scenes_dir() else {
        eprintln!(
            "SKIPPED: ../shared/scenes not found (set PRISM_SCENES to its path to run the Embree comparison)"
        );
        return;
    };
    let step = if std::env::var("PRISM_FULL_RAYS").is_ok_and(|v| v == "1") {
        1
    } else {
        8
    };
    with_backend(|gpu| {
        for mesh in ["bunny", "ogre"] {
            let scene = load_obj(&dir.join(format!("{mesh}.obj")));
            gpu.set_scene(&scene).expect("set_scene");
            for set in ["primary", "diffuse"] {
                let rays = prism::rays::read_rays(dir.join(format!("{mesh}.{set}.rays")))
                    .expect("read rays");
                let reference = prism::rays::read_hits(dir.join(format!("{mesh}.{set}.hits")))
                    .expect("read hits");
                assert_eq!(rays.len(), reference.len());
                let rays: Vec<Ray> = rays.into_iter().step_by(step).collect();
                let reference: Vec<(f32, u32)> = reference.into_iter().step_by(step).collect();
                let mut hits = vec![Hit::MISS; rays.len()];
                let stats = gpu.intersect(&rays, &mut hits).expect("intersect");
                let counts = AgreementCounts::compare(&rays, &hits, &reference);
                eprintln!(
                    "{mesh}.{set} (every {step}th ray): {} rays, {} match, {} ties, {} mismatches; {:.2} Mrays/s ({:?})",
                    counts.total,
                    counts.matches,
                    counts.ties,
                    counts.mismatches,
                    stats.mrays_per_s(),
                    stats.timing
                );
                assert!(
                    counts.passed(),
                    "{mesh}.{set}: {counts:?}; first mismatch: ray {:?} gpu {:?} embree {:?}",
                    counts.first_mismatch.map(|i| rays[i]),
                    counts.first_mismatch.map(|i| hits[i]),
                    counts.first_mismatch.map(|i| reference[i])
                );
            }
        }
    });
}

/// Core's linear image and ray count.
fn core_render(
    scene: &Scene,
    camera: &Camera,
    settings: &RenderSettings,
    w: u32,
    h: u32,
) -> (Vec<Vec3>, u64) {
    let accel = Accel::build(scene).expect("scene");
    let params = settings.params(&accel, camera, w, h).expect("params");
    let mut rays = 0u64;
    let mut pixels = Vec::with_capacity((w * h) as usize);
    for y in 0..h {
        for x in 0..w {
            let (c, r) = render_pixel(&accel, &params, x, y);
            pixels.push(c);
            rays += r as u64;
        }
    }
    (pixels, rays)
}

/// Per-pixel comparison of a GPU render with core's.
///
/// Both trace the same paths (same PCG streams, same operation order), so a
/// pixel differs only by float rounding: FMA contraction, and the GPU's own
/// sqrt, division, sin/cos and pow, each within a few ulps. Those keep a
/// sample within `1e-3` (relative to the pixel's brightness, the colour scale
/// of these scenes being about 1). Rarely a rounding flips a decision (Russian
/// roulette, Fresnel, a grazing hit, a shadow-ray boundary) and that one
/// sample takes another path: its pixel then moves by up to the sample's
/// value / spp. So: at least `share` of the pixels within 1e-3, and the mean
/// absolute error under `mean`.
fn compare_linear(
    what: &str,
    gpu: &[[f32; 4]],
    core: &[Vec3],
    share: f64,
    mean: f64,
) -> Result<(), String> {
    assert_eq!(gpu.len(), core.len());
    let mut close = 0usize;
    let mut sum = 0.0f64;
    let mut worst = (0.0f32, 0usize);
    for (i, (g, c)) in gpu.iter().zip(core).enumerate() {
        if !g.iter().all(|v| v.is_finite()) || g[3] != 1.0 {
            return Err(format!("{what}: pixel {i} is {g:?}"));
        }
        let d = (Vec3::new(g[0], g[1], g[2]) - *c).abs().max_element();
        if d <= 1e-3 * (1.0 + c.max_element()) {
            close += 1;
        }
        sum += d as f64;
        if d > worst.0 {
            worst = (d, i);
        }
    }
    let n = gpu.len() as f64;
    let (close_share, mae) = (close as f64 / n, sum / n);
    eprintln!(
        "{what}: {:.2}% of pixels within 1e-3, mean abs error {mae:.2e}, worst {:.3} at pixel {}",
        100.0 * close_share,
        worst.0,
        worst.1
    );
    if close_share < share {
        return Err(format!(
            "{what}: only {:.2}% of pixels within 1e-3 (need {:.1}%)",
            100.0 * close_share,
            100.0 * share
        ));
    }
    if mae > mean {
        return Err(format!("{what}: mean abs error {mae} > {mean}"));
    }
    Ok(())
}

const W: u32 = 64;
const H: u32 = 48;

fn settings(integrator: Integrator) -> RenderSettings {
    match integrator {
        Integrator::Path => RenderSettings {
            integrator,
            spp: 4,
            max_depth: 8,
            seed: 11,
            ..Default::default()
        },
        Integrator::Whitted => RenderSettings {
            integrator,
            spp: 1,
            max_depth: 2,
            ..Default::default()
        },
        Integrator::Ao => RenderSettings {
            integrator,
            spp: 2,
            ao_samples: 4,
            ao_distance: 1.5,
            ao_shadows: true,
            seed: 5,
            ..Default::default()
        },
    }
}

#[test]
fn renders_match_core_render_pixel() {
    let (scene, camera) = render_scene();
    with_backend(|gpu| {
        gpu.set_scene(&scene).expect("set_scene");
        for integrator in Integrator::ALL {
            let s = settings(integrator);
            let mut image = Image::new(W, H, PixelFormat::LinearF32).expect("image");
            let stats = gpu
                .render(&camera, &s, &mut image, &NoProgress)
                .expect("render");
            let (core, core_rays) = core_render(&scene, &camera, &s, W, H);
            // Whitted has no random decisions: only grazing hits and shadow
            // boundaries may flip. Path and AO have more decisions per pixel.
            let (share, mean) = match integrator {
                Integrator::Whitted => (0.99, 2e-3),
                _ => (0.95, 1e-2),
            };
            if let Err(e) = compare_linear(integrator.name(), image.linear(), &core, share, mean) {
                panic!("{e}");
            }
            let ray_diff = (stats.rays as f64 - core_rays as f64).abs() / core_rays as f64;
            eprintln!(
                "{}: {} rays on the GPU, {} in core; {:?}",
                integrator.name(),
                stats.rays,
                core_rays,
                stats.timing
            );
            assert!(
                ray_diff < 0.01,
                "{}: ray count {} vs core {}",
                integrator.name(),
                stats.rays,
                core_rays
            );
            assert!(stats.trace > std::time::Duration::ZERO && stats.total >= stats.trace);
        }
    });
}

#[test]
fn srgb8_output_is_core_encoding() {
    let (scene, camera) = render_scene();
    with_backend(|gpu| {
        gpu.set_scene(&scene).expect("set_scene");
        let s = settings(Integrator::Whitted);
        let mut image = Image::new(W, H, PixelFormat::Srgba8).expect("image");
        gpu.render(&camera, &s, &mut image, &NoProgress)
            .expect("render");
        let (core, _) = core_render(&scene, &camera, &s, W, H);
        let mut off_by_more = 0;
        for (g, c) in image.rgba8().iter().zip(&core) {
            let want = prism_core::image::encode_srgba8(*c);
            assert_eq!(g[3], 255);
            // The shader's linear colour may differ from core's in its last
            // bits, which can move a level by one; more means another colour.
            if g.iter().zip(want).any(|(a, b)| a.abs_diff(b) > 1) {
                off_by_more += 1;
            }
        }
        eprintln!(
            "srgb8: {off_by_more} of {} pixels differ by more than 1/255",
            W * H
        );
        assert!(off_by_more as f64 <= 0.01 * (W * H) as f64);
        // Against the device's own linear frame the bytes are core's exactly:
        // the shader encodes through core's Srgb8Table.
        let mut linear = Image::new(W, H, PixelFormat::LinearF32).expect("image");
        gpu.render(&camera, &s, &mut linear, &NoProgress)
            .expect("render");
        for (i, (g, l)) in image.rgba8().iter().zip(linear.linear()).enumerate() {
            let want = prism_core::image::encode_srgba8(Vec3::new(l[0], l[1], l[2]));
            assert_eq!(*g, want, "pixel {i}: linear {l:?}");
        }
    });
}

/// Lane refill (hardware adapters with subgroups) gives the plain kernels'
/// results bit for bit, on mixed, sphere-only and triangle-only scenes, with
/// batches several times larger than the GPU holds at once.
#[test]
fn lane_refill_gives_the_plain_kernels_results() {
    let Some(mut refill) = open(WgpuOptions::default()) else {
        return;
    };
    if !refill.lane_refill() {
        // The H100 run sets PRISM_REQUIRE_LANE_REFILL=1: there a refill that
        // silently turned itself off would otherwise read as a pass.
        assert!(
            !std::env::var("PRISM_REQUIRE_LANE_REFILL").is_ok_and(|v| v == "1"),
            "PRISM_REQUIRE_LANE_REFILL=1 but lane refill is not used on {} (subgroup max size {})",
            refill.adapter(),
            refill.subgroup_max_size()
        );
        eprintln!(
            "SKIPPED: lane refill is not used on {} (software adapter or no subgroup operations); \
             set PRISM_REQUIRE_LANE_REFILL=1 to fail instead",
            refill.adapter()
        );
        return;
    }
    let mut plain = open(WgpuOptions {
        lane_refill: false,
        ..Default::default()
    })
    .expect("second backend");
    for (seed, (sphere_share, ground)) in (10u32..).zip([(0.5, true), (1.0, false), (0.0, true)]) {
        let scene = random_scene_of(seed, 2000, sphere_share, ground);
        refill.set_scene(&scene).expect("set_scene");
        plain.set_scene(&scene).expect("set_scene");
        let rays = random_rays(seed, 1 << 21);
        let mut a = vec![Hit::MISS; rays.len()];
        let mut b = vec![Hit::MISS; rays.len()];
        refill.intersect(&rays, &mut a).expect("intersect");
        plain.intersect(&rays, &mut b).expect("intersect");
        let differ = a
            .iter()
            .zip(&b)
            .filter(|(x, y)| bytemuck::bytes_of(*x) != bytemuck::bytes_of(*y))
            .count();
        assert_eq!(
            differ, 0,
            "scene {seed}: closest hits differ on {differ} rays"
        );
        let mut oa = vec![false; rays.len()];
        let mut ob = vec![false; rays.len()];
        refill.occluded(&rays, &mut oa).expect("occluded");
        plain.occluded(&rays, &mut ob).expect("occluded");
        assert!(oa == ob, "scene {seed}: occlusion differs");
        let hits = a.iter().filter(|h| h.is_hit()).count();
        eprintln!(
            "scene {seed}: {} rays, {hits} hits, refill == plain",
            rays.len()
        );
    }
}

/// Batch workgroups that leave a subgroup part-filled (8 lanes, or 40 = 32 + 8
/// on 32-wide hardware) trace every ray as core does. Lane refill waits for
/// half a subgroup's width of idle lanes, which such a subgroup never has, so
/// the backend must not use it there (it would never finish the batch).
#[test]
fn batch_workgroups_that_part_fill_a_subgroup_finish_and_agree_with_core() {
    for batch_workgroup in [8, 40] {
        let Some(mut gpu) = open(WgpuOptions {
            batch_workgroup,
            ..Default::default()
        }) else {
            return;
        };
        eprintln!(
            "batch_workgroup {batch_workgroup}: lane refill {}, subgroup max size {}",
            gpu.lane_refill(),
            gpu.subgroup_max_size()
        );
        assert!(
            !gpu.lane_refill() || batch_workgroup.is_multiple_of(gpu.subgroup_max_size()),
            "lane refill on {batch_workgroup}-lane workgroups part-fills {}-lane subgroups",
            gpu.subgroup_max_size()
        );
        let scene = random_scene_of(21, 500, 0.5, true);
        let accel = Accel::build(&scene).expect("scene");
        gpu.set_scene(&scene).expect("set_scene");
        let rays = random_rays(21, 50_000);
        let mut hits = vec![Hit::MISS; rays.len()];
        gpu.intersect(&rays, &mut hits).expect("intersect");
        let counts = AgreementCounts::compare(&rays, &hits, &core_hits(&accel, &rays));
        assert!(
            counts.passed(),
            "batch_workgroup {batch_workgroup}: {counts:?}"
        );
        let mut occ = vec![false; rays.len()];
        gpu.occluded(&rays, &mut occ).expect("occluded");
        let expected: Vec<bool> = rays.iter().map(|r| accel.occluded(r)).collect();
        assert!(
            occ == expected,
            "batch_workgroup {batch_workgroup}: occlusion differs"
        );
    }
}

/// A backend with tiny chunks gives the same bytes as one dispatch per call.
#[test]
fn chunked_calls_give_the_same_results() {
    let Some(mut small) = open(WgpuOptions {
        max_chunk_bytes: Some(4096),
        samples_per_submit: Some(500),
        ..Default::default()
    }) else {
        return;
    };
    let scene = random_scene(4, 200);
    let rays = random_rays(9, 3000);
    let (render, camera) = render_scene();
    let s = settings(Integrator::Whitted);
    let run = |gpu: &mut WgpuBackend| {
        gpu.set_scene(&scene).expect("set_scene");
        let mut hits = vec![Hit::MISS; rays.len()];
        gpu.intersect(&rays, &mut hits).expect("intersect");
        let mut occ = vec![false; rays.len()];
        gpu.occluded(&rays, &mut occ).expect("occluded");
        gpu.set_scene(&render).expect("set_scene");
        let mut image = Image::new(W, H, PixelFormat::Srgba8).expect("image");
        let stats = gpu
            .render(&camera, &s, &mut image, &NoProgress)
            .expect("render");
        (hits, occ, image, stats.rays)
    };
    assert_eq!(small.max_chunk_bytes(), 4096);
    let chunked = run(&mut small);
    // A row wider than the binding cap is refused with the limit named.
    let mut wide = Image::new(512, 2, PixelFormat::LinearF32).expect("image");
    match small.render(&camera, &s, &mut wide, &NoProgress) {
        Err(Error::DeviceLimit {
            needed: 8192,
            limit: 4096,
            ..
        }) => {}
        other => panic!("expected DeviceLimit, got {other:?}"),
    }
    drop(small);
    with_backend(|gpu| {
        let whole = run(gpu);
        assert!(chunked.0 == whole.0, "intersect differs when chunked");
        assert!(chunked.1 == whole.1, "occluded differs when chunked");
        assert!(chunked.2 == whole.2, "render differs when chunked");
        assert_eq!(chunked.3, whole.3, "ray count differs when chunked");
    });
}

/// Without timestamp queries the stage times come from the host clock, and
/// renders are not pipelined.
#[test]
fn host_clock_timing_without_timestamps() {
    let Some(mut gpu) = open(WgpuOptions {
        timestamps: false,
        max_chunk_bytes: Some(4096),
        ..Default::default()
    }) else {
        return;
    };
    assert_eq!(gpu.timing_source(), TimingSource::HostClock);
    let (scene, camera) = render_scene();
    gpu.set_scene(&scene).expect("set_scene");
    let mut image = Image::new(W, H, PixelFormat::Srgba8).expect("image");
    let stats = gpu
        .render(
            &camera,
            &settings(Integrator::Whitted),
            &mut image,
            &NoProgress,
        )
        .expect("render");
    assert_eq!(stats.timing, TimingSource::HostClock);
    assert!(stats.trace > std::time::Duration::ZERO && stats.total >= stats.trace);
    let (core, _) = core_render(&scene, &camera, &settings(Integrator::Whitted), W, H);
    assert_eq!(image.rgba8().len(), core.len());
    let off = image
        .rgba8()
        .iter()
        .zip(&core)
        .filter(|(g, c)| {
            g.iter()
                .zip(prism_core::image::encode_srgba8(**c))
                .any(|(a, b)| a.abs_diff(b) > 1)
        })
        .count();
    assert!(off as f64 <= 0.01 * (W * H) as f64, "{off} pixels off");
}

/// After the device is lost every call says so and asks for a new backend;
/// nothing panics.
#[test]
fn a_lost_device_is_reported_not_panicked() {
    let Some(mut gpu) = open(WgpuOptions::default()) else {
        return;
    };
    let (scene, camera) = render_scene();
    gpu.set_scene(&scene).expect("set_scene");
    gpu.lose_device_for_testing();
    let ray = Ray::new(Vec3::new(0.0, 1.0, 5.0), Vec3::NEG_Z);
    let lost = |r: Result<prism_core::RenderStats, Error>| match r {
        Err(Error::Device { message, .. }) => {
            assert!(message.contains("create a new WgpuBackend"), "{message}")
        }
        other => panic!("expected a lost-device error, got {other:?}"),
    };
    lost(gpu.intersect(&[ray], &mut [Hit::MISS]));
    lost(gpu.occluded(&[ray], &mut [false]));
    let mut image = Image::new(8, 8, PixelFormat::Srgba8).expect("image");
    lost(gpu.render(&camera, &RenderSettings::default(), &mut image, &NoProgress));
    lost(gpu.set_scene(&scene));
}

/// Cancels after the first progress report, and keeps the last one.
#[derive(Default)]
struct CancelAfterFirst(Mutex<Option<(u64, u64)>>);

impl CancelAfterFirst {
    /// The last `(done, total)` reported, `(0, 0)` if none.
    fn last(&self) -> (u64, u64) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .unwrap_or((0, 0))
    }
}

impl Progress for CancelAfterFirst {
    fn advance(&self, done: u64, total: u64) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some((done, total));
    }
    fn cancelled(&self) -> bool {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }
}

#[test]
fn bad_input_is_refused_and_the_backend_stays_usable() {
    with_backend(|gpu| {
        let info = gpu.info();
        assert_eq!(info.name, "wgpu");
        assert!(info.max_buffer_bytes > 0);
        eprintln!(
            "adapter: {} (software {}), timing {:?}",
            info.device,
            info.software,
            gpu.timing_source()
        );
        if info.device.contains("llvmpipe") {
            assert!(info.software);
            assert_eq!(gpu.timing_source(), TimingSource::TimestampQueries);
        }
        let (scene, camera) = render_scene();
        gpu.set_scene(&scene).expect("set_scene");
        let ray = Ray::new(Vec3::new(0.0, 1.0, 5.0), Vec3::NEG_Z);
        let mut one = [Hit::MISS];
        assert!(matches!(
            gpu.intersect(&[ray, ray], &mut one),
            Err(Error::LengthMismatch { .. })
        ));
        let bad = Ray::new(Vec3::new(f32::NAN, 0.0, 0.0), Vec3::X);
        assert!(matches!(
            gpu.intersect(&[ray, bad], &mut [Hit::MISS; 2]),
            Err(Error::InvalidRay { index: 1, .. })
        ));
        assert!(matches!(
            gpu.occluded(&[Ray::new(Vec3::ZERO, Vec3::ZERO)], &mut [false]),
            Err(Error::InvalidRay { .. })
        ));
        gpu.intersect(&[], &mut []).expect("empty batch");
        let mut image = Image::new(8, 8, PixelFormat::LinearF32).expect("image");
        let zero_spp = RenderSettings {
            spp: 0,
            ..Default::default()
        };
        assert!(matches!(
            gpu.render(&camera, &zero_spp, &mut image, &NoProgress),
            Err(Error::Setting { field: "spp", .. })
        ));
        let mut empty = Scene::new();
        empty.add_material(Material::lambertian(Vec3::ONE));
        assert!(matches!(gpu.set_scene(&empty), Err(Error::EmptyScene)));
        // The previous scene is still there after a refused one.
        gpu.intersect(&[ray], &mut one).expect("intersect");
        assert!(one[0].is_hit());
    });
}

/// A one-sphere tree has an absent child at +inf; rays open far behind them
/// with every direction component negative or -0 miss it as core does, and a
/// ray open to -inf is refused.
#[test]
fn rays_open_behind_them_agree_with_core() {
    let Some(mut gpu) = open(WgpuOptions::default()) else {
        return;
    };
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::ONE));
    scene.add_sphere(Vec3::ZERO, 1.0, m);
    let accel = Accel::build(&scene).expect("accel");
    gpu.set_scene(&scene).expect("set_scene");
    let mut rays = Vec::new();
    for origin in [Vec3::splat(5.0), Vec3::splat(-5.0)] {
        for dir in [Vec3::NEG_ONE, Vec3::new(-0.0, -1.0, -0.0)] {
            for tmin in [-f32::MAX, -1.0, 0.0] {
                rays.push(Ray::segment(origin, dir, tmin, f32::INFINITY));
            }
        }
    }
    let mut hits = vec![Hit::MISS; rays.len()];
    gpu.intersect(&rays, &mut hits).expect("intersect");
    // The same primitives (the sphere's t may differ in its last bits: WGSL's
    // division and square root are not correctly rounded).
    let reference = core_hits(&accel, &rays);
    let counts = AgreementCounts::compare(&rays, &hits, &reference);
    assert!(counts.passed(), "{counts:?}");
    assert!(hits.iter().any(Hit::is_hit) && hits.iter().any(|h| !h.is_hit()));
    let open_ray = Ray::segment(Vec3::splat(5.0), Vec3::NEG_ONE, f32::NEG_INFINITY, 1.0);
    assert!(matches!(
        gpu.intersect(&[open_ray], &mut hits[..1]),
        Err(Error::InvalidRay { index: 0, .. })
    ));
}

/// A render split into many submissions (one row each) stops at the first
/// `cancelled()` after progress, returns `Cancelled`, and leaves the backend
/// usable.
#[test]
fn cancellation_stops_a_render_between_submissions() {
    const SIDE: u32 = 128;
    const SPP: u32 = 32;
    let Some(mut gpu) = open(WgpuOptions {
        samples_per_submit: Some(u64::from(SIDE * SPP)),
        ..WgpuOptions::default()
    }) else {
        return;
    };
    let (scene, camera) = render_scene();
    gpu.set_scene(&scene).expect("set_scene");
    let settings = RenderSettings {
        integrator: Integrator::Ao,
        spp: SPP,
        ..Default::default()
    };
    let mut image = Image::new(SIDE, SIDE, PixelFormat::Srgba8).expect("image");
    let cancel = CancelAfterFirst::default();
    assert_eq!(
        gpu.render(&camera, &settings, &mut image, &cancel),
        Err(Error::Cancelled)
    );
    // It stopped after the first submission of many, not at the end.
    let (done, total) = cancel.last();
    assert!(
        done > 0 && done < total,
        "progress {done} of {total} when cancelled"
    );
    // Not cancelled, the same render finishes, with the sky and the spheres in it.
    gpu.render(&camera, &settings, &mut image, &NoProgress)
        .expect("render after a cancelled one");
    let lit = image.rgba8().iter().filter(|p| p[..3] != [0, 0, 0]).count();
    assert!(lit > image.pixel_count() / 2, "{lit} lit pixels");
}

#[test]
fn calls_before_set_scene_say_no_scene() {
    let Some(mut gpu) = open(WgpuOptions::default()) else {
        return;
    };
    let mut image = Image::new(4, 4, PixelFormat::LinearF32).expect("image");
    let camera = Camera::look_at(Vec3::Z, Vec3::ZERO, Vec3::Y, 40.0);
    assert_eq!(
        gpu.render(&camera, &RenderSettings::default(), &mut image, &NoProgress),
        Err(Error::NoScene)
    );
    assert_eq!(
        gpu.intersect(&[Ray::new(Vec3::ZERO, Vec3::X)], &mut [Hit::MISS]),
        Err(Error::NoScene)
    );
    assert_eq!(
        gpu.occluded(&[Ray::new(Vec3::ZERO, Vec3::X)], &mut [false]),
        Err(Error::NoScene)
    );
}

#[test]
fn a_shader_that_does_not_compile_names_its_file() {
    let patch: prism_wgpu::SourcePatch = Box::new(|file, text| {
        if file == "rng.wgsl" {
            text.replace("fn pcg_hash(", "fn pcg_hash(oops")
        } else {
            text.to_string()
        }
    });
    match WgpuBackend::new(WgpuOptions {
        allow_software: true,
        source_patch: Some(patch),
        ..Default::default()
    }) {
        Err(Error::Compile { log, .. }) => {
            eprintln!("compile error as reported:\n{log}");
            assert!(
                log.contains("rng.wgsl:"),
                "the log does not name rng.wgsl: {log}"
            );
        }
        Err(Error::BackendUnavailable { .. }) => {
            // No adapter: `open` reports the skip (or fails under PRISM_REQUIRE_WGPU=1).
            let _ = open(WgpuOptions::default());
        }
        Err(e) => panic!("expected a compile error, got {e}"),
        Ok(_) => panic!("a broken shader compiled"),
    }
}

/// A mirror that drifts from core (one PCG constant changed) compiles, runs,
/// and is caught by the per-pixel comparison with core.
#[test]
fn a_drifted_mirror_is_caught_by_the_comparison() {
    let patch: prism_wgpu::SourcePatch = Box::new(|file, text| {
        if file == "rng.wgsl" {
            text.replacen("277803737u", "277803739u", 1)
        } else {
            text.to_string()
        }
    });
    let Some(mut gpu) = open(WgpuOptions {
        source_patch: Some(patch),
        ..Default::default()
    }) else {
        return;
    };
    let (scene, camera) = render_scene();
    gpu.set_scene(&scene).expect("set_scene");
    let s = settings(Integrator::Ao);
    let mut image = Image::new(W, H, PixelFormat::LinearF32).expect("image");
    gpu.render(&camera, &s, &mut image, &NoProgress)
        .expect("render");
    let (core, _) = core_render(&scene, &camera, &s, W, H);
    let verdict = compare_linear(
        "drifted ao (expected to fail)",
        image.linear(),
        &core,
        0.95,
        1e-2,
    );
    assert!(verdict.is_err(), "a drifted PCG mirror was not noticed");
}

/// The Whitted shadow rays of the test scene (eight primitives) are answered
/// from the light grid: a grid whose blocking hits are ignored compiles, runs,
/// and loses shadows that the comparison with core catches (the unpatched
/// grid passes it in `renders_match_core_render_pixel`).
#[test]
fn a_light_grid_that_never_blocks_is_caught_by_the_comparison() {
    let unblocked = |file: &str, text: &str| {
        if file == "point_grid.wgsl" {
            text.replace(
                "ray.tmin, ray.tmax).hit {\n            return 1;",
                "ray.tmin, ray.tmax).hit {\n            return 0;",
            )
        } else {
            text.to_string()
        }
    };
    let (_, shipped) = prism_wgpu::shaders::SHADER_FILES
        .into_iter()
        .find(|(file, _)| *file == "point_grid.wgsl")
        .expect("point_grid.wgsl");
    assert_ne!(
        unblocked("point_grid.wgsl", shipped),
        shipped,
        "the patch no longer applies"
    );
    let Some(mut gpu) = open(WgpuOptions {
        source_patch: Some(Box::new(unblocked)),
        ..Default::default()
    }) else {
        return;
    };
    let (scene, camera) = render_scene();
    gpu.set_scene(&scene).expect("set_scene");
    let s = settings(Integrator::Whitted);
    let mut image = Image::new(W, H, PixelFormat::LinearF32).expect("image");
    gpu.render(&camera, &s, &mut image, &NoProgress)
        .expect("render");
    let (core, _) = core_render(&scene, &camera, &s, W, H);
    let verdict = compare_linear(
        "whitted without blocking hits from the grid (expected to fail)",
        image.linear(),
        &core,
        0.99,
        2e-3,
    );
    assert!(
        verdict.is_err(),
        "the light grid was not what answered the shadow rays"
    );
}
