//! Which primitives a tile of a pinhole camera's rays can meet: a cone from
//! the eye around each primitive, so that the camera rays of a tile of pixels
//! test only the primitives whose cones come near the tile's direction instead
//! of walking the tree (the CUDA and WGSL kernels find a mask per tile of
//! [`CAMERA_MASK_TILE`] pixels once a frame).
//!
//! Every camera ray of a pinhole camera starts at the eye, so the rays of a
//! tile of pixels lie in a narrow cone around the ray through the tile's
//! centre, and a primitive can only be hit by rays inside the cone from the
//! eye around its bounding sphere. Two cones meet when the angle between their
//! axes is at most the sum of their half angles. The test is conservative:
//! - each sphere is widened by [`CAMERA_BOUNDS_MARGIN`] of its radius plus its
//!   distance from the eye, far more than the f32 rounding of the sphere and
//!   triangle tests at that distance (the margin of the light's candidate
//!   lists, [`crate::point_grid`]);
//! - a tile's half angle covers its pixels widened by
//!   [`CAMERA_BOUNDS_PIXEL_PAD`] on every side, the rounding bound of the
//!   camera rays' f32 directions and [`CAMERA_BOUNDS_SLACK`] for the rounding
//!   of the tile's own direction and of the cosine test;
//! - a primitive whose widened sphere holds the eye can be seen anywhere: its
//!   threshold is below every cosine.
//!
//! [`closest_hit_listed`] over [`camera_candidates`] is therefore the closest
//! hit of every primitive the ray can meet: the tree's closest hit, except
//! where two primitives tie at exactly the same `t`.
//!
//! The Whitted integrator's first mirror rays and the shadow rays of its
//! first hits start where the tile's camera rays hit, so
//! [`reflection_candidates`] and [`shadow_candidates`] bound them as well,
//! from the tile's cone and its camera candidates (spheres), with the same
//! guarantee.

use crate::gpu::{GpuCamera, Primitive};
use crate::intersect::RayPre;
use crate::point_grid::bounding_sphere;
use crate::ray::{Hit, Ray};
use crate::traverse::ray_primitive;
use alloc::vec::Vec;
use glam::{DVec3, Vec3};

/// Cones are made for scenes of at most this many primitives: a tile's
/// candidates are one 64-bit mask.
pub const CAMERA_BOUNDS_MAX_PRIMS: usize = 64;
/// How far each bounding sphere is widened, relative to its radius plus its
/// distance from the eye: 1e-4, as [`crate::point_grid::POINT_GRID_MARGIN`].
pub const CAMERA_BOUNDS_MARGIN: f64 = 1e-4;
/// Whole pixels added on every side of a tile: a jittered sample reaches the
/// far edge of its pixel, and one more pixel costs a sliver of candidates.
pub const CAMERA_BOUNDS_PIXEL_PAD: f64 = 1.0;
/// Radians added to every tile's half angle: the GPU takes a tile's direction
/// with approximate reciprocals and square roots (some 1e-6 of a radian) and
/// the cosine test in f32; 1e-5 covers both ten times.
pub const CAMERA_BOUNDS_SLACK: f64 = 1e-5;
/// Side, in pixels, of the square tiles whose candidates the GPU kernels take
/// once a frame (one mask a tile, before the render launches): 32 keeps a
/// whitted19 frame's 65,536 masks in 512 KB, and adds about a tile's width of
/// candidates around each silhouette to a warp's 16 x 2 pixels.
pub const CAMERA_MASK_TILE: u32 = 32;
/// The threshold of a primitive every direction may meet.
pub const CAMERA_CONE_ALL: f32 = -2.0;
/// Bound of the f32 rounding of a camera ray's direction, in units of
/// `f32::EPSILON` times the camera's largest coordinate:
/// `lower_left + s * horizontal + t * vertical - origin` rounds each
/// component by at most about 4 ulps of those magnitudes (with or without
/// fused products), and normalising turns no direction; 32 is the margin.
const DIRECTION_ROUNDING_ULPS: f64 = 32.0;

/// `[x, y, z]` of a row as f64.
#[inline]
fn dvec(r: [f32; 4]) -> DVec3 {
    DVec3::new(r[0] as f64, r[1] as f64, r[2] as f64)
}

/// The largest absolute component.
#[inline]
fn max_abs(v: DVec3) -> f64 {
    v.abs().max_element()
}

/// The cone from the eye of each primitive of `prims` (an [`crate::Accel`]'s,
/// in slot order) for tiles of `tile_w` x `tile_h` pixels of a `width` x
/// `height` image seen through the pinhole `camera`: the unit axis towards the
/// primitive's bounding sphere in `xyz`, and in `w` the least cosine between
/// that axis and a tile's direction ([`tile_direction`]) for which a camera ray
/// of the tile may hit the primitive ([`CAMERA_CONE_ALL`] when any may).
///
/// `None` when the camera has a lens (its rays do not share an origin), the
/// scene has more than [`CAMERA_BOUNDS_MAX_PRIMS`] primitives, the image or
/// the tile is empty, or the camera or a primitive is not finite or
/// degenerate: camera rays then walk the tree.
///
/// ```
/// use prism_core::camera_bounds::{camera_candidates, camera_cones, tile_direction};
/// use prism_core::glam::Vec3;
/// use prism_core::{Accel, Camera, Material, Scene};
///
/// let mut scene = Scene::new();
/// let grey = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
/// scene.add_sphere(Vec3::new(0.0, 0.0, -5.0), 1.0, grey);
/// let accel = Accel::build(&scene)?;
/// let camera = Camera::look_at(Vec3::ZERO, Vec3::NEG_Z, Vec3::Y, 90.0).frame(64, 64)?;
/// let cones = camera_cones(&camera, 64, 64, [16, 2], accel.primitives()).unwrap(); // ok: pinhole
/// // The sphere lies in the middle of the image, away from its corners.
/// let middle = tile_direction(&camera, 64, 64, 24, 32, [16, 2]);
/// let corner = tile_direction(&camera, 64, 64, 0, 0, [16, 2]);
/// assert_eq!(camera_candidates(&cones, middle), 1);
/// assert_eq!(camera_candidates(&cones, corner), 0);
/// # Ok::<(), prism_core::Error>(())
/// ```
pub fn camera_cones(
    camera: &GpuCamera,
    width: u32,
    height: u32,
    tile: [u32; 2],
    prims: &[Primitive],
) -> Option<Vec<[f32; 4]>> {
    if prims.len() > CAMERA_BOUNDS_MAX_PRIMS {
        return None;
    }
    let Some(tile_angle) = tile_half_angle(camera, width, height, tile)? else {
        // Tiles wider than their distance: every primitive is a candidate.
        return Some(
            prims
                .iter()
                .map(|_| [0.0, 0.0, 0.0, CAMERA_CONE_ALL])
                .collect(),
        );
    };
    let eye = dvec(camera.origin_lens);
    let mut cones = Vec::with_capacity(prims.len());
    for p in prims {
        let (centre, r) = bounding_sphere(p);
        if !(centre.is_finite() && r.is_finite()) {
            return None;
        }
        let to = centre - eye;
        let dist = to.length();
        let rho = r + CAMERA_BOUNDS_MARGIN * (r + dist);
        let angle = if dist > rho {
            libm::asin(rho / dist) + tile_angle
        } else {
            core::f64::consts::PI
        };
        if angle >= core::f64::consts::PI {
            cones.push([0.0, 0.0, 0.0, CAMERA_CONE_ALL]);
            continue;
        }
        let axis = to / dist;
        // The least cosine, in f32 rounded down.
        let cos = libm::cos(angle) - 1e-6;
        let mut threshold = cos as f32;
        if threshold as f64 > cos {
            threshold = threshold.next_down();
        }
        cones.push([axis.x as f32, axis.y as f32, axis.z as f32, threshold]);
    }
    Some(cones)
}

