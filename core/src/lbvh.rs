//! The fast tree ([`BuildQuality::Fast`]): a linear BVH over Morton codes
//! (Karras 2012), its leaves then merged by the SAH, built in a few parallel
//! passes so that a GPU backend builds the same tree on the device.
//!
//! The passes, each one data-parallel (one thread a primitive or a node on a
//! device):
//!
//! 1. **Codes.** Each primitive's box centre gets a 30-bit Morton code on a
//!    grid of cubic cells, 1024 along the longest side of the centres' bounds
//!    ([`morton_scale`]); a box large beside those bounds also gets a bit above
//!    the code, so that it sorts after the rest ([`sort_key`]).
//! 2. **Sort.** Primitives are sorted by code, equal codes in index order (a
//!    stable radix sort on a device); slot `k` of the tree holds the `k`-th.
//! 3. **Radix tree.** Inner node `i` of the `n - 1` finds its own range and
//!    split from the sorted codes alone (Karras, "Maximizing parallelism in the
//!    construction of BVHs, octrees, and k-d trees", HPG 2012); equal codes are
//!    told apart by their slots, so the keys are distinct and the tree is
//!    unique. Every subtree covers a run of consecutive slots.
//! 4. **Boxes and leaves, bottom up.** A node's box is its children's union;
//!    its SAH cost `C = min(Ci n A, Ct A + C_left + C_right)` (unnormalised
//!    half areas `A`, the costs of [`crate::bvh`]). A node of at most
//!    [`MAX_LEAF_SIZE`] primitives whose leaf costs no more than its split
//!    becomes one leaf over its run of slots, which is why the Morton order's
//!    contiguous subtrees matter: merging needs no reordering.
//! 5. **Layout.** The nodes that remain are numbered in depth-first order,
//!    left subtree first (a node's index is its parent's plus one, plus the
//!    size of its left sibling's subtree for a right child), so the tree keeps
//!    core's layout rules ([`crate::gpu::check_tree`]: every inner child after
//!    its parent).
//!
//! **Why this family and these choices.** The Morton sort and the radix tree
//! are what OptiX-class builders start from: every pass is one launch, with no
//! iteration count known only on the device. Agglomerative clustering (PLOC,
//! H-PLOC) gives trees closer to the SAH's but needs a loop of launches (or a
//! persistent kernel) whose length depends on the data; the SAH leaf merge is
//! the part of its quality gain that costs one pass. Measured against the
//! binned SAH tree (bench/RESULTS.md): SAH cost 1.19x (bunny) and
//! 1.17x (ogre); closest-hit speed 0.88x on an H200 (4M-ray batches of
//! the shared sets); the device build's kernels take
//! 0.19 ms (bunny) and 0.24 ms (ogre) there, against 10-15 ms for the SAH
//! tree on 16 host threads. The clustered tree ([`crate::ploc`],
//! [`BuildQuality::Clustered`]) starts from the same Morton order and buys
//! back most of the quality with a loop of passes.
//!
//! **Depth.** A node's children share a strictly longer key prefix than it does,
//! and keys have at most 31 bits of sort key ([`sort_key`]: the 30-bit code
//! and [`LARGE_BIT`]) plus 32 slot bits of prefix, so the tree is at most 63
//! levels deep, below [`crate::gpu::TRAVERSAL_STACK_SIZE`].
//!
//! Every step is exact or rounded in a fixed order (a min, a max, the products
//! and sums written below), so a device that keeps products unfused builds
//! this tree bit for bit.

use crate::aabb::Aabb;
use crate::bvh::{Bvh, COST_INTERSECT, COST_TRAVERSAL, MAX_LEAF_SIZE};
use crate::error::{Error, try_vec};
use crate::gpu::{BvhNode, EMPTY_CHILD};
use alloc::vec::Vec;
use glam::Vec3;

