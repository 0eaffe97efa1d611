//! The BVH as a threaded tree for the render kernels: core's child boxes in
//! depth-first order, each inner entry holding the index to go on from when
//! its box is missed (Smits 1998). A traversal then needs no stack and tests
//! one box per step; every primitive it reaches is tested as core tests it, so
//! closest hits differ from core's only where two primitives tie.

use prism_core::gpu::{BvhNode, EMPTY_CHILD};

/// One entry: the box `lo.xyz`, `hi.xyz`; `lo.w` is the first primitive of a
/// leaf or, for an inner entry, the index after its subtree; `hi.w` is the
/// primitive count (0 for an inner entry, whose subtree starts right after it).
pub(crate) type ThreadedEntry = [f32; 8];

/// The threaded tree of `nodes` (core's tree, root at 0), larger child box
/// first: the larger box is the likelier to hold the nearer hit.
pub(crate) fn threaded_tree(nodes: &[BvhNode]) -> Vec<ThreadedEntry> {
    let mut out = Vec::with_capacity(2 * nodes.len());
    if !nodes.is_empty() {
        add(nodes, 0, &mut out, 0);
    }
    out
}

fn area(lo: &[f32; 4], hi: &[f32; 4]) -> f32 {
    let d = [hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]];
    d[0] * d[1] + d[1] * d[2] + d[2] * d[0]
}

fn add(nodes: &[BvhNode], n: usize, out: &mut Vec<ThreadedEntry>, depth: usize) {
    let Some(b) = nodes.get(n) else { return };
    let mut children = [
        (b.left_lo, b.left_hi, b.left_index(), b.left_count()),
        (b.right_lo, b.right_hi, b.right_index(), b.right_count()),
    ];
    if area(&children[1].0, &children[1].1) > area(&children[0].0, &children[0].1) {
        children.swap(0, 1);
    }
    for (lo, hi, index, count) in children {
        if index == EMPTY_CHILD {
            continue;
        }
        let me = out.len();
        let mut e = [
            lo[0],
            lo[1],
            lo[2],
            f32::from_bits(index),
            hi[0],
            hi[1],
            hi[2],
            f32::from_bits(count),
        ];
        out.push(e);
        if count == 0 {
            if depth < 256 {
                add(nodes, index as usize, out, depth + 1);
            }
            e[3] = f32::from_bits(out.len() as u32);
            out[me] = e;
        }
    }
}
