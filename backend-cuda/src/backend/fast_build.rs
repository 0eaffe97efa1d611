//! The fast tree ([`BuildQuality::Fast`]) built on the device: the launches of
//! kernels/fast_build.cuh, which mirror `prism_core::lbvh::build` pass for
//! pass, so that the device builds core's tree (the same slots and nodes).
//!
//! Seventeen launches and three memsets on one stream, timed by CUDA events from
//! the first to the last: at a mesh of 100k triangles each launch is a few
//! microseconds of work, so their number, not their work, sets the time.
//!
//! `set_scene` builds a flat scene of triangles alone on the device when the
//! scene asks for the fast tree or the clustered tree (whose rounds follow
//! this build's sort: super::clustered_build); the host then takes the tree back
//! ([`Accel::build_with_tree`]), so that updates, the render configuration and
//! the checks before upload see the same tree, and uploads it as any tree.
//! Other scenes asking for the fast tree (spheres, heightfields, two levels)
//! get core's fast tree built on the host: the same tree, by the host.

use super::CudaBackend;
use super::device::DeviceState;
use crate::driver::{BACKEND, DeviceBuffer, Function};
use crate::kernels::{FAST_BUILD_THREADS, FAST_SORT_TILE};
use prism_core::bvh::Bvh;
use prism_core::glam::Vec3;
use prism_core::gpu::{BvhNode, Primitive};
use prism_core::{Accel, BuildQuality, Error, Scene};
use std::ffi::c_void;

/// What a build on the device made, downloaded: the nodes (core's layout,
/// root first), the primitive records in slot order, the slot order
/// (`order[slot]` = triangle index), and the device time of the build.
#[derive(Clone, Debug)]
pub struct DeviceTree {
    /// Nodes, root first.
    pub nodes: Vec<BvhNode>,
    /// Primitive records in slot order (`prism_core::accel`'s triangle records).
    pub prims: Vec<Primitive>,
    /// `order[slot]`: the triangle the slot holds.
    pub order: Vec<u32>,
    /// Device milliseconds from the first launch to the last (CUDA events).
    pub device_ms: f64,
}

/// A kernel argument, kept alive for its launch.
pub(super) enum Arg {
    Ptr(u64),
    U32(u32),
}

/// What the tree's leaves hold: triangles (their records are written into
/// `prims`), or the instances of a two-level scene (`names[slot]` becomes
/// `live[key]`, the instance a slot holds; leaves of one).
pub(super) enum Leaves {
    Triangles {
        triangles: u64,
        positions: u64,
        vertex_count: u32,
        prims: u64,
    },
    Instances {
        live: u64,
        names: u64,
    },
}

