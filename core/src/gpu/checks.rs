//! Checks a GPU backend runs on core's arrays before upload: a tree
//! ([`check_tree`]) and the heightfields' pyramids ([`check_heightfields`]).
//! Once they pass, the kernels drop core's per-node, per-leaf and
//! per-height-entry range checks, which cost their walks a few percent.

use super::{BvhNode, EMPTY_CHILD, GpuHeightfield, HEIGHTFIELD_MAX_LEVELS};

/// Why [`check_tree`] refused a tree: the node and child at fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TreeDefect {
    /// The node array is empty: a traversal has no root to start from.
    #[error("the tree has no root node")]
    NoRoot,
    /// A child of `node` breaks the rule `reason` states.
    #[error("node {node}: {side} child (index {index}, count {count}) {reason}")]
    Child {
        /// Index of the node holding the child.
        node: usize,
        /// `"left"` or `"right"`.
        side: &'static str,
        /// The child's index (node or first primitive).
        index: u32,
        /// The child's primitive count (0 for an inner node).
        count: u32,
        /// The rule it breaks.
        reason: &'static str,
    },
}

/// Whether a GPU traversal may walk `nodes` over `prim_count` primitives
/// without core's per-node and per-leaf bounds checks, and is sure to end.
///
/// Requires a root; every leaf inside the primitives; every inner child a node
/// *after* its parent (so a traversal only moves forward and visits finitely
/// many nodes, which lets a WGSL module run without loop-bounding counters);
/// and every absent child ([`EMPTY_CHILD`]) with its box at +inf, which no slab
/// test enters. Every tree [`crate::bvh::Bvh`] builds passes (its nodes are in
/// depth-first order); the GPU backends check before upload, so that their
/// kernels' reads stay in bounds whatever an [`crate::Accel`] holds.
///
/// ```
/// use prism_core::gpu::{BvhNode, TreeDefect, check_tree};
///
/// assert_eq!(check_tree(&[], 0), Err(TreeDefect::NoRoot));
/// ```
pub fn check_tree(nodes: &[BvhNode], prim_count: usize) -> Result<(), TreeDefect> {
    if nodes.is_empty() {
        return Err(TreeDefect::NoRoot);
    }
    for (node, n) in nodes.iter().enumerate() {
        let children = [
            ("left", n.left_index(), n.left_count(), n.left_lo, n.left_hi),
            (
                "right",
                n.right_index(),
                n.right_count(),
                n.right_lo,
                n.right_hi,
            ),
        ];
        for (side, index, count, lo, hi) in children {
            let broken = if count > 0 {
                let end = (index as usize).checked_add(count as usize);
                end.is_none_or(|end| end > prim_count)
                    .then_some("reaches past the last primitive")
            } else if index == EMPTY_CHILD {
                (!lo[..3].iter().chain(&hi[..3]).all(|&c| c == f32::INFINITY))
                    .then_some("is absent but has a finite box")
            } else if index as usize >= nodes.len() {
                Some("is past the last node")
            } else if index as usize <= node {
                Some("does not come after its parent")
            } else {
                None
            };
            if let Some(reason) = broken {
                return Err(TreeDefect::Child {
                    node,
                    side,
                    index,
                    count,
                    reason,
                });
            }
        }
    }
    Ok(())
}

/// Why [`check_heightfields`] refused a heightfield record: its index, the
/// level at fault and the entries that level would need.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "heightfield {heightfield}: level {level} needs entries {start}..{end}, \
     past the {heights} heights (or past u32::MAX)"
)]
pub struct HeightfieldDefect {
    /// Index of the record in [`crate::Accel::heightfields`].
    pub heightfield: usize,
    /// The level whose entries do not fit.
    pub level: u32,
    /// First entry of the level.
    pub start: u64,
    /// One past its last entry.
    pub end: u64,
    /// Entries in the height array.
    pub heights: usize,
}

