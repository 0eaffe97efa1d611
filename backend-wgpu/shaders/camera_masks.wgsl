// Camera rays against the few primitives their tile of pixels can meet: the
// mirror of prism_core::camera_bounds, as the CUDA backend's
// kernels/camera_bounds.cuh.
//
// For a pinhole camera and a flat scene of at most 64 primitives the host
// writes, each frame, a cone from the eye around every primitive (its unit
// axis and the least cosine between that axis and a tile's direction at which
// a camera ray of the tile may hit it) and every primitive's bounding sphere
// into `frame_cones` (entry.wgsl), and compiles the Whitted and AO render
// kernels with CAMERA_MASKS (types.wgsl) set. Before the frame's render
// dispatches, camera_masks_main (entry.wgsl) tests every tile of
// CAMERA_MASK_TILE pixels against the cones, one invocation a tile, into a
// 64-bit mask of the tile's camera candidates (two u32 words: WGSL has no
// u64), and from those the tile's reflection and shadow candidates. The masks
// go to the output binding of that dispatch and are read through the ray
// binding of the render dispatches (which trace no rays of the caller's): a
// binding of their own would be a ninth storage buffer, one past the count an
// adapter may stop at.
//
// Camera rays then test the camera candidates instead of walking the tree (a
// sky pixel of whitted19 tests none), the Whitted integrator's first mirror
// rays the reflection candidates, and the shadow rays from camera hits the
// shadow candidates: the tree's hits, except where two primitives tie at
// exactly the same t (core's property tests: camera_bounds.rs).

// mirrors prism_core::camera_bounds::CAMERA_BOUNDS_MAX_PRIMS
const CAMERA_BOUNDS_MAX_PRIMS: u32 = 64u;
// mirrors prism_core::camera_bounds::REFLECTION_BOUNDS_MARGIN
const REFLECTION_BOUNDS_MARGIN: f32 = 1e-4;
// mirrors prism_core::camera_bounds::REFLECTION_MAX_ANGLE
const REFLECTION_MAX_ANGLE: f32 = 1.0;
// mirrors prism_core::camera_bounds::SHADOW_MAX_CANDIDATES
const SHADOW_MAX_CANDIDATES: u32 = 4u;
// frame_cones.info.y: which bounce masks the host asks for (as the CUDA
// kernels' PRISM_LIST_REFLECTIONS and PRISM_LIST_SHADOWS).
const LIST_REFLECTIONS: u32 = 1u;
const LIST_SHADOWS: u32 = 2u;
// A 64-bit mask of all ones: prism_core::camera_bounds::REFLECTION_WALK and
// SHADOW_WALK (the rays walk the tree, or the light's lists).
const MASK_WALK: vec2<u32> = vec2<u32>(0xffffffffu, 0xffffffffu);

// The candidate masks of a tile of CAMERA_MASK_TILE pixels, each a 64-bit
// mask as [low word, high word] (bit k for slot k).
struct TileMasks {
    camera: vec2<u32>,
    // MASK_WALK: the tile's mirror rays walk the tree.
    reflection: vec2<u32>,
    // MASK_WALK: the tile's shadow rays take the light grid or the tree.
    shadow: vec2<u32>,
}

// mirrors prism_core::camera_bounds::CAMERA_MASK_TILE
const CAMERA_MASK_TILE: u32 = 32u;

// mirrors prism_core::camera_bounds::tile_direction (with WGSL's division and
// inverseSqrt, which CAMERA_BOUNDS_SLACK covers): the unit direction of the
// camera ray through the centre of the tile of CAMERA_MASK_TILE pixels whose
// first pixel is (x0, y0).
fn tile_direction(x0: u32, y0: u32) -> vec3<f32> {
    let cam = params.camera;
    let s = (f32(x0) + 0.5 * f32(CAMERA_MASK_TILE)) / f32(params.width);
    let t = 1.0 - (f32(y0) + 0.5 * f32(CAMERA_MASK_TILE)) / f32(params.height);
    let d = cam.lower_left.xyz + s * cam.horizontal.xyz + t * cam.vertical.xyz - cam.origin_lens.xyz;
    return d * inverseSqrt(dot(d, d));
}

