// The leaves of a two-level closest-hit walk's node step inside an instance
// (two_level.cuh): tested within the node step (leaves_closest, the
// default), or in a phase of their own (PRISM_TWO_LEVEL_LEAF_WAIT > 0:
// leaf_begin, then leaf_step), which the batch kernels may hold back until
// enough lanes of the warp are at leaves (PRISM_TWO_LEVEL_LEAF_WAIT > 1).
// A lane at a leaf in a warp whose other lanes are at inner nodes tests its
// primitives alone: on an H100, bunny-x1000's diffuse rays ran the triangle
// test at 1.4 lanes of 32 on average, a quarter of the kernel's warp
// instructions. Either way a lane tests its primitives in core's order:
// the near leaf, then the far leaf if its box is still nearer than the best
// hit, then the inner child (if any) if still nearer.
#pragma once

// The triangle test's setup of the object ray, before its first primitive
// test in this instance (see TwoLevelWalk::triangles_ready).
template <int K>
__device__ __forceinline__ void object_triangles_ready(TwoLevelWalk& w) {
    if ((PRISM_PRIM_KINDS(K) & PRISM_TRIANGLES) != 0 && !w.triangles_ready) {
        ray_pre_triangles(w.pre);
        w.triangles_ready = true;
    }
}

// Primitive `slot` against the object ray: a nearer hit becomes the best.
template <int K>
__device__ __forceinline__ void closest_primitive(TwoLevelWalk& w, const SceneView& s, u32 slot) {
    float t, u, v;
    if (ray_primitive<PRISM_PRIM_KINDS(K)>(w.pre, s.prims + slot, w.tmin, w.best.t, t, u, v)) {
        w.best.t = t;
        w.best.u = u;
        w.best.v = v;
        w.best.prim = slot;
        w.best.instance = w.inst;
    }
}

// A node step's leaves, intersected right away, nearest first, by one loop
// over both (see closest_hit_step); the leaves' t become +inf.
template <int K>
__device__ __forceinline__ void leaves_closest(TwoLevelWalk& w, const SceneView& s, float& t_near, u32 near_index,
                                               u32 near_count, float& t_far, u32 far_index, u32 far_count) {
    u32 a_first = 0, a_count = 0, b_first = 0, b_count = 0;
    if (near_count > 0) {
        if (t_near < w.best.t && leaf_in_range(near_index, near_count, s.prim_count)) {
            a_first = near_index;
            a_count = near_count;
        }
        t_near = PRISM_INF;
    }
    const float t_far_leaf = t_far;
    if (far_count > 0) {
        if (leaf_in_range(far_index, far_count, s.prim_count)) {
            b_first = far_index;
            b_count = far_count;
        }
        t_far = PRISM_INF;
    }
    if (a_count > 0 || (b_count > 0 && t_far_leaf < w.best.t)) {
        object_triangles_ready<K>(w);
    }
    for (;;) {
        if (a_count == 0) {
            if (b_count == 0 || !(t_far_leaf < w.best.t)) {
                break;
            }
            a_first = b_first;
            a_count = b_count;
            b_count = 0;
        }
        closest_primitive<K>(w, s, a_first);
        ++a_first;
        --a_count;
    }
}

#if PRISM_TWO_LEVEL_LEAF_WAIT > 0
// The end of the LEAF phase: the inner child that followed the leaves
// (pend_count 0) next if still nearer than the best hit, else the stack (or
// the leave of the instance). False when the whole walk is over.
__device__ __forceinline__ bool leaf_end(TwoLevelWalk& w, u32* stack) {
    w.phase = PRISM_PHASE_STEP;
    return level_next(w, stack, false, PRISM_INF, 0, w.pend_count == 0 ? w.pend_t : PRISM_INF, w.pend_index);
}

// A node step inside an instance that met one leaf or two: the first leaf to
// test (the near one if its box is nearer than the best hit; a far leaf
// beside a near inner node if its box is met) and what follows it (the far
// leaf beside a near one, else the inner child) into the LEAF state. A lane
// with nothing to test goes straight on. False when the whole walk is over.
__device__ __forceinline__ bool leaf_begin(TwoLevelWalk& w, u32* stack, const SceneView& s, float t_near,
                                           u32 near_index, u32 near_count, float t_far, u32 far_index,
                                           u32 far_count) {
    u32 first = 0, count = 0;
    w.pend_index = 0;
    w.pend_count = 0;
    w.pend_t = PRISM_INF;
    if (near_count > 0) {
        if (t_near < w.best.t && leaf_in_range(near_index, near_count, s.prim_count)) {
            first = near_index;
            count = near_count;
        }
        if (far_count == 0) {
            // An inner node (or no child: its t is +inf).
            w.pend_index = far_index;
            w.pend_t = t_far;
        } else if (leaf_in_range(far_index, far_count, s.prim_count)) {
            w.pend_index = far_index;
            w.pend_count = far_count;
            w.pend_t = t_far;
        }
    } else {
        // A near inner node beside a far leaf: the best hit is as at the box
        // tests, so the far leaf's own test comes now.
        if (t_far < w.best.t && leaf_in_range(far_index, far_count, s.prim_count)) {
            first = far_index;
            count = far_count;
        }
        w.pend_index = near_index;
        w.pend_t = t_near;
    }
    if (count == 0 && !(w.pend_count > 0 && w.pend_t < w.best.t)) {
        return leaf_end(w, stack);
    }
    w.node = first;
    w.leaf_count = count;
    w.phase = PRISM_PHASE_LEAF;
    return true;
}

// The LEAF phase: every slot of the current leaf, then the far leaf if its
// box is still nearer than the best hit, then leaf_end. False when the whole
// walk is over.
template <int K>
__device__ __forceinline__ bool leaf_step(TwoLevelWalk& w, u32* stack, const SceneView& s) {
    object_triangles_ready<K>(w);
    for (;;) {
        if (w.leaf_count == 0) {
            if (w.pend_count == 0 || !(w.pend_t < w.best.t)) {
                break;
            }
            w.node = w.pend_index;
            w.leaf_count = w.pend_count;
            w.pend_count = 0;
            w.pend_t = PRISM_INF;
        }
        closest_primitive<K>(w, s, w.node);
        ++w.node;
        --w.leaf_count;
    }
    return leaf_end(w, stack);
}
#endif
