//! The oracle that answers the generated cases: CPU brute force, prism-core's
//! own intersection functions over every primitive (a flat scene), or over
//! every instance the ray's mask lets it see (a two-level scene). Kept apart
//! from the generators so that what is asked and what answers it share
//! nothing but the scene.

use glam::{DAffine3, DMat3, Vec3};
use prism_core::intersect::{RayPre, ray_sphere, ray_triangle};
use prism_core::scene::PrimRef;
use prism_core::{Hit, Ray, Scene};

/// The answers of the oracle for one batch.
#[derive(Clone, Debug, Default)]
pub struct OracleAnswers {
    /// Closest hit of each ray (`prim` is the scene primitive id).
    pub hits: Vec<Hit>,
    /// Whether anything lies on each ray.
    pub occluded: Vec<bool>,
}

pub(super) enum Prim {
    Triangle([Vec3; 3]),
    Sphere(Vec3, f32),
}

/// Every primitive of `scene` with its id (one the scene cannot resolve is left
/// out, and the ids of the others stay theirs; the generated scenes hold no
/// heightfield, which the oracle leaves out too).
pub(super) fn prims(scene: &Scene) -> Vec<(u32, Prim)> {
    (0..scene.primitive_count() as u32)
        .filter_map(|id| {
            let prim = match scene.primitive(id)? {
                PrimRef::Triangle(t) => scene.triangle(t).map(Prim::Triangle),
                PrimRef::Sphere(s) => scene
                    .spheres()
                    .get(s as usize)
                    .map(|cr| Prim::Sphere(cr.truncate(), cr.w)),
                PrimRef::Heightfield(_) => None,
            }?;
            Some((id, prim))
        })
        .collect()
}

fn test(pre: &RayPre, p: &Prim, tmin: f32, tmax: f32) -> Option<(f32, f32, f32)> {
    match p {
        Prim::Triangle([a, b, c]) => ray_triangle(pre, *a, *b, *c, tmin, tmax),
        Prim::Sphere(center, r) => {
            ray_sphere(pre.origin, pre.dir, *center, *r, tmin, tmax).map(|t| (t, 0.0, 0.0))
        }
    }
}

/// Answer every ray by testing every primitive of `scene` with prism-core's
/// `ray_triangle` / `ray_sphere`, in primitive id order, keeping a hit only when
/// it is strictly nearer (so of two primitives at the same `t` the lower id wins;
/// the agreement rule counts the other as a tie).
///
/// A two-level scene is answered by [`instanced_brute_force`].
pub fn brute_force(scene: &Scene, rays: &[Ray]) -> OracleAnswers {
    if scene.is_two_level() {
        return instanced_brute_force(scene, rays);
    }
    let prims = prims(scene);
    let mut out = OracleAnswers {
        hits: Vec::with_capacity(rays.len()),
        occluded: Vec::with_capacity(rays.len()),
    };
    for ray in rays {
        let pre = RayPre::new(ray);
        let mut best = Hit::MISS;
        let mut tmax = ray.tmax;
        let mut any = false;
        for &(id, ref p) in &prims {
            if let Some((t, u, v)) = test(&pre, p, ray.tmin, tmax) {
                tmax = t;
                any = true;
                best = Hit::new(t, u, v, id, 0);
            }
        }
        out.hits.push(best);
        out.occluded.push(any);
    }
    out
}

/// One instance as the instanced oracle tests it: its triangles carried into
/// the world (in `f64`, rounded once), its spheres with the inverse transform
/// that carries a ray into their object space.
struct PlacedPrims {
    mask: u32,
    triangles: Vec<(u32, [Vec3; 3])>,
    spheres: Vec<(u32, Vec3, f32)>,
    world_to_object: DAffine3,
}

