// Heightfields: mirrors prism_core::heightfield (ray_heightfield, the scalar
// walk, with its Walk methods as functions of HfWalk).
//
// A heightfield is one primitive record of kind PRISM_KIND_HEIGHTFIELD (its
// box, its descriptor's index in c.x's bits, its size in c.y); the walk reads
// its GpuHeightfield in SceneView::heightfields and its pyramid of maximum
// heights in SceneView::heights (every heightfield's levels, one after the
// other). Its hits are core's bits: every value below is core's expression in
// core's order, products that meet an addition rounded on their own
// (__fmul_rn, no FMA), f32 -> u32 conversions truncating and saturating
// (__float2uint_rz: NaN and negative values give 0, as Rust's `as u32`),
// u32 -> f32 rounding to nearest (as Rust's `as f32`).
//
// A hit carries its cell and face to the hit writer in the u and v words of
// the walks' Hit (v = the cell's bits, u = the face's: a heightfield hit's u
// and v are 0 in core, and these words are only moved, never computed on),
// so the traversals keep their registers; store_hit (batch.cuh) and surface
// (integrator.cuh) read them back for a heightfield's slot and write u = v = 0.
#pragma once
#include "intersect.cuh"

// mirrors prism_core::heightfield::FACE_TOP and the other faces
#define PRISM_FACE_TOP 0u
#define PRISM_FACE_BOTTOM 1u
#define PRISM_FACE_NEG_X 2u
#define PRISM_FACE_POS_X 3u
#define PRISM_FACE_NEG_Z 4u
#define PRISM_FACE_POS_Z 5u

// mirrors prism_core::heightfield::face_normal
__device__ __forceinline__ V3 face_normal(u32 face) {
    switch (face) {
        case PRISM_FACE_TOP: return v3(0.0f, 1.0f, 0.0f);
        case PRISM_FACE_BOTTOM: return v3(0.0f, -1.0f, 0.0f);
        case PRISM_FACE_NEG_X: return v3(-1.0f, 0.0f, 0.0f);
        case PRISM_FACE_POS_X: return v3(1.0f, 0.0f, 0.0f);
        case PRISM_FACE_NEG_Z: return v3(0.0f, 0.0f, -1.0f);
        case PRISM_FACE_POS_Z: return v3(0.0f, 0.0f, 1.0f);
        default: return v3(0.0f, 0.0f, 0.0f);
    }
}

// mirrors prism_core::heightfield::level_cells
__device__ __forceinline__ u32 hf_level_cells(u32 n, u32 level) { return ((n - 1u) >> level) + 1u; }

// mirrors prism_core::heightfield::Slabs (with near and far)
struct HfSlabs {
    float txn, txf, tyn, tyf, tzn, tzf;
    __device__ __forceinline__ float near() const { return fmaxf(fmaxf(txn, tzn), tyn); }
    __device__ __forceinline__ float far() const { return fminf(fminf(txf, tzf), tyf); }
};

// mirrors prism_core::heightfield::HeightfieldHit (found: Some)
struct HfHit {
    bool found;
    float t;
    u32 cell;
    u32 face;
};

__device__ __forceinline__ HfHit hf_none() {
    HfHit h;
    h.found = false;
    h.t = 0.0f;
    h.cell = 0u;
    h.face = 0u;
    return h;
}

// mirrors prism_core::heightfield::Walk: one ray's walk over one heightfield.
struct HfWalk {
    const float* heights;
    u64 height_count;
    const u32* offsets;  // level_offset, 32 words
    u32 width, depth;
    float cs, inv_cs;
    u32 top;
    V3 o, d, inv;
    V3 oc, dc;
    bool par[3];
    bool pos[3];
    float ty0;
    bool up_always;
};

// Component k (0 = x, 2 = z; 1 = y) of a vector.
__device__ __forceinline__ float hf_at(V3 a, int k) { return k == 0 ? a.x : (k == 1 ? a.y : a.z); }

