//! Coherent rays eight at a time: camera rays of neighbouring pixels, shadow
//! rays from neighbouring points toward one light. A batch's rays are taken
//! eight in a row; where those eight are coherent ([`Packet::new`]) one walk
//! of the 8-wide tree serves them all:
//!
//! - A node's eight boxes are tested once for the packet, as one ray's are,
//!   by interval arithmetic: from the smallest and largest origin and inverse
//!   direction of the eight on each axis, a lower bound of every ray's entry
//!   distance and an upper bound of every ray's exit distance. Rounding is
//!   monotonic, so these bounds hold for the rounded values each ray's own
//!   slab test ([`super::walk`], core's) works out: a box any of the eight
//!   enters is entered by the packet.
//! - A leaf's triangles are tested one at a time against the eight rays, a
//!   ray to a lane, with core's operations in core's order per lane
//!   (`watertight8!`): each ray gets core's `t`, `u` and `v`, and the closest
//!   hit of its own walk, since the packet visits every leaf that walk would.
//!   (Where two triangles in different leaves meet a ray at exactly the same
//!   `t`, which of them it reports can differ, as it can between core's walk
//!   and the 8-wide one.)
//!
//! The node cost is one ray's for eight rays; the leaves cost what they cost
//! one ray at a time (a triangle against eight rays in the time of eight
//! triangles against one), plus the leaves one ray of the packet enters and
//! another does not. So a packet pays only where its rays go the same way:
//! [`Packet::new`] takes eight rays whose directions lie within a narrow
//! cone and whose origins lie close together, and a batch takes packets only
//! where a sample of them, walked both ways, cost no more than their rays
//! alone ([`packets_pay`]; rays over triangles far smaller than a pixel end
//! in a leaf each, and a packet walks all eight leaves for all eight rays).

use super::walk::{any, closest, descend, nearest_first, prefetch};
use super::work::{Choice, SAMPLE_SHARE, SAMPLES, Tally, Work};
use super::{Bvh8, Entry, Node8, STACK, Stack};
use crate::leaves::{
    NOT_IN_PACKET, PACKET_LEAF, PERM_AXES, inv_dir, leaf_closest_axes, packet_lane, ray_pre_with,
};
use core::arch::x86_64::*;
use prism_core::gpu::{KIND_HEIGHTFIELD, Primitive};
use prism_core::heightfield::Heightfields;
use prism_core::intersect::{MIN_DIR_COMPONENT, RayPre, SLAB_EXIT_SCALE, SLAB_EXIT_SCALE_NEGATIVE};
use prism_core::traverse::ray_primitive;
use prism_core::{Hit, Ray};

/// Rays a packet holds: one to each lane of an AVX2 register.
pub(super) const PACKET: usize = 8;

/// The cosine of the widest angle between a packet's first ray and any other
/// (about 2.6 degrees). Eight neighbouring pixels of a 1920-pixel-wide camera
/// of 90 degrees span 0.4 degrees, of a 512-pixel-wide one of 45 degrees 0.7;
/// diffuse and random rays lie far outside and are traced one at a time.
const MIN_COS: f32 = 0.999;

/// The largest spread of a packet's origins on any axis, as a fraction of the
/// extent of the tree's root box (the largest of its three sides): eight
/// points a pixel apart on a surface lie well within it.
const MAX_ORIGIN_SPREAD: f32 = 1.0 / 64.0;

/// Eight coherent rays: the interval constants of the node test, and each
/// lane's constants for the triangle test.
pub(super) struct Packet<'a> {
    /// Per axis, the origin whose slab distance bounds the entry distances
    /// from below (the largest where the direction is positive, else the
    /// smallest) and the one that bounds the exit distances from above.
    o_near: [__m256; 3],
    o_far: [__m256; 3],
    /// Per axis, the smallest and largest inverse direction (one sign).
    inv_lo: [__m256; 3],
    inv_hi: [__m256; 3],
    /// Row of the near plane per axis, shared by the eight rays.
    near: [usize; 3],
    /// The smallest `tmin`.
    tmin_lo: __m256,
    /// Each lane's `tmin` and `tmax`.
    tmin: __m256,
    tmax: __m256,
    /// Each lane's origin on the test's axes (`kx`, `ky`, `kz`), and shear.
    origin: [__m256; 3],
    shear: [__m256; 3],
    /// The test's axes, shared by the eight rays.
    axes: [usize; 3],
    /// The rays, for leaves of spheres and heightfields (core's tests, one
    /// ray at a time).
    rays: &'a [Ray; PACKET],
}

