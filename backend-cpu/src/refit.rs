//! The refit of a mesh geometry's wide tree straight from the mesh's new
//! vertices, for both widths: its packets written again through their copy
//! of the mesh's triangles ([`Packets::refit_mesh`], one pass in their
//! order), then its boxes recomputed bottom-up, in one pass over its nodes
//! from the last to the first (the collapse numbers every child after its
//! parent).
//!
//! Neither core's slots nor its binary nodes are read: core leaves them as
//! they were ([`prism_core::RefitOn::Device`]) until [`prism_core::Accel::refresh`].
//! Each box is the union of its subtree's triangle records, as core's refit
//! makes it; only the order of the unions differs, which can change the sign
//! of a zero bound and nothing else (the same values, and no slab test tells
//! `0.0` from `-0.0`), so every walk takes the same steps as over a wide
//! tree collapsed from core's refit trees.

use crate::collapse::reserve;
use crate::instances::Span;
use crate::leaves::{Bounds, PACKET_LEAF, Packets};
use glam::Vec3;
use prism_core::Error;
use prism_core::gpu::EMPTY_CHILD;

/// A wide node as the refit sees it.
pub(crate) trait RefitNode {
    /// Number of child slots.
    const WIDTH: usize;
    /// Slot `k`'s child and meta (count) words.
    fn slot(&self, k: usize) -> (u32, u32);
    /// Slot `k`'s box as stored.
    fn slot_box(&self, k: usize) -> Bounds;
    /// Store `b` as slot `k`'s box.
    fn set_slot_box(&mut self, k: usize, b: &Bounds);
}

