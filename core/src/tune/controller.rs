//! The controller: feed-forward choice of the knobs from the predicted time,
//! and a slow feedback correction of the model from each measured frame.

use crate::error::Error;
use crate::tune::knobs::Knobs;
use crate::tune::model::TimeModel;
use crate::tune::workload::Workload;

/// Frames over which the correction is the plain mean of the measured
/// ratios, before the slow feedback takes over.
pub const SETTLING_FRAMES: u32 = 3;

/// The fixed clamp: after the settling frames a move of the correction is
/// held within this share of it.
pub const FIXED_CLAMP: f64 = 0.2;

/// The adaptive clamp ([`TunerConfig::adaptive_clamp`]): a move is held
/// within this many spreads (the smoothed relative surprise)...
pub const ADAPTIVE_SPREADS: f64 = 3.0;
/// ...and at least this share of the correction (noise-free frames would
/// otherwise shrink the spread, and the clamp, toward zero).
pub const ADAPTIVE_FLOOR: f64 = 0.01;
/// The spread's smoothing rate, and its starting value after the settling
/// frames (a 5% spread: a 15% move passes at once).
pub const SPREAD_RATE: f64 = 0.25;
/// See [`SPREAD_RATE`].
pub const SPREAD_START: f64 = 0.05;

/// A frame whose work differs in kind from the frame before by more than
/// this ([`Workload::shift`]) is a cut: the correction learned on the old
/// view is dropped and the next frames settle afresh
/// ([`Controller::observe_work`]). Frames along a moving path differ by a
/// few percent; the 180-degree turn of `prism animate`'s ogre path halves
/// the steps of an AO ray (4.6 to 2.0), and there the device's time per
/// step differs by 2x from the view before (its rays then stay in the top
/// of the tree, whose nodes every lane of a warp shares), which no linear
/// model of counts follows (bench/RESULTS.md).
pub const CUT_SHIFT: f64 = 0.25;

/// The pull of the two factors of a correction toward each other
/// ([`Controller::observe`]), as a share of the weight of the frames they
/// are fitted to. Small enough that frames whose AO counts differ by a
/// fraction of a ray tell a mispriced AO ray apart from the rest within a
/// few frames (a synthetic device 4.5x the model's fixed time and 0.64x its
/// AO ray, wgpu's two-level frames on an H200: 0.7% from the target on
/// average instead of 2.4%), large enough that frames of one AO count give
/// one factor, as a single correction would.
pub const SPLIT_RIDGE: f64 = 1e-3;

/// How the controller trades quality for time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TunerConfig {
    /// Most AO rays per camera hit, `1..=RenderSettings::MAX_AO_SAMPLES`.
    pub max_ao_rays: u32,
    /// Shadows are worth this many AO rays ([`Knobs::quality`]).
    pub shadow_worth: u32,
    /// Share of a frame's surprise (measured over modelled time, less the
    /// correction) taken into the correction, `(0, 1]`.
    pub feedback_rate: f64,
    /// Hold each move of the correction within a few times the recent
    /// spread of the surprises ([`Controller::observe`]) instead of a fixed
    /// 20%: one odd frame then moves it by little more than ordinary noise,
    /// which lets a fast rate (1: the last frame's own ratio) follow a
    /// smooth path without being thrown by outliers.
    pub adaptive_clamp: bool,
    /// The cheapest knobs predicted at most this share over the target
    /// still count as fitting it, `[0, 0.5]`; beyond it the budget is
    /// [`Plan::Unreachable`]. (Every other choice is planned on the target:
    /// the fractional AO count makes the time continuous.)
    pub tolerance: f64,
}

impl Default for TunerConfig {
    fn default() -> Self {
        TunerConfig {
            max_ao_rays: 256,
            shadow_worth: 4,
            feedback_rate: 0.25,
            adaptive_clamp: false,
            tolerance: 0.02,
        }
    }
}

impl TunerConfig {
    /// Check every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |field, value: f64, reason| {
            Err(Error::Setting {
                field,
                value,
                reason,
            })
        };
        if !(1..=crate::RenderSettings::MAX_AO_SAMPLES).contains(&self.max_ao_rays) {
            return bad(
                "max_ao_rays",
                self.max_ao_rays as f64,
                "must be in 1..=1024",
            );
        }
        if !(self.feedback_rate > 0.0 && self.feedback_rate <= 1.0) {
            return bad("feedback_rate", self.feedback_rate, "must be in (0, 1]");
        }
        if !(0.0..=0.5).contains(&self.tolerance) {
            return bad("tolerance", self.tolerance, "must be in [0, 0.5]");
        }
        Ok(())
    }
}

