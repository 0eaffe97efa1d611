// The fast tree built on the device: mirrors prism_core::lbvh::build, pass for
// pass (Morton codes, a stable sort, Karras's radix tree, boxes and SAH leaf
// merges bottom-up, the depth-first layout), so that the device builds core's
// tree: the same slots and nodes, boxes equal as floats.
//
// Launches (src/backend/fast_build.rs), all on one stream:
//   prism_fast_boxes     a thread a triangle: its box; the centres' bounds
//   prism_fast_codes     a thread a triangle: its Morton code, its index
//   4 x (prism_fast_histogram, prism_fast_scan, prism_fast_scatter)
//                        an 8-bit LSD radix sort of the 30-bit codes (stable:
//                        equal codes keep index order, core's tie rule)
//   prism_fast_tree      a thread a slot (its box and primitive record) and an
//                        inner node (its children, range and their parents)
//   prism_fast_bottom_up a thread a slot, walking up; the second to reach a
//                        node finishes it (box, SAH cost, merged or kept)
//   prism_fast_emit      a thread an inner node: its depth-first index from a
//                        walk up, then its row pair of children
// No CUB: NVRTC compiles this alone at run time.
#pragma once
#include "prism_types.cuh"
#include "refit.cuh"

#define PRISM_FAST_THREADS 256
// Keys a block of the sort takes: 16 a thread.
#define PRISM_FAST_SORT_ITEMS 16
#define PRISM_FAST_SORT_TILE (PRISM_FAST_THREADS * PRISM_FAST_SORT_ITEMS)
#define PRISM_FAST_RADIX 256
// mirrors prism_core::lbvh::LEAF_FLAG
#define PRISM_FAST_LEAF 0x80000000u
// mirrors prism_core::bvh::{COST_TRAVERSAL, COST_INTERSECT, MAX_LEAF_SIZE}
#define PRISM_FAST_COST_TRAVERSAL 1.0f
#define PRISM_FAST_COST_INTERSECT 1.0f
#define PRISM_FAST_MAX_LEAF 8u

