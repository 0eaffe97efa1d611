//! Frames into a caller's texture: [`WgpuBackend::record_render`] records the
//! render kernels' dispatches into the caller's command encoder, chunk of
//! rows by chunk of rows as `render` cuts a frame, each followed by a small
//! pass that stores the chunk's pixels from Prism's own buffer into the
//! caller's storage texture. Nothing is submitted, waited for or read back.

use crate::pipelines::render_tiles;
use crate::render::path_groups;
use crate::{BACKEND_NAME, CHUNK_UNIFORM_BYTES, WgpuBackend};
use prism_core::{Camera, Error, RenderSettings, ResourceProblem};
use std::num::NonZeroU64;
use wgpu::util::DeviceExt;

/// The store pass: one invocation a pixel of the chunk, reading the render
/// kernel's output (`render_srgb8`'s packed bytes or `render_linear`'s four
/// `f32`s) and storing it at the chunk's rows of the texture. `FORMAT` is
/// replaced by the texture's format.
const STORE_WGSL: &str = r#"
struct Store {
    first_row: u32,
    rows: u32,
    width: u32,
    srgb8: u32,
}
@group(0) @binding(0) var<uniform> store: Store;
@group(0) @binding(1) var<storage, read> pixels: array<u32>;
@group(0) @binding(2) var frame: texture_storage_2d<FORMAT, write>;

@compute @workgroup_size(8, 8)
fn store_pixels(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x >= store.width || gid.y >= store.rows {
        return;
    }
    let i = gid.y * store.width + gid.x;
    var c: vec4<f32>;
    if store.srgb8 == 1u {
        c = unpack4x8unorm(pixels[i]);
    } else {
        c = bitcast<vec4<f32>>(vec4<u32>(pixels[4u * i], pixels[4u * i + 1u], pixels[4u * i + 2u], pixels[4u * i + 3u]));
    }
    textureStore(frame, vec2<u32>(gid.x, store.first_row + gid.y), c);
}
"#;

/// The store pass's workgroup edge (8x8 pixels).
const STORE_TILE: u32 = 8;

/// The store pipeline of one texture format, and its bind group layout.
#[derive(Clone)]
pub(crate) struct StorePipeline {
    layout: wgpu::BindGroupLayout,
    pipeline: wgpu::ComputePipeline,
}

/// The formats `record_render` writes, with their WGSL names and whether the
/// frame is stored as sRGB-encoded bytes.
fn store_format(format: wgpu::TextureFormat) -> Option<(&'static str, bool)> {
    match format {
        wgpu::TextureFormat::Rgba8Unorm => Some(("rgba8unorm", true)),
        wgpu::TextureFormat::Rgba16Float => Some(("rgba16float", false)),
        wgpu::TextureFormat::Rgba32Float => Some(("rgba32float", false)),
        _ => None,
    }
}

