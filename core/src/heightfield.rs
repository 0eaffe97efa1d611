//! Heightfields: a grid of column heights (terrain, voxel cities) as one kind
//! of geometry beside triangles and spheres.
//!
//! # The shape
//!
//! A [`Heightfield`] of `width` x `depth` cells of edge `cell_size` is, in its
//! geometry's object space, the union of the column boxes
//!
//! ```text
//! [x cs, (x + 1) cs] x [0, h(x, z)] x [z cs, (z + 1) cs]      (cs = cell_size)
//! ```
//!
//! one per cell `(x, z)`; a column of height 0 is empty. The plane `x = i cs`
//! is the `f32` product `i as f32 * cs` ([`Heightfield::plane`]), wherever it
//! is used. A ray hits the first crossing of any column box's boundary at a `t`
//! in `(tmin, tmax)`: the face it enters through, or, for a ray that starts
//! inside a column, the face it leaves through. That is what the same columns
//! written as explicit box faces (two triangles a face, twelve a column,
//! [`Heightfield::column_faces`]) give through the watertight triangle test,
//! which the property tests hold it to (core/tests/heightfield.rs). A hit names
//! the cell (`z * width + x`) and the face ([`FACE_TOP`] and the others,
//! [`face_normal`]).
//!
//! In a scene a heightfield is one primitive of its geometry, in its tree as
//! its box ([`crate::Geometry::add_heightfield`]); it can be instanced like a
//! mesh. A backend uploads [`crate::Accel::heightfields`] (one
//! [`GpuHeightfield`] each) and [`crate::Accel::heightfield_heights`] (every
//! heightfield's pyramid, one after the other).
//!
//! # The walk
//!
//! [`ray_heightfield`] walks the cells the ray crosses in order, a 2D DDA on
//! `(x, z)`, over a pyramid of maximum heights (the *maximum mipmaps* of Tevs,
//! Ihrke and Seidel, "Maximum Mipmaps for Fast, Accurate, and Scalable
//! Dynamic Height Field Rendering", I3D 2008): level `k` holds the largest
//! height of each block of `2^k x 2^k` cells. At a node of level `k > 0` the
//! walk tests the box of the node's footprint up to the node's maximum height;
//! where the ray misses it over the rest of its way through the node (above
//! the maximum, or below the ground), every column of the node is missed, and
//! the walk leaves the node at once and goes up a level; otherwise it goes
//! down a level. At level 0 it runs the column's own box test. The walk keeps
//! integer cell coordinates: leaving a node sets the coordinate of the exit
//! axis exactly (the first cell past the node) and the other one from the
//! exit point, clamped into the node and never moved backwards, so every step
//! moves forward along one axis and the walk ends after at most `width +
//! depth` steps across (each followed by at most `levels` steps down).
//!
//! Why a skip never loses a hit of the box test: the node test is the column
//! test's own expressions (the slab values of its box) on the node's planes and its maximum
//! `M`. Every value is `(plane - origin) * inv_dir`, monotonic in the plane
//! (an IEEE subtraction and a multiplication by the same number keep the order
//! of their inputs), so for a column inside the node (its planes between the
//! node's, its height `h <= M`) the node's entry distance is at most the
//! column's and its exit distance at least the column's, on every axis, and so
//! after the `max` and `min` of the three axes and [`widen_exit`] (monotonic
//! too). A column crossing at `t` in `(tmin, tmax)` has `near_c <=
//! widen(far_c)`, `t` one of `near_c`, `far_c`, `near_c < tmax` and `t <=
//! widen(far_c)`; so the node has `near_n <= widen(far_n)`, `near_n < tmax` and
//! `widen(far_n) >= t`. Every crossing the walk has not yet passed lies at or
//! after `t_lo`, the distance at which it entered the current cell (the exit
//! distance of the node it left, the very value the cells past that plane
//! take as their entry distance on that axis), so a node failing `near_n <=
//! widen(far_n) && near_n < tmax && widen(far_n) >= t_lo` holds no crossing the
//! walk still needs, and skipping it is exact, not a guess. A column of height
//! 0 is empty, and so is a node whose maximum is 0.
//!
//! Rays through edges and corners: where the ray leaves a cell exactly through
//! its corner (both exit distances equal) it touches the two side cells only
//! at that vertical edge, and the walk tests both before going on diagonally
//! (a node left through its corner is walked at the next level down instead,
//! until the corner cell is reached). A direction component that is exactly 0
//! is parallel to that axis's planes: its slab is "the origin lies within the
//! closed interval", not `(plane - origin) * 1e30`, so a ray running along a
//! plane between two columns (a vertical ray through a corner, a horizontal
//! one in a cell boundary plane or exactly level with a top) sees the columns
//! on both sides, as the triangles do: the walk runs once per column the
//! origin's plane borders, at most four times.

