//! The render kernels' tile candidate masks (shaders/camera_masks.wgsl) on a
//! real adapter (lavapipe in CI): the Whitted and AO images with masks are
//! the images that walk the tree, bit for bit, and the masks are what
//! answered (kernels patched to list nothing lose hits).
//!
//! Without an adapter these tests print why and pass, unless
//! `PRISM_REQUIRE_WGPU=1` (CI sets it): then they fail. Images are small:
//! lavapipe compiles each render pipeline in seconds.

mod common;

use prism_core::glam::Vec3;
use prism_core::{
    Backend, Camera, Image, Integrator, Material, NoProgress, PixelFormat, RenderSettings, Scene,
};
use prism_wgpu::{WgpuBackend, WgpuOptions};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::cell::RefCell;

const W: u32 = 64;
const H: u32 = 48;

/// Open a backend with `options` (see [`common::open_backend`]).
fn open_with(options: WgpuOptions) -> Option<WgpuBackend> {
    common::open_backend(options)
}

/// A backend whose `file` is rewritten by replacing `from` with `to` (the
/// patch is checked to apply), with `options`.
fn open_patched(
    file: &'static str,
    from: &'static str,
    to: &'static str,
    options: WgpuOptions,
) -> Option<WgpuBackend> {
    let (_, shipped) = prism_wgpu::shaders::SHADER_FILES
        .into_iter()
        .find(|(f, _)| *f == file)
        .expect("shader file");
    assert!(
        shipped.contains(from),
        "the patch of {file} no longer applies"
    );
    open_with(WgpuOptions {
        source_patch: Some(Box::new(move |f: &str, text: &str| {
            if f == file {
                text.replace(from, to)
            } else {
                text.to_string()
            }
        })),
        ..options
    })
}

/// Whitted with a second mirror bounce (the first takes the reflection
/// masks, the second walks the tree), and AO with jittered samples and
/// shadows (which take the shadow masks).
fn settings() -> [RenderSettings; 2] {
    [
        RenderSettings {
            integrator: Integrator::Whitted,
            spp: 1,
            max_depth: 2,
            ..Default::default()
        },
        RenderSettings {
            integrator: Integrator::Ao,
            spp: 3,
            ao_samples: 4,
            ao_distance: 1.5,
            ao_shadows: true,
            seed: 5,
            ..Default::default()
        },
    ]
}

/// Small spheres centred on the rays through pixel corners on and beside the
/// edges of the 32 x 32 pixel mask tiles of a `W` x `H` frame (so that their
/// silhouettes cross tile edges), a lone triangle across several tiles, a
/// ground sphere and a light among them.
fn tile_edges() -> (Scene, Camera) {
    let mut scene = Scene::new();
    let grey = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
    let red = scene.add_material(Material::lambertian(Vec3::new(0.8, 0.2, 0.1)));
    scene.add_sphere(Vec3::new(0.0, -1003.0, 0.0), 1000.0, grey);
    let aspect = W as f32 / H as f32;
    let mut k = 0;
    for py in [8u32, 31, 32, 40] {
        for px in [16u32, 31, 32, 48] {
            // The pinhole camera below: the image plane at z = -1, 2 high.
            let s = px as f32 / W as f32;
            let t = 1.0 - py as f32 / H as f32;
            let dir = Vec3::new((2.0 * s - 1.0) * aspect, 2.0 * t - 1.0, -1.0).normalize();
            let dist = 5.0 + (k % 3) as f32;
            let radius = 0.04 + 0.03 * (k % 4) as f32;
            scene.add_sphere(dir * dist, radius, if k % 2 == 0 { grey } else { red });
            k += 1;
        }
    }
    scene.add_triangle(
        Vec3::new(-2.0, -1.5, -6.0),
        Vec3::new(1.5, -1.2, -6.5),
        Vec3::new(-0.3, 0.9, -7.0),
        red,
    );
    scene.light.position = Vec3::new(0.5, 2.0, -3.0);
    let camera = Camera::look_at(Vec3::ZERO, Vec3::NEG_Z, Vec3::Y, 90.0);
    (scene, camera)
}

/// The linear `width` x `height` images of `settings()` of `scene` through
/// `camera`.
fn renders(
    gpu: &mut WgpuBackend,
    scene: &Scene,
    camera: &Camera,
    (width, height): (u32, u32),
) -> Vec<Vec<[f32; 4]>> {
    gpu.set_scene(scene).expect("set_scene");
    settings()
        .iter()
        .map(|s| {
            let mut image = Image::new(width, height, PixelFormat::LinearF32).expect("image");
            gpu.render(camera, s, &mut image, &NoProgress)
                .expect("render");
            image.linear().to_vec()
        })
        .collect()
}

