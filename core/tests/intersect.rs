//! Properties of the primitive tests: watertight ray-triangle, robust ray-sphere
//! and the slab test, each against an `f64` reference.

mod common;

use common::{DVec3, config, d, rotation, unit_vec3, vec3};
use glam::Vec3;
use prism_core::gpu::{BvhNode, EMPTY_CHILD, Primitive, octant_copies, octant_of};
use prism_core::intersect::{
    MIN_DIR_COMPONENT, RayPre, SPHERE_EARLY_MISS_MARGIN, SPHERE_LEFT_BEHIND_SCALE, ray_aabb,
    ray_aabb_rows, ray_sphere, ray_triangle, ray_triangle_axes, sphere_left_behind,
    sphere_missed_early, widen_exit,
};
use prism_core::reference::{AgreementCounts, t_floor};
use prism_core::traverse::ray_primitive;
use prism_core::{Accel, Hit, Ray};
use proptest::prelude::*;

const EPS: f64 = f32::EPSILON as f64;

/// `10^e`: log-uniform scales.
fn pow10(e: f32) -> f32 {
    10f32.powf(e)
}

/// `f64` ray-plane-barycentric reference of a triangle: `(t, u, v)` of the ray's
/// (infinite) line with the triangle's plane, barycentrics of that point.
fn triangle_reference(o: DVec3, dir: DVec3, v0: DVec3, v1: DVec3, v2: DVec3) -> (f64, f64, f64) {
    let e1 = v1 - v0;
    let e2 = v2 - v0;
    let n = e1.cross(e2);
    let t = (v0 - o).dot(n) / dir.dot(n);
    let p = o + t * dir - v0;
    // Solve p = u e1 + v e2 in the least-squares sense (exact for points in the plane).
    let (d11, d12, d22) = (e1.dot(e1), e1.dot(e2), e2.dot(e2));
    let (p1, p2) = (p.dot(e1), p.dot(e2));
    let den = d11 * d22 - d12 * d12;
    let u = (d22 * p1 - d12 * p2) / den;
    let v = (d11 * p2 - d12 * p1) / den;
    (t, u, v)
}

/// A triangle and a ray aimed at a point of it, in a well-conditioned setup
/// (no sliver triangles, no grazing rays), at scales from 1e-3 to 1e3.
#[derive(Clone, Debug)]
struct TriangleCase {
    v: [Vec3; 3],
    origin: Vec3,
    dir: Vec3,
    /// Barycentrics `(u, v)` of the aimed-at point (weights of `v1`, `v2`).
    bary: (f32, f32),
}

fn triangle_case(inside: bool) -> impl Strategy<Value = TriangleCase> {
    (
        -3.0f32..3.0,
        vec3(4.0),
        [vec3(1.0), vec3(1.0), vec3(1.0)],
        (0.0f32..1.0, 0.0f32..1.0),
        unit_vec3(),
        (-1.3f32..1.0, -2.0f32..2.0),
        (0usize..3, 0.01f32..0.5),
    )
        .prop_map(
            move |(scale_exp, center, v, (a, b), from, (dist_exp, dir_len_exp), (side, out))| {
                let s = pow10(scale_exp);
                let v = v.map(|p| s * (center + p));
                let (a, b) = if a + b > 1.0 {
                    (1.0 - a, 1.0 - b)
                } else {
                    (a, b)
                };
                // Weights of v0, v1, v2; outside points push one weight below zero.
                let mut w = [1.0 - a - b, a, b];
                if !inside {
                    w[side] = -out;
                    let rest: f32 = w
                        .iter()
                        .enumerate()
                        .filter(|&(i, _)| i != side)
                        .map(|(_, x)| x)
                        .sum();
                    for (i, x) in w.iter_mut().enumerate() {
                        if i != side {
                            *x *= (1.0 + out) / rest.max(1e-6);
                        }
                    }
                }
                let target = w[0] * v[0] + w[1] * v[1] + w[2] * v[2];
                let origin = target + from * (s * pow10(dist_exp));
                let dir = (target - origin) * pow10(dir_len_exp);
                TriangleCase {
                    v,
                    origin,
                    dir,
                    bary: (w[1], w[2]),
                }
            },
        )
        .prop_filter("well-conditioned triangle and ray", |c| {
            let [v0, v1, v2] = c.v.map(d);
            let area2 = (v1 - v0).cross(v2 - v0).length();
            let longest = (v1 - v0)
                .length()
                .max((v2 - v1).length())
                .max((v0 - v2).length());
            let n = (v1 - v0).cross(v2 - v0).normalize();
            let cos = n.dot(d(c.dir).normalize()).abs();
            let w0 = 1.0 - c.bary.0 - c.bary.1;
            let margin = c.bary.0.min(c.bary.1).min(w0).abs();
            let extent = v0.length().max(v1.length()).max(v2.length());
            area2 > 0.2 * longest * longest && longest > 0.05 * extent && cos > 0.1 && margin > 1e-3
        })
}

/// The error bound of the watertight test for this setup, in barycentric units:
/// edge functions are products of vertex coordinates relative to the origin, so
/// their rounding error grows with the squared distance and shrinks with the
/// projected area.
fn barycentric_tolerance(c: &TriangleCase) -> f64 {
    let [v0, v1, v2] = c.v.map(d);
    let o = d(c.origin);
    let r = (v0 - o)
        .length()
        .max((v1 - o).length())
        .max((v2 - o).length());
    let area2 = (v1 - v0).cross(v2 - v0).length();
    let cos = (v1 - v0)
        .cross(v2 - v0)
        .normalize()
        .dot(d(c.dir).normalize())
        .abs();
    16.0 * EPS * r * r / (area2 * cos)
}

