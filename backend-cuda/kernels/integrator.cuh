// The integrators: mirrors prism_core::integrator.
#pragma once
#include "prism_types.cuh"
#include "traverse.cuh"
#include "point_grid.cuh"
#include "cell_grid.cuh"
#include "camera_bounds.cuh"
#include "two_level.cuh"
#include "rng.cuh"
#include "sampling.cuh"
#include "material.cuh"
#include "camera.cuh"

// Every ray the integrators trace has tmin >= 0 (camera rays 0, the others
// spawn_tmin > 0), so their traversals use the slab test without the sign test
// of negative exits (see ray_aabb). -DPRISM_RENDER_TMIN_NONNEG=0 restores it,
// to measure what it saves.
#ifndef PRISM_RENDER_TMIN_NONNEG
#define PRISM_RENDER_TMIN_NONNEG 1
#endif
#define PRISM_RENDER_NN (PRISM_RENDER_TMIN_NONNEG != 0)

// Whether anything lies on a render ray (any-hit rays: AO, and shadows
// without candidates): by walking the tree, or the instances of a two-level
// scene (K with PRISM_INSTANCES; render rays see every instance).
template <int K, bool OCT>
__device__ __forceinline__ bool render_any_hit(const SceneView& s, const Ray& ray) {
    if constexpr ((K & PRISM_INSTANCES) != 0) {
        return any_hit_instances<K, PRISM_RENDER_NN>(s, ray, PRISM_RAY_ALL);
    } else {
        return any_hit<K, PRISM_RENDER_NN, OCT>(s, ray);
    }
}

// mirrors prism_core::integrator::Tracer::light_blocked (as prism-cpu answers
// it): whether the shadow ray `ray` (towards the light, which it reaches at
// tmax) is blocked, from `shadow_list` (the shadow candidates of the tile of
// the camera hit the ray leaves) unless it is PRISM_SHADOW_WALK, else from the
// candidates of its cell around the light when the host uploaded them, else
// by walking the tree. The same answer every way. A two-level scene has
// neither list (the host builds them over one flat tree's slots), so its
// shadow rays walk the instances.
template <int K, bool OCT>
__device__ __forceinline__ bool light_blocked(const SceneView& s, const Ray& ray, u64 shadow_list) {
    if constexpr ((K & PRISM_INSTANCES) != 0) {
        (void)shadow_list;
        return render_any_hit<K, OCT>(s, ray);
    } else {
        if (shadow_list != PRISM_SHADOW_WALK) {
            return occluded_listed<K>(s, ray, shadow_list);
        }
        const int listed =
            s.light_grid == nullptr ? -1 : any_hit_listed<K>(s, s.light_grid, s.light_reach_squared, ray);
        return listed < 0 ? any_hit<K, PRISM_RENDER_NN, OCT>(s, ray) : listed != 0;
    }
}

// The closest hit of a render ray: through the scene's uniform grid when GRID
// (the *_grid kernels, launched when the host uploaded one), else by walking
// the tree (or a two-level scene's instances). The same hits either way,
// except where two primitives tie at exactly the same t.
template <int K, bool OCT, bool GRID>
__device__ __forceinline__ Hit render_closest_hit(const SceneView& s, const Ray& ray) {
    if constexpr ((K & PRISM_INSTANCES) != 0) {
        return closest_hit_instances<K, PRISM_RENDER_NN>(s, ray, PRISM_RAY_ALL);
    } else {
        return GRID ? closest_hit_grid<K>(s, ray) : closest_hit<K, PRISM_RENDER_NN, OCT>(s, ray);
    }
}

