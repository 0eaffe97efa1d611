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
use crate::leaves::Bounds;
use core::ops::Range;
use glam::{Affine3A, Vec3A, Vec4};
use prism_core::gpu::{EMPTY_CHILD, GpuInstance};
use prism_core::{Accel, Error, Ray};

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
pub(crate) fn write_records(
    accel: &Accel,
    spans: &[Span],
    range: Range<usize>,
    records: &mut Vec<Record>,
) -> Result<(), Error> {
    let n = accel.instances().len();
    reserve(records, n.saturating_sub(records.len()), "instance records")?;
    records.resize(n, Record::default());
    for_each_record(accel, spans, range, |i, rec| {
        if let Some(r) = records.get_mut(i) {
            *r = Record(rec);
        }
    });
    Ok(())
}

/// Hand `put` each of `accel`'s instances `range` (clamped to the
/// instances), by index, with its record as the wide walks read it: core's,
/// with the root replaced by the wide root of the instance's geometry.
///
/// The geometry is the instance's as placed ([`Accel::instance`]), not
/// looked up from core's record's root: core gives an instance added or
/// moved in the same update as a geometry's rebuild the root its geometry had
/// before the rebuild.
fn for_each_record(
    accel: &Accel,
    spans: &[Span],
    range: Range<usize>,
    mut put: impl FnMut(usize, GpuInstance),
) {
    let all = accel.instances();
    let end = range.end.min(all.len());
    let start = range.start.min(end);
    for (i, core) in all[start..end].iter().enumerate() {
        let mut rec = *core;
        let index = start + i;
        if core.root() != EMPTY_CHILD {
            match accel
                .instance(index as u32)
                .and_then(|inst| spans.get(inst.geometry as usize))
            {
                Some(span) => rec.info[0] = f32::from_bits(span.root),
                // ok: a record with a root is a live instance's, of a
                // geometry of the scene; should one not be, it is hidden
                // rather than walked from a wrong node.
                None => {
                    rec.info[0] = f32::from_bits(EMPTY_CHILD);
                    rec.info[1] = f32::from_bits(0);
                }
            }
        }
        put(index, rec);
    }
}

/// An instance's record as the 8-wide walks read it: core's world-to-object
/// rows as four columns of 4-lane vectors (one cache line; the `w` lanes
/// zero). An object ray is then six vector products and five sums
/// ([`Columns::object_ray`]), per lane the operations of core's
/// [`object_ray`](prism_core::two_level::object_ray) in the same order, so
/// the same ray bit for bit.
///
/// The root and mask are kept apart ([`write_columns`]), not in the `w`
/// lanes: those lanes are multiplied too, and a root's or mask's bits read
/// as a float make a subnormal number, which the CPU multiplies slowly (the
/// walk was 8% slower so).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
pub(crate) struct Columns([Vec4; 4]);

impl From<&GpuInstance> for Columns {
    #[inline]
    fn from(rec: &GpuInstance) -> Self {
        let [r0, r1, r2] = rec.world_to_object;
        let col = |k: usize| Vec4::new(r0[k], r1[k], r2[k], 0.0);
        Columns([col(0), col(1), col(2), col(3)])
    }
}

impl Columns {
    /// `ray` carried into the instance's object space over `(ray.tmin,
    /// tmax)`: core's `object_ray`, bit for bit (each lane's sums in its
    /// order, every product rounded on its own).
    #[inline(always)]
    pub(crate) fn object_ray(&self, ray: &Ray, tmax: f32) -> Ray {
        let [c0, c1, c2, c3] = self.0;
        let (o, d) = (ray.origin, ray.dir);
        let origin = ((c0 * o.x + c1 * o.y) + c2 * o.z) + c3;
        let dir = (c0 * d.x + c1 * d.y) + c2 * d.z;
        Ray::segment(origin.truncate(), dir.truncate(), ray.tmin, tmax).with_mask(ray.mask)
    }
}

