//! Properties of the camera, the sRGB encoding and the integrators.

mod common;

use common::{DVec3, config, d, rotation, unit_vec3, vec3};
use glam::Vec3;
use prism_core::camera::camera_ray;
use prism_core::image::{
    Image, PixelFormat, SRGB8_TABLE_SLOTS, Srgb8Table, encode_srgba8, linear_to_srgb8,
};
use prism_core::integrator::{
    PHONG_AMBIENT, Tracer, recip_pow2_up, render_pixel, spawn_tmin, surface_margin, trace_ao,
    trace_whitted,
};
use prism_core::rng::Pcg;
use prism_core::scene::Sky;
use prism_core::{Accel, Camera, Hit, Integrator, Material, Ray, RenderSettings, Scene};
use proptest::prelude::*;
use std::cell::RefCell;

// ---------------------------------------------------------------------------
// sRGB

/// The sRGB decoding curve (IEC 61966-2-1), in `f64`.
fn srgb_to_linear(s: f64) -> f64 {
    if s <= 0.04045 {
        s / 12.92
    } else {
        ((s + 0.055) / 1.055).powf(2.4)
    }
}

/// Decoding each 8-bit value and encoding it again gives the value back: the
/// encoder is the standard curve, rounded to nearest.
#[test]
fn srgb_round_trip() {
    for v in 0..=255u8 {
        let linear = srgb_to_linear(v as f64 / 255.0) as f32;
        assert_eq!(linear_to_srgb8(linear), v, "linear {linear}");
    }
    assert_eq!(linear_to_srgb8(0.5), 188);
    for (x, want) in [
        (f32::NAN, 0),
        (f32::NEG_INFINITY, 0),
        (-1.0, 0),
        (-0.0, 0),
        (2.0, 255),
        (f32::INFINITY, 255),
    ] {
        assert_eq!(linear_to_srgb8(x), want, "{x}");
    }
    assert_eq!(encode_srgba8(Vec3::new(0.0, 0.5, 1.0)), [0, 188, 255, 255]);
}

/// The table encodes every `f32` from 2^-14 to 1 exactly as the curve does (all
/// 117 M of them: every value where the curve's `powf` or a step lies), and the
/// values outside that range.
#[test]
fn srgb_table_equals_the_curve_everywhere() {
    let table = Srgb8Table::new();
    assert_eq!(table.slots().len(), SRGB8_TABLE_SLOTS as usize + 1);
    let first = 2.0f32.powi(-14);
    // Below 2^-14 every value encodes to 0: 12.92 * 2^-14 * 255 + 0.5 < 1.
    assert_eq!(linear_to_srgb8(f32::from_bits(first.to_bits() - 1)), 0);
    let mut mismatches = 0u64;
    let mut first_mismatch = None;
    for bits in first.to_bits()..=1.0f32.to_bits() {
        let c = f32::from_bits(bits);
        if table.encode(c) != linear_to_srgb8(c) {
            mismatches += 1;
            first_mismatch.get_or_insert(c);
        }
    }
    assert_eq!(mismatches, 0, "first at {first_mismatch:?}");
    // Every level is reached, each from its own step.
    let steps = table
        .slots()
        .iter()
        .filter(|s| f32::from_bits(s.step) <= 1.0)
        .count();
    assert_eq!(steps, 255);
    for c in [
        f32::NAN,
        -f32::NAN,
        f32::NEG_INFINITY,
        -1.0,
        -0.0,
        0.0,
        f32::from_bits(1),
        1e-30,
        first / 2.0,
        1.0 + f32::EPSILON,
        2.0,
        f32::MAX,
        f32::INFINITY,
    ] {
        assert_eq!(table.encode(c), linear_to_srgb8(c), "{c}");
    }
    assert_eq!(
        table.encode_srgba8(Vec3::new(0.0, 0.5, 1.0)),
        encode_srgba8(Vec3::new(0.0, 0.5, 1.0))
    );
}

/// `Image::to_rgba8_bytes` gives `encode_srgba8`'s bytes for every pixel, both
/// for small images (encoded by the curve) and large ones (through the table).
#[test]
fn image_to_rgba8_bytes_equals_the_curve() {
    for (width, height) in [(7, 5), (256, 128)] {
        let mut image = Image::new(width, height, PixelFormat::LinearF32).unwrap();
        let n = image.pixel_count();
        for (i, p) in image.linear_mut().iter_mut().enumerate() {
            // Ramps from below 0 to above 1 per channel, plus NaN and infinities.
            let x = i as f32 / n as f32;
            *p = [
                x * 1.2 - 0.1,
                (x * 7.0).fract(),
                (x * 31.0).fract() * 1e-2,
                1.0,
            ];
        }
        image.linear_mut()[0] = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.0];
        let want: Vec<u8> = image
            .linear()
            .iter()
            .flat_map(|p| encode_srgba8(Vec3::new(p[0], p[1], p[2])))
            .collect();
        let got = image.to_rgba8_bytes().expect("8-bit bytes");
        assert_eq!(got.len(), n * 4);
        let first = got.iter().zip(&want).position(|(a, b)| a != b);
        assert_eq!(first, None, "{width}x{height}: first differing byte");
        // The ramp covers the whole staircase.
        assert_eq!(got.iter().step_by(4).max(), Some(&255));
    }
}

