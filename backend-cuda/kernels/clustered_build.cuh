// The clustered tree built on the device: mirrors prism_core::ploc::build,
// pass for pass, so that the device builds core's tree (the same slots and
// nodes, boxes equal as floats). It starts from the fast build's boxes, codes
// and sort (fast_build.cuh).
//
// Launches (src/backend/clustered_build.rs), all on one stream:
//   prism_ploc_init     a thread a slot: its box and cluster; the round state
//   per round, while more than PRISM_PLOC_TAIL clusters are left:
//     prism_ploc_nearest  a block a run of clusters (their boxes and their
//                         neighbours' in shared memory): each one's nearest
//     prism_ploc_count    a block a run: its places kept and nodes made
//     prism_ploc_merge    a block a run: its offsets, the sum of the runs'
//                         counts before it; mutual pairs become nodes, the
//                         rest move down
//   prism_ploc_tail     one block: the rounds left, over at most PRISM_PLOC_TAIL
//                       clusters in shared memory
//   prism_ploc_slots    a thread a slot, walking up: its final slot, its
//                       primitive record, the depth check
//   prism_ploc_emit     a thread a node, walking up: its depth-first index and
//                       its row pair of children
// The host launches rounds in batches and reads the cluster count between
// them (a round past the last does nothing).
#pragma once
#include "fast_build.cuh"

// mirrors prism_core::ploc::SEARCH_RADIUS
#define PRISM_PLOC_RADIUS 3
// The most clusters the one-block tail takes: one a thread, their boxes in
// shared memory (24 KiB).
#define PRISM_PLOC_TAIL_THREADS 1024
#define PRISM_PLOC_TAIL 1024u
// A walk up from a slot: at most 63 kept levels above its leaf and 7 inside a
// leaf of at most 8 primitives; longer means the tree is too deep.
#define PRISM_PLOC_MAX_WALK 72u

// The round state (u32 words): cluster count and nodes made, one pair for
// even rounds and one for odd (a round reads its own, writes the next's); the
// too-deep flag; the nodes made when the tail ended; 1 once it ended with one
// cluster.
#define PLOC_COUNT(r) ((r) & 1u)
#define PLOC_MADE(r) (2u + ((r) & 1u))
#define PLOC_TOO_DEEP 4u
#define PLOC_NODES 5u
#define PLOC_DONE 6u
#define PLOC_STATE_WORDS 8u

// mirrors prism_core::ploc::pair_key: area bits, distance, lower place's
// parity, which side.
__device__ __forceinline__ u64 ploc_key(float area, u32 i, u32 j) {
    const u32 distance = i > j ? i - j : j - i;
    const u32 lower = min(i, j);
    return ((u64)__float_as_uint(area) << 32) | (u64)((distance << 2) | ((lower & 1u) << 1) | (j > i ? 1u : 0u));
}

// The half area of the union of two boxes (mirrors Aabb::union, then
// Aabb::half_area).
__device__ __forceinline__ float ploc_union_area(V3 alo, V3 ahi, V3 blo, V3 bhi) {
    const V3 lo = v3(fminf(alo.x, blo.x), fminf(alo.y, blo.y), fminf(alo.z, blo.z));
    const V3 hi = v3(fmaxf(ahi.x, bhi.x), fmaxf(ahi.y, bhi.y), fmaxf(ahi.z, bhi.z));
    return fast_half_area(lo, hi);
}

// Slot t's box (`slot_boxes`, in Morton order) and cluster (clusters[0]); the
// state of round 0: n clusters, no nodes, no ticket, not too deep.
__device__ __forceinline__ void ploc_init(const u32* __restrict__ order, u32 n, const float4* __restrict__ boxes,
                                          float4* __restrict__ slot_boxes, u32* __restrict__ ids,
                                          float4* __restrict__ cluster_boxes, u32* __restrict__ state) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) {
        const u32 id = __ldg(order + t);
        const float4 lo = boxes[2u * id], hi = boxes[2u * id + 1u];
        slot_boxes[2u * t] = lo;
        slot_boxes[2u * t + 1u] = hi;
        cluster_boxes[2u * t] = lo;
        cluster_boxes[2u * t + 1u] = hi;
        ids[t] = t | PRISM_FAST_LEAF;
    }
    if (t < PLOC_STATE_WORDS) {
        state[t] = t == 0u ? n : 0u;
    }
}

