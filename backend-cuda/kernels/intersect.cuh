// Ray-primitive intersection: mirrors prism_core::intersect.
//
// Floating-point contract: NVRTC contracts a * b + c into one FMA by default.
// The slab test has no a * b + c and rounds exactly as core's. The watertight
// triangle test and the sphere test are evaluated without contraction
// (__fmul_rn), so both give core's bits exactly: the triangle test's edge
// functions stay exactly antisymmetric (which is what makes it watertight), and
// a ray that starts on a sphere (where c = |f|^2 - r^2 cancels) gets core's t,
// not one an FMA moved by 1e-4 relative.
#pragma once
#include "prism_types.cuh"

#define PRISM_INF __int_as_float(0x7f800000)

// Select component k (0, 1, 2) of a vector without a local-memory array.
__device__ __forceinline__ float pick(V3 a, int k) { return k == 0 ? a.x : (k == 1 ? a.y : a.z); }

// mirrors prism_core::intersect::RayPre
struct RayPre {
    V3 origin;
    V3 dir;
    V3 inv_dir;
    // dot(dir, dir), rounded as core's sphere test computes it (spheres only).
    float dir_dot;
    // Bit k is set when inv_dir[k] < 0: which of the tree's eight octant
    // copies holds this ray's near planes first (see ray_aabb_octant).
    u32 octant;
    int kz, kx, ky;
    V3 shear;
    // origin[kx], origin[ky], origin[kz]: `(v - origin)[k] == v[k] - origin[k]`
    // exactly, so the triangle test permutes each vertex once and subtracts these.
    float okx, oky, okz;
};

// `c` moved away from zero to +-MIN_DIR_COMPONENT (the closure `safe` in core).
__device__ __forceinline__ float safe_dir(float c) {
    return fabsf(c) < PRISM_MIN_DIR_COMPONENT ? copysignf(PRISM_MIN_DIR_COMPONENT, c) : c;
}

// Which primitive kinds a scene holds: kernels are compiled once per case, so a
// scene of spheres only (or triangles only) runs code without the other kind's
// test, its kind checks, or (for spheres) the watertight test's ray constants.
#define PRISM_SPHERES 1
#define PRISM_TRIANGLES 2
#define PRISM_MIXED 3
// The scene holds heightfields (with PRISM_MIXED: heightfield.cuh's walk is
// compiled in only then, so scenes without one keep their code and registers).
#define PRISM_HEIGHTFIELDS 8

// The triangle test's part of prism_core::intersect::RayPre::new, from
// pre.origin and pre.dir: the axis permutation, the shear and the permuted
// origin.
__device__ __forceinline__ void ray_pre_triangles(RayPre& pre) {
    const V3 origin = pre.origin;
    const V3 d = pre.dir;
    // Woop, Benthin, Wald 2013: permute so that z is the dominant axis.
    const V3 ad = vabs(d);
    const int kz = ad.x > ad.y ? (ad.x > ad.z ? 0 : 2) : (ad.y > ad.z ? 1 : 2);
    int kx = kz == 2 ? 0 : kz + 1;
    int ky = kx == 2 ? 0 : kx + 1;
    if (pick(d, kz) < 0.0f) {
        const int t = kx;
        kx = ky;
        ky = t;
    }
    pre.kz = kz;
    pre.kx = kx;
    pre.ky = ky;
    const float dkz = pick(d, kz);
    pre.shear = v3(pick(d, kx) / dkz, pick(d, ky) / dkz, 1.0f / dkz);
    pre.okx = pick(origin, kx);
    pre.oky = pick(origin, ky);
    pre.okz = pick(origin, kz);
}

