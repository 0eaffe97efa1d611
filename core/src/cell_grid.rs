//! A uniform grid of cells over the scene: closest hits by walking the cells a
//! ray crosses (Amanatides and Woo, 1987) instead of the tree.
//!
//! Where primitives are spread evenly, as in a field of small spheres, a ray
//! crosses a few cells and tests the one or two primitives each lists, where a
//! tree walk takes ten node steps of two box tests each. Primitives much larger
//! than a cell (a ground sphere, a backdrop) would be listed in a great many
//! cells; up to [`CELL_GRID_MAX_LARGE`] of them are kept apart and tested by
//! every ray before the walk. [`CellGrid::build`] sizes the grid, and
//! [`CellGrid::worthwhile`] compares its expected cost with the tree's, so a
//! backend only uses a grid where the scene suits one.
//!
//! The answer is the tree's. Every primitive is listed in each cell its
//! bounding box, widened by [`CELL_GRID_PAD`] of the grid's size, overlaps; the
//! widening is far more than the rounding of the walk's cell and distance
//! computations, so a hit point lies inside a cell that lists its primitive,
//! and the walk stops only once the best hit lies before the end of the current
//! cell, when every primitive not yet tested lies farther on. The primitive
//! tests are core's ([`ray_primitive`]); only the order in which primitives are
//! tested differs from the tree's, so two primitives hit at exactly the same
//! `t` may resolve the other way.
//!
//! ```
//! use prism_core::cell_grid::CellGrid;
//! use prism_core::glam::Vec3;
//! use prism_core::{Accel, Material, Ray, Scene};
//!
//! // A ground sphere and a row of small spheres on it.
//! let mut scene = Scene::new();
//! let grey = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
//! scene.add_sphere(Vec3::new(0.0, -1000.0, 0.0), 1000.0, grey);
//! for i in 0..32 {
//!     scene.add_sphere(Vec3::new(i as f32, 0.2, 0.0), 0.2, grey);
//! }
//! let accel = Accel::build(&scene)?;
//! let grid = CellGrid::build(accel.primitives()).expect("a grid"); // ok: finite spheres, one large
//! assert_eq!(grid.large.len(), 1); // the ground, tested by every ray
//! let ray = Ray::new(Vec3::new(5.0, 0.2, 5.0), Vec3::NEG_Z);
//! assert_eq!(grid.closest_hit(&accel, &ray), accel.intersect_slot(&ray));
//! # Ok::<(), prism_core::Error>(())
//! ```

use crate::aabb::Aabb;
use crate::gpu::{BvhNode, EMPTY_CHILD, KIND_HEIGHTFIELD, KIND_SPHERE, Primitive};
use crate::intersect::RayPre;
use crate::ray::{Hit, Ray};
use crate::traverse::{Accel, ray_primitive};
use alloc::vec;
use alloc::vec::Vec;
use glam::Vec3;

