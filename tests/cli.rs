//! The `prism` command line: bad arguments are refused with a clear error
//! before any work, `--threads` reaches the CPU backend however it is chosen,
//! and `bench --hits` fails on any disagreement.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Run `prism` with `args`, `PRISM_BACKEND` unset unless `env` sets it.
fn prism(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_prism"));
    cmd.args(args).env_remove("PRISM_BACKEND");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("running prism")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh directory under the system's temp dir.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("prism-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

fn arg(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temp path")
}

/// A tiny render's arguments, writing `out`.
fn tiny<'a>(out: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "render", "--scene", "cornell", "--width", "8", "--height", "8", "--spp", "1", "--out", out,
    ];
    v.extend_from_slice(more);
    v
}

#[test]
fn render_refuses_an_unwritable_out_before_rendering() {
    let dir = temp_dir("out");
    std::fs::create_dir(dir.join("a_dir.png")).expect("a directory named like an image");
    for (name, says) in [
        ("x.jpg", "cannot write .jpg"),
        ("x.PNG.txt", "cannot write .txt"),
        ("noext", "without extension"),
        ("missing/x.png", "does not exist"),
        ("a_dir.png", "is a directory"),
    ] {
        let out = dir.join(name);
        // The full default render: were it started, this test would take minutes.
        let o = prism(&["render", "--backend", "cpu", "--out", arg(&out)], &[]);
        let err = stderr(&o);
        assert!(!o.status.success(), "{name}: {err}");
        assert!(err.contains(says), "{name}: {err}");
        assert!(err.contains("--out"), "{name}: {err}");
        assert!(
            !err.contains("using"),
            "{name}: a backend was opened: {err}"
        );
        assert!(!out.exists() || out.is_dir(), "{name}");
    }
    // A place that cannot be created (Linux: /proc takes no new files).
    if cfg!(target_os = "linux") {
        let o = prism(
            &["render", "--backend", "cpu", "--out", "/proc/prism-x.png"],
            &[],
        );
        let err = stderr(&o);
        assert!(!o.status.success(), "{err}");
        assert!(
            err.contains("--out /proc/prism-x.png: cannot write it"),
            "{err}"
        );
        assert!(!err.contains("using"), "a backend was opened: {err}");
    }
    // The writability probe leaves no new file behind and an existing one as
    // it was, when the render is refused after it (--spp 0).
    let kept = dir.join("kept.png");
    std::fs::write(&kept, b"not yet an image").expect("a file to keep");
    for out in [dir.join("new.png"), kept.clone()] {
        let o = prism(&tiny(arg(&out), &["--backend", "cpu", "--spp", "0"]), &[]);
        assert!(!o.status.success(), "{}", stderr(&o));
    }
    assert!(!dir.join("new.png").exists());
    assert_eq!(std::fs::read(&kept).expect("kept"), b"not yet an image");
    // Either case of a known extension is accepted.
    for name in ["x.PNG", "x.Exr"] {
        let out = dir.join(name);
        let o = prism(&tiny(arg(&out), &["--backend", "cpu"]), &[]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert!(out.is_file(), "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn threads_apply_whenever_the_cpu_backend_opens() {
    let dir = temp_dir("threads");
    let out = dir.join("t.png");
    let out = arg(&out);
    // By name; through PRISM_BACKEND (which overrides --backend); with an empty
    // PRISM_BACKEND, which is no override.
    for (args, env) in [
        (vec!["--backend", "cpu", "--threads", "1"], vec![]),
        (
            vec!["--backend", "cuda", "--threads", "1"],
            vec![("PRISM_BACKEND", "cpu")],
        ),
        (
            vec!["--backend", "cpu", "--threads", "1"],
            vec![("PRISM_BACKEND", "")],
        ),
    ] {
        let o = prism(&tiny(out, &args), &env);
        let err = stderr(&o);
        assert!(o.status.success(), "{args:?} {env:?}: {err}");
        assert!(err.contains("cpu: using"), "{args:?} {env:?}: {err}");
        assert!(err.contains("(1 threads)"), "{args:?} {env:?}: {err}");
    }
    // 0 is every core the process may use, whatever RAYON_NUM_THREADS says.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let o = prism(
        &tiny(out, &["--backend", "cpu", "--threads", "0"]),
        &[("RAYON_NUM_THREADS", "1")],
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains(&format!("({cores} threads)")), "{err}");
    // Auto: the CPU backend where no GPU opens, else a warning that --threads
    // did not apply.
    let o = prism(&tiny(out, &["--threads", "1"]), &[]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    if err.contains("cpu: using") {
        assert!(err.contains("(1 threads)"), "{err}");
        assert!(!err.contains("warning"), "{err}");
    } else {
        assert!(err.contains("warning: --threads 1 ignored"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn info_names_the_override_only_when_there_is_one() {
    let says = |env: &[(&str, &str)]| {
        let o = prism(&["info"], env);
        assert!(o.status.success(), "{}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert!(!says(&[]).contains("PRISM_BACKEND"));
    assert!(!says(&[("PRISM_BACKEND", "")]).contains("PRISM_BACKEND"));
    assert!(says(&[("PRISM_BACKEND", "cpu")]).contains("PRISM_BACKEND=cpu overrides --backend"));
    // The CPU backend's buffers are bounded by the address space alone.
    let cpu = says(&[]);
    let cpu = cpu.lines().find(|l| l.trim_start().starts_with("cpu:"));
    assert!(
        cpu.is_some_and(|l| l.ends_with("(no buffer limit)")),
        "{cpu:?}"
    );
    let bad = says(&[("PRISM_BACKEND", "vulkan")]);
    assert!(bad.contains("PRISM_BACKEND=vulkan is invalid"), "{bad}");
    assert!(!bad.contains("overrides"), "{bad}");
}

#[test]
fn bench_runs_must_be_at_least_one() {
    let o = prism(&["bench", "--backend", "cpu", "--runs", "0"], &[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--runs"), "{err}");
}

fn write_rays(path: &Path, rays: &[[f32; 8]]) {
    let bytes: Vec<u8> = rays
        .iter()
        .flatten()
        .flat_map(|f| f.to_le_bytes())
        .collect();
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

fn write_hits(path: &Path, hits: &[(f32, u32)]) {
    let bytes: Vec<u8> = hits
        .iter()
        .flat_map(|(t, p)| t.to_le_bytes().into_iter().chain(p.to_le_bytes()))
        .collect();
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// `prism bench` on the CPU, one run, tracing `rays` against `mesh`, with `extra` arguments.
fn bench_rays(mesh: &Path, rays: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["bench", "--backend", "cpu", "--runs", "1"];
    args.extend(["--mesh", arg(mesh), "--rays", arg(rays)]);
    args.extend(extra);
    prism(&args, &[])
}

#[test]
fn bench_hits_fails_on_any_disagreement() {
    let dir = temp_dir("hits");
    let mesh = dir.join("tri.obj");
    std::fs::write(&mesh, "v -1 -1 0\nv 1 -1 0\nv 0 1 0\nf 1 2 3\n").expect("mesh");
    // Origin, tmin, direction, tmax: one ray hits the triangle at t = 1, one misses.
    let rays = dir.join("tri.rays");
    write_rays(
        &rays,
        &[
            [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, -1.0, 1e30],
            [5.0, 5.0, 1.0, 0.0, 0.0, 0.0, -1.0, 1e30],
        ],
    );
    let miss = (f32::INFINITY, u32::MAX);
    let bench = |hits: &Path| {
        let o = bench_rays(&mesh, &rays, &["--hits", arg(hits)]);
        (o.status.success(), stderr(&o))
    };

    let good = dir.join("good.hits");
    write_hits(&good, &[(1.0, 0), miss]);
    let (ok, err) = bench(&good);
    assert!(ok, "{err}");

    let short = dir.join("short.hits");
    write_hits(&short, &[(1.0, 0)]);
    let (ok, err) = bench(&short);
    assert!(!ok);
    assert!(
        err.contains("holds 1 reference hits") && err.contains("holds 2 rays"),
        "{err}"
    );
    assert!(
        err.contains("short.hits") && err.contains("tri.rays"),
        "{err}"
    );

    // The reference says the first ray misses: closest hit and occlusion disagree.
    let wrong = dir.join("wrong.hits");
    write_hits(&wrong, &[miss, miss]);
    let (ok, err) = bench(&wrong);
    assert!(!ok);
    assert!(err.contains("disagrees with"), "{err}");
    assert!(err.contains("occlusion on 1"), "{err}");
    assert!(!err.contains("render setting"), "{err}");

    // Render settings do not apply to a ray file: refused, not ignored.
    for extra in [["--spp", "4"], ["--width", "64"], ["--integrator", "ao"]] {
        let o = bench_rays(&mesh, &rays, &extra);
        assert!(!o.status.success(), "{extra:?}");
        assert!(
            stderr(&o).contains("apply to renders only"),
            "{extra:?}: {}",
            stderr(&o)
        );
    }
    // An empty ray file has nothing to time.
    let empty = dir.join("empty.rays");
    write_rays(&empty, &[]);
    let o = bench_rays(&mesh, &empty, &[]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("holds no rays"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

fn write_words(path: &Path, words: &[u32]) {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// `.instances` records: row-major 3x4 object-to-world matrices.
fn write_instances(path: &Path, translations: &[[f32; 3]]) {
    let words: Vec<u32> = translations
        .iter()
        .flat_map(|[x, y, z]| {
            [1.0, 0.0, 0.0, *x, 0.0, 1.0, 0.0, *y, 0.0, 0.0, 1.0, *z].map(f32::to_bits)
        })
        .collect();
    write_words(path, &words);
}

/// `.ihits` records: `(t, prim, instance)`.
fn write_ihits(path: &Path, hits: &[(f32, u32, u32)]) {
    let words: Vec<u32> = hits
        .iter()
        .flat_map(|&(t, p, i)| [t.to_bits(), p, i])
        .collect();
    write_words(path, &words);
}

#[test]
fn bench_instances_compares_primitive_and_instance() {
    let dir = temp_dir("instances");
    // A quad of two triangles in z = 0, placed three times along x.
    let mesh = dir.join("quad.obj");
    std::fs::write(
        &mesh,
        "v -1 -1 0\nv 1 -1 0\nv 1 1 0\nv -1 1 0\nf 1 2 3\nf 1 3 4\n",
    )
    .expect("mesh");
    let placements = dir.join("quad-x3.instances");
    write_instances(
        &placements,
        &[[0.0, 0.0, 0.0], [4.0, 0.0, -1.0], [8.0, 0.0, -2.0]],
    );
    // Down -z onto each placement's second triangle (x > y there), and a miss.
    let rays = dir.join("quad-x3.rays");
    write_rays(
        &rays,
        &[
            [-0.5, 0.5, 2.0, 0.0, 0.0, 0.0, -1.0, f32::INFINITY],
            [3.5, 0.5, 2.0, 0.0, 0.0, 0.0, -1.0, f32::INFINITY],
            [7.5, -0.5, 2.0, 0.0, 0.0, 0.0, -1.0, f32::INFINITY],
            [20.0, 0.0, 2.0, 0.0, 0.0, 0.0, -1.0, f32::INFINITY],
        ],
    );
    let miss = (f32::INFINITY, u32::MAX, u32::MAX);
    let bench = |hits: &Path| {
        let o = prism(
            &[
                "bench",
                "--backend",
                "cpu",
                "--threads",
                "1",
                "--runs",
                "1",
                "--mesh",
                arg(&mesh),
                "--instances",
                arg(&placements),
                "--rays",
                arg(&rays),
                "--hits",
                arg(hits),
            ],
            &[],
        );
        (
            o.status.success(),
            stderr(&o),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };

    let good = dir.join("good.ihits");
    write_ihits(&good, &[(2.0, 1, 0), (3.0, 1, 1), (4.0, 0, 2), miss]);
    let (ok, err, out) = bench(&good);
    assert!(ok, "{err}");
    assert!(out.contains("3 instances of 2 tris"), "{out}");
    assert!(
        out.contains("bottom level") && out.contains("top level"),
        "{out}"
    );
    assert!(
        out.contains("4 rays, 4 match, 0 ties, 0 mismatches"),
        "{out}"
    );

    // The same primitive at the same t on another instance: a tie, not a match.
    let other = dir.join("other-instance.ihits");
    write_ihits(&other, &[(2.0, 1, 0), (3.0, 1, 2), (4.0, 0, 2), miss]);
    let (ok, err, out) = bench(&other);
    assert!(ok, "{err}");
    assert!(out.contains("3 match, 1 ties, 0 mismatches"), "{out}");

    // Another t: a mismatch, and the exit status says so.
    let wrong = dir.join("wrong.ihits");
    write_ihits(&wrong, &[(2.0, 1, 0), (3.5, 1, 1), (4.0, 0, 2), miss]);
    let (ok, err, _) = bench(&wrong);
    assert!(!ok);
    assert!(
        err.contains("disagrees with") && err.contains("mismatches on 1 of 4"),
        "{err}"
    );

    // One record short: refused before any timing.
    let short = dir.join("short.ihits");
    write_ihits(&short, &[(2.0, 1, 0), (3.0, 1, 1), (4.0, 0, 2)]);
    let (ok, err, out) = bench(&short);
    assert!(!ok);
    assert!(
        err.contains("holds 3 reference hits") && err.contains("holds 4 rays"),
        "{err}"
    );
    assert!(out.is_empty(), "{out}");

    // A singular placement is refused, naming the instance.
    let flat = dir.join("flat.instances");
    write_words(
        &flat,
        &[
            1.0f32, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0,
        ]
        .map(f32::to_bits),
    );
    let o = prism(
        &[
            "bench",
            "--backend",
            "cpu",
            "--mesh",
            arg(&mesh),
            "--instances",
            arg(&flat),
            "--rays",
            arg(&rays),
        ],
        &[],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("instance 0: transform"),
        "{}",
        stderr(&o)
    );

    // --instances needs --rays, and render settings are refused.
    let o = prism(
        &[
            "bench",
            "--mesh",
            arg(&mesh),
            "--instances",
            arg(&placements),
        ],
        &[],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--rays"), "{}", stderr(&o));
    let (ok, err, _) = {
        let o = prism(
            &[
                "bench",
                "--backend",
                "cpu",
                "--mesh",
                arg(&mesh),
                "--instances",
                arg(&placements),
                "--rays",
                arg(&rays),
                "--spp",
                "2",
            ],
            &[],
        );
        (o.status.success(), stderr(&o), ())
    };
    assert!(!ok);
    assert!(err.contains("apply to renders only"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_moving_prints_update_and_trace_rows() {
    let o = prism(
        &[
            "bench",
            "--scene",
            "instances",
            "--backend",
            "cpu",
            "--threads",
            "1",
            "--moving",
            "64",
            "--frames",
            "2",
            "--width",
            "16",
            "--height",
            "9",
            "--spp",
            "1",
        ],
        &[],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.contains("64 of 4097 instances moving"), "{out}");
    assert!(out.contains("median of 2 frames"), "{out}");
    assert!(
        out.contains("| update (64 moved, top level rebuilt) |"),
        "{out}"
    );
    assert!(
        out.contains("| trace |") && out.contains("| frame |"),
        "{out}"
    );

    // A flat scene has no instances to move; --frames needs --moving.
    let o = prism(
        &[
            "bench",
            "--scene",
            "cornell",
            "--backend",
            "cpu",
            "--moving",
            "4",
        ],
        &[],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("two-level"), "{}", stderr(&o));
    let o = prism(&["bench", "--scene", "instances", "--frames", "3"], &[]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--moving"), "{}", stderr(&o));
    let o = prism(
        &[
            "bench",
            "--scene",
            "instances",
            "--moving",
            "4",
            "--frames",
            "0",
        ],
        &[],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--frames"), "{}", stderr(&o));
}

#[test]
fn render_instances_writes_an_image() {
    let dir = temp_dir("render-instances");
    let out = dir.join("instances.png");
    let o = prism(
        &[
            "render",
            "--scene",
            "instances",
            "--backend",
            "cpu",
            "--width",
            "32",
            "--height",
            "18",
            "--spp",
            "1",
            "--out",
            arg(&out),
        ],
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn settings_for_another_integrator_are_refused() {
    let dir = temp_dir("integrator");
    let out = dir.join("i.png");
    let out = arg(&out);
    // cornell renders with the path integrator unless told otherwise.
    for (more, says) in [
        (
            vec!["--ao-samples", "4"],
            "--ao-samples does not apply to the path integrator",
        ),
        (
            vec![
                "--integrator",
                "whitted",
                "--ao-distance",
                "1",
                "--ao-shadows",
            ],
            "--ao-distance, --ao-shadows do not apply to the whitted integrator",
        ),
        (
            vec!["--integrator", "ao", "--depth", "3"],
            "--depth does not apply to the ao integrator",
        ),
        (
            vec!["--ao-extra", "0.5"],
            "--ao-extra does not apply to the path integrator",
        ),
    ] {
        let mut args = vec!["--backend", "cpu"];
        args.extend(more);
        let o = prism(&tiny(out, &args), &[]);
        let err = stderr(&o);
        assert!(!o.status.success(), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(
            !err.contains("using"),
            "{args:?}: a backend was opened: {err}"
        );
    }
    // Names of scenes and integrators ignore ASCII case, as backend names do.
    let o = prism(
        &[
            "render",
            "--backend",
            "CPU",
            "--scene",
            "Cornell",
            "--integrator",
            "AO",
            "--ao-samples",
            "2",
            "--ao-extra",
            "0.25",
            "--width",
            "8",
            "--height",
            "8",
            "--spp",
            "1",
            "--out",
            out,
        ],
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // A share of the AO count outside [0, 1) is refused, named.
    for bad in ["1", "-0.5", "NaN"] {
        let flag = format!("--ao-extra={bad}");
        let args = ["--backend", "cpu", "--integrator", "ao", flag.as_str()];
        let o = prism(&tiny(out, &args), &[]);
        let err = stderr(&o);
        assert!(
            !o.status.success() && err.contains("ao_extra"),
            "{bad}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mesh_renders_refuse_a_scene_name_and_a_mesh_without_size() {
    let dir = temp_dir("mesh");
    let mesh = dir.join("point.obj");
    std::fs::write(&mesh, "v 1 1 1\nv 1 1 1\nv 1 1 1\nf 1 2 3\n").expect("mesh file");
    let out = dir.join("m.png");
    // --scene names a built-in scene, which a mesh replaces: refused by clap.
    let o = prism(
        &[
            "render",
            "--mesh",
            arg(&mesh),
            "--scene",
            "whitted19",
            "--out",
            arg(&out),
        ],
        &[],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--scene"), "{err}");
    // A mesh of one point: its camera and AO distance cannot follow from its size.
    let o = prism(
        &[
            "render",
            "--backend",
            "cpu",
            "--mesh",
            arg(&mesh),
            "--out",
            arg(&out),
        ],
        &[],
    );
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("bounding box's diagonal is 0"), "{err}");
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_overriding_prism_backend_is_named_in_errors() {
    let dir = temp_dir("override");
    let out = dir.join("o.png");
    let o = prism(
        &tiny(arg(&out), &["--backend", "cpu"]),
        &[("PRISM_BACKEND", "gpu")],
    );
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("PRISM_BACKEND=gpu (overriding --backend cpu): unknown backend 'gpu'"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn conformance_refuses_an_unwritable_report_and_a_backend_twice_before_running() {
    let dir = temp_dir("conformance");
    let file = dir.join("a_file");
    std::fs::write(&file, b"x").expect("a file");
    let o = prism(
        &[
            "conformance",
            "--quick",
            "--backends",
            "cpu",
            "--out",
            arg(&file),
        ],
        &[],
    );
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("cannot write the report there"), "{err}");
    assert!(!err.contains("  "), "the suite ran: {err}");
    let o = prism(
        &[
            "conformance",
            "--quick",
            "--backends",
            "cpu,CPU",
            "--out",
            arg(&dir.join("r")),
        ],
        &[],
    );
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("--backends lists CPU more than once"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `prism bench --build fast` (and `clustered`) traces the same rays on that
/// tree beside the SAH tree: both tables' rows, and the reference checked for
/// both (a wrong reference fails the run).
#[test]
fn bench_build_fast_reports_both_trees() {
    let dir = temp_dir("build-fast");
    let mesh = dir.join("quad.obj");
    std::fs::write(
        &mesh,
        "v -1 -1 0\nv 1 -1 0\nv 1 1 0\nv -1 1 0\nv -1 -1 -2\nv 1 -1 -2\nv 0 1 -2\nf 1 2 3\nf 1 3 4\nf 5 6 7\n",
    )
    .expect("mesh");
    let rays = dir.join("quad.rays");
    write_rays(
        &rays,
        &[
            [0.5, -0.5, 1.0, 0.0, 0.0, 0.0, -1.0, 1e30],
            [0.0, -0.5, 1.0, 0.0, 0.0, 0.0, -1.0, 1e30],
            [5.0, 5.0, 1.0, 0.0, 0.0, 0.0, -1.0, 1e30],
        ],
    );
    let miss = (f32::INFINITY, u32::MAX);
    let good = dir.join("good.hits");
    write_hits(&good, &[(1.0, 0), (1.0, 0), miss]);
    let wrong = dir.join("wrong.hits");
    write_hits(&wrong, &[miss, (1.0, 0), miss]);
    for tree in ["fast", "clustered"] {
        let o = bench_rays(&mesh, &rays, &["--hits", arg(&good), "--build", tree]);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{}", stderr(&o));
        for row in [
            "| SAH (host) |".to_string(),
            format!("| {tree} |"),
            format!("| {tree} / SAH |"),
        ] {
            assert!(out.contains(&row), "no {row} row in:\n{out}");
        }
        assert_eq!(out.matches("0 mismatches").count(), 2, "{out}");
        let o = bench_rays(&mesh, &rays, &["--hits", arg(&wrong), "--build", tree]);
        assert!(!o.status.success());
    }
}