/// Pixels that differ between two images (bits, not tolerances).
fn differ(a: &[[f32; 4]], b: &[[f32; 4]]) -> usize {
    a.iter()
        .zip(b)
        .filter(|(p, q)| p.map(f32::to_bits) != q.map(f32::to_bits))
        .count()
}

/// whitted19 (256 x 256) and the tile-edge scene, with the default 16 x 8
/// render tiles in one submission, and with 24 x 4 render tiles (across the
/// 32 x 32 mask tiles' edges) in submissions of a few rows each (which the
/// masks of the first one serve): Whitted and AO with masks are the images that walk the tree, bit
/// for bit (spheres and one lone triangle: no two primitives tie at the same
/// t), and the masks are what answered: kernels whose cones list nothing
/// lose the camera rays' hits, and on whitted19 (tiles that see one sphere
/// at a time) kernels whose reflection or shadow masks list nothing change
/// the mirror and shadow answers.
#[test]
fn masks_give_the_trees_pixels() {
    let whitted19 = prism::scenes::whitted19();
    let (edges, edges_camera) = tile_edges();
    for (tile, samples_per_submit) in [((16, 8), None), ((24, 4), Some(5_000))] {
        let options = || WgpuOptions {
            render_tile: tile,
            samples_per_submit,
            ..Default::default()
        };
        let Some(mut tree) = open_with(WgpuOptions {
            camera_masks: false,
            ..options()
        }) else {
            return;
        };
        let Some(mut masks) = open_with(options()) else {
            return;
        };
        let mut broken: Vec<(&str, WgpuBackend)> = [
            ("cones", ">= c.w {", ">= 2.0 {"),
            (
                "reflection",
                "if mirror_seen {",
                "if false && mirror_seen {",
            ),
            ("shadow", "if shadow_seen {", "if false && shadow_seen {"),
        ]
        .into_iter()
        .filter_map(|(what, from, to)| {
            open_patched("camera_masks.wgsl", from, to, options()).map(|gpu| (what, gpu))
        })
        .collect();
        // whitted19 at 256 x 256 (its tiles narrow enough for mirror masks).
        for (name, scene, camera, size) in [
            ("whitted19", &whitted19.scene, &whitted19.camera, (256, 256)),
            ("tile edges", &edges, &edges_camera, (W, H)),
        ] {
            let t = renders(&mut tree, scene, camera, size);
            let m = renders(&mut masks, scene, camera, size);
            for (k, integrator) in ["whitted", "ao"].iter().enumerate() {
                let d = differ(&t[k], &m[k]);
                eprintln!("{name} {integrator} tile {tile:?}: {d} pixels differ with masks");
                assert_eq!(
                    d, 0,
                    "{name} {integrator} tile {tile:?}: masks against the tree"
                );
            }
            for (what, gpu) in broken.iter_mut() {
                let b = renders(gpu, scene, camera, size);
                for (k, integrator) in ["whitted", "ao"].iter().enumerate() {
                    let d = differ(&t[k], &b[k]);
                    eprintln!(
                        "{name} {integrator} tile {tile:?}, {what} listing nothing: {d} pixels differ"
                    );
                    // The cones answer every camera ray; the reflection masks
                    // Whitted's first mirror rays (AO has none); the shadow
                    // masks the shadow rays of both, where whitted19's tiles
                    // see one sphere at a time (the tile-edge scene's tiles
                    // may see too many for a list). Where the AO frames run
                    // the persistent AO kernels (hardware adapters with
                    // subgroups, `WgpuOptions::persistent_ao`), their camera
                    // and shadow rays walk the tree and read no masks, so
                    // the AO frame has none to break.
                    let frame_reads_masks = k == 0 || !gpu.persistent_ao();
                    let used = match *what {
                        "cones" => frame_reads_masks,
                        "reflection" => name == "whitted19" && k == 0,
                        _ => name == "whitted19" && frame_reads_masks,
                    };
                    if used {
                        assert!(
                            d > 0,
                            "{name} {integrator} tile {tile:?}: the {what} masks were not used"
                        );
                    }
                }
            }
        }
    }
}

