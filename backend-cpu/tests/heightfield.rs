//! Heightfields on the CPU backend: every traversal gives core's answers
//! (`Accel::intersect` / `occluded`), bit for bit, on flat scenes of one
//! heightfield (whose batches the 8-lane walk takes), flat scenes that mix
//! it with other primitives, and two-level scenes placing it many times;
//! renders agree between the traversals and shade the faces' normals.

use glam::{Affine3A, Quat, Vec3};
use prism_core::heightfield::{FACE_POS_X, FACE_TOP, Heightfield};
use prism_core::rng::Pcg;
use prism_core::{
    Accel, Backend, Camera, Geometry, Hit, Image, Instance, Integrator, Material, NoProgress,
    PixelFormat, Ray, RenderSettings, Scene,
};
use prism_cpu::{CpuBackend, Traversal};
use std::path::PathBuf;

const TRAVERSALS: [Traversal; 3] = [Traversal::Wide, Traversal::Wide4, Traversal::Binary];

struct Rng(Pcg);

impl Rng {
    fn u(&mut self) -> f32 {
        self.0.next_f32()
    }
    fn s(&mut self) -> f32 {
        self.0.next_f32() * 2.0 - 1.0
    }
    fn v3(&mut self, e: f32) -> Vec3 {
        Vec3::new(self.s(), self.s(), self.s()) * e
    }
}

/// A height map of `w` x `d` cells: empty columns, steps of a quarter, a few
/// tall ones.
fn heights(rng: &mut Rng, w: u32, d: u32) -> Vec<f32> {
    (0..w * d)
        .map(|_| {
            let r = rng.u();
            if r < 0.3 {
                0.0
            } else if r < 0.8 {
                (1 + (rng.u() * 12.0) as u32) as f32 * 0.25
            } else {
                2.0 + rng.u() * 8.0
            }
        })
        .collect()
}

/// Rays over a box of extent `e` around its centre `c`: from anywhere, along
/// the axes (some on cell planes), diagonals through corners, segments, and
/// a few with masks that hide the flat scene.
fn rays(rng: &mut Rng, c: Vec3, e: f32, n: usize) -> Vec<Ray> {
    (0..n)
        .map(|k| {
            let o = c + rng.v3(e);
            let ray = match k % 6 {
                0 | 1 => Ray::new(o, c + rng.v3(e * 0.6) - o),
                2 => {
                    let mut d = Vec3::ZERO;
                    d[k % 3] = if rng.u() < 0.5 { -1.0 } else { 1.0 };
                    Ray::new(o.round(), d)
                }
                3 => Ray::new(o.floor() + Vec3::splat(0.5), Vec3::new(1.0, -0.5, -1.0)),
                4 => Ray::segment(o, rng.v3(1.0), rng.u() * e, e * (0.5 + rng.u())),
                _ => Ray::new(
                    Vec3::new(o.x, c.y + e, o.z),
                    Vec3::new(rng.s(), -1.0, rng.s()),
                ),
            };
            if k % 37 == 0 {
                ray.with_mask(0x100)
            } else {
                ray
            }
        })
        .filter(|r| r.is_valid())
        .collect()
}

/// The CPU backend's hits and occlusion on `rays`, with every traversal,
/// against core's, exactly.
fn check_against_core(scene: &Scene, rays: &[Ray], what: &str) -> usize {
    let accel = Accel::build(scene).expect("a valid scene");
    let core_hits: Vec<Hit> = rays.iter().map(|r| accel.intersect(r)).collect();
    let core_occluded: Vec<bool> = rays.iter().map(|r| accel.occluded(r)).collect();
    let mut cpu = CpuBackend::with_threads(2).expect("a CPU backend");
    cpu.set_scene(scene).expect("the scene");
    for traversal in TRAVERSALS {
        cpu.set_traversal(traversal).expect("traversal");
        let mut hits = vec![Hit::MISS; rays.len()];
        let mut occluded = vec![false; rays.len()];
        cpu.intersect(rays, &mut hits).expect("intersect");
        cpu.occluded(rays, &mut occluded).expect("occluded");
        for (i, ray) in rays.iter().enumerate() {
            let (a, b) = (hits[i], core_hits[i]);
            assert_eq!(
                (a.t, a.prim, a.instance, a.cell, a.face),
                (b.t, b.prim, b.instance, b.cell, b.face),
                "{what}, {traversal:?}, ray {i}: {ray:?}"
            );
            assert_eq!(
                occluded[i], core_occluded[i],
                "{what}, {traversal:?}, ray {i}: {ray:?}"
            );
        }
    }
    core_hits.iter().filter(|h| h.is_hit()).count()
}

