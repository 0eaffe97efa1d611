//! `prism_wgpu` (package `prism-rt-wgpu`): the wgpu backend of Prism.
//!
//! Runs prism-core's traversal and integrators as WGSL compute shaders on any
//! Vulkan, Metal or DX12 adapter, headless (no window, no surface), including
//! software adapters such as Mesa's lavapipe when asked for. The shaders in
//! `backend-wgpu/shaders/` mirror prism-core function by function (same names,
//! same operation order, see [`shaders`]); the buffers are prism-core's
//! [`prism_core::gpu`] structs, uploaded as raw bytes.
//!
//! - `set_scene` builds the BVH with [`prism_core::Accel::build_with`], large
//!   scenes' subtrees on rayon's pool (the same tree on every backend and for
//!   any thread count), and uploads it once. The shaders are compiled per kind
//!   of scene ([`ModuleConfig`]): a scene of spheres runs no triangle code, and
//!   the traversal stack is as long as the tree is deep. A flat triangle
//!   scene asking for the fast tree ([`prism_core::BuildQuality::Fast`]) has
//!   it built on the device instead (`shaders/fast_build.wgsl`, core's tree
//!   node for node; [`WgpuBackend::time_fast_build`] times it alone), and so
//!   is the clustered tree ([`prism_core::BuildQuality::Clustered`],
//!   `shaders/clustered_build.wgsl`; [`WgpuBackend::time_device_build`]).
//! - `render` runs one fused kernel per pixel, specialised per integrator, and
//!   writes the image's own [`prism_core::PixelFormat`] on the device (sRGB
//!   8-bit pixels through core's `Srgb8Table`, uploaded once and looked up in
//!   the shader). Workgroups of large frames take several tiles; on hardware
//!   adapters with subgroups, path frames run on persistent subgroups whose
//!   lanes share a pixel's samples ([`WgpuOptions::persistent_path`]), with the
//!   same pixels.
//! - `intersect` / `occluded` trace ray batches; on hardware adapters with
//!   subgroup operations, with lane refill ([`WgpuOptions::lane_refill`]).
//!   Ray masks apply (a flat scene is one instance of mask `0xFF`).
//! - Two-level scenes (instances): the geometries' trees, the instance
//!   records and the tree over the instances share the `nodes` buffer, and
//!   one walk in `shaders/two_level.wgsl` goes through both levels (modules
//!   of such scenes are compiled apart, [`ModuleConfig::two_level`]).
//!   `update_scene` uploads only what changed: the changed range of instance
//!   records, the top tree when rebuilt, refit geometries' slots and nodes
//!   (refit on the host); after a geometry's rebuild, the whole scene.
//! - Frames and batches are split into chunks that respect the adapter's
//!   storage-binding, buffer and dispatch limits, so a large image or batch is
//!   split rather than refused. The exceptions fail with
//!   [`Error::DeviceLimit`]: an image one row of which does not fit one storage
//!   binding (or [`WgpuOptions::max_chunk_bytes`]), an image wider than one
//!   dispatch dimension of render tiles covers (65,535 tiles on most
//!   adapters), and a batch when `max_chunk_bytes` is below one ray's bytes.
//! - Stage times come from GPU timestamp queries when the adapter has them
//!   ([`TimingSource::TimestampQueries`]), otherwise from the host clock around
//!   waited submissions ([`TimingSource::HostClock`]; also for a call where a
//!   timestamp reading was zero or implausible, as some drivers give).
//! - Device errors are caught with error scopes and a device-lost callback and
//!   returned as [`Error`]; after a lost device every call says the backend must
//!   be recreated.
//!
//! # Inside an engine
//!
//! An engine that owns a wgpu device (Bevy's render device, or its own)
//! builds Prism on it with [`WgpuBackend::from_device`]: Prism opens no
//! second device, and its shaders, pipelines and buffers are freed when the
//! backend is dropped while the device lives on. The engine then keeps its
//! rays and answers on the GPU:
//!
//! 1. its own compute pass writes rays into a buffer of its own, in the
//!    layout of [`prism_core::Ray`] (48 bytes: `(origin, tmin)`,
//!    `(dir, tmax)`, `(mask, 0, 0, 0)`);
//! 2. [`WgpuBackend::record_intersect`] records the closest-hit dispatches
//!    into the engine's `CommandEncoder`, writing [`prism_core::Hit`]s (32
//!    bytes) into another of its buffers; [`WgpuBackend::record_occluded`]
//!    writes one `u32` a ray (1: occluded) for shadow and visibility rays;
//! 3. its next pass reads the hits, and it submits the encoder once.
//!
//! Prism submits nothing and reads nothing back in these calls. The buffers
//! need `wgpu::BufferUsages::STORAGE`, offsets on the device's storage
//! alignment, whole records and room for the count; a buffer that breaks a
//! rule is refused with [`Error::ResourceUnfit`] naming it and the
//! [`prism_core::ResourceProblem`], before anything is recorded. Flat and
//! two-level scenes are traced alike; `set_scene` and `update_scene` upload
//! on the shared queue, so submit recorded work before changing the scene.
//! `examples/engine.rs` is a whole frame: camera rays, Prism's trace and
//! shading in one submission, checked against the CPU backend.
//!
//! ```no_run
//! # fn frame(device: &wgpu::Device, queue: &wgpu::Queue, rays: &wgpu::Buffer, hits: &wgpu::Buffer, n: u32)
//! # -> Result<(), prism_core::Error> {
//! use prism_core::Backend;
//! use prism_wgpu::{WgpuBackend, WgpuOptions};
//!
//! # let scene = prism_core::Scene::new();
//! let mut prism = WgpuBackend::from_device(device.clone(), queue.clone(), WgpuOptions::default())?;
//! prism.set_scene(&scene)?;
//! let mut encoder = device.create_command_encoder(&Default::default());
//! // ... the engine's pass writing `n` rays into `rays` ...
//! prism.record_intersect(&mut encoder, rays.slice(..), hits.slice(..), n)?;
//! // ... the engine's pass reading the hits ...
//! queue.submit([encoder.finish()]);
//! # Ok(())
//! # }
//! ```
//!
//! Frames go the same way: [`WgpuBackend::record_render`] records a frame
//! into the engine's encoder and stores it in the engine's storage texture
//! (`Rgba8Unorm` takes the sRGB-encoded bytes of
//! [`prism_core::PixelFormat::Srgba8`], `Rgba16Float` and `Rgba32Float` the
//! linear values), through a small pass from Prism's own buffer, so the
//! engine shows it without a readback.
//!
//! # A frame from the host
//!
//! ```no_run
//! use prism_core::{Backend, Camera, Image, Material, NoProgress, PixelFormat, RenderSettings, Scene};
//! use prism_core::glam::Vec3;
//! use prism_wgpu::{WgpuBackend, WgpuOptions};
//!
//! let mut scene = Scene::new();
//! let grey = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
//! scene.add_sphere(Vec3::ZERO, 1.0, grey);
//! let mut gpu = WgpuBackend::new(WgpuOptions::default())?;
//! gpu.set_scene(&scene)?;
//! let camera = Camera::look_at(Vec3::new(0.0, 0.0, 4.0), Vec3::ZERO, Vec3::Y, 40.0);
//! let mut image = Image::new(64, 48, PixelFormat::Srgba8)?;
//! let stats = gpu.render(&camera, &RenderSettings::default(), &mut image, &NoProgress)?;
//! println!("{} rays in {:?} ({:?})", stats.rays, stats.trace, stats.timing);
//! # Ok::<(), prism_core::Error>(())
//! ```

