//! The time model: a frame's time as a linear function of its work, with
//! constants per backend and device found by calibration ([`fit`]).

use crate::error::Error;
use crate::tune::workload::FrameWork;
use alloc::string::String;
use alloc::vec::Vec;

/// How many constants the model has.
pub const TERMS: usize = 5;

/// Predicted frame time, in milliseconds:
///
/// `fixed + primary_ray * camera rays + primary_step * camera steps +
/// occlusion_ray * occlusion rays + occlusion_step * occlusion steps`,
///
/// a step being a node step or a primitive test ([`crate::tune::Counts::steps`]).
/// Camera rays (closest hit, then shading) and occlusion rays (AO and shadow
/// rays: any hit, no shading) run different code, so each has its own cost
/// per ray (generation, shading, the pixel's share of launch and copy) and
/// per step (memory traffic of the walk). Node steps and primitive tests are
/// charged alike: each is one 48- or 64-byte fetch and a few dozen flops, and
/// one constant for both keeps the fit well posed from a few calibration
/// frames. `fixed` is the launch and copy cost that does not grow with rays.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeModel {
    /// Milliseconds per frame, per camera ray, per camera step, per occlusion
    /// ray and per occlusion step, in that order.
    pub coefficients: [f64; TERMS],
}

impl TimeModel {
    /// The model's inputs for `work`: 1 and the four counts, in the order of
    /// [`TimeModel::coefficients`].
    #[inline]
    pub fn features(work: &FrameWork) -> [f64; TERMS] {
        [
            1.0,
            work.primary.rays,
            work.primary.steps(),
            work.occlusion.rays,
            work.occlusion.steps(),
        ]
    }

    /// Predicted time of `work`, in milliseconds.
    #[inline]
    pub fn predict_ms(&self, work: &FrameWork) -> f64 {
        let f = Self::features(work);
        f.iter().zip(self.coefficients).map(|(x, c)| x * c).sum()
    }
}

/// One calibration frame: its work and its measured time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// The frame's work (a full count or a pre-pass estimate).
    pub work: FrameWork,
    /// Its measured time, in milliseconds.
    pub measured_ms: f64,
}

/// Fit a [`TimeModel`] to `samples` by least squares on the relative error
/// (each row divided by its measured time: a 1 ms frame matters as much as a
/// 100 ms one), every constant kept at or above zero (a term that would come
/// out negative is dropped and the rest refit: a cost is never negative, and
/// a negative one would predict nonsense outside the calibration range).
///
/// Errors ([`Error::Calibration`]): fewer samples than constants, a measured
/// time that is not finite and positive, or a fit that predicts zero.
pub fn fit(samples: &[Sample]) -> Result<TimeModel, Error> {
    let fail = |reason: &'static str| Error::Calibration {
        what: String::from("time model"),
        reason,
    };
    if samples.len() < TERMS {
        return Err(fail("fewer calibration frames than model constants"));
    }
    if samples
        .iter()
        .any(|s| !(s.measured_ms.is_finite() && s.measured_ms > 0.0))
    {
        return Err(fail("a measured time is not finite and positive"));
    }
    let rows: Vec<([f64; TERMS], f64)> = samples
        .iter()
        .map(|s| {
            let f = TimeModel::features(&s.work);
            (f.map(|x| x / s.measured_ms), 1.0)
        })
        .collect();
    // Column scales: the features span 1 to 1e9, so solve for scaled
    // constants (each column divided by its largest value).
    let mut scale = [0.0f64; TERMS];
    for (f, _) in &rows {
        for (s, x) in scale.iter_mut().zip(f) {
            *s = s.max(x.abs());
        }
    }
    let mut active = scale.map(|s| s > 0.0);
    loop {
        let c = solve_active(&rows, &scale, &active);
        match c.iter().enumerate().find(|(i, c)| active[*i] && **c < 0.0) {
            // ok: `i` indexes `active`, of the same length.
            Some((i, _)) => active[i] = false,
            None => {
                let model = TimeModel { coefficients: c };
                let mean = samples
                    .iter()
                    .map(|s| model.predict_ms(&s.work))
                    .sum::<f64>();
                if !(mean > 0.0 && mean.is_finite()) {
                    return Err(fail("the fit predicts no time at all"));
                }
                return Ok(model);
            }
        }
    }
}

