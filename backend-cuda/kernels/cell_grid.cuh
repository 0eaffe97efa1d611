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

// In scenes of spheres only, the spheres the walk tests take core's
// sphere_missed_early first (the same answers as ray_sphere alone; rtiow 4.90
// -> 4.57 ms on an H100; core's CPU walk leaves it out, slower there);
// -DPRISM_GRID_EARLY_MISS=0 leaves it out here too, to measure it.
#ifndef PRISM_GRID_EARLY_MISS
#define PRISM_GRID_EARLY_MISS 1
#endif

// Spheres-only scenes: the walk reads each sphere from SceneView::grid_balls
// (one 16-byte load, its slot only when it is hit) instead of its slot and
// then its record (rtiow 4.59 -> 4.45 ms on an H100); -DPRISM_GRID_BALLS=0
// reads the records, to measure it.
#ifndef PRISM_GRID_BALLS
#define PRISM_GRID_BALLS 1
#endif

// 1 (default): the walk takes 1 / d from one approximate reciprocal a component
// (rcp.approx.ftz: at most an ulp off, +-0 to +-inf) instead of the correctly
// rounded division (a reciprocal, three FMAs and a range check each). The
// reciprocals only place the walk's entry and faces, which CELL_GRID_WALK_ROUNDING
// bounds at about four ulps and the padding covers some 800 times over; one
// ulp more leaves the hits, and so every pixel, unchanged. 0 divides, to
// measure it.
#ifndef PRISM_GRID_APPROX_RCP
#define PRISM_GRID_APPROX_RCP 1
#endif

// 1 / x for the walk (see PRISM_GRID_APPROX_RCP).
__device__ __forceinline__ float grid_rcp(float x) {
#if PRISM_GRID_APPROX_RCP
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
#else
    return 1.0f / x;
#endif
}

// Test the sphere `*ball` listed with slot `*slot` (skipped when out of
// range); keep it in `best` when it is hit closer: ray_primitive's test of
// that sphere, whose centre and radius the ball holds.
__device__ __forceinline__ void grid_test_ball(const SceneView& s, const RayPre& pre, float tmin, const float4* ball,
                                               const u32* slot, Hit& best) {
    const float4 b = __ldg(ball);
    if (PRISM_GRID_EARLY_MISS && sphere_missed_early(pre.origin, pre.dir, pre.dir_dot, xyz(b), b.w)) {
        return;
    }
    float t;
    if (ray_sphere(pre.origin, pre.dir, pre.dir_dot, xyz(b), b.w, tmin, best.t, t)) {
        const u32 k = __ldg(slot);
        if (k < s.prim_count) {
            best.t = t;
            best.u = 0.0f;
            best.v = 0.0f;
            best.prim = k;
        }
    }
}

// Test the primitive in `slot` (skipped when out of range); keep it in `best`
// when it is hit closer.
template <int K>
__device__ __forceinline__ void grid_test(const SceneView& s, const RayPre& pre, float tmin, u32 slot, Hit& best) {
    float t, u, v;
    if (PRISM_GRID_EARLY_MISS && K == PRISM_SPHERES && slot < s.prim_count) {
        const float4 a = __ldg(&s.prims[slot].a);
        const float4 b = __ldg(&s.prims[slot].b);
        if (sphere_missed_early(pre.origin, pre.dir, pre.dir_dot, xyz(a), b.x)) {
            return;
        }
    }
    if (slot < s.prim_count && ray_primitive<K>(s, pre, s.prims + slot, tmin, best.t, t, u, v)) {
        best.t = t;
        best.u = u;
        best.v = v;
        best.prim = slot;
    }
}

// A walk through the grid's cells (CellGrid::walk's locals): the ray, the
// current cell, the step and the distance to the next face along each axis,
// and where the walk ends.
struct GridWalk {
    V3 o, inv, lo, cell;
    u32 rx, ry, rz;
    int cx, cy, cz;
    int sx, sy, sz;
    float nx, ny, nz;
    float t1;
};

// The number of the walk's current cell.
__device__ __forceinline__ u32 grid_cell_index(const GridWalk& w) {
    return ((u32)w.cz * w.ry + (u32)w.cy) * w.rx + (u32)w.cx;
}

// Step to the next cell across the nearest face (x, then y, then z on a tie);
// false when the walk ends: the best hit lies before that face, or the ray
// passes t1 or leaves the grid there.
__device__ __forceinline__ bool grid_advance(GridWalk& w, float best_t) {
    const int axis = (w.nx <= w.ny && w.nx <= w.nz) ? 0 : (w.ny <= w.nz ? 1 : 2);
    const float exit = axis == 0 ? w.nx : (axis == 1 ? w.ny : w.nz);
    if (best_t <= exit || !(exit < w.t1)) {
        return false;
    }
    if (axis == 0) {
        w.cx += w.sx;
        w.nx = grid_boundary(w.lo.x, w.cell.x, w.o.x, w.inv.x, w.cx, w.sx);
        return w.cx >= 0 && w.cx < (int)w.rx;
    }
    if (axis == 1) {
        w.cy += w.sy;
        w.ny = grid_boundary(w.lo.y, w.cell.y, w.o.y, w.inv.y, w.cy, w.sy);
        return w.cy >= 0 && w.cy < (int)w.ry;
    }
    w.cz += w.sz;
    w.nz = grid_boundary(w.lo.z, w.cell.z, w.o.z, w.inv.z, w.cz, w.sz);
    return w.cz >= 0 && w.cz < (int)w.rz;
}