/// Fields `0..8` of eight rays (`origin`, `tmin`, `dir`, `tmax`: the first 32
/// bytes of each), as eight registers of one field each, a ray to a lane: the
/// usual 8x8 transpose.
#[inline]
#[target_feature(enable = "avx2")]
fn columns(rays: &[Ray; PACKET]) -> [__m256; 8] {
    let row = |i: usize| -> __m256 {
        let all: [f32; 12] = bytemuck::cast(rays[i]);
        let mut first = [0.0f32; 8];
        first.copy_from_slice(&all[..8]);
        bytemuck::cast(first)
    };
    let r: [__m256; 8] = core::array::from_fn(row);
    let (lo, hi) = (_mm256_unpacklo_ps, _mm256_unpackhi_ps);
    let t = [
        lo(r[0], r[1]),
        hi(r[0], r[1]),
        lo(r[2], r[3]),
        hi(r[2], r[3]),
        lo(r[4], r[5]),
        hi(r[4], r[5]),
        lo(r[6], r[7]),
        hi(r[6], r[7]),
    ];
    let (even, odd) = (_mm256_shuffle_ps::<0x44>, _mm256_shuffle_ps::<0xEE>);
    let u = [
        even(t[0], t[2]),
        odd(t[0], t[2]),
        even(t[1], t[3]),
        odd(t[1], t[3]),
        even(t[4], t[6]),
        odd(t[4], t[6]),
        even(t[5], t[7]),
        odd(t[5], t[7]),
    ];
    let (low, high) = (
        _mm256_permute2f128_ps::<0x20>,
        _mm256_permute2f128_ps::<0x31>,
    );
    [
        low(u[0], u[4]),
        low(u[1], u[5]),
        low(u[2], u[6]),
        low(u[3], u[7]),
        high(u[0], u[4]),
        high(u[1], u[5]),
        high(u[2], u[6]),
        high(u[3], u[7]),
    ]
}

/// Whether every lane of a comparison is set, or none.
#[inline(always)]
fn uniform(mask: i32) -> bool {
    mask == 0 || mask == 0xFF
}

