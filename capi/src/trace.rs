//! Tracing: ray batches (closest hit, any hit) and whole frames.

use crate::backend::PrismBackend;
use crate::scene::PrismVec3;
use crate::{Failure, PrismStatus, guard, reference, reference_mut, slice, slice_mut};
use prism::{Camera, Hit, Image, Integrator, NoProgress, PixelFormat, Ray, RenderSettings};

/// A ray `origin + t * dir`, `t` in `(tmin, tmax)`, seen by the instances
/// whose mask shares a bit with `mask` (`UINT32_MAX`: every instance; a flat
/// scene is one instance of mask `0xFF`). The layout of the library's own
/// rays: three 16-byte rows.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PrismRay {
    /// Start point.
    pub origin: [f32; 3],
    /// Smallest accepted distance (exclusive); finite.
    pub tmin: f32,
    /// Direction (any non-zero length; `t` is in its units).
    pub dir: [f32; 3],
    /// Largest accepted distance (exclusive); may be infinite.
    pub tmax: f32,
    /// Visibility mask.
    pub mask: u32,
    /// Set to 0.
    pub reserved: [u32; 3],
}

/// A closest hit: distance, barycentrics (triangles: the hit point is
/// `(1-u-v) v0 + u v1 + v v2`), primitive id within its geometry, instance
/// index (0 in a flat scene). A miss: `prim == instance == UINT32_MAX`, `t`
/// infinite. The library's own layout (two 16-byte rows).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PrismHit {
    /// Distance along the ray.
    pub t: f32,
    /// Barycentric weight of the second vertex.
    pub u: f32,
    /// Barycentric weight of the third vertex.
    pub v: f32,
    /// Primitive id, or `UINT32_MAX`.
    pub prim: u32,
    /// Instance index, or `UINT32_MAX`.
    pub instance: u32,
    /// Heightfield: the cell hit, `z * width + x`; 0 for other primitives
    /// and a miss.
    pub cell: u32,
    /// Heightfield: the face of the cell's column hit (0 top (+y), 1 bottom,
    /// 2 -x, 3 +x, 4 -z, 5 +z); 0 for other primitives and a miss.
    pub face: u32,
    /// Zero.
    pub reserved: u32,
}

// The C records are the library's own, byte for byte.
const _: () = {
    assert!(size_of::<PrismRay>() == size_of::<Ray>());
    assert!(align_of::<PrismRay>() == align_of::<Ray>());
    assert!(size_of::<PrismHit>() == size_of::<Hit>());
    assert!(align_of::<PrismHit>() == align_of::<Hit>());
};

impl From<&PrismRay> for Ray {
    fn from(r: &PrismRay) -> Ray {
        Ray::segment(r.origin.into(), r.dir.into(), r.tmin, r.tmax).with_mask(r.mask)
    }
}

impl From<&Hit> for PrismHit {
    fn from(h: &Hit) -> PrismHit {
        PrismHit {
            t: h.t,
            u: h.u,
            v: h.v,
            prim: h.prim,
            instance: h.instance,
            cell: h.cell,
            face: h.face,
            reserved: 0,
        }
    }
}

/// The rays of a C batch as the library's rays.
fn rays_of(batch: &[PrismRay]) -> Vec<Ray> {
    batch.iter().map(Ray::from).collect()
}

/// Closest hit of each of `count` rays: `hits[i]` answers `rays[i]`. A ray
/// that is not valid (non-finite, zero direction, `tmin > tmax`) fails the
/// whole batch, naming its index.
///
/// # Safety
/// A live backend; `rays` readable and `hits` writable for `count` records,
/// each 16-byte aligned (as the types are).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_intersect(
    backend: *mut PrismBackend,
    rays: *const PrismRay,
    hits: *mut PrismHit,
    count: usize,
) -> PrismStatus {
    guard(|| {
        // SAFETY: as the caller promises.
        let b = unsafe { reference_mut(backend, "backend") }?;
        let rays = unsafe { slice(rays, count, "rays") }?;
        let out = unsafe { slice_mut(hits, count, "hits") }?;
        let mut found = vec![Hit::MISS; count];
        b.backend.intersect(&rays_of(rays), &mut found)?;
        for (o, h) in out.iter_mut().zip(&found) {
            *o = PrismHit::from(h);
        }
        Ok(())
    })
}

/// Whether anything lies on each of `count` rays: `occluded[i]` is 1 or 0.
///
/// # Safety
/// A live backend; `rays` readable for `count` records (16-byte aligned),
/// `occluded` writable for `count` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_occluded(
    backend: *mut PrismBackend,
    rays: *const PrismRay,
    occluded: *mut u8,
    count: usize,
) -> PrismStatus {
    guard(|| {
        // SAFETY: as the caller promises.
        let b = unsafe { reference_mut(backend, "backend") }?;
        let rays = unsafe { slice(rays, count, "rays") }?;
        let out = unsafe { slice_mut(occluded, count, "occluded") }?;
        let mut answers = vec![false; count];
        b.backend.occluded(&rays_of(rays), &mut answers)?;
        for (o, a) in out.iter_mut().zip(&answers) {
            *o = *a as u8;
        }
        Ok(())
    })
}

