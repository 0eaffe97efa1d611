//! The clustered tree ([`BuildQuality::Clustered`](prism_core::BuildQuality))
//! built on the device: the dispatches of `shaders/clustered_build.wgsl`,
//! which mirror `prism_core::ploc::build` pass for pass (as the CUDA
//! backend's `clustered_build.cuh` does), after the fast build's boxes, codes
//! and sort.
//!
//! The number of clustering rounds depends on the mesh (42 for bunny, 66 for
//! ogre) and the host sees the cluster count only after a submission and its
//! wait. So the rounds over the whole device go in submissions of
//! [`ROUNDS_A_BATCH`] (a round past the last hands the clusters on), the
//! count read back after each; once at most [`TAIL`] clusters are left, one
//! workgroup finishes every round left in one dispatch, the clusters in its
//! workgroup memory. Timed by the host clock from the first submission to the
//! last wait (the waits between batches are part of the build).

use crate::WgpuBackend;
use crate::buffers::{create_buffer, map_and_read};
use crate::errors::{device_error, scoped};
use crate::fast_build::{Dispatch, FAST_THREADS, FastScratch, PARAMS_BYTES, PARAMS_STRIDE};
use prism_core::Error;
use std::time::Instant;

/// Rounds on the whole device between two reads of the cluster count (as
/// CUDA's): at about a fifth of the clusters merged a round, ogre's 124k
/// clusters take four batches to fall under [`TAIL`].
const ROUNDS_A_BATCH: u32 = 10;
/// The most clusters the one-workgroup tail takes (`PLOC_TAIL`).
pub(crate) const TAIL: u32 = 256;
/// Words of the round state (`ploc_state`).
const STATE_WORDS: u64 = 8;
/// The parameter block of round parity 0 (blocks 0-3 are the sort's).
const PARITY_BLOCK: u64 = 4;

// The shader's PLOC_STACK mirrors core's traversal stack.
const _: () = assert!(prism_core::gpu::TRAVERSAL_STACK_SIZE == 64);

/// The clustered build's arrays beside the fast build's, and its dispatches.
pub(crate) struct ClusteredParts {
    /// The round state (`ploc_state`).
    state: wgpu::Buffer,
    /// The nodes made (`cnodes`: three rows a node).
    cnodes: wgpu::Buffer,
    /// Where the state is read back.
    readback: wgpu::Buffer,
    init: Dispatch,
    /// Each parity's nearest, count and merge dispatches.
    rounds: [[Dispatch; 3]; 2],
    /// Each parity's tail.
    tail: [Dispatch; 2],
    slots: Dispatch,
    emit: Dispatch,
}

/// What one clustered build left: its milliseconds, or that its tree is too
/// deep for the traversal stack.
pub(crate) enum ClusteredOutcome {
    Built(f64),
    TooDeep,
}

