// Warping uniform numbers to directions and points: mirrors prism_core::sampling.
#pragma once
#include "prism_types.cuh"

// core::f32::consts::TAU, correctly rounded to f32 as in Rust.
#define PRISM_TAU 6.28318530717958647692f
// core::f32::consts::PI, correctly rounded to f32 (half of PRISM_TAU).
#define PRISM_PI 3.14159265358979323846f

// mirrors prism_core::sampling::polar_angle
__device__ __forceinline__ float polar_angle(float u) {
    const float phi = PRISM_TAU * u;
    return phi > PRISM_PI ? phi - PRISM_TAU : phi;
}

// mirrors prism_core::sampling::unit_sphere
__device__ __forceinline__ V3 unit_sphere(float u1, float u2) {
    const float z = 1.0f - 2.0f * u1;
    const float r = sqrtf(fmaxf(1.0f - z * z, 0.0f));
    const float phi = polar_angle(u2);
    float s, c;
    sincosf(phi, &s, &c);
    return v3(r * c, r * s, z);
}

// mirrors prism_core::sampling::unit_ball
__device__ __forceinline__ V3 unit_ball(float u1, float u2, float u3) {
    return unit_sphere(u1, u2) * cbrtf(u3);
}

// mirrors prism_core::sampling::unit_disk (returns x, y)
__device__ __forceinline__ float2 unit_disk(float u1, float u2) {
    const float r = sqrtf(u1);
    const float phi = polar_angle(u2);
    float s, c;
    sincosf(phi, &s, &c);
    return make_float2(r * c, r * s);
}

// mirrors prism_core::sampling::cosine_hemisphere
__device__ __forceinline__ V3 cosine_hemisphere(V3 n, float u1, float u2) {
    const V3 d = n + unit_sphere(u1, u2);
    const float len2 = length_squared(d);
    return len2 > PRISM_COSINE_HEMISPHERE_MIN_LEN2 ? d * (1.0f / sqrtf(len2)) : n;
}
