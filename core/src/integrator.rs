//! The integrators: `path`, `whitted` and `ao`, one pixel at a time.
//!
//! [`render_pixel`] is the whole per-pixel program every backend runs (the GPU
//! kernels mirror it), so a pixel's value depends only on the scene, the
//! [`RenderParams`] and the pixel's coordinates.

use crate::camera::camera_ray;
use crate::gpu::{
    GpuInstance, GpuMaterial, KIND_HEIGHTFIELD, KIND_SPHERE, Primitive, RenderParams,
};
use crate::heightfield::face_normal;
use crate::material::{reflect, scatter};
use crate::ray::{Hit, Ray};
use crate::rng::Pcg;
use crate::sampling::cosine_hemisphere;
use crate::sun::{has_sun, sample_sun, sun_bsdf_weight, sun_distance, sun_next_event};
use crate::traverse::Accel;
use crate::two_level::{object_point, world_normal};
use glam::Vec3;

/// Whitted: share of a point's Phong light (ambient, diffuse and specular
/// alike) kept when the key light is blocked.
pub const SHADOW_KEEP: f32 = 0.35;
/// Whitted: Phong ambient weight, the light a point gets whatever its angle to
/// the key light (behind the surface, this alone; with the light blocked,
/// [`SHADOW_KEEP`] of the whole sum).
pub const PHONG_AMBIENT: f32 = 0.1;
/// Whitted: diffuse weight.
pub const PHONG_DIFFUSE: f32 = 0.7;
/// Whitted: specular weight.
pub const PHONG_SPECULAR: f32 = 0.7;
/// Whitted: specular exponent (32, computed as five squarings in [`pow32`]).
pub const PHONG_EXPONENT: u32 = 32;
/// Whitted: weight of the surface's own colour against what its mirror sees.
pub const WHITTED_LOCAL: f32 = 0.55;

/// What the integrators trace with: closest hit (by slot) and any hit over one
/// [`Accel`]. `Accel` itself walks core's binary BVH; a backend may supply a
/// faster walk of the same scene (prism-cpu's wide BVH) as long as it returns
/// the same answers.
pub trait Tracer {
    /// The scene whose slots, primitives and materials the hits refer to.
    fn accel(&self) -> &Accel;
    /// Closest hit; `Hit::prim` is the leaf slot (a slot of
    /// `self.accel().primitives()`, or [`Hit::NO_PRIM`] for a miss).
    fn closest_slot(&self, ray: &Ray) -> Hit;
    /// Whether anything lies on the ray within `(tmin, tmax)`.
    fn occluded(&self, ray: &Ray) -> bool;
    /// Whether the shadow ray `ray`, which reaches the scene's light at
    /// `ray.tmax`, is blocked. The same answer as [`Tracer::occluded`], which
    /// is what it returns unless a backend answers from candidate lists around
    /// the light ([`crate::point_grid`]).
    #[inline(always)]
    fn light_blocked(&self, ray: &Ray) -> bool {
        self.occluded(ray)
    }
}

impl Tracer for Accel {
    #[inline(always)]
    fn accel(&self) -> &Accel {
        self
    }
    #[inline(always)]
    fn closest_slot(&self, ray: &Ray) -> Hit {
        self.intersect_slot(ray)
    }
    #[inline(always)]
    fn occluded(&self, ray: &Ray) -> bool {
        Accel::occluded(self, ray)
    }
}

#[inline(always)]
fn xyz(a: [f32; 4]) -> Vec3 {
    Vec3::new(a[0], a[1], a[2])
}

