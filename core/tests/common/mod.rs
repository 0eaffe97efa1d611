//! Strategies and reference computations shared by the property tests.
//!
//! The references here are deliberately naive (brute force over every
//! primitive, `f64` arithmetic) so that they can be trusted more than the code
//! under test.
#![allow(dead_code)]

use glam::{Quat, Vec3};
use prism_core::intersect::{RayPre, ray_sphere, ray_triangle};
use prism_core::scene::PrimRef;
use prism_core::{Material, Ray, Scene};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use std::ops::{Add, Index, Mul, Neg, Sub};

/// A proptest configuration running `cases` cases, or `PROPTEST_CASES` when that
/// variable is set (a larger number searches longer).
pub fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        max_global_rejects: 4 * cases.max(256),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

/// A vector with components uniform in `[-extent, extent]`.
pub fn vec3(extent: f32) -> impl Strategy<Value = Vec3> + Clone {
    (-extent..=extent, -extent..=extent, -extent..=extent).prop_map(|(x, y, z)| Vec3::new(x, y, z))
}

/// A unit vector, uniform on the sphere (Archimedes: uniform height, uniform angle).
pub fn unit_vec3() -> impl Strategy<Value = Vec3> + Clone {
    (-1.0f32..=1.0, -std::f32::consts::PI..std::f32::consts::PI).prop_map(|(z, phi)| {
        let r = (1.0 - z * z).max(0.0).sqrt();
        Vec3::new(r * phi.cos(), r * phi.sin(), z).normalize()
    })
}

/// A rotation, uniform enough for testing (axis and angle).
pub fn rotation() -> impl Strategy<Value = Quat> + Clone {
    (unit_vec3(), -std::f32::consts::PI..std::f32::consts::PI)
        .prop_map(|(axis, angle)| Quat::from_axis_angle(axis, angle))
}

/// A minimal `f64` 3-vector for reference computations (the core's glam build
/// carries no `f64` types).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DVec3 {
    pub x: f64,
    pub y: f64,
    pub z: f64,
}

impl DVec3 {
    pub const ZERO: DVec3 = DVec3 {
        x: 0.0,
        y: 0.0,
        z: 0.0,
    };
    pub fn new(x: f64, y: f64, z: f64) -> Self {
        Self { x, y, z }
    }
    pub fn dot(self, o: DVec3) -> f64 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }
    pub fn cross(self, o: DVec3) -> DVec3 {
        DVec3::new(
            self.y * o.z - self.z * o.y,
            self.z * o.x - self.x * o.z,
            self.x * o.y - self.y * o.x,
        )
    }
    pub fn length(self) -> f64 {
        self.dot(self).sqrt()
    }
    pub fn normalize(self) -> DVec3 {
        self * (1.0 / self.length())
    }
}

impl Add for DVec3 {
    type Output = DVec3;
    fn add(self, o: DVec3) -> DVec3 {
        DVec3::new(self.x + o.x, self.y + o.y, self.z + o.z)
    }
}
impl Sub for DVec3 {
    type Output = DVec3;
    fn sub(self, o: DVec3) -> DVec3 {
        DVec3::new(self.x - o.x, self.y - o.y, self.z - o.z)
    }
}
impl Neg for DVec3 {
    type Output = DVec3;
    fn neg(self) -> DVec3 {
        DVec3::new(-self.x, -self.y, -self.z)
    }
}
impl Mul<f64> for DVec3 {
    type Output = DVec3;
    fn mul(self, s: f64) -> DVec3 {
        DVec3::new(self.x * s, self.y * s, self.z * s)
    }
}
impl Mul<DVec3> for f64 {
    type Output = DVec3;
    fn mul(self, v: DVec3) -> DVec3 {
        v * self
    }
}
impl Index<usize> for DVec3 {
    type Output = f64;
    fn index(&self, i: usize) -> &f64 {
        match i {
            0 => &self.x,
            1 => &self.y,
            _ => &self.z,
        }
    }
}

/// `f32` to `f64` for vectors.
pub fn d(v: Vec3) -> DVec3 {
    DVec3::new(v.x as f64, v.y as f64, v.z as f64)
}

/// `unit_sphere`'s map in `f64`: the point at height `1 - 2 u1` and angle
/// `2 pi u2`, and the distance from the `f32` answer that rounding allows (the
/// radius `sqrt(1 - z^2)` loses digits towards the poles).
pub fn sphere_reference(u1: f32, u2: f32) -> (DVec3, f64) {
    let z = 1.0 - 2.0 * u1 as f64;
    let r = (1.0 - z * z).max(0.0).sqrt();
    let phi = std::f64::consts::TAU * u2 as f64;
    let tol = 2e-6 + 2.4e-7 / r.max(5e-4);
    (DVec3::new(r * phi.cos(), r * phi.sin(), z), tol)
}

/// A primitive as the tests describe scenes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Prim {
    /// Centre and radius.
    Sphere(Vec3, f32),
    /// Three vertices.
    Tri(Vec3, Vec3, Vec3),
}

