//! The walk of a ray over a heightfield's pyramid of maximum heights: the
//! root's test, the start cell and level, and the steps down, across and up
//! (the [module docs](super) give the method and why it never skips a hit).

use super::*;

/// The first crossing of the heightfield `hf` (its levels in `heights`) by the
/// ray of `pre` (in the heightfield's object space) at a `t` in `(tmin,
/// tmax)`: see the [module docs](super) for the shape and the walk. `None` for
/// a miss, and for a record that cannot be walked (no cells, no levels or
/// more than 31, or a cell size that is not positive;
/// [`Heightfield::descriptor`] never makes one). A level entry missing from `heights` reads as an empty column.
///
/// An any-hit query needs nothing else: the first crossing found is the first
/// crossing along the ray.
pub fn ray_heightfield(
    pre: &RayPre,
    hf: &GpuHeightfield,
    heights: &[f32],
    tmin: f32,
    tmax: f32,
) -> Option<HeightfieldHit> {
    Walk::new(pre, hf, heights)?.run(tmin, tmax)
}

/// Where the walk of [`ray_heightfield`] starts, for a backend that runs
/// many walks side by side (each mirroring that function's loop, in the CPU
/// backend's 8-lane walk): [`walk_start`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkStart {
    /// The ray misses the grid's box within `(tmin, tmax)` (or the record
    /// cannot be walked): no hit.
    Miss,
    /// One walk, from cell `(x, z)` at level `level` (below the root; see
    /// `Walk::start_level`), with `t_lo = tmin`.
    Cell {
        /// The start cell's column.
        x: u32,
        /// The start cell's row.
        z: u32,
        /// The level the walk starts at.
        level: u32,
    },
    /// A direction component is exactly 0: [`ray_heightfield`] runs its
    /// own walks (one per column the origin's plane borders).
    Parallel,
}

/// Where the walk of [`ray_heightfield`] over `hf` by the ray of `pre` in
/// `(tmin, tmax)` starts: the same root test and start cell.
pub fn walk_start(
    pre: &RayPre,
    hf: &GpuHeightfield,
    heights: &[f32],
    tmin: f32,
    tmax: f32,
) -> WalkStart {
    Walk::new(pre, hf, heights).map_or(WalkStart::Miss, |w| w.start(tmin, tmax))
}

/// The level a descending ray's walk starts at, from its run: the cells it
/// crosses along its major axis while dropping from where it enters the
/// grid's box to the ground, `run = (h0 * across) / drop` with `across =
/// max(|dx|, |dz|)` and `drop = -dy * cell_size`. The level is
/// `floor(log2(run)) - 1` within `0..=below_root`, found from the two
/// products' bits without dividing, so that every backend finds the same
/// level: the walk's answer on a tie (two faces at the same `t`, a ray
/// through an edge) depends on where it starts.
///
/// `h0_across` NaN, negative, 0 or subnormal: level 0; `drop` 0 or
/// subnormal, or `h0_across` infinite: `below_root`.
#[inline(always)]
pub fn start_level_of_run(h0_across: f32, drop: f32, below_root: u32) -> u32 {
    if h0_across.is_nan() || h0_across < f32::MIN_POSITIVE {
        return 0;
    }
    if drop.is_nan() || drop < f32::MIN_POSITIVE || h0_across == f32::INFINITY {
        return below_root;
    }
    // Both are positive normal numbers (or `drop` infinite: a level of at
    // most 0): `floor(log2(a / b))` is the exponents' difference, less one
    // where `a`'s significand is below `b`'s.
    let (a, b) = (h0_across.to_bits(), drop.to_bits());
    let mantissa = |x: u32| x & 0x7F_FFFF;
    let log2 = (a >> 23) as i32 - (b >> 23) as i32 - i32::from(mantissa(a) < mantissa(b));
    // ok: `below_root` is below HEIGHTFIELD_MAX_LEVELS, far below i32::MAX.
    (log2 - 1).clamp(0, below_root as i32) as u32
}

/// The slab values of one box of the walk (a column or a node): entry and
/// exit distance on each axis, `(plane - origin) * inv_dir`, near plane first
/// (a direction component of exactly 0: `-inf, +inf` where the origin lies in
/// the closed slab, `+inf, -inf` where not).
#[derive(Clone, Copy, Debug)]
struct Slabs {
    txn: f32,
    txf: f32,
    tyn: f32,
    tyf: f32,
    tzn: f32,
    tzf: f32,
}

