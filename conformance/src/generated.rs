//! Cases no file holds, made from a seed, and the oracle that answers them: CPU
//! brute force, prism-core's own intersection functions over every primitive.
//!
//! Each family aims at a place where ray tracers go wrong: random soups and
//! sphere sets (the BVH builder and traversal on arbitrary input), rays through
//! shared edges and vertices (watertightness), rays leaving surfaces
//! (self-intersection), scenes from 1e-4 to 1e5 units (precision), rays with zero
//! direction components (the slab test's infinities), and meshes with duplicate
//! vertices, zero-area triangles, slivers and duplicate triangles.

use glam::{Affine3A, DAffine3, DMat3, Quat, Vec3};
use prism_core::integrator::spawn_tmin;
use prism_core::intersect::{RayPre, ray_sphere, ray_triangle};
use prism_core::rng::Pcg;
use prism_core::scene::PrimRef;
use prism_core::{Geometry, Hit, Instance, Material, Ray, Scene};

/// One generated case: a scene, a batch of rays, and where it came from.
#[derive(Clone, Debug)]
pub struct GeneratedCase {
    /// Unique name (`family/variant/seed`).
    pub name: String,
    /// The family (`soup`, `spheres`, `mixed`, `grazing`, `surface`, `scale`, `axis`,
    /// `degenerate`, `instances`).
    pub family: &'static str,
    /// What the case holds, for a person.
    pub description: String,
    /// The seed the case was made from.
    pub seed: u32,
    /// The scene.
    pub scene: Scene,
    /// The rays.
    pub rays: Vec<Ray>,
}

/// The answers of the oracle for one batch.
#[derive(Clone, Debug, Default)]
pub struct OracleAnswers {
    /// Closest hit of each ray (`prim` is the scene primitive id).
    pub hits: Vec<Hit>,
    /// Whether anything lies on each ray.
    pub occluded: Vec<bool>,
}

enum Prim {
    Triangle([Vec3; 3]),
    Sphere(Vec3, f32),
}

/// Every primitive of `scene` with its id (one the scene cannot resolve is left
/// out, and the ids of the others stay theirs).
fn prims(scene: &Scene) -> Vec<(u32, Prim)> {
    (0..scene.primitive_count() as u32)
        .filter_map(|id| {
            let prim = match scene.primitive(id)? {
                PrimRef::Triangle(t) => scene.triangle(t).map(Prim::Triangle),
                PrimRef::Sphere(s) => scene
                    .spheres()
                    .get(s as usize)
                    .map(|cr| Prim::Sphere(cr.truncate(), cr.w)),
            }?;
            Some((id, prim))
        })
        .collect()
}

fn test(pre: &RayPre, p: &Prim, tmin: f32, tmax: f32) -> Option<(f32, f32, f32)> {
    match p {
        Prim::Triangle([a, b, c]) => ray_triangle(pre, *a, *b, *c, tmin, tmax),
        Prim::Sphere(center, r) => {
            ray_sphere(pre.origin, pre.dir, *center, *r, tmin, tmax).map(|t| (t, 0.0, 0.0))
        }
    }
}

/// Answer every ray by testing every primitive of `scene` with prism-core's
/// `ray_triangle` / `ray_sphere`, in primitive id order, keeping a hit only when
/// it is strictly nearer (so of two primitives at the same `t` the lower id wins;
/// the agreement rule counts the other as a tie).
///
/// A two-level scene is answered by [`instanced_brute_force`].
pub fn brute_force(scene: &Scene, rays: &[Ray]) -> OracleAnswers {
    if scene.is_two_level() {
        return instanced_brute_force(scene, rays);
    }
    let prims = prims(scene);
    let mut out = OracleAnswers {
        hits: Vec::with_capacity(rays.len()),
        occluded: Vec::with_capacity(rays.len()),
    };
    for ray in rays {
        let pre = RayPre::new(ray);
        let mut best = Hit::MISS;
        let mut tmax = ray.tmax;
        let mut any = false;
        for &(id, ref p) in &prims {
            if let Some((t, u, v)) = test(&pre, p, ray.tmin, tmax) {
                tmax = t;
                any = true;
                best = Hit::new(t, u, v, id, 0);
            }
        }
        out.hits.push(best);
        out.occluded.push(any);
    }
    out
}

/// One instance as the instanced oracle tests it: its triangles carried into
/// the world (in `f64`, rounded once), its spheres with the inverse transform
/// that carries a ray into their object space.
struct PlacedPrims {
    mask: u32,
    triangles: Vec<(u32, [Vec3; 3])>,
    spheres: Vec<(u32, Vec3, f32)>,
    world_to_object: DAffine3,
}

