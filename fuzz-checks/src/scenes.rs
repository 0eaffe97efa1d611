//! The `scene_trace` check: arbitrary scenes through validation, the BVH
//! build and `set_scene`, then arbitrary ray batches through `intersect` and
//! `occluded` against brute force, and a small render of each valid scene.

use crate::backend::{known_good_call, with_backend};
use crate::bytes::Bytes;
use crate::gpu_structures::{cell_grid_agrees, light_grid_agrees, sphere_early_miss_agrees};
use crate::reference::compare_with_brute_force;
use crate::settings::finite_radiance;
use crate::{MAX_PRIMITIVES, MAX_RAYS, Violation};
use glam::Vec3;
use prism_core::scene::PrimRef;
use prism_core::{
    Accel, Backend, BuildQuality, Camera, Error, Hit, Image, Integrator, Material, NoProgress,
    PixelFormat, Ray, RenderSettings, Scene,
};
use prism_cpu::CpuBackend;

/// The first byte from which a `scene_trace` input is a two-level scene.
pub const TWO_LEVEL: u8 = 0xD0;

/// Whether `scene` breaks a rule of [`Scene::validate`]: the spec, written
/// independently of the implementation.
pub(crate) fn scene_is_valid(scene: &Scene) -> bool {
    let materials = scene.materials();
    scene.primitive_count() > 0
        && materials
            .iter()
            .enumerate()
            .all(|(i, m)| m.validate(i).is_ok())
        && scene
            .primitive_materials()
            .iter()
            .all(|&m| (m as usize) < materials.len())
        && scene
            .spheres()
            .iter()
            .all(|cr| cr.truncate().is_finite() && cr.w > 0.0 && cr.w.is_finite())
        && (0..scene.triangle_count() as u32).all(|i| {
            scene.triangle(i).is_some_and(|[a, b, c]| {
                a.is_finite()
                    && b.is_finite()
                    && c.is_finite()
                    && !(scene.reject_degenerate && (b - a).cross(c - a) == Vec3::ZERO)
            })
        })
}

/// Whether the item a scene error names really is bad.
pub(crate) fn error_names_bad_item(scene: &Scene, e: &Error) -> bool {
    let sphere = |prim: usize| match scene.primitive(prim as u32) {
        Some(PrimRef::Sphere(s)) => scene.spheres().get(s as usize).copied(),
        _ => None,
    };
    let triangle = |prim: usize| match scene.primitive(prim as u32) {
        Some(PrimRef::Triangle(t)) => scene.triangle(t),
        _ => None,
    };
    match *e {
        Error::EmptyScene => scene.primitive_count() == 0,
        Error::MaterialInvalid { index, .. } => scene
            .materials()
            .get(index)
            .is_some_and(|m| m.validate(index).is_err()),
        Error::MaterialOutOfRange {
            primitive,
            material,
            count,
        } => {
            count == scene.materials().len()
                && material as usize >= count
                && scene.primitive_materials().get(primitive) == Some(&material)
        }
        Error::SphereCenterNotFinite { prim, center } => sphere(prim).is_some_and(|cr| {
            !cr.truncate().is_finite() && same_bits(cr.truncate().to_array(), center)
        }),
        Error::SphereRadiusInvalid { prim, radius } => sphere(prim).is_some_and(|cr| {
            !(cr.w > 0.0 && cr.w.is_finite()) && cr.w.to_bits() == radius.to_bits()
        }),
        Error::TriangleNotFinite {
            prim,
            vertex,
            position,
        } => triangle(prim)
            .and_then(|t| t.get(vertex).copied())
            .is_some_and(|p| !p.is_finite() && same_bits(p.to_array(), position)),
        Error::DegenerateTriangle { prim } => {
            scene.reject_degenerate
                && triangle(prim).is_some_and(|[a, b, c]| (b - a).cross(c - a) == Vec3::ZERO)
        }
        _ => false,
    }
}

/// Equal errors, NaN fields included (`Error`'s `PartialEq` says NaN != NaN).
pub(crate) fn same_error(a: &Error, b: &Error) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