/// The fast build's passes after the boxes (kernels/fast_build.cuh): Morton
/// codes, the four sort passes, the radix tree, boxes bottom-up and the
/// depth-first emit, over `n` keys whose boxes and centres' bounds are
/// written. Shared by the mesh's build and the tree over instances
/// (super::top_build).
pub(super) struct TreePasses<'a> {
    pub(super) n: u32,
    pub(super) boxes: &'a DeviceBuffer,
    pub(super) centre_bounds: u64,
    pub(super) keys: [&'a DeviceBuffer; 2],
    pub(super) values: [&'a DeviceBuffer; 2],
    pub(super) hist: &'a DeviceBuffer,
    pub(super) slot_boxes: &'a DeviceBuffer,
    pub(super) children: &'a DeviceBuffer,
    pub(super) ranges: &'a DeviceBuffer,
    pub(super) links: &'a DeviceBuffer,
    pub(super) node_boxes: &'a DeviceBuffer,
    pub(super) costs: &'a DeviceBuffer,
    pub(super) kept: &'a DeviceBuffer,
    pub(super) arrivals: &'a DeviceBuffer,
    /// Where the nodes go, root first.
    pub(super) nodes: u64,
    pub(super) leaves: Leaves,
}

impl TreePasses<'_> {
    /// Enqueue the passes on the stream (`arrivals` zeroed before).
    ///
    /// # Safety
    /// Every array has room for `n` keys (`n - 1` inner nodes, `n - 1 + n`
    /// links, 256 digits a sort block of histograms, `n - 1` output nodes),
    /// `boxes` and `centre_bounds` hold the keys' boxes and the bounds of
    /// their centres, and the leaves' arrays hold what the kernels read
    /// (triangles and vertices, or `n` live instance indices) and room for
    /// what they write.
    pub(super) unsafe fn enqueue(&self, st: &DeviceState) -> Result<(), Error> {
        // SAFETY: forwarded to the caller's contract.
        unsafe {
            self.enqueue_sort(st)?;
            self.enqueue_tree(st)
        }
    }

    /// Enqueue the Morton codes and their sort: the sorted codes in
    /// `keys[0]`, the slot order in `values[0]`.
    ///
    /// # Safety
    /// As [`TreePasses::enqueue`]'s, for the keys, values and histograms.
    pub(super) unsafe fn enqueue_sort(&self, st: &DeviceState) -> Result<(), Error> {
        let f = &st.kernels.fast;
        let n = self.n;
        let blocks = n.div_ceil(FAST_BUILD_THREADS);
        let sort_blocks = n.div_ceil(FAST_SORT_TILE);
        let p = |b: &DeviceBuffer| Arg::Ptr(b.ptr());
        // SAFETY (every launch below): the arguments match the kernel's
        // parameters in prism.cu one for one (device pointers as u64, counts
        // as u32), and the arrays hold what the kernels index (the caller's
        // contract).
        unsafe {
            launch(
                st,
                f[1],
                blocks,
                &mut [
                    p(self.boxes),
                    Arg::U32(n),
                    Arg::Ptr(self.centre_bounds),
                    p(self.keys[0]),
                    p(self.values[0]),
                ],
            )?;
            for pass in 0..4u32 {
                let (from, to) = ((pass % 2) as usize, ((pass + 1) % 2) as usize);
                let shift = 8 * pass;
                launch(
                    st,
                    f[2],
                    sort_blocks,
                    &mut [
                        p(self.keys[from]),
                        Arg::U32(n),
                        Arg::U32(shift),
                        p(self.hist),
                    ],
                )?;
                launch(
                    st,
                    f[3],
                    1,
                    &mut [p(self.hist), Arg::U32(256 * sort_blocks)],
                )?;
                launch(
                    st,
                    f[4],
                    sort_blocks,
                    &mut [
                        p(self.keys[from]),
                        p(self.values[from]),
                        p(self.keys[to]),
                        p(self.values[to]),
                        Arg::U32(n),
                        Arg::U32(shift),
                        p(self.hist),
                    ],
                )?;
            }
        }
        Ok(())
    }

    /// Enqueue the radix tree, its boxes bottom-up and the emit, after
    /// [`TreePasses::enqueue_sort`].
    ///
    /// # Safety
    /// As [`TreePasses::enqueue`]'s.
    unsafe fn enqueue_tree(&self, st: &DeviceState) -> Result<(), Error> {
        let f = &st.kernels.fast;
        let n = self.n;
        let blocks = n.div_ceil(FAST_BUILD_THREADS);
        let p = |b: &DeviceBuffer| Arg::Ptr(b.ptr());
        let (triangles, positions, vertex_count, prims, live, names, max_leaf) = match self.leaves {
            Leaves::Triangles {
                triangles,
                positions,
                vertex_count,
                prims,
            } => (
                triangles,
                positions,
                vertex_count,
                prims,
                0,
                0,
                prism_core::bvh::MAX_LEAF_SIZE as u32,
            ),
            Leaves::Instances { live, names } => (0, 0, 0, 0, live, names, 1),
        };
        // SAFETY (every launch below): as in `enqueue_sort`.
        unsafe {
            // Four passes: the sorted codes and order are back in [0].
            launch(
                st,
                f[5],
                blocks,
                &mut [
                    p(self.keys[0]),
                    p(self.values[0]),
                    Arg::U32(n),
                    p(self.boxes),
                    Arg::Ptr(triangles),
                    Arg::Ptr(positions),
                    Arg::U32(vertex_count),
                    p(self.slot_boxes),
                    Arg::Ptr(prims),
                    p(self.children),
                    p(self.ranges),
                    p(self.links),
                    Arg::Ptr(live),
                    Arg::Ptr(names),
                ],
            )?;
            launch(
                st,
                f[6],
                blocks,
                &mut [
                    Arg::U32(n),
                    p(self.children),
                    p(self.ranges),
                    p(self.links),
                    p(self.slot_boxes),
                    p(self.node_boxes),
                    p(self.costs),
                    p(self.kept),
                    p(self.arrivals),
                    Arg::U32(max_leaf),
                ],
            )?;
            launch(
                st,
                f[7],
                blocks,
                &mut [
                    Arg::U32(n),
                    p(self.children),
                    p(self.ranges),
                    p(self.links),
                    p(self.slot_boxes),
                    p(self.node_boxes),
                    p(self.kept),
                    Arg::Ptr(names),
                    Arg::Ptr(self.nodes),
                ],
            )?;
        }
        Ok(())
    }
}

