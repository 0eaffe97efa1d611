//! Collapsing core's binary trees into wide ones: which binary children one
//! wide node takes.
//!
//! A wide node of width `W` starts from its binary node's two children and
//! repeatedly opens the inner child of largest surface area until it holds
//! `W` (the usual greedy SAH-guided collapse). Both wide BVHs ([`crate::wide`]
//! and `bvh8`) and their trees over instances are made this way.

use prism_core::Error;
use prism_core::gpu::{BvhNode, EMPTY_CHILD};

/// One child of a binary node, as the collapse sees it: its box rows (the
/// index and count in their `w` lanes).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Child {
    pub(crate) lo: [f32; 4],
    pub(crate) hi: [f32; 4],
}

impl Child {
    /// Child index: an inner node, or a leaf's first slot (or instance).
    #[inline]
    pub(crate) fn index(&self) -> u32 {
        self.lo[3].to_bits()
    }
    /// Primitive count (0 for an inner node or an absent child).
    #[inline]
    pub(crate) fn count(&self) -> u32 {
        self.hi[3].to_bits()
    }
    /// Whether the child is an inner node.
    #[inline]
    pub(crate) fn is_inner(&self) -> bool {
        self.count() == 0 && self.index() != EMPTY_CHILD
    }
    /// Half the surface area of the child's box.
    #[inline]
    pub(crate) fn half_area(&self) -> f32 {
        let e = [
            self.hi[0] - self.lo[0],
            self.hi[1] - self.lo[1],
            self.hi[2] - self.lo[2],
        ];
        e[0] * e[1] + e[1] * e[2] + e[2] * e[0]
    }
}

/// The present children of binary node `node` of `bin` (none for a node past
/// the array).
pub(crate) fn children(bin: &[BvhNode], node: u32) -> impl Iterator<Item = Child> {
    let sides = bin.get(node as usize).map(|n| {
        [
            Child {
                lo: n.left_lo,
                hi: n.left_hi,
            },
            Child {
                lo: n.right_lo,
                hi: n.right_hi,
            },
        ]
    });
    sides
        .into_iter()
        .flatten()
        .filter(|c| c.index() != EMPTY_CHILD)
}

/// The children one wide node of up to `W` children takes for binary node
/// `node`: its two children, the inner one of largest surface area opened
/// into its own two until there are `W`. `keep` is each child's extra state
/// (`kept(c)` true: never opened, e.g. a small subtree that becomes one
/// leaf). Returns the children and how many there are.
pub(crate) fn gather<const W: usize, T: Copy>(
    bin: &[BvhNode],
    node: u32,
    state: impl Fn(&Child) -> T,
    kept: impl Fn(&T) -> bool,
) -> ([Option<(Child, T)>; W], usize) {
    let mut kids: [Option<(Child, T)>; W] = [None; W];
    let mut n = 0;
    for c in children(bin, node) {
        if n < W {
            kids[n] = Some((c, state(&c)));
            n += 1;
        }
    }
    while n < W {
        let mut open: Option<(usize, f32)> = None;
        for (i, k) in kids.iter().enumerate().take(n) {
            if let Some((c, s)) = k
                && c.is_inner()
                && !kept(s)
                // The last of equal areas, as `Iterator::max_by` picks.
                && open.is_none_or(|(_, a)| c.half_area().total_cmp(&a).is_ge())
            {
                open = Some((i, c.half_area()));
            }
        }
        let Some((i, _)) = open else { break };
        let Some((inner, _)) = kids[i] else { break };
        // The opened child's place goes to the last one (the order of a
        // `swap_remove`), then its own children follow.
        n -= 1;
        kids[i] = kids[n];
        kids[n] = None;
        for c in children(bin, inner.index()) {
            if n < W {
                kids[n] = Some((c, state(&c)));
                n += 1;
            }
        }
    }
    (kids, n)
}

/// Room for `more` items in `v` (amortised growth, as `push` would take), or
/// [`Error::HostOutOfMemory`] naming `what` where the host cannot give it.
/// An array of at least [`HUGE_ARRAY_BYTES`] is advised into huge pages.
pub(crate) fn reserve<T>(v: &mut Vec<T>, more: usize, what: &'static str) -> Result<(), Error> {
    let before = v.as_ptr();
    v.try_reserve(more).map_err(|_| Error::HostOutOfMemory {
        what,
        bytes: (v.len().saturating_add(more) as u64).saturating_mul(size_of::<T>() as u64),
    })?;
    if v.as_ptr() != before {
        advise_huge_pages(v);
    }
    Ok(())
}

/// The size from which a tree's array asks for huge pages: a walk's random
/// reads over a larger array miss the TLB of 4 KiB pages (12 MiB of reach on
/// a Zen 4 core) at nearly every node.
pub(crate) const HUGE_ARRAY_BYTES: usize = 32 << 20;

/// Ask the kernel to back `v`'s allocation (the 2 MiB-aligned part of its
/// capacity) with transparent huge pages, where it is at least
/// [`HUGE_ARRAY_BYTES`] (Linux; a hint, which the kernel may ignore). On the
/// 5.56M-triangle mesh, diffuse rays: 20% more closest hits a second.
fn advise_huge_pages<T>(v: &Vec<T>) {
    let bytes = v.capacity().saturating_mul(size_of::<T>());
    if bytes < HUGE_ARRAY_BYTES {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = (v.as_ptr() as usize).next_multiple_of(HUGE);
        let end = (v.as_ptr() as usize + bytes) & !(HUGE - 1);
        if end > start {
            // SAFETY: [start, end) lies inside `v`'s live allocation (its
            // capacity's bytes, rounded inwards to 2 MiB); MADV_HUGEPAGE
            // changes how the kernel backs those pages, never their contents
            // or whether they may be read and written. Its result is only
            // advice taken or not, so it is ignored.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{HUGE_ARRAY_BYTES, reserve};
    use prism_core::Error;

    /// An array large enough to be advised into huge pages keeps what it
    /// held before the reservation and takes what is written after it.
    #[test]
    fn a_huge_array_keeps_its_contents() {
        let mut v: Vec<u64> = (0..1000).collect();
        let n = HUGE_ARRAY_BYTES / 8 + 4096;
        assert!(reserve(&mut v, n, "test array").is_ok());
        assert!(v.capacity() * 8 >= HUGE_ARRAY_BYTES);
        v.extend(1000..n as u64);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    }

    #[test]
    fn a_reservation_the_host_cannot_give_is_an_error_naming_the_array() {
        let mut v: Vec<u64> = vec![1];
        match reserve(&mut v, usize::MAX, "test array") {
            Err(Error::HostOutOfMemory { what, bytes }) => {
                assert_eq!(what, "test array");
                assert_eq!(bytes, u64::MAX, "the size saturates");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(v, [1], "the vector is as it was");
        assert!(reserve(&mut v, 10, "test array").is_ok());
        assert!(v.capacity() >= 11);
    }
}
