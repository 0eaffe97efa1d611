//! The kernel sources, their build options, and compilation through NVRTC.
//!
//! The constants and buffer layouts the kernels depend on are not restated in
//! the `.cuh` files: they are passed as `-D` options generated here from
//! `prism_core`, and `prism_types.cuh` `static_assert`s every struct size and
//! field offset against them. A change in core that the kernels do not follow
//! therefore fails to compile (and the CPU-only compile test fails in CI).

use crate::driver::BACKEND;
use crate::nvrtc;
use prism_core::Error;
use prism_core::gpu::{
    EMPTY_CHILD, HEIGHTFIELD_MAX_LEVELS, KIND_HEIGHTFIELD, KIND_SPHERE, KIND_TRIANGLE,
    TRAVERSAL_STACK_SIZE,
};
use prism_core::integrator::{
    PHONG_AMBIENT, PHONG_DIFFUSE, PHONG_EXPONENT, PHONG_SPECULAR, SHADOW_KEEP, WHITTED_LOCAL,
};
use prism_core::intersect::{
    MIN_DIR_COMPONENT, SLAB_EXIT_SCALE, SLAB_EXIT_SCALE_NEGATIVE, SPHERE_EARLY_MISS_MARGIN,
    SPHERE_LEFT_BEHIND_SCALE,
};
use prism_core::point_grid::{POINT_GRID_FULL, POINT_GRID_SIDE, PointGridCell};
use prism_core::{Hit, Ray};
use std::mem::{offset_of, size_of};
use std::sync::Arc;

mod config;
pub use config::KernelConfig;

/// The kernel files: the main translation unit first, then the headers it
/// includes, as `(file name, contents)`.
pub const SOURCES: [(&str, &str); 20] = [
    ("prism.cu", include_str!("../kernels/prism.cu")),
    (
        "prism_types.cuh",
        include_str!("../kernels/prism_types.cuh"),
    ),
    ("intersect.cuh", include_str!("../kernels/intersect.cuh")),
    ("traverse.cuh", include_str!("../kernels/traverse.cuh")),
    (
        "heightfield.cuh",
        include_str!("../kernels/heightfield.cuh"),
    ),
    ("point_grid.cuh", include_str!("../kernels/point_grid.cuh")),
    ("cell_grid.cuh", include_str!("../kernels/cell_grid.cuh")),
    (
        "camera_bounds.cuh",
        include_str!("../kernels/camera_bounds.cuh"),
    ),
    ("rng.cuh", include_str!("../kernels/rng.cuh")),
    ("sampling.cuh", include_str!("../kernels/sampling.cuh")),
    ("material.cuh", include_str!("../kernels/material.cuh")),
    ("camera.cuh", include_str!("../kernels/camera.cuh")),
    ("image.cuh", include_str!("../kernels/image.cuh")),
    ("integrator.cuh", include_str!("../kernels/integrator.cuh")),
    ("two_level.cuh", include_str!("../kernels/two_level.cuh")),
    ("batch.cuh", include_str!("../kernels/batch.cuh")),
    ("refit.cuh", include_str!("../kernels/refit.cuh")),
    ("fast_build.cuh", include_str!("../kernels/fast_build.cuh")),
    (
        "clustered_build.cuh",
        include_str!("../kernels/clustered_build.cuh"),
    ),
    ("top_build.cuh", include_str!("../kernels/top_build.cuh")),
];

