//! Properties of the materials: validation, and `scatter` never adding energy.

mod common;

use common::{DVec3, config, d, sphere_reference, unit_vec3};
use glam::Vec3;
use prism_core::material::{Scatter, reflect, scatter, schlick};
use prism_core::rng::Pcg;
use prism_core::{Error, Material};
use proptest::prelude::*;

/// A number in `[0, 1]`, hitting both ends often.
fn unit_interval() -> impl Strategy<Value = f32> {
    prop_oneof![6 => 0.0f32..=1.0, 1 => Just(0.0f32), 1 => Just(1.0f32)]
}

/// Any material `Material::validate` accepts: lobe weights summing to at most 1
/// (exactly 1 often), any albedo, fuzz, emission and index of refraction.
fn valid_material() -> impl Strategy<Value = Material> {
    (
        (unit_interval(), unit_interval(), unit_interval()),
        unit_interval(),
        prop_oneof![3 => Just(Vec3::ZERO), 1 => (0.0f32..100.0, 0.0f32..100.0, 0.0f32..100.0).prop_map(|(r, g, b)| Vec3::new(r, g, b))],
        prop_oneof![2 => 1.0f32..3.0, 1 => 0.05f32..1.0, 1 => Just(1.0f32), 1 => 3.0f32..1000.0],
        (unit_interval(), unit_interval(), unit_interval(), prop_oneof![Just(1.0f32), 0.0f32..=1.0]),
    )
        .prop_map(|((r, g, b), fuzz, emission, ior, (l, m, d, total))| {
            let sum = l + m + d;
            let (l, m, d) = if sum > 0.0 { (l / sum * total, m / sum * total, d / sum * total) } else { (0.0, 0.0, 0.0) };
            Material { albedo: Vec3::new(r, g, b), fuzz, emission, ior, lambert: l, metal: m, dielectric: d }
        })
        .prop_filter("valid", |m| m.validate(0).is_ok())
}

/// A unit incoming direction and a unit normal, on either side of each other,
/// grazing and head-on included.
fn directions() -> impl Strategy<Value = (Vec3, Vec3)> {
    (unit_vec3(), unit_vec3(), 0u8..4).prop_map(|(dir, n, special)| match special {
        0 => (-n, n),
        // Exactly grazing: dir orthogonal to n.
        1 => (n.any_orthonormal_vector(), n),
        _ => (dir, n),
    })
}

fn check_scatter(
    m: &Material,
    dir: Vec3,
    normal: Vec3,
    state: u32,
) -> Result<Scatter, TestCaseError> {
    let gpu = m.to_gpu();
    let mut rng = Pcg { state };
    let s = scatter(&gpu, dir, normal, &mut rng);
    prop_assert!(s.attenuation.is_finite(), "attenuation {:?}", s.attenuation);
    prop_assert!(
        s.attenuation.cmpge(Vec3::ZERO).all() && s.attenuation.cmple(Vec3::ONE).all(),
        "attenuation {:?} adds energy",
        s.attenuation
    );
    prop_assert!(s.dir.is_finite(), "direction {:?}", s.dir);
    prop_assert!(
        (s.dir.length() - 1.0).abs() < 1e-4,
        "|direction| = {}",
        s.dir.length()
    );
    // Exactly seven random numbers consumed, whatever the material.
    let mut expected = Pcg { state };
    for _ in 0..7 {
        expected.next_u32();
    }
    prop_assert_eq!(rng, expected);
    Ok(s)
}

