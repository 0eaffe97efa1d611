// BVH traversal over the scene buffers `nodes` and `prims` (bound in
// entry.wgsl): iterative, front to back, fixed stack; mirrors
// prism_core::traverse, where the same functions take the slices as arguments.
//
// Each traversal is split into begin / step / end (as in the CUDA backend's
// traverse.cuh), so that the lane-refill kernels (refill.wgsl) can step many
// rays side by side; closest_hit and any_hit run the same steps in a loop.

// The traversal stack. WGSL zero-fills every function-scope `var`, so a stack
// declared inside closest_hit / any_hit would cost a store per entry per call;
// a private-scope one is zeroed once per invocation. The two functions never
// nest, so they share it. Its length is STACK_ENTRIES, the scene's BVH depth
// (types.wgsl), which no traversal can exceed: at a node of depth k the stack
// holds at most k entries, and a push happens only above two inner children.
var<private> stack: array<u32, STACK_ENTRIES>;

// The node a traversal starts at: the root of the tree, or with OCTANT_COPIES
// (types.wgsl) the root of the ray's octant copy. Copy o of
// prism_core::gpu::near_first_octant_copies has its boxes' bounds swapped on the
// axes of o (so a box's `lo` row holds the near planes: child_box), its inner
// child indices offset into the copy, so the traversal never leaves it, and each
// node's children in the order a ray of octant o visits them (nearer along the
// node's split axis first), so the steps take them in slot order with no
// comparison of entry distances: prism_core::traverse::closest_hit_near_first
// and any_hit_near_first, whose box values and leaf tests are the tree's and
// whose hits are closest_hit's except where two primitives tie at exactly the
// same t.
fn root_node(pre: RayPre) -> u32 {
    if OCTANT_COPIES == 1u {
        return pre.octant * (arrayLength(&nodes) / 8u);
    }
    return 0u;
}

// mirrors prism_core::traverse::ray_primitive (and the heightfield branch of
// leaf_closest and leaf_any: a heightfield's hit has its face and cell in u
// and v, heightfield.wgsl)
//
// A scene of one kind runs only that kind's test (SCENE_KINDS, types.wgsl);
// the heightfield walk runs only in a module for a scene holding one.
fn ray_primitive(pre: RayPre, p: Primitive, tmin: f32, tmax: f32) -> PrimHit {
    if (SCENE_KINDS & SCENE_HEIGHTFIELDS) != 0u && bitcast<u32>(p.b.w) == KIND_HEIGHTFIELD {
        return ray_heightfield(pre, p, tmin, tmax);
    }
    let kinds = SCENE_KINDS & SCENE_MIXED;
    let sphere = kinds == SCENE_SPHERES
        || (kinds == SCENE_MIXED && bitcast<u32>(p.b.w) == KIND_SPHERE);
    if sphere {
        return ray_sphere(pre.origin, pre.dir, p.a.xyz, p.b.x, tmin, tmax);
    }
    if (kinds & SCENE_TRIANGLES) == 0u {
        return prim_hit_none();
    }
    return ray_triangle(pre, p.a.xyz, p.b.xyz, p.c.xyz, tmin, tmax);
}

// Core checks each leaf against the primitives (`prims.get(range)`) and each
// node against the tree (`nodes.get(node)`) as it walks; these walks do not.
// Every tree is checked on the host before upload (prism_core::gpu::check_tree:
// a root, every leaf inside the primitives, every inner child a node after its
// parent), so those checks would always pass, and they cost 4% of a batch on
// an H200; the CUDA kernels leave them out too (PRISM_TREE_CHECKS). A walk
// ends at EMPTY_CHILD, where a hidden ray starts (refill.wgsl), and buffer
// bounds checks stay on.

// The leaf tests of a closest-hit step (prism_core::traverse::leaf_closest on
// a node's two leaves): the primitives `leaves.y` from slot `leaves.x`, then
// `leaves.w` from `leaves.z` if that leaf's box, entered at `t_second`, is
// still nearer than the best hit; both through one loop, so that the
// primitive test is compiled once. A hit names its slot and `instance`.
// Returns the best hit.
fn leaves_closest(pre: RayPre, leaves: vec4<u32>, t_second: f32, tmin: f32, instance: u32, best_in: Hit) -> Hit {
    var best = best_in;
    var a_first = leaves.x;
    var a_count = leaves.y;
    var b_count = leaves.w;
    loop {
        if a_count == 0u {
            if b_count == 0u || !(t_second < best.t) {
                break;
            }
            a_first = leaves.z;
            a_count = b_count;
            b_count = 0u;
        }
        let h = ray_primitive(pre, prims[a_first], tmin, best.t);
        if h.hit {
            best = Hit(h.t, h.u, h.v, a_first, instance);
        }
        a_first += 1u;
        a_count -= 1u;
    }
    return best;
}

