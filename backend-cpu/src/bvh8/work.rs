//! What a walk did, counted where a batch asks (the packets' choice, see
//! [`Choice`]), and nothing where it does not: the walks take a [`Tally`],
//! and `()` counts nothing (its calls compile to nothing).

/// A walk's counts: nodes visited and leaf tests made.
pub(super) trait Tally {
    /// One node's boxes tested.
    fn node(&mut self);
    /// `n` leaf tests: triangle pairs (eight triangles, one ray) in the
    /// single-ray walk, triangles (one triangle, eight rays) in a packet's.
    fn tests(&mut self, n: u32);
    /// Whether the walk has cost more than it may (it then stops).
    fn over(&self) -> bool;
}

impl Tally for () {
    #[inline(always)]
    fn node(&mut self) {}
    #[inline(always)]
    fn tests(&mut self, _: u32) {}
    #[inline(always)]
    fn over(&self) -> bool {
        false
    }
}

/// The cost of a single-ray walk's node (its eight boxes, then the order of
/// the children entered) and leaf test (two triangle packets), and of a
/// packet's node (the interval bounds, then the order) and triangle test
/// (eight rays, mostly stopped before the division), in the time the walks
/// take: what sets which walk is cheaper is their ratio. Set from camera
/// rays over bunny, ogre and the 5.6-million-triangle mesh (one thread, AMD
/// EPYC), where the packets took 0.65, 0.78 (any hit 0.88) and 1.46x the
/// single walks' time: the counts come to 0.57, 0.82 (0.91) and 1.96 (the
/// samples stopped at twice), on the same side of 1 every time.
const SINGLE_NODE: u64 = 45;
const SINGLE_TEST: u64 = 70;
const PACKET_NODE: u64 = 45;
const PACKET_TEST: u64 = 40;

/// The cost of one or more walks, in the units above, and the most it may
/// reach.
#[derive(Clone, Copy, Debug)]
pub(super) struct Work {
    cost: u64,
    limit: u64,
    node: u64,
    test: u64,
    /// Whether any leaf test was made.
    tested: bool,
}

impl Work {
    /// The cost of single-ray walks, unlimited.
    pub(super) fn single() -> Self {
        Work {
            cost: 0,
            limit: u64::MAX,
            node: SINGLE_NODE,
            test: SINGLE_TEST,
            tested: false,
        }
    }

    /// The cost of a packet's walk, stopped past `limit`.
    pub(super) fn packet(limit: u64) -> Self {
        Work {
            cost: 0,
            limit,
            node: PACKET_NODE,
            test: PACKET_TEST,
            tested: false,
        }
    }
}

impl Tally for Work {
    #[inline(always)]
    fn node(&mut self) {
        self.cost = self.cost.saturating_add(self.node);
    }
    #[inline(always)]
    fn tests(&mut self, n: u32) {
        self.cost = self.cost.saturating_add(self.test * u64::from(n));
        self.tested = true;
    }
    #[inline(always)]
    fn over(&self) -> bool {
        self.cost > self.limit
    }
}

/// Packets a batch samples, spread over it: one in [`SAMPLE_SHARE`] of its
/// groups of eight rays, at most [`SAMPLES`]. A sample walks its rays up to
/// three times over (alone, then as a packet stopped at twice their cost),
/// so a batch of fewer than `PACKET * SAMPLE_SHARE` rays (512) samples none
/// and walks its rays alone: a share of one in 64 keeps the samples under 5%
/// of any batch's work (0.2% of 262,144 rays).
pub(super) const SAMPLES: usize = 64;
pub(super) const SAMPLE_SHARE: usize = 64;

/// Whether a batch's coherent rays go in packets: eight neighbouring rays
/// pay in a packet when they meet the same nodes and leaves (camera rays
/// over surfaces a few pixels or more across), and do not when each meets
/// its own (a mesh whose triangles are far smaller than a pixel: each ray
/// of the eight ends in another leaf, and the packet walks all of them for
/// all eight: 0.6x the single walks' speed on 5.6 million triangles). Which
/// it is shows only in the walk, so before a batch is traced some of its
/// coherent packets (up to [`SAMPLES`]), spread over it, are walked both ways (each packet
/// stopped once it has cost twice its rays' single walks) and their costs
/// summed. Samples that reach no leaf (rays into the sky around a model)
/// are left out. The counts, not clocks, decide, so the choice is the same
/// on every run, and either walk gives the same answers.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Choice {
    packets: u64,
    single: u64,
}

impl Choice {
    /// The most a sampled packet's walk may cost, given its rays' single
    /// walks' cost.
    pub(super) fn limit(single: &Work) -> u64 {
        single.cost.saturating_mul(2)
    }

    /// Take a sampled packet's cost (as far as it went) and its eight rays'.
    pub(super) fn weigh(&mut self, packet: Work, single: Work) {
        if single.tested {
            self.packets = self.packets.saturating_add(packet.cost);
            self.single = self.single.saturating_add(single.cost);
        }
    }

    /// Whether packets have cost no more than single rays over the samples
    /// (yes where no sample reached a leaf).
    pub(super) fn packets(&self) -> bool {
        self.packets <= self.single
    }
}
