//! [`CudaBackend`]: the [`Backend`] trait on an NVIDIA GPU.
//!
//! This module holds the public type, its options and result types, how a
//! backend is opened (kernels compiled or taken from the disk cache), how it
//! recovers its context after a kernel fault, and the [`Backend`] impl, which
//! hands each call to the submodule of its concern:
//!
//! - [`device`]: the CUDA context and everything in it, scratch buffer growth;
//! - [`upload`]: the scene's buffers and `set_scene`;
//! - [`levels`]: a two-level scene's instance level and refit data;
//! - [`refit`]: how the device refits a mesh's tree (host arithmetic);
//! - [`update`]: `update_scene` and `geometry_sah`;
//! - [`bands`]: how a frame is split into launches (host arithmetic);
//! - [`render`]: camera masks, render launches, frame download and times;
//! - [`batch`]: `intersect` / `occluded` batches, resident batches and the
//!   resident benchmark.

mod bands;
mod batch;
mod clustered_build;
mod device;
mod fast_build;
mod levels;
mod refit;
mod render;
mod top_build;
mod update;
mod upload;

use self::device::DeviceState;
pub use self::fast_build::DeviceTree;
use crate::cache;
use crate::driver::{self, BACKEND, CtxGuard, Device, DeviceProps};
use crate::kernels::{
    self, CAMERA_MASKS_THREADS, CompiledKernels, KERNEL_BASES, KERNEL_CAMERA_MASKS,
    KERNEL_HEIGHTFIELDS_ONLY, KERNEL_NAMES, KERNEL_REFIT_BOXES, KERNEL_REFIT_SLOTS, KernelConfig,
    PtxasReport, REFIT_THREADS, SceneKind, SourcePatch,
};
use crate::nvrtc;
use cudarc::driver::sys;
use prism_core::backend::check_batch;
use prism_core::{
    Accel, Backend, BackendInfo, Camera, Error, GeometrySah, Hit, Image, Progress, Ray,
    RenderSettings, RenderStats, Scene, SceneUpdate, TreeBytes, UpdateStats,
};

/// Largest number of rays one `intersect`/`occluded` launch takes; bigger
/// batches are traced in chunks of this size.
pub const MAX_LAUNCH_RAYS: usize = 1 << 22;

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
    /// Place a frame that only moves instances on the device: the moved
    /// records and world boxes and the tree over the instances built by
    /// kernels (scenes whose top tree is built by Morton codes, see
    /// `prism_core::placement`), instead of by the host and uploaded. The
    /// same records and tree either way; `false` measures the host's path.
    pub top_on_device: bool,
}