/// Refit the wide tree of one geometry, whose nodes and packets are `span`'s
/// ranges of the BVH's `all_nodes` and `packets`, from the mesh's vertices
/// `positions` (its triangles `triangles`, copied into the packets' lanes by
/// the first refit): the packets first, in one pass in their order, then the
/// boxes bottom-up. Children are taken as the collapse made them: an inner
/// child's node after its parent, a packet leaf's packets in the span's
/// range. A leaf of the primitive array (never in a mesh, which has no
/// spheres) and an empty slot keep their boxes.
pub(crate) fn refit_tree<N: RefitNode>(
    all_nodes: &mut [N],
    span: &Span,
    packets: &mut Packets,
    triangles: &[[u32; 3]],
    positions: &[Vec3],
) -> Result<(), Error> {
    let (base, range) = (span.nodes.start, span.packets.clone());
    let nodes = all_nodes.get_mut(span.nodes.clone()).unwrap_or_default();
    // Each packet's box, then each node's, for its parent (a node's
    // children come after it).
    let mut leaves: Vec<Bounds> = Vec::new();
    reserve(&mut leaves, range.len(), "wide BVH refit boxes")?;
    leaves.resize(range.len(), Bounds::EMPTY);
    packets.refit_mesh(range.clone(), triangles, positions, &mut leaves)?;
    let mut boxes: Vec<Bounds> = Vec::new();
    reserve(&mut boxes, nodes.len(), "wide BVH refit boxes")?;
    boxes.resize(nodes.len(), Bounds::EMPTY);
    for (i, n) in nodes.iter_mut().enumerate().rev() {
        let mut all = Bounds::EMPTY;
        for k in 0..N::WIDTH {
            let (child, meta) = n.slot(k);
            let b = if meta & PACKET_LEAF != 0 {
                let first = (child as usize).wrapping_sub(range.start);
                let count = (meta & !PACKET_LEAF).div_ceil(4) as usize;
                leaves
                    .get(first..first.wrapping_add(count))
                    .unwrap_or_default()
                    .iter()
                    .fold(Bounds::EMPTY, |b, p| b.union(*p))
            } else if meta != 0 {
                n.slot_box(k)
            } else if child == EMPTY_CHILD {
                continue;
            } else {
                // ok (`get`): an inner child of the tree lies after `i` in
                // its range; one that does not keeps its box.
                match (child as usize)
                    .checked_sub(base)
                    .and_then(|c| boxes.get(c))
                {
                    Some(b) => *b,
                    None => n.slot_box(k),
                }
            };
            n.set_slot_box(k, &b);
            all = all.union(b);
        }
        if let Some(slot) = boxes.get_mut(i) {
            *slot = all;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::RefitNode;
    use crate::instances::Span;
    use crate::leaves::{Bounds, PACKET_LEAF, Packets};
    use glam::{Affine3A, Vec3, Vec4};
    use prism_core::gpu::EMPTY_CHILD;
    use prism_core::rng::Pcg;
    use prism_core::{Accel, Error, Geometry, Instance, Material, RefitOn, Scene, SceneUpdate};

    /// A bumpy grid of `n x n` quads, and a second geometry of loose triangles.
    fn scene(n: u32) -> Result<(Scene, Vec<Vec3>), Error> {
        let mut positions = Vec::new();
        for z in 0..=n {
            for x in 0..=n {
                let (fx, fz) = (x as f32, z as f32);
                positions.push(Vec3::new(fx, (fx * 0.9).sin() * (fz * 0.4).cos(), fz));
            }
        }
        let w = n + 1;
        let mut triangles = Vec::new();
        for z in 0..n {
            for x in 0..n {
                let i = z * w + x;
                triangles.push([i, i + 1, i + w]);
                triangles.push([i + 1, i + w + 1, i + w]);
            }
        }
        let mut s = Scene::new();
        let m = s.add_material(Material::lambertian(Vec3::ONE));
        let mesh = Geometry::mesh(&positions, &triangles, m)?;
        let g = s.add_geometry(mesh);
        let mut soup = Geometry::new();
        soup.add_triangle(Vec3::ZERO, Vec3::X, Vec3::Y, m);
        soup.add_sphere(Vec3::Z, 0.5, m);
        let soup = s.add_geometry(soup);
        s.add_instance(Instance::new(g, Affine3A::IDENTITY));
        s.add_instance(Instance::new(
            soup,
            Affine3A::from_translation(Vec3::Y * 9.0),
        ));
        Ok((s, positions))
    }

    /// New vertices: moved at random, some made equal to a neighbour and
    /// some put on one line with two others (triangles without area, which
    /// core stores as three copies of their first vertex).
    fn moved(r: &mut Pcg, base: &[Vec3], n: u32) -> Vec<Vec3> {
        let mut v: Vec<Vec3> = base
            .iter()
            .map(|p| *p + Vec3::new(r.next_f32(), r.next_f32(), r.next_f32()) * 0.7)
            .collect();
        let w = (n + 1) as usize;
        for k in 0..v.len() / 9 {
            let i = (r.next_f32() * (v.len() - w - 2) as f32) as usize;
            match k % 3 {
                0 => v[i + 1] = v[i],
                1 => v[i + w] = (v[i] + v[i + 1]) * 0.5,
                _ => v[i + 1] = v[i] * 2.0 - v[i + w],
            }
            if k % 5 == 0 {
                v[i] = Vec3::new(-0.0, 0.0, -0.0);
            }
        }
        v
    }

    /// The slots under slot `k` of node `n` of `nodes`.
    fn slots_under<N: RefitNode>(
        nodes: &[N],
        packets: &Packets,
        child: u32,
        meta: u32,
    ) -> Vec<u32> {
        if meta & PACKET_LEAF != 0 {
            let leaf = packets.leaf(child, meta & !PACKET_LEAF);
            return leaf
                .iter()
                .flat_map(|p| p.slot)
                .filter(|&s| s != u32::MAX)
                .collect();
        }
        assert_eq!(meta, 0, "a mesh has packet leaves only");
        if child == EMPTY_CHILD {
            return Vec::new();
        }
        let n = &nodes[child as usize];
        (0..N::WIDTH)
            .flat_map(|k| {
                let (c, m) = n.slot(k);
                slots_under(nodes, packets, c, m)
            })
            .collect()
    }

    /// Every box of the refit tree is the box of core's host-refit records
    /// below it, and every packet lane holds its slot's record, bit for bit.
    fn assert_refit<N: RefitNode>(
        (nodes, packets, spans): (&[N], &Packets, &[Span]),
        core: &Accel,
        what: &str,
    ) {
        let prims = core.primitives();
        let span = &spans[0];
        let mut lanes = 0;
        for p in &packets.tri[span.packets.clone()] {
            for (lane, &s) in p.slot.iter().enumerate() {
                if s == u32::MAX {
                    assert!(p.vertex(lane, 0)[0].is_nan(), "{what}");
                    continue;
                }
                let rec = &prims[s as usize];
                for (j, row) in [rec.a, rec.b, rec.c].iter().enumerate() {
                    let want = [row[0], row[1], row[2]].map(f32::to_bits);
                    assert_eq!(p.vertex(lane, j).map(f32::to_bits), want, "{what} slot {s}");
                }
                lanes += 1;
            }
        }
        assert_eq!(
            Some(lanes),
            core.geometry_slots(0).map(|slots| slots.len()),
            "{what}"
        );
        for n in &nodes[span.nodes.clone()] {
            for k in 0..N::WIDTH {
                let (child, meta) = n.slot(k);
                if child == EMPTY_CHILD {
                    continue;
                }
                let mut want = Bounds::EMPTY;
                for s in slots_under(nodes, packets, child, meta) {
                    let r = &prims[s as usize];
                    for v in [r.a, r.b, r.c] {
                        let v = Vec4::new(v[0], v[1], v[2], 0.0);
                        want = want.union(Bounds { lo: v, hi: v });
                    }
                }
                let got = n.slot_box(k);
                // `==`: the sign of a zero bound may differ (see the module docs).
                assert!(
                    got.lo.truncate() == want.lo.truncate()
                        && got.hi.truncate() == want.hi.truncate(),
                    "{what}: {got:?} against {want:?}"
                );
            }
        }
    }

    /// Refits in a row (core's trees left behind all along) against core's
    /// host refit of the same vertices.
    #[test]
    fn refits_from_vertices_are_core_host_refits() -> Result<(), Error> {
        let n = 23;
        let (scene, base) = scene(n)?;
        let mut r = Pcg { state: 11 };
        let mut device = Accel::build(&scene)?;
        let mut host = device.clone();
        #[cfg(target_arch = "x86_64")]
        let mut eight = crate::bvh8::Bvh8::build(&device)?;
        let mut four = crate::wide::WideBvh::build(&device)?;
        for step in 0..6 {
            let v = moved(&mut r, &base, n);
            let mut u = SceneUpdate::new();
            u.set_vertices(0, &v);
            device.update_with(&u, RefitOn::Device)?;
            host.update(&u)?;
            let Some((triangles, positions)) = device.geometry_mesh(0) else {
                panic!("geometry 0 is an indexed mesh");
            };
            let what = format!("step {step}");
            #[cfg(target_arch = "x86_64")]
            if let Some(b) = eight.as_mut() {
                b.refit(0, triangles, positions)?;
                assert_refit(b.parts(), &host, &format!("8-wide {what}"));
            }
            four.refit(0, triangles, positions)?;
            assert_refit(four.parts(), &host, &format!("4-wide {what}"));
        }
        assert_eq!(device.geometry_sah(0), None, "core's tree was left behind");
        device.refresh();
        assert!(device.nodes() == host.nodes());
        Ok(())
    }
}
