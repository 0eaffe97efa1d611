// BVH traversal: mirrors prism_core::traverse.
//
// Front to back with a fixed stack, both child boxes from one 64-byte node fetch
// (four 16-byte read-only loads), leaves intersected at once (nearest first),
// the nearer inner child visited next and the farther pushed. The two leaves a
// node may hold are walked by one loop, so lanes of a warp that intersect
// primitives do it together whichever leaf they are in; the order of the tests
// (near leaf, then far leaf if still closer than the best hit) is core's.
//
// K (PRISM_SPHERES, PRISM_TRIANGLES, PRISM_MIXED, with PRISM_HEIGHTFIELDS where
// the scene holds a heightfield) says which primitive kinds the scene holds;
// core's run-time kind check is resolved at compile time when only one kind
// exists.
//
// OCTANTS: the node buffer holds eight near-first copies of the tree
// (prism_core::gpu::near_first_octant_copies, uploaded for small trees by
// src/backend/upload.rs): copy o has the child boxes' bounds swapped on every axis
// whose bit is set in o, its inner child indices offset by o * node_count, and
// each node's children in the order a ray of octant o visits them (nearer along
// the node's split axis first). A traversal starts at the root of its ray's
// copy (RayPre::octant) and never leaves it, so each box test reads its near
// and far planes directly (ray_aabb_octant) with no per-step offset, and the
// children are taken in slot order with no comparison of their entry
// distances: this is prism_core::traverse::closest_hit_near_first (and
// any_hit_near_first), whose box values and leaf tests are core's and whose
// hits are closest_hit's except where two primitives tie at exactly the same t.
#pragma once
#include "heightfield.cuh"

// mirrors prism_core::traverse::ray_primitive (and, with K's
// PRISM_HEIGHTFIELDS bit, the heightfield branch of leaf_closest and leaf_any)
//
// Returns whether primitive `p` is hit within (tmin, tmax); writes t, u, v (a
// heightfield: u and v hold its face's and cell's bits, heightfield.cuh).
// Without PRISM_HEIGHTFIELDS in K the heightfield branch is not compiled: the
// scene has none.
template <int K>
__device__ __forceinline__ bool ray_primitive(const SceneView& s, const RayPre& pre, const Primitive* p, float tmin,
                                              float tmax, float& t, float& u, float& v) {
    const float4 a = __ldg(&p->a);
    const float4 b = __ldg(&p->b);
    if ((K & PRISM_HEIGHTFIELDS) != 0 && __float_as_uint(b.w) == PRISM_KIND_HEIGHTFIELD) {
        return ray_heightfield(s, pre, __ldg(&p->c), tmin, tmax, t, u, v);
    }
    const bool sphere = K == PRISM_SPHERES || ((K & PRISM_MIXED) == PRISM_MIXED && __float_as_uint(b.w) == PRISM_KIND_SPHERE);
    if (sphere) {
        u = 0.0f;
        v = 0.0f;
        return ray_sphere(pre.origin, pre.dir, pre.dir_dot, xyz(a), b.x, tmin, tmax, t);
    }
    if (K & PRISM_TRIANGLES) {
        const float4 c = __ldg(&p->c);
        return ray_triangle(pre, xyz(a), xyz(b), xyz(c), tmin, tmax, t, u, v);
    }
    return false;
}

#ifndef PRISM_LEAF_BRANCH
#define PRISM_LEAF_BRANCH 1
#endif

// Unless the host says it checked the tree at upload, every leaf and node is
// checked here.
#ifndef PRISM_TREE_CHECKS
#define PRISM_TREE_CHECKS 1
#endif
// The node check alone can be put back (-DPRISM_NODE_CHECKS=1) to measure it.
#ifndef PRISM_NODE_CHECKS
#define PRISM_NODE_CHECKS PRISM_TREE_CHECKS
#endif

// Whether the leaf `[first, first + count)` lies inside the primitive buffer
// (core: `prims.get(first..first + count)` is `None` otherwise and the leaf is skipped).
// With PRISM_TREE_CHECKS 0 the host has checked every leaf of the uploaded tree
// (`prism_core::gpu::check_tree`, run before upload), so the answer is known to be true.
__device__ __forceinline__ bool leaf_in_range(u32 first, u32 count, u32 prim_count) {
#if PRISM_TREE_CHECKS
    return count <= prim_count && first <= prim_count - count;
#else
    (void)first;
    (void)count;
    (void)prim_count;
    return true;
#endif
}

