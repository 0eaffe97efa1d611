// The clustered tree built on the device: mirrors prism_core::ploc::build
// pass for pass, as backend-cuda/kernels/clustered_build.cuh does, after
// fast_build.wgsl's boxes, codes and sort (this file is compiled appended to
// it, sharing its parameters, bindings and helpers).
//
// Dispatches (src/clustered_build.rs):
//   ploc_init     an invocation a slot: its box and cluster; the round state
//   per round, while more than PLOC_TAIL clusters are left (in submissions of
//   a batch of rounds, the cluster count read back between them):
//     ploc_nearest  a workgroup a run of 256 clusters (their boxes and their
//                   neighbours' in workgroup memory): each one's nearest
//     ploc_count    a workgroup a run: its places kept and nodes made
//     ploc_merge    a workgroup a run: its offsets, the sum of the runs'
//                   counts before it; mutual pairs become nodes, the rest move
//   ploc_tail     one workgroup: the rounds left, over at most PLOC_TAIL
//                 clusters in workgroup memory
//   ploc_slots    an invocation a slot, walking up: its final slot, the depth
//                 check
//   ploc_emit     an invocation a node, walking up: its depth-first index and
//                 its node
//
// Differences from CUDA's kernels, each for a reason:
// - The tail takes 256 clusters, not 1,024: a workgroup has 256 invocations
//   and 16 KiB of workgroup memory on every adapter.
// - No ballots: a workgroup's ranks come from workgroup_exclusive_scan over
//   the kept and merge flags packed in one word (16 bits each).
// - Pair keys are two words compared in turn (WGSL has no u64).
// - The round's parity (which state words it reads and writes) comes in the
//   parameter block (params.round_parity); the cluster arrays swap by bind
//   group.

// mirrors prism_core::ploc::SEARCH_RADIUS
const PLOC_RADIUS: u32 = 3u;
const PLOC_TAIL: u32 = 256u;
const PLOC_SPAN: u32 = 262u; // FAST_THREADS + 2 PLOC_RADIUS
// A walk up from a slot: at most 63 kept levels above its leaf and 7 inside a
// leaf of at most 8 primitives; longer means the tree is too deep.
const PLOC_MAX_WALK: u32 = 72u;
// mirrors prism_core::gpu::TRAVERSAL_STACK_SIZE (src/clustered_build.rs
// checks it)
const PLOC_STACK: u32 = 64u;
// The round state's words: cluster count and nodes made by parity, then the
// too-deep flag, the nodes made when the tail ended, and 1 once it ended with
// one cluster.
const PLOC_TOO_DEEP: u32 = 4u;
const PLOC_NODES: u32 = 5u;
const PLOC_DONE: u32 = 6u;

// Cluster k: [2k] = (min xyz, id bits), [2k + 1] = (max xyz, 0); an id is a
// slot flagged LEAF or a node.
@group(0) @binding(17) var<storage, read> clusters_in: array<vec4<f32>>;
@group(0) @binding(18) var<storage, read_write> clusters_out: array<vec4<f32>>;
@group(0) @binding(19) var<storage, read_write> nearest: array<u32>;
@group(0) @binding(20) var<storage, read_write> ploc_state: array<u32>;
// Each run's (places kept, nodes made) this round.
@group(0) @binding(21) var<storage, read_write> run_counts: array<vec2<u32>>;
// Node k: [3k] = (min xyz, SAH cost) bits, [3k + 1] = (max xyz bits,
// primitives), [3k + 2] = (left, right, kept nodes in the subtree (0: one
// leaf), 0).
@group(0) @binding(22) var<storage, read_write> cnodes: array<vec4<u32>>;

fn count_word() -> u32 {
    return params.round_parity;
}
fn made_word() -> u32 {
    return 2u + params.round_parity;
}

