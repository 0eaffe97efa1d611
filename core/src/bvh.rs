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
//! - **Build cost**: each range is read in four streaming passes (its bounds, its
//!   centroid bounds, one pass binning all three axes, the partition) over boxes
//!   kept in slot order, and the SAH sweeps visit only occupied bins, so that the
//!   many small ranges near the leaves cost little. The plan of a range (leaf or
//!   split) is made once.

use crate::aabb::Aabb;
use crate::gpu::{BvhNode, EMPTY_CHILD};
use alloc::vec::Vec;
use glam::{Vec3, Vec3A};

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

/// A primitive as the builder reads it: its box and the box's centre, as
/// 16-byte vectors so that a union or a centroid bound is one SIMD min and max.
///
/// The builder keeps these in leaf-slot order, permuted together with
/// [`Bvh::order`], so that every pass over a range (bounds, binning,
/// partitioning) streams through contiguous memory instead of gathering
/// through `order` (a 70k-triangle mesh's boxes do not fit in L2).
#[derive(Clone, Copy)]
struct BuildPrim {
    bounds: Box3A,
    centroid: Vec3A,
}

impl BuildPrim {
    #[inline]
    fn new(bounds: Aabb, centroid: Vec3) -> Self {
        BuildPrim {
            bounds: Box3A {
                min: bounds.min.into(),
                max: bounds.max.into(),
            },
            centroid: centroid.into(),
        }
    }
}

/// [`Aabb`] in 16-byte vectors: the builder's working box.
#[derive(Clone, Copy)]
struct Box3A {
    min: Vec3A,
    max: Vec3A,
}

impl Box3A {
    const EMPTY: Box3A = Box3A {
        min: Vec3A::INFINITY,
        max: Vec3A::NEG_INFINITY,
    };

    /// `self` grown by `other`: the same box as `Aabb::union(self, other)`,
    /// whose `Vec3::min` picks `other`'s value where the two are equal or
    /// unordered, as `Vec3A::min` (`minps` on x86) does.
    #[inline]
    fn union(self, other: Box3A) -> Box3A {
        Box3A {
            min: self.min.min(other.min),
            max: self.max.max(other.max),
        }
    }

    /// `self` grown to hold `p`, as `Aabb::grow`.
    #[inline]
    fn grow(self, p: Vec3A) -> Box3A {
        Box3A {
            min: self.min.min(p),
            max: self.max.max(p),
        }
    }

    #[inline]
    fn to_aabb(self) -> Aabb {
        Aabb {
            min: self.min.into(),
            max: self.max.into(),
        }
    }
}

/// What the SAH decided for a range: a leaf, or the split point `mid`
/// (`start < mid < end`, `[start, mid)` on the left).
enum Plan {
    Leaf,
    Split(usize),
}

/// Per-axis bins of one range: each bin's box and primitive count, and which
/// bins hold anything.
///
/// Most ranges a build bins are small (a tree over n primitives has about n
/// nodes and leaves, most of them near the bottom), so the bins are sparse:
/// `occupied` lets a range touch and sweep only its non-empty bins, and lets
/// one `Bins` serve every range of a build without being cleared. Skipping an
/// empty bin changes no cost: its box would be [`Aabb::EMPTY`], which a union
/// leaves as it is.
struct Bins {
    bounds: [[Box3A; BINS]; 3],
    count: [[u32; BINS]; 3],
    /// Bit `b` of `occupied[axis]`: bin `b` holds a primitive of the current
    /// range. The other bins hold an earlier range's values and are never read.
    occupied: [u32; 3],
}

struct Builder<'a> {
    /// Centroids by input index (for median splits, which reorder `order`).
    centroids: &'a [Vec3],
    /// Boxes by input index (to refill `prims` after a median split).
    input: &'a [Aabb],
    /// `prims[slot]` is the primitive `order[slot]`.
    prims: Vec<BuildPrim>,
    order: Vec<u32>,
    nodes: Vec<BvhNode>,
    depth: u32,
    /// The bins of the range being planned.
    bins: Bins,
}

