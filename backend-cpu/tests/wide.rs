//! The wide SIMD traversals (8-wide AVX2 where the CPU has it, and 4-wide) give exactly core's binary-BVH answers.

use glam::Vec3;
use prism_core::rng::Pcg;
use prism_core::{Backend, Hit, Material, Ray, Scene};
use prism_cpu::{CpuBackend, Traversal};

fn scene(seed: u32, spheres: bool) -> Scene {
    let mut rng = Pcg { state: seed };
    let mut r = move || rng.next_f32() * 2.0 - 1.0;
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
    for i in 0..600 {
        let c = Vec3::new(r(), r(), r()) * 10.0;
        if spheres && i % 5 == 0 {
            s.add_sphere(c, 0.05 + 0.5 * r().abs(), m);
        } else {
            let (e1, e2) = (Vec3::new(r(), r(), r()), Vec3::new(r(), r(), r()));
            s.add_triangle(c, c + 3.0 * e1, c + 3.0 * e2, m);
        }
    }
    s
}

fn rays(seed: u32, n: usize) -> Vec<Ray> {
    let mut rng = Pcg { state: seed };
    let mut r = move || rng.next_f32() * 2.0 - 1.0;
    (0..n)
        .map(|i| {
            let o = Vec3::new(r(), r(), r()) * 15.0;
            let mut d = Vec3::new(r(), r(), r());
            // Some axis-parallel rays: zero direction components.
            if i % 7 == 0 {
                d.x = 0.0;
            }
            if i % 11 == 0 {
                d.y = 0.0;
            }
            let tmax = if i % 3 == 0 { 8.0 } else { f32::INFINITY };
            Ray::segment(o, d, 0.0, tmax)
        })
        .filter(Ray::is_valid)
        .collect()
}

fn compare(spheres: bool) {
    #[cfg(target_arch = "x86_64")]
    let eight = prism_cpu::bvh8::available();
    #[cfg(not(target_arch = "x86_64"))]
    let eight = false;
    if !eight {
        eprintln!(
            "NOTE: no AVX2 here, so Traversal::Wide is the 4-wide BVH; the 8-wide one is not tested"
        );
    }
    for seed in 1..6 {
        let mut cpu = CpuBackend::with_threads(1).expect("cpu");
        cpu.set_scene(&scene(seed, spheres)).expect("scene");
        let rays = rays(seed * 31, 4000);
        let mut answers = Vec::new();
        for t in [Traversal::Binary, Traversal::Wide, Traversal::Wide4] {
            cpu.set_traversal(t).expect("traversal");
            let mut hits = vec![Hit::MISS; rays.len()];
            let mut occ = vec![false; rays.len()];
            cpu.intersect(&rays, &mut hits).expect("intersect");
            cpu.occluded(&rays, &mut occ).expect("occluded");
            answers.push((hits, occ));
        }
        let b = &answers[0];
        for (name, w) in [("wide", &answers[1]), ("wide4", &answers[2])] {
            check(seed, name, &rays, b, w);
        }
    }
}

type Answers = (Vec<Hit>, Vec<bool>);

fn check(seed: u32, name: &str, rays: &[Ray], b: &Answers, w: &Answers) {
    let hit_count = b.0.iter().filter(|h| h.is_hit()).count();
    assert!(
        hit_count > rays.len() / 20,
        "seed {seed}: too few hits ({hit_count}) to test anything"
    );
    for (i, ray) in rays.iter().enumerate() {
        assert_eq!(
            b.0[i].prim, w.0[i].prim,
            "{name} seed {seed} ray {i}: {ray:?}"
        );
        assert_eq!(
            b.0[i].t.to_bits(),
            w.0[i].t.to_bits(),
            "{name} seed {seed} ray {i}"
        );
        assert_eq!(
            (b.0[i].u.to_bits(), b.0[i].v.to_bits()),
            (w.0[i].u.to_bits(), w.0[i].v.to_bits()),
            "{name} seed {seed} ray {i}"
        );
        assert_eq!(b.1[i], w.1[i], "{name} seed {seed} ray {i}: occluded");
    }
}

#[test]
fn wide_matches_binary_on_triangle_packets() {
    compare(false);
}

#[test]
fn wide_matches_binary_with_spheres_in_leaves() {
    compare(true);
}
