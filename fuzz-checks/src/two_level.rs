//! The two-level half of the `scene_trace` check: arbitrary geometries placed
//! by arbitrary instances (transforms with NaN, infinities, singular and huge
//! entries; masks; material overrides), rays with arbitrary masks, and
//! arbitrary update sequences (moves, masks, additions, removals, new
//! vertices of the wrong count or not finite, rebuilds).
//!
//! The scene and each update are judged against a model written from the
//! documentation ([`prism_core::Scene`], [`prism_core::SceneUpdate`]): what
//! the model finds bad must be refused with an error naming a bad item, and
//! the scene the backend held before must then answer every ray as it did
//! (bit for bit); what the model finds good must be taken, and the backend's
//! answers then agree with brute force over a scene built from scratch from
//! the model's state ([`instance_brute_force`]: core's object-space tests over
//! every instance and every slot, as `core/tests/instances.rs` does), on every
//! CPU traversal.
//!
//! A transform is good when it is finite and its linear part's condition
//! number (Frobenius norms, worked out here in `f64` by glam's inverse) is
//! below [`ACCEPTED_CONDITION`], bad when it is not finite or its determinant
//! is zero, and either between: core refuses nearly singular transforms at a
//! bound ([`prism_core::instance::MAX_TRANSFORM_CONDITION`]) that this
//! independent estimate need not reproduce to the last bit.

use crate::backend::{known_good_call, with_backend};
use crate::bytes::Bytes;
use crate::reference::{near_tmax, off_box};
use crate::scenes::{decode_material, error_names_bad_item, same_error};
use crate::settings::finite_radiance;
use crate::{MAX_PRIMITIVES, MAX_RAYS, Violation};
use glam::{Affine3A, DMat3, Quat, Vec3};
use prism_core::gpu::{BvhNode, EMPTY_CHILD, GpuInstance};
use prism_core::intersect::{MIN_DIR_COMPONENT, RayPre};
use prism_core::reference::t_close;
use prism_core::scene::PrimRef;
use prism_core::traverse::ray_primitive;
use prism_core::two_level::object_ray;
use prism_core::{
    Aabb, Accel, Backend, Camera, Error, Geometry, Hit, Image, Instance, Integrator, Material,
    NoProgress, PixelFormat, Ray, RenderSettings, Scene, SceneUpdate,
};
use prism_cpu::{CpuBackend, Traversal};

/// Most instances a decoded scene starts with.
pub const MAX_INSTANCES: usize = 16;
/// Most updates applied to a decoded scene.
pub const MAX_UPDATES: usize = 4;
/// Below this condition number a transform must be accepted (core refuses
/// above `1e6`).
pub const ACCEPTED_CONDITION: f64 = 0.99e6;

/// How the model judges an instance's transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Good,
    Bad,
    Either,
}

/// The model's verdict on `t` (see the module docs).
fn transform_verdict(t: &Affine3A) -> Verdict {
    if !t.is_finite() {
        return Verdict::Bad;
    }
    let m = DMat3::from_cols(
        t.matrix3.x_axis.as_dvec3(),
        t.matrix3.y_axis.as_dvec3(),
        t.matrix3.z_axis.as_dvec3(),
    );
    let det = m.determinant();
    if det == 0.0 {
        return Verdict::Bad;
    }
    let inv = m.inverse();
    let fro = |a: &DMat3| {
        (a.x_axis.length_squared() + a.y_axis.length_squared() + a.z_axis.length_squared()).sqrt()
    };
    let cond = fro(&m) * fro(&inv);
    if cond.is_finite() && cond < ACCEPTED_CONDITION {
        Verdict::Good
    } else {
        Verdict::Either
    }
}