impl<'a> Packet<'a> {
    /// The packet of `rays` (eight of them) where they are coherent: they see
    /// a flat scene (mask), their directions have one sign per axis and one
    /// largest component (so one set of near planes and one axis order for
    /// the triangle test), lie within [`MIN_COS`] of the
    /// first's, and their origins within [`MAX_ORIGIN_SPREAD`] of `extent`
    /// on every axis. `None` otherwise (the rays are traced one at a time).
    /// Worked out on the eight at once: most batches that are not coherent
    /// fail on the first test.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn new(rays: &'a [Ray], extent: f32) -> Option<Self> {
        let rays: &[Ray; PACKET] = rays.try_into().ok()?;
        // The first and the last ray first, in scalar: rays in no order
        // (diffuse bounces) mostly fail here, for a tenth of the full test.
        let (d0, d7) = (rays[0].dir, rays[PACKET - 1].dir);
        if d0.dot(d7) < MIN_COS * (d0.length_squared() * d7.length_squared()).sqrt() {
            return None;
        }
        let [ox, oy, oz, tmin, dx, dy, dz, tmax] = columns(rays);
        let (mul, add, splat) = (_mm256_mul_ps, _mm256_add_ps, _mm256_set1_ps);
        // Within the cone around the first direction.
        let (fx, fy, fz) = (lane_zero(dx), lane_zero(dy), lane_zero(dz));
        let dot = add(add(mul(dx, fx), mul(dy, fy)), mul(dz, fz));
        let len2 = add(add(mul(dx, dx), mul(dy, dy)), mul(dz, dz));
        let bound = mul(splat(MIN_COS), _mm256_sqrt_ps(mul(len2, lane_zero(len2))));
        if _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GE_OQ>(dot, bound)) != 0xFF {
            return None;
        }
        if rays.iter().any(|r| r.mask & 0xFF == 0) {
            return None;
        }
        // One sign per axis, one largest component (as `ray_pre_with`
        // compares them).
        let (ax, ay, az) = (abs(dx), abs(dy), abs(dz));
        let (xy, xz, yz) = (greater(ax, ay), greater(ax, az), greater(ay, az));
        // The lanes whose largest component is x, and y (`ray_pre_with`'s `kz`).
        let (kz_x, kz_y) = (xy & xz, !xy & yz & 0xFF);
        let signs = [negative(dx), negative(dy), negative(dz)];
        let all_one_way = [signs[0], signs[1], signs[2], kz_x, kz_y];
        if !(uniform(all_one_way[0])
            && uniform(all_one_way[1])
            && uniform(all_one_way[2])
            && uniform(all_one_way[3])
            && uniform(all_one_way[4]))
        {
            return None;
        }
        let inv = [inverse(dx, ax), inverse(dy, ay), inverse(dz, az)];
        let (o, d) = ([ox, oy, oz], [dx, dy, dz]);
        let o_lo = [min_lane(ox), min_lane(oy), min_lane(oz)];
        let o_hi = [max_lane(ox), max_lane(oy), max_lane(oz)];
        let spread = _mm256_cvtss_f32(max_lane(_mm256_sub_ps(
            _mm256_setr_m128(
                _mm256_castps256_ps128(o_hi[0]),
                _mm256_castps256_ps128(o_hi[1]),
            ),
            _mm256_setr_m128(
                _mm256_castps256_ps128(o_lo[0]),
                _mm256_castps256_ps128(o_lo[1]),
            ),
        )))
        .max(_mm256_cvtss_f32(o_hi[2]) - _mm256_cvtss_f32(o_lo[2]));
        if spread.is_nan() || spread > MAX_ORIGIN_SPREAD * extent {
            return None;
        }
        let negative = [signs[0] != 0, signs[1] != 0, signs[2] != 0];
        // The test's axes, as `ray_pre_with` picks them (lane 0's, shared).
        let kz = 2 - 2 * usize::from(kz_x != 0) - usize::from(kz_y != 0);
        let perm = 2 * kz + usize::from(negative[kz.min(2)]);
        let (kx, ky) = PERM_AXES[perm.min(5)];
        let axes = [kx, ky, kz.min(2)];
        let dk = d[axes[2]];
        Some(Packet {
            // The near plane's bound takes the largest origin where the
            // direction is positive, the far plane's the smallest.
            o_near: [
                if negative[0] { o_lo[0] } else { o_hi[0] },
                if negative[1] { o_lo[1] } else { o_hi[1] },
                if negative[2] { o_lo[2] } else { o_hi[2] },
            ],
            o_far: [
                if negative[0] { o_hi[0] } else { o_lo[0] },
                if negative[1] { o_hi[1] } else { o_lo[1] },
                if negative[2] { o_hi[2] } else { o_lo[2] },
            ],
            inv_lo: [min_lane(inv[0]), min_lane(inv[1]), min_lane(inv[2])],
            inv_hi: [max_lane(inv[0]), max_lane(inv[1]), max_lane(inv[2])],
            near: [
                usize::from(negative[0]),
                2 + usize::from(negative[1]),
                4 + usize::from(negative[2]),
            ],
            tmin_lo: min_lane(tmin),
            tmin,
            tmax,
            origin: [o[kx], o[ky], o[axes[2]]],
            shear: [
                _mm256_div_ps(d[kx], dk),
                _mm256_div_ps(d[ky], dk),
                _mm256_div_ps(splat(1.0), dk),
            ],
            axes,
            rays,
        })
    }

    /// Lane `lane`'s core constants (for the leaves of spheres and
    /// heightfields).
    #[inline]
    fn pre(&self, lane: usize) -> RayPre {
        let ray = &self.rays[lane & 7];
        ray_pre_with(ray, inv_dir(ray))
    }

    /// Node `n`'s eight boxes against the packet: for each, a lower bound of
    /// the rays' entry distances, and the mask of the boxes some ray may
    /// enter within its interval, `tmax_hi` bounding the rays' `tmax` from
    /// above. Every box that one of the rays enters by core's slab test (with
    /// its exit widening) is in the mask: each bound is a product of
    /// `bound - origin` and an inverse direction, rounded monotonically in
    /// both, so it is least (greatest) at the ends of the packet's ranges.
    #[target_feature(enable = "avx2")]
    pub(super) fn boxes(&self, n: &Node8, tmax_hi: __m256) -> ([f32; 8], u32) {
        let (sub, mul) = (_mm256_sub_ps, _mm256_mul_ps);
        let enter = |axis: usize| -> __m256 {
            // ok: `near[axis]` is below 6.
            let bound: __m256 = bytemuck::cast(n.rows[self.near[axis]]);
            let d = sub(bound, self.o_near[axis]);
            _mm256_min_ps(mul(d, self.inv_lo[axis]), mul(d, self.inv_hi[axis]))
        };
        let exit = |axis: usize| -> __m256 {
            let bound: __m256 = bytemuck::cast(n.rows[self.near[axis] ^ 1]);
            let d = sub(bound, self.o_far[axis]);
            _mm256_max_ps(mul(d, self.inv_lo[axis]), mul(d, self.inv_hi[axis]))
        };
        let near = _mm256_max_ps(
            _mm256_max_ps(enter(0), enter(1)),
            _mm256_max_ps(enter(2), self.tmin_lo),
        );
        let far = _mm256_min_ps(
            _mm256_min_ps(exit(0), exit(1)),
            _mm256_min_ps(exit(2), tmax_hi),
        );
        // Core's exit widening, as in the single-ray test (monotonic, so it
        // keeps the bound).
        let scale = _mm256_blendv_ps(
            _mm256_set1_ps(SLAB_EXIT_SCALE),
            _mm256_set1_ps(SLAB_EXIT_SCALE_NEGATIVE),
            far,
        );
        let far = mul(far, scale);
        let mask = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(near, far)) as u32;
        (bytemuck::cast(near), mask)
    }

    /// Triangle `j` of packet `tp` against the eight rays within each one's
    /// `(tmin, tmax)`: the lanes hit and their `t`, `u`, `v` (core's), `None`
    /// where no ray passes inside the triangle.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn triangle(
        &self,
        tp: &crate::leaves::TriPacket,
        j: usize,
        tmax: __m256,
    ) -> Option<(__m256, __m256, __m256, __m256)> {
        let rows = tp.rows();
        let [kx, ky, kz] = self.axes;
        // Vertex `v`'s coordinate on the test's axis `k` less each ray's
        // origin. ok: `axes` are below 3 and `j` below 4.
        let rel = |v: usize, k: usize, axis: usize| {
            _mm256_sub_ps(_mm256_set1_ps(rows[v][axis][j]), self.origin[k])
        };
        let vertex = |v: usize| [rel(v, 0, kx), rel(v, 1, ky), rel(v, 2, kz)];
        watertight8!(
            true,
            vertex(0),
            vertex(1),
            vertex(2),
            self.shear,
            self.tmin,
            tmax
        )
    }
}

