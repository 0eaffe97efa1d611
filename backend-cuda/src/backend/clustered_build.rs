//! The clustered tree ([`BuildQuality::Clustered`](prism_core::BuildQuality))
//! built on the device: the launches of kernels/clustered_build.cuh, which
//! mirror `prism_core::ploc::build` pass for pass, after the fast build's
//! boxes, codes and sort.
//!
//! The number of clustering rounds depends on the mesh (42 for bunny, 66 for
//! ogre), and the host does not see the cluster count without waiting on the
//! stream. So the rounds over the whole device go in batches of
//! [`ROUNDS_A_BATCH`], a round past the last doing nothing, and the host reads
//! the count after each batch; once at most [`CLUSTERED_TAIL`] clusters are
//! left, one block finishes every round left in one launch, the clusters in
//! its shared memory (a round there is a few microseconds; on the whole
//! device, two launches).

use super::device::DeviceState;
use super::fast_build::{Arg, Scratch, launch, launch_blocks};
use crate::driver::DeviceBuffer;
use crate::kernels::{
    CLUSTERED_STATE_WORDS, CLUSTERED_TAIL, CLUSTERED_TAIL_THREADS, FAST_BUILD_THREADS,
};
use prism_core::Error;

/// Rounds on the whole device between two reads of the cluster count: at
/// about a fifth of the clusters merged a round, 10 rounds take ogre's 124k
/// clusters to 17.7k, then 3.5k, then under the tail's 1024; a round past the
/// need only hands the clusters on.
const ROUNDS_A_BATCH: u32 = 10;

/// The clustered build's arrays beside the fast build's ([`Scratch`]).
pub(super) struct ClusteredArrays {
    /// Cluster ids (a flagged slot or a node), one array a round in turn.
    ids: [DeviceBuffer; 2],
    /// Cluster boxes (two float4 each), likewise.
    boxes: [DeviceBuffer; 2],
    /// Each cluster's nearest neighbour, this round.
    nearest: DeviceBuffer,
    /// Primitives under each node.
    counts: DeviceBuffer,
    /// Each run's places kept and nodes made, this round.
    sums: DeviceBuffer,
    /// The round state (clustered_build.cuh's `PLOC_*` words).
    state: DeviceBuffer,
    /// `order[slot]`: the triangle at each final slot.
    pub(super) order: DeviceBuffer,
}

impl ClusteredArrays {
    /// The arrays for `n` primitives.
    fn new(n: u32) -> Result<ClusteredArrays, Error> {
        let nn = n as usize;
        let runs = n.div_ceil(FAST_BUILD_THREADS) as usize;
        let a = DeviceBuffer::alloc;
        Ok(ClusteredArrays {
            ids: [
                a(nn * 4, "clustered build: cluster ids")?,
                a(nn * 4, "clustered build: cluster ids")?,
            ],
            boxes: [
                a(nn * 32, "clustered build: cluster boxes")?,
                a(nn * 32, "clustered build: cluster boxes")?,
            ],
            nearest: a(nn * 4, "clustered build: nearest neighbours")?,
            counts: a(nn * 4, "clustered build: node counts")?,
            sums: a(runs * 8, "clustered build: run counts")?,
            state: a(CLUSTERED_STATE_WORDS * 4, "clustered build: state")?,
            order: a(nn * 4, "clustered build: slot order")?,
        })
    }

    /// Whether the last build flagged its tree as too deep for the traversal
    /// stack (after the stream has run it); an error when its clustering did
    /// not end with one cluster and `n - 1` nodes, which a correct build
    /// always does.
    pub(super) fn too_deep(&self, st: &DeviceState, n: u32) -> Result<bool, Error> {
        let mut state = [0u32; CLUSTERED_STATE_WORDS];
        self.state
            .download(&st.stream, bytemuck::cast_slice_mut(&mut state))?;
        if state[6] != 1 || state[5] != n - 1 {
            return Err(Error::Device {
                backend: crate::driver::BACKEND,
                operation: "the clustered build on the device",
                message: format!(
                    "the clustering ended with {} nodes for {n} primitives (done flag {})",
                    state[5], state[6]
                ),
            });
        }
        Ok(state[4] != 0)
    }

    /// The cluster count at the start of round `round` (waits on the stream).
    fn count(&self, st: &DeviceState, round: u32) -> Result<u32, Error> {
        let mut state = [0u32; 2];
        self.state
            .download(&st.stream, bytemuck::cast_slice_mut(&mut state))?;
        Ok(state[(round & 1) as usize])
    }
}

