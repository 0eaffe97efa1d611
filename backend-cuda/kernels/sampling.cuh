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

// mirrors prism_core::sampling::orthonormal_basis (Duff et al. 2017; the sign
// from n.z's bits, as Rust's copysign)
__device__ __forceinline__ void orthonormal_basis(V3 n, V3& t, V3& b) {
    const float sign = copysignf(1.0f, n.z);
    const float a = -1.0f / (sign + n.z);
    const float bb = n.x * n.y * a;
    t = v3(1.0f + sign * n.x * n.x * a, sign * bb, -sign * n.x);
    b = v3(bb, sign + n.y * n.y * a, -n.y);
}

// mirrors prism_core::sampling::cone_one_minus_cos
__device__ __forceinline__ float cone_one_minus_cos(float sin2) {
    return sin2 / (1.0f + sqrtf(fmaxf(1.0f - sin2, 0.0f)));
}

// mirrors prism_core::sampling::uniform_cone
__device__ __forceinline__ V3 uniform_cone(V3 axis, float one_minus_cos, float u1, float u2) {
    const float z = u1 * one_minus_cos;
    const float cos_theta = 1.0f - z;
    const float sin_theta = sqrtf(fmaxf(z * (2.0f - z), 0.0f));
    const float phi = polar_angle(u2);
    float s, c;
    sincosf(phi, &s, &c);
    V3 t, b;
    orthonormal_basis(axis, t, b);
    return t * (sin_theta * c) + b * (sin_theta * s) + axis * cos_theta;
}
