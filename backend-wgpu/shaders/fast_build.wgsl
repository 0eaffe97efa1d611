// The fast tree built on the device: mirrors prism_core::lbvh::build pass for
// pass, as backend-cuda/kernels/fast_build.cuh does (Morton codes, a stable
// sort, Karras's radix tree, boxes and SAH leaf merges bottom-up, the
// depth-first layout), so that the device builds core's tree: the same slots
// and nodes, boxes equal as floats.
//
// Dispatches (src/fast_build.rs), all in one compute pass of one submission:
//   fast_boxes      an invocation a triangle: its box; the centres' bounds
//   fast_codes      an invocation a triangle: its Morton code, its index,
//                   and its count in the first sort pass's histograms
//   4 x (fast_scan, fast_scatter)
//                   an 8-bit LSD radix sort of the 30-bit codes (stable:
//                   equal codes keep index order, core's tie rule); each
//                   scatter also counts the keys it places into the next
//                   pass's histograms (hist_next), so no pass reads its keys
//                   twice; up to 64 tiles the scatter scans the histograms
//                   itself and fast_scan is left out (params.scan_in_scatter)
//   fast_tree       an invocation a slot (its box) and an inner node (its
//                   children, range and their parents)
//   fast_bottom_up  an invocation a slot, walking up; the second to reach a
//                   node finishes it (box, SAH cost, merged or kept)
//   fast_emit       an invocation an inner node: its depth-first index from a
//                   walk up, then its node
// This file is a module of its own (not part of the tracing module): each
// entry point binds only the buffers it uses (automatic layouts), at most six
// storage buffers, below the eight every adapter allows.
//
// Differences from CUDA's kernels, each for a reason:
// - WGSL atomics are u32 only: the centres' bounds are kept as ordered words
//   (fast_ordered), the minima complemented so that one clear to zero and
//   atomicMax serve both.
// - No warp shuffles or match: the scatter ranks a chunk's keys through
//   per-digit bit masks in workgroup memory (stable, as __match_any_sync's).
// - No device-wide fence: the bottom-up pass passes nodes between workgroups
//   through atomics only, ordered by storageBarrier (a device-scope
//   acquire-release barrier on Vulkan), in a loop every invocation of a
//   workgroup runs together (barriers need uniform control flow).
// - WGSL may fuse a * b + c and its division is not correctly rounded: the
//   products use mul_rn and the Morton scale div_rn_exact.

const FAST_THREADS: u32 = 256u;
// Keys a workgroup of the sort takes: 16 an invocation.
const SORT_ITEMS: u32 = 16u;
const SORT_TILE: u32 = 4096u;
const RADIX: u32 = 256u;
// mirrors prism_core::lbvh::LEAF_FLAG
const LEAF: u32 = 0x80000000u;
// mirrors prism_core::bvh::{COST_TRAVERSAL, COST_INTERSECT, MAX_LEAF_SIZE}
const COST_TRAVERSAL: f32 = 1.0;
const COST_INTERSECT: f32 = 1.0;
const MAX_LEAF: u32 = 8u;
// mirrors prism_core::gpu::{EMPTY_CHILD, NO_PARENT}
const EMPTY_CHILD: u32 = 0xFFFFFFFFu;
const NO_PARENT: u32 = 0xFFFFFFFFu;

