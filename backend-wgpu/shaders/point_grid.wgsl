// Candidate lists for rays through one point: mirrors prism_core::point_grid.
//
// The light grid (prism_core::point_grid::PointGrid of the scene's light) is
// stored in the scene's `slot_materials` buffer after its params.prim_count
// slot materials, which the material lookups index by slot and never read
// past: an 8-word header whose first word holds reach_squared's bits, then
// POINT_GRID_CELLS cells of 8 words (count, then seven slots). It is there
// when LIGHT_GRID (types.wgsl) is 1; the module is specialised per scene, as
// for OCTANT_COPIES. (A binding of its own would be a ninth storage buffer,
// one past the count an adapter may stop at.)

// mirrors prism_core::point_grid::POINT_GRID_SIDE
const POINT_GRID_SIDE: i32 = 64;
// mirrors prism_core::point_grid::POINT_GRID_SLOTS
const POINT_GRID_SLOTS: u32 = 7u;
// mirrors prism_core::point_grid::POINT_GRID_FULL
const POINT_GRID_FULL: u32 = 0xffffffffu;

// One face coordinate's cell: (x + 1) * SIDE / 2, truncated and clamped.
fn point_grid_index(x: f32) -> i32 {
    let c = i32((x + 1.0) * (f32(POINT_GRID_SIDE) * 0.5));
    return clamp(c, 0, POINT_GRID_SIDE - 1);
}

// The cell of direction `d`, or -1 for a zero or non-finite direction. A cell
// one off at a boundary (a division or product rounded another way) is still
// right: every cell is padded by far more than that.
// mirrors prism_core::point_grid::point_grid_cell
fn point_grid_cell(d: vec3<f32>) -> i32 {
    if !(f32_is_finite(d.x) && f32_is_finite(d.y) && f32_is_finite(d.z)) {
        return -1;
    }
    let a = abs(d);
    var face = 0;
    var major = a.x;
    var u = d.y;
    var v = d.z;
    if a.x >= a.y && a.x >= a.z {
        face = select(0, 1, d.x < 0.0);
    } else if a.y >= a.z {
        face = select(2, 3, d.y < 0.0);
        major = a.y;
        u = d.x;
    } else {
        face = select(4, 5, d.z < 0.0);
        major = a.z;
        u = d.x;
        v = d.y;
    }
    if major == 0.0 {
        return -1;
    }
    let r = 1.0 / major;
    return (face * POINT_GRID_SIDE + point_grid_index(v * r)) * POINT_GRID_SIDE + point_grid_index(u * r);
}

// Whether anything lies on the shadow ray `ray` (unit `dir` towards the light,
// which it reaches at tmax), from the candidates of the cell of -dir: 1 or 0,
// or -1 when the ray must walk the tree (a segment longer than the grid's
// reach, a bad direction, a full cell, a slot out of range).
// mirrors prism_core::point_grid::any_hit_listed
fn any_hit_listed(ray: Ray) -> i32 {
    let base = params.prim_count;
    let reach_squared = bitcast<f32>(slot_materials[base]);
    let length_squared = dot(ray.dir, ray.dir) * (ray.tmax * ray.tmax);
    if f32_is_nan(length_squared) || length_squared > reach_squared {
        return -1;
    }
    let cell = point_grid_cell(-ray.dir);
    if cell < 0 {
        return -1;
    }
    let at = base + 8u + u32(cell) * 8u;
    let count = slot_materials[at];
    if count > POINT_GRID_SLOTS {
        return -1;
    }
    let pre = ray_pre_new(ray);
    for (var k = 0u; k < count; k++) {
        let slot = slot_materials[at + 1u + k];
        if slot >= arrayLength(&prims) {
            return -1;
        }
        if ray_primitive(pre, prims[slot], ray.tmin, ray.tmax).hit {
            return 1;
        }
    }
    return 0;
}

// Whether the shadow ray `ray` towards the light is blocked: from the light
// grid where the scene has one, else by walking the tree; the same answer
// either way.
// mirrors prism_core::integrator::Tracer::light_blocked
fn tracer_light_blocked(ray: Ray) -> bool {
    if LIGHT_GRID == 1u {
        let listed = any_hit_listed(ray);
        if listed >= 0 {
            return listed == 1;
        }
    }
    return accel_occluded(ray);
}
