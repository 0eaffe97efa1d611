// Heightfields: mirrors prism_core::heightfield (ray_heightfield, the scalar
// walk, with its Walk methods as functions of Walk).
//
// Where the data lie: a module compiled for a scene holding a heightfield
// (SCENE_KINDS has SCENE_HEIGHTFIELDS, types.wgsl) finds them in the scene's
// `slot_materials` buffer after its arrayLength(&prims) slot materials (the
// binding is shared: one more storage buffer would pass the eight a stage may
// count on, entry.wgsl; the light grid, which point_grid.wgsl reads at the
// same place, is never built for such a scene): a 4-word header
// (heightfield count, height count, 0, 0), then each GpuHeightfield record as
// its 40 words (prism_core::Accel::heightfields), then every heightfield's
// pyramid of maximum heights as f32 bits (Accel::heightfield_heights). The
// host side is upload.rs's slot_words.
//
// Bits: every value is core's expression in core's order; a product that
// meets an addition or subtraction is rounded on its own (mul_rn, math.wgsl),
// f32 -> u32 conversions truncate and saturate (hf_to_u32, as Rust's `as
// u32`), and u32 -> f32 conversions (plane indices) are exact below 2^24 cells
// a side, where WGSL's and Rust's roundings cannot differ.
//
// A hit carries its cell and face to the hit writer in the u and v words of
// the walks' Hit (v = the cell's bits, u = the face's: a heightfield hit's u
// and v are 0 in core, and these words are only moved, never computed on);
// store_hit (entry.wgsl) and geometric_normal (integrator.wgsl) read them
// back for a heightfield's slot, and store_hit writes u = v = 0.

// mirrors prism_core::heightfield::FACE_TOP and the other faces
const FACE_TOP: u32 = 0u;
const FACE_BOTTOM: u32 = 1u;
const FACE_NEG_X: u32 = 2u;
const FACE_POS_X: u32 = 3u;
const FACE_NEG_Z: u32 = 4u;
const FACE_POS_Z: u32 = 5u;

// mirrors prism_core::heightfield::face_normal
fn face_normal(face: u32) -> vec3<f32> {
    switch face {
        case 0u: { return vec3<f32>(0.0, 1.0, 0.0); }
        case 1u: { return vec3<f32>(0.0, -1.0, 0.0); }
        case 2u: { return vec3<f32>(-1.0, 0.0, 0.0); }
        case 3u: { return vec3<f32>(1.0, 0.0, 0.0); }
        case 4u: { return vec3<f32>(0.0, 0.0, -1.0); }
        case 5u: { return vec3<f32>(0.0, 0.0, 1.0); }
        default: { return vec3<f32>(0.0); }
    }
}

// Words of one GpuHeightfield record.
const HF_RECORD_WORDS: u32 = 40u;

// Rust's `x as u32`: truncation towards zero, 0 for NaN and negative values,
// u32::MAX past it.
fn hf_to_u32(x: f32) -> u32 {
    if !(x >= 1.0) {
        return 0u;
    }
    if x >= 4294967296.0 {
        return 0xffffffffu;
    }
    return u32(x);
}

// mirrors prism_core::heightfield::level_cells
fn level_cells(n: u32, level: u32) -> u32 {
    return ((n - 1u) >> level) + 1u;
}

// mirrors prism_core::heightfield::Slabs
struct Slabs {
    txn: f32,
    txf: f32,
    tyn: f32,
    tyf: f32,
    tzn: f32,
    tzf: f32,
}

// mirrors prism_core::heightfield::Slabs::near
fn slabs_near(s: Slabs) -> f32 {
    return max(max(s.txn, s.tzn), s.tyn);
}

// mirrors prism_core::heightfield::Slabs::far
fn slabs_far(s: Slabs) -> f32 {
    return min(min(s.txf, s.tzf), s.tyf);
}

// mirrors prism_core::heightfield::HeightfieldHit (found: Some)
struct HeightfieldHit {
    found: bool,
    t: f32,
    cell: u32,
    face: u32,
}

fn hf_none() -> HeightfieldHit {
    return HeightfieldHit(false, 0.0, 0u, 0u);
}