/// Cells per listed primitive: one cell for every two keeps a ray's walk short
/// (few cell steps) while most cells list one or two primitives. On rtiow's
/// path kernel (H100, bench/RESULTS.md): 0.25 / 0.35 / 0.5 / 0.7 / 1 / 1.5 / 2
/// cells a primitive give 4.98 / 5.00 / 4.85 / 4.91 / 5.00 / 4.95 / 5.12 ms.
pub const CELL_GRID_CELLS_PER_PRIM: f32 = 0.5;
/// Most cells along one axis (keeps cell indices and the walk short).
pub const CELL_GRID_MAX_RES: u32 = 256;
/// Most cells in a grid: 2^18 cell offsets are 1 MiB.
pub const CELL_GRID_MAX_CELLS: u32 = 1 << 18;
/// Grids are built for scenes of at most this many primitives; larger scenes
/// are rarely spread evenly enough, and the tree serves them well.
pub const CELL_GRID_MAX_PRIMS: usize = 1 << 16;
/// Most primitives kept out of the cells and tested by every ray.
pub const CELL_GRID_MAX_LARGE: usize = 8;
/// A primitive whose box's largest extent is more than this many times the
/// median primitive's is kept apart (at most [`CELL_GRID_MAX_LARGE`] of them,
/// else no grid): listed, it would fill some 4^3 cells of a grid sized for the
/// typical primitive, and stretch the grid over space only it occupies (a
/// ground sphere's box is thousands of times the scene).
pub const CELL_GRID_LARGE: f32 = 4.0;
/// How far every box is widened before it is listed, relative to the grid's
/// largest extent plus its largest coordinate: 1e-4, some 800 times the f32
/// rounding of a hit point or a cell boundary at that scale.
pub const CELL_GRID_PAD: f32 = 1e-4;
/// A bound on the walk's rounding, relative to a ray's reach (twice its
/// origin's largest coordinate plus the grid's, which bounds every point from
/// the origin to the grid): 2^-21, twice the about four f32 ulps (2^-22) by
/// which the entry point, a cell index's argument and a face distance can be
/// off. A ray whose reach times this exceeds [`CellGrid::pad`] (one starting
/// some hundred grid sizes away) is not walked: [`CellGrid::closest_hit`]
/// gives it the tree's closest hit instead.
pub const CELL_GRID_WALK_ROUNDING: f32 = 1.0 / 2_097_152.0;
/// The grid is worth walking when its expected cost is below this share of the
/// tree's: the cost model counts instructions, not idle lanes, and a grid walk's
/// length varies more from ray to ray than a tree walk's. Measured on an H100
/// (bench/RESULTS.md): rtiow, at 0.37 of the tree's expected cost, renders
/// 1.3x faster through its grid; whitted19, at 0.80, renders 1.08x slower.
pub const CELL_GRID_ADVANTAGE: f32 = 0.6;

/// Relative costs in the expected-cost model of [`CellGrid::worthwhile`]: a
/// tree node step (two box tests, about 100 GPU instructions), a cell step
/// (about 25), a primitive test (about 50).
const COST_NODE: f32 = 4.0;
const COST_CELL: f32 = 1.0;
const COST_PRIM: f32 = 2.0;

/// A uniform grid over a scene's primitives ([`CellGrid::build`]).
///
/// Cell `(x, y, z)` is number `(z * res[1] + y) * res[0] + x`; it spans
/// `lo + cell * (x, y, z)` to `lo + cell * (x + 1, y + 1, z + 1)` and lists
/// `slots[offsets[i]..offsets[i + 1]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct CellGrid {
    /// The grid's lower corner.
    pub lo: Vec3,
    /// One cell's size on each axis.
    pub cell: Vec3,
    /// `1 / cell`.
    pub inv_cell: Vec3,
    /// Cells along each axis (each at least 1).
    pub res: [u32; 3],
    /// Where each cell's list starts in `slots`; one more entry than cells.
    pub offsets: Vec<u32>,
    /// The cells' lists: primitive slots in [`crate::Accel::primitives`],
    /// ascending within a cell.
    pub slots: Vec<u32>,
    /// Slots of the primitives kept out of the cells, ascending.
    pub large: Vec<u32>,
    /// How far every box was widened before it was listed ([`CELL_GRID_PAD`]
    /// of the grid's scale).
    pub pad: f32,
}

/// A primitive's bounding box, as the tree builder takes it.
fn primitive_box(p: &Primitive) -> Aabb {
    let row = |r: [f32; 4]| Vec3::new(r[0], r[1], r[2]);
    if p.kind() == KIND_SPHERE {
        crate::bvh::sphere_bounds(row(p.a), p.b[0].abs())
    } else {
        crate::bvh::triangle_bounds(row(p.a), row(p.b), row(p.c))
    }
}

