//! The sun checks, for every image case whose scene has a sun: on the first
//! backend, next-event estimation on and off converge to the same image (tile
//! means of linear radiance at a high sample count), and how far each is from
//! a reference of many more samples at equal samples and at equal time.

use super::Live;
use crate::outcome::{SunCheck, SunRun};
use crate::thresholds::{MAX_SUN_IMAGE_MEAN_DIFF, MAX_SUN_TILE_MEAN_DIFF, SUN_TILE_FLOOR};
use crate::{Config, ImageCase, Report};
use prism_core::{Backend, Image, Integrator, NoProgress, PixelFormat, RenderSettings};
use std::time::Instant;

/// Sizes and sample counts of the sun checks: `(width, converged spp,
/// reference spp, equal-spp comparison spp)`. Small images: the check is of
/// the estimator, not of the picture, and must run in CI time on two cores.
fn plan(config: &Config) -> (u32, u32, u32, u32) {
    if config.quick {
        (32, 8192, 16384, 16)
    } else {
        (48, 16384, 32768, 32)
    }
}

fn render(
    backend: &mut dyn Backend,
    case: &ImageCase,
    settings: &RenderSettings,
    (w, h): (u32, u32),
) -> Result<(Image, f64), prism_core::Error> {
    let mut image = Image::new(w, h, PixelFormat::LinearF32)?;
    let start = Instant::now();
    backend.render(&case.camera, settings, &mut image, &NoProgress)?;
    Ok((image, start.elapsed().as_secs_f64() * 1e3))
}

/// Mean of each channel of each `tile x tile` tile, linear (no clamp: a
/// clamp would bias the noisier estimator's mean downwards).
fn linear_tile_means(image: &Image, tile: u32) -> Vec<[f64; 3]> {
    let (w, h) = (image.width(), image.height());
    let (tx, ty) = (w.div_ceil(tile), h.div_ceil(tile));
    let mut sums = vec![([0.0f64; 3], 0u32); (tx * ty) as usize];
    for (i, p) in image.linear().iter().enumerate() {
        let (x, y) = (i as u32 % w, i as u32 / w);
        // ok: `x < w` and `y < h`, so the tile index is below `tx * ty`.
        let (s, n) = &mut sums[((y / tile) * tx + x / tile) as usize];
        for c in 0..3 {
            s[c] += p[c] as f64;
        }
        *n += 1;
    }
    sums.into_iter()
        .map(|(s, n)| s.map(|v| v / n.max(1) as f64))
        .collect()
}

/// Relative difference of `a` against `b`, with `floor` keeping dark values
/// from turning noise into a large ratio.
fn relative(a: f64, b: f64, floor: f64) -> f64 {
    (a - b).abs() / b.abs().max(floor)
}

/// Root-mean-square error of `a` against `reference` over pixels and channels
/// (linear), relative to the reference's mean.
fn relative_rmse(a: &Image, reference: &Image) -> f64 {
    let (mut sq, mut sum, mut n) = (0.0f64, 0.0f64, 0usize);
    for (p, q) in a.linear().iter().zip(reference.linear()) {
        for c in 0..3 {
            let d = p[c] as f64 - q[c] as f64;
            sq += d * d;
            sum += q[c] as f64;
            n += 1;
        }
    }
    let n = n.max(1) as f64;
    (sq / n).sqrt() / (sum / n).max(1e-12)
}