/// The half angle, in radians, of the cone from the eye that holds every
/// camera ray of a tile of `tile[0]` x `tile[1]` pixels of a `width` x
/// `height` image seen through the pinhole `camera`, around the tile's
/// direction ([`tile_direction`]); [`camera_cones`]'s tiles. `Some(None)` when
/// tiles are wider than their distance (no cone holds them), `None` when the
/// camera has a lens, the image or the tile is empty, or the camera is not
/// finite or degenerate.
pub fn tile_half_angle(
    camera: &GpuCamera,
    width: u32,
    height: u32,
    tile: [u32; 2],
) -> Option<Option<f64>> {
    if camera.origin_lens[3] != 0.0 || width == 0 || height == 0 || tile[0] == 0 || tile[1] == 0 {
        return None;
    }
    let eye = dvec(camera.origin_lens);
    let (lower_left, h, v) = (
        dvec(camera.lower_left),
        dvec(camera.horizontal),
        dvec(camera.vertical),
    );
    if !(eye.is_finite() && lower_left.is_finite() && h.is_finite() && v.is_finite()) {
        return None;
    }
    // The image plane: the points corner + s h + t v, `depth` from the eye.
    let corner = lower_left - eye;
    let normal = h.cross(v);
    let depth = (corner.dot(normal) / normal.length()).abs();
    if !(depth > 0.0 && depth.is_finite()) {
        return None;
    }
    // A tile's half angle: a pixel ray of the tile meets the plane within
    // `half` of the tile's centre, and two points of the plane `d` apart are
    // seen from the eye at most asin(d / depth) apart (the law of sines; each
    // lies at least `depth` away). The rounding of a ray's direction moves its
    // point on the plane by at most `shift` (an error e of the direction moves
    // it by e (1 + |d| / depth) for d towards a point of the plane, largest at
    // the image's corners).
    let pad = CAMERA_BOUNDS_PIXEL_PAD;
    let half = (tile[0] as f64 * 0.5 + pad) / width as f64 * h.length()
        + (tile[1] as f64 * 0.5 + pad) / height as f64 * v.length();
    let error = DIRECTION_ROUNDING_ULPS
        * f32::EPSILON as f64
        * (max_abs(lower_left) + max_abs(h) + max_abs(v) + max_abs(eye))
        * 1.8; // > sqrt(3): the component bound as a length
    let stretch = [corner, corner + h, corner + v, corner + h + v]
        .iter()
        .map(|d| d.length() / depth)
        .fold(0.0f64, f64::max);
    let spread = (half + error * (1.0 + stretch)) / depth;
    if spread.is_nan() || spread >= 1.0 {
        return Some(None);
    }
    Some(Some(libm::asin(spread) + CAMERA_BOUNDS_SLACK))
}

/// A reflection mask that lists nothing: the mirror rays of the tile walk the
/// tree ([`reflection_candidates`]).
pub const REFLECTION_WALK: u64 = u64::MAX;
/// How far the mirror bounds are widened: hit points by this much of the
/// scene's scale around them, directions by this many radians, and each
/// bounding sphere as the camera's are ([`CAMERA_BOUNDS_MARGIN`]); some 100
/// times the f32 rounding of a hit point, a normal and a reflected direction.
pub const REFLECTION_BOUNDS_MARGIN: f64 = 1e-4;
/// Mirror cones wider than this (radians) are not worth a list: the tile's
/// mirror rays walk the tree.
pub const REFLECTION_MAX_ANGLE: f64 = 1.0;

/// The bounding sphere of each primitive of `prims` as `[centre, radius]` in
/// f32 (the radius rounded up), for the GPU kernels' [`reflection_candidates`]
/// (whose margins cover the centre's rounding).
pub fn bounding_balls(prims: &[Primitive]) -> Vec<[f32; 4]> {
    prims
        .iter()
        .map(|p| {
            let (c, r) = bounding_sphere(p);
            let mut radius = r as f32;
            if (radius as f64) < r {
                radius = radius.next_up();
            }
            [c.x as f32, c.y as f32, c.z as f32, radius]
        })
        .collect()
}

/// Where the rays of a tile's cone meet one sphere.
enum ConeHits {
    /// No ray of the cone meets it.
    Missed,
    /// Every hit lies within `delta` of `at` (margins included).
    Within { at: DVec3, delta: f64 },
    /// The eye lies inside or on it, or it is not finite: no bound.
    Unbounded,
}

