//! [`Backend::render`](prism_core::Backend::render) on the device: the pinhole
//! frame's camera masks, the launch of the fused render kernels band by band
//! (bands planned in [`super::bands`], odd bands overlapped on a second stream),
//! the copies through pinned memory into the caller's [`Image`], and the
//! frame's stage times ([`FrameTimes`]).

use super::bands::{MAX_GRID_X, plan_bands, tiles_per_block};
use super::device::{DeviceState, ms_to_duration};
use super::{CudaBackend, FrameTimes};
use crate::driver::{self, BACKEND, DeviceBuffer, StreamJoin};
use crate::kernels::{
    CAMERA_MASKS_THREADS, KernelConfig, LIST_REFLECTIONS, LIST_SHADOWS, MASKS_PER_TILE,
    RAY_TALLY_BYTES, SceneArgs, SceneKind, render_variant,
};
use cudarc::driver::sys;
use prism_core::camera_bounds;
use prism_core::gpu::{RenderParams, ray_tally_sum};
use prism_core::{
    Camera, Error, Image, Integrator, PixelFormat, Progress, RenderSettings, RenderStats,
    TimingSource,
};
use std::ffi::c_void;
use std::time::{Duration, Instant};

impl DeviceState {
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
        start: usize,
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
        self.events[start].record(&self.stream)?;
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

    /// Launch the render kernel of `integrator` over rows `[y0, y1)`.
    #[allow(clippy::too_many_arguments)]
    fn launch_render(
        &mut self,
        config: &KernelConfig,
        integrator: Integrator,
        sun: bool,
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
        let variant = render_variant(integrator, sun);
        // A two-level scene walks its instances; it has no grid or octant
        // copies (see SceneBuffers).
        let f = if scene.top_nodes != 0 {
            kernels.render_instances[variant]
        } else if scene.grid_offsets != 0 {
            kernels.render_grid[variant]
        } else if scene.octants != 0 {
            kernels.render_octants[variant]
        } else {
            kernels.render[variant]
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

impl CudaBackend {
    pub(super) fn render_inner(
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
        // Not for a two-level scene: its slots are in object space, and the
        // scene has no room for cones (SceneBuffers::camera_cones).
        // Nor for a heightfield (SceneBuffers::camera_cones).
        let cones =
            (config.camera_cones && !accel.is_two_level() && accel.heightfields().is_empty())
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
        // copy start, copy done; then the band stream's start, and the first
        // kernel's start (recorded as it is launched: the device waits idle
        // for the host's launch calls before it, time no kernel of the frame
        // takes).
        st.ensure_events(4 + 3 * bands)?;
        let ready = 2 + 3 * bands;
        let start = ready + 1;
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
        let mut started = false;
        if let Some(c) = &cones
            && let Some((masks, tiles)) =
                st.find_camera_masks(c, &balls, (tile_angle, lists), (width, height), start)?
        {
            scene.0.camera_masks = masks;
            scene.0.camera_mask_tiles = tiles;
            started = true;
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
            let most_tiles = if settings.integrator == Integrator::Ao {
                config.ao_tiles_per_block
            } else {
                config.render_tiles_per_block
            };
            let tiles = tiles_per_block(
                most_tiles,
                width.div_ceil(tw) as u64 * (y1 - y0).div_ceil(th) as u64,
                resident,
                config.render_min_waves,
            );
            if b == 0 && !started {
                // Band 0 is on the main stream.
                st.events[start].record(&st.stream)?;
            }
            st.launch_render(
                &config,
                settings.integrator,
                params.sun_center_radius[3] > 0.0,
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
        let launch_wait_ms = st.events[1].elapsed_ms(&st.events[start])? as f64;
        // Until the band that ends last (of either stream).
        let mut kernel_ms = 0.0f64;
        for b in 0..bands {
            kernel_ms = kernel_ms.max(st.events[start].elapsed_ms(&st.events[2 + 3 * b])? as f64);
        }
        let to_pinned_ms = st.events[start].elapsed_ms(&st.events[last + 2])? as f64;
        let mut download_ms = 0.0;
        for b in 0..bands {
            download_ms += st.events[2 + 3 * b + 1].elapsed_ms(&st.events[2 + 3 * b + 2])? as f64;
        }
        let total = t0.elapsed();
        self.last_frame = FrameTimes {
            upload_ms,
            launch_wait_ms,
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

#[cfg(test)]
mod tests {
    use super::*;

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