proptest! {
    #![proptest_config(config(2000))]

    /// The table agrees with the curve on any value, including the tiny ones
    /// the exhaustive test leaves out.
    #[test]
    fn srgb_table_equals_the_curve(bits in any::<u32>()) {
        let table = Srgb8Table::new();
        let c = f32::from_bits(bits);
        prop_assert_eq!(table.encode(c), linear_to_srgb8(c), "{}", c);
    }

    /// The encoding is monotonic.
    #[test]
    fn srgb_monotonic(a in -0.5f32..1.5, b in -0.5f32..1.5) {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        prop_assert!(linear_to_srgb8(lo) <= linear_to_srgb8(hi), "{lo} -> {}, {hi} -> {}", linear_to_srgb8(lo), linear_to_srgb8(hi));
    }
}

// ---------------------------------------------------------------------------
// Camera

/// A camera that `frame` accepts.
fn camera() -> impl Strategy<Value = Camera> {
    (
        vec3(50.0),
        vec3(50.0),
        unit_vec3(),
        5.0f32..150.0,
        prop_oneof![Just(0.0f32), 0.0f32..2.0],
        0.5f32..50.0,
    )
        .prop_map(|(from, at, up, vfov, aperture, focus)| Camera {
            look_from: from,
            look_at: at,
            up,
            vfov_degrees: vfov,
            aperture,
            focus_distance: focus,
        })
        .prop_filter("well-defined frame", |c| {
            let fwd = c.look_at - c.look_from;
            fwd.length() > 0.1 && fwd.normalize().cross(c.up).length() > 0.1
        })
}

proptest! {
    #![proptest_config(config(1000))]

    /// A pinhole camera's centre ray looks at `look_at`; the rays through the top
    /// and bottom edge centres are `vfov` apart; all directions are unit length.
    #[test]
    fn pinhole_frame(cam in camera(), w in 1u32..4000, h in 1u32..4000, l in (0.0f32..1.0, 0.0f32..1.0)) {
        prop_assume!((0.125..=8.0).contains(&(w as f32 / h as f32)));
        let cam = Camera { aperture: 0.0, ..cam };
        let frame = cam.frame(w, h).expect("valid camera");
        let fwd = (cam.look_at - cam.look_from).normalize();
        let centre = camera_ray(&frame, 0.5, 0.5, l.0, l.1);
        prop_assert!((centre.dir.length() - 1.0).abs() < 1e-5);
        prop_assert!(centre.origin == cam.look_from);
        prop_assert!((centre.dir - fwd).length() < 1e-4, "centre ray {:?}, forward {:?}", centre.dir, fwd);
        let top = camera_ray(&frame, 0.5, 1.0, l.0, l.1).dir;
        let bottom = camera_ray(&frame, 0.5, 0.0, l.0, l.1).dir;
        let angle = top.dot(bottom).clamp(-1.0, 1.0).acos().to_degrees();
        prop_assert!((angle - cam.vfov_degrees).abs() < 0.01, "vertical field of view {angle}, asked {}", cam.vfov_degrees);
        // Up in the image is up in the world (the top ray leans towards `up`).
        prop_assert!(top.dot(cam.up) > bottom.dot(cam.up));
    }

    /// Thin lens: every lens sample of one image point starts on the lens disk
    /// and passes through the same point of the focus plane.
    #[test]
    fn thin_lens_focus(cam in camera(), st in (0.0f32..=1.0, 0.0f32..=1.0), a in (0.0f32..1.0, 0.0f32..1.0), b in (0.0f32..1.0, 0.0f32..1.0)) {
        let frame = cam.frame(64, 48).expect("valid camera");
        let fwd = (cam.look_at - cam.look_from).normalize();
        let focus_point = |l: (f32, f32)| {
            let r = camera_ray(&frame, st.0, st.1, l.0, l.1);
            let lens = r.origin - cam.look_from;
            assert!(lens.length() <= cam.aperture * 0.5 * (1.0 + 1e-5) + 1e-5, "origin off the lens: {lens:?}");
            assert!(lens.dot(fwd).abs() <= 1e-4 * (1.0 + cam.look_from.length()), "lens is not across the view direction");
            let t = (cam.focus_distance - lens.dot(fwd)) / r.dir.dot(fwd);
            r.origin + t * r.dir
        };
        let (p, q) = (focus_point(a), focus_point(b));
        // Rounding scale: the focus-plane rectangle's corner distance plus the eye's.
        let scale = cam.focus_distance * (1.0 + (cam.vfov_degrees.to_radians() * 0.5).tan() * 2.0 * (64.0 / 48.0)) + cam.look_from.length();
        prop_assert!((p - q).length() <= 1e-4 * scale, "focus points {p:?} and {q:?} differ");
    }
}

/// The thin-lens camera in `f64`, built from the `Camera` alone (not from its
/// frame): the right, up and back unit vectors, the half extents of the focus
/// rectangle per unit of focus distance, and the rounding scale of its points.
struct LensModel {
    eye: DVec3,
    u: DVec3,
    v: DVec3,
    w: DVec3,
    half_w: f64,
    half_h: f64,
    focus: f64,
    lens_radius: f64,
    scale: f64,
}

