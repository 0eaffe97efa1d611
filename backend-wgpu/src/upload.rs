//! The scene on the device: [`SceneState`] (the BVH or its octant copies, or a
//! two-level scene's trees and instance records; primitives, slot materials
//! with the light grid and the cell grid, materials, where the two levels
//! lie, and their bind group), and its upload beside the current scene,
//! which therefore survives a failed upload.

use crate::buffers::{Reusable, create_buffer};
use crate::levels::{Levels, NodeLayout, device_records, device_top_nodes};
use crate::pipelines::exact;
use crate::submit::wait;
use crate::{BACKEND_NAME, ModuleConfig, WgpuBackend};
use prism_core::cell_grid::CellGrid;
use prism_core::gpu::{BvhNode, check_heightfields, check_tree};
use prism_core::point_grid::PointGrid;
use prism_core::{Accel, Error};

/// What `set_scene` uploaded.
pub(crate) struct SceneState {
    pub(crate) accel: Accel,
    /// The module configuration for this scene.
    pub(crate) config: ModuleConfig,
    pub(crate) bind_group: wgpu::BindGroup,
    pub(crate) buffers: SceneBuffers,
    /// Where a two-level scene's parts lie in `nodes` (`None`: a flat scene).
    pub(crate) layout: Option<NodeLayout>,
    /// The cell grid uploaded with the scene (`config.cell_grid`), kept to
    /// decide for each frame whether its rays can walk it
    /// ([`CellGrid::walkable_from`]).
    pub(crate) cell_grid: Option<CellGrid>,
}

/// The scene's buffers (group 0 of entry.wgsl, bindings 1 to 4 and 6) and the
/// bytes bound of each: the shaders bound-check against `arrayLength`.
pub(crate) struct SceneBuffers {
    pub(crate) nodes: wgpu::Buffer,
    pub(crate) node_bytes: u64,
    pub(crate) prims: wgpu::Buffer,
    pub(crate) prim_bytes: u64,
    pub(crate) slot_materials: wgpu::Buffer,
    pub(crate) slot_bytes: u64,
    pub(crate) materials: wgpu::Buffer,
    pub(crate) material_bytes: u64,
    /// `Levels` (entry.wgsl).
    pub(crate) levels: wgpu::Buffer,
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

/// `accel`'s slot materials followed by its heightfields as
/// `heightfield.wgsl` reads them (a 4-word header: heightfield count, height
/// count, 0, 0; each [`prism_core::gpu::GpuHeightfield`] record's 40 words;
/// every height's bits), or `None` for a scene without a heightfield. The
/// heightfields share this binding because a stage may count on eight storage
/// buffers only, and the scene's bindings and a call's already take eight; a
/// scene holding a heightfield has no light grid, which lies at the same place.
fn slot_words_with_heightfields(accel: &Accel) -> Result<Option<Vec<u32>>, Error> {
    let records = accel.heightfields();
    if records.is_empty() {
        return Ok(None);
    }
    let heights = accel.heightfield_heights();
    let count = |n: usize, what: &'static str| {
        u32::try_from(n).map_err(|_| Error::DeviceLimit {
            backend: BACKEND_NAME,
            what,
            needed: n as u64,
            limit: u32::MAX as u64,
        })
    };
    let slots = accel.slot_materials();
    let record_words: &[u32] = bytemuck::cast_slice(records);
    let total = slots.len() as u64 + 4 + record_words.len() as u64 + heights.len() as u64;
    // The shaders index the buffer with u32 words.
    count(total as usize, "slot material and heightfield words")?;
    let mut words = Vec::new();
    words
        .try_reserve_exact(total as usize)
        .map_err(|_| Error::HostOutOfMemory {
            what: "slot material and heightfield words",
            bytes: total.saturating_mul(4),
        })?;
    words.extend_from_slice(slots);
    words.extend_from_slice(&[
        count(records.len(), "heightfields")?,
        count(heights.len(), "heightfield heights")?,
        0,
        0,
    ]);
    words.extend_from_slice(record_words);
    words.extend(heights.iter().map(|h| h.to_bits()));
    Ok(Some(words))
}

