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

/// The city's recorded rays (`prism render --scene city --spp 1 --record`:
/// 250,000 camera rays and every first bounce) give the heightfield's hits
/// on the columns written as boxes, two triangles a face
/// (`FaceSet::All`, the reference the walk is held to): the same `t` within
/// 1e-4, or, where one finds a hit the other does not or a farther one, a
/// ray that grazes a column's edge within a few ulps of its distance (there
/// the walk's slab test keeps the exit margin, the watertight triangle test
/// is exact; core's own comparisons count those as ties). Against the visible faces alone
/// (`city-triangles`, the fair speed comparison) bounce rays whose offset
/// start lies inside a neighbouring column differ: solid to the walk, empty
/// inside to a mesh of visible faces.
#[test]
fn the_citys_recorded_rays_hit_its_columns_as_boxes() {
    use prism_core::heightfield::{FaceSet, Heightfield};
    let path = city_map_path();
    if !path.exists() && !prism::conformance::scenes_required() {
        eprintln!("skipped: {} not found", path.display());
        return;
    }
    let city = prism::builtin_scene("city").expect("city scene");
    let dir = std::env::temp_dir().join(format!("prism-city-record-{}", std::process::id()));
    let settings = prism::RenderSettings {
        spp: 1,
        ..city.settings
    };
    prism::record::record_frame(
        &city.scene,
        &city.camera,
        &settings,
        city.width,
        city.height,
        &dir,
        &prism::NoProgress,
    )
    .expect("the city's rays recorded");
    let map = prism::height_map::load_png(&path).expect("the city map");
    let columns = Heightfield::from_u16(map.width, map.depth, 1.0, &map.heights, 1.0)
        .expect("the city's heightfield");
    let mesh = columns.column_mesh(FaceSet::All, true);
    let mut boxes = prism::Scene::new();
    let grey = boxes.add_material(prism::Material::lambertian(prism::glam::Vec3::ONE));
    boxes
        .add_mesh(&mesh.positions, &mesh.triangles, grey)
        .expect("the columns as boxes");
    let mut cpu = CpuBackend::new().expect("cpu backend");
    cpu.set_scene(&boxes).expect("boxes scene");
    let mut checked = 0;
    for bounce in ["bounce0", "bounce1"] {
        let rays = prism::rays::read_rays(dir.join(format!("{bounce}.rays"))).expect("rays");
        let walked = prism::rays::read_hits(dir.join(format!("{bounce}.hits"))).expect("hits");
        assert_eq!(rays.len(), walked.len());
        let mut tris = vec![Hit::MISS; rays.len()];
        cpu.intersect(&rays, &mut tris).expect("intersect");
        let (mut edges, mut hits) = (0, 0);
        for (i, (ray, (&(t, prim), tri))) in rays.iter().zip(walked.iter().zip(&tris)).enumerate() {
            let walk_hit = prim != Hit::NO_PRIM;
            hits += usize::from(walk_hit);
            let same = walk_hit == tri.is_hit()
                && (!walk_hit || (t - tri.t).abs() <= 1e-4 * t.abs().max(1.0));
            if same {
                continue;
            }
            // The nearer answer's point: on a column's edge (two of its
            // coordinates on the unit grid's planes or at an integer height)
            // to within a few ulps of the ray's reach.
            let near = if walk_hit { t.min(tri.t) } else { tri.t };
            let p = ray.origin + ray.dir * near;
            let reach = ray.origin.abs().max_element() + near;
            let mut off = [p.x, p.y, p.z].map(|c| (c - c.round()).abs());
            off.sort_by(f32::total_cmp);
            assert!(
                off[1] <= 8.0 * f32::EPSILON * reach,
                "{bounce} ray {i} {ray:?}: walk t {t} (prim {prim}), boxes {tri:?}, {off:?} off the grid"
            );
            edges += 1;
        }
        eprintln!(
            "{bounce}: {} rays, {hits} hits, {edges} edge grazes",
            rays.len()
        );
        assert!(hits > rays.len() / 2, "{bounce}: {hits} hits");
        assert!(edges * 1000 < rays.len(), "{bounce}: {edges} edge grazes");
        checked += rays.len();
    }
    assert!(checked > 400_000, "{checked} rays");
    let _ = std::fs::remove_dir_all(&dir);
}
