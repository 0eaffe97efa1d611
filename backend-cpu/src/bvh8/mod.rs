//! An 8-wide BVH for x86-64 CPUs with AVX2, chosen at run time.
//!
//! Core's binary BVHs collapsed so that one node holds up to eight children: the
//! eight boxes as structure-of-arrays, one 256-bit register per bound, tested
//! together with AVX2 (half the node fetches of the 4-wide BVH of
//! [`crate::wide`], which stays the path for CPUs without AVX2). Leaves and
//! their triangle packets are those of `crate::leaves`, which the 4-wide BVH
//! shares.
//!
//! The arithmetic is core's: the slab test in Ize's form `(bound - origin) *
//! inv_dir` with the same exit widening, and the same watertight triangle test
//! per lane (no fused multiply-add anywhere: only AVX2 is enabled, and Rust never
//! contracts). Picking the near plane of each axis from the sign of `inv_dir`
//! equals core's `min(t0, t1)` exactly, as rounding is monotonic. So the answers
//! are core's: identical `t`, `u`, `v` and primitive, except where two primitives
//! tie at exactly the same `t`.
//!
//! A two-level scene has every geometry's tree collapsed, one after the other,
//! and its tree over the instances too (each of its leaves one instance),
//! whose boxes are made from each geometry's outline as placed, far closer
//! than the boxes core's tree has (see `Bvh8::collapse_top`). The walk goes
//! down the instances' tree with the world ray; at an instance whose
//! mask the ray shares, the ray is carried into object space as core's
//! [`prism_core::two_level::object_ray`] carries it (the same ray, bit for
//! bit, from the rows kept as columns) and the walk goes down the geometry's
//! tree with the closest hit so far as its `tmax`, as core's walk does (see
//! `walk`).

/// Core's watertight triangle test ([`prism_core::intersect::ray_triangle_axes`])
/// over eight lanes, from the vertices less the ray's origin on the test's axes
/// (`$a`, `$b`, `$c`: `[kx, ky, kz]` rows), the shear `[sx, sy, sz]` and the
/// interval `($tmin, $tmax)`, all `__m256`: per lane core's operations in
/// core's order, so `t`, `u` and `v` are core's bit for bit. Gives the lanes
/// hit (all bits set) and each lane's `t`, `u` and `v`. With `$early`, `None`
/// where no lane lies inside its triangle, skipping the division and what
/// follows it: the packets take it (one triangle against eight neighbouring
/// rays, which mostly all miss it together: 1.07x on ogre.primary), the
/// single-ray walk does not (eight triangles against one ray: the branch
/// went either way and cost 1.05-1.1x on diffuse rays). One body for both
/// walks; a macro, so that it is inlined into both.
macro_rules! watertight8 {
    ($early:expr, $a:expr, $b:expr, $c:expr, $shear:expr, $tmin:expr, $tmax:expr) => {{
        let (a, b, c): ([__m256; 3], [__m256; 3], [__m256; 3]) = ($a, $b, $c);
        let [sx, sy, sz]: [__m256; 3] = $shear;
        let (mul, sub, add) = (_mm256_mul_ps, _mm256_sub_ps, _mm256_add_ps);
        let ax = sub(a[0], mul(sx, a[2]));
        let ay = sub(a[1], mul(sy, a[2]));
        let bx = sub(b[0], mul(sx, b[2]));
        let by = sub(b[1], mul(sy, b[2]));
        let cx = sub(c[0], mul(sx, c[2]));
        let cy = sub(c[1], mul(sy, c[2]));
        let u = sub(mul(cx, by), mul(cy, bx));
        let v = sub(mul(ax, cy), mul(ay, cx));
        let w = sub(mul(bx, ay), mul(by, ax));
        let zero = _mm256_setzero_ps();
        let lt = |x| _mm256_cmp_ps::<_CMP_LT_OQ>(x, zero);
        let gt = |x| _mm256_cmp_ps::<_CMP_GT_OQ>(x, zero);
        let negative = _mm256_or_ps(_mm256_or_ps(lt(u), lt(v)), lt(w));
        let positive = _mm256_or_ps(_mm256_or_ps(gt(u), gt(v)), gt(w));
        let outside = _mm256_and_ps(negative, positive);
        let det = add(add(u, v), w);
        // glam's `cmpne` is unordered (true for NaN), as here.
        let inside = _mm256_andnot_ps(outside, _mm256_cmp_ps::<_CMP_NEQ_UQ>(det, zero));
        if $early && _mm256_movemask_ps(inside) == 0 {
            None
        } else {
            let az = mul(sz, a[2]);
            let bz = mul(sz, b[2]);
            let cz = mul(sz, c[2]);
            let t_scaled = add(add(mul(u, az), mul(v, bz)), mul(w, cz));
            let rcp = _mm256_div_ps(_mm256_set1_ps(1.0), det);
            let t = mul(t_scaled, rcp);
            let within = _mm256_and_ps(
                _mm256_cmp_ps::<_CMP_GT_OQ>(t, $tmin),
                _mm256_cmp_ps::<_CMP_LT_OQ>(t, $tmax),
            );
            Some((_mm256_and_ps(inside, within), t, mul(v, rcp), mul(w, rcp)))
        }
    }};
}

