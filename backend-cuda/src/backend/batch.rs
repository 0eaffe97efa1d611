//! Ray batches on the device: [`Backend::intersect`](prism_core::Backend::intersect)
//! and [`Backend::occluded`](prism_core::Backend::occluded)'s body, which traces a
//! batch in launches of at most [`MAX_LAUNCH_RAYS`] rays through grow-only
//! scratch buffers, the trace kernels' launch, and
//! [`CudaBackend::intersect_resident_bench`]'s body, which times those kernels on a
//! batch kept on the device ([`ResidentBench`]).

use super::device::{DeviceState, ResidentRays, ms_to_duration};
use super::{CudaBackend, MAX_LAUNCH_RAYS, ResidentBench};
use crate::driver::{BACKEND, DeviceBuffer};
use crate::kernels::{KernelConfig, SceneArgs, SceneKind, WORK_WORDS};
use prism_core::backend::check_batch;
use prism_core::{Error, Hit, Ray, RenderStats, TimingSource};
use std::ffi::c_void;
use std::time::Instant;

impl DeviceState {
    /// Launch a trace kernel over the `n` rays at `rays_ptr` (`GpuRay`
    /// records), writing `Hit`s (closest) or one byte a ray to `out_ptr`.
    pub(super) fn launch_trace(
        &mut self,
        config: &KernelConfig,
        closest: bool,
        scene: (SceneArgs, SceneKind),
        rays_ptr: u64,
        n: u32,
        out_ptr: u64,
    ) -> Result<(), Error> {
        let work = self.work.ptr();
        let (mut scene, kind) = scene;
        let k = self.kernels.kinds[kind as usize];
        // A two-level scene (instance records uploaded) walks its instances.
        // A flat scene of heightfields alone (one primitive per record)
        // takes the kernels compiled for nothing else.
        let heightfields_only = kind == SceneKind::Heightfields
            && scene.top_nodes == 0
            && scene.prim_count == scene.heightfield_count;
        let (f, resident) = match (closest, scene.top_nodes != 0) {
            _ if heightfields_only => self.kernels.heightfields_only[usize::from(!closest)],
            (true, false) => (k.intersect, k.intersect_grid),
            (false, false) => (k.occluded, k.occluded_grid),
            (true, true) => (k.intersect_instances, k.intersect_instances_grid),
            (false, true) => (k.occluded_instances, k.occluded_instances_grid),
        };
        let grid = if config.persistent {
            // Every ray range's counter (see WORK_WORDS).
            self.work.fill_u32(&self.stream, 0, WORK_WORDS)?;
            resident
        } else {
            n.div_ceil(config.trace_threads).max(1)
        };
        let mut rays = rays_ptr;
        let mut n = n;
        let mut out = out_ptr;
        let mut work = work;
        let mut params: [*mut c_void; 5] = [
            (&mut scene as *mut SceneArgs).cast(),
            (&mut rays as *mut u64).cast(),
            (&mut n as *mut u32).cast(),
            (&mut out as *mut u64).cast(),
            (&mut work as *mut u64).cast(),
        ];
        // SAFETY: the five values match the parameters of prism_intersect* /
        // prism_occluded* (SceneView, const float4*, u32, out*, u32*) in order
        // and layout (SceneArgs' layout is asserted in prism_types.cuh); the
        // scene buffers hold the counts in `scene`; rays_ptr holds `n` GpuRay
        // records and out_ptr room for `n` outputs (Hit records, or bytes);
        // `work` is the WORK_WORDS-word work counter buffer.
        unsafe {
            f.launch(
                (grid, 1),
                (config.trace_threads, 1),
                &self.stream,
                &mut params,
            )
        }
    }
}

/// A vector with room for exactly `n` elements, filled by `fill`; an
/// allocation failure is [`Error::HostOutOfMemory`] naming `what`.
fn host_vec<T>(
    n: usize,
    what: &'static str,
    fill: impl FnOnce(&mut Vec<T>),
) -> Result<Vec<T>, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error::HostOutOfMemory {
        what,
        bytes: (n as u64).saturating_mul(std::mem::size_of::<T>() as u64),
    })?;
    fill(&mut v);
    Ok(v)
}

