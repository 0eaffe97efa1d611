//! Many walks over one heightfield side by side, one per SIMD lane, for the
//! ray batches of a scene that is one heightfield (terrain, a voxel city):
//! `intersect` and `occluded` on such a scene walk 16 rays at once with
//! AVX2 (two groups of eight lanes, [`walk8`]), 32 with AVX-512 (two groups
//! of sixteen, [`walk16`]).
//!
//! Each lane runs core's walk ([`prism_core::heightfield::ray_heightfield`])
//! step for step: the same start ([`prism_core::heightfield::walk_start`],
//! eight or sixteen rays at a time), and in the loop the same node and
//! column tests, exits, steps and level changes, each value computed by the
//! same `f32` operations in the same order (no fused multiply-add: FMA is
//! not enabled, and Rust never contracts), so a lane's answer is core's bit
//! for bit. What the scalar walk does by branching, the lanes do by masks: a
//! lane whose ray hit or left the grid latches its answer, and once several
//! have, they hand their answers out and take the next rays. The rare cases
//! the lanes leave to core: a ray with a direction component of exactly 0
//! (core walks once per column its origin's plane borders), and a ray that
//! leaves a cell exactly through its corner (core tests the two side
//! cells); core's walk then answers that ray whole.
//!
//! Why lanes: a scalar walk is a chain of dependent, data-driven steps (down
//! a level or across, along x or along z), whose branches the CPU mispredicts
//! about once a step; many independent walks in one instruction stream have
//! no branch on their data and overlap their memory reads (two groups, so
//! that each group's chain of dependent steps fills the other's waits). On
//! the city's primary rays (one thread, AMD EPYC Zen 4, bench/RESULTS.md)
//! the 16-lane walk runs about 3.5x as many rays a second as one walk at a
//! time, the 32-lane one about 4x.

use core::arch::x86_64::*;
use prism_core::Ray;
use prism_core::gpu::{GpuHeightfield, HEIGHTFIELD_MAX_LEVELS, check_heightfields};
use prism_core::heightfield::{
    FACE_BOTTOM, FACE_NEG_X, FACE_NEG_Z, FACE_POS_X, FACE_POS_Z, FACE_TOP, HeightfieldHit,
    ray_heightfield, start_level_of_run,
};
use prism_core::intersect::{MIN_DIR_COMPONENT, RayPre, SLAB_EXIT_SCALE, SLAB_EXIT_SCALE_NEGATIVE};

/// Whether this CPU runs the 8-lane walk.
pub(crate) fn available() -> bool {
    is_x86_feature_detected!("avx2")
}

/// Whether the lanes can walk `hf` over `heights`: the record is one core's
/// walk accepts, every level lies inside `heights` (so that a walking lane's
/// read, of an entry of its level's grid, is always in bounds), and every
/// index fits a gather's `i32`.
pub(crate) fn walkable(hf: &GpuHeightfield, heights: &[f32]) -> bool {
    let (w, d, levels) = (hf.dims[0], hf.dims[1], hf.dims[2]);
    let shape = w > 0
        && d > 0
        && levels > 0
        && (levels as usize) < HEIGHTFIELD_MAX_LEVELS
        && hf.scale[0] > 0.0
        && heights.len() < i32::MAX as usize
        && w <= 1 << 30
        && d <= 1 << 30;
    shape && check_heightfields(core::slice::from_ref(hf), heights).is_ok()
}

/// `N` `f32` lanes in memory (aligned for a 512-bit load).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct F<const N: usize>([f32; N]);

/// `N` `i32` lanes in memory.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct I<const N: usize>([i32; N]);

/// `N` walks in memory, where lanes are refilled: each one's ray constants
/// and its walk's state.
#[derive(Clone, Copy, Debug)]
struct Lanes<const N: usize> {
    ox: F<N>,
    oy: F<N>,
    oz: F<N>,
    ix: F<N>,
    iy: F<N>,
    iz: F<N>,
    /// The origin and direction in cell units, x and z (core's `oc`, `dc`).
    ocx: F<N>,
    ocz: F<N>,
    dcx: F<N>,
    dcz: F<N>,
    /// `(0 - oy) * iy`.
    ty0: F<N>,
    tmin: F<N>,
    tmax: F<N>,
    /// Where the walk entered its current cell.
    t_lo: F<N>,
    cx: I<N>,
    cz: I<N>,
    level: I<N>,
    /// Masks (-1 where set): the direction is positive on x, y, z; the
    /// walk goes up a level after every step (a climbing ray).
    pos_x: I<N>,
    pos_y: I<N>,
    pos_z: I<N>,
    up: I<N>,
    /// -1 for a lane walking a ray.
    live: I<N>,
    /// A lane's answer, latched when its walk ended and handed out when the
    /// lane is refilled: what ([`ENDED_MISS`] and the others), the hit's
    /// `t`, cell and face.
    kind: I<N>,
    t: F<N>,
    cell: I<N>,
    face: I<N>,
    /// The batch index of each lane's ray.
    ray: [usize; N],
}

