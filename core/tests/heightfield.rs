//! Heightfields against the same columns written as explicit box faces (two
//! triangles a face, [`Heightfield::column_faces`]) traced by core's
//! watertight triangle path: random small height maps (empty columns, tall
//! isolated ones, equal neighbours) and rays of every awkward kind (along the
//! axes, through cell edges and corners, grazing the tops, starting inside a
//! column, from below the ground). The same `t` within 1e-4 relative, the same
//! cell and face, except where two faces lie within that tolerance along the
//! ray: a tie, counted, and accepted only where the walk's face really lies on
//! the ray there.
//!
//! Also: a two-level scene of an instanced heightfield against the same
//! instances of the triangles and against brute force over the instances, and
//! the shared city height map (../shared/scenes/heightfield/city512.png) with
//! the city's camera against its triangles.

mod common;

use common::config;
use glam::{Affine3A, Quat, Vec3};
use prism_core::camera::camera_ray;
use prism_core::heightfield::{FACE_BOTTOM, FaceSet, Heightfield, face_normal, ray_heightfield};
use prism_core::intersect::{RayPre, ray_triangle};
use prism_core::reference::{t_close, t_floor};
use prism_core::rng::Pcg;
use prism_core::two_level::object_ray;
use prism_core::{Accel, Camera, Geometry, Hit, Instance, Material, Ray, Scene};
use proptest::prelude::*;
use std::path::PathBuf;

/// How a heightfield's columns are traced as triangles: each one tested
/// (the watertight test alone), or through a tree (for the city's millions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reference {
    EachTriangle,
    Tree,
}

/// A heightfield traced two ways: its walk, and its columns as triangles.
struct Pair {
    hf: Heightfield,
    walk: Accel,
    tris: Vec<[Vec3; 3]>,
    tree: Option<Accel>,
    /// `(cell, face)` of each triangle, by index.
    names: Vec<(u32, u32)>,
}

/// The triangles of `hf`'s faces `set`, two a quad, and each one's `(cell, face)`.
fn triangles(hf: &Heightfield, set: FaceSet) -> (Vec<[Vec3; 3]>, Vec<(u32, u32)>) {
    let mesh = hf.column_mesh(set, true);
    let corner = |i: u32| mesh.positions[i as usize];
    let tris = mesh
        .triangles
        .iter()
        .map(|t| [corner(t[0]), corner(t[1]), corner(t[2])])
        .collect();
    (tris, mesh.names)
}

fn pair(hf: Heightfield, set: FaceSet, reference: Reference) -> Pair {
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
    scene.add_heightfield(hf.clone(), m);
    let walk = Accel::build(&scene).expect("a valid heightfield scene");
    let (tris, names) = triangles(&hf, set);
    let tree = (reference == Reference::Tree).then(|| {
        let mut scene = Scene::new();
        let m = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
        for [a, b, c] in &tris {
            scene.add_triangle(*a, *b, *c, m);
        }
        Accel::build(&scene).expect("a valid triangle scene")
    });
    Pair {
        hf,
        walk,
        tris,
        tree,
        names,
    }
}

impl Pair {
    /// The triangles' closest hit: `(t, index)`, the first of equal `t`.
    fn reference(&self, ray: &Ray) -> Option<(f32, usize)> {
        if let Some(tree) = &self.tree {
            let h = tree.intersect(ray);
            return h.is_hit().then_some((h.t, h.prim as usize));
        }
        let pre = RayPre::new(ray);
        let mut best: Option<(f32, usize)> = None;
        for (i, [a, b, c]) in self.tris.iter().enumerate() {
            let tmax = best.map_or(ray.tmax, |b| b.0);
            if let Some((t, _, _)) = ray_triangle(&pre, *a, *b, *c, ray.tmin, tmax) {
                best = Some((t, i));
            }
        }
        best
    }
}

