//! A geometry's outline: the boxes of its tree four levels below the root,
//! from which an instance's world box is made.
//!
//! An instance's world box used to be the box of its geometry's box as
//! placed: for a rotated mesh, the box of a rotated box, which holds much
//! empty space at its corners. A ray that crosses such a corner enters the
//! instance, carries itself into object space, tests the geometry's root and
//! finds nothing; on bunny-x1000's diffuse rays most instances entered were
//! such. Placing the (up to) sixteen boxes four levels below the geometry's
//! root instead, and taking the box of their images, hugs the placed
//! geometry far more closely, at the cost of sixteen box transforms a
//! placement instead of one; so only scenes whose tree over the instances is
//! a SAH tree use it (see `two_level::outlined`), not the Morton trees of
//! frames that move tens of thousands of instances. Every backend walks the
//! same tree over the instances, so the hits stay core's on every backend.
//!
//! The outline's boxes are widened by [`OUTLINE_SLACK`] of the geometry's
//! largest extent: a hit the walk finds in an instance lies on the object
//! ray, the world ray carried by rounded rows, so in world space it may lie
//! some ulps of the ray's coordinates off the world ray; a box that hugs the
//! primitives exactly could then be missed by a ray that meets a primitive
//! on its face. The world box is also never larger than the box of the whole
//! geometry's image, the box this replaces.

use crate::aabb::Aabb;
use crate::gpu::{BvhNode, EMPTY_CHILD};
use crate::instance::world_bounds;
use glam::{Affine3A, Vec3};

/// Boxes in an outline: a binary tree's nodes four levels below its root
/// (fewer where leaves end a branch sooner). Sixteen took core's walk of
/// bunny-x1000's diffuse rays from 0.45-0.49 to 0.55-0.57 Mrays/s, four to
/// 0.46-0.53, eight to 0.45-0.56 (one thread, a noisy machine).
pub const OUTLINE_BOXES: usize = 16;

/// How much each outline box is widened, as a share of the geometry's
/// largest extent (see the module's documentation): 1/512 covers the
/// rounding of the object ray for rays from hundreds of extents away.
pub const OUTLINE_SLACK: f32 = 1.0 / 512.0;

/// The object-space boxes an instance's world box is made from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Outline {
    /// Widened boxes; those past the tree's nodes are empty.
    pub(crate) boxes: [Aabb; OUTLINE_BOXES],
}

impl Outline {
    /// The outline of one box: the geometry's bounds themselves (a tree
    /// whose nodes lag its vertices, or one too small to have two levels).
    #[inline]
    pub(crate) fn whole(bounds: Aabb) -> Outline {
        let mut boxes = [Aabb::EMPTY; OUTLINE_BOXES];
        boxes[0] = bounds;
        Outline { boxes }
    }

    /// The outline of the tree rooted at `root` in `nodes`, whose primitives
    /// lie in `bounds`: the tree's boxes level by level, each inner node's
    /// box giving way to its two children's while the next level fits in
    /// [`OUTLINE_BOXES`] (a leaf keeps its box). Falls back to
    /// [`Outline::whole`] where the tree cannot be read (a root or child
    /// outside `nodes`) or `bounds` is not finite.
    pub(crate) fn of_tree(nodes: &[BvhNode], root: u32, bounds: Aabb) -> Outline {
        let extent = bounds.extent();
        let slack = extent.x.max(extent.y).max(extent.z) * OUTLINE_SLACK;
        if bounds.is_empty() || !slack.is_finite() {
            return Outline::whole(bounds);
        }
        // The tree's boxes level by level from the root's: each inner box
        // gives way to its node's two children while the level fits.
        let mut level = [(Aabb::EMPTY, EMPTY_CHILD, 0u32); OUTLINE_BOXES];
        level[0] = (bounds, root, 0);
        let mut k = 1;
        while 2 * k <= OUTLINE_BOXES {
            let mut next = [(Aabb::EMPTY, EMPTY_CHILD, 0u32); OUTLINE_BOXES];
            let mut n = 0;
            let mut split = false;
            for &(b, index, count) in &level[..k] {
                if count > 0 {
                    next[n] = (b, index, count);
                    n += 1;
                    continue;
                }
                let Some(node) = nodes.get(index as usize) else {
                    return Outline::whole(bounds);
                };
                split = true;
                for (lo, hi) in children(node) {
                    let (index, count) = (lo[3].to_bits(), hi[3].to_bits());
                    if !(count == 0 && index == EMPTY_CHILD) {
                        next[n] = (widened(lo, hi, slack), index, count);
                        n += 1;
                    }
                }
            }
            if !split {
                break;
            }
            level = next;
            k = n;
        }
        let mut boxes = [Aabb::EMPTY; OUTLINE_BOXES];
        for (b, l) in boxes.iter_mut().zip(&level[..k]) {
            *b = l.0;
        }
        if k == 0 {
            return Outline::whole(bounds);
        }
        Outline { boxes }
    }

    /// The world box of a geometry with this outline and `bounds` placed by
    /// `transform`: the box of the outline boxes' images
    /// ([`world_bounds`] each), within the image of `bounds`.
    pub(crate) fn world_box(&self, transform: &Affine3A, bounds: &Aabb) -> Aabb {
        let whole = world_bounds(transform, bounds);
        let mut placed = Aabb::EMPTY;
        for b in self.boxes.iter().filter(|b| !b.is_empty()) {
            placed = placed.union(world_bounds(transform, b));
        }
        if placed.is_empty() || whole.is_empty() {
            return whole;
        }
        Aabb {
            min: placed.min.max(whole.min),
            max: placed.max.min(whole.max),
        }
    }
}

/// A node's two children as their `(lo, hi)` rows.
#[inline]
fn children(node: &BvhNode) -> [(&[f32; 4], &[f32; 4]); 2] {
    [
        (&node.left_lo, &node.left_hi),
        (&node.right_lo, &node.right_hi),
    ]
}

/// The box of a child's rows, widened by `slack` on every side.
#[inline]
fn widened(lo: &[f32; 4], hi: &[f32; 4], slack: f32) -> Aabb {
    Aabb {
        min: Vec3::new(lo[0], lo[1], lo[2]) - slack,
        max: Vec3::new(hi[0], hi[1], hi[2]) + slack,
    }
}
