// Closest hits through a uniform grid of cells: mirrors prism_core::cell_grid.
//
// The host uploads a grid with the scene when core's cost model expects it to
// beat the tree (CellGrid::worthwhile) and the tree's octant copies are
// uploaded too; SceneView::grid_offsets is null otherwise, and the host then
// launches the render kernels that walk the tree. The walk's cell and distance
// computations may round differently from core's (contracted products): every
// primitive is listed in the cells its box, widened by CELL_GRID_PAD of the
// grid's size, overlaps, far more than that rounding, so the hits are core's.
#pragma once
#include "traverse.cuh"

// 1 (default): the walk is one loop whose every trip tests one listed
// primitive or steps to the next cell, so lanes of a warp in cells with
// different counts keep stepping together; rtiow 5.6 -> 5.1 ms on an H100
// (bench/RESULTS.md). 0: a loop over cells around a loop over each cell's
// list, as core's walk is written (the same tests in the same order).
#ifndef PRISM_GRID_FLAT_LOOP
#define PRISM_GRID_FLAT_LOOP 1
#endif

// Where the ray o + t d (inv = 1 / d) leaves cell c along one axis, moving
// step (-1, 0, 1): inf when it does not move along the axis
// (prism_core::cell_grid::CellGrid::boundary).
__device__ __forceinline__ float grid_boundary(float lo, float cell, float o, float inv, int c, int step) {
    if (step == 0) {
        return PRISM_INF;
    }
    const int face = c + (step > 0 ? 1 : 0);
    return (lo + (float)face * cell - o) * inv;
}

// The cell of coordinate x along one axis, clamped to the grid.
__device__ __forceinline__ int grid_cell(float x, float lo, float inv_cell, u32 res) {
    const float f = floorf((x - lo) * inv_cell);
    return min(__float2int_rz(fmaxf(f, 0.0f)), (int)res - 1);
}

// The sign of a direction component as a cell step.
__device__ __forceinline__ int grid_step(float d) { return d > 0.0f ? 1 : (d < 0.0f ? -1 : 0); }