// mirrors prism_core::heightfield::Walk::new (false: a record that cannot be walked)
__device__ __forceinline__ bool hf_walk_new(HfWalk& w, const RayPre& pre, const GpuHeightfield* hf,
                                            const float* heights, u64 height_count) {
    const uint4 dims = __ldg(&hf->dims);
    const float4 scale = __ldg(&hf->scale);
    const u32 levels = dims.z;
    if (dims.x == 0u || dims.y == 0u || levels == 0u || levels >= PRISM_HEIGHTFIELD_MAX_LEVELS || isnan(scale.x) ||
        scale.x <= 0.0f) {
        return false;
    }
    w.heights = heights;
    w.height_count = height_count;
    w.offsets = reinterpret_cast<const u32*>(hf->level_offset);
    w.width = dims.x;
    w.depth = dims.y;
    w.cs = scale.x;
    w.inv_cs = scale.y;
    w.top = levels - 1u;
    w.o = pre.origin;
    w.d = pre.dir;
    w.inv = pre.inv_dir;
    w.oc = v3(__fmul_rn(w.o.x, w.inv_cs), __fmul_rn(w.o.y, w.inv_cs), __fmul_rn(w.o.z, w.inv_cs));
    w.dc = v3(__fmul_rn(w.d.x, w.inv_cs), __fmul_rn(w.d.y, w.inv_cs), __fmul_rn(w.d.z, w.inv_cs));
    w.par[0] = w.d.x == 0.0f;
    w.par[1] = w.d.y == 0.0f;
    w.par[2] = w.d.z == 0.0f;
    w.pos[0] = w.inv.x > 0.0f;
    w.pos[1] = w.inv.y > 0.0f;
    w.pos[2] = w.inv.z > 0.0f;
    w.ty0 = __fmul_rn(0.0f - w.o.y, w.inv.y);
    w.up_always = w.d.y > 0.0f;
    return true;
}

// mirrors prism_core::heightfield::Walk::plane
__device__ __forceinline__ float hf_plane(const HfWalk& w, u32 i) { return __fmul_rn(__uint2float_rn(i), w.cs); }

// mirrors prism_core::heightfield::Walk::entry
//
// With PRISM_TREE_CHECKS 0 the host has checked that every level of every
// heightfield lies inside the heights and that they number fewer than 2^32
// (prism_core::gpu::check_heightfields, run before upload), so the entry is
// read with a 32-bit index and no check (core's `heights.get(k)` is always
// Some): on an H200 the city's rays ran 3-5% faster than with the 64-bit
// index and its check.
__device__ __forceinline__ float hf_entry(const HfWalk& w, u32 level, u32 i, u32 j) {
#if PRISM_TREE_CHECKS
    const u64 base = __ldg(w.offsets + level);
    const u64 lw = hf_level_cells(w.width, level);
    const u64 k = base + (u64)j * lw + (u64)i;
    return k < w.height_count ? __ldg(w.heights + k) : 0.0f;
#else
    const u32 base = __ldg(w.offsets + level);
    return __ldg(w.heights + (base + j * hf_level_cells(w.width, level) + i));
#endif
}

// mirrors prism_core::heightfield::Walk::slab, one end of it: the far end
// (FAR) or the near one of axis k between the planes `a` and `b` (indices).
// Core takes both planes' distances and picks near and far by the ray's sign;
// this takes the distance of the plane it would pick, the same value with one
// product. Parallel to the axis: the whole line.
template <bool FAR>
__device__ __forceinline__ float hf_slab(const HfWalk& w, int k, u32 a, u32 b) {
    if (w.par[k]) {
        return FAR ? PRISM_INF : -PRISM_INF;
    }
    const u32 plane = (w.pos[k] == FAR) ? b : a;
    return __fmul_rn(hf_plane(w, plane) - hf_at(w.o, k), hf_at(w.inv, k));
}

// mirrors prism_core::heightfield::Walk::slab_y
__device__ __forceinline__ void hf_slab_y(const HfWalk& w, float h, float& tn, float& tf) {
    if (w.par[1]) {
        const bool in = 0.0f <= w.o.y && w.o.y <= h;
        tn = in ? -PRISM_INF : PRISM_INF;
        tf = in ? PRISM_INF : -PRISM_INF;
    } else {
        const float th = __fmul_rn(h - w.o.y, w.inv.y);
        tn = w.pos[1] ? w.ty0 : th;
        tf = w.pos[1] ? th : w.ty0;
    }
}