// mirrors prism_core::heightfield::Walk (one ray's walk over one heightfield)
// `record` is the word index of its GpuHeightfield in slot_materials,
// `heights` that of the height array.
struct Walk {
    record: u32,
    heights: u32,
    width: u32,
    depth: u32,
    cs: f32,
    inv_cs: f32,
    top: u32,
    o: vec3<f32>,
    d: vec3<f32>,
    inv: vec3<f32>,
    oc: vec3<f32>,
    dc: vec3<f32>,
    par: vec3<bool>,
    pos: vec3<bool>,
    ty0: f32,
    up_always: bool,
}

// mirrors prism_core::heightfield::Walk::plane
fn walk_plane(w: Walk, i: u32) -> f32 {
    return mul_rn(f32(i), w.cs);
}

// mirrors prism_core::heightfield::Walk::entry
fn walk_entry(w: Walk, level: u32, i: u32, j: u32) -> f32 {
    let base = slot_materials[w.record + 8u + level];
    let lw = level_cells(w.width, level);
    // Every level of every heightfield lies inside the heights, which number
    // fewer than 2^32 (prism_core::gpu::check_heightfields, run on the host
    // before upload, as check_tree for the trees): core's `heights.get(k)` is
    // always Some, so no check here (2% more of the city's rays a second on
    // an H200); buffer bounds checks stay.
    let k = base + j * lw + i;
    return bitcast<f32>(slot_materials[w.heights + k]);
}

// mirrors prism_core::heightfield::Walk::slab, one end of it: the far end
// (`far`) or the near one of an axis (its origin, inverse direction, whether
// parallel and whether positive) between the planes `a` and `b` (indices).
// Core takes both planes' distances and picks near and far by the ray's sign;
// this takes the distance of the plane it would pick, the same value with one
// product. Parallel to the axis: the whole line.
fn walk_slab(w: Walk, far: bool, par: bool, pos: bool, o: f32, inv: f32, a: u32, b: u32) -> f32 {
    if par {
        return select(-f32_infinity(), f32_infinity(), far);
    }
    return (walk_plane(w, select(a, b, pos == far)) - o) * inv;
}

// mirrors prism_core::heightfield::Walk::slab_y
fn walk_slab_y(w: Walk, h: f32) -> vec2<f32> {
    if w.par.y {
        if 0.0 <= w.o.y && w.o.y <= h {
            return vec2<f32>(-f32_infinity(), f32_infinity());
        }
        return vec2<f32>(f32_infinity(), -f32_infinity());
    }
    let th = (h - w.o.y) * w.inv.y;
    return select(vec2<f32>(th, w.ty0), vec2<f32>(w.ty0, th), w.pos.y);
}

// mirrors prism_core::heightfield::Walk::slabs
fn walk_slabs(w: Walk, x0: u32, x1: u32, z0: u32, z1: u32, h: f32) -> Slabs {
    let y = walk_slab_y(w, h);
    return Slabs(
        walk_slab(w, false, w.par.x, w.pos.x, w.o.x, w.inv.x, x0, x1),
        walk_slab(w, true, w.par.x, w.pos.x, w.o.x, w.inv.x, x0, x1),
        y.x,
        y.y,
        walk_slab(w, false, w.par.z, w.pos.z, w.o.z, w.inv.z, z0, z1),
        walk_slab(w, true, w.par.z, w.pos.z, w.o.z, w.inv.z, z0, z1),
    );
}

