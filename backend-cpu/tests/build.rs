//! `set_scene` builds large scenes' BVH subtrees on the backend's threads; the
//! tree must be core's one-thread tree, bit for bit, whatever the thread count.

use glam::Vec3;
use prism_core::bvh::FORK_MIN_PRIMITIVES;
use prism_core::rng::Pcg;
use prism_core::{Accel, Backend, Material, Scene};
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
