// The tree over a two-level scene's instances, rebuilt on the device after a
// frame of moves: mirrors prism_core::placement (the host's side), and
// prism_core::instance::{world_to_object, gpu_instance, world_bounds} and the
// Morton top builder (prism_core::top_level) bit for bit, so that the device
// holds the records, world boxes and tree the host would have uploaded.
//
// Launches (src/backend/top_build.rs), on one stream:
//   prism_top_place   a thread a move: the new record and world box, aside;
//                     a refused transform lowers `status` to its move's index
//   prism_top_commit  a thread a move: its record and world box into place,
//                     unless a move was refused (then the tree built below is
//                     the one the instances had, and the host, reading
//                     `status` at the end, gives the update's error)
//   prism_top_boxes   a thread a live instance: its box in key order, the
//                     centres' bounds and the scene's bounds
//   then the fast build's codes, sort, tree (names: the instance a slot
//   holds), bottom-up pass (leaves of one) and emit, into the top tree.
//
// The Morton top builder splits a run of equal codes where Karras's radix
// tree over (code, position) keys does, so the fast build's passes give its
// tree (prism_core::top_level's morton_splits_are_the_radix_trees).
#pragma once
#include "fast_build.cuh"

// mirrors prism_core::placement::GpuMove
struct __align__(16) GpuMove {
    float4 rows[3];  // object-to-world rows (m_k0, m_k1, m_k2, t_k)
    uint4 info;      // instance, its geometry's root, mask, material override
    float4 lo;       // the geometry's object box: min.xyz, max.x
    float4 hi;       // max.yz, 0, 0
};
static_assert(sizeof(GpuMove) == 96, "GpuMove differs from prism_core::placement::GpuMove");

// mirrors prism_core::instance::MAX_TRANSFORM_CONDITION, squared
#define PRISM_MAX_CONDITION2 1e12

struct D3 {
    double x, y, z;
};

// glam's DVec3::cross, every product and difference rounded on its own.
__device__ __forceinline__ D3 d3_cross(D3 a, D3 b) {
    return {__dsub_rn(__dmul_rn(a.y, b.z), __dmul_rn(b.y, a.z)), __dsub_rn(__dmul_rn(a.z, b.x), __dmul_rn(b.z, a.x)),
            __dsub_rn(__dmul_rn(a.x, b.y), __dmul_rn(b.x, a.y))};
}

// glam's DVec3::dot: (x x' + y y') + z z'.
__device__ __forceinline__ double d3_dot(D3 a, D3 b) {
    return __dadd_rn(__dadd_rn(__dmul_rn(a.x, b.x), __dmul_rn(a.y, b.y)), __dmul_rn(a.z, b.z));
}

__device__ __forceinline__ D3 d3_scale(D3 a, double s) {
    return {__dmul_rn(a.x, s), __dmul_rn(a.y, s), __dmul_rn(a.z, s)};
}

// glam's Vec3A dot (SSE: the three products, then (x + y) + z).
__device__ __forceinline__ float f3_dot(V3 a, V3 b) {
    return __fadd_rn(__fadd_rn(__fmul_rn(a.x, b.x), __fmul_rn(a.y, b.y)), __fmul_rn(a.z, b.z));
}

// glam's Mat3A * Vec3A on one row k of the matrix whose columns have row k
// (cx, cy, cz): ((cx v.x + cy v.y) + cz v.z).
__device__ __forceinline__ float f3_row(float cx, float cy, float cz, V3 v) {
    return __fadd_rn(__fadd_rn(__fmul_rn(cx, v.x), __fmul_rn(cy, v.y)), __fmul_rn(cz, v.z));
}