/// Which tree [`crate::Accel::build`] builds over each geometry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BuildQuality {
    /// The binned SAH tree ([`crate::bvh`]), built on the host: the fastest
    /// tree to walk.
    #[default]
    Sah,
    /// The Morton-code tree of this module: a build of a few parallel passes,
    /// which the GPU backends run on the device; the CPU backend builds this
    /// same tree on the host.
    Fast,
    /// The clustered tree of [`crate::ploc`]: the Morton order's primitives
    /// joined pair by pair with their nearest neighbours, in a loop of
    /// parallel passes. Slower to build than [`BuildQuality::Fast`] (tens of
    /// passes instead of a few), closer to the SAH tree's speed. The CUDA and
    /// wgpu backends build it on the device; the CPU backend builds the same
    /// tree on the host.
    Clustered,
}

/// Grid cells per axis of the Morton codes (10 bits an axis).
pub const MORTON_GRID: u32 = 1024;

/// A child of an inner node of the radix tree: a slot (a primitive, in sorted
/// order) when [`LEAF_FLAG`] is set, else an inner node.
pub const LEAF_FLAG: u32 = 1 << 31;

/// `v` (below 1024) with two zero bits after each of its ten bits.
#[inline]
pub fn spread_bits(v: u32) -> u32 {
    let mut x = v & 0x3ff;
    x = (x | (x << 16)) & 0x0300_00ff;
    x = (x | (x << 8)) & 0x0300_f00f;
    x = (x | (x << 4)) & 0x030c_30c3;
    (x | (x << 2)) & 0x0924_9249
}

/// The scale from a centre's offset in `centre_bounds` to its grid cell, the
/// same on every axis: `1024 (1 - 1e-6) / longest extent`, or 0 when the
/// centres coincide (every centre then in cell 0).
///
/// Cubic cells, not 1024 along each axis: a grid stretched to a flat scene's
/// short axis (a city 512 wide and 125 high) orders the primitives by that
/// axis first at every level, and the curve then runs through distant
/// neighbours. On the shared meshes, the city's columns as triangles and a
/// crowd on a ground plane, cubic cells lower the fast tree's SAH cost by up
/// to 36% and its per-ray work by up to 1.7x (bench/RESULTS.md, "Cubic
/// Morton cells").
#[inline]
pub fn morton_scale(centre_bounds: &Aabb) -> Vec3 {
    let longest = centre_bounds.extent().max_element();
    if longest > 0.0 {
        Vec3::splat(MORTON_GRID as f32 * (1.0 - 1e-6) / longest)
    } else {
        Vec3::ZERO
    }
}

/// The 30-bit Morton code of `centre` on the grid of `lo` and `scale`
/// ([`morton_scale`]): x in the highest of each three bits.
#[inline]
pub fn morton_code(centre: Vec3, lo: Vec3, scale: Vec3) -> u32 {
    let q = ((centre - lo) * scale)
        .to_array()
        .map(|c| (c as u32).min(MORTON_GRID - 1));
    spread_bits(q[0]) << 2 | spread_bits(q[1]) << 1 | spread_bits(q[2])
}

/// Set in the sort key ([`sort_key`]) of a primitive whose box is large
/// beside the bounds of every centre: above every 30-bit Morton code.
pub const LARGE_BIT: u32 = 1 << 30;

/// A box whose half area is more than this share of the centres' bounds'
/// half area is large ([`sort_key`]). A power of two, so that the product
/// is exact on every device.
pub const LARGE_SHARE: f32 = 0.25;

/// The key the fast trees sort a primitive of box `b` by: the Morton code of
/// its centre ([`morton_code`] on the grid of `centre_bounds` and `scale`),
/// with [`LARGE_BIT`] set when the box's half area is more than
/// [`LARGE_SHARE`] of the centres' bounds'.
///
/// Why: a Morton order puts a primitive that spans the scene (a ground plane
/// under meshes, a ground instance under thousands of placed ones) among the
/// small ones whose centres lie beside its own, so every node above it down
/// to its leaf is as large as it is, and rays near it enter them all. Set
/// apart, the large primitives sort after the rest, and the radix tree's
/// root splits them off: a subtree of their own at the root. Meshes without
/// such primitives keep their order. On the built-in `instances` scene
/// (4,096 placed meshes and a ground, whose top tree is built by Morton
/// codes) rays take 1.3x fewer steps and CUDA traces the frame 1.13x faster
/// (bench/RESULTS.md, "Large primitives in the Morton order").
#[inline]
pub fn sort_key(b: &Aabb, centre_bounds: &Aabb, scale: Vec3) -> u32 {
    let code = morton_code(b.center(), centre_bounds.min, scale);
    if b.half_area() > LARGE_SHARE * centre_bounds.half_area() {
        code | LARGE_BIT
    } else {
        code
    }
}

