//! The 32-lane walk of a batch over one heightfield: two AVX-512 registers of
//! sixteen lanes, refilled from a queue of started walks. The lane state and the
//! start of a walk are the parent module's, shared with the 16-lane AVX2 walk.

use super::*;

/// Whether this CPU runs the 16-lane walk ([`walk16`]).
pub(crate) fn available16() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("bmi2")
}

/// Started walks waiting for a lane of [`walk16`], value by value (a lane is
/// refilled by one expanding load a value), and the rays they start from.
struct Queue<'a> {
    hf: &'a GpuHeightfield,
    heights: &'a [f32],
    rays: &'a [Ray],
    /// The next ray of the batch to start.
    next: usize,
    /// Rays before this one have been prefetched (see [`Queue::prefetch_next`]).
    prefetched: usize,
    /// `f[k][head..tail]`: value `k` ([`at`]) of each waiting walk (16 more
    /// entries than the room: sixteen are read or written at once).
    f: [[f32; QUEUE + 16]; 13],
    /// `at::CX`, `at::CZ`, `at::LEVEL` and [`FLAGS`].
    i: [[i32; QUEUE + 16]; 4],
    ray: [i32; QUEUE + 16],
    head: usize,
    tail: usize,
}

/// The row of a [`Queue`]'s integers holding a walk's four flags as bits:
/// `at::POS_X` (bit 0), `at::POS_Y` (1), `at::POS_Z` (2), `at::UP` (3), so
/// that a refill loads them at once.
const FLAGS: usize = 3;

/// Room of a [`Queue`]: whenever fewer than sixteen walks wait (a group's
/// refill may take sixteen), it is topped up to at least [`QUEUE_FILL`]
/// (starting sixteen rays at a time), so that its walks are moved to the
/// front of its rows once every few dozen lanes refilled.
const QUEUE: usize = 128;
const QUEUE_FILL: usize = 96;