// mirrors prism_core::cell_grid::CellGrid::closest_hit: the large primitives,
// then the cells the ray crosses near to far until the best hit lies before the
// end of the current cell. `prim` of the result is the slot; a miss has
// prim == NO_PRIM and t == +inf. Slots out of range are skipped.
template <int K>
__device__ __forceinline__ Hit closest_hit_grid(const SceneView& s, const Ray& ray) {
    const RayPre pre = ray_pre<K>(ray.origin, ray.dir);
    const float tmin = ray.tmin;
    Hit best;
    best.t = ray.tmax;
    best.u = 0.0f;
    best.v = 0.0f;
    best.prim = PRISM_NO_PRIM;
    for (u32 k = 0; k < s.grid_large_count; ++k) {
        const u32 slot = __ldg(s.grid_large + k);
        float t, u, v;
        if (slot < s.prim_count && ray_primitive<K>(pre, s.prims + slot, tmin, best.t, t, u, v)) {
            best.t = t;
            best.u = u;
            best.v = v;
            best.prim = slot;
        }
    }
    // CellGrid::walk
    const V3 o = ray.origin;
    const V3 d = ray.dir;
    const V3 inv = v3(1.0f / d.x, 1.0f / d.y, 1.0f / d.z);
    const V3 lo = v3(s.grid_lo[0], s.grid_lo[1], s.grid_lo[2]);
    const V3 cell = v3(s.grid_cell[0], s.grid_cell[1], s.grid_cell[2]);
    const u32 rx = s.grid_res[0], ry = s.grid_res[1], rz = s.grid_res[2];
    const V3 hi = v3(lo.x + (float)rx * cell.x, lo.y + (float)ry * cell.y, lo.z + (float)rz * cell.z);
    // fminf/fmaxf drop the NaN of a 0 * inf, as core's min/max.
    const V3 ta = (lo - o) * inv;
    const V3 tb = (hi - o) * inv;
    const float t0 = fmaxf(fmaxf(fmaxf(tmin, fminf(ta.x, tb.x)), fminf(ta.y, tb.y)), fminf(ta.z, tb.z));
    const float t1 = fminf(fminf(fminf(best.t, fmaxf(ta.x, tb.x)), fmaxf(ta.y, tb.y)), fmaxf(ta.z, tb.z));
    if (t0 <= t1) {
        const V3 p = o + d * t0;
        int cx = grid_cell(p.x, lo.x, s.grid_inv_cell[0], rx);
        int cy = grid_cell(p.y, lo.y, s.grid_inv_cell[1], ry);
        int cz = grid_cell(p.z, lo.z, s.grid_inv_cell[2], rz);
        const int sx = grid_step(d.x), sy = grid_step(d.y), sz = grid_step(d.z);
        float nx = grid_boundary(lo.x, cell.x, o.x, inv.x, cx, sx);
        float ny = grid_boundary(lo.y, cell.y, o.y, inv.y, cy, sy);
        float nz = grid_boundary(lo.z, cell.z, o.z, inv.z, cz, sz);
        // Each step moves one cell along one axis; the bound also ends a walk
        // that rounding stalls.
        const u32 steps = rx + ry + rz;
#if PRISM_GRID_FLAT_LOOP
        u32 c = ((u32)cz * ry + (u32)cy) * rx + (u32)cx;
        u32 first = __ldg(s.grid_offsets + c);
        u32 end = __ldg(s.grid_offsets + c + 1);
        u32 walked = 0;
        for (;;) {
            if (first < end) {
                const u32 slot = __ldg(s.grid_slots + first);
                float t, u, v;
                if (slot < s.prim_count && ray_primitive<K>(pre, s.prims + slot, tmin, best.t, t, u, v)) {
                    best.t = t;
                    best.u = u;
                    best.v = v;
                    best.prim = slot;
                }
                ++first;
                continue;
            }
            const int axis = (nx <= ny && nx <= nz) ? 0 : (ny <= nz ? 1 : 2);
            const float exit = axis == 0 ? nx : (axis == 1 ? ny : nz);
            if (best.t <= exit || !(exit < t1) || ++walked >= steps) {
                break;
            }
            if (axis == 0) {
                cx += sx;
                if (cx < 0 || cx >= (int)rx) {
                    break;
                }
                nx = grid_boundary(lo.x, cell.x, o.x, inv.x, cx, sx);
            } else if (axis == 1) {
                cy += sy;
                if (cy < 0 || cy >= (int)ry) {
                    break;
                }
                ny = grid_boundary(lo.y, cell.y, o.y, inv.y, cy, sy);
            } else {
                cz += sz;
                if (cz < 0 || cz >= (int)rz) {
                    break;
                }
                nz = grid_boundary(lo.z, cell.z, o.z, inv.z, cz, sz);
            }
            c = ((u32)cz * ry + (u32)cy) * rx + (u32)cx;
            first = __ldg(s.grid_offsets + c);
            end = __ldg(s.grid_offsets + c + 1);
        }
#else
        for (u32 n = 0; n < steps; ++n) {
            const u32 c = ((u32)cz * ry + (u32)cy) * rx + (u32)cx;
            u32 first = __ldg(s.grid_offsets + c);
            const u32 end = __ldg(s.grid_offsets + c + 1);
            for (; first < end; ++first) {
                const u32 slot = __ldg(s.grid_slots + first);
                float t, u, v;
                if (slot < s.prim_count && ray_primitive<K>(pre, s.prims + slot, tmin, best.t, t, u, v)) {
                    best.t = t;
                    best.u = u;
                    best.v = v;
                    best.prim = slot;
                }
            }
            // The nearest face crossed next (x, then y, then z on a tie).
            const int axis = (nx <= ny && nx <= nz) ? 0 : (ny <= nz ? 1 : 2);
            const float exit = axis == 0 ? nx : (axis == 1 ? ny : nz);
            if (best.t <= exit || !(exit < t1)) {
                break;
            }
            if (axis == 0) {
                cx += sx;
                if (cx < 0 || cx >= (int)rx) {
                    break;
                }
                nx = grid_boundary(lo.x, cell.x, o.x, inv.x, cx, sx);
            } else if (axis == 1) {
                cy += sy;
                if (cy < 0 || cy >= (int)ry) {
                    break;
                }
                ny = grid_boundary(lo.y, cell.y, o.y, inv.y, cy, sy);
            } else {
                cz += sz;
                if (cz < 0 || cz >= (int)rz) {
                    break;
                }
                nz = grid_boundary(lo.z, cell.z, o.z, inv.z, cz, sz);
            }
        }
#endif
    }
    if (best.prim == PRISM_NO_PRIM) {
        best.t = PRISM_INF;
    }
    return best;
}
