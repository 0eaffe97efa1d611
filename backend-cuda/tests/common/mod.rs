//! Shared by the GPU tests and the benchmark example: opening the backend (or
//! skipping), the shared scene files, and the built-in benchmark scenes.
#![allow(dead_code)]

use prism_core::glam::{Affine3A, Vec3};
use prism_core::reference::{AgreementCounts, instance_scales};
use prism_core::rng::Pcg;
use prism_core::{
    Camera, Error, Geometry, Hit, Instance, Integrator, Material, PointLight, Ray, RenderSettings,
    Scene, Sky,
};
use std::path::{Path, PathBuf};

/// The CUDA backend, or `None` after saying why the GPU tests skip. With
/// `PRISM_REQUIRE_CUDA=1` a missing device is a failure instead.
pub fn gpu_or_skip() -> Option<prism_cuda::CudaBackend> {
    match prism_cuda::CudaBackend::new() {
        Ok(b) => Some(b),
        Err(Error::BackendUnavailable { reason, .. }) => {
            let required = std::env::var("PRISM_REQUIRE_CUDA").is_ok_and(|v| v == "1");
            assert!(
                !required,
                "PRISM_REQUIRE_CUDA=1 but CUDA is unavailable: {reason}"
            );
            eprintln!(
                "SKIPPED: no CUDA device ({reason}); set PRISM_REQUIRE_CUDA=1 to make this a failure"
            );
            None
        }
        Err(e) => panic!("the CUDA backend failed to open: {e}"),
    }
}

/// The shared scene directory: `$PRISM_SCENES` (as the CLI and the other
/// backends' tests read it), else `../shared/scenes` beside the workspace, else
/// `.gpu/scenes` in it. `None` when there is none; then the Embree tests skip,
/// unless `PRISM_REQUIRE_SCENES=1`, which fails them here.
pub fn scenes_dir() -> Option<PathBuf> {
    let found = match std::env::var_os("PRISM_SCENES").filter(|d| !d.is_empty()) {
        Some(d) => Some(PathBuf::from(d)).filter(|d| d.join("bunny.obj").is_file()),
        None => {
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
            [root.join("../shared/scenes"), root.join(".gpu/scenes")]
                .into_iter()
                .find(|d| d.join("bunny.obj").is_file())
        }
    };
    assert!(
        found.is_some() || !std::env::var("PRISM_REQUIRE_SCENES").is_ok_and(|v| v == "1"),
        "PRISM_REQUIRE_SCENES=1 but no scene directory holds bunny.obj ($PRISM_SCENES, ../shared/scenes, .gpu/scenes)"
    );
    found
}

/// A scene of one mesh file of the shared scenes (grey Lambert), primitive ids
/// in file order, as the facade's conformance run loads it.
pub fn mesh_scene(path: &Path) -> Result<Scene, String> {
    let mesh = prism::mesh::load_mesh(path).map_err(|e| e.to_string())?;
    let (scene, _) = prism::mesh_scene(&mesh, Material::lambertian(Vec3::splat(0.7)))
        .map_err(|e| e.to_string())?;
    Ok(scene)
}

/// A `.rays` file of the shared scenes.
pub fn load_rays(path: &Path) -> Result<Vec<Ray>, String> {
    prism::rays::read_rays(path).map_err(|e| e.to_string())
}

/// A `.hits` file of the shared scenes: `(t, prim)` per ray.
pub fn load_hits(path: &Path) -> Result<Vec<(f32, u32)>, String> {
    prism::rays::read_hits(path).map_err(|e| e.to_string())
}

/// An `.instances` file of the shared scenes: object-to-world transforms.
pub fn load_instances(path: &Path) -> Result<Vec<Affine3A>, String> {
    prism::rays::read_instances(path).map_err(|e| e.to_string())
}

/// An `.ihits` file of the shared scenes: `(t, prim, instance)` per ray.
pub fn load_ihits(path: &Path) -> Result<Vec<(f32, u32, u32)>, String> {
    prism::rays::read_instance_hits(path).map_err(|e| e.to_string())
}

/// A two-level scene of one mesh file of the shared scenes (grey Lambert,
/// primitive ids in file order) placed by `transforms`, instance `i` by
/// `transforms[i]`.
pub fn instanced_scene(mesh_path: &Path, transforms: &[Affine3A]) -> Result<Scene, String> {
    let mesh = prism::mesh::load_mesh(mesh_path).map_err(|e| e.to_string())?;
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::splat(0.7)));
    let g = Geometry::mesh(&mesh.positions, &mesh.triangles, m).map_err(|e| e.to_string())?;
    let g = scene.add_geometry(g);
    scene
        .add_instances(transforms.iter().map(|t| Instance::new(g, *t)))
        .map_err(|e| e.to_string())?;
    Ok(scene)
}

