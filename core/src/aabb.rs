//! Axis-aligned bounding boxes.

use glam::Vec3;

/// An axis-aligned box; `Aabb::EMPTY` (inverted, `min = +inf`) contains nothing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    /// Smallest corner.
    pub min: Vec3,
    /// Largest corner.
    pub max: Vec3,
}

impl Aabb {
    /// The empty box: the identity of [`Aabb::union`], holding no point.
    ///
    /// Not a box for the slab test: its slabs give entry -inf and exit +inf on
    /// every axis, so [`crate::intersect::ray_aabb`] reports a hit. A BVH gives
    /// an absent child the box at +inf instead, which every ray misses.
    pub const EMPTY: Aabb = Aabb {
        min: Vec3::INFINITY,
        max: Vec3::NEG_INFINITY,
    };

    /// The box of one point.
    #[inline]
    pub fn from_point(p: Vec3) -> Self {
        Self { min: p, max: p }
    }

    /// The smallest box holding both.
    #[inline]
    pub fn union(self, other: Aabb) -> Aabb {
        Aabb {
            min: self.min.min(other.min),
            max: self.max.max(other.max),
        }
    }

    /// The smallest box holding `self` and `p`.
    #[inline]
    pub fn grow(self, p: Vec3) -> Aabb {
        Aabb {
            min: self.min.min(p),
            max: self.max.max(p),
        }
    }

    /// Whether the box holds no point.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.min.x > self.max.x || self.min.y > self.max.y || self.min.z > self.max.z
    }

    /// Size along each axis (zero for an empty box).
    #[inline]
    pub fn extent(&self) -> Vec3 {
        if self.is_empty() {
            Vec3::ZERO
        } else {
            self.max - self.min
        }
    }

    /// Centre point.
    #[inline]
    pub fn center(&self) -> Vec3 {
        0.5 * (self.min + self.max)
    }

    /// Half the surface area (the SAH only compares ratios); 0 for an empty box.
    #[inline]
    pub fn half_area(&self) -> f32 {
        let e = self.extent();
        e.x * e.y + e.y * e.z + e.z * e.x
    }

    /// Length of the diagonal.
    #[inline]
    pub fn diagonal(&self) -> f32 {
        self.extent().length()
    }

    /// Whether `p` lies inside or on the box.
    #[inline]
    pub fn contains(&self, p: Vec3) -> bool {
        p.cmpge(self.min).all() && p.cmple(self.max).all()
    }
}

impl Default for Aabb {
    fn default() -> Self {
        Aabb::EMPTY
    }
}