// Cluster i's nearest among the RADIUS on either side of it, of the `m` in
// `boxes` (step 2 of prism_core::ploc::build). `lo`/`hi` read box k of the
// window.
template <typename Box>
__device__ __forceinline__ u32 ploc_nearest_of(u32 i, u32 m, Box box) {
    const u32 first = i > PRISM_PLOC_RADIUS ? i - PRISM_PLOC_RADIUS : 0u;
    const u32 last = min(i + PRISM_PLOC_RADIUS, m - 1u);
    V3 ilo, ihi;
    box(i, ilo, ihi);
    u32 best = i;
    u64 best_key = ~0ull;
    for (u32 j = first; j <= last; ++j) {
        if (j == i) {
            continue;
        }
        V3 jlo, jhi;
        box(j, jlo, jhi);
        const u64 key = ploc_key(ploc_union_area(ilo, ihi, jlo, jhi), i, j);
        if (key < best_key) {
            best_key = key;
            best = j;
        }
    }
    return best;
}

// Round `round`'s nearest neighbours: block b takes clusters [256 b, 256 b +
// 256), with the boxes from RADIUS before to RADIUS after in shared memory.
__device__ __forceinline__ void ploc_nearest(const float4* __restrict__ boxes, u32* __restrict__ nearest,
                                             const u32* state, u32 round) {
    constexpr u32 SPAN = PRISM_FAST_THREADS + 2u * PRISM_PLOC_RADIUS;
    __shared__ float s_box[6][SPAN];
    const u32 m = state[PLOC_COUNT(round)];
    const u32 base = blockIdx.x * PRISM_FAST_THREADS;
    if (m <= PRISM_PLOC_TAIL || base >= m) {
        return;
    }
    // Window place w holds cluster base - RADIUS + w.
    for (u32 w = threadIdx.x; w < SPAN; w += PRISM_FAST_THREADS) {
        const int k = (int)base - PRISM_PLOC_RADIUS + (int)w;
        if (k >= 0 && k < (int)m) {
            const float4 lo = boxes[2u * k], hi = boxes[2u * k + 1u];
            s_box[0][w] = lo.x;
            s_box[1][w] = lo.y;
            s_box[2][w] = lo.z;
            s_box[3][w] = hi.x;
            s_box[4][w] = hi.y;
            s_box[5][w] = hi.z;
        }
    }
    __syncthreads();
    const u32 i = base + threadIdx.x;
    if (i >= m) {
        return;
    }
    const u32 offset = base - PRISM_PLOC_RADIUS;  // wraps for block 0; only differences matter
    nearest[i] = ploc_nearest_of(i, m, [&](u32 k, V3& lo, V3& hi) {
        const u32 w = k - offset;
        lo = v3(s_box[0][w], s_box[1][w], s_box[2][w]);
        hi = v3(s_box[3][w], s_box[4][w], s_box[5][w]);
    });
}

// A child's SAH cost, primitive count and kept-node count (a slot: Ci times
// its area, 1, 0).
__device__ __forceinline__ void ploc_child(u32 c, V3 lo, V3 hi, const float* costs, const u32* counts,
                                           const u32* kept, float& cost, u32& count, u32& kept_count) {
    if (c & PRISM_FAST_LEAF) {
        cost = __fmul_rn(PRISM_FAST_COST_INTERSECT, fast_half_area(lo, hi));
        count = 1u;
        kept_count = 0u;
    } else {
        cost = costs[c];
        count = counts[c];
        kept_count = kept[c];
    }
}