/// Start distance of a ray leaving a surface at `p`, found by a ray from
/// `origin`, before [`surface_margin`]: relative to the larger magnitude of the
/// two, so self-intersection is avoided at every scene scale. `p = origin + t *
/// dir` carries a rounding error in proportion to both (a camera far from a
/// surface near the world origin places its hit points no better than its own
/// coordinates allow).
///
/// The start grows with the distance from the world origin: at `|p| = 1e5` a
/// secondary ray starts 10 units out, so smaller detail there (a glass sphere
/// of radius 1) is skipped by the rays leaving it. Scenes far from the origin
/// keep their detail by being moved next to it (camera-relative coordinates).
#[inline(always)]
pub fn spawn_tmin(p: Vec3, origin: Vec3) -> f32 {
    1e-4 * (1.0 + p.abs().max(origin.abs()).max_element())
}

/// Rounding scale of a primitive's own coordinates, for [`surface_margin`]: a
/// sphere's largest `|centre|` component plus its radius (which its record
/// holds, [`Primitive::sphere`]), a triangle's largest `|vertex|` component, a
/// heightfield's extent (the largest coordinate of its box, which its record
/// holds, [`Primitive::heightfield`]: its walk works from plane coordinates
/// up to that size).
#[inline(always)]
pub fn primitive_size(prim: &Primitive) -> f32 {
    if prim.kind() == KIND_SPHERE {
        prim.b[2]
    } else if prim.kind() == KIND_HEIGHTFIELD {
        prim.c[1]
    } else {
        xyz(prim.a)
            .abs()
            .max(xyz(prim.b).abs())
            .max(xyz(prim.c).abs())
            .max_element()
    }
}

/// What a ray leaving a primitive of [`primitive_size`] `size` adds to
/// [`spawn_tmin`], `cos` being the cosine between its direction and the
/// surface normal. The intersection tests work from the primitive's own
/// coordinates (`origin - centre`, `vertex - origin`), so a hit point lies off
/// the surface by rounding in proportion to `size` (about 5e-8 of it for
/// spheres, 2.2e-7 for triangles), whatever `|p|`: the ground sphere of radius
/// 1000 under rtiow's spheres. A ray leaving at a grazing angle meets that
/// error `1 / cos` further on, so the margin grows as `1 / cos`, for a cosine
/// kept within `[1e-3, 1]` (a NaN cosine takes 1e-3). `1 / cos` is rounded up
/// to a power of two ([`recip_pow2_up`]): at most twice the margin, never
/// less, for two integer operations where a division costs a GPU some ten
/// instructions, and the same bits on every backend.
#[inline(always)]
#[allow(
    clippy::manual_clamp,
    reason = "clamp keeps a NaN; max turns it into 1e-3"
)]
pub fn surface_margin(size: f32, cos: f32) -> f32 {
    1e-6 * (1.0 + size) * recip_pow2_up(cos.abs().max(1e-3).min(1.0))
}

/// The least power of two at or above `1 / c`, for a normal positive `c`
/// below 2^127: with `c = m 2^e`, `m` in `[1, 2)`, it is `2^-e`, whose
/// exponent field is 254 minus `c`'s.
#[inline(always)]
pub fn recip_pow2_up(c: f32) -> f32 {
    f32::from_bits((254 << 23) - (c.to_bits() & 0x7f80_0000))
}

/// The sky seen along `dir`: the vertical gradient of [`crate::Sky`]. A
/// constant sky (horizon and zenith the same colour) is that colour exactly,
/// along any direction: the blend `(1 - t) c + t c` would round it, and its
/// square root and division are a sixth of a Whitted sky pixel's work on a GPU.
#[inline(always)]
pub fn sky_color(params: &RenderParams, dir: Vec3) -> Vec3 {
    let (horizon, zenith) = (xyz(params.sky_horizon), xyz(params.sky_zenith));
    if horizon == zenith {
        return horizon;
    }
    let t = 0.5 * (dir.normalize_or_zero().y + 1.0);
    (1.0 - t) * horizon + t * zenith
}