/// Where `p` (object space) lies against face `face` of the column of
/// `cell`: its distance from the face's plane, and from the edge of the
/// face's rectangle (positive inside). `None` for an empty column or no face.
fn face_margin(hf: &Heightfield, cell: u32, face: u32, p: Vec3) -> Option<(f32, f32)> {
    let (x, z) = (cell % hf.width(), cell / hf.width());
    let b = hf.column_box(x, z)?;
    let n = face_normal(face);
    if n == Vec3::ZERO || b.max.y <= 0.0 {
        return None;
    }
    let k = if n.x != 0.0 {
        0
    } else if n.y != 0.0 {
        1
    } else {
        2
    };
    // The face's plane: the box's side the normal points to.
    let plane = if n[k] > 0.0 { b.max[k] } else { b.min[k] };
    let inside = (0..3)
        .filter(|&j| j != k)
        .map(|j| (p[j] - b.min[j]).min(b.max[j] - p[j]))
        .fold(f32::INFINITY, f32::min);
    Some(((p[k] - plane).abs(), inside))
}

/// Whether `p` lies on face `face` of `cell` within `tol`.
fn on_face(hf: &Heightfield, cell: u32, face: u32, p: Vec3, tol: f32) -> bool {
    face_margin(hf, cell, face, p).is_some_and(|(off, inside)| off <= tol && inside >= -tol)
}

