//! Buffer layouts shared by every backend.
//!
//! Each struct here crosses to a device as raw bytes, so each is `#[repr(C)]`,
//! `bytemuck::Pod`, 16-byte aligned, and built only from 16-byte rows
//! (`[f32; 4]`, or four 4-byte scalars): no bare three-component vector, whose
//! alignment differs between Rust, CUDA and WGSL. Integer fields that share a row
//! with floats are stored as `f32::from_bits` and read back with `to_bits`
//! (CUDA: `__float_as_uint`, WGSL: `bitcast<u32>`).
//!
//! The CUDA structs (`backend-cuda/kernels/prism_types.cuh`) and the WGSL structs
//! (`backend-wgpu/shaders/types.wgsl`) mirror these; sizes and offsets are asserted
//! at compile time below, and the wgpu backend checks its WGSL layouts against them.

use alloc::vec::Vec;
use bytemuck::{Pod, Zeroable};
use core::mem::{offset_of, size_of};

mod checks;
pub use checks::{HeightfieldDefect, TreeDefect, check_heightfields, check_tree};

/// Number of `u32` entries in a traversal stack.
///
/// The BVH builder guarantees depth below this bound (see [`crate::bvh`]), so a
/// fixed stack can never overflow.
pub const TRAVERSAL_STACK_SIZE: usize = 64;

/// `BvhNode` child reference meaning "no child": its box is empty and never hit.
pub const EMPTY_CHILD: u32 = u32::MAX;

/// Kind tag of a [`Primitive`] (stored in `b[3]` as bits).
pub const KIND_TRIANGLE: u32 = 0;
/// Kind tag of a [`Primitive`] that is a sphere.
pub const KIND_SPHERE: u32 = 1;
/// Kind tag of a [`Primitive`] that is a heightfield (its box and the index of
/// its [`GpuHeightfield`]).
pub const KIND_HEIGHTFIELD: u32 = 2;

/// Most levels a heightfield's pyramid of maximum heights may have
/// ([`GpuHeightfield::level_offset`] has room for this many): a grid of up to
/// `2^31` cells along a side needs 32.
pub const HEIGHTFIELD_MAX_LEVELS: usize = 32;

/// A flattened BVH node holding the boxes of *both* children (the Aila-Laine layout).
///
/// One 64-byte fetch decides which children a ray enters and in which order, so a
/// traversal step is one dependent load instead of two. Each child is two rows:
/// `lo = (min.xyz, index)`, `hi = (max.xyz, count)` with the integers as float bits.
/// `count == 0` means the child is an inner node at `nodes[index]`; `count > 0`
/// means a leaf holding `prims[index .. index + count]`. An absent child has its
/// box at +inf (`min = max = +inf`, which no slab test enters), `index ==
/// EMPTY_CHILD` and `count == 0`.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct BvhNode {
    /// Left child: `min.xyz`, `w` = child index bits.
    pub left_lo: [f32; 4],
    /// Left child: `max.xyz`, `w` = primitive count bits (0 = inner node).
    pub left_hi: [f32; 4],
    /// Right child: `min.xyz`, `w` = child index bits.
    pub right_lo: [f32; 4],
    /// Right child: `max.xyz`, `w` = primitive count bits (0 = inner node).
    pub right_hi: [f32; 4],
}

impl BvhNode {
    /// Index of the left child (node index, or first primitive of a leaf).
    #[inline]
    pub fn left_index(&self) -> u32 {
        self.left_lo[3].to_bits()
    }
    /// Primitive count of the left child (0 for an inner node).
    #[inline]
    pub fn left_count(&self) -> u32 {
        self.left_hi[3].to_bits()
    }
    /// Index of the right child (node index, or first primitive of a leaf).
    #[inline]
    pub fn right_index(&self) -> u32 {
        self.right_lo[3].to_bits()
    }
    /// Primitive count of the right child (0 for an inner node).
    #[inline]
    pub fn right_count(&self) -> u32 {
        self.right_hi[3].to_bits()
    }
}

/// Largest tree (in nodes) whose [`octant_copies`] the GPU backends upload:
/// 2,048 nodes are 1 MiB for all eight copies. On an H100 the copies of rtiow's
/// 456 nodes made its CUDA frame 8% faster, while the trace kernels over the
/// bunny's and ogre's much larger trees ran 2-5% slower on incoherent rays with
/// them: spread over eight copies, a large tree no longer stays in the caches.
pub const OCTANT_COPIES_MAX_NODES: usize = 2048;

