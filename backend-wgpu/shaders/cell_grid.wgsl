// Closest hits through a uniform grid of cells: mirrors prism_core::cell_grid,
// function for function as the CUDA backend's kernels/cell_grid.cuh (its
// default flat loop and early sphere miss; without its sphere records).
//
// The host builds the grid with the scene when core's cost model expects it
// to beat the tree (CellGrid::worthwhile) and the scene is flat, and then
// compiles the module with CELL_GRID (types.wgsl) set. The render kernels'
// closest hits (camera, bounce and mirror rays of path, whitted and ao) walk
// it; their shadow and occlusion rays, and the batch kernels, walk the tree.
// A frame some of whose rays may start too far away to walk the grid
// (CellGrid::walkable_from the camera and the scene's bounds) runs the module
// without CELL_GRID instead, so the walk needs no per-ray test.
//
// The walk's cell and distance computations may round differently from
// core's (fused products, WGSL's divisions): every primitive is listed in the
// cells its box, widened by CELL_GRID_PAD of the grid's size, overlaps, far
// more than that rounding, so the hits are core's.
//
// Layout: the grid lies in the scene's `slot_materials` words, after the slot
// materials and the light grid if there is one (a binding of its own would be
// a ninth storage buffer, one past the count an adapter may stop at; a scene
// holding a heightfield has no grid). The buffer's last word is the index `h`
// of the grid's 16-word header; every index below counts words of the buffer:
//   h +  0,  1,  2: lo (f32 bits)        h +  3: number of large primitives
//   h +  4,  5,  6: cell (f32 bits)      h +  7: where the cell offsets start
//   h +  8,  9, 10: inv_cell (f32 bits)  h + 11: where the slot lists start
//   h + 12, 13, 14: res                  h + 15: where the large slots start
// then the offsets (cells + 1 words), the slot lists and the large slots
// (prism_core::cell_grid::CellGrid's `offsets`, `slots` and `large`), then the
// last word. Host side: backend-wgpu/src/upload.rs, cell_grid_words.

// The grid's header, read once per walk.
struct GridHeader {
    lo: vec3<f32>,
    cell: vec3<f32>,
    inv_cell: vec3<f32>,
    res: vec3<u32>,
    large_count: u32,
    offsets_at: u32,
    slots_at: u32,
    large_at: u32,
}

// The header at the word the buffer's last word names.
fn grid_header() -> GridHeader {
    let h = slot_materials[arrayLength(&slot_materials) - 1u];
    return GridHeader(
        vec3<f32>(bitcast<f32>(slot_materials[h]), bitcast<f32>(slot_materials[h + 1u]), bitcast<f32>(slot_materials[h + 2u])),
        vec3<f32>(bitcast<f32>(slot_materials[h + 4u]), bitcast<f32>(slot_materials[h + 5u]), bitcast<f32>(slot_materials[h + 6u])),
        vec3<f32>(bitcast<f32>(slot_materials[h + 8u]), bitcast<f32>(slot_materials[h + 9u]), bitcast<f32>(slot_materials[h + 10u])),
        vec3<u32>(slot_materials[h + 12u], slot_materials[h + 13u], slot_materials[h + 14u]),
        slot_materials[h + 3u],
        slot_materials[h + 7u],
        slot_materials[h + 11u],
        slot_materials[h + 15u],
    );
}

// The grid's upper corner: lo + cell * res.
// mirrors prism_core::cell_grid::CellGrid::hi
fn cell_grid_hi(g: GridHeader) -> vec3<f32> {
    return g.lo + g.cell * vec3<f32>(g.res);
}

// Where the ray o + t d (inv = 1 / d) leaves cell c along one axis, moving
// step (-1, 0, 1): inf when it does not move along the axis.
// mirrors prism_core::cell_grid::CellGrid::boundary
fn cell_grid_boundary(lo: f32, cell: f32, o: f32, inv: f32, c: i32, step: i32) -> f32 {
    if step == 0 {
        return f32_infinity();
    }
    let face = c + select(0, 1, step > 0);
    return (lo + f32(face) * cell - o) * inv;
}