// mirrors prism_core::heightfield::Walk::crossing (found: Some((t, face)))
fn walk_crossing(w: Walk, s: Slabs, h: f32, tmin: f32, tmax: f32) -> HeightfieldHit {
    let near = slabs_near(s);
    let far = slabs_far(s);
    if !(h > 0.0 && near <= widen_exit(far)) {
        return hf_none();
    }
    if near > tmin {
        if near >= tmax {
            return hf_none();
        }
        var face: u32;
        if s.tyn == near {
            face = select(FACE_TOP, FACE_BOTTOM, w.pos.y);
        } else if s.txn == near {
            face = select(FACE_POS_X, FACE_NEG_X, w.pos.x);
        } else {
            face = select(FACE_POS_Z, FACE_NEG_Z, w.pos.z);
        }
        return HeightfieldHit(true, near, 0u, face);
    } else if far > tmin && far < tmax {
        var face: u32;
        if s.tyf == far {
            face = select(FACE_BOTTOM, FACE_TOP, w.pos.y);
        } else if s.txf == far {
            face = select(FACE_NEG_X, FACE_POS_X, w.pos.x);
        } else {
            face = select(FACE_NEG_Z, FACE_POS_Z, w.pos.z);
        }
        return HeightfieldHit(true, far, 0u, face);
    }
    return hf_none();
}

// mirrors prism_core::heightfield::Walk::cell_crossing
fn walk_cell_crossing(w: Walk, x: u32, z: u32, tmin: f32, tmax: f32) -> HeightfieldHit {
    let h = walk_entry(w, 0u, x, z);
    let s = walk_slabs(w, x, x + 1u, z, z + 1u, h);
    var r = walk_crossing(w, s, h, tmin, tmax);
    r.cell = z * w.width + x;
    return r;
}

// mirrors prism_core::heightfield::Walk::cell_of
fn walk_cell_of(w: Walk, v: f32, n: u32) -> u32 {
    var k = min(hf_to_u32(v * w.inv_cs), n - 1u);
    if k > 0u && v < walk_plane(w, k) {
        k -= 1u;
    } else if k + 1u < n && v >= walk_plane(w, k + 1u) {
        k += 1u;
    }
    return k;
}

// mirrors prism_core::heightfield::Walk::follow (for the axis of `oc`, `dc`
// and `pos`)
fn walk_follow(oc: f32, dc: f32, pos: bool, t: f32, n: u32, lo: u32, hi: u32, current: u32) -> u32 {
    let c = min(max(min(hf_to_u32(oc + mul_rn(t, dc)), n - 1u), lo), hi - 1u);
    return select(min(c, current), max(c, current), pos);
}

// mirrors prism_core::heightfield::Walk::walk
fn walk_walk(w: Walk, cx_in: u32, cz_in: u32, level_in: u32, tmin: f32, tmax: f32) -> HeightfieldHit {
    let wd = w.width;
    let dp = w.depth;
    var cx = cx_in;
    var cz = cz_in;
    var level = level_in;
    var t_lo = tmin;
    loop {
        let nx = cx >> level;
        let nz = cz >> level;
        let x0 = nx << level;
        let z0 = nz << level;
        let x1 = min((nx + 1u) << level, wd);
        let z1 = min((nz + 1u) << level, dp);
        let m = walk_entry(w, level, nx, nz);
        // walk_slabs in two parts: every step reads the far x and z planes
        // and the y slab; only a step at level 0 (the crossing) reads the
        // near x and z planes, so only it computes them (four plane products
        // fewer on every step above level 0).
        var s: Slabs;
        s.txf = walk_slab(w, true, w.par.x, w.pos.x, w.o.x, w.inv.x, x0, x1);
        s.tzf = walk_slab(w, true, w.par.z, w.pos.z, w.o.z, w.inv.z, z0, z1);
        let y = walk_slab_y(w, m);
        s.tyn = y.x;
        s.tyf = y.y;
        if level == 0u {
            s.txn = walk_slab(w, false, w.par.x, w.pos.x, w.o.x, w.inv.x, x0, x1);
            s.tzn = walk_slab(w, false, w.par.z, w.pos.z, w.o.z, w.inv.z, z0, z1);
            var c = walk_crossing(w, s, m, tmin, tmax);
            if c.found {
                c.cell = cz * wd + cx;
                return c;
            }
        } else {
            let far = widen_exit(slabs_far(s));
            if m > 0.0 && s.tyn <= far && s.tyn < tmax && far >= t_lo {
                level -= 1u;
                continue;
            }
        }
        let t_exit = min(s.txf, s.tzf);
        if t_exit >= tmax || t_exit != t_exit {
            return hf_none();
        }
        var new_parent: bool;
        if s.txf == s.tzf {
            if level > 0u {
                level -= 1u;
                continue;
            }
            let ax = select(cx - 1u, cx + 1u, w.pos.x);
            let bz = select(cz - 1u, cz + 1u, w.pos.z);
            var side = hf_none();
            if ax < wd {
                side = walk_cell_crossing(w, ax, cz, tmin, tmax);
            }
            if bz < dp {
                let limit = select(tmax, side.t, side.found);
                let h = walk_cell_crossing(w, cx, bz, tmin, limit);
                if h.found {
                    side = h;
                }
            }
            if side.found {
                return side;
            }
            new_parent = (ax >> 1u) != (cx >> 1u) || (bz >> 1u) != (cz >> 1u);
            cx = ax;
            cz = bz;
            if cx >= wd || cz >= dp {
                return hf_none();
            }
        } else if s.txf < s.tzf {
            cx = select(x0 - 1u, x1, w.pos.x);
            if cx >= wd {
                return hf_none();
            }
            new_parent = (cx >> (level + 1u)) != (nx >> 1u);
            if !w.par.z {
                cz = walk_follow(w.oc.z, w.dc.z, w.pos.z, t_exit, dp, z0, z1, cz);
            }
        } else {
            cz = select(z0 - 1u, z1, w.pos.z);
            if cz >= dp {
                return hf_none();
            }
            new_parent = (cz >> (level + 1u)) != (nz >> 1u);
            if !w.par.x {
                cx = walk_follow(w.oc.x, w.dc.x, w.pos.x, t_exit, wd, x0, x1, cx);
            }
        }
        t_lo = t_exit;
        if level < w.top && (w.up_always || new_parent) {
            level += 1u;
        }
    }
    return hf_none();
}

