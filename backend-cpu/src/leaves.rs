//! The leaves both wide BVHs share ([`crate::wide`] and `bvh8`): triangles
//! stored four to a packet and tested four at a time, leaves holding spheres
//! or heightfields tested one by one from core's primitive array, and the ray
//! constants they take.
//!
//! The tests are core's ([`prism_core::intersect::ray_triangle_axes`],
//! [`prism_core::intersect::ray_sphere`], and for a heightfield core's walk,
//! [`prism_core::heightfield::ray_heightfield`]), the same operations in the
//! same order per lane, so a hit's `t`, `u` and `v` (a heightfield's cell and
//! face) are core's bit for bit.

use crate::collapse::reserve;
use glam::{Mat4, Vec3, Vec3A, Vec4};
use prism_core::gpu::{
    BvhNode, EMPTY_CHILD, KIND_HEIGHTFIELD, KIND_SPHERE, KIND_TRIANGLE, Primitive,
};
use prism_core::heightfield::Heightfields;
use prism_core::intersect::{MIN_DIR_COMPONENT, RayPre, ray_sphere, ray_triangle_axes};
use prism_core::traverse::primitive_hit;
use prism_core::{Error, Hit, Ray};

/// `count` flag of a leaf stored as [`TriPacket`]s (all its primitives are triangles).
pub(crate) const PACKET_LEAF: u32 = 1 << 31;

/// Four triangles as structure-of-arrays, tested together: `v0[axis]` holds that
/// coordinate of each lane's first vertex. Unused lanes have NaN vertices, which
/// fail every comparison of the watertight test and are never hit. 160 bytes,
/// aligned to 32 so that a packet spans three cache lines, never four.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(32))]
pub(crate) struct TriPacket {
    v0: [Vec4; 3],
    v1: [Vec4; 3],
    v2: [Vec4; 3],
    /// Primitive slot of each lane.
    pub(crate) slot: [u32; 4],
}

impl TriPacket {
    /// The vertex rows: `[v0, v1, v2]`, each `[x, y, z]` over the four lanes.
    #[inline(always)]
    pub(crate) fn rows(&self) -> [&[Vec4; 3]; 3] {
        [&self.v0, &self.v1, &self.v2]
    }
}

#[cfg(test)]
impl TriPacket {
    /// Vertex `j` (0, 1, 2) of lane `lane`.
    pub(crate) fn vertex(&self, lane: usize, j: usize) -> [f32; 3] {
        let v = [&self.v0, &self.v1, &self.v2][j];
        [v[0][lane], v[1][lane], v[2][lane]]
    }
}

/// A wide BVH's triangle packets, and the scene id of each packet lane kept apart:
/// a closest hit reads one id per ray, at the end, from this small array (16 bytes
/// a packet, usually in cache) instead of from the primitive array (a cache miss per
/// ray on large meshes), and the packets stay 160 bytes for the tests that stream them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Packets {
    pub(crate) tri: Vec<TriPacket>,
    /// Scene primitive id of each lane, one entry per packet.
    ids: Vec<[u32; 4]>,
    /// The vertex indices of each lane's triangle in its geometry's mesh
    /// ([`NO_TRIANGLE`] for an empty lane), one entry per packet: a copy of
    /// the mesh's triangles in packet order, from which a refit writes the
    /// packets straight from the new vertices ([`Packets::refit_mesh`]).
    /// Made by a geometry's first refit (entries of [`NOT_COPIED`] until
    /// then; empty while nothing was refit): most scenes never move a
    /// vertex, and the copy is a fifth of the leaves' memory.
    tris: Vec<[[u32; 3]; 4]>,
}

/// [`Packets`]' vertex indices of a lane without a mesh triangle.
pub(crate) const NO_TRIANGLE: [u32; 3] = [u32::MAX; 3];

