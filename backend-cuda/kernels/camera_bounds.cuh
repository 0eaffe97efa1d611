// Camera rays against the few primitives their tile of pixels can meet:
// mirrors prism_core::camera_bounds.
//
// For a pinhole camera and a scene of at most 64 primitives the host uploads,
// each frame, a cone from the eye around every primitive: its unit axis and
// the least cosine between that axis and a tile's direction at which a camera
// ray of the tile may hit it. prism_camera_masks (prism.cu) then tests every
// tile of PRISM_CAMERA_MASK_TILE pixels against the cones, once a frame, into
// SceneView::camera_masks; a camera ray reads its pixel's tile's mask (one
// load, the same address for most of a warp) and tests those primitives
// instead of walking the tree: a sky pixel of whitted19 tests none, a ground
// pixel one sphere.
#pragma once
#include "traverse.cuh"

#ifndef PRISM_CAMERA_MASK_TILE
#define PRISM_CAMERA_MASK_TILE 32
#endif

// mirrors prism_core::camera_bounds::tile_direction with approximate
// divisions and square root (CAMERA_BOUNDS_SLACK covers them): the unit
// direction of the camera ray through the centre of the tile of tw x th
// pixels whose first pixel is (x0, y0).
__device__ __forceinline__ V3 camera_tile_direction(const RenderParams& params, u32 x0, u32 y0, u32 tw, u32 th) {
    const GpuCamera& cam = params.camera;
    const float s = __fdividef((float)x0 + 0.5f * (float)tw, (float)params.width);
    const float t = 1.0f - __fdividef((float)y0 + 0.5f * (float)th, (float)params.height);
    const V3 d = xyz(cam.lower_left) + s * xyz(cam.horizontal) + t * xyz(cam.vertical) - xyz(cam.origin_lens);
    return d * rsqrtf(dot(d, d));
}

// mirrors prism_core::camera_bounds::camera_candidates for the tile of
// PRISM_CAMERA_MASK_TILE pixels whose first pixel is (x0, y0): bit k for each
// of the `count` (at most 64) cones the tile's direction comes within.
__device__ __forceinline__ u64 camera_tile_mask(const RenderParams& params, const float4* __restrict__ cones,
                                                u32 count, u32 x0, u32 y0) {
    const V3 dir = camera_tile_direction(params, x0, y0, PRISM_CAMERA_MASK_TILE, PRISM_CAMERA_MASK_TILE);
    u64 mask = 0;
    for (u32 k = 0; k < count && k < 64u; ++k) {
        const float4 c = __ldg(cones + k);
        if (dot(xyz(c), dir) >= c.w) {
            mask |= 1ull << k;
        }
    }
    return mask;
}

// The camera candidates of pixel (x, y): the mask of its tile (pixels past
// the image's edge read the edge's tiles; they are not rendered).
__device__ __forceinline__ u64 camera_candidates(const SceneView& s, u32 x, u32 y) {
    const u32 tx = min(x / PRISM_CAMERA_MASK_TILE, s.camera_mask_tiles[0] - 1);
    const u32 ty = min(y / PRISM_CAMERA_MASK_TILE, s.camera_mask_tiles[1] - 1);
    return __ldg(s.camera_masks + ty * s.camera_mask_tiles[0] + tx);
}

// mirrors prism_core::camera_bounds::closest_hit_listed: the closest hit among
// the primitives of `candidates`, in slot order (spheres take core's
// sphere_missed_early first, as the grid walk's, with ray_sphere's answers);
// `prim` of the result is the slot, a miss has prim == NO_PRIM and t == +inf.
template <int K>
__device__ __forceinline__ Hit closest_hit_listed(const SceneView& s, const Ray& ray, u64 candidates) {
    const RayPre pre = ray_pre<K>(ray.origin, ray.dir);
    Hit best;
    best.t = ray.tmax;
    best.u = 0.0f;
    best.v = 0.0f;
    best.prim = PRISM_NO_PRIM;
    while (candidates != 0) {
        const u32 slot = (u32)__ffsll((long long)candidates) - 1u;
        candidates &= candidates - 1;
        if (slot >= s.prim_count) {
            continue;
        }
        if (K == PRISM_SPHERES) {
            const float4 a = __ldg(&s.prims[slot].a);
            const float4 b = __ldg(&s.prims[slot].b);
            if (sphere_missed_early(pre.origin, pre.dir, pre.dir_dot, xyz(a), b.x)) {
                continue;
            }
        }
        float t, u, v;
        if (ray_primitive<K>(pre, s.prims + slot, ray.tmin, best.t, t, u, v)) {
            best.t = t;
            best.u = u;
            best.v = v;
            best.prim = slot;
        }
    }
    if (best.prim == PRISM_NO_PRIM) {
        best.t = PRISM_INF;
    }
    return best;
}
