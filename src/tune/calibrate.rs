//! Per-backend calibration of the time model: a few AO frames of a built-in
//! calibration scene rendered through the [`Backend`] trait, their work
//! counted on the host, the model's constants fitted by least squares, and
//! the result cached on disk keyed by backend, device and image size.
//!
//! Cache directory: the CUDA kernel cache's convention, `$PRISM_CACHE_DIR`,
//! else `$XDG_CACHE_HOME/prism`, else `~/.cache/prism`; one JSON file per key.
//! A missing, unreadable or corrupt entry means measuring again: the cache is
//! never fatal.
//!
//! A cached calibration is checked before it is used: one frame of the
//! calibration scene (the check frame) is counted and rendered again, and the
//! ratio of its measured time to the model's prediction is compared with the
//! ratio at calibration. A new driver, a new Prism (whose trees take other
//! steps), another clock speed or a busier machine moves that ratio; beyond
//! [`CHECK_TOLERANCE`] the constants are measured again. On the CPU here, a
//! calibration cached before the SAH builder's split by size predicted the
//! default scene's frames 15-18% short, and its path held the budget to 3.99%
//! mean against 0.73-0.97% once measured again (bench/RESULTS.md).

use crate::procedural::icosphere;
use glam::{Affine3A, Vec3};
use prism_core::tune::{Knobs, Sample, TimeModel, estimate, fit};
use prism_core::{
    Accel, Backend, Camera, Error, Geometry, Image, Instance, Material, NoProgress, PixelFormat,
    PointLight, RenderSettings, RenderStats, Scene,
};
use std::path::{Path, PathBuf};

/// Where calibrations are cached, if a directory can be named.
pub fn cache_dir() -> Option<PathBuf> {
    let non_empty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(d) = non_empty("PRISM_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = non_empty("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("prism"));
    }
    non_empty("HOME").map(|h| PathBuf::from(h).join(".cache").join("prism"))
}

/// Which time of a frame the model predicts and the tuner holds to the
/// budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FrameClock {
    /// The whole `render` call on the host's clock ([`RenderStats::total`]):
    /// with the image's copy back to the host and the host's own jitter.
    #[default]
    Wall,
    /// The frame's trace stage as the backend times it
    /// ([`RenderStats::trace`]): CUDA events or wgpu timestamp queries on a
    /// GPU, the host clock on the CPU. What a frame costs an engine that
    /// keeps the image on the device; on the GPU it is free of the host's
    /// scheduling and of the copy back, whose jitter no model predicts.
    Device,
}

impl FrameClock {
    /// This clock's reading of a frame, in milliseconds.
    #[inline]
    pub fn frame_ms(self, stats: &RenderStats) -> f64 {
        match self {
            FrameClock::Wall => stats.total.as_secs_f64() * 1e3,
            FrameClock::Device => stats.trace.as_secs_f64() * 1e3,
        }
    }
}

/// How to calibrate.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrationOptions {
    /// Image size of the calibration frames (the frames are this size and
    /// half of it each way): the size the engine will render.
    pub width: u32,
    /// See `width`.
    pub height: u32,
    /// Measure again even when a cached calibration exists.
    pub recalibrate: bool,
    /// Cache directory (default [`cache_dir`]); `None` there: no cache.
    pub cache_dir: Option<PathBuf>,
    /// The frame time to model (default [`FrameClock::Wall`]); each clock
    /// has its own cache entry.
    pub clock: FrameClock,
    /// Calibrate on the two-level calibration scene (the same geometry
    /// placed by instances, [`two_level_calibration_scene`]), for scenes
    /// with instances: a backend's two-level walk costs another time per
    /// step than its flat walk (on wgpu several times CUDA's ratio), so a
    /// model measured on the flat scene prices their frames wrong by a
    /// factor that differs with the AO ray count. Its own cache entry.
    pub two_level: bool,
}

impl CalibrationOptions {
    /// Calibrate for `width x height` frames, cached in [`cache_dir`].
    pub fn new(width: u32, height: u32) -> Self {
        CalibrationOptions {
            width,
            height,
            recalibrate: false,
            cache_dir: cache_dir(),
            clock: FrameClock::Wall,
            two_level: false,
        }
    }
}