/// Where the rays from `eye` in the cone of unit axis `axis` and half angle
/// `tile_angle` first meet the sphere of `centre` and `radius`: for a sphere
/// seen from outside, a ray meets it at `t = b - sqrt(b^2 - c)`, `b = d . (C -
/// eye)`, `c = |C - eye|^2 - R^2`, decreasing in `b`, and `b` ranges over the
/// cone's angles to `C`; the hits lie within half the range of `t` plus
/// `t_max` times the cone's angle of the point at `t_mid` on the axis, widened
/// by [`REFLECTION_BOUNDS_MARGIN`] of the scene's scale.
fn cone_hits_sphere(
    eye: DVec3,
    axis: DVec3,
    tile_angle: f64,
    centre: DVec3,
    radius: f64,
) -> ConeHits {
    let margin = REFLECTION_BOUNDS_MARGIN;
    let to = centre - eye;
    let dist = to.length();
    if !(dist > radius * (1.0 + margin) && dist.is_finite()) {
        return ConeHits::Unbounded;
    }
    // The range of b over the cone; the tangent rays have b = sqrt(c).
    let alpha = libm::acos((to.dot(axis) / dist).clamp(-1.0, 1.0));
    let b_hi = dist * libm::cos((alpha - tile_angle).max(0.0));
    let b_lo = dist * libm::cos((alpha + tile_angle).min(core::f64::consts::PI));
    let c = (dist - radius) * (dist + radius);
    let tangent = libm::sqrt(c);
    if b_hi < tangent * (1.0 - margin) {
        return ConeHits::Missed;
    }
    let t_of = |b: f64| c / (b + libm::sqrt((b * b - c).max(0.0)));
    let t_min = t_of(b_hi.max(tangent));
    let t_max = if b_lo > tangent { t_of(b_lo) } else { tangent };
    let t_mid = 0.5 * (t_min + t_max);
    let at = eye + t_mid * axis;
    let scale = eye.abs().max_element() + t_max + dist + radius;
    let delta = 0.5 * (t_max - t_min) + t_max * tile_angle + margin * scale;
    ConeHits::Within { at, delta }
}

/// Where a tile's camera rays hit one of its camera candidates: every hit on
/// the sphere of `centre` and `radius` lies within `delta` of `at`.
struct HitBall {
    at: DVec3,
    delta: f64,
    centre: DVec3,
    radius: f64,
}

/// The [`HitBall`]s of the camera candidates `camera_mask` (spheres) of the
/// tile seen from `eye` in the cone of unit axis `dir` and half angle
/// `tile_angle`, for those the cone meets; `None` when the tile's bounce rays
/// walk the tree instead: a scene of more than [`CAMERA_BOUNDS_MAX_PRIMS`], a
/// cone of [`REFLECTION_MAX_ANGLE`] or more, an eye or axis that is not
/// finite, a triangle among the candidates or an eye inside or on a sphere.
fn camera_hit_balls(
    eye: Vec3,
    dir: Vec3,
    tile_angle: f64,
    camera_mask: u64,
    prims: &[Primitive],
) -> Option<Vec<HitBall>> {
    if prims.len() > CAMERA_BOUNDS_MAX_PRIMS
        || tile_angle.is_nan()
        || tile_angle >= REFLECTION_MAX_ANGLE
    {
        return None;
    }
    let (eye, axis) = (eye.as_dvec3(), dir.as_dvec3().normalize_or_zero());
    if !(eye.is_finite() && axis != DVec3::ZERO) {
        return None;
    }
    let mut hits = Vec::new();
    let mut left = camera_mask;
    while left != 0 {
        let slot = left.trailing_zeros() as usize;
        left &= left - 1;
        let Some(p) = prims.get(slot) else { continue };
        if p.kind() != crate::gpu::KIND_SPHERE {
            return None;
        }
        let (centre, radius) = bounding_sphere(p);
        match cone_hits_sphere(eye, axis, tile_angle, centre, radius) {
            ConeHits::Missed => {}
            ConeHits::Unbounded => return None,
            ConeHits::Within { at, delta } => hits.push(HitBall {
                at,
                delta,
                centre,
                radius,
            }),
        }
    }
    Some(hits)
}

/// The slots (bit `i` for slot `i`) of the primitives a mirror ray of a tile
/// may hit, or [`REFLECTION_WALK`]: the Whitted integrator's first bounce off
/// a camera hit of the tile, whose camera candidates are `camera_mask`, seen
/// from `eye` in the cone of unit axis `dir` and half angle `tile_angle`
/// ([`tile_direction`], [`tile_half_angle`]).
///
/// A mirror ray starts where a camera ray of the tile hits one of its
/// candidates. For a sphere of centre `C` and radius `R` seen from outside,
/// the rays of the cone meet it at distances `t = b - sqrt(b^2 - c)`, `b = d .
/// (C - eye)`, `c = |C - eye|^2 - R^2`, decreasing in `b`, and `b` ranges
/// over the cone's angles to `C`: the hit points lie within `delta` = half
/// the range of `t` plus `t_max` times the cone's angle of the point at
/// `t_mid` on the axis, their unit normals within `psi = asin(delta / (R -
/// delta))` of the normal towards that point, and their mirror directions
/// within `phi = tile_angle + 2 psi` of the axis's mirror image (a mirror
/// turns a direction by as much as the incoming one turns, and by twice as
/// much as its normal turns). A primitive can then only be met if its
/// bounding sphere, widened by `delta`, comes within `phi` of that axis as
/// seen from that point. A camera candidate that is a triangle, an eye
/// inside or on a sphere, or bounds wider than [`REFLECTION_MAX_ANGLE`] give
/// [`REFLECTION_WALK`]. The bounds hold for every ray of the cone, whichever
/// candidate it hits first, so the mask holds every hit of every mirror ray
/// of the tile: the listed closest hit is the tree's, except where two
/// primitives tie at exactly the same `t`.
pub fn reflection_candidates(
    eye: Vec3,
    dir: Vec3,
    tile_angle: f64,
    camera_mask: u64,
    prims: &[Primitive],
) -> u64 {
    let Some(hits) = camera_hit_balls(eye, dir, tile_angle, camera_mask, prims) else {
        return REFLECTION_WALK;
    };
    let axis = dir.as_dvec3().normalize_or_zero();
    let margin = REFLECTION_BOUNDS_MARGIN;
    let mut mask = 0u64;
    for HitBall {
        at,
        delta,
        centre,
        radius,
    } in hits
    {
        let out = at - centre;
        let out_len = out.length();
        if !(delta < 0.5 * radius && out_len > 0.0) {
            return REFLECTION_WALK;
        }
        let psi = libm::asin((delta / (radius - delta)).min(1.0));
        let normal = out / out_len;
        let mirror = axis - 2.0 * axis.dot(normal) * normal;
        let phi = tile_angle + 2.0 * psi + margin;
        if phi.is_nan() || phi >= REFLECTION_MAX_ANGLE {
            return REFLECTION_WALK;
        }
        for (k, q) in prims.iter().enumerate() {
            let (ball, r) = bounding_sphere(q);
            let w = ball - at;
            let len = w.length();
            let reach = r + delta + margin * (r + len);
            let seen = len <= reach || {
                let angle = phi + libm::asin(reach / len);
                angle >= core::f64::consts::PI || w.dot(mirror) >= len * libm::cos(angle)
            };
            if seen {
                mask |= 1u64 << k;
            }
        }
    }
    mask
}