/// A transform: usually a tame rotation, non-uniform scale (a mirror now and
/// then) and translation; sometimes raw entries (NaN, infinities, huge,
/// zeros), a singular one, or a tame one scaled by a power of two.
fn decode_transform(b: &mut Bytes) -> Affine3A {
    let tame = |b: &mut Bytes| {
        let axis = Vec3::new(b.unit() - 0.5, b.unit() - 0.5, b.unit() - 0.5).normalize_or(Vec3::Y);
        let rotation = Quat::from_axis_angle(axis, b.unit() * std::f32::consts::TAU);
        let mut scale = Vec3::new(0.25 + 3.75 * b.unit(), 0.25 + 3.75 * b.unit(), 1.0);
        scale.z = 0.25 + 3.75 * b.unit();
        if b.u8() > 240 {
            scale.x = -scale.x;
        }
        let translation = Vec3::new(b.unit(), b.unit(), b.unit()) * 16.0 - 8.0;
        Affine3A::from_scale_rotation_translation(scale, rotation, translation)
    };
    match b.u8() {
        0..=159 => tame(b),
        160..=223 => prism_core::instance::from_rows([0; 3].map(|_| [0; 4].map(|_| b.f32()))),
        224..=239 => {
            // Singular: one axis squashed to nothing, or two equal columns.
            let t = tame(b);
            if b.u8() & 1 == 0 {
                t * Affine3A::from_scale(Vec3::new(1.0, 0.0, 1.0))
            } else {
                let mut m = t;
                m.matrix3.z_axis = m.matrix3.x_axis;
                m
            }
        }
        _ => {
            let t = tame(b);
            let exp = i32::from(b.u8() as i8);
            let s = 2f32.powi(exp);
            Affine3A {
                matrix3: t.matrix3 * s,
                translation: t.translation * if b.u8() & 1 == 0 { s } else { 1.0 },
            }
        }
    }
}

/// The mesh a geometry was made of, to give it new vertices.
#[derive(Clone, Debug)]
struct MeshSource {
    positions: Vec<Vec3>,
    triangles: Vec<[u32; 3]>,
    material: u32,
}

/// A decoded geometry: an indexed mesh (the kind that takes new vertices)
/// or loose spheres and triangles (arbitrary values both).
fn decode_geometry(
    b: &mut Bytes,
    materials: u32,
    budget: &mut usize,
) -> (Geometry, Option<MeshSource>) {
    let material = |b: &mut Bytes| match b.u8() {
        250..=255 => b.u32(),
        m => u32::from(m) % materials.max(1),
    };
    if b.u8() < 128 {
        let n = usize::from(b.u8() % 9);
        let positions: Vec<Vec3> = (0..n).map(|_| b.vec3()).collect();
        let triangles: Vec<[u32; 3]> = (0..(b.u8() % 7).min(*budget as u8))
            .map(|_| [0; 3].map(|_| u32::from(b.u8()) % (n as u32 + 1)))
            .collect();
        let m = material(b);
        *budget -= triangles.len();
        return match Geometry::mesh(&positions, &triangles, m) {
            Ok(g) => (
                g,
                Some(MeshSource {
                    positions,
                    triangles,
                    material: m,
                }),
            ),
            // Refused meshes are `scene_trace`'s flat half's business: an
            // empty geometry stands in (which the scene must refuse).
            Err(_) => (Geometry::new(), None),
        };
    }
    let mut g = Geometry::new();
    for _ in 0..(b.u8() % 7).min(*budget as u8) {
        *budget -= 1;
        let (kind, m) = (b.u8(), material(b));
        if kind < 128 {
            let (v0, v1, v2) = (b.vec3(), b.vec3(), b.vec3());
            g.add_triangle(v0, v1, v2, m);
        } else {
            let (c, r) = (b.vec3(), b.f32());
            g.add_sphere(c, r, m);
        }
    }
    (g, None)
}