use crate::aabb::Aabb;
use crate::error::{Error, try_vec};
use crate::gpu::{GpuHeightfield, HEIGHTFIELD_MAX_LEVELS, Primitive};
use crate::intersect::{RayPre, widen_exit};
use alloc::vec::Vec;
use glam::Vec3;

/// Most cells one heightfield may hold: a cell index `z * width + x` fits a
/// `u32` with room, and a heightfield stays within core's primitive limit
/// ([`crate::scene::MAX_PRIMITIVES`]), which its cells are measured against.
pub const MAX_HEIGHTFIELD_CELLS: usize = crate::geometry::MAX_PRIMITIVES;

/// How much [`Heightfield::tree_bounds`] widens a heightfield's box, as a
/// share of its size (2^-20).
pub const BOX_PAD: f32 = 1.0 / (1u32 << 20) as f32;

/// Face of a column: its top (`+y`), what a ray from above hits.
pub const FACE_TOP: u32 = 0;
/// Face of a column: its bottom (`-y`, on the ground plane).
pub const FACE_BOTTOM: u32 = 1;
/// Face of a column: its side facing `-x`.
pub const FACE_NEG_X: u32 = 2;
/// Face of a column: its side facing `+x`.
pub const FACE_POS_X: u32 = 3;
/// Face of a column: its side facing `-z`.
pub const FACE_NEG_Z: u32 = 4;
/// Face of a column: its side facing `+z`.
pub const FACE_POS_Z: u32 = 5;

/// The outward unit normal of column face `face` ([`FACE_TOP`] and the
/// others) in the heightfield's object space; zero for any other value.
///
/// ```
/// use prism_core::glam::Vec3;
/// use prism_core::heightfield::{FACE_NEG_Z, FACE_TOP, face_normal};
///
/// assert_eq!(face_normal(FACE_TOP), Vec3::Y);
/// assert_eq!(face_normal(FACE_NEG_Z), Vec3::NEG_Z);
/// assert_eq!(face_normal(6), Vec3::ZERO);
/// ```
#[inline(always)]
pub fn face_normal(face: u32) -> Vec3 {
    match face {
        FACE_TOP => Vec3::Y,
        FACE_BOTTOM => Vec3::NEG_Y,
        FACE_NEG_X => Vec3::NEG_X,
        FACE_POS_X => Vec3::X,
        FACE_NEG_Z => Vec3::NEG_Z,
        FACE_POS_Z => Vec3::Z,
        _ => Vec3::ZERO,
    }
}

/// Cells of level `level` of a pyramid along a side of `n` cells.
#[inline(always)]
fn level_cells(n: u32, level: u32) -> u32 {
    ((n - 1) >> level) + 1
}

/// Levels of the pyramid of a grid of `width` x `depth` cells (both at least
/// 1): down to one entry, `1 + ceil(log2(max(width, depth)))`.
#[inline]
fn level_count(width: u32, depth: u32) -> u32 {
    let n = width.max(depth);
    if n <= 1 {
        1
    } else {
        1 + (32 - (n - 1).leading_zeros())
    }
}