// A float as an unsigned integer of the same order (for atomicMin/Max).
__device__ __forceinline__ u32 fast_ordered(float f) {
    const u32 b = __float_as_uint(f);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float fast_unordered(u32 u) {
    return __uint_as_float((u & 0x80000000u) ? (u & 0x7FFFFFFFu) : ~u);
}

// Triangle `i`'s corners: three indices from `triangles`, or, without them
// (a flat scene's triangle soup), vertices 3i, 3i + 1, 3i + 2.
__device__ __forceinline__ void fast_corners(const u32* __restrict__ triangles, const float* __restrict__ positions,
                                             u32 vertex_count, u32 i, V3& a, V3& b, V3& c) {
    if (triangles) {
        const u32* t = triangles + 3u * (u64)i;
        a = vertex(positions, vertex_count, __ldg(t));
        b = vertex(positions, vertex_count, __ldg(t + 1));
        c = vertex(positions, vertex_count, __ldg(t + 2));
    } else {
        a = vertex(positions, vertex_count, 3u * i);
        b = vertex(positions, vertex_count, 3u * i + 1u);
        c = vertex(positions, vertex_count, 3u * i + 2u);
    }
}

// mirrors prism_core::aabb::Aabb::center: 0.5 * (min + max)
__device__ __forceinline__ V3 fast_centre(float4 lo, float4 hi) {
    return v3(0.5f * (lo.x + hi.x), 0.5f * (lo.y + hi.y), 0.5f * (lo.z + hi.z));
}

// mirrors prism_core::aabb::Aabb::half_area, every product and sum rounded on
// its own: e.x * e.y + e.y * e.z + e.z * e.x.
__device__ __forceinline__ float fast_half_area(V3 lo, V3 hi) {
    const V3 e = hi - lo;
    return __fadd_rn(__fadd_rn(__fmul_rn(e.x, e.y), __fmul_rn(e.y, e.z)), __fmul_rn(e.z, e.x));
}

// The bounds of a warp's boxes (lo, hi; an empty box where a lane has none)
// by shuffles, then one atomic a component a warp into `bounds` (min xyz, max
// xyz, as fast_ordered; the host fills it with the empty box first).
__device__ __forceinline__ void fast_reduce_bounds(V3 lo, V3 hi, u32* bounds) {
    for (int d = 16; d > 0; d >>= 1) {
        lo.x = fminf(lo.x, __shfl_xor_sync(0xFFFFFFFFu, lo.x, d));
        lo.y = fminf(lo.y, __shfl_xor_sync(0xFFFFFFFFu, lo.y, d));
        lo.z = fminf(lo.z, __shfl_xor_sync(0xFFFFFFFFu, lo.z, d));
        hi.x = fmaxf(hi.x, __shfl_xor_sync(0xFFFFFFFFu, hi.x, d));
        hi.y = fmaxf(hi.y, __shfl_xor_sync(0xFFFFFFFFu, hi.y, d));
        hi.z = fmaxf(hi.z, __shfl_xor_sync(0xFFFFFFFFu, hi.z, d));
    }
    if ((threadIdx.x & 31u) == 0u && lo.x <= hi.x) {
        atomicMin(bounds + 0, fast_ordered(lo.x));
        atomicMin(bounds + 1, fast_ordered(lo.y));
        atomicMin(bounds + 2, fast_ordered(lo.z));
        atomicMax(bounds + 3, fast_ordered(hi.x));
        atomicMax(bounds + 4, fast_ordered(hi.y));
        atomicMax(bounds + 5, fast_ordered(hi.z));
    }
}

// The box of each triangle (`boxes[2i]` min, `boxes[2i + 1]` max:
// prism_core::bvh::triangle_bounds), and the bounds of their centres into
// `centre_bounds` (min xyz, then max xyz, as fast_ordered; the host fills it
// with the empty box first).
__device__ __forceinline__ void fast_boxes(const u32* __restrict__ triangles, u32 n, const float* __restrict__ positions,
                                           u32 vertex_count, float4* __restrict__ boxes, u32* centre_bounds) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    V3 lo = v3s(PRISM_INF), hi = v3s(-PRISM_INF);
    if (i < n) {
        V3 a, b, c;
        fast_corners(triangles, positions, vertex_count, i, a, b, c);
        const float4 l = make_float4(fminf(fminf(a.x, b.x), c.x), fminf(fminf(a.y, b.y), c.y),
                                     fminf(fminf(a.z, b.z), c.z), 0.0f);
        const float4 h = make_float4(fmaxf(fmaxf(a.x, b.x), c.x), fmaxf(fmaxf(a.y, b.y), c.y),
                                     fmaxf(fmaxf(a.z, b.z), c.z), 0.0f);
        boxes[2u * i] = l;
        boxes[2u * i + 1u] = h;
        lo = hi = fast_centre(l, h);
    }
    fast_reduce_bounds(lo, hi, centre_bounds);
}

// mirrors prism_core::lbvh::spread_bits
__device__ __forceinline__ u32 fast_spread_bits(u32 v) {
    u32 x = v & 0x3FFu;
    x = (x | (x << 16)) & 0x030000FFu;
    x = (x | (x << 8)) & 0x0300F00Fu;
    x = (x | (x << 4)) & 0x030C30C3u;
    return (x | (x << 2)) & 0x09249249u;
}

// mirrors prism_core::lbvh::morton_scale: 1024 (1 - 1e-6) / the longest extent,
// the same on every axis (cubic cells), or 0 when the centres coincide (a
// correctly rounded division: --prec-div=true).
__device__ __forceinline__ float fast_scale(V3 lo, V3 hi) {
    const float longest = fmaxf(fmaxf(hi.x - lo.x, hi.y - lo.y), hi.z - lo.z);
    return longest > 0.0f ? (1024.0f * (1.0f - 1e-6f)) / longest : 0.0f;
}

// mirrors the cell of prism_core::lbvh::morton_code on one axis:
// `((c - lo) * scale) as u32`, at most 1023 (the conversion saturates, as Rust's).
__device__ __forceinline__ u32 fast_cell(float c, float lo, float scale) {
    return min(__float2uint_rz(__fmul_rn(c - lo, scale)), 1023u);
}