proptest! {
    #![proptest_config(config(2000))]

    /// A ray aimed at a point sampled inside a triangle hits it there: `t` and the
    /// barycentrics match the `f64` answer, for either winding, and the hit is
    /// reported only inside the open interval `(tmin, tmax)`.
    #[test]
    fn triangle_hit_at_sampled_point(c in triangle_case(true)) {
        let ray = Ray::new(c.origin, c.dir);
        let pre = RayPre::new(&ray);
        let [v0, v1, v2] = c.v;
        let (t_ref, u_ref, v_ref) = triangle_reference(d(c.origin), d(c.dir), d(v0), d(v1), d(v2));
        let tol_b = barycentric_tolerance(&c);
        // The generator keeps nearly all cases far below this; the rest say little.
        prop_assume!(tol_b < 1e-2);
        // The reference agrees with the sampled barycentrics (checks the reference itself).
        prop_assert!((u_ref - c.bary.0 as f64).abs() < 1e-4 && (v_ref - c.bary.1 as f64).abs() < 1e-4);

        let Some((t, u, v)) = ray_triangle(&pre, v0, v1, v2, 0.0, f32::INFINITY) else {
            return Err(TestCaseError::fail(format!("missed; reference t = {t_ref}, u = {u_ref}, v = {v_ref}")));
        };
        let r = c.v.iter().map(|p| (d(*p) - d(c.origin)).length()).fold(0.0, f64::max);
        let tol_t = (6.0 * tol_b + 4.0 * EPS) * r / (t_ref * d(c.dir).length());
        prop_assert!(((t as f64) - t_ref).abs() <= tol_t * t_ref, "t = {t}, reference {t_ref}, tolerance {tol_t}");
        prop_assert!(((u as f64) - u_ref).abs() <= tol_b, "u = {u}, reference {u_ref}, tolerance {tol_b}");
        prop_assert!(((v as f64) - v_ref).abs() <= tol_b, "v = {v}, reference {v_ref}, tolerance {tol_b}");

        // The other winding: same t, the two barycentrics swap.
        let (t2, u2, v2b) = ray_triangle(&pre, v0, v2, v1, 0.0, f32::INFINITY).expect("other winding hits");
        prop_assert!(((t2 - t) as f64).abs() <= tol_t * t_ref);
        prop_assert!(((u2 - v) as f64).abs() <= tol_b && ((v2b - u) as f64).abs() <= tol_b);

        // (tmin, tmax) is open at both ends, exactly.
        prop_assert_eq!(ray_triangle(&pre, v0, v1, v2, 0.0, t), None);
        prop_assert!(ray_triangle(&pre, v0, v1, v2, 0.0, t.next_up()).is_some());
        prop_assert_eq!(ray_triangle(&pre, v0, v1, v2, t, f32::INFINITY), None);
        prop_assert!(ray_triangle(&pre, v0, v1, v2, t.next_down(), f32::INFINITY).is_some());
    }

    /// A ray aimed at a point clearly outside a triangle (in its plane) misses it.
    #[test]
    fn triangle_miss_outside(c in triangle_case(false)) {
        let ray = Ray::new(c.origin, c.dir);
        let pre = RayPre::new(&ray);
        let [v0, v1, v2] = c.v;
        let out = -(c.bary.0.min(c.bary.1).min(1.0 - c.bary.0 - c.bary.1)) as f64;
        prop_assume!(out > 4.0 * barycentric_tolerance(&c));
        prop_assert_eq!(ray_triangle(&pre, v0, v1, v2, f32::NEG_INFINITY, f32::INFINITY), None);
        prop_assert_eq!(ray_triangle(&pre, v0, v2, v1, f32::NEG_INFINITY, f32::INFINITY), None);
    }
}

proptest! {
    #![proptest_config(config(1000))]

    /// A triangle behind the ray's origin is missed over `(0, inf)` in either
    /// winding, and one ahead is missed over `(-inf, 0)`; the reversed ray finds
    /// the triangle over `(-inf, 0)` at the negated distance, with the same
    /// barycentrics.
    #[test]
    fn triangle_behind_is_missed(c in triangle_case(true)) {
        prop_assume!(barycentric_tolerance(&c) < 1e-2);
        let tol_b = barycentric_tolerance(&c) as f32;
        let [v0, v1, v2] = c.v;
        let ahead = RayPre::new(&Ray::new(c.origin, c.dir));
        let back = RayPre::new(&Ray::new(c.origin, -c.dir));
        let (t, u, v) = ray_triangle(&ahead, v0, v1, v2, 0.0, f32::INFINITY).expect("the triangle ahead is hit");
        prop_assert_eq!(ray_triangle(&back, v0, v1, v2, 0.0, f32::INFINITY), None);
        prop_assert_eq!(ray_triangle(&back, v0, v2, v1, 0.0, f32::INFINITY), None);
        prop_assert_eq!(ray_triangle(&ahead, v0, v1, v2, f32::NEG_INFINITY, 0.0), None);
        let Some((tb, ub, vb)) = ray_triangle(&back, v0, v1, v2, f32::NEG_INFINITY, 0.0) else {
            return Err(TestCaseError::fail(format!("reversed ray missed over (-inf, 0); forward t = {t}")));
        };
        prop_assert!((tb + t).abs() <= 1e-6 * t, "reversed t = {tb}, forward t = {t}");
        prop_assert!((ub - u).abs() <= tol_b && (vb - v).abs() <= tol_b, "({ub}, {vb}) against ({u}, {v})");
    }
}

// ---------------------------------------------------------------------------
// Watertightness

/// A triangle mesh with an explicit list of interior points (shared vertices and
/// points on shared edges) that rays must not slip through, and the side it is
/// seen from.
#[derive(Clone, Debug)]
struct Mesh {
    positions: Vec<Vec3>,
    triangles: Vec<[u32; 3]>,
    /// Interior shared vertices (indices into `positions`).
    shared_vertices: Vec<u32>,
    /// Interior shared edges.
    shared_edges: Vec<[u32; 2]>,
    /// Unit normal of the mesh's base plane (heights along it are small).
    up: Vec3,
}

/// A heightfield grid of `nx * ny` cells, two triangles per cell split along a
/// random diagonal, random windings. `exact` grids use dyadic coordinates (a
/// vertex or an edge midpoint is then exactly representable) and stay axis-aligned;
/// the others are rotated and moved anywhere up to `offset`.
fn grid(exact: bool, offset: f32) -> impl Strategy<Value = Mesh> {
    (2usize..6, 2usize..6)
        .prop_flat_map(move |(nx, ny)| {
            let verts = (nx + 1) * (ny + 1);
            (
                Just((nx, ny)),
                prop::collection::vec(-0.2f32..0.2, verts),
                prop::collection::vec(any::<bool>(), nx * ny),
                prop::collection::vec(any::<bool>(), 2 * nx * ny),
                -2.0f32..2.0,
                rotation(),
                vec3(offset),
            )
        })
        .prop_map(
            move |((nx, ny), heights, diag, flip, scale_exp, rot, off)| {
                let mut positions = Vec::new();
                for j in 0..=ny {
                    for i in 0..=nx {
                        let h = heights[j * (nx + 1) + i];
                        let p = if exact {
                            // Multiples of 2^-6 on a grid of 1-unit cells: exact in f32.
                            Vec3::new(i as f32, j as f32, (h * 64.0).round() / 64.0)
                                + (off * 16.0).round() / 16.0
                        } else {
                            rot * (pow10(scale_exp) * Vec3::new(i as f32, j as f32, h)) + off
                        };
                        positions.push(p);
                    }
                }
                let id = |i: usize, j: usize| (j * (nx + 1) + i) as u32;
                let mut triangles = Vec::new();
                for j in 0..ny {
                    for i in 0..nx {
                        let (a, b, c, dd) =
                            (id(i, j), id(i + 1, j), id(i + 1, j + 1), id(i, j + 1));
                        let pair = if diag[j * nx + i] {
                            [[a, b, c], [a, c, dd]]
                        } else {
                            [[a, b, dd], [b, c, dd]]
                        };
                        for (k, mut t) in pair.into_iter().enumerate() {
                            if flip[2 * (j * nx + i) + k] {
                                t.swap(1, 2);
                            }
                            triangles.push(t);
                        }
                    }
                }
                let mut shared_vertices = Vec::new();
                for j in 1..ny {
                    for i in 1..nx {
                        shared_vertices.push(id(i, j));
                    }
                }
                // Interior edges: shared by two triangles.
                let mut count = std::collections::HashMap::new();
                for t in &triangles {
                    for k in 0..3 {
                        let (p, q) = (t[k], t[(k + 1) % 3]);
                        *count.entry((p.min(q), p.max(q))).or_insert(0) += 1;
                    }
                }
                let mut shared_edges: Vec<[u32; 2]> = count
                    .into_iter()
                    .filter(|&(_, n)| n == 2)
                    .map(|((p, q), _)| [p, q])
                    .collect();
                shared_edges.sort_unstable();
                let up = if exact { Vec3::Z } else { rot * Vec3::Z };
                Mesh {
                    positions,
                    triangles,
                    shared_vertices,
                    shared_edges,
                    up,
                }
            },
        )
}