#![deny(missing_docs)]

pub mod shaders;

// The backend by concern: finding adapters and opening the device, turning
// device errors into `Error`s, shader modules and pipelines, buffers,
// submissions and their timing, the scene's upload, a two-level scene's
// layout on the device and its updates, and the two kinds of work (frames and
// ray batches). This file keeps the public types and the `Backend`
// impl, which hands each call to its module.
mod adapter;
mod batch;
mod buffers;
mod camera_masks;
mod clustered_build;
mod device;
mod errors;
mod fast_build;
mod levels;
mod pipelines;
mod render;
mod render_target;
mod resident;
mod submit;
mod update;
mod upload;

pub use adapter::{AdapterSummary, adapters};
pub use fast_build::DeviceTree;
pub use shaders::{
    DIVISION_F64, MAX_STACK_ENTRIES, ModuleConfig, REFILL, SHADER_FILES, ShaderSource, SourcePatch,
};

use adapter::summary;
use buffers::Reusable;
use device::Lifecycle;
use pipelines::Kernel;
use prism_core::backend::check_batch;
use prism_core::{
    Accel, Backend, BackendInfo, Camera, Error, GeometrySah, Hit, Image, Progress, Ray,
    RenderSettings, RenderStats, Scene, SceneUpdate, TimingSource, TreeBytes, UpdateStats,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use submit::{SLOTS, Timestamps};
use upload::SceneState;

/// The name this backend reports.
pub const BACKEND_NAME: &str = "wgpu";

/// Bytes of one ray in a batch buffer ([`prism_core::gpu::GpuRay`], the
/// bytes of a [`Ray`]).
const RAY_BYTES: u64 = size_of::<Ray>() as u64;
/// Bytes of one hit in the `intersect` output ([`Hit`]).
const HIT_BYTES: u64 = size_of::<Hit>() as u64;
const _: () = assert!(RAY_BYTES == size_of::<prism_core::gpu::GpuRay>() as u64);
/// Bytes of one occlusion flag in the `occluded` output (a `u32`).
const FLAG_BYTES: u64 = 4;
/// Size of the per-chunk uniform (`Chunk` in entry.wgsl).
const CHUNK_UNIFORM_BYTES: u64 = 16;
/// Slots of the render shaders' ray tally (a power of two): each workgroup
/// adds its rays to slot `workgroup % RAY_TALLY_SLOTS`, and the host sums the
/// slots after the dispatch. With one shared count every workgroup's atomics
/// waited for the ones before (entry.wgsl, `count_rays`).
const RAY_TALLY_SLOTS: u64 = 256;
// The shaders pick a slot with a mask.
const _: () = assert!(RAY_TALLY_SLOTS.is_power_of_two());
/// Bytes of the ray tally: a 64-bit count a slot, as two `u32` words.
const RAY_TALLY_BYTES: u64 = RAY_TALLY_SLOTS * 8;
/// Bytes of the buffer that holds the ray tally and, in the word after it, the
/// persistent path kernels' piece counter (path_pieces.wgsl).
const RAY_COUNT_BYTES: u64 = RAY_TALLY_BYTES + 16;

/// How to choose and drive the adapter.
pub struct WgpuOptions {
    /// Accept a software adapter (`DeviceType::Cpu`, e.g. lavapipe
    /// "llvmpipe (Vulkan, Cpu)") when no hardware adapter exists. A hardware
    /// adapter is always preferred.
    pub allow_software: bool,
    /// Only consider adapters whose name contains this text (case-insensitive).
    pub adapter_name: Option<String>,
    /// Rewrite shader files before compilation (see [`SourcePatch`]).
    pub source_patch: Option<SourcePatch>,
    /// Use GPU timestamp queries for stage times when the adapter has them.
    pub timestamps: bool,
    /// Cap on the bytes one dispatch binds for its rays or output, below the
    /// adapter's own limits (tests use it to exercise the splitting). `None`:
    /// the adapter's limits alone.
    pub max_chunk_bytes: Option<u64>,
    /// Pixel samples per submission of a render (progress and cancellation
    /// happen between submissions). `None`: 2^26 on hardware, 2^18 on a
    /// software adapter.
    pub samples_per_submit: Option<u64>,
    /// Render workgroup size in pixels, `(x, y)`; default 16x8 (of 8x4, 8x8,
    /// 16x8 and 16x16, the fastest on an H100 for `rtiow` and `whitted19`;
    /// see bench/RESULTS.md).
    pub render_tile: (u32, u32),
    /// Rays per workgroup of `intersect` / `occluded`; default 64.
    pub batch_workgroup: u32,
    /// Where the adapter has 64-bit floats (`wgpu::Features::SHADER_F64`),
    /// divide through f64 in each ray's set-up (inverse direction, shear), so
    /// that it is correctly rounded as core's is: every box and triangle a ray
    /// enters is then the one core's traversal enters (WGSL's own f32 division
    /// may be off by 2.5 ulp, which moves rays through shared edges to the
    /// other triangle). Default `true`.
    pub f64_division: bool,
    /// Where a hardware adapter has subgroup operations
    /// (`wgpu::Features::SUBGROUP`), run `intersect` and `occluded` with lane
    /// refill (shaders/refill.wgsl):
    /// a subgroup's finished lanes take new rays while the others go on, so
    /// incoherent batches do not wait for each subgroup's longest ray. Same
    /// results either way. Used only where `batch_workgroup` is a multiple of
    /// the adapter's largest subgroup size, so that every subgroup is full
    /// ([`WgpuBackend::lane_refill`] says whether it is). Default `true`.
    pub lane_refill: bool,
    /// Split large frames and batches into bands with two submissions in
    /// flight, so that moving one band between host and device overlaps
    /// tracing the next (needs timestamp queries, so that the bands' trace
    /// times do not overlap). Doubles the rate of a whole `intersect` call on
    /// millions of rays; each band's dispatch has its own tail, which costs
    /// some trace time. Default `true`.
    pub overlap_transfers: bool,
    /// Walk core's cell grid ([`prism_core::cell_grid`]) for the render
    /// kernels' closest hits on flat scenes where core's cost model picks it
    /// ([`ModuleConfig::cell_grid`]); `false` walks the tree for them too.
    /// Same pixels either way (but where two primitives tie at exactly the
    /// same distance); `false` is there to measure the grid. Default `true`.
    pub cell_grid: bool,
    /// Let the Whitted and AO render kernels' camera rays, first mirror rays
    /// and shadow rays from camera hits test only their tile's candidates
    /// ([`prism_core::camera_bounds`], `shaders/camera_masks.wgsl`) on
    /// frames of a pinhole camera over a flat scene of at most
    /// [`prism_core::camera_bounds::CAMERA_BOUNDS_MAX_PRIMS`] primitives, as
    /// the CUDA backend's; `false` walks the tree for them. Same pixels
    /// either way (but where two primitives tie at exactly the same
    /// distance); `false` is there to measure the masks. Default `true`.
    pub camera_masks: bool,
    /// Where lane refill runs (the adapter has subgroups of at most 128
    /// lanes), render the path integrator by persistent subgroups that take
    /// pieces of the frame from a counter, two lanes sharing a pixel's
    /// samples (shaders/path_pieces.wgsl), as the CUDA backend's path
    /// kernels do; [`WgpuBackend::persistent_path`] says whether it does.
    /// Same pixels either way; `false` is there to measure it. Default `true`.
    pub persistent_path: bool,
    /// Where the persistent path kernels run, render the AO integrator by
    /// persistent subgroups too: a subgroup takes a piece of pixels, traces
    /// their camera rays and spreads the AO rays of those it hit over all its
    /// lanes, so a frame ends within a few AO rays of its last piece's start
    /// instead of its slowest workgroup's (the CUDA backend's
    /// `KernelConfig::persistent_ao`), on flat scenes (a two-level scene's AO
    /// frames run the tile kernel, which is faster there). Same pixels either
    /// way; `false` is there to measure it. Default `true`.
    pub persistent_ao: bool,
}

impl Default for WgpuOptions {
    fn default() -> Self {
        Self {
            allow_software: false,
            adapter_name: None,
            source_patch: None,
            timestamps: true,
            max_chunk_bytes: None,
            samples_per_submit: None,
            render_tile: (16, 8),
            batch_workgroup: 64,
            f64_division: true,
            lane_refill: true,
            overlap_transfers: true,
            cell_grid: true,
            camera_masks: true,
            persistent_path: true,
            persistent_ao: true,
        }
    }
}

impl std::fmt::Debug for WgpuOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WgpuOptions")
            .field("allow_software", &self.allow_software)
            .field("adapter_name", &self.adapter_name)
            .field("source_patch", &self.source_patch.as_ref().map(|_| "<fn>"))
            .field("timestamps", &self.timestamps)
            .field("max_chunk_bytes", &self.max_chunk_bytes)
            .field("samples_per_submit", &self.samples_per_submit)
            .field("render_tile", &self.render_tile)
            .field("batch_workgroup", &self.batch_workgroup)
            .field("f64_division", &self.f64_division)
            .field("lane_refill", &self.lane_refill)
            .field("overlap_transfers", &self.overlap_transfers)
            .field("cell_grid", &self.cell_grid)
            .field("camera_masks", &self.camera_masks)
            .field("persistent_path", &self.persistent_path)
            .field("persistent_ao", &self.persistent_ao)
            .finish()
    }
}

