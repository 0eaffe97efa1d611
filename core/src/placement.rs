//! Moves placed by a device: a frame that only moves instances (an engine's
//! usual frame) can have the moved instances' records and world boxes and the
//! tree over the instances worked out by the GPU that traces them, instead of
//! by the host and uploaded.
//!
//! The host's part is small: [`Accel::device_moves`] checks the update (live
//! instances, no repeats) and lays out one [`GpuMove`] a move; the device
//! mirrors [`crate::instance`]'s `world_to_object` (in `f64`, with its
//! refusals), `gpu_instance` and `world_bounds`, and the Morton top builder
//! ([`crate::top_level`]), bit for bit. When the device has accepted every
//! transform, [`Accel::commit_device_moves`] stores them on the host and
//! marks the host's records, world boxes and top tree stale; they are worked
//! out again, to the same bits, only when something on the host needs them
//! ([`Accel::try_refresh`], or the next update that does more than move).
//!
//! Only Morton top trees are built this way (the [`TopLevelBuild::Auto`]
//! choice above [`crate::top_level::SAH_MAX_INSTANCES`] live instances):
//! a binned SAH build does not map onto a few GPU passes.
//!
//! The CUDA backend places moves this way. The wgpu backend places them on
//! the host: `world_to_object` refuses and inverts in `f64`, which WGSL has
//! only behind an optional feature (`SHADER_F64`, absent from Metal and most
//! mobile adapters), and an `f32` inverse would give records other than
//! core's.

use crate::aabb::Aabb;
use crate::accel::Accel;
use crate::error::Error;
use crate::instance::{rows, world_to_object};
use crate::top_level::{SAH_MAX_INSTANCES, TopLevelBuild};
use crate::update::{Changes, SceneUpdate};
use alloc::vec::Vec;
use bytemuck::{Pod, Zeroable};

/// One moved instance as a device places it (`kernels/top_build.cuh`): its
/// new transform and what the record needs from the instance and its
/// geometry. 96 bytes, six 16-byte rows, so that a thread reads it in six
/// aligned loads.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuMove {
    /// The new object-to-world rows `(m_k0, m_k1, m_k2, t_k)`.
    pub rows: [[f32; 4]; 3],
    /// Instance index, its geometry's root node, its mask and its material
    /// override ([`crate::gpu::GpuInstance::NO_MATERIAL`] for none).
    pub info: [u32; 4],
    /// The geometry's object box: `min` then `max`, as six floats, then
    /// two zero words.
    pub bounds: [f32; 8],
}

/// Whether a tree over `live` instances built as `build` is the Morton
/// builder's.
#[inline]
pub fn top_is_morton(build: TopLevelBuild, live: usize) -> bool {
    match build {
        TopLevelBuild::Auto => live > SAH_MAX_INSTANCES,
        TopLevelBuild::Sah => false,
        TopLevelBuild::Morton => true,
    }
}

impl Accel {
    /// Lay `update`'s moves out for a device to place, into `out`. `Ok(false)`
    /// (with `out` empty) when the update is not for the device: it does more
    /// than move instances, moves one instance twice, or the scene's top tree
    /// is not built by Morton codes or has fewer than two live instances.
    /// A move of a removed or missing instance is the error
    /// [`Accel::update`] gives for it; the scene is unchanged either way.
    pub fn device_moves(
        &mut self,
        update: &SceneUpdate,
        out: &mut Vec<GpuMove>,
    ) -> Result<bool, Error> {
        out.clear();
        let n = update.transforms.len();
        out.try_reserve(n).map_err(|_| Error::HostOutOfMemory {
            what: "device moves",
            bytes: (n * size_of::<GpuMove>()) as u64,
        })?;
        out.resize(n, GpuMove::default());
        let placed = self.device_moves_into(update, out)?;
        if !placed {
            out.clear();
        }
        Ok(placed)
    }