/// The oracle of a two-level scene: every instance the ray's mask lets it
/// see, every primitive of its geometry, with prism-core's own tests.
///
/// Triangles are tested in the world: the oracle carries each instance's
/// triangles through its transform in `f64`, rounding each vertex once, and
/// tests them with the world ray, so that it shares nothing with the
/// backends' walk, which carries the ray into object space instead (with
/// `f32` rows). Spheres cannot be: a sphere under a non-uniform scale is an
/// ellipsoid, which prism-core has no test for, so a sphere is tested in its
/// object space with the ray carried there exactly (the inverse and the
/// products in `f64`, rounded once); its `t` is the world's, the direction
/// not being renormalised. The two paths round differently from the walk, so
/// the agreement rule's tolerance, not bit equality, judges them (ties
/// counted). Of two hits at the same `t` the first instance and the lower id
/// win.
pub fn instanced_brute_force(scene: &Scene, rays: &[Ray]) -> OracleAnswers {
    let placed: Vec<PlacedPrims> = scene
        .instances()
        .iter()
        .filter_map(|inst| {
            let g = scene.geometries().get(inst.geometry as usize)?;
            let m = DAffine3 {
                matrix3: DMat3::from_cols(
                    inst.transform.matrix3.x_axis.as_dvec3(),
                    inst.transform.matrix3.y_axis.as_dvec3(),
                    inst.transform.matrix3.z_axis.as_dvec3(),
                ),
                translation: inst.transform.translation.as_dvec3(),
            };
            let world = |p: Vec3| m.transform_point3(p.as_dvec3()).as_vec3();
            let mut triangles = Vec::new();
            let mut spheres = Vec::new();
            for id in 0..g.primitive_count() as u32 {
                match g.primitive(id)? {
                    PrimRef::Triangle(t) => {
                        let [a, b, c] = g.triangle(t)?;
                        triangles.push((id, [world(a), world(b), world(c)]));
                    }
                    PrimRef::Sphere(k) => {
                        let cr = g.spheres().get(k as usize)?;
                        spheres.push((id, cr.truncate(), cr.w));
                    }
                }
            }
            Some(PlacedPrims {
                mask: u32::from(inst.mask),
                triangles,
                spheres,
                world_to_object: m.inverse(),
            })
        })
        .collect();
    let mut out = OracleAnswers::default();
    for ray in rays {
        let pre = RayPre::new(ray);
        let mut best = Hit::MISS;
        let mut tmax = ray.tmax;
        for (i, p) in placed.iter().enumerate() {
            if ray.mask & p.mask == 0 {
                continue;
            }
            for &(id, [a, b, c]) in &p.triangles {
                if let Some((t, u, v)) = ray_triangle(&pre, a, b, c, ray.tmin, tmax) {
                    tmax = t;
                    best = Hit::new(t, u, v, id, i as u32);
                }
            }
            if p.spheres.is_empty() {
                continue;
            }
            let object = Ray::segment(
                p.world_to_object
                    .transform_point3(ray.origin.as_dvec3())
                    .as_vec3(),
                p.world_to_object
                    .transform_vector3(ray.dir.as_dvec3())
                    .as_vec3(),
                ray.tmin,
                ray.tmax,
            );
            let opre = RayPre::new(&object);
            for &(id, center, r) in &p.spheres {
                if let Some(t) = ray_sphere(opre.origin, opre.dir, center, r, ray.tmin, tmax) {
                    tmax = t;
                    best = Hit::new(t, 0.0, 0.0, id, i as u32);
                }
            }
        }
        out.occluded.push(best.is_hit());
        out.hits.push(best);
    }
    out
}

/// A seeded random source for the generators.
struct Rng(Pcg);

impl Rng {
    fn new(seed: u32, family: u32) -> Self {
        Rng(Pcg::for_path(family, 0, seed))
    }
    fn f(&mut self) -> f32 {
        self.0.next_f32()
    }
    fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.f()
    }
    /// Log-uniform in `[lo, hi]`.
    fn log_range(&mut self, lo: f32, hi: f32) -> f32 {
        lo * (hi / lo).powf(self.f())
    }
    fn index(&mut self, n: usize) -> usize {
        ((self.0.next_u32() as u64 * n as u64) >> 32) as usize
    }
    fn in_box(&mut self, half: f32) -> Vec3 {
        Vec3::new(
            self.range(-half, half),
            self.range(-half, half),
            self.range(-half, half),
        )
    }
    fn unit(&mut self) -> Vec3 {
        loop {
            let p = self.in_box(1.0);
            let l = p.length_squared();
            if l > 1e-4 && l <= 1.0 {
                return p / l.sqrt();
            }
        }
    }
}

fn grey(scene: &mut Scene) -> u32 {
    scene.add_material(Material::lambertian(Vec3::splat(0.5)))
}

/// Random triangles in `[-1, 1]^3`, sizes log-uniform from 0.02 to 0.5.
fn add_soup(s: &mut Scene, rng: &mut Rng, count: usize, m: u32) {
    for _ in 0..count {
        let c = rng.in_box(1.0);
        let size = rng.log_range(0.02, 0.5);
        let a = c + size * rng.unit();
        let b = c + size * rng.unit();
        let d = c + size * rng.unit();
        s.add_triangle(a, b, d, m);
    }
}

/// Random spheres in `[-1, 1]^3`, radii log-uniform from 0.01 to 0.4, every
/// fourth with a smaller sphere nested at its centre.
fn add_spheres(s: &mut Scene, rng: &mut Rng, count: usize, m: u32) {
    for i in 0..count {
        let c = rng.in_box(1.0);
        let r = rng.log_range(0.01, 0.4);
        s.add_sphere(c, r, m);
        if i % 4 == 0 {
            s.add_sphere(c, r * rng.range(0.2, 0.9), m);
        }
    }
}

/// Rays at a scene in `[-half, half]^3`: half from a sphere of radius `3 half`
/// aimed at a point inside, half from inside in random directions; some with a
/// non-unit direction, some with a finite `tmax`.
fn scatter_rays(rng: &mut Rng, count: usize, half: f32) -> Vec<Ray> {
    let mut rays = Vec::with_capacity(count);
    for i in 0..count {
        let (origin, dir) = if i % 2 == 0 {
            let o = 3.0 * half * rng.unit();
            let target = rng.in_box(half);
            (o, (target - o).normalize_or(Vec3::X))
        } else {
            (rng.in_box(half), rng.unit())
        };
        let dir = if i % 5 == 0 {
            dir * rng.log_range(0.25, 4.0)
        } else {
            dir
        };
        let ray = if i % 4 == 1 {
            let len = dir.length();
            Ray::segment(origin, dir, 0.0, rng.range(0.2, 4.0) * half / len)
        } else {
            Ray::new(origin, dir)
        };
        rays.push(ray);
    }
    rays
}

