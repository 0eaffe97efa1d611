// Pixel encoding: mirrors prism_core::image.
#pragma once
#include "prism_types.cuh"

// mirrors prism_core::image::linear_to_srgb8
//
// As core's Srgb8Table::encode computes it, through that table (uploaded once
// per context; `table` holds its PRISM_SRGB8_TABLE_SLOTS + 1 slots of step bits
// and base level): exactly core's byte for every float, where CUDA's powf (about
// 70 instructions) or the hardware log2/exp2 would round some levels differently.
__device__ __forceinline__ u32 linear_to_srgb8(const uint2* __restrict__ table, float c) {
    c = c > 0.0f ? fminf(c, 1.0f) : 0.0f;
    // c * 4096 is exact (a power of two), so truncation gives the slot: 0..=4096.
    const uint2 slot = __ldg(table + __float2uint_rz(c * (float)PRISM_SRGB8_TABLE_SLOTS));
    return slot.y + (c >= __uint_as_float(slot.x) ? 1u : 0u);
}

// mirrors prism_core::image::encode_srgba8, packed little-endian as [r, g, b, 255].
__device__ __forceinline__ u32 encode_srgba8(const uint2* __restrict__ table, V3 c) {
    return linear_to_srgb8(table, c.x) | (linear_to_srgb8(table, c.y) << 8) | (linear_to_srgb8(table, c.z) << 16) |
           (255u << 24);
}
