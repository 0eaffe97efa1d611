//! The wide traversals answer shadow rays from the light grid when the scene is
//! small; the frames are the binary BVH's (which never uses one), pixel for pixel.

use glam::Vec3;
use prism::scenes::{rtiow, whitted19};
use prism_core::{Backend, Image, Integrator, Material, NoProgress, PixelFormat, RenderSettings};
use prism_cpu::{CpuBackend, Traversal};

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
        let mut frames = Vec::new();
        for traversal in [Traversal::Wide, Traversal::Binary] {
            cpu.set_traversal(traversal).expect("traversal");
            let mut img = Image::new(128, 128, PixelFormat::LinearF32).expect("image");
            cpu.render(&preset.camera, &settings, &mut img, &NoProgress)
                .expect("render");
            frames.push(img.linear().to_vec());
        }
        let differ = frames[0]
            .iter()
            .zip(&frames[1])
            .filter(|(a, b)| a != b)
            .count();
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