/// A grid of column heights: see the [module docs](self) for its shape.
///
/// Built once, checked (every error names the value and, for a height, the
/// cell), with its pyramid of maximum heights, which a scene's
/// [`crate::Accel`] copies as it is.
///
/// ```
/// use prism_core::heightfield::{FACE_TOP, Heightfield};
/// use prism_core::glam::Vec3;
/// use prism_core::{Accel, Material, Ray, Scene};
///
/// // 3 x 2 cells of edge 2, row by row (z * width + x); one empty column.
/// let hf = Heightfield::new(3, 2, 2.0, &[1.0, 0.0, 3.0, 2.0, 2.0, 5.0])?;
/// assert_eq!(hf.max_height(), 5.0);
/// let mut scene = Scene::new();
/// let grey = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
/// let id = scene.add_heightfield(hf, grey);
/// let accel = Accel::build(&scene)?;
/// // Straight down onto cell (2, 0), whose top is at y = 3.
/// let hit = accel.intersect(&Ray::new(Vec3::new(5.0, 10.0, 1.0), Vec3::NEG_Y));
/// assert_eq!((hit.prim, hit.cell, hit.face), (id, 2, FACE_TOP));
/// assert!((hit.t - 7.0).abs() < 1e-6);
/// # Ok::<(), prism_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Heightfield {
    width: u32,
    depth: u32,
    cell_size: f32,
    /// Level 0 (the heights, `z * width + x`), then each coarser level.
    pyramid: Vec<f32>,
    /// First entry of each level in `pyramid`.
    offsets: [u32; HEIGHTFIELD_MAX_LEVELS],
    levels: u32,
}

impl Heightfield {
    /// A heightfield of `width` x `depth` cells of edge `cell_size`, with the
    /// column heights `heights` row by row (`heights[z * width + x]`).
    ///
    /// Fails when a side is 0 ([`Error::HeightfieldEmpty`]), the grid has
    /// more than [`MAX_HEIGHTFIELD_CELLS`] cells
    /// ([`Error::HeightfieldTooLarge`]), `heights` does not hold exactly
    /// `width * depth` values ([`Error::HeightfieldSamples`]), the cell size
    /// is not positive and finite or makes the grid's extent overflow
    /// ([`Error::HeightfieldParameterInvalid`]), a height is NaN, infinite or
    /// negative ([`Error::HeightfieldHeightInvalid`], naming the cell), or the
    /// host has not the memory ([`Error::HostOutOfMemory`]).
    pub fn new(width: u32, depth: u32, cell_size: f32, heights: &[f32]) -> Result<Self, Error> {
        Self::build(width, depth, cell_size, heights.len(), |i| heights[i])
    }

    /// [`Heightfield::new`] from 16-bit samples (a height map), each height
    /// `sample as f32 * height_scale`. Fails as [`Heightfield::new`] does, and
    /// when `height_scale` is not positive and finite.
    pub fn from_u16(
        width: u32,
        depth: u32,
        cell_size: f32,
        samples: &[u16],
        height_scale: f32,
    ) -> Result<Self, Error> {
        check_scale(height_scale)?;
        Self::build(width, depth, cell_size, samples.len(), |i| {
            samples[i] as f32 * height_scale
        })
    }

    /// [`Heightfield::from_u16`] from 8-bit samples (a grey image).
    pub fn from_u8(
        width: u32,
        depth: u32,
        cell_size: f32,
        samples: &[u8],
        height_scale: f32,
    ) -> Result<Self, Error> {
        check_scale(height_scale)?;
        Self::build(width, depth, cell_size, samples.len(), |i| {
            samples[i] as f32 * height_scale
        })
    }

