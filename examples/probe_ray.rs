//! Trace one ray of a shared ray set and print our hit beside the reference.
//! Usage: probe_ray MESH RAYS HITS INDEX
use prism::{Accel, Material};
fn main() -> Result<(), prism::Error> {
    let a: Vec<String> = std::env::args().collect();
    let mesh = prism::mesh::load_mesh(&a[1])?;
    let (scene, _) = prism::mesh_scene(&mesh, Material::lambertian(glam::Vec3::ONE))?;
    let rays = prism::rays::read_rays(&a[2])?;
    let refs = prism::rays::read_hits(&a[3])?;
    let i: usize = a[4].parse().unwrap_or(0);
    let accel = Accel::build(&scene)?;
    let h = accel.intersect(&rays[i]);
    println!("ray {:?}\nours {:?}\nref  {:?}", rays[i], h, refs[i]);
    let pre = prism_core::intersect::RayPre::new(&rays[i]);
    for p in [h.prim, refs[i].1] {
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