// Step 3's new node `node` over clusters a (box alo-ahi) and b: its box, SAH
// cost, primitive count, kept count and its children's parent links; its box
// is returned in lo, hi.
__device__ __forceinline__ void ploc_make_node(u32 a, float4 alo, float4 ahi, u32 b, float4 blo, float4 bhi,
                                               u32 node, uint2* __restrict__ children,
                                               float4* __restrict__ node_boxes, float* costs, u32* counts,
                                               u32* kept, u32* __restrict__ links, u32 n, float4& lo, float4& hi) {
    float lc, rc;
    u32 ln, rn, lk, rk;
    ploc_child(a, xyz(alo), xyz(ahi), costs, counts, kept, lc, ln, lk);
    ploc_child(b, xyz(blo), xyz(bhi), costs, counts, kept, rc, rn, rk);
    lo = make_float4(fminf(alo.x, blo.x), fminf(alo.y, blo.y), fminf(alo.z, blo.z), 0.0f);
    hi = make_float4(fmaxf(ahi.x, bhi.x), fmaxf(ahi.y, bhi.y), fmaxf(ahi.z, bhi.z), 0.0f);
    const float area = fast_half_area(xyz(lo), xyz(hi));
    const u32 count = ln + rn;
    const float leaf_cost = __fmul_rn(__fmul_rn(PRISM_FAST_COST_INTERSECT, (float)count), area);
    const float split_cost = __fadd_rn(__fadd_rn(__fmul_rn(PRISM_FAST_COST_TRAVERSAL, area), lc), rc);
    const bool leaf = count <= PRISM_FAST_MAX_LEAF && leaf_cost <= split_cost;
    children[node] = make_uint2(a, b);
    node_boxes[2u * node] = lo;
    node_boxes[2u * node + 1u] = hi;
    costs[node] = leaf ? leaf_cost : split_cost;
    counts[node] = count;
    kept[node] = leaf ? 0u : 1u + lk + rk;
    const u32 slots = n - 1u;
    links[(a & PRISM_FAST_LEAF) ? slots + (a & ~PRISM_FAST_LEAF) : a] = node << 1;
    links[(b & PRISM_FAST_LEAF) ? slots + (b & ~PRISM_FAST_LEAF) : b] = (node << 1) | 1u;
}

// Step 3 for cluster i at place i, whose nearest is j: a new node `node` over
// i and j at place `to` (i < j, mutual), or the cluster moved to `to`.
__device__ __forceinline__ void ploc_place(u32 i, u32 j, bool merge, u32 to, u32 node,
                                          const u32* __restrict__ ids_in, const float4* __restrict__ boxes_in,
                                          u32* __restrict__ ids_out, float4* __restrict__ boxes_out,
                                          uint2* __restrict__ children, float4* __restrict__ node_boxes,
                                          float* costs, u32* counts, u32* kept, u32* __restrict__ links, u32 n) {
    float4 lo = boxes_in[2u * i], hi = boxes_in[2u * i + 1u];
    u32 id = ids_in[i];
    if (merge) {
        ploc_make_node(id, lo, hi, ids_in[j], boxes_in[2u * j], boxes_in[2u * j + 1u], node, children, node_boxes,
                       costs, counts, kept, links, n, lo, hi);
        id = node;
    }
    ids_out[to] = id;
    boxes_out[2u * to] = lo;
    boxes_out[2u * to + 1u] = hi;
}

// Per thread: (places kept, nodes made) before it in its block, and the
// block's totals, by warp ballots.
__device__ __forceinline__ void ploc_block_ranks(bool keep, bool merge, u32& keep_rank, u32& merge_rank,
                                                 u32& keep_total, u32& merge_total) {
    constexpr u32 WARPS = PRISM_FAST_THREADS / 32u;
    __shared__ u32 s_keep[WARPS], s_merge[WARPS];
    const u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const u32 kb = __ballot_sync(0xFFFFFFFFu, keep), mb = __ballot_sync(0xFFFFFFFFu, merge);
    const u32 below = (1u << lane) - 1u;
    if (lane == 0u) {
        s_keep[warp] = __popc(kb);
        s_merge[warp] = __popc(mb);
    }
    __syncthreads();
    keep_rank = __popc(kb & below);
    merge_rank = __popc(mb & below);
    keep_total = 0u;
    merge_total = 0u;
    for (u32 w = 0; w < WARPS; ++w) {
        if (w < warp) {
            keep_rank += s_keep[w];
            merge_rank += s_merge[w];
        }
        keep_total += s_keep[w];
        merge_total += s_merge[w];
    }
}

// Cluster i's part in step 3 (i below m): whether its place stays (it is
// kept, or merged into as the lower of a mutual pair) and whether it makes a
// node; `j` its nearest.
__device__ __forceinline__ void ploc_fate(const u32* __restrict__ nearest, u32 i, u32 m, u32& j, bool& keep,
                                          bool& merge) {
    j = i;
    keep = false;
    merge = false;
    if (i < m) {
        j = __ldg(nearest + i);
        const bool mutual = __ldg(nearest + j) == i;
        keep = !mutual || i < j;
        merge = mutual && i < j;
    }
}

