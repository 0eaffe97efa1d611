//! `prism-wgpu`: the wgpu backend of Prism.
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
//!   the traversal stack is as long as the tree is deep.
//! - `render` runs one fused kernel per pixel, specialised per integrator, and
//!   writes the image's own [`prism_core::PixelFormat`] on the device (sRGB
//!   8-bit pixels through core's `Srgb8Table`, uploaded once and looked up in
//!   the shader).
//! - `intersect` / `occluded` trace ray batches; on hardware adapters with
//!   subgroup operations, with lane refill ([`WgpuOptions::lane_refill`]).
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

pub use shaders::{DIVISION_F64, ModuleConfig, REFILL, SHADER_FILES, ShaderSource, SourcePatch};

use prism_core::backend::check_batch;
use prism_core::bvh::RayonFork;
use prism_core::gpu::{BvhNode, RenderParams, check_tree, ray_tally_sum};
use prism_core::image::Srgb8Table;
use prism_core::point_grid::PointGrid;
use prism_core::{
    Accel, Backend, BackendInfo, Camera, Error, Hit, Image, PixelFormat, Progress, Ray,
    RenderSettings, RenderStats, Scene, TimingSource,
};
use std::collections::HashMap;
use std::num::NonZeroU64;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The name this backend reports.
pub const BACKEND_NAME: &str = "wgpu";

/// Bytes of one ray in a batch buffer ([`prism_core::gpu::GpuRay`]).
const RAY_BYTES: u64 = 32;
/// Bytes of one hit in the `intersect` output ([`Hit`]).
const HIT_BYTES: u64 = 16;
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
/// Pixel samples per submission on a hardware adapter: large enough that a
/// 1280x720x30 or an 8192x8192x1 frame is one dispatch that fills any GPU
/// (unless `overlap_transfers` bands a large frame by its output's size),
/// small enough to report progress and honour cancellation on long renders.
const HW_SAMPLES_PER_SUBMIT: u64 = 1 << 26;
/// Pixel samples per submission on a software adapter (about a second of work
/// on two CPU cores).
const SW_SAMPLES_PER_SUBMIT: u64 = 1 << 18;

/// Invocations a lane-refill dispatch launches at most: more than any GPU
/// keeps resident (an H100 holds 270,336), so no multiprocessor idles.
const REFILL_MAX_INVOCATIONS: u64 = 1 << 20;

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
            .finish()
    }
}

/// One adapter as [`adapters`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterSummary {
    /// Adapter name, e.g. "NVIDIA H100 80GB HBM3" or "llvmpipe (LLVM 15.0.6, 256 bits)".
    pub name: String,
    /// Graphics API: Vulkan, Metal, Dx12.
    pub api: String,
    /// Device type: DiscreteGpu, IntegratedGpu, VirtualGpu, Cpu, Other.
    pub device_type: String,
    /// Driver name and version.
    pub driver: String,
    /// Whether this is a software implementation (device type Cpu).
    pub software: bool,
}

impl std::fmt::Display for AdapterSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}, {})", self.name, self.api, self.device_type)
    }
}

fn summary(info: &wgpu::AdapterInfo) -> AdapterSummary {
    AdapterSummary {
        name: info.name.clone(),
        api: format!("{:?}", info.backend),
        device_type: format!("{:?}", info.device_type),
        driver: format!("{} {}", info.driver, info.driver_info)
            .trim()
            .to_string(),
        software: info.device_type == wgpu::DeviceType::Cpu,
    }
}

/// The graphics APIs searched: Vulkan, Metal, DX12 (not GL, whose compute
/// support is partial); the `WGPU_BACKEND` environment variable overrides.
fn searched_backends() -> wgpu::Backends {
    wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY)
}

fn new_instance() -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = searched_backends();
    wgpu::Instance::new(desc)
}

/// Every adapter wgpu finds on this machine (none when no driver is installed).
pub fn adapters() -> Vec<AdapterSummary> {
    // An instance is made and dropped here too, so under the same lock as a
    // backend's (see `Lifecycle`).
    let _lifecycle = Lifecycle::acquire();
    let instance = new_instance();
    pollster::block_on(instance.enumerate_adapters(searched_backends()))
        .iter()
        .map(|a| summary(&a.get_info()))
        .collect()
}

/// Preference among hardware adapters: discrete, integrated, virtual, other.
fn adapter_rank(info: &wgpu::AdapterInfo) -> u32 {
    match info.device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    }
}

/// Which pipeline: the render kernels per integrator and output format, and
/// the two batch kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kernel {
    /// Integrator as `u32`, and whether the output is sRGB 8-bit.
    Render(u32, bool),
    Intersect,
    Occluded,
    /// `intersect` with lane refill (shaders/refill.wgsl).
    IntersectRefill,
    /// `occluded` with lane refill.
    OccludedRefill,
}

impl Kernel {
    fn entry_point(self) -> &'static str {
        match self {
            Kernel::Render(_, false) => "render_linear",
            Kernel::Render(_, true) => "render_srgb8",
            Kernel::Intersect => "intersect_main",
            Kernel::Occluded => "occluded_main",
            Kernel::IntersectRefill => "intersect_refill",
            Kernel::OccludedRefill => "occluded_refill",
        }
    }
}

/// What `set_scene` uploaded.
struct SceneState {
    accel: Accel,
    /// The module configuration for this scene.
    config: ModuleConfig,
    bind_group: wgpu::BindGroup,
    // Kept alive for the bind group.
    _buffers: [wgpu::Buffer; 4],
}

/// GPU timestamp queries at the start and end of each compute pass.
struct Timestamps {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    /// One per submission in flight (see [`SLOTS`]).
    readback: [wgpu::Buffer; SLOTS],
    /// Nanoseconds per tick.
    period: f64,
}

