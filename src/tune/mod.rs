//! Frame budgets for engines: the per-frame API over [`prism_core::tune`]
//! ([`FrameTuner`]), per-backend calibration ([`calibrate()`]) and the scenes
//! and camera path of `prism animate` ([`scenes`]).
//!
//! ```
//! use prism::tune::{CalibrationOptions, FrameTuner, calibrate};
//! use prism::{Camera, Image, NoProgress, PixelFormat, RenderSettings, Scene, Material};
//! use prism::glam::Vec3;
//!
//! let mut backend = prism::open(prism::BackendChoice::Cpu)?.backend;
//! let mut options = CalibrationOptions::new(64, 48);
//! options.cache_dir = None; // measure now, cache nothing
//! let calibration = calibrate(&mut *backend, &options)?; // before set_scene
//!
//! let mut scene = Scene::new();
//! let grey = scene.add_material(Material::lambertian(Vec3::splat(0.6)));
//! scene.add_sphere(Vec3::new(0.0, 0.0, -3.0), 1.0, grey);
//! backend.set_scene(&scene)?;
//! let base = RenderSettings { ao_distance: 0.5, ..RenderSettings::default() };
//! let mut tuner = FrameTuner::new(calibration, &scene, base, Default::default())?;
//!
//! let camera = Camera::look_at(Vec3::ZERO, Vec3::NEG_Z, Vec3::Y, 45.0);
//! let mut image = Image::new(64, 48, PixelFormat::Srgba8)?;
//! for _ in 0..3 {
//!     let plan = tuner.plan(&camera, 64, 48, 5.0)?; // a 5 ms budget
//!     let stats = backend.render(&camera, &plan.settings, &mut image, &NoProgress)?;
//!     tuner.record(&plan, stats.total.as_secs_f64() * 1e3);
//!     assert!(plan.prepass_ms >= 0.0);
//! }
//! # Ok::<(), prism::Error>(())
//! ```
//!
//! On a GPU the next frame's pre-pass can run on the host while the device
//! renders this frame (`FrameTuner::estimate` changes nothing in the tuner);
//! give it a larger share of the budget, since it is no longer on the frame's
//! time:
//!
//! ```
//! # use prism::tune::{CalibrationOptions, FrameTuner, calibrate};
//! # use prism::{Camera, Image, NoProgress, PixelFormat, RenderSettings, Scene, Material};
//! # use prism::glam::Vec3;
//! # let mut backend = prism::open(prism::BackendChoice::Cpu)?.backend;
//! # let mut options = CalibrationOptions::new(64, 48);
//! # options.cache_dir = None;
//! # let calibration = calibrate(&mut *backend, &options)?;
//! # let mut scene = Scene::new();
//! # let grey = scene.add_material(Material::lambertian(Vec3::splat(0.6)));
//! # scene.add_sphere(Vec3::new(0.0, 0.0, -3.0), 1.0, grey);
//! # backend.set_scene(&scene)?;
//! # let base = RenderSettings { ao_distance: 0.5, ..RenderSettings::default() };
//! # let mut tuner = FrameTuner::new(calibration, &scene, base, Default::default())?;
//! # let mut image = Image::new(64, 48, PixelFormat::Srgba8)?;
//! let camera_at = |frame: u32| {
//!     let from = Vec3::new(0.1 * frame as f32, 0.0, 0.0);
//!     Camera::look_at(from, Vec3::new(0.0, 0.0, -3.0), Vec3::Y, 45.0)
//! };
//! tuner.set_prepass_share(0.25)?;
//! let mut next = tuner.estimate(&camera_at(0), 64, 48, 5.0)?;
//! for frame in 0..3 {
//!     let plan = tuner.plan_estimated(&next, 5.0)?;
//!     let (stats, upcoming) = std::thread::scope(|s| {
//!         let tuner = &tuner;
//!         let ahead = s.spawn(move || tuner.estimate(&camera_at(frame + 1), 64, 48, 5.0));
//!         let stats = backend.render(&camera_at(frame), &plan.settings, &mut image, &NoProgress);
//!         (stats, ahead.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
//!     });
//!     tuner.record(&plan, stats?.trace.as_secs_f64() * 1e3);
//!     next = upcoming?;
//! }
//! # Ok::<(), prism::Error>(())
//! ```

mod calibrate;
pub mod scenes;

pub use calibrate::{
    CHECK_TOLERANCE, Calibration, CalibrationOptions, FrameClock, cache_dir, calibrate,
    calibration_scene, two_level_calibration_scene,
};
pub use prism_core::tune::{
    CUT_SHIFT, Choice, Knobs, Plan, SETTLING_FRAMES, TunerConfig, Workload,
};

use prism_core::tune::{Controller, KindCounts, Prepass};
use prism_core::{Accel, Camera, Error, RenderSettings, Scene};
use rayon::prelude::*;
use std::time::Instant;

