//! `prism animate`: a camera path rendered under a frame budget, the knobs
//! chosen per frame by [`prism::tune::FrameTuner`], beside the same path with
//! fixed knobs: those the tuned run chose at the start of the path (frame 3,
//! once its correction settled), kept to the end. Writes `frames.csv`
//! (tuned), `fixed.csv` (fixed, unless `--no-baseline`) and `plot.svg`,
//! prints the goal figures.

use super::plot::plot;
use crate::{CliError, save};
use clap::Args;
use prism::tune::scenes::{AnimatedScene, by_name, from_mesh, path_camera};
use prism::tune::{
    CalibrationOptions, FrameClock, FrameEstimate, FramePlan, FrameTuner, Knobs,
    PREPASS_BESIDE_SHARE, Plan, SETTLING_FRAMES, TunerConfig, calibrate,
};
use prism::{Backend, BackendChoice, Image, NoProgress, OpenOptions, PixelFormat, RenderSettings};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args)]
pub(crate) struct AnimateArgs {
    /// Scene: ogre (one mesh), crowd (456k triangles of the shared meshes),
    /// instances (two levels) (default ogre).
    #[arg(long, conflicts_with = "mesh")]
    scene: Option<String>,
    /// This mesh (.obj or .ply), on a ground, instead of a scene.
    #[arg(long)]
    mesh: Option<PathBuf>,
    /// Backend: auto, cpu, cuda, wgpu (PRISM_BACKEND, when set and not empty, overrides).
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Image width.
    #[arg(long, default_value_t = 320)]
    width: u32,
    /// Image height.
    #[arg(long, default_value_t = 240)]
    height: u32,
    /// Frames of the path.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    frames: u32,
    /// The frame budget, in milliseconds.
    #[arg(long)]
    budget_ms: f64,
    /// Output directory (made if missing).
    #[arg(long)]
    out: PathBuf,
    /// Also write every frame as DIR/frames/tuned_NNNN.png and fixed_NNNN.png.
    #[arg(long)]
    save_frames: bool,
    /// Turn the camera 180 degrees (to look away from the centre) from this frame on.
    #[arg(long)]
    turn_at: Option<u32>,
    /// Keep the path's first camera on every frame: one view repeated, which
    /// shows how much a frame's time varies on its own, apart from the view.
    #[arg(long)]
    still: bool,
    /// Measure the backend's time model again instead of reading its cache.
    #[arg(long)]
    recalibrate: bool,
    /// Most AO rays a frame may take.
    #[arg(long, default_value_t = 256)]
    max_ao_rays: u32,
    /// Share of each frame's surprise (measured over modelled time, less the
    /// correction) taken into the model's correction, in (0, 1]: 0.25 smooths
    /// noise over about four frames, 1 takes the last frame's own ratio.
    #[arg(long, default_value_t = TunerConfig::default().feedback_rate)]
    feedback_rate: f64,
    /// How a move of the correction is clamped after the first frames:
    /// `fixed` (20% of it) or `adaptive` (three times the recent spread of
    /// the surprises, at least 1%: an odd frame moves it by about the noise).
    #[arg(long, default_value = "fixed", value_parser = ["fixed", "adaptive"])]
    feedback_clamp: String,
    /// Skip the fixed-settings baseline (half the time; fixed.csv is not written).
    #[arg(long)]
    no_baseline: bool,
    /// Shared scenes directory (ogre.obj, bunny.obj; default: $PRISM_SCENES, else
    /// shared/scenes beside the source checkout).
    #[arg(long)]
    scenes: Option<PathBuf>,
    /// Worker threads of the CPU backend (0 = all cores).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// What a frame's time is: `wall` (the whole render call on the host's
    /// clock, the image's copy back included), `device` (the frame's trace
    /// stage as the backend times it: CUDA events, wgpu timestamp queries,
    /// the host clock on the CPU; what a frame costs an engine that keeps
    /// the image on the GPU) or `cpu` (CPU backend on Linux only: the CPU
    /// time of this process's threads during the frame over the thread
    /// count, which other processes on a shared machine disturb far less;
    /// for measuring the tuner on a busy machine, not for engines).
    #[arg(long, default_value = "wall", value_parser = ["wall", "device", "cpu"])]
    clock: String,
}

/// CPU time of every thread of this process so far, in seconds, from
/// `/proc/self/task/*/schedstat` (its first field: nanoseconds on a CPU).
fn process_cpu_seconds() -> Option<f64> {
    let mut ns = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        ns += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(ns as f64 * 1e-9)
}