/// Hits against a reference `(t, prim, instance)` under core's rule for
/// instanced hits ([`prism_core::reference::AgreementCounts::compare_instanced`]),
/// the floor of the tolerance from `scene`'s instances where given
/// ([`prism_core::reference::instance_scales`]; none: the flat rule's floor).
pub fn instanced_agreement(
    rays: &[Ray],
    hits: &[Hit],
    reference: &[(f32, u32, u32)],
    scene: Option<&Scene>,
) -> AgreementCounts {
    let scales = scene.map_or_else(Vec::new, |s| instance_scales(s, rays, reference));
    AgreementCounts::compare_instanced(rays, hits, reference, &scales)
}

/// `scene` as a two-level scene: its own primitives one geometry, placed
/// once by the identity (the same primitive ids, materials, sky and light).
pub fn as_one_identity_instance(scene: &Scene) -> Scene {
    let mut s = Scene::new();
    s.sky = scene.sky;
    s.light = scene.light;
    for m in scene.materials() {
        s.add_material(*m);
    }
    let g = s.add_geometry(scene.own_geometry().clone());
    s.add_instance(Instance::new(g, Affine3A::IDENTITY));
    s
}

/// Every `(mesh, ray set)` pair of the shared scenes.
pub const RAY_SETS: [(&str, &str); 4] = [
    ("bunny", "primary"),
    ("bunny", "diffuse"),
    ("ogre", "primary"),
    ("ogre", "diffuse"),
];

/// The instanced ray sets of the shared scenes (`instances/`): the mesh,
/// the placements' file stem, and the ray sets.
pub const INSTANCED_SETS: [(&str, &str, &str); 2] = [
    ("bunny", "bunny-x1000", "diffuse"),
    ("bunny", "bunny-x1000", "primary"),
];

/// The built-in benchmark scenes, from the facade (the scenes `prism bench` renders).
#[allow(unused_imports)] // lane_use needs rtiow alone
pub use prism::scenes::{Preset, rtiow, whitted19};

/// A small Cornell-like box in triangles with an area light, a glass sphere and
/// a blended (varnished) sphere: every lobe and both primitive kinds.
pub fn cornell_mix() -> Preset {
    let mut s = Scene::new();
    s.sky = Sky::BLACK;
    s.light = PointLight {
        position: Vec3::new(0.0, 1.8, 0.0),
        color: Vec3::ONE,
    };
    let white = s.add_material(Material::lambertian(Vec3::splat(0.73)));
    let red = s.add_material(Material::lambertian(Vec3::new(0.65, 0.05, 0.05)));
    let green = s.add_material(Material::lambertian(Vec3::new(0.12, 0.45, 0.15)));
    let light = s.add_material(Material::emissive(Vec3::splat(8.0)));
    let glass = s.add_material(Material::dielectric(1.5));
    let varnish = s.add_material(Material::blend(
        Material::lambertian(Vec3::new(0.2, 0.3, 0.8)),
        Material::metal(Vec3::splat(0.9), 0.1),
        0.4,
    ));
    let p = Vec3::new;
    let quad = |s: &mut Scene, a: Vec3, b: Vec3, c: Vec3, d: Vec3, m: u32| {
        s.add_triangle(a, b, c, m);
        s.add_triangle(a, c, d, m);
    };
    quad(
        &mut s,
        p(-2.0, -2.0, -2.0),
        p(2.0, -2.0, -2.0),
        p(2.0, -2.0, 2.0),
        p(-2.0, -2.0, 2.0),
        white,
    );
    quad(
        &mut s,
        p(-2.0, 2.0, -2.0),
        p(-2.0, 2.0, 2.0),
        p(2.0, 2.0, 2.0),
        p(2.0, 2.0, -2.0),
        white,
    );
    quad(
        &mut s,
        p(-2.0, -2.0, -2.0),
        p(-2.0, 2.0, -2.0),
        p(2.0, 2.0, -2.0),
        p(2.0, -2.0, -2.0),
        white,
    );
    quad(
        &mut s,
        p(-2.0, -2.0, -2.0),
        p(-2.0, -2.0, 2.0),
        p(-2.0, 2.0, 2.0),
        p(-2.0, 2.0, -2.0),
        red,
    );
    quad(
        &mut s,
        p(2.0, -2.0, -2.0),
        p(2.0, 2.0, -2.0),
        p(2.0, 2.0, 2.0),
        p(2.0, -2.0, 2.0),
        green,
    );
    quad(
        &mut s,
        p(-0.6, 1.99, -0.6),
        p(-0.6, 1.99, 0.6),
        p(0.6, 1.99, 0.6),
        p(0.6, 1.99, -0.6),
        light,
    );
    s.add_sphere(p(-0.8, -1.3, -0.5), 0.7, glass);
    s.add_sphere(p(0.9, -1.4, 0.3), 0.6, varnish);
    let camera = Camera::look_at(p(0.0, 0.0, 6.5), p(0.0, 0.0, 0.0), Vec3::Y, 40.0);
    let settings = RenderSettings {
        integrator: Integrator::Path,
        spp: 16,
        max_depth: 8,
        ..Default::default()
    };
    Preset {
        name: "cornell_mix",
        scene: s,
        camera,
        settings,
        width: 96,
        height: 96,
    }
}

