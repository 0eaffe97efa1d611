//! Ray batches that stay on the device: [`WgpuBackend::record_intersect`] and
//! [`WgpuBackend::record_occluded`] check the caller's buffers of rays and
//! results against the documented layouts, then record the batch kernels'
//! dispatches (the host calls' [`WgpuBackend::record_batch`]) into the
//! caller's command encoder. Nothing is submitted, waited for or read back.

use crate::pipelines::Kernel;
use crate::{BACKEND_NAME, CHUNK_UNIFORM_BYTES, FLAG_BYTES, HIT_BYTES, RAY_BYTES, WgpuBackend};
use prism_core::{Error, ResourceProblem};
use std::num::NonZeroU64;

/// One of the caller's buffers in a recorded batch, by its role.
struct Role<'a> {
    /// How errors name it (`"rays buffer"`).
    name: &'static str,
    slice: wgpu::BufferSlice<'a>,
    /// Bytes of one record in it.
    record: u64,
}

impl WgpuBackend {
    /// Record the closest hit of `count` rays into `encoder`: the rays are
    /// read from `rays` and the hits written to `hits`, both the caller's
    /// device buffers. Nothing is submitted or read back; the hits are in
    /// `hits` once the caller has submitted `encoder`, for its later passes
    /// to read.
    ///
    /// Layouts (those of the host calls, see [`prism_core::gpu`]):
    /// - `rays`: `count` [`prism_core::Ray`]s of 48 bytes, three 16-byte rows
    ///   `(origin.xyz, tmin)`, `(dir.xyz, tmax)`, `(mask, 0, 0, 0)`, as
    ///   `f32`s and `u32`s (WGSL: `struct { origin_tmin: vec4<f32>,
    ///   dir_tmax: vec4<f32>, mask: vec4<u32> }`).
    /// - `hits`: `count` [`prism_core::Hit`]s of 32 bytes, `(t, u, v, prim)`
    ///   and `(instance, 0, 0, 0)`; a miss is `t = +inf`, `prim` and
    ///   `instance` `u32::MAX`.
    ///
    /// Both slices must come from buffers with [`wgpu::BufferUsages::STORAGE`]
    /// of this backend's device (see [`WgpuBackend::from_device`]), start at
    /// a multiple of the device's `min_storage_buffer_offset_alignment`, be a
    /// whole number of records long, hold at least `count` records, and be
    /// two different buffers; otherwise [`Error::ResourceUnfit`] names the
    /// buffer and the [`ResourceProblem`], and nothing is recorded. A ray is
    /// not checked on the host, as [`prism_core::Backend::intersect`] checks
    /// it: one that breaks [`prism_core::Ray`]'s rules (a NaN origin, a zero
    /// direction) gets an unspecified hit, never a fault.
    ///
    /// The work uses the scene as it is on the device when `encoder` is
    /// submitted: submit before the next `set_scene` or `update_scene`. Large
    /// batches are recorded as several dispatches within the device's
    /// limits, as the host calls are; two-level scenes are traced as flat
    /// ones are. Fails with [`Error::NoScene`] before `set_scene`.
    ///
    /// ```no_run
    /// # fn demo(prism: &mut prism_wgpu::WgpuBackend, rays: &wgpu::Buffer, hits: &wgpu::Buffer, n: u32)
    /// # -> Result<(), prism_core::Error> {
    /// let mut encoder = prism.device().create_command_encoder(&Default::default());
    /// // ... the engine's pass that writes `rays` ...
    /// prism.record_intersect(&mut encoder, rays.slice(..), hits.slice(..), n)?;
    /// // ... the engine's pass that reads `hits` ...
    /// prism.queue().submit([encoder.finish()]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn record_intersect(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        rays: wgpu::BufferSlice<'_>,
        hits: wgpu::BufferSlice<'_>,
        count: u32,
    ) -> Result<(), Error> {
        let out = Role {
            name: "hits buffer",
            slice: hits,
            record: HIT_BYTES,
        };
        self.record_resident(Kernel::Intersect, encoder, rays, out, count)
    }

    /// Record whether anything lies on each of `count` rays into `encoder`,
    /// as [`WgpuBackend::record_intersect`] records closest hits: rays as
    /// there, and `occluded` one `u32` per ray (4 bytes), `1` where the ray
    /// meets something in `(tmin, tmax)` and `0` where it does not (what
    /// [`prism_core::Backend::occluded`] turns into `bool`s). The same checks
    /// and errors apply, `occluded` named `"occluded buffer"`.
    pub fn record_occluded(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        rays: wgpu::BufferSlice<'_>,
        occluded: wgpu::BufferSlice<'_>,
        count: u32,
    ) -> Result<(), Error> {
        let out = Role {
            name: "occluded buffer",
            slice: occluded,
            record: FLAG_BYTES,
        };
        self.record_resident(Kernel::Occluded, encoder, rays, out, count)
    }

    fn record_resident(
        &mut self,
        kernel: Kernel,
        encoder: &mut wgpu::CommandEncoder,
        rays: wgpu::BufferSlice<'_>,
        out: Role<'_>,
        count: u32,
    ) -> Result<(), Error> {
        let operation = match kernel {
            Kernel::Occluded => "record_occluded",
            _ => "record_intersect",
        };
        let rays = Role {
            name: "rays buffer",
            slice: rays,
            record: RAY_BYTES,
        };
        let alignment = self.limits.min_storage_buffer_offset_alignment as u64;
        check_buffer(&rays, count, alignment)?;
        check_buffer(&out, count, alignment)?;
        if rays.slice.buffer() == out.slice.buffer() {
            return Err(Error::ResourceUnfit {
                backend: BACKEND_NAME,
                resource: out.name,
                problem: ResourceProblem::SameBuffer { other: rays.name },
            });
        }
        self.guarded(operation, |this| {
            this.record_chunks(kernel, encoder, &rays, &out, count as u64, alignment)
        })
    }

    /// Record the dispatches of a checked batch, chunk by chunk.
    fn record_chunks(
        &mut self,
        kernel: Kernel,
        encoder: &mut wgpu::CommandEncoder,
        rays: &Role<'_>,
        out: &Role<'_>,
        count: u64,
        alignment: u64,
    ) -> Result<(), Error> {
        let scene_group = self
            .scene
            .as_ref()
            .ok_or(Error::NoScene)?
            .bind_group
            .clone();
        if count == 0 {
            return Ok(());
        }
        let mut per_chunk = self.batch_chunk_rays(out.record, count)?;
        if per_chunk < count {
            // Every chunk but the last starts where the previous one ended, so
            // its rays' and outputs' offsets must stay aligned: a multiple of
            // `alignment` rays keeps both aligned (4-byte records at least).
            per_chunk -= per_chunk % alignment;
            if per_chunk == 0 {
                return Err(Error::DeviceLimit {
                    backend: BACKEND_NAME,
                    what: "rays of one aligned chunk of a recorded batch (storage binding size)",
                    needed: alignment * RAY_BYTES.max(out.record),
                    limit: self.max_chunk_bytes,
                });
            }
        }
        let chunks = count.div_ceil(per_chunk);
        let pipeline = self.pipeline(self.batch_kernel(kernel))?;
        let words: Vec<[u32; 4]> = (0..chunks)
            .map(|k| {
                let first = k * per_chunk;
                [first as u32, per_chunk.min(count - first) as u32, 0, 0]
            })
            .collect();
        let (chunk_buffer, stride) = self.chunk_uniforms(&words);
        for k in 0..chunks {
            let first = k * per_chunk;
            let n = per_chunk.min(count - first);
            let work = self.work_bind_group(
                wgpu::BufferBinding {
                    buffer: &chunk_buffer,
                    offset: k * stride,
                    size: NonZeroU64::new(CHUNK_UNIFORM_BYTES),
                },
                part(rays, first, n),
                part(out, first, n),
            );
            self.record_batch(encoder, &pipeline, &scene_group, &work, n, None);
        }
        Ok(())
    }
}

