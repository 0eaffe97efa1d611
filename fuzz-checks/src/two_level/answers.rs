//! The checks on the backend's answers: brute force over every instance and
//! slot of a scene built from scratch ([`instance_brute_force`]), the excuses
//! a walk may rightly take (face planes, hits off their boxes, `tmax`
//! rounding), each hit being a real one, every CPU traversal in turn, and
//! bitwise equal answers before and after a refused update.

use crate::Violation;
use crate::reference::{near_tmax, off_box};
use glam::Vec3;
use prism_core::gpu::{BvhNode, EMPTY_CHILD, GpuInstance};
use prism_core::intersect::{MIN_DIR_COMPONENT, RayPre};
use prism_core::reference::t_close;
use prism_core::traverse::ray_primitive;
use prism_core::two_level::object_ray;
use prism_core::{Aabb, Accel, Backend, Hit, Ray};
use prism_cpu::{CpuBackend, Traversal};

/// The closest hit of `ray` over every instance it sees and every slot of
/// its geometry, each instance entered by the object ray the walks use:
/// `(t, instance, slot)`.
pub fn instance_brute_force(accel: &Accel, ray: &Ray) -> Option<(f32, u32, usize)> {
    let mut best: Option<(f32, u32, usize)> = None;
    for (i, rec) in accel.instances().iter().enumerate() {
        if ray.mask & rec.mask() == 0 || rec.root() == EMPTY_CHILD {
            continue;
        }
        let Some(inst) = accel.instance(i as u32) else {
            continue;
        };
        let Some(slots) = accel.geometry_slots(inst.geometry) else {
            continue;
        };
        let object = object_ray(rec, ray, best.map_or(ray.tmax, |b| b.0));
        let pre = RayPre::new(&object);
        for slot in slots {
            let t_best = best.map_or(ray.tmax, |b| b.0);
            if let Some((t, _, _)) =
                ray_primitive(&pre, &accel.primitives()[slot], ray.tmin, t_best)
            {
                best = Some((t, i as u32, slot));
            }
        }
    }
    best
}

/// Whether a ray that does not move along some axis lies, on that axis,
/// within reach of a face of one of the child boxes of `nodes` (the face
/// plane convention of the slab test; see [`crate::in_face_plane`], here
/// over every box of the tree, not only those on the hit's path).
fn near_face_plane(nodes: &[BvhNode], ray: &Ray, t: f32) -> bool {
    let reach = 2.0 * MIN_DIR_COMPONENT * t.abs();
    (0..3).any(|k| {
        ray.dir[k].abs() < MIN_DIR_COMPONENT
            && nodes.iter().any(|n| {
                [n.left_lo, n.left_hi, n.right_lo, n.right_hi]
                    .iter()
                    .any(|row| (ray.origin[k] - row[k]).abs() <= reach)
            })
    })
}

/// The top tree's box of instance `instance` (its leaf's), if it has one.
fn top_leaf_box(top: &[BvhNode], instance: u32) -> Option<Aabb> {
    top.iter().find_map(|n| {
        let row = |lo: [f32; 4], hi: [f32; 4]| Aabb {
            min: Vec3::new(lo[0], lo[1], lo[2]),
            max: Vec3::new(hi[0], hi[1], hi[2]),
        };
        if n.left_count() > 0 && n.left_index() == instance {
            Some(row(n.left_lo, n.left_hi))
        } else if n.right_count() > 0 && n.right_index() == instance {
            Some(row(n.right_lo, n.right_hi))
        } else {
            None
        }
    })
}

/// Whether a walk over `accel` may rightly miss the hit at `t` on slot
/// `slot` of instance `instance` (or find a farther one): the world ray or
/// the object ray in a face plane of a box of its tree, the hit off its
/// primitive's box (object space) or off the instance's top-level box
/// (world space), or within rounding of `tmax`.
fn excused(accel: &Accel, ray: &Ray, t: f32, instance: u32, slot: usize) -> bool {
    if near_tmax(ray, t) || near_face_plane(accel.top_nodes(), ray, t) {
        return true;
    }
    if top_leaf_box(accel.top_nodes(), instance).is_none_or(|b| off_box(ray, t, &b)) {
        return true;
    }
    let (Some(rec), Some(inst)) = (
        accel.instances().get(instance as usize),
        accel.instance(instance),
    ) else {
        return false;
    };
    let object = object_ray(rec, ray, f32::INFINITY);
    let nodes = accel
        .geometry_nodes(inst.geometry)
        .and_then(|r| accel.nodes().get(r))
        .unwrap_or(&[]);
    let prim_box = accel.primitives().get(slot).map(|p| {
        let xyz = |r: [f32; 4]| Vec3::new(r[0], r[1], r[2]);
        if p.kind() == prism_core::gpu::KIND_SPHERE {
            prism_core::bvh::sphere_bounds(xyz(p.a), p.b[0])
        } else {
            prism_core::bvh::triangle_bounds(xyz(p.a), xyz(p.b), xyz(p.c))
        }
    });
    near_face_plane(nodes, &object, t) || prim_box.is_none_or(|b| off_box(&object, t, &b))
}

