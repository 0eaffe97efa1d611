//! [`CudaBackend`]: the [`Backend`] trait on an NVIDIA GPU.

use crate::cache;
use crate::driver::{
    self, BACKEND, Context, CtxGuard, Device, DeviceBuffer, DeviceProps, Event, Function, Module,
    PinnedBuffer, Stream, StreamJoin,
};
use crate::kernels::{
    self, CAMERA_MASKS_THREADS, CompiledKernels, KERNEL_BASES, KERNEL_CAMERA_MASKS,
    KERNEL_INTERSECT, KERNEL_NAMES, KERNEL_OCCLUDED, KERNEL_RENDER_AO, KERNEL_RENDER_AO_GRID,
    KERNEL_RENDER_AO_OCTANTS, KERNEL_RENDER_PATH, KERNEL_RENDER_PATH_GRID,
    KERNEL_RENDER_PATH_OCTANTS, KERNEL_RENDER_WHITTED, KERNEL_RENDER_WHITTED_GRID,
    KERNEL_RENDER_WHITTED_OCTANTS, KernelConfig, LIST_REFLECTIONS, LIST_SHADOWS, MASKS_PER_TILE,
    PARAMS_SYMBOL, PtxasReport, RAY_TALLY_BYTES, SceneArgs, SceneKind, SourcePatch, WORK_WORDS,
    kernel_name,
};
use crate::nvrtc;
use cudarc::driver::sys;
use prism_core::backend::check_batch;
use prism_core::bvh::RayonFork;
use prism_core::camera_bounds;
use prism_core::cell_grid::CellGrid;
use prism_core::gpu::{RenderParams, check_tree, ray_tally_sum};
use prism_core::image::Srgb8Table;
use prism_core::point_grid;
use prism_core::{
    Accel, Backend, BackendInfo, Camera, Error, Hit, Image, Integrator, PixelFormat, Progress, Ray,
    RenderSettings, RenderStats, Scene, TimingSource,
};
use std::ffi::c_void;
use std::time::{Duration, Instant};

/// Largest number of rays one `intersect`/`occluded` launch takes; bigger
/// batches are traced in chunks of this size.
pub const MAX_LAUNCH_RAYS: usize = 1 << 22;

/// Bytes of image one render band downloads at most (bands overlap the copy of
/// one band with the kernel of the next).
const BAND_BYTES: u64 = 32 << 20;
/// Work (rays, estimated) of one render band at most, so long renders report
/// progress and can be cancelled between bands.
const BAND_WORK: u64 = 1 << 31;

/// How to open a [`CudaBackend`].
#[derive(Clone)]
pub struct CudaOptions {
    /// CUDA device ordinal.
    pub device: usize,
    /// Kernel build choices (block shapes, register budgets, variants).
    pub config: KernelConfig,
    /// A transformation of the kernel sources before compilation (tests use it
    /// to break a kernel on purpose); `None` compiles the sources as shipped.
    pub source_patch: Option<SourcePatch>,
    /// Use the on-disk kernel cache.
    pub disk_cache: bool,
    /// Cache directory; `None` means [`crate::cache_dir`] (`$PRISM_CACHE_DIR`,
    /// else `$XDG_CACHE_HOME/prism`, else `~/.cache/prism`).
    pub cache_dir: Option<std::path::PathBuf>,
}

impl Default for CudaOptions {
    fn default() -> Self {
        Self {
            device: 0,
            config: KernelConfig::default(),
            source_patch: None,
            disk_cache: true,
            cache_dir: None,
        }
    }
}

impl std::fmt::Debug for CudaOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaOptions")
            .field("device", &self.device)
            .field("config", &self.config)
            .field("source_patch", &self.source_patch.as_ref().map(|_| "<fn>"))
            .field("disk_cache", &self.disk_cache)
            .field("cache_dir", &self.cache_dir)
            .finish()
    }
}

/// Stage times of the last [`Backend::render`] call, in milliseconds, from CUDA
/// events except `host_copy_ms` and `total_ms` (host clock).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameTimes {
    /// Parameter upload and ray tally reset.
    pub upload_ms: f64,
    /// From the first kernel's start to the last kernel's end.
    pub kernel_ms: f64,
    /// Device-to-pinned-host copies, summed.
    pub download_ms: f64,
    /// From the first kernel's start to the end of the last copy into pinned
    /// memory: the frame is complete in host memory that the device wrote.
    pub render_to_pinned_ms: f64,
    /// Copying pinned memory into the caller's [`Image`] (host threads).
    pub host_copy_ms: f64,
    /// The whole call.
    pub total_ms: f64,
    /// Number of row bands the frame was split into.
    pub bands: u32,
}

/// Throughput of the trace kernels on a batch already on the device.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResidentBench {
    /// Rays in the batch.
    pub rays: usize,
    /// Timed launches of each kernel.
    pub repeats: u32,
    /// Median closest-hit kernel time.
    pub closest_ms: f64,
    /// Fastest and slowest closest-hit kernel times.
    pub closest_range_ms: (f64, f64),
    /// Median any-hit kernel time.
    pub occluded_ms: f64,
    /// Fastest and slowest any-hit kernel times.
    pub occluded_range_ms: (f64, f64),
    /// Closest-hit rays per second, millions (median).
    pub closest_mrays_per_s: f64,
    /// Any-hit rays per second, millions (median).
    pub occluded_mrays_per_s: f64,
    /// Closest hits of the first `min(batch, input)` rays (scene primitive ids),
    /// from the resident run, to check it against [`Backend::intersect`].
    pub hits: Vec<Hit>,
    /// How many rays of the batch the any-hit kernel found occluded.
    pub occluded_count: usize,
}

/// Resources of one compiled kernel on this device.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelResources {
    /// Kernel name.
    pub name: &'static str,
    /// Registers per thread (`CU_FUNC_ATTRIBUTE_NUM_REGS`).
    pub registers: u32,
    /// Local memory per thread, bytes (`CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`: stack arrays and spills).
    pub local_bytes: u32,
    /// Static shared memory per block, bytes.
    pub shared_bytes: u32,
    /// ptxas' report for this kernel (stack frame and spills), when NVRTC's log
    /// holds one. Some NVRTC builds leave ptxas' `-v` report out of the log (seen
    /// with the CUDA 13.0 toolkit's NVRTC on an H100 host), and an unknown spill
    /// count is not zero: `tests/compile.rs` prints the report from the pip NVRTC.
    pub ptxas: Option<PtxasReport>,
    /// Threads per block the backend launches.
    pub block_threads: u32,
    /// Resident blocks per multiprocessor (`cuOccupancyMaxActiveBlocksPerMultiprocessor`).
    pub blocks_per_sm: u32,
    /// Resident threads over the multiprocessor's maximum.
    pub occupancy: f64,
}

/// The kernels of the loaded module, for one scene kind.
#[derive(Clone, Copy)]
struct KindKernels {
    render: [Function; 3],
    /// The render kernels on the tree's near-first octant copies (`SceneArgs::octants`).
    render_octants: [Function; 3],
    /// The render kernels whose closest hits walk the uniform grid (`SceneArgs::grid_offsets`).
    render_grid: [Function; 3],
    intersect: Function,
    occluded: Function,
    /// Grids of the persistent `intersect` and `occluded` kernels: the blocks
    /// each kernel keeps resident on the whole device. Taken per kernel, so
    /// that the registers of one scene kind's kernels do not thin out the
    /// warps of another's.
    intersect_grid: u32,
    occluded_grid: u32,
}

/// The kernels of the loaded module.
struct Kernels {
    /// By [`SceneKind`] index.
    kinds: [KindKernels; 3],
    /// `prism_camera_masks`: each tile's camera candidates, before a frame.
    camera_masks: Function,
    params_ptr: sys::CUdeviceptr,
}

/// The scene on the device.
struct SceneBuffers {
    _nodes: DeviceBuffer,
    _prims: DeviceBuffer,
    _slot_materials: DeviceBuffer,
    _materials: DeviceBuffer,
    /// The candidate lists around the scene's light (`SceneArgs::light_grid`).
    _light_grid: Option<DeviceBuffer>,
    /// The uniform grid's cell offsets, slot lists and large primitives, one
    /// buffer (`SceneArgs::grid_offsets`).
    _cell_grid: Option<DeviceBuffer>,
    /// The grid's spheres, in list order (`SceneArgs::grid_balls`).
    _grid_balls: Option<DeviceBuffer>,
    /// The grid itself, to tell whether a frame's rays can all walk it.
    cell_grid: Option<CellGrid>,
    /// Room for a pinhole frame's camera cones, one a slot, which
    /// `prism_camera_masks` reads (scenes of at most `CAMERA_BOUNDS_MAX_PRIMS`
    /// primitives, with `KernelConfig::camera_cones`).
    camera_cones: Option<DeviceBuffer>,
    args: SceneArgs,
    kind: SceneKind,
}

