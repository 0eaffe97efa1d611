//! Two-level scenes on a real adapter (lavapipe in CI) against prism-core:
//! the hits and occlusion of core's walk (`Accel::intersect` / `occluded`) on
//! random instance fields with non-uniform scales, masks and ray segments,
//! after random update sequences, renders of one identity instance equal to
//! the flat scene's, and the instanced bunny set against Embree's hits.
//!
//! Without an adapter these tests print why and pass, unless
//! `PRISM_REQUIRE_WGPU=1` (CI sets it). All tests share one backend, so each
//! pipeline is compiled once per run (seconds each on lavapipe).

mod common;

use prism_core::glam::{Affine3A, Quat, Vec3};
use prism_core::instance::MAX_TRANSFORM_CONDITION;
use prism_core::intersect::RayPre;
use prism_core::reference::{AgreementCounts, instance_scales, t_close, t_floor};
use prism_core::rng::Pcg;
use prism_core::traverse::ray_primitive;
use prism_core::two_level::object_ray;
use prism_core::{
    Accel, Backend, Camera, Error, Geometry, Hit, Image, Instance, Integrator, Material,
    NoProgress, PixelFormat, Ray, RenderSettings, Scene, SceneUpdate,
};
use prism_wgpu::{WgpuBackend, WgpuOptions};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// Run `f` with the shared backend (software adapters allowed); returns
/// without calling it when there is no adapter.
fn with_backend(f: impl FnOnce(&mut WgpuBackend)) {
    static SHARED: OnceLock<Mutex<Option<WgpuBackend>>> = OnceLock::new();
    let shared = SHARED.get_or_init(|| Mutex::new(common::open_backend(WgpuOptions::default())));
    // A failed test poisons the mutex; the backend itself stays usable.
    let mut guard = shared.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(b) = guard.as_mut() {
        f(b);
    }
}

struct Rng(Pcg);

impl Rng {
    fn new(seed: u32) -> Self {
        Rng(Pcg { state: seed })
    }
    /// Uniform in `[-1, 1)`.
    fn s(&mut self) -> f32 {
        self.0.next_f32() * 2.0 - 1.0
    }
    fn u(&mut self) -> f32 {
        self.0.next_f32()
    }
    fn below(&mut self, n: u32) -> u32 {
        ((self.0.next_f32() * n as f32) as u32).min(n - 1)
    }
    fn v3(&mut self, e: f32) -> Vec3 {
        Vec3::new(self.s(), self.s(), self.s()) * e
    }
}

/// A grid of `n x n` quads in the xz-plane, its heights a wave of amplitude `amp`.
fn wavy_grid(n: usize, amp: f32, phase: f32) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let mut positions = Vec::new();
    for z in 0..=n {
        for x in 0..=n {
            let (fx, fz) = (x as f32 - n as f32 / 2.0, z as f32 - n as f32 / 2.0);
            let y = amp * (fx * 0.7 + phase).sin() * (fz * 0.5).cos();
            positions.push(Vec3::new(fx, y, fz) * 0.5);
        }
    }
    let w = (n + 1) as u32;
    let mut triangles = Vec::new();
    for z in 0..n as u32 {
        for x in 0..n as u32 {
            let i = z * w + x;
            triangles.push([i, i + 1, i + w]);
            triangles.push([i + 1, i + w + 1, i + w]);
        }
    }
    (positions, triangles)
}

/// A random rotation, a scale of each axis in [0.3, 3] (not uniform: spheres
/// become ellipsoids) and a translation in the field.
fn transform(r: &mut Rng) -> Affine3A {
    let axis = r.v3(1.0).try_normalize().unwrap_or(Vec3::Y);
    let rot = Quat::from_axis_angle(axis, r.s() * 3.2);
    let scale = Vec3::new(0.3 + 2.7 * r.u(), 0.3 + 2.7 * r.u(), 0.3 + 2.7 * r.u());
    // Scales in [0.3, 3] keep the condition number far below the limit.
    const { assert!(10.0 * 10.0 < MAX_TRANSFORM_CONDITION) };
    Affine3A::from_scale_rotation_translation(scale, rot, r.v3(12.0))
}

