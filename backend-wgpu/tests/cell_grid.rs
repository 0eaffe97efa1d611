//! The render kernels' walk of core's cell grid (shaders/cell_grid.wgsl) on a
//! real adapter (lavapipe in CI) against prism-core.
//!
//! Without an adapter these tests print why and pass, unless
//! `PRISM_REQUIRE_WGPU=1` (CI sets it): then they fail. Images are small:
//! lavapipe compiles each render pipeline in seconds.

mod common;

use prism_core::glam::Vec3;
use prism_core::integrator::render_pixel;
use prism_core::rng::Pcg;
use prism_core::{
    Accel, Backend, Camera, Image, Integrator, Material, NoProgress, PixelFormat, RenderSettings,
    Scene,
};
use prism_wgpu::{WgpuBackend, WgpuOptions};

const W: u32 = 64;
const H: u32 = 36;

/// Open a backend (software adapters allowed, `patch` applied to the
/// shaders), or explain why not.
fn open(patch: Option<prism_wgpu::shaders::SourcePatch>) -> Option<WgpuBackend> {
    open_with(WgpuOptions {
        source_patch: patch,
        ..Default::default()
    })
}

/// Open a backend with `options` (see [`common::open_backend`]).
fn open_with(options: WgpuOptions) -> Option<WgpuBackend> {
    common::open_backend(options)
}

/// Short renders of each integrator.
fn settings(integrator: Integrator) -> RenderSettings {
    match integrator {
        Integrator::Path => RenderSettings {
            integrator,
            spp: 2,
            max_depth: 6,
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
            spp: 1,
            ao_samples: 4,
            ao_distance: 1.5,
            ao_shadows: true,
            seed: 5,
            ..Default::default()
        },
    }
}

/// Core's linear image (`render_pixel`, which walks the tree).
fn core_render(scene: &Scene, camera: &Camera, settings: &RenderSettings) -> Vec<Vec3> {
    let accel = Accel::build(scene).expect("scene");
    let params = settings.params(&accel, camera, W, H).expect("params");
    (0..H)
        .flat_map(|y| (0..W).map(move |x| (x, y)))
        .map(|(x, y)| render_pixel(&accel, &params, x, y).0)
        .collect()
}

/// The GPU's linear image.
fn gpu_render(gpu: &mut WgpuBackend, camera: &Camera, settings: &RenderSettings) -> Vec<[f32; 4]> {
    let mut image = Image::new(W, H, PixelFormat::LinearF32).expect("image");
    gpu.render(camera, settings, &mut image, &NoProgress)
        .expect("render");
    image.linear().to_vec()
}

/// The rule of the adapter tests' `compare_linear`: at least `share` of the
/// pixels within 1e-3 (relative to the pixel's brightness) of core's, and the
/// mean absolute error under `mean` (a rounding that flips one sample's
/// decision moves its pixel by up to the sample's value / spp).
fn compare(
    what: &str,
    gpu: &[[f32; 4]],
    core: &[Vec3],
    share: f64,
    mean: f64,
) -> Result<(), String> {
    assert_eq!(gpu.len(), core.len());
    let mut close = 0usize;
    let mut sum = 0.0f64;
    for (i, (g, c)) in gpu.iter().zip(core).enumerate() {
        if !g.iter().all(|v| v.is_finite()) || g[3] != 1.0 {
            return Err(format!("{what}: pixel {i} is {g:?}"));
        }
        let d = (Vec3::new(g[0], g[1], g[2]) - *c).abs().max_element();
        close += usize::from(d <= 1e-3 * (1.0 + c.max_element()));
        sum += d as f64;
    }
    let n = gpu.len() as f64;
    let (close_share, mae) = (close as f64 / n, sum / n);
    eprintln!(
        "{what}: {:.2}% of pixels within 1e-3, mean abs error {mae:.2e}",
        100.0 * close_share
    );
    if close_share < share || mae > mean {
        return Err(format!(
            "{what}: {:.2}% of pixels within 1e-3 (need {:.1}%), mean abs error {mae:.2e} (at most {mean:.0e})",
            100.0 * close_share,
            100.0 * share
        ));
    }
    Ok(())
}

/// The tolerances of the adapter tests' renders: Whitted has no random
/// decisions, path and AO more decisions per pixel.
fn tolerances(integrator: Integrator) -> (f64, f64) {
    match integrator {
        Integrator::Whitted => (0.99, 2e-3),
        _ => (0.95, 1e-2),
    }
}