// The cell of coordinate x along one axis, clamped to the grid, as
// CellGrid::walk finds its first cell: floor((x - lo) * inv_cell), at least 0
// (f32_max takes a NaN there too, as core's max), at most res - 1 (clamped
// as a float, as core's saturating `as i32` then min).
fn grid_cell(x: f32, lo: f32, inv_cell: f32, res: u32) -> i32 {
    return i32(f32_min(f32_max(floor((x - lo) * inv_cell), 0.0), f32(res - 1u)));
}

// The sign of a direction component as a cell step.
fn grid_step(d: f32) -> i32 {
    return select(select(0, -1, d < 0.0), 1, d > 0.0);
}

// 1 / x for the walk: inf of x's sign for a zero, as core's Vec3::ONE / d
// (WGSL leaves a division by zero's result open). The reciprocals only place
// the walk's entry and faces; WGSL's division, up to 2.5 ulp off, stays far
// inside the padding (CELL_GRID_WALK_ROUNDING).
fn grid_inv(x: f32) -> f32 {
    if x == 0.0 {
        return f32_copysign(f32_infinity(), x);
    }
    return 1.0 / x;
}

// Test the primitive in `slot` (skipped when out of range); the better of
// its hit and `best`: the closure `test` of CellGrid::closest_hit. In a scene
// of spheres only, a sphere first takes sphere_missed_early (the same answers
// as ray_sphere alone, without its divisions and square root for the many
// spheres a walk passes by), as cell_grid.cuh's walk does; core's CPU walk
// leaves it out, where the division costs less than the branch.
fn grid_test(pre: RayPre, tmin: f32, slot: u32, best: Hit) -> Hit {
    if slot < arrayLength(&prims) {
        let p = prims[slot];
        if SCENE_KINDS == SCENE_SPHERES && sphere_missed_early(pre.origin, pre.dir, p.a.xyz, p.b.x) {
            return best;
        }
        let h = ray_primitive(pre, p, tmin, best.t);
        if h.hit {
            return Hit(h.t, h.u, h.v, slot, 0u);
        }
    }
    return best;
}

// A walk through the grid's cells (CellGrid::walk's locals): the ray, the
// current cell, the step and the distance to the next face along each axis,
// and where the walk ends.
struct GridWalk {
    o: vec3<f32>,
    inv: vec3<f32>,
    lo: vec3<f32>,
    cell: vec3<f32>,
    res: vec3<u32>,
    c: vec3<i32>,
    step: vec3<i32>,
    next: vec3<f32>,
    t1: f32,
}

// The number of the walk's current cell: (z * res.y + y) * res.x + x.
fn grid_cell_index(w: GridWalk) -> u32 {
    return (u32(w.c.z) * w.res.y + u32(w.c.y)) * w.res.x + u32(w.c.x);
}

// Step to the next cell across the nearest face (x, then y, then z on a tie);
// false when the walk ends: the best hit lies before that face, or the ray
// passes t1 or leaves the grid there (the tail of CellGrid::walk's loop).
fn grid_advance(w: ptr<function, GridWalk>, best_t: f32) -> bool {
    let next = (*w).next;
    var axis = 2u;
    if next.x <= next.y && next.x <= next.z {
        axis = 0u;
    } else if next.y <= next.z {
        axis = 1u;
    }
    let exit = next[axis];
    if best_t <= exit || f32_is_nan(exit) || exit >= (*w).t1 {
        return false;
    }
    if axis == 0u {
        (*w).c.x += (*w).step.x;
        (*w).next.x = cell_grid_boundary((*w).lo.x, (*w).cell.x, (*w).o.x, (*w).inv.x, (*w).c.x, (*w).step.x);
        return (*w).c.x >= 0 && (*w).c.x < i32((*w).res.x);
    }
    if axis == 1u {
        (*w).c.y += (*w).step.y;
        (*w).next.y = cell_grid_boundary((*w).lo.y, (*w).cell.y, (*w).o.y, (*w).inv.y, (*w).c.y, (*w).step.y);
        return (*w).c.y >= 0 && (*w).c.y < i32((*w).res.y);
    }
    (*w).c.z += (*w).step.z;
    (*w).next.z = cell_grid_boundary((*w).lo.z, (*w).cell.z, (*w).o.z, (*w).inv.z, (*w).c.z, (*w).step.z);
    return (*w).c.z >= 0 && (*w).c.z < i32((*w).res.z);
}