/// What the integrators shade at a closest hit: hit point, unit geometric
/// normal (outward for spheres and heightfields, by winding for triangles),
/// the primitive's [`primitive_size`] and material.
///
/// On an instance (a two-level scene) the normal is found in object space and
/// carried into the world ([`crate::two_level::world_normal`]), the size is
/// scaled by the instance's stretch ([`crate::gpu::GpuInstance::scale`]) and
/// the instance's material, if it has one, replaces the primitive's.
///
/// `None` for a miss, and for a slot outside `accel` (a [`Tracer`] that breaks
/// its contract), which the integrators then shade as a miss instead of
/// panicking.
#[inline(always)]
fn shading_point<'a, T: Tracer + ?Sized>(
    accel: &'a T,
    ray: &Ray,
    hit: &Hit,
) -> Option<(Vec3, Vec3, f32, &'a GpuMaterial)> {
    let accel = accel.accel();
    let slot = hit.prim as usize;
    let prim = accel.primitives().get(slot)?;
    let mut material = *accel.slot_materials().get(slot)?;
    let p = ray.at(hit.t);
    let mut size = primitive_size(prim);
    let n = match accel.instances().get(hit.instance as usize) {
        None => geometric_normal(prim, hit, p),
        Some(instance) => {
            if instance.material() != GpuInstance::NO_MATERIAL {
                material = instance.material();
            }
            size *= instance.scale();
            world_normal(
                instance,
                geometric_normal(prim, hit, object_point(instance, p)),
            )
        }
    };
    // Every slot's and instance's material id was checked against the
    // material table when building; `get` keeps a mismatched accel from
    // panicking all the same.
    let material = accel.materials().get(material as usize)?;
    Some((p, n.normalize_or(Vec3::Y), size, material))
}

/// The geometric normal (not normalised) of `prim` at `p` (in its own
/// space): outward for a sphere, by winding for a triangle, the face's
/// outward normal for a heightfield (the face `hit` names).
#[inline(always)]
fn geometric_normal(prim: &Primitive, hit: &Hit, p: Vec3) -> Vec3 {
    if prim.kind() == KIND_SPHERE {
        // `b[1]` is the sphere's `1 / radius` (Primitive::sphere).
        (p - xyz(prim.a)) * prim.b[1]
    } else if prim.kind() == KIND_HEIGHTFIELD {
        face_normal(hit.face)
    } else {
        (xyz(prim.b) - xyz(prim.a)).cross(xyz(prim.c) - xyz(prim.a))
    }
}

/// One path-traced sample; returns radiance and the number of rays traced.
///
/// With a sun ([`crate::sun`]), a ray that meets the sun's sphere before any
/// surface ends the path with the sun's radiance. With the sun's next-event
/// switch on, each surface but the last of the path also samples the sun
/// ([`sample_sun`]: two more random numbers after [`scatter`]'s seven, then a
/// shadow ray), and the sun seen by the scattered ray is weighted by
/// [`sun_bsdf_weight`]; the two weights sum to one for every direction, so
/// the image has the same expectation as with the switch off. The last
/// surface is left out because its scattered ray is never traced.
pub fn trace_path<T: Tracer + ?Sized>(
    accel: &T,
    params: &RenderParams,
    mut ray: Ray,
    rng: &mut Pcg,
) -> (Vec3, u32) {
    let mut radiance = Vec3::ZERO;
    let mut throughput = Vec3::ONE;
    let mut rays = 0u32;
    let sun = has_sun(params);
    let next_event = sun_next_event(params);
    // The MIS weight of the sun if the ray traced next meets it.
    let mut sun_weight = 1.0f32;
    for depth in 0..params.max_depth {
        let hit = accel.closest_slot(&ray);
        rays = rays.wrapping_add(1);
        if sun {
            let t_sun = sun_distance(params, ray.origin, ray.dir, ray.tmin);
            if t_sun < if hit.is_hit() { hit.t } else { f32::INFINITY } {
                radiance += throughput * (xyz(params.sun_radiance) * sun_weight);
                break;
            }
        }
        let Some((p, n, size, m)) = shading_point(accel, &ray, &hit) else {
            radiance += throughput * sky_color(params, ray.dir);
            break;
        };
        radiance += throughput * xyz(m.emission_ior);
        let dir = ray.dir.normalize();
        let s = scatter(m, dir, n, rng);
        if next_event && depth + 1 < params.max_depth {
            let (u1, u2) = (rng.next_f32(), rng.next_f32());
            let facing = if dir.dot(n) < 0.0 { n } else { -n };
            let lambert = m.lobe_weights[0];
            let spawn = spawn_tmin(p, ray.origin);
            let (w, one_minus_cos, r) =
                sample_sun(accel, params, p, facing, spawn, size, lambert, (u1, u2));
            radiance += throughput * (xyz(m.albedo_fuzz) * (xyz(params.sun_radiance) * w));
            rays = rays.wrapping_add(r);
            sun_weight = sun_bsdf_weight(s.diffuse, lambert, s.dir.dot(facing), one_minus_cos);
        }
        throughput *= s.attenuation;
        if depth + 1 >= params.rr_depth {
            // Russian roulette: survive with the throughput's largest channel.
            let survive = throughput.max_element().min(1.0);
            if rng.next_f32() >= survive {
                break;
            }
            throughput *= 1.0 / survive;
        }
        let tmin = spawn_tmin(p, ray.origin) + surface_margin(size, s.dir.dot(n));
        ray = Ray::segment(p, s.dir, tmin, f32::INFINITY);
    }
    (radiance, rays)
}