/// Base name of the path-tracing render kernel.
pub const KERNEL_RENDER_PATH: &str = "prism_render_path";
/// Base name of the Whitted render kernel.
pub const KERNEL_RENDER_WHITTED: &str = "prism_render_whitted";
/// Base name of the ambient-occlusion render kernel.
pub const KERNEL_RENDER_AO: &str = "prism_render_ao";
/// Base name of the path-tracing render kernel on the tree's octant copies
/// ([`KernelConfig::octant_trees`]).
pub const KERNEL_RENDER_PATH_OCTANTS: &str = "prism_render_path_octants";
/// The same for the Whitted render kernel.
pub const KERNEL_RENDER_WHITTED_OCTANTS: &str = "prism_render_whitted_octants";
/// The same for the ambient-occlusion render kernel.
pub const KERNEL_RENDER_AO_OCTANTS: &str = "prism_render_ao_octants";
/// Base name of the path-tracing render kernel whose closest hits walk the
/// scene's uniform grid ([`prism_core::cell_grid`]; any-hit rays walk the
/// tree's octant copies).
pub const KERNEL_RENDER_PATH_GRID: &str = "prism_render_path_grid";
/// The same for the Whitted render kernel.
pub const KERNEL_RENDER_WHITTED_GRID: &str = "prism_render_whitted_grid";
/// The same for the ambient-occlusion render kernel.
pub const KERNEL_RENDER_AO_GRID: &str = "prism_render_ao_grid";
/// The kernel that finds each tile's camera candidates before a frame
/// ([`KernelConfig::camera_cones`]); one for every scene kind.
pub const KERNEL_CAMERA_MASKS: &str = "prism_camera_masks";
/// Threads per block of [`KERNEL_CAMERA_MASKS`] (its `__launch_bounds__`).
pub const CAMERA_MASKS_THREADS: u32 = 128;
/// The masks [`KERNEL_CAMERA_MASKS`] stores for each tile: camera, reflection
/// and shadow candidates (`PRISM_MASK_*` in camera_bounds.cuh).
pub const MASKS_PER_TILE: usize = 3;
/// [`KERNEL_CAMERA_MASKS`]'s `lists` bit for reflection candidates
/// (`PRISM_LIST_REFLECTIONS`).
pub const LIST_REFLECTIONS: u32 = 1;
/// [`KERNEL_CAMERA_MASKS`]'s `lists` bit for shadow candidates
/// (`PRISM_LIST_SHADOWS`).
pub const LIST_SHADOWS: u32 = 2;
/// The kernel that rewrites a mesh geometry's slots from new vertices
/// (`update_scene`'s refit on the device); one for every scene kind.
pub const KERNEL_REFIT_SLOTS: &str = "prism_refit_slots";
/// The kernel that then recomputes the geometry's boxes bottom-up.
pub const KERNEL_REFIT_BOXES: &str = "prism_refit_boxes";
/// The kernels of the fast tree's build on the device (kernels/fast_build.cuh),
/// in launch order (the sort's three repeat four times).
pub const KERNEL_FAST_BUILD: [&str; 8] = [
    "prism_fast_boxes",
    "prism_fast_codes",
    "prism_fast_histogram",
    "prism_fast_scan",
    "prism_fast_scatter",
    "prism_fast_tree",
    "prism_fast_bottom_up",
    "prism_fast_emit",
];
/// The kernels of the clustered tree's build on the device
/// (kernels/clustered_build.cuh), after the fast build's boxes, codes and
/// sort: init, then rounds of nearest, count and merge, the one-block tail,
/// slots and emit.
pub const KERNEL_CLUSTERED_BUILD: [&str; 7] = [
    "prism_ploc_init",
    "prism_ploc_nearest",
    "prism_ploc_count",
    "prism_ploc_merge",
    "prism_ploc_tail",
    "prism_ploc_slots",
    "prism_ploc_emit",
];
/// Threads of the clustered build's one-block tail (`PRISM_PLOC_TAIL_THREADS`).
pub const CLUSTERED_TAIL_THREADS: u32 = 1024;
/// The most clusters the tail takes (`PRISM_PLOC_TAIL`): rounds run on the
/// whole device until this few are left.
pub const CLUSTERED_TAIL: u32 = 1024;
/// Words of the clustered build's round state (`PLOC_STATE_WORDS`).
pub const CLUSTERED_STATE_WORDS: usize = 8;
/// The kernels that place a frame's moves and start the tree over the
/// instances (kernels/top_build.cuh), in launch order; the fast build's
/// codes, sort, tree, bottom-up pass and emit finish it.
pub const KERNEL_TOP_BUILD: [&str; 3] = ["prism_top_place", "prism_top_commit", "prism_top_boxes"];
/// Threads per block of the fast build's kernels (`PRISM_FAST_THREADS`).
pub const FAST_BUILD_THREADS: u32 = 256;
/// Keys a block of the fast build's sort takes (`PRISM_FAST_SORT_TILE`).
pub const FAST_SORT_TILE: u32 = 256 * 16;
/// Threads per block of the refit kernels (their `__launch_bounds__`).
pub const REFIT_THREADS: u32 = 128;
/// Base name of the closest-hit batch kernel.
pub const KERNEL_INTERSECT: &str = "prism_intersect";
/// The batch kernels (closest hit, any hit) of a flat scene whose every
/// primitive is a heightfield (terrain): compiled for heightfields alone, so
/// that the walk keeps no ray set-up for triangles and spheres: a quarter
/// less code and 40% fewer spill instructions than the `_heightfields`
/// kernels, which also test triangles and spheres, and on an H200 the
/// city's rays 1-5% faster (bench/RESULTS.md). The WGSL modules are compiled
/// per scene with its kinds, so wgpu's already are.
pub const KERNEL_HEIGHTFIELDS_ONLY: [&str; 2] = [
    "prism_intersect_heightfields_only",
    "prism_occluded_heightfields_only",
];
/// Base name of the any-hit batch kernel.
pub const KERNEL_OCCLUDED: &str = "prism_occluded";
/// Base name of the path-tracing render kernel of two-level scenes (the walk
/// over instances, `two_level.cuh`).
pub const KERNEL_RENDER_PATH_INSTANCES: &str = "prism_render_path_instances";
/// The same for the Whitted render kernel.
pub const KERNEL_RENDER_WHITTED_INSTANCES: &str = "prism_render_whitted_instances";
/// The same for the ambient-occlusion render kernel.
pub const KERNEL_RENDER_AO_INSTANCES: &str = "prism_render_ao_instances";
/// Base name of the closest-hit batch kernel of two-level scenes.
pub const KERNEL_INTERSECT_INSTANCES: &str = "prism_intersect_instances";
/// Base name of the any-hit batch kernel of two-level scenes.
pub const KERNEL_OCCLUDED_INSTANCES: &str = "prism_occluded_instances";
/// Base name of the path-tracing render kernel compiled with the sun's code
/// (`PRISM_INTEGRATOR_PATH_SUN`), which only scenes with a sun run: the path
/// kernels of the others carry none of it.
pub const KERNEL_RENDER_PATH_SUN: &str = "prism_render_path_sun";
/// The same on the tree's octant copies.
pub const KERNEL_RENDER_PATH_SUN_OCTANTS: &str = "prism_render_path_sun_octants";
/// The same through the uniform grid.
pub const KERNEL_RENDER_PATH_SUN_GRID: &str = "prism_render_path_sun_grid";
/// The same for two-level scenes.
pub const KERNEL_RENDER_PATH_SUN_INSTANCES: &str = "prism_render_path_sun_instances";
/// Index of the sun's path kernel in each array of render kernels (after the
/// three integrators').
pub(crate) const RENDER_PATH_SUN: usize = 3;

