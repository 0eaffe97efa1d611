//! The `render_settings` check: raw image sizes, settings and cameras
//! validated alike by every entry point, valid ones rendered at a tiny size on
//! both traversals, and a cancelled frame leaving the backend usable.

use crate::backend::with_backend;
use crate::bytes::Bytes;
use crate::reference::compare_with_brute_force;
use crate::scenes::same_error;
use crate::{MAX_RENDER_SIDE, MAX_RENDER_WORK, Violation};
use glam::Vec3;
use prism_core::{
    Accel, Backend, Camera, Error, Hit, Image, Integrator, Material, NoProgress, PixelFormat,
    Progress, Ray, RenderSettings, Scene, Sky,
};
use prism_cpu::{CpuBackend, Traversal};
use std::cell::RefCell;

/// Cancels after a given number of `advance` calls.
struct CancelAfter {
    limit: u64,
    calls: std::sync::atomic::AtomicU64,
}

impl Progress for CancelAfter {
    fn advance(&self, _done: u64, _total: u64) {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn cancelled(&self) -> bool {
        self.calls.load(std::sync::atomic::Ordering::Relaxed) >= self.limit
    }
}

/// A small scene of every material kind and both primitive kinds, with decoded
/// (valid) material parameters.
fn render_scene(b: &mut Bytes) -> Scene {
    let mut s = Scene::new();
    s.sky = match b.u8() % 3 {
        0 => Sky::rtiow(),
        1 => Sky::BLACK,
        _ => Sky::constant(Vec3::new(b.unit(), b.unit(), b.unit())),
    };
    s.light.position = b.vec3();
    let blend = Material::blend(
        Material::lambertian(Vec3::splat(b.unit())),
        Material::metal(Vec3::splat(b.unit()), b.unit()),
        b.unit(),
    );
    let glass_ior = b.f32();
    let glass = Material::dielectric(if glass_ior > 0.0 && glass_ior.is_finite() {
        glass_ior
    } else {
        1.5
    });
    let ids = [
        s.add_material(Material::lambertian(Vec3::splat(0.5))),
        s.add_material(blend),
        s.add_material(glass),
        s.add_material(Material::emissive(Vec3::splat(8.0 * b.unit()))),
    ];
    s.add_sphere(Vec3::new(0.0, -100.5, -1.0), 100.0, ids[0]);
    s.add_sphere(Vec3::new(0.0, 0.0, -1.0), 0.5, ids[1]);
    s.add_sphere(Vec3::new(-1.0, 0.0, -1.0), 0.5, ids[2]);
    s.add_sphere(Vec3::new(-1.0, 0.0, -1.0), 0.4, ids[2]);
    s.add_triangle(
        Vec3::new(1.0, -0.5, -2.0),
        Vec3::new(2.0, -0.5, -1.0),
        Vec3::new(1.5, 1.0, -1.5),
        ids[3],
    );
    s.add_triangle(Vec3::ZERO, Vec3::X, Vec3::X * 2.0, ids[1]);
    s
}

/// Whether every camera value is of a size a real scene uses; inside this
/// domain a NaN pixel is an integrator bug and the two CPU traversals must
/// render the same image, outside it overflow and rounding are expected.
fn camera_is_tame(c: &Camera) -> bool {
    let tame = |x: f32| x.abs() <= 1e4;
    [c.look_from, c.look_at, c.up]
        .iter()
        .all(|v| v.to_array().into_iter().all(tame))
        && c.up.length() >= 1e-3
        && tame(c.aperture)
        && tame(c.focus_distance)
        && c.focus_distance >= 1e-3
        && (c.look_from - c.look_at).length() >= 1e-3
        && c.vfov_degrees >= 1e-2
        && c.vfov_degrees <= 179.9
}

/// Arbitrary image size, settings and camera: the raw values must be refused
/// with the same typed error by every entry point that sees them; valid ones
/// render (capped to a tiny size) on the CPU backend, and cancellation mid-frame
/// is an error after which the backend still renders.
pub fn render_settings(data: &[u8]) -> Result<(), Violation> {
    let mut b = Bytes::new(data);
    let (width, height) = (b.size(1 << 16), b.size(1 << 16));
    let settings = RenderSettings {
        integrator: Integrator::ALL[usize::from(b.u8() % 3)],
        spp: b.size(RenderSettings::MAX_SPP),
        max_depth: b.size(RenderSettings::MAX_DEPTH),
        seed: b.u32(),
        ao_samples: b.size(RenderSettings::MAX_AO_SAMPLES),
        ao_distance: b.f32(),
        ao_shadows: b.u8() & 1 == 1,
        rr_depth: b.size(8),
        // Not drawn from the input, so that the corpora keep their meaning.
        sun_nee: true,
        ao_extra: 0.0,
    };
    let camera = Camera {
        look_from: b.vec3(),
        look_at: b.vec3(),
        up: b.vec3(),
        vfov_degrees: b.f32(),
        aperture: b.f32(),
        focus_distance: b.f32(),
    };
    let format = if b.u8() & 1 == 0 {
        PixelFormat::Srgba8
    } else {
        PixelFormat::LinearF32
    };
    let cancel_after = match b.u8() {
        0..=239 => None,
        k => Some(u64::from(k - 240)),
    };
    let mut scene = render_scene(&mut b);

    // The raw size: refused by Image::new exactly when checked_pixels refuses it.
    // Valid sizes are not allocated here (up to 2^30 pixels), only validated.
    let size_ok = prism_core::Image::checked_pixels(width, height);
    if let Err(e) = &size_ok {
        match Image::new(width, height, format) {
            Err(ref e2) if same_error(e2, e) => {}
            r => return violation!("checked_pixels gave {e:?} but Image::new gave {r:?}"),
        }
        if !matches!(e, Error::ImageSize { width: w, height: h, .. } if *w == width && *h == height)
        {
            return violation!("{width}x{height}: size error {e:?} does not name the size");
        }
    }
    let (w, h) = (
        width.clamp(1, MAX_RENDER_SIDE),
        height.clamp(1, MAX_RENDER_SIDE),
    );
    let mut image = match Image::new(w, h, format) {
        Ok(i) => i,
        Err(e) => return violation!("Image::new({w}, {h}) failed: {e:?}"),
    };
    // What render must say about the raw settings and the camera at the tiny size.
    let expected = settings
        .validate()
        .and_then(|()| camera.frame(w, h).map(|_| ()));
    if size_ok.is_ok() {
        // The raw size reaches the camera too (its aspect ratio); it must not panic.
        let _ = camera.frame(width, height);
    }

    with_backend(|backend| {
        // A non-finite light position is refused naming it; the frame is then
        // rendered with its non-finite coordinates at 0.
        let position = scene.light.position;
        if !position.is_finite() {
            match backend.set_scene(&scene) {
                Err(Error::SceneLightInvalid {
                    field: "light.position",
                    value,
                    ..
                }) if value
                    .iter()
                    .zip(position.to_array())
                    .all(|(a, b)| a.to_bits() == b.to_bits()) => {}
                got => {
                    return violation!(
                        "light at {position:?}: expected SceneLightInvalid, got {got:?}"
                    );
                }
            }
            scene.light.position = Vec3::from(
                position
                    .to_array()
                    .map(|v| if v.is_finite() { v } else { 0.0 }),
            );
        }
        if let Err(e) = backend.set_scene(&scene) {
            return violation!("the render scene was refused: {e:?}");
        }
        if let Err(e) = &expected {
            // Refused before any work is done, so the raw values are safe to send.
            return match backend.render(&camera, &settings, &mut image, &NoProgress) {
                Err(got) if same_error(e, &got) => known_good_render(backend, "a refused render"),
                got => violation!("expected {e:?} from render, got {got:?}"),
            };
        }
        // Valid: rendered with spp, depth and AO samples capped (the raw values
        // may ask for hours of work).
        let capped = settings_capped(&settings);
        let result = match cancel_after {
            Some(limit) => {
                let progress = CancelAfter {
                    limit,
                    calls: Default::default(),
                };
                match backend.render(&camera, &capped, &mut image, &progress) {
                    Err(Error::Cancelled) => {
                        return known_good_render(backend, "a cancelled render");
                    }
                    r => r,
                }
            }
            None => backend.render(&camera, &capped, &mut image, &NoProgress),
        };
        let stats = match result {
            Ok(s) => s,
            Err(e) => return violation!("valid capped settings {capped:?} were refused: {e:?}"),
        };
        let samples = u64::from(w) * u64::from(h) * u64::from(capped.spp);
        if stats.rays < samples {
            return violation!("{} rays reported for {samples} samples", stats.rays);
        }
        if !camera_is_tame(&camera) {
            // Rays from a lens 1e7 wide see the scene from 2^24 of its sizes
            // away, where the primitive tests round to hits off their boxes, so
            // the two traversals (different boxes) may differ; overflow is possible.
            return Ok(());
        }
        if let Err(differ) = same_with_binary_traversal(backend, &camera, &capped, &image) {
            // The traversals may part where the rule of `compare_traversal` lets
            // them (a tie, a hit off its primitive's box); every ray says which.
            every_ray_like_brute_force(backend, &scene, &camera, &capped, w, h)
                .map_err(|v| Violation(format!("{differ}, and {v} ({capped:?}, {camera:?})")))?;
        }
        finite_radiance(&image).map_err(|v| Violation(format!("{v} ({capped:?}, {camera:?})")))
    })
}

/// Every linear pixel finite and non-negative (an sRGB image has none: NaN
/// encodes as 0 there).
pub(crate) fn finite_radiance(image: &Image) -> Result<(), Violation> {
    let pixels = image.linear();
    match pixels
        .iter()
        .position(|p| p.iter().any(|c| !(c.is_finite() && *c >= 0.0)))
    {
        Some(i) => violation!(
            "pixel {i} = {:?} is not a finite non-negative radiance",
            pixels.get(i)
        ),
        None => Ok(()),
    }
}

/// Render again with the core's binary traversal (the backend's default is its
/// widest BVH) and require the very same pixels, bit for bit.
fn same_with_binary_traversal(
    backend: &mut CpuBackend,
    camera: &Camera,
    settings: &RenderSettings,
    image: &Image,
) -> Result<(), Violation> {
    let mut binary = image.clone();
    if let Err(e) = backend.set_traversal(Traversal::Binary) {
        return violation!("set_traversal(Binary) failed: {e}");
    }
    let result = backend.render(camera, settings, &mut binary, &NoProgress);
    if let Err(e) = backend.set_traversal(Traversal::default()) {
        return violation!("set_traversal back to the default failed: {e}");
    }
    if let Err(e) = result {
        return violation!("the binary-traversal render failed: {e:?}");
    }
    let bits = |i: &Image| -> Vec<u32> {
        match i.format() {
            PixelFormat::LinearF32 => i.linear().iter().flatten().map(|c| c.to_bits()).collect(),
            PixelFormat::Srgba8 => i.rgba8().iter().map(|p| u32::from_le_bytes(*p)).collect(),
        }
    };
    let (wide, binary) = (bits(image), bits(&binary));
    match wide.iter().zip(&binary).position(|(a, b)| a != b) {
        Some(i) => violation!(
            "wide and binary traversals render different images: value {i} is {:#x} vs {:#x}",
            wide.get(i).copied().unwrap_or_default(),
            binary.get(i).copied().unwrap_or_default()
        ),
        None => Ok(()),
    }
}

/// Render `camera`'s `width` x `height` frame again through core's integrators,
/// ray by ray: every closest-hit and any-hit query is traced with each of the
/// backend's traversals and checked against brute force under the rule of
/// [`compare_traversal`](crate::reference::compare_traversal) (ties, hits off
/// their primitive's box), then answered as the backend's default traversal
/// answers it. Where two traversals' images differ, this says whether every
/// ray they traced stays within that rule.
fn every_ray_like_brute_force(
    backend: &mut CpuBackend,
    scene: &Scene,
    camera: &Camera,
    settings: &RenderSettings,
    width: u32,
    height: u32,
) -> Result<(), Violation> {
    // Built as the backend built it: the same tree, so the same slots.
    let accel = match Accel::build(scene) {
        Ok(a) => a,
        Err(e) => return violation!("the render scene did not build: {e:?}"),
    };
    let params = match settings.params(&accel, camera, width, height) {
        Ok(p) => p,
        Err(e) => return violation!("valid settings gave no render parameters: {e:?}"),
    };
    let mut slot_of = vec![Hit::NO_PRIM; scene.primitive_count()];
    for (slot, p) in accel.primitives().iter().enumerate() {
        if let Some(s) = slot_of.get_mut(p.id() as usize) {
            *s = slot as u32;
        }
    }
    let tracer = CheckedTracer {
        accel: &accel,
        scene,
        slot_of,
        backend: RefCell::new(backend),
        first: RefCell::new(None),
    };
    for y in 0..height {
        for x in 0..width {
            prism_core::integrator::render_pixel(&tracer, &params, x, y);
        }
    }
    tracer.first.into_inner().map_or(Ok(()), Err)
}

/// The integrators' tracer of [`every_ray_like_brute_force`].
struct CheckedTracer<'a> {
    accel: &'a Accel,
    scene: &'a Scene,
    /// Slot of each scene primitive id in `accel`.
    slot_of: Vec<u32>,
    backend: RefCell<&'a mut CpuBackend>,
    /// The first query that broke the rule.
    first: RefCell<Option<Violation>>,
}

