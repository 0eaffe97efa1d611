// Two-level scenes (instances): the walk through the tree over the instances
// and, inside each instance it enters, its geometry's tree; mirrors
// prism_core::two_level. Compiled into every module and run where TWO_LEVEL
// (types.wgsl) is 1; a flat scene's module drops it as dead code.
//
// Buffers. `nodes` holds every geometry's tree from node 0 (absolute indices,
// as prism_core::Accel::nodes), then the instance records (GpuInstance: 64
// bytes, a node's size) from levels.instance_base, then the tree over the
// instances from levels.top_root (its inner child indices moved there, its
// leaves naming instances). Bindings of their own would be a ninth and tenth
// storage buffer, past the count an adapter may stop at.
//
// The walk. Both levels run in one loop over one stack (tl_stack), one node a
// step, so that the lane-refill kernels (refill.wgsl) step rays of either
// level side by side. In the top tree the nodes are tested with the world ray;
// a leaf child there is a reference to its instance (INSTANCE_REF | index),
// ordered and pushed as an inner child is. Reaching a reference enters the
// instance: its mask against the ray's, the ray carried into its object space
// (object_ray, whose products are rounded as core's) and that ray's set-up for
// the slab tests (the triangle test's part waits for the first leaf: most
// instances entered are left without one); the walk goes on at the
// geometry's root in the same step, the stack depth remembered, and popping
// below that depth leaves the instance.
//
// Every stack entry keeps its box's entry distance, and the closest-hit walk
// drops an entry that lies at or beyond the best hit when it pops it: core
// would visit that node and find its children beyond too (a child's box lies
// in its parent's), and enters an instance only while its box is nearer than
// the best hit. Only the order differs from core's (which enters a node's
// instances as soon as it meets them), so the hits are core's except where two
// primitives tie at exactly the same t. The flat-only accelerators (octant
// copies, light grid) are built over one flat tree and are not used.

// Marks a reference to an instance among node indices (on the stack and in
// TwoLevelWalk::node). Instance indices stay below 2^30
// (prism_core::instance::MAX_INSTANCES) and node indices below 2^31 (64
// bytes each in one binding).
const INSTANCE_REF: u32 = 0x80000000u;

// The two-level walks' stack: (node or instance reference, bits of its box's
// entry distance). STACK_ENTRIES is at least the two trees' depths together
// (ModuleConfig::for_accel): an instance is entered with at most the top
// tree's depth of entries below, and its own walk adds at most its tree's.
var<private> tl_stack: array<vec2<u32>, STACK_ENTRIES>;

// The record of instance `index`, which must be below levels.instance_count.
fn instance_record(index: u32) -> GpuInstance {
    let n = nodes[levels.instance_base + index];
    return GpuInstance(array<vec4<f32>, 3>(n.left_lo, n.left_hi, n.right_lo), n.right_hi);
}

// Row `r` of a world-to-object transform applied to the point `p`:
// ((r.x p.x + r.y p.y) + r.z p.z) + r.w, each product rounded on its own
// (mul_rn), as core's.
fn instance_row_point(r: vec4<f32>, p: vec3<f32>) -> f32 {
    return ((mul_rn(r.x, p.x) + mul_rn(r.y, p.y)) + mul_rn(r.z, p.z)) + r.w;
}

// Row `r` of a world-to-object transform applied to the vector `v`.
fn instance_row_vector(r: vec4<f32>, v: vec3<f32>) -> f32 {
    return (mul_rn(r.x, v.x) + mul_rn(r.y, v.y)) + mul_rn(r.z, v.z);
}

// mirrors prism_core::two_level::object_ray
fn object_ray(instance: GpuInstance, ray: Ray, tmax: f32) -> Ray {
    let m = instance.world_to_object;
    let origin = vec3<f32>(instance_row_point(m[0], ray.origin), instance_row_point(m[1], ray.origin), instance_row_point(m[2], ray.origin));
    let dir = vec3<f32>(instance_row_vector(m[0], ray.dir), instance_row_vector(m[1], ray.dir), instance_row_vector(m[2], ray.dir));
    return Ray(origin, ray.tmin, dir, tmax, ray.mask);
}