/// The render kernel variant (index into the arrays of render kernels) of
/// `integrator` in a scene with or without a sun.
pub(crate) fn render_variant(integrator: prism_core::Integrator, sun: bool) -> usize {
    if integrator == prism_core::Integrator::Path && sun {
        RENDER_PATH_SUN
    } else {
        integrator as usize
    }
}

/// Which primitive kinds a scene holds. Every kernel is compiled once per kind,
/// so that a scene of one kind runs without the other kind's code, and only
/// the kernels of scenes holding a heightfield compile its walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SceneKind {
    /// Spheres only.
    Spheres = 0,
    /// Triangles only.
    Triangles = 1,
    /// Both.
    Mixed = 2,
    /// At least one heightfield, with triangles and spheres or not (the
    /// kernels test every kind: `PRISM_MIXED | PRISM_HEIGHTFIELDS`).
    Heightfields = 3,
}

impl SceneKind {
    /// Every kind, in index order.
    pub const ALL: [SceneKind; 4] = [
        SceneKind::Spheres,
        SceneKind::Triangles,
        SceneKind::Mixed,
        SceneKind::Heightfields,
    ];

    /// Kernel name suffix of this kind.
    pub fn suffix(self) -> &'static str {
        match self {
            SceneKind::Spheres => "_spheres",
            SceneKind::Triangles => "_triangles",
            SceneKind::Mixed => "_mixed",
            SceneKind::Heightfields => "_heightfields",
        }
    }

    /// The kind of a set of primitives.
    pub fn of(prims: &[prism_core::gpu::Primitive]) -> SceneKind {
        if prims.iter().any(|p| p.kind() == KIND_HEIGHTFIELD) {
            return SceneKind::Heightfields;
        }
        let spheres = prims.iter().filter(|p| p.kind() == KIND_SPHERE).count();
        if spheres == prims.len() {
            SceneKind::Spheres
        } else if spheres == 0 {
            SceneKind::Triangles
        } else {
            SceneKind::Mixed
        }
    }
}

/// Base names of the kernels, in the order of [`KERNEL_NAMES`] within each kind:
/// those of flat scenes, then those of two-level scenes, then the path kernels
/// with the sun.
pub const KERNEL_BASES: [&str; 20] = [
    KERNEL_RENDER_PATH,
    KERNEL_RENDER_WHITTED,
    KERNEL_RENDER_AO,
    KERNEL_INTERSECT,
    KERNEL_OCCLUDED,
    KERNEL_RENDER_PATH_OCTANTS,
    KERNEL_RENDER_WHITTED_OCTANTS,
    KERNEL_RENDER_AO_OCTANTS,
    KERNEL_RENDER_PATH_GRID,
    KERNEL_RENDER_WHITTED_GRID,
    KERNEL_RENDER_AO_GRID,
    KERNEL_RENDER_PATH_INSTANCES,
    KERNEL_RENDER_WHITTED_INSTANCES,
    KERNEL_RENDER_AO_INSTANCES,
    KERNEL_INTERSECT_INSTANCES,
    KERNEL_OCCLUDED_INSTANCES,
    KERNEL_RENDER_PATH_SUN,
    KERNEL_RENDER_PATH_SUN_OCTANTS,
    KERNEL_RENDER_PATH_SUN_GRID,
    KERNEL_RENDER_PATH_SUN_INSTANCES,
];

