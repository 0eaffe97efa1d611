//! The tree over a scene's instances (the top level), rebuilt whenever an
//! instance moves, comes or goes.
//!
//! Two builders, both giving leaves of one instance (a leaf entry costs a
//! whole walk of a geometry's tree, so instances never share a leaf):
//!
//! - **SAH** ([`TopLevelBuild::Sah`]): core's binned SAH builder
//!   ([`crate::bvh`]). The best trees; its cost grows as `n log n` with some
//!   50 ns per instance and level on one core.
//! - **Morton** ([`TopLevelBuild::Morton`]): the instances' box centres are
//!   given the fast tree's 30-bit Morton codes (1024 cubic cells along the
//!   longest side of their bounds, [`crate::lbvh::morton_scale`]), radix
//!   sorted, and each range is split where its first and last codes first
//!   differ (Karras's LBVH, built top-down). A few passes over the instances
//!   and one binary search a node: a tenth of the SAH build's time, for trees
//!   that cost a few tenths more to walk where instances are uneven.
//!
//! [`TopLevelBuild::Auto`] takes the SAH up to [`SAH_MAX_INSTANCES`]
//! instances, where its build stays below about a millisecond, and Morton
//! codes above (bench/RESULTS.md gives the measurements behind the limit).
//!
//! Both keep the layout's rules: nodes in depth-first order (every inner
//! child after its parent), depth below [`crate::gpu::TRAVERSAL_STACK_SIZE`]
//! (Morton: at most 30 levels of code bits plus 30 of splitting a range of
//! equal codes by its positions' bits, for fewer than `2^30` instances).

use crate::aabb::Aabb;
use crate::bvh::{Bvh, Fork};
use crate::error::Error;
use crate::gpu::{BvhNode, EMPTY_CHILD};
use alloc::vec::Vec;

/// How the tree over the instances is built, and how tightly each instance
/// is boxed in it.
///
/// Under a SAH tree each instance is boxed by its geometry's outline as
/// placed ([`crate::outline`]: up to sixteen boxes of the geometry's tree,
/// far closer than the box of its rotated box; on 1,000 placed bunnies rays
/// traced 17-19% faster on the GPU), at sixteen box transforms a placement.
/// A Morton tree boxes each by its geometry's bounds alone, one transform a
/// placement, for frames that move tens of thousands of instances; it is the
/// only kind the CUDA backend places on the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TopLevelBuild {
    /// [`TopLevelBuild::Sah`] up to [`SAH_MAX_INSTANCES`] live instances,
    /// [`TopLevelBuild::Morton`] above (outlined boxes while the scene has
    /// at most [`SAH_MAX_INSTANCES`] instance slots, live or removed).
    #[default]
    Auto,
    /// Binned SAH: the fastest trees to walk, over outlined boxes.
    Sah,
    /// Morton codes (LBVH): the fastest build, over the geometries' bounds.
    Morton,
}

/// Most live instances [`TopLevelBuild::Auto`] builds with the SAH.
pub const SAH_MAX_INSTANCES: usize = 4096;

/// The top builders' work arrays, kept between builds so that a frame's
/// rebuild allocates nothing once the scene has stopped growing.
#[derive(Clone, Debug, Default)]
pub(crate) struct TopScratch {
    live: Vec<u32>,
    keys: Vec<MortonKey>,
    sort: Vec<MortonKey>,
    codes: Vec<u32>,
    boxes: Vec<Aabb>,
}

/// `v` emptied with room for `n` items, or [`Error::HostOutOfMemory`].
fn room<T>(v: &mut Vec<T>, n: usize, what: &'static str) -> Result<(), Error> {
    v.clear();
    v.try_reserve(n).map_err(|_| Error::HostOutOfMemory {
        what,
        bytes: (n as u64).saturating_mul(size_of::<T>() as u64),
    })
}

