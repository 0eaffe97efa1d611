//! Iterative BVH traversal (the scene it walks is [`Accel`]).
//!
//! Traversal is front to back with a fixed stack: at each node both children's
//! boxes are tested, leaves are intersected at once (nearest first), and of the
//! inner children the nearer is visited next while the farther is pushed.

pub use crate::accel::Accel;
use crate::gpu::{BvhNode, KIND_HEIGHTFIELD, KIND_SPHERE, Primitive, TRAVERSAL_STACK_SIZE};
use crate::heightfield::Heightfields;
use crate::intersect::{RayPre, ray_aabb_rows, ray_sphere, ray_triangle, ray_triangle_axes};
use crate::ray::{Hit, Ray};
use glam::Vec3;

#[inline(always)]
fn xyz(row: [f32; 4]) -> Vec3 {
    Vec3::new(row[0], row[1], row[2])
}

/// Intersect one triangle or sphere; `Some((t, u, v))` within `(tmin, tmax)`.
/// A heightfield record is never hit here: its walk reads its heights
/// ([`primitive_hit`]).
#[inline(always)]
pub fn ray_primitive(pre: &RayPre, p: &Primitive, tmin: f32, tmax: f32) -> Option<(f32, f32, f32)> {
    match p.kind() {
        KIND_SPHERE => {
            ray_sphere(pre.origin, pre.dir, xyz(p.a), p.b[0], tmin, tmax).map(|t| (t, 0.0, 0.0))
        }
        KIND_HEIGHTFIELD => None,
        _ => ray_triangle(pre, xyz(p.a), xyz(p.b), xyz(p.c), tmin, tmax),
    }
}

/// Intersect one primitive of any kind, the heightfields' walks reading `hf`
/// (an [`Accel`]'s, [`Accel::heightfield_set`]): the hit within `(tmin,
/// tmax)` as a [`Hit`] on slot `slot` of instance 0 (a heightfield's names
/// its cell and face).
#[inline(always)]
pub fn primitive_hit(
    pre: &RayPre,
    p: &Primitive,
    hf: Heightfields<'_>,
    slot: u32,
    tmin: f32,
    tmax: f32,
) -> Option<Hit> {
    if p.kind() == KIND_HEIGHTFIELD {
        hf.hit(pre, p, tmin, tmax)
            .map(|h| Hit::heightfield(h.t, slot, 0, h.cell, h.face))
    } else {
        ray_primitive(pre, p, tmin, tmax).map(|(t, u, v)| Hit::new(t, u, v, slot, 0))
    }
}

/// [`ray_primitive`] with the ray's axis permutation fixed at compile time
/// (heightfields are taken apart by the callers).
#[inline(always)]
fn ray_primitive_axes<const KX: usize, const KY: usize, const KZ: usize>(
    pre: &RayPre,
    p: &Primitive,
    tmin: f32,
    tmax: f32,
) -> Option<(f32, f32, f32)> {
    if p.kind() == KIND_SPHERE {
        ray_sphere(pre.origin, pre.dir, xyz(p.a), p.b[0], tmin, tmax).map(|t| (t, 0.0, 0.0))
    } else {
        let row = |r: [f32; 4]| glam::Vec3A::from_vec4(glam::Vec4::from_array(r));
        ray_triangle_axes::<KX, KY, KZ>(pre, row(p.a), row(p.b), row(p.c), tmin, tmax)
    }
}

/// Run `$f::<KX, KY, KZ>` for the ray's axis permutation (see [`RayPre::perm`]).
/// `[$g]` adds further generic arguments after the three axes.
macro_rules! dispatch_axes {
    ($pre:expr, $f:ident [$($g:tt)*], $($arg:expr),*) => {
        match $pre.perm {
            0 => $f::<1, 2, 0, $($g)*>($($arg),*),
            1 => $f::<2, 1, 0, $($g)*>($($arg),*),
            2 => $f::<2, 0, 1, $($g)*>($($arg),*),
            3 => $f::<0, 2, 1, $($g)*>($($arg),*),
            4 => $f::<0, 1, 2, $($g)*>($($arg),*),
            _ => $f::<1, 0, 2, $($g)*>($($arg),*),
        }
    };
}

/// Closest hit over a BVH; `Hit::prim` is the slot in `prims`.
///
/// `nodes` and `prims` come from one [`Accel`], whose builder keeps every index
/// in range, the tree acyclic and the stack within bounds; that is why this is
/// not public (callers use [`Accel::intersect`]).
pub(crate) fn closest_hit(
    nodes: &[BvhNode],
    prims: &[Primitive],
    hf: Heightfields<'_>,
    ray: &Ray,
) -> Hit {
    closest_hit_at(nodes, 0, prims, hf, ray)
}