// mirrors prism_core::ploc::pair_key as (high word, low word).
fn pair_key(area: f32, i: u32, j: u32) -> vec2<u32> {
    let distance = select(j - i, i - j, i > j);
    let lower = min(i, j);
    return vec2<u32>(bitcast<u32>(area), (distance << 2u) | ((lower & 1u) << 1u) | select(0u, 1u, j > i));
}

fn key_less(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.x < b.x || (a.x == b.x && a.y < b.y);
}

// The half area of the union of two boxes (Aabb::union, then half_area).
fn union_area(alo: vec3<f32>, ahi: vec3<f32>, blo: vec3<f32>, bhi: vec3<f32>) -> f32 {
    let lo = vec3<f32>(f32_min(alo.x, blo.x), f32_min(alo.y, blo.y), f32_min(alo.z, blo.z));
    let hi = vec3<f32>(f32_max(ahi.x, bhi.x), f32_max(ahi.y, bhi.y), f32_max(ahi.z, bhi.z));
    return half_area(lo, hi);
}

struct PlocChild {
    cost: f32,
    count: u32,
    kept: u32,
}

// A child's SAH cost, primitives and kept nodes (a slot: Ci times its area, 1, 0).
fn ploc_child(id: u32, lo: vec3<f32>, hi: vec3<f32>) -> PlocChild {
    if (id & LEAF) != 0u {
        return PlocChild(mul_rn(COST_INTERSECT, half_area(lo, hi)), 1u, 0u);
    }
    return PlocChild(bitcast<f32>(cnodes[3u * id].w), cnodes[3u * id + 1u].w, cnodes[3u * id + 2u].z);
}

// Step 3's node `node` over clusters a and b: its box (returned: min, max),
// SAH cost, primitives, kept nodes, and its children's parent links.
fn ploc_make_node(a: u32, alo: vec3<f32>, ahi: vec3<f32>, b: u32, blo: vec3<f32>, bhi: vec3<f32>, node: u32)
    -> array<vec3<f32>, 2> {
    let l = ploc_child(a, alo, ahi);
    let r = ploc_child(b, blo, bhi);
    let lo = vec3<f32>(f32_min(alo.x, blo.x), f32_min(alo.y, blo.y), f32_min(alo.z, blo.z));
    let hi = vec3<f32>(f32_max(ahi.x, bhi.x), f32_max(ahi.y, bhi.y), f32_max(ahi.z, bhi.z));
    let area = half_area(lo, hi);
    let count = l.count + r.count;
    let leaf_cost = mul_rn(mul_rn(COST_INTERSECT, f32(count)), area);
    let split_cost = (mul_rn(COST_TRAVERSAL, area) + l.cost) + r.cost;
    var cost = split_cost;
    var kept = 1u + l.kept + r.kept;
    if count <= MAX_LEAF && leaf_cost <= split_cost {
        cost = leaf_cost;
        kept = 0u;
    }
    cnodes[3u * node] = vec4<u32>(bitcast<vec3<u32>>(lo), bitcast<u32>(cost));
    cnodes[3u * node + 1u] = vec4<u32>(bitcast<vec3<u32>>(hi), count);
    cnodes[3u * node + 2u] = vec4<u32>(a, b, kept, 0u);
    let slots = params.n - 1u;
    links[select(a, slots + (a & ~LEAF), (a & LEAF) != 0u)] = node << 1u;
    links[select(b, slots + (b & ~LEAF), (b & LEAF) != 0u)] = (node << 1u) | 1u;
    return array<vec3<f32>, 2>(lo, hi);
}