/// A buffer that grows on demand and is reused across calls.
#[derive(Default)]
struct Reusable {
    buffer: Option<wgpu::Buffer>,
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
    scene: Option<SceneState>,
    max_chunk_bytes: u64,
    samples_per_submit: u64,
    render_tile: (u32, u32),
    batch_workgroup: u32,
    overlap_transfers: bool,
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

/// One backend's construction or teardown at a time in this process.
///
/// On an H100 with NVIDIA's driver 580, test processes that created and
/// dropped Vulkan instances and devices on several threads at once hung in
/// about one run in four: the GPU idle, every thread waiting on the driver's
/// own locks. Creating or dropping a backend takes this lock; work on existing
/// backends does not. A held `Lifecycle` releases the lock when dropped (it is
/// `Send`, unlike a `MutexGuard`, so the backend stays `Send`).
struct Lifecycle;

/// Whether some thread holds the [`Lifecycle`], and the signal that it let go.
static LIFECYCLE_BUSY: Mutex<bool> = Mutex::new(false);
static LIFECYCLE_FREE: Condvar = Condvar::new();

impl Lifecycle {
    /// Wait until no other construction or teardown runs, then hold the lock.
    fn acquire() -> Lifecycle {
        let mut busy = LIFECYCLE_BUSY.lock().unwrap_or_else(|p| p.into_inner());
        while *busy {
            busy = LIFECYCLE_FREE.wait(busy).unwrap_or_else(|p| p.into_inner());
        }
        *busy = true;
        Lifecycle
    }
}

impl Drop for Lifecycle {
    fn drop(&mut self) {
        *LIFECYCLE_BUSY.lock().unwrap_or_else(|p| p.into_inner()) = false;
        LIFECYCLE_FREE.notify_one();
    }
}

fn device_error(operation: &'static str, message: impl Into<String>) -> Error {
    Error::Device {
        backend: BACKEND_NAME,
        operation,
        message: message.into(),
    }
}

impl WgpuBackend {
    /// Open the best adapter allowed by `options` and compile the shaders.
    ///
    /// Fails with [`Error::BackendUnavailable`] (listing the adapters seen) when
    /// no acceptable adapter exists, and with [`Error::Compile`] when the WGSL
    /// does not compile (only possible with a [`WgpuOptions::source_patch`]).
    pub fn new(options: WgpuOptions) -> Result<WgpuBackend, Error> {
        // Held until the backend is built (or everything made on the way is dropped).
        let _lifecycle = Lifecycle::acquire();
        let instance = new_instance();
        let all = pollster::block_on(instance.enumerate_adapters(searched_backends()));
        let seen: Vec<String> = all
            .iter()
            .map(|a| summary(&a.get_info()).to_string())
            .collect();
        let seen_text = if seen.is_empty() {
            "no adapters found (is a Vulkan driver and libvulkan1 installed?)".to_string()
        } else {
            format!("adapters seen: {}", seen.join("; "))
        };
        let wanted = |info: &wgpu::AdapterInfo| {
            options
                .adapter_name
                .as_ref()
                .is_none_or(|n| info.name.to_lowercase().contains(&n.to_lowercase()))
        };
        let mut candidates: Vec<wgpu::Adapter> =
            all.into_iter().filter(|a| wanted(&a.get_info())).collect();
        candidates.sort_by_key(|a| adapter_rank(&a.get_info()));
        let adapter = match candidates.into_iter().next() {
            Some(a)
                if a.get_info().device_type != wgpu::DeviceType::Cpu || options.allow_software =>
            {
                a
            }
            Some(_) => {
                return Err(Error::BackendUnavailable {
                    backend: BACKEND_NAME,
                    reason: format!(
                        "no hardware GPU adapter, only software ones ({seen_text}); set allow_software (PRISM_BACKEND=wgpu) to use one"
                    ),
                });
            }
            None => {
                let filter = options
                    .adapter_name
                    .as_ref()
                    .map(|n| format!(" matching '{n}'"))
                    .unwrap_or_default();
                return Err(Error::BackendUnavailable {
                    backend: BACKEND_NAME,
                    reason: format!("no adapter{filter}: {seen_text}"),
                });
            }
        };
        let info = adapter.get_info();
        let software = info.device_type == wgpu::DeviceType::Cpu;
        let use_timestamps =
            options.timestamps && adapter.features().contains(wgpu::Features::TIMESTAMP_QUERY);
        let f64_division =
            options.f64_division && adapter.features().contains(wgpu::Features::SHADER_F64);
        // Not on software adapters: Mesa 22.3's lavapipe was seen to drop rays
        // in the refill loop (lanes given a ray and never finishing it), and a
        // CPU gains nothing from refill anyway.
        //
        // Nor where a subgroup could run part-filled: refill.wgsl claims rays
        // once half of `subgroup_size` lanes are idle, counted against the
        // subgroup's full width, so a subgroup of fewer live lanes than that
        // (a `batch_workgroup` of 8 on 32-wide hardware) would never claim one
        // and never end. A workgroup that is a multiple of the largest
        // subgroup size fills every subgroup, whatever size the driver picks.
        let lane_refill = options.lane_refill
            && !software
            && adapter.features().contains(wgpu::Features::SUBGROUP)
            && info.subgroup_max_size > 0
            && options
                .batch_workgroup
                .is_multiple_of(info.subgroup_max_size);
        let mut required_features = wgpu::Features::empty();
        if use_timestamps {
            required_features |= wgpu::Features::TIMESTAMP_QUERY;
        }
        if f64_division {
            required_features |= wgpu::Features::SHADER_F64;
        }
        if lane_refill {
            required_features |= wgpu::Features::SUBGROUP;
        }
        // Ask for everything the adapter offers: the WebGPU defaults would cap a
        // storage binding at 128 MiB even on a card with 80 GiB.
        let required_limits = adapter.limits();
        let desc = wgpu::DeviceDescriptor {
            label: Some("prism-wgpu"),
            required_features,
            required_limits,
            ..Default::default()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&desc)).map_err(|e| {
            Error::BackendUnavailable {
                backend: BACKEND_NAME,
                reason: format!("{}: request_device failed: {e}", info.name),
            }
        })?;