// The closest hit of a Whitted or AO ray after `bounce` mirror bounces, of a
// pixel of mask tile `tile` (camera_mask_tile): a camera ray (bounce 0) from
// the camera candidates of the tile, and the first mirror ray (bounce 1) from
// its reflection candidates unless they are PRISM_REFLECTION_WALK, when the
// frame has them (camera_bounds.cuh); else render_closest_hit. The same hits
// either way, except where two primitives tie at exactly the same t. The path kernels'
// camera rays walk the tree (their other bounces dominate, and the branch
// costs rtiow's kernel registers). -DPRISM_CAMERA_LIST=0 only answers a
// camera ray with no candidates without the tree, and walks it otherwise, to
// measure the list (whitted19 2.17 against 2.01 ms on an H100).
#ifndef PRISM_CAMERA_LIST
#define PRISM_CAMERA_LIST 1
#endif
template <int K, bool OCT, bool GRID>
__device__ __forceinline__ Hit render_or_listed_hit(const SceneView& s, const Ray& ray, u32 bounce, u32 tile) {
    // A two-level scene has no camera masks (the host finds them over one
    // flat tree's slots).
    if ((K & PRISM_INSTANCES) == 0 && bounce <= 1 && s.camera_masks != nullptr) {
        const u64 candidates = tile_candidates(s, tile, bounce == 0 ? PRISM_MASK_CAMERA : PRISM_MASK_REFLECTION);
#if PRISM_CAMERA_LIST
        if (bounce == 0 || candidates != PRISM_REFLECTION_WALK) {
            return closest_hit_listed<K>(s, ray, candidates);
        }
#else
        if (bounce == 0 && candidates == 0) {
            Hit miss;
            miss.t = PRISM_INF;
            miss.u = 0.0f;
            miss.v = 0.0f;
            miss.prim = PRISM_NO_PRIM;
            return miss;
        }
#endif
    }
    return render_closest_hit<K, OCT, GRID>(s, ray);
}

// mirrors prism_core::integrator::spawn_tmin
__device__ __forceinline__ float spawn_tmin(V3 p, V3 origin) {
    return 1e-4f * (1.0f + max_element(vmax(vabs(p), vabs(origin))));
}

// mirrors prism_core::integrator::sky_color (a constant sky is its colour;
// the test is on the frame's constants, the same for every lane)
__device__ __forceinline__ V3 sky_color(const RenderParams& params, V3 dir) {
    const V3 horizon = xyz(params.sky_horizon), zenith = xyz(params.sky_zenith);
    if (horizon.x == zenith.x && horizon.y == zenith.y && horizon.z == zenith.z) {
        return horizon;
    }
    const float t = 0.5f * (normalize_or_zero(dir).y + 1.0f);
    return (1.0f - t) * horizon + t * zenith;
}

// surface() on an instance of a two-level scene, whose primitives are of
// kinds KP: core's shading_point with the instance's record.
template <int KP>
__device__ __forceinline__ void surface_on_instance(const SceneView& s, const Ray& ray, const Hit& hit, V3& p,
                                                    V3& n_out, float& size) {
    p = ray_at(ray, hit.t);
    const Primitive* prim = s.prims + hit.prim;
    const float4 a = __ldg(&prim->a);
    const float4 b = __ldg(&prim->b);
    float4 r0, r1, r2;
    instance_rows(s, hit.instance, r0, r1, r2);
    const float scale = __ldg(&s.instances[hit.instance].info).w;
    const V3 q = object_point(r0, r1, r2, p);
    V3 n;
    const bool sphere = KP == PRISM_SPHERES || ((KP & PRISM_MIXED) == PRISM_MIXED && __float_as_uint(b.w) == PRISM_KIND_SPHERE);
    if ((KP & PRISM_HEIGHTFIELDS) != 0 && __float_as_uint(b.w) == PRISM_KIND_HEIGHTFIELD) {
        // The face the walk carried in u (heightfield.cuh); the record's size.
        n = face_normal(__float_as_uint(hit.u));
        size = __ldg(&prim->c).y;
    } else if (sphere) {
        n = (q - xyz(a)) * b.y;
        size = b.z;
    } else {
        const float4 c = __ldg(&prim->c);
        n = cross(xyz(b) - xyz(a), xyz(c) - xyz(a));
        size = max_element(vmax(vmax(vabs(xyz(a)), vabs(xyz(b))), vabs(xyz(c))));
    }
    size *= scale;
    n_out = normalize_or(world_normal(r0, r1, r2, n), v3(0.0f, 1.0f, 0.0f));
}