#[test]
fn a_scene_of_one_heightfield_gives_cores_answers() {
    let mut rng = Rng(Pcg { state: 11 });
    let mut hits = 0;
    for case in 0..12 {
        let (w, d) = (3 + case * 5 % 29, 2 + case * 7 % 31);
        let cs = [1.0, 0.5, 0.37][case as usize % 3];
        let hf = Heightfield::new(w, d, cs, &heights(&mut rng, w, d)).expect("valid");
        let c = hf.bounds().center();
        let e = hf.size();
        let mut scene = Scene::new();
        let m = scene.add_material(Material::lambertian(Vec3::ONE));
        scene.add_heightfield(hf, m);
        hits += check_against_core(&scene, &rays(&mut rng, c, e, 3000), "one heightfield");
    }
    assert!(hits > 5000, "{hits} hits");
}

#[test]
fn a_heightfield_among_other_primitives_gives_cores_answers() {
    let mut rng = Rng(Pcg { state: 12 });
    let hf = Heightfield::new(17, 9, 0.5, &heights(&mut rng, 17, 9)).expect("valid");
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::ONE));
    scene.add_heightfield(hf.clone(), m);
    for k in 0..40 {
        let p = rng.v3(6.0) + Vec3::new(4.0, 2.0, 2.0);
        if k % 2 == 0 {
            scene.add_sphere(p, 0.3 + rng.u(), m);
        } else {
            scene.add_triangle(p, p + rng.v3(1.0), p + rng.v3(1.0), m);
        }
    }
    scene.add_heightfield(hf, m);
    let rays = rays(&mut rng, Vec3::new(4.0, 2.0, 2.0), 8.0, 6000);
    assert!(check_against_core(&scene, &rays, "mixed") > 1000);
}

#[test]
fn instanced_heightfields_give_cores_answers() {
    let mut rng = Rng(Pcg { state: 13 });
    let hf = Heightfield::new(12, 10, 0.5, &heights(&mut rng, 12, 10)).expect("valid");
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::ONE));
    let g = scene.add_geometry(Geometry::heightfield(hf, m));
    let mut ball = Geometry::new();
    ball.add_sphere(Vec3::ZERO, 1.0, m);
    let ball = scene.add_geometry(ball);
    for i in 0..30 {
        let t = Affine3A::from_scale_rotation_translation(
            Vec3::new(0.5 + rng.u(), 0.5 + rng.u(), 0.5 + rng.u()),
            Quat::from_axis_angle(rng.v3(1.0).normalize_or(Vec3::Y), rng.s() * 3.0),
            rng.v3(15.0),
        );
        let geometry = if i % 5 == 4 { ball } else { g };
        scene.add_instance(Instance::new(geometry, t).with_mask(1 << (i % 4)));
    }
    let mut rays = rays(&mut rng, Vec3::ZERO, 20.0, 8000);
    for (k, r) in rays.iter_mut().enumerate() {
        if k % 3 == 0 {
            *r = r.with_mask(0b0101);
        }
    }
    assert!(check_against_core(&scene, &rays, "instanced") > 1000);
}