/// Lane 0 in every lane.
#[inline]
#[target_feature(enable = "avx2")]
fn lane_zero(x: __m256) -> __m256 {
    _mm256_permutevar8x32_ps(x, _mm256_setzero_si256())
}

/// `|x|` per lane.
#[inline]
#[target_feature(enable = "avx")]
fn abs(x: __m256) -> __m256 {
    _mm256_andnot_ps(_mm256_set1_ps(-0.0), x)
}

/// The lanes where `x < 0` (a bit each).
#[inline]
#[target_feature(enable = "avx")]
fn negative(x: __m256) -> i32 {
    _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(x, _mm256_setzero_ps()))
}

/// The lanes where `a > b` (a bit each).
#[inline]
#[target_feature(enable = "avx")]
fn greater(a: __m256, b: __m256) -> i32 {
    _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(a, b))
}

/// [`inv_dir`] per lane from a direction component `d` and its size `a`:
/// the same clamp away from zero and the same division.
#[inline]
#[target_feature(enable = "avx")]
fn inverse(d: __m256, a: __m256) -> __m256 {
    let min = _mm256_set1_ps(MIN_DIR_COMPONENT);
    let clamped = _mm256_or_ps(min, _mm256_and_ps(_mm256_set1_ps(-0.0), d));
    let safe = _mm256_blendv_ps(d, clamped, _mm256_cmp_ps::<_CMP_LT_OQ>(a, min));
    _mm256_div_ps(_mm256_set1_ps(1.0), safe)
}