impl Queue<'_> {
    /// Waiting walks.
    fn len(&self) -> usize {
        self.tail - self.head
    }

    /// Where fewer than sixteen walks wait: start rays sixteen at a time
    /// until at least [`QUEUE_FILL`] walks wait or every ray is started,
    /// answering those that need no walk of a lane (`start8`'s rule).
    #[target_feature(enable = "avx512f,avx2")]
    fn top_up(&mut self, put: &mut dyn FnMut(usize, Option<HeightfieldHit>)) {
        if self.len() >= 16 || self.next >= self.rays.len() {
            return;
        }
        // Move the waiting walks to the front.
        let (head, n) = (self.head, self.len());
        for v in &mut self.f {
            v.copy_within(head..head + n, 0);
        }
        for v in &mut self.i {
            v.copy_within(head..head + n, 0);
        }
        self.ray.copy_within(head..head + n, 0);
        (self.head, self.tail) = (0, n);
        while self.len() < QUEUE_FILL && self.next < self.rays.len() {
            self.start16(put);
        }
        self.prefetch_next();
    }

    /// Start fetching the rays the next top-up starts (at most
    /// [`QUEUE_FILL`] + 16 from the next), which the walks run meanwhile
    /// hide: a start's gathers of each ray's words otherwise wait on memory
    /// for the batch's lines (a fifth of the walk's time on a camera's rays).
    #[target_feature(enable = "avx512f,avx2")]
    fn prefetch_next(&mut self) {
        let end = (self.next + QUEUE_FILL + 16).min(self.rays.len());
        let from = self.prefetched.max(self.next);
        if from >= end {
            return;
        }
        self.prefetched = end;
        let bytes = self.rays[from..end].as_ptr_range();
        let (first, last) = (bytes.start as usize & !63, bytes.end as usize);
        for line in (first..last).step_by(64) {
            // A hint only: prefetching any address is sound.
            _mm_prefetch::<_MM_HINT_T0>(line as *const i8);
        }
    }

    /// `Starter::start8` on the next sixteen rays (fewer at the batch's end),
    /// the walking ones' values stored at the queue's tail.
    #[target_feature(enable = "avx512f,avx2")]
    fn start16(&mut self, put: &mut dyn FnMut(usize, Option<HeightfieldHit>)) {
        let first = self.next;
        let n = (self.rays.len() - first).min(16);
        self.next += n;
        // The rays' words gathered across the lanes: a `Ray` is twelve
        // words, `ox oy oz tmin dx dy dz tmax mask 0 0 0` (stores of each
        // word into arrays read back whole would wait on every store).
        let lanes_mask = (1u32 << n) - 1;
        let present = lanes_mask as __mmask16;
        let base: *const f32 = self.rays[first..].as_ptr().cast();
        let stride = _mm512_mullo_epi32(
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            _mm512_set1_epi32(12),
        );
        // SAFETY: lanes below `n` read words 0..9 of rays `first..first + n`.
        let word = |k: i32, absent: f32| unsafe {
            let idx = _mm512_add_epi32(stride, _mm512_set1_epi32(k));
            _mm512_mask_i32gather_ps::<4>(_mm512_set1_ps(absent), present, idx, base)
        };
        let [ox, oy, oz, vtmin, dx, dy, dz, vtmax] = if n == 16 {
            // SAFETY: the sixteen rays `first..first + 16` lie in `rays`.
            unsafe { words16(base) }
        } else {
            [
                word(0, 0.0),
                word(1, 0.0),
                word(2, 0.0),
                word(3, 0.0),
                word(4, 1.0),
                word(5, 1.0),
                word(6, 1.0),
                word(7, 0.0),
            ]
        };
        let masks = _mm512_castps_si512(word(8, 0.0));
        let seen = u32::from(_mm512_test_epi32_mask(masks, _mm512_set1_epi32(0xFF)));
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
        type K = __mmask16;
        let lt = |a, b| _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, b);
        let le = |a, b| _mm512_cmp_ps_mask::<_CMP_LE_OQ>(a, b);
        let gt = |a, b| _mm512_cmp_ps_mask::<_CMP_GT_OQ>(a, b);
        let ge = |a, b| _mm512_cmp_ps_mask::<_CMP_GE_OQ>(a, b);
        let eq = |a, b| _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(a, b);
        let pick = |a, b, m: K| _mm512_mask_blend_ps(m, a, b);
        let (zero, one) = (_mm512_setzero_ps(), _mm512_set1_ps(1.0));
        let (inf, ninf) = (
            _mm512_set1_ps(f32::INFINITY),
            _mm512_set1_ps(f32::NEG_INFINITY),
        );
        // RayPre::new: 1 / d, a component below MIN_DIR_COMPONENT in size
        // replaced by it (with its sign).
        let sign = _mm512_set1_epi32(i32::MIN);
        let min_c = _mm512_set1_ps(MIN_DIR_COMPONENT);
        let safe = |c: __m512| {
            let bits = _mm512_castps_si512(c);
            let small = lt(_mm512_abs_ps(c), min_c);
            let signed = _mm512_or_si512(_mm512_and_si512(bits, sign), _mm512_castps_si512(min_c));
            pick(c, _mm512_castsi512_ps(signed), small)
        };
        let (ix, iy, iz) = (
            _mm512_div_ps(one, safe(dx)),
            _mm512_div_ps(one, safe(dy)),
            _mm512_div_ps(one, safe(dz)),
        );
        let (par_x, par_y, par_z) = (eq(dx, zero), eq(dy, zero), eq(dz, zero));
        let (pos_x, pos_y, pos_z) = (gt(ix, zero), gt(iy, zero), gt(iz, zero));
        let ty0 = _mm512_mul_ps(_mm512_sub_ps(zero, oy), iy);
        let vinv_cs = _mm512_set1_ps(inv_cs);
        let (pw, pd) = (
            _mm512_set1_ps(w as f32 * cs),
            _mm512_set1_ps(dd as f32 * cs),
        );
        let vm = _mm512_set1_ps(m);
        let slab = |o, inv, pos, par, hi| {
            let ta = _mm512_mul_ps(_mm512_sub_ps(zero, o), inv);
            let tb = _mm512_mul_ps(_mm512_sub_ps(hi, o), inv);
            (
                pick(pick(tb, ta, pos), ninf, par),
                pick(pick(ta, tb, pos), inf, par),
            )
        };
        let (txn, txf) = slab(ox, ix, pos_x, par_x, pw);
        let (tzn, tzf) = slab(oz, iz, pos_z, par_z, pd);
        let th = _mm512_mul_ps(_mm512_sub_ps(vm, oy), iy);
        let y_in = le(zero, oy) & le(oy, vm);
        let tyn = pick(pick(th, ty0, pos_y), pick(inf, ninf, y_in), par_y);
        let tyf = pick(pick(ty0, th, pos_y), pick(ninf, inf, y_in), par_y);
        let near = _mm512_max_ps(_mm512_max_ps(txn, tzn), tyn);
        let far = _mm512_min_ps(_mm512_min_ps(txf, tzf), tyf);
        let scale = pick(
            _mm512_set1_ps(SLAB_EXIT_SCALE),
            _mm512_set1_ps(SLAB_EXIT_SCALE_NEGATIVE),
            lt(far, zero),
        );
        let far = _mm512_mul_ps(far, scale);
        let inside = |o, hi| le(zero, o) & le(o, hi);
        let outside = (!inside(ox, pw) & par_x) | (!inside(oz, pd) & par_z);
        let hit_root = !outside & gt(vm, zero) & le(near, far) & lt(near, vtmax) & gt(far, vtmin);
        let parallel = par_x | par_y | par_z;
        let t0 = _mm512_max_ps(near, vtmin);
        let cell_of = |v, n: u32| {
            let nf = _mm512_set1_ps(n as f32);
            let x = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v, vinv_cs), zero), nf);
            let k = _mm512_min_epi32(_mm512_cvttps_epi32(x), _mm512_set1_epi32(n as i32 - 1));
            let k1 = _mm512_add_epi32(k, _mm512_set1_epi32(1));
            let plane = |k| _mm512_mul_ps(_mm512_cvtepi32_ps(k), _mm512_set1_ps(cs));
            let dec = _mm512_cmpgt_epi32_mask(k, _mm512_setzero_si512()) & lt(v, plane(k));
            let inc =
                !dec & _mm512_cmpgt_epi32_mask(_mm512_set1_epi32(n as i32), k1) & ge(v, plane(k1));
            let k = _mm512_mask_sub_epi32(k, dec, k, _mm512_set1_epi32(1));
            _mm512_mask_add_epi32(k, inc, k, _mm512_set1_epi32(1))
        };
        let cx = cell_of(_mm512_add_ps(ox, _mm512_mul_ps(t0, dx)), w);
        let cz = cell_of(_mm512_add_ps(oz, _mm512_mul_ps(t0, dz)), dd);
        // Core's `Walk::start_level`: a descending ray starts where its run
        // to the ground says (`start_level_of_run`, bit for bit: the
        // exponents' difference of the two products), others below the root.
        let below_root = top.saturating_sub(1) as i32;
        let start_level = {
            let h0 = _mm512_add_ps(oy, _mm512_mul_ps(t0, dy));
            let across = _mm512_max_ps(_mm512_abs_ps(dx), _mm512_abs_ps(dz));
            let a = _mm512_mul_ps(h0, across);
            let b = _mm512_mul_ps(_mm512_sub_ps(zero, dy), _mm512_set1_ps(cs));
            let (ab, bb) = (_mm512_castps_si512(a), _mm512_castps_si512(b));
            let significand = _mm512_set1_epi32(0x7F_FFFF);
            let smaller = _mm512_cmplt_epu32_mask(
                _mm512_and_si512(ab, significand),
                _mm512_and_si512(bb, significand),
            );
            let log2 = _mm512_sub_epi32(_mm512_srli_epi32::<23>(ab), _mm512_srli_epi32::<23>(bb));
            let log2 = _mm512_mask_sub_epi32(log2, smaller, log2, _mm512_set1_epi32(1));
            let level = _mm512_min_epi32(
                _mm512_max_epi32(
                    _mm512_sub_epi32(log2, _mm512_set1_epi32(1)),
                    _mm512_setzero_si512(),
                ),
                _mm512_set1_epi32(below_root),
            );
            // `a` NaN, below the least normal (negatives too): 0; `b` below
            // it or `a` infinite: below the root.
            let normal = _mm512_set1_ps(f32::MIN_POSITIVE);
            let a_normal = ge(a, normal);
            let level = _mm512_maskz_mov_epi32(a_normal, level);
            let top_start = a_normal & (!ge(b, normal) | eq(a, _mm512_set1_ps(f32::INFINITY)));
            let level = _mm512_mask_mov_epi32(level, top_start, _mm512_set1_epi32(below_root));
            _mm512_mask_blend_epi32(lt(dy, zero), _mm512_set1_epi32(below_root), level)
        };
        let walking = (seen & u32::from(hit_root) & !u32::from(parallel) & lanes_mask) as K;
        let flag = |m: K, bit: i32| _mm512_maskz_mov_epi32(m, _mm512_set1_epi32(bit));
        let index = _mm512_add_epi32(
            _mm512_set1_epi32(first as i32),
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        );
        let values = [
            ox,
            oy,
            oz,
            ix,
            iy,
            iz,
            _mm512_mul_ps(ox, vinv_cs),
            _mm512_mul_ps(oz, vinv_cs),
            _mm512_mul_ps(dx, vinv_cs),
            _mm512_mul_ps(dz, vinv_cs),
            ty0,
            vtmin,
            vtmax,
        ];
        let ints = [
            cx,
            cz,
            start_level,
            _mm512_or_si512(
                _mm512_or_si512(flag(pos_x, 1), flag(pos_y, 2)),
                _mm512_or_si512(flag(pos_z, 4), flag(gt(dy, zero), 8)),
            ),
        ];
        let tail = self.tail;
        // SAFETY (the stores): sixteen values from the tail, which stays
        // below QUEUE (it is topped up only below QUEUE_FILL, and QUEUE_FILL
        // + 16 <= QUEUE), in rows of QUEUE + 16. The walking rays' values are
        // packed first in the register (a compressing store to memory is
        // slow on some CPUs).
        unsafe {
            for (dst, v) in self.f.iter_mut().zip(values) {
                _mm512_storeu_ps(
                    dst[tail..].as_mut_ptr(),
                    _mm512_maskz_compress_ps(walking, v),
                );
            }
            for (dst, v) in self.i.iter_mut().zip(ints) {
                _mm512_storeu_si512(
                    dst[tail..].as_mut_ptr().cast(),
                    _mm512_maskz_compress_epi32(walking, v),
                );
            }
            _mm512_storeu_si512(
                self.ray[tail..].as_mut_ptr().cast(),
                _mm512_maskz_compress_epi32(walking, index),
            );
        }
        self.tail += walking.count_ones() as usize;
        // The rays that need no walk of a lane.
        let mut rest = lanes_mask & !u32::from(walking);
        while rest != 0 {
            let k = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let ray = &self.rays[first + k];
            let answer = (seen & u32::from(hit_root) & u32::from(parallel) & (1 << k) != 0)
                .then(|| {
                    ray_heightfield(&RayPre::new(ray), self.hf, self.heights, ray.tmin, ray.tmax)
                })
                .flatten();
            put(first + k, answer);
        }
    }
}

