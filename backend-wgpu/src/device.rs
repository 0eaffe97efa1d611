//! The device: [`WgpuBackend::new`] picks the adapter, asks for the features
//! and limits the backend uses and installs the device-lost and
//! uncaptured-error handlers; [`WgpuBackend::from_device`] takes the caller's
//! device instead, after checking its limits. Either way the workgroup
//! options are checked against the limits, the general shader module is
//! compiled and the bind group layouts and the small buffers every call
//! shares are made. [`Lifecycle`] serialises the construction and
//! teardown of devices in this process.

use crate::adapter::{adapter_rank, new_instance, searched_backends, summary};
use crate::buffers::{Reusable, create_buffer};
use crate::errors::scoped;
use crate::pipelines::compile_module;
use crate::submit::Timestamps;
use crate::{
    BACKEND_NAME, CHUNK_UNIFORM_BYTES, ModuleConfig, RAY_BYTES, RAY_COUNT_BYTES, RAY_TALLY_BYTES,
    ShaderSource, WgpuBackend, WgpuOptions,
};
use prism_core::Error;
use prism_core::gpu::RenderParams;
use prism_core::image::Srgb8Table;
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};

/// Pixel samples per submission on a hardware adapter: large enough that a
/// 1280x720x30 or an 8192x8192x1 frame is one dispatch that fills any GPU
/// (unless `overlap_transfers` bands a large frame by its output's size),
/// small enough to report progress and honour cancellation on long renders.
const HW_SAMPLES_PER_SUBMIT: u64 = 1 << 26;
/// Pixel samples per submission on a software adapter (about a second of work
/// on two CPU cores).
const SW_SAMPLES_PER_SUBMIT: u64 = 1 << 18;

/// One backend's construction or teardown at a time in this process.
///
/// On an H100 with NVIDIA's driver 580, test processes that created and
/// dropped Vulkan instances and devices on several threads at once hung in
/// about one run in four: the GPU idle, every thread waiting on the driver's
/// own locks. Creating or dropping a backend takes this lock; work on existing
/// backends does not. A held `Lifecycle` releases the lock when dropped (it is
/// `Send`, unlike a `MutexGuard`, so the backend stays `Send`).
pub(crate) struct Lifecycle;

/// Whether some thread holds the [`Lifecycle`], and the signal that it let go.
static LIFECYCLE_BUSY: Mutex<bool> = Mutex::new(false);
static LIFECYCLE_FREE: Condvar = Condvar::new();

