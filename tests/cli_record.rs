//! `prism render --record DIR` and `prism bench --scene NAME --rays FILE
//! [--hits FILE]`: every built-in scene's recorded bounces replay on the CPU
//! to their recorded hits; bad directories, files and flags are refused with
//! an error that names them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Run `prism` with `args`, `PRISM_BACKEND` unset.
fn prism(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prism"))
        .args(args)
        .env_remove("PRISM_BACKEND")
        .output()
        .expect("running prism")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A fresh directory under the system's temp dir.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("prism-cli-rec-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

fn arg(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temp path")
}

/// Record a 6x6, 1 spp, depth 4 path-traced frame of `scene` into `rec`.
fn record(scene: &str, out: &Path, rec: &Path) -> Output {
    prism(&[
        "render",
        "--scene",
        scene,
        "--backend",
        "cpu",
        "--width",
        "6",
        "--height",
        "6",
        "--spp",
        "1",
        "--depth",
        "4",
        "--integrator",
        "path",
        "--out",
        arg(out),
        "--record",
        arg(rec),
    ])
}

/// Replay `rays` on `scene` on the CPU, checking `hits` when given.
fn bench(scene: &str, rays: &Path, hits: Option<&Path>) -> Output {
    let mut args = vec![
        "bench",
        "--scene",
        scene,
        "--backend",
        "cpu",
        "--runs",
        "1",
        "--rays",
        arg(rays),
    ];
    if let Some(h) = hits {
        args.extend(["--hits", arg(h)]);
    }
    prism(&args)
}

#[test]
fn every_built_in_scene_records_and_replays_on_the_cpu() {
    for scene in ["rtiow", "whitted19", "cornell", "instances"] {
        let dir = temp_dir(scene);
        let rec = dir.join("rec");
        let o = record(scene, &dir.join("f.png"), &rec);
        assert!(o.status.success(), "{scene}: {}", text(&o.stderr));
        let out = text(&o.stdout);
        assert!(out.contains("bounce0: 36 rays"), "{scene}: {out}");
        let ext = if scene == "instances" {
            "ihits"
        } else {
            "hits"
        };
        for k in 0..2 {
            let rays = rec.join(format!("bounce{k}.rays"));
            let hits = rec.join(format!("bounce{k}.{ext}"));
            assert!(hits.exists(), "{scene}: {out}");
            let o = bench(scene, &rays, Some(&hits));
            let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
            assert!(o.status.success(), "{scene} bounce {k}: {stdout}{stderr}");
            assert!(stdout.contains("Mrays/s"), "{stdout}");
            assert!(
                stdout.contains(" 0 mismatches"),
                "{scene} bounce {k}: {stdout}"
            );
            // Without hits: timed only.
            let o = bench(scene, &rays, None);
            assert!(o.status.success(), "{}", text(&o.stderr));
            assert!(!text(&o.stdout).contains("agreement"));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_replay_that_disagrees_fails() {
    let dir = temp_dir("disagree");
    let rec = dir.join("rec");
    assert!(record("cornell", &dir.join("f.png"), &rec).status.success());
    let hits_path = rec.join("bounce0.hits");
    let mut hits = std::fs::read(&hits_path).expect("hits");
    // The first recorded hit made a miss (another primitive at the same `t`
    // would be a tie, which is reported, not failed).
    let first_hit = hits
        .chunks_exact(8)
        .position(|h| u32::from_le_bytes([h[4], h[5], h[6], h[7]]) != u32::MAX)
        .expect("a hit in the camera rays");
    hits[8 * first_hit..8 * first_hit + 4].copy_from_slice(&f32::INFINITY.to_le_bytes());
    hits[8 * first_hit + 4..8 * first_hit + 8].copy_from_slice(&u32::MAX.to_le_bytes());
    let bad = dir.join("bad.hits");
    std::fs::write(&bad, &hits).expect("bad hits");
    let o = bench("cornell", &rec.join("bounce0.rays"), Some(&bad));
    let err = text(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("disagrees") && err.contains("bad.hits"),
        "{err}"
    );
    assert!(
        text(&o.stdout).contains(" 1 mismatches"),
        "{}",
        text(&o.stdout)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_record_directories_and_flags_are_refused_before_rendering() {
    let dir = temp_dir("bad-record");
    let file = dir.join("a_file");
    std::fs::write(&file, "x").expect("a file");
    let out = dir.join("f.png");
    let o = record("cornell", &out, &file);
    let err = text(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains(arg(&file)) && err.contains("not a directory"),
        "{err}"
    );
    assert!(!err.contains("using"), "a backend was opened: {err}");
    assert!(!out.exists());
    // Another integrator.
    let o = prism(&[
        "render",
        "--scene",
        "cornell",
        "--backend",
        "cpu",
        "--width",
        "4",
        "--height",
        "4",
        "--integrator",
        "ao",
        "--out",
        arg(&out),
        "--record",
        arg(&dir.join("rec")),
    ]);
    let err = text(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("--record") && err.contains("--integrator path"),
        "{err}"
    );
    assert!(!err.contains("using"), "a backend was opened: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_ray_and_hit_files_are_refused() {
    let dir = temp_dir("bad-files");
    let rec = dir.join("rec");
    assert!(record("cornell", &dir.join("f.png"), &rec).status.success());
    let rays = rec.join("bounce0.rays");
    let hits = rec.join("bounce0.hits");
    let fails_saying = |o: Output, says: &[&str]| {
        let err = text(&o.stderr);
        assert!(!o.status.success(), "{err}");
        for s in says {
            assert!(err.contains(s), "{s}: {err}");
        }
    };
    let missing = dir.join("missing.rays");
    fails_saying(bench("cornell", &missing, None), &[arg(&missing)]);
    let partial = dir.join("partial.rays");
    std::fs::write(&partial, [0u8; 33]).expect("partial");
    fails_saying(
        bench("cornell", &partial, None),
        &[arg(&partial), "32-byte"],
    );
    let empty = dir.join("empty.rays");
    std::fs::write(&empty, []).expect("empty");
    fails_saying(bench("cornell", &empty, None), &[arg(&empty), "no rays"]);
    // Hits of fewer rays, of the wrong kind, cut inside a record.
    let fewer = dir.join("fewer.hits");
    std::fs::write(&fewer, &std::fs::read(&hits).expect("hits")[..80]).expect("fewer");
    fails_saying(
        bench("cornell", &rays, Some(&fewer)),
        &["fewer.hits", "10 reference hits", "36 rays", "same ray set"],
    );
    let ihits = dir.join("x.ihits");
    std::fs::copy(&hits, &ihits).expect("copy");
    fails_saying(bench("cornell", &rays, Some(&ihits)), &["flat", ".hits"]);
    fails_saying(
        bench("instances", &rays, Some(&hits)),
        &["two-level", ".ihits"],
    );
    let cut = dir.join("cut.hits");
    std::fs::write(&cut, &std::fs::read(&hits).expect("hits")[..12]).expect("cut");
    fails_saying(bench("cornell", &rays, Some(&cut)), &[arg(&cut), "8-byte"]);
    // Neither a mesh nor a scene; render settings on a ray file.
    fails_saying(
        prism(&["bench", "--backend", "cpu", "--rays", arg(&rays)]),
        &["--rays needs --mesh", "--scene"],
    );
    fails_saying(
        prism(&[
            "bench",
            "--scene",
            "cornell",
            "--spp",
            "2",
            "--rays",
            arg(&rays),
        ]),
        &["--rays traces the ray file as it is"],
    );
    fails_saying(
        prism(&["bench", "--scene", "nowhere", "--rays", arg(&rays)]),
        &["nowhere"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}
