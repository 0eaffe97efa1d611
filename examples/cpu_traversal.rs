//! Wide (4-way SIMD) against binary BVH traversal on the CPU backend, same rays,
//! same process: Mrays/s for closest hit and occlusion, median of 5.
//! Usage: cpu_traversal MESH RAYS [THREADS]
use prism::{Backend, Hit, Material};
use prism_cpu::{CpuBackend, Traversal};

fn main() -> Result<(), prism::Error> {
    let a: Vec<String> = std::env::args().collect();
    let (Some(mesh), Some(rays)) = (a.get(1), a.get(2)) else {
        eprintln!("usage: cpu_traversal MESH RAYS [THREADS]");
        return Ok(());
    };
    let threads = a.get(3).and_then(|t| t.parse().ok()).unwrap_or(0);
    let m = prism::mesh::load_mesh(mesh)?;
    let (scene, _) = prism::mesh_scene(&m, Material::lambertian(glam::Vec3::ONE))?;
    let rays = prism::rays::read_rays(rays)?;
    let mut cpu = CpuBackend::with_threads(threads)?;
    cpu.set_scene(&scene)?;
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut occ = vec![false; rays.len()];
    let mut first: Option<(Vec<Hit>, Vec<bool>)> = None;
    for t in [
        Traversal::Binary,
        Traversal::Wide,
        Traversal::Binary,
        Traversal::Wide,
    ] {
        cpu.set_traversal(t);
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
            "{t:?}: closest {:.2} Mrays/s, occluded {:.2} Mrays/s ({differ} answers differ from the first run)",
            c[2], o[2]
        );
    }
    Ok(())
}
