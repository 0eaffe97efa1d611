//! Experiment: core's binary BVH collapsed into a 4-wide tree for the path
//! kernel (`KernelConfig::wide4`). Same leaves and primitive slots as core's;
//! each wide node takes its binary node's children and, while it has room,
//! replaces the inner child with the largest box by that child's two children.

use bytemuck::{Pod, Zeroable};
use prism_core::gpu::{BvhNode, EMPTY_CHILD};

/// Four children as structure-of-arrays rows (`lo_x[i]` is child i's lower x),
/// then child references. 128 bytes; the CUDA mirror is `WideNode4` in traverse.cuh.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub(crate) struct WideNode4 {
    lo: [[f32; 4]; 3],
    hi: [[f32; 4]; 3],
    /// Inner child: wide node index. Leaf: first primitive slot.
    child: [u32; 4],
    /// 0 for an inner child or an empty slot, else the leaf's primitive count.
    count: [u32; 4],
}

/// A child of a binary node: (index, count, lo, hi).
type Child = (u32, u32, [f32; 4], [f32; 4]);

fn children(n: &BvhNode) -> impl Iterator<Item = Child> {
    [
        (n.left_index(), n.left_count(), n.left_lo, n.left_hi),
        (n.right_index(), n.right_count(), n.right_lo, n.right_hi),
    ]
    .into_iter()
    .filter(|c| !(c.1 == 0 && c.0 == EMPTY_CHILD))
}

fn area(c: &Child) -> f32 {
    let d = [c.3[0] - c.2[0], c.3[1] - c.2[1], c.3[2] - c.2[2]];
    d[0] * d[1] + d[1] * d[2] + d[2] * d[0]
}

/// The 4-wide tree of `nodes` (root first); empty for an empty tree.
pub(crate) fn collapse(nodes: &[BvhNode]) -> Vec<WideNode4> {
    let mut out: Vec<WideNode4> = Vec::new();
    if nodes.is_empty() {
        return out;
    }
    let empty = WideNode4 {
        lo: [[f32::INFINITY; 4]; 3],
        hi: [[f32::INFINITY; 4]; 3],
        child: [EMPTY_CHILD; 4],
        count: [0; 4],
    };
    // (binary node, wide node it becomes)
    let mut work = vec![(0usize, 0usize)];
    out.push(empty);
    while let Some((b, w)) = work.pop() {
        let mut kids: Vec<Child> = children(&nodes[b]).collect();
        loop {
            if kids.len() >= 4 {
                break;
            }
            let inner = kids
                .iter()
                .enumerate()
                .filter(|(_, c)| c.1 == 0 && (c.0 as usize) < nodes.len())
                .max_by(|a, b| area(a.1).total_cmp(&area(b.1)))
                .map(|(i, _)| i);
            let Some(i) = inner else { break };
            let grand: Vec<Child> = children(&nodes[kids[i].0 as usize]).collect();
            if kids.len() - 1 + grand.len() > 4 {
                break;
            }
            kids.remove(i);
            kids.extend(grand);
        }
        let mut node = empty;
        for (slot, c) in kids.iter().enumerate() {
            for axis in 0..3 {
                node.lo[axis][slot] = c.2[axis];
                node.hi[axis][slot] = c.3[axis];
            }
            if c.1 > 0 {
                node.child[slot] = c.0;
                node.count[slot] = c.1;
            } else {
                let index = out.len();
                out.push(empty);
                node.child[slot] = index as u32;
                work.push((c.0 as usize, index));
            }
        }
        out[w] = node;
    }
    out
}