/// Renders of a heightfield scene: the same image whatever the traversal,
/// lit where the faces turn to the light, and its normals the faces'.
#[test]
fn renders_agree_between_traversals_and_shade_the_faces() {
    let mut rng = Rng(Pcg { state: 14 });
    let hf = Heightfield::new(24, 24, 0.5, &heights(&mut rng, 24, 24)).expect("valid");
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::splat(0.7)));
    scene.add_heightfield(hf.clone(), m);
    scene.light.position = Vec3::new(30.0, 40.0, 20.0);
    let camera = Camera::look_at(
        Vec3::new(22.0, 14.0, 20.0),
        Vec3::new(6.0, 0.0, 6.0),
        Vec3::Y,
        40.0,
    );
    let mut cpu = CpuBackend::with_threads(2).expect("a CPU backend");
    cpu.set_scene(&scene).expect("the scene");
    for integrator in [Integrator::Whitted, Integrator::Ao, Integrator::Path] {
        let settings = RenderSettings {
            integrator,
            spp: 2,
            ..Default::default()
        };
        let mut frames = Vec::new();
        for traversal in TRAVERSALS {
            cpu.set_traversal(traversal).expect("traversal");
            let mut img = Image::new(48, 36, PixelFormat::LinearF32).expect("image");
            cpu.render(&camera, &settings, &mut img, &NoProgress)
                .expect("render");
            assert!(img.linear().iter().flatten().all(|v| v.is_finite()));
            frames.push(img.linear().to_vec());
        }
        assert!(
            frames.windows(2).all(|f| f[0] == f[1]),
            "{integrator:?}: traversals differ"
        );
    }
    // The hit normal of a top is +y, of an x side +x: one ray each.
    let accel = cpu.accel().expect("a scene").clone();
    let top = accel.intersect(&Ray::new(Vec3::new(3.2, 20.0, 3.3), Vec3::NEG_Y));
    if top.is_hit() {
        assert_eq!(top.face, FACE_TOP);
    }
    let side = accel.intersect(&Ray::new(Vec3::new(30.0, 0.1, 3.3), Vec3::NEG_X));
    if side.is_hit() {
        assert_eq!(side.face, FACE_POS_X);
    }
}

/// The city (../shared/scenes/heightfield/city512.png) with its camera: the
/// batches' 8-lane walk gives core's hits on every primary ray.
#[test]
fn the_city_gives_cores_answers() {
    let dir = std::env::var_os("PRISM_SCENES")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/scenes"));
    let path = dir.join("heightfield/city512.png");
    if !path.is_file() {
        assert!(
            !std::env::var("PRISM_REQUIRE_SCENES").is_ok_and(|v| v == "1"),
            "PRISM_REQUIRE_SCENES=1 but {} is missing",
            path.display()
        );
        eprintln!("SKIPPED: {} not found (set PRISM_SCENES)", path.display());
        return;
    }
    let img = image::open(&path).expect("the city decodes").to_rgba8();
    let grey: Vec<u8> = img
        .pixels()
        .map(|p| ((77 * p[0] as u32 + 150 * p[1] as u32 + 29 * p[2] as u32) >> 8) as u8)
        .collect();
    let hf = Heightfield::from_u8(img.width(), img.height(), 1.0, &grey, 1.0).expect("valid");
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::ONE));
    scene.add_heightfield(hf, m);
    let cam = Camera::look_at(
        Vec3::splat(500.0),
        Vec3::new(256.0, 0.0, 256.0),
        Vec3::Y,
        20.0,
    )
    .frame(500, 500)
    .expect("camera");
    let mut rays: Vec<Ray> = (0..500u32 * 500)
        .step_by(7)
        .map(|i| {
            prism_core::camera::camera_ray(
                &cam,
                ((i % 500) as f32 + 0.5) / 500.0,
                1.0 - ((i / 500) as f32 + 0.5) / 500.0,
                0.5,
                0.5,
            )
        })
        .collect();
    // And bounces from where they hit, in every direction.
    let accel = Accel::build(&scene).expect("valid");
    let mut rng = Rng(Pcg { state: 15 });
    let bounces: Vec<Ray> = rays
        .iter()
        .filter_map(|r| {
            let h = accel.intersect(r);
            h.is_hit()
                .then(|| Ray::segment(r.at(h.t), rng.v3(1.0), 1e-3, f32::INFINITY))
        })
        .filter(|r| r.is_valid())
        .collect();
    rays.extend(bounces);
    assert!(check_against_core(&scene, &rays, "city") > 30_000);
}
