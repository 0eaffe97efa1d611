//! Times the tree over a scene's instances as a frame rebuilds it: every
//! instance given its transform again (new records and world boxes) and the
//! top tree rebuilt, on one thread, for an `.instances` file of placements of
//! an OBJ mesh (`shared/scenes` format). Prints the median and minimum of
//! `RUNS` updates with each top builder.
//!
//! `cargo run --release -p prism-rt-core --example top_level_build -- MESH.obj FILE.instances [RUNS [auto|morton|sah]]`
use prism_core::glam::{Affine3A, Vec3};
use prism_core::*;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (mesh, file) = (&args[1], &args[2]);
    let runs: usize = args.get(3).and_then(|r| r.parse().ok()).unwrap_or(15);
    // A minimal OBJ reader (v and f lines, fans): only the mesh's bounds matter here.
    let text = std::fs::read_to_string(mesh).expect("read the mesh");
    let (mut v, mut t) = (Vec::new(), Vec::new());
    for line in text.lines() {
        let mut it = line.split_whitespace();
        match it.next() {
            Some("v") => {
                let c: Vec<f32> = it.take(3).map(|x| x.parse().unwrap_or(0.0)).collect();
                v.push(Vec3::new(c[0], c[1], c[2]));
            }
            Some("f") => {
                let idx: Vec<u32> = it
                    .filter_map(|x| x.split('/').next()?.parse::<u32>().ok())
                    .map(|i| i - 1)
                    .collect();
                for k in 1..idx.len().saturating_sub(1) {
                    t.push([idx[0], idx[k], idx[k + 1]]);
                }
            }
            _ => {}
        }
    }
    let raw = std::fs::read(file).expect("read the instances");
    let f: Vec<f32> = raw
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let transforms: Vec<Affine3A> = f
        .chunks_exact(12)
        .map(|r| {
            instance::from_rows([
                [r[0], r[1], r[2], r[3]],
                [r[4], r[5], r[6], r[7]],
                [r[8], r[9], r[10], r[11]],
            ])
        })
        .collect();
    let builders: Vec<TopLevelBuild> = match args.get(4).map(String::as_str) {
        Some("auto") => vec![TopLevelBuild::Auto],
        Some("morton") => vec![TopLevelBuild::Morton],
        Some("sah") => vec![TopLevelBuild::Sah],
        _ => vec![
            TopLevelBuild::Auto,
            TopLevelBuild::Morton,
            TopLevelBuild::Sah,
        ],
    };
    for build in builders {
        let mut scene = Scene::new();
        scene.top_level_build = build;
        let m = scene.add_material(Material::lambertian(Vec3::ONE));
        let g = scene.add_geometry(Geometry::mesh(&v, &t, m).expect("mesh"));
        for tr in &transforms {
            scene.add_instance(Instance::new(g, *tr));
        }
        let mut accel = Accel::build(&scene).expect("scene");
        let mut update = SceneUpdate::new();
        for (i, tr) in transforms.iter().enumerate() {
            update.set_transform(i as u32, *tr);
        }
        let mut ms: Vec<f64> = (0..runs)
            .map(|_| {
                let t0 = Instant::now();
                accel.update(&update).expect("update");
                t0.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        ms.sort_by(f64::total_cmp);
        println!(
            "{} instances, top builder {build:?}: every transform and the top tree {:.2} ms median, {:.2} ms min, over {runs} updates (top depth {})",
            transforms.len(),
            ms[ms.len() / 2],
            ms[0],
            accel.top_depth()
        );
    }
}
