// The integrators `path`, `whitted` and `ao`, one pixel at a time (the mirror
// of prism_core::integrator). Core passes `params` and the accel as arguments;
// here they are the bindings of entry.wgsl, and core's `accel.intersect_slot`
// and `accel.occluded` are accel_intersect_slot and accel_occluded there (the
// closest hits through render_closest_hit, cell_grid.wgsl, which walks the
// scene's cell grid where the module has one).

// mirrors prism_core::integrator::SHADOW_KEEP
const SHADOW_KEEP: f32 = 0.35;
// mirrors prism_core::integrator::PHONG_AMBIENT
const PHONG_AMBIENT: f32 = 0.1;
// mirrors prism_core::integrator::PHONG_DIFFUSE
const PHONG_DIFFUSE: f32 = 0.7;
// mirrors prism_core::integrator::PHONG_SPECULAR
const PHONG_SPECULAR: f32 = 0.7;
// mirrors prism_core::integrator::PHONG_EXPONENT
const PHONG_EXPONENT: u32 = 32u;
// mirrors prism_core::integrator::WHITTED_LOCAL
const WHITTED_LOCAL: f32 = 0.55;

// A colour and the rays traced for it (core returns the tuple (Vec3, u32)).
struct Traced {
    color: vec3<f32>,
    rays: u32,
}

// What the integrators shade at a closest hit (core returns the tuple
// (Vec3, Vec3, f32, &GpuMaterial)).
struct ShadingPoint {
    p: vec3<f32>,
    // The unit geometric normal.
    n: vec3<f32>,
    size: f32,
    material: GpuMaterial,
}

// mirrors prism_core::integrator::spawn_tmin
fn spawn_tmin(p: vec3<f32>, origin: vec3<f32>) -> f32 {
    return 1e-4 * (1.0 + vec3_max_element(max(abs(p), abs(origin))));
}

// mirrors prism_core::integrator::recip_pow2_up
fn recip_pow2_up(c: f32) -> f32 {
    return bitcast<f32>(0x7f000000u - (bitcast<u32>(c) & 0x7f800000u));
}

// mirrors prism_core::integrator::surface_margin (f32_max: a NaN cosine takes
// 1e-3, as core's max does)
fn surface_margin(size: f32, cos_theta: f32) -> f32 {
    return 1e-6 * (1.0 + size) * recip_pow2_up(min(f32_max(abs(cos_theta), 1e-3), 1.0));
}

// mirrors prism_core::integrator::sky_color (a constant sky is its colour)
fn sky_color(dir: vec3<f32>) -> vec3<f32> {
    let horizon = params.sky_horizon.xyz;
    let zenith = params.sky_zenith.xyz;
    if all(horizon == zenith) {
        return horizon;
    }
    let t = 0.5 * (vec3_normalize_or_zero(dir).y + 1.0);
    return (1.0 - t) * horizon + t * zenith;
}

// mirrors prism_core::integrator::primitive_size
fn primitive_size(prim: Primitive) -> f32 {
    if (SCENE_KINDS & SCENE_HEIGHTFIELDS) != 0u && bitcast<u32>(prim.b.w) == KIND_HEIGHTFIELD {
        // The record's size (prism_core::gpu::Primitive::heightfield).
        return prim.c.y;
    }
    if bitcast<u32>(prim.b.w) == KIND_SPHERE {
        // The record's size (prism_core::gpu::Primitive::sphere).
        return prim.b.z;
    }
    return vec3_max_element(max(max(abs(prim.a.xyz), abs(prim.b.xyz)), abs(prim.c.xyz)));
}

// mirrors prism_core::integrator::geometric_normal (a heightfield's face
// comes in the hit's u, heightfield.wgsl)
fn geometric_normal(prim: Primitive, hit: Hit, p: vec3<f32>) -> vec3<f32> {
    if (SCENE_KINDS & SCENE_HEIGHTFIELDS) != 0u && bitcast<u32>(prim.b.w) == KIND_HEIGHTFIELD {
        return face_normal(bitcast<u32>(hit.u));
    }
    if bitcast<u32>(prim.b.w) == KIND_SPHERE {
        // The record's 1 / radius (prism_core::gpu::Primitive::sphere).
        return (p - prim.a.xyz) * prim.b.y;
    }
    return cross(prim.b.xyz - prim.a.xyz, prim.c.xyz - prim.a.xyz);
}

