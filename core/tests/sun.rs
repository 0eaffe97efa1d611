//! The sun: its validation, what a ray that meets it sees, and next-event
//! estimation with MIS giving the same expectation as chance hits alone,
//! against the analytic light of a plane under a sun.

use glam::Vec3;
use prism_core::integrator::trace_path;
use prism_core::rng::Pcg;
use prism_core::{Accel, Camera, Error, Material, Ray, RenderSettings, Scene, Sky, Sun};

fn sun() -> Sun {
    Sun::new(Vec3::new(0.0, 10.0, 0.0), 5.0, Vec3::ONE, 1.0)
}

#[test]
fn bad_suns_are_refused_by_name() {
    let cases = [
        (
            Sun {
                center: Vec3::new(f32::NAN, 0.0, 0.0),
                ..sun()
            },
            "sun.center.x",
        ),
        (
            Sun {
                center: Vec3::new(0.0, 0.0, f32::INFINITY),
                ..sun()
            },
            "sun.center.z",
        ),
        (
            Sun {
                radius: 0.0,
                ..sun()
            },
            "sun.radius",
        ),
        (
            Sun {
                radius: -1.0,
                ..sun()
            },
            "sun.radius",
        ),
        (
            Sun {
                radius: f32::INFINITY,
                ..sun()
            },
            "sun.radius",
        ),
        (
            Sun {
                color: Vec3::new(1.0, -0.5, 1.0),
                ..sun()
            },
            "sun.color.g",
        ),
        (
            Sun {
                color: Vec3::new(1.0, 1.0, f32::NAN),
                ..sun()
            },
            "sun.color.b",
        ),
        (
            Sun {
                intensity: -1.0,
                ..sun()
            },
            "sun.intensity",
        ),
        (
            Sun {
                intensity: f32::INFINITY,
                ..sun()
            },
            "sun.intensity",
        ),
        (
            Sun {
                color: Vec3::splat(1e30),
                intensity: 1e30,
                ..sun()
            },
            "sun.color * sun.intensity",
        ),
    ];
    for (bad, field) in cases {
        match bad.validate() {
            Err(Error::SunInvalid { field: f, .. }) => assert_eq!(f, field, "{bad:?}"),
            other => panic!("{bad:?}: expected SunInvalid {{ {field} }}, got {other:?}"),
        }
        let mut scene = plane_scene(Material::lambertian(Vec3::splat(0.5)));
        scene.sun = Some(bad);
        assert!(
            matches!(Accel::build(&scene), Err(Error::SunInvalid { field: f, .. }) if f == field),
            "{bad:?}: the scene must be refused"
        );
    }
    assert!(sun().validate().is_ok());
    // A black sun is a valid (if useless) sun.
    assert!(
        Sun {
            intensity: 0.0,
            ..sun()
        }
        .validate()
        .is_ok()
    );
}

/// A large square at `y = 0` (two triangles, normal up), black sky.
fn plane_scene(m: Material) -> Scene {
    let mut s = Scene::new();
    s.sky = Sky::BLACK;
    let id = s.add_material(m);
    let (a, b, c, d) = (
        Vec3::new(-100.0, 0.0, -100.0),
        Vec3::new(100.0, 0.0, -100.0),
        Vec3::new(100.0, 0.0, 100.0),
        Vec3::new(-100.0, 0.0, 100.0),
    );
    s.add_triangle(a, c, b, id);
    s.add_triangle(a, d, c, id);
    s
}

/// Mean radiance and rays of `n` paths down onto the plane's origin.
fn mean_down(accel: &Accel, nee: bool, max_depth: u32, n: u32) -> (f64, u64) {
    let settings = RenderSettings {
        max_depth,
        rr_depth: 100,
        sun_nee: nee,
        ..RenderSettings::default()
    };
    let camera = Camera::look_at(Vec3::Y, Vec3::ZERO, Vec3::Z, 40.0);
    let params = settings.params(accel, &camera, 1, 1).unwrap();
    let (mut sum, mut rays) = (0.0f64, 0u64);
    for i in 0..n {
        let mut rng = Pcg::for_path(i, 0, 7);
        let ray = Ray::new(Vec3::new(0.0, 1.0, 0.0), Vec3::NEG_Y);
        let (c, r) = trace_path(accel, &params, ray, &mut rng);
        assert!(c.is_finite() && c.min_element() >= 0.0, "{c:?}");
        sum += c.x as f64;
        rays += r as u64;
    }
    (sum / n as f64, rays)
}

/// Under a sun straight above, a Lambertian point sees `albedo * L * sin^2
/// (theta_max)` (the cosine integrated over the cone is `pi sin^2`): here
/// `0.5 * 2 * 0.25`. With next-event estimation one sample is close to it;
/// without, a quarter of the cosine rays meet the sun. Both converge to it,
/// and next-event estimation with a far smaller spread.
#[test]
fn next_event_and_chance_hits_converge_to_the_analytic_light() {
    let mut scene = plane_scene(Material::lambertian(Vec3::splat(0.5)));
    scene.sun = Some(Sun::new(Vec3::new(0.0, 10.0, 0.0), 5.0, Vec3::ONE, 2.0));
    let accel = Accel::build(&scene).unwrap();
    let want = 0.5 * 2.0 * 0.25;
    let n = 1 << 16;
    let (on, on_rays) = mean_down(&accel, true, 2, n);
    let (off, off_rays) = mean_down(&accel, false, 2, n);
    // Chance hits: a Bernoulli(1/4) times 1; standard error sqrt(3/16 / n) = 0.0017.
    assert!((off - want).abs() < 0.01, "NEE off: {off}, want {want}");
    assert!((on - want).abs() < 0.002, "NEE on: {on}, want {want}");
    // One shadow ray a path with next-event estimation (every direction of
    // the cone is above the plane and unblocked).
    assert_eq!(on_rays, off_rays + n as u64);
    // The last surface of a path does not sample the sun: with one segment
    // nothing reaches it either way.
    assert_eq!(mean_down(&accel, true, 1, 256).0, 0.0);
    assert_eq!(mean_down(&accel, false, 1, 256).0, 0.0);
}

