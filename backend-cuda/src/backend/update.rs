//! [`Backend::update_scene`](prism_core::Backend::update_scene)'s body: core
//! applies the update to the host's scene, refits left to the device
//! ([`RefitOn::Device`]), and says what changed ([`Changes`]); only that goes
//! to the device. A frame's pieces (the changed instance records, the top
//! tree, new vertices) are gathered in one pinned staging buffer and copied
//! in stream order, then each mesh with new vertices is refit by two kernels
//! (its slots from the vertices, then its boxes bottom-up, see
//! [`super::refit`]). A rebuilt geometry moves every tree: the whole scene is
//! uploaded again.
//!
//! A frame that only moves instances of a scene whose top tree is built by
//! Morton codes (an engine's usual frame over thousands of instances) skips
//! the host's placement: the moved records, world boxes and the tree over
//! the instances are worked out on the device ([`super::top_build`]), the
//! host keeping the transforms ([`Accel::commit_device_moves`]).

use super::CudaBackend;
use super::device::{DeviceState, ms_to_duration};
use super::levels::{check_levels, count32, node_bytes, record_bytes, room};
use super::top_build::Placed;
use super::upload::check_scene;
use crate::driver::{self, BACKEND, DeviceBuffer, PinnedBuffer};
use crate::kernels::{KernelConfig, REFIT_THREADS};
use prism_core::bvh::RayonFork;
use prism_core::{
    Accel, Changes, Error, GeometrySah, RefitOn, RenderStats, SceneUpdate, TimingSource,
    UpdateStats,
};
use std::ffi::c_void;
use std::time::Instant;

/// Where a piece of an update goes on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// The instance records, from this byte on.
    Records(usize),
    /// The tree over the instances, whole.
    Top,
    /// New vertices of the mesh at this index of `LevelBuffers::meshes`.
    Vertices(usize),
}

/// The pieces of an update's upload: `(target, bytes)`, in the order they
/// are staged and copied.
type Pieces<'a> = Vec<(Target, &'a [u8])>;

/// Offsets of `sizes` laid one after the other, each at a multiple of 16
/// bytes (the copy engines move aligned ranges fastest), and the total.
fn staging_layout(sizes: impl Iterator<Item = usize>) -> (Vec<usize>, usize) {
    let mut offsets = Vec::new();
    let mut end = 0usize;
    for size in sizes {
        offsets.push(end);
        end += size.next_multiple_of(16);
    }
    (offsets, end)
}

