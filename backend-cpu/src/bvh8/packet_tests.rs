//! The packets' node test bounds every ray's own (property tests), and
//! which rays make a packet.

use super::Node8;
use super::packet::{PACKET, Packet};
use super::walk::Ray8;
use crate::leaves::inv_dir;
use core::arch::x86_64::_mm256_set1_ps;
use glam::Vec3;
use prism_core::Ray;
use proptest::prelude::*;

/// Eight rays from `origin` (each moved by its `jitter`) along `dir` turned
/// by each lane's `turn`, with the lanes' intervals.
fn rays(origin: Vec3, dir: Vec3, lanes: &[(Vec3, Vec3, f32, f32)]) -> Vec<Ray> {
    lanes
        .iter()
        .map(|&(jitter, turn, tmin, tmax)| Ray::segment(origin + jitter, dir + turn, tmin, tmax))
        .collect()
}

/// A node whose slots hold `boxes` (`centre`, `half size`), the rest empty.
fn node(boxes: &[(Vec3, Vec3)]) -> Node8 {
    let mut n = Node8::EMPTY;
    for (k, &(c, h)) in boxes.iter().enumerate().take(8) {
        let (lo, hi) = (c - h, c + h);
        n.set_box(k, &[lo.x, lo.y, lo.z, 0.0], &[hi.x, hi.y, hi.z, 0.0]);
    }
    n
}

fn vec3(range: f32) -> impl Strategy<Value = Vec3> {
    (-range..range, -range..range, -range..range).prop_map(|(x, y, z)| Vec3::new(x, y, z))
}

