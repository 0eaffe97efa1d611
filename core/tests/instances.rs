//! Two-level scenes: the walk over instances against brute force, masks,
//! refit against a fresh build, updates against a scene built from scratch,
//! the top-level builders, and bad input.

mod common;

use common::{config, rotation, vec3};
use glam::{Affine3A, Vec3};
use prism_core::gpu::{GpuInstance, RenderParams, TRAVERSAL_STACK_SIZE, check_tree};
use prism_core::instance::MAX_INSTANCES;
use prism_core::integrator::render_pixel;
use prism_core::intersect::RayPre;
use prism_core::traverse::ray_primitive;
use prism_core::two_level::object_ray;
use prism_core::{
    Accel, Camera, Error, Geometry, Hit, Instance, Integrator, Material, Ray, RenderSettings,
    Scene, SceneUpdate, TopLevelBuild,
};
use proptest::prelude::*;

/// One primitive of a random geometry: a sphere (centre, radius) or a
/// triangle (a corner and two edges).
#[derive(Clone, Debug)]
enum Prim {
    Sphere(Vec3, f32),
    Triangle(Vec3, Vec3, Vec3),
}

fn prim() -> impl Strategy<Value = Prim> {
    prop_oneof![
        (vec3(3.0), 0.05f32..1.0).prop_map(|(c, r)| Prim::Sphere(c, r)),
        (vec3(3.0), vec3(1.5), vec3(1.5)).prop_map(|(a, e1, e2)| Prim::Triangle(a, a + e1, a + e2)),
    ]
}

/// An object-to-world transform: a rotation, a scale of each axis in [0.3, 3]
/// (not uniform, so spheres become ellipsoids) and a translation.
fn transform() -> impl Strategy<Value = Affine3A> {
    (rotation(), vec3(1.0), vec3(12.0)).prop_map(|(r, s, t)| {
        let scale = Vec3::splat(1.65) + s * 1.35;
        Affine3A::from_scale_rotation_translation(scale, r, t)
    })
}

/// A random instance over `geometries` geometries, with a random mask.
fn instance(geometries: usize) -> impl Strategy<Value = Instance> {
    (0..geometries as u32, transform(), any::<u8>())
        .prop_map(|(g, t, mask)| Instance::new(g, t).with_mask(mask | 1))
}

fn geometry(prims: &[Prim], m: u32) -> Geometry {
    let mut g = Geometry::new();
    for p in prims {
        match *p {
            Prim::Sphere(c, r) => {
                g.add_sphere(c, r, m);
            }
            Prim::Triangle(a, b, c) => {
                g.add_triangle(a, b, c, m);
            }
        }
    }
    g
}

fn two_level(geometries: &[Vec<Prim>], instances: &[Instance], build: TopLevelBuild) -> Scene {
    let mut scene = Scene::new();
    scene.top_level_build = build;
    let m = scene.add_material(Material::lambertian(Vec3::ONE));
    for prims in geometries {
        scene.add_geometry(geometry(prims, m));
    }
    for inst in instances {
        scene.add_instance(*inst);
    }
    scene
}

/// A ray from the field's outskirts towards its middle, with a random mask.
fn ray() -> impl Strategy<Value = Ray> {
    (vec3(25.0), vec3(8.0), any::<u32>(), 0u8..4).prop_map(|(o, target, mask, kind)| {
        let d = target - o;
        let d = if d == Vec3::ZERO { Vec3::X } else { d };
        let r = match kind {
            0 => Ray::segment(o, d, 0.0, 0.7),
            _ => Ray::new(o, d),
        };
        r.with_mask(if kind == 3 { u32::MAX } else { mask })
    })
}

/// The closest hit over every visible instance and every slot, each instance
/// entered by the same object ray the walk uses: `(t, instance, slot)`.
fn brute_force(accel: &Accel, ray: &Ray) -> Option<(f32, u32, usize)> {
    let mut best: Option<(f32, u32, usize)> = None;
    for (i, rec) in accel.instances().iter().enumerate() {
        if ray.mask & rec.mask() == 0 || rec.root() == u32::MAX {
            continue;
        }
        let tmax = best.map_or(ray.tmax, |b| b.0);
        let object = object_ray(rec, ray, tmax);
        let pre = RayPre::new(&object);
        let g = accel.instance(i as u32).expect("live instance").geometry;
        for slot in accel.geometry_slots(g).expect("geometry") {
            let t_best = best.map_or(ray.tmax, |b| b.0);
            if let Some((t, _, _)) =
                ray_primitive(&pre, &accel.primitives()[slot], ray.tmin, t_best)
            {
                best = Some((t, i as u32, slot));
            }
        }
    }
    best
}

/// Whether `hit` (by slot) is the brute-force answer, up to exact ties.
fn agrees(accel: &Accel, ray: &Ray, hit: &Hit) -> Result<(), TestCaseError> {
    match brute_force(accel, ray) {
        None => prop_assert!(!hit.is_hit(), "walk hit {:?}, brute force nothing", hit),
        Some((t, instance, slot)) => {
            prop_assert!(
                hit.is_hit(),
                "walk missed, brute force hit {instance}/{slot} at {t}"
            );
            prop_assert_eq!(
                hit.t.to_bits(),
                t.to_bits(),
                "{:?} against {}/{}",
                hit,
                instance,
                slot
            );
            if (hit.instance, hit.prim as usize) != (instance, slot) {
                // A tie: the walk's answer must be at the same t too.
                let rec: &GpuInstance = &accel.instances()[hit.instance as usize];
                let object = object_ray(rec, ray, f32::INFINITY);
                let at = ray_primitive(
                    &RayPre::new(&object),
                    &accel.primitives()[hit.prim as usize],
                    ray.tmin,
                    f32::INFINITY,
                );
                prop_assert_eq!(at.map(|a| a.0.to_bits()), Some(t.to_bits()));
            }
        }
    }
    prop_assert_eq!(accel.occluded(ray), brute_force(accel, ray).is_some());
    Ok(())
}

