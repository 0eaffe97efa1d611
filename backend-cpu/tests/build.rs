//! `set_scene` builds large scenes' BVH subtrees on the backend's threads; the
//! tree must be core's one-thread tree, bit for bit, whatever the thread count.

use glam::Vec3;
use prism_core::bvh::FORK_MIN_PRIMITIVES;
use prism_core::rng::Pcg;
use prism_core::{Accel, Backend, Geometry, Hit, Instance, Material, Ray, Scene, SceneUpdate};
use prism_cpu::CpuBackend;

/// Clustered triangles and spheres, enough for several levels of forks.
fn large_scene() -> Scene {
    let mut rng = Pcg { state: 7 };
    let mut r = move || rng.next_f32() * 2.0 - 1.0;
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
    let n = 6 * FORK_MIN_PRIMITIVES;
    for i in 0..n {
        // Four clusters of different sizes and spreads.
        let cluster = [0.0, 40.0, -25.0, 90.0][i % 4];
        let spread = [1.0, 10.0, 3.0, 30.0][i % 4];
        let c = Vec3::new(cluster + r() * spread, r() * spread, r() * spread);
        if i % 9 == 0 {
            s.add_sphere(c, 0.01 + 0.1 * r().abs(), m);
        } else {
            let (e1, e2) = (Vec3::new(r(), r(), r()), Vec3::new(r(), r(), r()));
            s.add_triangle(c, c + 0.2 * e1, c + 0.2 * e2, m);
        }
    }
    s
}

#[test]
fn threaded_set_scene_builds_the_one_thread_tree() {
    let scene = large_scene();
    let reference = Accel::build(&scene).expect("valid scene");
    for threads in [1, 2, 4] {
        let mut cpu = CpuBackend::with_threads(threads).expect("cpu backend");
        cpu.set_scene(&scene).expect("valid scene");
        let accel = cpu.accel().expect("scene set");
        assert!(
            accel.nodes() == reference.nodes(),
            "{threads} threads: nodes differ"
        );
        assert!(
            accel.primitives() == reference.primitives(),
            "{threads} threads: leaf order differs"
        );
        assert_eq!(accel.depth(), reference.depth(), "{threads} threads");
    }
}

/// `tree_bytes` reports core's tree (what the GPU backends upload) and the
/// wide tree the batches walk, each from the arrays the backend holds: core's
/// nodes and records by their device sizes, and a wide tree holding every
/// triangle (in packets of 160 bytes, at least one a four triangles).
#[test]
fn tree_bytes_names_each_tree_and_its_arrays() {
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
    let mut rng = Pcg { state: 3 };
    let n = 1000;
    for _ in 0..n {
        let c = Vec3::new(rng.next_f32(), rng.next_f32(), rng.next_f32()) * 10.0;
        s.add_triangle(c, c + Vec3::X * 0.1, c + Vec3::Y * 0.1, m);
    }
    let mut cpu = CpuBackend::with_threads(1).expect("cpu backend");
    assert!(cpu.tree_bytes().is_empty(), "no scene, no trees");
    cpu.set_scene(&s).expect("valid scene");
    let trees = cpu.tree_bytes();
    assert_eq!(trees.len(), 2, "core's tree and the wide tree: {trees:?}");
    let accel = cpu.accel().expect("scene set");
    let core = trees[0];
    assert_eq!(core.nodes, 64 * accel.nodes().len() as u64);
    assert_eq!(core.leaves, (48 + 4) * n);
    let wide = trees[1];
    assert!(wide.nodes > 0 && wide.nodes.is_multiple_of(64), "{wide:?}");
    // Every triangle sits in a packet lane; a packet is 160 bytes of vertices
    // and slots and 16 of ids (48 of vertex indices come with a refit).
    assert!(wide.leaves.is_multiple_of(176), "{wide:?}");
    assert!(wide.leaves >= 176 * n.div_ceil(4), "{wide:?}");
    assert!(wide.leaves <= 176 * n, "{wide:?}");
}

/// A mesh's wide tree keeps its packets' vertex indices only from its first
/// refit on (48 bytes a packet), and the refit tree traces as core's does.
#[test]
fn a_refit_copies_the_vertex_indices_once() {
    // A strip of 200 triangles over 202 vertices.
    let positions: Vec<Vec3> = (0..202)
        .map(|i| Vec3::new((i / 2) as f32, (i % 2) as f32, 0.1 * (i % 7) as f32))
        .collect();
    let triangles: Vec<[u32; 3]> = (0..200u32).map(|i| [i, i + 1, i + 2]).collect();
    // Vertices move in a two-level scene: the mesh as a geometry, placed once.
    let placed = |positions: &[Vec3]| {
        let mut s = Scene::new();
        let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
        let g = Geometry::mesh(positions, &triangles, m).expect("a valid mesh");
        let g = s.add_geometry(g);
        s.add_instance(Instance::new(g, glam::Affine3A::IDENTITY));
        s
    };
    let mut cpu = CpuBackend::with_threads(1).expect("cpu backend");
    cpu.set_scene(&placed(&positions)).expect("valid scene");
    // The leaves' bytes: 176 a packet, and the instance's record.
    let before = cpu.tree_bytes()[1].leaves;
    let mut copied = None;
    let mut moved = positions.clone();
    for p in &mut moved {
        p.z += 0.25 * p.x.sin();
    }
    for step in 0..2 {
        let mut u = SceneUpdate::new();
        u.set_vertices(0, &moved);
        cpu.update_scene(&u).expect("a refit");
        // The first refit adds 48 bytes a packet (at least one packet), the
        // second nothing.
        let after = cpu.tree_bytes()[1].leaves;
        let grew = after - before;
        assert!(
            grew > 0 && grew.is_multiple_of(48),
            "step {step}: {before} -> {after}"
        );
        assert!(
            before >= grew / 48 * 176,
            "step {step}: {before} -> {after}"
        );
        assert_eq!(*copied.get_or_insert(after), after, "step {step}");
        // Straight down onto every triangle's centre: the refit packets hit
        // what a tree built afresh over the moved mesh hits.
        let accel = Accel::build(&placed(&moved)).expect("a valid scene");
        let rays: Vec<Ray> = triangles
            .iter()
            .map(|t| {
                let c = (moved[t[0] as usize] + moved[t[1] as usize] + moved[t[2] as usize]) / 3.0;
                Ray::new(c + Vec3::Z * 5.0, -Vec3::Z)
            })
            .collect();
        let mut hits = vec![Hit::MISS; rays.len()];
        cpu.intersect(&rays, &mut hits).expect("traced");
        for (ray, hit) in rays.iter().zip(&hits) {
            let reference = accel.intersect(ray);
            assert_eq!(
                (hit.t.to_bits(), hit.prim),
                (reference.t.to_bits(), reference.prim),
                "step {step}"
            );
        }
        for p in &mut moved {
            p.z -= 0.1;
        }
    }
}
