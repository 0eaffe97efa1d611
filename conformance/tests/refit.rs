//! Refit against a fresh build, as a property: after random vertex updates
//! of a mesh geometry through `Backend::update_scene` (its tree refit, never
//! rebuilt), the CPU backend's hits on random rays are those of the same
//! scene set afresh with the final vertices, under the agreement rule with
//! instances compared (ties counted). And the instanced oracle never reports
//! a masked-out instance, nor does the backend.

use glam::{Affine3A, Quat, Vec3};
use prism_conformance::generated::{grid_mesh, instanced_brute_force};
use prism_conformance::hits::{Instanced, Reference, compare, origin_scales, trace};
use prism_core::{Backend, Geometry, Instance, Material, Ray, Scene, SceneUpdate};
use prism_cpu::CpuBackend;
use proptest::prelude::*;

fn vec3(half: f32) -> impl Strategy<Value = Vec3> {
    (-half..half, -half..half, -half..half).prop_map(|(x, y, z)| Vec3::new(x, y, z))
}

fn placement() -> impl Strategy<Value = Affine3A> {
    (vec3(1.0), 0.0f32..6.3, vec3(1.0), vec3(6.0)).prop_map(|(axis, angle, s, t)| {
        let axis = axis.try_normalize().unwrap_or(Vec3::Y);
        let scale = Vec3::splat(1.15) + s * 0.85;
        Affine3A::from_scale_rotation_translation(scale, Quat::from_axis_angle(axis, angle), t)
    })
}

fn ray() -> impl Strategy<Value = Ray> {
    (vec3(12.0), vec3(4.0), any::<u8>(), any::<bool>()).prop_map(|(o, target, mask, all)| {
        let d = target - o;
        let d = if d == Vec3::ZERO { Vec3::X } else { d };
        Ray::new(o, d).with_mask(if all { Ray::ALL } else { u32::from(mask) })
    })
}

fn scene(positions: &[Vec3], triangles: &[[u32; 3]], placements: &[(Affine3A, u8)]) -> Scene {
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::ONE));
    s.add_geometry(Geometry::mesh(positions, triangles, m).expect("a grid"));
    for &(t, mask) in placements {
        s.add_instance(Instance::new(0, t).with_mask(mask));
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn refit_hits_equal_a_fresh_build(
        n in 2usize..10,
        placements in prop::collection::vec((placement(), any::<u8>()), 1..10),
        frames in prop::collection::vec(prop::collection::vec(vec3(0.6), 121), 1..4),
        rays in prop::collection::vec(ray(), 64),
    ) {
        let (initial, triangles) = grid_mesh(n);
        let mut backend = CpuBackend::with_threads(1).expect("the CPU backend");
        backend.set_scene(&scene(&initial, &triangles, &placements)).expect("a valid scene");
        let mut current = initial.clone();
        for moves in &frames {
            current = initial.iter().zip(moves).map(|(p, m)| *p + *m).collect();
            let mut update = SceneUpdate::new();
            update.set_vertices(0, &current);
            let stats = backend.update_scene(&update).expect("new vertices");
            prop_assert_eq!(&stats.changes.refit, &vec![0]);
            prop_assert!(!stats.changes.rebuilt);
        }
        let refit = trace(&mut backend, &rays).expect("tracing the refit scene");
        let fresh_scene = scene(&current, &triangles, &placements);
        backend.set_scene(&fresh_scene).expect("the fresh scene");
        let fresh = trace(&mut backend, &rays).expect("tracing the fresh scene");
        let pairs = Reference::pairs(&fresh.hits);
        let triples = |hits: &[prism_core::Hit]| -> Vec<(f32, u32, u32)> {
            hits.iter().map(|h| (h.t, h.prim, h.instance)).collect()
        };
        let scales = origin_scales(&fresh_scene, &rays, &triples(&fresh.hits));
        let instances = Reference::instances_of(&fresh.hits);
        let check = compare("refit", "cpu", &rays, &refit, &Reference {
            name: "a fresh build",
            hits: &pairs,
            uv: None,
            occluded: &fresh.occluded,
            tie_limit: None,
            face_planes: None,
            also_excused: None,
            instances: Some(Instanced { ids: &instances, scales: &scales }),
        });
        prop_assert!(check.passed(), "{:?}", check.failure());
        // Both against the instanced oracle, and no masked-out instance hit.
        let oracle = instanced_brute_force(&fresh_scene, &rays);
        let opairs = Reference::pairs(&oracle.hits);
        let oinst = Reference::instances_of(&oracle.hits);
        let oscales = origin_scales(&fresh_scene, &rays, &triples(&oracle.hits));
        let check = compare("refit", "cpu", &rays, &refit, &Reference {
            name: "brute force",
            hits: &opairs,
            uv: None,
            occluded: &oracle.occluded,
            tie_limit: None,
            face_planes: None,
            also_excused: None,
            instances: Some(Instanced { ids: &oinst, scales: &oscales }),
        });
        prop_assert!(check.passed(), "{:?}", check.failure());
        let both = rays.iter().zip(&refit.hits).chain(rays.iter().zip(&oracle.hits));
        for (ray, hit) in both {
            if hit.is_hit() {
                let mask = placements[hit.instance as usize].1;
                prop_assert!(ray.mask & u32::from(mask) != 0, "{:?} hit through mask {:#x}", hit, mask);
            }
        }
    }
}
