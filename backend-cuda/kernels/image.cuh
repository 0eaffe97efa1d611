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

// 1 (default): encode through core's table (prism_core::image::Srgb8Table, uploaded
// once per context): exactly core's bytes for every float. 0: evaluate the curve
// (PRISM_FAST_SRGB picks the power function), which may round a level differently.
#ifndef PRISM_SRGB_TABLE
#define PRISM_SRGB_TABLE 1
#endif

// mirrors prism_core::image::linear_to_srgb8
//
// As core's Srgb8Table::encode computes it; `table` holds its
// PRISM_SRGB8_TABLE_SLOTS + 1 slots (step bits, base).
__device__ __forceinline__ u32 linear_to_srgb8(const uint2* __restrict__ table, float c) {
    c = c > 0.0f ? fminf(c, 1.0f) : 0.0f;
#if PRISM_SRGB_TABLE
    // c * 4096 is exact (a power of two), so truncation gives the slot: 0..=4096.
    const uint2 slot = __ldg(table + __float2uint_rz(c * (float)PRISM_SRGB8_TABLE_SLOTS));
    return slot.y + (c >= __uint_as_float(slot.x) ? 1u : 0u);
#else
    (void)table;
    const float s = c <= 0.0031308f ? 12.92f * c : 1.055f * srgb_pow(c) - 0.055f;
    // Rust's `as u8` saturates; s * 255 + 0.5 lies in [0, 255.5] here.
    return min(__float2uint_rz(s * 255.0f + 0.5f), 255u);
#endif
}

// mirrors prism_core::image::encode_srgba8, packed little-endian as [r, g, b, 255].
__device__ __forceinline__ u32 encode_srgba8(const uint2* __restrict__ table, V3 c) {
    return linear_to_srgb8(table, c.x) | (linear_to_srgb8(table, c.y) << 8) | (linear_to_srgb8(table, c.z) << 16) |
           (255u << 24);
}
