// Ray-primitive intersection: slab test, watertight ray-triangle, robust
// ray-sphere; each function mirrors its prism_core::intersect twin.
//
// Floating-point contract: WGSL lets a compiler fuse a * b + c into one FMA
// (NVIDIA's Vulkan driver does), which rounds once where core rounds twice. In
// the triangle test that breaks the exact antisymmetry of the edge functions on
// a shared edge, so rays leak between triangles; in the sphere test it moves t
// for rays that start on the surface. Every product of those two tests is
// therefore `mul_rn` (math.wgsl), a product rounded on its own.
//
// Divisions: WGSL's f32 division may be off by 2.5 ulp. The ray's set-up
// (inverse direction for the slab test, the shear of the triangle test) decides
// which boxes and triangles a ray enters, and the sphere test's `b / a` whether
// it hits, so those divide with `div_rn` (division.wgsl), correctly rounded
// where the adapter has 64-bit floats: then every inside/outside decision is
// core's. The divisions after those decisions (1 / det for t, u, v; the sphere
// test's roots and square root) only move t and the barycentrics by a few
// ulps, far inside the agreement rule, and keep the adapter's f32 operations.

// mirrors prism_core::intersect::MIN_DIR_COMPONENT
const MIN_DIR_COMPONENT: f32 = 1e-30;
// mirrors prism_core::intersect::SLAB_EXIT_SCALE
const SLAB_EXIT_SCALE: f32 = 1.0000007;
// mirrors prism_core::intersect::SLAB_EXIT_SCALE_NEGATIVE
const SLAB_EXIT_SCALE_NEGATIVE: f32 = 0.9999993;

// mirrors prism_core::intersect::RayPre
struct RayPre {
    origin: vec3<f32>,
    dir: vec3<f32>,
    inv_dir: vec3<f32>,
    kz: u32,
    kx: u32,
    ky: u32,
    shear: vec3<f32>,
    // The octant copy of the tree this ray reads when OCTANT_COPIES is 1:
    // prism_core::gpu::octant_of(inv_dir).
    octant: u32,
}

// The result of one primitive test: core's Option<(t, u, v)> (spheres: u = v = 0).
struct PrimHit {
    hit: bool,
    t: f32,
    u: f32,
    v: f32,
}

fn prim_hit_none() -> PrimHit {
    return PrimHit(false, 0.0, 0.0, 0.0);
}

// The closure `safe` of RayPre::new: a component clamped away from zero.
fn ray_pre_safe(c: f32) -> f32 {
    if abs(c) < MIN_DIR_COMPONENT {
        return f32_copysign(MIN_DIR_COMPONENT, c);
    }
    return c;
}

// The inverse direction of RayPre::new: each component clamped away from
// zero, then inverted (correctly rounded).
fn ray_pre_inv_dir(d: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(div_rn(1.0, ray_pre_safe(d.x)), div_rn(1.0, ray_pre_safe(d.y)), div_rn(1.0, ray_pre_safe(d.z)));
}

// The part of RayPre::new that the slab tests read: origin, direction and
// inverse direction (and the ray's octant copy), with the axes and shear of
// a ray that meets no triangle. A two-level walk's world ray needs no more,
// nor does an object ray until it reaches a leaf (ray_pre_triangles).
fn ray_pre_slabs(ray: Ray) -> RayPre {
    let inv_dir = ray_pre_inv_dir(ray.dir);
    let octant = select(0u, 1u, inv_dir.x < 0.0) | select(0u, 2u, inv_dir.y < 0.0) | select(0u, 4u, inv_dir.z < 0.0);
    return RayPre(ray.origin, ray.dir, inv_dir, 2u, 0u, 1u, vec3<f32>(0.0), octant);
}