/// A random instance of one of `geometries` geometries, with a random mask
/// and, now and then, a material of its own (of the scene's two).
fn instance(r: &mut Rng, geometries: u32) -> Instance {
    let mask = match r.below(4) {
        0 => 0xFF,
        _ => (r.below(256) as u8) | 1 << r.below(8),
    };
    let inst = Instance::new(r.below(geometries), transform(r)).with_mask(mask);
    if r.below(5) == 0 {
        inst.with_material(1)
    } else {
        inst
    }
}

/// Geometry 0 is a mesh (its vertices can move), the others soups of
/// triangles and spheres.
fn two_level_scene(r: &mut Rng, geometries: u32, instances: usize) -> Scene {
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
    s.add_material(Material::metal(Vec3::splat(0.8), 0.2));
    let (positions, triangles) = wavy_grid(6, 0.6, 0.0);
    s.add_geometry(Geometry::mesh(&positions, &triangles, m).expect("mesh"));
    for _ in 1..geometries {
        let mut g = Geometry::new();
        for k in 0..(8 + r.below(60)) {
            let c = r.v3(2.5);
            if k % 4 == 0 {
                g.add_sphere(c, 0.05 + 0.6 * r.u(), m);
            } else {
                g.add_triangle(c, c + r.v3(1.2), c + r.v3(1.2), m);
            }
        }
        s.add_geometry(g);
    }
    for _ in 0..instances {
        s.add_instance(instance(r, geometries));
    }
    s
}

/// Rays from around the field towards its middle: some whole, some segments
/// (a `tmin` above 0, a finite `tmax`), random masks (some above the low 8
/// bits), some axis-parallel.
fn rays(r: &mut Rng, n: usize) -> Vec<Ray> {
    (0..n)
        .map(|i| {
            let o = r.v3(25.0);
            let mut d = r.v3(8.0) - o;
            if i % 13 == 0 {
                d.y = 0.0;
            }
            if d == Vec3::ZERO {
                d = Vec3::X;
            }
            let ray = match i % 4 {
                0 => Ray::segment(o, d, 0.0, 0.8),
                1 => Ray::segment(o, d, 0.4 + 0.3 * r.u(), 1.3),
                _ => Ray::new(o, d),
            };
            ray.with_mask(match i % 3 {
                0 => Ray::ALL,
                _ => r.below(1 << 9),
            })
        })
        .collect()
}

/// `hits` / `occluded` against core's answers on `accel`. Returns how many
/// rays hit.
///
/// `exact` (a software adapter: lavapipe's f32 operations are IEEE's): the
/// same `t` bits, primitive, instance and barycentrics, except where the
/// reported primitive is hit at exactly the same `t` (a tie: the walks'
/// orders differ), and the same occlusion. Otherwise (a GPU, whose WGSL
/// divisions and square roots may be off by a few ulps): `t` within the
/// reference tolerance, a different primitive or instance at such a `t`
/// counting as a tie, and occlusion different only for a hit within that
/// tolerance of the segment's ends.
fn check(
    accel: &Accel,
    rays: &[Ray],
    hits: &[Hit],
    occluded: &[bool],
    exact: bool,
    what: &str,
) -> usize {
    let mut hit_count = 0;
    for (i, ray) in rays.iter().enumerate() {
        let (want, got) = (accel.intersect(ray), hits[i]);
        assert_eq!(
            want.is_hit(),
            got.is_hit(),
            "{what} ray {i}: core {want:?}, wgpu {got:?}"
        );
        let core_occluded = accel.occluded(ray);
        if !exact {
            if want.is_hit() {
                hit_count += 1;
                assert!(
                    t_close(want.t, got.t, t_floor(ray)),
                    "{what} ray {i} {ray:?}: core {want:?}, wgpu {got:?}"
                );
            }
            if core_occluded != occluded[i] {
                let wide = Ray::segment(
                    ray.origin,
                    ray.dir,
                    ray.tmin * 0.999,
                    ray.tmax * 1.001 + 1e-6,
                )
                .with_mask(ray.mask);
                let h = accel.intersect(&wide);
                let near_end = |end: f32| t_close(h.t, end, t_floor(ray) + 1e-6);
                assert!(
                    h.is_hit() && (near_end(ray.tmin) || near_end(ray.tmax)),
                    "{what} ray {i}: occluded {} against core's {core_occluded}",
                    occluded[i]
                );
            }
            continue;
        }
        assert_eq!(
            want.t.to_bits(),
            got.t.to_bits(),
            "{what} ray {i} {ray:?}: core {want:?}, wgpu {got:?}"
        );
        assert_eq!(core_occluded, occluded[i], "{what} ray {i}: occluded");
        if !want.is_hit() {
            assert_eq!(got.instance, Hit::NO_INSTANCE, "{what} ray {i}");
            continue;
        }
        hit_count += 1;
        if (want.prim, want.instance) == (got.prim, got.instance) {
            assert_eq!(
                (want.u.to_bits(), want.v.to_bits()),
                (got.u.to_bits(), got.v.to_bits()),
                "{what} ray {i}"
            );
            continue;
        }
        // A tie: the reported primitive is hit at the same `t`.
        let rec = accel.instances()[got.instance as usize];
        let g = accel
            .instance(got.instance)
            .expect("live instance")
            .geometry;
        let object = object_ray(&rec, ray, f32::INFINITY);
        let pre = RayPre::new(&object);
        let slot = accel
            .geometry_slots(g)
            .expect("geometry")
            .find(|&s| accel.primitives()[s].id() == got.prim)
            .expect("primitive of the geometry");
        let t = ray_primitive(&pre, &accel.primitives()[slot], ray.tmin, f32::INFINITY);
        assert_eq!(
            t.map(|t| t.0.to_bits()),
            Some(want.t.to_bits()),
            "{what} ray {i}: core {want:?}, wgpu {got:?} is no tie"
        );
    }
    hit_count
}