/// Every kernel the module exports: each base name once per [`SceneKind`].
pub const KERNEL_NAMES: [&str; 80] = [
    "prism_render_path_spheres",
    "prism_render_whitted_spheres",
    "prism_render_ao_spheres",
    "prism_intersect_spheres",
    "prism_occluded_spheres",
    "prism_render_path_octants_spheres",
    "prism_render_whitted_octants_spheres",
    "prism_render_ao_octants_spheres",
    "prism_render_path_grid_spheres",
    "prism_render_whitted_grid_spheres",
    "prism_render_ao_grid_spheres",
    "prism_render_path_instances_spheres",
    "prism_render_whitted_instances_spheres",
    "prism_render_ao_instances_spheres",
    "prism_intersect_instances_spheres",
    "prism_occluded_instances_spheres",
    "prism_render_path_sun_spheres",
    "prism_render_path_sun_octants_spheres",
    "prism_render_path_sun_grid_spheres",
    "prism_render_path_sun_instances_spheres",
    "prism_render_path_triangles",
    "prism_render_whitted_triangles",
    "prism_render_ao_triangles",
    "prism_intersect_triangles",
    "prism_occluded_triangles",
    "prism_render_path_octants_triangles",
    "prism_render_whitted_octants_triangles",
    "prism_render_ao_octants_triangles",
    "prism_render_path_grid_triangles",
    "prism_render_whitted_grid_triangles",
    "prism_render_ao_grid_triangles",
    "prism_render_path_instances_triangles",
    "prism_render_whitted_instances_triangles",
    "prism_render_ao_instances_triangles",
    "prism_intersect_instances_triangles",
    "prism_occluded_instances_triangles",
    "prism_render_path_sun_triangles",
    "prism_render_path_sun_octants_triangles",
    "prism_render_path_sun_grid_triangles",
    "prism_render_path_sun_instances_triangles",
    "prism_render_path_mixed",
    "prism_render_whitted_mixed",
    "prism_render_ao_mixed",
    "prism_intersect_mixed",
    "prism_occluded_mixed",
    "prism_render_path_octants_mixed",
    "prism_render_whitted_octants_mixed",
    "prism_render_ao_octants_mixed",
    "prism_render_path_grid_mixed",
    "prism_render_whitted_grid_mixed",
    "prism_render_ao_grid_mixed",
    "prism_render_path_instances_mixed",
    "prism_render_whitted_instances_mixed",
    "prism_render_ao_instances_mixed",
    "prism_intersect_instances_mixed",
    "prism_occluded_instances_mixed",
    "prism_render_path_sun_mixed",
    "prism_render_path_sun_octants_mixed",
    "prism_render_path_sun_grid_mixed",
    "prism_render_path_sun_instances_mixed",
    "prism_render_path_heightfields",
    "prism_render_whitted_heightfields",
    "prism_render_ao_heightfields",
    "prism_intersect_heightfields",
    "prism_occluded_heightfields",
    "prism_render_path_octants_heightfields",
    "prism_render_whitted_octants_heightfields",
    "prism_render_ao_octants_heightfields",
    "prism_render_path_grid_heightfields",
    "prism_render_whitted_grid_heightfields",
    "prism_render_ao_grid_heightfields",
    "prism_render_path_instances_heightfields",
    "prism_render_whitted_instances_heightfields",
    "prism_render_ao_instances_heightfields",
    "prism_intersect_instances_heightfields",
    "prism_occluded_instances_heightfields",
    "prism_render_path_sun_heightfields",
    "prism_render_path_sun_octants_heightfields",
    "prism_render_path_sun_grid_heightfields",
    "prism_render_path_sun_instances_heightfields",
];

/// The full name of kernel `base` for scenes of `kind` (an entry of
/// [`KERNEL_NAMES`]), or `None` if `base` is not one of [`KERNEL_BASES`].
pub fn kernel_name(base: &str, kind: SceneKind) -> Option<&'static str> {
    let b = KERNEL_BASES.iter().position(|&k| k == base)?;
    KERNEL_NAMES
        .get(kind as usize * KERNEL_BASES.len() + b)
        .copied()
}

/// Name of the `__constant__` block holding the frame's [`prism_core::gpu::RenderParams`].
pub(crate) const PARAMS_SYMBOL: &str = "c_params";

/// A source transformation applied to every kernel file before compilation:
/// `(file name, source) -> new source`. Tests use it to break a kernel on purpose.
pub type SourcePatch = Arc<dyn Fn(&str, &str) -> String + Send + Sync>;

/// The scene buffers as one kernel parameter; twin of `SceneView` in `prism_types.cuh`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SceneArgs {
    pub nodes: u64,
    pub prims: u64,
    pub slot_materials: u64,
    pub materials: u64,
    pub node_count: u32,
    pub prim_count: u32,
    pub material_count: u32,
    /// 1 when `nodes` holds the tree's eight near-first octant copies
    /// ([`prism_core::gpu::near_first_octant_copies`]).
    pub octants: u32,
    /// The candidate lists around the scene's light
    /// ([`prism_core::point_grid`]), or 0.
    pub light_grid: u64,
    /// [`prism_core::point_grid::PointGrid::reach_squared`] of that grid.
    pub light_reach_squared: f32,
    /// The uniform grid ([`prism_core::cell_grid::CellGrid`]): its large
    /// primitives' count, its cell offsets (0 when the scene has no grid), slot
    /// lists and large primitives' slots, its corner, cell size, reciprocal and
    /// cells per axis.
    pub grid_large_count: u32,
    pub grid_offsets: u64,
    pub grid_slots: u64,
    pub grid_large: u64,
    pub grid_lo: [f32; 3],
    pub grid_cell: [f32; 3],
    pub grid_inv_cell: [f32; 3],
    pub grid_res: [u32; 3],
    /// For scenes of spheres only: each listed sphere's centre and radius in
    /// the order of `grid_slots`, then of `grid_large` (0 otherwise).
    pub grid_balls: u64,
    pub grid_large_balls: u64,
    /// For a pinhole frame of a scene of at most
    /// [`prism_core::camera_bounds::CAMERA_BOUNDS_MAX_PRIMS`] primitives: the
    /// camera candidates of each tile of
    /// [`prism_core::camera_bounds::CAMERA_MASK_TILE`] pixels, row by row
    /// (`prism_camera_masks`, launched before the frame); 0 otherwise.
    pub camera_masks: u64,
    /// Tiles of `camera_masks` per row and rows of tiles.
    pub camera_mask_tiles: [u32; 2],
    /// A two-level scene's instance records ([`prism_core::gpu::GpuInstance`])
    /// and the tree over them, with their counts; 0 for a flat scene.
    pub instances: u64,
    pub top_nodes: u64,
    pub instance_count: u32,
    pub top_node_count: u32,
    /// The heightfields' records ([`prism_core::Accel::heightfields`]) and
    /// their heights ([`prism_core::Accel::heightfield_heights`]), with their
    /// counts; buffers of one zero element when the scene has none.
    pub heightfields: u64,
    pub heights: u64,
    pub heightfield_count: u32,
    pub height_count: u32,
}