/// `words` (the slot materials, and the light grid after them if there is
/// one) followed by `grid` as `cell_grid.wgsl` reads it: a 16-word header
/// (lo, large count; cell, where the offsets start; inv_cell, where the slot
/// lists start; res, where the large slots start), the cell offsets, the slot
/// lists, the large slots, and a last word holding the header's index. Every
/// index counts words of the whole buffer, which the shaders index with u32.
fn append_cell_grid(words: &mut Vec<u32>, grid: &CellGrid) -> Result<(), Error> {
    let header = words.len() as u64;
    let offsets_at = header + 16;
    let slots_at = offsets_at + grid.offsets.len() as u64;
    let large_at = slots_at + grid.slots.len() as u64;
    let total = large_at + grid.large.len() as u64 + 1;
    let index = |n: u64| {
        u32::try_from(n).map_err(|_| Error::DeviceLimit {
            backend: BACKEND_NAME,
            what: "slot material and cell grid words",
            needed: total,
            limit: u32::MAX as u64,
        })
    };
    index(total)?;
    let large_count = index(grid.large.len() as u64)?;
    words
        .try_reserve_exact((total - header) as usize)
        .map_err(|_| Error::HostOutOfMemory {
            what: "slot material and cell grid words",
            bytes: total.saturating_mul(4),
        })?;
    let bits = |v: prism_core::glam::Vec3| v.to_array().map(f32::to_bits);
    let [lx, ly, lz] = bits(grid.lo);
    let [cx, cy, cz] = bits(grid.cell);
    let [ix, iy, iz] = bits(grid.inv_cell);
    let [rx, ry, rz] = grid.res;
    words.extend_from_slice(&[
        lx,
        ly,
        lz,
        large_count,
        cx,
        cy,
        cz,
        index(offsets_at)?,
        ix,
        iy,
        iz,
        index(slots_at)?,
        rx,
        ry,
        rz,
        index(large_at)?,
    ]);
    words.extend_from_slice(&grid.offsets);
    words.extend_from_slice(&grid.slots);
    words.extend_from_slice(&grid.large);
    words.push(index(header)?);
    Ok(())
}