/// Where a scene upload's time went.
struct SceneTimes {
    /// Host time deriving the octant copies, the light grid and the cell grid.
    derive: Duration,
    /// Host to device copies (CUDA events).
    upload: Duration,
}

/// Everything that lives in this backend's CUDA context. Fields drop in order,
/// the context last; `Drop` makes the context current first.
struct DeviceState {
    scene: Option<SceneBuffers>,
    rays: Option<DeviceBuffer>,
    outputs: Option<DeviceBuffer>,
    frame: Option<DeviceBuffer>,
    pinned: Option<PinnedBuffer>,
    /// A pinhole frame's camera candidates, a mask per tile
    /// (`SceneArgs::camera_masks`); grow-only.
    camera_masks: Option<DeviceBuffer>,
    /// The persistent trace and path kernels' work counters (`WORK_WORDS` `u32`),
    /// zeroed on the stream before each launch that takes from them.
    work: DeviceBuffer,
    /// The render kernels' ray tally: `RAY_TALLY_SLOTS` spread `u64` counters,
    /// zeroed before a frame and summed after it (`gpu::ray_tally_sum`).
    ray_tally: DeviceBuffer,
    /// prism_core's `Srgb8Table`, which the render kernels encode 8-bit pixels
    /// through (core's bytes exactly); uploaded once per context.
    srgb8: DeviceBuffer,
    /// Where the ray tally is read back to.
    ray_tally_host: PinnedBuffer,
    events: Vec<Event>,
    copy_stream: Stream,
    /// Where every other band of an overlapped frame runs
    /// ([`KernelConfig::overlap_bands`]).
    band_stream: Stream,
    stream: Stream,
    kernels: Kernels,
    _module: Module,
    ctx: Context,
}

// SAFETY: the driver handles in DeviceState may be used from any thread once
// their context is current, and every use goes through `Context::enter` on the
// calling thread; the pinned pointer is memory this value owns. `&mut self` on
// every entry point of CudaBackend rules out concurrent use (no Sync).
unsafe impl Send for DeviceState {}

impl Drop for DeviceState {
    fn drop(&mut self) {
        // The fields' drops free their handles with this context current; the
        // context's own drop then destroys it, which also pops it.
        self.ctx.push_for_teardown();
    }
}