// Round `round`'s counts: block b's places kept and nodes made, into
// sums[b], for the merge's offsets.
__device__ __forceinline__ void ploc_count(const u32* __restrict__ nearest, uint2* __restrict__ sums,
                                           const u32* state, u32 round) {
    const u32 m = state[PLOC_COUNT(round)];
    const u32 base = blockIdx.x * PRISM_FAST_THREADS;
    if (m <= PRISM_PLOC_TAIL || base >= m) {
        return;
    }
    u32 j, keep_rank, merge_rank, keep_total, merge_total;
    bool keep, merge;
    ploc_fate(nearest, base + threadIdx.x, m, j, keep, merge);
    ploc_block_ranks(keep, merge, keep_rank, merge_rank, keep_total, merge_total);
    if (threadIdx.x == 0u) {
        sums[blockIdx.x] = make_uint2(keep_total, merge_total);
    }
}

// Round `round`'s merge and compaction (steps 3-4): block b's offsets (places
// kept, nodes made before it) are the sums of the blocks before it, which it
// adds up itself (a few hundred words); then its places by ballots. The last
// block writes the next round's count and nodes made.
__device__ __forceinline__ void ploc_merge(const u32* __restrict__ nearest, const u32* __restrict__ ids_in,
                                           const float4* __restrict__ boxes_in, u32* __restrict__ ids_out,
                                           float4* __restrict__ boxes_out, uint2* __restrict__ children,
                                           float4* __restrict__ node_boxes, float* costs, u32* counts, u32* kept,
                                           u32* __restrict__ links, u32 n, const uint2* __restrict__ sums,
                                           u32* state, u32 round) {
    constexpr u32 WARPS = PRISM_FAST_THREADS / 32u;
    __shared__ uint2 s_before[WARPS];
    const u32 m = state[PLOC_COUNT(round)];
    if (m <= PRISM_PLOC_TAIL) {
        // A round past the batch's need: block 0 hands the clusters and the
        // state on unchanged, so that round + 1 finds them where it reads.
        if (blockIdx.x == 0u) {
            for (u32 i = threadIdx.x; i < m; i += PRISM_FAST_THREADS) {
                ids_out[i] = ids_in[i];
                boxes_out[2u * i] = boxes_in[2u * i];
                boxes_out[2u * i + 1u] = boxes_in[2u * i + 1u];
            }
            if (threadIdx.x == 0u) {
                state[PLOC_COUNT(round + 1u)] = m;
                state[PLOC_MADE(round + 1u)] = state[PLOC_MADE(round)];
            }
        }
        return;
    }
    const u32 base = blockIdx.x * PRISM_FAST_THREADS;
    if (base >= m) {
        return;
    }
    // The blocks before this one: a strided sum, then the warps' sums.
    uint2 before = make_uint2(0u, 0u);
    for (u32 b = threadIdx.x; b < blockIdx.x; b += PRISM_FAST_THREADS) {
        const uint2 v = __ldg(sums + b);
        before.x += v.x;
        before.y += v.y;
    }
    for (u32 d = 16; d > 0; d >>= 1) {
        before.x += __shfl_xor_sync(0xFFFFFFFFu, before.x, d);
        before.y += __shfl_xor_sync(0xFFFFFFFFu, before.y, d);
    }
    const u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    if (lane == 0u) {
        s_before[warp] = before;
    }
    __syncthreads();
    before = make_uint2(0u, 0u);
    for (u32 w = 0; w < WARPS; ++w) {
        before.x += s_before[w].x;
        before.y += s_before[w].y;
    }
    const u32 i = base + threadIdx.x;
    u32 j, keep_rank, merge_rank, keep_total, merge_total;
    bool keep, merge;
    ploc_fate(nearest, i, m, j, keep, merge);
    ploc_block_ranks(keep, merge, keep_rank, merge_rank, keep_total, merge_total);
    const u32 made = state[PLOC_MADE(round)];
    if (threadIdx.x == 0u && base + PRISM_FAST_THREADS >= m) {
        state[PLOC_COUNT(round + 1u)] = before.x + keep_total;
        state[PLOC_MADE(round + 1u)] = made + before.y + merge_total;
    }
    if (keep) {
        ploc_place(i, j, merge, before.x + keep_rank, made + before.y + merge_rank, ids_in, boxes_in, ids_out,
                   boxes_out, children, node_boxes, costs, counts, kept, links, n);
    }
}

