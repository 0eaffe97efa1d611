//! Properties of the sample warps: ranges for every input, and the moments of
//! the distributions they promise (fixed seeds, tolerances of 6 standard errors).

mod common;

use common::{config, d, sphere_reference, unit_vec3};
use glam::Vec3;
use prism_core::rng::Pcg;
use prism_core::sampling::{
    cone_one_minus_cos, cosine_hemisphere, orthonormal_basis, polar_angle, uniform_cone,
    uniform_cone_pdf, unit_ball, unit_disk, unit_sphere,
};
use proptest::prelude::*;

/// A uniform number in `[0, 1)` including its extremes (0 and the largest float
/// below 1, the values `Pcg::next_f32` can return at the ends).
fn u01() -> impl Strategy<Value = f32> {
    prop_oneof![8 => 0.0f32..1.0, 1 => Just(0.0f32), 1 => Just(1.0 - 2f32.powi(-24))]
}

proptest! {
    #![proptest_config(config(3000))]

    /// The polar angle lies in `[-pi, pi]`, where GPU `sin` and `cos` are
    /// specified, is `2 pi u` itself or exactly one turn less, and so gives the
    /// same point on the circle.
    #[test]
    fn polar_angle_is_two_pi_u_within_minus_pi_to_pi(u in u01()) {
        use std::f32::consts::{PI, TAU};
        let phi = polar_angle(u);
        prop_assert!((-PI..=PI).contains(&phi), "u {u}: {phi}");
        let full = TAU * u;
        prop_assert!(phi == full || (f64::from(phi) == f64::from(full) - f64::from(TAU)), "u {u}");
        prop_assert!((phi.cos() - full.cos()).abs() < 1e-6 && (phi.sin() - full.sin()).abs() < 1e-6);
    }

    /// Every warp stays in its domain for every input in `[0, 1)`.
    #[test]
    fn warps_in_range(u1 in u01(), u2 in u01(), u3 in u01()) {
        let s = unit_sphere(u1, u2);
        prop_assert!(s.is_finite() && (s.length() - 1.0).abs() < 1e-6, "unit_sphere {s:?}");
        let b = unit_ball(u1, u2, u3);
        prop_assert!(b.is_finite() && b.length() <= 1.0 + 1e-6, "unit_ball {b:?}");
        let d = unit_disk(u1, u2);
        prop_assert!(d.is_finite() && d.length() <= 1.0 + 1e-6, "unit_disk {d:?}");
    }

    /// Cosine-sampled directions are unit length and in the hemisphere of `n`, for
    /// any unit normal (axis-aligned ones included) and any input.
    #[test]
    fn cosine_in_hemisphere(n in prop_oneof![4 => unit_vec3(), 1 => prop::sample::select(vec![Vec3::X, Vec3::NEG_X, Vec3::Y, Vec3::NEG_Y, Vec3::Z, Vec3::NEG_Z])], u1 in u01(), u2 in u01()) {
        let d = cosine_hemisphere(n, u1, u2);
        prop_assert!(d.is_finite(), "{d:?}");
        prop_assert!((d.length() - 1.0).abs() < 1e-5, "|d| = {}", d.length());
        prop_assert!(d.dot(n) >= -1e-6, "d = {d:?} below n = {n:?} (cos {})", d.dot(n));
    }

    /// Near the antipode of `n`, where `n + s` nearly vanishes and rounding sets
    /// its direction, the result still leaves the surface: the sphere point is
    /// aimed at `-n` through the map's inverse, then moved by a few ulps.
    #[test]
    fn cosine_near_the_antipode_leaves_the_surface(n in unit_vec3(), k1 in -256i32..256, k2 in -256i32..256) {
        let a = -n;
        let u1 = (1.0 - a.z) / 2.0;
        let u2 = (a.y.atan2(a.x) / std::f32::consts::TAU).rem_euclid(1.0);
        let step = |u: f32, k: i32| f32::from_bits(u.to_bits().saturating_add_signed(k)).clamp(0.0, 1.0 - 2f32.powi(-24));
        let (u1, u2) = (step(u1, k1), step(u2, k2));
        let c = cosine_hemisphere(n, u1, u2);
        prop_assert!((c.length() - 1.0).abs() < 1e-5, "|c| = {}", c.length());
        prop_assert!(c.dot(n) > 0.0, "cosine_hemisphere({n:?}, {u1:e}, {u2:e}) = {c:?}, cos {}", c.dot(n));
    }
}