// Whether `node` is a node of the tree (core: `nodes.get(node)` is `None`
// otherwise and the traversal ends). With PRISM_NODE_CHECKS 0 the host has
// checked that the tree has a root and that every child a traversal can enter
// is a node (`prism_core::gpu::check_tree`), so the answer is known to be true.
__device__ __forceinline__ bool node_in_range(u32 node, u32 node_count) {
#if PRISM_NODE_CHECKS
    return node < node_count;
#else
    (void)node;
    (void)node_count;
    return true;
#endif
}

// The entry distance into a child box of a node (ray_aabb), read from the
// octant copy's swapped bounds when OCTANTS.
template <bool TMIN_NONNEG, bool OCTANTS>
__device__ __forceinline__ float child_box(const RayPre& pre, float4 lo, float4 hi, float tmin, float tmax) {
    return OCTANTS ? ray_aabb_octant<TMIN_NONNEG>(pre, xyz(lo), xyz(hi), tmin, tmax)
                   : ray_aabb<TMIN_NONNEG>(pre, xyz(lo), xyz(hi), tmin, tmax);
}

// The nodes in the node buffer: all eight copies when OCTANTS.
template <bool OCTANTS>
__device__ __forceinline__ u32 node_total(const SceneView& s) {
    return OCTANTS ? 8u * s.node_count : s.node_count;
}

// The root of the tree a traversal starts at: its octant's copy when OCTANTS.
template <bool OCTANTS>
__device__ __forceinline__ u32 root_node(const RayPre& pre, const SceneView& s) {
    return OCTANTS ? pre.octant * s.node_count : 0u;
}

// The state of closest_hit between two iterations of its loop, so that a kernel
// can interleave traversal steps with other work (see prism.cu). The stack is
// kept apart (an array indexed at run time lives in local memory; the scalars
// here stay in registers).
struct ClosestHit {
    RayPre pre;
    float tmin;
    Hit best;
    u32 node;
    u32 sp;
};

// The head of prism_core::traverse::closest_hit, before its loop.
template <int K, bool OCTANTS = false>
__device__ __forceinline__ void closest_hit_begin(ClosestHit& c, const Ray& ray, const SceneView& s) {
    c.pre = ray_pre<K>(ray.origin, ray.dir);
    c.tmin = ray.tmin;
    c.best.t = ray.tmax;
    c.best.u = 0.0f;
    c.best.v = 0.0f;
    c.best.prim = PRISM_NO_PRIM;
    // A flat scene's hits are on its one implicit instance (Hit::instance 0).
    c.best.instance = 0u;
    c.sp = 0;
    c.node = root_node<OCTANTS>(c.pre, s);
}

