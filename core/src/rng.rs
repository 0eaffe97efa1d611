//! PCG random numbers: a hash to seed each path, a PCG step to advance it.
//!
//! All arithmetic is on `u32` so that every GPU (WGSL has no 64-bit integers)
//! runs the very same generator. The stream of a path is a pure function of
//! `(pixel, sample, frame seed)`: no result depends on thread scheduling.

/// The PCG hash of Jarzynski and Olano, "Hash Functions for GPU Rendering" (JCGT 2020):
/// one LCG step then the RXS-M-XS output permutation.
#[inline(always)]
pub fn pcg_hash(input: u32) -> u32 {
    let state = input.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
    let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277_803_737);
    (word >> 22) ^ word
}

/// The seed of one path: hashes chained so that nearby pixels, samples and frames
/// give unrelated streams.
#[inline(always)]
pub fn path_seed(pixel: u32, sample: u32, frame_seed: u32) -> u32 {
    pcg_hash(pixel ^ pcg_hash(sample ^ pcg_hash(frame_seed)))
}

/// A PCG-RXS-M-XS 32/32 generator: 32-bit LCG state, permuted output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pcg {
    /// LCG state.
    pub state: u32,
}

impl Pcg {
    /// The generator of one path.
    #[inline(always)]
    pub fn for_path(pixel: u32, sample: u32, frame_seed: u32) -> Self {
        Self {
            state: path_seed(pixel, sample, frame_seed),
        }
    }

    /// The next 32 random bits.
    #[inline(always)]
    pub fn next_u32(&mut self) -> u32 {
        self.state = self
            .state
            .wrapping_mul(747_796_405)
            .wrapping_add(2_891_336_453);
        let s = self.state;
        let word = ((s >> ((s >> 28) + 4)) ^ s).wrapping_mul(277_803_737);
        (word >> 22) ^ word
    }

    /// The generator `steps` numbers on, at once: the LCG's step `state * a +
    /// c` (wrapping) composed `steps` times by squaring, in `log2(steps)`
    /// rounds. The GPU kernels that share one pixel's AO rays over a warp's
    /// lanes start AO ray `i` this way, `2i` numbers after its camera numbers.
    #[inline]
    pub fn advance(&mut self, steps: u32) {
        let (mut mult, mut plus) = (747_796_405u32, 2_891_336_453u32);
        let (mut acc_mult, mut acc_plus) = (1u32, 0u32);
        let mut n = steps;
        while n != 0 {
            if n & 1 != 0 {
                acc_mult = acc_mult.wrapping_mul(mult);
                acc_plus = acc_plus.wrapping_mul(mult).wrapping_add(plus);
            }
            plus = mult.wrapping_add(1).wrapping_mul(plus);
            mult = mult.wrapping_mul(mult);
            n >>= 1;
        }
        self.state = acc_mult.wrapping_mul(self.state).wrapping_add(acc_plus);
    }

    /// A uniform float in `[0, 1)`: the top 24 bits scaled by `2^-24`, so every
    /// value is exact and 1 is never returned.
    #[inline(always)]
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 * (1.0 / 16_777_216.0)
    }
}