// The large primitives, then the cells the ray crosses near to far until the
// best hit lies before the end of the current cell. `prim` of the result is
// the slot; a miss has prim == NO_PRIM and t == +inf. Slots out of range are
// skipped. Core answers a ray that starts too far away to walk
// (CellGrid::walkable) from the tree; the host runs this module only for
// frames none of whose rays can start that far, so the walk has no such test.
// The walk is one loop whose every trip tests one listed primitive or steps to
// the next cell, as cell_grid.cuh's default, so that invocations in cells
// with different counts keep stepping together.
// mirrors prism_core::cell_grid::CellGrid::closest_hit
fn cell_grid_closest_hit(ray: Ray) -> Hit {
    let g = grid_header();
    let pre = ray_pre_new(ray);
    let tmin = ray.tmin;
    var best = Hit(ray.tmax, 0.0, 0.0, NO_PRIM, NO_INSTANCE);
    for (var k = 0u; k < g.large_count; k++) {
        best = grid_test(pre, tmin, slot_materials[g.large_at + k], best);
    }
    // CellGrid::walk
    var w: GridWalk;
    w.o = ray.origin;
    let d = ray.dir;
    w.inv = vec3<f32>(grid_inv(d.x), grid_inv(d.y), grid_inv(d.z));
    w.lo = g.lo;
    w.cell = g.cell;
    w.res = g.res;
    let hi = cell_grid_hi(g);
    // f32_min and f32_max drop the NaN of a 0 * inf (a ray parallel to a
    // face lying in its plane), as core's min and max.
    let ta = (w.lo - w.o) * w.inv;
    let tb = (hi - w.o) * w.inv;
    let t0 = f32_max(f32_max(f32_max(tmin, f32_min(ta.x, tb.x)), f32_min(ta.y, tb.y)), f32_min(ta.z, tb.z));
    w.t1 = f32_min(f32_min(f32_min(best.t, f32_max(ta.x, tb.x)), f32_max(ta.y, tb.y)), f32_max(ta.z, tb.z));
    if !(f32_is_nan(t0) || f32_is_nan(w.t1) || t0 > w.t1) {
        let p = w.o + d * t0;
        w.c = vec3<i32>(
            grid_cell(p.x, w.lo.x, g.inv_cell.x, w.res.x),
            grid_cell(p.y, w.lo.y, g.inv_cell.y, w.res.y),
            grid_cell(p.z, w.lo.z, g.inv_cell.z, w.res.z),
        );
        w.step = vec3<i32>(grid_step(d.x), grid_step(d.y), grid_step(d.z));
        w.next = vec3<f32>(
            cell_grid_boundary(w.lo.x, w.cell.x, w.o.x, w.inv.x, w.c.x, w.step.x),
            cell_grid_boundary(w.lo.y, w.cell.y, w.o.y, w.inv.y, w.c.y, w.step.y),
            cell_grid_boundary(w.lo.z, w.cell.z, w.o.z, w.inv.z, w.c.z, w.step.z),
        );
        // Each step moves one cell along one axis; the bound also ends a walk
        // that rounding stalls.
        let steps = w.res.x + w.res.y + w.res.z;
        var c = grid_cell_index(w);
        var first = slot_materials[g.offsets_at + c];
        var end = slot_materials[g.offsets_at + c + 1u];
        var walked = 0u;
        loop {
            if first < end {
                best = grid_test(pre, tmin, slot_materials[g.slots_at + first], best);
                first += 1u;
                continue;
            }
            walked += 1u;
            if walked >= steps || !grid_advance(&w, best.t) {
                break;
            }
            c = grid_cell_index(w);
            first = slot_materials[g.offsets_at + c];
            end = slot_materials[g.offsets_at + c + 1u];
        }
    }
    if !hit_is_hit(best) {
        best.t = f32_infinity();
    }
    return best;
}

// The closest hit of a render ray (camera, bounce or mirror ray): through the
// cell grid in a module with CELL_GRID (a flat scene's), else by
// accel_intersect_slot's walk. The same hits either way, except where two
// primitives tie at exactly the same t.
fn render_closest_hit(ray: Ray) -> Hit {
    if CELL_GRID == 1u && TWO_LEVEL == 0u {
        if (ray.mask & FLAT_MASK) == 0u {
            return hit_miss();
        }
        return cell_grid_closest_hit(ray);
    }
    return accel_intersect_slot(ray);
}
