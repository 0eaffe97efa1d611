//! BVH properties: structural invariants of the builder, and traversal (closest
//! hit, any hit) equal to brute force over every primitive.

mod common;

use common::{Prim, all_hits, config, prim, scene_of, scene_prim, unit_vec3, vec3};
use glam::Vec3;
use prism_core::aabb::Aabb;
use prism_core::bvh::{Bvh, Fork, MEDIAN_SPLIT_DEPTH, sphere_bounds, triangle_bounds};
use prism_core::gpu::{BvhNode, EMPTY_CHILD, KIND_SPHERE, TRAVERSAL_STACK_SIZE};
use prism_core::{Accel, BuildQuality, Ray};
use proptest::prelude::*;

// ---------------------------------------------------------------------------
// Structure

fn child_box(lo: [f32; 4], hi: [f32; 4]) -> Aabb {
    Aabb {
        min: Vec3::new(lo[0], lo[1], lo[2]),
        max: Vec3::new(hi[0], hi[1], hi[2]),
    }
}

fn contains(outer: &Aabb, inner: &Aabb) -> bool {
    outer.contains(inner.min) && outer.contains(inner.max)
}

/// Walk the tree from the root and check every invariant traversal relies on:
/// each node reached exactly once, every leaf slot referenced exactly once,
/// indices in range, each child box holding its subtree, absent children only
/// where allowed, and the recorded depth equal to the deepest leaf and below the
/// traversal stack size. `slot_bounds[s]` is the box of the primitive at slot `s`.
fn check_tree(nodes: &[BvhNode], slot_bounds: &[Aabb], depth: u32) -> Result<(), TestCaseError> {
    let n = slot_bounds.len();
    prop_assert!(!nodes.is_empty(), "no root node");
    let mut node_seen = vec![false; nodes.len()];
    let mut slot_seen = vec![false; n];
    let mut deepest = 0u32;
    // (node, depth of the node, box the parent gave it)
    let mut stack = vec![(0usize, 0u32, None::<Aabb>)];
    node_seen[0] = true;
    while let Some((node, d, parent_box)) = stack.pop() {
        let nd = &nodes[node];
        let children = [
            (
                nd.left_index(),
                nd.left_count(),
                child_box(nd.left_lo, nd.left_hi),
            ),
            (
                nd.right_index(),
                nd.right_count(),
                child_box(nd.right_lo, nd.right_hi),
            ),
        ];
        for (k, &(index, count, bx)) in children.iter().enumerate() {
            if index == EMPTY_CHILD {
                prop_assert_eq!(count, 0);
                // Absent children: only under the root, for 0 primitives (both) or
                // beside a root leaf holding everything (the right one).
                prop_assert!(
                    node == 0 && (n == 0 || (k == 1 && nd.left_count() as usize == n)),
                    "absent child at node {node}"
                );
                prop_assert!(bx.min == Vec3::INFINITY, "absent child box must be at +inf");
                continue;
            }
            if let Some(pb) = parent_box {
                prop_assert!(
                    contains(&pb, &bx),
                    "node {node}: child box {bx:?} outside its own box {pb:?}"
                );
            }
            if count > 0 {
                let (first, count) = (index as usize, count as usize);
                prop_assert!(first + count <= n, "leaf {first}+{count} out of {n} slots");
                for (s, b) in slot_bounds.iter().enumerate().skip(first).take(count) {
                    prop_assert!(!slot_seen[s], "slot {s} in two leaves");
                    slot_seen[s] = true;
                    prop_assert!(
                        contains(&bx, b),
                        "slot {s}: {b:?} outside its leaf box {bx:?}"
                    );
                }
                deepest = deepest.max(d + 1);
            } else {
                let child = index as usize;
                prop_assert!(
                    child < nodes.len(),
                    "child node {child} out of {} nodes",
                    nodes.len()
                );
                prop_assert!(!node_seen[child], "node {child} reached twice");
                node_seen[child] = true;
                stack.push((child, d + 1, Some(bx)));
            }
        }
    }
    prop_assert!(slot_seen.iter().all(|&s| s), "some slot is in no leaf");
    prop_assert!(node_seen.iter().all(|&s| s), "some node is unreachable");
    prop_assert_eq!(deepest, depth, "recorded depth");
    prop_assert!(
        (depth as usize) < TRAVERSAL_STACK_SIZE,
        "depth {depth} would overflow the traversal stack"
    );
    Ok(())
}

/// The union of the slots' boxes under child `(index, count)` (a leaf's
/// slots, or an inner node's whole subtree), checking on the way that every
/// child box is that union: tight, not only holding it (up to the sign of a
/// zero bound, which `contains` does not tell apart).
fn tight_box(
    nodes: &[BvhNode],
    slot_bounds: &[Aabb],
    index: u32,
    count: u32,
) -> Result<Aabb, TestCaseError> {
    if count > 0 {
        let (first, count) = (index as usize, count as usize);
        return Ok(slot_bounds[first..first + count]
            .iter()
            .fold(Aabb::EMPTY, |a, b| a.union(*b)));
    }
    let nd = &nodes[index as usize];
    let mut all = Aabb::EMPTY;
    for (index, count, lo, hi) in [
        (nd.left_index(), nd.left_count(), nd.left_lo, nd.left_hi),
        (nd.right_index(), nd.right_count(), nd.right_lo, nd.right_hi),
    ] {
        if index == EMPTY_CHILD {
            continue;
        }
        let union = tight_box(nodes, slot_bounds, index, count)?;
        let bx = child_box(lo, hi);
        prop_assert!(
            contains(&bx, &union) && contains(&union, &bx),
            "node {index} (count {count}): box {bx:?}, its primitives' union {union:?}"
        );
        all = all.union(union);
    }
    Ok(all)
}