proptest! {
    #![proptest_config(config(3000))]

    /// For any valid material and any directions, `scatter` keeps each channel's
    /// attenuation in `[0, 1]` (a bounce never adds energy) and returns a finite
    /// unit direction.
    #[test]
    fn scatter_never_adds_energy(m in valid_material(), (dir, n) in directions(), state in any::<u32>()) {
        check_scatter(&m, dir, n, state)?;
    }

    /// Blends of valid materials are valid, and scatter alike.
    #[test]
    fn blends_stay_valid(a in valid_material(), b in valid_material(), t in unit_interval(), (dir, n) in directions(), state in any::<u32>()) {
        let m = Material::blend(a, b, t);
        prop_assert!(m.validate(0).is_ok(), "{:?}", m.validate(0));
        check_scatter(&m, dir, n, state)?;
    }

    /// Single-lobe materials do what the lobe promises: Lambert leaves on the
    /// incoming side and keeps the albedo; a fuzz-free metal is a mirror; a
    /// dielectric keeps all energy and either mirrors or obeys Snell's law;
    /// an emitter absorbs.
    #[test]
    fn single_lobes(albedo in (unit_interval(), unit_interval(), unit_interval()), ior in 1.01f32..3.0, (dir, n) in directions(), state in any::<u32>()) {
        prop_assume!(dir.dot(n).abs() > 1e-3);
        let albedo = Vec3::new(albedo.0, albedo.1, albedo.2);
        let facing = if dir.dot(n) < 0.0 { n } else { -n };

        let s = check_scatter(&Material::lambertian(albedo), dir, n, state)?;
        prop_assert_eq!(s.attenuation, albedo);
        prop_assert!(s.dir.dot(facing) >= -1e-6, "Lambert went through the surface");

        let s = check_scatter(&Material::metal(albedo, 0.0), dir, n, state)?;
        prop_assert_eq!(s.attenuation, albedo);
        prop_assert!((s.dir - reflect(dir, facing)).length() < 1e-5, "mirror {:?} vs {:?}", s.dir, reflect(dir, facing));

        let s = check_scatter(&Material::dielectric(ior), dir, n, state)?;
        prop_assert_eq!(s.attenuation, Vec3::ONE);
        if (s.dir - reflect(dir, facing)).length() > 1e-5 {
            // Refracted: through the surface, in the plane of incidence, Snell's law.
            prop_assert!(s.dir.dot(facing) < 0.0, "refraction stayed on the incoming side");
            let eta = if dir.dot(n) < 0.0 { 1.0 / ior } else { ior };
            let sin_i = dir.cross(facing).length();
            let sin_t = s.dir.cross(facing).length();
            prop_assert!((sin_t - eta * sin_i).abs() < 1e-4, "Snell: sin_t {} vs eta sin_i {}", sin_t, eta * sin_i);
            prop_assert!(dir.cross(facing).dot(s.dir).abs() < 1e-4, "left the plane of incidence");
        }

        let s = check_scatter(&Material::emissive(Vec3::splat(4.0)), dir, n, state)?;
        prop_assert_eq!(s.attenuation, Vec3::ZERO);
    }
}

/// The seven numbers `scatter` draws from a generator in `state`, in order.
fn stream(state: u32) -> [f32; 7] {
    let mut rng = Pcg { state };
    [(); 7].map(|_| rng.next_f32())
}

/// `d` mirrored about the unit normal `n`, in `f64`.
fn reflect64(d: DVec3, n: DVec3) -> DVec3 {
    d - 2.0 * d.dot(n) * n
}