impl Default for CudaOptions {
    fn default() -> Self {
        Self {
            device: 0,
            config: KernelConfig::default(),
            source_patch: None,
            disk_cache: true,
            cache_dir: None,
            top_on_device: true,
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
    /// The device idle between the upload and the first kernel, waiting for
    /// the host to launch it (not in `kernel_ms`).
    pub launch_wait_ms: f64,
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
        if let Some(accel) = self.accel.as_mut() {
            // Trees refit and moves placed on the lost device are worked out
            // on the host first.
            accel.try_refresh()?;
            let _g = st.ctx.enter()?;
            st.upload_scene(accel, &self.options.config)?;
        }
        self.state = Some(st);
        self.lost = None;
        Ok(())
    }

    /// The device state with its context current. A scene the device lost
    /// while the host kept it (an update whose upload failed) is uploaded
    /// whole first.
    fn enter(&mut self) -> Result<(&mut DeviceState, CtxGuard), Error> {
        self.ensure_state()?;
        let st = self.state.as_mut().ok_or(Error::Device {
            backend: BACKEND,
            operation: "enter",
            message: "no device state".into(),
        })?;
        let g = st.ctx.enter()?;
        if st.scene.is_none()
            && let Some(accel) = self.accel.as_mut()
        {
            accel.try_refresh()?;
            st.upload_scene(accel, &self.options.config)?;
        }
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

    /// The scene's BVH nodes and primitive slots as the device holds them
    /// (after refits on the device, which the host's
    /// [`prism_core::Accel`] copy lags until refreshed), for tests and
    /// debugging. The nodes are the tree as built, or its eight octant copies
    /// where the render kernels walk those (a small flat tree, see
    /// [`KernelConfig::octant_trees`]).
    pub fn device_scene_arrays(
        &mut self,
    ) -> Result<
        (
            Vec<prism_core::gpu::BvhNode>,
            Vec<prism_core::gpu::Primitive>,
        ),
        Error,
    > {
        let r = self.device_scene_arrays_inner();
        self.checked(r)
    }

    fn device_scene_arrays_inner(
        &mut self,
    ) -> Result<
        (
            Vec<prism_core::gpu::BvhNode>,
            Vec<prism_core::gpu::Primitive>,
        ),
        Error,
    > {
        let (st, _g) = self.enter()?;
        st.scene_arrays()
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
                k.render_instances[0],
                k.render_instances[1],
                k.render_instances[2],
                k.intersect_instances,
                k.occluded_instances,
                k.render[3],
                k.render_octants[3],
                k.render_grid[3],
                k.render_instances[3],
            ];
            for (b, f) in fs.into_iter().enumerate() {
                // Bases 3, 4, 14 and 15 are the batch kernels; 0, 5, 8 and
                // 11 the path kernels: the tree's, the octant copies', the
                // grid's, the instances'; 16 to 19 the same with the sun.
                let threads = if matches!(b, 3 | 4 | 14 | 15) {
                    config.trace_threads
                } else if matches!(b, 0 | 5 | 8 | 11 | 16..=19)
                    && config.persistent_rows(0, b == 8 || b == 18)
                {
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
        for (name, (f, _)) in KERNEL_HEIGHTFIELDS_ONLY
            .into_iter()
            .zip(st.kernels.heightfields_only)
        {
            list.push((name, f, config.trace_threads));
        }
        list.push((KERNEL_REFIT_SLOTS, st.kernels.refit_slots, REFIT_THREADS));
        list.push((KERNEL_REFIT_BOXES, st.kernels.refit_boxes, REFIT_THREADS));
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

    /// Keep `rays` on the device, replacing an earlier resident batch, for
    /// [`CudaBackend::trace_resident_rays`]: an engine's rays of a frame
    /// that it traces against scene after scene (the moving-frame benchmark
    /// uploads its rays once and updates the scene between traces). The batch
    /// is checked as `intersect` checks one; it holds at most
    /// [`MAX_LAUNCH_RAYS`] rays and lives as long as the device context (a
    /// kernel fault drops it).
    pub fn set_resident_rays(&mut self, rays: &[Ray]) -> Result<(), Error> {
        let r = self.set_resident_inner(rays);
        self.checked(r)
    }

    /// Trace the resident batch against the current scene: closest hits
    /// (read them with [`CudaBackend::resident_hits`]) or any hits, waiting
    /// for the kernel. Stats: `trace` (CUDA events), `total`, `rays`.
    pub fn trace_resident_rays(&mut self, closest: bool) -> Result<RenderStats, Error> {
        let r = self.trace_resident_inner(closest);
        self.checked(r)
    }

    /// The closest hits of the last closest-hit trace of the resident batch
    /// (scene primitive ids, as [`Backend::intersect`] gives them): the
    /// first `hits.len()` of them.
    pub fn resident_hits(&mut self, hits: &mut [Hit]) -> Result<(), Error> {
        let r = self.resident_hits_inner(hits);
        self.checked(r)
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

    /// Core applies the update to the host's scene (see
    /// [`prism_core::Accel::update_with`], refits left to the device); the
    /// changed instance records, the tree over the instances and new vertices
    /// go to the device, where each mesh with new vertices is refit (its
    /// slots, then its boxes bottom-up). A rebuilt geometry uploads the whole
    /// scene. Stats: `build` the host's part, `upload` the copies and refits
    /// (CUDA events), `total` the call.
    ///
    /// The update's own errors leave the scene as it was. A device failure
    /// after core applied the update (out of device memory while a buffer
    /// grows, a kernel fault) is returned as such; the host's scene then
    /// keeps the update, and the next call uploads it whole.
    fn update_scene(&mut self, update: &SceneUpdate) -> Result<UpdateStats, Error> {
        let r = self.update_scene_inner(update);
        self.checked(r)
    }

    /// Refits made on the device are first repeated on the host's copy
    /// ([`prism_core::Accel::refresh`]), whose tree core measures.
    fn geometry_sah(&mut self, geometry: u32) -> Option<GeometrySah> {
        self.geometry_sah_inner(geometry)
    }

    /// Core's tree as uploaded (nodes, primitive records, slot materials,
    /// instance records, heightfields); the octant copies of small flat trees
    /// and the candidate masks are not counted.
    fn tree_bytes(&self) -> Vec<TreeBytes> {
        self.accel.iter().map(Accel::tree_bytes).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backend_can_move_between_threads() {
        fn is_send<T: Send>() {}
        is_send::<CudaBackend>();
    }
}
