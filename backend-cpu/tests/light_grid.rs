//! The wide traversals answer shadow rays from the light grid when the scene is
//! small; the frames are the binary BVH's (which never uses one), pixel for pixel.

use glam::Vec3;
use prism_core::rng::Pcg;
use prism_core::{
    Backend, Camera, Image, Integrator, Material, NoProgress, PixelFormat, PointLight,
    RenderSettings, Scene, Sky,
};
use prism_cpu::{CpuBackend, Traversal};

/// A lamp above a ground sphere, 30 spheres and a triangle, with a row of ten
/// spheres leaving the lamp (cells with more candidates than slots, whose
/// shadow rays walk the tree).
fn lamp_scene() -> Scene {
    let mut s = Scene::new();
    s.sky = Sky::constant(Vec3::new(0.4, 0.6, 0.9));
    let lamp = Vec3::new(0.0, 2.0, 0.0);
    s.light = PointLight {
        position: lamp,
        color: Vec3::ONE,
    };
    let grey = s.add_material(Material::lambertian(Vec3::splat(0.5)));
    let red = s.add_material(Material::lambertian(Vec3::new(0.8, 0.2, 0.1)));
    s.add_sphere(Vec3::new(0.0, -1001.0, 0.0), 1000.0, grey);
    let row = Vec3::new(0.3, -1.0, -0.4).normalize();
    for k in 0..10 {
        s.add_sphere(lamp + row * (0.4 + 0.25 * k as f32), 0.1, red);
    }
    let mut rng = Pcg { state: 0x1A4B };
    let mut r = move || rng.next_f32();
    for _ in 0..30 {
        let c = Vec3::new(r() * 4.0 - 2.0, r() * 1.5 - 1.0, r() * 4.0 - 2.0);
        s.add_sphere(c, 0.05 + 0.2 * r(), grey);
    }
    s.add_triangle(
        Vec3::new(-1.5, -0.9, -1.0),
        Vec3::new(1.5, -0.9, -1.0),
        Vec3::new(0.0, 0.5, -1.5),
        red,
    );
    s
}

fn render(cpu: &mut CpuBackend, integrator: Integrator) -> Vec<[f32; 4]> {
    let camera = Camera::look_at(Vec3::new(0.0, 1.0, 4.0), Vec3::ZERO, Vec3::Y, 60.0);
    let settings = RenderSettings {
        integrator,
        spp: 2,
        max_depth: 2,
        ao_shadows: true,
        ..Default::default()
    };
    let mut img = Image::new(96, 72, PixelFormat::LinearF32).expect("image");
    cpu.render(&camera, &settings, &mut img, &NoProgress)
        .expect("render");
    img.linear().to_vec()
}

#[test]
fn shadows_from_the_light_grid_are_the_trees() {
    let mut cpu = CpuBackend::with_threads(2).expect("cpu");
    cpu.set_scene(&lamp_scene()).expect("scene");
    let grid = cpu.light_grid().expect("a small scene gets a light grid");
    let full = grid.cells.iter().filter(|c| c.count == u32::MAX).count();
    let listed = grid
        .cells
        .iter()
        .filter(|c| c.count > 0 && c.count != u32::MAX)
        .count();
    assert!(
        full > 0 && listed > 0,
        "{full} full cells, {listed} listing cells"
    );
    for integrator in [Integrator::Whitted, Integrator::Ao] {
        cpu.set_traversal(Traversal::Wide).expect("wide");
        let wide = render(&mut cpu, integrator);
        cpu.set_traversal(Traversal::Binary).expect("binary");
        let binary = render(&mut cpu, integrator);
        let differ = wide.iter().zip(&binary).filter(|(a, b)| a != b).count();
        assert_eq!(differ, 0, "{integrator:?}: {differ} pixels differ");
        // Shadows are there to get wrong: some pixels are darkened by the key
        // light being blocked, some are lit.
        let dark = binary.iter().filter(|p| p[0] < 0.1).count();
        assert!(
            dark > 0 && dark < binary.len(),
            "{integrator:?}: {dark} dark pixels"
        );
    }
}

#[test]
fn large_scenes_get_no_light_grid() {
    let mut s = lamp_scene();
    let m = s.add_material(Material::lambertian(Vec3::ONE));
    for i in 0..64 {
        s.add_sphere(Vec3::new(i as f32, 5.0, 0.0), 0.1, m);
    }
    let mut cpu = CpuBackend::with_threads(1).expect("cpu");
    cpu.set_scene(&s).expect("scene");
    assert!(cpu.light_grid().is_none());
}