impl Lifecycle {
    /// Wait until no other construction or teardown runs, then hold the lock.
    pub(crate) fn acquire() -> Lifecycle {
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
        let wanted = Capabilities::choose(&options, adapter.features(), &info);
        // Ask for everything the adapter offers: the WebGPU defaults would cap a
        // storage binding at 128 MiB even on a card with 80 GiB.
        let required_limits = adapter.limits();
        let desc = wgpu::DeviceDescriptor {
            label: Some("prism-wgpu"),
            required_features: wanted.features(),
            required_limits,
            ..Default::default()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&desc)).map_err(|e| {
            Error::BackendUnavailable {
                backend: BACKEND_NAME,
                reason: format!("{}: request_device failed: {e}", info.name),
            }
        })?;
        let handlers = Handlers::install(&device);
        Self::build(device, queue, info, options, wanted, handlers)
    }

    /// Build the backend on the caller's device and queue, sharing them:
    /// Prism opens no device of its own.
    ///
    /// For an engine that already owns a `wgpu::Device` (see the crate docs,
    /// "Inside an engine"). The adapter is the device's own
    /// ([`wgpu::Device::adapter_info`]); `options.allow_software` and
    /// `options.adapter_name` do not apply, the other options do. Of the
    /// optional features Prism uses (`TIMESTAMP_QUERY`, `SHADER_F64`,
    /// `SUBGROUP`), those the device was created with are used, as
    /// [`WgpuBackend::new`] would; a device with the adapter's own limits
    /// ([`wgpu::Adapter::limits`]) traces large batches in fewer dispatches
    /// than one with WebGPU's defaults.
    ///
    /// Prism installs no device-lost callback and no uncaptured-error
    /// handler on a shared device (they are the caller's): its own calls run
    /// in error scopes, and a lost device shows as [`Error::Device`] from the
    /// call that meets it. Its shader modules, pipelines and buffers are its
    /// own and are freed when the backend is dropped; the device lives on.
    ///
    /// Fails with [`Error::DeviceLimit`] naming the limit when the device's
    /// limits are below what the shaders bind (two bind groups, eight storage
    /// buffers and three uniform buffers per compute stage, compute
    /// dispatches), or below the workgroup sizes in `options`.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use prism_wgpu::{WgpuBackend, WgpuOptions};
    ///
    /// let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
    /// let adapter = pollster::block_on(
    ///     instance.request_adapter(&wgpu::RequestAdapterOptions::default()),
    /// )?;
    /// let (device, queue) = pollster::block_on(adapter.request_device(
    ///     &wgpu::DeviceDescriptor {
    ///         required_limits: adapter.limits(),
    ///         ..Default::default()
    ///     },
    /// ))?;
    /// let prism = WgpuBackend::from_device(device.clone(), queue.clone(), WgpuOptions::default())?;
    /// assert!(prism.device() == &device);
    /// # Ok(())
    /// # }
    /// ```
    pub fn from_device(
        device: wgpu::Device,
        queue: wgpu::Queue,
        options: WgpuOptions,
    ) -> Result<WgpuBackend, Error> {
        let info = device.adapter_info();
        check_shared_limits(&device.limits())?;
        let wanted = Capabilities::choose(&options, device.features(), &info);
        Self::build(device, queue, info, options, wanted, Handlers::none())
    }

    /// The rest of construction, on a device of Prism's own or the caller's:
    /// checks the workgroup options against the device's limits, compiles the
    /// general module and makes the layouts and the small shared buffers.
    fn build(
        device: wgpu::Device,
        queue: wgpu::Queue,
        info: wgpu::AdapterInfo,
        options: WgpuOptions,
        wanted: Capabilities,
        handlers: Handlers,
    ) -> Result<WgpuBackend, Error> {
        let software = info.device_type == wgpu::DeviceType::Cpu;
        let Capabilities {
            timestamps: use_timestamps,
            f64_division,
            lane_refill,
        } = wanted;
        let Handlers { lost, uncaptured } = handlers;
        // The pieces of path_pieces.wgsl: a subgroup of `size` lanes holds
        // `size / lanes` pixels of a 128-pixel tile.
        let persistent_path = options.persistent_path
            && lane_refill
            && info.subgroup_max_size <= 128
            && info.subgroup_min_size >= 2;
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
                            uniform(6),
                            uniform(7),
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
        let frame_cones = small(
            "frame cones",
            crate::camera_masks::FRAME_CONES_BYTES,
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        )?;
        let chunk = small(
            "chunk",
            CHUNK_UNIFORM_BYTES,
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        )?;
        let ray_count = small(
            "ray tally",
            RAY_COUNT_BYTES,
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
            frame_buf: Reusable::default(),
            masks_buf: Reusable::default(),
            store_pipelines: HashMap::new(),
            scene: None,
            fast_pipelines: None,
            fast_scratch: None,
            max_chunk_bytes,
            samples_per_submit,
            render_tile: options.render_tile,
            batch_workgroup: options.batch_workgroup,
            overlap_transfers: options.overlap_transfers,
            cell_grid: options.cell_grid,
            camera_masks: options.camera_masks,
            persistent_path,
            persistent_ao: persistent_path && options.persistent_ao,
            frame_cones,
            f64_division,
            lost,
            uncaptured,
            teardown: None,
        })
    }
}

/// The optional features Prism uses, as chosen for one device.
#[derive(Clone, Copy)]
struct Capabilities {
    timestamps: bool,
    f64_division: bool,
    lane_refill: bool,
}

