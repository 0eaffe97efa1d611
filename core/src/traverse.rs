//! The traversal-ready scene ([`Accel`]) and iterative BVH traversal.
//!
//! Traversal is front to back with a fixed stack: at each node both children's
//! boxes are tested, leaves are intersected at once (nearest first), and of the
//! inner children the nearer is visited next while the farther is pushed.

use crate::aabb::Aabb;
use crate::bvh::{Bvh, sphere_bounds, triangle_bounds};
use crate::error::Error;
use crate::gpu::{BvhNode, GpuMaterial, KIND_SPHERE, Primitive, TRAVERSAL_STACK_SIZE};
use crate::intersect::{RayPre, ray_aabb, ray_sphere, ray_triangle};
use crate::ray::{Hit, Ray};
use crate::scene::{PointLight, PrimRef, Scene, Sky};
use alloc::vec::Vec;
use glam::Vec3;

/// A scene made ready for tracing: validated, BVH built, primitives in leaf order.
///
/// This is what every backend uploads: [`Accel::nodes`], [`Accel::primitives`],
/// [`Accel::slot_materials`] and [`Accel::materials`] are the device buffers.
/// The fields are private so that the BVH invariants (depth bound, valid child
/// indices) hold for every `Accel` that exists.
#[derive(Clone, Debug)]
pub struct Accel {
    nodes: Vec<BvhNode>,
    prims: Vec<Primitive>,
    slot_material: Vec<u32>,
    materials: Vec<GpuMaterial>,
    bounds: Aabb,
    depth: u32,
    sky: Sky,
    light: PointLight,
}

impl Accel {
    /// Validate `scene` and build its BVH. The error names the first bad item.
    pub fn build(scene: &Scene) -> Result<Accel, Error> {
        scene.validate()?;
        let n = scene.primitive_count();
        let mut bounds = Vec::with_capacity(n);
        for r in &scene.prim_ref {
            bounds.push(match *r {
                PrimRef::Triangle(t) => {
                    let t = t as usize;
                    triangle_bounds(scene.tri_v0[t], scene.tri_v1[t], scene.tri_v2[t])
                }
                PrimRef::Sphere(s) => {
                    let cr = scene.sphere_center_radius[s as usize];
                    sphere_bounds(cr.truncate(), cr.w)
                }
            });
        }
        let bvh = Bvh::build(&bounds);
        let scene_bounds = bounds.iter().fold(Aabb::EMPTY, |a, b| a.union(*b));
        let mut prims = Vec::with_capacity(n);
        let mut slot_material = Vec::with_capacity(n);
        for &id in &bvh.order {
            prims.push(match scene.prim_ref[id as usize] {
                PrimRef::Triangle(t) => {
                    let t = t as usize;
                    Primitive::triangle(
                        id,
                        scene.tri_v0[t].into(),
                        scene.tri_v1[t].into(),
                        scene.tri_v2[t].into(),
                    )
                }
                PrimRef::Sphere(s) => {
                    let cr = scene.sphere_center_radius[s as usize];
                    Primitive::sphere(id, cr.truncate().into(), cr.w)
                }
            });
            slot_material.push(scene.prim_material[id as usize]);
        }
        Ok(Accel {
            nodes: bvh.nodes,
            prims,
            slot_material,
            materials: scene.materials.iter().map(|m| m.to_gpu()).collect(),
            bounds: scene_bounds,
            depth: bvh.depth,
            sky: scene.sky,
            light: scene.light,
        })
    }