/// Family numbers for the random streams (any distinct values).
const SOUP: u32 = 1;
const SPHERES: u32 = 2;
const MIXED: u32 = 3;
const GRAZING: u32 = 4;
const SURFACE: u32 = 5;
const SCALE: u32 = 6;
const AXIS: u32 = 7;
const DEGENERATE: u32 = 8;
const INSTANCES: u32 = 9;
const REFIT: u32 = 10;

/// How many cases and rays to make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenSize {
    /// Seeds per random family.
    pub seeds: u32,
    /// Rays per case.
    pub rays: usize,
    /// Triangles of a random soup.
    pub triangles: usize,
    /// Spheres of a random sphere set.
    pub spheres: usize,
}

impl GenSize {
    /// The largest size [`GenSize::check`] accepts: seeds, rays, triangles, spheres.
    pub const MAX: GenSize = GenSize {
        seeds: 1 << 10,
        rays: 1 << 22,
        triangles: 1 << 20,
        spheres: 1 << 20,
    };

    /// `Ok` when every count is within [`GenSize::MAX`], else which is not: the
    /// cases allocate by these counts, and a run of `u32::MAX` seeds never ends.
    pub fn check(&self) -> Result<(), String> {
        let max = Self::MAX;
        let over = [
            ("seeds", self.seeds as usize, max.seeds as usize),
            ("rays", self.rays, max.rays),
            ("triangles", self.triangles, max.triangles),
            ("spheres", self.spheres, max.spheres),
        ]
        .into_iter()
        .find(|&(_, n, limit)| n > limit);
        match over {
            Some((what, n, limit)) => Err(format!("{what} = {n} is above the limit {limit}")),
            None => Ok(()),
        }
    }
}

/// Every generated case for `size` (each count at least 2, so that no scene is
/// empty); check `size` with [`GenSize::check`] first.
pub fn cases(size: GenSize) -> Vec<GeneratedCase> {
    let size = GenSize {
        seeds: size.seeds,
        rays: size.rays.max(2),
        triangles: size.triangles.max(2),
        spheres: size.spheres.max(2),
    };
    let mut out = Vec::new();
    for seed in 1..=size.seeds {
        out.push(soup(seed, size));
        out.push(spheres(seed, size));
        out.push(mixed(seed, size));
        out.push(grazing_grid(seed, size));
        out.push(grazing_closed(seed, size));
        out.push(surface(seed, size));
        out.push(axis(seed, size));
        out.push(degenerate(seed, size));
        out.push(instanced(seed, size));
    }
    for (k, &scale) in [1e-4f32, 1e-2, 1.0, 1e2, 1e5].iter().enumerate() {
        out.push(scaled(k as u32 + 1, scale, size));
    }
    out
}

/// A two-level scene: three random geometries (a triangle soup, a sphere
/// set, and both) in `[-1, 1]^3`, placed by random instances (a random
/// rotation, a non-uniform scale of each axis in [0.3, 3], so that spheres
/// become ellipsoids, and a translation in `[-8, 8]^3`) with random masks
/// (some of them 0, seen by no ray), and rays at the field with random
/// masks (a quarter seeing everything).
fn instanced(seed: u32, size: GenSize) -> GeneratedCase {
    let mut rng = Rng::new(seed, INSTANCES);
    let mut s = Scene::new();
    let m = grey(&mut s);
    let per = (size.triangles / 8).max(2);
    let mut soup = Scene::new();
    add_soup(&mut soup, &mut rng, per, m);
    let mut balls = Scene::new();
    add_spheres(&mut balls, &mut rng, (size.spheres / 4).max(2), m);
    let geometry = |from: &[&Scene]| {
        let mut g = Geometry::new();
        for sc in from {
            for (_, p) in prims(sc) {
                match p {
                    Prim::Triangle([a, b, c]) => {
                        g.add_triangle(a, b, c, m);
                    }
                    Prim::Sphere(c, r) => {
                        g.add_sphere(c, r, m);
                    }
                }
            }
        }
        g
    };
    s.add_geometry(geometry(&[&soup]));
    s.add_geometry(geometry(&[&balls]));
    s.add_geometry(geometry(&[&soup, &balls]));
    let count = 24 + rng.index(24);
    let mut masked_out = 0;
    for _ in 0..count {
        let rotation = Quat::from_axis_angle(rng.unit(), rng.range(0.0, std::f32::consts::TAU));
        let scale = Vec3::new(
            rng.log_range(0.3, 3.0),
            rng.log_range(0.3, 3.0),
            rng.log_range(0.3, 3.0),
        );
        let t = Affine3A::from_scale_rotation_translation(scale, rotation, rng.in_box(8.0));
        let mask = match rng.index(8) {
            0 => 0,
            1 | 2 => 0xFF,
            _ => 1u8 << rng.index(8),
        };
        masked_out += usize::from(mask == 0);
        s.add_instance(Instance::new(rng.index(3) as u32, t).with_mask(mask));
    }
    let rays = scatter_rays(&mut rng, size.rays, 9.0)
        .into_iter()
        .map(|r| match rng.index(4) {
            0 => r,
            _ => r.with_mask(rng.0.next_u32() & 0xFF),
        })
        .collect();
    GeneratedCase {
        name: format!("instances/{seed}"),
        family: "instances",
        description: format!(
            "{count} instances ({masked_out} of mask 0) of 3 geometries ({per} triangles, \
             {} spheres, both) under random rotations, non-uniform scales and \
             translations; random ray and instance masks",
            balls.sphere_count()
        ),
        seed,
        scene: s,
        rays,
    }
}

