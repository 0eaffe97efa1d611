//! The reference every traced answer is held to: [`brute_force`] over every
//! primitive with core's own tests, the cases where traversal may rightly miss
//! its hit ([`in_face_plane`], [`off_primitive_box`], rounding at `tmax`), and
//! the comparison of each CPU traversal's `intersect` and `occluded` with it.

use crate::Violation;
use crate::gpu_structures::octant_copies_agree;
use glam::Vec3;
use prism_core::intersect::{RayPre, ray_sphere, ray_triangle};
use prism_core::reference::{Agreement, classify};
use prism_core::scene::PrimRef;
use prism_core::{Backend, Hit, Ray, Scene};
use prism_cpu::{CpuBackend, Traversal};

/// Closest hit of `ray` over every primitive of `scene`, in id order, with the
/// core's own primitive tests: `(t, prim)`, `prim = Hit::NO_PRIM` for a miss.
///
/// Zero-area triangles are never hit (the rule of
/// [`Accel::build`](prism_core::Accel::build)), and the ray
/// is the one traversal sees: [`RayPre`] (direction components below
/// [`prism_core::intersect::MIN_DIR_COMPONENT`] are zero).
pub fn brute_force(scene: &Scene, ray: &Ray) -> (f32, u32) {
    let pre = RayPre::new(ray);
    let mut best = (ray.tmax, Hit::NO_PRIM);
    for id in 0..scene.primitive_count() as u32 {
        let t = match scene.primitive(id) {
            Some(PrimRef::Triangle(i)) => scene.triangle(i).and_then(|[a, b, c]| {
                if (b - a).cross(c - a) == Vec3::ZERO {
                    None
                } else {
                    ray_triangle(&pre, a, b, c, ray.tmin, best.0).map(|h| h.0)
                }
            }),
            Some(PrimRef::Sphere(i)) => scene.spheres().get(i as usize).and_then(|cr| {
                ray_sphere(pre.origin, pre.dir, cr.truncate(), cr.w, ray.tmin, best.0)
            }),
            // The fuzzed scenes hold triangles and spheres only.
            Some(PrimRef::Heightfield(_)) | None => None,
        };
        if let Some(t) = t {
            best = (t, id);
        }
    }
    if best.1 == Hit::NO_PRIM {
        best.0 = f32::INFINITY;
    }
    best
}

/// Whether the slab test's face-plane convention may hide the hit at `t` on
/// scene primitive `prim`.
///
/// The core's slab test clamps a direction component below
/// [`prism_core::intersect::MIN_DIR_COMPONENT`] to that value with its sign
/// instead of dividing by it. A ray that does not move along axis `k` and lies
/// exactly in a box face plane `x_k = b` is then inside the box for one of the
/// two faces and outside for the other, by the sign of the zero component (the
/// convention of Embree, documented in the core's slab tests as measure-zero),
/// so traversal can miss a primitive hit on that face, such as a triangle edge
/// lying in the plane. The same holds within `2e-30 * t` of the plane, where
/// the clamped and the true ray are on different sides of it at the hit.
///
/// Only the boxes a traversal must enter to reach `prim` count: the child
/// boxes on the path from the root to its leaf ([`boxes_to_primitive`]). The
/// CPU backend's 4- and 8-wide trees take their boxes from that binary tree,
/// so their paths hold a subset of those boxes.
pub fn in_face_plane(
    nodes: &[prism_core::gpu::BvhNode],
    prims: &[prism_core::gpu::Primitive],
    ray: &Ray,
    t: f32,
    prim: u32,
) -> bool {
    let reach = 2.0 * prism_core::intersect::MIN_DIR_COMPONENT * t.abs();
    let path = boxes_to_primitive(nodes, prims, prim);
    // ok: `k` < 3 indexes a `Vec3` and the first three of four row entries.
    (0..3).any(|k| {
        ray.dir[k].abs() < prism_core::intersect::MIN_DIR_COMPONENT
            && path.iter().any(|(lo, hi)| {
                [lo, hi]
                    .iter()
                    .any(|row| (ray.origin[k] - row[k]).abs() <= reach)
            })
    })
}

