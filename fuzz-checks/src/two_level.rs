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
//!
//! The check is cut by concern: `decode` turns the fuzz input into a scene,
//! rays and updates; `model` judges them as the documentation says;
//! `answers` checks the backend's answers against brute force; this module
//! drives them in order and renders the scene once.

mod answers;
mod decode;
mod model;

use crate::backend::{known_good_call, with_backend};
use crate::bytes::Bytes;
use crate::scenes::{decode_material, same_error};
use crate::settings::finite_radiance;
use crate::{MAX_PRIMITIVES, MAX_RAYS, Violation};
use answers::{answers, compare_all, same_answers};
use decode::{Op, decode_geometry, decode_instance, decode_ray, decode_update};
use glam::Vec3;
use model::{Model, model_is_tame, model_update, scene_error_named, update_error_named};
use prism_core::{
    Accel, Backend, Camera, Error, Hit, Image, Integrator, Material, NoProgress, PixelFormat, Ray,
    RenderSettings, SceneUpdate,
};
use prism_cpu::CpuBackend;

pub use answers::instance_brute_force;

/// Most instances a decoded scene starts with.
pub const MAX_INSTANCES: usize = 16;
/// Most updates applied to a decoded scene.
pub const MAX_UPDATES: usize = 4;
/// Below this condition number a transform must be accepted (core refuses
/// above `1e6`).
pub const ACCEPTED_CONDITION: f64 = 0.99e6;

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