impl DeviceState {
    fn create(
        device: Device,
        kernels: &CompiledKernels,
        config: &KernelConfig,
        props: &DeviceProps,
    ) -> Result<Self, Error> {
        let ctx = Context::create(device)?;
        let _g = ctx.enter()?;
        let module = Module::load(&kernels.cubin)?;
        // Resident blocks of a persistent trace kernel on the whole device.
        let resident_grid = |f: Function| -> Result<u32, Error> {
            Ok((f.blocks_per_sm(config.trace_threads)?.max(1) * props.sms).max(1))
        };
        let load = |kind: SceneKind| -> Result<KindKernels, Error> {
            let f = |base: &'static str| {
                let name = kernel_name(base, kind).ok_or(Error::Device {
                    backend: BACKEND,
                    operation: "cuModuleGetFunction",
                    message: format!("no kernel named {base} for {kind:?} scenes"),
                })?;
                module.function(name)
            };
            let (intersect, occluded) = (f(KERNEL_INTERSECT)?, f(KERNEL_OCCLUDED)?);
            Ok(KindKernels {
                render: [
                    f(KERNEL_RENDER_PATH)?,
                    f(KERNEL_RENDER_WHITTED)?,
                    f(KERNEL_RENDER_AO)?,
                ],
                render_octants: [
                    f(KERNEL_RENDER_PATH_OCTANTS)?,
                    f(KERNEL_RENDER_WHITTED_OCTANTS)?,
                    f(KERNEL_RENDER_AO_OCTANTS)?,
                ],
                render_grid: [
                    f(KERNEL_RENDER_PATH_GRID)?,
                    f(KERNEL_RENDER_WHITTED_GRID)?,
                    f(KERNEL_RENDER_AO_GRID)?,
                ],
                intersect,
                occluded,
                intersect_grid: resident_grid(intersect)?,
                occluded_grid: resident_grid(occluded)?,
            })
        };
        let kinds = [
            load(SceneKind::Spheres)?,
            load(SceneKind::Triangles)?,
            load(SceneKind::Mixed)?,
        ];
        let camera_masks = module.function(KERNEL_CAMERA_MASKS)?;
        let (params_ptr, params_bytes) = module.global(PARAMS_SYMBOL)?;
        if params_bytes != std::mem::size_of::<RenderParams>() {
            return Err(Error::Device {
                backend: BACKEND,
                operation: "cuModuleGetGlobal",
                message: format!(
                    "{PARAMS_SYMBOL} has {params_bytes} bytes, RenderParams {}",
                    std::mem::size_of::<RenderParams>()
                ),
            });
        }
        let work = DeviceBuffer::alloc(WORK_WORDS * 4, "work counters")?;
        let ray_tally = DeviceBuffer::alloc(RAY_TALLY_BYTES, "ray tally")?;
        let ray_tally_host = PinnedBuffer::alloc(RAY_TALLY_BYTES, "ray tally readback")?;
        let stream = Stream::create()?;
        let copy_stream = Stream::create()?;
        let band_stream = Stream::create()?;
        let table = Srgb8Table::new();
        let table_bytes: &[u8] = bytemuck::cast_slice(table.slots());
        let mut srgb8 = DeviceBuffer::alloc(table_bytes.len(), "sRGB encoding table")?;
        // `upload` waits for the copy, so `table` may be dropped at the end.
        srgb8.upload(&stream, table_bytes)?;
        Ok(DeviceState {
            scene: None,
            rays: None,
            outputs: None,
            frame: None,
            pinned: None,
            camera_masks: None,
            work,
            ray_tally,
            ray_tally_host,
            srgb8,
            events: Vec::new(),
            copy_stream,
            band_stream,
            stream,
            kernels: Kernels {
                kinds,
                camera_masks,
                params_ptr,
            },
            _module: module,
            ctx,
        })
    }

    fn ensure_events(&mut self, n: usize) -> Result<(), Error> {
        while self.events.len() < n {
            self.events.push(Event::create()?);
        }
        Ok(())
    }

    /// Upload `accel` as the current scene, replacing the previous one.
    fn upload_scene(&mut self, accel: &Accel, config: &KernelConfig) -> Result<(), Error> {
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
        let t0 = Instant::now();
        // The render kernels' near-first octant copies of a small tree
        // (KernelConfig::octant_trees).
        let copies = config
            .octant_trees
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
        // The candidate lists around the light of a small scene
        // (KernelConfig::light_grid).
        let light_grid = config
            .light_grid
            .then(|| point_grid::build_point_grid(accel.light().position, accel.primitives()))
            .flatten();
        // The uniform grid, where core's cost model expects it to beat the tree
        // (KernelConfig::cell_grid); the grid kernels walk the octant copies for
        // any-hit rays, so only with them.
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
        let b_cones = if config.camera_cones
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
        if let (Some(b), Some(g)) = (b_light.as_mut(), &light_grid) {
            b.upload(&self.stream, bytemuck::cast_slice(&g.cells))?;
        }
        if let (Some(b), Some(w)) = (b_grid.as_mut(), &grid_words) {
            b.upload(&self.stream, bytemuck::cast_slice(w))?;
        }
        if let (Some(b), Some(w)) = (b_balls.as_mut(), &grid_balls) {
            b.upload(&self.stream, bytemuck::cast_slice(w))?;
        }
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
            ..SceneArgs::default()
        };
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
            _nodes: b_nodes,
            _prims: b_prims,
            _slot_materials: b_slots,
            _materials: b_mats,
            _light_grid: b_light,
            _cell_grid: b_grid,
            _grid_balls: b_balls,
            cell_grid,
            camera_cones: b_cones,
            args,
            kind,
        };
        let times = SceneTimes {
            derive,
            upload: ms_to_duration(ms as f64),
        };
        Ok((buffers, times))
    }

    /// Release the cached batch and frame buffers (they grow back on demand).
    fn release_scratch(&mut self) {
        self.rays = None;
        self.outputs = None;
        self.frame = None;
        self.pinned = None;
    }

    fn scene_args(&self) -> Result<(SceneArgs, SceneKind), Error> {
        self.scene
            .as_ref()
            .map(|s| (s.args, s.kind))
            .ok_or(Error::NoScene)
    }

    /// [`DeviceState::scene_args`] for a frame whose rays all start within
    /// `origin_bound` of zero on every axis: without the cell grid (so that the
    /// octant kernels run) unless every such ray can walk it
    /// ([`CellGrid::walkable_from`]); the grid kernels do not test each ray.
    fn render_scene_args(&self, origin_bound: f32) -> Result<(SceneArgs, SceneKind), Error> {
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

    /// Grow-only scratch buffers for a batch of `n` rays with `out_bytes` of
    /// output per ray. Out of memory, every scratch buffer is freed (the frame
    /// buffers a render left too) and the allocation tried once more; if that
    /// fails too, the call holds no scratch memory.
    fn ensure_batch(&mut self, n: usize, out_bytes: usize) -> Result<(), Error> {
        self.retry_without_scratch(|b| b.grow_batch(n, out_bytes))
    }

    /// Grow-only frame buffers: device image and pinned host copy, with the
    /// retry of [`CudaBackend::ensure_batch`].
    fn ensure_frame(&mut self, bytes: usize) -> Result<(), Error> {
        self.retry_without_scratch(|b| b.grow_frame(bytes))
    }

    /// `grow`, and on running out of device or pinned host memory, `grow` again
    /// after freeing every scratch buffer; a second failure frees them again.
    fn retry_without_scratch(
        &mut self,
        grow: impl Fn(&mut Self) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let out_of_memory =
            |e: &Error| matches!(e, Error::OutOfMemory { .. } | Error::HostOutOfMemory { .. });
        match grow(self) {
            Err(e) if out_of_memory(&e) => {
                self.release_scratch();
                let again = grow(self);
                if again.is_err() {
                    self.release_scratch();
                }
                again
            }
            other => other,
        }
    }

    fn grow_batch(&mut self, n: usize, out_bytes: usize) -> Result<(), Error> {
        let ray_bytes = n * std::mem::size_of::<Ray>();
        if self.rays.as_ref().is_none_or(|b| b.bytes() < ray_bytes) {
            self.rays = None;
            self.rays = Some(DeviceBuffer::alloc(ray_bytes, "ray batch")?);
        }
        let out = n * out_bytes;
        if self.outputs.as_ref().is_none_or(|b| b.bytes() < out) {
            self.outputs = None;
            self.outputs = Some(DeviceBuffer::alloc(out, "hit batch")?);
        }
        Ok(())
    }

    fn grow_frame(&mut self, bytes: usize) -> Result<(), Error> {
        if self.frame.as_ref().is_none_or(|b| b.bytes() < bytes) {
            self.frame = None;
            self.frame = Some(DeviceBuffer::alloc(bytes, "frame buffer")?);
        }
        if self.pinned.as_ref().is_none_or(|b| b.bytes() < bytes) {
            self.pinned = None;
            self.pinned = Some(PinnedBuffer::alloc(bytes, "pinned frame buffer")?);
        }
        Ok(())
    }

    /// Upload a pinhole frame's camera cones (`cones`, one a slot of the
    /// scene) and the slots' bounding spheres (`balls`), and launch
    /// `prism_camera_masks` over the frame's tiles of `CAMERA_MASK_TILE`
    /// pixels, after c_params was written on the stream: each tile's camera
    /// candidates, then each tile's reflection and shadow candidates (for
    /// tiles of half angle `tile_angle`, those `lists` asks for:
    /// `LIST_REFLECTIONS`, `LIST_SHADOWS`; none at `REFLECTION_MAX_ANGLE` or
    /// more). The masks' pointer and tiles per row and column, or `None` when
    /// the scene has no room for cones (KernelConfig::camera_cones).
    fn find_camera_masks(
        &mut self,
        cones: &[[f32; 4]],
        balls: &[[f32; 4]],
        (tile_angle, lists): (f32, u32),
        (width, height): (u32, u32),
    ) -> Result<Option<(u64, [u32; 2])>, Error> {
        let Some(scene) = self.scene.as_mut() else {
            return Ok(None);
        };
        let mut prims = scene.args.prims;
        let Some(b) = scene.camera_cones.as_mut() else {
            return Ok(None);
        };
        if balls.len() != cones.len() {
            return Ok(None);
        }
        let both: Vec<[f32; 4]> = cones.iter().chain(balls).copied().collect();
        b.upload(&self.stream, bytemuck::cast_slice(&both))?;
        let mut cones_ptr = b.ptr();
        let mut count = cones.len() as u32;
        let tile = camera_bounds::CAMERA_MASK_TILE;
        let mut tiles_x = width.div_ceil(tile);
        let mut tiles_y = height.div_ceil(tile);
        let n = tiles_x as usize * tiles_y as usize;
        if MASKS_PER_TILE * n > u32::MAX as usize {
            // The kernels index the masks in 32 bits: camera rays walk the tree.
            return Ok(None);
        }
        // A camera, a reflection and a shadow mask a tile.
        let bytes = MASKS_PER_TILE * n * 8;
        if self.camera_masks.as_ref().is_none_or(|b| b.bytes() < bytes) {
            self.camera_masks = None;
            self.camera_masks = Some(DeviceBuffer::alloc(bytes, "camera masks")?);
        }
        let mut masks = self.camera_masks.as_ref().map_or(0, |b| b.ptr());
        let mut angle = tile_angle;
        let mut lists = lists;
        let mut params: [*mut c_void; 8] = [
            (&mut cones_ptr as *mut u64).cast(),
            (&mut count as *mut u32).cast(),
            (&mut masks as *mut u64).cast(),
            (&mut tiles_x as *mut u32).cast(),
            (&mut tiles_y as *mut u32).cast(),
            (&mut prims as *mut u64).cast(),
            (&mut angle as *mut f32).cast(),
            (&mut lists as *mut u32).cast(),
        ];
        let blocks = (n as u64).div_ceil(CAMERA_MASKS_THREADS as u64);
        let Some(blocks) = u32::try_from(blocks).ok().filter(|&b| b <= MAX_GRID_X) else {
            // More tiles than one launch covers: camera rays walk the tree.
            return Ok(None);
        };
        let grid = (blocks, 1);
        // SAFETY: the eight values match prism_camera_masks's parameters
        // (const float4*, u32, u64*, u32, u32, const Primitive*, float, u32)
        // in order and layout; `cones` holds `count` cones then `count` balls
        // (uploaded above, `upload` waits for the copy), `masks` holds
        // 3 * tiles_x * tiles_y u64 (grown above), `prims` is the scene's
        // primitive buffer of `count` (at most CAMERA_BOUNDS_MAX_PRIMS)
        // records, and the kernel reads c_params, written before on the same
        // stream.
        unsafe {
            self.kernels.camera_masks.launch(
                grid,
                (CAMERA_MASKS_THREADS, 1),
                &self.stream,
                &mut params,
            )?;
        }
        Ok(Some((masks, [tiles_x, tiles_y])))
    }

    /// Launch a trace kernel over `n` rays (`origins`/`dirs` with `stride` float4s per ray).
    #[allow(clippy::too_many_arguments)]
    fn launch_trace(
        &mut self,
        config: &KernelConfig,
        closest: bool,
        scene: (SceneArgs, SceneKind),
        rays_ptr: u64,
        stride: u32,
        n: u32,
        out_ptr: u64,
    ) -> Result<(), Error> {
        let work = self.work.ptr();
        let (mut scene, kind) = scene;
        let k = self.kernels.kinds[kind as usize];
        let (f, resident) = if closest {
            (k.intersect, k.intersect_grid)
        } else {
            (k.occluded, k.occluded_grid)
        };
        let grid = if config.persistent {
            // Every ray range's counter (see WORK_WORDS).
            self.work.fill_u32(&self.stream, 0, WORK_WORDS)?;
            resident
        } else {
            n.div_ceil(config.trace_threads).max(1)
        };
        let mut origins = rays_ptr;
        let mut dirs = rays_ptr + 16;
        let mut stride = stride;
        let mut n = n;
        let mut out = out_ptr;
        let mut work = work;
        let mut params: [*mut c_void; 7] = [
            (&mut scene as *mut SceneArgs).cast(),
            (&mut origins as *mut u64).cast(),
            (&mut dirs as *mut u64).cast(),
            (&mut stride as *mut u32).cast(),
            (&mut n as *mut u32).cast(),
            (&mut out as *mut u64).cast(),
            (&mut work as *mut u64).cast(),
        ];
        // SAFETY: the seven values match prism_intersect / prism_occluded's
        // parameters (SceneView, const float4*, const float4*, u32, u32, out*, u32*)
        // in order and layout (SceneArgs' layout is asserted in prism_types.cuh);
        // the scene buffers hold the counts in `scene`; rays_ptr holds `n`
        // GpuRay records (stride 2) and out_ptr room for `n` outputs; `work`
        // is the WORK_WORDS-word work counter buffer.
        unsafe {
            f.launch(
                (grid, 1),
                (config.trace_threads, 1),
                &self.stream,
                &mut params,
            )
        }
    }

    /// Launch the render kernel of `integrator` over rows `[y0, y1)`.
    #[allow(clippy::too_many_arguments)]
    fn launch_render(
        &mut self,
        config: &KernelConfig,
        integrator: Integrator,
        scene: (SceneArgs, SceneKind),
        width: u32,
        y0: u32,
        y1: u32,
        out_ptr: u64,
        format: u32,
        on_band_stream: bool,
        tiles: u32,
    ) -> Result<(), Error> {
        let (mut scene, kind) = scene;
        let persistent = config.persistent_rows(integrator as u32, scene.grid_offsets != 0);
        let (grid, block) = if persistent {
            // Rows of path_threads threads, as many as the band has pixels:
            // the warps take their pixels from `work`, and those of blocks that
            // start once the pieces are all taken exit at once.
            let pixels = width as u64 * (y1 - y0) as u64;
            let blocks = pixels.div_ceil(config.path_threads as u64);
            (
                (u32::try_from(blocks).unwrap_or(u32::MAX).min(MAX_GRID_X), 1),
                (config.path_threads, 1),
            )
        } else {
            let [tw, th] = config.render_tile;
            let block_rows = th * tiles;
            (
                (width.div_ceil(tw), (y1 - y0).div_ceil(block_rows)),
                (tw, th),
            )
        };
        let kernels = &self.kernels.kinds[kind as usize];
        let f = if scene.grid_offsets != 0 {
            kernels.render_grid[integrator as usize]
        } else if scene.octants != 0 {
            kernels.render_octants[integrator as usize]
        } else {
            kernels.render[integrator as usize]
        };
        let mut y0 = y0;
        let mut y1 = y1;
        let mut out = out_ptr;
        let mut format = format;
        let mut srgb8 = self.srgb8.ptr();
        let mut tally = self.ray_tally.ptr();
        let mut work = self.work.ptr();
        let mut tiles = tiles;
        if persistent {
            // The persistent path kernels' pieces are counted from zero (the
            // launches before this one on the stream have finished with it).
            self.work.fill_u32(&self.stream, 0, 1)?;
        }
        let mut params: [*mut c_void; 9] = [
            (&mut scene as *mut SceneArgs).cast(),
            (&mut y0 as *mut u32).cast(),
            (&mut y1 as *mut u32).cast(),
            (&mut out as *mut u64).cast(),
            (&mut format as *mut u32).cast(),
            (&mut srgb8 as *mut u64).cast(),
            (&mut tally as *mut u64).cast(),
            (&mut work as *mut u64).cast(),
            (&mut tiles as *mut u32).cast(),
        ];
        let stream = if on_band_stream {
            &self.band_stream
        } else {
            &self.stream
        };
        // SAFETY: the nine values match prism_render_*'s parameters (SceneView,
        // u32, u32, void*, u32, const uint2*, u64*, u32*, u32) in order and layout; `out`
        // holds a whole frame of the format's pixels for the width/height in
        // c_params, which was written before on the main stream (the band
        // stream waited for an event recorded after it, see render_inner);
        // `srgb8` holds the SRGB8_TABLE_SLOTS + 1 slots the kernels index
        // (uploaded when the context was made, waited for); `tally` is the
        // RAY_TALLY_BYTES tally buffer, whose RAY_TALLY_SLOTS the kernels were
        // compiled with; `work` is the WORK_WORDS-word work counter buffer.
        unsafe { f.launch(grid, block, stream, &mut params) }
    }
}