/// A closed fan of 3..12 triangles around one vertex: every spoke is a shared edge
/// and the centre a shared vertex.
fn fan(offset: f32) -> impl Strategy<Value = Mesh> {
    (3usize..12)
        .prop_flat_map(move |n| {
            (
                // Wedges under 165 degrees (the fan covers its centre), heights small
                // against the narrowest wedge (20 degrees): no folds.
                prop::collection::vec((0.6f32..1.0, 0.3f32..3.0, -0.03f32..0.03), n),
                any::<bool>(),
                rotation(),
                vec3(offset),
                -2.0f32..2.0,
            )
        })
        .prop_map(|(spokes, reverse, rot, off, scale_exp)| {
            let s = pow10(scale_exp);
            // Angles: cumulative positive steps normalised to a full turn.
            let total: f32 = spokes.iter().map(|x| x.0).sum();
            let mut angle = 0.0f32;
            let mut positions = vec![off];
            for &(step, radius, h) in &spokes {
                angle += step / total * std::f32::consts::TAU;
                let local = s * Vec3::new(radius * angle.cos(), radius * angle.sin(), h * radius);
                positions.push(rot * local + off);
            }
            let n = spokes.len() as u32;
            let triangles = (0..n)
                .map(|i| {
                    let (a, b) = (1 + i, 1 + (i + 1) % n);
                    if reverse { [0, b, a] } else { [0, a, b] }
                })
                .collect();
            Mesh {
                positions,
                triangles,
                shared_vertices: vec![0],
                shared_edges: (1..=n).map(|i| [0, i]).collect(),
                up: rot * Vec3::Z,
            }
        })
}

/// Rays through the mesh's interior shared points: `(target selector, edge
/// parameter, direction within 35 degrees of the up axis or its opposite,
/// distance)`. Steep rays keep every triangle of the heightfield front- or
/// back-facing alike, so the projected mesh covers the target's neighbourhood.
#[derive(Clone, Debug)]
struct Aim {
    which: prop::sample::Index,
    vertex: bool,
    edge_t: f32,
    tilt: (f32, f32),
    below: bool,
    dist_exp: f32,
    axis_aligned: bool,
}

fn aims() -> impl Strategy<Value = Vec<Aim>> {
    prop::collection::vec(
        (
            any::<prop::sample::Index>(),
            any::<bool>(),
            0.01f32..0.99,
            (-0.57f32..0.57, -0.57f32..0.57),
            any::<bool>(),
            -1.0f32..2.0,
            prop::bool::weighted(0.2),
        )
            .prop_map(
                |(which, vertex, edge_t, tilt, below, dist_exp, axis_aligned)| Aim {
                    which,
                    vertex,
                    edge_t,
                    tilt,
                    below,
                    dist_exp,
                    axis_aligned,
                },
            ),
        16,
    )
}

impl Mesh {
    /// The ray for one aim: it passes through a shared vertex or a point of a
    /// shared edge. For exact grids the target and the direction are exactly
    /// representable, so the ray meets the edge or vertex in exact arithmetic too.
    fn ray(&self, aim: &Aim, exact: bool) -> Ray {
        let target = if aim.vertex || self.shared_edges.is_empty() {
            self.positions
                [self.shared_vertices[aim.which.index(self.shared_vertices.len())] as usize]
        } else {
            let [p, q] = self.shared_edges[aim.which.index(self.shared_edges.len())];
            let (p, q) = (self.positions[p as usize], self.positions[q as usize]);
            let t = if exact {
                (aim.edge_t * 64.0).round().clamp(1.0, 63.0) / 64.0
            } else {
                aim.edge_t
            };
            p + t * (q - p)
        };
        let (tx, ty) = if aim.axis_aligned {
            (0.0, 0.0)
        } else {
            aim.tilt
        };
        let side = if aim.below { -1.0 } else { 1.0 };
        let (offset, dir) = if exact {
            let q = |x: f32| (x * 16.0).round() / 16.0;
            let o = Vec3::new(q(tx), q(ty), side) * 2f32.powi(2 * aim.dist_exp.round() as i32);
            (o, -o)
        } else {
            // Any unit vector orthogonal-ish frame around `up`.
            let t1 = self.up.any_orthonormal_vector();
            let t2 = self.up.cross(t1);
            let o = (tx * t1 + ty * t2 + side * self.up) * pow10(aim.dist_exp);
            (o, -o)
        };
        let scale = self
            .positions
            .iter()
            .map(|p| (*p - self.positions[0]).length())
            .fold(0.0, f32::max)
            .max(1e-3);
        let (offset, dir) = if exact {
            (offset, dir)
        } else {
            (offset * scale, dir * scale)
        };
        Ray::new(target + offset, dir)
    }
}

fn check_watertight(mesh: &Mesh, aims: &[Aim], exact: bool) -> Result<(), TestCaseError> {
    let mut scene = prism_core::Scene::new();
    let m = scene.add_material(prism_core::Material::lambertian(Vec3::ONE));
    scene
        .add_mesh(&mesh.positions, &mesh.triangles, m)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let accel = Accel::build(&scene).map_err(|e| TestCaseError::fail(e.to_string()))?;
    for aim in aims {
        let ray = mesh.ray(aim, exact);
        let pre = RayPre::new(&ray);
        let raw_hits = mesh
            .triangles
            .iter()
            .filter(|t| {
                let [a, b, c] = t.map(|i| mesh.positions[i as usize]);
                ray_triangle(&pre, a, b, c, ray.tmin, ray.tmax).is_some()
            })
            .count();
        prop_assert!(
            raw_hits > 0,
            "ray {ray:?} slipped through the mesh (no triangle hit)"
        );
        let hit = accel.intersect(&ray);
        prop_assert!(
            hit.is_hit(),
            "ray {ray:?} slipped through the mesh's Accel ({raw_hits} triangles hit it)"
        );
        prop_assert!(
            accel.occluded(&ray),
            "ray {ray:?} not occluded by the mesh's Accel"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(200))]

    /// Rays exactly through shared vertices and shared edges of dyadic grids (the
    /// hard case: an edge function is exactly zero or decided by rounding) hit at
    /// least one triangle, both in the raw test and through the `Accel`.
    #[test]
    fn watertight_exact_grid(mesh in grid(true, 64.0), aims in aims()) {
        check_watertight(&mesh, &aims, true)?;
    }

    /// The same for rotated, scaled, moved heightfields.
    #[test]
    fn watertight_rotated_grid(mesh in grid(false, 100.0), aims in aims()) {
        check_watertight(&mesh, &aims, false)?;
    }

    /// The same for closed fans around one vertex (the shared vertex of up to 11
    /// triangles), including fans far from the origin.
    #[test]
    fn watertight_fan(mesh in fan(1000.0), aims in aims()) {
        check_watertight(&mesh, &aims, false)?;
    }
}

// ---------------------------------------------------------------------------
// Ray-sphere

/// A sphere and a ray: origin outside (possibly very far, relative to the radius)
/// or inside; the ray passes the centre at `aim` radii (`< 0.8`: must hit, `> 1.25`:
/// must miss), with any direction length and optional `(tmin, tmax)` limits.
#[derive(Clone, Debug)]
struct SphereCase {
    center: Vec3,
    radius: f32,
    origin: Vec3,
    dir: Vec3,
    tmin: f32,
    tmax: f32,
}