/// The child boxes (`lo`, `hi` rows) on the path from the root of `nodes` to
/// the leaf that holds scene primitive `prim`, root first; empty when no leaf
/// holds it.
pub fn boxes_to_primitive(
    nodes: &[prism_core::gpu::BvhNode],
    prims: &[prism_core::gpu::Primitive],
    prim: u32,
) -> Vec<([f32; 4], [f32; 4])> {
    use prism_core::gpu::EMPTY_CHILD;
    let Some(slot) = prims.iter().position(|p| p.id() == prim) else {
        return Vec::new();
    };
    let slot = slot as u32;
    let children = |n: &prism_core::gpu::BvhNode| {
        [
            (n.left_lo, n.left_hi, n.left_index(), n.left_count()),
            (n.right_lo, n.right_hi, n.right_index(), n.right_count()),
        ]
    };
    // parent[c] = (node, side) of inner node c's entry in its parent.
    let mut parent = vec![None; nodes.len()];
    let mut leaf = None;
    for (i, n) in nodes.iter().enumerate() {
        for (side, (_, _, index, count)) in children(n).into_iter().enumerate() {
            if index == EMPTY_CHILD {
                continue;
            }
            if count == 0 {
                if let Some(p) = parent.get_mut(index as usize) {
                    *p = Some((i, side));
                }
            } else if (index..index.saturating_add(count)).contains(&slot) {
                leaf = Some((i, side));
            }
        }
    }
    let mut path = Vec::new();
    let mut at = leaf;
    // Each step moves to a parent, which core places before its children, so
    // the walk ends within `nodes.len()` steps; the bound guards a bad tree.
    for _ in 0..=nodes.len() {
        let Some((i, side)) = at else { break };
        let (lo, hi, _, _) = children(&nodes[i])[side]; // ok: `i` indexes `nodes`, `side` < 2
        path.push((lo, hi));
        at = parent[i]; // ok: `parent` has one entry per node
    }
    path.reverse();
    path
}

/// Whether the hit `(t, prim)` of `ray` lies outside its primitive's bounding box
/// (the box the BVH holds it in): on some axis, the exact ray is beyond one face
/// of the box for every parameter within [`T_ROUNDING`] of `t` (so the rounding
/// of `t` itself cannot put it there). Exact: `origin + t' * dir > bound` is
/// tested as `origin - bound > -(t' * dir)`, both sides exact in `f64` (a
/// difference of close `f32` values, a product of `f32` values), so a ray
/// passing `1e-59` outside a face is outside.
///
/// The slab test is conservative for points really in a box, so traversal never
/// culls such a hit; but the single-precision watertight test can report hits
/// off its triangle, and traversal rightly culls those by the box. It happens
/// where the triangle is tiny against its distance from the ray's origin (a
/// ray starting `1e8` away from a triangle of size 10: the projected vertices
/// round to nearly one point and the edge functions to noise, and the "hit" is
/// millions of units off), or where a triangle spans `1e30` and rounds its edges
/// by more than the ray's distance to them; and the sphere test, whose squared
/// distances underflow to 0 for radii and offsets below `1e-19`, reports a
/// sphere of radius `1e-45` hit by a ray passing `1e-29` from its centre. (The
/// watertight paper's double-precision fallback would catch the triangle cases;
/// the core leaves it out so that the GPU mirrors stay identical on hardware
/// without `f64`.)
pub fn off_primitive_box(scene: &Scene, ray: &Ray, t: f32, prim: u32) -> bool {
    let bounds = match scene.primitive(prim) {
        Some(PrimRef::Triangle(i)) => scene
            .triangle(i)
            .map(|[a, b, c]| prism_core::bvh::triangle_bounds(a, b, c)),
        Some(PrimRef::Sphere(i)) => scene
            .spheres()
            .get(i as usize)
            .map(|cr| prism_core::bvh::sphere_bounds(cr.truncate(), cr.w)),
        Some(PrimRef::Heightfield(h)) => scene
            .own_geometry()
            .heightfields()
            .get(h as usize)
            .map(|f| f.bounds()),
        None => None,
    };
    bounds.is_some_and(|b| off_box(ray, t, &b))
}

/// Whether the hit at `t` of `ray` lies outside `bounds`, exactly, for every
/// parameter within [`T_ROUNDING`] of `t` (see [`off_primitive_box`]).
pub fn off_box(ray: &Ray, t: f32, bounds: &prism_core::Aabb) -> bool {
    let t = f64::from(t);
    let ends = [t * (1.0 - T_ROUNDING), t * (1.0 + T_ROUNDING)];
    (0..3).any(|k| {
        // ok: `k` < 3 indexes each `Vec3`.
        let (o, d) = (f64::from(ray.origin[k]), f64::from(ray.dir[k]));
        let (lo, hi) = (f64::from(bounds.min[k]), f64::from(bounds.max[k]));
        let above = ends.iter().all(|&t| o - hi > -(t * d));
        let below = ends.iter().all(|&t| lo - o > t * d);
        above || below
    })
}

/// Whether `t` lies within [`T_ROUNDING`] of a finite `ray.tmax` (an
/// infinite `tmax` is near no hit: `inf - t <= 1e-6 * inf` would say it is).
pub fn near_tmax(ray: &Ray, t: f32) -> bool {
    ray.tmax.is_finite()
        && (f64::from(ray.tmax) - f64::from(t)).abs()
            <= T_ROUNDING * f64::from(t.abs().max(ray.tmax.abs()))
}

