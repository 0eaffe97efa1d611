//! The height-map scenes: `city` is the shared city map with the voxel
//! renderer's camera and sun, and a height map's columns traced as one
//! heightfield give the hits of the same columns written as triangles.

use prism::city::{Columns, city_map_path, height_map_preset};
use prism::height_map::HeightMap;
use prism::{Backend, Hit, Ray};
use prism_core::camera::camera_ray;
use prism_cpu::CpuBackend;

/// The primary rays of `preset`'s camera at `size x size`, through pixel centres.
fn primary_rays(preset: &prism::scenes::Preset, size: u32) -> Vec<Ray> {
    let frame = preset.camera.frame(size, size).expect("camera frame");
    (0..size * size)
        .map(|i| {
            let (x, y) = (i % size, i / size);
            let (s, t) = (
                (x as f32 + 0.5) / size as f32,
                1.0 - (y as f32 + 0.5) / size as f32,
            );
            camera_ray(&frame, s, t, 0.0, 0.0)
        })
        .collect()
}

/// Closest hits of `rays` on the CPU backend.
fn hits(preset: &prism::scenes::Preset, rays: &[Ray]) -> Vec<Hit> {
    let mut cpu = CpuBackend::new().expect("cpu backend");
    cpu.set_scene(&preset.scene).expect("scene");
    let mut out = vec![Hit::MISS; rays.len()];
    cpu.intersect(rays, &mut out).expect("intersect");
    out
}

#[test]
fn a_height_map_walked_gives_the_hits_of_its_columns_as_triangles() {
    // 24 x 16 cells: zero columns, a tall isolated column, steps.
    let (w, d) = (24u32, 16u32);
    let heights: Vec<u16> = (0..w * d)
        .map(|i| {
            let (x, z) = (i % w, i / w);
            if (x + 3 * z) % 7 == 0 {
                0
            } else if x == 11 && z == 7 {
                40
            } else {
                ((x * 5 + z * 3) % 11) as u16
            }
        })
        .collect();
    let map = HeightMap {
        width: w,
        depth: d,
        heights,
        bits: 8,
    };
    let walk = height_map_preset("walk", &map, Columns::Heightfield).expect("walk scene");
    let tris = height_map_preset("tris", &map, Columns::Triangles).expect("triangle scene");
    let rays = primary_rays(&walk, 64);
    let (a, b) = (hits(&walk, &rays), hits(&tris, &rays));
    let mut hit_count = 0;
    for (i, (a, b)) in a.iter().zip(&b).enumerate() {
        assert_eq!(
            a.prim == Hit::NO_PRIM,
            b.prim == Hit::NO_PRIM,
            "ray {i}: {a:?} vs {b:?}"
        );
        if a.prim != Hit::NO_PRIM {
            hit_count += 1;
            let tol = 1e-4 * a.t.abs().max(1.0);
            assert!((a.t - b.t).abs() <= tol, "ray {i}: t {} vs {}", a.t, b.t);
        }
    }
    assert!(
        hit_count > rays.len() / 4,
        "only {hit_count} rays hit the map"
    );
}

#[test]
fn the_city_is_the_shared_map_under_the_voxel_renderers_camera_and_sun() {
    let path = city_map_path();
    if !path.exists() && !prism::conformance::scenes_required() {
        eprintln!("skipped: {} not found", path.display());
        return;
    }
    let city = prism::builtin_scene("city").expect("city scene");
    assert_eq!((city.width, city.height), (500, 500));
    assert_eq!((city.settings.spp, city.settings.max_depth), (64, 50));
    assert_eq!(city.camera.look_from, prism::glam::Vec3::splat(500.0));
    assert_eq!(
        city.camera.look_at,
        prism::glam::Vec3::new(256.0, 0.0, 256.0)
    );
    let sun = city.scene.sun.expect("the city has a sun");
    assert_eq!(sun.center, prism::glam::Vec3::new(700.0, 1400.0, 1400.0));
    assert_eq!(sun.radius, 200.0);
    // Most of the view is city: the camera looks down at the map's centre.
    let rays = primary_rays(&city, 50);
    let hit = hits(&city, &rays)
        .iter()
        .filter(|h| h.prim != Hit::NO_PRIM)
        .count();
    assert!(
        hit > rays.len() / 2,
        "{hit} of {} primary rays hit",
        rays.len()
    );
}
