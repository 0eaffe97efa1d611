//! The clustered tree's invariants on random boxes, the pair order that
//! guarantees progress, and its two degenerate inputs: boxes whose distances
//! all tie, and nested boxes that cluster one at a time.

use super::*;
use crate::lbvh::tests::{boxes, check_invariants};
use alloc::string::ToString;
use alloc::vec;
use glam::Vec3;
use proptest::prelude::*;

/// One round's nearest neighbours over `boxes`, as [`build`] finds them.
fn nearest_of(boxes: &[Aabb]) -> Vec<usize> {
    let m = boxes.len();
    (0..m)
        .map(|i| {
            let lo = i.saturating_sub(SEARCH_RADIUS);
            let hi = (i + SEARCH_RADIUS).min(m - 1);
            (lo..=hi)
                .filter(|&j| j != i)
                .min_by_key(|&j| pair_key(boxes[i].union(boxes[j]).half_area(), i as u32, j as u32))
                .unwrap_or(i)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Core's layout rules, every primitive in one leaf, boxes nested,
    /// leaves of at most MAX_LEAF_SIZE, depth below the stack.
    #[test]
    fn clustered_tree_invariants(input in boxes()) {
        let bvh = build(&input).map_err(|e| TestCaseError::fail(e.to_string()))?;
        check_invariants(&input, &bvh)?;
    }

    /// The pair of least key over a round is chosen from both ends, so every
    /// round merges at least once (the loop ends).
    #[test]
    fn least_pair_is_mutual(input in boxes()) {
        prop_assume!(input.len() >= 2);
        let nearest = nearest_of(&input);
        let (i, j) = (0..input.len())
            .map(|i| (i, nearest[i]))
            .min_by_key(|&(i, j)| pair_key(input[i].union(input[j]).half_area(), i as u32, j as u32))
            .expect("two boxes or more"); // ok: test, assumed above
        prop_assert_eq!(nearest[j], i, "the least pair ({}, {}) is not mutual", i, j);
    }

    /// A pair's key is the same from either end but for the side bit, which
    /// only orders a cluster's two candidates at one distance whose lower
    /// places have the same parity: the lower candidate first.
    #[test]
    fn pair_key_is_symmetric(area in 0.0f32..1e6, i in 0u32..1000, d in 1u32..17) {
        let j = i + d;
        prop_assert_eq!(pair_key(area, i, j) >> 1, pair_key(area, j, i) >> 1);
        let (below, above) = (pair_key(area, j, i), pair_key(area, j, j + d));
        if d % 2 == 0 {
            prop_assert!(below < above);
        } else {
            // The pair whose lower place is even comes first.
            prop_assert_eq!(below < above, i % 2 == 0);
        }
    }
}

/// 1,000 identical boxes (every distance ties): they pair off a round at a
/// time, (0, 1), (2, 3), ..., so the tree is balanced, not a chain.
#[test]
fn identical_boxes_pair_off() {
    let b = Aabb {
        min: Vec3::ZERO,
        max: Vec3::ONE,
    };
    let input = vec![b; 1000];
    let bvh = build(&input).expect("identical boxes"); // ok: test, valid boxes
    check_invariants(&input, &bvh).expect("invariants"); // ok: test, the check itself
    // log2(1000 / 8) rounded up, plus the root's level.
    assert!(bvh.depth <= 8, "depth {}", bvh.depth);
}

/// Boxes nested around the origin, each 1.5 times the last (areas stay
/// finite): every cluster's nearest is the next smaller one, so one pair
/// merges a round and the clustered tree is a chain deeper than the
/// traversal stack; `build` then gives the radix tree.
#[test]
fn nested_boxes_take_the_radix_tree() {
    let input: Vec<Aabb> = (0..100)
        .map(|k| Aabb {
            min: Vec3::ZERO,
            max: Vec3::splat(1.5f32.powi(k)),
        })
        .collect();
    let bvh = build(&input).expect("nested boxes"); // ok: test, valid boxes
    let radix = crate::lbvh::build(&input).expect("radix tree"); // ok: test, valid boxes
    assert!(bvh.order == radix.order, "not the radix tree's slots");
    assert!(
        bytemuck::cast_slice::<_, u8>(&bvh.nodes) == bytemuck::cast_slice::<_, u8>(&radix.nodes),
        "not the radix tree's nodes"
    );
    check_invariants(&input, &bvh).expect("invariants"); // ok: test, the check itself
}