/// Relative rounding allowed on a hit distance `t` from the single-precision
/// primitive tests (8 ulps of `f32`).
pub const T_ROUNDING: f64 = 1e-6;

/// Trace `rays` (all valid) on `backend`, which holds `scene`, with each of its
/// traversals (the 8-wide BVH where the CPU has AVX2, the 4-wide one, and the
/// core's binary one) and compare with brute
/// force: `intersect` under the agreement rule, `occluded` exactly, except
/// where [`in_face_plane`] or [`off_primitive_box`] allow traversal to miss the
/// reference hit, and `intersect` may also miss one within rounding of `tmax`.
pub(crate) fn compare_with_brute_force(
    backend: &mut CpuBackend,
    scene: &Scene,
    rays: &[Ray],
) -> Result<(), Violation> {
    if let Some(accel) = backend.accel() {
        octant_copies_agree(accel.nodes(), rays)?;
    }
    let reference: Vec<(f32, u32)> = rays.iter().map(|r| brute_force(scene, r)).collect();
    let result = [Traversal::Binary, Traversal::Wide4, Traversal::Wide]
        .into_iter()
        .try_for_each(|traversal| {
            if let Err(e) = backend.set_traversal(traversal) {
                return violation!("set_traversal({traversal:?}) failed: {e}");
            }
            compare_traversal(backend, scene, rays, &reference)
                .map_err(|v| Violation(format!("{traversal:?} traversal: {v}")))
        });
    if let Err(e) = backend.set_traversal(Traversal::default()) {
        return violation!("set_traversal back to the default failed: {e}");
    }
    result
}

/// Whether closest hit `hit` (scene ids) agrees with brute force's `(t, prim)`
/// for `ray` under the agreement rule, and whether the reference hit is one a
/// walk may miss. A walk may miss the reference hit (it never finds a closer
/// one) only under the face-plane convention, or where the reference hit is not
/// on its primitive at all; and the closest-hit walk, which prunes what lies at
/// or past the best distance so far (at first `tmax`), may also miss a reference
/// hit within the rounding of `tmax`: the exact hit can lie at `tmax`, outside
/// the open interval, and which side `t` rounds to is not defined.
pub(crate) fn closest_hit_agrees(
    nodes: &[prism_core::gpu::BvhNode],
    prims: &[prism_core::gpu::Primitive],
    scene: &Scene,
    ray: &Ray,
    hit: &Hit,
    (t, prim): (f32, u32),
) -> (bool, bool) {
    let hit_ref = prim != Hit::NO_PRIM;
    let culled = hit_ref
        && (in_face_plane(nodes, prims, ray, t, prim) || off_primitive_box(scene, ray, t, prim));
    let at_tmax = hit_ref && near_tmax(ray, t);
    let missed = hit_ref && (!hit.is_hit() || hit.t > t);
    let agrees =
        (missed && (culled || at_tmax)) || classify(ray, hit, t, prim) != Agreement::Mismatch;
    (agrees, culled)
}

/// [`compare_with_brute_force`] for the backend's current traversal.
pub(crate) fn compare_traversal(
    backend: &mut CpuBackend,
    scene: &Scene,
    rays: &[Ray],
    reference: &[(f32, u32)],
) -> Result<(), Violation> {
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut occluded = vec![false; rays.len()];
    if let Err(e) = backend.intersect(rays, &mut hits) {
        return violation!("intersect of {} valid rays failed: {e}", rays.len());
    }
    if let Err(e) = backend.occluded(rays, &mut occluded) {
        return violation!("occluded of {} valid rays failed: {e}", rays.len());
    }
    let (nodes, prims) = backend
        .accel()
        .map(|a| (a.nodes(), a.primitives()))
        .unwrap_or_default();
    let all = rays.iter().zip(&hits).zip(&occluded).zip(reference);
    for (i, (((ray, hit), &occ), &(t, prim))) in all.enumerate() {
        if hit.is_hit()
            && !(hit.t > ray.tmin
                && hit.t < ray.tmax
                && (hit.prim as usize) < scene.primitive_count())
        {
            return violation!("ray {i} {ray:?}: hit {hit:?} outside the ray or the scene");
        }
        let (agrees, culled) = closest_hit_agrees(nodes, prims, scene, ray, hit, (t, prim));
        if !agrees {
            return violation!(
                "ray {i} {ray:?}: intersect gave {hit:?}, brute force gives t = {t} on prim {prim}"
            );
        }
        let hit_ref = prim != Hit::NO_PRIM;
        if occ != hit_ref && !(hit_ref && culled) {
            return violation!(
                "ray {i} {ray:?}: occluded = {occ}, brute force gives t = {t} on prim {prim}"
            );
        }
    }
    Ok(())
}
