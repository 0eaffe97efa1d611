//! Built-in scenes, generated in code: no files needed. The height-map scenes
//! (`city`, read from a file) are in [`crate::city`]; [`crate::builtin_scene`]
//! finds either kind by name.
//!
//! | name        | what                                                   | default                   |
//! |-------------|--------------------------------------------------------|---------------------------|
//! | `rtiow`     | final scene of *Ray Tracing in One Weekend*            | 1280x720, 30 spp, depth 50, path |
//! | `whitted19` | ground + 18 small spheres, point light, one mirror bounce | 8192x8192, 1 spp, whitted |
//! | `cornell`   | the Cornell box in triangles, area light               | 512x512, 64 spp, depth 16, path |
//! | `instances` | 4,096 placed meshes (rocks, trees, rings) over a ground, two levels | 1280x720, 8 spp, depth 8, path |
//! | `sunlit`    | spheres and a block on a ground under a sun, dim sky   | 640x360, 32 spp, depth 8, path |

use crate::Error;
use crate::procedural::{icosphere, torus, tree};
use glam::{Affine3A, Quat, Vec3};
use prism_core::rng::Pcg;
use prism_core::{
    Camera, Geometry, Instance, Integrator, Material, PointLight, RenderSettings, Scene, Sky, Sun,
};

/// Names of the built-in scenes.
pub const NAMES: &str = "rtiow, whitted19, cornell, instances, sunlit";

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
        "instances" => Ok(instances()),
        "sunlit" => Ok(sunlit()),
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

/// Instances in the `instances` scene.
pub const INSTANCE_COUNT: u32 = 4096;

/// The two-level scene: a 200 x 200 ground and [`INSTANCE_COUNT`] placements
/// of three meshes made in code (a bumpy rock of 1,280 triangles, a tree of
/// 64 and a ring of 1,152) on a jittered 64 x 64 grid, each turned, tilted
/// and scaled at random, half of them in a colour of their own (a material
/// override); camera above one corner looking across, RTIOW sky. A fixed PCG
/// stream places them, so the scene is the same everywhere.
///
/// Instance `i` is `instances[i]` of the scene (geometry 0 is the ground,
/// instanced once as the last instance); the transforms are what
/// [`instances_frame`] moves for a moving frame.
pub fn instances() -> Preset {
    let mut s = Scene::new();
    s.sky = Sky::rtiow();
    s.light = PointLight {
        position: Vec3::new(60.0, 80.0, 40.0),
        color: Vec3::ONE,
    };
    let ground_m = s.add_material(Material::lambertian(Vec3::new(0.45, 0.42, 0.38)));
    let rock_m = s.add_material(Material::lambertian(Vec3::new(0.55, 0.52, 0.5)));
    let bark_m = s.add_material(Material::lambertian(Vec3::new(0.2, 0.45, 0.15)));
    let ring_m = s.add_material(Material::metal(Vec3::new(0.85, 0.75, 0.5), 0.15));
    let palette: Vec<u32> = (0..8)
        .map(|k| {
            let c = hue(k as f32 / 8.0);
            if k % 3 == 0 {
                s.add_material(Material::metal(c, 0.3))
            } else {
                s.add_material(Material::lambertian(c))
            }
        })
        .collect();
    let mut ground = Geometry::new();
    let g = 600.0;
    let c = [
        Vec3::new(-g, 0.0, -g),
        Vec3::new(g, 0.0, -g),
        Vec3::new(g, 0.0, g),
        Vec3::new(-g, 0.0, g),
    ];
    // ok: four finite corners and two triangles over them.
    let _ = ground.add_mesh(&c, &[[0, 2, 1], [0, 3, 2]], ground_m);
    let bumps = |p: Vec3| 0.15 * (3.1 * p.x).sin() * (2.3 * p.y).cos() * (2.7 * p.z + 1.0).sin();
    let rock = icosphere(3, bumps);
    let tree = tree(8);
    let ring = torus(0.8, 0.25, 48, 12);
    let mut geometries = vec![s.add_geometry(ground)];
    for (mesh, m) in [(&rock, rock_m), (&tree, bark_m), (&ring, ring_m)] {
        // ok: the generators' indices are in range and their vertices finite.
        if let Ok(geom) = Geometry::mesh(&mesh.positions, &mesh.triangles, m) {
            geometries.push(s.add_geometry(geom));
        }
    }
    let mut rng = Pcg { state: 0x4573_ACE5 };
    for i in 0..INSTANCE_COUNT {
        let kind = 1 + (rng.next_f32() * 3.0) as usize % 3;
        let transform = placement(i, kind, &mut rng);
        let mut inst = Instance::new(geometries[kind], transform).with_user_id(i);
        if rng.next_f32() < 0.5 {
            inst = inst.with_material(palette[(rng.next_f32() * 8.0) as usize % 8]);
        }
        s.add_instance(inst);
    }
    s.add_instance(Instance::new(geometries[0], Affine3A::IDENTITY).with_user_id(INSTANCE_COUNT));
    let camera = Camera::look_at(
        Vec3::new(-30.0, 10.0, 32.0),
        Vec3::new(-8.0, 0.0, 10.0),
        Vec3::Y,
        45.0,
    );
    let settings = RenderSettings {
        integrator: Integrator::Path,
        spp: 8,
        max_depth: 8,
        ao_distance: 3.0,
        ..Default::default()
    };
    Preset {
        name: "instances",
        scene: s,
        camera,
        settings,
        width: 1280,
        height: 720,
    }
}