proptest! {
    #![proptest_config(config(64))]

    /// The two-level walk (either top builder) finds the closest hit over
    /// every instance the ray's mask lets it see, and any hit agrees.
    #[test]
    fn walk_finds_the_brute_force_hit(
        geometries in prop::collection::vec(prop::collection::vec(prim(), 1..24), 1..4),
        seeds in prop::collection::vec(instance(8), 1..40),
        rays in prop::collection::vec(ray(), 48),
        morton in any::<bool>(),
    ) {
        let instances: Vec<Instance> = seeds
            .into_iter()
            .map(|i| Instance { geometry: i.geometry % geometries.len() as u32, ..i })
            .collect();
        let build = if morton { TopLevelBuild::Morton } else { TopLevelBuild::Sah };
        let accel = Accel::build(&two_level(&geometries, &instances, build)).unwrap();
        prop_assert!(check_tree(accel.top_nodes(), accel.instances().len()).is_ok());
        prop_assert!((accel.top_depth() as usize) < TRAVERSAL_STACK_SIZE);
        for ray in &rays {
            let hit = accel.intersect_slot(ray);
            agrees(&accel, ray, &hit)?;
            // A masked-out instance is never hit.
            if hit.is_hit() {
                prop_assert!(ray.mask & instances[hit.instance as usize].mask as u32 != 0);
            }
        }
    }

    /// After new vertices (the tree refit), every hit is that of a scene
    /// built from scratch with those vertices: same `t`, same instance and
    /// primitive (up to exact ties).
    #[test]
    fn refit_hits_equal_a_fresh_build(
        seeds in prop::collection::vec(instance(1), 1..12),
        grid in 2usize..8,
        moves in prop::collection::vec(vec3(0.8), 64),
        rays in prop::collection::vec(ray(), 48),
    ) {
        let (positions, triangles) = wavy_grid(grid, 0.0);
        let moved: Vec<Vec3> = positions.iter().zip(moves.iter().cycle()).map(|(p, m)| *p + *m).collect();
        let instances: Vec<Instance> = seeds.iter().map(|i| i.with_mask(0xFF)).collect();
        let scene = |p: &[Vec3]| {
            let mut scene = Scene::new();
            let m = scene.add_material(Material::lambertian(Vec3::ONE));
            scene.add_geometry(Geometry::mesh(p, &triangles, m).unwrap());
            for inst in &instances {
                scene.add_instance(*inst);
            }
            scene
        };
        let mut refit = Accel::build(&scene(&positions)).unwrap();
        let sah = refit.geometry_sah(0).unwrap();
        prop_assert_eq!(sah.current, sah.built);
        let mut update = SceneUpdate::new();
        update.set_vertices(0, &moved);
        let changes = refit.update(&update).unwrap();
        prop_assert_eq!(changes.refit, vec![0]);
        prop_assert!(changes.top_rebuilt);
        let fresh = Accel::build(&scene(&moved)).unwrap();
        for ray in &rays {
            let (a, b) = (refit.intersect(ray), fresh.intersect(ray));
            prop_assert_eq!(a.t.to_bits(), b.t.to_bits(), "{:?} {:?}", a, b);
            prop_assert_eq!(refit.occluded(ray), fresh.occluded(ray));
            agrees(&refit, ray, &refit.intersect_slot(ray))?;
        }
        // A rebuild makes the tree fresh again.
        let mut update = SceneUpdate::new();
        update.rebuild(0);
        refit.update(&update).unwrap();
        let sah = refit.geometry_sah(0).unwrap();
        prop_assert_eq!(sah.ratio(), 1.0);
        for ray in &rays {
            agrees(&refit, ray, &refit.intersect_slot(ray))?;
        }
    }

    /// A sequence of updates (removals, additions, moves, new masks) gives the
    /// hits of the resulting instance list built from scratch, and additions
    /// take the lowest free indices.
    #[test]
    fn updates_match_a_scene_built_from_scratch(
        geometries in prop::collection::vec(prop::collection::vec(prim(), 1..12), 1..3),
        first in prop::collection::vec(instance(3), 1..20),
        steps in prop::collection::vec((prop::collection::vec(any::<prop::sample::Index>(), 0..4), prop::collection::vec(instance(3), 0..4), prop::collection::vec((any::<prop::sample::Index>(), transform()), 0..4), prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3), prop::option::of(any::<prop::sample::Index>())), 1..5),
        rays in prop::collection::vec(ray(), 24),
    ) {
        let fix = |i: Instance| Instance { geometry: i.geometry % geometries.len() as u32, ..i };
        let mut current: Vec<Option<Instance>> = first.iter().map(|i| Some(fix(*i))).collect();
        let instances: Vec<Instance> = first.iter().map(|i| fix(*i)).collect();
        let mut accel = Accel::build(&two_level(&geometries, &instances, TopLevelBuild::Auto)).unwrap();
        for (removals, additions, moves, masks, rebuild) in steps {
            let live: Vec<u32> = (0..current.len() as u32).filter(|&i| current[i as usize].is_some()).collect();
            let mut update = SceneUpdate::new();
            let mut removed = Vec::new();
            for r in &removals {
                if live.is_empty() { break; }
                let i = live[r.index(live.len())];
                if !removed.contains(&i) {
                    removed.push(i);
                    update.remove_instance(i);
                }
            }
            for a in &additions {
                update.add_instance(fix(*a));
            }
            let survivors: Vec<u32> = live.iter().copied().filter(|i| !removed.contains(i)).collect();
            let mut moved = Vec::new();
            for (k, t) in &moves {
                if survivors.is_empty() { break; }
                let i = survivors[k.index(survivors.len())];
                update.set_transform(i, *t);
                moved.push((i, *t));
            }
            let mut masked = Vec::new();
            for (k, m) in &masks {
                if survivors.is_empty() { break; }
                let i = survivors[k.index(survivors.len())];
                update.set_mask(i, *m);
                masked.push((i, *m));
            }
            // A geometry rebuilt in the same update (its tree, and every later
            // geometry's, may move: instances added or moved beside it must
            // enter the tree where it is now).
            if let Some(g) = rebuild {
                update.rebuild(g.index(geometries.len()) as u32);
            }
            let changes = accel.update(&update).unwrap();
            // The model: removals, then additions into the lowest free slots.
            for &i in &removed {
                current[i as usize] = None;
            }
            let mut expected_added = Vec::new();
            for a in &additions {
                let slot = current.iter().position(Option::is_none).unwrap_or(current.len());
                if slot == current.len() {
                    current.push(None);
                }
                current[slot] = Some(fix(*a));
                expected_added.push(slot as u32);
            }
            prop_assert_eq!(&changes.added, &expected_added);
            for (i, t) in moved {
                current[i as usize].as_mut().unwrap().transform = t;
            }
            for (i, m) in masked {
                current[i as usize].as_mut().unwrap().mask = m;
            }
            // The same instance list built from scratch (a removed instance:
            // a placeholder no ray sees).
            let rebuilt: Vec<Instance> = current
                .iter()
                .map(|c| c.unwrap_or(Instance::new(0, Affine3A::IDENTITY).with_mask(0)))
                .collect();
            let fresh = Accel::build(&two_level(&geometries, &rebuilt, TopLevelBuild::Auto)).unwrap();
            for (i, c) in current.iter().enumerate() {
                prop_assert_eq!(accel.instance(i as u32), *c);
            }
            for ray in &rays {
                let (a, b) = (accel.intersect(ray), fresh.intersect(ray));
                prop_assert_eq!(a.t.to_bits(), b.t.to_bits());
                prop_assert_eq!(accel.occluded(ray), fresh.occluded(ray));
                agrees(&accel, ray, &accel.intersect_slot(ray))?;
            }
        }
    }
}

