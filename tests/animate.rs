//! Frame budgets end to end: `prism animate` writes CSV files and a plot
//! that parse, reports an unreachable budget, and the tuner holds the
//! target across a sudden 180-degree turn on a deterministic device model.

use prism::tune::scenes::{by_name, path_camera};
use prism::tune::{Knobs, Plan, TunerConfig};
use prism_core::Accel;
use prism_core::tune::{Controller, TimeModel, estimate};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("prism-animate-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// `prism animate` on the CPU at 48 x 36, `frames` frames, cached
/// calibration in `cache`.
fn animate(out: &Path, cache: &Path, frames: &str, budget: &str, more: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_prism"));
    cmd.args([
        "animate",
        "--backend",
        "cpu",
        "--width",
        "48",
        "--height",
        "36",
        "--frames",
        frames,
        "--budget-ms",
        budget,
        "--max-ao-rays",
        "32",
        "--out",
    ])
    .arg(out)
    .args(more)
    .env_remove("PRISM_BACKEND")
    .env("PRISM_CACHE_DIR", cache);
    cmd.output().expect("running prism")
}

const COLUMNS: [&str; 14] = [
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
];

/// The rows of a frames CSV, checked to have the columns and sane values.
fn rows(path: &Path, max_rays: u32) -> Vec<csv::StringRecord> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let headers = r.headers().expect("a header row").clone();
    assert_eq!(headers.iter().collect::<Vec<_>>(), COLUMNS);
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.expect("a CSV row")).collect();
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row[0].parse::<usize>().unwrap(), i);
        for c in 1..6 {
            let v: f64 = row[c].parse().unwrap();
            assert!(
                v.is_finite() && v >= 0.0,
                "{}: row {i} {}: {v}",
                path.display(),
                COLUMNS[c]
            );
        }
        assert!(row[4].parse::<f64>().unwrap() > 0.0, "a measured time");
        let rays: u32 = row[6].parse().unwrap();
        assert!((1..=max_rays).contains(&rays), "ao_rays {rays}");
        let extra: f64 = row[7].parse().unwrap();
        assert!((0.0..1.0).contains(&extra), "ao_extra {extra}");
        let mean: f64 = row[8].parse().unwrap();
        assert!((mean - (rays as f64 + extra)).abs() <= 1e-4, "mean {mean}");
        assert!(matches!(&row[9], "0" | "1"));
        assert!(matches!(&row[10], "0" | "1"));
        assert!(row[11].parse::<u32>().unwrap() >= 1, "probe_pixels");
        let exposed: f64 = row[12].parse().unwrap();
        assert!(
            exposed.is_finite() && exposed >= 0.0,
            "prepass_exposed_ms {exposed}"
        );
        assert!(matches!(&row[13], "0" | "1"));
    }
    rows
}