/// A direction the old cut-off (`|n + s|^2 > 1e-12`) let through 2.5 degrees
/// below the surface: `n + s` of length about 3e-6, its direction set by
/// rounding.
#[test]
fn cosine_hemisphere_regression_below_the_surface() {
    let n = Vec3::new(0.91672015, 0.31386194, -0.24721414).normalize();
    let (u1, u2) = (f32::from_bits(0x3ec0b696), f32::from_bits(0x3f0d70a3));
    let c = cosine_hemisphere(n, u1, u2);
    assert!(c.dot(n) > 0.0, "{c:?}: cos {}", c.dot(n));
}

proptest! {
    #![proptest_config(config(3000))]

    /// Each warp is its documented map, against an `f64` evaluation: the sphere
    /// point at height `1 - 2 u1` and angle `2 pi u2`; the disk point at radius
    /// `sqrt(u1)` (the polar map) and angle `2 pi u2`; the ball point on the
    /// sphere point's ray at radius `cbrt(u3)`; the cosine direction
    /// `normalize(n + unit_sphere)`. (The moments below say the maps are
    /// uniform; this says which uniform map every backend must compute.)
    #[test]
    fn warps_match_f64_maps(u1 in u01(), u2 in u01(), u3 in u01(), n in unit_vec3()) {
        let (s_ref, tol) = sphere_reference(u1, u2);
        let s = unit_sphere(u1, u2);
        prop_assert!((d(s) - s_ref).length() <= tol, "unit_sphere({u1}, {u2}) = {s:?}, f64 {s_ref:?}");

        let b = unit_ball(u1, u2, u3);
        let b_ref = s_ref * (u3 as f64).cbrt();
        prop_assert!((d(b) - b_ref).length() <= tol + 1e-6, "unit_ball({u1}, {u2}, {u3}) = {b:?}, f64 {b_ref:?}");

        let disk = unit_disk(u1, u2);
        let (r, phi) = ((u1 as f64).sqrt(), std::f64::consts::TAU * u2 as f64);
        let (x, y) = (disk.x as f64 - r * phi.cos(), disk.y as f64 - r * phi.sin());
        prop_assert!((x * x + y * y).sqrt() <= 2e-6, "unit_disk({u1}, {u2}) = {disk:?}, f64 radius {r}, angle {phi}");

        // Away from the antipode of n, where the sum is well-conditioned.
        let sum = d(n) + s_ref;
        if sum.length() > 1e-2 {
            let c = cosine_hemisphere(n, u1, u2);
            let c_ref = sum.normalize();
            prop_assert!((d(c) - c_ref).length() <= 4.0 * (tol + 1e-7) / sum.length(), "cosine_hemisphere({n:?}, {u1}, {u2}) = {c:?}, f64 {c_ref:?}");
        }
    }
}

/// Mean and standard error of `f` over `n` samples drawn from a fixed stream.
fn moment(n: usize, seed: u32, mut f: impl FnMut(&mut Pcg) -> f64) -> (f64, f64) {
    let mut rng = Pcg::for_path(seed, 0, 0x5EED);
    let (mut s, mut s2) = (0.0, 0.0);
    for _ in 0..n {
        let x = f(&mut rng);
        s += x;
        s2 += x * x;
    }
    let mean = s / n as f64;
    let var = (s2 / n as f64 - mean * mean).max(0.0);
    (mean, (var / n as f64).sqrt())
}

fn assert_moment(what: &str, (mean, se): (f64, f64), expected: f64) {
    assert!(
        (mean - expected).abs() < 6.0 * se + 1e-9,
        "{what}: mean {mean}, expected {expected} (standard error {se})"
    );
}

const N: usize = 1 << 17;

