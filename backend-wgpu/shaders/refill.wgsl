// Batch kernels with lane refill, appended to the module where the adapter has
// subgroup operations (wgpu::Features::SUBGROUP). They give the same results as intersect_main and
// occluded_main (entry.wgsl), ray for ray, faster on incoherent rays.
//
// Each lane of a subgroup holds one ray and the subgroup steps all of them
// through the BVH one node at a time (closest_hit_step, any_hit_step); once
// at least half of the lanes are done, those lanes take the next rays of the
// chunk from a counter (one atomic per subgroup). Incoherent rays need very
// different numbers of steps: without refill a subgroup runs as long as its
// longest ray with most lanes idle. The CUDA backend's intersect_refill and
// occluded_refill (prism.cu) do the same with warp votes.
//
// The counter is ray_count[0] (entry.wgsl), cleared before each dispatch. The
// loop's exits are subgroup-uniform: `exhausted` comes from a broadcast value
// and the other test is a subgroupAny, so every subgroup operation runs with
// the whole subgroup.

// Lanes set in a subgroupBallot result.
fn ballot_count(b: vec4<u32>) -> u32 {
    return countOneBits(b.x) + countOneBits(b.y) + countOneBits(b.z) + countOneBits(b.w);
}

// Lanes below `lane` set in a subgroupBallot result.
fn ballot_count_below(b: vec4<u32>, lane: u32) -> u32 {
    var n = 0u;
    for (var k = 0u; k < 4u; k++) {
        let first = 32u * k;
        if lane >= first + 32u {
            n += countOneBits(b[k]);
        } else if lane > first {
            n += countOneBits(b[k] & ((1u << (lane - first)) - 1u));
        }
    }
    return n;
}

// The lowest lane set in a subgroupBallot result (which must not be empty).
fn ballot_first(b: vec4<u32>) -> u32 {
    for (var k = 0u; k < 3u; k++) {
        if b[k] != 0u {
            return 32u * k + firstTrailingBit(b[k]);
        }
    }
    return 96u + firstTrailingBit(b.w);
}

// Claim `idle` rays of the chunk for the subgroup: the first ray's index,
// the same in every lane. The lowest lane makes the one atomic addition and
// subgroupBroadcastFirst reads that same lane.
fn claim_rays(lane: u32, idle: u32) -> u32 {
    var base = 0u;
    if lane == ballot_first(subgroupBallot(true)) {
        base = atomicAdd(&ray_count[0], idle);
    }
    return subgroupBroadcastFirst(base);
}

// No ray for this lane (refill's answer).
const NO_RAY: u32 = 0xffffffffu;

// The refill step both kernels take at the top of their loop, with the whole
// subgroup: once at least half of its lanes are idle (`busy` false), each idle
// lane gets the next ray of the chunk. Returns the lane's new ray, or NO_RAY;
// sets `exhausted` (the same in every lane) once the chunk's rays are all given out.
fn refill(lane: u32, size: u32, busy: bool, exhausted: ptr<function, bool>) -> u32 {
    let idle = subgroupBallot(!busy);
    let idle_count = ballot_count(idle);
    if *exhausted || idle_count < max(size / 2u, 1u) {
        return NO_RAY;
    }
    let base = claim_rays(lane, idle_count);
    *exhausted = base + idle_count >= chunk.count;
    if busy {
        return NO_RAY;
    }
    let i = base + ballot_count_below(idle, lane);
    return select(NO_RAY, i, i < chunk.count);
}

// A two-level walk's lane that is to enter an instance (two_level.wgsl) waits
// until at least 1 / ENTRY_WAIT_SHARE of the subgroup's busy lanes are to, or
// no other lane can step: entering (the object ray and its set-up: three
// correctly rounded divisions) costs a few node steps, and the subgroup runs
// it for all its entering lanes at once, so entries made as they come
// (some 9% of a diffuse ray's steps on bunny-x1000) would put it in nearly
// every step of every subgroup. Waiting lanes idle meanwhile; a quarter
// keeps that share small.
const ENTRY_WAIT_SHARE: u32 = 4u;

// Whether the lane steps the two-level walk `w` now (it is busy, and either
// has a node to visit or enters an instance with enough others; see
// ENTRY_WAIT_SHARE). With the whole subgroup.
fn two_level_steps_now(w: ptr<function, TwoLevelWalk>, busy: bool) -> bool {
    let entering = busy && ((*w).node & INSTANCE_REF) != 0u;
    let waiting = ballot_count(subgroupBallot(entering));
    let stepping = ballot_count(subgroupBallot(busy));
    return busy && (!entering || waiting * ENTRY_WAIT_SHARE >= stepping);
}

// The head of prism_core::traverse::Accel::intersect_slot and occluded for
// a flat scene's batch ray: one whose mask shares no bit with FLAT_MASK
// starts at no node, so that its first step ends it with a miss.
fn flat_hidden(ray: Ray) -> bool {
    return (ray.mask & FLAT_MASK) == 0u;
}

// Closest hit of each ray of the chunk, as intersect_main, with lane refill.
// A flat scene's rays take the flat walk's steps (c), a two-level scene's the
// two-level walk's (w; TWO_LEVEL is a constant, so each module keeps one).
@compute @workgroup_size(BATCH_SIZE)
fn intersect_refill(@builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) size: u32) {
    var c: ClosestHit;
    var w: TwoLevelWalk;
    var ray_index = 0u;
    var busy = false;
    var exhausted = false;
    loop {
        let i = refill(lane, size, busy, &exhausted);
        if i != NO_RAY {
            let ray = batch_ray(i);
            if TWO_LEVEL == 1u {
                w = two_level_begin(ray);
            } else {
                c = closest_hit_begin(ray);
                if flat_hidden(ray) {
                    c.node = EMPTY_CHILD;
                }
            }
            ray_index = i;
            busy = true;
        }
        if !subgroupAny(busy) {
            if exhausted {
                break;
            }
            continue;
        }
        if TWO_LEVEL == 1u {
            if two_level_steps_now(&w, busy) && !two_level_closest_step(&w) {
                store_hit(ray_index, two_level_closest_end(w));
                busy = false;
            }
        } else if busy {
            if !closest_hit_step(&c) {
                store_hit(ray_index, closest_hit_end(c));
                busy = false;
            }
        }
    }
}

// Whether anything lies on each ray of the chunk, as occluded_main, with lane
// refill (flat or two-level, as intersect_refill).
@compute @workgroup_size(BATCH_SIZE)
fn occluded_refill(@builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) size: u32) {
    var a: AnyHit;
    var w: TwoLevelWalk;
    var ray_index = 0u;
    var busy = false;
    var exhausted = false;
    loop {
        let i = refill(lane, size, busy, &exhausted);
        if i != NO_RAY {
            let ray = batch_ray(i);
            if TWO_LEVEL == 1u {
                w = two_level_begin(ray);
            } else {
                a = any_hit_begin(ray);
                if flat_hidden(ray) {
                    a.node = EMPTY_CHILD;
                }
            }
            ray_index = i;
            busy = true;
        }
        if !subgroupAny(busy) {
            if exhausted {
                break;
            }
            continue;
        }
        var steps = busy;
        if TWO_LEVEL == 1u {
            steps = two_level_steps_now(&w, busy);
        }
        if steps {
            var r: u32;
            if TWO_LEVEL == 1u {
                r = two_level_any_step(&w);
            } else {
                r = any_hit_step(&a);
            }
            if r != STEP_MORE {
                out_words[ray_index] = select(0u, 1u, r == STEP_HIT);
                busy = false;
            }
        }
    }
}
