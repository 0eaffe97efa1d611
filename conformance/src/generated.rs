//! Cases no file holds, made from a seed, and the oracle that answers them: CPU
//! brute force, prism-core's own intersection functions over every primitive.
//!
//! Each family aims at a place where ray tracers go wrong: random soups and
//! sphere sets (the BVH builder and traversal on arbitrary input), rays through
//! shared edges and vertices (watertightness), rays leaving surfaces
//! (self-intersection), scenes from 1e-4 to 1e5 units (precision), rays with zero
//! direction components (the slab test's infinities), and meshes with duplicate
//! vertices, zero-area triangles, slivers and duplicate triangles.
//!
//! The families live in child modules by what they build: `flat`'s random
//! primitives, `watertight`'s meshes, `two_level`'s instances and refits; the
//! oracle that answers them all lives in `oracle`. This module holds what a
//! case is, how many to make, the random source and the helpers the families
//! share, and the list of every case.

mod flat;
mod oracle;
mod two_level;
mod watertight;

use flat::{axis, mixed, scaled, soup, spheres, surface};
use glam::Vec3;
use prism_core::rng::Pcg;
use prism_core::{Material, Ray, Scene};
use two_level::instanced;
use watertight::{degenerate, grazing_closed, grazing_grid};

pub use oracle::{OracleAnswers, brute_force, instanced_brute_force};
pub use two_level::{RefitCase, grid_mesh, refit_cases};

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

/// A size small enough for the families' tests.
#[cfg(test)]
const SMALL: GenSize = GenSize {
    seeds: 1,
    rays: 256,
    triangles: 64,
    spheres: 16,
};

#[cfg(test)]
mod tests {
    use super::*;

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
}
