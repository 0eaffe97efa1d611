//! Bad input gets a typed error naming the offending item, never a panic.

mod common;

use common::config;
use glam::Vec3;
use prism_core::backend::check_batch;
use prism_core::image::{MAX_IMAGE_DIMENSION, MAX_IMAGE_PIXELS};
use prism_core::{Accel, Camera, Error, Image, Material, PixelFormat, Ray, RenderSettings, Scene};
use proptest::prelude::*;

fn scene_with(build: impl FnOnce(&mut Scene, u32)) -> Scene {
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
    s.add_sphere(Vec3::ZERO, 1.0, m);
    s.add_triangle(Vec3::X, Vec3::Y, Vec3::Z, m);
    build(&mut s, m);
    s
}

#[test]
fn scene_errors_name_the_primitive() {
    assert_eq!(Accel::build(&Scene::new()).unwrap_err(), Error::EmptyScene);

    let s = scene_with(|s, m| {
        s.add_sphere(Vec3::new(0.0, f32::NAN, 0.0), 1.0, m);
    });
    assert!(matches!(
        Accel::build(&s),
        Err(Error::SphereCenterNotFinite { prim: 2, .. })
    ));

    for radius in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        let s = scene_with(|s, m| {
            s.add_sphere(Vec3::ONE, radius, m);
        });
        match Accel::build(&s) {
            Err(Error::SphereRadiusInvalid { prim: 2, radius: r }) => {
                assert!(r.to_bits() == radius.to_bits())
            }
            other => panic!("radius {radius}: {other:?}"),
        }
    }

    let s = scene_with(|s, m| {
        s.add_triangle(Vec3::ZERO, Vec3::ONE, Vec3::new(1.0, f32::INFINITY, 0.0), m);
    });
    assert!(matches!(
        Accel::build(&s),
        Err(Error::TriangleNotFinite {
            prim: 2,
            vertex: 2,
            ..
        })
    ));

    let s = scene_with(|s, _| {
        s.add_sphere(Vec3::ONE, 1.0, 5);
    });
    assert_eq!(
        Accel::build(&s).unwrap_err(),
        Error::MaterialOutOfRange {
            primitive: 2,
            material: 5,
            count: 1
        }
    );

    let s = scene_with(|s, _| {
        s.add_material(Material::metal(Vec3::ONE, -0.5));
    });
    assert!(matches!(
        Accel::build(&s),
        Err(Error::MaterialInvalid {
            index: 1,
            field: "fuzz",
            ..
        })
    ));

    // Degenerate triangles: kept by default (never hit), refused on request.
    let mut s = scene_with(|s, m| {
        s.add_triangle(Vec3::ZERO, Vec3::X, Vec3::X * 2.0, m);
    });
    assert!(Accel::build(&s).is_ok());
    s.reject_degenerate = true;
    assert_eq!(
        Accel::build(&s).unwrap_err(),
        Error::DegenerateTriangle { prim: 2 }
    );
}

#[test]
fn mesh_errors_add_nothing() {
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::ONE));
    let positions = [Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::new(f32::NAN, 0.0, 0.0)];
    assert_eq!(s.add_mesh(&positions, &[[0, 1, 2]], m), Ok(0));
    let before = s.primitive_count();
    assert_eq!(
        s.add_mesh(&positions, &[[0, 1, 2], [0, 2, 9]], m),
        Err(Error::IndexOutOfRange {
            mesh: 1,
            triangle: 1,
            index: 9,
            vertex_count: 4
        })
    );
    assert!(matches!(
        s.add_mesh(&positions, &[[0, 1, 2], [0, 3, 1]], m),
        Err(Error::VertexNotFinite {
            mesh: 1,
            triangle: 1,
            vertex: 3,
            ..
        })
    ));
    assert_eq!(
        s.primitive_count(),
        before,
        "a failed add_mesh must add nothing"
    );
    // Ids continue in insertion order across meshes and single primitives.
    assert_eq!(s.add_sphere(Vec3::ONE, 1.0, m), 1);
    assert_eq!(s.add_mesh(&positions, &[[0, 1, 2], [1, 2, 0]], m), Ok(2));
    assert_eq!(s.primitive_count(), 4);
}