/// A shadow mask that lists nothing: the shadow rays of the tile's camera
/// hits take the light's candidate lists ([`crate::point_grid`]) or walk the
/// tree ([`shadow_candidates`]).
pub const SHADOW_WALK: u64 = u64::MAX;
/// A tile's shadow rays take its list only if it holds at most this many
/// primitives: a longer list costs more tests than the light's cell lookup.
pub const SHADOW_MAX_CANDIDATES: u32 = 4;

/// The slots (bit `i` for slot `i`) of the primitives that may block a shadow
/// ray towards the point light at `light` from a camera hit of a tile, or
/// [`SHADOW_WALK`]: the tile's camera candidates are `camera_mask`, seen from
/// `eye` in the cone of unit axis `dir` and half angle `tile_angle`
/// ([`tile_direction`], [`tile_half_angle`]).
///
/// The camera hits on each candidate sphere lie within `delta` of a point
/// `at` (as for [`reflection_candidates`]), and a shadow ray from a point
/// `p` of that ball runs along the segment from `p` to the light, which lies
/// within `delta` of the segment from `at` to the light (the points `(1 - s)
/// p + s L` and `(1 - s) at + s L` are `(1 - s) |p - at|` apart). A primitive
/// can then only block it if its bounding sphere, widened by `delta` and by
/// [`REFLECTION_BOUNDS_MARGIN`] of the lengths involved (some 100 times the
/// f32 rounding of the hit point and the shadow ray's direction), meets that
/// segment. A camera candidate that is a triangle, an eye inside or on a
/// sphere, a light or bounds that are not finite, or more than
/// [`SHADOW_MAX_CANDIDATES`] primitives give [`SHADOW_WALK`]. The bounds hold
/// for every ray of the cone, whichever candidate it hits first, so the mask
/// holds every primitive that blocks any of the tile's shadow rays:
/// [`occluded_listed`] over it answers as testing every primitive does (the
/// tree's answer, but for the slab test's face-plane convention, as
/// [`crate::point_grid`]'s lists).
pub fn shadow_candidates(
    eye: Vec3,
    dir: Vec3,
    tile_angle: f64,
    camera_mask: u64,
    prims: &[Primitive],
    light: Vec3,
) -> u64 {
    let light = light.as_dvec3();
    if !light.is_finite() {
        return SHADOW_WALK;
    }
    let Some(hits) = camera_hit_balls(eye, dir, tile_angle, camera_mask, prims) else {
        return SHADOW_WALK;
    };
    let margin = REFLECTION_BOUNDS_MARGIN;
    let mut mask = 0u64;
    for HitBall { at, delta, .. } in hits {
        let segment = light - at;
        let length = segment.length();
        for (k, q) in prims.iter().enumerate() {
            let (ball, r) = bounding_sphere(q);
            let w = ball - at;
            // The point of the segment closest to the ball's centre.
            let s = if length > 0.0 {
                (w.dot(segment) / (length * length)).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let gap = (w - s * segment).length();
            let reach = r + delta + margin * (r + w.length() + length);
            if gap <= reach {
                mask |= 1u64 << k;
            }
        }
    }
    if mask.count_ones() > SHADOW_MAX_CANDIDATES {
        return SHADOW_WALK;
    }
    mask
}

/// The unit direction of the ray through the centre of the tile of `tile[0]`
/// x `tile[1]` pixels whose first pixel is `(x0, y0)`, the direction
/// [`camera_cones`] measures tiles from: the GPU kernels compute it with
/// approximate reciprocals and square roots, which [`CAMERA_BOUNDS_SLACK`]
/// covers.
pub fn tile_direction(
    camera: &GpuCamera,
    width: u32,
    height: u32,
    x0: u32,
    y0: u32,
    tile: [u32; 2],
) -> Vec3 {
    let v3 = |a: [f32; 4]| Vec3::new(a[0], a[1], a[2]);
    let s = (x0 as f32 + tile[0] as f32 * 0.5) / width as f32;
    let t = 1.0 - (y0 as f32 + tile[1] as f32 * 0.5) / height as f32;
    let target = v3(camera.lower_left) + s * v3(camera.horizontal) + t * v3(camera.vertical);
    (target - v3(camera.origin_lens)).normalize_or_zero()
}

/// The slots (bit `i` for slot `i`) of the primitives a camera ray of the tile
/// whose unit direction is `dir` ([`tile_direction`]) may hit, from `cones`
/// ([`camera_cones`], at most 64).
#[inline]
pub fn camera_candidates(cones: &[[f32; 4]], dir: Vec3) -> u64 {
    cones
        .iter()
        .take(CAMERA_BOUNDS_MAX_PRIMS)
        .enumerate()
        .filter(|(_, c)| Vec3::new(c[0], c[1], c[2]).dot(dir) >= c[3])
        .fold(0u64, |mask, (i, _)| mask | (1u64 << i))
}

/// The closest hit of `ray` among the primitives of `candidates` (bit `i` for
/// slot `i` of `prims`), tested in slot order; `prim` of the result is the
/// slot, and a miss has `prim == NO_PRIM` and `t == +inf`, as the tree's
/// closest hit. Slots out of range are skipped.
pub fn closest_hit_listed(prims: &[Primitive], candidates: u64, ray: &Ray) -> Hit {
    let pre = RayPre::new(ray);
    let mut best = Hit {
        t: ray.tmax,
        ..Hit::MISS
    };
    let mut left = candidates;
    while left != 0 {
        let slot = left.trailing_zeros() as usize;
        left &= left - 1;
        let Some(p) = prims.get(slot) else { continue };
        if let Some((t, u, v)) = ray_primitive(&pre, p, ray.tmin, best.t) {
            best = Hit::new(t, u, v, slot as u32, 0);
        }
    }
    if !best.is_hit() {
        best.t = f32::INFINITY;
    }
    best
}

/// Whether anything among the primitives of `candidates` (bit `i` for slot
/// `i` of `prims`) lies on `ray`, tested in slot order; slots out of range are
/// skipped. Over a tile's [`shadow_candidates`], the tree's any-hit answer.
pub fn occluded_listed(prims: &[Primitive], candidates: u64, ray: &Ray) -> bool {
    let pre = RayPre::new(ray);
    let mut left = candidates;
    while left != 0 {
        let slot = left.trailing_zeros() as usize;
        left &= left - 1;
        let Some(p) = prims.get(slot) else { continue };
        if ray_primitive(&pre, p, ray.tmin, ray.tmax).is_some() {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::camera::{Camera, camera_ray};
    use crate::traverse::{any_hit, closest_hit};
    use crate::{Accel, Material, Scene};
    use alloc::vec;
    use glam::Vec3;
    use proptest::prelude::*;

    fn v3(r: f32) -> impl Strategy<Value = Vec3> {
        (-r..r, -r..r, -r..r).prop_map(|(x, y, z)| Vec3::new(x, y, z))
    }

    /// Spheres and triangles, and a big ground sphere when `ground`; `None` if
    /// the scene is refused (a degenerate triangle).
    fn scene(spheres: &[(Vec3, f32)], tris: &[(Vec3, Vec3, Vec3)], ground: bool) -> Option<Accel> {
        let mut s = Scene::new();
        let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
        for &(c, r) in spheres {
            s.add_sphere(c, r, m);
        }
        for &(a, b, c) in tris {
            s.add_triangle(a, b, c, m);
        }
        if ground {
            s.add_sphere(Vec3::new(0.0, -1004.0, 0.0), 1000.0, m);
        }
        Accel::build(&s).ok()
    }

    /// Where in a pixel the checks sample its camera rays: the centre and the
    /// four corners a jittered sample reaches.
    const PIXEL_SAMPLES: [(f32, f32); 5] = {
        let edge = 1.0f32.next_down(); // a jitter's largest
        [
            (0.5, 0.5),
            (0.0, 0.0),
            (edge, 0.0),
            (0.0, edge),
            (edge, edge),
        ]
    };

    /// The camera ray of pixel (x, y) with jitter (jx, jy), as render_pixel makes it.
    fn pixel_ray(cam: &GpuCamera, w: u32, h: u32, x: u32, y: u32, jx: f32, jy: f32) -> Ray {
        let s = (x as f32 + jx) / w as f32;
        let t = 1.0 - (y as f32 + jy) / h as f32;
        camera_ray(cam, s, t, 0.0, 0.0)
    }

    /// Every pixel whose camera ray (at the pixel's centre and its corners)
    /// hits a primitive has that primitive among its tile's candidates (tiles
    /// of `tile` pixels, cones made for tiles of `cone_tile`), and the listed
    /// closest hit is the tree's. Returns the number of hits seen.
    fn check_scene(
        accel: &Accel,
        cam: &GpuCamera,
        w: u32,
        h: u32,
        tile: [u32; 2],
        cone_tile: [u32; 2],
    ) -> Result<usize, TestCaseError> {
        let prims = accel.primitives();
        let cones = camera_cones(cam, w, h, cone_tile, prims).unwrap(); // ok: pinhole, small scene
        let mut hits = 0;
        for y in 0..h {
            for x in 0..w {
                let (x0, y0) = (x - x % tile[0], y - y % tile[1]);
                let listed = camera_candidates(&cones, tile_direction(cam, w, h, x0, y0, tile));
                for (jx, jy) in PIXEL_SAMPLES {
                    let ray = pixel_ray(cam, w, h, x, y, jx, jy);
                    let pre = RayPre::new(&ray);
                    for (slot, p) in prims.iter().enumerate() {
                        if ray_primitive(&pre, p, ray.tmin, ray.tmax).is_some() {
                            hits += 1;
                            prop_assert!(
                                listed & (1u64 << slot) != 0,
                                "pixel ({}, {}) jitter ({}, {}) hits slot {}, not listed",
                                x,
                                y,
                                jx,
                                jy,
                                slot
                            );
                        }
                    }
                    let tree = closest_hit(
                        accel.nodes(),
                        prims,
                        crate::heightfield::Heightfields::NONE,
                        &ray,
                    );
                    let list = closest_hit_listed(prims, listed, &ray);
                    prop_assert_eq!(list, tree, "pixel ({}, {})", x, y);
                }
            }
        }
        Ok(hits)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

        /// Random scenes seen by random pinhole cameras from inside and
        /// outside them, at small resolutions (whose pixels are wide), in
        /// tiles of several shapes.
        #[test]
        fn every_hit_is_a_candidate_of_its_tile(
            spheres in prop::collection::vec((v3(4.0), 0.05f32..1.5), 1..10),
            tris in prop::collection::vec((v3(4.0), v3(4.0), v3(4.0)), 0..6),
            ground in any::<bool>(),
            from in v3(8.0),
            at in v3(2.0),
            fov in 20.0f32..150.0,
            w in 8u32..40,
            h in 8u32..40,
            shape in 0usize..3,
        ) {
            let Some(accel) = scene(&spheres, &tris, ground) else { return Ok(()) };
            let Ok(cam) = Camera::look_at(from, at, Vec3::Y, fov).frame(w, h) else { return Ok(()) };
            // Warp-sized tiles, and the GPU kernels' mask tiles.
            let tile = [[16, 2], [32, 1], [CAMERA_MASK_TILE, CAMERA_MASK_TILE]][shape];
            check_scene(&accel, &cam, w, h, tile, tile)?;
        }
    }

    /// The images and tiles the bounce masks are checked at: small tiles, and
    /// the GPU kernels' mask tiles.
    const BOUNCE_IMAGES: [(u32, u32, [u32; 2]); 3] = [
        (48, 40, [4, 4]),
        (64, 16, [16, 2]),
        (1024, 768, [CAMERA_MASK_TILE; 2]),
    ];

    /// Every pixel of a small image, and 3,000 pseudo-random pixels of a
    /// large one.
    fn pixels_to_check(w: u32, h: u32, seed: u64) -> Vec<(u32, u32)> {
        if w * h <= 4096 {
            return (0..h).flat_map(|y| (0..w).map(move |x| (x, y))).collect();
        }
        let mut state = seed | 1;
        (0..3000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                ((state % w as u64) as u32, ((state >> 32) % h as u64) as u32)
            })
            .collect()
    }

    /// The point of the camera hit `hit` of `ray`, its unit normal facing the
    /// ray, and the spawn distance of rays leaving it (trace_whitted's
    /// arithmetic), with the primitive's size.
    fn camera_hit_surface(prims: &[Primitive], ray: &Ray, hit: &Hit) -> (Vec3, Vec3, f32, f32) {
        use crate::integrator::{primitive_size, spawn_tmin};
        let prim = &prims[hit.prim as usize];
        let row = |r: [f32; 4]| Vec3::new(r[0], r[1], r[2]);
        let p = ray.at(hit.t);
        let n = ((p - row(prim.a)) * prim.b[1]).normalize_or(Vec3::Y);
        let n = if n.dot(ray.dir) < 0.0 { n } else { -n };
        (p, n, spawn_tmin(p, ray.origin), primitive_size(prim))
    }

    /// The Whitted integrator's first mirror ray off the camera hit `hit` of
    /// `ray` (trace_whitted's arithmetic).
    fn mirror_ray(prims: &[Primitive], ray: &Ray, hit: &Hit) -> Ray {
        let (p, n, spawn, size) = camera_hit_surface(prims, ray, hit);
        let r = crate::material::reflect(ray.dir, n);
        let tmin = spawn + crate::integrator::surface_margin(size, r.dot(n));
        Ray::segment(p, r, tmin, f32::INFINITY)
    }

    /// Every mirror ray of every pixel of a tile (the pixel's centre and
    /// corners) that the tile's reflection mask lists, hits only listed
    /// primitives: the listed closest hit is the tree's. Returns how many
    /// mirror rays were answered by a list.
    fn check_mirrors(
        accel: &Accel,
        cam: &GpuCamera,
        (w, h): (u32, u32),
        tile: [u32; 2],
        pixels: &[(u32, u32)],
    ) -> Result<usize, TestCaseError> {
        let prims = accel.primitives();
        let cones = camera_cones(cam, w, h, tile, prims).unwrap(); // ok: pinhole, small scene
        // Tiles wider than their distance have no cone, and no reflection masks.
        let Some(Some(angle)) = tile_half_angle(cam, w, h, tile) else {
            return Ok(0);
        };
        let eye = Vec3::new(cam.origin_lens[0], cam.origin_lens[1], cam.origin_lens[2]);
        let mut listed = 0;
        for &(x, y) in pixels {
            let (x0, y0) = (x - x % tile[0], y - y % tile[1]);
            let dir = tile_direction(cam, w, h, x0, y0, tile);
            let camera_mask = camera_candidates(&cones, dir);
            let mask = reflection_candidates(eye, dir, angle, camera_mask, prims);
            if mask == REFLECTION_WALK {
                continue;
            }
            for (jx, jy) in PIXEL_SAMPLES {
                let ray = pixel_ray(cam, w, h, x, y, jx, jy);
                let hit = closest_hit(
                    accel.nodes(),
                    prims,
                    crate::heightfield::Heightfields::NONE,
                    &ray,
                );
                if !hit.is_hit() {
                    continue;
                }
                let mirror = mirror_ray(prims, &ray, &hit);
                let tree = closest_hit(
                    accel.nodes(),
                    prims,
                    crate::heightfield::Heightfields::NONE,
                    &mirror,
                );
                if tree.is_hit() {
                    prop_assert!(
                        mask & (1u64 << tree.prim) != 0,
                        "pixel ({}, {}) jitter ({}, {}): the mirror ray hits slot {}, not in {:#x}",
                        x,
                        y,
                        jx,
                        jy,
                        tree.prim,
                        mask
                    );
                }
                prop_assert_eq!(
                    closest_hit_listed(prims, mask, &mirror),
                    tree,
                    "pixel ({}, {})",
                    x,
                    y
                );
                listed += 1;
            }
        }
        Ok(listed)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// Random spheres over a ground sphere, seen from above the ground by
        /// random pinhole cameras, in small tiles and in the GPU kernels' mask
        /// tiles (every pixel of a small image, and a sample of a large one).
        #[test]
        fn every_mirror_hit_is_a_candidate_of_its_tile(
            spheres in prop::collection::vec((v3(4.0), 0.05f32..1.5), 1..10),
            from in v3(6.0),
            at in v3(2.0),
            fov in 20.0f32..120.0,
            shape in 0usize..3,
            seed in any::<u64>(),
        ) {
            let Some(accel) = scene(&spheres, &[], true) else { return Ok(()) };
            let (w, h, tile) = BOUNCE_IMAGES[shape];
            let Ok(cam) = Camera::look_at(from, at, Vec3::Y, fov).frame(w, h) else { return Ok(()) };
            let pixels = pixels_to_check(w, h, seed);
            check_mirrors(&accel, &cam, (w, h), tile, &pixels)?;
        }
    }

    /// The Whitted integrator's shadow ray towards `light` off the camera hit
    /// `hit` of `ray` (whitted_local's arithmetic).
    fn shadow_ray(prims: &[Primitive], ray: &Ray, hit: &Hit, light: Vec3) -> Ray {
        let (p, n, spawn, size) = camera_hit_surface(prims, ray, hit);
        let to_light = light - p;
        let dist = to_light.length();
        let l = to_light * (1.0 / dist);
        let tmin = spawn + crate::integrator::surface_margin(size, l.dot(n));
        Ray::segment(p, l, tmin, dist)
    }

    /// Every primitive that blocks the shadow ray of a camera hit of a pixel
    /// of a tile (the pixel's centre and corners) is in the tile's shadow
    /// mask, when it lists them, and the listed answer is the tree's. Returns
    /// how many shadow rays were answered by a list, and how many of those
    /// were blocked.
    fn check_shadows(
        accel: &Accel,
        cam: &GpuCamera,
        (w, h): (u32, u32),
        tile: [u32; 2],
        pixels: &[(u32, u32)],
        light: Vec3,
    ) -> Result<(usize, usize), TestCaseError> {
        let prims = accel.primitives();
        let cones = camera_cones(cam, w, h, tile, prims).unwrap(); // ok: pinhole, small scene
        let Some(Some(angle)) = tile_half_angle(cam, w, h, tile) else {
            return Ok((0, 0));
        };
        let eye = Vec3::new(cam.origin_lens[0], cam.origin_lens[1], cam.origin_lens[2]);
        let (mut listed, mut blocked) = (0, 0);
        for &(x, y) in pixels {
            let (x0, y0) = (x - x % tile[0], y - y % tile[1]);
            let dir = tile_direction(cam, w, h, x0, y0, tile);
            let camera_mask = camera_candidates(&cones, dir);
            let mask = shadow_candidates(eye, dir, angle, camera_mask, prims, light);
            if mask == SHADOW_WALK {
                continue;
            }
            prop_assert!(mask.count_ones() <= SHADOW_MAX_CANDIDATES);
            for (jx, jy) in PIXEL_SAMPLES {
                let ray = pixel_ray(cam, w, h, x, y, jx, jy);
                let hit = closest_hit(
                    accel.nodes(),
                    prims,
                    crate::heightfield::Heightfields::NONE,
                    &ray,
                );
                if !hit.is_hit() {
                    continue;
                }
                let shadow = shadow_ray(prims, &ray, &hit, light);
                let pre = RayPre::new(&shadow);
                for (slot, p) in prims.iter().enumerate() {
                    if ray_primitive(&pre, p, shadow.tmin, shadow.tmax).is_some() {
                        prop_assert!(
                            mask & (1u64 << slot) != 0,
                            "pixel ({}, {}) jitter ({}, {}): slot {} blocks the shadow ray, not in {:#x}",
                            x,
                            y,
                            jx,
                            jy,
                            slot,
                            mask
                        );
                    }
                }
                let tree = any_hit(
                    accel.nodes(),
                    prims,
                    crate::heightfield::Heightfields::NONE,
                    &shadow,
                );
                prop_assert_eq!(
                    occluded_listed(prims, mask, &shadow),
                    tree,
                    "pixel ({}, {})",
                    x,
                    y
                );
                listed += 1;
                blocked += usize::from(tree);
            }
        }
        Ok((listed, blocked))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// Random spheres over a ground sphere and a random light, seen by
        /// random pinhole cameras, in small tiles and in the GPU kernels' mask
        /// tiles (every pixel of a small image, and a sample of a large one).
        #[test]
        fn every_shadow_blocker_is_a_candidate_of_its_tile(
            spheres in prop::collection::vec((v3(4.0), 0.05f32..1.5), 1..10),
            from in v3(6.0),
            at in v3(2.0),
            light in v3(6.0),
            fov in 20.0f32..120.0,
            shape in 0usize..3,
            seed in any::<u64>(),
        ) {
            let Some(accel) = scene(&spheres, &[], true) else { return Ok(()) };
            let (w, h, tile) = BOUNCE_IMAGES[shape];
            let Ok(cam) = Camera::look_at(from, at, Vec3::Y, fov).frame(w, h) else { return Ok(()) };
            let pixels = pixels_to_check(w, h, seed);
            check_shadows(&accel, &cam, (w, h), tile, &pixels, light)?;
        }
    }

    /// whitted19's spheres (prism's built-in scene) and camera, at 2048 x 2048.
    fn whitted19_at_2048() -> (Accel, GpuCamera, (u32, u32)) {
        let mut s = Scene::new();
        let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
        s.add_sphere(Vec3::new(0.0, -1002.0, 0.0), 1000.0, m);
        for (z, y, x0, n) in [
            (-4.0, -0.25, -1.5, 7),
            (-3.0, 0.25, -1.25, 6),
            (-2.0, 0.75, -1.0, 5),
        ] {
            for i in 0..n {
                s.add_sphere(Vec3::new(x0 + 0.5 * i as f32, y, z), 0.25, m);
            }
        }
        let accel = Accel::build(&s).unwrap(); // ok: a valid scene
        let (w, h) = (2048, 2048);
        let cam = Camera::look_at(Vec3::new(0.0, 0.0, 1.0), Vec3::ZERO, Vec3::Y, 90.0)
            .frame(w, h)
            .unwrap(); // ok: a valid camera
        (accel, cam, (w, h))
    }

    /// Over whitted19's mask tiles at 2048 x 2048 that have one camera
    /// candidate: how many there are, how many `mask_of` (eye, tile direction,
    /// half angle, camera mask) lists (not [`REFLECTION_WALK`] or
    /// [`SHADOW_WALK`], both `u64::MAX`), and their candidates in all.
    fn whitted19_ground_tiles(
        accel: &Accel,
        cam: &GpuCamera,
        mask_of: impl Fn(Vec3, Vec3, f64, u64) -> u64,
    ) -> (u32, u32, u32) {
        let (w, h, tile) = (2048, 2048, [CAMERA_MASK_TILE; 2]);
        let cones = camera_cones(cam, w, h, tile, accel.primitives()).unwrap(); // ok: pinhole
        let angle = tile_half_angle(cam, w, h, tile).unwrap().unwrap(); // ok: narrow tiles
        let eye = Vec3::new(cam.origin_lens[0], cam.origin_lens[1], cam.origin_lens[2]);
        let (mut ground, mut listed, mut bits) = (0, 0, 0);
        for ty in 0..h / tile[1] {
            for tx in 0..w / tile[0] {
                let dir = tile_direction(cam, w, h, tx * tile[0], ty * tile[1], tile);
                let camera_mask = camera_candidates(&cones, dir);
                if camera_mask.count_ones() != 1 {
                    continue;
                }
                ground += 1;
                let mask = mask_of(eye, dir, angle, camera_mask);
                if mask != u64::MAX {
                    listed += 1;
                    bits += mask.count_ones();
                }
            }
        }
        (ground, listed, bits)
    }

    #[test]
    fn whitted19s_ground_shadows_list_few_primitives() {
        // The scene the shadow masks are for: most of whitted19's tiles with
        // one camera candidate list their shadow rays' blockers, and few of
        // them (at 2048 x 2048: 1567 of 2128 tiles, 1.2 candidates a tile, the
        // ground's own sphere among them; tiles near the horizon, whose hits
        // spread far, list too many); the lists hold every blocker of a sample
        // of pixels, some of whose shadow rays are blocked.
        let (accel, cam, (w, h)) = whitted19_at_2048();
        let tile = [CAMERA_MASK_TILE; 2];
        let light = Vec3::ONE;
        let (ground, listed, bits) =
            whitted19_ground_tiles(&accel, &cam, |eye, dir, angle, camera| {
                shadow_candidates(eye, dir, angle, camera, accel.primitives(), light)
            });
        assert!(
            listed * 10 >= ground * 7,
            "{listed} of {ground} one-candidate tiles listed"
        );
        assert!(bits <= 2 * listed, "{bits} candidates over {listed} tiles");
        let pixels: Vec<(u32, u32)> = (0..128)
            .flat_map(|i| (0..128).map(move |j| (i * 16 + 7, j * 16 + 11)))
            .collect();
        let (rays, blocked) = check_shadows(&accel, &cam, (w, h), tile, &pixels, light).unwrap(); // ok: the lists hold
        assert!(
            rays > 10_000 && blocked > 100,
            "{rays} listed shadow rays, {blocked} blocked"
        );
    }

    #[test]
    fn whitted19s_ground_mirrors_list_few_primitives() {
        // The scene the reflection masks are for: most of whitted19's tiles
        // with one camera candidate (the ground's, but for the top spheres')
        // list their mirror rays' candidates, and few of them (at 2048 x 2048:
        // 1910 of 2128 tiles, 1.6 candidates a tile; the top spheres' tiles
        // turn their mirror rays too widely and walk the tree).
        let (accel, cam, (w, h)) = whitted19_at_2048();
        let tile = [CAMERA_MASK_TILE; 2];
        let (ground, listed, bits) =
            whitted19_ground_tiles(&accel, &cam, |eye, dir, angle, camera| {
                reflection_candidates(eye, dir, angle, camera, accel.primitives())
            });
        assert!(
            listed * 10 >= ground * 8,
            "{listed} of {ground} one-candidate tiles listed"
        );
        assert!(bits <= 2 * listed, "{bits} candidates over {listed} tiles");
        // And the lists hold every mirror hit of a sample of pixels.
        let pixels: Vec<(u32, u32)> = (0..64)
            .flat_map(|i| (0..64).map(move |j| (i * 32 + 7, j * 32 + 19)))
            .collect();
        assert!(check_mirrors(&accel, &cam, (w, h), tile, &pixels).unwrap() > 1000); // ok: the lists hold
    }

    #[test]
    fn cones_for_smaller_tiles_miss_hits() {
        // A tile's cone must reach its edges: cones made for one-pixel tiles
        // leave out hits of the edge pixels of 16 x 2 tiles, so the check
        // above can fail.
        let accel = scene(
            &[
                (Vec3::new(0.0, 0.0, -5.0), 1.0),
                (Vec3::new(1.5, 0.5, -7.0), 0.7),
            ],
            &[(
                Vec3::new(-2.0, -1.0, -6.0),
                Vec3::new(-1.0, -1.0, -6.0),
                Vec3::new(-1.5, 0.0, -6.0),
            )],
            true,
        )
        .unwrap(); // ok: a valid scene
        let cam = Camera::look_at(Vec3::ZERO, Vec3::NEG_Z, Vec3::Y, 60.0)
            .frame(48, 48)
            .unwrap(); // ok: a valid camera
        assert!(check_scene(&accel, &cam, 48, 48, [16, 2], [16, 2]).unwrap() > 0); // ok: the cones hold
        assert!(check_scene(&accel, &cam, 48, 48, [16, 2], [1, 1]).is_err());
    }

    #[test]
    fn whitted19s_sky_has_no_candidates() {
        // The scene the cones are for: the upper rows of whitted19 (above the
        // small spheres; the ground lies below the horizon) list no primitive.
        let preset = {
            let mut s = Scene::new();
            let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
            s.add_sphere(Vec3::new(0.0, -1002.0, 0.0), 1000.0, m);
            s.add_sphere(Vec3::new(0.0, 0.75, -2.0), 0.25, m);
            s
        };
        let accel = Accel::build(&preset).unwrap(); // ok: a valid scene
        let cam = Camera::look_at(Vec3::new(0.0, 0.0, 1.0), Vec3::ZERO, Vec3::Y, 90.0)
            .frame(512, 512)
            .unwrap(); // ok: a valid camera
        let cones = camera_cones(&cam, 512, 512, [16, 2], accel.primitives()).unwrap(); // ok: pinhole
        let at = |x, y| camera_candidates(&cones, tile_direction(&cam, 512, 512, x, y, [16, 2]));
        assert_eq!(at(0, 0), 0);
        assert_eq!(at(496, 100), 0);
        assert_eq!(at(0, 510).count_ones(), 1);
        assert_eq!(at(256, 200).count_ones(), 1);
    }

    #[test]
    fn lens_cameras_and_large_scenes_get_no_cones() {
        let accel = scene(&[(Vec3::new(0.0, 0.0, -5.0), 1.0)], &[], false).unwrap(); // ok: a valid scene
        let pinhole = Camera::look_at(Vec3::ZERO, Vec3::NEG_Z, Vec3::Y, 60.0)
            .frame(16, 16)
            .unwrap(); // ok: a valid camera
        assert!(camera_cones(&pinhole, 16, 16, [16, 2], accel.primitives()).is_some());
        let mut lens = pinhole;
        lens.origin_lens[3] = 0.1;
        assert!(camera_cones(&lens, 16, 16, [16, 2], accel.primitives()).is_none());
        assert!(camera_cones(&pinhole, 0, 16, [16, 2], accel.primitives()).is_none());
        let many = vec![accel.primitives()[0]; CAMERA_BOUNDS_MAX_PRIMS + 1];
        assert!(camera_cones(&pinhole, 16, 16, [16, 2], &many).is_none());
        let mut bad = pinhole;
        bad.horizontal = [0.0; 4];
        assert!(camera_cones(&bad, 16, 16, [16, 2], accel.primitives()).is_none());
        // A camera inside a sphere sees it everywhere.
        let around = scene(&[(Vec3::ZERO, 3.0)], &[], false).unwrap(); // ok: a valid scene
        let cones = camera_cones(&pinhole, 16, 16, [16, 2], around.primitives()).unwrap(); // ok: pinhole
        assert_eq!(cones[0][3], CAMERA_CONE_ALL);
    }
}