impl<const N: usize> Lanes<N> {
    /// Every lane idle.
    fn new() -> Self {
        let (f, i) = (F([0.0; N]), I([0; N]));
        Lanes {
            ox: f,
            oy: f,
            oz: f,
            ix: f,
            iy: f,
            iz: f,
            ocx: f,
            ocz: f,
            dcx: f,
            dcz: f,
            ty0: f,
            tmin: f,
            tmax: f,
            t_lo: f,
            cx: i,
            cz: i,
            level: i,
            pos_x: i,
            pos_y: i,
            pos_z: i,
            up: i,
            live: i,
            kind: i,
            t: f,
            cell: i,
            face: i,
            ray: [0; N],
        }
    }
}

/// A lane's walk ended without a crossing (or has no ray).
const ENDED_MISS: i32 = 0;
/// A lane's walk ended at a crossing.
const ENDED_HIT: i32 = 1;
/// A lane's walk reached a cell's corner: core walks that ray whole.
const ENDED_CORNER: i32 = 2;

/// [`REFILL_AT`] for the 32 lanes of [`walk16`].
const REFILL_AT_16: u32 = 12;

/// Lanes (of the sixteen) whose walks have ended before the lanes are
/// refilled: refilling stops the lanes for the answers, the next rays' start
/// and the lanes' registers written and read back, so it waits for several.
const REFILL_AT: u32 = 4;

/// Walk every ray of `rays` over `hf` (its levels in `heights`, a record
/// [`walkable`] accepts) and hand `put(i, first crossing)` for each ray `i`,
/// in no set order; a ray whose mask shares no bit with `0xFF` (a flat
/// scene's implicit instance) is a miss. Generic over `put`, so that the
/// 32-lane walk hands each answer to it inlined, straight from registers (a
/// call through `dyn` took the answer through memory, whose wider reads of
/// narrower stores stalled: 6% of the walk's time).
pub(crate) fn walk_batch<F: FnMut(usize, Option<HeightfieldHit>)>(
    hf: &GpuHeightfield,
    heights: &[f32],
    rays: &[Ray],
    put: &mut F,
) {
    if !(available() && walkable(hf, heights)) {
        for (i, ray) in rays.iter().enumerate() {
            let hit = (ray.mask & 0xFF != 0)
                .then(|| ray_heightfield(&RayPre::new(ray), hf, heights, ray.tmin, ray.tmax))
                .flatten();
            put(i, hit);
        }
        return;
    }
    if available16() {
        // SAFETY: AVX-512F, AVX2 and BMI2 are available (checked above).
        unsafe { walk16(hf, heights, rays, put) }
    } else {
        // SAFETY: AVX2 is available (checked above).
        unsafe { walk8(hf, heights, rays, put) }
    }
}

/// A started walk waiting for a lane: its ray's constants and its start
/// (core's `walk_start`), as the lanes take them.
#[derive(Clone, Copy, Debug, Default)]
struct Started {
    f: [f32; 13],
    i: [i32; 7],
    ray: usize,
}

/// Where in [`Started`] each value lies.
mod at {
    pub const OX: usize = 0;
    pub const OY: usize = 1;
    pub const OZ: usize = 2;
    pub const IX: usize = 3;
    pub const IY: usize = 4;
    pub const IZ: usize = 5;
    pub const OCX: usize = 6;
    pub const OCZ: usize = 7;
    pub const DCX: usize = 8;
    pub const DCZ: usize = 9;
    pub const TY0: usize = 10;
    pub const TMIN: usize = 11;
    pub const TMAX: usize = 12;
    pub const CX: usize = 0;
    pub const CZ: usize = 1;
    pub const LEVEL: usize = 2;
    pub const POS_X: usize = 3;
    pub const POS_Y: usize = 4;
    pub const POS_Z: usize = 5;
    pub const UP: usize = 6;
}

/// The rays of a batch started eight at a time, and the started walks that
/// wait for a lane.
struct Starter<'a> {
    hf: &'a GpuHeightfield,
    heights: &'a [f32],
    rays: &'a [Ray],
    /// The next ray of the batch to start.
    next: usize,
    /// Started walks: `ready[taken..count]` wait for a lane.
    ready: [Started; 8],
    count: usize,
    taken: usize,
}