/// A lamp in a crowd: a point light with a row of ten small spheres leaving it
/// (the cells of the light's grid towards them hold more candidates than a
/// cell has slots, so their shadow rays walk the tree), 30 spheres and a
/// triangle scattered below it, and a ground sphere; Whitted with a mirror
/// bounce, AO with shadow rays.
pub fn lamp_in_a_crowd() -> Preset {
    let mut s = Scene::new();
    s.sky = Sky::constant(Vec3::new(0.4, 0.6, 0.9));
    let lamp = Vec3::new(0.0, 2.0, 0.0);
    s.light = PointLight {
        position: lamp,
        color: Vec3::ONE,
    };
    let grey = s.add_material(Material::lambertian(Vec3::splat(0.5)));
    let red = s.add_material(Material::lambertian(Vec3::new(0.8, 0.2, 0.1)));
    s.add_sphere(Vec3::new(0.0, -1001.0, 0.0), 1000.0, grey);
    let row = Vec3::new(0.3, -1.0, -0.4).normalize();
    for k in 0..10 {
        s.add_sphere(lamp + row * (0.4 + 0.25 * k as f32), 0.1, red);
    }
    let mut rng = Pcg { state: 0x1A4B };
    let mut r = move || rng.next_f32();
    for _ in 0..30 {
        let c = Vec3::new(r() * 4.0 - 2.0, r() * 1.5 - 1.0, r() * 4.0 - 2.0);
        s.add_sphere(c, 0.05 + 0.2 * r(), grey);
    }
    s.add_triangle(
        Vec3::new(-1.5, -0.9, -1.0),
        Vec3::new(1.5, -0.9, -1.0),
        Vec3::new(0.0, 0.5, -1.5),
        red,
    );
    let camera = Camera::look_at(Vec3::new(0.0, 1.0, 4.0), Vec3::ZERO, Vec3::Y, 60.0);
    let settings = RenderSettings {
        integrator: Integrator::Whitted,
        spp: 1,
        max_depth: 1,
        ao_shadows: true,
        ..Default::default()
    };
    Preset {
        name: "lamp_in_a_crowd",
        scene: s,
        camera,
        settings,
        width: 96,
        height: 96,
    }
}

/// A random scene of `spheres` spheres and `triangles` triangles in a box of size 10.
pub fn random_scene(seed: u32, spheres: usize, triangles: usize) -> Scene {
    let mut rng = Pcg { state: seed };
    let mut r = move || rng.next_f32();
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
    for _ in 0..spheres {
        let c = Vec3::new(r(), r(), r()) * 10.0 - 5.0;
        s.add_sphere(c, 0.05 + 0.5 * r(), m);
    }
    for _ in 0..triangles {
        let c = Vec3::new(r(), r(), r()) * 10.0 - 5.0;
        let e = |r: &mut dyn FnMut() -> f32| Vec3::new(r(), r(), r()) - 0.5;
        let (a, b) = (e(&mut r), e(&mut r));
        s.add_triangle(c, c + a, c + b, m);
    }
    s
}

/// Random rays through a box of size 12: from random points to random points,
/// with a few ray segments (some starting behind their origin, `tmin < 0`) and
/// axis-aligned directions.
pub fn random_rays(seed: u32, n: usize) -> Vec<Ray> {
    let mut rng = Pcg {
        state: seed ^ 0x9E37_79B9,
    };
    let mut r = move || rng.next_f32();
    (0..n)
        .map(|i| {
            let o = Vec3::new(r(), r(), r()) * 12.0 - 6.0;
            let mut d = Vec3::new(r(), r(), r()) * 2.0 - 1.0;
            if i % 17 == 0 {
                d = Vec3::new(0.0, if i % 2 == 0 { 1.0 } else { -1.0 }, 0.0);
            }
            if d == Vec3::ZERO {
                d = Vec3::X;
            }
            if i % 5 == 0 {
                Ray::segment(o, d, 0.1, 3.0)
            } else if i % 7 == 3 {
                Ray::segment(o, d, -2.0, f32::INFINITY)
            } else {
                Ray::new(o, d)
            }
        })
        .collect()
}