proptest! {
    #![proptest_config(config(2000))]

    /// The mixture picks its lobe with the first number `u` against the
    /// cumulative weights: Lambert for `u < lambert`, metal below `lambert +
    /// metal`, dielectric below the sum of all three, absorption past it; and
    /// what it returns is then exactly what the single-lobe material of that
    /// lobe returns from the same stream (an unbiased mixture).
    #[test]
    fn mixture_picks_the_lobe_of_the_first_number(m in valid_material(), (dir, n) in directions(), state in any::<u32>()) {
        let u = stream(state)[0];
        let c1 = m.lambert;
        let c2 = c1 + m.metal;
        let c3 = c2 + m.dielectric;
        let only = |lambert, metal, dielectric| Material { lambert, metal, dielectric, ..m };
        let run = |m: Material| scatter(&m.to_gpu(), dir, n, &mut Pcg { state });
        let got = run(m);
        if u < c3 {
            let lobe = if u < c1 { only(1.0, 0.0, 0.0) } else if u < c2 { only(0.0, 1.0, 0.0) } else { only(0.0, 0.0, 1.0) };
            prop_assert_eq!(got, run(lobe), "u = {}, cumulative weights {}, {}, {}", u, c1, c2, c3);
        } else {
            prop_assert_eq!(got.attenuation, Vec3::ZERO, "u = {} past the weights' sum {} must absorb", u, c3);
        }
    }

    /// Each lobe draws the numbers the docs give it (lobe choice, Lambert 2,
    /// metal fuzz 3, Fresnel choice), checked against `f64` references: Lambert
    /// is `normalize(n + unit_sphere(u2, u3))` about the facing normal; metal is
    /// `normalize(mirror + fuzz * unit_ball(u4, u5, u6))`, kept (attenuation =
    /// albedo) exactly when it leaves on the incoming side, so within
    /// `asin(fuzz)` of the mirror direction; the dielectric mirrors under total
    /// internal reflection or when Schlick's reflectance exceeds `u7`, and
    /// otherwise goes through the surface.
    #[test]
    fn lobes_draw_their_documented_numbers(
        albedo in (0.0f32..=1.0, 0.0f32..=1.0, 0.0f32..=1.0),
        fuzz in prop_oneof![Just(1.0f32), 0.0f32..=1.0],
        ior in prop_oneof![1.0f32..3.0, 0.2f32..1.0],
        (dir, n) in directions(),
        state in any::<u32>(),
    ) {
        let albedo = Vec3::new(albedo.0, albedo.1, albedo.2);
        let u = stream(state);
        let facing = if dir.dot(n) < 0.0 { n } else { -n };
        let (dir64, f64n) = (d(dir), d(facing));
        let run = |m: Material| scatter(&m.to_gpu(), dir, n, &mut Pcg { state });

        // Lambert: u2, u3.
        let (s_ref, tol) = sphere_reference(u[1], u[2]);
        let sum = f64n + s_ref;
        let got = run(Material::lambertian(albedo));
        if sum.length() > 1e-2 {
            let want = sum.normalize();
            prop_assert!((d(got.dir) - want).length() <= 4.0 * (tol + 1e-7) / sum.length(), "Lambert {:?}, f64 {want:?}", got.dir);
        }

        // Metal: u4, u5, u6.
        let (s_ref, tol) = sphere_reference(u[3], u[4]);
        let mirror = reflect64(dir64, f64n);
        let sum = mirror + (fuzz as f64 * (u[5] as f64).cbrt()) * s_ref;
        let got = run(Material::metal(albedo, fuzz));
        if sum.length() > 1e-2 {
            let want = sum.normalize();
            prop_assert!((d(got.dir) - want).length() <= 4.0 * (tol + 1e-6) / sum.length(), "metal {:?}, f64 {want:?}", got.dir);
            let cos = want.dot(f64n);
            if cos.abs() > 1e-4 {
                let keep = if cos > 0.0 { albedo } else { Vec3::ZERO };
                prop_assert_eq!(got.attenuation, keep, "metal leaving at cos {}", cos);
            }
            if fuzz < 0.999 {
                let max_angle = (fuzz as f64).asin() + 1e-3;
                let angle = d(got.dir).dot(mirror).clamp(-1.0, 1.0).acos();
                prop_assert!(angle <= max_angle, "metal {} rad from the mirror, fuzz {}", angle, fuzz);
            }
        }
        if got.attenuation != Vec3::ZERO {
            prop_assert!(got.dir.dot(facing) > 0.0, "a kept metal sample {:?} goes through the surface", got.dir);
        }

        // Dielectric: u7.
        let got = run(Material::dielectric(ior));
        let eta = if dir.dot(n) < 0.0 { 1.0 / ior as f64 } else { ior as f64 };
        let cos_i = -dir64.dot(f64n);
        let sin2_t = eta * eta * (1.0 - cos_i * cos_i);
        let r0 = ((1.0 - eta) / (1.0 + eta)).powi(2);
        let fresnel = r0 + (1.0 - r0) * (1.0 - cos_i).powi(5);
        let mirrored = (d(got.dir) - mirror).length() <= 1e-5;
        if sin2_t > 1.0 + 1e-5 || fresnel > u[6] as f64 + 1e-5 {
            prop_assert!(mirrored, "dielectric should mirror (sin^2 t {}, Schlick {} > u7 {}): {:?}", sin2_t, fresnel, u[6], got.dir);
        } else if sin2_t < 1.0 - 1e-5 && fresnel < u[6] as f64 - 1e-5 {
            prop_assert!(!mirrored && got.dir.dot(facing) < 0.0, "dielectric should refract (Schlick {} < u7 {}): {:?}", fresnel, u[6], got.dir);
        }
    }
}