/// The knobs chosen for a frame and the time expected of them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    /// What to render with.
    pub knobs: Knobs,
    /// The calibrated model's time, in milliseconds.
    pub model_ms: f64,
    /// The share of [`Choice::model_ms`] that the AO rays take (the
    /// model's time of the frame less that of the same frame without them).
    pub model_ao_ms: f64,
    /// The model's time times the feedback correction: the prediction the
    /// choice was made on.
    pub corrected_ms: f64,
}

/// The controller's answer for one frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Plan {
    /// These knobs are predicted on the budget (the cheapest knobs: within
    /// [`TunerConfig::tolerance`] over it), or are the best there are when
    /// even they are cheaper than the budget.
    Fits(Choice),
    /// Even the cheapest knobs are predicted over the budget: render with
    /// them (`cheapest`) if a frame is needed anyway, and expect
    /// `cheapest.corrected_ms` against `target_ms`.
    Unreachable {
        /// The cheapest knobs and their predicted time.
        cheapest: Choice,
        /// The budget asked for, in milliseconds.
        target_ms: f64,
    },
}

impl Plan {
    /// The knobs to render with: the choice, or the cheapest knobs when the
    /// budget is out of reach.
    #[inline]
    pub fn choice(&self) -> Choice {
        match self {
            Plan::Fits(c) => *c,
            Plan::Unreachable { cheapest, .. } => *cheapest,
        }
    }
}

/// One feedback correction: a factor on the model's time of the AO rays and
/// one on the rest of the frame, fitted to the frames since it (re)started
/// (each frame's weight falling by the feedback rate a frame), with the
/// spread of their surprises.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Correction {
    /// Factors on the model's time of everything but the AO rays, and of
    /// the AO rays.
    factors: [f64; 2],
    /// The fit's weighted sums: `[b b, b a, a a]` and `[b m, a m]` over the
    /// frames, `b` the model's time of the rest, `a` of the AO rays, `m` the
    /// measured time, each frame weighted by `1 / m^2` (relative errors).
    normal: [f64; 3],
    rhs: [f64; 2],
    frames: u32,
    /// Smoothed `|surprise|` relative to the prediction (each held within
    /// the fixed clamp), for the adaptive clamp.
    spread: f64,
}

impl Correction {
    const START: Correction = Correction {
        factors: [1.0; 2],
        normal: [0.0; 3],
        rhs: [0.0; 2],
        frames: 0,
        spread: SPREAD_START,
    };

    /// The corrected time of a frame the model gives `base_ms` for the rest
    /// and `ao_ms` for the AO rays.
    #[inline]
    fn apply(factors: [f64; 2], base_ms: f64, ao_ms: f64) -> f64 {
        factors[0] * base_ms + factors[1] * ao_ms
    }

    /// Add a frame (`base_ms`, `ao_ms` as in [`Correction::apply`], its
    /// measured time `measured_ms`) to the sums after weighting those
    /// before by `keep`, and fit the factors again: least squares with a
    /// pull of [`SPLIT_RIDGE`] toward equal factors. Frames of one mix of
    /// work fit one common factor; frames that differ in their AO share
    /// tell the two apart. A fit with a factor that is not positive falls
    /// back on the common factor.
    fn fit(&mut self, keep: f64, base_ms: f64, ao_ms: f64, measured_ms: f64) {
        let (b, a, m) = (base_ms, ao_ms, measured_ms);
        let w = 1.0 / (m * m);
        let [sbb, sba, saa] = self.normal;
        self.normal = [
            keep * sbb + w * b * b,
            keep * sba + w * b * a,
            keep * saa + w * a * a,
        ];
        let [vb, va] = self.rhs;
        self.rhs = [keep * vb + w * b * m, keep * va + w * a * m];
        let [sbb, sba, saa] = self.normal;
        let [vb, va] = self.rhs;
        let mu = SPLIT_RIDGE * (sbb + saa);
        let (p, q, r) = (sbb + mu, sba - mu, saa + mu);
        let det = p * r - q * q;
        let split = [(vb * r - va * q) / det, (va * p - vb * q) / det];
        self.factors = if split.iter().all(|f| f.is_finite() && *f > 0.0) {
            split
        } else {
            let common = (vb + va) / (sbb + 2.0 * sba + saa);
            if common.is_finite() && common > 0.0 {
                [common; 2]
            } else {
                self.factors
            }
        };
    }
}