// mirrors prism_core::intersect::RayPre::new
//
// The permutation and shear only serve the triangle test: with K == PRISM_SPHERES
// they are not computed (their values would never be read), and a walk may
// leave them for later (ray_pre<PRISM_SPHERES & K>, then ray_pre_triangles
// once a leaf is reached: the two-level walks, whose object rays mostly leave
// an instance's tree without testing a primitive).
template <int K>
__device__ __forceinline__ RayPre ray_pre(V3 origin, V3 d) {
    RayPre pre;
    pre.origin = origin;
    pre.dir = d;
    pre.inv_dir = v3(1.0f / safe_dir(d.x), 1.0f / safe_dir(d.y), 1.0f / safe_dir(d.z));
    pre.octant = (pre.inv_dir.x < 0.0f ? 1u : 0u) | (pre.inv_dir.y < 0.0f ? 2u : 0u) | (pre.inv_dir.z < 0.0f ? 4u : 0u);
    if (K & PRISM_SPHERES) {
        pre.dir_dot = dot_rn(d, d);
    }
    if (K & PRISM_TRIANGLES) {
        ray_pre_triangles(pre);
    }
    return pre;
}

// mirrors prism_core::intersect::widen_exit: the exit distance moved outwards by
// the rounding margin (towards +inf whatever its sign).
__device__ __forceinline__ float widen_exit(float t) {
    return t * (t < 0.0f ? PRISM_SLAB_EXIT_SCALE_NEGATIVE : PRISM_SLAB_EXIT_SCALE);
}

// mirrors prism_core::intersect::ray_aabb
//
// Ize's form (bound - origin) * inv_dir, as core: its rounding error is relative
// to t, which SLAB_EXIT_SCALE covers (the one-FMA form is not conservative far
// from the world origin). No a * b + c here, so no contraction: the same
// roundings as core. glam's Vec3::min/max are compare-selects; fminf/fmaxf (one
// instruction each) give the same result for every input that is not NaN, and
// (bound - origin) * inv_dir is never NaN: bounds are finite or +inf, origins
// finite, and inv_dir finite and non-zero.
//
// TMIN_NONNEG: the caller's tmin is >= 0 (every ray the integrators make). Then
// t_enter >= 0, and widen_exit's choice of scale decides nothing: for an exit
// t < 0 both t * SLAB_EXIT_SCALE_NEGATIVE and t * SLAB_EXIT_SCALE are < 0 (no
// product of a negative t by a scale near 1 rounds to zero), so the box is
// missed either way; for t >= 0 the scales agree. The sign test is left out.
// The entry max(nx, ny, nz, tmin) is then also taken on the values' bits as
// signed integers (one three-way VIMNMX3 and one IMNMX on sm_90, where floats
// take three FMNMX): tmin is +0 or positive, every float >= +0 keeps its order
// as an integer and every negative float (-0 included) sorts below them, so the
// largest integer is the largest float, the same value (-DPRISM_SLAB_INT_ENTRY=0
// takes the float form, to measure it).
#ifndef PRISM_SLAB_INT_ENTRY
#define PRISM_SLAB_INT_ENTRY 1
#endif
// The entry distance max(nx, ny, nz, tmin) (see above for the integer form).
template <bool TMIN_NONNEG>
__device__ __forceinline__ float slab_entry(float nx, float ny, float nz, float tmin) {
#if PRISM_SLAB_INT_ENTRY
    if (TMIN_NONNEG) {
        return __int_as_float(
            max(__vimax3_s32(__float_as_int(nx), __float_as_int(ny), __float_as_int(nz)), __float_as_int(tmin)));
    }
#endif
    return fmaxf(fmaxf(fmaxf(nx, ny), nz), tmin);
}

// The distances (b - origin) * inv_dir to the planes through b, per axis.
__device__ __forceinline__ V3 plane_distances(const RayPre& pre, V3 b) { return (b - pre.origin) * pre.inv_dir; }

// The end of ray_aabb from the near and far planes' distances: the entry
// max(near, tmin) and the widened exit min(far, tmax); the entry, or +inf when
// the box is missed.
template <bool TMIN_NONNEG>
__device__ __forceinline__ float slab_interval(V3 near, V3 far, float tmin, float tmax) {
    const float t_enter = slab_entry<TMIN_NONNEG>(near.x, near.y, near.z, tmin);
    const float exit = fminf(fminf(fminf(far.x, far.y), far.z), tmax);
    const float t_exit = TMIN_NONNEG ? exit * PRISM_SLAB_EXIT_SCALE : widen_exit(exit);
    return t_enter <= t_exit ? t_enter : PRISM_INF;
}

