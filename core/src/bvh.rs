//! Binned SAH BVH builder producing the two-children-per-node layout of [`BvhNode`].
//!
//! - **Binning**: [`BINS`] = 16 bins per axis over the centroid bounds, all three
//!   axes tried; 16 bins find splits within a few percent of a full sweep's SAH
//!   at a fraction of its cost (Wald 2007).
//! - **Cost model**: node traversal [`COST_TRAVERSAL`] = 1, primitive test
//!   [`COST_INTERSECT`] = 1. A range becomes a leaf when splitting does not lower
//!   the SAH cost and it holds at most [`MAX_LEAF_SIZE`] primitives; a larger
//!   range is always split.
//! - **Large primitives**: where a side of the best centroid split is nearly
//!   as large as its range (a ground plane under small meshes), the range's
//!   primitives are also binned by size, and the split of the large ones
//!   from the rest wins when its SAH cost is lower (`binned::size_split`).
//! - **Depth bound**: from depth [`MEDIAN_SPLIT_DEPTH`] = 32 on, ranges are split at
//!   the median, which halves them. Any tree over fewer than `2^31` primitives is
//!   therefore shallower than 64 levels, so the fixed traversal stack of
//!   [`crate::gpu::TRAVERSAL_STACK_SIZE`] = 64 entries cannot overflow.
//! - **Degenerate input**: ranges whose centroids coincide (no axis to bin on)
//!   are split in index order, so duplicated primitives never cause deep trees.
//! - **Build cost**: each range is read in two streaming passes over boxes kept
//!   in slot order: one binning all three axes at once, and the partition, which
//!   also bounds each side's centroids. A side's box is the union of its bins'
//!   boxes, found by the SAH sweep, so no pass is spent on bounds (the boxes are
//!   the same, bit for bit up to the sign of a zero bound, as a fold over the
//!   side's primitives). The sweeps visit only occupied bins, and the bins a
//!   range filled are emptied after its sweep, so that the many small ranges
//!   near the leaves cost little; a small range whose primitives' areas alone
//!   already cost more than a leaf (a lower bound of any split's cost) stays a
//!   leaf without bins. The plan of a range (leaf or split) is made once.
//! - **Threads**: [`Bvh::build_with`] hands the two subtrees of every range of at
//!   least [`FORK_MIN_PRIMITIVES`] to a [`Fork`] (a thread pool's `join`), and the
//!   tree is the same as a one-thread build's whatever runs them.

mod binned;

use crate::aabb::Aabb;
use crate::error::Error;
use crate::gpu::BvhNode;
use alloc::vec::Vec;
use glam::Vec3;

/// Bins per axis.
pub const BINS: usize = 16;
// `Bins::occupied` keeps one bit per bin in a `u32`.
const _: () = assert!(BINS <= 32, "BINS: at most 32 (one bit each in a u32)");
/// Largest leaf the SAH may choose; larger ranges are always split.
pub const MAX_LEAF_SIZE: usize = 8;
/// SAH cost of visiting a node (relative to [`COST_INTERSECT`]). Dearer nodes
/// (1.5, 2, 3: larger leaves, fewer node steps) measured no faster on the GPU
/// render kernels and slower on the triangle sets (bench/RESULTS.md, "The BVH
/// cost model").
pub const COST_TRAVERSAL: f32 = 1.0;
/// SAH cost of testing one primitive.
pub const COST_INTERSECT: f32 = 1.0;
/// Depth from which ranges are split at the median (see the module docs).
pub const MEDIAN_SPLIT_DEPTH: u32 = 32;
/// Smallest range whose two subtrees [`Bvh::build_with`] hands to [`Fork::join`]:
/// below it a subtree is a few hundred microseconds of work or less, which a
/// task switch would eat.
pub const FORK_MIN_PRIMITIVES: usize = 4096;

/// How [`Bvh::build_with`] runs the two subtrees of a large range: possibly at
/// the same time. `prism-core` has no threads of its own; a caller with a
/// thread pool passes one (the backends pass `rayon::join`).
///
/// Every `Fork` gives the same tree, bit for bit: subtrees are built into their
/// own node lists and joined in the order a one-thread build would number them.
///
/// A `Fork` may run the halves in any order, or at once (a thread pool's
/// `join`, such as `rayon::join`, does):
///
/// ```
/// use prism_core::aabb::Aabb;
/// use prism_core::bvh::{Bvh, Fork};
/// use prism_core::glam::Vec3;
///
/// /// Builds the right half first.
/// struct RightFirst;
/// impl Fork for RightFirst {
///     fn join<RA: Send, RB: Send>(
///         &self,
///         a: impl FnOnce() -> RA + Send,
///         b: impl FnOnce() -> RB + Send,
///     ) -> (RA, RB) {
///         let rb = b();
///         (a(), rb)
///     }
/// }
///
/// let boxes: Vec<Aabb> = (0..10_000)
///     .map(|i| Aabb::from_point(Vec3::new((i % 100) as f32, (i / 100) as f32, 0.0)))
///     .collect();
/// let forked = Bvh::build_with(&boxes, &RightFirst);
/// let serial = Bvh::build(&boxes);
/// assert_eq!(forked.order, serial.order);
/// assert_eq!(forked.nodes, serial.nodes);
/// ```
pub trait Fork: Sync {
    /// Run `a` and `b`, in parallel or not, and return both results.
    fn join<RA: Send, RB: Send>(
        &self,
        a: impl FnOnce() -> RA + Send,
        b: impl FnOnce() -> RB + Send,
    ) -> (RA, RB);
}

