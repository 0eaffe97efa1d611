//! The binned SAH builder behind [`Bvh::build`](super::Bvh::build): the
//! working layout of primitives and boxes, the bins, the sweep and the
//! partition (see the parent module's docs for the policy).

use super::{
    BINS, Bvh, COST_INTERSECT, COST_TRAVERSAL, FORK_MIN_PRIMITIVES, Fork, MEDIAN_SPLIT_DEPTH,
};
use crate::aabb::Aabb;
use crate::error::{Error, try_vec};
use crate::gpu::{BvhNode, EMPTY_CHILD};
use alloc::vec::Vec;
use bytemuck::Zeroable;
use glam::{Vec3A, Vec4};

mod size_split;

use size_split::{SIZE_SPLIT_MIN_PRIMITIVES, SIZE_SPLIT_TRIGGER, best_size_split, size_class};

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

/// A primitive as the builder reads it: its box as two 16-byte vectors (a
/// union is one SIMD min and max, a centroid one add and multiply), the input
/// index in the lower corner's unused fourth lane. 32 bytes, half a cache line.
///
/// The builder keeps these in leaf-slot order, so that every pass over a range
/// (binning, partitioning) streams through contiguous memory instead of
/// gathering through an index array (a 70k-triangle mesh's boxes do not fit in
/// L2), and a partition moves one array, not two; [`Bvh::order`] is read off
/// them at the end.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct BuildPrim {
    /// `x, y, z`: the box's lower corner; `w`: the input index with
    /// [`INDEX_TAG`] set, as bits.
    lo: Vec4,
    /// `x, y, z`: the box's upper corner; `w`: 0, or the bins of the range
    /// binned last, a byte an axis with [`BINS_TAG`] set, as bits.
    hi: Vec4,
}

/// Set in the bits of [`BuildPrim::lo`]'s `w` lane beside the index (which
/// is below [`crate::scene::MAX_PRIMITIVES`] = 2^30): it makes the lane a
/// normal float (or an infinity or NaN), never a subnormal one, which some
/// CPUs add slowly when a centroid is computed from all four lanes.
const INDEX_TAG: u32 = 1 << 30;
const _: () = assert!(crate::scene::MAX_PRIMITIVES <= INDEX_TAG as usize);

/// Set in the bits of [`BuildPrim::hi`]'s `w` lane beside the kept bins (24
/// bits), for the same reason as [`INDEX_TAG`].
const BINS_TAG: u32 = 1 << 30;
const _: () = assert!(BINS <= 256, "a bin index fits a byte");

impl BuildPrim {
    #[inline]
    fn new(bounds: Aabb, index: u32) -> Self {
        BuildPrim {
            lo: bounds.min.extend(f32::from_bits(index | INDEX_TAG)),
            hi: bounds.max.extend(0.0),
        }
    }

    /// The box.
    #[inline(always)]
    fn bounds(&self) -> Box3A {
        Box3A {
            min: Vec3A::from_vec4(self.lo),
            max: Vec3A::from_vec4(self.hi),
        }
    }

    /// The box's centre, as [`Aabb::center`] computes it (the same bits).
    #[inline(always)]
    fn centroid(&self) -> Vec3A {
        0.5 * (Vec3A::from_vec4(self.lo) + Vec3A::from_vec4(self.hi))
    }

    /// Keep the primitive's bin on each axis, as the range's binning found
    /// them, for the partition that follows: it then compares a byte
    /// instead of mapping the centroid again (the same bins).
    #[inline(always)]
    fn keep_bins(&mut self, bins: [usize; 3]) {
        let [x, y, z] = bins.map(|b| b as u32);
        self.hi.w = f32::from_bits(BINS_TAG | x | (y << 8) | (z << 16));
    }

    /// The bin on `axis` that [`BuildPrim::keep_bins`] kept.
    #[inline(always)]
    fn kept_bin(&self, axis: usize) -> usize {
        ((self.hi.w.to_bits() >> (8 * axis)) & 0xff) as usize
    }

