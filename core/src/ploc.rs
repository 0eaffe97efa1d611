//! The clustered tree: agglomerative clustering over the Morton order (PLOC,
//! Meister and Bittner, "Parallel Locally-Ordered Clustering for Bounding
//! Volume Hierarchy Construction", TVCG 2018), its subtrees then merged into
//! leaves by the SAH, in passes a GPU backend runs on the device.
//!
//! The passes:
//!
//! 1. **Order.** The primitives sorted by Morton code ([`crate::lbvh`]'s
//!    codes and order): each starts as a cluster of its own.
//! 2. **Nearest neighbours.** Each cluster finds, among the
//!    [`SEARCH_RADIUS`] clusters on either side of it, the one whose union
//!    with it has the least surface area; ties go by [`pair_key`], a total
//!    order on pairs.
//! 3. **Merge.** Two clusters that chose each other become one inner node,
//!    at the lower one's place; the other place empties. Inner nodes are
//!    numbered in creation order, within one pass by place, so every child
//!    has a lower number than its parent. The node's SAH cost, primitive
//!    count and kept-node count come from its children's: a node of at most
//!    [`MAX_LEAF_SIZE`](crate::bvh::MAX_LEAF_SIZE) primitives whose leaf costs no more than its split
//!    becomes one leaf (the rule of [`crate::lbvh`]).
//! 4. **Compaction.** The clusters left keep their order. Passes 2-4 repeat
//!    until one cluster is left: the root. The pair of least [`pair_key`]
//!    always chose each other, so every round merges at least once; on real
//!    meshes a round merges about a third of the clusters.
//! 5. **Layout.** Kept inner nodes are numbered depth first, left subtree
//!    first, and the primitives take slots in the same order, so every leaf
//!    (a merged subtree) covers a run of slots: core's layout
//!    ([`crate::gpu::check_tree`]).
//!
//! **Why.** The radix tree of [`crate::lbvh`] splits wherever the Morton
//! codes' bits change, whatever the boxes' sizes. Clustering joins the boxes
//! that are actually close, which is what the SAH rewards: on the shared
//! meshes its SAH cost is 1.10x (bunny) and 1.05x (ogre) the binned SAH
//! tree's, against the radix tree's 1.19x and 1.17x. Per ray, core's counting
//! walk ([`crate::tune::counting`]: node steps plus primitive tests, which
//! predicted the GPU's trace ratios within 3%) puts it at 0.91-0.94x the SAH
//! tree's speed on the shared sets, 0.81-0.82x on the city's columns as
//! triangles and 0.93-0.96x on a crowd of meshes on a ground plane. Measured on an H200 (4M-ray
//! batches of the shared sets): closest hits at 0.89-0.93x the SAH tree's
//! speed, any hits at 0.91-0.96x, built on the device by CUDA in 0.47 ms
//! (bunny) and 0.51 ms (ogre).
//!
//! **The radius.** A small window measured better than the paper's 16 on
//! every scene tried (bench/RESULTS.md, "Cubic Morton cells"): the wider
//! search pairs the smallest unions found anywhere in the window, which on
//! closest-hit rays costs more steps than the SAH cost shows (bunny: 0.80x
//! the SAH tree's speed at radius 16, 0.91x at 3). [`SEARCH_RADIUS`] = 3 was
//! the best of 2 to 24 over bunny, ogre, the city and the crowd together, and
//! it also makes each round's search five times cheaper.
//!
//! **Depth.** Clustering bounds no depth (boxes of growing sizes along a
//! line merge one at a time). A tree with a leaf as deep as
//! [`crate::gpu::TRAVERSAL_STACK_SIZE`] is not used: [`build`] returns the
//! radix tree instead, whose depth is bounded.
//!
//! Every value is exact or rounded in a fixed order (a min, a max, the
//! products and sums of [`Aabb::half_area`]), so a device that keeps products
//! unfused builds this tree bit for bit.

use crate::aabb::Aabb;
use crate::bvh::{Bvh, COST_INTERSECT};
use crate::error::{Error, try_vec};
use crate::gpu::TRAVERSAL_STACK_SIZE;
use crate::lbvh::{Child, LEAF_FLAG, leaf_or_split, morton_order, node_of};
use alloc::vec::Vec;