/// The [`Fork`] that runs `a`, then `b`, on the calling thread: a one-thread
/// build through the forking path (which [`Bvh::build`] skips altogether).
#[derive(Clone, Copy, Debug, Default)]
pub struct Sequential;

impl Fork for Sequential {
    #[inline]
    fn join<RA: Send, RB: Send>(
        &self,
        a: impl FnOnce() -> RA + Send,
        b: impl FnOnce() -> RB + Send,
    ) -> (RA, RB) {
        (a(), b())
    }
}

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

/// The [`Fork`] of rayon: both subtrees go to `rayon::join`, so they run on the
/// current rayon pool (the global one, or the pool a caller `install`s).
#[cfg(feature = "rayon")]
#[derive(Clone, Copy, Debug, Default)]
pub struct RayonFork;

#[cfg(feature = "rayon")]
impl Fork for RayonFork {
    #[inline]
    fn join<RA: Send, RB: Send>(
        &self,
        a: impl FnOnce() -> RA + Send,
        b: impl FnOnce() -> RB + Send,
    ) -> (RA, RB) {
        rayon::join(a, b)
    }
}

impl Bvh {
    /// Build over primitives given by their bounds (centroids are the box centres),
    /// on the calling thread.
    ///
    /// Every input index appears exactly once in `order`. An empty input gives a
    /// root with two absent children. Like `Vec`, this aborts when the host
    /// cannot allocate the build's memory, and panics on more than
    /// [`MAX_PRIMITIVES`](crate::scene::MAX_PRIMITIVES) boxes;
    /// [`Bvh::try_build`] reports both.
    pub fn build(bounds: &[Aabb]) -> Bvh {
        Self::try_build(bounds).unwrap_or_else(out_of_memory)
    }

    /// [`Bvh::build`], with the subtrees of ranges of at least
    /// [`FORK_MIN_PRIMITIVES`] primitives run through `fork`. The tree is the
    /// same as [`Bvh::build`]'s, bit for bit.
    pub fn build_with<F: Fork>(bounds: &[Aabb], fork: &F) -> Bvh {
        Self::try_build_with(bounds, fork).unwrap_or_else(out_of_memory)
    }

    /// [`Bvh::build`], or [`Error::HostOutOfMemory`] naming the array the host
    /// could not allocate (the build takes about 100 bytes a primitive, its
    /// tree 64 of them), or [`Error::TooManyPrimitives`] past
    /// [`MAX_PRIMITIVES`](crate::scene::MAX_PRIMITIVES) boxes (the limit the
    /// tree's 32-bit indices and its depth bound are proven for).
    pub fn try_build(bounds: &[Aabb]) -> Result<Bvh, Error> {
        Self::build_in(bounds, None::<&Sequential>, MAX_LEAF_SIZE)
    }

    /// [`Bvh::try_build`] with leaves of one primitive each (the tree over a
    /// scene's instances, where a leaf entry costs a whole walk of a geometry's
    /// tree and is never worth sharing a leaf with another).
    pub fn try_build_single_leaves(bounds: &[Aabb]) -> Result<Bvh, Error> {
        Self::build_in(bounds, None::<&Sequential>, 1)
    }

    /// [`Bvh::try_build_single_leaves`], the large subtrees through `fork`
    /// (the same tree, bit for bit).
    pub fn try_build_single_leaves_with<F: Fork>(bounds: &[Aabb], fork: &F) -> Result<Bvh, Error> {
        Self::build_in(bounds, Some(fork), 1)
    }

    /// [`Bvh::build_with`], or [`Error::HostOutOfMemory`] as for
    /// [`Bvh::try_build`] (also when a forked subtree's own node list cannot
    /// grow).
    pub fn try_build_with<F: Fork>(bounds: &[Aabb], fork: &F) -> Result<Bvh, Error> {
        Self::build_in(bounds, Some(fork), MAX_LEAF_SIZE)
    }

    fn build_in<F: Fork>(bounds: &[Aabb], fork: Option<&F>, max_leaf: usize) -> Result<Bvh, Error> {
        // ok (indexing): the builder asks for the boxes of `0..bounds.len()`.
        binned::build(bounds.len(), |i| bounds[i as usize], fork, max_leaf, None)
            .map(|(bvh, _)| bvh)
    }

    /// [`Bvh::try_build_with`] (or [`Bvh::try_build`] without a fork) over `n`
    /// primitives whose boxes `box_of` gives, without an array of them, and
    /// the union of the boxes (the same box as [`Aabb::union`] over them in
    /// order). The build works in the memory of `records` (the array the
    /// leaves' primitive records go to next, at least `n` long; its contents
    /// afterwards are unspecified) where it can.
    pub(crate) fn try_build_boxes_of<F: Fork>(
        n: usize,
        box_of: impl Fn(u32) -> Aabb,
        fork: Option<&F>,
        records: &mut [crate::gpu::Primitive],
    ) -> Result<(Bvh, Aabb), Error> {
        binned::build(n, box_of, fork, MAX_LEAF_SIZE, Some(records))
    }
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

/// What [`Bvh::build`] does when [`Bvh::try_build`] fails: what `Vec` does,
/// reporting the size of the array it could not allocate.
fn out_of_memory(e: Error) -> Bvh {
    let bytes = match e {
        Error::HostOutOfMemory { bytes, .. } => usize::try_from(bytes).unwrap_or(usize::MAX),
        // ok: the documented panic of `Bvh::build` past MAX_PRIMITIVES, as
        // `Vec::with_capacity` panics past its capacity limit.
        e => panic!("{e}"),
    };
    let layout = core::alloc::Layout::from_size_align(bytes, 16)
        .unwrap_or(core::alloc::Layout::new::<BvhNode>());
    alloc::alloc::handle_alloc_error(layout)
}