// mirrors the point, normal and size of prism_core::integrator::shading_point:
// hit point, unit geometric normal (outward for spheres and heightfields, by
// winding for triangles) and primitive_size; `hit.prim` is a slot. On an instance (K with
// PRISM_INSTANCES) the normal is found at the object-space point and carried
// into the world, and the size scaled by the instance's stretch.
template <int K>
__device__ __forceinline__ void surface(const SceneView& s, const Ray& ray, const Hit& hit, V3& p, V3& n_out,
                                        float& size) {
    if constexpr ((K & PRISM_INSTANCES) != 0) {
        surface_on_instance<PRISM_PRIM_KINDS(K)>(s, ray, hit, p, n_out, size);
    } else {
        p = ray_at(ray, hit.t);
        const Primitive* prim = s.prims + hit.prim;
        const float4 a = __ldg(&prim->a);
        const float4 b = __ldg(&prim->b);
        V3 n;
        const bool sphere = K == PRISM_SPHERES || ((K & PRISM_MIXED) == PRISM_MIXED && __float_as_uint(b.w) == PRISM_KIND_SPHERE);
        if ((K & PRISM_HEIGHTFIELDS) != 0 && __float_as_uint(b.w) == PRISM_KIND_HEIGHTFIELD) {
            // The face the walk carried in u (heightfield.cuh): its outward
            // normal; the record's size (prism_core::gpu::Primitive::heightfield).
            n = face_normal(__float_as_uint(hit.u));
            size = __ldg(&prim->c).y;
        } else if (sphere) {
            // The record's 1 / radius and size (prism_core::gpu::Primitive::sphere).
            n = (p - xyz(a)) * b.y;
            size = b.z;
        } else {
            const float4 c = __ldg(&prim->c);
            n = cross(xyz(b) - xyz(a), xyz(c) - xyz(a));
            size = max_element(vmax(vmax(vabs(xyz(a)), vabs(xyz(b))), vabs(xyz(c))));
        }
        n_out = normalize_or(n, v3(0.0f, 1.0f, 0.0f));
    }
}

// mirrors prism_core::integrator::recip_pow2_up
__device__ __forceinline__ float recip_pow2_up(float c) {
    return __int_as_float((254 << 23) - (__float_as_int(c) & 0x7f800000));
}

// mirrors prism_core::integrator::surface_margin (fmaxf: a NaN cosine takes
// 1e-3, as core's max does)
__device__ __forceinline__ float surface_margin(float size, float cos_theta) {
    return 1e-6f * (1.0f + size) * recip_pow2_up(fminf(fmaxf(fabsf(cos_theta), 1e-3f), 1.0f));
}

// The INTEGRATOR of the path kernels compiled with the sun (render_pixel and
// prism.cu): only scenes with a sun run them, so that the path kernels of the
// others carry none of its code (rtiow 3.98 -> 3.78 ms on an H200; the pixels
// are the same bits either way).
#define PRISM_INTEGRATOR_PATH_SUN 3u
#define PRISM_IS_PATH(INTEGRATOR) ((INTEGRATOR) == 0u || (INTEGRATOR) == PRISM_INTEGRATOR_PATH_SUN)

// mirrors prism_core::sun::has_sun; SUN: compiled with the sun's code at all.
template <bool SUN>
__device__ __forceinline__ bool has_sun(const RenderParams& params) {
    return SUN && params.sun_center_radius.w > 0.0f;
}

// mirrors prism_core::sun::sun_next_event
template <bool SUN>
__device__ __forceinline__ bool sun_next_event(const RenderParams& params) {
    return has_sun<SUN>(params) && params.sun_radiance.w != 0.0f;
}

// mirrors prism_core::sun::sun_distance: where the ray meets the sun's sphere
// beyond tmin, or PRISM_INF.
__device__ __forceinline__ float sun_distance(const RenderParams& params, V3 origin, V3 dir, float tmin) {
    const float4 s = params.sun_center_radius;
    float t;
    return ray_sphere(origin, dir, dot_rn(dir, dir), xyz(s), s.w, tmin, PRISM_INF, t) ? t : PRISM_INF;
}