/// The oracle of a two-level scene: every instance the ray's mask lets it
/// see, every primitive of its geometry, with prism-core's own tests.
///
/// Triangles are tested in the world: the oracle carries each instance's
/// triangles through its transform in `f64`, rounding each vertex once, and
/// tests them with the world ray, so that it shares nothing with the
/// backends' walk, which carries the ray into object space instead (with
/// `f32` rows). Spheres cannot be: a sphere under a non-uniform scale is an
/// ellipsoid, which prism-core has no test for, so a sphere is tested in its
/// object space with the ray carried there exactly (the inverse and the
/// products in `f64`, rounded once); its `t` is the world's, the direction
/// not being renormalised. The two paths round differently from the walk, so
/// the agreement rule's tolerance, not bit equality, judges them (ties
/// counted). Of two hits at the same `t` the first instance and the lower id
/// win.
pub fn instanced_brute_force(scene: &Scene, rays: &[Ray]) -> OracleAnswers {
    let placed: Vec<PlacedPrims> = scene
        .instances()
        .iter()
        .filter_map(|inst| {
            let g = scene.geometries().get(inst.geometry as usize)?;
            let m = DAffine3 {
                matrix3: DMat3::from_cols(
                    inst.transform.matrix3.x_axis.as_dvec3(),
                    inst.transform.matrix3.y_axis.as_dvec3(),
                    inst.transform.matrix3.z_axis.as_dvec3(),
                ),
                translation: inst.transform.translation.as_dvec3(),
            };
            let world = |p: Vec3| m.transform_point3(p.as_dvec3()).as_vec3();
            let mut triangles = Vec::new();
            let mut spheres = Vec::new();
            for id in 0..g.primitive_count() as u32 {
                match g.primitive(id)? {
                    PrimRef::Triangle(t) => {
                        let [a, b, c] = g.triangle(t)?;
                        triangles.push((id, [world(a), world(b), world(c)]));
                    }
                    PrimRef::Sphere(k) => {
                        let cr = g.spheres().get(k as usize)?;
                        spheres.push((id, cr.truncate(), cr.w));
                    }
                    // The generated scenes hold triangles and spheres only.
                    PrimRef::Heightfield(_) => {}
                }
            }
            Some(PlacedPrims {
                mask: u32::from(inst.mask),
                triangles,
                spheres,
                world_to_object: m.inverse(),
            })
        })
        .collect();
    let mut out = OracleAnswers::default();
    for ray in rays {
        let pre = RayPre::new(ray);
        let mut best = Hit::MISS;
        let mut tmax = ray.tmax;
        for (i, p) in placed.iter().enumerate() {
            if ray.mask & p.mask == 0 {
                continue;
            }
            for &(id, [a, b, c]) in &p.triangles {
                if let Some((t, u, v)) = ray_triangle(&pre, a, b, c, ray.tmin, tmax) {
                    tmax = t;
                    best = Hit::new(t, u, v, id, i as u32);
                }
            }
            if p.spheres.is_empty() {
                continue;
            }
            let object = Ray::segment(
                p.world_to_object
                    .transform_point3(ray.origin.as_dvec3())
                    .as_vec3(),
                p.world_to_object
                    .transform_vector3(ray.dir.as_dvec3())
                    .as_vec3(),
                ray.tmin,
                ray.tmax,
            );
            let opre = RayPre::new(&object);
            for &(id, center, r) in &p.spheres {
                if let Some(t) = ray_sphere(opre.origin, opre.dir, center, r, ray.tmin, tmax) {
                    tmax = t;
                    best = Hit::new(t, 0.0, 0.0, id, i as u32);
                }
            }
        }
        out.occluded.push(best.is_hit());
        out.hits.push(best);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generated::grey;

    #[test]
    fn brute_force_keeps_the_nearest_and_the_lower_id_on_equal_t() {
        let mut s = Scene::new();
        let m = grey(&mut s);
        let (a, b, c) = (
            Vec3::new(-1.0, -1.0, -2.0),
            Vec3::new(1.0, -1.0, -2.0),
            Vec3::new(0.0, 1.0, -2.0),
        );
        s.add_triangle(a, b, c, m);
        s.add_triangle(a, b, c, m);
        s.add_sphere(Vec3::new(0.0, 0.0, -5.0), 1.0, m);
        let r = brute_force(&s, &[Ray::new(Vec3::ZERO, Vec3::NEG_Z)]);
        assert_eq!(r.hits[0].prim, 0);
        assert!((r.hits[0].t - 2.0).abs() < 1e-6);
    }
}