    /// The input index.
    #[inline(always)]
    fn index(&self) -> u32 {
        self.lo.w.to_bits() & !INDEX_TAG
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

    /// `self` grown by `other`. On x86 this is the same box as
    /// `Aabb::union(self, other)` bit for bit: `Vec3::min` picks `other`'s value
    /// where the two are equal or unordered, as `Vec3A::min` (`minps`) does.
    /// (NEON's min may keep the other zero of a +0/-0 pair and keeps NaN; neither
    /// changes a SAH cost, and a validated scene has no NaN.)
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

    /// [`Aabb::half_area`] of a box that holds something (the same bits),
    /// without its test for an empty box.
    #[inline(always)]
    fn half_area(self) -> f32 {
        let e = self.max - self.min;
        e.x * e.y + e.y * e.z + e.z * e.x
    }

    #[inline]
    fn to_aabb(self) -> Aabb {
        Aabb {
            min: self.min.into(),
            max: self.max.into(),
        }
    }
}

/// A range's box and the box of its primitives' centroids, as its parent's
/// split found them (the root's from one pass over every primitive).
#[derive(Clone, Copy)]
struct RangeBoxes {
    bounds: Box3A,
    centroids: Box3A,
}

/// What the SAH decided for a range: a leaf, or the split point `mid`
/// (`start < mid < end`, `[start, mid)` on the left) with both sides' boxes.
enum Plan {
    Leaf,
    Split(usize, RangeBoxes, RangeBoxes),
}

/// The best split the SAH sweep found: its axis, its first right bin, its
/// cost (the sum of area times count over both sides) and both sides' boxes
/// (unions of their bins' boxes).
#[derive(Clone, Copy)]
struct BinnedSplit {
    axis: usize,
    bin: usize,
    cost: f32,
    left: Box3A,
    right: Box3A,
}

/// Per-axis bins of one range: each bin's box and primitive count, and which
/// bins hold anything.
///
/// Most ranges a build bins are small (a tree over n primitives has about n
/// nodes and leaves, most of them near the bottom), so the bins are sparse:
/// `occupied` lets the sweep visit only the non-empty bins, and the bins a
/// range filled are emptied again after its sweep (`clear_occupied`), so that
/// every range bins into empty bins without a branch per primitive and
/// without clearing all 48. Skipping an empty bin changes no cost: its box is
/// [`Aabb::EMPTY`], which a union leaves as it is.
struct Bins {
    bounds: [[Box3A; BINS]; 3],
    count: [[u32; BINS]; 3],
    /// Bit `b` of `occupied[axis]`: bin `b` holds a primitive of the current
    /// range. Every other bin is empty.
    occupied: [u32; 3],
}

/// Ranges of at least this many primitives bin into two sets of bins, for the
/// even and the odd primitives (see [`Builder::bin`]); smaller ones into one,
/// as merging a second set costs more than it saves there.
const TWO_BIN_SETS_FROM: usize = 3 * BINS;

impl Bins {
    fn new() -> Bins {
        Bins {
            bounds: [[Box3A::EMPTY; BINS]; 3],
            count: [[0; BINS]; 3],
            occupied: [0; 3],
        }
    }
}

/// Builds the subtree over one run of slots. The root builder owns every slot;
/// a fork gives each side a builder of its own over its half.
struct Builder<'a, F> {
    /// The slots this builder owns: `prims[i]` is slot `first_slot + i`.
    /// Ranges below are indices into this slice.
    prims: &'a mut [BuildPrim],
    first_slot: usize,
    /// The nodes of this subtree, its root first. Child indices are into this
    /// list until a parent builder appends it to its own (`append_subtree`).
    nodes: Vec<BvhNode>,
    depth: u32,
    /// The bins of the range being planned.
    bins: Bins,
    /// Where the two halves of a large range go, if anywhere.
    fork: Option<&'a F>,
    /// Largest leaf: [`MAX_LEAF_SIZE`], or 1 for the tree over instances.
    max_leaf: usize,
}