fn run_one(
    backend: &mut dyn Backend,
    case: &ImageCase,
    config: &Config,
    check: &mut SunCheck,
) -> Result<(), prism_core::Error> {
    backend.set_scene(&case.scene)?;
    let (_, converged_spp, reference_spp, spp) = plan(config);
    let size = (check.width, check.height);
    let settings = |spp: u32, nee: bool| RenderSettings {
        integrator: Integrator::Path,
        spp,
        seed: config.seed,
        sun_nee: nee,
        max_depth: case.settings.max_depth.clamp(1, config.max_depth.max(1)),
        ..case.settings
    };
    // Convergence: both estimators at the high sample count, another seed
    // for each, so that neither shares the other's noise.
    let (on, _) = render(backend, case, &settings(converged_spp, true), size)?;
    let off_settings = RenderSettings {
        seed: config.seed.wrapping_add(1),
        ..settings(converged_spp, false)
    };
    let (off, _) = render(backend, case, &off_settings, size)?;
    let (mon, moff) = (
        linear_tile_means(&on, config.tile),
        linear_tile_means(&off, config.tile),
    );
    let (mut worst, mut sum_on, mut sum_off) = (0.0f64, [0.0f64; 3], [0.0f64; 3]);
    for (p, q) in mon.iter().zip(&moff) {
        for c in 0..3 {
            worst = worst.max(relative(q[c], p[c], SUN_TILE_FLOOR));
            sum_on[c] += p[c];
            sum_off[c] += q[c];
        }
    }
    let mean_diff = (0..3)
        .map(|c| relative(sum_off[c], sum_on[c], SUN_TILE_FLOOR * mon.len() as f64))
        .fold(0.0f64, f64::max);
    check.max_tile_diff = worst;
    check.mean_diff = mean_diff;
    if worst > MAX_SUN_TILE_MEAN_DIFF {
        check.failures.push(format!(
            "next-event estimation on and off differ by {:.1}% in a tile mean (limit {:.1}%)",
            100.0 * worst,
            100.0 * MAX_SUN_TILE_MEAN_DIFF
        ));
    }
    if mean_diff > MAX_SUN_IMAGE_MEAN_DIFF {
        check.failures.push(format!(
            "next-event estimation on and off differ by {:.2}% in the image mean (limit {:.2}%)",
            100.0 * mean_diff,
            100.0 * MAX_SUN_IMAGE_MEAN_DIFF
        ));
    }

    // Noise: error against a reference of many samples (another seed), at
    // equal samples and, for chance hits alone, at the time next-event
    // estimation took.
    let reference_settings = RenderSettings {
        seed: config.seed.wrapping_add(2),
        ..settings(reference_spp, true)
    };
    let (reference, _) = render(backend, case, &reference_settings, size)?;
    let run =
        |backend: &mut dyn Backend, spp: u32, nee: bool| -> Result<SunRun, prism_core::Error> {
            // The best of three timings: the first pays for warm-up.
            let mut best = f64::INFINITY;
            let mut image = None;
            for _ in 0..3 {
                let (i, ms) = render(backend, case, &settings(spp, nee), size)?;
                best = best.min(ms);
                image = Some(i);
            }
            let rmse = image.map_or(f64::NAN, |i| relative_rmse(&i, &reference));
            Ok(SunRun {
                nee,
                spp,
                ms: best,
                relative_rmse: rmse,
            })
        };
    let nee_on = run(backend, spp, true)?;
    let nee_off = run(backend, spp, false)?;
    let equal_time_spp = ((spp as f64 * nee_on.ms / nee_off.ms.max(1e-6)).round() as u32)
        .clamp(1, RenderSettings::MAX_SPP);
    let nee_off_equal_time = run(backend, equal_time_spp, false)?;
    check.runs = vec![nee_on, nee_off, nee_off_equal_time];
    Ok(())
}

pub(super) fn run_sun(
    case: &ImageCase,
    config: &Config,
    live: &mut [Live],
    report: &mut Report,
    log: &mut dyn FnMut(&str),
) {
    if case.scene.sun.is_none() {
        return;
    }
    let (width, converged_spp, reference_spp, _) = plan(config);
    let height =
        ((width as u64 * case.height.max(1) as u64 / case.width.max(1) as u64).max(1)) as u32;
    // On the first backend only (the CPU in CI): the estimators are core's, and
    // every backend's sun images are compared with each other by the image
    // checks. wgpu on lavapipe gave frames at 16,384 and more samples per
    // pixel far from its own frames of few samples (a relative RMSE of 20
    // against them), which its 4-spp frames, identical to the CPU's, do not
    // show: a limit of high sample counts there, not yet understood.
    for b in live.iter_mut().take(1) {
        let mut check = SunCheck {
            scene: case.name.clone(),
            backend: b.name.clone(),
            width,
            height,
            converged_spp,
            reference_spp,
            max_tile_diff: f64::NAN,
            mean_diff: f64::NAN,
            runs: Vec::new(),
            failures: Vec::new(),
        };
        if let Err(e) = run_one(b.backend.as_mut(), case, config, &mut check) {
            check.failures.push(format!("{e}"));
        }
        log(&format!(
            "sun {} on {}: {} (tile means {:.2}% apart, image {:.3}%)",
            case.name,
            b.name,
            if check.failures.is_empty() {
                "ok"
            } else {
                "FAILED"
            },
            100.0 * check.max_tile_diff,
            100.0 * check.mean_diff
        ));
        for r in &check.runs {
            log(&format!(
                "  NEE {}: {} spp, {:.1} ms, relative RMSE {:.4}",
                if r.nee { "on " } else { "off" },
                r.spp,
                r.ms,
                r.relative_rmse
            ));
        }
        report.sun.push(check);
    }
}