/// Cells along each axis for `count` primitives in `bounds`: about
/// `cells_per_prim` cells a primitive, cubic where the bounds allow, within
/// [`CELL_GRID_MAX_RES`] and [`CELL_GRID_MAX_CELLS`].
fn resolution(bounds: &Aabb, count: usize, cells_per_prim: f32) -> [u32; 3] {
    let ext = bounds.extent();
    // A flat or thin grid still gets a volume: no axis counts as thinner than
    // 1e-3 of the largest.
    let floor = ext.max_element() * 1e-3;
    let e = ext.max(Vec3::splat(floor));
    let target = (cells_per_prim * count as f32).min(CELL_GRID_MAX_CELLS as f32);
    let scale = libm::cbrtf(target / (e.x * e.y * e.z));
    let mut res = [0u32; 3];
    for (i, r) in res.iter_mut().enumerate() {
        // `as u32` saturates: NaN becomes 0, which the clamp raises to 1.
        *r = (libm::ceilf(ext[i] * scale) as u32).clamp(1, CELL_GRID_MAX_RES);
    }
    while res[0] * res[1] * res[2] > CELL_GRID_MAX_CELLS {
        let i = (0..3).max_by_key(|&i| res[i]).unwrap_or(0);
        res[i] = (res[i] / 2).max(1);
    }
    res
}

/// The range of cells `[lo, hi]` along `axis` that `b` overlaps, clamped to the grid.
#[inline]
fn cell_span(lo: Vec3, inv_cell: Vec3, res: [u32; 3], b: &Aabb, axis: usize) -> (u32, u32) {
    let cell = |x: f32| {
        let c = libm::floorf((x - lo[axis]) * inv_cell[axis]);
        (c.max(0.0) as u32).min(res[axis] - 1)
    };
    (cell(b.min[axis]), cell(b.max[axis]))
}

impl CellGrid {
    /// The grid for `prims` (a scene's primitives in slot order), or `None`
    /// when the scene has no primitives, more than [`CELL_GRID_MAX_PRIMS`], a
    /// heightfield (its walk needs its heights, which the grid's tests do
    /// not read: [`crate::heightfield`]), a non-finite box, or more than
    /// [`CELL_GRID_MAX_LARGE`] primitives too large for cells.
    pub fn build(prims: &[Primitive]) -> Option<CellGrid> {
        Self::build_tuned(prims, CELL_GRID_CELLS_PER_PRIM, CELL_GRID_LARGE)
    }

    /// [`CellGrid::build`] with about `cells_per_prim` cells a listed
    /// primitive (instead of [`CELL_GRID_CELLS_PER_PRIM`]) and primitives more
    /// than `large` times the median one's size kept apart (instead of
    /// [`CELL_GRID_LARGE`]), to measure other choices.
    pub fn build_tuned(prims: &[Primitive], cells_per_prim: f32, large: f32) -> Option<CellGrid> {
        if prims.is_empty()
            || prims.len() > CELL_GRID_MAX_PRIMS
            || prims.iter().any(|p| p.kind() == KIND_HEIGHTFIELD)
        {
            return None;
        }
        let boxes: Vec<Aabb> = prims.iter().map(primitive_box).collect();
        if boxes
            .iter()
            .any(|b| !(b.min.is_finite() && b.max.is_finite()))
        {
            return None;
        }
        // Primitives far larger than the median one are kept apart.
        let mut sizes: Vec<f32> = boxes.iter().map(|b| b.extent().max_element()).collect();
        sizes.sort_by(f32::total_cmp);
        let limit = sizes[sizes.len() / 2] * large;
        let large: Vec<bool> = boxes
            .iter()
            .map(|b| b.extent().max_element() > limit)
            .collect();
        if large.iter().filter(|&&l| l).count() > CELL_GRID_MAX_LARGE {
            return None;
        }
        let (bounds, count) = Self::bounds_of(&boxes, &large);
        if count == 0 {
            return None;
        }
        let pad = CELL_GRID_PAD
            * (bounds.extent().max_element()
                + bounds.min.abs().max(bounds.max.abs()).max_element());
        let lo = bounds.min - Vec3::splat(pad);
        let hi = bounds.max + Vec3::splat(pad);
        let res = resolution(&Aabb { min: lo, max: hi }, count, cells_per_prim);
        let cell = (hi - lo) / Vec3::new(res[0] as f32, res[1] as f32, res[2] as f32);
        let inv_cell = Vec3::ONE / cell.max(Vec3::splat(f32::MIN_POSITIVE));
        let cells = (res[0] * res[1] * res[2]) as usize;
        // Count, then fill (slots ascending within each cell).
        let mut offsets = vec![0u32; cells + 1];
        let each_cell = |b: &Aabb, f: &mut dyn FnMut(usize)| {
            let padded = Aabb {
                min: b.min - Vec3::splat(pad),
                max: b.max + Vec3::splat(pad),
            };
            let [(x0, x1), (y0, y1), (z0, z1)] =
                core::array::from_fn(|i| cell_span(lo, inv_cell, res, &padded, i));
            for z in z0..=z1 {
                for y in y0..=y1 {
                    for x in x0..=x1 {
                        f(((z * res[1] + y) * res[0] + x) as usize);
                    }
                }
            }
        };
        for (k, b) in boxes.iter().enumerate() {
            if !large[k] {
                each_cell(b, &mut |c| offsets[c + 1] += 1);
            }
        }
        for c in 0..cells {
            offsets[c + 1] += offsets[c];
        }
        let mut fill = offsets.clone();
        let mut slots = vec![0u32; offsets[cells] as usize];
        for (k, b) in boxes.iter().enumerate() {
            if !large[k] {
                each_cell(b, &mut |c| {
                    slots[fill[c] as usize] = k as u32;
                    fill[c] += 1;
                });
            }
        }
        let large = (0..prims.len() as u32)
            .filter(|&k| large[k as usize])
            .collect();
        Some(CellGrid {
            lo,
            cell,
            inv_cell,
            res,
            offsets,
            slots,
            large,
            pad,
        })
    }