/// The device arrays of a build (kept for the next build of a mesh of the
/// same size, `DeviceState::fast_scratch`).
pub(super) struct Scratch {
    pub(super) positions: DeviceBuffer,
    pub(super) triangles: Option<DeviceBuffer>,
    pub(super) boxes: DeviceBuffer,
    pub(super) centre_bounds: DeviceBuffer,
    pub(super) keys: [DeviceBuffer; 2],
    pub(super) values: [DeviceBuffer; 2],
    pub(super) hist: DeviceBuffer,
    pub(super) slot_boxes: DeviceBuffer,
    pub(super) prims: DeviceBuffer,
    pub(super) children: DeviceBuffer,
    pub(super) ranges: DeviceBuffer,
    pub(super) links: DeviceBuffer,
    pub(super) node_boxes: DeviceBuffer,
    pub(super) costs: DeviceBuffer,
    pub(super) kept: DeviceBuffer,
    pub(super) arrivals: DeviceBuffer,
    pub(super) nodes: DeviceBuffer,
    pub(super) n: u32,
    pub(super) vertex_count: u32,
    /// The clustered build's own arrays, made on its first build.
    pub(super) clustered: Option<super::clustered_build::ClusteredArrays>,
}

impl Scratch {
    /// Whether these arrays serve a mesh of `n` triangles over `vertices`
    /// vertices, indexed or not.
    fn fits(&self, n: u32, vertices: usize, indexed: bool) -> bool {
        self.n == n && self.vertex_count as usize == vertices && self.triangles.is_some() == indexed
    }

    /// Upload a mesh of the size the arrays were made for ([`Scratch::fits`]).
    fn upload_mesh(
        &mut self,
        st: &DeviceState,
        positions: &[Vec3],
        triangles: Option<&[[u32; 3]]>,
    ) -> Result<(), Error> {
        self.positions.upload(
            &st.stream,
            bytemuck::cast_slice(positions_flat(positions).as_slice()),
        )?;
        if let (Some(b), Some(t)) = (self.triangles.as_mut(), triangles) {
            b.upload(&st.stream, bytemuck::cast_slice(t))?;
        }
        Ok(())
    }

    /// Allocate the arrays for `n` triangles (at least 2) and upload the mesh.
    fn new(
        st: &DeviceState,
        positions: &[Vec3],
        triangles: Option<&[[u32; 3]]>,
        n: u32,
    ) -> Result<Scratch, Error> {
        let nn = n as usize;
        let inner = nn - 1;
        let blocks = n.div_ceil(FAST_SORT_TILE) as usize;
        let flat = positions_flat(positions);
        let mut b_positions = DeviceBuffer::alloc(flat.len() * 4, "fast build: positions")?;
        b_positions.upload(&st.stream, bytemuck::cast_slice(&flat))?;
        let b_triangles = match triangles {
            Some(t) => {
                let mut b = DeviceBuffer::alloc(t.len() * 12, "fast build: triangles")?;
                b.upload(&st.stream, bytemuck::cast_slice(t))?;
                Some(b)
            }
            None => None,
        };
        let a = DeviceBuffer::alloc;
        Ok(Scratch {
            positions: b_positions,
            triangles: b_triangles,
            boxes: a(nn * 32, "fast build: boxes")?,
            centre_bounds: a(32, "fast build: centre bounds")?,
            keys: [
                a(nn * 4, "fast build: keys")?,
                a(nn * 4, "fast build: keys")?,
            ],
            values: [
                a(nn * 4, "fast build: values")?,
                a(nn * 4, "fast build: values")?,
            ],
            hist: a(256 * blocks * 4, "fast build: histograms")?,
            slot_boxes: a(nn * 32, "fast build: slot boxes")?,
            prims: a(nn * size_of::<Primitive>(), "primitives")?,
            children: a(inner * 8, "fast build: children")?,
            ranges: a(inner * 8, "fast build: ranges")?,
            links: a((inner + nn) * 4, "fast build: parent links")?,
            node_boxes: a(inner * 32, "fast build: node boxes")?,
            costs: a(inner * 4, "fast build: costs")?,
            kept: a(inner * 4, "fast build: kept counts")?,
            arrivals: a(inner * 4, "fast build: arrivals")?,
            nodes: a(inner * size_of::<BvhNode>(), "BVH nodes")?,
            n,
            vertex_count: positions.len() as u32,
            clustered: None,
        })
    }