/// A grid of `n x n` quads in the xz-plane, each two triangles, its heights a
/// wave of amplitude `amp`.
fn wavy_grid(n: usize, amp: f32) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let mut positions = Vec::new();
    for z in 0..=n {
        for x in 0..=n {
            let (fx, fz) = (x as f32 - n as f32 / 2.0, z as f32 - n as f32 / 2.0);
            positions.push(Vec3::new(fx, amp * (fx * 0.7).sin() * (fz * 0.5).cos(), fz));
        }
    }
    let mut triangles = Vec::new();
    let w = (n + 1) as u32;
    for z in 0..n as u32 {
        for x in 0..n as u32 {
            let i = z * w + x;
            triangles.push([i, i + 1, i + w]);
            triangles.push([i + 1, i + w + 1, i + w]);
        }
    }
    (positions, triangles)
}

/// Instanced triangles give the hits of the same triangles carried into the
/// world and traced as a flat scene: rays aimed at triangle centres hit the
/// same triangle of the same instance at the same distance (to rounding).
#[test]
fn instanced_triangles_match_world_space_triangles() {
    let (positions, triangles) = wavy_grid(6, 0.6);
    let transforms = [
        Affine3A::from_scale_rotation_translation(
            Vec3::new(0.5, 2.0, 1.5),
            glam::Quat::from_rotation_y(0.7) * glam::Quat::from_rotation_x(0.3),
            Vec3::new(-8.0, 1.0, 3.0),
        ),
        Affine3A::from_scale_rotation_translation(
            Vec3::splat(3.0),
            glam::Quat::from_rotation_z(-1.1),
            Vec3::new(9.0, -2.0, -4.0),
        ),
    ];
    let mut instanced = Scene::new();
    let mut flat = Scene::new();
    let m = instanced.add_material(Material::lambertian(Vec3::ONE));
    flat.add_material(Material::lambertian(Vec3::ONE));
    instanced.add_geometry(Geometry::mesh(&positions, &triangles, m).unwrap());
    for t in &transforms {
        instanced.add_instance(Instance::new(0, *t));
        let world: Vec<Vec3> = positions.iter().map(|p| t.transform_point3(*p)).collect();
        flat.add_mesh(&world, &triangles, m).unwrap();
    }
    let instanced = Accel::build(&instanced).unwrap();
    let flat = Accel::build(&flat).unwrap();
    let eye = Vec3::new(0.0, 30.0, 40.0);
    let mut checked = 0;
    for (i, t) in transforms.iter().enumerate() {
        for (k, tri) in triangles.iter().enumerate() {
            let c = tri
                .iter()
                .map(|&v| t.transform_point3(positions[v as usize]))
                .sum::<Vec3>()
                / 3.0;
            let ray = Ray::new(eye, c - eye);
            let (a, b) = (instanced.intersect(&ray), flat.intersect(&ray));
            assert_eq!(a.is_hit(), b.is_hit(), "instance {i} triangle {k}");
            if !a.is_hit() {
                continue;
            }
            let flat_instance = b.prim as usize / triangles.len();
            let flat_prim = b.prim as usize % triangles.len();
            if (a.instance as usize, a.prim as usize) == (flat_instance, flat_prim) {
                assert!((a.t - b.t).abs() <= 1e-4 * b.t, "{a:?} {b:?}");
                checked += 1;
            }
        }
    }
    assert!(
        checked > triangles.len(),
        "only {checked} triangles compared"
    );
}

/// A ray whose mask shares no bit with an instance's never hits it, and one
/// that shares a bit does; a flat scene is one instance of mask 0xFF.
#[test]
fn masks_hide_instances() {
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::ONE));
    let mut ball = Geometry::new();
    ball.add_sphere(Vec3::ZERO, 1.0, m);
    let ball = scene.add_geometry(ball);
    for (z, mask) in [(-5.0, 0b001u8), (-10.0, 0b010), (-15.0, 0b100)] {
        scene.add_instance(
            Instance::new(ball, Affine3A::from_translation(Vec3::new(0.0, 0.0, z))).with_mask(mask),
        );
    }
    let accel = Accel::build(&scene).unwrap();
    let ray = Ray::new(Vec3::ZERO, Vec3::NEG_Z);
    for (mask, want) in [
        (0b111, Some(0)),
        (0b110, Some(1)),
        (0b100, Some(2)),
        (0b1000, None),
        (0, None),
    ] {
        let hit = accel.intersect(&ray.with_mask(mask));
        assert_eq!(hit.is_hit().then_some(hit.instance), want, "mask {mask:b}");
        assert_eq!(accel.occluded(&ray.with_mask(mask)), want.is_some());
    }
    let mut flat = Scene::new();
    let m = flat.add_material(Material::lambertian(Vec3::ONE));
    flat.add_sphere(Vec3::new(0.0, 0.0, -5.0), 1.0, m);
    let flat = Accel::build(&flat).unwrap();
    assert_eq!(flat.intersect(&ray).instance, 0);
    assert!(!flat.intersect(&ray.with_mask(0x100)).is_hit());
    assert!(!flat.occluded(&ray.with_mask(0)));
    assert!(flat.occluded(&ray.with_mask(0x80)));
}

