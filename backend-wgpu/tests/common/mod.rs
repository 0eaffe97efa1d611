//! Shared by the adapter tests and the benchmark example.

use prism_core::glam::Vec3;
use prism_core::{Camera, Error, Material, Scene};
use prism_wgpu::{WgpuBackend, WgpuOptions};

/// Open a backend with `options`, software adapters allowed, or say why not:
/// `None` (the test passes after saying so) when no adapter is there, unless
/// `PRISM_REQUIRE_WGPU=1`; any other error fails the test.
// Not every file that includes this module opens a backend through it.
#[allow(dead_code)]
pub fn open_backend(options: WgpuOptions) -> Option<WgpuBackend> {
    match WgpuBackend::new(WgpuOptions {
        allow_software: true,
        ..options
    }) {
        Ok(b) => Some(b),
        Err(e) => {
            let required = std::env::var("PRISM_REQUIRE_WGPU").is_ok_and(|v| v == "1");
            if required || !matches!(e, Error::BackendUnavailable { .. }) {
                panic!(
                    "no usable wgpu adapter (PRISM_REQUIRE_WGPU=1 or not an availability problem): {e}"
                );
            }
            eprintln!(
                "SKIPPED: no wgpu adapter: {e}. Install Mesa's lavapipe \
                 (apt-get install -y mesa-vulkan-drivers libvulkan1) to run this test; \
                 set PRISM_REQUIRE_WGPU=1 to make a missing adapter fail."
            );
            None
        }
    }
}

// Not every file that includes this module renders it.
#[allow(dead_code)]
/// A small scene with every material kind, triangles and spheres, lit by the
/// sky, an emissive sphere and the key light.
pub fn render_scene() -> (Scene, Camera) {
    let mut scene = Scene::new();
    let ground = scene.add_material(Material::lambertian(Vec3::new(0.5, 0.5, 0.45)));
    let red = scene.add_material(Material::lambertian(Vec3::new(0.7, 0.15, 0.1)));
    let metal = scene.add_material(Material::metal(Vec3::new(0.8, 0.7, 0.5), 0.15));
    let mirror = scene.add_material(Material::metal(Vec3::splat(0.95), 0.0));
    let glass = scene.add_material(Material::dielectric(1.5));
    let light = scene.add_material(Material::emissive(Vec3::new(6.0, 5.0, 4.0)));
    let varnish = scene.add_material(Material::blend(
        Material::lambertian(Vec3::new(0.1, 0.3, 0.7)),
        Material::metal(Vec3::splat(0.9), 0.05),
        0.25,
    ));
    scene.add_sphere(Vec3::new(0.0, -1000.0, 0.0), 1000.0, ground);
    scene.add_sphere(Vec3::new(-2.2, 1.0, 0.0), 1.0, red);
    scene.add_sphere(Vec3::new(0.0, 1.0, 0.0), 1.0, glass);
    scene.add_sphere(Vec3::new(2.2, 1.0, 0.0), 1.0, metal);
    scene.add_sphere(Vec3::new(1.0, 0.35, 1.6), 0.35, light);
    scene.add_sphere(Vec3::new(-1.0, 0.3, 1.7), 0.3, varnish);
    // A mirror quad behind, in triangles.
    let (a, b, c, d) = (
        Vec3::new(-4.0, 0.0, -2.5),
        Vec3::new(4.0, 0.0, -2.5),
        Vec3::new(4.0, 3.0, -2.5),
        Vec3::new(-4.0, 3.0, -2.5),
    );
    scene.add_triangle(a, b, c, mirror);
    scene.add_triangle(a, c, d, mirror);
    scene.light.position = Vec3::new(3.0, 5.0, 4.0);
    let mut camera = Camera::look_at(
        Vec3::new(0.0, 2.0, 7.0),
        Vec3::new(0.0, 0.8, 0.0),
        Vec3::Y,
        40.0,
    );
    camera.aperture = 0.05;
    (scene, camera)
}
