//! The CPU backend on one mesh as a flat scene, as Embree's `time` measures it
//! (`shared/tools/embree-bench`): closest hit and occlusion of a ray file,
//! Mrays/s (median of the runs, over wall time as Embree's; and over the
//! process's CPU time, with the fastest run's), every traversal or one, and
//! the hits checked against Embree's `.hits` reference (same primitive, `t`
//! within 1e-4 relative; a different primitive at such a `t` is a tie).
//!
//! Usage: mesh_bench MESH.obj RAYS HITS [RUNS] [THREADS] [wide|wide4|binary]
//! (RUNS: 7; THREADS: 1, 0 = every core; every traversal when none is named)

use prism_core::reference::{t_close, t_floor};
use prism_core::{Backend, Hit, Ray};
use prism_cpu::{CpuBackend, Traversal};
use std::process::ExitCode;

mod common;
use common::{cpu_seconds, flat_mesh_scene, load_obj, words};

const USAGE: &str = "usage: mesh_bench MESH.obj RAYS HITS [RUNS] [THREADS] [wide|wide4|binary]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let run = || -> Result<(), String> {
        let [mesh, rays, hits] = args.get(..3).ok_or(USAGE)? else {
            return Err(USAGE.into());
        };
        let number = |i: usize, default: usize| -> Result<usize, String> {
            args.get(i).map_or(Ok(default), |a| {
                a.parse().map_err(|_| format!("not a number: {a}"))
            })
        };
        let traversals: Vec<Traversal> = match args.get(5).map(String::as_str) {
            None => vec![Traversal::Wide, Traversal::Wide4, Traversal::Binary],
            Some("wide") => vec![Traversal::Wide],
            Some("wide4") => vec![Traversal::Wide4],
            Some("binary") => vec![Traversal::Binary],
            Some(other) => return Err(format!("unknown traversal {other}\n{USAGE}")),
        };
        bench(
            mesh,
            rays,
            hits,
            number(3, 7)?.max(1),
            number(4, 1)?,
            &traversals,
        )
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn bench(
    mesh: &str,
    rays: &str,
    hits: &str,
    runs: usize,
    threads: usize,
    traversals: &[Traversal],
) -> Result<(), String> {
    let (positions, triangles) = load_obj(mesh)?;
    let scene = flat_mesh_scene(&positions, &triangles)?;
    let rays: Vec<Ray> = words(rays)?
        .chunks_exact(8)
        .map(|r| Ray::from_record(std::array::from_fn(|k| f32::from_bits(r[k]))))
        .collect();
    let reference: Vec<(f32, u32)> = words(hits)?
        .chunks_exact(2)
        .map(|h| (f32::from_bits(h[0]), h[1]))
        .collect();
    let mut cpu = CpuBackend::with_threads(threads).map_err(|e| e.to_string())?;
    cpu.set_scene(&scene).map_err(|e| e.to_string())?;
    let n = rays.len() as f64;
    for &traversal in traversals {
        cpu.set_traversal(traversal).map_err(|e| e.to_string())?;
        let mut found = vec![Hit::MISS; rays.len()];
        let mut occluded = vec![false; rays.len()];
        let mut rates: [Vec<f64>; 4] = Default::default();
        for run in 0..=runs {
            let c0 = cpu_seconds();
            let c = cpu
                .intersect(&rays, &mut found)
                .map_err(|e| e.to_string())?;
            let c1 = cpu_seconds();
            let o = cpu
                .occluded(&rays, &mut occluded)
                .map_err(|e| e.to_string())?;
            let c2 = cpu_seconds();
            if run > 0 {
                rates[0].push(n / c.trace.as_secs_f64() / 1e6);
                rates[1].push(n / o.trace.as_secs_f64() / 1e6);
                rates[2].push(n / (c1 - c0) / 1e6);
                rates[3].push(n / (c2 - c1) / 1e6);
            }
        }
        for v in &mut rates {
            v.sort_by(f64::total_cmp);
        }
        let [c, o, cc, co] = rates.each_ref().map(|v| v[v.len() / 2]);
        let [bc, bo] = [&rates[2], &rates[3]].map(|v| v[v.len() - 1]);
        let (mut matches, mut ties, mut mismatches) = (0, 0, 0);
        for (i, ray) in rays.iter().enumerate() {
            let h = found[i];
            match reference.get(i) {
                Some(&(t, prim)) => match (h.is_hit(), prim != Hit::NO_PRIM) {
                    (false, false) => matches += 1,
                    (true, true) if t_close(h.t, t, t_floor(ray)) => {
                        if h.prim == prim {
                            matches += 1;
                        } else {
                            ties += 1;
                        }
                    }
                    _ => mismatches += 1,
                },
                None => mismatches += 1,
            }
        }
        println!(
            "prism-cpu {traversal:?} {mesh} threads={} rays={} closest_mrays={c:.2} \
             occluded_mrays={o:.2} cpu_closest_mrays={cc:.2} cpu_occluded_mrays={co:.2} \
             best_cpu_closest_mrays={bc:.2} best_cpu_occluded_mrays={bo:.2} matches={matches} \
             ties={ties} mismatches={mismatches}",
            cpu.threads(),
            rays.len(),
        );
    }
    Ok(())
}