/// A two-level scene of one geometry placed once with the identity renders
/// exactly the flat scene's pixels, with every integrator; an instance's
/// material override takes the place of the geometry's.
#[test]
fn identity_instance_renders_the_flat_scene() {
    let mut flat = Scene::new();
    let grey = flat.add_material(Material::lambertian(Vec3::splat(0.6)));
    let red = flat.add_material(Material::lambertian(Vec3::new(0.9, 0.1, 0.1)));
    let mut g = Geometry::new();
    for (c, r) in [
        (Vec3::new(0.0, -100.5, -1.0), 100.0),
        (Vec3::new(0.0, 0.0, -1.0), 0.5),
    ] {
        flat.add_sphere(c, r, grey);
        g.add_sphere(c, r, grey);
    }
    let (positions, triangles) = wavy_grid(3, 0.2);
    let lifted: Vec<Vec3> = positions
        .iter()
        .map(|p| *p * 0.3 + Vec3::new(0.8, 0.0, -1.5))
        .collect();
    flat.add_mesh(&lifted, &triangles, grey).unwrap();
    g.add_mesh(&lifted, &triangles, grey).unwrap();
    let mut two = Scene::new();
    two.add_material(Material::lambertian(Vec3::splat(0.6)));
    two.add_material(Material::lambertian(Vec3::new(0.9, 0.1, 0.1)));
    let g = two.add_geometry(g);
    two.add_instance(Instance::new(g, Affine3A::IDENTITY));
    for s in [&mut flat, &mut two] {
        s.light.position = Vec3::new(2.0, 3.0, 1.0);
    }
    let (flat_accel, two_accel) = (Accel::build(&flat).unwrap(), Accel::build(&two).unwrap());
    let camera = Camera::look_at(
        Vec3::new(0.0, 0.5, 1.5),
        Vec3::new(0.0, 0.0, -1.0),
        Vec3::Y,
        50.0,
    );
    let params = |accel: &Accel, integrator| -> RenderParams {
        RenderSettings {
            integrator,
            spp: 2,
            max_depth: 4,
            ao_shadows: true,
            ..RenderSettings::default()
        }
        .params(accel, &camera, 24, 16)
        .unwrap()
    };
    for integrator in Integrator::ALL {
        let (pf, pt) = (
            params(&flat_accel, integrator),
            params(&two_accel, integrator),
        );
        for y in 0..16 {
            for x in 0..24 {
                let (a, b) = (
                    render_pixel(&flat_accel, &pf, x, y),
                    render_pixel(&two_accel, &pt, x, y),
                );
                assert_eq!(
                    a.0.to_array().map(f32::to_bits),
                    b.0.to_array().map(f32::to_bits),
                    "{integrator:?} ({x}, {y})"
                );
                assert_eq!(a.1, b.1);
            }
        }
    }
    // The override: the pixels that saw grey (r == g) now see red (r > 3 g).
    let mut over = two.clone();
    over.add_instance(Instance::new(g, Affine3A::IDENTITY).with_material(red));
    let mut over_scene = Scene::new();
    over_scene.add_material(Material::lambertian(Vec3::splat(0.6)));
    over_scene.add_material(Material::lambertian(Vec3::new(0.9, 0.1, 0.1)));
    over_scene.add_geometry(over.geometries()[0].clone());
    over_scene.add_instance(Instance::new(0, Affine3A::IDENTITY).with_material(red));
    let over = Accel::build(&over_scene).unwrap();
    let (pg, pr) = (
        params(&two_accel, Integrator::Ao),
        params(&over, Integrator::Ao),
    );
    let mut seen = 0;
    for y in 0..16 {
        for x in 0..24 {
            let (grey, red) = (
                render_pixel(&two_accel, &pg, x, y).0,
                render_pixel(&over, &pr, x, y).0,
            );
            if two_accel
                .intersect(&Ray::new(camera.look_from, Vec3::NEG_Z))
                .is_hit()
                && grey.x > 0.05
                && grey.x == grey.y
            {
                assert!(red.x > 3.0 * red.y, "({x}, {y}): {red:?}");
                seen += 1;
            }
        }
    }
    assert!(seen > 100, "{seen} pixels compared");
}