// mirrors prism_core::two_level::object_point
fn object_point(instance: GpuInstance, p: vec3<f32>) -> vec3<f32> {
    let m = instance.world_to_object;
    return vec3<f32>(instance_row_point(m[0], p), instance_row_point(m[1], p), instance_row_point(m[2], p));
}

// mirrors prism_core::two_level::world_normal
fn world_normal(instance: GpuInstance, n: vec3<f32>) -> vec3<f32> {
    let m = instance.world_to_object;
    return vec3<f32>(
        (mul_rn(m[0].x, n.x) + mul_rn(m[1].x, n.y)) + mul_rn(m[2].x, n.z),
        (mul_rn(m[0].y, n.x) + mul_rn(m[1].y, n.y)) + mul_rn(m[2].y, n.z),
        (mul_rn(m[0].z, n.x) + mul_rn(m[1].z, n.y)) + mul_rn(m[2].z, n.z),
    );
}

// The state of a two-level walk (closest or any hit) between two steps.
struct TwoLevelWalk {
    // The ray the nodes are tested with: the world ray's set-up in the top
    // tree (inverse direction only), the object ray's inside an instance.
    pre: RayPre,
    // The world ray, to enter instances from and to come back to.
    world: Ray,
    world_inv_dir: vec3<f32>,
    // The closest hit so far (its t: the walk's tmax); an any-hit walk keeps
    // the ray's tmax here.
    best: Hit,
    // The next node, or INSTANCE_REF | the instance to enter.
    node: u32,
    sp: u32,
    // The stack depth at which the instance walked was entered (0 in the top tree).
    base: u32,
    // The instance walked; NO_INSTANCE in the top tree.
    instance: u32,
    // Whether `pre` holds the object ray's axes and shear (ray_pre_triangles),
    // worked out at the first leaf the walk tests inside the instance: most
    // instances entered are left without one.
    triangles_ready: bool,
}

// The head of prism_core::two_level::TwoLevel::closest_hit and any_hit: the
// world ray's set-up for the slab tests (the top tree holds no primitives, so
// its shear is never read) at the root of the top tree.
fn two_level_begin(ray: Ray) -> TwoLevelWalk {
    let pre = ray_pre_slabs(ray);
    let best = Hit(ray.tmax, 0.0, 0.0, NO_PRIM, NO_INSTANCE);
    return TwoLevelWalk(pre, ray, pre.inv_dir, best, levels.top_root, 0u, 0u, NO_INSTANCE, false);
}

// Take the next entry of the stack that lies nearer than the best hit; false
// when none is left. An entry below the instance's first one leaves the
// instance: the world ray's set-up comes back.
fn two_level_pop(w: ptr<function, TwoLevelWalk>) -> bool {
    loop {
        if (*w).sp == 0u {
            return false;
        }
        (*w).sp -= 1u;
        if (*w).sp < (*w).base {
            (*w).base = 0u;
            (*w).instance = NO_INSTANCE;
            (*w).pre.origin = (*w).world.origin;
            (*w).pre.dir = (*w).world.dir;
            (*w).pre.inv_dir = (*w).world_inv_dir;
        }
        let entry = tl_stack[(*w).sp];
        if bitcast<f32>(entry.y) < (*w).best.t {
            (*w).node = entry.x;
            return true;
        }
    }
    return false;
}

// Enter the instance that (*w).node refers to (the `visit` of
// prism_core::two_level::TwoLevel::walk_top): if its mask shares a bit with
// the ray's, carry the ray into its object space (the slab tests' part of
// its set-up: the rest waits for a leaf) and go on at its geometry's root;
// otherwise pop. False when the walk is over.
fn two_level_enter(w: ptr<function, TwoLevelWalk>) -> bool {
    let index = (*w).node & ~INSTANCE_REF;
    if index < levels.instance_count {
        let record = instance_record(index);
        let info = bitcast<vec4<u32>>(record.info);
        if ((*w).world.mask & info.y) != 0u {
            (*w).pre = ray_pre_slabs(object_ray(record, (*w).world, (*w).best.t));
            (*w).triangles_ready = false;
            (*w).node = info.x;
            (*w).base = (*w).sp;
            (*w).instance = index;
            return true;
        }
    }
    return two_level_pop(w);
}

