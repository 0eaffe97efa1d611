//! A two-level scene's own buffers on the device ([`LevelBuffers`]): the
//! instance records and the tree over them, each with room to grow, and what
//! a refit on the device reads (each mesh geometry's triangles and vertices,
//! the tree links of [`super::refit`] and their arrival counters). Uploaded
//! with the scene (`SceneBuffers`, [`super::upload`]); `update_scene`
//! ([`super::update`]) writes into them.

use super::refit::{Link, NO_PARENT, refit_links};
use crate::driver::{BACKEND, DeviceBuffer, Stream};
use prism_core::gpu::{BvhNode, GpuInstance, check_tree};
use prism_core::{Accel, Error};
use std::ops::Range;

/// A mesh geometry, as the device refits it.
pub(super) struct MeshBuffers {
    /// Its index among the scene's geometries.
    pub(super) geometry: u32,
    /// Its slots in the scene's primitives.
    pub(super) slots: Range<u32>,
    /// Its triangles' vertex indices (`[u32; 3]` by primitive id).
    pub(super) triangles: DeviceBuffer,
    pub(super) triangle_count: u32,
    /// Its vertices, packed `xyz` (`update_scene` writes new ones here).
    pub(super) positions: DeviceBuffer,
    pub(super) vertex_count: u32,
    /// Its start nodes: a range of [`LevelBuffers::starts`].
    pub(super) starts: Range<u32>,
}

/// A two-level scene's instance level and refit data on the device.
pub(super) struct LevelBuffers {
    /// Instance records, with room for `bytes() / 64` of them.
    pub(super) instances: DeviceBuffer,
    /// The tree over the instances, with room to grow likewise.
    pub(super) top_nodes: DeviceBuffer,
    /// The scene's mesh geometries (the others cannot take new vertices).
    pub(super) meshes: Vec<MeshBuffers>,
    /// Every node's refit link (`uint2`, [`Link`]); `None` without meshes.
    pub(super) links: Option<DeviceBuffer>,
    /// Every node's arrival counter (`u32`, zero between refits).
    pub(super) arrivals: Option<DeviceBuffer>,
    /// The mesh geometries' start nodes, one range each.
    pub(super) starts: Option<DeviceBuffer>,
}

/// Room for `n` items of `size` bytes, with a half to spare when the array has
/// grown before (`grown`), so that a scene whose instances are added a few
/// at a time is not copied anew every frame.
pub(super) fn room(n: usize, size: usize, grown: bool) -> usize {
    let n = if grown { n + n / 2 } else { n };
    n.max(1) * size
}

/// Whether the device may walk `accel`'s two levels without the kernels'
/// range checks: the top tree's leaves are records, and every record a ray
/// can enter (a mask that is not 0) has its root among the nodes. Only the
/// records in `records` are looked at (all of them after a rebuild).
pub(super) fn check_levels(accel: &Accel, records: Range<usize>) -> Result<(), Error> {
    let bad = |message: String| Error::Device {
        backend: BACKEND,
        operation: "checking the instances before upload",
        message,
    };
    check_tree(accel.top_nodes(), accel.instances().len())
        .map_err(|defect| bad(format!("the tree over the instances: {defect}")))?;
    let nodes = accel.nodes().len();
    for (i, r) in accel
        .instances()
        .get(records.clone())
        .unwrap_or(&[])
        .iter()
        .enumerate()
    {
        if r.mask() != 0 && r.root() as usize >= nodes {
            return Err(bad(format!(
                "instance {}: root node {} past the last of {nodes}",
                records.start + i,
                r.root()
            )));
        }
    }
    Ok(())
}

/// A count as the kernels' `u32`.
pub(super) fn count32(n: usize, what: &'static str) -> Result<u32, Error> {
    u32::try_from(n).map_err(|_| Error::DeviceLimit {
        backend: BACKEND,
        what,
        needed: n as u64,
        limit: u32::MAX as u64,
    })
}