/// Where instance `i` of the `instances` scene stands: its cell of the 64 x
/// 64 grid (1.5 units apart, centred), jittered, turned about +y, tilted (the
/// rings lean), scaled 0.6-1.4, its base on the ground.
fn placement(i: u32, kind: usize, rng: &mut Pcg) -> Affine3A {
    let (gx, gz) = ((i % 64) as f32, (i / 64) as f32);
    let x = (gx - 31.5) * 1.5 + (rng.next_f32() - 0.5);
    let z = (gz - 31.5) * 1.5 + (rng.next_f32() - 0.5);
    let turn = rng.next_f32() * std::f32::consts::TAU;
    let scale = 0.6 + 0.8 * rng.next_f32();
    let (lean, lift) = match kind {
        3 => (0.6 + 0.6 * rng.next_f32(), 0.95),
        1 => (0.0, 0.6),
        _ => (0.0, 0.0),
    };
    let rotation = Quat::from_rotation_y(turn) * Quat::from_rotation_x(lean);
    Affine3A::from_scale_rotation_translation(
        Vec3::splat(scale * if kind == 1 { 0.5 } else { 0.6 }),
        rotation,
        Vec3::new(x, lift * scale * 0.5, z),
    )
}

/// The transforms of a moving frame of the `instances` scene: frame `frame`
/// of an animation in which `count` instances (the first ones) bob and turn
/// in place. Returns `(instance, transform)` pairs for a
/// [`prism_core::SceneUpdate`].
pub fn instances_frame(scene: &Scene, frame: u32, count: u32) -> Vec<(u32, Affine3A)> {
    let t = frame as f32 * 0.05;
    scene
        .instances()
        .iter()
        .take(count.min(INSTANCE_COUNT) as usize)
        .enumerate()
        .map(|(i, inst)| {
            let phase = i as f32 * 0.37;
            let bob = Affine3A::from_translation(Vec3::new(0.0, 0.3 * (t + phase).sin(), 0.0));
            let turn = Affine3A::from_rotation_y(0.5 * (t * 0.7 + phase).sin());
            (i as u32, bob * inst.transform * turn)
        })
        .collect()
}

