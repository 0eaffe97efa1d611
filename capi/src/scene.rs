//! Describing a scene: materials, spheres and meshes of its own (a flat
//! scene), or geometries placed by instances (a two-level scene), the sky and
//! the key light.

use crate::{Failure, PrismStatus, guard, reference_mut, slice, write};
use prism::glam::{Vec3, Vec4};
use prism::{Geometry, Heightfield, Instance, Material, PointLight, Scene, Sky, Sun};

/// A scene being described (nothing is checked until a backend is given it,
/// except what each call says).
pub struct PrismScene {
    pub(crate) scene: Scene,
}

/// [`PrismMaterial::kind`]: diffuse, of colour `color`.
pub const PRISM_MATERIAL_LAMBERTIAN: u32 = 0;
/// [`PrismMaterial::kind`]: a mirror of colour `color` blurred by `fuzz` (0 to 1).
pub const PRISM_MATERIAL_METAL: u32 = 1;
/// [`PrismMaterial::kind`]: glass of index of refraction `ior`.
pub const PRISM_MATERIAL_DIELECTRIC: u32 = 2;
/// [`PrismMaterial::kind`]: a light of radiance `color`.
pub const PRISM_MATERIAL_EMISSIVE: u32 = 3;

/// A material: `kind` (one of the `PRISM_MATERIAL_*` values) chooses the
/// fields that matter.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrismMaterial {
    /// `PRISM_MATERIAL_LAMBERTIAN`, `_METAL`, `_DIELECTRIC` or `_EMISSIVE`
    /// (a plain integer, so that any value a C program passes is checked,
    /// not undefined).
    pub kind: u32,
    /// Linear RGB albedo (Lambertian, metal) or radiance (emissive).
    pub color: [f32; 3],
    /// Metal: roughness in `[0, 1]`.
    pub fuzz: f32,
    /// Dielectric: index of refraction.
    pub ior: f32,
}

/// A point, direction or colour.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PrismVec3 {
    /// x (red).
    pub x: f32,
    /// y (green).
    pub y: f32,
    /// z (blue).
    pub z: f32,
}

impl From<PrismVec3> for Vec3 {
    fn from(v: PrismVec3) -> Vec3 {
        Vec3::new(v.x, v.y, v.z)
    }
}

fn vec3(v: [f32; 3]) -> Vec3 {
    Vec3::from_array(v)
}

/// `count` points at `xyz` (3 floats each).
///
/// # Safety
/// `xyz` must point to `3 * count` floats.
unsafe fn points(xyz: *const f32, count: usize, what: &str) -> Result<Vec<Vec3>, Failure> {
    let len = count
        .checked_mul(3)
        .ok_or_else(|| Failure::argument(format!("{what}: count is too large")))?;
    // SAFETY: as the caller promises.
    let flat = unsafe { slice(xyz, len, what) }?;
    Ok(flat
        .chunks_exact(3)
        .map(|c| Vec3::new(c[0], c[1], c[2]))
        .collect())
}

/// `count` triangles at `indices` (3 vertex indices each).
///
/// # Safety
/// `indices` must point to `3 * count` `uint32_t`s.
unsafe fn triangles(indices: *const u32, count: usize) -> Result<Vec<[u32; 3]>, Failure> {
    let len = count
        .checked_mul(3)
        .ok_or_else(|| Failure::argument("triangle_count is too large"))?;
    // SAFETY: as the caller promises.
    let flat = unsafe { slice(indices, len, "indices") }?;
    Ok(flat.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
}

/// A new, empty scene: the RTIOW sky, a white key light at (1, 1, 1).
///
/// # Safety
/// `out` must be writable (null: an error).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_scene_new(out: *mut *mut PrismScene) -> PrismStatus {
    guard(|| {
        if out.is_null() {
            return Err(Failure::argument("out is null"));
        }
        let handle = Box::new(PrismScene {
            scene: Scene::new(),
        });
        // SAFETY: checked for null; writable as the caller promises.
        unsafe { write(out, Box::into_raw(handle), "out") }
    })
}

/// Release a scene (null: nothing).
///
/// # Safety
/// `scene` must come from [`prism_scene_new`] and not be used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_scene_free(scene: *mut PrismScene) {
    if !scene.is_null() {
        // SAFETY: made by Box::into_raw in prism_scene_new, freed once.
        drop(unsafe { Box::from_raw(scene) });
    }
}

