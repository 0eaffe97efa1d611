// Two-level scenes: mirrors prism_core::two_level (TwoLevel::closest_hit,
// TwoLevel::any_hit and their walk_top, object_ray, object_point,
// world_normal).
//
// A walk starts in the tree over the instances (SceneView::top_nodes) with
// the world ray. At a leaf it meets one instance: if the ray's mask shares a
// bit with the instance's, the ray is carried into object space by the
// instance's world-to-object rows (object_ray) and walks the geometry's tree
// from its root (its nodes and slots lie in SceneView::nodes and prims with
// absolute indices, so that walk is a flat walk) with the closest hit so far
// as its tmax; the direction is not renormalised, so t is the same in both
// spaces, and a hit keeps the instance's index.
//
// Core's walk_top enters an instance as soon as its node's step meets it,
// nearer child first, and finishes that node's step after the instance's
// walk. Here both levels are one loop of steps (so that the batch kernels
// can refill lanes between steps, batch.cuh): a step that enters an instance
// keeps what is left of the top node's step (the other child, its entry
// distance and whether it is an instance) in `next`, and the step that
// leaves the instance carries it out. The order of every box test,
// primitive test and instance entry is core's. One stack serves both levels:
// the top level's entries lie below `top_sp`, the instance's above, and each
// level keeps core's bound of PRISM_TRAVERSAL_STACK_SIZE entries of its own.
//
// The instance's kind (K with PRISM_INSTANCES) marks the kernels of
// two-level scenes; their geometries' primitives are PRISM_PRIM_KINDS(K).
#pragma once
#include "traverse.cuh"

// K's bit for two-level scenes (PRISM_SPHERES, PRISM_TRIANGLES and PRISM_MIXED,
// with PRISM_HEIGHTFIELDS, name the kinds of primitives the geometries hold).
#define PRISM_INSTANCES 4
#define PRISM_PRIM_KINDS(K) ((K) & (PRISM_MIXED | PRISM_HEIGHTFIELDS))
// Entries of a two-level walk's stack: each level's bound, one above the other.
#define PRISM_TWO_LEVEL_STACK_SIZE (2 * PRISM_TRAVERSAL_STACK_SIZE)
// A ray that sees every instance (prism_core::Ray::ALL): the render rays.
#define PRISM_RAY_ALL 0xFFFFFFFFu

// mirrors prism_core::two_level::object_ray (and object_point): one row of
// the world-to-object transform applied to a point, ((r.x p.x + r.y p.y) +
// r.z p.z) + r.w with every product rounded on its own, as in core, so every
// backend enters an instance with the same ray.
__device__ __forceinline__ float object_point_row(float4 r, V3 p) {
    return ((__fmul_rn(r.x, p.x) + __fmul_rn(r.y, p.y)) + __fmul_rn(r.z, p.z)) + r.w;
}

// The same for a direction (no translation).
__device__ __forceinline__ float object_vector_row(float4 r, V3 d) {
    return (__fmul_rn(r.x, d.x) + __fmul_rn(r.y, d.y)) + __fmul_rn(r.z, d.z);
}

// The instance's world-to-object rows.
__device__ __forceinline__ void instance_rows(const SceneView& s, u32 instance, float4& r0, float4& r1, float4& r2) {
    const float4* r = reinterpret_cast<const float4*>(s.instances + instance);
    r0 = __ldg(r);
    r1 = __ldg(r + 1);
    r2 = __ldg(r + 2);
}

// mirrors prism_core::two_level::object_point
__device__ __forceinline__ V3 object_point(float4 r0, float4 r1, float4 r2, V3 p) {
    return v3(object_point_row(r0, p), object_point_row(r1, p), object_point_row(r2, p));
}