/// A backend's fitted time model.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// Backend name.
    pub backend: String,
    /// Device description.
    pub device: String,
    /// Image size it was measured at.
    pub size: (u32, u32),
    /// Whether it was measured on the two-level calibration scene
    /// ([`CalibrationOptions::two_level`]).
    pub two_level: bool,
    /// The fitted model.
    pub model: TimeModel,
    /// Calibration frames measured.
    pub frames: usize,
    /// Largest relative error of the fit over those frames.
    pub worst_fit_error: f64,
    /// Whether it was read from the cache rather than measured now.
    pub cached: bool,
    /// The check frame's measured time over the model's prediction when it
    /// was measured (see the module's documentation).
    pub check_ratio: f64,
    /// Where a cached calibration was found but measured again: how far its
    /// check frame's ratio had moved (0.2: 20% off), beyond
    /// [`CHECK_TOLERANCE`].
    pub replaced_stale: Option<f64>,
}

/// How far the check frame's measured-over-predicted ratio may move from
/// its value at calibration before a cached calibration is measured again:
/// above the frame-to-frame jitter of a best-of-two frame (a few percent on
/// a shared machine), below the error a stale model brings (15% and more).
pub const CHECK_TOLERANCE: f64 = 0.08;

/// AO rays of the check frame (the calibration scene's middle view at full
/// size, with shadows).
const CHECK_AO_RAYS: u32 = 8;

/// AO ray counts of the calibration frames.
const CAL_AO_RAYS: [u32; 3] = [1, 8, 32];
/// Pre-pass pixels of a calibration frame's count: many, for exact features.
const CAL_PROBE_PIXELS: u32 = 16_384;

/// The calibration scene: a 3 x 3 grid of bumpy icospheres (20,480
/// triangles each) on a ground, and three views of it (far, middle, near) so
/// that work per ray varies apart from the ray counts.
pub fn calibration_scene() -> Result<(Scene, [Camera; 3]), Error> {
    calibration_scene_of(false)
}

/// The calibration scene with two levels: one icosphere geometry placed nine
/// times and a ground geometry placed once, the same triangles where the
/// flat scene has them, and the same views.
pub fn two_level_calibration_scene() -> Result<(Scene, [Camera; 3]), Error> {
    calibration_scene_of(true)
}

fn calibration_scene_of(two_level: bool) -> Result<(Scene, [Camera; 3]), Error> {
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::splat(0.6)));
    let ball = icosphere(5, |p| 0.12 * (6.0 * p.x).sin() * (5.0 * p.z).cos());
    let ball_geometry = if two_level {
        Some(scene.add_geometry(Geometry::mesh(&ball.positions, &ball.triangles, m)?))
    } else {
        None
    };
    for i in 0..9 {
        let at = Vec3::new((i % 3) as f32 * 2.5 - 2.5, 1.0, (i / 3) as f32 * 2.5 - 2.5);
        let t = Affine3A::from_translation(at);
        match ball_geometry {
            Some(g) => {
                scene.add_instance(Instance::new(g, t));
            }
            None => {
                let positions: Vec<Vec3> = ball
                    .positions
                    .iter()
                    .map(|&p| t.transform_point3(p))
                    .collect();
                scene.add_mesh(&positions, &ball.triangles, m)?;
            }
        }
    }
    let g = 20.0;
    let c = [
        Vec3::new(-g, 0.0, -g),
        Vec3::new(g, 0.0, -g),
        Vec3::new(g, 0.0, g),
        Vec3::new(-g, 0.0, g),
    ];
    let ground = [[0, 2, 1], [0, 3, 2]];
    if two_level {
        let ground = scene.add_geometry(Geometry::mesh(&c, &ground, m)?);
        scene.add_instance(Instance::new(ground, Affine3A::IDENTITY));
    } else {
        scene.add_mesh(&c, &ground, m)?;
    }
    scene.light = PointLight {
        position: Vec3::new(5.0, 10.0, 4.0),
        color: Vec3::ONE,
    };
    let look = |eye: Vec3, at: Vec3| Camera::look_at(eye, at, Vec3::Y, 50.0);
    Ok((
        scene,
        [
            look(Vec3::new(14.0, 8.0, 16.0), Vec3::new(0.0, 1.0, 0.0)),
            look(Vec3::new(6.0, 3.0, 7.0), Vec3::new(0.0, 1.0, 0.0)),
            look(Vec3::new(1.2, 1.6, 1.3), Vec3::new(-1.5, 0.8, -1.5)),
        ],
    ))
}

