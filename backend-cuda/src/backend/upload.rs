//! The scene on the device: [`SceneBuffers`] (the BVH, primitives, materials
//! and the derived light grid, cell grid and octant copies, or a two-level
//! scene's instance level, with the [`SceneArgs`] that the kernels take),
//! their upload, and
//! [`Backend::set_scene`](prism_core::Backend::set_scene)'s body, which builds the
//! tree and uploads it beside the current scene so that a failed upload leaves
//! that scene in place.

use super::CudaBackend;
use super::device::{DeviceState, ms_to_duration};
use super::levels::{LevelBuffers, check_levels};
use crate::driver::{BACKEND, DeviceBuffer};
use crate::kernels::{KernelConfig, SceneArgs, SceneKind};
use prism_core::bvh::RayonFork;
use prism_core::camera_bounds;
use prism_core::cell_grid::CellGrid;
use prism_core::gpu::{BvhNode, GpuHeightfield, Primitive, check_heightfields, check_tree};
use prism_core::point_grid;
use prism_core::{Accel, Error, RenderStats, Scene, TimingSource};
use std::time::{Duration, Instant};

/// The scene on the device.
pub(super) struct SceneBuffers {
    nodes: DeviceBuffer,
    prims: DeviceBuffer,
    _slot_materials: DeviceBuffer,
    _materials: DeviceBuffer,
    /// The heightfields' records and heights (`SceneArgs::heightfields`,
    /// `SceneArgs::heights`): one zero element each without a heightfield.
    _heightfields: DeviceBuffer,
    _heights: DeviceBuffer,
    /// The candidate lists around the scene's light (`SceneArgs::light_grid`).
    _light_grid: Option<DeviceBuffer>,
    /// The uniform grid's cell offsets, slot lists and large primitives, one
    /// buffer (`SceneArgs::grid_offsets`).
    _cell_grid: Option<DeviceBuffer>,
    /// The grid's spheres, in list order (`SceneArgs::grid_balls`).
    _grid_balls: Option<DeviceBuffer>,
    /// The grid itself, to tell whether a frame's rays can all walk it.
    pub(super) cell_grid: Option<CellGrid>,
    /// Room for a pinhole frame's camera cones, one a slot, which
    /// `prism_camera_masks` reads (scenes of at most `CAMERA_BOUNDS_MAX_PRIMS`
    /// primitives, with `KernelConfig::camera_cones`).
    pub(super) camera_cones: Option<DeviceBuffer>,
    /// A two-level scene's instance level (`SceneArgs::instances`,
    /// `SceneArgs::top_nodes`) and refit data; `None` for a flat scene.
    pub(super) levels: Option<LevelBuffers>,
    pub(super) args: SceneArgs,
    pub(super) kind: SceneKind,
}

/// Where a scene upload's time went.
struct SceneTimes {
    /// Host time deriving the octant copies, the light grid and the cell grid.
    derive: Duration,
    /// Host to device copies (CUDA events).
    upload: Duration,
}

impl DeviceState {
    /// Upload `accel` as the current scene, replacing the previous one.
    pub(super) fn upload_scene(
        &mut self,
        accel: &Accel,
        config: &KernelConfig,
    ) -> Result<(), Error> {
        let (buffers, _) = self.scene_buffers(accel, config)?;
        self.scene = Some(buffers);
        Ok(())
    }