/// Eight copies of the tree `nodes`, one after the other, one per ray direction
/// octant, for GPU traversals that want each axis's near plane without a min/max.
///
/// Copy `o` has the bounds of both child boxes swapped on every axis `k` whose
/// bit `k` is set in `o`, and its inner child indices offset by `o * nodes.len()`,
/// so a traversal started at the root of its copy never leaves it. Leaf ranges
/// and absent children ([`EMPTY_CHILD`], boxes at +inf) are kept; copy 0 is
/// `nodes`. A ray whose `inv_dir` is negative exactly on the axes of `o` reads
/// copy `o`: its `lo` row then holds the near plane of every axis, and
/// `(lo - origin) * inv_dir` is the value [`crate::intersect::ray_aabb`] takes
/// as `min(t0, t1)` (rounding is monotonic: `lo <= hi` gives `lo - o <= hi - o`,
/// and multiplying by a negative `inv_dir` reverses the order), so every value
/// and decision of the slab test is the same.
///
/// `None` when `nodes` has more than [`OCTANT_COPIES_MAX_NODES`] nodes, or an
/// inner child index outside `nodes` (not a tree; every tree core builds has
/// all of them inside), so the offset indices never overflow.
///
/// ```
/// use prism_core::gpu::{BvhNode, octant_copies};
///
/// let copies = octant_copies(&[BvhNode::default()]);
/// assert_eq!(copies.map(|c| c.len()), Some(8));
/// ```
pub fn octant_copies(nodes: &[BvhNode]) -> Option<Vec<BvhNode>> {
    if nodes.len() > OCTANT_COPIES_MAX_NODES {
        return None;
    }
    let inside = |index: u32, count: u32| {
        count > 0 || index == EMPTY_CHILD || (index as usize) < nodes.len()
    };
    if !nodes
        .iter()
        .all(|n| inside(n.left_index(), n.left_count()) && inside(n.right_index(), n.right_count()))
    {
        return None;
    }
    let mut out = Vec::with_capacity(8 * nodes.len());
    for octant in 0..8usize {
        let base = (octant * nodes.len()) as u32;
        out.extend(nodes.iter().map(|n| {
            let mut c = *n;
            for axis in 0..3 {
                if octant & (1 << axis) != 0 {
                    core::mem::swap(&mut c.left_lo[axis], &mut c.left_hi[axis]);
                    core::mem::swap(&mut c.right_lo[axis], &mut c.right_hi[axis]);
                }
            }
            if c.left_count() == 0 && c.left_index() != EMPTY_CHILD {
                c.left_lo[3] = f32::from_bits(c.left_index() + base);
            }
            if c.right_count() == 0 && c.right_index() != EMPTY_CHILD {
                c.right_lo[3] = f32::from_bits(c.right_index() + base);
            }
            c
        }));
    }
    Some(out)
}

/// Whether a ray whose direction lies in octant `octant` (bit `k` set: negative
/// along axis `k`, as [`octant_of`] gives it) visits the right child of `node`
/// before the left one, in the near-first order of [`near_first_octant_copies`].
///
/// The order is a split-axis order, as in PBRT's BVH traversal: along the axis on which
/// the two children's box centres lie farthest apart, the child whose centre
/// comes first in the ray's direction is visited first. It is fixed per node and
/// octant, so a GPU traversal can read it from the node's slot order instead of
/// comparing the two entry distances at every step. An absent child (box at
/// +inf) and children with the same centre give no axis: left first.
///
/// ```
/// use prism_core::gpu::{BvhNode, right_child_first};
///
/// let mut node = BvhNode::default();
/// node.left_lo = [0.0, 0.0, 0.0, 0.0];
/// node.left_hi = [1.0, 1.0, 1.0, 0.0];
/// node.right_lo = [4.0, 0.0, 0.0, 0.0];
/// node.right_hi = [5.0, 1.0, 1.0, 0.0];
/// assert!(!right_child_first(&node, 0b000)); // +x: left (x in 0..1) is nearer
/// assert!(right_child_first(&node, 0b001)); // -x: right (x in 4..5) is nearer
/// ```
#[inline]
pub fn right_child_first(node: &BvhNode, octant: usize) -> bool {
    // Halves added and subtracted, not the bounds: no overflow for boxes near
    // f32::MAX.
    let centre = |lo: &[f32; 4], hi: &[f32; 4], k: usize| 0.5 * lo[k] + 0.5 * hi[k];
    let mut widest = 0.0f32;
    let mut right_first = false;
    for axis in 0..3 {
        let l = centre(&node.left_lo, &node.left_hi, axis);
        let r = centre(&node.right_lo, &node.right_hi, axis);
        let apart = (0.5 * r - 0.5 * l).abs();
        // Not finite: an absent child's box at +inf (inf - inf is NaN).
        if apart.is_finite() && apart > widest {
            widest = apart;
            let negative = octant & (1 << axis) != 0;
            right_first = (r < l) != negative;
        }
    }
    right_first
}

/// [`octant_copies`] with each node's children in near-first order for its copy:
/// in copy `o`, the child [`right_child_first`] names for octant `o` sits in the
/// left slot. A traversal that visits the two slots in order then needs no
/// comparison of entry distances; the CUDA render kernels and the wgpu shaders
/// walk these copies (`closest_hit_near_first` in [`crate::traverse`] is their
/// twin). Only the order of the two children changes, so the copies hold the
/// same boxes, leaves and inner nodes as [`octant_copies`]'s, and a closest-hit
/// traversal of them finds the same hits as [`crate::Accel::intersect_slot`]
/// except where two primitives tie at exactly the same `t`. `None` when
/// [`octant_copies`] is.
///
/// ```
/// use prism_core::glam::Vec3;
/// use prism_core::gpu::near_first_octant_copies;
/// use prism_core::{Accel, Material, Scene};
///
/// let mut scene = Scene::new();
/// let m = scene.add_material(Material::lambertian(Vec3::ONE));
/// scene.add_sphere(Vec3::ZERO, 1.0, m);
/// scene.add_sphere(Vec3::new(4.0, 0.0, 0.0), 1.0, m);
/// let accel = Accel::build(&scene)?;
/// let copies = near_first_octant_copies(accel.nodes()).unwrap(); // ok: a small tree
/// let n = accel.nodes().len();
/// // A ray going +x reads copy 0, whose left slot holds the sphere at x = 0;
/// // one going -x reads copy 1, whose left slot holds the sphere at x = 4, its
/// // bounds swapped on x (near plane, about 5, first).
/// assert!(copies[0].left_lo[0] < 0.0);
/// assert!(copies[n].left_lo[0] > 4.0);
/// # Ok::<(), prism_core::Error>(())
/// ```
pub fn near_first_octant_copies(nodes: &[BvhNode]) -> Option<Vec<BvhNode>> {
    let mut copies = octant_copies(nodes)?;
    let n = nodes.len();
    for (octant, copy) in copies.chunks_exact_mut(n.max(1)).enumerate() {
        for (node, c) in nodes.iter().zip(copy.iter_mut()) {
            if right_child_first(node, octant) {
                core::mem::swap(&mut c.left_lo, &mut c.right_lo);
                core::mem::swap(&mut c.left_hi, &mut c.right_hi);
            }
        }
    }
    Some(copies)
}