    /// Check the grid, then read `given` heights (`height(i)` for `i` below
    /// `given`, called only once `given` is known to be `width * depth`).
    fn build(
        width: u32,
        depth: u32,
        cell_size: f32,
        given: usize,
        height: impl Fn(usize) -> f32,
    ) -> Result<Self, Error> {
        if width == 0 || depth == 0 {
            return Err(Error::HeightfieldEmpty { width, depth });
        }
        let cells = width as u64 * depth as u64;
        if cells > MAX_HEIGHTFIELD_CELLS as u64 {
            return Err(Error::HeightfieldTooLarge {
                width,
                depth,
                limit: MAX_HEIGHTFIELD_CELLS,
            });
        }
        if given as u64 != cells {
            return Err(Error::HeightfieldSamples {
                width,
                depth,
                given,
            });
        }
        if !(cell_size > 0.0 && cell_size.is_finite()) {
            return Err(Error::HeightfieldParameterInvalid {
                field: "cell_size",
                value: cell_size,
                reason: "must be positive and finite",
            });
        }
        if !(width.max(depth) as f32 * cell_size).is_finite() || !(1.0 / cell_size).is_finite() {
            return Err(Error::HeightfieldParameterInvalid {
                field: "cell_size",
                value: cell_size,
                reason: "the grid's extent (cells times cell size) and its inverse must be finite",
            });
        }
        let levels = level_count(width, depth);
        let mut offsets = [0u32; HEIGHTFIELD_MAX_LEVELS];
        let mut total = 0u64;
        for (k, o) in offsets.iter_mut().enumerate().take(levels as usize) {
            *o = total as u32;
            total += level_cells(width, k as u32) as u64 * level_cells(depth, k as u32) as u64;
        }
        // ok: at most 2^30 cells make fewer than 2^31 entries over all levels.
        let mut pyramid = try_vec(total as usize, "heightfield heights")?;
        for z in 0..depth {
            for x in 0..width {
                let h = height((z * width + x) as usize);
                if !(h >= 0.0 && h.is_finite()) {
                    return Err(Error::HeightfieldHeightInvalid { x, z, height: h });
                }
                // `+ 0.0` makes a height of -0 a plain 0.
                pyramid.push(h + 0.0);
            }
        }
        for k in 1..levels {
            let (w, d) = (level_cells(width, k), level_cells(depth, k));
            let (pw, pd) = (level_cells(width, k - 1), level_cells(depth, k - 1));
            let prev = offsets[k as usize - 1] as usize;
            for j in 0..d {
                for i in 0..w {
                    let mut m = 0.0f32;
                    for (ci, cj) in [
                        (2 * i, 2 * j),
                        (2 * i + 1, 2 * j),
                        (2 * i, 2 * j + 1),
                        (2 * i + 1, 2 * j + 1),
                    ] {
                        if ci < pw && cj < pd {
                            // ok: (ci, cj) lies inside level k - 1, pushed before.
                            m = m.max(pyramid[prev + (cj * pw + ci) as usize]);
                        }
                    }
                    pyramid.push(m);
                }
            }
        }
        Ok(Heightfield {
            width,
            depth,
            cell_size,
            pyramid,
            offsets,
            levels,
        })
    }

    /// Cells along x.
    #[inline]
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Cells along z.
    #[inline]
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Edge of a cell.
    #[inline]
    pub fn cell_size(&self) -> f32 {
        self.cell_size
    }

    /// Number of cells, `width * depth`.
    #[inline]
    pub fn cell_count(&self) -> usize {
        self.width as usize * self.depth as usize
    }

    /// The column heights, row by row (`z * width + x`).
    #[inline]
    pub fn heights(&self) -> &[f32] {
        &self.pyramid[..self.cell_count()]
    }

    /// The height of cell `(x, z)`, `None` outside the grid.
    #[inline]
    pub fn height(&self, x: u32, z: u32) -> Option<f32> {
        (x < self.width && z < self.depth).then(|| self.pyramid[(z * self.width + x) as usize])
    }

    /// The largest height (0 when every column is empty).
    #[inline]
    pub fn max_height(&self) -> f32 {
        self.pyramid.last().copied().unwrap_or(0.0)
    }

    /// Levels of the pyramid of maximum heights (level 0 is the heights).
    #[inline]
    pub fn levels(&self) -> u32 {
        self.levels
    }

    /// Level `level` of the pyramid: `((width - 1) >> level) + 1` by
    /// `((depth - 1) >> level) + 1` entries, row by row (see
    /// [`GpuHeightfield`]); `None` past the last level.
    pub fn level(&self, level: u32) -> Option<&[f32]> {
        if level >= self.levels {
            return None;
        }
        let start = self.offsets[level as usize] as usize;
        let n = level_cells(self.width, level) as usize * level_cells(self.depth, level) as usize;
        self.pyramid.get(start..start + n)
    }

    /// Every level of the pyramid, one after the other (what
    /// [`crate::Accel::heightfield_heights`] holds of this heightfield).
    #[inline]
    pub fn pyramid(&self) -> &[f32] {
        &self.pyramid
    }

    /// The plane between cells `i - 1` and `i` along x or z: `i as f32 *
    /// cell_size`, the one rounding of it that every test uses.
    #[inline]
    pub fn plane(&self, i: u32) -> f32 {
        i as f32 * self.cell_size
    }

    /// The box of every column, `[0, width cs] x [0, max height] x [0, depth cs]`.
    #[inline]
    pub fn bounds(&self) -> Aabb {
        Aabb {
            min: Vec3::ZERO,
            max: Vec3::new(
                self.plane(self.width),
                self.max_height(),
                self.plane(self.depth),
            ),
        }
    }