    /// Upload `accel` into new buffers and return them with the host time
    /// spent deriving the octant copies, light grid and cell grid, and the upload time;
    /// the current scene is left in place (both exist at once for a moment).
    fn scene_buffers(
        &mut self,
        accel: &Accel,
        config: &KernelConfig,
    ) -> Result<(SceneBuffers, SceneTimes), Error> {
        self.ensure_events(2)?;
        // The moves' world boxes on the device (super::top_build) follow the
        // host's again from the next frame of moves.
        if let Some(top) = self.top_build.as_mut() {
            top.world_current = false;
        }
        let t0 = Instant::now();
        // The octant copies, the light grid, the cell grid and the camera
        // cones are each built over one flat tree and its slots in world
        // space; a two-level scene has none of them (see `flat` below).
        let flat = !accel.is_two_level();
        // The render kernels' near-first octant copies of a small tree
        // (KernelConfig::octant_trees). Not for two levels: their nodes are
        // many geometries' trees, entered at each instance's root by object
        // rays whose octant differs from instance to instance.
        let copies = (config.octant_trees && flat)
            .then(|| prism_core::gpu::near_first_octant_copies(accel.nodes()))
            .flatten();
        let octants = copies.is_some();
        let nodes: &[u8] = match &copies {
            Some(c) => bytemuck::cast_slice(c),
            None => bytemuck::cast_slice(accel.nodes()),
        };
        let prims: &[u8] = bytemuck::cast_slice(accel.primitives());
        let slots: &[u8] = bytemuck::cast_slice(accel.slot_materials());
        let mats: &[u8] = bytemuck::cast_slice(accel.materials());
        let mut b_nodes = DeviceBuffer::alloc(nodes.len(), "BVH nodes")?;
        let mut b_prims = DeviceBuffer::alloc(prims.len(), "primitives")?;
        let mut b_slots = DeviceBuffer::alloc(slots.len(), "slot materials")?;
        let mut b_mats = DeviceBuffer::alloc(mats.len(), "materials")?;
        // The heightfields' records and pyramids (heightfield.cuh), or one
        // zero element each: every pointer the kernels take stays valid.
        let zero_hf = [GpuHeightfield::default()];
        let hf_records: &[u8] = match accel.heightfields() {
            [] => bytemuck::cast_slice(&zero_hf),
            h => bytemuck::cast_slice(h),
        };
        let hf_heights: &[u8] = match accel.heightfield_heights() {
            [] => bytemuck::cast_slice(&[0.0f32]),
            h => bytemuck::cast_slice(h),
        };
        let mut b_hf = DeviceBuffer::alloc(hf_records.len(), "heightfield records")?;
        let mut b_heights = DeviceBuffer::alloc(hf_heights.len(), "heightfield heights")?;
        // The candidate lists around the light of a small scene
        // (KernelConfig::light_grid). Not for two levels: a world-space list
        // of object-space slots would need each slot's instances, and a new
        // list whenever an instance moves.
        let light_grid = (config.light_grid && flat)
            .then(|| point_grid::build_point_grid(accel.light().position, accel.primitives()))
            .flatten();
        // The uniform grid, where core's cost model expects it to beat the tree
        // (KernelConfig::cell_grid); the grid kernels walk the octant copies for
        // any-hit rays, so only with them (and so never for two levels, whose
        // slots are in object space: the grid's cells are in the world).
        let cell_grid = (config.cell_grid && octants)
            .then(|| CellGrid::build(accel.primitives()))
            .flatten()
            .filter(|g| g.worthwhile(accel.nodes()));
        // One buffer: the offsets, then the slot lists, then the large slots.
        let grid_words: Option<Vec<u32>> = cell_grid.as_ref().map(|g| {
            let mut w = Vec::with_capacity(g.offsets.len() + g.slots.len() + g.large.len());
            w.extend_from_slice(&g.offsets);
            w.extend_from_slice(&g.slots);
            w.extend_from_slice(&g.large);
            w
        });
        // For scenes of spheres only, the listed spheres' centres and radii in
        // list order (the cell lists, then the large ones): a walk reads a
        // sphere with one load.
        let kind = SceneKind::of(accel.primitives());
        let grid_balls: Option<Vec<[f32; 4]>> = cell_grid
            .as_ref()
            .filter(|_| kind == SceneKind::Spheres)
            .map(|g| {
                g.slots
                    .iter()
                    .chain(&g.large)
                    .map(|&slot| {
                        accel
                            .primitives()
                            .get(slot as usize)
                            .map_or([f32::NAN; 4], |p| [p.a[0], p.a[1], p.a[2], p.b[0]])
                    })
                    .collect()
            });
        let derive = t0.elapsed();
        let mut b_balls = match &grid_balls {
            Some(b) => Some(DeviceBuffer::alloc(
                size_of_val(b.as_slice()),
                "grid balls",
            )?),
            None => None,
        };
        let mut b_grid = match &grid_words {
            Some(w) => Some(DeviceBuffer::alloc(size_of_val(w.as_slice()), "cell grid")?),
            None => None,
        };
        // Room for the camera cones of each frame (KernelConfig::camera_cones).
        // Not for two levels: a cone from the eye around a slot holds for
        // one placement of it, the flat scene's.
        // Nor for a heightfield: its cone would be its record's, not its
        // columns' (the camera candidate tests walk no heightfield).
        let b_cones = if config.camera_cones
            && flat
            && kind != SceneKind::Heightfields
            && accel.primitives().len() <= camera_bounds::CAMERA_BOUNDS_MAX_PRIMS
        {
            // A cone and a bounding sphere a slot (find_camera_masks).
            Some(DeviceBuffer::alloc(
                accel.primitives().len().max(1) * 2 * 16,
                "camera cones",
            )?)
        } else {
            None
        };
        let mut b_light = match &light_grid {
            Some(g) => Some(DeviceBuffer::alloc(
                size_of_val(g.cells.as_slice()),
                "light grid",
            )?),
            None => None,
        };
        self.events[0].record(&self.stream)?;
        b_nodes.upload(&self.stream, nodes)?;
        b_prims.upload(&self.stream, prims)?;
        b_slots.upload(&self.stream, slots)?;
        b_mats.upload(&self.stream, mats)?;
        b_hf.upload(&self.stream, hf_records)?;
        b_heights.upload(&self.stream, hf_heights)?;
        if let (Some(b), Some(g)) = (b_light.as_mut(), &light_grid) {
            b.upload(&self.stream, bytemuck::cast_slice(&g.cells))?;
        }
        if let (Some(b), Some(w)) = (b_grid.as_mut(), &grid_words) {
            b.upload(&self.stream, bytemuck::cast_slice(w))?;
        }
        if let (Some(b), Some(w)) = (b_balls.as_mut(), &grid_balls) {
            b.upload(&self.stream, bytemuck::cast_slice(w))?;
        }
        let levels = match flat {
            true => None,
            false => Some(LevelBuffers::upload(accel, &self.stream)?),
        };
        self.events[1].record(&self.stream)?;
        self.events[1].synchronize()?;
        let ms = self.events[0].elapsed_ms(&self.events[1])?;
        let count = |n: usize, what: &'static str| {
            u32::try_from(n).map_err(|_| Error::DeviceLimit {
                backend: BACKEND,
                what,
                needed: n as u64,
                limit: u32::MAX as u64,
            })
        };
        let mut args = SceneArgs {
            nodes: b_nodes.ptr(),
            prims: b_prims.ptr(),
            slot_materials: b_slots.ptr(),
            materials: b_mats.ptr(),
            node_count: count(accel.nodes().len(), "BVH nodes")?,
            prim_count: count(accel.primitives().len(), "primitives")?,
            material_count: count(accel.materials().len(), "materials")?,
            octants: octants as u32,
            light_grid: b_light.as_ref().map_or(0, |b| b.ptr()),
            light_reach_squared: light_grid.as_ref().map_or(0.0, |g| g.reach_squared),
            heightfields: b_hf.ptr(),
            heights: b_heights.ptr(),
            heightfield_count: count(accel.heightfields().len(), "heightfields")?,
            height_count: count(accel.heightfield_heights().len(), "heightfield heights")?,
            ..SceneArgs::default()
        };
        if let Some(l) = &levels {
            args.instances = l.instances.ptr();
            args.top_nodes = l.top_nodes.ptr();
            args.instance_count = count(accel.instances().len(), "instances")?;
            args.top_node_count = count(accel.top_nodes().len(), "instance tree nodes")?;
        }
        if let (Some(b), Some(g)) = (&b_grid, &cell_grid) {
            // Byte offsets of the three parts of the buffer.
            let slots_at = (g.offsets.len() * 4) as u64;
            let large_at = slots_at + (g.slots.len() * 4) as u64;
            args.grid_large_count = count(g.large.len(), "grid large primitives")?;
            args.grid_offsets = b.ptr();
            args.grid_slots = b.ptr() + slots_at;
            args.grid_large = b.ptr() + large_at;
            args.grid_lo = g.lo.to_array();
            args.grid_cell = g.cell.to_array();
            args.grid_inv_cell = g.inv_cell.to_array();
            args.grid_res = g.res;
            if let Some(b) = &b_balls {
                args.grid_balls = b.ptr();
                args.grid_large_balls = b.ptr() + (g.slots.len() * 16) as u64;
            }
        }
        let buffers = SceneBuffers {
            nodes: b_nodes,
            prims: b_prims,
            _slot_materials: b_slots,
            _materials: b_mats,
            _heightfields: b_hf,
            _heights: b_heights,
            _light_grid: b_light,
            _cell_grid: b_grid,
            _grid_balls: b_balls,
            cell_grid,
            camera_cones: b_cones,
            levels,
            args,
            kind,
        };
        let times = SceneTimes {
            derive,
            upload: ms_to_duration(ms as f64),
        };
        Ok((buffers, times))
    }

    /// [`DeviceState::upload_scene`], returning the copies' device time in
    /// milliseconds.
    pub(super) fn upload_scene_timed(
        &mut self,
        accel: &Accel,
        config: &KernelConfig,
    ) -> Result<f64, Error> {
        let (buffers, times) = self.scene_buffers(accel, config)?;
        self.scene = Some(buffers);
        Ok(times.upload.as_secs_f64() * 1e3)
    }

    /// The scene's node and primitive buffers, downloaded.
    pub(super) fn scene_arrays(&self) -> Result<(Vec<BvhNode>, Vec<Primitive>), Error> {
        let s = self.scene.as_ref().ok_or(Error::NoScene)?;
        let copies = if s.args.octants != 0 { 8 } else { 1 };
        let mut nodes = vec![BvhNode::default(); s.args.node_count as usize * copies];
        let mut prims = vec![Primitive::default(); s.args.prim_count as usize];
        s.nodes
            .download(&self.stream, bytemuck::cast_slice_mut(&mut nodes))?;
        s.prims
            .download(&self.stream, bytemuck::cast_slice_mut(&mut prims))?;
        Ok((nodes, prims))
    }

    pub(super) fn scene_args(&self) -> Result<(SceneArgs, SceneKind), Error> {
        self.scene
            .as_ref()
            .map(|s| (s.args, s.kind))
            .ok_or(Error::NoScene)
    }

    /// [`DeviceState::scene_args`] for a frame whose rays all start within
    /// `origin_bound` of zero on every axis: without the cell grid (so that the
    /// octant kernels run) unless every such ray can walk it
    /// ([`CellGrid::walkable_from`]); the grid kernels do not test each ray.
    pub(super) fn render_scene_args(
        &self,
        origin_bound: f32,
    ) -> Result<(SceneArgs, SceneKind), Error> {
        let s = self.scene.as_ref().ok_or(Error::NoScene)?;
        let mut args = s.args;
        if !s
            .cell_grid
            .as_ref()
            .is_some_and(|g| g.walkable_from(origin_bound))
        {
            args.grid_offsets = 0;
        }
        Ok((args, s.kind))
    }
}