// mirrors prism_core::two_level::world_normal: the transpose of the
// world-to-object part applied to an object-space normal (not normalised).
__device__ __forceinline__ V3 world_normal(float4 r0, float4 r1, float4 r2, V3 n) {
    return v3((__fmul_rn(r0.x, n.x) + __fmul_rn(r1.x, n.y)) + __fmul_rn(r2.x, n.z),
              (__fmul_rn(r0.y, n.x) + __fmul_rn(r1.y, n.y)) + __fmul_rn(r2.y, n.z),
              (__fmul_rn(r0.z, n.x) + __fmul_rn(r1.z, n.y)) + __fmul_rn(r2.z, n.z));
}

// The state of a two-level walk between two steps. The stack is kept apart
// (see ClosestHit).
struct TwoLevelWalk {
    // The ray of the level the walk is in: inside an instance the object
    // ray; at the top only its origin and inv_dir are read, the world ray's.
    RayPre pre;
    // The world ray.
    V3 origin, dir, inv_dir;
    float tmin;
    u32 mask;
    // The closest hit so far (prim: the slot); best.t is the walk's tmax
    // (any hit: the world ray's, which it never lowers).
    Hit best;
    // The node the walk is at, in the top tree or (inside an instance) in
    // SceneView::nodes.
    u32 node;
    u32 sp;
    // Stack entries of the top level; those above belong to the instance.
    u32 top_sp;
    // The instance the walk is in, or PRISM_NO_INSTANCE at the top.
    u32 inst;
    // What is left of the top node's step that entered the instance: its
    // other child (node or instance index), that child's entry distance and
    // whether it is an instance still to be entered.
    u32 next_index;
    float next_t;
    bool next_instance;
    // Whether `pre` holds the object ray's triangle setup (ray_pre_triangles),
    // which waits for the first leaf of the instance whose primitives the
    // ray tests: most object rays leave an instance's tree without one.
    bool triangles_ready;
};

// The head of prism_core::two_level::TwoLevel::closest_hit / any_hit, and of
// walk_top before its loop, for a ray seen with `mask`.
template <int K>
__device__ __forceinline__ void two_level_begin(TwoLevelWalk& w, const Ray& ray, u32 mask) {
    // RayPre::new's inv_dir, for the top level's box tests.
    w.origin = ray.origin;
    w.dir = ray.dir;
    w.inv_dir = v3(1.0f / safe_dir(ray.dir.x), 1.0f / safe_dir(ray.dir.y), 1.0f / safe_dir(ray.dir.z));
    w.pre.origin = w.origin;
    w.pre.inv_dir = w.inv_dir;
    w.tmin = ray.tmin;
    w.mask = mask;
    w.best.t = ray.tmax;
    w.best.u = 0.0f;
    w.best.v = 0.0f;
    w.best.prim = PRISM_NO_PRIM;
    w.best.instance = PRISM_NO_INSTANCE;
    w.node = 0;
    w.sp = 0;
    w.top_sp = 0;
    w.inst = PRISM_NO_INSTANCE;
    w.next_index = 0;
    w.next_t = PRISM_INF;
    w.next_instance = false;
    w.triangles_ready = false;
}

// walk_top's `enter` up to the instance's walk: whether the ray sees
// instance `index` (a record of the scene, whose mask shares a bit with the
// ray's); if so the walk moves into it with the object ray (object_ray),
// from its geometry's root.
template <int K>
__device__ __forceinline__ bool enter_instance(TwoLevelWalk& w, const SceneView& s, u32 index) {
    // core: `records.get(index)`; the host checked the top tree's leaves
    // against the records unless the kernels check (PRISM_TREE_CHECKS).
    if (!leaf_in_range(index, 1u, s.instance_count)) {
        return false;
    }
    const float4 info = __ldg(&s.instances[index].info);
    if ((w.mask & __float_as_uint(info.y)) == 0) {
        return false;
    }
    float4 r0, r1, r2;
    instance_rows(s, index, r0, r1, r2);
    const V3 o = object_point(r0, r1, r2, w.origin);
    const V3 d = v3(object_vector_row(r0, w.dir), object_vector_row(r1, w.dir), object_vector_row(r2, w.dir));
    // RayPre::new of the object ray, but for its triangle setup (see
    // TwoLevelWalk::triangles_ready).
    w.pre = ray_pre<PRISM_PRIM_KINDS(K) & PRISM_SPHERES>(o, d);
    w.triangles_ready = false;
    w.node = __float_as_uint(info.x);
    w.inst = index;
    w.top_sp = w.sp;
    return true;
}