/// The wgpu backend. See the crate docs.
///
/// `Send`, so a `Box<dyn Backend + Send>` can hold it.
pub struct WgpuBackend {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    limits: wgpu::Limits,
    software: bool,
    /// Compiled modules by configuration (one per kind of scene met).
    modules: HashMap<ModuleConfig, wgpu::ShaderModule>,
    /// The configuration before any scene narrows it.
    config: ModuleConfig,
    /// The module for `config`, as compiled.
    source: ShaderSource,
    patch: Option<SourcePatch>,
    scene_layout: wgpu::BindGroupLayout,
    work_layout: wgpu::BindGroupLayout,
    pipeline_layout: wgpu::PipelineLayout,
    pipelines: HashMap<(Kernel, ModuleConfig), wgpu::ComputePipeline>,
    params: wgpu::Buffer,
    chunk: wgpu::Buffer,
    ray_count: wgpu::Buffer,
    ray_count_readback: [wgpu::Buffer; SLOTS],
    dummy_rays: wgpu::Buffer,
    /// prism_core's `Srgb8Table` (scene group, binding 5).
    srgb8: wgpu::Buffer,
    timestamps: Option<Timestamps>,
    rays_buf: Reusable,
    out_buf: Reusable,
    readback_buf: [Reusable; SLOTS],
    /// The output of frames recorded into a caller's encoder.
    frame_buf: Reusable,
    /// A frame's tile candidate masks (camera_masks.wgsl).
    masks_buf: Reusable,
    /// The passes storing recorded frames into textures, by WGSL format.
    store_pipelines: HashMap<&'static str, render_target::StorePipeline>,
    scene: Option<SceneState>,
    /// The device build's pipelines ([`BuildQuality::Fast`](prism_core::BuildQuality)),
    /// compiled on first use.
    fast_pipelines: Option<fast_build::FastPipelines>,
    /// The device build's arrays, kept for the next build of a mesh of the
    /// same size.
    fast_scratch: Option<fast_build::FastScratch>,
    max_chunk_bytes: u64,
    samples_per_submit: u64,
    render_tile: (u32, u32),
    batch_workgroup: u32,
    overlap_transfers: bool,
    /// [`WgpuOptions::persistent_path`], where the module has subgroups.
    persistent_path: bool,
    /// [`WgpuOptions::persistent_ao`], where the persistent path kernels run.
    persistent_ao: bool,
    /// [`WgpuOptions::cell_grid`].
    cell_grid: bool,
    /// [`WgpuOptions::camera_masks`].
    camera_masks: bool,
    /// A frame's cones for the tile masks (`FrameCones` of entry.wgsl, scene
    /// group binding 7), written before each frame that reads them.
    frame_cones: wgpu::Buffer,
    f64_division: bool,
    lost: Arc<Mutex<Option<String>>>,
    uncaptured: Arc<Mutex<Vec<String>>>,
    /// Taken when the backend is dropped and released after every other field
    /// (fields drop in declaration order): the device's teardown runs under
    /// [`Lifecycle`].
    teardown: Option<Lifecycle>,
}

