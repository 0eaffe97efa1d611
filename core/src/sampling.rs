//! Warping uniform random numbers to directions and points.
//!
//! Each function is branch-free (no rejection loops), so GPU lanes stay together
//! and the number of random numbers a path consumes is fixed.

use glam::{Vec2, Vec3};

/// `2 * pi`.
const TAU: f32 = core::f32::consts::TAU;
/// `pi` (exactly half of [`TAU`] in `f32`).
const PI: f32 = core::f32::consts::PI;

/// The angle `2 pi u` for `u` in `[0, 1)`, taken in `[-pi, pi]`: GPU `sin` and
/// `cos` are specified only there (WGSL and Vulkan promise nothing outside), so
/// every backend evaluates them on this same argument. The subtraction is exact
/// (Sterbenz: `pi < 2 pi u < 2 pi`).
#[inline(always)]
pub fn polar_angle(u: f32) -> f32 {
    let phi = TAU * u;
    if phi > PI { phi - TAU } else { phi }
}

/// A uniform direction on the unit sphere from `(u1, u2)` in `[0, 1)^2`.
#[inline(always)]
pub fn unit_sphere(u1: f32, u2: f32) -> Vec3 {
    let z = 1.0 - 2.0 * u1;
    let r = libm::sqrtf((1.0 - z * z).max(0.0));
    let phi = polar_angle(u2);
    Vec3::new(r * libm::cosf(phi), r * libm::sinf(phi), z)
}

/// A uniform point inside the unit ball from `(u1, u2, u3)` in `[0, 1)^3`.
#[inline(always)]
pub fn unit_ball(u1: f32, u2: f32, u3: f32) -> Vec3 {
    unit_sphere(u1, u2) * libm::cbrtf(u3)
}

/// A uniform point in the unit disk from `(u1, u2)` (polar map).
#[inline(always)]
pub fn unit_disk(u1: f32, u2: f32) -> Vec2 {
    let r = libm::sqrtf(u1);
    let phi = polar_angle(u2);
    Vec2::new(r * libm::cosf(phi), r * libm::sinf(phi))
}

/// Smallest `|n + s|^2` that [`cosine_hemisphere`] normalises: ten times the
/// squared length at which rounding can put the sum below the surface.
pub const COSINE_HEMISPHERE_MIN_LEN2: f32 = 1e-5;

/// A cosine-distributed direction about the unit normal `n` (pdf `cos(theta) / pi`).
///
/// `normalize(n + unit_sphere)` is exactly cosine-distributed and needs no tangent
/// frame. Where the sum nearly vanishes, its direction is set by rounding: `n`
/// and the sphere point are unit vectors only to a few ulps, so `dot(n + s, n)`
/// (exactly `(|n + s|^2 + |n|^2 - |s|^2) / 2`) can turn negative once
/// `|n + s|^2` falls to about 1e-6. Below `COSINE_HEMISPHERE_MIN_LEN2`
/// (probability about 2.5e-6, directions within 0.1 degrees of the tangent
/// plane) `n` itself is returned, so every direction leaves the surface.
#[inline(always)]
pub fn cosine_hemisphere(n: Vec3, u1: f32, u2: f32) -> Vec3 {
    let d = n + unit_sphere(u1, u2);
    let len2 = d.length_squared();
    if len2 > COSINE_HEMISPHERE_MIN_LEN2 {
        d * (1.0 / libm::sqrtf(len2))
    } else {
        n
    }
}

/// Two unit vectors that make a right-handed orthonormal frame `(t, b, n)`
/// with the unit vector `n`, without a branch on a small component: Duff et
/// al., "Building an Orthonormal Basis, Revisited" (JCGT 2017). The sign is
/// taken from the bits of `n.z`, so `-0.0` chooses the lower hemisphere's frame
/// on every backend alike.
#[inline(always)]
pub fn orthonormal_basis(n: Vec3) -> (Vec3, Vec3) {
    let sign = 1.0f32.copysign(n.z);
    let a = -1.0 / (sign + n.z);
    let b = n.x * n.y * a;
    (
        Vec3::new(1.0 + sign * n.x * n.x * a, sign * b, -sign * n.x),
        Vec3::new(b, sign + n.y * n.y * a, -n.y),
    )
}

/// `1 - cos(theta_max)` of the cone that a sphere subtends from a point outside
/// it, from `sin2 = (radius / distance)^2` in `[0, 1)`: computed as
/// `sin2 / (1 + cos)`, which keeps its precision for a small far sphere (the sun
/// seen from the ground, `sin2` about 2e-5) where `1 - cos` would cancel to a
/// few ulps or to zero.
#[inline(always)]
pub fn cone_one_minus_cos(sin2: f32) -> f32 {
    sin2 / (1.0 + libm::sqrtf((1.0 - sin2).max(0.0)))
}

/// A direction uniformly distributed in the cone about the unit `axis` whose
/// half-angle has `1 - cos = one_minus_cos` (in `(0, 2]`), from `(u1, u2)` in
/// `[0, 1)^2`. Its density is `1 / (2 pi one_minus_cos)` per steradian
/// ([`uniform_cone_pdf`]).
///
/// The height `1 - cos(theta) = u1 * one_minus_cos` is uniform (the cone's cap
/// has equal area per unit height, as Archimedes' hat-box theorem says), and
/// `sin(theta)` is taken from it as `sqrt(z (2 - z))`, exact in `z` where `1 -
/// z^2` would cancel for a narrow cone.
#[inline(always)]
pub fn uniform_cone(axis: Vec3, one_minus_cos: f32, u1: f32, u2: f32) -> Vec3 {
    let z = u1 * one_minus_cos;
    let cos_theta = 1.0 - z;
    let sin_theta = libm::sqrtf((z * (2.0 - z)).max(0.0));
    let phi = polar_angle(u2);
    let (t, b) = orthonormal_basis(axis);
    t * (sin_theta * libm::cosf(phi)) + b * (sin_theta * libm::sinf(phi)) + axis * cos_theta
}

/// The density per steradian of [`uniform_cone`] inside its cone: one over the
/// cone's solid angle `2 pi (1 - cos)`.
#[inline(always)]
pub fn uniform_cone_pdf(one_minus_cos: f32) -> f32 {
    1.0 / (TAU * one_minus_cos)
}