// Make the walk's node a node: enter the instances it refers to until one is
// entered (or the walk is over: false). A step that enters an instance goes
// on at its root, so the node test there runs beside the other lanes' steps.
fn two_level_enter_all(w: ptr<function, TwoLevelWalk>) -> bool {
    while ((*w).node & INSTANCE_REF) != 0u {
        if !two_level_enter(w) {
            return false;
        }
    }
    return true;
}

// The object ray's set-up for the triangle test, at the first leaf tested
// inside the instance.
fn two_level_triangles(w: ptr<function, TwoLevelWalk>) {
    if !(*w).triangles_ready {
        (*w).pre = ray_pre_triangles((*w).pre);
        (*w).triangles_ready = true;
    }
}

// Whether (*w).node lies in the tree being walked: below the instance records
// inside an instance, in the top tree outside. (Every tree is checked on the
// host, so this fails only for a record whose root is absent.)
fn two_level_node_in_range(w: ptr<function, TwoLevelWalk>) -> bool {
    let end = select(levels.top_end, levels.instance_base, (*w).instance != NO_INSTANCE);
    return (*w).node < end;
}

// Push (node, t) on the two-level stack (if there is room: the stack is as
// deep as the trees, see tl_stack).
fn two_level_push(w: ptr<function, TwoLevelWalk>, node: u32, t: f32) {
    if (*w).sp < STACK_ENTRIES {
        tl_stack[(*w).sp] = vec2<u32>(node, bitcast<u32>(t));
        (*w).sp += 1u;
    }
}

// One step of the two-level closest-hit walk: visit one node of either tree
// (inside an instance as closest_hit_step does, leaves tested right away,
// nearest first), after entering the instance the walk reached; false when
// the walk is over.
fn two_level_closest_step(w: ptr<function, TwoLevelWalk>) -> bool {
    if !two_level_enter_all(w) {
        return false;
    }
    if !two_level_node_in_range(w) {
        return two_level_pop(w);
    }
    let pre = (*w).pre;
    let tmin = (*w).world.tmin;
    let n = nodes[(*w).node];
    let tl = ray_aabb(pre, n.left_lo.xyz, n.left_hi.xyz, tmin, (*w).best.t);
    let tr = ray_aabb(pre, n.right_lo.xyz, n.right_hi.xyz, tmin, (*w).best.t);
    let l_index = bitcast<u32>(n.left_lo.w);
    let l_count = bitcast<u32>(n.left_hi.w);
    let r_index = bitcast<u32>(n.right_lo.w);
    let r_count = bitcast<u32>(n.right_hi.w);
    let swap = tr < tl;
    var t_near = select(tl, tr, swap);
    var near = select(l_index, r_index, swap);
    let near_count = select(l_count, r_count, swap);
    var t_far = select(tr, tl, swap);
    var far = select(r_index, l_index, swap);
    let far_count = select(r_count, l_count, swap);
    if near_count > 0u || far_count > 0u {
        if (*w).instance != NO_INSTANCE {
            // Primitives: the near leaf, then the far one if still nearer
            // than the best hit.
            var leaves = vec4<u32>(0u);
            if near_count > 0u {
                if t_near < (*w).best.t {
                    leaves.x = near;
                    leaves.y = near_count;
                }
                t_near = f32_infinity();
            }
            let t_far_leaf = t_far;
            if far_count > 0u {
                leaves.z = far;
                leaves.w = far_count;
                t_far = f32_infinity();
            }
            if leaves.y != 0u || leaves.w != 0u {
                two_level_triangles(w);
                (*w).best = leaves_closest((*w).pre, leaves, t_far_leaf, tmin, (*w).instance, (*w).best);
            }
        } else {
            // Instances: walked to as nodes are (the top tree's leaves hold one each).
            near = select(near, near | INSTANCE_REF, near_count > 0u);
            far = select(far, far | INSTANCE_REF, far_count > 0u);
        }
    }
    let go_near = t_near < (*w).best.t;
    let go_far = t_far < (*w).best.t;
    if go_near && go_far {
        two_level_push(w, far, t_far);
        (*w).node = near;
    } else if go_near {
        (*w).node = near;
    } else if go_far {
        (*w).node = far;
    } else {
        return two_level_pop(w);
    }
    return true;
}