/// Build over `bounds` and check the tree, the leaf order (a permutation) and the
/// depth bound that follows from median splits below [`MEDIAN_SPLIT_DEPTH`].
fn check_bvh(bounds: &[Aabb]) -> Result<Bvh, TestCaseError> {
    let bvh = Bvh::build(bounds);
    let n = bounds.len();
    prop_assert_eq!(bvh.order.len(), n);
    let mut seen = vec![false; n];
    for &i in &bvh.order {
        prop_assert!(
            (i as usize) < n && !seen[i as usize],
            "order is not a permutation"
        );
        seen[i as usize] = true;
    }
    let slot_bounds: Vec<Aabb> = bvh.order.iter().map(|&i| bounds[i as usize]).collect();
    check_tree(&bvh.nodes, &slot_bounds, bvh.depth)?;
    tight_box(&bvh.nodes, &slot_bounds, 0, 0)?;
    // What the GPU backends check before upload.
    prop_assert_eq!(prism_core::gpu::check_tree(&bvh.nodes, n), Ok(()));
    let log2 = (n.max(1) as f64).log2().ceil() as u32;
    prop_assert!(
        bvh.depth <= MEDIAN_SPLIT_DEPTH + log2 + 1,
        "depth {} for {} primitives",
        bvh.depth,
        n
    );
    Ok(bvh)
}

/// Boxes of families that the SAH handles worst: centroids spaced geometrically
/// along a line (every binned split peels off the largest few; with a ratio of 16
/// or more exactly one, so only the median-split fallback bounds the depth),
/// optionally duplicated, plus any number of identical boxes.
fn adversarial_bounds() -> impl Strategy<Value = Vec<Aabb>> {
    let gentle = (1.05f32..3.0, 1usize..2500);
    // Ratios 16..64 over the whole f32 exponent range: 2^-120 .. 2^120.
    let steep = (16.0f32..64.0).prop_map(|r| (r, (240.0 / r.log2()) as usize));
    (
        prop_oneof![gentle, steep],
        1usize..4,
        unit_vec3(),
        0usize..3000,
        any::<bool>(),
    )
        .prop_map(|((ratio, n), copies, axis, same, grow)| {
            let mut out = Vec::new();
            let start = if ratio >= 16.0 { 2f32.powi(-120) } else { 1.0 };
            let mut x = start;
            for _ in 0..n {
                if !x.is_finite() || x > 1e36 {
                    x = start;
                }
                let c = axis * x;
                // Either point-sized or growing boxes (size proportional to position).
                let h = if grow { 0.25 * x } else { 0.0 };
                for _ in 0..copies {
                    out.push(Aabb {
                        min: c - Vec3::splat(h),
                        max: c + Vec3::splat(h),
                    });
                }
                x *= ratio;
            }
            out.extend(std::iter::repeat_n(
                Aabb {
                    min: Vec3::splat(-1.0),
                    max: Vec3::ONE,
                },
                same,
            ));
            out
        })
}