/// `x^32` by five squarings: exact same operations on every backend (`powf`
/// implementations differ in their last bits).
#[inline(always)]
pub fn pow32(x: f32) -> f32 {
    let x2 = x * x;
    let x4 = x2 * x2;
    let x8 = x4 * x4;
    let x16 = x8 * x8;
    x16 * x16
}

/// Phong lighting of one point by the key light, with a hard shadow.
#[inline(always)]
fn whitted_local<T: Tracer + ?Sized>(
    accel: &T,
    params: &RenderParams,
    p: Vec3,
    (spawn, size): (f32, f32),
    n: Vec3,
    view: Vec3,
    albedo: Vec3,
) -> Vec3 {
    let to_light = xyz(params.light_position) - p;
    let dist = to_light.length();
    let l = to_light * (1.0 / dist);
    let tmin = spawn + surface_margin(size, l.dot(n));
    let shadowed = accel.light_blocked(&Ray::segment(p, l, tmin, dist));
    let n_dot_l = n.dot(l).max(0.0);
    let r = reflect(-l, n);
    // No highlight from a light behind the surface (at a grazing view its
    // mirrored direction can still face the eye).
    let spec = if n_dot_l > 0.0 {
        pow32(r.dot(view).max(0.0))
    } else {
        0.0
    };
    let lit = PHONG_AMBIENT * albedo
        + PHONG_DIFFUSE * n_dot_l * albedo
        + Vec3::splat(PHONG_SPECULAR * spec);
    let keep = if shadowed { SHADOW_KEEP } else { 1.0 };
    lit * xyz(params.light_color) * keep
}

