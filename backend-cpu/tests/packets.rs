//! Coherent rays walked eight at a time (`RayPackets::Always`) give
//! every ray the answer it gets alone, and core's binary-BVH answer, bit for
//! bit: camera rays, shadow rays from many origins toward one light, rays of
//! their own intervals, rays hidden by their mask among coherent ones.

use glam::Vec3;
use prism_core::rng::Pcg;
use prism_core::{Backend, Hit, Material, Ray, Scene};
use prism_cpu::{CpuBackend, RayPackets, Traversal};

/// 800 random triangles (with spheres where asked) in a 20-unit cube.
fn scene(seed: u32, spheres: bool) -> Scene {
    let mut rng = Pcg { state: seed };
    let mut r = move || rng.next_f32() * 2.0 - 1.0;
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
    for i in 0..800 {
        let c = Vec3::new(r(), r(), r()) * 10.0;
        if spheres && i % 5 == 0 {
            s.add_sphere(c, 0.05 + 0.5 * r().abs(), m);
        } else {
            let (e1, e2) = (Vec3::new(r(), r(), r()), Vec3::new(r(), r(), r()));
            s.add_triangle(c, c + 2.0 * e1, c + 2.0 * e2, m);
        }
    }
    s
}

/// The rays of a pinhole camera, row-major, `width` x `height` (a width that
/// is no multiple of 8 puts row ends inside packets), from a random eye
/// outside or inside the cube toward a random point in it.
fn camera_rays(seed: u32, width: usize, height: usize) -> Vec<Ray> {
    let mut rng = Pcg { state: seed };
    let mut r = move || rng.next_f32() * 2.0 - 1.0;
    let eye = Vec3::new(r(), r(), r()) * 25.0;
    let target = Vec3::new(r(), r(), r()) * 5.0;
    let fov = 0.4 + 0.4 * r().abs();
    let forward = (target - eye).normalize();
    let right = forward.cross(Vec3::Y).normalize();
    let up = right.cross(forward);
    let mut rays = Vec::with_capacity(width * height);
    for y in 0..height {
        for x in 0..width {
            let sx = ((x as f32 + 0.5) / width as f32 * 2.0 - 1.0) * fov;
            let sy = (1.0 - (y as f32 + 0.5) / height as f32 * 2.0) * fov;
            rays.push(Ray::new(eye, forward + sx * right + sy * up));
        }
    }
    rays
}

/// Each traversal's closest hits and occlusion answers for `rays`.
fn answers(cpu: &mut CpuBackend, rays: &[Ray]) -> [(Vec<Hit>, Vec<bool>); 3] {
    let mut run = |traversal: Traversal, packets: RayPackets| {
        cpu.set_traversal(traversal).expect("traversal");
        cpu.set_ray_packets(packets);
        let mut hits = vec![Hit::MISS; rays.len()];
        let mut occluded = vec![false; rays.len()];
        cpu.intersect(rays, &mut hits).expect("intersect");
        cpu.occluded(rays, &mut occluded).expect("occluded");
        (hits, occluded)
    };
    [
        run(Traversal::Wide, RayPackets::Always),
        run(Traversal::Wide, RayPackets::Never),
        run(Traversal::Binary, RayPackets::Never),
    ]
}

/// Every ray's answers are the same, bit for bit, in packets, alone and on
/// core's binary tree; and enough of them hit (and enough miss) to say so.
fn check(what: &str, rays: &[Ray], all: &[(Vec<Hit>, Vec<bool>); 3]) {
    let hits = all[0].0.iter().filter(|h| h.is_hit()).count();
    assert!(
        hits > rays.len() / 10 && hits < rays.len() - rays.len() / 20,
        "{what}: {hits} of {} rays hit, too few or too many to test anything",
        rays.len()
    );
    same(what, rays, all);
}