/// The binned SAH tree over `n` primitives whose boxes are `box_of(0..n)`
/// (see [`Bvh::try_build`]), leaves of at most `max_leaf` primitives, the
/// large subtrees through `fork` where given; and the union of the boxes.
///
/// `scratch`, where given, lends its memory for the builder's working
/// boxes (32 bytes a primitive): the primitive records the tree's leaves
/// will hold (48 bytes each) are written after the build, so the same
/// memory serves both and the build touches (and faults in) a third less.
/// Without it, or where it is too short or not 16-byte aligned, the builder
/// allocates its own. Its contents afterwards are unspecified.
pub(super) fn build<F: Fork>(
    n: usize,
    box_of: impl Fn(u32) -> Aabb,
    fork: Option<&F>,
    max_leaf: usize,
    scratch: Option<&mut [crate::gpu::Primitive]>,
) -> Result<(Bvh, Aabb), Error> {
    if n > crate::scene::MAX_PRIMITIVES {
        return Err(Error::TooManyPrimitives {
            count: n,
            limit: crate::scene::MAX_PRIMITIVES,
        });
    }
    // Every array is reserved in full before the build starts: a binary
    // tree over n >= 1 leaves of at least one primitive has at most n - 1
    // inner nodes, and core's layout keeps one node per inner node (the
    // root alone for n <= 1), so the top builder's pushes never allocate.
    // Forked halves grow their own lists, fallibly (`reserve_nodes`).
    let mut nodes = try_vec(n.max(1), "BVH nodes")?;
    let lent = scratch.and_then(|records| {
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(records);
        let bytes = bytes.get_mut(..n * size_of::<BuildPrim>())?;
        bytemuck::try_cast_slice_mut::<u8, BuildPrim>(bytes).ok()
    });
    let mut own: Vec<BuildPrim>;
    let prims: &mut [BuildPrim] = match lent {
        Some(prims) => prims,
        None => {
            own = try_vec(n, "BVH build: primitive boxes")?;
            own.resize(n, BuildPrim::zeroed());
            &mut own
        }
    };
    for (p, index) in prims.iter_mut().zip(0..n as u32) {
        *p = BuildPrim::new(box_of(index), index);
    }
    let mut order = try_vec(n, "BVH primitive order")?;
    nodes.push(BvhNode::default());
    let mut b = Builder {
        prims,
        first_slot: 0,
        nodes,
        depth: 0,
        bins: Bins::new(),
        fork,
        max_leaf,
    };
    let root = b.range_boxes(0, n);
    if n == 0 {
        b.fill(0, ChildRef::EMPTY, ChildRef::EMPTY);
    } else {
        match b.plan(0, n, &root, 0) {
            Plan::Leaf => {
                b.depth = 1;
                b.fill(
                    0,
                    ChildRef {
                        bounds: root.bounds.to_aabb(),
                        index: 0,
                        count: n as u32,
                    },
                    ChildRef::EMPTY,
                );
            }
            Plan::Split(mid, left, right) => b.build_inner(0, 0, mid, n, 0, left, right)?,
        }
    }
    order.extend(b.prims.iter().map(BuildPrim::index));
    let (nodes, depth) = (b.nodes, b.depth);
    let bvh = Bvh {
        nodes,
        order,
        depth,
    };
    Ok((bvh, root.bounds.to_aabb()))
}

