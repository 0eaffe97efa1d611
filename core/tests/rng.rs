//! Properties of the PCG generator and the per-path seeding.
//!
//! Statistical checks use fixed seeds, so they are deterministic: each bound is
//! many standard deviations above what a correct generator gives, and orders of
//! magnitude below what a biased or correlated one gives.

mod common;

use common::config;
use prism_core::rng::{Pcg, path_seed, pcg_hash};
use proptest::prelude::*;
use std::collections::HashSet;

/// Pearson's chi-square statistic of `counts` against a uniform expectation.
fn chi_square(counts: &[u64]) -> f64 {
    let total: u64 = counts.iter().sum();
    let expected = total as f64 / counts.len() as f64;
    counts
        .iter()
        .map(|&c| (c as f64 - expected).powi(2) / expected)
        .sum()
}

/// A chi-square bound for `df` degrees of freedom: mean + 8 standard deviations
/// (a p-value far below 1e-9 for a correct generator).
fn chi_square_bound(df: usize) -> f64 {
    df as f64 + 8.0 * (2.0 * df as f64).sqrt()
}

fn bin(x: f32, bins: usize) -> usize {
    ((x * bins as f32) as usize).min(bins - 1)
}

proptest! {
    #![proptest_config(config(1000))]

    /// `next_f32` is in `[0, 1)` for any state, and the generator steps exactly as
    /// `pcg_hash` of the previous state (the GPU mirrors rely on that identity).
    #[test]
    fn next_f32_in_unit_interval(state in any::<u32>()) {
        let mut rng = Pcg { state };
        for _ in 0..64 {
            let before = rng.state;
            let mut copy = rng;
            let bits = copy.next_u32();
            prop_assert_eq!(bits, pcg_hash(before));
            let x = rng.next_f32();
            prop_assert!((0.0..1.0).contains(&x), "{x}");
            prop_assert_eq!(x, (bits >> 8) as f32 / 16_777_216.0);
        }
    }

    /// Advancing by `k` leaves the generator where `k` steps leave it, for any
    /// state and count (the AO kernels' lanes rely on it), and advancing by
    /// `a` then `b` equals advancing by `a + b`.
    #[test]
    fn advance_equals_stepping(state in any::<u32>(), k in 0u32..3000, a in any::<u32>(), b in any::<u32>()) {
        let mut jumped = Pcg { state };
        jumped.advance(k);
        let mut stepped = Pcg { state };
        for _ in 0..k {
            stepped.next_u32();
        }
        prop_assert_eq!(jumped, stepped);
        let (mut one, mut two) = (Pcg { state }, Pcg { state });
        one.advance(a);
        one.advance(b);
        two.advance(a.wrapping_add(b));
        prop_assert_eq!(one, two);
    }

    /// Neighbouring pixels, samples and frames get different seeds, and so
    /// different streams.
    #[test]
    fn path_seed_differs_for_neighbours(pixel in 0u32..(1 << 26), sample in 0u32..(1 << 16), frame in any::<u32>(), width in 1u32..8192) {
        let base = path_seed(pixel, sample, frame);
        let neighbours = [
            path_seed(pixel + 1, sample, frame),
            path_seed(pixel + width, sample, frame),
            path_seed(pixel, sample + 1, frame),
            path_seed(pixel + 1, sample + 1, frame),
            path_seed(pixel, sample, frame.wrapping_add(1)),
            path_seed(sample, pixel, frame),
        ];
        for (k, &s) in neighbours.iter().enumerate() {
            if k == 5 && pixel == sample {
                continue;
            }
            prop_assert_ne!(s, base, "neighbour {} has the same seed", k);
        }
    }

    /// No two pixels of a 64x64 tile share a seed, for any sample and frame
    /// (`path_seed` is a bijection of the pixel index).
    #[test]
    fn path_seed_unique_over_a_tile(first in 0u32..(1 << 24), sample in any::<u32>(), frame in any::<u32>()) {
        let seeds: HashSet<u32> = (first..first + 4096).map(|p| path_seed(p, sample, frame)).collect();
        prop_assert_eq!(seeds.len(), 4096);
    }
}

/// The float conversion at its extremes: all-zero top bits give 0, all-one top
/// bits give the largest float below 1 (never 1 itself).
#[test]
fn next_f32_extremes() {
    let find = |want: u32| {
        (0u32..)
            .find(|&s| pcg_hash(s) >> 8 == want)
            .expect("pcg_hash is a bijection")
    };
    let lo = find(0);
    assert_eq!(Pcg { state: lo }.next_f32(), 0.0);
    let hi = find(0xFF_FFFF);
    let x = Pcg { state: hi }.next_f32();
    assert!(x < 1.0);
    assert_eq!(x, 1.0 - 2f32.powi(-24));
}