struct FastParams {
    // Triangles.
    n: u32,
    vertex_count: u32,
    // 1: `triangles` holds three vertex indices a triangle; 0: a triangle
    // soup, triangle i on vertices 3i, 3i + 1, 3i + 2.
    indexed: u32,
    // The digit of this sort pass: 0, 8, 16 or 24.
    shift: u32,
    // Workgroups (tiles) of the sort: `hist` holds 256 of them a digit.
    sort_blocks: u32,
    // Always 0; mul_rn ORs it into products to keep them unfused.
    opaque_zero: u32,
    // The bits of core's f32 `1024 * (1 - 1e-6)` (morton_scale's numerator).
    morton_numerator: u32,
    // 1: each fast_scatter workgroup works out its digits' offsets from the
    // unscanned histograms (few tiles, src/fast_build.rs); 0: fast_scan ran.
    scan_in_scatter: u32,
    // The clustered build's round parity (clustered_build.wgsl): which state
    // words a round reads (and which it writes).
    round_parity: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> params: FastParams;
// xyz a vertex.
@group(0) @binding(1) var<storage, read> positions: array<f32>;
@group(0) @binding(2) var<storage, read> triangles: array<u32>;
// Triangle i's box: [2i] min, [2i + 1] max (w unused).
@group(0) @binding(3) var<storage, read_write> boxes: array<vec4<f32>>;
// The centres' bounds as fast_ordered words: ~min xyz, then max xyz (all
// atomicMax from a buffer cleared to zero).
@group(0) @binding(4) var<storage, read_write> centre_bounds: array<atomic<u32>, 6>;
@group(0) @binding(5) var<storage, read_write> keys_in: array<u32>;
@group(0) @binding(6) var<storage, read_write> values_in: array<u32>;
@group(0) @binding(7) var<storage, read_write> keys_out: array<u32>;
@group(0) @binding(8) var<storage, read_write> values_out: array<u32>;
// hist[digit * sort_blocks + block]
@group(0) @binding(9) var<storage, read_write> hist: array<u32>;
// The next sort pass's histograms (hist's layout), counted as keys are placed
// (cleared before the build).
@group(0) @binding(16) var<storage, read_write> hist_next: array<atomic<u32>>;
// Slot s's box: [2s] min, [2s + 1] max.
@group(0) @binding(10) var<storage, read_write> slot_boxes: array<vec4<f32>>;
// Inner node i: (left child, right child, first slot, last slot); children
// flagged LEAF are slots.
@group(0) @binding(11) var<storage, read_write> inner: array<vec4<u32>>;
// Parent links, `parent << 1 | side`: inner node c at [c], slot s at [n - 1 + s].
@group(0) @binding(12) var<storage, read_write> links: array<u32>;
// Inner node i's finished state, 8 words: min xyz, SAH cost, max xyz, kept
// (the inner nodes kept in its subtree; 0: merged into one leaf), all as
// bits. Atomic because the bottom-up pass hands them between workgroups.
@group(0) @binding(13) var<storage, read_write> node_data: array<atomic<u32>>;
// Arrivals at each inner node in the bottom-up pass (zeroed by fast_boxes).
@group(0) @binding(14) var<storage, read_write> arrivals: array<atomic<u32>>;
// The tree in core's layout (prism_core::gpu::BvhNode): four rows a node.
@group(0) @binding(15) var<storage, read_write> nodes: array<vec4<u32>>;

// The invocation's index over a 2D grid of workgroups (dispatches of more
// than 65535 workgroups are split into rows).
fn global_index(wg: vec3<u32>, groups: vec3<u32>, lid: u32) -> u32 {
    return (wg.y * groups.x + wg.x) * FAST_THREADS + lid;
}

// a * b rounded on its own, never fused with a following add (as math.wgsl's).
fn mul_rn(a: f32, b: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(a * b) | params.opaque_zero);
}

fn is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

// mirrors f32::min / f32::max: a NaN operand gives the other one.
fn f32_min(a: f32, b: f32) -> f32 {
    return select(select(min(a, b), a, is_nan(b)), b, is_nan(a));
}
fn f32_max(a: f32, b: f32) -> f32 {
    return select(select(max(a, b), a, is_nan(b)), b, is_nan(a));
}

// A float as an unsigned integer of the same order (for atomicMax).
fn fast_ordered(f: f32) -> u32 {
    let b = bitcast<u32>(f);
    return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}
fn fast_unordered(u: u32) -> f32 {
    return bitcast<f32>(select(~u, u & 0x7FFFFFFFu, (u & 0x80000000u) != 0u));
}

fn vertex(i: u32) -> vec3<f32> {
    return vec3<f32>(positions[3u * i], positions[3u * i + 1u], positions[3u * i + 2u]);
}

// Triangle i's corners: three indices from `triangles`, or a soup's 3i..3i+2.
fn corners(i: u32) -> array<vec3<f32>, 3> {
    if params.indexed != 0u {
        return array<vec3<f32>, 3>(
            vertex(triangles[3u * i]),
            vertex(triangles[3u * i + 1u]),
            vertex(triangles[3u * i + 2u])
        );
    }
    return array<vec3<f32>, 3>(vertex(3u * i), vertex(3u * i + 1u), vertex(3u * i + 2u));
}

// mirrors prism_core::aabb::Aabb::center: 0.5 * (min + max)
fn centre(lo: vec4<f32>, hi: vec4<f32>) -> vec3<f32> {
    return 0.5 * (lo.xyz + hi.xyz);
}

