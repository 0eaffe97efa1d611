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
//! - **Controller** ([`controller`]): time grows linearly with the AO ray
//!   count, so for each shadow setting the count nearest the target is one
//!   division; the better quality of the two wins when both are on target.
//!   A budget below the cheapest knobs is [`Plan::Unreachable`], never a
//!   silent miss.
//! - **Feedback**: the correction is a smoothed ratio of measured to
//!   modelled time, multiplying every prediction. It corrects what the
//!   calibration frames could not see: the scene's own memory behaviour (a
//!   400k-triangle tree misses caches that the calibration scene's does
//!   not), the clock and load of the device now, and the ray-count-independent
//!   costs of this image size. It moves by [`TunerConfig::feedback_rate`] of
//!   each frame's surprise (a quarter by default: a disturbance is halved in
//!   under three frames, one odd frame moves it by at most 5%). Stable
//!   because the ratio it tracks does not depend on the correction itself:
//!   where the model is right up to a factor, every knob has the same ratio
//!   and the update is an exponential mean converging geometrically by `1 -
//!   rate` a frame; where it is not, the ratio is that of the knobs chosen,
//!   which move by at most one step per change of the correction, and the
//!   mean settles on the ratio of the knobs nearest the target. Sudden view
//!   changes (a 180-degree turn) are met by the feed-forward part: the
//!   pre-pass sees the new view before its frame is rendered.

pub mod controller;
pub mod counting;
pub mod knobs;
pub mod model;
pub mod workload;

#[cfg(test)]
mod tests;

pub use controller::{Choice, Controller, Plan, SETTLING_FRAMES, TunerConfig};
pub use counting::{CountingTracer, Counts, KindCounts, counted_closest, counted_occluded};
pub use knobs::Knobs;
pub use model::{Sample, TERMS, TimeModel, fit};
pub use workload::{FrameWork, PROBE_AO_RAYS, Workload, estimate, probe_size};