/// A refit case: a two-level scene with a mesh geometry whose vertices move
/// over a few frames (each applied by `update_scene`, which refits the
/// mesh's tree), and the rays that must then hit what they hit in the same
/// scene built afresh with the last frame's vertices.
#[derive(Clone, Debug)]
pub struct RefitCase {
    /// Unique name (`refit/seed`).
    pub name: String,
    /// The seed the case was made from.
    pub seed: u32,
    /// What the case holds, for a person.
    pub description: String,
    /// The mesh geometry whose vertices move (geometry 0).
    pub geometry: u32,
    /// Its triangles.
    pub triangles: Vec<[u32; 3]>,
    /// Its vertices as first built.
    pub initial: Vec<Vec3>,
    /// Its vertices in each later frame, in order.
    pub frames: Vec<Vec<Vec3>>,
    /// The instances (of the mesh, and of geometry 1, a few spheres).
    pub instances: Vec<Instance>,
    /// The rays.
    pub rays: Vec<Ray>,
}

impl RefitCase {
    /// The case's scene with the mesh's vertices at `positions`.
    pub fn scene(&self, positions: &[Vec3]) -> Scene {
        let mut s = Scene::new();
        let m = grey(&mut s);
        let mesh = Geometry::mesh(positions, &self.triangles, m).unwrap_or_default();
        s.add_geometry(mesh);
        let mut balls = Geometry::new();
        balls.add_sphere(Vec3::new(0.0, 0.6, 0.0), 0.3, m);
        balls.add_sphere(Vec3::new(0.5, -0.4, 0.2), 0.2, m);
        s.add_geometry(balls);
        for inst in &self.instances {
            s.add_instance(*inst);
        }
        s
    }
}

/// An `n x n` grid of quads over `[-1, 1]^2` in `z = 0`, two triangles each.
pub fn grid_mesh(n: usize) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let n = n.max(1);
    let mut positions = Vec::new();
    for j in 0..=n {
        for i in 0..=n {
            let (x, y) = (i as f32 / n as f32, j as f32 / n as f32);
            positions.push(Vec3::new(2.0 * x - 1.0, 2.0 * y - 1.0, 0.0));
        }
    }
    let mut triangles = Vec::new();
    let at = |i: usize, j: usize| (j * (n + 1) + i) as u32;
    for j in 0..n {
        for i in 0..n {
            triangles.push([at(i, j), at(i + 1, j), at(i + 1, j + 1)]);
            triangles.push([at(i, j), at(i + 1, j + 1), at(i, j + 1)]);
        }
    }
    (positions, triangles)
}

/// The refit cases for `size`: one per seed.
pub fn refit_cases(size: GenSize) -> Vec<RefitCase> {
    (1..=size.seeds).map(|seed| refit(seed, size)).collect()
}

/// A 16 x 16 grid mesh placed 12 times (rotated, scaled, moved) beside four
/// placements of two spheres; three frames each move every vertex by up to
/// 0.3 (a wave, then noise on it), so that boxes grow and overlap.
fn refit(seed: u32, size: GenSize) -> RefitCase {
    let mut rng = Rng::new(seed, REFIT);
    let (initial, triangles) = grid_mesh(16);
    let mut frames = Vec::new();
    for f in 1..=3 {
        let phase = f as f32 * 0.7;
        frames.push(
            initial
                .iter()
                .map(|p| {
                    let wave = 0.3 * (3.0 * p.x + phase).sin() * (2.0 * p.y).cos();
                    *p + Vec3::new(0.0, 0.0, wave) + 0.1 * rng.in_box(1.0)
                })
                .collect(),
        );
    }
    let mut instances = Vec::new();
    for k in 0..16 {
        let rotation = Quat::from_axis_angle(rng.unit(), rng.range(0.0, std::f32::consts::TAU));
        let scale = Vec3::new(
            rng.log_range(0.5, 2.0),
            rng.log_range(0.5, 2.0),
            rng.log_range(0.5, 2.0),
        );
        let t = Affine3A::from_scale_rotation_translation(scale, rotation, rng.in_box(5.0));
        instances.push(Instance::new(u32::from(k >= 12), t));
    }
    let rays = scatter_rays(&mut rng, size.rays, 6.0);
    RefitCase {
        name: format!("refit/{seed}"),
        seed,
        description: format!(
            "a 16 x 16 grid mesh ({} triangles) placed 12 times beside 4 placements of two \
             spheres; its vertices moved over 3 frames by update_scene (refit), against the \
             same scene built afresh",
            triangles.len()
        ),
        geometry: 0,
        triangles,
        initial,
        frames,
        instances,
        rays,
    }
}

fn soup(seed: u32, size: GenSize) -> GeneratedCase {
    let mut rng = Rng::new(seed, SOUP);
    let mut s = Scene::new();
    let m = grey(&mut s);
    add_soup(&mut s, &mut rng, size.triangles, m);
    let rays = scatter_rays(&mut rng, size.rays, 1.0);
    GeneratedCase {
        name: format!("soup/{seed}"),
        family: "soup",
        description: format!(
            "{} random triangles in [-1,1]^3; rays from outside and inside, some non-unit, some with finite tmax",
            size.triangles
        ),
        seed,
        scene: s,
        rays,
    }
}

fn spheres(seed: u32, size: GenSize) -> GeneratedCase {
    let mut rng = Rng::new(seed, SPHERES);
    let mut s = Scene::new();
    let m = grey(&mut s);
    add_spheres(&mut s, &mut rng, size.spheres, m);
    let mut rays = scatter_rays(&mut rng, size.rays, 1.0);
    // Rays from the centre of a sphere: the far root of the quadratic.
    let centers: Vec<Vec3> = s.spheres().iter().map(|c| c.truncate()).collect();
    if !centers.is_empty() {
        for (i, r) in rays.iter_mut().enumerate().filter(|(i, _)| i % 7 == 3) {
            // ok: `centers` is not empty.
            r.origin = centers[i % centers.len()];
        }
    }
    GeneratedCase {
        name: format!("spheres/{seed}"),
        family: "spheres",
        description: format!(
            "{} random spheres (radii 0.01 to 0.4, some nested); rays from outside, inside and sphere centres",
            s.sphere_count()
        ),
        seed,
        scene: s,
        rays,
    }
}