// ok (indexing in the builder): every range `[start, end)` lies in
// `[0, prims.len())` (the builder's whole run, then halves split at a point
// strictly inside); axes come from `0..3` or `max_position`; `bins_of_scaled` clamps bins to
// `BINS - 1`; nodes are pushed before they are filled.
impl<F: Fork> Builder<'_, F> {
    /// The box and the centroids' box of `[start, end)`, in one pass (the
    /// root, and the sides of the rare splits made without bins).
    fn range_boxes(&self, start: usize, end: usize) -> RangeBoxes {
        self.prims[start..end].iter().fold(
            RangeBoxes {
                bounds: Box3A::EMPTY,
                centroids: Box3A::EMPTY,
            },
            |a, p| RangeBoxes {
                bounds: a.bounds.union(p.bounds()),
                centroids: a.centroids.grow(p.centroid()),
            },
        )
    }

    /// A split at `mid` made without bins, its sides' boxes by a pass each.
    fn split_without_bins(&self, start: usize, mid: usize, end: usize) -> Plan {
        Plan::Split(
            mid,
            self.range_boxes(start, mid),
            self.range_boxes(mid, end),
        )
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

    /// Fill `node` with the two children of `[start, end)`, split at `mid`
    /// into sides whose boxes are `left` and `right`; the node is at `depth`.
    #[allow(clippy::too_many_arguments)] // the split as `plan` made it
    fn build_inner(
        &mut self,
        node: usize,
        start: usize,
        mid: usize,
        end: usize,
        depth: u32,
        left_boxes: RangeBoxes,
        right_boxes: RangeBoxes,
    ) -> Result<(), Error> {
        if let Some(fork) = self.fork
            && end - start >= FORK_MIN_PRIMITIVES
        {
            let (prims_left, prims_right) = self.prims[start..end].split_at_mut(mid - start);
            let half = |prims, first_slot| Builder {
                prims,
                first_slot,
                nodes: Vec::new(),
                depth: 0,
                bins: Bins::new(),
                fork: Some(fork),
                max_leaf: self.max_leaf,
            };
            let mut left = half(prims_left, self.first_slot + start);
            let mut right = half(prims_right, self.first_slot + mid);
            let (left_ref, right_ref) = fork.join(
                || left.build_child(0, mid - start, depth + 1, &left_boxes),
                || right.build_child(0, end - mid, depth + 1, &right_boxes),
            );
            let (left_ref, right_ref) = (left_ref?, right_ref?);
            let (left, right) = ((left.nodes, left.depth), (right.nodes, right.depth));
            let left_ref = self.append_subtree(left.0, left.1, left_ref)?;
            let right_ref = self.append_subtree(right.0, right.1, right_ref)?;
            self.fill(node, left_ref, right_ref);
            return Ok(());
        }
        let left = self.build_child(start, mid, depth + 1, &left_boxes)?;
        let right = self.build_child(mid, end, depth + 1, &right_boxes)?;
        self.fill(node, left, right);
        Ok(())
    }

    /// Append a subtree built by another builder (its root is its first node)
    /// and return `child` with its node index moved along with it. Appending
    /// the left subtree, then the right, numbers the nodes as a one-builder
    /// build does: a node, then its left subtree, then its right.
    fn append_subtree(
        &mut self,
        nodes: Vec<BvhNode>,
        depth: u32,
        child: ChildRef,
    ) -> Result<ChildRef, Error> {
        self.reserve_nodes(nodes.len())?;
        let offset = self.nodes.len() as u32;
        let moved = |index: u32, count: u32| {
            if count == 0 && index != EMPTY_CHILD {
                index + offset
            } else {
                index
            }
        };
        self.nodes.extend(nodes.into_iter().map(|mut n| {
            let left = moved(n.left_index(), n.left_count());
            let right = moved(n.right_index(), n.right_count());
            n.left_lo[3] = f32::from_bits(left);
            n.right_lo[3] = f32::from_bits(right);
            n
        }));
        self.depth = self.depth.max(depth);
        Ok(ChildRef {
            index: moved(child.index, child.count),
            ..child
        })
    }

    /// Room for `more` nodes. The top builder's list is reserved in full up
    /// front (so this never allocates there); a forked half's list grows here,
    /// fallibly.
    fn reserve_nodes(&mut self, more: usize) -> Result<(), Error> {
        self.nodes
            .try_reserve(more)
            .map_err(|_| Error::HostOutOfMemory {
                what: "BVH nodes",
                bytes: ((self.nodes.len() + more) * core::mem::size_of::<BvhNode>()) as u64,
            })
    }

    /// Build the subtree of `[start, end)`, whose boxes are `boxes`, as a
    /// child at `depth`.
    fn build_child(
        &mut self,
        start: usize,
        end: usize,
        depth: u32,
        boxes: &RangeBoxes,
    ) -> Result<ChildRef, Error> {
        let bounds = boxes.bounds.to_aabb();
        Ok(match self.plan(start, end, boxes, depth) {
            Plan::Leaf => {
                self.depth = self.depth.max(depth);
                ChildRef {
                    bounds,
                    index: (self.first_slot + start) as u32,
                    count: (end - start) as u32,
                }
            }
            Plan::Split(mid, left, right) => {
                self.reserve_nodes(1)?;
                let node = self.nodes.len();
                self.nodes.push(BvhNode::default());
                self.build_inner(node, start, mid, end, depth, left, right)?;
                ChildRef {
                    bounds,
                    index: node as u32,
                    count: 0,
                }
            }
        })
    }

    /// The leaf policy, and the split when there is one. Single primitives are
    /// leaves; from [`MEDIAN_SPLIT_DEPTH`] on every larger range is split at the
    /// median; above [`MAX_LEAF_SIZE`] a range is always split; in between the
    /// SAH decides. A split partitions `[start, end)` in place.
    fn plan(&mut self, start: usize, end: usize, boxes: &RangeBoxes, depth: u32) -> Plan {
        let count = end - start;
        if count < 2 {
            return Plan::Leaf;
        }
        if depth >= MEDIAN_SPLIT_DEPTH {
            let mid = self.median_split(start, end, &boxes.centroids.to_aabb());
            return self.split_without_bins(start, mid, end);
        }
        if count <= self.max_leaf && self.leaf_for_sure(start, end, boxes) {
            return Plan::Leaf;
        }
        self.plan_binned(start, end, boxes)
    }

    /// [`Builder::plan`] from the bins, for a range of two primitives or more
    /// above [`MEDIAN_SPLIT_DEPTH`].
    fn plan_binned(&mut self, start: usize, end: usize, boxes: &RangeBoxes) -> Plan {
        let count = end - start;
        let cb = boxes.centroids.to_aabb();
        let Some(best) = self.best_binned_split(start, end, &cb) else {
            // Coincident centroids: no axis to bin on. Small ranges stay leaves,
            // larger ones are split in index order.
            return if count > self.max_leaf {
                self.split_without_bins(start, start + count / 2, end)
            } else {
                Plan::Leaf
            };
        };
        if let Some(plan) = self.plan_by_size(start, end, boxes, &best) {
            return plan;
        }
        if count <= self.max_leaf {
            let area = boxes.bounds.to_aabb().half_area();
            // cost is sum(A_child * N_child); normalise by the parent's area.
            let split_cost = if area > 0.0 {
                COST_TRAVERSAL + COST_INTERSECT * best.cost / area
            } else {
                f32::INFINITY
            };
            // Written so that a NaN cost keeps the leaf.
            let split_pays = split_cost < COST_INTERSECT * count as f32;
            if !split_pays {
                return Plan::Leaf;
            }
        }
        let (left, left_centroids, right_centroids) = self.partition(start, end, &best);
        if left == 0 || left == count {
            // A guard: the partition reads the bins the sweep split between
            // two occupied bins, so neither side is empty; were one, the
            // median split still makes progress.
            let mid = self.median_split(start, end, &cb);
            return self.split_without_bins(start, mid, end);
        }
        Plan::Split(
            start + left,
            RangeBoxes {
                bounds: best.left,
                centroids: left_centroids,
            },
            RangeBoxes {
                bounds: best.right,
                centroids: right_centroids,
            },
        )
    }

    /// The split by size ([`size_split`]) of `[start, end)`, partitioned, when
    /// the range is large enough, a side of the best centroid split
    /// (`centroid`) is nearly as large as the range and the split by size
    /// costs less.
    fn plan_by_size(
        &mut self,
        start: usize,
        end: usize,
        boxes: &RangeBoxes,
        centroid: &BinnedSplit,
    ) -> Option<Plan> {
        let count = end - start;
        let area = boxes.bounds.half_area();
        let centroid_cost = centroid.cost;
        // Written so that a NaN area weighs nothing.
        let side_spans = count >= SIZE_SPLIT_MIN_PRIMITIVES
            && count > self.max_leaf
            && area > 0.0
            && centroid.left.half_area().max(centroid.right.half_area())
                >= SIZE_SPLIT_TRIGGER * area;
        if !side_spans {
            return None;
        }
        let inv_area = 1.0 / area;
        let size = best_size_split(&self.prims[start..end], inv_area)?;
        // A NaN cost keeps the centroid split.
        if size.cost.partial_cmp(&centroid_cost) != Some(core::cmp::Ordering::Less) {
            return None;
        }
        let goes_left = |p: &BuildPrim| size_class(p.bounds().half_area(), inv_area) < size.classes;
        let (left, left_centroids, right_centroids) = self.partition_by(start, end, goes_left);
        // Both sides hold a class the sweep counted, so neither is empty.
        (left > 0 && left < count).then_some(Plan::Split(
            start + left,
            RangeBoxes {
                bounds: size.left,
                centroids: left_centroids,
            },
            RangeBoxes {
                bounds: size.right,
                centroids: right_centroids,
            },
        ))
    }

    /// Whether the SAH keeps `[start, end)` (at most `max_leaf` primitives)
    /// a leaf whatever its bins: a side's box holds each of its primitives'
    /// boxes, so every split costs at least the sum of the primitives' areas,
    /// and where that bound (less a margin for the rounding of the sums)
    /// already costs more than the leaf, no bins are needed. Many small
    /// ranges of a mesh are such, and leave `plan` here: the same tree.
    fn leaf_for_sure(&self, start: usize, end: usize, boxes: &RangeBoxes) -> bool {
        let count = end - start;
        let area = boxes.bounds.half_area();
        let sum: f32 = self.prims[start..end]
            .iter()
            .map(|p| p.bounds().half_area())
            .sum();
        let lower_bound = sum * (1.0 - 1e-5);
        // As `plan` decides: a box without area (or NaN) keeps the leaf.
        let split_may_pay = area > 0.0
            && COST_TRAVERSAL + COST_INTERSECT * lower_bound / area < COST_INTERSECT * count as f32;
        !split_may_pay
    }

    /// Partition `[start, end)` in place: the primitives whose kept bin
    /// (the range was just binned) on `split.axis` lies left of `split.bin`
    /// first.
    /// Returns how many that is, and the centroid boxes of both sides.
    ///
    /// Two cursors move towards each other and swap only primitives on the
    /// wrong side (each moved at most once), and every primitive's centroid
    /// grows its side's box as the cursors pass it, so the children need no
    /// pass of their own.
    fn partition(
        &mut self,
        start: usize,
        end: usize,
        split: &BinnedSplit,
    ) -> (usize, Box3A, Box3A) {
        let (axis, bin) = (split.axis, split.bin);
        // The bins `bin` kept: the range was binned just before.
        self.partition_by(start, end, |p: &BuildPrim| p.kept_bin(axis) < bin)
    }

    /// Partition `[start, end)` in place, the primitives `goes_left` picks
    /// first (see [`Builder::partition`]). Returns how many that is, and the
    /// centroid boxes of both sides.
    #[inline(always)]
    fn partition_by(
        &mut self,
        start: usize,
        end: usize,
        goes_left: impl Fn(&BuildPrim) -> bool,
    ) -> (usize, Box3A, Box3A) {
        let prims = &mut self.prims[start..end];
        let (mut left_cb, mut right_cb) = (Box3A::EMPTY, Box3A::EMPTY);
        let (mut i, mut j) = (0, prims.len());
        loop {
            while i < j && goes_left(&prims[i]) {
                left_cb = left_cb.grow(prims[i].centroid());
                i += 1;
            }
            while i < j && !goes_left(&prims[j - 1]) {
                right_cb = right_cb.grow(prims[j - 1].centroid());
                j -= 1;
            }
            if i >= j {
                break;
            }
            // `prims[i]` goes right and `prims[j - 1]` left: swap them.
            prims.swap(i, j - 1);
            left_cb = left_cb.grow(prims[i].centroid());
            right_cb = right_cb.grow(prims[j - 1].centroid());
            i += 1;
            j -= 1;
        }
        (i, left_cb, right_cb)
    }

    /// Split at the median centroid along the widest axis of the centroids'
    /// box `cb`.
    fn median_split(&mut self, start: usize, end: usize, cb: &Aabb) -> usize {
        let axis = cb.extent().max_position();
        let mid = (end - start) / 2;
        self.prims[start..end].select_nth_unstable_by(mid, |a, b| {
            a.centroid()[axis].total_cmp(&b.centroid()[axis])
        });
        start + mid
    }

    /// Bin `[start, end)` on every axis into `self.bins`, in one pass over its
    /// primitives: the three bin indices of a centroid come from one vector
    /// product.
    fn bin(&mut self, start: usize, end: usize, cb: &Aabb) {
        let bins = &mut self.bins;
        let maps = [0, 1, 2].map(|axis| bin_mapping(cb, axis));
        let lo = Vec3A::new(maps[0].0, maps[1].0, maps[2].0);
        let scale = Vec3A::new(maps[0].1, maps[1].1, maps[2].1);
        let prims = &mut self.prims[start..end];
        // A NaN lane's bin is 0 (`max` gives 0 on SSE2, a NaN elsewhere,
        // which `as i32` turns into 0 too). An axis
        // without extent maps everything to one bin (the mapping's scale is
        // infinite); the sweep skips it anyway. Each primitive keeps its bins
        // for the partition (`BuildPrim::keep_bins`).
        let bins_of = |p: &BuildPrim| bins_of_scaled((p.centroid() - lo) * scale);
        if prims.len() >= TWO_BIN_SETS_FROM {
            // Two sets of bins, for the even and the odd primitives, merged
            // at the end: neighbouring primitives mostly share a bin, and
            // with one set each one's union waited on the previous one's
            // store (1.2x the binning's time). Unions of finite boxes and
            // sums of counts do not depend on their order: the same bins.
            let mut odd = ([[Box3A::EMPTY; BINS]; 3], [[0u32; BINS]; 3]);
            let mut pairs = prims.chunks_exact_mut(2);
            for pair in &mut pairs {
                let (pb, qb) = (pair[0].bounds(), pair[1].bounds());
                let (p_bins, q_bins) = (bins_of(&pair[0]), bins_of(&pair[1]));
                pair[0].keep_bins(p_bins);
                pair[1].keep_bins(q_bins);
                for (axis, (b, c)) in p_bins.into_iter().zip(q_bins).enumerate() {
                    bins.bounds[axis][b] = bins.bounds[axis][b].union(pb);
                    bins.count[axis][b] += 1;
                    odd.0[axis][c] = odd.0[axis][c].union(qb);
                    odd.1[axis][c] += 1;
                }
            }
            for p in pairs.into_remainder() {
                let bounds = p.bounds();
                let p_bins = bins_of(p);
                p.keep_bins(p_bins);
                for (axis, b) in p_bins.into_iter().enumerate() {
                    bins.bounds[axis][b] = bins.bounds[axis][b].union(bounds);
                    bins.count[axis][b] += 1;
                }
            }
            for axis in 0..3 {
                for b in 0..BINS {
                    bins.bounds[axis][b] = bins.bounds[axis][b].union(odd.0[axis][b]);
                    bins.count[axis][b] += odd.1[axis][b];
                }
            }
            bins.occupied = bins.count.map(|counts| {
                counts
                    .iter()
                    .enumerate()
                    .fold(0u32, |m, (b, &c)| m | (u32::from(c != 0) << b))
            });
            return;
        }
        // The bins are empty (see `Bins`): no test of `occupied` per
        // primitive, a branch that mispredicts often.
        let mut occupied = [0u32; 3];
        for p in prims {
            let bounds = p.bounds();
            let p_bins = bins_of(p);
            p.keep_bins(p_bins);
            for (axis, b) in p_bins.into_iter().enumerate() {
                occupied[axis] |= 1 << b;
                bins.bounds[axis][b] = bins.bounds[axis][b].union(bounds);
                bins.count[axis][b] += 1;
            }
        }
        bins.occupied = occupied;
    }

    /// Empty the bins the last range filled, so that the next range bins into
    /// empty ones.
    fn clear_occupied(&mut self) {
        let bins = &mut self.bins;
        for axis in 0..3 {
            let mut rest = bins.occupied[axis];
            while rest != 0 {
                let b = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                bins.bounds[axis][b] = Box3A::EMPTY;
                bins.count[axis][b] = 0;
            }
            bins.occupied[axis] = 0;
        }
    }

    /// The best split over all axes (see [`BinnedSplit`]), or `None` when the
    /// centroids (bounded by `cb`) coincide.
    ///
    /// A split "before bin b" puts bins `< b` on the left. Every `b` in a run of
    /// empty bins gives the same two sides and the same cost; the first wins
    /// (costs are compared with `<`), so only the bin after each occupied bin is
    /// a candidate.
    fn best_binned_split(&mut self, start: usize, end: usize, cb: &Aabb) -> Option<BinnedSplit> {
        self.bin(start, end, cb);
        let best = self.sweep(cb);
        self.clear_occupied();
        best
    }

    /// The best split of the binned range (see [`Builder::best_binned_split`]).
    fn sweep(&self, cb: &Aabb) -> Option<BinnedSplit> {
        let bins = &self.bins;
        let mut best: Option<(BinnedSplit, usize)> = None;
        for axis in 0..3 {
            let extent = cb.max[axis] - cb.min[axis];
            if extent.is_nan() || extent <= 0.0 {
                continue;
            }
            let (bin_bounds, bin_count) = (&bins.bounds[axis], &bins.count[axis]);
            let occupied = bins.occupied[axis];
            // Sweep the occupied bins from the right: `right_area[b]` and
            // `right_count[b]` describe bins >= b for each occupied `b`. (Only
            // the best split's right box is needed, and it is united again
            // at the end: keeping every bin's would write 512 bytes an axis.)
            let mut right_area = [0.0f32; BINS];
            let mut right_count = [0u32; BINS];
            let (mut acc, mut n) = (Box3A::EMPTY, 0u32);
            let mut rest = occupied;
            while rest != 0 {
                let b = (31 - rest.leading_zeros()) as usize;
                rest &= !(1 << b);
                acc = acc.union(bin_bounds[b]);
                n += bin_count[b];
                right_area[b] = acc.half_area();
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
                let cost = acc.half_area() * n as f32 + right_area[next] * right_count[next] as f32;
                if best.is_none_or(|(s, _)| cost < s.cost) {
                    let split = BinnedSplit {
                        axis,
                        bin: b + 1,
                        cost,
                        left: acc,
                        right: Box3A::EMPTY,
                    };
                    best = Some((split, next));
                }
            }
        }
        let (mut split, next) = best?;
        // The right side's box, united from the right as the sweep did.
        let mut rest = bins.occupied[split.axis] & (u32::MAX << next);
        while rest != 0 {
            let b = (31 - rest.leading_zeros()) as usize;
            rest &= !(1 << b);
            split.right = split.right.union(bins.bounds[split.axis][b]);
        }
        Some(split)
    }
}