impl Starter<'_> {
    /// The next started walk, starting rays eight at a time as needed
    /// (answering those that need no walk of a lane); `None` once every ray
    /// is started.
    #[target_feature(enable = "avx2")]
    fn take(&mut self, put: &mut dyn FnMut(usize, Option<HeightfieldHit>)) -> Option<Started> {
        while self.taken == self.count {
            if self.next >= self.rays.len() {
                return None;
            }
            self.start8(put);
        }
        let s = self.ready[self.taken];
        self.taken += 1;
        Some(s)
    }

    /// Start rays `next..next + 8` (fewer at the batch's end): core's
    /// `RayPre::new` (the inverse direction) and `walk_start` (the root's
    /// test and the start cell) in lanes, the same operations in the same
    /// order per lane. A ray whose mask hides the scene, or that misses the
    /// root, is answered (a miss); one with a direction component of exactly
    /// 0 is answered by core's walk.
    #[target_feature(enable = "avx2")]
    fn start8(&mut self, put: &mut dyn FnMut(usize, Option<HeightfieldHit>)) {
        let first = self.next;
        let n = (self.rays.len() - first).min(8);
        self.next += n;
        let (mut o, mut d) = ([[0.0f32; 8]; 3], [[1.0f32; 8]; 3]);
        let (mut tmin, mut tmax) = ([0.0f32; 8], [0.0f32; 8]);
        for (k, ray) in self.rays[first..first + n].iter().enumerate() {
            for axis in 0..3 {
                o[axis][k] = ray.origin[axis];
                d[axis][k] = ray.dir[axis];
            }
            tmin[k] = ray.tmin;
            tmax[k] = ray.tmax;
        }
        let hf = self.hf;
        let (w, dd, levels) = (hf.dims[0], hf.dims[1], hf.dims[2]);
        let (cs, inv_cs) = (hf.scale[0], hf.scale[1]);
        let top = levels - 1;
        let k = top as usize;
        let m = self
            .heights
            .get(hf.level_offset[k / 4][k % 4] as usize)
            .copied()
            .unwrap_or(0.0);
        let f8 = |a: [f32; 8]| -> __m256 { bytemuck::cast(a) };
        let (ox, oy, oz) = (f8(o[0]), f8(o[1]), f8(o[2]));
        let (dx, dy, dz) = (f8(d[0]), f8(d[1]), f8(d[2]));
        let (vtmin, vtmax) = (f8(tmin), f8(tmax));
        let i = |x| _mm256_castps_si256(x);
        let f = |x| _mm256_castsi256_ps(x);
        let lt = |a, b| _mm256_cmp_ps::<_CMP_LT_OQ>(a, b);
        let le = |a, b| _mm256_cmp_ps::<_CMP_LE_OQ>(a, b);
        let gt = |a, b| _mm256_cmp_ps::<_CMP_GT_OQ>(a, b);
        let ge = |a, b| _mm256_cmp_ps::<_CMP_GE_OQ>(a, b);
        let eq = |a, b| _mm256_cmp_ps::<_CMP_EQ_OQ>(a, b);
        let and = |a, b| _mm256_and_ps(a, b);
        let or = |a, b| _mm256_or_ps(a, b);
        let pick = |a, b, m| _mm256_blendv_ps(a, b, m);
        let (zero, one) = (_mm256_setzero_ps(), _mm256_set1_ps(1.0));
        let (inf, ninf) = (
            _mm256_set1_ps(f32::INFINITY),
            _mm256_set1_ps(f32::NEG_INFINITY),
        );
        // RayPre::new: 1 / d, a component below MIN_DIR_COMPONENT in size
        // replaced by it (with its sign).
        let sign = _mm256_set1_ps(-0.0);
        let min_c = _mm256_set1_ps(MIN_DIR_COMPONENT);
        let safe = |c| {
            let small = lt(_mm256_andnot_ps(sign, c), min_c);
            pick(c, or(and(c, sign), min_c), small)
        };
        let (ix, iy, iz) = (
            _mm256_div_ps(one, safe(dx)),
            _mm256_div_ps(one, safe(dy)),
            _mm256_div_ps(one, safe(dz)),
        );
        // Walk::new.
        let (par_x, par_y, par_z) = (eq(dx, zero), eq(dy, zero), eq(dz, zero));
        let (pos_x, pos_y, pos_z) = (gt(ix, zero), gt(iy, zero), gt(iz, zero));
        let ty0 = _mm256_mul_ps(_mm256_sub_ps(zero, oy), iy);
        let vinv_cs = _mm256_set1_ps(inv_cs);
        // Walk::start: the root's slabs.
        let (pw, pd) = (
            _mm256_set1_ps(w as f32 * cs),
            _mm256_set1_ps(dd as f32 * cs),
        );
        let vm = _mm256_set1_ps(m);
        let slab = |o, inv, pos, par, hi| {
            let ta = _mm256_mul_ps(_mm256_sub_ps(zero, o), inv);
            let tb = _mm256_mul_ps(_mm256_sub_ps(hi, o), inv);
            (
                pick(pick(tb, ta, pos), ninf, par),
                pick(pick(ta, tb, pos), inf, par),
            )
        };
        let (txn, txf) = slab(ox, ix, pos_x, par_x, pw);
        let (tzn, tzf) = slab(oz, iz, pos_z, par_z, pd);
        let th = _mm256_mul_ps(_mm256_sub_ps(vm, oy), iy);
        let y_in = and(le(zero, oy), le(oy, vm));
        let tyn = pick(pick(th, ty0, pos_y), pick(inf, ninf, y_in), par_y);
        let tyf = pick(pick(ty0, th, pos_y), pick(ninf, inf, y_in), par_y);
        let near = _mm256_max_ps(_mm256_max_ps(txn, tzn), tyn);
        let far = _mm256_min_ps(_mm256_min_ps(txf, tzf), tyf);
        let scale = pick(
            _mm256_set1_ps(SLAB_EXIT_SCALE),
            _mm256_set1_ps(SLAB_EXIT_SCALE_NEGATIVE),
            lt(far, zero),
        );
        let far = _mm256_mul_ps(far, scale);
        // A parallel axis's root slab: the origin within the closed extent.
        let inside = |o, hi| and(le(zero, o), le(o, hi));
        let outside = or(
            _mm256_andnot_ps(inside(ox, pw), par_x),
            _mm256_andnot_ps(inside(oz, pd), par_z),
        );
        let hit_root = _mm256_andnot_ps(
            outside,
            and(
                and(gt(vm, zero), le(near, far)),
                and(lt(near, vtmax), gt(far, vtmin)),
            ),
        );
        let parallel = or(or(par_x, par_y), par_z);
        // The start cell: core's `cell_of` of the point at max(near, tmin).
        let t0 = _mm256_max_ps(near, vtmin);
        let cell_of = |v, n: u32| {
            let nf = _mm256_set1_ps(n as f32);
            let x = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v, vinv_cs), zero), nf);
            let k = _mm256_min_epi32(_mm256_cvttps_epi32(x), _mm256_set1_epi32(n as i32 - 1));
            let k1 = _mm256_add_epi32(k, _mm256_set1_epi32(1));
            let plane = |k| _mm256_mul_ps(_mm256_cvtepi32_ps(k), _mm256_set1_ps(cs));
            let dec = _mm256_and_si256(
                _mm256_cmpgt_epi32(k, _mm256_setzero_si256()),
                i(lt(v, plane(k))),
            );
            let inc = _mm256_andnot_si256(
                dec,
                _mm256_and_si256(
                    _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), k1),
                    i(ge(v, plane(k1))),
                ),
            );
            // Masks are -1.
            _mm256_sub_epi32(_mm256_add_epi32(k, dec), inc)
        };
        let cx = cell_of(_mm256_add_ps(ox, _mm256_mul_ps(t0, dx)), w);
        let cz = cell_of(_mm256_add_ps(oz, _mm256_mul_ps(t0, dz)), dd);
        let lanes = |x: __m256| -> [f32; 8] { bytemuck::cast(x) };
        let lanes_i = |x: __m256i| -> [i32; 8] { bytemuck::cast(x) };
        // Core's `Walk::start_level`, lane by lane.
        let below_root = top.saturating_sub(1);
        let t0s = lanes(t0);
        let start_levels: [i32; 8] = core::array::from_fn(|k| {
            let (oy, [dx, dy, dz]) = (o[1][k], [d[0][k], d[1][k], d[2][k]]);
            let level = if dy < 0.0 {
                let h0 = oy + t0s[k] * dy;
                start_level_of_run(h0 * dx.abs().max(dz.abs()), -dy * cs, below_root)
            } else {
                below_root
            };
            level as i32
        });
        let values = [
            o[0],
            o[1],
            o[2],
            lanes(ix),
            lanes(iy),
            lanes(iz),
            lanes(_mm256_mul_ps(ox, vinv_cs)),
            lanes(_mm256_mul_ps(oz, vinv_cs)),
            lanes(_mm256_mul_ps(dx, vinv_cs)),
            lanes(_mm256_mul_ps(dz, vinv_cs)),
            lanes(ty0),
            tmin,
            tmax,
        ];
        let ints = [
            lanes_i(cx),
            lanes_i(cz),
            start_levels,
            lanes_i(i(pos_x)),
            lanes_i(i(pos_y)),
            lanes_i(i(pos_z)),
            lanes_i(i(gt(dy, zero))),
        ];
        let hit_bits = _mm256_movemask_ps(hit_root) as u32;
        let par_bits = _mm256_movemask_ps(parallel) as u32;
        let _ = f;
        self.count = 0;
        self.taken = 0;
        for (k, ray) in self.rays[first..first + n].iter().enumerate() {
            let index = first + k;
            if ray.mask & 0xFF == 0 || hit_bits & (1 << k) == 0 {
                put(index, None);
            } else if par_bits & (1 << k) != 0 {
                let pre = RayPre::new(ray);
                put(
                    index,
                    ray_heightfield(&pre, self.hf, self.heights, ray.tmin, ray.tmax),
                );
            } else {
                let s = &mut self.ready[self.count];
                for (v, lane) in s.f.iter_mut().zip(&values) {
                    *v = lane[k];
                }
                for (v, lane) in s.i.iter_mut().zip(&ints) {
                    *v = lane[k];
                }
                s.ray = index;
                self.count += 1;
            }
        }
    }
}