// mirrors prism_core::two_level::TwoLevel::place_parts for one move: false
// when world_to_object refuses the transform.
__device__ __forceinline__ bool top_place_one(const GpuMove& m, GpuInstance& record, float4& world_lo,
                                              float4& world_hi) {
    const float4 r0 = m.rows[0], r1 = m.rows[1], r2 = m.rows[2];
    // Affine3A::is_finite
    const float all[12] = {r0.x, r0.y, r0.z, r0.w, r1.x, r1.y, r1.z, r1.w, r2.x, r2.y, r2.z, r2.w};
    for (int k = 0; k < 12; ++k) {
        if (!isfinite(all[k])) {
            return false;
        }
    }
    // world_to_object: the matrix's columns in f64.
    const D3 x = {(double)r0.x, (double)r1.x, (double)r2.x};
    const D3 y = {(double)r0.y, (double)r1.y, (double)r2.y};
    const D3 z = {(double)r0.z, (double)r1.z, (double)r2.z};
    const D3 yz = d3_cross(y, z), zx = d3_cross(z, x), xy = d3_cross(x, y);
    const double det = d3_dot(x, yz);
    if (det == 0.0 || !isfinite(det)) {
        return false;
    }
    const double r = __ddiv_rn(1.0, det);
    // The inverse's columns are the transpose of (yz r, zx r, xy r).
    const D3 c0 = d3_scale(yz, r), c1 = d3_scale(zx, r), c2 = d3_scale(xy, r);
    const D3 ix = {c0.x, c1.x, c2.x}, iy = {c0.y, c1.y, c2.y}, iz = {c0.z, c1.z, c2.z};
    const double inv_norm2 = __dadd_rn(__dadd_rn(d3_dot(ix, ix), d3_dot(iy, iy)), d3_dot(iz, iz));
    const double m_norm2 = __dadd_rn(__dadd_rn(d3_dot(x, x), d3_dot(y, y)), d3_dot(z, z));
    const double condition2 = __dmul_rn(m_norm2, inv_norm2);
    if (isnan(condition2) || condition2 > PRISM_MAX_CONDITION2) {
        return false;
    }
    // -(inv * t): DMat3::mul_vec3, ((ix t.x + iy t.y) + iz t.z), negated.
    const double tx = (double)r0.w, ty = (double)r1.w, tz = (double)r2.w;
    const double t[3] = {
        -__dadd_rn(__dadd_rn(__dmul_rn(ix.x, tx), __dmul_rn(iy.x, ty)), __dmul_rn(iz.x, tz)),
        -__dadd_rn(__dadd_rn(__dmul_rn(ix.y, tx), __dmul_rn(iy.y, ty)), __dmul_rn(iz.y, tz)),
        -__dadd_rn(__dadd_rn(__dmul_rn(ix.z, tx), __dmul_rn(iy.z, ty)), __dmul_rn(iz.z, tz))};
    // gpu_instance: row k is (ix[k], iy[k], iz[k], t[k]), each rounded to f32.
    record.world_to_object[0] =
        make_float4(__double2float_rn(ix.x), __double2float_rn(iy.x), __double2float_rn(iz.x), __double2float_rn(t[0]));
    record.world_to_object[1] =
        make_float4(__double2float_rn(ix.y), __double2float_rn(iy.y), __double2float_rn(iz.y), __double2float_rn(t[1]));
    record.world_to_object[2] =
        make_float4(__double2float_rn(ix.z), __double2float_rn(iy.z), __double2float_rn(iz.z), __double2float_rn(t[2]));
    const V3 fx = v3(r0.x, r1.x, r2.x), fy = v3(r0.y, r1.y, r2.y), fz = v3(r0.z, r1.z, r2.z);
    const float dxy = fabsf(f3_dot(fx, fy)), dyz = fabsf(f3_dot(fy, fz)), dzx = fabsf(f3_dot(fz, fx));
    const float gx = __fadd_rn(__fadd_rn(f3_dot(fx, fx), dxy), dzx);
    const float gy = __fadd_rn(__fadd_rn(f3_dot(fy, fy), dxy), dyz);
    const float gz = __fadd_rn(__fadd_rn(f3_dot(fz, fz), dyz), dzx);
    record.info = make_float4(__uint_as_float(m.info.y), __uint_as_float(m.info.z), __uint_as_float(m.info.w),
                              __fsqrt_rn(fmaxf(fmaxf(gx, gy), gz)));
    // world_bounds(transform, geometry bounds)
    const V3 lo = v3(m.lo.x, m.lo.y, m.lo.z), hi = v3(m.lo.w, m.hi.x, m.hi.y);
    if (lo.x > hi.x || lo.y > hi.y || lo.z > hi.z) {
        world_lo = make_float4(PRISM_INF, PRISM_INF, PRISM_INF, 0.0f);
        world_hi = make_float4(-PRISM_INF, -PRISM_INF, -PRISM_INF, 0.0f);
        return true;
    }
    const V3 c = v3(__fmul_rn(__fadd_rn(lo.x, hi.x), 0.5f), __fmul_rn(__fadd_rn(lo.y, hi.y), 0.5f),
                    __fmul_rn(__fadd_rn(lo.z, hi.z), 0.5f));
    const V3 e = v3(__fmul_rn(__fsub_rn(hi.x, lo.x), 0.5f), __fmul_rn(__fsub_rn(hi.y, lo.y), 0.5f),
                    __fmul_rn(__fsub_rn(hi.z, lo.z), 0.5f));
    const V3 ce = v3(__fadd_rn(fabsf(c.x), e.x), __fadd_rn(fabsf(c.y), e.y), __fadd_rn(fabsf(c.z), e.z));
    // Row k of M is (r_k.x, r_k.y, r_k.z); of |M| their magnitudes.
    const float4 rows[3] = {r0, r1, r2};
    float out_lo[3], out_hi[3];
    for (int k = 0; k < 3; ++k) {
        const float4 rk = rows[k];
        const float wc = __fadd_rn(f3_row(rk.x, rk.y, rk.z, c), rk.w);
        const float we = f3_row(fabsf(rk.x), fabsf(rk.y), fabsf(rk.z), e);
        const float scale = __fadd_rn(f3_row(fabsf(rk.x), fabsf(rk.y), fabsf(rk.z), ce), fabsf(rk.w));
        // 4 f32::EPSILON = 2^-21.
        const float pad = __fadd_rn(we, __fmul_rn(scale, 4.76837158203125e-7f));
        const float l = __fsub_rn(wc, pad), h = __fadd_rn(wc, pad);
        out_lo[k] = isnan(l) ? -PRISM_INF : l;
        out_hi[k] = isnan(h) ? PRISM_INF : h;
    }
    world_lo = make_float4(out_lo[0], out_lo[1], out_lo[2], 0.0f);
    world_hi = make_float4(out_hi[0], out_hi[1], out_hi[2], 0.0f);
    return true;
}