fn sphere_case() -> impl Strategy<Value = SphereCase> {
    (
        (vec3(100.0), -2.0f32..2.0),
        (unit_vec3(), 0.0f32..4.0, any::<bool>()),
        (vec3(1.0), unit_vec3()),
        -2.0f32..2.0,
        (0usize..4, 0.0f32..1.0, 0.0f32..1.0),
    )
        .prop_map(
            |(
                (center, r_exp),
                (from, dist_exp, inside),
                (aim, aim_far),
                len_exp,
                (limits, a, b),
            )| {
                let radius = pow10(r_exp);
                let center = center * radius.max(1.0);
                // Far spheres down to radius / distance = 1e-4.
                let origin = if inside {
                    center + 0.9 * radius * aim.clamp_length_max(1.0)
                } else {
                    center + from * (radius * pow10(0.05 + dist_exp))
                };
                // Aim at a point of the ball of radius 1.6 r, or at a plain direction when inside.
                let target = if inside {
                    center + radius * aim_far
                } else {
                    center + 1.6 * radius * aim.clamp_length_max(1.0)
                };
                let dir = (target - origin) * pow10(len_exp);
                let (tmin, tmax) = match limits {
                    0 => (0.0, f32::INFINITY),
                    // Limits around the interesting range (up to twice the far root).
                    _ => {
                        let scale = 2.0 * ((origin - center).length() + radius) / dir.length();
                        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
                        (
                            lo * scale,
                            if limits == 3 {
                                f32::INFINITY
                            } else {
                                hi * scale
                            },
                        )
                    }
                };
                SphereCase {
                    center,
                    radius,
                    origin,
                    dir,
                    tmin,
                    tmax,
                }
            },
        )
}

proptest! {
    #![proptest_config(config(4000))]

    /// `ray_sphere` agrees with the analytic answer computed in `f64`: it hits
    /// whenever the ray passes the centre within 0.8 radii, misses beyond 1.25
    /// radii, and returns the nearest root inside `(tmin, tmax)` to within a few
    /// ulps of the ray's scale; small spheres far away (radius / distance down to
    /// 1e-4, where the textbook discriminant `b^2 - ac` has no correct digit left)
    /// and origins inside the sphere included.
    #[test]
    fn sphere_matches_f64(c in sphere_case()) {
        let (o, dir, ctr, r) = (d(c.origin), d(c.dir), d(c.center), c.radius as f64);
        let f = o - ctr;
        let a = dir.dot(dir);
        let l = f - (f.dot(dir) / a) * dir;
        let pass = l.length() / r;
        prop_assume!(!(0.8..=1.25).contains(&pass));
        let got = ray_sphere(c.origin, c.dir, c.center, c.radius, c.tmin, c.tmax);
        if pass > 1.25 {
            prop_assert_eq!(got, None, "passes {} radii from the centre", pass);
            return Ok(());
        }
        let h = (r * r - l.dot(l)).sqrt() / a.sqrt();
        let mid = -f.dot(dir) / a;
        let roots = [mid - h, mid + h];
        let tol = 32.0 * EPS * (f.length() + r) / a.sqrt();
        let (tmin, tmax) = (c.tmin as f64, c.tmax as f64);
        // Skip cases where a root sits on a limit within the tolerance.
        prop_assume!(roots.iter().all(|t| (t - tmin).abs() > tol && (t - tmax).abs() > tol));
        let expected = roots.into_iter().find(|&t| t > tmin && t < tmax);
        match (got, expected) {
            (None, None) => {}
            (Some(t), Some(e)) => prop_assert!(((t as f64) - e).abs() <= tol, "t = {t}, expected {e}, tolerance {tol}"),
            (got, expected) => return Err(TestCaseError::fail(format!("got {got:?}, expected {expected:?}"))),
        }
    }
}

proptest! {
    #![proptest_config(config(2000))]

    /// A sphere whose centre lies behind an origin outside it is never hit over
    /// `(0, tmax)`. Over `(-inf, 0)` it is hit at the nearer (more negative) root of
    /// the `f64` answer when the line passes within 0.8 radii of the centre and
    /// missed beyond 1.25 radii; the reversed ray finds it ahead at the
    /// negated far root.
    #[test]
    fn sphere_behind_is_missed(
        (center, r_exp) in (vec3(100.0), -2.0f32..2.0),
        (from, side, dist_exp) in (unit_vec3(), unit_vec3(), 0.05f32..4.0),
        (pass, len_exp) in (0.0f32..2.0, -2.0f32..2.0),
        tmax in prop_oneof![Just(f32::INFINITY), 0.0f32..1e6],
    ) {
        let radius = pow10(r_exp);
        let origin = center + from * (radius * pow10(dist_exp));
        let perp = side - side.dot(from) * from;
        prop_assume!(perp.length() > 0.1);
        // Leaving the centre behind (f . dir = |f|^2 > 0), past a point `pass` radii aside.
        let dir = (origin - (center + pass * radius * perp.normalize())) * pow10(len_exp);
        prop_assert_eq!(ray_sphere(origin, dir, center, radius, 0.0, tmax), None);

        let (o, dd, ctr, r) = (d(origin), d(dir), d(center), radius as f64);
        let f = o - ctr;
        prop_assert!(f.length() > r && f.dot(dd) > 0.0, "the case: origin outside, centre behind");
        let a = dd.dot(dd);
        let l = f - (f.dot(dd) / a) * dd;
        let pass = l.length() / r;
        prop_assume!(!(0.8..=1.25).contains(&pass));
        let behind = ray_sphere(origin, dir, center, radius, f32::NEG_INFINITY, 0.0);
        let reversed = ray_sphere(origin, -dir, center, radius, 0.0, f32::INFINITY);
        if pass > 1.25 {
            prop_assert_eq!(behind, None, "passes {} radii from the centre", pass);
            prop_assert_eq!(reversed, None, "passes {} radii from the centre", pass);
            return Ok(());
        }
        let h = (r * r - l.dot(l)).sqrt() / a.sqrt();
        let mid = -f.dot(dd) / a;
        let tol = 32.0 * EPS * (f.length() + r) / a.sqrt();
        let Some(t) = behind else {
            return Err(TestCaseError::fail(format!("missed behind; roots {} and {}", mid - h, mid + h)));
        };
        prop_assert!((t as f64 - (mid - h)).abs() <= tol, "t = {t}, expected {}, tolerance {tol}", mid - h);
        let Some(t) = reversed else {
            return Err(TestCaseError::fail(format!("reversed ray missed; roots {} and {}", -(mid + h), -(mid - h))));
        };
        prop_assert!((t as f64 + (mid + h)).abs() <= tol, "t = {t}, expected {}, tolerance {tol}", -(mid + h));
    }
}

proptest! {
    #![proptest_config(config(4000))]

    /// `sphere_missed_early` never says missed where `ray_sphere` meets the
    /// sphere anywhere on the ray's line, and does say missed where the line
    /// passes it by more than twice the margin (in `f64`). Half the rays
    /// graze the silhouette, within 1e-4 radii either way.
    #[test]
    fn sphere_early_miss_never_drops_a_hit(
        c in sphere_case(),
        graze in prop_oneof![Just(None), (-1e-4f32..1e-4, unit_vec3()).prop_map(Some)],
    ) {
        let dir = match graze {
            None => c.dir,
            Some((g, side)) => {
                let to = c.center - c.origin;
                let perp = side - side.dot(to.normalize()) * to.normalize();
                prop_assume!(perp.length() > 0.1 && to.length() > c.radius * 1.01);
                (c.center + perp.normalize() * (c.radius * (1.0 + g))) - c.origin
            }
        };
        let early = sphere_missed_early(c.origin, dir, c.center, c.radius);
        let line = ray_sphere(c.origin, dir, c.center, c.radius, -f32::MAX, f32::INFINITY);
        if early {
            prop_assert_eq!(line, None, "said missed early, but ray_sphere hits");
        }
        let (o, dd, ctr, r) = (d(c.origin), d(dir), d(c.center), c.radius as f64);
        let f = o - ctr;
        let a = dd.dot(dd);
        let b = f.dot(dd);
        let aff = a * f.dot(f);
        if aff - b * b - a * r * r > 2.0 * SPHERE_EARLY_MISS_MARGIN as f64 * aff {
            prop_assert!(early, "passes clearly outside, but not said missed early");
        }
    }
}

