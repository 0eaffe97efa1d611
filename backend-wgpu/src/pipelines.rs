//! Shaders, pipelines and dispatches: the [`Kernel`]s and their entry points,
//! shader modules compiled per [`ModuleConfig`] (trusted, without loop-bounding
//! counters, when unpatched: see [`compile_module`]), compute pipelines cached
//! per kernel and module, the per-call work bind group and chunk uniform, and
//! the recording of one compute pass.

use crate::errors::Scopes;
use crate::{
    BACKEND_NAME, CHUNK_UNIFORM_BYTES, ModuleConfig, RAY_TALLY_SLOTS, ShaderSource, WgpuBackend,
};
use prism_core::Error;
use std::num::NonZeroU64;
use wgpu::util::DeviceExt;

/// Which pipeline: the render kernels per integrator and output format, and
/// the two batch kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kernel {
    /// Integrator as `u32`, whether the output is sRGB 8-bit, and the tiles
    /// a workgroup renders (`TILES_PER_GROUP`, entry.wgsl).
    Render(u32, bool, u32),
    Intersect,
    Occluded,
    /// `intersect` with lane refill (shaders/refill.wgsl).
    IntersectRefill,
    /// `occluded` with lane refill.
    OccludedRefill,
    /// A frame's tile candidate masks (shaders/camera_masks.wgsl), before
    /// its render kernels.
    CameraMasks,
    /// The path integrator by persistent subgroups (shaders/path_pieces.wgsl);
    /// whether the output is sRGB 8-bit.
    RenderPathPieces(bool),
    /// The AO integrator by persistent subgroups that share their pixels' AO
    /// rays (shaders/path_pieces.wgsl); whether the output is sRGB 8-bit.
    RenderAoPieces(bool),
}

impl Kernel {
    pub(crate) fn entry_point(self) -> &'static str {
        match self {
            Kernel::Render(_, false, _) => "render_linear",
            Kernel::Render(_, true, _) => "render_srgb8",
            Kernel::Intersect => "intersect_main",
            Kernel::Occluded => "occluded_main",
            Kernel::IntersectRefill => "intersect_refill",
            Kernel::OccludedRefill => "occluded_refill",
            Kernel::CameraMasks => "camera_masks_main",
            Kernel::RenderPathPieces(false) => "render_path_pieces_linear",
            Kernel::RenderPathPieces(true) => "render_path_pieces_srgb8",
            Kernel::RenderAoPieces(false) => "render_ao_pieces_linear",
            Kernel::RenderAoPieces(true) => "render_ao_pieces_srgb8",
        }
    }
}

impl WgpuBackend {
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
    pub(crate) fn pipeline(&mut self, kernel: Kernel) -> Result<wgpu::ComputePipeline, Error> {
        self.pipeline_for(kernel, self.module_config())
    }

    /// The pipeline of a frame's render kernel for `integrator` and output
    /// format (sRGB 8-bit or not): the scene's module, or where the scene has
    /// a cell grid that some ray of the frame of `params` may start too far
    /// away to walk ([`prism_core::cell_grid::CellGrid::walkable_from`]), the
    /// same module without it (its closest hits walk the tree, as the CUDA
    /// backend's octant kernels then do). The rays start on the camera's lens
    /// or on a primitive (within the scene's bounds, with 1% to spare for
    /// points rounded off their surfaces). `camera_masks`: the module with
    /// [`ModuleConfig::camera_masks`], for a frame whose cones the caller
    /// wrote, and the pipeline of its masks pass too. `pieces`: the path or AO
    /// integrator's persistent kernel (shaders/path_pieces.wgsl, for a caller
    /// that clears its piece counter before each dispatch; see
    /// [`WgpuBackend::path_pieces`]); else the tile kernel whose workgroups
    /// render `tiles` tiles each ([`render_tiles`]).
    pub(crate) fn render_pipeline(
        &mut self,
        integrator: u32,
        srgb8: bool,
        params: &prism_core::gpu::RenderParams,
        camera_masks: bool,
        pieces: bool,
        tiles: u32,
    ) -> Result<(wgpu::ComputePipeline, Option<wgpu::ComputePipeline>), Error> {
        let mut config = self.module_config();
        config.camera_masks = camera_masks;
        if let Some(scene) = &self.scene {
            let b = scene.accel.bounds();
            let lens = params.camera.origin_lens;
            let camera_bound = lens[..3].iter().fold(0.0f32, |m, c| m.max(c.abs())) + lens[3].abs();
            let origin_bound =
                (b.min.abs().max(b.max.abs()).max_element() * 1.01).max(camera_bound);
            config.cell_grid &= scene
                .cell_grid
                .as_ref()
                .is_some_and(|g| g.walkable_from(origin_bound));
        }
        let masks = if camera_masks {
            Some(self.pipeline_for(Kernel::CameraMasks, config)?)
        } else {
            None
        };
        let kernel = if pieces && integrator == prism_core::Integrator::Ao as u32 {
            Kernel::RenderAoPieces(srgb8)
        } else if pieces {
            Kernel::RenderPathPieces(srgb8)
        } else {
            Kernel::Render(integrator, srgb8, tiles)
        };
        Ok((self.pipeline_for(kernel, config)?, masks))
    }

