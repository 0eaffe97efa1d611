//! The radix tree's structure on random sorted codes, and the built tree's
//! invariants (every primitive in one leaf, boxes holding their children,
//! core's layout rules) on random boxes.

use super::*;
use crate::gpu::check_tree;
use alloc::string::ToString;
use alloc::vec;
use proptest::prelude::*;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

/// Sorted codes with many repeats (few distinct values) or few.
fn sorted_codes() -> impl Strategy<Value = Vec<u32>> {
    (2usize..300, prop_oneof![Just(4u32), Just(1u32 << 30)]).prop_flat_map(|(n, span)| {
        proptest::collection::vec(0..span, n).prop_map(|mut v| {
            v.sort_unstable();
            v
        })
    })
}

pub(crate) fn boxes() -> impl Strategy<Value = Vec<Aabb>> {
    let point = || (-50.0f32..50.0, -50.0f32..50.0, -50.0f32..50.0);
    let one = (point(), (0.0f32..5.0, 0.0f32..5.0, 0.0f32..5.0), 0u8..4).prop_map(
        |((x, y, z), (a, b, c), snap)| {
            // Some boxes snapped onto a coarse lattice: equal centres, equal codes.
            let p = if snap == 0 {
                Vec3::new(x.round(), 0.0, 0.0)
            } else {
                Vec3::new(x, y, z)
            };
            Aabb {
                min: p,
                max: p + Vec3::new(a, b, c),
            }
        },
    );
    proptest::collection::vec(one, 0..400)
}

fn child_box(lo: [f32; 4], hi: [f32; 4]) -> Aabb {
    Aabb {
        min: Vec3::new(lo[0], lo[1], lo[2]),
        max: Vec3::new(hi[0], hi[1], hi[2]),
    }
}

fn holds(outer: &Aabb, inner: &Aabb) -> bool {
    outer.min.cmple(inner.min).all() && outer.max.cmpge(inner.max).all()
}

proptest! {
    #![proptest_config(config(256))]

    /// Every inner node's children split its range in two at one point, every
    /// slot is a leaf child exactly once and every inner node but the root a
    /// child exactly once: the `n - 1` nodes form one binary tree over the
    /// slots, whatever the repeats among the codes.
    #[test]
    fn radix_tree_partitions_the_slots(codes in sorted_codes()) {
        let n = codes.len();
        let mut leaf_parent = vec![0u32; n];
        let mut inner_parent = vec![0u32; n - 1];
        for i in 0..n - 1 {
            let ([l, r], (first, last)) = radix_node(&codes, i);
            prop_assert!(first < last);
            let range = |c: u32| -> (u32, u32) {
                if c & LEAF_FLAG != 0 {
                    (c & !LEAF_FLAG, c & !LEAF_FLAG)
                } else {
                    radix_node(&codes, c as usize).1
                }
            };
            let (lr, rr) = (range(l), range(r));
            prop_assert_eq!(lr.0, first, "node {}", i);
            prop_assert_eq!(rr.1, last, "node {}", i);
            prop_assert_eq!(lr.1 + 1, rr.0, "node {}", i);
            for c in [l, r] {
                if c & LEAF_FLAG != 0 {
                    leaf_parent[(c & !LEAF_FLAG) as usize] += 1;
                } else {
                    prop_assert!(c != 0, "the root is nobody's child");
                    inner_parent[c as usize] += 1;
                }
            }
        }
        prop_assert_eq!(radix_node(&codes, 0).1, (0, n as u32 - 1));
        prop_assert!(leaf_parent.iter().all(|&p| p == 1));
        prop_assert!(inner_parent[1..].iter().all(|&p| p == 1));
    }

    /// The built tree keeps the invariants of [`check_invariants`].
    #[test]
    fn fast_tree_invariants(input in boxes()) {
        let bvh = build(&input).map_err(|e| TestCaseError::fail(e.to_string()))?;
        check_invariants(&input, &bvh)?;
    }

    /// Slots are in Morton order, equal codes by input index: the order a
    /// stable radix sort on a device gives.
    #[test]
    fn slots_follow_the_codes(input in boxes()) {
        let bvh = build(&input).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let cb = input.iter().fold(Aabb::EMPTY, |b, p| b.grow(p.center()));
        let scale = morton_scale(&cb);
        let key = |i: u32| (sort_key(&input[i as usize], &cb, scale), i);
        prop_assert!(bvh.order.windows(2).all(|w| key(w[0]) < key(w[1])));
    }
}

