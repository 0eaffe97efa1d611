//! The sun: a spherical light outside the BVH, sampled directly by the path
//! integrator.
//!
//! A [`Sun`] is a sphere of constant radiance (`color * intensity`). It is not
//! geometry: no tree holds it and `intersect` never reports it. A path ray that
//! meets its sphere before any surface (or misses every surface and meets it)
//! sees its radiance ([`sun_distance`]), and at every surface the path
//! integrator samples a direction in the cone the sphere subtends and traces a
//! shadow ray towards it (next-event estimation, [`crate::integrator`]).
//! Outdoor scenes are lit mostly by such a small bright source, which chance
//! hits alone find too rarely for a clean image.

use crate::error::Error;
use crate::gpu::RenderParams;
use crate::integrator::{Tracer, surface_margin};
use crate::intersect::ray_sphere;
use crate::ray::Ray;
use crate::sampling::{cone_one_minus_cos, uniform_cone};
use glam::{Vec3, Vec4};

/// A spherical light (see the [module docs](self)).
///
/// ```
/// use prism_core::glam::Vec3;
/// use prism_core::{Scene, Sun};
///
/// let mut scene = Scene::new();
/// // A warm sun 1000 units away, 0.27 degrees in angular radius like ours.
/// let dir = Vec3::new(1.0, 2.0, 0.5).normalize();
/// scene.sun = Some(Sun::new(dir * 1000.0, 4.7, Vec3::new(1.0, 0.9, 0.8), 2.0e4));
/// assert!(scene.sun.is_some_and(|sun| sun.validate().is_ok()));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sun {
    /// Centre of the sphere, world space.
    pub center: Vec3,
    /// Radius of the sphere, finite and `> 0`.
    pub radius: f32,
    /// Colour of its radiance (linear RGB), each channel finite and `>= 0`.
    pub color: Vec3,
    /// Scale of its radiance, finite and `>= 0`: the radiance is `color * intensity`.
    pub intensity: f32,
}

impl Sun {
    /// A sun of radiance `color * intensity`.
    #[inline]
    pub fn new(center: Vec3, radius: f32, color: Vec3, intensity: f32) -> Self {
        Self {
            center,
            radius,
            color,
            intensity,
        }
    }

    /// The radiance a ray that meets the sun sees.
    #[inline]
    pub fn radiance(&self) -> Vec3 {
        self.color * self.intensity
    }

    /// Check every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |field, value, reason| {
            Err(Error::SunInvalid {
                field,
                value,
                reason,
            })
        };
        for (field, v) in [
            ("sun.center.x", self.center.x),
            ("sun.center.y", self.center.y),
            ("sun.center.z", self.center.z),
        ] {
            if !v.is_finite() {
                return bad(field, v, "must be finite");
            }
        }
        if !(self.radius > 0.0 && self.radius.is_finite()) {
            return bad("sun.radius", self.radius, "must be finite and > 0");
        }
        for (field, v) in [
            ("sun.color.r", self.color.x),
            ("sun.color.g", self.color.y),
            ("sun.color.b", self.color.z),
            ("sun.intensity", self.intensity),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return bad(field, v, "must be finite and >= 0");
            }
        }
        let radiance = self.radiance();
        if !radiance.is_finite() {
            return bad(
                "sun.color * sun.intensity",
                radiance.max_element(),
                "the radiance must be finite",
            );
        }
        Ok(())
    }

    /// The two rows of [`RenderParams`] that carry the sun: centre and radius,
    /// radiance and the next-event switch (`1.0` on).
    #[inline]
    pub fn rows(&self, next_event: bool) -> (Vec4, Vec4) {
        (
            self.center.extend(self.radius),
            self.radiance().extend(if next_event { 1.0 } else { 0.0 }),
        )
    }
}

/// Whether the frame has a sun: its radius row is `0` without one (a valid
/// [`Sun`] has a positive radius).
#[inline(always)]
pub fn has_sun(params: &RenderParams) -> bool {
    params.sun_center_radius[3] > 0.0
}

/// Whether the path integrator samples the frame's sun directly.
#[inline(always)]
pub fn sun_next_event(params: &RenderParams) -> bool {
    has_sun(params) && params.sun_radiance[3] != 0.0
}

/// Distance along `dir` from `origin` beyond `tmin` at which the ray meets the
/// sun of a frame that has one ([`has_sun`]), by the robust sphere test
/// ([`ray_sphere`]), or infinity where it does not.
#[inline(always)]
pub fn sun_distance(params: &RenderParams, origin: Vec3, dir: Vec3, tmin: f32) -> f32 {
    let s = params.sun_center_radius;
    let center = Vec3::new(s[0], s[1], s[2]);
    ray_sphere(origin, dir, center, s[3], tmin, f32::INFINITY).unwrap_or(f32::INFINITY)
}

