//! The render kernels sum a warp's ray counts before one 64-bit atomic on
//! the warp's slot of the frame's ray tally (`count_rays` in
//! `kernels/prism.cu`). 32 lanes of `u32` counts can pass
//! 2^32, so on sm_80 and later the kernel sums each count's high and low 16
//! bits apart (`__reduce_add_sync`, 32-bit) and joins the two in 64 bits. This
//! checks on the host, with no GPU, that the join is the exact sum for any
//! counts, where a plain 32-bit sum wraps.

use proptest::prelude::*;

/// The kernel's sum, step for step: two 32-bit reductions, joined in `u64`.
fn kernel_warp_sum(lanes: &[u32; 32]) -> u64 {
    let high: u32 = lanes.iter().map(|&r| r >> 16).sum();
    let low: u32 = lanes.iter().map(|&r| r & 0xffff).sum();
    (u64::from(high) << 16) + u64::from(low)
}

fn exact(lanes: &[u32; 32]) -> u64 {
    lanes.iter().map(|&r| u64::from(r)).sum()
}

proptest! {
    #[test]
    fn the_split_warp_sum_is_exact(lanes in prop::array::uniform32(any::<u32>())) {
        prop_assert_eq!(kernel_warp_sum(&lanes), exact(&lanes));
    }
}

#[test]
fn the_largest_counts_pass_2_to_the_32_without_wrapping() {
    let lanes = [u32::MAX; 32];
    assert_eq!(kernel_warp_sum(&lanes), 32 * u64::from(u32::MAX));
    // What the 32-bit sum the kernel had before gave.
    let wrapped = lanes.iter().fold(0u32, |s, &r| s.wrapping_add(r));
    assert_ne!(u64::from(wrapped), exact(&lanes));
    // The kernel's own source sums this way.
    let source = include_str!("../kernels/prism.cu");
    assert!(source.contains("__reduce_add_sync(0xffffffffu, rays >> 16)"));
    assert!(source.contains("__reduce_add_sync(0xffffffffu, rays & 0xffffu)"));
}
