//! The image checks: every scene with every integrator on every backend
//! (determinism, the 8-bit frame against the linear one encoded, radiance
//! that is finite and non-negative), then every pair of backends' frames
//! compared per pixel and, converged, per tile.

use super::Live;
use crate::images::{self, PixelMetrics};
use crate::{BackendRender, Config, ImageCase, ImageCheck, PairCheck, Report};
use prism_core::{Backend, Camera, Image, Integrator, NoProgress, PixelFormat, RenderSettings};
use std::time::Instant;

/// The settings an image check renders `integrator` with.
pub fn image_settings(
    case: &ImageCase,
    integrator: Integrator,
    spp: u32,
    config: &Config,
) -> RenderSettings {
    let own = case.settings;
    let mut s = RenderSettings {
        integrator,
        spp,
        seed: config.seed,
        ..own
    };
    if integrator != own.integrator {
        s.max_depth = match integrator {
            Integrator::Path => 8,
            Integrator::Whitted => 2,
            Integrator::Ao => 1,
        };
    }
    s.max_depth = s.max_depth.clamp(1, config.max_depth.max(1));
    if integrator == Integrator::Ao {
        s.ao_samples = 4;
        s.ao_shadows = true;
    }
    s
}

fn size_for(case: &ImageCase, width: u32) -> (u32, u32) {
    let w = width.max(1);
    let h = (w as u64 * case.height.max(1) as u64 / case.width.max(1) as u64)
        .clamp(1, u64::from(u32::MAX)) as u32;
    (w, h)
}

fn render(
    backend: &mut dyn Backend,
    camera: &Camera,
    settings: &RenderSettings,
    (w, h): (u32, u32),
    format: PixelFormat,
) -> Result<(Image, f64), prism_core::Error> {
    let mut image = Image::new(w, h, format)?;
    let start = Instant::now();
    backend.render(camera, settings, &mut image, &NoProgress)?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    // A backend may not hand back another image than the one it was given:
    // the checks below compare frames of the size and format asked for.
    if (image.width(), image.height(), image.format()) != (w, h, format) {
        return Err(prism_core::Error::Device {
            backend: "conformance",
            operation: "render",
            message: format!(
                "asked for a {w}x{h} {format:?} frame, the backend returned a {}x{} {:?} one",
                image.width(),
                image.height(),
                image.format()
            ),
        });
    }
    Ok((image, ms))
}

pub(super) fn run_images(
    case: &ImageCase,
    config: &Config,
    live: &mut [Live],
    report: &mut Report,
    log: &mut dyn FnMut(&str),
) {
    let size = size_for(case, config.image_width);
    let csize = size_for(case, config.converged_width);
    let mut checks: Vec<ImageCheck> = Integrator::ALL
        .iter()
        .map(|&i| ImageCheck {
            scene: case.name.clone(),
            integrator: i,
            settings: image_settings(case, i, config.spp, config),
            width: size.0,
            height: size.1,
            converged_size: csize,
            converged_spp: config.converged_spp,
            renders: Vec::new(),
            pairs: Vec::new(),
        })
        .collect();
    for b in live.iter_mut() {
        let scene = b.backend.set_scene(&case.scene);
        for check in checks.iter_mut() {
            let mut r = BackendRender {
                backend: b.name.clone(),
                image: None,
                converged: None,
                determinism: None,
                srgb8_levels: None,
                bad_radiance: None,
                error: None,
                render_ms: 0.0,
            };
            let outcome = scene.clone().and_then(|_| {
                let be = b.backend.as_mut();
                let s = check.settings;
                let (first, ms) = render(be, &case.camera, &s, size, PixelFormat::LinearF32)?;
                r.render_ms = ms;
                let (second, _) = render(be, &case.camera, &s, size, PixelFormat::LinearF32)?;
                r.determinism = Some(images::bit_identical(&first, &second));
                let (srgb, _) = render(be, &case.camera, &s, size, PixelFormat::Srgba8)?;
                // `render` checked both frames' size and format, so the
                // comparison runs; were it refused, the render fails.
                r.srgb8_levels = Some(images::srgb8_levels(&srgb, &first).map_err(|message| {
                    prism_core::Error::Device {
                        backend: "conformance",
                        operation: "8-bit check",
                        message,
                    }
                })?);
                r.bad_radiance = images::bad_radiance(&first).map(|b| ("frame", b));
                r.image = Some(first);
                if config.converged_spp > 0 {
                    let cs = image_settings(case, check.integrator, config.converged_spp, config);
                    let (conv, _) = render(be, &case.camera, &cs, csize, PixelFormat::LinearF32)?;
                    r.bad_radiance = r
                        .bad_radiance
                        .or_else(|| images::bad_radiance(&conv).map(|b| ("converged frame", b)));
                    r.converged = Some(conv);
                }
                Ok(())
            });
            if let Err(e) = outcome {
                r.error = Some(e.to_string());
            }
            log(&format!(
                "image {} on {}: {} [{:.0} ms]",
                check.name(),
                b.name,
                match r.failures().first() {
                    None => "ok".to_string(),
                    Some(w) => format!("FAILED: {w}"),
                },
                r.render_ms
            ));
            check.renders.push(r);
        }
    }
    for check in checks.iter_mut() {
        let n = check.renders.len();
        for i in 0..n {
            for j in i + 1..n {
                let (a, b) = (&check.renders[i], &check.renders[j]);
                let (Some(ia), Some(ib)) = (&a.image, &b.image) else {
                    continue;
                };
                let pixels = images::pixel_metrics(ia, ib);
                let tiles = match (&a.converged, &b.converged) {
                    (Some(ca), Some(cb)) => Some(images::tile_metrics(ca, cb, config.tile)),
                    _ => None,
                };
                let mut failures = Vec::new();
                let pixels = pixels.unwrap_or_else(|e| {
                    failures.push(e);
                    PixelMetrics::default()
                });
                let tiles = match tiles {
                    Some(Ok(t)) => Some(t),
                    Some(Err(e)) => {
                        failures.push(e);
                        None
                    }
                    None => None,
                };
                failures.extend(images::pair_failures(&pixels, tiles.as_ref()));
                log(&format!(
                    "image {}: {} vs {}: MAE {:.3}/255, RMSE {:.4}, off {:.2}%, tile {:.2}/255 {}",
                    check.name(),
                    a.backend,
                    b.backend,
                    pixels.mae * 255.0,
                    pixels.rmse,
                    pixels.pixels_off * 100.0,
                    tiles.map_or(0.0, |t| t.max_tile_diff * 255.0),
                    if failures.is_empty() { "ok" } else { "FAILED" }
                ));
                check.pairs.push(PairCheck {
                    a: a.backend.clone(),
                    b: b.backend.clone(),
                    pixels,
                    tiles,
                    failures,
                });
            }
        }
    }
    report.images.extend(checks);
}