        let lost = Arc::new(Mutex::new(None::<String>));
        let lost_cb = lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            if let Ok(mut l) = lost_cb.lock() {
                l.get_or_insert(format!("{reason:?}: {message}"));
            }
        });
        let uncaptured = Arc::new(Mutex::new(Vec::<String>::new()));
        let uncaptured_cb = uncaptured.clone();
        // wgpu's default handler panics; every call here runs in error scopes, so
        // anything reaching this handler is only recorded and reported later.
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Ok(mut u) = uncaptured_cb.lock()
                && u.len() < 16
            {
                u.push(e.to_string());
            }
        }));

        let limits = device.limits();
        let binding_limit = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        let max_chunk_bytes = options
            .max_chunk_bytes
            .map_or(binding_limit, |m| m.min(binding_limit))
            & !15;
        let samples_per_submit = options
            .samples_per_submit
            .unwrap_or(if software {
                SW_SAMPLES_PER_SUBMIT
            } else {
                HW_SAMPLES_PER_SUBMIT
            })
            .max(1);

        let (tx, ty) = options.render_tile;
        let invocations = limits.max_compute_invocations_per_workgroup;
        if tx == 0
            || ty == 0
            || tx > limits.max_compute_workgroup_size_x
            || ty > limits.max_compute_workgroup_size_y
        {
            return Err(Error::DeviceLimit {
                backend: BACKEND_NAME,
                what: "render_tile (workgroup size per dimension, each at least 1)",
                needed: tx.max(ty) as u64,
                limit: limits
                    .max_compute_workgroup_size_x
                    .min(limits.max_compute_workgroup_size_y) as u64,
            });
        }
        if tx as u64 * ty as u64 > invocations as u64 {
            return Err(Error::DeviceLimit {
                backend: BACKEND_NAME,
                what: "render_tile (invocations per workgroup)",
                needed: tx as u64 * ty as u64,
                limit: invocations as u64,
            });
        }
        let bw = options.batch_workgroup;
        if bw == 0 || bw > invocations.min(limits.max_compute_workgroup_size_x) {
            return Err(Error::DeviceLimit {
                backend: BACKEND_NAME,
                what: "batch_workgroup (invocations per workgroup, at least 1)",
                needed: bw as u64,
                limit: invocations.min(limits.max_compute_workgroup_size_x) as u64,
            });
        }

        let config = ModuleConfig {
            f64_division,
            lane_refill,
            ..ModuleConfig::GENERAL
        };
        let patch = options.source_patch;
        let source = ShaderSource::assemble_for(patch.as_ref(), &config);
        let module = compile_module(&device, &source, patch.is_none())?;

        let storage = |binding, read_only| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let uniform = |binding| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let (scene_layout, work_layout, pipeline_layout) =
            scoped(&device, "create the pipeline layout", || {
                let scene_layout =
                    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                        label: Some("prism scene"),
                        entries: &[
                            uniform(0),
                            storage(1, true),
                            storage(2, true),
                            storage(3, true),
                            storage(4, true),
                            storage(5, true),
                        ],
                    });
                let work_layout =
                    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                        label: Some("prism work"),
                        entries: &[
                            uniform(0),
                            storage(1, true),
                            storage(2, false),
                            storage(3, false),
                        ],
                    });
                let pipeline_layout =
                    device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                        label: Some("prism"),
                        bind_group_layouts: &[Some(&scene_layout), Some(&work_layout)],
                        immediate_size: 0,
                    });
                Ok((scene_layout, work_layout, pipeline_layout))
            })?;

        let small = |label, size, usage| create_buffer(&device, label, size, usage);
        let params = small(
            "render params",
            size_of::<RenderParams>() as u64,
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        )?;
        let chunk = small(
            "chunk",
            CHUNK_UNIFORM_BYTES,
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        )?;
        let ray_count = small(
            "ray tally",
            RAY_TALLY_BYTES,
            wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
        )?;
        let count_readback = || {
            small(
                "ray tally readback",
                RAY_TALLY_BYTES,
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            )
        };
        let ray_count_readback = [count_readback()?, count_readback()?];
        let dummy_rays = small("no rays", RAY_BYTES, wgpu::BufferUsages::STORAGE)?;
        // Core's 8-bit encoding table, which render_srgb8 encodes through so that
        // its bytes are core's (WGSL's pow promises no exact rounding).
        let table = Srgb8Table::new();
        let table_bytes: &[u8] = bytemuck::cast_slice(table.slots());
        let srgb8 = small(
            "sRGB encoding table",
            table_bytes.len() as u64,
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        )?;
        scoped(&device, "upload the sRGB encoding table", || {
            queue.write_buffer(&srgb8, 0, table_bytes);
            Ok(())
        })?;
        let timestamps = if use_timestamps {
            let set = scoped(&device, "create the timestamp queries", || {
                Ok(device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("prism timestamps"),
                    ty: wgpu::QueryType::Timestamp,
                    count: 2,
                }))
            })?;
            let resolve = small(
                "timestamp resolve",
                16,
                wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            )?;
            let ts_readback = || {
                small(
                    "timestamp readback",
                    16,
                    wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                )
            };
            let readback = [ts_readback()?, ts_readback()?];
            Some(Timestamps {
                set,
                resolve,
                readback,
                period: queue.get_timestamp_period() as f64,
            })
        } else {
            None
        };

        Ok(WgpuBackend {
            device,
            queue,
            info,
            limits,
            software,
            modules: HashMap::from([(config, module)]),
            config,
            source,
            patch,
            scene_layout,
            work_layout,
            pipeline_layout,
            pipelines: HashMap::new(),
            params,
            chunk,
            ray_count,
            ray_count_readback,
            dummy_rays,
            srgb8,
            timestamps,
            rays_buf: Reusable::default(),
            out_buf: Reusable::default(),
            readback_buf: Default::default(),
            scene: None,
            max_chunk_bytes,
            samples_per_submit,
            render_tile: options.render_tile,
            batch_workgroup: options.batch_workgroup,
            overlap_transfers: options.overlap_transfers,
            f64_division,
            lost,
            uncaptured,
            teardown: None,
        })
    }

    /// The adapter in use.
    pub fn adapter(&self) -> AdapterSummary {
        summary(&self.info)
    }

    /// The device limits in force (the adapter's own).
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

    /// Fail if the device was lost: the backend must then be recreated.
    fn check_usable(&self, operation: &'static str) -> Result<(), Error> {
        let lost = self
            .lost
            .lock()
            .map(|l| l.clone())
            .unwrap_or_else(|p| p.into_inner().clone());
        match lost {
            Some(why) => Err(device_error(
                operation,
                format!("the GPU device was lost ({why}); create a new WgpuBackend"),
            )),
            None => Ok(()),
        }
    }

    /// The module for `config`, compiled on first use.
    fn module(&mut self, config: ModuleConfig) -> Result<wgpu::ShaderModule, Error> {
        if let Some(m) = self.modules.get(&config) {
            return Ok(m.clone());
        }
        let source = ShaderSource::assemble_for(self.patch.as_ref(), &config);
        let module = compile_module(&self.device, &source, self.patch.is_none())?;
        self.modules.insert(config, module.clone());
        Ok(module)
    }

    /// The pipeline of `kernel` for the current scene, compiled on first use.
    fn pipeline(&mut self, kernel: Kernel) -> Result<wgpu::ComputePipeline, Error> {
        let config = self.module_config();
        if let Some(p) = self.pipelines.get(&(kernel, config)) {
            return Ok(p.clone());
        }
        let module = self.module(config)?;
        let integrator = match kernel {
            Kernel::Render(i, _) => i,
            _ => 0,
        };
        let constants = [
            ("INTEGRATOR", integrator as f64),
            ("TILE_X", self.render_tile.0 as f64),
            ("TILE_Y", self.render_tile.1 as f64),
            ("BATCH_SIZE", self.batch_workgroup as f64),
            ("RAY_TALLY_SLOTS", RAY_TALLY_SLOTS as f64),
        ];
        let entry = kernel.entry_point();
        let device = &self.device;
        let scopes = Scopes::push(device);
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(entry),
            layout: Some(&self.pipeline_layout),
            module: &module,
            entry_point: Some(entry),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &constants,
                zero_initialize_workgroup_memory: true,
            },
            cache: None,
        });
        // Cached only if no scope caught an error: an invalid pipeline would
        // otherwise fail every later dispatch.
        let errors = scopes.pop();
        errors.out_of_memory("compute pipeline")?;
        if let Some(e) = errors.validation.or(errors.internal) {
            return Err(Error::Compile {
                backend: BACKEND_NAME,
                source_name: format!("shaders/*.wgsl, entry point {entry}"),
                log: e.to_string(),
            });
        }
        self.pipelines.insert((kernel, config), pipeline.clone());
        Ok(pipeline)
    }

    /// `slot` holds a buffer of at least `size` bytes with `usage`.
    fn ensure(
        device: &wgpu::Device,
        slot: &mut Reusable,
        label: &'static str,
        size: u64,
        usage: wgpu::BufferUsages,
    ) -> Result<wgpu::Buffer, Error> {
        if let Some(b) = &slot.buffer
            && b.size() >= size
        {
            return Ok(b.clone());
        }
        // Drop the old one first so both never hold memory at once.
        slot.buffer = None;
        let b = create_buffer(device, label, size, usage)?;
        slot.buffer = Some(b.clone());
        Ok(b)
    }

    /// The first `slots` readback buffers, each of at least `size` bytes
    /// (rounded up to 16), one per submission in flight.
    fn readback_slots(
        &mut self,
        label: &'static str,
        slots: usize,
        size: u64,
    ) -> Result<Vec<wgpu::Buffer>, Error> {
        let mut readback = Vec::with_capacity(slots);
        for slot in 0..slots {
            readback.push(Self::ensure(
                &self.device,
                &mut self.readback_buf[slot],
                label,
                size.next_multiple_of(16),
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            )?);
        }
        Ok(readback)
    }

    /// Submit `encoder`; returns its index and when it was submitted.
    fn submit(&self, encoder: wgpu::CommandEncoder) -> (wgpu::SubmissionIndex, Instant) {
        let at = Instant::now();
        (self.queue.submit([encoder.finish()]), at)
    }

    /// Wait for a submission recorded with timestamp slot `slot` and add its
    /// trace time to `stats.trace`: from the timestamps when available, else
    /// the host time from submission to completion ([`host_span`]: with several
    /// submissions in flight, not counting the time the previous one still
    /// ran), and then `stats.timing` says [`TimingSource::HostClock`]. Returns
    /// when the wait ended, to pass as the next call's `previous_done`.
    fn finish_trace(
        &self,
        index: wgpu::SubmissionIndex,
        submitted: Instant,
        previous_done: Option<Instant>,
        slot: usize,
        operation: &'static str,
        stats: &mut RenderStats,
    ) -> Result<Instant, Error> {
        wait(&self.device, Some(index.clone()), operation)?;
        let done = Instant::now();
        let host = host_span(submitted, previous_done, done);
        let Some(ts) = &self.timestamps else {
            stats.trace += host;
            return Ok(done);
        };
        let mut ticks = [0u64; 2];
        map_and_read(
            &self.device,
            &ts.readback[slot],
            16,
            index,
            operation,
            |bytes| {
                ticks.copy_from_slice(bytemuck::cast_slice(bytes));
            },
        )?;
        let elapsed = ticks[1].saturating_sub(ticks[0]) as f64 * ts.period;
        // A zero or absurd reading (some drivers) falls back to the host time.
        if elapsed > 0.0 && elapsed < host.as_secs_f64() * 1e9 * 1.5 + 1e6 {
            stats.trace += Duration::from_nanos(elapsed as u64);
        } else {
            stats.trace += host;
            stats.timing = TimingSource::HostClock;
        }
        Ok(done)
    }

    /// Record one compute dispatch (with timestamps if available) into `encoder`.
    fn record_dispatch(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        pipeline: &wgpu::ComputePipeline,
        scene: &wgpu::BindGroup,
        work: &wgpu::BindGroup,
        groups: (u32, u32),
        slot: usize,
    ) {
        let timestamp_writes =
            self.timestamps
                .as_ref()
                .map(|ts| wgpu::ComputePassTimestampWrites {
                    query_set: &ts.set,
                    beginning_of_pass_write_index: Some(0),
                    end_of_pass_write_index: Some(1),
                });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("prism"),
                timestamp_writes,
            });
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, scene, &[]);
            pass.set_bind_group(1, work, &[]);
            pass.dispatch_workgroups(groups.0, groups.1, 1);
        }
        if let Some(ts) = &self.timestamps {
            encoder.resolve_query_set(&ts.set, 0..2, &ts.resolve, 0);
            encoder.copy_buffer_to_buffer(&ts.resolve, 0, &ts.readback[slot], 0, 16);
        }
    }

    fn work_bind_group(
        &self,
        rays: &wgpu::Buffer,
        out: &wgpu::Buffer,
        out_bytes: u64,
    ) -> wgpu::BindGroup {
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("prism work"),
            layout: &self.work_layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: whole(&self.chunk),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: whole(rays),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: out,
                        offset: 0,
                        size: NonZeroU64::new(out_bytes),
                    }),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: whole(&self.ray_count),
                },
            ],
        })
    }

    fn write_chunk(&self, first: u32, count: u32) {
        self.queue
            .write_buffer(&self.chunk, 0, bytemuck::cast_slice(&[first, count, 0, 0]));
    }

    /// Report and clear errors that escaped the error scopes.
    fn take_uncaptured(&self, operation: &'static str) -> Result<(), Error> {
        let mut u = self.uncaptured.lock().unwrap_or_else(|p| p.into_inner());
        if u.is_empty() {
            return Ok(());
        }
        let message = u.join("; ");
        u.clear();
        Err(device_error(operation, message))
    }

    fn render_inner(
        &mut self,
        camera: &Camera,
        settings: &RenderSettings,
        image: &mut Image,
        progress: &dyn Progress,
    ) -> Result<RenderStats, Error> {
        let start = Instant::now();
        let scene = self.scene.as_ref().ok_or(Error::NoScene)?;
        let (width, height) = (image.width(), image.height());
        let params = settings.params(&scene.accel, camera, width, height)?;
        let scene_group = scene.bind_group.clone();
        let format = image.format();
        let bytes_per_pixel: u64 = match format {
            PixelFormat::LinearF32 => 16,
            PixelFormat::Srgba8 => 4,
        };
        let row_bytes = width as u64 * bytes_per_pixel;
        let rows_by_bytes = self.max_chunk_bytes / row_bytes;
        if rows_by_bytes == 0 {
            return Err(Error::DeviceLimit {
                backend: BACKEND_NAME,
                what: "one image row of output (storage binding size)",
                needed: row_bytes,
                limit: self.max_chunk_bytes,
            });
        }
        let max_groups = self.limits.max_compute_workgroups_per_dimension as u64;
        let (tile_x, tile_y) = self.render_tile;
        let groups_x = width.div_ceil(tile_x) as u64;
        if groups_x > max_groups {
            return Err(Error::DeviceLimit {
                backend: BACKEND_NAME,
                what: "workgroups per dispatch dimension (image width / render tile width)",
                needed: groups_x,
                limit: max_groups,
            });
        }
        let rows_by_dispatch = max_groups * tile_y as u64;
        let rows_by_work = (self.samples_per_submit / (width as u64 * settings.spp as u64)).max(1);
        let chunk_rows = rows_by_bytes
            .min(rows_by_dispatch)
            .min(rows_by_work)
            .min(height as u64) as u32;
        // Large frames go in bands, two in flight: the host copies band k out
        // of its readback buffer while the GPU traces band k + 1. Only with
        // timestamps, so that host-clock trace times never overlap.
        let total_bytes = height as u64 * row_bytes;
        let band_bytes = PIPELINE_BAND_BYTES.min(self.max_chunk_bytes);
        let pipelined =
            self.overlap_transfers && self.timestamps.is_some() && total_bytes > 2 * band_bytes;
        let chunk_rows = if pipelined {
            let band_rows = (total_bytes / PIPELINE_BANDS).max(band_bytes) / row_bytes;
            chunk_rows.min(band_rows.max(1) as u32)
        } else {
            chunk_rows
        };
        let chunk_bytes = chunk_rows as u64 * row_bytes;

        let pipeline = self.pipeline(Kernel::Render(
            settings.integrator as u32,
            format == PixelFormat::Srgba8,
        ))?;
        let out = Self::ensure(
            &self.device,
            &mut self.out_buf,
            "render output",
            chunk_bytes.next_multiple_of(16),
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        )?;
        let slots = if pipelined { SLOTS } else { 1 };
        let readback = self.readback_slots("render readback", slots, chunk_bytes)?;
        let upload_start = Instant::now();
        self.queue
            .write_buffer(&self.params, 0, bytemuck::bytes_of(&params));
        let mut stats = RenderStats {
            upload: upload_start.elapsed(),
            timing: self.timing_source(),
            ..Default::default()
        };

        // (first row, rows, slot, submission, submitted at)
        let mut in_flight: std::collections::VecDeque<(
            u32,
            u32,
            usize,
            wgpu::SubmissionIndex,
            Instant,
        )> = std::collections::VecDeque::new();
        let mut row = 0u32;
        let mut band = 0usize;
        let mut cancelled = false;
        // When the previous band's wait ended (finish_trace's host time).
        let mut previous_done = None;
        while row < height || !in_flight.is_empty() {
            let can_submit = row < height && !cancelled && in_flight.len() < slots;
            if can_submit && progress.cancelled() {
                cancelled = true;
                continue;
            }
            if can_submit {
                let rows = chunk_rows.min(height - row);
                let bytes = rows as u64 * row_bytes;
                let slot = band % slots;
                let work_group =
                    self.work_bind_group(&self.dummy_rays, &out, bytes.next_multiple_of(16));
                self.write_chunk(row, rows);
                let mut encoder =
                    self.device
                        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                            label: Some("prism render"),
                        });
                encoder.clear_buffer(&self.ray_count, 0, None);
                self.record_dispatch(
                    &mut encoder,
                    &pipeline,
                    &scene_group,
                    &work_group,
                    (groups_x as u32, rows.div_ceil(tile_y)),
                    slot,
                );
                encoder.copy_buffer_to_buffer(
                    &out,
                    0,
                    &readback[slot],
                    0,
                    bytes.next_multiple_of(4),
                );
                encoder.copy_buffer_to_buffer(
                    &self.ray_count,
                    0,
                    &self.ray_count_readback[slot],
                    0,
                    RAY_TALLY_BYTES,
                );
                let (index, at) = self.submit(encoder);
                in_flight.push_back((row, rows, slot, index, at));
                row += rows;
                band += 1;
                continue;
            }
            // Nothing more to submit now: finish the oldest band.
            let Some((first_row, rows, slot, index, at)) = in_flight.pop_front() else {
                break;
            };
            let done =
                self.finish_trace(index.clone(), at, previous_done, slot, "render", &mut stats)?;
            previous_done = Some(done);
            let download_start = Instant::now();
            let bytes = rows as u64 * row_bytes;
            let first = first_row as usize * width as usize;
            let pixels = rows as usize * width as usize;
            match format {
                PixelFormat::LinearF32 => {
                    let dst: &mut [u8] =
                        bytemuck::cast_slice_mut(&mut image.linear_mut()[first..first + pixels]);
                    map_and_read(
                        &self.device,
                        &readback[slot],
                        bytes,
                        index.clone(),
                        "render download",
                        |src| copy_parallel(dst, src),
                    )?;
                }
                PixelFormat::Srgba8 => {
                    let dst: &mut [u8] =
                        bytemuck::cast_slice_mut(&mut image.rgba8_mut()[first..first + pixels]);
                    map_and_read(
                        &self.device,
                        &readback[slot],
                        bytes,
                        index.clone(),
                        "render download",
                        |src| copy_parallel(dst, src),
                    )?;
                }
            }
            let mut rays = 0u64;
            map_and_read(
                &self.device,
                &self.ray_count_readback[slot],
                RAY_TALLY_BYTES,
                index,
                "render download",
                |src| rays = ray_tally_sum(src),
            )?;
            stats.rays = stats.rays.wrapping_add(rays);
            stats.download += download_start.elapsed();
            progress.advance((first_row + rows) as u64, height as u64);
        }
        if cancelled {
            return Err(Error::Cancelled);
        }
        stats.total = start.elapsed();
        Ok(stats)
    }

    /// Trace a batch with `kernel`; `out_bytes` per ray are handed to `store`
    /// chunk by chunk as `(first ray, bytes)`.
    fn batch_inner(
        &mut self,
        kernel: Kernel,
        rays: &[Ray],
        out_bytes: u64,
        mut store: impl FnMut(usize, &[u8]),
    ) -> Result<RenderStats, Error> {
        let start = Instant::now();
        let scene_group = self
            .scene
            .as_ref()
            .ok_or(Error::NoScene)?
            .bind_group
            .clone();
        let mut stats = RenderStats {
            rays: rays.len() as u64,
            timing: self.timing_source(),
            ..Default::default()
        };
        if rays.is_empty() {
            stats.total = start.elapsed();
            return Ok(stats);
        }
        let max_groups = self.limits.max_compute_workgroups_per_dimension as u64;
        let group = self.batch_workgroup as u64;
        let rays_by_dispatch = max_groups * max_groups * group;
        let mut per_chunk = (self.max_chunk_bytes / RAY_BYTES.max(out_bytes))
            .min(rays_by_dispatch)
            .min(u32::MAX as u64 / 2)
            .min(rays.len() as u64) as usize;
        if per_chunk == 0 {
            return Err(Error::DeviceLimit {
                backend: BACKEND_NAME,
                what: "one ray of a batch (storage binding size)",
                needed: RAY_BYTES.max(out_bytes),
                limit: self.max_chunk_bytes,
            });
        }
        // Large batches go in bands, two in flight, as large frames do: the host
        // writes band k + 1's rays and reads band k - 1's results while the GPU
        // traces band k. Only with timestamps, so that trace times never overlap.
        let total_bytes = rays.len() as u64 * RAY_BYTES;
        let band_bytes = PIPELINE_BAND_BYTES.min(self.max_chunk_bytes);
        let pipelined =
            self.overlap_transfers && self.timestamps.is_some() && total_bytes > 2 * band_bytes;
        if pipelined {
            let band_rays = (total_bytes / BATCH_BANDS).max(band_bytes) / RAY_BYTES;
            per_chunk = per_chunk.min(band_rays.max(1) as usize);
        }
        let refill = self.config.lane_refill;
        let kernel = match kernel {
            Kernel::Intersect if refill => Kernel::IntersectRefill,
            Kernel::Occluded if refill => Kernel::OccludedRefill,
            k => k,
        };
        let pipeline = self.pipeline(kernel)?;
        let in_buf = Self::ensure(
            &self.device,
            &mut self.rays_buf,
            "ray batch",
            per_chunk as u64 * RAY_BYTES,
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        )?;
        let out_size = (per_chunk as u64 * out_bytes).next_multiple_of(16);
        let out = Self::ensure(
            &self.device,
            &mut self.out_buf,
            "batch output",
            out_size,
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        )?;
        let slots = if pipelined { SLOTS } else { 1 };
        let readback = self.readback_slots("batch readback", slots, out_size)?;
        // (first ray, rays, slot, submission, submitted at)
        let mut in_flight: std::collections::VecDeque<(
            usize,
            u64,
            usize,
            wgpu::SubmissionIndex,
            Instant,
        )> = std::collections::VecDeque::new();
        let mut chunks = rays.chunks(per_chunk).enumerate().peekable();
        // When the previous chunk's wait ended (finish_trace's host time).
        let mut previous_done = None;
        while chunks.peek().is_some() || !in_flight.is_empty() {
            if in_flight.len() < slots
                && let Some((k, chunk)) = chunks.next()
            {
                let first = k * per_chunk;
                let n = chunk.len() as u64;
                let slot = k % slots;
                // Writes to a buffer that an earlier submission still reads are
                // ordered after it on the queue.
                let upload_start = Instant::now();
                self.queue
                    .write_buffer(&in_buf, 0, bytemuck::cast_slice(chunk));
                self.write_chunk(first as u32, n as u32);
                stats.upload += upload_start.elapsed();
                let bytes = n * out_bytes;
                let work_group = self.work_bind_group(&in_buf, &out, bytes.next_multiple_of(16));
                let mut groups = n.div_ceil(group);
                if refill {
                    // Refill workgroups take rays until the chunk is done, so a
                    // GPU's worth of them suffices; the rest would find no work.
                    groups = groups.min(REFILL_MAX_INVOCATIONS.div_ceil(group));
                }
                let gx = groups.min(max_groups);
                let gy = groups.div_ceil(gx);
                let mut encoder =
                    self.device
                        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                            label: Some("prism batch"),
                        });
                if refill {
                    // The refill kernels' ray counter (refill.wgsl).
                    encoder.clear_buffer(&self.ray_count, 0, None);
                }
                self.record_dispatch(
                    &mut encoder,
                    &pipeline,
                    &scene_group,
                    &work_group,
                    (gx as u32, gy as u32),
                    slot,
                );
                encoder.copy_buffer_to_buffer(&out, 0, &readback[slot], 0, bytes);
                let (index, at) = self.submit(encoder);
                in_flight.push_back((first, n, slot, index, at));
                continue;
            }
            // Nothing more to submit now: finish the oldest chunk.
            let Some((first, n, slot, index, at)) = in_flight.pop_front() else {
                break;
            };
            let done = self.finish_trace(
                index.clone(),
                at,
                previous_done,
                slot,
                kernel.entry_point(),
                &mut stats,
            )?;
            previous_done = Some(done);
            let download_start = Instant::now();
            map_and_read(
                &self.device,
                &readback[slot],
                n * out_bytes,
                index,
                "batch download",
                |src| store(first, src),
            )?;
            stats.download += download_start.elapsed();
        }
        stats.total = start.elapsed();
        Ok(stats)
    }

    /// Run `f` inside error scopes: out-of-memory, validation and internal
    /// errors of the device become [`Error`]s, as do errors that reach the
    /// uncaptured-error handler during the call. Errors recorded there before
    /// the call are discarded on entry, so that none is blamed on this call.
    fn guarded<T>(
        &mut self,
        operation: &'static str,
        f: impl FnOnce(&mut Self) -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.check_usable(operation)?;
        self.uncaptured
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        let device = self.device.clone();
        let scopes = Scopes::push(&device);
        let result = f(self);
        let ScopeErrors {
            oom,
            validation,
            internal,
        } = scopes.pop();
        if result.is_err() || internal.is_some() || validation.is_some() || oom.is_some() {
            // Let a pending device-lost callback run, so that a lost device is
            // reported as such rather than as the validation error it causes.
            let _ = catch_unwind(AssertUnwindSafe(|| device.poll(wgpu::PollType::Poll)));
            self.check_usable(operation)?;
        }
        if oom.is_some() {
            return Err(Error::OutOfMemory {
                backend: BACKEND_NAME,
                what: operation,
                bytes: 0,
            });
        }
        if let Some(e) = validation.or(internal) {
            return Err(device_error(operation, e.to_string()));
        }
        self.check_usable(operation)?;
        self.take_uncaptured(operation)?;
        result
    }
}