    /// BVH nodes, root first.
    #[inline]
    pub fn nodes(&self) -> &[BvhNode] {
        &self.nodes
    }
    /// Primitives in leaf order ("slots").
    #[inline]
    pub fn primitives(&self) -> &[Primitive] {
        &self.prims
    }
    /// Material id of each slot.
    #[inline]
    pub fn slot_materials(&self) -> &[u32] {
        &self.slot_material
    }
    /// Materials in buffer form, by material id.
    #[inline]
    pub fn materials(&self) -> &[GpuMaterial] {
        &self.materials
    }
    /// Bounds of the whole scene.
    #[inline]
    pub fn bounds(&self) -> Aabb {
        self.bounds
    }
    /// Depth of the deepest leaf (always below [`TRAVERSAL_STACK_SIZE`]).
    #[inline]
    pub fn depth(&self) -> u32 {
        self.depth
    }
    /// The sky.
    #[inline]
    pub fn sky(&self) -> Sky {
        self.sky
    }
    /// The key light.
    #[inline]
    pub fn light(&self) -> PointLight {
        self.light
    }

    /// Closest hit; `Hit::prim` is the scene primitive id.
    #[inline]
    pub fn intersect(&self, ray: &Ray) -> Hit {
        let mut hit = closest_hit(&self.nodes, &self.prims, ray);
        if hit.is_hit() {
            // ok: closest_hit only returns slots of `prims`.
            hit.prim = self.prims[hit.prim as usize].id();
        }
        hit
    }

    /// Closest hit; `Hit::prim` is the leaf slot (what the integrators shade with).
    #[inline]
    pub fn intersect_slot(&self, ray: &Ray) -> Hit {
        closest_hit(&self.nodes, &self.prims, ray)
    }

    /// Whether anything lies on the ray within `(tmin, tmax)`.
    #[inline]
    pub fn occluded(&self, ray: &Ray) -> bool {
        any_hit(&self.nodes, &self.prims, ray)
    }
}

#[inline(always)]
fn xyz(row: [f32; 4]) -> Vec3 {
    Vec3::new(row[0], row[1], row[2])
}

/// Intersect one primitive; `Some((t, u, v))` within `(tmin, tmax)`.
#[inline(always)]
pub fn ray_primitive(pre: &RayPre, p: &Primitive, tmin: f32, tmax: f32) -> Option<(f32, f32, f32)> {
    if p.kind() == KIND_SPHERE {
        ray_sphere(pre.origin, pre.dir, xyz(p.a), p.b[0], tmin, tmax).map(|t| (t, 0.0, 0.0))
    } else {
        ray_triangle(pre, xyz(p.a), xyz(p.b), xyz(p.c), tmin, tmax)
    }
}

/// Closest hit over a BVH; `Hit::prim` is the slot in `prims`.
///
/// `nodes` and `prims` must come from one [`Accel`] (the builder's invariants
/// keep every index in range and the stack within bounds).
pub fn closest_hit(nodes: &[BvhNode], prims: &[Primitive], ray: &Ray) -> Hit {
    let pre = RayPre::new(ray);
    let tmin = ray.tmin;
    let mut best = Hit {
        t: ray.tmax,
        ..Hit::MISS
    };
    let mut stack = [0u32; TRAVERSAL_STACK_SIZE];
    let mut sp = 0usize;
    let mut node = 0usize;
    while let Some(n) = nodes.get(node) {
        let tl = ray_aabb(&pre, xyz(n.left_lo), xyz(n.left_hi), tmin, best.t);
        let tr = ray_aabb(&pre, xyz(n.right_lo), xyz(n.right_hi), tmin, best.t);
        let (l_index, l_count, r_index, r_count) = (
            n.left_index(),
            n.left_count(),
            n.right_index(),
            n.right_count(),
        );
        // Order the children near to far.
        let swap = tr < tl;
        let (mut t_near, near_index, near_count) = if swap {
            (tr, r_index, r_count)
        } else {
            (tl, l_index, l_count)
        };
        let (mut t_far, far_index, far_count) = if swap {
            (tl, l_index, l_count)
        } else {
            (tr, r_index, r_count)
        };
        // Leaves are intersected right away, nearest first.
        if near_count > 0 {
            if t_near < best.t {
                leaf_closest(&pre, prims, near_index, near_count, tmin, &mut best);
            }
            t_near = f32::INFINITY;
        }
        if far_count > 0 {
            if t_far < best.t {
                leaf_closest(&pre, prims, far_index, far_count, tmin, &mut best);
            }
            t_far = f32::INFINITY;
        }
        let go_near = t_near < best.t;
        let go_far = t_far < best.t;
        if go_near && go_far {
            if sp < TRAVERSAL_STACK_SIZE {
                stack[sp] = far_index;
                sp += 1;
            }
            node = near_index as usize;
        } else if go_near {
            node = near_index as usize;
        } else if go_far {
            node = far_index as usize;
        } else if sp > 0 {
            sp -= 1;
            node = stack[sp] as usize;
        } else {
            break;
        }
    }
    if !best.is_hit() {
        best.t = f32::INFINITY;
    }
    best
}

