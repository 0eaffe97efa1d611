//! Heightfields on a real adapter (lavapipe in CI): the WGSL walk
//! (heightfield.wgsl) gives core's hits bit for bit (t, u, v, primitive,
//! instance, cell and face) and core's occlusion, on flat scenes of one
//! heightfield, heightfields among spheres and triangles, and heightfields
//! placed by instances; renders of a heightfield scene match core's pixels.
//!
//! Without an adapter these tests print why and pass, unless
//! `PRISM_REQUIRE_WGPU=1` (CI sets it): then they fail.

mod common;

use prism_core::glam::{Affine3A, Quat, Vec3};
use prism_core::heightfield::{Heightfield, ray_heightfield};
use prism_core::integrator::render_pixel;
use prism_core::intersect::RayPre;
use prism_core::rng::Pcg;
use prism_core::{
    Accel, Backend, Camera, Geometry, Hit, Image, Instance, Integrator, Material, NoProgress,
    PixelFormat, Ray, RenderSettings, Scene,
};
use prism_wgpu::{WgpuBackend, WgpuOptions};
use std::sync::{Mutex, OnceLock};

/// Run `f` with the shared backend (each pipeline compiled once a run);
/// returns without calling it when there is no adapter.
fn with_backend(f: impl FnOnce(&mut WgpuBackend)) {
    static SHARED: OnceLock<Mutex<Option<WgpuBackend>>> = OnceLock::new();
    let shared = SHARED.get_or_init(|| Mutex::new(common::open_backend(WgpuOptions::default())));
    let mut guard = shared.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(b) = guard.as_mut() {
        f(b);
    }
}

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

