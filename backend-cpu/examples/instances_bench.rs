//! The CPU backend on an instanced scene, as Embree's `inst-time` measures it
//! (`shared/tools/embree-bench`): one mesh placed by every transform of an
//! instance file, closest hit and occlusion of a ray file, Mrays/s (median of
//! the runs), and the hits checked against Embree's `.ihits` reference (same
//! primitive and instance, `t` within 1e-4 relative; a different primitive or
//! instance at such a `t` is a tie, counted apart).
//!
//! Usage: instances_bench [--core] MESH.obj INSTANCES RAYS IHITS [RUNS] [THREADS]
//! (RUNS: 7; THREADS: 1, 0 = every core; `--core`: also count the answers
//! that differ from core's own walk, `Accel::intersect` and `occluded`)
//!
//! It then moves every instance a little, frame after frame, through
//! `update_scene`, and prints the median time of a frame.
//!
//! Mrays/s are medians over wall time, as Embree's are; `cpu_*` are over the
//! process's CPU time, which the other work of a shared machine disturbs less
//! (with one thread, the two agree on an idle machine), and `best_cpu_*` the
//! fastest run's.
//!
//! Instance file: 12 `f32` per instance, the object-to-world transform as a
//! row-major 3x4 matrix. Ray file: 8 `f32` per ray (`ox oy oz tmin dx dy dz
//! tmax`). `.ihits`: per ray `t: f32, prim: u32, instance: u32`.

use glam::Vec3;
use prism_core::instance::from_rows;
use prism_core::reference::{t_close, t_floor};
use prism_core::{Backend, Geometry, Hit, Instance, Material, Ray, Scene, SceneUpdate};
use prism_cpu::CpuBackend;
use std::process::ExitCode;

mod common;
use common::{cpu_seconds, load_obj, words};
use std::time::Instant;