/// A binding of all of `buffer`.
fn whole(buffer: &wgpu::Buffer) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(buffer.as_entire_buffer_binding())
}

/// A binding of the first `len` bytes of `buffer`.
fn exact(buffer: &wgpu::Buffer, len: usize) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
        buffer,
        offset: 0,
        size: NonZeroU64::new(len as u64),
    })
}

/// Compile the module for `config`; errors name the shader file and line.
///
/// `unpatched`: `source` is this crate's own source. Its loops all end, so
/// wgpu's loop-bounding counters, which cost instructions in the traversal's
/// inner loop (13% of the rtiow frame on an H100), are left out:
/// - a traversal only moves to children after their parent, so it visits
///   finitely many nodes: every tree is checked before upload
///   ([`prism_core::gpu::check_tree`]), and one that breaks the rule is refused;
/// - the integrators' loops count to `spp`, `max_depth` and `ao_samples`;
/// - the refill kernels (refill.wgsl, [`ModuleConfig::lane_refill`]) loop
///   while a lane holds a ray or the chunk has rays left: a held ray ends after
///   finitely many traversal steps, and every pass in which no lane holds one
///   claims a subgroup's worth of rays from a counter that only grows, so the
///   chunk is exhausted after at most `chunk.count` claims. (Refill is off on
///   software adapters, where lavapipe was seen to mis-run the subgroup votes.)
///
/// Buffer bounds checks always stay.
fn compile_module(
    device: &wgpu::Device,
    source: &ShaderSource,
    unpatched: bool,
) -> Result<wgpu::ShaderModule, Error> {
    let trusted = unpatched;
    let scopes = Scopes::push(device);
    let desc = wgpu::ShaderModuleDescriptor {
        label: Some("prism shaders"),
        source: wgpu::ShaderSource::Wgsl(source.text.as_str().into()),
    };
    let module = if trusted {
        let checks = wgpu::ShaderRuntimeChecks {
            force_loop_bounding: false,
            ..wgpu::ShaderRuntimeChecks::checked()
        };
        // SAFETY: the only check relaxed is loop bounding, and every loop of an
        // unpatched module terminates (see above); bounds checks remain on.
        unsafe { device.create_shader_module_trusted(desc, checks) }
    } else {
        device.create_shader_module(desc)
    };
    let errors = scopes.pop();
    errors.out_of_memory("shader module")?;
    let error = errors.validation.or(errors.internal);
    let info = pollster::block_on(module.get_compilation_info());
    let mut log = String::new();
    for m in info
        .messages
        .iter()
        .filter(|m| m.message_type == wgpu::CompilationMessageType::Error)
    {
        match m.location.and_then(|l| {
            source
                .locate(l.line_number)
                .map(|(f, line)| (f, line, l.line_position))
        }) {
            Some((file, line, col)) => {
                log.push_str(&format!("{file}:{line}:{col}: error: {}\n", m.message))
            }
            None => log.push_str(&format!("error: {}\n", m.message)),
        }
    }
    match error {
        None if log.is_empty() => Ok(module),
        error => {
            if let Some(e) = error {
                log.push_str(&e.to_string());
            }
            Err(Error::Compile {
                backend: BACKEND_NAME,
                source_name: "shaders/*.wgsl".into(),
                log,
            })
        }
    }
}

