//! How the device refits a mesh geometry's tree after new vertices, worked
//! out on the host once per scene upload: for every node its parent, its side
//! in the parent and how many of its own children are inner nodes, and the
//! nodes whose children are all leaves, where the walks up the tree start.
//!
//! `prism_refit_boxes` (kernels/refit.cuh) runs a thread from each such
//! node: it writes the boxes of the node's leaf children, then the node's box
//! into its parent's row, and counts its arrival at the parent; the last
//! child to arrive (a parent waits for as many arrivals as it has inner
//! children) goes on up with the parent. Every node is so finished once, after
//! all its children, which is the order of core's refit
//! (`prism_core::two_level::refit`, children before parents), so the boxes are
//! core's: each a minimum and maximum over the same primitives.

use prism_core::Error;
use prism_core::gpu::{BvhNode, EMPTY_CHILD};
use std::ops::Range;

/// A root's parent: none.
pub(super) const NO_PARENT: u32 = u32::MAX;

/// One node's link, as `prism_refit_boxes` reads it (`uint2`): the parent
/// node ([`NO_PARENT`] for the root) and `side | inner_children << 1`, the
/// node's side in its parent (0 left, 1 right) and how many of its own
/// children are inner nodes (the arrivals it waits for).
pub(super) type Link = [u32; 2];

