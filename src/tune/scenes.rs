//! The scenes and camera path of `prism animate`: a single mesh (`ogre`), a
//! 456k-triangle crowd of the shared meshes (`crowd`) and the built-in
//! two-level `instances` scene, each with a path that orbits while moving in
//! toward the centre (Ganestam and Doggett's camera paths).

use crate::mesh::{Mesh, load_mesh};
use crate::procedural::icosphere;
use glam::{Affine3A, Vec3};
use prism_core::{Camera, Error, Material, PointLight, Scene};
use std::path::Path;

/// The scene names `prism animate --scene` takes.
pub const NAMES: &str = "ogre, crowd, instances";

/// A scene to animate: the scene, the centre its path circles, the path's
/// starting distance and height, and the AO ray length that suits it.
#[derive(Clone, Debug)]
pub struct AnimatedScene {
    /// Name (`ogre`, `crowd`, `instances`, or the mesh file's stem).
    pub name: String,
    /// The scene.
    pub scene: Scene,
    /// What the camera looks at.
    pub center: Vec3,
    /// Distance from the centre in the plane at the first frame.
    pub radius: f32,
    /// Eye height above the centre at the first frame.
    pub height: f32,
    /// AO ray length.
    pub ao_distance: f32,
    /// Where the geometry came from: a file, or the built-in stand-in when
    /// the shared meshes are missing.
    pub source: String,
}

/// Frame `frame` of `frames` on the path: half an orbit, the distance and
/// height falling to half; from frame `turn_at` on, the camera looks the
/// other way (away from the centre, turned about the vertical at the same
/// pitch), a sudden 180-degree turn.
pub fn path_camera(s: &AnimatedScene, frame: u32, frames: u32, turn_at: Option<u32>) -> Camera {
    let t = frame as f32 / (frames.max(2) - 1) as f32;
    let r = s.radius * (1.0 - 0.5 * t);
    let h = s.height * (1.0 - 0.5 * t);
    let angle = 0.3 + std::f32::consts::PI * t;
    let eye = s.center + Vec3::new(r * angle.cos(), h, r * angle.sin());
    let target = if turn_at.is_some_and(|k| frame >= k) {
        // Turned about the vertical: the same downward pitch, the other way.
        let back = eye - s.center;
        eye + Vec3::new(back.x, -back.y, back.z)
    } else {
        s.center
    };
    Camera::look_at(eye, target, Vec3::Y, 50.0)
}

/// A scene by name; `scenes` is the shared scenes directory (ogre.obj,
/// bunny.obj). Without the files `ogre` and `crowd` are made of bumpy
/// icospheres of about the same triangle counts, and `source` says so.
pub fn by_name(name: &str, scenes: &Path) -> Result<AnimatedScene, Error> {
    match name.trim().to_ascii_lowercase().as_str() {
        "ogre" => {
            let (mesh, source) = shared_or(scenes, "ogre.obj", 5)?;
            single(&mesh, "ogre", source)
        }
        "crowd" => crowd(scenes),
        "instances" => Ok(instances()),
        _ => Err(Error::UnknownName {
            what: "animate scene",
            name: name.into(),
            known: NAMES,
        }),
    }
}

/// A mesh file as a single-mesh scene.
pub fn from_mesh(path: &Path) -> Result<AnimatedScene, Error> {
    let mesh = load_mesh(path)?;
    let stem = path
        .file_stem()
        .map_or_else(|| "mesh".into(), |s| s.to_string_lossy().into_owned());
    single(&mesh, &stem, path.display().to_string())
}

/// The shared mesh `file`, or an icosphere of `levels` subdivisions with
/// bumps when it is missing.
fn shared_or(scenes: &Path, file: &str, levels: u32) -> Result<(Mesh, String), Error> {
    let path = scenes.join(file);
    if path.is_file() {
        return Ok((load_mesh(&path)?, path.display().to_string()));
    }
    let m = icosphere(levels, |p| 0.15 * (5.0 * p.x).sin() * (4.0 * p.y).cos());
    Ok((
        Mesh {
            positions: m.positions,
            triangles: m.triangles,
        },
        format!("built-in stand-in ({} not found)", path.display()),
    ))
}