/// Trace `rays` through `gpu` and check them against `accel` (the scene the
/// backend holds, as core has it), bit for bit on a software adapter.
fn check_backend(gpu: &mut WgpuBackend, accel: &Accel, rays: &[Ray], what: &str) -> usize {
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut occluded = vec![false; rays.len()];
    gpu.intersect(rays, &mut hits).expect("intersect");
    gpu.occluded(rays, &mut occluded).expect("occluded");
    let exact = gpu.info().software;
    check(accel, rays, &hits, &occluded, exact, what)
}

#[test]
fn two_level_walks_give_cores_answers() {
    with_backend(|gpu| {
        let mut total = 0;
        for seed in 1..6 {
            let mut r = Rng::new(seed);
            let scene = two_level_scene(&mut r, 1 + seed % 4, 1 + 12 * seed as usize);
            let rays = rays(&mut r, 3000);
            gpu.set_scene(&scene).expect("scene");
            let config = gpu.module_config();
            assert!(config.two_level && !config.octant_copies && !config.light_grid);
            let accel = gpu.accel().expect("scene").clone();
            assert!(config.stack_entries >= accel.depth() + accel.top_depth());
            total += check_backend(gpu, &accel, &rays, &format!("seed {seed}"));
        }
        assert!(total > 2500, "only {total} hits compared");
    });
}

#[test]
fn a_field_of_many_instances_gives_cores_answers() {
    with_backend(|gpu| {
        let mut r = Rng::new(77);
        let scene = two_level_scene(&mut r, 3, 1500);
        let rays = rays(&mut r, 4000);
        gpu.set_scene(&scene).expect("scene");
        let accel = gpu.accel().expect("scene").clone();
        let hits = check_backend(gpu, &accel, &rays, "field");
        assert!(hits > 1000, "{hits} hits");
    });
}

/// An update of random moves, additions, removals, masks, new vertices for
/// the mesh and now and then a rebuild of it, over the instances `alive` (by
/// index) of a scene of `geometries` geometries; `alive` follows it.
fn random_update<'a>(
    r: &mut Rng,
    step: u32,
    geometries: u32,
    alive: &mut Vec<bool>,
    vertices: &'a mut Vec<Vec3>,
) -> SceneUpdate<'a> {
    let mut u = SceneUpdate::new();
    let live = |alive: &[bool]| -> Vec<u32> {
        (0..alive.len() as u32)
            .filter(|&i| alive[i as usize])
            .collect()
    };
    for _ in 0..r.below(4) {
        let l = live(alive);
        if l.len() > 1 {
            let i = l[r.below(l.len() as u32) as usize];
            u.remove_instance(i);
            alive[i as usize] = false;
        }
    }
    let rebuild = step % 5 == 4;
    let l = live(alive);
    for _ in 0..r.below(6) {
        u.set_transform(l[r.below(l.len() as u32) as usize], transform(r));
    }
    for _ in 0..r.below(3) {
        u.set_mask(l[r.below(l.len() as u32) as usize], r.below(256) as u8);
    }
    // Additions take the lowest free indices, then new ones at the end (a
    // few more now and then, past the room the device keeps for them).
    let adds = if step % 4 == 2 { 12 } else { r.below(5) };
    for _ in 0..adds {
        u.add_instance(instance(r, geometries));
        match alive.iter().position(|a| !a) {
            Some(i) => alive[i] = true,
            None => alive.push(true),
        }
    }
    if step % 2 == 1 {
        let (positions, _) = wavy_grid(6, 1.5 * r.u(), r.s() * 3.0);
        *vertices = positions.iter().map(|p| *p + r.v3(0.2)).collect();
        u.set_vertices(0, vertices);
    }
    if rebuild {
        u.rebuild(0);
    }
    u
}