/// An instance over `geometries` geometries and `materials` materials, now
/// and then naming one that does not exist.
fn decode_instance(b: &mut Bytes, geometries: u32, materials: u32) -> Instance {
    let geometry = match b.u8() {
        250..=255 => b.u32(),
        k => u32::from(k) % (geometries + 1).max(1),
    };
    let transform = decode_transform(b);
    let mask = match b.u8() {
        0..=127 => 0xFF,
        _ => b.u8(),
    };
    let inst = Instance::new(geometry, transform)
        .with_mask(mask)
        .with_user_id(u32::from(b.u8()));
    match b.u8() {
        0..=159 => inst,
        160..=247 => inst.with_material(u32::from(b.u8()) % materials.max(1)),
        _ => inst.with_material(b.u32()),
    }
}

/// The scene as the model holds it: geometries (and the meshes they were
/// made of), instances by index (`None`: removed), materials.
#[derive(Clone, Debug)]
struct Model {
    materials: Vec<Material>,
    geometries: Vec<Geometry>,
    meshes: Vec<Option<MeshSource>>,
    instances: Vec<Option<Instance>>,
    reject_degenerate: bool,
}

/// What the model finds wrong with a scene or an update.
#[derive(Clone, Debug, Default)]
struct Judgement {
    /// Definitely refused items, as predicates on the error.
    bad: Vec<String>,
    /// Whether some transform lies in the band where either answer is right.
    either: bool,
}

impl Model {
    /// The scene of the model's state: removed instances stand in as
    /// instances seen by no ray (mask 0) of geometry 0, so that every index
    /// keeps its place. Degenerate triangles are kept (never hit either way),
    /// as new vertices may make some.
    fn scene(&self, keep_rejection: bool) -> Scene {
        let mut scene = Scene::new();
        scene.reject_degenerate = keep_rejection && self.reject_degenerate;
        for m in &self.materials {
            scene.add_material(*m);
        }
        for g in &self.geometries {
            scene.add_geometry(g.clone());
        }
        for inst in &self.instances {
            scene.add_instance(inst.unwrap_or(Instance::new(0, Affine3A::IDENTITY).with_mask(0)));
        }
        scene
    }

    /// Whether `inst` may be placed: a geometry and material that exist, a
    /// good transform. Adds what is wrong to `j`.
    fn judge_instance(&self, inst: &Instance, j: &mut Judgement) {
        if inst.geometry as usize >= self.geometries.len() {
            j.bad.push(format!("geometry {}", inst.geometry));
        }
        if let Some(m) = inst.material
            && m as usize >= self.materials.len()
        {
            j.bad.push(format!("material {m}"));
        }
        match transform_verdict(&inst.transform) {
            Verdict::Good => {}
            Verdict::Bad => j.bad.push("transform".into()),
            Verdict::Either => j.either = true,
        }
    }

    /// The initial scene's judgement.
    fn judge_scene(&self) -> Judgement {
        let mut j = Judgement::default();
        for (i, m) in self.materials.iter().enumerate() {
            if m.validate(i).is_err() {
                j.bad.push(format!("material {i} invalid"));
            }
        }
        for (g, geometry) in self.geometries.iter().enumerate() {
            let flat = flat_copy(geometry, &self.materials, self.reject_degenerate);
            if !crate::scenes::scene_is_valid(&flat) {
                j.bad.push(format!("geometry {g} invalid"));
            }
        }
        for inst in self.instances.iter().flatten() {
            self.judge_instance(inst, &mut j);
        }
        j
    }
}

/// The primitives of `geometry` as a flat scene of the same materials, in id
/// order, to judge them with the flat check's spec and name checks.
fn flat_copy(geometry: &Geometry, materials: &[Material], reject_degenerate: bool) -> Scene {
    let mut s = Scene::new();
    s.reject_degenerate = reject_degenerate;
    for m in materials {
        s.add_material(*m);
    }
    let mats = geometry.primitive_materials();
    for id in 0..geometry.primitive_count() as u32 {
        let m = mats.get(id as usize).copied().unwrap_or(0);
        match geometry.primitive(id) {
            Some(PrimRef::Triangle(t)) => {
                if let Some([a, b, c]) = geometry.triangle(t) {
                    s.add_triangle(a, b, c, m);
                }
            }
            Some(PrimRef::Sphere(k)) => {
                if let Some(cr) = geometry.spheres().get(k as usize) {
                    s.add_sphere(cr.truncate(), cr.w, m);
                }
            }
            None => {}
        }
    }
    s
}