// One iteration of prism_core::traverse::closest_hit's loop (with leaf_closest
// folded in; closest_hit_near_first's when OCTANTS); false when the loop is over.
template <int K, bool TMIN_NONNEG = false, bool OCTANTS = false>
__device__ __forceinline__ bool closest_hit_step(ClosestHit& c, u32* stack, const SceneView& s) {
    if (!node_in_range(c.node, node_total<OCTANTS>(s))) {
        return false;
    }
    const RayPre& pre = c.pre;
    const float4* n = reinterpret_cast<const float4*>(s.nodes + c.node);
    const float4 ll = __ldg(n + 0);
    const float4 lh = __ldg(n + 1);
    const float4 rl = __ldg(n + 2);
    const float4 rh = __ldg(n + 3);
    const float tl = child_box<TMIN_NONNEG, OCTANTS>(pre, ll, lh, c.tmin, c.best.t);
    const float tr = child_box<TMIN_NONNEG, OCTANTS>(pre, rl, rh, c.tmin, c.best.t);
    const u32 l_index = __float_as_uint(ll.w), l_count = __float_as_uint(lh.w);
    const u32 r_index = __float_as_uint(rl.w), r_count = __float_as_uint(rh.w);
    // Order the children near to far (the near-first copies hold them in order).
    const bool swap = !OCTANTS && tr < tl;
    float t_near = swap ? tr : tl;
    const u32 near_index = swap ? r_index : l_index;
    const u32 near_count = swap ? r_count : l_count;
    float t_far = swap ? tl : tr;
    const u32 far_index = swap ? l_index : r_index;
    const u32 far_count = swap ? l_count : r_count;
    // Leaves are intersected right away, nearest first: leaf A (near), then
    // leaf B (far) if its box is still closer than the best hit. Only a node
    // with a leaf child enters this block, so a warp whose lanes all stand at
    // inner nodes passes it with one branch (-DPRISM_LEAF_BRANCH=0 runs it at
    // every node, to measure that).
#if PRISM_LEAF_BRANCH
    if (near_count > 0 || far_count > 0)
#endif
    {
        u32 a_first = 0, a_count = 0, b_first = 0, b_count = 0;
        if (near_count > 0) {
            if (t_near < c.best.t && leaf_in_range(near_index, near_count, s.prim_count)) {
                a_first = near_index;
                a_count = near_count;
            }
            t_near = PRISM_INF;
        }
        // The far leaf's box is compared with the best hit after the near leaf.
        const float t_far_leaf = t_far;
        if (far_count > 0) {
            if (leaf_in_range(far_index, far_count, s.prim_count)) {
                b_first = far_index;
                b_count = far_count;
            }
            t_far = PRISM_INF;
        }
        for (;;) {
            if (a_count == 0) {
                if (b_count == 0 || !(t_far_leaf < c.best.t)) {
                    break;
                }
                a_first = b_first;
                a_count = b_count;
                b_count = 0;
            }
            float t, u, v;
            if (ray_primitive<K>(s, pre, s.prims + a_first, c.tmin, c.best.t, t, u, v)) {
                c.best.t = t;
                c.best.u = u;
                c.best.v = v;
                c.best.prim = a_first;
            }
            ++a_first;
            --a_count;
        }
    }
    const bool go_near = t_near < c.best.t;
    const bool go_far = t_far < c.best.t;
    if (go_near && go_far) {
        if (c.sp < PRISM_TRAVERSAL_STACK_SIZE) {
            stack[c.sp] = far_index;
            ++c.sp;
        }
        c.node = near_index;
    } else if (go_near) {
        c.node = near_index;
    } else if (go_far) {
        c.node = far_index;
    } else if (c.sp > 0) {
        --c.sp;
        c.node = stack[c.sp];
    } else {
        return false;
    }
    return true;
}

// The tail of prism_core::traverse::closest_hit, after its loop.
__device__ __forceinline__ Hit closest_hit_end(ClosestHit& c) {
    if (c.best.prim == PRISM_NO_PRIM) {
        c.best.t = PRISM_INF;
    }
    return c.best;
}

// mirrors prism_core::traverse::closest_hit (closest_hit_near_first when OCTANTS)
//
// `prim` of the result is the slot in `prims`; a miss has prim == NO_PRIM and t == +inf.
template <int K, bool TMIN_NONNEG = false, bool OCTANTS = false>
__device__ __forceinline__ Hit closest_hit(const SceneView& s, const Ray& ray) {
    ClosestHit c;
    u32 stack[PRISM_TRAVERSAL_STACK_SIZE];
    closest_hit_begin<K, OCTANTS>(c, ray, s);
    while (closest_hit_step<K, TMIN_NONNEG, OCTANTS>(c, stack, s)) {
    }
    return closest_hit_end(c);
}

// The state of any_hit between two iterations of its loop (see ClosestHit).
struct AnyHit {
    RayPre pre;
    float tmin;
    float tmax;
    u32 node;
    u32 sp;
};

// any_hit_step's outcomes.
#define PRISM_STEP_MORE 0
#define PRISM_STEP_MISS 1
#define PRISM_STEP_HIT 2

// The head of prism_core::traverse::any_hit, before its loop.
template <int K, bool OCTANTS = false>
__device__ __forceinline__ void any_hit_begin(AnyHit& a, const Ray& ray, const SceneView& s) {
    a.pre = ray_pre<K>(ray.origin, ray.dir);
    a.tmin = ray.tmin;
    a.tmax = ray.tmax;
    a.sp = 0;
    a.node = root_node<OCTANTS>(a.pre, s);
}

