//! The device side of [`CudaBackend`](super::CudaBackend): [`DeviceState`], everything
//! that lives in the backend's CUDA context (module and kernels, streams,
//! events, the scene and the grow-only scratch buffers), how it is created and
//! torn down, and how its scratch buffers grow and are given back when memory
//! runs out. What is uploaded into it and launched on it lives beside it:
//! [`super::upload`], [`super::render`], [`super::batch`].

use super::upload::SceneBuffers;
use crate::driver::{
    BACKEND, Context, Device, DeviceBuffer, DeviceProps, Event, Function, Module, PinnedBuffer,
    Stream,
};
use crate::kernels::{
    CompiledKernels, KERNEL_CAMERA_MASKS, KERNEL_CLUSTERED_BUILD, KERNEL_FAST_BUILD,
    KERNEL_HEIGHTFIELDS_ONLY, KERNEL_INTERSECT, KERNEL_INTERSECT_INSTANCES, KERNEL_OCCLUDED,
    KERNEL_OCCLUDED_INSTANCES, KERNEL_REFIT_BOXES, KERNEL_REFIT_SLOTS, KERNEL_RENDER_AO,
    KERNEL_RENDER_AO_GRID, KERNEL_RENDER_AO_INSTANCES, KERNEL_RENDER_AO_OCTANTS,
    KERNEL_RENDER_PATH, KERNEL_RENDER_PATH_GRID, KERNEL_RENDER_PATH_INSTANCES,
    KERNEL_RENDER_PATH_OCTANTS, KERNEL_RENDER_PATH_SUN, KERNEL_RENDER_PATH_SUN_GRID,
    KERNEL_RENDER_PATH_SUN_INSTANCES, KERNEL_RENDER_PATH_SUN_OCTANTS, KERNEL_RENDER_WHITTED,
    KERNEL_RENDER_WHITTED_GRID, KERNEL_RENDER_WHITTED_INSTANCES, KERNEL_RENDER_WHITTED_OCTANTS,
    KERNEL_TOP_BUILD, KernelConfig, PARAMS_SYMBOL, RAY_TALLY_BYTES, SceneKind, WORK_WORDS,
    kernel_name,
};
use cudarc::driver::sys;
use prism_core::gpu::RenderParams;
use prism_core::image::Srgb8Table;
use prism_core::{Error, Ray};
use std::time::Duration;

/// A batch of rays kept on the device (`CudaBackend::set_resident_rays`),
/// with room for its answers.
pub(super) struct ResidentRays {
    pub(super) rays: DeviceBuffer,
    pub(super) hits: DeviceBuffer,
    pub(super) flags: DeviceBuffer,
    pub(super) count: u32,
}

/// The kernels of the loaded module, for one scene kind.
#[derive(Clone, Copy)]
pub(super) struct KindKernels {
    /// The render kernels by [`crate::kernels::render_variant`]: path,
    /// Whitted, AO, then path with the sun.
    pub(super) render: [Function; 4],
    /// The render kernels on the tree's near-first octant copies (`SceneArgs::octants`).
    pub(super) render_octants: [Function; 4],
    /// The render kernels whose closest hits walk the uniform grid (`SceneArgs::grid_offsets`).
    pub(super) render_grid: [Function; 4],
    pub(super) intersect: Function,
    pub(super) occluded: Function,
    /// Grids of the persistent `intersect` and `occluded` kernels: the blocks
    /// each kernel keeps resident on the whole device. Taken per kernel, so
    /// that the registers of one scene kind's kernels do not thin out the
    /// warps of another's.
    pub(super) intersect_grid: u32,
    pub(super) occluded_grid: u32,
    /// The render kernels of two-level scenes (walks over instances).
    pub(super) render_instances: [Function; 4],
    /// The batch kernels of two-level scenes, and their persistent grids.
    pub(super) intersect_instances: Function,
    pub(super) occluded_instances: Function,
    pub(super) intersect_instances_grid: u32,
    pub(super) occluded_instances_grid: u32,
}