impl CheckedTracer<'_> {
    /// Check `ray` on every traversal, then answer it with the default one:
    /// (closest hit with `prim` as a slot, occluded).
    fn trace(&self, ray: &Ray) -> (Hit, bool) {
        if !ray.is_valid() {
            // Never made by the integrators from valid settings; answered by core.
            return (self.accel.intersect_slot(ray), self.accel.occluded(ray));
        }
        let mut backend = self.backend.borrow_mut();
        let rays = std::slice::from_ref(ray);
        if self.first.borrow().is_none()
            && let Err(v) = compare_with_brute_force(&mut backend, self.scene, rays)
        {
            *self.first.borrow_mut() = Some(v);
        }
        let (mut hit, mut occluded) = ([Hit::MISS], [false]);
        let answered = backend.intersect(rays, &mut hit).is_ok()
            && backend.occluded(rays, &mut occluded).is_ok();
        if !answered && self.first.borrow().is_none() {
            *self.first.borrow_mut() = Some(Violation(format!("valid ray {ray:?} refused")));
        }
        let [mut hit] = hit;
        if hit.is_hit() {
            hit.prim = self
                .slot_of
                .get(hit.prim as usize)
                .copied()
                .unwrap_or(Hit::NO_PRIM);
        }
        (hit, occluded[0])
    }
}

