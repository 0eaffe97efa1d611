//! The 8-wide walks (AVX2): closest hit and any hit over one geometry's tree,
//! and over both levels of a two-level scene.

use super::work::Tally;
use super::{Bvh8, Entry, Node8, STACK, Stack};
use crate::leaves::{
    NOT_IN_PACKET, PACKET_LEAF, TriPacket, inv_dir, leaf_closest_axes, packet_lane, ray_pre_with,
};
use core::arch::x86_64::*;
use glam::{Vec3, Vec3A, Vec4};
use prism_core::gpu::{KIND_HEIGHTFIELD, Primitive};
use prism_core::heightfield::Heightfields;
use prism_core::intersect::{RayPre, SLAB_EXIT_SCALE, SLAB_EXIT_SCALE_NEGATIVE};
use prism_core::traverse::ray_primitive;
use prism_core::{Hit, Ray};

/// The watertight test of packets `p` (lanes 0-3) and `q` (lanes 4-7) with
/// the ray's axes read at run time (`l`, a [`Lanes8`]): per lane the
/// operations of the 4-wide `crate::leaves::packet_hit` (and so of core's
/// `ray_triangle_axes`), in the same order, so `t`, `u` and `v` are core's
/// bit for bit. Gives the mask of the lanes hit in `(tmin, tmax)` and each
/// lane's `t`, `u` and `v`. A macro, so that it is always inlined into the
/// AVX2 walks (a function with a target feature of its own is inlined only
/// as the compiler sees fit, and it did not: the call cost the walk more
/// than the pairing saved).
macro_rules! pair_test {
    ($l:expr, $p:expr, $q:expr, $tmin:expr, $tmax:expr) => {{
        let l: &Lanes8 = $l;
        let (p, q): (&TriPacket, &TriPacket) = ($p, $q);
        let [kx, ky, kz] = l.axes;
        let (pr, qr) = (p.rows(), q.rows());
        // Vertex `j`'s coordinate on axis `k` over the eight lanes, less the
        // origin's. ok: `Lanes8::new` keeps every axis below 3.
        let rel = |j: usize, k: usize| {
            let v = _mm256_set_m128(__m128::from(qr[j][k]), __m128::from(pr[j][k]));
            _mm256_sub_ps(v, l.o[k])
        };
        let (a, b, c) = (
            [rel(0, kx), rel(0, ky), rel(0, kz)],
            [rel(1, kx), rel(1, ky), rel(1, kz)],
            [rel(2, kx), rel(2, ky), rel(2, kz)],
        );
        let (hit, t, u, v) = watertight8!(
            false,
            a,
            b,
            c,
            [l.sx, l.sy, l.sz],
            _mm256_set1_ps($tmin),
            _mm256_set1_ps($tmax)
        )
        .unwrap_or_else(|| {
            (
                _mm256_setzero_ps(),
                _mm256_setzero_ps(),
                _mm256_setzero_ps(),
                _mm256_setzero_ps(),
            )
        });
        (_mm256_movemask_ps(hit) as u32, t, u, v)
    }};
}

/// `pair_test!`'s nearest hit in `(tmin, tmax)`: `Option<(lane, t, u, v)>`,
/// the lowest lane on equal `t` (lanes 0-3 are `p`'s: the order in which
/// testing `p` and then `q` one lane at a time keeps its best). A macro, as
/// `pair_test!` is: as a function the compiler kept it out of line, and the
/// call reloaded the ray's eight-lane constants each time.
macro_rules! pair_hit {
    ($l:expr, $p:expr, $q:expr, $tmin:expr, $tmax:expr) => {{
        let (mask, t, u, v) = pair_test!($l, $p, $q, $tmin, $tmax);
        if mask == 0 {
            None
        } else {
            let ts: [f32; 8] = bytemuck::cast(t);
            let mut best = mask.trailing_zeros() as usize & 7;
            let mut m = mask & (mask - 1);
            while m != 0 {
                let lane = m.trailing_zeros() as usize & 7;
                m &= m - 1;
                if ts[lane] < ts[best] {
                    best = lane;
                }
            }
            let (us, vs): ([f32; 8], [f32; 8]) = (bytemuck::cast(u), bytemuck::cast(v));
            Some((best, ts[best], us[best], vs[best]))
        }
    }};
}