// The rest of RayPre::new, which only the triangle test reads: the axis
// permutation and the shear of `pre`'s direction.
fn ray_pre_triangles(pre: RayPre) -> RayPre {
    let d = pre.dir;
    // Woop, Benthin, Wald 2013: permute so that z is the dominant axis.
    let ad = abs(d);
    var kz = 2u;
    if ad.x > ad.y {
        if ad.x > ad.z {
            kz = 0u;
        }
    } else if ad.y > ad.z {
        kz = 1u;
    }
    var kx = select(kz + 1u, 0u, kz == 2u);
    var ky = select(kx + 1u, 0u, kx == 2u);
    if d[kz] < 0.0 {
        let k = kx;
        kx = ky;
        ky = k;
    }
    // Only the triangle test reads the shear: a scene of spheres alone
    // (SCENE_KINDS, types.wgsl) skips its three divisions.
    var shear = vec3<f32>(0.0);
    if (SCENE_KINDS & SCENE_TRIANGLES) != 0u {
        shear = vec3<f32>(div_rn(d[kx], d[kz]), div_rn(d[ky], d[kz]), div_rn(1.0, d[kz]));
    }
    return RayPre(pre.origin, d, pre.inv_dir, kz, kx, ky, shear, pre.octant);
}

// mirrors prism_core::intersect::RayPre::new
fn ray_pre_new(ray: Ray) -> RayPre {
    return ray_pre_triangles(ray_pre_slabs(ray));
}

// The exit distance moved outwards by the rounding margin (towards +inf
// whatever its sign).
// mirrors prism_core::intersect::widen_exit
fn widen_exit(t: f32) -> f32 {
    return t * select(SLAB_EXIT_SCALE, SLAB_EXIT_SCALE_NEGATIVE, t < 0.0);
}

// The end of ray_aabb from the near and far planes' distances: the entry
// max(near, tmin) and the widened exit min(far, tmax); the entry, or +inf when
// the box is missed.
fn slab_interval(near: vec3<f32>, far: vec3<f32>, tmin: f32, tmax: f32) -> f32 {
    let t_enter = max(max(max(near.x, near.y), near.z), tmin);
    let t_exit = widen_exit(min(min(min(far.x, far.y), far.z), tmax));
    if t_enter <= t_exit {
        return t_enter;
    }
    return f32_infinity();
}

// mirrors prism_core::intersect::ray_aabb
fn ray_aabb(pre: RayPre, lo: vec3<f32>, hi: vec3<f32>, tmin: f32, tmax: f32) -> f32 {
    // Ize's form (bound - origin) * inv_dir: its rounding error is relative to
    // t itself, which SLAB_EXIT_SCALE covers (core explains why not the FMA form).
    let t0 = (lo - pre.origin) * pre.inv_dir;
    let t1 = (hi - pre.origin) * pre.inv_dir;
    return slab_interval(min(t0, t1), max(t0, t1), tmin, tmax);
}

// ray_aabb on a box of the ray's octant copy of the tree
// (prism_core::gpu::octant_copies): `near` holds each axis's near plane and
// `far` its far one, so the per-axis min/max are gone; every value is
// ray_aabb's (rounding is monotonic; core's octant_copies explains it).
fn ray_aabb_octant(pre: RayPre, near: vec3<f32>, far: vec3<f32>, tmin: f32, tmax: f32) -> f32 {
    return slab_interval((near - pre.origin) * pre.inv_dir, (far - pre.origin) * pre.inv_dir, tmin, tmax);
}

// The entry distance into a child box of a node: ray_aabb, or ray_aabb_octant
// on a tree of octant copies.
fn child_box(pre: RayPre, lo: vec3<f32>, hi: vec3<f32>, tmin: f32, tmax: f32) -> f32 {
    if OCTANT_COPIES == 1u {
        return ray_aabb_octant(pre, lo, hi, tmin, tmax);
    }
    return ray_aabb(pre, lo, hi, tmin, tmax);
}