/// Frames that take no masks: a camera with a lens, the path integrator, a
/// scene of more than 64 primitives, and any frame of a backend with
/// `WgpuOptions::camera_masks` false. Kernels whose cones list nothing then
/// render the plain backend's pixels (the same kernels list nothing on a
/// frame with masks: `masks_give_the_trees_pixels`).
#[test]
fn frames_without_masks_walk_the_tree() {
    let (Some(mut plain), Some(mut broken), Some(mut broken_off)) = (
        open_with(WgpuOptions::default()),
        open_patched(
            "camera_masks.wgsl",
            ">= c.w {",
            ">= 2.0 {",
            WgpuOptions::default(),
        ),
        open_patched(
            "camera_masks.wgsl",
            ">= c.w {",
            ">= 2.0 {",
            WgpuOptions {
                camera_masks: false,
                ..Default::default()
            },
        ),
    ) else {
        return;
    };
    let (edges, pinhole) = tile_edges();
    let lens = Camera {
        aperture: 0.05,
        focus_distance: 6.0,
        ..pinhole
    };
    let whitted = settings()[0];
    let path = RenderSettings {
        integrator: Integrator::Path,
        spp: 2,
        max_depth: 3,
        seed: 3,
        ..Default::default()
    };
    let mut crowd = edges.clone();
    let grey = crowd.add_material(Material::lambertian(Vec3::splat(0.3)));
    for i in 0..60 {
        crowd.add_sphere(Vec3::new(-3.0 + 0.1 * i as f32, 2.5, -8.0), 0.04, grey);
    }
    for (what, scene, camera, s) in [
        ("lens", &edges, &lens, whitted),
        ("path", &edges, &pinhole, path),
        ("over 64 primitives", &crowd, &pinhole, whitted),
        ("switched off", &edges, &pinhole, whitted),
    ] {
        let render = |gpu: &mut WgpuBackend| {
            gpu.set_scene(scene).expect("set_scene");
            let mut image = Image::new(W, H, PixelFormat::LinearF32).expect("image");
            gpu.render(camera, &s, &mut image, &NoProgress)
                .expect("render");
            image.linear().to_vec()
        };
        let a = render(&mut plain);
        let b = if what == "switched off" {
            render(&mut broken_off)
        } else {
            render(&mut broken)
        };
        assert_eq!(differ(&a, &b), 0, "{what}: the frame took masks");
    }
}

/// A random frame: spheres (centre, radius), whether a ground sphere lies
/// under them, the eye, the point looked at, the vertical field of view in
/// degrees and the light.
type RandomFrame = (
    Vec<([f32; 3], f32)>,
    bool,
    [f32; 3],
    [f32; 3],
    f32,
    [f32; 3],
);

/// A random scene of 1 to 24 spheres (sometimes over a ground sphere) seen
/// from a random pinhole camera and lit from a random point.
fn random_frame() -> impl Strategy<Value = RandomFrame> {
    let sphere = ([-4.0f32..4.0, -2.0f32..2.0, -9.0f32..-2.0], 0.03f32..1.0);
    (
        prop::collection::vec(sphere, 1..24),
        any::<bool>(),
        [-1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0],
        [-3.0f32..3.0, -1.5f32..1.5, -7.0f32..-3.0],
        20.0f32..110.0,
        [-5.0f32..5.0, 0.0f32..6.0, -8.0f32..2.0],
    )
}

/// Random frames of spheres (random sizes, places, cameras, fields of view
/// and lights; 40 x 36 pixels, so that the 32 x 32 mask tiles are cut at the
/// image's edges): Whitted and AO with masks are the tree walk's images, bit
/// for bit.
#[test]
fn random_frames_with_masks_give_the_trees_pixels() {
    let (Some(tree), Some(masks)) = (
        open_with(WgpuOptions {
            camera_masks: false,
            ..Default::default()
        }),
        open_with(WgpuOptions::default()),
    ) else {
        return;
    };
    let backends = RefCell::new((tree, masks));
    // Few cases: each renders four frames on a software adapter.
    let mut runner = TestRunner::new(Config {
        cases: 12,
        // A runner built by hand knows no source file to persist failures
        // beside; a failure prints its case.
        failure_persistence: None,
        ..Config::default()
    });
    let verdict = runner.run(
        &random_frame(),
        |(spheres, ground, eye, target, fov, light)| {
            let mut scene = Scene::new();
            let grey = scene.add_material(Material::lambertian(Vec3::splat(0.6)));
            let red = scene.add_material(Material::lambertian(Vec3::new(0.8, 0.2, 0.1)));
            if ground {
                scene.add_sphere(Vec3::new(0.0, -1003.0, 0.0), 1000.0, grey);
            }
            for (k, (c, r)) in spheres.iter().enumerate() {
                scene.add_sphere(Vec3::from(*c), *r, if k % 2 == 0 { grey } else { red });
            }
            scene.light.position = Vec3::from(light);
            let camera = Camera::look_at(Vec3::from(eye), Vec3::from(target), Vec3::Y, fov);
            let mut b = backends.borrow_mut();
            let (tree, masks) = &mut *b;
            let t = renders(tree, &scene, &camera, (40, 36));
            let m = renders(masks, &scene, &camera, (40, 36));
            for (k, integrator) in ["whitted", "ao"].iter().enumerate() {
                prop_assert_eq!(
                    differ(&t[k], &m[k]),
                    0,
                    "{} pixels of {} differ",
                    integrator,
                    spheres.len()
                );
            }
            Ok(())
        },
    );
    if let Err(e) = verdict {
        panic!("{e}");
    }
}