/// The largest of eight lanes, in every lane.
#[inline]
#[target_feature(enable = "avx")]
fn max_lane(x: __m256) -> __m256 {
    let x = _mm256_max_ps(x, _mm256_permute2f128_ps::<1>(x, x));
    let x = _mm256_max_ps(x, _mm256_permute_ps::<0b01_00_11_10>(x));
    _mm256_max_ps(x, _mm256_permute_ps::<0b10_11_00_01>(x))
}

/// The smallest of eight lanes, in every lane.
#[inline]
#[target_feature(enable = "avx")]
fn min_lane(x: __m256) -> __m256 {
    let x = _mm256_min_ps(x, _mm256_permute2f128_ps::<1>(x, x));
    let x = _mm256_min_ps(x, _mm256_permute_ps::<0b01_00_11_10>(x));
    _mm256_min_ps(x, _mm256_permute_ps::<0b10_11_00_01>(x))
}

/// Closest hits of packet `p` in the tree at `root`: each lane's hit (`prim`
/// its leaf slot) and where it came from (see [`NOT_IN_PACKET`]), as
/// [`super::walk::closest`] gives for that ray alone.
#[target_feature(enable = "avx2,bmi1,popcnt")]
pub(super) fn closest_packet<T: Tally>(
    bvh: &Bvh8,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    p: &Packet,
    root: u32,
    st: &mut [Entry; STACK],
    tally: &mut T,
) -> Option<[(Hit, usize); PACKET]> {
    let tmax: [f32; PACKET] = bytemuck::cast(p.tmax);
    let mut best: [Hit; PACKET] =
        core::array::from_fn(|i| Hit::new(tmax[i], 0.0, 0.0, Hit::NO_PRIM, Hit::NO_INSTANCE));
    let mut best_at = [NOT_IN_PACKET; PACKET];
    let mut best_t = p.tmax;
    let mut tmax_hi = max_lane(best_t);
    let mut sp = 0usize;
    let far = |e: &Entry| prefetch(bvh, e.child, e.meta);
    let (mut child, mut meta) = (root, 0u32);
    loop {
        if meta == 0 {
            if let Some(n) = bvh.nodes.get(child as usize) {
                tally.node();
                if tally.over() {
                    return None;
                }
                let (t, mask) = p.boxes(n, tmax_hi);
                if let Some(next) = descend(n, &t, mask, st, &mut sp, far) {
                    (child, meta) = next;
                    continue;
                }
            }
        } else if meta & PACKET_LEAF != 0 {
            let leaf = bvh.packets.leaf(child, meta & !PACKET_LEAF);
            let mut changed = false;
            for (i, tp) in leaf.iter().enumerate() {
                for j in 0..4 {
                    // Unused lanes come last (and would never be hit).
                    if tp.slot[j] == u32::MAX {
                        break;
                    }
                    tally.tests(1);
                    let Some((hit, t, u, v)) = p.triangle(tp, j, best_t) else {
                        continue;
                    };
                    let mut m = _mm256_movemask_ps(hit) as u32;
                    if m == 0 {
                        continue;
                    }
                    best_t = _mm256_blendv_ps(best_t, t, hit);
                    let (ts, us, vs): ([f32; 8], [f32; 8], [f32; 8]) =
                        (bytemuck::cast(t), bytemuck::cast(u), bytemuck::cast(v));
                    while m != 0 {
                        let lane = m.trailing_zeros() as usize & 7;
                        m &= m - 1;
                        best[lane] = Hit::new(ts[lane], us[lane], vs[lane], tp.slot[j], 0);
                        best_at[lane] = packet_lane(child + i as u32, j);
                    }
                    changed = true;
                }
            }
            if changed {
                tmax_hi = max_lane(best_t);
            }
        } else {
            // Spheres and heightfields: core's tests, one ray at a time.
            tally.tests(meta * PACKET as u32);
            let tmin: [f32; PACKET] = bytemuck::cast(p.tmin);
            let mut changed = false;
            for lane in 0..PACKET {
                let before = best[lane].prim;
                leaf_closest_axes(
                    &p.pre(lane),
                    prims,
                    hf,
                    child,
                    meta,
                    tmin[lane],
                    &mut best[lane],
                );
                if best[lane].prim != before {
                    best_at[lane] = NOT_IN_PACKET;
                    changed = true;
                }
            }
            if changed {
                best_t = _mm256_setr_ps(
                    best[0].t, best[1].t, best[2].t, best[3].t, best[4].t, best[5].t, best[6].t,
                    best[7].t,
                );
                tmax_hi = max_lane(best_t);
            }
        }
        // Pop the nearest entry that a ray may still meet in front of its
        // best hit.
        let hi: f32 = _mm256_cvtss_f32(tmax_hi);
        loop {
            if sp == 0 {
                return Some(core::array::from_fn(|i| {
                    if best[i].is_hit() {
                        (best[i], best_at[i])
                    } else {
                        (Hit::MISS, NOT_IN_PACKET)
                    }
                }));
            }
            sp -= 1;
            let e = st[sp];
            if e.t < hi {
                (child, meta) = (e.child, e.meta);
                break;
            }
        }
    }
}