/// Length of the common prefix of the keys at slots `i` and `j` (a key is a
/// code followed by its 32-bit slot), or -1 when `j` is outside `0..n`.
#[inline]
fn prefix(codes: &[u32], i: usize, j: isize) -> i32 {
    if j < 0 || j as usize >= codes.len() {
        return -1;
    }
    let j = j as usize;
    // ok: `i` is an inner node's index, below `codes.len() - 1`; `j` was
    // checked above.
    let (a, b) = (codes[i], codes[j]);
    if a != b {
        (a ^ b).leading_zeros() as i32
    } else {
        32 + ((i as u32) ^ (j as u32)).leading_zeros() as i32
    }
}

/// Inner node `i` of the radix tree over the sorted `codes` (at least two):
/// its children (slots flagged with [`LEAF_FLAG`]) and its range of slots
/// `(first, last)`.
pub fn radix_node(codes: &[u32], i: usize) -> ([u32; 2], (u32, u32)) {
    let ii = i as isize;
    let d: isize = if prefix(codes, i, ii + 1) > prefix(codes, i, ii - 1) {
        1
    } else {
        -1
    };
    let min_prefix = prefix(codes, i, ii - d);
    let mut lmax: isize = 2;
    while prefix(codes, i, ii + lmax * d) > min_prefix {
        lmax *= 2;
    }
    let mut l: isize = 0;
    let mut t = lmax / 2;
    while t >= 1 {
        if prefix(codes, i, ii + (l + t) * d) > min_prefix {
            l += t;
        }
        t /= 2;
    }
    let j = ii + l * d;
    let node_prefix = prefix(codes, i, j);
    let mut s: isize = 0;
    let mut div: isize = 2;
    loop {
        let t = (l + div - 1) / div;
        if prefix(codes, i, ii + (s + t) * d) > node_prefix {
            s += t;
        }
        if t <= 1 {
            break;
        }
        div *= 2;
    }
    let gamma = ii + s * d + d.min(0);
    let (first, last) = (ii.min(j), ii.max(j));
    let left = if first == gamma {
        gamma as u32 | LEAF_FLAG
    } else {
        gamma as u32
    };
    let right = if last == gamma + 1 {
        (gamma + 1) as u32 | LEAF_FLAG
    } else {
        (gamma + 1) as u32
    };
    ([left, right], (first as u32, last as u32))
}

/// Half the surface area of `b`, in the order a device computes it (three
/// products, then two sums left to right): [`Aabb::half_area`].
#[inline]
fn half_area(b: &Aabb) -> f32 {
    b.half_area()
}

/// The slots of the fast trees: `order[slot]` is the input index of the
/// primitive at `slot`, sorted by the Morton code of its box's centre
/// ([`morton_code`] on the grid of the centres' bounds), equal codes by input
/// index (what a stable radix sort on a device gives); `codes[slot]` is its
/// code. For at least one box.
pub(crate) fn morton_order(bounds: &[Aabb]) -> Result<(Vec<u32>, Vec<u32>), Error> {
    let n = bounds.len();
    let centre_bounds = bounds.iter().fold(Aabb::EMPTY, |b, p| b.grow(p.center()));
    let scale = morton_scale(&centre_bounds);
    let mut keyed = try_vec(n, "fast BVH: Morton codes")?;
    keyed.extend(
        bounds
            .iter()
            .enumerate()
            .map(|(i, b)| (sort_key(b, &centre_bounds, scale), i as u32)),
    );
    // By code, then index.
    keyed.sort_unstable();
    let mut order = try_vec(n, "BVH primitive order")?;
    order.extend(keyed.iter().map(|&(_, i)| i));
    let mut codes = try_vec(n, "fast BVH: sorted codes")?;
    codes.extend(keyed.iter().map(|&(c, _)| c));
    Ok((order, codes))
}