/// The scene's instances as the device must see them: core's records, each
/// live one's root its geometry's (core gives an instance added or moved in
/// the same update as a rebuild the root from before it).
fn fresh_accel(accel: &Accel) -> Accel {
    let mut accel = accel.clone();
    // An update that changes nothing leaves every record as it is; the
    // check below walks core's records, so their roots are put right here.
    let stale: Vec<u32> = (0..accel.instances().len() as u32)
        .filter(|&i| {
            accel.instance(i).is_some_and(|inst| {
                accel.geometry_root(inst.geometry) != Some(accel.instances()[i as usize].root())
            })
        })
        .collect();
    if !stale.is_empty() {
        let mut u = SceneUpdate::new();
        for &i in &stale {
            let inst = accel.instance(i).expect("live");
            u.set_transform(i, inst.transform);
        }
        accel.update(&u).expect("re-place");
    }
    accel
}

#[test]
fn updates_keep_cores_answers() {
    with_backend(|gpu| {
        let mut hits = 0;
        for seed in 1..4 {
            let mut r = Rng::new(100 + seed);
            let geometries = 1 + seed % 3;
            let scene = two_level_scene(&mut r, geometries, 6 + 3 * seed as usize);
            let rays = rays(&mut r, 1500);
            gpu.set_scene(&scene).expect("scene");
            let mut reference = Accel::build(&scene).expect("accel");
            let mut alive = vec![true; scene.instances().len()];
            for step in 0..10 {
                let mut vertices = Vec::new();
                let update = random_update(&mut r, step, geometries, &mut alive, &mut vertices);
                let changes = reference.update(&update).expect("update");
                let stats = gpu.update_scene(&update).expect("update");
                let what = format!("seed {seed} step {step}");
                assert_eq!(stats.changes, changes, "{what}");
                assert!(stats.stats.total >= stats.stats.build + stats.stats.upload);
                // The backend's scene is the one updated outside it.
                let accel = gpu.accel().expect("scene").clone();
                let bits = |a: &Accel| bytemuck::cast_slice::<_, u32>(a.instances()).to_vec();
                assert_eq!(bits(&accel), bits(&reference), "{what}");
                assert!(accel.nodes() == reference.nodes(), "{what}");
                assert_eq!(gpu.geometry_sah(0), reference.geometry_sah(0), "{what}");
                assert!(gpu.module_config().stack_entries >= accel.depth() + accel.top_depth());
                hits += check_backend(gpu, &fresh_accel(&accel), &rays, &what);
            }
        }
        assert!(hits > 1500, "only {hits} hits compared");
    });
}

#[test]
fn updates_of_flat_scenes_and_before_a_scene_are_refused() {
    let options = WgpuOptions {
        allow_software: true,
        ..Default::default()
    };
    // A backend of its own, to call before any scene.
    if let Ok(mut fresh) = WgpuBackend::new(options) {
        assert!(matches!(
            fresh.update_scene(&SceneUpdate::new()),
            Err(Error::NoScene)
        ));
        assert_eq!(fresh.geometry_sah(0), None);
    }
    with_backend(|gpu| {
        let mut flat = Scene::new();
        let m = flat.add_material(Material::lambertian(Vec3::ONE));
        flat.add_sphere(Vec3::ZERO, 1.0, m);
        gpu.set_scene(&flat).expect("scene");
        assert!(matches!(
            gpu.update_scene(&SceneUpdate::new()),
            Err(Error::NotTwoLevel)
        ));
        assert_eq!(gpu.geometry_sah(0), None);
        // A bad update leaves the two-level scene as it was.
        let mut r = Rng::new(5);
        let scene = two_level_scene(&mut r, 2, 20);
        let rays = rays(&mut r, 500);
        gpu.set_scene(&scene).expect("scene");
        let mut hits = vec![Hit::MISS; rays.len()];
        gpu.intersect(&rays, &mut hits).expect("intersect");
        let mut bad = SceneUpdate::new();
        bad.set_transform(0, Affine3A::from_translation(Vec3::X))
            .remove_instance(99);
        assert!(matches!(
            gpu.update_scene(&bad),
            Err(Error::InstanceOutOfRange { instance: 99, .. })
        ));
        let mut again = vec![Hit::MISS; rays.len()];
        gpu.intersect(&rays, &mut again).expect("intersect");
        assert_eq!(hits, again);
        assert!(gpu.geometry_sah(1).is_some() && gpu.geometry_sah(2).is_none());
    });
}

