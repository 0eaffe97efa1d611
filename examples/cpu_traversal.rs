//! The CPU backend's traversals on the same rays, in the same process: core's
//! binary BVH, the 4-wide BVH (`Traversal::Wide4`, 128-bit SIMD) and
//! `Traversal::Wide` (the 8-wide AVX2 BVH on x86-64 CPUs with AVX2, else the
//! 4-wide one), the last with every ray alone, with coherent rays eight at a
//! time wherever they are coherent, and where samples say packets pay
//! (`RayPackets`: `Never`, `Always`, `Auto`, the default). Mrays/s for
//! closest hit and occlusion, median of 5, each traversal twice.
//! Usage: cpu_traversal MESH RAYS [THREADS]   (THREADS: 0 or absent = all cores)
use prism::{Backend, Hit, Material};
use prism_cpu::{CpuBackend, RayPackets, Traversal};
use std::process::ExitCode;

const USAGE: &str = "usage: cpu_traversal MESH RAYS [THREADS]";

fn main() -> ExitCode {
    let a: Vec<String> = std::env::args().collect();
    let (mesh, rays, threads) = match a.as_slice() {
        [_, mesh, rays] => (mesh, rays, Some(0)),
        [_, mesh, rays, threads] => (mesh, rays, threads.parse().ok()),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let Some(threads) = threads else {
        eprintln!("THREADS must be a number\n{USAGE}");
        return ExitCode::from(2);
    };
    match run(mesh, rays, threads) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(mesh: &str, rays: &str, threads: usize) -> Result<(), prism::Error> {
    let m = prism::mesh::load_mesh(mesh)?;
    let (scene, _) = prism::mesh_scene(&m, Material::lambertian(glam::Vec3::ONE))?;
    let rays = prism::rays::read_rays(rays)?;
    let mut cpu = CpuBackend::with_threads(threads)?;
    cpu.set_scene(&scene)?;
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut occ = vec![false; rays.len()];
    let mut first: Option<(Vec<Hit>, Vec<bool>)> = None;
    let walks = [
        (Traversal::Binary, RayPackets::Never),
        (Traversal::Wide4, RayPackets::Never),
        (Traversal::Wide, RayPackets::Never),
        (Traversal::Wide, RayPackets::Always),
        (Traversal::Wide, RayPackets::Auto),
    ];
    for (t, packets) in walks.into_iter().chain(walks) {
        cpu.set_traversal(t)?;
        cpu.set_ray_packets(packets);
        let name = match packets {
            RayPackets::Never => format!("{t:?}"),
            p => format!("{t:?}, packets {p:?}"),
        };
        let (mut c, mut o) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            c.push(rays.len() as f64 / cpu.intersect(&rays, &mut hits)?.trace.as_secs_f64() / 1e6);
            o.push(rays.len() as f64 / cpu.occluded(&rays, &mut occ)?.trace.as_secs_f64() / 1e6);
        }
        c.sort_by(f64::total_cmp);
        o.sort_by(f64::total_cmp);
        let differ = match &first {
            None => {
                first = Some((hits.clone(), occ.clone()));
                0
            }
            Some((h0, o0)) => {
                let dh = h0
                    .iter()
                    .zip(&hits)
                    .filter(|(a, b)| a.prim != b.prim || a.t.to_bits() != b.t.to_bits())
                    .count();
                dh + o0.iter().zip(&occ).filter(|(a, b)| a != b).count()
            }
        };
        println!(
            "{name}: closest {:.2} Mrays/s, occluded {:.2} Mrays/s ({differ} answers differ from the first run)",
            c[2], o[2]
        );
    }
    Ok(())
}