// mirrors prism_core::sun::sample_sun: next-event estimation of the sun for the
// Lambert lobe at p (n on the arrival side); writes 1 - cos of the cone (0 inside
// the sun) and adds its shadow ray to `rays`; returns the light's weight.
template <int K, bool OCT>
__device__ __forceinline__ float sample_sun(const SceneView& s, const RenderParams& params, V3 p, V3 n, float spawn,
                                            float size, float lambert, float u1, float u2, float& one_minus_cos,
                                            u32& rays) {
    const float4 sc = params.sun_center_radius;
    const V3 to_sun = xyz(sc) - p;
    const float d2 = length_squared(to_sun);
    const float r2 = sc.w * sc.w;
    one_minus_cos = 0.0f;
    if (!(r2 < d2)) {
        return 0.0f;
    }
    one_minus_cos = cone_one_minus_cos(r2 / d2);
    const V3 axis = to_sun * (1.0f / sqrtf(d2));
    const V3 l = uniform_cone(axis, one_minus_cos, u1, u2);
    const float cos_l = dot(l, n);
    if (!(lambert * cos_l > 0.0f)) {
        return 0.0f;
    }
    const float tmin = spawn + surface_margin(size, cos_l);
    const float t = sun_distance(params, p, l, tmin);
    if (t == PRISM_INF) {
        return 0.0f;
    }
    rays += 1;
    if (render_any_hit<K, OCT>(s, ray_segment(p, l, tmin, t))) {
        return 0.0f;
    }
    const float rho = 2.0f * lambert * cos_l * one_minus_cos;
    return rho / (1.0f + rho * rho);
}

// mirrors prism_core::sun::sun_bsdf_weight
__device__ __forceinline__ float sun_bsdf_weight(bool diffuse, float lambert, float cos_d, float one_minus_cos) {
    if (diffuse && one_minus_cos > 0.0f) {
        const float rho = 2.0f * lambert * cos_d * one_minus_cos;
        const float rho2 = rho * rho;
        return rho2 / (1.0f + rho2);
    }
    return 1.0f;
}

// mirrors the material of prism_core::integrator::shading_point (slot -> material). Core validated
// every material id; the clamp only keeps a corrupted buffer from reading out of bounds.
__device__ __forceinline__ GpuMaterial material_by_id(const SceneView& s, u32 material) {
    const u32 id = min(material, s.material_count - 1u);
    const float4* m = reinterpret_cast<const float4*>(s.materials + id);
    GpuMaterial out;
    out.albedo_fuzz = __ldg(m + 0);
    out.emission_ior = __ldg(m + 1);
    out.lobe_weights = __ldg(m + 2);
    return out;
}

__device__ __forceinline__ GpuMaterial material_of(const SceneView& s, u32 slot) {
    return material_by_id(s, __ldg(s.slot_materials + slot));
}

// mirrors the material of prism_core::integrator::shading_point at a hit: the
// slot's, unless the hit instance (K with PRISM_INSTANCES) has one of its own.
template <int K>
__device__ __forceinline__ GpuMaterial hit_material(const SceneView& s, const Hit& hit) {
    if constexpr ((K & PRISM_INSTANCES) != 0) {
        const u32 own = __float_as_uint(__ldg(&s.instances[hit.instance].info).z);
        return material_by_id(s, own != PRISM_NO_MATERIAL ? own : __ldg(s.slot_materials + hit.prim));
    } else {
        return material_of(s, hit.prim);
    }
}