/// A field of 300 small triangles and a few spheres over a large ground
/// triangle pair, with every material kind: a scene of both kinds where core
/// picks the grid, with two large primitives kept out of its cells.
fn triangle_field() -> (Scene, Camera) {
    let mut scene = Scene::new();
    let ground = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
    let kinds = [
        scene.add_material(Material::lambertian(Vec3::new(0.7, 0.2, 0.1))),
        scene.add_material(Material::metal(Vec3::new(0.8, 0.7, 0.5), 0.1)),
        scene.add_material(Material::dielectric(1.5)),
        scene.add_material(Material::emissive(Vec3::new(4.0, 3.0, 2.0))),
    ];
    let (a, b, c, d) = (
        Vec3::new(-40.0, 0.0, -40.0),
        Vec3::new(40.0, 0.0, -40.0),
        Vec3::new(40.0, 0.0, 40.0),
        Vec3::new(-40.0, 0.0, 40.0),
    );
    scene.add_triangle(a, c, b, ground);
    scene.add_triangle(a, d, c, ground);
    let mut rng = Pcg { state: 0x7217 };
    let mut r = || rng.next_f32();
    for i in 0..300 {
        let p = Vec3::new(r() * 12.0 - 6.0, r() * 0.8, r() * 12.0 - 6.0);
        let e1 = Vec3::new(r() - 0.5, r() * 0.5, r() - 0.5) * 0.6;
        let e2 = Vec3::new(r() - 0.5, r() * 0.5 + 0.1, r() - 0.5) * 0.6;
        scene.add_triangle(p, p + e1, p + e2, kinds[i % kinds.len()]);
    }
    for i in 0..12 {
        let p = Vec3::new(r() * 10.0 - 5.0, 0.25, r() * 10.0 - 5.0);
        scene.add_sphere(p, 0.25, kinds[i % kinds.len()]);
    }
    scene.light.position = Vec3::new(3.0, 6.0, 4.0);
    let camera = Camera::look_at(
        Vec3::new(7.0, 3.0, 8.0),
        Vec3::new(0.0, 0.3, 0.0),
        Vec3::Y,
        45.0,
    );
    (scene, camera)
}

/// Whether core builds a cell grid for `scene` and its cost model expects it
/// to beat the tree.
fn core_picks_the_grid(scene: &Scene) -> bool {
    let accel = Accel::build(scene).expect("scene");
    prism_core::cell_grid::CellGrid::build(accel.primitives())
        .is_some_and(|g| g.worthwhile(accel.nodes()))
}

/// rtiow (its ~490 spheres) and a field of triangles and spheres: the
/// module for each has the cell grid, and every integrator's render walking
/// it gives core's pixels (core walks the tree), within the adapter tests'
/// tolerances. whitted19, where core's cost model keeps the tree, keeps it.
#[test]
fn grid_renders_match_core_render_pixel() {
    let Some(mut gpu) = open(None) else {
        return;
    };
    // whitted19's 19 spheres in three rows: core's cost model keeps the tree.
    let whitted19 = prism::scenes::whitted19().scene;
    assert!(!core_picks_the_grid(&whitted19));
    gpu.set_scene(&whitted19).expect("set_scene");
    assert!(
        !gpu.module_config().cell_grid,
        "whitted19: the module walks a cell grid core's cost model turns down"
    );
    let rtiow = prism::scenes::rtiow();
    let (field, field_camera) = triangle_field();
    for (name, scene, camera) in [
        ("rtiow", &rtiow.scene, &rtiow.camera),
        ("triangle field", &field, &field_camera),
    ] {
        assert!(core_picks_the_grid(scene), "{name}: core keeps the tree");
        // The ground (rtiow: and the three big spheres) kept out of the cells.
        let accel = Accel::build(scene).expect("scene");
        let grid = prism_core::cell_grid::CellGrid::build(accel.primitives()).expect("grid");
        assert_eq!(
            grid.large.len(),
            if name == "rtiow" { 4 } else { 2 },
            "{name}"
        );
        gpu.set_scene(scene).expect("set_scene");
        assert!(
            gpu.module_config().cell_grid,
            "{name}: the module walks no cell grid"
        );
        for integrator in Integrator::ALL {
            let s = settings(integrator);
            let image = gpu_render(&mut gpu, camera, &s);
            let core = core_render(scene, camera, &s);
            let (share, mean) = tolerances(integrator);
            let what = format!("{name} {}", integrator.name());
            if let Err(e) = compare(&what, &image, &core, share, mean) {
                panic!("{e}");
            }
        }
    }
}