/// The three error scopes of a device (out of memory, validation, internal),
/// pushed together so that no kind of error escapes to the uncaptured-error
/// handler.
struct Scopes {
    oom: wgpu::ErrorScopeGuard,
    validation: wgpu::ErrorScopeGuard,
    internal: wgpu::ErrorScopeGuard,
}

/// What each of [`Scopes`] caught.
struct ScopeErrors {
    oom: Option<wgpu::Error>,
    validation: Option<wgpu::Error>,
    internal: Option<wgpu::Error>,
}

impl ScopeErrors {
    /// [`Error::OutOfMemory`] naming `what` if the out-of-memory scope caught
    /// an error (the allocation's size is not reported by wgpu).
    fn out_of_memory(&self, what: &'static str) -> Result<(), Error> {
        match self.oom {
            Some(_) => Err(Error::OutOfMemory {
                backend: BACKEND_NAME,
                what,
                bytes: 0,
            }),
            None => Ok(()),
        }
    }
}

impl Scopes {
    fn push(device: &wgpu::Device) -> Scopes {
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
        Scopes {
            oom,
            validation,
            internal,
        }
    }

    /// Pop the scopes, innermost first.
    fn pop(self) -> ScopeErrors {
        let internal = pollster::block_on(self.internal.pop());
        let validation = pollster::block_on(self.validation.pop());
        let oom = pollster::block_on(self.oom.pop());
        ScopeErrors {
            oom,
            validation,
            internal,
        }
    }
}