// trace_path's loop body after its closest hit, at `depth`: adds the ray (and
// the sun's shadow ray) to `rays`, updates the path, and returns true when the
// path ends (the sun, a miss, Russian roulette); otherwise `ray` is the next
// segment. One body for trace_path and the kernels that interleave paths
// (path_shade), so their sun and its weights cannot drift apart.
template <int K, bool OCT, bool SUN>
__device__ __forceinline__ bool path_vertex(const SceneView& s, const RenderParams& params, Ray& ray, const Hit& hit,
                                            Pcg& rng, V3& radiance, V3& throughput, float& sun_weight, u32 depth,
                                            u32& rays) {
    rays += 1;
    if (has_sun<SUN>(params)) {
        const float t_sun = sun_distance(params, ray.origin, ray.dir, ray.tmin);
        if (t_sun < (hit.prim != PRISM_NO_PRIM ? hit.t : PRISM_INF)) {
            radiance += throughput * (xyz(params.sun_radiance) * sun_weight);
            return true;
        }
    }
    if (hit.prim == PRISM_NO_PRIM) {
        radiance += throughput * sky_color(params, ray.dir);
        return true;
    }
    V3 p, n;
    float size;
    surface<K>(s, ray, hit, p, n, size);
    const GpuMaterial m = hit_material<K>(s, hit);
    radiance += throughput * xyz(m.emission_ior);
    const V3 dir = normalize(ray.dir);
    const Scatter sc = scatter(m, dir, n, rng);
    if (sun_next_event<SUN>(params) && depth + 1 < params.max_depth) {
        const float u1 = next_f32(rng);
        const float u2 = next_f32(rng);
        const V3 facing = dot(dir, n) < 0.0f ? n : -n;
        const float lambert = m.lobe_weights.x;
        const float spawn = spawn_tmin(p, ray.origin);
        float one_minus_cos;
        const float w = sample_sun<K, OCT>(s, params, p, facing, spawn, size, lambert, u1, u2, one_minus_cos, rays);
        radiance += throughput * (xyz(m.albedo_fuzz) * (xyz(params.sun_radiance) * w));
        sun_weight = sun_bsdf_weight(sc.diffuse, lambert, dot(sc.dir, facing), one_minus_cos);
    }
    throughput *= sc.attenuation;
    if (depth + 1 >= params.rr_depth) {
        // Russian roulette: survive with the throughput's largest channel.
        const float survive = fminf(max_element(throughput), 1.0f);
        if (next_f32(rng) >= survive) {
            return true;
        }
        throughput *= 1.0f / survive;
    }
    const float tmin = spawn_tmin(p, ray.origin) + surface_margin(size, dot(sc.dir, n));
    ray = ray_segment(p, sc.dir, tmin, PRISM_INF);
    return false;
}

// mirrors prism_core::integrator::trace_path: one path-traced sample; adds the
// rays traced to `rays`.
template <int K, bool OCT, bool GRID = false, bool SUN = false>
__device__ __forceinline__ V3 trace_path(const SceneView& s, const RenderParams& params, Ray ray, Pcg& rng,
                                         u32& rays) {
    V3 radiance = v3s(0.0f);
    V3 throughput = v3s(1.0f);
    float sun_weight = 1.0f;
    for (u32 depth = 0; depth < params.max_depth; ++depth) {
        const Hit hit = render_closest_hit<K, OCT, GRID>(s, ray);
        if (path_vertex<K, OCT, SUN>(s, params, ray, hit, rng, radiance, throughput, sun_weight, depth, rays)) {
            break;
        }
    }
    return radiance;
}

// trace_path's loop body after its closest hit, at `depth` (for the kernels that
// interleave paths, see prism.cu): path_vertex, then the step to the next
// depth; returns true when the path ends (path_vertex's reasons, or max_depth).
template <int K, bool OCT, bool SUN>
__device__ __forceinline__ bool path_shade(const SceneView& s, const RenderParams& params, Ray& ray, const Hit& hit,
                                           Pcg& rng, V3& radiance, V3& throughput, float& sun_weight, u32& depth,
                                           u32& rays) {
    const bool done = path_vertex<K, OCT, SUN>(s, params, ray, hit, rng, radiance, throughput, sun_weight, depth, rays);
    depth += 1;
    return done || depth >= params.max_depth;
}

static_assert(PRISM_PHONG_EXPONENT == 32, "pow32 mirrors prism_core's exponent of 32");

// mirrors prism_core::integrator::pow32: x^32 by five squarings.
__device__ __forceinline__ float pow32(float x) {
    const float x2 = x * x;
    const float x4 = x2 * x2;
    const float x8 = x4 * x4;
    const float x16 = x8 * x8;
    return x16 * x16;
}

