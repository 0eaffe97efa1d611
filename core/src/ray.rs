//! Rays and hits: the values `intersect` / `occluded` take and return.

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

/// A ray `origin + t * dir` for `t` in `(tmin, tmax)`, seen by the instances
/// whose mask shares a bit with its own.
///
/// Three 16-byte rows, `(origin, tmin)`, `(dir, tmax)`, `(mask, 0, 0, 0)`, so a
/// batch uploads to a device as is (see [`crate::gpu::GpuRay`]). The first two
/// rows are one record of the `.rays` files (`ox oy oz tmin dx dy dz tmax`,
/// little-endian `f32`; [`Ray::from_record`]). The direction need not be unit
/// length; `t` is measured in units of `dir`.
#[repr(C, align(16))]
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
    /// Visibility mask: the ray sees an instance when `mask & instance.mask !=
    /// 0` (a flat scene is one instance of mask `0xFF`). Only the low 8 bits
    /// meet an instance's; [`Ray::new`] sets all of them.
    pub mask: u32,
    /// Zero; pads the ray to three 16-byte rows.
    pub(crate) reserved: [u32; 3],
}

impl Ray {
    /// The mask of a ray that sees every instance.
    pub const ALL: u32 = u32::MAX;

    /// A ray over `(0, +inf)` that sees every instance.
    #[inline]
    pub fn new(origin: Vec3, dir: Vec3) -> Self {
        Self::segment(origin, dir, 0.0, f32::INFINITY)
    }

    /// A ray over `(tmin, tmax)` that sees every instance.
    #[inline]
    pub fn segment(origin: Vec3, dir: Vec3, tmin: f32, tmax: f32) -> Self {
        Self {
            origin,
            tmin,
            dir,
            tmax,
            mask: Self::ALL,
            reserved: [0; 3],
        }
    }

    /// The same ray with visibility mask `mask`.
    #[inline]
    pub fn with_mask(self, mask: u32) -> Self {
        Self { mask, ..self }
    }

    /// The ray of one `.rays` file record `[ox, oy, oz, tmin, dx, dy, dz,
    /// tmax]`, seeing every instance.
    #[inline]
    pub fn from_record(r: [f32; 8]) -> Self {
        Self::segment(
            Vec3::new(r[0], r[1], r[2]),
            Vec3::new(r[4], r[5], r[6]),
            r[3],
            r[7],
        )
    }

    /// The ray's `.rays` file record (its mask is not part of it).
    #[inline]
    pub fn record(&self) -> [f32; 8] {
        let (o, d) = (self.origin, self.dir);
        [o.x, o.y, o.z, self.tmin, d.x, d.y, d.z, self.tmax]
    }

    /// The point at distance `t`.
    #[inline]
    pub fn at(&self, t: f32) -> Vec3 {
        self.origin + t * self.dir
    }

    /// Whether every component is usable: finite origin and direction, a non-zero
    /// direction, a finite `tmin` and `tmin <= tmax` (`tmax` may be `+inf`).
    /// Any mask is usable.
    #[inline]
    pub fn is_valid(&self) -> bool {
        // `&`, not `&&`: every test is cheap, and without branches a batch's
        // check runs at the speed of its memory.
        let (o, d) = (self.origin, self.dir);
        let finite = |v: f32| v.is_finite();
        finite(o.x)
            & finite(o.y)
            & finite(o.z)
            & finite(d.x)
            & finite(d.y)
            & finite(d.z)
            & ((d.x != 0.0) | (d.y != 0.0) | (d.z != 0.0))
            & finite(self.tmin)
            & !self.tmax.is_nan()
            & (self.tmin <= self.tmax)
    }
}

/// The closest hit of a ray: distance, barycentrics, primitive and instance,
/// and for a heightfield the cell and the face.
///
/// 32 bytes, two vector stores on a GPU. A miss has `prim == Hit::NO_PRIM`,
/// `instance == Hit::NO_INSTANCE` and `t == +inf`. For a triangle the hit point
/// is `(1-u-v)*v0 + u*v1 + v*v2` (Embree's convention); for a sphere `u = v = 0`.
/// For a heightfield ([`crate::heightfield`]) `u = v = 0`, `cell` is the column
/// hit (`z * width + x`) and `face` the side of it
/// ([`crate::heightfield::FACE_TOP`] and the others; its outward normal is
/// [`crate::heightfield::face_normal`]); both are 0 for triangles and spheres.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct Hit {
    /// Distance along the ray, in units of `dir` (world units for instances).
    pub t: f32,
    /// Barycentric weight of `v1`.
    pub u: f32,
    /// Barycentric weight of `v2`.
    pub v: f32,
    /// Primitive id within its geometry (the scene's own primitives for a flat
    /// scene; see [`crate::Scene`] for the numbering), or `NO_PRIM`.
    pub prim: u32,
    /// Index of the instance hit (0 for a flat scene's implicit instance), or
    /// `NO_INSTANCE`.
    pub instance: u32,
    /// Heightfield: the cell hit, `z * width + x`. 0 for triangles, spheres
    /// and a miss.
    pub cell: u32,
    /// Heightfield: the face of the cell's column hit (0 = +y top, 1 = -y
    /// bottom, 2 = -x, 3 = +x, 4 = -z, 5 = +z; [`crate::heightfield::face_normal`]).
    /// 0 for triangles, spheres and a miss.
    pub face: u32,
    /// Zero; pads the hit to two 16-byte rows.
    pub(crate) reserved: u32,
}

impl Hit {
    /// The primitive id of a miss.
    pub const NO_PRIM: u32 = u32::MAX;
    /// The instance index of a miss.
    pub const NO_INSTANCE: u32 = u32::MAX;
    /// A miss.
    pub const MISS: Hit = Hit {
        t: f32::INFINITY,
        u: 0.0,
        v: 0.0,
        prim: Hit::NO_PRIM,
        instance: Hit::NO_INSTANCE,
        cell: 0,
        face: 0,
        reserved: 0,
    };

    /// A hit at `t` with barycentrics `(u, v)` on primitive `prim` of instance
    /// `instance` (cell and face 0: a triangle or a sphere).
    #[inline]
    pub fn new(t: f32, u: f32, v: f32, prim: u32, instance: u32) -> Self {
        Hit {
            t,
            u,
            v,
            prim,
            instance,
            cell: 0,
            face: 0,
            reserved: 0,
        }
    }

    /// A hit at `t` on face `face` of cell `cell` of the heightfield that is
    /// primitive `prim` of instance `instance` (`u = v = 0`).
    #[inline]
    pub fn heightfield(t: f32, prim: u32, instance: u32, cell: u32, face: u32) -> Self {
        Hit {
            t,
            u: 0.0,
            v: 0.0,
            prim,
            instance,
            cell,
            face,
            reserved: 0,
        }
    }

    /// The same hit on instance `instance` (what a two-level walk makes of a
    /// hit in an instance's geometry).
    #[inline]
    pub fn with_instance(self, instance: u32) -> Self {
        Hit { instance, ..self }
    }

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