// mirrors prism_core::aabb::Aabb::half_area, every product and sum rounded on
// its own: e.x * e.y + e.y * e.z + e.z * e.x.
fn half_area(lo: vec3<f32>, hi: vec3<f32>) -> f32 {
    let e = hi - lo;
    return (mul_rn(e.x, e.y) + mul_rn(e.y, e.z)) + mul_rn(e.z, e.x);
}

var<workgroup> wg_bounds: array<atomic<u32>, 6>;

// Each triangle's box (prism_core::bvh::triangle_bounds) and the bounds of
// their centres; zeroes the bottom-up pass's arrival counts.
@compute @workgroup_size(256)
fn fast_boxes(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = global_index(wg, groups, lid);
    let n = params.n;
    if lid < 6u {
        atomicStore(&wg_bounds[lid], 0u);
    }
    workgroupBarrier();
    if i < n {
        let t = corners(i);
        let lo = vec4<f32>(
            f32_min(f32_min(t[0].x, t[1].x), t[2].x),
            f32_min(f32_min(t[0].y, t[1].y), t[2].y),
            f32_min(f32_min(t[0].z, t[1].z), t[2].z),
            0.0
        );
        let hi = vec4<f32>(
            f32_max(f32_max(t[0].x, t[1].x), t[2].x),
            f32_max(f32_max(t[0].y, t[1].y), t[2].y),
            f32_max(f32_max(t[0].z, t[1].z), t[2].z),
            0.0
        );
        boxes[2u * i] = lo;
        boxes[2u * i + 1u] = hi;
        let c = centre(lo, hi);
        atomicMax(&wg_bounds[0], ~fast_ordered(c.x));
        atomicMax(&wg_bounds[1], ~fast_ordered(c.y));
        atomicMax(&wg_bounds[2], ~fast_ordered(c.z));
        atomicMax(&wg_bounds[3], fast_ordered(c.x));
        atomicMax(&wg_bounds[4], fast_ordered(c.y));
        atomicMax(&wg_bounds[5], fast_ordered(c.z));
        if i + 1u < n {
            atomicStore(&arrivals[i], 0u);
        }
    }
    workgroupBarrier();
    if lid < 6u {
        let v = atomicLoad(&wg_bounds[lid]);
        if v != 0u {
            atomicMax(&centre_bounds[lid], v);
        }
    }
}

// mirrors prism_core::lbvh::spread_bits
fn spread_bits(v: u32) -> u32 {
    var x = v & 0x3FFu;
    x = (x | (x << 16u)) & 0x030000FFu;
    x = (x | (x << 8u)) & 0x0300F00Fu;
    x = (x | (x << 4u)) & 0x030C30C3u;
    return (x | (x << 2u)) & 0x09249249u;
}

// a / b correctly rounded (as core's `/`), for a and b positive, finite and
// normal: WGSL's division may be 2.5 ulp off. The 24-bit significands are
// divided bit by bit in u32 (no 64-bit integers in WGSL), then rounded to
// nearest even. A quotient outside the normal range falls back to `a / b`
// (an extent below 1e-35 or so; core's scale then overflows too).
fn div_rn_exact(a: f32, b: f32) -> f32 {
    let ab = bitcast<u32>(a);
    let bb = bitcast<u32>(b);
    var ma = (ab & 0x7FFFFFu) | 0x800000u;
    let mb = (bb & 0x7FFFFFu) | 0x800000u;
    var e = i32((ab >> 23u) & 0xFFu) - i32((bb >> 23u) & 0xFFu) + 127;
    if ma < mb {
        ma = ma << 1u;
        e = e - 1;
    }
    // ma / mb in [1, 2): 24 quotient bits, the first the integer bit.
    var r = ma;
    var q = 0u;
    for (var k = 0u; k < 24u; k++) {
        q = q << 1u;
        if r >= mb {
            r = r - mb;
            q = q | 1u;
        }
        r = r << 1u;
    }
    // r is twice the remainder: above mb rounds up, equal to it is a tie.
    if r > mb || (r == mb && (q & 1u) == 1u) {
        q = q + 1u;
        if q == 0x1000000u {
            q = 0x800000u;
            e = e + 1;
        }
    }
    let a_normal = ((ab >> 23u) & 0xFFu) != 0u && ((ab >> 23u) & 0xFFu) != 0xFFu;
    let b_normal = ((bb >> 23u) & 0xFFu) != 0u && ((bb >> 23u) & 0xFFu) != 0xFFu;
    if e <= 0 || e >= 255 || !a_normal || !b_normal || (ab >> 31u) != 0u || (bb >> 31u) != 0u {
        return a / b;
    }
    return bitcast<f32>((u32(e) << 23u) | (q & 0x7FFFFFu));
}

