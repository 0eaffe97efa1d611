// The batch kernels' work: prism_intersect and prism_occluded (prism.cu)
// over a batch of GpuRay records, for each scene shape (one tree, or
// instances over geometries' trees) by its walk (traverse.cuh's TreeClosest
// and TreeAny, two_level.cuh's InstancesClosest and InstancesAny).
#pragma once
#include "traverse.cuh"

// Ray i of a batch of GpuRay records (three rows a ray): its origin and
// direction rows as a Ray, and its visibility mask in `mask`.
__device__ __forceinline__ Ray load_ray(const float4* __restrict__ rays, u32 i, u32& mask) {
    const float4* r = rays + (u64)i * 3u;
    const float4 o = __ldg(r);
    const float4 d = __ldg(r + 1);
    mask = __ldg(reinterpret_cast<const u32*>(r + 2));
    return Ray{xyz(o), o.w, xyz(d), d.w};
}

// The answer to a closest-hit query that sees nothing.
__device__ __forceinline__ Hit miss_hit() {
    Hit h;
    h.t = PRISM_INF;
    h.u = 0.0f;
    h.v = 0.0f;
    h.prim = PRISM_NO_PRIM;
    h.instance = PRISM_NO_INSTANCE;
    return h;
}

// Store the closest hit of ray i as prism_core::Accel::intersect gives it:
// the slot's scene primitive id and the instance, or a miss (NO_PRIM,
// NO_INSTANCE, t = +inf); two rows.
// K: the walk's kinds (Walk::KINDS), whose PRISM_HEIGHTFIELDS bit says whether
// a hit may be a heightfield's.
template <int K>
__device__ __forceinline__ void store_hit(const SceneView& s, const Hit& h, u32 i, float4* __restrict__ hits) {
    u32 id = PRISM_NO_PRIM;
    u32 instance = PRISM_NO_INSTANCE;
    float u = h.u, v = h.v;
    u32 cell = 0u, face = 0u;
    if (h.prim != PRISM_NO_PRIM) {
        id = __float_as_uint(__ldg(&s.prims[h.prim].a).w);
        instance = h.instance;
        // A heightfield's hit carries its face and cell in u and v
        // (heightfield.cuh): unpacked here, u = v = 0 as in core.
        if ((K & PRISM_HEIGHTFIELDS) != 0 && __float_as_uint(__ldg(&s.prims[h.prim].b).w) == PRISM_KIND_HEIGHTFIELD) {
            face = __float_as_uint(u);
            cell = __float_as_uint(v);
            u = 0.0f;
            v = 0.0f;
        }
    }
    hits[2u * (u64)i] = make_float4(h.t, u, v, __uint_as_float(id));
    // The second row: instance, cell and face (0 but for a heightfield), 0.
    hits[2u * (u64)i + 1u] =
        make_float4(__uint_as_float(instance), __uint_as_float(cell), __uint_as_float(face), 0.0f);
}

// Closest hit of ray i, by one walk to its end.
template <typename Walk>
__device__ __forceinline__ void intersect_one(const SceneView& s, const float4* __restrict__ rays, u32 i,
                                              float4* __restrict__ hits) {
    Walk w;
    u32 stack[Walk::STACK];
    u32 mask;
    const Ray ray = load_ray(rays, i, mask);
    if (!w.begin(s, ray, mask)) {
        store_hit<Walk::KINDS>(s, miss_hit(), i, hits);
        return;
    }
    while (w.step(s, stack)) {
    }
    store_hit<Walk::KINDS>(s, w.end(), i, hits);
}

// Whether anything lies on ray i, by one walk to its end.
template <typename Walk>
__device__ __forceinline__ void occluded_one(const SceneView& s, const float4* __restrict__ rays, u32 i,
                                             unsigned char* __restrict__ out) {
    Walk w;
    u32 stack[Walk::STACK];
    u32 mask;
    const Ray ray = load_ray(rays, i, mask);
    int r = PRISM_STEP_MISS;
    if (w.begin(s, ray, mask)) {
        do {
            r = w.step(s, stack);
        } while (r == PRISM_STEP_MORE);
    }
    out[i] = r == PRISM_STEP_HIT ? 1 : 0;
}