proptest! {
    #![proptest_config(config(48))]

    /// Adversarial inputs keep every invariant, and in particular a depth below
    /// the traversal stack (the median-split fallback bounds SAH chains).
    #[test]
    fn bvh_structure_adversarial(bounds in adversarial_bounds()) {
        check_bvh(&bounds)?;
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Random boxes, including empty-volume (point, flat) boxes and 0 or 1 boxes.
    #[test]
    fn bvh_structure_random(boxes in prop::collection::vec((vec3(100.0), vec3(5.0), 0usize..4), 0..300)) {
        let bounds: Vec<Aabb> = boxes
            .iter()
            .map(|&(c, h, flat)| {
                let mut h = h.abs();
                if flat < 3 {
                    h[flat] = 0.0;
                }
                Aabb { min: c - h, max: c + h }
            })
            .collect();
        check_bvh(&bounds)?;
    }
}

/// Exactly the boundary cases: no primitive, one, two, `MAX_LEAF_SIZE` identical
/// ones and one more.
#[test]
fn bvh_structure_small_counts() {
    let unit = Aabb {
        min: Vec3::ZERO,
        max: Vec3::ONE,
    };
    for n in [0, 1, 2, 3, 8, 9, 17] {
        let bounds = vec![unit; n];
        check_bvh(&bounds).unwrap_or_else(|e| panic!("{n} primitives: {e}"));
        let spread: Vec<Aabb> = (0..n)
            .map(|i| Aabb {
                min: Vec3::splat(i as f32),
                max: Vec3::splat(i as f32 + 0.5),
            })
            .collect();
        check_bvh(&spread).unwrap_or_else(|e| panic!("{n} spread primitives: {e}"));
    }
    let empty = Bvh::build(&[]);
    assert_eq!(empty.nodes.len(), 1);
    assert_eq!(empty.nodes[0].left_index(), EMPTY_CHILD);
    assert_eq!(empty.nodes[0].right_index(), EMPTY_CHILD);
}

/// Boxes with NaN or infinite coordinates, which `Bvh::build` accepts (an
/// `Accel` never passes them: scenes are validated first): the build returns,
/// every primitive is in exactly one leaf, and every node is reached once.
/// (Containment is not checked: nothing contains a NaN box.)
fn check_links(bounds: &[Aabb]) -> Result<(), TestCaseError> {
    let bvh = Bvh::build(bounds);
    let n = bounds.len();
    let mut slot_seen = vec![false; n];
    let mut node_seen = vec![false; bvh.nodes.len()];
    let mut stack = vec![0usize];
    node_seen[0] = true;
    while let Some(node) = stack.pop() {
        let nd = &bvh.nodes[node];
        for (index, count) in [
            (nd.left_index(), nd.left_count()),
            (nd.right_index(), nd.right_count()),
        ] {
            if index == EMPTY_CHILD {
                continue;
            }
            if count > 0 {
                let range = index as usize..index as usize + count as usize;
                prop_assert!(range.end <= n, "leaf {range:?} out of {n} slots");
                for s in range {
                    prop_assert!(!slot_seen[s], "slot {s} in two leaves");
                    slot_seen[s] = true;
                }
            } else {
                let child = index as usize;
                prop_assert!(
                    child < bvh.nodes.len() && !node_seen[child],
                    "bad child {child}"
                );
                node_seen[child] = true;
                stack.push(child);
            }
        }
    }
    prop_assert!(slot_seen.iter().all(|&s| s), "some slot is in no leaf");
    prop_assert!(node_seen.iter().all(|&s| s), "some node is unreachable");
    let mut order = bvh.order.clone();
    order.sort_unstable();
    prop_assert!(
        order.iter().copied().eq(0..n as u32),
        "order is not a permutation"
    );
    prop_assert!((bvh.depth as usize) < TRAVERSAL_STACK_SIZE);
    prop_assert_eq!(prism_core::gpu::check_tree(&bvh.nodes, n), Ok(()));
    Ok(())
}

fn unordered_coord() -> impl Strategy<Value = f32> {
    prop_oneof![
        4 => -10.0f32..10.0,
        1 => Just(f32::NAN),
        1 => Just(f32::INFINITY),
        1 => Just(f32::NEG_INFINITY),
        1 => Just(-0.0f32),
    ]
}

proptest! {
    #![proptest_config(config(256))]

    /// NaN and infinite boxes give a well-formed tree.
    #[test]
    fn bvh_links_with_nan_and_inf(
        boxes in prop::collection::vec(
            [unordered_coord(), unordered_coord(), unordered_coord(), unordered_coord(), unordered_coord(), unordered_coord()],
            0..200,
        ),
    ) {
        let bounds: Vec<Aabb> = boxes
            .iter()
            .map(|c| Aabb { min: Vec3::new(c[0], c[1], c[2]), max: Vec3::new(c[3], c[4], c[5]) })
            .collect();
        check_links(&bounds)?;
    }
}

/// Runs `b` before `a`: a fork whose order differs from a one-thread build's.
struct Reversed;

impl Fork for Reversed {
    fn join<RA: Send, RB: Send>(
        &self,
        a: impl FnOnce() -> RA + Send,
        b: impl FnOnce() -> RB + Send,
    ) -> (RA, RB) {
        let rb = b();
        (a(), rb)
    }
}

/// Runs `a` on a scoped thread while `b` runs on this one.
struct Threads;

impl Fork for Threads {
    fn join<RA: Send, RB: Send>(
        &self,
        a: impl FnOnce() -> RA + Send,
        b: impl FnOnce() -> RB + Send,
    ) -> (RA, RB) {
        std::thread::scope(|s| {
            let a = s.spawn(a);
            let rb = b();
            (a.join().expect("subtree build panicked"), rb)
        })
    }
}

proptest! {
    #![proptest_config(config(8))]

    /// Forked builds give the one-thread tree bit for bit, whatever order or
    /// thread the subtrees are built in: ranges large enough to fork, clustered
    /// so that some subtrees are much larger than others.
    #[test]
    fn forked_build_is_the_same_tree(
        clusters in prop::collection::vec((vec3(100.0), 0.01f32..10.0, 1usize..6000), 1..8),
        seed in any::<u32>(),
    ) {
        let mut state = seed | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as f32 / u32::MAX as f32 - 0.5
        };
        let mut bounds = Vec::new();
        for &(center, spread, n) in &clusters {
            for _ in 0..n {
                let c = center + Vec3::new(next(), next(), next()) * spread;
                let h = Vec3::new(next(), next(), next()).abs() * spread * 0.05;
                bounds.push(Aabb { min: c - h, max: c + h });
            }
        }
        let serial = Bvh::build(&bounds);
        for forked in [Bvh::build_with(&bounds, &Reversed), Bvh::build_with(&bounds, &Threads)] {
            prop_assert_eq!(&forked.order, &serial.order);
            prop_assert_eq!(forked.depth, serial.depth);
            prop_assert!(forked.nodes == serial.nodes, "nodes differ");
        }
    }
}

/// The leaves under node `node` (whose children lie at depth `depth`): each
/// leaf's depth and its run of slots.
fn leaves_below(
    nodes: &[BvhNode],
    node: usize,
    depth: u32,
    out: &mut Vec<(u32, std::ops::Range<usize>)>,
) {
    let nd = &nodes[node];
    let children = [
        (nd.left_index(), nd.left_count()),
        (nd.right_index(), nd.right_count()),
    ];
    for (index, count) in children.into_iter().filter(|c| c.0 != EMPTY_CHILD) {
        match count {
            0 => leaves_below(nodes, index as usize, depth + 1, out),
            _ => out.push((depth, index as usize..(index + count) as usize)),
        }
    }
}

