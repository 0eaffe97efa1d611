//! The CPU backend on the shared city height map (512 x 512 unit columns,
//! `shared/scenes/heightfield/city512.png`): closest hit and occlusion of the
//! city camera's 250,000 primary rays ((500, 500, 500) looking at (256, 0,
//! 256), up +y, vfov 20, 500 x 500, through each pixel's centre), the
//! heightfield's walk against the same columns as triangles, Mrays/s (median
//! of the runs, over wall time and over the process's CPU time), and the two
//! answers compared (`t` within 1e-4 relative, the same cell and face; a tie
//! where another face lies at that `t`; a graze where one answer meets its
//! face within rounding of the face's edge and the other misses that face).
//!
//! A scene of one heightfield has its batches walked many rays at once in
//! SIMD lanes; the same scene walked one ray at a time (core's walk at the
//! tree's leaf, `CpuBackend::set_heightfield_lanes(false)`) is timed too.
//!
//! The triangle version is fair to triangles: only the faces that can be seen
//! from the camera, each side trimmed to its part above a lower neighbour and
//! left out against a neighbour at least as tall
//! ([`prism_core::heightfield::FaceSet::Visible`]), and no bottoms (they face
//! the ground, below a camera that is above every column).
//!
//! Usage: heightfield_bench [CITY.png|-] [RUNS] [THREADS] [wide|wide4|binary]
//! (default, or `-`: the shared city; RUNS 7, THREADS 1, the wide traversal)

use glam::Vec3;
use prism_core::camera::camera_ray;
use prism_core::heightfield::{FaceSet, Heightfield};
use prism_core::reference::{t_close, t_floor};
use prism_core::{Backend, Camera, Hit, Material, Ray, Scene};
use prism_cpu::{CpuBackend, Traversal};
use std::process::ExitCode;
use std::time::Instant;

mod common;
use common::cpu_seconds;

const USAGE: &str = "usage: heightfield_bench [CITY.png] [RUNS] [THREADS] [wide|wide4|binary]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let run = || -> Result<(), String> {
        let path = args
            .first()
            .filter(|a| *a != "-")
            .cloned()
            .unwrap_or_else(|| {
                format!(
                    "{}/../../shared/scenes/heightfield/city512.png",
                    env!("CARGO_MANIFEST_DIR")
                )
            });
        let number = |i: usize, default: usize| -> Result<usize, String> {
            args.get(i).map_or(Ok(default), |a| {
                a.parse().map_err(|_| format!("not a number: {a}\n{USAGE}"))
            })
        };
        let traversal = match args.get(3).map(String::as_str) {
            None | Some("wide") => Traversal::Wide,
            Some("wide4") => Traversal::Wide4,
            Some("binary") => Traversal::Binary,
            Some(other) => return Err(format!("unknown traversal {other}\n{USAGE}")),
        };
        bench(&path, number(1, 7)?.max(1), number(2, 1)?, traversal)
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The city's height map: grey `(77 r + 150 g + 29 b) >> 8`, unit voxels.
fn city(path: &str) -> Result<Heightfield, String> {
    let img = image::open(path)
        .map_err(|e| format!("{path}: {e}"))?
        .to_rgba8();
    let (w, d) = img.dimensions();
    let grey: Vec<u8> = img
        .pixels()
        .map(|p| ((77 * p[0] as u32 + 150 * p[1] as u32 + 29 * p[2] as u32) >> 8) as u8)
        .collect();
    Heightfield::from_u8(w, d, 1.0, &grey, 1.0).map_err(|e| e.to_string())
}

/// Median, and the rates of each run.
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

struct Timed {
    name: &'static str,
    build_ms: f64,
    closest: Vec<f64>,
    occluded: Vec<f64>,
    cpu_closest: Vec<f64>,
    hits: Vec<Hit>,
}

fn time(
    name: &'static str,
    scene: &Scene,
    rays: &[Ray],
    (runs, threads): (usize, usize),
    traversal: Traversal,
    lanes: bool,
) -> Result<Timed, String> {
    let mut cpu = CpuBackend::with_threads(threads).map_err(|e| e.to_string())?;
    cpu.set_traversal(traversal).map_err(|e| e.to_string())?;
    cpu.set_heightfield_lanes(lanes);
    let start = Instant::now();
    cpu.set_scene(scene).map_err(|e| e.to_string())?;
    let build_ms = start.elapsed().as_secs_f64() * 1e3;
    let n = rays.len() as f64;
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut occluded = vec![false; rays.len()];
    let mut t = Timed {
        name,
        build_ms,
        closest: Vec::new(),
        occluded: Vec::new(),
        cpu_closest: Vec::new(),
        hits: Vec::new(),
    };
    // One run to warm the caches, then `runs` timed ones.
    for run in 0..=runs {
        let c0 = cpu_seconds();
        let c = cpu.intersect(rays, &mut hits).map_err(|e| e.to_string())?;
        let c1 = cpu_seconds();
        let o = cpu
            .occluded(rays, &mut occluded)
            .map_err(|e| e.to_string())?;
        if run > 0 {
            t.closest.push(n / c.trace.as_secs_f64() / 1e6);
            t.occluded.push(n / o.trace.as_secs_f64() / 1e6);
            t.cpu_closest.push(n / (c1 - c0) / 1e6);
        }
    }
    if hits.iter().zip(&occluded).any(|(h, &o)| h.is_hit() != o) {
        return Err(format!("{name}: occluded disagrees with intersect"));
    }
    t.hits = hits;
    Ok(t)
}