/// Every ray's answers are the same, bit for bit, in packets, alone and on
/// core's binary tree.
fn same(what: &str, rays: &[Ray], [packets, alone, binary]: &[(Vec<Hit>, Vec<bool>); 3]) {
    for (name, other) in [("alone", alone), ("binary", binary)] {
        for (i, ray) in rays.iter().enumerate() {
            let (a, b) = (&packets.0[i], &other.0[i]);
            assert_eq!(
                (a.prim, a.t.to_bits(), a.u.to_bits(), a.v.to_bits()),
                (b.prim, b.t.to_bits(), b.u.to_bits(), b.v.to_bits()),
                "{what}: ray {i} in a packet against {name}: {ray:?}"
            );
            assert_eq!(
                packets.1[i], other.1[i],
                "{what}: ray {i} occluded in a packet against {name}: {ray:?}"
            );
        }
    }
}

#[test]
fn camera_packets_give_every_ray_its_own_answer() {
    for seed in 1..7 {
        let mut cpu = CpuBackend::with_threads(1).expect("cpu");
        cpu.set_scene(&scene(seed, seed % 2 == 0)).expect("scene");
        let rays = camera_rays(seed * 977, 77, 61);
        check(
            &format!("camera seed {seed}"),
            &rays,
            &answers(&mut cpu, &rays),
        );
    }
}

#[test]
fn shadow_packets_from_many_origins_give_every_ray_its_own_answer() {
    for seed in 1..7 {
        let mut cpu = CpuBackend::with_threads(1).expect("cpu");
        cpu.set_scene(&scene(seed, seed % 2 == 1)).expect("scene");
        let camera = camera_rays(seed * 131, 64, 64);
        let mut hits = vec![Hit::MISS; camera.len()];
        cpu.intersect(&camera, &mut hits).expect("camera rays");
        // From each camera hit (or a point far along a missed ray) toward
        // one light, as far as the light: neighbours' origins lie close.
        let light = Vec3::new(3.0, 30.0, -4.0);
        let rays: Vec<Ray> = camera
            .iter()
            .zip(&hits)
            .map(|(ray, hit)| {
                let t = if hit.is_hit() { hit.t * 0.999 } else { 30.0 };
                let origin = ray.origin + ray.dir * t;
                Ray::segment(origin, light - origin, 1e-4, 1.0)
            })
            .collect();
        check(
            &format!("shadow seed {seed}"),
            &rays,
            &answers(&mut cpu, &rays),
        );
    }
}

#[test]
fn packets_keep_each_rays_interval_and_mask() {
    let mut cpu = CpuBackend::with_threads(1).expect("cpu");
    cpu.set_scene(&scene(5, true)).expect("scene");
    let mut rays = camera_rays(4242, 96, 80);
    for (i, ray) in rays.iter_mut().enumerate() {
        // Intervals of every kind side by side in one packet, and every
        // 53rd ray hidden by its mask (its packet is traced ray by ray).
        match i % 5 {
            0 => ray.tmax = 25.0 + (i % 7) as f32,
            1 => ray.tmin = 20.0 + (i % 3) as f32,
            2 => (ray.tmin, ray.tmax) = (-f32::MAX, 30.0),
            _ => {}
        }
        if i % 53 == 0 {
            *ray = ray.with_mask(0x100);
        }
    }
    let all = answers(&mut cpu, &rays);
    check("intervals and masks", &rays, &all);
    for (i, hit) in all[0].0.iter().enumerate().filter(|(i, _)| i % 53 == 0) {
        assert!(!hit.is_hit(), "ray {i} is hidden by its mask, yet hit");
    }
}

#[test]
fn a_batch_of_any_length_is_answered_in_full() {
    let mut cpu = CpuBackend::with_threads(1).expect("cpu");
    cpu.set_scene(&scene(9, false)).expect("scene");
    let rays = camera_rays(77, 64, 64);
    let mut hit = 0;
    for len in [1, 7, 8, 9, 15, 16, 17, 1001] {
        let rays = &rays[2000..2000 + len];
        let all = answers(&mut cpu, rays);
        same(&format!("{len} rays"), rays, &all);
        assert_eq!(all[0].0.len(), len);
        hit += all[0].0.iter().filter(|h| h.is_hit()).count();
    }
    assert!(
        hit > 100,
        "only {hit} rays hit: the batches test too little"
    );
}