fn mixed(seed: u32, size: GenSize) -> GeneratedCase {
    let mut rng = Rng::new(seed, MIXED);
    let mut s = Scene::new();
    let m = grey(&mut s);
    add_soup(&mut s, &mut rng, size.triangles / 2, m);
    add_spheres(&mut s, &mut rng, size.spheres / 2, m);
    let rays = scatter_rays(&mut rng, size.rays, 1.0);
    GeneratedCase {
        name: format!("mixed/{seed}"),
        family: "mixed",
        description: format!(
            "{} triangles and {} spheres sharing one BVH",
            s.triangle_count(),
            s.sphere_count()
        ),
        seed,
        scene: s,
        rays,
    }
}

/// An `n x n` grid of quads, two triangles each, sharing vertices; `jitter`
/// moves the interior vertices off the plane.
fn grid(n: usize, jitter: f32, rng: &mut Rng) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let mut pos = Vec::with_capacity((n + 1) * (n + 1));
    for j in 0..=n {
        for i in 0..=n {
            let x = -1.0 + 2.0 * i as f32 / n as f32;
            let y = -1.0 + 2.0 * j as f32 / n as f32;
            let interior = i > 0 && j > 0 && i < n && j < n;
            let z = if interior {
                jitter * rng.range(-1.0, 1.0)
            } else {
                0.0
            };
            pos.push(Vec3::new(x, y, z));
        }
    }
    let at = |i: usize, j: usize| (j * (n + 1) + i) as u32;
    let mut tris = Vec::with_capacity(2 * n * n);
    for j in 0..n {
        for i in 0..n {
            // Alternate the diagonal so vertices have 4 and 8 neighbours.
            if (i + j) % 2 == 0 {
                tris.push([at(i, j), at(i + 1, j), at(i + 1, j + 1)]);
                tris.push([at(i, j), at(i + 1, j + 1), at(i, j + 1)]);
            } else {
                tris.push([at(i, j), at(i + 1, j), at(i, j + 1)]);
                tris.push([at(i + 1, j), at(i + 1, j + 1), at(i, j + 1)]);
            }
        }
    }
    (pos, tris)
}

/// Points on interior shared features of a mesh: vertices, edge midpoints and
/// random points along edges, for edges shared by two triangles.
fn shared_features(pos: &[Vec3], tris: &[[u32; 3]], rng: &mut Rng, count: usize) -> Vec<Vec3> {
    let mut edges: Vec<(u32, u32)> = tris
        .iter()
        .flat_map(|t| [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])])
        .map(|(a, b)| (a.min(b), a.max(b)))
        .collect();
    edges.sort_unstable();
    let shared: Vec<(u32, u32)> = edges
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0])
        .collect();
    let mut points = Vec::with_capacity(count);
    if shared.is_empty() {
        return points;
    }
    for k in 0..count {
        // ok: `shared` is not empty, and its indices come from triangles made
        // for `pos` by this module's own mesh builders.
        let (a, b) = shared[rng.index(shared.len())];
        let (Some(&pa), Some(&pb)) = (pos.get(a as usize), pos.get(b as usize)) else {
            continue;
        };
        points.push(match k % 3 {
            0 => pa,
            1 => 0.5 * (pa + pb),
            _ => pa.lerp(pb, rng.f()),
        });
    }
    points
}

/// A random direction whose cosine with `normal` is at least `min_cos` in
/// magnitude, on the side `sign` (+1 along the normal, -1 against, 0 either).
fn direction_across(rng: &mut Rng, normal: Vec3, min_cos: f32, sign: f32) -> Vec3 {
    loop {
        let d = rng.unit();
        let c = d.dot(normal);
        if c.abs() >= min_cos && c * sign >= 0.0 {
            return d;
        }
    }
}

/// Rays crossing the surface at `targets`, from `distance` before it: never
/// closer than `min_cos` to the surface's plane (`normal`), so each ray goes
/// through the surface there rather than touching it, and a watertight test must
/// report a hit.
fn rays_through(
    targets: &[Vec3],
    normal: Vec3,
    min_cos: f32,
    rng: &mut Rng,
    distance: f32,
) -> Vec<Ray> {
    targets
        .iter()
        .map(|&p| {
            let d = direction_across(rng, normal, min_cos, 0.0);
            Ray::new(p - distance * d, d)
        })
        .collect()
}

fn grazing_grid(seed: u32, size: GenSize) -> GeneratedCase {
    let mut rng = Rng::new(seed, GRAZING);
    let mut s = Scene::new();
    let m = grey(&mut s);
    // Jitter 0.02 on cells of 1/6: faces tilt at most ~14 degrees from the
    // grid's plane, so rays at least 24 degrees off it cross, never touch.
    let (pos, tris) = grid(12, 0.02, &mut rng);
    let rot = Quat::from_axis_angle(rng.unit(), rng.range(0.0, 6.2831855));
    let pos: Vec<Vec3> = pos.iter().map(|&p| rot * p).collect();
    let added = s.add_mesh(&pos, &tris, m).is_ok();
    let n = if added { size.rays } else { 0 };
    let targets = shared_features(&pos, &tris, &mut rng, n);
    let rays = rays_through(&targets, rot * Vec3::Z, 0.4, &mut rng, 2.0);
    GeneratedCase {
        name: format!("grazing/grid/{seed}"),
        family: "grazing",
        description: format!(
            "a tilted 12x12 grid ({} triangles, interior vertices jittered off the plane); rays exactly \
             through shared vertices and edges, crossing at 24 degrees or more from both sides",
            tris.len()
        ),
        seed,
        scene: s,
        rays,
    }
}