__device__ __forceinline__ void fast_codes(const float4* __restrict__ boxes, u32 n, const u32* __restrict__ centre_bounds,
                                           u32* __restrict__ keys, u32* __restrict__ values) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    const V3 lo = v3(fast_unordered(centre_bounds[0]), fast_unordered(centre_bounds[1]),
                     fast_unordered(centre_bounds[2]));
    const V3 hi = v3(fast_unordered(centre_bounds[3]), fast_unordered(centre_bounds[4]),
                     fast_unordered(centre_bounds[5]));
    const V3 c = fast_centre(boxes[2u * i], boxes[2u * i + 1u]);
    const float scale = fast_scale(lo, hi);
    const u32 qx = fast_cell(c.x, lo.x, scale);
    const u32 qy = fast_cell(c.y, lo.y, scale);
    const u32 qz = fast_cell(c.z, lo.z, scale);
    const u32 code = (fast_spread_bits(qx) << 2) | (fast_spread_bits(qy) << 1) | fast_spread_bits(qz);
    // mirrors prism_core::lbvh::sort_key: LARGE_BIT where the box's half area
    // is more than LARGE_SHARE (1/4, an exact product) of the centres' bounds'.
    const float4 blo = boxes[2u * i], bhi = boxes[2u * i + 1u];
    const float area = fast_half_area(v3(blo.x, blo.y, blo.z), v3(bhi.x, bhi.y, bhi.z));
    const bool large = area > 0.25f * fast_half_area(lo, hi);
    keys[i] = large ? (code | (1u << 30)) : code;
    values[i] = i;
}

// ---- the radix sort: 8 bits a pass ----

// Each block's count of each digit of its tile: hist[digit * blocks + block].
__device__ __forceinline__ void fast_histogram(const u32* __restrict__ keys, u32 n, u32 shift, u32* __restrict__ hist) {
    __shared__ u32 counts[PRISM_FAST_RADIX];
    counts[threadIdx.x] = 0u;
    __syncthreads();
    const u32 base = blockIdx.x * PRISM_FAST_SORT_TILE;
    for (u32 k = 0; k < PRISM_FAST_SORT_ITEMS; ++k) {
        const u32 i = base + k * PRISM_FAST_THREADS + threadIdx.x;
        if (i < n) {
            atomicAdd(&counts[(keys[i] >> shift) & 0xFFu], 1u);
        }
    }
    __syncthreads();
    hist[threadIdx.x * gridDim.x + blockIdx.x] = counts[threadIdx.x];
}

// The exclusive prefix sum of `count` words in place, by one block of
// PRISM_FAST_THREADS threads: each sums a run of the words, the block scans
// the sums, each writes its run.
__device__ __forceinline__ void fast_scan(u32* __restrict__ words, u32 count) {
    __shared__ u32 sums[PRISM_FAST_THREADS];
    const u32 run = (count + PRISM_FAST_THREADS - 1u) / PRISM_FAST_THREADS;
    const u32 begin = threadIdx.x * run;
    const u32 end = min(begin + run, count);
    u32 total = 0u;
    for (u32 i = begin; i < end; ++i) {
        total += words[i];
    }
    sums[threadIdx.x] = total;
    __syncthreads();
    // Hillis-Steele inclusive scan of the sums.
    for (u32 d = 1; d < PRISM_FAST_THREADS; d <<= 1) {
        const u32 add = threadIdx.x >= d ? sums[threadIdx.x - d] : 0u;
        __syncthreads();
        sums[threadIdx.x] += add;
        __syncthreads();
    }
    u32 acc = sums[threadIdx.x] - total;
    for (u32 i = begin; i < end; ++i) {
        const u32 w = words[i];
        words[i] = acc;
        acc += w;
    }
}

