// Prism's CUDA kernels. Compiled at run time by NVRTC for the device's own
// architecture (see src/kernels.rs); every helper lives in a header and is
// inlined, and no kernel allocates device memory or recurses.
//
// Build-time knobs (-D, set by KernelConfig on the host):
//   PRISM_TRACE_THREADS, PRISM_TRACE_MIN_BLOCKS    intersect/occluded launch bounds
//   PRISM_RENDER_TILE_W, PRISM_RENDER_TILE_H      render block = one tile of pixels
//   PRISM_RENDER_MIN_BLOCKS                       render launch bounds
//   PRISM_CAMERA_MASKS_THREADS                    prism_camera_masks's block
//   PRISM_PERSISTENT    1: intersect/occluded warps fetch 32-ray batches from a counter
//   PRISM_TRACE_REFILL  N > 0 (with PRISM_PERSISTENT): intersect refills lanes with
//                       new rays once N lanes are done (see intersect_refill)
//   PRISM_OCCLUDED_REFILL  the same for occluded
//   PRISM_TRACE_SHARDS  ray ranges, each with its own counter, that the refill
//                       kernels claim from (default 16; see refill_lanes)
//   PRISM_LOBE_BRANCHES 1: scatter evaluates only the lobe it picks (see material.cuh)
//   PRISM_TREE_CHECKS   0: the host checked the tree at upload, the kernels skip
//                       core's per-leaf and per-node checks (see traverse.cuh)
//   PRISM_CAMERA_LIST   0: camera rays with candidates walk the tree (see
//                       render_or_listed_hit in integrator.cuh)
//   PRISM_CAMERA_MASK_TILE  pixels on a side of a camera mask's tile (the host
//                       passes core's CAMERA_MASK_TILE, which its cones are made for)
//   PRISM_WHITTED_SKIPS_CAMERA_RNG  1: the Whitted kernel makes one-sample pinhole
//                       camera rays without drawing their unused random numbers
//   PRISM_PATH_REGEN    1: the path kernel starts a pixel's next sample as soon as
//                       a path ends (one loop over path segments) instead of
//                       nesting the depth loop in the sample loop
//   PRISM_RENDER_TMIN_NONNEG  0: the render kernels' slab tests keep the sign test
//                       of negative exits, which their rays never need (default 1;
//                       see integrator.cuh)
//   PRISM_PATH_DEFER    N > 0: the path kernel decouples traversal from shading
//                       within a warp, shading once N lanes are ready (see
//                       render_pixel_path_deferred); 0: off
//   PRISM_PATH_PERSISTENT  1: the path kernels' warps take warp-sized pieces of
//                       the rows from a counter (see render_rows_persistent)
//   PRISM_PATH_LANES    lanes that share a pixel's samples in a persistent path
//                       launch's bulk, where they divide spp (power of two <= 32)
//   PRISM_PATH_TAIL_64THS  sixty-fourths of a persistent path launch's tiles,
//                       last in its order, whose pixels take as many lanes as
//                       their samples need
//   PRISM_PATH_TILE_W   width of the persistent path kernels' 128-pixel tiles
//   PRISM_PATH_THREADS, PRISM_PATH_MIN_BLOCKS  the persistent path kernels'
//                       block (one row of threads) and launch bound, also the
//                       persistent AO kernels'
//   PRISM_AO_PERSISTENT 1: the AO kernels' warps take pieces of the rows from a
//                       counter and share their pixels' AO rays (render_rows_ao)
#include "prism_types.cuh"
#include "intersect.cuh"
#include "traverse.cuh"
#include "rng.cuh"
#include "sampling.cuh"
#include "material.cuh"
#include "camera.cuh"
#include "image.cuh"
#include "integrator.cuh"
#include "two_level.cuh"
#include "batch.cuh"
#include "refit.cuh"
#include "fast_build.cuh"
#include "clustered_build.cuh"
#include "top_build.cuh"

#define PRISM_RENDER_THREADS (PRISM_RENDER_TILE_W * PRISM_RENDER_TILE_H)
// The persistent path kernels' blocks: one row of PRISM_PATH_THREADS, whatever
// the render tile, since their warps take pixels from a counter. 256 threads
// and 4 blocks an SM (the same 64 registers and 1,024 threads as 16 x 8 tiles
// and 8 blocks): rtiow 0.5% faster on an H100 (bench/RESULTS.md).
#ifndef PRISM_PATH_THREADS
#define PRISM_PATH_THREADS 256
#endif
#ifndef PRISM_AO_PERSISTENT
#define PRISM_AO_PERSISTENT 1
#endif
#ifndef PRISM_PATH_MIN_BLOCKS
#define PRISM_PATH_MIN_BLOCKS 4
#endif

// Per-frame parameters, written by the host before each frame's launches.
__constant__ RenderParams c_params;

// Output formats of the render kernels (prism_core::image::PixelFormat).
#define PRISM_FORMAT_LINEAR_F32 0u
#define PRISM_FORMAT_SRGBA8 1u

__device__ __forceinline__ void store_pixel(void* out, u32 format, const uint2* srgb8, u32 index, V3 c) {
    if (format == PRISM_FORMAT_SRGBA8) {
        reinterpret_cast<u32*>(out)[index] = encode_srgba8(srgb8, c);
    } else {
        reinterpret_cast<float4*>(out)[index] = make_float4(c.x, c.y, c.z, 1.0f);
    }
}

// The frame's ray tally: PRISM_RAY_TALLY_SLOTS counters of 64 bits, which the
// host zeroes before a frame and sums after it (src/kernels.rs, RAY_TALLY_SLOTS).
// Warps spread their additions over the slots: every warp adding to one
// address serialises them in the L2, which held a whitted19 frame (2.1 M warps)
// at 1.7 ms even with no traversal at all.
static_assert((PRISM_RAY_TALLY_SLOTS & (PRISM_RAY_TALLY_SLOTS - 1)) == 0, "tally slots: a power of two");

// Sum of `rays` over the warp, added once per warp to one slot of the tally.
// Integer addition: the total does not depend on the order of the atomics.
// The warp's sum can pass 2^32 (32 lanes of up to 2^32 - 1 rays), so it is
// taken exactly: the high and low 16 bits of each lane's count are summed
// apart (each sum below 2^21) and joined in 64 bits.
__device__ __forceinline__ void count_rays(u64* tally, u32 rays) {
#if __CUDA_ARCH__ >= 800
    const u32 high = __reduce_add_sync(0xffffffffu, rays >> 16);
    const u32 low = __reduce_add_sync(0xffffffffu, rays & 0xffffu);
    const u64 total = ((u64)high << 16) + (u64)low;
#else
    u64 total = rays;
    for (int o = 16; o > 0; o >>= 1) {
        total += __shfl_xor_sync(0xffffffffu, total, o);
    }
#endif
    const u32 linear = threadIdx.y * blockDim.x + threadIdx.x;
    if ((linear & 31u) == 0) {
        // Consecutive warps of the launch take consecutive slots.
        const u32 warps_per_block = (blockDim.x * blockDim.y + 31u) >> 5;
        const u32 warp = (blockIdx.y * gridDim.x + blockIdx.x) * warps_per_block + (linear >> 5);
        atomicAdd(tally + (warp & (PRISM_RAY_TALLY_SLOTS - 1u)), total);
    }
}