/// With `KernelConfig::tree_checked_on_upload`, whether the kernels may skip
/// core's per-leaf, per-node and per-height-entry range checks
/// (PRISM_TREE_CHECKS 0): every node a traversal reaches is in range, in the
/// scene's trees and, for two levels, in the tree over the instances and at
/// every instance's root; and every heightfield level lies inside the heights.
pub(super) fn check_scene(accel: &Accel, config: &KernelConfig) -> Result<(), Error> {
    if !config.tree_checked_on_upload {
        return Ok(());
    }
    check_tree(accel.nodes(), accel.primitives().len()).map_err(|defect| Error::Device {
        backend: BACKEND,
        operation: "checking the BVH before upload",
        message: defect.to_string(),
    })?;
    check_heightfields(accel.heightfields(), accel.heightfield_heights()).map_err(|defect| {
        Error::Device {
            backend: BACKEND,
            operation: "checking the heightfields before upload",
            message: defect.to_string(),
        }
    })?;
    if accel.is_two_level() {
        check_levels(accel, 0..accel.instances().len())?;
    }
    Ok(())
}

impl CudaBackend {
    pub(super) fn set_scene_inner(&mut self, scene: &Scene) -> Result<RenderStats, Error> {
        let t0 = Instant::now();
        // A flat triangle scene asking for the fast tree builds it on the
        // device (fast_build.rs): `build` is then the device's build time, and
        // the rest (validation, the tree's way back, the host's Accel) counts
        // in `total`. Otherwise the BVH's subtrees are built on rayon's global
        // pool (the same tree as a one-thread build).
        let (accel, build) = match self.device_fast_accel(scene)? {
            Some((accel, ms)) => (accel, ms_to_duration(ms)),
            None => (Accel::build_with(scene, &RayonFork)?, t0.elapsed()),
        };
        check_scene(&accel, &self.options.config)?;
        // Upload next to the current scene, which therefore survives a failed
        // upload; only if the device runs out of memory are the old scene and
        // the cached work buffers released and the upload tried once more.
        let config = self.options.config.clone();
        let (st, _g) = self.enter()?;
        let mut released = false;
        let uploaded = match st.scene_buffers(&accel, &config) {
            Err(Error::OutOfMemory { .. })
                if st.scene.is_some()
                    || st.rays.is_some()
                    || st.outputs.is_some()
                    || st.frame.is_some()
                    || st.pinned.is_some() =>
            {
                st.scene = None;
                st.release_scratch();
                released = true;
                st.scene_buffers(&accel, &config)
            }
            other => other,
        };
        let times = match uploaded {
            Ok((buffers, times)) => {
                st.scene = Some(buffers);
                times
            }
            Err(e) => {
                if released {
                    // The old scene is gone from the device: forget it here too.
                    self.accel = None;
                }
                return Err(e);
            }
        };
        self.accel = Some(accel);
        Ok(RenderStats {
            build: build + times.derive,
            upload: times.upload,
            total: t0.elapsed(),
            timing: TimingSource::DeviceEvents,
            ..Default::default()
        })
    }
}
