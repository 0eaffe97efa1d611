// Pixel encoding: mirrors prism_core::image.
#pragma once
#include "prism_types.cuh"

// c^(1/2.4) for c in (0.0031308, 1]. powf costs ~70 instructions (a double-float
// log2 and exp2 with special cases); the hardware log2/exp2 pair costs 4 with a
// relative error near 1e-6, which moves an 8-bit value by one only where
// s * 255 + 0.5 lies within ~3e-4 of an integer (about 0.05% of values). Core's
// libm powf and CUDA's powf already differ in their last bits.
__device__ __forceinline__ float srgb_pow(float c) {
#if PRISM_FAST_SRGB
    return exp2f(__log2f(c) * (1.0f / 2.4f));
#else
    return powf(c, 1.0f / 2.4f);
#endif
}

// mirrors prism_core::image::linear_to_srgb8
__device__ __forceinline__ u32 linear_to_srgb8(float c) {
    c = c > 0.0f ? fminf(c, 1.0f) : 0.0f;
    const float s = c <= 0.0031308f ? 12.92f * c : 1.055f * srgb_pow(c) - 0.055f;
    // Rust's `as u8` saturates; s * 255 + 0.5 lies in [0, 255.5] here.
    return min(__float2uint_rz(s * 255.0f + 0.5f), 255u);
}

// mirrors prism_core::image::encode_srgba8, packed little-endian as [r, g, b, 255].
__device__ __forceinline__ u32 encode_srgba8(V3 c) {
    return linear_to_srgb8(c.x) | (linear_to_srgb8(c.y) << 8) | (linear_to_srgb8(c.z) << 16) | (255u << 24);
}