// One pixel of the path integrator with path regeneration: the same paths,
// random numbers and sums as render_pixel<0, K> (trace_path's loop body, then
// the next sample when a path ends), as one loop over path segments, so a lane
// whose path ends early starts its next sample instead of idling until the
// warp's longest path is done. The shading code is laid out differently, so
// NVRTC may contract other a * b + c into FMAs: pixels can differ from
// render_pixel's in their last bits (the rtiow frame's 8-bit bytes do).
template <int K, bool OCT, bool SUN>
__device__ __forceinline__ V3 render_pixel_path_regen(const SceneView& s, const RenderParams& params, u32 x, u32 y,
                                                      u32& rays) {
    V3 sum = v3s(0.0f);
    u32 sample = 0;
    Pcg rng;
    Ray ray = primary_ray(params, x, y, sample, rng);
    V3 radiance = v3s(0.0f);
    V3 throughput = v3s(1.0f);
    float sun_weight = 1.0f;
    u32 depth = 0;
    for (;;) {
        const Hit hit = render_closest_hit<K, OCT, false>(s, ray);
        if (path_shade<K, OCT, SUN>(s, params, ray, hit, rng, radiance, throughput, sun_weight, depth, rays)) {
            // render_pixel's `sum += c`, then the next sample.
            sum += radiance;
            sample += 1;
            if (sample >= params.spp) {
                break;
            }
            ray = primary_ray(params, x, y, sample, rng);
            radiance = v3s(0.0f);
            throughput = v3s(1.0f);
            sun_weight = 1.0f;
            depth = 0;
        }
    }
    return sum * (1.0f / (float)params.spp);
}

// The same paths as render_pixel_path_regen, with the traversal and the shading
// of a warp's lanes decoupled: lanes step through the BVH one node at a time,
// and a lane whose ray is done waits until at least PRISM_PATH_DEFER lanes are
// (or no lane is still traversing); then those lanes shade and spawn their next
// rays together. Both phases then run with most lanes busy, instead of every
// lane waiting for the warp's longest traversal and the shading running for the
// few lanes that are ready. Must be called by every lane of the warp (`active`
// false for lanes outside the image).
template <int K, bool OCT, bool SUN>
__device__ __forceinline__ V3 render_pixel_path_deferred(const SceneView& s, const RenderParams& params, u32 x, u32 y,
                                                         bool active, u32& rays) {
    const u32 TRAVERSE = 0, SHADE = 1, DONE = 2;
    V3 sum = v3s(0.0f);
    u32 sample = 0;
    Pcg rng;
    rng.state = 0;
    Ray ray;
    V3 radiance = v3s(0.0f);
    V3 throughput = v3s(1.0f);
    float sun_weight = 1.0f;
    u32 depth = 0;
    ClosestHit trav;
    u32 stack[PRISM_TRAVERSAL_STACK_SIZE];
    u32 phase = DONE;
    if (active) {
        ray = primary_ray(params, x, y, sample, rng);
        closest_hit_begin<K, OCT>(trav, ray, s);
        phase = TRAVERSE;
    }
    for (;;) {
        const u32 traversing = __ballot_sync(0xffffffffu, phase == TRAVERSE);
        const u32 shading = __ballot_sync(0xffffffffu, phase == SHADE);
        if ((traversing | shading) == 0) {
            break;
        }
        if (traversing == 0 || __popc(shading) >= PRISM_PATH_DEFER) {
            if (phase == SHADE) {
                const Hit hit = closest_hit_end(trav);
                bool next = true;
                if (path_shade<K, OCT, SUN>(s, params, ray, hit, rng, radiance, throughput, sun_weight, depth, rays)) {
                    sum += radiance;
                    sample += 1;
                    if (sample >= params.spp) {
                        next = false;
                        phase = DONE;
                    } else {
                        ray = primary_ray(params, x, y, sample, rng);
                        radiance = v3s(0.0f);
                        throughput = v3s(1.0f);
                        sun_weight = 1.0f;
                        depth = 0;
                    }
                }
                if (next) {
                    closest_hit_begin<K, OCT>(trav, ray, s);
                    phase = TRAVERSE;
                }
            }
        } else if (phase == TRAVERSE) {
            if (!closest_hit_step<K, PRISM_RENDER_NN, OCT>(trav, stack, s)) {
                phase = SHADE;
            }
        }
    }
    return sum * (1.0f / (float)params.spp);
}

// The colour of pixel (x, y) by INTEGRATOR, adding its rays to `rays`: the
// path kernel on the tree regenerates paths when PRISM_PATH_REGEN is on.
template <u32 INTEGRATOR, int K, bool OCT, bool GRID>
__device__ __forceinline__ V3 pixel_color(const SceneView& s, const RenderParams& params, u32 x, u32 y, u32 tile,
                                          u32& rays) {
#if PRISM_PATH_REGEN
    if (PRISM_IS_PATH(INTEGRATOR) && !GRID) {
        return render_pixel_path_regen<K, OCT, INTEGRATOR == PRISM_INTEGRATOR_PATH_SUN>(s, params, x, y, rays);
    }
#endif
    return render_pixel<INTEGRATOR, K, OCT, GRID>(s, params, x, y, tile, rays);
}

// Whether each tile of render pixels lies in one mask tile (camera_bounds.cuh)
// when its first row is a multiple of the tile's height: its mask tile is then
// that of its first pixel, found from the block's indices alone. A pixel's own
// takes some 20 instructions, which the register allocator repeated at every
// mask load instead of keeping the result: whitted19 1.499 -> 1.482 ms on an
// H100.
#define PRISM_MASK_TILE_PER_BLOCK \
    (PRISM_CAMERA_MASK_TILE % PRISM_RENDER_TILE_W == 0 && PRISM_CAMERA_MASK_TILE % PRISM_RENDER_TILE_H == 0)