impl Slabs {
    #[inline(always)]
    fn near(&self) -> f32 {
        self.txn.max(self.tzn).max(self.tyn)
    }
    #[inline(always)]
    fn far(&self) -> f32 {
        self.txf.min(self.tzf).min(self.tyf)
    }
}

/// One ray's walk over one heightfield: the ray's constants and the grid's.
pub(super) struct Walk<'a> {
    heights: &'a [f32],
    offsets: &'a [[u32; 4]; HEIGHTFIELD_MAX_LEVELS / 4],
    width: u32,
    depth: u32,
    cs: f32,
    inv_cs: f32,
    /// The last level (one entry, the largest height).
    pub(super) top: u32,
    o: Vec3,
    d: Vec3,
    inv: Vec3,
    /// The origin and the direction in cell units (`o * inv_cs`, `d *
    /// inv_cs`; x and z are read).
    oc: Vec3,
    dc: Vec3,
    /// Direction components exactly 0 (parallel to that axis's planes).
    par: [bool; 3],
    /// Direction components above 0 (the walk steps towards `+`).
    pos: [bool; 3],
    /// `(0 - oy) * iy`: the ground plane's distance.
    ty0: f32,
    /// The ray climbs (`dy > 0`): the walk goes up a level after every step
    /// across (a parent it could not skip may be skippable now that the
    /// ray's low part is behind it).
    up_always: bool,
}

impl<'a> Walk<'a> {
    #[inline(always)]
    pub(super) fn new(pre: &RayPre, hf: &'a GpuHeightfield, heights: &'a [f32]) -> Option<Self> {
        let (width, depth, levels) = (hf.dims[0], hf.dims[1], hf.dims[2]);
        let (cs, inv_cs) = (hf.scale[0], hf.scale[1]);
        if width == 0
            || depth == 0
            || levels == 0
            || levels as usize >= HEIGHTFIELD_MAX_LEVELS
            || cs.is_nan()
            || cs <= 0.0
        {
            return None;
        }
        let (o, d, inv) = (pre.origin, pre.dir, pre.inv_dir);
        Some(Walk {
            heights,
            offsets: &hf.level_offset,
            width,
            depth,
            cs,
            inv_cs,
            top: levels - 1,
            o,
            d,
            inv,
            oc: o * inv_cs,
            dc: d * inv_cs,
            par: [d.x == 0.0, d.y == 0.0, d.z == 0.0],
            pos: [inv.x > 0.0, inv.y > 0.0, inv.z > 0.0],
            ty0: (0.0 - o.y) * inv.y,
            up_always: d.y > 0.0,
        })
    }

    /// Plane `i` along x or z ([`Heightfield::plane`]).
    #[inline(always)]
    fn plane(&self, i: u32) -> f32 {
        i as f32 * self.cs
    }

    /// Entry `(i, j)` of level `level` (0: empty where `heights` lacks it).
    #[inline(always)]
    fn entry(&self, level: u32, i: u32, j: u32) -> f32 {
        let k = level as usize;
        let base = self.offsets[k / 4][k % 4] as usize;
        let w = level_cells(self.width, level) as usize;
        self.heights
            .get(base + j as usize * w + i as usize)
            .copied()
            .unwrap_or(0.0)
    }

    /// The slab of axis `k` (0 = x, 2 = z) between planes `a <= b`. A walk
    /// with a direction parallel to the axis only visits boxes holding its
    /// origin's coordinate (see `run`).
    #[inline(always)]
    fn slab(&self, k: usize, a: f32, b: f32) -> (f32, f32) {
        if self.par[k] {
            (f32::NEG_INFINITY, f32::INFINITY)
        } else {
            let ta = (a - self.o[k]) * self.inv[k];
            let tb = (b - self.o[k]) * self.inv[k];
            if self.pos[k] { (ta, tb) } else { (tb, ta) }
        }
    }