/// A vector with room for exactly `n` elements, filled by `fill`; an
/// allocation failure is [`Error::HostOutOfMemory`] naming `what`.
fn host_vec<T>(
    n: usize,
    what: &'static str,
    fill: impl FnOnce(&mut Vec<T>),
) -> Result<Vec<T>, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error::HostOutOfMemory {
        what,
        bytes: (n as u64).saturating_mul(std::mem::size_of::<T>() as u64),
    })?;
    fill(&mut v);
    Ok(v)
}

fn ms_to_duration(ms: f64) -> Duration {
    Duration::from_secs_f64((ms / 1000.0).max(0.0))
}

/// Copy `src` into `dst` (equal lengths) on a few host threads when large.
fn parallel_copy(dst: &mut [u8], src: &[u8]) {
    const MIN_PART: usize = 8 << 20;
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    let threads = std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .min(8);
    let parts = threads.min(n / MIN_PART);
    if parts < 2 {
        dst.copy_from_slice(src);
        return;
    }
    let chunk = n.div_ceil(parts);
    let mut failed = Vec::new();
    std::thread::scope(|s| {
        for (i, (d, sr)) in dst.chunks_mut(chunk).zip(src.chunks(chunk)).enumerate() {
            if std::thread::Builder::new()
                .spawn_scoped(s, move || d.copy_from_slice(sr))
                .is_err()
            {
                failed.push(i);
            }
        }
    });
    // A part whose thread could not be started is copied here.
    for i in failed {
        let r = i * chunk..((i + 1) * chunk).min(n);
        dst[r.clone()].copy_from_slice(&src[r]);
    }
}

/// How a frame is split into row bands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct BandPlan {
    rows: u32,
    bands: u32,
    /// Bands are enqueued at most this many ahead of the host (progress and
    /// cancellation of long renders); light frames enqueue every band at once.
    window: u32,
}

/// Largest `gridDim.y` of a launch.
const MAX_GRID_Y: u32 = 65535;
/// Largest `gridDim.x` of a launch.
const MAX_GRID_X: u32 = (1 << 31) - 1;

fn plan_bands(
    width: u32,
    height: u32,
    pixel_bytes: u32,
    params: &RenderParams,
    tile_h: u32,
) -> BandPlan {
    let pixels = width as u64 * height as u64;
    let per_sample = match params.integrator {
        1 => 2 * (params.max_depth as u64 + 1),
        2 => params.ao_samples as u64 + 2,
        _ => (params.max_depth as u64).min(4),
    };
    let work = pixels * params.spp as u64 * per_sample;
    let by_bytes = (pixels * pixel_bytes as u64).div_ceil(BAND_BYTES).max(1);
    let by_work = work.div_ceil(BAND_WORK).max(1);
    let wanted = by_bytes.max(by_work).clamp(1, 1024) as u32;
    let rows = height
        .div_ceil(wanted)
        .div_ceil(tile_h)
        .saturating_mul(tile_h)
        .clamp(tile_h.min(height).max(1), height.max(1))
        // A band is one launch with gridDim.y = rows / tile_h, at most 65535.
        .min(MAX_GRID_Y.saturating_mul(tile_h.max(1)));
    let bands = height.div_ceil(rows).max(1);
    let window = if by_work > by_bytes { 2 } else { bands };
    BandPlan {
        rows,
        bands,
        window,
    }
}

/// Tiles a render block of a launch takes (`KernelConfig::render_tiles_per_block`
/// at most): as many as leave the launch's blocks filling the `resident` blocks
/// the device holds at once `min_waves` times, so that a small frame still
/// spreads over every multiprocessor; `min_waves` 0 always takes the most.
fn tiles_per_block(most: u32, blocks_of_one_tile: u64, resident: u64, min_waves: u32) -> u32 {
    if min_waves == 0 {
        return most.max(1);
    }
    let fill = resident.max(1).saturating_mul(min_waves as u64);
    (blocks_of_one_tile / fill).clamp(1, most.max(1) as u64) as u32
}

