//! The workload estimate: a low-resolution pre-pass of the AO frame through
//! the [`CountingTracer`], scaled to the full frame, so that the work of any
//! AO ray count and shadow setting can be read off without tracing again.

use crate::accel::Accel;
use crate::backend::{Integrator, RenderSettings};
use crate::camera::Camera;
use crate::error::Error;
use crate::gpu::RenderParams;
use crate::integrator::render_pixel;
use crate::tune::counting::{CountingTracer, Counts, KindCounts};
use crate::tune::knobs::Knobs;

/// AO rays traced per camera hit by the pre-pass: the per-ray work of `n` AO
/// rays is `n` times their mean, so two are enough to average over the
/// hemisphere while keeping the pre-pass at four rays a pixel.
pub const PROBE_AO_RAYS: u32 = 2;

/// A frame's work per ray kind, estimated for the full image: what the camera
/// rays cost, what one AO ray per camera hit costs, and what the shadow rays
/// cost. A frame of `n` AO rays with shadows does `primary + n * ao_per_ray +
/// shadow`, `n` being the mean count ([`Knobs::mean_ao`]: the fractional
/// part's pixels are spread evenly over the image, so a share `f` of the
/// camera hits traces one more).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Workload {
    /// Pixels of the full frame (one camera ray each).
    pub pixels: f64,
    /// The camera rays' work.
    pub primary: Counts,
    /// The work of one AO ray at every camera hit.
    pub ao_per_ray: Counts,
    /// The shadow rays' work (one per camera hit).
    pub shadow: Counts,
    /// Pixels the pre-pass traced.
    pub probe_pixels: u32,
}

/// Work of a frame with given knobs, in the two groups the time model
/// charges: camera rays (closest hit) and occlusion rays (AO and shadow rays,
/// both any-hit walks).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameWork {
    /// Camera rays.
    pub primary: Counts,
    /// AO and shadow rays.
    pub occlusion: Counts,
}

impl Workload {
    /// The work of a frame rendered with `knobs`.
    #[inline]
    pub fn frame(&self, knobs: Knobs) -> FrameWork {
        let mut occlusion = self.ao_per_ray.scaled(knobs.mean_ao());
        if knobs.shadows {
            occlusion = occlusion.plus(&self.shadow);
        }
        FrameWork {
            primary: self.primary,
            occlusion,
        }
    }

    /// How far the kind of work changed from `before` to this frame: the
    /// largest relative change (`|a - b| / max(a, b)`, in `[0, 1]`) of four
    /// ratios that a view, not the knobs, sets: camera steps per pixel,
    /// camera hits per pixel (AO rays per pixel at one ray), steps per AO
    /// ray and steps per shadow ray. Neighbouring frames of a moving camera
    /// differ by a few percent; a cut or a sudden turn changes the mix of
    /// work the time model was corrected on ([`crate::tune::CUT_SHIFT`]).
    pub fn shift(&self, before: &Workload) -> f64 {
        let per = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        let measures = |w: &Workload| {
            [
                per(w.primary.steps(), w.pixels),
                per(w.ao_per_ray.rays, w.pixels),
                per(w.ao_per_ray.steps(), w.ao_per_ray.rays),
                per(w.shadow.steps(), w.shadow.rays),
            ]
        };
        let relative = |a: f64, b: f64| {
            let top = a.max(b);
            if top > 0.0 {
                libm::fabs(a - b) / top
            } else {
                0.0
            }
        };
        measures(self)
            .iter()
            .zip(measures(before))
            .map(|(&a, b)| relative(a, b))
            .fold(0.0, f64::max)
    }

    /// From the counts of a pre-pass over `probe_pixels` pixels, each with
    /// [`PROBE_AO_RAYS`] AO rays and a shadow ray, for a frame of `pixels`.
    pub fn from_probe(counts: &KindCounts, probe_pixels: u32, pixels: f64) -> Workload {
        let scale = pixels / probe_pixels.max(1) as f64;
        Workload {
            pixels,
            primary: counts.primary.scaled(scale),
            ao_per_ray: counts.ao.scaled(scale / PROBE_AO_RAYS as f64),
            shadow: counts.shadow.scaled(scale),
            probe_pixels,
        }
    }
}