/// In a flat scene (one instance of mask 0xFF) a ray whose mask shares no
/// bit with 0xFF hits nothing; a hit names instance 0.
#[test]
fn flat_scenes_are_one_instance_of_mask_0xff() {
    with_backend(|gpu| {
        let mut flat = Scene::new();
        let m = flat.add_material(Material::lambertian(Vec3::ONE));
        flat.add_sphere(Vec3::new(0.0, 0.0, -5.0), 1.0, m);
        flat.add_triangle(
            Vec3::new(-1.0, -1.0, -9.0),
            Vec3::new(1.0, -1.0, -9.0),
            Vec3::new(0.0, 1.0, -9.0),
            m,
        );
        gpu.set_scene(&flat).expect("scene");
        let ray = Ray::new(Vec3::ZERO, Vec3::NEG_Z);
        let masks = [(Ray::ALL, true), (0x80, true), (0x100, false), (0, false)];
        let rays: Vec<Ray> = masks.iter().map(|&(m, _)| ray.with_mask(m)).collect();
        let mut hits = vec![Hit::MISS; rays.len()];
        let mut occ = vec![false; rays.len()];
        gpu.intersect(&rays, &mut hits).expect("intersect");
        gpu.occluded(&rays, &mut occ).expect("occluded");
        for (k, &(mask, seen)) in masks.iter().enumerate() {
            assert_eq!(hits[k].is_hit(), seen, "mask {mask:x}");
            assert_eq!(occ[k], seen, "mask {mask:x}");
            let instance = if seen { 0 } else { Hit::NO_INSTANCE };
            assert_eq!(hits[k].instance, instance, "mask {mask:x}");
        }
        assert_eq!(hits[0].prim, 0);
    });
}

/// A two-level scene of one geometry placed once with the identity renders
/// the flat scene's bytes, with every integrator (the flat scene's module
/// walks octant copies and answers shadow rays from the light grid; the
/// two-level one does neither).
#[test]
fn one_identity_instance_renders_the_flat_scene() {
    let mut flat = Scene::new();
    let grey = flat.add_material(Material::lambertian(Vec3::splat(0.6)));
    let mirror = flat.add_material(Material::metal(Vec3::splat(0.8), 0.1));
    let mut g = Geometry::new();
    for (c, r, m) in [
        (Vec3::new(0.0, -100.5, -1.0), 100.0, grey),
        (Vec3::new(0.0, 0.0, -1.0), 0.5, mirror),
        (Vec3::new(-1.0, 0.0, -1.2), 0.4, grey),
    ] {
        flat.add_sphere(c, r, m);
        g.add_sphere(c, r, m);
    }
    let (positions, triangles) = wavy_grid(4, 0.2, 0.3);
    let lifted: Vec<Vec3> = positions
        .iter()
        .map(|p| *p * 0.6 + Vec3::new(0.9, 0.0, -1.5))
        .collect();
    flat.add_mesh(&lifted, &triangles, grey).expect("mesh");
    g.add_mesh(&lifted, &triangles, grey).expect("mesh");
    let mut two = Scene::new();
    two.add_material(Material::lambertian(Vec3::splat(0.6)));
    two.add_material(Material::metal(Vec3::splat(0.8), 0.1));
    let g = two.add_geometry(g);
    two.add_instance(Instance::new(g, Affine3A::IDENTITY));
    for s in [&mut flat, &mut two] {
        s.light.position = Vec3::new(2.0, 3.0, 1.0);
    }
    let camera = Camera::look_at(
        Vec3::new(0.0, 0.5, 1.5),
        Vec3::new(0.0, 0.0, -1.0),
        Vec3::Y,
        50.0,
    );
    with_backend(|gpu| {
        let mut render = |scene: &Scene, integrator| {
            gpu.set_scene(scene).expect("scene");
            let settings = RenderSettings {
                integrator,
                spp: 2,
                max_depth: 4,
                ao_shadows: true,
                ..RenderSettings::default()
            };
            let mut image = Image::new(48, 32, PixelFormat::Srgba8).expect("image");
            let stats = gpu
                .render(&camera, &settings, &mut image, &NoProgress)
                .expect("render");
            (image.rgba8().to_vec(), stats.rays)
        };
        for integrator in Integrator::ALL {
            let want = render(&flat, integrator);
            let got = render(&two, integrator);
            let differ = want.0.iter().zip(&got.0).filter(|(a, b)| a != b).count();
            assert_eq!(
                differ, 0,
                "{integrator:?}: the instanced scene renders {differ} other pixels"
            );
            assert_eq!(want.1, got.1, "{integrator:?}: ray counts");
        }
    });
}