/// The ray's slab-test constants in 256-bit registers, and which row of a node
/// holds each axis's near and far plane.
pub(super) struct Ray8 {
    o: [__m256; 3],
    inv: [__m256; 3],
    tmin: __m256,
    /// Row of the near plane per axis (the far plane is the other row of the pair).
    near: [usize; 3],
}

impl Ray8 {
    /// The constants of a ray from `origin` with inverse direction `inv_dir`
    /// ([`RayPre::inv_dir`]) over `(tmin, ..)`.
    #[target_feature(enable = "avx2")]
    pub(super) fn new(origin: Vec3, inv_dir: Vec3A, tmin: f32) -> Self {
        let near = |inv: f32| usize::from(inv < 0.0);
        Ray8 {
            o: [
                _mm256_set1_ps(origin.x),
                _mm256_set1_ps(origin.y),
                _mm256_set1_ps(origin.z),
            ],
            inv: [
                _mm256_set1_ps(inv_dir.x),
                _mm256_set1_ps(inv_dir.y),
                _mm256_set1_ps(inv_dir.z),
            ],
            tmin: _mm256_set1_ps(tmin),
            near: [near(inv_dir.x), 2 + near(inv_dir.y), 4 + near(inv_dir.z)],
        }
    }

    /// Core's slab test ([`prism_core::intersect::ray_aabb`]) on a node's eight
    /// boxes: entry distances, and the mask of boxes entered within `(tmin, tmax)`.
    #[target_feature(enable = "avx2")]
    pub(super) fn boxes(&self, n: &Node8, tmax: f32) -> ([f32; 8], u32) {
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
pub(super) fn prefetch(bvh: &Bvh8, child: u32, meta: u32) {
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

/// Closest hit (leaf slot) in the geometry tree at `root`, and where it came
/// from (see [`NOT_IN_PACKET`]). The triangle tests read the ray's axis order
/// at run time (one walk for every order: entering an instance needs no
/// dispatch to a copy for its object ray's order).
///
/// The root is tested first with the ray's origin and inverse direction
/// alone: many rays that enter an instance's box meet none of its root's
/// children (one in two on bunny-x1000, boxed by outlines), and those need
/// nothing more of the ray (its axis order and shear, its packet constants).
#[target_feature(enable = "avx2,bmi1,popcnt")]
pub(super) fn closest<T: Tally>(
    bvh: &Bvh8,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    ray: &Ray,
    root: u32,
    st: &mut [Entry; STACK],
    tally: &mut T,
) -> (Hit, usize) {
    const MISS: (Hit, usize) = (Hit::MISS, NOT_IN_PACKET);
    let inv = inv_dir(ray);
    let r = Ray8::new(ray.origin, inv, ray.tmin);
    let Some(n) = bvh.nodes.get(root as usize) else {
        return MISS;
    };
    tally.node();
    let (t, mask) = r.boxes(n, ray.tmax);
    let mut sp = 0usize;
    let far = |e: &Entry| prefetch(bvh, e.child, e.meta);
    let Some((mut child, mut meta)) = descend(n, &t, mask, st, &mut sp, far) else {
        return MISS;
    };
    let pre = ray_pre_with(ray, inv);
    let lanes = Lanes8::new(&pre);
    let tmin = ray.tmin;
    let mut best = Hit::new(ray.tmax, 0.0, 0.0, Hit::NO_PRIM, Hit::NO_INSTANCE);
    let mut best_at = NOT_IN_PACKET;
    loop {
        if meta == 0 {
            if let Some(n) = bvh.nodes.get(child as usize) {
                tally.node();
                let (t, mask) = r.boxes(n, best.t);
                if let Some(next) = descend(n, &t, mask, st, &mut sp, far) {
                    (child, meta) = next;
                    continue;
                }
            }
        } else if meta & PACKET_LEAF != 0 {
            let leaf = bvh.packets.leaf(child, meta & !PACKET_LEAF);
            // Two packets a test (the last one twice for an odd count).
            tally.tests(leaf.len().div_ceil(2) as u32);
            for (i, pair) in leaf.chunks(2).enumerate() {
                let (p, q) = (&pair[0], pair.last().unwrap_or(&pair[0]));
                if let Some((lane, t, u, v)) = pair_hit!(&lanes, p, q, tmin, best.t) {
                    // (A lone packet's copy never wins: it ties its first lanes.)
                    let second = lane >= 4 && pair.len() == 2;
                    let (packet, lane) = if second { (q, lane - 4) } else { (p, lane & 3) };
                    best = Hit::new(t, u, v, packet.slot[lane], 0);
                    best_at = packet_lane(child + (2 * i + usize::from(second)) as u32, lane);
                }
            }
        } else {
            let before = best.prim;
            tally.tests(meta);
            leaf_closest_axes(&pre, prims, hf, child, meta, tmin, &mut best);
            if best.prim != before {
                best_at = NOT_IN_PACKET;
            }
        }
        // Pop the nearest entry still in front of the best hit.
        loop {
            if sp == 0 {
                return if best.is_hit() { (best, best_at) } else { MISS };
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

/// Any hit in the geometry tree at `root` (axis order read at run time, and
/// the root tested first, as in [`closest`]).
#[target_feature(enable = "avx2,bmi1")]
pub(super) fn any<T: Tally>(
    bvh: &Bvh8,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    ray: &Ray,
    root: u32,
    st: &mut [Entry; STACK],
    tally: &mut T,
) -> bool {
    let inv = inv_dir(ray);
    let r = Ray8::new(ray.origin, inv, ray.tmin);
    let (tmin, tmax) = (ray.tmin, ray.tmax);
    let Some(n) = bvh.nodes.get(root as usize) else {
        return false;
    };
    tally.node();
    let (t, mask) = r.boxes(n, tmax);
    let mut sp = 0usize;
    let far = |e: &Entry| prefetch(bvh, e.child, e.meta);
    let Some((mut child, mut meta)) = nearest_first(n, &t, mask, st, &mut sp, far) else {
        return false;
    };
    let pre = ray_pre_with(ray, inv);
    let lanes = Lanes8::new(&pre);
    loop {
        if meta == 0 {
            if let Some(n) = bvh.nodes.get(child as usize) {
                tally.node();
                let (t, mask) = r.boxes(n, tmax);
                if let Some(next) = nearest_first(n, &t, mask, st, &mut sp, far) {
                    (child, meta) = next;
                    continue;
                }
            }
        } else if meta & PACKET_LEAF != 0 {
            if bvh
                .packets
                .leaf(child, meta & !PACKET_LEAF)
                .chunks(2)
                .any(|pair| {
                    tally.tests(1);
                    let (p, q) = (&pair[0], pair.last().unwrap_or(&pair[0]));
                    // `pair_test!` inline (see `pair_hit!`).
                    pair_test!(&lanes, p, q, tmin, tmax).0 != 0
                })
            {
                return true;
            }
        } else if let Some(leaf) = prims.get(child as usize..child as usize + meta as usize)
            && leaf.iter().any(|p| {
                if p.kind() == KIND_HEIGHTFIELD {
                    hf.hit(&pre, p, tmin, tmax).is_some()
                } else {
                    ray_primitive(&pre, p, tmin, tmax).is_some()
                }
            })
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

/// The any-hit order of node `n`'s children entered at distances `t`
/// (`mask`): the nearest is returned, to be visited next, and the others
/// pushed in slot order, each handed to `pushed` (to prefetch it). `None` when none was entered or the
/// stack has not the room. Inlined as [`descend`] is.
#[inline(always)]
pub(super) fn nearest_first(
    n: &Node8,
    t: &[f32; 8],
    mask: u32,
    st: &mut [Entry; STACK],
    sp: &mut usize,
    pushed: impl Fn(&Entry),
) -> Option<(u32, u32)> {
    if mask == 0 || *sp + 8 > STACK {
        return None;
    }
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
        let e = Entry {
            child: n.child[push],
            meta: n.meta[push],
            t: 0.0,
        };
        pushed(&e);
        st[*sp] = e;
        *sp += 1;
    }
    Some((n.child[near], n.meta[near]))
}

/// Closest hit over both levels (`Hit::prim` the leaf slot, `Hit::instance`
/// the instance), and where it came from (see [`NOT_IN_PACKET`]).
///
/// The instances' tree is walked as a geometry's tree is, nearest child
/// first; an instance is entered, when the ray's mask shares a bit with its
/// own, by core's `object_ray` (its columns' copy of it) with the closest hit
/// so far as `tmax`.
#[target_feature(enable = "avx2,bmi1,popcnt")]
pub(super) fn closest_two_level(
    bvh: &Bvh8,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    ray: &Ray,
    stack: &mut Stack,
) -> (Hit, usize) {
    let r = Ray8::new(ray.origin, inv_dir(ray), ray.tmin);
    let mut best = Hit::new(ray.tmax, 0.0, 0.0, Hit::NO_PRIM, Hit::NO_INSTANCE);
    let mut best_at = NOT_IN_PACKET;
    let Stack { e: inner, top: st } = stack;
    let mut sp = 0usize;
    let (mut child, mut meta) = (0u32, 0u32);
    if bvh.top.is_empty() {
        return (Hit::MISS, NOT_IN_PACKET);
    }
    // The instances' tree is small (a 256-byte node per four to eight
    // instances) and stays in cache: its children are not prefetched.
    loop {
        if meta == 0 {
            if let Some(n) = bvh.top.get(child as usize) {
                let (t, mask) = r.boxes(n, best.t);
                if let Some(next) = descend(n, &t, mask, st, &mut sp, |_| ()) {
                    (child, meta) = next;
                    continue;
                }
            }
        } else if let Some(&[root, mask]) = bvh.roots.get(child as usize)
            && ray.mask & mask != 0
            && let Some(rec) = bvh.records.get(child as usize)
        {
            let object = rec.object_ray(ray, best.t);
            let (hit, at) = closest(bvh, prims, hf, &object, root, inner, &mut ());
            if hit.is_hit() {
                best = hit.with_instance(child);
                best_at = at;
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

/// Whether anything the ray sees lies on it, over both levels.
#[target_feature(enable = "avx2,bmi1")]
pub(super) fn any_two_level(
    bvh: &Bvh8,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    ray: &Ray,
    stack: &mut Stack,
) -> bool {
    let r = Ray8::new(ray.origin, inv_dir(ray), ray.tmin);
    let Stack { e: inner, top: st } = stack;
    let mut sp = 0usize;
    let (mut child, mut meta) = (0u32, 0u32);
    if bvh.top.is_empty() {
        return false;
    }
    loop {
        if meta == 0 {
            if let Some(n) = bvh.top.get(child as usize) {
                let (t, mask) = r.boxes(n, ray.tmax);
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
                        sp += 1;
                    }
                    (child, meta) = (n.child[near], n.meta[near]);
                    continue;
                }
            }
        } else if let Some(&[root, mask]) = bvh.roots.get(child as usize)
            && ray.mask & mask != 0
            && let Some(rec) = bvh.records.get(child as usize)
        {
            let object = rec.object_ray(ray, ray.tmax);
            if any(bvh, prims, hf, &object, root, inner, &mut ()) {
                return true;
            }
        }
        if sp == 0 {
            return false;
        }
        sp -= 1;
        (child, meta) = (st[sp].child, st[sp].meta);
    }
}

/// The closest-hit order of node `n`'s children entered at distances `t`
/// (`mask`: the entered ones): the nearest is returned, to be visited next,
/// and the others pushed so that the nearest of them is popped first (the
/// lower slot first on equal distances), each pushed entry handed to
/// `pushed` (to prefetch it). `None` when none was entered or the stack has
/// not the room. Inlined into the walks, whose target features it then has
/// (it takes none of its own, so that it can be inlined always).
#[inline(always)]
pub(super) fn descend(
    n: &Node8,
    t: &[f32; 8],
    mask: u32,
    st: &mut [Entry; STACK],
    sp: &mut usize,
    pushed: impl Fn(&Entry),
) -> Option<(u32, u32)> {
    if mask == 0 || *sp + 8 > STACK {
        return None;
    }
    let mut m = mask;
    let i = m.trailing_zeros() as usize & 7;
    m &= m - 1;
    if m == 0 {
        return Some((n.child[i], n.meta[i]));
    }
    let j = m.trailing_zeros() as usize & 7;
    m &= m - 1;
    if m == 0 {
        // Two children: the farther onto the stack (the lower slot wins a tie).
        let (near, far) = if t[j] < t[i] { (j, i) } else { (i, j) };
        let e = Entry {
            child: n.child[far],
            meta: n.meta[far],
            t: t[far],
        };
        pushed(&e);
        st[*sp] = e;
        *sp += 1;
        return Some((n.child[near], n.meta[near]));
    }
    // Three or more: each goes straight to its place, far to near (the
    // nearest on top, the lower slot nearer on equal distances), by its rank
    // among them; the nearest is popped.
    let d = Distances::new(t, mask);
    let top = *sp + mask.count_ones() as usize - 1;
    let mut m = mask;
    while m != 0 {
        let k = m.trailing_zeros() as usize & 7;
        m &= m - 1;
        let e = Entry {
            child: n.child[k],
            meta: n.meta[k],
            t: t[k],
        };
        pushed(&e);
        // ok: the rank is below the number of children entered.
        st[top - d.rank(k, t[k])] = e;
    }
    *sp = top;
    Some((st[top].child, st[top].meta))
}

/// A node's entry distances as two 4-lane registers and the mask of the
/// children entered, for ordering them without a branch on their values
/// (those branches go either way on incoherent rays, the insertion sort
/// they replace cost a fifth of the instances' walk). Plain 128-bit SIMD
/// (SSE2, in every x86-64 CPU), so that [`descend`] stays inlinable.
struct Distances {
    lo: Vec4,
    hi: Vec4,
    mask: u32,
}

impl Distances {
    #[inline(always)]
    fn new(t: &[f32; 8], mask: u32) -> Self {
        Distances {
            lo: Vec4::new(t[0], t[1], t[2], t[3]),
            hi: Vec4::new(t[4], t[5], t[6], t[7]),
            mask,
        }
    }

    /// Child `k`'s place (entered at `tk`) when the entered children are
    /// ordered by distance, the lower slot first on equal distances: 0 for
    /// the nearest.
    #[inline(always)]
    fn rank(&self, k: usize, tk: f32) -> usize {
        let s = Vec4::splat(tk);
        let lt = self.lo.cmplt(s).bitmask() | self.hi.cmplt(s).bitmask() << 4;
        let eq = self.lo.cmpeq(s).bitmask() | self.hi.cmpeq(s).bitmask() << 4;
        ((lt | (eq & ((1 << k) - 1))) & self.mask).count_ones() as usize
    }
}

/// The ray's constants for the watertight triangle test ([`RayPre`]'s),
/// splatted across eight lanes: two packets tested at once.
struct Lanes8 {
    o: [__m256; 3],
    sx: __m256,
    sy: __m256,
    sz: __m256,
    /// The test's axes `(kx, ky, kz)`, each below 3.
    axes: [usize; 3],
}

impl Lanes8 {
    #[inline]
    #[target_feature(enable = "avx2")]
    fn new(pre: &RayPre) -> Self {
        Lanes8 {
            o: [
                _mm256_set1_ps(pre.origin.x),
                _mm256_set1_ps(pre.origin.y),
                _mm256_set1_ps(pre.origin.z),
            ],
            sx: _mm256_set1_ps(pre.shear.x),
            sy: _mm256_set1_ps(pre.shear.y),
            sz: _mm256_set1_ps(pre.shear.z),
            axes: [pre.kx.min(2), pre.ky.min(2), pre.kz.min(2)],
        }
    }
}