/// The octant copy (index into [`octant_copies`]) a ray with inverse direction
/// `inv_dir` reads: bit `k` set when `inv_dir[k] < 0`.
#[inline]
pub fn octant_of(inv_dir: [f32; 3]) -> usize {
    (inv_dir[0] < 0.0) as usize
        | ((inv_dir[1] < 0.0) as usize) << 1
        | ((inv_dir[2] < 0.0) as usize) << 2
}

/// The rays a GPU render counted, from its ray tally read back as bytes: the
/// sum of the tally's little-endian `u64` slots, wrapping as the device's
/// additions do. The render kernels spread their counts over many slots
/// because atomics of every warp on one address wait for each other.
pub fn ray_tally_sum(bytes: &[u8]) -> u64 {
    bytes
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
        .fold(0, u64::wrapping_add)
}

/// One primitive in BVH leaf order, triangle or sphere, in three 16-byte rows.
///
/// Primitives are stored in the order the BVH leaves reference them, so a leaf is
/// one contiguous run of memory (no index indirection on the hot path). Triangles
/// keep their three vertices (the watertight test needs vertices, not edges).
///
/// | kind        | `a`                   | `b`                          | `c`             |
/// |-------------|-----------------------|------------------------------|-----------------|
/// | triangle    | `v0.xyz`, id bits     | `v1.xyz`, `KIND_TRIANGLE`    | `v2.xyz`, 0     |
/// | sphere      | `center.xyz`, id bits | `radius, 1 / radius, size`, `KIND_SPHERE`| 0 |
/// | heightfield | `min.xyz`, id bits    | `max.xyz`, `KIND_HEIGHTFIELD` | descriptor bits, `size`, 0, 0 |
///
/// `id` is the primitive's id in the [`crate::Scene`] (what a [`crate::Hit`] reports).
/// A sphere's `1 / radius` and `size` (its largest `|centre|` component plus its
/// radius, [`crate::integrator::primitive_size`]) are worked out once here, in
/// the same `f32` operations a shader would repeat at every hit: an IEEE division
/// costs a GPU some ten instructions. A heightfield's record holds its box (in
/// its geometry's object space, [`crate::Heightfield::tree_bounds`]), the index of its [`GpuHeightfield`] in
/// [`crate::Accel::heightfields`] and its size (the largest coordinate of its
/// box: the scale of its rounding, [`crate::integrator::primitive_size`]).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Primitive {
    /// First row (see the table above).
    pub a: [f32; 4],
    /// Second row.
    pub b: [f32; 4],
    /// Third row.
    pub c: [f32; 4],
}

impl Primitive {
    /// A triangle record.
    #[inline]
    pub fn triangle(id: u32, v0: [f32; 3], v1: [f32; 3], v2: [f32; 3]) -> Self {
        Self {
            a: [v0[0], v0[1], v0[2], f32::from_bits(id)],
            b: [v1[0], v1[1], v1[2], f32::from_bits(KIND_TRIANGLE)],
            c: [v2[0], v2[1], v2[2], 0.0],
        }
    }
    /// A sphere record, with its `1 / radius` and size (see the table above).
    #[inline]
    pub fn sphere(id: u32, center: [f32; 3], radius: f32) -> Self {
        let size = glam::Vec3::from(center).abs().max_element() + radius;
        Self {
            a: [center[0], center[1], center[2], f32::from_bits(id)],
            b: [radius, 1.0 / radius, size, f32::from_bits(KIND_SPHERE)],
            c: [0.0; 4],
        }
    }
    /// A heightfield record: its box `[lo, hi]`, the index of its
    /// [`GpuHeightfield`] and its size (see the table above).
    #[inline]
    pub fn heightfield(id: u32, lo: [f32; 3], hi: [f32; 3], descriptor: u32, size: f32) -> Self {
        Self {
            a: [lo[0], lo[1], lo[2], f32::from_bits(id)],
            b: [hi[0], hi[1], hi[2], f32::from_bits(KIND_HEIGHTFIELD)],
            c: [f32::from_bits(descriptor), size, 0.0, 0.0],
        }
    }
    /// The scene primitive id.
    #[inline]
    pub fn id(&self) -> u32 {
        self.a[3].to_bits()
    }
    /// [`KIND_TRIANGLE`], [`KIND_SPHERE`] or [`KIND_HEIGHTFIELD`].
    #[inline]
    pub fn kind(&self) -> u32 {
        self.b[3].to_bits()
    }
    /// A heightfield record's index into [`crate::Accel::heightfields`].
    #[inline]
    pub fn heightfield_index(&self) -> u32 {
        self.c[0].to_bits()
    }
}