impl Bvh {
    /// Build over primitives given by their bounds (centroids are the box centres).
    ///
    /// Every input index appears exactly once in `order`. An empty input gives a
    /// root with two absent children.
    pub fn build(bounds: &[Aabb]) -> Bvh {
        let centroids: Vec<Vec3> = bounds.iter().map(Aabb::center).collect();
        let mut b = Builder {
            centroids: &centroids,
            input: bounds,
            prims: bounds
                .iter()
                .zip(&centroids)
                .map(|(&bounds, &centroid)| BuildPrim::new(bounds, centroid))
                .collect(),
            order: (0..bounds.len() as u32).collect(),
            nodes: Vec::with_capacity(bounds.len().max(1)),
            depth: 0,
            bins: Bins {
                bounds: [[Box3A::EMPTY; BINS]; 3],
                count: [[0; BINS]; 3],
                occupied: [0; 3],
            },
        };
        b.nodes.push(BvhNode::default());
        let n = bounds.len();
        let root = b.range_bounds(0, n);
        if n == 0 {
            b.fill(0, ChildRef::EMPTY, ChildRef::EMPTY);
        } else {
            match b.plan(0, n, &root, 0) {
                Plan::Leaf => {
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
                }
                Plan::Split(mid) => b.build_inner(0, 0, mid, n, 0),
            }
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
// permutation of `0..n`, so its entries index `input` and `centroids`; `prims`
// has `n` entries; axes come from `0..3` or `max_position`; `bin_of` clamps bins
// to `BINS - 1`; nodes are pushed before they are filled.
impl Builder<'_> {
    fn range_bounds(&self, start: usize, end: usize) -> Aabb {
        self.prims[start..end]
            .iter()
            .fold(Box3A::EMPTY, |a, p| a.union(p.bounds))
            .to_aabb()
    }

    fn centroid_bounds(&self, start: usize, end: usize) -> Aabb {
        self.prims[start..end]
            .iter()
            .fold(Box3A::EMPTY, |a, p| a.grow(p.centroid))
            .to_aabb()
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

    /// Fill `node` with the two children of `[start, end)`, split at `mid`; the
    /// node is at `depth`.
    fn build_inner(&mut self, node: usize, start: usize, mid: usize, end: usize, depth: u32) {
        let left = self.build_child(start, mid, depth + 1);
        let right = self.build_child(mid, end, depth + 1);
        self.fill(node, left, right);
    }

    /// Build the subtree of `[start, end)` as a child at `depth`.
    fn build_child(&mut self, start: usize, end: usize, depth: u32) -> ChildRef {
        let bounds = self.range_bounds(start, end);
        match self.plan(start, end, &bounds, depth) {
            Plan::Leaf => {
                self.depth = self.depth.max(depth);
                ChildRef {
                    bounds,
                    index: start as u32,
                    count: (end - start) as u32,
                }
            }
            Plan::Split(mid) => {
                let node = self.nodes.len();
                self.nodes.push(BvhNode::default());
                self.build_inner(node, start, mid, end, depth);
                ChildRef {
                    bounds,
                    index: node as u32,
                    count: 0,
                }
            }
        }
    }

    /// The leaf policy, and the split when there is one. Single primitives are
    /// leaves; from [`MEDIAN_SPLIT_DEPTH`] on every larger range is split at the
    /// median; above [`MAX_LEAF_SIZE`] a range is always split; in between the
    /// SAH decides. A split partitions `[start, end)` in place (`order` and
    /// `prims` alike).
    fn plan(&mut self, start: usize, end: usize, bounds: &Aabb, depth: u32) -> Plan {
        let count = end - start;
        if count < 2 {
            return Plan::Leaf;
        }
        if depth >= MEDIAN_SPLIT_DEPTH {
            return Plan::Split(self.median_split(start, end));
        }
        let cb = self.centroid_bounds(start, end);
        let Some((axis, bin, cost)) = self.best_binned_split(start, end, &cb) else {
            // Coincident centroids: no axis to bin on. Small ranges stay leaves,
            // larger ones are split in index order.
            return if count > MAX_LEAF_SIZE {
                Plan::Split(start + count / 2)
            } else {
                Plan::Leaf
            };
        };
        if count <= MAX_LEAF_SIZE {
            let area = bounds.half_area();
            // cost is sum(A_child * N_child); normalise by the parent's area.
            let split_cost = if area > 0.0 {
                COST_TRAVERSAL + COST_INTERSECT * cost / area
            } else {
                f32::INFINITY
            };
            // Written so that a NaN cost keeps the leaf.
            let split_pays = split_cost < COST_INTERSECT * count as f32;
            if !split_pays {
                return Plan::Leaf;
            }
        }
        let (lo, scale) = bin_mapping(&cb, axis);
        let order = &mut self.order[start..end];
        let prims = &mut self.prims[start..end];
        // In-place partition: primitives whose bin is left of the split first.
        let mut left = 0;
        for i in 0..prims.len() {
            if bin_of(prims[i].centroid[axis], lo, scale) < bin {
                order.swap(i, left);
                prims.swap(i, left);
                left += 1;
            }
        }
        if left == 0 || left == prims.len() {
            // Rounding put everything on one side; fall back to the median.
            return Plan::Split(self.median_split(start, end));
        }
        Plan::Split(start + left)
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
        // Bring `prims` into the new order (median splits are rare: degenerate
        // input, or deeper than MEDIAN_SPLIT_DEPTH).
        for (p, &i) in self.prims[start..end]
            .iter_mut()
            .zip(&self.order[start..end])
        {
            *p = BuildPrim::new(self.input[i as usize], centroids[i as usize]);
        }
        start + mid
    }

    /// Bin `[start, end)` on every axis into `self.bins`, in one pass over its
    /// primitives.
    fn bin(&mut self, start: usize, end: usize, cb: &Aabb) {
        let bins = &mut self.bins;
        bins.occupied = [0; 3];
        let maps = [0, 1, 2].map(|axis| bin_mapping(cb, axis));
        for p in &self.prims[start..end] {
            for (axis, &(lo, scale)) in maps.iter().enumerate() {
                // An axis without extent maps everything to one bin (the
                // mapping's scale is infinite); the sweep skips it anyway.
                let b = bin_of(p.centroid[axis], lo, scale);
                let bit = 1u32 << b;
                if bins.occupied[axis] & bit == 0 {
                    bins.occupied[axis] |= bit;
                    bins.bounds[axis][b] = p.bounds;
                    bins.count[axis][b] = 1;
                } else {
                    bins.bounds[axis][b] = bins.bounds[axis][b].union(p.bounds);
                    bins.count[axis][b] += 1;
                }
            }
        }
    }

    /// The best `(axis, first right bin, sum of A*N)` over all axes, or `None`
    /// when the centroids (bounded by `cb`) coincide.
    ///
    /// A split "before bin b" puts bins `< b` on the left. Every `b` in a run of
    /// empty bins gives the same two sides and the same cost; the first wins
    /// (costs are compared with `<`), so only the bin after each occupied bin is
    /// a candidate.
    fn best_binned_split(
        &mut self,
        start: usize,
        end: usize,
        cb: &Aabb,
    ) -> Option<(usize, usize, f32)> {
        self.bin(start, end, cb);
        let bins = &self.bins;
        let mut best: Option<(usize, usize, f32)> = None;
        for axis in 0..3 {
            let extent = cb.max[axis] - cb.min[axis];
            if extent.is_nan() || extent <= 0.0 {
                continue;
            }
            let (bin_bounds, bin_count) = (&bins.bounds[axis], &bins.count[axis]);
            let occupied = bins.occupied[axis];
            // Sweep the occupied bins from the right: `right_area[b]` and
            // `right_count[b]` describe bins >= b for each occupied `b`.
            let mut right_area = [0.0f32; BINS];
            let mut right_count = [0u32; BINS];
            let (mut acc, mut n) = (Box3A::EMPTY, 0u32);
            let mut rest = occupied;
            while rest != 0 {
                let b = (31 - rest.leading_zeros()) as usize;
                rest &= !(1 << b);
                acc = acc.union(bin_bounds[b]);
                n += bin_count[b];
                right_area[b] = acc.to_aabb().half_area();
                right_count[b] = n;
            }
            // Then from the left: after each occupied bin `b` but the last, the
            // right side starts at the next occupied bin.
            let (mut acc, mut n) = (Box3A::EMPTY, 0u32);
            let mut rest = occupied;
            while rest != 0 {
                let b = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                acc = acc.union(bin_bounds[b]);
                n += bin_count[b];
                if rest == 0 {
                    break;
                }
                let next = rest.trailing_zeros() as usize;
                let cost = acc.to_aabb().half_area() * n as f32
                    + right_area[next] * right_count[next] as f32;
                if best.is_none_or(|(_, _, c)| cost < c) {
                    best = Some((axis, b + 1, cost));
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
    // `as i32` saturates (NaN to 0), as `as usize` would, and converts in fewer
    // instructions: the clamp gives the same bin for every input.
    (((c - lo) * scale) as i32).clamp(0, BINS as i32 - 1) as usize
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