    /// The slab of y between the ground and height `h`.
    #[inline(always)]
    fn slab_y(&self, h: f32) -> (f32, f32) {
        if self.par[1] {
            if 0.0 <= self.o.y && self.o.y <= h {
                (f32::NEG_INFINITY, f32::INFINITY)
            } else {
                (f32::INFINITY, f32::NEG_INFINITY)
            }
        } else {
            let th = (h - self.o.y) * self.inv.y;
            if self.pos[1] {
                (self.ty0, th)
            } else {
                (th, self.ty0)
            }
        }
    }

    /// The slabs of the box over cells `[x0, x1) x [z0, z1)` up to height `h`.
    #[inline(always)]
    fn slabs(&self, x0: u32, x1: u32, z0: u32, z1: u32, h: f32) -> Slabs {
        let (txn, txf) = self.slab(0, self.plane(x0), self.plane(x1));
        let (tzn, tzf) = self.slab(2, self.plane(z0), self.plane(z1));
        let (tyn, tyf) = self.slab_y(h);
        Slabs {
            txn,
            txf,
            tyn,
            tyf,
            tzn,
            tzf,
        }
    }

    /// The crossing of a column box (height `h`, slabs `s`) in `(tmin,
    /// tmax)`: its entry `(t, face)`, or its exit for a ray that starts
    /// inside it. A column of height 0 is empty.
    #[inline(always)]
    fn crossing(&self, s: &Slabs, h: f32, tmin: f32, tmax: f32) -> Option<(f32, u32)> {
        let (near, far) = (s.near(), s.far());
        if !(h > 0.0 && near <= widen_exit(far)) {
            return None;
        }
        if near > tmin {
            if near >= tmax {
                return None;
            }
            let face = if s.tyn == near {
                if self.pos[1] { FACE_BOTTOM } else { FACE_TOP }
            } else if s.txn == near {
                if self.pos[0] { FACE_NEG_X } else { FACE_POS_X }
            } else if self.pos[2] {
                FACE_NEG_Z
            } else {
                FACE_POS_Z
            };
            Some((near, face))
        } else if far > tmin && far < tmax {
            let face = if s.tyf == far {
                if self.pos[1] { FACE_TOP } else { FACE_BOTTOM }
            } else if s.txf == far {
                if self.pos[0] { FACE_POS_X } else { FACE_NEG_X }
            } else if self.pos[2] {
                FACE_POS_Z
            } else {
                FACE_NEG_Z
            };
            Some((far, face))
        } else {
            None
        }
    }

    /// The crossing of the column of cell `(x, z)` (inside the grid).
    #[inline(always)]
    fn cell_crossing(&self, x: u32, z: u32, tmin: f32, tmax: f32) -> Option<HeightfieldHit> {
        let h = self.entry(0, x, z);
        let s = self.slabs(x, x + 1, z, z + 1, h);
        let (t, face) = self.crossing(&s, h, tmin, tmax)?;
        Some(HeightfieldHit {
            t,
            cell: z * self.width + x,
            face,
        })
    }

    /// The cell of coordinate `v` along a side of `n` cells: `k` with
    /// `plane(k) <= v < plane(k + 1)`, clamped into `[0, n)`.
    #[inline(always)]
    fn cell_of(&self, v: f32, n: u32) -> u32 {
        // `as u32` truncates and saturates: a NaN or a negative value becomes
        // 0, a non-negative one its floor.
        let mut k = ((v * self.inv_cs) as u32).min(n - 1);
        // `v * inv_cs` is rounded: one step sets it right against the planes.
        if k > 0 && v < self.plane(k) {
            k -= 1;
        } else if k + 1 < n && v >= self.plane(k + 1) {
            k += 1;
        }
        k
    }

    /// The cells whose closed slab holds `v` along a side of `n` cells (for
    /// a direction parallel to that axis): one, or two where `v` lies on the
    /// plane between them. `v` lies in `[0, plane(n)]` (the root test).
    #[inline(always)]
    fn cells_on(&self, v: f32, n: u32) -> ([u32; 2], usize) {
        let k = self.cell_of(v, n);
        if k > 0 && v == self.plane(k) {
            ([k - 1, k], 2)
        } else {
            ([k, k], 1)
        }
    }