// The trace kernels' rays are split into PRISM_TRACE_SHARDS contiguous ranges,
// each with its own counter in `work`, one 128-byte line apart: a warp starts
// on range (its index mod the count) and moves to the next range once its own
// is used up. With one counter every refill of every warp of the GPU is an
// atomic on one address, served by one L2 slice; several spread them over
// slices (-DPRISM_TRACE_SHARDS=1 restores the one counter, to measure it).
// The host zeroes PRISM_WORK_WORDS words, room for PRISM_TRACE_SHARDS_MAX counters
// (src/kernels.rs, WORK_WORDS).
#ifndef PRISM_TRACE_SHARDS
#define PRISM_TRACE_SHARDS 16
#endif
#define PRISM_TRACE_SHARDS_MAX 32
#define PRISM_TRACE_SHARD_WORDS 32
static_assert(PRISM_TRACE_SHARDS >= 1 && PRISM_TRACE_SHARDS <= PRISM_TRACE_SHARDS_MAX, "trace shards: 1..=32");
static_assert(PRISM_TRACE_SHARDS_MAX * PRISM_TRACE_SHARD_WORDS <= PRISM_WORK_WORDS, "the host's work buffer holds every counter");

// The first ray of range `k` of `n` (range PRISM_TRACE_SHARDS ends at n).
__device__ __forceinline__ u32 shard_start(u32 n, u32 k) {
    return (u32)(((u64)n * k) / PRISM_TRACE_SHARDS);
}

// Where a persistent warp claims its rays (warp-uniform): the range it takes
// from and how many ranges it has not yet found used up.
struct RayClaim {
    u32 shard;
    u32 shards_left;
};

__device__ __forceinline__ RayClaim ray_claim_begin() {
    const u32 warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    return RayClaim{warp % PRISM_TRACE_SHARDS, PRISM_TRACE_SHARDS};
}

// The claim of a persistent warp with lane refill (intersect_refill,
// occluded_refill): once at least REFILL of its lanes are idle and rays are
// left, the warp takes as many ray indices as it has idle lanes from its
// range's counter (one atomic a warp) and hands them out in lane order; an
// idle lane that gets a ray i of the range calls start(i), which returns
// whether the ray is to be walked (else its answer is stored at once and the
// lane stays idle), and is then busy with ray `ray_index` = i. A claim that reaches the range's end moves the warp to the
// next range; `exhausted` becomes true, the same in every lane, once the warp
// has found every range used up. Called by all 32 lanes.
template <u32 REFILL, typename Start>
__device__ __forceinline__ void refill_lanes(u32* work, u32 n, RayClaim& claim, bool& busy, bool& exhausted,
                                             u32& ray_index, Start start) {
    const u32 idle = __ballot_sync(0xffffffffu, !busy);
    const u32 want = (u32)__popc(idle);
    if (!exhausted && want >= REFILL) {
        const u32 lane = threadIdx.x & 31u;
        const u32 leader = __ffs(idle) - 1;
        const u32 lo = shard_start(n, claim.shard);
        const u32 span = shard_start(n, claim.shard + 1) - lo;
        u32 base = 0;
        if (lane == leader) {
            base = atomicAdd(work + claim.shard * PRISM_TRACE_SHARD_WORDS, want);
        }
        base = __shfl_sync(0xffffffffu, base, leader);
        // Rays of the range left to this claim (the counter may have passed its end).
        const u32 avail = base < span ? span - base : 0u;
        if (avail <= want) {
            claim.shard = claim.shard + 1 == PRISM_TRACE_SHARDS ? 0u : claim.shard + 1;
            claim.shards_left -= 1;
            exhausted = claim.shards_left == 0;
        }
        if (!busy) {
            const u32 rank = (u32)__popc(idle & ((1u << lane) - 1u));
            if (rank < avail) {
                const u32 i = lo + base + rank;
                ray_index = i;
                busy = start(i);
            }
        }
    }
}

// Closest hits with lane refill: each lane of a persistent warp holds one ray
// and the warp steps all of them through the BVH one node at a time; once at
// least PRISM_TRACE_REFILL lanes are done, those lanes take new rays from `work`
// (one atomic per warp). Incoherent rays need very different numbers of steps;
// refilling keeps most lanes busy instead of waiting for the warp's longest ray.
// Every ray is walked exactly as by intersect_one.
template <typename Walk>
__device__ __forceinline__ void intersect_refill(const SceneView& s, const float4* __restrict__ rays, u32 n,
                                                 float4* __restrict__ hits, u32* work) {
    Walk w;
    u32 stack[Walk::STACK];
    u32 ray_index = 0;
    bool busy = false;
    bool exhausted = false;  // warp-uniform: every range is used up
    RayClaim claim = ray_claim_begin();
    for (;;) {
        refill_lanes<PRISM_TRACE_REFILL>(work, n, claim, busy, exhausted, ray_index, [&](u32 i) {
            u32 mask;
            const Ray ray = load_ray(rays, i, mask);
            if (w.begin(s, ray, mask)) {
                return true;
            }
            store_hit<Walk::KINDS>(s, miss_hit(), i, hits);
            return false;
        });
        if (__ballot_sync(0xffffffffu, busy) == 0) {
            if (exhausted) {
                break;
            }
            continue;
        }
        if (busy && !w.step(s, stack)) {
            store_hit<Walk::KINDS>(s, w.end(), ray_index, hits);
            busy = false;
        }
    }
}