/// Feed-forward choice plus feedback correction (see the module docs of
/// [`crate::tune`] for why it is stable).
///
/// The correction has two factors, one on the model's time of the AO rays
/// and one on the rest of the frame ([`Controller::observe`]): a model that
/// prices the AO rays right against the rest only scaled needs one, but
/// one that misprices them against the rest (a device whose camera rays
/// cost far more, relative to its AO rays, than the calibration's) would
/// otherwise overstate each ray's time by the ratio the rest sets, and the
/// feedback would close the gap only a few percent a frame.
///
/// The correction is kept per shadow setting: a frame with shadows corrects
/// the predictions of frames with shadows, one without those without (each
/// falls back on the other until it has a frame of its own). A model that
/// prices the shadow rays wrong (wgpu's two-level shadow rays, 4.7x CUDA's
/// time where its model's are not) otherwise makes a budget between the two
/// settings swap them every frame, each frame's ratio throwing the next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Controller {
    model: TimeModel,
    config: TunerConfig,
    /// Without shadows, with shadows.
    corrections: [Correction; 2],
    /// The shadow setting of the last frame observed.
    last_shadows: bool,
    /// The last frame's corrected time over its modelled time, after its
    /// measurement was taken in.
    last_ratio: f64,
    /// The work of the last frame observed with [`Controller::observe_work`].
    last: Option<Workload>,
}

impl Controller {
    /// A controller over the calibrated `model`, correction 1.
    pub fn new(model: TimeModel, config: TunerConfig) -> Result<Controller, Error> {
        config.validate()?;
        Ok(Controller {
            model,
            config,
            corrections: [Correction::START; 2],
            last_shadows: true,
            last_ratio: 1.0,
            last: None,
        })
    }

    /// The calibrated model.
    #[inline]
    pub fn model(&self) -> &TimeModel {
        &self.model
    }

    /// The configuration.
    #[inline]
    pub fn config(&self) -> &TunerConfig {
        &self.config
    }

    /// The feedback correction of the last frame observed: its corrected
    /// time over its modelled time, with the correction its measurement
    /// left.
    #[inline]
    pub fn correction(&self) -> f64 {
        self.last_ratio
    }

    /// The correction's factors a frame with `shadows` is predicted with
    /// (on the model's time of all but the AO rays, and of the AO rays):
    /// its own once it has a frame since the last (re)start, else the
    /// other setting's if that has one, else its own as they were.
    #[inline]
    pub fn correction_for(&self, shadows: bool) -> [f64; 2] {
        let own = &self.corrections[shadows as usize];
        let other = &self.corrections[!shadows as usize];
        if own.frames == 0 && other.frames > 0 {
            other.factors
        } else {
            own.factors
        }
    }

    /// Whether a frame of `work` is a cut from the last frame observed with
    /// [`Controller::observe_work`]: its work differs in kind by more than
    /// [`CUT_SHIFT`].
    #[inline]
    pub fn is_cut(&self, work: &Workload) -> bool {
        self.last.is_some_and(|last| work.shift(&last) > CUT_SHIFT)
    }

    /// Forget what the correction learned: the next frames settle afresh,
    /// as on a new scene (a plain mean over [`SETTLING_FRAMES`], no clamp).
    #[inline]
    pub fn restart(&mut self) {
        for c in &mut self.corrections {
            c.frames = 0;
            c.spread = SPREAD_START;
        }
    }

    /// [`Controller::observe`] for a frame of `work`: after a cut
    /// ([`Controller::is_cut`]) the correction restarts from this frame's
    /// own ratio, so the frame after a cut is predicted from its view's
    /// time rather than from a correction learned on other work (which
    /// the clamp would let through only a fifth at a time).
    pub fn observe_work(&mut self, work: &Workload, choice: &Choice, measured_ms: f64) {
        if self.is_cut(work) {
            self.restart();
        }
        self.last = Some(*work);
        self.observe(choice, measured_ms);
    }

    /// The prediction of `knobs` on `work`.
    #[inline]
    pub fn predict(&self, work: &Workload, knobs: Knobs) -> Choice {
        let model_ms = self.model.predict_ms(&work.frame(knobs));
        let without_ao = Knobs {
            ao_rays: 0,
            ao_extra: 0.0,
            ..knobs
        };
        let model_ao_ms = model_ms - self.model.predict_ms(&work.frame(without_ao));
        let factors = self.correction_for(knobs.shadows);
        Choice {
            knobs,
            model_ms,
            model_ao_ms,
            corrected_ms: Correction::apply(factors, model_ms - model_ao_ms, model_ao_ms),
        }
    }

