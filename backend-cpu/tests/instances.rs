//! Two-level scenes on the wide BVHs: the hits and occlusion of core's walk
//! (`Accel::intersect` / `occluded`) on random instance fields with
//! non-uniform scales, masks and ray segments, after random update
//! sequences, and renders of one identity instance equal to the flat scene's.

use glam::{Affine3A, Quat, Vec3};
use prism_core::instance::MAX_TRANSFORM_CONDITION;
use prism_core::intersect::RayPre;
use prism_core::rng::Pcg;
use prism_core::traverse::ray_primitive;
use prism_core::two_level::object_ray;
use prism_core::{
    Accel, Backend, Camera, Geometry, Hit, Image, Instance, Integrator, Material, NoProgress,
    PixelFormat, Ray, RenderSettings, Scene, SceneUpdate,
};
use prism_cpu::{CpuBackend, Traversal};

/// The wide traversals this CPU has: 8-wide (where AVX2 is) and 4-wide.
const WIDE: [Traversal; 2] = [Traversal::Wide, Traversal::Wide4];

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

/// A random instance of one of `geometries` geometries, with a random mask.
fn instance(r: &mut Rng, geometries: u32) -> Instance {
    let mask = match r.below(4) {
        0 => 0xFF,
        _ => (r.below(256) as u8) | 1 << r.below(8),
    };
    Instance::new(r.below(geometries), transform(r)).with_mask(mask)
}