/// The SAH's choice for a node of half area `area` over `count` primitives,
/// whose children have SAH costs and kept-node counts `(cost, kept)`: one
/// leaf (kept 0) if it holds at most [`MAX_LEAF_SIZE`] primitives and costs
/// no more than the split, else a kept node. Returns its cost and kept-node
/// count. Shared by the fast and clustered trees, and mirrored on the
/// devices in this order of products and sums.
#[inline]
pub(crate) fn leaf_or_split(
    area: f32,
    count: u32,
    left: (f32, u32),
    right: (f32, u32),
) -> (f32, u32) {
    let leaf_cost = COST_INTERSECT * count as f32 * area;
    let split_cost = COST_TRAVERSAL * area + left.0 + right.0;
    if count as usize <= MAX_LEAF_SIZE && leaf_cost <= split_cost {
        (leaf_cost, 0)
    } else {
        (split_cost, 1 + left.1 + right.1)
    }
}

/// Build the fast tree over primitives given by their boxes: the same
/// [`Bvh`] layout and slot convention as [`Bvh::try_build`] (leaves of at
/// most [`MAX_LEAF_SIZE`] primitives; `order[slot]` is the input index).
/// [`Error::TooManyPrimitives`] past
/// [`MAX_PRIMITIVES`](crate::scene::MAX_PRIMITIVES),
/// [`Error::HostOutOfMemory`] when an array cannot be allocated.
pub fn build(bounds: &[Aabb]) -> Result<Bvh, Error> {
    let n = bounds.len();
    if n > crate::scene::MAX_PRIMITIVES {
        return Err(Error::TooManyPrimitives {
            count: n,
            limit: crate::scene::MAX_PRIMITIVES,
        });
    }
    let mut nodes = try_vec(n.max(1), "fast BVH nodes")?;
    if n == 0 {
        nodes.push(node_of(Child::Absent, Child::Absent));
        return Ok(Bvh {
            nodes,
            order: Vec::new(),
            depth: 0,
        });
    }
    // 1-2. Codes, sorted.
    let (order, codes) = morton_order(bounds)?;
    // ok (indexing below): `order` is a permutation of `0..n`; children and
    // ranges from `radix_node` are slots below `n` or inner nodes below
    // `n - 1`.
    let slot_box = |slot: u32| bounds[order[slot as usize] as usize];
    if n == 1 {
        nodes.push(node_of(Child::Leaf(slot_box(0), 0, 1), Child::Absent));
        return Ok(Bvh {
            nodes,
            order,
            depth: 1,
        });
    }
    // 3. The radix tree.
    let inner = n - 1;
    let mut tree = try_vec(inner, "fast BVH: radix tree")?;
    tree.extend((0..inner).map(|i| radix_node(&codes, i)));
    drop(codes);
    // 4. Boxes, costs and merged leaves, children before parents (a
    // post-order walk; any order with children first gives the same values).
    let mut boxes = try_vec(inner, "fast BVH: node boxes")?;
    boxes.resize(inner, Aabb::EMPTY);
    let mut cost = try_vec(inner, "fast BVH: node costs")?;
    cost.resize(inner, 0.0f32);
    let mut merged = try_vec(inner, "fast BVH: merged nodes")?;
    merged.resize(inner, false);
    // Inner nodes kept in each subtree (0 for a merged node).
    let mut kept = try_vec(inner, "fast BVH: subtree sizes")?;
    kept.resize(inner, 0u32);
    let mut stack: Vec<(u32, bool)> = try_vec(128, "fast BVH: walk stack")?;
    stack.push((0, false));
    while let Some((node, children_done)) = stack.pop() {
        let ([l, r], (first, last)) = tree[node as usize];
        if !children_done {
            stack.push((node, true));
            for c in [r, l] {
                if c & LEAF_FLAG == 0 {
                    stack.push((c, false));
                }
            }
            continue;
        }
        let child = |c: u32| -> (Aabb, f32, u32) {
            if c & LEAF_FLAG != 0 {
                let b = slot_box(c & !LEAF_FLAG);
                (b, COST_INTERSECT * half_area(&b), 0)
            } else {
                let k = c as usize;
                (boxes[k], cost[k], kept[k])
            }
        };
        let ((lb, lc, lk), (rb, rc, rk)) = (child(l), child(r));
        let b = lb.union(rb);
        let k = node as usize;
        boxes[k] = b;
        (cost[k], kept[k]) = leaf_or_split(half_area(&b), last - first + 1, (lc, lk), (rc, rk));
        merged[k] = kept[k] == 0;
    }
    drop(cost);
    // 5. Layout.
    let child_of = |c: u32| -> Child {
        if c & LEAF_FLAG != 0 {
            let slot = c & !LEAF_FLAG;
            return Child::Leaf(slot_box(slot), slot, 1);
        }
        let k = c as usize;
        let (_, (first, last)) = tree[k];
        if merged[k] {
            Child::Leaf(boxes[k], first, last - first + 1)
        } else {
            Child::Inner(boxes[k], c)
        }
    };
    if merged[0] {
        nodes.push(node_of(Child::Leaf(boxes[0], 0, n as u32), Child::Absent));
        return Ok(Bvh {
            nodes,
            order,
            depth: 1,
        });
    }
    nodes.resize(kept[0] as usize, node_of(Child::Absent, Child::Absent));
    let mut depth = 0;
    // (radix node, its index in `nodes`, its depth)
    stack.clear();
    let mut walk: Vec<(u32, u32, u32)> = try_vec(128, "fast BVH: walk stack")?;
    walk.push((0, 0, 0));
    while let Some((node, index, node_depth)) = walk.pop() {
        let ([l, r], _) = tree[node as usize];
        let (left, right) = (child_of(l), child_of(r));
        let left_kept = match left {
            Child::Inner(_, c) => kept[c as usize],
            _ => 0,
        };
        let place = |c: Child, at: u32| match c {
            Child::Inner(b, _) => Child::Inner(b, at),
            other => other,
        };
        let (left_at, right_at) = (index + 1, index + 1 + left_kept);
        for (c, at) in [(right, right_at), (left, left_at)] {
            match c {
                Child::Inner(_, radix) => walk.push((radix, at, node_depth + 1)),
                _ => depth = depth.max(node_depth + 1),
            }
        }
        nodes[index as usize] = node_of(place(left, left_at), place(right, right_at));
    }
    Ok(Bvh {
        nodes,
        order,
        depth,
    })
}

