//! Benchmark of the fast and clustered trees built on the device against the
//! host's SAH tree, on bunny and ogre of the shared scenes (`$PRISM_SCENES`,
//! or ../shared/scenes):
//!
//! - the device build alone (`CudaBackend::time_device_build`, CUDA events
//!   from the first launch to the last, arrays kept between builds; median of
//!   20 after one warm-up),
//! - `set_scene`'s build step of each tree (median of 11 after one warm-up):
//!   the host's binned SAH build on every core, or the device's build,
//! - closest and any hit on each shared ray set repeated to a 4M-ray
//!   device-resident batch (median of 9 after one warm-up), on each tree;
//!   the closest hits of the batch's first copy checked against Embree's.
//!
//! ```text
//! cargo run --release -p prism-rt-cuda --example fast_build_bench
//! ```

#[path = "../tests/common/mod.rs"]
mod common;

use common::{load_hits, load_rays, mesh_scene, scenes_dir};
use prism_core::backend::Backend;
use prism_core::reference::AgreementCounts;
use prism_core::{BuildQuality, Hit, Ray};
use prism_cuda::CudaBackend;

/// Rays in a resident batch.
const BATCH: usize = 1 << 22;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = scenes_dir().ok_or("no shared scenes: set PRISM_SCENES")?;
    let mut gpu = CudaBackend::new()?;
    println!("device: {}", gpu.info().device);
    let qualities = [
        BuildQuality::Sah,
        BuildQuality::Fast,
        BuildQuality::Clustered,
    ];
    // (set, tree, device build ms, set_scene build ms, closest, occluded)
    let mut table: Vec<(String, BuildQuality, f64, f64, [f64; 2])> = Vec::new();
    for mesh in ["bunny", "ogre"] {
        let m = prism::mesh::load_mesh(dir.join(format!("{mesh}.obj")))?;
        let sah = mesh_scene(&dir.join(format!("{mesh}.obj")))?;
        let mut scenes = Vec::new();
        let mut builds = Vec::new();
        for quality in qualities {
            let kernels = if quality == BuildQuality::Sah {
                f64::NAN
            } else {
                let (_, times) = gpu.time_device_build(&m.positions, &m.triangles, quality, 21)?;
                median(times[1..].to_vec())
            };
            let mut scene = sah.clone();
            scene.build_quality = quality;
            gpu.set_scene(&scene)?;
            let mut v = Vec::new();
            for _ in 0..11 {
                v.push(gpu.set_scene(&scene)?.build.as_secs_f64() * 1e3);
            }
            let set_scene_ms = median(v);
            println!(
                "{mesh} {quality:?}: device build {kernels:.3} ms; set_scene build {set_scene_ms:.3} ms"
            );
            builds.push((kernels, set_scene_ms));
            scenes.push(scene);
        }
        for set in ["primary", "diffuse"] {
            let rays = load_rays(&dir.join(format!("{mesh}.{set}.rays")))?;
            let reference = load_hits(&dir.join(format!("{mesh}.{set}.hits")))?;
            let batch: Vec<Ray> = rays.iter().copied().cycle().take(BATCH).collect();
            gpu.set_resident_rays(&batch)?;
            for (k, scene) in scenes.iter().enumerate() {
                gpu.set_scene(scene)?;
                let mut row = [0.0; 2];
                for (c, closest) in [true, false].into_iter().enumerate() {
                    gpu.trace_resident_rays(closest)?;
                    let mut v = Vec::new();
                    for _ in 0..9 {
                        v.push(gpu.trace_resident_rays(closest)?.mrays_per_s());
                    }
                    row[c] = median(v);
                    if closest {
                        let mut hits = vec![Hit::MISS; rays.len()];
                        gpu.resident_hits(&mut hits)?;
                        let c = AgreementCounts::compare(&rays, &hits, &reference);
                        if !c.passed() {
                            return Err(format!("{mesh}.{set}: {c:?}").into());
                        }
                    }
                }
                table.push((
                    format!("{mesh}.{set}"),
                    qualities[k],
                    builds[k].0,
                    builds[k].1,
                    row,
                ));
            }
        }
    }
    println!(
        "| set | tree | device build ms | set_scene build ms | closest Mrays/s | / SAH | occluded Mrays/s | / SAH |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    let mut sah_row = [1.0; 2];
    for (set, quality, k, s, r) in table {
        if quality == BuildQuality::Sah {
            sah_row = r;
        }
        println!(
            "| {set} | {quality:?} | {k:.3} | {s:.3} | {:.0} | {:.3} | {:.0} | {:.3} |",
            r[0],
            r[0] / sah_row[0],
            r[1],
            r[1] / sah_row[1]
        );
    }
    Ok(())
}