// Pixels of rows [y0, y1): one block per `tiles` tiles, one below the other,
// and one thread per pixel of each tile, taken in turn: a thread's fixed
// costs (its indices, the frame's constants, the ray tally) are shared by
// that many pixels (whitted19 2.01 -> 1.87 ms on an H100 with 4 tiles of
// 16 x 8, see KernelConfig::render_tiles_per_block). A lane's ray count stays
// below 2^32: at most 16 pixels (KernelConfig::validate) of at most 2^16
// samples of at most 2 * 1025 rays.
template <u32 INTEGRATOR, int K, bool OCT, bool GRID = false>
__device__ __forceinline__ void render_rows(const SceneView& s, u32 y0, u32 y1, void* out, u32 format,
                                            const uint2* srgb8, u64* ray_tally, u32 tiles) {
    const RenderParams& params = c_params;
    const u32 x = blockIdx.x * PRISM_RENDER_TILE_W + threadIdx.x;
    u32 rays = 0;
#pragma unroll 1
    for (u32 i = 0; i < tiles; ++i) {
        const u32 y = y0 + (blockIdx.y * tiles + i) * PRISM_RENDER_TILE_H + threadIdx.y;
        const bool active = x < params.width && y < y1 && y < params.height;
#if PRISM_PATH_DEFER > 0
        // Not for two-level scenes, whose walks are not closest_hit_step's.
        if constexpr (PRISM_IS_PATH(INTEGRATOR) && !GRID && (K & PRISM_INSTANCES) == 0) {
            // Every lane takes part (warp votes); only pixels of the image are stored.
            const V3 c = render_pixel_path_deferred<K, OCT, INTEGRATOR == PRISM_INTEGRATOR_PATH_SUN>(s, params, x, y, active,
                                                                                              rays);
            if (active) {
                store_pixel(out, format, srgb8, y * params.width + x, c);
            }
            continue;
        }
#endif
        if (active) {
            // The bands start at multiples of the tile's height (the host's
            // plan); a launch that did not would take each pixel's own.
            const u32 row0 = y0 + (blockIdx.y * tiles + i) * PRISM_RENDER_TILE_H;
            const u32 tile = PRISM_MASK_TILE_PER_BLOCK && y0 % PRISM_RENDER_TILE_H == 0
                                 ? camera_mask_tile(s, blockIdx.x * PRISM_RENDER_TILE_W, row0)
                                 : camera_mask_tile(s, x, y);
            const V3 c = pixel_color<INTEGRATOR, K, OCT, GRID>(s, params, x, y, tile, rays);
            store_pixel(out, format, srgb8, y * params.width + x, c);
        }
    }
    count_rays(ray_tally, rays);
}

// Whether a render kernel runs persistent warps (render_rows_persistent): the
// path kernels with PRISM_PATH_PERSISTENT, unless they defer shading (which
// needs render_rows' lanes) or regenerate paths (a pixel's samples on one lane).
#define PRISM_PERSISTENT_ROWS(INTEGRATOR, GRID)                                                                 \
    ((PRISM_PATH_PERSISTENT && PRISM_IS_PATH(INTEGRATOR) && !((PRISM_PATH_DEFER > 0 || PRISM_PATH_REGEN) && !(GRID))) || \
     (PRISM_AO_PERSISTENT && (INTEGRATOR) == 2))

// Pixels of rows [y0, y1) by persistent warps: the launch has a thread a pixel
// in rows of PRISM_PATH_THREADS, each of whose warps takes the next piece of the rows from `work`
// (zeroed by the host before the launch; one atomic a piece) until none is
// left. A warp that finishes early takes more work instead of leaving its
// block's slot idle, and the launch ends within one piece's time of its last
// piece's start instead of one block's: rtiow 4.44 -> 4.34 ms on an H100
// (bench/RESULTS.md). Only for the path integrator, whose pieces are long (spp
// paths a pixel): whitted19's 2 M one-sample pieces serialise their atomics in
// the L2 (4.2 against 2.38 ms).
//
// A piece is 32 / lanes pixels, taken row by row from tiles of 128 pixels, 8
// wide (PRISM_PATH_TILE_W), tile by tile, top rows first (rtiow's horizon,
// where rays graze the ground and walk the most cells, lies near the top, so
// the heaviest pieces start first), each pixel's samples spread over `lanes`
// neighbouring lanes:
// lane j of a pixel traces samples j, j + lanes, ... (render_sample) and after
// each step the pixel's first lane adds the step's colours in sample order, so
// the sum is render_pixel's, added in the same order: the same bits as
// render_rows. In the launch's bulk a pixel takes PRISM_PATH_LANES lanes where
// they divide spp (else one): the two samples a warp traces side by side for
// each of 16 pixels start from one pixel and end closer together than samples
// of 32 pixels, and a piece takes half the steps (rtiow 4.36 -> 4.21 ms; four
// lanes a pixel 4.20, eight 4.25). The last PRISM_PATH_TAIL_64THS sixty-fourths
// of the tiles give a pixel as many lanes as its samples need (at most 32), so
// the launch's last pieces are a step or two long (4.21 -> 4.15 ms). Tiles 8
// pixels wide make a bulk piece an 8 x 2 block: 4.15 -> 4.09 ms (16 wide 4.16,
// 4 wide 4.14, 2 wide 4.14, 32 wide 4.16).
#ifndef PRISM_PATH_LANES
#define PRISM_PATH_LANES 2
#endif
#ifndef PRISM_PATH_TAIL_64THS
#define PRISM_PATH_TAIL_64THS 4
#endif
static_assert(PRISM_PATH_LANES >= 1 && PRISM_PATH_LANES <= 32 && (PRISM_PATH_LANES & (PRISM_PATH_LANES - 1)) == 0,
              "PRISM_PATH_LANES: a power of two up to 32");
static_assert(PRISM_PATH_TAIL_64THS >= 0 && PRISM_PATH_TAIL_64THS <= 64, "PRISM_PATH_TAIL_64THS: 0..=64");

// The persistent path kernels' own tiles of the frame (128 pixels, PRISM_PATH_TILE_W
// wide), whatever the launch's block shape; a piece covers whole rows of a
// tile, or part of one.
#ifndef PRISM_PATH_TILE_W
#define PRISM_PATH_TILE_W 8
#endif
#define PRISM_PATH_TILE_PIXELS 128u
#define PRISM_PATH_TILE_H (PRISM_PATH_TILE_PIXELS / PRISM_PATH_TILE_W)
static_assert(PRISM_PATH_TILE_W >= 1 && PRISM_PATH_TILE_W <= 128 && (PRISM_PATH_TILE_W & (PRISM_PATH_TILE_W - 1)) == 0,
              "PRISM_PATH_TILE_W: a power of two up to 128");

// The smallest power of two >= n, at most 32.
__device__ __forceinline__ u32 lanes_for(u32 n) {
    u32 lanes = 1;
    while (lanes < n && lanes < 32u) {
        lanes <<= 1;
    }
    return lanes;
}

// The warp's next piece from `work` (one atomic a piece), the same in every
// lane; at least the launch's piece count once every piece is taken.
__device__ __forceinline__ u32 claim_piece(u32* work, u32 lane) {
    u32 piece = 0;
    if (lane == 0) {
        piece = atomicAdd(work, 1u);
    }
    return __shfl_sync(0xffffffffu, piece, 0);
}

