//! The fast tree ([`BuildQuality::Fast`]) built on the device: the dispatches
//! of `shaders/fast_build.wgsl`, which mirror `prism_core::lbvh::build` pass
//! for pass (as the CUDA backend's `fast_build.cuh` does), so that the device
//! builds core's tree: the same slots and nodes.
//!
//! Nine dispatches in one compute pass of one submission (thirteen above
//! 64 sort tiles, where each sort pass scans its histograms apart), after the
//! clears of the centres' bounds (24 bytes) and the sort's histograms (each
//! counted by the dispatch before its pass, so no pass reads its keys twice;
//! bunny's build went from 0.29 to 0.25 ms on an H200 with these). Timed by
//! GPU timestamps at the pass's start and end where the adapter has them,
//! else by the host clock around the submission and its wait.
//!
//! `set_scene` builds a flat scene of triangles alone on the device when the
//! scene asks for the fast tree; the host then takes the nodes and the slot
//! order back ([`Accel::build_with_tree`]), as the CUDA backend does: the
//! upload, the octant copies, the light and cell grids, updates and the
//! checks before upload all start from the host's `Accel`. The primitive
//! records are the host's (`build_with_tree` derives them from the order), so
//! the device does not compute them. Other scenes asking for the fast tree
//! (spheres, heightfields, two levels) get core's fast tree built on the host:
//! the same tree, by the host.
//!
//! The clustered tree ([`prism_core::BuildQuality::Clustered`]) starts from
//! this build's boxes, codes and sort (`crate::clustered_build`); a clustered
//! tree too deep for the traversal stack is core's, built on the host.

use crate::buffers::{create_buffer, map_and_read};
use crate::clustered_build::{ClusteredOutcome, cnodes, root_kept_offset};
use crate::errors::{device_error, scoped};
use crate::submit::wait;
use crate::{BACKEND_NAME, WgpuBackend};
use prism_core::bvh::{Bvh, RayonFork};
use prism_core::glam::Vec3;
use prism_core::gpu::BvhNode;
use prism_core::{Accel, BuildQuality, Error, Scene, TimingSource};
use std::time::Instant;

/// The WGSL of the device build (a module of its own).
const FAST_BUILD_WGSL: &str = include_str!("../shaders/fast_build.wgsl");
/// The clustered build's WGSL, compiled appended to the fast build's.
const CLUSTERED_BUILD_WGSL: &str = include_str!("../shaders/clustered_build.wgsl");
/// Invocations a workgroup (`FAST_THREADS` in the shader).
pub(crate) const FAST_THREADS: u32 = 256;
/// Keys a workgroup of the sort takes (`SORT_TILE` in the shader).
const SORT_TILE: u32 = 4096;
/// Bytes between the four sort passes' parameter blocks: every adapter's
/// uniform offset alignment divides 256.
pub(crate) const PARAMS_STRIDE: u64 = 256;
/// Bytes of `FastParams` in the shader.
pub(crate) const PARAMS_BYTES: u64 = 48;
/// Parameter blocks: the four sort passes', then the clustered build's two
/// round parities'.
const PARAM_BLOCKS: u64 = 6;

/// What a build on the device made, downloaded: the nodes (core's layout,
/// root first), the slot order (`order[slot]` = triangle index), and the
/// build's time.
#[derive(Clone, Debug)]
pub struct DeviceTree {
    /// Nodes, root first.
    pub nodes: Vec<BvhNode>,
    /// `order[slot]`: the triangle the slot holds.
    pub order: Vec<u32>,
    /// Milliseconds of the build: from the first dispatch to the last
    /// ([`DeviceTree::timing`] says how measured).
    pub device_ms: f64,
    /// GPU timestamps around the compute pass, or the host clock around the
    /// submission and its wait.
    pub timing: TimingSource,
}

/// The compute pipelines of the device build, one an entry point (each with
/// its automatic layout: only the bindings it uses).
pub(crate) struct FastPipelines {
    boxes: wgpu::ComputePipeline,
    codes: wgpu::ComputePipeline,
    scan: wgpu::ComputePipeline,
    scatter: wgpu::ComputePipeline,
    tree: wgpu::ComputePipeline,
    bottom_up: wgpu::ComputePipeline,
    emit: wgpu::ComputePipeline,
    /// The clustered build's (`shaders/clustered_build.wgsl`), in launch
    /// order: init, nearest, count, merge, tail, slots, emit.
    pub(crate) clustered: [wgpu::ComputePipeline; 7],
}