/// The kernels of the loaded module.
pub(super) struct Kernels {
    /// By [`SceneKind`] index.
    pub(super) kinds: [KindKernels; 4],
    /// [`KERNEL_HEIGHTFIELDS_ONLY`]: closest and any hit, with their
    /// persistent grids.
    pub(super) heightfields_only: [(Function, u32); 2],
    /// `prism_camera_masks`: each tile's camera candidates, before a frame.
    pub(super) camera_masks: Function,
    /// `prism_refit_slots` and `prism_refit_boxes`: a mesh's refit on the
    /// device (`update_scene`).
    pub(super) refit_slots: Function,
    pub(super) refit_boxes: Function,
    /// The fast tree's build on the device (`KERNEL_FAST_BUILD`, in order).
    pub(super) fast: [Function; 8],
    /// The clustered tree's build on the device (`KERNEL_CLUSTERED_BUILD`).
    pub(super) clustered: [Function; 7],
    /// The moves' placement and the top tree's first pass (`KERNEL_TOP_BUILD`).
    pub(super) top: [Function; 3],
    pub(super) params_ptr: sys::CUdeviceptr,
}

/// Everything that lives in this backend's CUDA context. Fields drop in order,
/// the context last; `Drop` makes the context current first.
pub(super) struct DeviceState {
    pub(super) scene: Option<SceneBuffers>,
    pub(super) rays: Option<DeviceBuffer>,
    pub(super) outputs: Option<DeviceBuffer>,
    pub(super) frame: Option<DeviceBuffer>,
    pub(super) pinned: Option<PinnedBuffer>,
    /// A pinhole frame's camera candidates, a mask per tile
    /// (`SceneArgs::camera_masks`); grow-only.
    pub(super) camera_masks: Option<DeviceBuffer>,
    /// Where an update's pieces are gathered for their copies (pinned, so
    /// that they copy at full speed and in stream order); grow-only.
    pub(super) staging: Option<PinnedBuffer>,
    /// The arrays of the last fast build on the device, kept for the next
    /// build of a mesh of the same size (a mesh rebuilt every frame): fresh
    /// allocations each time cost more than the build's kernels.
    pub(super) fast_scratch: Option<super::fast_build::Scratch>,
    /// The arrays of the tree over the instances built on the device after
    /// moves ([`super::top_build`]), kept from frame to frame.
    pub(super) top_build: Option<super::top_build::TopBuild>,
    /// The batch of `CudaBackend::set_resident_rays`, traced again and again.
    pub(super) resident: Option<ResidentRays>,
    /// The persistent trace and path kernels' work counters (`WORK_WORDS` `u32`),
    /// zeroed on the stream before each launch that takes from them.
    pub(super) work: DeviceBuffer,
    /// The render kernels' ray tally: `RAY_TALLY_SLOTS` spread `u64` counters,
    /// zeroed before a frame and summed after it (`gpu::ray_tally_sum`).
    pub(super) ray_tally: DeviceBuffer,
    /// prism_core's `Srgb8Table`, which the render kernels encode 8-bit pixels
    /// through (core's bytes exactly); uploaded once per context.
    pub(super) srgb8: DeviceBuffer,
    /// Where the ray tally is read back to.
    pub(super) ray_tally_host: PinnedBuffer,
    pub(super) events: Vec<Event>,
    pub(super) copy_stream: Stream,
    /// Where every other band of an overlapped frame runs
    /// ([`KernelConfig::overlap_bands`]).
    pub(super) band_stream: Stream,
    pub(super) stream: Stream,
    pub(super) kernels: Kernels,
    pub(super) _module: Module,
    pub(super) ctx: Context,
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
    pub(super) fn create(
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
            let intersect_instances = f(KERNEL_INTERSECT_INSTANCES)?;
            let occluded_instances = f(KERNEL_OCCLUDED_INSTANCES)?;
            Ok(KindKernels {
                render: [
                    f(KERNEL_RENDER_PATH)?,
                    f(KERNEL_RENDER_WHITTED)?,
                    f(KERNEL_RENDER_AO)?,
                    f(KERNEL_RENDER_PATH_SUN)?,
                ],
                render_octants: [
                    f(KERNEL_RENDER_PATH_OCTANTS)?,
                    f(KERNEL_RENDER_WHITTED_OCTANTS)?,
                    f(KERNEL_RENDER_AO_OCTANTS)?,
                    f(KERNEL_RENDER_PATH_SUN_OCTANTS)?,
                ],
                render_grid: [
                    f(KERNEL_RENDER_PATH_GRID)?,
                    f(KERNEL_RENDER_WHITTED_GRID)?,
                    f(KERNEL_RENDER_AO_GRID)?,
                    f(KERNEL_RENDER_PATH_SUN_GRID)?,
                ],
                intersect,
                occluded,
                intersect_grid: resident_grid(intersect)?,
                occluded_grid: resident_grid(occluded)?,
                render_instances: [
                    f(KERNEL_RENDER_PATH_INSTANCES)?,
                    f(KERNEL_RENDER_WHITTED_INSTANCES)?,
                    f(KERNEL_RENDER_AO_INSTANCES)?,
                    f(KERNEL_RENDER_PATH_SUN_INSTANCES)?,
                ],
                intersect_instances,
                occluded_instances,
                intersect_instances_grid: resident_grid(intersect_instances)?,
                occluded_instances_grid: resident_grid(occluded_instances)?,
            })
        };
        let kinds = [
            load(SceneKind::Spheres)?,
            load(SceneKind::Triangles)?,
            load(SceneKind::Mixed)?,
            load(SceneKind::Heightfields)?,
        ];
        let [intersect_hf, occluded_hf] = KERNEL_HEIGHTFIELDS_ONLY.map(|name| {
            let f = module.function(name)?;
            Ok::<_, Error>((f, resident_grid(f)?))
        });
        let heightfields_only = [intersect_hf?, occluded_hf?];
        let camera_masks = module.function(KERNEL_CAMERA_MASKS)?;
        let refit_slots = module.function(KERNEL_REFIT_SLOTS)?;
        let refit_boxes = module.function(KERNEL_REFIT_BOXES)?;
        let mut fast = [refit_boxes; 8];
        for (f, name) in fast.iter_mut().zip(KERNEL_FAST_BUILD) {
            *f = module.function(name)?;
        }
        let mut clustered = [refit_boxes; 7];
        for (f, name) in clustered.iter_mut().zip(KERNEL_CLUSTERED_BUILD) {
            *f = module.function(name)?;
        }
        let mut top = [refit_boxes; 3];
        for (f, name) in top.iter_mut().zip(KERNEL_TOP_BUILD) {
            *f = module.function(name)?;
        }
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
            staging: None,
            fast_scratch: None,
            top_build: None,
            resident: None,
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
                heightfields_only,
                camera_masks,
                refit_slots,
                refit_boxes,
                fast,
                clustered,
                top,
                params_ptr,
            },
            _module: module,
            ctx,
        })
    }

    pub(super) fn ensure_events(&mut self, n: usize) -> Result<(), Error> {
        while self.events.len() < n {
            self.events.push(Event::create()?);
        }
        Ok(())
    }

    /// Release the cached batch and frame buffers and the update staging
    /// buffer (they grow back on demand).
    pub(super) fn release_scratch(&mut self) {
        self.rays = None;
        self.outputs = None;
        self.frame = None;
        self.pinned = None;
        self.staging = None;
        self.fast_scratch = None;
        self.top_build = None;
    }

    /// Grow-only scratch buffers for a batch of `n` rays with `out_bytes` of
    /// output per ray. Out of memory, every scratch buffer is freed (the frame
    /// buffers a render left too) and the allocation tried once more; if that
    /// fails too, the call holds no scratch memory.
    pub(super) fn ensure_batch(&mut self, n: usize, out_bytes: usize) -> Result<(), Error> {
        self.retry_without_scratch(|b| b.grow_batch(n, out_bytes))
    }

    /// Grow-only frame buffers: device image and pinned host copy, with the
    /// retry of [`DeviceState::ensure_batch`].
    pub(super) fn ensure_frame(&mut self, bytes: usize) -> Result<(), Error> {
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
}

/// A CUDA event time in milliseconds as a [`Duration`] (negative as zero).
pub(super) fn ms_to_duration(ms: f64) -> Duration {
    Duration::from_secs_f64((ms / 1000.0).max(0.0))
}
