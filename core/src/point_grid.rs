//! Candidate lists for rays through one point: the light buffer of Haines and
//! Greenberg (1986).
//!
//! A cube map of direction cells around a point light, each cell listing the
//! primitives that a ray leaving the light in one of the cell's directions can
//! meet. Every point of a shadow ray's segment, from a surface point to the
//! light, lies on the ray from the light towards that surface point, so the
//! shadow ray only needs the primitives of the cell it arrives from: a lookup
//! and one or two primitive tests where the tree walk takes several box tests.
//!
//! The lists are conservative: a primitive is listed in every cell whose
//! directions come within its bounding sphere, the sphere widened by
//! [`POINT_GRID_MARGIN`] of the scene's reach (far more than the rounding of
//! the intersection tests) and each cell widened by [`POINT_GRID_CELL_PAD`] (far
//! more than the rounding of [`point_grid_cell`]). The answer of
//! [`any_hit_listed`] is therefore that of testing every primitive: the same
//! primitive tests over a set that holds every primitive the ray can hit. That
//! is the tree's answer too, except where the slab test's documented
//! face-plane convention lets a tree walk miss a hit on a box face (a ray that
//! does not move along an axis, lying exactly in the face). A cell with more than
//! [`POINT_GRID_SLOTS`] candidates is marked [`POINT_GRID_FULL`]: rays in it
//! walk the tree.

use crate::gpu::Primitive;
use crate::intersect::RayPre;
use crate::ray::Ray;
use crate::traverse::ray_primitive;
use alloc::vec::Vec;
use bytemuck::{Pod, Zeroable};
use glam::{DVec3, Vec3};

/// Cells along each edge of a cube face: 64 gives cells of at most 1.8 degrees,
/// small next to the spheres and triangles of a scene this size.
pub const POINT_GRID_SIDE: usize = 64;
/// Cells in a grid: six faces of `POINT_GRID_SIDE^2`.
pub const POINT_GRID_CELLS: usize = 6 * POINT_GRID_SIDE * POINT_GRID_SIDE;
/// Candidates a cell holds: seven slots and the count make one 32-byte record
/// (two 16-byte loads on a GPU).
pub const POINT_GRID_SLOTS: usize = 7;
/// The count of a cell with more candidates than slots: its rays walk the tree.
pub const POINT_GRID_FULL: u32 = u32::MAX;
/// Grids are built for scenes of at most this many primitives: every cell
/// looks at every primitive (24,576 cells x 64 = 1.6 M cone tests, a few
/// milliseconds), and in larger scenes the cells fill up.
pub const POINT_GRID_MAX_PRIMS: usize = 64;
/// How far each bounding sphere is widened, relative to its radius plus the
/// scene's reach from the point: 1e-4, some 1,700 times the f32 rounding the
/// sphere and triangle tests can make at that distance.
pub const POINT_GRID_MARGIN: f64 = 1e-4;
/// How far each cell is widened on its face, in face coordinates (a face spans
/// `[-1, 1]`): 1e-3, against cells of width `2 / 64` and a lookup that rounds
/// by about 1e-7.
pub const POINT_GRID_CELL_PAD: f64 = 1e-3;

/// One cell: how many candidates it holds (or [`POINT_GRID_FULL`]) and their
/// slots in [`crate::Accel::primitives`], in ascending order.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct PointGridCell {
    /// Candidates in `slots`, or [`POINT_GRID_FULL`].
    pub count: u32,
    /// Primitive slots; the first `count` are used.
    pub slots: [u32; POINT_GRID_SLOTS],
}

/// The candidate lists around one point ([`build_point_grid`]).
#[derive(Clone, Debug, PartialEq)]
pub struct PointGrid {
    /// The point (a light's position).
    pub point: Vec3,
    /// The square of the longest shadow segment the lists answer for: the
    /// farthest any primitive reaches from the point, plus 0.1%. A shadow ray
    /// starts on a primitive, within this distance; one that starts farther
    /// (an origin rounded far off its surface) walks the tree, because the
    /// widening of the lists covers the rounding of tests from origins within
    /// the reach only.
    pub reach_squared: f32,
    /// [`POINT_GRID_CELLS`] cells, indexed by [`point_grid_cell`].
    pub cells: Vec<PointGridCell>,
}