/// Run `f` in error scopes: out of memory becomes [`Error::OutOfMemory`], a
/// validation or internal error [`Error::Device`], each naming `operation`.
fn scoped<T>(
    device: &wgpu::Device,
    operation: &'static str,
    f: impl FnOnce() -> Result<T, Error>,
) -> Result<T, Error> {
    let scopes = Scopes::push(device);
    let result = f();
    let errors = scopes.pop();
    errors.out_of_memory(operation)?;
    if let Some(e) = errors.validation.or(errors.internal) {
        return Err(device_error(operation, e.to_string()));
    }
    result
}

/// Create a buffer; out-of-memory and limit errors name it and its size.
fn create_buffer(
    device: &wgpu::Device,
    label: &'static str,
    size: u64,
    usage: wgpu::BufferUsages,
) -> Result<wgpu::Buffer, Error> {
    let limit = device.limits().max_buffer_size;
    if size > limit {
        return Err(Error::DeviceLimit {
            backend: BACKEND_NAME,
            what: label,
            needed: size,
            limit,
        });
    }
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: size.max(16),
        usage,
        mapped_at_creation: false,
    });
    let validation = pollster::block_on(validation.pop());
    let oom = pollster::block_on(oom.pop());
    if oom.is_some() {
        return Err(Error::OutOfMemory {
            backend: BACKEND_NAME,
            what: label,
            bytes: size,
        });
    }
    if let Some(e) = validation {
        return Err(device_error(
            "create a buffer",
            format!("{label} ({size} bytes): {e}"),
        ));
    }
    Ok(buffer)
}

