// PCG random numbers: mirrors prism_core::rng. All arithmetic on u32 (wrapping).
#pragma once
#include "prism_types.cuh"

// mirrors prism_core::rng::pcg_hash
__device__ __forceinline__ u32 pcg_hash(u32 input) {
    const u32 state = input * 747796405u + 2891336453u;
    const u32 word = ((state >> ((state >> 28) + 4u)) ^ state) * 277803737u;
    return (word >> 22) ^ word;
}

// mirrors prism_core::rng::path_seed
__device__ __forceinline__ u32 path_seed(u32 pixel, u32 sample, u32 frame_seed) {
    return pcg_hash(pixel ^ pcg_hash(sample ^ pcg_hash(frame_seed)));
}

// mirrors prism_core::rng::Pcg
struct Pcg {
    u32 state;
};

// mirrors prism_core::rng::Pcg::for_path
__device__ __forceinline__ Pcg pcg_for_path(u32 pixel, u32 sample, u32 frame_seed) {
    return Pcg{path_seed(pixel, sample, frame_seed)};
}

// mirrors prism_core::rng::Pcg::next_u32
__device__ __forceinline__ u32 next_u32(Pcg& rng) {
    rng.state = rng.state * 747796405u + 2891336453u;
    const u32 s = rng.state;
    const u32 word = ((s >> ((s >> 28) + 4u)) ^ s) * 277803737u;
    return (word >> 22) ^ word;
}

// mirrors prism_core::rng::Pcg::next_f32: top 24 bits times 2^-24 (exact).
__device__ __forceinline__ float next_f32(Pcg& rng) {
    return (float)(next_u32(rng) >> 8) * (1.0f / 16777216.0f);
}