// mirrors prism_core::lbvh::morton_scale: numerator / the longest extent,
// the same on every axis (cubic cells), or 0 when the centres coincide.
fn morton_scale(lo: vec3<f32>, hi: vec3<f32>) -> f32 {
    let longest = max(max(hi.x - lo.x, hi.y - lo.y), hi.z - lo.z);
    if longest > 0.0 {
        return div_rn_exact(bitcast<f32>(params.morton_numerator), longest);
    }
    return 0.0;
}

// mirrors the cell of prism_core::lbvh::morton_code on one axis:
// `((c - lo) * scale) as u32`, at most 1023 (saturating as Rust's `as`: a NaN
// or negative value is 0; WGSL's conversion leaves those undefined).
fn morton_cell(c: f32, lo: f32, scale: f32) -> u32 {
    let v = (c - lo) * scale;
    if !(v > 0.0) {
        return 0u;
    }
    if v >= 1023.0 {
        return 1023u;
    }
    return u32(v);
}

@compute @workgroup_size(256)
fn fast_codes(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = global_index(wg, groups, lid);
    if i >= params.n {
        return;
    }
    let lo = vec3<f32>(
        fast_unordered(~atomicLoad(&centre_bounds[0])),
        fast_unordered(~atomicLoad(&centre_bounds[1])),
        fast_unordered(~atomicLoad(&centre_bounds[2]))
    );
    let hi = vec3<f32>(
        fast_unordered(atomicLoad(&centre_bounds[3])),
        fast_unordered(atomicLoad(&centre_bounds[4])),
        fast_unordered(atomicLoad(&centre_bounds[5]))
    );
    let c = centre(boxes[2u * i], boxes[2u * i + 1u]);
    let scale = morton_scale(lo, hi);
    let qx = morton_cell(c.x, lo.x, scale);
    let qy = morton_cell(c.y, lo.y, scale);
    let qz = morton_cell(c.z, lo.z, scale);
    var code = (spread_bits(qx) << 2u) | (spread_bits(qy) << 1u) | spread_bits(qz);
    // mirrors prism_core::lbvh::sort_key: LARGE_BIT where the box's half area
    // is more than LARGE_SHARE (1/4, an exact product) of the centres' bounds'.
    if half_area(boxes[2u * i].xyz, boxes[2u * i + 1u].xyz) > 0.25 * half_area(lo, hi) {
        code = code | (1u << 30u);
    }
    keys_in[i] = code;
    values_in[i] = i;
    count_key(code, 0u, i);
}

// Count key `key` at position `at` into hist_next for the sort pass whose
// digit starts at bit `shift`: hist_next[digit * sort_blocks + tile].
fn count_key(key: u32, shift: u32, at: u32) {
    atomicAdd(&hist_next[((key >> shift) & 0xFFu) * params.sort_blocks + at / SORT_TILE], 1u);
}

// ---- the radix sort: 8 bits a pass ----

var<workgroup> run_sums: array<u32, 256>;

// The sum of `value` over the workgroup's invocations below `lid` (a
// Hillis-Steele scan in run_sums). With the whole workgroup.
fn workgroup_exclusive_scan(lid: u32, value: u32) -> u32 {
    run_sums[lid] = value;
    workgroupBarrier();
    for (var d = 1u; d < FAST_THREADS; d = d << 1u) {
        var add = 0u;
        if lid >= d {
            add = run_sums[lid - d];
        }
        workgroupBarrier();
        run_sums[lid] += add;
        workgroupBarrier();
    }
    return run_sums[lid] - value;
}

