//! [`Backend::render`](prism_core::Backend::render) on the device: a frame
//! cut into chunks of rows within the adapter's binding and dispatch limits
//! (and into bands with two submissions in flight for large frames), each
//! traced by the fused render kernel of its integrator and output format, read
//! back into the caller's [`Image`] and its rays counted.

use crate::buffers::map_and_read;
use crate::camera_masks::{MASK_TILE_BYTES, frame_cones, mask_tiles};
use crate::pipelines::render_tiles;
use crate::submit::{PIPELINE_BAND_BYTES, PIPELINE_BANDS, SLOTS};
use crate::{BACKEND_NAME, RAY_TALLY_BYTES, WgpuBackend};
use prism_core::gpu::ray_tally_sum;
use prism_core::{Camera, Error, Image, PixelFormat, Progress, RenderSettings, RenderStats};
use std::time::Instant;

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

impl WgpuBackend {
    pub(crate) fn render_inner(
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

        // A pinhole frame's cones, for its tiles' candidate masks
        // (camera_masks.wgsl), where the frame's kernel takes them and one
        // dispatch and binding hold the tiles' masks (else its rays walk the
        // tree, as the CUDA backend's then do).
        let tiles = mask_tiles(width, height);
        let mask_groups = tiles.div_ceil(self.batch_workgroup as u64);
        let mask_bytes = tiles * MASK_TILE_BYTES;
        // The persistent AO kernels' camera and shadow rays walk the tree.
        let pieces = self.path_pieces(settings.integrator as u32, scene.accel.is_two_level());
        let cones = if self.camera_masks
            && !pieces
            && mask_groups <= max_groups
            && mask_bytes <= self.limits.max_storage_buffer_binding_size
        {
            frame_cones(&scene.accel, settings.integrator, &params, (width, height))
        } else {
            None
        };
        let tiles = render_tiles(
            settings.integrator as u32,
            groups_x * chunk_rows.div_ceil(tile_y) as u64,
        );
        let (pipeline, masks_pipeline) = self.render_pipeline(
            settings.integrator as u32,
            format == PixelFormat::Srgba8,
            &params,
            cones.is_some(),
            pieces,
            tiles,
        )?;
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
        // The frame's masks: found in the first submission's pass, before
        // its band, and read by every band through the ray binding.
        let mut masks = None;
        if let (Some(c), Some(p)) = (&cones, masks_pipeline) {
            self.queue
                .write_buffer(&self.frame_cones, 0, bytemuck::bytes_of(c));
            let buffer = Self::ensure(
                &self.device,
                &mut self.masks_buf,
                "tile masks",
                mask_bytes,
                wgpu::BufferUsages::STORAGE,
            )?;
            let find = self.host_work_bind_group(&self.dummy_rays, &buffer, mask_bytes);
            masks = Some((p, find, buffer));
        }
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
                let rays_in = masks.as_ref().map_or(&self.dummy_rays, |(_, _, b)| b);
                let work_group =
                    self.host_work_bind_group(rays_in, &out, bytes.next_multiple_of(16));
                self.write_chunk(row, rows);
                let mut encoder =
                    self.device
                        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                            label: Some("prism render"),
                        });
                encoder.clear_buffer(&self.ray_count, 0, None);
                let groups = if pieces {
                    (path_groups(rows, width), 1)
                } else {
                    (groups_x as u32, rows.div_ceil(tile_y * tiles))
                };
                let render = (&pipeline, &work_group, groups);
                match &masks {
                    // The first band: the masks first, in its timed pass.
                    Some((find_pipeline, find_group, _)) if band == 0 => self.record_dispatches(
                        &mut encoder,
                        &scene_group,
                        &[(find_pipeline, find_group, (mask_groups as u32, 1)), render],
                        Some(slot),
                    ),
                    _ => self.record_dispatches(&mut encoder, &scene_group, &[render], Some(slot)),
                }
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
}

/// Invocations a workgroup of the persistent path kernels holds (mirrors
/// `PATH_THREADS` of shaders/path_pieces.wgsl).
const PATH_THREADS: u64 = 256;
/// Workgroups a persistent path dispatch launches at most: 2^20 invocations,
/// more than any GPU keeps resident (an H100 holds 270,336), so no
/// multiprocessor idles; its subgroups take the band's pieces until none is
/// left.
const PATH_MAX_GROUPS: u64 = (1 << 20) / PATH_THREADS;

/// Workgroups of the persistent path dispatch for a band of `rows` rows of
/// `width` pixels: two lanes a pixel, at most [`PATH_MAX_GROUPS`].
pub(crate) fn path_groups(rows: u32, width: u32) -> u32 {
    (2 * rows as u64 * width as u64)
        .div_ceil(PATH_THREADS)
        .clamp(1, PATH_MAX_GROUPS) as u32
}
