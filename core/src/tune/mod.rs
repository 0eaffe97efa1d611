//! Frame budgets: choose the AO knobs that hold a target frame time.
//!
//! After Ganestam and Doggett, "Auto-tuning Interactive Ray Tracing using an
//! Analytical GPU Architecture Model" (2012): a cheap pre-pass estimates the
//! coming frame's work, a model of the device turns work into time, a
//! feed-forward controller picks the knobs that fit the budget with the best
//! quality, and a slow feedback loop corrects the model from each frame's
//! measured time.
//!
//! - **Workload** ([`workload`]): an AO pre-pass at low resolution (a few
//!   hundred to a few thousand pixels, [`PROBE_AO_RAYS`] AO rays and a shadow
//!   ray at each hit) through [`CountingTracer`], a copy of core's walks that
//!   counts node steps and primitive tests per ray kind ([`counting`]); the
//!   counts are scaled to the full frame. AO work per ray is averaged, so the
//!   work of any AO ray count is read off without tracing again.
//! - **Time model** ([`model`]): time is linear in the work, `fixed + cost
//!   per camera ray + per camera step + per occlusion ray + per occlusion
//!   step`. Linear because every backend's frame is a sum of independent
//!   per-ray walks run at a throughput the device sustains once it is full
//!   (a frame-sized launch keeps it full); two ray groups because camera rays
//!   (closest hit plus shading) and occlusion rays (any hit, no shading) run
//!   different code. Five constants per backend and device, measured by
//!   calibration frames and a least squares fit ([`fit`]), never guessed.
//!   The counts are of core's binary tree; a backend walking other trees (the
//!   CPU's 8-wide ones) does work proportional to them, which the fitted
//!   constants absorb.
//! - **Knobs** ([`knobs`]): the AO ray count per camera hit, as a whole
//!   count and a fractional share ([`crate::RenderSettings::ao_extra`]: that
//!   share of the pixels, in 16 x 8 blocks picked by a fixed low-discrepancy
//!   pattern so that a GPU warp traces one count, trace one more ray, and
//!   each pixel divides by its own count, so the image stays unbiased), and shadows on or off. Whole
//!   counts alone are coarse exactly where budgets are tight: at 1920x1080
//!   one AO ray a pixel is a large part of an 8 ms frame, and the nearest
//!   whole count lands up to that far below the budget. With the share the
//!   AO cost is continuous from one ray up.
//! - **Controller** ([`controller`]): time is linear in the mean AO ray
//!   count ([`Knobs::mean_ao`]), so for each shadow setting the mean whose
//!   corrected time is exactly the target is one division (held within
//!   `1..=max_ao_rays`); the better quality of the two wins ([`Knobs::quality`]:
//!   shadows are worth [`TunerConfig::shadow_worth`] AO rays). A budget below
//!   the cheapest knobs (one AO ray, no shadows) is [`Plan::Unreachable`],
//!   never a silent miss.
//! - **Feedback**: the correction is two factors, one on the model's time
//!   of the AO rays and one on the rest of the frame, fitted to the recent
//!   frames' measured times (least squares on the relative error). At one
//!   mix of work they are one factor, a smoothed ratio of measured to
//!   modelled time. It corrects what the calibration frames could not see:
//!   the scene's own memory behaviour (a 400k-triangle tree misses caches
//!   that the calibration scene's does not), the clock and load of the
//!   device now, and the ray-count-independent costs of this image size.
//!   Two factors because a model may misprice one AO ray against the rest
//!   of the frame (wgpu's camera and shadow rays over thousands of
//!   instances cost it 4.5x the model, its AO rays 0.64x); a single factor
//!   then prices each AO ray several times too dear, and each frame closes
//!   a few percent of the gap. The frames of a moving AO count tell the two
//!   apart; a small pull toward equal factors ([`SPLIT_RIDGE`]) keeps frames
//!   of one count at one factor. Over the first [`SETTLING_FRAMES`] every
//!   frame weighs the same (a plain mean); then each frame's weight falls by
//!   [`TunerConfig::feedback_rate`] a frame. A quarter (the default) halves
//!   a disturbance in under three frames and averages frame-to-frame noise
//!   over about four; it lags a ratio that drifts along a camera path by
//!   about three frames' drift. Rate 1 takes the last frame's own ratio
//!   (measured over modelled time of the knobs it ran, which the next
//!   frame's knobs are near, their workload being the pre-pass's): no lag
//!   on a smooth path, all of the noise. Each measurement is clamped before
//!   it is taken in, so that one odd frame (another process, a page fault)
//!   cannot throw the correction: to [`FIXED_CLAMP`] of the prediction, or
//!   with [`TunerConfig::adaptive_clamp`] to [`ADAPTIVE_SPREADS`] times the
//!   recent spread of the surprises (a lasting change widens it within a
//!   few frames). Stable because the ratio it tracks does not depend on the
//!   correction itself: where the model is right up to a factor, every knob
//!   has the same ratio and the fit is an exponential mean converging
//!   geometrically by `1 - rate` a frame; where it is right up to a factor
//!   on each part, the fit finds both and the next plan meets the target;
//!   otherwise the knobs, now continuous, move the time onto the target and
//!   the correction settles on the ratio of the knobs that meet it. There
//!   is one correction per shadow setting, so that a model
//!   that prices the shadow rays wrong does not make the two settings swap
//!   every frame at a budget between them. Sudden view changes (a
//!   180-degree turn) are met by the feed-forward part (the pre-pass sees
//!   the new view before its frame is rendered) as far as the model prices
//!   the new view's work as it prices the old's; where the work changes in
//!   kind ([`CUT_SHIFT`]) the corrections restart from the new view's first
//!   frame, so the frame after it is predicted from its own time.

pub mod controller;
pub mod counting;
pub mod knobs;
pub mod model;
pub mod workload;

#[cfg(test)]
mod tests;

pub use controller::{
    ADAPTIVE_FLOOR, ADAPTIVE_SPREADS, CUT_SHIFT, Choice, Controller, FIXED_CLAMP, Plan,
    SETTLING_FRAMES, SPLIT_RIDGE, SPREAD_RATE, SPREAD_START, TunerConfig,
};
pub use counting::{
    CountingTracer, Counts, KindCounts, Visit, WalkLog, counted_closest, counted_occluded,
    logged_closest, logged_occluded,
};
pub use knobs::Knobs;
pub use model::{Sample, TERMS, TimeModel, fit};
pub use workload::{FrameWork, PROBE_AO_RAYS, Prepass, Workload, estimate, probe_size};
