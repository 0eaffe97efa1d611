//! The one single-threaded CPU backend every check traces on, and the valid
//! call that must succeed after any failed one.

use crate::Violation;
use glam::Vec3;
use prism_core::{Backend, Error, Hit, Material, Ray, Scene};
use prism_cpu::CpuBackend;
use std::sync::{Mutex, OnceLock};

/// One single-threaded CPU backend for every check: fuzzing runs one input at a
/// time, and reusing the backend across inputs also checks that whatever an
/// input left behind (a failed call, an old scene) does not break the next.
pub(crate) fn with_backend<R>(
    f: impl FnOnce(&mut CpuBackend) -> Result<R, Violation>,
) -> Result<R, Violation> {
    static BACKEND: OnceLock<Result<Mutex<CpuBackend>, Error>> = OnceLock::new();
    let backend = BACKEND.get_or_init(|| CpuBackend::with_threads(1).map(Mutex::new));
    let backend = match backend {
        Ok(b) => b,
        Err(e) => return violation!("the CPU backend did not open: {e}"),
    };
    // A check that panicked poisons the lock; the backend itself is still whole.
    let mut guard = backend
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    f(&mut guard)
}

/// A one-sphere scene and a ray that hits it, for "the next valid call succeeds".
pub(crate) fn known_good_call(backend: &mut CpuBackend, after: &str) -> Result<(), Violation> {
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
    scene.add_sphere(Vec3::ZERO, 1.0, m);
    if let Err(e) = backend.set_scene(&scene) {
        return violation!("after {after}: set_scene of a valid scene failed: {e}");
    }
    let mut hits = [Hit::MISS];
    if let Err(e) = backend.intersect(
        &[Ray::new(Vec3::new(0.0, 0.0, 5.0), Vec3::NEG_Z)],
        &mut hits,
    ) {
        return violation!("after {after}: intersect of a valid ray failed: {e}");
    }
    if !(hits[0].prim == 0 && (hits[0].t - 4.0).abs() < 1e-5) {
        return violation!("after {after}: the known-good ray got {:?}", hits[0]);
    }
    Ok(())
}
