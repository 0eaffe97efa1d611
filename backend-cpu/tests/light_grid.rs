//! The wide traversals answer shadow rays from the light grid when the scene is
//! small; the frames are the binary BVH's (which never uses one), pixel for pixel.

mod common;

use common::pixels_wide_and_binary_differ;
use common::scenes::{rtiow, whitted19};
use glam::Vec3;
// ok: `common::scenes` names `crate::Error` and `crate::procedural`.
use common::procedural;
use prism_core::Error;
use prism_core::{Backend, Integrator, Material, RenderSettings};
use prism_cpu::CpuBackend;

#[test]
fn shadows_from_the_light_grid_are_the_trees() {
    let preset = whitted19();
    let mut cpu = CpuBackend::with_threads(2).expect("cpu");
    cpu.set_scene(&preset.scene).expect("scene");
    // whitted19's grid has cells that list candidates and cells too full to
    // (their shadow rays walk the tree).
    let grid = cpu.light_grid().expect("a small scene gets a light grid");
    let full = grid.cells.iter().filter(|c| c.count == u32::MAX).count();
    let listing = grid
        .cells
        .iter()
        .filter(|c| c.count > 0 && c.count != u32::MAX)
        .count();
    assert!(
        full > 0 && listing > 0,
        "{full} full cells, {listing} listing cells"
    );
    for integrator in [Integrator::Whitted, Integrator::Ao] {
        let settings = RenderSettings {
            integrator,
            spp: 2,
            ao_shadows: true,
            ..preset.settings
        };
        let differ = pixels_wide_and_binary_differ(&mut cpu, &preset, &settings, (128, 128));
        assert_eq!(differ, 0, "{integrator:?}: {differ} pixels differ");
    }
}

#[test]
fn large_scenes_get_no_light_grid() {
    let mut cpu = CpuBackend::with_threads(1).expect("cpu");
    cpu.set_scene(&rtiow().scene).expect("scene");
    assert!(cpu.light_grid().is_none());
    // One primitive too many for a grid.
    let mut scene = whitted19().scene;
    let m = scene.add_material(Material::lambertian(Vec3::ONE));
    while scene.primitive_count() <= prism_core::point_grid::POINT_GRID_MAX_PRIMS {
        scene.add_sphere(Vec3::new(scene.primitive_count() as f32, 5.0, 0.0), 0.1, m);
    }
    cpu.set_scene(&scene).expect("scene");
    assert!(cpu.light_grid().is_none());
}