/// [`Packets`]' vertex indices of a packet whose geometry was never refit.
/// Its first lane always holds a triangle, so a copied packet's never reads
/// this.
const NOT_COPIED: [[u32; 3]; 4] = [[u32::MAX - 1; 3]; 4];

/// A box grown from points and other boxes: its lower and upper rows (`x`,
/// `y`, `z`; the `w` lanes unused).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bounds {
    pub(crate) lo: Vec4,
    pub(crate) hi: Vec4,
}

impl Bounds {
    /// The box of nothing (grows into the first box it meets).
    pub(crate) const EMPTY: Bounds = Bounds {
        lo: Vec4::INFINITY,
        hi: Vec4::NEG_INFINITY,
    };

    /// The box around both.
    #[inline(always)]
    pub(crate) fn union(self, other: Bounds) -> Bounds {
        Bounds {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
        }
    }
}

impl Packets {
    /// Room for every packet the leaves of the binary tree `bin` can make,
    /// reserved at once: a leaf's packets are its triangles in fours, and a
    /// leaf made of a small subtree needs no more than that subtree's
    /// leaves would. Growing the arrays as leaves come copied them over and
    /// over (a tenth of an 8-wide build's time).
    pub(crate) fn reserve_for(&mut self, bin: &[BvhNode]) -> Result<(), Error> {
        let bound: usize = bin
            .iter()
            .flat_map(|n| {
                [
                    (n.left_index(), n.left_count()),
                    (n.right_index(), n.right_count()),
                ]
            })
            .filter(|&(index, count)| count > 0 && index != EMPTY_CHILD)
            .map(|(_, count)| count.div_ceil(4) as usize)
            .sum();
        reserve(&mut self.tri, bound, "wide BVH triangle packets")?;
        reserve(&mut self.ids, bound, "wide BVH triangle packets")
    }

    /// The packets of the leaf whose first packet is `first` and which holds
    /// `count` primitives (empty if the range is not in the array).
    #[inline(always)]
    pub(crate) fn leaf(&self, first: u32, count: u32) -> &[TriPacket] {
        let first = first as usize;
        self.tri
            .get(first..first + count.div_ceil(4) as usize)
            .unwrap_or_default()
    }

