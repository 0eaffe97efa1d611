// Pixel encoding: mirrors prism_core::image.
#pragma once
#include "prism_types.cuh"

// mirrors prism_core::image::linear_to_srgb8
__device__ __forceinline__ u32 linear_to_srgb8(float c) {
    c = c > 0.0f ? fminf(c, 1.0f) : 0.0f;
    const float s = c <= 0.0031308f ? 12.92f * c : 1.055f * powf(c, 1.0f / 2.4f) - 0.055f;
    // Rust's `as u8` saturates; s * 255 + 0.5 lies in [0, 255.5] here.
    return min(__float2uint_rz(s * 255.0f + 0.5f), 255u);
}

// mirrors prism_core::image::encode_srgba8, packed little-endian as [r, g, b, 255].
__device__ __forceinline__ u32 encode_srgba8(V3 c) {
    return linear_to_srgb8(c.x) | (linear_to_srgb8(c.y) << 8) | (linear_to_srgb8(c.z) << 16) | (255u << 24);
}