/// Counters in the render kernels' ray tally (a power of two). Each warp adds
/// its rays to counter `warp % RAY_TALLY_SLOTS` and the host sums the counters
/// after the frame: with one shared counter every warp's atomic waited in the
/// L2 for the one before, which cost whitted19 (2.1 M warps) 0.3 ms a frame.
pub(crate) const RAY_TALLY_SLOTS: usize = 1024;
// The kernels pick a slot with a mask.
const _: () = assert!(RAY_TALLY_SLOTS.is_power_of_two());
/// Bytes of the ray tally: one `u64` a slot.
pub(crate) const RAY_TALLY_BYTES: usize = RAY_TALLY_SLOTS * 8;

/// Words (`u32`) of the work buffer: the persistent trace kernels' ray-range
/// counters, one 128-byte line apart, up to 32 ranges (`PRISM_TRACE_SHARDS`
/// in prism.cu); the render kernels use the first. The host zeroes them all
/// before a trace launch that claims from them.
pub(crate) const WORK_WORDS: usize = 32 * 32;

// The batch kernels read `prism_core::Ray` arrays as `GpuRay` records and
// write `Hit` records as two rows (prism_types.cuh checks both layouts).
const _: () = assert!(size_of::<Ray>() == size_of::<prism_core::gpu::GpuRay>());
const _: () = assert!(size_of::<Hit>() == 32);

/// A float as a C literal that reads back as the same `f32` (Rust's `{:?}` is
/// the shortest representation that round-trips).
fn c_float(v: f32) -> String {
    format!("{v:?}f")
}