/// A cube whose faces are `n x n` grids, projected on the unit sphere: a closed
/// mesh with shared vertices.
fn cube_sphere(n: usize) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let mut pos: Vec<Vec3> = Vec::new();
    let mut tris = Vec::new();
    let index_of = |p: Vec3, pos: &mut Vec<Vec3>| -> u32 {
        // Vertices on cube edges are shared between faces: find them exactly.
        match pos.iter().position(|q| *q == p) {
            Some(i) => i as u32,
            None => {
                pos.push(p);
                (pos.len() - 1) as u32
            }
        }
    };
    let faces = [
        (Vec3::X, Vec3::Y, Vec3::Z),
        (Vec3::NEG_X, Vec3::Z, Vec3::Y),
        (Vec3::Y, Vec3::Z, Vec3::X),
        (Vec3::NEG_Y, Vec3::X, Vec3::Z),
        (Vec3::Z, Vec3::X, Vec3::Y),
        (Vec3::NEG_Z, Vec3::Y, Vec3::X),
    ];
    for (normal, u, v) in faces {
        let corner = |i: usize, j: usize| {
            let a = -1.0 + 2.0 * i as f32 / n as f32;
            let b = -1.0 + 2.0 * j as f32 / n as f32;
            // Snap to the cube's lattice first so shared edge vertices are bit-equal.
            let p = normal + a * u + b * v;
            p.normalize()
        };
        for j in 0..n {
            for i in 0..n {
                let a = index_of(corner(i, j), &mut pos);
                let b = index_of(corner(i + 1, j), &mut pos);
                let c = index_of(corner(i + 1, j + 1), &mut pos);
                let d = index_of(corner(i, j + 1), &mut pos);
                tris.push([a, b, c]);
                tris.push([a, c, d]);
            }
        }
    }
    (pos, tris)
}

fn grazing_closed(seed: u32, size: GenSize) -> GeneratedCase {
    let mut rng = Rng::new(seed, GRAZING + 100);
    let mut s = Scene::new();
    let m = grey(&mut s);
    let (pos, tris) = cube_sphere(6);
    let rot = Quat::from_axis_angle(rng.unit(), rng.range(0.0, 6.2831855));
    let pos: Vec<Vec3> = pos.iter().map(|&p| rot * p).collect();
    let added = s.add_mesh(&pos, &tris, m).is_ok();
    let n = if added { size.rays } else { 0 };
    let targets = shared_features(&pos, &tris, &mut rng, n);
    // Faces of a 6x6 cube-sphere are at most ~16 degrees from the sphere's
    // tangent plane: rays 45 degrees off it cross the surface. Half come from
    // outside, half start inside (half a chord before the target).
    let rays = targets
        .iter()
        .enumerate()
        .map(|(k, &p)| {
            let normal = p.normalize_or(Vec3::Z);
            if k % 2 == 0 {
                let d = direction_across(&mut rng, normal, 0.7, -1.0);
                Ray::new(p - 3.0 * d, d)
            } else {
                let d = direction_across(&mut rng, normal, 0.7, 1.0);
                Ray::new(p - d.dot(p) * d, d)
            }
        })
        .collect();
    GeneratedCase {
        name: format!("grazing/closed/{seed}"),
        family: "grazing",
        description: format!(
            "a closed, rotated cube-sphere ({} triangles); rays exactly through shared vertices and edges \
             from outside and inside: a watertight test never lets one through",
            tris.len()
        ),
        seed,
        scene: s,
        rays,
    }
}

fn surface(seed: u32, size: GenSize) -> GeneratedCase {
    let mut rng = Rng::new(seed, SURFACE);
    let mut s = Scene::new();
    let m = grey(&mut s);
    add_soup(&mut s, &mut rng, size.triangles / 2, m);
    add_spheres(&mut s, &mut rng, size.spheres / 2, m);
    let count = s.primitive_count() as u32;
    let mut rays = Vec::with_capacity(size.rays);
    while rays.len() < size.rays && count > 0 {
        let id = rng.index(count as usize) as u32;
        let p = match s.primitive(id) {
            Some(PrimRef::Triangle(t)) => s.triangle(t).map(|[a, b, c]| {
                let (mut u, mut v) = (rng.f(), rng.f());
                if u + v > 1.0 {
                    (u, v) = (1.0 - u, 1.0 - v);
                }
                a + u * (b - a) + v * (c - a)
            }),
            Some(PrimRef::Sphere(k)) => s
                .spheres()
                .get(k as usize)
                .map(|cr| cr.truncate() + cr.w * rng.unit()),
            None => None,
        };
        if let Some(p) = p {
            let d = rng.unit();
            // A point given, not found by a ray: its own magnitude alone.
            rays.push(Ray::segment(p, d, spawn_tmin(p, p), f32::INFINITY));
        }
    }
    GeneratedCase {
        name: format!("surface/{seed}"),
        family: "surface",
        description: format!(
            "rays starting on the surface of {} triangles and spheres, leaving to either side, with the \
             integrators' start distance (spawn_tmin)",
            count
        ),
        seed,
        scene: s,
        rays,
    }
}