mod packet;
#[cfg(test)]
mod packet_tests;
mod walk;
mod work;

use crate::collapse::{Child, children, gather, reserve};
use crate::instances::{Columns, Outline, Span, write_columns};
use crate::leaves::{Bounds, NOT_IN_PACKET, Packets, all_triangles, leaf};
use crate::refit::{RefitNode, refit_tree};
use glam::{Vec3, Vec4};
use packet::{any_many, closest_many, packets_pay};
use prism_core::gpu::{BvhNode, EMPTY_CHILD, Primitive};
use prism_core::heightfield::Heightfields;
use prism_core::{Accel, Error, Hit, Ray, TreeBytes};
use walk::{any, any_two_level, closest, closest_two_level};

/// Entries of a traversal stack. Core's BVHs (the instances' tree too) are
/// less than 64 levels deep and a node adds at most seven entries (it pops
/// one, pushes up to eight).
const STACK: usize = 8 * 64;

/// Eight children: boxes as structure-of-arrays (`rows` = min x, max x, min y,
/// max y, min z, max z, one lane per child), then references. 256 bytes, four
/// cache lines, aligned to them.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct Node8 {
    rows: [[f32; 8]; 6],
    /// Inner child: node index. Leaf: first packet or primitive slot; in the
    /// instances' tree, the instance.
    child: [u32; 8],
    /// 0 for an inner child (or an empty slot), else the leaf's primitive count
    /// (with [`crate::leaves::PACKET_LEAF`] for a packet leaf; 1 for an
    /// instance).
    meta: [u32; 8],
}

impl Node8 {
    /// Eight empty slots: boxes at +inf are never entered.
    const EMPTY: Node8 = Node8 {
        rows: [[f32::INFINITY; 8]; 6],
        child: [EMPTY_CHILD; 8],
        meta: [0; 8],
    };

    /// Slot `k` takes the box rows `lo`, `hi` (their `w` lanes ignored).
    #[inline]
    fn set_box(&mut self, k: usize, lo: &[f32; 4], hi: &[f32; 4]) {
        for axis in 0..3 {
            self.rows[2 * axis][k] = lo[axis];
            self.rows[2 * axis + 1][k] = hi[axis];
        }
    }
}

impl RefitNode for Node8 {
    const WIDTH: usize = 8;

    #[inline(always)]
    fn slot(&self, k: usize) -> (u32, u32) {
        (self.child[k], self.meta[k])
    }

    #[inline(always)]
    fn slot_box(&self, k: usize) -> Bounds {
        let r = &self.rows;
        Bounds {
            lo: Vec4::new(r[0][k], r[2][k], r[4][k], 0.0),
            hi: Vec4::new(r[1][k], r[3][k], r[5][k], 0.0),
        }
    }