impl Drop for WgpuBackend {
    fn drop(&mut self) {
        self.teardown = Some(Lifecycle::acquire());
    }
}

impl WgpuBackend {
    /// The adapter in use.
    pub fn adapter(&self) -> AdapterSummary {
        summary(&self.info)
    }

    /// The device Prism runs on: its own, or the caller's when built with
    /// [`WgpuBackend::from_device`] (then equal to the one given).
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The queue Prism submits its own calls' work to (the caller's with
    /// [`WgpuBackend::from_device`]).
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// The device limits in force (the adapter's own, or a shared device's).
    pub fn limits(&self) -> &wgpu::Limits {
        &self.limits
    }

    /// Whether the intersection tests divide through f64, correctly rounded
    /// (see [`WgpuOptions::f64_division`]).
    pub fn f64_division(&self) -> bool {
        self.f64_division
    }

    /// What the shaders in use are specialised for: the adapter's
    /// configuration narrowed to the current scene (see [`ModuleConfig`]).
    pub fn module_config(&self) -> ModuleConfig {
        self.scene.as_ref().map_or(self.config, |s| s.config)
    }

    /// Whether `intersect` and `occluded` run with lane refill (see
    /// [`WgpuOptions::lane_refill`]).
    pub fn lane_refill(&self) -> bool {
        self.config.lane_refill
    }