/// `ray_sphere` as it was before it returned early on `sphere_left_behind`:
/// the same operations in the same order, for the early exit to be checked against.
fn ray_sphere_without_early_exit(
    origin: Vec3,
    dir: Vec3,
    center: Vec3,
    radius: f32,
    tmin: f32,
    tmax: f32,
) -> Option<f32> {
    let f = origin - center;
    let a = dir.dot(dir);
    let b = f.dot(dir);
    let l = f - (b / a) * dir;
    let r2 = radius * radius;
    let disc = a * (r2 - l.dot(l));
    if disc < 0.0 {
        return None;
    }
    let c = f.dot(f) - r2;
    let q = -(b + disc.sqrt().copysign(b));
    let (ta, tb) = (c / q, q / a);
    let (t0, t1) = (ta.min(tb), ta.max(tb));
    if t0 > tmin && t0 < tmax {
        Some(t0)
    } else if t1 > tmin && t1 < tmax {
        Some(t1)
    } else {
        None
    }
}

proptest! {
    #![proptest_config(config(6000))]

    /// `sphere_left_behind` never says missed where the full sphere test hits
    /// over `(tmin, tmax)`, so `ray_sphere`, which returns early on it, gives
    /// the full test's answer. Origins on the sphere (rounded either side of it, as
    /// spawned rays' are) and up to 0.1 radii inside or outside it, every
    /// direction, and `tmin` at zero, at spawn-like offsets and around `|c| / b`,
    /// the distance its bound compares `tmin` with. It must also say missed for
    /// every ray leaving clearly from outside (whatever `tmin`), and, for some
    /// rays from just inside, decide by its bound (so the test is not vacuous).
    #[test]
    fn sphere_left_behind_never_drops_a_hit(
        (center, r_exp) in (vec3(100.0), -3.0f32..3.0),
        (normal, dir_unit) in (unit_vec3(), unit_vec3()),
        (offset_exp, offset_sign) in (-8.0f32..-1.0, prop_oneof![Just(-1.0f32), Just(0.0), Just(1.0)]),
        len_exp in -2.0f32..2.0,
        (tmin_kind, tmin_scale) in (0u32..4, 0.25f32..4.0),
        tmax in prop_oneof![Just(f32::INFINITY), 0.0f32..1e6],
    ) {
        let radius = pow10(r_exp);
        let origin = center + normal * (radius * (1.0 + offset_sign * pow10(offset_exp)));
        let dir = dir_unit * pow10(len_exp);
        let f = origin - center;
        let (b, c) = (f.dot(dir), f.dot(f) - radius * radius);
        let tmin = match tmin_kind {
            0 => 0.0,
            1 => tmin_scale * (c / b).abs(),
            2 => tmin_scale * 1e-4 * (1.0 + origin.abs().max_element()),
            _ => tmin_scale * 1e-6 * (1.0 + radius) / dir.length(),
        };
        prop_assume!(tmin.is_finite());
        let said = sphere_left_behind(origin, dir, center, radius, tmin);
        let full = ray_sphere_without_early_exit(origin, dir, center, radius, tmin, tmax);
        if said {
            prop_assert_eq!(
                full,
                None,
                "said left behind, but the full test hits (b {}, c {}, tmin {})", b, c, tmin
            );
        }
        prop_assert_eq!(ray_sphere(origin, dir, center, radius, tmin, tmax), full);
        // In f64: clearly outside and clearly moving away must be said.
        let (o, dd, ctr, r) = (d(origin), d(dir), d(center), radius as f64);
        let fd = o - ctr;
        let (b64, c64) = (fd.dot(dd), fd.dot(fd) - r * r);
        if c64 > 1e-5 * fd.dot(fd) && b64 > 1e-5 * fd.length() * dd.length() {
            prop_assert!(said, "leaves from outside, but not said left behind");
        }
        // From just inside, moving away, with tmin four times |c| / b: said by the bound.
        if c < 0.0 && b > 0.0 && tmin_kind == 1 && tmin_scale > 1.5 / SPHERE_LEFT_BEHIND_SCALE {
            prop_assert!(said, "within tmin of the surface, but not said left behind");
        }
    }
}

/// Regression-style spot checks of the stable form, with exact answers.
#[test]
fn sphere_exact_cases() {
    // Head-on, unit direction: t = distance - radius.
    assert_eq!(
        ray_sphere(
            Vec3::ZERO,
            Vec3::NEG_Z,
            Vec3::new(0.0, 0.0, -10.0),
            2.0,
            0.0,
            f32::INFINITY
        ),
        Some(8.0)
    );
    // Inside: exits at the far side.
    assert_eq!(
        ray_sphere(Vec3::ZERO, Vec3::X, Vec3::ZERO, 3.0, 0.0, f32::INFINITY),
        Some(3.0)
    );
    // Behind the origin: no hit for t > 0.
    assert_eq!(
        ray_sphere(
            Vec3::ZERO,
            Vec3::X,
            Vec3::new(-5.0, 0.0, 0.0),
            1.0,
            0.0,
            f32::INFINITY
        ),
        None
    );
    // Non-unit direction: t in units of dir.
    assert_eq!(
        ray_sphere(
            Vec3::ZERO,
            Vec3::new(0.0, 4.0, 0.0),
            Vec3::new(0.0, 10.0, 0.0),
            2.0,
            0.0,
            f32::INFINITY
        ),
        Some(2.0)
    );
    // tmin past the near root gives the far root.
    assert_eq!(
        ray_sphere(
            Vec3::ZERO,
            Vec3::NEG_Z,
            Vec3::new(0.0, 0.0, -10.0),
            2.0,
            9.0,
            f32::INFINITY
        ),
        Some(12.0)
    );
    // A 1 mm sphere 10 km away, hit head-on.
    let t = ray_sphere(
        Vec3::ZERO,
        Vec3::X,
        Vec3::new(1e4, 0.0, 0.0),
        1e-3,
        0.0,
        f32::INFINITY,
    )
    .expect("hit");
    assert!((t - (1e4 - 1e-3)).abs() <= 1e-3, "{t}");
}

// ---------------------------------------------------------------------------
// Slab test

/// A box and a ray aimed at a point of the box; dyadic coordinates make the
/// point's `t` exactly 1, so conservativeness is checked without slack.
#[derive(Clone, Debug)]
struct BoxCase {
    lo: Vec3,
    hi: Vec3,
    point: Vec3,
    origin: Vec3,
    dir: Vec3,
}

/// `x` rounded to a multiple of `2^-k`.
fn dyadic(x: f32, k: i32) -> f32 {
    let s = 2f32.powi(k);
    (x * s).round() / s
}