    /// Number of packets.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.tri.len()
    }

    /// Bytes of the packets, their lanes' ids and their lanes' vertex
    /// indices (kept for refits).
    pub(crate) fn bytes(&self) -> u64 {
        use core::mem::size_of_val;
        (size_of_val(self.tri.as_slice())
            + size_of_val(self.ids.as_slice())
            + size_of_val(self.tris.as_slice())) as u64
    }

    /// Write packets `range` again from a mesh's vertices `positions` (the
    /// lanes' triangles are [`Packets`]' copy of the mesh's), one after the
    /// other, and each one's box into `boxes` (by its place in `range`).
    /// Each lane is the record core's refit writes for its slot: the
    /// triangle's vertices, all three the first one where the triangle has
    /// no area (core's `triangle_record`, the same operations per lane); a
    /// lane without a triangle (or one whose index lies past `positions`)
    /// stays NaN and adds nothing to the box. A box is the union of its
    /// lanes' (core's box of these slots, up to the sign of a zero bound,
    /// which no slab test tells apart).
    pub(crate) fn refit_mesh(
        &mut self,
        range: core::ops::Range<usize>,
        triangles: &[[u32; 3]],
        positions: &[Vec3],
        boxes: &mut [Bounds],
    ) -> Result<(), Error> {
        self.copy_triangles(range.clone(), triangles)?;
        let (Some(tri), Some(tris)) = (self.tri.get_mut(range.clone()), self.tris.get(range))
        else {
            return Ok(());
        };
        let vertex = |i: u32| {
            positions
                .get(i as usize)
                .map_or(Vec4::NAN, |v| v.extend(0.0))
        };
        for ((p, lanes), out) in tri.iter_mut().zip(tris).zip(boxes) {
            // Vertex `j` of the four lanes, as x, y and z rows.
            let rows = |j: usize| {
                let m = Mat4::from_cols(
                    vertex(lanes[0][j]),
                    vertex(lanes[1][j]),
                    vertex(lanes[2][j]),
                    vertex(lanes[3][j]),
                )
                .transpose();
                [m.x_axis, m.y_axis, m.z_axis]
            };
            let (a, b, c) = (rows(0), rows(1), rows(2));
            // glam's `Vec3::cross` of `b - a` and `c - a`, per lane.
            let e1 = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
            let e2 = [c[0] - a[0], c[1] - a[1], c[2] - a[2]];
            let n = [
                e1[1] * e2[2] - e2[1] * e1[2],
                e1[2] * e2[0] - e2[2] * e1[0],
                e1[0] * e2[1] - e2[0] * e1[1],
            ];
            let flat = n[0].cmpeq(Vec4::ZERO) & n[1].cmpeq(Vec4::ZERO) & n[2].cmpeq(Vec4::ZERO);
            let b = [0, 1, 2].map(|k| Vec4::select(flat, a[k], b[k]));
            let c = [0, 1, 2].map(|k| Vec4::select(flat, a[k], c[k]));
            // Lanes with a triangle (the others are NaN).
            let live = a[0].cmpeq(a[0]);
            let lo =
                [0, 1, 2].map(|k| Vec4::select(live, a[k].min(b[k]).min(c[k]), Vec4::INFINITY));
            let hi =
                [0, 1, 2].map(|k| Vec4::select(live, a[k].max(b[k]).max(c[k]), Vec4::NEG_INFINITY));
            p.v0 = a;
            p.v1 = b;
            p.v2 = c;
            // The four lanes' boxes as rows (x, y, z, x), folded.
            let lo = Mat4::from_cols(lo[0], lo[1], lo[2], lo[0]).transpose();
            let hi = Mat4::from_cols(hi[0], hi[1], hi[2], hi[0]).transpose();
            *out = Bounds {
                lo: lo.x_axis.min(lo.y_axis).min(lo.z_axis.min(lo.w_axis)),
                hi: hi.x_axis.max(hi.y_axis).max(hi.z_axis.max(hi.w_axis)),
            };
        }
        Ok(())
    }

    /// Copy the vertex indices of packets `range` (one geometry's) from its
    /// mesh `triangles`, by each lane's id, unless an earlier refit did: a
    /// lane whose id is past `triangles` (or empty) gets [`NO_TRIANGLE`].
    fn copy_triangles(
        &mut self,
        range: core::ops::Range<usize>,
        triangles: &[[u32; 3]],
    ) -> Result<(), Error> {
        if self.tris.len() < self.tri.len() {
            let more = self.tri.len() - self.tris.len();
            reserve(&mut self.tris, more, "wide BVH refit: packets' triangles")?;
            self.tris.resize(self.tri.len(), NOT_COPIED);
        }
        let (Some(tris), Some(ids)) = (self.tris.get_mut(range.clone()), self.ids.get(range))
        else {
            return Ok(());
        };
        if tris.first().is_none_or(|t| *t != NOT_COPIED) {
            return Ok(());
        }
        for (lanes, ids) in tris.iter_mut().zip(ids) {
            *lanes = ids.map(|id| triangles.get(id as usize).copied().unwrap_or(NO_TRIANGLE));
        }
        Ok(())
    }

    /// The scene id of closest hit `hit` (prim = its leaf slot): from packet lane
    /// `lane_at` (a packet index times 4 plus the lane, see [`NOT_IN_PACKET`]), else
    /// from the primitive array ([`Hit::MISS`]'s `prim` if neither holds it).
    #[inline(always)]
    pub(crate) fn id_of(&self, hit: &Hit, lane_at: usize, prims: &[Primitive]) -> u32 {
        if lane_at == NOT_IN_PACKET {
            return prims
                .get(hit.prim as usize)
                .map_or(Hit::MISS.prim, Primitive::id);
        }
        self.ids
            .get(lane_at / 4)
            .map_or(Hit::MISS.prim, |ids| ids[lane_at % 4])
    }
}

