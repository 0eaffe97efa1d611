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

use bytemuck::{Pod, Zeroable};
use core::mem::{offset_of, size_of};

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

/// One primitive in BVH leaf order, triangle or sphere, in three 16-byte rows.
///
/// Primitives are stored in the order the BVH leaves reference them, so a leaf is
/// one contiguous run of memory (no index indirection on the hot path). Triangles
/// keep their three vertices (the watertight test needs vertices, not edges).
///
/// | kind     | `a`                   | `b`                          | `c`             |
/// |----------|-----------------------|------------------------------|-----------------|
/// | triangle | `v0.xyz`, id bits     | `v1.xyz`, `KIND_TRIANGLE`    | `v2.xyz`, 0     |
/// | sphere   | `center.xyz`, id bits | `radius, 0, 0`, `KIND_SPHERE`| 0               |
///
/// `id` is the primitive's id in the [`crate::Scene`] (what a [`crate::Hit`] reports).
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
    /// A sphere record.
    #[inline]
    pub fn sphere(id: u32, center: [f32; 3], radius: f32) -> Self {
        Self {
            a: [center[0], center[1], center[2], f32::from_bits(id)],
            b: [radius, 0.0, 0.0, f32::from_bits(KIND_SPHERE)],
            c: [0.0; 4],
        }
    }
    /// The scene primitive id.
    #[inline]
    pub fn id(&self) -> u32 {
        self.a[3].to_bits()
    }
    /// [`KIND_TRIANGLE`] or [`KIND_SPHERE`].
    #[inline]
    pub fn kind(&self) -> u32 {
        self.b[3].to_bits()
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

/// A ray as two rows: `(origin.xyz, tmin)`, `(dir.xyz, tmax)`.
///
/// The same bytes as [`crate::Ray`] and as one record of the `.rays` files, so
/// ray batches upload without conversion.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuRay {
    /// `origin.xyz`, `tmin`.
    pub origin_tmin: [f32; 4],
    /// `dir.xyz`, `tmax`.
    pub dir_tmax: [f32; 4],
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
    /// Sky colour towards the horizon (`dir.y = -1` end of the gradient), `w` = 0.
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

    assert!(size_of::<GpuRay>() == 32);
    assert!(offset_of!(GpuRay, origin_tmin) == 0);
    assert!(offset_of!(GpuRay, dir_tmax) == 16);

    assert!(size_of::<crate::Ray>() == 32);
    assert!(size_of::<crate::Hit>() == 16);
    assert!(offset_of!(crate::Hit, t) == 0);
    assert!(offset_of!(crate::Hit, u) == 4);
    assert!(offset_of!(crate::Hit, v) == 8);
    assert!(offset_of!(crate::Hit, prim) == 12);

    assert!(size_of::<GpuCamera>() == 96);
    assert!(offset_of!(GpuCamera, origin_lens) == 0);
    assert!(offset_of!(GpuCamera, lower_left) == 16);
    assert!(offset_of!(GpuCamera, horizontal) == 32);
    assert!(offset_of!(GpuCamera, vertical) == 48);
    assert!(offset_of!(GpuCamera, u) == 64);
    assert!(offset_of!(GpuCamera, v) == 80);

    assert!(size_of::<RenderParams>() == 208);
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
};

/// `(struct name, size, [(field, offset)])` of one buffer struct.
pub type StructLayout = (&'static str, usize, &'static [(&'static str, usize)]);

/// The layout of every buffer struct that the shaders mirror as a named struct,
/// for checks against those mirrors. ([`Srgb8Slot`] is read as a two-word
/// vector, and `Ray`/`Hit` are checked by the backends' own layout tests; the
/// compile-time assertions above pin all of them.)
pub fn layouts() -> [StructLayout; 6] {
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
            &[("origin_tmin", 0), ("dir_tmax", 16)],
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
            ],
        ),
    ]
}