/// Build the tree over the instances whose world boxes are `world` (an empty
/// box: a removed instance, left out) into `nodes`. A leaf's index is the
/// instance's index in `world`, its count 1. Returns the depth.
pub(crate) fn build_top<F: Fork>(
    world: &[Aabb],
    build: TopLevelBuild,
    scratch: &mut TopScratch,
    nodes: &mut Vec<BvhNode>,
    fork: Option<&F>,
) -> Result<u32, Error> {
    room(&mut scratch.live, world.len(), "top-level instance list")?;
    scratch.live.extend(
        world
            .iter()
            .enumerate()
            .filter(|(_, b)| !b.is_empty())
            .map(|(i, _)| i as u32),
    );
    let live = &scratch.live;
    let morton = match build {
        TopLevelBuild::Auto => live.len() > SAH_MAX_INSTANCES,
        TopLevelBuild::Sah => false,
        TopLevelBuild::Morton => true,
    };
    if morton {
        let TopScratch {
            live,
            keys,
            sort,
            codes,
            ..
        } = scratch;
        return build_morton(world, live, keys, sort, codes, nodes, fork);
    }
    room(&mut scratch.boxes, live.len(), "top-level boxes")?;
    scratch
        .boxes
        .extend(live.iter().map(|&i| world[i as usize]));
    let mut bvh = match fork {
        Some(fork) => Bvh::try_build_single_leaves_with(&scratch.boxes, fork)?,
        None => Bvh::try_build_single_leaves(&scratch.boxes)?,
    };
    // Leaves name slots of `boxes`; name the instances instead.
    for n in &mut bvh.nodes {
        for (lo, count) in [
            (&mut n.left_lo, n.left_hi[3]),
            (&mut n.right_lo, n.right_hi[3]),
        ] {
            let index = lo[3].to_bits();
            if count.to_bits() > 0 && index != EMPTY_CHILD {
                // ok: a leaf's slot is below `boxes.len()`, and `order` maps
                // slots to positions in `live`.
                lo[3] = f32::from_bits(live[bvh.order[index as usize] as usize]);
            }
        }
    }
    *nodes = bvh.nodes;
    Ok(bvh.depth)
}

/// Fewest keys of a range whose two halves the Morton builder
/// ([`TopLevelBuild::Morton`]) builds through the update's
/// [`Fork`] ([`crate::Accel::update_with_fork`]): a range of 1,024 instances
/// takes some 30 microseconds on one core, a task switch a few.
pub const FORK_MIN_TOP_KEYS: usize = 1024;

/// The tree over `live` (indices into `world`) by Morton codes, into `nodes`,
/// its halves' subtrees built through `fork` where given (the same tree:
/// a range of `k` keys takes `k - 1` nodes, so each subtree's place in the
/// depth-first order is known before it is built).
fn build_morton<F: Fork>(
    world: &[Aabb],
    live: &[u32],
    keys: &mut Vec<MortonKey>,
    sort: &mut Vec<MortonKey>,
    codes: &mut Vec<u32>,
    nodes: &mut Vec<BvhNode>,
    fork: Option<&F>,
) -> Result<u32, Error> {
    let n = live.len();
    room(nodes, n.max(1), "top-level nodes")?;
    if n == 0 {
        nodes.push(empty_node());
        return Ok(0);
    }
    // Codes of the box centres on the fast tree's grid of cubic cells over
    // the centres' bounds ([`crate::lbvh::morton_code`]).
    let centre_bounds = live
        .iter()
        .fold(Aabb::EMPTY, |b, &i| b.grow(world[i as usize].center()));
    let scale = crate::lbvh::morton_scale(&centre_bounds);
    room(keys, n, "top-level Morton codes")?;
    keys.extend(live.iter().map(|&i| {
        let bounds = world[i as usize];
        let code = crate::lbvh::sort_key(&bounds, &centre_bounds, scale);
        MortonKey {
            code,
            instance: i,
            bounds,
        }
    }));
    radix_sort_codes(keys, sort)?;
    // The splits' binary searches read the codes alone: 4 bytes a key, so
    // that those of 100,000 instances stay in the L2 cache.
    room(codes, n, "top-level codes")?;
    codes.extend(keys.iter().map(|k| k.code));
    let builder = MortonBuilder { keys, codes };
    if n == 1 {
        nodes.push(node_of(&builder.leaf(0), &ChildRow::absent()));
        return Ok(1);
    }
    // ok: `nodes` was reserved for `n - 1` inner nodes (a tree of leaves of
    // one), so this does not allocate.
    nodes.resize(n - 1, empty_node());
    let (_, depth) = builder.fill(nodes, 0, 0, n, 0, fork);
    Ok(depth)
}