// mirrors prism_core::integrator::shading_point
//
// For a hit (the callers test hit_is_hit first; a miss is core's None). On
// an instance the normal is found in object space and carried into the world,
// the size scaled by the instance's stretch, and the instance's material, if
// it has one, replaces the primitive's.
fn shading_point(ray: Ray, hit: Hit) -> ShadingPoint {
    let prim = prims[hit.prim];
    var material = slot_materials[hit.prim];
    let p = ray_at(ray, hit.t);
    var size = primitive_size(prim);
    var n: vec3<f32>;
    if TWO_LEVEL == 1u && hit.instance < levels.instance_count {
        let instance = instance_record(hit.instance);
        let override_material = bitcast<u32>(instance.info.z);
        if override_material != NO_MATERIAL {
            material = override_material;
        }
        size *= instance.info.w;
        n = world_normal(instance, geometric_normal(prim, hit, object_point(instance, p)));
    } else {
        n = geometric_normal(prim, hit, p);
    }
    return ShadingPoint(p, vec3_normalize_or(n, vec3<f32>(0.0, 1.0, 0.0)), size, materials[material]);
}

// mirrors prism_core::sun::has_sun
fn has_sun() -> bool {
    return SUN != 0u && params.sun_center_radius.w > 0.0;
}

// mirrors prism_core::sun::sun_next_event
fn sun_next_event() -> bool {
    return has_sun() && params.sun_radiance.w != 0.0;
}

// mirrors prism_core::sun::sun_distance (where the ray meets the sun's sphere
// beyond tmin, or infinity)
fn sun_distance(origin: vec3<f32>, dir: vec3<f32>, tmin: f32) -> f32 {
    let s = params.sun_center_radius;
    let h = ray_sphere(origin, dir, s.xyz, s.w, tmin, f32_infinity());
    return select(f32_infinity(), h.t, h.hit);
}

// What sample_sun returns (core's tuple (f32, f32, u32)).
struct SunSample {
    weight: f32,
    one_minus_cos: f32,
    rays: u32,
}

// mirrors prism_core::sun::sample_sun
fn sample_sun(p: vec3<f32>, n: vec3<f32>, spawn: f32, size: f32, lambert: f32, u1: f32, u2: f32) -> SunSample {
    let sc = params.sun_center_radius;
    let to_sun = sc.xyz - p;
    let d2 = dot(to_sun, to_sun);
    let r2 = sc.w * sc.w;
    if !(r2 < d2) {
        // On or inside the sun's sphere: there is no cone to sample.
        return SunSample(0.0, 0.0, 0u);
    }
    let one_minus_cos = cone_one_minus_cos(r2 / d2);
    let axis = to_sun * (1.0 / sqrt(d2));
    let l = uniform_cone(axis, one_minus_cos, u1, u2);
    let cos_l = dot(l, n);
    if !(lambert * cos_l > 0.0) {
        return SunSample(0.0, one_minus_cos, 0u);
    }
    let tmin = spawn + surface_margin(size, cos_l);
    let t = sun_distance(p, l, tmin);
    if t == f32_infinity() {
        return SunSample(0.0, one_minus_cos, 0u);
    }
    if accel_occluded(ray_segment(p, l, tmin, t)) {
        return SunSample(0.0, one_minus_cos, 1u);
    }
    let rho = 2.0 * lambert * cos_l * one_minus_cos;
    return SunSample(rho / (1.0 + rho * rho), one_minus_cos, 1u);
}

// mirrors prism_core::sun::sun_bsdf_weight
fn sun_bsdf_weight(diffuse: bool, lambert: f32, cos_d: f32, one_minus_cos: f32) -> f32 {
    if diffuse && one_minus_cos > 0.0 {
        let rho = 2.0 * lambert * cos_d * one_minus_cos;
        let rho2 = rho * rho;
        return rho2 / (1.0 + rho2);
    }
    return 1.0;
}