/// Two boxes that span the scene (a ground) under 2,000 small ones in five
/// clusters: the SAH tree splits them off by size near the root, into leaves
/// of their own, instead of sinking them into a leaf beside small boxes under
/// a chain of nodes as large as the ground.
#[test]
fn spanning_primitives_sit_near_the_root() {
    let mut bounds = vec![
        Aabb {
            min: Vec3::new(-20.0, 0.0, -20.0),
            max: Vec3::new(20.0, 0.0, 20.0),
        };
        2
    ];
    let mut state = 0x2545_f491_u32;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state as f32 / u32::MAX as f32
    };
    for k in 0..5 {
        let at = Vec3::new(3.0 * (k as f32).cos(), 0.0, 3.0 * (k as f32).sin());
        for _ in 0..400 {
            let c = at + Vec3::new(next() - 0.5, next(), next() - 0.5);
            let h = Vec3::splat(0.01 + 0.01 * next());
            bounds.push(Aabb {
                min: c - h,
                max: c + h,
            });
        }
    }
    let bvh = Bvh::build(&bounds);
    // Every leaf holding a ground box holds only ground boxes and lies at
    // most two levels below the root.
    let mut leaves = Vec::new();
    leaves_below(&bvh.nodes, 0, 1, &mut leaves);
    let mut ground_leaves = 0;
    for (depth, slots) in leaves {
        let grounds = slots.clone().filter(|&s| bvh.order[s] < 2).count();
        if grounds > 0 {
            assert_eq!(
                grounds,
                slots.len(),
                "a ground box shares a leaf with small ones"
            );
            assert!(depth <= 2, "ground leaf at depth {depth}");
            ground_leaves += grounds;
        }
    }
    assert_eq!(ground_leaves, 2);
}

// ---------------------------------------------------------------------------
// Traversal against brute force

/// Relative tolerance within which two hits count as a tie: the box test may cull
/// a leaf whose primitive lies within rounding of the best hit so far.
const TIE: f32 = 1e-5;

/// A scene as a list of primitives (id = index) plus how to aim rays at it.
#[derive(Clone, Debug)]
struct Case {
    prims: Vec<Prim>,
    rays: Vec<RaySpec>,
}

/// A ray described relative to the scene, made concrete by [`RaySpec::ray`].
#[derive(Clone, Debug)]
struct RaySpec {
    /// Which primitive to aim at, and where on it (`a`, `b`).
    target: prop::sample::Index,
    a: f32,
    b: f32,
    /// Where the ray starts: 0 = anywhere in the scene box, 1 = close to the
    /// target (a secondary ray), 2 = on an axis line through the target.
    from: u8,
    origin: Vec3,
    /// Direction jitter added to the aimed direction (0 = exactly aimed).
    jitter: Vec3,
    /// Direction components forced to zero (axis-parallel rays).
    zero: [bool; 3],
    axis: usize,
    /// Length of `dir` relative to the aimed distance (t of the target = 1/len).
    len: f32,
    /// 0: (0, inf); 1: (tmin, inf); 2: (0, tmax); 3: (tmin, tmax) around the target.
    limits: u8,
    lim: (f32, f32),
}

fn ray_spec() -> impl Strategy<Value = RaySpec> {
    (
        (any::<prop::sample::Index>(), 0.0f32..1.0, 0.0f32..1.0),
        (
            0u8..3,
            vec3(1.0),
            prop_oneof![2 => Just(Vec3::ZERO), 1 => vec3(0.3)],
        ),
        (prop::array::uniform3(prop::bool::weighted(0.15)), 0usize..3),
        (-1.0f32..1.0, 0u8..4, (0.2f32..1.5, 0.2f32..1.5)),
    )
        .prop_map(
            |((target, a, b), (from, origin, jitter), (zero, axis), (len_exp, limits, lim))| {
                RaySpec {
                    target,
                    a,
                    b,
                    from,
                    origin,
                    jitter,
                    zero,
                    axis,
                    len: 10f32.powf(len_exp),
                    limits,
                    lim,
                }
            },
        )
}

/// The centre and half size of the scene (for placing origins).
fn scene_box(prims: &[Prim]) -> (Vec3, f32) {
    let b = prims.iter().fold(Aabb::EMPTY, |acc, p| {
        acc.union(match *p {
            Prim::Sphere(c, r) => sphere_bounds(c, r),
            Prim::Tri(a, b, c) => triangle_bounds(a, b, c),
        })
    });
    (b.center(), 0.5 * b.diagonal().max(1e-3))
}

impl RaySpec {
    fn ray(&self, prims: &[Prim], center: Vec3, half: f32) -> Ray {
        let p = prims[self.target.index(prims.len())];
        let target = p.point(self.a, self.b);
        let origin = match self.from {
            0 => center + 1.5 * half * self.origin,
            1 => target + 0.05 * half * self.origin,
            _ => {
                // Same coordinates as the target except along one axis.
                let mut o = target;
                o[self.axis] += 2.0 * half * self.origin[self.axis].signum();
                o
            }
        };
        let mut dir = (target - origin) + (target - origin).length() * self.jitter;
        for k in 0..3 {
            if self.zero[k] {
                dir[k] = 0.0;
            }
        }
        if dir == Vec3::ZERO {
            dir[self.axis] = 1.0;
        }
        let dir = dir * self.len;
        let t_target = 1.0 / self.len;
        let (tmin, tmax) = match self.limits {
            0 => (0.0, f32::INFINITY),
            1 => (self.lim.0 * t_target, f32::INFINITY),
            2 => (0.0, self.lim.0 * t_target),
            _ => {
                let (x, y) = (self.lim.0.min(self.lim.1), self.lim.0.max(self.lim.1));
                (x * t_target, y * t_target)
            }
        };
        Ray::segment(origin, dir, tmin, tmax)
    }
}