/// Whether the walk's `hit` is a hit of instance `hit.instance` on its
/// primitive `hit.prim` at about `hit.t`, seen by the ray's mask.
fn real_hit(accel: &Accel, ray: &Ray, hit: &Hit) -> Result<(), String> {
    let rec: Option<&GpuInstance> = accel.instances().get(hit.instance as usize);
    let (Some(rec), Some(inst)) = (rec, accel.instance(hit.instance)) else {
        return Err("a removed or missing instance".into());
    };
    if ray.mask & u32::from(inst.mask) == 0 {
        return Err(format!(
            "instance {} masked out ({:#x})",
            hit.instance, inst.mask
        ));
    }
    if !(hit.t > ray.tmin && hit.t < ray.tmax) {
        return Err("outside the ray's interval".into());
    }
    let slots = accel.geometry_slots(inst.geometry).unwrap_or(0..0);
    let prims = accel.primitives().get(slots).unwrap_or(&[]);
    let Some(p) = prims.iter().find(|p| p.id() == hit.prim) else {
        return Err(format!(
            "no primitive {} in geometry {}",
            hit.prim, inst.geometry
        ));
    };
    let object = object_ray(rec, ray, f32::INFINITY);
    match ray_primitive(&RayPre::new(&object), p, ray.tmin, f32::INFINITY) {
        Some((t, _, _)) if t_close(t, hit.t, prism_core::reference::t_floor(&object)) => Ok(()),
        other => Err(format!("its primitive gives {other:?}")),
    }
}

/// The backend's answers (on its current traversal) against brute force
/// over `reference` (the scene built from scratch from the model's state);
/// the excuses come from the backend's own trees (`walked`).
fn compare_traversal(
    backend: &mut CpuBackend,
    reference: &Accel,
    rays: &[Ray],
) -> Result<(), Violation> {
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut occluded = vec![false; rays.len()];
    if let Err(e) = backend.intersect(rays, &mut hits) {
        return violation!("intersect of {} valid rays failed: {e}", rays.len());
    }
    if let Err(e) = backend.occluded(rays, &mut occluded) {
        return violation!("occluded of {} valid rays failed: {e}", rays.len());
    }
    let Some(walked) = backend.accel() else {
        return violation!("the backend holds no scene after a good set_scene");
    };
    for (i, ((ray, hit), &occ)) in rays.iter().zip(&hits).zip(&occluded).enumerate() {
        if hit.is_hit()
            && let Err(why) = real_hit(walked, ray, hit)
        {
            return violation!("ray {i} {ray:?}: intersect gave {hit:?}: {why}");
        }
        let brute = instance_brute_force(reference, ray);
        let Some((t, instance, slot)) = brute else {
            if hit.is_hit() || occ {
                return violation!(
                    "ray {i} {ray:?}: intersect gave {hit:?}, occluded {occ}; brute force finds nothing"
                );
            }
            continue;
        };
        let prim = reference.primitives()[slot].id();
        // The same hit in the walked scene's slots (a refit keeps ids, not slots).
        let walked_slot = walked
            .instance(instance)
            .and_then(|inst| walked.geometry_slots(inst.geometry))
            .and_then(|r| r.into_iter().find(|&s| walked.primitives()[s].id() == prim));
        let culled = walked_slot.is_none_or(|s| excused(walked, ray, t, instance, s));
        let close = hit.is_hit() && t_close(hit.t, t, prism_core::reference::t_floor(ray));
        let missed = !hit.is_hit() || hit.t > t;
        if !(close || (missed && culled)) {
            return violation!(
                "ray {i} {ray:?}: intersect gave {hit:?}, brute force gives t = {t} on instance {instance}, prim {prim}"
            );
        }
        if !occ && !culled {
            return violation!(
                "ray {i} {ray:?}: occluded = false, brute force gives t = {t} on instance {instance}, prim {prim}"
            );
        }
    }
    Ok(())
}

/// [`compare_traversal`] on every CPU traversal, then back to the default.
pub(super) fn compare_all(
    backend: &mut CpuBackend,
    reference: &Accel,
    rays: &[Ray],
) -> Result<(), Violation> {
    let result = [Traversal::Binary, Traversal::Wide4, Traversal::Wide]
        .into_iter()
        .try_for_each(|traversal| {
            if let Err(e) = backend.set_traversal(traversal) {
                return violation!("set_traversal({traversal:?}) failed: {e}");
            }
            compare_traversal(backend, reference, rays)
                .map_err(|v| Violation(format!("{traversal:?} traversal: {v}")))
        });
    if let Err(e) = backend.set_traversal(Traversal::default()) {
        return violation!("set_traversal back to the default failed: {e}");
    }
    result
}

/// The hits and occlusion of `rays` on the backend's current traversal.
pub(super) fn answers(
    backend: &mut CpuBackend,
    rays: &[Ray],
) -> Result<(Vec<Hit>, Vec<bool>), Violation> {
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut occ = vec![false; rays.len()];
    backend
        .intersect(rays, &mut hits)
        .and_then(|_| backend.occluded(rays, &mut occ))
        .map_err(|e| Violation(format!("tracing {} valid rays failed: {e}", rays.len())))?;
    Ok((hits, occ))
}

/// Bitwise equal answers (NaN-proof).
pub(super) fn same_answers(a: &(Vec<Hit>, Vec<bool>), b: &(Vec<Hit>, Vec<bool>)) -> bool {
    a.1 == b.1
        && a.0.len() == b.0.len()
        && a.0
            .iter()
            .zip(&b.0)
            .all(|(x, y)| bytemuck_bits(x) == bytemuck_bits(y))
}

fn bytemuck_bits(h: &Hit) -> [u32; 5] {
    [
        h.t.to_bits(),
        h.u.to_bits(),
        h.v.to_bits(),
        h.prim,
        h.instance,
    ]
}
