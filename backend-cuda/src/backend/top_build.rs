//! A frame of moves placed on the device ([`prism_core::placement`]): the
//! moved instances' records and world boxes and the tree over the instances
//! worked out by kernels/top_build.cuh and the fast build's passes, instead
//! of by the host and uploaded. The host lays out one 96-byte
//! [`GpuMove`] a move; the device gives back one word (the first refused
//! move, if any) and the scene's bounds.
//!
//! At 10,000 moved instances the host's update and upload took 1.5 ms of a
//! 3.2 ms moving frame on an H200's host (bench/RESULTS.md); the device's
//! passes are a few microseconds each, so their number sets the time.

use super::device::DeviceState;
use super::fast_build::{Arg, Leaves, TreePasses, launch};
use super::levels::{count32, node_bytes};
use crate::driver::{self, BACKEND, DeviceBuffer, PinnedBuffer};
use crate::kernels::{FAST_BUILD_THREADS, FAST_SORT_TILE};
use prism_core::gpu::GpuInstance;
use prism_core::{Aabb, Accel, Error, GpuMove};

/// What a frame of moves on the device ended with.
pub(super) enum Placed {
    /// Every transform accepted: the scene's new bounds, and the device
    /// milliseconds of the copies and kernels (CUDA events).
    Done { bounds: Aabb, device_ms: f64 },
    /// The move at this index of the update was refused; nothing on the
    /// device changed.
    Refused(usize),
}

/// The device arrays of the moves' placement and the top tree's build, grown
/// as a scene grows and kept from frame to frame.
pub(super) struct TopBuild {
    /// The moves, staged in page-locked memory and copied.
    staging: PinnedBuffer,
    moves: DeviceBuffer,
    /// Each move's record and world box, aside until every move is accepted.
    placed: DeviceBuffer,
    placed_world: DeviceBuffer,
    /// Word 0: the first refused move (u32::MAX: none); words 1-6: the
    /// scene's bounds; words 8-13: the centres' bounds (fast_ordered).
    status: DeviceBuffer,
    /// The live instances' indices, in index order.
    live: DeviceBuffer,
    /// Every instance's world box (two float4 rows), current on the device
    /// while `world_current` holds.
    world: DeviceBuffer,
    /// Whether `world` holds the host's world boxes (false after the scene
    /// was uploaded or updated by the host).
    pub(super) world_current: bool,
    boxes: DeviceBuffer,
    keys: [DeviceBuffer; 2],
    values: [DeviceBuffer; 2],
    hist: DeviceBuffer,
    slot_boxes: DeviceBuffer,
    names: DeviceBuffer,
    children: DeviceBuffer,
    ranges: DeviceBuffer,
    links: DeviceBuffer,
    node_boxes: DeviceBuffer,
    costs: DeviceBuffer,
    kept: DeviceBuffer,
    arrivals: DeviceBuffer,
    /// Moves, instances and live instances the arrays have room for.
    move_room: usize,
    instance_room: usize,
    live_room: usize,
    /// The live instances as last uploaded to `live`.
    live_host: Vec<u32>,
}

impl TopBuild {
    /// Arrays for `moves` moves over `instances` instances of which `live`
    /// are live, with room to grow by a half.
    fn new(moves: usize, instances: usize, live: usize) -> Result<TopBuild, Error> {
        let (m, n, l) = (
            moves + moves / 2,
            instances + instances / 2,
            live + live / 2,
        );
        let inner = l.max(2) - 1;
        let blocks = (l as u32).div_ceil(FAST_SORT_TILE).max(1) as usize;
        let a = DeviceBuffer::alloc;
        Ok(TopBuild {
            staging: PinnedBuffer::alloc(m * size_of::<GpuMove>(), "moves staging")?,
            moves: a(m * size_of::<GpuMove>(), "moves")?,
            placed: a(m * size_of::<GpuInstance>(), "moved records")?,
            placed_world: a(m * 32, "moved world boxes")?,
            status: a(64, "moves status")?,
            live: a(l * 4, "live instances")?,
            world: a(n * 32, "instance world boxes")?,
            world_current: false,
            boxes: a(l * 32, "top build: boxes")?,
            keys: [a(l * 4, "top build: keys")?, a(l * 4, "top build: keys")?],
            values: [
                a(l * 4, "top build: values")?,
                a(l * 4, "top build: values")?,
            ],
            hist: a(256 * blocks * 4, "top build: histograms")?,
            slot_boxes: a(l * 32, "top build: slot boxes")?,
            names: a(l * 4, "top build: names")?,
            children: a(inner * 8, "top build: children")?,
            ranges: a(inner * 8, "top build: ranges")?,
            links: a((inner + l) * 4, "top build: parent links")?,
            node_boxes: a(inner * 32, "top build: node boxes")?,
            costs: a(inner * 4, "top build: costs")?,
            kept: a(inner * 4, "top build: kept counts")?,
            arrivals: a(inner * 4, "top build: arrivals")?,
            move_room: m,
            instance_room: n,
            live_room: l,
            live_host: Vec::new(),
        })
    }

