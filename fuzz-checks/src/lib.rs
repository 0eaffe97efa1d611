//! The properties the fuzz targets of `fuzz/` check, as ordinary functions.
//!
//! Each check takes arbitrary bytes, decodes them into input for one public
//! entry point, runs it (on a shared single-threaded
//! [`CpuBackend`](prism_cpu::CpuBackend) where tracing is involved) and returns
//! `Err(Violation)` when a property fails. A panic, abort or hang inside a
//! check is a crash found in Prism. The cargo-fuzz targets call these
//! functions, and `tests/fuzz_corpus.rs` replays every file of their committed
//! corpora through them on stable `cargo test`, so a crash once found stays a
//! regression test.
//!
//! | check             | input                                                     | properties                                                                                      |
//! |-------------------|-----------------------------------------------------------|-------------------------------------------------------------------------------------------------|
//! | [`mesh_obj`]      | the bytes of an OBJ file                                  | [`parse_obj`](prism::mesh::parse_obj) returns a mesh whose indices are in range, or [`Error::Parse`](prism_core::Error::Parse) naming the file; the mesh traces like brute force |
//! | [`mesh_ply`]      | the bytes of a PLY file                                   | the same for [`parse_ply`](prism::mesh::parse_ply)                                                                |
//! | [`scene_trace`]   | materials, spheres, triangles, meshes, then a ray batch   | validation refuses exactly the bad items and names one; `intersect` (each CPU traversal: the 8-wide BVH where the CPU has AVX2, the 4-wide one, core's binary one) agrees with brute force under the rule of [`prism_core::reference`], `occluded` equals brute-force any-hit; bad rays are refused by index; shadow rays from the hit points to a small scene's light (and to the first ray's origin) get from the light grid, where it answers, the answer of testing every primitive (a hit off its primitive's box counting either way, as for traversal); closest hits through the scene's cell grid agree with brute force under the same rule as `intersect`; a 3x3 render of the scene succeeds and, for a tame scene, is finite. A first byte of [`TWO_LEVEL`] or more makes it a two-level scene ([`two_level`]): geometries, instances (any transform, mask, material override), masked rays and update sequences; bad scenes and updates are refused naming a bad item with the previous scene's answers unchanged, good ones trace like core's object-space brute force over every instance and slot on every CPU traversal, masked-out instances are never hit |
//! | [`render_settings`] | raw image size, settings, camera, materials             | raw values are validated first, with the same error from `Image::new`, `RenderSettings::validate`, `Camera::frame` and `render`; valid ones render at a capped tiny size, for a tame camera finite and the same with both traversals, or, where the images differ, with every ray of the frame tracing like brute force on every traversal (touching spheres tie); cancelling is an error |
//! | [`height_map_png`] | the bytes of a PNG file                                 | [`decode_png`](prism::height_map::decode_png) returns a map of the header's size within [`MAX_HEIGHT_MAP_CELLS`] whose heights are the grey (or weighted RGB) the `image` crate decodes, or [`Error::HeightMap`](prism_core::Error::HeightMap) naming the file, an empty or too large size given as the header has it |
//!
//! Traversal is compared with brute force under the slab test's documented
//! face-plane convention ([`in_face_plane`]): a ray that does not move along an
//! axis and lies in a box face plane may miss a primitive hit on that face. A
//! brute-force hit that lies outside its primitive's box ([`off_primitive_box`]:
//! the f32 triangle test on triangles tiny against their distance, or huge)
//! may be missed too: traversal is right there, and brute force is not. And the
//! closest-hit walk may miss a reference hit within the rounding of `tmax`,
//! where the exact hit may lie at `tmax`, outside the open interval.
//!
//! After every error a check makes a valid call on the same backend and
//! requires it to succeed: a failed call must leave the backend usable.
//!
//! Floats are decoded by [`Bytes::f32`], which favours values that break
//! geometry code: a coarse grid (coincident vertices, degenerate triangles, rays
//! through edges), NaN, infinities, the largest and smallest normal numbers,
//! subnormals, and grid values scaled by powers of two from `2^-32` to `2^31`.
//!
//! The checks are grouped by concern: [`Bytes`] decodes fuzz input, the
//! brute-force reference and its comparison with traversal
//! ([`brute_force`], [`in_face_plane`], [`off_primitive_box`]) are shared by
//! every check, and each target's check has a module of its own. This crate
//! is not published: it serves `fuzz/` and the corpus replay test alone.

#![deny(missing_docs)]

use std::fmt;

/// A property that failed, with what was seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation(pub String);

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Violation {}

/// `Err(Violation)` with a formatted message.
macro_rules! violation {
    ($($arg:tt)*) => {
        Err(Violation(format!($($arg)*)))
    };
}

/// A check: decoded bytes in, `Ok` when every property holds.
pub type Check = fn(&[u8]) -> Result<(), Violation>;

/// Every check, by the name of its fuzz target (and corpus directory).
pub const TARGETS: [(&str, Check); 5] = [
    ("mesh_obj", mesh_obj),
    ("mesh_ply", mesh_ply),
    ("scene_trace", scene_trace),
    ("render_settings", render_settings),
    ("height_map_png", height_map_png),
];

/// Most primitives a decoded scene holds (keeps brute force cheap).
pub const MAX_PRIMITIVES: usize = 96;
/// Most rays in a decoded batch.
pub const MAX_RAYS: usize = 96;
/// Largest image side actually rendered; larger valid sizes are validated raw,
/// then rendered at this size.
pub const MAX_RENDER_SIDE: u32 = 6;
/// Largest spp, depth and AO sample count actually rendered.
pub const MAX_RENDER_WORK: u32 = 3;
/// Most triangles of a parsed mesh traced against brute force.
pub const MAX_MESH_RAYS: usize = 8;

mod backend;
mod bytes;
mod gpu_structures;
mod height_map;
mod meshes;
mod reference;
mod scenes;
mod settings;
pub mod two_level;

pub use bytes::Bytes;
pub use height_map::{MAX_HEIGHT_MAP_CELLS, height_map_png};
pub use meshes::{mesh_obj, mesh_ply};
pub use reference::{
    T_ROUNDING, boxes_to_primitive, brute_force, in_face_plane, near_tmax, off_box,
    off_primitive_box,
};
pub use scenes::{TWO_LEVEL, scene_trace};
pub use settings::render_settings;
