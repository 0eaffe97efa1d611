//! A 4-wide BVH for the CPU: core's binary BVH collapsed so that one node holds
//! up to four children, their boxes stored as structure-of-arrays and tested
//! four at a time in 128-bit SIMD registers (glam's `Vec4`: SSE on x86-64, NEON
//! on AArch64, scalar elsewhere).
//!
//! Same leaves, same primitive records and the same primitive tests as
//! [`prism_core::traverse`] — only the order and number of box tests change — so
//! the answers are core's: identical `t` and primitive except where two
//! primitives tie at exactly the same `t`.

use glam::{Vec3A, Vec4};
use prism_core::gpu::{BvhNode, EMPTY_CHILD, KIND_SPHERE, Primitive};
use prism_core::intersect::{
    RayPre, SLAB_EXIT_SCALE, SLAB_EXIT_SCALE_NEGATIVE, ray_sphere, ray_triangle_axes,
};
use prism_core::{Accel, Error, Hit, Ray};

/// Entries of the traversal stack. A popped wide node pushes at most four inner
/// children, a net growth of three entries, and a node whose children are all
/// leaves pushes none; so a walk through a tree of `d` wide levels holds at most
/// `3 * (d - 1) + 1` entries. Collapsing never deepens a tree, and core's BVH is
/// shallower than 64 levels, so 3 * 64 entries always suffice (the pushes are
/// bounds-checked besides).
const STACK: usize = 192;

/// `count` flag of a leaf stored as [`TriPacket`]s (all its primitives are triangles).
pub(crate) const PACKET_LEAF: u32 = 1 << 31;

/// Four triangles as structure-of-arrays, tested together: `v0[axis]` holds that
/// coordinate of each lane's first vertex. Unused lanes have NaN vertices, which
/// fail every comparison of the watertight test and are never hit.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(16))]
pub struct TriPacket {
    v0: [Vec4; 3],
    v1: [Vec4; 3],
    v2: [Vec4; 3],
    /// Primitive slot of each lane.
    pub(crate) slot: [u32; 4],
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
}

impl Packets {
    /// The packets of the leaf whose first packet is `first` and which holds
    /// `count` primitives (empty if the range is not in the array).
    #[inline(always)]
    pub(crate) fn leaf(&self, first: u32, count: u32) -> &[TriPacket] {
        let first = first as usize;
        self.tri
            .get(first..first + count.div_ceil(4) as usize)
            .unwrap_or_default()
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

/// Four children: boxes as structure-of-arrays (one register per bound), then
/// references. 128 bytes, two cache lines, aligned so a node never straddles three.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct WideNode {
    min_x: Vec4,
    min_y: Vec4,
    min_z: Vec4,
    max_x: Vec4,
    max_y: Vec4,
    max_z: Vec4,
    /// Inner child: wide node index. Leaf: first primitive slot.
    child: [u32; 4],
    /// 0 for an inner child (or an empty slot), else the leaf's primitive count.
    count: [u32; 4],
}

impl WideNode {
    /// A node whose four slots are empty: boxes at +inf are never entered.
    const EMPTY: WideNode = WideNode {
        min_x: Vec4::INFINITY,
        min_y: Vec4::INFINITY,
        min_z: Vec4::INFINITY,
        max_x: Vec4::INFINITY,
        max_y: Vec4::INFINITY,
        max_z: Vec4::INFINITY,
        child: [EMPTY_CHILD; 4],
        count: [0; 4],
    };
}

/// One child of a binary node, as the collapse sees it.
#[derive(Clone, Copy)]
pub(crate) struct Child {
    pub(crate) lo: [f32; 4],
    pub(crate) hi: [f32; 4],
}

impl Child {
    pub(crate) fn index(&self) -> u32 {
        self.lo[3].to_bits()
    }
    pub(crate) fn count(&self) -> u32 {
        self.hi[3].to_bits()
    }
    pub(crate) fn is_inner(&self) -> bool {
        self.count() == 0 && self.index() != EMPTY_CHILD
    }
    pub(crate) fn half_area(&self) -> f32 {
        let e = [
            self.hi[0] - self.lo[0],
            self.hi[1] - self.lo[1],
            self.hi[2] - self.lo[2],
        ];
        e[0] * e[1] + e[1] * e[2] + e[2] * e[0]
    }
}

pub(crate) fn children(n: &BvhNode) -> [Child; 2] {
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
}

/// The 4-wide BVH of one [`Accel`].
#[derive(Clone, Debug, Default)]
pub struct WideBvh {
    nodes: Vec<WideNode>,
    packets: Packets,
}

impl WideBvh {
    /// Collapse `accel`'s binary BVH: each wide node takes its binary node's two
    /// children and repeatedly opens the inner child of largest surface area
    /// until it holds four (the usual greedy SAH-guided collapse).
    ///
    /// Its arrays grow fallibly: where the host has not the memory, the error
    /// is [`Error::HostOutOfMemory`] and nothing is kept.
    pub fn build(accel: &Accel) -> Result<Self, Error> {
        let bin = accel.nodes();
        let mut out = WideBvh {
            nodes: Vec::new(),
            packets: Packets::default(),
        };
        reserve(&mut out.nodes, bin.len() / 2 + 1, "4-wide BVH nodes")?;
        if let Some(root) = bin.first() {
            collapse(bin, accel.primitives(), root, &mut out)?;
        }
        Ok(out)
    }

