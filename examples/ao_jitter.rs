//! How much one frame's device time varies when nothing changes: the first
//! view of `prism animate`'s path over a scene, rendered with AO at fixed
//! settings `FRAMES` times on CUDA, for AO blocks of 1 and 2 tiles, with the
//! device left idle 0, 2 and 10 ms between frames (an engine's frames follow
//! each other; `prism animate` leaves the device idle while the host plans).
//! Prints, per run, the mean trace time (CUDA events), its coefficient of
//! variation, the mean frame-to-frame jitter (a frame against the mean of its
//! two neighbours), the slowest frame over the mean, the wall clock's mean
//! and jitter, and the same with the device's wait for the first launch
//! added (`FrameTimes::launch_wait_ms`). `AO_JITTER_FRAMES=1` also prints
//! every frame's trace time.
//!
//! Usage: ao_jitter [SCENE] [AO_RAYS] [FRAMES] (ogre, 48, 100; 1920x1080;
//! PRISM_SCENES names the shared scenes directory)

use prism::tune::scenes::{by_name, path_camera};
use prism_core::tune::Knobs;
use prism_core::{Backend, Image, NoProgress, PixelFormat, RenderSettings};
use prism_cuda::{CudaBackend, CudaOptions, KernelConfig};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

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
    let mut image = Image::new(1920, 1080, PixelFormat::Srgba8)?;
    println!("{name}, 1920x1080, AO {ao} rays a pixel, {frames} frames");
    println!(
        "{:<8} {:>7} {:>8} {:>6} {:>7} {:>8} {:>9} {:>7} {:>9} {:>7}",
        "kernel",
        "idle ms",
        "mean ms",
        "cv",
        "jitter",
        "max/mean",
        "wall ms",
        "jitter",
        "+wait ms",
        "jitter"
    );
    let mut images = Vec::new();
    for (kernel, persistent_ao, tiles) in [
        ("shared", true, 1),
        ("tiles", false, 1),
        ("tiles2", false, 2),
    ] {
        let mut b = CudaBackend::with_options(CudaOptions {
            config: KernelConfig {
                persistent_ao,
                ao_tiles_per_block: tiles,
                ..KernelConfig::default()
            },
            ..CudaOptions::default()
        })?;
        b.set_scene(&anim.scene)?;
        for idle in [0u64, 10] {
            for _ in 0..3 {
                b.render(&camera, &settings, &mut image, &NoProgress)?;
            }
            let (mut t, mut wall, mut waited) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..frames {
                let s = b.render(&camera, &settings, &mut image, &NoProgress)?;
                t.push(s.trace.as_secs_f64() * 1e3);
                wall.push(s.total.as_secs_f64() * 1e3);
                waited.push(t[t.len() - 1] + b.last_frame_times().launch_wait_ms);
                std::thread::sleep(Duration::from_millis(idle));
            }
            let (mean, cv, jitter, max) = spread(&t);
            let (wall_mean, _, wall_jitter, _) = spread(&wall);
            let (wait_mean, _, wait_jitter, _) = spread(&waited);
            println!(
                "{kernel:<8} {idle:>7} {mean:>8.3} {:>5.2}% {:>6.2}% {max:>8.3} {wall_mean:>9.3} \
                 {:>6.2}% {wait_mean:>9.3} {:>6.2}%",
                100.0 * cv,
                100.0 * jitter,
                100.0 * wall_jitter,
                100.0 * wait_jitter,
            );
            if std::env::var_os("AO_JITTER_FRAMES").is_some() {
                let ms: Vec<String> = t.iter().map(|x| format!("{x:.3}")).collect();
                println!("  frames: {}", ms.join(" "));
            }
        }
        images.push((kernel, image.rgba8().to_vec()));
    }
    // Every kernel's pixels against the first's.
    for (kernel, pixels) in images.iter().skip(1) {
        let differ = pixels
            .chunks_exact(4)
            .zip(images[0].1.chunks_exact(4))
            .filter(|(a, b)| a != b)
            .count();
        println!("{kernel}: {differ} pixels differ from {}'s", images[0].0);
    }
    Ok(())
}

/// Mean, coefficient of variation, mean frame-to-frame jitter (a frame
/// against the mean of its two neighbours) and slowest over mean of `t`.
fn spread(t: &[f64]) -> (f64, f64, f64, f64) {
    let n = t.len().max(1) as f64;
    let mean = t.iter().sum::<f64>() / n;
    let sd = (t.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    let jitter = t
        .windows(3)
        .map(|w| (w[1] - 0.5 * (w[0] + w[2])).abs() / w[1])
        .sum::<f64>()
        / t.len().saturating_sub(2).max(1) as f64;
    let max = t.iter().cloned().fold(0.0, f64::max);
    (mean, sd / mean, jitter, max / mean)
}
