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

// The index of pixel (x, y)'s tile among the frame's tiles (pixels past the
// image's edge take the edge's tiles; they are not rendered): computed once a
// pixel, for the masks of each of its bounces.
__device__ __forceinline__ u32 camera_mask_tile(const SceneView& s, u32 x, u32 y) {
    const u32 tx = min(x / PRISM_CAMERA_MASK_TILE, s.camera_mask_tiles[0] - 1);
    const u32 ty = min(y / PRISM_CAMERA_MASK_TILE, s.camera_mask_tiles[1] - 1);
    return ty * s.camera_mask_tiles[0] + tx;
}

// mirrors prism_core::camera_bounds::REFLECTION_WALK
#define PRISM_REFLECTION_WALK 0xffffffffffffffffull

// The masks prism_camera_masks stores for each tile, one after the other:
// every tile's camera candidates, then every tile's reflection candidates
// (possibly PRISM_REFLECTION_WALK), then every tile's shadow candidates
// (possibly PRISM_SHADOW_WALK).
#define PRISM_MASK_CAMERA 0u
#define PRISM_MASK_REFLECTION 1u
#define PRISM_MASK_SHADOW 2u

// Mask `which` (PRISM_MASK_*) of tile `tile` (camera_mask_tile).
__device__ __forceinline__ u64 tile_candidates(const SceneView& s, u32 tile, u32 which) {
    return __ldg(s.camera_masks + which * (s.camera_mask_tiles[0] * s.camera_mask_tiles[1]) + tile);
}

// mirrors prism_core::camera_bounds::REFLECTION_BOUNDS_MARGIN and
// REFLECTION_MAX_ANGLE, the margins and the widest cone of the bounce masks.
#define PRISM_REFLECTION_MARGIN 1e-4f
#define PRISM_REFLECTION_MAX_ANGLE 1.0f

// mirrors prism_core::camera_bounds::cone_hits_sphere in f32: where the rays
// from `eye` in the cone of unit axis `dir` and half angle `tile_angle` first
// meet the sphere of `centre` and `radius`: PRISM_CONE_MISSED (none does),
// PRISM_CONE_UNBOUNDED (the eye inside or on it, or not finite), or
// PRISM_CONE_WITHIN with every hit within `delta` of `at`.
#define PRISM_CONE_MISSED 0
#define PRISM_CONE_WITHIN 1
#define PRISM_CONE_UNBOUNDED 2
__device__ __forceinline__ int cone_hits_sphere(V3 eye, V3 dir, float tile_angle, V3 centre, float radius, V3& at,
                                                float& delta) {
    const float margin = PRISM_REFLECTION_MARGIN;
    const float pi = 3.14159265358979f;
    const V3 to = centre - eye;
    const float dist = length(to);
    if (!(dist > radius * (1.0f + margin) && isfinite(dist))) {
        return PRISM_CONE_UNBOUNDED;
    }
    const float alpha = acosf(fminf(fmaxf(dot(to, dir) / dist, -1.0f), 1.0f));
    const float b_hi = dist * cosf(fmaxf(alpha - tile_angle, 0.0f));
    const float b_lo = dist * cosf(fminf(alpha + tile_angle, pi));
    const float c = (dist - radius) * (dist + radius);
    const float tangent = sqrtf(c);
    if (b_hi < tangent * (1.0f - margin)) {
        return PRISM_CONE_MISSED;
    }
    const float bh = fmaxf(b_hi, tangent);
    const float t_min = c / (bh + sqrtf(fmaxf(bh * bh - c, 0.0f)));
    const float t_max = b_lo > tangent ? c / (b_lo + sqrtf(fmaxf(b_lo * b_lo - c, 0.0f))) : tangent;
    const float t_mid = 0.5f * (t_min + t_max);
    at = eye + t_mid * dir;
    const float scale = max_element(vabs(eye)) + t_max + dist + radius;
    delta = 0.5f * (t_max - t_min) + t_max * tile_angle + margin * scale;
    return PRISM_CONE_WITHIN;
}