/// A thin-lens camera (a pinhole when `aperture` is 0).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrismCamera {
    /// Eye position.
    pub look_from: PrismVec3,
    /// Point looked at.
    pub look_at: PrismVec3,
    /// Up direction.
    pub up: PrismVec3,
    /// Vertical field of view in degrees, in (0, 180).
    pub vfov_degrees: f32,
    /// Lens diameter (0: pinhole).
    pub aperture: f32,
    /// Distance to the plane in focus (> 0).
    pub focus_distance: f32,
}

/// [`PrismRenderSettings::integrator`]: path tracing with sky and emissive lights.
pub const PRISM_INTEGRATOR_PATH: u32 = 0;
/// [`PrismRenderSettings::integrator`]: Whitted (key light, hard shadows, mirror bounces).
pub const PRISM_INTEGRATOR_WHITTED: u32 = 1;
/// [`PrismRenderSettings::integrator`]: ambient occlusion (and an optional shadow ray).
pub const PRISM_INTEGRATOR_AO: u32 = 2;

/// How to render a frame.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrismRenderSettings {
    /// `PRISM_INTEGRATOR_PATH`, `_WHITTED` or `_AO` (a plain integer, so that
    /// any value a C program passes is checked, not undefined).
    pub integrator: u32,
    /// Samples per pixel, 1 to 65,536.
    pub spp: u32,
    /// Path length (path), mirror bounces (Whitted), 1 to 1,024.
    pub max_depth: u32,
    /// Frame seed.
    pub seed: u32,
    /// AO rays per sample, 1 to 1,024.
    pub ao_samples: u32,
    /// Share of the image, in [0, 1), whose pixels trace one AO ray more
    /// (a fractional AO count: `ao_samples + ao_extra` rays on average).
    pub ao_extra: f32,
    /// Length of an AO ray, finite and > 0.
    pub ao_distance: f32,
    /// Non-zero: AO also traces a shadow ray to the key light.
    pub ao_shadows: u32,
    /// Non-zero: the path integrator samples the scene's sun directly at
    /// every surface (next event estimation; no effect without a sun).
    pub sun_nee: u32,
}

/// The default settings (path, 16 spp, depth 8, 8 AO rays of length 1).
#[unsafe(no_mangle)]
pub extern "C" fn prism_render_settings_default() -> PrismRenderSettings {
    let d = RenderSettings::default();
    PrismRenderSettings {
        integrator: PRISM_INTEGRATOR_PATH,
        spp: d.spp,
        max_depth: d.max_depth,
        seed: d.seed,
        ao_samples: d.ao_samples,
        ao_extra: d.ao_extra,
        ao_distance: d.ao_distance,
        ao_shadows: d.ao_shadows as u32,
        sun_nee: d.sun_nee as u32,
    }
}

/// Render a `width x height` frame of the backend's scene into `rgba` (8-bit
/// sRGB, 4 bytes a pixel, rows from the top; `rgba_len` must be at least `4 *
/// width * height`). Bad settings or a bad camera are refused, naming the field.
///
/// # Safety
/// A live backend, readable `camera` and `settings`, `rgba` writable for
/// `rgba_len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prism_render_rgba8(
    backend: *mut PrismBackend,
    camera: *const PrismCamera,
    settings: *const PrismRenderSettings,
    width: u32,
    height: u32,
    rgba: *mut u8,
    rgba_len: usize,
) -> PrismStatus {
    guard(|| {
        // SAFETY: as the caller promises.
        let b = unsafe { reference_mut(backend, "backend") }?;
        let c = unsafe { reference(camera, "camera") }?;
        let s = unsafe { reference(settings, "settings") }?;
        let needed = (width as usize)
            .checked_mul(height as usize)
            .and_then(|p| p.checked_mul(4))
            .ok_or_else(|| Failure::argument("width * height is too large"))?;
        if rgba_len < needed {
            return Err(Failure::argument(format!(
                "rgba holds {rgba_len} bytes; a {width}x{height} frame needs {needed}"
            )));
        }
        let out = unsafe { slice_mut(rgba, needed, "rgba") }?;
        let camera = Camera {
            look_from: c.look_from.into(),
            look_at: c.look_at.into(),
            up: c.up.into(),
            vfov_degrees: c.vfov_degrees,
            aperture: c.aperture,
            focus_distance: c.focus_distance,
        };
        let settings = RenderSettings {
            integrator: match s.integrator {
                PRISM_INTEGRATOR_PATH => Integrator::Path,
                PRISM_INTEGRATOR_WHITTED => Integrator::Whitted,
                PRISM_INTEGRATOR_AO => Integrator::Ao,
                k => {
                    return Err(Failure::argument(format!(
                        "integrator {k} is not one of 0..=2"
                    )));
                }
            },
            spp: s.spp,
            max_depth: s.max_depth,
            seed: s.seed,
            ao_samples: s.ao_samples,
            ao_extra: s.ao_extra,
            ao_distance: s.ao_distance,
            ao_shadows: s.ao_shadows != 0,
            sun_nee: s.sun_nee != 0,
            ..RenderSettings::default()
        };
        let mut image = Image::new(width, height, PixelFormat::Srgba8)?;
        b.backend
            .render(&camera, &settings, &mut image, &NoProgress)?;
        out.copy_from_slice(bytemuck_bytes(image.rgba8()));
        Ok(())
    })
}

fn bytemuck_bytes(pixels: &[[u8; 4]]) -> &[u8] {
    bytemuck::cast_slice(pixels)
}