// mirrors prism_core::integrator::whitted_local: Phong lighting by the key light
// with a hard shadow.
template <int K, bool OCT>
__device__ __forceinline__ V3 whitted_local(const SceneView& s, const RenderParams& params, V3 p, float spawn,
                                            float size, V3 n, V3 view, V3 albedo, u64 shadow_list) {
    const V3 to_light = xyz(params.light_position) - p;
    const float dist = length(to_light);
    const V3 l = to_light * (1.0f / dist);
    const float tmin = spawn + surface_margin(size, dot(l, n));
    const bool shadowed = light_blocked<K, OCT>(s, ray_segment(p, l, tmin, dist), shadow_list);
    const float n_dot_l = fmaxf(dot(n, l), 0.0f);
    const V3 r = reflect(-l, n);
    // No highlight from a light behind the surface.
    const float spec = n_dot_l > 0.0f ? pow32(fmaxf(dot(r, view), 0.0f)) : 0.0f;
    const V3 lit = PRISM_PHONG_AMBIENT * albedo + PRISM_PHONG_DIFFUSE * n_dot_l * albedo +
                   v3s(PRISM_PHONG_SPECULAR * spec);
    const float keep = shadowed ? PRISM_SHADOW_KEEP : 1.0f;
    return lit * xyz(params.light_color) * keep;
}

// mirrors prism_core::integrator::trace_whitted
template <int K, bool OCT, bool GRID = false>
__device__ __forceinline__ V3 trace_whitted(const SceneView& s, const RenderParams& params, Ray ray, u32& rays,
                                            u32 tile) {
    V3 color = v3s(0.0f);
    float weight = 1.0f;
    for (u32 bounce = 0; bounce <= params.max_depth; ++bounce) {
        const Hit hit = render_or_listed_hit<K, OCT, GRID>(s, ray, bounce, tile);
        rays += 1;
        if (hit.prim == PRISM_NO_PRIM) {
            color += weight * sky_color(params, ray.dir);
            break;
        }
        V3 p, n;
        float size;
        surface<K>(s, ray, hit, p, n, size);
        const V3 d = ray.dir;  // of unit length (see core)
        n = dot(n, d) < 0.0f ? n : -n;
        const V3 albedo = xyz(hit_material<K>(s, hit).albedo_fuzz);
        const float spawn = spawn_tmin(p, ray.origin);
        // The shadow candidates of the pixel's tile answer a camera hit's shadow ray.
        const u64 shadow_list =
            bounce == 0 && s.camera_masks != nullptr ? tile_candidates(s, tile, PRISM_MASK_SHADOW) : PRISM_SHADOW_WALK;
        const V3 local = whitted_local<K, OCT>(s, params, p, spawn, size, n, -d, albedo, shadow_list);
        rays += 1;
        if (bounce == params.max_depth) {
            color += weight * local;
            break;
        }
        color += weight * PRISM_WHITTED_LOCAL * local;
        weight *= 1.0f - PRISM_WHITTED_LOCAL;
        const V3 r = reflect(d, n);
        ray = ray_segment(p, r, spawn + surface_margin(size, dot(r, n)), PRISM_INF);
    }
    return color;
}

// AO rays of pixel (x, y): ao_samples, plus one where the R2 lattice value
// (prism_core::integrator::AO_EXTRA_PATTERN) of the pixel's 16 x 8 block
// (AO_EXTRA_BLOCK_SHIFT: the render tile, so a warp traces one count) is
// below the fractional-count threshold params.ao_extra (0: never).
// mirrors prism_core::integrator::ao_rays_at
__device__ __forceinline__ u32 ao_rays_at(const RenderParams& params, u32 x, u32 y) {
    const u32 pattern = (x >> 4) * 0xC13FA9A9u + (y >> 3) * 0x91E10DA5u;
    return params.ao_samples + (pattern < params.ao_extra ? 1u : 0u);
}

// The shadow ray of an AO pixel to the key light from surface point `p`
// (normal `n` facing the camera ray, `size`, spawn distance `spawn`).
__device__ __forceinline__ Ray ao_shadow_ray(const RenderParams& params, V3 p, V3 n, float size, float spawn) {
    const V3 to_light = xyz(params.light_position) - p;
    const float dist = length(to_light);
    const V3 l = to_light * (1.0f / dist);
    const float tmin = spawn + surface_margin(size, dot(l, n));
    return ray_segment(p, l, tmin, dist);
}