// Slot t's box (`slot_boxes`, in Morton order), cluster and parent links; the
// state of round 0: n clusters, no nodes, not too deep, not done.
@compute @workgroup_size(256)
fn ploc_init(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = global_index(wg, groups, lid);
    if t < params.n {
        let id = values_in[t];
        let lo = boxes[2u * id];
        let hi = boxes[2u * id + 1u];
        slot_boxes[2u * t] = lo;
        slot_boxes[2u * t + 1u] = hi;
        clusters_out[2u * t] = vec4<f32>(lo.xyz, bitcast<f32>(t | LEAF));
        clusters_out[2u * t + 1u] = vec4<f32>(hi.xyz, 0.0);
        // Parent links start as "none": the root's is never written.
        links[params.n - 1u + t] = NO_PARENT;
        if t + 1u < params.n {
            links[t] = NO_PARENT;
        }
    }
    if t < 8u {
        ploc_state[t] = select(0u, params.n, t == 0u);
    }
}

var<workgroup> wg_m: u32;
var<workgroup> wg_made: u32;
var<workgroup> wg_keep: atomic<u32>;
var<workgroup> wg_merge: atomic<u32>;
var<workgroup> ploc_window: array<array<f32, 6>, PLOC_SPAN>;

// Round r's nearest neighbours (step 2): workgroup w takes clusters [256 w,
// 256 w + 256), with the boxes from RADIUS before to RADIUS after in
// workgroup memory.
@compute @workgroup_size(256)
fn ploc_nearest(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    if lid == 0u {
        wg_m = ploc_state[count_word()];
    }
    let m = workgroupUniformLoad(&wg_m);
    let base = (wg.y * groups.x + wg.x) * FAST_THREADS;
    if m <= PLOC_TAIL || base >= m {
        return;
    }
    // Window place w holds cluster base - RADIUS + w.
    for (var w = lid; w < PLOC_SPAN; w += FAST_THREADS) {
        let k = i32(base) - i32(PLOC_RADIUS) + i32(w);
        if k >= 0 && k < i32(m) {
            let lo = clusters_in[2u * u32(k)];
            let hi = clusters_in[2u * u32(k) + 1u];
            ploc_window[w] = array<f32, 6>(lo.x, lo.y, lo.z, hi.x, hi.y, hi.z);
        }
    }
    workgroupBarrier();
    let i = base + lid;
    if i >= m {
        return;
    }
    let first = select(0u, i - PLOC_RADIUS, i > PLOC_RADIUS);
    let last = min(i + PLOC_RADIUS, m - 1u);
    let at = i - base + PLOC_RADIUS;
    let a = ploc_window[at];
    let ilo = vec3<f32>(a[0], a[1], a[2]);
    let ihi = vec3<f32>(a[3], a[4], a[5]);
    var best = i;
    var best_key = vec2<u32>(0xFFFFFFFFu, 0xFFFFFFFFu);
    for (var j = first; j <= last; j++) {
        if j == i {
            continue;
        }
        let b = ploc_window[j + PLOC_RADIUS - base];
        let key = pair_key(union_area(ilo, ihi, vec3<f32>(b[0], b[1], b[2]), vec3<f32>(b[3], b[4], b[5])), i, j);
        if key_less(key, best_key) {
            best_key = key;
            best = j;
        }
    }
    nearest[i] = best;
}

// Whether cluster i (below m) keeps a place (kept, or merged into as the
// lower of a mutual pair) and whether it makes a node; x: its nearest.
fn ploc_fate(i: u32, m: u32) -> vec3<u32> {
    if i >= m {
        return vec3<u32>(i, 0u, 0u);
    }
    let j = nearest[i];
    let mutual = nearest[j] == i;
    return vec3<u32>(j, select(0u, 1u, !mutual || i < j), select(0u, 1u, mutual && i < j));
}

// The round's cluster count, the same in every invocation (read by one,
// shared through workgroup memory); clears the workgroup's counters.
fn round_start(lid: u32) -> u32 {
    if lid == 0u {
        wg_m = ploc_state[count_word()];
        atomicStore(&wg_keep, 0u);
        atomicStore(&wg_merge, 0u);
    }
    return workgroupUniformLoad(&wg_m);
}