// Where the rays of a tile's cone first meet a sphere (cone_hits_sphere).
struct ConeHits {
    // 0: no ray of the cone meets it; 1: every hit lies within `delta` of
    // `at`; 2: the eye lies inside or on it, or it is not finite (no bound).
    kind: u32,
    at: vec3<f32>,
    delta: f32,
}

// mirrors prism_core::camera_bounds::cone_hits_sphere in f32 (its margins, 1e-4
// of each length and angle, cover f32's rounding a hundred times): where the
// rays from `eye` in the cone of unit axis `dir` and half angle `tile_angle`
// first meet the sphere of `centre` and `radius`.
fn cone_hits_sphere(eye: vec3<f32>, dir: vec3<f32>, tile_angle: f32, centre: vec3<f32>, radius: f32) -> ConeHits {
    let margin = REFLECTION_BOUNDS_MARGIN;
    let to = centre - eye;
    let dist = length(to);
    if !(dist > radius * (1.0 + margin) && f32_is_finite(dist)) {
        return ConeHits(2u, vec3<f32>(0.0), 0.0);
    }
    let alpha = acos(clamp(dot(to, dir) / dist, -1.0, 1.0));
    let b_hi = dist * cos(max(alpha - tile_angle, 0.0));
    let b_lo = dist * cos(min(alpha + tile_angle, PI));
    let c = (dist - radius) * (dist + radius);
    let tangent = sqrt(c);
    if b_hi < tangent * (1.0 - margin) {
        return ConeHits(0u, vec3<f32>(0.0), 0.0);
    }
    let bh = max(b_hi, tangent);
    let t_min = c / (bh + sqrt(max(bh * bh - c, 0.0)));
    var t_max = tangent;
    if b_lo > tangent {
        t_max = c / (b_lo + sqrt(max(b_lo * b_lo - c, 0.0)));
    }
    let t_mid = 0.5 * (t_min + t_max);
    let scale = vec3_max_element(abs(eye)) + t_max + dist + radius;
    let delta = 0.5 * (t_max - t_min) + t_max * tile_angle + margin * scale;
    return ConeHits(1u, eye + t_mid * dir, delta);
}

// Whether slot k's bounding sphere may be met by a mirror ray off a camera hit
// within `delta` of `at` on the sphere of `centre` and `radius`, seen along
// `dir` in a cone of half angle `tile_angle`: the body of
// prism_core::camera_bounds::reflection_candidates for one hit ball and one
// slot. `bounded` false: the tile's mirror rays walk the tree.
struct MirrorSeen {
    bounded: bool,
    seen: bool,
}

fn mirror_sees(dir: vec3<f32>, tile_angle: f32, at: vec3<f32>, delta: f32, centre: vec3<f32>, radius: f32, k: u32) -> MirrorSeen {
    let margin = REFLECTION_BOUNDS_MARGIN;
    let out = at - centre;
    let out_len = length(out);
    if !(delta < 0.5 * radius && out_len > 0.0) {
        return MirrorSeen(false, false);
    }
    let psi = asin(min(delta / (radius - delta), 1.0));
    let normal = out * (1.0 / out_len);
    let mirror = dir - 2.0 * dot(dir, normal) * normal;
    let phi = tile_angle + 2.0 * psi + margin;
    if !(phi < REFLECTION_MAX_ANGLE) {
        return MirrorSeen(false, false);
    }
    let q = frame_cones.balls[k];
    let w = q.xyz - at;
    let len = length(w);
    let reach = q.w + delta + margin * (q.w + len);
    var seen = len <= reach;
    if !seen {
        let angle = phi + asin(min(reach / len, 1.0));
        seen = angle >= PI || dot(w, mirror) >= len * cos(angle);
    }
    return MirrorSeen(true, seen);
}