/// `E[cos] = 2/3`, `E[cos^2] = 1/2` for the cosine density `cos / pi`, and no
/// drift sideways, about several normals.
#[test]
fn cosine_moments() {
    let normals = [
        Vec3::Z,
        Vec3::NEG_Y,
        Vec3::new(1.0, 2.0, -3.0).normalize(),
        Vec3::new(-0.3, 0.1, 0.9).normalize(),
    ];
    for (k, &n) in normals.iter().enumerate() {
        let dir = |rng: &mut Pcg| cosine_hemisphere(n, rng.next_f32(), rng.next_f32());
        assert_moment(
            "E[cos]",
            moment(N, k as u32, |r| dir(r).dot(n) as f64),
            2.0 / 3.0,
        );
        assert_moment(
            "E[cos^2]",
            moment(N, k as u32, |r| (dir(r).dot(n) as f64).powi(2)),
            0.5,
        );
        assert_moment(
            "E[cos^3]",
            moment(N, k as u32, |r| (dir(r).dot(n) as f64).powi(3)),
            0.4,
        );
        // The component along a tangent averages out.
        let t = n.any_orthonormal_vector();
        assert_moment(
            "E[tangent]",
            moment(N, k as u32, |r| dir(r).dot(t) as f64),
            0.0,
        );
        assert_moment(
            "E[bitangent]",
            moment(N, k as u32, |r| dir(r).dot(n.cross(t)) as f64),
            0.0,
        );
    }
}

/// Uniform sphere: zero mean, `E[x^2] = E[z^2] = 1/3`; uniform disk: `E[r^2] = 1/2`,
/// a quarter inside radius 1/2; uniform ball: `E[r^2] = 3/5`, an eighth inside radius 1/2.
#[test]
fn uniform_warp_moments() {
    let sphere = |r: &mut Pcg| unit_sphere(r.next_f32(), r.next_f32());
    assert_moment("sphere E[x]", moment(N, 1, |r| sphere(r).x as f64), 0.0);
    assert_moment("sphere E[z]", moment(N, 1, |r| sphere(r).z as f64), 0.0);
    assert_moment(
        "sphere E[x^2]",
        moment(N, 1, |r| (sphere(r).x as f64).powi(2)),
        1.0 / 3.0,
    );
    assert_moment(
        "sphere E[z^2]",
        moment(N, 1, |r| (sphere(r).z as f64).powi(2)),
        1.0 / 3.0,
    );

    let disk = |r: &mut Pcg| unit_disk(r.next_f32(), r.next_f32());
    assert_moment("disk E[x]", moment(N, 2, |r| disk(r).x as f64), 0.0);
    assert_moment(
        "disk E[r^2]",
        moment(N, 2, |r| disk(r).length_squared() as f64),
        0.5,
    );
    assert_moment(
        "disk P[r < 1/2]",
        moment(N, 2, |r| (disk(r).length() < 0.5) as u8 as f64),
        0.25,
    );

    let ball = |r: &mut Pcg| unit_ball(r.next_f32(), r.next_f32(), r.next_f32());
    assert_moment("ball E[y]", moment(N, 3, |r| ball(r).y as f64), 0.0);
    assert_moment(
        "ball E[r^2]",
        moment(N, 3, |r| ball(r).length_squared() as f64),
        0.6,
    );
    assert_moment(
        "ball P[r < 1/2]",
        moment(N, 3, |r| (ball(r).length() < 0.5) as u8 as f64),
        0.125,
    );
}

/// `1 - cos` of a cone: from a far small sun (5e-6 of a turn) to a hemisphere
/// and beyond (2: the whole sphere).
fn one_minus_cos() -> impl Strategy<Value = f32> {
    prop_oneof![
        3 => 1e-12f32..1.0,
        1 => 1e-12f32..1e-4,
        1 => 1.0f32..=2.0,
        1 => Just(2.0f32),
    ]
}

