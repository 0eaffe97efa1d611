// BVH traversal over the scene buffers `nodes` and `prims` (bound in
// entry.wgsl): iterative, front to back, fixed stack; mirrors
// prism_core::traverse, where the same functions take the slices as arguments.

// The traversal stack. WGSL zero-fills every function-scope `var`, so a stack
// declared inside closest_hit / any_hit would cost 64 stores per call; a
// private-scope one is zeroed once per invocation. The two functions never
// nest, so they share it.
var<private> stack: array<u32, TRAVERSAL_STACK_SIZE>;

// mirrors prism_core::traverse::ray_primitive
fn ray_primitive(pre: RayPre, p: Primitive, tmin: f32, tmax: f32) -> PrimHit {
    if bitcast<u32>(p.b.w) == KIND_SPHERE {
        return ray_sphere(pre.origin, pre.dir, p.a.xyz, p.b.x, tmin, tmax);
    }
    return ray_triangle(pre, p.a.xyz, p.b.xyz, p.c.xyz, tmin, tmax);
}

// Whether prims[first .. first + count] lies inside the buffer (core: `prims.get(range)`).
fn leaf_in_range(first: u32, count: u32) -> bool {
    let len = arrayLength(&prims);
    return first <= len && count <= len - first;
}

// mirrors prism_core::traverse::leaf_closest
fn leaf_closest(pre: RayPre, first: u32, count: u32, tmin: f32, best: ptr<function, Hit>) {
    if !leaf_in_range(first, count) {
        return;
    }
    for (var k = 0u; k < count; k++) {
        let h = ray_primitive(pre, prims[first + k], tmin, (*best).t);
        if h.hit {
            *best = Hit(h.t, h.u, h.v, first + k);
        }
    }
}

// mirrors prism_core::traverse::closest_hit
fn closest_hit(ray: Ray) -> Hit {
    let pre = ray_pre_new(ray);
    let tmin = ray.tmin;
    var best = Hit(ray.tmax, 0.0, 0.0, NO_PRIM);
    var sp = 0u;
    var node = 0u;
    let node_count = arrayLength(&nodes);
    while node < node_count {
        let n = nodes[node];
        let tl = ray_aabb(pre, n.left_lo.xyz, n.left_hi.xyz, tmin, best.t);
        let tr = ray_aabb(pre, n.right_lo.xyz, n.right_hi.xyz, tmin, best.t);
        let l_index = bitcast<u32>(n.left_lo.w);
        let l_count = bitcast<u32>(n.left_hi.w);
        let r_index = bitcast<u32>(n.right_lo.w);
        let r_count = bitcast<u32>(n.right_hi.w);
        // Order the children near to far.
        let swap = tr < tl;
        var t_near = select(tl, tr, swap);
        let near_index = select(l_index, r_index, swap);
        let near_count = select(l_count, r_count, swap);
        var t_far = select(tr, tl, swap);
        let far_index = select(r_index, l_index, swap);
        let far_count = select(r_count, l_count, swap);
        // Leaves are intersected right away, nearest first.
        if near_count > 0u {
            if t_near < best.t {
                leaf_closest(pre, near_index, near_count, tmin, &best);
            }
            t_near = f32_infinity();
        }
        if far_count > 0u {
            if t_far < best.t {
                leaf_closest(pre, far_index, far_count, tmin, &best);
            }
            t_far = f32_infinity();
        }
        let go_near = t_near < best.t;
        let go_far = t_far < best.t;
        if go_near && go_far {
            if sp < TRAVERSAL_STACK_SIZE {
                stack[sp] = far_index;
                sp += 1u;
            }
            node = near_index;
        } else if go_near {
            node = near_index;
        } else if go_far {
            node = far_index;
        } else if sp > 0u {
            sp -= 1u;
            node = stack[sp];
        } else {
            break;
        }
    }
    if !hit_is_hit(best) {
        best.t = f32_infinity();
    }
    return best;
}

// mirrors prism_core::traverse::leaf_any
fn leaf_any(pre: RayPre, first: u32, count: u32, tmin: f32, tmax: f32) -> bool {
    if !leaf_in_range(first, count) {
        return false;
    }
    for (var k = 0u; k < count; k++) {
        if ray_primitive(pre, prims[first + k], tmin, tmax).hit {
            return true;
        }
    }
    return false;
}

// mirrors prism_core::traverse::any_hit
fn any_hit(ray: Ray) -> bool {
    let pre = ray_pre_new(ray);
    let tmin = ray.tmin;
    let tmax = ray.tmax;
    var sp = 0u;
    var node = 0u;
    let node_count = arrayLength(&nodes);
    loop {
        if node >= node_count {
            return false;
        }
        let n = nodes[node];
        let tl = ray_aabb(pre, n.left_lo.xyz, n.left_hi.xyz, tmin, tmax);
        let tr = ray_aabb(pre, n.right_lo.xyz, n.right_hi.xyz, tmin, tmax);
        let l_index = bitcast<u32>(n.left_lo.w);
        let l_count = bitcast<u32>(n.left_hi.w);
        let r_index = bitcast<u32>(n.right_lo.w);
        let r_count = bitcast<u32>(n.right_hi.w);
        var go_left = tl < f32_infinity();
        var go_right = tr < f32_infinity();
        if go_left && l_count > 0u {
            if leaf_any(pre, l_index, l_count, tmin, tmax) {
                return true;
            }
            go_left = false;
        }
        if go_right && r_count > 0u {
            if leaf_any(pre, r_index, r_count, tmin, tmax) {
                return true;
            }
            go_right = false;
        }
        // Visit the nearer inner child first: it is the likelier to hold an occluder.
        let swap = tr < tl;
        let near = select(l_index, r_index, swap);
        let far = select(r_index, l_index, swap);
        let go_near = select(go_left, go_right, swap);
        let go_far = select(go_right, go_left, swap);
        if go_near && go_far {
            if sp < TRAVERSAL_STACK_SIZE {
                stack[sp] = far;
                sp += 1u;
            }
            node = near;
        } else if go_near {
            node = near;
        } else if go_far {
            node = far;
        } else if sp > 0u {
            sp -= 1u;
            node = stack[sp];
        } else {
            return false;
        }
    }
    return false;
}