/// Add a material; its id goes to `out_id`.
///
/// # Safety
/// Live handle, readable `material`, writable `out_id`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_scene_add_material(
    scene: *mut PrismScene,
    material: *const PrismMaterial,
    out_id: *mut u32,
) -> PrismStatus {
    guard(|| {
        // SAFETY: as the caller promises.
        let s = unsafe { reference_mut(scene, "scene") }?;
        let m = unsafe { crate::reference(material, "material") }?;
        if out_id.is_null() {
            return Err(Failure::argument("out_id is null"));
        }
        let material = match m.kind {
            PRISM_MATERIAL_LAMBERTIAN => Material::lambertian(vec3(m.color)),
            PRISM_MATERIAL_METAL => Material::metal(vec3(m.color), m.fuzz),
            PRISM_MATERIAL_DIELECTRIC => Material::dielectric(m.ior),
            PRISM_MATERIAL_EMISSIVE => Material::emissive(vec3(m.color)),
            k => {
                return Err(Failure::argument(format!(
                    "material kind {k} is not one of 0..=3"
                )));
            }
        };
        material.validate(s.scene.materials().len())?;
        let id = s.scene.add_material(material);
        // SAFETY: checked for null above.
        unsafe { write(out_id, id, "out_id") }
    })
}

/// Set the sky (a vertical gradient: `horizon` straight down, `zenith`
/// straight up; equal for a constant sky) and the key light (Whitted and AO
/// shadows).
///
/// # Safety
/// A live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_scene_set_lights(
    scene: *mut PrismScene,
    sky_horizon: PrismVec3,
    sky_zenith: PrismVec3,
    light_position: PrismVec3,
    light_color: PrismVec3,
) -> PrismStatus {
    guard(|| {
        // SAFETY: as the caller promises.
        let s = unsafe { reference_mut(scene, "scene") }?;
        s.scene.sky = Sky {
            horizon: sky_horizon.into(),
            zenith: sky_zenith.into(),
        };
        s.scene.light = PointLight {
            position: light_position.into(),
            color: light_color.into(),
        };
        Ok(())
    })
}

/// Give the scene a sun: a sphere of `radius` around `center` shining
/// `color * intensity`, which the path integrator samples directly (next
/// event estimation, [`crate::PrismRenderSettings::sun_nee`]). Refused,
/// leaving the scene as it was, when a value is not finite or the radius or
/// intensity is not above 0.
///
/// # Safety
/// A live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_scene_set_sun(
    scene: *mut PrismScene,
    center: PrismVec3,
    radius: f32,
    color: PrismVec3,
    intensity: f32,
) -> PrismStatus {
    guard(|| {
        // SAFETY: as the caller promises.
        let s = unsafe { reference_mut(scene, "scene") }?;
        let sun = Sun::new(center.into(), radius, color.into(), intensity);
        sun.validate()?;
        s.scene.sun = Some(sun);
        Ok(())
    })
}

/// Add a heightfield of the scene's own: `width x depth` columns of
/// `cell_size` square standing on `y = 0`, column `(x, z)` of height
/// `heights[z * width + x]` (`count` must be `width * depth`); its primitive
/// id goes to `out_prim` (null: not wanted). Hits on it name the cell and the
/// face ([`crate::PrismHit::cell`], [`crate::PrismHit::face`]). Refused,
/// adding nothing, when a height is negative or not finite or the sizes do
/// not match.
///
/// # Safety
/// A live handle, `count` readable floats, `out_prim` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_scene_add_heightfield(
    scene: *mut PrismScene,
    width: u32,
    depth: u32,
    cell_size: f32,
    heights: *const f32,
    count: usize,
    material: u32,
    out_prim: *mut u32,
) -> PrismStatus {
    guard(|| {
        // SAFETY: as the caller promises.
        let s = unsafe { reference_mut(scene, "scene") }?;
        // SAFETY: `count` readable floats, as the caller promises.
        let h = unsafe { slice(heights, count, "heights") }?;
        let hf = Heightfield::new(width, depth, cell_size, h)?;
        let id = s.scene.add_heightfield(hf, material);
        if !out_prim.is_null() {
            // SAFETY: non-null and writable as the caller promises.
            unsafe { write(out_prim, id, "out_prim") }?;
        }
        Ok(())
    })
}

/// Add a sphere of the scene's own; its primitive id goes to `out_prim`
/// (null: not wanted).
///
/// # Safety
/// A live handle; `out_prim` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_scene_add_sphere(
    scene: *mut PrismScene,
    center: PrismVec3,
    radius: f32,
    material: u32,
    out_prim: *mut u32,
) -> PrismStatus {
    guard(|| {
        // SAFETY: as the caller promises.
        let s = unsafe { reference_mut(scene, "scene") }?;
        let id = s.scene.add_sphere(center.into(), radius, material);
        if !out_prim.is_null() {
            // SAFETY: non-null and writable as the caller promises.
            unsafe { write(out_prim, id, "out_prim") }?;
        }
        Ok(())
    })
}