/// [`closest_hit`] from the node `root` (a geometry's tree among several);
/// `Hit::instance` is 0.
pub(crate) fn closest_hit_at(
    nodes: &[BvhNode],
    root: usize,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    ray: &Ray,
) -> Hit {
    let pre = RayPre::new(ray);
    dispatch_axes!(
        pre,
        closest_hit_axes[false],
        nodes,
        root,
        prims,
        hf,
        ray,
        &pre
    )
}

/// [`closest_hit`] over the near-first octant copies of a tree
/// ([`crate::gpu::near_first_octant_copies`]), the traversal of the CUDA render
/// kernels and of the wgpu shaders on a small tree: the ray walks the copy of
/// its direction's octant and takes each node's children in slot order, where
/// [`closest_hit`] orders them by entry distance. The box values (`ray_aabb_rows` takes the min and max of each
/// axis's two planes, whichever row holds which) and the leaf tests are
/// [`closest_hit`]'s, and the nearest hit is found in any order: the result is
/// the same except where two primitives tie at exactly the same `t` (the first
/// one found is kept). Crate-private for the reason [`closest_hit`] is.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn closest_hit_near_first(copies: &[BvhNode], prims: &[Primitive], ray: &Ray) -> Hit {
    let pre = RayPre::new(ray);
    let root = octant_root(&pre, copies);
    let hf = Heightfields::NONE;
    dispatch_axes!(
        pre,
        closest_hit_axes[true],
        copies,
        root,
        prims,
        hf,
        ray,
        &pre
    )
}

/// The root of the copy a ray walks in eight octant copies of a tree.
#[cfg_attr(not(test), allow(dead_code))]
#[inline]
fn octant_root(pre: &RayPre, copies: &[BvhNode]) -> usize {
    crate::gpu::octant_of(pre.inv_dir.into()) * (copies.len() / 8)
}

/// [`closest_hit`] for one axis permutation: one copy of the loop per permutation
/// keeps every vertex component access a compile-time lane. `NEAR_FIRST` takes
/// the children in slot order from `root` ([`closest_hit_near_first`]).
#[inline(never)]
fn closest_hit_axes<const KX: usize, const KY: usize, const KZ: usize, const NEAR_FIRST: bool>(
    nodes: &[BvhNode],
    root: usize,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    ray: &Ray,
    pre: &RayPre,
) -> Hit {
    let tmin = ray.tmin;
    let mut best = Hit {
        t: ray.tmax,
        ..Hit::MISS
    };
    let mut stack = [0u32; TRAVERSAL_STACK_SIZE];
    let mut sp = 0usize;
    let mut node = root;
    while let Some(n) = nodes.get(node) {
        let tl = ray_aabb_rows(pre, &n.left_lo, &n.left_hi, tmin, best.t);
        let tr = ray_aabb_rows(pre, &n.right_lo, &n.right_hi, tmin, best.t);
        let (l_index, l_count, r_index, r_count) = (
            n.left_index(),
            n.left_count(),
            n.right_index(),
            n.right_count(),
        );
        // Order the children near to far (near-first copies: slot order).
        let swap = !NEAR_FIRST && tr < tl;
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
                leaf_closest::<KX, KY, KZ>(pre, prims, hf, near_index, near_count, tmin, &mut best);
            }
            t_near = f32::INFINITY;
        }
        if far_count > 0 {
            if t_far < best.t {
                leaf_closest::<KX, KY, KZ>(pre, prims, hf, far_index, far_count, tmin, &mut best);
            }
            t_far = f32::INFINITY;
        }
        let go_near = t_near < best.t;
        let go_far = t_far < best.t;
        if go_near && go_far {
            // ok: `sp` is checked against the stack size.
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
            // ok: `sp` was at least 1.
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
fn leaf_closest<const KX: usize, const KY: usize, const KZ: usize>(
    pre: &RayPre,
    prims: &[Primitive],
    hf: Heightfields<'_>,
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
        let slot = (first + k) as u32;
        if p.kind() == KIND_HEIGHTFIELD {
            if let Some(h) = hf.hit(pre, p, tmin, best.t) {
                *best = Hit::heightfield(h.t, slot, 0, h.cell, h.face);
            }
        } else if let Some((t, u, v)) = ray_primitive_axes::<KX, KY, KZ>(pre, p, tmin, best.t) {
            *best = Hit::new(t, u, v, slot, 0);
        }
    }
}