    /// Enqueue the build's memsets and launches on the stream; the
    /// clustered build also waits on the stream between batches of rounds.
    fn enqueue(&mut self, st: &DeviceState, quality: BuildQuality) -> Result<(), Error> {
        let n = self.n;
        let triangles = self.triangles.as_ref().map_or(0, |b| b.ptr());
        // The centres' bounds start empty: min words at the top of the order,
        // max words at its bottom (fast_ordered).
        self.centre_bounds.fill_u32(&st.stream, u32::MAX, 3)?;
        self.centre_bounds.fill_u32_from(&st.stream, 0, 3, 3)?;
        self.arrivals.fill_u32(&st.stream, 0, n as usize - 1)?;
        // SAFETY: the arguments match prism_fast_boxes's parameters (const
        // u32*, u32, const float*, u32, float4*, u32*); the arrays were
        // allocated by `Scratch::new` for `n` triangles and
        // `positions.len()` vertices as the kernel indexes them.
        unsafe {
            launch(
                st,
                st.kernels.fast[0],
                n.div_ceil(FAST_BUILD_THREADS),
                &mut [
                    Arg::Ptr(triangles),
                    Arg::U32(n),
                    Arg::Ptr(self.positions.ptr()),
                    Arg::U32(self.vertex_count),
                    Arg::Ptr(self.boxes.ptr()),
                    Arg::Ptr(self.centre_bounds.ptr()),
                ],
            )?
        };
        let passes = TreePasses {
            n,
            boxes: &self.boxes,
            centre_bounds: self.centre_bounds.ptr(),
            keys: [&self.keys[0], &self.keys[1]],
            values: [&self.values[0], &self.values[1]],
            hist: &self.hist,
            slot_boxes: &self.slot_boxes,
            children: &self.children,
            ranges: &self.ranges,
            links: &self.links,
            node_boxes: &self.node_boxes,
            costs: &self.costs,
            kept: &self.kept,
            arrivals: &self.arrivals,
            nodes: self.nodes.ptr(),
            leaves: Leaves::Triangles {
                triangles,
                positions: self.positions.ptr(),
                vertex_count: self.vertex_count,
                prims: self.prims.ptr(),
            },
        };
        // SAFETY: every array was allocated by `Scratch::new` for `n`
        // triangles (keys, slots, `n - 1` inner nodes and as many output
        // nodes) and `positions.len()` vertices, and `boxes` and
        // `centre_bounds` are written by the launch above.
        unsafe {
            if quality == BuildQuality::Clustered {
                passes.enqueue_sort(st)?;
                // `passes` borrows the arrays no further.
                super::clustered_build::enqueue(self, st)
            } else {
                passes.enqueue(st)
            }
        }
    }

    /// The built tree, downloaded (after the stream has run the build);
    /// `None` for a clustered tree too deep for the traversal stack.
    fn download(
        &self,
        st: &DeviceState,
        device_ms: f64,
        quality: BuildQuality,
    ) -> Result<Option<DeviceTree>, Error> {
        let n = self.n as usize;
        // The root: node 0 of the radix tree, the last node the clustering
        // made.
        let (root, order) = match (quality, &self.clustered) {
            (BuildQuality::Clustered, Some(c)) => {
                if c.too_deep(st, self.n)? {
                    return Ok(None);
                }
                (n - 2, &c.order)
            }
            _ => (0, &self.values[0]),
        };
        // The root's kept count alone.
        let mut root_kept = [0u32; 1];
        self.kept.download_from(
            &st.stream,
            4 * root,
            bytemuck::cast_slice_mut(&mut root_kept),
        )?;
        // A merged root is one node (a leaf beside an absent child).
        let count = (root_kept[0] as usize).max(1);
        if count > n - 1 {
            return Err(Error::Device {
                backend: BACKEND,
                operation: "the fast build on the device",
                message: format!("{count} nodes for {n} triangles"),
            });
        }
        let mut nodes = vec![BvhNode::default(); count];
        self.nodes
            .download(&st.stream, bytemuck::cast_slice_mut(&mut nodes))?;
        let mut prims = vec![Primitive::default(); n];
        self.prims
            .download(&st.stream, bytemuck::cast_slice_mut(&mut prims))?;
        let mut slots = vec![0u32; n];
        order.download(&st.stream, bytemuck::cast_slice_mut(&mut slots))?;
        Ok(Some(DeviceTree {
            nodes,
            prims,
            order: slots,
            device_ms,
        }))
    }
}