    /// The adapter's largest subgroup size (0 where it reports none); lane
    /// refill is used only where `batch_workgroup` is a multiple of it.
    pub fn subgroup_max_size(&self) -> u32 {
        self.info.subgroup_max_size
    }

    /// Whether path frames are rendered by persistent subgroups (see
    /// [`WgpuOptions::persistent_path`]).
    pub fn persistent_path(&self) -> bool {
        self.persistent_path
    }

    /// Whether AO frames of flat scenes are rendered by persistent subgroups
    /// (see [`WgpuOptions::persistent_ao`]).
    pub fn persistent_ao(&self) -> bool {
        self.persistent_ao
    }

    /// Whether a frame of `integrator` runs a persistent kernel
    /// (shaders/path_pieces.wgsl): the path kernels', or the AO kernels' on a
    /// flat scene. A two-level scene's AO frames keep the tile kernel: with
    /// the two-level walk's state in every lane the shared AO rays' kernel
    /// ran them slower on an H200 wherever an AO frame is cheap (the built-in
    /// `instances` scene, 1920x1080, 1, 4 and 16 AO rays with shadows, each
    /// pixel's shadow ray through its AO rays' walk call in both kernels:
    /// 3.99 / 3.20, 7.18 / 6.60, 19.43 / 20.15 ms; bench/RESULTS.md).
    pub(crate) fn path_pieces(&self, integrator: u32, two_level: bool) -> bool {
        (self.persistent_path && integrator == prism_core::Integrator::Path as u32)
            || (self.persistent_ao && !two_level && integrator == prism_core::Integrator::Ao as u32)
    }