impl DeviceState {
    /// Bring the device's two-level scene up to `accel` after an update
    /// (applied with [`RefitOn::Device`]) that changed `changes` and rebuilt
    /// no geometry. Returns the device time of the copies and refits in
    /// milliseconds (CUDA events; the call waits for them).
    fn apply_update(
        &mut self,
        accel: &Accel,
        changes: &Changes,
        config: &KernelConfig,
    ) -> Result<f64, Error> {
        if config.tree_checked_on_upload {
            let records = changes
                .instances
                .as_ref()
                .map_or(0..0, |r| r.start as usize..r.end as usize);
            check_levels(accel, records)?;
        }
        self.ensure_events(2)?;
        // The host moved instances: the world boxes the device keeps for
        // moves it places (super::top_build) are the host's again next time.
        if let Some(top) = self.top_build.as_mut() {
            top.world_current = false;
        }
        let scene = self.scene.as_mut().ok_or(Error::NoScene)?;
        let levels = scene.levels.as_mut().ok_or(Error::NotTwoLevel)?;
        let records = accel.instances();
        let mut pieces: Pieces = Vec::new();
        // Instance records: the changed range, or all of them into a larger
        // buffer when the array outgrew its room.
        if record_bytes(records.len()) > levels.instances.bytes() {
            let bytes = room(records.len(), record_bytes(1), true);
            levels.instances = DeviceBuffer::alloc(bytes, "instance records")?;
            pieces.push((Target::Records(0), bytemuck::cast_slice(records)));
        } else if let Some(r) = &changes.instances {
            let r = (r.start as usize).min(records.len())..(r.end as usize).min(records.len());
            let bytes: &[u8] = bytemuck::cast_slice(&records[r.clone()]);
            pieces.push((Target::Records(record_bytes(r.start)), bytes));
        }
        let top = accel.top_nodes();
        if changes.top_rebuilt {
            if node_bytes(top.len()) > levels.top_nodes.bytes() {
                let bytes = room(top.len(), node_bytes(1), true);
                levels.top_nodes = DeviceBuffer::alloc(bytes, "instance tree")?;
            }
            pieces.push((Target::Top, bytemuck::cast_slice(top)));
        }
        // New vertices of each refit geometry.
        let mut refits = Vec::new();
        for &g in &changes.refit {
            let (Some(k), Some((_, positions))) = (
                levels.meshes.iter().position(|m| m.geometry == g),
                accel.geometry_mesh(g),
            ) else {
                return Err(Error::NotAMesh { geometry: g });
            };
            pieces.push((Target::Vertices(k), bytemuck::cast_slice(positions)));
            refits.push(k);
        }
        // Every piece into the staging buffer, then one copy each.
        let (offsets, total) = staging_layout(pieces.iter().map(|p| p.1.len()));
        if self.staging.as_ref().is_none_or(|b| b.bytes() < total) {
            self.staging = None;
            self.staging = Some(PinnedBuffer::alloc(total, "update staging")?);
        }
        let staging = self.staging.as_mut().ok_or(Error::HostOutOfMemory {
            what: "update staging",
            bytes: total as u64,
        })?;
        for ((_, bytes), &at) in pieces.iter().zip(&offsets) {
            let dst = staging.range_mut(at, bytes.len()).ok_or(Error::Device {
                backend: BACKEND,
                operation: "staging an update",
                message: format!(
                    "{} bytes at {at} do not fit the staging buffer",
                    bytes.len()
                ),
            })?;
            dst.copy_from_slice(bytes);
        }
        self.events[0].record(&self.stream)?;
        for ((target, bytes), &at) in pieces.iter().zip(&offsets) {
            let (dst, dst_offset) = match *target {
                Target::Records(offset) => (&levels.instances, offset),
                Target::Top => (&levels.top_nodes, 0),
                Target::Vertices(k) => (&levels.meshes[k].positions, 0),
            };
            // SAFETY: the staging range [at, at + len) was written above and
            // is not written again before the stream is synchronised below;
            // copy_from_pinned checks both ranges against their buffers; the
            // kernels that read the destinations come after it in stream order.
            unsafe {
                driver::copy_from_pinned(dst, dst_offset, staging, at, bytes.len(), &self.stream)?
            };
        }
        scene.args.instances = levels.instances.ptr();
        scene.args.top_nodes = levels.top_nodes.ptr();
        scene.args.instance_count = count32(records.len(), "instances")?;
        scene.args.top_node_count = count32(top.len(), "instance tree nodes")?;
        let (nodes, prims) = (scene.args.nodes, scene.args.prims);
        for k in refits {
            let mesh = &levels.meshes[k];
            // Each refit geometry's slots from its new vertices, then its
            // boxes bottom-up.
            let mut prims_ptr = prims;
            let mut first = mesh.slots.start;
            let mut count = mesh.slots.end - mesh.slots.start;
            let mut triangles = mesh.triangles.ptr();
            let mut triangle_count = mesh.triangle_count;
            let mut positions = mesh.positions.ptr();
            let mut vertex_count = mesh.vertex_count;
            let mut params: [*mut c_void; 7] = [
                (&mut prims_ptr as *mut u64).cast(),
                (&mut first as *mut u32).cast(),
                (&mut count as *mut u32).cast(),
                (&mut triangles as *mut u64).cast(),
                (&mut triangle_count as *mut u32).cast(),
                (&mut positions as *mut u64).cast(),
                (&mut vertex_count as *mut u32).cast(),
            ];
            if count > 0 {
                // SAFETY: the seven values match prism_refit_slots's
                // parameters (Primitive*, u32, u32, const u32*, u32, const
                // float*, u32); [first, first + count) are the geometry's
                // slots in the scene's primitive buffer, `triangles` holds
                // triangle_count index triples and `positions` vertex_count
                // packed vertices (uploaded with the scene, or just above).
                unsafe {
                    self.kernels.refit_slots.launch(
                        (count.div_ceil(REFIT_THREADS), 1),
                        (REFIT_THREADS, 1),
                        &self.stream,
                        &mut params,
                    )?
                };
            }
            let (Some(links), Some(arrivals), Some(starts)) =
                (&levels.links, &levels.arrivals, &levels.starts)
            else {
                continue;
            };
            let mut nodes_ptr = nodes;
            let mut prims_ptr = prims;
            let mut links_ptr = links.ptr();
            let mut arrivals_ptr = arrivals.ptr();
            let mut starts_ptr = starts.ptr() + 4 * mesh.starts.start as u64;
            let mut start_count = mesh.starts.end - mesh.starts.start;
            let mut params: [*mut c_void; 6] = [
                (&mut nodes_ptr as *mut u64).cast(),
                (&mut prims_ptr as *mut u64).cast(),
                (&mut links_ptr as *mut u64).cast(),
                (&mut arrivals_ptr as *mut u64).cast(),
                (&mut starts_ptr as *mut u64).cast(),
                (&mut start_count as *mut u32).cast(),
            ];
            if start_count > 0 {
                // SAFETY: the six values match prism_refit_boxes's parameters
                // (BvhNode*, const Primitive*, const uint2*, u32*, const u32*,
                // u32); `links` and `arrivals` hold one entry a node of the
                // scene's node buffer, the start nodes are nodes of this
                // geometry's tree, whose links the host worked out from the
                // uploaded nodes (refit_links: a tree, every link in range).
                unsafe {
                    self.kernels.refit_boxes.launch(
                        (start_count.div_ceil(REFIT_THREADS), 1),
                        (REFIT_THREADS, 1),
                        &self.stream,
                        &mut params,
                    )?
                };
            }
        }
        self.events[1].record(&self.stream)?;
        self.events[1].synchronize()?;
        Ok(self.events[0].elapsed_ms(&self.events[1])? as f64)
    }
}