/// One Whitted sample: Phong at each hit, `max_depth` mirror bounces, each hit
/// keeping [`WHITTED_LOCAL`] of its own colour; returns colour and rays traced.
///
/// `ray.dir` is taken to be of unit length, as the camera's rays are
/// ([`crate::camera::camera_ray`] normalises them); a mirror bounce keeps that
/// length to within a few ulps, so no direction is normalised again (a square
/// root and a division a hit on a GPU). A longer direction scales the view
/// vector of the highlight.
pub fn trace_whitted<T: Tracer + ?Sized>(
    accel: &T,
    params: &RenderParams,
    mut ray: Ray,
) -> (Vec3, u32) {
    let mut color = Vec3::ZERO;
    let mut weight = 1.0;
    let mut rays = 0u32;
    for bounce in 0..=params.max_depth {
        let hit = accel.closest_slot(&ray);
        rays = rays.wrapping_add(1);
        let Some((p, n, size, m)) = shading_point(accel, &ray, &hit) else {
            color += weight * sky_color(params, ray.dir);
            break;
        };
        // A unit direction: the camera's, or its mirror image (see above).
        let d = ray.dir;
        let n = if n.dot(d) < 0.0 { n } else { -n };
        let albedo = xyz(m.albedo_fuzz);
        let spawn = spawn_tmin(p, ray.origin);
        let local = whitted_local(accel, params, p, (spawn, size), n, -d, albedo);
        rays = rays.wrapping_add(1);
        if bounce == params.max_depth {
            color += weight * local;
            break;
        }
        color += weight * WHITTED_LOCAL * local;
        weight *= 1.0 - WHITTED_LOCAL;
        let r = reflect(d, n);
        ray = Ray::segment(p, r, spawn + surface_margin(size, r.dot(n)), f32::INFINITY);
    }
    (color, rays)
}

/// Pattern weights of [`ao_pattern`]: `2^32 / p` and `2^32 / p^2`, `p` the
/// plastic number (Roberts' R2 sequence). `x * a1 + y * a2` modulo 2^32 is a
/// two-dimensional low-discrepancy lattice: the points below any threshold
/// lie evenly over the plane (no clumps, no rows), and any rectangle of it
/// holds its share of them to within a few points.
pub const AO_EXTRA_PATTERN: (u32, u32) = (0xC13F_A9A9, 0x91E1_0DA5);

/// The fractional AO count picks whole blocks of `2^shift` pixels a side
/// (16 x 8): the render tile of both GPU backends (a CUDA block's rows, a
/// wgpu workgroup), so that every warp or subgroup traces one count. Picked
/// pixel by pixel, a share of 0.1 would put an extra ray in nearly every
/// warp of 32 (1 - 0.9^32 = 97%), which then runs its extra step with most
/// lanes idle: the time would jump to almost a whole ray more at once. By
/// blocks the time stays linear in the share on every backend.
pub const AO_EXTRA_BLOCK_SHIFT: (u32, u32) = (4, 3);

/// The pattern value of lattice point `(x, y)`: [`AO_EXTRA_PATTERN`]'s
/// lattice, in wrapping `u32` arithmetic as on the GPUs. [`ao_rays_at`]
/// takes it at a pixel's block ([`AO_EXTRA_BLOCK_SHIFT`]).
#[inline(always)]
pub fn ao_pattern(x: u32, y: u32) -> u32 {
    x.wrapping_mul(AO_EXTRA_PATTERN.0)
        .wrapping_add(y.wrapping_mul(AO_EXTRA_PATTERN.1))
}

/// AO rays of pixel `(x, y)`: `ao_samples`, plus one where the
/// [`ao_pattern`] value of the pixel's 16 x 8 block ([`AO_EXTRA_BLOCK_SHIFT`])
/// is below the fractional-count threshold [`RenderParams::ao_extra`] (a
/// share `ao_extra / 2^32` of the blocks, spread evenly). Threshold 0:
/// `ao_samples` everywhere.
#[inline(always)]
pub fn ao_rays_at(params: &RenderParams, x: u32, y: u32) -> u32 {
    let block = ao_pattern(x >> AO_EXTRA_BLOCK_SHIFT.0, y >> AO_EXTRA_BLOCK_SHIFT.1);
    params
        .ao_samples
        .wrapping_add((block < params.ao_extra) as u32)
}