    /// The box a scene's tree holds the heightfield in: [`Heightfield::bounds`]
    /// widened on every side by [`BOX_PAD`] of its [`Heightfield::size`].
    /// The tree's slab test gives a ray with a direction component of exactly
    /// 0 whose origin lies exactly on a face plane of a box no length inside
    /// it ([`crate::intersect::MIN_DIR_COMPONENT`]'s convention), which would
    /// cull the whole heightfield for a ray along its outer boundary or level
    /// with its tallest top; the walk itself treats such rays exactly.
    #[inline]
    pub fn tree_bounds(&self) -> Aabb {
        let b = self.bounds();
        let pad = Vec3::splat(self.size() * BOX_PAD);
        Aabb {
            min: b.min - pad,
            max: b.max + pad,
        }
    }

    /// The rounding scale of a hit on the heightfield: the largest coordinate
    /// of its box ([`crate::integrator::primitive_size`]).
    #[inline]
    pub fn size(&self) -> f32 {
        self.bounds().max.max_element()
    }

    /// The box of the column of cell `(x, z)` (empty in height for a column
    /// of height 0), `None` outside the grid.
    pub fn column_box(&self, x: u32, z: u32) -> Option<Aabb> {
        let h = self.height(x, z)?;
        Some(Aabb {
            min: Vec3::new(self.plane(x), 0.0, self.plane(z)),
            max: Vec3::new(self.plane(x + 1), h, self.plane(z + 1)),
        })
    }

    /// The device record of this heightfield, its levels placed from entry
    /// `base` of the scene's height array.
    pub fn descriptor(&self, base: u32) -> GpuHeightfield {
        let mut level_offset = [[0u32; 4]; HEIGHTFIELD_MAX_LEVELS / 4];
        for k in 0..self.levels as usize {
            level_offset[k / 4][k % 4] = base + self.offsets[k];
        }
        GpuHeightfield {
            dims: [self.width, self.depth, self.levels, 0],
            scale: [
                self.cell_size,
                1.0 / self.cell_size,
                self.max_height(),
                self.size(),
            ],
            level_offset,
        }
    }
}

fn check_scale(height_scale: f32) -> Result<(), Error> {
    if height_scale > 0.0 && height_scale.is_finite() {
        Ok(())
    } else {
        Err(Error::HeightfieldParameterInvalid {
            field: "height_scale",
            value: height_scale,
            reason: "must be positive and finite",
        })
    }
}

/// A hit on a heightfield: distance, cell (`z * width + x`) and face.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeightfieldHit {
    /// Distance along the ray.
    pub t: f32,
    /// The cell, `z * width + x`.
    pub cell: u32,
    /// The face of its column ([`FACE_TOP`] and the others).
    pub face: u32,
}

/// The heightfields of a scene as the walks read them: the
/// [`crate::Accel::heightfields`] records and the
/// [`crate::Accel::heightfield_heights`] they index.
#[derive(Clone, Copy, Debug, Default)]
pub struct Heightfields<'a> {
    /// One record per heightfield ([`Primitive::heightfield_index`]).
    pub descriptors: &'a [GpuHeightfield],
    /// Every heightfield's pyramid.
    pub heights: &'a [f32],
}

impl Heightfields<'_> {
    /// No heightfields (a primitive record of that kind is never hit).
    pub const NONE: Heightfields<'static> = Heightfields {
        descriptors: &[],
        heights: &[],
    };

    /// The first crossing in `(tmin, tmax)` of the heightfield record `p`
    /// ([`ray_heightfield`]); `None` also for a record whose descriptor is
    /// not here.
    #[inline(always)]
    pub fn hit(&self, pre: &RayPre, p: &Primitive, tmin: f32, tmax: f32) -> Option<HeightfieldHit> {
        let d = self.descriptors.get(p.heightfield_index() as usize)?;
        ray_heightfield(pre, d, self.heights, tmin, tmax)
    }
}

mod walk;
#[cfg(test)]
use walk::Walk;
pub use walk::{WalkStart, ray_heightfield, start_level_of_run, walk_start};

mod columns;
pub use columns::{ColumnFace, ColumnMesh, FaceSet};

#[cfg(test)]
mod tests;