/// Bad instances and updates are refused with an error naming the item, and
/// the scene stays as it was.
#[test]
fn bad_instances_and_updates_are_named() {
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::ONE));
    let (positions, triangles) = wavy_grid(2, 0.1);
    let mesh = scene.add_geometry(Geometry::mesh(&positions, &triangles, m).unwrap());
    let mut ball = Geometry::new();
    ball.add_sphere(Vec3::ZERO, 1.0, m);
    let ball = scene.add_geometry(ball);
    scene.add_instance(Instance::new(
        mesh,
        Affine3A::from_translation(Vec3::new(0.0, 0.0, -5.0)),
    ));
    scene.add_instance(Instance::new(
        ball,
        Affine3A::from_translation(Vec3::new(3.0, 0.0, -5.0)),
    ));
    let good = Accel::build(&scene).unwrap();

    // In the scene.
    let singular = Affine3A::from_scale(Vec3::new(1.0, 0.0, 1.0));
    let nan = Affine3A::from_translation(Vec3::new(f32::NAN, 0.0, 0.0));
    let flat = Affine3A::from_scale(Vec3::new(1.0, 1e-4, 1e4));
    for (inst, check) in [
        (Instance::new(mesh, singular), "singular"),
        (Instance::new(mesh, nan), "not finite"),
        (Instance::new(mesh, flat), "nearly singular"),
    ] {
        let mut bad = scene.clone();
        bad.add_instance(inst);
        match Accel::build(&bad) {
            Err(Error::TransformInvalid {
                instance: 2,
                reason,
                ..
            }) => assert!(reason.contains(check), "{reason}"),
            other => panic!("{check}: {other:?}"),
        }
    }
    let mut bad = scene.clone();
    bad.add_instance(Instance::new(7, Affine3A::IDENTITY));
    assert!(matches!(
        Accel::build(&bad),
        Err(Error::GeometryOutOfRange {
            instance: 2,
            geometry: 7,
            count: 2
        })
    ));
    let mut bad = scene.clone();
    bad.add_instance(Instance::new(0, Affine3A::IDENTITY).with_material(9));
    assert!(matches!(
        Accel::build(&bad),
        Err(Error::InstanceMaterialOutOfRange {
            instance: 2,
            material: 9,
            ..
        })
    ));
    let mut bad = scene.clone();
    bad.add_sphere(Vec3::ZERO, 1.0, m);
    assert!(matches!(
        Accel::build(&bad),
        Err(Error::LoosePrimitives { count: 1 })
    ));
    let mut bad = scene.clone();
    bad.add_geometry(Geometry::new());
    assert!(matches!(
        Accel::build(&bad),
        Err(Error::EmptyGeometry { geometry: 2 })
    ));
    let mut bad = scene.clone();
    let mut nan_ball = Geometry::new();
    nan_ball.add_sphere(Vec3::ZERO, -1.0, m);
    bad.add_geometry(nan_ball);
    match Accel::build(&bad) {
        Err(Error::InGeometry {
            geometry: 2,
            source,
        }) => {
            assert!(matches!(
                *source,
                Error::SphereRadiusInvalid { prim: 0, .. }
            ))
        }
        other => panic!("{other:?}"),
    }
    // More instances than an index names: refused from the length alone.
    let mut big = scene.clone();
    let many = std::iter::repeat_n(Instance::new(0, Affine3A::IDENTITY), MAX_INSTANCES);
    assert!(matches!(
        big.add_instances(many),
        Err(Error::TooManyInstances { .. })
    ));
    assert_eq!(big.instances().len(), 2);

    // In updates: each refused, the scene as it was.
    let rays: Vec<Ray> = (0..64)
        .map(|i| {
            Ray::new(
                Vec3::new(i as f32 * 0.1 - 1.0, 0.3, 2.0),
                Vec3::new(0.02 * i as f32, -0.1, -1.0),
            )
        })
        .collect();
    let same = |a: &Accel| rays.iter().all(|r| a.intersect(r) == good.intersect(r));
    let moved = vec![Vec3::ONE; positions.len()];
    let short = vec![Vec3::ONE; positions.len() - 1];
    let mut nan_vertices = positions.clone();
    nan_vertices[3].y = f32::INFINITY;
    type Check = fn(&Error) -> bool;
    let cases: Vec<(SceneUpdate, Check)> = vec![
        (
            {
                let mut u = SceneUpdate::new();
                u.set_transform(0, singular);
                u
            },
            |e| matches!(e, Error::TransformInvalid { instance: 0, .. }),
        ),
        (
            {
                let mut u = SceneUpdate::new();
                u.set_transform(5, Affine3A::IDENTITY);
                u
            },
            |e| matches!(e, Error::InstanceOutOfRange { instance: 5, .. }),
        ),
        (
            {
                let mut u = SceneUpdate::new();
                u.remove_instance(1).set_mask(1, 3);
                u
            },
            |e| {
                matches!(
                    e,
                    Error::InstanceOutOfRange {
                        instance: 1,
                        reason: "removed"
                    }
                )
            },
        ),
        (
            {
                let mut u = SceneUpdate::new();
                u.remove_instance(0).remove_instance(0);
                u
            },
            |e| matches!(e, Error::InstanceOutOfRange { instance: 0, .. }),
        ),
        (
            {
                let mut u = SceneUpdate::new();
                u.add_instance(Instance::new(4, Affine3A::IDENTITY));
                u
            },
            |e| {
                matches!(
                    e,
                    Error::GeometryOutOfRange {
                        instance: 2,
                        geometry: 4,
                        ..
                    }
                )
            },
        ),
        (
            {
                let mut u = SceneUpdate::new();
                u.add_instance(Instance::new(0, nan));
                u
            },
            |e| matches!(e, Error::TransformInvalid { instance: 2, .. }),
        ),
        (
            {
                let mut u = SceneUpdate::new();
                u.set_vertices(ball, &moved);
                u
            },
            |e| matches!(e, Error::NotAMesh { geometry: 1 }),
        ),
        (
            {
                let mut u = SceneUpdate::new();
                u.set_vertices(9, &moved);
                u
            },
            |e| {
                matches!(
                    e,
                    Error::UnknownGeometry {
                        geometry: 9,
                        count: 2
                    }
                )
            },
        ),
        (
            {
                let mut u = SceneUpdate::new();
                u.set_vertices(mesh, &short);
                u
            },
            |e| {
                matches!(
                    e,
                    Error::VertexCountMismatch {
                        geometry: 0,
                        given: 8,
                        expected: 9
                    }
                )
            },
        ),
        (
            {
                let mut u = SceneUpdate::new();
                u.set_vertices(mesh, &nan_vertices);
                u
            },
            |e| matches!(e, Error::InGeometry { geometry: 0, .. }),
        ),
        (
            {
                let mut u = SceneUpdate::new();
                u.rebuild(3);
                u
            },
            |e| matches!(e, Error::UnknownGeometry { geometry: 3, .. }),
        ),
    ];
    for (k, (update, check)) in cases.into_iter().enumerate() {
        // Valid changes beside the bad one must not be applied either.
        let mut update = update;
        update.set_transform(0, Affine3A::from_translation(Vec3::new(0.0, 9.0, 0.0)));
        let mut accel = good.clone();
        match accel.update(&update) {
            Err(e) => assert!(check(&e), "case {k}: {e}"),
            Ok(c) => panic!("case {k}: accepted, {c:?}"),
        }
        assert!(same(&accel), "case {k}: the scene changed");
        let bits = |a: &Accel| bytemuck::cast_slice::<GpuInstance, u32>(a.instances()).to_vec();
        assert_eq!(bits(&accel), bits(&good), "case {k}");
    }
    // A refused transform after accepted ones (an update that only moves):
    // the accepted ones are undone too.
    let mut accel = good.clone();
    let mut update = SceneUpdate::new();
    update
        .set_transform(1, Affine3A::from_translation(Vec3::new(5.0, 5.0, 5.0)))
        .set_transform(0, Affine3A::from_translation(Vec3::new(1.0, 2.0, 3.0)))
        .set_mask(1, 0)
        .set_transform(0, singular);
    assert!(matches!(
        accel.update(&update),
        Err(Error::TransformInvalid { instance: 0, .. })
    ));
    assert!(same(&accel));
    let bits = |a: &Accel| bytemuck::cast_slice::<GpuInstance, u32>(a.instances()).to_vec();
    assert_eq!(bits(&accel), bits(&good));
    assert_eq!(accel.bounds(), good.bounds());
    // The same with an instance past the last after accepted moves.
    let mut update = SceneUpdate::new();
    update
        .set_transform(0, Affine3A::from_translation(Vec3::new(1.0, 2.0, 3.0)))
        .set_transform(1, Affine3A::from_translation(Vec3::new(5.0, 5.0, 5.0)))
        .set_transform(9, Affine3A::IDENTITY);
    assert!(matches!(
        accel.update(&update),
        Err(Error::InstanceOutOfRange { instance: 9, .. })
    ));
    assert!(same(&accel));
    assert_eq!(bits(&accel), bits(&good));
    let mut update = SceneUpdate::new();
    assert!(matches!(
        update.add_instances(std::iter::repeat_n(
            Instance::new(0, Affine3A::IDENTITY),
            MAX_INSTANCES + 1
        )),
        Err(Error::TooManyInstances { .. })
    ));
    assert!(update.is_empty());
    // Updates need a two-level scene.
    let mut flat = Scene::new();
    let m = flat.add_material(Material::lambertian(Vec3::ONE));
    flat.add_sphere(Vec3::ZERO, 1.0, m);
    let mut flat = Accel::build(&flat).unwrap();
    assert!(matches!(
        flat.update(&SceneUpdate::new()),
        Err(Error::NotTwoLevel)
    ));
}