/// `(origin, scale)` mapping a centroid coordinate on `axis` to a bin.
#[inline]
fn bin_mapping(cb: &Aabb, axis: usize) -> (f32, f32) {
    let extent = cb.max[axis] - cb.min[axis];
    (cb.min[axis], BINS as f32 * (1.0 - 1e-6) / extent)
}

/// The bins of three scaled centroid coordinates at once. Clamped to
/// `[0, BINS - 1]` as floats (NaN to 0), then truncated: per lane the bin of
/// `(x as i32).clamp(0, BINS - 1)` for every `x`, in fewer instructions than
/// clamping after the saturating conversion.
#[inline]
fn bins_of_scaled(f: Vec3A) -> [usize; 3] {
    let f = f.max(Vec3A::ZERO).min(Vec3A::splat((BINS - 1) as f32));
    [f.x, f.y, f.z].map(|x| x as i32 as usize)
}

#[cfg(test)]
mod tests {
    use super::{BINS, Bins, BuildPrim, Builder, Plan, bins_of_scaled, build};
    use crate::aabb::Aabb;
    use crate::bvh::{Bvh, MAX_LEAF_SIZE, Sequential};
    use alloc::vec;
    use alloc::vec::Vec;
    use glam::{Vec3, Vec3A};
    use proptest::prelude::*;