/// Instances with their own materials, scaled, rotated: a render of them
/// matches core's `render_pixel` (normals carried into the world, sizes
/// scaled, materials overridden).
#[test]
fn instanced_renders_match_core() {
    let mut r = Rng::new(31);
    let mut scene = two_level_scene(&mut r, 3, 40);
    scene.light.position = Vec3::new(0.0, 30.0, 10.0);
    let camera = Camera::look_at(Vec3::new(0.0, 8.0, 40.0), Vec3::ZERO, Vec3::Y, 45.0);
    let (w, h) = (48u32, 32u32);
    with_backend(|gpu| {
        gpu.set_scene(&scene).expect("scene");
        let accel = gpu.accel().expect("scene").clone();
        for integrator in Integrator::ALL {
            let settings = RenderSettings {
                integrator,
                spp: 2,
                max_depth: 3,
                ao_shadows: true,
                ao_distance: 4.0,
                ..RenderSettings::default()
            };
            let mut image = Image::new(w, h, PixelFormat::LinearF32).expect("image");
            gpu.render(&camera, &settings, &mut image, &NoProgress)
                .expect("render");
            let params = settings.params(&accel, &camera, w, h).expect("params");
            let mut close = 0;
            for (i, px) in image.linear().iter().enumerate() {
                let (x, y) = (i as u32 % w, i as u32 / w);
                let (c, _) = prism_core::integrator::render_pixel(&accel, &params, x, y);
                let d = (Vec3::new(px[0], px[1], px[2]) - c).abs().max_element();
                close += usize::from(d <= 1e-3 * (1.0 + c.max_element()));
            }
            // As the flat renders' test (adapter.rs): a rounding on a GPU may
            // flip a decision (a grazing hit, a shadow boundary, Russian
            // roulette), more often in the integrators that make more.
            let need = match integrator {
                Integrator::Whitted => 0.99,
                _ => 0.95,
            };
            let share = close as f64 / (w * h) as f64;
            eprintln!(
                "{integrator:?}: {:.1}% of pixels within 1e-3 of core",
                100.0 * share
            );
            assert!(
                share >= need,
                "{integrator:?}: only {share} of pixels match core"
            );
        }
    });
}

/// Lane refill (hardware adapters with subgroups) gives the plain kernels'
/// two-level answers bit for bit, on a field of instances with masks and a
/// batch several times larger than the GPU holds at once.
#[test]
fn two_level_lane_refill_gives_the_plain_kernels_results() {
    let open = |lane_refill| {
        WgpuBackend::new(WgpuOptions {
            allow_software: true,
            lane_refill,
            ..Default::default()
        })
    };
    let Ok(mut refill) = open(true) else {
        // No adapter: with_backend reports the skip (or fails under PRISM_REQUIRE_WGPU=1).
        return with_backend(|_| {});
    };
    if !refill.lane_refill() {
        assert!(
            !std::env::var("PRISM_REQUIRE_LANE_REFILL").is_ok_and(|v| v == "1"),
            "PRISM_REQUIRE_LANE_REFILL=1 but lane refill is not used on {}",
            refill.adapter()
        );
        eprintln!(
            "SKIPPED: lane refill is not used on {} (software adapter or no subgroup operations)",
            refill.adapter()
        );
        return;
    }
    let mut plain = open(false).expect("second backend");
    let mut r = Rng::new(41);
    let scene = two_level_scene(&mut r, 3, 2000);
    let rays = rays(&mut r, 1 << 21);
    refill.set_scene(&scene).expect("scene");
    plain.set_scene(&scene).expect("scene");
    let mut a = vec![Hit::MISS; rays.len()];
    let mut b = vec![Hit::MISS; rays.len()];
    refill.intersect(&rays, &mut a).expect("intersect");
    plain.intersect(&rays, &mut b).expect("intersect");
    let differ = a
        .iter()
        .zip(&b)
        .filter(|(x, y)| bytemuck::bytes_of(*x) != bytemuck::bytes_of(*y))
        .count();
    assert_eq!(differ, 0, "closest hits differ on {differ} rays");
    let mut oa = vec![false; rays.len()];
    let mut ob = vec![false; rays.len()];
    refill.occluded(&rays, &mut oa).expect("occluded");
    plain.occluded(&rays, &mut ob).expect("occluded");
    assert!(oa == ob, "occlusion differs");
    let hits = a.iter().filter(|h| h.is_hit()).count();
    assert!(hits > rays.len() / 10, "{hits} hits");
}