/// A fast or clustered tree over `input`: core's layout rules, every
/// primitive in exactly one leaf (slots a permutation of the input), every
/// child box holding its subtree's boxes, leaves no larger than the SAH
/// tree's, the depth measured and bounded.
pub(crate) fn check_invariants(input: &[Aabb], bvh: &Bvh) -> Result<(), TestCaseError> {
    let n = input.len();
    prop_assert!(
        check_tree(&bvh.nodes, n).is_ok(),
        "{:?}",
        check_tree(&bvh.nodes, n)
    );
    let mut sorted = bvh.order.clone();
    sorted.sort_unstable();
    prop_assert!(sorted.iter().copied().eq(0..n as u32));
    let mut seen = vec![0u32; n];
    let mut deepest = 0;
    // (node, depth, box its parent gave it)
    let mut stack = vec![(0usize, 0u32, None::<Aabb>)];
    let mut visited = 0;
    while let Some((node, depth, parent)) = stack.pop() {
        visited += 1;
        let nd = &bvh.nodes[node];
        for (index, count, lo, hi) in [
            (nd.left_index(), nd.left_count(), nd.left_lo, nd.left_hi),
            (nd.right_index(), nd.right_count(), nd.right_lo, nd.right_hi),
        ] {
            if index == EMPTY_CHILD {
                continue;
            }
            let b = child_box(lo, hi);
            if let Some(p) = parent {
                prop_assert!(holds(&p, &b), "node {} child box outside its parent", node);
            }
            if count > 0 {
                prop_assert!(count as usize <= MAX_LEAF_SIZE);
                deepest = deepest.max(depth + 1);
                for slot in index..index + count {
                    seen[slot as usize] += 1;
                    let prim = input[bvh.order[slot as usize] as usize];
                    prop_assert!(holds(&b, &prim), "slot {} outside its leaf box", slot);
                }
            } else {
                stack.push((index as usize, depth + 1, Some(b)));
            }
        }
    }
    prop_assert_eq!(visited, bvh.nodes.len(), "every node reached once");
    prop_assert!(
        seen.iter().all(|&s| s == 1),
        "every slot in exactly one leaf"
    );
    prop_assert_eq!(bvh.depth, deepest);
    prop_assert_eq!(leaf_depth(&bvh.nodes, n), Ok(deepest));
    prop_assert!((bvh.depth as usize) < crate::gpu::TRAVERSAL_STACK_SIZE);
    Ok(())
}

/// The codes put x in the highest of each three bits, and clamp the far
/// corner of the grid into its last cell.
#[test]
fn morton_codes_interleave_and_clamp() {
    let cb = Aabb {
        min: Vec3::ZERO,
        max: Vec3::ONE,
    };
    let s = morton_scale(&cb);
    assert_eq!(morton_code(Vec3::ZERO, cb.min, s), 0);
    assert_eq!(morton_code(Vec3::ONE, cb.min, s), (1 << 30) - 1);
    assert_eq!(morton_code(Vec3::X, cb.min, s), spread_bits(1023) << 2);
    assert_eq!(morton_code(Vec3::Z, cb.min, s), spread_bits(1023));
    // The grid is 1024 (1 - 1e-6) cells wide: the middle falls in cell 511.
    assert_eq!(
        morton_code(Vec3::splat(0.5), cb.min, s),
        spread_bits(511) * 7
    );
    // A flat axis: every centre in cell 0 on it.
    let flat = Aabb {
        min: Vec3::ZERO,
        max: Vec3::new(1.0, 0.0, 1.0),
    };
    let s = morton_scale(&flat);
    assert_eq!(morton_code(Vec3::X, flat.min, s), spread_bits(1023) << 2);
    // Cubic cells: a box twice as long in x as in z takes cells 0-1023 in x
    // and 0-511 in z.
    let long = Aabb {
        min: Vec3::ZERO,
        max: Vec3::new(2.0, 0.0, 1.0),
    };
    let s = morton_scale(&long);
    assert_eq!(s.x, s.z);
    assert_eq!(
        morton_code(Vec3::new(2.0, 0.0, 1.0), long.min, s),
        spread_bits(1023) << 2 | spread_bits(511)
    );
    // Centres that coincide: all in cell 0.
    assert_eq!(
        morton_scale(&Aabb {
            min: Vec3::ONE,
            max: Vec3::ONE
        }),
        Vec3::ZERO
    );
}