/// The top builders over random boxes, some removed: valid trees of leaves
/// of one, every live instance in exactly one leaf, depth within the stack.
#[test]
fn top_trees_hold_every_live_instance_once() {
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::ONE));
    let mut ball = Geometry::new();
    ball.add_sphere(Vec3::ZERO, 1.0, m);
    scene.add_geometry(ball);
    let mut seed = 7u32;
    let mut next = move || {
        seed = seed.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
        (seed >> 8) as f32 / (1u32 << 24) as f32
    };
    for n in [1usize, 2, 3, 17, 300, 5000] {
        for build in [
            TopLevelBuild::Sah,
            TopLevelBuild::Morton,
            TopLevelBuild::Auto,
        ] {
            let mut s = scene.clone();
            s.top_level_build = build;
            for i in 0..n {
                // Clusters and duplicates: every fourth instance shares a place.
                let p = if i % 4 == 0 {
                    Vec3::splat(1.0)
                } else {
                    Vec3::new(next(), next(), next()) * 50.0
                };
                s.add_instance(Instance::new(0, Affine3A::from_translation(p)));
            }
            let mut accel = Accel::build(&s).unwrap();
            let mut update = SceneUpdate::new();
            for i in (0..n as u32).step_by(3).skip(1) {
                update.remove_instance(i);
            }
            accel.update(&update).unwrap();
            let top = accel.top_nodes();
            assert!(
                check_tree(top, accel.instances().len()).is_ok(),
                "{n} {build:?}"
            );
            assert!((accel.top_depth() as usize) < TRAVERSAL_STACK_SIZE);
            let mut seen = vec![0u32; accel.instances().len()];
            for node in top {
                for (index, count) in [
                    (node.left_index(), node.left_count()),
                    (node.right_index(), node.right_count()),
                ] {
                    if count > 0 {
                        assert_eq!(count, 1);
                        seen[index as usize] += 1;
                    }
                }
            }
            for (i, s) in seen.iter().enumerate() {
                let live = accel.instance(i as u32).is_some();
                assert_eq!(*s, live as u32, "{n} {build:?} instance {i}");
            }
        }
    }
}

/// Instances added and moved in the same update as a rebuild that moves the
/// trees after the rebuilt one enter those trees where they now lie.
#[test]
fn instances_placed_beside_a_rebuild_enter_the_moved_trees() {
    let (positions, triangles) = wavy_grid(8, 0.3);
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::ONE));
    let mesh = scene.add_geometry(Geometry::mesh(&positions, &triangles, m).unwrap());
    let mut balls = Geometry::new();
    for k in 0..20 {
        balls.add_sphere(Vec3::new(k as f32 * 0.5 - 5.0, (k % 3) as f32, 0.0), 0.3, m);
    }
    let balls = scene.add_geometry(balls);
    scene.add_instance(Instance::new(
        mesh,
        Affine3A::from_translation(Vec3::new(0.0, 0.0, -10.0)),
    ));
    scene.add_instance(Instance::new(
        balls,
        Affine3A::from_translation(Vec3::new(0.0, 3.0, -12.0)),
    ));
    let mut accel = Accel::build(&scene).unwrap();
    // Scramble the mesh (its refit tree keeps its shape) ...
    let scrambled: Vec<Vec3> = positions
        .iter()
        .enumerate()
        .map(|(i, p)| {
            Vec3::new(
                p.z * 1.7,
                ((i * 7919) % 13) as f32 * 0.4,
                p.x * 0.3 + ((i * 31) % 5) as f32,
            )
        })
        .collect();
    let mut update = SceneUpdate::new();
    update.set_vertices(mesh, &scrambled);
    accel.update(&update).unwrap();
    let before = accel.geometry_nodes(mesh).unwrap().len();
    // ... then rebuild it, placing and moving instances of the other geometry.
    let placed = Affine3A::from_translation(Vec3::new(1.0, -2.0, -11.0));
    let moved = Affine3A::from_translation(Vec3::new(-1.0, 2.5, -9.0));
    let mut update = SceneUpdate::new();
    update
        .rebuild(mesh)
        .add_instance(Instance::new(balls, placed))
        .set_transform(1, moved);
    let changes = accel.update(&update).unwrap();
    assert!(changes.rebuilt);
    let after = accel.geometry_nodes(mesh).unwrap().len();
    assert_ne!(
        before, after,
        "the rebuild must change the node count for this test to mean anything"
    );
    let mut fresh = Scene::new();
    let m = fresh.add_material(Material::lambertian(Vec3::ONE));
    let mesh = fresh.add_geometry(Geometry::mesh(&scrambled, &triangles, m).unwrap());
    fresh.add_geometry(scene.geometries()[1].clone());
    fresh.add_instance(Instance::new(
        mesh,
        Affine3A::from_translation(Vec3::new(0.0, 0.0, -10.0)),
    ));
    fresh.add_instance(Instance::new(balls, moved));
    fresh.add_instance(Instance::new(balls, placed));
    let fresh = Accel::build(&fresh).unwrap();
    let mut hits = 0;
    for i in 0..400 {
        let d = Vec3::new(
            (i % 20) as f32 * 0.06 - 0.6,
            (i / 20) as f32 * 0.04 - 0.4,
            -1.0,
        );
        let ray = Ray::new(Vec3::ZERO, d);
        let (a, b) = (accel.intersect(&ray), fresh.intersect(&ray));
        assert_eq!(
            (a.t.to_bits(), a.instance),
            (b.t.to_bits(), b.instance),
            "ray {i}"
        );
        hits += (a.is_hit() && a.instance != 0) as u32;
    }
    assert!(hits > 20, "{hits} hits on the moved and placed instances");
}