/// A lane's interval: from 0, from a little way along, or open below; to
/// infinity or to a finite end.
fn interval() -> impl Strategy<Value = (f32, f32)> {
    (
        prop_oneof![Just(0.0f32), 0.0f32..5.0, Just(-f32::MAX)],
        prop_oneof![Just(f32::INFINITY), 1.0f32..40.0],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every box one of the eight rays enters by its own slab test (core's,
    /// with the exit widening) is entered by the packet, no later than that
    /// ray enters it: the packet's walk visits every leaf each ray's own walk
    /// would. Boxes lie along the beam, so that some rays graze them, and
    /// three in four are flat on an axis.
    #[test]
    fn the_packet_test_bounds_every_rays_own(
        origin in vec3(20.0),
        dir in vec3(1.0).prop_filter("a direction", |d| d.length() > 0.3),
        lanes in proptest::collection::vec(
            (vec3(0.05), vec3(0.01), interval()).prop_map(|(j, t, (lo, hi))| (j, t, lo, hi)),
            PACKET,
        ),
        boxes in proptest::collection::vec((0.0f32..40.0, vec3(2.0), vec3(3.0), 0..4usize), 1..=8),
    ) {
        if !super::available() {
            return Ok(());
        }
        let rays = rays(origin, dir, &lanes);
        // SAFETY: `available()` found AVX2 (and BMI1, POPCNT).
        let packet = unsafe { Packet::new(&rays, 10.0) };
        let Some(packet) = packet else {
            // Rays the cone or the origins' spread refuse make no packet.
            prop_assume!(false);
            return Ok(());
        };
        let boxes: Vec<(Vec3, Vec3)> = boxes
            .iter()
            .map(|&(s, offset, half, flat)| {
                // Some boxes flat on one axis (the box of a flat leaf).
                let mut half = half.abs() + Vec3::splat(0.01);
                if flat < 3 {
                    half[flat] = 0.0;
                }
                (origin + dir * s + offset, half)
            })
            .collect();
        let n = node(&boxes);
        let tmax_hi = rays.iter().map(|r| r.tmax).fold(f32::NEG_INFINITY, f32::max);
        // SAFETY: as above.
        let (bound, entered) = unsafe { packet.boxes(&n, _mm256_set1_ps(tmax_hi)) };
        for (i, ray) in rays.iter().enumerate() {
            // SAFETY: as above.
            let (t, mask) = unsafe {
                Ray8::new(ray.origin, inv_dir(ray), ray.tmin).boxes(&n, ray.tmax)
            };
            prop_assert_eq!(mask & !entered, 0, "ray {} enters boxes the packet does not", i);
            for k in (0..8).filter(|k| mask & (1 << k) != 0) {
                prop_assert!(
                    bound[k] <= t[k],
                    "box {}: the packet's entry bound {} is past ray {}'s entry {}",
                    k, bound[k], i, t[k]
                );
            }
        }
    }
}

#[test]
fn camera_rays_make_a_packet_and_scattered_rays_do_not() {
    if !super::available() {
        return;
    }
    let eye = Vec3::new(1.0, 2.0, 30.0);
    let camera: Vec<Ray> = (0..PACKET)
        .map(|x| Ray::new(eye, Vec3::new(0.001 * x as f32, 0.0, -1.0)))
        .collect();
    // SAFETY: `available()` found AVX2.
    let packet = |rays: &[Ray]| unsafe { Packet::new(rays, 10.0) }.is_some();
    assert!(packet(&camera), "eight neighbouring camera rays");
    assert!(!packet(&camera[..7]), "seven rays");
    let mut turned = camera.clone();
    turned[5].dir = Vec3::new(0.3, 0.0, -1.0);
    assert!(!packet(&turned), "a ray 17 degrees off the others");
    let mut hidden = camera.clone();
    hidden[2] = hidden[2].with_mask(0x100);
    assert!(!packet(&hidden), "a ray that sees no flat scene");
    let mut far = camera.clone();
    far[7].origin.x += 1.0;
    assert!(!packet(&far), "an origin a tenth of the scene away");
    let mut flipped = camera.clone();
    flipped[0].dir.x = -0.0001;
    flipped[1].dir.x = -0.0001;
    assert!(!packet(&flipped), "directions of both signs on an axis");
}

/// A camera's rays, row-major, `size` x `size`, from `eye` toward the origin
/// over a field of view of `fov` radians.
fn camera(eye: Vec3, fov: f32, size: usize) -> Vec<Ray> {
    let forward = (-eye).normalize();
    let right = forward.cross(Vec3::Y).normalize();
    let up = right.cross(forward);
    let half = (fov / 2.0).tan();
    (0..size * size)
        .map(|i| {
            let (x, y) = ((i % size) as f32, (i / size) as f32);
            let sx = ((x + 0.5) / size as f32 * 2.0 - 1.0) * half;
            let sy = (1.0 - (y + 0.5) / size as f32 * 2.0) * half;
            Ray::new(eye, forward + sx * right + sy * up)
        })
        .collect()
}

/// The choice of [`super::Bvh8::packets_pay`] for `scene` seen by `rays`,
/// for closest hits and for any hit.
fn choice(scene: &prism_core::Scene, rays: &[Ray]) -> (bool, bool) {
    let Ok(accel) = prism_core::Accel::build(scene) else {
        panic!("the test scene builds");
    };
    let Ok(Some(bvh)) = super::Bvh8::build(&accel) else {
        panic!("the 8-wide BVH builds where `available()` found AVX2");
    };
    let (prims, hf) = (accel.primitives(), accel.heightfield_set());
    (
        bvh.packets_pay(prims, hf, rays, true),
        bvh.packets_pay(prims, hf, rays, false),
    )
}

#[test]
fn packets_are_taken_over_large_triangles_and_not_over_tiny_ones() {
    // One ground seen by a 128x128 camera, as a few hundred triangles each
    // many pixels across (packets cost about half the single walks) and as
    // triangles smaller than a pixel.
    if !super::available() {
        return;
    }
    use prism_core::{Material, Scene};
    let mut rng = prism_core::rng::Pcg { state: 7 };
    let mut r = move || rng.next_f32() * 2.0 - 1.0;
    // A terrain of a few hundred triangles, each many pixels across.
    let mut coarse = Scene::new();
    let m = coarse.add_material(Material::lambertian(Vec3::splat(0.5)));
    let n = 12;
    let at = |i: usize, j: usize, h: f32| Vec3::new(i as f32 - 6.0, h, j as f32 - 6.0);
    for i in 0..n {
        for j in 0..n {
            let h = 0.3 * r();
            coarse.add_triangle(at(i, j, h), at(i + 1, j, h), at(i, j + 1, h), m);
            coarse.add_triangle(at(i + 1, j, h), at(i + 1, j + 1, h), at(i, j + 1, h), m);
        }
    }
    // The same ground as 180,000 triangles, each a fifth of a pixel across:
    // eight neighbouring rays end in eight leaves, all of which a packet
    // tests for all eight (there packets took 1.3x the single walks' time
    // for any hit, 1.05x for closest hits).
    let mut fine = Scene::new();
    let m = fine.add_material(Material::lambertian(Vec3::splat(0.5)));
    let n = 300;
    let at = |i: usize, j: usize| {
        let cell = 12.0 / n as f32;
        Vec3::new(i as f32 * cell - 6.0, 0.0, j as f32 * cell - 6.0)
    };
    for i in 0..n {
        for j in 0..n {
            fine.add_triangle(at(i, j), at(i + 1, j), at(i, j + 1), m);
            fine.add_triangle(at(i + 1, j), at(i + 1, j + 1), at(i, j + 1), m);
        }
    }
    let rays = camera(Vec3::new(0.0, 8.0, 12.0), 0.8, 128);
    assert_eq!(
        choice(&coarse, &rays),
        (true, true),
        "camera rays over large triangles"
    );
    assert_eq!(
        choice(&fine, &rays),
        (false, false),
        "camera rays over tiny triangles"
    );
}