// The path kernels take the same accelerators as the CUDA backend's: the
// tree's octant copies, and the cell grid where core's cost model picks it
// (rtiow); no candidate masks (the CUDA path kernels read none either: a
// path's later bounces dominate). cornell (36 triangles) takes the tree on
// both backends: its grid's expected cost, 44.8, is above the tree's, 42.2
// (CellGrid::worthwhile). Both backends also schedule their path kernels the
// same way, which is not a core accelerator: persistent warps (subgroups)
// that take pieces of the frame from a counter, two lanes sharing a pixel's
// samples, and a tail of smaller pieces (path_pieces.wgsl; backend-cuda
// KernelConfig::persistent_path, path_lanes, path_tail_64ths), where the
// adapter has subgroups; elsewhere one pixel an invocation over the frame's
// tiles (render_linear, render_srgb8).
// mirrors prism_core::integrator::trace_path
fn trace_path(first_ray: Ray, rng: ptr<function, Pcg>) -> Traced {
    var ray = first_ray;
    var radiance = vec3<f32>(0.0);
    var throughput = vec3<f32>(1.0);
    var rays = 0u;
    let sun = has_sun();
    let next_event = sun_next_event();
    // The MIS weight of the sun if the ray traced next meets it.
    var sun_weight = 1.0;
    for (var depth = 0u; depth < params.max_depth; depth++) {
        let hit = render_closest_hit(ray);
        rays += 1u;
        if sun {
            let t_sun = sun_distance(ray.origin, ray.dir, ray.tmin);
            if t_sun < select(f32_infinity(), hit.t, hit_is_hit(hit)) {
                radiance += throughput * (params.sun_radiance.xyz * sun_weight);
                break;
            }
        }
        if !hit_is_hit(hit) {
            radiance += throughput * sky_color(ray.dir);
            break;
        }
        let surf = shading_point(ray, hit);
        let m = surf.material;
        radiance += throughput * m.emission_ior.xyz;
        let dir = vec3_normalize(ray.dir);
        let s = scatter(m, dir, surf.n, rng);
        if next_event && depth + 1u < params.max_depth {
            let u1 = pcg_next_f32(rng);
            let u2 = pcg_next_f32(rng);
            let facing = select(-surf.n, surf.n, dot(dir, surf.n) < 0.0);
            let lambert = m.lobe_weights.x;
            let spawn = spawn_tmin(surf.p, ray.origin);
            let sun_sample = sample_sun(surf.p, facing, spawn, surf.size, lambert, u1, u2);
            radiance += throughput * (m.albedo_fuzz.xyz * (params.sun_radiance.xyz * sun_sample.weight));
            rays += sun_sample.rays;
            sun_weight = sun_bsdf_weight(s.diffuse, lambert, dot(s.dir, facing), sun_sample.one_minus_cos);
        }
        throughput *= s.attenuation;
        if depth + 1u >= params.rr_depth {
            // Russian roulette: survive with the throughput's largest channel.
            let survive = min(vec3_max_element(throughput), 1.0);
            if pcg_next_f32(rng) >= survive {
                break;
            }
            throughput *= 1.0 / survive;
        }
        let tmin = spawn_tmin(surf.p, ray.origin) + surface_margin(surf.size, dot(s.dir, surf.n));
        ray = ray_segment(surf.p, s.dir, tmin, f32_infinity());
    }
    return Traced(radiance, rays);
}

// mirrors prism_core::integrator::pow32
fn pow32(x: f32) -> f32 {
    let x2 = x * x;
    let x4 = x2 * x2;
    let x8 = x4 * x4;
    let x16 = x8 * x8;
    return x16 * x16;
}

// mirrors prism_core::integrator::whitted_local (the shadow ray takes
// `shadow_list`, a camera hit's tile's shadow candidates, unless it is
// MASK_WALK: camera_masks.wgsl)
fn whitted_local(p: vec3<f32>, spawn: f32, size: f32, n: vec3<f32>, view: vec3<f32>, albedo: vec3<f32>, shadow_list: vec2<u32>) -> vec3<f32> {
    let to_light = params.light_position.xyz - p;
    let dist = vec3_length(to_light);
    let l = to_light * (1.0 / dist);
    let tmin = spawn + surface_margin(size, dot(l, n));
    let shadowed = light_blocked_listed(ray_segment(p, l, tmin, dist), shadow_list);
    // f32_max as core's max: with the light at the point itself, l is NaN and
    // core's n . l is 0.
    let n_dot_l = f32_max(dot(n, l), 0.0);
    let r = reflect(-l, n);
    // No highlight from a light behind the surface.
    let spec = select(0.0, pow32(f32_max(dot(r, view), 0.0)), n_dot_l > 0.0);
    let lit = PHONG_AMBIENT * albedo + PHONG_DIFFUSE * n_dot_l * albedo + vec3<f32>(PHONG_SPECULAR * spec);
    let keep = select(1.0, SHADOW_KEEP, shadowed);
    return lit * params.light_color.xyz * keep;
}