    /// The pipeline of `kernel` in the module for `config`, compiled on first use.
    fn pipeline_for(
        &mut self,
        kernel: Kernel,
        config: ModuleConfig,
    ) -> Result<wgpu::ComputePipeline, Error> {
        if let Some(p) = self.pipelines.get(&(kernel, config)) {
            return Ok(p.clone());
        }
        let module = self.module(config)?;
        let (integrator, tiles) = match kernel {
            Kernel::Render(i, _, tiles) => (i, tiles),
            _ => (0, 1),
        };
        let constants = [
            ("INTEGRATOR", integrator as f64),
            ("TILE_X", self.render_tile.0 as f64),
            ("TILE_Y", self.render_tile.1 as f64),
            ("BATCH_SIZE", self.batch_workgroup as f64),
            ("RAY_TALLY_SLOTS", RAY_TALLY_SLOTS as f64),
            ("TILES_PER_GROUP", tiles as f64),
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

    /// Record one compute dispatch into `encoder`; with `slot`, and where the
    /// adapter has them, between timestamps read back through that slot's
    /// buffer (none in work recorded into a caller's encoder).
    pub(crate) fn record_dispatch(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        pipeline: &wgpu::ComputePipeline,
        scene: &wgpu::BindGroup,
        work: &wgpu::BindGroup,
        groups: (u32, u32),
        slot: Option<usize>,
    ) {
        self.record_dispatches(encoder, scene, &[(pipeline, work, groups)], slot);
    }

    /// [`Self::record_dispatch`] of several dispatches in one pass, in order
    /// (wgpu puts a barrier between two that share a buffer one writes), timed
    /// together: a frame's masks pass and its first band.
    pub(crate) fn record_dispatches(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        scene: &wgpu::BindGroup,
        dispatches: &[(&wgpu::ComputePipeline, &wgpu::BindGroup, (u32, u32))],
        slot: Option<usize>,
    ) {
        let timed = slot.and_then(|slot| self.timestamps.as_ref().map(|ts| (ts, slot)));
        let timestamp_writes = timed.map(|(ts, _)| wgpu::ComputePassTimestampWrites {
            query_set: &ts.set,
            beginning_of_pass_write_index: Some(0),
            end_of_pass_write_index: Some(1),
        });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("prism"),
                timestamp_writes,
            });
            pass.set_bind_group(0, scene, &[]);
            for &(pipeline, work, groups) in dispatches {
                pass.set_pipeline(pipeline);
                pass.set_bind_group(1, work, &[]);
                pass.dispatch_workgroups(groups.0, groups.1, 1);
            }
        }
        if let Some((ts, slot)) = timed {
            encoder.resolve_query_set(&ts.set, 0..2, &ts.resolve, 0);
            encoder.copy_buffer_to_buffer(&ts.resolve, 0, &ts.readback[slot], 0, 16);
        }
    }

    /// The work group of one dispatch: the chunk uniform, the rays (all of
    /// `rays` from its offset) and `out_bytes` of output from `out`'s offset.
    pub(crate) fn work_bind_group(
        &self,
        chunk: wgpu::BufferBinding<'_>,
        rays: wgpu::BufferBinding<'_>,
        out: wgpu::BufferBinding<'_>,
    ) -> wgpu::BindGroup {
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("prism work"),
            layout: &self.work_layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::Buffer(chunk),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::Buffer(rays),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: wgpu::BindingResource::Buffer(out),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: whole(&self.ray_count),
                },
            ],
        })
    }

    /// [`Self::work_bind_group`] of the host calls: the shared chunk uniform,
    /// all of `rays` and the first `out_bytes` of `out`.
    pub(crate) fn host_work_bind_group(
        &self,
        rays: &wgpu::Buffer,
        out: &wgpu::Buffer,
        out_bytes: u64,
    ) -> wgpu::BindGroup {
        self.work_bind_group(
            self.chunk.as_entire_buffer_binding(),
            rays.as_entire_buffer_binding(),
            wgpu::BufferBinding {
                buffer: out,
                offset: 0,
                size: NonZeroU64::new(out_bytes),
            },
        )
    }

    /// A uniform buffer of this call's own holding `chunks` (each the
    /// `Chunk` of entry.wgsl, 16 bytes), the `k`-th at `k * stride` (the
    /// returned stride, the device's uniform offset alignment). Work recorded
    /// into a caller's encoder binds these: the shared chunk uniform of the
    /// host calls is written on the queue at each dispatch, which would give
    /// every recorded chunk the last one's values.
    pub(crate) fn chunk_uniforms(&self, chunks: &[[u32; 4]]) -> (wgpu::Buffer, u64) {
        let stride = CHUNK_UNIFORM_BYTES
            .next_multiple_of(self.limits.min_uniform_buffer_offset_alignment.max(1) as u64);
        let mut bytes = vec![0u8; chunks.len() * stride as usize];
        for (k, words) in chunks.iter().enumerate() {
            let at = k * stride as usize;
            bytes[at..at + CHUNK_UNIFORM_BYTES as usize]
                .copy_from_slice(bytemuck::cast_slice(words));
        }
        let buffer = self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("prism recorded chunks"),
                contents: &bytes,
                usage: wgpu::BufferUsages::UNIFORM,
            });
        (buffer, stride)
    }

    pub(crate) fn write_chunk(&self, first: u32, count: u32) {
        self.queue
            .write_buffer(&self.chunk, 0, bytemuck::cast_slice(&[first, count, 0, 0]));
    }
}
/// Workgroups a dispatch of one-tile render workgroups must fill this many
/// times over before its workgroups take several tiles ([`render_tiles`]).
const RENDER_MIN_WAVES: u64 = 8;
/// Render workgroups taken as a GPU's resident count for [`render_tiles`]:
/// wgpu does not say how many a device holds; an H100 holds about 1,000 of
/// 128 invocations (132 multiprocessors, 7 or 8 each), smaller GPUs fewer, so
/// that a frame they would fill keeps one tile a workgroup here at worst.
const RENDER_RESIDENT_GUESS: u64 = 1024;
/// The most tiles a render workgroup takes.
const RENDER_MAX_TILES: u64 = 8;

