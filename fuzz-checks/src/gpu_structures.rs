//! What the GPU backends derive from a scene or its tree, checked on the host
//! against core's tests and brute force: the octant copies of a small tree,
//! the light grids, the uniform cell grid and the CUDA grid walk's early
//! sphere miss.

use crate::Violation;
use crate::reference::{brute_force, closest_hit_agrees, off_primitive_box};
use glam::Vec3;
use prism_core::cell_grid::CellGrid;
use prism_core::integrator::spawn_tmin;
use prism_core::intersect::{RayPre, ray_aabb, ray_sphere, sphere_missed_early, widen_exit};
use prism_core::point_grid::{any_hit_listed, build_point_grid};
use prism_core::traverse::ray_primitive;
use prism_core::{Accel, Ray, Scene};

/// The light grids of a small scene ([`prism_core::point_grid`]) around its
/// light and around the first ray's origin: the shadow ray from every hit
/// point of `rays` to the grid's point, made as the integrators make it, gets
/// from the grid (where it answers) the answer of testing every primitive. A
/// hit that lies off its primitive's box ([`off_primitive_box`]: the f32 tests'
/// noise far from the ray's origin) may count either way, as for traversal.
pub(crate) fn light_grid_agrees(
    accel: &Accel,
    scene: &Scene,
    rays: &[Ray],
) -> Result<(), Violation> {
    let points = std::iter::once(accel.light().position).chain(rays.first().map(|r| r.origin));
    for point in points {
        let Some(grid) = build_point_grid(point, accel.primitives()) else {
            continue;
        };
        let prims = accel.primitives();
        for (i, ray) in rays.iter().enumerate() {
            let hit = accel.intersect(ray);
            if !hit.is_hit() {
                continue;
            }
            let p = ray.at(hit.t);
            let to_light = grid.point - p;
            let dist = to_light.length();
            let shadow = Ray::segment(p, to_light * (1.0 / dist), spawn_tmin(p, ray.origin), dist);
            if !shadow.is_valid() {
                continue;
            }
            let Some(listed) = any_hit_listed(&grid, prims, &shadow) else {
                continue;
            };
            let pre = RayPre::new(&shadow);
            let blocking: Vec<(f32, u32)> = prims
                .iter()
                .filter_map(|q| {
                    ray_primitive(&pre, q, shadow.tmin, shadow.tmax).map(|h| (h.0, q.id()))
                })
                .collect();
            let on_box = blocking
                .iter()
                .any(|&(t, id)| !off_primitive_box(scene, &shadow, t, id));
            if (on_box && !listed) || (blocking.is_empty() && listed) {
                return violation!(
                    "ray {i} {ray:?}: the shadow ray {shadow:?} to {point} is {} by the light grid; blocked by {blocking:?} (t, id), on its box: {on_box}",
                    if listed { "blocked" } else { "clear" },
                );
            }
        }
    }
    Ok(())
}

/// The early miss of the CUDA grid walk
/// ([`prism_core::intersect::sphere_missed_early`]) never says missed where
/// [`ray_sphere`] meets a sphere anywhere on the ray's line.
pub(crate) fn sphere_early_miss_agrees(scene: &Scene, rays: &[Ray]) -> Result<(), Violation> {
    for (i, ray) in rays.iter().enumerate() {
        for (k, s) in scene.spheres().iter().enumerate() {
            let (c, r) = (s.truncate(), s.w);
            if sphere_missed_early(ray.origin, ray.dir, c, r)
                && let Some(t) = ray_sphere(ray.origin, ray.dir, c, r, -f32::MAX, f32::INFINITY)
            {
                return violation!(
                    "ray {i} {ray:?}: sphere {k} said missed early, but ray_sphere hits it at t = {t}"
                );
            }
        }
    }
    Ok(())
}

/// The scene's uniform grid ([`prism_core::cell_grid`], built whatever its
/// cost model says): the closest hit of every ray through it agrees with brute
/// force under the rule `intersect` is held to (see
/// [`compare_traversal`](crate::reference::compare_traversal)).
pub(crate) fn cell_grid_agrees(
    accel: &Accel,
    scene: &Scene,
    rays: &[Ray],
) -> Result<(), Violation> {
    let Some(grid) = CellGrid::build(accel.primitives()) else {
        return Ok(());
    };
    let (nodes, prims) = (accel.nodes(), accel.primitives());
    for (i, ray) in rays.iter().enumerate() {
        let (t, prim) = brute_force(scene, ray);
        let mut hit = grid.closest_hit(accel, ray);
        if let Some(p) = prims.get(hit.prim as usize) {
            hit.prim = p.id();
        } else if hit.is_hit() {
            return violation!("ray {i} {ray:?}: the grid's hit {hit:?} names no slot");
        }
        if !closest_hit_agrees(nodes, prims, scene, ray, &hit, (t, prim)).0 {
            return violation!(
                "ray {i} {ray:?}: the cell grid gave {hit:?}, brute force gives t = {t} on prim {prim}"
            );
        }
    }
    Ok(())
}

/// The GPU backends' slab test on the octant copies of a small tree
/// ([`prism_core::gpu::octant_copies`]): for every ray and every child box, the
/// near and far planes of the ray's copy give [`ray_aabb`]'s value.
pub(crate) fn octant_copies_agree(
    nodes: &[prism_core::gpu::BvhNode],
    rays: &[Ray],
) -> Result<(), Violation> {
    use prism_core::gpu::{octant_copies, octant_of};
    let Some(copies) = octant_copies(nodes) else {
        return Ok(());
    };
    let v = |r: [f32; 4]| Vec3::new(r[0], r[1], r[2]);
    for (i, ray) in rays.iter().enumerate() {
        let pre = RayPre::new(ray);
        let o = octant_of(pre.inv_dir.into());
        let copy = &copies[o * nodes.len()..(o + 1) * nodes.len()];
        for (k, (t, c)) in nodes.iter().zip(copy).enumerate() {
            for (lo, hi, near, far) in [
                (t.left_lo, t.left_hi, c.left_lo, c.left_hi),
                (t.right_lo, t.right_hi, c.right_lo, c.right_hi),
            ] {
                let core = ray_aabb(&pre, v(lo), v(hi), ray.tmin, ray.tmax);
                let tn = (v(near) - pre.origin) * pre.inv_dir;
                let tf = (v(far) - pre.origin) * pre.inv_dir;
                let enter = tn.x.max(tn.y).max(tn.z).max(ray.tmin);
                let exit = widen_exit(tf.x.min(tf.y).min(tf.z).min(ray.tmax));
                let octant = if enter <= exit { enter } else { f32::INFINITY };
                if core != octant && !(core.is_nan() && octant.is_nan()) {
                    return violation!(
                        "ray {i} {ray:?}, node {k}: ray_aabb gives {core}, the octant copy {o} gives {octant}"
                    );
                }
            }
        }
    }
    Ok(())
}