// Each block moves its tile's keys (and values) to their places: the scanned
// offset of (digit, block), plus the keys of that digit before it in the tile
// (in index order: a stable sort). A chunk of PRISM_FAST_THREADS keys at a
// time: ranks within a warp by __match_any_sync, then across the warps.
__device__ __forceinline__ void fast_scatter(const u32* __restrict__ keys_in, const u32* __restrict__ values_in,
                                             u32* __restrict__ keys_out, u32* __restrict__ values_out, u32 n,
                                             u32 shift, const u32* __restrict__ hist) {
    constexpr u32 WARPS = PRISM_FAST_THREADS / 32u;
    __shared__ u32 base[PRISM_FAST_RADIX];
    __shared__ u32 warp_counts[WARPS][PRISM_FAST_RADIX];
    const u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    base[threadIdx.x] = hist[threadIdx.x * gridDim.x + blockIdx.x];
    const u32 tile = blockIdx.x * PRISM_FAST_SORT_TILE;
    for (u32 k = 0; k < PRISM_FAST_SORT_ITEMS; ++k) {
        for (u32 w = 0; w < WARPS; ++w) {
            warp_counts[w][threadIdx.x] = 0u;
        }
        __syncthreads();
        const u32 i = tile + k * PRISM_FAST_THREADS + threadIdx.x;
        const bool valid = i < n;
        const u32 key = valid ? keys_in[i] : 0u;
        // Lanes past the end take digit 256, which no valid lane has.
        const u32 digit = valid ? (key >> shift) & 0xFFu : PRISM_FAST_RADIX;
        const u32 peers = __match_any_sync(0xFFFFFFFFu, digit);
        const u32 rank = __popc(peers & ((1u << lane) - 1u));
        if (valid && rank == 0u) {
            warp_counts[warp][digit] = __popc(peers);
        }
        __syncthreads();
        // Thread d: digit d's counts across the warps, made exclusive.
        u32 sum = 0u;
        for (u32 w = 0; w < WARPS; ++w) {
            const u32 c = warp_counts[w][threadIdx.x];
            warp_counts[w][threadIdx.x] = sum;
            sum += c;
        }
        __syncthreads();
        if (valid) {
            const u32 at = base[digit] + warp_counts[warp][digit] + rank;
            keys_out[at] = key;
            values_out[at] = values_in[i];
        }
        __syncthreads();
        base[threadIdx.x] += sum;
        __syncthreads();
    }
}

// ---- the radix tree ----

// mirrors prism_core::lbvh::prefix: the common prefix of the keys at slots i
// and j (code, then slot), -1 outside the slots.
__device__ __forceinline__ int fast_prefix(const u32* __restrict__ codes, u32 n, int i, int j) {
    if (j < 0 || j >= (int)n) {
        return -1;
    }
    const u32 a = __ldg(codes + i), b = __ldg(codes + j);
    return a != b ? __clz(a ^ b) : 32 + __clz((u32)i ^ (u32)j);
}

// Slot `i`'s box and primitive record (prism_core::accel::triangle_record of
// the triangle it holds), and, for an inner node `i < n - 1`, mirrors
// prism_core::lbvh::radix_node: its children, its range, and the children's
// parent links (`parent << 1 | side`; inner node c at links[c], slot s at
// links[n - 1 + s]).
//
// The tree over instances (top_build.cuh) has no primitive records: `prims`
// is null, and `names` (the instance each slot holds, from `live`) is
// written instead.
__device__ __forceinline__ void fast_tree(const u32* __restrict__ codes, const u32* __restrict__ order, u32 n,
                                          const float4* __restrict__ boxes, const u32* __restrict__ triangles,
                                          const float* __restrict__ positions, u32 vertex_count,
                                          float4* __restrict__ slot_boxes, Primitive* __restrict__ prims,
                                          uint2* __restrict__ children, uint2* __restrict__ ranges,
                                          u32* __restrict__ links, const u32* __restrict__ live,
                                          u32* __restrict__ names) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) {
        const u32 id = __ldg(order + t);
        slot_boxes[2u * t] = boxes[2u * id];
        slot_boxes[2u * t + 1u] = boxes[2u * id + 1u];
        if (prims) {
            V3 a, b, c;
            fast_corners(triangles, positions, vertex_count, id, a, b, c);
            triangle_record(prims + t, id, a, b, c);
        } else {
            names[t] = __ldg(live + id);
        }
    }
    if (t + 1u >= n) {
        return;
    }
    const int i = (int)t;
    const int d = fast_prefix(codes, n, i, i + 1) > fast_prefix(codes, n, i, i - 1) ? 1 : -1;
    const int min_prefix = fast_prefix(codes, n, i, i - d);
    int lmax = 2;
    while (fast_prefix(codes, n, i, i + lmax * d) > min_prefix) {
        lmax *= 2;
    }
    int l = 0;
    for (int s = lmax / 2; s >= 1; s /= 2) {
        if (fast_prefix(codes, n, i, i + (l + s) * d) > min_prefix) {
            l += s;
        }
    }
    const int j = i + l * d;
    const int node_prefix = fast_prefix(codes, n, i, j);
    int s = 0;
    for (int div = 2;; div *= 2) {
        const int step = (l + div - 1) / div;
        if (fast_prefix(codes, n, i, i + (s + step) * d) > node_prefix) {
            s += step;
        }
        if (step <= 1) {
            break;
        }
    }
    const int gamma = i + s * d + min(d, 0);
    const int first = min(i, j), last = max(i, j);
    const u32 left = first == gamma ? ((u32)gamma | PRISM_FAST_LEAF) : (u32)gamma;
    const u32 right = last == gamma + 1 ? ((u32)(gamma + 1) | PRISM_FAST_LEAF) : (u32)(gamma + 1);
    children[t] = make_uint2(left, right);
    ranges[t] = make_uint2((u32)first, (u32)last);
    const u32 slots = n - 1u;
    links[(left & PRISM_FAST_LEAF) ? slots + (left & ~PRISM_FAST_LEAF) : left] = t << 1;
    links[(right & PRISM_FAST_LEAF) ? slots + (right & ~PRISM_FAST_LEAF) : right] = (t << 1) | 1u;
    if (t == 0u) {
        links[0] = PRISM_NO_PARENT;
    }
}