    /// The union of the boxes not marked large, and how many there are.
    fn bounds_of(boxes: &[Aabb], large: &[bool]) -> (Aabb, usize) {
        boxes
            .iter()
            .zip(large)
            .filter(|(_, l)| !**l)
            .fold((Aabb::EMPTY, 0), |(b, n), (x, _)| (b.union(*x), n + 1))
    }

    /// The grid's upper corner.
    #[inline]
    pub fn hi(&self) -> Vec3 {
        self.lo + self.cell * Vec3::new(self.res[0] as f32, self.res[1] as f32, self.res[2] as f32)
    }

    /// Number of cells.
    #[inline]
    pub fn cell_count(&self) -> usize {
        (self.res[0] * self.res[1] * self.res[2]) as usize
    }

    /// Expected costs of a closest-hit query, `(grid, tree)`, for random lines
    /// through the grid's box, without early termination: for a convex body
    /// inside another, the share of random lines through the outer that also
    /// meet the inner is the ratio of their surface areas (Crofton). The tree
    /// takes a node step for each inner node whose box a line meets and a
    /// primitive test for each primitive of each leaf it meets (the surface-area
    /// heuristic); the grid tests its large primitives, crosses
    /// `1 + sum (res_i - 1) * A_i / A` cells (`A_i` a cross-section across axis
    /// `i`) and tests each listed primitive of each cell it meets.
    pub fn expected_costs(&self, nodes: &[BvhNode]) -> (f32, f32) {
        let outer = Aabb {
            min: self.lo,
            max: self.hi(),
        };
        let area = outer.half_area().max(f32::MIN_POSITIVE);
        let e = outer.extent();
        let cross = [e.y * e.z, e.x * e.z, e.x * e.y];
        let crossed = 1.0
            + (0..3)
                .map(|i| (self.res[i] - 1) as f32 * cross[i] / area)
                .sum::<f32>();
        let cell_area = Aabb {
            min: Vec3::ZERO,
            max: self.cell,
        }
        .half_area();
        let grid = COST_PRIM * self.large.len() as f32
            + COST_CELL * crossed
            + COST_PRIM * self.slots.len() as f32 * cell_area / area;
        // Share of the lines through `outer` that meet `b` (clipped to `outer`).
        let share = |lo: &[f32; 4], hi: &[f32; 4]| {
            let b = Aabb {
                min: Vec3::new(lo[0], lo[1], lo[2]).max(outer.min),
                max: Vec3::new(hi[0], hi[1], hi[2]).min(outer.max),
            };
            if b.min.cmple(b.max).all() {
                (b.half_area() / area).min(1.0)
            } else {
                0.0
            }
        };
        let mut tree = if nodes.is_empty() { 0.0 } else { COST_NODE };
        for n in nodes {
            for (lo, hi, index, count) in [
                (&n.left_lo, &n.left_hi, n.left_index(), n.left_count()),
                (&n.right_lo, &n.right_hi, n.right_index(), n.right_count()),
            ] {
                if index == EMPTY_CHILD {
                    continue;
                }
                let cost = if count > 0 {
                    COST_PRIM * count as f32
                } else {
                    COST_NODE
                };
                tree += share(lo, hi) * cost;
            }
        }
        (grid, tree)
    }

