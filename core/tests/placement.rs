//! Moves placed by a device (`prism_core::placement`): the host's side of the
//! contract. A frame whose moves are committed as placed elsewhere, then
//! refreshed, holds the records, world boxes and top tree of the same frame
//! applied by `Accel::update`, bit for bit; updates that are not for the
//! device are told apart, and bad moves are refused with the update's errors.

mod common;

use common::{config, rotation, vec3};
use glam::{Affine3A, Vec3};
use prism_core::{
    Accel, Error, Geometry, GpuMove, Instance, Material, Scene, SceneUpdate, TopLevelBuild,
};
use proptest::prelude::*;

/// The words of `v` (records hold NaN bit patterns: compare bits).
fn bits<T: bytemuck::Pod>(v: &[T]) -> &[u32] {
    bytemuck::cast_slice(v)
}

/// A scene of `transforms.len()` instances of two small meshes.
fn scene(transforms: &[Affine3A], build: TopLevelBuild) -> Scene {
    let mut s = Scene::new();
    s.top_level_build = build;
    let m = s.add_material(Material::lambertian(Vec3::ONE));
    let mut a = Geometry::new();
    a.add_triangle(Vec3::ZERO, Vec3::X, Vec3::Y, m);
    a.add_triangle(Vec3::Z, Vec3::X + Vec3::Z, Vec3::ONE, m);
    let mut b = Geometry::new();
    b.add_sphere(Vec3::new(0.5, 0.0, -1.0), 0.75, m);
    let (ga, gb) = (s.add_geometry(a), s.add_geometry(b));
    for (i, t) in transforms.iter().enumerate() {
        let g = if i % 3 == 0 { gb } else { ga };
        s.add_instance(Instance::new(g, *t).with_mask(1 << (i % 8)));
    }
    s
}

fn transform() -> impl Strategy<Value = Affine3A> {
    (rotation(), vec3(1.0), vec3(20.0))
        .prop_map(|(r, s, t)| Affine3A::from_scale_rotation_translation(Vec3::splat(1.5) + s, r, t))
}