// One iteration of prism_core::traverse::any_hit's loop (with leaf_any folded
// in; any_hit_near_first's when OCTANTS): PRISM_STEP_HIT or PRISM_STEP_MISS
// when any_hit would return, else PRISM_STEP_MORE.
template <int K, bool TMIN_NONNEG = false, bool OCTANTS = false>
__device__ __forceinline__ int any_hit_step(AnyHit& a, u32* stack, const SceneView& s) {
    if (!node_in_range(a.node, node_total<OCTANTS>(s))) {
        return PRISM_STEP_MISS;
    }
    const RayPre& pre = a.pre;
    const float4* n = reinterpret_cast<const float4*>(s.nodes + a.node);
    const float4 ll = __ldg(n + 0);
    const float4 lh = __ldg(n + 1);
    const float4 rl = __ldg(n + 2);
    const float4 rh = __ldg(n + 3);
    const float tl = child_box<TMIN_NONNEG, OCTANTS>(pre, ll, lh, a.tmin, a.tmax);
    const float tr = child_box<TMIN_NONNEG, OCTANTS>(pre, rl, rh, a.tmin, a.tmax);
    const u32 l_index = __float_as_uint(ll.w), l_count = __float_as_uint(lh.w);
    const u32 r_index = __float_as_uint(rl.w), r_count = __float_as_uint(rh.w);
    bool go_left = tl < PRISM_INF;
    bool go_right = tr < PRISM_INF;
    // Leaves: left first, then right; the first hit ends the traversal.
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
        if (ray_primitive<K>(s, pre, s.prims + a_first, a.tmin, a.tmax, t, u, v)) {
            return PRISM_STEP_HIT;
        }
        ++a_first;
        --a_count;
    }
    // Visit the nearer inner child first: it is the likelier to hold an occluder
    // (the near-first copies hold the children in order).
    const bool swap = !OCTANTS && tr < tl;
    const u32 near = swap ? r_index : l_index;
    const u32 far = swap ? l_index : r_index;
    const bool go_near = swap ? go_right : go_left;
    const bool go_far = swap ? go_left : go_right;
    if (go_near && go_far) {
        if (a.sp < PRISM_TRAVERSAL_STACK_SIZE) {
            stack[a.sp] = far;
            ++a.sp;
        }
        a.node = near;
    } else if (go_near) {
        a.node = near;
    } else if (go_far) {
        a.node = far;
    } else if (a.sp > 0) {
        --a.sp;
        a.node = stack[a.sp];
    } else {
        return PRISM_STEP_MISS;
    }
    return PRISM_STEP_MORE;
}

// mirrors prism_core::traverse::any_hit (any_hit_near_first when OCTANTS)
template <int K, bool TMIN_NONNEG = false, bool OCTANTS = false>
__device__ __forceinline__ bool any_hit(const SceneView& s, const Ray& ray) {
    AnyHit a;
    u32 stack[PRISM_TRAVERSAL_STACK_SIZE];
    any_hit_begin<K, OCTANTS>(a, ray, s);
    for (;;) {
        const int r = any_hit_step<K, TMIN_NONNEG, OCTANTS>(a, stack, s);
        if (r != PRISM_STEP_MORE) {
            return r == PRISM_STEP_HIT;
        }
    }
}

// A flat scene is one implicit instance of mask 0xFF (prism_core::Accel::
// intersect and occluded): a batch ray whose mask has none of those bits sees
// nothing.
#define PRISM_FLAT_MASK 0xFFu

// The batch kernels' walks over one tree (batch.cuh; two_level.cuh has those
// over instances): begin(s, ray, mask) starts a ray and returns false when the
// ray needs no walk (its answer is a miss); step(s, stack) is one iteration of
// the traversal's loop; end() (closest hit) is the answer after the last.
// STACK is the number of entries of the stack the kernel keeps apart (an array
// in a struct took the whole struct into local memory).
template <int K>
struct TreeClosest {
    static constexpr int KINDS = K;
    static constexpr u32 STACK = PRISM_TRAVERSAL_STACK_SIZE;
    ClosestHit c;

    __device__ __forceinline__ bool begin(const SceneView& s, const Ray& ray, u32 mask) {
        if ((mask & PRISM_FLAT_MASK) == 0) {
            return false;
        }
        closest_hit_begin<K>(c, ray, s);
        return true;
    }
    // false once the walk is over
    __device__ __forceinline__ bool step(const SceneView& s, u32* stack) { return closest_hit_step<K>(c, stack, s); }
    __device__ __forceinline__ Hit end() { return closest_hit_end(c); }
};

template <int K>
struct TreeAny {
    static constexpr int KINDS = K;
    static constexpr u32 STACK = PRISM_TRAVERSAL_STACK_SIZE;
    AnyHit a;

    __device__ __forceinline__ bool begin(const SceneView& s, const Ray& ray, u32 mask) {
        if ((mask & PRISM_FLAT_MASK) == 0) {
            return false;
        }
        any_hit_begin<K>(a, ray, s);
        return true;
    }
    // PRISM_STEP_HIT or PRISM_STEP_MISS once the walk is over, else PRISM_STEP_MORE
    __device__ __forceinline__ int step(const SceneView& s, u32* stack) { return any_hit_step<K>(a, stack, s); }
};
