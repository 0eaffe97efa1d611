//! Ray batches on the device: [`Backend::intersect`](prism_core::Backend::intersect)
//! and [`Backend::occluded`](prism_core::Backend::occluded)'s body, which cuts a
//! batch into chunks within the adapter's limits (into bands with two
//! submissions in flight for large batches), traces each with the batch kernel
//! (with lane refill where the adapter allows it) and hands each chunk's
//! output back as it arrives.

use crate::buffers::map_and_read;
use crate::pipelines::Kernel;
use crate::submit::{BATCH_BANDS, PIPELINE_BAND_BYTES, SLOTS};
use crate::{BACKEND_NAME, RAY_BYTES, WgpuBackend};
use prism_core::{Error, Ray, RenderStats};
use std::time::Instant;

/// Invocations a lane-refill dispatch launches at most: more than any GPU
/// keeps resident (an H100 holds 270,336), so no multiprocessor idles.
const REFILL_MAX_INVOCATIONS: u64 = 1 << 20;

impl WgpuBackend {
    /// The kernel that traces a batch for `kernel` (`Intersect` or
    /// `Occluded`): its lane-refill twin where refill is on.
    pub(crate) fn batch_kernel(&self, kernel: Kernel) -> Kernel {
        match kernel {
            Kernel::Intersect if self.config.lane_refill => Kernel::IntersectRefill,
            Kernel::Occluded if self.config.lane_refill => Kernel::OccludedRefill,
            k => k,
        }
    }

    /// Rays of a batch of `rays` one dispatch traces at most, with
    /// `out_bytes` of output a ray: within the storage-binding and dispatch
    /// limits (and `max_chunk_bytes`).
    pub(crate) fn batch_chunk_rays(&self, out_bytes: u64, rays: u64) -> Result<u64, Error> {
        let max_groups = self.limits.max_compute_workgroups_per_dimension as u64;
        let rays_by_dispatch = max_groups * max_groups * self.batch_workgroup as u64;
        let per_chunk = (self.max_chunk_bytes / RAY_BYTES.max(out_bytes))
            .min(rays_by_dispatch)
            .min(u32::MAX as u64 / 2)
            .min(rays);
        if per_chunk == 0 && rays > 0 {
            return Err(Error::DeviceLimit {
                backend: BACKEND_NAME,
                what: "one ray of a batch (storage binding size)",
                needed: RAY_BYTES.max(out_bytes),
                limit: self.max_chunk_bytes,
            });
        }
        Ok(per_chunk)
    }

    /// Record the dispatch that traces the `n` rays of one chunk with
    /// `pipeline` (of [`Self::batch_kernel`]), its rays and output bound in
    /// `work`; timed through `slot` where given. Shared by the host calls
    /// and the work recorded into a caller's encoder.
    pub(crate) fn record_batch(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        pipeline: &wgpu::ComputePipeline,
        scene: &wgpu::BindGroup,
        work: &wgpu::BindGroup,
        n: u64,
        slot: Option<usize>,
    ) {
        let group = self.batch_workgroup as u64;
        let max_groups = self.limits.max_compute_workgroups_per_dimension as u64;
        let mut groups = n.div_ceil(group);
        if self.config.lane_refill {
            // Refill workgroups take rays until the chunk is done, so a GPU's
            // worth of them suffices; the rest would find no work.
            groups = groups.min(REFILL_MAX_INVOCATIONS.div_ceil(group));
            // The refill kernels' ray counter (refill.wgsl).
            encoder.clear_buffer(&self.ray_count, 0, None);
        }
        let gx = groups.clamp(1, max_groups);
        let gy = groups.div_ceil(gx);
        self.record_dispatch(encoder, pipeline, scene, work, (gx as u32, gy as u32), slot);
    }

    /// Trace a batch with `kernel`; `out_bytes` per ray are handed to `store`
    /// chunk by chunk as `(first ray, bytes)`.
    pub(crate) fn batch_inner(
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
        let mut per_chunk = self.batch_chunk_rays(out_bytes, rays.len() as u64)? as usize;
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
        let kernel = self.batch_kernel(kernel);
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
                let work_group =
                    self.host_work_bind_group(&in_buf, &out, bytes.next_multiple_of(16));
                let mut encoder =
                    self.device
                        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                            label: Some("prism batch"),
                        });
                self.record_batch(
                    &mut encoder,
                    &pipeline,
                    &scene_group,
                    &work_group,
                    n,
                    Some(slot),
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
}
