// Materials: mirrors prism_core::material (core is branchless; see scatter).
#pragma once
#include "prism_types.cuh"
#include "rng.cuh"
#include "sampling.cuh"

// mirrors prism_core::material::Scatter
struct Scatter {
    V3 dir;
    V3 attenuation;
    bool diffuse;
};

// mirrors prism_core::material::reflect
__device__ __forceinline__ V3 reflect(V3 d, V3 n) { return d - (2.0f * dot(d, n)) * n; }

// mirrors prism_core::material::schlick
__device__ __forceinline__ float schlick(float cosine, float eta) {
    float r0 = (1.0f - eta) / (1.0f + eta);
    r0 = r0 * r0;
    const float m = 1.0f - cosine;
    return r0 + (1.0f - r0) * (m * m * m * m * m);
}

// The metal lobe of scatter: the mirror direction perturbed inside a ball of
// radius `fuzz`; `keep` is 0 when the sample ends up below the surface (absorbed).
__device__ __forceinline__ V3 metal_dir(V3 dir, V3 n, float fuzz, float u3, float u4, float u5, float& keep) {
    const V3 mirror = reflect(dir, n);
    const V3 fuzzed = mirror + fuzz * unit_ball(u3, u4, u5);
    const float fuzzed_len2 = length_squared(fuzzed);
    const V3 d = fuzzed_len2 > 1e-12f ? fuzzed * (1.0f / sqrtf(fuzzed_len2)) : mirror;
    keep = dot(d, n) > 0.0f ? 1.0f : 0.0f;
    return d;
}

// The dielectric lobe of scatter: refract, or reflect by Schlick's probability
// or total internal reflection.
__device__ __forceinline__ V3 dielectric_dir(V3 dir, V3 n, bool front, float ior, float u_fresnel) {
    const V3 mirror = reflect(dir, n);
    const float eta = front ? 1.0f / ior : ior;
    const float cos_i = fminf(-dot(dir, n), 1.0f);
    const float sin2_t = eta * eta * (1.0f - cos_i * cos_i);
    const V3 r_perp = eta * (dir + cos_i * n);
    const V3 r_par = (-sqrtf(fabsf(1.0f - length_squared(r_perp)))) * n;
    V3 refracted = r_perp + r_par;
    const float refracted_len2 = length_squared(refracted);
    refracted = refracted_len2 > 1e-12f ? refracted * (1.0f / sqrtf(refracted_len2)) : mirror;
    const bool reflects = sin2_t > 1.0f || schlick(cos_i, eta) > u_fresnel;
    return reflects ? mirror : refracted;
}

// mirrors prism_core::material::scatter
//
// Always consumes seven random numbers: lobe choice, Lambert (2), metal fuzz (3),
// Fresnel choice. Core evaluates every lobe and selects one (branchless, for its
// SIMD lanes); with PRISM_LOBE_BRANCHES a lane evaluates only the lobe it picks,
// which gives the same values (each lobe's expressions are unchanged).
__device__ __forceinline__ Scatter scatter(const GpuMaterial& m, V3 dir, V3 normal, Pcg& rng) {
    const float u_lobe = next_f32(rng);
    const float u1 = next_f32(rng);
    const float u2 = next_f32(rng);
    const float u3 = next_f32(rng);
    const float u4 = next_f32(rng);
    const float u5 = next_f32(rng);
    const float u_fresnel = next_f32(rng);

    const V3 albedo = xyz(m.albedo_fuzz);
    const float fuzz = m.albedo_fuzz.w;
    const float ior = m.emission_ior.w;
    const bool front = dot(dir, normal) < 0.0f;
    const V3 n = front ? normal : -normal;

    // One random number against the cumulative lobe weights: the last lobe whose
    // threshold u_lobe reaches wins (past the dielectric one, the path is absorbed
    // but keeps the dielectric direction).
    const float c_lambert = m.lobe_weights.x;
    const float c_metal = c_lambert + m.lobe_weights.y;
    const float c_dielectric = c_metal + m.lobe_weights.z;
    const bool pick_metal = u_lobe >= c_lambert;
    const bool pick_dielectric = u_lobe >= c_metal;
    const bool absorbed = u_lobe >= c_dielectric;

#if PRISM_LOBE_BRANCHES
    // Only the picked lobe is evaluated, with core's expressions: the same
    // direction and attenuation as the branchless form below.
    V3 out_dir;
    V3 attenuation;
    if (pick_dielectric) {
        out_dir = dielectric_dir(dir, n, front, ior, u_fresnel);
        attenuation = v3s(1.0f);
    } else if (pick_metal) {
        float keep;
        out_dir = metal_dir(dir, n, fuzz, u3, u4, u5, keep);
        attenuation = albedo * keep;
    } else {
        out_dir = cosine_hemisphere(n, u1, u2);
        attenuation = albedo;
    }
    if (absorbed) {
        attenuation = v3s(0.0f);
    }
#else
    // Every lobe is evaluated; selects pick one.
    const V3 d_lambert = cosine_hemisphere(n, u1, u2);
    float metal_keep;
    const V3 d_metal = metal_dir(dir, n, fuzz, u3, u4, u5, metal_keep);
    const V3 d_dielectric = dielectric_dir(dir, n, front, ior, u_fresnel);
    V3 out_dir = d_lambert;
    V3 attenuation = albedo;
    if (pick_metal) {
        out_dir = d_metal;
        attenuation = albedo * metal_keep;
    }
    if (pick_dielectric) {
        out_dir = d_dielectric;
        attenuation = v3s(1.0f);
    }
    if (absorbed) {
        attenuation = v3s(0.0f);
    }
#endif
    return Scatter{out_dir, attenuation, !pick_metal};
}