/// The `-D` options that carry prism_core's constants and layouts.
fn core_defines() -> Vec<String> {
    let mut d = vec![
        format!("-DPRISM_TRAVERSAL_STACK_SIZE={TRAVERSAL_STACK_SIZE}"),
        format!("-DPRISM_RAY_TALLY_SLOTS={RAY_TALLY_SLOTS}"),
        format!("-DPRISM_WORK_WORDS={WORK_WORDS}"),
        format!("-DPRISM_EMPTY_CHILD={EMPTY_CHILD}u"),
        format!("-DPRISM_KIND_TRIANGLE={KIND_TRIANGLE}u"),
        format!("-DPRISM_KIND_SPHERE={KIND_SPHERE}u"),
        format!("-DPRISM_KIND_HEIGHTFIELD={KIND_HEIGHTFIELD}u"),
        format!("-DPRISM_HEIGHTFIELD_MAX_LEVELS={HEIGHTFIELD_MAX_LEVELS}u"),
        format!("-DPRISM_NO_PRIM={}u", Hit::NO_PRIM),
        format!("-DPRISM_NO_INSTANCE={}u", Hit::NO_INSTANCE),
        format!(
            "-DPRISM_NO_MATERIAL={}u",
            prism_core::gpu::GpuInstance::NO_MATERIAL
        ),
        format!("-DPRISM_POINT_GRID_SIDE={POINT_GRID_SIDE}"),
        format!(
            "-DPRISM_CAMERA_MASK_TILE={}",
            prism_core::camera_bounds::CAMERA_MASK_TILE
        ),
        format!("-DPRISM_POINT_GRID_FULL={POINT_GRID_FULL}u"),
        format!("-DPRISM_MIN_DIR_COMPONENT={}", c_float(MIN_DIR_COMPONENT)),
        format!(
            "-DPRISM_SPHERE_EARLY_MISS_MARGIN={}",
            c_float(SPHERE_EARLY_MISS_MARGIN)
        ),
        format!(
            "-DPRISM_SPHERE_LEFT_BEHIND_SCALE={}",
            c_float(SPHERE_LEFT_BEHIND_SCALE)
        ),
        format!("-DPRISM_SLAB_EXIT_SCALE={}", c_float(SLAB_EXIT_SCALE)),
        format!(
            "-DPRISM_SLAB_EXIT_SCALE_NEGATIVE={}",
            c_float(SLAB_EXIT_SCALE_NEGATIVE)
        ),
        format!("-DPRISM_SHADOW_KEEP={}", c_float(SHADOW_KEEP)),
        format!("-DPRISM_PHONG_AMBIENT={}", c_float(PHONG_AMBIENT)),
        format!("-DPRISM_PHONG_DIFFUSE={}", c_float(PHONG_DIFFUSE)),
        format!("-DPRISM_PHONG_SPECULAR={}", c_float(PHONG_SPECULAR)),
        format!("-DPRISM_PHONG_EXPONENT={PHONG_EXPONENT}"),
        format!("-DPRISM_WHITTED_LOCAL={}", c_float(WHITTED_LOCAL)),
        format!(
            "-DPRISM_COSINE_HEMISPHERE_MIN_LEN2={}",
            c_float(prism_core::sampling::COSINE_HEMISPHERE_MIN_LEN2)
        ),
        format!(
            "-DPRISM_SRGB8_TABLE_SLOTS={}",
            prism_core::image::SRGB8_TABLE_SLOTS
        ),
    ];
    for (name, size, fields) in prism_core::gpu::layouts() {
        d.push(format!("-DPRISM_LAYOUT_{name}_SIZE={size}"));
        for (field, offset) in fields {
            d.push(format!("-DPRISM_LAYOUT_{name}_{field}={offset}"));
        }
    }
    type Layout = (&'static str, usize, Vec<(&'static str, usize)>);
    let extra: [Layout; 3] = [
        (
            "Hit",
            size_of::<Hit>(),
            vec![
                ("t", offset_of!(Hit, t)),
                ("u", offset_of!(Hit, u)),
                ("v", offset_of!(Hit, v)),
                ("prim", offset_of!(Hit, prim)),
                ("instance", offset_of!(Hit, instance)),
                ("cell", offset_of!(Hit, cell)),
                ("face", offset_of!(Hit, face)),
            ],
        ),
        (
            "SceneView",
            size_of::<SceneArgs>(),
            vec![
                ("nodes", offset_of!(SceneArgs, nodes)),
                ("prims", offset_of!(SceneArgs, prims)),
                ("slot_materials", offset_of!(SceneArgs, slot_materials)),
                ("materials", offset_of!(SceneArgs, materials)),
                ("node_count", offset_of!(SceneArgs, node_count)),
                ("prim_count", offset_of!(SceneArgs, prim_count)),
                ("material_count", offset_of!(SceneArgs, material_count)),
                ("light_grid", offset_of!(SceneArgs, light_grid)),
                (
                    "light_reach_squared",
                    offset_of!(SceneArgs, light_reach_squared),
                ),
                ("grid_large_count", offset_of!(SceneArgs, grid_large_count)),
                ("grid_offsets", offset_of!(SceneArgs, grid_offsets)),
                ("grid_slots", offset_of!(SceneArgs, grid_slots)),
                ("grid_large", offset_of!(SceneArgs, grid_large)),
                ("grid_lo", offset_of!(SceneArgs, grid_lo)),
                ("grid_cell", offset_of!(SceneArgs, grid_cell)),
                ("grid_inv_cell", offset_of!(SceneArgs, grid_inv_cell)),
                ("grid_res", offset_of!(SceneArgs, grid_res)),
                ("grid_balls", offset_of!(SceneArgs, grid_balls)),
                ("grid_large_balls", offset_of!(SceneArgs, grid_large_balls)),
                ("camera_masks", offset_of!(SceneArgs, camera_masks)),
                (
                    "camera_mask_tiles",
                    offset_of!(SceneArgs, camera_mask_tiles),
                ),
                ("instances", offset_of!(SceneArgs, instances)),
                ("top_nodes", offset_of!(SceneArgs, top_nodes)),
                ("instance_count", offset_of!(SceneArgs, instance_count)),
                ("top_node_count", offset_of!(SceneArgs, top_node_count)),
                ("heightfields", offset_of!(SceneArgs, heightfields)),
                ("heights", offset_of!(SceneArgs, heights)),
                (
                    "heightfield_count",
                    offset_of!(SceneArgs, heightfield_count),
                ),
                ("height_count", offset_of!(SceneArgs, height_count)),
            ],
        ),
        (
            "PointGridCell",
            size_of::<PointGridCell>(),
            vec![
                ("count", offset_of!(PointGridCell, count)),
                ("slots", offset_of!(PointGridCell, slots)),
            ],
        ),
    ];
    for (name, size, fields) in extra {
        d.push(format!("-DPRISM_LAYOUT_{name}_SIZE={size}"));
        for (field, offset) in fields {
            d.push(format!("-DPRISM_LAYOUT_{name}_{field}={offset}"));
        }
    }
    d
}