// The test of one slot k against one hit ball of
// prism_core::camera_bounds::shadow_candidates: whether slot k's bounding
// sphere, widened by `delta` and the margins, meets the segment from `at` to
// the light.
fn shadow_sees(at: vec3<f32>, delta: f32, light: vec3<f32>, k: u32) -> bool {
    let margin = REFLECTION_BOUNDS_MARGIN;
    let segment = light - at;
    let seg_len = length(segment);
    let q = frame_cones.balls[k];
    let w = q.xyz - at;
    // The point of the segment closest to the ball's centre.
    var s = 0.0;
    if seg_len > 0.0 {
        s = clamp(dot(w, segment) / (seg_len * seg_len), 0.0, 1.0);
    }
    let gap = length(w - s * segment);
    let reach = q.w + delta + margin * (q.w + length(w) + seg_len);
    return gap <= reach;
}

// The number of set bits of a 64-bit mask.
fn mask_count(m: vec2<u32>) -> u32 {
    return countOneBits(m.x) + countOneBits(m.y);
}

// The candidate masks of the tile of CAMERA_MASK_TILE pixels whose first pixel
// is (x0, y0): mirrors prism_core::camera_bounds::camera_candidates, then
// reflection_candidates and shadow_candidates (camera_bounds.cuh's
// camera_tile_mask, reflection_tile_mask and shadow_tile_mask), with the
// slots' loops of the last two turned inside out: each slot is tested
// against every hit ball, which lists the same slots.
fn find_tile_masks(x0: u32, y0: u32) -> TileMasks {
    let count = min(frame_cones.info.x, CAMERA_BOUNDS_MAX_PRIMS);
    let lists = frame_cones.info.y;
    let tile_angle = frame_cones.angle.x;
    let dir = tile_direction(x0, y0);
    let eye = params.camera.origin_lens.xyz;
    let light = params.light_position.xyz;
    var camera = vec2<u32>(0u);
    for (var k = 0u; k < count; k++) {
        let c = frame_cones.cones[k];
        if dot(c.xyz, dir) >= c.w {
            camera[k / 32u] |= 1u << (k % 32u);
        }
    }
    // each_camera_hit_ball's conditions: more than 64 primitives or a cone
    // of REFLECTION_MAX_ANGLE or more lists nothing.
    let bounce_lists = select(0u, lists, frame_cones.info.x <= CAMERA_BOUNDS_MAX_PRIMS && tile_angle < REFLECTION_MAX_ANGLE);
    var reflection_bounded = (bounce_lists & LIST_REFLECTIONS) != 0u;
    var shadow_bounded = (bounce_lists & LIST_SHADOWS) != 0u
        && f32_is_finite(light.x) && f32_is_finite(light.y) && f32_is_finite(light.z);
    var reflection = vec2<u32>(0u);
    var shadow = vec2<u32>(0u);
    // The camera candidates' hit balls, in slot order (MaskBits).
    for (var word = 0u; word < 2u; word++) {
        var left = camera[word];
        while left != 0u && (reflection_bounded || shadow_bounded) {
            let slot = word * 32u + firstTrailingBit(left);
            left &= left - 1u;
            if slot >= count {
                continue;
            }
            if bitcast<u32>(prims[slot].b.w) != KIND_SPHERE {
                reflection_bounded = false;
                shadow_bounded = false;
                continue;
            }
            let ball = frame_cones.balls[slot];
            let hits = cone_hits_sphere(eye, dir, tile_angle, ball.xyz, ball.w);
            if hits.kind == 2u {
                reflection_bounded = false;
                shadow_bounded = false;
            } else if hits.kind == 1u {
                for (var k = 0u; k < count; k++) {
                    if reflection_bounded {
                        let m = mirror_sees(dir, tile_angle, hits.at, hits.delta, ball.xyz, ball.w, k);
                        reflection_bounded = m.bounded;
                        let mirror_seen = m.seen;
                        if mirror_seen {
                            reflection[k / 32u] |= 1u << (k % 32u);
                        }
                    }
                    if shadow_bounded {
                        let shadow_seen = shadow_sees(hits.at, hits.delta, light, k);
                        if shadow_seen {
                            shadow[k / 32u] |= 1u << (k % 32u);
                        }
                    }
                }
            }
        }
    }
    var masks = TileMasks(camera, reflection, shadow);
    if !reflection_bounded {
        masks.reflection = MASK_WALK;
    }
    if !shadow_bounded || mask_count(shadow) > SHADOW_MAX_CANDIDATES {
        masks.shadow = MASK_WALK;
    }
    return masks;
}