    /// The coordinate along axis `k` (of `n` cells) of the ray at `t`, for
    /// the axis the walk does not leave the node by: its cell, clamped into
    /// the node's `[lo, hi)` and never behind `current` (the walk only moves
    /// forward). In cell units from the ray's own (`oc + t dc`, no division,
    /// no correction against the planes: a cell off by one where the ray
    /// lies within rounding of a plane is left at once, across that plane,
    /// by the next step).
    #[inline(always)]
    fn follow(&self, k: usize, t: f32, n: u32, lo: u32, hi: u32, current: u32) -> u32 {
        // `as u32` truncates and saturates: its floor, or 0 for a NaN or a
        // negative value.
        let c = ((self.oc[k] + t * self.dc[k]) as u32)
            .min(n - 1)
            .clamp(lo, hi - 1);
        if self.pos[k] {
            c.max(current)
        } else {
            c.min(current)
        }
    }

    /// The root's test and where the walk starts (see [`WalkStart`]).
    #[inline(always)]
    pub(super) fn start(&self, tmin: f32, tmax: f32) -> WalkStart {
        let (w, d) = (self.width, self.depth);
        let m = self.entry(self.top, 0, 0);
        // The root: a parallel axis's slab is the origin within the grid's
        // closed extent on that axis.
        let inside = |k: usize, n: u32| 0.0 <= self.o[k] && self.o[k] <= self.plane(n);
        if (self.par[0] && !inside(0, w)) || (self.par[2] && !inside(2, d)) {
            return WalkStart::Miss;
        }
        let s = self.slabs(0, w, 0, d, m);
        let (near, far) = (s.near(), widen_exit(s.far()));
        if !(m > 0.0 && near <= far && near < tmax && far > tmin) {
            return WalkStart::Miss;
        }
        if self.par.iter().any(|&p| p) {
            return WalkStart::Parallel;
        }
        let t0 = near.max(tmin);
        WalkStart::Cell {
            x: self.cell_of(self.o.x + t0 * self.d.x, w),
            z: self.cell_of(self.o.z + t0 * self.d.z, d),
            level: self.start_level(t0),
        }
    }

    /// The level a walk entering the grid's box at `t0` starts at. Any level
    /// gives a crossing at the same `t` (every level's test is
    /// conservative; on a tie, the face named may differ); the choice saves
    /// steps. A descending ray starts one level below
    /// that of the nodes as wide as its run (in cells along its major axis)
    /// from its entry height down to the ground: a node that wide it cannot
    /// pass over whole, so a walk started above that level mostly steps down
    /// (on the city's camera rays: 21.9 steps a ray from below the root, 19.9
    /// from here). Climbing and level rays start below the root.
    ///
    /// Mirrored, bit for bit, by the GPU kernels and the CPU lanes.
    #[inline(always)]
    fn start_level(&self, t0: f32) -> u32 {
        let below_root = self.top.saturating_sub(1);
        if self.d.y < 0.0 {
            let h0 = self.o.y + t0 * self.d.y;
            let across = self.d.x.abs().max(self.d.z.abs());
            start_level_of_run(h0 * across, -self.d.y * self.cs, below_root)
        } else {
            below_root
        }
    }

    /// The whole query: the root's test, the start cell (cells, for a
    /// direction parallel to x or z whose origin lies on a plane between
    /// columns), and the walk from it.
    #[inline(always)]
    fn run(&self, tmin: f32, tmax: f32) -> Option<HeightfieldHit> {
        match self.start(tmin, tmax) {
            WalkStart::Miss => None,
            WalkStart::Cell { x, z, level } => self.walk(x, z, level, tmin, tmax),
            WalkStart::Parallel => self.run_parallel(tmin, tmax),
        }
    }

    /// [`Walk::run`] for a direction with a component of exactly 0 (whose
    /// root test passed): one walk from each column the origin's plane
    /// borders along x and z, the nearest crossing of all.
    #[inline(never)]
    fn run_parallel(&self, tmin: f32, tmax: f32) -> Option<HeightfieldHit> {
        let (w, d) = (self.width, self.depth);
        let m = self.entry(self.top, 0, 0);
        let s = self.slabs(0, w, 0, d, m);
        let t0 = s.near().max(tmin);
        let xs = if self.par[0] {
            self.cells_on(self.o.x, w)
        } else {
            ([self.cell_of(self.o.x + t0 * self.d.x, w); 2], 1)
        };
        let zs = if self.par[2] {
            self.cells_on(self.o.z, d)
        } else {
            ([self.cell_of(self.o.z + t0 * self.d.z, d); 2], 1)
        };
        let level = self.top.saturating_sub(1);
        let mut best: Option<HeightfieldHit> = None;
        for &x in &xs.0[..xs.1] {
            for &z in &zs.0[..zs.1] {
                let limit = best.map_or(tmax, |b| b.t);
                if let Some(h) = self.walk(x, z, level, tmin, limit) {
                    best = Some(h);
                }
            }
        }
        best
    }

