//! Shared by the GPU tests and the benchmark example: opening the backend (or
//! skipping), the shared scene files, and the built-in benchmark scenes.
#![allow(dead_code)]

use prism_core::glam::Vec3;
use prism_core::rng::Pcg;
use prism_core::{
    Camera, Error, Integrator, Material, PointLight, Ray, RenderSettings, Scene, Sky,
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

/// An OBJ mesh as the reference hits number it: `v` lines are vertices (1-based,
/// negative = relative), each `f` line is fanned into (v0, vi, vi+1); other
/// lines and texture/normal indices are ignored.
pub fn load_obj(path: &Path) -> Result<(Vec<Vec3>, Vec<[u32; 3]>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut v = Vec::new();
    let mut tris = Vec::new();
    for (no, line) in text.lines().enumerate() {
        let mut it = line.split_whitespace();
        match it.next() {
            Some("v") => {
                let c: Vec<f32> = it
                    .take(3)
                    .map(|s| {
                        s.parse()
                            .map_err(|_| format!("line {}: bad vertex", no + 1))
                    })
                    .collect::<Result<_, _>>()?;
                if c.len() != 3 {
                    return Err(format!("line {}: vertex needs 3 coordinates", no + 1));
                }
                v.push(Vec3::new(c[0], c[1], c[2]));
            }
            Some("f") => {
                let mut idx = Vec::new();
                for tok in it {
                    let first = tok.split('/').next().unwrap_or_default();
                    let i: i64 = first
                        .parse()
                        .map_err(|_| format!("line {}: bad index {tok}", no + 1))?;
                    let i = if i < 0 { v.len() as i64 + i } else { i - 1 };
                    if i < 0 || i as usize >= v.len() {
                        return Err(format!("line {}: index {tok} out of range", no + 1));
                    }
                    idx.push(i as u32);
                }
                for k in 1..idx.len().saturating_sub(1) {
                    tris.push([idx[0], idx[k], idx[k + 1]]);
                }
            }
            _ => {}
        }
    }
    Ok((v, tris))
}

/// A scene of one OBJ mesh (grey Lambert), primitive ids in file order.
pub fn mesh_scene(path: &Path) -> Result<Scene, String> {
    let (v, t) = load_obj(path)?;
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::splat(0.7)));
    s.add_mesh(&v, &t, m).map_err(|e| e.to_string())?;
    Ok(s)
}

/// A `.rays` file: 8 little-endian f32 per ray.
pub fn load_rays(path: &Path) -> Result<Vec<Ray>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() % 32 != 0 {
        return Err(format!("{}: not a whole number of rays", path.display()));
    }
    Ok(bytes
        .chunks_exact(32)
        .map(bytemuck::pod_read_unaligned::<Ray>)
        .collect())
}

/// A `.hits` file: `(t: f32, prim: u32)` per ray.
pub fn load_hits(path: &Path) -> Result<Vec<(f32, u32)>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(bytes
        .chunks_exact(8)
        .map(|c| {
            let t = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            let p = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
            (t, p)
        })
        .collect())
}

/// Every `(mesh, ray set)` pair of the shared scenes.
pub const RAY_SETS: [(&str, &str); 4] = [
    ("bunny", "primary"),
    ("bunny", "diffuse"),
    ("ogre", "primary"),
    ("ogre", "diffuse"),
];

/// A scene with its camera, settings and size.
pub struct Preset {
    pub name: &'static str,
    pub scene: Scene,
    pub camera: Camera,
    pub settings: RenderSettings,
    pub width: u32,
    pub height: u32,
}