/// A closest-hit walk's record of where its best hit came from: packet index
/// times 4 plus the lane, or this when it came from a leaf of the primitive array
/// (or there is none). A packet takes 160 bytes of memory, so its index times 4
/// stays far below `usize::MAX`.
pub(crate) const NOT_IN_PACKET: usize = usize::MAX;

/// The packet lane record (see [`NOT_IN_PACKET`]) of lane `lane` of packet `packet`.
#[inline(always)]
pub(crate) fn packet_lane(packet: u32, lane: usize) -> usize {
    packet as usize * 4 + (lane & 3)
}

/// Whether slots `[first, first + count)` exist and hold triangles only.
pub(crate) fn all_triangles(prims: &[Primitive], first: u32, count: u32) -> bool {
    let range = first as usize..first as usize + count as usize;
    prims
        .get(range)
        .is_some_and(|r| r.iter().all(|p| p.kind() == KIND_TRIANGLE))
}

/// A leaf's `(child, count)`: packets when every primitive is a triangle, else
/// the primitive range itself (spheres and heightfields are tested one by one).
pub(crate) fn leaf(
    prims: &[Primitive],
    first: u32,
    count: u32,
    packets: &mut Packets,
) -> Result<(u32, u32), Error> {
    let range = first as usize..first as usize + count as usize;
    let Some(tris) = prims.get(range.clone()) else {
        return Ok((first, count));
    };
    if tris.iter().any(|p| p.kind() != KIND_TRIANGLE) || count >= PACKET_LEAF {
        return Ok((first, count));
    }
    let start = packets.tri.len() as u32;
    let more = tris.len().div_ceil(4);
    reserve(&mut packets.tri, more, "wide BVH triangle packets")?;
    reserve(&mut packets.ids, more, "wide BVH triangle packets")?;
    for (chunk, chunk_first) in tris.chunks(4).zip(range.step_by(4)) {
        let mut p = TriPacket {
            v0: [Vec4::NAN; 3],
            v1: [Vec4::NAN; 3],
            v2: [Vec4::NAN; 3],
            slot: [u32::MAX; 4],
        };
        let mut id = [u32::MAX; 4];
        for (lane, t) in chunk.iter().enumerate() {
            for axis in 0..3 {
                p.v0[axis][lane] = t.a[axis];
                p.v1[axis][lane] = t.b[axis];
                p.v2[axis][lane] = t.c[axis];
            }
            p.slot[lane] = (chunk_first + lane) as u32;
            id[lane] = t.id();
        }
        packets.tri.push(p);
        packets.ids.push(id);
    }
    Ok((start, count | PACKET_LEAF))
}

/// The ray's constants splatted across the four lanes.
pub(crate) struct Lanes {
    pub(crate) o: [Vec4; 3],
    pub(crate) sx: Vec4,
    pub(crate) sy: Vec4,
    pub(crate) sz: Vec4,
    pub(crate) ox: Vec4,
    pub(crate) oy: Vec4,
    pub(crate) oz: Vec4,
    pub(crate) ix: Vec4,
    pub(crate) iy: Vec4,
    pub(crate) iz: Vec4,
}

impl Lanes {
    #[inline(always)]
    pub(crate) fn new(pre: &RayPre) -> Self {
        Lanes {
            o: [
                Vec4::splat(pre.origin.x),
                Vec4::splat(pre.origin.y),
                Vec4::splat(pre.origin.z),
            ],
            sx: Vec4::splat(pre.shear.x),
            sy: Vec4::splat(pre.shear.y),
            sz: Vec4::splat(pre.shear.z),
            ox: Vec4::splat(pre.origin.x),
            oy: Vec4::splat(pre.origin.y),
            oz: Vec4::splat(pre.origin.z),
            ix: Vec4::splat(pre.inv_dir.x),
            iy: Vec4::splat(pre.inv_dir.y),
            iz: Vec4::splat(pre.inv_dir.z),
        }
    }
}