    fn fits(&self, moves: usize, instances: usize, live: usize) -> bool {
        moves <= self.move_room && instances <= self.instance_room && live <= self.live_room
    }
}

/// A float from its fast_ordered word (fast_build.cuh's fast_unordered).
fn unordered(u: u32) -> f32 {
    f32::from_bits(if u & 0x8000_0000 != 0 {
        u & 0x7FFF_FFFF
    } else {
        !u
    })
}

/// Each instance's world box as two float4 rows, as the kernels read them.
fn world_rows(world: &[Aabb]) -> Vec<[f32; 4]> {
    world
        .iter()
        .flat_map(|b| {
            [
                [b.min.x, b.min.y, b.min.z, 0.0],
                [b.max.x, b.max.y, b.max.z, 0.0],
            ]
        })
        .collect()
}

impl DeviceState {
    /// Room in page-locked memory for `moves` moves (the kernels' arrays
    /// grown for a scene of `instances` instances first), for
    /// [`Accel::device_moves_into`] to lay them out in; then
    /// [`DeviceState::place_moves`].
    pub(super) fn move_slots(
        &mut self,
        moves: usize,
        instances: usize,
    ) -> Result<&mut [GpuMove], Error> {
        // Every instance may be live: the arrays over live instances are
        // sized for all of them.
        if self
            .top_build
            .as_ref()
            .is_none_or(|t| !t.fits(moves, instances, instances))
        {
            // The old arrays freed before the new ones are taken.
            drop(self.top_build.take());
            self.top_build = Some(TopBuild::new(moves, instances, instances)?);
        }
        let top = self.top_build.as_mut().ok_or(Error::Device {
            backend: BACKEND,
            operation: "placing moves",
            message: "no arrays".into(),
        })?;
        let bytes = top
            .staging
            .range_mut(0, moves * size_of::<GpuMove>())
            .ok_or(Error::Device {
                backend: BACKEND,
                operation: "staging moves",
                message: format!("{moves} moves do not fit the staging buffer"),
            })?;
        // Page-locked memory is page aligned, and a move is 96 bytes.
        bytemuck::try_cast_slice_mut(bytes).map_err(|e| Error::Device {
            backend: BACKEND,
            operation: "staging moves",
            message: e.to_string(),
        })
    }

    /// Place the `moves` moves laid out in [`DeviceState::move_slots`] (by
    /// [`Accel::device_moves_into`] for `accel`, whose host records, world
    /// boxes and top tree are current or were last made so by this device)
    /// and build the tree over the instances, in one pass of launches and
    /// one wait at the end. The scene on the device is two-level and holds
    /// `accel`'s instances.
    pub(super) fn place_moves(&mut self, accel: &Accel, moves: usize) -> Result<Placed, Error> {
        self.ensure_events(2)?;
        let mut top = self.top_build.take().ok_or(Error::Device {
            backend: BACKEND,
            operation: "placing moves",
            message: "no arrays".into(),
        })?;
        let r = self.place_in(&mut top, accel, moves);
        // A failure leaves the device's world boxes unknown.
        if r.is_err() {
            top.world_current = false;
        }
        self.top_build = Some(top);
        r
    }

