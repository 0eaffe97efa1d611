//! Instances' world boxes made from their geometries' outlines
//! (`prism_core::outline`): every placed vertex lies inside its instance's
//! world box, the box is never larger than the box of the placed geometry
//! bounds (a Morton top tree's), and vertices moved by an update stay inside.

mod common;

use common::{config, rotation, vec3};
use glam::{Affine3A, Vec3};
use prism_core::{Aabb, Accel, Geometry, Instance, Material, RefitOn, Scene, SceneUpdate};
use prism_core::{TopLevelBuild, top_level::SAH_MAX_INSTANCES};
use proptest::prelude::*;

/// A mesh of `n` random triangles (enough for a tree several levels deep)
/// as positions and index triples.
fn mesh(n: std::ops::Range<usize>) -> impl Strategy<Value = Vec<Vec3>> {
    prop::collection::vec((vec3(4.0), vec3(0.6), vec3(0.6)), n).prop_map(|t| {
        t.into_iter()
            .flat_map(|(a, e1, e2)| [a, a + e1, a + e2])
            .collect()
    })
}

/// A rotation, a scale of each axis in [0.2, 4] and a translation.
fn transform() -> impl Strategy<Value = Affine3A> {
    (rotation(), vec3(1.0), vec3(50.0)).prop_map(|(r, s, t)| {
        Affine3A::from_scale_rotation_translation(Vec3::splat(2.1) + s * 1.9, r, t)
    })
}

fn scene(positions: &[Vec3], transforms: &[Affine3A], build: TopLevelBuild) -> Scene {
    let mut s = Scene::new();
    s.top_level_build = build;
    let m = s.add_material(Material::lambertian(Vec3::ONE));
    let triangles: Vec<[u32; 3]> = (0..positions.len() as u32 / 3)
        .map(|k| [3 * k, 3 * k + 1, 3 * k + 2])
        .collect();
    let g = Geometry::mesh(positions, &triangles, m).expect("a valid mesh"); // ok: test mesh
    let g = s.add_geometry(g);
    for t in transforms {
        s.add_instance(Instance::new(g, *t));
    }
    s
}

/// Whether `b` holds point `p`.
fn holds(b: &Aabb, p: Vec3) -> bool {
    b.min.cmple(p).all() && p.cmple(b.max).all()
}

/// Whether `outer` holds `inner`.
fn within(inner: &Aabb, outer: &Aabb) -> bool {
    outer.min.cmple(inner.min).all() && inner.max.cmple(outer.max).all()
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn outlined_world_boxes_hold_the_placed_mesh_within_its_placed_bounds(
        positions in mesh(1..200),
        transforms in prop::collection::vec(transform(), 1..6),
        moved in mesh(1..2),
    ) {
        let outlined = Accel::build(&scene(&positions, &transforms, TopLevelBuild::Sah)).expect("scene"); // ok
        let whole = Accel::build(&scene(&positions, &transforms, TopLevelBuild::Morton)).expect("scene"); // ok
        for (i, t) in transforms.iter().enumerate() {
            let b = &outlined.instance_bounds()[i];
            for p in &positions {
                prop_assert!(holds(b, t.transform_point3(*p)), "instance {i}: {p} outside {b:?}");
            }
            prop_assert!(within(b, &whole.instance_bounds()[i]));
        }
        // New vertices (the first triangle moved): refit on the host, the
        // outline follows the refit tree; on a device, the bounds alone.
        let mut next = positions.clone();
        next[..3].copy_from_slice(&moved);
        for refit in [RefitOn::Host, RefitOn::Device] {
            let mut accel = outlined.clone();
            let mut update = SceneUpdate::new();
            update.set_vertices(0, &next);
            accel.update_with(&update, refit).expect("new vertices"); // ok: same count
            for (i, t) in transforms.iter().enumerate() {
                let b = &accel.instance_bounds()[i];
                for p in &next {
                    prop_assert!(holds(b, t.transform_point3(*p)), "{refit:?}, instance {i}: {p} outside {b:?}");
                }
            }
        }
    }
}

/// A rotated mesh's outlined box is smaller than the box of its rotated
/// bounds (the reason outlines exist), and a scene past the SAH builder's
/// instance count places new instances by their bounds alone.
#[test]
fn outlines_are_tighter_and_only_for_sah_sized_scenes() {
    // A ring of triangles: its bounds' corners are empty.
    let positions: Vec<Vec3> = (0..64)
        .flat_map(|k| {
            let a = k as f32 / 64.0 * std::f32::consts::TAU;
            let p = Vec3::new(a.cos(), 0.0, a.sin()) * 5.0;
            [p, p + Vec3::Y * 0.2, p + Vec3::new(0.1, 0.0, 0.1)]
        })
        .collect();
    let t = Affine3A::from_rotation_z(0.6) * Affine3A::from_rotation_y(0.7);
    let area = |b: &Aabb| b.half_area();
    let outlined = Accel::build(&scene(&positions, &[t], TopLevelBuild::Auto)).expect("scene"); // ok
    let whole = Accel::build(&scene(&positions, &[t], TopLevelBuild::Morton)).expect("scene"); // ok
    let (o, w) = (outlined.instance_bounds()[0], whole.instance_bounds()[0]);
    assert!(area(&o) < 0.9 * area(&w), "outlined {o:?} against {w:?}");
    // Grown past SAH_MAX_INSTANCES: the later placements use the bounds.
    let mut accel = outlined.clone();
    let mut grow = SceneUpdate::new();
    for _ in 0..SAH_MAX_INSTANCES {
        grow.add_instance(Instance::new(0, t));
    }
    accel.update(&grow).expect("grow"); // ok: valid instances
    assert_eq!(
        accel.instance_bounds()[1],
        o,
        "placed while the scene was SAH-sized"
    );
    let mut moves = SceneUpdate::new();
    moves.set_transform(0, t);
    accel.update(&moves).expect("move"); // ok: a live instance
    assert_eq!(
        accel.instance_bounds()[0],
        w,
        "placed once the scene is past the SAH size"
    );
}