// The state of closest_hit between two iterations of its loop.
struct ClosestHit {
    pre: RayPre,
    tmin: f32,
    best: Hit,
    node: u32,
    sp: u32,
}

// The head of prism_core::traverse::closest_hit, before its loop.
fn closest_hit_begin(ray: Ray) -> ClosestHit {
    let pre = ray_pre_new(ray);
    return ClosestHit(pre, ray.tmin, Hit(ray.tmax, 0.0, 0.0, NO_PRIM, NO_INSTANCE), root_node(pre), 0u);
}

// One iteration of prism_core::traverse::closest_hit's loop (with leaf_closest
// folded in, both leaves through one loop so the primitive test is compiled
// once); false when the loop is over.
fn closest_hit_step(c: ptr<function, ClosestHit>) -> bool {
    if (*c).node == EMPTY_CHILD {
        return false;
    }
    let pre = (*c).pre;
    let tmin = (*c).tmin;
    let n = nodes[(*c).node];
    let tl = child_box(pre, n.left_lo.xyz, n.left_hi.xyz, tmin, (*c).best.t);
    let tr = child_box(pre, n.right_lo.xyz, n.right_hi.xyz, tmin, (*c).best.t);
    let l_index = bitcast<u32>(n.left_lo.w);
    let l_count = bitcast<u32>(n.left_hi.w);
    let r_index = bitcast<u32>(n.right_lo.w);
    let r_count = bitcast<u32>(n.right_hi.w);
    // Order the children near to far (the near-first copies hold them in order).
    let swap = OCTANT_COPIES == 0u && tr < tl;
    var t_near = select(tl, tr, swap);
    let near_index = select(l_index, r_index, swap);
    let near_count = select(l_count, r_count, swap);
    var t_far = select(tr, tl, swap);
    let far_index = select(r_index, l_index, swap);
    let far_count = select(r_count, l_count, swap);
    // Leaves are intersected right away, nearest first: leaf A (near), then
    // leaf B (far) if its box is still closer than the best hit. Only a node
    // with a leaf child enters this block, so a subgroup whose invocations all
    // stand at inner nodes passes it with one branch.
    if near_count > 0u || far_count > 0u {
        var a_first = 0u;
        var a_count = 0u;
        var b_first = 0u;
        var b_count = 0u;
        if near_count > 0u {
            if t_near < (*c).best.t {
                a_first = near_index;
                a_count = near_count;
            }
            t_near = f32_infinity();
        }
        // The far leaf's box is compared with the best hit after the near leaf.
        let t_far_leaf = t_far;
        if far_count > 0u {
            b_first = far_index;
            b_count = far_count;
            t_far = f32_infinity();
        }
        (*c).best = leaves_closest(pre, vec4<u32>(a_first, a_count, b_first, b_count), t_far_leaf, tmin, 0u, (*c).best);
    }
    let go_near = t_near < (*c).best.t;
    let go_far = t_far < (*c).best.t;
    if go_near && go_far {
        if (*c).sp < STACK_ENTRIES {
            stack[(*c).sp] = far_index;
            (*c).sp += 1u;
        }
        (*c).node = near_index;
    } else if go_near {
        (*c).node = near_index;
    } else if go_far {
        (*c).node = far_index;
    } else if (*c).sp > 0u {
        (*c).sp -= 1u;
        (*c).node = stack[(*c).sp];
    } else {
        return false;
    }
    return true;
}

// The tail of prism_core::traverse::closest_hit, after its loop.
fn closest_hit_end(c: ClosestHit) -> Hit {
    var best = c.best;
    if !hit_is_hit(best) {
        best.t = f32_infinity();
    }
    return best;
}

// mirrors prism_core::traverse::closest_hit (closest_hit_near_first with OCTANT_COPIES)
fn closest_hit(ray: Ray) -> Hit {
    var c = closest_hit_begin(ray);
    while closest_hit_step(&c) {
    }
    return closest_hit_end(c);
}