/// The refit links of the tree whose nodes are `nodes[range]` (its root
/// first, child indices absolute, every inner child after its parent, as core
/// lays out a geometry's tree), written into `links[range]`, and the nodes
/// whose children are all leaves (or absent), appended to `starts`.
///
/// Refuses a tree whose inner children leave the range, come before their
/// parent or have two parents: the device's walks up would then race or
/// never end.
pub(super) fn refit_links(
    nodes: &[BvhNode],
    range: Range<usize>,
    links: &mut [Link],
    starts: &mut Vec<u32>,
) -> Result<(), Error> {
    let bad = |node: usize, message: &str| Error::Device {
        backend: crate::driver::BACKEND,
        operation: "planning the device refit",
        message: format!("node {node}: {message}"),
    };
    let (Some(tree), Some(out)) = (nodes.get(range.clone()), links.get_mut(range.clone())) else {
        return Err(bad(range.start, "the tree's range lies outside the nodes"));
    };
    out.fill([NO_PARENT, 0]);
    let mut has_parent = vec![false; tree.len()];
    for (k, n) in tree.iter().enumerate() {
        let node = range.start + k;
        let mut inner = 0u32;
        for (side, index, count) in [
            (0u32, n.left_index(), n.left_count()),
            (1u32, n.right_index(), n.right_count()),
        ] {
            if count > 0 || index == EMPTY_CHILD {
                continue;
            }
            let child = index as usize;
            if child <= node || child >= range.end {
                return Err(bad(node, "an inner child outside its tree, or before it"));
            }
            let c = child - range.start;
            if std::mem::replace(&mut has_parent[c], true) {
                return Err(bad(child, "a node with two parents"));
            }
            out[c][0] = node as u32;
            out[c][1] |= side;
            inner += 1;
        }
        out[k][1] |= inner << 1;
        if inner == 0 {
            starts.push(node as u32);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use prism_core::glam::{Affine3A, Vec3};
    use prism_core::gpu::Primitive;
    use prism_core::{
        Accel, Geometry, Instance, Material, RefitOn, Scene, SceneUpdate, TopLevelBuild,
    };

    /// A wavy grid mesh of `n x n` quads (two triangles each), a few of them
    /// collapsed to zero area.
    fn grid(n: usize, phase: f32) -> (Vec<Vec3>, Vec<[u32; 3]>) {
        let mut p = Vec::new();
        for j in 0..=n {
            for i in 0..=n {
                let (x, z) = (i as f32, j as f32);
                p.push(Vec3::new(x, (x * 0.7 + z * 0.3 + phase).sin(), z));
            }
        }
        let mut t = Vec::new();
        let at = |i: usize, j: usize| (j * (n + 1) + i) as u32;
        for j in 0..n {
            for i in 0..n {
                t.push([at(i, j), at(i + 1, j), at(i + 1, j + 1)]);
                t.push([at(i, j), at(i + 1, j + 1), at(i, j + 1)]);
            }
        }
        (p, t)
    }

    /// A two-level scene of a sphere geometry and two grid meshes.
    fn scene() -> (Scene, Vec<Vec3>, Vec<Vec3>) {
        let mut s = Scene::new();
        s.top_level_build = TopLevelBuild::Sah;
        let m = s.add_material(Material::lambertian(Vec3::ONE));
        let mut balls = Geometry::new();
        for k in 0..20 {
            balls.add_sphere(Vec3::new(k as f32, 0.0, 0.0), 0.4, m);
        }
        s.add_geometry(balls);
        let (a, ta) = grid(9, 0.0);
        let (b, tb) = grid(23, 1.0);
        s.add_geometry(Geometry::mesh(&a, &ta, m).unwrap()); // ok: test, a valid mesh
        s.add_geometry(Geometry::mesh(&b, &tb, m).unwrap()); // ok: as above
        for g in 0..3 {
            s.add_instance(Instance::new(
                g,
                Affine3A::from_translation(Vec3::splat(3.0 * g as f32)),
            ));
        }
        (s, a, b)
    }

    /// The box of one slot (core's `primitive_bounds` of a triangle).
    fn slot_box(p: &Primitive) -> (Vec3, Vec3) {
        let v = |r: [f32; 4]| Vec3::new(r[0], r[1], r[2]);
        let (a, b, c) = (v(p.a), v(p.b), v(p.c));
        (a.min(b).min(c), a.max(b).max(c))
    }

    fn set(lo: &mut [f32; 4], hi: &mut [f32; 4], b: (Vec3, Vec3)) {
        lo[..3].copy_from_slice(&b.0.to_array());
        hi[..3].copy_from_slice(&b.1.to_array());
    }

    /// `prism_refit_boxes`, one thread after the other: from each start node
    /// up, the last child to arrive at a parent going on. Any order of the
    /// threads gives the same boxes; this is one of them.
    fn refit_as_the_device(
        nodes: &mut [BvhNode],
        prims: &[Primitive],
        links: &[Link],
        starts: &[u32],
    ) {
        let mut arrivals = vec![0u32; nodes.len()];
        for &start in starts {
            let mut node = start as usize;
            loop {
                let mut n = nodes[node];
                let mut total = (Vec3::INFINITY, Vec3::NEG_INFINITY);
                let (l, r) = (
                    (n.left_index(), n.left_count()),
                    (n.right_index(), n.right_count()),
                );
                let sides = [
                    (l, &mut n.left_lo, &mut n.left_hi),
                    (r, &mut n.right_lo, &mut n.right_hi),
                ];
                for ((index, count), lo, hi) in sides {
                    if index == EMPTY_CHILD {
                        continue;
                    }
                    if count > 0 {
                        let b = prims[index as usize..(index + count) as usize]
                            .iter()
                            .map(slot_box)
                            .fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |a, b| {
                                (a.0.min(b.0), a.1.max(b.1))
                            });
                        set(lo, hi, b);
                    }
                    let v = |r: &[f32; 4]| Vec3::new(r[0], r[1], r[2]);
                    total = (total.0.min(v(lo)), total.1.max(v(hi)));
                }
                nodes[node] = n;
                let [parent, bits] = links[node];
                if parent == NO_PARENT {
                    break;
                }
                let p = &mut nodes[parent as usize];
                if bits & 1 == 0 {
                    set(&mut p.left_lo, &mut p.left_hi, total);
                } else {
                    set(&mut p.right_lo, &mut p.right_hi, total);
                }
                let wait = links[parent as usize][1] >> 1;
                arrivals[parent as usize] += 1;
                if arrivals[parent as usize] < wait {
                    break;
                }
                arrivals[parent as usize] = 0;
                node = parent as usize;
            }
        }
        assert!(arrivals.iter().all(|&a| a == 0), "every count back at 0");
    }

    #[test]
    fn the_links_give_core_s_refit() {
        let (s, a, b) = scene();
        let mut host = Accel::build(&s).unwrap(); // ok: test, a valid scene
        let mut device = host.clone();
        let moved_a: Vec<Vec3> = a.iter().map(|p| *p * 1.3 + Vec3::Y * p.x.cos()).collect();
        let moved_b: Vec<Vec3> = b.iter().map(|p| Vec3::new(p.z, p.x, p.y) * 0.5).collect();
        let mut update = SceneUpdate::new();
        update.set_vertices(1, &moved_a).set_vertices(2, &moved_b);
        host.update_with(&update, RefitOn::Host).unwrap(); // ok: test, a valid update
        let changes = device.update_with(&update, RefitOn::Device).unwrap(); // ok: as above
        assert_eq!(changes.refit, vec![1, 2]);
        // What the slots kernel writes: the host's refit slots.
        let mut prims = device.primitives().to_vec();
        for g in [1u32, 2] {
            let r = device.geometry_slots(g).unwrap(); // ok: test, a geometry
            prims[r.clone()].copy_from_slice(&host.primitives()[r]);
        }
        let mut nodes = device.nodes().to_vec();
        let mut links = vec![[NO_PARENT, 0]; nodes.len()];
        let mut starts = Vec::new();
        for g in [1u32, 2] {
            let r = device.geometry_nodes(g).unwrap(); // ok: test, a geometry
            refit_links(&nodes, r, &mut links, &mut starts).unwrap(); // ok: core's trees
        }
        // The nodes of the untouched sphere geometry are nobody's start.
        let spheres = device.geometry_nodes(0).unwrap(); // ok: test, a geometry
        assert!(starts.iter().all(|&s| !spheres.contains(&(s as usize))));
        refit_as_the_device(&mut nodes, &prims, &links, &starts);
        // The same boxes as core's (== on floats: a min or max of +0 and -0
        // may keep either).
        let rows = |v: &[BvhNode]| -> Vec<f32> { bytemuck::cast_slice::<BvhNode, f32>(v).to_vec() };
        let (got, want) = (rows(&nodes), rows(host.nodes()));
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                g == w || g.to_bits() == w.to_bits(),
                "float {i} of the nodes: {g} against core's {w}"
            );
        }
        // Boxes moved: the refit did something.
        assert_ne!(rows(device.nodes()), want);
    }

    #[test]
    fn every_node_but_the_root_has_a_parent_and_leaf_parents_start() {
        let (s, ..) = scene();
        let accel = Accel::build(&s).unwrap(); // ok: test, a valid scene
        let r = accel.geometry_nodes(2).unwrap(); // ok: test, a geometry
        let mut links = vec![[0, 0]; accel.nodes().len()];
        let mut starts = Vec::new();
        refit_links(accel.nodes(), r.clone(), &mut links, &mut starts).unwrap(); // ok: core's tree
        assert_eq!(links[r.start][0], NO_PARENT);
        for (i, link) in links.iter().enumerate().take(r.end).skip(r.start + 1) {
            let parent = link[0] as usize;
            assert!(
                r.contains(&parent) && parent < i,
                "node {i}: parent {parent}"
            );
        }
        let inner = |n: &BvhNode| {
            [
                (n.left_index(), n.left_count()),
                (n.right_index(), n.right_count()),
            ]
            .iter()
            .filter(|&&(i, c)| c == 0 && i != EMPTY_CHILD)
            .count() as u32
        };
        for i in r.clone() {
            assert_eq!(links[i][1] >> 1, inner(&accel.nodes()[i]));
        }
        let want: Vec<u32> = r
            .filter(|&i| inner(&accel.nodes()[i]) == 0)
            .map(|i| i as u32)
            .collect();
        assert_eq!(starts, want);
    }

    #[test]
    fn a_node_with_two_parents_or_a_child_outside_is_refused() {
        let (s, ..) = scene();
        let accel = Accel::build(&s).unwrap(); // ok: test, a valid scene
        let r = accel.geometry_nodes(2).unwrap(); // ok: test, a geometry
        let mut links = vec![[0, 0]; accel.nodes().len()];
        let mut nodes = accel.nodes().to_vec();
        // Both children of the root pointing at one node.
        let root = nodes[r.start];
        assert_eq!(root.left_count(), 0);
        nodes[r.start].right_lo[3] = root.left_lo[3];
        nodes[r.start].right_hi[3] = root.left_hi[3];
        let e = refit_links(&nodes, r.clone(), &mut links, &mut Vec::new());
        assert!(matches!(e, Err(Error::Device { .. })), "{e:?}");
        // A child in another geometry's tree.
        let mut nodes = accel.nodes().to_vec();
        nodes[r.start].left_lo[3] = f32::from_bits(0);
        assert!(refit_links(&nodes, r.clone(), &mut links, &mut Vec::new()).is_err());
        // A range past the nodes.
        let past = r.start..accel.nodes().len() + 1;
        assert!(refit_links(accel.nodes(), past, &mut links, &mut Vec::new()).is_err());
    }
}
