//! A 4-wide BVH for the CPU: core's binary BVHs collapsed so that one node holds
//! up to four children, their boxes stored as structure-of-arrays and tested
//! four at a time in 128-bit SIMD registers (glam's `Vec4`: SSE on x86-64, NEON
//! on AArch64, scalar elsewhere).
//!
//! Same leaves, same primitive records and the same primitive tests as
//! [`prism_core::traverse`] — only the order and number of box tests change — so
//! the answers are core's: identical `t` and primitive except where two
//! primitives tie at exactly the same `t`.
//!
//! A two-level scene has every geometry's tree collapsed, one after the other,
//! and its tree over the instances too (each of its leaves one instance). The
//! walk goes down the instances' tree with the world ray; at an instance whose
//! mask the ray shares, core's [`object_ray`] carries the ray into object
//! space and the walk goes down the geometry's wide tree, with the closest hit
//! so far as its `tmax`, as core's walk does.

use crate::collapse::{gather, reserve};
use crate::instances::{Record, Span, write_records};
use crate::leaves::{
    Bounds, Lanes, NOT_IN_PACKET, PACKET_LEAF, Packets, dispatch_axes, leaf, leaf_closest,
    packet_hit, packet_lane, prim_any,
};
use crate::refit::{RefitNode, refit_tree};
use glam::{Vec3, Vec4};
use prism_core::gpu::{BvhNode, EMPTY_CHILD, Primitive};
use prism_core::heightfield::Heightfields;
use prism_core::intersect::{RayPre, SLAB_EXIT_SCALE, SLAB_EXIT_SCALE_NEGATIVE};
use prism_core::two_level::object_ray;
use prism_core::{Accel, Error, Hit, Ray, TreeBytes};

/// Entries of the traversal stack. A popped wide node pushes at most four inner
/// children, a net growth of three entries, and a node whose children are all
/// leaves pushes none; so a walk through a tree of `d` wide levels holds at most
/// `3 * (d - 1) + 1` entries. Collapsing never deepens a tree, and core's BVHs
/// (the instances' tree too) are shallower than 64 levels, so 3 * 64 entries
/// always suffice (the pushes are bounds-checked besides).
const STACK: usize = 192;

/// Four children: boxes as structure-of-arrays (one register per bound), then
/// references. 128 bytes, two cache lines, aligned so a node never straddles three.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct WideNode {
    min_x: Vec4,
    min_y: Vec4,
    min_z: Vec4,
    max_x: Vec4,
    max_y: Vec4,
    max_z: Vec4,
    /// Inner child: wide node index. Leaf: first packet or primitive slot; in
    /// the instances' tree, the instance.
    child: [u32; 4],
    /// 0 for an inner child (or an empty slot), else the leaf's primitive
    /// count (with [`PACKET_LEAF`] for a packet leaf; 1 for an instance).
    count: [u32; 4],
}

impl WideNode {
    /// A node whose four slots are empty: boxes at +inf are never entered.
    const EMPTY: WideNode = WideNode {
        min_x: Vec4::INFINITY,
        min_y: Vec4::INFINITY,
        min_z: Vec4::INFINITY,
        max_x: Vec4::INFINITY,
        max_y: Vec4::INFINITY,
        max_z: Vec4::INFINITY,
        child: [EMPTY_CHILD; 4],
        count: [0; 4],
    };

    /// Slot `k` takes the box rows `lo`, `hi` (their `w` lanes ignored).
    #[inline]
    fn set_box(&mut self, k: usize, lo: &[f32; 4], hi: &[f32; 4]) {
        self.min_x[k] = lo[0];
        self.min_y[k] = lo[1];
        self.min_z[k] = lo[2];
        self.max_x[k] = hi[0];
        self.max_y[k] = hi[1];
        self.max_z[k] = hi[2];
    }
}

impl RefitNode for WideNode {
    const WIDTH: usize = 4;

    #[inline(always)]
    fn slot(&self, k: usize) -> (u32, u32) {
        (self.child[k], self.count[k])
    }