/// `mesh` scaled to unit height, standing on y = 0 at `at`, turned by `yaw`.
fn placed(mesh: &Mesh, at: Vec3, yaw: f32, size: f32) -> Vec<Vec3> {
    let b = mesh.bounds();
    let scale = size / (b.max.y - b.min.y).max(1e-6);
    let base = Vec3::new(b.center().x, b.min.y, b.center().z);
    let m = Affine3A::from_translation(at)
        * Affine3A::from_rotation_y(yaw)
        * Affine3A::from_scale(Vec3::splat(scale))
        * Affine3A::from_translation(-base);
    mesh.positions
        .iter()
        .map(|&p| m.transform_point3(p))
        .collect()
}

/// A ground of two triangles, `half` wide each way around the origin.
fn ground(scene: &mut Scene, half: f32) -> Result<(), Error> {
    let m = scene.add_material(Material::lambertian(Vec3::new(0.45, 0.42, 0.38)));
    let c = [
        Vec3::new(-half, 0.0, -half),
        Vec3::new(half, 0.0, -half),
        Vec3::new(half, 0.0, half),
        Vec3::new(-half, 0.0, half),
    ];
    scene.add_mesh(&c, &[[0, 2, 1], [0, 3, 2]], m)?;
    Ok(())
}

fn single(mesh: &Mesh, name: &str, source: String) -> Result<AnimatedScene, Error> {
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::new(0.7, 0.66, 0.6)));
    let positions = placed(mesh, Vec3::ZERO, 0.0, 1.0);
    scene.add_mesh(&positions, &mesh.triangles, m)?;
    ground(&mut scene, 6.0)?;
    scene.light = PointLight {
        position: Vec3::new(3.0, 6.0, 2.0),
        color: Vec3::ONE,
    };
    Ok(AnimatedScene {
        name: name.into(),
        scene,
        center: Vec3::new(0.0, 0.5, 0.0),
        radius: 2.4,
        height: 0.9,
        ao_distance: 0.15,
        source,
    })
}

/// An ogre at the centre, another and three bunnies on a ring around it,
/// flattened into one
/// flat scene of 456,465 triangles (with the shared meshes): the size of the
/// paper's larger scene. Ogres at the centre and on the ring, bunnies
/// between them, so that every direction of the path sees geometry.
fn crowd(scenes: &Path) -> Result<AnimatedScene, Error> {
    let (ogre, o_src) = shared_or(scenes, "ogre.obj", 6)?;
    let (bunny, b_src) = shared_or(scenes, "bunny.obj", 6)?;
    let mut scene = Scene::new();
    let skin = scene.add_material(Material::lambertian(Vec3::new(0.7, 0.66, 0.6)));
    let fur = scene.add_material(Material::lambertian(Vec3::new(0.6, 0.55, 0.45)));
    let ring = 3.0;
    let place = |k: f32| Vec3::new(ring * k.cos(), 0.0, ring * k.sin());
    let tau = std::f32::consts::TAU;
    let items: [(&Mesh, u32, Vec3, f32); 5] = [
        (&ogre, skin, Vec3::ZERO, 0.0),
        (&ogre, skin, place(0.5 * tau), 1.0),
        (&bunny, fur, place(0.1 * tau), 2.0),
        (&bunny, fur, place(0.35 * tau), 0.5),
        (&bunny, fur, place(0.75 * tau), 3.0),
    ];
    for (mesh, m, at, yaw) in items {
        let positions = placed(mesh, at, yaw, 1.2);
        scene.add_mesh(&positions, &mesh.triangles, m)?;
    }
    ground(&mut scene, 12.0)?;
    scene.light = PointLight {
        position: Vec3::new(4.0, 8.0, 3.0),
        color: Vec3::ONE,
    };
    Ok(AnimatedScene {
        name: "crowd".into(),
        scene,
        center: Vec3::new(0.0, 0.6, 0.0),
        radius: 2.2,
        height: 1.0,
        ao_distance: 0.2,
        source: format!("{o_src}; {b_src}"),
    })
}

/// The built-in `instances` scene (4,096 placed meshes, two levels).
fn instances() -> AnimatedScene {
    let preset = crate::scenes::instances();
    AnimatedScene {
        name: "instances".into(),
        scene: preset.scene,
        center: Vec3::new(-8.0, 1.0, 10.0),
        radius: 30.0,
        height: 9.0,
        ao_distance: 2.0,
        source: "built-in".into(),
    }
}