    /// [`Accel::device_moves`] into `out`, which holds exactly one entry a
    /// move ([`SceneUpdate::move_count`]): a backend lays the moves straight
    /// into the memory it copies them from. `out` is left partly written
    /// when the answer is not `Ok(true)`.
    pub fn device_moves_into(
        &mut self,
        update: &SceneUpdate,
        out: &mut [GpuMove],
    ) -> Result<bool, Error> {
        let Some(levels) = self.levels.as_deref_mut() else {
            return Err(Error::NotTwoLevel);
        };
        let moves = update.transforms.as_slice();
        if moves.is_empty()
            || out.len() != moves.len()
            || !update.remove.is_empty()
            || !update.add.is_empty()
            || !update.masks.is_empty()
            || !update.vertices.is_empty()
            || !update.rebuild.is_empty()
        {
            return Ok(false);
        }
        let live = levels.instances.iter().filter(|h| h.live).count();
        if live < 2 || !top_is_morton(levels.build, live) {
            return Ok(false);
        }
        // One bit an instance: a repeated move (which the host applies in
        // order) is left to the host.
        let marks = &mut levels.scratch.marks;
        marks.clear();
        marks
            .try_reserve(levels.instances.len().div_ceil(64))
            .map_err(|_| Error::HostOutOfMemory {
                what: "instance marks",
                bytes: levels.instances.len().div_ceil(8) as u64,
            })?;
        marks.resize(levels.instances.len().div_ceil(64), 0);
        for (&(i, transform), slot) in moves.iter().zip(out.iter_mut()) {
            let h = match levels.instances.get(i as usize) {
                Some(h) if h.live => h,
                Some(_) => {
                    return Err(Error::InstanceOutOfRange {
                        instance: i,
                        reason: "removed",
                    });
                }
                None => {
                    return Err(Error::InstanceOutOfRange {
                        instance: i,
                        reason: "past the last instance",
                    });
                }
            };
            // ok: `marks` holds a bit for every instance index.
            let word = &mut marks[i as usize / 64];
            let bit = 1u64 << (i % 64);
            if *word & bit != 0 {
                return Ok(false);
            }
            *word |= bit;
            let blas = levels
                .blas
                .get(h.geometry as usize)
                .ok_or(Error::GeometryOutOfRange {
                    instance: i as usize,
                    geometry: h.geometry,
                    count: levels.blas.len(),
                })?;
            let (lo, hi) = (blas.bounds.min, blas.bounds.max);
            *slot = GpuMove {
                rows: rows(&transform),
                info: [i, blas.root(), h.mask as u32, h.material()],
                bounds: [lo.x, lo.y, lo.z, hi.x, hi.y, hi.z, 0.0, 0.0],
            };
        }
        Ok(true)
    }

    /// The error [`Accel::update`] gives for move `k` of `update`, whose
    /// transform a device refused; `None` when the host accepts it (a device
    /// that does not mirror core's arithmetic).
    pub fn move_error(&self, update: &SceneUpdate, k: usize) -> Option<Error> {
        let &(i, transform) = update.transforms.get(k)?;
        world_to_object(i as usize, &transform).err()
    }

    /// Take the moves of `update` (laid out by [`Accel::device_moves`]) as
    /// placed by a device that accepted every transform: the transforms are
    /// stored, the records, world boxes and top tree left stale until
    /// [`Accel::try_refresh`]; `bounds`, the union of every live instance's
    /// world box as the device worked it out, becomes [`Accel::bounds`].
    /// Returns what changed, as [`Accel::update`] would.
    pub fn commit_device_moves(&mut self, update: &SceneUpdate, bounds: Aabb) -> Changes {
        let mut changes = Changes::default();
        let Some(levels) = self.levels.as_deref_mut() else {
            return changes;
        };
        let mut touched = (u32::MAX, 0u32);
        for &(i, transform) in &update.transforms {
            if let Some(h) = levels.instances.get_mut(i as usize) {
                h.set_device_transform(&transform);
                touched = (touched.0.min(i), touched.1.max(i + 1));
            }
        }
        levels.placement_stale = true;
        self.bounds = bounds;
        changes.instances = (touched.0 < touched.1).then_some(touched.0..touched.1);
        changes.top_rebuilt = true;
        changes
    }

    /// The live instances' indices, in index order, into `out` (the order of
    /// the Morton builder's keys before their sort).
    pub fn live_instances(&self, out: &mut Vec<u32>) {
        out.clear();
        if let Some(levels) = self.levels.as_deref() {
            out.extend(
                levels
                    .instances
                    .iter()
                    .enumerate()
                    .filter(|(_, h)| h.live)
                    .map(|(i, _)| i as u32),
            );
        }
    }

    /// Each instance's world box, by index (an empty box: removed); stale
    /// after [`Accel::commit_device_moves`] until [`Accel::try_refresh`].
    #[inline]
    pub fn instance_bounds(&self) -> &[Aabb] {
        self.levels.as_ref().map_or(&[], |l| &l.world)
    }

    /// Whether the host's records, world boxes and top tree lag moves a
    /// device placed ([`Accel::commit_device_moves`]).
    #[inline]
    pub fn placement_stale(&self) -> bool {
        self.levels.as_ref().is_some_and(|l| l.placement_stale)
    }
}