/// Rays over a box of extent `e` around `c`, for a heightfield of cell size
/// `cs` and tallest column `top`: from anywhere, along the axes (some on cell
/// planes, some through the columns' edges), diagonals through cell corners,
/// rays level with the tops (grazing them), vertical rays from inside the
/// columns, segments, and a few with masks that hide a flat scene.
fn rays(rng: &mut Rng, c: Vec3, e: f32, cs: f32, top: f32, n: usize) -> Vec<Ray> {
    let on_plane = |v: f32| (v / cs).round() * cs;
    (0..n)
        .map(|k| {
            let o = c + rng.v3(e);
            let ray = match k % 9 {
                0 | 1 => Ray::new(o, c + rng.v3(e * 0.6) - o),
                2 => {
                    let mut d = Vec3::ZERO;
                    d[k % 3] = if rng.u() < 0.5 { -1.0 } else { 1.0 };
                    Ray::new(o.round(), d)
                }
                3 => {
                    // Along x or z in a cell plane, at a quarter height: down
                    // the edges between columns.
                    let y = (rng.u() * top * 4.0).round() * 0.25;
                    let (origin, dir) = if k % 2 == 0 {
                        (Vec3::new(c.x - e, y, on_plane(o.z)), Vec3::X)
                    } else {
                        (Vec3::new(on_plane(o.x), y, c.z + e), Vec3::NEG_Z)
                    };
                    Ray::new(origin, dir)
                }
                4 => Ray::new(
                    Vec3::new(on_plane(o.x), c.y + e, on_plane(o.z)),
                    Vec3::new(1.0, -0.5, -1.0),
                ),
                5 => {
                    // Level with a top (the heights are quarters) and nearly
                    // level: grazing the tops.
                    let y = (1 + (rng.u() * 12.0) as u32) as f32 * 0.25;
                    let dy = if k % 2 == 0 { 0.0 } else { rng.s() * 1e-3 };
                    Ray::new(Vec3::new(o.x, y, o.z), Vec3::new(rng.s(), dy, rng.s()))
                }
                6 => {
                    // From inside a column (or an empty cell) up, down or
                    // sideways.
                    let origin = Vec3::new(o.x, rng.u() * 2.0, o.z);
                    let dir = match k % 4 {
                        0 => Vec3::Y,
                        1 => Vec3::NEG_Y,
                        _ => Vec3::new(rng.s(), rng.s() * 0.2, rng.s()),
                    };
                    Ray::new(origin, dir)
                }
                7 => Ray::segment(o, rng.v3(1.0), rng.u() * e, e * (0.5 + rng.u())),
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

/// How far apart two hit values may be, in units in the last place.
const MAX_ULPS: u32 = 4;

/// Units in the last place between `a` and `b` (0 when both are the same
/// infinity; `u32::MAX` across a sign or between a number and an infinity).
fn ulps(a: f32, b: f32) -> u32 {
    if a.to_bits() == b.to_bits() {
        return 0;
    }
    if !(a.is_finite() && b.is_finite()) || a.is_sign_negative() != b.is_sign_negative() {
        return u32::MAX;
    }
    a.to_bits().abs_diff(b.to_bits())
}

/// The backend's hits and occlusion on `rays` against core's
/// (`Accel::intersect`, `Accel::occluded`: the CPU backend's answers),
/// every word of every hit; returns the number of hits.
fn check_against_core(gpu: &mut WgpuBackend, scene: &Scene, rays: &[Ray], what: &str) -> usize {
    let accel = Accel::build(scene).expect("a valid scene");
    gpu.set_scene(scene).expect("set_scene");
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut occluded = vec![false; rays.len()];
    gpu.intersect(rays, &mut hits).expect("intersect");
    gpu.occluded(rays, &mut occluded).expect("occluded");
    let mut count = 0;
    for (i, ray) in rays.iter().enumerate() {
        let (a, b) = (hits[i], accel.intersect(ray));
        if a.prim != b.prim && a.t.to_bits() == b.t.to_bits() {
            // Two primitives at exactly the same t (a flat scene's
            // heightfields all stand on the origin): a walk of the tree's
            // near-first octant copies may take either
            // (prism_core::gpu::near_first_octant_copies).
            count += 1;
            continue;
        }
        // Which surface, cell and face: exact. `t`, `u` and `v`: within
        // MAX_ULPS, as NVIDIA's Vulkan compiler fuses products of the sphere and
        // triangle tests that lavapipe keeps apart (the heightfield walk's own
        // products are kept unfused and give core's bits).
        assert_eq!(
            (a.prim, a.instance, a.cell, a.face),
            (b.prim, b.instance, b.cell, b.face),
            "{what}, ray {i}: {ray:?}: gpu {a:?}, core {b:?}"
        );
        assert!(
            ulps(a.t, b.t) <= MAX_ULPS && ulps(a.u, b.u) <= MAX_ULPS && ulps(a.v, b.v) <= MAX_ULPS,
            "{what}, ray {i}: {ray:?}: gpu {a:?}, core {b:?}"
        );
        assert_eq!(occluded[i], accel.occluded(ray), "{what}, ray {i}: {ray:?}");
        count += b.is_hit() as usize;
    }
    count
}

/// Flat scenes of one small random heightfield: every hit is core's, and
/// (for a scene of one heightfield, whose box is its one leaf) core's
/// `ray_heightfield` straight on the record.
#[test]
fn a_scene_of_one_heightfield_gives_cores_hits() {
    with_backend(|gpu| {
        let mut rng = Rng(Pcg { state: 21 });
        let mut hits = 0;
        for case in 0..8u32 {
            let (w, d) = (1 + case * 5 % 19, 1 + case * 7 % 23);
            let cs = [1.0, 0.5, 0.37, 2.0][case as usize % 4];
            let hf = Heightfield::new(w, d, cs, &heights(&mut rng, w, d)).expect("valid");
            let c = hf.bounds().center();
            let e = hf.size();
            let mut scene = Scene::new();
            let m = scene.add_material(Material::lambertian(Vec3::ONE));
            scene.add_heightfield(hf.clone(), m);
            let rays = rays(&mut rng, c, e, cs, hf.max_height(), 1500);
            hits += check_against_core(gpu, &scene, &rays, &format!("{w} x {d}, cell {cs}"));
            // The walk itself: where core's walk on the record hits, the
            // backend's hit is that one (the tree's box test may cull a ray
            // the walk would hit only outside the padded box: none here).
            let desc = hf.descriptor(0);
            let mut out = vec![Hit::MISS; rays.len()];
            gpu.intersect(&rays, &mut out).expect("intersect");
            for (ray, hit) in rays.iter().zip(&out) {
                if ray.mask & 0xFF == 0 {
                    continue;
                }
                let walk =
                    ray_heightfield(&RayPre::new(ray), &desc, hf.pyramid(), ray.tmin, ray.tmax);
                if let Some(h) = walk {
                    assert_eq!(
                        (hit.t.to_bits(), hit.cell, hit.face),
                        (h.t.to_bits(), h.cell, h.face),
                        "{ray:?}"
                    );
                }
            }
        }
        assert!(hits > 1000, "{hits} hits");
    });
}

/// Heightfields among spheres and triangles in one flat tree.
#[test]
fn heightfields_among_other_primitives_give_cores_hits() {
    with_backend(|gpu| {
        let mut rng = Rng(Pcg { state: 22 });
        let hf = Heightfield::new(9, 6, 0.5, &heights(&mut rng, 9, 6)).expect("valid");
        let mut scene = Scene::new();
        let m = scene.add_material(Material::lambertian(Vec3::ONE));
        scene.add_heightfield(hf.clone(), m);
        for k in 0..30 {
            let p = rng.v3(4.0) + Vec3::new(2.0, 2.0, 1.5);
            if k % 2 == 0 {
                scene.add_sphere(p, 0.3 + rng.u(), m);
            } else {
                scene.add_triangle(p, p + rng.v3(1.0), p + rng.v3(1.0), m);
            }
        }
        let other = Heightfield::new(4, 7, 0.75, &heights(&mut rng, 4, 7)).expect("valid");
        scene.add_heightfield(other, m);
        let rays = rays(&mut rng, Vec3::new(2.0, 2.0, 1.5), 6.0, 0.5, 10.0, 4000);
        assert!(check_against_core(gpu, &scene, &rays, "mixed") > 500);
    });
}

/// Heightfields placed by instances (stretched, turned, moved, masked),
/// beside instanced spheres: the two-level walk carries the object ray into
/// each and gives core's hits, instance, cell and face.
#[test]
fn instanced_heightfields_give_cores_hits() {
    with_backend(|gpu| {
        let mut rng = Rng(Pcg { state: 23 });
        let hf = Heightfield::new(8, 6, 0.5, &heights(&mut rng, 8, 6)).expect("valid");
        let small = Heightfield::new(3, 5, 1.0, &heights(&mut rng, 3, 5)).expect("valid");
        let mut scene = Scene::new();
        let m = scene.add_material(Material::lambertian(Vec3::ONE));
        let g = scene.add_geometry(Geometry::heightfield(hf, m));
        let g2 = scene.add_geometry(Geometry::heightfield(small, m));
        let mut ball = Geometry::new();
        ball.add_sphere(Vec3::ZERO, 1.0, m);
        let ball = scene.add_geometry(ball);
        scene.add_instance(Instance::new(g, Affine3A::IDENTITY));
        for i in 0..16 {
            let t = Affine3A::from_scale_rotation_translation(
                Vec3::new(0.5 + rng.u(), 0.5 + rng.u(), 0.5 + rng.u()),
                Quat::from_axis_angle(rng.v3(1.0).normalize_or(Vec3::Y), rng.s() * 3.0),
                rng.v3(10.0),
            );
            let geometry = [g, g2, ball][i % 3];
            scene.add_instance(Instance::new(geometry, t).with_mask(1 << (i % 4)));
        }
        let mut rays = rays(&mut rng, Vec3::ZERO, 12.0, 0.5, 10.0, 5000);
        for (k, r) in rays.iter_mut().enumerate() {
            if k % 3 == 0 {
                *r = r.with_mask(0b0101);
            }
        }
        assert!(check_against_core(gpu, &scene, &rays, "instanced") > 500);
    });
}

/// A scene without heightfields still traces as before after one with them
/// (the module and the slot buffer follow the scene).
#[test]
fn a_scene_without_heightfields_after_one_with_them() {
    with_backend(|gpu| {
        let mut rng = Rng(Pcg { state: 24 });
        let hf = Heightfield::new(5, 5, 1.0, &heights(&mut rng, 5, 5)).expect("valid");
        let mut with = Scene::new();
        let m = with.add_material(Material::lambertian(Vec3::ONE));
        with.add_heightfield(hf, m);
        with.add_sphere(Vec3::new(2.5, 6.0, 2.5), 1.0, m);
        let mut without = Scene::new();
        let m = without.add_material(Material::lambertian(Vec3::ONE));
        without.add_sphere(Vec3::new(2.5, 6.0, 2.5), 1.0, m);
        let rays = rays(&mut rng, Vec3::new(2.5, 3.0, 2.5), 6.0, 1.0, 10.0, 1000);
        check_against_core(gpu, &with, &rays, "with");
        check_against_core(gpu, &without, &rays, "without");
    });
}

/// Core's linear image of `scene`.
fn core_render(
    scene: &Scene,
    camera: &Camera,
    settings: &RenderSettings,
    w: u32,
    h: u32,
) -> Vec<Vec3> {
    let accel = Accel::build(scene).expect("scene");
    let params = settings.params(&accel, camera, w, h).expect("params");
    let mut pixels = Vec::with_capacity((w * h) as usize);
    for y in 0..h {
        for x in 0..w {
            pixels.push(render_pixel(&accel, &params, x, y).0);
        }
    }
    pixels
}

/// Renders of a small heightfield scene, flat and instanced, with every
/// integrator: the GPU's pixels are core's (the CPU backend's) up to the
/// rounding of the GPU's own sqrt, sin, cos and pow, which moves a pixel by
/// far less than 1e-3 and, rarely, a random decision: 99% of the pixels
/// within 1e-3 (Whitted: all but a few), a small mean error.
#[test]
fn renders_of_a_heightfield_scene_match_core() {
    with_backend(|gpu| {
        let mut rng = Rng(Pcg { state: 25 });
        let hf = Heightfield::new(12, 12, 0.5, &heights(&mut rng, 12, 12)).expect("valid");
        let mut flat = Scene::new();
        let grey = flat.add_material(Material::lambertian(Vec3::splat(0.7)));
        let mirror = flat.add_material(Material::metal(Vec3::splat(0.9), 0.0));
        flat.add_heightfield(hf.clone(), grey);
        flat.add_sphere(Vec3::new(3.0, 5.0, 3.0), 1.0, mirror);
        flat.light.position = Vec3::new(20.0, 30.0, 10.0);
        let mut placed = Scene::new();
        let grey = placed.add_material(Material::lambertian(Vec3::splat(0.7)));
        let g = placed.add_geometry(Geometry::heightfield(hf, grey));
        placed.add_instance(Instance::new(g, Affine3A::IDENTITY));
        placed.add_instance(Instance::new(
            g,
            Affine3A::from_scale_rotation_translation(
                Vec3::new(0.5, 1.5, 0.5),
                Quat::from_rotation_y(0.7),
                Vec3::new(7.0, 0.0, -2.0),
            ),
        ));
        placed.light.position = Vec3::new(20.0, 30.0, 10.0);
        let camera = Camera::look_at(
            Vec3::new(12.0, 9.0, 12.0),
            Vec3::new(3.0, 0.0, 3.0),
            Vec3::Y,
            45.0,
        );
        let (w, h) = (48u32, 36u32);
        for (name, scene) in [("flat", &flat), ("instanced", &placed)] {
            gpu.set_scene(scene).expect("set_scene");
            for integrator in Integrator::ALL {
                let settings = RenderSettings {
                    integrator,
                    spp: 2,
                    max_depth: 4,
                    seed: 3,
                    ..Default::default()
                };
                let mut image = Image::new(w, h, PixelFormat::LinearF32).expect("image");
                gpu.render(&camera, &settings, &mut image, &NoProgress)
                    .expect("render");
                let core = core_render(scene, &camera, &settings, w, h);
                let mut close = 0usize;
                let mut sum = 0.0f64;
                for (g, c) in image.linear().iter().zip(&core) {
                    assert!(g.iter().all(|v| v.is_finite()), "{name}: {g:?}");
                    let d = (Vec3::new(g[0], g[1], g[2]) - *c).abs().max_element();
                    close += (d <= 1e-3 * (1.0 + c.max_element())) as usize;
                    sum += d as f64;
                }
                let n = core.len() as f64;
                let (share, mean) = (close as f64 / n, sum / n);
                eprintln!(
                    "{name} {}: {:.2}% within 1e-3, mean error {mean:.2e}",
                    integrator.name(),
                    100.0 * share
                );
                assert!(share >= 0.99, "{name} {}: {share}", integrator.name());
                assert!(mean < 1e-3, "{name} {}: {mean}", integrator.name());
            }
        }
    });
}