// The factor an AO pixel's colour keeps for its shadow ray to the key light,
// from surface point `p` (normal `n` facing the camera ray, `size`, spawn
// distance `spawn`) of mask tile `tile`: PRISM_SHADOW_KEEP if blocked, else 1
// (and 1 without a shadow ray, params.ao_shadows 0). Adds the ray to `rays`.
// trace_ao's tail, shared with the persistent AO kernels (prism.cu).
template <int K, bool OCT>
__device__ __forceinline__ float ao_shadow_keep(const SceneView& s, const RenderParams& params, V3 p, V3 n, float size,
                                                float spawn, u32 tile, u32& rays) {
    if (params.ao_shadows == 0) {
        return 1.0f;
    }
    const u64 shadow_list =
        s.camera_masks != nullptr ? tile_candidates(s, tile, PRISM_MASK_SHADOW) : PRISM_SHADOW_WALK;
    const bool blocked = light_blocked<K, OCT>(s, ao_shadow_ray(params, p, n, size, spawn), shadow_list);
    rays += 1;
    return blocked ? PRISM_SHADOW_KEEP : 1.0f;
}

// `samples`: the pixel's own AO ray count (ao_rays_at).
// mirrors prism_core::integrator::trace_ao
template <int K, bool OCT, bool GRID = false>
__device__ __forceinline__ V3 trace_ao(const SceneView& s, const RenderParams& params, Ray ray, Pcg& rng,
                                       u32& rays, u32 tile, u32 samples) {
    const Hit hit = render_or_listed_hit<K, OCT, GRID>(s, ray, 0u, tile);
    if (hit.prim == PRISM_NO_PRIM) {
        rays += 1;
        return sky_color(params, ray.dir);
    }
    V3 p, n;
    float size;
    surface<K>(s, ray, hit, p, n, size);
    n = dot(n, ray.dir) < 0.0f ? n : -n;
    const GpuMaterial m = hit_material<K>(s, hit);
    const float spawn = spawn_tmin(p, ray.origin);
    u32 open = 0;
    for (u32 i = 0; i < samples; ++i) {
        const float u1 = next_f32(rng);
        const float u2 = next_f32(rng);
        const V3 d = cosine_hemisphere(n, u1, u2);
        const float tmin = spawn + surface_margin(size, dot(d, n));
        open += render_any_hit<K, OCT>(s, ray_segment(p, d, tmin, params.ao_distance)) ? 0u : 1u;
    }
    rays += 1 + samples;
    const float keep = ao_shadow_keep<K, OCT>(s, params, p, n, size, spawn, tile, rays);
    const float ao = (float)open / (float)samples;
    return xyz(m.albedo_fuzz) * (ao * keep) + xyz(m.emission_ior);
}

// The camera ray through (x + jx, y + jy) of the image, lens sample (l1, l2).
__device__ __forceinline__ Ray camera_ray_at(const RenderParams& params, u32 x, u32 y, float jx, float jy, float l1,
                                             float l2) {
    const float s = ((float)x + jx) / (float)params.width;
    const float t = 1.0f - ((float)y + jy) / (float)params.height;
    Ray ray;
    camera_ray(params.camera, s, t, l1, l2, ray.origin, ray.dir);
    ray.tmin = 0.0f;
    ray.tmax = PRISM_INF;
    return ray;
}

// The camera ray of sample `sample` of pixel (x, y), and the path's generator
// after the four camera numbers (the head of render_pixel's loop body in core).
__device__ __forceinline__ Ray primary_ray(const RenderParams& params, u32 x, u32 y, u32 sample, Pcg& rng) {
    const u32 pixel = y * params.width + x;
    rng = pcg_for_path(pixel, sample, params.seed);
    float jx = next_f32(rng);
    float jy = next_f32(rng);
    const float l1 = next_f32(rng);
    const float l2 = next_f32(rng);
    if (!(params.spp > 1)) {
        jx = 0.5f;
        jy = 0.5f;
    }
    return camera_ray_at(params, x, y, jx, jy, l1, l2);
}