/// One frame's row of the CSV files.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Row {
    pub frame: u32,
    pub target_ms: f64,
    pub model_ms: f64,
    pub corrected_ms: f64,
    pub measured_ms: f64,
    pub prepass_ms: f64,
    pub probe_pixels: u32,
    /// The part of the pre-pass the frame loop waited for: all of it when it
    /// runs before the frame, what outlasted the frame before when beside it.
    pub prepass_exposed_ms: f64,
    pub ao_rays: u32,
    pub ao_extra: f32,
    pub shadows: bool,
    pub unreachable: bool,
    /// The frame's work differed in kind from the frame before (a cut).
    pub cut: bool,
}

impl Row {
    /// The frame's knobs.
    pub fn knobs(&self) -> Knobs {
        Knobs {
            ao_rays: self.ao_rays,
            ao_extra: self.ao_extra,
            shadows: self.shadows,
        }
    }
}

/// The goal figures over the frames after the first three.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Summary {
    pub mean_error: f64,
    pub worst_error: f64,
    pub worst_frame: u32,
    pub prediction_error: f64,
    pub prepass_share: f64,
}

pub(crate) fn summarize(rows: &[Row]) -> Summary {
    let rest: Vec<&Row> = rows.iter().skip(3).collect();
    let n = rest.len().max(1) as f64;
    let err = |r: &Row| (r.measured_ms - r.target_ms).abs() / r.target_ms;
    let (worst_frame, worst_error) = rest
        .iter()
        .map(|r| (r.frame, err(r)))
        .fold((0, 0.0), |a, b| if b.1 > a.1 { b } else { a });
    Summary {
        mean_error: rest.iter().map(|r| err(r)).sum::<f64>() / n,
        worst_error,
        worst_frame,
        prediction_error: rest
            .iter()
            .map(|r| (r.corrected_ms - r.measured_ms).abs() / r.measured_ms)
            .sum::<f64>()
            / n,
        prepass_share: rest
            .iter()
            .map(|r| r.prepass_exposed_ms / r.target_ms)
            .sum::<f64>()
            / n,
    }
}

fn row(frame: u32, plan: &FramePlan, measured_ms: f64, prepass_exposed_ms: f64) -> Row {
    let c = plan.plan.choice();
    Row {
        frame,
        target_ms: plan.target_ms,
        model_ms: c.model_ms,
        corrected_ms: c.corrected_ms,
        measured_ms,
        prepass_ms: plan.prepass_ms,
        probe_pixels: plan.workload.probe_pixels,
        prepass_exposed_ms,
        ao_rays: c.knobs.ao_rays,
        ao_extra: c.knobs.ao_extra,
        shadows: c.knobs.shadows,
        unreachable: matches!(plan.plan, Plan::Unreachable { .. }),
        cut: plan.cut,
    }
}