    #[inline(always)]
    fn set_slot_box(&mut self, k: usize, b: &Bounds) {
        self.set_box(k, &b.lo.to_array(), &b.hi.to_array());
    }
}

/// One entry of a traversal stack: a child reference and its entry distance.
#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    child: u32,
    meta: u32,
    t: f32,
}

/// Traversal stacks (the instances' tree's and a geometry tree's), reused
/// across the rays of a batch (allocating them is not free).
pub struct Stack {
    /// The walk of a geometry's tree (a flat scene's one tree).
    e: [Entry; STACK],
    /// The walk of the instances' tree.
    top: [Entry; STACK],
}

impl Stack {
    /// An empty stack.
    pub fn new() -> Box<Self> {
        Box::new(Stack {
            e: [Entry::default(); STACK],
            top: [Entry::default(); STACK],
        })
    }
}

/// The 8-wide BVH of one [`Accel`] (every geometry's tree, and for a
/// two-level scene the instances' tree and records); exists only where the
/// CPU has AVX2.
#[derive(Clone, Debug)]
pub struct Bvh8 {
    /// Every geometry's tree, one after the other.
    nodes: Vec<Node8>,
    packets: Packets,
    /// Each geometry's root and ranges.
    spans: Vec<Span>,
    /// Each geometry's outline (two-level scenes), for its instances' boxes.
    outlines: Vec<Outline>,
    /// Whether the scene is two-level.
    two_level: bool,
    /// The instances' tree (empty for a flat scene): core's, collapsed, with
    /// each instance's box made from its geometry's outline (see
    /// [`Bvh8::collapse_top`]).
    top: Vec<Node8>,
    /// The instances' world-to-object columns ([`crate::instances`]).
    records: Vec<Columns>,
    /// Each instance's root (of its geometry's wide tree) and mask.
    roots: Vec<[u32; 2]>,
}

/// Whether this CPU runs [`Bvh8`]'s traversal.
pub fn available() -> bool {
    is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("bmi1")
        && is_x86_feature_detected!("popcnt")
}

impl Bvh8 {
    /// Collapse `accel`'s binary BVHs (each node opens its inner child of largest
    /// surface area until it holds eight), or `None` where the CPU lacks AVX2,
    /// BMI1 or POPCNT ([`available`]). Its arrays grow fallibly: where the host has
    /// not the memory, the error is [`Error::HostOutOfMemory`].
    pub fn build(accel: &Accel) -> Result<Option<Self>, Error> {
        if !available() {
            return Ok(None);
        }
        let bin = accel.nodes();
        let mut out = Bvh8 {
            nodes: Vec::new(),
            packets: Packets::default(),
            spans: Vec::new(),
            outlines: Vec::new(),
            two_level: accel.is_two_level(),
            top: Vec::new(),
            records: Vec::new(),
            roots: Vec::new(),
        };
        reserve(&mut out.nodes, bin.len() / 4 + 1, "8-wide BVH nodes")?;
        out.packets.reserve_for(bin)?;
        reserve(
            &mut out.spans,
            accel.geometry_count(),
            "8-wide BVH geometries",
        )?;
        let small = small_subtrees(bin)?;
        for g in 0..accel.geometry_count() as u32 {
            let (nodes, packets) = (out.nodes.len(), out.packets.len());
            let root = match accel.geometry_root(g) {
                Some(r) if (r as usize) < bin.len() => {
                    collapse(bin, &small, accel.primitives(), r, &mut out)?
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
            reserve(
                &mut out.outlines,
                accel.geometry_count(),
                "8-wide BVH geometries",
            )?;
            for g in 0..out.spans.len() {
                let outline = out.outline(g)?;
                out.outlines.push(outline);
            }
            out.collapse_top(accel)?;
            out.update_records(accel, 0..accel.instances().len())?;
        }
        Ok(Some(out))
    }

    /// Number of nodes (of the geometries' trees).
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
            tree: "CPU 8-wide (AVX2)",
            nodes: (size_of_val(self.nodes.as_slice()) + size_of_val(self.top.as_slice())) as u64,
            leaves: self.packets.bytes()
                + (size_of_val(self.records.as_slice()) + size_of_val(self.roots.as_slice()))
                    as u64,
        }
    }

