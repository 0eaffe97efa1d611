//! Binned SAH BVH builder producing the two-children-per-node layout of [`BvhNode`].
//!
//! - **Binning**: [`BINS`] = 16 bins per axis over the centroid bounds, all three
//!   axes tried; 16 bins find splits within a few percent of a full sweep's SAH
//!   at a fraction of its cost (Wald 2007).
//! - **Cost model**: node traversal [`COST_TRAVERSAL`] = 1, primitive test
//!   [`COST_INTERSECT`] = 1. A range becomes a leaf when splitting does not lower
//!   the SAH cost and it holds at most [`MAX_LEAF_SIZE`] primitives; a larger
//!   range is always split.
//! - **Depth bound**: from depth [`MEDIAN_SPLIT_DEPTH`] = 32 on, ranges are split at
//!   the median, which halves them. Any tree over fewer than `2^31` primitives is
//!   therefore shallower than 64 levels, so the fixed traversal stack of
//!   [`crate::gpu::TRAVERSAL_STACK_SIZE`] = 64 entries cannot overflow.
//! - **Degenerate input**: ranges whose centroids coincide (no axis to bin on)
//!   are split in index order, so duplicated primitives never cause deep trees.

use crate::aabb::Aabb;
use crate::gpu::{BvhNode, EMPTY_CHILD};
use alloc::vec::Vec;
use glam::Vec3;

/// Bins per axis.
pub const BINS: usize = 16;
/// Largest leaf the SAH may choose; larger ranges are always split.
pub const MAX_LEAF_SIZE: usize = 8;
/// SAH cost of visiting a node (relative to [`COST_INTERSECT`]).
pub const COST_TRAVERSAL: f32 = 1.0;
/// SAH cost of testing one primitive.
pub const COST_INTERSECT: f32 = 1.0;
/// Depth from which ranges are split at the median (see the module docs).
pub const MEDIAN_SPLIT_DEPTH: u32 = 32;

/// A built BVH: flattened nodes (root at index 0) and the leaf order of primitives.
#[derive(Clone, Debug, Default)]
pub struct Bvh {
    /// Nodes, root first.
    pub nodes: Vec<BvhNode>,
    /// `order[slot]` = input index of the primitive stored at leaf slot `slot`.
    pub order: Vec<u32>,
    /// Depth of the deepest leaf (root children are at depth 1).
    pub depth: u32,
}

/// One child as the builder hands it to its parent.
#[derive(Clone, Copy)]
struct ChildRef {
    bounds: Aabb,
    index: u32,
    count: u32,
}

impl ChildRef {
    const EMPTY: ChildRef = ChildRef {
        bounds: Aabb::EMPTY,
        index: EMPTY_CHILD,
        count: 0,
    };

    /// The two node rows of this child.
    fn rows(&self) -> ([f32; 4], [f32; 4]) {
        if self.index == EMPTY_CHILD {
            // An absent child: a box at +inf, which the slab test never enters.
            let inf = f32::INFINITY;
            return (
                [inf, inf, inf, f32::from_bits(EMPTY_CHILD)],
                [inf, inf, inf, f32::from_bits(0)],
            );
        }
        let (lo, hi) = (self.bounds.min, self.bounds.max);
        (
            [lo.x, lo.y, lo.z, f32::from_bits(self.index)],
            [hi.x, hi.y, hi.z, f32::from_bits(self.count)],
        )
    }
}

struct Builder<'a> {
    bounds: &'a [Aabb],
    centroids: &'a [Vec3],
    order: Vec<u32>,
    nodes: Vec<BvhNode>,
    depth: u32,
}

impl Bvh {
    /// Build over primitives given by their bounds (centroids are the box centres).
    ///
    /// Every input index appears exactly once in `order`. An empty input gives a
    /// root with two absent children.
    pub fn build(bounds: &[Aabb]) -> Bvh {
        let centroids: Vec<Vec3> = bounds.iter().map(Aabb::center).collect();
        let mut b = Builder {
            bounds,
            centroids: &centroids,
            order: (0..bounds.len() as u32).collect(),
            nodes: Vec::with_capacity(bounds.len().max(1)),
            depth: 0,
        };
        b.nodes.push(BvhNode::default());
        let n = bounds.len();
        let root = b.range_bounds(0, n);
        if n == 0 {
            b.fill(0, ChildRef::EMPTY, ChildRef::EMPTY);
        } else if !b.should_split(0, n, &root, 0) {
            b.depth = 1;
            b.fill(
                0,
                ChildRef {
                    bounds: root,
                    index: 0,
                    count: n as u32,
                },
                ChildRef::EMPTY,
            );
        } else {
            b.build_inner(0, 0, n, 0);
        }
        Bvh {
            nodes: b.nodes,
            order: b.order,
            depth: b.depth,
        }
    }
}