/// Least squares over the active columns (normal equations with a tiny ridge
/// on the scaled columns, Gaussian elimination with partial pivoting);
/// inactive constants are 0.
fn solve_active(
    rows: &[([f64; TERMS], f64)],
    scale: &[f64; TERMS],
    active: &[bool; TERMS],
) -> [f64; TERMS] {
    let cols: Vec<usize> = (0..TERMS).filter(|&i| active[i]).collect();
    let n = cols.len();
    let mut a = [[0.0f64; TERMS + 1]; TERMS];
    for (f, y) in rows {
        for (r, &i) in cols.iter().enumerate() {
            let xi = f[i] / scale[i];
            for (c, &j) in cols.iter().enumerate() {
                a[r][c] += xi * f[j] / scale[j];
            }
            a[r][n] += xi * y;
        }
    }
    for (r, row) in a.iter_mut().enumerate().take(n) {
        row[r] += 1e-9 * (1.0 + row[r]);
    }
    for k in 0..n {
        let pivot = (k..n)
            .max_by(|&x, &y| a[x][k].abs().total_cmp(&a[y][k].abs()))
            .unwrap_or(k);
        a.swap(k, pivot);
        let d = a[k][k];
        if d.abs() < 1e-300 {
            continue;
        }
        let pivot_row = a[k];
        for (r, row) in a.iter_mut().enumerate().take(n) {
            if r != k {
                let m = row[k] / d;
                for (x, p) in row.iter_mut().zip(pivot_row).take(n + 1).skip(k) {
                    *x -= m * p;
                }
            }
        }
    }
    let mut out = [0.0; TERMS];
    for (r, &i) in cols.iter().enumerate() {
        let d = a[r][r];
        out[i] = if d.abs() < 1e-300 {
            0.0
        } else {
            a[r][n] / d / scale[i]
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::counting::Counts;
    use proptest::prelude::*;

    fn work(p: (f64, f64), o: (f64, f64)) -> FrameWork {
        let c = |(rays, steps): (f64, f64)| Counts {
            rays,
            node_steps: steps * 0.7,
            prim_tests: steps * 0.3,
        };
        FrameWork {
            primary: c(p),
            occlusion: c(o),
        }
    }

    /// Calibration-like frames: two sizes, three views, four AO counts.
    fn frames() -> Vec<FrameWork> {
        let mut out = Vec::new();
        for pixels in [19_200.0, 76_800.0] {
            for (hit, steps_p, steps_o) in [(0.3, 20.0, 9.0), (0.7, 35.0, 14.0), (0.95, 50.0, 22.0)]
            {
                for n in [1.0, 4.0, 16.0, 64.0] {
                    let rays_o = pixels * hit * n;
                    out.push(work((pixels, pixels * steps_p), (rays_o, rays_o * steps_o)));
                }
            }
        }
        out
    }

    proptest! {
        /// Exact times of a model with any non-negative constants are fit back
        /// to within 1e-6 relative on every frame.
        #[test]
        fn fit_recovers_exact_models(
            c in prop::array::uniform5(0.0f64..1.0),
            zero in prop::array::uniform5(any::<bool>()),
        ) {
            let mut coefficients = [c[0] * 5.0, c[1] * 1e-4, c[2] * 1e-5, c[3] * 1e-4, c[4] * 1e-5];
            for (k, z) in coefficients.iter_mut().zip(zero).skip(1) {
                if z { *k = 0.0; }
            }
            coefficients[0] += 0.1;
            let truth = TimeModel { coefficients };
            let samples: Vec<Sample> = frames().into_iter()
                .map(|w| Sample { work: w, measured_ms: truth.predict_ms(&w) }).collect();
            let fitted = fit(&samples).unwrap(); // ok: test, enough exact samples
            for s in &samples {
                let p = fitted.predict_ms(&s.work);
                prop_assert!((p - s.measured_ms).abs() <= 1e-6 * s.measured_ms, "{p} vs {}", s.measured_ms);
            }
            prop_assert!(fitted.coefficients.iter().all(|c| *c >= 0.0));
        }

        /// With noise of at most 2% on every time, the fit predicts every
        /// frame within 5%.
        #[test]
        fn fit_tolerates_noise(noise in prop::collection::vec(-0.02f64..0.02, 24)) {
            let truth = TimeModel { coefficients: [1.0, 2e-5, 1e-6, 3e-5, 2e-6] };
            let samples: Vec<Sample> = frames().into_iter().zip(&noise)
                .map(|(w, e)| Sample { work: w, measured_ms: truth.predict_ms(&w) * (1.0 + e) }).collect();
            let fitted = fit(&samples).unwrap(); // ok: test, enough exact samples
            for s in &samples {
                let p = fitted.predict_ms(&s.work);
                let t = truth.predict_ms(&s.work);
                prop_assert!((p - t).abs() <= 0.05 * t, "{p} vs {t}");
            }
        }
    }

    #[test]
    fn too_few_or_bad_samples_are_errors() {
        let s = Sample {
            work: work((1.0, 1.0), (1.0, 1.0)),
            measured_ms: 1.0,
        };
        assert!(matches!(fit(&[s; 4]), Err(Error::Calibration { .. })));
        let bad = Sample {
            measured_ms: f64::NAN,
            ..s
        };
        assert!(matches!(
            fit(&[s, s, s, s, bad]),
            Err(Error::Calibration { .. })
        ));
    }

    #[test]
    fn a_negative_term_is_dropped() {
        // Times that fall as camera steps grow: that constant would be negative.
        let samples: Vec<Sample> = frames()
            .into_iter()
            .map(|w| Sample {
                work: w,
                measured_ms: 2.0 + 1e-5 * w.occlusion.rays - 1e-8 * w.primary.steps(),
            })
            .collect();
        let fitted = fit(&samples).unwrap(); // ok: test, enough exact samples
        assert!(fitted.coefficients.iter().all(|c| *c >= 0.0), "{fitted:?}");
    }
}