impl Capabilities {
    /// What `options` ask for and `features` (the adapter's, or a shared
    /// device's) allow.
    fn choose(options: &WgpuOptions, features: wgpu::Features, info: &wgpu::AdapterInfo) -> Self {
        let software = info.device_type == wgpu::DeviceType::Cpu;
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
            && features.contains(wgpu::Features::SUBGROUP)
            && info.subgroup_max_size > 0
            && options
                .batch_workgroup
                .is_multiple_of(info.subgroup_max_size);
        Capabilities {
            timestamps: options.timestamps && features.contains(wgpu::Features::TIMESTAMP_QUERY),
            f64_division: options.f64_division && features.contains(wgpu::Features::SHADER_F64),
            lane_refill,
        }
    }

    /// The features to ask a new device for.
    fn features(self) -> wgpu::Features {
        let mut f = wgpu::Features::empty();
        if self.timestamps {
            f |= wgpu::Features::TIMESTAMP_QUERY;
        }
        if self.f64_division {
            f |= wgpu::Features::SHADER_F64;
        }
        if self.lane_refill {
            f |= wgpu::Features::SUBGROUP;
        }
        f
    }
}

/// What the device-lost callback and the uncaptured-error handler record
/// (see `errors.rs`); on a shared device neither is installed and both stay
/// empty.
struct Handlers {
    lost: Arc<Mutex<Option<String>>>,
    uncaptured: Arc<Mutex<Vec<String>>>,
}

impl Handlers {
    fn none() -> Self {
        Handlers {
            lost: Arc::new(Mutex::new(None)),
            uncaptured: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Install both on a device of Prism's own.
    fn install(device: &wgpu::Device) -> Self {
        let handlers = Handlers::none();
        let lost_cb = handlers.lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            if let Ok(mut l) = lost_cb.lock() {
                l.get_or_insert(format!("{reason:?}: {message}"));
            }
        });
        let uncaptured_cb = handlers.uncaptured.clone();
        // wgpu's default handler panics; every call here runs in error scopes, so
        // anything reaching this handler is only recorded and reported later.
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Ok(mut u) = uncaptured_cb.lock()
                && u.len() < 16
            {
                u.push(e.to_string());
            }
        }));
        handlers
    }
}

/// Storage buffers the shaders bind per compute stage: five in the scene's
/// group, three in the work group (entry.wgsl).
const STORAGE_BUFFERS: u32 = 8;
/// Uniform buffers the shaders bind per compute stage: the render parameters,
/// the levels and the chunk.
const UNIFORM_BUFFERS: u32 = 3;
/// Bind groups of the pipeline layout (scene, work).
const BIND_GROUPS: u32 = 2;

/// Refuse a shared device whose limits are below what the shaders bind. (A
/// device Prism opens has the adapter's limits, and every adapter wgpu
/// reports for compute has these.)
pub(crate) fn check_shared_limits(limits: &wgpu::Limits) -> Result<(), Error> {
    let checks = [
        (
            "bind groups (max_bind_groups)",
            BIND_GROUPS,
            limits.max_bind_groups,
        ),
        (
            "storage buffers per compute stage (max_storage_buffers_per_shader_stage)",
            STORAGE_BUFFERS,
            limits.max_storage_buffers_per_shader_stage,
        ),
        (
            "uniform buffers per compute stage (max_uniform_buffers_per_shader_stage)",
            UNIFORM_BUFFERS,
            limits.max_uniform_buffers_per_shader_stage,
        ),
        (
            "compute dispatches (max_compute_workgroups_per_dimension)",
            1,
            limits.max_compute_workgroups_per_dimension,
        ),
    ];
    for (what, needed, limit) in checks {
        if limit < needed {
            return Err(Error::DeviceLimit {
                backend: BACKEND_NAME,
                what,
                needed: needed as u64,
                limit: limit as u64,
            });
        }
    }
    Ok(())
}