/// Share of the budget the pre-pass is sized for when it runs before the
/// frame (the goal is at most 5%; 3% leaves room for its own noise).
pub const PREPASS_SHARE: f64 = 0.03;
/// Share of the budget the pre-pass is sized for when it runs on the host
/// beside the device's previous frame (`prism animate` on a GPU): hidden
/// behind that frame, with room to spare.
pub const PREPASS_BESIDE_SHARE: f64 = 0.25;
/// Fewest and most pre-pass pixels.
pub const PREPASS_PIXELS: (u32, u32) = (64, 16_384);

/// What to render a frame with, and what the tuner expects of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FramePlan {
    /// Settings to render with: the base settings with the chosen knobs.
    pub settings: RenderSettings,
    /// The controller's answer: the knobs and their predicted times, or
    /// [`Plan::Unreachable`] (then `settings` holds the cheapest knobs).
    pub plan: Plan,
    /// The pre-pass's estimate of the frame's work.
    pub workload: Workload,
    /// What the pre-pass cost on the host, in milliseconds.
    pub prepass_ms: f64,
    /// The budget, in milliseconds.
    pub target_ms: f64,
    /// Whether this frame's work differs in kind from the last frame's
    /// ([`prism_core::tune::CUT_SHIFT`]: a camera cut or a sudden turn): its
    /// prediction carries a correction learned on other work, and once its
    /// time is recorded the correction restarts from it.
    pub cut: bool,
}

/// The per-frame API: [`FrameTuner::plan`] before a frame (a pre-pass on the
/// host, then the controller), [`FrameTuner::record`] after it with its
/// measured time. The pre-pass runs on the host's CPU, so for a GPU backend
/// it can run beside the GPU's previous frame.
pub struct FrameTuner {
    accel: Accel,
    controller: Controller,
    calibration: Calibration,
    base: RenderSettings,
    /// Pre-pass cost per pixel, smoothed, in milliseconds (sizes the next).
    prepass_ms_per_pixel: Option<f64>,
    /// The pre-pass's pixel count in use (see [`probe_pixels`]).
    probe_pixels: Option<u32>,
    /// Share of the budget the pre-pass is sized for.
    prepass_share: f64,
}

/// A frame's pre-pass estimate ([`FrameTuner::estimate`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameEstimate {
    /// The frame's work, estimated.
    pub workload: Workload,
    /// What the pre-pass cost on the host, in milliseconds.
    pub prepass_ms: f64,
    /// The pre-pass pixel count asked for (kept for the next frames' grid).
    asked_pixels: u32,
}

impl FrameTuner {
    /// A tuner over `scene` (its tree is built here, on the host, for the
    /// pre-pass), with the backend's `calibration`; `base` gives the AO ray
    /// length and seed of every frame.
    pub fn new(
        calibration: Calibration,
        scene: &Scene,
        base: RenderSettings,
        config: TunerConfig,
    ) -> Result<FrameTuner, Error> {
        base.validate()?;
        Ok(FrameTuner {
            accel: Accel::build(scene)?,
            controller: Controller::new(calibration.model, config)?,
            calibration,
            base,
            prepass_ms_per_pixel: None,
            probe_pixels: None,
            prepass_share: PREPASS_SHARE,
        })
    }

    /// The calibration in use.
    pub fn calibration(&self) -> &Calibration {
        &self.calibration
    }

    /// The current feedback correction (measured over modelled time).
    pub fn correction(&self) -> f64 {
        self.controller.correction()
    }

    /// The settings for a `width x height` frame seen by `camera` within
    /// `target_ms`: [`FrameTuner::estimate`], then [`FrameTuner::plan_estimated`].
    /// Errors: a bad size, camera or target, naming it.
    pub fn plan(
        &mut self,
        camera: &Camera,
        width: u32,
        height: u32,
        target_ms: f64,
    ) -> Result<FramePlan, Error> {
        let estimate = self.estimate(camera, width, height, target_ms)?;
        self.plan_estimated(&estimate, target_ms)
    }