impl prism_core::integrator::Tracer for CheckedTracer<'_> {
    fn accel(&self) -> &Accel {
        self.accel
    }
    fn closest_slot(&self, ray: &Ray) -> Hit {
        self.trace(ray).0
    }
    fn occluded(&self, ray: &Ray) -> bool {
        self.trace(ray).1
    }
}

/// `settings` with spp, depth and AO samples capped at [`MAX_RENDER_WORK`].
fn settings_capped(s: &RenderSettings) -> RenderSettings {
    RenderSettings {
        spp: s.spp.min(MAX_RENDER_WORK),
        max_depth: s.max_depth.min(MAX_RENDER_WORK),
        ao_samples: s.ao_samples.min(MAX_RENDER_WORK),
        ..*s
    }
}

/// A valid 2x2 render of the backend's current scene, which must succeed.
fn known_good_render(backend: &mut CpuBackend, after: &str) -> Result<(), Violation> {
    let camera = Camera::look_at(Vec3::new(0.0, 0.0, 3.0), Vec3::ZERO, Vec3::Y, 40.0);
    let settings = RenderSettings {
        spp: 1,
        max_depth: 2,
        ..Default::default()
    };
    let mut image = match Image::new(2, 2, PixelFormat::Srgba8) {
        Ok(i) => i,
        Err(e) => return violation!("Image::new(2, 2) failed: {e:?}"),
    };
    match backend.render(&camera, &settings, &mut image, &NoProgress) {
        Ok(_) => Ok(()),
        Err(e) => violation!("after {after}: a valid 2x2 render failed: {e:?}"),
    }
}