/// Geometry 0 is a mesh (its vertices can move), the others soups of
/// triangles and spheres.
fn two_level_scene(r: &mut Rng, geometries: u32, instances: usize) -> Scene {
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
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
/// (a `tmin` above 0, a finite `tmax`), random masks, some axis-parallel.
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

/// `hits`/`occluded` against core's answers on `accel`: the same `t`, `u`,
/// `v`, primitive and instance, except where the reported primitive is hit at
/// exactly the same `t` (a tie). Returns how many rays hit.
fn check(accel: &Accel, rays: &[Ray], hits: &[Hit], occluded: &[bool], what: &str) -> usize {
    let mut hit_count = 0;
    for (i, ray) in rays.iter().enumerate() {
        let (want, got) = (accel.intersect(ray), hits[i]);
        assert_eq!(
            want.t.to_bits(),
            got.t.to_bits(),
            "{what} ray {i} {ray:?}: core {want:?}, wide {got:?}"
        );
        assert_eq!(want.is_hit(), got.is_hit(), "{what} ray {i}");
        assert_eq!(accel.occluded(ray), occluded[i], "{what} ray {i}: occluded");
        if !want.is_hit() {
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
        // A tie: the wide answer's primitive is hit at the same `t`.
        let rec = accel.instances()[got.instance as usize];
        let g = accel
            .instance(got.instance)
            .expect("live instance")
            .geometry;
        let object = object_ray(&rec, ray, f32::INFINITY);
        let pre = RayPre::new(&object);
        let slots = accel.geometry_slots(g).expect("geometry");
        let slot = slots
            .into_iter()
            .find(|&s| accel.primitives()[s].id() == got.prim)
            .expect("primitive of the geometry");
        let t = ray_primitive(&pre, &accel.primitives()[slot], ray.tmin, f32::INFINITY);
        assert_eq!(
            t.map(|t| t.0.to_bits()),
            Some(want.t.to_bits()),
            "{what} ray {i}: core {want:?}, wide {got:?} is no tie"
        );
    }
    hit_count
}

/// Trace `rays` through `cpu` and check them against its scene's core walk.
fn check_backend(cpu: &mut CpuBackend, rays: &[Ray], what: &str) -> usize {
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut occluded = vec![false; rays.len()];
    cpu.intersect(rays, &mut hits).expect("intersect");
    cpu.occluded(rays, &mut occluded).expect("occluded");
    let accel = cpu.accel().expect("scene").clone();
    check(&accel, rays, &hits, &occluded, what)
}

#[test]
fn two_level_walks_give_cores_answers() {
    let mut total = 0;
    for seed in 1..9 {
        let mut r = Rng::new(seed);
        let scene = two_level_scene(&mut r, 1 + seed % 4, 1 + 9 * seed as usize);
        let rays = rays(&mut r, 3000);
        for traversal in WIDE {
            let mut cpu = CpuBackend::with_threads(2).expect("cpu");
            cpu.set_traversal(traversal).expect("traversal");
            cpu.set_scene(&scene).expect("scene");
            total += check_backend(&mut cpu, &rays, &format!("{traversal:?} seed {seed}"));
        }
    }
    assert!(total > 4000, "only {total} hits compared");
}

#[test]
fn a_field_of_many_instances_gives_cores_answers() {
    let mut r = Rng::new(77);
    let scene = two_level_scene(&mut r, 3, 2500);
    let rays = rays(&mut r, 4000);
    for traversal in WIDE {
        let mut cpu = CpuBackend::with_threads(2).expect("cpu");
        cpu.set_traversal(traversal).expect("traversal");
        cpu.set_scene(&scene).expect("scene");
        let hits = check_backend(&mut cpu, &rays, &format!("{traversal:?}"));
        assert!(hits > 1000, "{traversal:?}: {hits} hits");
    }
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
    // Core gives instances placed in the same update as a rebuild the root
    // their geometry had before it (see `an_instance_added_with_a_rebuild_is_walked_from_its_new_root`):
    // rebuilds come in updates of their own here, besides removals and masks.
    let rebuild = step % 5 == 4;
    let l = live(alive);
    for _ in 0..if rebuild { 0 } else { r.below(6) } {
        u.set_transform(l[r.below(l.len() as u32) as usize], transform(r));
    }
    for _ in 0..r.below(3) {
        u.set_mask(l[r.below(l.len() as u32) as usize], r.below(256) as u8);
    }
    // Additions take the lowest free indices, then new ones at the end.
    for _ in 0..if rebuild { 0 } else { r.below(5) } {
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

#[test]
fn updates_keep_cores_answers() {
    for seed in 1..7 {
        let mut r = Rng::new(100 + seed);
        let geometries = 1 + seed % 3;
        let scene = two_level_scene(&mut r, geometries, 6 + 3 * seed as usize);
        let rays = rays(&mut r, 1500);
        // Two backends fed the same updates: each width's own incremental path.
        let mut backends: Vec<CpuBackend> = WIDE
            .iter()
            .map(|&t| {
                let mut cpu = CpuBackend::with_threads(1).expect("cpu");
                cpu.set_traversal(t).expect("traversal");
                cpu.set_scene(&scene).expect("scene");
                cpu
            })
            .collect();
        let mut reference = Accel::build(&scene).expect("accel");
        let mut alive = vec![true; scene.instances().len()];
        let mut hits = 0;
        for step in 0..10 {
            let mut vertices = Vec::new();
            let update = random_update(&mut r, step, geometries, &mut alive, &mut vertices);
            let changes = reference.update(&update).expect("update");
            for (cpu, traversal) in backends.iter_mut().zip(WIDE) {
                let stats = cpu.update_scene(&update).expect("update");
                assert_eq!(
                    stats.changes, changes,
                    "{traversal:?} seed {seed} step {step}"
                );
                assert!(stats.stats.total >= stats.stats.build);
                let what = format!("{traversal:?} seed {seed} step {step}");
                hits += check_backend(cpu, &rays, &what);
                // The backend's scene is the one updated outside it.
                let accel = cpu.accel().expect("scene");
                // (By bits: a record without a material holds a NaN.)
                let bits = |a: &Accel| bytemuck::cast_slice::<_, u32>(a.instances()).to_vec();
                assert_eq!(bits(accel), bits(&reference), "{what}");
                assert!(accel.nodes() == reference.nodes(), "{what}");
                assert_eq!(cpu.geometry_sah(0), reference.geometry_sah(0), "{what}");
            }
            let alive_in_core = (0..alive.len() as u32).map(|i| reference.instance(i).is_some());
            assert!(
                alive_in_core.eq(alive.iter().copied()),
                "seed {seed} step {step}"
            );
        }
        assert!(hits > 2000, "seed {seed}: only {hits} hits compared");
    }
}

#[test]
fn updates_of_flat_scenes_and_before_a_scene_are_refused() {
    let mut cpu = CpuBackend::with_threads(1).expect("cpu");
    assert!(matches!(
        cpu.update_scene(&SceneUpdate::new()),
        Err(prism_core::Error::NoScene)
    ));
    assert_eq!(cpu.geometry_sah(0), None);
    let mut flat = Scene::new();
    let m = flat.add_material(Material::lambertian(Vec3::ONE));
    flat.add_sphere(Vec3::ZERO, 1.0, m);
    cpu.set_scene(&flat).expect("scene");
    assert!(matches!(
        cpu.update_scene(&SceneUpdate::new()),
        Err(prism_core::Error::NotTwoLevel)
    ));
    assert_eq!(cpu.geometry_sah(0), None);
    // A bad update leaves the two-level scene as it was.
    let mut r = Rng::new(5);
    let scene = two_level_scene(&mut r, 2, 20);
    let rays = rays(&mut r, 500);
    cpu.set_scene(&scene).expect("scene");
    let mut hits = vec![Hit::MISS; rays.len()];
    cpu.intersect(&rays, &mut hits).expect("intersect");
    let mut bad = SceneUpdate::new();
    bad.set_transform(0, Affine3A::from_translation(Vec3::X))
        .remove_instance(99);
    assert!(cpu.update_scene(&bad).is_err());
    let mut again = vec![Hit::MISS; rays.len()];
    cpu.intersect(&rays, &mut again).expect("intersect");
    assert_eq!(hits, again);
}

/// In a flat scene (one instance of mask 0xFF) a ray whose mask shares no
/// bit with 0xFF hits nothing, on every traversal.
#[test]
fn flat_scenes_are_one_instance_of_mask_0xff() {
    let mut flat = Scene::new();
    let m = flat.add_material(Material::lambertian(Vec3::ONE));
    flat.add_sphere(Vec3::new(0.0, 0.0, -5.0), 1.0, m);
    flat.add_triangle(
        Vec3::new(-1.0, -1.0, -9.0),
        Vec3::new(1.0, -1.0, -9.0),
        Vec3::new(0.0, 1.0, -9.0),
        m,
    );
    let ray = Ray::new(Vec3::ZERO, Vec3::NEG_Z);
    for traversal in [Traversal::Wide, Traversal::Wide4, Traversal::Binary] {
        let mut cpu = CpuBackend::with_threads(1).expect("cpu");
        cpu.set_traversal(traversal).expect("traversal");
        cpu.set_scene(&flat).expect("scene");
        for (mask, seen) in [(Ray::ALL, true), (0x80, true), (0x100, false), (0, false)] {
            let rays = [ray.with_mask(mask)];
            let (mut hit, mut occ) = ([Hit::MISS], [false]);
            cpu.intersect(&rays, &mut hit).expect("intersect");
            cpu.occluded(&rays, &mut occ).expect("occluded");
            assert_eq!(hit[0].is_hit(), seen, "{traversal:?} mask {mask:x}");
            assert_eq!(occ[0], seen, "{traversal:?} mask {mask:x}");
            if seen {
                assert_eq!((hit[0].prim, hit[0].instance), (0, 0));
            }
        }
    }
}

/// A two-level scene of one geometry placed once with the identity renders
/// the flat scene's bytes, with every integrator and traversal.
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
    let render = |scene: &Scene, traversal, integrator| {
        let mut cpu = CpuBackend::with_threads(2).expect("cpu");
        cpu.set_traversal(traversal).expect("traversal");
        cpu.set_scene(scene).expect("scene");
        let settings = RenderSettings {
            integrator,
            spp: 2,
            max_depth: 4,
            ao_shadows: true,
            ..RenderSettings::default()
        };
        let mut image = Image::new(48, 32, PixelFormat::Srgba8).expect("image");
        let stats = cpu
            .render(&camera, &settings, &mut image, &NoProgress)
            .expect("render");
        (image.rgba8().to_vec(), stats.rays)
    };
    for integrator in Integrator::ALL {
        let want = render(&flat, Traversal::Binary, integrator);
        for traversal in [Traversal::Wide, Traversal::Wide4, Traversal::Binary] {
            assert!(
                render(&two, traversal, integrator) == want,
                "{integrator:?} {traversal:?}: the instanced scene renders other bytes"
            );
        }
    }
}

/// An instance added in the same update as a geometry's rebuild is walked
/// from its geometry's new root: its hits are those of the same scene built
/// from scratch. (Core's own record of it keeps the root from before the
/// rebuild, so core's walk enters it at a wrong node.)
#[test]
fn an_instance_added_with_a_rebuild_is_walked_from_its_new_root() {
    let mut r = Rng::new(3);
    let scene = two_level_scene(&mut r, 2, 4);
    let (positions, triangles) = wavy_grid(6, 0.6, 0.0);
    let moved: Vec<Vec3> = positions.iter().map(|p| *p + r.v3(2.0)).collect();
    let added = Instance::new(1, Affine3A::from_translation(Vec3::new(0.0, 0.0, -40.0)));
    let mut fresh = Scene::new();
    let m = fresh.add_material(Material::lambertian(Vec3::splat(0.5)));
    fresh.add_geometry(Geometry::mesh(&moved, &triangles, m).expect("mesh"));
    fresh.add_geometry(scene.geometries()[1].clone());
    for inst in scene.instances().iter().chain([&added]) {
        fresh.add_instance(*inst);
    }
    let fresh = Accel::build(&fresh).expect("accel");
    // Rays at the added instance, through its geometry's box.
    let rays: Vec<Ray> = (0..400)
        .map(|_| {
            Ray::new(
                Vec3::new(0.0, 0.0, -20.0),
                r.v3(2.5) - Vec3::new(0.0, 0.0, 20.0),
            )
        })
        .collect();
    for traversal in WIDE {
        let mut cpu = CpuBackend::with_threads(1).expect("cpu");
        cpu.set_traversal(traversal).expect("traversal");
        cpu.set_scene(&scene).expect("scene");
        let mut u = SceneUpdate::new();
        u.set_vertices(0, &moved);
        cpu.update_scene(&u).expect("update");
        let mut u = SceneUpdate::new();
        u.rebuild(0).add_instance(added);
        assert_eq!(cpu.update_scene(&u).expect("update").changes.added, [4]);
        let mut hits = vec![Hit::MISS; rays.len()];
        cpu.intersect(&rays, &mut hits).expect("intersect");
        let mut seen = 0;
        for (ray, hit) in rays.iter().zip(&hits) {
            let want = fresh.intersect(ray);
            assert_eq!(want.t.to_bits(), hit.t.to_bits(), "{traversal:?} {ray:?}");
            assert_eq!((want.prim, want.instance), (hit.prim, hit.instance));
            seen += usize::from(hit.instance == 4);
        }
        assert!(
            seen > 50,
            "{traversal:?}: {seen} hits on the added instance"
        );
    }
}

/// The mesh's vertices moved in several updates in a row, with instances
/// moved beside them, and nothing read of core's own trees in between (the
/// wide trees are refit straight from the vertices, core's left behind):
/// every answer is that of a scene refit on the host after each update, and
/// a render (which brings core's trees up to date for its shading) is the
/// binary traversal's.
#[test]
fn refits_in_a_row_keep_cores_answers() {
    for seed in 1..4 {
        let mut r = Rng::new(300 + seed);
        let scene = two_level_scene(&mut r, 2, 12);
        let rays = rays(&mut r, 1500);
        let mut backends: Vec<CpuBackend> = WIDE
            .iter()
            .map(|&t| {
                let mut cpu = CpuBackend::with_threads(1).expect("cpu");
                cpu.set_traversal(t).expect("traversal");
                cpu.set_scene(&scene).expect("scene");
                cpu
            })
            .collect();
        let mut reference = Accel::build(&scene).expect("accel");
        let mut hits = 0;
        for step in 0..5 {
            let (positions, _) = wavy_grid(6, 1.5 * r.u(), r.s() * 3.0);
            let mut vertices: Vec<Vec3> = positions.iter().map(|p| *p + r.v3(0.3)).collect();
            // Triangles without area: two vertices made one, now and then.
            for _ in 0..step * 3 {
                let i = r.below(vertices.len() as u32 - 1) as usize;
                vertices[i + 1] = vertices[i];
            }
            let mut u = SceneUpdate::new();
            u.set_vertices(0, &vertices);
            if step % 2 == 1 {
                u.set_transform(r.below(12), transform(&mut r));
            }
            reference.update(&u).expect("update");
            for (cpu, traversal) in backends.iter_mut().zip(WIDE) {
                cpu.update_scene(&u).expect("update");
                let what = format!("{traversal:?} seed {seed} step {step}");
                let mut got = vec![Hit::MISS; rays.len()];
                let mut occluded = vec![false; rays.len()];
                cpu.intersect(&rays, &mut got).expect("intersect");
                cpu.occluded(&rays, &mut occluded).expect("occluded");
                hits += check(&reference, &rays, &got, &occluded, &what);
            }
        }
        assert!(hits > 500, "seed {seed}: only {hits} hits compared");
        let camera = Camera::look_at(Vec3::new(9.0, 14.0, 17.0), Vec3::ZERO, Vec3::Y, 50.0);
        let settings = RenderSettings {
            spp: 1,
            max_depth: 3,
            ..RenderSettings::default()
        };
        for (cpu, traversal) in backends.iter_mut().zip(WIDE) {
            let mut frames = Vec::new();
            for t in [traversal, Traversal::Binary] {
                cpu.set_traversal(t).expect("traversal");
                let mut image = Image::new(40, 30, PixelFormat::LinearF32).expect("image");
                cpu.render(&camera, &settings, &mut image, &NoProgress)
                    .expect("render");
                frames.push(image.linear().to_vec());
            }
            assert!(
                frames[0] == frames[1],
                "{traversal:?} seed {seed}: the refit scene renders other pixels"
            );
        }
    }
}

/// Instances whose placed boxes overflow `f32` (a geometry spanning 1e30
/// under a scale of 1e15), among others of ordinary size, are still hit by
/// the wide walks, as by core's (which boxes them unbounded there).
#[test]
fn instances_whose_world_boxes_overflow_are_still_hit() {
    let ray = Ray::new(Vec3::new(-2e16, 0.0, 5e15), Vec3::NEG_Z);
    for at in [0, 3, 7, 12, 19] {
        let mut scene = Scene::new();
        let m = scene.add_material(Material::lambertian(Vec3::ONE));
        let mut huge = Geometry::new();
        huge.add_sphere(Vec3::ZERO, 1.0, m);
        huge.add_triangle(
            Vec3::new(1e30, -9.25, -4.0),
            Vec3::new(1.0, -1.0, 1.0),
            Vec3::new(0.0, 1.0, 1.0),
            m,
        );
        let huge = scene.add_geometry(huge);
        let mut ball = Geometry::new();
        ball.add_sphere(Vec3::ZERO, 1.0, m);
        let ball = scene.add_geometry(ball);
        // A row of 20 unit spheres scaled by 1e15, 3e15 apart, the one at
        // `at` on the ray; it and two more carry the huge triangle.
        for i in 0..20u32 {
            let place = Affine3A::from_scale_rotation_translation(
                Vec3::splat(1e15),
                Quat::from_rotation_y(0.3),
                Vec3::new(-2e16 + 3e15 * (i as f32 - at as f32), 0.0, 0.0),
            );
            let g = if [at, (at + 5) % 20, (at + 11) % 20].contains(&i) {
                huge
            } else {
                ball
            };
            scene.add_instance(Instance::new(g, place));
        }
        for traversal in WIDE {
            let mut cpu = CpuBackend::with_threads(2).expect("cpu");
            cpu.set_traversal(traversal).expect("traversal");
            cpu.set_scene(&scene).expect("scene");
            let mut hits = [Hit::MISS];
            cpu.intersect(&[ray], &mut hits).expect("intersect");
            let what = format!("{traversal:?}, instance {at}: {:?}", hits[0]);
            assert_eq!((hits[0].instance, hits[0].prim), (at, 0), "{what}");
            let mut occluded = [false];
            cpu.occluded(&[ray], &mut occluded).expect("occluded");
            assert!(occluded[0], "{what}");
        }
    }
}
