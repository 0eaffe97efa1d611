//! Rays and hits: the values `intersect` / `occluded` take and return.

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

/// A ray `origin + t * dir` for `t` in `(tmin, tmax)`.
///
/// The layout is that of one record of the `.rays` files
/// (`ox oy oz tmin dx dy dz tmax`, little-endian `f32`), so a ray file casts to
/// `&[Ray]` and a batch uploads to a device as is (see [`crate::gpu::GpuRay`]).
/// The direction need not be unit length; `t` is measured in units of `dir`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct Ray {
    /// Start point.
    pub origin: Vec3,
    /// Smallest accepted hit distance (exclusive); finite. (A ray open to
    /// `-inf` would enter the BVH's absent-child boxes, which lie at `+inf`, when
    /// its direction is negative on every axis; `-f32::MAX` gives the same hits.)
    pub tmin: f32,
    /// Direction (any non-zero length).
    pub dir: Vec3,
    /// Largest accepted hit distance (exclusive).
    pub tmax: f32,
}

impl Ray {
    /// A ray over `(0, +inf)`.
    #[inline]
    pub fn new(origin: Vec3, dir: Vec3) -> Self {
        Self {
            origin,
            tmin: 0.0,
            dir,
            tmax: f32::INFINITY,
        }
    }

    /// A ray over `(tmin, tmax)`.
    #[inline]
    pub fn segment(origin: Vec3, dir: Vec3, tmin: f32, tmax: f32) -> Self {
        Self {
            origin,
            tmin,
            dir,
            tmax,
        }
    }

    /// The point at distance `t`.
    #[inline]
    pub fn at(&self, t: f32) -> Vec3 {
        self.origin + t * self.dir
    }

    /// Whether every component is usable: finite origin and direction, a non-zero
    /// direction, a finite `tmin` and `tmin <= tmax` (`tmax` may be `+inf`).
    #[inline]
    pub fn is_valid(&self) -> bool {
        self.origin.is_finite()
            && self.dir.is_finite()
            && self.dir != Vec3::ZERO
            && self.tmin.is_finite()
            && !self.tmax.is_nan()
            && self.tmin <= self.tmax
    }
}

/// The closest hit of a ray: distance, barycentrics and primitive id.
///
/// 16 bytes, one vector store on a GPU. A miss has `prim == Hit::NO_PRIM` and
/// `t == +inf`. For a triangle the hit point is `(1-u-v)*v0 + u*v1 + v*v2`
/// (Embree's convention); for a sphere `u = v = 0`.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct Hit {
    /// Distance along the ray, in units of `dir`.
    pub t: f32,
    /// Barycentric weight of `v1`.
    pub u: f32,
    /// Barycentric weight of `v2`.
    pub v: f32,
    /// Scene primitive id (see [`crate::Scene`] for the numbering), or `NO_PRIM`.
    pub prim: u32,
}

impl Hit {
    /// The primitive id of a miss.
    pub const NO_PRIM: u32 = u32::MAX;
    /// A miss.
    pub const MISS: Hit = Hit {
        t: f32::INFINITY,
        u: 0.0,
        v: 0.0,
        prim: Hit::NO_PRIM,
    };

    /// Whether the ray hit anything.
    #[inline]
    pub fn is_hit(&self) -> bool {
        self.prim != Self::NO_PRIM
    }
}

impl Default for Hit {
    fn default() -> Self {
        Hit::MISS
    }
}