// The end of walk_top's node step once both children are decided: the nearer
// inner child next and the farther pushed, or the one of them, or the top
// stack's last entry; false when the top walk is over.
__device__ __forceinline__ bool top_next(TwoLevelWalk& w, u32* stack, float t_near, u32 near_index, float t_far,
                                         u32 far_index) {
    const bool go_near = t_near < w.best.t;
    const bool go_far = t_far < w.best.t;
    if (go_near && go_far) {
        if (w.sp < PRISM_TRAVERSAL_STACK_SIZE) {
            stack[w.sp] = far_index;
            ++w.sp;
        }
        w.node = near_index;
    } else if (go_near) {
        w.node = near_index;
    } else if (go_far) {
        w.node = far_index;
    } else if (w.sp > 0) {
        --w.sp;
        w.node = stack[w.sp];
    } else {
        return false;
    }
    return true;
}

// One iteration of walk_top's loop, up to the first instance it enters (then
// `next` keeps the rest of the step), for the any-hit walk (the closest-hit
// walk folds it into two_level_closest_step); false when the walk is over.
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
    // Instances (leaves of one) are entered right away, nearest first.
    if (near_count > 0) {
        if (t_near < w.best.t && enter_instance<K>(w, s, near_index)) {
            w.next_index = far_index;
            w.next_t = t_far;
            w.next_instance = far_count > 0;
            return true;
        }
        t_near = PRISM_INF;
    }
    if (far_count > 0) {
        if (t_far < w.best.t && enter_instance<K>(w, s, far_index)) {
            // The near child is then all that is left: an inner node, or
            // nothing (t_near = +inf) where it was an instance.
            w.next_index = near_index;
            w.next_t = t_near;
            w.next_instance = false;
            return true;
        }
        t_far = PRISM_INF;
    }
    return top_next(w, stack, t_near, near_index, t_far, far_index);
}

// Back at the top after an instance's walk (its stack entries dropped: core's
// walk of a tree ends at a node past the last even with entries left): the
// rest of the top node's step that entered it (`next`); false when the walk
// is over.
template <int K>
__device__ __forceinline__ bool leave_instance(TwoLevelWalk& w, u32* stack, const SceneView& s) {
    w.inst = PRISM_NO_INSTANCE;
    w.sp = w.top_sp;
    w.pre.origin = w.origin;
    w.pre.inv_dir = w.inv_dir;
    if (w.next_instance) {
        // The farther instance of a node whose two children are instances.
        w.next_instance = false;
        if (w.next_t < w.best.t && enter_instance<K>(w, s, w.next_index)) {
            w.next_t = PRISM_INF;
            return true;
        }
        return top_next(w, stack, PRISM_INF, 0, PRISM_INF, 0);
    }
    // An inner child: walked next if still nearer than the best hit.
    return top_next(w, stack, PRISM_INF, 0, w.next_t, w.next_index);
}