/// A heightfield as its walk reads it ([`crate::heightfield::ray_heightfield`]):
/// its grid, its cell size and where each level of its pyramid of maximum
/// heights lies in the scene's one height array
/// ([`crate::Accel::heightfield_heights`]). Ten rows, 160 bytes.
///
/// | row | contents |
/// |-----|----------|
/// | `dims` | width (cells along x), depth (cells along z), level count, 0 |
/// | `scale` | cell size, `1 / cell size`, largest height, size (the largest coordinate of its box) |
/// | `level_offset[k / 4][k % 4]` | first entry of level `k` in the height array |
///
/// Level 0 holds the column heights, `z * width + x`; level `k` is a grid of
/// `((width - 1) >> k) + 1` by `((depth - 1) >> k) + 1` entries, entry `(i, j)`
/// (at `j * level_width + i`) the largest height of the cells `(x, z)` with
/// `x >> k == i` and `z >> k == j`; the last level is one entry, the largest
/// height of all. Unused offsets are 0.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuHeightfield {
    /// Width and depth in cells, number of levels, 0.
    pub dims: [u32; 4],
    /// Cell size, its inverse, the largest height, the size.
    pub scale: [f32; 4],
    /// First entry of each level in the height array.
    pub level_offset: [[u32; 4]; HEIGHTFIELD_MAX_LEVELS / 4],
}

impl GpuHeightfield {
    /// Cells along x.
    #[inline]
    pub fn width(&self) -> u32 {
        self.dims[0]
    }
    /// Cells along z.
    #[inline]
    pub fn depth(&self) -> u32 {
        self.dims[1]
    }
    /// Levels of the pyramid (at least 1).
    #[inline]
    pub fn levels(&self) -> u32 {
        self.dims[2]
    }
    /// Edge of a cell.
    #[inline]
    pub fn cell_size(&self) -> f32 {
        self.scale[0]
    }
    /// First entry of level `level` in the height array (0 past the last
    /// level the record has room for).
    #[inline]
    pub fn level_offset(&self, level: u32) -> u32 {
        let k = level as usize;
        self.level_offset.get(k / 4).map_or(0, |row| row[k % 4])
    }
}

/// A material as the integrators read it: three rows, lobes as weights.
///
/// Lobes are mixed, never switched on: a path picks a lobe by comparing one random
/// number with the cumulative `lobe_weights` (see [`crate::material`]).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuMaterial {
    /// `rgb` base colour (Lambert and metal albedo), `w` = metal fuzz in `[0, 1]`.
    pub albedo_fuzz: [f32; 4],
    /// `rgb` emitted radiance, `w` = index of refraction of the dielectric lobe.
    pub emission_ior: [f32; 4],
    /// Probability of each lobe: Lambert, metal, dielectric; `w` unused (0).
    /// The sum is at most 1; the rest is absorbed.
    pub lobe_weights: [f32; 4],
}

/// One slot of the 8-bit sRGB encoding table ([`crate::image::Srgb8Table`]).
///
/// The one buffer element that is not a 16-byte row: the devices read it as a
/// two-word vector (CUDA `uint2`, WGSL `vec2<u32>`), 8-byte aligned and packed
/// with stride 8 in all three languages. `step` is stored as `f32` bits.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Srgb8Slot {
    /// Bits of the smallest linear value in the slot that encodes to
    /// `base + 1` (2.0, above every clamped value, when none does).
    pub step: u32,
    /// The 8-bit value at the slot's first linear value.
    pub base: u32,
}

/// A ray as three rows: `(origin.xyz, tmin)`, `(dir.xyz, tmax)`, `(mask, 0, 0, 0)`.
///
/// The same bytes as [`crate::Ray`] (whose first two rows are one record of
/// the `.rays` files), so ray batches upload without conversion.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuRay {
    /// `origin.xyz`, `tmin`.
    pub origin_tmin: [f32; 4],
    /// `dir.xyz`, `tmax`.
    pub dir_tmax: [f32; 4],
    /// `x` = visibility mask, `yzw` = 0.
    pub mask: [u32; 4],
}

/// An instance as the traversals read it: its world-to-object transform and
/// what a walk and a shading point need of it, in four rows.
///
/// | row | contents |
/// |-----|----------|
/// | `world_to_object[k]` | row `k` of the world-to-object transform: `(m_k0, m_k1, m_k2, t_k)` |
/// | `info` | root node of the geometry's tree, mask, material override ([`GpuInstance::NO_MATERIAL`]: none), scale |
///
/// The integers of `info` are stored as `f32` bits. The scale bounds how
/// much the object-to-world transform stretches a length (the Frobenius norm
/// of its linear part), for the surface margin of a hit on the instance
/// ([`crate::integrator::surface_margin`]). A removed instance has root
/// [`EMPTY_CHILD`] and mask 0.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuInstance {
    /// World-to-object rows `(m_k0, m_k1, m_k2, t_k)`.
    pub world_to_object: [[f32; 4]; 3],
    /// Root node, mask, material override (bits) and scale.
    pub info: [f32; 4],
}

impl GpuInstance {
    /// The material override of an instance that keeps its geometry's.
    pub const NO_MATERIAL: u32 = u32::MAX;

    /// Root node of the instance's geometry tree.
    #[inline]
    pub fn root(&self) -> u32 {
        self.info[0].to_bits()
    }
    /// Visibility mask (low 8 bits).
    #[inline]
    pub fn mask(&self) -> u32 {
        self.info[1].to_bits()
    }
    /// Material override, or [`GpuInstance::NO_MATERIAL`].
    #[inline]
    pub fn material(&self) -> u32 {
        self.info[2].to_bits()
    }
    /// Bound on the object-to-world stretch of a length.
    #[inline]
    pub fn scale(&self) -> f32 {
        self.info[3]
    }
}