/// Clusters searched on each side of a cluster for its nearest neighbour
/// (see "The radius" in the module docs).
pub const SEARCH_RADIUS: usize = 3;

/// The order in which cluster `i` ranks a candidate `j` (smaller first), from
/// `area`, the half area of their union's box: by area, then by distance in
/// the cluster list, then pairs whose lower place is even first, then the
/// lower candidate. Read from either end, a pair ranks the same against
/// every other pair of its ends (the last bit only tells apart two
/// candidates on opposite sides, whose lower places differ), so the pair of
/// least key over the whole list is mutual. Even places first make clusters
/// whose distances all tie (identical boxes) pair off all at once, (0, 1),
/// (2, 3), ..., not one pair a round.
#[inline]
pub fn pair_key(area: f32, i: u32, j: u32) -> u64 {
    let distance = i.abs_diff(j) as u64;
    let lower = i.min(j) as u64;
    // A half area is never negative: its bits order as the values do.
    ((area.to_bits() as u64) << 32) | distance << 2 | (lower & 1) << 1 | (j > i) as u64
}

/// Per inner node: what its parent and the layout need.
#[derive(Clone, Copy, Default)]
struct Node {
    children: [u32; 2],
    bounds: Aabb,
    /// The SAH cost of the subtree as built (a leaf's or its split's).
    cost: f32,
    /// Primitives in the subtree.
    count: u32,
    /// Inner nodes kept in the subtree; 0 when it is one leaf.
    kept: u32,
}

/// Build the clustered tree over primitives given by their boxes: the same
/// [`Bvh`] layout and slot convention as [`Bvh::try_build`]. Falls back to
/// [`crate::lbvh::build`] when the clustered tree is too deep for the
/// traversal stack. [`Error::TooManyPrimitives`] past
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
    if n < 2 {
        return crate::lbvh::build(bounds);
    }
    // 1. Order.
    let (order, _) = morton_order(bounds)?;
    // ok (indexing below): `order` is a permutation of `0..n`; cluster ids
    // are slots below `n` (flagged) or nodes below the count made so far.
    let slot_box = |slot: u32| bounds[order[slot as usize] as usize];
    let mut ids = try_vec(n, "clustered BVH: clusters")?;
    ids.extend((0..n as u32).map(|s| s | LEAF_FLAG));
    let mut boxes = try_vec(n, "clustered BVH: cluster boxes")?;
    boxes.extend((0..n as u32).map(slot_box));
    let mut nearest = try_vec(n, "clustered BVH: nearest neighbours")?;
    let mut nodes: Vec<Node> = try_vec(n - 1, "clustered BVH: nodes")?;
    let child = |nodes: &[Node], id: u32, b: Aabb| -> (f32, u32, u32) {
        if id & LEAF_FLAG != 0 {
            (COST_INTERSECT * b.half_area(), 1, 0)
        } else {
            let c = &nodes[id as usize];
            (c.cost, c.count, c.kept)
        }
    };
    while ids.len() > 1 {
        let m = ids.len();
        // 2. Nearest neighbours.
        nearest.clear();
        for i in 0..m {
            let lo = i.saturating_sub(SEARCH_RADIUS);
            let hi = (i + SEARCH_RADIUS).min(m - 1);
            let (mut best, mut best_key) = (i, u64::MAX);
            for j in (lo..=hi).filter(|&j| j != i) {
                let key = pair_key(boxes[i].union(boxes[j]).half_area(), i as u32, j as u32);
                if key < best_key {
                    (best, best_key) = (j, key);
                }
            }
            nearest.push(best as u32);
        }
        // 3-4. Merge and compact, in place: place `w` is written after every
        // place at or below it was read.
        let mut w = 0;
        for i in 0..m {
            let j = nearest[i] as usize;
            let mutual = nearest[j] as usize == i;
            if mutual && j < i {
                continue; // merged into place j
            }
            if mutual {
                let (l, r) = (ids[i], ids[j]);
                let b = boxes[i].union(boxes[j]);
                let (lc, ln, lk) = child(&nodes, l, boxes[i]);
                let (rc, rn, rk) = child(&nodes, r, boxes[j]);
                let count = ln + rn;
                let (cost, kept) = leaf_or_split(b.half_area(), count, (lc, lk), (rc, rk));
                ids[w] = nodes.len() as u32;
                boxes[w] = b;
                nodes.push(Node {
                    children: [l, r],
                    bounds: b,
                    cost,
                    count,
                    kept,
                });
            } else {
                ids[w] = ids[i];
                boxes[w] = boxes[i];
            }
            w += 1;
        }
        ids.truncate(w);
        boxes.truncate(w);
    }
    drop((ids, boxes, nearest));
    match layout(&nodes, &order, &slot_box)? {
        Some(bvh) => Ok(bvh),
        None => crate::lbvh::build(bounds),
    }
}