    /// The pre-pass of a `width x height` frame seen by `camera`, sized to
    /// cost the tuner's pre-pass share of `target_ms`
    /// ([`FrameTuner::set_prepass_share`]). It reads the tuner and changes
    /// nothing, so an engine can run it for the next frame on the host while
    /// the device renders this one, as Ganestam and Doggett did; the estimate
    /// then goes to [`FrameTuner::plan_estimated`] once this frame's time is
    /// recorded. Errors: a bad size, camera or target, naming it.
    pub fn estimate(
        &self,
        camera: &Camera,
        width: u32,
        height: u32,
        target_ms: f64,
    ) -> Result<FrameEstimate, Error> {
        if !(target_ms.is_finite() && target_ms > 0.0) {
            return Err(Error::Setting {
                field: "target_ms",
                value: target_ms,
                reason: "must be finite and > 0",
            });
        }
        let wanted = match self.prepass_ms_per_pixel {
            Some(per) if per > 0.0 => (self.prepass_share * target_ms / per) as u32,
            _ => 256,
        }
        .clamp(PREPASS_PIXELS.0, PREPASS_PIXELS.1)
        .min(width.saturating_mul(height).max(1));
        let pixels = probe_pixels(self.probe_pixels, wanted);
        let start = Instant::now();
        let workload = estimate_on_threads(
            &self.accel,
            camera,
            (width, height),
            self.base.ao_distance,
            pixels,
        )?;
        Ok(FrameEstimate {
            workload,
            prepass_ms: start.elapsed().as_secs_f64() * 1e3,
            asked_pixels: pixels,
        })
    }

    /// The settings for the frame of `estimate` (made by this tuner's
    /// [`FrameTuner::estimate`]) within `target_ms`; the pre-pass's measured
    /// cost sizes the next one. Errors: a bad target.
    pub fn plan_estimated(
        &mut self,
        estimate: &FrameEstimate,
        target_ms: f64,
    ) -> Result<FramePlan, Error> {
        let FrameEstimate {
            workload,
            prepass_ms,
            asked_pixels,
        } = *estimate;
        self.probe_pixels = Some(asked_pixels);
        let per = prepass_ms / workload.probe_pixels.max(1) as f64;
        self.prepass_ms_per_pixel = Some(match self.prepass_ms_per_pixel {
            Some(old) => 0.7 * old + 0.3 * per,
            None => per,
        });
        let plan = self.controller.plan(&workload, target_ms)?;
        Ok(FramePlan {
            settings: plan.choice().knobs.apply(&self.base),
            plan,
            workload,
            prepass_ms,
            target_ms,
            cut: self.controller.is_cut(&workload),
        })
    }

    /// Size the pre-pass to cost `share` of the budget (default
    /// [`PREPASS_SHARE`]): an engine that runs it beside the device's previous
    /// frame ([`FrameTuner::estimate`]) can give it more, for an estimate with
    /// less sampling error. Errors: a share outside (0, 1].
    pub fn set_prepass_share(&mut self, share: f64) -> Result<(), Error> {
        if !(share > 0.0 && share <= 1.0) {
            return Err(Error::Setting {
                field: "prepass_share",
                value: share,
                reason: "must be in (0, 1]",
            });
        }
        self.prepass_share = share;
        Ok(())
    }

    /// Take the measured time of the frame rendered with `plan`'s settings,
    /// in milliseconds (a time that is not finite and positive is ignored).
    /// After a cut ([`FramePlan::cut`]) the correction restarts from this
    /// frame ([`Controller::observe_work`]).
    pub fn record(&mut self, plan: &FramePlan, measured_ms: f64) {
        self.controller
            .observe_work(&plan.workload, &plan.plan.choice(), measured_ms);
    }
}

/// [`prism_core::tune::estimate`] with the pre-pass's rows spread over
/// rayon's threads (interleaved, so that each thread gets rows from all over
/// the view): for the same cost, a pre-pass of as many times the pixels, whose
/// sampling error is the smaller (at about 250 pixels on one thread, the
/// estimate of a GPU frame's work moved 1.8% between neighbouring frames of a
/// path, more than the frames' own time). The same workload as on one thread.
fn estimate_on_threads(
    accel: &Accel,
    camera: &Camera,
    size: (u32, u32),
    ao_distance: f32,
    probe_pixels: u32,
) -> Result<Workload, Error> {
    let prepass = Prepass::new(accel, camera, size, ao_distance, probe_pixels)?;
    let parts = (rayon::current_num_threads() as u32).clamp(1, prepass.rows().max(1));
    let counts = (0..parts)
        .into_par_iter()
        .map(|first| prepass.count_rows(accel, first, parts))
        .reduce(KindCounts::default, |a, b| a.plus(&b));
    Ok(prepass.workload(&counts))
}

/// Most the pre-pass's size may drift from the one its cost asks for before
/// it is sized again (a factor either way).
pub const PROBE_RESIZE: u32 = 2;

/// The pre-pass's pixel count for this frame: the one in use (`current`)
/// while it is within [`PROBE_RESIZE`] of the one its measured cost asks for
/// (`wanted`), else `wanted`.
///
/// Why keep it: the same count is the same probe grid, so from one frame to
/// the next its sampling error moves only as the view moves, and the feedback
/// correction (which learns measured over predicted time) cancels it. A grid
/// sized anew every frame from a noisy cost gives every frame a fresh
/// sampling error that no correction can follow.
pub fn probe_pixels(current: Option<u32>, wanted: u32) -> u32 {
    match current {
        Some(p)
            if p <= wanted.saturating_mul(PROBE_RESIZE)
                && wanted <= p.saturating_mul(PROBE_RESIZE) =>
        {
            p
        }
        _ => wanted,
    }
}