// mirrors prism_core::heightfield::Walk::slabs
__device__ __forceinline__ HfSlabs hf_slabs(const HfWalk& w, u32 x0, u32 x1, u32 z0, u32 z1, float h) {
    HfSlabs s;
    s.txn = hf_slab<false>(w, 0, x0, x1);
    s.txf = hf_slab<true>(w, 0, x0, x1);
    s.tzn = hf_slab<false>(w, 2, z0, z1);
    s.tzf = hf_slab<true>(w, 2, z0, z1);
    hf_slab_y(w, h, s.tyn, s.tyf);
    return s;
}

// mirrors prism_core::heightfield::Walk::crossing (found: Some((t, face)))
__device__ __forceinline__ HfHit hf_crossing(const HfWalk& w, const HfSlabs& s, float h, float tmin, float tmax) {
    HfHit r = hf_none();
    const float near = s.near(), far = s.far();
    if (!(h > 0.0f && near <= widen_exit(far))) {
        return r;
    }
    if (near > tmin) {
        if (near >= tmax) {
            return r;
        }
        u32 face;
        if (s.tyn == near) {
            face = w.pos[1] ? PRISM_FACE_BOTTOM : PRISM_FACE_TOP;
        } else if (s.txn == near) {
            face = w.pos[0] ? PRISM_FACE_NEG_X : PRISM_FACE_POS_X;
        } else if (w.pos[2]) {
            face = PRISM_FACE_NEG_Z;
        } else {
            face = PRISM_FACE_POS_Z;
        }
        r.found = true;
        r.t = near;
        r.face = face;
    } else if (far > tmin && far < tmax) {
        u32 face;
        if (s.tyf == far) {
            face = w.pos[1] ? PRISM_FACE_TOP : PRISM_FACE_BOTTOM;
        } else if (s.txf == far) {
            face = w.pos[0] ? PRISM_FACE_POS_X : PRISM_FACE_NEG_X;
        } else if (w.pos[2]) {
            face = PRISM_FACE_POS_Z;
        } else {
            face = PRISM_FACE_NEG_Z;
        }
        r.found = true;
        r.t = far;
        r.face = face;
    }
    return r;
}

// mirrors prism_core::heightfield::Walk::cell_crossing
__device__ __forceinline__ HfHit hf_cell_crossing(const HfWalk& w, u32 x, u32 z, float tmin, float tmax) {
    const float h = hf_entry(w, 0u, x, z);
    const HfSlabs s = hf_slabs(w, x, x + 1u, z, z + 1u, h);
    HfHit r = hf_crossing(w, s, h, tmin, tmax);
    r.cell = z * w.width + x;
    return r;
}

// mirrors prism_core::heightfield::Walk::cell_of
__device__ __forceinline__ u32 hf_cell_of(const HfWalk& w, float v, u32 n) {
    // __float2uint_rz truncates and saturates (NaN: 0), as Rust's `as u32`.
    u32 k = min(__float2uint_rz(__fmul_rn(v, w.inv_cs)), n - 1u);
    if (k > 0u && v < hf_plane(w, k)) {
        k -= 1u;
    } else if (k + 1u < n && v >= hf_plane(w, k + 1u)) {
        k += 1u;
    }
    return k;
}

// mirrors prism_core::heightfield::Walk::follow
__device__ __forceinline__ u32 hf_follow(const HfWalk& w, int k, float t, u32 n, u32 lo, u32 hi, u32 current) {
    const float c_f = hf_at(w.oc, k) + __fmul_rn(t, hf_at(w.dc, k));
    const u32 c = min(max(min(__float2uint_rz(c_f), n - 1u), lo), hi - 1u);
    return w.pos[k] ? max(c, current) : min(c, current);
}

