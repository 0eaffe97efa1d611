//! Trace one ray of a shared ray set and print our hit beside the reference.
//! Usage: probe_ray MESH RAYS HITS INDEX
use prism::{Accel, Material};
use std::process::ExitCode;

const USAGE: &str = "usage: probe_ray MESH RAYS HITS INDEX";

fn main() -> ExitCode {
    let a: Vec<String> = std::env::args().collect();
    let [_, mesh, rays, hits, index] = a.as_slice() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let Ok(index) = index.parse::<usize>() else {
        eprintln!("INDEX must be a ray number, not '{index}'\n{USAGE}");
        return ExitCode::from(2);
    };
    match probe(mesh, rays, hits, index) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn probe(mesh: &str, rays: &str, hits: &str, i: usize) -> Result<(), String> {
    let mesh = prism::mesh::load_mesh(mesh).map_err(|e| e.to_string())?;
    let (scene, _) = prism::mesh_scene(&mesh, Material::lambertian(glam::Vec3::ONE))
        .map_err(|e| e.to_string())?;
    let rays = prism::rays::read_rays(rays).map_err(|e| e.to_string())?;
    let refs = prism::rays::read_hits(hits).map_err(|e| e.to_string())?;
    let (Some(&ray), Some(&reference)) = (rays.get(i), refs.get(i)) else {
        return Err(format!(
            "ray {i} is out of range: {} rays, {} reference hits",
            rays.len(),
            refs.len()
        ));
    };
    let accel = Accel::build(&scene).map_err(|e| e.to_string())?;
    let h = accel.intersect(&ray);
    println!("ray {ray:?}\nours {h:?}\nref  {reference:?}");
    let pre = prism_core::intersect::RayPre::new(&ray);
    for p in [h.prim, reference.1] {
        if let Some(prism_core::scene::PrimRef::Triangle(t)) = scene.primitive(p) {
            let [v0, v1, v2] = scene.triangle(t).unwrap_or_default();
            println!(
                "prim {p}: {:?} n={:?}",
                prism_core::intersect::ray_triangle(&pre, v0, v1, v2, 0.0, f32::INFINITY),
                (v1 - v0).cross(v2 - v0).normalize()
            );
        }
    }
    Ok(())
}