/// A blend of Lambert and a fuzzy metal: the metal lobe's rays meet the sun
/// with full weight, the Lambert lobe's are weighted against next-event
/// estimation; the means agree with chance hits alone.
#[test]
fn next_event_keeps_the_specular_lobe_unbiased() {
    let blend = Material::blend(
        Material::lambertian(Vec3::splat(0.8)),
        Material::metal(Vec3::splat(0.9), 0.3),
        0.5,
    );
    let mut scene = plane_scene(blend);
    scene.sun = Some(Sun::new(Vec3::new(0.0, 10.0, 0.0), 5.0, Vec3::ONE, 1.0));
    let accel = Accel::build(&scene).unwrap();
    let n = 1 << 17;
    let (on, _) = mean_down(&accel, true, 3, n);
    let (off, _) = mean_down(&accel, false, 3, n);
    assert!((on - off).abs() < 0.01, "NEE on {on}, off {off}");
    assert!(on > 0.1, "{on}");
}

/// A camera ray that meets the sun sees its radiance, in front of the sky and
/// behind geometry: the sun is not in the tree, but hides nothing nearer.
#[test]
fn rays_that_meet_the_sun_see_its_radiance() {
    let mut scene = plane_scene(Material::emissive(Vec3::new(0.0, 3.0, 0.0)));
    scene.sky = Sky::constant(Vec3::splat(0.25));
    scene.sun = Some(Sun::new(
        Vec3::new(0.0, 10.0, 0.0),
        1.0,
        Vec3::new(1.0, 2.0, 4.0),
        10.0,
    ));
    let accel = Accel::build(&scene).unwrap();
    let params = RenderSettings::default()
        .params(
            &accel,
            &Camera::look_at(Vec3::Y, Vec3::ZERO, Vec3::Z, 40.0),
            1,
            1,
        )
        .unwrap();
    let mut rng = Pcg::for_path(0, 0, 0);
    let up = trace_path(
        &accel,
        &params,
        Ray::new(Vec3::new(0.0, 1.0, 0.0), Vec3::Y),
        &mut rng,
    );
    assert_eq!(up.0, Vec3::new(10.0, 20.0, 40.0));
    let beside = trace_path(
        &accel,
        &params,
        Ray::new(Vec3::new(5.0, 1.0, 0.0), Vec3::Y),
        &mut rng,
    );
    assert_eq!(beside.0, Vec3::splat(0.25));
    // From above the sun looking down: the sun hides the plane.
    let down = trace_path(
        &accel,
        &params,
        Ray::new(Vec3::new(0.0, 20.0, 0.0), Vec3::NEG_Y),
        &mut rng,
    );
    assert_eq!(down.0, Vec3::new(10.0, 20.0, 40.0));
    // The plane's emission, in front of the sun.
    let mut above = scene.clone();
    above.sun = Some(Sun::new(Vec3::new(0.0, -10.0, 0.0), 1.0, Vec3::ONE, 10.0));
    let accel = Accel::build(&above).unwrap();
    let emit = trace_path(
        &accel,
        &params_for(&accel),
        Ray::new(Vec3::new(0.0, 1.0, 0.0), Vec3::NEG_Y),
        &mut rng,
    );
    assert!(emit.0.y >= 3.0 && emit.0.x < 10.0, "{:?}", emit.0);
}

fn params_for(accel: &Accel) -> prism_core::gpu::RenderParams {
    RenderSettings::default()
        .params(
            accel,
            &Camera::look_at(Vec3::Y, Vec3::ZERO, Vec3::Z, 40.0),
            1,
            1,
        )
        .unwrap()
}

/// Without a sun the parameter rows are zero, and a scene's frames are those
/// of before the sun existed (the sun's code is behind the radius test).
#[test]
fn no_sun_leaves_the_rows_zero() {
    let accel = Accel::build(&plane_scene(Material::lambertian(Vec3::splat(0.5)))).unwrap();
    let p = params_for(&accel);
    assert_eq!(p.sun_center_radius, [0.0; 4]);
    assert_eq!(p.sun_radiance, [0.0; 4]);
    let mut scene = plane_scene(Material::lambertian(Vec3::splat(0.5)));
    scene.sun = Some(Sun::new(
        Vec3::new(1.0, 2.0, 3.0),
        0.5,
        Vec3::new(1.0, 0.5, 0.25),
        4.0,
    ));
    let accel = Accel::build(&scene).unwrap();
    let p = params_for(&accel);
    assert_eq!(p.sun_center_radius, [1.0, 2.0, 3.0, 0.5]);
    assert_eq!(p.sun_radiance, [4.0, 2.0, 1.0, 1.0]);
    let off = RenderSettings {
        sun_nee: false,
        ..RenderSettings::default()
    }
    .params(
        &accel,
        &Camera::look_at(Vec3::Y, Vec3::ZERO, Vec3::Z, 40.0),
        1,
        1,
    )
    .unwrap();
    assert_eq!(off.sun_radiance, [4.0, 2.0, 1.0, 0.0]);
}