    /// Where stage times come from on this adapter.
    pub fn timing_source(&self) -> TimingSource {
        if self.timestamps.is_some() {
            TimingSource::TimestampQueries
        } else {
            TimingSource::HostClock
        }
    }

    /// Largest number of bytes one dispatch binds for rays or output.
    pub fn max_chunk_bytes(&self) -> u64 {
        self.max_chunk_bytes
    }

    /// The assembled WGSL module as compiled (after any source patch).
    pub fn shader_source(&self) -> &ShaderSource {
        &self.source
    }

    /// The scene as traced, once `set_scene` succeeded.
    pub fn accel(&self) -> Option<&Accel> {
        self.scene.as_ref().map(|s| &s.accel)
    }
}

impl Backend for WgpuBackend {
    fn info(&self) -> BackendInfo {
        let a = self.adapter();
        BackendInfo {
            name: BACKEND_NAME,
            device: format!("{} ({}, {}, {})", a.name, a.api, a.device_type, a.driver),
            // set_scene refuses a buffer past the binding limit, which on
            // Vulkan is below max_buffer_size.
            max_buffer_bytes: self
                .limits
                .max_buffer_size
                .min(self.limits.max_storage_buffer_binding_size),
            software: self.software,
        }
    }

    fn set_scene(&mut self, scene: &Scene) -> Result<RenderStats, Error> {
        let start = Instant::now();
        self.check_usable("set_scene")?;
        // Build before touching the old scene: a bad scene leaves the backend as it was.
        // A flat triangle scene asking for the fast tree builds it on the
        // device (fast_build.rs): `build` is then the device's build time, and
        // the rest (validation, the tree's way back, the host's Accel) counts
        // in `total`. Otherwise the BVH's subtrees are built on rayon's global
        // pool (the same tree as a one-thread build).
        let (accel, build_ms, timing) = self.scene_accel(scene)?;
        let build = std::time::Duration::from_secs_f64(build_ms / 1e3);
        let upload_start = Instant::now();
        let state = self.guarded("set_scene", |this| this.upload_scene(accel))?;
        self.scene = Some(state);
        Ok(RenderStats {
            build,
            upload: upload_start.elapsed(),
            total: start.elapsed(),
            // The build's: the device build's timestamps where it ran on the
            // device (upload and total are the host clock's either way).
            timing,
            ..Default::default()
        })
    }