// Whether a Whitted sample's camera ray can be made without its random numbers:
// with one sample the jitter is replaced by the pixel centre, and a pinhole
// reads no lens sample; trace_whitted draws no further numbers.
__device__ __forceinline__ bool camera_numbers_unused(const RenderParams& params) {
    return !(params.spp > 1) && params.camera.origin_lens.w == 0.0f;
}

// mirrors prism_core::integrator::render_pixel: the linear colour of pixel (x, y)
// (of mask tile `tile`, camera_mask_tile) averaged over spp samples; adds the
// rays traced to `rays`. Core's `match params.integrator` is resolved at
// compile time: one kernel per integrator.
template <u32 INTEGRATOR, int K, bool OCT, bool GRID = false>
__device__ __forceinline__ V3 render_pixel(const SceneView& s, const RenderParams& params, u32 x, u32 y, u32 tile,
                                           u32& rays) {
    V3 sum = v3s(0.0f);
    for (u32 sample = 0; sample < params.spp; ++sample) {
        Pcg rng;
        Ray ray;
        if (PRISM_WHITTED_SKIPS_CAMERA_RNG && INTEGRATOR == 1 && camera_numbers_unused(params)) {
            // The same ray as primary_ray's (see camera_numbers_unused).
            ray = camera_ray_at(params, x, y, 0.5f, 0.5f, 0.0f, 0.0f);
        } else {
            ray = primary_ray(params, x, y, sample, rng);
        }
        V3 c;
        if (INTEGRATOR == 1) {
            c = trace_whitted<K, OCT, GRID>(s, params, ray, rays, tile);
        } else if (INTEGRATOR == 2) {
            c = trace_ao<K, OCT, GRID>(s, params, ray, rng, rays, tile, ao_rays_at(params, x, y));
        } else {
            c = trace_path<K, OCT, GRID, INTEGRATOR == PRISM_INTEGRATOR_PATH_SUN>(s, params, ray, rng, rays);
        }
        sum += c;
    }
    // sum * (1 / 1) is sum: one sample needs no division.
    return params.spp == 1 ? sum : sum * (1.0f / (float)params.spp);
}

// The colour of sample `sample` of pixel (x, y), adding the rays traced to
// `rays`: render_pixel's loop body, for the kernels that spread a pixel's
// samples over lanes (prism.cu). render_pixel keeps its own copy: calling this
// from it moved the last bits of rtiow's Whitted pixels in some kernels (NVRTC
// contracted other products into FMAs).
template <u32 INTEGRATOR, int K, bool OCT, bool GRID = false>
__device__ __forceinline__ V3 render_sample(const SceneView& s, const RenderParams& params, u32 x, u32 y, u32 sample,
                                            u32& rays) {
    Pcg rng;
    Ray ray;
    if (PRISM_WHITTED_SKIPS_CAMERA_RNG && INTEGRATOR == 1 && camera_numbers_unused(params)) {
        // The same ray as primary_ray's (see camera_numbers_unused).
        ray = camera_ray_at(params, x, y, 0.5f, 0.5f, 0.0f, 0.0f);
    } else {
        ray = primary_ray(params, x, y, sample, rng);
    }
    V3 c;
    if (INTEGRATOR == 1) {
        c = trace_whitted<K, OCT, GRID>(s, params, ray, rays, camera_mask_tile(s, x, y));
    } else if (INTEGRATOR == 2) {
        c = trace_ao<K, OCT, GRID>(s, params, ray, rng, rays, camera_mask_tile(s, x, y), ao_rays_at(params, x, y));
    } else {
        c = trace_path<K, OCT, GRID, INTEGRATOR == PRISM_INTEGRATOR_PATH_SUN>(s, params, ray, rng, rays);
    }
    return c;
}

// render_pixel's last step: the sum of a pixel's samples (added in sample
// order) to their mean. sum * (1 / 1) is sum: one sample needs no division.
__device__ __forceinline__ V3 pixel_mean(const RenderParams& params, V3 sum) {
    return params.spp == 1 ? sum : sum * (1.0f / (float)params.spp);
}