/// The CUDA backend: kernels compiled by NVRTC for the device at hand, the
/// scene uploaded once per [`Backend::set_scene`], frames rendered by one fused
/// kernel per integrator, and batches traced by the wavefront kernels.
///
/// The backend owns a CUDA context of its own, made current only inside its
/// calls (and the caller's current context restored after), so it neither
/// disturbs an application's CUDA state nor is disturbed by it. Every failure
/// is an [`Error`]; after one that leaves the context working (bad input, out of
/// memory, a failed launch) the backend is usable as before. A kernel fault
/// (an illegal address: a bug in a kernel, never the result of input, which is
/// checked on the host) is sticky: the failing call returns [`Error::Device`],
/// the next call tries to build a fresh context and re-upload the scene, and
/// where the driver refuses (the NVIDIA driver of CUDA 13 rejects any new context
/// in a process after such a fault) every call returns an [`Error::Device`]
/// saying so, without panicking; other backends remain usable.
pub struct CudaBackend {
    options: CudaOptions,
    device: Device,
    props: DeviceProps,
    driver_version: (u32, u32),
    kernels: CompiledKernels,
    kernels_from_cache: bool,
    accel: Option<Accel>,
    state: Option<DeviceState>,
    /// Why the last context was dropped (a sticky fault), for the error that
    /// explains a failed rebuild.
    lost: Option<String>,
    occluded_scratch: Vec<u8>,
    last_frame: FrameTimes,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("device", &self.props)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl CudaBackend {
    /// Open device 0 with the default kernels.
    ///
    /// Fails with [`Error::BackendUnavailable`] (saying why) when the NVIDIA
    /// driver or NVRTC cannot be loaded or there is no CUDA device, and with
    /// [`Error::Compile`] if the kernels do not compile. The kernels are compiled
    /// here, for the device's own architecture, unless the disk cache has them.
    pub fn new() -> Result<CudaBackend, Error> {
        Self::with_options(CudaOptions::default())
    }

    /// Open device 0 with every kernel file passed through `patch(file name,
    /// source) -> source` before compilation: a test can break a mirror on purpose
    /// and check that conformance notices.
    pub fn with_source_patch(
        patch: impl Fn(&str, &str) -> String + Send + Sync + 'static,
    ) -> Result<CudaBackend, Error> {
        Self::with_options(CudaOptions {
            source_patch: Some(std::sync::Arc::new(patch)),
            ..Default::default()
        })
    }

    /// Open a device with explicit options.
    pub fn with_options(options: CudaOptions) -> Result<CudaBackend, Error> {
        options.config.validate()?;
        driver::load_driver()?;
        let nvrtc_version = nvrtc::nvrtc_version()?;
        let count = driver::device_count()?;
        if count == 0 {
            return Err(Error::BackendUnavailable {
                backend: BACKEND,
                reason: "the NVIDIA driver reports no CUDA device".into(),
            });
        }
        if options.device >= count {
            return Err(Error::BackendUnavailable {
                backend: BACKEND,
                reason: format!(
                    "CUDA device {} asked for, but only {count} present",
                    options.device
                ),
            });
        }
        let device = Device::get(options.device)?;
        let props = device.props()?;
        let driver_version = driver::driver_version()?;
        let (kernels, kernels_from_cache) = Self::build_kernels(&options, &props, nvrtc_version)?;
        let state = DeviceState::create(device, &kernels, &options.config, &props)?;
        Ok(CudaBackend {
            options,
            device,
            props,
            driver_version,
            kernels,
            kernels_from_cache,
            accel: None,
            state: Some(state),
            lost: None,
            occluded_scratch: Vec::new(),
            last_frame: FrameTimes::default(),
        })
    }

    fn build_kernels(
        options: &CudaOptions,
        props: &DeviceProps,
        nvrtc_version: (u32, u32),
    ) -> Result<(CompiledKernels, bool), Error> {
        let files = kernels::patched_sources(options.source_patch.as_ref());
        let compile_options = kernels::compile_options(props.arch, &options.config);
        let key = cache::key(
            &files,
            &compile_options,
            nvrtc_version,
            &props.name,
            props.arch,
        );
        let dir = if options.disk_cache {
            options.cache_dir.clone().or_else(cache::cache_dir)
        } else {
            None
        };
        if let Some((cubin, log)) = dir.as_ref().and_then(|d| cache::load(d, &key)) {
            let k = CompiledKernels {
                cubin,
                log,
                arch: props.arch,
                options: compile_options,
                nvrtc_version,
            };
            return Ok((k, true));
        }
        let k = kernels::compile_files(&files, props.arch, compile_options, nvrtc_version)?;
        if let Some(dir) = &dir {
            cache::store(dir, &key, &k.cubin, &k.log);
        }
        Ok((k, false))
    }

    /// The compiled kernels (cubin, NVRTC log, options).
    pub fn compiled_kernels(&self) -> &CompiledKernels {
        &self.kernels
    }

    /// Whether the kernels came from the disk cache rather than NVRTC.
    pub fn kernels_from_cache(&self) -> bool {
        self.kernels_from_cache
    }

    /// The options this backend was opened with.
    pub fn options(&self) -> &CudaOptions {
        &self.options
    }

    /// Stage times of the last `render` call; all zero after a `render` that
    /// failed or was cancelled (and before the first).
    pub fn last_frame_times(&self) -> FrameTimes {
        self.last_frame
    }

    /// Rebuild the device state after a fault (or return it).
    fn ensure_state(&mut self) -> Result<(), Error> {
        if self.state.is_some() {
            return Ok(());
        }
        let created = DeviceState::create(
            self.device,
            &self.kernels,
            &self.options.config,
            &self.props,
        );
        let mut st = match (created, &self.lost) {
            (Ok(st), _) => st,
            (Err(e), None) => return Err(e),
            (Err(e), Some(fault)) => {
                return Err(Error::Device {
                    backend: BACKEND,
                    operation: "recovering from a kernel fault",
                    message: format!(
                        "the CUDA context was lost ({fault}) and a new one cannot be created ({e}); \
                         the driver allows no further CUDA work in this process"
                    ),
                });
            }
        };
        if let Some(accel) = &self.accel {
            let _g = st.ctx.enter()?;
            st.upload_scene(accel, &self.options.config)?;
        }
        self.state = Some(st);
        self.lost = None;
        Ok(())
    }

    /// The device state with its context current.
    fn enter(&mut self) -> Result<(&mut DeviceState, CtxGuard), Error> {
        self.ensure_state()?;
        let st = self.state.as_mut().ok_or(Error::Device {
            backend: BACKEND,
            operation: "enter",
            message: "no device state".into(),
        })?;
        let g = st.ctx.enter()?;
        Ok((st, g))
    }

    /// After a failed call: if the context no longer works (a kernel fault is
    /// sticky), drop it; the next call builds a fresh one.
    fn after_error(&mut self, e: &Error) {
        if !matches!(e, Error::Device { .. } | Error::OutOfMemory { .. }) {
            return;
        }
        let healthy = match &self.state {
            Some(st) => match st.ctx.enter() {
                Ok(_g) => st.ctx.synchronize().is_ok(),
                Err(_) => false,
            },
            None => true,
        };
        if !healthy {
            self.state = None;
            self.lost = Some(e.to_string());
        }
    }

    fn checked<R>(&mut self, r: Result<R, Error>) -> Result<R, Error> {
        if let Err(e) = &r {
            self.after_error(e);
        }
        r
    }

    /// Registers, local memory, spills and occupancy of every kernel.
    pub fn kernel_resources(&mut self) -> Result<Vec<KernelResources>, Error> {
        let r = self.kernel_resources_inner();
        self.checked(r)
    }

    fn kernel_resources_inner(&mut self) -> Result<Vec<KernelResources>, Error> {
        let reports = self.kernels.ptxas_reports();
        let config = self.options.config.clone();
        let max_threads = self.props.max_threads_per_sm.max(1);
        let (st, _g) = self.enter()?;
        let mut list = Vec::new();
        for kind in SceneKind::ALL {
            let k = st.kernels.kinds[kind as usize];
            // In the order of KERNEL_BASES.
            let fs = [
                k.render[0],
                k.render[1],
                k.render[2],
                k.intersect,
                k.occluded,
                k.render_octants[0],
                k.render_octants[1],
                k.render_octants[2],
                k.render_grid[0],
                k.render_grid[1],
                k.render_grid[2],
            ];
            for (b, f) in fs.into_iter().enumerate() {
                // Bases 0, 5 and 8 are the path kernels: the tree's, the octant
                // copies', the grid's.
                let threads = if b == 3 || b == 4 {
                    config.trace_threads
                } else if (b == 0 || b == 5 || b == 8) && config.persistent_rows(0, b == 8) {
                    config.path_threads
                } else {
                    config.render_threads()
                };
                list.push((
                    KERNEL_NAMES[kind as usize * KERNEL_BASES.len() + b],
                    f,
                    threads,
                ));
            }
        }
        list.push((
            KERNEL_CAMERA_MASKS,
            st.kernels.camera_masks,
            CAMERA_MASKS_THREADS,
        ));
        let mut out = Vec::new();
        use sys::CUfunction_attribute::*;
        for (name, f, threads) in list {
            let blocks = f.blocks_per_sm(threads)?;
            let ptxas = reports.iter().find(|r| r.name == name).cloned();
            out.push(KernelResources {
                name,
                registers: f.attribute(CU_FUNC_ATTRIBUTE_NUM_REGS)?.max(0) as u32,
                local_bytes: f.attribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?.max(0) as u32,
                shared_bytes: f.attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?.max(0) as u32,
                ptxas,
                block_threads: threads,
                blocks_per_sm: blocks,
                occupancy: (blocks * threads) as f64 / max_threads as f64,
            });
        }
        Ok(out)
    }

    /// Time the trace kernels alone on a device-resident batch: `rays` repeated
    /// up to `batch` rays is uploaded once, then each kernel runs once to warm up
    /// and `repeats` times timed by CUDA events; medians are reported.
    pub fn intersect_resident_bench(
        &mut self,
        rays: &[Ray],
        batch: usize,
        repeats: u32,
    ) -> Result<ResidentBench, Error> {
        let r = self.resident_inner(rays, batch, repeats);
        self.checked(r)
    }

    fn resident_inner(
        &mut self,
        rays: &[Ray],
        batch: usize,
        repeats: u32,
    ) -> Result<ResidentBench, Error> {
        check_batch("intersect_resident_bench", rays, rays.len())?;
        if rays.is_empty() {
            return Err(Error::Setting {
                field: "intersect_resident_bench.rays",
                value: 0.0,
                reason: "needs at least one ray",
            });
        }
        if batch == 0 || batch > MAX_LAUNCH_RAYS * 64 {
            return Err(Error::Setting {
                field: "intersect_resident_bench.batch",
                value: batch as f64,
                reason: "must be in 1..=2^28",
            });
        }
        if repeats == 0 || repeats > 10_000 {
            return Err(Error::Setting {
                field: "intersect_resident_bench.repeats",
                value: repeats as f64,
                reason: "must be in 1..=10000",
            });
        }
        let n = u32::try_from(batch).map_err(|_| Error::DeviceLimit {
            backend: BACKEND,
            what: "rays per launch",
            needed: batch as u64,
            limit: u32::MAX as u64,
        })?;
        let host = host_vec(batch, "resident ray batch (host)", |v: &mut Vec<Ray>| {
            v.extend(rays.iter().copied().cycle().take(batch))
        })?;
        let config = self.options.config.clone();
        let (st, _g) = self.enter()?;
        let scene = st.scene_args()?;
        let mut ray_buf = DeviceBuffer::alloc(batch * 32, "resident ray batch")?;
        let hit_buf = DeviceBuffer::alloc(batch * 16, "resident hits")?;
        let flag_buf = DeviceBuffer::alloc(batch, "resident occlusion flags")?;
        ray_buf.upload(&st.stream, bytemuck::cast_slice(&host))?;
        st.ensure_events(2 * repeats as usize + 2)?;
        let time = |closest: bool, st: &mut DeviceState| -> Result<Vec<f64>, Error> {
            let out = if closest {
                hit_buf.ptr()
            } else {
                flag_buf.ptr()
            };
            st.launch_trace(&config, closest, scene, ray_buf.ptr(), 2, n, out)?;
            for i in 0..repeats as usize {
                st.events[2 * i].record(&st.stream)?;
                st.launch_trace(&config, closest, scene, ray_buf.ptr(), 2, n, out)?;
                st.events[2 * i + 1].record(&st.stream)?;
            }
            st.stream.synchronize()?;
            (0..repeats as usize)
                .map(|i| Ok(st.events[2 * i].elapsed_ms(&st.events[2 * i + 1])? as f64))
                .collect()
        };
        let mut closest = time(true, st)?;
        let mut occluded = time(false, st)?;
        let n_hits = rays.len().min(batch);
        let mut hits = host_vec(n_hits, "resident hits (host)", |v| {
            v.resize(n_hits, Hit::MISS)
        })?;
        hit_buf.download(&st.stream, bytemuck::cast_slice_mut(&mut hits))?;
        let mut flags = host_vec(batch, "resident occlusion flags (host)", |v| {
            v.resize(batch, 0u8)
        })?;
        flag_buf.download(&st.stream, &mut flags)?;
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            (v[v.len() / 2], (v[0], v[v.len() - 1]))
        };
        let (c_ms, c_range) = median(&mut closest);
        let (o_ms, o_range) = median(&mut occluded);
        let mrays = |ms: f64| {
            if ms > 0.0 {
                batch as f64 / (ms * 1e3)
            } else {
                0.0
            }
        };
        Ok(ResidentBench {
            rays: batch,
            repeats,
            closest_ms: c_ms,
            closest_range_ms: c_range,
            occluded_ms: o_ms,
            occluded_range_ms: o_range,
            closest_mrays_per_s: mrays(c_ms),
            occluded_mrays_per_s: mrays(o_ms),
            hits,
            occluded_count: flags.iter().filter(|&&f| f != 0).count(),
        })
    }