fn box_case() -> impl Strategy<Value = BoxCase> {
    (
        vec3(1.0),
        vec3(1.0),
        vec3(1.0),
        [0usize..3, 0usize..3, 0usize..3],
        vec3(1.0),
        -6i32..4,
        0i32..13,
        prop::array::uniform3(prop::bool::weighted(0.15)),
    )
        .prop_map(|(center, half, p, snap, from, dist_exp, off_exp, zero)| {
            // Box and origin: multiples of 2^-8, at most 2^13 from the world origin;
            // differences then stay exact in f32.
            let off = (1u32 << off_exp) as f32 * center.signum();
            let c = (center * 4.0).map(|x| dyadic(x, 8)) + off;
            let mut h = (half.abs() * 2.0).map(|x| dyadic(x, 8));
            let mut snap = snap;
            for k in 0..3 {
                // A zero direction component with the origin on a face plane is
                // a convention, not a property (see `slab_is_conservative`).
                if zero[k] {
                    snap[k] = 0;
                    h[k] = h[k].max(2f32.powi(-6));
                }
            }
            let (lo, hi) = (c - h, c + h);
            // The point: each coordinate inside, or snapped to the low or high face.
            let mut q = Vec3::ZERO;
            for k in 0..3 {
                q[k] = match snap[k] {
                    0 => {
                        dyadic(lo[k] + (hi[k] - lo[k]) * (0.5 + 0.5 * p[k]), 8).clamp(lo[k], hi[k])
                    }
                    1 => lo[k],
                    _ => hi[k],
                };
            }
            let mut o = from * 2f32.powi(dist_exp);
            for k in 0..3 {
                if zero[k] {
                    o[k] = 0.0;
                }
            }
            let o = o.map(|x| dyadic(x, 8));
            let o = if o == Vec3::ZERO {
                Vec3::new(0.0, 0.0, 2f32.powi(-8))
            } else {
                o
            };
            BoxCase {
                lo,
                hi,
                point: q,
                origin: q + o,
                dir: -o,
            }
        })
}

proptest! {
    #![proptest_config(config(4000))]

    /// The slab test never misses a box when the ray reaches a point of the box
    /// (faces, edges and corners included) within `(tmin, tmax)`, and its entry
    /// distance is not past that point (to an ulp): the BVH can then never cull a box whose
    /// primitive is hit. Includes rays parallel to a face (zero direction
    /// components) and boxes up to 2^13 away from the world origin.
    #[test]
    fn slab_is_conservative(c in box_case(), (tmin, tmax) in (0.0f32..0.999, 1.001f32..4.0)) {
        // A ray parallel to a slab and lying exactly in one of its two planes is
        // inside for one plane and outside for the other, by the sign of the zero
        // direction component (as in Embree): a measure-zero convention, left out.
        prop_assume!((0..3).all(|k| c.dir[k] != 0.0 || (c.origin[k] != c.lo[k] && c.origin[k] != c.hi[k])));
        let ray = Ray::segment(c.origin, c.dir, tmin, tmax);
        let pre = RayPre::new(&ray);
        // The point is at t = 1 exactly (dyadic arithmetic).
        prop_assert_eq!(c.origin + c.dir, c.point);
        let t = ray_aabb(&pre, c.lo, c.hi, tmin, tmax);
        prop_assert!(t <= 1.0 + 2.0 * f32::EPSILON, "box {:?}..{:?} entered at {} (point at t = 1)", c.lo, c.hi, t);
        prop_assert!(t >= tmin);
    }

    /// The slab test misses a box the ray passes at a distance, and the box of an
    /// absent BVH child (`+inf` corners) for every ray.
    #[test]
    fn slab_misses(lo in vec3(10.0), size in vec3(5.0), origin in vec3(20.0), dir in unit_vec3(), gap in 0.01f32..1.0) {
        let hi = lo + size.abs();
        let ray = Ray::new(origin, dir);
        let pre = RayPre::new(&ray);
        prop_assert_eq!(ray_aabb(&pre, Vec3::INFINITY, Vec3::INFINITY, 0.0, f32::INFINITY), f32::INFINITY);
        // In f64: the slab interval of the box grown by `gap` on every side. Where
        // it is empty the ray passes the box at least `gap` away; demand a miss.
        let (o, dd) = (d(origin), d(dir));
        let g = DVec3::new(gap as f64, gap as f64, gap as f64);
        let (l, h) = (d(lo) - g, d(hi) + g);
        let mut enter = 0.0f64;
        let mut exit = f64::INFINITY;
        for k in 0..3 {
            if dd[k] == 0.0 {
                if o[k] < l[k] || o[k] > h[k] { exit = -1.0; }
                continue;
            }
            let (a, b) = ((l[k] - o[k]) / dd[k], (h[k] - o[k]) / dd[k]);
            enter = enter.max(a.min(b));
            exit = exit.min(a.max(b));
        }
        // The grown box is missed, so the box itself is missed by at least `gap`.
        prop_assume!(enter > exit);
        prop_assert_eq!(ray_aabb(&pre, lo, hi, 0.0, f32::INFINITY), f32::INFINITY);
    }
}

proptest! {
    #![proptest_config(config(4000))]

    /// `ray_aabb_rows` (the form traversal runs, on a node's 16-byte rows) gives
    /// `ray_aabb`'s result bit for bit, whatever the rows' fourth word holds:
    /// on the conservative cases, on boxes anywhere, and on absent children.
    #[test]
    fn slab_rows_equal_slab(
        c in box_case(),
        lo in vec3(100.0),
        size in vec3(50.0),
        origin in vec3(200.0),
        dir in unit_vec3(),
        (w_lo, w_hi) in (any::<u32>(), any::<u32>()),
        (tmin, tmax) in (0.0f32..0.999, prop_oneof![1.001f32..400.0, Just(f32::INFINITY)]),
    ) {
        let hi = lo + size.abs();
        let row = |v: Vec3, w: u32| [v.x, v.y, v.z, f32::from_bits(w)];
        for (lo, hi, origin, dir) in [
            (c.lo, c.hi, c.origin, c.dir),
            (lo, hi, origin, dir),
            (Vec3::INFINITY, Vec3::INFINITY, origin, dir),
        ] {
            let pre = RayPre::new(&Ray::segment(origin, dir, tmin, tmax));
            let want = ray_aabb(&pre, lo, hi, tmin, tmax);
            let got = ray_aabb_rows(&pre, &row(lo, w_lo), &row(hi, w_hi), tmin, tmax);
            prop_assert_eq!(got.to_bits(), want.to_bits(), "box {:?}..{:?}", lo, hi);
        }
    }

    /// `ray_primitive` answers as the sphere or triangle test of the primitive's
    /// kind: the same hit or miss, the same `t`, `u`, `v` bits.
    #[test]
    fn ray_primitive_is_the_kind_test(
        origin in vec3(10.0),
        dir in unit_vec3(),
        (v0, v1, v2) in (vec3(5.0), vec3(5.0), vec3(5.0)),
        radius in 0.01f32..5.0,
        id in any::<u32>(),
        (tmin, tmax) in (0.0f32..1.0, prop_oneof![1.0f32..50.0, Just(f32::INFINITY)]),
    ) {
        let ray = Ray::segment(origin, dir, tmin, tmax);
        let pre = RayPre::new(&ray);
        let bits = |h: Option<(f32, f32, f32)>| h.map(|(t, u, v)| [t.to_bits(), u.to_bits(), v.to_bits()]);
        let sphere = Primitive::sphere(id, v0.into(), radius);
        let want = ray_sphere(origin, dir, v0, radius, tmin, tmax).map(|t| (t, 0.0, 0.0));
        prop_assert_eq!(bits(ray_primitive(&pre, &sphere, tmin, tmax)), bits(want));
        let triangle = Primitive::triangle(id, v0.into(), v1.into(), v2.into());
        let want = ray_triangle(&pre, v0, v1, v2, tmin, tmax);
        prop_assert_eq!(bits(ray_primitive(&pre, &triangle, tmin, tmax)), bits(want));
    }
}