// mirrors prism_core::camera_bounds::camera_hit_balls: calls
// each(at, delta, centre, radius) for every sphere among the camera
// candidates `camera_mask` that the tile's cone (from `eye`, unit axis `dir`,
// half angle `tile_angle`) meets, every hit on it within `delta` of `at`
// (cone_hits_sphere); false when the tile's bounce rays walk the tree instead
// (more than 64 primitives, a cone of PRISM_REFLECTION_MAX_ANGLE or more, a
// triangle among the candidates, an eye inside or on a sphere) or when `each`
// returns false.
template <typename Each>
__device__ __forceinline__ bool each_camera_hit_ball(V3 eye, V3 dir, float tile_angle, u64 camera_mask,
                                                     const Primitive* __restrict__ prims,
                                                     const float4* __restrict__ balls, u32 count, Each each) {
    if (count > 64u || !(tile_angle < PRISM_REFLECTION_MAX_ANGLE)) {
        return false;
    }
    u64 left = camera_mask;
    while (left != 0) {
        const u32 slot = (u32)__ffsll((long long)left) - 1u;
        left &= left - 1;
        if (slot >= count) {
            continue;
        }
        if (__float_as_uint(__ldg(&prims[slot].b).w) != PRISM_KIND_SPHERE) {
            return false;
        }
        const float4 sphere = __ldg(balls + slot);
        V3 at;
        float delta;
        const int hits = cone_hits_sphere(eye, dir, tile_angle, xyz(sphere), sphere.w, at, delta);
        if (hits == PRISM_CONE_UNBOUNDED || (hits == PRISM_CONE_WITHIN && !each(at, delta, xyz(sphere), sphere.w))) {
            return false;
        }
    }
    return true;
}

// mirrors prism_core::camera_bounds::reflection_candidates in f32 (its
// margins, 1e-4 of each length and angle, cover f32's rounding a hundred
// times): the slots a mirror ray off a camera hit of the tile of unit
// direction `dir` and half angle `tile_angle` may hit, from the tile's camera
// candidates `camera_mask`, the scene's primitives and their bounding spheres
// `balls` (centre, radius; `count` of them).
__device__ __forceinline__ u64 reflection_tile_mask(V3 eye, V3 dir, float tile_angle, u64 camera_mask,
                                                    const Primitive* __restrict__ prims,
                                                    const float4* __restrict__ balls, u32 count) {
    const float margin = PRISM_REFLECTION_MARGIN;
    const float pi = 3.14159265358979f;
    u64 mask = 0;
    const bool bounded = each_camera_hit_ball(
        eye, dir, tile_angle, camera_mask, prims, balls, count, [&](V3 at, float delta, V3 centre, float radius) {
            const V3 out = at - centre;
            const float out_len = length(out);
            if (!(delta < 0.5f * radius && out_len > 0.0f)) {
                return false;
            }
            const float psi = asinf(fminf(delta / (radius - delta), 1.0f));
            const V3 normal = out * (1.0f / out_len);
            const V3 mirror = dir - 2.0f * dot(dir, normal) * normal;
            const float phi = tile_angle + 2.0f * psi + margin;
            if (!(phi < PRISM_REFLECTION_MAX_ANGLE)) {
                return false;
            }
            for (u32 k = 0; k < count; ++k) {
                const float4 q = __ldg(balls + k);
                const V3 w = xyz(q) - at;
                const float len = length(w);
                const float reach = q.w + delta + margin * (q.w + len);
                bool seen = len <= reach;
                if (!seen) {
                    const float angle = phi + asinf(fminf(reach / len, 1.0f));
                    seen = angle >= pi || dot(w, mirror) >= len * cosf(angle);
                }
                if (seen) {
                    mask |= 1ull << k;
                }
            }
            return true;
        });
    return bounded ? mask : PRISM_REFLECTION_WALK;
}