    /// Whether walking this grid is expected to cost less than walking the
    /// tree `nodes` by [`CELL_GRID_ADVANTAGE`] ([`CellGrid::expected_costs`]).
    pub fn worthwhile(&self, nodes: &[BvhNode]) -> bool {
        let (grid, tree) = self.expected_costs(nodes);
        grid < CELL_GRID_ADVANTAGE * tree
    }

    /// The closest hit of `ray` among the primitives of `accel` (the scene the
    /// grid was built from): the large primitives first, then the cells the
    /// ray crosses, near to far, until the best hit lies before the end of the
    /// current cell; a ray that is not [`CellGrid::walkable`] gets the tree's
    /// answer. `Hit::prim` is the slot; a miss is [`Hit::MISS`] with
    /// `t = inf`, as [`crate::Accel::intersect_slot`]. Slots out of range are
    /// skipped.
    pub fn closest_hit(&self, accel: &Accel, ray: &Ray) -> Hit {
        if !self.walkable(ray) {
            return accel.intersect_slot(ray);
        }
        let prims = accel.primitives();
        let pre = RayPre::new(ray);
        let tmin = ray.tmin;
        let mut best = Hit {
            t: ray.tmax,
            ..Hit::MISS
        };
        // The CUDA walk gives spheres crate::intersect::sphere_missed_early
        // first (the same answers); here it made rtiow's CPU render 1.16x
        // slower, so this walk goes straight to ray_sphere.
        let test = |slot: u32, best: &mut Hit| {
            if let Some(p) = prims.get(slot as usize)
                && let Some((t, u, v)) = ray_primitive(&pre, p, tmin, best.t)
            {
                *best = Hit::new(t, u, v, slot, 0);
            }
        };
        for &slot in &self.large {
            test(slot, &mut best);
        }
        let tmax = best.t;
        self.walk(ray, tmax, |first, end| {
            for &slot in self.slots.get(first as usize..end as usize).unwrap_or(&[]) {
                test(slot, &mut best);
            }
            best.t
        });
        if !best.is_hit() {
            best.t = f32::INFINITY;
        }
        best
    }

    /// Whether the padding covers the walk's rounding for `ray`: its reach
    /// times [`CELL_GRID_WALK_ROUNDING`] is at most [`CellGrid::pad`]. A ray
    /// that starts too far away is answered by the tree instead.
    #[inline]
    pub fn walkable(&self, ray: &Ray) -> bool {
        self.walkable_from(ray.origin.abs().max_element())
    }

    /// Whether every ray whose origin lies within `origin_bound` of zero on
    /// each axis is [`CellGrid::walkable`]: a backend that knows where all of a
    /// frame's rays start (the camera, the scene's bounds) checks once and
    /// walks without a per-ray test. False for a NaN bound.
    #[inline]
    pub fn walkable_from(&self, origin_bound: f32) -> bool {
        let reach = 2.0 * origin_bound + self.lo.abs().max(self.hi().abs()).max_element();
        reach * CELL_GRID_WALK_ROUNDING <= self.pad
    }

