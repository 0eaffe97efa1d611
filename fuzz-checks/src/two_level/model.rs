//! The model of the two-level scene written from the documentation
//! ([`prism_core::Scene`], [`prism_core::SceneUpdate`]): its state, its
//! verdict on each transform, the judgement of a scene and of an update
//! (applied as the documentation says), and whether an error names an item
//! it found bad. Kept apart from decoding and from the answers' checks so
//! that what the documentation promises reads in one place.

use super::ACCEPTED_CONDITION;
use super::decode::Op;
use crate::scenes::error_names_bad_item;
use glam::{Affine3A, DMat3, Vec3};
use prism_core::scene::PrimRef;
use prism_core::{Error, Geometry, Instance, Material, Scene};

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

/// The mesh a geometry was made of, to give it new vertices.
#[derive(Clone, Debug)]
pub(super) struct MeshSource {
    pub(super) positions: Vec<Vec3>,
    pub(super) triangles: Vec<[u32; 3]>,
    pub(super) material: u32,
}

/// The scene as the model holds it: geometries (and the meshes they were
/// made of), instances by index (`None`: removed), materials.
#[derive(Clone, Debug)]
pub(super) struct Model {
    pub(super) materials: Vec<Material>,
    pub(super) geometries: Vec<Geometry>,
    pub(super) meshes: Vec<Option<MeshSource>>,
    pub(super) instances: Vec<Option<Instance>>,
    pub(super) reject_degenerate: bool,
}

/// What the model finds wrong with a scene or an update.
#[derive(Clone, Debug, Default)]
pub(super) struct Judgement {
    /// Definitely refused items, as predicates on the error.
    pub(super) bad: Vec<String>,
    /// Whether some transform lies in the band where either answer is right.
    pub(super) either: bool,
}

impl Model {
    /// The scene of the model's state: removed instances stand in as
    /// instances seen by no ray (mask 0) of geometry 0, so that every index
    /// keeps its place. Degenerate triangles are kept (never hit either way),
    /// as new vertices may make some.
    pub(super) fn scene(&self, keep_rejection: bool) -> Scene {
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
    pub(super) fn judge_scene(&self) -> Judgement {
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
            Some(PrimRef::Heightfield(h)) => {
                if let Some(f) = geometry.heightfields().get(h as usize) {
                    s.add_heightfield(f.clone(), m);
                }
            }
            None => {}
        }
    }
    s
}

/// Whether a scene error names an item the model finds bad (or, for a
/// transform, one it lets go either way).
pub(super) fn scene_error_named(model: &Model, e: &Error) -> bool {
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
pub(super) fn model_is_tame(model: &Model) -> bool {
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

/// Apply `ops` to `model` as the documentation says an update applies
/// (removals, then additions into the lowest free indices, then transforms
/// and masks, then vertices and rebuilds), judging each; returns the model
/// after it, the indices additions take, and the judgement.
pub(super) fn model_update(
    model: &Model,
    ops: &[Op],
    lists: &[Vec<Vec3>],
) -> (Model, Vec<u32>, Judgement) {
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
pub(super) fn update_error_named(
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