// One step of prism_core::two_level::TwoLevel::closest_hit: one iteration
// of walk_top's loop (up to the first instance it enters, `next` keeping the
// rest of the step), or inside an instance one iteration of
// prism_core::traverse::closest_hit's loop (closest_hit_step's, with the
// hit's instance) and, when that walk is over, the rest of the top node's
// step. Both levels share the node fetch, the box tests and the choice of the
// next node, so that lanes of a warp at different levels differ only in what
// they do at a leaf. False when the whole walk is over.
template <int K, bool TMIN_NONNEG>
__device__ __forceinline__ bool two_level_closest_step(TwoLevelWalk& w, u32* stack, const SceneView& s) {
    const bool top = w.inst == PRISM_NO_INSTANCE;
    if (!node_in_range(w.node, top ? s.top_node_count : s.node_count)) {
        return top ? false : leave_instance<K>(w, stack, s);
    }
    const RayPre& pre = w.pre;
    const float4* n = reinterpret_cast<const float4*>((top ? s.top_nodes : s.nodes) + w.node);
    const float4 ll = __ldg(n + 0);
    const float4 lh = __ldg(n + 1);
    const float4 rl = __ldg(n + 2);
    const float4 rh = __ldg(n + 3);
    const float tl = child_box<TMIN_NONNEG, false>(pre, ll, lh, w.tmin, w.best.t);
    const float tr = child_box<TMIN_NONNEG, false>(pre, rl, rh, w.tmin, w.best.t);
    const u32 l_index = __float_as_uint(ll.w), l_count = __float_as_uint(lh.w);
    const u32 r_index = __float_as_uint(rl.w), r_count = __float_as_uint(rh.w);
    const bool swap = tr < tl;
    float t_near = swap ? tr : tl;
    const u32 near_index = swap ? r_index : l_index;
    const u32 near_count = swap ? r_count : l_count;
    float t_far = swap ? tl : tr;
    const u32 far_index = swap ? l_index : r_index;
    const u32 far_count = swap ? l_count : r_count;
    if (top) {
        // Instances (leaves of one) are entered right away, nearest first.
        if (near_count > 0) {
            if (t_near < w.best.t && enter_instance<K>(w, s, near_index)) {
                w.next_index = far_index;
                w.next_t = t_far;
                w.next_instance = far_count > 0;
                return true;
            }
            t_near = PRISM_INF;
        }
        if (far_count > 0) {
            if (t_far < w.best.t && enter_instance<K>(w, s, far_index)) {
                // The near child is then all that is left: an inner node, or
                // nothing (t_near = +inf) where it was an instance.
                w.next_index = near_index;
                w.next_t = t_near;
                w.next_instance = false;
                return true;
            }
            t_far = PRISM_INF;
        }
    } else if (near_count > 0 || far_count > 0) {
        // Leaves are intersected right away, nearest first, by one loop over
        // both (see closest_hit_step).
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
        if ((PRISM_PRIM_KINDS(K) & PRISM_TRIANGLES) != 0 && !w.triangles_ready &&
            (a_count > 0 || (b_count > 0 && t_far_leaf < w.best.t))) {
            ray_pre_triangles(w.pre);
            w.triangles_ready = true;
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
            float t, u, v;
            if (ray_primitive<PRISM_PRIM_KINDS(K)>(s, pre, s.prims + a_first, w.tmin, w.best.t, t, u, v)) {
                w.best.t = t;
                w.best.u = u;
                w.best.v = v;
                w.best.prim = a_first;
                w.best.instance = w.inst;
            }
            ++a_first;
            --a_count;
        }
    }
    // This level's stack entries lie above `floor`; each level keeps core's
    // bound of its own.
    const u32 floor = top ? 0u : w.top_sp;
    const bool go_near = t_near < w.best.t;
    const bool go_far = t_far < w.best.t;
    if (go_near && go_far) {
        if (w.sp - floor < PRISM_TRAVERSAL_STACK_SIZE) {
            stack[w.sp] = far_index;
            ++w.sp;
        }
        w.node = near_index;
    } else if (go_near) {
        w.node = near_index;
    } else if (go_far) {
        w.node = far_index;
    } else if (w.sp > floor) {
        --w.sp;
        w.node = stack[w.sp];
    } else {
        return top ? false : leave_instance<K>(w, stack, s);
    }
    return true;
}

// The tail of TwoLevel::closest_hit: a miss has t = +inf (and prim, instance none).
__device__ __forceinline__ Hit two_level_closest_end(const TwoLevelWalk& w) {
    Hit h = w.best;
    if (h.prim == PRISM_NO_PRIM) {
        h.t = PRISM_INF;
    }
    return h;
}