fn bench(path: &str, runs: usize, threads: usize, traversal: Traversal) -> Result<(), String> {
    let hf = city(path)?;
    let cam = Camera::look_at(
        Vec3::splat(500.0),
        Vec3::new(256.0, 0.0, 256.0),
        Vec3::Y,
        20.0,
    )
    .frame(500, 500)
    .map_err(|e| e.to_string())?;
    let rays: Vec<Ray> = (0..500u32 * 500)
        .map(|i| {
            let (x, y) = (i % 500, i / 500);
            camera_ray(
                &cam,
                (x as f32 + 0.5) / 500.0,
                1.0 - (y as f32 + 0.5) / 500.0,
                0.5,
                0.5,
            )
        })
        .collect();

    // The heightfield: one primitive.
    let mut walk_scene = Scene::new();
    let m = walk_scene.add_material(Material::lambertian(Vec3::splat(0.7)));
    walk_scene.add_heightfield(hf.clone(), m);

    // The same columns as triangles: the visible faces, no bottoms.
    let mesh = hf.column_mesh(FaceSet::Visible, false);
    let mut tri_scene = Scene::new();
    let m = tri_scene.add_material(Material::lambertian(Vec3::splat(0.7)));
    tri_scene
        .add_mesh(&mesh.positions, &mesh.triangles, m)
        .map_err(|e| e.to_string())?;

    let walk = time(
        "heightfield",
        &walk_scene,
        &rays,
        (runs, threads),
        traversal,
        true,
    )?;
    let one = time(
        "heightfield_one_at_a_time",
        &walk_scene,
        &rays,
        (runs, threads),
        traversal,
        false,
    )?;
    let tris = time(
        "triangles",
        &tri_scene,
        &rays,
        (runs, threads),
        traversal,
        true,
    )?;
    if one
        .hits
        .iter()
        .zip(&walk.hits)
        .any(|(a, b)| (a.t, a.prim, a.cell, a.face) != (b.t, b.prim, b.cell, b.face))
    {
        return Err("the lanes and the one-at-a-time walk disagree".into());
    }

    // The two answers: the same t, cell and face (a triangle's quad is its
    // id / 2); a tie where the faces differ at that t; a graze where one
    // answer is nearer by meeting its face within rounding of the face's
    // edge, which the other missed (a ray past a column's edge by an ulp).
    let on_edge = |cell: u32, face: u32, p: Vec3| {
        let (x, z) = (cell % hf.width(), cell / hf.width());
        let Some(b) = hf.column_box(x, z) else {
            return false;
        };
        let n = prism_core::face_normal(face);
        let k = if n.x != 0.0 {
            0
        } else if n.y != 0.0 {
            1
        } else {
            2
        };
        let plane = if n[k] > 0.0 { b.max[k] } else { b.min[k] };
        let inside = (0..3)
            .filter(|&j| j != k)
            .map(|j| (p[j] - b.min[j]).min(b.max[j] - p[j]))
            .fold(f32::INFINITY, f32::min);
        let tol = 1e-5 * (1.0 + p.abs().max_element());
        (p[k] - plane).abs() <= tol && inside.abs() <= tol
    };
    let (mut matches, mut ties, mut grazes, mut mismatches, mut hit_count) = (0, 0, 0, 0, 0);
    for (i, ray) in rays.iter().enumerate() {
        let (a, b) = (walk.hits[i], tris.hits[i]);
        hit_count += a.is_hit() as usize;
        match (a.is_hit(), b.is_hit()) {
            (false, false) => matches += 1,
            (true, true) if t_close(a.t, b.t, t_floor(ray)) => {
                if (a.cell, a.face) == mesh.names[b.prim as usize] {
                    matches += 1;
                } else {
                    ties += 1;
                }
            }
            _ if {
                let walk_nearer = a.is_hit() && (!b.is_hit() || a.t < b.t);
                if walk_nearer {
                    on_edge(a.cell, a.face, ray.at(a.t))
                } else {
                    let (cell, face) = mesh.names[b.prim as usize];
                    on_edge(cell, face, ray.at(b.t))
                }
            } =>
            {
                grazes += 1
            }
            _ => {
                mismatches += 1;
                if std::env::var_os("HF_BENCH_VERBOSE").is_some() {
                    let name = |h: &Hit| {
                        mesh.names
                            .get(h.prim as usize)
                            .map(|&(cell, face)| (cell % 512, cell / 512, face))
                    };
                    eprintln!(
                        "ray {i} {ray:?}: heightfield t {} cell ({}, {}) face {} / triangles t {} {:?}",
                        a.t,
                        a.cell % 512,
                        a.cell / 512,
                        a.face,
                        b.t,
                        name(&b)
                    );
                }
            }
        }
    }

    let threads_used = if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    };
    let mut results = Vec::new();
    for mut t in [walk, tris, one] {
        let (c, o, cc) = (
            median(&mut t.closest),
            median(&mut t.occluded),
            median(&mut t.cpu_closest),
        );
        println!(
            "prism-cpu {traversal:?} city512 {} threads={threads_used} rays={} runs={runs} \
             build_ms={:.1} closest_mrays={c:.2} occluded_mrays={o:.2} cpu_closest_mrays={cc:.2} \
             closest_runs={:?}",
            t.name,
            rays.len(),
            t.build_ms,
            t.closest
                .iter()
                .map(|r| (r * 100.0).round() / 100.0)
                .collect::<Vec<_>>(),
        );
        results.push((c, o, cc));
    }
    println!(
        "triangles={} heightfield_vs_triangles closest={:.2}x occluded={:.2}x cpu_closest={:.2}x \
         hits={hit_count} matches={matches} ties={ties} grazes={grazes} mismatches={mismatches}",
        mesh.triangles.len(),
        results[0].0 / results[1].0,
        results[0].1 / results[1].1,
        results[0].2 / results[1].2,
    );
    if mismatches > 0 {
        return Err(format!("{mismatches} rays disagree"));
    }
    Ok(())
}