impl LevelBuffers {
    /// Upload `accel`'s instance level and refit data (waiting for each copy).
    pub(super) fn upload(accel: &Accel, stream: &Stream) -> Result<LevelBuffers, Error> {
        let records: &[u8] = bytemuck::cast_slice(accel.instances());
        let top: &[u8] = bytemuck::cast_slice(accel.top_nodes());
        let mut instances = DeviceBuffer::alloc(records.len(), "instance records")?;
        let mut top_nodes = DeviceBuffer::alloc(top.len(), "instance tree")?;
        instances.upload(stream, records)?;
        top_nodes.upload(stream, top)?;
        let mut levels = LevelBuffers {
            instances,
            top_nodes,
            meshes: Vec::new(),
            links: None,
            arrivals: None,
            starts: None,
        };
        levels.upload_meshes(accel, stream)?;
        Ok(levels)
    }

    /// The refit data of every mesh geometry: links of all nodes (those of
    /// other geometries unused), start nodes, triangles and vertices.
    fn upload_meshes(&mut self, accel: &Accel, stream: &Stream) -> Result<(), Error> {
        let mut links: Vec<Link> = Vec::new();
        let mut starts: Vec<u32> = Vec::new();
        for g in 0..accel.geometry_count() as u32 {
            let (Some((triangles, positions)), Some(nodes), Some(slots)) = (
                accel.geometry_mesh(g),
                accel.geometry_nodes(g),
                accel.geometry_slots(g),
            ) else {
                continue;
            };
            if links.is_empty() {
                links.resize(accel.nodes().len(), [NO_PARENT, 0]);
            }
            let first = count32(starts.len(), "refit start nodes")?;
            refit_links(accel.nodes(), nodes, &mut links, &mut starts)?;
            let last = count32(starts.len(), "refit start nodes")?;
            let tri: &[u8] = bytemuck::cast_slice(triangles);
            let pos: &[u8] = bytemuck::cast_slice(positions);
            let mut b_tri = DeviceBuffer::alloc(tri.len(), "mesh triangles")?;
            let mut b_pos = DeviceBuffer::alloc(pos.len(), "mesh vertices")?;
            b_tri.upload(stream, tri)?;
            b_pos.upload(stream, pos)?;
            self.meshes.push(MeshBuffers {
                geometry: g,
                slots: count32(slots.start, "slots")?..count32(slots.end, "slots")?,
                triangles: b_tri,
                triangle_count: count32(triangles.len(), "mesh triangles")?,
                positions: b_pos,
                vertex_count: count32(positions.len(), "mesh vertices")?,
                starts: first..last,
            });
        }
        if self.meshes.is_empty() {
            return Ok(());
        }
        let link_bytes: &[u8] = bytemuck::cast_slice(&links);
        let mut b_links = DeviceBuffer::alloc(link_bytes.len(), "refit links")?;
        b_links.upload(stream, link_bytes)?;
        let mut b_arrivals = DeviceBuffer::alloc(links.len() * 4, "refit arrival counts")?;
        b_arrivals.fill_u32(stream, 0, links.len())?;
        let start_bytes: &[u8] = bytemuck::cast_slice(&starts);
        let mut b_starts = DeviceBuffer::alloc(start_bytes.len(), "refit start nodes")?;
        b_starts.upload(stream, start_bytes)?;
        self.links = Some(b_links);
        self.arrivals = Some(b_arrivals);
        self.starts = Some(b_starts);
        Ok(())
    }
}

/// Bytes of `n` instance records.
pub(super) const fn record_bytes(n: usize) -> usize {
    n * size_of::<GpuInstance>()
}

/// Bytes of `n` tree nodes.
pub(super) const fn node_bytes(n: usize) -> usize {
    n * size_of::<BvhNode>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_spares_a_half_once_grown() {
        assert_eq!(room(10, 64, false), 640);
        assert_eq!(room(10, 64, true), 15 * 64);
        // Never a buffer of nothing.
        assert_eq!(room(0, 64, false), 64);
    }
}