/// Transforms of which many share their centre (equal Morton codes).
fn transforms(n: std::ops::Range<usize>) -> impl Strategy<Value = Vec<Affine3A>> {
    prop::collection::vec((transform(), 0u8..4), n).prop_map(|v| {
        v.into_iter()
            .map(|(t, k)| {
                if k == 0 {
                    Affine3A::from_translation(Vec3::splat(2.0))
                } else {
                    t
                }
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn committed_moves_refresh_to_the_updates_state(
        first in transforms(2..120),
        moved in prop::collection::vec((any::<prop::sample::Index>(), transform()), 1..60),
    ) {
        let s = scene(&first, TopLevelBuild::Morton);
        let mut host = Accel::build(&s).expect("scene"); // ok: valid test scene
        let mut device = host.clone();
        let mut update = SceneUpdate::new();
        let mut seen = std::collections::HashSet::new();
        for (i, t) in &moved {
            let i = i.index(first.len()) as u32;
            if seen.insert(i) {
                update.set_transform(i, *t);
            }
        }
        host.update(&update).expect("update"); // ok: valid moves
        let mut out = Vec::new();
        prop_assert!(device.device_moves(&update, &mut out).expect("moves")); // ok: valid moves
        prop_assert_eq!(out.len(), seen.len());
        let changes = device.commit_device_moves(&update, host.bounds());
        prop_assert!(changes.top_rebuilt);
        prop_assert!(device.placement_stale());
        device.try_refresh().expect("refresh"); // ok: a small scene
        prop_assert!(!device.placement_stale());
        prop_assert_eq!(bits(device.instances()), bits(host.instances()));
        prop_assert_eq!(device.instance_bounds(), host.instance_bounds());
        prop_assert_eq!(bits(device.top_nodes()), bits(host.top_nodes()));
        prop_assert_eq!(device.bounds(), host.bounds());
    }
}

#[test]
fn a_stale_scene_is_made_current_before_the_next_update() {
    let first: Vec<Affine3A> = (0..40)
        .map(|i| Affine3A::from_translation(Vec3::new(i as f32, 0.0, 0.0)))
        .collect();
    let s = scene(&first, TopLevelBuild::Morton);
    let mut host = Accel::build(&s).expect("scene"); // ok: valid test scene
    let mut device = host.clone();
    let mut moves = SceneUpdate::new();
    moves.set_transform(3, Affine3A::from_translation(Vec3::new(0.0, 9.0, 0.0)));
    host.update(&moves).expect("update"); // ok: valid move
    let mut out = Vec::new();
    assert!(device.device_moves(&moves, &mut out).expect("moves")); // ok: valid move
    device.commit_device_moves(&moves, host.bounds());
    // An update the device does not place (a mask) on the stale scene.
    let mut mask = SceneUpdate::new();
    mask.set_mask(5, 0x80);
    host.update(&mask).expect("mask"); // ok: a live instance
    device.update(&mask).expect("mask"); // ok: a live instance
    assert!(!device.placement_stale());
    assert_eq!(bits(device.instances()), bits(host.instances()));
    assert_eq!(bits(device.top_nodes()), bits(host.top_nodes()));
}

#[test]
fn updates_the_device_does_not_place_are_told_apart() {
    let first: Vec<Affine3A> = (0..10)
        .map(|i| Affine3A::from_translation(Vec3::new(0.0, i as f32, 0.0)))
        .collect();
    let t = Affine3A::from_translation(Vec3::ONE);
    let mut out = vec![GpuMove::default()];
    // A binned SAH top tree.
    let mut sah = Accel::build(&scene(&first, TopLevelBuild::Sah)).expect("scene"); // ok: valid
    let mut one = SceneUpdate::new();
    one.set_transform(1, t);
    assert!(!sah.device_moves(&one, &mut out).expect("moves")); // ok: valid move
    assert!(out.is_empty());
    let mut accel = Accel::build(&scene(&first, TopLevelBuild::Morton)).expect("scene"); // ok
    // A repeated move, a mask beside a move.
    let mut twice = SceneUpdate::new();
    twice.set_transform(2, t).set_transform(2, t);
    assert!(!accel.device_moves(&twice, &mut out).expect("moves")); // ok: valid moves
    let mut masked = SceneUpdate::new();
    masked.set_transform(2, t).set_mask(3, 1);
    assert!(!accel.device_moves(&masked, &mut out).expect("moves")); // ok: valid update
    // A move of a missing instance: the update's error, the scene unchanged.
    let mut missing = SceneUpdate::new();
    missing.set_transform(10, t);
    assert!(matches!(
        accel.device_moves(&missing, &mut out),
        Err(Error::InstanceOutOfRange { instance: 10, .. })
    ));
    assert!(matches!(
        accel.update(&missing),
        Err(Error::InstanceOutOfRange { instance: 10, .. })
    ));
    // A singular transform: the host names it as the update would.
    let mut singular = SceneUpdate::new();
    singular
        .set_transform(1, t)
        .set_transform(4, Affine3A::from_scale(Vec3::new(1.0, 0.0, 1.0)));
    assert!(accel.move_error(&singular, 0).is_none());
    match accel.move_error(&singular, 1) {
        Some(Error::TransformInvalid { instance: 4, .. }) => {}
        other => panic!("expected instance 4's transform refused, got {other:?}"),
    }
    assert!(!accel.placement_stale());
}

/// A scene built small (its instances boxed by their outlines) and grown past
/// the SAH builder's count: a device's moves, refreshed, give the host's
/// update bit for bit, the instances it did not move keeping their outlined
/// boxes.
#[test]
fn moves_after_a_scene_outgrew_its_outlines_refresh_to_the_updates_state() {
    use prism_core::top_level::SAH_MAX_INSTANCES;
    let first: Vec<Affine3A> = (0..12)
        .map(|i| {
            Affine3A::from_rotation_y(i as f32 * 0.4)
                * Affine3A::from_translation(Vec3::new(i as f32, 0.0, 0.0))
        })
        .collect();
    let mut host = Accel::build(&ring_scene(&first)).expect("scene"); // ok
    let mut grow = SceneUpdate::new();
    for i in 0..SAH_MAX_INSTANCES {
        let t = Affine3A::from_rotation_x(i as f32 * 0.01)
            * Affine3A::from_translation(Vec3::new(0.0, (i % 64) as f32, (i / 64) as f32));
        grow.add_instance(Instance::new((i % 2) as u32, t));
    }
    host.update(&grow).expect("grow"); // ok: valid instances
    let mut device = host.clone();
    let mut moves = SceneUpdate::new();
    for i in [0u32, 3, 7, 100, 4000] {
        moves.set_transform(i, Affine3A::from_rotation_z(0.3 + i as f32));
    }
    host.update(&moves).expect("moves"); // ok: valid moves
    let mut out = Vec::new();
    assert!(device.device_moves(&moves, &mut out).expect("moves")); // ok: valid moves
    device.commit_device_moves(&moves, host.bounds());
    device.try_refresh().expect("refresh"); // ok: fits in memory
    assert_eq!(bits(device.instances()), bits(host.instances()));
    assert_eq!(device.instance_bounds(), host.instance_bounds());
    assert_eq!(bits(device.top_nodes()), bits(host.top_nodes()));
    // Instance 1 was never moved: its outlined box is the build's.
    let built = Accel::build(&ring_scene(&first)).expect("scene"); // ok
    assert_eq!(device.instance_bounds()[1], built.instance_bounds()[1]);
    let mut whole = Accel::build(&ring_scene(&first)).expect("scene"); // ok
    whole.update(&grow).expect("grow"); // ok: valid instances
    let mut again = SceneUpdate::new();
    again.set_transform(1, first[1]);
    whole.update(&again).expect("move"); // ok: a live instance
    assert_ne!(
        device.instance_bounds()[1],
        whole.instance_bounds()[1],
        "an outline is tighter"
    );
}

/// `scene` with ring meshes (a tree several levels deep, whose outline is
/// tighter than its bounds) under the default top builder.
fn ring_scene(transforms: &[Affine3A]) -> Scene {
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::ONE));
    for radius in [3.0f32, 5.0] {
        let positions: Vec<Vec3> = (0..96)
            .flat_map(|k| {
                let a = k as f32 / 96.0 * std::f32::consts::TAU;
                let p = Vec3::new(a.cos(), 0.0, a.sin()) * radius;
                [p, p + Vec3::Y * 0.2, p + Vec3::new(0.1, 0.0, 0.1)]
            })
            .collect();
        let triangles: Vec<[u32; 3]> = (0..96u32).map(|k| [3 * k, 3 * k + 1, 3 * k + 2]).collect();
        let g = Geometry::mesh(&positions, &triangles, m).expect("a valid mesh"); // ok: test mesh
        s.add_geometry(g);
    }
    for (i, t) in transforms.iter().enumerate() {
        s.add_instance(Instance::new((i % 2) as u32, *t));
    }
    s
}