/// Enqueue the clustered build after the sort of `s` (the slot order in
/// `s.values[0]`): the clusters, their rounds, the slots and the emit.
///
/// # Safety
/// `s`'s arrays were allocated by `Scratch::new` for its `n` triangles and
/// its mesh, and the stream has the fast build's boxes and sort enqueued.
pub(super) unsafe fn enqueue(s: &mut Scratch, st: &DeviceState) -> Result<(), Error> {
    let n = s.n;
    if s.clustered.is_none() {
        s.clustered = Some(ClusteredArrays::new(n)?);
    }
    let Some(c) = s.clustered.as_mut() else {
        return Err(Error::Device {
            backend: crate::driver::BACKEND,
            operation: "the clustered build on the device",
            message: "its arrays were not made".into(),
        });
    };
    let f = &st.kernels.clustered;
    let blocks = n.div_ceil(FAST_BUILD_THREADS);
    let inner = n as usize - 1;
    // Parent links start as "none": the root's is never written.
    s.links.fill_u32(&st.stream, u32::MAX, inner + n as usize)?;
    let p = |b: &DeviceBuffer| Arg::Ptr(b.ptr());
    // SAFETY (every launch below): the arguments match the kernel's
    // parameters in prism.cu one for one (device pointers as u64, counts as
    // u32); the arrays were made for `n` primitives (`n - 1` nodes, `n - 1 +
    // n` links, a run flag and offset per block).
    unsafe {
        launch(
            st,
            f[0],
            blocks,
            &mut [
                p(&s.values[0]),
                Arg::U32(n),
                p(&s.boxes),
                p(&s.slot_boxes),
                p(&c.ids[0]),
                p(&c.boxes[0]),
                p(&c.state),
            ],
        )?;
        let mut round = 0u32;
        let mut m = n;
        while m > CLUSTERED_TAIL {
            for _ in 0..ROUNDS_A_BATCH {
                let (from, to) = ((round & 1) as usize, ((round + 1) & 1) as usize);
                launch(
                    st,
                    f[1],
                    blocks,
                    &mut [
                        p(&c.boxes[from]),
                        p(&c.nearest),
                        p(&c.state),
                        Arg::U32(round),
                    ],
                )?;
                launch(
                    st,
                    f[2],
                    blocks,
                    &mut [p(&c.nearest), p(&c.sums), p(&c.state), Arg::U32(round)],
                )?;
                launch(
                    st,
                    f[3],
                    blocks,
                    &mut [
                        p(&c.nearest),
                        p(&c.ids[from]),
                        p(&c.boxes[from]),
                        p(&c.ids[to]),
                        p(&c.boxes[to]),
                        p(&s.children),
                        p(&s.node_boxes),
                        p(&s.costs),
                        p(&c.counts),
                        p(&s.kept),
                        p(&s.links),
                        Arg::U32(n),
                        p(&c.sums),
                        p(&c.state),
                        Arg::U32(round),
                    ],
                )?;
                round += 1;
            }
            let left = c.count(st, round)?;
            // Every round merges at least once: a count that does not fall
            // is a broken build, not a reason to loop on.
            if left >= m {
                return Err(Error::Device {
                    backend: crate::driver::BACKEND,
                    operation: "the clustered build on the device",
                    message: format!("{left} clusters left after a batch that started with {m}"),
                });
            }
            m = left;
        }
        let at = (round & 1) as usize;
        let mut tail_args = [
            p(&c.ids[at]),
            p(&c.boxes[at]),
            p(&s.children),
            p(&s.node_boxes),
            p(&s.costs),
            p(&c.counts),
            p(&s.kept),
            p(&s.links),
            Arg::U32(n),
            p(&c.state),
            Arg::U32(round),
        ];
        launch_blocks(st, f[4], 1, CLUSTERED_TAIL_THREADS, &mut tail_args)?;
        let triangles = s.triangles.as_ref().map_or(0, |b| b.ptr());
        launch(
            st,
            f[5],
            blocks,
            &mut [
                Arg::U32(n),
                p(&s.values[0]),
                p(&s.children),
                p(&c.counts),
                p(&s.kept),
                p(&s.links),
                Arg::Ptr(triangles),
                p(&s.positions),
                Arg::U32(s.vertex_count),
                p(&s.prims),
                p(&c.order),
                p(&c.state),
            ],
        )?;
        launch(
            st,
            f[6],
            blocks,
            &mut [
                Arg::U32(n),
                p(&s.children),
                p(&c.counts),
                p(&s.kept),
                p(&s.links),
                p(&s.slot_boxes),
                p(&s.node_boxes),
                p(&s.nodes),
            ],
        )?;
    }
    Ok(())
}