/// The `rtiow` built-in scene, the same as `prism::scenes::rtiow` (copied here
/// so that this crate's tests and benchmark need no dependency on the facade).
pub fn rtiow() -> Preset {
    let mut s = Scene::new();
    s.sky = Sky::rtiow();
    s.light = PointLight {
        position: Vec3::new(10.0, 10.0, 10.0),
        color: Vec3::ONE,
    };
    let ground = s.add_material(Material::lambertian(Vec3::splat(0.5)));
    s.add_sphere(Vec3::new(0.0, -1000.0, 0.0), 1000.0, ground);
    let mut rng = Pcg { state: 0x5EED_1E57 };
    let mut r = || rng.next_f32();
    for a in -11..11 {
        for b in -11..11 {
            let choose = r();
            let center = Vec3::new(a as f32 + 0.9 * r(), 0.2, b as f32 + 0.9 * r());
            if (center - Vec3::new(4.0, 0.2, 0.0)).length() <= 0.9 {
                continue;
            }
            let m = if choose < 0.8 {
                let albedo = Vec3::new(r() * r(), r() * r(), r() * r());
                Material::lambertian(albedo)
            } else if choose < 0.95 {
                let albedo = Vec3::new(0.5 + 0.5 * r(), 0.5 + 0.5 * r(), 0.5 + 0.5 * r());
                Material::metal(albedo, 0.5 * r())
            } else {
                Material::dielectric(1.5)
            };
            let id = s.add_material(m);
            s.add_sphere(center, 0.2, id);
        }
    }
    let glass = s.add_material(Material::dielectric(1.5));
    s.add_sphere(Vec3::new(0.0, 1.0, 0.0), 1.0, glass);
    let brown = s.add_material(Material::lambertian(Vec3::new(0.4, 0.2, 0.1)));
    s.add_sphere(Vec3::new(-4.0, 1.0, 0.0), 1.0, brown);
    let steel = s.add_material(Material::metal(Vec3::new(0.7, 0.6, 0.5), 0.0));
    s.add_sphere(Vec3::new(4.0, 1.0, 0.0), 1.0, steel);
    let camera = Camera {
        look_from: Vec3::new(13.0, 2.0, 3.0),
        look_at: Vec3::ZERO,
        up: Vec3::Y,
        vfov_degrees: 20.0,
        aperture: 0.1,
        focus_distance: 10.0,
    };
    let settings = RenderSettings {
        integrator: Integrator::Path,
        spp: 30,
        max_depth: 50,
        ..Default::default()
    };
    Preset {
        name: "rtiow",
        scene: s,
        camera,
        settings,
        width: 1280,
        height: 720,
    }
}

/// The `whitted19` built-in scene, the same as `prism::scenes::whitted19`.
pub fn whitted19() -> Preset {
    let mut s = Scene::new();
    s.sky = Sky::constant(Vec3::new(94.0, 156.0, 255.0) / 255.0);
    s.light = PointLight {
        position: Vec3::ONE,
        color: Vec3::ONE,
    };
    let grey = s.add_material(Material::lambertian(Vec3::splat(0.5)));
    s.add_sphere(Vec3::new(0.0, -1002.0, 0.0), 1000.0, grey);
    let rows: [(f32, f32, f32, usize); 3] = [
        (-4.0, -0.25, -1.5, 7),
        (-3.0, 0.25, -1.25, 6),
        (-2.0, 0.75, -1.0, 5),
    ];
    let mut k = 0;
    for (z, y, x0, n) in rows {
        for i in 0..n {
            let m = s.add_material(Material::lambertian(hue(k as f32 / 18.0)));
            s.add_sphere(Vec3::new(x0 + 0.5 * i as f32, y, z), 0.25, m);
            k += 1;
        }
    }
    let camera = Camera::look_at(
        Vec3::new(0.0, 0.0, 1.0),
        Vec3::new(0.0, 0.0, 0.0),
        Vec3::Y,
        90.0,
    );
    let settings = RenderSettings {
        integrator: Integrator::Whitted,
        spp: 1,
        max_depth: 1,
        ..Default::default()
    };
    Preset {
        name: "whitted19",
        scene: s,
        camera,
        settings,
        width: 8192,
        height: 8192,
    }
}

fn hue(h: f32) -> Vec3 {
    let f = |n: f32| {
        let k = (n + h * 6.0) % 6.0;
        0.9 - 0.8 * (k.min(4.0 - k).clamp(0.0, 1.0))
    };
    Vec3::new(f(5.0), f(3.0), f(1.0))
}

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