// The state of any_hit between two iterations of its loop.
struct AnyHit {
    pre: RayPre,
    tmin: f32,
    tmax: f32,
    node: u32,
    sp: u32,
}

// any_hit_step's outcomes.
const STEP_MORE: u32 = 0u;
const STEP_MISS: u32 = 1u;
const STEP_HIT: u32 = 2u;

// The leaf tests of an any-hit step (prism_core::traverse::leaf_any on a
// node's two leaves): whether any of the primitives `leaves.y` from slot
// `leaves.x`, then `leaves.w` from `leaves.z`, lies on the ray; stops at the
// first. One loop, so that the primitive test is compiled once.
fn leaves_any(pre: RayPre, leaves: vec4<u32>, tmin: f32, tmax: f32) -> bool {
    var a_first = leaves.x;
    var a_count = leaves.y;
    var b_count = leaves.w;
    loop {
        if a_count == 0u {
            if b_count == 0u {
                break;
            }
            a_first = leaves.z;
            a_count = b_count;
            b_count = 0u;
        }
        if ray_primitive(pre, prims[a_first], tmin, tmax).hit {
            return true;
        }
        a_first += 1u;
        a_count -= 1u;
    }
    return false;
}

// The head of prism_core::traverse::any_hit, before its loop.
fn any_hit_begin(ray: Ray) -> AnyHit {
    let pre = ray_pre_new(ray);
    return AnyHit(pre, ray.tmin, ray.tmax, root_node(pre), 0u);
}

// One iteration of prism_core::traverse::any_hit's loop (with leaf_any folded
// in): STEP_HIT or STEP_MISS when any_hit would return, else STEP_MORE.
fn any_hit_step(a: ptr<function, AnyHit>) -> u32 {
    if (*a).node == EMPTY_CHILD {
        return STEP_MISS;
    }
    let pre = (*a).pre;
    let tmin = (*a).tmin;
    let tmax = (*a).tmax;
    let n = nodes[(*a).node];
    let tl = child_box(pre, n.left_lo.xyz, n.left_hi.xyz, tmin, tmax);
    let tr = child_box(pre, n.right_lo.xyz, n.right_hi.xyz, tmin, tmax);
    let l_index = bitcast<u32>(n.left_lo.w);
    let l_count = bitcast<u32>(n.left_hi.w);
    let r_index = bitcast<u32>(n.right_lo.w);
    let r_count = bitcast<u32>(n.right_hi.w);
    var go_left = tl < f32_infinity();
    var go_right = tr < f32_infinity();
    // Leaves: left first, then right; the first hit ends the traversal.
    var a_first = 0u;
    var a_count = 0u;
    var b_first = 0u;
    var b_count = 0u;
    if go_left && l_count > 0u {
        a_first = l_index;
        a_count = l_count;
        go_left = false;
    }
    if go_right && r_count > 0u {
        b_first = r_index;
        b_count = r_count;
        go_right = false;
    }
    if leaves_any(pre, vec4<u32>(a_first, a_count, b_first, b_count), tmin, tmax) {
        return STEP_HIT;
    }
    // Visit the nearer inner child first: it is the likelier to hold an occluder
    // (the near-first copies hold the children in order).
    let swap = OCTANT_COPIES == 0u && tr < tl;
    let near = select(l_index, r_index, swap);
    let far = select(r_index, l_index, swap);
    let go_near = select(go_left, go_right, swap);
    let go_far = select(go_right, go_left, swap);
    if go_near && go_far {
        if (*a).sp < STACK_ENTRIES {
            stack[(*a).sp] = far;
            (*a).sp += 1u;
        }
        (*a).node = near;
    } else if go_near {
        (*a).node = near;
    } else if go_far {
        (*a).node = far;
    } else if (*a).sp > 0u {
        (*a).sp -= 1u;
        (*a).node = stack[(*a).sp];
    } else {
        return STEP_MISS;
    }
    return STEP_MORE;
}

// mirrors prism_core::traverse::any_hit (any_hit_near_first with OCTANT_COPIES)
fn any_hit(ray: Ray) -> bool {
    var a = any_hit_begin(ray);
    loop {
        let r = any_hit_step(&a);
        if r != STEP_MORE {
            return r == STEP_HIT;
        }
    }
    return false;
}