// Round r's counts: workgroup w's places kept and nodes made, into
// run_counts[w], for the merge's offsets.
@compute @workgroup_size(256)
fn ploc_count(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let m = round_start(lid);
    let run = wg.y * groups.x + wg.x;
    let base = run * FAST_THREADS;
    if m <= PLOC_TAIL || base >= m {
        return;
    }
    let fate = ploc_fate(base + lid, m);
    atomicAdd(&wg_keep, fate.y);
    atomicAdd(&wg_merge, fate.z);
    workgroupBarrier();
    if lid == 0u {
        run_counts[run] = vec2<u32>(atomicLoad(&wg_keep), atomicLoad(&wg_merge));
    }
}

// Round r's merge and compaction (steps 3-4): workgroup w's offsets are the
// counts of the runs before it, which it adds up itself; its places and node
// numbers from a scan. The last run writes the next round's count and nodes
// made. A round past the batch's need hands the clusters and state on.
@compute @workgroup_size(256)
fn ploc_merge(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let m = round_start(lid);
    let run = wg.y * groups.x + wg.x;
    let base = run * FAST_THREADS;
    let next = 1u - params.round_parity;
    if m <= PLOC_TAIL {
        if run == 0u {
            for (var i = lid; i < m; i += FAST_THREADS) {
                clusters_out[2u * i] = clusters_in[2u * i];
                clusters_out[2u * i + 1u] = clusters_in[2u * i + 1u];
            }
            if lid == 0u {
                ploc_state[next] = m;
                ploc_state[2u + next] = ploc_state[made_word()];
            }
        }
        return;
    }
    if base >= m {
        return;
    }
    var before_keep = 0u;
    var before_merge = 0u;
    for (var b = lid; b < run; b += FAST_THREADS) {
        let v = run_counts[b];
        before_keep += v.x;
        before_merge += v.y;
    }
    atomicAdd(&wg_keep, before_keep);
    atomicAdd(&wg_merge, before_merge);
    let i = base + lid;
    let fate = ploc_fate(i, m);
    let packed = fate.y | (fate.z << 16u);
    let rank = workgroup_exclusive_scan(lid, packed);
    let total = run_sums[FAST_THREADS - 1u];
    let kept_before = atomicLoad(&wg_keep);
    let merged_before = atomicLoad(&wg_merge);
    let made = ploc_state[made_word()];
    if lid == 0u && base + FAST_THREADS >= m {
        ploc_state[next] = kept_before + (total & 0xFFFFu);
        ploc_state[2u + next] = made + merged_before + (total >> 16u);
    }
    if fate.y == 0u {
        return;
    }
    let to = kept_before + (rank & 0xFFFFu);
    let c = clusters_in[2u * i];
    let d = clusters_in[2u * i + 1u];
    var id = bitcast<u32>(c.w);
    var lo = c.xyz;
    var hi = d.xyz;
    if fate.z != 0u {
        let j = fate.x;
        let e = clusters_in[2u * j];
        let f = clusters_in[2u * j + 1u];
        let node = made + merged_before + (rank >> 16u);
        let b = ploc_make_node(id, lo, hi, bitcast<u32>(e.w), e.xyz, f.xyz, node);
        lo = b[0];
        hi = b[1];
        id = node;
    }
    clusters_out[2u * to] = vec4<f32>(lo, bitcast<f32>(id));
    clusters_out[2u * to + 1u] = vec4<f32>(hi, 0.0);
}

var<workgroup> tail_box: array<array<f32, 6>, 256>;
var<workgroup> tail_id: array<u32, 256>;
var<workgroup> tail_near: array<u32, 256>;