template <u32 INTEGRATOR, int K, bool OCT, bool GRID>
__device__ __forceinline__ void render_rows_persistent(const SceneView& s, u32 y0, u32 y1, void* out, u32 format,
                                                       const uint2* srgb8, u64* ray_tally, u32* work) {
    const RenderParams& params = c_params;
    const u32 lane = threadIdx.x & 31u;  // blocks are one row (PRISM_PATH_THREADS)
    const u32 spp = params.spp;
    const u32 bulk_lanes = spp % PRISM_PATH_LANES == 0u ? PRISM_PATH_LANES : 1u;
    const u32 tail_lanes = lanes_for(spp);
    const u32 tiles_x = (params.width + PRISM_PATH_TILE_W - 1u) / PRISM_PATH_TILE_W;
    const u32 rows = y1 > y0 ? y1 - y0 : 0u;
    const u32 tiles = tiles_x * ((rows + PRISM_PATH_TILE_H - 1u) / PRISM_PATH_TILE_H);
    const u32 tail_tiles = (u32)(((u64)tiles * PRISM_PATH_TAIL_64THS) / 64u);
    const u32 bulk_tiles = tiles - tail_tiles;
    // A piece is 32 / lanes pixels of one tile, row by row.
    const u32 bulk_per_tile = PRISM_PATH_TILE_PIXELS / 32u * bulk_lanes;
    const u32 tail_per_tile = PRISM_PATH_TILE_PIXELS / 32u * tail_lanes;
    const u32 bulk_pieces = bulk_tiles * bulk_per_tile;
    const u32 pieces = bulk_pieces + tail_tiles * tail_per_tile;
    u32 rays = 0;
    for (;;) {
        const u32 piece = claim_piece(work, lane);
        if (piece >= pieces) {
            break;
        }
        const bool bulk = piece < bulk_pieces;
        const u32 lanes = bulk ? bulk_lanes : tail_lanes;
        const u32 per_tile = bulk ? bulk_per_tile : tail_per_tile;
        const u32 p = bulk ? piece : piece - bulk_pieces;
        const u32 tile = (bulk ? 0u : bulk_tiles) + p / per_tile;
        // Which of its pixel's lanes this one is, and the pixel's first lane.
        const u32 share = lane & (lanes - 1u);
        const u32 first_lane = lane - share;
        // This lane's pixel: the tile's `thread`-th, row by row.
        const u32 thread = (p % per_tile) * (32u / lanes) + lane / lanes;
        const u32 x = (tile % tiles_x) * PRISM_PATH_TILE_W + thread % PRISM_PATH_TILE_W;
        const u32 y = y0 + (tile / tiles_x) * PRISM_PATH_TILE_H + thread / PRISM_PATH_TILE_W;
        const bool inside = x < params.width && y < y1 && y < params.height;
        // Sample k * lanes + share on step k; after each step the pixel's first
        // lane adds the step's colours in sample order, so the sum is
        // render_pixel's, added in the same order.
        const u32 steps = (spp + lanes - 1u) / lanes;
        V3 sum = v3s(0.0f);
        for (u32 k = 0; k < steps; ++k) {
            const u32 sample = k * lanes + share;
            V3 c = v3s(0.0f);
            if (inside && sample < spp) {
                c = render_sample<INTEGRATOR, K, OCT, GRID>(s, params, x, y, sample, rays);
            }
            for (u32 i = 0; i < lanes; ++i) {
                const V3 ci = v3(__shfl_sync(0xffffffffu, c.x, first_lane + i),
                                 __shfl_sync(0xffffffffu, c.y, first_lane + i),
                                 __shfl_sync(0xffffffffu, c.z, first_lane + i));
                if (k * lanes + i < spp) {
                    sum += ci;
                }
            }
        }
        if (inside && share == 0) {
            store_pixel(out, format, srgb8, y * params.width + x, pixel_mean(params, sum));
        }
    }
    count_rays(ray_tally, rays);
}

// AO pixels by persistent warps that share their pixels' AO rays (the AO
// kernels with PRISM_AO_PERSISTENT). A render block's time is its slowest
// lane's camera ray and AO rays one after another, so a frame ended with its
// last heavy blocks running alone, and its time moved by a block's length
// from one frame to the next on identical work (ogre, 48 AO rays a pixel:
// 3.6% of the frame, bench/RESULTS.md). Here a warp takes a piece of pixels
// from `work` (zeroed by the host; one atomic a piece), traces their camera
// rays one a lane, then spreads the AO rays of the pixels it hit over all 32
// lanes, pixel by pixel (lanes over the sky take AO rays of their
// neighbours). A piece is 32 pixels (16 x 2, of 16 x 8 tiles taken top rows
// first) in the launch's bulk and PRISM_AO_TAIL_PIXELS in its last
// PRISM_AO_TAIL_64THS sixty-fourths of the tiles, so the launch ends within a
// few AO rays of its last piece's start.
//
// The same answer as trace_ao: AO ray i of a pixel draws the generator's
// numbers 2i + 5 and 2i + 6 after the pixel's seed (pcg_advance), the open
// rays are counted (an integer, whatever lanes traced them), and the shadow
// ray and the colour are the pixel's own lane's.
#ifndef PRISM_AO_TAIL_64THS
#define PRISM_AO_TAIL_64THS 4
#endif
#ifndef PRISM_AO_TAIL_PIXELS
#define PRISM_AO_TAIL_PIXELS 8
#endif
static_assert(PRISM_AO_TAIL_64THS >= 0 && PRISM_AO_TAIL_64THS <= 64, "PRISM_AO_TAIL_64THS: 0..=64");
static_assert(PRISM_AO_TAIL_PIXELS >= 1 && PRISM_AO_TAIL_PIXELS <= 32 && 128 % PRISM_AO_TAIL_PIXELS == 0,
              "PRISM_AO_TAIL_PIXELS: a divisor of 128 up to 32");

// `rng` advanced by `steps` numbers at once: the generator's affine step
// (state * a + c, wrapping) composed `steps` times by squaring, as steps
// one at a time would leave it.
// mirrors prism_core::rng::Pcg::advance
__device__ __forceinline__ void pcg_advance(Pcg& rng, u32 steps) {
    u32 mult = 747796405u, plus = 2891336453u;
    u32 acc_mult = 1u, acc_plus = 0u;
    while (steps != 0u) {
        if (steps & 1u) {
            acc_mult *= mult;
            acc_plus = acc_plus * mult + plus;
        }
        plus = (mult + 1u) * plus;
        mult *= mult;
        steps >>= 1;
    }
    rng.state = acc_mult * rng.state + acc_plus;
}