/// [`prism_core::intersect::ray_triangle_axes`] on the four lanes of a packet:
/// the same operations in the same order per lane. Returns `(lane, t, u, v)` of
/// the nearest hit in `(tmin, tmax)`, the lowest lane on equal `t` (the order a
/// one-by-one loop keeps).
#[inline(always)]
pub(crate) fn packet_hit<const KX: usize, const KY: usize, const KZ: usize>(
    l: &Lanes,
    p: &TriPacket,
    tmin: f32,
    tmax: f32,
) -> Option<(usize, f32, f32, f32)> {
    let a = [p.v0[0] - l.o[0], p.v0[1] - l.o[1], p.v0[2] - l.o[2]];
    let b = [p.v1[0] - l.o[0], p.v1[1] - l.o[1], p.v1[2] - l.o[2]];
    let c = [p.v2[0] - l.o[0], p.v2[1] - l.o[1], p.v2[2] - l.o[2]];
    packet_test(
        l,
        [a[KX], a[KY], a[KZ]],
        [b[KX], b[KY], b[KZ]],
        [c[KX], c[KY], c[KZ]],
        tmin,
        tmax,
    )
}

/// The watertight test of a packet's four lanes from its vertices relative to
/// the ray's origin, on the ray's axes `(kx, ky, kz)`.
#[inline(always)]
fn packet_test(
    l: &Lanes,
    a: [Vec4; 3],
    b: [Vec4; 3],
    c: [Vec4; 3],
    tmin: f32,
    tmax: f32,
) -> Option<(usize, f32, f32, f32)> {
    let ax = a[0] - l.sx * a[2];
    let ay = a[1] - l.sy * a[2];
    let bx = b[0] - l.sx * b[2];
    let by = b[1] - l.sy * b[2];
    let cx = c[0] - l.sx * c[2];
    let cy = c[1] - l.sy * c[2];
    let u = cx * by - cy * bx;
    let v = ax * cy - ay * cx;
    let w = bx * ay - by * ax;
    let zero = Vec4::ZERO;
    let outside = (u.cmplt(zero) | v.cmplt(zero) | w.cmplt(zero))
        & (u.cmpgt(zero) | v.cmpgt(zero) | w.cmpgt(zero));
    let det = u + v + w;
    let az = l.sz * a[2];
    let bz = l.sz * b[2];
    let cz = l.sz * c[2];
    let t_scaled = u * az + v * bz + w * cz;
    let rcp_det = Vec4::ONE / det;
    let t = t_scaled * rcp_det;
    let hit = !outside & det.cmpne(zero) & t.cmpgt(Vec4::splat(tmin)) & t.cmplt(Vec4::splat(tmax));
    let mask = hit.bitmask();
    if mask == 0 {
        return None;
    }
    let ts = t.to_array();
    let mut best = mask.trailing_zeros() as usize;
    for lane in best + 1..4 {
        if mask & (1 << lane) != 0 && ts[lane] < ts[best] {
            best = lane;
        }
    }
    Some((best, ts[best], (v * rcp_det)[best], (w * rcp_det)[best]))
}

#[inline(always)]
fn row(r: [f32; 4]) -> Vec3A {
    Vec3A::from_vec4(Vec4::from_array(r))
}

/// A sphere's or triangle's hit (a heightfield's: [`prim_any`], [`leaf_closest`]).
#[inline(always)]
pub(crate) fn prim_hit<const KX: usize, const KY: usize, const KZ: usize>(
    pre: &RayPre,
    p: &Primitive,
    tmin: f32,
    tmax: f32,
) -> Option<(f32, f32, f32)> {
    if p.kind() == KIND_SPHERE {
        ray_sphere(
            pre.origin,
            pre.dir,
            glam::Vec3::new(p.a[0], p.a[1], p.a[2]),
            p.b[0],
            tmin,
            tmax,
        )
        .map(|t| (t, 0.0, 0.0))
    } else {
        ray_triangle_axes::<KX, KY, KZ>(pre, row(p.a), row(p.b), row(p.c), tmin, tmax)
    }
}