// mirrors prism_core::integrator::trace_whitted (in a tile of `masks`:
// camera_masks.wgsl)
fn trace_whitted(first_ray: Ray, masks: TileMasks) -> Traced {
    var ray = first_ray;
    var color = vec3<f32>(0.0);
    var weight = 1.0;
    var rays = 0u;
    for (var bounce = 0u; bounce <= params.max_depth; bounce++) {
        let hit = render_or_listed_hit(ray, bounce, masks);
        rays += 1u;
        if !hit_is_hit(hit) {
            color += weight * sky_color(ray.dir);
            break;
        }
        let surf = shading_point(ray, hit);
        let d = ray.dir; // of unit length (see core)
        let n = select(-surf.n, surf.n, dot(surf.n, d) < 0.0);
        let albedo = surf.material.albedo_fuzz.xyz;
        let spawn = spawn_tmin(surf.p, ray.origin);
        // The shadow candidates of the pixel's tile answer a camera hit's shadow ray.
        let shadow_list = select(MASK_WALK, masks.shadow, bounce == 0u);
        let local_color = whitted_local(surf.p, spawn, surf.size, n, -d, albedo, shadow_list);
        rays += 1u;
        if bounce == params.max_depth {
            color += weight * local_color;
            break;
        }
        color += weight * WHITTED_LOCAL * local_color;
        weight *= 1.0 - WHITTED_LOCAL;
        let r = reflect(d, n);
        ray = ray_segment(surf.p, r, spawn + surface_margin(surf.size, dot(r, n)), f32_infinity());
    }
    return Traced(color, rays);
}

// AO rays of pixel (x, y): ao_samples, plus one where the R2 lattice value
// (prism_core::integrator::AO_EXTRA_PATTERN) of the pixel's 16 x 8 block
// (AO_EXTRA_BLOCK_SHIFT: the render tile, so a warp traces one count) is
// below the fractional-count threshold params.ao_extra (0: never).
// mirrors prism_core::integrator::ao_rays_at
fn ao_rays_at(x: u32, y: u32) -> u32 {
    let pattern = (x >> 4u) * 0xC13FA9A9u + (y >> 3u) * 0x91E10DA5u;
    return params.ao_samples + select(0u, 1u, pattern < params.ao_extra);
}

// The factor an AO pixel's colour keeps for its shadow ray to the key light
// from `surf` (normal `n` facing the camera ray, spawn distance `spawn`), with
// the tile's shadow candidates `shadow_list`: SHADOW_KEEP if blocked, else 1
// (and 1 without a shadow ray, params.ao_shadows 0). trace_ao's tail, shared
// with the persistent AO kernels (path_pieces.wgsl).
fn ao_shadow_keep(surf: ShadingPoint, n: vec3<f32>, spawn: f32, shadow_list: vec2<u32>) -> f32 {
    if params.ao_shadows == 0u {
        return 1.0;
    }
    let blocked = light_blocked_listed(ao_shadow_ray(surf, n, spawn), shadow_list);
    return select(1.0, SHADOW_KEEP, blocked);
}

// The shadow ray of an AO pixel to the key light from `surf` (normal `n`
// facing the camera ray, spawn distance `spawn`).
fn ao_shadow_ray(surf: ShadingPoint, n: vec3<f32>, spawn: f32) -> Ray {
    let to_light = params.light_position.xyz - surf.p;
    let dist = vec3_length(to_light);
    let l = to_light * (1.0 / dist);
    let tmin = spawn + surface_margin(surf.size, dot(l, n));
    return ray_segment(surf.p, l, tmin, dist);
}

// The next AO ray of a pixel from `surf` (normal `n` facing the camera ray,
// spawn distance `spawn`): a cosine-weighted direction from two numbers of
// `rng`, of length params.ao_distance.
fn ao_ray(surf: ShadingPoint, n: vec3<f32>, spawn: f32, rng: ptr<function, Pcg>) -> Ray {
    let u1 = pcg_next_f32(rng);
    let u2 = pcg_next_f32(rng);
    let d = cosine_hemisphere(n, u1, u2);
    let tmin = spawn + surface_margin(surf.size, dot(d, n));
    return ray_segment(surf.p, d, tmin, params.ao_distance);
}