impl WgpuBackend {
    /// Record a frame of the current scene, seen by `camera` with
    /// `settings`, into `encoder`, written into the caller's `target`
    /// texture (its size is the frame's). Nothing is submitted or read back;
    /// the frame is in `target` once the caller has submitted `encoder`, for
    /// its later passes to sample or copy (to a surface, say).
    ///
    /// `target` must be a 2D texture of one layer and one sample, with
    /// [`wgpu::TextureUsages::STORAGE_BINDING`], of this backend's device; its
    /// first mip level is written. Formats:
    /// - `Rgba8Unorm`: the frame's sRGB-encoded 8-bit values, the bytes
    ///   `render` gives for [`prism_core::PixelFormat::Srgba8`] (show them
    ///   through a non-sRGB view or surface, or decode them as sRGB);
    /// - `Rgba16Float`, `Rgba32Float`: linear values, those of
    ///   [`prism_core::PixelFormat::LinearF32`] (rounded to half floats in the
    ///   first).
    ///
    /// Otherwise [`Error::ResourceUnfit`] names `"target texture"` and the
    /// [`ResourceProblem`], and nothing is recorded. The frame is rendered
    /// into a buffer of Prism's own (up to the device's storage-binding size
    /// a chunk of rows, reused) and stored into `target` by a small pass
    /// after each chunk; both are in `encoder`. Settings and camera are
    /// checked as `render` checks them. Progress, cancellation and ray
    /// counts are those of the host call only. Submit before the next
    /// `set_scene` or `update_scene`.
    ///
    /// ```no_run
    /// # fn frame(prism: &mut prism_wgpu::WgpuBackend, camera: &prism_core::Camera,
    /// #     target: &wgpu::Texture) -> Result<(), prism_core::Error> {
    /// use prism_core::RenderSettings;
    ///
    /// let mut encoder = prism.device().create_command_encoder(&Default::default());
    /// prism.record_render(&mut encoder, camera, &RenderSettings::default(), target)?;
    /// // ... the engine's passes reading `target` ...
    /// prism.queue().submit([encoder.finish()]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn record_render(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        camera: &Camera,
        settings: &RenderSettings,
        target: &wgpu::Texture,
    ) -> Result<(), Error> {
        let (format_name, srgb8) = check_target(target)?;
        self.guarded("record_render", |this| {
            this.record_frame(encoder, camera, settings, target, format_name, srgb8)
        })
    }

    fn record_frame(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        camera: &Camera,
        settings: &RenderSettings,
        target: &wgpu::Texture,
        format_name: &'static str,
        srgb8: bool,
    ) -> Result<(), Error> {
        let scene = self.scene.as_ref().ok_or(Error::NoScene)?;
        let (width, height) = (target.width(), target.height());
        let params = settings.params(&scene.accel, camera, width, height)?;
        // The frame's own parameters: the shared ones are written on the
        // queue by each host render.
        let params_buffer = self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("prism recorded render params"),
                contents: bytemuck::bytes_of(&params),
                usage: wgpu::BufferUsages::UNIFORM,
            });
        let scene_group = self.scene_bind_group_with(&scene.buffers, &params_buffer);

        let row_bytes = width as u64 * if srgb8 { 4 } else { 16 };
        let max_groups = self.limits.max_compute_workgroups_per_dimension as u64;
        let (tile_x, tile_y) = self.render_tile;
        let groups_x = width.div_ceil(tile_x) as u64;
        let rows_by_bytes = self.max_chunk_bytes / row_bytes;
        if rows_by_bytes == 0
            || groups_x > max_groups
            || width.div_ceil(STORE_TILE) as u64 > max_groups
        {
            return Err(Error::DeviceLimit {
                backend: BACKEND_NAME,
                what: "one row of the target texture (storage binding size, or workgroups per dispatch dimension)",
                needed: row_bytes,
                limit: self.max_chunk_bytes,
            });
        }
        let rows_by_work = (self.samples_per_submit / (width as u64 * settings.spp as u64)).max(1);
        let chunk_rows = rows_by_bytes
            .min(max_groups * tile_y.min(STORE_TILE) as u64)
            .min(rows_by_work)
            .min(height as u64) as u32;
        // The persistent path kernel where the host's frames take it (its
        // piece counter is cleared before each chunk's dispatch, below), else
        // the tile kernel with as many tiles a workgroup as a host frame's.
        let integrator = settings.integrator as u32;
        let pieces = self.path_pieces(integrator, scene.accel.is_two_level());
        let tiles = render_tiles(integrator, groups_x * chunk_rows.div_ceil(tile_y) as u64);
        let pipeline = self
            .render_pipeline(integrator, srgb8, &params, false, pieces, tiles)?
            .0;
        let store = self.store_pipeline(format_name)?;
        let out = Self::ensure(
            &self.device,
            &mut self.frame_buf,
            "recorded render output",
            (chunk_rows as u64 * row_bytes).next_multiple_of(16),
            wgpu::BufferUsages::STORAGE,
        )?;
        let chunks: Vec<[u32; 4]> = (0..height)
            .step_by(chunk_rows as usize)
            .map(|row| [row, chunk_rows.min(height - row), width, u32::from(srgb8)])
            .collect();
        // The render kernels read (first row, rows) of each entry, the store
        // pass all four words.
        let (uniforms, stride) = self.chunk_uniforms(&chunks);
        let view = target.create_view(&wgpu::TextureViewDescriptor {
            label: Some("prism target"),
            mip_level_count: Some(1),
            ..Default::default()
        });
        for (k, &[_, rows, _, _]) in chunks.iter().enumerate() {
            let bytes = rows as u64 * row_bytes;
            let chunk = wgpu::BufferBinding {
                buffer: &uniforms,
                offset: k as u64 * stride,
                size: NonZeroU64::new(CHUNK_UNIFORM_BYTES),
            };
            let work = self.work_bind_group(
                chunk.clone(),
                self.dummy_rays.as_entire_buffer_binding(),
                wgpu::BufferBinding {
                    buffer: &out,
                    offset: 0,
                    size: NonZeroU64::new(bytes.next_multiple_of(16)),
                },
            );
            let groups = if pieces {
                encoder.clear_buffer(&self.ray_count, 0, None);
                (path_groups(rows, width), 1)
            } else {
                (groups_x as u32, rows.div_ceil(tile_y * tiles))
            };
            self.record_dispatch(encoder, &pipeline, &scene_group, &work, groups, None);
            let store_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("prism store"),
                layout: &store.layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: wgpu::BindingResource::Buffer(chunk),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: out.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 2,
                        resource: wgpu::BindingResource::TextureView(&view),
                    },
                ],
            });
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("prism store"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&store.pipeline);
            pass.set_bind_group(0, &store_group, &[]);
            pass.dispatch_workgroups(width.div_ceil(STORE_TILE), rows.div_ceil(STORE_TILE), 1);
        }
        Ok(())
    }

    /// The store pipeline for a texture format, made on first use.
    fn store_pipeline(&mut self, format_name: &'static str) -> Result<StorePipeline, Error> {
        if let Some(p) = self.store_pipelines.get(format_name) {
            return Ok(p.clone());
        }
        let made = self.make_store_pipeline(format_name)?;
        self.store_pipelines.insert(format_name, made.clone());
        Ok(made)
    }

    fn make_store_pipeline(&self, format_name: &'static str) -> Result<StorePipeline, Error> {
        let format = match format_name {
            "rgba8unorm" => wgpu::TextureFormat::Rgba8Unorm,
            "rgba16float" => wgpu::TextureFormat::Rgba16Float,
            _ => wgpu::TextureFormat::Rgba32Float,
        };
        let source = STORE_WGSL.replace("FORMAT", format_name);
        crate::errors::scoped(&self.device, "create the store pipeline", || {
            let module = self
                .device
                .create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some("prism store"),
                    source: wgpu::ShaderSource::Wgsl(source.as_str().into()),
                });
            let compute = wgpu::ShaderStages::COMPUTE;
            let layout = self
                .device
                .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                    label: Some("prism store"),
                    entries: &[
                        wgpu::BindGroupLayoutEntry {
                            binding: 0,
                            visibility: compute,
                            ty: wgpu::BindingType::Buffer {
                                ty: wgpu::BufferBindingType::Uniform,
                                has_dynamic_offset: false,
                                min_binding_size: None,
                            },
                            count: None,
                        },
                        wgpu::BindGroupLayoutEntry {
                            binding: 1,
                            visibility: compute,
                            ty: wgpu::BindingType::Buffer {
                                ty: wgpu::BufferBindingType::Storage { read_only: true },
                                has_dynamic_offset: false,
                                min_binding_size: None,
                            },
                            count: None,
                        },
                        wgpu::BindGroupLayoutEntry {
                            binding: 2,
                            visibility: compute,
                            ty: wgpu::BindingType::StorageTexture {
                                access: wgpu::StorageTextureAccess::WriteOnly,
                                format,
                                view_dimension: wgpu::TextureViewDimension::D2,
                            },
                            count: None,
                        },
                    ],
                });
            let pipeline_layout =
                self.device
                    .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                        label: Some("prism store"),
                        bind_group_layouts: &[Some(&layout)],
                        immediate_size: 0,
                    });
            let pipeline = self
                .device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some("prism store"),
                    layout: Some(&pipeline_layout),
                    module: &module,
                    entry_point: Some("store_pixels"),
                    compilation_options: Default::default(),
                    cache: None,
                });
            Ok(StorePipeline { layout, pipeline })
        })
    }
}

/// Refuse a target texture `record_render` cannot write; returns its
/// format's WGSL name and whether it takes sRGB-encoded bytes.
fn check_target(target: &wgpu::Texture) -> Result<(&'static str, bool), Error> {
    let unfit = |problem| Error::ResourceUnfit {
        backend: BACKEND_NAME,
        resource: "target texture",
        problem,
    };
    if !target
        .usage()
        .contains(wgpu::TextureUsages::STORAGE_BINDING)
    {
        return Err(unfit(ResourceProblem::MissingUsage {
            usage: "STORAGE_BINDING",
        }));
    }
    if target.dimension() != wgpu::TextureDimension::D2
        || target.depth_or_array_layers() != 1
        || target.sample_count() != 1
    {
        return Err(unfit(ResourceProblem::Format {
            found: format!(
                "a {:?} texture of {} layers and {} samples",
                target.dimension(),
                target.depth_or_array_layers(),
                target.sample_count()
            ),
            expected: "a 2D texture of one layer and one sample",
        }));
    }
    store_format(target.format()).ok_or_else(|| {
        unfit(ResourceProblem::Format {
            found: format!("{:?}", target.format()),
            expected: "Rgba8Unorm, Rgba16Float or Rgba32Float",
        })
    })
}