proptest! {
    #![proptest_config(config(2000))]

    /// `reflect` is a mirror: it keeps the length and the tangential part,
    /// negates the normal part, and undoes itself.
    #[test]
    fn reflect_is_a_mirror(v in unit_vec3(), len in 0.01f32..100.0, n in unit_vec3()) {
        let v = v * len;
        let r = reflect(v, n);
        let tol = 1e-5 * len;
        prop_assert!((r.length() - v.length()).abs() <= tol, "|r| = {}, |v| = {}", r.length(), v.length());
        prop_assert!((r.dot(n) + v.dot(n)).abs() <= tol, "normal parts {} and {}", r.dot(n), v.dot(n));
        prop_assert!(((r - v).cross(n)).length() <= tol, "r - v = {:?} is not along n", r - v);
        prop_assert!((reflect(r, n) - v).length() <= 2.0 * tol);
    }

    /// Schlick's reflectance runs from `r0 = ((1 - eta) / (1 + eta))^2` at normal
    /// incidence to 1 at grazing, never increases with the cosine, and is the
    /// same for `eta` and `1 / eta`.
    #[test]
    fn schlick_between_r0_and_one(c in prop_oneof![Just(0.0f32), Just(1.0f32), 0.0f32..=1.0], dc in 0.0f32..0.5, eta in prop_oneof![0.1f32..1.0, 1.0f32..10.0]) {
        let r0 = ((1.0 - eta as f64) / (1.0 + eta as f64)).powi(2);
        let r = schlick(c, eta) as f64;
        prop_assert!(r >= r0 - 1e-6 && r <= 1.0 + 1e-6, "schlick({c}, {eta}) = {r}, r0 = {r0}");
        prop_assert!((schlick(1.0, eta) as f64 - r0).abs() <= 1e-6);
        prop_assert!((schlick(0.0, eta) - 1.0).abs() <= 1e-6);
        prop_assert!(schlick((c + dc).min(1.0), eta) <= schlick(c, eta) + 1e-6);
        prop_assert!((schlick(c, eta) - schlick(c, 1.0 / eta)).abs() <= 1e-5);
    }
}

/// The error `validate` gives for `m`: the field it names.
fn invalid_field(m: Material) -> Option<&'static str> {
    match m.validate(7) {
        Ok(()) => None,
        Err(Error::MaterialInvalid { index, field, .. }) => {
            assert_eq!(index, 7, "the error names the material's index");
            Some(field)
        }
        Err(e) => panic!("unexpected error {e:?}"),
    }
}

proptest! {
    #![proptest_config(config(1000))]

    /// Out-of-range values are rejected, naming the offending field: albedo and
    /// fuzz outside `[0, 1]`, negative or non-finite emission, a non-positive or
    /// non-finite index of refraction, lobe weights outside `[0, 1]` or summing
    /// past 1, and NaN anywhere.
    #[test]
    fn validate_names_the_bad_field(
        field in 0usize..11,
        bad in prop_oneof![Just(f32::NAN), Just(f32::INFINITY), Just(f32::NEG_INFINITY), -1e6f32..-1e-6, 1.0001f32..1e6],
    ) {
        let mut m = Material::lambertian(Vec3::splat(0.5));
        m.lambert = 0.5;
        let expect = match field {
            0 => { m.albedo.x = bad; "albedo.r" }
            1 => { m.albedo.y = bad; "albedo.g" }
            2 => { m.albedo.z = bad; "albedo.b" }
            3 => { m.fuzz = bad; "fuzz" }
            4 => { m.lambert = bad; "lambert" }
            5 => { m.metal = bad; "metal" }
            6 => { m.dielectric = bad; "dielectric" }
            // Emission and ior accept large positive values: only invalid ones here.
            7 => { prop_assume!(!(bad >= 0.0 && bad.is_finite())); m.emission.x = bad; "emission.r" }
            8 => { prop_assume!(!(bad >= 0.0 && bad.is_finite())); m.emission.z = bad; "emission.b" }
            9 => { prop_assume!(!(bad > 0.0 && bad.is_finite())); m.ior = bad; "ior" }
            _ => {
                // Each weight valid, the sum not.
                prop_assume!(bad.is_finite() && bad > 1.0);
                m.lambert = 0.6;
                m.metal = 0.3;
                m.dielectric = (0.1 + (bad - 1.0).min(0.9)).max(0.11);
                "lambert + metal + dielectric"
            }
        };
        prop_assert_eq!(invalid_field(m), Some(expect));
    }
}