fn write_csv(path: &Path, rows: &[Row]) -> Result<(), CliError> {
    let io = |e: csv::Error| prism::Error::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let mut w = csv::Writer::from_path(path).map_err(io)?;
    w.write_record([
        "frame",
        "target_ms",
        "model_ms",
        "corrected_ms",
        "measured_ms",
        "prepass_ms",
        "ao_rays",
        "ao_extra",
        "mean_ao_rays",
        "shadows",
        "unreachable",
        "probe_pixels",
        "prepass_exposed_ms",
        "cut",
    ])
    .map_err(io)?;
    for r in rows {
        w.write_record([
            r.frame.to_string(),
            format!("{:.4}", r.target_ms),
            format!("{:.4}", r.model_ms),
            format!("{:.4}", r.corrected_ms),
            format!("{:.4}", r.measured_ms),
            format!("{:.4}", r.prepass_ms),
            r.ao_rays.to_string(),
            format!("{:.6}", r.ao_extra),
            format!("{:.4}", r.knobs().mean_ao()),
            (r.shadows as u8).to_string(),
            (r.unreachable as u8).to_string(),
            r.probe_pixels.to_string(),
            format!("{:.4}", r.prepass_exposed_ms),
            (r.cut as u8).to_string(),
        ])
        .map_err(io)?;
    }
    w.flush().map_err(|e| prism::Error::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    Ok(())
}

pub(crate) fn animate(a: AnimateArgs) -> Result<(), CliError> {
    let scenes_dir = a
        .scenes
        .clone()
        .unwrap_or_else(prism::conformance::default_scenes_dir);
    let anim: AnimatedScene = match &a.mesh {
        Some(path) => from_mesh(path)?,
        None => by_name(a.scene.as_deref().unwrap_or("ogre"), &scenes_dir)?,
    };
    std::fs::create_dir_all(a.out.join(if a.save_frames { "frames" } else { "" })).map_err(
        |e| prism::Error::Io {
            path: a.out.display().to_string(),
            message: e.to_string(),
        },
    )?;
    let opened = prism::open_with(
        BackendChoice::from_name(&a.backend)?,
        &OpenOptions {
            cpu_threads: a.threads,
        },
    )?;
    eprintln!("{}", opened.report());
    let mut backend = opened.backend;
    let mut options = CalibrationOptions::new(a.width, a.height);
    options.recalibrate = a.recalibrate;
    // The model predicts the clock the frames are measured by (the CPU
    // clock's frames are calibrated on the wall clock, as before).
    let clock = if a.clock == "device" {
        FrameClock::Device
    } else {
        FrameClock::Wall
    };
    options.clock = clock;
    // A scene with instances gets a model measured on two levels.
    options.two_level = !anim.scene.instances().is_empty();
    let calibration = calibrate(&mut *backend, &options)?;
    let c = &calibration.model.coefficients;
    println!(
        "calibration: {} on {} at {}x{}{} ({}; {} frames, worst fit error {:.1}%): \
         fixed {:.3} ms, camera {:.2} ns/ray + {:.3} ns/step, occlusion {:.2} ns/ray + {:.3} ns/step",
        calibration.backend,
        calibration.device,
        calibration.size.0,
        calibration.size.1,
        if calibration.two_level {
            ", two levels"
        } else {
            ""
        },
        match (calibration.cached, calibration.replaced_stale) {
            (true, _) => "cached".to_owned(),
            (false, Some(moved)) => format!(
                "measured now: the cached one's check frame was {:.1}% off",
                100.0 * moved
            ),
            (false, None) => "measured now".to_owned(),
        },
        calibration.frames,
        100.0 * calibration.worst_fit_error,
        c[0],
        c[1] * 1e6,
        c[2] * 1e6,
        c[3] * 1e6,
        c[4] * 1e6,
    );
    println!(
        "scene {}: {} primitives, {} instances ({}), {} frames at {}x{}, budget {} ms ({} clock), \
         feedback rate {} ({} clamp){}",
        anim.name,
        anim.scene.primitive_count()
            + anim
                .scene
                .geometries()
                .iter()
                .map(|g| g.primitive_count())
                .sum::<usize>(),
        anim.scene.instances().len(),
        anim.source,
        a.frames,
        a.width,
        a.height,
        a.budget_ms,
        a.clock,
        a.feedback_rate,
        a.feedback_clamp,
        if a.still {
            ", one view repeated".to_string()
        } else {
            a.turn_at
                .map_or(String::new(), |k| format!(", 180-degree turn at frame {k}"))
        },
    );
    backend.set_scene(&anim.scene)?;
    let base = RenderSettings {
        ao_distance: anim.ao_distance,
        ..RenderSettings::default()
    };
    let config = TunerConfig {
        max_ao_rays: a.max_ao_rays,
        feedback_rate: a.feedback_rate,
        adaptive_clamp: a.feedback_clamp == "adaptive",
        ..TunerConfig::default()
    };
    config.validate()?;
    let cpu_clock = a.clock == "cpu";
    if cpu_clock && (backend.info().name != "cpu" || process_cpu_seconds().is_none()) {
        return Err(CliError::Usage(
            "--clock cpu measures the CPU backend's threads on Linux: use --backend cpu",
        ));
    }
    let threads = if a.threads > 0 {
        a.threads
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    };
    let mut image = Image::new(a.width, a.height, PixelFormat::Srgba8)?;
    // One untimed frame: first-use costs (allocation, kernel compilation) are
    // not the steady frame time either run is about.
    let warm = path_camera(&anim, 0, a.frames, a.turn_at);
    backend.render(
        &warm,
        &Knobs::new(4, true).apply(&base),
        &mut image,
        &NoProgress,
    )?;

    // The fixed run keeps the knobs the tuned run chose on the first frame
    // after its correction settled (the first frame the figures count): the
    // settings tuned at the start of the path, then kept.
    let settled = SETTLING_FRAMES.min(a.frames - 1) as usize;
    // On a GPU backend each frame's pre-pass runs on the host while the device
    // renders the frame before it, as in Ganestam and Doggett's tuner, sized
    // for a larger share of the budget (less sampling error); the CPU
    // backend's frames take every core, so its pre-pass runs before each frame.
    let beside = backend.info().name != "cpu";
    let mut runs: Vec<(&str, Vec<Row>)> = Vec::new();
    let kinds: &[bool] = if a.no_baseline {
        &[false]
    } else {
        &[false, true]
    };
    for &fixed in kinds {
        let kept: Option<Knobs> = runs
            .first()
            .and_then(|(_, rows): &(&str, Vec<Row>)| rows.get(settled).map(Row::knobs));
        let mut tuner = FrameTuner::new(calibration.clone(), &anim.scene, base, config)?;
        if beside {
            tuner.set_prepass_share(PREPASS_BESIDE_SHARE)?;
        }
        let camera_at =
            |f: u32| path_camera(&anim, if a.still { 0 } else { f }, a.frames, a.turn_at);
        let mut rows = Vec::new();
        // The next frame's pre-pass, made beside this frame, and how long the
        // frame loop waited for it after the frame.
        let mut next: Option<(FrameEstimate, f64)> = None;
        for f in 0..a.frames {
            let camera = camera_at(f);
            let (estimate, exposed_ms) = match next.take() {
                Some(made) => made,
                None => {
                    let e = tuner.estimate(&camera, a.width, a.height, a.budget_ms)?;
                    (e, e.prepass_ms)
                }
            };
            let mut plan = tuner.plan_estimated(&estimate, a.budget_ms)?;
            if let (true, Some(knobs)) = (fixed, kept) {
                plan = tuner.with_knobs(&plan, knobs);
            }
            let ahead = (beside && f + 1 < a.frames).then(|| camera_at(f + 1));
            let cpu_before = cpu_clock.then(process_cpu_seconds).flatten();
            let (wall, upcoming) = std::thread::scope(|s| {
                let tuner = &tuner;
                let job = ahead
                    .as_ref()
                    .map(|c| s.spawn(move || tuner.estimate(c, a.width, a.height, a.budget_ms)));
                let wall = render(&mut *backend, &camera, &plan.settings, &mut image, clock);
                let waiting = Instant::now();
                let upcoming = job.map(|j| {
                    let made = j.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
                    made.map(|e| (e, waiting.elapsed().as_secs_f64() * 1e3))
                });
                (wall, upcoming)
            });
            let wall = wall?;
            next = upcoming.transpose()?;
            let measured = match (cpu_before, cpu_clock.then(process_cpu_seconds).flatten()) {
                (Some(a), Some(b)) => (b - a) / threads as f64 * 1e3,
                _ => wall * 1e3,
            };
            tuner.record(&plan, measured);
            rows.push(row(f, &plan, measured, exposed_ms));
            if a.save_frames {
                let name = format!("{}_{f:04}.png", if fixed { "fixed" } else { "tuned" });
                save(&image, &a.out.join("frames").join(name))?;
            }
        }
        runs.push((if fixed { "fixed" } else { "tuned" }, rows));
    }
    let tuned = &runs[0].1;
    let fixed = runs.get(1).map(|(_, rows)| rows.as_slice());
    write_csv(&a.out.join("frames.csv"), tuned)?;
    if let Some(fixed) = fixed {
        write_csv(&a.out.join("fixed.csv"), fixed)?;
    }
    let title = format!(
        "{} on {}, {}x{}, budget {} ms",
        anim.name, calibration.backend, a.width, a.height, a.budget_ms
    );
    plot(&a.out.join("plot.svg"), &title, tuned, fixed.unwrap_or(&[]))?;
    println!(
        "{:<6} {:>11} {:>17} {:>14} {:>14}   (frames 4..{}; goals 2%, 5%, 1%, 5%)",
        "run", "mean |err|", "worst @frame", "pred. error", "pre-pass", a.frames
    );
    for (name, rows) in &runs {
        let s = summarize(rows);
        println!(
            "{name:<6} {:>10.2}% {:>9.2}% @{:<5} {:>13.2}% {:>13.2}%",
            100.0 * s.mean_error,
            100.0 * s.worst_error,
            s.worst_frame,
            100.0 * s.prediction_error,
            100.0 * s.prepass_share,
        );
    }
    for cut in tuned.iter().filter(|r| r.cut) {
        let err = |r: &Row| 100.0 * (r.measured_ms - r.target_ms).abs() / r.target_ms;
        let next = tuned.iter().find(|r| r.frame == cut.frame + 1);
        println!(
            "cut at frame {} (the work changed in kind): {:.2}% off the budget on it, {} on the \
             frame after (the correction restarts from the cut frame)",
            cut.frame,
            err(cut),
            next.map_or("-".to_string(), |r| format!("{:.2}%", err(r))),
        );
    }
    if tuned.iter().any(|r| r.unreachable) {
        let n = tuned.iter().filter(|r| r.unreachable).count();
        println!(
            "budget unreachable on {n} frames: even 1 AO ray without shadows is predicted over it"
        );
    }
    println!(
        "wrote {}/frames.csv, {}plot.svg",
        a.out.display(),
        if fixed.is_some() { "fixed.csv, " } else { "" }
    );
    Ok(())
}

/// Render one frame; its time in seconds by `clock`.
fn render(
    backend: &mut dyn Backend,
    camera: &prism::Camera,
    settings: &RenderSettings,
    image: &mut Image,
    clock: FrameClock,
) -> Result<f64, CliError> {
    let stats = backend.render(camera, settings, image, &NoProgress)?;
    Ok(clock.frame_ms(&stats) * 1e-3)
}
