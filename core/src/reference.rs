//! Comparing hits with reference hits (Embree's, or another backend's).
//!
//! The rule of DESIGN.md: the same primitive with `t` within [`T_REL_TOLERANCE`]
//! relative is agreement; a different primitive at a `t` within that tolerance is
//! a *tie* (two surfaces that close along the ray are both right answers); a hit
//! where the reference misses, or a miss where it hits, is a mismatch.
//!
//! On instances (two-level scenes) the primitive and the instance must both
//! agree, and the floor of the tolerance grows with the instance's distance
//! from the world origin ([`t_floor_instanced`]).

use crate::ray::{Hit, Ray};
use glam::Vec3;

/// Relative tolerance on `t`.
pub const T_REL_TOLERANCE: f32 = 1e-4;
/// Absolute floor of the tolerance, in ulps of the origin's largest coordinate.
pub const ORIGIN_ULPS: f32 = 8.0;
/// The same on an instance, in ulps of the origin's and the instance's
/// translation's largest coordinates (see [`t_floor_instanced`]).
pub const INSTANCE_ULPS: f32 = 32.0;

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

/// [`t_floor`] for a hit on an instance whose object-to-world translation is
/// `translation`. The ray enters the instance as `W o + w`, whose rounding is
/// in proportion to both the ray's origin and the instance's place (`|w|` is
/// `|W c|`), and two correct tracers round it differently (Embree inverts the
/// transform in `f32`, Prism in `f64`): the object ray's origin moves by a
/// few ulps of `|o| + |c|`, which a ray meeting the surface at a glancing
/// angle turns into many more ulps of `t`. On the shared bunny-x1000 diffuse
/// rays (origins 1e-5 of the field's size off a surface) the largest such
/// difference from Embree is 30.3 ulps; [`INSTANCE_ULPS`] allows 32.
#[inline]
pub fn t_floor_instanced(ray: &Ray, translation: Vec3) -> f32 {
    let len = ray.dir.length();
    if len > 0.0 {
        INSTANCE_ULPS
            * f32::EPSILON
            * (ray.origin.abs().max_element() + translation.abs().max_element())
            / len
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

/// Compare `hit` (the answer for `ray` in a two-level scene) with the
/// reference `(t, prim, instance)`: a match needs the same primitive of the
/// same instance; the floor of the tolerance is [`t_floor_instanced`] of the
/// farther of the two instances (`translation(i)`: instance `i`'s
/// object-to-world translation).
#[inline]
pub fn classify_instanced(
    ray: &Ray,
    hit: &Hit,
    reference: (f32, u32, u32),
    translation: impl Fn(u32) -> Vec3,
) -> Agreement {
    let (ref_t, ref_prim, ref_instance) = reference;
    match (hit.is_hit(), ref_prim != Hit::NO_PRIM) {
        (false, false) => Agreement::Match,
        (true, true) => {
            let (a, b) = (translation(hit.instance), translation(ref_instance));
            let far = if a.abs().max_element() > b.abs().max_element() {
                a
            } else {
                b
            };
            if !t_close(hit.t, ref_t, t_floor_instanced(ray, far)) {
                Agreement::Mismatch
            } else if (hit.prim, hit.instance) == (ref_prim, ref_instance) {
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
    /// (t, prim, instance)` and [`classify_instanced`], `translations[i]`
    /// being instance `i`'s object-to-world translation (an instance past
    /// the end counts as at the origin).
    pub fn compare_instanced(
        rays: &[Ray],
        hits: &[Hit],
        reference: &[(f32, u32, u32)],
        translations: &[Vec3],
    ) -> Self {
        let mut c = AgreementCounts {
            total: rays.len(),
            ..Default::default()
        };
        let translation = |i: u32| translations.get(i as usize).copied().unwrap_or(Vec3::ZERO);
        for (i, ray) in rays.iter().enumerate() {
            let agreement = match (hits.get(i), reference.get(i)) {
                (Some(h), Some(&r)) => classify_instanced(ray, h, r, translation),
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