    /// Collapse `accel`'s tree over the instances again (after a rebuild of
    /// it), into a new array (on an error the old tree is kept), and give
    /// each instance the box of its geometry's outline as placed
    /// ([`Outline::world_box`]; the inner boxes follow, bottom-up).
    ///
    /// The shape stays core's (its boxes pick which children a node takes),
    /// and a box never leaves out a hit core's walk finds (see
    /// [`crate::instances::OUTLINE_SLACK`]): the walk finds core's closest
    /// hit, only sooner.
    pub(crate) fn collapse_top(&mut self, accel: &Accel) -> Result<(), Error> {
        let bin = accel.top_nodes();
        let mut top = Vec::new();
        reserve(&mut top, bin.len() / 4 + 1, "8-wide instance tree")?;
        if !bin.is_empty() {
            collapse_top(bin, 0, &mut top)?;
        }
        let mut boxes: Vec<Bounds> = Vec::new();
        reserve(&mut boxes, top.len(), "8-wide instance tree")?;
        boxes.resize(top.len(), Bounds::EMPTY);
        // A node's children come after it.
        for (i, n) in top.iter_mut().enumerate().rev() {
            let mut all = Bounds::EMPTY;
            for k in 0..8 {
                let (child, meta) = (n.child[k], n.meta[k]);
                let b = if meta != 0 {
                    let placed = accel.instance(child).and_then(|inst| {
                        let outline = self.outlines.get(inst.geometry as usize)?;
                        outline.world_box(&inst.transform)
                    });
                    // ok: an instance without an outline (an empty geometry)
                    // or whose outline placed overflows keeps core's box.
                    placed.unwrap_or_else(|| n.slot_box(k))
                } else if let Some(b) = boxes.get(child as usize) {
                    *b
                } else {
                    continue;
                };
                n.set_slot_box(k, &b);
                all = all.union(b);
            }
            if let Some(b) = boxes.get_mut(i) {
                *b = all;
            }
        }
        self.top = top;
        Ok(())
    }

    /// The outline of geometry `g`'s tree: the boxes two levels below its
    /// root (a child's own where it is a leaf).
    fn outline(&self, g: usize) -> Result<Outline, Error> {
        let root = self
            .spans
            .get(g)
            .and_then(|s| self.nodes.get(s.root as usize));
        let mut boxes = Vec::new();
        let present = |n: &Node8, k: usize| n.child[k] != EMPTY_CHILD || n.meta[k] != 0;
        for (k, root) in root.into_iter().flat_map(|r| (0..8).map(move |k| (k, r))) {
            if !present(root, k) {
                continue;
            }
            match self.nodes.get(root.child[k] as usize) {
                Some(n) if root.meta[k] == 0 => {
                    for j in (0..8).filter(|&j| present(n, j)) {
                        reserve(&mut boxes, 1, "instance outlines")?;
                        boxes.push(n.slot_box(j));
                    }
                }
                _ => {
                    reserve(&mut boxes, 1, "instance outlines")?;
                    boxes.push(root.slot_box(k));
                }
            }
        }
        Outline::new(&boxes)
    }

    /// Write the records of `accel`'s instances `range` again.
    pub(crate) fn update_records(
        &mut self,
        accel: &Accel,
        range: core::ops::Range<usize>,
    ) -> Result<(), Error> {
        write_columns(
            accel,
            &self.spans,
            range,
            &mut self.records,
            &mut self.roots,
        )
    }

