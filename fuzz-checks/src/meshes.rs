//! The `mesh_obj` and `mesh_ply` checks: the OBJ and PLY parsers on arbitrary
//! bytes, and every mesh they return traced against brute force.

use crate::backend::with_backend;
use crate::reference::compare_with_brute_force;
use crate::scenes::same_bits;
use crate::{MAX_MESH_RAYS, Violation};
use glam::Vec3;
use prism::mesh::{Mesh, parse_obj, parse_ply};
use prism_core::{Backend, Error, Material, Ray};

/// [`parse_obj`] on arbitrary bytes.
pub fn mesh_obj(data: &[u8]) -> Result<(), Violation> {
    check_parsed(parse_obj(data, "fuzz.obj"), "fuzz.obj")
}

/// [`parse_ply`] on arbitrary bytes.
pub fn mesh_ply(data: &[u8]) -> Result<(), Violation> {
    check_parsed(parse_ply(data, "fuzz.ply"), "fuzz.ply")
}

/// A parse result: [`Error::Parse`] naming the file, or a mesh that is well formed,
/// builds into a scene (or names its bad vertex) and traces like brute force.
fn check_parsed(parsed: Result<Mesh, Error>, name: &str) -> Result<(), Violation> {
    let mesh = match parsed {
        Ok(mesh) => mesh,
        Err(Error::Parse { path, message, .. }) if path == name && !message.is_empty() => {
            return Ok(());
        }
        Err(e) => return violation!("{name}: unexpected error {e:?}"),
    };
    if mesh.triangles.is_empty() {
        return violation!("{name}: parsed without error but has no triangles");
    }
    let n = mesh.positions.len();
    if let Some(t) = mesh
        .triangles
        .iter()
        .position(|t| t.iter().any(|&i| i as usize >= n))
    {
        return violation!("{name}: triangle {t} has an index out of range ({n} vertices)");
    }
    let (scene, camera) = match prism::mesh_scene(&mesh, Material::lambertian(Vec3::splat(0.7))) {
        Ok(sc) => sc,
        Err(Error::VertexNotFinite {
            vertex, position, ..
        }) => {
            let p = mesh.positions.get(vertex).copied();
            let used = mesh
                .triangles
                .iter()
                .flatten()
                .any(|&i| i as usize == vertex);
            if used && p.is_some_and(|p| !p.is_finite() && same_bits(p.to_array(), position)) {
                return Ok(());
            }
            return violation!("{name}: VertexNotFinite names vertex {vertex}, which is fine");
        }
        Err(e) => return violation!("{name}: mesh_scene failed unexpectedly: {e:?}"),
    };
    with_backend(|backend| {
        if let Err(e) = backend.set_scene(&scene) {
            return violation!("{name}: a parsed mesh with finite vertices was refused: {e:?}");
        }
        // Rays from the camera's eye to the centroids of the first triangles.
        let rays: Vec<Ray> = mesh
            .triangles
            .iter()
            .take(MAX_MESH_RAYS)
            .filter_map(|t| {
                let [a, b, c] = t.map(|i| mesh.positions.get(i as usize).copied());
                let centroid = (a? + b? + c?) / 3.0;
                let ray = Ray::new(camera.look_from, centroid - camera.look_from);
                ray.is_valid().then_some(ray)
            })
            .collect();
        compare_with_brute_force(backend, &scene, &rays)
    })
}