#[test]
fn image_sizes() {
    for (w, h) in [
        (0, 1),
        (1, 0),
        (0, 0),
        (MAX_IMAGE_DIMENSION + 1, 1),
        (1, MAX_IMAGE_DIMENSION + 1),
        (MAX_IMAGE_DIMENSION, MAX_IMAGE_DIMENSION),
    ] {
        for format in [PixelFormat::LinearF32, PixelFormat::Srgba8] {
            match Image::new(w, h, format) {
                Err(Error::ImageSize { width, height, .. }) => assert_eq!((width, height), (w, h)),
                other => panic!("{w}x{h}: {other:?}"),
            }
        }
    }
    assert!(MAX_IMAGE_DIMENSION as u64 * MAX_IMAGE_DIMENSION as u64 > MAX_IMAGE_PIXELS);
    let img = Image::new(3, 2, PixelFormat::LinearF32).expect("small image");
    assert_eq!((img.width(), img.height(), img.pixel_count()), (3, 2, 6));
    assert_eq!(img.linear(), &[[0.0, 0.0, 0.0, 1.0]; 6]);
    assert!(img.rgba8().is_empty());
    assert_eq!(img.to_rgba8_bytes(), Ok([0, 0, 0, 255].repeat(6)));
    let img = Image::new(1, 5, PixelFormat::Srgba8).expect("small image");
    assert_eq!(img.rgba8(), &[[0, 0, 0, 255]; 5]);
    assert!(img.linear().is_empty());
}

#[test]
fn camera_errors() {
    let ok = Camera::look_at(Vec3::new(0.0, 1.0, 5.0), Vec3::ZERO, Vec3::Y, 40.0);
    assert!(ok.frame(16, 9).is_ok());
    let cases = [
        Camera {
            look_at: ok.look_from,
            ..ok
        },
        Camera {
            up: Vec3::ZERO,
            ..ok
        },
        Camera {
            up: ok.look_at - ok.look_from,
            ..ok
        },
        Camera {
            vfov_degrees: 0.0,
            ..ok
        },
        Camera {
            vfov_degrees: 180.0,
            ..ok
        },
        Camera {
            vfov_degrees: f32::NAN,
            ..ok
        },
        Camera {
            aperture: -0.1,
            ..ok
        },
        Camera {
            aperture: f32::INFINITY,
            ..ok
        },
        Camera {
            focus_distance: 0.0,
            ..ok
        },
        Camera {
            focus_distance: f32::NAN,
            ..ok
        },
        // Finite, but camera rays' squared lengths would overflow.
        Camera {
            focus_distance: 1e20,
            ..ok
        },
        Camera {
            aperture: 1e30,
            ..ok
        },
        Camera {
            vfov_degrees: 179.999_99,
            focus_distance: 1e13,
            ..ok
        },
        Camera {
            look_from: Vec3::new(f32::NAN, 0.0, 0.0),
            ..ok
        },
        Camera {
            up: Vec3::new(0.0, f32::INFINITY, 0.0),
            ..ok
        },
    ];
    for cam in cases {
        assert!(
            matches!(cam.frame(16, 9), Err(Error::Camera { .. })),
            "{cam:?}: {:?}",
            cam.frame(16, 9)
        );
    }
    assert!(matches!(
        ok.frame(0, 9),
        Err(Error::ImageSize {
            width: 0,
            height: 9,
            ..
        })
    ));
}