/// What goes into the `nodes` buffer: its size, and the bytes written at
/// each offset.
struct NodeContents<'a> {
    size: u64,
    parts: [(u64, &'a [u8]); 3],
}

impl WgpuBackend {
    /// [`Error::DeviceLimit`] naming `what` if `bytes` exceed one storage
    /// binding.
    pub(crate) fn check_binding(&self, what: &'static str, bytes: u64) -> Result<(), Error> {
        let limit = self.limits.max_storage_buffer_binding_size;
        if bytes.next_multiple_of(16) > limit {
            return Err(Error::DeviceLimit {
                backend: BACKEND_NAME,
                what,
                needed: bytes.next_multiple_of(16),
                limit,
            });
        }
        Ok(())
    }

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
        // The heightfield walk reads its levels without a range check
        // (heightfield.wgsl, walk_entry).
        check_heightfields(accel.heightfields(), accel.heightfield_heights()).map_err(
            |defect| Error::Device {
                backend: BACKEND_NAME,
                operation: "checking the heightfields before upload",
                message: defect.to_string(),
            },
        )?;
        // For a two-level scene the configuration has neither octant copies
        // nor a light grid: both are built over one flat tree, while its rays
        // walk each geometry's tree in the object space of an instance, where
        // their octant and the light's position change from one to the next.
        let mut config = self.config.for_accel(&accel);
        // A flat scene: the tree's near-first octant copies when the module
        // for this scene reads them (it reads them only when they exist).
        let copies = config
            .octant_copies
            .then(|| prism_core::gpu::near_first_octant_copies(accel.nodes()))
            .flatten();
        config.octant_copies = copies.is_some();
        // The cell grid, where core's cost model expects it to beat the tree,
        // as the CUDA backend decides: only with the octant copies (so never
        // for two levels, whose slots are in object space while the grid's
        // cells are in the world), and never with a heightfield (core builds
        // no grid for one, and its data take the same place).
        // WgpuOptions::cell_grid false: never.
        let cell_grid = (self.cell_grid && config.cell_grid && config.octant_copies)
            .then(|| CellGrid::build(accel.primitives()))
            .flatten()
            .filter(|g| g.worthwhile(accel.nodes()));
        config.cell_grid = cell_grid.is_some();
        // And the light grid, after the slot materials in their buffer, when
        // the module for this scene reads it (see point_grid.wgsl).
        let grid = config
            .light_grid
            .then(|| {
                prism_core::point_grid::build_point_grid(accel.light().position, accel.primitives())
            })
            .flatten();
        config.light_grid = grid.is_some();
        let mut slot_words = match slot_words_with_grid(&accel, grid.as_ref()) {
            Some(words) => Some(words),
            None => slot_words_with_heightfields(&accel)?,
        };
        // Then the cell grid, after the slot materials and the light grid.
        if let Some(g) = &cell_grid {
            let mut words = slot_words
                .take()
                .unwrap_or_else(|| accel.slot_materials().to_vec());
            append_cell_grid(&mut words, g)?;
            slot_words = Some(words);
        }
        let slot_words: &[u32] = slot_words.as_deref().unwrap_or(accel.slot_materials());
        // A two-level scene: its geometries' trees, instance records and top
        // tree, each with room for no more than it has (see levels.rs).
        let layout = accel.is_two_level().then(|| NodeLayout::new(&accel, 0, 0));
        let (records, top) = match &layout {
            Some(layout) => {
                self.check_binding("BVH nodes and instance records", layout.bytes())?;
                let records = device_records(&accel, 0..accel.instances().len());
                (records, device_top_nodes(&accel, layout.top_root())?)
            }
            None => Default::default(),
        };
        let tree: &[BvhNode] = copies.as_deref().unwrap_or(accel.nodes());
        let nodes = match &layout {
            Some(layout) => NodeContents {
                size: layout.bytes(),
                parts: [
                    (0, bytemuck::cast_slice(tree)),
                    (
                        layout.instance_base() * crate::levels::NODE_BYTES,
                        bytemuck::cast_slice(&records),
                    ),
                    (
                        layout.top_root() * crate::levels::NODE_BYTES,
                        bytemuck::cast_slice(&top),
                    ),
                ],
            },
            None => NodeContents {
                size: size_of_val(tree) as u64,
                parts: [(0, bytemuck::cast_slice(tree)), (0, &[]), (0, &[])],
            },
        };
        let levels = layout.map_or(Levels::default(), |l| l.levels(&accel));
        match self.try_upload_scene(&accel, &nodes, slot_words, levels) {
            Err(Error::OutOfMemory { .. })
                if self.scene.is_some() || self.out_buf.buffer.is_some() =>
            {
                self.scene = None;
                self.rays_buf = Reusable::default();
                self.out_buf = Reusable::default();
                self.readback_buf = Default::default();
                self.try_upload_scene(&accel, &nodes, slot_words, levels)
            }
            other => other,
        }
        .map(|(bind_group, buffers)| SceneState {
            config,
            accel,
            bind_group,
            buffers,
            layout,
            cell_grid,
        })
    }

    /// Upload `accel` with its `nodes` buffer as `nodes` says (its tree, its
    /// octant copies, or a two-level scene's parts) and its slot materials as
    /// `slot_words` (followed by the light grid and the cell grid for a module
    /// that reads them).
    fn try_upload_scene(
        &self,
        accel: &Accel,
        nodes: &NodeContents,
        slot_words: &[u32],
        levels: Levels,
    ) -> Result<(wgpu::BindGroup, SceneBuffers), Error> {
        let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let upload = |label: &'static str, bytes: &[u8]| -> Result<wgpu::Buffer, Error> {
            let size = bytes.len() as u64;
            self.check_binding(label, size)?;
            let buffer = create_buffer(&self.device, label, size.next_multiple_of(16), storage)?;
            self.queue.write_buffer(&buffer, 0, bytes);
            Ok(buffer)
        };
        self.check_binding("BVH nodes", nodes.size)?;
        let node_buffer = create_buffer(
            &self.device,
            "BVH nodes",
            nodes.size.next_multiple_of(16),
            // COPY_SRC: an update that outgrows the buffer copies the
            // geometries' trees from it into a larger one.
            storage | wgpu::BufferUsages::COPY_SRC,
        )?;
        for &(offset, bytes) in &nodes.parts {
            if !bytes.is_empty() {
                self.queue.write_buffer(&node_buffer, offset, bytes);
            }
        }
        let prims = upload("primitives", bytemuck::cast_slice(accel.primitives()))?;
        let slot_materials = upload("slot materials", bytemuck::cast_slice(slot_words))?;
        let materials = upload("materials", bytemuck::cast_slice(accel.materials()))?;
        let levels_buffer = create_buffer(
            &self.device,
            "two-level layout",
            size_of::<Levels>() as u64,
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        )?;
        self.queue
            .write_buffer(&levels_buffer, 0, bytemuck::bytes_of(&levels));
        let buffers = SceneBuffers {
            nodes: node_buffer,
            node_bytes: nodes.size,
            prims,
            prim_bytes: size_of_val(accel.primitives()) as u64,
            slot_materials,
            slot_bytes: size_of_val(slot_words) as u64,
            materials,
            material_bytes: size_of_val(accel.materials()) as u64,
            levels: levels_buffer,
        };
        let bind_group = self.scene_bind_group(&buffers);
        let index = self.queue.submit([]);
        wait(&self.device, Some(index), "set_scene")?;
        Ok((bind_group, buffers))
    }

    /// The scene bind group (group 0) of `buffers`, each bound at its exact
    /// size, with the shared render parameters.
    pub(crate) fn scene_bind_group(&self, buffers: &SceneBuffers) -> wgpu::BindGroup {
        self.scene_bind_group_with(buffers, &self.params)
    }

    /// [`Self::scene_bind_group`] with render parameters of the caller's
    /// (those of one recorded frame).
    pub(crate) fn scene_bind_group_with(
        &self,
        buffers: &SceneBuffers,
        params: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        let entry = |binding, buffer, bytes: u64| wgpu::BindGroupEntry {
            binding,
            resource: exact(buffer, bytes as usize),
        };
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("prism scene"),
            layout: &self.scene_layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::Buffer(params.as_entire_buffer_binding()),
                },
                entry(1, &buffers.nodes, buffers.node_bytes),
                entry(2, &buffers.prims, buffers.prim_bytes),
                entry(3, &buffers.slot_materials, buffers.slot_bytes),
                entry(4, &buffers.materials, buffers.material_bytes),
                wgpu::BindGroupEntry {
                    binding: 5,
                    resource: self.srgb8.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 6,
                    resource: buffers.levels.as_entire_binding(),
                },
                // Read only by modules with CAMERA_MASKS, whose frames write
                // it first (render.rs); recorded frames run without.
                wgpu::BindGroupEntry {
                    binding: 7,
                    resource: self.frame_cones.as_entire_binding(),
                },
            ],
        })
    }
}