/// Add an indexed triangle mesh of the scene's own (`positions`: `3 *
/// vertex_count` floats; `indices`: `3 * triangle_count` vertex indices); the
/// primitive id of its first triangle goes to `out_first` (null: not wanted),
/// the others follow in order. Refused, adding nothing, when an index is out
/// of range or a used vertex is not finite.
///
/// # Safety
/// A live handle and arrays of the lengths given.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_scene_add_mesh(
    scene: *mut PrismScene,
    positions: *const f32,
    vertex_count: usize,
    indices: *const u32,
    triangle_count: usize,
    material: u32,
    out_first: *mut u32,
) -> PrismStatus {
    guard(|| {
        // SAFETY: as the caller promises.
        let s = unsafe { reference_mut(scene, "scene") }?;
        let p = unsafe { points(positions, vertex_count, "positions") }?;
        let t = unsafe { triangles(indices, triangle_count) }?;
        let first = s.scene.add_mesh(&p, &t, material)?;
        if !out_first.is_null() {
            // SAFETY: non-null and writable as the caller promises.
            unsafe { write(out_first, first, "out_first") }?;
        }
        Ok(())
    })
}

/// Add a reusable geometry made of one indexed mesh (arrays as for
/// [`prism_scene_add_mesh`]); its geometry id goes to `out_geometry`. Its
/// vertices can later be moved ([`crate::prism_backend_set_vertices`]).
///
/// # Safety
/// A live handle, arrays of the lengths given, a writable `out_geometry`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_scene_add_mesh_geometry(
    scene: *mut PrismScene,
    positions: *const f32,
    vertex_count: usize,
    indices: *const u32,
    triangle_count: usize,
    material: u32,
    out_geometry: *mut u32,
) -> PrismStatus {
    guard(|| {
        // SAFETY: as the caller promises.
        let s = unsafe { reference_mut(scene, "scene") }?;
        if out_geometry.is_null() {
            return Err(Failure::argument("out_geometry is null"));
        }
        let p = unsafe { points(positions, vertex_count, "positions") }?;
        let t = unsafe { triangles(indices, triangle_count) }?;
        let g = s.scene.add_geometry(Geometry::mesh(&p, &t, material)?);
        // SAFETY: checked for null above.
        unsafe { write(out_geometry, g, "out_geometry") }
    })
}

/// Add a reusable geometry of `count` spheres (`center_radius`: 4 floats
/// each, centre then radius), all of material `material`; its geometry id
/// goes to `out_geometry`.
///
/// # Safety
/// A live handle, `4 * count` floats, a writable `out_geometry`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_scene_add_sphere_geometry(
    scene: *mut PrismScene,
    center_radius: *const f32,
    count: usize,
    material: u32,
    out_geometry: *mut u32,
) -> PrismStatus {
    guard(|| {
        // SAFETY: as the caller promises.
        let s = unsafe { reference_mut(scene, "scene") }?;
        if out_geometry.is_null() {
            return Err(Failure::argument("out_geometry is null"));
        }
        let len = count
            .checked_mul(4)
            .ok_or_else(|| Failure::argument("count is too large"))?;
        let flat = unsafe { slice(center_radius, len, "center_radius") }?;
        let mut g = Geometry::new();
        for c in flat.chunks_exact(4) {
            let v = Vec4::new(c[0], c[1], c[2], c[3]);
            g.add_sphere(v.truncate(), v.w, material);
        }
        let id = s.scene.add_geometry(g);
        // SAFETY: checked for null above.
        unsafe { write(out_geometry, id, "out_geometry") }
    })
}

/// Place geometry `geometry` by `transform` (a row-major 3x4 object-to-world
/// matrix, 12 floats), seen by rays whose mask shares a bit with `mask`, with
/// the caller's `user_id`, and material `material` for all of it (or
/// `UINT32_MAX` for the geometry's own); the instance index (what hits
/// report) goes to `out_instance` (null: not wanted). The instance is checked
/// when a backend is given the scene.
///
/// # Safety
/// A live handle, 12 readable floats, `out_instance` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_scene_add_instance(
    scene: *mut PrismScene,
    geometry: u32,
    transform: *const f32,
    mask: u8,
    user_id: u32,
    material: u32,
    out_instance: *mut u32,
) -> PrismStatus {
    guard(|| {
        // SAFETY: as the caller promises.
        let s = unsafe { reference_mut(scene, "scene") }?;
        let m = unsafe { slice(transform, 12, "transform") }?;
        let r = |k: usize| [m[4 * k], m[4 * k + 1], m[4 * k + 2], m[4 * k + 3]];
        let mut inst = Instance::new(geometry, prism::instance::from_rows([r(0), r(1), r(2)]))
            .with_mask(mask)
            .with_user_id(user_id);
        if material != u32::MAX {
            inst = inst.with_material(material);
        }
        let index = s.scene.add_instance(inst);
        if !out_instance.is_null() {
            // SAFETY: non-null and writable as the caller promises.
            unsafe { write(out_instance, index, "out_instance") }?;
        }
        Ok(())
    })
}
