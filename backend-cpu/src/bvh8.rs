//! An 8-wide BVH for x86-64 CPUs with AVX2, chosen at run time.
//!
//! Core's binary BVH collapsed so that one node holds up to eight children: the
//! eight boxes as structure-of-arrays, one 256-bit register per bound, tested
//! together with AVX2 (half the node fetches of the 4-wide BVH of
//! [`crate::wide`], which stays the path for CPUs without AVX2). Leaves and
//! their triangle packets are [`crate::wide`]'s.
//!
//! The arithmetic is core's: the slab test in Ize's form `(bound - origin) *
//! inv_dir` with the same exit widening, and the same watertight triangle test
//! per lane (no fused multiply-add anywhere: only AVX2 is enabled, and Rust never
//! contracts). Picking the near plane of each axis from the sign of `inv_dir`
//! equals core's `min(t0, t1)` exactly, as rounding is monotonic. So the answers
//! are core's: identical `t`, `u`, `v` and primitive, except where two primitives
//! tie at exactly the same `t`.

use crate::wide::{
    Child, Lanes, NOT_IN_PACKET, PACKET_LEAF, Packets, all_triangles, children, dispatch_axes,
    leaf, leaf_closest, packet_hit, packet_lane, prim_hit, reserve,
};
use core::arch::x86_64::*;
use prism_core::gpu::{BvhNode, EMPTY_CHILD, Primitive};
use prism_core::intersect::{RayPre, SLAB_EXIT_SCALE, SLAB_EXIT_SCALE_NEGATIVE};
use prism_core::{Accel, Error, Hit, Ray};

/// Entries of the traversal stack. Core's BVH is less than 64 levels deep and a
/// node adds at most seven entries (it pops one, pushes up to eight).
const STACK: usize = 8 * 64;

/// Eight children: boxes as structure-of-arrays (`rows` = min x, max x, min y,
/// max y, min z, max z, one lane per child), then references. 256 bytes, four
/// cache lines, aligned to them.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct Node8 {
    rows: [[f32; 8]; 6],
    /// Inner child: node index. Leaf: first packet or primitive slot.
    child: [u32; 8],
    /// 0 for an inner child (or an empty slot), else the leaf's primitive count
    /// (with [`PACKET_LEAF`] for a packet leaf).
    meta: [u32; 8],
}

impl Node8 {
    /// Eight empty slots: boxes at +inf are never entered.
    const EMPTY: Node8 = Node8 {
        rows: [[f32::INFINITY; 8]; 6],
        child: [EMPTY_CHILD; 8],
        meta: [0; 8],
    };
}

/// One entry of the traversal stack: a child reference and its entry distance.
#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    child: u32,
    meta: u32,
    t: f32,
}

/// Traversal stack, reused across the rays of a batch (allocating it is not free).
pub struct Stack {
    e: [Entry; STACK],
}

impl Stack {
    /// An empty stack.
    pub fn new() -> Box<Self> {
        Box::new(Stack {
            e: [Entry::default(); STACK],
        })
    }
}

/// The 8-wide BVH of one [`Accel`]; exists only where the CPU has AVX2.
#[derive(Clone, Debug)]
pub struct Bvh8 {
    nodes: Vec<Node8>,
    packets: Packets,
}

/// Whether this CPU runs [`Bvh8`]'s traversal.
pub fn available() -> bool {
    is_x86_feature_detected!("avx2") && is_x86_feature_detected!("bmi1")
}