/// The instanced agreement rule: the same primitive of another instance at
/// the same `t` is a tie, not a match; the floor grows with the rounding of
/// the ray carried into the instance; a short or missing answer is a
/// mismatch; and core's walk agrees with Embree's bunny-x1000 hits.
#[test]
fn instanced_agreement_counts_instances() {
    use prism_core::reference::{Agreement, AgreementCounts, classify_instanced, instance_scales};
    let ray = Ray::new(Vec3::ZERO, Vec3::Z);
    let hit = Hit::new(2.0, 0.0, 0.0, 7, 3);
    assert_eq!(
        classify_instanced(&ray, &hit, (2.0, 7, 3), 0.0),
        Agreement::Match
    );
    assert_eq!(
        classify_instanced(&ray, &hit, (2.0, 7, 4), 0.0),
        Agreement::Tie
    );
    assert_eq!(
        classify_instanced(&ray, &hit, (2.1, 7, 3), 0.0),
        Agreement::Mismatch
    );
    assert_eq!(
        classify_instanced(&ray, &Hit::MISS, (2.0, 7, 3), 0.0),
        Agreement::Mismatch
    );
    let miss = (f32::INFINITY, Hit::NO_PRIM, Hit::NO_INSTANCE);
    assert_eq!(
        classify_instanced(&ray, &Hit::MISS, miss, 0.0),
        Agreement::Match
    );
    // A tiny t: off by 1e-5 is too much at the origin, within rounding for
    // an instance placed a thousand units away.
    let tiny = Hit::new(1e-3 + 1e-5, 0.0, 0.0, 7, 3);
    assert_eq!(
        classify_instanced(&ray, &tiny, (1e-3, 7, 3), 0.0),
        Agreement::Mismatch
    );
    assert_eq!(
        classify_instanced(&ray, &tiny, (1e-3, 7, 3), 1000.0),
        Agreement::Match
    );
    let counts =
        AgreementCounts::compare_instanced(&[ray, ray], &[hit], &[(2.0, 7, 3), (2.0, 7, 3)], &[]);
    assert_eq!((counts.total, counts.matches, counts.mismatches), (2, 1, 1));
    // The scale: a hit on an instance far from the origin gets its
    // translation's magnitude; a glancing one more.
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::ONE));
    let quad = Geometry::mesh(
        &[
            Vec3::new(-1.0, -1.0, 0.0),
            Vec3::new(1.0, -1.0, 0.0),
            Vec3::new(1.0, 1.0, 0.0),
            Vec3::new(-1.0, 1.0, 0.0),
        ],
        &[[0, 1, 2], [0, 2, 3]],
        m,
    )
    .unwrap();
    let g = scene.add_geometry(quad);
    scene.add_instance(Instance::new(
        g,
        Affine3A::from_translation(Vec3::new(500.0, 0.0, 10.0)),
    ));
    let straight = Ray::new(Vec3::new(500.0, 0.0, 0.0), Vec3::Z);
    let glancing = Ray::new(Vec3::new(490.0, 0.0, 0.0), Vec3::new(1.0, 0.0, 0.01));
    let scales = instance_scales(&scene, &[straight, glancing], &[(10.0, 0, 0), (10.0, 0, 0)]);
    assert_eq!(scales[0], 500.0);
    // cos a = 0.01 / |(1, 0, 0.01)|: the translation's 500 over it.
    let expected = 500.0 * Vec3::new(1.0, 0.0, 0.01).length() / 0.01;
    assert!(
        (scales[1] - expected).abs() < 1.0,
        "{} vs {expected}",
        scales[1]
    );
}

/// A `Fork` that runs the second half first, as a pool may.
struct RightFirst;
impl prism_core::bvh::Fork for RightFirst {
    fn join<RA: Send, RB: Send>(
        &self,
        a: impl FnOnce() -> RA + Send,
        b: impl FnOnce() -> RB + Send,
    ) -> (RA, RB) {
        let rb = b();
        (a(), rb)
    }
}

/// Large updates spread through a `Fork` give the records, top tree and hits
/// of the one-thread update, bit for bit; a refused transform among them
/// leaves the scene as it was.
#[test]
fn forked_updates_equal_one_thread_updates() {
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::ONE));
    let mut ball = Geometry::new();
    ball.add_sphere(Vec3::ZERO, 0.4, m);
    let ball = scene.add_geometry(ball);
    let n = 6000u32;
    let place = |i: u32, frame: f32| {
        let f = i as f32;
        Affine3A::from_translation(Vec3::new(
            (f * 0.37).sin() * 40.0 + frame,
            (f * 0.11).cos() * 20.0,
            -(f % 97.0),
        ))
    };
    for i in 0..n {
        scene.add_instance(Instance::new(ball, place(i, 0.0)));
    }
    for build in [TopLevelBuild::Sah, TopLevelBuild::Morton] {
        scene.top_level_build = build;
        let mut one = Accel::build(&scene).unwrap();
        let mut many = one.clone();
        let mut update = SceneUpdate::new();
        for i in 0..n {
            update.set_transform(i, place(i, 1.5));
        }
        let a = one.update(&update).unwrap();
        let b = many
            .update_with_fork(&update, prism_core::RefitOn::Host, &RightFirst)
            .unwrap();
        assert_eq!(a, b);
        let bits = |x: &Accel| bytemuck::cast_slice::<GpuInstance, u32>(x.instances()).to_vec();
        assert_eq!(bits(&one), bits(&many), "{build:?}");
        assert_eq!(one.top_nodes(), many.top_nodes(), "{build:?}");
        // A bad transform deep in the list: refused, nothing moved.
        let mut bad = SceneUpdate::new();
        for i in 0..n {
            let t = if i == 4321 {
                Affine3A::from_scale(Vec3::ZERO)
            } else {
                place(i, 9.0)
            };
            bad.set_transform(i, t);
        }
        match many.update_with_fork(&bad, prism_core::RefitOn::Host, &RightFirst) {
            Err(Error::TransformInvalid { instance: 4321, .. }) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(bits(&one), bits(&many));
    }
}

/// A `Fork` that runs `a` on a scoped thread while `b` runs on this one.
struct Threads;
impl prism_core::bvh::Fork for Threads {
    fn join<RA: Send, RB: Send>(
        &self,
        a: impl FnOnce() -> RA + Send,
        b: impl FnOnce() -> RB + Send,
    ) -> (RA, RB) {
        std::thread::scope(|s| {
            let a = s.spawn(a);
            let rb = b();
            (a.join().expect("a half of the build panicked"), rb)
        })
    }
}