// One child's box, SAH cost and kept-node count (a slot: its box, Ci times
// its area, 0).
__device__ __forceinline__ void fast_child(u32 c, const float4* __restrict__ slot_boxes,
                                           const float4* node_boxes, const float* costs, const u32* kept, V3& lo,
                                           V3& hi, float& cost, u32& count) {
    if (c & PRISM_FAST_LEAF) {
        const u32 s = c & ~PRISM_FAST_LEAF;
        lo = xyz(slot_boxes[2u * s]);
        hi = xyz(slot_boxes[2u * s + 1u]);
        cost = __fmul_rn(PRISM_FAST_COST_INTERSECT, fast_half_area(lo, hi));
        count = 0u;
    } else {
        // Written by another thread in this launch: read through the L2.
        lo = xyz(__ldcg(node_boxes + 2u * c));
        hi = xyz(__ldcg(node_boxes + 2u * c + 1u));
        cost = __ldcg(costs + c);
        count = __ldcg(kept + c);
    }
}

// mirrors step 4 of prism_core::lbvh::build: from slot `s` up, the second
// thread to reach a node finishes it: its box (the children's union), its SAH
// cost, and whether it is merged into one leaf (kept[node] = 0) or kept
// (kept[node] = the inner nodes kept in its subtree). `arrivals` starts at 0.
// `max_leaf`: PRISM_FAST_MAX_LEAF, or 1 for the tree over instances (a leaf
// of one instance each: every inner node kept).
__device__ __forceinline__ void fast_bottom_up(u32 n, const uint2* __restrict__ children,
                                               const uint2* __restrict__ ranges, const u32* __restrict__ links,
                                               const float4* __restrict__ slot_boxes, float4* node_boxes,
                                               float* costs, u32* kept, u32* arrivals, u32 max_leaf) {
    const u32 s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= n) {
        return;
    }
    u32 node = __ldg(links + (n - 1u) + s) >> 1;
    for (;;) {
        // This thread's writes (the child it finished) before its arrival.
        __threadfence();
        if (atomicAdd(arrivals + node, 1u) == 0u) {
            return;
        }
        __threadfence();
        const uint2 ch = __ldg(children + node);
        V3 llo, lhi, rlo, rhi;
        float lc, rc;
        u32 lk, rk;
        fast_child(ch.x, slot_boxes, node_boxes, costs, kept, llo, lhi, lc, lk);
        fast_child(ch.y, slot_boxes, node_boxes, costs, kept, rlo, rhi, rc, rk);
        // mirrors Aabb::union (lb.union(rb)): min and max per axis.
        const V3 lo = v3(fminf(llo.x, rlo.x), fminf(llo.y, rlo.y), fminf(llo.z, rlo.z));
        const V3 hi = v3(fmaxf(lhi.x, rhi.x), fmaxf(lhi.y, rhi.y), fmaxf(lhi.z, rhi.z));
        const float area = fast_half_area(lo, hi);
        const uint2 range = __ldg(ranges + node);
        const u32 count = range.y - range.x + 1u;
        const float leaf_cost = __fmul_rn(__fmul_rn(PRISM_FAST_COST_INTERSECT, (float)count), area);
        const float split_cost = __fadd_rn(__fadd_rn(__fmul_rn(PRISM_FAST_COST_TRAVERSAL, area), lc), rc);
        node_boxes[2u * node] = make_float4(lo.x, lo.y, lo.z, 0.0f);
        node_boxes[2u * node + 1u] = make_float4(hi.x, hi.y, hi.z, 0.0f);
        if (count <= max_leaf && leaf_cost <= split_cost) {
            costs[node] = leaf_cost;
            kept[node] = 0u;
        } else {
            costs[node] = split_cost;
            kept[node] = 1u + lk + rk;
        }
        if (node == 0u) {
            return;
        }
        node = __ldg(links + node) >> 1;
    }
}