impl Bvh8 {
    /// Collapse `accel`'s binary BVH (each node opens its inner child of largest
    /// surface area until it holds eight), or `None` where the CPU lacks AVX2
    /// or BMI1 ([`available`]). Its arrays grow fallibly: where the host has
    /// not the memory, the error is [`Error::HostOutOfMemory`].
    pub fn build(accel: &Accel) -> Result<Option<Self>, Error> {
        if !available() {
            return Ok(None);
        }
        let bin = accel.nodes();
        let mut out = Bvh8 {
            nodes: Vec::new(),
            packets: Packets::default(),
        };
        reserve(&mut out.nodes, bin.len() / 4 + 1, "8-wide BVH nodes")?;
        if let Some(root) = bin.first() {
            collapse(bin, accel.primitives(), root, &mut out)?;
        }
        Ok(Some(out))
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are no nodes (never, for a built scene).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Closest hit; `Hit::prim` is the scene primitive id.
    pub fn intersect(&self, prims: &[Primitive], ray: &Ray, stack: &mut Stack) -> Hit {
        let (mut hit, at) = self.closest_at(prims, ray, stack);
        if hit.is_hit() {
            hit.prim = self.packets.id_of(&hit, at, prims);
        }
        hit
    }

    /// Closest hit; `Hit::prim` is the leaf slot (as [`Accel::intersect_slot`]).
    pub fn intersect_slot(&self, prims: &[Primitive], ray: &Ray, stack: &mut Stack) -> Hit {
        self.closest_at(prims, ray, stack).0
    }

    /// Closest hit with `Hit::prim` as the leaf slot, and where it came from
    /// (see [`NOT_IN_PACKET`]).
    fn closest_at(&self, prims: &[Primitive], ray: &Ray, stack: &mut Stack) -> (Hit, usize) {
        let pre = RayPre::new(ray);
        // SAFETY: a `Bvh8` exists only where `available()` found AVX2 and BMI1
        // (`build` is its only constructor), the features `closest` is built for.
        unsafe { dispatch_axes!(pre, closest, self, prims, ray, &pre, stack) }
    }

    /// Whether anything lies on the ray within `(tmin, tmax)`.
    pub fn occluded(&self, prims: &[Primitive], ray: &Ray, stack: &mut Stack) -> bool {
        let pre = RayPre::new(ray);
        // SAFETY: as in `intersect_slot`: a `Bvh8` implies AVX2 and BMI1.
        unsafe { dispatch_axes!(pre, any, self, prims, ray, &pre, stack) }
    }
}

/// A subtree of triangles with at most this many primitives becomes one leaf (up
/// to four packets, read one after the other: streaming through a leaf's packets is
/// cheaper than chasing the nodes above them, and 16 measured best against 4, 8, 24
/// and 32). Subtrees with spheres keep core's leaves: spheres are tested one at a
/// time, so a merged leaf would test up to 16 where core's tree tests one or two
/// (rtiow renders 1.3x slower merged, 1.1x with at most 4).
const MERGE: u32 = 16;

/// The slot range `(first, count)` of the subtree under binary child `c` when it
/// holds at most [`MERGE`] primitives (a subtree's slots are contiguous).
fn small_subtree(bin: &[BvhNode], c: &Child, depth: u32) -> Option<(u32, u32)> {
    if !c.is_inner() {
        return (c.index() != EMPTY_CHILD && c.count() <= MERGE).then(|| (c.index(), c.count()));
    }
    let n = bin.get(c.index() as usize).filter(|_| depth < MERGE)?;
    let mut range: Option<(u32, u32)> = None;
    for k in children(n).iter().filter(|k| k.index() != EMPTY_CHILD) {
        let (first, count) = small_subtree(bin, k, depth + 1)?;
        range = Some(match range {
            None => (first, count),
            Some((f, n)) => (f.min(first), n + count),
        });
        if range.is_some_and(|(_, n)| n > MERGE) {
            return None;
        }
    }
    range
}

/// Append the node for binary node `node` (and its subtree); returns its index.
fn collapse(
    bin: &[BvhNode],
    prims: &[Primitive],
    node: &BvhNode,
    out: &mut Bvh8,
) -> Result<u32, Error> {
    // Each child with the slot range it becomes a leaf of, if it is a small subtree.
    let small = |c: &Child| {
        small_subtree(bin, c, 0)
            .filter(|&(first, count)| c.is_inner() && all_triangles(prims, first, count))
    };
    let mut kids: Vec<(Child, Option<(u32, u32)>)> = children(node)
        .into_iter()
        .filter(|c| c.index() != EMPTY_CHILD)
        .map(|c| (c, small(&c)))
        .collect();
    while kids.len() < 8 {
        let open = kids
            .iter()
            .enumerate()
            .filter(|(_, (c, merged))| c.is_inner() && merged.is_none())
            .max_by(|a, b| a.1.0.half_area().total_cmp(&b.1.0.half_area()))
            .map(|(i, _)| i);
        let Some(i) = open else { break };
        let Some(inner) = bin.get(kids[i].0.index() as usize) else {
            break;
        };
        kids.swap_remove(i);
        kids.extend(
            children(inner)
                .into_iter()
                .filter(|c| c.index() != EMPTY_CHILD)
                .map(|c| (c, small(&c))),
        );
    }
    let me = out.nodes.len();
    reserve(&mut out.nodes, 1, "8-wide BVH nodes")?;
    out.nodes.push(Node8::EMPTY);
    let mut w = Node8::EMPTY;
    for (k, (c, merged)) in kids.iter().enumerate().take(8) {
        for axis in 0..3 {
            w.rows[2 * axis][k] = c.lo[axis];
            w.rows[2 * axis + 1][k] = c.hi[axis];
        }
        if let Some((first, count)) = *merged {
            (w.child[k], w.meta[k]) = leaf(prims, first, count, &mut out.packets)?;
        } else if c.is_inner() {
            w.child[k] = match bin.get(c.index() as usize) {
                Some(n) => collapse(bin, prims, n, out)?,
                None => EMPTY_CHILD,
            };
            w.meta[k] = 0;
        } else {
            (w.child[k], w.meta[k]) = leaf(prims, c.index(), c.count(), &mut out.packets)?;
        }
    }
    if let Some(slot) = out.nodes.get_mut(me) {
        *slot = w;
    }
    Ok(me as u32)
}

/// The ray's slab-test constants in 256-bit registers, and which row of a node
/// holds each axis's near and far plane.
struct Ray8 {
    o: [__m256; 3],
    inv: [__m256; 3],
    tmin: __m256,
    /// Row of the near plane per axis (the far plane is the other row of the pair).
    near: [usize; 3],
}

impl Ray8 {
    #[target_feature(enable = "avx2")]
    fn new(pre: &RayPre, tmin: f32) -> Self {
        let near = |inv: f32| usize::from(inv < 0.0);
        Ray8 {
            o: [
                _mm256_set1_ps(pre.origin.x),
                _mm256_set1_ps(pre.origin.y),
                _mm256_set1_ps(pre.origin.z),
            ],
            inv: [
                _mm256_set1_ps(pre.inv_dir.x),
                _mm256_set1_ps(pre.inv_dir.y),
                _mm256_set1_ps(pre.inv_dir.z),
            ],
            tmin: _mm256_set1_ps(tmin),
            near: [
                near(pre.inv_dir.x),
                2 + near(pre.inv_dir.y),
                4 + near(pre.inv_dir.z),
            ],
        }
    }