/// The full NVRTC option list for `arch` and `config`.
///
/// Floating point: IEEE division and square root (NVRTC's defaults), no
/// flush-to-zero, and FMA contraction on (`--fmad=true`, the default): results
/// differ from core's by rounding only. The watertight triangle test opts out
/// of contraction in the source (see `intersect.cuh`).
pub fn compile_options(arch: (u32, u32), config: &KernelConfig) -> Vec<String> {
    let mut o = vec![
        format!("--gpu-architecture=sm_{}{}", arch.0, arch.1),
        "-std=c++17".to_owned(),
        "--fmad=true".to_owned(),
        "--prec-div=true".to_owned(),
        "--prec-sqrt=true".to_owned(),
        "--ftz=false".to_owned(),
        "--ptxas-options=-v".to_owned(),
    ];
    o.extend(core_defines());
    o.push(format!("-DPRISM_TRACE_THREADS={}", config.trace_threads));
    o.push(format!(
        "-DPRISM_TRACE_MIN_BLOCKS={}",
        config.trace_min_blocks
    ));
    o.push(format!(
        "-DPRISM_CAMERA_MASKS_THREADS={CAMERA_MASKS_THREADS}"
    ));
    o.push(format!("-DPRISM_REFIT_THREADS={REFIT_THREADS}"));
    o.push(format!("-DPRISM_RENDER_TILE_W={}", config.render_tile[0]));
    o.push(format!("-DPRISM_RENDER_TILE_H={}", config.render_tile[1]));
    o.push(format!(
        "-DPRISM_RENDER_MIN_BLOCKS={}",
        config.render_min_blocks
    ));
    o.push(format!("-DPRISM_PERSISTENT={}", config.persistent as u32));
    o.push(format!("-DPRISM_PATH_REGEN={}", config.path_regen as u32));
    o.push(format!("-DPRISM_PATH_DEFER={}", config.path_defer));
    o.push(format!(
        "-DPRISM_PATH_PERSISTENT={}",
        config.persistent_path as u32
    ));
    o.push(format!("-DPRISM_PATH_LANES={}", config.path_lanes));
    o.push(format!(
        "-DPRISM_AO_PERSISTENT={}",
        config.persistent_ao as u32
    ));
    o.push(format!("-DPRISM_PATH_THREADS={}", config.path_threads));
    o.push(format!(
        "-DPRISM_PATH_MIN_BLOCKS={}",
        config.path_min_blocks
    ));
    o.push(format!(
        "-DPRISM_PATH_TAIL_64THS={}",
        config.path_tail_64ths
    ));
    o.push(format!("-DPRISM_TRACE_REFILL={}", config.trace_refill));
    o.push(format!(
        "-DPRISM_OCCLUDED_REFILL={}",
        config.occluded_refill
    ));
    o.push(format!(
        "-DPRISM_LOBE_BRANCHES={}",
        config.lobe_branches as u32
    ));
    o.push(format!(
        "-DPRISM_TREE_CHECKS={}",
        !config.tree_checked_on_upload as u32
    ));
    o.push(format!(
        "-DPRISM_WHITTED_SKIPS_CAMERA_RNG={}",
        config.whitted_skips_camera_rng as u32
    ));
    o.extend(config.extra_options.iter().cloned());
    o
}

/// The kernel files after `patch`.
pub(crate) fn patched_sources(patch: Option<&SourcePatch>) -> Vec<(&'static str, String)> {
    SOURCES
        .iter()
        .map(|&(name, src)| (name, patch.map_or_else(|| src.to_owned(), |p| p(name, src))))
        .collect()
}

/// Resources ptxas reports for one kernel (from `--ptxas-options=-v`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PtxasReport {
    /// Kernel name.
    pub name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Stack frame bytes per thread (local arrays and spills).
    pub stack_frame: u32,
    /// Bytes of register spill stores.
    pub spill_stores: u32,
    /// Bytes of register spill loads.
    pub spill_loads: u32,
}

/// Parse ptxas' `-v` report: one entry per kernel (`extern "C"` names).
pub fn parse_ptxas_log(log: &str) -> Vec<PtxasReport> {
    let mut out: Vec<PtxasReport> = Vec::new();
    let number_before = |line: &str, unit: &str| -> Option<u32> {
        let end = line.find(unit)?;
        line[..end].split_whitespace().last()?.parse().ok()
    };
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or_default();
            out.push(PtxasReport {
                name: name.to_owned(),
                ..Default::default()
            });
        } else if let Some(cur) = out.last_mut() {
            if line.contains("bytes stack frame") {
                cur.stack_frame = number_before(line, "bytes stack frame").unwrap_or(0);
                cur.spill_stores = number_before(line, "bytes spill stores").unwrap_or(0);
                cur.spill_loads = number_before(line, "bytes spill loads").unwrap_or(0);
            } else if let Some(rest) = line.split("Used ").nth(1)
                && line.contains(" registers")
            {
                cur.registers = rest
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
            }
        }
    }
    out
}

/// The result of compiling the kernels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledKernels {
    /// The cubin (machine code for exactly `arch`).
    pub cubin: Vec<u8>,
    /// NVRTC's log, with ptxas' resource report.
    pub log: String,
    /// The architecture compiled for, `(major, minor)`.
    pub arch: (u32, u32),
    /// The NVRTC options used.
    pub options: Vec<String>,
    /// NVRTC's version.
    pub nvrtc_version: (u32, u32),
}

impl CompiledKernels {
    /// ptxas' resource report, one entry per kernel.
    pub fn ptxas_reports(&self) -> Vec<PtxasReport> {
        parse_ptxas_log(&self.log)
    }
}

/// Compile every kernel for `arch` (e.g. `(9, 0)`) with `config`, through NVRTC
/// only: no GPU and no driver are needed. This is the same code path the backend
/// uses (minus its disk cache), so a kernel that does not compile here does not
/// compile anywhere.
pub fn compile_kernels(arch: (u32, u32), config: &KernelConfig) -> Result<CompiledKernels, Error> {
    compile_kernels_patched(arch, config, None)
}

/// [`compile_kernels`] with every kernel file passed through `patch` first (see
/// [`crate::CudaBackend::with_source_patch`]).
pub fn compile_kernels_patched(
    arch: (u32, u32),
    config: &KernelConfig,
    patch: Option<&SourcePatch>,
) -> Result<CompiledKernels, Error> {
    config.validate()?;
    let nvrtc_version = nvrtc::nvrtc_version()?;
    let files = patched_sources(patch);
    let options = compile_options(arch, config);
    compile_files(&files, arch, options, nvrtc_version)
}