// The rounds left once at most PLOC_TAIL clusters are: one workgroup, an
// invocation a cluster, the clusters in workgroup memory. Marks the state
// done.
@compute @workgroup_size(256)
fn ploc_tail(@builtin(local_invocation_index) lid: u32) {
    if lid == 0u {
        wg_m = ploc_state[count_word()];
        wg_made = ploc_state[made_word()];
    }
    var m = workgroupUniformLoad(&wg_m);
    var made = workgroupUniformLoad(&wg_made);
    if m > PLOC_TAIL {
        return; // never dispatched so: the host reads the count first
    }
    if lid < m {
        let lo = clusters_in[2u * lid];
        let hi = clusters_in[2u * lid + 1u];
        tail_box[lid] = array<f32, 6>(lo.x, lo.y, lo.z, hi.x, hi.y, hi.z);
        tail_id[lid] = bitcast<u32>(lo.w);
    }
    workgroupBarrier();
    // Every round merges at least once, so at most m - 1 rounds; the bound
    // only guards against a broken invariant.
    for (var rounds = 0u; m > 1u && rounds < PLOC_TAIL; rounds++) {
        if lid < m {
            let first = select(0u, lid - PLOC_RADIUS, lid > PLOC_RADIUS);
            let last = min(lid + PLOC_RADIUS, m - 1u);
            let a = tail_box[lid];
            let ilo = vec3<f32>(a[0], a[1], a[2]);
            let ihi = vec3<f32>(a[3], a[4], a[5]);
            var best = lid;
            var best_key = vec2<u32>(0xFFFFFFFFu, 0xFFFFFFFFu);
            for (var j = first; j <= last; j++) {
                if j == lid {
                    continue;
                }
                let b = tail_box[j];
                let key = pair_key(
                    union_area(ilo, ihi, vec3<f32>(b[0], b[1], b[2]), vec3<f32>(b[3], b[4], b[5])),
                    lid,
                    j
                );
                if key_less(key, best_key) {
                    best_key = key;
                    best = j;
                }
            }
            tail_near[lid] = best;
        }
        workgroupBarrier();
        var j = lid;
        var keep = false;
        var merge = false;
        if lid < m {
            j = tail_near[lid];
            let mutual = tail_near[j] == lid;
            keep = !mutual || lid < j;
            merge = mutual && lid < j;
        }
        // This invocation's cluster and its partner's, before any place
        // changes (the scan's barriers order the reads before the writes).
        let a = tail_box[lid];
        let b = tail_box[j];
        let id = tail_id[lid];
        let jid = tail_id[j];
        let packed = select(0u, 1u, keep) | (select(0u, 1u, merge) << 16u);
        let rank = workgroup_exclusive_scan(lid, packed);
        let total = run_sums[FAST_THREADS - 1u];
        var lo = vec3<f32>(a[0], a[1], a[2]);
        var hi = vec3<f32>(a[3], a[4], a[5]);
        var out_id = id;
        if merge {
            let node = made + (rank >> 16u);
            let box = ploc_make_node(id, lo, hi, jid, vec3<f32>(b[0], b[1], b[2]), vec3<f32>(b[3], b[4], b[5]), node);
            lo = box[0];
            hi = box[1];
            out_id = node;
        }
        if keep {
            let to = rank & 0xFFFFu;
            tail_box[to] = array<f32, 6>(lo.x, lo.y, lo.z, hi.x, hi.y, hi.z);
            tail_id[to] = out_id;
        }
        if lid == 0u {
            wg_m = total & 0xFFFFu;
            wg_made = made + (total >> 16u);
        }
        m = workgroupUniformLoad(&wg_m);
        made = workgroupUniformLoad(&wg_made);
    }
    if lid == 0u {
        ploc_state[PLOC_NODES] = made;
        ploc_state[PLOC_DONE] = select(0u, 1u, m == 1u);
    }
}

// A child's kept nodes and primitives (a slot: 0 and 1).
fn ploc_kept(c: u32) -> u32 {
    if (c & LEAF) != 0u {
        return 0u;
    }
    return cnodes[3u * c + 2u].z;
}
fn ploc_count_of(c: u32) -> u32 {
    if (c & LEAF) != 0u {
        return 1u;
    }
    return cnodes[3u * c + 1u].w;
}