/// Boundary values are accepted; the error message names index, field and value.
#[test]
fn validate_accepts_boundaries() {
    let edges = [
        Material::lambertian(Vec3::ZERO),
        Material::lambertian(Vec3::ONE),
        Material::metal(Vec3::ONE, 1.0),
        Material::dielectric(1.0),
        Material::dielectric(1e6),
        Material::emissive(Vec3::splat(1e30)),
        Material {
            lambert: 1.0 / 3.0,
            metal: 1.0 / 3.0,
            dielectric: 1.0 / 3.0,
            ..Material::lambertian(Vec3::ONE)
        },
    ];
    for m in edges {
        assert_eq!(m.validate(0), Ok(()), "{m:?}");
    }
    let mut m = Material::metal(Vec3::splat(0.5), 0.2);
    m.fuzz = 1.5;
    let msg = m.validate(3).unwrap_err().to_string();
    assert!(
        msg.contains("material 3") && msg.contains("fuzz") && msg.contains("1.5"),
        "{msg}"
    );
}

/// The buffer form carries every parameter where `gpu::GpuMaterial` documents it.
#[test]
fn to_gpu_layout() {
    let m = Material {
        albedo: Vec3::new(0.1, 0.2, 0.3),
        fuzz: 0.4,
        emission: Vec3::new(5.0, 6.0, 7.0),
        ior: 1.7,
        lambert: 0.25,
        metal: 0.5,
        dielectric: 0.125,
    };
    let g = m.to_gpu();
    assert_eq!(g.albedo_fuzz, [0.1, 0.2, 0.3, 0.4]);
    assert_eq!(g.emission_ior, [5.0, 6.0, 7.0, 1.7]);
    assert_eq!(g.lobe_weights, [0.25, 0.5, 0.125, 0.0]);
}

/// A dielectric refracts as often as Schlick's approximation says it should:
/// over 20,000 random streams, the share of mirror bounces at normal and at
/// 60 degree incidence is Schlick's reflectance to within five standard
/// deviations (a dielectric that always mirrors, or never does, fails).
#[test]
fn dielectric_reflects_by_schlick() {
    let ior = 1.5f32;
    let r0 = ((1.0 - ior) / (1.0 + ior)).powi(2);
    let n = Vec3::Y;
    for cos_i in [1.0f32, 0.5] {
        let dir = Vec3::new((1.0 - cos_i * cos_i).sqrt(), -cos_i, 0.0);
        let want = r0 + (1.0 - r0) * (1.0 - cos_i).powi(5);
        let gpu = Material::dielectric(ior).to_gpu();
        let samples = 20_000u32;
        let mut mirrored = 0u32;
        for k in 0..samples {
            let mut rng = Pcg::for_path(k, 0, 1);
            let s = scatter(&gpu, dir, n, &mut rng);
            if s.dir.dot(n) > 0.0 {
                assert!((s.dir - reflect(dir, n)).length() < 1e-5, "{:?}", s.dir);
                mirrored += 1;
            }
        }
        let share = mirrored as f32 / samples as f32;
        let sigma = (want * (1.0 - want) / samples as f32).sqrt();
        assert!(
            (share - want).abs() < 5.0 * sigma,
            "cos {cos_i}: mirrored {share}, Schlick {want} (sigma {sigma})"
        );
    }
}