    /// Up to eight boxes near one another, some flat, some repeated.
    fn small_ranges() -> impl Strategy<Value = Vec<Aabb>> {
        let corner = prop::array::uniform3(-4.0f32..4.0);
        let size = prop::array::uniform3(prop_oneof![Just(0.0f32), 0.0f32..3.0]);
        prop::collection::vec((corner, size), 2..=8).prop_map(|boxes| {
            boxes
                .into_iter()
                .map(|(c, e)| {
                    let min = Vec3::from(c);
                    Aabb {
                        min,
                        max: min + Vec3::from(e),
                    }
                })
                .collect()
        })
    }

    /// The bin the clamp after a saturating conversion gives.
    fn reference(x: f32) -> usize {
        (x as i32).clamp(0, BINS as i32 - 1) as usize
    }

    proptest! {
        /// The shortcut that keeps a small range a leaf without bins never
        /// keeps one the bins would split: its bound is a lower bound of
        /// every split's cost.
        #[test]
        fn leaf_for_sure_only_where_the_bins_keep_the_leaf(boxes in small_ranges()) {
            let mut prims: Vec<BuildPrim> =
                boxes.iter().zip(0..).map(|(&b, i)| BuildPrim::new(b, i)).collect();
            let n = prims.len();
            let mut builder = Builder::<Sequential> {
                prims: &mut prims,
                first_slot: 0,
                nodes: Vec::new(),
                depth: 0,
                bins: Bins::new(),
                fork: None,
                max_leaf: MAX_LEAF_SIZE,
            };
            let range = builder.range_boxes(0, n);
            if builder.leaf_for_sure(0, n, &range) {
                prop_assert!(matches!(builder.plan_binned(0, n, &range), Plan::Leaf));
            }
        }

        /// A build in lent memory (the records' array, long enough or not)
        /// is the build in the builder's own: the same tree and box.
        #[test]
        fn a_build_in_lent_memory_is_the_same_build(boxes in prop::collection::vec(
            (prop::array::uniform3(-50.0f32..50.0), prop::array::uniform3(0.0f32..4.0)), 0..300)) {
            let boxes: Vec<Aabb> = boxes
                .into_iter()
                .map(|(c, e)| Aabb { min: Vec3::from(c), max: Vec3::from(c) + Vec3::from(e) })
                .collect();
            let n = boxes.len();
            let box_of = |i: u32| boxes[i as usize];
            let own = build(n, box_of, None::<&Sequential>, MAX_LEAF_SIZE, None);
            let mut records = vec![crate::gpu::Primitive::default(); n];
            let lent = build(n, box_of, None::<&Sequential>, MAX_LEAF_SIZE, Some(&mut records));
            let mut short = vec![crate::gpu::Primitive::default(); n / 2];
            let short = build(n, box_of, None::<&Sequential>, MAX_LEAF_SIZE, Some(&mut short));
            let (Ok((own, own_box)), Ok((lent, lent_box)), Ok((short, short_box))) = (own, lent, short) else {
                return Err(TestCaseError::fail("a build failed"));
            };
            // Bits: an absent child's rows hold NaNs.
            let bits = |bvh: &Bvh| bytemuck::cast_slice::<_, u32>(&bvh.nodes).to_vec();
            for (other, other_box) in [(lent, lent_box), (short, short_box)] {
                prop_assert_eq!(bits(&other), bits(&own));
                prop_assert_eq!(&other.order, &own.order);
                prop_assert_eq!(other_box, own_box);
            }
        }

        /// Clamping as a float first gives that bin for every float (NaN,
        /// infinities and values past i32 included), in both forms, so the
        /// binning and the partition agree.
        #[test]
        fn bins_are_the_saturating_clamp(bits in any::<[u32; 3]>(), small in -40.0f32..40.0) {
            let [x, y, z] = bits.map(f32::from_bits);
            prop_assert_eq!(bins_of_scaled(Vec3A::new(x, y, z)), [reference(x), reference(y), reference(z)]);
            prop_assert_eq!(bins_of_scaled(Vec3A::new(small, x, y)), [reference(small), reference(x), reference(y)]);
        }

        /// A primitive gives back the bins it kept, on every axis, and the lane
        /// that keeps them is a normal float (see `BINS_TAG`).
        #[test]
        fn kept_bins_come_back(bins in prop::array::uniform3(0..BINS)) {
            let mut p = BuildPrim::new(Aabb::from_point(Vec3::ONE), 7);
            p.keep_bins(bins);
            prop_assert_eq!([0, 1, 2].map(|axis| p.kept_bin(axis)), bins);
            prop_assert!(p.hi.w.is_normal());
            prop_assert_eq!(p.index(), 7);
        }
    }

    #[test]
    fn edges_and_specials_bin_as_the_saturating_clamp() {
        let specials = [
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            0.0,
            -0.5,
            -1.0,
            14.999999,
            15.0,
            15.5,
            16.0,
            3.0e9,
            -3.0e9,
            f32::MIN_POSITIVE,
        ];
        for v in specials {
            assert_eq!(bins_of_scaled(Vec3A::splat(v)), [reference(v); 3], "{v}");
        }
    }
}