/// The cell of direction `dir` (any length): the face of its largest component
/// (the first of equal ones in x, y, z order), then the other two components
/// over that one's magnitude, each `[-1, 1]` cut into `POINT_GRID_SIDE` cells.
/// `None` for a zero or non-finite direction (walk the tree). The CUDA kernels
/// compute the same cell with the same roundings; a lookup that rounds
/// otherwise (wgpu's division) may land one cell off at a boundary, which is
/// still right: every cell is padded by far more than that.
#[inline]
pub fn point_grid_cell(dir: Vec3) -> Option<usize> {
    if !dir.is_finite() {
        return None;
    }
    let a = dir.abs();
    let (face, major, u, v) = if a.x >= a.y && a.x >= a.z {
        (usize::from(dir.x < 0.0), a.x, dir.y, dir.z)
    } else if a.y >= a.z {
        (2 + usize::from(dir.y < 0.0), a.y, dir.x, dir.z)
    } else {
        (4 + usize::from(dir.z < 0.0), a.z, dir.x, dir.y)
    };
    if major == 0.0 {
        return None;
    }
    let r = 1.0 / major;
    let cell = |x: f32| {
        // |x| <= 1 up to rounding; `as i32` truncates (and saturates), the
        // clamp keeps the edge values 1 + ulp in the last cell.
        let c = ((x + 1.0) * (POINT_GRID_SIDE as f32 * 0.5)) as i32;
        c.clamp(0, POINT_GRID_SIDE as i32 - 1) as usize
    };
    Some((face * POINT_GRID_SIDE + cell(v * r)) * POINT_GRID_SIDE + cell(u * r))
}

/// The direction of face coordinates `(u, v)` on `face` (see [`point_grid_cell`]).
fn face_dir(face: usize, u: f64, v: f64) -> DVec3 {
    let s = if face.is_multiple_of(2) { 1.0 } else { -1.0 };
    match face / 2 {
        0 => DVec3::new(s, u, v),
        1 => DVec3::new(u, s, v),
        _ => DVec3::new(u, v, s),
    }
}

/// A cone that holds every direction of `cell` (widened by
/// [`POINT_GRID_CELL_PAD`]): unit axis and the cosine and sine of its half
/// angle. A cell is the image of a rectangle on its face, a convex spherical
/// quadrilateral, so the corner farthest from the axis bounds it.
fn cell_cone(cell: usize) -> (DVec3, f64, f64) {
    let n = POINT_GRID_SIDE;
    let (face, j, i) = (cell / (n * n), (cell / n) % n, cell % n);
    let w = 2.0 / n as f64;
    let (u0, v0) = (-1.0 + w * i as f64, -1.0 + w * j as f64);
    let axis = face_dir(face, u0 + 0.5 * w, v0 + 0.5 * w).normalize();
    let p = POINT_GRID_CELL_PAD;
    let mut cos = 1.0f64;
    for (u, v) in [
        (u0 - p, v0 - p),
        (u0 + w + p, v0 - p),
        (u0 - p, v0 + w + p),
        (u0 + w + p, v0 + w + p),
    ] {
        cos = cos.min(axis.dot(face_dir(face, u, v).normalize()));
    }
    (axis, cos, libm::sqrt((1.0 - cos * cos).max(0.0)))
}

/// A sphere around primitive `p`: a sphere itself, or a triangle's centroid
/// and its farthest vertex.
pub(crate) fn bounding_sphere(p: &Primitive) -> (DVec3, f64) {
    let row = |r: [f32; 4]| DVec3::new(r[0] as f64, r[1] as f64, r[2] as f64);
    if p.kind() == crate::gpu::KIND_SPHERE {
        // The sphere test squares the radius, so a negative one is its magnitude.
        (row(p.a), (p.b[0] as f64).abs())
    } else {
        let (a, b, c) = (row(p.a), row(p.b), row(p.c));
        let centre = (a + b + c) / 3.0;
        let r = (a - centre)
            .length()
            .max((b - centre).length())
            .max((c - centre).length());
        (centre, r)
    }
}