    #[inline(always)]
    fn slot_box(&self, k: usize) -> Bounds {
        Bounds {
            lo: Vec4::new(self.min_x[k], self.min_y[k], self.min_z[k], 0.0),
            hi: Vec4::new(self.max_x[k], self.max_y[k], self.max_z[k], 0.0),
        }
    }

    #[inline(always)]
    fn set_slot_box(&mut self, k: usize, b: &Bounds) {
        self.set_box(k, &b.lo.to_array(), &b.hi.to_array());
    }
}

/// The 4-wide BVH of one [`Accel`]: every geometry's tree, and for a
/// two-level scene the instances' tree and records.
#[derive(Clone, Debug, Default)]
pub struct WideBvh {
    /// Every geometry's wide tree, one after the other.
    nodes: Vec<WideNode>,
    packets: Packets,
    /// Each geometry's root and ranges.
    spans: Vec<Span>,
    /// Whether the scene is two-level.
    two_level: bool,
    /// The instances' tree (empty for a flat scene).
    top: Vec<WideNode>,
    /// The instances' records, with wide roots ([`crate::instances`]).
    records: Vec<Record>,
}

impl WideBvh {
    /// Collapse `accel`'s binary BVHs: each wide node takes its binary node's two
    /// children and repeatedly opens the inner child of largest surface area
    /// until it holds four (the usual greedy SAH-guided collapse).
    ///
    /// Its arrays grow fallibly: where the host has not the memory, the error
    /// is [`Error::HostOutOfMemory`] and nothing is kept.
    pub fn build(accel: &Accel) -> Result<Self, Error> {
        let bin = accel.nodes();
        let mut out = WideBvh {
            two_level: accel.is_two_level(),
            ..WideBvh::default()
        };
        reserve(&mut out.nodes, bin.len() / 2 + 1, "4-wide BVH nodes")?;
        out.packets.reserve_for(bin)?;
        reserve(
            &mut out.spans,
            accel.geometry_count(),
            "4-wide BVH geometries",
        )?;
        for g in 0..accel.geometry_count() as u32 {
            let (nodes, packets) = (out.nodes.len(), out.packets.len());
            let root = match accel.geometry_root(g) {
                Some(r) if (r as usize) < bin.len() => {
                    collapse(bin, accel.primitives(), r, &mut out)?
                }
                _ => EMPTY_CHILD,
            };
            out.spans.push(Span {
                root,
                nodes: nodes..out.nodes.len(),
                packets: packets..out.packets.len(),
            });
        }
        if out.two_level {
            out.collapse_top(accel)?;
            write_records(
                accel,
                &out.spans,
                0..accel.instances().len(),
                &mut out.records,
            )?;
        }
        Ok(out)
    }

    /// Number of wide nodes (of the geometries' trees).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are no nodes (never, for a built scene).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The memory this tree takes: its nodes (the instances' tree's too),
    /// and its leaves' triangle packets and instance records.
    pub fn tree_bytes(&self) -> TreeBytes {
        use core::mem::size_of_val;
        TreeBytes {
            tree: "CPU 4-wide (SSE)",
            nodes: (size_of_val(self.nodes.as_slice()) + size_of_val(self.top.as_slice())) as u64,
            leaves: self.packets.bytes() + size_of_val(self.records.as_slice()) as u64,
        }
    }

    /// Collapse `accel`'s tree over the instances again (after a rebuild of
    /// it), into new arrays: on an error the old tree is kept.
    pub(crate) fn collapse_top(&mut self, accel: &Accel) -> Result<(), Error> {
        let bin = accel.top_nodes();
        let mut top = Vec::new();
        reserve(&mut top, bin.len() / 2 + 1, "4-wide instance tree")?;
        if !bin.is_empty() {
            collapse_top(bin, 0, &mut top)?;
        }
        self.top = top;
        Ok(())
    }

    /// Write the records of `accel`'s instances `range` again.
    pub(crate) fn update_records(
        &mut self,
        accel: &Accel,
        range: core::ops::Range<usize>,
    ) -> Result<(), Error> {
        write_records(accel, &self.spans, range, &mut self.records)
    }