// A child's two rows in the layout (prism_core::lbvh::node_of).
__device__ __forceinline__ void fast_rows(float4 lo, float4 hi, u32 index, u32 count, float4* out_lo, float4* out_hi) {
    *out_lo = make_float4(lo.x, lo.y, lo.z, __uint_as_float(index));
    *out_hi = make_float4(hi.x, hi.y, hi.z, __uint_as_float(count));
}

// Child `c` of a kept node as a row pair (prism_core::lbvh::build's
// child_of): a slot, a merged node (a leaf over its range) or a kept node at
// `at`.
// A slot's leaf names the slot, or with `names` the instance it holds.
__device__ __forceinline__ void fast_child_rows(u32 c, u32 at, const float4* __restrict__ slot_boxes,
                                                const float4* __restrict__ node_boxes,
                                                const uint2* __restrict__ ranges, const u32* __restrict__ kept,
                                                const u32* __restrict__ names, float4* out_lo, float4* out_hi) {
    if (c & PRISM_FAST_LEAF) {
        const u32 s = c & ~PRISM_FAST_LEAF;
        fast_rows(slot_boxes[2u * s], slot_boxes[2u * s + 1u], names ? names[s] : s, 1u, out_lo, out_hi);
    } else if (kept[c] == 0u) {
        const uint2 r = ranges[c];
        fast_rows(node_boxes[2u * c], node_boxes[2u * c + 1u], r.x, r.y - r.x + 1u, out_lo, out_hi);
    } else {
        fast_rows(node_boxes[2u * c], node_boxes[2u * c + 1u], at, 0u, out_lo, out_hi);
    }
}

// mirrors step 5 of prism_core::lbvh::build for inner node `i`: nothing for a
// merged node or one under a merged node; else its index in depth-first
// order (one past its parent's, plus the left sibling's kept subtree for a
// right child), found by walking up, and its node. A merged root is one leaf
// over every slot beside an absent child.
__device__ __forceinline__ void fast_emit(u32 n, const uint2* __restrict__ children, const uint2* __restrict__ ranges,
                                          const u32* __restrict__ links, const float4* __restrict__ slot_boxes,
                                          const float4* __restrict__ node_boxes, const u32* __restrict__ kept,
                                          const u32* __restrict__ names, BvhNode* __restrict__ nodes) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i + 1u >= n) {
        return;
    }
    if (kept[i] == 0u) {
        if (i == 0u) {
            BvhNode* root = nodes;
            fast_rows(node_boxes[0], node_boxes[1], 0u, n, &root->left_lo, &root->left_hi);
            root->right_lo = make_float4(PRISM_INF, PRISM_INF, PRISM_INF, __uint_as_float(PRISM_EMPTY_CHILD));
            root->right_hi = make_float4(PRISM_INF, PRISM_INF, PRISM_INF, __uint_as_float(0u));
        }
        return;
    }
    u32 index = 0u;
    for (u32 c = i; c != 0u;) {
        const u32 link = links[c];
        const u32 p = link >> 1;
        if (kept[p] == 0u) {
            return;
        }
        if (link & 1u) {
            const u32 left = children[p].x;
            index += 1u + ((left & PRISM_FAST_LEAF) ? 0u : kept[left]);
        } else {
            index += 1u;
        }
        c = p;
    }
    const uint2 ch = children[i];
    const u32 left_kept = (ch.x & PRISM_FAST_LEAF) ? 0u : kept[ch.x];
    BvhNode* out = nodes + index;
    fast_child_rows(ch.x, index + 1u, slot_boxes, node_boxes, ranges, kept, names, &out->left_lo, &out->left_hi);
    fast_child_rows(ch.y, index + 1u + left_kept, slot_boxes, node_boxes, ranges, kept, names, &out->right_lo,
                    &out->right_hi);
}