// `samples`: the pixel's own AO ray count (ao_rays_at).
// mirrors prism_core::integrator::trace_ao (in a tile of `masks`:
// camera_masks.wgsl)
fn trace_ao(ray: Ray, rng: ptr<function, Pcg>, samples: u32, masks: TileMasks) -> Traced {
    let hit = render_or_listed_hit(ray, 0u, masks);
    if !hit_is_hit(hit) {
        return Traced(sky_color(ray.dir), 1u);
    }
    let surf = shading_point(ray, hit);
    let n = select(-surf.n, surf.n, dot(surf.n, ray.dir) < 0.0);
    let m = surf.material;
    let spawn = spawn_tmin(surf.p, ray.origin);
    var open = 0u;
    var keep = 1.0;
    if TWO_LEVEL == 1u && LIGHT_GRID == 0u {
        // The AO rays and the shadow ray (after them, as below) through one
        // call of the walk: a second inlined copy of the two-level any-hit
        // walk made the whole kernel 3.5x slower on an H200 (`instances`,
        // one AO ray and the shadow ray: 12.75 against 3.6 ms; the kernel
        // without any occlusion walk, 1.30 ms). Same rays, same order, same
        // random numbers. (A two-level scene has neither camera masks nor a
        // light grid: its shadow ray is accel_occluded's, as
        // light_blocked_listed answers it.)
        let total = samples + select(0u, 1u, params.ao_shadows != 0u);
        for (var i = 0u; i < total; i++) {
            var r: Ray;
            if i < samples {
                r = ao_ray(surf, n, spawn, rng);
            } else {
                r = ao_shadow_ray(surf, n, spawn);
            }
            let blocked = accel_occluded(r);
            if i < samples {
                open += select(1u, 0u, blocked);
            } else {
                keep = select(1.0, SHADOW_KEEP, blocked);
            }
        }
    } else {
        for (var i = 0u; i < samples; i++) {
            open += select(1u, 0u, accel_occluded(ao_ray(surf, n, spawn, rng)));
        }
        keep = ao_shadow_keep(surf, n, spawn, masks.shadow);
    }
    let rays = 1u + samples + select(0u, 1u, params.ao_shadows != 0u);
    let ao = f32(open) / f32(samples);
    return Traced(m.albedo_fuzz.xyz * (ao * keep) + m.emission_ior.xyz, rays);
}

// Sample `sample_index` of pixel (x, y): the body of render_pixel's loop,
// which the persistent path kernels (path_pieces.wgsl) also run for the
// samples of a pixel that its lanes share.
fn render_sample(x: u32, y: u32, sample_index: u32, masks: TileMasks) -> Traced {
    if INTEGRATOR == 1u && params.spp <= 1u && params.camera.origin_lens.w == 0.0 {
        // The ray below without its random numbers: one sample takes the
        // pixel's centre, a pinhole reads no lens sample, and trace_whitted
        // draws none (the CUDA backend's camera_numbers_unused).
        let s = (f32(x) + 0.5) / f32(params.width);
        let t = 1.0 - (f32(y) + 0.5) / f32(params.height);
        return trace_whitted(camera_ray(params.camera, s, t, 0.0, 0.0), masks);
    }
    let pixel = y * params.width + x;
    let jitter = params.spp > 1u;
    var rng = pcg_for_path(pixel, sample_index, params.seed);
    let jx0 = pcg_next_f32(&rng);
    let jy0 = pcg_next_f32(&rng);
    let l1 = pcg_next_f32(&rng);
    let l2 = pcg_next_f32(&rng);
    let jx = select(0.5, jx0, jitter);
    let jy = select(0.5, jy0, jitter);
    let s = (f32(x) + jx) / f32(params.width);
    let t = 1.0 - (f32(y) + jy) / f32(params.height);
    let ray = camera_ray(params.camera, s, t, l1, l2);
    var r: Traced;
    switch INTEGRATOR {
        case 1u: {
            r = trace_whitted(ray, masks);
        }
        case 2u: {
            r = trace_ao(ray, &rng, ao_rays_at(x, y), masks);
        }
        default: {
            r = trace_path(ray, &rng);
        }
    }
    return r;
}

// mirrors prism_core::integrator::render_pixel
//
// Core matches on `params.integrator`; here the same value arrives as the
// pipeline constant INTEGRATOR (entry.wgsl), so that each integrator's
// pipeline holds only its own code and registers. `masks`: the candidates of
// the pixel's tile, which the Whitted and AO integrators read
// (camera_masks.wgsl).
fn render_pixel(x: u32, y: u32, masks: TileMasks) -> Traced {
    var sum = vec3<f32>(0.0);
    var rays = 0u;
    for (var sample_index = 0u; sample_index < params.spp; sample_index++) {
        let r = render_sample(x, y, sample_index, masks);
        sum += r.color;
        rays += r.rays;
    }
    return Traced(sum * (1.0 / f32(params.spp)), rays);
}