pub(crate) fn same_bits(a: [f32; 3], b: [f32; 3]) -> bool {
    a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// A material: usually a valid one, sometimes raw values.
pub(crate) fn decode_material(b: &mut Bytes) -> Material {
    match b.u8() {
        0..=159 => Material::lambertian(Vec3::new(b.unit(), b.unit(), b.unit())),
        160..=191 => Material::metal(Vec3::splat(b.unit()), b.unit()),
        192..=207 => Material::dielectric(1.0 + b.unit()),
        208..=223 => Material::emissive(Vec3::splat(4.0 * b.unit())),
        _ => Material {
            albedo: b.vec3(),
            fuzz: b.f32(),
            emission: b.vec3(),
            ior: b.f32(),
            lambert: b.f32(),
            metal: b.f32(),
            dielectric: b.f32(),
        },
    }
}

/// Add one decoded mesh and check `add_mesh`'s verdict.
fn decode_mesh(b: &mut Bytes, scene: &mut Scene, material: u32) -> Result<(), Violation> {
    let positions: Vec<Vec3> = (0..b.u8() % 9).map(|_| b.vec3()).collect();
    let n = positions.len();
    let triangles: Vec<[u32; 3]> = (0..b.u8() % 6)
        .map(|_| {
            [0; 3].map(|_| match b.u8() {
                250..=255 => b.u32(),
                k => u32::from(k) % (n as u32 + 2),
            })
        })
        .collect();
    let before = scene.primitive_count();
    let bad_index = triangles.iter().flatten().any(|&i| i as usize >= n);
    let bad_vertex = triangles
        .iter()
        .flatten()
        .any(|&i| positions.get(i as usize).is_some_and(|p| !p.is_finite()));
    match scene.add_mesh(&positions, &triangles, material) {
        Ok(first) => {
            if bad_index || bad_vertex || first as usize != before {
                return violation!(
                    "add_mesh accepted {positions:?} {triangles:?} (first id {first})"
                );
            }
            if scene.primitive_count() != before + triangles.len() {
                return violation!("add_mesh added the wrong number of triangles");
            }
        }
        Err(e) => {
            let named = match e {
                Error::IndexOutOfRange {
                    triangle,
                    index,
                    vertex_count,
                    ..
                } => {
                    vertex_count == n
                        && index as usize >= n
                        && triangles.get(triangle).is_some_and(|t| t.contains(&index))
                }
                Error::VertexNotFinite {
                    vertex, position, ..
                } => positions.get(vertex).is_some_and(|p| {
                    !p.is_finite()
                        && same_bits(p.to_array(), position)
                        && triangles.iter().flatten().any(|&i| i as usize == vertex)
                }),
                _ => false,
            };
            if !named || scene.primitive_count() != before {
                return violation!(
                    "add_mesh({positions:?}, {triangles:?}) gave {e:?}, which names no bad item or added something"
                );
            }
        }
    }
    Ok(())
}

/// A point on primitive `id` picked by the next bytes (edges and corners included).
fn point_on(b: &mut Bytes, scene: &Scene, id: u32) -> Option<Vec3> {
    match scene.primitive(id)? {
        PrimRef::Triangle(t) => {
            let [p0, p1, p2] = scene.triangle(t)?;
            let (u, v) = (b.unit(), b.unit());
            let (u, v) = if u + v > 1.0 {
                (1.0 - u, 1.0 - v)
            } else {
                (u, v)
            };
            Some(p0 + u * (p1 - p0) + v * (p2 - p0))
        }
        PrimRef::Sphere(s) => {
            let cr = scene.spheres().get(s as usize)?;
            Some(cr.truncate() + cr.w * (b.vec3().normalize_or(Vec3::X)))
        }
        // The fuzzed scenes hold triangles and spheres only.
        PrimRef::Heightfield(h) => Some(
            scene
                .own_geometry()
                .heightfields()
                .get(h as usize)?
                .bounds()
                .center(),
        ),
    }
}

/// A ray: origin, then a raw direction or one aimed at a point on a primitive,
/// then a `(tmin, tmax)` pair, often the default `(0, inf)`.
fn decode_ray(b: &mut Bytes, scene: &Scene) -> Ray {
    let origin = b.vec3();
    let aim = b.u8();
    let dir = match aim {
        0..=111 => b.vec3(),
        _ => {
            let n = scene.primitive_count().max(1) as u32;
            match point_on(b, scene, u32::from(aim) % n) {
                Some(p) => p - origin,
                None => b.vec3(),
            }
        }
    };
    let (tmin, tmax) = match b.u8() % 8 {
        0..=3 => (0.0, f32::INFINITY),
        4 => (b.f32(), f32::INFINITY),
        5 => (0.0, b.f32()),
        _ => (b.f32(), b.f32()),
    };
    Ray::segment(origin, dir, tmin, tmax)
}

/// Whether every coordinate, radius and emission of `scene` is of a size real
/// scenes use; inside this domain a NaN or infinite pixel is an integrator bug,
/// outside it overflow is expected.
pub(crate) fn scene_is_tame(scene: &Scene) -> bool {
    let tame = |v: Vec3| v.abs().max_element() <= 1e4;
    scene
        .spheres()
        .iter()
        .all(|cr| tame(cr.truncate()) && (1e-2..=1e4).contains(&cr.w))
        && (0..scene.triangle_count() as u32)
            .all(|i| scene.triangle(i).is_some_and(|t| t.into_iter().all(tame)))
        && scene.materials().iter().all(|m| tame(m.emission))
}

/// A 3x3 render of a valid decoded scene with a decoded integrator: it must
/// succeed and, for a tame scene, hold finite non-negative radiance.
fn render_scene_check(
    backend: &mut CpuBackend,
    scene: &Scene,
    b: &mut Bytes,
) -> Result<(), Violation> {
    let settings = RenderSettings {
        integrator: Integrator::ALL[usize::from(b.u8() % 3)],
        spp: 2,
        max_depth: 3,
        ao_samples: 2,
        ao_distance: 4.0,
        ao_shadows: b.u8() & 1 == 1,
        ..Default::default()
    };
    let camera = Camera::look_at(Vec3::new(3.0, 4.0, 20.0), Vec3::ZERO, Vec3::Y, 70.0);
    let mut image = match Image::new(3, 3, PixelFormat::LinearF32) {
        Ok(i) => i,
        Err(e) => return violation!("Image::new(3, 3) failed: {e:?}"),
    };
    if let Err(e) = backend.render(&camera, &settings, &mut image, &NoProgress) {
        return violation!("render of a valid scene failed: {e:?}");
    }
    // Not compared with the binary traversal's image: in arbitrary scenes the two
    // BVHs differ where hits tie (coincident triangles) or lie off their boxes.
    if scene_is_tame(scene) {
        finite_radiance(&image).map_err(|v| Violation(format!("{v} ({settings:?})")))?;
    }
    Ok(())
}

/// Arbitrary materials, spheres, triangles and meshes; validation, BVH build and
/// `set_scene`; then a batch of arbitrary rays through `intersect` and `occluded`
/// against brute force, on the SAH tree, then on the fast and clustered trees.
///
/// A first byte of [`TWO_LEVEL`] or more makes the scene two-level instead:
/// geometries placed by instances, traced with masked rays, then updated
/// (see [`crate::two_level`]). Below it, only its lowest bit is read (whether
/// degenerate triangles are refused), as before two-level scenes existed, so
/// that saved inputs decode as they did.
pub fn scene_trace(data: &[u8]) -> Result<(), Violation> {
    let mut b = Bytes::new(data);
    let mut scene = Scene::new();
    let head = b.u8();
    scene.reject_degenerate = head & 1 == 1;
    if head >= TWO_LEVEL {
        return crate::two_level::two_level_trace(&mut b, scene.reject_degenerate);
    }
    let materials = b.u8() % 4;
    for _ in 0..materials {
        scene.add_material(decode_material(&mut b));
    }
    let prims = b.u8() as usize % (MAX_PRIMITIVES + 1);
    while scene.primitive_count() < prims && !b.is_empty() {
        let kind = b.u8();
        let material = match b.u8() {
            248..=255 => b.u32(),
            m => u32::from(m) % u32::from(materials.max(1)),
        };
        match kind % 8 {
            0..=3 => {
                let (v0, v1, v2) = (b.vec3(), b.vec3(), b.vec3());
                scene.add_triangle(v0, v1, v2, material);
            }
            4..=6 => {
                let (center, radius) = (b.vec3(), b.f32());
                scene.add_sphere(center, radius, material);
            }
            _ => decode_mesh(&mut b, &mut scene, material)?,
        }
    }

    let valid = scene_is_valid(&scene);
    let built = Accel::build(&scene);
    match &built {
        Ok(_) if !valid => return violation!("Accel::build accepted an invalid scene"),
        Err(e) if valid => return violation!("Accel::build refused a valid scene: {e:?}"),
        Err(e) if !error_names_bad_item(&scene, e) => {
            return violation!("Accel::build gave {e:?}, which names no bad item");
        }
        _ => {}
    }
    with_backend(|backend| {
        let set = backend.set_scene(&scene).map(|_| ());
        match (&built, set) {
            (Ok(_), Ok(())) => {}
            (Err(a), Err(b)) if same_error(a, &b) => {
                return known_good_call(backend, "a refused scene");
            }
            (built, set) => {
                return violation!("Accel::build gave {built:?} but set_scene gave {set:?}");
            }
        }
        let n = b.u8() as usize % (MAX_RAYS + 1);
        let rays: Vec<Ray> = (0..n).map(|_| decode_ray(&mut b, &scene)).collect();

        // The whole batch: refused naming the first bad ray, if there is one.
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
        // Output slices of the wrong length.
        let mut short = vec![Hit::MISS; rays.len().saturating_sub(1)];
        if !rays.is_empty() {
            match backend.intersect(&rays, &mut short) {
                Err(Error::LengthMismatch { .. }) => {}
                r => return violation!("intersect with a short output slice gave {r:?}"),
            }
        }
        let good: Vec<Ray> = rays.into_iter().filter(Ray::is_valid).collect();
        compare_with_brute_force(backend, &scene, &good)?;
        if let Some(accel) = backend.accel() {
            light_grid_agrees(accel, &scene, &good)?;
            cell_grid_agrees(accel, &scene, &good)?;
        }
        sphere_early_miss_agrees(&scene, &good)?;
        // The fast and clustered trees over the same scene: the same answers
        // under the same rule, on every traversal.
        for quality in [BuildQuality::Fast, BuildQuality::Clustered] {
            let mut other = scene.clone();
            other.build_quality = quality;
            if let Err(e) = backend.set_scene(&other) {
                return violation!("set_scene of the {quality:?} tree refused a valid scene: {e}");
            }
            compare_with_brute_force(backend, &other, &good)
                .map_err(|v| Violation(format!("{quality:?} tree: {v}")))?;
        }
        if let Err(e) = backend.set_scene(&scene) {
            return violation!("set_scene of the SAH tree again failed: {e}");
        }
        // Last, so that inputs saved before this step decode as they did.
        render_scene_check(backend, &scene, &mut b)
    })
}