#[test]
fn animate_writes_csv_and_plot_that_parse() {
    let dir = temp_dir("csv");
    let out = dir.join("out");
    let o = animate(
        &out,
        &dir.join("cache"),
        "6",
        "40",
        &["--turn-at", "4", "--save-frames"],
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("tuned") && text.contains("fixed"), "{text}");
    let tuned = rows(&out.join("frames.csv"), 32);
    let fixed = rows(&out.join("fixed.csv"), 32);
    assert_eq!((tuned.len(), fixed.len()), (6, 6));
    // The turn at frame 4 is a cut, and reported as one.
    let cuts: Vec<&str> = tuned.iter().map(|r| &r[13]).collect();
    assert_eq!(cuts[4], "1", "cut column {cuts:?}");
    assert!(text.contains("cut at frame 4"), "{text}");
    // The fixed run keeps one choice of knobs on every frame.
    assert!(
        fixed
            .iter()
            .all(|r| (&r[6], &r[7], &r[9]) == (&fixed[0][6], &fixed[0][7], &fixed[0][9]))
    );
    let svg = std::fs::read_to_string(out.join("plot.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("plot.svg is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let lines = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .count();
    assert!(lines >= 6, "{lines} lines in the plot");
    assert!(svg.contains("AO rays") && svg.contains("target"));
    assert!(out.join("frames").join("tuned_0005.png").is_file());
    assert!(out.join("frames").join("fixed_0000.png").is_file());
    // The second run reads the calibration from the cache, unless its check
    // frame says it is stale (frames this small jitter a lot), and says so.
    let again = animate(&dir.join("again"), &dir.join("cache"), "1", "40", &[]);
    let said = String::from_utf8_lossy(&again.stdout);
    assert!(
        said.contains("(cached;") || said.contains("the cached one's check frame was"),
        "{said}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_still_path_repeats_one_view() {
    let dir = temp_dir("still");
    let out = dir.join("out");
    let o = animate(
        &out,
        &dir.join("cache"),
        "3",
        "40",
        &["--still", "--save-frames"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("one view repeated"));
    // The fixed run's settings are the same on every frame, so with the
    // camera kept so are its images.
    let frame = |k: usize| {
        let path = out.join("frames").join(format!("fixed_{k:04}.png"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    assert!(frame(0) == frame(2), "the view moved");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unreachable_budget_is_reported() {
    let dir = temp_dir("unreachable");
    let out = dir.join("out");
    let o = animate(&out, &dir.join("cache"), "2", "0.0001", &[]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("budget unreachable on 2 frames"), "{text}");
    let tuned = rows(&out.join("frames.csv"), 32);
    assert!(tuned.iter().all(|r| &r[10] == "1"
        && &r[6] == "1"
        && r[7].parse::<f64>().unwrap() == 0.0
        && &r[9] == "0"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The feedback options reach the tuner (echoed in the scene line), a rate
/// outside (0, 1] is refused naming it, and `--no-baseline` writes no
/// fixed-settings run.
#[test]
fn feedback_options_and_no_baseline() {
    let dir = temp_dir("feedback");
    let out = dir.join("out");
    let more = [
        "--feedback-rate",
        "1",
        "--feedback-clamp",
        "adaptive",
        "--no-baseline",
        "--clock",
        "device",
    ];
    let o = animate(&out, &dir.join("cache"), "5", "40", &more);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("feedback rate 1 (adaptive clamp)"), "{text}");
    assert!(text.contains("(device clock)"), "{text}");
    // The device clock's calibration has its own cache entry.
    let cached: Vec<String> = std::fs::read_dir(dir.join("cache"))
        .expect("the calibration cache")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert!(cached.iter().any(|n| n.contains("-device-")), "{cached:?}");
    assert!(text.lines().any(|l| l.starts_with("tuned ")), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("fixed ")), "{text}");
    assert_eq!(rows(&out.join("frames.csv"), 32).len(), 5);
    assert!(!out.join("fixed.csv").exists());
    assert!(out.join("plot.svg").is_file());
    for bad in ["0", "1.5", "NaN"] {
        let o = animate(
            &dir.join("bad"),
            &dir.join("cache"),
            "2",
            "40",
            &["--feedback-rate", bad],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains("feedback_rate"),
            "{bad}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The crowd's path with a 180-degree turn at frame 7 on a deterministic
/// device: its time is a model with other constants than the calibrated
/// one (1.6 to 2.4 times each, and a fixed 2 ms) applied to the frame's work
/// counted at full resolution. The tuner plans from a coarser pre-pass; the
/// frame after the turn must be within 5% of the target.
#[test]
fn a_180_degree_turn_stays_within_five_percent() {
    let scenes = prism::conformance::default_scenes_dir();
    let anim = by_name("crowd", &scenes).expect("the crowd scene");
    let accel = Accel::build(&anim.scene).expect("its tree");
    let calibrated = TimeModel {
        coefficients: [0.2, 2e-4, 1e-5, 8e-5, 6e-6],
    };
    let truth = TimeModel {
        coefficients: [2.2, 4.8e-4, 1.6e-5, 1.6e-4, 1.4e-5],
    };
    let (w, h, frames, turn) = (64, 48, 20, 7);
    // The turn matters: the same knobs cost a quarter less after it.
    let k = Knobs::new(24, true);
    let view = |t| {
        let camera = path_camera(&anim, turn, frames, t);
        let work = estimate(&accel, &camera, (w, h), anim.ao_distance, w * h).unwrap();
        truth.predict_ms(&work.frame(k))
    };
    let (before, after) = (view(None), view(Some(turn)));
    assert!(
        after < 0.8 * before,
        "{after} ms after the turn, {before} ms without it"
    );
    let mut c = Controller::new(calibrated, TunerConfig::default()).unwrap();
    let mut target = 0.0;
    let mut after_turn = None;
    for f in 0..frames {
        let camera = path_camera(&anim, f, frames, Some(turn));
        let exact = estimate(&accel, &camera, (w, h), anim.ao_distance, w * h).unwrap();
        if f == 0 {
            // A budget the true device meets with 24 AO rays and shadows here.
            target = truth.predict_ms(&exact.frame(Knobs::new(24, true)));
        }
        let coarse = estimate(&accel, &camera, (w, h), anim.ao_distance, 300).unwrap();
        let plan = c.plan(&coarse, target).unwrap();
        assert!(matches!(plan, Plan::Fits(_)), "frame {f}: {plan:?}");
        let choice = plan.choice();
        let measured = truth.predict_ms(&exact.frame(choice.knobs));
        c.observe(&choice, measured);
        if f == turn {
            after_turn = Some((measured, choice));
        }
    }
    let (measured, choice) = after_turn.unwrap();
    let err = (measured - target).abs() / target;
    assert!(
        err <= 0.05,
        "after the turn: {measured:.3} ms for {target:.3} ms ({choice:?})"
    );
}

/// The same turn on the real CPU backend (the crowd, 160 x 120, 24 frames,
/// the turn at frame 12): the frame after it within 5% of the target. Timed
/// by the CPU clock, but still only meaningful on a quiet machine: run with
/// `cargo test --release --test animate -- --ignored`.
#[test]
#[ignore = "timing: needs a quiet machine"]
fn a_180_degree_turn_on_the_cpu_backend() {
    let dir = temp_dir("turn");
    let out = dir.join("out");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_prism"));
    cmd.args([
        "animate",
        "--backend",
        "cpu",
        "--scene",
        "crowd",
        "--width",
        "160",
        "--height",
        "120",
        "--frames",
        "24",
        "--budget-ms",
        "40",
        "--turn-at",
        "12",
        "--clock",
        "cpu",
        "--out",
    ])
    .arg(&out)
    .env_remove("PRISM_BACKEND")
    .env("PRISM_CACHE_DIR", dir.join("cache"));
    let o = cmd.output().expect("running prism");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let tuned = rows(&out.join("frames.csv"), 256);
    let after = &tuned[12];
    let (target, measured): (f64, f64) = (after[1].parse().unwrap(), after[4].parse().unwrap());
    assert!(
        (measured - target).abs() <= 0.05 * target,
        "frame 12: {measured} ms for {target} ms"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A cached calibration whose check frame no longer fits it (here: its
/// stored ratio made ten times too large, as a model from another Prism or
/// device would be) is measured again, and one from another version of
/// Prism is not read at all.
#[test]
fn a_stale_cached_calibration_is_measured_again() {
    use prism::tune::{CHECK_TOLERANCE, CalibrationOptions, calibrate};
    let dir = temp_dir("stale-calibration");
    let mut backend = prism::open_with_env(prism::BackendChoice::Cpu, None)
        .unwrap()
        .backend;
    let mut options = CalibrationOptions::new(48, 36);
    options.cache_dir = Some(dir.clone());
    let first = calibrate(&mut *backend, &options).unwrap();
    assert!(!first.cached && first.replaced_stale.is_none());
    assert!(first.check_ratio.is_finite() && first.check_ratio > 0.0);
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("a cached calibration");
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        f(&mut v);
        std::fs::write(&file, v.to_string()).unwrap();
    };
    edit(&|v| v["check_ratio"] = (first.check_ratio * 10.0).into());
    let second = calibrate(&mut *backend, &options).unwrap();
    assert!(!second.cached);
    let moved = second.replaced_stale.expect("the stale entry was found");
    // Ten times the ratio: about 90% off, far past the tolerance.
    assert!(CHECK_TOLERANCE < 0.5 && moved > 0.5, "moved {moved}");
    edit(&|v| v["prism"] = "0.0.0-other".into());
    let third = calibrate(&mut *backend, &options).unwrap();
    assert!(!third.cached && third.replaced_stale.is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Calibration and the per-frame API through the `Backend` trait on every
/// backend that opens (the CPU always; wgpu and CUDA when present, required
/// by `PRISM_REQUIRE_WGPU=1` / `PRISM_REQUIRE_CUDA=1`): a model is fitted,
/// and four frames of the ogre's path are planned, rendered and recorded.
#[test]
fn frame_tuner_runs_on_every_backend() {
    use prism::tune::{CalibrationOptions, FrameTuner, calibrate};
    use prism::{BackendChoice, Image, NoProgress, PixelFormat, RenderSettings};
    let required = |k: &str| std::env::var(k).is_ok_and(|v| v == "1");
    let anim = by_name("ogre", &prism::conformance::default_scenes_dir()).unwrap();
    for (choice, env) in [
        (BackendChoice::Cpu, ""),
        (BackendChoice::Wgpu, "PRISM_REQUIRE_WGPU"),
        (BackendChoice::Cuda, "PRISM_REQUIRE_CUDA"),
    ] {
        let mut backend = match prism::open_with_env(choice, None) {
            Ok(o) => o.backend,
            Err(e) => {
                assert!(env.is_empty() || !required(env), "{env}=1 but: {e}");
                eprintln!("SKIPPED {choice:?}: {e}");
                continue;
            }
        };
        let name = backend.info().name;
        let mut options = CalibrationOptions::new(32, 24);
        options.cache_dir = None;
        let calibration = calibrate(&mut *backend, &options).unwrap();
        assert_eq!(calibration.backend, name);
        assert!(!calibration.cached);
        assert!(
            calibration
                .model
                .coefficients
                .iter()
                .all(|c| *c >= 0.0 && c.is_finite())
        );
        assert!(calibration.model.coefficients.iter().any(|c| *c > 0.0));
        backend.set_scene(&anim.scene).unwrap();
        let base = RenderSettings {
            ao_distance: anim.ao_distance,
            ..RenderSettings::default()
        };
        let mut tuner =
            FrameTuner::new(calibration, &anim.scene, base, Default::default()).unwrap();
        let mut image = Image::new(32, 24, PixelFormat::Srgba8).unwrap();
        for f in 0..4 {
            let camera = path_camera(&anim, f, 4, None);
            let plan = tuner.plan(&camera, 32, 24, 20.0).unwrap();
            plan.settings.validate().unwrap();
            assert!(
                plan.prepass_ms >= 0.0 && (plan.workload.primary.rays - 32.0 * 24.0).abs() < 1e-6
            );
            let stats = backend
                .render(&camera, &plan.settings, &mut image, &NoProgress)
                .unwrap();
            let ms = stats.total.as_secs_f64() * 1e3;
            assert!(ms > 0.0, "{name}: frame {f} took no time");
            tuner.record(&plan, ms);
        }
        assert!(tuner.correction().is_finite() && tuner.correction() > 0.0);
        // A pre-pass made beside a frame: estimating changes nothing, and a
        // plan from an estimate keeps its workload and cost.
        let camera = path_camera(&anim, 1, 4, None);
        let first = tuner.estimate(&camera, 32, 24, 20.0).unwrap();
        let again = tuner.estimate(&camera, 32, 24, 20.0).unwrap();
        assert_eq!(first.workload, again.workload);
        let plan = tuner.plan_estimated(&first, 20.0).unwrap();
        assert_eq!(
            (plan.workload, plan.prepass_ms),
            (first.workload, first.prepass_ms)
        );
        assert!(tuner.estimate(&camera, 32, 24, f64::NAN).is_err());
        for bad in [0.0, -1.0, 1.5, f64::NAN] {
            assert!(matches!(
                tuner.set_prepass_share(bad),
                Err(prism::Error::Setting {
                    field: "prepass_share",
                    ..
                })
            ));
        }
        tuner.set_prepass_share(0.5).unwrap();
    }
}
