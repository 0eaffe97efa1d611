// The refit of a mesh geometry's tree after new vertices, on the device:
// mirrors the slots and boxes of prism_core::update's refresh_geometry
// (triangle_record for every slot, then prism_core::two_level::refit).
//
// prism_refit_slots (prism.cu) writes every slot of the geometry from the
// new vertices; prism_refit_boxes then recomputes its tree's boxes bottom-up
// in one launch, from per-node links the host worked out once at upload
// (src/backend/refit.rs): a thread starts at each node whose children are all
// leaves, writes their boxes and the node's box into its parent's row, and
// counts its arrival at the parent; the last child to arrive (a parent waits
// for as many as it has inner children) goes on up with the parent. A box is
// a minimum and maximum over the same primitives as core's, so the boxes are
// core's whatever the order of the threads.
#pragma once
#include "prism_types.cuh"

// No parent: the tree's root (src/backend/refit.rs, NO_PARENT).
#define PRISM_NO_PARENT 0xFFFFFFFFu

// mirrors prism_core::accel::triangle_record: the slot of triangle `id`; a
// zero-area triangle ((v1 - v0) x (v2 - v0) exactly 0, every product rounded
// on its own as in core) is stored as three copies of v0, which no ray hits.
__device__ __forceinline__ void triangle_record(Primitive* slot, u32 id, V3 v0, V3 v1, V3 v2) {
    const V3 e1 = v1 - v0;
    const V3 e2 = v2 - v0;
    const float cx = __fmul_rn(e1.y, e2.z) - __fmul_rn(e2.y, e1.z);
    const float cy = __fmul_rn(e1.z, e2.x) - __fmul_rn(e2.z, e1.x);
    const float cz = __fmul_rn(e1.x, e2.y) - __fmul_rn(e2.x, e1.y);
    if (cx == 0.0f && cy == 0.0f && cz == 0.0f) {
        v1 = v0;
        v2 = v0;
    }
    slot->a = make_float4(v0.x, v0.y, v0.z, __uint_as_float(id));
    slot->b = make_float4(v1.x, v1.y, v1.z, __uint_as_float(PRISM_KIND_TRIANGLE));
    slot->c = make_float4(v2.x, v2.y, v2.z, 0.0f);
}

// Vertex `i` of `count` packed xyz positions (a vertex index past the last,
// which core's checks rule out, reads the origin instead of past the buffer).
__device__ __forceinline__ V3 vertex(const float* __restrict__ positions, u32 count, u32 i) {
    if (i >= count) {
        return v3s(0.0f);
    }
    const float* p = positions + 3u * (u64)i;
    return v3(__ldg(p), __ldg(p + 1), __ldg(p + 2));
}

// Slot `slot` of a mesh geometry rewritten from its vertices: the triangle of
// the slot's primitive id (prism_core::update::refresh_geometry).
// `triangles` holds three vertex indices a triangle, by primitive id.
__device__ __forceinline__ void refit_slot(Primitive* __restrict__ prims, u32 slot, const u32* __restrict__ triangles,
                                           u32 triangle_count, const float* __restrict__ positions,
                                           u32 vertex_count) {
    Primitive* p = prims + slot;
    const u32 id = __float_as_uint(p->a.w);
    if (id >= triangle_count) {
        return;
    }
    const u32* t = triangles + 3u * (u64)id;
    triangle_record(p, id, vertex(positions, vertex_count, __ldg(t)), vertex(positions, vertex_count, __ldg(t + 1)),
                    vertex(positions, vertex_count, __ldg(t + 2)));
}

// A box being gathered: the union of nothing is (+inf, -inf), as
// prism_core::aabb::Aabb::EMPTY.
struct Box {
    V3 lo, hi;
};

__device__ __forceinline__ Box empty_box() { return Box{v3s(PRISM_INF), v3s(-PRISM_INF)}; }

__device__ __forceinline__ void grow(Box& b, V3 lo, V3 hi) {
    b.lo = v3(fminf(b.lo.x, lo.x), fminf(b.lo.y, lo.y), fminf(b.lo.z, lo.z));
    b.hi = v3(fmaxf(b.hi.x, hi.x), fmaxf(b.hi.y, hi.y), fmaxf(b.hi.z, hi.z));
}