    /// Choose the knobs for a frame of `work` within `target_ms`.
    ///
    /// Time is linear in the mean AO ray count ([`Knobs::mean_ao`]), so for
    /// each shadow setting the mean whose corrected time is the target is
    /// one division, held within `1..=max_ao_rays`; its whole part and
    /// fraction are the knobs ([`Knobs::with_mean`]). Of the two settings
    /// the better quality wins ([`Knobs::quality`]): both are on the target
    /// unless held at a bound. Shadows are left out when even one AO ray
    /// with them is over the target. Errors: a target that is not finite
    /// and positive.
    pub fn plan(&self, work: &Workload, target_ms: f64) -> Result<Plan, Error> {
        if !(target_ms.is_finite() && target_ms > 0.0) {
            return Err(Error::Setting {
                field: "target_ms",
                value: target_ms,
                reason: "must be finite and > 0",
            });
        }
        let cheapest = self.predict(work, Knobs::CHEAPEST);
        if cheapest.corrected_ms > target_ms * (1.0 + self.config.tolerance) {
            return Ok(Plan::Unreachable {
                cheapest,
                target_ms,
            });
        }
        let max = self.config.max_ao_rays as f64;
        let best_for = |shadows: bool| -> Option<Choice> {
            let one = self.predict(work, Knobs::new(1, shadows));
            if shadows && one.corrected_ms > target_ms {
                return None;
            }
            let two = self.predict(work, Knobs::new(2, shadows));
            let per_ray = two.corrected_ms - one.corrected_ms;
            let mean = if per_ray > 0.0 {
                1.0 + (target_ms - one.corrected_ms) / per_ray
            } else {
                max
            };
            Some(self.predict(work, Knobs::with_mean(mean.clamp(1.0, max), shadows)))
        };
        let quality = |c: &Choice| c.knobs.quality(self.config.shadow_worth);
        let pick = match (best_for(false), best_for(true)) {
            (Some(a), Some(b)) => {
                if quality(&b) >= quality(&a) {
                    b
                } else {
                    a
                }
            }
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => cheapest,
        };
        Ok(Plan::Fits(pick))
    }

    /// Take the measured time of a frame rendered with `choice` (its
    /// model's times and its knobs' shadow setting, whose correction it
    /// moves).
    ///
    /// The correction's two factors are fitted to the frames since it
    /// (re)started by least squares on the relative error, each frame's
    /// weight falling by [`TunerConfig::feedback_rate`] a frame (over the
    /// first [`SETTLING_FRAMES`] every frame weighs the same, a plain
    /// mean, so that a model calibrated on another scene settles at once;
    /// until a setting has a frame of its own, its predictions take the
    /// other's, [`Controller::correction_for`]). At one mix of work the fit
    /// is one factor, a smoothed ratio of measured to modelled time; as the
    /// AO count moves, it tells the AO rays' factor from the rest's
    /// ([`SPLIT_RIDGE`]), so that the next plan prices a ray as the device
    /// does. After the settling frames each measurement is clamped before
    /// it is taken in, so that one frame disturbed by something else
    /// (another process, a page fault) cannot throw the correction: within
    /// [`FIXED_CLAMP`] of the prediction, or with
    /// [`TunerConfig::adaptive_clamp`] within [`ADAPTIVE_SPREADS`] times the
    /// smoothed spread of recent surprises (at least [`ADAPTIVE_FLOOR`]): a
    /// lasting change raises the spread and passes within a few frames, a
    /// single outlier moves the correction by about the ordinary noise. A
    /// time that is not finite and positive is ignored.
    pub fn observe(&mut self, choice: &Choice, measured_ms: f64) {
        let model_ms = choice.model_ms;
        let ao_ms = choice.model_ao_ms;
        let base_ms = model_ms - ao_ms;
        if !(model_ms.is_finite()
            && model_ms > 0.0
            && ao_ms.is_finite()
            && ao_ms >= 0.0
            && base_ms >= 0.0
            && measured_ms.is_finite()
            && measured_ms > 0.0)
        {
            return;
        }
        let shadows = choice.knobs.shadows;
        self.last_shadows = shadows;
        let config = self.config;
        let factors = self.correction_for(shadows);
        let c = &mut self.corrections[shadows as usize];
        c.frames = c.frames.saturating_add(1);
        let predicted = Correction::apply(factors, base_ms, ao_ms);
        let settling = c.frames <= SETTLING_FRAMES;
        let surprise = measured_ms / predicted - 1.0;
        let limit = if settling {
            f64::INFINITY
        } else if config.adaptive_clamp {
            (ADAPTIVE_SPREADS * c.spread).max(ADAPTIVE_FLOOR)
        } else {
            FIXED_CLAMP
        };
        if !settling {
            c.spread += SPREAD_RATE * (libm::fabs(surprise).min(FIXED_CLAMP) - c.spread);
        }
        let taken = predicted * (1.0 + surprise.clamp(-limit, limit));
        // The weight left to the frames before: none for a (re)start's
        // first frame, all of it while the plain mean of the settling
        // frames weighs more than the feedback rate, then less by the rate.
        let mean_share = 1.0 / c.frames as f64;
        let keep = if c.frames == 1 {
            0.0
        } else if mean_share > config.feedback_rate {
            1.0
        } else {
            1.0 - config.feedback_rate
        };
        c.fit(keep, base_ms, ao_ms, taken);
        self.last_ratio = Correction::apply(c.factors, base_ms, ao_ms) / model_ms;
    }
}