/// Whether each ray of packet `p` meets anything in the tree at `root`
/// within its interval, as [`super::walk::any`] gives for it alone.
#[target_feature(enable = "avx2,bmi1")]
pub(super) fn any_packet<T: Tally>(
    bvh: &Bvh8,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    p: &Packet,
    root: u32,
    st: &mut [Entry; STACK],
    tally: &mut T,
) -> Option<[bool; PACKET]> {
    // Lanes not yet known to be occluded.
    let mut open = (1u32 << PACKET) - 1;
    let tmax_hi = max_lane(p.tmax);
    let mut sp = 0usize;
    let far = |e: &Entry| prefetch(bvh, e.child, e.meta);
    let (mut child, mut meta) = (root, 0u32);
    let done = |open: u32| Some(core::array::from_fn(|i| open & (1 << i) == 0));
    loop {
        if meta == 0 {
            if let Some(n) = bvh.nodes.get(child as usize) {
                tally.node();
                if tally.over() {
                    return None;
                }
                let (t, mask) = p.boxes(n, tmax_hi);
                if let Some(next) = nearest_first(n, &t, mask, st, &mut sp, far) {
                    (child, meta) = next;
                    continue;
                }
            }
        } else if meta & PACKET_LEAF != 0 {
            for tp in bvh.packets.leaf(child, meta & !PACKET_LEAF) {
                for j in 0..4 {
                    if tp.slot[j] == u32::MAX {
                        break;
                    }
                    tally.tests(1);
                    if let Some((hit, ..)) = p.triangle(tp, j, p.tmax) {
                        open &= !(_mm256_movemask_ps(hit) as u32);
                    }
                }
                if open == 0 {
                    return done(0);
                }
            }
        } else if let Some(leaf) = prims.get(child as usize..child as usize + meta as usize) {
            tally.tests(meta * PACKET as u32);
            let (tmin, tmax): ([f32; PACKET], [f32; PACKET]) =
                (bytemuck::cast(p.tmin), bytemuck::cast(p.tmax));
            let mut m = open;
            while m != 0 {
                let lane = m.trailing_zeros() as usize & 7;
                m &= m - 1;
                let pre = &p.pre(lane);
                let (lo, hi) = (tmin[lane], tmax[lane]);
                if leaf.iter().any(|q| {
                    if q.kind() == KIND_HEIGHTFIELD {
                        hf.hit(pre, q, lo, hi).is_some()
                    } else {
                        ray_primitive(pre, q, lo, hi).is_some()
                    }
                }) {
                    open &= !(1 << lane);
                }
            }
            if open == 0 {
                return done(0);
            }
        }
        if sp == 0 {
            return done(open);
        }
        sp -= 1;
        (child, meta) = (st[sp].child, st[sp].meta);
    }
}

