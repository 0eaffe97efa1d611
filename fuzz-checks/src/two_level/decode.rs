//! Decoding the fuzz input into the two-level half's scene, rays and
//! updates: transforms (tame, raw, singular or scaled by a power of two),
//! geometries, instances, masked rays aimed at instances, and update
//! operations, each now and then naming an item that does not exist. What
//! the bytes mean lives here alone, so the model and the checks read values,
//! never bytes.

use super::model::{MeshSource, Model};
use crate::bytes::Bytes;
use glam::{Affine3A, Quat, Vec3};
use prism_core::scene::PrimRef;
use prism_core::{Geometry, Instance, Ray};

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

/// A decoded geometry: an indexed mesh (the kind that takes new vertices)
/// or loose spheres and triangles (arbitrary values both).
pub(super) fn decode_geometry(
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
pub(super) fn decode_instance(b: &mut Bytes, geometries: u32, materials: u32) -> Instance {
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

/// A ray with a mask: origin, then a raw direction or one aimed at a point
/// on a primitive of an instance (carried into the world), then a `(tmin,
/// tmax)` pair, then a mask (most often every bit).
pub(super) fn decode_ray(b: &mut Bytes, model: &Model) -> Ray {
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
                // The fuzzed geometries hold triangles and spheres only.
                PrimRef::Heightfield(h) => g.heightfields().get(h as usize)?.bounds().center(),
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
pub(super) enum Op {
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
pub(super) fn decode_update(b: &mut Bytes, model: &Model) -> (Vec<Op>, Vec<Vec<Vec3>>) {
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