impl LensModel {
    fn new(cam: &Camera, width: u32, height: u32) -> Self {
        let w = (d(cam.look_from) - d(cam.look_at)).normalize();
        let u = d(cam.up).cross(w).normalize();
        let v = w.cross(u);
        let half_h = ((cam.vfov_degrees as f64).to_radians() * 0.5).tan();
        let half_w = width as f64 / height as f64 * half_h;
        let focus = cam.focus_distance as f64;
        let eye = d(cam.look_from);
        let reach = eye.x.abs().max(eye.y.abs()).max(eye.z.abs());
        LensModel {
            eye,
            u,
            v,
            w,
            half_w,
            half_h,
            focus,
            lens_radius: cam.aperture as f64 * 0.5,
            scale: 1.0 + reach + focus * (1.0 + half_w + half_h) + cam.aperture as f64,
        }
    }

    /// The lens point of lens sample `(l1, l2)`: the polar map of the unit disk,
    /// scaled to the lens.
    fn lens_point(&self, l1: f32, l2: f32) -> DVec3 {
        let (r, phi) = ((l1 as f64).sqrt(), std::f64::consts::TAU * l2 as f64);
        self.eye + self.lens_radius * r * (phi.cos() * self.u + phi.sin() * self.v)
    }

    /// The focus-plane point of image point `(s, t)` (`t = 1` at the top).
    fn focus_point(&self, s: f64, t: f64) -> DVec3 {
        let f = self.focus;
        self.eye - f * self.w
            + ((2.0 * s - 1.0) * self.half_w * f) * self.u
            + ((2.0 * t - 1.0) * self.half_h * f) * self.v
    }

    /// The image point `(s, t)` where `ray` crosses the focus plane.
    fn image_point(&self, ray: &Ray) -> (f64, f64) {
        let (o, dir) = (d(ray.origin), d(ray.dir));
        let lambda = (self.focus + (o - self.eye).dot(self.w)) / -dir.dot(self.w);
        let p = o + lambda * dir - self.eye;
        let s = (p.dot(self.u) / (self.focus * self.half_w) + 1.0) / 2.0;
        let t = (p.dot(self.v) / (self.focus * self.half_h) + 1.0) / 2.0;
        (s, t)
    }

    /// How far `(s, t)` recovered from a ray may be off: the `f32` field of
    /// view (`tanf` near 90 degrees amplifies its rounding) and the rounding of
    /// the ray's points over the size of the focus rectangle; under a
    /// thousandth of a pixel for the images tested.
    fn image_tolerance(&self) -> (f64, f64) {
        let e = 4e-7 * self.scale;
        (
            1e-5 + e / (self.focus * self.half_w),
            1e-5 + e / (self.focus * self.half_h),
        )
    }
}

proptest! {
    #![proptest_config(config(1000))]

    /// `camera_ray` is the thin lens, against an `f64` model built from the
    /// `Camera` alone: the ray for image point `(s, t)` and lens sample `(l1,
    /// l2)` starts at the lens point `eye + aperture / 2 * sqrt(l1) * (cos(2 pi
    /// l2) u + sin(2 pi l2) v)` and passes through the focus-plane point `eye - f
    /// w + (2 s - 1) half_w f u + (2 t - 1) half_h f v`, with a unit direction.
    #[test]
    fn camera_ray_is_the_thin_lens(cam in camera(), (width, height) in (1u32..2000, 1u32..2000), st in (0.0f32..=1.0, 0.0f32..=1.0), l in (0.0f32..1.0, 0.0f32..1.0)) {
        prop_assume!((0.125..=8.0).contains(&(width as f32 / height as f32)));
        let frame = cam.frame(width, height).expect("valid camera");
        let model = LensModel::new(&cam, width, height);
        let r = camera_ray(&frame, st.0, st.1, l.0, l.1);
        prop_assert!((r.dir.length() - 1.0).abs() < 1e-5, "|dir| = {}", r.dir.length());
        let lens = model.lens_point(l.0, l.1);
        prop_assert!((d(r.origin) - lens).length() <= 1e-6 * model.scale, "origin {:?}, lens point {lens:?}", r.origin);
        let focus = model.focus_point(st.0 as f64, st.1 as f64);
        let want = (focus - lens).normalize();
        let tol = 1e-5 * model.scale / (focus - lens).length();
        prop_assert!((d(r.dir) - want).length() <= tol, "dir {:?}, towards the focus point {want:?} (tolerance {tol})", r.dir);
    }
}

/// A [`Tracer`] over an [`Accel`] that records every ray it is asked about;
/// its closest hits are the `Accel`'s, or none at all when `misses` is set.
struct Recorder {
    accel: Accel,
    misses: bool,
    closest: RefCell<Vec<Ray>>,
    occluded: RefCell<Vec<Ray>>,
}

impl Recorder {
    fn new(scene: &Scene, misses: bool) -> Self {
        Recorder {
            accel: Accel::build(scene).expect("valid scene"),
            misses,
            closest: RefCell::new(Vec::new()),
            occluded: RefCell::new(Vec::new()),
        }
    }
}

impl Tracer for Recorder {
    fn accel(&self) -> &Accel {
        &self.accel
    }
    fn closest_slot(&self, ray: &Ray) -> Hit {
        self.closest.borrow_mut().push(*ray);
        if self.misses {
            Hit::MISS
        } else {
            self.accel.intersect_slot(ray)
        }
    }
    fn occluded(&self, ray: &Ray) -> bool {
        self.occluded.borrow_mut().push(*ray);
        self.accel.occluded(ray)
    }
}