    /// The geometries' nodes, the packets and each geometry's span (for
    /// the refit's tests).
    #[cfg(test)]
    pub(crate) fn parts(&self) -> (&[Node8], &Packets, &[Span]) {
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
        )?;
        // The instances' boxes follow the outline when the instances' tree
        // is collapsed again (core rebuilds its own after new vertices).
        if self.two_level {
            let outline = self.outline(g as usize)?;
            if let Some(o) = self.outlines.get_mut(g as usize) {
                *o = outline;
            }
        }
        Ok(())
    }

    /// Closest hit; `Hit::prim` is the primitive id within its geometry,
    /// `Hit::instance` the instance (0 for a flat scene). `prims` and `hf`
    /// are the [`Accel`]'s the BVH was built from ([`Accel::primitives`],
    /// [`Accel::heightfield_set`]).
    pub fn intersect(
        &self,
        prims: &[Primitive],
        hf: Heightfields<'_>,
        ray: &Ray,
        stack: &mut Stack,
    ) -> Hit {
        let (mut hit, at) = self.closest_at(prims, hf, ray, stack);
        if hit.is_hit() {
            hit.prim = self.packets.id_of(&hit, at, prims);
        }
        hit
    }

    /// Closest hit; `Hit::prim` is the leaf slot (as [`Accel::intersect_slot`]).
    pub fn intersect_slot(
        &self,
        prims: &[Primitive],
        hf: Heightfields<'_>,
        ray: &Ray,
        stack: &mut Stack,
    ) -> Hit {
        self.closest_at(prims, hf, ray, stack).0
    }

    /// The root a flat scene's ray walks from, `None` where its mask hides
    /// the scene (the one implicit instance of mask `0xFF`).
    #[inline(always)]
    fn flat_root(&self, ray: &Ray) -> Option<u32> {
        let span = self.spans.first()?;
        (ray.mask & 0xFF != 0).then_some(span.root)
    }

    /// Closest hit with `Hit::prim` as the leaf slot, and where it came from
    /// (see [`NOT_IN_PACKET`]).
    fn closest_at(
        &self,
        prims: &[Primitive],
        hf: Heightfields<'_>,
        ray: &Ray,
        stack: &mut Stack,
    ) -> (Hit, usize) {
        if self.two_level {
            // SAFETY: a `Bvh8` exists only where `available()` found AVX2, BMI1
            // and POPCNT (`build` is its only constructor), the features the walk is
            // built for.
            return unsafe { closest_two_level(self, prims, hf, ray, stack) };
        }
        let Some(root) = self.flat_root(ray) else {
            return (Hit::MISS, NOT_IN_PACKET);
        };
        // SAFETY: as above, a `Bvh8` implies AVX2, BMI1 and POPCNT.
        unsafe { closest(self, prims, hf, ray, root, &mut stack.e, &mut ()) }
    }

    /// A flat scene's root and the largest side of its root box, the scale
    /// a [`Packet`]'s origins are measured against; `None` for a two-level
    /// scene or an empty tree (no packets).
    fn packet_root(&self) -> Option<(u32, f32)> {
        if self.two_level {
            return None;
        }
        let span = self.spans.first()?;
        let root = self.nodes.get(span.root as usize)?;
        let mut all = Bounds::EMPTY;
        for k in (0..8).filter(|&k| root.child[k] != EMPTY_CHILD || root.meta[k] != 0) {
            all = all.union(root.slot_box(k));
        }
        let side = all.hi - all.lo;
        let side = side.x.max(side.y).max(side.z);
        (side.is_finite() && side > 0.0).then_some((span.root, side))
    }

    /// Closest hits of `rays` into `out` (as many), each as [`Bvh8::intersect`]
    /// gives it: eight rays in a row that are coherent are walked together
    /// (flat scenes), the others one at a time. For rays on which packets
    /// pay ([`Bvh8::packets_pay`]).
    pub fn intersect_many(
        &self,
        prims: &[Primitive],
        hf: Heightfields<'_>,
        rays: &[Ray],
        out: &mut [Hit],
        stack: &mut Stack,
    ) {
        match self.packet_root() {
            // SAFETY: a `Bvh8` implies AVX2, BMI1 and POPCNT (see `closest_at`).
            Some(root) => unsafe { closest_many(self, prims, hf, root, rays, out, stack) },
            None => {
                for (ray, hit) in rays.iter().zip(out.iter_mut()) {
                    *hit = self.intersect(prims, hf, ray, stack);
                }
            }
        }
    }

    /// Whether coherent rays of `rays` are to be walked eight at a time by
    /// [`Bvh8::intersect_many`] (`closest_hits`) or [`Bvh8::occluded_many`]:
    /// a few of their packets walked both ways say which walk costs less
    /// (flat scenes; a batch of fewer than 512 rays is walked ray by ray).
    pub fn packets_pay(
        &self,
        prims: &[Primitive],
        hf: Heightfields<'_>,
        rays: &[Ray],
        closest_hits: bool,
    ) -> bool {
        match self.packet_root() {
            Some(root) if rays.len() >= 512 => {
                let mut stack = Stack::new();
                // SAFETY: a `Bvh8` implies AVX2, BMI1 and POPCNT (see `closest_at`).
                unsafe { packets_pay(self, prims, hf, root, rays, closest_hits, &mut stack) }
            }
            _ => false,
        }
    }

    /// Whether each of `rays` meets anything within its interval, into `out`
    /// (as many), as [`Bvh8::occluded`] gives it: coherent rays eight at a
    /// time, as in [`Bvh8::intersect_many`].
    pub fn occluded_many(
        &self,
        prims: &[Primitive],
        hf: Heightfields<'_>,
        rays: &[Ray],
        out: &mut [bool],
        stack: &mut Stack,
    ) {
        match self.packet_root() {
            // SAFETY: as in `intersect_many`.
            Some(root) => unsafe { any_many(self, prims, hf, root, rays, out, stack) },
            None => {
                for (ray, o) in rays.iter().zip(out.iter_mut()) {
                    *o = self.occluded(prims, hf, ray, stack);
                }
            }
        }
    }

    /// Whether anything the ray sees lies on it within `(tmin, tmax)`.
    pub fn occluded(
        &self,
        prims: &[Primitive],
        hf: Heightfields<'_>,
        ray: &Ray,
        stack: &mut Stack,
    ) -> bool {
        if self.two_level {
            // SAFETY: as in `closest_at`: a `Bvh8` implies AVX2, BMI1 and POPCNT.
            return unsafe { any_two_level(self, prims, hf, ray, stack) };
        }
        let Some(root) = self.flat_root(ray) else {
            return false;
        };
        // SAFETY: as in `closest_at`: a `Bvh8` implies AVX2, BMI1 and POPCNT.
        unsafe { any(self, prims, hf, ray, root, &mut stack.e, &mut ()) }
    }
}