// mirrors prism_core::intersect::ray_triangle
fn ray_triangle(pre: RayPre, v0: vec3<f32>, v1: vec3<f32>, v2: vec3<f32>, tmin: f32, tmax: f32) -> PrimHit {
    let kx = pre.kx;
    let ky = pre.ky;
    let kz = pre.kz;
    let a = v0 - pre.origin;
    let b = v1 - pre.origin;
    let c = v2 - pre.origin;
    let sx = pre.shear.x;
    let sy = pre.shear.y;
    let sz = pre.shear.z;
    let ax = a[kx] - mul_rn(sx, a[kz]);
    let ay = a[ky] - mul_rn(sy, a[kz]);
    let bx = b[kx] - mul_rn(sx, b[kz]);
    let by = b[ky] - mul_rn(sy, b[kz]);
    let cx = c[kx] - mul_rn(sx, c[kz]);
    let cy = c[ky] - mul_rn(sy, c[kz]);
    let u = mul_rn(cx, by) - mul_rn(cy, bx);
    let v = mul_rn(ax, cy) - mul_rn(ay, cx);
    let w = mul_rn(bx, ay) - mul_rn(by, ax);
    if (u < 0.0 || v < 0.0 || w < 0.0) && (u > 0.0 || v > 0.0 || w > 0.0) {
        return prim_hit_none();
    }
    let det = u + v + w;
    if det == 0.0 {
        return prim_hit_none();
    }
    let az = sz * a[kz];
    let bz = sz * b[kz];
    let cz = sz * c[kz];
    let t_scaled = mul_rn(u, az) + mul_rn(v, bz) + mul_rn(w, cz);
    let rcp_det = 1.0 / det;
    let t = t_scaled * rcp_det;
    if t > tmin && t < tmax {
        return PrimHit(true, t, v * rcp_det, w * rcp_det);
    }
    return prim_hit_none();
}

// mirrors prism_core::intersect::SPHERE_EARLY_MISS_MARGIN
const SPHERE_EARLY_MISS_MARGIN: f32 = 1e-5;

// Whether ray_sphere surely misses, before its division and square root: the
// ray's line passes so clearly outside the sphere that no tmin or tmax gives a
// hit. Its products may contract into FMAs (WGSL's dot may be evaluated in any
// order): the margin (SPHERE_EARLY_MISS_MARGIN of a |f|^2) is some 100 times
// either rounding. A NaN or an overflow says not missed. The cell grid walk
// runs it first in scenes of spheres only (cell_grid.wgsl), as the CUDA
// kernels' walk does.
// mirrors prism_core::intersect::sphere_missed_early
fn sphere_missed_early(origin: vec3<f32>, dir: vec3<f32>, center: vec3<f32>, radius: f32) -> bool {
    let f = origin - center;
    let a = dot(dir, dir);
    let b = dot(f, dir);
    let aff = a * dot(f, f);
    return aff - b * b - a * (radius * radius) > SPHERE_EARLY_MISS_MARGIN * aff;
}

// mirrors prism_core::intersect::SPHERE_LEFT_BEHIND_SCALE
const SPHERE_LEFT_BEHIND_SCALE: f32 = 0.999;

// mirrors prism_core::intersect::ray_sphere, which returns early on
// prism_core::intersect::sphere_left_behind (on the same b and c): a ray
// leaving its sphere (away from the centre, from outside it or from inside by
// less than tmin reaches) misses it, so a bounce, mirror or shadow ray spawned
// on a sphere skips the divisions and the square root for its own sphere. Its
// proof holds with this backend's divisions too: they keep signs, and their few
// ulps are far inside the 0.1% that SPHERE_LEFT_BEHIND_SCALE leaves.
fn ray_sphere(origin: vec3<f32>, dir: vec3<f32>, center: vec3<f32>, radius: f32, tmin: f32, tmax: f32) -> PrimHit {
    let f = origin - center;
    let a = dot_rn(dir, dir);
    let b = dot_rn(f, dir);
    let r2 = mul_rn(radius, radius);
    let c = dot_rn(f, f) - r2;
    if tmin >= 0.0 && b > 0.0 && -c < mul_rn(SPHERE_LEFT_BEHIND_SCALE, mul_rn(tmin, b)) {
        return prim_hit_none();
    }
    // b / a decides hit or miss (through disc): correctly rounded, as core's.
    let l = f - mul3_rn(div_rn(b, a), dir);
    let disc = a * (r2 - dot_rn(l, l));
    if disc < 0.0 {
        return prim_hit_none();
    }
    let q = -(b + f32_copysign(sqrt(disc), b));
    let ta = c / q;
    let tb = q / a;
    // A tangent ray starting on the sphere has q = 0 and ta = 0 / 0 = NaN:
    // core's min and max then give tb.
    let t0 = f32_min(ta, tb);
    let t1 = f32_max(ta, tb);
    if t0 > tmin && t0 < tmax {
        return PrimHit(true, t0, 0.0, 0.0);
    } else if t1 > tmin && t1 < tmax {
        return PrimHit(true, t1, 0.0, 0.0);
    }
    return prim_hit_none();
}