proptest! {
    #![proptest_config(config(3000))]

    /// The frame of `n` is orthonormal and right-handed, for every unit
    /// normal, the axes and near `-z` (where the formula's `sign + n.z` is
    /// smallest) included.
    #[test]
    fn orthonormal_basis_is_orthonormal(n in prop_oneof![4 => unit_vec3(), 1 => prop::sample::select(vec![Vec3::X, Vec3::NEG_X, Vec3::Y, Vec3::NEG_Y, Vec3::Z, Vec3::NEG_Z, Vec3::new(1e-4, 0.0, -1.0).normalize()])]) {
        let (t, b) = orthonormal_basis(n);
        prop_assert!((t.length() - 1.0).abs() < 1e-5 && (b.length() - 1.0).abs() < 1e-5, "|t| {} |b| {}", t.length(), b.length());
        prop_assert!(t.dot(b).abs() < 1e-5 && t.dot(n).abs() < 1e-5 && b.dot(n).abs() < 1e-5, "n {n:?}: t {t:?} b {b:?}");
        prop_assert!((t.cross(b) - n).length() < 1e-5, "t x b = {:?}, n {n:?}", t.cross(b));
    }

    /// Cone directions are unit length and inside the cone (cosine to the axis
    /// at least `1 - one_minus_cos`, to rounding), for every axis, cone and input.
    #[test]
    fn uniform_cone_lies_in_the_cone(axis in unit_vec3(), omc in one_minus_cos(), u1 in u01(), u2 in u01()) {
        let d = uniform_cone(axis, omc, u1, u2);
        prop_assert!(d.is_finite(), "{d:?}");
        prop_assert!((d.length() - 1.0).abs() < 1e-5, "|d| = {}", d.length());
        // The angle to the axis in f64, against the cone's half-angle
        // `2 asin(sqrt(omc / 2))`; the allowance is the f32 rounding of the
        // direction's components (about 1e-7 each).
        let (dd, ad) = (super_d(d), super_d(axis));
        let along = dd.dot(ad);
        let theta = (dd - ad * along).length().atan2(along);
        let theta_max = 2.0 * (omc as f64 / 2.0).sqrt().min(1.0).asin();
        prop_assert!(theta <= theta_max * (1.0 + 1e-5) + 3e-7, "axis {axis:?}, 1 - cos {omc}: d {d:?} at {theta} rad, cone {theta_max}");
    }

    /// `cone_one_minus_cos` is `1 - sqrt(1 - sin2)` to a few ulps relative,
    /// down to the far small suns where the subtraction would cancel.
    #[test]
    fn cone_one_minus_cos_matches_f64(sin2 in prop_oneof![1e-12f32..1e-4, 1e-4f32..1.0]) {
        let got = cone_one_minus_cos(sin2) as f64;
        let want = 1.0 - (1.0 - sin2 as f64).sqrt();
        prop_assert!((got - want).abs() <= 1e-6 * want, "sin2 {sin2}: {got} against {want}");
    }
}

fn super_d(v: Vec3) -> glam::DVec3 {
    glam::DVec3::new(v.x as f64, v.y as f64, v.z as f64)
}

/// The cone's density integrates to one: over uniform directions on the
/// sphere, `4 pi E[pdf * inside]` is 1 (the share of the sphere inside the
/// cone is its solid angle over `4 pi`), for cones from narrow to wider than a
/// hemisphere. And its samples are uniform in height: `E[1 - cos] = (1 -
/// cos_max) / 2`, no drift around the axis.
#[test]
fn uniform_cone_pdf_integrates_to_one() {
    let axis = Vec3::new(0.3, -0.5, 0.8).normalize();
    for (k, omc) in [0.02f32, 0.3, 1.0, 1.7].into_iter().enumerate() {
        let pdf = uniform_cone_pdf(omc) as f64;
        let cos_max = 1.0 - omc;
        let integral = moment(N, 10 + k as u32, |r| {
            let d = unit_sphere(r.next_f32(), r.next_f32());
            4.0 * std::f64::consts::PI * pdf * (d.dot(axis) >= cos_max) as u8 as f64
        });
        assert_moment("4 pi E[pdf inside]", integral, 1.0);
        let height = moment(N, 20 + k as u32, |r| {
            (1.0 - uniform_cone(axis, omc, r.next_f32(), r.next_f32()).dot(axis)) as f64
        });
        assert_moment("E[1 - cos]", height, omc as f64 / 2.0);
        let t = axis.any_orthonormal_vector();
        let side = moment(N, 30 + k as u32, |r| {
            uniform_cone(axis, omc, r.next_f32(), r.next_f32()).dot(t) as f64
        });
        assert_moment("E[tangent]", side, 0.0);
    }
}