/// A grid walk that skips every listed primitive (only the large ones, the
/// ground and the three big spheres, are tested) compiles, runs, and loses
/// rtiow's small spheres, which the comparison with core catches: the grid is
/// what answers the render's closest hits (the unpatched walk passes in
/// `grid_renders_match_core_render_pixel`).
#[test]
fn a_grid_walk_that_skips_the_cells_is_caught_by_the_comparison() {
    let skip = |file: &str, text: &str| {
        if file == "cell_grid.wgsl" {
            text.replace(
                "            if first < end {",
                "            if first < first {",
            )
        } else {
            text.to_string()
        }
    };
    let (_, shipped) = prism_wgpu::shaders::SHADER_FILES
        .into_iter()
        .find(|(file, _)| *file == "cell_grid.wgsl")
        .expect("cell_grid.wgsl");
    assert_ne!(
        skip("cell_grid.wgsl", shipped),
        shipped,
        "the patch no longer applies"
    );
    let Some(mut gpu) = open(Some(Box::new(skip))) else {
        return;
    };
    let rtiow = prism::scenes::rtiow();
    gpu.set_scene(&rtiow.scene).expect("set_scene");
    let s = settings(Integrator::Whitted);
    let image = gpu_render(&mut gpu, &rtiow.camera, &s);
    let core = core_render(&rtiow.scene, &rtiow.camera, &s);
    let (share, mean) = tolerances(Integrator::Whitted);
    let verdict = compare(
        "rtiow whitted without the cells' primitives (expected to fail)",
        &image,
        &core,
        share,
        mean,
    );
    assert!(
        verdict.is_err(),
        "the cell grid was not what answered the closest hits"
    );
}

/// A frame whose camera stands too far away for its rays to walk rtiow's grid
/// ([`prism_core::cell_grid::CellGrid::walkable_from`]) runs the module
/// without the grid: the walk patched to skip the cells then renders the
/// unpatched backend's pixels, small spheres included, where a near frame
/// through the patched walk loses them.
#[test]
fn a_frame_too_far_away_to_walk_the_grid_walks_the_tree() {
    let skip = |file: &str, text: &str| {
        if file == "cell_grid.wgsl" {
            text.replace(
                "            if first < end {",
                "            if first < first {",
            )
        } else {
            text.to_string()
        }
    };
    let (Some(mut patched), Some(mut plain)) = (open(Some(Box::new(skip))), open(None)) else {
        return;
    };
    let rtiow = prism::scenes::rtiow();
    let accel = Accel::build(&rtiow.scene).expect("scene");
    let grid = prism_core::cell_grid::CellGrid::build(accel.primitives()).expect("rtiow's grid");
    // The small spheres' field from 5,000 units away, through a narrow lens.
    let at = Vec3::new(0.0, 0.2, 0.0);
    let far = Camera::look_at(
        at + Vec3::new(13.0, 2.0, 3.0).normalize() * 5000.0,
        at,
        Vec3::Y,
        0.12,
    );
    assert!(
        !grid.walkable_from(5000.0),
        "the far camera could walk the grid"
    );
    assert!(
        grid.walkable_from(20.0),
        "rtiow's camera could not walk the grid"
    );
    let s = settings(Integrator::Whitted);
    patched.set_scene(&rtiow.scene).expect("set_scene");
    plain.set_scene(&rtiow.scene).expect("set_scene");
    assert!(patched.module_config().cell_grid && plain.module_config().cell_grid);
    let (share, mean) = tolerances(Integrator::Whitted);
    let plain_far = gpu_render(&mut plain, &far, &s);
    let patched_far = gpu_render(&mut patched, &far, &s);
    let as_vec3 = |p: &[[f32; 4]]| {
        p.iter()
            .map(|q| Vec3::new(q[0], q[1], q[2]))
            .collect::<Vec<_>>()
    };
    if let Err(e) = compare(
        "far frame, patched walk against plain",
        &patched_far,
        &as_vec3(&plain_far),
        share,
        mean,
    ) {
        panic!("{e}");
    }
    // The far frame shows the small spheres: the walk that skips them would
    // have been caught had it run.
    let plain_near = gpu_render(&mut plain, &rtiow.camera, &s);
    let patched_near = gpu_render(&mut patched, &rtiow.camera, &s);
    assert!(
        compare(
            "near frame, patched walk against plain (expected to fail)",
            &patched_near,
            &as_vec3(&plain_near),
            share,
            mean
        )
        .is_err(),
        "the near frame did not walk the grid"
    );
}

/// `WgpuOptions::cell_grid` false: rtiow's module walks the tree.
#[test]
fn the_grid_can_be_turned_off() {
    let Some(mut gpu) = open_with(WgpuOptions {
        cell_grid: false,
        ..Default::default()
    }) else {
        return;
    };
    let rtiow = prism::scenes::rtiow();
    assert!(core_picks_the_grid(&rtiow.scene));
    gpu.set_scene(&rtiow.scene).expect("set_scene");
    assert!(!gpu.module_config().cell_grid);
}