// mirrors prism_core::heightfield::Walk::walk
__device__ __forceinline__ HfHit hf_walk_from(const HfWalk& w, u32 cx, u32 cz, u32 level, float tmin, float tmax) {
    const u32 wd = w.width, dp = w.depth;
    float t_lo = tmin;
    for (;;) {
        const u32 nx = cx >> level, nz = cz >> level;
        const u32 x0 = nx << level, z0 = nz << level;
        const u32 x1 = min((nx + 1u) << level, wd);
        const u32 z1 = min((nz + 1u) << level, dp);
        const float m = hf_entry(w, level, nx, nz);
        // hf_slabs in two parts: every step reads the far x and z planes and
        // the y slab; only a step at level 0 (the crossing) reads the near x
        // and z planes, so only it computes them (four plane products fewer
        // on every step above level 0).
        HfSlabs s;
        s.txf = hf_slab<true>(w, 0, x0, x1);
        s.tzf = hf_slab<true>(w, 2, z0, z1);
        hf_slab_y(w, m, s.tyn, s.tyf);
        if (level == 0u) {
            s.txn = hf_slab<false>(w, 0, x0, x1);
            s.tzn = hf_slab<false>(w, 2, z0, z1);
            HfHit c = hf_crossing(w, s, m, tmin, tmax);
            if (c.found) {
                c.cell = cz * wd + cx;
                return c;
            }
        } else {
            const float far = widen_exit(s.far());
            if (m > 0.0f && s.tyn <= far && s.tyn < tmax && far >= t_lo) {
                level -= 1u;
                continue;
            }
        }
        const float t_exit = fminf(s.txf, s.tzf);
        if (t_exit >= tmax || isnan(t_exit)) {
            return hf_none();
        }
        bool new_parent;
        if (s.txf == s.tzf) {
            if (level > 0u) {
                level -= 1u;
                continue;
            }
            const u32 ax = w.pos[0] ? cx + 1u : cx - 1u;
            const u32 bz = w.pos[2] ? cz + 1u : cz - 1u;
            HfHit side = hf_none();
            if (ax < wd) {
                side = hf_cell_crossing(w, ax, cz, tmin, tmax);
            }
            if (bz < dp) {
                const float limit = side.found ? side.t : tmax;
                const HfHit h = hf_cell_crossing(w, cx, bz, tmin, limit);
                if (h.found) {
                    side = h;
                }
            }
            if (side.found) {
                return side;
            }
            new_parent = (ax >> 1) != (cx >> 1) || (bz >> 1) != (cz >> 1);
            cx = ax;
            cz = bz;
            if (cx >= wd || cz >= dp) {
                return hf_none();
            }
        } else if (s.txf < s.tzf) {
            cx = w.pos[0] ? x1 : x0 - 1u;
            if (cx >= wd) {
                return hf_none();
            }
            new_parent = (cx >> (level + 1u)) != (nx >> 1);
            if (!w.par[2]) {
                cz = hf_follow(w, 2, t_exit, dp, z0, z1, cz);
            }
        } else {
            cz = w.pos[2] ? z1 : z0 - 1u;
            if (cz >= dp) {
                return hf_none();
            }
            new_parent = (cz >> (level + 1u)) != (nz >> 1);
            if (!w.par[0]) {
                cx = hf_follow(w, 0, t_exit, wd, x0, x1, cx);
            }
        }
        t_lo = t_exit;
        if (level < w.top && (w.up_always || new_parent)) {
            level += 1u;
        }
    }
}

// mirrors prism_core::heightfield::Walk::cells_on: the cells (one or two)
// whose closed slab holds `v`; returns how many, the first in k0.
__device__ __forceinline__ u32 hf_cells_on(const HfWalk& w, float v, u32 n, u32& k0) {
    const u32 k = hf_cell_of(w, v, n);
    if (k > 0u && v == hf_plane(w, k)) {
        k0 = k - 1u;
        return 2u;
    }
    k0 = k;
    return 1u;
}

// mirrors prism_core::heightfield::Walk::run_parallel
__device__ __forceinline__ HfHit hf_run_parallel(const HfWalk& w, float tmin, float tmax) {
    const u32 wd = w.width, dp = w.depth;
    const float m = hf_entry(w, w.top, 0u, 0u);
    const HfSlabs s = hf_slabs(w, 0u, wd, 0u, dp, m);
    const float t0 = fmaxf(s.near(), tmin);
    u32 x_first, x_count, z_first, z_count;
    if (w.par[0]) {
        x_count = hf_cells_on(w, w.o.x, wd, x_first);
    } else {
        x_first = hf_cell_of(w, w.o.x + __fmul_rn(t0, w.d.x), wd);
        x_count = 1u;
    }
    if (w.par[2]) {
        z_count = hf_cells_on(w, w.o.z, dp, z_first);
    } else {
        z_first = hf_cell_of(w, w.o.z + __fmul_rn(t0, w.d.z), dp);
        z_count = 1u;
    }
    const u32 level = w.top > 0u ? w.top - 1u : 0u;
    HfHit best = hf_none();
    for (u32 i = 0; i < x_count; ++i) {
        for (u32 j = 0; j < z_count; ++j) {
            const float limit = best.found ? best.t : tmax;
            const HfHit h = hf_walk_from(w, x_first + i, z_first + j, level, tmin, limit);
            if (h.found) {
                best = h;
            }
        }
    }
    return best;
}