impl CudaBackend {
    pub(super) fn update_scene_inner(
        &mut self,
        update: &SceneUpdate,
    ) -> Result<UpdateStats, Error> {
        let t0 = Instant::now();
        // A context lost to a fault is rebuilt, and a scene the device lost
        // uploaded whole, before the update (CudaBackend::enter).
        drop(self.enter()?);
        let config = self.options.config.clone();
        // Moves placed on the device skip check_levels: their records' roots
        // are the host's (Accel::device_moves), and the tree's leaves name the
        // live instances the host listed, its inner nodes the n - 1 of Karras's
        // radix tree (the kernels build core's tree, tests/gpu_top_build.rs).
        if self.options.top_on_device
            && let Some(stats) = self.update_on_device(update, t0)?
        {
            return Ok(stats);
        }
        let accel = self.accel.as_mut().ok_or(Error::NoScene)?;
        let changes = accel.update_with_fork(update, RefitOn::Device, &RayonFork)?;
        let build = t0.elapsed();
        let st = self.state.as_mut().ok_or(Error::NoScene)?;
        let _g = st.ctx.enter()?;
        let device = if changes.rebuilt {
            // Every tree may have moved: the host's copy made current, and
            // the whole scene uploaded (the refit tables with it).
            accel.try_refresh()?;
            check_scene(accel, &config).and_then(|()| st.upload_scene_timed(accel, &config))
        } else {
            st.apply_update(accel, &changes, &config)
        };
        let ms = match device {
            Ok(ms) => ms,
            Err(e) => {
                // The host's scene holds the update; the device's is dropped
                // and uploaded whole by the next call (CudaBackend::enter).
                st.scene = None;
                return Err(e);
            }
        };
        Ok(UpdateStats {
            changes,
            stats: RenderStats {
                build,
                upload: ms_to_duration(ms),
                total: t0.elapsed(),
                timing: TimingSource::DeviceEvents,
                ..Default::default()
            },
        })
    }

    /// An update that only moves instances of a scene whose top tree is
    /// built by Morton codes, placed on the device ([`super::top_build`]):
    /// `None` when the update is not one (the host applies it).
    fn update_on_device(
        &mut self,
        update: &SceneUpdate,
        t0: Instant,
    ) -> Result<Option<UpdateStats>, Error> {
        let moves = update.move_count();
        let (Some(accel), Some(st)) = (self.accel.as_mut(), self.state.as_mut()) else {
            return Err(Error::NoScene);
        };
        if moves == 0
            || !accel.is_two_level()
            || st.scene.as_ref().is_none_or(|s| s.levels.is_none())
        {
            return Ok(None);
        }
        let _g = st.ctx.enter()?;
        let slots = st.move_slots(moves, accel.instances().len())?;
        if !accel.device_moves_into(update, slots)? {
            return Ok(None);
        }
        let host = t0.elapsed();
        match st.place_moves(accel, moves) {
            Ok(Placed::Done { bounds, device_ms }) => {
                let changes = accel.commit_device_moves(update, bounds);
                Ok(Some(UpdateStats {
                    changes,
                    stats: RenderStats {
                        build: host,
                        upload: ms_to_duration(device_ms),
                        total: t0.elapsed(),
                        timing: TimingSource::DeviceEvents,
                        ..Default::default()
                    },
                }))
            }
            Ok(Placed::Refused(k)) => Err(accel.move_error(update, k).unwrap_or(Error::Device {
                backend: BACKEND,
                operation: "placing moves",
                message: format!("the device refused move {k}, which the host accepts"),
            })),
            Err(e) => {
                // The device's instances may be half moved: dropped, and
                // uploaded whole from the host's scene (which holds none of
                // this update) by the next call.
                st.scene = None;
                Err(e)
            }
        }
    }

    pub(super) fn geometry_sah_inner(&mut self, geometry: u32) -> Option<GeometrySah> {
        // The host's copy of a tree refit on the device lags until refreshed.
        let accel = self.accel.as_mut()?;
        accel.try_refresh().ok()?;
        accel.geometry_sah(geometry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_pieces_start_on_16_byte_boundaries() {
        let (offsets, total) = staging_layout([64, 12, 0, 100, 16].into_iter());
        assert_eq!(offsets, vec![0, 64, 80, 80, 192]);
        assert_eq!(total, 208);
        let (offsets, total) = staging_layout(std::iter::empty());
        assert!(offsets.is_empty());
        assert_eq!(total, 0);
    }
}