/// The pre-pass resolution for about `probe_pixels` pixels with the aspect
/// ratio of `width x height`, at least 1 x 1 and at most the frame's size.
pub fn probe_size(width: u32, height: u32, probe_pixels: u32) -> (u32, u32) {
    let aspect = width.max(1) as f64 / height.max(1) as f64;
    let h = libm::round(libm::sqrt(probe_pixels.max(1) as f64 / aspect)).max(1.0);
    let w = libm::round(h * aspect).max(1.0);
    (
        (w as u32).clamp(1, width.max(1)),
        (h as u32).clamp(1, height.max(1)),
    )
}

/// The pre-pass of [`estimate`] in pieces, so that its rows can be counted
/// on several threads (the facade's tuner does) and the counts added:
/// counts are whole numbers, so their sum is the same in any order.
#[derive(Clone, Copy, Debug)]
pub struct Prepass {
    /// The pre-pass image's AO parameters (its size, [`PROBE_AO_RAYS`]).
    params: RenderParams,
    /// Pixels of the full frame the estimate is for.
    frame_pixels: f64,
}

impl Prepass {
    /// The pre-pass of a `width x height` AO frame (one sample a pixel, AO
    /// rays of length `ao_distance`) seen by `camera`: about `probe_pixels`
    /// pixels through the pixel centres of a coarser image of the same view.
    /// Errors: a bad size, camera or distance, as `render` would report them.
    pub fn new(
        accel: &Accel,
        camera: &Camera,
        (width, height): (u32, u32),
        ao_distance: f32,
        probe_pixels: u32,
    ) -> Result<Prepass, Error> {
        let (pw, ph) = probe_size(width, height, probe_pixels);
        let settings = RenderSettings {
            integrator: Integrator::Ao,
            spp: 1,
            ao_samples: PROBE_AO_RAYS,
            ao_shadows: true,
            ao_distance,
            ..RenderSettings::default()
        };
        // The full frame's parameters are checked too: the estimate is for it.
        settings.params(accel, camera, width, height)?;
        Ok(Prepass {
            params: settings.params(accel, camera, pw, ph)?,
            frame_pixels: width as f64 * height as f64,
        })
    }

    /// Rows of the pre-pass image.
    #[inline]
    pub fn rows(&self) -> u32 {
        self.params.height
    }

    /// The work of rows `first`, `first + step`, `first + 2 * step`, ... of
    /// the pre-pass image (`step` 0 is taken as 1).
    pub fn count_rows(&self, accel: &Accel, first: u32, step: u32) -> KindCounts {
        let tracer = CountingTracer::new(accel);
        for y in (first..self.params.height).step_by(step.max(1) as usize) {
            for x in 0..self.params.width {
                render_pixel(&tracer, &self.params, x, y);
            }
        }
        tracer.counts()
    }

    /// The frame's workload from the counts of every row.
    pub fn workload(&self, counts: &KindCounts) -> Workload {
        Workload::from_probe(
            counts,
            self.params.width * self.params.height,
            self.frame_pixels,
        )
    }
}

/// Estimate the work of a `width x height` AO frame (one sample a pixel, AO
/// rays of length `ao_distance`) seen by `camera`, from a pre-pass of about
/// `probe_pixels` pixels through the pixel centres of a coarser image of the
/// same view, on this thread ([`Prepass`] splits it). Errors: a bad size,
/// camera or distance, as `render` would report them.
pub fn estimate(
    accel: &Accel,
    camera: &Camera,
    size: (u32, u32),
    ao_distance: f32,
    probe_pixels: u32,
) -> Result<Workload, Error> {
    let prepass = Prepass::new(accel, camera, size, ao_distance, probe_pixels)?;
    Ok(prepass.workload(&prepass.count_rows(accel, 0, 1)))
}