template <int K, bool OCT, bool GRID>
__device__ __forceinline__ void render_rows_ao(const SceneView& s, u32 y0, u32 y1, void* out, u32 format,
                                               const uint2* srgb8, u64* ray_tally, u32* work) {
    const RenderParams& params = c_params;
    // A two-level scene's shadow rays run as one more job of their pixels,
    // dealt over the lanes with the AO rays and through the same call of the
    // any-hit walk: a second inlined copy of the two-level walk (the shadow
    // ray's, after the rounds) slowed the whole kernel, as it did the WGSL
    // tile kernel (integrator.wgsl's trace_ao). A flat scene's shadow ray
    // reads its tile's shadow candidates instead (ao_shadow_keep).
    constexpr bool SHADOW_JOBS = (K & PRISM_INSTANCES) != 0;
    const u32 lane = threadIdx.x & 31u;  // blocks are one row (PRISM_PATH_THREADS)
    const u32 tiles_x = (params.width + 15u) / 16u;
    const u32 rows = y1 > y0 ? y1 - y0 : 0u;
    const u32 tiles = tiles_x * ((rows + 7u) / 8u);
    const u32 tail_tiles = (u32)(((u64)tiles * PRISM_AO_TAIL_64THS) / 64u);
    const u32 bulk_tiles = tiles - tail_tiles;
    const u32 tail_per_tile = 128u / PRISM_AO_TAIL_PIXELS;
    const u32 bulk_pieces = bulk_tiles * 4u;
    const u32 pieces = bulk_pieces + tail_tiles * tail_per_tile;
    u32 rays = 0;
    for (;;) {
        const u32 piece = claim_piece(work, lane);
        if (piece >= pieces) {
            break;
        }
        const bool bulk = piece < bulk_pieces;
        const u32 size = bulk ? 32u : (u32)PRISM_AO_TAIL_PIXELS;
        const u32 per_tile = bulk ? 4u : tail_per_tile;
        const u32 p = bulk ? piece : piece - bulk_pieces;
        const u32 tile = (bulk ? 0u : bulk_tiles) + p / per_tile;
        const u32 t = (p % per_tile) * size + lane;  // this lane's pixel of the tile, row by row
        const u32 x = (tile % tiles_x) * 16u + t % 16u;
        const u32 y = y0 + (tile / tiles_x) * 8u + t / 16u;
        const bool inside = lane < size && x < params.width && y < y1 && y < params.height;
        V3 sum = v3s(0.0f);
        for (u32 sample = 0; sample < params.spp; ++sample) {
            // The pixel's camera ray and surface (trace_ao's head).
            Pcg rng{0u};
            Hit hit;
            hit.prim = PRISM_NO_PRIM;
            Ray ray;
            V3 sp = v3s(0.0f), sn = v3s(0.0f);
            float size_at = 0.0f, spawn = 0.0f;
            u32 mask_tile = 0u, samples = 0u, jobs_here = 0u;
            if (inside) {
                ray = primary_ray(params, x, y, sample, rng);
                mask_tile = camera_mask_tile(s, x, y);
                hit = render_or_listed_hit<K, OCT, GRID>(s, ray, 0u, mask_tile);
                rays += 1;
                if (hit.prim != PRISM_NO_PRIM) {
                    surface<K>(s, ray, hit, sp, sn, size_at);
                    sn = dot(sn, ray.dir) < 0.0f ? sn : -sn;
                    spawn = spawn_tmin(sp, ray.origin);
                    samples = ao_rays_at(params, x, y);
                    // A two-level scene's shadow ray is its pixel's last job
                    // (see below).
                    jobs_here = samples + (SHADOW_JOBS && params.ao_shadows != 0 ? 1u : 0u);
                }
            }
            // This lane's pixel's AO rays (and shadow ray, SHADOW_JOBS) are
            // jobs [first, end) of the warp's.
            u32 end = jobs_here;
            for (u32 o = 1; o < 32u; o <<= 1) {
                const u32 before = __shfl_up_sync(0xffffffffu, end, o);
                end += lane >= o ? before : 0u;
            }
            const u32 first = end - jobs_here;
            const u32 jobs = __shfl_sync(0xffffffffu, end, 31);
            u32 open = 0;
            bool shadow_clear = true;
            for (u32 base = 0; base < jobs; base += 32u) {
                const u32 j = base + lane;
                // The lane whose pixel job j belongs to: the first with end > j.
                u32 owner = 0;
                for (u32 step = 16u; step > 0u; step >>= 1) {
                    const u32 e = __shfl_sync(0xffffffffu, end, owner + step - 1u);
                    owner += e <= j ? step : 0u;
                }
                owner &= 31u;
                const u32 from = __shfl_sync(0xffffffffu, first, owner);
                const V3 op = v3(__shfl_sync(0xffffffffu, sp.x, owner), __shfl_sync(0xffffffffu, sp.y, owner),
                                 __shfl_sync(0xffffffffu, sp.z, owner));
                const V3 on = v3(__shfl_sync(0xffffffffu, sn.x, owner), __shfl_sync(0xffffffffu, sn.y, owner),
                                 __shfl_sync(0xffffffffu, sn.z, owner));
                const float osize = __shfl_sync(0xffffffffu, size_at, owner);
                const float ospawn = __shfl_sync(0xffffffffu, spawn, owner);
                // Every job of a flat scene's pixel is an AO ray.
                const u32 osamples = SHADOW_JOBS ? __shfl_sync(0xffffffffu, samples, owner) : 0xffffffffu;
                Pcg orng{__shfl_sync(0xffffffffu, rng.state, owner)};
                bool clear = false;
                if (j < jobs) {
                    Ray r;
                    if (!SHADOW_JOBS || j - from < osamples) {
                        pcg_advance(orng, 2u * (j - from));
                        const float u1 = next_f32(orng);
                        const float u2 = next_f32(orng);
                        const V3 d = cosine_hemisphere(on, u1, u2);
                        const float tmin = ospawn + surface_margin(osize, dot(d, on));
                        r = ray_segment(op, d, tmin, params.ao_distance);
                    } else {
                        r = ao_shadow_ray(params, op, on, osize, ospawn);
                    }
                    clear = !render_any_hit<K, OCT>(s, r);
                    rays += 1;
                }
                // This lane's pixel's jobs of the round, [lo, hi) of its lanes;
                // its AO rays' end before its shadow ray's job.
                const u32 cleared = __ballot_sync(0xffffffffu, clear);
                const u32 ao_end = first + samples;
                if (SHADOW_JOBS && jobs_here > samples && ao_end >= base && ao_end < base + 32u) {
                    shadow_clear = ((cleared >> (ao_end - base)) & 1u) != 0u;
                }
                const u32 lo = max(first, base), hi = min(ao_end, base + 32u);
                if (lo < hi) {
                    const u32 width = hi - lo;
                    const u32 bits = width >= 32u ? 0xffffffffu : ((1u << width) - 1u);
                    open += __popc(cleared & (bits << (lo - base)));
                }
            }
            V3 c = v3s(0.0f);
            if (inside) {
                if (hit.prim == PRISM_NO_PRIM) {
                    c = sky_color(params, ray.dir);
                } else {
                    const GpuMaterial m = hit_material<K>(s, hit);
                    const float keep =
                        SHADOW_JOBS ? (params.ao_shadows == 0 || shadow_clear ? 1.0f : PRISM_SHADOW_KEEP)
                                    : ao_shadow_keep<K, OCT>(s, params, sp, sn, size_at, spawn, mask_tile, rays);
                    const float ao = (float)open / (float)samples;
                    c = xyz(m.albedo_fuzz) * (ao * keep) + xyz(m.emission_ior);
                }
            }
            sum += c;
        }
        if (inside) {
            store_pixel(out, format, srgb8, y * params.width + x, pixel_mean(params, sum));
        }
    }
    count_rays(ray_tally, rays);
}