/// Load the next started walk into lane `lane` (the lane goes idle when
/// every ray is started).
#[target_feature(enable = "avx2")]
fn refill<const N: usize>(
    st: &mut Lanes<N>,
    lane: usize,
    starter: &mut Starter,
    put: &mut dyn FnMut(usize, Option<HeightfieldHit>),
) {
    let Some(s) = starter.take(put) else {
        st.live.0[lane] = 0;
        return;
    };
    let (f, i) = (&s.f, &s.i);
    for (dst, k) in [
        (&mut st.ox, at::OX),
        (&mut st.oy, at::OY),
        (&mut st.oz, at::OZ),
        (&mut st.ix, at::IX),
        (&mut st.iy, at::IY),
        (&mut st.iz, at::IZ),
        (&mut st.ocx, at::OCX),
        (&mut st.ocz, at::OCZ),
        (&mut st.dcx, at::DCX),
        (&mut st.dcz, at::DCZ),
        (&mut st.ty0, at::TY0),
        (&mut st.tmin, at::TMIN),
        (&mut st.tmax, at::TMAX),
    ] {
        dst.0[lane] = f[k];
    }
    st.t_lo.0[lane] = f[at::TMIN];
    for (dst, k) in [
        (&mut st.cx, at::CX),
        (&mut st.cz, at::CZ),
        (&mut st.level, at::LEVEL),
        (&mut st.pos_x, at::POS_X),
        (&mut st.pos_y, at::POS_Y),
        (&mut st.pos_z, at::POS_Z),
        (&mut st.up, at::UP),
    ] {
        dst.0[lane] = i[k];
    }
    st.live.0[lane] = -1;
    st.kind.0[lane] = ENDED_MISS;
    st.ray[lane] = s.ray;
}