/// The thin-lens camera frame for one image size (see [`crate::Camera::frame`]).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuCamera {
    /// Eye position, `w` = lens radius (0 = pinhole).
    pub origin_lens: [f32; 4],
    /// Point on the focus plane at the image's bottom-left corner, `w` = 0.
    pub lower_left: [f32; 4],
    /// Full image width on the focus plane, `w` = 0.
    pub horizontal: [f32; 4],
    /// Full image height on the focus plane, `w` = 0.
    pub vertical: [f32; 4],
    /// Camera right unit vector (lens sampling), `w` = 0.
    pub u: [f32; 4],
    /// Camera up unit vector (lens sampling), `w` = 0.
    pub v: [f32; 4],
}

/// Everything a render kernel needs besides the scene buffers; one per frame.
///
/// CUDA keeps it in constant memory, wgpu in a uniform buffer.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct RenderParams {
    /// The camera frame.
    pub camera: GpuCamera,
    /// Sky colour at the bottom of the gradient (`dir.y = -1`; a level ray sees
    /// the mean of this and `sky_zenith`), `w` = 0. See [`crate::Sky`].
    pub sky_horizon: [f32; 4],
    /// Sky colour towards the zenith (`dir.y = +1`), `w` = 0.
    pub sky_zenith: [f32; 4],
    /// Key light position (Whitted, AO shadow rays), `w` = 0.
    pub light_position: [f32; 4],
    /// Key light colour, `w` = 0.
    pub light_color: [f32; 4],
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// Samples per pixel.
    pub spp: u32,
    /// Maximum path depth (path), mirror bounces (Whitted).
    pub max_depth: u32,
    /// Frame seed.
    pub seed: u32,
    /// [`crate::Integrator`] as `u32`.
    pub integrator: u32,
    /// Ambient-occlusion rays per primary hit.
    pub ao_samples: u32,
    /// 1 if the AO integrator also traces a shadow ray to the key light.
    pub ao_shadows: u32,
    /// Maximum length of an ambient-occlusion ray.
    pub ao_distance: f32,
    /// Depth from which Russian roulette may end a path.
    pub rr_depth: u32,
    /// Number of primitives in the scene (bounds checks on device).
    pub prim_count: u32,
    /// Always 0 (it pads the struct to a 16-byte row). The WGSL kernels OR it
    /// into products that must not be fused into FMAs: a value the shader
    /// compiler cannot see keeps each product rounded on its own, as here.
    pub opaque_zero: u32,
    /// The sun ([`crate::Sun`]): centre `xyz`, radius `w`; all 0 without a sun
    /// (a valid sun's radius is positive, so `w > 0` says there is one).
    pub sun_center_radius: [f32; 4],
    /// The sun's radiance `xyz`; `w` is 1 when the path integrator samples it
    /// directly (next-event estimation), 0 when only chance hits find it. A
    /// flag in the radiance row keeps the sun in two rows.
    pub sun_radiance: [f32; 4],
    /// The AO integrator's fractional ray count as a threshold: a pixel whose
    /// block's pattern value is below it traces `ao_samples + 1` AO rays
    /// ([`crate::integrator::ao_rays_at`], [`crate::backend::ao_extra_threshold`]);
    /// 0: every pixel traces `ao_samples`. A `u32`, not the `f32` share, so
    /// every backend picks the same pixels by an integer compare.
    pub ao_extra: u32,
    /// Always 0: `pad0..pad2` fill the last row to 16 bytes (a uniform
    /// buffer's struct size is a multiple of 16). Three words, not an array:
    /// an array in a WGSL uniform would need a 16-byte stride.
    pub pad0: u32,
    /// Always 0 (see `pad0`).
    pub pad1: u32,
    /// Always 0 (see `pad0`).
    pub pad2: u32,
}

