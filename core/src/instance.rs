//! Instances: a geometry placed in the world by an affine transform, with a
//! visibility mask, a user id and an optional material of its own.
//!
//! A ray enters an instance through the inverse transform, so a hit's `t` is
//! in world units whatever the scale (directions are not renormalised), as in
//! Embree. The device record of an instance ([`GpuInstance`]) holds that
//! inverse, worked out once in `f64`, and the instance's world box is the
//! geometry's box carried through the transform in `f64` and rounded outwards,
//! so that no ray that meets the geometry misses the box.

use crate::aabb::Aabb;
use crate::error::Error;
use crate::gpu::{EMPTY_CHILD, GpuInstance};
use glam::{Affine3A, DAffine3, DMat3, Vec3A};

/// Most instances a scene may hold: instance indices are `u32`, with
/// `u32::MAX` meaning none ([`crate::Hit::NO_INSTANCE`]), and the top-level
/// tree is built by core's builder, whose depth bound is proven for fewer than
/// `2^31` entries.
pub const MAX_INSTANCES: usize = 1 << 30;

/// Largest condition number (`|M| |M^-1|`, Frobenius norms) of an instance's
/// linear part. Beyond it `f32` keeps fewer than about one digit in ten
/// thousand of a ray's object-space direction, so the hits would be noise;
/// such a transform is refused as nearly singular.
pub const MAX_TRANSFORM_CONDITION: f64 = 1e6;

/// A placement of a geometry.
///
/// ```
/// use prism_core::glam::{Affine3A, Vec3};
/// use prism_core::Instance;
///
/// let tree = Instance::new(0, Affine3A::from_translation(Vec3::new(4.0, 0.0, 2.0)))
///     .with_mask(0b0000_0010) // seen only by rays whose mask has bit 1
///     .with_user_id(4711)
///     .with_material(3); // material 3 instead of the geometry's own
/// assert_eq!(tree.mask, 2);
/// assert_eq!(tree.material, Some(3));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Instance {
    /// Object to world.
    pub transform: Affine3A,
    /// Which of the scene's geometries it places.
    pub geometry: u32,
    /// Visibility: a ray sees the instance when `ray.mask & mask != 0`.
    pub mask: u8,
    /// The caller's own id for the instance (Prism only keeps it).
    pub user_id: u32,
    /// A material for every primitive of the instance instead of the
    /// geometry's own, or `None`.
    pub material: Option<u32>,
}

impl Instance {
    /// `geometry` placed by `transform`, seen by every ray (mask `0xFF`), user
    /// id 0, the geometry's own materials.
    #[inline]
    pub fn new(geometry: u32, transform: Affine3A) -> Self {
        Self {
            transform,
            geometry,
            mask: 0xFF,
            user_id: 0,
            material: None,
        }
    }

    /// The same instance with visibility mask `mask`.
    #[inline]
    pub fn with_mask(self, mask: u8) -> Self {
        Self { mask, ..self }
    }

    /// The same instance with user id `user_id`.
    #[inline]
    pub fn with_user_id(self, user_id: u32) -> Self {
        Self { user_id, ..self }
    }

    /// The same instance with every primitive of material `material`.
    #[inline]
    pub fn with_material(self, material: u32) -> Self {
        Self {
            material: Some(material),
            ..self
        }
    }

    /// Check the instance (index `index`) against a scene of `geometries`
    /// geometries and `materials` materials.
    pub(crate) fn validate(
        &self,
        index: usize,
        geometries: usize,
        materials: usize,
    ) -> Result<(), Error> {
        if self.geometry as usize >= geometries {
            return Err(Error::GeometryOutOfRange {
                instance: index,
                geometry: self.geometry,
                count: geometries,
            });
        }
        if let Some(m) = self.material
            && m as usize >= materials
        {
            return Err(Error::InstanceMaterialOutOfRange {
                instance: index,
                material: m,
                count: materials,
            });
        }
        world_to_object(index, &self.transform).map(|_| ())
    }
}

/// The inverse of `transform` in `f64`, or [`Error::TransformInvalid`] naming
/// `instance` when the transform is not finite or (nearly) singular (see
/// [`MAX_TRANSFORM_CONDITION`]).
pub(crate) fn world_to_object(instance: usize, transform: &Affine3A) -> Result<DAffine3, Error> {
    let bad = |reason| {
        Err(Error::TransformInvalid {
            instance,
            transform: rows(transform),
            reason,
        })
    };
    if !transform.is_finite() {
        return bad("is not finite");
    }
    // The inverse by cofactors, in f64: the columns of the adjugate's
    // transpose are cross products of M's columns, and det = x . (y x z).
    let (x, y, z) = (
        transform.matrix3.x_axis.as_dvec3(),
        transform.matrix3.y_axis.as_dvec3(),
        transform.matrix3.z_axis.as_dvec3(),
    );
    let (yz, zx, xy) = (y.cross(z), z.cross(x), x.cross(y));
    let det = x.dot(yz);
    if det == 0.0 || !det.is_finite() {
        return bad("is singular (its linear part has determinant 0)");
    }
    let r = 1.0 / det;
    // Rows of the inverse are (y x z) / det, (z x x) / det, (x x y) / det.
    let inv = DMat3::from_cols(yz * r, zx * r, xy * r).transpose();
    let norm2 = |a: &DMat3| {
        a.x_axis.length_squared() + a.y_axis.length_squared() + a.z_axis.length_squared()
    };
    let m_norm2 = x.length_squared() + y.length_squared() + z.length_squared();
    let condition2 = m_norm2 * norm2(&inv);
    // Written so that a NaN (an overflow) is refused too.
    if condition2.is_nan() || condition2 > MAX_TRANSFORM_CONDITION * MAX_TRANSFORM_CONDITION {
        return bad("is nearly singular (condition number over 1e6)");
    }
    let translation = -(inv * transform.translation.as_dvec3());
    Ok(DAffine3::from_mat3_translation(inv, translation))
}