    /// Walk the cells `ray` crosses within `(ray.tmin, tmax)`, near to far,
    /// calling `visit(first, end)` with each cell's slot range; it returns the
    /// best hit's `t` so far. The walk ends after the cell
    /// in which the best hit lies, or when the ray leaves the grid.
    fn walk(&self, ray: &Ray, tmax: f32, mut visit: impl FnMut(u32, u32) -> f32) {
        let (o, d) = (ray.origin, ray.dir);
        let inv = Vec3::ONE / d;
        let (lo, hi) = (self.lo, self.hi());
        // Entry and exit of the grid's box; `min`/`max` drop the NaN of a
        // 0 * inf (a ray parallel to a face lying in its plane).
        let ta = (lo - o) * inv;
        let tb = (hi - o) * inv;
        let mut t0 = ray.tmin;
        let mut t1 = tmax;
        for i in 0..3 {
            t0 = t0.max(ta[i].min(tb[i]));
            t1 = t1.min(ta[i].max(tb[i]));
        }
        if t0.is_nan() || t1.is_nan() || t0 > t1 {
            return;
        }
        let res = [self.res[0] as i32, self.res[1] as i32, self.res[2] as i32];
        let p = o + d * t0;
        let mut c = [0i32; 3];
        let mut step = [0i32; 3];
        let mut next = [f32::INFINITY; 3];
        for i in 0..3 {
            let f = libm::floorf((p[i] - lo[i]) * self.inv_cell[i]);
            c[i] = (f.max(0.0) as i32).min(res[i] - 1);
            step[i] = if d[i] > 0.0 {
                1
            } else if d[i] < 0.0 {
                -1
            } else {
                0
            };
            next[i] = self.boundary(o, inv, c[i], step[i], i);
        }
        // Each step moves one cell along one axis, so a walk crosses at most
        // this many cells; the bound also ends a walk that rounding stalls.
        for _ in 0..(res[0] + res[1] + res[2]) {
            let cell = ((c[2] * res[1] + c[1]) * res[0] + c[0]) as usize;
            let first = self.offsets.get(cell).copied().unwrap_or(0);
            let end = self.offsets.get(cell + 1).copied().unwrap_or(first);
            let best = visit(first, end);
            // The nearest face crossed next (x, then y, then z on a tie).
            let axis = if next[0] <= next[1] && next[0] <= next[2] {
                0
            } else if next[1] <= next[2] {
                1
            } else {
                2
            };
            let exit = next[axis];
            if best <= exit || exit.is_nan() || exit >= t1 {
                return;
            }
            c[axis] += step[axis];
            if c[axis] < 0 || c[axis] >= res[axis] {
                return;
            }
            next[axis] = self.boundary(o, inv, c[axis], step[axis], axis);
        }
    }

    /// Where the ray `o + t d` (`inv = 1 / d`) leaves cell `c` along `axis`
    /// moving `step` (-1, 0, 1): `inf` when it does not move along the axis.
    #[inline]
    fn boundary(&self, o: Vec3, inv: Vec3, c: i32, step: i32, axis: usize) -> f32 {
        if step == 0 {
            return f32::INFINITY;
        }
        let face = c + i32::from(step > 0);
        (self.lo[axis] + face as f32 * self.cell[axis] - o[axis]) * inv[axis]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Accel, Material, Scene};
    use proptest::prelude::*;

    fn check_against_tree(scene: &Scene, rays: &[Ray]) -> Result<(), TestCaseError> {
        let accel = Accel::build(scene).map_err(|e| TestCaseError::fail(alloc::format!("{e}")))?;
        let grid = CellGrid::build(accel.primitives());
        prop_assert!(grid.is_some(), "no grid");
        let grid = grid.unwrap(); // ok: checked above
        for ray in rays {
            let tree = accel.intersect_slot(ray);
            let walk = grid.closest_hit(&accel, ray);
            prop_assert_eq!(tree.t.to_bits(), walk.t.to_bits(), "ray {:?}", ray);
            if tree.prim != walk.prim {
                // Only an exact tie may resolve the other way.
                let pre = RayPre::new(ray);
                let p = &accel.primitives()[walk.prim as usize];
                let again = ray_primitive(&pre, p, ray.tmin, f32::INFINITY).map(|h| h.0);
                prop_assert_eq!(again, Some(tree.t), "ray {:?}", ray);
            }
        }
        Ok(())
    }

