//! The scene on the device: [`SceneState`] (the BVH or its octant copies,
//! primitives, slot materials with the light grid, materials, and their bind
//! group), and its upload beside the current scene, which therefore survives
//! a failed upload.

use crate::buffers::{Reusable, create_buffer};
use crate::pipelines::exact;
use crate::submit::wait;
use crate::{BACKEND_NAME, ModuleConfig, WgpuBackend};
use prism_core::gpu::{BvhNode, check_tree};
use prism_core::point_grid::PointGrid;
use prism_core::{Accel, Error};

/// What `set_scene` uploaded.
pub(crate) struct SceneState {
    pub(crate) accel: Accel,
    /// The module configuration for this scene.
    pub(crate) config: ModuleConfig,
    pub(crate) bind_group: wgpu::BindGroup,
    // Kept alive for the bind group.
    _buffers: [wgpu::Buffer; 4],
}

/// `accel`'s slot materials followed by `grid` as `point_grid.wgsl` reads it
/// (an 8-word header holding `reach_squared`'s bits, then the cells), or
/// `None` without a grid (the slot materials alone).
fn slot_words_with_grid(accel: &Accel, grid: Option<&PointGrid>) -> Option<Vec<u32>> {
    let grid = grid?;
    let slots = accel.slot_materials();
    let mut words = Vec::with_capacity(slots.len() + 8 + 8 * grid.cells.len());
    words.extend_from_slice(slots);
    words.extend_from_slice(&[grid.reach_squared.to_bits(), 0, 0, 0, 0, 0, 0, 0]);
    words.extend_from_slice(bytemuck::cast_slice(&grid.cells));
    Some(words)
}

impl WgpuBackend {
    /// Upload `accel` next to the current scene, which therefore survives a
    /// failed upload; only if the device runs out of memory are the old scene
    /// and the cached work buffers released and the upload tried once more.
    pub(crate) fn upload_scene(&mut self, accel: Accel) -> Result<SceneState, Error> {
        // The module runs without loop-bounding counters (compile_module): its
        // traversals end because every child comes after its parent.
        check_tree(accel.nodes(), accel.primitives().len()).map_err(|defect| Error::Device {
            backend: BACKEND_NAME,
            operation: "checking the BVH before upload",
            message: defect.to_string(),
        })?;
        let mut config = self.config.for_accel(&accel);
        // The tree's near-first octant copies when the module for this scene
        // reads them; the module reads them only when they exist.
        let copies = config
            .octant_copies
            .then(|| prism_core::gpu::near_first_octant_copies(accel.nodes()))
            .flatten();
        config.octant_copies = copies.is_some();
        let nodes: &[BvhNode] = copies.as_deref().unwrap_or(accel.nodes());
        // The light grid, after the slot materials in their buffer, when the
        // module for this scene reads it (see point_grid.wgsl).
        let grid = config
            .light_grid
            .then(|| {
                prism_core::point_grid::build_point_grid(accel.light().position, accel.primitives())
            })
            .flatten();
        config.light_grid = grid.is_some();
        let slot_words = slot_words_with_grid(&accel, grid.as_ref());
        let slot_words: &[u32] = slot_words.as_deref().unwrap_or(accel.slot_materials());
        match self.try_upload_scene(&accel, nodes, slot_words) {
            Err(Error::OutOfMemory { .. })
                if self.scene.is_some() || self.out_buf.buffer.is_some() =>
            {
                self.scene = None;
                self.rays_buf = Reusable::default();
                self.out_buf = Reusable::default();
                self.readback_buf = Default::default();
                self.try_upload_scene(&accel, nodes, slot_words)
            }
            other => other,
        }
        .map(|(bind_group, buffers)| SceneState {
            config,
            accel,
            bind_group,
            _buffers: buffers,
        })
    }

    /// Upload `accel` with its tree as `nodes` (the tree, or its octant copies
    /// for a module that reads them) and its slot materials as `slot_words`
    /// (followed by the light grid for a module that reads one).
    fn try_upload_scene(
        &self,
        accel: &Accel,
        nodes: &[BvhNode],
        slot_words: &[u32],
    ) -> Result<(wgpu::BindGroup, [wgpu::Buffer; 4]), Error> {
        let node_bytes: &[u8] = bytemuck::cast_slice(nodes);
        let binding_limit = self.limits.max_storage_buffer_binding_size;
        let upload = |label: &'static str, bytes: &[u8]| -> Result<wgpu::Buffer, Error> {
            let size = (bytes.len() as u64).next_multiple_of(16);
            if size > binding_limit {
                return Err(Error::DeviceLimit {
                    backend: BACKEND_NAME,
                    what: label,
                    needed: size,
                    limit: binding_limit,
                });
            }
            let buffer = create_buffer(
                &self.device,
                label,
                size,
                wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            )?;
            self.queue.write_buffer(&buffer, 0, bytes);
            Ok(buffer)
        };
        let nodes = upload("BVH nodes", node_bytes)?;
        let prims = upload("primitives", bytemuck::cast_slice(accel.primitives()))?;
        let slot_materials = upload("slot materials", bytemuck::cast_slice(slot_words))?;
        let materials = upload("materials", bytemuck::cast_slice(accel.materials()))?;
        // Bind the exact sizes: the shaders bound-check against arrayLength.
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("prism scene"),
            layout: &self.scene_layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::Buffer(self.params.as_entire_buffer_binding()),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: exact(&nodes, node_bytes.len()),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: exact(&prims, size_of_val(accel.primitives())),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: exact(&slot_materials, size_of_val(slot_words)),
                },
                wgpu::BindGroupEntry {
                    binding: 4,
                    resource: exact(&materials, size_of_val(accel.materials())),
                },
                wgpu::BindGroupEntry {
                    binding: 5,
                    resource: self.srgb8.as_entire_binding(),
                },
            ],
        });
        let index = self.queue.submit([]);
        wait(&self.device, Some(index), "set_scene")?;
        Ok((bind_group, [nodes, prims, slot_materials, materials]))
    }
}
