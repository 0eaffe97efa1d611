//! [`Backend::update_scene`](prism_core::Backend::update_scene) on the device:
//! core applies the update to the host's scene (new
//! instance records, the top tree rebuilt, refits on the host) and says what
//! changed ([`prism_core::Accel::update`]); the device gets only that: the changed range of instance records,
//! the top tree when it was rebuilt, each refit geometry's slots and nodes.
//! When the records or the top tree outgrow their room in the `nodes` buffer,
//! a larger one is made and the geometries' trees copied into it on the
//! device; after a geometry's rebuild (every tree may have moved) the whole
//! scene goes up again.

use crate::levels::{NODE_BYTES, NodeLayout, device_records, device_top_nodes};
use crate::submit::wait;
use crate::{ModuleConfig, WgpuBackend};
use prism_core::bvh::RayonFork;
use prism_core::gpu::{BvhNode, GpuInstance, Primitive};
use prism_core::{Changes, Error, RefitOn, RenderStats, SceneUpdate, UpdateStats};
use std::time::Instant;

/// The records and top tree an update writes, staged on the host.
struct Staged {
    /// The first record written, and the records from it.
    records: Option<(u64, Vec<GpuInstance>)>,
    /// The top tree as the device holds it.
    top: Option<Vec<BvhNode>>,
}

impl WgpuBackend {
    /// Apply `update` (see the module docs). `applied` is set once the host's
    /// scene has changed: an error after that leaves host and device apart,
    /// and the caller drops the scene.
    pub(crate) fn update_inner(
        &mut self,
        update: &SceneUpdate,
        applied: &mut bool,
    ) -> Result<UpdateStats, Error> {
        let start = Instant::now();
        let state = self.scene.as_mut().ok_or(Error::NoScene)?;
        // Checks everything first: on an error nothing has changed.
        let changes = state
            .accel
            .update_with_fork(update, RefitOn::Host, &RayonFork)?;
        *applied = true;
        // Only the stack's length can change: the primitive kinds stay, and a
        // two-level scene has neither octant copies nor a light grid.
        state.config.stack_entries = ModuleConfig::stack_entries_for(&state.accel);
        if changes.rebuilt {
            // Every geometry's nodes, slots and slot materials may have moved.
            let build = start.elapsed();
            let upload_start = Instant::now();
            let Some(state) = self.scene.take() else {
                return Err(Error::NoScene);
            };
            self.scene = Some(self.upload_scene(state.accel)?);
            return Ok(update_stats(changes, start, build, upload_start));
        }
        let Some(state) = self.scene.as_ref() else {
            return Err(Error::NoScene);
        };
        let Some(layout) = state.layout else {
            return Err(Error::NotTwoLevel);
        };
        let accel = &state.accel;
        // The records and top tree stay where they are, or move to a larger
        // buffer when they outgrew their room.
        let fits = layout.fits(accel);
        let target = if fits {
            layout
        } else {
            let grown = NodeLayout::grown(accel, self.limits.max_storage_buffer_binding_size);
            self.check_binding("BVH nodes and instance records", grown.bytes())?;
            grown
        };
        // The records and the top tree to write, worked out on the host.
        let records = match (&changes.instances, fits) {
            (_, false) => Some((0, device_records(accel, 0..accel.instances().len()))),
            (Some(r), true) => Some((
                r.start as u64,
                device_records(accel, r.start as usize..r.end as usize),
            )),
            (None, true) => None,
        };
        let top = match changes.top_rebuilt || !fits {
            true => Some(device_top_nodes(accel, target.top_root())?),
            false => None,
        };
        let build = start.elapsed();
        let upload_start = Instant::now();
        if !fits {
            self.grow_nodes(target)?;
        }
        self.write_changes(&changes, target, Staged { records, top });
        let index = self.queue.submit([]);
        wait(&self.device, Some(index), "update_scene")?;
        Ok(update_stats(changes, start, build, upload_start))
    }

    /// Write what changed into the scene's buffers, laid out as `layout`.
    fn write_changes(&self, changes: &Changes, layout: NodeLayout, staged: Staged) {
        let Some(state) = self.scene.as_ref() else {
            return;
        };
        let (accel, buffers) = (&state.accel, &state.buffers);
        if let Some((first, records)) = &staged.records {
            let offset = (layout.instance_base() + first) * NODE_BYTES;
            self.queue
                .write_buffer(&buffers.nodes, offset, bytemuck::cast_slice(records));
        }
        if let Some(top) = &staged.top {
            let offset = layout.top_root() * NODE_BYTES;
            self.queue
                .write_buffer(&buffers.nodes, offset, bytemuck::cast_slice(top));
        }
        // Each refit geometry's slots and nodes, as the host refit them.
        for &g in &changes.refit {
            if let Some(slots) = accel.geometry_slots(g) {
                let offset = (slots.start * size_of::<Primitive>()) as u64;
                let prims = &accel.primitives()[slots];
                self.queue
                    .write_buffer(&buffers.prims, offset, bytemuck::cast_slice(prims));
            }
            if let Some(nodes) = accel.geometry_nodes(g) {
                let offset = nodes.start as u64 * NODE_BYTES;
                let nodes = &accel.nodes()[nodes];
                self.queue
                    .write_buffer(&buffers.nodes, offset, bytemuck::cast_slice(nodes));
            }
        }
        let levels = layout.levels(accel);
        self.queue
            .write_buffer(&buffers.levels, 0, bytemuck::bytes_of(&levels));
    }

    /// Move the scene's `nodes` into a buffer laid out as `grown` (its
    /// records and top tree outgrew their room): the geometries' trees are
    /// copied on the device; the caller writes the rest. The copy is
    /// submitted here, so that the queue runs the caller's writes (made at
    /// the next submission) after it.
    fn grow_nodes(&mut self, grown: NodeLayout) -> Result<(), Error> {
        let nodes = crate::buffers::create_buffer(
            &self.device,
            "BVH nodes",
            grown.bytes(),
            wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_DST
                | wgpu::BufferUsages::COPY_SRC,
        )?;
        let Some(mut state) = self.scene.take() else {
            return Err(Error::NoScene);
        };
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("prism scene growth"),
            });
        encoder.copy_buffer_to_buffer(
            &state.buffers.nodes,
            0,
            &nodes,
            0,
            grown.geometry_nodes * NODE_BYTES,
        );
        self.queue.submit([encoder.finish()]);
        state.buffers.nodes = nodes;
        state.buffers.node_bytes = grown.bytes();
        state.layout = Some(grown);
        state.bind_group = self.scene_bind_group(&state.buffers);
        self.scene = Some(state);
        Ok(())
    }

    /// The SAH cost of a geometry's tree ([`prism_core::Accel::geometry_sah`]).
    pub(crate) fn geometry_sah_inner(&self, geometry: u32) -> Option<prism_core::GeometrySah> {
        self.scene.as_ref()?.accel.geometry_sah(geometry)
    }
}

/// The stats of an update begun at `start` whose host work took `build` and
/// whose upload began at `upload_start`.
fn update_stats(
    changes: Changes,
    start: Instant,
    build: std::time::Duration,
    upload_start: Instant,
) -> UpdateStats {
    UpdateStats {
        changes,
        stats: RenderStats {
            build,
            upload: upload_start.elapsed(),
            total: start.elapsed(),
            ..Default::default()
        },
    }
}