/// Next-event estimation of the sun at a surface point `p`, for the Lambert
/// lobe of weight `lambert` (the other lobes are specular enough that only
/// their own sampled rays find the sun): a direction uniform in the cone the
/// sun subtends from `p` ([`uniform_cone`], from `(u1, u2)`), and a shadow ray
/// along it from `spawn` plus the [`surface_margin`] of a primitive of size
/// `size` to the sun's sphere. `n` is the unit normal on the side the path
/// arrived from.
///
/// Returns `(weight, one_minus_cos, rays)`: the path gains `throughput * albedo
/// * radiance * weight`; `one_minus_cos` is `1 - cos` of the cone, `0` when `p`
/// is inside the sun's sphere (no cone: [`sun_bsdf_weight`] then gives the
/// scattered ray full weight); `rays` the shadow rays traced (0 or 1).
///
/// The weight is the light estimate `f cos L / pdf_cone` with MIS by the
/// power heuristic against the Lambert lobe's own sampling density,
/// `lambert * cos / pi` (the lobe is chosen with probability `lambert`, then
/// cosine-sampled). With `pdf_cone = 1 / (2 pi (1 - cos_max))` both come down to
/// their ratio `rho = pdf_lambert / pdf_cone = 2 lambert cos (1 - cos_max)`:
/// the light weight is `1 / (1 + rho^2)` and the estimate `rho / (1 + rho^2)`
/// (no huge pdf to overflow for a tiny sun). The power heuristic rather than
/// one-sample MIS over a mixture of the two densities: the shadow ray and the
/// scattered ray are both needed anyway (the scattered ray carries the rest of
/// the path), and two samples weighted apart cost no extra random numbers or
/// rays, where a mixture would have to choose between them.
#[inline(always)]
#[allow(
    clippy::too_many_arguments,
    reason = "the scalar arguments mirror the GPU kernels' one for one"
)]
#[allow(
    clippy::neg_cmp_op_on_partial_ord,
    reason = "a NaN distance or cosine must take the no-light branch"
)]
pub fn sample_sun<T: Tracer + ?Sized>(
    accel: &T,
    params: &RenderParams,
    p: Vec3,
    n: Vec3,
    spawn: f32,
    size: f32,
    lambert: f32,
    (u1, u2): (f32, f32),
) -> (f32, f32, u32) {
    let s = params.sun_center_radius;
    let to_sun = Vec3::new(s[0], s[1], s[2]) - p;
    let d2 = to_sun.length_squared();
    let r2 = s[3] * s[3];
    if !(r2 < d2) {
        // On or inside the sun's sphere: there is no cone to sample.
        return (0.0, 0.0, 0);
    }
    let one_minus_cos = cone_one_minus_cos(r2 / d2);
    let axis = to_sun * (1.0 / libm::sqrtf(d2));
    let l = uniform_cone(axis, one_minus_cos, u1, u2);
    let cos = l.dot(n);
    if !(lambert * cos > 0.0) {
        // Below the surface, or no Lambert lobe: nothing to light.
        return (0.0, one_minus_cos, 0);
    }
    let tmin = spawn + surface_margin(size, cos);
    let t = sun_distance(params, p, l, tmin);
    if t == f32::INFINITY {
        // A direction on the cone's rim that rounding took past the sphere.
        return (0.0, one_minus_cos, 0);
    }
    if accel.occluded(&Ray::segment(p, l, tmin, t)) {
        return (0.0, one_minus_cos, 1);
    }
    let rho = 2.0 * lambert * cos * one_minus_cos;
    (rho / (1.0 + rho * rho), one_minus_cos, 1)
}

/// The MIS weight of the sun for the ray scattered at a point whose
/// [`sample_sun`] returned `one_minus_cos`: `rho^2 / (1 + rho^2)` for a ray of
/// the Lambert lobe (`diffuse`, weight `lambert`, `cos` to the normal on the
/// arrival side), the complement of the light's weight for the same
/// direction; `1` for a specular lobe's ray and where no cone was sampled, as
/// next-event estimation cannot find the sun that way.
#[inline(always)]
pub fn sun_bsdf_weight(diffuse: bool, lambert: f32, cos: f32, one_minus_cos: f32) -> f32 {
    if diffuse && one_minus_cos > 0.0 {
        let rho = 2.0 * lambert * cos * one_minus_cos;
        let rho2 = rho * rho;
        rho2 / (1.0 + rho2)
    } else {
        1.0
    }
}