/// A dispatch: its pipeline, bind group and workgroup grid.
pub(crate) struct Dispatch {
    pub(crate) pipeline: wgpu::ComputePipeline,
    pub(crate) group: wgpu::BindGroup,
    pub(crate) grid: (u32, u32),
}

/// The device arrays of a build over a mesh of one size, with the bind
/// groups of its dispatches (kept for the next build of a mesh of
/// the same size).
pub(crate) struct FastScratch {
    pub(crate) n: u32,
    vertex_count: u32,
    indexed: bool,
    positions: wgpu::Buffer,
    triangles: wgpu::Buffer,
    centre_bounds: wgpu::Buffer,
    /// Each sort pass's histograms, counted by the dispatch before it
    /// (cleared before the build).
    hists: [wgpu::Buffer; 4],
    pub(crate) values: [wgpu::Buffer; 2],
    pub(crate) keys: [wgpu::Buffer; 2],
    pub(crate) boxes: wgpu::Buffer,
    pub(crate) slot_boxes: wgpu::Buffer,
    pub(crate) links: wgpu::Buffer,
    pub(crate) params: wgpu::Buffer,
    node_data: wgpu::Buffer,
    pub(crate) nodes: wgpu::Buffer,
    dispatches: Vec<Dispatch>,
    /// How many of `dispatches` make the boxes, codes and sort (the rest
    /// build the radix tree).
    sort_end: usize,
    /// The clustered build's arrays and dispatches, made on its first build.
    pub(crate) clustered: Option<crate::clustered_build::ClusteredParts>,
}

impl FastScratch {
    /// Whether these arrays serve a mesh of `n` triangles over `vertices`
    /// vertices, indexed or not.
    fn fits(&self, n: u32, vertices: usize, indexed: bool) -> bool {
        self.n == n && self.vertex_count as usize == vertices && self.indexed == indexed
    }
}