proptest! {
    #![proptest_config(config(300))]

    /// Sample `k` of pixel `(x, y)`, for every integrator, is the camera ray
    /// through image point `((x + j1) / width, 1 - (y + j2) / height)` from lens
    /// sample `(l1, l2)`, where `j1, j2, l1, l2` are the first four numbers of
    /// `Pcg::for_path(y * width + x, k, seed)`; with one sample per pixel the
    /// jitter is the pixel's centre. So every sample lies inside its own pixel,
    /// and the same pixel traces the same rays again.
    #[test]
    fn pixel_samples_are_jittered_within_the_pixel(
        cam in camera(),
        (width, height) in (1u32..300, 1u32..300),
        (fx, fy) in (0.0f32..1.0, 0.0f32..1.0),
        (spp, seed) in (prop_oneof![Just(1u32), 2u32..6], any::<u32>()),
        integrator in prop::sample::select(Integrator::ALL.to_vec()),
    ) {
        prop_assume!((0.125..=8.0).contains(&(width as f32 / height as f32)));
        let (x, y) = ((fx * width as f32) as u32, (fy * height as f32) as u32);
        let mut scene = Scene::new();
        let m = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
        scene.add_sphere(Vec3::ZERO, 1.0, m);
        let rec = Recorder::new(&scene, true);
        let settings = RenderSettings { integrator, spp, seed, ..RenderSettings::default() };
        let params = settings.params(&rec.accel, &cam, width, height).expect("valid settings");
        render_pixel(&rec, &params, x, y);
        let rays = rec.closest.borrow().clone();
        prop_assert_eq!(rays.len(), spp as usize, "one camera ray per sample (every ray misses)");
        let model = LensModel::new(&cam, width, height);
        let (tol_s, tol_t) = model.image_tolerance();
        for (k, ray) in rays.iter().enumerate() {
            let mut rng = Pcg::for_path(y * width + x, k as u32, seed);
            let (j1, j2, l1, l2) = (rng.next_f32(), rng.next_f32(), rng.next_f32(), rng.next_f32());
            let (j1, j2) = if spp == 1 { (0.5, 0.5) } else { (j1 as f64, j2 as f64) };
            let s = (x as f64 + j1) / width as f64;
            let t = 1.0 - (y as f64 + j2) / height as f64;
            let (s_got, t_got) = model.image_point(ray);
            prop_assert!((s_got - s).abs() <= tol_s && (t_got - t).abs() <= tol_t, "sample {k}: image point ({s_got}, {t_got}), expected ({s}, {t})");
            let (x0, x1) = (x as f64 / width as f64, (x + 1) as f64 / width as f64);
            let (y0, y1) = (1.0 - (y + 1) as f64 / height as f64, 1.0 - y as f64 / height as f64);
            prop_assert!(s_got >= x0 - tol_s && s_got <= x1 + tol_s && t_got >= y0 - tol_t && t_got <= y1 + tol_t, "sample {k} left its pixel");
            let lens = model.lens_point(l1, l2);
            prop_assert!((d(ray.origin) - lens).length() <= 1e-6 * model.scale, "sample {k}: origin {:?}, lens point {lens:?}", ray.origin);
        }
        rec.closest.borrow_mut().clear();
        render_pixel(&rec, &params, x, y);
        prop_assert_eq!(&*rec.closest.borrow(), &rays, "the same pixel traced other rays");
    }

    /// Ambient occlusion draws `ao_samples` rays of two numbers each, starting at
    /// the hit point over `(spawn_tmin(p, origin) + surface_margin(size, cos), ao_distance)`,
    /// of unit length and on
    /// the side of the surface the camera ray came from, whichever side of a
    /// triangle it hits; a ray that is clearly above the surface at its `tmin`
    /// (by four times the hit point's own distance from the plane, measured in
    /// `f64`) does not hit the surface it leaves.
    #[test]
    fn ao_rays_leave_on_the_viewers_side(
        (rot, offset) in (rotation(), vec3(50.0)),
        (a, b) in (0.05f32..0.45, 0.05f32..0.45),
        (tilt, below, dist_exp) in ((-1.0f32..1.0, -1.0f32..1.0), any::<bool>(), -1.0f32..2.0),
        (ao_samples, ao_distance, state) in (1u32..32, 0.01f32..100.0, any::<u32>()),
    ) {
        let corner = |x: f32, y: f32| offset + rot * Vec3::new(x, y, 0.0);
        let (v0, v1, v2) = (corner(-10.0, -10.0), corner(10.0, -10.0), corner(0.0, 10.0));
        let albedo = Vec3::new(0.25, 0.5, 0.75);
        let mut scene = Scene::new();
        let m = scene.add_material(Material::lambertian(albedo));
        scene.add_triangle(v0, v1, v2, m);
        let up = rot * Vec3::Z;
        let side = if below { -up } else { up };
        let target = (1.0 - a - b) * v0 + a * v1 + b * v2;
        let origin = target + (rot * Vec3::new(tilt.0, tilt.1, 0.0) + side) * 10f32.powf(dist_exp);
        let ray = Ray::new(origin, target - origin);

        let rec = Recorder::new(&scene, false);
        let settings = RenderSettings { integrator: Integrator::Ao, ao_samples, ao_distance, ..RenderSettings::default() };
        let cam = Camera::look_at(origin, target, rot * Vec3::Y, 40.0);
        let params = settings.params(&rec.accel, &cam, 8, 8).expect("valid settings");
        let mut rng = Pcg { state };
        let (color, rays) = trace_ao(&rec, &params, ray, &mut rng, params.ao_samples);

        let hit = rec.accel.intersect_slot(&ray);
        prop_assert!(hit.is_hit(), "the camera ray misses the triangle");
        let p = ray.at(hit.t);
        // The plane in f64, its normal on the viewer's side, and p's height above it.
        let normal = d(v1 - v0).cross(d(v2 - v0)).normalize();
        let normal = if normal.dot(d(side)) > 0.0 { normal } else { -normal };
        let height = (d(p) - d(v0)).dot(normal);
        // Core's normal and the triangle's size, as the integrator takes them.
        let n_core = (v1 - v0).cross(v2 - v0).normalize_or(Vec3::Y);
        let size = v0.abs().max(v1.abs()).max(v2.abs()).max_element();
        let ao = rec.occluded.borrow();
        prop_assert_eq!(ao.len(), ao_samples as usize);
        prop_assert_eq!(rays, ao_samples + 1);
        for r in ao.iter() {
            prop_assert_eq!(r.origin, p);
            let tmin = spawn_tmin(p, origin) + surface_margin(size, r.dir.dot(n_core));
            prop_assert_eq!((r.tmin, r.tmax), (tmin, ao_distance));
            prop_assert!((r.dir.length() - 1.0).abs() < 1e-5, "|dir| = {}", r.dir.length());
            prop_assert!(r.dir.dot(side) >= -1e-6, "AO ray {:?} enters the surface (normal {:?} on the viewer's side)", r.dir, side);
            if d(r.dir).dot(normal) * r.tmin as f64 > 4.0 * height.abs() {
                prop_assert!(!rec.accel.occluded(r), "AO ray {:?} hits the surface it leaves (hit point {:e} off the plane)", r, height);
            }
        }
        let mut expected = Pcg { state };
        for _ in 0..2 * ao_samples {
            expected.next_u32();
        }
        prop_assert_eq!(rng, expected, "two numbers per AO ray");
        prop_assert!(color.cmple(albedo).all(), "colour {} above the albedo {}", color, albedo);
    }
}