/// The closest hit and any-hit of the `Accel` equal brute force over every
/// primitive: same boolean for any-hit; for the closest hit, the reported
/// primitive's own `(t, u, v)` and a `t` no farther than the nearest by [`TIE`].
fn check_case(case: &Case) -> Result<(), TestCaseError> {
    check_case_with(case, BuildQuality::Sah)
}

/// [`check_case`] on the tree of `quality`.
fn check_case_with(case: &Case, quality: BuildQuality) -> Result<(), TestCaseError> {
    let mut scene = scene_of(&case.prims);
    scene.build_quality = quality;
    let accel = Accel::build(&scene).map_err(|e| TestCaseError::fail(e.to_string()))?;
    // The scene's accessors give back what was added, by id.
    for (id, p) in case.prims.iter().enumerate() {
        prop_assert_eq!(scene_prim(&scene, id as u32), *p);
    }
    // The Accel's leaf-order primitives form a tree with the builder's invariants.
    let slot_bounds: Vec<Aabb> = accel
        .primitives()
        .iter()
        .map(|p| {
            let v = |r: [f32; 4]| Vec3::new(r[0], r[1], r[2]);
            if p.kind() == KIND_SPHERE {
                sphere_bounds(v(p.a), p.b[0])
            } else {
                triangle_bounds(v(p.a), v(p.b), v(p.c))
            }
        })
        .collect();
    check_tree(accel.nodes(), &slot_bounds, accel.depth())?;
    // A sphere record carries its 1 / radius and its size, as computed at a hit.
    for p in accel
        .primitives()
        .iter()
        .filter(|p| p.kind() == KIND_SPHERE)
    {
        let centre = Vec3::new(p.a[0], p.a[1], p.a[2]);
        prop_assert_eq!(p.b[1].to_bits(), (1.0 / p.b[0]).to_bits());
        prop_assert_eq!(
            p.b[2].to_bits(),
            (centre.abs().max_element() + p.b[0]).to_bits()
        );
    }
    let mut ids: Vec<u32> = accel.primitives().iter().map(|p| p.id()).collect();
    ids.sort_unstable();
    prop_assert!(
        ids.iter().copied().eq(0..case.prims.len() as u32),
        "slots do not hold every primitive once"
    );

    let (center, half) = scene_box(&case.prims);
    for spec in &case.rays {
        let ray = spec.ray(&case.prims, center, half);
        let hits = all_hits(&case.prims, &ray);
        let hit = accel.intersect(&ray);
        prop_assert_eq!(
            accel.occluded(&ray),
            !hits.is_empty(),
            "any hit differs for {:?}; brute force hits: {:?}",
            ray,
            hits
        );
        let nearest = hits.iter().map(|h| h.1).min_by(f32::total_cmp);
        match nearest {
            None => {
                prop_assert!(
                    !hit.is_hit(),
                    "{ray:?}: Accel hit {hit:?}, brute force nothing"
                );
                prop_assert_eq!(hit.t, f32::INFINITY);
            }
            Some(t_near) => {
                prop_assert!(hit.is_hit(), "{ray:?}: Accel missed, brute force {hits:?}");
                let own = hits.iter().find(|h| h.0 == hit.prim);
                prop_assert!(
                    own.is_some(),
                    "{ray:?}: Accel reports prim {} which brute force does not hit",
                    hit.prim
                );
                let &(_, t, u, v) = own.unwrap();
                prop_assert_eq!(
                    (hit.t, hit.u, hit.v),
                    (t, u, v),
                    "hit values differ from the primitive's own test"
                );
                prop_assert!(
                    hit.t <= t_near + TIE * t_near.abs(),
                    "{ray:?}: Accel t = {} (prim {}), nearest {}; hits {:?}",
                    hit.t,
                    hit.prim,
                    t_near,
                    hits
                );
            }
        }
        // The slot view names the same hit.
        let slot_hit = accel.intersect_slot(&ray);
        prop_assert_eq!(slot_hit.t, hit.t);
        if slot_hit.is_hit() {
            prop_assert_eq!(accel.primitives()[slot_hit.prim as usize].id(), hit.prim);
        }
    }
    Ok(())
}

fn rays() -> impl Strategy<Value = Vec<RaySpec>> {
    prop::collection::vec(ray_spec(), 48)
}

/// Random mixed scenes of spheres and triangles, moved up to `offset` away.
fn mixed(max: usize, offset: f32) -> impl Strategy<Value = Vec<Prim>> {
    (prop::collection::vec(prim(10.0, 2.0), 1..max), vec3(offset))
        .prop_map(|(ps, off)| ps.iter().map(|p| p.translated(off)).collect())
}

/// Scenes of a few primitives each repeated several times (exact ties).
fn duplicated() -> impl Strategy<Value = Vec<Prim>> {
    (
        prop::collection::vec((prim(5.0, 2.0), 1usize..12), 1..12),
        any::<u64>(),
    )
        .prop_map(|(ps, seed)| {
            let mut out: Vec<Prim> = ps
                .iter()
                .flat_map(|&(p, k)| std::iter::repeat_n(p, k))
                .collect();
            // A cheap deterministic shuffle.
            let mut s = seed | 1;
            for i in (1..out.len()).rev() {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                out.swap(i, (s % (i as u64 + 1)) as usize);
            }
            out
        })
}