template <bool TMIN_NONNEG>
__device__ __forceinline__ float ray_aabb(const RayPre& pre, V3 lo, V3 hi, float tmin, float tmax) {
    const V3 t0 = plane_distances(pre, lo);
    const V3 t1 = plane_distances(pre, hi);
    const V3 near = v3(fminf(t0.x, t1.x), fminf(t0.y, t1.y), fminf(t0.z, t1.z));
    const V3 far = v3(fmaxf(t0.x, t1.x), fmaxf(t0.y, t1.y), fmaxf(t0.z, t1.z));
    return slab_interval<TMIN_NONNEG>(near, far, tmin, tmax);
}

// ray_aabb on a box from the octant copy of the tree for this ray (`pre.octant`),
// whose bounds the host swapped on every axis where inv_dir < 0: `nb` holds each
// axis's near plane and `fb` its far one, so the per-axis min/max of ray_aabb
// are gone (six FMNMX a box, on the SM's half-rate ALU pipe). Core's values
// exactly: rounding is monotonic, so with lo <= hi, (lo - o) <= (hi - o), and
// multiplying by inv_dir keeps that order when inv_dir > 0 and reverses it when
// inv_dir < 0; min(t_lo, t_hi) is therefore the near plane's t and max the far
// one's (equal values when they tie). backend-cuda/tests/slab_entry.rs checks it.
template <bool TMIN_NONNEG>
__device__ __forceinline__ float ray_aabb_octant(const RayPre& pre, V3 nb, V3 fb, float tmin, float tmax) {
    return slab_interval<TMIN_NONNEG>(plane_distances(pre, nb), plane_distances(pre, fb), tmin, tmax);
}

// mirrors prism_core::intersect::ray_triangle
//
// Returns whether the ray hits within (tmin, tmax); on a hit writes t, u, v.
// No contraction: every product is rounded on its own, as in core.
__device__ __forceinline__ bool ray_triangle(const RayPre& pre, V3 v0, V3 v1, V3 v2, float tmin, float tmax,
                                             float& t_out, float& u_out, float& v_out) {
    const int kx = pre.kx, ky = pre.ky, kz = pre.kz;
    // a = v0 - origin, read in the permuted axes (same values as a[kx], a[ky], a[kz]).
    const float a_kx = pick(v0, kx) - pre.okx, a_ky = pick(v0, ky) - pre.oky, a_kz = pick(v0, kz) - pre.okz;
    const float b_kx = pick(v1, kx) - pre.okx, b_ky = pick(v1, ky) - pre.oky, b_kz = pick(v1, kz) - pre.okz;
    const float c_kx = pick(v2, kx) - pre.okx, c_ky = pick(v2, ky) - pre.oky, c_kz = pick(v2, kz) - pre.okz;
    const float sx = pre.shear.x, sy = pre.shear.y, sz = pre.shear.z;
    const float ax = a_kx - __fmul_rn(sx, a_kz);
    const float ay = a_ky - __fmul_rn(sy, a_kz);
    const float bx = b_kx - __fmul_rn(sx, b_kz);
    const float by = b_ky - __fmul_rn(sy, b_kz);
    const float cx = c_kx - __fmul_rn(sx, c_kz);
    const float cy = c_ky - __fmul_rn(sy, c_kz);
    const float u = __fmul_rn(cx, by) - __fmul_rn(cy, bx);
    const float v = __fmul_rn(ax, cy) - __fmul_rn(ay, cx);
    const float w = __fmul_rn(bx, ay) - __fmul_rn(by, ax);
    if ((u < 0.0f || v < 0.0f || w < 0.0f) && (u > 0.0f || v > 0.0f || w > 0.0f)) {
        return false;
    }
    const float det = u + v + w;
    if (det == 0.0f) {
        return false;
    }
    const float az = __fmul_rn(sz, a_kz);
    const float bz = __fmul_rn(sz, b_kz);
    const float cz = __fmul_rn(sz, c_kz);
    const float t_scaled = __fmul_rn(u, az) + __fmul_rn(v, bz) + __fmul_rn(w, cz);
    const float rcp_det = 1.0f / det;
    const float t = __fmul_rn(t_scaled, rcp_det);
    if (t > tmin && t < tmax) {
        t_out = t;
        u_out = __fmul_rn(v, rcp_det);
        v_out = __fmul_rn(w, rcp_det);
        return true;
    }
    return false;
}