/// At the far end of what `frame` accepts every camera ray still normalises
/// (unit length, pointing into the view), and at a focus distance so small that
/// the direction underflows the ray falls back to the view direction itself.
#[test]
fn camera_rays_at_the_ends_of_the_focus_range() {
    let base = Camera::look_at(
        Vec3::new(1.0, 2.0, 3.0),
        Vec3::new(1.0, 2.0, -7.0),
        Vec3::Y,
        90.0,
    );
    let fwd = Vec3::NEG_Z;
    // Reach f * (1 + half_w + half_h) = f * 3 at 90 degrees on a square image.
    let far = Camera {
        focus_distance: prism_core::camera::MAX_CAMERA_REACH / 3.0 * 0.999,
        aperture: 1e6,
        ..base
    };
    let frame = far.frame(8, 8).expect("within MAX_CAMERA_REACH");
    for (s, t) in [(0.0, 0.0), (0.5, 0.5), (1.0, 1.0), (0.0, 1.0)] {
        for l in [(0.0, 0.0), (0.99, 0.99), (0.25, 0.75)] {
            let r = camera_ray(&frame, s, t, l.0, l.1);
            assert!((r.dir.length() - 1.0).abs() < 1e-5, "{r:?}");
            assert!(r.dir.dot(fwd) > 0.5, "{r:?}");
        }
    }
    let over = Camera {
        focus_distance: prism_core::camera::MAX_CAMERA_REACH / 3.0 * 1.01,
        ..base
    };
    assert!(over.frame(8, 8).is_err());
    let tiny = Camera {
        focus_distance: 1e-30,
        ..base
    };
    let frame = tiny.frame(8, 8).expect("a tiny focus distance is allowed");
    for (s, t) in [(0.0, 0.0), (0.5, 0.5), (1.0, 0.25)] {
        assert_eq!(camera_ray(&frame, s, t, 0.5, 0.5).dir, fwd);
    }
}

// ---------------------------------------------------------------------------
// Integrators

/// Render a `w x h` image of `scene` and hand every pixel to `check`.
fn render(
    scene: &Scene,
    cam: &Camera,
    settings: &RenderSettings,
    (w, h): (u32, u32),
    mut check: impl FnMut(u32, u32, Vec3),
) -> u64 {
    let accel = Accel::build(scene).expect("valid scene");
    let params = settings.params(&accel, cam, w, h).expect("valid settings");
    let mut total = 0;
    for y in 0..h {
        for x in 0..w {
            let (c, rays) = render_pixel(&accel, &params, x, y);
            assert!(rays >= settings.spp, "fewer rays than samples");
            total += u64::from(rays);
            check(x, y, c);
        }
    }
    total
}

/// A camera at `(0, 0, 4)` looking at a unit sphere at the origin that fills the
/// middle of the frame.
fn furnace_camera() -> Camera {
    Camera::look_at(Vec3::new(0.0, 0.0, 4.0), Vec3::ZERO, Vec3::Y, 40.0)
}

/// One sample of ambient occlusion with `ao_samples` rays of length `ao_distance`.
fn ao_settings(ao_samples: u32, ao_distance: f32) -> RenderSettings {
    RenderSettings {
        integrator: Integrator::Ao,
        spp: 1,
        ao_samples,
        ao_distance,
        ..RenderSettings::default()
    }
}