/// Scenes whose primitive boxes all have the same centre (no axis to bin on):
/// nested spheres and triangles with vertices `c + a`, `c - a`, `c + b` where
/// `|b| <= |a|` per axis; dyadic values keep the centres exactly equal.
fn same_centroid() -> impl Strategy<Value = Vec<Prim>> {
    let q = |v: Vec3| (v * 8.0).round() / 8.0;
    (
        vec3(8.0),
        prop::collection::vec(
            (
                any::<bool>(),
                vec3(4.0),
                prop::array::uniform3(-2i32..=2),
                1u32..32,
            ),
            2..80,
        ),
    )
        .prop_map(move |(c, items)| {
            let c = q(c);
            items
                .iter()
                .map(|&(sphere, a, f, r)| {
                    if sphere {
                        Prim::Sphere(c, r as f32 / 8.0)
                    } else {
                        let a = q(a);
                        let b = Vec3::new(
                            a.x * f[0] as f32 / 2.0,
                            a.y * f[1] as f32 / 2.0,
                            a.z * f[2] as f32 / 2.0,
                        );
                        Prim::Tri(c + a, c - a, c + b)
                    }
                })
                .collect()
        })
}

/// A chain of primitives at geometrically growing distances (1 to 1e4, sizes
/// growing alike), repeated: deep, lopsided trees full of exact duplicates.
///
/// Sizes stay far above `f32` resolution at the distances rays come from: the
/// watertight test cannot resolve a triangle smaller than about `1e-7` of its
/// distance from the ray origin (its edge functions are then rounding noise and
/// it may report a hit anywhere), so such scenes test nothing about the BVH.
fn chain() -> impl Strategy<Value = Vec<Prim>> {
    (1.1f32..1.5, 20usize..400, unit_vec3(), prim(0.0, 1.0)).prop_map(|(ratio, n, axis, shape)| {
        let mut x = 1.0f32;
        let mut out = Vec::new();
        for _ in 0..n {
            if x > 1e4 {
                x = 1.0;
            }
            let s = 0.1 * x;
            out.push(match shape {
                Prim::Sphere(c, r) => Prim::Sphere(axis * x + c * s, r * s),
                Prim::Tri(a, b, c) => {
                    Prim::Tri(axis * x + a * s, axis * x + b * s, axis * x + c * s)
                }
            });
            x *= ratio;
        }
        out
    })
}

/// Small primitives standing on a few that span the whole scene (a crowd
/// on a ground plane): the ranges the SAH tree splits by size.
fn on_a_ground() -> impl Strategy<Value = Vec<Prim>> {
    (
        prop::collection::vec(prim(4.0, 0.4), 16..240),
        prop::collection::vec((-1.0f32..1.0, 10.0f32..40.0), 1..4),
    )
        .prop_map(|(mut small, grounds)| {
            for (y, half) in grounds {
                let c = [(-half, -half), (half, -half), (half, half), (-half, half)]
                    .map(|(x, z)| Vec3::new(x, y, z));
                small.push(Prim::Tri(c[0], c[2], c[1]));
                small.push(Prim::Tri(c[0], c[3], c[2]));
            }
            small
        })
}

proptest! {
    #![proptest_config(config(96))]

    /// Small primitives on large ones that span the scene.
    #[test]
    fn traversal_matches_brute_force_on_a_ground(prims in on_a_ground(), rays in rays()) {
        check_case(&Case { prims, rays })?;
    }

    /// Mixed random scenes near the origin.
    #[test]
    fn traversal_matches_brute_force(prims in mixed(200, 0.0), rays in rays()) {
        check_case(&Case { prims, rays })?;
    }

    /// Mixed random scenes far from the world origin with rays starting close to
    /// their targets (secondary rays at large coordinates).
    #[test]
    fn traversal_matches_brute_force_far(prims in mixed(120, 1e4), rays in rays()) {
        check_case(&Case { prims, rays })?;
    }

    /// Duplicated primitives (exact ties between different ids).
    #[test]
    fn traversal_matches_brute_force_duplicates(prims in duplicated(), rays in rays()) {
        check_case(&Case { prims, rays })?;
    }

    /// All primitive boxes share one centre.
    #[test]
    fn traversal_matches_brute_force_same_centroid(prims in same_centroid(), rays in rays()) {
        check_case(&Case { prims, rays })?;
    }

    /// A single primitive (the root is a leaf with an absent sibling).
    #[test]
    fn traversal_matches_brute_force_single(p in prim(10.0, 3.0), rays in rays()) {
        check_case(&Case { prims: vec![p], rays })?;
    }
}

proptest! {
    #![proptest_config(config(96))]

    /// The fast (Morton-code) tree on mixed random scenes near the origin.
    #[test]
    fn fast_tree_matches_brute_force(prims in mixed(200, 0.0), rays in rays()) {
        check_case_with(&Case { prims, rays }, BuildQuality::Fast)?;
    }

    /// The fast tree far from the world origin.
    #[test]
    fn fast_tree_matches_brute_force_far(prims in mixed(120, 1e4), rays in rays()) {
        check_case_with(&Case { prims, rays }, BuildQuality::Fast)?;
    }

    /// The fast tree over duplicated primitives (equal codes, told apart by slot).
    #[test]
    fn fast_tree_matches_brute_force_duplicates(prims in duplicated(), rays in rays()) {
        check_case_with(&Case { prims, rays }, BuildQuality::Fast)?;
    }

    /// The fast tree when every box shares one centre.
    #[test]
    fn fast_tree_matches_brute_force_same_centroid(prims in same_centroid(), rays in rays()) {
        check_case_with(&Case { prims, rays }, BuildQuality::Fast)?;
    }

    /// The fast tree over one primitive.
    #[test]
    fn fast_tree_matches_brute_force_single(p in prim(10.0, 3.0), rays in rays()) {
        check_case_with(&Case { prims: vec![p], rays }, BuildQuality::Fast)?;
    }
}