/// One stream, 2^20 numbers into 256 bins; and consecutive pairs into 32x32
/// cells (catches correlation between successive numbers).
#[test]
fn uniform_within_streams() {
    for frame in [0u32, 1, 0xDEAD_BEEF] {
        let mut rng = Pcg::for_path(12345, 7, frame);
        let mut counts = vec![0u64; 256];
        let mut pairs = vec![0u64; 32 * 32];
        let mut prev = rng.next_f32();
        let mut ones = [0u64; 32];
        for _ in 0..(1 << 20) {
            let bits = {
                let mut peek = rng;
                peek.next_u32()
            };
            for (k, one) in ones.iter_mut().enumerate() {
                *one += ((bits >> k) & 1) as u64;
            }
            let x = rng.next_f32();
            counts[bin(x, 256)] += 1;
            pairs[bin(prev, 32) * 32 + bin(x, 32)] += 1;
            prev = x;
        }
        let c1 = chi_square(&counts);
        assert!(
            c1 < chi_square_bound(255),
            "frame {frame}: chi-square {c1} over 256 bins"
        );
        let c2 = chi_square(&pairs);
        assert!(
            c2 < chi_square_bound(1023),
            "frame {frame}: chi-square {c2} over successive pairs"
        );
        // Every bit is set half the time: 2^19 +- 8 standard deviations (2^9).
        for (k, &one) in ones.iter().enumerate() {
            let dev = (one as f64 - (1u64 << 19) as f64).abs();
            assert!(dev < 8.0 * 512.0, "frame {frame}: bit {k} set {one} times");
        }
    }
}

/// Across streams: the first number of each of 2^18 neighbouring pixels (and of
/// 2^18 successive samples of one pixel) is uniform, and neighbours are not
/// correlated.
#[test]
fn uniform_across_streams() {
    let n = 1u32 << 18;
    let pixel_first = |p: u32| Pcg::for_path(p, 0, 42).next_f32();
    let sample_first = |s: u32| Pcg::for_path(1000, s, 42).next_f32();
    for (what, first) in [
        ("pixels", &pixel_first as &dyn Fn(u32) -> f32),
        ("samples", &sample_first),
    ] {
        let mut counts = vec![0u64; 256];
        let mut sum_xy = 0.0f64;
        let mut prev = first(0) as f64;
        let (mut sum, mut sum2) = (0.0f64, 0.0f64);
        for i in 1..=n {
            let x = first(i);
            counts[bin(x, 256)] += 1;
            let x = x as f64;
            sum += x;
            sum2 += x * x;
            sum_xy += (x - 0.5) * (prev - 0.5);
            prev = x;
        }
        let c = chi_square(&counts);
        assert!(c < chi_square_bound(255), "{what}: chi-square {c}");
        let nf = n as f64;
        // Mean 1/2 and variance 1/12, each within 8 standard errors.
        assert!(
            (sum / nf - 0.5).abs() < 8.0 * (1.0 / 12.0 / nf).sqrt(),
            "{what}: mean {}",
            sum / nf
        );
        assert!(
            (sum2 / nf - 1.0 / 3.0).abs() < 8.0 * (4.0 / 45.0 / nf).sqrt(),
            "{what}: second moment {}",
            sum2 / nf
        );
        // Lag-1 covariance: 0 +- 8 standard errors (1/12 / sqrt(n)).
        let cov = sum_xy / nf;
        assert!(
            cov.abs() < 8.0 / 12.0 / nf.sqrt(),
            "{what}: neighbours correlate (covariance {cov})"
        );
    }
}

/// Known values, computed apart from this crate (the published PCG-RXS-M-XS
/// 32/32 step in arbitrary-precision arithmetic, masked to 32 bits): they pin
/// the hash, the path seed and the stream, which every GPU kernel mirrors, so
/// that a change to any of them fails here and not only as different pixels.
#[test]
fn known_values() {
    assert_eq!(pcg_hash(0), 0x07bb_2fe2);
    assert_eq!(pcg_hash(1), 0xa8be_ea3c);
    assert_eq!(pcg_hash(u32::MAX), 0xe62a_4902);
    assert_eq!(path_seed(12345, 7, 42), 0x4d12_f473);
    let mut rng = Pcg::for_path(12345, 7, 42);
    let first = [0x459c_20cf, 0x57b3_eeb9, 0xddd5_f031, 0x5f13_f94e];
    assert_eq!(first.map(|_| rng.next_u32()), first);
    // next_f32 is the top 24 bits of the next number.
    let mut a = Pcg::for_path(12345, 7, 42);
    assert_eq!(a.next_f32(), (0x459c_20cfu32 >> 8) as f32 / 16_777_216.0);
}