/// The white furnace: a convex object that reflects or transmits all light,
/// under a uniform white sky, is invisible. Every path, whatever it does at the
/// surface, ends in the sky with its throughput unchanged, so every pixel is
/// exactly 1 (Russian roulette never fires at full throughput).
#[test]
fn white_furnace() {
    let materials = [
        Material::lambertian(Vec3::ONE),
        Material::metal(Vec3::ONE, 0.0),
        Material::dielectric(1.5),
        Material::blend(
            Material::lambertian(Vec3::ONE),
            Material::dielectric(1.33),
            0.5,
        ),
    ];
    for (k, m) in materials.into_iter().enumerate() {
        let mut scene = Scene::new();
        scene.sky = Sky::constant(Vec3::ONE);
        let id = scene.add_material(m);
        scene.add_sphere(Vec3::ZERO, 1.0, id);
        let settings = RenderSettings {
            spp: 4,
            max_depth: 64,
            seed: k as u32,
            rr_depth: 1,
            ..RenderSettings::default()
        };
        let rays = render(&scene, &furnace_camera(), &settings, (12, 12), |x, y, c| {
            assert!(
                (c - Vec3::ONE).abs().max_element() < 1e-5,
                "material {k}, pixel ({x}, {y}): {c:?}"
            );
        });
        // A sky pixel is 1 too: the paths must have met the sphere, each hit
        // adding at least one bounce ray to a camera ray per sample.
        let camera_rays = 12 * 12 * u64::from(settings.spp);
        assert!(
            rays > camera_rays + camera_rays / 8,
            "material {k}: {rays} rays for {camera_rays} samples; the sphere was hardly hit"
        );
    }
}

/// A grey sphere of albedo `a` under a white sky: a camera path hitting it
/// bounces once and escapes, so the pixel is `a` (or 1 on the sky).
#[test]
fn grey_furnace() {
    let mut scene = Scene::new();
    scene.sky = Sky::constant(Vec3::ONE);
    let id = scene.add_material(Material::lambertian(Vec3::new(0.25, 0.5, 0.75)));
    scene.add_sphere(Vec3::ZERO, 1.0, id);
    let settings = RenderSettings {
        spp: 1,
        max_depth: 8,
        rr_depth: 8,
        ..RenderSettings::default()
    };
    let mut hits = 0;
    render(&scene, &furnace_camera(), &settings, (16, 16), |x, y, c| {
        let on_sphere = (c - Vec3::new(0.25, 0.5, 0.75)).abs().max_element() < 1e-5;
        let on_sky = (c - Vec3::ONE).abs().max_element() < 1e-5;
        assert!(on_sphere || on_sky, "pixel ({x}, {y}): {c:?}");
        hits += on_sphere as u32;
    });
    assert!(
        hits > 16,
        "the sphere should cover part of the image ({hits} pixels)"
    );
}

/// A closed-form AO check: a lone convex sphere never occludes itself, so AO
/// shades every hit with its albedo exactly.
#[test]
fn ao_of_a_lone_sphere() {
    let mut scene = Scene::new();
    scene.sky = Sky::constant(Vec3::new(0.1, 0.2, 0.3));
    let id = scene.add_material(Material::lambertian(Vec3::splat(0.8)));
    scene.add_sphere(Vec3::ZERO, 1.0, id);
    let settings = ao_settings(16, 10.0);
    let mut hits = 0;
    render(&scene, &furnace_camera(), &settings, (16, 16), |x, y, c| {
        let on_sphere = (c - Vec3::splat(0.8)).abs().max_element() < 1e-5;
        let on_sky = (c - Vec3::new(0.1, 0.2, 0.3)).abs().max_element() < 1e-5;
        assert!(on_sphere || on_sky, "pixel ({x}, {y}): {c:?}");
        hits += on_sphere as u32;
    });
    assert!(
        hits > 16,
        "the sphere should cover part of the image ({hits} pixels)"
    );
}

/// An open plane occludes nothing, however far the camera: hit points found
/// from far away carry their camera's rounding error, and rays leaving them
/// must start beyond it (`spawn_tmin` scales with the ray's origin too). With
/// the start scaled by the hit point alone, a camera 10,000 units away saw
/// 43% of the plane occluded by itself.
#[test]
fn ao_of_an_open_plane_seen_from_afar() {
    let rot = glam::Quat::from_axis_angle(Vec3::new(0.3, -0.5, 0.8).normalize(), 0.7);
    let mut scene = Scene::new();
    scene.sky = Sky::constant(Vec3::new(0.0, 0.0, 5.0));
    let id = scene.add_material(Material::lambertian(Vec3::ONE));
    scene.add_triangle(
        rot * Vec3::new(-2.0, -2.0, 0.0),
        rot * Vec3::new(2.0, -2.0, 0.0),
        rot * Vec3::new(0.0, 2.0, 0.0),
        id,
    );
    let settings = ao_settings(64, 1.0);
    for distance in [1e2f32, 1e3, 1e4, 1e5] {
        let eye = rot * Vec3::new(0.37, 0.21, 1.0) * distance;
        let camera = Camera::look_at(eye, Vec3::ZERO, rot * Vec3::Y, 0.02 * 1e4 / distance);
        // The sky is blue above 1, the plane white times its open share.
        let (mut sum, mut hits) = (0.0, 0);
        render(&scene, &camera, &settings, (24, 24), |_, _, c| {
            if c.z <= 1.0 {
                sum += c.x;
                hits += 1;
            }
        });
        assert!(
            hits >= 24 * 24 / 4,
            "camera at {distance}: {hits} plane pixels"
        );
        let mean = sum / hits as f32;
        assert!(
            mean >= 0.999,
            "camera at {distance}: mean AO {mean} over {hits} pixels"
        );
    }
}