/// Whether `p` lies on the edge of face `face` of `cell` within `tol`: where
/// a ray meets or misses the face by rounding alone.
fn on_edge(hf: &Heightfield, cell: u32, face: u32, p: Vec3, tol: f32) -> bool {
    face_margin(hf, cell, face, p).is_some_and(|(off, inside)| off <= tol && inside.abs() <= tol)
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Tally {
    rays: usize,
    hits: usize,
    /// Another face at the same distance, which the walk's face meets.
    ties: usize,
    /// The nearer answer's face met only on its edge (within rounding),
    /// which the other missed.
    grazes: usize,
    mismatches: usize,
}

impl Tally {
    fn add(&mut self, o: Tally) {
        self.rays += o.rays;
        self.hits += o.hits;
        self.ties += o.ties;
        self.grazes += o.grazes;
        self.mismatches += o.mismatches;
    }
}

/// Compare the walk's hit with the triangles' on `ray`; `Err` describes a
/// mismatch.
fn compare(p: &Pair, ray: &Ray, tally: &mut Tally) -> Result<(), String> {
    let a = p.walk.intersect(ray);
    let r = p.reference(ray);
    let r_name = r.and_then(|(_, i)| p.names.get(i).copied());
    tally.rays += 1;
    let describe = || {
        format!(
            "ray {ray:?}\n  walk: t {} cell {} face {} (hit {})\n  triangles: {:?} {:?}",
            a.t,
            a.cell,
            a.face,
            a.is_hit(),
            r,
            r_name
        )
    };
    // The rounding scale of a point on the surface.
    let tol = |at: Vec3| 1e-5 * (1.0 + at.abs().max_element() + ray.origin.abs().max_element());
    match (a.is_hit(), r, r_name) {
        (false, None, _) => Ok(()),
        (true, Some((t, _)), Some(name)) if t_close(a.t, t, t_floor(ray)) => {
            tally.hits += 1;
            if (a.cell, a.face) == name {
                return Ok(());
            }
            // Another face at the same distance: right only where the walk's
            // face really meets the ray there.
            let at = ray.at(a.t);
            if a.prim == 0 && on_face(&p.hf, a.cell, a.face, at, 10.0 * tol(at)) {
                tally.ties += 1;
                Ok(())
            } else {
                tally.mismatches += 1;
                Err(format!(
                    "a tie the walk's face does not meet\n{}",
                    describe()
                ))
            }
        }
        _ => {
            // One hit nearer than the other's (or than a miss): allowed only
            // where that face is met within rounding of missing it: on its
            // very edge (the ray grazing it), or at the ray's start (an
            // origin on the face, `t - tmin` within the origin's rounding).
            let walk_nearer = a.is_hit() && r.is_none_or(|(t, _)| a.t < t);
            let at_start = |t: f32| t - ray.tmin <= t_floor(ray);
            let graze = if walk_nearer {
                at_start(a.t) || on_edge(&p.hf, a.cell, a.face, ray.at(a.t), tol(ray.at(a.t)))
            } else {
                match (r, r_name) {
                    (Some((t, _)), Some((cell, face))) => {
                        at_start(t) || on_edge(&p.hf, cell, face, ray.at(t), tol(ray.at(t)))
                    }
                    _ => false,
                }
            };
            if graze {
                tally.grazes += 1;
                Ok(())
            } else {
                tally.mismatches += 1;
                Err(describe())
            }
        }
    }
}

/// A height: empty, on a quarter grid (equal neighbours), any, or tall.
fn height() -> impl Strategy<Value = f32> {
    prop_oneof![
        3 => Just(0.0f32),
        4 => (1u32..=12).prop_map(|k| k as f32 * 0.25),
        2 => 0.05f32..3.0,
        1 => 4.0f32..12.0,
    ]
}

/// A small height map: 1 to 10 cells a side, one of a few cell sizes (two
/// of them powers of two, so that rays through corners pass them exactly).
fn height_map() -> impl Strategy<Value = Heightfield> {
    (
        1u32..=10,
        1u32..=10,
        prop_oneof![Just(1.0f32), Just(0.5), Just(0.37), Just(2.5)],
    )
        .prop_flat_map(|(w, d, cs)| {
            prop::collection::vec(height(), (w * d) as usize)
                .prop_map(move |h| Heightfield::new(w, d, cs, &h).expect("valid generated heights"))
        })
}

/// One ray of family `kind` over `hf`, from the numbers `u` (each in `[0, 1)`).
fn make_ray(hf: &Heightfield, kind: u8, u: &[f32; 8]) -> Ray {
    let (w, d) = (hf.width(), hf.depth());
    let ext = Vec3::new(hf.plane(w), hf.max_height().max(0.5), hf.plane(d));
    let lerp = |a: f32, b: f32, t: f32| a + (b - a) * t;
    let point = |a: f32, b: f32, c: f32| {
        Vec3::new(
            lerp(-0.3 * ext.x, 1.3 * ext.x, a),
            lerp(-1.0, ext.y + 3.0, b),
            lerp(-0.3 * ext.z, 1.3 * ext.z, c),
        )
    };
    let unit = |a: f32, b: f32| prism_core::sampling::unit_sphere(a, b);
    let pick = |n: u32, t: f32| ((t * n as f32) as u32).min(n - 1);
    // A column above 0, if any: the first from a random cell.
    let column = |t: f32| {
        let start = pick(w * d, t);
        (0..w * d)
            .map(|k| (start + k) % (w * d))
            .find(|&c| hf.heights()[c as usize] > 0.0)
            .map(|c| (c % w, c / w))
    };
    match kind {
        // Anywhere, any direction.
        0 => Ray::new(point(u[0], u[1], u[2]), unit(u[3], u[4])),
        // Along an axis, the origin on cell planes and tops by turns.
        1 => {
            let axis = pick(3, u[0]) as usize;
            let mut dir = Vec3::ZERO;
            dir[axis] = if u[1] < 0.5 { -1.0 } else { 1.0 };
            let mut o = point(u[2], u[3], u[4]);
            if u[5] < 0.5 {
                o.x = hf.plane(pick(w + 1, u[6]));
            }
            if u[6] < 0.5 {
                o.z = hf.plane(pick(d + 1, u[5]));
            }
            if u[7] < 0.4 {
                let c = pick(w * d, u[7] * 2.5);
                o.y = hf.heights()[c as usize];
            }
            if axis == 1 {
                o.y = if dir.y < 0.0 { ext.y + 2.0 } else { -1.0 };
            }
            Ray::new(o, dir)
        }
        // Aimed at a vertical cell edge (a grid vertex at some height).
        2 => {
            let target = Vec3::new(
                hf.plane(pick(w + 1, u[0])),
                lerp(0.0, ext.y, u[1]),
                hf.plane(pick(d + 1, u[2])),
            );
            let o = point(u[3], u[4], u[5]);
            Ray::new(o, target - o)
        }
        // Diagonals from cell centres: exactly through corners where the
        // cell size is a power of two.
        3 => {
            let (i, j) = (pick(w, u[0]), pick(d, u[1]));
            let o = Vec3::new(
                hf.plane(i) + 0.5 * hf.cell_size(),
                lerp(0.0, ext.y + 1.0, u[2]),
                hf.plane(j) + 0.5 * hf.cell_size(),
            );
            let dy = [-2.0, -1.0, -0.5, -0.25, 0.0, 0.25][pick(6, u[3]) as usize];
            let sx = if u[4] < 0.5 { -1.0 } else { 1.0 };
            let sz = if u[5] < 0.5 { -1.0 } else { 1.0 };
            Ray::new(o, Vec3::new(sx * hf.cell_size(), dy, sz * hf.cell_size()))
        }
        // Grazing a top: level with it, or just above or below, nearly flat.
        4 => {
            let Some((x, z)) = column(u[0]) else {
                return Ray::new(point(u[1], u[2], u[3]), unit(u[4], u[5]));
            };
            let h = hf.height(x, z).unwrap_or(0.0);
            let eps = [0.0, 1e-3, -1e-3, 1e-2][pick(4, u[1]) as usize] * hf.cell_size();
            let far = point(u[2], 0.0, u[3]);
            let o = Vec3::new(far.x, h + eps, far.z);
            let target = Vec3::new(
                hf.plane(x) + u[4] * hf.cell_size(),
                h,
                hf.plane(z) + u[5] * hf.cell_size(),
            );
            let mut dir = target - o;
            dir.y = -[0.0, 1e-3, 1e-2, -1e-3][pick(4, u[6]) as usize] * dir.length();
            if dir == Vec3::ZERO {
                dir = Vec3::X;
            }
            Ray::new(o, dir)
        }
        // From inside a column.
        5 => {
            let Some((x, z)) = column(u[0]) else {
                return Ray::new(point(u[1], u[2], u[3]), unit(u[4], u[5]));
            };
            let b = hf.column_box(x, z).expect("a cell of the grid");
            let o = b.min + (b.max - b.min) * Vec3::new(u[1], u[2], u[3]);
            Ray::new(o, unit(u[4], u[5]))
        }
        // From below the ground, upwards.
        6 => {
            let mut o = point(u[0], 0.0, u[1]);
            o.y = -lerp(0.01, 3.0, u[2]);
            let mut dir = unit(u[3], u[4]);
            dir.y = dir.y.abs().max(0.05);
            Ray::new(o, dir)
        }
        // In a cell plane: vertical through an edge, or any direction in
        // the plane x = const or z = const.
        7 => {
            let (i, j) = (pick(w + 1, u[0]), pick(d + 1, u[1]));
            let mut o = point(u[2], u[3], u[4]);
            o.x = hf.plane(i);
            let mut dir = unit(u[5], u[6]);
            if u[7] < 0.3 {
                o.z = hf.plane(j);
                o.y = ext.y + 1.0;
                dir = Vec3::NEG_Y;
            } else if u[7] < 0.65 {
                dir.x = 0.0;
            } else {
                o.x = point(u[2], 0.0, 0.0).x;
                o.z = hf.plane(j);
                dir.z = 0.0;
            }
            if dir == Vec3::ZERO {
                dir = Vec3::NEG_Y;
            }
            Ray::new(o, dir)
        }
        // A segment: some tmin and tmax.
        _ => {
            let o = point(u[0], u[1], u[2]);
            let dir = unit(u[3], u[4]);
            let span = ext.length();
            Ray::segment(o, dir, u[5] * span, lerp(0.5, 2.0, u[6]) * span)
        }
    }
}

proptest! {
    #![proptest_config(config(300))]

    /// The walk agrees with the columns' triangles on every kind of ray.
    #[test]
    fn walk_agrees_with_the_columns_triangles(
        hf in height_map(),
        rays in prop::collection::vec((0u8..9, prop::array::uniform8(0.0f32..1.0)), 48),
    ) {
        let p = pair(hf, FaceSet::All, Reference::EachTriangle);
        let mut tally = Tally::default();
        for (kind, u) in &rays {
            let ray = make_ray(&p.hf, *kind, u);
            prop_assume!(ray.is_valid());
            if let Err(e) = compare(&p, &ray, &mut tally) {
                return Err(TestCaseError::fail(format!("kind {kind}: {e}")));
            }
            // Any hit is closest hit's verdict.
            prop_assert_eq!(p.walk.occluded(&ray), p.walk.intersect(&ray).is_hit(), "{:?}", ray);
        }
    }
}

/// Many height maps and rays from a fixed seed: no mismatch, and the ties
/// counted (printed with `--nocapture`).
#[test]
fn sweep_counts_ties_and_finds_no_mismatch() {
    let mut rng = Pcg { state: 77 };
    let mut total = Tally::default();
    let mut per_kind = [Tally::default(); 9];
    for case in 0..300 {
        let w = 1 + (rng.next_f32() * 12.0) as u32;
        let d = 1 + (rng.next_f32() * 12.0) as u32;
        let cs = [1.0, 0.5, 0.37, 2.5, 0.25][case % 5];
        let heights: Vec<f32> = (0..w * d)
            .map(|_| {
                let r = rng.next_f32();
                if r < 0.3 {
                    0.0
                } else if r < 0.7 {
                    (1 + (rng.next_f32() * 12.0) as u32) as f32 * 0.25
                } else if r < 0.9 {
                    0.05 + rng.next_f32() * 3.0
                } else {
                    4.0 + rng.next_f32() * 8.0
                }
            })
            .collect();
        let p = pair(
            Heightfield::new(w, d, cs, &heights).expect("valid heights"),
            FaceSet::All,
            Reference::EachTriangle,
        );
        for r in 0..200 {
            let kind = (r % 9) as u8;
            let u: [f32; 8] = std::array::from_fn(|_| rng.next_f32());
            let ray = make_ray(&p.hf, kind, &u);
            if !ray.is_valid() {
                continue;
            }
            let mut t = Tally::default();
            if let Err(e) = compare(&p, &ray, &mut t) {
                panic!("case {case} ({w}x{d}, cell {cs}), kind {kind}: {e}");
            }
            per_kind[kind as usize].add(t);
            total.add(t);
        }
    }
    eprintln!("heightfield against its triangles: {total:?}");
    for (k, t) in per_kind.iter().enumerate() {
        eprintln!("  kind {k}: {t:?}");
    }
    assert_eq!(total.mismatches, 0);
    assert!(total.hits > total.rays / 4, "{total:?}");
}

/// Rays exactly through corners and edges, and exactly level with tops, on
/// a checkerboard of tall and empty columns: the triangles' answers.
#[test]
fn corners_edges_and_level_rays_hit_what_the_triangles_hit() {
    let (w, d) = (8u32, 8u32);
    let heights: Vec<f32> = (0..w * d)
        .map(|c| {
            let (x, z) = (c % w, c / w);
            if (x + z) % 2 == 0 {
                0.0
            } else {
                1.0 + (c % 3) as f32
            }
        })
        .collect();
    let p = pair(
        Heightfield::new(w, d, 1.0, &heights).expect("valid"),
        FaceSet::All,
        Reference::EachTriangle,
    );
    let mut tally = Tally::default();
    let mut rays = Vec::new();
    for i in 0..=w {
        for j in 0..=d {
            let (x, z) = (i as f32, j as f32);
            // Straight down every vertical edge, and along every plane.
            rays.push(Ray::new(Vec3::new(x, 9.0, z), Vec3::NEG_Y));
            rays.push(Ray::new(Vec3::new(x, 0.5, -1.0), Vec3::Z));
            rays.push(Ray::new(Vec3::new(-1.0, 2.0, z), Vec3::X));
            rays.push(Ray::new(Vec3::new(x, 3.0, z), Vec3::new(1.0, -1.0, 1.0)));
            rays.push(Ray::new(Vec3::new(x, 3.0, z), Vec3::new(-1.0, -0.5, 1.0)));
            // Level with each height.
            for h in [1.0, 2.0, 3.0] {
                rays.push(Ray::new(Vec3::new(-0.5, h, z + 0.5), Vec3::X));
                rays.push(Ray::new(Vec3::new(x + 0.25, h, 9.0), Vec3::NEG_Z));
            }
        }
    }
    for ray in &rays {
        compare(&p, ray, &mut tally).unwrap_or_else(|e| panic!("{e}"));
    }
    eprintln!("corners, edges, level rays: {tally:?}");
    assert!(tally.hits > rays.len() / 3, "{tally:?}");
}

/// A flat scene mixing a heightfield with a sphere and a triangle: each ray
/// gets the nearest of the three, the heightfield's hit naming its cell.
#[test]
fn a_heightfield_beside_other_primitives_in_one_tree() {
    let hf = Heightfield::new(4, 4, 1.0, &[1.0; 16]).expect("valid");
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::ONE));
    let ball = scene.add_sphere(Vec3::new(2.0, 3.0, 2.0), 0.5, m);
    let field = scene.add_heightfield(hf, m);
    let tri = scene.add_triangle(
        Vec3::new(-2.0, 0.0, -2.0),
        Vec3::new(-1.0, 0.0, -2.0),
        Vec3::new(-2.0, 0.0, -1.0),
        m,
    );
    let accel = Accel::build(&scene).expect("valid");
    let down = |x: f32, z: f32| accel.intersect(&Ray::new(Vec3::new(x, 10.0, z), Vec3::NEG_Y));
    let h = down(2.0, 2.0);
    assert_eq!(h.prim, ball);
    assert_eq!((h.cell, h.face), (0, 0));
    let h = down(3.5, 0.5);
    assert_eq!((h.prim, h.cell, h.face), (field, 3, 0));
    assert!((h.t - 9.0).abs() < 1e-6);
    assert_eq!(down(-1.8, -1.8).prim, tri);
    assert_eq!(accel.heightfields().len(), 1);
    assert_eq!(accel.primitives().len(), 3);
}