/// The candidate lists of every cell around `point` for the primitives `prims`
/// (an [`crate::Accel`]'s, in slot order), [`POINT_GRID_CELLS`] cells indexed
/// by [`point_grid_cell`].
///
/// `None` when the scene has more than [`POINT_GRID_MAX_PRIMS`] primitives, a
/// heightfield (its walk needs its heights, which the candidate tests do not
/// read), or `point` or a primitive is not finite (an [`crate::Accel`]'s
/// always are): rays then walk the tree.
///
/// ```
/// use prism_core::glam::Vec3;
/// use prism_core::point_grid::{any_hit_listed, build_point_grid};
/// use prism_core::{Accel, Material, Ray, Scene};
///
/// let mut scene = Scene::new();
/// let grey = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
/// scene.add_sphere(Vec3::new(0.0, 0.0, -5.0), 1.0, grey);
/// scene.add_sphere(Vec3::new(0.0, 0.0, 2.0), 1.0, grey);
/// let accel = Accel::build(&scene)?;
/// let light = Vec3::new(0.0, 0.0, -10.0);
/// let grid = build_point_grid(light, accel.primitives()).unwrap(); // ok: a small scene
/// // A shadow ray from the second sphere's surface to the light passes
/// // through the first sphere.
/// let shadow = Ray::segment(Vec3::new(0.0, 0.0, 1.0), Vec3::NEG_Z, 1e-4, 11.0);
/// assert_eq!(any_hit_listed(&grid, accel.primitives(), &shadow), Some(true));
/// assert!(accel.occluded(&shadow));
/// # Ok::<(), prism_core::Error>(())
/// ```
pub fn build_point_grid(point: Vec3, prims: &[Primitive]) -> Option<PointGrid> {
    if prims.len() > POINT_GRID_MAX_PRIMS
        || !point.is_finite()
        || prims
            .iter()
            .any(|p| p.kind() == crate::gpu::KIND_HEIGHTFIELD)
    {
        return None;
    }
    let origin = point.as_dvec3();
    let spheres: Vec<(DVec3, f64)> = prims.iter().map(bounding_sphere).collect();
    if !spheres.iter().all(|(c, r)| c.is_finite() && r.is_finite()) {
        return None;
    }
    // The farthest any primitive reaches from the point: a shadow ray starts on
    // a primitive, so its origin is at most this far away.
    let reach = spheres
        .iter()
        .map(|&(c, r)| (c - origin).length() + r)
        .fold(0.0f64, f64::max);
    // Each primitive as a cone from the point (unit axis, cos and sin of its
    // half angle), or None when the widened sphere holds the point (every
    // direction can meet it).
    let cones: Vec<Option<(DVec3, f64, f64)>> = spheres
        .iter()
        .map(|&(c, r)| {
            let to = c - origin;
            let d = to.length();
            let rho = r + POINT_GRID_MARGIN * (r + d + reach);
            if d <= rho {
                return None;
            }
            let sin = rho / d;
            Some((to / d, libm::sqrt(1.0 - sin * sin), sin))
        })
        .collect();
    let mut cells = Vec::with_capacity(POINT_GRID_CELLS);
    for cell in 0..POINT_GRID_CELLS {
        let (axis, cos_c, sin_c) = cell_cone(cell);
        let mut out = PointGridCell::default();
        for (slot, cone) in cones.iter().enumerate() {
            // Two cones overlap when the angle between their axes is at most
            // the sum of their half angles: cos(angle) >= cos(a + b).
            let overlaps = match cone {
                None => true,
                Some((s, cos_p, sin_p)) => axis.dot(*s) >= cos_c * cos_p - sin_c * sin_p,
            };
            if !overlaps {
                continue;
            }
            if out.count as usize == POINT_GRID_SLOTS {
                out.count = POINT_GRID_FULL;
                break;
            }
            out.slots[out.count as usize] = slot as u32;
            out.count += 1;
        }
        cells.push(out);
    }
    let reach = reach * 1.001;
    Some(PointGrid {
        point,
        reach_squared: (reach * reach) as f32,
        cells,
    })
}

/// The candidates of the cell of direction `dir`, or `None` when the ray must
/// walk the tree (a full cell, a bad direction, or a grid of the wrong size).
#[inline]
fn listed(grid: &[PointGridCell], dir: Vec3) -> Option<&[u32]> {
    let cell = grid.get(point_grid_cell(dir)?)?;
    cell.slots.get(..cell.count as usize)
}