    /// The geometries' nodes, the packets and each geometry's span (for
    /// the refit's tests).
    #[cfg(test)]
    pub(crate) fn parts(&self) -> (&[WideNode], &Packets, &[Span]) {
        (&self.nodes, &self.packets, &self.spans)
    }

    /// Refit geometry `g`'s tree (an indexed mesh's, whose triangles are
    /// `triangles`) to its vertices `positions`: the packets written from
    /// them, the boxes bottom-up (see [`crate::refit`]). Core's slots and
    /// binary nodes are not read.
    pub(crate) fn refit(
        &mut self,
        g: u32,
        triangles: &[[u32; 3]],
        positions: &[Vec3],
    ) -> Result<(), Error> {
        let Some(span) = self.spans.get(g as usize) else {
            return Ok(());
        };
        refit_tree(
            &mut self.nodes,
            span,
            &mut self.packets,
            triangles,
            positions,
        )
    }
}

/// Append the wide node for binary node `node` (and its subtree); returns its index.
fn collapse(
    bin: &[BvhNode],
    prims: &[Primitive],
    node: u32,
    out: &mut WideBvh,
) -> Result<u32, Error> {
    let (kids, _) = gather::<4, ()>(bin, node, |_| (), |_| false);
    let me = out.nodes.len();
    reserve(&mut out.nodes, 1, "4-wide BVH nodes")?;
    out.nodes.push(WideNode::EMPTY);
    let mut w = WideNode::EMPTY;
    for (k, (c, ())) in kids
        .iter()
        .enumerate()
        .filter_map(|(k, c)| Some((k, (*c)?)))
    {
        w.set_box(k, &c.lo, &c.hi);
        if c.is_inner() {
            w.child[k] = collapse(bin, prims, c.index(), out)?;
            w.count[k] = 0;
        } else {
            (w.child[k], w.count[k]) = leaf(prims, c.index(), c.count(), &mut out.packets)?;
        }
    }
    out.nodes[me] = w;
    Ok(me as u32)
}

/// Append the wide node for node `node` of the instances' binary tree `bin`
/// (and its subtree) to `out`; its leaves are instances (count 1).
fn collapse_top(bin: &[BvhNode], node: u32, out: &mut Vec<WideNode>) -> Result<u32, Error> {
    let (kids, _) = gather::<4, ()>(bin, node, |_| (), |_| false);
    let me = out.len();
    reserve(out, 1, "4-wide instance tree")?;
    out.push(WideNode::EMPTY);
    let mut w = WideNode::EMPTY;
    for (k, c) in kids
        .iter()
        .enumerate()
        .filter_map(|(k, c)| Some((k, (*c)?.0)))
    {
        w.set_box(k, &c.lo, &c.hi);
        (w.child[k], w.count[k]) = if c.is_inner() {
            (collapse_top(bin, c.index(), out)?, 0)
        } else {
            (c.index(), 1)
        };
    }
    out[me] = w;
    Ok(me as u32)
}

/// Core's slab test ([`prism_core::intersect::ray_aabb`]) on four boxes:
/// entry distances, `+inf` where a box is missed.
#[inline(always)]
fn boxes(l: &Lanes, n: &WideNode, tmin: f32, tmax: f32) -> Vec4 {
    let tx0 = (n.min_x - l.ox) * l.ix;
    let tx1 = (n.max_x - l.ox) * l.ix;
    let ty0 = (n.min_y - l.oy) * l.iy;
    let ty1 = (n.max_y - l.oy) * l.iy;
    let tz0 = (n.min_z - l.oz) * l.iz;
    let tz1 = (n.max_z - l.oz) * l.iz;
    let near = tx0
        .min(tx1)
        .max(ty0.min(ty1))
        .max(tz0.min(tz1))
        .max(Vec4::splat(tmin));
    let far = tx0
        .max(tx1)
        .min(ty0.max(ty1))
        .min(tz0.max(tz1))
        .min(Vec4::splat(tmax));
    // Core's `widen_exit`: outwards for either sign of the exit distance.
    let far = far
        * Vec4::select(
            far.cmplt(Vec4::ZERO),
            Vec4::splat(SLAB_EXIT_SCALE_NEGATIVE),
            Vec4::splat(SLAB_EXIT_SCALE),
        );
    Vec4::select(near.cmple(far), near, Vec4::INFINITY)
}