/// A convex sphere never occludes itself, however large: a ground sphere of
/// radius 10,000 under rtiow's camera. Its hit points lie off the surface by
/// rounding in proportion to the radius, not to `|p|`; without
/// `surface_margin` 0.26% of these AO rays hit the sphere they leave.
#[test]
fn ao_of_a_huge_ground_sphere_is_open() {
    let radius = 1e4;
    let mut scene = Scene::new();
    scene.sky = Sky::constant(Vec3::new(0.0, 0.0, 5.0));
    let id = scene.add_material(Material::lambertian(Vec3::ONE));
    scene.add_sphere(Vec3::new(0.0, -radius, 0.0), radius, id);
    let settings = ao_settings(64, 1.0);
    let camera = Camera::look_at(Vec3::new(13.0, 2.0, 3.0), Vec3::ZERO, Vec3::Y, 20.0);
    let mut ground = 0;
    render(&scene, &camera, &settings, (32, 32), |x, y, c| {
        if c.z <= 1.0 {
            ground += 1;
            assert_eq!(c, Vec3::ONE, "pixel ({x}, {y}): the sphere occludes itself");
        }
    });
    assert!(ground >= 32 * 32 / 4, "{ground} ground pixels");
}

/// A ray leaving rtiow-sized ground (radius 1000) at a shallow angle: the hit
/// point found from the camera lies 1e-4 inside the sphere, so a start of
/// `spawn_tmin` alone re-hits it at t = 3.7e-3; with `surface_margin` the ray
/// leaves.
#[test]
fn a_ray_leaving_a_large_sphere_clears_it() {
    let (center, radius) = (Vec3::new(0.0, -1000.0, 0.0), 1000.0);
    let mut scene = Scene::new();
    let id = scene.add_material(Material::lambertian(Vec3::ONE));
    scene.add_sphere(center, radius, id);
    let accel = Accel::build(&scene).expect("one sphere");
    let origin = Vec3::new(13.0, 2.0, 3.0);
    let p = Vec3::new(5.0214415, -0.013056517, 0.94732165);
    let dir = Vec3::new(0.652762, 0.0045322166, 0.7575496);
    let n = ((p - center) * (1.0 / radius)).normalize();
    let spawn = spawn_tmin(p, origin);
    let without = accel.intersect(&Ray::segment(p, dir, spawn, f32::INFINITY));
    assert!(
        without.is_hit(),
        "the fault this guards against is gone: {without:?}"
    );
    let size = center.abs().max_element() + radius;
    let tmin = spawn + surface_margin(size, dir.dot(n));
    let with = accel.intersect(&Ray::segment(p, dir, tmin, f32::INFINITY));
    assert!(!with.is_hit(), "self-hit at t = {} (tmin {tmin})", with.t);
}

/// A non-emissive material of any valid kind (lobe weights summing to at most 1).
fn surface() -> impl Strategy<Value = Material> {
    (
        (0.0f32..=1.0, 0.0f32..=1.0, 0.0f32..=1.0),
        0.0f32..=1.0,
        1.0f32..2.5,
        (0.0f32..=1.0, 0.0f32..=1.0, 0.0f32..=1.0),
    )
        .prop_map(|((r, g, b), fuzz, ior, (l, m, d))| {
            let s = (l + m + d).max(1.0);
            Material {
                albedo: Vec3::new(r, g, b),
                fuzz,
                emission: Vec3::ZERO,
                ior,
                lambert: l / s,
                metal: m / s,
                dielectric: d / s,
            }
        })
        .prop_filter("valid", |m| m.validate(0).is_ok())
}