/// An instance as the Morton builder sorts it: its box travels with its
/// code, so that the leaves read their boxes in sorted order rather than
/// gathering them from the whole array.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MortonKey {
    code: u32,
    instance: u32,
    bounds: Aabb,
}

/// Sort `keys` by code, keeping the order of equal codes: three passes of 11
/// bits over the 30 code bits, their counts taken in one pass first.
fn radix_sort_codes(keys: &mut Vec<MortonKey>, other: &mut Vec<MortonKey>) -> Result<(), Error> {
    const RADIX: u32 = 11;
    const BUCKETS: usize = 1 << RADIX;
    // Every entry of `other` is written by the first pass: only its length
    // matters, so entries kept from an earlier build are not cleared.
    if other.len() < keys.len() {
        other
            .try_reserve(keys.len() - other.len())
            .map_err(|_| Error::HostOutOfMemory {
                what: "top-level sort buffer",
                bytes: (keys.len() * size_of::<MortonKey>()) as u64,
            })?;
        other.resize(
            keys.len(),
            MortonKey {
                code: 0,
                instance: 0,
                bounds: Aabb::EMPTY,
            },
        );
    }
    other.truncate(keys.len());
    let mut count = [[0u32; BUCKETS]; 3];
    let digit = |code: u32, pass: usize| ((code >> (pass as u32 * RADIX)) as usize) & (BUCKETS - 1);
    for k in keys.iter() {
        for (pass, c) in count.iter_mut().enumerate() {
            c[digit(k.code, pass)] += 1;
        }
    }
    for (pass, count) in count.iter_mut().enumerate() {
        let mut sum = 0;
        for c in count.iter_mut() {
            let here = *c;
            *c = sum;
            sum += here;
        }
        for k in keys.iter() {
            let b = digit(k.code, pass);
            // ok: the prefix sums place every key inside `other`.
            other[count[b] as usize] = *k;
            count[b] += 1;
        }
        core::mem::swap(keys, other);
    }
    Ok(())
}

/// One child as its parent stores it.
struct ChildRow {
    bounds: Aabb,
    index: u32,
    count: u32,
}

impl ChildRow {
    fn absent() -> Self {
        ChildRow {
            bounds: Aabb::EMPTY,
            index: EMPTY_CHILD,
            count: 0,
        }
    }
}

fn rows(c: &ChildRow) -> ([f32; 4], [f32; 4]) {
    if c.index == EMPTY_CHILD {
        let inf = f32::INFINITY;
        return (
            [inf, inf, inf, f32::from_bits(EMPTY_CHILD)],
            [inf, inf, inf, f32::from_bits(0)],
        );
    }
    let (lo, hi) = (c.bounds.min, c.bounds.max);
    (
        [lo.x, lo.y, lo.z, f32::from_bits(c.index)],
        [hi.x, hi.y, hi.z, f32::from_bits(c.count)],
    )
}

fn node_of(left: &ChildRow, right: &ChildRow) -> BvhNode {
    let (left_lo, left_hi) = rows(left);
    let (right_lo, right_hi) = rows(right);
    BvhNode {
        left_lo,
        left_hi,
        right_lo,
        right_hi,
    }
}

fn empty_node() -> BvhNode {
    node_of(&ChildRow::absent(), &ChildRow::absent())
}

struct MortonBuilder<'a> {
    /// The instances, sorted by code.
    keys: &'a [MortonKey],
    /// Their codes alone.
    codes: &'a [u32],
}