// One render kernel: rows [y0, y1) of the frame described by c_params with
// integrator INTEGRATOR, written to `out` as float4 (format 0) or packed sRGBA8
// (format 1, encoded through `srgb8`, core's Srgb8Table); rays traced are added to
// the frame's ray tally (count_rays). OCT: the tree's near-first octant copies
// (SceneView::octants; traverse.cuh). `work`: a counter the host zeroed before
// the launch, which the persistent path kernels take their pieces from
// (render_rows_persistent); the other kernels leave it alone. The persistent
// ones are launched in rows of PRISM_PATH_THREADS, the others in blocks of
// `tiles` tiles (render_rows).
#define PRISM_RENDER_KERNEL(NAME, INTEGRATOR, K, OCT, GRID)                                                        \
    extern "C" __global__ void __launch_bounds__(                                                                  \
        PRISM_PERSISTENT_ROWS(INTEGRATOR, GRID) ? PRISM_PATH_THREADS : PRISM_RENDER_THREADS,                       \
        PRISM_PERSISTENT_ROWS(INTEGRATOR, GRID) ? PRISM_PATH_MIN_BLOCKS : PRISM_RENDER_MIN_BLOCKS)                 \
        NAME(SceneView s, u32 y0, u32 y1, void* out, u32 format, const uint2* __restrict__ srgb8,                  \
             u64* ray_tally, u32* work, u32 tiles) {                                                               \
        if constexpr (PRISM_AO_PERSISTENT && (INTEGRATOR) == 2) {                                                 \
            render_rows_ao<K, OCT, GRID>(s, y0, y1, out, format, srgb8, ray_tally, work);                          \
        } else if constexpr (PRISM_PERSISTENT_ROWS(INTEGRATOR, GRID)) {                                            \
            render_rows_persistent<INTEGRATOR, K, OCT, GRID>(s, y0, y1, out, format, srgb8, ray_tally, work);      \
        } else {                                                                                                   \
            render_rows<INTEGRATOR, K, OCT, GRID>(s, y0, y1, out, format, srgb8, ray_tally, tiles);                \
        }                                                                                                          \
    }

