//! Frames of moves placed on the device (`prism_core::placement`,
//! kernels/top_build.cuh): after each, the device's instance records and
//! tree over the instances equal the host's for the same update bit for bit,
//! and so do the hits; updates the host applies in between (masks, removals)
//! and a refused transform keep the two in step. Skips, saying so, where there
//! is no CUDA device (`PRISM_REQUIRE_CUDA=1` makes that a failure).

mod common;

use common::*;
use prism_core::backend::Backend;
use prism_core::glam::{Affine3A, Quat, Vec3};
use prism_core::rng::Pcg;
use prism_core::{
    Accel, Error, Geometry, Hit, Instance, Material, Ray, Scene, SceneUpdate, TopLevelBuild,
};
use prism_cuda::CudaBackend;

fn numbers(seed: u32) -> impl FnMut() -> f32 {
    let mut rng = Pcg {
        state: seed.wrapping_mul(0x9E37_79B9) ^ 0x1234_5678,
    };
    move || rng.next_f32()
}

fn random_transform(r: &mut impl FnMut() -> f32) -> Affine3A {
    let axis = (Vec3::new(r(), r(), r()) - 0.5)
        .try_normalize()
        .unwrap_or(Vec3::Y);
    let rotation = Quat::from_axis_angle(axis, r() * std::f32::consts::TAU);
    let scale = Vec3::new(0.3 + 2.7 * r(), 0.3 + 2.7 * r(), 0.3 + 2.7 * r());
    // One in eight at the same spot: runs of equal Morton codes.
    let t = if r() < 0.125 {
        Vec3::splat(3.0)
    } else {
        (Vec3::new(r(), r(), r()) - 0.5) * 60.0
    };
    Affine3A::from_scale_rotation_translation(scale, rotation, t)
}

/// Instances of three small triangle meshes (triangles: the device's hits
/// are core's bit for bit), the top tree built by Morton codes.
fn scene(r: &mut impl FnMut() -> f32, instances: usize) -> Scene {
    let mut s = Scene::new();
    s.top_level_build = TopLevelBuild::Morton;
    let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
    for g in 0..3 {
        let mut geo = Geometry::new();
        for _ in 0..(4 + 6 * g) {
            let a = (Vec3::new(r(), r(), r()) - 0.5) * 2.0;
            let e = |r: &mut dyn FnMut() -> f32| (Vec3::new(r(), r(), r()) - 0.5) * 1.5;
            let (b, c) = (a + e(r), a + e(r));
            geo.add_triangle(a, b, c, m);
        }
        s.add_geometry(geo);
    }
    for i in 0..instances {
        let mask = if i % 7 == 0 { 0x0F } else { 0xFF };
        s.add_instance(Instance::new((i % 3) as u32, random_transform(r)).with_mask(mask));
    }
    s
}

fn rays(r: &mut impl FnMut() -> f32, n: usize) -> Vec<Ray> {
    (0..n)
        .map(|k| {
            let o = (Vec3::new(r(), r(), r()) - 0.5) * 80.0;
            let target = (Vec3::new(r(), r(), r()) - 0.5) * 40.0;
            let mask = if k % 5 == 0 { 0xF0 } else { 0xFF };
            Ray::new(o, (target - o).normalize()).with_mask(mask)
        })
        .collect()
}

/// The device's records, top tree and hits against the host's.
fn check(what: &str, gpu: &mut CudaBackend, host: &Accel, rays: &[Ray]) {
    let (records, top) = gpu.instance_arrays().expect("download");
    let words = |b: &[u8]| b.to_vec();
    assert_eq!(
        words(bytemuck::cast_slice(&records)),
        words(bytemuck::cast_slice(host.instances())),
        "{what}: instance records"
    );
    assert_eq!(
        words(bytemuck::cast_slice(&top)),
        words(bytemuck::cast_slice(host.top_nodes())),
        "{what}: tree over the instances"
    );
    let mut hits = vec![Hit::MISS; rays.len()];
    gpu.intersect(rays, &mut hits).expect("intersect");
    let differ = rays
        .iter()
        .zip(&hits)
        .filter(|(ray, h)| bytemuck::bytes_of(&host.intersect(ray)) != bytemuck::bytes_of(*h))
        .count();
    assert_eq!(differ, 0, "{what}: hits differ from core's");
    assert!(
        hits.iter().filter(|h| h.is_hit()).count() > rays.len() / 20,
        "{what}: too few hits"
    );
}

#[test]
fn moves_placed_on_the_device_equal_the_hosts() {
    let Some(mut gpu) = gpu_or_skip() else { return };
    let mut r = numbers(7);
    let n = 3000;
    let s = scene(&mut r, n);
    let mut host = Accel::build(&s).expect("scene");
    gpu.set_scene(&s).expect("set_scene");
    let probe = rays(&mut r, 20_000);
    check("as built", &mut gpu, &host, &probe);
    for frame in 0..6 {
        let mut update = SceneUpdate::new();
        // Every instance on even frames, a scattered few on odd ones.
        let step = if frame % 2 == 0 { 1 } else { 37 };
        for i in (frame % step..n).step_by(step) {
            if frame > 3 && (i == 5 || i == 2000) {
                continue; // removed after frame 3
            }
            update.set_transform(i as u32, random_transform(&mut r));
        }
        host.update(&update).expect("host update");
        let stats = gpu.update_scene(&update).expect("device update");
        assert!(stats.changes.top_rebuilt);
        check(&format!("frame {frame}"), &mut gpu, &host, &probe);
        // Between frames, updates the host applies: a mask, then a removal.
        if frame == 2 {
            let mut mask = SceneUpdate::new();
            mask.set_mask(11, 0x01);
            host.update(&mask).expect("host mask");
            gpu.update_scene(&mask).expect("device mask");
            check("after a mask", &mut gpu, &host, &probe);
        }
        if frame == 3 {
            let mut remove = SceneUpdate::new();
            remove.remove_instance(5).remove_instance(2000);
            host.update(&remove).expect("host removal");
            gpu.update_scene(&remove).expect("device removal");
            check("after removals", &mut gpu, &host, &probe);
        }
    }
    // A refused transform: the update's error, naming the instance, and
    // nothing moved on either side.
    let mut bad = SceneUpdate::new();
    bad.set_transform(1, random_transform(&mut r));
    bad.set_transform(1500, Affine3A::from_scale(Vec3::new(1.0, 1.0, 0.0)));
    bad.set_transform(2500, random_transform(&mut r));
    let host_err = host.update(&bad).expect_err("singular");
    let gpu_err = gpu.update_scene(&bad).expect_err("singular");
    assert!(
        matches!(gpu_err, Error::TransformInvalid { instance: 1500, .. }),
        "{gpu_err}"
    );
    assert_eq!(gpu_err.to_string(), host_err.to_string());
    check("after a refused move", &mut gpu, &host, &probe);
    // A move of a removed instance, refused before the device sees it.
    let mut removed = SceneUpdate::new();
    removed.set_transform(5, random_transform(&mut r));
    assert!(matches!(
        gpu.update_scene(&removed),
        Err(Error::InstanceOutOfRange { instance: 5, .. })
    ));
    check("after a refused removed instance", &mut gpu, &host, &probe);
}
