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
    i: [[i32; QUEUE + 16]; 7],
    ray: [i32; QUEUE + 16],
    head: usize,
    tail: usize,
}

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
        let walking = (seen & u32::from(hit_root) & !u32::from(parallel) & lanes_mask) as K;
        let minus = _mm512_set1_epi32(-1);
        let flag = |m: K| _mm512_maskz_mov_epi32(m, minus);
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
            _mm512_set1_epi32(top.saturating_sub(1) as i32),
            flag(pos_x),
            flag(pos_y),
            flag(pos_z),
            flag(gt(dy, zero)),
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
        let lo = _mm256_loadu_ps(base.add(12 * k));
        let hi = _mm256_loadu_ps(base.add(12 * (k + 8)));
        _mm512_insertf32x8::<1>(_mm512_castps256_ps512(lo), hi)
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

/// [`walk8`] with AVX-512: two groups of sixteen walks, each lane core's
/// walk as in `walk8` (the same operations in the same order; what `walk8`
/// does with blend masks, masks of bits here). A lane whose walk ended
/// hands its answer out and takes the next started walk by compressing and
/// expanding stores and loads, every value at once, without leaving the
/// registers.
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
        i: [[0; QUEUE + 16]; 7],
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
    let and = |a: K, b: K| a & b;
    // `!a & b`.
    let andnot = |a: K, b: K| !a & b;
    let or = |a: K, b: K| a | b;

    let splat = |x: __m512| [x, x];
    let splat_i = |x: __m512i| [x, x];
    let (zero, one) = (
        splat_i(_mm512_setzero_si512()),
        splat_i(_mm512_set1_epi32(1)),
    );
    let fzero = splat(_mm512_setzero_ps());
    let vw = splat_i(_mm512_set1_epi32(w));
    let vd = splat_i(_mm512_set1_epi32(d));
    let vw1 = splat_i(_mm512_set1_epi32(w - 1));
    let vd1 = splat_i(_mm512_set1_epi32(d - 1));
    let vwf = splat(_mm512_set1_ps(w as f32));
    let vdf = splat(_mm512_set1_ps(d as f32));
    let vtop = splat_i(_mm512_set1_epi32(levels - 1));
    let vcs = splat(_mm512_set1_ps(cs));
    let widen_pos = splat(_mm512_set1_ps(SLAB_EXIT_SCALE));
    let widen_neg = splat(_mm512_set1_ps(SLAB_EXIT_SCALE_NEGATIVE));
    let face_v = |v: u32| splat_i(_mm512_set1_epi32(v as i32));
    let (f_top, f_bottom) = (face_v(FACE_TOP), face_v(FACE_BOTTOM));
    let (f_neg_x, f_pos_x) = (face_v(FACE_NEG_X), face_v(FACE_POS_X));
    let (f_neg_z, f_pos_z) = (face_v(FACE_NEG_Z), face_v(FACE_POS_Z));
    let ones = _mm512_set1_epi32(1);
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
    let entry = |idx: __m512i, ok: K| unsafe {
        _mm512_mask_i32gather_ps::<4>(_mm512_setzero_ps(), ok, idx, heights.as_ptr())
    };
    // Core's plane: `i as f32 * cell size`.
    let plane = |k: Two<__m512i>| two!(mul, two!(|x| _mm512_cvtepi32_ps(x), k), vcs);
    let mask_of = |x: __m512i| _mm512_test_epi32_mask(x, x);

    // Every lane's values and state, in registers; lanes start idle.
    let (mut ox, mut oy, mut oz) = (fzero, fzero, fzero);
    let (mut ix, mut iy, mut iz) = (fzero, fzero, fzero);
    let (mut ocx, mut ocz, mut dcx, mut dcz) = (fzero, fzero, fzero, fzero);
    let (mut ty0, mut tmin, mut tmax, mut t_lo) = (fzero, fzero, fzero, fzero);
    let (mut cx, mut cz, mut level) = (zero, zero, zero);
    let (mut pos_x, mut pos_y, mut pos_z, mut up_always): (Two<K>, Two<K>, Two<K>, Two<K>) =
        ([0; 2], [0; 2], [0; 2], [0; 2]);
    let mut ray_of = zero;
    let (mut ans_kind, mut ans_t, mut ans_cell, mut ans_face) = (zero, fzero, zero, zero);
    // Lanes walking a ray, and lanes whose walk ended with an answer not
    // yet handed out.
    let mut live: Two<K> = [0; 2];
    let mut ended_all: Two<K> = [0; 2];
    loop {
        // Hand out the ended lanes' answers, and fill every idle lane from
        // the queue (topped up first).
        for g in 0..2 {
            let done = ended_all[g];
            if done != 0 {
                let mut t = [0.0f32; 16];
                let mut cell = [0i32; 16];
                let mut face = [0i32; 16];
                let mut kind = [0i32; 16];
                let mut index = [0i32; 16];
                // SAFETY: arrays of 16 take 16 values.
                unsafe {
                    let packed = |v| _mm512_maskz_compress_epi32(done, v);
                    _mm512_storeu_ps(t.as_mut_ptr(), _mm512_maskz_compress_ps(done, ans_t[g]));
                    _mm512_storeu_si512(cell.as_mut_ptr().cast(), packed(ans_cell[g]));
                    _mm512_storeu_si512(face.as_mut_ptr().cast(), packed(ans_face[g]));
                    _mm512_storeu_si512(kind.as_mut_ptr().cast(), packed(ans_kind[g]));
                    _mm512_storeu_si512(index.as_mut_ptr().cast(), packed(ray_of[g]));
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
                ended_all[g] = 0;
            }
            let idle = !live[g];
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
                ox[g] = lf(ox[g], at::OX);
                oy[g] = lf(oy[g], at::OY);
                oz[g] = lf(oz[g], at::OZ);
                ix[g] = lf(ix[g], at::IX);
                iy[g] = lf(iy[g], at::IY);
                iz[g] = lf(iz[g], at::IZ);
                ocx[g] = lf(ocx[g], at::OCX);
                ocz[g] = lf(ocz[g], at::OCZ);
                dcx[g] = lf(dcx[g], at::DCX);
                dcz[g] = lf(dcz[g], at::DCZ);
                ty0[g] = lf(ty0[g], at::TY0);
                tmin[g] = lf(tmin[g], at::TMIN);
                tmax[g] = lf(tmax[g], at::TMAX);
                t_lo[g] = lf(t_lo[g], at::TMIN);
                cx[g] = li(cx[g], at::CX);
                cz[g] = li(cz[g], at::CZ);
                level[g] = li(level[g], at::LEVEL);
                let flags = |v: &mut K, k: usize| {
                    let x = li(_mm512_setzero_si512(), k);
                    *v = (*v & !fill) | (mask_of(x) & fill);
                };
                flags(&mut pos_x[g], at::POS_X);
                flags(&mut pos_y[g], at::POS_Y);
                flags(&mut pos_z[g], at::POS_Z);
                flags(&mut up_always[g], at::UP);
                let rays_in = _mm512_loadu_si512(queue.ray[h..].as_ptr().cast());
                ray_of[g] = _mm512_mask_expand_epi32(ray_of[g], fill, rays_in);
                ans_kind[g] =
                    _mm512_mask_mov_epi32(ans_kind[g], fill, _mm512_set1_epi32(ENDED_MISS));
            }
            queue.head += avail;
            live[g] |= fill;
        }
        if live == [0, 0] {
            return;
        }
        // Step until enough lanes have ended to refill.
        let idle = (!live[0]).count_ones() + (!live[1]).count_ones();
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
                two!(addi, off, two!(|a, b| _mm512_mullo_epi32(a, b), nz, lw)),
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
            let level0 = two!(|a, b| _mm512_cmpeq_epi32_mask(a, b), level, zero);
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
            let past_side = |c, n| _mm512_cmpge_epu32_mask(c, n);
            let off_x = two!(and, step_x, two!(past_side, cx_step, vw));
            let off_z = two!(and, step_z, two!(past_side, cz_step, vd));
            // Core's `(c >> (level + 1)) != (n >> 1)`: the node is its
            // parent's last child along the way, odd going up, even down.
            let last = |n, pos: K| _mm512_test_epi32_mask(n, ones) ^ !pos;
            let new_x = two!(last, nx, pos_x);
            let new_z = two!(last, nz, pos_z);
            // Core's `follow`: the other axis's cell at the exit, clamped
            // into the node, never behind the lane's.
            let follow = |oc: Two<__m512>,
                          dc: Two<__m512>,
                          (n1, nf): (Two<__m512i>, Two<__m512>),
                          lo: Two<__m512i>,
                          hi: Two<__m512i>,
                          cur: Two<__m512i>,
                          pos: Two<K>| {
                let x = two!(add, oc, two!(mul, t_exit, dc));
                // `as u32` of core: NaN and negatives to 0 (`max_ps` gives its
                // second operand for a NaN), at most `n` before truncating.
                let x = two!(min, two!(max, x, fzero), nf);
                let k = two!(mini, two!(|x| _mm512_cvttps_epi32(x), x), n1);
                let c = two!(maxi, two!(mini, k, two!(subi, hi, one)), lo);
                two!(pick_i, two!(mini, c, cur), two!(maxi, c, cur), pos)
            };
            let fz = follow(ocz, dcz, (vd1, vdf), z0, z1, cz, pos_z);
            let fx = follow(ocx, dcx, (vw1, vwf), x0, x1, cx, pos_x);
            let moved = two!(or, two!(andnot, off_x, step_x), two!(andnot, off_z, step_z));
            let new_parent = two!(|z: K, x: K, s: K| (s & x) | (!s & z), new_z, new_x, step_x);
            let below_top = two!(|a, b| _mm512_cmpgt_epi32_mask(a, b), vtop, level);
            let up = two!(
                and,
                two!(and, moved, below_top),
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
            let level_up = two!(|l, u: K| _mm512_mask_add_epi32(l, u, l, ones), level, up);
            level = two!(
                |l, dn: K| _mm512_mask_sub_epi32(l, dn, l, ones),
                level_up,
                two!(or, down, corner_down)
            );
            // Latch the answers of the lanes that ended: a hit's `t`, its
            // cell (`z * width + x`, of the cell tested) and its face (core's
            // `crossing`: the y face, else the x face, else the z face, of
            // the slab value that made the entry or exit distance).
            let t_hit = two!(pick, far, near, hit_entry);
            let cells = two!(addi, two!(|a, b| _mm512_mullo_epi32(a, b), nz, vw), nx);
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
            let kind_hit = splat_i(_mm512_set1_epi32(ENDED_HIT));
            let kind_corner = splat_i(_mm512_set1_epi32(ENDED_CORNER));
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
            ended_all = two!(or, ended_all, ended);
            let dead = (!live[0]).count_ones() + (!live[1]).count_ones();
            if dead >= idle + REFILL_AT_16 || live == [0, 0] {
                break;
            }
        }
    }
}