/// A heightfield geometry placed several times (rotated, scaled, moved) and a
/// sphere: the two-level walk against the same instances of the columns'
/// triangles, and against brute force over the instances (each entered by
/// core's object ray, the walk run in its object space).
#[test]
fn instanced_heightfields_agree_with_their_triangles_and_brute_force() {
    let mut rng = Pcg { state: 5 };
    let mut total = Tally::default();
    for case in 0..40 {
        let (w, d) = (
            2 + (rng.next_f32() * 8.0) as u32,
            2 + (rng.next_f32() * 8.0) as u32,
        );
        let heights: Vec<f32> = (0..w * d)
            .map(|_| {
                if rng.next_f32() < 0.3 {
                    0.0
                } else {
                    0.2 + rng.next_f32() * 3.0
                }
            })
            .collect();
        let hf = Heightfield::new(w, d, 0.5, &heights).expect("valid");
        let transforms: Vec<Affine3A> = (0..6)
            .map(|_| {
                let axis = Vec3::new(rng.next_f32() - 0.5, rng.next_f32() - 0.5, rng.next_f32())
                    .normalize();
                Affine3A::from_scale_rotation_translation(
                    Vec3::splat(0.5 + rng.next_f32() * 1.5),
                    Quat::from_axis_angle(axis, rng.next_f32() * 6.0),
                    Vec3::new(rng.next_f32(), rng.next_f32(), rng.next_f32()) * 12.0 - 6.0,
                )
            })
            .collect();
        let build = |g: Geometry| {
            let mut scene = Scene::new();
            let m = scene.add_material(Material::lambertian(Vec3::ONE));
            let _ = m;
            let g = scene.add_geometry(g);
            let mut ball = Geometry::new();
            ball.add_sphere(Vec3::ZERO, 1.0, 0);
            let ball = scene.add_geometry(ball);
            for (i, t) in transforms.iter().enumerate() {
                scene.add_instance(Instance::new(g, *t).with_mask(1 << (i % 3)));
            }
            scene.add_instance(Instance::new(
                ball,
                Affine3A::from_translation(Vec3::splat(0.5)),
            ));
            Accel::build(&scene).expect("a valid two-level scene")
        };
        let walk = build(Geometry::heightfield(hf.clone(), 0));
        let (tris, names) = triangles(&hf, FaceSet::All);
        let mut mesh = Geometry::new();
        for [a, b, c] in &tris {
            mesh.add_triangle(*a, *b, *c, 0);
        }
        let tri_accel = build(mesh);
        for r in 0..300 {
            let o = Vec3::new(rng.next_f32(), rng.next_f32(), rng.next_f32()) * 30.0 - 15.0;
            let target = Vec3::new(rng.next_f32(), rng.next_f32(), rng.next_f32()) * 12.0 - 6.0;
            let mask = if r % 4 == 0 { 0b101 } else { u32::MAX };
            let ray = Ray::new(o, target - o).with_mask(mask);
            let a = walk.intersect(&ray);
            let t = tri_accel.intersect(&ray);
            total.rays += 1;
            // Brute force: every instance the ray sees, in object space.
            let mut best = Hit::MISS;
            for (i, rec) in walk.instances().iter().enumerate() {
                if ray.mask & rec.mask() == 0 {
                    continue;
                }
                let object = object_ray(rec, &ray, best.t.min(ray.tmax));
                let pre = RayPre::new(&object);
                if i < transforms.len() {
                    let hit = ray_heightfield(
                        &pre,
                        &walk.heightfields()[0],
                        walk.heightfield_heights(),
                        object.tmin,
                        object.tmax,
                    );
                    if let Some(h) = hit {
                        best = Hit::heightfield(h.t, 0, i as u32, h.cell, h.face);
                    }
                } else if let Some(t) = prism_core::intersect::ray_sphere(
                    object.origin,
                    object.dir,
                    Vec3::ZERO,
                    1.0,
                    object.tmin,
                    object.tmax,
                ) {
                    best = Hit::new(t, 0.0, 0.0, 0, i as u32);
                }
            }
            assert_eq!(
                (a.t.to_bits(), a.instance, a.cell, a.face),
                (best.t.to_bits(), best.instance, best.cell, best.face),
                "case {case} ray {r}: the two-level walk against brute force"
            );
            // Against the triangles: the same t; the same instance, cell and
            // face but for ties.
            match (a.is_hit(), t.is_hit()) {
                (false, false) => {}
                (true, true) => {
                    assert!(
                        t_close(a.t, t.t, 1e-5 * (1.0 + o.abs().max_element())),
                        "case {case} ray {r}: t {} against the triangles' {}",
                        a.t,
                        t.t
                    );
                    total.hits += 1;
                    let sphere = a.instance as usize == transforms.len();
                    let same = a.instance == t.instance
                        && (sphere
                            || Some((a.cell, a.face)) == names.get(t.prim as usize).copied());
                    if !same {
                        total.ties += 1;
                        if !sphere {
                            let inv = transforms[a.instance as usize].inverse();
                            let p = inv.transform_point3(ray.at(a.t));
                            assert!(
                                on_face(&hf, a.cell, a.face, p, 1e-3),
                                "case {case} ray {r}: a tie whose face the ray does not meet"
                            );
                        }
                    }
                }
                _ => panic!(
                    "case {case} ray {r}: walk {:?} against the triangles' {:?}",
                    a, t
                ),
            }
        }
    }
    eprintln!("instanced heightfields against their triangles: {total:?}");
    assert!(total.hits > total.rays / 10, "{total:?}");
}