    fn set_scene_inner(&mut self, scene: &Scene) -> Result<RenderStats, Error> {
        let t0 = Instant::now();
        // The BVH's subtrees are built on rayon's global pool (the same tree as a
        // one-thread build).
        let accel = Accel::build_with(scene, &RayonFork)?;
        let build = t0.elapsed();
        if self.options.config.tree_checked_on_upload {
            // The kernels then skip core's per-leaf and per-node range checks
            // (PRISM_TREE_CHECKS 0): every node a traversal reaches is in range.
            check_tree(accel.nodes(), accel.primitives().len()).map_err(|defect| {
                Error::Device {
                    backend: BACKEND,
                    operation: "checking the BVH before upload",
                    message: defect.to_string(),
                }
            })?;
        }
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

    fn trace_inner(
        &mut self,
        rays: &[Ray],
        closest: bool,
        hits: Option<&mut [Hit]>,
    ) -> Result<RenderStats, Error> {
        let t0 = Instant::now();
        if self.accel.is_none() {
            return Err(Error::NoScene);
        }
        if rays.is_empty() {
            return Ok(RenderStats {
                total: t0.elapsed(),
                timing: TimingSource::DeviceEvents,
                ..Default::default()
            });
        }
        let config = self.options.config.clone();
        let mut scratch = std::mem::take(&mut self.occluded_scratch);
        let out_bytes = if closest { 16 } else { 1 };
        let chunk = rays.len().min(MAX_LAUNCH_RAYS);
        if !closest {
            scratch.clear();
            scratch
                .try_reserve_exact(rays.len())
                .map_err(|_| Error::HostOutOfMemory {
                    what: "host occlusion flags",
                    bytes: rays.len() as u64,
                })?;
            scratch.resize(rays.len(), 0);
        }
        let (st, _g) = self.enter()?;
        let scene = st.scene_args()?;
        st.ensure_batch(chunk, out_bytes)?;
        st.ensure_events(4)?;
        let (mut up, mut trace, mut down) = (0.0f64, 0.0f64, 0.0f64);
        let mut hits = hits;
        for (c, part) in rays.chunks(chunk).enumerate() {
            let first = c * chunk;
            let n = part.len() as u32;
            let (rays_ptr, out_ptr) = match (&st.rays, &st.outputs) {
                (Some(r), Some(o)) => (r.ptr(), o.ptr()),
                _ => {
                    return Err(Error::Device {
                        backend: BACKEND,
                        operation: "trace",
                        message: "no batch buffers".into(),
                    });
                }
            };
            st.events[0].record(&st.stream)?;
            if let Some(b) = st.rays.as_mut() {
                b.upload(&st.stream, bytemuck::cast_slice(part))?;
            }
            st.events[1].record(&st.stream)?;
            st.launch_trace(&config, closest, scene, rays_ptr, 2, n, out_ptr)?;
            st.events[2].record(&st.stream)?;
            let out_buf = st.outputs.as_ref().ok_or(Error::Device {
                backend: BACKEND,
                operation: "trace",
                message: "no batch buffers".into(),
            })?;
            match hits.as_deref_mut() {
                Some(h) if closest => {
                    out_buf.download(
                        &st.stream,
                        bytemuck::cast_slice_mut(&mut h[first..first + part.len()]),
                    )?;
                }
                _ => out_buf.download(&st.stream, &mut scratch[first..first + part.len()])?,
            }
            st.events[3].record(&st.stream)?;
            st.events[3].synchronize()?;
            up += st.events[0].elapsed_ms(&st.events[1])? as f64;
            trace += st.events[1].elapsed_ms(&st.events[2])? as f64;
            down += st.events[2].elapsed_ms(&st.events[3])? as f64;
        }
        self.occluded_scratch = scratch;
        Ok(RenderStats {
            upload: ms_to_duration(up),
            trace: ms_to_duration(trace),
            download: ms_to_duration(down),
            total: t0.elapsed(),
            rays: rays.len() as u64,
            timing: TimingSource::DeviceEvents,
            ..Default::default()
        })
    }

    fn render_inner(
        &mut self,
        camera: &Camera,
        settings: &RenderSettings,
        image: &mut Image,
        progress: &dyn Progress,
    ) -> Result<RenderStats, Error> {
        let t0 = Instant::now();
        // A render that fails leaves no earlier frame's times behind.
        self.last_frame = FrameTimes::default();
        let accel = self.accel.as_ref().ok_or(Error::NoScene)?;
        let (width, height) = (image.width(), image.height());
        let params = settings.params(accel, camera, width, height)?;
        // Where this frame's rays can start: on the camera's lens, or on a
        // primitive (within the scene's bounds, with 1% to spare for points
        // rounded off their surfaces).
        let b = accel.bounds();
        let lens = params.camera.origin_lens;
        let camera_bound = lens[..3].iter().fold(0.0f32, |m, c| m.max(c.abs())) + lens[3].abs();
        let origin_bound = (b.min.abs().max(b.max.abs()).max_element() * 1.01).max(camera_bound);
        let (pixel_bytes, format) = match image.format() {
            PixelFormat::LinearF32 => (16u32, 0u32),
            PixelFormat::Srgba8 => (4u32, 1u32),
        };
        let frame_bytes = image.pixel_count() * pixel_bytes as usize;
        if frame_bytes as u64 > self.props.total_mem {
            return Err(Error::DeviceLimit {
                backend: BACKEND,
                what: "frame buffer bytes",
                needed: frame_bytes as u64,
                limit: self.props.total_mem,
            });
        }
        if progress.cancelled() {
            return Err(Error::Cancelled);
        }
        let config = self.options.config.clone();
        // A pinhole frame's camera cones, for the tiles of CAMERA_MASK_TILE
        // pixels whose masks the camera rays read.
        let tile = camera_bounds::CAMERA_MASK_TILE;
        let cones = config
            .camera_cones
            .then(|| {
                camera_bounds::camera_cones(
                    &params.camera,
                    width,
                    height,
                    [tile, tile],
                    accel.primitives(),
                )
            })
            .flatten();
        // Their reflection candidates' inputs: the slots' bounding spheres (only
        // for a frame with cones, as their scenes are small) and the tiles'
        // half angle, rounded up (none: every mirror ray walks the tree).
        let balls = match &cones {
            Some(_) => camera_bounds::bounding_balls(accel.primitives()),
            None => Vec::new(),
        };
        let lists = if config.reflection_masks {
            LIST_REFLECTIONS
        } else {
            0
        } | if config.shadow_masks { LIST_SHADOWS } else { 0 };
        let tile_angle = match (lists != 0)
            .then(|| camera_bounds::tile_half_angle(&params.camera, width, height, [tile, tile]))
        {
            Some(Some(Some(a))) => (a as f32).next_up(),
            _ => camera_bounds::REFLECTION_MAX_ANGLE as f32,
        };
        let plan = plan_bands(width, height, pixel_bytes, &params, config.render_tile[1]);
        // Blocks of the render kernels the device holds at once.
        let resident = self.props.sms as u64 * config.render_min_blocks as u64;
        let (st, _g) = self.enter()?;
        // A frame that failed midway may have left a band running on the band
        // stream; c_params is about to change.
        st.band_stream.synchronize()?;
        let mut scene = st.render_scene_args(origin_bound)?;
        st.ensure_frame(frame_bytes)?;
        let bands = plan.bands as usize;
        // Odd bands on the band stream: the persistent path kernels' warps
        // share one work counter, so their bands stay on one stream.
        let overlap = config.overlap_bands
            && bands > 1
            && !config.persistent_rows(settings.integrator as u32, scene.0.grid_offsets != 0);
        // events: 0 before upload, 1 after upload; then per band: kernel done,
        // copy start, copy done; then the band stream's start.
        st.ensure_events(3 + 3 * bands)?;
        let ready = 2 + 3 * bands;
        let frame_ptr = st.frame.as_ref().map(|b| b.ptr()).ok_or(Error::Device {
            backend: BACKEND,
            operation: "render",
            message: "no frame buffer".into(),
        })?;

        st.events[0].record(&st.stream)?;
        // SAFETY: params_ptr is the module's c_params (size checked at load,
        // equal to RenderParams); the source is a live Pod value in pageable
        // memory, which the driver may read after the call returns, so the
        // stream is synchronised right after, while `params` is still borrowed.
        let copied = unsafe {
            sys::cuMemcpyHtoDAsync_v2(
                st.kernels.params_ptr,
                (&params as *const RenderParams).cast(),
                std::mem::size_of::<RenderParams>(),
                st.stream.raw(),
            )
        };
        let synced = st.stream.synchronize();
        driver::check("cuMemcpyHtoDAsync", copied)?;
        synced?;
        st.ray_tally.fill_u32(&st.stream, 0, RAY_TALLY_BYTES / 4)?;
        st.events[1].record(&st.stream)?;
        // The tiles' camera candidates, counted in the frame's kernel time.
        if let Some(c) = &cones
            && let Some((masks, tiles)) =
                st.find_camera_masks(c, &balls, (tile_angle, lists), (width, height))?
        {
            scene.0.camera_masks = masks;
            scene.0.camera_mask_tiles = tiles;
        }
        // Whatever returns from here on, no band is left running.
        let _join = StreamJoin::new(&st.band_stream);
        if overlap {
            st.events[ready].record(&st.stream)?;
            st.band_stream.wait(&st.events[ready])?;
        }

        let row_bytes = width as usize * pixel_bytes as usize;
        let band_rows = |b: usize| {
            let y0 = b as u32 * plan.rows;
            (y0, (y0 + plan.rows).min(height))
        };
        let enqueue = |st: &mut DeviceState, b: usize| -> Result<(), Error> {
            let (y0, y1) = band_rows(b);
            let on_band_stream = overlap && b % 2 == 1;
            let [tw, th] = config.render_tile;
            let tiles = tiles_per_block(
                config.render_tiles_per_block,
                width.div_ceil(tw) as u64 * (y1 - y0).div_ceil(th) as u64,
                resident,
                config.render_min_waves,
            );
            st.launch_render(
                &config,
                settings.integrator,
                scene,
                width,
                y0,
                y1,
                frame_ptr,
                format,
                on_band_stream,
                tiles,
            )?;
            let k_done = 2 + 3 * b;
            st.events[k_done].record(if on_band_stream {
                &st.band_stream
            } else {
                &st.stream
            })?;
            st.copy_stream.wait(&st.events[k_done])?;
            st.events[k_done + 1].record(&st.copy_stream)?;
            let (offset, bytes) = (y0 as usize * row_bytes, (y1 - y0) as usize * row_bytes);
            match (st.pinned.as_mut(), st.frame.as_ref()) {
                // SAFETY: both buffers hold at least frame_bytes >= offset + bytes;
                // the pinned range is read only after events[k_done + 2] completes.
                (Some(p), Some(f)) => unsafe {
                    driver::copy_to_pinned(p, f, offset, bytes, &st.copy_stream)?
                },
                _ => {
                    return Err(Error::Device {
                        backend: BACKEND,
                        operation: "render",
                        message: "no frame buffers".into(),
                    });
                }
            }
            st.events[k_done + 2].record(&st.copy_stream)
        };
        let dst: &mut [u8] = match image.format() {
            PixelFormat::LinearF32 => bytemuck::cast_slice_mut(image.linear_mut()),
            PixelFormat::Srgba8 => bytemuck::cast_slice_mut(image.rgba8_mut()),
        };
        let mut enqueued = 0usize;
        let mut host_copy = Duration::ZERO;
        for b in 0..bands {
            while enqueued < bands && enqueued < b + plan.window as usize {
                enqueue(st, enqueued)?;
                enqueued += 1;
            }
            st.events[2 + 3 * b + 2].synchronize()?;
            let (y0, y1) = band_rows(b);
            let (offset, bytes) = (y0 as usize * row_bytes, (y1 - y0) as usize * row_bytes);
            let tc = Instant::now();
            let src = st.pinned.as_ref().and_then(|p| p.range(offset, bytes));
            if let (Some(src), Some(d)) = (src, dst.get_mut(offset..offset + bytes)) {
                parallel_copy(d, src);
            }
            host_copy += tc.elapsed();
            progress.advance(y1 as u64, height as u64);
            if progress.cancelled() {
                st.stream.synchronize()?;
                st.band_stream.synchronize()?;
                st.copy_stream.synchronize()?;
                return Err(Error::Cancelled);
            }
        }
        // Rays traced: read the tally after the last kernel and sum its slots.
        // SAFETY: RAY_TALLY_BYTES from the tally buffer into the pinned readback
        // buffer of the same size; read after the stream is synchronised.
        driver::check("cuMemcpyDtoHAsync", unsafe {
            sys::cuMemcpyDtoHAsync_v2(
                st.ray_tally_host.as_mut_ptr().cast(),
                st.ray_tally.ptr(),
                RAY_TALLY_BYTES,
                st.stream.raw(),
            )
        })?;
        st.stream.synchronize()?;
        let rays = st
            .ray_tally_host
            .range(0, RAY_TALLY_BYTES)
            .map_or(0, ray_tally_sum);
        let last = 2 + 3 * (bands - 1);
        let upload_ms = st.events[0].elapsed_ms(&st.events[1])? as f64;
        // Until the band that ends last (of either stream).
        let mut kernel_ms = 0.0f64;
        for b in 0..bands {
            kernel_ms = kernel_ms.max(st.events[1].elapsed_ms(&st.events[2 + 3 * b])? as f64);
        }
        let to_pinned_ms = st.events[1].elapsed_ms(&st.events[last + 2])? as f64;
        let mut download_ms = 0.0;
        for b in 0..bands {
            download_ms += st.events[2 + 3 * b + 1].elapsed_ms(&st.events[2 + 3 * b + 2])? as f64;
        }
        let total = t0.elapsed();
        self.last_frame = FrameTimes {
            upload_ms,
            kernel_ms,
            download_ms,
            render_to_pinned_ms: to_pinned_ms,
            host_copy_ms: host_copy.as_secs_f64() * 1e3,
            total_ms: total.as_secs_f64() * 1e3,
            bands: plan.bands,
        };
        Ok(RenderStats {
            build: Duration::ZERO,
            upload: ms_to_duration(upload_ms),
            trace: ms_to_duration(kernel_ms),
            download: ms_to_duration(download_ms),
            total,
            rays,
            timing: TimingSource::DeviceEvents,
        })
    }
}

impl Backend for CudaBackend {
    fn info(&self) -> BackendInfo {
        let p = &self.props;
        let k = &self.kernels;
        BackendInfo {
            name: BACKEND,
            device: format!(
                "{} (sm_{}{}, {} SMs, {:.1} GiB, driver {}.{}, NVRTC {}.{})",
                p.name,
                p.arch.0,
                p.arch.1,
                p.sms,
                p.total_mem as f64 / (1u64 << 30) as f64,
                self.driver_version.0,
                self.driver_version.1,
                k.nvrtc_version.0,
                k.nvrtc_version.1
            ),
            max_buffer_bytes: p.total_mem,
            software: false,
        }
    }