// Step 5 for slot s (in Morton order): walking up to the root, its final slot
// (the primitives of every left sibling before it) and the kept nodes above
// its leaf (the highest merged node above it, or itself); writes its
// triangle's index there (keys_out), and flags a tree whose leaf is as deep
// as the traversal stack.
@compute @workgroup_size(256)
fn ploc_slots(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let s = global_index(wg, groups, lid);
    let n = params.n;
    if s >= n {
        return;
    }
    var first = 0u;
    var kept_above = 0u;
    var steps = 0u;
    var link = links[n - 1u + s];
    while link != NO_PARENT && steps <= PLOC_MAX_WALK {
        let p = link >> 1u;
        if (link & 1u) != 0u {
            first += ploc_count_of(cnodes[3u * p + 2u].x);
        }
        // Kept nodes below a merged one lie inside its leaf: start again.
        kept_above = select(0u, kept_above + 1u, cnodes[3u * p + 2u].z != 0u);
        steps += 1u;
        link = links[p];
    }
    if steps > PLOC_MAX_WALK || kept_above >= PLOC_STACK {
        ploc_state[PLOC_TOO_DEEP] = 1u;
        return;
    }
    keys_out[first] = values_in[s];
}


// A child's row pair: a slot, a merged node (a leaf over its slots) or a kept
// node at `index`; `first` is its first slot.
fn ploc_child_rows(c: u32, index: u32, first: u32, at: u32) {
    if (c & LEAF) != 0u {
        let s = c & ~LEAF;
        rows_of(slot_boxes[2u * s].xyz, slot_boxes[2u * s + 1u].xyz, first, 1u, at);
        return;
    }
    let lo = bitcast<vec3<f32>>(cnodes[3u * c].xyz);
    let hi = bitcast<vec3<f32>>(cnodes[3u * c + 1u].xyz);
    if cnodes[3u * c + 2u].z == 0u {
        rows_of(lo, hi, first, cnodes[3u * c + 1u].w, at);
    } else {
        rows_of(lo, hi, index, 0u, at);
    }
}

// Step 5 for node k: nothing for a merged node or one under a merged node;
// else its depth-first index and first slot, from a walk up, and its node. A
// merged root is one leaf over every slot.
@compute @workgroup_size(256)
fn ploc_emit(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = global_index(wg, groups, lid);
    let n = params.n;
    let root = n - 2u;
    if k > root {
        return;
    }
    if cnodes[3u * k + 2u].z == 0u {
        if k == root {
            rows_of(bitcast<vec3<f32>>(cnodes[3u * k].xyz), bitcast<vec3<f32>>(cnodes[3u * k + 1u].xyz), 0u, n, 0u);
            let inf = 0x7f800000u;
            nodes[2] = vec4<u32>(inf, inf, inf, EMPTY_CHILD);
            nodes[3] = vec4<u32>(inf, inf, inf, 0u);
        }
        return;
    }
    var index = 0u;
    var first = 0u;
    var steps = 0u;
    var c = k;
    while c != root {
        let link = links[c];
        let p = link >> 1u;
        steps += 1u;
        if cnodes[3u * p + 2u].z == 0u || steps > PLOC_MAX_WALK {
            return;
        }
        if (link & 1u) != 0u {
            let left = cnodes[3u * p + 2u].x;
            index += 1u + ploc_kept(left);
            first += ploc_count_of(left);
        } else {
            index += 1u;
        }
        c = p;
    }
    if index + 1u >= n {
        return; // only in a tree too deep to use (flagged by ploc_slots)
    }
    let ch = cnodes[3u * k + 2u];
    let at = 4u * index;
    ploc_child_rows(ch.x, index + 1u, first, at);
    ploc_child_rows(ch.y, index + 1u + ploc_kept(ch.x), first + ploc_count_of(ch.x), at + 2u);
}