// The tail of prism_core::two_level::TwoLevel::closest_hit.
fn two_level_closest_end(w: TwoLevelWalk) -> Hit {
    var best = w.best;
    if !hit_is_hit(best) {
        best.t = f32_infinity();
    }
    return best;
}

// mirrors prism_core::two_level::TwoLevel::closest_hit
fn two_level_closest_hit(ray: Ray) -> Hit {
    var w = two_level_begin(ray);
    while two_level_closest_step(&w) {
    }
    return two_level_closest_end(w);
}

// One step of the two-level any-hit walk (inside an instance as any_hit_step
// does), after entering the instance the walk reached: STEP_HIT or STEP_MISS
// when the walk ends, else STEP_MORE.
fn two_level_any_step(w: ptr<function, TwoLevelWalk>) -> u32 {
    if !two_level_enter_all(w) {
        return STEP_MISS;
    }
    if !two_level_node_in_range(w) {
        return select(STEP_MISS, STEP_MORE, two_level_pop(w));
    }
    let pre = (*w).pre;
    let tmin = (*w).world.tmin;
    let tmax = (*w).best.t;
    let n = nodes[(*w).node];
    let tl = ray_aabb(pre, n.left_lo.xyz, n.left_hi.xyz, tmin, tmax);
    let tr = ray_aabb(pre, n.right_lo.xyz, n.right_hi.xyz, tmin, tmax);
    var l_index = bitcast<u32>(n.left_lo.w);
    let l_count = bitcast<u32>(n.left_hi.w);
    var r_index = bitcast<u32>(n.right_lo.w);
    let r_count = bitcast<u32>(n.right_hi.w);
    var go_left = tl < f32_infinity();
    var go_right = tr < f32_infinity();
    if l_count > 0u || r_count > 0u {
        if (*w).instance != NO_INSTANCE {
            // Primitives: left leaf first, then right; the first hit ends the walk.
            var leaves = vec4<u32>(0u);
            if go_left && l_count > 0u {
                leaves.x = l_index;
                leaves.y = l_count;
                go_left = false;
            }
            if go_right && r_count > 0u {
                leaves.z = r_index;
                leaves.w = r_count;
                go_right = false;
            }
            if leaves.y != 0u || leaves.w != 0u {
                two_level_triangles(w);
                if leaves_any((*w).pre, leaves, tmin, tmax) {
                    return STEP_HIT;
                }
            }
        } else {
            l_index = select(l_index, l_index | INSTANCE_REF, l_count > 0u);
            r_index = select(r_index, r_index | INSTANCE_REF, r_count > 0u);
        }
    }
    // The nearer child first: the likelier to hold an occluder.
    let swap = tr < tl;
    let near = select(l_index, r_index, swap);
    let far = select(r_index, l_index, swap);
    let go_near = select(go_left, go_right, swap);
    let go_far = select(go_right, go_left, swap);
    if go_near && go_far {
        // No entry is dropped when popped: the walk's tmax never changes.
        two_level_push(w, far, -f32_infinity());
        (*w).node = near;
    } else if go_near {
        (*w).node = near;
    } else if go_far {
        (*w).node = far;
    } else {
        return select(STEP_MISS, STEP_MORE, two_level_pop(w));
    }
    return STEP_MORE;
}

// mirrors prism_core::two_level::TwoLevel::any_hit
fn two_level_any_hit(ray: Ray) -> bool {
    var w = two_level_begin(ray);
    loop {
        let r = two_level_any_step(&w);
        if r != STEP_MORE {
            return r == STEP_HIT;
        }
    }
    return false;
}