/// Whether any primitive lies on the ray within `(tmin, tmax)`; stops at the
/// first. Crate-private for the reason [`closest_hit`] is.
pub(crate) fn any_hit(
    nodes: &[BvhNode],
    prims: &[Primitive],
    hf: Heightfields<'_>,
    ray: &Ray,
) -> bool {
    any_hit_at(nodes, 0, prims, hf, ray)
}

/// [`any_hit`] from the node `root` (a geometry's tree among several).
pub(crate) fn any_hit_at(
    nodes: &[BvhNode],
    root: usize,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    ray: &Ray,
) -> bool {
    let pre = RayPre::new(ray);
    dispatch_axes!(pre, any_hit_axes[false], nodes, root, prims, hf, ray, &pre)
}

/// [`any_hit`] over near-first octant copies, as [`closest_hit_near_first`]:
/// the children in slot order. Whether a primitive lies on the ray does not
/// depend on the order, so the answer is always [`any_hit`]'s.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn any_hit_near_first(copies: &[BvhNode], prims: &[Primitive], ray: &Ray) -> bool {
    let pre = RayPre::new(ray);
    let root = octant_root(&pre, copies);
    let hf = Heightfields::NONE;
    dispatch_axes!(pre, any_hit_axes[true], copies, root, prims, hf, ray, &pre)
}

/// [`any_hit`] for one axis permutation; `NEAR_FIRST` as in [`closest_hit_axes`].
#[inline(never)]
fn any_hit_axes<const KX: usize, const KY: usize, const KZ: usize, const NEAR_FIRST: bool>(
    nodes: &[BvhNode],
    root: usize,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    ray: &Ray,
    pre: &RayPre,
) -> bool {
    let (tmin, tmax) = (ray.tmin, ray.tmax);
    let mut stack = [0u32; TRAVERSAL_STACK_SIZE];
    let mut sp = 0usize;
    let mut node = root;
    loop {
        let Some(n) = nodes.get(node) else {
            return false;
        };
        let tl = ray_aabb_rows(pre, &n.left_lo, &n.left_hi, tmin, tmax);
        let tr = ray_aabb_rows(pre, &n.right_lo, &n.right_hi, tmin, tmax);
        let (l_index, l_count, r_index, r_count) = (
            n.left_index(),
            n.left_count(),
            n.right_index(),
            n.right_count(),
        );
        let mut go_left = tl < f32::INFINITY;
        let mut go_right = tr < f32::INFINITY;
        if go_left && l_count > 0 {
            if leaf_any::<KX, KY, KZ>(pre, prims, hf, l_index, l_count, tmin, tmax) {
                return true;
            }
            go_left = false;
        }
        if go_right && r_count > 0 {
            if leaf_any::<KX, KY, KZ>(pre, prims, hf, r_index, r_count, tmin, tmax) {
                return true;
            }
            go_right = false;
        }
        // Visit the nearer inner child first: it is the likelier to hold an
        // occluder (near-first copies: slot order).
        let swap = !NEAR_FIRST && tr < tl;
        let (near, far, go_near, go_far) = if swap {
            (r_index, l_index, go_right, go_left)
        } else {
            (l_index, r_index, go_left, go_right)
        };
        if go_near && go_far {
            // ok: `sp` is checked against the stack size.
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
            // ok: `sp` was at least 1.
            sp -= 1;
            node = stack[sp] as usize;
        } else {
            return false;
        }
    }
}