/// A direction of any length with some components `+0` or `-0`, never all zero.
fn direction_with_zeros() -> impl Strategy<Value = Vec3> {
    (
        unit_vec3(),
        -2.0f32..2.0,
        prop::array::uniform3(prop::bool::weighted(0.15)),
        any::<bool>(),
    )
        .prop_map(|(dir, len_exp, zero, negative)| {
            let mut dir = dir * pow10(len_exp);
            for k in 0..3 {
                if zero[k] {
                    dir[k] = if negative { -0.0 } else { 0.0 };
                }
            }
            if dir == Vec3::ZERO { Vec3::X } else { dir }
        })
}

/// `2 gamma(3)` of Ize's bound: the relative rounding error of a slab distance, doubled.
fn two_gamma3() -> f64 {
    let u = 2f64.powi(-24);
    2.0 * 3.0 * u / (1.0 - 3.0 * u)
}

proptest! {
    #![proptest_config(config(3000))]

    /// `widen_exit` moves an exit distance towards `+inf` by at least the
    /// rounding margin `2 gamma(3)` and at most `1e-6` relative, on both sides of
    /// zero (the negative side shrinks towards 0; the largest floats reach
    /// +inf); zeros and infinities stay, NaN stays NaN, and subnormals never
    /// move inwards.
    #[test]
    fn widen_exit_moves_outwards(t in prop_oneof![
        4 => -1e6f32..1e6,
        2 => any::<f32>(),
        1 => prop::sample::select(vec![0.0f32, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::MAX, -f32::MAX, f32::MIN_POSITIVE, -f32::MIN_POSITIVE]),
    ]) {
        let w = widen_exit(t);
        if t.is_nan() {
            prop_assert!(w.is_nan());
            return Ok(());
        }
        if t == 0.0 || t.is_infinite() {
            prop_assert_eq!(w.to_bits(), t.to_bits());
            return Ok(());
        }
        prop_assert!(w >= t, "widen_exit({t}) = {w} moved inwards");
        if t.abs() >= f32::MIN_POSITIVE {
            let (t64, w64) = (t as f64, w as f64);
            prop_assert!(w64 - t64 >= two_gamma3() * t64.abs(), "widen_exit({t}) = {w}: less than 2 gamma(3)");
            // (The largest floats widen to +inf: outwards, and still an exit.)
            prop_assert!(w.is_infinite() || w64 - t64 <= 1e-6 * t64.abs(), "widen_exit({t}) = {w}: more than 1e-6");
        }
    }

    /// `RayPre`: `kz` is the dominant axis, `(kx, ky, kz)` a permutation that is
    /// even exactly when `dir[kz] >= 0` (winding kept), `perm` is `2 kz +
    /// swapped`, the shear constants are the ratios they name, and `inv_dir` is
    /// finite with the sign of `dir` (zeros included), `1/dir` wherever `|dir|`
    /// reaches `MIN_DIR_COMPONENT`. The triangle test run with the axes of
    /// `(kx, ky, kz)` fixed at compile time gives `ray_triangle`'s bits.
    #[test]
    fn ray_pre_invariants(origin in vec3(100.0), dir in direction_with_zeros(), (v0, v1, v2) in (vec3(50.0), vec3(50.0), vec3(50.0))) {
        let ray = Ray::new(origin, dir);
        let pre = RayPre::new(&ray);
        prop_assert_eq!(pre.origin, origin);
        prop_assert_eq!(pre.dir, dir);
        prop_assert_eq!(Vec3::from(pre.origin_a), pre.origin);
        prop_assert_eq!(Vec3::from(pre.inv_dir_a).to_array().map(f32::to_bits), pre.inv_dir.to_array().map(f32::to_bits));
        let (kx, ky, kz) = (pre.kx, pre.ky, pre.kz);
        let mut axes = [kx, ky, kz];
        axes.sort_unstable();
        prop_assert_eq!(axes, [0, 1, 2]);
        for k in 0..3 {
            prop_assert!(dir[kz].abs() >= dir[k].abs(), "kz = {kz} is not dominant in {dir:?}");
        }
        let even = [(0, 1, 2), (1, 2, 0), (2, 0, 1)].contains(&(kx, ky, kz));
        let swapped = dir[kz] < 0.0;
        prop_assert_eq!(even, !swapped, "axes ({}, {}, {}) for {:?}", kx, ky, kz, dir);
        prop_assert_eq!(pre.perm as usize, 2 * kz + swapped as usize);
        let close = |a: f32, b: f32| (a - b).abs() <= 1e-6 * a.abs().max(b.abs());
        prop_assert!(close(pre.shear.x * dir[kz], dir[kx]) && close(pre.shear.y * dir[kz], dir[ky]) && close(pre.shear.z * dir[kz], 1.0), "shear {:?}", pre.shear);
        for k in 0..3 {
            let inv = pre.inv_dir[k];
            prop_assert!(inv.is_finite() && inv.is_sign_negative() == dir[k].is_sign_negative(), "inv_dir[{k}] = {inv} for {}", dir[k]);
            if dir[k].abs() >= MIN_DIR_COMPONENT {
                prop_assert!(close(inv * dir[k], 1.0), "inv_dir[{k}] = {inv} for {}", dir[k]);
            } else {
                prop_assert_eq!(inv.abs(), 1.0 / MIN_DIR_COMPONENT);
            }
        }
        let (a, b, c) = (v0.into(), v1.into(), v2.into());
        let (tmin, tmax) = (0.0, f32::INFINITY);
        let fixed = match (kx, ky, kz) {
            (1, 2, 0) => ray_triangle_axes::<1, 2, 0>(&pre, a, b, c, tmin, tmax),
            (2, 1, 0) => ray_triangle_axes::<2, 1, 0>(&pre, a, b, c, tmin, tmax),
            (2, 0, 1) => ray_triangle_axes::<2, 0, 1>(&pre, a, b, c, tmin, tmax),
            (0, 2, 1) => ray_triangle_axes::<0, 2, 1>(&pre, a, b, c, tmin, tmax),
            (0, 1, 2) => ray_triangle_axes::<0, 1, 2>(&pre, a, b, c, tmin, tmax),
            _ => ray_triangle_axes::<1, 0, 2>(&pre, a, b, c, tmin, tmax),
        };
        let bits = |h: Option<(f32, f32, f32)>| h.map(|(t, u, v)| [t.to_bits(), u.to_bits(), v.to_bits()]);
        prop_assert_eq!(bits(ray_triangle(&pre, v0, v1, v2, tmin, tmax)), bits(fixed));
    }

    /// The slab test's entry distance agrees with an `f64` evaluation of the
    /// slabs clipped to `(tmin, tmax)`: a hit at `max(tmin, entry)` whenever that
    /// interval is clearly non-empty, never before `tmin` nor past `tmax`
    /// (widened), and a miss whenever it is clearly empty. Rays are aimed at
    /// points in or near the box, with limits placed around the aimed point:
    /// boxes behind the origin, beyond `tmax` or beside the ray, flat boxes,
    /// negative `tmin`, and directions with zero components.
    #[test]
    fn slab_entry_matches_f64(
        (lo, size, flat) in (vec3(10.0), vec3(5.0), prop::array::uniform3(prop::bool::weighted(0.1))),
        (origin, aim) in (vec3(20.0), vec3(1.4)),
        (len_exp, zero, negative) in (-2.0f32..2.0, prop::array::uniform3(prop::bool::weighted(0.1)), any::<bool>()),
        (tmin, span) in (prop_oneof![Just(0.0f32), -1.5f32..1.5], prop_oneof![Just(f32::INFINITY), 0.0f32..3.0]),
    ) {
        let mut hi = lo + size.abs();
        for k in 0..3 {
            if flat[k] {
                hi[k] = lo[k];
            }
        }
        // Aimed at a point of the box grown by 40%: the point is at t = 1 / len.
        let target = 0.5 * (lo + hi) + 0.5 * (hi - lo) * aim;
        let len = pow10(len_exp);
        let mut dir = (target - origin) * len;
        for k in 0..3 {
            if zero[k] {
                dir[k] = if negative { -0.0 } else { 0.0 };
            }
        }
        prop_assume!(dir != Vec3::ZERO);
        let (tmin, tmax) = (tmin / len, (tmin + span) / len);
        // The face-plane convention of MIN_DIR_COMPONENT is left out.
        prop_assume!((0..3).all(|k| dir[k] != 0.0 || (origin[k] != lo[k] && origin[k] != hi[k])));
        let pre = RayPre::new(&Ray::segment(origin, dir, tmin, tmax));
        let got = ray_aabb(&pre, lo, hi, tmin, tmax);

        let (o, dd, l, h) = (d(origin), d(dir), d(lo), d(hi));
        let (mut enter, mut exit) = (tmin as f64, tmax as f64);
        for k in 0..3 {
            if dd[k] == 0.0 {
                if o[k] < l[k] || o[k] > h[k] {
                    exit = f64::NEG_INFINITY;
                }
                continue;
            }
            let (a, b) = ((l[k] - o[k]) / dd[k], (h[k] - o[k]) / dd[k]);
            enter = enter.max(a.min(b));
            exit = exit.min(a.max(b));
        }
        let scale = enter.abs().max(if exit.is_finite() { exit.abs() } else { 0.0 });
        let tol = 1e-5 * scale + 1e-30;
        if enter < exit - tol {
            prop_assert!(got.is_finite(), "missed; f64 interval ({enter}, {exit})");
            prop_assert!((got as f64 - enter).abs() <= tol, "entered at {got}, f64 {enter}");
            prop_assert!(got >= tmin && got <= widen_exit(tmax), "entered at {got}, outside ({tmin}, {tmax})");
        } else if enter > exit + tol {
            prop_assert_eq!(got, f32::INFINITY, "f64 interval ({}, {}) is empty", enter, exit);
        }
    }

    /// GPU traversals read the octant copy of a node (`gpu::octant_copies`) that
    /// `gpu::octant_of(inv_dir)` picks, and take its `lo` row as the near planes:
    /// for any box and any ray (zero and negative-zero components included) the
    /// near and far distances are `ray_aabb`'s `min` and `max`, and the entry
    /// and verdict its own, bit for bit; an absent child stays missed.
    #[test]
    fn octant_copy_near_planes_equal_slab(
        lo in vec3(100.0),
        size in vec3(50.0),
        origin in vec3(200.0),
        dir in direction_with_zeros(),
        (tmin, tmax) in (-10.0f32..1.0, prop_oneof![1.0f32..400.0, Just(f32::INFINITY)]),
    ) {
        let hi = lo + size.abs();
        let row = |v: Vec3, w: u32| [v.x, v.y, v.z, f32::from_bits(w)];
        let node = BvhNode {
            left_lo: row(lo, 0),
            left_hi: row(hi, 1),
            right_lo: row(Vec3::INFINITY, EMPTY_CHILD),
            right_hi: row(Vec3::INFINITY, 0),
        };
        let copies = octant_copies(&[node]).expect("one node");
        let pre = RayPre::new(&Ray::segment(origin, dir, tmin, tmax));
        let copy = copies[octant_of(pre.inv_dir.to_array())];
        let v = |r: [f32; 4]| Vec3::new(r[0], r[1], r[2]);
        for (near, far, lo, hi) in [
            (copy.left_lo, copy.left_hi, lo, hi),
            (copy.right_lo, copy.right_hi, Vec3::INFINITY, Vec3::INFINITY),
        ] {
            let (t0, t1) = ((lo - origin) * pre.inv_dir, (hi - origin) * pre.inv_dir);
            let tn = (v(near) - origin) * pre.inv_dir;
            let tf = (v(far) - origin) * pre.inv_dir;
            prop_assert_eq!(tn.to_array().map(f32::to_bits), t0.min(t1).to_array().map(f32::to_bits), "near planes");
            prop_assert_eq!(tf.to_array().map(f32::to_bits), t0.max(t1).to_array().map(f32::to_bits), "far planes");
            let enter = tn.max_element().max(tmin);
            let exit = widen_exit(tf.min_element().min(tmax));
            let octant = if enter <= exit { enter } else { f32::INFINITY };
            prop_assert_eq!(octant.to_bits(), ray_aabb(&pre, lo, hi, tmin, tmax).to_bits(), "box {:?}..{:?}", lo, hi);
        }
        prop_assert_eq!(ray_aabb(&pre, Vec3::INFINITY, Vec3::INFINITY, tmin, tmax), f32::INFINITY);
    }
}