/// Lane indices of `t` in ascending order: a five-comparator sorting network
/// (no loop, no calls; misses are `+inf` and sort last).
#[inline(always)]
fn sort4(t: &[f32; 4]) -> [usize; 4] {
    let mut k = [0usize, 1, 2, 3];
    let swap = |a: usize, b: usize, k: &mut [usize; 4]| {
        if t[k[b]] < t[k[a]] {
            k.swap(a, b);
        }
    };
    swap(0, 1, &mut k);
    swap(2, 3, &mut k);
    swap(0, 2, &mut k);
    swap(1, 3, &mut k);
    swap(1, 2, &mut k);
    k
}

impl WideBvh {
    /// Closest hit; `Hit::prim` is the primitive id within its geometry,
    /// `Hit::instance` the instance (0 for a flat scene). `prims` and `hf`
    /// are the [`Accel`]'s the BVH was built from ([`Accel::primitives`],
    /// [`Accel::heightfield_set`]).
    pub fn intersect(&self, prims: &[Primitive], hf: Heightfields<'_>, ray: &Ray) -> Hit {
        let (mut hit, at) = self.closest_at(prims, hf, ray);
        if hit.is_hit() {
            hit.prim = self.packets.id_of(&hit, at, prims);
        }
        hit
    }

    /// Closest hit; `Hit::prim` is the leaf slot (as [`Accel::intersect_slot`]).
    pub fn intersect_slot(&self, prims: &[Primitive], hf: Heightfields<'_>, ray: &Ray) -> Hit {
        self.closest_at(prims, hf, ray).0
    }

    /// Whether anything the ray sees lies on it within `(tmin, tmax)`.
    pub fn occluded(&self, prims: &[Primitive], hf: Heightfields<'_>, ray: &Ray) -> bool {
        if self.two_level {
            return self.any_two_level(prims, hf, ray);
        }
        let Some(root) = self.flat_root(ray) else {
            return false;
        };
        let pre = RayPre::new(ray);
        dispatch_axes!(pre, any_axes, self, prims, hf, ray, &pre, root)
    }

    /// The root a flat scene's ray walks from, `None` where its mask hides
    /// the scene (the one implicit instance of mask `0xFF`).
    #[inline(always)]
    fn flat_root(&self, ray: &Ray) -> Option<u32> {
        let span = self.spans.first()?;
        (ray.mask & 0xFF != 0).then_some(span.root)
    }

    /// Closest hit with `Hit::prim` as the leaf slot, and where it came from.
    fn closest_at(&self, prims: &[Primitive], hf: Heightfields<'_>, ray: &Ray) -> (Hit, usize) {
        if self.two_level {
            return self.closest_two_level(prims, hf, ray);
        }
        let Some(root) = self.flat_root(ray) else {
            return (Hit::MISS, NOT_IN_PACKET);
        };
        let pre = RayPre::new(ray);
        dispatch_axes!(pre, closest_axes, self, prims, hf, ray, &pre, root)
    }