const USAGE: &str =
    "usage: instances_bench [--core] MESH.obj INSTANCES RAYS IHITS [RUNS] [THREADS]";

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let core = args.first().is_some_and(|a| a == "--core");
    if core {
        args.remove(0);
    }
    let number = |i: usize, default: usize| -> Result<usize, String> {
        args.get(i).map_or(Ok(default), |a| {
            a.parse().map_err(|_| format!("not a number: {a}"))
        })
    };
    let run = || -> Result<(), String> {
        let [mesh, instances, rays, ihits] = args.get(..4).ok_or(USAGE)? else {
            return Err(USAGE.into());
        };
        let runs = number(4, 7)?.max(1);
        let threads = number(5, 1)?;
        bench(mesh, instances, rays, ihits, runs, threads, core)
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
    instances: &str,
    rays: &str,
    ihits: &str,
    runs: usize,
    threads: usize,
    core: bool,
) -> Result<(), String> {
    let (positions, triangles) = load_obj(mesh)?;
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::ONE));
    let geometry = Geometry::mesh(&positions, &triangles, m).map_err(|e| e.to_string())?;
    let g = scene.add_geometry(geometry);
    for r in words(instances)?.chunks_exact(12) {
        let f = |k: usize| f32::from_bits(r[k]);
        let rows = [0, 1, 2].map(|i| [f(4 * i), f(4 * i + 1), f(4 * i + 2), f(4 * i + 3)]);
        scene.add_instance(Instance::new(g, from_rows(rows)));
    }
    let rays: Vec<Ray> = words(rays)?
        .chunks_exact(8)
        .map(|r| Ray::from_record(std::array::from_fn(|k| f32::from_bits(r[k]))))
        .collect();
    let reference: Vec<(f32, u32, u32)> = words(ihits)?
        .chunks_exact(3)
        .map(|h| (f32::from_bits(h[0]), h[1], h[2]))
        .collect();
    let mut cpu = CpuBackend::with_threads(threads).map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    cpu.set_scene(&scene).map_err(|e| e.to_string())?;
    let build_ms = t0.elapsed().as_secs_f64() * 1e3;

    let mut hits = vec![Hit::MISS; rays.len()];
    let mut occluded = vec![false; rays.len()];
    // Mrays/s over wall time and over CPU time, closest and occluded.
    let mut rates: [Vec<f64>; 4] = Default::default();
    let n = rays.len() as f64;
    // One untimed round first (caches, page faults).
    for run in 0..=runs {
        let c0 = cpu_seconds();
        let c = cpu.intersect(&rays, &mut hits).map_err(|e| e.to_string())?;
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
    // The fastest run over CPU time: the least disturbed by other work.
    let [bc, bo] = [&rates[2], &rates[3]].map(|v| v[v.len() - 1]);

    let (mut matches, mut ties, mut mismatches, mut occ_wrong) = (0, 0, 0, 0);
    let mut first = None;
    for (i, ray) in rays.iter().enumerate() {
        let Some(&(t, prim, instance)) = reference.get(i) else {
            mismatches += 1;
            continue;
        };
        let h = hits[i];
        let ok = match (h.is_hit(), prim != Hit::NO_PRIM) {
            (false, false) => Some(true),
            (true, true) if t_close(h.t, t, t_floor(ray)) => {
                Some((h.prim, h.instance) == (prim, instance))
            }
            _ => None,
        };
        match ok {
            Some(true) => matches += 1,
            Some(false) => ties += 1,
            None => {
                mismatches += 1;
                first.get_or_insert((i, h, (t, prim, instance)));
            }
        }
        occ_wrong += usize::from(occluded[i] != h.is_hit());
    }
    println!(
        "prism-cpu instances {mesh} {} threads={} instances={} rays={} build_ms={build_ms:.1} \
         closest_mrays={c:.2} occluded_mrays={o:.2} cpu_closest_mrays={cc:.2} \
         cpu_occluded_mrays={co:.2} best_cpu_closest_mrays={bc:.2} \
         best_cpu_occluded_mrays={bo:.2} matches={matches} ties={ties} mismatches={mismatches} \
         occlusion_disagrees={occ_wrong}",
        rays_name(ihits),
        cpu.threads(),
        scene.instances().len(),
        rays.len(),
    );
    if let Some((i, h, r)) = first {
        println!(
            "first mismatch: ray {i} {:?}: {h:?}, reference {r:?}",
            rays[i]
        );
    }
    // Every instance moved a little, through `update_scene` (core's update,
    // its tree over the instances rebuilt, and the backend's collapse of it),
    // then back (the last frame puts the scene back as it was): median of
    // the frames.
    let transforms: Vec<_> = scene.instances().iter().map(|i| i.transform).collect();
    let shift = glam::Affine3A::from_translation(Vec3::splat(1e-3));
    let mut frames = Vec::new();
    for frame in 0..2 * runs.max(4) {
        let mut update = SceneUpdate::new();
        for (i, t) in transforms.iter().enumerate() {
            let moved = if frame % 2 == 0 { shift * *t } else { *t };
            update.set_transform(i as u32, moved);
        }
        let t0 = Instant::now();
        cpu.update_scene(&update).map_err(|e| e.to_string())?;
        frames.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    frames.sort_by(f64::total_cmp);
    println!(
        "move every instance: update_scene_ms={:.3}",
        frames[frames.len() / 2]
    );
    if core {
        let accel = cpu.accel().ok_or("no scene")?;
        let differ = rays
            .iter()
            .zip(hits.iter().zip(&occluded))
            .filter(|(ray, (h, o))| {
                let want = accel.intersect(ray);
                let same_hit = want.t.to_bits() == h.t.to_bits()
                    && (want.prim, want.instance) == (h.prim, h.instance);
                !same_hit || accel.occluded(ray) != **o
            })
            .count();
        println!(
            "answers that differ from core's walk: {differ} of {}",
            rays.len()
        );
    }
    Ok(())
}

/// The file name of a path, for the report line.
fn rays_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