/// `transform` as three rows `(m00 m01 m02 tx)`, ..., as the instance files
/// and the errors write it.
pub fn rows(transform: &Affine3A) -> [[f32; 4]; 3] {
    let m = transform.matrix3;
    let t = transform.translation;
    [
        [m.x_axis.x, m.y_axis.x, m.z_axis.x, t.x],
        [m.x_axis.y, m.y_axis.y, m.z_axis.y, t.y],
        [m.x_axis.z, m.y_axis.z, m.z_axis.z, t.z],
    ]
}

/// The transform of three rows `(m00 m01 m02 tx)`, ... (the `.instances`
/// files' records), the inverse of [`rows`].
pub fn from_rows(r: [[f32; 4]; 3]) -> Affine3A {
    Affine3A::from_cols_array(&[
        r[0][0], r[1][0], r[2][0], r[0][1], r[1][1], r[2][1], r[0][2], r[1][2], r[2][2], r[0][3],
        r[1][3], r[2][3],
    ])
}

/// The device record of an instance whose geometry's tree starts at node
/// `root`: the world-to-object rows (rounded from `inv`), root, mask, material
/// override and the instance's scale, a bound on how much `transform`
/// stretches a length (a primitive's rounding error in object units grows by
/// at most this much in the world, see
/// [`crate::integrator::surface_margin`]).
///
/// The scale is `sqrt` of the largest Gershgorin row sum of `M^T M`, which
/// bounds its largest eigenvalue, so the result bounds `M`'s largest singular
/// value; for a rotation and a uniform scale `s` it is `s` itself (1 for the
/// identity, so that an instance with the identity shades as a flat scene).
pub(crate) fn gpu_instance(
    transform: &Affine3A,
    mask: u8,
    material: u32,
    inv: &DAffine3,
    root: u32,
) -> GpuInstance {
    let m = inv.matrix3;
    let t = inv.translation;
    let row = |k: usize| {
        [
            m.x_axis[k] as f32,
            m.y_axis[k] as f32,
            m.z_axis[k] as f32,
            t[k] as f32,
        ]
    };
    // In f32 SIMD lanes: the bound is a margin's scale, where a few ulps
    // either way do not matter (and the identity still gives exactly 1).
    let l = transform.matrix3;
    let (x, y, z) = (l.x_axis, l.y_axis, l.z_axis);
    let (xy, yz, zx) = (x.dot(y).abs(), y.dot(z).abs(), z.dot(x).abs());
    let gershgorin = (x.length_squared() + xy + zx)
        .max(y.length_squared() + xy + yz)
        .max(z.length_squared() + yz + zx);
    GpuInstance {
        world_to_object: [row(0), row(1), row(2)],
        info: [
            f32::from_bits(root),
            f32::from_bits(mask as u32),
            f32::from_bits(material),
            libm::sqrtf(gershgorin),
        ],
    }
}

/// The record of a removed instance: no tree, seen by no ray.
pub(crate) const VACANT: GpuInstance = GpuInstance {
    world_to_object: [[0.0; 4]; 3],
    info: [
        f32::from_bits(EMPTY_CHILD),
        0.0,
        f32::from_bits(u32::MAX),
        0.0,
    ],
};

/// The world box of an object box `b` placed by `transform`, holding the
/// exact image of `b`: the centre and half extent carried through in `f32`
/// (`|M|` times the half extent), then widened by 4 ulps of the largest
/// magnitude involved, which bounds the rounding of those few operations
/// (each result is a sum of at most four rounded terms no larger than it).
/// A side whose bound overflows `f32` is unbounded (`-inf` or `+inf`). An
/// empty `b` stays empty.
pub(crate) fn world_bounds(transform: &Affine3A, b: &Aabb) -> Aabb {
    if b.is_empty() {
        return Aabb::EMPTY;
    }
    let m = transform.matrix3;
    let (lo, hi) = (Vec3A::from(b.min), Vec3A::from(b.max));
    let c = (lo + hi) * 0.5;
    let e = (hi - lo) * 0.5;
    let abs = glam::Mat3A::from_cols(m.x_axis.abs(), m.y_axis.abs(), m.z_axis.abs());
    let wc = m * c + transform.translation;
    let we = abs * e;
    // The largest magnitude any term or partial sum reaches, per axis.
    let scale = abs * (c.abs() + e) + transform.translation.abs();
    let pad = we + scale * (4.0 * f32::EPSILON);
    // Past the range of f32 (a geometry spanning 1e30 scaled by 1e15), the
    // centre and the pad overflow and `inf - inf` is NaN, a box no ray
    // enters: such a side is unbounded instead, so the box still holds the
    // image and the instance stays reachable.
    let (lo, hi) = (wc - pad, wc + pad);
    Aabb {
        min: Vec3A::select(lo.is_nan_mask(), Vec3A::NEG_INFINITY, lo).into(),
        max: Vec3A::select(hi.is_nan_mask(), Vec3A::INFINITY, hi).into(),
    }
}