/// Run `$f::<KX, KY, KZ>` for the ray's axis permutation ([`RayPre::perm`]).
macro_rules! dispatch_axes {
    ($pre:expr, $f:ident, $($arg:expr),*) => {
        match $pre.perm {
            0 => $f::<1, 2, 0>($($arg),*),
            1 => $f::<2, 1, 0>($($arg),*),
            2 => $f::<2, 0, 1>($($arg),*),
            3 => $f::<0, 2, 1>($($arg),*),
            4 => $f::<0, 1, 2>($($arg),*),
            _ => $f::<1, 0, 2>($($arg),*),
        }
    };
}
pub(crate) use dispatch_axes;

/// Whether primitive `p` (of any kind; a heightfield's walk reads `hf`) lies
/// on the ray within `(tmin, tmax)`.
#[inline(always)]
pub(crate) fn prim_any<const KX: usize, const KY: usize, const KZ: usize>(
    pre: &RayPre,
    p: &Primitive,
    hf: Heightfields<'_>,
    tmin: f32,
    tmax: f32,
) -> bool {
    if p.kind() == KIND_HEIGHTFIELD {
        hf.hit(pre, p, tmin, tmax).is_some()
    } else {
        prim_hit::<KX, KY, KZ>(pre, p, tmin, tmax).is_some()
    }
}

#[inline(always)]
pub(crate) fn leaf_closest<const KX: usize, const KY: usize, const KZ: usize>(
    pre: &RayPre,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    first: u32,
    count: u32,
    tmin: f32,
    best: &mut Hit,
) {
    let first = first as usize;
    let Some(leaf) = prims.get(first..first + count as usize) else {
        return;
    };
    for (k, p) in leaf.iter().enumerate() {
        let slot = (first + k) as u32;
        if p.kind() == KIND_HEIGHTFIELD {
            if let Some(h) = hf.hit(pre, p, tmin, best.t) {
                *best = Hit::heightfield(h.t, slot, 0, h.cell, h.face);
            }
        } else if let Some((t, u, v)) = prim_hit::<KX, KY, KZ>(pre, p, tmin, best.t) {
            *best = Hit::new(t, u, v, slot, 0);
        }
    }
}

/// [`leaf_closest`] for walks that take rays of any axis order: core's own
/// [`primitive_hit`] on each primitive.
#[inline(always)]
pub(crate) fn leaf_closest_axes(
    pre: &RayPre,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    first: u32,
    count: u32,
    tmin: f32,
    best: &mut Hit,
) {
    let first = first as usize;
    let Some(leaf) = prims.get(first..first + count as usize) else {
        return;
    };
    for (k, p) in leaf.iter().enumerate() {
        if let Some(h) = primitive_hit(pre, p, hf, (first + k) as u32, tmin, best.t) {
            *best = h;
        }
    }
}

/// The watertight test's axes `(kx, ky)` for each [`RayPre::perm`] code
/// (`2 * kz + swapped`).
pub(crate) const PERM_AXES: [(usize, usize); 6] = [(1, 2), (2, 1), (2, 0), (0, 2), (0, 1), (1, 0)];

/// [`RayPre::inv_dir`] of `ray`: `1 / dir`, with components clamped away from
/// zero as core clamps them (the first half of [`ray_pre_with`]).
#[inline(always)]
pub(crate) fn inv_dir(ray: &Ray) -> Vec3A {
    let da = Vec3A::from(ray.dir);
    let min = Vec3A::splat(MIN_DIR_COMPONENT);
    let safe = Vec3A::select(da.abs().cmplt(min), min.copysign(da), da);
    Vec3A::ONE / safe
}