/// The binding of records `first..first + n` of `role`'s slice.
fn part<'a>(role: &Role<'a>, first: u64, n: u64) -> wgpu::BufferBinding<'a> {
    wgpu::BufferBinding {
        buffer: role.slice.buffer(),
        offset: role.slice.offset() + first * role.record,
        size: NonZeroU64::new(n * role.record),
    }
}

/// Refuse a buffer that lacks STORAGE, starts unaligned, is not a whole
/// number of records, or holds fewer than `count` of them.
fn check_buffer(role: &Role<'_>, count: u32, alignment: u64) -> Result<(), Error> {
    let unfit = |problem| {
        Err(Error::ResourceUnfit {
            backend: BACKEND_NAME,
            resource: role.name,
            problem,
        })
    };
    let (offset, size) = (role.slice.offset(), role.slice.size());
    if !role
        .slice
        .buffer()
        .usage()
        .contains(wgpu::BufferUsages::STORAGE)
    {
        return unfit(ResourceProblem::MissingUsage { usage: "STORAGE" });
    }
    if alignment > 0 && !offset.is_multiple_of(alignment) {
        return unfit(ResourceProblem::Misaligned { offset, alignment });
    }
    if !size.is_multiple_of(role.record) {
        return unfit(ResourceProblem::PartialRecord {
            size,
            record: role.record,
        });
    }
    let needed = count as u64 * role.record;
    if size < needed {
        return unfit(ResourceProblem::TooSmall { needed, size });
    }
    Ok(())
}