/// Whether a GPU walk may read every heightfield of `records` from `heights`
/// with 32-bit indices and no bounds check.
///
/// A walk reads, at level `k`, entry `j * cells_x + i` past the level's
/// offset, for `i` and `j` below the level's cells along x and z
/// (`((n - 1) >> k) + 1`). Requires every level of every record that a walk
/// accepts (core's rule: non-zero width, depth and levels, fewer than
/// [`HEIGHTFIELD_MAX_LEVELS`] levels, a positive cell size) to lie inside
/// `heights`, and `heights` to hold fewer than `2^32` entries, so no index
/// sum overflows. Records a walk refuses are never read and pass. Every
/// heightfield core builds passes; the GPU backends check before upload (as
/// [`check_tree`] for trees), so that their walks drop core's per-entry check
/// (on the city's rays 3-5% faster on CUDA and 2% on wgpu, H200, bench/RESULTS.md).
///
/// ```
/// use prism_core::gpu::check_heightfields;
///
/// assert_eq!(check_heightfields(&[], &[]), Ok(()));
/// ```
pub fn check_heightfields(
    records: &[GpuHeightfield],
    heights: &[f32],
) -> Result<(), HeightfieldDefect> {
    let limit = (heights.len() as u64).min(u32::MAX as u64);
    for (index, hf) in records.iter().enumerate() {
        let (w, d, levels) = (hf.dims[0], hf.dims[1], hf.dims[2]);
        let cs = hf.scale[0];
        let walked = w > 0
            && d > 0
            && levels > 0
            && (levels as usize) < HEIGHTFIELD_MAX_LEVELS
            && !cs.is_nan()
            && cs > 0.0;
        if !walked {
            continue;
        }
        for level in 0..levels {
            let cells = |n: u32| (((n - 1) >> level) + 1) as u64;
            let start = hf.level_offset(level) as u64;
            let end = start.saturating_add(cells(w).saturating_mul(cells(d)));
            if end > limit {
                return Err(HeightfieldDefect {
                    heightfield: index,
                    level,
                    start,
                    end,
                    heights: heights.len(),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::octant_copies;
    use crate::{Accel, Material, Scene};
    use glam::Vec3;

    #[test]
    fn check_heightfields_accepts_built_ones_and_names_the_level_outside() {
        let mut scene = Scene::new();
        let m = scene.add_material(Material::lambertian(Vec3::ONE));
        let heights: alloc::vec::Vec<f32> = (0..7 * 5).map(|i| (i % 4) as f32).collect();
        let hf = crate::heightfield::Heightfield::new(7, 5, 1.0, &heights).unwrap(); // ok: test, 7 x 5 finite heights
        scene.add_heightfield(hf, m);
        let accel = Accel::build(&scene).unwrap(); // ok: test, a valid scene
        let (records, heights) = (accel.heightfields(), accel.heightfield_heights());
        assert_eq!(check_heightfields(records, heights), Ok(()));
        // One entry fewer: the last level reaches past the end.
        let short = &heights[..heights.len() - 1];
        let top = records[0].levels() - 1;
        match check_heightfields(records, short) {
            Err(HeightfieldDefect {
                heightfield: 0,
                level,
                end,
                ..
            }) => {
                assert_eq!(level, top);
                assert_eq!(end, heights.len() as u64);
            }
            other => panic!("expected a defect, got {other:?}"),
        }
        // A level moved past the end is named.
        let mut moved = records[0];
        moved.level_offset[0][1] = heights.len() as u32;
        let e = check_heightfields(&[records[0], moved], heights).unwrap_err(); // ok: test, level 1 moved out
        assert_eq!((e.heightfield, e.level), (1, 1));
        assert!(
            alloc::format!("{e}").contains("heightfield 1: level 1"),
            "{e}"
        );
        // A record no walk accepts is never read, so it passes.
        let mut refused = moved;
        refused.dims[2] = 0;
        assert_eq!(check_heightfields(&[refused], heights), Ok(()));
    }

    #[test]
    fn check_tree_accepts_built_trees_and_names_each_defect() {
        let accel = super::super::tests::tree();
        let prims = accel.primitives().len();
        assert_eq!(check_tree(accel.nodes(), prims), Ok(()));
        // The copies keep every child after its parent, inside their copy.
        let copies = octant_copies(accel.nodes()).unwrap(); // ok: test, 39 nodes
        assert_eq!(check_tree(&copies, prims), Ok(()));
        let reason = |nodes: &[BvhNode], prims: usize| match check_tree(nodes, prims) {
            Err(TreeDefect::Child { reason, .. }) => reason,
            other => panic!("expected a child defect, got {other:?}"),
        };
        // One primitive fewer: some leaf now reaches past the end.
        assert_eq!(
            reason(accel.nodes(), prims - 1),
            "reaches past the last primitive"
        );
        let inner = accel
            .nodes()
            .iter()
            .position(|n| n.left_count() == 0)
            .unwrap(); // ok: test, a 40-leaf tree has inner children
        let with_left = |index: u32| {
            let mut nodes = accel.nodes().to_vec();
            nodes[inner].left_lo[3] = f32::from_bits(index);
            nodes
        };
        let len = accel.nodes().len() as u32;
        assert_eq!(reason(&with_left(len), prims), "is past the last node");
        assert_eq!(
            reason(&with_left(inner as u32), prims),
            "does not come after its parent"
        );
        assert_eq!(
            reason(&with_left(0), prims),
            "does not come after its parent"
        );
        assert_eq!(
            check_tree(&with_left(len), prims),
            Err(TreeDefect::Child {
                node: inner,
                side: "left",
                index: len,
                count: 0,
                reason: "is past the last node"
            })
        );
        // An absent child whose box a ray could enter.
        let mut nodes = accel.nodes().to_vec();
        nodes[inner].right_lo = [0.0, 0.0, 0.0, f32::from_bits(EMPTY_CHILD)];
        nodes[inner].right_hi[3] = f32::from_bits(0);
        assert_eq!(reason(&nodes, prims), "is absent but has a finite box");
        // A leaf whose end passes u32::MAX is out of range, not wrapped to 1.
        let mut nodes = accel.nodes().to_vec();
        nodes[0].right_lo[3] = f32::from_bits(u32::MAX);
        nodes[0].right_hi[3] = f32::from_bits(2);
        assert_eq!(
            reason(&nodes, u32::MAX as usize),
            "reaches past the last primitive"
        );
        // The tree over nothing (a root with two absent children) passes; no root fails.
        let empty = crate::bvh::Bvh::build(&[]);
        assert_eq!(check_tree(&empty.nodes, 0), Ok(()));
        assert_eq!(check_tree(&[], 0), Err(TreeDefect::NoRoot));
    }
}