// mirrors the leaf case of prism_core::two_level::refit's child_box: the union
// of the leaf's slots' boxes (primitive_bounds of a triangle: the min and max
// of its corners). The slots were written by the launch before.
__device__ __forceinline__ Box leaf_box(const Primitive* __restrict__ prims, u32 first, u32 count) {
    Box b = empty_box();
    for (u32 k = 0; k < count; ++k) {
        const Primitive* p = prims + first + k;
        const V3 a = xyz(p->a), pb = xyz(p->b), c = xyz(p->c);
        grow(b, v3(fminf(fminf(a.x, pb.x), c.x), fminf(fminf(a.y, pb.y), c.y), fminf(fminf(a.z, pb.z), c.z)),
             v3(fmaxf(fmaxf(a.x, pb.x), c.x), fmaxf(fmaxf(a.y, pb.y), c.y), fmaxf(fmaxf(a.z, pb.z), c.z)));
    }
    return b;
}

// One child row pair of a node (`lo`, `hi`: its float4 rows in the node):
// a leaf's box is worked out and written here; an inner child's box was
// written by the thread that finished that child. Adds the child's box to
// `total` (an absent child adds nothing, node_box in core).
__device__ __forceinline__ void finish_child(float4* lo, float4* hi, const Primitive* __restrict__ prims, Box& total) {
    // Rows other threads wrote in this launch: read through the L2 (__ldcg),
    // not a possibly stale L1 line.
    const float4 l = __ldcg(lo);
    const float4 h = __ldcg(hi);
    const u32 index = __float_as_uint(l.w), count = __float_as_uint(h.w);
    if (index == PRISM_EMPTY_CHILD) {
        return;
    }
    if (count > 0) {
        const Box b = leaf_box(prims, index, count);
        *lo = make_float4(b.lo.x, b.lo.y, b.lo.z, l.w);
        *hi = make_float4(b.hi.x, b.hi.y, b.hi.z, h.w);
        grow(total, b.lo, b.hi);
    } else {
        grow(total, xyz(l), xyz(h));
    }
}

// The walk up of one refit thread from node `node`, whose inner children (if
// any) are finished: its leaf children's boxes, then its box into its
// parent's row, then on with the parent if this was the parent's last
// arrival. `links[i]` = (parent, side | inner children << 1) (see
// src/backend/refit.rs); `arrivals[i]` counts arrivals at node i, back to 0
// after the last (atomicInc wraps at the count), so no launch resets it.
__device__ __forceinline__ void refit_up(BvhNode* __restrict__ nodes, const Primitive* __restrict__ prims,
                                         const uint2* __restrict__ links, u32* __restrict__ arrivals, u32 node) {
    for (;;) {
        BvhNode* n = nodes + node;
        Box total = empty_box();
        finish_child(&n->left_lo, &n->left_hi, prims, total);
        finish_child(&n->right_lo, &n->right_hi, prims, total);
        const uint2 link = __ldg(links + node);
        if (link.x == PRISM_NO_PARENT) {
            return;
        }
        // This node's box into the parent's row on its side: an inner
        // child's row is (min, node index), (max, count 0).
        BvhNode* p = nodes + link.x;
        float4* lo = (link.y & 1u) == 0 ? &p->left_lo : &p->right_lo;
        float4* hi = (link.y & 1u) == 0 ? &p->left_hi : &p->right_hi;
        *lo = make_float4(total.lo.x, total.lo.y, total.lo.z, __uint_as_float(node));
        *hi = make_float4(total.hi.x, total.hi.y, total.hi.z, __uint_as_float(0u));
        // The rows are written before the arrival is counted, and the last
        // arrival reads the other children's rows after it sees their counts.
        __threadfence();
        const u32 wait = __ldg(links + link.x).y >> 1;
        if (atomicInc(arrivals + link.x, wait - 1u) != wait - 1u) {
            return;
        }
        __threadfence();
        node = link.x;
    }
}