// The exclusive prefix sum of hist's 256 * sort_blocks words in place, by
// one workgroup: each invocation sums a run of the words, the workgroup scans
// the sums, each writes its run.
@compute @workgroup_size(256)
fn fast_scan(@builtin(local_invocation_index) lid: u32) {
    let count = RADIX * params.sort_blocks;
    let run = (count + FAST_THREADS - 1u) / FAST_THREADS;
    let begin = lid * run;
    let end = min(begin + run, count);
    var total = 0u;
    for (var i = begin; i < end; i++) {
        total += hist[i];
    }
    var acc = workgroup_exclusive_scan(lid, total);
    for (var i = begin; i < end; i++) {
        let w = hist[i];
        hist[i] = acc;
        acc += w;
    }
}

var<workgroup> digit_base: array<u32, 256>;
// Which invocations of the chunk hold each digit: 8 words (256 bits) a digit.
var<workgroup> digit_masks: array<atomic<u32>, 2048>;

// Each tile moves its keys (and values) to their places: the scanned offset
// of (digit, tile), plus the keys of that digit before it in the tile (in
// index order: a stable sort). A chunk of 256 keys at a time, ranked by the
// bit masks of the invocations holding each digit.
@compute @workgroup_size(256)
fn fast_scatter(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let block = wg.y * groups.x + wg.x;
    let in_range = block < params.sort_blocks;
    if params.scan_in_scatter == 1u {
        // fast_scan's exclusive prefix of the digit-major histograms, for
        // this tile alone: the counts of every lower digit (a scan of the
        // digits' totals) and of this digit in the tiles before this one.
        var total = 0u;
        var before = 0u;
        for (var t = 0u; t < params.sort_blocks; t++) {
            let c = hist[lid * params.sort_blocks + t];
            total += c;
            before += select(0u, c, t < block);
        }
        digit_base[lid] = workgroup_exclusive_scan(lid, total) + before;
    } else if in_range {
        digit_base[lid] = hist[lid * params.sort_blocks + block];
    }
    let tile = block * SORT_TILE;
    let word = lid >> 5u;
    let bit = 1u << (lid & 31u);
    for (var k = 0u; k < SORT_ITEMS; k++) {
        for (var w = 0u; w < 8u; w++) {
            atomicStore(&digit_masks[lid * 8u + w], 0u);
        }
        workgroupBarrier();
        let i = tile + k * FAST_THREADS + lid;
        let valid = in_range && i < params.n;
        var key = 0u;
        var digit = 0u;
        if valid {
            key = keys_in[i];
            digit = (key >> params.shift) & 0xFFu;
            atomicOr(&digit_masks[digit * 8u + word], bit);
        }
        workgroupBarrier();
        if valid {
            var rank = countOneBits(atomicLoad(&digit_masks[digit * 8u + word]) & (bit - 1u));
            for (var w = 0u; w < word; w++) {
                rank += countOneBits(atomicLoad(&digit_masks[digit * 8u + w]));
            }
            let at = digit_base[digit] + rank;
            keys_out[at] = key;
            values_out[at] = values_in[i];
            if params.shift < 24u {
                count_key(key, params.shift + 8u, at);
            }
        }
        // Invocation d: digit d's count in this chunk.
        var count = 0u;
        for (var w = 0u; w < 8u; w++) {
            count += countOneBits(atomicLoad(&digit_masks[lid * 8u + w]));
        }
        workgroupBarrier();
        digit_base[lid] += count;
        workgroupBarrier();
    }
}

// ---- the radix tree ----

// mirrors prism_core::lbvh::prefix: the common prefix of the keys at slots i
// and j (code, then slot), -1 outside the slots. `keys_in` holds the sorted
// codes here.
fn prefix(i: i32, j: i32) -> i32 {
    if j < 0 || j >= i32(params.n) {
        return -1;
    }
    let a = keys_in[u32(i)];
    let b = keys_in[u32(j)];
    if a != b {
        return i32(countLeadingZeros(a ^ b));
    }
    return 32 + i32(countLeadingZeros(u32(i) ^ u32(j)));
}