// ok (indexing in the builder): every range `[start, end)` lies in `[0, n)`
// (the root range, then halves split at a point strictly inside); `order` is a
// permutation of `0..n`, so its entries index `bounds` and `centroids`; axes
// come from `0..3` or `max_position`; `bin_of` clamps bins to `BINS - 1`; nodes
// are pushed before they are filled.
impl Builder<'_> {
    fn range_bounds(&self, start: usize, end: usize) -> Aabb {
        self.order[start..end]
            .iter()
            .fold(Aabb::EMPTY, |a, &i| a.union(self.bounds[i as usize]))
    }

    fn centroid_bounds(&self, start: usize, end: usize) -> Aabb {
        self.order[start..end]
            .iter()
            .fold(Aabb::EMPTY, |a, &i| a.grow(self.centroids[i as usize]))
    }

    fn fill(&mut self, node: usize, left: ChildRef, right: ChildRef) {
        let (left_lo, left_hi) = left.rows();
        let (right_lo, right_hi) = right.rows();
        self.nodes[node] = BvhNode {
            left_lo,
            left_hi,
            right_lo,
            right_hi,
        };
    }

    /// Fill `node` with the two children of the range `[start, end)` (at least 2
    /// primitives), split at `depth`.
    fn build_inner(&mut self, node: usize, start: usize, end: usize, depth: u32) {
        let mid = match self.split(start, end, depth) {
            Some(mid) => mid,
            None => start + (end - start) / 2,
        };
        let left = self.build_child(start, mid, depth + 1);
        let right = self.build_child(mid, end, depth + 1);
        self.fill(node, left, right);
    }

    /// Build the subtree of `[start, end)` as a child at `depth`.
    fn build_child(&mut self, start: usize, end: usize, depth: u32) -> ChildRef {
        let bounds = self.range_bounds(start, end);
        let count = end - start;
        if !self.should_split(start, end, &bounds, depth) {
            self.depth = self.depth.max(depth);
            return ChildRef {
                bounds,
                index: start as u32,
                count: count as u32,
            };
        }
        let node = self.nodes.len();
        self.nodes.push(BvhNode::default());
        self.build_inner(node, start, end, depth);
        ChildRef {
            bounds,
            index: node as u32,
            count: 0,
        }
    }

    /// The leaf policy: split ranges above [`MAX_LEAF_SIZE`], keep single
    /// primitives, and let the SAH decide in between.
    fn should_split(&self, start: usize, end: usize, bounds: &Aabb, depth: u32) -> bool {
        let count = end - start;
        count > 1 && (count > MAX_LEAF_SIZE || self.sah_split_beats_leaf(start, end, bounds, depth))
    }

    /// Whether the best binned split is cheaper than a leaf (ranges of 2..=MAX_LEAF_SIZE).
    fn sah_split_beats_leaf(&self, start: usize, end: usize, bounds: &Aabb, depth: u32) -> bool {
        if depth >= MEDIAN_SPLIT_DEPTH {
            return true;
        }
        let leaf_cost = COST_INTERSECT * (end - start) as f32;
        match self.best_binned_split(start, end) {
            Some((_, _, cost)) => {
                let area = bounds.half_area();
                // cost is sum(A_child * N_child); normalise by the parent's area.
                let split_cost = if area > 0.0 {
                    COST_TRAVERSAL + COST_INTERSECT * cost / area
                } else {
                    f32::INFINITY
                };
                split_cost < leaf_cost
            }
            None => false,
        }
    }

    /// Partition `[start, end)` and return the split point, or `None` when no
    /// binned split exists (coincident centroids).
    fn split(&mut self, start: usize, end: usize, depth: u32) -> Option<usize> {
        if end - start < 2 {
            return None;
        }
        if depth >= MEDIAN_SPLIT_DEPTH {
            return Some(self.median_split(start, end));
        }
        let (axis, bin, _) = self.best_binned_split(start, end)?;
        let cb = self.centroid_bounds(start, end);
        let (lo, scale) = bin_mapping(&cb, axis);
        let centroids = self.centroids;
        let slice = &mut self.order[start..end];
        // In-place partition: primitives whose bin is left of the split first.
        let mut left = 0;
        for i in 0..slice.len() {
            let c = centroids[slice[i] as usize][axis];
            if bin_of(c, lo, scale) < bin {
                slice.swap(i, left);
                left += 1;
            }
        }
        if left == 0 || left == slice.len() {
            // Rounding put everything on one side; fall back to the median.
            return Some(self.median_split(start, end));
        }
        Some(start + left)
    }

    /// Split at the median centroid along the widest centroid axis.
    fn median_split(&mut self, start: usize, end: usize) -> usize {
        let cb = self.centroid_bounds(start, end);
        let axis = cb.extent().max_position();
        let mid = (end - start) / 2;
        let centroids = self.centroids;
        self.order[start..end].select_nth_unstable_by(mid, |&a, &b| {
            centroids[a as usize][axis].total_cmp(&centroids[b as usize][axis])
        });
        start + mid
    }

    /// The best `(axis, first right bin, sum of A*N)` over all axes, or `None`
    /// when the centroids coincide.
    fn best_binned_split(&self, start: usize, end: usize) -> Option<(usize, usize, f32)> {
        let cb = self.centroid_bounds(start, end);
        let mut best: Option<(usize, usize, f32)> = None;
        for axis in 0..3 {
            let extent = cb.max[axis] - cb.min[axis];
            if extent.is_nan() || extent <= 0.0 {
                continue;
            }
            let (lo, scale) = bin_mapping(&cb, axis);
            let mut bin_bounds = [Aabb::EMPTY; BINS];
            let mut bin_count = [0u32; BINS];
            for &i in &self.order[start..end] {
                let b = bin_of(self.centroids[i as usize][axis], lo, scale);
                bin_bounds[b] = bin_bounds[b].union(self.bounds[i as usize]);
                bin_count[b] += 1;
            }
            // Sweep from the right to get every suffix, then from the left.
            let mut right_area = [0.0f32; BINS];
            let mut right_count = [0u32; BINS];
            let (mut acc, mut n) = (Aabb::EMPTY, 0u32);
            for b in (1..BINS).rev() {
                acc = acc.union(bin_bounds[b]);
                n += bin_count[b];
                right_area[b] = acc.half_area();
                right_count[b] = n;
            }
            let (mut acc, mut n) = (Aabb::EMPTY, 0u32);
            for b in 1..BINS {
                acc = acc.union(bin_bounds[b - 1]);
                n += bin_count[b - 1];
                if n == 0 || right_count[b] == 0 {
                    continue;
                }
                let cost = acc.half_area() * n as f32 + right_area[b] * right_count[b] as f32;
                if best.is_none_or(|(_, _, c)| cost < c) {
                    best = Some((axis, b, cost));
                }
            }
        }
        best
    }
}

