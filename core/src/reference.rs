//! Comparing hits with reference hits (Embree's, or another backend's).
//!
//! The rule of DESIGN.md: the same primitive with `t` within [`T_REL_TOLERANCE`]
//! relative is agreement; a different primitive at a `t` within that tolerance is
//! a *tie* (two surfaces that close along the ray are both right answers); a hit
//! where the reference misses, or a miss where it hits, is a mismatch.
//!
//! On instances (two-level scenes) the primitive and the instance must both
//! agree, and the floor of the tolerance grows with the rounding of the ray
//! carried into the instance's space ([`instance_scales`]).

use crate::ray::{Hit, Ray};
use crate::scene::{PrimRef, Scene};
use alloc::vec::Vec;
use glam::{Mat3A, Vec3A};

/// Relative tolerance on `t`.
pub const T_REL_TOLERANCE: f32 = 1e-4;
/// Absolute floor of the tolerance, in ulps of the origin's largest coordinate.
pub const ORIGIN_ULPS: f32 = 8.0;

/// How one hit compares with its reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agreement {
    /// Both miss, or same primitive at the same `t`.
    Match,
    /// Different primitives at the same `t` (within tolerance).
    Tie,
    /// Anything else.
    Mismatch,
}

/// The smallest `|t - t'|` the origin's own rounding allows along `ray`.
#[inline]
pub fn t_floor(ray: &Ray) -> f32 {
    let len = ray.dir.length();
    if len > 0.0 {
        ORIGIN_ULPS * f32::EPSILON * ray.origin.abs().max_element() / len
    } else {
        0.0
    }
}

/// Whether two distances agree: within [`T_REL_TOLERANCE`] of the larger, or within `floor`.
#[inline]
pub fn t_close(a: f32, b: f32, floor: f32) -> bool {
    (a - b).abs() <= (T_REL_TOLERANCE * a.abs().max(b.abs())).max(floor)
}

/// Compare `hit` (the answer for `ray`) with the reference `(t, prim)`
/// (`prim == Hit::NO_PRIM` for a miss).
#[inline]
pub fn classify(ray: &Ray, hit: &Hit, ref_t: f32, ref_prim: u32) -> Agreement {
    match (hit.is_hit(), ref_prim != Hit::NO_PRIM) {
        (false, false) => Agreement::Match,
        (true, true) if t_close(hit.t, ref_t, t_floor(ray)) => {
            if hit.prim == ref_prim {
                Agreement::Match
            } else {
                Agreement::Tie
            }
        }
        _ => Agreement::Mismatch,
    }
}

/// Per ray, the magnitude, in world units, whose rounding bounds how well the
/// `t` of its reference hit `(t, prim, instance)` on `scene` is known.
///
/// Every backend, like Embree, carries a ray into an instance's object space
/// in `f32`, and each rounds differently (Embree inverts the transform in
/// `f32`, Prism in `f64`), so the point a ray starts from in object space is
/// known to a few ulps of the largest magnitude involved: the origin's, the
/// instance's translation's (times its linear part's condition number over
/// 3, `|M| |M^-1|` in Frobenius norms, 1 for a rotation with a uniform
/// scale). Along a ray meeting the surface at angle `a` to its normal, such a
/// shift moves the hit by itself over `cos a`: a diffuse ray leaving a bunny
/// meets it again at `t = 4e-4` with Prism's and Embree's answers `8e-7`
/// apart, far above the relative tolerance there. The scale is that
/// magnitude over `cos a` (`cos a` of the reference hit's primitive in the
/// world, at least `1e-3`); [`classify_instanced`] takes [`ORIGIN_ULPS`] of
/// it as the floor of the tolerance. 0 for a miss, or a hit the scene cannot
/// resolve.
pub fn instance_scales(scene: &Scene, rays: &[Ray], reference: &[(f32, u32, u32)]) -> Vec<f32> {
    rays.iter()
        .zip(reference)
        .map(|(ray, &(t, prim, instance))| {
            instance_scale(scene, ray, t, prim, instance).unwrap_or(0.0)
        })
        .collect()
}