/// An outdoor scene lit by a sun: a diffuse ground, a diffuse, a fuzzy metal,
/// a glass and a half-varnished sphere, and a block of triangles casting a
/// shadow, under a dim blue sky. The sun is 4 degrees in angular radius (eight
/// times ours): soft shadows, and small enough that finding it by chance hits
/// alone (`sun_nee` off) is visibly noisier, yet large enough for that to
/// converge in a test's time.
pub fn sunlit() -> Preset {
    let mut s = Scene::new();
    s.sky = Sky {
        horizon: Vec3::new(0.12, 0.14, 0.18),
        zenith: Vec3::new(0.10, 0.18, 0.38),
    };
    s.light = PointLight {
        position: Vec3::new(-6.0, 8.0, 5.0),
        color: Vec3::ONE,
    };
    let dir = Vec3::new(-0.55, 0.62, 0.56).normalize();
    let distance = 100.0;
    let radius = distance * 4f32.to_radians().sin();
    s.sun = Some(Sun::new(
        dir * distance,
        radius,
        Vec3::new(1.0, 0.93, 0.82),
        200.0,
    ));
    let ground = s.add_material(Material::lambertian(Vec3::new(0.55, 0.52, 0.48)));
    let g = 40.0;
    let (a, b, c, d) = (
        Vec3::new(-g, 0.0, -g),
        Vec3::new(g, 0.0, -g),
        Vec3::new(g, 0.0, g),
        Vec3::new(-g, 0.0, g),
    );
    s.add_triangle(a, c, b, ground);
    s.add_triangle(a, d, c, ground);
    let red = s.add_material(Material::lambertian(Vec3::new(0.75, 0.2, 0.15)));
    s.add_sphere(Vec3::new(-1.6, 0.7, 0.2), 0.7, red);
    let metal = s.add_material(Material::metal(Vec3::new(0.85, 0.85, 0.9), 0.2));
    s.add_sphere(Vec3::new(0.1, 0.6, 0.9), 0.6, metal);
    let glass = s.add_material(Material::dielectric(1.5));
    s.add_sphere(Vec3::new(1.5, 0.5, 0.1), 0.5, glass);
    let varnish = s.add_material(Material::blend(
        Material::lambertian(Vec3::new(0.2, 0.45, 0.75)),
        Material::metal(Vec3::ONE, 0.05),
        0.3,
    ));
    s.add_sphere(Vec3::new(2.6, 0.45, 1.4), 0.45, varnish);
    // A block behind the spheres: 12 triangles, outward winding.
    let block = s.add_material(Material::lambertian(Vec3::new(0.8, 0.78, 0.7)));
    let (lo, hi) = (Vec3::new(-0.9, 0.0, -2.2), Vec3::new(1.1, 1.6, -1.3));
    let corner = |i: u32| {
        Vec3::new(
            if i & 1 != 0 { hi.x } else { lo.x },
            if i & 2 != 0 { hi.y } else { lo.y },
            if i & 4 != 0 { hi.z } else { lo.z },
        )
    };
    let faces: [[u32; 3]; 12] = [
        [0, 2, 1],
        [1, 2, 3],
        [4, 5, 6],
        [5, 7, 6],
        [0, 1, 4],
        [1, 5, 4],
        [2, 6, 3],
        [3, 6, 7],
        [0, 4, 2],
        [2, 4, 6],
        [1, 3, 5],
        [3, 7, 5],
    ];
    for [i, j, k] in faces {
        s.add_triangle(corner(i), corner(j), corner(k), block);
    }
    let camera = Camera::look_at(
        Vec3::new(0.6, 1.7, 6.0),
        Vec3::new(0.4, 0.55, 0.0),
        Vec3::Y,
        38.0,
    );
    let settings = RenderSettings {
        integrator: Integrator::Path,
        spp: 32,
        max_depth: 8,
        ..Default::default()
    };
    Preset {
        name: "sunlit",
        scene: s,
        camera,
        settings,
        width: 640,
        height: 360,
    }
}