/// Host-measured trace time of a submission that finished at `done`: from its
/// submission, or from the end of the previous submission's wait when that came
/// later. The queue runs submissions in order, so with two in flight the later
/// one cannot start before the earlier one ends; counting from its submission
/// would count the earlier one's remaining time twice.
fn host_span(submitted: Instant, previous_done: Option<Instant>, done: Instant) -> Duration {
    let from = previous_done.map_or(submitted, |p| p.max(submitted));
    done.saturating_duration_since(from)
}

/// Block until `index` (or all work) finished. wgpu panics on a device error
/// while polling; that panic is caught here and reported as a lost device.
fn wait(
    device: &wgpu::Device,
    index: Option<wgpu::SubmissionIndex>,
    operation: &'static str,
) -> Result<(), Error> {
    let poll = catch_unwind(AssertUnwindSafe(|| {
        device.poll(wgpu::PollType::Wait {
            submission_index: index,
            timeout: None,
        })
    }));
    match poll {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(device_error(operation, format!("waiting for the GPU: {e}"))),
        Err(_) => Err(device_error(
            operation,
            "the GPU device failed while waiting (device lost); create a new WgpuBackend",
        )),
    }
}

/// Submissions in flight during a pipelined render (see `render_inner`).
const SLOTS: usize = 2;
/// A render whose output, or a batch whose rays, exceed two bands of this size
/// (or of [`WgpuOptions::max_chunk_bytes`] if smaller) is split into bands of
/// at least that size, so that moving one between host and device overlaps
/// tracing the next.
const PIPELINE_BAND_BYTES: u64 = 16 << 20;
/// Bands a large pipelined frame is cut into (fewer if they would fall below
/// [`PIPELINE_BAND_BYTES`]).
const PIPELINE_BANDS: u64 = 8;
/// Bands a large pipelined batch is cut into: each dispatch ends in a tail of
/// long rays with most lanes idle, so batches take fewer, larger bands than
/// frames (4M diffuse rays on an H100: 4 bands double the whole call's rate
/// over 1 and cost 14% of trace time, 8 bands cost 30%).
const BATCH_BANDS: u64 = 4;