// The rounds left once at most PRISM_PLOC_TAIL clusters are: one block of
// PRISM_PLOC_TAIL_THREADS, a thread a cluster, the clusters' ids and boxes in
// shared memory, nearest neighbours then merges, each round's places and
// node numbers from ballots over the block. Marks the state done.
__device__ __forceinline__ void ploc_tail(const u32* __restrict__ ids_in, const float4* __restrict__ boxes_in,
                                          uint2* __restrict__ children, float4* __restrict__ node_boxes,
                                          float* costs, u32* counts, u32* kept, u32* __restrict__ links, u32 n,
                                          u32* state, u32 round) {
    constexpr u32 WARPS = PRISM_PLOC_TAIL_THREADS / 32u;
    __shared__ float s_box[6][PRISM_PLOC_TAIL];
    __shared__ u32 s_ids[PRISM_PLOC_TAIL], s_nearest[PRISM_PLOC_TAIL];
    __shared__ u32 s_keep[WARPS], s_merge[WARPS];
    u32 m = state[PLOC_COUNT(round)];
    u32 made = state[PLOC_MADE(round)];
    if (m > PRISM_PLOC_TAIL) {
        return;  // never launched so: the host reads the count first
    }
    const u32 i = threadIdx.x, lane = i & 31u, warp = i >> 5;
    auto read = [&](u32 k, float4& lo, float4& hi) {
        lo = make_float4(s_box[0][k], s_box[1][k], s_box[2][k], 0.0f);
        hi = make_float4(s_box[3][k], s_box[4][k], s_box[5][k], 0.0f);
    };
    auto write = [&](u32 k, float4 lo, float4 hi) {
        s_box[0][k] = lo.x;
        s_box[1][k] = lo.y;
        s_box[2][k] = lo.z;
        s_box[3][k] = hi.x;
        s_box[4][k] = hi.y;
        s_box[5][k] = hi.z;
    };
    if (i < m) {
        s_ids[i] = ids_in[i];
        write(i, boxes_in[2u * i], boxes_in[2u * i + 1u]);
    }
    __syncthreads();
    // Every round merges at least once (the least pair is mutual), so at
    // most m - 1 rounds; the bound only guards against a broken invariant.
    for (u32 rounds = 0; m > 1u && rounds < PRISM_PLOC_TAIL; ++rounds) {
        if (i < m) {
            s_nearest[i] = ploc_nearest_of(i, m, [&](u32 k, V3& lo, V3& hi) {
                lo = v3(s_box[0][k], s_box[1][k], s_box[2][k]);
                hi = v3(s_box[3][k], s_box[4][k], s_box[5][k]);
            });
        }
        __syncthreads();
        u32 j = i;
        bool keep = false, merge = false;
        if (i < m) {
            j = s_nearest[i];
            const bool mutual = s_nearest[j] == i;
            keep = !mutual || i < j;
            merge = mutual && i < j;
        }
        const u32 kb = __ballot_sync(0xFFFFFFFFu, keep), mb = __ballot_sync(0xFFFFFFFFu, merge);
        if (lane == 0u) {
            s_keep[warp] = __popc(kb);
            s_merge[warp] = __popc(mb);
        }
        // This thread's cluster (and its partner's) before any place changes.
        float4 lo, hi, jlo, jhi;
        u32 id = 0u, jid = 0u;
        if (keep) {
            read(i, lo, hi);
            id = s_ids[i];
            if (merge) {
                read(j, jlo, jhi);
                jid = s_ids[j];
            }
        }
        __syncthreads();
        const u32 below = (1u << lane) - 1u;
        u32 to = __popc(kb & below), node = made + __popc(mb & below);
        u32 keep_total = 0u, merge_total = 0u;
        for (u32 w = 0; w < WARPS; ++w) {
            if (w < warp) {
                to += s_keep[w];
                node += s_merge[w];
            }
            keep_total += s_keep[w];
            merge_total += s_merge[w];
        }
        if (merge) {
            ploc_make_node(id, lo, hi, jid, jlo, jhi, node, children, node_boxes, costs, counts, kept, links, n,
                           lo, hi);
            id = node;
        }
        if (keep) {
            s_ids[to] = id;
            write(to, lo, hi);
        }
        __syncthreads();
        m = keep_total;
        made += merge_total;
    }
    if (i == 0u) {
        state[PLOC_NODES] = made;
        state[PLOC_DONE] = m == 1u ? 1u : 0u;
    }
}