/// Positions packed as xyz floats, as the kernels read them.
fn positions_flat(positions: &[Vec3]) -> Vec<f32> {
    positions.iter().flat_map(|p| p.to_array()).collect()
}

/// Launch `f` over `blocks` blocks of [`FAST_BUILD_THREADS`] on the stream.
///
/// # Safety
/// `args` must match `f`'s parameters, and the memory they point at must
/// hold what the kernel reads and writes.
pub(super) unsafe fn launch(
    st: &DeviceState,
    f: Function,
    blocks: u32,
    args: &mut [Arg],
) -> Result<(), Error> {
    // SAFETY: forwarded to the caller's contract.
    unsafe { launch_blocks(st, f, blocks, FAST_BUILD_THREADS, args) }
}

/// Launch `f` over `blocks` blocks of `threads` on the stream.
///
/// # Safety
/// As [`launch`]'s.
pub(super) unsafe fn launch_blocks(
    st: &DeviceState,
    f: Function,
    blocks: u32,
    threads: u32,
    args: &mut [Arg],
) -> Result<(), Error> {
    let mut params: Vec<*mut c_void> = args
        .iter_mut()
        .map(|a| match a {
            Arg::Ptr(v) => (v as *mut u64).cast(),
            Arg::U32(v) => (v as *mut u32).cast(),
        })
        .collect();
    // SAFETY: forwarded to the caller's contract; `params` points at `args`,
    // which outlive the call (the driver copies the values at launch).
    unsafe { f.launch((blocks.max(1), 1), (threads, 1), &st.stream, &mut params) }
}

/// The triangle count of a mesh, or the error that names why it cannot be
/// built on the device (fewer than two triangles, which the host's tree
/// covers at once; more than core's limit).
fn device_count(count: usize) -> Result<u32, Error> {
    if count > prism_core::scene::MAX_PRIMITIVES {
        return Err(Error::TooManyPrimitives {
            count,
            limit: prism_core::scene::MAX_PRIMITIVES,
        });
    }
    if count < 2 {
        return Err(Error::Setting {
            field: "triangles of a fast build on the device",
            value: count as f64,
            reason: "at least 2 (a tree of one leaf is the host's at once)",
        });
    }
    Ok(count as u32)
}

impl DeviceState {
    /// Build the tree of `quality` (fast or clustered) over a mesh `runs`
    /// times (at least once) on the device and download the last (`None`: a
    /// clustered tree too deep for the traversal stack); `device_ms` is the
    /// median build.
    fn fast_build(
        &mut self,
        positions: &[Vec3],
        triangles: Option<&[[u32; 3]]>,
        count: usize,
        runs: u32,
        quality: BuildQuality,
    ) -> Result<(Option<DeviceTree>, Vec<f64>), Error> {
        let n = device_count(count)?;
        self.ensure_events(2)?;
        let mut scratch = match self.fast_scratch.take() {
            Some(mut s) if s.fits(n, positions.len(), triangles.is_some()) => {
                s.upload_mesh(self, positions, triangles)?;
                s
            }
            _ => Scratch::new(self, positions, triangles, n)?,
        };
        let mut times = Vec::new();
        for _ in 0..runs.max(1) {
            self.events[0].record(&self.stream)?;
            scratch.enqueue(self, quality)?;
            self.events[1].record(&self.stream)?;
            self.events[1].synchronize()?;
            times.push(self.events[0].elapsed_ms(&self.events[1])? as f64);
        }
        let mut sorted = times.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2]; // ok: at least one run
        let tree = scratch.download(self, median, quality)?;
        self.fast_scratch = Some(scratch);
        Ok((tree, times))
    }
}