/// Hand out the answers of the lanes of `st` that walked (`was_live`) and
/// ended since the last refill, and load the next started walks into them.
#[target_feature(enable = "avx2")]
fn hand_out<const N: usize>(
    st: &mut Lanes<N>,
    was_live: &[i32; N],
    starter: &mut Starter,
    put: &mut dyn FnMut(usize, Option<HeightfieldHit>),
) {
    for (lane, &was) in was_live.iter().enumerate() {
        if was == 0 || st.live.0[lane] != 0 {
            continue;
        }
        let index = st.ray[lane];
        let answer = match st.kind.0[lane] {
            ENDED_HIT => Some(HeightfieldHit {
                t: st.t.0[lane],
                cell: st.cell.0[lane] as u32,
                face: st.face.0[lane] as u32,
            }),
            // Through a cell's corner: core walks the ray whole.
            ENDED_CORNER => starter.rays.get(index).and_then(|ray| {
                let pre = RayPre::new(ray);
                ray_heightfield(&pre, starter.hf, starter.heights, ray.tmin, ray.tmax)
            }),
            _ => None,
        };
        put(index, answer);
        refill(st, lane, starter, put);
    }
}

/// Two groups of eight walks: every value of a step is worked out for both
/// groups one after the other (`[group 0, group 1]`), so that each group's
/// chain of dependent steps (a level's index, the read of its entry, the
/// tests, the next index) fills the other's waits.
type Two<T> = [T; 2];

/// `[f(a[0]), f(a[1])]`, and the same over two or three pairs.
macro_rules! two {
    ($f:expr, $a:expr) => {{
        let a = $a;
        [$f(a[0]), $f(a[1])]
    }};
    ($f:expr, $a:expr, $b:expr) => {{
        let (a, b) = ($a, $b);
        [$f(a[0], b[0]), $f(a[1], b[1])]
    }};
    ($f:expr, $a:expr, $b:expr, $c:expr) => {{
        let (a, b, c) = ($a, $b, $c);
        [$f(a[0], b[0], c[0]), $f(a[1], b[1], c[1])]
    }};
}

