//! Prism: an embeddable ray tracing core with CPU, CUDA and wgpu backends that
//! give the same answers, picked at run time.
//!
//! ```no_run
//! use prism::{BackendChoice, Image, NoProgress, PixelFormat};
//!
//! let preset = prism::scenes::by_name("rtiow")?;
//! let mut opened = prism::open(BackendChoice::Auto)?;
//! println!("{}", opened.report());
//! opened.backend.set_scene(&preset.scene)?;
//! let mut image = Image::new(640, 360, PixelFormat::Srgba8)?;
//! opened.backend.render(&preset.camera, &preset.settings, &mut image, &NoProgress)?;
//! # Ok::<(), prism::Error>(())
//! ```
#![deny(missing_docs)]

pub mod city;
pub mod conformance;
pub mod height_map;
pub mod mesh;
pub mod procedural;
pub mod rays;
pub mod record;
pub mod scenes;
mod select;
pub mod tune;

pub use prism_core::*;
pub use select::{
    Attempt, BackendChoice, OpenOptions, Opened, env_override, open, open_with, open_with_env,
    open_with_env_and_options,
};

use glam::Vec3;

/// A scene holding one mesh, and the camera `shared/scenes` uses for its primary
/// rays: 1.2 bounding-box diagonals from the centre along `normalize(0.4, 0.3, 1)`,
/// vertical field of view 45 degrees. The key light sits one diagonal above the
/// eye, held to finite coordinates so that the scene is valid for any mesh of
/// finite vertices (for one spanning most of the `f32` range the camera itself
/// is then unusable, and `render` says so).
pub fn mesh_scene(mesh: &mesh::Mesh, material: Material) -> Result<(Scene, Camera), Error> {
    let mut scene = Scene::new();
    let m = scene.add_material(material);
    scene.add_mesh(&mesh.positions, &mesh.triangles, m)?;
    let b = mesh.bounds();
    let center = b.center();
    let eye = center + 1.2 * b.diagonal() * Vec3::new(0.4, 0.3, 1.0).normalize();
    scene.light = PointLight {
        position: (eye + Vec3::new(0.0, b.diagonal(), 0.0))
            .clamp(Vec3::splat(-f32::MAX), Vec3::splat(f32::MAX)),
        color: Vec3::ONE,
    };
    Ok((scene, Camera::look_at(eye, center, Vec3::Y, 45.0)))
}

/// A two-level scene of one geometry, `mesh` in `material`, placed once by
/// each of `transforms`, in order (instance `i` is `transforms[i]`): how the
/// instanced reference sets of `shared/scenes/instances` are traced. Bad
/// transforms are refused when the scene is built, naming the instance.
pub fn instanced_scene(
    mesh: &mesh::Mesh,
    transforms: &[glam::Affine3A],
    material: Material,
) -> Result<Scene, Error> {
    let mut scene = Scene::new();
    let m = scene.add_material(material);
    let g = scene.add_geometry(Geometry::mesh(&mesh.positions, &mesh.triangles, m)?);
    scene.add_instances(transforms.iter().map(|t| Instance::new(g, *t)))?;
    let b = mesh.bounds();
    scene.light = PointLight {
        position: (b.center() + Vec3::new(0.0, 100.0 * b.diagonal(), 0.0))
            .clamp(Vec3::splat(-f32::MAX), Vec3::splat(f32::MAX)),
        color: Vec3::ONE,
    };
    Ok(scene)
}

/// The README's Rust examples, compiled as doctests so the README stays true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// Every built-in scene's name: the generated ones and the height maps.
pub const SCENE_NAMES: &str = "rtiow, whitted19, cornell, instances, sunlit, city, city-triangles";

/// A built-in scene by name: one generated in code ([`scenes`]) or a height map
/// read from its file ([`city`]). An unknown name is [`Error::UnknownName`]
/// listing [`SCENE_NAMES`].
///
/// ```
/// let cornell = prism::builtin_scene("cornell")?;
/// assert_eq!(cornell.name, "cornell");
/// assert!(matches!(prism::builtin_scene("nope"), Err(prism::Error::UnknownName { .. })));
/// # Ok::<(), prism::Error>(())
/// ```
pub fn builtin_scene(name: &str) -> Result<scenes::Preset, Error> {
    if let Some(preset) = city::by_name(name) {
        return preset;
    }
    scenes::by_name(name).map_err(|e| match e {
        Error::UnknownName { what, name, .. } => Error::UnknownName {
            what,
            name,
            known: SCENE_NAMES,
        },
        other => other,
    })
}