fn instance_scale(scene: &Scene, ray: &Ray, t: f32, prim: u32, instance: u32) -> Option<f32> {
    let inst = scene.instances().get(instance as usize)?;
    let g = scene.geometries().get(inst.geometry as usize)?;
    let m = inst.transform.matrix3;
    let inv = m.inverse();
    let fro = |a: Mat3A| {
        libm::sqrtf(
            a.x_axis.length_squared() + a.y_axis.length_squared() + a.z_axis.length_squared(),
        )
    };
    let condition = (fro(m) * fro(inv) / 3.0).max(1.0);
    let magnitude = ray
        .origin
        .abs()
        .max_element()
        .max(inst.transform.translation.abs().max_element() * condition);
    // The primitive's normal in object space, carried to the world by M^-T.
    let world_cos = |object_normal: glam::Vec3| {
        let n = (inv.transpose() * Vec3A::from(object_normal)).normalize_or_zero();
        n.dot(Vec3A::from(ray.dir.normalize_or_zero())).abs()
    };
    let cos = match g.primitive(prim)? {
        PrimRef::Triangle(k) => {
            let [a, b, c] = g.triangle(k)?;
            world_cos((b - a).cross(c - a))
        }
        PrimRef::Sphere(k) => {
            let cr = g.spheres().get(k as usize)?;
            let p = inst.transform.inverse().transform_point3(ray.at(t));
            world_cos(p - cr.truncate())
        }
        // The reference names no face: the least cosine of the three axes
        // a column face can face (the widest floor).
        PrimRef::Heightfield(_) => world_cos(glam::Vec3::X)
            .min(world_cos(glam::Vec3::Y))
            .min(world_cos(glam::Vec3::Z)),
    }
    .max(1e-3);
    let scale = magnitude / cos;
    Some(if scale.is_finite() { scale } else { f32::MAX })
}

/// [`classify`] for a two-level scene: the reference is `(t, prim,
/// instance)`, a hit of another primitive or instance at the same `t` is a
/// tie, and the absolute floor of the tolerance is the larger of the ray's
/// own ([`t_floor`]) and [`ORIGIN_ULPS`] ulps of `scale`, the ray's
/// [`instance_scales`] entry.
#[inline]
pub fn classify_instanced(
    ray: &Ray,
    hit: &Hit,
    reference: (f32, u32, u32),
    scale: f32,
) -> Agreement {
    let (t, prim, instance) = reference;
    let len = ray.dir.length();
    let placed = if len > 0.0 {
        ORIGIN_ULPS * f32::EPSILON * scale / len
    } else {
        0.0
    };
    let floor = t_floor(ray).max(placed);
    match (hit.is_hit(), prim != Hit::NO_PRIM) {
        (false, false) => Agreement::Match,
        (true, true) if t_close(hit.t, t, floor) => {
            if hit.prim == prim && hit.instance == instance {
                Agreement::Match
            } else {
                Agreement::Tie
            }
        }
        _ => Agreement::Mismatch,
    }
}

/// Counts of [`Agreement`] over a batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AgreementCounts {
    /// Rays compared.
    pub total: usize,
    /// Matches.
    pub matches: usize,
    /// Ties.
    pub ties: usize,
    /// Mismatches.
    pub mismatches: usize,
    /// Index of the first mismatch, if any.
    pub first_mismatch: Option<usize>,
}

impl AgreementCounts {
    /// Compare a batch: `hits[i]` (the answer for `rays[i]`) against `reference[i] = (t, prim)`.
    ///
    /// Every ray is counted (`total == rays.len()`); a ray without a hit or
    /// without a reference entry (slices of different lengths) is a mismatch, so
    /// a short or empty answer never passes.
    pub fn compare(rays: &[Ray], hits: &[Hit], reference: &[(f32, u32)]) -> Self {
        let mut c = AgreementCounts {
            total: rays.len(),
            ..Default::default()
        };
        for (i, ray) in rays.iter().enumerate() {
            let agreement = match (hits.get(i), reference.get(i)) {
                (Some(h), Some(&(t, p))) => classify(ray, h, t, p),
                _ => Agreement::Mismatch,
            };
            match agreement {
                Agreement::Match => c.matches += 1,
                Agreement::Tie => c.ties += 1,
                Agreement::Mismatch => {
                    c.mismatches += 1;
                    c.first_mismatch.get_or_insert(i);
                }
            }
        }
        c
    }

    /// [`AgreementCounts::compare`] for a two-level scene: `reference[i] =
    /// (t, prim, instance)` and [`classify_instanced`] with `scales[i]` (the
    /// reference's [`instance_scales`]; a ray without one gets none).
    pub fn compare_instanced(
        rays: &[Ray],
        hits: &[Hit],
        reference: &[(f32, u32, u32)],
        scales: &[f32],
    ) -> Self {
        let mut c = AgreementCounts {
            total: rays.len(),
            ..Default::default()
        };
        for (i, ray) in rays.iter().enumerate() {
            let agreement = match (hits.get(i), reference.get(i)) {
                (Some(h), Some(&r)) => {
                    classify_instanced(ray, h, r, scales.get(i).copied().unwrap_or(0.0))
                }
                _ => Agreement::Mismatch,
            };
            match agreement {
                Agreement::Match => c.matches += 1,
                Agreement::Tie => c.ties += 1,
                Agreement::Mismatch => {
                    c.mismatches += 1;
                    c.first_mismatch.get_or_insert(i);
                }
            }
        }
        c
    }

    /// True when nothing mismatched.
    pub fn passed(&self) -> bool {
        self.mismatches == 0
    }
}