/// A box that spans the others sorts after them ([`LARGE_BIT`]), and the
/// fast tree's root splits it off into a leaf of its own: the nodes over the
/// small boxes stay small.
#[test]
fn a_spanning_box_gets_a_root_child_of_its_own() {
    let mut input: Vec<Aabb> = (0..200)
        .map(|i| {
            let c = Vec3::new((i % 20) as f32, 0.0, (i / 20) as f32 * 2.0);
            Aabb {
                min: c - Vec3::splat(0.1),
                max: c + Vec3::splat(0.1),
            }
        })
        .collect();
    // The ground, inserted among the small boxes.
    input.insert(
        57,
        Aabb {
            min: Vec3::new(-1.0, -0.1, -1.0),
            max: Vec3::new(20.0, 0.0, 20.0),
        },
    );
    let cb = input.iter().fold(Aabb::EMPTY, |b, p| b.grow(p.center()));
    let scale = morton_scale(&cb);
    assert_ne!(sort_key(&input[57], &cb, scale) & LARGE_BIT, 0);
    assert!(
        input
            .iter()
            .enumerate()
            .all(|(i, b)| i == 57 || sort_key(b, &cb, scale) & LARGE_BIT == 0)
    );
    let bvh = build(&input).unwrap(); // ok: test, valid input
    assert_eq!(*bvh.order.last().unwrap(), 57); // ok: test, 201 slots
    let root = &bvh.nodes[0];
    assert_eq!((root.right_count(), root.right_index()), (1, 200));
}

/// Ten identical boxes (one code): one leaf would hold more than
/// MAX_LEAF_SIZE, so the root splits them by slot where the slots' highest bit changes
/// (0-7, 8-9), into two leaves.
#[test]
fn identical_boxes_split_by_slot() {
    let b = Aabb {
        min: Vec3::ZERO,
        max: Vec3::ONE,
    };
    let bvh = build(&[b; 10]).expect("ten boxes"); // ok: test, valid boxes
    assert!(check_tree(&bvh.nodes, 10).is_ok());
    let root = bvh.nodes[0];
    assert_eq!((root.left_index(), root.left_count()), (0, 8));
    assert_eq!((root.right_index(), root.right_count()), (8, 2));
    assert_eq!(bvh.order, (0..10).collect::<Vec<u32>>());
}

/// The SAH cost of a single leaf over everything is its primitive count plus
/// the root's visit.
#[test]
fn sah_cost_of_one_leaf() {
    let b = Aabb {
        min: Vec3::ZERO,
        max: Vec3::ONE,
    };
    let bvh = build(&[b; 3]).expect("three boxes"); // ok: test, valid boxes
    assert_eq!(bvh.nodes.len(), 1);
    assert_eq!(sah_cost(&bvh.nodes), COST_TRAVERSAL + 3.0 * COST_INTERSECT);
}

/// `leaf_depth` refuses a tree that leaves a slot out or holds one twice.
#[test]
fn leaf_depth_refuses_broken_trees() {
    let b = Aabb {
        min: Vec3::ZERO,
        max: Vec3::ONE,
    };
    let bvh = build(&[b; 10]).expect("ten boxes"); // ok: test, valid boxes
    assert_eq!(leaf_depth(&bvh.nodes, 10), Ok(1));
    assert_eq!(leaf_depth(&bvh.nodes, 11), Err("a slot is in no leaf"));
    let mut twice = bvh.nodes.clone();
    twice[0].right_lo[3] = f32::from_bits(0);
    assert_eq!(
        leaf_depth(&twice, 10),
        Err("a slot is in two leaves, or past the last")
    );
}