// mirrors prism_core::camera_bounds::SHADOW_WALK and SHADOW_MAX_CANDIDATES
#define PRISM_SHADOW_WALK 0xffffffffffffffffull
#ifndef PRISM_SHADOW_MAX_CANDIDATES
#define PRISM_SHADOW_MAX_CANDIDATES 4
#endif

// mirrors prism_core::camera_bounds::shadow_candidates in f32 (as
// reflection_tile_mask): the slots that may block a shadow ray towards the
// light at `light` from a camera hit of the tile of unit direction `dir` and
// half angle `tile_angle`, from the tile's camera candidates `camera_mask`,
// the scene's primitives and their bounding spheres `balls` (`count` of
// them), or PRISM_SHADOW_WALK.
__device__ __forceinline__ u64 shadow_tile_mask(V3 eye, V3 dir, float tile_angle, u64 camera_mask,
                                                const Primitive* __restrict__ prims,
                                                const float4* __restrict__ balls, u32 count, V3 light) {
    if (!(isfinite(light.x) && isfinite(light.y) && isfinite(light.z))) {
        return PRISM_SHADOW_WALK;
    }
    const float margin = PRISM_REFLECTION_MARGIN;
    u64 mask = 0;
    const bool bounded = each_camera_hit_ball(
        eye, dir, tile_angle, camera_mask, prims, balls, count, [&](V3 at, float delta, V3, float) {
            const V3 segment = light - at;
            const float seg_len = length(segment);
            for (u32 k = 0; k < count; ++k) {
                const float4 q = __ldg(balls + k);
                const V3 w = xyz(q) - at;
                // The point of the segment closest to the ball's centre.
                const float t =
                    seg_len > 0.0f ? fminf(fmaxf(dot(w, segment) / (seg_len * seg_len), 0.0f), 1.0f) : 0.0f;
                const float gap = length(w - t * segment);
                const float reach = q.w + delta + margin * (q.w + length(w) + seg_len);
                if (gap <= reach) {
                    mask |= 1ull << k;
                }
            }
            return true;
        });
    return bounded && __popcll((long long)mask) <= PRISM_SHADOW_MAX_CANDIDATES ? mask : PRISM_SHADOW_WALK;
}

// The set bits of a candidate mask in ascending order, a 32-bit word at a
// time: a word's lowest bit is two instructions and clearing it two, where a
// 64-bit mask takes some twelve (the same kernel time, and fewer spilled
// registers in the Whitted kernel).
struct MaskBits {
    u32 word;
    u32 high;
    u32 base;
};

__device__ __forceinline__ MaskBits mask_bits(u64 mask) {
    return MaskBits{(u32)mask, (u32)(mask >> 32), 0u};
}

// The next set bit of `bits` into `slot`, and clears it; false when none is left.
__device__ __forceinline__ bool next_mask_bit(MaskBits& bits, u32& slot) {
    if (bits.word == 0) {
        if (bits.high == 0) {
            return false;
        }
        bits.word = bits.high;
        bits.high = 0;
        bits.base = 32;
    }
    slot = bits.base + (u32)__ffs(bits.word) - 1u;
    bits.word &= bits.word - 1;
    return true;
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
    MaskBits bits = mask_bits(candidates);
    u32 slot;
    while (next_mask_bit(bits, slot)) {
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
        if (ray_primitive<K>(s, pre, s.prims + slot, ray.tmin, best.t, t, u, v)) {
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

// mirrors prism_core::camera_bounds::occluded_listed: whether anything among
// the primitives of `candidates` lies on `ray`, in slot order.
template <int K>
__device__ __forceinline__ bool occluded_listed(const SceneView& s, const Ray& ray, u64 candidates) {
    const RayPre pre = ray_pre<K>(ray.origin, ray.dir);
    MaskBits bits = mask_bits(candidates);
    u32 slot;
    while (next_mask_bit(bits, slot)) {
        if (slot >= s.prim_count) {
            continue;
        }
        float t, u, v;
        if (ray_primitive<K>(s, pre, s.prims + slot, ray.tmin, ray.tmax, t, u, v)) {
            return true;
        }
    }
    return false;
}