/// The shared scenes directory: `$PRISM_SCENES`, else `../shared/scenes`
/// beside the checkout; `None` (a skip) when the city is not there, unless
/// `PRISM_REQUIRE_SCENES=1`.
fn city_path() -> Option<PathBuf> {
    let dir = std::env::var_os("PRISM_SCENES")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/scenes"));
    let path = dir.join("heightfield/city512.png");
    let found = path.is_file();
    assert!(
        found || !std::env::var("PRISM_REQUIRE_SCENES").is_ok_and(|v| v == "1"),
        "PRISM_REQUIRE_SCENES=1 but {} is missing",
        path.display()
    );
    found.then_some(path)
}

/// The city's height map: grey `(77 r + 150 g + 29 b) >> 8`, unit voxels.
fn city(path: &PathBuf) -> Heightfield {
    let img = image::open(path).expect("the city PNG decodes").to_rgba8();
    let (w, d) = img.dimensions();
    let grey: Vec<u8> = img
        .pixels()
        .map(|p| ((77 * p[0] as u32 + 150 * p[1] as u32 + 29 * p[2] as u32) >> 8) as u8)
        .collect();
    Heightfield::from_u8(w, d, 1.0, &grey, 1.0).expect("a valid height map")
}

/// The city with its camera ((500, 500, 500) looking at (256, 0, 256), vfov
/// 20, 500x500): 2,048 primary rays spread over the frame, and a diffuse
/// bounce from each primary hit, against the visible faces as triangles
/// (every ray starts outside the columns, where those are the same surface).
#[test]
fn the_city_agrees_with_its_triangles() {
    let Some(path) = city_path() else {
        eprintln!("SKIPPED: ../shared/scenes/heightfield/city512.png not found (set PRISM_SCENES)");
        return;
    };
    let hf = city(&path);
    assert_eq!((hf.width(), hf.depth(), hf.max_height()), (512, 512, 125.0));
    let p = pair(hf, FaceSet::Visible, Reference::Tree);
    let cam = Camera::look_at(
        Vec3::splat(500.0),
        Vec3::new(256.0, 0.0, 256.0),
        Vec3::Y,
        20.0,
    )
    .frame(500, 500)
    .expect("a valid camera");
    let mut rng = Pcg { state: 3 };
    let mut tally = Tally::default();
    let mut bounces = Tally::default();
    for k in 0..2048u32 {
        let pixel = (k * 122_069) % 250_000;
        let (x, y) = (pixel % 500, pixel / 500);
        let ray = camera_ray(
            &cam,
            (x as f32 + 0.5) / 500.0,
            1.0 - (y as f32 + 0.5) / 500.0,
            0.5,
            0.5,
        );
        compare(&p, &ray, &mut tally).unwrap_or_else(|e| panic!("pixel ({x}, {y}): {e}"));
        let hit = p.walk.intersect(&ray);
        if hit.is_hit() {
            let n = face_normal(hit.face);
            let dir = prism_core::sampling::cosine_hemisphere(n, rng.next_f32(), rng.next_f32());
            let at = ray.at(hit.t);
            let bounce = Ray::segment(at, dir, 1e-3, f32::INFINITY);
            compare(&p, &bounce, &mut bounces)
                .unwrap_or_else(|e| panic!("bounce from pixel ({x}, {y}): {e}"));
        }
    }
    eprintln!("city, primary rays: {tally:?}; bounces: {bounces:?}");
    assert!(
        tally.hits > 1500 && bounces.rays > 1500,
        "{tally:?} {bounces:?}"
    );
}

