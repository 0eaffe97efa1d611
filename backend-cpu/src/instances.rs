//! What a wide BVH keeps of a scene's geometries and instances besides its
//! nodes: where each geometry's wide tree lies, and each instance's record as
//! the wide walks read it.
//!
//! A wide BVH holds every geometry's tree one after the other, as core's
//! [`Accel`] does (a flat scene is one geometry). An instance record is
//! core's ([`GpuInstance`]: world-to-object rows, mask, material, scale) with
//! its root replaced by the root of its geometry's *wide* tree, so that
//! [`prism_core::two_level::object_ray`] reads the very rows core's walk
//! reads and the object ray is core's bit for bit.

use crate::collapse::reserve;
use core::ops::Range;
use prism_core::gpu::{EMPTY_CHILD, GpuInstance};
use prism_core::{Accel, Error};

/// One geometry's part of a wide BVH: its root node, its nodes and its
/// triangle packets (ranges of the BVH's arrays).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    /// Root node of the geometry's wide tree.
    pub(crate) root: u32,
    /// The geometry's wide nodes.
    pub(crate) nodes: Range<usize>,
    /// The geometry's triangle packets.
    pub(crate) packets: Range<usize>,
}

/// An instance's record as the wide walks read it: core's record (64 bytes)
/// on a cache line of its own (core's type is aligned to 16 bytes only, so in
/// an array half of the records would straddle two lines).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
pub(crate) struct Record(pub(crate) GpuInstance);

/// Write the wide-walk records of `accel`'s instances `range` into `records`
/// (grown to `accel.instances().len()`, shrunk likewise): core's records with
/// each root replaced by the wide root of the instance's geometry (`spans`).
/// A removed instance keeps core's record, which no ray sees.
///
/// The geometry is the instance's as placed ([`Accel::instance`]), not
/// looked up from core's record's root: core gives an instance added or
/// moved in the same update as a geometry's rebuild the root its geometry had
/// before the rebuild.
pub(crate) fn write_records(
    accel: &Accel,
    spans: &[Span],
    range: Range<usize>,
    records: &mut Vec<Record>,
) -> Result<(), Error> {
    let all = accel.instances();
    let grow = all.len().saturating_sub(records.len());
    reserve(records, grow, "instance records")?;
    records.resize(all.len(), Record::default());
    let end = range.end.min(all.len());
    let start = range.start.min(end);
    for (i, (Record(mine), core)) in records[start..end]
        .iter_mut()
        .zip(&all[start..end])
        .enumerate()
    {
        *mine = *core;
        if core.root() == EMPTY_CHILD {
            continue;
        }
        let index = (start + i) as u32;
        match accel
            .instance(index)
            .and_then(|inst| spans.get(inst.geometry as usize))
        {
            Some(span) => mine.info[0] = f32::from_bits(span.root),
            // ok: a record with a root is a live instance's, of a geometry
            // of the scene; should one not be, it is hidden rather than
            // walked from a wrong node.
            None => {
                mine.info[0] = f32::from_bits(EMPTY_CHILD);
                mine.info[1] = f32::from_bits(0);
            }
        }
    }
    Ok(())
}
