//! The CPU backend's build of one mesh (`set_scene`: core's SAH tree, its
//! records and the 8-wide collapse), timed as Embree's `time` times its own:
//! the first build in a fresh process, with the page faults it took (Linux),
//! and then the fastest of the further builds, whose memory the allocator
//! mostly hands back from the builds before.
//!
//! Usage: build_bench MESH.obj [BUILDS] [THREADS] (BUILDS: 12, THREADS: 1)

use prism_core::Backend;
use prism_cpu::CpuBackend;
use std::process::ExitCode;
use std::time::Instant;

mod common;
use common::{flat_mesh_scene, load_obj};

const USAGE: &str = "usage: build_bench MESH.obj [BUILDS] [THREADS]";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mesh = args.first().ok_or(USAGE)?;
    let number = |i: usize, default: usize| -> Result<usize, String> {
        args.get(i).map_or(Ok(default), |a| {
            a.parse().map_err(|_| format!("not a number: {a}\n{USAGE}"))
        })
    };
    let (builds, threads) = (number(1, 12)?.max(1), number(2, 1)?);
    let (positions, triangles) = load_obj(mesh)?;
    let scene = flat_mesh_scene(&positions, &triangles)?;
    let mut cpu = CpuBackend::with_threads(threads).map_err(|e| e.to_string())?;
    let mut times = Vec::with_capacity(builds);
    let mut first_faults = None;
    for _ in 0..builds {
        let faults = page_faults();
        let t0 = Instant::now();
        cpu.set_scene(&scene).map_err(|e| e.to_string())?;
        times.push(t0.elapsed().as_secs_f64() * 1e3);
        if first_faults.is_none() {
            first_faults = Some(faults.zip(page_faults()).map(|(a, b)| b - a));
        }
    }
    let faults = first_faults
        .flatten()
        .map_or("-".to_string(), |f| f.to_string());
    let rest = match times.iter().skip(1).cloned().reduce(f64::min) {
        Some(best) => format!(", best of the next {}: {best:.2} ms", builds - 1),
        None => String::new(),
    };
    println!(
        "{mesh}: {} triangles, {threads} thread(s): first build {:.2} ms ({faults} page faults){rest}",
        triangles.len(),
        times[0],
    );
    Ok(())
}

/// This process's minor page faults so far (Linux; `None` elsewhere).
fn page_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name (which may hold spaces) close with ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    fields.get(7)?.parse().ok()
}