proptest! {
    #![proptest_config(config(24))]

    /// Without emitters, under a uniform sky of radiance `L`, no pixel of a path-
    /// traced image exceeds `L` in any channel, whatever the materials and
    /// however the spheres overlap: the integrator never adds energy.
    #[test]
    fn path_never_exceeds_the_sky(
        spheres in prop::collection::vec((vec3(1.5), 0.2f32..1.2, surface()), 1..6),
        sky in (0.1f32..4.0, 0.1f32..4.0, 0.1f32..4.0),
        seed in any::<u32>(),
        rr_depth in 1u32..6,
    ) {
        let sky = Vec3::new(sky.0, sky.1, sky.2);
        let mut scene = Scene::new();
        scene.sky = Sky::constant(sky);
        for (c, r, m) in &spheres {
            let id = scene.add_material(*m);
            scene.add_sphere(*c, *r, id);
        }
        let settings = RenderSettings { spp: 2, max_depth: 12, seed, rr_depth, ..RenderSettings::default() };
        let cam = Camera::look_at(Vec3::new(0.0, 0.0, 6.0), Vec3::ZERO, Vec3::Y, 50.0);
        let mut worst = 0.0f32;
        render(&scene, &cam, &settings, (10, 10), |_, _, c| {
            worst = worst.max((c / sky).max_element());
        });
        prop_assert!(worst <= 1.0 + 1e-5, "a pixel reached {worst} times the sky");
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// `recip_pow2_up(c)` is the least power of two at or above `1 / c`.
    #[test]
    fn recip_pow2_up_is_the_next_power_of_two(c in 1e-3f32..=1.0) {
        let r = recip_pow2_up(c);
        let exact = 1.0 / c as f64;
        prop_assert_eq!(r.to_bits() & 0x007f_ffff, 0, "{} is not a power of two", r);
        prop_assert!(r as f64 >= exact && (r as f64) < 2.0 * exact, "{} for 1 / {}", r, c);
    }

    /// The surface margin is 1e-6 (1 + size) / cos for a cosine kept within
    /// [1e-3, 1], rounded up by less than a factor of two, whatever the sign
    /// of the cosine; a NaN cosine takes the smallest, as a zero one.
    #[test]
    fn surface_margin_is_at_most_twice_the_exact_margin(size in 0.0f32..1e6, cos in -2.0f32..2.0) {
        let m = surface_margin(size, cos) as f64;
        let capped = (cos.abs() as f64).clamp(1e-3, 1.0);
        let exact = 1e-6 * (1.0 + size as f64) / capped;
        let rounding = 1.0 + 4.0 * f32::EPSILON as f64;
        prop_assert!(m * rounding >= exact && m <= 2.0 * exact * rounding, "{} against {}", m, exact);
        prop_assert_eq!(surface_margin(size, f32::NAN), surface_margin(size, 0.0));
    }

    /// A constant sky is its colour exactly along every camera ray: no blend
    /// rounds it (a scene with nothing in view, any colour, every integrator).
    #[test]
    fn a_constant_sky_is_its_colour_exactly(
        colour in (0.0f32..4.0, 0.0f32..4.0, 0.0f32..4.0),
        integrator in prop::sample::select(vec![Integrator::Path, Integrator::Whitted, Integrator::Ao]),
    ) {
        let sky = Vec3::new(colour.0, colour.1, colour.2);
        let mut scene = Scene::new();
        scene.sky = Sky::constant(sky);
        // A scene needs a primitive: this one lies behind the camera.
        let grey = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
        scene.add_sphere(Vec3::new(0.0, 0.0, 50.0), 0.1, grey);
        let settings = RenderSettings { integrator, spp: 1, ..RenderSettings::default() };
        let cam = Camera::look_at(Vec3::ZERO, Vec3::new(0.3, 0.8, -1.0), Vec3::Y, 120.0);
        let mut off = 0;
        render(&scene, &cam, &settings, (9, 9), |_, _, c| off += (c != sky) as u32);
        prop_assert_eq!(off, 0);
    }
}

/// A light behind the surface gives no highlight: a ray grazing an open plane
/// whose mirrored light direction faces the eye ((r . v)^32 = 0.82 here) gets
/// ambient light only, as the Phong constants' docs say.
#[test]
fn whitted_light_behind_the_surface_lights_no_highlight() {
    let mut scene = Scene::new();
    let albedo = Vec3::new(0.5, 0.4, 0.3);
    let m = scene.add_material(Material::lambertian(albedo));
    let r = 100.0;
    scene.add_triangle(
        Vec3::new(-r, 0.0, -r),
        Vec3::new(r, 0.0, -r),
        Vec3::new(0.0, 0.0, r),
        m,
    );
    scene.light.position = Vec3::new(10.0, -0.1, 0.0);
    scene.light.color = Vec3::ONE;
    let accel = Accel::build(&scene).expect("valid scene");
    let eye = Vec3::new(-10.0, 1.0, 0.0);
    let settings = RenderSettings {
        integrator: Integrator::Whitted,
        ..Default::default()
    };
    let camera = Camera::look_at(eye, Vec3::ZERO, Vec3::Y, 40.0);
    let mut params = settings.params(&accel, &camera, 4, 4).expect("params");
    params.max_depth = 0; // the local colour of the first hit alone
    let (c, _) = trace_whitted(&accel, &params, prism_core::Ray::new(eye, -eye));
    let ambient = PHONG_AMBIENT * albedo;
    assert!(
        (c - ambient).abs().max_element() < 1e-6,
        "{c} against ambient {ambient}"
    );
}

/// A pinhole camera starts every ray at its eye, bit for bit, whatever the lens
/// sample: an eye coordinate of -0 stays -0 (adding the zero lens offset would
/// make it +0 for some samples, and the GPU kernels skip the lens there).
#[test]
fn pinhole_rays_start_exactly_at_the_eye() {
    let cam = Camera::look_at(
        Vec3::new(-0.0, 1.0, -0.0),
        Vec3::new(0.0, 0.0, -5.0),
        Vec3::Y,
        40.0,
    );
    assert_eq!(cam.aperture, 0.0);
    let frame = cam.frame(16, 16).expect("a valid camera");
    for l in [(0.0, 0.0), (0.99, 0.99), (0.25, 0.75), (0.6, 0.1)] {
        for (s, t) in [(0.0, 0.0), (0.5, 0.5), (1.0, 0.25)] {
            let r = camera_ray(&frame, s, t, l.0, l.1);
            let bits = |v: Vec3| v.to_array().map(f32::to_bits);
            assert_eq!(bits(r.origin), bits(cam.look_from), "lens sample {l:?}");
        }
    }
}