/// Whether anything lies on the shadow ray `ray`: a segment from `ray.origin`
/// along `ray.dir` that ends at the grid's point at `t = ray.tmax`, as the
/// integrators make one (`dir` the unit vector towards the point, `tmax` the
/// distance to it). Its candidates are those of the cell of `-ray.dir`, the
/// direction from the point towards the ray's origin. `None` when the ray must
/// walk the tree: a full cell, a bad direction, or a segment longer than the
/// grid's reach ([`PointGrid::reach_squared`]).
pub fn any_hit_listed(grid: &PointGrid, prims: &[Primitive], ray: &Ray) -> Option<bool> {
    let length_squared = ray.dir.dot(ray.dir) * (ray.tmax * ray.tmax);
    if length_squared.is_nan() || length_squared > grid.reach_squared {
        return None;
    }
    let slots = listed(&grid.cells, -ray.dir)?;
    let pre = RayPre::new(ray);
    for &slot in slots {
        let p = prims.get(slot as usize)?;
        if ray_primitive(&pre, p, ray.tmin, ray.tmax).is_some() {
            return Some(true);
        }
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traverse::{any_hit, closest_hit};
    use crate::{Accel, Material, Scene};
    use proptest::prelude::*;

    fn v3() -> impl Strategy<Value = Vec3> {
        (-4.0f32..4.0, -4.0f32..4.0, -4.0f32..4.0).prop_map(|(x, y, z)| Vec3::new(x, y, z))
    }

    /// Up to 20 spheres and triangles in a box of side 8, and a big ground
    /// sphere when `ground`; `None` if the scene is refused (a degenerate triangle).
    fn scene(spheres: &[(Vec3, f32)], tris: &[(Vec3, Vec3, Vec3)], ground: bool) -> Option<Accel> {
        let mut s = Scene::new();
        let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
        if ground {
            s.add_sphere(Vec3::new(0.0, -1000.0, 0.0), 995.0, m);
        }
        for &(c, r) in spheres {
            s.add_sphere(c, r, m);
        }
        for &(a, b, c) in tris {
            s.add_triangle(a, b, c, m);
        }
        Accel::build(&s).ok()
    }

    #[test]
    fn every_direction_lies_in_its_cells_cone() {
        let mut rng = crate::rng::Pcg { state: 7 };
        // The axes, the face diagonals and the cube corners, then random directions.
        let edges = (0..27).map(|k| {
            Vec3::new(
                (k % 3 - 1) as f32,
                (k / 3 % 3 - 1) as f32,
                (k / 9 - 1) as f32,
            )
        });
        let random = (0..200_000).map(|_| {
            Vec3::new(
                rng.next_f32() - 0.5,
                rng.next_f32() - 0.5,
                rng.next_f32() - 0.5,
            )
        });
        for d in edges.chain(random).collect::<Vec<_>>() {
            let Some(cell) = point_grid_cell(d) else {
                assert_eq!(d, Vec3::ZERO);
                continue;
            };
            let (axis, cos, _) = cell_cone(cell);
            let dot = axis.dot(d.as_dvec3().normalize());
            assert!(dot >= cos, "{d} outside cell {cell}: {dot} < {cos}");
        }
        for bad in [
            Vec3::ZERO,
            Vec3::new(f32::NAN, 1.0, 0.0),
            Vec3::new(0.0, f32::INFINITY, 0.0),
        ] {
            assert_eq!(point_grid_cell(bad), None);
        }
    }

    #[test]
    fn a_crowded_cell_walks_the_tree() {
        // Nine spheres in a row along -z: the cells towards them hold more than
        // POINT_GRID_SLOTS candidates.
        let spheres: Vec<(Vec3, f32)> = (0..9)
            .map(|i| (Vec3::new(0.0, 0.0, -2.0 - i as f32), 0.4))
            .collect();
        let accel = scene(&spheres, &[], false).unwrap(); // ok: test, a valid scene
        let grid = build_point_grid(Vec3::ZERO, accel.primitives()).unwrap(); // ok: test, a small scene
        assert_eq!(grid.cells.len(), POINT_GRID_CELLS);
        // A shadow ray from the far end of the row (within the grid's reach)
        // to the point arrives from -z.
        let behind = Ray::segment(Vec3::new(0.0, 0.0, -10.2), Vec3::Z, 1e-4, 10.2);
        assert!(behind.tmax * behind.tmax <= grid.reach_squared);
        assert_eq!(
            grid.cells[point_grid_cell(-behind.dir).unwrap()].count, // ok: test, a unit direction
            POINT_GRID_FULL
        );
        assert_eq!(any_hit_listed(&grid, accel.primitives(), &behind), None);
        // One from the other side arrives from +z, whose cell is empty: nothing
        // blocks it.
        let front = Ray::segment(Vec3::new(0.0, 0.0, 5.0), Vec3::NEG_Z, 1e-4, 5.0);
        assert_eq!(grid.cells[point_grid_cell(-front.dir).unwrap()].count, 0); // ok: test, a unit direction
        assert_eq!(
            any_hit_listed(&grid, accel.primitives(), &front),
            Some(false)
        );
        assert!(!accel.occluded(&front));
        // A segment from farther away than any primitive reaches walks the
        // tree, whatever its cell holds.
        let far = Ray::segment(Vec3::new(0.0, 0.0, 50.0), Vec3::NEG_Z, 1e-4, 50.0);
        assert!(far.tmax * far.tmax > grid.reach_squared);
        assert_eq!(any_hit_listed(&grid, accel.primitives(), &far), None);
    }

    #[test]
    fn large_scenes_and_bad_points_get_no_grid() {
        let spheres: Vec<(Vec3, f32)> = (0..POINT_GRID_MAX_PRIMS + 1)
            .map(|i| (Vec3::new(i as f32, 0.0, 0.0), 0.1))
            .collect();
        let accel = scene(&spheres, &[], false).unwrap(); // ok: test, a valid scene
        assert!(build_point_grid(Vec3::Y, accel.primitives()).is_none());
        let accel = scene(&spheres[..4], &[], false).unwrap(); // ok: test, a valid scene
        assert!(build_point_grid(Vec3::Y, accel.primitives()).is_some());
        assert!(build_point_grid(Vec3::new(f32::NAN, 0.0, 0.0), accel.primitives()).is_none());
        let mut bad = accel.primitives().to_vec();
        bad[1].a[0] = f32::INFINITY;
        assert!(build_point_grid(Vec3::Y, &bad).is_none());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// Shadow rays from surface points towards the grid's point: the listed
        /// answer is the tree's.
        #[test]
        fn shadow_rays_get_the_trees_answers(
            spheres in prop::collection::vec((v3(), 0.05f32..1.5), 1..12),
            tris in prop::collection::vec((v3(), v3(), v3()), 0..8),
            ground in any::<bool>(),
            light in v3(),
            seed in any::<u32>(),
        ) {
            let Some(accel) = scene(&spheres, &tris, ground) else { return Ok(()) };
            let prims = accel.primitives();
            let grid = build_point_grid(light, prims).unwrap(); // ok: test, at most 21 primitives
            let mut rng = crate::rng::Pcg { state: seed };
            let mut u = || rng.next_f32();
            for _ in 0..400 {
                // A surface point: the first hit of a random ray from a random
                // point, as an integrator finds one.
                let from = Vec3::new(u() * 8.0 - 4.0, u() * 8.0 - 4.0, u() * 8.0 - 4.0);
                let probe = Ray::new(from, Vec3::new(u() - 0.5, u() - 0.5, u() - 0.5));
                if !probe.is_valid() {
                    continue;
                }
                let hit = closest_hit(accel.nodes(), prims, crate::heightfield::Heightfields::NONE, &probe);
                if !hit.is_hit() {
                    continue;
                }
                let p = probe.at(hit.t);
                let to_light = light - p;
                let dist = to_light.length();
                let l = to_light * (1.0 / dist);
                let ray = Ray::segment(p, l, 1e-4 * (1.0 + dist), dist);
                if !ray.is_valid() {
                    continue;
                }
                let tree = any_hit(accel.nodes(), prims, crate::heightfield::Heightfields::NONE, &ray);
                if let Some(listed) = any_hit_listed(&grid, prims, &ray) {
                    prop_assert_eq!(listed, tree, "shadow ray {:?}", ray);
                }
            }
        }
    }
}