/// Step 5: the kept nodes in depth-first order and the primitives' slots;
/// `None` when a leaf is as deep as the traversal stack.
fn layout(
    nodes: &[Node],
    order: &[u32],
    slot_box: &dyn Fn(u32) -> Aabb,
) -> Result<Option<Bvh>, Error> {
    let n = order.len();
    let root = nodes.len() - 1;
    let mut new_order = try_vec(n, "BVH primitive order")?;
    new_order.resize(n, 0u32);
    // Each kept node's children as its parent stores them; a merged subtree
    // is one leaf over the slots its primitives take.
    let root_node = &nodes[root];
    let mut out = try_vec(root_node.kept.max(1) as usize, "clustered BVH nodes")?;
    out.resize(
        root_node.kept.max(1) as usize,
        node_of(Child::Absent, Child::Absent),
    );
    // (cluster id, first slot, its index in `out` when kept, its depth,
    // whether it lies inside a leaf: a merged node's subtree, whose nodes
    // only place their primitives, whatever their own `kept`)
    let mut stack: Vec<(u32, u32, u32, u32, bool)> = try_vec(128, "clustered BVH: walk stack")?;
    stack.push((root as u32, 0, 0, 0, false));
    let mut depth = 0;
    let child_box = |id: u32| {
        if id & LEAF_FLAG != 0 {
            slot_box(id & !LEAF_FLAG)
        } else {
            nodes[id as usize].bounds
        }
    };
    let count_of = |id: u32| {
        if id & LEAF_FLAG != 0 {
            1
        } else {
            nodes[id as usize].count
        }
    };
    let kept_of = |id: u32| {
        if id & LEAF_FLAG != 0 {
            0
        } else {
            nodes[id as usize].kept
        }
    };
    if root_node.kept == 0 {
        out[0] = node_of(Child::Leaf(root_node.bounds, 0, n as u32), Child::Absent);
        depth = 1;
    }
    while let Some((id, first, index, node_depth, in_leaf)) = stack.pop() {
        if id & LEAF_FLAG != 0 {
            new_order[first as usize] = order[(id & !LEAF_FLAG) as usize];
            continue;
        }
        let node = &nodes[id as usize];
        let [l, r] = node.children;
        let (left_first, right_first) = (first, first + count_of(l));
        let (left_at, right_at) = (index + 1, index + 1 + kept_of(l));
        let leaf = in_leaf || node.kept == 0;
        stack.push((r, right_first, right_at, node_depth + 1, leaf));
        stack.push((l, left_first, left_at, node_depth + 1, leaf));
        if leaf {
            continue; // only its primitives' slots matter
        }
        let as_child = |c: u32, at: u32, first: u32| {
            if kept_of(c) > 0 {
                Child::Inner(child_box(c), at)
            } else {
                Child::Leaf(child_box(c), first, count_of(c))
            }
        };
        for c in [l, r] {
            if kept_of(c) == 0 {
                depth = depth.max(node_depth + 1);
            }
        }
        if node_depth as usize + 1 >= TRAVERSAL_STACK_SIZE {
            return Ok(None);
        }
        out[index as usize] = node_of(
            as_child(l, left_at, left_first),
            as_child(r, right_at, right_first),
        );
    }
    Ok(Some(Bvh {
        nodes: out,
        order: new_order,
        depth,
    }))
}

#[cfg(test)]
mod tests;