/// One child as its parent stores it.
#[derive(Clone, Copy)]
pub(crate) enum Child {
    /// No child: a box at +inf that no slab test enters.
    Absent,
    /// A leaf: its box, first slot and primitive count.
    Leaf(Aabb, u32, u32),
    /// An inner node: its box and node index.
    Inner(Aabb, u32),
}

/// The node holding `left` and `right` in core's layout.
pub(crate) fn node_of(left: Child, right: Child) -> BvhNode {
    let rows = |c: Child| -> ([f32; 4], [f32; 4]) {
        let (b, index, count) = match c {
            Child::Absent => {
                let inf = f32::INFINITY;
                return (
                    [inf, inf, inf, f32::from_bits(EMPTY_CHILD)],
                    [inf, inf, inf, f32::from_bits(0)],
                );
            }
            Child::Leaf(b, first, count) => (b, first, count),
            Child::Inner(b, node) => (b, node, 0),
        };
        (
            [b.min.x, b.min.y, b.min.z, f32::from_bits(index)],
            [b.max.x, b.max.y, b.max.z, f32::from_bits(count)],
        )
    };
    let (left_lo, left_hi) = rows(left);
    let (right_lo, right_hi) = rows(right);
    BvhNode {
        left_lo,
        left_hi,
        right_lo,
        right_hi,
    }
}