// Slot t's box, and, for an inner node t < n - 1, mirrors
// prism_core::lbvh::radix_node: its children, its range, and the children's
// parent links. `values_in` holds the sorted order here.
@compute @workgroup_size(256)
fn fast_tree(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = global_index(wg, groups, lid);
    let n = params.n;
    if t < n {
        let id = values_in[t];
        slot_boxes[2u * t] = boxes[2u * id];
        slot_boxes[2u * t + 1u] = boxes[2u * id + 1u];
    }
    if t + 1u >= n {
        return;
    }
    let i = i32(t);
    var d = -1;
    if prefix(i, i + 1) > prefix(i, i - 1) {
        d = 1;
    }
    let min_prefix = prefix(i, i - d);
    var lmax = 2;
    while prefix(i, i + lmax * d) > min_prefix {
        lmax *= 2;
    }
    var l = 0;
    for (var s = lmax / 2; s >= 1; s /= 2) {
        if prefix(i, i + (l + s) * d) > min_prefix {
            l += s;
        }
    }
    let j = i + l * d;
    let node_prefix = prefix(i, j);
    var s = 0;
    var div = 2;
    loop {
        let step = (l + div - 1) / div;
        if prefix(i, i + (s + step) * d) > node_prefix {
            s += step;
        }
        if step <= 1 {
            break;
        }
        div *= 2;
    }
    let gamma = i + s * d + min(d, 0);
    let first = min(i, j);
    let last = max(i, j);
    var left = u32(gamma);
    if first == gamma {
        left = left | LEAF;
    }
    var right = u32(gamma + 1);
    if last == gamma + 1 {
        right = right | LEAF;
    }
    inner[t] = vec4<u32>(left, right, u32(first), u32(last));
    let slots = n - 1u;
    links[select(left, slots + (left & ~LEAF), (left & LEAF) != 0u)] = t << 1u;
    links[select(right, slots + (right & ~LEAF), (right & LEAF) != 0u)] = (t << 1u) | 1u;
    if t == 0u {
        links[0] = NO_PARENT;
    }
}

// One child's box, SAH cost and kept count (a slot: its box, Ci times its
// area, 0).
struct ChildState {
    lo: vec3<f32>,
    hi: vec3<f32>,
    cost: f32,
    kept: u32,
}

fn node_word(node: u32, w: u32) -> u32 {
    return atomicLoad(&node_data[8u * node + w]);
}

fn child_state(c: u32) -> ChildState {
    if (c & LEAF) != 0u {
        let s = c & ~LEAF;
        let lo = slot_boxes[2u * s].xyz;
        let hi = slot_boxes[2u * s + 1u].xyz;
        return ChildState(lo, hi, mul_rn(COST_INTERSECT, half_area(lo, hi)), 0u);
    }
    let lo = vec3<f32>(
        bitcast<f32>(node_word(c, 0u)),
        bitcast<f32>(node_word(c, 1u)),
        bitcast<f32>(node_word(c, 2u))
    );
    let hi = vec3<f32>(
        bitcast<f32>(node_word(c, 4u)),
        bitcast<f32>(node_word(c, 5u)),
        bitcast<f32>(node_word(c, 6u))
    );
    return ChildState(lo, hi, bitcast<f32>(node_word(c, 3u)), node_word(c, 7u));
}

// mirrors the loop body of step 4 of prism_core::lbvh::build: inner node
// `node`'s box (its children's union), SAH cost, and merged (kept 0) or kept.
fn finish_node(node: u32) {
    let ch = inner[node];
    let l = child_state(ch.x);
    let r = child_state(ch.y);
    // mirrors Aabb::union (lb.union(rb)): min and max per axis.
    let lo = vec3<f32>(f32_min(l.lo.x, r.lo.x), f32_min(l.lo.y, r.lo.y), f32_min(l.lo.z, r.lo.z));
    let hi = vec3<f32>(f32_max(l.hi.x, r.hi.x), f32_max(l.hi.y, r.hi.y), f32_max(l.hi.z, r.hi.z));
    let area = half_area(lo, hi);
    let count = ch.w - ch.z + 1u;
    let leaf_cost = mul_rn(mul_rn(COST_INTERSECT, f32(count)), area);
    let split_cost = (mul_rn(COST_TRAVERSAL, area) + l.cost) + r.cost;
    var cost = split_cost;
    var kept = 1u + l.kept + r.kept;
    if count <= MAX_LEAF && leaf_cost <= split_cost {
        cost = leaf_cost;
        kept = 0u;
    }
    let at = 8u * node;
    atomicStore(&node_data[at], bitcast<u32>(lo.x));
    atomicStore(&node_data[at + 1u], bitcast<u32>(lo.y));
    atomicStore(&node_data[at + 2u], bitcast<u32>(lo.z));
    atomicStore(&node_data[at + 3u], bitcast<u32>(cost));
    atomicStore(&node_data[at + 4u], bitcast<u32>(hi.x));
    atomicStore(&node_data[at + 5u], bitcast<u32>(hi.y));
    atomicStore(&node_data[at + 6u], bitcast<u32>(hi.z));
    atomicStore(&node_data[at + 7u], kept);
}