fn scaled(seed: u32, scale: f32, size: GenSize) -> GeneratedCase {
    let mut rng = Rng::new(seed, SCALE);
    let mut s = Scene::new();
    let m = grey(&mut s);
    // The scene sits 4 of its own sizes from the world origin, so the origin's
    // rounding (relative to the coordinates) matters as it does in real scenes.
    let offset = Vec3::new(4.0, -2.0, 3.0) * scale;
    let mut unit = Scene::new();
    add_soup(&mut unit, &mut rng, size.triangles / 2, m);
    add_spheres(&mut unit, &mut rng, size.spheres / 2, m);
    for id in 0..unit.primitive_count() as u32 {
        match unit.primitive(id) {
            Some(PrimRef::Triangle(t)) => {
                if let Some([a, b, c]) = unit.triangle(t) {
                    s.add_triangle(
                        a * scale + offset,
                        b * scale + offset,
                        c * scale + offset,
                        m,
                    );
                }
            }
            Some(PrimRef::Sphere(k)) => {
                if let Some(cr) = unit.spheres().get(k as usize) {
                    s.add_sphere(cr.truncate() * scale + offset, cr.w * scale, m);
                }
            }
            None => {}
        }
    }
    let rays = scatter_rays(&mut rng, size.rays, 1.0)
        .into_iter()
        .map(|r| {
            // t is in units of dir: scale the origin only, so t scales too.
            let dir = r.dir * scale;
            Ray::segment(r.origin * scale + offset, dir, r.tmin, r.tmax)
        })
        .collect();
    GeneratedCase {
        name: format!("scale/{scale:e}"),
        family: "scale",
        description: format!(
            "a soup of triangles and spheres scaled by {scale:e} and moved {:.1e} from the origin; rays and \
             directions scaled alike",
            offset.length()
        ),
        seed,
        scene: s,
        rays,
    }
}

/// Two triangles of an axis-aligned quad `[lo, hi]` (flat along `axis`).
fn add_quad(s: &mut Scene, lo: Vec3, hi: Vec3, m: u32) {
    let d = hi - lo;
    let (a, b) = if d.x == 0.0 {
        (Vec3::Y * d, Vec3::Z * d)
    } else if d.y == 0.0 {
        (Vec3::X * d, Vec3::Z * d)
    } else {
        (Vec3::X * d, Vec3::Y * d)
    };
    s.add_triangle(lo, lo + a, lo + a + b, m);
    s.add_triangle(lo, lo + a + b, lo + b, m);
}

/// Twelve triangles of the box `[lo, hi]`.
fn add_box(s: &mut Scene, lo: Vec3, hi: Vec3, m: u32) {
    for axis in 0..3 {
        for side in [lo[axis], hi[axis]] {
            let mut a = lo;
            let mut b = hi;
            a[axis] = side;
            b[axis] = side;
            add_quad(s, a, b, m);
        }
    }
}

fn axis(seed: u32, size: GenSize) -> GeneratedCase {
    let mut rng = Rng::new(seed, AXIS);
    let mut s = Scene::new();
    let m = grey(&mut s);
    // Unit boxes on an integer lattice, some touching, some apart; flat quads
    // (zero-thickness bounding boxes) between them; a few spheres.
    for i in -2..2 {
        for j in -2..2 {
            for k in -2..2 {
                let lo = Vec3::new(i as f32, j as f32, k as f32);
                match rng.index(4) {
                    0 => add_box(&mut s, lo, lo + Vec3::ONE, m),
                    1 => add_box(&mut s, lo + 0.25, lo + 0.75, m),
                    2 => add_quad(&mut s, lo, lo + Vec3::new(1.0, 1.0, 0.0), m),
                    _ => {
                        s.add_sphere(lo + 0.5, 0.5, m);
                    }
                }
            }
        }
    }
    let dirs = [
        Vec3::X,
        Vec3::NEG_X,
        Vec3::Y,
        Vec3::NEG_Y,
        Vec3::Z,
        Vec3::NEG_Z,
        // Not normalised: with lattice origins every operation of the tests is
        // exact, so even rays that only touch an edge have one right answer.
        Vec3::new(1.0, 1.0, 0.0),
        Vec3::new(0.0, -1.0, 1.0),
        Vec3::new(-1.0, 0.0, -1.0),
    ];
    let mut rays = Vec::with_capacity(size.rays);
    for k in 0..size.rays {
        // ok: `dirs` is a non-empty constant list.
        let d = dirs[k % dirs.len()];
        // Coordinates are dyadic, so every operation of the tests is exact. On an
        // axis the ray does not move along, a quarter of the origins lie in the
        // lattice or quarter planes (the boxes' face planes, where the slab
        // test's face-plane convention decides), the rest on odd multiples of
        // 1/64 (never a face plane); on the other axes, anywhere dyadic.
        let odd64 = |rng: &mut Rng| ((2 * rng.index(160) + 1) as f32 - 160.0) / 64.0;
        let quarter = |rng: &mut Rng| (rng.index(17) as f32 - 8.0) * 0.25;
        let mut p = Vec3::ZERO;
        for k in 0..3 {
            p[k] = match (d[k] == 0.0, rng.index(8)) {
                (true, 0) => rng.index(5) as f32 - 2.0,
                (true, 1) => quarter(&mut rng),
                (false, k) if k % 2 == 0 => quarter(&mut rng),
                _ => odd64(&mut rng),
            };
        }
        rays.push(Ray::new(p - 4.0 * d, d));
    }
    GeneratedCase {
        name: format!("axis/{seed}"),
        family: "axis",
        description: format!(
            "axis-aligned boxes, flat quads and spheres on an integer lattice ({} primitives); rays along \
             the axes and axis diagonals (zero direction components), a quarter of them lying in box face \
             planes; all coordinates dyadic, so every operation is exact",
            s.primitive_count()
        ),
        seed,
        scene: s,
        rays,
    }
}