// Any hits with lane refill (see intersect_refill).
template <typename Walk>
__device__ __forceinline__ void occluded_refill(const SceneView& s, const float4* __restrict__ rays, u32 n,
                                                unsigned char* __restrict__ out, u32* work) {
    Walk w;
    u32 stack[Walk::STACK];
    u32 ray_index = 0;
    bool busy = false;
    bool exhausted = false;  // warp-uniform: every range is used up
    RayClaim claim = ray_claim_begin();
    for (;;) {
        refill_lanes<PRISM_OCCLUDED_REFILL>(work, n, claim, busy, exhausted, ray_index, [&](u32 i) {
            u32 mask;
            const Ray ray = load_ray(rays, i, mask);
            if (w.begin(s, ray, mask)) {
                return true;
            }
            out[i] = 0;
            return false;
        });
        if (__ballot_sync(0xffffffffu, busy) == 0) {
            if (exhausted) {
                break;
            }
            continue;
        }
        if (busy) {
            const int r = w.step(s, stack);
            if (r != PRISM_STEP_MORE) {
                out[ray_index] = r == PRISM_STEP_HIT ? 1 : 0;
                busy = false;
            }
        }
    }
}

#if PRISM_PERSISTENT
// Persistent warps: each warp takes the next 32 rays from `work` until none are left.
#define PRISM_FOR_EACH_RAY(n, work, body)                                   \
    for (;;) {                                                              \
        u32 base = 0;                                                       \
        if ((threadIdx.x & 31u) == 0) {                                     \
            base = atomicAdd(work, 32u);                                    \
        }                                                                   \
        base = __shfl_sync(0xffffffffu, base, 0);                           \
        if (base >= (n)) {                                                  \
            break;                                                          \
        }                                                                   \
        const u32 i = base + (threadIdx.x & 31u);                           \
        if (i < (n)) {                                                      \
            body;                                                           \
        }                                                                   \
    }
#else
#define PRISM_FOR_EACH_RAY(n, work, body)                                   \
    {                                                                       \
        (void)(work);                                                       \
        const u32 i = blockIdx.x * PRISM_TRACE_THREADS + threadIdx.x;       \
        if (i < (n)) {                                                      \
            body;                                                           \
        }                                                                   \
    }
#endif

// The two batch kernels of one walk pair, compiled to fit MIN_BLOCKS blocks
// an SM: NAME_INTERSECT: hits[i] = the closest hit of ray i (Hit, two rows:
// t, u, v, scene primitive id bits; instance); NAME_OCCLUDED: out[i] = 1 when
// something ray i sees lies on it, else 0.
#define PRISM_TRACE_KERNELS(NAME_INTERSECT, NAME_OCCLUDED, CLOSEST, ANY, MIN_BLOCKS)                              \
    extern "C" __global__ void __launch_bounds__(PRISM_TRACE_THREADS, MIN_BLOCKS)                                  \
        NAME_INTERSECT(SceneView s, const float4* __restrict__ rays, u32 n, float4* __restrict__ hits, u32* work) { \
        if (PRISM_PERSISTENT && PRISM_TRACE_REFILL > 0) {                                                          \
            intersect_refill<CLOSEST>(s, rays, n, hits, work);                                                     \
        } else {                                                                                                   \
            PRISM_FOR_EACH_RAY(n, work, intersect_one<CLOSEST>(s, rays, i, hits))                                  \
        }                                                                                                          \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(PRISM_TRACE_THREADS, MIN_BLOCKS)                                  \
        NAME_OCCLUDED(SceneView s, const float4* __restrict__ rays, u32 n, unsigned char* __restrict__ out,        \
                      u32* work) {                                                                                 \
        if (PRISM_PERSISTENT && PRISM_OCCLUDED_REFILL > 0) {                                                       \
            occluded_refill<ANY>(s, rays, n, out, work);                                                           \
        } else {                                                                                                   \
            PRISM_FOR_EACH_RAY(n, work, occluded_one<ANY>(s, rays, i, out))                                        \
        }                                                                                                          \
    }