// ok (indexing in the builder): ranges `[start, end)` lie in `[0, keys.len())`
// and split strictly inside; the low half of a key is an index into `world`;
// a range of `k >= 2` keys is given exactly `k - 1` nodes.
impl MortonBuilder<'_> {
    fn leaf(&self, k: usize) -> ChildRow {
        let key = &self.keys[k];
        ChildRow {
            bounds: key.bounds,
            index: key.instance,
            count: 1,
        }
    }

    /// Where `[start, end)` (at least two keys) splits: after the last key
    /// whose code agrees with the first one's on the highest bit where the
    /// first and last codes differ. When every code is the same, the keys'
    /// positions take the codes' place (Karras's tie rule: the split falls
    /// where the highest bit in which `start` and `end - 1` differ turns on),
    /// so that a device building Karras's radix tree over (code, position)
    /// keys, as `kernels/top_build.cuh` does, builds this very tree.
    fn split(&self, start: usize, end: usize) -> usize {
        let code = |k: usize| self.codes[k];
        let (first, last) = (code(start), code(end - 1));
        if first == last {
            let bit = usize::BITS - 1 - (start ^ (end - 1)).leading_zeros();
            return ((end - 1) >> bit) << bit;
        }
        let bit = 31 - (first ^ last).leading_zeros();
        // The codes are sorted, so those with `bit` set (as `last` has) come last.
        let (mut lo, mut hi) = (start + 1, end - 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if code(mid) >> bit & 1 == 1 {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }

    /// Fill `nodes`, the `end - start - 1` nodes of the subtree over
    /// `[start, end)` (at least two keys) in depth-first order, its root
    /// first at index `base` of the whole tree and at `depth`; ranges of at
    /// least [`FORK_MIN_TOP_KEYS`] keys build their halves through `fork`.
    /// Returns the range's bounds and the depth of its deepest leaf.
    fn fill<F: Fork>(
        &self,
        nodes: &mut [BvhNode],
        base: usize,
        start: usize,
        end: usize,
        depth: u32,
        fork: Option<&F>,
    ) -> (Aabb, u32) {
        let mid = self.split(start, end);
        // The left range's nodes follow the root, the right range's follow
        // those.
        let Some((root, rest)) = nodes.split_first_mut() else {
            // Not reached: a range of two keys or more has its node.
            return (Aabb::EMPTY, depth);
        };
        let (left_nodes, right_nodes) = rest.split_at_mut(mid - start - 1);
        let left = |nodes: &mut [BvhNode]| self.child(nodes, base + 1, start, mid, depth + 1, fork);
        let right = |nodes: &mut [BvhNode]| {
            self.child(nodes, base + (mid - start), mid, end, depth + 1, fork)
        };
        let ((l, l_depth), (r, r_depth)) = match fork {
            Some(f) if end - start >= FORK_MIN_TOP_KEYS => {
                f.join(|| left(left_nodes), || right(right_nodes))
            }
            _ => (left(left_nodes), right(right_nodes)),
        };
        let bounds = l.bounds.union(r.bounds);
        *root = node_of(&l, &r);
        (bounds, l_depth.max(r_depth))
    }

    /// The child over `[start, end)` at `depth`: a leaf, or the inner node
    /// at index `index` of the whole tree whose subtree fills `nodes`.
    fn child<F: Fork>(
        &self,
        nodes: &mut [BvhNode],
        index: usize,
        start: usize,
        end: usize,
        depth: u32,
        fork: Option<&F>,
    ) -> (ChildRow, u32) {
        if end - start == 1 {
            return (self.leaf(start), depth);
        }
        let (bounds, deepest) = self.fill(nodes, index, start, end, depth, fork);
        (
            ChildRow {
                bounds,
                index: index as u32,
                count: 0,
            },
            deepest,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbvh::{LEAF_FLAG, radix_node};
    use proptest::prelude::*;

    proptest! {
        /// The Morton builder's split of every range is the split of
        /// Karras's radix tree over (code, position) keys, which the device
        /// builds (`kernels/top_build.cuh`): codes drawn from a few values,
        /// so that long runs of equal codes occur.
        #[test]
        fn morton_splits_are_the_radix_trees(mut codes in prop::collection::vec(0u32..6, 2..300)) {
            codes.sort_unstable();
            let keys: Vec<MortonKey> = codes
                .iter()
                .enumerate()
                .map(|(i, &code)| MortonKey { code, instance: i as u32, bounds: Aabb::EMPTY })
                .collect();
            let builder = MortonBuilder { keys: &keys, codes: &codes };
            for i in 0..codes.len() - 1 {
                let ([left, _], (first, last)) = radix_node(&codes, i);
                let gamma = (left & !LEAF_FLAG) as usize;
                prop_assert_eq!(builder.split(first as usize, last as usize + 1), gamma + 1);
            }
        }
    }
}