/// Positions packed as xyz floats, as the shader reads them.
fn positions_flat(positions: &[Vec3]) -> Vec<f32> {
    positions.iter().flat_map(|p| p.to_array()).collect()
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

/// Most sort tiles (of [`SORT_TILE`] keys) whose histograms each scatter
/// workgroup scans for itself (`fast_scatter`'s `scan_in_scatter`) instead of
/// a scan dispatch of its own before it: reading `RADIX * tiles` counts a
/// workgroup costs less than a dispatch and its barrier up to some 64 tiles
/// (262,144 triangles, the size of the meshes rebuilt every frame), and
/// grows with the square of the tiles beyond.
const SCAN_IN_SCATTER_MAX_TILES: u32 = 64;

/// Whether a sort of `n` keys scans its histograms in the scatter.
fn scan_in_scatter(n: u32) -> bool {
    n.div_ceil(SORT_TILE) <= SCAN_IN_SCATTER_MAX_TILES
}

/// The `FastParams` block of one sort pass (`shift` = 8 * pass) or of one
/// parity of the clustered build's rounds.
fn params_words(
    n: u32,
    vertex_count: u32,
    indexed: bool,
    shift: u32,
    round_parity: u32,
) -> [u32; 12] {
    // mirrors prism_core::lbvh::morton_scale's numerator, rounded as f32.
    let numerator = prism_core::lbvh::MORTON_GRID as f32 * (1.0 - 1e-6);
    [
        n,
        vertex_count,
        indexed as u32,
        shift,
        n.div_ceil(SORT_TILE),
        0, // opaque_zero
        numerator.to_bits(),
        scan_in_scatter(n) as u32,
        round_parity,
        0,
        0,
        0,
    ]
}

impl WgpuBackend {
    /// Compile the device build's pipelines, on first use.
    fn fast_pipelines(&mut self) -> Result<(), Error> {
        if self.fast_pipelines.is_none() {
            let device = &self.device;
            let made = scoped(device, "compile the fast build's shaders", || {
                // The clustered build's entry points share the fast build's
                // parameters, bindings and helpers: one module.
                let source = [FAST_BUILD_WGSL, CLUSTERED_BUILD_WGSL].concat();
                let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some("prism fast build"),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                });
                let pipeline = |entry: &'static str| {
                    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                        label: Some(entry),
                        layout: None,
                        module: &module,
                        entry_point: Some(entry),
                        compilation_options: Default::default(),
                        cache: None,
                    })
                };
                Ok(FastPipelines {
                    boxes: pipeline("fast_boxes"),
                    codes: pipeline("fast_codes"),
                    scan: pipeline("fast_scan"),
                    scatter: pipeline("fast_scatter"),
                    tree: pipeline("fast_tree"),
                    bottom_up: pipeline("fast_bottom_up"),
                    emit: pipeline("fast_emit"),
                    clustered: [
                        "ploc_init",
                        "ploc_nearest",
                        "ploc_count",
                        "ploc_merge",
                        "ploc_tail",
                        "ploc_slots",
                        "ploc_emit",
                    ]
                    .map(pipeline),
                })
            })?;
            self.fast_pipelines = Some(made);
        }
        Ok(())
    }

    /// A workgroup grid of `groups` workgroups within the dispatch limit
    /// (rows of at most `max_compute_workgroups_per_dimension`).
    pub(crate) fn fast_grid(&self, groups: u32) -> Result<(u32, u32), Error> {
        let max = self.limits.max_compute_workgroups_per_dimension.max(1);
        let x = groups.clamp(1, max);
        let y = groups.max(1).div_ceil(x);
        if y > max {
            return Err(Error::DeviceLimit {
                backend: BACKEND_NAME,
                what: "workgroups of a fast build on the device",
                needed: groups as u64,
                limit: max as u64 * max as u64,
            });
        }
        Ok((x, y))
    }

    /// Allocate the arrays for `n` triangles (at least 2), upload the mesh
    /// and make the bind groups.
    fn fast_scratch_new(
        &mut self,
        positions: &[Vec3],
        triangles: Option<&[[u32; 3]]>,
        n: u32,
    ) -> Result<FastScratch, Error> {
        let nn = n as u64;
        let inner = nn - 1;
        let sort_blocks = n.div_ceil(SORT_TILE);
        let storage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC;
        let buffer = |this: &Self, label: &'static str, bytes: u64| {
            this.check_binding(label, bytes)?;
            create_buffer(&this.device, label, bytes.next_multiple_of(16), storage)
        };
        let flat = positions_flat(positions);
        let b_positions = buffer(self, "fast build: positions", flat.len() as u64 * 4)?;
        self.queue
            .write_buffer(&b_positions, 0, bytemuck::cast_slice(&flat));
        let b_triangles = match triangles {
            Some(t) => {
                let b = buffer(self, "fast build: triangles", t.len() as u64 * 12)?;
                self.queue.write_buffer(&b, 0, bytemuck::cast_slice(t));
                b
            }
            // A soup binds a placeholder the shader never reads.
            None => buffer(self, "fast build: no triangles", 16)?,
        };
        let params = create_buffer(
            &self.device,
            "fast build: parameters",
            PARAM_BLOCKS * PARAMS_STRIDE,
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        )?;
        for block in 0..PARAM_BLOCKS as u32 {
            // Blocks 0-3: the sort passes; 4 and 5: the round parities.
            let (shift, parity) = if block < 4 {
                (8 * block, 0)
            } else {
                (0, block - 4)
            };
            let words = params_words(
                n,
                positions.len() as u32,
                triangles.is_some(),
                shift,
                parity,
            );
            self.queue.write_buffer(
                &params,
                block as u64 * PARAMS_STRIDE,
                bytemuck::cast_slice(&words),
            );
        }
        let boxes = buffer(self, "fast build: boxes", nn * 32)?;
        let centre_bounds = buffer(self, "fast build: centre bounds", 24)?;
        let keys = [
            buffer(self, "fast build: keys", nn * 4)?,
            buffer(self, "fast build: keys", nn * 4)?,
        ];
        let values = [
            buffer(self, "fast build: values", nn * 4)?,
            buffer(self, "fast build: values", nn * 4)?,
        ];
        let hist_bytes = 256 * sort_blocks as u64 * 4;
        let hists = [
            buffer(self, "fast build: histograms", hist_bytes)?,
            buffer(self, "fast build: histograms", hist_bytes)?,
            buffer(self, "fast build: histograms", hist_bytes)?,
            buffer(self, "fast build: histograms", hist_bytes)?,
        ];
        // The last pass counts nothing: hist_next is bound but not written.
        let no_hist = buffer(self, "fast build: no histograms", 16)?;
        let slot_boxes = buffer(self, "fast build: slot boxes", nn * 32)?;
        let inner_nodes = buffer(self, "fast build: radix tree", inner * 16)?;
        let links = buffer(self, "fast build: parent links", (inner + nn) * 4)?;
        let node_data = buffer(self, "fast build: node boxes and costs", inner * 32)?;
        let arrivals = buffer(self, "fast build: arrivals", inner * 4)?;
        let nodes = buffer(self, "BVH nodes", inner * size_of::<BvhNode>() as u64)?;
        let tri_grid = self.fast_grid(n.div_ceil(FAST_THREADS))?;
        let sort_grid = self.fast_grid(sort_blocks)?;
        self.fast_pipelines()?;
        let p = self.fast_pipelines.as_ref().ok_or_else(|| {
            device_error(
                "the fast build on the device",
                "its pipelines were not made",
            )
        })?;
        let device = &self.device;
        let param_slot = |pass: u64| {
            wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &params,
                offset: pass * PARAMS_STRIDE,
                size: wgpu::BufferSize::new(PARAMS_BYTES),
            })
        };
        // One bind group for `pipeline`'s automatic layout: the parameter
        // block of `pass`, then (binding, buffer) pairs of fast_build.wgsl.
        let group =
            |pipeline: &wgpu::ComputePipeline, pass: u64, bound: &[(u32, &wgpu::Buffer)]| {
                let mut entries = vec![wgpu::BindGroupEntry {
                    binding: 0,
                    resource: param_slot(pass),
                }];
                entries.extend(bound.iter().map(|&(binding, b)| wgpu::BindGroupEntry {
                    binding,
                    resource: b.as_entire_binding(),
                }));
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("prism fast build"),
                    layout: &pipeline.get_bind_group_layout(0),
                    entries: &entries,
                })
            };
        let dispatch = |pipeline: &wgpu::ComputePipeline,
                        grid,
                        pass,
                        bound: &[(u32, &wgpu::Buffer)]| Dispatch {
            pipeline: pipeline.clone(),
            group: group(pipeline, pass, bound),
            grid,
        };
        let mut sort_end = 0;
        let dispatches = scoped(device, "bind the fast build's buffers", || {
            let mut d = vec![
                dispatch(
                    &p.boxes,
                    tri_grid,
                    0,
                    &[
                        (1, &b_positions),
                        (2, &b_triangles),
                        (3, &boxes),
                        (4, &centre_bounds),
                        (14, &arrivals),
                    ],
                ),
                dispatch(
                    &p.codes,
                    tri_grid,
                    0,
                    &[
                        (3, &boxes),
                        (4, &centre_bounds),
                        (5, &keys[0]),
                        (6, &values[0]),
                        (16, &hists[0]),
                    ],
                ),
            ];
            for pass in 0..4u64 {
                let (from, to) = ((pass % 2) as usize, ((pass + 1) % 2) as usize);
                if !scan_in_scatter(n) {
                    d.push(dispatch(
                        &p.scan,
                        (1, 1),
                        pass,
                        &[(9, &hists[pass as usize])],
                    ));
                }
                d.push(dispatch(
                    &p.scatter,
                    sort_grid,
                    pass,
                    &[
                        (5, &keys[from]),
                        (6, &values[from]),
                        (7, &keys[to]),
                        (8, &values[to]),
                        (9, &hists[pass as usize]),
                        (16, hists.get(pass as usize + 1).unwrap_or(&no_hist)),
                    ],
                ));
            }
            // Four passes: the sorted codes and order are back in [0].
            sort_end = d.len();
            d.push(dispatch(
                &p.tree,
                tri_grid,
                0,
                &[
                    (3, &boxes),
                    (5, &keys[0]),
                    (6, &values[0]),
                    (10, &slot_boxes),
                    (11, &inner_nodes),
                    (12, &links),
                ],
            ));
            d.push(dispatch(
                &p.bottom_up,
                tri_grid,
                0,
                &[
                    (10, &slot_boxes),
                    (11, &inner_nodes),
                    (12, &links),
                    (13, &node_data),
                    (14, &arrivals),
                ],
            ));
            d.push(dispatch(
                &p.emit,
                tri_grid,
                0,
                &[
                    (10, &slot_boxes),
                    (11, &inner_nodes),
                    (12, &links),
                    (13, &node_data),
                    (15, &nodes),
                ],
            ));
            Ok(d)
        })?;
        Ok(FastScratch {
            n,
            vertex_count: positions.len() as u32,
            indexed: triangles.is_some(),
            positions: b_positions,
            triangles: b_triangles,
            centre_bounds,
            hists,
            values,
            keys,
            boxes,
            slot_boxes,
            links,
            params,
            node_data,
            nodes,
            dispatches,
            sort_end,
            clustered: None,
        })
    }

    /// Record the boxes, codes and sort into `encoder` (the clears first),
    /// for the clustered build: the slot order ends in `values[0]`.
    pub(crate) fn record_sort(&self, encoder: &mut wgpu::CommandEncoder, s: &FastScratch) {
        encoder.clear_buffer(&s.centre_bounds, 0, None);
        for h in &s.hists {
            encoder.clear_buffer(h, 0, None);
        }
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("prism fast build: sort"),
            timestamp_writes: None,
        });
        for d in &s.dispatches[..s.sort_end] {
            pass.set_pipeline(&d.pipeline);
            pass.set_bind_group(0, &d.group, &[]);
            pass.dispatch_workgroups(d.grid.0, d.grid.1, 1);
        }
    }

    /// Record the build into `encoder`: the clears of the centres' bounds
    /// and the histograms, then the dispatches in one compute pass (timestamped at its
    /// start and end when `timed` and the adapter has timestamps).
    fn fast_record(&self, encoder: &mut wgpu::CommandEncoder, s: &FastScratch, timed: bool) {
        encoder.clear_buffer(&s.centre_bounds, 0, None);
        for h in &s.hists {
            encoder.clear_buffer(h, 0, None);
        }
        let ts = self.timestamps.as_ref().filter(|_| timed);
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("prism fast build"),
                timestamp_writes: ts.map(|ts| wgpu::ComputePassTimestampWrites {
                    query_set: &ts.set,
                    beginning_of_pass_write_index: Some(0),
                    end_of_pass_write_index: Some(1),
                }),
            });
            for d in &s.dispatches {
                pass.set_pipeline(&d.pipeline);
                pass.set_bind_group(0, &d.group, &[]);
                pass.dispatch_workgroups(d.grid.0, d.grid.1, 1);
            }
        }
        if let Some(ts) = ts {
            encoder.resolve_query_set(&ts.set, 0..2, &ts.resolve, 0);
            encoder.copy_buffer_to_buffer(&ts.resolve, 0, &ts.readback[0], 0, 16);
        }
    }

    /// Run the build once and return its milliseconds and how they were
    /// measured.
    fn fast_run(&self, s: &FastScratch) -> Result<(f64, TimingSource), Error> {
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("prism fast build"),
            });
        self.fast_record(&mut encoder, s, true);
        let submitted = Instant::now();
        let index = self.queue.submit([encoder.finish()]);
        wait(
            &self.device,
            Some(index.clone()),
            "the fast build on the device",
        )?;
        let host_ms = submitted.elapsed().as_secs_f64() * 1e3;
        let Some(ts) = &self.timestamps else {
            return Ok((host_ms, TimingSource::HostClock));
        };
        let mut ticks = [0u64; 2];
        map_and_read(
            &self.device,
            &ts.readback[0],
            16,
            index,
            "the fast build on the device",
            |bytes| ticks.copy_from_slice(bytemuck::cast_slice(bytes)),
        )?;
        let ms = ticks[1].saturating_sub(ticks[0]) as f64 * ts.period / 1e6;
        // A zero or absurd reading (some drivers) falls back to the host time.
        if ms > 0.0 && ms < host_ms * 1.5 + 1.0 {
            Ok((ms, TimingSource::TimestampQueries))
        } else {
            Ok((host_ms, TimingSource::HostClock))
        }
    }

    /// The built tree, downloaded: the root's kept-node count (4 bytes of
    /// `root_kept` at its offset), the nodes and the slot order (`order`), in
    /// one copy and one wait.
    fn fast_download(
        &self,
        s: &FastScratch,
        device_ms: f64,
        timing: TimingSource,
        root_kept: (&wgpu::Buffer, u64),
        order: &wgpu::Buffer,
    ) -> Result<DeviceTree, Error> {
        let n = s.n as u64;
        let node_bytes = (n - 1) * size_of::<BvhNode>() as u64;
        let order_bytes = n * 4;
        // [root's kept count, pad to 16][nodes][order]
        let total = 16 + node_bytes + order_bytes;
        let readback = create_buffer(
            &self.device,
            "fast build: readback",
            total.next_multiple_of(16),
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        )?;
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("prism fast build readback"),
            });
        encoder.copy_buffer_to_buffer(root_kept.0, root_kept.1, &readback, 0, 4);
        encoder.copy_buffer_to_buffer(&s.nodes, 0, &readback, 16, node_bytes);
        encoder.copy_buffer_to_buffer(order, 0, &readback, 16 + node_bytes, order_bytes);
        let index = self.queue.submit([encoder.finish()]);
        let mut out: Result<DeviceTree, Error> = Err(device_error(
            "the fast build on the device",
            "the readback was not read",
        ));
        map_and_read(
            &self.device,
            &readback,
            total,
            index,
            "the fast build on the device",
            |bytes| {
                // The root's kept count (16 bytes), the nodes, the order.
                let (Some(&[a, b, c, d]), Some(rest)) = (bytes.get(..4), bytes.get(16..)) else {
                    out = Err(device_error(
                        "the fast build on the device",
                        format!(
                            "{} bytes read back, fewer than the header's 16",
                            bytes.len()
                        ),
                    ));
                    return;
                };
                let Some((node_part, order_part)) = rest.split_at_checked(node_bytes as usize)
                else {
                    out = Err(device_error(
                        "the fast build on the device",
                        format!(
                            "{} bytes read back, fewer than the nodes' {node_bytes}",
                            rest.len()
                        ),
                    ));
                    return;
                };
                let root_kept = u32::from_le_bytes([a, b, c, d]);
                // A merged root is one node (a leaf beside an absent child).
                let count = (root_kept as usize).max(1);
                if count as u64 > n - 1 {
                    out = Err(device_error(
                        "the fast build on the device",
                        format!("{count} nodes for {n} triangles"),
                    ));
                    return;
                }
                let nodes: Vec<BvhNode> = node_part
                    .chunks_exact(size_of::<BvhNode>())
                    .take(count)
                    .map(bytemuck::pod_read_unaligned)
                    .collect();
                let order: Vec<u32> = order_part
                    .chunks_exact(4)
                    .map(bytemuck::pod_read_unaligned)
                    .collect();
                out = Ok(DeviceTree {
                    nodes,
                    order,
                    device_ms,
                    timing,
                });
            },
        )?;
        out
    }

    /// Build the tree of `quality` (fast or clustered) over a mesh `runs`
    /// times (at least once) and download the last (`None`: a clustered
    /// tree too deep for the traversal stack); `device_ms` is the median
    /// build.
    fn fast_build(
        &mut self,
        positions: &[Vec3],
        triangles: Option<&[[u32; 3]]>,
        count: usize,
        runs: u32,
        quality: BuildQuality,
    ) -> Result<(Option<DeviceTree>, Vec<f64>), Error> {
        let n = device_count(count)?;
        let mut scratch = match self.fast_scratch.take() {
            Some(s) if s.fits(n, positions.len(), triangles.is_some()) => {
                self.queue.write_buffer(
                    &s.positions,
                    0,
                    bytemuck::cast_slice(&positions_flat(positions)),
                );
                if let Some(t) = triangles {
                    self.queue
                        .write_buffer(&s.triangles, 0, bytemuck::cast_slice(t));
                }
                s
            }
            _ => self.fast_scratch_new(positions, triangles, n)?,
        };
        let mut times = Vec::new();
        let mut timing = TimingSource::HostClock;
        for _ in 0..runs.max(1) {
            if quality == BuildQuality::Clustered {
                match self.clustered_run(&mut scratch)? {
                    ClusteredOutcome::Built(ms) => times.push(ms),
                    ClusteredOutcome::TooDeep => {
                        self.fast_scratch = Some(scratch);
                        return Ok((None, times));
                    }
                }
            } else {
                let (ms, source) = self.fast_run(&scratch)?;
                times.push(ms);
                timing = source;
            }
        }
        let mut sorted = times.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2]; // ok: at least one run
        let tree = match (quality, cnodes(&scratch)) {
            (BuildQuality::Clustered, Some(c)) => self.fast_download(
                &scratch,
                median,
                timing,
                (c, root_kept_offset(n)),
                &scratch.keys[1],
            )?,
            // Node 0's kept count is word 7 of its 8 (fast_build.wgsl, node_data).
            _ => self.fast_download(
                &scratch,
                median,
                timing,
                (&scratch.node_data, 28),
                &scratch.values[0],
            )?,
        };
        self.fast_scratch = Some(scratch);
        Ok((Some(tree), times))
    }

    /// Build core's fast tree ([`BuildQuality::Fast`], `prism_core::lbvh`)
    /// over a mesh on the device and download it: `positions` and
    /// `triangles` (three vertex indices each, checked against the
    /// positions). For tests and benchmarks; `set_scene` builds a scene's
    /// fast tree through the same shaders. Fewer than two triangles:
    /// [`Error::Setting`].
    pub fn build_fast_tree(
        &mut self,
        positions: &[Vec3],
        triangles: &[[u32; 3]],
    ) -> Result<DeviceTree, Error> {
        Ok(self.time_fast_build(positions, triangles, 1)?.0)
    }

    /// [`WgpuBackend::build_fast_tree`] run `runs` times on the device (the
    /// mesh uploaded and the arrays allocated once, outside the timing), with
    /// each build's milliseconds (GPU timestamps where the adapter has them,
    /// [`DeviceTree::timing`]).
    pub fn time_fast_build(
        &mut self,
        positions: &[Vec3],
        triangles: &[[u32; 3]],
        runs: u32,
    ) -> Result<(DeviceTree, Vec<f64>), Error> {
        let (tree, times) =
            self.time_device_build(positions, triangles, BuildQuality::Fast, runs)?;
        let tree = tree.ok_or_else(|| {
            device_error(
                "the fast build on the device",
                "the radix tree came back as too deep, which it never is",
            )
        })?;
        Ok((tree, times))
    }

    /// Build core's clustered tree ([`BuildQuality::Clustered`],
    /// `prism_core::ploc`) over a mesh on the device and download it, as
    /// [`WgpuBackend::build_fast_tree`]; `None` when the clustered tree is
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
    /// times on the device, with each build's milliseconds (the clustered
    /// build's by the host clock, its waits between batches of rounds
    /// included).
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
        self.guarded("the fast build on the device", |this| {
            this.fast_build(positions, Some(triangles), triangles.len(), runs, quality)
        })
    }

    /// The `Accel` of `scene`, its build time in milliseconds and where that
    /// time comes from: for a flat scene of two or more triangles asking for
    /// the fast tree, built on the device (timestamps where the adapter has
    /// them); for any other scene, by core on the host (rayon's pool; the
    /// host clock).
    pub(crate) fn scene_accel(
        &mut self,
        scene: &Scene,
    ) -> Result<(Accel, f64, TimingSource), Error> {
        let n = scene.primitive_count();
        // Core's build on the host (rayon's pool), timed by the host clock.
        let host_build = || -> Result<(Accel, f64, TimingSource), Error> {
            let start = Instant::now();
            let accel = Accel::build_with(scene, &RayonFork)?;
            let ms = start.elapsed().as_secs_f64() * 1e3;
            Ok((accel, ms, TimingSource::HostClock))
        };
        if scene.build_quality == BuildQuality::Sah
            || scene.is_two_level()
            || scene.triangle_count() != n
            || n < 2
        {
            return host_build();
        }
        // A bad scene never reaches the device.
        scene.validate()?;
        // A flat scene of triangles alone: triangle `i` is primitive `i`.
        let mut soup = Vec::with_capacity(3 * n);
        for i in 0..n as u32 {
            // A validated flat scene of n triangles has every one of them.
            let t = scene.triangle(i).ok_or_else(|| {
                device_error(
                    "the fast build on the device",
                    format!("triangle {i} is missing"),
                )
            })?;
            soup.extend_from_slice(&t);
        }
        let (tree, _) = self.guarded("the fast build on the device", |this| {
            this.fast_build(&soup, None, n, 1, scene.build_quality)
        })?;
        // A clustered tree too deep for the stack: core's build, which then
        // takes the radix tree, on the host.
        let Some(tree) = tree else {
            return host_build();
        };
        let (ms, timing) = (tree.device_ms, tree.timing);
        let accel = Accel::build_with_tree(
            scene,
            Bvh {
                nodes: tree.nodes,
                order: tree.order,
                depth: 0,
            },
        )?;
        Ok((accel, ms, timing))
    }
}