impl CudaBackend {
    pub(super) fn resident_inner(
        &mut self,
        rays: &[Ray],
        batch: usize,
        repeats: u32,
    ) -> Result<ResidentBench, Error> {
        check_batch("intersect_resident_bench", rays, rays.len())?;
        if rays.is_empty() {
            return Err(Error::Setting {
                field: "intersect_resident_bench.rays",
                value: 0.0,
                reason: "needs at least one ray",
            });
        }
        if batch == 0 || batch > MAX_LAUNCH_RAYS * 64 {
            return Err(Error::Setting {
                field: "intersect_resident_bench.batch",
                value: batch as f64,
                reason: "must be in 1..=2^28",
            });
        }
        if repeats == 0 || repeats > 10_000 {
            return Err(Error::Setting {
                field: "intersect_resident_bench.repeats",
                value: repeats as f64,
                reason: "must be in 1..=10000",
            });
        }
        let n = u32::try_from(batch).map_err(|_| Error::DeviceLimit {
            backend: BACKEND,
            what: "rays per launch",
            needed: batch as u64,
            limit: u32::MAX as u64,
        })?;
        let host = host_vec(batch, "resident ray batch (host)", |v: &mut Vec<Ray>| {
            v.extend(rays.iter().copied().cycle().take(batch))
        })?;
        let config = self.options.config.clone();
        let (st, _g) = self.enter()?;
        let scene = st.scene_args()?;
        let mut ray_buf = DeviceBuffer::alloc(batch * size_of::<Ray>(), "resident ray batch")?;
        let hit_buf = DeviceBuffer::alloc(batch * size_of::<Hit>(), "resident hits")?;
        let flag_buf = DeviceBuffer::alloc(batch, "resident occlusion flags")?;
        ray_buf.upload(&st.stream, bytemuck::cast_slice(&host))?;
        st.ensure_events(2 * repeats as usize + 2)?;
        let time = |closest: bool, st: &mut DeviceState| -> Result<Vec<f64>, Error> {
            let out = if closest {
                hit_buf.ptr()
            } else {
                flag_buf.ptr()
            };
            st.launch_trace(&config, closest, scene, ray_buf.ptr(), n, out)?;
            for i in 0..repeats as usize {
                st.events[2 * i].record(&st.stream)?;
                st.launch_trace(&config, closest, scene, ray_buf.ptr(), n, out)?;
                st.events[2 * i + 1].record(&st.stream)?;
            }
            st.stream.synchronize()?;
            (0..repeats as usize)
                .map(|i| Ok(st.events[2 * i].elapsed_ms(&st.events[2 * i + 1])? as f64))
                .collect()
        };
        let mut closest = time(true, st)?;
        let mut occluded = time(false, st)?;
        let n_hits = rays.len().min(batch);
        let mut hits = host_vec(n_hits, "resident hits (host)", |v| {
            v.resize(n_hits, Hit::MISS)
        })?;
        hit_buf.download(&st.stream, bytemuck::cast_slice_mut(&mut hits))?;
        let mut flags = host_vec(batch, "resident occlusion flags (host)", |v| {
            v.resize(batch, 0u8)
        })?;
        flag_buf.download(&st.stream, &mut flags)?;
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            (v[v.len() / 2], (v[0], v[v.len() - 1]))
        };
        let (c_ms, c_range) = median(&mut closest);
        let (o_ms, o_range) = median(&mut occluded);
        let mrays = |ms: f64| {
            if ms > 0.0 {
                batch as f64 / (ms * 1e3)
            } else {
                0.0
            }
        };
        Ok(ResidentBench {
            rays: batch,
            repeats,
            closest_ms: c_ms,
            closest_range_ms: c_range,
            occluded_ms: o_ms,
            occluded_range_ms: o_range,
            closest_mrays_per_s: mrays(c_ms),
            occluded_mrays_per_s: mrays(o_ms),
            hits,
            occluded_count: flags.iter().filter(|&&f| f != 0).count(),
        })
    }

    pub(super) fn trace_inner(
        &mut self,
        rays: &[Ray],
        closest: bool,
        hits: Option<&mut [Hit]>,
    ) -> Result<RenderStats, Error> {
        let t0 = Instant::now();
        if self.accel.is_none() {
            return Err(Error::NoScene);
        }
        if rays.is_empty() {
            return Ok(RenderStats {
                total: t0.elapsed(),
                timing: TimingSource::DeviceEvents,
                ..Default::default()
            });
        }
        let config = self.options.config.clone();
        let mut scratch = std::mem::take(&mut self.occluded_scratch);
        let out_bytes = if closest { size_of::<Hit>() } else { 1 };
        let chunk = rays.len().min(MAX_LAUNCH_RAYS);
        if !closest {
            scratch.clear();
            scratch
                .try_reserve_exact(rays.len())
                .map_err(|_| Error::HostOutOfMemory {
                    what: "host occlusion flags",
                    bytes: rays.len() as u64,
                })?;
            scratch.resize(rays.len(), 0);
        }
        let (st, _g) = self.enter()?;
        let scene = st.scene_args()?;
        st.ensure_batch(chunk, out_bytes)?;
        st.ensure_events(4)?;
        let (mut up, mut trace, mut down) = (0.0f64, 0.0f64, 0.0f64);
        let mut hits = hits;
        for (c, part) in rays.chunks(chunk).enumerate() {
            let first = c * chunk;
            let n = part.len() as u32;
            let (rays_ptr, out_ptr) = match (&st.rays, &st.outputs) {
                (Some(r), Some(o)) => (r.ptr(), o.ptr()),
                _ => {
                    return Err(Error::Device {
                        backend: BACKEND,
                        operation: "trace",
                        message: "no batch buffers".into(),
                    });
                }
            };
            st.events[0].record(&st.stream)?;
            if let Some(b) = st.rays.as_mut() {
                b.upload(&st.stream, bytemuck::cast_slice(part))?;
            }
            st.events[1].record(&st.stream)?;
            st.launch_trace(&config, closest, scene, rays_ptr, n, out_ptr)?;
            st.events[2].record(&st.stream)?;
            let out_buf = st.outputs.as_ref().ok_or(Error::Device {
                backend: BACKEND,
                operation: "trace",
                message: "no batch buffers".into(),
            })?;
            match hits.as_deref_mut() {
                Some(h) if closest => {
                    out_buf.download(
                        &st.stream,
                        bytemuck::cast_slice_mut(&mut h[first..first + part.len()]),
                    )?;
                }
                _ => out_buf.download(&st.stream, &mut scratch[first..first + part.len()])?,
            }
            st.events[3].record(&st.stream)?;
            st.events[3].synchronize()?;
            up += st.events[0].elapsed_ms(&st.events[1])? as f64;
            trace += st.events[1].elapsed_ms(&st.events[2])? as f64;
            down += st.events[2].elapsed_ms(&st.events[3])? as f64;
        }
        self.occluded_scratch = scratch;
        Ok(RenderStats {
            upload: ms_to_duration(up),
            trace: ms_to_duration(trace),
            download: ms_to_duration(down),
            total: t0.elapsed(),
            rays: rays.len() as u64,
            timing: TimingSource::DeviceEvents,
            ..Default::default()
        })
    }
}