/// [`Bvh8::intersect`] of each of `rays` into `out` (a flat scene's tree at
/// `root`, whose root box's largest side is `extent`): eight rays in a row
/// that make a [`Packet`] are walked together, the others one at a time.
#[target_feature(enable = "avx2,bmi1,popcnt")]
pub(super) fn closest_many(
    bvh: &Bvh8,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    (root, extent): (u32, f32),
    rays: &[Ray],
    out: &mut [Hit],
    stack: &mut Stack,
) {
    for (rays, out) in rays.chunks(PACKET).zip(out.chunks_mut(PACKET)) {
        let Some(packet) = Packet::new(rays, extent) else {
            for (ray, hit) in rays.iter().zip(out.iter_mut()) {
                *hit = bvh.intersect(prims, hf, ray, stack);
            }
            continue;
        };
        let hits = closest_packet(bvh, prims, hf, &packet, root, &mut stack.e, &mut ());
        for ((mut hit, at), slot) in hits.into_iter().flatten().zip(out.iter_mut()) {
            if hit.is_hit() {
                hit.prim = bvh.packets.id_of(&hit, at, prims);
            }
            *slot = hit;
        }
    }
}

/// [`Bvh8::occluded`] of each of `rays` into `out`, coherent rays eight at a
/// time (as [`closest_many`]).
#[target_feature(enable = "avx2,bmi1,popcnt")]
pub(super) fn any_many(
    bvh: &Bvh8,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    (root, extent): (u32, f32),
    rays: &[Ray],
    out: &mut [bool],
    stack: &mut Stack,
) {
    for (rays, out) in rays.chunks(PACKET).zip(out.chunks_mut(PACKET)) {
        let Some(packet) = Packet::new(rays, extent) else {
            for (ray, o) in rays.iter().zip(out.iter_mut()) {
                *o = bvh.occluded(prims, hf, ray, stack);
            }
            continue;
        };
        let answers = any_packet(bvh, prims, hf, &packet, root, &mut stack.e, &mut ());
        for (a, o) in answers.into_iter().flatten().zip(out.iter_mut()) {
            *o = a;
        }
    }
}

/// Whether packets pay on `rays` (see [`Choice`]): some of its coherent
/// packets (one group in [`SAMPLE_SHARE`], at most [`SAMPLES`]), spread over
/// it, walked both ways for closest hits (`closest_hits`) or any hit. A
/// batch too small to sample walks its rays alone.
#[target_feature(enable = "avx2,bmi1,popcnt")]
pub(super) fn packets_pay(
    bvh: &Bvh8,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    (root, extent): (u32, f32),
    rays: &[Ray],
    closest_hits: bool,
    stack: &mut Stack,
) -> bool {
    let groups = rays.len() / PACKET;
    let samples = (groups / SAMPLE_SHARE).min(SAMPLES);
    if samples == 0 {
        return false;
    }
    let mut choice = Choice::default();
    // The golden-ratio sequence over the groups: spread evenly, and at no
    // fixed stride (an image's rows put every sample of a stride that
    // divides them in one column, at the image's edge where rays meet
    // nothing).
    let place =
        |k: usize| ((((k as u64 * 0x9E37_79B9) & 0xFFFF_FFFF) * groups as u64) >> 32) as usize;
    for g in (0..samples).map(place) {
        let Some(rays) = rays.get(g * PACKET..(g + 1) * PACKET) else {
            break;
        };
        let Some(packet) = Packet::new(rays, extent) else {
            continue;
        };
        let mut by_ray = Work::single();
        for ray in rays {
            if closest_hits {
                closest(bvh, prims, hf, ray, root, &mut stack.e, &mut by_ray);
            } else {
                any(bvh, prims, hf, ray, root, &mut stack.e, &mut by_ray);
            }
        }
        let mut by_packet = Work::packet(Choice::limit(&by_ray));
        if closest_hits {
            let _ = closest_packet(bvh, prims, hf, &packet, root, &mut stack.e, &mut by_packet);
        } else {
            let _ = any_packet(bvh, prims, hf, &packet, root, &mut stack.e, &mut by_packet);
        }
        choice.weigh(by_packet, by_ray);
    }
    choice.packets()
}