/// [`write_records`] for the 8-wide walks: the instances' [`Columns`] into
/// `columns`, and each one's wide root and mask into `roots` (both grown to
/// `accel.instances().len()`, shrunk likewise).
pub(crate) fn write_columns(
    accel: &Accel,
    spans: &[Span],
    range: Range<usize>,
    columns: &mut Vec<Columns>,
    roots: &mut Vec<[u32; 2]>,
) -> Result<(), Error> {
    let n = accel.instances().len();
    reserve(columns, n.saturating_sub(columns.len()), "instance records")?;
    reserve(roots, n.saturating_sub(roots.len()), "instance records")?;
    columns.resize(n, Columns::default());
    roots.resize(n, [EMPTY_CHILD, 0]);
    for_each_record(accel, spans, range, |i, rec| {
        if let (Some(c), Some(r)) = (columns.get_mut(i), roots.get_mut(i)) {
            *c = Columns::from(&rec);
            *r = [rec.root(), rec.mask()];
        }
    });
    Ok(())
}

/// A geometry's outline for the instances' tree: the boxes of its wide
/// tree's nodes two levels below the root (the root's children's children,
/// or a child itself where it is a leaf), four to a group as
/// structure-of-arrays. An instance's world box made from them
/// ([`Outline::world_box`]) hugs the placed geometry far more closely than
/// the box of its placed bounds, which core's tree over the instances uses
/// (a rotated box's box): on bunny-x1000 a ray enters a quarter as many
/// instances that it then finds empty.
#[derive(Clone, Debug, Default)]
pub(crate) struct Outline {
    /// Box centres, per axis, four boxes a group (the last group filled up
    /// with copies of its first box).
    centre: [Vec<Vec4>; 3],
    /// Half extents, likewise.
    half: [Vec<Vec4>; 3],
    /// The largest magnitude of any box's coordinates, per axis.
    magnitude: Vec3A,
}

/// How much an outline's world box is widened beyond the rounding of its own
/// arithmetic, as a share of its largest extent: a hit that core's walk
/// finds in an instance lies on the object ray, which is the world ray
/// carried by rounded world-to-object rows, so in world space it may lie
/// off the world ray by some ulps of the ray's own coordinates; 1/512 of the
/// instance's extent covers that for rays from hundreds of extents away.
pub(crate) const OUTLINE_SLACK: f32 = 1.0 / 512.0;

impl Outline {
    /// The outline of the boxes `boxes` (`(lo, hi)`, object space).
    pub(crate) fn new(boxes: &[Bounds]) -> Result<Self, Error> {
        let groups = boxes.len().div_ceil(4);
        let mut out = Outline::default();
        for v in out.centre.iter_mut().chain(out.half.iter_mut()) {
            reserve(v, groups, "instance outlines")?;
        }
        let mut magnitude = Vec3A::ZERO;
        for group in boxes.chunks(4) {
            let b = |k: usize| group.get(k).unwrap_or(&group[0]);
            for axis in 0..3 {
                let lane = |k: usize, f: fn(f32, f32) -> f32| f(b(k).lo[axis], b(k).hi[axis]);
                let centre = |lo: f32, hi: f32| (lo + hi) * 0.5;
                let half = |lo: f32, hi: f32| (hi - lo) * 0.5;
                out.centre[axis].push(Vec4::new(
                    lane(0, centre),
                    lane(1, centre),
                    lane(2, centre),
                    lane(3, centre),
                ));
                out.half[axis].push(Vec4::new(
                    lane(0, half),
                    lane(1, half),
                    lane(2, half),
                    lane(3, half),
                ));
            }
            for b in group {
                let (lo, hi) = (Vec3A::from_vec4(b.lo), Vec3A::from_vec4(b.hi));
                magnitude = magnitude.max(lo.abs().max(hi.abs()));
            }
        }
        out.magnitude = magnitude;
        Ok(out)
    }

