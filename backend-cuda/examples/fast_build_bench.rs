//! Benchmark of the fast tree built on the device against the host's SAH
//! tree, on bunny and ogre of the shared scenes (`$PRISM_SCENES`, or
//! ../shared/scenes):
//!
//! - the device build's kernels alone (`CudaBackend::time_fast_build`, CUDA
//!   events, arrays kept between builds; median of 20 after one warm-up),
//! - `set_scene`'s build step of each tree (median of 11 after one warm-up):
//!   the host's binned SAH build on every core, or the device's fast build,
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
    let mut table = Vec::new();
    for mesh in ["bunny", "ogre"] {
        let m = prism::mesh::load_mesh(dir.join(format!("{mesh}.obj")))?;
        let (_, times) = gpu.time_fast_build(&m.positions, &m.triangles, 21)?;
        let kernels = median(times[1..].to_vec());
        let sah = mesh_scene(&dir.join(format!("{mesh}.obj")))?;
        let mut fast = sah.clone();
        fast.build_quality = BuildQuality::Fast;
        let mut build_ms = |scene| -> Result<f64, prism_core::Error> {
            gpu.set_scene(scene)?;
            let mut v = Vec::new();
            for _ in 0..11 {
                v.push(gpu.set_scene(scene)?.build.as_secs_f64() * 1e3);
            }
            Ok(median(v))
        };
        let (sah_ms, fast_ms) = (build_ms(&sah)?, build_ms(&fast)?);
        println!(
            "{mesh}: device build kernels {kernels:.3} ms; set_scene build: SAH (host) {sah_ms:.2} ms, fast (device) {fast_ms:.3} ms"
        );
        for set in ["primary", "diffuse"] {
            let rays = load_rays(&dir.join(format!("{mesh}.{set}.rays")))?;
            let reference = load_hits(&dir.join(format!("{mesh}.{set}.hits")))?;
            let batch: Vec<Ray> = rays.iter().copied().cycle().take(BATCH).collect();
            gpu.set_resident_rays(&batch)?;
            let mut rates = Vec::new();
            for scene in [&sah, &fast] {
                gpu.set_scene(scene)?;
                let mut row = Vec::new();
                for closest in [true, false] {
                    gpu.trace_resident_rays(closest)?;
                    let mut v = Vec::new();
                    for _ in 0..9 {
                        v.push(gpu.trace_resident_rays(closest)?.mrays_per_s());
                    }
                    row.push(median(v));
                    if closest {
                        let mut hits = vec![Hit::MISS; rays.len()];
                        gpu.resident_hits(&mut hits)?;
                        let c = AgreementCounts::compare(&rays, &hits, &reference);
                        if !c.passed() {
                            return Err(format!("{mesh}.{set}: {c:?}").into());
                        }
                    }
                }
                rates.push(row);
            }
            table.push((
                format!("{mesh}.{set}"),
                kernels,
                sah_ms,
                fast_ms,
                rates[0].clone(),
                rates[1].clone(),
            ));
        }
    }
    println!(
        "| set | device build kernels ms | SAH build ms (host) | fast build ms (set_scene, device) | closest Mrays/s SAH | closest fast | ratio | occluded SAH | occluded fast | ratio |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (set, k, s, f, a, b) in table {
        println!(
            "| {set} | {k:.3} | {s:.2} | {f:.3} | {:.0} | {:.0} | {:.3} | {:.0} | {:.0} | {:.3} |",
            a[0],
            b[0],
            b[0] / a[0],
            a[1],
            b[1],
            b[1] / a[1]
        );
    }
    Ok(())
}