    fn vec3(r: f32) -> impl Strategy<Value = Vec3> {
        (-r..r, -r..r, -r..r).prop_map(|(x, y, z)| Vec3::new(x, y, z))
    }

    /// Directions with no component near zero: a ray lying in a box's face
    /// plane may miss a hit in the tree by the slab test's documented
    /// convention (`prism_core::intersect::ray_aabb`), which is not the grid's.
    fn dir() -> impl Strategy<Value = Vec3> {
        vec3(1.0).prop_filter("no zero component", |d| d.abs().min_element() > 1e-3)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Random spheres, one huge (kept apart), rays from anywhere: the grid's
        /// closest hit is the tree's, bit for bit.
        #[test]
        fn spheres_match_the_tree(
            spheres in prop::collection::vec((vec3(10.0), 0.1f32..0.4), 1..120),
            ground in any::<bool>(),
            rays in prop::collection::vec((vec3(14.0), dir(), -1.0f32..1.0), 64),
        ) {
            let mut scene = Scene::new();
            let m = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
            if ground {
                scene.add_sphere(Vec3::new(0.0, -1000.0, 0.0), 1000.0, m);
            }
            for (c, r) in &spheres {
                scene.add_sphere(*c, *r, m);
            }
            // Half the rays start within the scene, half some hundred thousand
            // scene sizes away, aimed into it (those are answered by the tree).
            let rays: Vec<Ray> = rays
                .iter()
                .enumerate()
                .map(|(i, &(o, d, tmin))| {
                    let o = if i % 2 == 0 { o } else { o - d * 1e6 };
                    Ray::segment(o, d, tmin.max(0.0), f32::INFINITY)
                })
                .collect();
            check_against_tree(&scene, &rays)?;
        }

        /// Random triangles, rays starting on them (the secondary rays of a
        /// render, where a hit at the start cell matters) and from outside.
        #[test]
        fn triangles_match_the_tree(
            tris in prop::collection::vec((vec3(8.0), vec3(1.0), vec3(1.0)), 1..150),
            rays in prop::collection::vec((0usize..150, 0.0f32..1.0, 0.0f32..1.0, dir(), vec3(12.0)), 64),
        ) {
            let mut scene = Scene::new();
            let m = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
            for (a, e1, e2) in &tris {
                scene.add_triangle(*a, *a + *e1, *a + *e2, m);
            }
            let rays: Vec<Ray> = rays
                .iter()
                .enumerate()
                .map(|(i, &(k, u, v, d, o))| {
                    let (a, e1, e2) = tris[k % tris.len()];
                    let on = a + e1 * (u * 0.5) + e2 * (v * 0.5);
                    if i % 2 == 0 {
                        Ray::segment(on, d, 1e-4, f32::INFINITY)
                    } else {
                        Ray::segment(o, d, 0.0, 30.0)
                    }
                })
                .collect();
            check_against_tree(&scene, &rays)?;
        }
    }