// The kernels, once per scene kind (suffix _spheres, _triangles, _mixed,
// _heightfields).
//
// prism_render_{path,whitted,ao}: the render kernels (PRISM_RENDER_KERNEL).
// prism_render_{path,whitted,ao}_octants: the same on the tree's near-first octant
//   copies, which the host uploads for small trees.
// prism_render_{path,whitted,ao}_grid: the octant kernels with closest hits
//   through the scene's uniform grid (cell_grid.cuh), which the host uploads
//   where core's cost model expects it to beat the tree.
// prism_render_path_sun{,_octants,_grid}: the path kernels with the sun's code
//   (PRISM_INTEGRATOR_PATH_SUN), for scenes that have a sun.
// prism_intersect, prism_occluded: the batch kernels (PRISM_TRACE_KERNELS).
#define PRISM_KERNELS(SUFFIX, K, TRACE_MIN_BLOCKS)                                                                 \
    PRISM_RENDER_KERNEL(prism_render_path##SUFFIX, 0, K, false, false)                                             \
    PRISM_RENDER_KERNEL(prism_render_whitted##SUFFIX, 1, K, false, false)                                          \
    PRISM_RENDER_KERNEL(prism_render_ao##SUFFIX, 2, K, false, false)                                               \
    PRISM_RENDER_KERNEL(prism_render_path_octants##SUFFIX, 0, K, true, false)                                      \
    PRISM_RENDER_KERNEL(prism_render_whitted_octants##SUFFIX, 1, K, true, false)                                   \
    PRISM_RENDER_KERNEL(prism_render_ao_octants##SUFFIX, 2, K, true, false)                                        \
    PRISM_RENDER_KERNEL(prism_render_path_grid##SUFFIX, 0, K, true, true)                                          \
    PRISM_RENDER_KERNEL(prism_render_whitted_grid##SUFFIX, 1, K, true, true)                                       \
    PRISM_RENDER_KERNEL(prism_render_ao_grid##SUFFIX, 2, K, true, true)                                            \
    PRISM_RENDER_KERNEL(prism_render_path_sun##SUFFIX, PRISM_INTEGRATOR_PATH_SUN, K, false, false)                  \
    PRISM_RENDER_KERNEL(prism_render_path_sun_octants##SUFFIX, PRISM_INTEGRATOR_PATH_SUN, K, true, false)           \
    PRISM_RENDER_KERNEL(prism_render_path_sun_grid##SUFFIX, PRISM_INTEGRATOR_PATH_SUN, K, true, true)               \
    PRISM_TRACE_KERNELS(prism_intersect##SUFFIX, prism_occluded##SUFFIX, TreeClosest<K>, TreeAny<K>,                \
                        TRACE_MIN_BLOCKS)

// Blocks an SM the batch kernels of flat scenes holding a heightfield are
// compiled to fit. Unbounded (PRISM_TRACE_MIN_BLOCKS, 1) the walk takes 99
// registers, 4 blocks of 128 threads an SM (a quarter of the warps): the walk
// is a chain of dependent steps whose lanes part ways, and with so few warps
// a third of the issue cycles find none ready. 8 blocks (64 registers): on an
// H200, the city's recorded rays, 4M a call, 4,253 Mrays/s primary and 3,287
// bounce-1 against 3,507 and 2,646 unbounded (6 blocks: 4,181 and 3,133),
// every hit the same (-DPRISM_HEIGHTFIELD_TRACE_MIN_BLOCKS=N to measure
// another).
#ifndef PRISM_HEIGHTFIELD_TRACE_MIN_BLOCKS
#define PRISM_HEIGHTFIELD_TRACE_MIN_BLOCKS 8
#endif

// Blocks an SM the two-level batch kernels are compiled to fit: their walk
// keeps more state than one tree's (the world ray beside the object ray, the
// instance, the rest of a top node's step), so a bound that fits the flat
// kernels' registers may spill theirs (-DPRISM_INSTANCE_TRACE_MIN_BLOCKS=N to
// measure another). 7 blocks of 128 threads (72 registers): on an H100,
// bunny-x1000's diffuse rays 626 Mrays/s against 592 with the flat kernels'
// bound (80 registers) and 611 with 8 blocks (64 registers, spills).
#ifndef PRISM_INSTANCE_TRACE_MIN_BLOCKS
#define PRISM_INSTANCE_TRACE_MIN_BLOCKS 7
#endif

// The kernels of two-level scenes, once per kind of the geometries'
// primitives (prism_render_path_instances_spheres, ...): the render kernels
// and the batch kernels over the instances (two_level.cuh). The flat scenes'
// octant copies, uniform grid, light grid and camera masks are built over one
// tree's slots; a two-level scene has none of them.
#define PRISM_INSTANCE_KERNELS(SUFFIX, K)                                                                          \
    PRISM_RENDER_KERNEL(prism_render_path_instances##SUFFIX, 0, (K | PRISM_INSTANCES), false, false)              \
    PRISM_RENDER_KERNEL(prism_render_whitted_instances##SUFFIX, 1, (K | PRISM_INSTANCES), false, false)           \
    PRISM_RENDER_KERNEL(prism_render_ao_instances##SUFFIX, 2, (K | PRISM_INSTANCES), false, false)                \
    PRISM_RENDER_KERNEL(prism_render_path_sun_instances##SUFFIX, PRISM_INTEGRATOR_PATH_SUN, (K | PRISM_INSTANCES),  \
                        false, false)                                                                              \
    PRISM_TRACE_KERNELS(prism_intersect_instances##SUFFIX, prism_occluded_instances##SUFFIX,                       \
                        InstancesClosest<K | PRISM_INSTANCES>, InstancesAny<K | PRISM_INSTANCES>,                  \
                        PRISM_INSTANCE_TRACE_MIN_BLOCKS)

// prism_camera_masks: masks[i] = the camera candidates of tile i of
// PRISM_CAMERA_MASK_TILE pixels (tiles_x a row, tiles_y rows), from `count`
// cones (camera_bounds.cuh); masks[tiles + i] its reflection candidates and
// masks[2 tiles + i] its shadow candidates (for the light of c_params), from
// the `count` bounding spheres that follow the cones and the tiles' half
// angle `tile_angle`. `lists` says which of those two are wanted
// (PRISM_LIST_REFLECTIONS, PRISM_LIST_SHADOWS); the others, and all of them
// when `tile_angle` is at least PRISM_REFLECTION_MAX_ANGLE, are
// PRISM_REFLECTION_WALK and PRISM_SHADOW_WALK (their rays walk the tree).
// Launched before a frame's render kernels.
#ifndef PRISM_CAMERA_MASKS_THREADS
#define PRISM_CAMERA_MASKS_THREADS 128
#endif
#define PRISM_LIST_REFLECTIONS 1u
#define PRISM_LIST_SHADOWS 2u
extern "C" __global__ void __launch_bounds__(PRISM_CAMERA_MASKS_THREADS)
    prism_camera_masks(const float4* __restrict__ cones, u32 count, u64* __restrict__ masks, u32 tiles_x,
                       u32 tiles_y, const Primitive* __restrict__ prims, float tile_angle, u32 lists) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 tiles = tiles_x * tiles_y;
    if (i < tiles) {
        const u32 x0 = (i % tiles_x) * PRISM_CAMERA_MASK_TILE, y0 = (i / tiles_x) * PRISM_CAMERA_MASK_TILE;
        const u64 camera = camera_tile_mask(c_params, cones, count, x0, y0);
        masks[i] = camera;
        const V3 eye = xyz(c_params.camera.origin_lens);
        const V3 dir = camera_tile_direction(c_params, x0, y0, PRISM_CAMERA_MASK_TILE, PRISM_CAMERA_MASK_TILE);
        masks[tiles + i] = (lists & PRISM_LIST_REFLECTIONS) != 0
                               ? reflection_tile_mask(eye, dir, tile_angle, camera, prims, cones + count, count)
                               : PRISM_REFLECTION_WALK;
        masks[2 * tiles + i] = (lists & PRISM_LIST_SHADOWS) != 0
                                   ? shadow_tile_mask(eye, dir, tile_angle, camera, prims, cones + count, count,
                                                      xyz(c_params.light_position))
                                   : PRISM_SHADOW_WALK;
    }
}

// prism_refit_slots: slots [first, first + count) of a mesh geometry
// rewritten from its `vertex_count` vertices (packed xyz) and its triangles
// (three vertex indices each, by primitive id); prism_refit_boxes, launched
// after it: the geometry's boxes bottom-up from its `start_count` start nodes
// (refit.cuh). One thread a slot, one a start node.
#ifndef PRISM_REFIT_THREADS
#define PRISM_REFIT_THREADS 128
#endif
extern "C" __global__ void __launch_bounds__(PRISM_REFIT_THREADS)
    prism_refit_slots(Primitive* __restrict__ prims, u32 first, u32 count, const u32* __restrict__ triangles,
                      u32 triangle_count, const float* __restrict__ positions, u32 vertex_count) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) {
        refit_slot(prims, first + i, triangles, triangle_count, positions, vertex_count);
    }
}

extern "C" __global__ void __launch_bounds__(PRISM_REFIT_THREADS)
    prism_refit_boxes(BvhNode* __restrict__ nodes, const Primitive* __restrict__ prims,
                      const uint2* __restrict__ links, u32* __restrict__ arrivals, const u32* __restrict__ starts,
                      u32 start_count) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < start_count) {
        refit_up(nodes, prims, links, arrivals, __ldg(starts + i));
    }
}

// The fast tree's build on the device (fast_build.cuh), launched in this
// order; every kernel's block is PRISM_FAST_THREADS threads.
extern "C" __global__ void __launch_bounds__(PRISM_FAST_THREADS)
    prism_fast_boxes(const u32* __restrict__ triangles, u32 n, const float* __restrict__ positions, u32 vertex_count,
                     float4* __restrict__ boxes, u32* centre_bounds) {
    fast_boxes(triangles, n, positions, vertex_count, boxes, centre_bounds);
}

extern "C" __global__ void __launch_bounds__(PRISM_FAST_THREADS)
    prism_fast_codes(const float4* __restrict__ boxes, u32 n, const u32* __restrict__ centre_bounds,
                     u32* __restrict__ keys, u32* __restrict__ values) {
    fast_codes(boxes, n, centre_bounds, keys, values);
}

extern "C" __global__ void __launch_bounds__(PRISM_FAST_THREADS)
    prism_fast_histogram(const u32* __restrict__ keys, u32 n, u32 shift, u32* __restrict__ hist) {
    fast_histogram(keys, n, shift, hist);
}

extern "C" __global__ void __launch_bounds__(PRISM_FAST_THREADS) prism_fast_scan(u32* __restrict__ words, u32 count) {
    fast_scan(words, count);
}

extern "C" __global__ void __launch_bounds__(PRISM_FAST_THREADS)
    prism_fast_scatter(const u32* __restrict__ keys_in, const u32* __restrict__ values_in, u32* __restrict__ keys_out,
                       u32* __restrict__ values_out, u32 n, u32 shift, const u32* __restrict__ hist) {
    fast_scatter(keys_in, values_in, keys_out, values_out, n, shift, hist);
}

extern "C" __global__ void __launch_bounds__(PRISM_FAST_THREADS)
    prism_fast_tree(const u32* __restrict__ codes, const u32* __restrict__ order, u32 n,
                    const float4* __restrict__ boxes, const u32* __restrict__ triangles,
                    const float* __restrict__ positions, u32 vertex_count, float4* __restrict__ slot_boxes,
                    Primitive* __restrict__ prims, uint2* __restrict__ children, uint2* __restrict__ ranges,
                    u32* __restrict__ links, const u32* __restrict__ live, u32* __restrict__ names) {
    fast_tree(codes, order, n, boxes, triangles, positions, vertex_count, slot_boxes, prims, children, ranges, links,
              live, names);
}

extern "C" __global__ void __launch_bounds__(PRISM_FAST_THREADS)
    prism_fast_bottom_up(u32 n, const uint2* __restrict__ children, const uint2* __restrict__ ranges,
                         const u32* __restrict__ links, const float4* __restrict__ slot_boxes, float4* node_boxes,
                         float* costs, u32* kept, u32* arrivals, u32 max_leaf) {
    fast_bottom_up(n, children, ranges, links, slot_boxes, node_boxes, costs, kept, arrivals, max_leaf);
}

extern "C" __global__ void __launch_bounds__(PRISM_FAST_THREADS)
    prism_fast_emit(u32 n, const uint2* __restrict__ children, const uint2* __restrict__ ranges,
                    const u32* __restrict__ links, const float4* __restrict__ slot_boxes,
                    const float4* __restrict__ node_boxes, const u32* __restrict__ kept, const u32* __restrict__ names,
                    BvhNode* __restrict__ nodes) {
    fast_emit(n, children, ranges, links, slot_boxes, node_boxes, kept, names, nodes);
}

// The clustered tree's build on the device (clustered_build.cuh), after the
// fast build's boxes, codes and sort.
extern "C" __global__ void __launch_bounds__(PRISM_FAST_THREADS)
    prism_ploc_init(const u32* __restrict__ order, u32 n, const float4* __restrict__ boxes,
                    float4* __restrict__ slot_boxes, u32* __restrict__ ids, float4* __restrict__ cluster_boxes,
                    u32* __restrict__ state) {
    ploc_init(order, n, boxes, slot_boxes, ids, cluster_boxes, state);
}

extern "C" __global__ void __launch_bounds__(PRISM_FAST_THREADS)
    prism_ploc_nearest(const float4* __restrict__ boxes, u32* __restrict__ nearest, const u32* state, u32 round) {
    ploc_nearest(boxes, nearest, state, round);
}

extern "C" __global__ void __launch_bounds__(PRISM_FAST_THREADS)
    prism_ploc_count(const u32* __restrict__ nearest, uint2* __restrict__ sums, const u32* state, u32 round) {
    ploc_count(nearest, sums, state, round);
}

extern "C" __global__ void __launch_bounds__(PRISM_FAST_THREADS)
    prism_ploc_merge(const u32* __restrict__ nearest, const u32* __restrict__ ids_in,
                     const float4* __restrict__ boxes_in, u32* __restrict__ ids_out, float4* __restrict__ boxes_out,
                     uint2* __restrict__ children, float4* __restrict__ node_boxes, float* costs, u32* counts,
                     u32* kept, u32* __restrict__ links, u32 n, const uint2* __restrict__ sums, u32* state,
                     u32 round) {
    ploc_merge(nearest, ids_in, boxes_in, ids_out, boxes_out, children, node_boxes, costs, counts, kept, links, n,
               sums, state, round);
}

extern "C" __global__ void __launch_bounds__(PRISM_PLOC_TAIL_THREADS)
    prism_ploc_tail(const u32* __restrict__ ids_in, const float4* __restrict__ boxes_in,
                    uint2* __restrict__ children, float4* __restrict__ node_boxes, float* costs, u32* counts,
                    u32* kept, u32* __restrict__ links, u32 n, u32* state, u32 round) {
    ploc_tail(ids_in, boxes_in, children, node_boxes, costs, counts, kept, links, n, state, round);
}

extern "C" __global__ void __launch_bounds__(PRISM_FAST_THREADS)
    prism_ploc_slots(u32 n, const u32* __restrict__ order, const uint2* __restrict__ children,
                     const u32* __restrict__ counts, const u32* __restrict__ kept, const u32* __restrict__ links,
                     const u32* __restrict__ triangles, const float* __restrict__ positions, u32 vertex_count,
                     Primitive* __restrict__ prims, u32* __restrict__ out_order, u32* state) {
    ploc_slots(n, order, children, counts, kept, links, triangles, positions, vertex_count, prims, out_order, state);
}

extern "C" __global__ void __launch_bounds__(PRISM_FAST_THREADS)
    prism_ploc_emit(u32 n, const uint2* __restrict__ children, const u32* __restrict__ counts,
                    const u32* __restrict__ kept, const u32* __restrict__ links,
                    const float4* __restrict__ slot_boxes, const float4* __restrict__ node_boxes,
                    BvhNode* __restrict__ nodes) {
    ploc_emit(n, children, counts, kept, links, slot_boxes, node_boxes, nodes);
}

// The tree over a two-level scene's instances after moves (top_build.cuh):
// prism_top_place, prism_top_commit, prism_top_boxes, and the fast build's
// codes, sort, tree, bottom-up pass and emit over the instances' boxes.
extern "C" __global__ void __launch_bounds__(PRISM_FAST_THREADS)
    prism_top_place(const GpuMove* __restrict__ moves, u32 count, GpuInstance* __restrict__ placed,
                    float4* __restrict__ placed_world, u32* status) {
    top_place(moves, count, placed, placed_world, status);
}

extern "C" __global__ void __launch_bounds__(PRISM_FAST_THREADS)
    prism_top_commit(const GpuMove* __restrict__ moves, u32 count, const GpuInstance* __restrict__ placed,
                     const float4* __restrict__ placed_world, GpuInstance* __restrict__ records,
                     float4* __restrict__ world, const u32* __restrict__ status) {
    top_commit(moves, count, placed, placed_world, records, world, status);
}

extern "C" __global__ void __launch_bounds__(PRISM_FAST_THREADS)
    prism_top_boxes(const u32* __restrict__ live, u32 n, const float4* __restrict__ world, float4* __restrict__ boxes,
                    u32* centre_bounds, u32* scene_bounds) {
    top_boxes(live, n, world, boxes, centre_bounds, scene_bounds);
}

PRISM_KERNELS(_spheres, PRISM_SPHERES, PRISM_TRACE_MIN_BLOCKS)
PRISM_KERNELS(_triangles, PRISM_TRIANGLES, PRISM_TRACE_MIN_BLOCKS)
PRISM_KERNELS(_mixed, PRISM_MIXED, PRISM_TRACE_MIN_BLOCKS)
PRISM_INSTANCE_KERNELS(_spheres, PRISM_SPHERES)
PRISM_INSTANCE_KERNELS(_triangles, PRISM_TRIANGLES)
PRISM_INSTANCE_KERNELS(_mixed, PRISM_MIXED)
// Scenes holding a heightfield (beside triangles and spheres, or not): the
// only kernels that compile its walk (heightfield.cuh).
PRISM_KERNELS(_heightfields, (PRISM_MIXED | PRISM_HEIGHTFIELDS), PRISM_HEIGHTFIELD_TRACE_MIN_BLOCKS)
PRISM_INSTANCE_KERNELS(_heightfields, (PRISM_MIXED | PRISM_HEIGHTFIELDS))
// The batch kernels of a flat scene of heightfields alone (terrain): the
// walk with no triangle or sphere test beside it, so no ray set-up for them
// (src/kernels.rs, KERNEL_HEIGHTFIELDS_ONLY).
PRISM_TRACE_KERNELS(prism_intersect_heightfields_only, prism_occluded_heightfields_only,
                    TreeClosest<PRISM_HEIGHTFIELDS>, TreeAny<PRISM_HEIGHTFIELDS>, PRISM_HEIGHTFIELD_TRACE_MIN_BLOCKS)