/// A subtree of triangles with at most this many primitives becomes one leaf (up
/// to four packets, read one after the other: streaming through a leaf's packets is
/// cheaper than chasing the nodes above them, and 16 measured best against 4, 8, 24
/// and 32). Subtrees with spheres keep core's leaves: spheres are tested one at a
/// time, so a merged leaf would test up to 16 where core's tree tests one or two
/// (rtiow renders 1.3x slower merged, 1.1x with at most 4).
const MERGE: u32 = 16;

/// Each binary node's subtree as a slot range `(first, count)` when it holds at
/// most [`MERGE`] primitives (a subtree's slots are contiguous), else
/// [`LARGE_SUBTREE`]: worked out once for the whole array, bottom-up, so that
/// the collapse asks it of any child in constant time (asking it by walking
/// each child's subtree made the collapse a third of its time longer).
fn small_subtrees(bin: &[BvhNode]) -> Result<Vec<(u32, u32)>, Error> {
    let mut small: Vec<(u32, u32)> = Vec::new();
    reserve(&mut small, bin.len(), "8-wide BVH build: subtree sizes")?;
    small.resize(bin.len(), LARGE_SUBTREE);
    // A node's children come after it (core's builder numbers a node before
    // its subtrees, and a two-level scene's trees follow one another), so a
    // pass from the last node up sees every child before its parent; a child
    // that does not come after its parent counts as large.
    for node in (0..bin.len()).rev() {
        let mut range: Option<(u32, u32)> = None;
        let mut large = false;
        for c in children(bin, node as u32) {
            let (first, count) = if c.is_inner() {
                match small.get(c.index() as usize) {
                    Some(&r) if c.index() as usize > node && r != LARGE_SUBTREE => r,
                    _ => {
                        large = true;
                        break;
                    }
                }
            } else {
                (c.index(), c.count())
            };
            range = Some(match range {
                None => (first, count),
                Some((f, n)) => (f.min(first), n.saturating_add(count)),
            });
        }
        if let (false, Some(r)) = (large, range)
            && r.1 <= MERGE
            && let Some(entry) = small.get_mut(node)
        {
            *entry = r;
        }
    }
    Ok(small)
}

