//! `prism bench --mesh M --instances FILE --rays R [--hits H]`: an instanced
//! reference set (`shared/scenes/instances/`) traced on a two-level scene of
//! one geometry (the mesh) and one instance per transform of the file, in
//! file order, against Embree's `.ihits` when given.

use super::bench::{
    check_reference_length, judge_agreement, median, ms, read_some_rays, refuse_render_settings,
    time_rays,
};
use crate::{BenchArgs, CliError, open_backend};
use prism::{Hit, Material, SceneUpdate};
use prism_conformance::hits::{instance_agreement, origin_scales};
use std::path::Path;

pub(crate) fn bench_instanced(
    a: &BenchArgs,
    mesh_path: &Path,
    instances_path: &Path,
    rays_path: &Path,
) -> Result<(), CliError> {
    refuse_render_settings(
        &a.scene,
        "--instances traces the ray file as it is: --width, --height, --spp, --depth, --seed, \
         --integrator and --ao-* apply to renders only",
    )?;
    let mesh = prism::mesh::load_mesh(mesh_path)?;
    let transforms = prism::rays::read_instances(instances_path)?;
    let material = Material::lambertian(glam::Vec3::splat(0.7));
    let scene = prism::instanced_scene(&mesh, &transforms, material)?;
    // The mesh alone, placed once: its set_scene is the bottom level's build.
    let bottom = prism::instanced_scene(&mesh, &[glam::Affine3A::IDENTITY], material)?;
    let rays = read_some_rays(rays_path)?;
    let reference = match &a.hits {
        Some(hits_path) => {
            let reference = prism::rays::read_instance_hits(hits_path)?;
            check_reference_length(hits_path, reference.len(), rays_path, rays.len())?;
            Some((hits_path, reference))
        }
        None => None,
    };
    // Bad transforms are refused, naming the instance, before any timing.
    prism::Accel::build(&scene)?;
    let mut backend = open_backend(&a.scene)?;
    let label = format!(
        "tracing {} rays of {} over {} instances",
        rays.len(),
        rays_path.display(),
        transforms.len()
    );
    let r = time_rays(backend.as_mut(), &scene, &rays, a.runs, label)?;
    // The top level: every instance placed again (same transforms), which
    // rebuilds the tree over the instances and rewrites their records.
    let mut replace = SceneUpdate::new();
    for (i, t) in transforms.iter().enumerate() {
        replace.set_transform(i as u32, *t);
    }
    let mut top = Vec::new();
    for _ in 0..a.runs {
        let s = backend.update_scene(&replace)?.stats;
        top.push(ms(s.build + s.upload));
    }
    let mut bottom_ms = Vec::new();
    for _ in 0..a.runs {
        bottom_ms.push(ms(backend.set_scene(&bottom)?.build));
    }
    let info = backend.info();
    println!(
        "bench {} x {} ({} instances of {} tris, {} rays of {}) on {} [{}], median of {}: \
         build {:.1} ms (bottom level {:.1} ms: the mesh alone; top level {:.2} ms: every \
         instance placed again by update_scene), closest {:.2} Mrays/s, occluded {:.2} Mrays/s",
        mesh_path.display(),
        instances_path.display(),
        transforms.len(),
        mesh.triangles.len(),
        rays.len(),
        rays_path.display(),
        info.name,
        info.device,
        a.runs,
        median(r.build),
        median(bottom_ms),
        median(top),
        median(r.closest),
        median(r.occluded)
    );
    if let Some((hits_path, reference)) = &reference {
        let scales = origin_scales(&scene, &rays, reference);
        let c = instance_agreement(&rays, &r.hits, reference, &scales);
        judge_agreement(
            info.name,
            hits_path,
            &c,
            &r.occ,
            reference.iter().map(|h| h.1 != Hit::NO_PRIM),
        )?;
    }
    Ok(())
}