    /// The walk from cell `(cx, cz)`, at level `level`: the first crossing
    /// in `(tmin, tmax)`.
    #[inline(always)]
    pub(super) fn walk(
        &self,
        mut cx: u32,
        mut cz: u32,
        mut level: u32,
        tmin: f32,
        tmax: f32,
    ) -> Option<HeightfieldHit> {
        let (w, d) = (self.width, self.depth);
        // Every crossing still ahead lies at or after this distance (see the
        // module docs): where the walk entered its current cell.
        let mut t_lo = tmin;
        loop {
            let (nx, nz) = (cx >> level, cz >> level);
            // The node's cells: [x0, x1) x [z0, z1). ok: at most 2^31.
            let (x0, z0) = (nx << level, nz << level);
            let x1 = ((nx + 1) << level).min(w);
            let z1 = ((nz + 1) << level).min(d);
            let m = self.entry(level, nx, nz);
            let s = self.slabs(x0, x1, z0, z1, m);
            if level == 0 {
                if let Some((t, face)) = self.crossing(&s, m, tmin, tmax) {
                    return Some(HeightfieldHit {
                        t,
                        cell: cz * w + cx,
                        face,
                    });
                }
            } else {
                // The column test's expressions on the node (module docs),
                // its entry distance taken as the y slab's alone: at most
                // the node's (a weaker test, which never skips more).
                let far = widen_exit(s.far());
                if m > 0.0 && s.tyn <= far && s.tyn < tmax && far >= t_lo {
                    level -= 1;
                    continue;
                }
            }
            // Leave the node (a column: the cell) by its nearer exit.
            let t_exit = s.txf.min(s.tzf);
            if t_exit >= tmax || t_exit.is_nan() {
                // Past tmax (or never: a vertical ray's one column).
                return None;
            }
            // Whether the step leaves the node's parent.
            let new_parent;
            if s.txf == s.tzf {
                // Through a corner: the two side cells touch the ray on
                // their edge there. A node goes down until the corner cell.
                if level > 0 {
                    level -= 1;
                    continue;
                }
                let ax = if self.pos[0] {
                    cx + 1
                } else {
                    cx.wrapping_sub(1)
                };
                let bz = if self.pos[2] {
                    cz + 1
                } else {
                    cz.wrapping_sub(1)
                };
                let mut side = None;
                if ax < w {
                    side = self.cell_crossing(ax, cz, tmin, tmax);
                }
                if bz < d {
                    let limit = side.map_or(tmax, |h: HeightfieldHit| h.t);
                    if let Some(h) = self.cell_crossing(cx, bz, tmin, limit) {
                        side = Some(h);
                    }
                }
                if side.is_some() {
                    return side;
                }
                new_parent = (ax >> 1) != (cx >> 1) || (bz >> 1) != (cz >> 1);
                (cx, cz) = (ax, bz);
                if cx >= w || cz >= d {
                    return None;
                }
            } else if s.txf < s.tzf {
                cx = if self.pos[0] { x1 } else { x0.wrapping_sub(1) };
                if cx >= w {
                    return None;
                }
                new_parent = (cx >> (level + 1)) != (nx >> 1);
                if !self.par[2] {
                    cz = self.follow(2, t_exit, d, z0, z1, cz);
                }
            } else {
                cz = if self.pos[2] { z1 } else { z0.wrapping_sub(1) };
                if cz >= d {
                    return None;
                }
                new_parent = (cz >> (level + 1)) != (nz >> 1);
                if !self.par[0] {
                    cx = self.follow(0, t_exit, w, x0, x1, cx);
                }
            }
            t_lo = t_exit;
            // Up a level after a skip (Tevs et al.). A ray that does not
            // climb still in the same parent would only find that parent
            // unskippable again (its lowest point ahead is where it was), so
            // it goes up only where it entered a new parent.
            if level < self.top && (self.up_always || new_parent) {
                level += 1;
            }
        }
    }
}