/// [`small_subtrees`]' entry of a subtree of more than [`MERGE`] primitives.
const LARGE_SUBTREE: (u32, u32) = (u32::MAX, u32::MAX);

/// The slot range `(first, count)` of the subtree under binary child `c` when
/// it holds at most [`MERGE`] primitives, from [`small_subtrees`]' table.
#[inline]
fn small_subtree(small: &[(u32, u32)], c: &Child) -> Option<(u32, u32)> {
    if !c.is_inner() {
        return (c.index() != EMPTY_CHILD && c.count() <= MERGE).then(|| (c.index(), c.count()));
    }
    small
        .get(c.index() as usize)
        .copied()
        .filter(|&r| r != LARGE_SUBTREE)
}

/// Append the node for binary node `node` (and its subtree); returns its index.
/// `small_table` is [`small_subtrees`] of `bin`.
fn collapse(
    bin: &[BvhNode],
    small_table: &[(u32, u32)],
    prims: &[Primitive],
    node: u32,
    out: &mut Bvh8,
) -> Result<u32, Error> {
    // Each child with the slot range it becomes a leaf of, if it is a small subtree.
    let small = |c: &Child| {
        small_subtree(small_table, c)
            .filter(|&(first, count)| c.is_inner() && all_triangles(prims, first, count))
    };
    let (kids, _) = gather::<8, _>(bin, node, small, Option::is_some);
    let me = out.nodes.len();
    reserve(&mut out.nodes, 1, "8-wide BVH nodes")?;
    out.nodes.push(Node8::EMPTY);
    let mut w = Node8::EMPTY;
    for (k, (c, merged)) in kids
        .iter()
        .enumerate()
        .filter_map(|(k, c)| Some((k, (*c)?)))
    {
        w.set_box(k, &c.lo, &c.hi);
        if let Some((first, count)) = merged {
            (w.child[k], w.meta[k]) = leaf(prims, first, count, &mut out.packets)?;
        } else if c.is_inner() {
            w.child[k] = collapse(bin, small_table, prims, c.index(), out)?;
            w.meta[k] = 0;
        } else {
            (w.child[k], w.meta[k]) = leaf(prims, c.index(), c.count(), &mut out.packets)?;
        }
    }
    if let Some(n) = out.nodes.get_mut(me) {
        *n = w;
    }
    Ok(me as u32)
}

/// Append the node for node `node` of the instances' binary tree `bin` (and
/// its subtree) to `out`; its leaves are instances (meta 1).
fn collapse_top(bin: &[BvhNode], node: u32, out: &mut Vec<Node8>) -> Result<u32, Error> {
    let (kids, _) = gather::<8, ()>(bin, node, |_| (), |_| false);
    let me = out.len();
    reserve(out, 1, "8-wide instance tree")?;
    out.push(Node8::EMPTY);
    let mut w = Node8::EMPTY;
    for (k, c) in kids
        .iter()
        .enumerate()
        .filter_map(|(k, c)| Some((k, (*c)?.0)))
    {
        w.set_box(k, &c.lo, &c.hi);
        (w.child[k], w.meta[k]) = if c.is_inner() {
            (collapse_top(bin, c.index(), out)?, 0)
        } else {
            (c.index(), 1)
        };
    }
    if let Some(n) = out.get_mut(me) {
        *n = w;
    }
    Ok(me as u32)
}