    /// The world box of the outline placed by `transform` (object to world):
    /// each box's centre and half extent carried through (`|M|` times the
    /// half extent), their union, widened by 64 ulps of the largest
    /// magnitude involved (this arithmetic's rounding, a few ulps, with room
    /// to spare) and by [`OUTLINE_SLACK`] of its extent. `None` for an empty
    /// outline, and for one whose placed box would leave the range of `f32`
    /// (a geometry spanning 1e30 under a scale of 1e15): there `inf - inf`
    /// is NaN, which the unions above it would drop, so such an instance
    /// keeps core's box, unbounded on the sides that overflow.
    pub(crate) fn world_box(&self, transform: &Affine3A) -> Option<Bounds> {
        if self.centre[0].is_empty() {
            return None;
        }
        let m = transform.matrix3.transpose();
        let t = transform.translation;
        let mut lo = [0.0f32; 3];
        let mut hi = [0.0f32; 3];
        let mut scale = [0.0f32; 3];
        for (axis, row) in [m.x_axis, m.y_axis, m.z_axis].into_iter().enumerate() {
            let r = [row.x, row.y, row.z].map(Vec4::splat);
            let a = r.map(Vec4::abs);
            let (mut l, mut h) = (Vec4::INFINITY, Vec4::NEG_INFINITY);
            for g in 0..self.centre[0].len() {
                let c = [&self.centre[0][g], &self.centre[1][g], &self.centre[2][g]];
                let e = [&self.half[0][g], &self.half[1][g], &self.half[2][g]];
                let wc = r[0] * *c[0] + r[1] * *c[1] + r[2] * *c[2];
                let we = a[0] * *e[0] + a[1] * *e[1] + a[2] * *e[2];
                l = l.min(wc - we);
                h = h.max(wc + we);
            }
            lo[axis] = l.min_element() + t[axis];
            hi[axis] = h.max_element() + t[axis];
            scale[axis] = row.abs().dot(self.magnitude) + t[axis].abs();
        }
        // `scale` bounds every term and sum above (each centre and half
        // extent is at most `magnitude`); NaN fails both tests.
        const FAR: f32 = f32::MAX / 16.0;
        if !(self.magnitude.cmplt(Vec3A::splat(FAR)).all() && scale.iter().all(|&s| s < FAR)) {
            return None;
        }
        let (lo, hi) = (Vec3A::from_array(lo), Vec3A::from_array(hi));
        let slack = OUTLINE_SLACK * (hi - lo).max_element();
        let pad = Vec3A::from_array(scale) * (64.0 * f32::EPSILON) + Vec3A::splat(slack);
        Some(Bounds {
            lo: (lo - pad).extend(0.0),
            hi: (hi + pad).extend(0.0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{Columns, OUTLINE_SLACK, Outline};
    use crate::leaves::Bounds;
    use glam::{Affine3A, DVec3, Quat, Vec3, Vec4};
    use prism_core::gpu::GpuInstance;
    use prism_core::rng::Pcg;
    use prism_core::two_level::object_ray;
    use prism_core::{Error, Ray};

    /// Columns carry a ray as core's `object_ray` does, bit for bit.
    #[test]
    fn columns_carry_rays_as_core() {
        let mut r = Pcg { state: 5 };
        let mut s = move || (r.next_f32() * 2.0 - 1.0) * 10f32.powf(3.0 * r.next_f32() - 1.0);
        for _ in 0..20_000 {
            let rec = GpuInstance {
                world_to_object: [
                    [s(), s(), s(), s()],
                    [s(), s(), s(), s()],
                    [s(), s(), s(), s()],
                ],
                info: [f32::from_bits(7), f32::from_bits(0x81), 0.0, 1.0],
            };
            let ray = Ray::segment(
                Vec3::new(s(), s(), s()),
                Vec3::new(s(), s(), s()),
                0.25,
                9.0,
            )
            .with_mask(0x15);
            let tmax = s().abs();
            let want = object_ray(&rec, &ray, tmax);
            let got = Columns::from(&rec).object_ray(&ray, tmax);
            let bits = |r: &Ray| {
                (
                    r.origin.to_array().map(f32::to_bits),
                    r.dir.to_array().map(f32::to_bits),
                    r.tmin.to_bits(),
                    r.tmax.to_bits(),
                    r.mask,
                )
            };
            assert_eq!(bits(&want), bits(&got));
        }
    }

    /// An outline placed past the range of `f32` has no world box (its
    /// instance keeps core's), never a NaN one.
    #[test]
    fn an_outline_placed_past_f32_has_no_box() -> Result<(), Error> {
        let boxes = [
            Bounds {
                lo: Vec4::new(-1.0, -9.25, -4.0, 0.0),
                hi: Vec4::new(1e30, 1.0, 1.0, 0.0),
            },
            Bounds {
                lo: Vec4::new(-1.0, -1.0, -1.0, 0.0),
                hi: Vec4::new(1.0, 1.0, 1.0, 0.0),
            },
        ];
        let outline = Outline::new(&boxes)?;
        let rot = Quat::from_rotation_y(0.3);
        let at = Vec3::new(-2e16, 0.0, 0.0);
        let far = Affine3A::from_scale_rotation_translation(Vec3::splat(1e15), rot, at);
        assert!(outline.world_box(&far).is_none());
        let near = Affine3A::from_scale_rotation_translation(Vec3::splat(1e-3), rot, at);
        let b = outline.world_box(&near);
        assert!(
            b.is_some_and(|b| b.lo.is_finite() && b.hi.is_finite()),
            "{b:?}"
        );
        let nan = Affine3A::from_translation(Vec3::NAN);
        assert!(outline.world_box(&nan).is_none());
        Ok(())
    }

    /// An outline's world box holds every corner of its boxes placed (in
    /// `f64`), and is their box but for its padding.
    #[test]
    fn an_outline_placed_holds_its_boxes() -> Result<(), Error> {
        let mut r = Pcg { state: 21 };
        let mut s = move || r.next_f32() * 2.0 - 1.0;
        for case in 0..300 {
            let far = if case % 3 == 0 { 1e4 } else { 10.0 };
            let centre = Vec3::new(s(), s(), s()) * far;
            let boxes: Vec<Bounds> = (0..1 + case % 70)
                .map(|_| {
                    let c = centre + Vec3::new(s(), s(), s()) * 3.0;
                    let e = Vec3::new(s().abs(), s().abs(), s().abs())
                        * if case % 5 == 0 { 0.0 } else { 1.0 };
                    Bounds {
                        lo: (c - e).extend(0.0),
                        hi: (c + e).extend(0.0),
                    }
                })
                .collect();
            let axis = Vec3::new(s(), s(), s()).try_normalize().unwrap_or(Vec3::Y);
            let scale = Vec3::new(
                0.1 + s().abs() * 5.0,
                0.1 + s().abs() * 5.0,
                0.1 + s().abs(),
            );
            let t = Affine3A::from_scale_rotation_translation(
                scale,
                Quat::from_axis_angle(axis, s() * 3.2),
                Vec3::new(s(), s(), s()) * far,
            );
            let outline = Outline::new(&boxes)?;
            let Some(got) = outline.world_box(&t) else {
                panic!("case {case}: an outline placed within f32 has a box");
            };
            let m = glam::DMat3::from_cols(
                t.matrix3.x_axis.as_dvec3(),
                t.matrix3.y_axis.as_dvec3(),
                t.matrix3.z_axis.as_dvec3(),
            );
            let (mut lo, mut hi) = (DVec3::INFINITY, DVec3::NEG_INFINITY);
            for b in &boxes {
                for corner in 0..8 {
                    let pick =
                        |k: usize, v: Vec4| if corner >> k & 1 == 0 { b.lo[k] } else { v[k] };
                    let p = DVec3::new(
                        pick(0, b.hi) as f64,
                        pick(1, b.hi) as f64,
                        pick(2, b.hi) as f64,
                    );
                    let w = m * p + t.translation.as_dvec3();
                    lo = lo.min(w);
                    hi = hi.max(w);
                }
            }
            let (glo, ghi) = (got.lo.truncate().as_dvec3(), got.hi.truncate().as_dvec3());
            assert!(
                glo.cmple(lo).all() && ghi.cmpge(hi).all(),
                "case {case}: {got:?} misses {lo} {hi}"
            );
            // Padded by the slack and some ulps, no more.
            let room = (hi - lo).max_element() * 2.0 * OUTLINE_SLACK as f64
                + hi.abs().max(lo.abs()).max_element() * 1e-4
                + 1e-30;
            assert!(
                (lo - glo).max_element() <= room && (ghi - hi).max_element() <= room,
                "case {case}: {got:?} against {lo} {hi}"
            );
        }
        Ok(())
    }
}