// Each move's record and world box into `placed` / `placed_world` (two rows
// a move); `status` (u32::MAX before the launch) ends as the first refused
// move's index.
__device__ __forceinline__ void top_place(const GpuMove* __restrict__ moves, u32 count,
                                          GpuInstance* __restrict__ placed, float4* __restrict__ placed_world,
                                          u32* status) {
    const u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= count) {
        return;
    }
    GpuInstance record;
    float4 lo, hi;
    if (!top_place_one(moves[k], record, lo, hi)) {
        atomicMin(status, k);
        return;
    }
    placed[k] = record;
    placed_world[2u * k] = lo;
    placed_world[2u * k + 1u] = hi;
}

// Each move's record and world box into the instance's place (no instance is
// moved twice: the host leaves such updates to itself), unless a move was
// refused: then nothing moves, and the passes after this one build the tree
// the instances had (the same boxes give the same tree).
__device__ __forceinline__ void top_commit(const GpuMove* __restrict__ moves, u32 count,
                                           const GpuInstance* __restrict__ placed,
                                           const float4* __restrict__ placed_world, GpuInstance* __restrict__ records,
                                           float4* __restrict__ world, const u32* __restrict__ status) {
    const u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= count || *status != 0xFFFFFFFFu) {
        return;
    }
    const u32 i = moves[k].info.x;
    records[i] = placed[k];
    world[2u * i] = placed_world[2u * k];
    world[2u * i + 1u] = placed_world[2u * k + 1u];
}

// Live instance `t`'s world box as key `t`'s box (the Morton builder's keys
// before their sort, in index order), the bounds of the boxes' centres
// (core: the fold of Aabb::grow over Aabb::center) and of the boxes
// themselves (core: TwoLevel::world_bounds, the scene's bounds).
__device__ __forceinline__ void top_boxes(const u32* __restrict__ live, u32 n, const float4* __restrict__ world,
                                          float4* __restrict__ boxes, u32* centre_bounds, u32* scene_bounds) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    V3 clo = v3s(PRISM_INF), chi = v3s(-PRISM_INF);
    V3 blo = v3s(PRISM_INF), bhi = v3s(-PRISM_INF);
    if (t < n) {
        const u32 i = __ldg(live + t);
        const float4 l = world[2u * i], h = world[2u * i + 1u];
        boxes[2u * t] = l;
        boxes[2u * t + 1u] = h;
        clo = chi = fast_centre(l, h);
        blo = xyz(l);
        bhi = xyz(h);
    }
    fast_reduce_bounds(clo, chi, centre_bounds);
    fast_reduce_bounds(blo, bhi, scene_bounds);
}