/// The cache file of a backend, device and size: a readable prefix and a
/// hash of the whole key (device descriptions hold spaces and slashes).
fn cache_file(
    dir: &Path,
    backend: &str,
    device: &str,
    (w, h): (u32, u32),
    clock: FrameClock,
    two_level: bool,
) -> PathBuf {
    // The wall clock's and the flat scene's keys are the ones they had
    // before there was a choice.
    let clock = match (clock, two_level) {
        (FrameClock::Wall, false) => "",
        (FrameClock::Device, false) => "-device",
        (FrameClock::Wall, true) => "-instances",
        (FrameClock::Device, true) => "-device-instances",
    };
    let key = format!("{backend}\0{device}\0{w}x{h}{clock}");
    // FNV-1a, 64 bits: enough to keep a handful of devices apart.
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    dir.join(format!("tune-{backend}-{w}x{h}{clock}-{hash:016x}.json"))
}

fn load(
    path: &Path,
    backend: &str,
    device: &str,
    size: (u32, u32),
    two_level: bool,
) -> Option<Calibration> {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    if v["backend"] != backend
        || v["device"] != device
        || v["width"] != size.0
        || v["height"] != size.1
        || v["prism"] != env!("CARGO_PKG_VERSION")
        || v["two_level"].as_bool().unwrap_or(false) != two_level
    {
        return None;
    }
    let c = v["coefficients"].as_array()?;
    let mut coefficients = [0.0; prism_core::tune::TERMS];
    if c.len() != coefficients.len() {
        return None;
    }
    for (k, x) in coefficients.iter_mut().zip(c) {
        *k = x.as_f64().filter(|x| x.is_finite() && *x >= 0.0)?;
    }
    Some(Calibration {
        backend: backend.into(),
        device: device.into(),
        size,
        two_level,
        model: TimeModel { coefficients },
        frames: v["frames"].as_u64()? as usize,
        worst_fit_error: v["worst_fit_error"].as_f64()?,
        cached: true,
        check_ratio: v["check_ratio"]
            .as_f64()
            .filter(|r| r.is_finite() && *r > 0.0)?,
        replaced_stale: None,
    })
}

fn save(path: &Path, c: &Calibration) -> std::io::Result<()> {
    let v = serde_json::json!({
        "backend": c.backend,
        "device": c.device,
        "width": c.size.0,
        "height": c.size.1,
        "two_level": c.two_level,
        "coefficients": c.model.coefficients,
        "frames": c.frames,
        "worst_fit_error": c.worst_fit_error,
        "check_ratio": c.check_ratio,
        "prism": env!("CARGO_PKG_VERSION"),
    });
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, v.to_string())?;
    std::fs::rename(tmp, path)
}

/// The calibration of `backend` for `options`' image size: from the cache,
/// or measured now (and cached). Measuring replaces the backend's scene with
/// the calibration scene: call it before `set_scene`.
pub fn calibrate(
    backend: &mut dyn Backend,
    options: &CalibrationOptions,
) -> Result<Calibration, Error> {
    let info = backend.info();
    let size = (options.width, options.height);
    let file = options.cache_dir.as_deref().map(|d| {
        cache_file(
            d,
            info.name,
            &info.device,
            size,
            options.clock,
            options.two_level,
        )
    });
    let cached = file
        .as_deref()
        .filter(|_| !options.recalibrate)
        .and_then(|f| load(f, info.name, &info.device, size, options.two_level));
    let mut stale = None;
    if let Some(c) = cached {
        let set = CalibrationSet::on(backend, options.two_level)?;
        let now = set.check_ratio(backend, &c.model, size, options.clock)?;
        let moved = (now / c.check_ratio - 1.0).abs();
        if moved <= CHECK_TOLERANCE {
            return Ok(c);
        }
        stale = Some(moved);
    }
    let mut c = measure(backend, size, options.clock, options.two_level)?;
    c.replaced_stale = stale;
    if let Some(f) = file {
        // A cache that cannot be written only means measuring next time.
        let _ = save(&f, &c);
    }
    Ok(c)
}

