//! Opening a backend, giving it a scene, and moving that scene's instances.

use crate::scene::PrismScene;
use crate::{Failure, PrismStatus, guard, reference, reference_mut, slice, write};
use prism::{Backend, BackendChoice, SceneUpdate};
use std::ffi::{CStr, c_char};

/// An opened backend (CPU, CUDA or wgpu) and the scene it was last given.
pub struct PrismBackend {
    pub(crate) backend: Box<dyn Backend + Send>,
    /// Its name, NUL-terminated.
    name: Vec<u8>,
}

/// Open a backend by name: `"auto"` (CUDA, then a GPU through wgpu, then the
/// CPU), `"cpu"`, `"cuda"` or `"wgpu"` (ASCII case ignored). `PRISM_BACKEND`
/// in the environment overrides the name, as for the `prism` program.
///
/// # Safety
/// `name` must be a NUL-terminated string (or null: an error), and `out` a
/// writable pointer (or null: an error).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_backend_open(
    name: *const c_char,
    out: *mut *mut PrismBackend,
) -> PrismStatus {
    guard(|| {
        if name.is_null() {
            return Err(Failure::argument("name is null"));
        }
        // SAFETY: non-null, and the caller promises a NUL-terminated string.
        let name = unsafe { CStr::from_ptr(name) }
            .to_str()
            .map_err(|_| Failure::argument("name is not UTF-8"))?;
        if out.is_null() {
            return Err(Failure::argument("out is null"));
        }
        let choice = BackendChoice::from_name(name)?;
        let opened = prism::open(choice)?;
        let mut label = opened.backend.info().name.as_bytes().to_vec();
        label.push(0);
        let handle = Box::new(PrismBackend {
            backend: opened.backend,
            name: label,
        });
        // SAFETY: `out` was checked for null; the caller promises it is writable.
        unsafe { write(out, Box::into_raw(handle), "out") }
    })
}

/// Release a backend and everything it holds on its device (null: nothing).
///
/// # Safety
/// `backend` must come from [`prism_backend_open`] and not be used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_backend_free(backend: *mut PrismBackend) {
    if !backend.is_null() {
        // SAFETY: made by Box::into_raw in prism_backend_open, freed once.
        drop(unsafe { Box::from_raw(backend) });
    }
}

/// The backend's name (`"cpu"`, `"cuda"`, `"wgpu"`), NUL-terminated, valid
/// while the backend lives; null for a null backend.
///
/// # Safety
/// `backend` must be null or come from [`prism_backend_open`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_backend_name(backend: *const PrismBackend) -> *const c_char {
    // SAFETY: null or a live handle, as the caller promises.
    match unsafe { backend.as_ref() } {
        Some(b) => b.name.as_ptr().cast(),
        None => std::ptr::null(),
    }
}

/// Give the backend a scene: checked, its trees built and uploaded. The scene
/// handle may be freed or changed afterwards; the backend keeps what it needs.
///
/// # Safety
/// `backend` and `scene` must be live handles (or null: an error).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_backend_set_scene(
    backend: *mut PrismBackend,
    scene: *const PrismScene,
) -> PrismStatus {
    guard(|| {
        // SAFETY: live handles or null, as the caller promises.
        let b = unsafe { reference_mut(backend, "backend") }?;
        let s = unsafe { reference(scene, "scene") }?;
        b.backend.set_scene(&s.scene)?;
        Ok(())
    })
}

/// Move instances of the backend's (two-level) scene: instance `instances[k]`
/// to the row-major 3x4 object-to-world matrix at `transforms + 12 k`; the
/// tree over the instances is rebuilt once. Nothing moves if any instance or
/// transform is refused (the message names it).
///
/// # Safety
/// `instances` must point to `count` `uint32_t`s and `transforms` to
/// `12 * count` floats (either may be null when `count` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_backend_move_instances(
    backend: *mut PrismBackend,
    instances: *const u32,
    transforms: *const f32,
    count: usize,
) -> PrismStatus {
    guard(|| {
        // SAFETY: as the caller promises (see the function's docs).
        let b = unsafe { reference_mut(backend, "backend") }?;
        let ids = unsafe { slice(instances, count, "instances") }?;
        let rows_len = count
            .checked_mul(12)
            .ok_or_else(|| Failure::argument("count is too large"))?;
        let rows = unsafe { slice(transforms, rows_len, "transforms") }?;
        let mut update = SceneUpdate::new();
        for (id, m) in ids.iter().zip(rows.chunks_exact(12)) {
            let r = |k: usize| [m[4 * k], m[4 * k + 1], m[4 * k + 2], m[4 * k + 3]];
            update.set_transform(*id, prism::instance::from_rows([r(0), r(1), r(2)]));
        }
        b.backend.update_scene(&update)?;
        Ok(())
    })
}

/// Give the mesh of geometry `geometry` of the backend's (two-level) scene new
/// vertex positions (`3 * vertex_count` floats, as many vertices as the mesh
/// has); its tree is refit.
///
/// # Safety
/// `positions` must point to `3 * vertex_count` floats.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_backend_set_vertices(
    backend: *mut PrismBackend,
    geometry: u32,
    positions: *const f32,
    vertex_count: usize,
) -> PrismStatus {
    guard(|| {
        // SAFETY: as the caller promises.
        let b = unsafe { reference_mut(backend, "backend") }?;
        let len = vertex_count
            .checked_mul(3)
            .ok_or_else(|| Failure::argument("vertex_count is too large"))?;
        let p = unsafe { slice(positions, len, "positions") }?;
        let points: Vec<prism::glam::Vec3> = p
            .chunks_exact(3)
            .map(|c| prism::glam::Vec3::new(c[0], c[1], c[2]))
            .collect();
        let mut update = SceneUpdate::new();
        update.set_vertices(geometry, &points);
        b.backend.update_scene(&update)?;
        Ok(())
    })
}
