//! Ray-primitive intersection: slab test, watertight ray-triangle, robust ray-sphere.
//!
//! Every function here has a GPU mirror of the same name and operation order
//! (`backend-cuda/kernels/intersect.cuh`, `backend-wgpu/shaders/intersect.wgsl`).

use crate::ray::Ray;
use glam::{Vec3, Vec3A, Vec4};

/// Smallest magnitude a direction component is given before taking its inverse.
///
/// A zero component would make `1/d` infinite and `0 * inf` NaN in the slab test;
/// `1e-30` keeps `(bound - origin) / d` finite for any scene within `±1e8`. The
/// replaced component moves the ray by `1e-30` per unit of `t`, so the verdict is
/// the exact test's whenever the origin lies inside or outside the slab by more
/// than `1e-30 * t` at the distance `t` of the hit: by any gap above `1e-22` in a
/// scene within `±1e8`. A smaller gap (a face `1e-37` from the origin's plane)
/// can cull a box whose primitive `ray_triangle` alone would hit. One case is a
/// convention rather than exact: a ray with a zero component whose origin lies
/// exactly on a face plane of that slab gets an entry or exit distance of
/// exactly 0 there, so it may miss a primitive lying in that plane that
/// `ray_triangle` alone would hit (the conformance suite counts these apart as
/// "face-plane"; Embree behaves the same way).
pub const MIN_DIR_COMPONENT: f32 = 1e-30;

/// `1 + 2 * gamma(3)` (Ize 2013, "Robust BVH Ray Traversal"): widening the slab
/// exit distance by this factor makes the box test conservative under rounding,
/// so a box is never missed when the primitive inside is hit (apart from the
/// face-plane convention of [`MIN_DIR_COMPONENT`]).
pub const SLAB_EXIT_SCALE: f32 = 1.000_000_7;

/// `1 - 2 * gamma(3)`: the same widening for a negative exit distance (rays with
/// `tmin < 0` meet boxes behind their origin), where multiplying by
/// [`SLAB_EXIT_SCALE`] would move the exit towards `-inf` and cull a box that a
/// flat primitive fills, such as a triangle's.
pub const SLAB_EXIT_SCALE_NEGATIVE: f32 = 0.999_999_3;

/// The slab exit distance `t` moved outwards by the rounding margin
/// ([`SLAB_EXIT_SCALE`] or, for `t < 0`, [`SLAB_EXIT_SCALE_NEGATIVE`]).
#[inline(always)]
pub fn widen_exit(t: f32) -> f32 {
    t * if t < 0.0 {
        SLAB_EXIT_SCALE_NEGATIVE
    } else {
        SLAB_EXIT_SCALE
    }
}

/// Per-ray constants, computed once before traversal.
#[derive(Clone, Copy, Debug)]
pub struct RayPre {
    /// Ray origin.
    pub origin: Vec3,
    /// Ray direction.
    pub dir: Vec3,
    /// `1 / dir`, with components clamped away from zero ([`MIN_DIR_COMPONENT`]).
    pub inv_dir: Vec3,
    /// Watertight test: the axis where `|dir|` is largest.
    pub kz: usize,
    /// Watertight test: the next axis (swapped with `ky` when `dir[kz] < 0` to keep winding).
    pub kx: usize,
    /// Watertight test: the remaining axis.
    pub ky: usize,
    /// Shear constants `(dir[kx]/dir[kz], dir[ky]/dir[kz], 1/dir[kz])`.
    pub shear: Vec3,
    /// `(kx, ky, kz)` as one of six codes (`2 * kz + swapped`), so traversal can
    /// dispatch once per ray to a triangle test with the axes fixed at compile
    /// time (no run-time indexing of vertex components in the hot loop).
    pub perm: u8,
    /// `origin` in a 16-byte SIMD register (same values).
    pub origin_a: Vec3A,
    /// `inv_dir` in a 16-byte SIMD register (same values).
    pub inv_dir_a: Vec3A,
}