// mirrors prism_core::heightfield::Walk::cells_on (first cell, count) of the
// cells (one or two) whose closed slab holds `v`.
fn walk_cells_on(w: Walk, v: f32, n: u32) -> vec2<u32> {
    let k = walk_cell_of(w, v, n);
    if k > 0u && v == walk_plane(w, k) {
        return vec2<u32>(k - 1u, 2u);
    }
    return vec2<u32>(k, 1u);
}

// mirrors prism_core::heightfield::Walk::run_parallel
fn walk_run_parallel(w: Walk, tmin: f32, tmax: f32) -> HeightfieldHit {
    let wd = w.width;
    let dp = w.depth;
    let m = walk_entry(w, w.top, 0u, 0u);
    let s = walk_slabs(w, 0u, wd, 0u, dp, m);
    let t0 = max(slabs_near(s), tmin);
    var xs = vec2<u32>(0u, 1u);
    if w.par.x {
        xs = walk_cells_on(w, w.o.x, wd);
    } else {
        xs.x = walk_cell_of(w, w.o.x + mul_rn(t0, w.d.x), wd);
    }
    var zs = vec2<u32>(0u, 1u);
    if w.par.z {
        zs = walk_cells_on(w, w.o.z, dp);
    } else {
        zs.x = walk_cell_of(w, w.o.z + mul_rn(t0, w.d.z), dp);
    }
    let level = select(0u, w.top - 1u, w.top > 0u);
    var best = hf_none();
    for (var i = 0u; i < xs.y; i += 1u) {
        for (var j = 0u; j < zs.y; j += 1u) {
            let limit = select(tmax, best.t, best.found);
            let h = walk_walk(w, xs.x + i, zs.x + j, level, tmin, limit);
            if h.found {
                best = h;
            }
        }
    }
    return best;
}

// mirrors prism_core::heightfield::start_level_of_run
// (floor(log2(a / b)) - 1 from the bits of a and b, no division: every
// backend finds the same level)
fn start_level_of_run(a: f32, b: f32, below_root: u32) -> u32 {
    let ab = bitcast<u32>(a);
    let bb = bitcast<u32>(b);
    // Read as bits (a shader compiler may take NaN and infinity away from
    // float comparisons): a positive normal number is at least 0x00800000
    // and below 0x7F800000.
    if ab < 0x00800000u || ab > 0x7F800000u {
        return 0u;
    }
    if bb < 0x00800000u || bb > 0x7F800000u || ab == 0x7F800000u {
        return below_root;
    }
    let smaller = select(0, 1, (ab & 0x7FFFFFu) < (bb & 0x7FFFFFu));
    let log2 = i32(ab >> 23u) - i32(bb >> 23u) - smaller;
    return u32(clamp(log2 - 1, 0, i32(below_root)));
}