    fn place_in(
        &mut self,
        top: &mut TopBuild,
        accel: &Accel,
        moves: usize,
    ) -> Result<Placed, Error> {
        let count = count32(moves, "moves")?;
        let scene = self.scene.as_ref().ok_or(Error::NoScene)?;
        let levels = scene.levels.as_ref().ok_or(Error::NotTwoLevel)?;
        let (records_ptr, top_ptr) = (levels.instances.ptr(), levels.top_nodes.ptr());
        let (instance_bytes, top_bytes) = (levels.instances.bytes(), levels.top_nodes.bytes());
        if !top.world_current {
            // The host's instances are current (the host placed them last):
            // their world boxes and the live list go up once, and stay until
            // the host changes the scene again.
            accel.live_instances(&mut top.live_host);
            top.world.upload(
                &self.stream,
                bytemuck::cast_slice(&world_rows(accel.instance_bounds())),
            )?;
            top.live
                .upload(&self.stream, bytemuck::cast_slice(&top.live_host))?;
            top.world_current = true;
        }
        let n = count32(top.live_host.len(), "live instances")?;
        if n < 2
            || node_bytes(n as usize - 1) > top_bytes
            || instance_bytes < std::mem::size_of_val(accel.instances())
        {
            return Err(Error::Device {
                backend: BACKEND,
                operation: "placing moves",
                message: format!("{n} live instances do not fit the instance buffers"),
            });
        }
        self.events[0].record(&self.stream)?;
        // SAFETY: the staging range [0, moves * 96) was written by the
        // caller (move_slots) and is not written again before the stream is
        // synchronised below (the download at the end).
        unsafe {
            driver::copy_from_pinned(
                &top.moves,
                0,
                &top.staging,
                0,
                moves * size_of::<GpuMove>(),
                &self.stream,
            )?
        };
        // Status: no refusal; the scene's and the centres' bounds empty (min
        // words at the top of fast_ordered's order, max words at its bottom).
        top.status.fill_u32(&self.stream, u32::MAX, 4)?;
        top.status.fill_u32_from(&self.stream, 0, 4, 3)?;
        top.status.fill_u32_from(&self.stream, u32::MAX, 8, 3)?;
        top.status.fill_u32_from(&self.stream, 0, 11, 3)?;
        top.arrivals.fill_u32(&self.stream, 0, n as usize - 1)?;
        let k = self.kernels.top;
        let p = |b: &DeviceBuffer| Arg::Ptr(b.ptr());
        let move_blocks = count.div_ceil(FAST_BUILD_THREADS);
        let blocks = n.div_ceil(FAST_BUILD_THREADS);
        let centre_bounds = top.status.ptr() + 32;
        let scene_bounds = top.status.ptr() + 4;
        // SAFETY (every launch below): the arguments match the kernel's
        // parameters in prism.cu one for one (device pointers as u64, counts
        // as u32); `moves` holds `count` moves, `placed` and `placed_world`
        // room for as many (TopBuild::fits); every move names a live
        // instance below the records' and world boxes' room
        // (Accel::device_moves_into); `live` holds `n` instance indices below
        // that room; the build's arrays have room for `n` keys and the top
        // tree's buffer for `n - 1` nodes (checked above).
        unsafe {
            launch(
                self,
                k[0],
                move_blocks,
                &mut [
                    p(&top.moves),
                    Arg::U32(count),
                    p(&top.placed),
                    p(&top.placed_world),
                    p(&top.status),
                ],
            )?;
            launch(
                self,
                k[1],
                move_blocks,
                &mut [
                    p(&top.moves),
                    Arg::U32(count),
                    p(&top.placed),
                    p(&top.placed_world),
                    Arg::Ptr(records_ptr),
                    p(&top.world),
                    p(&top.status),
                ],
            )?;
            launch(
                self,
                k[2],
                blocks,
                &mut [
                    p(&top.live),
                    Arg::U32(n),
                    p(&top.world),
                    p(&top.boxes),
                    Arg::Ptr(centre_bounds),
                    Arg::Ptr(scene_bounds),
                ],
            )?;
        }
        let passes = TreePasses {
            n,
            boxes: &top.boxes,
            centre_bounds,
            keys: [&top.keys[0], &top.keys[1]],
            values: [&top.values[0], &top.values[1]],
            hist: &top.hist,
            slot_boxes: &top.slot_boxes,
            children: &top.children,
            ranges: &top.ranges,
            links: &top.links,
            node_boxes: &top.node_boxes,
            costs: &top.costs,
            kept: &top.kept,
            arrivals: &top.arrivals,
            nodes: top_ptr,
            leaves: Leaves::Instances {
                live: top.live.ptr(),
                names: top.names.ptr(),
            },
        };
        // SAFETY: the arrays have room for `n` keys (TopBuild::fits, every
        // instance may be live), `live` holds the `n` live instances, the
        // top tree's buffer room for `n - 1` nodes (checked above), and the
        // launches above wrote the boxes and their centres' bounds.
        unsafe { passes.enqueue(self)? };
        self.events[1].record(&self.stream)?;
        let mut words = [0u32; 8];
        top.status
            .download(&self.stream, bytemuck::cast_slice_mut(&mut words))?;
        if words[0] != u32::MAX {
            return Ok(Placed::Refused(words[0] as usize));
        }
        let device_ms = self.events[0].elapsed_ms(&self.events[1])? as f64;
        let bounds = Aabb {
            min: prism_core::glam::Vec3::new(
                unordered(words[1]),
                unordered(words[2]),
                unordered(words[3]),
            ),
            max: prism_core::glam::Vec3::new(
                unordered(words[4]),
                unordered(words[5]),
                unordered(words[6]),
            ),
        };
        if let Some(scene) = self.scene.as_mut() {
            scene.args.top_node_count = n - 1;
        }
        Ok(Placed::Done { bounds, device_ms })
    }
}