impl RayPre {
    /// Precompute for one ray.
    #[inline]
    pub fn new(ray: &Ray) -> Self {
        let d = ray.dir;
        let safe = |c: f32| {
            if c.abs() < MIN_DIR_COMPONENT {
                MIN_DIR_COMPONENT.copysign(c)
            } else {
                c
            }
        };
        let inv_dir = Vec3::new(1.0 / safe(d.x), 1.0 / safe(d.y), 1.0 / safe(d.z));
        // Woop, Benthin, Wald 2013: permute so that z is the dominant axis.
        let ad = d.abs();
        let kz = if ad.x > ad.y {
            if ad.x > ad.z { 0 } else { 2 }
        } else if ad.y > ad.z {
            1
        } else {
            2
        };
        let mut kx = if kz == 2 { 0 } else { kz + 1 };
        let mut ky = if kx == 2 { 0 } else { kx + 1 };
        // ok: kx, ky and kz are axes in 0..=2.
        let swapped = d[kz] < 0.0;
        if swapped {
            core::mem::swap(&mut kx, &mut ky);
        }
        let shear = Vec3::new(d[kx] / d[kz], d[ky] / d[kz], 1.0 / d[kz]);
        Self {
            origin: ray.origin,
            dir: d,
            inv_dir,
            kz,
            kx,
            ky,
            shear,
            perm: 2 * kz as u8 + swapped as u8,
            origin_a: ray.origin.into(),
            inv_dir_a: inv_dir.into(),
        }
    }
}

/// [`ray_aabb`] on two BVH node rows (`xyz` = corner, `w` ignored), in SIMD
/// registers. The same operations in the same order, so the same results.
#[inline(always)]
pub fn ray_aabb_rows(pre: &RayPre, lo: &[f32; 4], hi: &[f32; 4], tmin: f32, tmax: f32) -> f32 {
    let lo = Vec3A::from_vec4(Vec4::from_array(*lo));
    let hi = Vec3A::from_vec4(Vec4::from_array(*hi));
    let t0 = (lo - pre.origin_a) * pre.inv_dir_a;
    let t1 = (hi - pre.origin_a) * pre.inv_dir_a;
    let near = t0.min(t1);
    let far = t0.max(t1);
    let t_enter = near.x.max(near.y).max(near.z).max(tmin);
    let t_exit = widen_exit(far.x.min(far.y).min(far.z).min(tmax));
    if t_enter <= t_exit {
        t_enter
    } else {
        f32::INFINITY
    }
}

/// Slab test: entry distance of the ray into the box `[lo, hi]` within `(tmin, tmax)`,
/// or `f32::INFINITY` when it misses.
///
/// A box with `lo = hi = +inf` (the BVH's absent child) is never hit.
#[inline(always)]
pub fn ray_aabb(pre: &RayPre, lo: Vec3, hi: Vec3, tmin: f32, tmax: f32) -> f32 {
    // Ize's form (bound - origin) * inv_dir: its rounding error is relative to t
    // itself, which is what SLAB_EXIT_SCALE covers. The FMA form
    // bound * inv_dir + (-origin * inv_dir) errs by ulps of |origin * inv_dir|,
    // which far from the world origin exceeds that margin and culls boxes whose
    // primitives are hit (cracks between triangles through the BVH).
    let t0 = (lo - pre.origin) * pre.inv_dir;
    let t1 = (hi - pre.origin) * pre.inv_dir;
    let near = t0.min(t1);
    let far = t0.max(t1);
    let t_enter = near.x.max(near.y).max(near.z).max(tmin);
    let t_exit = widen_exit(far.x.min(far.y).min(far.z).min(tmax));
    if t_enter <= t_exit {
        t_enter
    } else {
        f32::INFINITY
    }
}

