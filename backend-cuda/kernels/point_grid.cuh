// Candidate lists for rays through one point: mirrors prism_core::point_grid.
//
// The host uploads the lists of the cells around the scene's light with the
// scene; SceneView::light_grid is null when there are none (the scene has more
// than POINT_GRID_MAX_PRIMS primitives, or KernelConfig::light_grid is off),
// and shadow rays walk the tree.
#pragma once
#include "traverse.cuh"

// mirrors prism_core::point_grid::point_grid_cell: the same face choice and the
// same roundings (the product u * r rounded on its own, as core's, not fused
// with the + 1); -1 for a zero or non-finite direction.
__device__ __forceinline__ int point_grid_cell(V3 d) {
    if (!(isfinite(d.x) && isfinite(d.y) && isfinite(d.z))) {
        return -1;
    }
    const float ax = fabsf(d.x), ay = fabsf(d.y), az = fabsf(d.z);
    int face;
    float major, u, v;
    if (ax >= ay && ax >= az) {
        face = d.x < 0.0f ? 1 : 0;
        major = ax;
        u = d.y;
        v = d.z;
    } else if (ay >= az) {
        face = d.y < 0.0f ? 3 : 2;
        major = ay;
        u = d.x;
        v = d.z;
    } else {
        face = d.z < 0.0f ? 5 : 4;
        major = az;
        u = d.x;
        v = d.y;
    }
    if (major == 0.0f) {
        return -1;
    }
    const float r = 1.0f / major;
    const int n = PRISM_POINT_GRID_SIDE;
    const float scale = (float)n * 0.5f;
    const int cu = min(max(__float2int_rz((__fmul_rn(u, r) + 1.0f) * scale), 0), n - 1);
    const int cv = min(max(__float2int_rz((__fmul_rn(v, r) + 1.0f) * scale), 0), n - 1);
    return (face * n + cv) * n + cu;
}

// The candidate count of the cell of `dir`, or PRISM_POINT_GRID_FULL when the
// ray must walk the tree (a full cell or a bad direction).
__device__ __forceinline__ u32 point_grid_count(const PointGridCell* grid, V3 dir, const PointGridCell*& cell) {
    const int c = point_grid_cell(dir);
    if (c < 0) {
        return PRISM_POINT_GRID_FULL;
    }
    cell = grid + c;
    return __ldg(&cell->count);
}

// mirrors prism_core::point_grid::any_hit_listed: whether anything lies on the
// shadow ray `ray` (unit `dir` towards the grid's point, which it reaches at
// tmax), from the candidates of the cell of -dir: 1 or 0, or -1 when the ray
// must walk the tree (a full cell, a bad direction, a segment longer than the
// grid's reach, a slot out of range). The length test may round differently
// from core's (contracted products) only where the segment's length is within
// rounding of the reach, which is itself 0.1% beyond the farthest primitive:
// either answer is then right.
template <int K>
__device__ __forceinline__ int any_hit_listed(const SceneView& s, const PointGridCell* grid, float reach_squared,
                                              const Ray& ray) {
    const float length_squared = dot(ray.dir, ray.dir) * (ray.tmax * ray.tmax);
    if (!(length_squared <= reach_squared)) {
        return -1;
    }
    const PointGridCell* cell = nullptr;
    const u32 count = point_grid_count(grid, -ray.dir, cell);
    if (count == PRISM_POINT_GRID_FULL) {
        return -1;
    }
    const RayPre pre = ray_pre<K>(ray.origin, ray.dir);
    for (u32 k = 0; k < count; ++k) {
        const u32 slot = __ldg(cell->slots + k);
        if (slot >= s.prim_count) {
            return -1;
        }
        float t, u, v;
        if (ray_primitive<K>(s, pre, s.prims + slot, ray.tmin, ray.tmax, t, u, v)) {
            return 1;
        }
    }
    return 0;
}