// Step 5 for slot s (in Morton order): walking up to the root, its final slot
// (the primitives of every left sibling before it) and the kept nodes above
// its leaf (the highest merged node above it, or itself); writes its triangle's record and index there, and flags a tree
// whose leaf is as deep as the traversal stack.
__device__ __forceinline__ void ploc_slots(u32 n, const u32* __restrict__ order, const uint2* __restrict__ children,
                                           const u32* __restrict__ counts, const u32* __restrict__ kept,
                                           const u32* __restrict__ links, const u32* __restrict__ triangles,
                                           const float* __restrict__ positions, u32 vertex_count,
                                           Primitive* __restrict__ prims, u32* __restrict__ out_order, u32* state) {
    const u32 s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= n) {
        return;
    }
    u32 first = 0u, kept_above = 0u, steps = 0u;
    for (u32 link = __ldg(links + (n - 1u) + s); link != PRISM_NO_PARENT; link = __ldg(links + (link >> 1))) {
        const u32 p = link >> 1;
        if (link & 1u) {
            const u32 left = __ldg(&children[p].x);
            first += (left & PRISM_FAST_LEAF) ? 1u : __ldg(counts + left);
        }
        // Kept nodes below a merged one lie inside its leaf: start again.
        kept_above = __ldg(kept + p) != 0u ? kept_above + 1u : 0u;
        if (++steps > PRISM_PLOC_MAX_WALK) {
            break;
        }
    }
    if (steps > PRISM_PLOC_MAX_WALK || kept_above >= PRISM_TRAVERSAL_STACK_SIZE) {
        state[PLOC_TOO_DEEP] = 1u;
        return;
    }
    const u32 id = __ldg(order + s);
    V3 a, b, c;
    fast_corners(triangles, positions, vertex_count, id, a, b, c);
    triangle_record(prims + first, id, a, b, c);
    out_order[first] = id;
}

// Step 5 for inner node k: nothing for a merged node or one under a merged
// node; else its index in depth-first order and its first slot, from a walk
// up, and its node. A merged root is one leaf over every slot.
__device__ __forceinline__ void ploc_emit(u32 n, const uint2* __restrict__ children,
                                          const u32* __restrict__ counts, const u32* __restrict__ kept,
                                          const u32* __restrict__ links, const float4* __restrict__ slot_boxes,
                                          const float4* __restrict__ node_boxes, BvhNode* __restrict__ nodes) {
    const u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 root = n - 2u;
    if (k > root) {
        return;
    }
    if (kept[k] == 0u) {
        if (k == root) {
            fast_rows(node_boxes[2u * k], node_boxes[2u * k + 1u], 0u, n, &nodes->left_lo, &nodes->left_hi);
            nodes->right_lo = make_float4(PRISM_INF, PRISM_INF, PRISM_INF, __uint_as_float(PRISM_EMPTY_CHILD));
            nodes->right_hi = make_float4(PRISM_INF, PRISM_INF, PRISM_INF, __uint_as_float(0u));
        }
        return;
    }
    u32 index = 0u, first = 0u, steps = 0u;
    for (u32 c = k; c != root;) {
        const u32 link = links[c];
        const u32 p = link >> 1;
        if (kept[p] == 0u || ++steps > PRISM_PLOC_MAX_WALK) {
            return;
        }
        if (link & 1u) {
            const u32 left = children[p].x;
            const bool slot = (left & PRISM_FAST_LEAF) != 0u;
            index += 1u + (slot ? 0u : kept[left]);
            first += slot ? 1u : counts[left];
        } else {
            index += 1u;
        }
        c = p;
    }
    if (index + 1u >= n) {
        return;  // only in a tree too deep to use (flagged by ploc_slots)
    }
    const uint2 ch = children[k];
    const bool left_slot = (ch.x & PRISM_FAST_LEAF) != 0u;
    const u32 left_kept = left_slot ? 0u : kept[ch.x];
    const u32 left_count = left_slot ? 1u : counts[ch.x];
    BvhNode* out = nodes + index;
    const u32 at[2] = {index + 1u, index + 1u + left_kept};
    const u32 from[2] = {first, first + left_count};
    const u32 child[2] = {ch.x, ch.y};
    float4* lo[2] = {&out->left_lo, &out->right_lo};
    float4* hi[2] = {&out->left_hi, &out->right_hi};
    for (u32 side = 0; side < 2u; ++side) {
        const u32 c = child[side];
        if (c & PRISM_FAST_LEAF) {
            const u32 s = c & ~PRISM_FAST_LEAF;
            fast_rows(slot_boxes[2u * s], slot_boxes[2u * s + 1u], from[side], 1u, lo[side], hi[side]);
        } else if (kept[c] == 0u) {
            fast_rows(node_boxes[2u * c], node_boxes[2u * c + 1u], from[side], counts[c], lo[side], hi[side]);
        } else {
            fast_rows(node_boxes[2u * c], node_boxes[2u * c + 1u], at[side], 0u, lo[side], hi[side]);
        }
    }
}