/// Watertight ray-triangle test (Woop, Benthin, Wald 2013).
///
/// Returns `(t, u, v)` with `t` in `(tmin, tmax)` and the hit point
/// `(1-u-v)*v0 + u*v1 + v*v2`, or `None`. Rays through a shared edge or vertex
/// of a mesh hit at least one of the triangles that share it: never a crack.
///
/// The paper's double-precision re-evaluation of zero edge functions is left out:
/// a zero edge function counts as inside, which keeps the test watertight (a ray
/// exactly through an edge may report either neighbour) and keeps the GPU mirrors
/// identical on hardware without `f64` (WGSL).
#[inline(always)]
pub fn ray_triangle(
    pre: &RayPre,
    v0: Vec3,
    v1: Vec3,
    v2: Vec3,
    tmin: f32,
    tmax: f32,
) -> Option<(f32, f32, f32)> {
    let (v0, v1, v2) = (v0.into(), v1.into(), v2.into());
    match pre.perm {
        0 => ray_triangle_axes::<1, 2, 0>(pre, v0, v1, v2, tmin, tmax),
        1 => ray_triangle_axes::<2, 1, 0>(pre, v0, v1, v2, tmin, tmax),
        2 => ray_triangle_axes::<2, 0, 1>(pre, v0, v1, v2, tmin, tmax),
        3 => ray_triangle_axes::<0, 2, 1>(pre, v0, v1, v2, tmin, tmax),
        4 => ray_triangle_axes::<0, 1, 2>(pre, v0, v1, v2, tmin, tmax),
        _ => ray_triangle_axes::<1, 0, 2>(pre, v0, v1, v2, tmin, tmax),
    }
}

/// [`ray_triangle`] with the permutation `(KX, KY, KZ)` of `pre` fixed at compile
/// time. The caller guarantees it equals `(pre.kx, pre.ky, pre.kz)`.
#[inline(always)]
pub fn ray_triangle_axes<const KX: usize, const KY: usize, const KZ: usize>(
    pre: &RayPre,
    v0: Vec3A,
    v1: Vec3A,
    v2: Vec3A,
    tmin: f32,
    tmax: f32,
) -> Option<(f32, f32, f32)> {
    // ok: KX, KY and KZ are axes in 0..=2 (the six permutations of `RayPre::perm`).
    let a = v0 - pre.origin_a;
    let b = v1 - pre.origin_a;
    let c = v2 - pre.origin_a;
    let (sx, sy, sz) = (pre.shear.x, pre.shear.y, pre.shear.z);
    let ax = a[KX] - sx * a[KZ];
    let ay = a[KY] - sy * a[KZ];
    let bx = b[KX] - sx * b[KZ];
    let by = b[KY] - sy * b[KZ];
    let cx = c[KX] - sx * c[KZ];
    let cy = c[KY] - sy * c[KZ];
    let u = cx * by - cy * bx;
    let v = ax * cy - ay * cx;
    let w = bx * ay - by * ax;
    if (u < 0.0 || v < 0.0 || w < 0.0) && (u > 0.0 || v > 0.0 || w > 0.0) {
        return None;
    }
    let det = u + v + w;
    if det == 0.0 {
        return None;
    }
    let az = sz * a[KZ];
    let bz = sz * b[KZ];
    let cz = sz * c[KZ];
    let t_scaled = u * az + v * bz + w * cz;
    let rcp_det = 1.0 / det;
    let t = t_scaled * rcp_det;
    if t > tmin && t < tmax {
        Some((t, v * rcp_det, w * rcp_det))
    } else {
        None
    }
}

/// Relative margin of [`sphere_missed_early`]: 1e-5 of `a |f|^2`, against
/// roundings of a few 1e-7 of it in [`ray_sphere`]'s discriminant and in the
/// early test itself (with or without fused multiply-adds).
pub const SPHERE_EARLY_MISS_MARGIN: f32 = 1e-5;

/// Whether the ray's line passes so clearly outside the sphere that
/// [`ray_sphere`] misses it whatever `tmin` and `tmax`: a test with neither the
/// division nor the square root of [`ray_sphere`], which the CUDA kernels'
/// walk of the uniform grid ([`crate::cell_grid`]) runs first, since most of
/// the spheres it tests are missed (rtiow's frame 0.93x the time on an H100;
/// on a CPU, where the division costs less than the branch, it is not used).
///
/// With `f = origin - center`, `a = dir . dir` and `b = f . dir`, the exact
/// discriminant of [`ray_sphere`] is `a r^2 - (a |f|^2 - b^2)`; this says
/// missed only where `a |f|^2 - b^2 - a r^2` exceeds
/// [`SPHERE_EARLY_MISS_MARGIN`]` * a |f|^2`, far beyond what either side's
/// rounding can move. A NaN or an overflow (outside [`ray_sphere`]'s domain)
/// says not missed.
#[inline(always)]
pub fn sphere_missed_early(origin: Vec3, dir: Vec3, center: Vec3, radius: f32) -> bool {
    let f = origin - center;
    let a = dir.dot(dir);
    let b = f.dot(dir);
    let aff = a * f.dot(f);
    aff - b * b - a * (radius * radius) > SPHERE_EARLY_MISS_MARGIN * aff
}