proptest! {
    #![proptest_config(config(64))]

    /// The clustered tree on mixed random scenes near the origin.
    #[test]
    fn clustered_tree_matches_brute_force(prims in mixed(200, 0.0), rays in rays()) {
        check_case_with(&Case { prims, rays }, BuildQuality::Clustered)?;
    }

    /// The clustered tree far from the world origin.
    #[test]
    fn clustered_tree_matches_brute_force_far(prims in mixed(120, 1e4), rays in rays()) {
        check_case_with(&Case { prims, rays }, BuildQuality::Clustered)?;
    }

    /// The clustered tree over duplicated primitives (distances that tie).
    #[test]
    fn clustered_tree_matches_brute_force_duplicates(prims in duplicated(), rays in rays()) {
        check_case_with(&Case { prims, rays }, BuildQuality::Clustered)?;
    }

    /// The clustered tree when every box shares one centre.
    #[test]
    fn clustered_tree_matches_brute_force_same_centroid(prims in same_centroid(), rays in rays()) {
        check_case_with(&Case { prims, rays }, BuildQuality::Clustered)?;
    }
}

proptest! {
    #![proptest_config(config(24))]

    /// The clustered tree over deep chains (nested boxes cluster one at a
    /// time: too deep, so the radix tree is taken).
    #[test]
    fn clustered_tree_matches_brute_force_chain(prims in chain(), rays in rays()) {
        check_case_with(&Case { prims, rays }, BuildQuality::Clustered)?;
    }

    /// The fast tree over deep chains (codes on a 1024^3 grid: the chain's
    /// small end shares cells, told apart by slot).
    #[test]
    fn fast_tree_matches_brute_force_chain(prims in chain(), rays in rays()) {
        check_case_with(&Case { prims, rays }, BuildQuality::Fast)?;
    }

    /// Deep chains: traversal uses most of its fixed stack.
    #[test]
    fn traversal_matches_brute_force_chain(prims in chain(), rays in rays()) {
        check_case(&Case { prims, rays })?;
    }
}

/// The `Accel` of a chain deep enough to need the median-split fallback: with
/// each centre 16 times farther than the last, every binned split peels off
/// exactly one sphere.
#[test]
fn chain_depth_is_bounded() {
    let x = |i: i32| 16f32.powi(i);
    let prims: Vec<Prim> = (-30..30)
        .map(|i| Prim::Sphere(Vec3::new(x(i), 0.0, 0.0), 0.25 * x(i)))
        .collect();
    let accel = Accel::build(&scene_of(&prims)).expect("valid scene");
    assert!(
        accel.depth() > MEDIAN_SPLIT_DEPTH,
        "the chain should reach the fallback (depth {})",
        accel.depth()
    );
    assert!((accel.depth() as usize) < TRAVERSAL_STACK_SIZE);
    // Between spheres 3 and 4 (ids 33, 34): each way hits its neighbour.
    let o = Vec3::new(2.0 * x(3), 0.0, 0.0);
    assert_eq!(accel.intersect(&Ray::new(o, Vec3::X)).prim, 34);
    assert_eq!(accel.intersect(&Ray::new(o, Vec3::NEG_X)).prim, 33);
    assert!(accel.occluded(&Ray::segment(o, Vec3::X, 0.0, x(4))));
    assert!(!accel.occluded(&Ray::segment(o, Vec3::Y, 0.0, x(4))));
}

proptest! {
    #![proptest_config(config(2000))]

    /// A sphere's box holds the whole sphere: `center +- radius` in exact
    /// arithmetic, not only rounded to nearest.
    #[test]
    fn sphere_bounds_hold_the_sphere(c in vec3(1e4), r in 1e-3f32..100.0) {
        let b = sphere_bounds(c, r);
        for k in 0..3 {
            prop_assert!((b.min[k] as f64) <= c[k] as f64 - r as f64, "axis {k}: {} > {}", b.min[k], c[k] as f64 - r as f64);
            prop_assert!((b.max[k] as f64) >= c[k] as f64 + r as f64, "axis {k}: {} < {}", b.max[k], c[k] as f64 + r as f64);
        }
    }
}

/// Regression: `c.z + r` rounds below the sphere's top; a ray in that rounded
/// face plane (zero z direction) passes inside the sphere and must not be culled.
#[test]
fn sphere_in_box_face_plane() {
    let (c, r) = (Vec3::new(0.0, 0.0, -9141.607), 0.01);
    let top = c.z + r;
    assert!(
        (top as f64) < c.z as f64 + r as f64,
        "the case needs a top that rounds inwards"
    );
    let ray = Ray::new(
        Vec3::new(7.2647033, 0.0, top),
        Vec3::new(-7.2647033, 0.0, 0.0),
    );
    let prims = [Prim::Sphere(c, r)];
    assert_eq!(all_hits(&prims, &ray).len(), 1, "the sphere test hits");
    let accel = Accel::build(&scene_of(&prims)).expect("valid scene");
    assert!(accel.intersect(&ray).is_hit());
    assert!(accel.occluded(&ray));
}