/// Tiles of the render tile a workgroup of a frame's tile kernel renders, one
/// below the other (`TILES_PER_GROUP`, entry.wgsl), for a dispatch of
/// `one_tile_groups` workgroups of one tile: up to 8 for Whitted and path
/// frames, as many as leave the dispatch filling the GPU
/// [`RENDER_MIN_WAVES`] times; one for AO, whose pixels cost what the
/// geometry under them asks, so that blocks of several tiles would leave a
/// frame's last heavy ones running alone (the CUDA backend's
/// `render_tiles_per_block` and `ao_tiles_per_block`).
pub(crate) fn render_tiles(integrator: u32, one_tile_groups: u64) -> u32 {
    if integrator == prism_core::Integrator::Ao as u32 {
        return 1;
    }
    (one_tile_groups / (RENDER_RESIDENT_GUESS * RENDER_MIN_WAVES)).clamp(1, RENDER_MAX_TILES) as u32
}

/// A binding of all of `buffer`.
pub(crate) fn whole(buffer: &wgpu::Buffer) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(buffer.as_entire_buffer_binding())
}

/// A binding of the first `len` bytes of `buffer`.
pub(crate) fn exact(buffer: &wgpu::Buffer, len: usize) -> wgpu::BindingResource<'_> {
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
///   a two-level walk enters each instance of the top tree's leaves at most
///   once, and inside it walks a checked tree;
/// - the integrators' loops count to `spp`, `max_depth` and `ao_samples`
///   (plus one at the pixels of the fractional AO count);
/// - the refill kernels (refill.wgsl, [`ModuleConfig::lane_refill`]) loop
///   while a lane holds a ray or the chunk has rays left: a held ray ends after
///   finitely many traversal steps (in every pass some lane that holds one
///   steps: a two-level lane that waits to enter an instance waits only while
///   another lane steps), and every pass in which no lane holds one
///   claims a subgroup's worth of rays from a counter that only grows, so the
///   chunk is exhausted after at most `chunk.count` claims. (Refill is off on
///   software adapters, where lavapipe was seen to mis-run the subgroup votes.)
///
/// Buffer bounds checks always stay.
pub(crate) fn compile_module(
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

#[cfg(test)]
mod tests {
    use super::render_tiles;

    #[test]
    fn large_frames_take_several_tiles_a_workgroup_and_ao_frames_one() {
        // rtiow 1280 x 720: 7,200 one-tile workgroups of 16 x 8, too few.
        assert_eq!(render_tiles(0, 7_200), 1);
        // A whitted19 band (8192 x 1024): 65,536, eight tiles.
        assert_eq!(render_tiles(1, 65_536), 8);
        assert_eq!(render_tiles(1, 1 << 30), 8);
        assert_eq!(render_tiles(1, 2 * 8192), 2);
        assert_eq!(render_tiles(2, 65_536), 1);
    }
}