    /// Closest hit over both levels (`Hit::prim` the slot, `Hit::instance`
    /// the instance), and where it came from.
    fn closest_two_level(
        &self,
        prims: &[Primitive],
        hf: Heightfields<'_>,
        ray: &Ray,
    ) -> (Hit, usize) {
        let pre = RayPre::new(ray);
        let lanes = Lanes::new(&pre);
        let tmin = ray.tmin;
        let mut best = Hit::new(ray.tmax, 0.0, 0.0, Hit::NO_PRIM, Hit::NO_INSTANCE);
        let mut best_at = NOT_IN_PACKET;
        let mut stack = [(0u32, 0.0f32); STACK];
        let mut sp = usize::from(!self.top.is_empty());
        stack[0] = (0, tmin);
        while sp > 0 {
            sp -= 1;
            let (node, t_enter) = stack[sp];
            if t_enter >= best.t {
                continue;
            }
            let Some(n) = self.top.get(node as usize) else {
                continue;
            };
            let t = boxes(&lanes, n, tmin, best.t).to_array();
            // Instances now, nearest first; inner children onto the stack, farthest first.
            let order = sort4(&t);
            for &k in &order {
                if t[k] < best.t && n.count[k] != 0 {
                    let index = n.child[k];
                    let Some(Record(rec)) = self.records.get(index as usize) else {
                        continue;
                    };
                    if ray.mask & rec.mask() == 0 {
                        continue;
                    }
                    let object = object_ray(rec, ray, best.t);
                    let opre = RayPre::new(&object);
                    let root = rec.root();
                    let (hit, at) =
                        dispatch_axes!(opre, closest_axes, self, prims, hf, &object, &opre, root);
                    if hit.is_hit() {
                        best = hit.with_instance(index);
                        best_at = at;
                    }
                }
            }
            for &k in order.iter().rev() {
                if t[k] < best.t && n.count[k] == 0 && n.child[k] != EMPTY_CHILD && sp < STACK {
                    stack[sp] = (n.child[k], t[k]);
                    sp += 1;
                }
            }
        }
        if best.is_hit() {
            (best, best_at)
        } else {
            (Hit::MISS, NOT_IN_PACKET)
        }
    }

    /// Whether anything the ray sees lies on it, over both levels.
    fn any_two_level(&self, prims: &[Primitive], hf: Heightfields<'_>, ray: &Ray) -> bool {
        let pre = RayPre::new(ray);
        let lanes = Lanes::new(&pre);
        let (tmin, tmax) = (ray.tmin, ray.tmax);
        let mut stack = [0u32; STACK];
        let mut sp = usize::from(!self.top.is_empty());
        while sp > 0 {
            sp -= 1;
            let Some(n) = self.top.get(stack[sp] as usize) else {
                continue;
            };
            let t = boxes(&lanes, n, tmin, tmax).to_array();
            for (k, &tk) in t.iter().enumerate() {
                if tk == f32::INFINITY {
                    continue;
                }
                if n.count[k] != 0 {
                    let Some(Record(rec)) = self.records.get(n.child[k] as usize) else {
                        continue;
                    };
                    if ray.mask & rec.mask() == 0 {
                        continue;
                    }
                    let object = object_ray(rec, ray, tmax);
                    let opre = RayPre::new(&object);
                    let root = rec.root();
                    if dispatch_axes!(opre, any_axes, self, prims, hf, &object, &opre, root) {
                        return true;
                    }
                } else if n.child[k] != EMPTY_CHILD && sp < STACK {
                    stack[sp] = n.child[k];
                    sp += 1;
                }
            }
        }
        false
    }
}

/// One ray's closest-hit walk of one geometry's tree, advanced a node at a time.
struct ClosestWalk {
    pre: RayPre,
    lanes: Lanes,
    tmin: f32,
    best: Hit,
    /// Where `best` came from (see [`NOT_IN_PACKET`]).
    best_at: usize,
    stack: [(u32, f32); STACK],
    sp: usize,
}

impl ClosestWalk {
    #[inline(always)]
    fn new(ray: &Ray, pre: RayPre, root: u32) -> Self {
        let mut stack = [(0u32, 0.0f32); STACK];
        stack[0] = (root, ray.tmin); // the root, entered at t = tmin
        ClosestWalk {
            lanes: Lanes::new(&pre),
            pre,
            tmin: ray.tmin,
            best: Hit::new(ray.tmax, 0.0, 0.0, Hit::NO_PRIM, Hit::NO_INSTANCE),
            best_at: NOT_IN_PACKET,
            stack,
            sp: 1,
        }
    }