// mirrors prism_core::intersect::sphere_missed_early: whether ray_sphere
// surely misses, before its division and square root; `a` is
// RayPre::dir_dot. Its products may contract into FMAs (three instructions a
// dot product where ray_sphere's exactly rounded dot_rn takes five; sharing
// ray_sphere's values instead measured 3% slower on rtiow): the margin
// (SPHERE_EARLY_MISS_MARGIN of a |f|^2) is some 100 times either rounding.
__device__ __forceinline__ bool sphere_missed_early(V3 origin, V3 dir, float a, V3 center, float radius) {
    const V3 f = origin - center;
    const float b = dot(f, dir);
    const float aff = a * dot(f, f);
    return aff - b * b - a * (radius * radius) > PRISM_SPHERE_EARLY_MISS_MARGIN * aff;
}

// mirrors prism_core::intersect::sphere_left_behind, on ray_sphere's own b and
// c: whether a ray leaving the sphere behind (away from its centre, from outside
// it or from inside by less than tmin reaches) surely misses it. It costs a
// compare or two; a ray spawned on a sphere (a bounce, a mirror or a shadow
// ray) is spared the division, the square root and two more divisions of the
// test of its own sphere. Core's ray_sphere returns on it too;
// -DPRISM_SPHERE_LEFT_BEHIND=0 leaves it out here, to measure it (the answers
// are the same either way).
#ifndef PRISM_SPHERE_LEFT_BEHIND
#define PRISM_SPHERE_LEFT_BEHIND 1
#endif
__device__ __forceinline__ bool sphere_left_behind(float b, float c, float tmin) {
    return tmin >= 0.0f && b > 0.0f && -c < __fmul_rn(PRISM_SPHERE_LEFT_BEHIND_SCALE, __fmul_rn(tmin, b));
}

// mirrors prism_core::intersect::ray_sphere
//
// Returns whether the ray meets the sphere within (tmin, tmax); writes the nearest t.
// `a` is dot_rn(dir, dir) (RayPre::dir_dot: the same for every sphere a ray meets).
// c is computed first, as in core, for sphere_left_behind (no product of it can
// contract into an FMA).
__device__ __forceinline__ bool ray_sphere(V3 origin, V3 dir, float a, V3 center, float radius, float tmin,
                                           float tmax, float& t_out) {
    const V3 f = origin - center;
    const float b = dot_rn(f, dir);
    const float r2 = __fmul_rn(radius, radius);
    const float c = dot_rn(f, f) - r2;
    if (PRISM_SPHERE_LEFT_BEHIND && sphere_left_behind(b, c, tmin)) {
        return false;
    }
    const float s = b / a;
    const V3 l = f - v3(__fmul_rn(s, dir.x), __fmul_rn(s, dir.y), __fmul_rn(s, dir.z));
    const float disc = a * (r2 - dot_rn(l, l));
    if (disc < 0.0f) {
        return false;
    }
    const float q = -(b + copysignf(sqrtf(disc), b));
    const float ta = c / q;
    const float tb = q / a;
    const float t0 = fminf(ta, tb);
    const float t1 = fmaxf(ta, tb);
    if (t0 > tmin && t0 < tmax) {
        t_out = t0;
        return true;
    }
    if (t1 > tmin && t1 < tmax) {
        t_out = t1;
        return true;
    }
    return false;
}