// Masks of a frame without candidates: camera rays walk the tree (the
// integrators test CAMERA_MASKS before reading `camera`).
fn tile_masks_walk() -> TileMasks {
    return TileMasks(MASK_WALK, MASK_WALK, MASK_WALK);
}

// mirrors prism_core::camera_bounds::closest_hit_listed (the closest hit among
// the primitives of `candidates`, in slot order; in a scene of spheres only,
// spheres take sphere_missed_early first, as the grid walk's, with
// ray_sphere's answers; a miss has prim == NO_PRIM and t == +inf)
fn closest_hit_listed(ray: Ray, candidates: vec2<u32>) -> Hit {
    let pre = ray_pre_new(ray);
    var best = Hit(ray.tmax, 0.0, 0.0, NO_PRIM, NO_INSTANCE);
    for (var word = 0u; word < 2u; word++) {
        var left = candidates[word];
        while left != 0u {
            let slot = word * 32u + firstTrailingBit(left);
            left &= left - 1u;
            if slot >= arrayLength(&prims) {
                continue;
            }
            let p = prims[slot];
            if SCENE_KINDS == SCENE_SPHERES && sphere_missed_early(pre.origin, pre.dir, p.a.xyz, p.b.x) {
                continue;
            }
            let h = ray_primitive(pre, p, ray.tmin, best.t);
            if h.hit {
                best = Hit(h.t, h.u, h.v, slot, 0u);
            }
        }
    }
    if !hit_is_hit(best) {
        best.t = f32_infinity();
    }
    return best;
}

// mirrors prism_core::camera_bounds::occluded_listed (whether anything among
// the primitives of `candidates` lies on `ray`, in slot order)
fn occluded_listed(ray: Ray, candidates: vec2<u32>) -> bool {
    let pre = ray_pre_new(ray);
    for (var word = 0u; word < 2u; word++) {
        var left = candidates[word];
        while left != 0u {
            let slot = word * 32u + firstTrailingBit(left);
            left &= left - 1u;
            if slot >= arrayLength(&prims) {
                continue;
            }
            if ray_primitive(pre, prims[slot], ray.tmin, ray.tmax).hit {
                return true;
            }
        }
    }
    return false;
}

// The closest hit of a Whitted or AO ray after `bounce` mirror bounces in a
// tile of `masks`: with CAMERA_MASKS, a camera ray (bounce 0) from the tile's
// camera candidates and the first mirror ray (bounce 1) from its reflection
// candidates unless they are MASK_WALK; else render_closest_hit (cell_grid.wgsl).
// The same hits either way, except where two primitives tie at exactly the
// same t. Mirrors integrator.cuh's render_or_listed_hit.
fn render_or_listed_hit(ray: Ray, bounce: u32, masks: TileMasks) -> Hit {
    if CAMERA_MASKS == 1u && TWO_LEVEL == 0u {
        if bounce == 0u {
            return closest_hit_listed(ray, masks.camera);
        }
        if bounce == 1u && any(masks.reflection != MASK_WALK) {
            return closest_hit_listed(ray, masks.reflection);
        }
    }
    return render_closest_hit(ray);
}

// prism_core::integrator::Tracer::light_blocked as integrator.cuh's
// light_blocked answers it: whether the shadow ray `ray` is blocked, from `shadow_list`
// (a camera hit's tile's shadow candidates) unless it is MASK_WALK, else as
// tracer_light_blocked (point_grid.wgsl). The same answer every way.
fn light_blocked_listed(ray: Ray, shadow_list: vec2<u32>) -> bool {
    if CAMERA_MASKS == 1u && TWO_LEVEL == 0u && any(shadow_list != MASK_WALK) {
        return occluded_listed(ray, shadow_list);
    }
    return tracer_light_blocked(ray);
}