impl CudaBackend {
    /// Build core's fast tree ([`BuildQuality::Fast`], `prism_core::lbvh`)
    /// over a mesh on the device and download it: `positions` and
    /// `triangles` (three vertex indices each, checked against the
    /// positions). For tests and benchmarks; `set_scene` builds a scene's
    /// fast tree through the same kernels.
    pub fn build_fast_tree(
        &mut self,
        positions: &[Vec3],
        triangles: &[[u32; 3]],
    ) -> Result<DeviceTree, Error> {
        Ok(self.time_fast_build(positions, triangles, 1)?.0)
    }

    /// [`CudaBackend::build_fast_tree`] run `runs` times on the device (the
    /// mesh uploaded and the arrays allocated once, outside the timing), with
    /// each build's device milliseconds.
    pub fn time_fast_build(
        &mut self,
        positions: &[Vec3],
        triangles: &[[u32; 3]],
        runs: u32,
    ) -> Result<(DeviceTree, Vec<f64>), Error> {
        let (tree, times) =
            self.time_device_build(positions, triangles, BuildQuality::Fast, runs)?;
        let tree = tree.ok_or(Error::Device {
            backend: BACKEND,
            operation: "the fast build on the device",
            message: "the radix tree came back as too deep, which it never is".into(),
        })?;
        Ok((tree, times))
    }

    /// Build core's clustered tree ([`BuildQuality::Clustered`],
    /// `prism_core::ploc`) over a mesh on the device and download it, as
    /// [`CudaBackend::build_fast_tree`]; `None` when the clustered tree is
    /// too deep for the traversal stack (where `prism_core::ploc::build`
    /// returns the radix tree instead).
    pub fn build_clustered_tree(
        &mut self,
        positions: &[Vec3],
        triangles: &[[u32; 3]],
    ) -> Result<Option<DeviceTree>, Error> {
        Ok(self
            .time_device_build(positions, triangles, BuildQuality::Clustered, 1)?
            .0)
    }

    /// The tree of `quality` ([`BuildQuality::Fast`] or
    /// [`BuildQuality::Clustered`]; the SAH tree is the host's) built `runs`
    /// times on the device, with each build's device milliseconds (from the
    /// first launch to the last, the clustered build's waits between its
    /// batches of rounds included).
    pub fn time_device_build(
        &mut self,
        positions: &[Vec3],
        triangles: &[[u32; 3]],
        quality: BuildQuality,
        runs: u32,
    ) -> Result<(Option<DeviceTree>, Vec<f64>), Error> {
        if quality == BuildQuality::Sah {
            return Err(Error::Setting {
                field: "quality of a build on the device",
                value: 0.0,
                reason: "the SAH tree is built on the host; Fast and Clustered on the device",
            });
        }
        prism_core::geometry::check_triangle_indices(positions.len(), triangles)?;
        let r = (|| {
            let (st, _g) = self.enter()?;
            st.fast_build(positions, Some(triangles), triangles.len(), runs, quality)
        })();
        self.checked(r)
    }

    /// The `Accel` of a flat scene of two or more triangles whose fast or
    /// clustered tree is built on the device, and the build's device
    /// milliseconds; `None` for any other scene (which `Accel::build`
    /// covers).
    pub(super) fn device_fast_accel(
        &mut self,
        scene: &Scene,
    ) -> Result<Option<(Accel, f64)>, Error> {
        let n = scene.primitive_count();
        if scene.build_quality == BuildQuality::Sah
            || scene.is_two_level()
            || scene.triangle_count() != n
            || n < 2
        {
            return Ok(None);
        }
        // A bad scene never reaches the device.
        scene.validate()?;
        // A flat scene of triangles alone: triangle `i` is primitive `i`.
        let mut soup = Vec::with_capacity(3 * n);
        for i in 0..n as u32 {
            // A validated flat scene of n triangles has every one of them.
            let t = scene.triangle(i).ok_or(Error::Device {
                backend: BACKEND,
                operation: "the fast build on the device",
                message: format!("triangle {i} is missing"),
            })?;
            soup.extend_from_slice(&t);
        }
        let (st, _g) = self.enter()?;
        let (tree, _) = st.fast_build(&soup, None, n, 1, scene.build_quality)?;
        // A clustered tree too deep for the stack: core's build, which then
        // takes the radix tree, on the host.
        let Some(tree) = tree else {
            return Ok(None);
        };
        let ms = tree.device_ms;
        let accel = Accel::build_with_tree(
            scene,
            Bvh {
                nodes: tree.nodes,
                order: tree.order,
                depth: 0,
            },
        )?;
        Ok(Some((accel, ms)))
    }
}