/// `AgreementCounts::compare` counts every ray: an answer or a reference entry
/// that is missing is a mismatch, so a short or empty answer cannot pass.
#[test]
fn agreement_counts_every_ray() {
    let rays = [Ray::new(Vec3::ZERO, Vec3::Z), Ray::new(Vec3::ONE, Vec3::X)];
    let hit = |t: f32, prim: u32| Hit::new(t, 0.0, 0.0, prim, 0);
    let reference = [(2.0, 7), (f32::INFINITY, Hit::NO_PRIM)];
    let hits = [hit(2.0, 7), Hit::MISS];
    let all = AgreementCounts::compare(&rays, &hits, &reference);
    assert_eq!((all.total, all.matches, all.mismatches), (2, 2, 0));
    assert!(all.passed());
    // A hit where the reference misses is a mismatch.
    let wrong = [hit(2.0, 7), hit(1.0 + t_floor(&rays[1]) * 100.0, 3)];
    let c = AgreementCounts::compare(&rays, &wrong, &reference);
    assert_eq!((c.mismatches, c.first_mismatch), (1, Some(1)));
    // Against the reference hit (2.0, prim 7): another primitive at a clearly
    // different distance is a mismatch, at the same distance a tie.
    let c = AgreementCounts::compare(&rays, &[hit(3.0, 3), Hit::MISS], &reference);
    assert_eq!((c.mismatches, c.ties, c.first_mismatch), (1, 0, Some(0)));
    let c = AgreementCounts::compare(&rays, &[hit(2.0, 3), Hit::MISS], &reference);
    assert_eq!((c.matches, c.ties, c.mismatches), (1, 1, 0));
    for (hits, reference) in [
        (&hits[..1], &reference[..]),
        (&hits[..], &reference[..1]),
        (&[][..], &[][..]),
    ] {
        let c = AgreementCounts::compare(&rays, hits, reference);
        assert_eq!(c.total, 2);
        assert!(
            !c.passed(),
            "{} hits, {} references: {c:?}",
            hits.len(),
            reference.len()
        );
    }
}