/// One ambient-occlusion sample: albedo times the unoccluded share of
/// `samples` cosine rays of length `ao_distance` (the pixel's own count,
/// [`ao_rays_at`]), times the shadow factor when `ao_shadows` is set; returns
/// colour and rays traced. Dividing by the pixel's own count keeps each
/// pixel's estimate unbiased whatever the fractional count.
pub fn trace_ao<T: Tracer + ?Sized>(
    accel: &T,
    params: &RenderParams,
    ray: Ray,
    rng: &mut Pcg,
    samples: u32,
) -> (Vec3, u32) {
    let hit = accel.closest_slot(&ray);
    let Some((p, n, size, m)) = shading_point(accel, &ray, &hit) else {
        return (sky_color(params, ray.dir), 1);
    };
    let n = if n.dot(ray.dir) < 0.0 { n } else { -n };
    let spawn = spawn_tmin(p, ray.origin);
    let mut open = 0u32;
    for _ in 0..samples {
        let (u1, u2) = (rng.next_f32(), rng.next_f32());
        let d = cosine_hemisphere(n, u1, u2);
        let tmin = spawn + surface_margin(size, d.dot(n));
        open += !accel.occluded(&Ray::segment(p, d, tmin, params.ao_distance)) as u32;
    }
    let mut rays = samples.wrapping_add(1);
    let mut keep = 1.0;
    if params.ao_shadows != 0 {
        let to_light = xyz(params.light_position) - p;
        let dist = to_light.length();
        let l = to_light * (1.0 / dist);
        let tmin = spawn + surface_margin(size, l.dot(n));
        let blocked = accel.light_blocked(&Ray::segment(p, l, tmin, dist));
        keep = if blocked { SHADOW_KEEP } else { 1.0 };
        rays = rays.wrapping_add(1);
    }
    let ao = open as f32 / samples as f32;
    (xyz(m.albedo_fuzz) * (ao * keep) + xyz(m.emission_ior), rays)
}

/// The camera ray of sample `sample` of pixel `(x, y)` and the random stream
/// its integrator goes on drawing from: what [`render_pixel`] traces for that
/// sample, for callers that follow one path at a time (recording a frame's
/// rays).
#[inline(always)]
pub fn camera_sample(params: &RenderParams, x: u32, y: u32, sample: u32) -> (Ray, Pcg) {
    // Wrapping, as the GPU kernels' u32 arithmetic (here and in the ray counts):
    // `RenderParams` from `RenderSettings::params` keeps it in range, and
    // hand-made ones cannot make it panic.
    let pixel = y.wrapping_mul(params.width).wrapping_add(x);
    let mut rng = Pcg::for_path(pixel, sample, params.seed);
    let (jx, jy) = (rng.next_f32(), rng.next_f32());
    let (l1, l2) = (rng.next_f32(), rng.next_f32());
    let (jx, jy) = if params.spp > 1 { (jx, jy) } else { (0.5, 0.5) };
    let s = (x as f32 + jx) / params.width as f32;
    let t = 1.0 - (y as f32 + jy) / params.height as f32;
    (camera_ray(&params.camera, s, t, l1, l2), rng)
}

/// The linear colour of pixel `(x, y)` (row 0 at the top), averaged over `spp`
/// samples, and the rays traced for it.
///
/// Sample `s` of pixel `i = y * width + x` draws from `Pcg::for_path(i, s, seed)`:
/// four numbers for the camera (pixel jitter, lens), then the integrator's. With
/// one sample per pixel the jitter is ignored and the ray goes through the
/// pixel's centre.
pub fn render_pixel<T: Tracer + ?Sized>(
    accel: &T,
    params: &RenderParams,
    x: u32,
    y: u32,
) -> (Vec3, u32) {
    // Wrapping ray counts, as in the GPU kernels (see `camera_sample`).
    let mut sum = Vec3::ZERO;
    let mut rays = 0u32;
    for sample in 0..params.spp {
        let (ray, mut rng) = camera_sample(params, x, y, sample);
        let (c, r) = match params.integrator {
            1 => trace_whitted(accel, params, ray),
            2 => trace_ao(accel, params, ray, &mut rng, ao_rays_at(params, x, y)),
            _ => trace_path(accel, params, ray, &mut rng),
        };
        sum += c;
        rays = rays.wrapping_add(r);
    }
    (sum * (1.0 / params.spp as f32), rays)
}