impl Prim {
    /// A point on the primitive for barycentric-like coordinates `(a, b)` in `[0, 1)^2`.
    pub fn point(&self, a: f32, b: f32) -> Vec3 {
        match *self {
            Prim::Sphere(c, r) => c + r * prism_core::sampling::unit_sphere(a, b),
            Prim::Tri(v0, v1, v2) => {
                let (a, b) = if a + b > 1.0 {
                    (1.0 - a, 1.0 - b)
                } else {
                    (a, b)
                };
                (1.0 - a - b) * v0 + a * v1 + b * v2
            }
        }
    }

    /// The same primitive moved by `offset`.
    pub fn translated(&self, offset: Vec3) -> Prim {
        match *self {
            Prim::Sphere(c, r) => Prim::Sphere(c + offset, r),
            Prim::Tri(a, b, c) => Prim::Tri(a + offset, b + offset, c + offset),
        }
    }
}

/// A scene holding `prims` in order (primitive id = index), all with one material.
pub fn scene_of(prims: &[Prim]) -> Scene {
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
    for p in prims {
        match *p {
            Prim::Sphere(c, r) => scene.add_sphere(c, r, m),
            Prim::Tri(a, b, c) => scene.add_triangle(a, b, c, m),
        };
    }
    scene
}

/// The primitive with scene id `id`, read back through the scene's public accessors.
pub fn scene_prim(scene: &Scene, id: u32) -> Prim {
    match scene.primitive(id).expect("id in range") {
        PrimRef::Sphere(s) => {
            let cr = scene.spheres()[s as usize];
            Prim::Sphere(cr.truncate(), cr.w)
        }
        PrimRef::Triangle(t) => {
            let [a, b, c] = scene.triangle(t).expect("triangle in range");
            Prim::Tri(a, b, c)
        }
        PrimRef::Heightfield(_) => panic!("primitive {id}: the shared scenes hold no heightfields"),
    }
}

/// `(t, u, v)` of one primitive over the ray's whole `(tmin, tmax)`.
pub fn prim_hit(pre: &RayPre, p: &Prim, ray: &Ray) -> Option<(f32, f32, f32)> {
    match *p {
        Prim::Sphere(c, r) => {
            ray_sphere(ray.origin, ray.dir, c, r, ray.tmin, ray.tmax).map(|t| (t, 0.0, 0.0))
        }
        Prim::Tri(a, b, c) => ray_triangle(pre, a, b, c, ray.tmin, ray.tmax),
    }
}

/// Whether a triangle has zero area (the scene's own definition: an exactly zero
/// cross product). Such triangles are never hit.
pub fn degenerate(p: &Prim) -> bool {
    match *p {
        Prim::Tri(a, b, c) => (b - a).cross(c - a) == Vec3::ZERO,
        Prim::Sphere(..) => false,
    }
}

/// Every primitive's hit on the ray: `(id, t, u, v)`, in id order; degenerate
/// triangles never hit.
pub fn all_hits(prims: &[Prim], ray: &Ray) -> Vec<(u32, f32, f32, f32)> {
    let pre = RayPre::new(ray);
    prims
        .iter()
        .enumerate()
        .filter(|(_, p)| !degenerate(p))
        .filter_map(|(i, p)| prim_hit(&pre, p, ray).map(|(t, u, v)| (i as u32, t, u, v)))
        .collect()
}

/// Strategy for one primitive near the origin, of size up to `size`, with a mix of
/// general triangles, axis-aligned (flat-box) triangles, degenerate triangles and
/// spheres.
///
/// Degenerate triangles are a repeated vertex or an axis-parallel segment: both
/// stay exactly degenerate when moved. (A nearly collinear sliver is another
/// matter: below `f32` resolution its edge functions are rounding noise, and no
/// test can say where it is hit.)
pub fn prim(extent: f32, size: f32) -> impl Strategy<Value = Prim> + Clone {
    let tri =
        (vec3(extent), vec3(size), vec3(size), 0usize..8).prop_map(|(c, mut a, mut b, kind)| {
            match kind {
                // Flat on one axis: the triangle's box has zero thickness.
                0..=2 => {
                    a[kind] = 0.0;
                    b[kind] = 0.0;
                }
                // Degenerate: a repeated vertex.
                3 => b = a,
                // Degenerate: three points on a line parallel to an axis.
                4 => {
                    let k = (a.x.to_bits() % 3) as usize;
                    let (mut a1, mut b1) = (Vec3::ZERO, Vec3::ZERO);
                    a1[k] = a[k];
                    b1[k] = b[k];
                    (a, b) = (a1, b1);
                }
                _ => {}
            }
            Prim::Tri(c, c + a, c + b)
        });
    let sphere = (vec3(extent), (size * 0.005)..size).prop_map(|(c, r)| Prim::Sphere(c, r));
    prop_oneof![3 => tri, 2 => sphere]
}