/// Regression: a zero-area triangle is never hit through the `Accel`, even by
/// rays through its vertices or along its line (where the watertight test's edge
/// functions are rounding noise).
#[test]
fn degenerate_triangles_never_hit() {
    let tris = [
        Prim::Tri(Vec3::ZERO, Vec3::X, Vec3::X * 2.0),
        Prim::Tri(
            Vec3::new(0.25, 0.5, 0.75),
            Vec3::new(1.25, 1.5, 1.75),
            Vec3::new(2.25, 2.5, 2.75),
        ),
        Prim::Tri(Vec3::ONE, Vec3::ONE, Vec3::new(3.0, -1.0, 2.0)),
        Prim::Tri(Vec3::splat(-1.0), Vec3::splat(-1.0), Vec3::splat(-1.0)),
    ];
    let accel =
        Accel::build(&scene_of(&tris)).expect("degenerate triangles are accepted by default");
    let mut rng = prism_core::rng::Pcg { state: 7 };
    for i in 0..20_000 {
        let p = tris[i % tris.len()];
        let target = p.point(rng.next_f32(), rng.next_f32() * (i % 2) as f32);
        let o = Vec3::new(rng.next_f32(), rng.next_f32(), rng.next_f32()) * 20.0 - 10.0;
        let ray = Ray::new(o, target - o);
        assert!(
            !accel.intersect(&ray).is_hit(),
            "{ray:?} hit a zero-area triangle"
        );
        assert!(
            !accel.occluded(&ray),
            "{ray:?} occluded by a zero-area triangle"
        );
    }
}

/// Regression: a mesh far from the world origin, and a ray through a shared
/// vertex that is a corner of both candidate leaf boxes: with the one-FMA slab
/// form both boxes were culled and the ray slipped through.
#[test]
fn far_mesh_vertex_ray() {
    let p = [
        Vec3::new(80.5926, -67.420044, -91.82906),
        Vec3::new(81.98218, -67.420044, -92.08318),
        Vec3::new(83.37175, -67.420044, -92.08318),
        Vec3::new(80.5926, -66.03047, -92.08318),
        Vec3::new(81.98218, -66.03047, -91.96),
        Vec3::new(83.37175, -66.03047, -92.08318),
        Vec3::new(80.5926, -64.64089, -92.08318),
        Vec3::new(81.98218, -64.64089, -92.08318),
        Vec3::new(83.37175, -64.64089, -91.86167),
    ];
    let tris = [
        [0, 1, 3],
        [1, 4, 3],
        [1, 2, 4],
        [2, 5, 4],
        [3, 4, 6],
        [4, 7, 6],
        [4, 5, 7],
        [5, 8, 7],
    ];
    let prims: Vec<Prim> = tris
        .iter()
        .map(|t| Prim::Tri(p[t[0]], p[t[1]], p[t[2]]))
        .collect();
    let ray = Ray::new(
        Vec3::new(80.824615, -66.03047, -98.05674),
        Vec3::new(1.1575651, -0.0, 6.096741),
    );
    assert!(!all_hits(&prims, &ray).is_empty(), "the triangles are hit");
    let accel = Accel::build(&scene_of(&prims)).expect("valid scene");
    assert!(
        accel.intersect(&ray).is_hit(),
        "the ray slipped through the Accel"
    );
}

proptest! {
    #![proptest_config(config(48))]

    /// `Accel::build_with_tree` with core's own fast tree gives the `Accel`
    /// that `Accel::build` gives for the fast tree: the same nodes, slots,
    /// depth and hits.
    #[test]
    fn build_with_tree_takes_the_fast_tree(prims in mixed(150, 0.0), rays in rays()) {
        let mut scene = scene_of(&prims);
        scene.build_quality = BuildQuality::Fast;
        let built = Accel::build(&scene).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let boxes: Vec<Aabb> = prims
            .iter()
            .map(|p| match *p {
                Prim::Sphere(c, r) => sphere_bounds(c, r),
                Prim::Tri(a, b, c) => triangle_bounds(a, b, c),
            })
            .collect();
        let tree = prism_core::lbvh::build(&boxes).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let taken = Accel::build_with_tree(&scene, tree.clone())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        // Bytes: an absent child's index is a NaN pattern, which == refuses.
        let bytes = |n: &[BvhNode]| bytemuck::cast_slice::<BvhNode, u8>(n).to_vec();
        prop_assert_eq!(bytes(taken.nodes()), bytes(built.nodes()));
        prop_assert_eq!(taken.primitives(), built.primitives());
        prop_assert_eq!(taken.depth(), built.depth());
        let (center, half) = scene_box(&prims);
        for spec in &rays {
            let ray = spec.ray(&prims, center, half);
            prop_assert_eq!(taken.intersect(&ray), built.intersect(&ray));
        }
        // A tree that drops a slot, or an order that repeats one, is refused.
        if prims.len() >= 2 {
            let mut order = tree.order.clone();
            order[0] = order[1];
            let bad = prism_core::bvh::Bvh { order, ..tree.clone() };
            prop_assert!(Accel::build_with_tree(&scene, bad).is_err());
            let mut short = tree.clone();
            short.order.pop();
            prop_assert!(Accel::build_with_tree(&scene, short).is_err());
        }
    }
}