impl FrameTuner {
    /// `plan` with its knobs replaced by `knobs` (their prediction on the
    /// same workload): for a frame whose settings the caller fixes, so that
    /// [`FrameTuner::record`] still learns from it.
    pub fn with_knobs(&self, plan: &FramePlan, knobs: Knobs) -> FramePlan {
        let choice = self.controller.predict(&plan.workload, knobs);
        FramePlan {
            settings: knobs.apply(&self.base),
            plan: Plan::Fits(choice),
            ..*plan
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{
        FrameClock, PROBE_RESIZE, calibration_scene, estimate_on_threads, probe_pixels,
        two_level_calibration_scene,
    };
    use prism_core::tune::estimate;
    use prism_core::{Accel, RenderStats};
    use proptest::prelude::*;
    use std::time::Duration;

    #[test]
    fn each_clock_reads_its_own_stage() {
        let stats = RenderStats {
            trace: Duration::from_micros(7_250),
            download: Duration::from_micros(500),
            total: Duration::from_micros(8_000),
            ..RenderStats::default()
        };
        assert_eq!(FrameClock::Wall.frame_ms(&stats), 8.0);
        assert_eq!(FrameClock::Device.frame_ms(&stats), 7.25);
    }

    /// The pre-pass's rows spread over threads count the same work as on
    /// one thread: whole-number counts, added in any order.
    #[test]
    fn the_threaded_prepass_counts_what_one_thread_counts() {
        let (scene, views) = calibration_scene().unwrap(); // ok: test code
        let accel = Accel::build(&scene).unwrap(); // ok: test code
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap(); // ok: test code
        for (camera, pixels) in views.iter().zip([64, 500, 3_000]) {
            let one = estimate(&accel, camera, (320, 240), 0.5, pixels).unwrap(); // ok: test code
            let threaded = pool
                .install(|| estimate_on_threads(&accel, camera, (320, 240), 0.5, pixels))
                .unwrap(); // ok: test code
            assert_eq!(one, threaded);
            assert!(one.ao_per_ray.rays > 0.0 && one.primary.node_steps > 0.0);
        }
    }

    /// The two-level calibration scene holds the flat one's triangles where
    /// the flat one has them: every camera ray of its views hits or misses
    /// alike, at the same distance to float rounding (the instances carry the
    /// ray into object space).
    #[test]
    fn the_two_level_calibration_scene_is_the_flat_one() {
        let (flat, views) = calibration_scene().unwrap(); // ok: test code
        let (two, views_two) = two_level_calibration_scene().unwrap(); // ok: test code
        assert_eq!(views, views_two);
        assert!(flat.instances().is_empty() && two.instances().len() == 10);
        let (a, b) = (Accel::build(&flat).unwrap(), Accel::build(&two).unwrap()); // ok: test code
        let mut hits = 0;
        for camera in &views {
            let settings = prism_core::RenderSettings::default();
            let params = settings.params(&a, camera, 32, 24).unwrap(); // ok: test code
            for y in 0..24 {
                for x in 0..32 {
                    let (ray, _) = prism_core::integrator::camera_sample(&params, x, y, 0);
                    let (ha, hb) = (a.intersect(&ray), b.intersect(&ray));
                    assert_eq!(ha.is_hit(), hb.is_hit(), "pixel {x},{y}");
                    if ha.is_hit() {
                        hits += 1;
                        assert!((ha.t - hb.t).abs() <= 1e-4 * ha.t, "{} {}", ha.t, hb.t);
                    }
                }
            }
        }
        assert!(hits > 1000, "{hits} hits");
    }

    proptest! {
        /// The count in use is kept exactly while the wanted one stays
        /// within the factor, and replaced by the wanted one outside it.
        #[test]
        fn probe_size_is_kept_within_the_factor(current in 1u32..100_000, wanted in 1u32..100_000) {
            let got = probe_pixels(Some(current), wanted);
            let near = current <= wanted * PROBE_RESIZE && wanted <= current * PROBE_RESIZE;
            prop_assert_eq!(got, if near { current } else { wanted });
        }
    }

    #[test]
    fn first_frame_takes_the_wanted_size() {
        assert_eq!(probe_pixels(None, 300), 300);
        // A jittery cost (here +-40%) keeps one size frame after frame.
        let mut p = probe_pixels(None, 1000);
        for wanted in [1400, 700, 1300, 650, 1100] {
            p = probe_pixels(Some(p), wanted);
        }
        assert_eq!(p, 1000);
        // A budget four times larger resizes it.
        assert_eq!(probe_pixels(Some(p), 4000), 4000);
    }
}
