// The thin-lens camera: mirrors prism_core::camera.
#pragma once
#include "prism_types.cuh"
#include "sampling.cuh"

// mirrors prism_core::camera::camera_ray (the ray is over (0, +inf)).
__device__ __forceinline__ void camera_ray(const GpuCamera& cam, float s, float t, float l1, float l2,
                                           V3& origin_out, V3& dir_out) {
    const V3 origin = xyz(cam.origin_lens);
    V3 from = origin;
    // A pinhole (lens radius 0) starts every ray at `origin` itself, as core
    // does; the disk sample is only computed for a real lens.
    if (cam.origin_lens.w != 0.0f) {
        const float2 d = unit_disk(l1, l2);
        const float lens_x = d.x * cam.origin_lens.w;
        const float lens_y = d.y * cam.origin_lens.w;
        const V3 offset = xyz(cam.u) * lens_x + xyz(cam.v) * lens_y;
        from = origin + offset;
    }
    const V3 target = xyz(cam.lower_left) + s * xyz(cam.horizontal) + t * xyz(cam.vertical);
    origin_out = from;
    // The fallback is the view direction, -w = v x u.
    dir_out = normalize_or(target - from, cross(xyz(cam.v), xyz(cam.u)));
}