// Compile-time layout contract: the CUDA and WGSL mirrors assume exactly these.
const _: () = {
    assert!(size_of::<BvhNode>() == 64);
    assert!(offset_of!(BvhNode, left_lo) == 0);
    assert!(offset_of!(BvhNode, left_hi) == 16);
    assert!(offset_of!(BvhNode, right_lo) == 32);
    assert!(offset_of!(BvhNode, right_hi) == 48);

    assert!(size_of::<Primitive>() == 48);
    assert!(offset_of!(Primitive, a) == 0);
    assert!(offset_of!(Primitive, b) == 16);
    assert!(offset_of!(Primitive, c) == 32);

    assert!(size_of::<GpuMaterial>() == 48);
    assert!(offset_of!(GpuMaterial, albedo_fuzz) == 0);
    assert!(offset_of!(GpuMaterial, emission_ior) == 16);
    assert!(offset_of!(GpuMaterial, lobe_weights) == 32);

    assert!(size_of::<Srgb8Slot>() == 8);
    assert!(offset_of!(Srgb8Slot, step) == 0);
    assert!(offset_of!(Srgb8Slot, base) == 4);

    assert!(size_of::<GpuRay>() == 48);
    assert!(offset_of!(GpuRay, origin_tmin) == 0);
    assert!(offset_of!(GpuRay, dir_tmax) == 16);
    assert!(offset_of!(GpuRay, mask) == 32);

    assert!(size_of::<GpuHeightfield>() == 160);
    assert!(offset_of!(GpuHeightfield, dims) == 0);
    assert!(offset_of!(GpuHeightfield, scale) == 16);
    assert!(offset_of!(GpuHeightfield, level_offset) == 32);

    assert!(size_of::<GpuInstance>() == 64);
    assert!(offset_of!(GpuInstance, world_to_object) == 0);
    assert!(offset_of!(GpuInstance, info) == 48);

    assert!(size_of::<crate::Ray>() == 48);
    assert!(offset_of!(crate::Ray, origin) == 0);
    assert!(offset_of!(crate::Ray, tmin) == 12);
    assert!(offset_of!(crate::Ray, dir) == 16);
    assert!(offset_of!(crate::Ray, tmax) == 28);
    assert!(offset_of!(crate::Ray, mask) == 32);
    assert!(size_of::<crate::Hit>() == 32);
    assert!(offset_of!(crate::Hit, t) == 0);
    assert!(offset_of!(crate::Hit, u) == 4);
    assert!(offset_of!(crate::Hit, v) == 8);
    assert!(offset_of!(crate::Hit, prim) == 12);
    assert!(offset_of!(crate::Hit, instance) == 16);
    assert!(offset_of!(crate::Hit, cell) == 20);
    assert!(offset_of!(crate::Hit, face) == 24);

    assert!(size_of::<GpuCamera>() == 96);
    assert!(offset_of!(GpuCamera, origin_lens) == 0);
    assert!(offset_of!(GpuCamera, lower_left) == 16);
    assert!(offset_of!(GpuCamera, horizontal) == 32);
    assert!(offset_of!(GpuCamera, vertical) == 48);
    assert!(offset_of!(GpuCamera, u) == 64);
    assert!(offset_of!(GpuCamera, v) == 80);

    assert!(size_of::<RenderParams>() == 256);
    assert!(offset_of!(RenderParams, camera) == 0);
    assert!(offset_of!(RenderParams, sky_horizon) == 96);
    assert!(offset_of!(RenderParams, sky_zenith) == 112);
    assert!(offset_of!(RenderParams, light_position) == 128);
    assert!(offset_of!(RenderParams, light_color) == 144);
    assert!(offset_of!(RenderParams, width) == 160);
    assert!(offset_of!(RenderParams, height) == 164);
    assert!(offset_of!(RenderParams, spp) == 168);
    assert!(offset_of!(RenderParams, max_depth) == 172);
    assert!(offset_of!(RenderParams, seed) == 176);
    assert!(offset_of!(RenderParams, integrator) == 180);
    assert!(offset_of!(RenderParams, ao_samples) == 184);
    assert!(offset_of!(RenderParams, ao_shadows) == 188);
    assert!(offset_of!(RenderParams, ao_distance) == 192);
    assert!(offset_of!(RenderParams, rr_depth) == 196);
    assert!(offset_of!(RenderParams, prim_count) == 200);
    assert!(offset_of!(RenderParams, opaque_zero) == 204);
    assert!(offset_of!(RenderParams, sun_center_radius) == 208);
    assert!(offset_of!(RenderParams, sun_radiance) == 224);
    assert!(offset_of!(RenderParams, ao_extra) == 240);
    assert!(offset_of!(RenderParams, pad0) == 244);
    assert!(offset_of!(RenderParams, pad1) == 248);
    assert!(offset_of!(RenderParams, pad2) == 252);
};