/// Whether a scene error names an item the model finds bad (or, for a
/// transform, one it lets go either way).
fn scene_error_named(model: &Model, e: &Error) -> bool {
    let inst = |i: usize| model.instances.get(i).copied().flatten();
    match e {
        Error::MaterialInvalid { index, .. } => model
            .materials
            .get(*index)
            .is_some_and(|m| m.validate(*index).is_err()),
        Error::EmptyGeometry { geometry } => model
            .geometries
            .get(*geometry)
            .is_some_and(|g| g.primitive_count() == 0),
        Error::InGeometry { geometry, source } => {
            model.geometries.get(*geometry).is_some_and(|g| {
                error_names_bad_item(
                    &flat_copy(g, &model.materials, model.reject_degenerate),
                    source,
                )
            })
        }
        Error::GeometryOutOfRange {
            instance,
            geometry,
            count,
        } => {
            *count == model.geometries.len()
                && *geometry as usize >= *count
                && inst(*instance).is_some_and(|i| i.geometry == *geometry)
        }
        Error::InstanceMaterialOutOfRange {
            instance,
            material,
            count,
        } => {
            *count == model.materials.len()
                && *material as usize >= *count
                && inst(*instance).is_some_and(|i| i.material == Some(*material))
        }
        Error::TransformInvalid {
            instance,
            transform,
            ..
        } => inst(*instance).is_some_and(|i| {
            same_rows(&prism_core::instance::rows(&i.transform), transform)
                && transform_verdict(&i.transform) != Verdict::Good
        }),
        _ => false,
    }
}