#[inline(always)]
fn leaf_closest(
    pre: &RayPre,
    prims: &[Primitive],
    first: u32,
    count: u32,
    tmin: f32,
    best: &mut Hit,
) {
    let first = first as usize;
    let Some(leaf) = prims.get(first..first + count as usize) else {
        return;
    };
    for (k, p) in leaf.iter().enumerate() {
        if let Some((t, u, v)) = ray_primitive(pre, p, tmin, best.t) {
            *best = Hit {
                t,
                u,
                v,
                prim: (first + k) as u32,
            };
        }
    }
}

/// Whether any primitive lies on the ray within `(tmin, tmax)`; stops at the first.
pub fn any_hit(nodes: &[BvhNode], prims: &[Primitive], ray: &Ray) -> bool {
    let pre = RayPre::new(ray);
    let (tmin, tmax) = (ray.tmin, ray.tmax);
    let mut stack = [0u32; TRAVERSAL_STACK_SIZE];
    let mut sp = 0usize;
    let mut node = 0usize;
    loop {
        let Some(n) = nodes.get(node) else {
            return false;
        };
        let tl = ray_aabb(&pre, xyz(n.left_lo), xyz(n.left_hi), tmin, tmax);
        let tr = ray_aabb(&pre, xyz(n.right_lo), xyz(n.right_hi), tmin, tmax);
        let (l_index, l_count, r_index, r_count) = (
            n.left_index(),
            n.left_count(),
            n.right_index(),
            n.right_count(),
        );
        let mut go_left = tl < f32::INFINITY;
        let mut go_right = tr < f32::INFINITY;
        if go_left && l_count > 0 {
            if leaf_any(&pre, prims, l_index, l_count, tmin, tmax) {
                return true;
            }
            go_left = false;
        }
        if go_right && r_count > 0 {
            if leaf_any(&pre, prims, r_index, r_count, tmin, tmax) {
                return true;
            }
            go_right = false;
        }
        // Visit the nearer inner child first: it is the likelier to hold an occluder.
        let swap = tr < tl;
        let (near, far, go_near, go_far) = if swap {
            (r_index, l_index, go_right, go_left)
        } else {
            (l_index, r_index, go_left, go_right)
        };
        if go_near && go_far {
            if sp < TRAVERSAL_STACK_SIZE {
                stack[sp] = far;
                sp += 1;
            }
            node = near as usize;
        } else if go_near {
            node = near as usize;
        } else if go_far {
            node = far as usize;
        } else if sp > 0 {
            sp -= 1;
            node = stack[sp] as usize;
        } else {
            return false;
        }
    }
}

#[inline(always)]
fn leaf_any(
    pre: &RayPre,
    prims: &[Primitive],
    first: u32,
    count: u32,
    tmin: f32,
    tmax: f32,
) -> bool {
    let first = first as usize;
    let Some(leaf) = prims.get(first..first + count as usize) else {
        return false;
    };
    leaf.iter()
        .any(|p| ray_primitive(pre, p, tmin, tmax).is_some())
}
