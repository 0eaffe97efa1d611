//! The generated two-level cases: random geometries under random instances
//! (rotations, non-uniform scales, translations, masks), and the refit
//! cases, whose mesh moves through `update_scene` frame by frame and must
//! then answer as the same scene built afresh.

use super::oracle::{Prim, prims};
use super::{
    GenSize, GeneratedCase, INSTANCES, REFIT, Rng, add_soup, add_spheres, grey, scatter_rays,
};
use glam::{Affine3A, Quat, Vec3};
use prism_core::{Geometry, Instance, Ray, Scene};

/// A two-level scene: three random geometries (a triangle soup, a sphere
/// set, and both) in `[-1, 1]^3`, placed by random instances (a random
/// rotation, a non-uniform scale of each axis in [0.3, 3], so that spheres
/// become ellipsoids, and a translation in `[-8, 8]^3`) with random masks
/// (some of them 0, seen by no ray), and rays at the field with random
/// masks (a quarter seeing everything).
pub(super) fn instanced(seed: u32, size: GenSize) -> GeneratedCase {
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