    /// Core's slab test ([`prism_core::intersect::ray_aabb`]) on a node's eight
    /// boxes: entry distances, and the mask of boxes entered within `(tmin, tmax)`.
    #[target_feature(enable = "avx2")]
    fn boxes(&self, n: &Node8, tmax: f32) -> ([f32; 8], u32) {
        let slab = |axis: usize, row: usize| -> __m256 {
            // ok: `row` is `near[axis]` or its pair, both below 6.
            let bound: __m256 = bytemuck::cast(n.rows[row]);
            _mm256_mul_ps(_mm256_sub_ps(bound, self.o[axis]), self.inv[axis])
        };
        let (nx, ny, nz) = (self.near[0], self.near[1], self.near[2]);
        let near = _mm256_max_ps(
            _mm256_max_ps(slab(0, nx), slab(1, ny)),
            _mm256_max_ps(slab(2, nz), self.tmin),
        );
        let far = _mm256_min_ps(
            _mm256_min_ps(slab(0, nx ^ 1), slab(1, ny ^ 1)),
            _mm256_min_ps(slab(2, nz ^ 1), _mm256_set1_ps(tmax)),
        );
        // Core's `widen_exit`. The sign bit picks the factor: -0.0 (not < 0 in
        // core) gets the negative one, and -0.0 times either factor is -0.0.
        let scale = _mm256_blendv_ps(
            _mm256_set1_ps(SLAB_EXIT_SCALE),
            _mm256_set1_ps(SLAB_EXIT_SCALE_NEGATIVE),
            far,
        );
        let far = _mm256_mul_ps(far, scale);
        let mask = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(near, far)) as u32;
        (bytemuck::cast(near), mask)
    }
}

/// Start fetching a child that waits on the stack: its node or its first packet.
#[target_feature(enable = "avx2")]
#[inline]
fn prefetch(bvh: &Bvh8, child: u32, meta: u32) {
    let p: *const i8 = if meta == 0 {
        bvh.nodes.as_ptr().wrapping_add(child as usize).cast()
    } else if meta & PACKET_LEAF != 0 {
        bvh.packets.tri.as_ptr().wrapping_add(child as usize).cast()
    } else {
        return;
    };
    for line in 0..4 {
        _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64 * line));
    }
}

