//! Splits by size: a range whose best centroid split is no split at all,
//! because a few large primitives span it (a ground plane under a crowd of
//! meshes, a long pole among small triangles), is split into its large
//! primitives and the rest instead.
//!
//! A split by centroids sends a large primitive to one side with the small
//! ones beside it, so that side's box, and the box of every node down to the
//! leaf that holds it, is as large as the primitive: rays near it enter
//! all of them. No plane through the centroids separates it, however many
//! bins. Grouping the primitives by size instead puts the large ones in a
//! subtree of their own near the root, as agglomerative builders do by
//! merging them last. On a crowd of five meshes on a two-triangle ground the
//! SAH tree did 1.2-1.5x the work a ray of the clustered tree
//! ([`crate::ploc`]) did before this split (bench/RESULTS.md, "Splits by
//! size").
//!
//! The size classes are a fourth set of bins, by half area relative to the
//! range's: class 0 for a primitive of at least half the range's area, class
//! `k` for `[2^-(k+1), 2^-k)` of it, the last class for everything smaller.
//! The sweep over the classes costs each split "classes below `c` against
//! the rest" as the centroid sweep costs its splits (area times count on
//! each side), and the cheaper of the two splits wins. It runs only on
//! ranges of [`SIZE_SPLIT_MIN_PRIMITIVES`] or more where a side of the best
//! centroid split is nearly as large as the range itself
//! ([`SIZE_SPLIT_TRIGGER`]), the mark a spanning primitive leaves; a mesh
//! without large primitives pays a comparison a range (bunny and ogre build
//! the same trees as without it, bar a few nodes).

use super::{Box3A, BuildPrim};

/// Size classes (bins by relative area); the last holds every primitive
/// smaller than `2^-(SIZE_CLASSES - 1)` of the range's half area.
pub(super) const SIZE_CLASSES: usize = 8;

/// Smallest range whose split by size is weighed: smaller ranges become
/// leaves or split by centroids within a few levels anyway.
pub(super) const SIZE_SPLIT_MIN_PRIMITIVES: usize = 16;

/// The split by size is weighed when a side of the best centroid split has
/// at least this share of the range's half area.
pub(super) const SIZE_SPLIT_TRIGGER: f32 = 0.9;

/// The best split by size: primitives of classes below `classes` on the
/// left, its cost (area times count summed over both sides, unnormalised
/// half areas) and both sides' boxes.
#[derive(Clone, Copy)]
pub(super) struct SizeSplit {
    pub(super) classes: usize,
    pub(super) cost: f32,
    pub(super) left: Box3A,
    pub(super) right: Box3A,
}

/// The size class of a primitive of half area `area` in a range whose half
/// area is `1 / inv_range_area`: from the exponent of their ratio, so that
/// the binning and the partition after it agree bit for bit. A ratio of 1
/// or more (or infinite) is class 0; zero, subnormal or negative-zero
/// ratios fall in the last class.
#[inline(always)]
pub(super) fn size_class(area: f32, inv_range_area: f32) -> usize {
    let ratio = area * inv_range_area;
    // Biased exponent: 126 for a ratio in [0.5, 1), one less per halving.
    let biased = ((ratio.to_bits() >> 23) & 0xff) as i32;
    (126 - biased).clamp(0, SIZE_CLASSES as i32 - 1) as usize
}

/// The best split of `prims` (a range of half area `1 / inv_range_area`)
/// by size, or `None` when every primitive falls in one class.
pub(super) fn best_size_split(prims: &[BuildPrim], inv_range_area: f32) -> Option<SizeSplit> {
    let mut bounds = [Box3A::EMPTY; SIZE_CLASSES];
    let mut count = [0u32; SIZE_CLASSES];
    for p in prims {
        let b = p.bounds();
        let k = size_class(b.half_area(), inv_range_area);
        bounds[k] = bounds[k].union(b);
        count[k] += 1;
    }
    // From the right: the classes >= c.
    let mut right_box = [Box3A::EMPTY; SIZE_CLASSES];
    let mut right_count = [0u32; SIZE_CLASSES];
    let (mut acc, mut n) = (Box3A::EMPTY, 0u32);
    for c in (0..SIZE_CLASSES).rev() {
        acc = acc.union(bounds[c]);
        n += count[c];
        right_box[c] = acc;
        right_count[c] = n;
    }
    // From the left; the first of equal costs wins.
    let mut best: Option<SizeSplit> = None;
    let (mut acc, mut n) = (Box3A::EMPTY, 0u32);
    for c in 1..SIZE_CLASSES {
        acc = acc.union(bounds[c - 1]);
        n += count[c - 1];
        if n == 0 || right_count[c] == 0 {
            continue;
        }
        let cost = acc.half_area() * n as f32 + right_box[c].half_area() * right_count[c] as f32;
        if best.is_none_or(|s| cost < s.cost) {
            best = Some(SizeSplit {
                classes: c,
                cost,
                left: acc,
                right: right_box[c],
            });
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::{SIZE_CLASSES, size_class};
    use proptest::prelude::*;

    /// Class `k` holds ratios in `[2^-(k+1), 2^-k)`, class 0 everything from
    /// a half up, the last class everything below.
    #[test]
    fn classes_halve() {
        assert_eq!(size_class(1.0, 1.0), 0);
        assert_eq!(size_class(7.0, 1.0), 0);
        assert_eq!(size_class(f32::INFINITY, 1.0), 0);
        assert_eq!(size_class(0.5, 1.0), 0);
        assert_eq!(size_class(0.4999, 1.0), 1);
        assert_eq!(size_class(0.25, 1.0), 1);
        assert_eq!(size_class(0.2499, 1.0), 2);
        assert_eq!(size_class(0.0, 1.0), SIZE_CLASSES - 1);
        assert_eq!(size_class(-0.0, 1.0), SIZE_CLASSES - 1);
        assert_eq!(size_class(1e-30, 1.0), SIZE_CLASSES - 1);
    }

    proptest! {
        /// The class is the number of halvings of the bound `1/2` (exact
        /// powers of two) before it reaches the ratio, clamped to the last
        /// class.
        #[test]
        fn class_counts_halvings(area in 1e-6f32..1e6, range in 1e-3f32..1e6) {
            let inv = 1.0 / range;
            let ratio = area * inv;
            let (mut class, mut bound) = (0, 0.5f32);
            while ratio < bound && class < SIZE_CLASSES - 1 {
                class += 1;
                bound *= 0.5;
            }
            prop_assert_eq!(size_class(area, inv), class);
        }
    }
}