impl super::CudaBackend {
    /// The device's instance records and tree over the instances,
    /// downloaded (empty for a flat scene): for tests that hold them against
    /// the host's ([`Accel::instances`], [`Accel::top_nodes`]).
    pub fn instance_arrays(
        &mut self,
    ) -> Result<(Vec<GpuInstance>, Vec<prism_core::gpu::BvhNode>), Error> {
        let r = (|| {
            let (st, _g) = self.enter()?;
            let scene = st.scene.as_ref().ok_or(Error::NoScene)?;
            let Some(levels) = scene.levels.as_ref() else {
                return Ok((Vec::new(), Vec::new()));
            };
            let mut records = vec![GpuInstance::default(); scene.args.instance_count as usize];
            levels
                .instances
                .download(&st.stream, bytemuck::cast_slice_mut(&mut records))?;
            let mut nodes =
                vec![prism_core::gpu::BvhNode::default(); scene.args.top_node_count as usize];
            levels
                .top_nodes
                .download(&st.stream, bytemuck::cast_slice_mut(&mut nodes))?;
            Ok((records, nodes))
        })();
        self.checked(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_words_give_their_floats_back() {
        // fast_ordered: negative floats inverted, positive ones with the sign bit set.
        let ordered = |f: f32| {
            let b = f.to_bits();
            if b & 0x8000_0000 != 0 {
                !b
            } else {
                b | 0x8000_0000
            }
        };
        for f in [
            0.0f32,
            -0.0,
            1.5,
            -2.25,
            f32::INFINITY,
            f32::NEG_INFINITY,
            1e-38,
            -3e38,
        ] {
            assert_eq!(unordered(ordered(f)).to_bits(), f.to_bits());
        }
        assert!(ordered(-1.0) < ordered(-0.5) && ordered(-0.5) < ordered(0.25));
    }

    #[test]
    fn world_boxes_become_two_rows_each() {
        let b = Aabb {
            min: prism_core::glam::Vec3::new(1.0, 2.0, 3.0),
            max: prism_core::glam::Vec3::new(4.0, 5.0, 6.0),
        };
        assert_eq!(
            world_rows(&[b, Aabb::EMPTY])[..2],
            [[1.0, 2.0, 3.0, 0.0], [4.0, 5.0, 6.0, 0.0]]
        );
        assert_eq!(world_rows(&[b, Aabb::EMPTY]).len(), 4);
    }
}