// mirrors prism_core::heightfield::start_level_of_run
// (floor(log2(a / b)) - 1 from the bits of a and b, no division: every
// backend finds the same level)
__device__ __forceinline__ u32 hf_start_level_of_run(float a, float b, u32 below_root) {
    if (isnan(a) || a < 1.17549435e-38f) {
        return 0u;
    }
    if (isnan(b) || b < 1.17549435e-38f || isinf(a)) {
        return below_root;
    }
    const u32 ab = __float_as_uint(a), bb = __float_as_uint(b);
    const int log2 = int(ab >> 23) - int(bb >> 23) - ((ab & 0x7FFFFFu) < (bb & 0x7FFFFFu) ? 1 : 0);
    return u32(min(max(log2 - 1, 0), int(below_root)));
}

// mirrors prism_core::heightfield::Walk::start_level
__device__ __forceinline__ u32 hf_start_level(const HfWalk& w, float t0) {
    const u32 below_root = w.top > 0u ? w.top - 1u : 0u;
    if (w.d.y < 0.0f) {
        const float h0 = __fadd_rn(w.o.y, __fmul_rn(t0, w.d.y));
        const float across = fmaxf(fabsf(w.d.x), fabsf(w.d.z));
        return hf_start_level_of_run(__fmul_rn(h0, across), __fmul_rn(-w.d.y, w.cs), below_root);
    }
    return below_root;
}

// mirrors prism_core::heightfield::Walk::start and Walk::run
__device__ __forceinline__ HfHit hf_run(const HfWalk& w, float tmin, float tmax) {
    const u32 wd = w.width, dp = w.depth;
    const float m = hf_entry(w, w.top, 0u, 0u);
    const bool in_x = 0.0f <= w.o.x && w.o.x <= hf_plane(w, wd);
    const bool in_z = 0.0f <= w.o.z && w.o.z <= hf_plane(w, dp);
    if ((w.par[0] && !in_x) || (w.par[2] && !in_z)) {
        return hf_none();
    }
    const HfSlabs s = hf_slabs(w, 0u, wd, 0u, dp, m);
    const float near = s.near(), far = widen_exit(s.far());
    if (!(m > 0.0f && near <= far && near < tmax && far > tmin)) {
        return hf_none();
    }
    if (w.par[0] || w.par[1] || w.par[2]) {
        return hf_run_parallel(w, tmin, tmax);
    }
    const float t0 = fmaxf(near, tmin);
    const u32 x = hf_cell_of(w, w.o.x + __fmul_rn(t0, w.d.x), wd);
    const u32 z = hf_cell_of(w, w.o.z + __fmul_rn(t0, w.d.z), dp);
    return hf_walk_from(w, x, z, hf_start_level(w, t0), tmin, tmax);
}

// mirrors prism_core::heightfield::Heightfields::hit (and ray_heightfield):
// the heightfield record `c` (its third row: descriptor index bits) against
// the ray of `pre` in (tmin, tmax). On a hit writes t and, in u and v, the
// face's and the cell's bits (see the top of this file).
__device__ __forceinline__ bool ray_heightfield(const SceneView& s, const RayPre& pre, float4 c, float tmin,
                                                float tmax, float& t, float& u, float& v) {
    const u32 index = __float_as_uint(c.x);
    if (index >= s.heightfield_count) {
        return false;
    }
    HfWalk w;
    if (!hf_walk_new(w, pre, s.heightfields + index, s.heights, s.height_count)) {
        return false;
    }
    const HfHit h = hf_run(w, tmin, tmax);
    if (!h.found) {
        return false;
    }
    t = h.t;
    u = __uint_as_float(h.face);
    v = __uint_as_float(h.cell);
    return true;
}