/// Copies above this size are split over threads: one core cannot read a large
/// mapped readback buffer as fast as PCIe fills it.
const PARALLEL_COPY_BYTES: usize = 32 << 20;

/// `dst.copy_from_slice(src)`, on several threads for large copies.
fn copy_parallel(dst: &mut [u8], src: &[u8]) {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    if dst.len() != src.len() || dst.len() < PARALLEL_COPY_BYTES || threads < 2 {
        dst.copy_from_slice(src);
        return;
    }
    let part = dst.len().div_ceil(threads);
    let mut failed = Vec::new();
    std::thread::scope(|scope| {
        for (i, (d, s)) in dst.chunks_mut(part).zip(src.chunks(part)).enumerate() {
            if std::thread::Builder::new()
                .spawn_scoped(scope, move || d.copy_from_slice(s))
                .is_err()
            {
                failed.push(i);
            }
        }
    });
    // A part whose thread could not be started is copied here.
    for i in failed {
        let r = i * part..((i + 1) * part).min(dst.len());
        dst[r.clone()].copy_from_slice(&src[r]);
    }
}

/// Map the first `size` bytes of `buffer` for reading, hand them to `read`, unmap.
///
/// `after` is the submission that last wrote the buffer; waiting for it (done
/// already, in practice) lets wgpu complete the mapping without waiting for
/// later submissions still in flight.
fn map_and_read(
    device: &wgpu::Device,
    buffer: &wgpu::Buffer,
    size: u64,
    after: wgpu::SubmissionIndex,
    operation: &'static str,
    read: impl FnOnce(&[u8]),
) -> Result<(), Error> {
    if size == 0 {
        read(&[]);
        return Ok(());
    }
    let mapped = size.next_multiple_of(4);
    let slice = buffer.slice(..mapped);
    let (tx, rx) = mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        // The receiver lives until after the wait below; a failed send only
        // means the call already returned with an error.
        let _ = tx.send(r);
    });
    wait(device, Some(after), operation)?;
    match rx.try_recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            return Err(device_error(
                operation,
                format!("mapping the readback buffer: {e}"),
            ));
        }
        Err(_) => {
            return Err(device_error(
                operation,
                "mapping the readback buffer did not complete",
            ));
        }
    }
    {
        let view = slice
            .get_mapped_range()
            .map_err(|e| device_error(operation, format!("reading the mapped buffer: {e}")))?;
        read(&view[..size as usize]);
    }
    buffer.unmap();
    Ok(())
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
        // The BVH's subtrees are built on rayon's global pool (the same tree as a
        // one-thread build).
        let accel = Accel::build_with(scene, &RayonFork)?;
        let build = start.elapsed();
        let upload_start = Instant::now();
        let state = self.guarded("set_scene", |this| this.upload_scene(accel))?;
        self.scene = Some(state);
        Ok(RenderStats {
            build,
            upload: upload_start.elapsed(),
            total: start.elapsed(),
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
    fn upload_scene(&mut self, accel: Accel) -> Result<SceneState, Error> {
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

#[cfg(test)]
mod tests {
    use super::host_span;
    use std::time::{Duration, Instant};

    #[test]
    fn host_span_does_not_count_overlapping_submissions_twice() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // Two bands submitted together at t0; the first is waited for until
        // 10 ms, the second until 20 ms. The two spans add up to the 20 ms
        // the queue was busy, not 10 + 20.
        let first = host_span(t0, None, t0 + ms(10));
        let second = host_span(t0, Some(t0 + ms(10)), t0 + ms(20));
        assert_eq!(first, ms(10));
        assert_eq!(second, ms(10));
        assert_eq!(first + second, ms(20));
        // Submitted after the previous wait ended: counted from submission.
        assert_eq!(
            host_span(t0 + ms(25), Some(t0 + ms(20)), t0 + ms(30)),
            ms(5)
        );
        // A wait that ended before `from` (clock order) is zero, not a panic.
        assert_eq!(host_span(t0 + ms(5), None, t0), Duration::ZERO);
    }
}