/// The Morton top tree built with its halves through a `Fork` (threads, or
/// the second half first) is the one-thread tree node for node, with its
/// depth, for sizes about the forking bound and with many instances at one
/// place (equal codes, split at the middle).
#[test]
fn forked_morton_top_trees_equal_one_thread_trees() {
    use prism_core::top_level::FORK_MIN_TOP_KEYS;
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::ONE));
    let mut ball = Geometry::new();
    ball.add_sphere(Vec3::ZERO, 0.4, m);
    let ball = scene.add_geometry(ball);
    let place = |i: u32, frame: f32| {
        let f = i as f32;
        // Every ninth instance on one spot: runs of equal codes.
        if i.is_multiple_of(9) {
            return Affine3A::from_translation(Vec3::new(frame, 1.0, 2.0));
        }
        Affine3A::from_translation(Vec3::new(
            (f * 0.37).sin() * 40.0 + frame,
            (f * 0.11).cos() * 20.0,
            -(f % 97.0),
        ))
    };
    for n in [
        1,
        2,
        3,
        FORK_MIN_TOP_KEYS as u32 - 1,
        FORK_MIN_TOP_KEYS as u32,
        FORK_MIN_TOP_KEYS as u32 + 1,
        2 * FORK_MIN_TOP_KEYS as u32 + 3,
        9000,
    ] {
        let mut s = scene.clone();
        s.top_level_build = TopLevelBuild::Morton;
        for i in 0..n {
            s.add_instance(Instance::new(ball, place(i, 0.0)));
        }
        let one = Accel::build(&s).unwrap();
        let mut update = SceneUpdate::new();
        for i in 0..n {
            update.set_transform(i, place(i, 2.5));
        }
        let mut one_moved = one.clone();
        one_moved.update(&update).unwrap();
        for (name, moved) in [
            ("threads", {
                let mut a = one.clone();
                a.update_with_fork(&update, prism_core::RefitOn::Host, &Threads)
                    .unwrap();
                a
            }),
            ("right first", {
                let mut a = one.clone();
                a.update_with_fork(&update, prism_core::RefitOn::Host, &RightFirst)
                    .unwrap();
                a
            }),
        ] {
            assert_eq!(
                bytemuck::cast_slice::<_, u32>(moved.top_nodes()),
                bytemuck::cast_slice::<_, u32>(one_moved.top_nodes()),
                "{n} instances, {name}"
            );
            assert_eq!(moved.top_depth(), one_moved.top_depth(), "{n}, {name}");
            assert_eq!(moved.top_nodes().len(), n.max(2) as usize - 1, "{n}");
        }
    }
}

/// An instance moved in the same update that rebuilds another geometry's
/// tree (whose node count changes, moving every later tree) keeps the root
/// of its own geometry's tree, not the one it had before the rebuild.
/// (Found by the `scene_trace` fuzz target.)
#[test]
fn a_moved_instance_follows_its_tree_through_a_rebuild() {
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::ONE));
    // Two zero-area triangles: the first build leaves them out of the tree,
    // a rebuild over the slots keeps them, so the tree grows.
    let first = Geometry::mesh(
        &[
            Vec3::new(-1.0, -1.0, 0.0),
            Vec3::new(1.0, -1.0, 1.0),
            Vec3::new(0.0, 0.0, 1.0),
            Vec3::new(1.0, -11.75, 0.0),
        ],
        &[[0, 1, 2], [0, 2, 3], [0, 0, 2], [0, 0, 1]],
        m,
    )
    .unwrap();
    scene.add_geometry(first);
    let quad = Geometry::mesh(
        &[
            Vec3::new(-1.0, -1.0, 0.0),
            Vec3::new(1.0, -1.0, 0.0),
            Vec3::new(1.0, 1.0, 0.0),
            Vec3::new(-1.0, 1.0, 0.0),
        ],
        &[[0, 1, 2], [0, 2, 3]],
        m,
    )
    .unwrap();
    let quad = scene.add_geometry(quad);
    scene.add_instance(Instance::new(quad, Affine3A::IDENTITY));
    let mut accel = Accel::build(&scene).unwrap();
    let before = accel.geometry_nodes(0).unwrap().len();
    let mut update = SceneUpdate::new();
    update
        .set_transform(0, Affine3A::from_translation(Vec3::new(0.0, 0.0, -5.0)))
        .rebuild(0);
    let changes = accel.update(&update).unwrap();
    assert!(changes.rebuilt);
    assert_ne!(
        accel.geometry_nodes(0).unwrap().len(),
        before,
        "the case needs a rebuild that changes the node count"
    );
    assert_eq!(Some(accel.instances()[0].root()), accel.geometry_root(quad));
    let hit = accel.intersect(&Ray::new(Vec3::new(0.2, 0.1, 5.0), Vec3::NEG_Z));
    assert_eq!((hit.instance, hit.t), (0, 10.0), "{hit:?}");
}

/// An instance whose world box overflows `f32` (a geometry spanning 1e30
/// under a scale of 1e15) gets unbounded sides, not NaN ones, and stays
/// reachable. (Found by the `scene_trace` fuzz target.)
#[test]
fn an_instance_whose_world_box_overflows_is_still_hit() {
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::ONE));
    let mut g = Geometry::new();
    g.add_sphere(Vec3::ZERO, 1.0, m);
    g.add_triangle(
        Vec3::new(1e30, -9.25, -4.0),
        Vec3::new(1.0, -1.0, 1.0),
        Vec3::new(0.0, 1.0, 1.0),
        m,
    );
    let g = scene.add_geometry(g);
    let t = Affine3A::from_scale_rotation_translation(
        Vec3::splat(1e15),
        glam::Quat::from_rotation_y(0.3),
        Vec3::new(-2e16, 0.0, 0.0),
    );
    scene.add_instance(Instance::new(g, t));
    let accel = Accel::build(&scene).unwrap();
    for n in accel.top_nodes() {
        assert!(
            n.left_lo[..3]
                .iter()
                .chain(&n.left_hi[..3])
                .all(|v| !v.is_nan()),
            "{n:?}"
        );
    }
    let ray = Ray::new(Vec3::new(-2e16, 0.0, 5e15), Vec3::NEG_Z);
    let hit = accel.intersect(&ray);
    assert_eq!((hit.instance, hit.prim), (0, 0), "{hit:?}");
    assert!((hit.t - 4e15).abs() < 4e15 * 1e-5, "{hit:?}");
}