/// Closest hit (leaf slot) for one axis permutation, and where it came from
/// (see [`NOT_IN_PACKET`]).
#[target_feature(enable = "avx2,bmi1")]
fn closest<const KX: usize, const KY: usize, const KZ: usize>(
    bvh: &Bvh8,
    prims: &[Primitive],
    ray: &Ray,
    pre: &RayPre,
    stack: &mut Stack,
) -> (Hit, usize) {
    let r = Ray8::new(pre, ray.tmin);
    let lanes = Lanes::new(pre);
    let tmin = ray.tmin;
    let mut best = Hit::new(ray.tmax, 0.0, 0.0, Hit::NO_PRIM, Hit::NO_INSTANCE);
    let mut best_at = NOT_IN_PACKET;
    let st = &mut stack.e;
    let mut sp = 0usize;
    let (mut child, mut meta) = (0u32, 0u32);
    loop {
        if meta == 0 {
            if let Some(n) = bvh.nodes.get(child as usize) {
                let (t, mask) = r.boxes(n, best.t);
                if mask != 0 {
                    let mut m = mask;
                    let i = m.trailing_zeros() as usize & 7;
                    m &= m - 1;
                    if m == 0 {
                        (child, meta) = (n.child[i], n.meta[i]);
                        continue;
                    }
                    let j = m.trailing_zeros() as usize & 7;
                    m &= m - 1;
                    if m == 0 && sp < STACK {
                        // Two children: the farther onto the stack (the lower slot wins a tie).
                        let (near, far) = if t[j] < t[i] { (j, i) } else { (i, j) };
                        st[sp] = Entry {
                            child: n.child[far],
                            meta: n.meta[far],
                            t: t[far],
                        };
                        prefetch(bvh, n.child[far], n.meta[far]);
                        sp += 1;
                        (child, meta) = (n.child[near], n.meta[near]);
                        continue;
                    }
                    if sp + 8 <= STACK {
                        // Three or more: push all, sort them far to near (insertion
                        // sort, stable: lower slots stay nearer on ties), pop the nearest.
                        let base = sp;
                        let mut m = mask;
                        while m != 0 {
                            let k = m.trailing_zeros() as usize & 7;
                            m &= m - 1;
                            let e = Entry {
                                child: n.child[k],
                                meta: n.meta[k],
                                t: t[k],
                            };
                            prefetch(bvh, e.child, e.meta);
                            let mut p = sp;
                            while p > base && st[p - 1].t <= e.t {
                                st[p] = st[p - 1];
                                p -= 1;
                            }
                            st[p] = e;
                            sp += 1;
                        }
                        sp -= 1;
                        (child, meta) = (st[sp].child, st[sp].meta);
                        continue;
                    }
                }
            }
        } else if meta & PACKET_LEAF != 0 {
            let leaf = bvh.packets.leaf(child, meta & !PACKET_LEAF);
            for (i, p) in leaf.iter().enumerate() {
                if let Some((lane, t, u, v)) = packet_hit::<KX, KY, KZ>(&lanes, p, tmin, best.t) {
                    best = Hit::new(t, u, v, p.slot[lane], 0);
                    best_at = packet_lane(child + i as u32, lane);
                }
            }
        } else {
            let before = best.prim;
            leaf_closest::<KX, KY, KZ>(pre, prims, child, meta, tmin, &mut best);
            if best.prim != before {
                best_at = NOT_IN_PACKET;
            }
        }
        // Pop the nearest entry still in front of the best hit.
        loop {
            if sp == 0 {
                return if best.is_hit() {
                    (best, best_at)
                } else {
                    (Hit::MISS, NOT_IN_PACKET)
                };
            }
            sp -= 1;
            let e = st[sp];
            if e.t < best.t {
                (child, meta) = (e.child, e.meta);
                break;
            }
        }
    }
}

/// Any hit for one axis permutation.
#[target_feature(enable = "avx2,bmi1")]
fn any<const KX: usize, const KY: usize, const KZ: usize>(
    bvh: &Bvh8,
    prims: &[Primitive],
    ray: &Ray,
    pre: &RayPre,
    stack: &mut Stack,
) -> bool {
    let r = Ray8::new(pre, ray.tmin);
    let lanes = Lanes::new(pre);
    let (tmin, tmax) = (ray.tmin, ray.tmax);
    let st = &mut stack.e;
    let mut sp = 0usize;
    let (mut child, mut meta) = (0u32, 0u32);
    loop {
        if meta == 0 {
            if let Some(n) = bvh.nodes.get(child as usize) {
                let (t, mask) = r.boxes(n, tmax);
                if mask != 0 && sp + 8 <= STACK {
                    // Nearest child next, the others onto the stack.
                    let mut m = mask;
                    let mut near = m.trailing_zeros() as usize & 7;
                    m &= m - 1;
                    while m != 0 {
                        let k = m.trailing_zeros() as usize & 7;
                        m &= m - 1;
                        let push = if t[k] < t[near] {
                            core::mem::replace(&mut near, k)
                        } else {
                            k
                        };
                        st[sp] = Entry {
                            child: n.child[push],
                            meta: n.meta[push],
                            t: 0.0,
                        };
                        prefetch(bvh, n.child[push], n.meta[push]);
                        sp += 1;
                    }
                    (child, meta) = (n.child[near], n.meta[near]);
                    continue;
                }
            }
        } else if meta & PACKET_LEAF != 0 {
            if bvh
                .packets
                .leaf(child, meta & !PACKET_LEAF)
                .iter()
                .any(|p| packet_hit::<KX, KY, KZ>(&lanes, p, tmin, tmax).is_some())
            {
                return true;
            }
        } else if let Some(leaf) = prims.get(child as usize..child as usize + meta as usize)
            && leaf
                .iter()
                .any(|p| prim_hit::<KX, KY, KZ>(pre, p, tmin, tmax).is_some())
        {
            return true;
        }
        if sp == 0 {
            return false;
        }
        sp -= 1;
        (child, meta) = (st[sp].child, st[sp].meta);
    }
}