impl WgpuBackend {
    /// Make the clustered build's arrays and bind groups for `s`'s mesh.
    fn clustered_parts(&self, s: &FastScratch) -> Result<ClusteredParts, Error> {
        let n = s.n as u64;
        let storage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC;
        let buffer = |label: &'static str, bytes: u64| {
            self.check_binding(label, bytes)?;
            create_buffer(&self.device, label, bytes.next_multiple_of(16), storage)
        };
        let clusters = [
            buffer("clustered build: clusters", n * 32)?,
            buffer("clustered build: clusters", n * 32)?,
        ];
        let nearest = buffer("clustered build: nearest neighbours", n * 4)?;
        let state = buffer("clustered build: state", STATE_WORDS * 4)?;
        let runs = s.n.div_ceil(FAST_THREADS) as u64;
        let run_counts = buffer("clustered build: run counts", runs * 8)?;
        let cnodes = buffer("clustered build: nodes", (n - 1) * 48)?;
        let readback = create_buffer(
            &self.device,
            "clustered build: state readback",
            STATE_WORDS * 4,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        )?;
        let p = self.fast_pipelines.as_ref().ok_or_else(|| {
            device_error(
                "the clustered build on the device",
                "its pipelines were not made",
            )
        })?;
        let grid = self.fast_grid(s.n.div_ceil(FAST_THREADS))?;
        let device = &self.device;
        let dispatch = |k: usize, grid, block: u64, bound: &[(u32, &wgpu::Buffer)]| {
            let pipeline = &p.clustered[k];
            let mut entries = vec![wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &s.params,
                    offset: block * PARAMS_STRIDE,
                    size: wgpu::BufferSize::new(PARAMS_BYTES),
                }),
            }];
            entries.extend(bound.iter().map(|&(binding, b)| wgpu::BindGroupEntry {
                binding,
                resource: b.as_entire_binding(),
            }));
            Dispatch {
                pipeline: pipeline.clone(),
                group: device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("prism clustered build"),
                    layout: &pipeline.get_bind_group_layout(0),
                    entries: &entries,
                }),
                grid,
            }
        };
        scoped(device, "bind the clustered build's buffers", || {
            let round = |parity: usize| {
                let block = PARITY_BLOCK + parity as u64;
                let (from, to) = (&clusters[parity], &clusters[1 - parity]);
                [
                    dispatch(1, grid, block, &[(17, from), (19, &nearest), (20, &state)]),
                    dispatch(
                        2,
                        grid,
                        block,
                        &[(19, &nearest), (20, &state), (21, &run_counts)],
                    ),
                    dispatch(
                        3,
                        grid,
                        block,
                        &[
                            (12, &s.links),
                            (17, from),
                            (18, to),
                            (19, &nearest),
                            (20, &state),
                            (21, &run_counts),
                            (22, &cnodes),
                        ],
                    ),
                ]
            };
            let tail = |parity: usize| {
                dispatch(
                    4,
                    (1, 1),
                    PARITY_BLOCK + parity as u64,
                    &[
                        (12, &s.links),
                        (17, &clusters[parity]),
                        (20, &state),
                        (22, &cnodes),
                    ],
                )
            };
            Ok(ClusteredParts {
                init: dispatch(
                    0,
                    grid,
                    PARITY_BLOCK,
                    &[
                        (3, &s.boxes),
                        (6, &s.values[0]),
                        (10, &s.slot_boxes),
                        (12, &s.links),
                        (18, &clusters[0]),
                        (20, &state),
                    ],
                ),
                rounds: [round(0), round(1)],
                tail: [tail(0), tail(1)],
                slots: dispatch(
                    5,
                    grid,
                    PARITY_BLOCK,
                    &[
                        (6, &s.values[0]),
                        (7, &s.keys[1]),
                        (12, &s.links),
                        (20, &state),
                        (22, &cnodes),
                    ],
                ),
                emit: dispatch(
                    6,
                    grid,
                    PARITY_BLOCK,
                    &[
                        (10, &s.slot_boxes),
                        (12, &s.links),
                        (15, &s.nodes),
                        (22, &cnodes),
                    ],
                ),
                state,
                cnodes,
                readback,
            })
        })
    }

    /// Submit `encoder` with the state copied to the readback buffer, wait,
    /// and return the state's words.
    fn clustered_submit(
        &self,
        mut encoder: wgpu::CommandEncoder,
        c: &ClusteredParts,
    ) -> Result<[u32; STATE_WORDS as usize], Error> {
        encoder.copy_buffer_to_buffer(&c.state, 0, &c.readback, 0, STATE_WORDS * 4);
        let index = self.queue.submit([encoder.finish()]);
        let mut words = [0u32; STATE_WORDS as usize];
        map_and_read(
            &self.device,
            &c.readback,
            STATE_WORDS * 4,
            index,
            "the clustered build on the device",
            |bytes| {
                for (w, b) in words.iter_mut().zip(bytes.chunks_exact(4)) {
                    *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                }
            },
        )?;
        Ok(words)
    }

    /// Run the clustered build once over `s`'s mesh (its arrays made on the
    /// first build).
    pub(crate) fn clustered_run(&self, s: &mut FastScratch) -> Result<ClusteredOutcome, Error> {
        if s.clustered.is_none() {
            s.clustered = Some(self.clustered_parts(s)?);
        }
        let Some(c) = s.clustered.as_ref() else {
            return Err(device_error(
                "the clustered build on the device",
                "its arrays were not made",
            ));
        };
        let n = s.n;
        let start = Instant::now();
        let mut encoder = self.new_encoder("prism clustered build");
        self.record_sort(&mut encoder, s);
        let record = |encoder: &mut wgpu::CommandEncoder, list: &[&Dispatch]| {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("prism clustered build"),
                timestamp_writes: None,
            });
            for d in list {
                pass.set_pipeline(&d.pipeline);
                pass.set_bind_group(0, &d.group, &[]);
                pass.dispatch_workgroups(d.grid.0, d.grid.1, 1);
            }
        };
        record(&mut encoder, &[&c.init]);
        let (mut round, mut m) = (0u32, n);
        while m > TAIL {
            let mut list = Vec::new();
            for r in round..round + ROUNDS_A_BATCH {
                list.extend(c.rounds[(r & 1) as usize].iter());
            }
            record(&mut encoder, &list);
            round += ROUNDS_A_BATCH;
            let state = self.clustered_submit(encoder, c)?;
            let left = state[(round & 1) as usize];
            // Every round merges at least once: a count that does not fall
            // is a broken build, not a reason to loop on.
            if left >= m {
                return Err(device_error(
                    "the clustered build on the device",
                    format!("{left} clusters left after a batch that started with {m}"),
                ));
            }
            m = left;
            encoder = self.new_encoder("prism clustered build");
        }
        record(
            &mut encoder,
            &[&c.tail[(round & 1) as usize], &c.slots, &c.emit],
        );
        let state = self.clustered_submit(encoder, c)?;
        let ms = start.elapsed().as_secs_f64() * 1e3;
        if state[6] != 1 || state[5] != n - 1 {
            return Err(device_error(
                "the clustered build on the device",
                format!(
                    "the clustering ended with {} nodes for {n} primitives (done flag {})",
                    state[5], state[6]
                ),
            ));
        }
        Ok(if state[4] != 0 {
            ClusteredOutcome::TooDeep
        } else {
            ClusteredOutcome::Built(ms)
        })
    }

    /// A command encoder labelled `label`.
    pub(crate) fn new_encoder(&self, label: &'static str) -> wgpu::CommandEncoder {
        self.device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) })
    }
}

/// Where the clustered tree's root's kept count lies in `cnodes` (bytes),
/// for the download: word 2 of row 2 of node `n - 2`.
pub(crate) fn root_kept_offset(n: u32) -> u64 {
    (3 * (n as u64 - 2) + 2) * 16 + 8
}

/// The clustered nodes' buffer of `s`, once built.
pub(crate) fn cnodes(s: &FastScratch) -> Option<&wgpu::Buffer> {
    s.clustered.as_ref().map(|c| &c.cnodes)
}