var<workgroup> wg_active: atomic<u32>;
var<workgroup> wg_active_seen: u32;

// mirrors step 4 of prism_core::lbvh::build: from slot s up, the second
// invocation to reach a node finishes it. The workgroup loops together until
// none of its invocations is still climbing, so that its barriers stay in
// uniform control flow.
@compute @workgroup_size(256)
fn fast_bottom_up(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let s = global_index(wg, groups, lid);
    let n = params.n;
    var climbing = s < n;
    var node = 0u;
    if climbing {
        node = links[n - 1u + s] >> 1u;
    }
    if lid == 0u {
        atomicStore(&wg_active, 0u);
    }
    workgroupBarrier();
    loop {
        // Release: the node this invocation finished before its arrival.
        storageBarrier();
        var finish = false;
        if climbing {
            if atomicAdd(&arrivals[node], 1u) == 0u {
                climbing = false;
            } else {
                finish = true;
            }
        }
        // Acquire: the sibling's node, finished before its arrival.
        storageBarrier();
        if finish {
            finish_node(node);
            if node == 0u {
                climbing = false;
            } else {
                node = links[node] >> 1u;
            }
        }
        if climbing {
            atomicAdd(&wg_active, 1u);
        }
        workgroupBarrier();
        if lid == 0u {
            wg_active_seen = atomicLoad(&wg_active);
            atomicStore(&wg_active, 0u);
        }
        if workgroupUniformLoad(&wg_active_seen) == 0u {
            break;
        }
    }
}

// A child's two rows in the layout (prism_core::lbvh::node_of).
fn rows_of(lo: vec3<f32>, hi: vec3<f32>, index: u32, count: u32, at: u32) {
    nodes[at] = vec4<u32>(bitcast<vec3<u32>>(lo), index);
    nodes[at + 1u] = vec4<u32>(bitcast<vec3<u32>>(hi), count);
}

// Child c of a kept node as a row pair (prism_core::lbvh::build's child_of):
// a slot, a merged node (a leaf over its range) or a kept node at `index`.
fn child_rows(c: u32, index: u32, at: u32) {
    if (c & LEAF) != 0u {
        let s = c & ~LEAF;
        rows_of(slot_boxes[2u * s].xyz, slot_boxes[2u * s + 1u].xyz, s, 1u, at);
        return;
    }
    let st = child_state(c);
    if st.kept == 0u {
        let r = inner[c];
        rows_of(st.lo, st.hi, r.z, r.w - r.z + 1u, at);
    } else {
        rows_of(st.lo, st.hi, index, 0u, at);
    }
}

fn kept_of(c: u32) -> u32 {
    if (c & LEAF) != 0u {
        return 0u;
    }
    return node_word(c, 7u);
}

// mirrors step 5 of prism_core::lbvh::build for inner node i: nothing for a
// merged node or one under a merged node; else its index in depth-first
// order (one past its parent's, plus the left sibling's kept subtree for a
// right child), found by walking up, and its node. A merged root is one leaf
// over every slot beside an absent child.
@compute @workgroup_size(256)
fn fast_emit(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = global_index(wg, groups, lid);
    let n = params.n;
    if i + 1u >= n {
        return;
    }
    if node_word(i, 7u) == 0u {
        if i == 0u {
            let root = child_state(0u);
            rows_of(root.lo, root.hi, 0u, n, 0u);
            let inf = 0x7f800000u;
            nodes[2] = vec4<u32>(inf, inf, inf, EMPTY_CHILD);
            nodes[3] = vec4<u32>(inf, inf, inf, 0u);
        }
        return;
    }
    var index = 0u;
    var c = i;
    while c != 0u {
        let link = links[c];
        let p = link >> 1u;
        if node_word(p, 7u) == 0u {
            return;
        }
        if (link & 1u) != 0u {
            index += 1u + kept_of(inner[p].x);
        } else {
            index += 1u;
        }
        c = p;
    }
    let ch = inner[i];
    let at = 4u * index;
    child_rows(ch.x, index + 1u, at);
    child_rows(ch.y, index + 1u + kept_of(ch.x), at + 2u);
}
