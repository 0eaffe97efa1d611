//! A mesh whose every vertex moves each frame, as Embree's `refit` command
//! moves it (`shared/tools/embree-bench`: a travelling wave along y of
//! amplitude 1% of the bounding box's diagonal), refit through the CPU
//! backend's `update_scene` on one thread: core's `Accel::update_with` with
//! `RefitOn::Device` (the new vertices and bounds, the instance's box and the
//! tree over the instances; core's slots and binary tree are left for later)
//! and the wide BVH's refit straight from the vertices. Prints the median
//! time (and the fastest frame's) of the whole call and of core's part alone
//! (`Accel::update_with` on a copy of the scene), core's own host refit of
//! the same frames (`Accel::update`, what the backend did before), and a
//! full `set_scene` for comparison; checks the refit scene's hits against a
//! scene built from scratch with the last frame's vertices.
//!
//! Usage: refit_bench MESH.obj [REPEATS]   (REPEATS: 7)

use glam::Vec3;
use prism_core::{
    Accel, Backend, Geometry, Hit, Instance, Material, Ray, RefitOn, Scene, SceneUpdate,
};
use prism_cpu::CpuBackend;
use std::process::ExitCode;

mod common;
use common::load_obj;
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let run = || -> Result<(), String> {
        let mesh = args
            .first()
            .ok_or("usage: refit_bench MESH.obj [REPEATS]")?;
        let reps = match args.get(1) {
            Some(r) => r.parse().map_err(|_| format!("not a number: {r}"))?,
            None => 7usize,
        };
        bench(mesh, reps.max(1))
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The scene: the mesh as one geometry, placed once with the identity.
fn mesh_scene(positions: &[Vec3], triangles: &[[u32; 3]]) -> Result<Scene, String> {
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::ONE));
    let g = Geometry::mesh(positions, triangles, m).map_err(|e| e.to_string())?;
    let g = scene.add_geometry(g);
    scene.add_instance(Instance::new(g, glam::Affine3A::IDENTITY));
    Ok(scene)
}

/// Frame `r`'s vertices: Embree's `refit` wave, `y += 0.01 diag sin(2 pi (4
/// x / diag + 0.1 (r + 1)))`, in `f32` as there.
fn wave(base: &[Vec3], diag: f32, r: usize, out: &mut [Vec3]) {
    for (o, p) in out.iter_mut().zip(base) {
        let phase = std::f32::consts::TAU * (p.x / diag * 4.0 + 0.1 * (r + 1) as f32);
        *o = Vec3::new(p.x, p.y + 0.01 * diag * phase.sin(), p.z);
    }
}

/// The median and the fastest of `v`, in milliseconds.
fn median_min(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    (ms(v[v.len() / 2]), ms(v[0]))
}

fn bench(mesh: &str, reps: usize) -> Result<(), String> {
    let (positions, triangles) = load_obj(mesh)?;
    let (lo, hi) = positions
        .iter()
        .fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(*p), hi.max(*p))
        });
    let diag = (hi - lo).length();
    let scene = mesh_scene(&positions, &triangles)?;
    let mut cpu = CpuBackend::with_threads(1).map_err(|e| e.to_string())?;
    let mut full = Vec::new();
    for _ in 0..reps.min(5) {
        let t = Instant::now();
        cpu.set_scene(&scene).map_err(|e| e.to_string())?;
        full.push(t.elapsed());
    }
    let mut core_only = Accel::build(&scene).map_err(|e| e.to_string())?;
    let mut core_host = core_only.clone();
    let mut moved = positions.clone();
    let (mut whole, mut core, mut host, mut reported) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // One untimed frame first (caches, the update's work arrays).
    for r in 0..=reps {
        wave(&positions, diag, r, &mut moved);
        let mut update = SceneUpdate::new();
        update.set_vertices(0, &moved);
        let t = Instant::now();
        let stats = cpu.update_scene(&update).map_err(|e| e.to_string())?;
        let w = t.elapsed();
        let t = Instant::now();
        core_only
            .update_with(&update, RefitOn::Device)
            .map_err(|e| e.to_string())?;
        let c = t.elapsed();
        let t = Instant::now();
        core_host.update(&update).map_err(|e| e.to_string())?;
        let h = t.elapsed();
        if r > 0 {
            whole.push(w);
            core.push(c);
            host.push(h);
            reported.push(stats.stats.total);
        }
    }
    // The refit scene against one built from scratch with the last vertices.
    let fresh = Accel::build(&mesh_scene(&moved, &triangles)?).map_err(|e| e.to_string())?;
    let centre = (lo + hi) * 0.5;
    let rays: Vec<Ray> = (0..4096)
        .map(|i| {
            let a = i as f32 * 0.618_034 * std::f32::consts::TAU;
            let z = 1.0 - 2.0 * (i as f32 + 0.5) / 4096.0;
            let s = (1.0 - z * z).sqrt();
            let o = centre + Vec3::new(s * a.cos(), z, s * a.sin()) * diag;
            Ray::new(
                o,
                centre + (hi - lo) * 0.2 * Vec3::new(a.sin(), z, a.cos()) - o,
            )
        })
        .collect();
    let mut hits = vec![Hit::MISS; rays.len()];
    cpu.intersect(&rays, &mut hits).map_err(|e| e.to_string())?;
    let differ = rays
        .iter()
        .zip(&hits)
        .filter(|(ray, h)| fresh.intersect(ray).t.to_bits() != h.t.to_bits())
        .count();
    let hit_count = hits.iter().filter(|h| h.is_hit()).count();
    let (full, _) = median_min(full);
    let (whole, whole_min) = median_min(whole);
    let (core, core_min) = median_min(core);
    let (host, host_min) = median_min(host);
    let (reported, _) = median_min(reported);
    println!(
        "prism-cpu refit {mesh} threads=1 triangles={} set_scene_ms={full:.2} \
         update_scene_ms={whole:.3} (fastest {whole_min:.3}) core_update_ms={core:.3} \
         (fastest {core_min:.3}) core_host_refit_ms={host:.3} (fastest {host_min:.3}) \
         reported_total_ms={reported:.3} hits={hit_count}/{} \
         differ_from_fresh_build={differ}",
        triangles.len(),
        rays.len(),
    );
    Ok(())
}