#[inline(always)]
fn leaf_any<const KX: usize, const KY: usize, const KZ: usize>(
    pre: &RayPre,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    first: u32,
    count: u32,
    tmin: f32,
    tmax: f32,
) -> bool {
    let first = first as usize;
    let Some(leaf) = prims.get(first..first + count as usize) else {
        return false;
    };
    leaf.iter().any(|p| {
        if p.kind() == KIND_HEIGHTFIELD {
            hf.hit(pre, p, tmin, tmax).is_some()
        } else {
            ray_primitive_axes::<KX, KY, KZ>(pre, p, tmin, tmax).is_some()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::near_first_octant_copies;
    use crate::material::Material;
    use crate::scene::Scene;
    use glam::Vec3Swizzles;
    use proptest::prelude::*;

    /// A scene of spheres and triangles; every primitive is added twice when
    /// `twice`, so that exact ties (two primitives at the same `t`) occur.
    fn scene(prims: &[(Vec3, Vec3, f32, bool)], twice: bool) -> Scene {
        let mut scene = Scene::new();
        let m = scene.add_material(Material::lambertian(Vec3::ONE));
        for _ in 0..1 + twice as usize {
            for &(a, b, r, sphere) in prims {
                if sphere {
                    scene.add_sphere(a, r, m);
                } else {
                    scene.add_triangle(a, a + b, a + b.zxy() * r, m);
                }
            }
        }
        scene
    }

    fn v3(extent: f32) -> impl Strategy<Value = Vec3> {
        prop::array::uniform3(-extent..extent).prop_map(Vec3::from_array)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

        /// The near-first traversal (the CUDA render kernels' twin) finds
        /// closest_hit's hit, or one at exactly the same `t` (a tie), and
        /// any_hit's answer, on rays from anywhere, from near a primitive, and
        /// along the axes.
        #[test]
        fn near_first_traversal_finds_core_hits(
            prims in prop::collection::vec((v3(10.0), v3(2.0), 0.05f32..1.5, any::<bool>()), 1..120),
            twice in any::<bool>(),
            rays in prop::collection::vec((v3(14.0), v3(1.0), 0usize..8, 0u8..3), 64),
        ) {
            let accel = Accel::build(&scene(&prims, twice)).unwrap(); // ok: test, valid primitives
            let copies = near_first_octant_copies(accel.nodes()).unwrap(); // ok: test, < 2,048 nodes
            let (nodes, slots) = (accel.nodes(), accel.primitives());
            for (origin, dir, zero, limits) in rays {
                let mut dir = dir;
                // Some rays parallel to one or two axes.
                for k in 0..3 {
                    if zero & (1 << k) != 0 && zero != 7 {
                        dir[k] = 0.0;
                    }
                }
                if dir == Vec3::ZERO {
                    dir = Vec3::X;
                }
                let ray = match limits {
                    0 => Ray::new(origin, dir),
                    1 => Ray::segment(origin, dir, 0.5, f32::INFINITY),
                    _ => Ray::segment(origin, dir, 0.0, 8.0),
                };
                let core = closest_hit(nodes, slots, Heightfields::NONE, &ray);
                let near_first = closest_hit_near_first(&copies, slots, &ray);
                prop_assert_eq!(near_first.t.to_bits(), core.t.to_bits(), "{:?}", ray);
                if near_first.prim == core.prim {
                    prop_assert_eq!((near_first.u.to_bits(), near_first.v.to_bits()),
                        (core.u.to_bits(), core.v.to_bits()));
                }
                prop_assert_eq!(any_hit_near_first(&copies, slots, &ray), any_hit(nodes, slots, Heightfields::NONE, &ray));
            }
        }
    }

    /// On rtiow's kind of scene (many small spheres on a huge ground sphere), the
    /// two traversals agree on every ray of a frame-like set, primitive included.
    #[test]
    fn near_first_traversal_agrees_on_a_field_of_spheres() {
        let mut scene = Scene::new();
        let m = scene.add_material(Material::lambertian(Vec3::ONE));
        scene.add_sphere(Vec3::new(0.0, -1000.0, 0.0), 1000.0, m);
        for a in -11..11 {
            for b in -11..11 {
                let (x, z) = (
                    a as f32 + 0.37 * (b as f32).sin(),
                    b as f32 + 0.41 * (a as f32).cos(),
                );
                scene.add_sphere(Vec3::new(x, 0.2, z), 0.2, m);
            }
        }
        let accel = Accel::build(&scene).unwrap(); // ok: test, valid scene
        let copies = near_first_octant_copies(accel.nodes()).unwrap(); // ok: test, small tree
        let (nodes, slots) = (accel.nodes(), accel.primitives());
        let mut hits = 0;
        for i in 0..4000u32 {
            let f = i as f32;
            let origin = Vec3::new(
                13.0 - (f * 0.013).sin() * 20.0,
                0.1 + (f * 0.7).cos().abs() * 3.0,
                3.0,
            );
            let dir = Vec3::new(
                (f * 0.31).sin(),
                (f * 0.17).cos() - 0.6,
                (f * 0.23).sin() - 0.2,
            );
            let ray = Ray::new(origin, dir);
            let core = closest_hit(nodes, slots, Heightfields::NONE, &ray);
            let near_first = closest_hit_near_first(&copies, slots, &ray);
            assert_eq!(
                (near_first.prim, near_first.t.to_bits()),
                (core.prim, core.t.to_bits()),
                "ray {i}"
            );
            assert_eq!(
                any_hit_near_first(&copies, slots, &ray),
                any_hit(nodes, slots, Heightfields::NONE, &ray)
            );
            hits += core.is_hit() as u32;
        }
        assert!(hits > 1000, "{hits} of 4000 rays hit");
    }
}