// One iteration of prism_core::traverse::any_hit's loop in the tree of the
// instance the walk is in (any_hit_step's), and the top node step's rest
// when that walk is over: PRISM_STEP_HIT or PRISM_STEP_MISS when the whole
// walk is over, else PRISM_STEP_MORE.
template <int K, bool TMIN_NONNEG>
__device__ __forceinline__ int instance_any_step(TwoLevelWalk& w, u32* stack, const SceneView& s) {
    if (!node_in_range(w.node, s.node_count)) {
        return leave_instance<K>(w, stack, s) ? PRISM_STEP_MORE : PRISM_STEP_MISS;
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
    if ((PRISM_PRIM_KINDS(K) & PRISM_TRIANGLES) != 0 && !w.triangles_ready && (a_count > 0 || b_count > 0)) {
        ray_pre_triangles(w.pre);
        w.triangles_ready = true;
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
        if (ray_primitive<PRISM_PRIM_KINDS(K)>(s, pre, s.prims + a_first, w.tmin, w.best.t, t, u, v)) {
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
        return leave_instance<K>(w, stack, s) ? PRISM_STEP_MORE : PRISM_STEP_MISS;
    }
    return PRISM_STEP_MORE;
}

// One step of prism_core::two_level::TwoLevel::any_hit.
template <int K, bool TMIN_NONNEG>
__device__ __forceinline__ int two_level_any_step(TwoLevelWalk& w, u32* stack, const SceneView& s) {
    if (w.inst == PRISM_NO_INSTANCE) {
        return top_step<K, TMIN_NONNEG>(w, stack, s) ? PRISM_STEP_MORE : PRISM_STEP_MISS;
    }
    return instance_any_step<K, TMIN_NONNEG>(w, stack, s);
}

// mirrors prism_core::two_level::TwoLevel::closest_hit: `prim` of the result
// is the slot, `instance` the instance hit.
template <int K, bool TMIN_NONNEG>
__device__ __forceinline__ Hit closest_hit_instances(const SceneView& s, const Ray& ray, u32 mask) {
    TwoLevelWalk w;
    u32 stack[PRISM_TWO_LEVEL_STACK_SIZE];
    two_level_begin<K>(w, ray, mask);
    while (two_level_closest_step<K, TMIN_NONNEG>(w, stack, s)) {
    }
    return two_level_closest_end(w);
}

// mirrors prism_core::two_level::TwoLevel::any_hit
template <int K, bool TMIN_NONNEG>
__device__ __forceinline__ bool any_hit_instances(const SceneView& s, const Ray& ray, u32 mask) {
    TwoLevelWalk w;
    u32 stack[PRISM_TWO_LEVEL_STACK_SIZE];
    two_level_begin<K>(w, ray, mask);
    for (;;) {
        const int r = two_level_any_step<K, TMIN_NONNEG>(w, stack, s);
        if (r != PRISM_STEP_MORE) {
            return r == PRISM_STEP_HIT;
        }
    }
}

// The batch kernels' walks over instances (see TreeClosest): every ray is
// walked, its mask meeting the instances'.
template <int K>
struct InstancesClosest {
    static constexpr int KINDS = K;
    static constexpr u32 STACK = PRISM_TWO_LEVEL_STACK_SIZE;
    TwoLevelWalk w;

    __device__ __forceinline__ bool begin(const SceneView& s, const Ray& ray, u32 mask) {
        (void)s;
        two_level_begin<K>(w, ray, mask);
        return true;
    }
    __device__ __forceinline__ bool step(const SceneView& s, u32* stack) {
        return two_level_closest_step<K, false>(w, stack, s);
    }
    __device__ __forceinline__ Hit end() { return two_level_closest_end(w); }
};

template <int K>
struct InstancesAny {
    static constexpr int KINDS = K;
    static constexpr u32 STACK = PRISM_TWO_LEVEL_STACK_SIZE;
    TwoLevelWalk w;

    __device__ __forceinline__ bool begin(const SceneView& s, const Ray& ray, u32 mask) {
        (void)s;
        two_level_begin<K>(w, ray, mask);
        return true;
    }
    __device__ __forceinline__ int step(const SceneView& s, u32* stack) {
        return two_level_any_step<K, false>(w, stack, s);
    }
};