    /// rtiow's layout: the ground and the three big spheres are kept apart, the
    /// small ones share a flat grid, and the cost model picks the grid.
    #[test]
    fn sphere_field_keeps_large_spheres_apart_and_is_worthwhile() {
        let mut scene = Scene::new();
        let m = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
        scene.add_sphere(Vec3::new(0.0, -1000.0, 0.0), 1000.0, m);
        for a in -11i32..11 {
            for b in -11..11 {
                let jitter = ((a * 7 + b * 13).rem_euclid(10)) as f32 * 0.09;
                scene.add_sphere(
                    Vec3::new(a as f32 + jitter, 0.2, b as f32 + 0.9 - jitter),
                    0.2,
                    m,
                );
            }
        }
        for x in [-4.0, 0.0, 4.0] {
            scene.add_sphere(Vec3::new(x, 1.0, 0.0), 1.0, m);
        }
        let accel = Accel::build(&scene).unwrap(); // ok: a valid scene
        let grid = CellGrid::build(accel.primitives()).unwrap(); // ok: four large spheres
        let large_ids: Vec<u32> = grid
            .large
            .iter()
            .map(|&s| accel.primitives()[s as usize].id())
            .collect();
        let mut sorted = large_ids.clone();
        sorted.sort();
        assert_eq!(sorted, [0, 485, 486, 487]);
        assert_eq!(
            grid.res[1], 1,
            "the small spheres lie in one layer: {:?}",
            grid.res
        );
        let (g, t) = grid.expected_costs(accel.nodes());
        assert!(grid.worthwhile(accel.nodes()), "grid {g}, tree {t}");
    }

    /// Rays from a million units away, aimed at the spheres of a dense field:
    /// their points round by far more than the padding, so they are not
    /// walked, and get the tree's hits.
    #[test]
    fn far_rays_find_the_trees_hits() {
        let mut scene = Scene::new();
        let m = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
        let mut centers = Vec::new();
        for i in 0..24 {
            for j in 0..24 {
                let c = Vec3::new(
                    i as f32 * 0.3,
                    j as f32 * 0.3,
                    ((i * 7 + j * 3) % 5) as f32 * 0.3,
                );
                centers.push(c);
                scene.add_sphere(c, 0.1, m);
            }
        }
        let accel = Accel::build(&scene).unwrap(); // ok: a valid scene
        let grid = CellGrid::build(accel.primitives()).unwrap(); // ok: equal spheres
        let mut hits = 0;
        assert!(grid.walkable(&Ray::new(Vec3::splat(10.0), Vec3::X)));
        for (k, c) in centers.iter().enumerate() {
            let d =
                Vec3::new(0.3 + (k % 7) as f32 * 0.1, -0.5 + (k % 3) as f32 * 0.2, 1.0).normalize();
            let ray = Ray::new(*c + Vec3::splat(0.05) - d * 1e6, d);
            assert!(!grid.walkable(&ray));
            let tree = accel.intersect_slot(&ray);
            let walk = grid.closest_hit(&accel, &ray);
            assert_eq!(
                (walk.t.to_bits(), walk.prim),
                (tree.t.to_bits(), tree.prim),
                "ray {ray:?}"
            );
            hits += usize::from(tree.is_hit());
        }
        // The origins round by some 0.06, so a few rays pass their sphere.
        assert!(
            hits > centers.len() * 3 / 4,
            "{hits} of {} rays hit",
            centers.len()
        );
    }

    /// A grid whose cells list nothing finds only the large primitives: the
    /// walk's answer comes from its lists, so a check against the tree can fail.
    #[test]
    fn emptied_cells_lose_the_hits() {
        let mut scene = Scene::new();
        let m = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
        for i in 0..20 {
            scene.add_sphere(Vec3::new(i as f32, 0.0, 0.0), 0.3, m);
        }
        let accel = Accel::build(&scene).unwrap(); // ok: a valid scene
        let mut grid = CellGrid::build(accel.primitives()).unwrap(); // ok: no large spheres
        let ray = Ray::new(Vec3::new(5.0, 0.0, 5.0), Vec3::NEG_Z);
        assert_eq!(grid.closest_hit(&accel, &ray), accel.intersect_slot(&ray));
        assert!(grid.closest_hit(&accel, &ray).is_hit());
        grid.slots.clear();
        assert!(!grid.closest_hit(&accel, &ray).is_hit());
    }

    #[test]
    fn no_grid_for_empty_or_non_finite_scenes() {
        assert_eq!(CellGrid::build(&[]), None);
        let bad = Primitive::sphere(0, [f32::INFINITY, 0.0, 0.0], 1.0);
        assert_eq!(CellGrid::build(&[bad]), None);
    }
}