/// Compile already-patched files (the backend hashes the same files for its cache).
pub(crate) fn compile_files(
    files: &[(&'static str, String)],
    arch: (u32, u32),
    options: Vec<String>,
    nvrtc_version: (u32, u32),
) -> Result<CompiledKernels, Error> {
    let Some(((main_name, main_src), headers)) = files.split_first() else {
        return Err(Error::Compile {
            backend: BACKEND,
            source_name: "prism.cu".into(),
            log: "no sources".into(),
        });
    };
    let headers: Vec<(&str, String)> = headers.iter().map(|(n, s)| (*n, s.clone())).collect();
    let compiled = nvrtc::compile((main_name, main_src), &headers, &options)?;
    for name in KERNEL_NAMES
        .iter()
        .chain([
            &KERNEL_CAMERA_MASKS,
            &KERNEL_REFIT_SLOTS,
            &KERNEL_REFIT_BOXES,
        ])
        .chain(KERNEL_FAST_BUILD.iter())
    {
        if !contains_symbol(&compiled.cubin, name) {
            return Err(Error::Compile {
                backend: BACKEND,
                source_name: (*main_name).to_owned(),
                log: format!(
                    "kernel {name} is missing from the compiled module\n{}",
                    compiled.log
                ),
            });
        }
    }
    Ok(CompiledKernels {
        cubin: compiled.cubin,
        log: compiled.log,
        arch,
        options,
        nvrtc_version,
    })
}

/// Whether the cubin's string table holds `name` (kernels are `extern "C"`).
fn contains_symbol(cubin: &[u8], name: &str) -> bool {
    let mut needle = name.as_bytes().to_vec();
    needle.push(0);
    cubin.windows(needle.len()).any(|w| w == needle.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_c_literals_that_round_trip() {
        for v in [
            MIN_DIR_COMPONENT,
            SLAB_EXIT_SCALE,
            SLAB_EXIT_SCALE_NEGATIVE,
            SHADOW_KEEP,
            PHONG_AMBIENT,
            1.0,
            0.5,
            1e-30,
        ] {
            let s = c_float(v);
            let back: f32 = s.trim_end_matches('f').parse().unwrap(); // ok: test code
            assert_eq!(back.to_bits(), v.to_bits(), "{s}");
            assert!(
                s.contains('.') || s.contains('e'),
                "{s} is not a float literal in C"
            );
        }
    }

    #[test]
    fn kernel_names_are_base_and_kind() {
        for kind in SceneKind::ALL {
            for base in KERNEL_BASES {
                assert_eq!(
                    kernel_name(base, kind).map(str::to_owned),
                    Some(format!("{base}{}", kind.suffix()))
                );
            }
            assert_eq!(kernel_name("prism_no_such_kernel", kind), None);
        }
        use prism_core::gpu::Primitive;
        let s = Primitive::sphere(0, [0.0; 3], 1.0);
        let t = Primitive::triangle(1, [0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]);
        assert_eq!(SceneKind::of(&[s, s]), SceneKind::Spheres);
        assert_eq!(SceneKind::of(&[t]), SceneKind::Triangles);
        assert_eq!(SceneKind::of(&[t, s]), SceneKind::Mixed);
        let h = Primitive::heightfield(2, [0.0; 3], [1.0; 3], 0, 1.0);
        assert_eq!(SceneKind::of(&[h]), SceneKind::Heightfields);
        assert_eq!(SceneKind::of(&[s, h, t]), SceneKind::Heightfields);
    }

    #[test]
    fn ptxas_log_is_parsed() {
        let log = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'prism_intersect' for 'sm_90'\n\
ptxas info    : Function properties for prism_intersect\n\
ptxas         .     256 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n\
ptxas info    : Used 64 registers, used 0 barriers, 208 bytes cmem[3]\n\
ptxas info    : Compiling entry function 'prism_occluded' for 'sm_90'\n\
ptxas info    : Function properties for prism_occluded\n\
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
ptxas info    : Used 40 registers, used 0 barriers\n";
        let r = parse_ptxas_log(log);
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[0],
            PtxasReport {
                name: "prism_intersect".into(),
                registers: 64,
                stack_frame: 256,
                spill_stores: 8,
                spill_loads: 12
            }
        );
        assert_eq!(r[1].registers, 40);
    }

    #[test]
    fn every_core_layout_is_passed_to_the_kernels() {
        let d = core_defines().join(" ");
        for (name, size, fields) in prism_core::gpu::layouts() {
            assert!(d.contains(&format!("-DPRISM_LAYOUT_{name}_SIZE={size}")));
            for (field, _) in fields {
                assert!(
                    d.contains(&format!("-DPRISM_LAYOUT_{name}_{field}=")),
                    "{name}.{field}"
                );
                let checked = format!("PRISM_CHECK_FIELD({name}, {field})");
                let types = SOURCES[1].1;
                assert!(
                    types.contains(&checked),
                    "prism_types.cuh does not check {name}.{field}"
                );
            }
        }
    }
}