#[test]
fn settings_errors_name_the_field() {
    let ok = RenderSettings::default();
    assert_eq!(ok.validate(), Ok(()));
    let cases: [(RenderSettings, &str); 7] = [
        (RenderSettings { spp: 0, ..ok }, "spp"),
        (
            RenderSettings {
                spp: RenderSettings::MAX_SPP + 1,
                ..ok
            },
            "spp",
        ),
        (RenderSettings { max_depth: 0, ..ok }, "max_depth"),
        (
            RenderSettings {
                max_depth: RenderSettings::MAX_DEPTH + 1,
                ..ok
            },
            "max_depth",
        ),
        (
            RenderSettings {
                ao_samples: 0,
                ..ok
            },
            "ao_samples",
        ),
        (
            RenderSettings {
                ao_distance: 0.0,
                ..ok
            },
            "ao_distance",
        ),
        (
            RenderSettings {
                ao_distance: f32::NAN,
                ..ok
            },
            "ao_distance",
        ),
    ];
    for (s, name) in cases {
        match s.validate() {
            Err(Error::Setting { field, .. }) => assert_eq!(field, name),
            other => panic!("{s:?}: {other:?}"),
        }
    }
}

/// A ray with one component replaced by a bad value.
fn spoil(ray: Ray, which: usize, bad: f32) -> Ray {
    let mut r = ray;
    match which {
        0 => r.origin.x = bad,
        1 => r.origin.z = bad,
        2 => r.dir.y = bad,
        _ => r.tmin = bad,
    }
    r
}

proptest! {
    #![proptest_config(config(500))]

    /// `check_batch` finds the first invalid ray of a batch and reports its index
    /// and values; length mismatches are reported before anything else.
    #[test]
    fn batch_errors_name_the_ray(n in 1usize..64, at in any::<prop::sample::Index>(), which in 0usize..4, bad in prop_oneof![Just(f32::NAN), Just(f32::INFINITY), Just(f32::NEG_INFINITY)]) {
        let good = Ray::segment(Vec3::ONE, Vec3::NEG_Z, 0.0, 10.0);
        let mut rays = vec![good; n];
        prop_assert_eq!(check_batch("intersect", &rays, n), Ok(()));
        let mismatch = matches!(check_batch("intersect", &rays, n + 1), Err(Error::LengthMismatch { what: "intersect", .. }));
        prop_assert!(mismatch, "length mismatch not reported");
        let i = at.index(n);
        let spoiled = spoil(good, which, bad);
        // Every component spoiled so is invalid (tmin too: at -inf it would
        // enter the tree's absent-child boxes, which lie at +inf).
        prop_assert!(!spoiled.is_valid());
        rays[i] = spoiled;
        let want = [
            spoiled.origin.x, spoiled.origin.y, spoiled.origin.z, spoiled.tmin,
            spoiled.dir.x, spoiled.dir.y, spoiled.dir.z, spoiled.tmax,
        ];
        match check_batch("occluded", &rays, n) {
            Err(Error::InvalidRay { index, ray }) => {
                prop_assert_eq!(index, i);
                // Bits, so that the NaN it reports is compared too.
                prop_assert_eq!(ray.map(f32::to_bits), want.map(f32::to_bits));
            }
            other => return Err(TestCaseError::fail(format!("{other:?}"))),
        }
        // A batch with a bad ray and the wrong length: the length is reported.
        let first = matches!(
            check_batch("occluded", &rays, n + 1),
            Err(Error::LengthMismatch { inputs, outputs, .. }) if inputs == n && outputs == n + 1
        );
        prop_assert!(first, "length mismatch not reported first");
    }
}

#[test]
fn ray_validity() {
    let r = Ray::new(Vec3::ZERO, Vec3::X);
    assert!(r.is_valid());
    let o = Vec3::ZERO;
    assert!(!Ray::new(o, Vec3::ZERO).is_valid());
    assert!(!Ray::segment(o, Vec3::X, 2.0, 1.0).is_valid());
    assert!(!Ray::segment(o, Vec3::X, 0.0, f32::NAN).is_valid());
    assert!(Ray::segment(o, Vec3::X, 1.0, 1.0).is_valid());
    // A negative tmin is fine down to -f32::MAX; -inf is not.
    assert!(Ray::segment(o, Vec3::X, -f32::MAX, f32::INFINITY).is_valid());
    assert!(!Ray::segment(o, Vec3::X, f32::NEG_INFINITY, f32::INFINITY).is_valid());
    // Any mask is valid.
    assert!(r.with_mask(0).is_valid());
}