// mirrors prism_core::cell_grid::CellGrid::closest_hit: the large primitives,
// then the cells the ray crosses near to far until the best hit lies before the
// end of the current cell. `prim` of the result is the slot; a miss has
// prim == NO_PRIM and t == +inf. Slots out of range are skipped. Core answers a
// ray that starts too far away to walk (CellGrid::walkable) from the tree; the
// host launches the grid kernels only for frames none of whose rays can start
// that far (CellGrid::walkable_from the camera and the scene's bounds), so the
// walk needs no such test.
template <int K>
__device__ __forceinline__ Hit closest_hit_grid(const SceneView& s, const Ray& ray) {
    const RayPre pre = ray_pre<K>(ray.origin, ray.dir);
    const float tmin = ray.tmin;
    Hit best;
    best.t = ray.tmax;
    best.u = 0.0f;
    best.v = 0.0f;
    best.prim = PRISM_NO_PRIM;
    const bool balls = PRISM_GRID_BALLS && K == PRISM_SPHERES && s.grid_balls != nullptr;
    for (u32 k = 0; k < s.grid_large_count; ++k) {
        if (balls) {
            grid_test_ball(s, pre, tmin, s.grid_large_balls + k, s.grid_large + k, best);
        } else {
            grid_test<K>(s, pre, tmin, __ldg(s.grid_large + k), best);
        }
    }
    // CellGrid::walk
    GridWalk w;
    w.o = ray.origin;
    const V3 d = ray.dir;
    w.inv = v3(grid_rcp(d.x), grid_rcp(d.y), grid_rcp(d.z));
    w.lo = v3(s.grid_lo[0], s.grid_lo[1], s.grid_lo[2]);
    w.cell = v3(s.grid_cell[0], s.grid_cell[1], s.grid_cell[2]);
    w.rx = s.grid_res[0];
    w.ry = s.grid_res[1];
    w.rz = s.grid_res[2];
    const V3 hi = w.lo + v3((float)w.rx * w.cell.x, (float)w.ry * w.cell.y, (float)w.rz * w.cell.z);
    // fminf/fmaxf drop the NaN of a 0 * inf, as core's min/max.
    const V3 ta = (w.lo - w.o) * w.inv;
    const V3 tb = (hi - w.o) * w.inv;
    const float t0 = fmaxf(fmaxf(fmaxf(tmin, fminf(ta.x, tb.x)), fminf(ta.y, tb.y)), fminf(ta.z, tb.z));
    w.t1 = fminf(fminf(fminf(best.t, fmaxf(ta.x, tb.x)), fmaxf(ta.y, tb.y)), fmaxf(ta.z, tb.z));
    if (t0 <= w.t1) {
        const V3 p = w.o + d * t0;
        w.cx = grid_cell(p.x, w.lo.x, s.grid_inv_cell[0], w.rx);
        w.cy = grid_cell(p.y, w.lo.y, s.grid_inv_cell[1], w.ry);
        w.cz = grid_cell(p.z, w.lo.z, s.grid_inv_cell[2], w.rz);
        w.sx = grid_step(d.x);
        w.sy = grid_step(d.y);
        w.sz = grid_step(d.z);
        w.nx = grid_boundary(w.lo.x, w.cell.x, w.o.x, w.inv.x, w.cx, w.sx);
        w.ny = grid_boundary(w.lo.y, w.cell.y, w.o.y, w.inv.y, w.cy, w.sy);
        w.nz = grid_boundary(w.lo.z, w.cell.z, w.o.z, w.inv.z, w.cz, w.sz);
        // Each step moves one cell along one axis; the bound also ends a walk
        // that rounding stalls.
        const u32 steps = w.rx + w.ry + w.rz;
#if PRISM_GRID_FLAT_LOOP
        u32 c = grid_cell_index(w);
        u32 first = __ldg(s.grid_offsets + c);
        u32 end = __ldg(s.grid_offsets + c + 1);
        u32 walked = 0;
        for (;;) {
            if (first < end) {
                if (balls) {
                    grid_test_ball(s, pre, tmin, s.grid_balls + first, s.grid_slots + first, best);
                } else {
                    grid_test<K>(s, pre, tmin, __ldg(s.grid_slots + first), best);
                }
                ++first;
                continue;
            }
            if (++walked >= steps || !grid_advance(w, best.t)) {
                break;
            }
            c = grid_cell_index(w);
            first = __ldg(s.grid_offsets + c);
            end = __ldg(s.grid_offsets + c + 1);
        }
#else
        for (u32 n = 0; n < steps; ++n) {
            const u32 c = grid_cell_index(w);
            const u32 end = __ldg(s.grid_offsets + c + 1);
            for (u32 first = __ldg(s.grid_offsets + c); first < end; ++first) {
                if (balls) {
                    grid_test_ball(s, pre, tmin, s.grid_balls + first, s.grid_slots + first, best);
                } else {
                    grid_test<K>(s, pre, tmin, __ldg(s.grid_slots + first), best);
                }
            }
            if (!grid_advance(w, best.t)) {
                break;
            }
        }
#endif
    }
    if (best.prim == PRISM_NO_PRIM) {
        best.t = PRISM_INF;
    }
    return best;
}
