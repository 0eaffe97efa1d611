//! How much one frame's device time varies when nothing changes: the first
//! view of `prism animate`'s path over a scene, rendered with AO at fixed
//! settings `--frames` times on CUDA, for several kernel configurations
//! (render blocks of 1, 2 and 8 tiles). Prints, per configuration, the mean
//! trace time (CUDA events), its coefficient of variation, the mean
//! frame-to-frame jitter (a frame against the mean of its two neighbours) and
//! the slowest frame over the mean.
//!
//! Usage: ao_jitter [SCENE] [AO_RAYS] [FRAMES] (ogre, 48, 100; 1920x1080;
//! PRISM_SCENES names the shared scenes directory)

use prism::tune::scenes::{by_name, path_camera};
use prism_core::tune::Knobs;
use prism_core::{Backend, Image, NoProgress, PixelFormat, RenderSettings};
use prism_cuda::{CudaBackend, CudaOptions, KernelConfig};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().map_or("ogre", String::as_str);
    let ao: f64 = args.get(1).map_or(Ok(48.0), |a| a.parse())?;
    let frames: usize = args.get(2).map_or(Ok(100), |a| a.parse())?;
    let scenes =
        PathBuf::from(std::env::var("PRISM_SCENES").unwrap_or_else(|_| "../shared/scenes".into()));
    let anim = by_name(name, &scenes)?;
    let camera = path_camera(&anim, 0, 100, None);
    let base = RenderSettings {
        ao_distance: anim.ao_distance,
        ..RenderSettings::default()
    };
    let settings = Knobs::with_mean(ao, true).apply(&base);
    let d = KernelConfig::default();
    let configs = [
        ("default", d.clone()),
        (
            "tiles1",
            KernelConfig {
                render_tiles_per_block: 1,
                ..d.clone()
            },
        ),
        (
            "tiles2",
            KernelConfig {
                render_tiles_per_block: 2,
                render_min_waves: 0,
                ..d.clone()
            },
        ),
        (
            "tiles8",
            KernelConfig {
                render_tiles_per_block: 8,
                render_min_waves: 0,
                ..d.clone()
            },
        ),
    ];
    let mut image = Image::new(1920, 1080, PixelFormat::Srgba8)?;
    println!("{name}, 1920x1080, AO {ao} rays a pixel, {frames} frames");
    println!(
        "{:<9} {:>8} {:>6} {:>7} {:>8}",
        "config", "mean ms", "cv", "jitter", "max/mean"
    );
    for (label, config) in configs {
        let mut b = CudaBackend::with_options(CudaOptions {
            config,
            ..CudaOptions::default()
        })?;
        b.set_scene(&anim.scene)?;
        for _ in 0..3 {
            b.render(&camera, &settings, &mut image, &NoProgress)?;
        }
        let mut t = Vec::with_capacity(frames);
        for _ in 0..frames {
            t.push(
                b.render(&camera, &settings, &mut image, &NoProgress)?
                    .trace
                    .as_secs_f64()
                    * 1e3,
            );
        }
        let mean = t.iter().sum::<f64>() / t.len() as f64;
        let sd = (t.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / t.len() as f64).sqrt();
        let jitter = (1..t.len() - 1)
            .map(|i| (t[i] - 0.5 * (t[i - 1] + t[i + 1])).abs() / t[i])
            .sum::<f64>()
            / (t.len() - 2) as f64;
        let max = t.iter().cloned().fold(0.0, f64::max);
        println!(
            "{label:<9} {mean:>8.3} {:>5.2}% {:>6.2}% {:>8.3}",
            100.0 * sd / mean,
            100.0 * jitter,
            max / mean
        );
    }
    Ok(())
}
