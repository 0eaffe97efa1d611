//! Built-in scenes, generated in code: no files needed.
//!
//! | name        | what                                                   | default                   |
//! |-------------|--------------------------------------------------------|---------------------------|
//! | `rtiow`     | final scene of *Ray Tracing in One Weekend*            | 1280x720, 30 spp, depth 50, path |
//! | `whitted19` | ground + 18 small spheres, point light, one mirror bounce | 8192x8192, 1 spp, whitted |
//! | `cornell`   | the Cornell box in triangles, area light               | 512x512, 64 spp, depth 16, path |

use crate::Error;
use glam::Vec3;
use prism_core::rng::Pcg;
use prism_core::{Camera, Integrator, Material, PointLight, RenderSettings, Scene, Sky};

/// Names of the built-in scenes.
pub const NAMES: &str = "rtiow, whitted19, cornell";

/// A scene with the camera, settings and image size it is meant to be seen with.
#[derive(Clone, Debug)]
pub struct Preset {
    /// Scene name.
    pub name: &'static str,
    /// The scene.
    pub scene: Scene,
    /// The camera.
    pub camera: Camera,
    /// Default render settings.
    pub settings: RenderSettings,
    /// Default width.
    pub width: u32,
    /// Default height.
    pub height: u32,
}

/// A built-in scene by name (ASCII case and surrounding spaces ignored, as for
/// backend names).
pub fn by_name(name: &str) -> Result<Preset, Error> {
    match name.trim().to_ascii_lowercase().as_str() {
        "rtiow" => Ok(rtiow()),
        "whitted19" => Ok(whitted19()),
        "cornell" => Ok(cornell()),
        _ => Err(Error::UnknownName {
            what: "scene",
            name: name.into(),
            known: NAMES,
        }),
    }
}

/// The final scene of *Ray Tracing in One Weekend*: ground sphere of radius 1000,
/// a 22x22 grid of small spheres (80% diffuse, 15% metal, 5% glass), three big
/// spheres; camera from (13, 2, 3) to the origin, vfov 20, aperture 0.1, focus 10.
///
/// The book's random numbers are replaced by a fixed PCG stream, so the scene is
/// the same on every run and every machine.
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

/// The Whitted benchmark scene: grey ground sphere (r = 1000 at y = -1002) and 18
/// spheres of radius 0.25 in three rows (7 at z = -4, 6 at z = -3, 5 at z = -2),
/// each its own colour; white point light at (1, 1, 1); sky (94, 156, 255)/255;
/// camera at (0, 0, 1) looking down -z with a 90 degree field of view.
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

/// A saturated colour around the hue circle (`h` in `[0, 1)`).
fn hue(h: f32) -> Vec3 {
    let f = |n: f32| {
        let k = (n + h * 6.0) % 6.0;
        0.9 - 0.8 * (k.min(4.0 - k).clamp(0.0, 1.0))
    };
    Vec3::new(f(5.0), f(3.0), f(1.0))
}

/// The Cornell box (the layout of *Ray Tracing: The Next Week*, scaled by 1/100):
/// white floor, ceiling and back wall, red left and green right walls, two white
/// boxes turned -18 and 15 degrees, and an area light under the ceiling.
pub fn cornell() -> Preset {
    let mut s = Scene::new();
    s.sky = Sky::BLACK;
    s.light = PointLight {
        position: Vec3::new(2.78, 5.4, 2.795),
        color: Vec3::ONE,
    };
    let white = s.add_material(Material::lambertian(Vec3::splat(0.73)));
    let red = s.add_material(Material::lambertian(Vec3::new(0.65, 0.05, 0.05)));
    let green = s.add_material(Material::lambertian(Vec3::new(0.12, 0.45, 0.15)));
    // A larger, dimmer light than the classic 130x105 one at 15: the path
    // integrator finds lights only by chance, and this area converges ~7x faster.
    let light = s.add_material(Material::emissive(Vec3::splat(4.0)));
    let l = 5.55;
    let p = |x: f32, y: f32, z: f32| Vec3::new(x, y, z);
    let quad = |s: &mut Scene, a: Vec3, b: Vec3, c: Vec3, d: Vec3, m: u32| {
        s.add_triangle(a, b, c, m);
        s.add_triangle(a, c, d, m);
    };
    quad(
        &mut s,
        p(0.0, 0.0, 0.0),
        p(l, 0.0, 0.0),
        p(l, 0.0, l),
        p(0.0, 0.0, l),
        white,
    ); // floor
    quad(
        &mut s,
        p(0.0, l, 0.0),
        p(0.0, l, l),
        p(l, l, l),
        p(l, l, 0.0),
        white,
    ); // ceiling
    quad(
        &mut s,
        p(0.0, 0.0, l),
        p(l, 0.0, l),
        p(l, l, l),
        p(0.0, l, l),
        white,
    ); // back
    quad(
        &mut s,
        p(l, 0.0, 0.0),
        p(l, l, 0.0),
        p(l, l, l),
        p(l, 0.0, l),
        red,
    ); // left in the image
    quad(
        &mut s,
        p(0.0, 0.0, 0.0),
        p(0.0, 0.0, l),
        p(0.0, l, l),
        p(0.0, l, 0.0),
        green,
    ); // right
    quad(
        &mut s,
        p(1.13, 5.54, 1.27),
        p(4.43, 5.54, 1.27),
        p(4.43, 5.54, 4.32),
        p(1.13, 5.54, 4.32),
        light,
    );
    add_box(
        &mut s,
        Vec3::splat(1.65),
        -18.0,
        Vec3::new(1.30, 0.0, 0.65),
        white,
    );
    add_box(
        &mut s,
        Vec3::new(1.65, 3.30, 1.65),
        15.0,
        Vec3::new(2.65, 0.0, 2.95),
        white,
    );
    let camera = Camera::look_at(p(2.78, 2.78, -8.0), p(2.78, 2.78, 0.0), Vec3::Y, 40.0);
    let settings = RenderSettings {
        integrator: Integrator::Path,
        spp: 64,
        max_depth: 16,
        ..Default::default()
    };
    Preset {
        name: "cornell",
        scene: s,
        camera,
        settings,
        width: 512,
        height: 512,
    }
}

/// A box `[0, size]` turned `degrees` about +y, then moved by `offset` (12 triangles).
fn add_box(s: &mut Scene, size: Vec3, degrees: f32, offset: Vec3, material: u32) {
    let rot = glam::Quat::from_rotation_y(degrees.to_radians());
    let corner = |i: u32| {
        let c = Vec3::new((i & 1) as f32, ((i >> 1) & 1) as f32, ((i >> 2) & 1) as f32) * size;
        rot * c + offset
    };
    // Faces as corner indices (bit 0 = x, bit 1 = y, bit 2 = z), counter-clockwise from outside.
    const FACES: [[u32; 4]; 6] = [
        [0, 2, 3, 1],
        [4, 5, 7, 6],
        [0, 1, 5, 4],
        [2, 6, 7, 3],
        [0, 4, 6, 2],
        [1, 3, 7, 5],
    ];
    for f in FACES {
        let [a, b, c, d] = f.map(corner);
        s.add_triangle(a, b, c, material);
        s.add_triangle(a, c, d, material);
    }
}