/// `column_mesh` is `column_faces` as triangles: two a face, over the face's
/// four corners, named by it; without bottoms it drops exactly those.
#[test]
fn column_mesh_is_two_triangles_a_face() {
    let hf = Heightfield::new(3, 2, 1.5, &[0.0, 2.0, 1.0, 3.0, 0.5, 2.0]).unwrap();
    for set in [FaceSet::All, FaceSet::Visible] {
        let faces = hf.column_faces(set);
        let mesh = hf.column_mesh(set, true);
        assert_eq!(mesh.triangles.len(), 2 * faces.len());
        assert_eq!(mesh.names.len(), mesh.triangles.len());
        for (i, f) in faces.iter().enumerate() {
            let [a, b, c, d] = f.corners;
            let at = |k: u32| mesh.positions[k as usize];
            let [t0, t1] = [mesh.triangles[2 * i], mesh.triangles[2 * i + 1]];
            assert_eq!([at(t0[0]), at(t0[1]), at(t0[2])], [a, b, c]);
            assert_eq!([at(t1[0]), at(t1[1]), at(t1[2])], [a, c, d]);
            assert_eq!(mesh.names[2 * i], (f.cell, f.face));
        }
        let bottoms = faces.iter().filter(|f| f.face == FACE_BOTTOM).count();
        assert!(bottoms > 0);
        let without = hf.column_mesh(set, false);
        assert_eq!(without.triangles.len(), 2 * (faces.len() - bottoms));
        assert!(without.names.iter().all(|&(_, face)| face != FACE_BOTTOM));
    }
}