fn same_rows(a: &[[f32; 4]; 3], b: &[[f32; 4]; 3]) -> bool {
    a.iter()
        .flatten()
        .zip(b.iter().flatten())
        .all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Whether every primitive and instance of the model is of a size real
/// scenes use: inside it a NaN or negative pixel is an integrator bug.
fn model_is_tame(model: &Model) -> bool {
    let tame_transform = |t: &Affine3A| {
        t.to_cols_array().iter().all(|v| v.abs() <= 1e3) && transform_verdict(t) == Verdict::Good
    };
    model
        .geometries
        .iter()
        .all(|g| crate::scenes::scene_is_tame(&flat_copy(g, &model.materials, false)))
        && model
            .instances
            .iter()
            .flatten()
            .all(|i| tame_transform(&i.transform))
        && model
            .materials
            .iter()
            .all(|m| m.emission.abs().max_element() <= 1e4)
}

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
fn compare_all(backend: &mut CpuBackend, reference: &Accel, rays: &[Ray]) -> Result<(), Violation> {
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

/// A ray with a mask: origin, then a raw direction or one aimed at a point
/// on a primitive of an instance (carried into the world), then a `(tmin,
/// tmax)` pair, then a mask (most often every bit).
fn decode_ray(b: &mut Bytes, model: &Model) -> Ray {
    let origin = b.vec3();
    let aim = b.u8();
    let live: Vec<&Instance> = model.instances.iter().flatten().collect();
    let target = (aim >= 112 && !live.is_empty())
        .then(|| {
            let inst = live[usize::from(aim) % live.len()];
            let g = model.geometries.get(inst.geometry as usize)?;
            let id = u32::from(b.u8()) % (g.primitive_count().max(1) as u32);
            let p = match g.primitive(id)? {
                PrimRef::Triangle(t) => {
                    let [p0, p1, p2] = g.triangle(t)?;
                    let (u, v) = (b.unit(), b.unit());
                    let (u, v) = if u + v > 1.0 {
                        (1.0 - u, 1.0 - v)
                    } else {
                        (u, v)
                    };
                    p0 + u * (p1 - p0) + v * (p2 - p0)
                }
                PrimRef::Sphere(s) => {
                    let cr = g.spheres().get(s as usize)?;
                    cr.truncate() + cr.w * b.vec3().normalize_or(Vec3::X)
                }
            };
            Some(inst.transform.transform_point3(p))
        })
        .flatten();
    let dir = match target {
        Some(p) => p - origin,
        None => b.vec3(),
    };
    let (tmin, tmax) = match b.u8() % 8 {
        0..=3 => (0.0, f32::INFINITY),
        4 => (b.f32(), f32::INFINITY),
        5 => (0.0, b.f32()),
        _ => (b.f32(), b.f32()),
    };
    let mask = match b.u8() {
        0..=127 => Ray::ALL,
        128..=247 => u32::from(b.u8()),
        _ => b.u32(),
    };
    Ray::segment(origin, dir, tmin, tmax).with_mask(mask)
}

/// One decoded update operation.
#[derive(Clone, Debug)]
enum Op {
    Move(u32, Affine3A),
    Mask(u32, u8),
    Add(Instance),
    Remove(u32),
    /// New vertices (an index into the update's vertex lists).
    Vertices(u32, usize),
    Rebuild(u32),
}

/// An instance index: mostly one the scene has (or one past it), now and
/// then a raw one.
fn decode_index(b: &mut Bytes, len: usize) -> u32 {
    match b.u8() {
        250..=255 => b.u32(),
        k => u32::from(k) % (len as u32 + 1).max(1),
    }
}

/// A decoded update: its operations and the vertex lists they name.
fn decode_update(b: &mut Bytes, model: &Model) -> (Vec<Op>, Vec<Vec<Vec3>>) {
    let (mut ops, mut lists) = (Vec::new(), Vec::new());
    let geometries = model.geometries.len() as u32;
    let len = model.instances.len();
    for _ in 0..b.u8() % 7 {
        let op = match b.u8() % 8 {
            0 | 1 => Op::Move(decode_index(b, len), decode_transform(b)),
            2 => Op::Mask(decode_index(b, len), b.u8()),
            3 => Op::Add(decode_instance(b, geometries, model.materials.len() as u32)),
            4 => Op::Remove(decode_index(b, len)),
            5 | 6 => {
                let g = u32::from(b.u8()) % (geometries + 1);
                let base: Vec<Vec3> = model
                    .meshes
                    .get(g as usize)
                    .cloned()
                    .flatten()
                    .map(|m| m.positions)
                    .unwrap_or_default();
                let mut positions: Vec<Vec3> = base
                    .iter()
                    .map(|p| match b.u8() {
                        0..=95 => *p,
                        96..=239 => *p + Vec3::new(b.unit(), b.unit(), b.unit()) - 0.5,
                        _ => b.vec3(),
                    })
                    .collect();
                match b.u8() {
                    0..=223 => {}
                    224..=239 => {
                        positions.pop();
                    }
                    _ => positions.push(b.vec3()),
                }
                lists.push(positions);
                Op::Vertices(g, lists.len() - 1)
            }
            _ => Op::Rebuild(u32::from(b.u8()) % (geometries + 1)),
        };
        ops.push(op);
    }
    (ops, lists)
}

/// Apply `ops` to `model` as the documentation says an update applies
/// (removals, then additions into the lowest free indices, then transforms
/// and masks, then vertices and rebuilds), judging each; returns the model
/// after it, the indices additions take, and the judgement.
fn model_update(model: &Model, ops: &[Op], lists: &[Vec<Vec3>]) -> (Model, Vec<u32>, Judgement) {
    let mut next = model.clone();
    let mut j = Judgement::default();
    for op in ops {
        if let Op::Remove(i) = *op {
            match next.instances.get_mut(i as usize) {
                Some(slot @ Some(_)) => *slot = None,
                _ => j.bad.push(format!("instance {i}")),
            }
        }
    }
    let mut added = Vec::new();
    for op in ops {
        if let Op::Add(inst) = op {
            next.judge_instance(inst, &mut j);
            let index = match next.instances.iter().position(Option::is_none) {
                Some(free) => free,
                None => {
                    next.instances.push(None);
                    next.instances.len() - 1
                }
            };
            next.instances[index] = Some(*inst);
            added.push(index as u32);
        }
    }
    for op in ops {
        match *op {
            Op::Move(i, t) => match next.instances.get_mut(i as usize) {
                Some(Some(inst)) => {
                    inst.transform = t;
                    match transform_verdict(&t) {
                        Verdict::Good => {}
                        Verdict::Bad => j.bad.push("transform".into()),
                        Verdict::Either => j.either = true,
                    }
                }
                _ => j.bad.push(format!("instance {i}")),
            },
            Op::Mask(i, mask) => match next.instances.get_mut(i as usize) {
                Some(Some(inst)) => inst.mask = mask,
                _ => j.bad.push(format!("instance {i}")),
            },
            _ => {}
        }
    }
    for op in ops {
        match *op {
            Op::Vertices(g, list) => {
                let positions = &lists[list];
                match next.meshes.get(g as usize) {
                    None => j.bad.push(format!("geometry {g}")),
                    Some(None) => j.bad.push(format!("geometry {g} not a mesh")),
                    Some(Some(mesh)) if mesh.positions.len() != positions.len() => {
                        j.bad.push(format!("geometry {g} vertex count"));
                    }
                    Some(Some(_)) if positions.iter().any(|p| !p.is_finite()) => {
                        j.bad.push(format!("geometry {g} vertex not finite"));
                    }
                    Some(Some(mesh)) => {
                        let mesh = MeshSource {
                            positions: positions.clone(),
                            ..mesh.clone()
                        };
                        match Geometry::mesh(&mesh.positions, &mesh.triangles, mesh.material) {
                            Ok(geometry) => next.geometries[g as usize] = geometry,
                            Err(_) => j.bad.push(format!("geometry {g} remade")),
                        }
                        next.meshes[g as usize] = Some(mesh);
                    }
                }
            }
            Op::Rebuild(g) if g as usize >= next.geometries.len() => {
                j.bad.push(format!("geometry {g}"));
            }
            _ => {}
        }
    }
    (next, added, j)
}

/// Whether an update error names an item the model found bad in it.
fn update_error_named(
    model: &Model,
    ops: &[Op],
    lists: &[Vec<Vec3>],
    judged: &Judgement,
    e: &Error,
) -> bool {
    let geometries = model.geometries.len();
    let names_geometry = |g: u32| {
        ops.iter()
            .any(|op| matches!(*op, Op::Vertices(x, _) | Op::Rebuild(x) if x == g))
    };
    let vertices_for = |g: u32| {
        ops.iter().filter_map(move |op| match *op {
            Op::Vertices(x, l) if x == g => lists.get(l),
            _ => None,
        })
    };
    let added = || {
        ops.iter().filter_map(|op| match op {
            Op::Add(i) => Some(i),
            _ => None,
        })
    };
    match e {
        Error::InstanceOutOfRange { instance, .. } => {
            judged.bad.contains(&format!("instance {instance}"))
        }
        Error::UnknownGeometry { geometry, count } => {
            *count == geometries && *geometry as usize >= geometries && names_geometry(*geometry)
        }
        Error::NotAMesh { geometry } => {
            matches!(model.meshes.get(*geometry as usize), Some(None))
                && vertices_for(*geometry).next().is_some()
        }
        Error::VertexCountMismatch {
            geometry,
            given,
            expected,
        } => {
            model
                .meshes
                .get(*geometry as usize)
                .cloned()
                .flatten()
                .is_some_and(|m| m.positions.len() == *expected)
                && vertices_for(*geometry).any(|l| l.len() == *given && *given != *expected)
        }
        Error::InGeometry { geometry, source } => match **source {
            Error::VertexNotFinite {
                vertex, position, ..
            } => vertices_for(*geometry as u32).any(|l| {
                l.get(vertex).is_some_and(|p| {
                    !p.is_finite() && crate::scenes::same_bits(p.to_array(), position)
                })
            }),
            _ => false,
        },
        Error::GeometryOutOfRange {
            geometry, count, ..
        } => {
            *count == geometries
                && *geometry as usize >= geometries
                && added().any(|i| i.geometry == *geometry)
        }
        Error::InstanceMaterialOutOfRange {
            material, count, ..
        } => {
            *count == model.materials.len()
                && *material as usize >= *count
                && added().any(|i| i.material == Some(*material))
        }
        Error::TransformInvalid { transform, .. } => ops.iter().any(|op| match op {
            Op::Move(_, t) | Op::Add(Instance { transform: t, .. }) => {
                same_rows(&prism_core::instance::rows(t), transform)
                    && transform_verdict(t) != Verdict::Good
            }
            _ => false,
        }),
        _ => false,
    }
}

/// The hits and occlusion of `rays` on the backend's current traversal.
fn answers(backend: &mut CpuBackend, rays: &[Ray]) -> Result<(Vec<Hit>, Vec<bool>), Violation> {
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut occ = vec![false; rays.len()];
    backend
        .intersect(rays, &mut hits)
        .and_then(|_| backend.occluded(rays, &mut occ))
        .map_err(|e| Violation(format!("tracing {} valid rays failed: {e}", rays.len())))?;
    Ok((hits, occ))
}

/// Bitwise equal answers (NaN-proof).
fn same_answers(a: &(Vec<Hit>, Vec<bool>), b: &(Vec<Hit>, Vec<bool>)) -> bool {
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

/// The two-level half of [`crate::scene_trace`] (see the module docs).
pub(crate) fn two_level_trace(b: &mut Bytes, reject_degenerate: bool) -> Result<(), Violation> {
    let materials: Vec<Material> = (0..1 + b.u8() % 3).map(|_| decode_material(b)).collect();
    let mut budget = MAX_PRIMITIVES / 2;
    let mut model = Model {
        materials,
        geometries: Vec::new(),
        meshes: Vec::new(),
        instances: Vec::new(),
        reject_degenerate,
    };
    for _ in 0..1 + b.u8() % 3 {
        let (g, mesh) = decode_geometry(b, model.materials.len() as u32, &mut budget);
        model.geometries.push(g);
        model.meshes.push(mesh);
    }
    for _ in 0..b.u8() as usize % (MAX_INSTANCES + 1) {
        let inst = decode_instance(
            b,
            model.geometries.len() as u32,
            model.materials.len() as u32,
        );
        model.instances.push(Some(inst));
    }
    let scene = model.scene(true);
    let judged = model.judge_scene();
    let built = Accel::build(&scene);
    match &built {
        Ok(_) if !judged.bad.is_empty() => {
            return violation!("Accel::build accepted a scene with {:?}", judged.bad);
        }
        Err(e) if judged.bad.is_empty() && !judged.either => {
            return violation!("Accel::build refused a valid two-level scene: {e:?}");
        }
        Err(e) if !scene_error_named(&model, e) => {
            return violation!("Accel::build gave {e:?}, which names no bad item");
        }
        _ => {}
    }
    with_backend(|backend| {
        let set = backend.set_scene(&scene).map(|_| ());
        let reference = match (built, set) {
            (Ok(accel), Ok(())) => accel,
            (Err(a), Err(e)) if same_error(&a, &e) => {
                return known_good_call(backend, "a refused two-level scene");
            }
            (built, set) => {
                return violation!(
                    "Accel::build gave {:?} but set_scene gave {set:?}",
                    built.map(|_| ())
                );
            }
        };
        let n = b.u8() as usize % (MAX_RAYS + 1);
        let rays: Vec<Ray> = (0..n).map(|_| decode_ray(b, &model)).collect();
        let first_bad = rays.iter().position(|r| !r.is_valid());
        let mut hits = vec![Hit::MISS; rays.len()];
        let mut occluded = vec![false; rays.len()];
        let results = [
            ("intersect", backend.intersect(&rays, &mut hits).map(|_| ())),
            (
                "occluded",
                backend.occluded(&rays, &mut occluded).map(|_| ()),
            ),
        ];
        for (what, r) in results {
            match (first_bad, r) {
                (None, Ok(())) => {}
                (Some(i), Err(Error::InvalidRay { index, .. })) if index == i => {}
                (bad, r) => {
                    return violation!("{what}: first bad ray {bad:?}, but the call gave {r:?}");
                }
            }
        }
        let good: Vec<Ray> = rays.into_iter().filter(Ray::is_valid).collect();
        compare_all(backend, &reference, &good)?;
        render_check(backend, &model, b)?;

        for _ in 0..b.u8() as usize % (MAX_UPDATES + 1) {
            let (ops, lists) = decode_update(b, &model);
            let mut update = SceneUpdate::new();
            for op in &ops {
                match *op {
                    Op::Move(i, t) => update.set_transform(i, t),
                    Op::Mask(i, m) => update.set_mask(i, m),
                    Op::Add(inst) => update.add_instance(inst),
                    Op::Remove(i) => update.remove_instance(i),
                    Op::Vertices(g, l) => update.set_vertices(g, &lists[l]),
                    Op::Rebuild(g) => update.rebuild(g),
                };
            }
            let (next, added, judged) = model_update(&model, &ops, &lists);
            let before = answers(backend, &good)?;
            match backend.update_scene(&update) {
                Ok(stats) => {
                    if !judged.bad.is_empty() {
                        return violation!("update_scene accepted {ops:?}, bad: {:?}", judged.bad);
                    }
                    if stats.changes.added != added {
                        return violation!(
                            "update {ops:?}: additions took {:?}, the model says {added:?}",
                            stats.changes.added
                        );
                    }
                    model = next;
                    let reference = match Accel::build(&model.scene(false)) {
                        Ok(a) => a,
                        Err(e) => {
                            return violation!(
                                "the scene after the accepted update {ops:?} does not build from scratch: {e:?}"
                            );
                        }
                    };
                    compare_all(backend, &reference, &good)
                        .map_err(|v| Violation(format!("after update {ops:?}: {v}")))?;
                }
                Err(e) => {
                    if judged.bad.is_empty() && !judged.either {
                        return violation!("update_scene refused the valid update {ops:?}: {e:?}");
                    }
                    if !update_error_named(&model, &ops, &lists, &judged, &e) {
                        return violation!(
                            "update_scene gave {e:?} for {ops:?}, which names no bad item (model: {:?})",
                            judged.bad
                        );
                    }
                    let after = answers(backend, &good)?;
                    if !same_answers(&before, &after) {
                        return violation!(
                            "the refused update {ops:?} ({e:?}) changed the scene's answers"
                        );
                    }
                }
            }
        }
        Ok(())
    })
}

/// A 3x3 render of the valid two-level scene: it must succeed and, for a
/// tame scene, hold finite non-negative radiance.
fn render_check(backend: &mut CpuBackend, model: &Model, b: &mut Bytes) -> Result<(), Violation> {
    let settings = RenderSettings {
        integrator: Integrator::ALL[usize::from(b.u8() % 3)],
        spp: 2,
        max_depth: 3,
        ao_samples: 2,
        ao_distance: 4.0,
        ..Default::default()
    };
    let camera = Camera::look_at(Vec3::new(3.0, 4.0, 20.0), Vec3::ZERO, Vec3::Y, 70.0);
    let mut image = match Image::new(3, 3, PixelFormat::LinearF32) {
        Ok(i) => i,
        Err(e) => return violation!("Image::new(3, 3) failed: {e:?}"),
    };
    if let Err(e) = backend.render(&camera, &settings, &mut image, &NoProgress) {
        return violation!("render of a valid two-level scene failed: {e:?}");
    }
    if model_is_tame(model) {
        finite_radiance(&image).map_err(|v| Violation(format!("{v} ({settings:?})")))?;
    }
    Ok(())
}