/// Scale of [`sphere_left_behind`]'s bound `tmin * b`: enough below 1 to cover
/// that product's rounding (one ulp, 6e-8) and the scale's own.
pub const SPHERE_LEFT_BEHIND_SCALE: f32 = 0.999;

/// Whether [`ray_sphere`] surely returns `None` for a ray that leaves the
/// sphere behind: its origin outside the sphere, or inside it by less than
/// `tmin` can reach, and its direction away from the centre. A test with
/// neither the division nor the square root, which [`ray_sphere`] (and every
/// backend's copy of it) runs first: a ray spawned on a sphere (a bounce, a
/// mirror or a shadow ray) meets its own sphere's box and, in the grids, its
/// own sphere's cells (whitted19 renders in 0.89x the time on two CPU cores,
/// CUDA's kernel in 0.94x on an H100).
///
/// With `f = origin - center`, `b = f . dir` and `c = |f|^2 - r^2` rounded as
/// [`ray_sphere`] rounds them, it says so where `tmin >= 0`, `b > 0` and
/// `-c < SPHERE_LEFT_BEHIND_SCALE * (tmin * b)`. Then `q = -(b + sqrt(disc))`
/// is negative with `|q| >= b` (a rounded sum of `b` and a non-negative number
/// is at least `b`), so the root `q / a` is at most `-0`, and the root `c / q`
/// is at most `-0` when `c >= 0` and below `|c| / b < tmin` when `c < 0`;
/// rounding is monotonic, so neither rounded root exceeds `tmin`. A NaN says no.
#[inline(always)]
pub fn sphere_left_behind(origin: Vec3, dir: Vec3, center: Vec3, radius: f32, tmin: f32) -> bool {
    let f = origin - center;
    left_behind(f.dot(dir), f.dot(f) - radius * radius, tmin)
}

/// [`sphere_left_behind`] on `b` and `c` already computed.
#[inline(always)]
fn left_behind(b: f32, c: f32, tmin: f32) -> bool {
    tmin >= 0.0 && b > 0.0 && -c < SPHERE_LEFT_BEHIND_SCALE * (tmin * b)
}

/// Robust ray-sphere test: nearest `t` in `(tmin, tmax)` where the ray meets the
/// sphere, or `None`.
///
/// A ray that leaves the sphere behind ([`sphere_left_behind`], on this
/// test's own `b` and `c`) returns `None` before the division and the square
/// root, with the answer the full test would give.
///
/// Uses the numerically stable form of Haines et al., "Precision Improvements for
/// Ray/Sphere Intersection" (Ray Tracing Gems, ch. 7): the discriminant is taken
/// from the distance between the centre and the ray's closest point (no
/// cancellation for small spheres far away) and the roots from `q` (no
/// cancellation between `-b` and `sqrt(disc)`).
///
/// Domain: the squares `dir . dir`, `radius^2` and `|origin - center|^2` must
/// be finite and `dir . dir` non-zero, i.e. lengths within about `1.8e19` and
/// a direction longer than about `1e-19`. Outside it the squares overflow or
/// underflow and a hit may be missed (or its `t` be imprecise), where a
/// triangle at the same place would still be hit.
#[inline(always)]
pub fn ray_sphere(
    origin: Vec3,
    dir: Vec3,
    center: Vec3,
    radius: f32,
    tmin: f32,
    tmax: f32,
) -> Option<f32> {
    let f = origin - center;
    let a = dir.dot(dir);
    let b = f.dot(dir);
    let r2 = radius * radius;
    let c = f.dot(f) - r2;
    if left_behind(b, c, tmin) {
        return None;
    }
    let l = f - (b / a) * dir;
    let disc = a * (r2 - l.dot(l));
    if disc < 0.0 {
        return None;
    }
    let q = -(b + libm::sqrtf(disc).copysign(b));
    let ta = c / q;
    let tb = q / a;
    let t0 = ta.min(tb);
    let t1 = ta.max(tb);
    if t0 > tmin && t0 < tmax {
        Some(t0)
    } else if t1 > tmin && t1 < tmax {
        Some(t1)
    } else {
        None
    }
}