    /// Visit the next node; false once the walk is finished.
    #[inline(always)]
    fn step<const KX: usize, const KY: usize, const KZ: usize>(
        &mut self,
        bvh: &WideBvh,
        prims: &[Primitive],
        hf: Heightfields<'_>,
    ) -> bool {
        if self.sp == 0 {
            return false;
        }
        self.sp -= 1;
        let (node, t_enter) = self.stack[self.sp];
        if t_enter >= self.best.t {
            return true;
        }
        let Some(n) = bvh.nodes.get(node as usize) else {
            return true;
        };
        let tmin = self.tmin;
        let t = boxes(&self.lanes, n, tmin, self.best.t).to_array();
        // Leaves now, nearest first; inner children onto the stack, farthest first.
        let order = sort4(&t);
        for &k in &order {
            if t[k] < self.best.t && n.count[k] & PACKET_LEAF != 0 {
                let first = n.child[k];
                let leaf = bvh.packets.leaf(first, n.count[k] & !PACKET_LEAF);
                for (i, p) in leaf.iter().enumerate() {
                    if let Some((lane, t, u, v)) =
                        packet_hit::<KX, KY, KZ>(&self.lanes, p, tmin, self.best.t)
                    {
                        self.best = Hit::new(t, u, v, p.slot[lane], 0);
                        self.best_at = packet_lane(first + i as u32, lane);
                    }
                }
            } else if t[k] < self.best.t && n.count[k] > 0 {
                let before = self.best.prim;
                leaf_closest::<KX, KY, KZ>(
                    &self.pre,
                    prims,
                    hf,
                    n.child[k],
                    n.count[k],
                    tmin,
                    &mut self.best,
                );
                if self.best.prim != before {
                    self.best_at = NOT_IN_PACKET;
                }
            }
        }
        for &k in order.iter().rev() {
            if t[k] < self.best.t && n.count[k] == 0 && n.child[k] != EMPTY_CHILD && self.sp < STACK
            {
                self.stack[self.sp] = (n.child[k], t[k]);
                self.sp += 1;
            }
        }
        true
    }

    #[inline(always)]
    /// The closest hit with `prim` as a leaf slot (or a miss), and where it
    /// came from (see [`NOT_IN_PACKET`]).
    fn finish(self) -> (Hit, usize) {
        if self.best.is_hit() {
            (self.best, self.best_at)
        } else {
            (Hit::MISS, NOT_IN_PACKET)
        }
    }
}

/// Closest hit (leaf slot, and where it came from) for one axis permutation,
/// from the geometry tree at `root`.
#[inline(never)]
fn closest_axes<const KX: usize, const KY: usize, const KZ: usize>(
    bvh: &WideBvh,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    ray: &Ray,
    pre: &RayPre,
    root: u32,
) -> (Hit, usize) {
    let mut w = ClosestWalk::new(ray, *pre, root);
    while w.step::<KX, KY, KZ>(bvh, prims, hf) {}
    w.finish()
}

/// Any hit for one axis permutation, from the geometry tree at `root`.
#[inline(never)]
fn any_axes<const KX: usize, const KY: usize, const KZ: usize>(
    bvh: &WideBvh,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    ray: &Ray,
    pre: &RayPre,
    root: u32,
) -> bool {
    let lanes = Lanes::new(pre);
    let (tmin, tmax) = (ray.tmin, ray.tmax);
    let mut stack = [0u32; STACK];
    stack[0] = root;
    let mut sp = 1usize;
    while sp > 0 {
        sp -= 1;
        let Some(n) = bvh.nodes.get(stack[sp] as usize) else {
            continue;
        };
        let t = boxes(&lanes, n, tmin, tmax).to_array();
        for (k, &tk) in t.iter().enumerate() {
            if tk == f32::INFINITY {
                continue;
            }
            if n.count[k] & PACKET_LEAF != 0 {
                if bvh
                    .packets
                    .leaf(n.child[k], n.count[k] & !PACKET_LEAF)
                    .iter()
                    .any(|p| packet_hit::<KX, KY, KZ>(&lanes, p, tmin, tmax).is_some())
                {
                    return true;
                }
            } else if n.count[k] > 0 {
                let first = n.child[k] as usize;
                if let Some(leaf) = prims.get(first..first + n.count[k] as usize)
                    && leaf
                        .iter()
                        .any(|p| prim_any::<KX, KY, KZ>(pre, p, hf, tmin, tmax))
                {
                    return true;
                }
            } else if n.child[k] != EMPTY_CHILD && sp < STACK {
                stack[sp] = n.child[k];
                sp += 1;
            }
        }
    }
    false
}