/// The error of a resident-batch call before any batch was set.
fn no_resident_rays() -> Error {
    Error::Setting {
        field: "resident rays",
        value: 0.0,
        reason: "none on the device: call set_resident_rays first (a lost context drops them)",
    }
}

impl CudaBackend {
    pub(super) fn set_resident_inner(&mut self, rays: &[Ray]) -> Result<(), Error> {
        check_batch("set_resident_rays", rays, rays.len())?;
        if rays.len() > MAX_LAUNCH_RAYS {
            return Err(Error::DeviceLimit {
                backend: BACKEND,
                what: "resident rays",
                needed: rays.len() as u64,
                limit: MAX_LAUNCH_RAYS as u64,
            });
        }
        let (st, _g) = self.enter()?;
        // The old batch goes first, so that its memory can hold the new one.
        st.resident = None;
        let n = rays.len().max(1);
        let mut buf = DeviceBuffer::alloc(n * size_of::<Ray>(), "resident rays")?;
        let hits = DeviceBuffer::alloc(n * size_of::<Hit>(), "resident hits")?;
        let flags = DeviceBuffer::alloc(n, "resident occlusion flags")?;
        buf.upload(&st.stream, bytemuck::cast_slice(rays))?;
        st.resident = Some(ResidentRays {
            rays: buf,
            hits,
            flags,
            count: rays.len() as u32,
        });
        Ok(())
    }

    pub(super) fn trace_resident_inner(&mut self, closest: bool) -> Result<RenderStats, Error> {
        let t0 = Instant::now();
        let config = self.options.config.clone();
        let (st, _g) = self.enter()?;
        let (rays, out, n) = match &st.resident {
            Some(r) if closest => (r.rays.ptr(), r.hits.ptr(), r.count),
            Some(r) => (r.rays.ptr(), r.flags.ptr(), r.count),
            None => return Err(no_resident_rays()),
        };
        let scene = st.scene_args()?;
        st.ensure_events(2)?;
        st.events[0].record(&st.stream)?;
        if n > 0 {
            st.launch_trace(&config, closest, scene, rays, n, out)?;
        }
        st.events[1].record(&st.stream)?;
        st.events[1].synchronize()?;
        let ms = st.events[0].elapsed_ms(&st.events[1])? as f64;
        Ok(RenderStats {
            trace: ms_to_duration(ms),
            total: t0.elapsed(),
            rays: n as u64,
            timing: TimingSource::DeviceEvents,
            ..Default::default()
        })
    }

    pub(super) fn resident_hits_inner(&mut self, hits: &mut [Hit]) -> Result<(), Error> {
        let (st, _g) = self.enter()?;
        let r = st.resident.as_ref().ok_or_else(no_resident_rays)?;
        if hits.len() > r.count as usize {
            return Err(Error::LengthMismatch {
                what: "resident_hits",
                inputs: r.count as usize,
                outputs: hits.len(),
            });
        }
        r.hits.download(&st.stream, bytemuck::cast_slice_mut(hits))
    }
}