/// The depth of the deepest leaf of the tree `nodes` over `prim_count` slots
/// (root children at depth 1), checking on the way that the tree is one:
/// every node reached once, every slot in exactly one leaf, no leaf as deep
/// as [`crate::gpu::TRAVERSAL_STACK_SIZE`]. For a tree that already passed
/// [`crate::gpu::check_tree`] (indices in range, children after parents).
pub fn leaf_depth(nodes: &[BvhNode], prim_count: usize) -> Result<u32, &'static str> {
    let mut seen: Vec<bool> = Vec::new();
    seen.try_reserve(prim_count)
        .map_err(|_| "the host has not the memory to check the tree")?;
    seen.resize(prim_count, false);
    let mut stack: Vec<(usize, u32)> = Vec::new();
    stack.push((0, 0));
    let (mut visited, mut deepest) = (0usize, 0u32);
    while let Some((node, depth)) = stack.pop() {
        visited += 1;
        let Some(n) = nodes.get(node).filter(|_| visited <= nodes.len()) else {
            return Err("a node is reached twice, or lies past the last");
        };
        for (index, count) in [
            (n.left_index(), n.left_count()),
            (n.right_index(), n.right_count()),
        ] {
            if index == EMPTY_CHILD {
                continue;
            }
            let child_depth = depth + 1;
            if child_depth as usize >= crate::gpu::TRAVERSAL_STACK_SIZE {
                return Err("the tree is deeper than the traversal stack");
            }
            if count == 0 {
                stack.push((index as usize, child_depth));
                continue;
            }
            deepest = deepest.max(child_depth);
            for slot in index..index.saturating_add(count) {
                match seen.get_mut(slot as usize) {
                    Some(s) if !*s => *s = true,
                    _ => return Err("a slot is in two leaves, or past the last"),
                }
            }
        }
    }
    if seen.iter().any(|s| !s) {
        return Err("a slot is in no leaf");
    }
    Ok(deepest)
}

/// The SAH cost of a tree, `Ct` per inner node and `Ci` per primitive tested,
/// each weighted by its box's half area over the root's (the measure
/// [`crate::bvh`] minimises; the expected work of a ray through the root box).
pub fn sah_cost(nodes: &[BvhNode]) -> f32 {
    let Some(root) = nodes.first() else {
        return 0.0;
    };
    let bx = |lo: [f32; 4], hi: [f32; 4]| Aabb {
        min: Vec3::new(lo[0], lo[1], lo[2]),
        max: Vec3::new(hi[0], hi[1], hi[2]),
    };
    let mut root_box = Aabb::EMPTY;
    for (i, c, lo, hi) in [
        (
            root.left_index(),
            root.left_count(),
            root.left_lo,
            root.left_hi,
        ),
        (
            root.right_index(),
            root.right_count(),
            root.right_lo,
            root.right_hi,
        ),
    ] {
        if i != EMPTY_CHILD || c > 0 {
            root_box = root_box.union(bx(lo, hi));
        }
    }
    let root_area = half_area(&root_box);
    if root_area <= 0.0 {
        return 0.0;
    }
    let mut total = COST_TRAVERSAL * root_area;
    for n in nodes {
        for (i, c, lo, hi) in [
            (n.left_index(), n.left_count(), n.left_lo, n.left_hi),
            (n.right_index(), n.right_count(), n.right_lo, n.right_hi),
        ] {
            if i == EMPTY_CHILD {
                continue;
            }
            let a = half_area(&bx(lo, hi));
            total += if c > 0 {
                COST_INTERSECT * c as f32 * a
            } else {
                COST_TRAVERSAL * a
            };
        }
    }
    total / root_area
}

#[cfg(test)]
pub(crate) mod tests;