/// `(struct name, size, [(field, offset)])` of one buffer struct.
pub type StructLayout = (&'static str, usize, &'static [(&'static str, usize)]);

/// The layout of every buffer struct that the shaders mirror as a named struct,
/// for checks against those mirrors. ([`Srgb8Slot`] is read as a two-word
/// vector, and `Ray`/`Hit` are checked by the backends' own layout tests; the
/// compile-time assertions above pin all of them.)
pub fn layouts() -> [StructLayout; 8] {
    [
        (
            "BvhNode",
            size_of::<BvhNode>(),
            &[
                ("left_lo", 0),
                ("left_hi", 16),
                ("right_lo", 32),
                ("right_hi", 48),
            ],
        ),
        (
            "Primitive",
            size_of::<Primitive>(),
            &[("a", 0), ("b", 16), ("c", 32)],
        ),
        (
            "GpuMaterial",
            size_of::<GpuMaterial>(),
            &[
                ("albedo_fuzz", 0),
                ("emission_ior", 16),
                ("lobe_weights", 32),
            ],
        ),
        (
            "GpuRay",
            size_of::<GpuRay>(),
            &[("origin_tmin", 0), ("dir_tmax", 16), ("mask", 32)],
        ),
        (
            "GpuHeightfield",
            size_of::<GpuHeightfield>(),
            &[("dims", 0), ("scale", 16), ("level_offset", 32)],
        ),
        (
            "GpuInstance",
            size_of::<GpuInstance>(),
            &[("world_to_object", 0), ("info", 48)],
        ),
        (
            "GpuCamera",
            size_of::<GpuCamera>(),
            &[
                ("origin_lens", 0),
                ("lower_left", 16),
                ("horizontal", 32),
                ("vertical", 48),
                ("u", 64),
                ("v", 80),
            ],
        ),
        (
            "RenderParams",
            size_of::<RenderParams>(),
            &[
                ("camera", 0),
                ("sky_horizon", 96),
                ("sky_zenith", 112),
                ("light_position", 128),
                ("light_color", 144),
                ("width", 160),
                ("height", 164),
                ("spp", 168),
                ("max_depth", 172),
                ("seed", 176),
                ("integrator", 180),
                ("ao_samples", 184),
                ("ao_shadows", 188),
                ("ao_distance", 192),
                ("rr_depth", 196),
                ("prim_count", 200),
                ("opaque_zero", 204),
                ("sun_center_radius", 208),
                ("sun_radiance", 224),
                ("ao_extra", 240),
                ("pad0", 244),
                ("pad1", 248),
                ("pad2", 252),
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intersect::{RayPre, ray_aabb};
    use crate::{Accel, Material, Ray, Scene};
    use glam::Vec3;

    #[test]
    fn ray_tally_sum_adds_every_slot_and_wraps_like_the_device() {
        let mut bytes = [0u8; 64];
        assert_eq!(ray_tally_sum(&bytes), 0);
        for (slot, value) in [(0, 5u64), (1, 7), (7, 1 << 40)] {
            bytes[slot * 8..slot * 8 + 8].copy_from_slice(&value.to_le_bytes());
        }
        assert_eq!(ray_tally_sum(&bytes), 5 + 7 + (1 << 40));
        // A slot of [low word, high word] u32 pairs reads as one u64.
        bytes[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
        bytes[20..24].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(
            ray_tally_sum(&bytes),
            5 + 7 + (1 << 40) + (1 << 32) + u32::MAX as u64
        );
        bytes[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            ray_tally_sum(&bytes),
            5 + (1 << 40) + (1 << 32) + u32::MAX as u64 - 1
        );
    }

    /// A small tree of 40 spheres (also for the checks' tests).
    pub(super) fn tree() -> Accel {
        let mut scene = Scene::new();
        let m = scene.add_material(Material::lambertian(Vec3::ONE));
        for i in 0..40 {
            let f = i as f32;
            scene.add_sphere(Vec3::new(f, (f * 0.7).sin(), -f * 0.5), 0.4, m);
        }
        Accel::build(&scene).unwrap() // ok: test, a valid scene
    }

    #[test]
    fn octant_copies_swap_bounds_and_stay_in_their_copy() {
        let accel = tree();
        assert!(accel.nodes().len() > 4);
        check_octant_copies(accel.nodes());
        // A tree with an absent child: one sphere's root holds one leaf.
        let mut one = crate::Scene::new();
        let m = one.add_material(crate::Material::lambertian(glam::Vec3::splat(0.5)));
        one.add_sphere(glam::Vec3::ZERO, 1.0, m);
        let one = crate::Accel::build(&one).unwrap(); // ok: test, a valid scene
        let root = one.nodes()[0];
        assert!(
            root.left_index() == EMPTY_CHILD || root.right_index() == EMPTY_CHILD,
            "{root:?}"
        );
        check_octant_copies(one.nodes());
    }

    /// Every copy of `nodes` holds its bounds swapped by the octant's signs,
    /// leaf ranges and absent children as they are, and inner children in the
    /// same copy.
    fn check_octant_copies(nodes: &[BvhNode]) {
        let n = nodes.len();
        let copies = octant_copies(nodes).unwrap(); // ok: test, a small tree
        assert_eq!(copies.len(), 8 * n);
        // Bit for bit: an absent child's index is a NaN pattern.
        let bits = |v: &[BvhNode]| bytemuck::cast_slice::<BvhNode, u32>(v).to_vec();
        assert_eq!(bits(&copies[..n]), bits(nodes), "copy 0 is the tree");
        for octant in 0..8 {
            for (i, (c, t)) in copies[octant * n..(octant + 1) * n]
                .iter()
                .zip(nodes)
                .enumerate()
            {
                for axis in 0..3 {
                    let swapped = octant & (1 << axis) != 0;
                    let pick = |lo: [f32; 4], hi: [f32; 4]| {
                        if swapped {
                            (hi[axis], lo[axis])
                        } else {
                            (lo[axis], hi[axis])
                        }
                    };
                    assert_eq!(
                        (c.left_lo[axis], c.left_hi[axis]),
                        pick(t.left_lo, t.left_hi),
                        "node {i}"
                    );
                    assert_eq!(
                        (c.right_lo[axis], c.right_hi[axis]),
                        pick(t.right_lo, t.right_hi),
                        "node {i}"
                    );
                }
                assert_eq!(
                    (c.left_count(), c.right_count()),
                    (t.left_count(), t.right_count())
                );
                for (ci, ti, count) in [
                    (c.left_index(), t.left_index(), t.left_count()),
                    (c.right_index(), t.right_index(), t.right_count()),
                ] {
                    if count > 0 || ti == EMPTY_CHILD {
                        assert_eq!(ci, ti, "node {i}: leaf ranges and absent children are kept");
                    } else {
                        assert_eq!(
                            ci as usize,
                            octant * n + ti as usize,
                            "node {i}: same node, same copy"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn near_first_copies_are_the_octant_copies_with_the_nearer_child_left() {
        let accel = tree();
        let nodes = accel.nodes();
        let n = nodes.len();
        let plain = octant_copies(nodes).unwrap(); // ok: test, a small tree
        let near_first = near_first_octant_copies(nodes).unwrap(); // ok: as above
        assert_eq!(check_tree(&near_first, accel.primitives().len()), Ok(()));
        let bits = |v: &BvhNode| bytemuck::cast::<BvhNode, [u32; 16]>(*v);
        let mut swapped = 0;
        for octant in 0..8 {
            for (i, node) in nodes.iter().enumerate() {
                let (p, q) = (&plain[octant * n + i], &near_first[octant * n + i]);
                let mut want = *p;
                if right_child_first(node, octant) {
                    want.left_lo = p.right_lo;
                    want.left_hi = p.right_hi;
                    want.right_lo = p.left_lo;
                    want.right_hi = p.left_hi;
                    swapped += 1;
                }
                assert_eq!(bits(q), bits(&want), "octant {octant} node {i}");
            }
        }
        // Both orders occur, and an octant's mirror image takes the other one
        // wherever the node has a split axis.
        assert!(swapped > 0 && swapped < 8 * n, "{swapped} of {}", 8 * n);
        for (i, node) in nodes.iter().enumerate() {
            if node.right_index() != EMPTY_CHILD {
                assert_ne!(
                    right_child_first(node, 0),
                    right_child_first(node, 7),
                    "node {i}"
                );
            }
        }
    }

    #[test]
    fn right_child_first_follows_the_widest_separation_and_the_sign() {
        let node = |l: [f32; 3], r: [f32; 3]| {
            let row = |c: [f32; 3]| [c[0], c[1], c[2], 0.0];
            BvhNode {
                left_lo: row(l),
                left_hi: row(l),
                right_lo: row(r),
                right_hi: row(r),
            }
        };
        // Apart most along y (3), then z (2), then x (1): y decides.
        let n = node([0.0, 3.0, 0.0], [1.0, 0.0, 2.0]);
        for octant in 0..8 {
            assert_eq!(
                right_child_first(&n, octant),
                octant & 0b010 == 0,
                "octant {octant}"
            );
        }
        // The same centre: left first whatever the ray.
        let same = node([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]);
        assert!((0..8).all(|o| !right_child_first(&same, o)));
        // An absent right child (box at +inf): left first.
        let mut absent = node([0.0; 3], [0.0; 3]);
        absent.right_lo = [
            f32::INFINITY,
            f32::INFINITY,
            f32::INFINITY,
            f32::from_bits(EMPTY_CHILD),
        ];
        absent.right_hi = [f32::INFINITY; 4];
        absent.right_hi[3] = 0.0;
        assert!((0..8).all(|o| !right_child_first(&absent, o)));
        // Centres near f32::MAX do not overflow into a NaN separation.
        let big = node([-f32::MAX, 0.0, 0.0], [f32::MAX, 0.0, 0.0]);
        assert!(!right_child_first(&big, 0) && right_child_first(&big, 1));
    }

    #[test]
    fn octant_copies_refuse_large_trees() {
        let nodes = alloc::vec![BvhNode::default(); OCTANT_COPIES_MAX_NODES + 1];
        assert!(octant_copies(&nodes).is_none());
        assert!(octant_copies(&nodes[..OCTANT_COPIES_MAX_NODES]).is_some());
    }

    #[test]
    fn octant_copies_refuse_child_indices_outside_the_nodes() {
        // An inner child index near u32::MAX would overflow when offset into
        // a copy; any index past the last node is not a tree.
        for index in [2, 1000, u32::MAX - 1] {
            let mut n = BvhNode::default();
            n.left_lo[3] = f32::from_bits(index);
            n.left_hi[3] = f32::from_bits(0);
            assert!(octant_copies(&[n, n]).is_none(), "left index {index}");
            let mut n = BvhNode::default();
            n.right_lo[3] = f32::from_bits(index);
            n.right_hi[3] = f32::from_bits(0);
            assert!(octant_copies(&[n, n]).is_none(), "right index {index}");
        }
        // A leaf's first primitive is not a node index, whatever its value.
        let mut leaf = BvhNode::default();
        leaf.left_lo[3] = f32::from_bits(u32::MAX - 1);
        leaf.left_hi[3] = f32::from_bits(1);
        assert!(octant_copies(&[leaf]).is_some());
    }

    #[test]
    fn near_planes_of_the_octant_copy_give_the_slab_test() {
        // Every child box of the tree, against rays in all eight octants (and
        // with zero direction components): the near-plane form on the copy the
        // ray reads gives ray_aabb's value.
        let accel = tree();
        let copies = octant_copies(accel.nodes()).unwrap(); // ok: test, a small tree
        let n = accel.nodes().len();
        let dirs = [-1.0f32, -0.0, 0.0, 0.5];
        for &dx in &dirs {
            for &dy in &dirs {
                for &dz in &dirs {
                    let dir = Vec3::new(dx, dy, dz);
                    if dir == Vec3::ZERO {
                        continue;
                    }
                    let ray = Ray::new(Vec3::new(3.0, 0.0, -2.0), dir);
                    let pre = RayPre::new(&ray);
                    let o = octant_of(pre.inv_dir.into());
                    for (t, c) in accel.nodes().iter().zip(&copies[o * n..(o + 1) * n]) {
                        for (lo, hi, near, far) in [
                            (t.left_lo, t.left_hi, c.left_lo, c.left_hi),
                            (t.right_lo, t.right_hi, c.right_lo, c.right_hi),
                        ] {
                            let v = |r: [f32; 4]| Vec3::new(r[0], r[1], r[2]);
                            let core = ray_aabb(&pre, v(lo), v(hi), ray.tmin, ray.tmax);
                            let tn = (v(near) - pre.origin) * pre.inv_dir;
                            let tf = (v(far) - pre.origin) * pre.inv_dir;
                            assert_eq!(
                                tn,
                                ((v(lo) - pre.origin) * pre.inv_dir)
                                    .min((v(hi) - pre.origin) * pre.inv_dir)
                            );
                            assert_eq!(
                                tf,
                                ((v(lo) - pre.origin) * pre.inv_dir)
                                    .max((v(hi) - pre.origin) * pre.inv_dir)
                            );
                            let enter = tn.x.max(tn.y).max(tn.z).max(ray.tmin);
                            let exit = crate::intersect::widen_exit(
                                tf.x.min(tf.y).min(tf.z).min(ray.tmax),
                            );
                            let octant = if enter <= exit { enter } else { f32::INFINITY };
                            assert_eq!(core, octant);
                        }
                    }
                }
            }
        }
    }
}