    /// Number of wide nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are no nodes (never, for a built scene).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// Room for `more` items in `v` (amortised growth, as `push` would take), or
/// [`Error::HostOutOfMemory`] naming `what` where the host cannot give it.
pub(crate) fn reserve<T>(v: &mut Vec<T>, more: usize, what: &'static str) -> Result<(), Error> {
    v.try_reserve(more).map_err(|_| Error::HostOutOfMemory {
        what,
        bytes: (v.len().saturating_add(more) as u64).saturating_mul(size_of::<T>() as u64),
    })
}

/// Append the wide node for binary node `node` (and its subtree); returns its index.
fn collapse(
    bin: &[BvhNode],
    prims: &[Primitive],
    node: &BvhNode,
    out: &mut WideBvh,
) -> Result<u32, Error> {
    let mut kids: Vec<Child> = children(node)
        .into_iter()
        .filter(|c| c.index() != EMPTY_CHILD)
        .collect();
    while kids.len() < 4 {
        let open = kids
            .iter()
            .enumerate()
            .filter(|(_, c)| c.is_inner())
            .max_by(|a, b| a.1.half_area().total_cmp(&b.1.half_area()))
            .map(|(i, _)| i);
        let Some(i) = open else { break };
        let Some(inner) = bin.get(kids[i].index() as usize) else {
            break;
        };
        kids.swap_remove(i);
        kids.extend(
            children(inner)
                .into_iter()
                .filter(|c| c.index() != EMPTY_CHILD),
        );
    }
    let me = out.nodes.len();
    reserve(&mut out.nodes, 1, "4-wide BVH nodes")?;
    out.nodes.push(WideNode::EMPTY);
    let mut w = WideNode::EMPTY;
    let (mut mnx, mut mny, mut mnz) = ([f32::INFINITY; 4], [f32::INFINITY; 4], [f32::INFINITY; 4]);
    let (mut mxx, mut mxy, mut mxz) = ([f32::INFINITY; 4], [f32::INFINITY; 4], [f32::INFINITY; 4]);
    for (k, c) in kids.iter().enumerate().take(4) {
        (mnx[k], mny[k], mnz[k]) = (c.lo[0], c.lo[1], c.lo[2]);
        (mxx[k], mxy[k], mxz[k]) = (c.hi[0], c.hi[1], c.hi[2]);
        if c.is_inner() {
            // ok: is_inner() checked the index is a node of `bin` only by value;
            // a missing node leaves the slot empty instead of panicking.
            w.child[k] = match bin.get(c.index() as usize) {
                Some(n) => collapse(bin, prims, n, out)?,
                None => EMPTY_CHILD,
            };
            w.count[k] = 0;
        } else {
            (w.child[k], w.count[k]) = leaf(prims, c.index(), c.count(), &mut out.packets)?;
        }
    }
    w.min_x = Vec4::from_array(mnx);
    w.min_y = Vec4::from_array(mny);
    w.min_z = Vec4::from_array(mnz);
    w.max_x = Vec4::from_array(mxx);
    w.max_y = Vec4::from_array(mxy);
    w.max_z = Vec4::from_array(mxz);
    out.nodes[me] = w;
    Ok(me as u32)
}

/// Whether slots `[first, first + count)` exist and hold triangles only.
pub(crate) fn all_triangles(prims: &[Primitive], first: u32, count: u32) -> bool {
    let range = first as usize..first as usize + count as usize;
    prims
        .get(range)
        .is_some_and(|r| r.iter().all(|p| p.kind() != KIND_SPHERE))
}

/// A leaf's `(child, count)`: packets when every primitive is a triangle, else
/// the primitive range itself (spheres are tested one by one).
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
    if tris.iter().any(|p| p.kind() == KIND_SPHERE) || count >= PACKET_LEAF {
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
    o: [Vec4; 3],
    sx: Vec4,
    sy: Vec4,
    sz: Vec4,
    ox: Vec4,
    oy: Vec4,
    oz: Vec4,
    ix: Vec4,
    iy: Vec4,
    iz: Vec4,
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

    /// Core's slab test ([`prism_core::intersect::ray_aabb`]) on four boxes:
    /// entry distances, `+inf` where a box is missed.
    #[inline(always)]
    fn boxes(&self, n: &WideNode, tmin: f32, tmax: f32) -> Vec4 {
        let tx0 = (n.min_x - self.ox) * self.ix;
        let tx1 = (n.max_x - self.ox) * self.ix;
        let ty0 = (n.min_y - self.oy) * self.iy;
        let ty1 = (n.max_y - self.oy) * self.iy;
        let tz0 = (n.min_z - self.oz) * self.iz;
        let tz1 = (n.max_z - self.oz) * self.iz;
        let near = tx0
            .min(tx1)
            .max(ty0.min(ty1))
            .max(tz0.min(tz1))
            .max(Vec4::splat(tmin));
        let far = tx0
            .max(tx1)
            .min(ty0.max(ty1))
            .min(tz0.max(tz1))
            .min(Vec4::splat(tmax));
        // Core's `widen_exit`: outwards for either sign of the exit distance.
        let far = far
            * Vec4::select(
                far.cmplt(Vec4::ZERO),
                Vec4::splat(SLAB_EXIT_SCALE_NEGATIVE),
                Vec4::splat(SLAB_EXIT_SCALE),
            );
        Vec4::select(near.cmple(far), near, Vec4::INFINITY)
    }
}

/// Lane indices of `t` in ascending order: a five-comparator sorting network
/// (no loop, no calls; misses are `+inf` and sort last).
#[inline(always)]
fn sort4(t: &[f32; 4]) -> [usize; 4] {
    let mut k = [0usize, 1, 2, 3];
    let swap = |a: usize, b: usize, k: &mut [usize; 4]| {
        if t[k[b]] < t[k[a]] {
            k.swap(a, b);
        }
    };
    swap(0, 1, &mut k);
    swap(2, 3, &mut k);
    swap(0, 2, &mut k);
    swap(1, 3, &mut k);
    swap(1, 2, &mut k);
    k
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
    let ax = a[KX] - l.sx * a[KZ];
    let ay = a[KY] - l.sy * a[KZ];
    let bx = b[KX] - l.sx * b[KZ];
    let by = b[KY] - l.sy * b[KZ];
    let cx = c[KX] - l.sx * c[KZ];
    let cy = c[KY] - l.sy * c[KZ];
    let u = cx * by - cy * bx;
    let v = ax * cy - ay * cx;
    let w = bx * ay - by * ax;
    let zero = Vec4::ZERO;
    let outside = (u.cmplt(zero) | v.cmplt(zero) | w.cmplt(zero))
        & (u.cmpgt(zero) | v.cmpgt(zero) | w.cmpgt(zero));
    let det = u + v + w;
    let az = l.sz * a[KZ];
    let bz = l.sz * b[KZ];
    let cz = l.sz * c[KZ];
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

impl WideBvh {
    /// Closest hit; `Hit::prim` is the scene primitive id.
    pub fn intersect(&self, prims: &[Primitive], ray: &Ray) -> Hit {
        let pre = RayPre::new(ray);
        let (mut hit, at) = dispatch_axes!(pre, closest_axes, self, prims, ray, &pre);
        if hit.is_hit() {
            hit.prim = self.packets.id_of(&hit, at, prims);
        }
        hit
    }

    /// Closest hit; `Hit::prim` is the leaf slot (as [`Accel::intersect_slot`]).
    pub fn intersect_slot(&self, prims: &[Primitive], ray: &Ray) -> Hit {
        let pre = RayPre::new(ray);
        dispatch_axes!(pre, closest_axes, self, prims, ray, &pre).0
    }

    /// Whether anything lies on the ray within `(tmin, tmax)`.
    pub fn occluded(&self, prims: &[Primitive], ray: &Ray) -> bool {
        let pre = RayPre::new(ray);
        dispatch_axes!(pre, any_axes, self, prims, ray, &pre)
    }
}

/// One ray's closest-hit walk, advanced a node at a time.
struct ClosestWalk {
    pre: RayPre,
    lanes: Lanes,
    tmin: f32,
    best: Hit,
    /// Where `best` came from (see [`NOT_IN_PACKET`]).
    best_at: usize,
    stack: [(u32, f32); STACK],
    sp: usize,
}

impl ClosestWalk {
    #[inline(always)]
    fn new(ray: &Ray, pre: RayPre) -> Self {
        let mut stack = [(0u32, 0.0f32); STACK];
        stack[0] = (0, ray.tmin); // the root, entered at t = tmin
        ClosestWalk {
            lanes: Lanes::new(&pre),
            pre,
            tmin: ray.tmin,
            best: Hit::new(ray.tmax, 0.0, 0.0, Hit::NO_PRIM, Hit::NO_INSTANCE),
            best_at: NOT_IN_PACKET,
            stack,
            sp: 1,
        }
    }

    /// Visit the next node; false once the walk is finished.
    #[inline(always)]
    fn step<const KX: usize, const KY: usize, const KZ: usize>(
        &mut self,
        bvh: &WideBvh,
        prims: &[Primitive],
    ) -> bool {
        if self.sp == 0 {
            return false;
        }
        self.sp -= 1;
        let (node, t_enter) = self.stack[self.sp];
        if t_enter >= self.best.t {
            return true;
        }
        let Some(n) = bvh.nodes.get(node as usize) else {
            return true;
        };
        let tmin = self.tmin;
        let t = self.lanes.boxes(n, tmin, self.best.t).to_array();
        // Leaves now, nearest first; inner children onto the stack, farthest first.
        let order = sort4(&t);
        for &k in &order {
            if t[k] < self.best.t && n.count[k] & PACKET_LEAF != 0 {
                let first = n.child[k];
                let leaf = bvh.packets.leaf(first, n.count[k] & !PACKET_LEAF);
                for (i, p) in leaf.iter().enumerate() {
                    if let Some((lane, t, u, v)) =
                        packet_hit::<KX, KY, KZ>(&self.lanes, p, tmin, self.best.t)
                    {
                        self.best = Hit::new(t, u, v, p.slot[lane], 0);
                        self.best_at = packet_lane(first + i as u32, lane);
                    }
                }
            } else if t[k] < self.best.t && n.count[k] > 0 {
                let before = self.best.prim;
                leaf_closest::<KX, KY, KZ>(
                    &self.pre,
                    prims,
                    n.child[k],
                    n.count[k],
                    tmin,
                    &mut self.best,
                );
                if self.best.prim != before {
                    self.best_at = NOT_IN_PACKET;
                }
            }
        }
        for &k in order.iter().rev() {
            if t[k] < self.best.t && n.count[k] == 0 && n.child[k] != EMPTY_CHILD && self.sp < STACK
            {
                self.stack[self.sp] = (n.child[k], t[k]);
                self.sp += 1;
            }
        }
        true
    }

    #[inline(always)]
    /// The closest hit with `prim` as a leaf slot (or a miss), and where it
    /// came from (see [`NOT_IN_PACKET`]).
    fn finish(self) -> (Hit, usize) {
        if self.best.is_hit() {
            (self.best, self.best_at)
        } else {
            (Hit::MISS, NOT_IN_PACKET)
        }
    }
}

/// Closest hit (leaf slot, and where it came from) for one axis permutation.
#[inline(never)]
fn closest_axes<const KX: usize, const KY: usize, const KZ: usize>(
    bvh: &WideBvh,
    prims: &[Primitive],
    ray: &Ray,
    pre: &RayPre,
) -> (Hit, usize) {
    let mut w = ClosestWalk::new(ray, *pre);
    while w.step::<KX, KY, KZ>(bvh, prims) {}
    w.finish()
}

#[inline(always)]
pub(crate) fn leaf_closest<const KX: usize, const KY: usize, const KZ: usize>(
    pre: &RayPre,
    prims: &[Primitive],
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
        if let Some((t, u, v)) = prim_hit::<KX, KY, KZ>(pre, p, tmin, best.t) {
            *best = Hit::new(t, u, v, (first + k) as u32, 0);
        }
    }
}

/// Any hit for one axis permutation.
#[inline(never)]
fn any_axes<const KX: usize, const KY: usize, const KZ: usize>(
    bvh: &WideBvh,
    prims: &[Primitive],
    ray: &Ray,
    pre: &RayPre,
) -> bool {
    let lanes = Lanes::new(pre);
    let (tmin, tmax) = (ray.tmin, ray.tmax);
    let mut stack = [0u32; STACK];
    let mut sp = 1usize;
    while sp > 0 {
        sp -= 1;
        let Some(n) = bvh.nodes.get(stack[sp] as usize) else {
            continue;
        };
        let t = lanes.boxes(n, tmin, tmax).to_array();
        for (k, &tk) in t.iter().enumerate() {
            if tk == f32::INFINITY {
                continue;
            }
            if n.count[k] & PACKET_LEAF != 0 {
                if bvh
                    .packets
                    .leaf(n.child[k], n.count[k] & !PACKET_LEAF)
                    .iter()
                    .any(|p| packet_hit::<KX, KY, KZ>(&lanes, p, tmin, tmax).is_some())
                {
                    return true;
                }
            } else if n.count[k] > 0 {
                let first = n.child[k] as usize;
                if let Some(leaf) = prims.get(first..first + n.count[k] as usize)
                    && leaf
                        .iter()
                        .any(|p| prim_hit::<KX, KY, KZ>(pre, p, tmin, tmax).is_some())
                {
                    return true;
                }
            } else if n.child[k] != EMPTY_CHILD && sp < STACK {
                stack[sp] = n.child[k];
                sp += 1;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::reserve;
    use prism_core::Error;

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