fn degenerate(seed: u32, size: GenSize) -> GeneratedCase {
    let mut rng = Rng::new(seed, DEGENERATE);
    let mut s = Scene::new();
    let m = grey(&mut s);
    let mut pos: Vec<Vec3> = Vec::new();
    let mut tris: Vec<[u32; 3]> = Vec::new();
    // Points to aim at, with the normal of their surface.
    let mut targets: Vec<(Vec3, Vec3)> = Vec::new();
    let groups = (size.triangles / 8).max(4);
    for _ in 0..groups {
        let c = rng.in_box(1.0);
        let e1 = 0.2 * rng.unit();
        let e2 = 0.2 * rng.unit();
        let base = pos.len() as u32;
        // A quad whose second triangle uses duplicated vertices (same positions,
        // other indices): the seam must stay watertight.
        pos.extend([c, c + e1, c + e1 + e2, c + e2, c, c + e1 + e2]);
        tris.push([base, base + 1, base + 2]);
        tris.push([base + 4, base + 5, base + 3]);
        let n = e1.cross(e2).normalize_or(Vec3::Z);
        targets.push((c + 0.5 * (e1 + e2), n));
        targets.push((c + rng.f() * (e1 + e2), n));
        // Zero-area triangles: a repeated index, and three collinear points.
        tris.push([base, base, base + 1]);
        let k = pos.len() as u32;
        pos.extend([c, c + 0.5 * e1, c + e1]);
        tris.push([k, k + 1, k + 2]);
        // A sliver (height 1e-5 of its length) and a needle (two vertices 1e-6 apart).
        let k = pos.len() as u32;
        let w = e2 - e2.dot(e1.normalize_or(Vec3::X)) * e1.normalize_or(Vec3::X);
        let w = w.normalize_or(n.cross(e1).normalize_or(Vec3::Y));
        pos.extend([
            c + n * 0.1,
            c + n * 0.1 + e1,
            c + n * 0.1 + 0.5 * e1 + 1e-5 * w,
        ]);
        tris.push([k, k + 1, k + 2]);
        targets.push((
            c + n * 0.1 + 0.5 * e1 + 0.3e-5 * w,
            e1.cross(w).normalize_or(n),
        ));
        let k = pos.len() as u32;
        pos.extend([c - n * 0.1, c - n * 0.1 + e2, c - n * 0.1 + e2 + 1e-6 * w]);
        tris.push([k, k + 1, k + 2]);
        // The same triangle twice, and once more with the opposite winding: ties.
        let k = pos.len() as u32;
        let q = c + 0.3 * n;
        pos.extend([q, q + e1, q + e2]);
        tris.push([k, k + 1, k + 2]);
        tris.push([k, k + 1, k + 2]);
        tris.push([k, k + 2, k + 1]);
        targets.push((q + 0.25 * (e1 + e2), n));
    }
    let added = s.add_mesh(&pos, &tris, m).is_ok();
    let n = if added { size.rays } else { 0 };
    let mut rays = Vec::with_capacity(n);
    for k in 0..n {
        if k % 2 == 0 && !targets.is_empty() {
            // ok: `targets` is not empty (checked above).
            let (p, normal) = targets[rng.index(targets.len())];
            let d = direction_across(&mut rng, normal, 0.2, 0.0);
            rays.push(Ray::new(p - 2.0 * d, d));
        } else {
            let o = 3.0 * rng.unit();
            let t = rng.in_box(1.0);
            rays.push(Ray::new(o, (t - o).normalize_or(Vec3::Y)));
        }
    }
    GeneratedCase {
        name: format!("degenerate/{seed}"),
        family: "degenerate",
        description: format!(
            "{} triangles: quads split across duplicated vertices, zero-area triangles (repeated index, \
             collinear), slivers, needles, and duplicate triangles (same and opposite winding)",
            tris.len()
        ),
        seed,
        scene: s,
        rays,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: GenSize = GenSize {
        seeds: 1,
        rays: 256,
        triangles: 64,
        spheres: 16,
    };

    #[test]
    fn every_case_is_valid_and_hits_something() {
        for case in cases(SMALL) {
            assert!(case.scene.validate().is_ok(), "{}", case.name);
            assert!(!case.rays.is_empty(), "{}", case.name);
            assert!(case.rays.iter().all(Ray::is_valid), "{}", case.name);
            let a = brute_force(&case.scene, &case.rays);
            let hits = a.hits.iter().filter(|h| h.is_hit()).count();
            assert!(hits > 0, "{}: no ray hits anything", case.name);
            assert!(
                a.hits
                    .iter()
                    .zip(&a.occluded)
                    .all(|(h, o)| h.is_hit() == *o),
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn cases_are_reproducible() {
        let a = cases(SMALL);
        let b = cases(SMALL);
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.rays, y.rays, "{}", x.name);
        }
    }

    #[test]
    fn grazing_rays_through_the_closed_mesh_always_hit() {
        let case = grazing_closed(1, SMALL);
        let a = brute_force(&case.scene, &case.rays);
        assert!(a.hits.iter().all(Hit::is_hit));
    }

    #[test]
    fn brute_force_keeps_the_nearest_and_the_lower_id_on_equal_t() {
        let mut s = Scene::new();
        let m = grey(&mut s);
        let (a, b, c) = (
            Vec3::new(-1.0, -1.0, -2.0),
            Vec3::new(1.0, -1.0, -2.0),
            Vec3::new(0.0, 1.0, -2.0),
        );
        s.add_triangle(a, b, c, m);
        s.add_triangle(a, b, c, m);
        s.add_sphere(Vec3::new(0.0, 0.0, -5.0), 1.0, m);
        let r = brute_force(&s, &[Ray::new(Vec3::ZERO, Vec3::NEG_Z)]);
        assert_eq!(r.hits[0].prim, 0);
        assert!((r.hits[0].t - 2.0).abs() < 1e-6);
    }
}