/// `(origin, scale)` mapping a centroid coordinate on `axis` to a bin.
#[inline]
fn bin_mapping(cb: &Aabb, axis: usize) -> (f32, f32) {
    let extent = cb.max[axis] - cb.min[axis];
    (cb.min[axis], BINS as f32 * (1.0 - 1e-6) / extent)
}

#[inline]
fn bin_of(c: f32, lo: f32, scale: f32) -> usize {
    (((c - lo) * scale) as usize).min(BINS - 1)
}

/// The bounds of a sphere, rounded outwards: `center +- radius` rounded to
/// nearest can fall half an ulp inside the sphere, and a ray through that sliver
/// (or tangent to the sphere in the box's face plane) would hit the sphere but
/// miss its box.
#[inline]
pub fn sphere_bounds(center: Vec3, radius: f32) -> Aabb {
    Aabb {
        min: (center - Vec3::splat(radius)).map(f32::next_down),
        max: (center + Vec3::splat(radius)).map(f32::next_up),
    }
}

/// The bounds of a triangle.
#[inline]
pub fn triangle_bounds(v0: Vec3, v1: Vec3, v2: Vec3) -> Aabb {
    Aabb {
        min: v0.min(v1).min(v2),
        max: v0.max(v1).max(v2),
    }
}