    fn set_scene(&mut self, scene: &Scene) -> Result<RenderStats, Error> {
        let r = self.set_scene_inner(scene);
        self.checked(r)
    }

    fn render(
        &mut self,
        camera: &Camera,
        settings: &RenderSettings,
        image: &mut Image,
        progress: &dyn Progress,
    ) -> Result<RenderStats, Error> {
        let r = self.render_inner(camera, settings, image, progress);
        self.checked(r)
    }

    fn intersect(&mut self, rays: &[Ray], hits: &mut [Hit]) -> Result<RenderStats, Error> {
        check_batch("intersect", rays, hits.len())?;
        let r = self.trace_inner(rays, true, Some(hits));
        self.checked(r)
    }

    fn occluded(&mut self, rays: &[Ray], occluded: &mut [bool]) -> Result<RenderStats, Error> {
        check_batch("occluded", rays, occluded.len())?;
        let r = self.trace_inner(rays, false, None);
        if r.is_ok() {
            for (o, &f) in occluded.iter_mut().zip(&self.occluded_scratch) {
                *o = f != 0;
            }
        }
        self.checked(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(integrator: u32, spp: u32, max_depth: u32) -> RenderParams {
        RenderParams {
            integrator,
            spp,
            max_depth,
            ao_samples: 8,
            ..Default::default()
        }
    }

    #[test]
    fn the_backend_can_move_between_threads() {
        fn is_send<T: Send>() {}
        is_send::<CudaBackend>();
    }

    #[test]
    fn render_blocks_take_fewer_tiles_where_the_frame_is_small() {
        // whitted19's bands of 1,024 rows on an H100 (132 SMs x 7 blocks):
        // 65,536 one-tile blocks fill the device 71 times.
        assert_eq!(tiles_per_block(8, 65_536, 924, 8), 8);
        // 1920 x 1080 in one band: 16,200 one-tile blocks, 17.5 fills.
        assert_eq!(tiles_per_block(8, 16_200, 924, 8), 2);
        // 512 x 512: 2,048 blocks, fewer than 8 fills: one tile a block.
        assert_eq!(tiles_per_block(8, 2_048, 924, 8), 1);
        assert_eq!(tiles_per_block(8, 0, 924, 8), 1);
        // No floor: the most, whatever the frame; never 0.
        assert_eq!(tiles_per_block(8, 2_048, 924, 0), 8);
        assert_eq!(tiles_per_block(0, 65_536, 924, 8), 1);
        assert_eq!(tiles_per_block(4, u64::MAX, 0, u32::MAX), 4);
    }

    #[test]
    fn small_frames_are_one_band() {
        let p = plan_bands(1280, 720, 16, &params(0, 30, 50), 8);
        assert_eq!(
            p,
            BandPlan {
                rows: 720,
                bands: 1,
                window: 1
            }
        );
    }

    #[test]
    fn large_frames_are_split_by_bytes_and_enqueued_at_once() {
        let p = plan_bands(8192, 8192, 4, &params(1, 1, 1), 8);
        assert_eq!(p.bands, 8);
        assert_eq!(p.rows, 1024);
        assert_eq!(p.window, 8);
    }

    #[test]
    fn heavy_frames_are_split_by_work_with_a_short_window() {
        let p = plan_bands(1920, 1080, 16, &params(0, 4096, 50), 8);
        assert!(p.bands > 8, "{p:?}");
        assert_eq!(p.window, 2);
        assert_eq!(p.rows % 8, 0);
        assert!(p.rows * p.bands >= 1080 && p.rows * (p.bands - 1) < 1080);
    }

    #[test]
    fn bands_cover_tiny_images() {
        for h in [1, 2, 7, 8, 9] {
            let p = plan_bands(3, h, 16, &params(0, 1, 1), 8);
            assert!(p.rows >= 1 && p.rows * p.bands >= h, "{h}: {p:?}");
        }
    }

    #[test]
    fn tall_frames_keep_each_launch_within_the_grid_limit() {
        for (width, height, tile_h) in [(64, 65536, 1), (64, 200_000, 1), (8, 1 << 20, 4)] {
            let p = plan_bands(width, height, 4, &params(1, 1, 1), tile_h);
            assert!(p.rows.div_ceil(tile_h) <= MAX_GRID_Y, "{height}: {p:?}");
            assert_eq!(p.rows % tile_h, 0, "{height}: {p:?}");
            assert!(p.rows * p.bands >= height, "{height}: {p:?}");
            assert!(p.rows * (p.bands - 1) < height, "{height}: {p:?}");
        }
    }

    #[test]
    fn parallel_copy_copies_everything() {
        let src: Vec<u8> = (0..(40usize << 20)).map(|i| (i * 7 % 251) as u8).collect();
        let mut dst = vec![0u8; src.len()];
        parallel_copy(&mut dst, &src);
        assert!(dst == src);
        let mut small = vec![0u8; 100];
        parallel_copy(&mut small, &src[..100]);
        assert_eq!(small, src[..100]);
    }
}