/// [`RayPre::new`] of `ray` whose [`inv_dir`] is `inv_dir` (worked out
/// already, for the root's test), without core's branches on the direction:
/// the same values (the divisions and selections are the same per
/// component), for the walks that work one out per instance they enter, where
/// those branches on a random direction are mispredicted half the time.
#[inline(always)]
pub(crate) fn ray_pre_with(ray: &Ray, inv_dir: Vec3A) -> RayPre {
    let d = ray.dir;
    let ad = d.abs();
    let (xy, xz, yz) = (ad.x > ad.y, ad.x > ad.z, ad.y > ad.z);
    // 0 where x is largest (beats y and z), 1 where y beats x and z, else 2.
    let kz = 2 - 2 * usize::from(xy & xz) - usize::from(!xy & yz);
    let dk = d.to_array();
    let dz = dk[kz.min(2)];
    let swapped = dz < 0.0;
    let perm = 2 * kz + usize::from(swapped);
    let (kx, ky) = PERM_AXES[perm.min(5)];
    let shear = Vec3A::new(dk[kx], dk[ky], 1.0) / Vec3A::splat(dz);
    RayPre {
        origin: ray.origin,
        dir: d,
        inv_dir: inv_dir.into(),
        kz,
        kx,
        ky,
        shear: shear.into(),
        perm: perm as u8,
        origin_a: ray.origin.into(),
        inv_dir_a: inv_dir,
    }
}

#[cfg(test)]
mod tests {
    use super::{inv_dir, ray_pre_with};
    use glam::Vec3;
    use prism_core::Ray;
    use prism_core::intersect::RayPre;
    use prism_core::rng::Pcg;

    fn ray_pre(ray: &Ray) -> RayPre {
        ray_pre_with(ray, inv_dir(ray))
    }

    /// Every field of `ray_pre_with` is `RayPre::new`'s, bit for bit: random
    /// directions, ties between the largest components, zero and negative
    /// zero components, components below `MIN_DIR_COMPONENT`.
    #[test]
    fn ray_pre_is_cores() {
        let mut rng = Pcg { state: 9 };
        let mut r = move || rng.next_f32() * 2.0 - 1.0;
        let specials = [0.0, -0.0, 1e-31, -1e-31, 1e-30, 0.5, -0.5, 1.0, -1.0, 3.0];
        let mut dirs = Vec::new();
        for &x in &specials {
            for &y in &specials {
                for &z in &specials {
                    dirs.push(Vec3::new(x, y, z));
                }
            }
        }
        dirs.extend((0..20_000).map(|_| Vec3::new(r(), r(), r()) * 10f32.powf(4.0 * r())));
        let bits = |v: Vec3| v.to_array().map(f32::to_bits);
        let mut checked = 0;
        for d in dirs {
            let ray = Ray::new(Vec3::new(r(), r(), r()), d);
            if !ray.is_valid() {
                continue;
            }
            let (a, b) = (RayPre::new(&ray), ray_pre(&ray));
            let what = format!("{d:?}");
            assert_eq!(
                (a.kx, a.ky, a.kz, a.perm),
                (b.kx, b.ky, b.kz, b.perm),
                "{what}"
            );
            assert_eq!(bits(a.inv_dir), bits(b.inv_dir), "{what}");
            assert_eq!(bits(a.shear), bits(b.shear), "{what}");
            assert_eq!(bits(a.origin), bits(b.origin), "{what}");
            assert_eq!(bits(a.dir), bits(b.dir), "{what}");
            assert_eq!(bits(a.origin_a.into()), bits(b.origin_a.into()), "{what}");
            assert_eq!(bits(a.inv_dir_a.into()), bits(b.inv_dir_a.into()), "{what}");
            checked += 1;
        }
        assert!(checked > 20_000);
    }
}