/// The scenes directory: `$PRISM_SCENES`, else `../shared/scenes` beside
/// the workspace; `None` when it holds no instanced set.
fn instanced_set() -> Option<PathBuf> {
    let dir = std::env::var_os("PRISM_SCENES")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/scenes"));
    let found = dir.join("instances/bunny-x1000.instances").exists();
    assert!(
        found || !std::env::var("PRISM_REQUIRE_SCENES").is_ok_and(|v| v == "1"),
        "PRISM_REQUIRE_SCENES=1 but {} holds no instances/bunny-x1000.instances",
        dir.display()
    );
    found.then_some(dir)
}

/// The bunny placed 1,000 times against Embree's hits (same primitive and
/// instance, `t` within 1e-4 relative; another one at such a `t` is a tie;
/// a mismatch only where core's own walk gives the same answer), on every
/// 16th ray of each set (lavapipe); `PRISM_FULL_RAYS=1` traces all.
#[test]
fn instanced_bunny_matches_embree_reference_hits() {
    let Some(dir) = instanced_set() else {
        eprintln!("SKIPPED: ../shared/scenes/instances not found (set PRISM_SCENES)");
        return;
    };
    let step = if std::env::var("PRISM_FULL_RAYS").is_ok_and(|v| v == "1") {
        1
    } else {
        16
    };
    let mesh = prism::mesh::load_mesh(dir.join("bunny.obj")).expect("read obj");
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::splat(0.7)));
    let g = scene.add_geometry(Geometry::mesh(&mesh.positions, &mesh.triangles, m).expect("mesh"));
    let placements =
        prism::rays::read_instances(dir.join("instances/bunny-x1000.instances")).expect("read");
    for t in placements {
        scene.add_instance(Instance::new(g, t));
    }
    with_backend(|gpu| {
        gpu.set_scene(&scene).expect("set_scene");
        for set in ["primary", "diffuse"] {
            let file = |ext: &str| dir.join(format!("instances/bunny-x1000.{set}.{ext}"));
            let rays = prism::rays::read_rays(file("rays")).expect("rays");
            let reference = prism::rays::read_instance_hits(file("ihits")).expect("ihits");
            assert_eq!(rays.len(), reference.len());
            let rays: Vec<Ray> = rays.into_iter().step_by(step).collect();
            let reference: Vec<_> = reference.into_iter().step_by(step).collect();
            let mut hits = vec![Hit::MISS; rays.len()];
            let mut occ = vec![false; rays.len()];
            gpu.intersect(&rays, &mut hits).expect("intersect");
            gpu.occluded(&rays, &mut occ).expect("occluded");
            let scales = instance_scales(&scene, &rays, &reference);
            let counts = AgreementCounts::compare_instanced(&rays, &hits, &reference, &scales);
            for (i, h) in hits.iter().enumerate() {
                assert_eq!(occ[i], h.is_hit(), "ray {i}: occluded against closest hit");
            }
            assert!(counts.passed(), "bunny-x1000.{set}: {counts:?}");
            let (matches, ties, mismatches) = (counts.matches, counts.ties, counts.mismatches);
            eprintln!(
                "bunny-x1000.{set} (every {step}th ray): {} rays, {matches} match, {ties} ties, \
                 {mismatches} mismatches",
                rays.len()
            );
        }
    });
}
