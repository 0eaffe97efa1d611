//! A two-level scene's parts in the device's `nodes` buffer
//! (`shaders/two_level.wgsl`): every geometry's tree from node 0, then room
//! for the instance records, then room for the tree over the instances
//! ([`NodeLayout`]); what the shaders read of them (`Levels` in entry.wgsl);
//! and the records and top nodes as the device holds them.
//!
//! An instance record (64 bytes) has the size of a node, so the three parts
//! share one binding: bindings of their own would be a ninth and tenth
//! storage buffer, past the count an adapter may stop at. The records and the
//! top tree have room to spare, so that an update that adds instances
//! rewrites only them, not the geometries' trees.

use bytemuck::{Pod, Zeroable};
use prism_core::gpu::{BvhNode, EMPTY_CHILD, GpuInstance};
use prism_core::{Accel, Error};

/// Where the parts of a two-level scene lie in `nodes`, in nodes (64 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NodeLayout {
    /// The geometries' nodes (`Accel::nodes().len()`); the instance records
    /// start here.
    pub(crate) geometry_nodes: u64,
    /// Room for instance records.
    pub(crate) instance_room: u64,
    /// Room for the top tree's nodes, after the records' room.
    pub(crate) top_room: u64,
}

/// `Levels` of entry.wgsl: where the shaders find the records and the top
/// tree (all zero for a flat scene).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub(crate) struct Levels {
    pub(crate) instance_base: u32,
    pub(crate) instance_count: u32,
    pub(crate) top_root: u32,
    pub(crate) top_end: u32,
}

/// Bytes of one node, and of one instance record.
pub(crate) const NODE_BYTES: u64 = size_of::<BvhNode>() as u64;
const _: () = assert!(size_of::<GpuInstance>() as u64 == NODE_BYTES);

impl NodeLayout {
    /// The layout for `accel` with room for `instances` records and a top
    /// tree of `top` nodes (at least what `accel` has of each).
    pub(crate) fn new(accel: &Accel, instances: u64, top: u64) -> NodeLayout {
        NodeLayout {
            geometry_nodes: accel.nodes().len() as u64,
            instance_room: instances.max(accel.instances().len() as u64).max(1),
            top_room: top.max(accel.top_nodes().len() as u64).max(1),
        }
    }

    /// The layout for `accel` with twice the room it needs (an update that
    /// outgrew the old room takes this, so that a scene that keeps growing
    /// moves its parts a logarithmic number of times), or just the room it
    /// needs when twice would not fit in `limit` bytes.
    pub(crate) fn grown(accel: &Accel, limit: u64) -> NodeLayout {
        let (instances, top) = (
            accel.instances().len() as u64,
            accel.top_nodes().len() as u64,
        );
        let twice = NodeLayout::new(accel, 2 * instances, 2 * top);
        if twice.bytes() <= limit {
            twice
        } else {
            NodeLayout::new(accel, instances, top)
        }
    }

    /// The first instance record.
    pub(crate) fn instance_base(&self) -> u64 {
        self.geometry_nodes
    }

    /// The root of the top tree.
    pub(crate) fn top_root(&self) -> u64 {
        self.geometry_nodes + self.instance_room
    }

    /// Bytes of the whole `nodes` buffer.
    pub(crate) fn bytes(&self) -> u64 {
        (self.geometry_nodes + self.instance_room + self.top_room) * NODE_BYTES
    }

    /// Whether `accel`'s records and top tree fit (its geometries' trees
    /// being the ones laid out).
    pub(crate) fn fits(&self, accel: &Accel) -> bool {
        accel.nodes().len() as u64 == self.geometry_nodes
            && accel.instances().len() as u64 <= self.instance_room
            && accel.top_nodes().len() as u64 <= self.top_room
    }

    /// What the shaders read of `accel` laid out so. The layout fits in a
    /// binding, whose size is below 2^32 bytes, so each index fits in a `u32`.
    pub(crate) fn levels(&self, accel: &Accel) -> Levels {
        let top_root = self.top_root() as u32;
        Levels {
            instance_base: self.instance_base() as u32,
            instance_count: accel.instances().len() as u32,
            top_root,
            top_end: top_root + accel.top_nodes().len() as u32,
        }
    }
}

/// `accel`'s instance records `range` as the device holds them: core's, with
/// each live instance's root that of its geometry's tree as it stands. Core
/// gives an instance added or moved in the same update as a rebuild of its
/// geometry the root the geometry had before (prism-cpu's `write_records`
/// meets the same), which the device would walk from a wrong node.
pub(crate) fn device_records(accel: &Accel, range: core::ops::Range<usize>) -> Vec<GpuInstance> {
    let all = accel.instances();
    let end = range.end.min(all.len());
    let start = range.start.min(end);
    (start..end)
        .zip(&all[start..end])
        .map(|(index, core)| {
            let mut record = *core;
            if core.root() != EMPTY_CHILD {
                let root = accel
                    .instance(index as u32)
                    .and_then(|inst| accel.geometry_root(inst.geometry));
                match root {
                    Some(root) => record.info[0] = f32::from_bits(root),
                    // ok: a record with a root is a live instance's; should one
                    // not be, it is hidden rather than walked from a wrong node.
                    None => {
                        record.info[0] = f32::from_bits(EMPTY_CHILD);
                        record.info[1] = f32::from_bits(0);
                    }
                }
            }
            record
        })
        .collect()
}

/// `accel`'s top tree moved to start at node `top_root` of `nodes`: inner
/// child indices moved by `top_root`, leaves (instance indices) and absent
/// children kept. [`Error::Device`] when the tree breaks the rules that let
/// the shaders walk it without bounding their loops
/// ([`prism_core::gpu::check_tree`]).
pub(crate) fn device_top_nodes(accel: &Accel, top_root: u64) -> Result<Vec<BvhNode>, Error> {
    let top = accel.top_nodes();
    prism_core::gpu::check_tree(top, accel.instances().len()).map_err(|defect| {
        crate::errors::device_error(
            "checking the tree over the instances before upload",
            defect.to_string(),
        )
    })?;
    let base = top_root as u32;
    Ok(top
        .iter()
        .map(|n| {
            let mut n = *n;
            for (lo, hi) in [(&mut n.left_lo, n.left_hi), (&mut n.right_lo, n.right_hi)] {
                let index = lo[3].to_bits();
                if hi[3].to_bits() == 0 && index != EMPTY_CHILD {
                    // No overflow: the layout, this tree included, fits in
                    // one binding of fewer than 2^32 bytes (checked first).
                    lo[3] = f32::from_bits(index.wrapping_add(base));
                }
            }
            n
        })
        .collect())
}