    fn render(
        &mut self,
        camera: &Camera,
        settings: &RenderSettings,
        image: &mut Image,
        progress: &dyn Progress,
    ) -> Result<RenderStats, Error> {
        self.guarded("render", |this| {
            this.render_inner(camera, settings, image, progress)
        })
    }

    fn intersect(&mut self, rays: &[Ray], hits: &mut [Hit]) -> Result<RenderStats, Error> {
        check_batch("intersect", rays, hits.len())?;
        self.guarded("intersect", |this| {
            this.batch_inner(Kernel::Intersect, rays, HIT_BYTES, |first, bytes| {
                let n = bytes.len() / HIT_BYTES as usize;
                let dst: &mut [u8] = bytemuck::cast_slice_mut(&mut hits[first..first + n]);
                dst.copy_from_slice(bytes);
            })
        })
    }

    fn occluded(&mut self, rays: &[Ray], occluded: &mut [bool]) -> Result<RenderStats, Error> {
        check_batch("occluded", rays, occluded.len())?;
        self.guarded("occluded", |this| {
            this.batch_inner(Kernel::Occluded, rays, FLAG_BYTES, |first, bytes| {
                let flags: &[u32] = bytemuck::cast_slice(bytes);
                for (o, f) in occluded[first..first + flags.len()].iter_mut().zip(flags) {
                    *o = *f != 0;
                }
            })
        })
    }

    /// Core applies the update to the host's scene and says what changed;
    /// only that goes to the device (see the crate docs). An error of the
    /// update itself leaves the scene as it was. Should the device fail
    /// after the host's scene changed (out of memory while the instance
    /// records outgrow their buffer, a lost device), the scene is dropped,
    /// and later calls say [`Error::NoScene`] until the next `set_scene`.
    fn update_scene(&mut self, update: &SceneUpdate) -> Result<UpdateStats, Error> {
        let mut applied = false;
        let result = self.guarded("update_scene", |this| {
            this.update_inner(update, &mut applied)
        });
        if result.is_err() && applied {
            self.scene = None;
        }
        result
    }

    fn geometry_sah(&mut self, geometry: u32) -> Option<GeometrySah> {
        self.geometry_sah_inner(geometry)
    }

    /// Core's tree as uploaded (nodes, primitive records, slot materials,
    /// instance records, heightfields); the octant copies of small flat trees,
    /// the light grid and the cell grid are not counted.
    fn tree_bytes(&self) -> Vec<TreeBytes> {
        self.scene.iter().map(|s| s.accel.tree_bytes()).collect()
    }
}

// The facade keeps backends as `Box<dyn Backend + Send>`.
const _: fn() = || {
    fn is_send<T: Send>() {}
    is_send::<WgpuBackend>();
};
impl WgpuBackend {
    /// Destroy the device as a driver reset would: every later call returns
    /// [`Error::Device`] saying the backend must be recreated. For tests of
    /// device-loss handling.
    #[doc(hidden)]
    pub fn lose_device_for_testing(&self) {
        let _lifecycle = Lifecycle::acquire();
        self.device.destroy();
    }
}