// mirrors prism_core::heightfield::Walk::start_level
fn walk_start_level(w: Walk, t0: f32) -> u32 {
    let below_root = select(0u, w.top - 1u, w.top > 0u);
    if w.d.y < 0.0 {
        let h0 = w.o.y + mul_rn(t0, w.d.y);
        let across = max(abs(w.d.x), abs(w.d.z));
        return start_level_of_run(mul_rn(h0, across), mul_rn(-w.d.y, w.cs), below_root);
    }
    return below_root;
}

// mirrors prism_core::heightfield::Walk::run (with Walk::start)
fn walk_run(w: Walk, tmin: f32, tmax: f32) -> HeightfieldHit {
    let wd = w.width;
    let dp = w.depth;
    let m = walk_entry(w, w.top, 0u, 0u);
    let in_x = 0.0 <= w.o.x && w.o.x <= walk_plane(w, wd);
    let in_z = 0.0 <= w.o.z && w.o.z <= walk_plane(w, dp);
    if (w.par.x && !in_x) || (w.par.z && !in_z) {
        return hf_none();
    }
    let s = walk_slabs(w, 0u, wd, 0u, dp, m);
    let near = slabs_near(s);
    let far = widen_exit(slabs_far(s));
    if !(m > 0.0 && near <= far && near < tmax && far > tmin) {
        return hf_none();
    }
    if any(w.par) {
        return walk_run_parallel(w, tmin, tmax);
    }
    let t0 = max(near, tmin);
    let x = walk_cell_of(w, w.o.x + mul_rn(t0, w.d.x), wd);
    let z = walk_cell_of(w, w.o.z + mul_rn(t0, w.d.z), dp);
    return walk_walk(w, x, z, walk_start_level(w, t0), tmin, tmax);
}

// mirrors prism_core::heightfield::ray_heightfield (with Heightfields::hit
// and Walk::new): the heightfield record `p` against the ray of `pre` in
// (tmin, tmax). A hit has t, and in u and v its face's and cell's bits (see
// the top of this file).
fn ray_heightfield(pre: RayPre, p: Primitive, tmin: f32, tmax: f32) -> PrimHit {
    let header = arrayLength(&prims);
    let count = slot_materials[header];
    let index = bitcast<u32>(p.c.x);
    if index >= count {
        return prim_hit_none();
    }
    let record = header + 4u + index * HF_RECORD_WORDS;
    let width = slot_materials[record];
    let depth = slot_materials[record + 1u];
    let levels = slot_materials[record + 2u];
    let cs = bitcast<f32>(slot_materials[record + 4u]);
    let inv_cs = bitcast<f32>(slot_materials[record + 5u]);
    if width == 0u || depth == 0u || levels == 0u || levels >= HEIGHTFIELD_MAX_LEVELS || cs != cs || cs <= 0.0 {
        return prim_hit_none();
    }
    let o = pre.origin;
    let d = pre.dir;
    let inv = pre.inv_dir;
    let w = Walk(
        record,
        header + 4u + count * HF_RECORD_WORDS,
        width,
        depth,
        cs,
        inv_cs,
        levels - 1u,
        o,
        d,
        inv,
        mul3_rn(inv_cs, o),
        mul3_rn(inv_cs, d),
        d == vec3<f32>(0.0),
        inv > vec3<f32>(0.0),
        (0.0 - o.y) * inv.y,
        d.y > 0.0,
    );
    let h = walk_run(w, tmin, tmax);
    if !h.found {
        return prim_hit_none();
    }
    return PrimHit(true, h.t, bitcast<f32>(h.face), bitcast<f32>(h.cell));
}