/// Render the calibration frames and fit the model.
fn measure(
    backend: &mut dyn Backend,
    (width, height): (u32, u32),
    clock: FrameClock,
    two_level: bool,
) -> Result<Calibration, Error> {
    let info = backend.info();
    let set = CalibrationSet::on(backend, two_level)?;
    let CalibrationSet { accel, views, base } = &set;
    let sizes = [(width, height), ((width / 2).max(1), (height / 2).max(1))];
    let mut samples = Vec::new();
    for &(w, h) in &sizes {
        let mut image = Image::new(w, h, PixelFormat::Srgba8)?;
        for camera in views {
            let work = estimate(
                accel,
                camera,
                (w, h),
                base.ao_distance,
                CAL_PROBE_PIXELS.min(w * h),
            )?;
            for shadows in [false, true] {
                for n in CAL_AO_RAYS {
                    let settings = Knobs::new(n, shadows).apply(base);
                    // Best of two after a warm-up: the device's steady speed.
                    let best = best_frame_ms(backend, camera, &settings, &mut image, clock, 2)?;
                    samples.push(Sample {
                        work: work.frame(Knobs::new(n, shadows)),
                        measured_ms: best,
                    });
                }
            }
        }
    }
    let model = fit(&samples).map_err(|e| match e {
        Error::Calibration { reason, .. } => Error::Calibration {
            what: format!("{} backend ({})", info.name, info.device),
            reason,
        },
        other => other,
    })?;
    let worst_fit_error = samples
        .iter()
        .map(|s| (model.predict_ms(&s.work) - s.measured_ms).abs() / s.measured_ms)
        .fold(0.0, f64::max);
    let check_ratio = set.check_ratio(backend, &model, (width, height), clock)?;
    Ok(Calibration {
        backend: info.name.into(),
        device: info.device,
        size: (width, height),
        two_level,
        model,
        frames: samples.len(),
        worst_fit_error,
        cached: false,
        check_ratio,
        replaced_stale: None,
    })
}

/// The calibration scene set on a backend, with its tree on the host (for
/// the frames' counts), its views and the AO settings its frames start from.
struct CalibrationSet {
    accel: Accel,
    views: [Camera; 3],
    base: RenderSettings,
}

impl CalibrationSet {
    /// Build the calibration scene (the two-level one if `two_level`) and
    /// set it on `backend`.
    fn on(backend: &mut dyn Backend, two_level: bool) -> Result<Self, Error> {
        let (scene, views) = calibration_scene_of(two_level)?;
        let accel = Accel::build(&scene)?;
        backend.set_scene(&scene)?;
        let base = RenderSettings {
            ao_distance: 0.5,
            ..RenderSettings::default()
        };
        Ok(CalibrationSet { accel, views, base })
    }

    /// The check frame's time, best of four after a warm-up (the
    /// calibration's frames take the best of two; the check must also stay
    /// clear of the tolerance on a busy machine), over `model`'s prediction
    /// from its work counted now.
    fn check_ratio(
        &self,
        backend: &mut dyn Backend,
        model: &TimeModel,
        (width, height): (u32, u32),
        clock: FrameClock,
    ) -> Result<f64, Error> {
        let camera = &self.views[1];
        let knobs = Knobs::new(CHECK_AO_RAYS, true);
        let work = estimate(
            &self.accel,
            camera,
            (width, height),
            self.base.ao_distance,
            CAL_PROBE_PIXELS.min(width * height),
        )?;
        let settings = knobs.apply(&self.base);
        let mut image = Image::new(width, height, PixelFormat::Srgba8)?;
        let best = best_frame_ms(backend, camera, &settings, &mut image, clock, 4)?;
        Ok(best / model.predict_ms(&work.frame(knobs)).max(1e-9))
    }
}

/// The fastest of `runs` renders of a frame after one untimed warm-up, by
/// `clock`: the device's steady speed.
fn best_frame_ms(
    backend: &mut dyn Backend,
    camera: &Camera,
    settings: &RenderSettings,
    image: &mut Image,
    clock: FrameClock,
    runs: u32,
) -> Result<f64, Error> {
    backend.render(camera, settings, image, &NoProgress)?;
    let mut best = f64::INFINITY;
    for _ in 0..runs {
        let stats = backend.render(camera, settings, image, &NoProgress)?;
        best = best.min(clock.frame_ms(&stats));
    }
    Ok(best)
}