#[target_feature(enable = "avx2")]
fn walk8(
    hf: &GpuHeightfield,
    heights: &[f32],
    rays: &[Ray],
    put: &mut dyn FnMut(usize, Option<HeightfieldHit>),
) {
    let (w, d, levels) = (hf.dims[0] as i32, hf.dims[1] as i32, hf.dims[2] as i32);
    let cs = hf.scale[0];
    let mut offsets = [0i32; HEIGHTFIELD_MAX_LEVELS];
    for (k, o) in offsets.iter_mut().enumerate() {
        *o = hf.level_offset[k / 4][k % 4] as i32;
    }
    let mut mem = [Lanes::<8>::new(); 2];
    let mut starter = Starter {
        hf,
        heights,
        rays,
        next: 0,
        ready: [Started::default(); 8],
        count: 0,
        taken: 0,
    };
    for st in &mut mem {
        for lane in 0..8 {
            refill(st, lane, &mut starter, put);
        }
    }

    // Casts between the two register types.
    let f = |x| _mm256_castsi256_ps(x);
    let i = |x| _mm256_castps_si256(x);
    let and = |a, b| _mm256_and_si256(a, b);
    // `!a & b`.
    let andnot = |a, b| _mm256_andnot_si256(a, b);
    let or = |a, b| _mm256_or_si256(a, b);
    let add = |a, b| _mm256_add_ps(a, b);
    let sub = |a, b| _mm256_sub_ps(a, b);
    let mul = |a, b| _mm256_mul_ps(a, b);
    let max = |a, b| _mm256_max_ps(a, b);
    let min = |a, b| _mm256_min_ps(a, b);
    let addi = |a, b| _mm256_add_epi32(a, b);
    let subi = |a, b| _mm256_sub_epi32(a, b);
    let mini = |a, b| _mm256_min_epi32(a, b);
    let maxi = |a, b| _mm256_max_epi32(a, b);
    let gti = |a, b| _mm256_cmpgt_epi32(a, b);
    let eqi = |a, b| _mm256_cmpeq_epi32(a, b);
    let srlv = |a, b| _mm256_srlv_epi32(a, b);
    let sllv = |a, b| _mm256_sllv_epi32(a, b);
    let lt = |a, b| i(_mm256_cmp_ps::<_CMP_LT_OQ>(a, b));
    let le = |a, b| i(_mm256_cmp_ps::<_CMP_LE_OQ>(a, b));
    let gt = |a, b| i(_mm256_cmp_ps::<_CMP_GT_OQ>(a, b));
    let ge = |a, b| i(_mm256_cmp_ps::<_CMP_GE_OQ>(a, b));
    let eq = |a, b| i(_mm256_cmp_ps::<_CMP_EQ_OQ>(a, b));
    let nlt = |a, b| i(_mm256_cmp_ps::<_CMP_NLT_UQ>(a, b));
    // `a` where `m` is clear, `b` where it is set.
    let pick = |a, b, m| _mm256_blendv_ps(a, b, f(m));
    let pick_i = |a, b, m| _mm256_blendv_epi8(a, b, m);

    let splat = |x: __m256| [x, x];
    let splat_i = |x: __m256i| [x, x];
    let (zero, one) = (
        splat_i(_mm256_setzero_si256()),
        splat_i(_mm256_set1_epi32(1)),
    );
    let fzero = splat(_mm256_setzero_ps());
    let vw = splat_i(_mm256_set1_epi32(w));
    let vd = splat_i(_mm256_set1_epi32(d));
    let vw1 = splat_i(_mm256_set1_epi32(w - 1));
    let vd1 = splat_i(_mm256_set1_epi32(d - 1));
    let vwf = splat(_mm256_set1_ps(w as f32));
    let vdf = splat(_mm256_set1_ps(d as f32));
    let vtop = splat_i(_mm256_set1_epi32(levels - 1));
    let vcs = splat(_mm256_set1_ps(cs));
    let widen_pos = splat(_mm256_set1_ps(SLAB_EXIT_SCALE));
    let widen_neg = splat(_mm256_set1_ps(SLAB_EXIT_SCALE_NEGATIVE));
    let face_v = |v: u32| splat_i(_mm256_set1_epi32(v as i32));
    let (f_top, f_bottom) = (face_v(FACE_TOP), face_v(FACE_BOTTOM));
    let (f_neg_x, f_pos_x) = (face_v(FACE_NEG_X), face_v(FACE_POS_X));
    let (f_neg_z, f_pos_z) = (face_v(FACE_NEG_Z), face_v(FACE_POS_Z));
    // The first entry of each level: up to 16 levels from two registers by
    // permutes (a few cycles), more by a gather.
    let row = |k: usize| -> __m256i {
        let mut r = [0i32; 8];
        r.copy_from_slice(&offsets[k..k + 8]);
        bytemuck::cast(r)
    };
    let (offsets_lo, offsets_hi) = (row(0), row(8));
    let seven = _mm256_set1_epi32(7);
    let level_offset = |level: __m256i| -> __m256i {
        if levels <= 16 {
            // `permutevar` reads the index's low three bits.
            let lo = _mm256_permutevar8x32_epi32(offsets_lo, level);
            let hi = _mm256_permutevar8x32_epi32(offsets_hi, level);
            _mm256_blendv_epi8(lo, hi, _mm256_cmpgt_epi32(level, seven))
        } else {
            // SAFETY: every level of a walk lies in 0..levels, within `offsets`.
            unsafe { _mm256_i32gather_epi32::<4>(offsets.as_ptr(), level) }
        }
    };
    // SAFETY (the closure's gather): only walking lanes read, whose index
    // lies in `heights` (see where it is called).
    let entry = |idx: __m256i, ok: __m256i| unsafe {
        _mm256_mask_i32gather_ps::<4>(_mm256_setzero_ps(), heights.as_ptr(), idx, f(ok))
    };
    // Core's plane: `i as f32 * cell size`.
    let plane = |k: Two<__m256i>| two!(mul, two!(|x| _mm256_cvtepi32_ps(x), k), vcs);

    let loadf = |v: [&F<8>; 2]| -> Two<__m256> { [bytemuck::cast(v[0].0), bytemuck::cast(v[1].0)] };
    let loadi =
        |v: [&I<8>; 2]| -> Two<__m256i> { [bytemuck::cast(v[0].0), bytemuck::cast(v[1].0)] };
    macro_rules! field {
        ($load:ident, $name:ident) => {
            $load([&mem[0].$name, &mem[1].$name])
        };
    }

    'refilled: loop {
        // The lanes' constants and state, in registers until a lane ends.
        let (ox, oy, oz) = (field!(loadf, ox), field!(loadf, oy), field!(loadf, oz));
        let (ix, iy, iz) = (field!(loadf, ix), field!(loadf, iy), field!(loadf, iz));
        let (ocx, ocz, dcx, dcz) = (
            field!(loadf, ocx),
            field!(loadf, ocz),
            field!(loadf, dcx),
            field!(loadf, dcz),
        );
        let (ty0, tmin, tmax) = (field!(loadf, ty0), field!(loadf, tmin), field!(loadf, tmax));
        let (pos_x, pos_y, pos_z) = (
            field!(loadi, pos_x),
            field!(loadi, pos_y),
            field!(loadi, pos_z),
        );
        let up_always = field!(loadi, up);
        let mut live = field!(loadi, live);
        let (mut ans_kind, mut ans_t) = (field!(loadi, kind), field!(loadf, t));
        let (mut ans_cell, mut ans_face) = (field!(loadi, cell), field!(loadi, face));
        let mut t_lo = field!(loadf, t_lo);
        let (mut cx, mut cz, mut level) =
            (field!(loadi, cx), field!(loadi, cz), field!(loadi, level));
        if (0..2).all(|g| _mm256_testz_si256(live[g], live[g]) != 0) {
            return;
        }
        // Lanes that have no ray now: refilled once more have ended.
        let idle = two!(|x| (!_mm256_movemask_ps(f(x)) as u32) & 0xFF, live);
        let idle = idle[0].count_ones() + idle[1].count_ones();
        loop {
            // The node (a column at level 0) holding each lane's cell.
            let nx = two!(srlv, cx, level);
            let nz = two!(srlv, cz, level);
            let x0 = two!(sllv, nx, level);
            let z0 = two!(sllv, nz, level);
            let x1 = two!(mini, two!(sllv, two!(addi, nx, one), level), vw);
            let z1 = two!(mini, two!(sllv, two!(addi, nz, one), level), vd);
            let lw = two!(addi, two!(srlv, vw1, level), one);
            let off = two!(level_offset, level);
            let idx = two!(
                addi,
                two!(addi, off, two!(|a, b| _mm256_mullo_epi32(a, b), nz, lw)),
                nx
            );
            // A walking lane's cell lies in the grid and its level in the
            // pyramid, which `walkable` found inside `heights`.
            let m = two!(entry, idx, live);

            // Core's `slabs`.
            let ta = two!(mul, two!(sub, plane(x0), ox), ix);
            let tb = two!(mul, two!(sub, plane(x1), ox), ix);
            let (txn, txf) = (two!(pick, tb, ta, pos_x), two!(pick, ta, tb, pos_x));
            let ta = two!(mul, two!(sub, plane(z0), oz), iz);
            let tb = two!(mul, two!(sub, plane(z1), oz), iz);
            let (tzn, tzf) = (two!(pick, tb, ta, pos_z), two!(pick, ta, tb, pos_z));
            let th = two!(mul, two!(sub, m, oy), iy);
            let (tyn, tyf) = (two!(pick, th, ty0, pos_y), two!(pick, ty0, th, pos_y));
            let near = two!(max, two!(max, txn, tzn), tyn);
            let far = two!(min, two!(min, txf, tzf), tyf);
            let farw = two!(
                mul,
                far,
                two!(pick, widen_pos, widen_neg, two!(lt, far, fzero))
            );
            let level0 = two!(eqi, level, zero);
            let filled = two!(gt, m, fzero);

            // Level 0: core's `crossing` of the column.
            let touched = two!(and, level0, two!(and, filled, two!(le, near, farw)));
            let entered = two!(gt, near, tmin);
            let hit_entry = two!(and, touched, two!(and, entered, two!(lt, near, tmax)));
            let hit_exit = two!(
                and,
                two!(andnot, entered, touched),
                two!(and, two!(gt, far, tmin), two!(lt, far, tmax))
            );
            let hit = two!(and, live, two!(or, hit_entry, hit_exit));
            // Above: the node test, down a level where the node may hold a
            // crossing (its entry distance: the y slab's, as core's).
            let down = two!(
                and,
                two!(andnot, level0, live),
                two!(
                    and,
                    two!(and, filled, two!(le, tyn, farw)),
                    two!(and, two!(lt, tyn, tmax), two!(ge, farw, t_lo))
                )
            );
            // Across: leave the node by its nearer exit.
            let across = two!(andnot, two!(or, hit, down), live);
            let t_exit = two!(min, txf, tzf);
            let past = two!(and, across, two!(nlt, t_exit, tmax));
            let going = two!(andnot, past, across);
            let corner = two!(and, going, two!(eq, txf, tzf));
            let corner_down = two!(andnot, level0, corner);
            let corner_cell = two!(and, level0, corner);
            let x_first = two!(lt, txf, tzf);
            let step_x = two!(andnot, corner, two!(and, going, x_first));
            let step_z = two!(andnot, corner, two!(andnot, x_first, going));
            let cx_step = two!(pick_i, two!(subi, x0, one), x1, pos_x);
            let cz_step = two!(pick_i, two!(subi, z0, one), z1, pos_z);
            // Off the grid: at or past the side as an unsigned number (-1,
            // before the first cell, is past every side).
            let past_side = |c, n| eqi(_mm256_max_epu32(c, n), c);
            let off_x = two!(and, step_x, two!(past_side, cx_step, vw));
            let off_z = two!(and, step_z, two!(past_side, cz_step, vd));
            // Core's `(c >> (level + 1)) != (n >> 1)` for the cell `c` past
            // node `n`: the step leaves the parent where `n` is its parent's
            // last child along the way: odd going up, even going down.
            let (ones, all) = (_mm256_set1_epi32(1), _mm256_set1_epi32(-1));
            let last = |n, pos| {
                let odd = _mm256_cmpeq_epi32(_mm256_and_si256(n, ones), ones);
                _mm256_xor_si256(odd, _mm256_xor_si256(pos, all))
            };
            let new_x = two!(last, nx, pos_x);
            let new_z = two!(last, nz, pos_z);
            // Core's `follow`: the other axis's cell at the exit, clamped
            // into the node, never behind the lane's.
            let follow = |oc: Two<__m256>,
                          dc: Two<__m256>,
                          (n1, nf): (Two<__m256i>, Two<__m256>),
                          lo: Two<__m256i>,
                          hi: Two<__m256i>,
                          cur: Two<__m256i>,
                          pos: Two<__m256i>| {
                let x = two!(add, oc, two!(mul, t_exit, dc));
                // `as u32` of core: NaN and negatives to 0 (`max_ps` gives its
                // second operand for a NaN), at most `n` before truncating.
                let x = two!(min, two!(max, x, fzero), nf);
                let k = two!(mini, two!(|x| _mm256_cvttps_epi32(x), x), n1);
                let c = two!(maxi, two!(mini, k, two!(subi, hi, one)), lo);
                two!(pick_i, two!(mini, c, cur), two!(maxi, c, cur), pos)
            };
            let fz = follow(ocz, dcz, (vd1, vdf), z0, z1, cz, pos_z);
            let fx = follow(ocx, dcx, (vw1, vwf), x0, x1, cx, pos_x);
            let moved = two!(or, two!(andnot, off_x, step_x), two!(andnot, off_z, step_z));
            let new_parent = two!(pick_i, new_z, new_x, step_x);
            let up = two!(
                and,
                two!(and, moved, two!(gti, vtop, level)),
                two!(or, up_always, new_parent)
            );
            let ended = two!(
                or,
                two!(or, hit, corner_cell),
                two!(or, past, two!(or, off_x, off_z))
            );
            // The state after the step.
            cx = two!(pick_i, two!(pick_i, cx, fx, step_z), cx_step, step_x);
            cz = two!(pick_i, two!(pick_i, cz, fz, step_x), cz_step, step_z);
            t_lo = two!(pick, t_lo, t_exit, moved);
            // Masks are -1: subtracting one adds 1.
            level = two!(addi, two!(subi, level, up), two!(or, down, corner_down));
            if two!(|x| _mm256_testz_si256(x, x), ended) == [1, 1] {
                continue;
            }
            // Latch the answers of the lanes that ended: a hit's `t`, its
            // cell (`z * width + x`, of the cell tested) and its face (core's
            // `crossing`: the y face, else the x face, else the z face, of
            // the slab value that made the entry or exit distance).
            let t_hit = two!(pick, far, near, hit_entry);
            let cells = two!(addi, two!(|a, b| _mm256_mullo_epi32(a, b), nz, vw), nx);
            let (e_y, e_x, e_z) = (
                two!(pick_i, f_top, f_bottom, pos_y),
                two!(pick_i, f_pos_x, f_neg_x, pos_x),
                two!(pick_i, f_pos_z, f_neg_z, pos_z),
            );
            let entry_face = two!(
                pick_i,
                two!(pick_i, e_z, e_x, two!(eq, txn, near)),
                e_y,
                two!(eq, tyn, near)
            );
            let (x_y, x_x, x_z) = (
                two!(pick_i, f_bottom, f_top, pos_y),
                two!(pick_i, f_neg_x, f_pos_x, pos_x),
                two!(pick_i, f_neg_z, f_pos_z, pos_z),
            );
            let exit_face = two!(
                pick_i,
                two!(pick_i, x_z, x_x, two!(eq, txf, far)),
                x_y,
                two!(eq, tyf, far)
            );
            let kind_hit = splat_i(_mm256_set1_epi32(ENDED_HIT));
            let kind_corner = splat_i(_mm256_set1_epi32(ENDED_CORNER));
            ans_t = two!(pick, ans_t, t_hit, hit);
            ans_cell = two!(pick_i, ans_cell, cells, hit);
            ans_face = two!(
                pick_i,
                ans_face,
                two!(pick_i, exit_face, entry_face, hit_entry),
                hit
            );
            ans_kind = two!(
                pick_i,
                two!(pick_i, ans_kind, kind_hit, hit),
                kind_corner,
                corner_cell
            );
            live = two!(andnot, ended, live);
            let dead = two!(|x| (!_mm256_movemask_ps(f(x)) as u32) & 0xFF, live);
            if dead[0].count_ones() + dead[1].count_ones() < idle + REFILL_AT
                && two!(|x| _mm256_testz_si256(x, x), live) != [1, 1]
            {
                continue;
            }
            // Refill: the lanes back to memory, the ended ones' answers
            // handed out, the next rays in, and the lanes up again.
            for g in 0..2 {
                let st = &mut mem[g];
                st.cx.0 = bytemuck::cast(cx[g]);
                st.cz.0 = bytemuck::cast(cz[g]);
                st.t_lo.0 = bytemuck::cast(t_lo[g]);
                st.level.0 = bytemuck::cast(level[g]);
                let was_live: [i32; 8] = st.live.0;
                st.live.0 = bytemuck::cast(live[g]);
                st.kind.0 = bytemuck::cast(ans_kind[g]);
                st.t.0 = bytemuck::cast(ans_t[g]);
                st.cell.0 = bytemuck::cast(ans_cell[g]);
                st.face.0 = bytemuck::cast(ans_face[g]);
                hand_out(st, &was_live, &mut starter, put);
            }
            continue 'refilled;
        }
    }
}

mod lanes32;
pub(crate) use lanes32::{available16, walk16};

#[cfg(test)]
mod tests;