/// The first eight words of sixteen rays from `base` (`ox oy oz tmin dx dy
/// dz tmax`), one register a word, lane `k` ray `k`: eight loads of two rays
/// and an 8x8 transpose in each half. Cheaper than a gather a word (sixteen
/// loads each, and the first waits on all twelve lines of the rays).
///
/// # Safety
/// `base` points at sixteen consecutive [`Ray`]s.
#[target_feature(enable = "avx512f,avx2")]
unsafe fn words16(base: *const f32) -> [__m512; 8] {
    // Register k: ray k's words in its low half, ray k + 8's in its high.
    // SAFETY: ray k and ray k + 8 are among the sixteen (the caller's).
    let row = |k: usize| unsafe {
        let lo = _mm256_castps_pd(_mm256_loadu_ps(base.add(12 * k)));
        let hi = _mm256_castps_pd(_mm256_loadu_ps(base.add(12 * (k + 8))));
        // As four doubles: `_mm512_insertf32x8` needs AVX-512DQ, which this
        // function does not take (it was called, not inlined).
        _mm512_castpd_ps(_mm512_insertf64x4::<1>(_mm512_castpd256_pd512(lo), hi))
    };
    let a: [__m512; 8] = core::array::from_fn(row);
    // Within each 128-bit lane: pairs, then quads of rays (the 4x4 step).
    let t0 = _mm512_unpacklo_ps(a[0], a[1]);
    let t1 = _mm512_unpackhi_ps(a[0], a[1]);
    let t2 = _mm512_unpacklo_ps(a[2], a[3]);
    let t3 = _mm512_unpackhi_ps(a[2], a[3]);
    let t4 = _mm512_unpacklo_ps(a[4], a[5]);
    let t5 = _mm512_unpackhi_ps(a[4], a[5]);
    let t6 = _mm512_unpacklo_ps(a[6], a[7]);
    let t7 = _mm512_unpackhi_ps(a[6], a[7]);
    let u0 = _mm512_shuffle_ps::<0x44>(t0, t2);
    let u1 = _mm512_shuffle_ps::<0xEE>(t0, t2);
    let u2 = _mm512_shuffle_ps::<0x44>(t1, t3);
    let u3 = _mm512_shuffle_ps::<0xEE>(t1, t3);
    let u4 = _mm512_shuffle_ps::<0x44>(t4, t6);
    let u5 = _mm512_shuffle_ps::<0xEE>(t4, t6);
    let u6 = _mm512_shuffle_ps::<0x44>(t5, t7);
    let u7 = _mm512_shuffle_ps::<0xEE>(t5, t7);
    // `u0` holds word 0 of rays 0-3 (lane 0), word 4 of them (lane 1), and
    // the same of rays 8-11 (lanes 2, 3); `u4` those of rays 4-7 and 12-15.
    // Words 0-3 take the low lane of each half, words 4-7 the high one.
    let low = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
    let high = _mm512_setr_epi32(4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
    let join = |a, b, idx| _mm512_permutex2var_ps(a, idx, b);
    [
        join(u0, u4, low),
        join(u1, u5, low),
        join(u2, u6, low),
        join(u3, u7, low),
        join(u0, u4, high),
        join(u1, u5, high),
        join(u2, u6, high),
        join(u3, u7, high),
    ]
}

/// A step's slab values of a group's lanes (see `slabs!` in [`walk16`]).
struct Slabs {
    nx: __m512i,
    nz: __m512i,
    x0: __m512i,
    z0: __m512i,
    x1: __m512i,
    z1: __m512i,
    txn: __m512,
    txf: __m512,
    tzf: __m512,
    tyn: __m512,
    tyf: __m512,
    near: __m512,
    far: __m512,
    farw: __m512,
    level0: __mmask16,
    filled: __mmask16,
    hit_entry: __mmask16,
    hit_exit: __mmask16,
}

/// One group of sixteen walks: each lane's ray values and walk state (as
/// `walk8`'s lanes hold them), how its walk ended, and the height of the
/// node its next step tests, gathered at the end of the step before.
#[derive(Clone, Copy)]
struct Group {
    ox: __m512,
    oy: __m512,
    oz: __m512,
    ix: __m512,
    iy: __m512,
    iz: __m512,
    ocx: __m512,
    ocz: __m512,
    dcx: __m512,
    dcz: __m512,
    ty0: __m512,
    tmin: __m512,
    tmax: __m512,
    t_lo: __m512,
    cx: __m512i,
    cz: __m512i,
    level: __m512i,
    pos_x: __mmask16,
    pos_y: __mmask16,
    pos_z: __mmask16,
    up_always: __mmask16,
    ray_of: __m512i,
    /// Lanes walking a ray.
    live: __mmask16,
    /// Lanes whose walk ended with an answer not yet handed out; of them,
    /// those that ended at a crossing, and those that reached a corner. An
    /// ended lane's state is left as its last step found it, so that the
    /// hand-out works its crossing out again (the same operations on the
    /// same values) instead of every step latching each lane's answer.
    ended: __mmask16,
    hit: __mmask16,
    corner: __mmask16,
    /// The height of each walking (or ended) lane's node.
    m: __m512,
}

impl Group {
    /// Sixteen idle lanes.
    #[target_feature(enable = "avx512f")]
    fn idle() -> Self {
        let (f, i) = (_mm512_setzero_ps(), _mm512_setzero_si512());
        Group {
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
            pos_x: 0,
            pos_y: 0,
            pos_z: 0,
            up_always: 0,
            ray_of: i,
            live: 0,
            ended: 0,
            hit: 0,
            corner: 0,
            m: f,
        }
    }
}

/// [`walk8`] with AVX-512: two groups of sixteen walks, each lane core's
/// walk as in `walk8` (the same operations in the same order; what `walk8`
/// does with blend masks, masks of bits here). A lane whose walk ended
/// hands its answer out and takes the next started walk by compressing and
/// expanding stores and loads, every value at once, without leaving the
/// registers.
///
/// The groups step one after the other, each ending its step with the
/// gather of the heights its next step tests: that gather's wait is spent
/// on the other group's step (stepped side by side, both groups waited on
/// their gathers at once, a fifth of the walk's time).
#[target_feature(enable = "avx512f,avx2,bmi2")]
pub(crate) fn walk16<F: FnMut(usize, Option<HeightfieldHit>) + ?Sized>(
    hf: &GpuHeightfield,
    heights: &[f32],
    rays: &[Ray],
    put: &mut F,
) {
    let (w, d, levels) = (hf.dims[0] as i32, hf.dims[1] as i32, hf.dims[2] as i32);
    let cs = hf.scale[0];
    let mut offsets = [0i32; HEIGHTFIELD_MAX_LEVELS];
    for (k, o) in offsets.iter_mut().enumerate() {
        *o = hf.level_offset[k / 4][k % 4] as i32;
    }
    let mut queue = Box::new(Queue {
        hf,
        heights,
        rays,
        next: 0,
        prefetched: 0,
        f: [[0.0; QUEUE + 16]; 13],
        i: [[0; QUEUE + 16]; 4],
        ray: [0; QUEUE + 16],
        head: 0,
        tail: 0,
    });

    type K = __mmask16;
    let add = |a, b| _mm512_add_ps(a, b);
    let sub = |a, b| _mm512_sub_ps(a, b);
    let mul = |a, b| _mm512_mul_ps(a, b);
    let max = |a, b| _mm512_max_ps(a, b);
    let min = |a, b| _mm512_min_ps(a, b);
    let addi = |a, b| _mm512_add_epi32(a, b);
    let subi = |a, b| _mm512_sub_epi32(a, b);
    let mini = |a, b| _mm512_min_epi32(a, b);
    let maxi = |a, b| _mm512_max_epi32(a, b);
    let srlv = |a, b| _mm512_srlv_epi32(a, b);
    let sllv = |a, b| _mm512_sllv_epi32(a, b);
    let lt = |a, b| _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, b);
    let le = |a, b| _mm512_cmp_ps_mask::<_CMP_LE_OQ>(a, b);
    let gt = |a, b| _mm512_cmp_ps_mask::<_CMP_GT_OQ>(a, b);
    let ge = |a, b| _mm512_cmp_ps_mask::<_CMP_GE_OQ>(a, b);
    let eq = |a, b| _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(a, b);
    let nlt = |a, b| _mm512_cmp_ps_mask::<_CMP_NLT_UQ>(a, b);
    // `a` where `m` is clear, `b` where it is set.
    let pick = |a, b, m: K| _mm512_mask_blend_ps(m, a, b);
    let pick_i = |a, b, m: K| _mm512_mask_blend_epi32(m, a, b);

    let (zero, one) = (_mm512_setzero_si512(), _mm512_set1_epi32(1));
    let fzero = _mm512_setzero_ps();
    let vw = _mm512_set1_epi32(w);
    let vd = _mm512_set1_epi32(d);
    let vw1 = _mm512_set1_epi32(w - 1);
    let vd1 = _mm512_set1_epi32(d - 1);
    let vwf = _mm512_set1_ps(w as f32);
    let vdf = _mm512_set1_ps(d as f32);
    let vtop = _mm512_set1_epi32(levels - 1);
    let vcs = _mm512_set1_ps(cs);
    let widen_pos = _mm512_set1_ps(SLAB_EXIT_SCALE);
    let widen_neg = _mm512_set1_ps(SLAB_EXIT_SCALE_NEGATIVE);
    let face_v = |v: u32| _mm512_set1_epi32(v as i32);
    let (f_top, f_bottom) = (face_v(FACE_TOP), face_v(FACE_BOTTOM));
    let (f_neg_x, f_pos_x) = (face_v(FACE_NEG_X), face_v(FACE_POS_X));
    let (f_neg_z, f_pos_z) = (face_v(FACE_NEG_Z), face_v(FACE_POS_Z));
    // The first entry of each level: up to 16 levels by one permute, more
    // by a gather.
    // SAFETY: `offsets` holds 32 values, 16 read.
    let offsets16 = unsafe { _mm512_loadu_si512(offsets.as_ptr().cast()) };
    let level_offset = |level: __m512i| -> __m512i {
        if levels <= 16 {
            _mm512_permutexvar_epi32(level, offsets16)
        } else {
            // SAFETY: every level of a walk lies in 0..levels, within `offsets`.
            unsafe { _mm512_i32gather_epi32::<4>(level, offsets.as_ptr()) }
        }
    };
    // SAFETY (the closure's gather): only walking lanes read, whose index
    // lies in `heights` (see where it is called).
    let entry = |kept: __m512, idx: __m512i, ok: K| unsafe {
        _mm512_mask_i32gather_ps::<4>(kept, ok, idx, heights.as_ptr())
    };
    // Core's plane: `i as f32 * cell size`.
    let plane = |k: __m512i| mul(_mm512_cvtepi32_ps(k), vcs);
    // Off the grid: at or past the side as an unsigned number (-1, before
    // the first cell, is past every side).
    let past_side = |c, n| _mm512_cmpge_epu32_mask(c, n);
    // Core's `(c >> (level + 1)) != (n >> 1)`: the node is its parent's
    // last child along the way, odd going up, even down.
    let last = |n, pos: K| _mm512_test_epi32_mask(n, one) ^ !pos;
    // Core's `follow`: the other axis's cell at the exit `t`, clamped into
    // the node `lo..hi`, never behind the lane's `cur`.
    let follow = |oc, dc, t, n1, nf, lo, hi, cur, pos: K| {
        let x = add(oc, mul(t, dc));
        // `as u32` of core: NaN and negatives to 0 (`max_ps` gives its
        // second operand for a NaN), at most `n` before truncating.
        let x = min(max(x, fzero), nf);
        let k = mini(_mm512_cvttps_epi32(x), n1);
        let c = maxi(mini(k, subi(hi, one)), lo);
        pick_i(mini(c, cur), maxi(c, cur), pos)
    };

    // The heights of the nodes holding each walking lane's cell (a column
    // at level 0): a walking lane's cell lies in the grid and its level in
    // the pyramid, which `walkable` found inside `heights`.
    macro_rules! gather_heights {
        ($s:expr) => {{
            let s: &mut Group = $s;
            let nx = srlv(s.cx, s.level);
            let nz = srlv(s.cz, s.level);
            let lw = addi(srlv(vw1, s.level), one);
            let idx = addi(addi(level_offset(s.level), _mm512_mullo_epi32(nz, lw)), nx);
            s.m = entry(s.m, idx, s.live);
        }};
    }

    // Core's `slabs` of each lane's node, and which lanes cross their
    // column at level 0 (by its entry or its exit): the step's tests, and
    // the hand-out's, which works out an ended lane's crossing again.
    macro_rules! slabs {
        ($s:expr) => {{
            let s: &Group = $s;
            let (cx, cz, level) = (s.cx, s.cz, s.level);
            let nx = srlv(cx, level);
            let nz = srlv(cz, level);
            let x0 = sllv(nx, level);
            let z0 = sllv(nz, level);
            let x1 = mini(sllv(addi(nx, one), level), vw);
            let z1 = mini(sllv(addi(nz, one), level), vd);
            let m = s.m;
            let ta = mul(sub(plane(x0), s.ox), s.ix);
            let tb = mul(sub(plane(x1), s.ox), s.ix);
            let (txn, txf) = (pick(tb, ta, s.pos_x), pick(ta, tb, s.pos_x));
            let ta = mul(sub(plane(z0), s.oz), s.iz);
            let tb = mul(sub(plane(z1), s.oz), s.iz);
            let (tzn, tzf) = (pick(tb, ta, s.pos_z), pick(ta, tb, s.pos_z));
            let th = mul(sub(m, s.oy), s.iy);
            let (tyn, tyf) = (pick(th, s.ty0, s.pos_y), pick(s.ty0, th, s.pos_y));
            let near = max(max(txn, tzn), tyn);
            let far = min(min(txf, tzf), tyf);
            let farw = mul(far, pick(widen_pos, widen_neg, lt(far, fzero)));
            let level0 = _mm512_cmpeq_epi32_mask(level, zero);
            let filled = gt(m, fzero);
            // Level 0: core's `crossing` of the column.
            let touched = level0 & filled & le(near, farw);
            let entered = gt(near, s.tmin);
            let hit_entry = touched & entered & lt(near, s.tmax);
            let hit_exit = !entered & touched & gt(far, s.tmin) & lt(far, s.tmax);
            Slabs {
                nx,
                nz,
                x0,
                z0,
                x1,
                z1,
                txn,
                txf,
                tzf,
                tyn,
                tyf,
                near,
                far,
                farw,
                level0,
                filled,
                hit_entry,
                hit_exit,
            }
        }};
    }

    // One step of a group's walks with the heights gathered for it, then
    // the gather for the next.
    macro_rules! step {
        ($s:expr) => {{
            let s: &mut Group = $s;
            let (cx, cz, level, live) = (s.cx, s.cz, s.level, s.live);
            let Slabs {
                nx,
                nz,
                x0,
                z0,
                x1,
                z1,
                txf,
                tzf,
                tyn,
                farw,
                level0,
                filled,
                hit_entry,
                hit_exit,
                ..
            } = slabs!(&*s);
            let hit = live & (hit_entry | hit_exit);
            // Above: the node test, down a level where the node may hold a
            // crossing (its entry distance: the y slab's, as core's).
            let down = !level0 & live & filled & le(tyn, farw) & lt(tyn, s.tmax) & ge(farw, s.t_lo);
            // Across: leave the node by its nearer exit.
            let across = !(hit | down) & live;
            let t_exit = min(txf, tzf);
            let past = across & nlt(t_exit, s.tmax);
            let going = !past & across;
            let corner = going & eq(txf, tzf);
            let corner_down = !level0 & corner;
            let corner_cell = level0 & corner;
            let x_first = lt(txf, tzf);
            let step_x = !corner & going & x_first;
            let step_z = !corner & !x_first & going;
            let cx_step = pick_i(subi(x0, one), x1, s.pos_x);
            let cz_step = pick_i(subi(z0, one), z1, s.pos_z);
            let off_x = step_x & past_side(cx_step, vw);
            let off_z = step_z & past_side(cz_step, vd);
            let new_x = last(nx, s.pos_x);
            let new_z = last(nz, s.pos_z);
            let fz = follow(s.ocz, s.dcz, t_exit, vd1, vdf, z0, z1, cz, s.pos_z);
            let fx = follow(s.ocx, s.dcx, t_exit, vw1, vwf, x0, x1, cx, s.pos_x);
            let moved = (!off_x & step_x) | (!off_z & step_z);
            let new_parent = (step_x & new_x) | (!step_x & new_z);
            let below_top = _mm512_cmpgt_epi32_mask(vtop, level);
            let up = moved & below_top & (s.up_always | new_parent);
            let ended = hit | corner_cell | past | off_x | off_z;
            // The state after the step (a lane that ended keeps its own:
            // no step moves it).
            s.cx = pick_i(pick_i(cx, fx, step_z), cx_step, step_x);
            s.cz = pick_i(pick_i(cz, fz, step_x), cz_step, step_z);
            s.t_lo = pick(s.t_lo, t_exit, moved);
            let level_up = _mm512_mask_add_epi32(level, up, level, one);
            s.level = _mm512_mask_sub_epi32(level_up, down | corner_down, level_up, one);
            s.live = !ended & live;
            s.ended |= ended;
            s.hit |= hit;
            s.corner |= corner_cell;
            gather_heights!(s);
        }};
    }

    // Lanes start idle.
    let mut grp = [Group::idle(), Group::idle()];
    loop {
        // Hand out the ended lanes' answers, and fill every idle lane from
        // the queue (topped up first).
        for s in &mut grp {
            let done = s.ended;
            if done != 0 {
                // The crossing of each lane that ended at one: a hit's `t`,
                // its cell (`z * width + x`, of the cell tested) and its
                // face (core's `crossing`: the y face, else the x face,
                // else the z face, of the slab value that made the entry or
                // exit distance).
                let Slabs {
                    nx,
                    nz,
                    txn,
                    txf,
                    tyn,
                    tyf,
                    near,
                    far,
                    hit_entry,
                    ..
                } = slabs!(&*s);
                let t_hit = pick(far, near, hit_entry);
                let cells = addi(_mm512_mullo_epi32(nz, vw), nx);
                let (e_y, e_x, e_z) = (
                    pick_i(f_top, f_bottom, s.pos_y),
                    pick_i(f_pos_x, f_neg_x, s.pos_x),
                    pick_i(f_pos_z, f_neg_z, s.pos_z),
                );
                let entry_face = pick_i(pick_i(e_z, e_x, eq(txn, near)), e_y, eq(tyn, near));
                let (x_y, x_x, x_z) = (
                    pick_i(f_bottom, f_top, s.pos_y),
                    pick_i(f_neg_x, f_pos_x, s.pos_x),
                    pick_i(f_neg_z, f_pos_z, s.pos_z),
                );
                let exit_face = pick_i(pick_i(x_z, x_x, eq(txf, far)), x_y, eq(tyf, far));
                let faces = pick_i(exit_face, entry_face, hit_entry);
                let kinds = pick_i(
                    pick_i(
                        _mm512_set1_epi32(ENDED_MISS),
                        _mm512_set1_epi32(ENDED_HIT),
                        s.hit,
                    ),
                    _mm512_set1_epi32(ENDED_CORNER),
                    s.corner,
                );
                let mut t = [0.0f32; 16];
                let mut cell = [0i32; 16];
                let mut face = [0i32; 16];
                let mut kind = [0i32; 16];
                let mut index = [0i32; 16];
                // SAFETY: arrays of 16 take 16 values.
                unsafe {
                    let packed = |v| _mm512_maskz_compress_epi32(done, v);
                    _mm512_storeu_ps(t.as_mut_ptr(), _mm512_maskz_compress_ps(done, t_hit));
                    _mm512_storeu_si512(cell.as_mut_ptr().cast(), packed(cells));
                    _mm512_storeu_si512(face.as_mut_ptr().cast(), packed(faces));
                    _mm512_storeu_si512(kind.as_mut_ptr().cast(), packed(kinds));
                    _mm512_storeu_si512(index.as_mut_ptr().cast(), packed(s.ray_of));
                }
                for k in 0..done.count_ones() as usize {
                    let i = index[k] as usize;
                    // One call a kind, so that a hit reaches `put` in
                    // registers (an answer made in memory by the arms
                    // together was read back wider than it was written).
                    match kind[k] {
                        ENDED_HIT => put(
                            i,
                            Some(HeightfieldHit {
                                t: t[k],
                                cell: cell[k] as u32,
                                face: face[k] as u32,
                            }),
                        ),
                        // Through a cell's corner: core walks the ray whole.
                        ENDED_CORNER => put(
                            i,
                            rays.get(i).and_then(|ray| {
                                ray_heightfield(&RayPre::new(ray), hf, heights, ray.tmin, ray.tmax)
                            }),
                        ),
                        _ => put(i, None),
                    }
                }
                (s.ended, s.hit, s.corner) = (0, 0, 0);
            }
            let idle = !s.live;
            if idle == 0 {
                continue;
            }
            queue.top_up(&mut |i, h| put(i, h));
            let avail = queue.len().min(idle.count_ones() as usize);
            if avail == 0 {
                continue;
            }
            // The lowest `avail` idle lanes.
            let fill = _pdep_u32(((1u64 << avail) - 1) as u32, u32::from(idle)) as K;
            let h = queue.head;
            // SAFETY (the loads): `avail` values wait from `head` in each
            // row, sixteen are read (rows of QUEUE + 16, head below QUEUE);
            // spread into the lanes in the register (an expanding load from
            // memory is slow on some CPUs).
            unsafe {
                let lf = |v: __m512, k: usize| {
                    _mm512_mask_expand_ps(v, fill, _mm512_loadu_ps(queue.f[k][h..].as_ptr()))
                };
                let li = |v: __m512i, k: usize| {
                    let x = _mm512_loadu_si512(queue.i[k][h..].as_ptr().cast());
                    _mm512_mask_expand_epi32(v, fill, x)
                };
                s.ox = lf(s.ox, at::OX);
                s.oy = lf(s.oy, at::OY);
                s.oz = lf(s.oz, at::OZ);
                s.ix = lf(s.ix, at::IX);
                s.iy = lf(s.iy, at::IY);
                s.iz = lf(s.iz, at::IZ);
                s.ocx = lf(s.ocx, at::OCX);
                s.ocz = lf(s.ocz, at::OCZ);
                s.dcx = lf(s.dcx, at::DCX);
                s.dcz = lf(s.dcz, at::DCZ);
                s.ty0 = lf(s.ty0, at::TY0);
                s.tmin = lf(s.tmin, at::TMIN);
                s.tmax = lf(s.tmax, at::TMAX);
                s.t_lo = _mm512_mask_mov_ps(s.t_lo, fill, s.tmin);
                s.cx = li(s.cx, at::CX);
                s.cz = li(s.cz, at::CZ);
                s.level = li(s.level, at::LEVEL);
                let bits = li(_mm512_setzero_si512(), FLAGS);
                let flag = |v: &mut K, bit: i32| {
                    let set = _mm512_test_epi32_mask(bits, _mm512_set1_epi32(bit));
                    *v = (*v & !fill) | (set & fill);
                };
                flag(&mut s.pos_x, 1);
                flag(&mut s.pos_y, 2);
                flag(&mut s.pos_z, 4);
                flag(&mut s.up_always, 8);
                let rays_in = _mm512_loadu_si512(queue.ray[h..].as_ptr().cast());
                s.ray_of = _mm512_mask_expand_epi32(s.ray_of, fill, rays_in);
            }
            queue.head += avail;
            s.live |= fill;
            gather_heights!(s);
        }
        if grp[0].live == 0 && grp[1].live == 0 {
            return;
        }
        // Step until enough lanes have ended to refill.
        let idle = (!grp[0].live).count_ones() + (!grp[1].live).count_ones();
        loop {
            let [g0, g1] = &mut grp;
            step!(g0);
            step!(g1);
            let dead = (!grp[0].live).count_ones() + (!grp[1].live).count_ones();
            if dead >= idle + REFILL_AT_16 || (grp[0].live == 0 && grp[1].live == 0) {
                break;
            }
        }
    }
}
