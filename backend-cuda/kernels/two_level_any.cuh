// The any-hit walk of two-level scenes (two_level.cuh): top node steps that
// meet instances (ENTER, as the closest-hit walk's), and node steps inside
// an instance whose first hit ends the whole walk.
#pragma once

// One iteration of walk_top's loop up to the first instance it meets
// (ENTER), for the any-hit walk (the closest-hit walk folds it into
// closest_node_step); false when the walk is over.
template <int K, bool TMIN_NONNEG>
__device__ __forceinline__ bool top_step(TwoLevelWalk& w, u32* stack, const SceneView& s) {
    if (!node_in_range(w.node, s.top_node_count)) {
        return false;
    }
    const float4* n = reinterpret_cast<const float4*>(s.top_nodes + w.node);
    const float4 ll = __ldg(n + 0);
    const float4 lh = __ldg(n + 1);
    const float4 rl = __ldg(n + 2);
    const float4 rh = __ldg(n + 3);
    const float tl = child_box<TMIN_NONNEG, false>(w.pre, ll, lh, w.tmin, w.best.t);
    const float tr = child_box<TMIN_NONNEG, false>(w.pre, rl, rh, w.tmin, w.best.t);
    const u32 l_index = __float_as_uint(ll.w), l_count = __float_as_uint(lh.w);
    const u32 r_index = __float_as_uint(rl.w), r_count = __float_as_uint(rh.w);
    const bool swap = tr < tl;
    float t_near = swap ? tr : tl;
    const u32 near_index = swap ? r_index : l_index;
    const u32 near_count = swap ? r_count : l_count;
    float t_far = swap ? tl : tr;
    const u32 far_index = swap ? l_index : r_index;
    const u32 far_count = swap ? l_count : r_count;
    if (top_meets_instance(w, t_near, near_index, near_count, t_far, far_index, far_count)) {
        return true;
    }
    return top_next(w, stack, t_near, near_index, t_far, far_index);
}

// One iteration of prism_core::traverse::any_hit's loop in the tree of the
// instance the walk is in (any_hit_step's), and the top node step's rest
// when that walk is over: PRISM_STEP_HIT or PRISM_STEP_MISS when the whole
// walk is over, else PRISM_STEP_MORE.
template <int K, bool TMIN_NONNEG>
__device__ __forceinline__ int instance_any_step(TwoLevelWalk& w, u32* stack, const SceneView& s) {
    if (!node_in_range(w.node, s.node_count)) {
        return leave_instance(w, stack) ? PRISM_STEP_MORE : PRISM_STEP_MISS;
    }
    const RayPre& pre = w.pre;
    const float4* n = reinterpret_cast<const float4*>(s.nodes + w.node);
    const float4 ll = __ldg(n + 0);
    const float4 lh = __ldg(n + 1);
    const float4 rl = __ldg(n + 2);
    const float4 rh = __ldg(n + 3);
    const float tl = child_box<TMIN_NONNEG, false>(pre, ll, lh, w.tmin, w.best.t);
    const float tr = child_box<TMIN_NONNEG, false>(pre, rl, rh, w.tmin, w.best.t);
    const u32 l_index = __float_as_uint(ll.w), l_count = __float_as_uint(lh.w);
    const u32 r_index = __float_as_uint(rl.w), r_count = __float_as_uint(rh.w);
    bool go_left = tl < PRISM_INF;
    bool go_right = tr < PRISM_INF;
    // Leaves: left first, then right; the first hit ends the whole walk.
    u32 a_first = 0, a_count = 0, b_first = 0, b_count = 0;
    if (go_left && l_count > 0) {
        if (leaf_in_range(l_index, l_count, s.prim_count)) {
            a_first = l_index;
            a_count = l_count;
        }
        go_left = false;
    }
    if (go_right && r_count > 0) {
        if (leaf_in_range(r_index, r_count, s.prim_count)) {
            b_first = r_index;
            b_count = r_count;
        }
        go_right = false;
    }
    if (a_count > 0 || b_count > 0) {
        object_triangles_ready<K>(w);
    }
    for (;;) {
        if (a_count == 0) {
            if (b_count == 0) {
                break;
            }
            a_first = b_first;
            a_count = b_count;
            b_count = 0;
        }
        float t, u, v;
        if (ray_primitive<PRISM_PRIM_KINDS(K)>(pre, s.prims + a_first, w.tmin, w.best.t, t, u, v)) {
            return PRISM_STEP_HIT;
        }
        ++a_first;
        --a_count;
    }
    const bool swap = tr < tl;
    const u32 near = swap ? r_index : l_index;
    const u32 far = swap ? l_index : r_index;
    const bool go_near = swap ? go_right : go_left;
    const bool go_far = swap ? go_left : go_right;
    if (go_near && go_far) {
        if (w.sp - w.top_sp < PRISM_TRAVERSAL_STACK_SIZE) {
            stack[w.sp] = far;
            ++w.sp;
        }
        w.node = near;
    } else if (go_near) {
        w.node = near;
    } else if (go_far) {
        w.node = far;
    } else if (w.sp > w.top_sp) {
        --w.sp;
        w.node = stack[w.sp];
    } else {
        return leave_instance(w, stack) ? PRISM_STEP_MORE : PRISM_STEP_MISS;
    }
    return PRISM_STEP_MORE;
}

// One step of prism_core::two_level::TwoLevel::any_hit: the lane's instance
// entry (ENTER, unless run_enter is false: the lane then waits), then its
// node step at the level it is at.
template <int K, bool TMIN_NONNEG>
__device__ __forceinline__ int two_level_any_step(TwoLevelWalk& w, u32* stack, const SceneView& s,
                                                  bool run_enter = true) {
    if (w.phase == PRISM_PHASE_ENTER) {
        if (!run_enter) {
            return PRISM_STEP_MORE;
        }
        if (!enter_step<K>(w, stack, s)) {
            return PRISM_STEP_MISS;
        }
    }
    if (w.inst == PRISM_NO_INSTANCE) {
        return top_step<K, TMIN_NONNEG>(w, stack, s) ? PRISM_STEP_MORE : PRISM_STEP_MISS;
    }
    return instance_any_step<K, TMIN_NONNEG>(w, stack, s);
}
