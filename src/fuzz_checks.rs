//! The properties the fuzz targets of `fuzz/` check, as ordinary functions.
//!
//! Each check takes arbitrary bytes, decodes them into input for one public
//! entry point, runs it (on a shared single-threaded [`CpuBackend`] where
//! tracing is involved) and returns `Err(Violation)` when a property fails. A
//! panic, abort or hang inside a check is a crash found in Prism. The cargo-fuzz
//! targets call these functions, and `tests/fuzz_corpus.rs` replays every file
//! of their committed corpora through them on stable `cargo test`, so a crash
//! once found stays a regression test.
//!
//! | check             | input                                                     | properties                                                                                      |
//! |-------------------|-----------------------------------------------------------|-------------------------------------------------------------------------------------------------|
//! | [`mesh_obj`]      | the bytes of an OBJ file                                  | [`parse_obj`] returns a mesh whose indices are in range, or [`Error::Parse`] naming the file; the mesh traces like brute force |
//! | [`mesh_ply`]      | the bytes of a PLY file                                   | the same for [`parse_ply`]                                                                      |
//! | [`scene_trace`]   | materials, spheres, triangles, meshes, then a ray batch   | validation refuses exactly the bad items and names one; `intersect` (each CPU traversal: the 8-wide BVH where the CPU has AVX2, the 4-wide one, core's binary one) agrees with brute force under the rule of [`prism_core::reference`], `occluded` equals brute-force any-hit; bad rays are refused by index; shadow rays from the hit points to a small scene's light (and to the first ray's origin) get from the light grid, where it answers, the answer of testing every primitive (a hit off its primitive's box counting either way, as for traversal); closest hits through the scene's cell grid agree with brute force under the same rule as `intersect`; a 3x3 render of the scene succeeds and, for a tame scene, is finite |
//! | [`render_settings`] | raw image size, settings, camera, materials             | raw values are validated first, with the same error from `Image::new`, `RenderSettings::validate`, `Camera::frame` and `render`; valid ones render at a capped tiny size, for a tame camera finite and the same with both traversals, or, where the images differ, with every ray of the frame tracing like brute force on every traversal (touching spheres tie); cancelling is an error |
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

use crate::mesh::{Mesh, parse_obj, parse_ply};
use glam::Vec3;
use prism_core::cell_grid::CellGrid;
use prism_core::integrator::spawn_tmin;
use prism_core::intersect::{
    RayPre, ray_aabb, ray_sphere, ray_triangle, sphere_missed_early, widen_exit,
};
use prism_core::point_grid::{any_hit_listed, build_point_grid};
use prism_core::reference::{Agreement, classify};
use prism_core::scene::PrimRef;
use prism_core::traverse::ray_primitive;
use prism_core::{
    Accel, Backend, Camera, Error, Hit, Image, Integrator, Material, NoProgress, PixelFormat,
    Progress, Ray, RenderSettings, Scene, Sky,
};
use prism_cpu::{CpuBackend, Traversal};
use std::cell::RefCell;
use std::fmt;
use std::sync::{Mutex, OnceLock};

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
pub const TARGETS: [(&str, Check); 4] = [
    ("mesh_obj", mesh_obj),
    ("mesh_ply", mesh_ply),
    ("scene_trace", scene_trace),
    ("render_settings", render_settings),
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

// ---------------------------------------------------------------------------
// Decoding

/// A reader of fuzz bytes: every read succeeds, yielding zeros once the bytes
/// run out, so any input decodes to something.
#[derive(Clone, Debug)]
pub struct Bytes<'a> {
    data: &'a [u8],
}

impl<'a> Bytes<'a> {
    /// Read from `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    /// Whether every byte was read.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The next byte, or 0.
    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// The next four bytes, little-endian.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    /// A count or size: small values most often, then the limits and raw values.
    pub fn size(&mut self, limit: u32) -> u32 {
        match self.u8() {
            t @ 0..=191 => u32::from(t % 8),
            192..=207 => limit,
            208..=215 => limit.saturating_add(1),
            216..=223 => u32::MAX,
            224..=231 => limit.saturating_sub(1),
            _ => self.u32(),
        }
    }

    /// A float, favouring the values that break geometry code (see the module docs).
    pub fn f32(&mut self) -> f32 {
        let tag = self.u8();
        if tag < 192 {
            return grid(tag);
        }
        match tag - 192 {
            0 => 0.0,
            1 => -0.0,
            2 => f32::NAN,
            3 => f32::INFINITY,
            4 => f32::NEG_INFINITY,
            5 => f32::MAX,
            6 => f32::MIN,
            7 => f32::MIN_POSITIVE,
            8 => f32::from_bits(1),
            9 => -f32::from_bits(self.u32() & 0x007f_ffff),
            10 => f32::from_bits(self.u32()),
            11 => 1e30,
            12 => -1e30,
            13 => 1e-30,
            14 => 1e8,
            15 => -1e8,
            16 => f32::EPSILON,
            17 => grid(self.u8()).next_up(),
            18 => grid(self.u8()).next_down(),
            _ => {
                let base = grid(self.u8());
                let exp = i32::from(self.u8() as i8) / 4;
                base * 2f32.powi(exp)
            }
        }
    }

    /// Three floats.
    pub fn vec3(&mut self) -> Vec3 {
        Vec3::new(self.f32(), self.f32(), self.f32())
    }

    /// A number in `[0, 1]` in steps of 1/255.
    pub fn unit(&mut self) -> f32 {
        f32::from(self.u8()) / 255.0
    }
}

/// The grid of [`Bytes::f32`]: `-12 ..= 11.875` in steps of 1/8.
fn grid(tag: u8) -> f32 {
    (f32::from(tag % 192) - 96.0) / 8.0
}

// ---------------------------------------------------------------------------
// The shared backend

/// One single-threaded CPU backend for every check: fuzzing runs one input at a
/// time, and reusing the backend across inputs also checks that whatever an
/// input left behind (a failed call, an old scene) does not break the next.
fn with_backend<R>(
    f: impl FnOnce(&mut CpuBackend) -> Result<R, Violation>,
) -> Result<R, Violation> {
    static BACKEND: OnceLock<Result<Mutex<CpuBackend>, Error>> = OnceLock::new();
    let backend = BACKEND.get_or_init(|| CpuBackend::with_threads(1).map(Mutex::new));
    let backend = match backend {
        Ok(b) => b,
        Err(e) => return violation!("the CPU backend did not open: {e}"),
    };
    // A check that panicked poisons the lock; the backend itself is still whole.
    let mut guard = backend
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    f(&mut guard)
}

/// A one-sphere scene and a ray that hits it, for "the next valid call succeeds".
fn known_good_call(backend: &mut CpuBackend, after: &str) -> Result<(), Violation> {
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
    scene.add_sphere(Vec3::ZERO, 1.0, m);
    if let Err(e) = backend.set_scene(&scene) {
        return violation!("after {after}: set_scene of a valid scene failed: {e}");
    }
    let mut hits = [Hit::MISS];
    if let Err(e) = backend.intersect(
        &[Ray::new(Vec3::new(0.0, 0.0, 5.0), Vec3::NEG_Z)],
        &mut hits,
    ) {
        return violation!("after {after}: intersect of a valid ray failed: {e}");
    }
    if !(hits[0].prim == 0 && (hits[0].t - 4.0).abs() < 1e-5) {
        return violation!("after {after}: the known-good ray got {:?}", hits[0]);
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Brute force

/// Closest hit of `ray` over every primitive of `scene`, in id order, with the
/// core's own primitive tests: `(t, prim)`, `prim = Hit::NO_PRIM` for a miss.
///
/// Zero-area triangles are never hit (the rule of [`Accel::build`]), and the ray
/// is the one traversal sees: [`RayPre`] (direction components below
/// [`prism_core::intersect::MIN_DIR_COMPONENT`] are zero).
pub fn brute_force(scene: &Scene, ray: &Ray) -> (f32, u32) {
    let pre = RayPre::new(ray);
    let mut best = (ray.tmax, Hit::NO_PRIM);
    for id in 0..scene.primitive_count() as u32 {
        let t = match scene.primitive(id) {
            Some(PrimRef::Triangle(i)) => scene.triangle(i).and_then(|[a, b, c]| {
                if (b - a).cross(c - a) == Vec3::ZERO {
                    None
                } else {
                    ray_triangle(&pre, a, b, c, ray.tmin, best.0).map(|h| h.0)
                }
            }),
            Some(PrimRef::Sphere(i)) => scene.spheres().get(i as usize).and_then(|cr| {
                ray_sphere(pre.origin, pre.dir, cr.truncate(), cr.w, ray.tmin, best.0)
            }),
            None => None,
        };
        if let Some(t) = t {
            best = (t, id);
        }
    }
    if best.1 == Hit::NO_PRIM {
        best.0 = f32::INFINITY;
    }
    best
}

/// Whether the slab test's face-plane convention may hide the hit at `t` on
/// scene primitive `prim`.
///
/// The core's slab test clamps a direction component below
/// [`prism_core::intersect::MIN_DIR_COMPONENT`] to that value with its sign
/// instead of dividing by it. A ray that does not move along axis `k` and lies
/// exactly in a box face plane `x_k = b` is then inside the box for one of the
/// two faces and outside for the other, by the sign of the zero component (the
/// convention of Embree, documented in the core's slab tests as measure-zero),
/// so traversal can miss a primitive hit on that face, such as a triangle edge
/// lying in the plane. The same holds within `2e-30 * t` of the plane, where
/// the clamped and the true ray are on different sides of it at the hit.
///
/// Only the boxes a traversal must enter to reach `prim` count: the child
/// boxes on the path from the root to its leaf ([`boxes_to_primitive`]). The
/// CPU backend's 4- and 8-wide trees take their boxes from that binary tree,
/// so their paths hold a subset of those boxes.
pub fn in_face_plane(
    nodes: &[prism_core::gpu::BvhNode],
    prims: &[prism_core::gpu::Primitive],
    ray: &Ray,
    t: f32,
    prim: u32,
) -> bool {
    let reach = 2.0 * prism_core::intersect::MIN_DIR_COMPONENT * t.abs();
    let path = boxes_to_primitive(nodes, prims, prim);
    // ok: `k` < 3 indexes a `Vec3` and the first three of four row entries.
    (0..3).any(|k| {
        ray.dir[k].abs() < prism_core::intersect::MIN_DIR_COMPONENT
            && path.iter().any(|(lo, hi)| {
                [lo, hi]
                    .iter()
                    .any(|row| (ray.origin[k] - row[k]).abs() <= reach)
            })
    })
}

/// The child boxes (`lo`, `hi` rows) on the path from the root of `nodes` to
/// the leaf that holds scene primitive `prim`, root first; empty when no leaf
/// holds it.
pub fn boxes_to_primitive(
    nodes: &[prism_core::gpu::BvhNode],
    prims: &[prism_core::gpu::Primitive],
    prim: u32,
) -> Vec<([f32; 4], [f32; 4])> {
    use prism_core::gpu::EMPTY_CHILD;
    let Some(slot) = prims.iter().position(|p| p.id() == prim) else {
        return Vec::new();
    };
    let slot = slot as u32;
    let children = |n: &prism_core::gpu::BvhNode| {
        [
            (n.left_lo, n.left_hi, n.left_index(), n.left_count()),
            (n.right_lo, n.right_hi, n.right_index(), n.right_count()),
        ]
    };
    // parent[c] = (node, side) of inner node c's entry in its parent.
    let mut parent = vec![None; nodes.len()];
    let mut leaf = None;
    for (i, n) in nodes.iter().enumerate() {
        for (side, (_, _, index, count)) in children(n).into_iter().enumerate() {
            if index == EMPTY_CHILD {
                continue;
            }
            if count == 0 {
                if let Some(p) = parent.get_mut(index as usize) {
                    *p = Some((i, side));
                }
            } else if (index..index.saturating_add(count)).contains(&slot) {
                leaf = Some((i, side));
            }
        }
    }
    let mut path = Vec::new();
    let mut at = leaf;
    // Each step moves to a parent, which core places before its children, so
    // the walk ends within `nodes.len()` steps; the bound guards a bad tree.
    for _ in 0..=nodes.len() {
        let Some((i, side)) = at else { break };
        let (lo, hi, _, _) = children(&nodes[i])[side]; // ok: `i` indexes `nodes`, `side` < 2
        path.push((lo, hi));
        at = parent[i]; // ok: `parent` has one entry per node
    }
    path.reverse();
    path
}

/// Whether the hit `(t, prim)` of `ray` lies outside its primitive's bounding box
/// (the box the BVH holds it in): on some axis, the exact ray is beyond one face
/// of the box for every parameter within [`T_ROUNDING`] of `t` (so the rounding
/// of `t` itself cannot put it there). Exact: `origin + t' * dir > bound` is
/// tested as `origin - bound > -(t' * dir)`, both sides exact in `f64` (a
/// difference of close `f32` values, a product of `f32` values), so a ray
/// passing `1e-59` outside a face is outside.
///
/// The slab test is conservative for points really in a box, so traversal never
/// culls such a hit; but the single-precision watertight test can report hits
/// off its triangle, and traversal rightly culls those by the box. It happens
/// where the triangle is tiny against its distance from the ray's origin (a
/// ray starting `1e8` away from a triangle of size 10: the projected vertices
/// round to nearly one point and the edge functions to noise, and the "hit" is
/// millions of units off), or where a triangle spans `1e30` and rounds its edges
/// by more than the ray's distance to them; and the sphere test, whose squared
/// distances underflow to 0 for radii and offsets below `1e-19`, reports a
/// sphere of radius `1e-45` hit by a ray passing `1e-29` from its centre. (The
/// watertight paper's double-precision fallback would catch the triangle cases;
/// the core leaves it out so that the GPU mirrors stay identical on hardware
/// without `f64`.)
pub fn off_primitive_box(scene: &Scene, ray: &Ray, t: f32, prim: u32) -> bool {
    let bounds = match scene.primitive(prim) {
        Some(PrimRef::Triangle(i)) => scene
            .triangle(i)
            .map(|[a, b, c]| prism_core::bvh::triangle_bounds(a, b, c)),
        Some(PrimRef::Sphere(i)) => scene
            .spheres()
            .get(i as usize)
            .map(|cr| prism_core::bvh::sphere_bounds(cr.truncate(), cr.w)),
        None => None,
    };
    let Some(bounds) = bounds else {
        return false;
    };
    let t = f64::from(t);
    let ends = [t * (1.0 - T_ROUNDING), t * (1.0 + T_ROUNDING)];
    (0..3).any(|k| {
        // ok: `k` < 3 indexes each `Vec3`.
        let (o, d) = (f64::from(ray.origin[k]), f64::from(ray.dir[k]));
        let (lo, hi) = (f64::from(bounds.min[k]), f64::from(bounds.max[k]));
        let above = ends.iter().all(|&t| o - hi > -(t * d));
        let below = ends.iter().all(|&t| lo - o > t * d);
        above || below
    })
}

/// Relative rounding allowed on a hit distance `t` from the single-precision
/// primitive tests (8 ulps of `f32`).
pub const T_ROUNDING: f64 = 1e-6;

/// Trace `rays` (all valid) on `backend`, which holds `scene`, with each of its
/// traversals (the 8-wide BVH where the CPU has AVX2, the 4-wide one, and the
/// core's binary one) and compare with brute
/// force: `intersect` under the agreement rule, `occluded` exactly, except
/// where [`in_face_plane`] or [`off_primitive_box`] allow traversal to miss the
/// reference hit, and `intersect` may also miss one within rounding of `tmax`.
fn compare_with_brute_force(
    backend: &mut CpuBackend,
    scene: &Scene,
    rays: &[Ray],
) -> Result<(), Violation> {
    if let Some(accel) = backend.accel() {
        octant_copies_agree(accel.nodes(), rays)?;
    }
    let reference: Vec<(f32, u32)> = rays.iter().map(|r| brute_force(scene, r)).collect();
    let result = [Traversal::Binary, Traversal::Wide4, Traversal::Wide]
        .into_iter()
        .try_for_each(|traversal| {
            if let Err(e) = backend.set_traversal(traversal) {
                return violation!("set_traversal({traversal:?}) failed: {e}");
            }
            compare_traversal(backend, scene, rays, &reference)
                .map_err(|v| Violation(format!("{traversal:?} traversal: {v}")))
        });
    if let Err(e) = backend.set_traversal(Traversal::default()) {
        return violation!("set_traversal back to the default failed: {e}");
    }
    result
}

/// The light grids of a small scene ([`prism_core::point_grid`]) around its
/// light and around the first ray's origin: the shadow ray from every hit
/// point of `rays` to the grid's point, made as the integrators make it, gets
/// from the grid (where it answers) the answer of testing every primitive. A
/// hit that lies off its primitive's box ([`off_primitive_box`]: the f32 tests'
/// noise far from the ray's origin) may count either way, as for traversal.
fn light_grid_agrees(accel: &Accel, scene: &Scene, rays: &[Ray]) -> Result<(), Violation> {
    let points = std::iter::once(accel.light().position).chain(rays.first().map(|r| r.origin));
    for point in points {
        let Some(grid) = build_point_grid(point, accel.primitives()) else {
            continue;
        };
        let prims = accel.primitives();
        for (i, ray) in rays.iter().enumerate() {
            let hit = accel.intersect(ray);
            if !hit.is_hit() {
                continue;
            }
            let p = ray.at(hit.t);
            let to_light = grid.point - p;
            let dist = to_light.length();
            let shadow = Ray::segment(p, to_light * (1.0 / dist), spawn_tmin(p, ray.origin), dist);
            if !shadow.is_valid() {
                continue;
            }
            let Some(listed) = any_hit_listed(&grid, prims, &shadow) else {
                continue;
            };
            let pre = RayPre::new(&shadow);
            let blocking: Vec<(f32, u32)> = prims
                .iter()
                .filter_map(|q| {
                    ray_primitive(&pre, q, shadow.tmin, shadow.tmax).map(|h| (h.0, q.id()))
                })
                .collect();
            let on_box = blocking
                .iter()
                .any(|&(t, id)| !off_primitive_box(scene, &shadow, t, id));
            if (on_box && !listed) || (blocking.is_empty() && listed) {
                return violation!(
                    "ray {i} {ray:?}: the shadow ray {shadow:?} to {point} is {} by the light grid; blocked by {blocking:?} (t, id), on its box: {on_box}",
                    if listed { "blocked" } else { "clear" },
                );
            }
        }
    }
    Ok(())
}

/// The early miss of the CUDA grid walk
/// ([`prism_core::intersect::sphere_missed_early`]) never says missed where
/// [`ray_sphere`] meets a sphere anywhere on the ray's line.
fn sphere_early_miss_agrees(scene: &Scene, rays: &[Ray]) -> Result<(), Violation> {
    for (i, ray) in rays.iter().enumerate() {
        for (k, s) in scene.spheres().iter().enumerate() {
            let (c, r) = (s.truncate(), s.w);
            if sphere_missed_early(ray.origin, ray.dir, c, r)
                && let Some(t) = ray_sphere(ray.origin, ray.dir, c, r, -f32::MAX, f32::INFINITY)
            {
                return violation!(
                    "ray {i} {ray:?}: sphere {k} said missed early, but ray_sphere hits it at t = {t}"
                );
            }
        }
    }
    Ok(())
}

/// The scene's uniform grid ([`prism_core::cell_grid`], built whatever its
/// cost model says): the closest hit of every ray through it agrees with brute
/// force under the rule `intersect` is held to (see [`compare_traversal`]).
fn cell_grid_agrees(accel: &Accel, scene: &Scene, rays: &[Ray]) -> Result<(), Violation> {
    let Some(grid) = CellGrid::build(accel.primitives()) else {
        return Ok(());
    };
    let (nodes, prims) = (accel.nodes(), accel.primitives());
    for (i, ray) in rays.iter().enumerate() {
        let (t, prim) = brute_force(scene, ray);
        let mut hit = grid.closest_hit(accel, ray);
        if let Some(p) = prims.get(hit.prim as usize) {
            hit.prim = p.id();
        } else if hit.is_hit() {
            return violation!("ray {i} {ray:?}: the grid's hit {hit:?} names no slot");
        }
        if !closest_hit_agrees(nodes, prims, scene, ray, &hit, (t, prim)).0 {
            return violation!(
                "ray {i} {ray:?}: the cell grid gave {hit:?}, brute force gives t = {t} on prim {prim}"
            );
        }
    }
    Ok(())
}

/// The GPU backends' slab test on the octant copies of a small tree
/// ([`prism_core::gpu::octant_copies`]): for every ray and every child box, the
/// near and far planes of the ray's copy give [`ray_aabb`]'s value.
fn octant_copies_agree(nodes: &[prism_core::gpu::BvhNode], rays: &[Ray]) -> Result<(), Violation> {
    use prism_core::gpu::{octant_copies, octant_of};
    let Some(copies) = octant_copies(nodes) else {
        return Ok(());
    };
    let v = |r: [f32; 4]| Vec3::new(r[0], r[1], r[2]);
    for (i, ray) in rays.iter().enumerate() {
        let pre = RayPre::new(ray);
        let o = octant_of(pre.inv_dir.into());
        let copy = &copies[o * nodes.len()..(o + 1) * nodes.len()];
        for (k, (t, c)) in nodes.iter().zip(copy).enumerate() {
            for (lo, hi, near, far) in [
                (t.left_lo, t.left_hi, c.left_lo, c.left_hi),
                (t.right_lo, t.right_hi, c.right_lo, c.right_hi),
            ] {
                let core = ray_aabb(&pre, v(lo), v(hi), ray.tmin, ray.tmax);
                let tn = (v(near) - pre.origin) * pre.inv_dir;
                let tf = (v(far) - pre.origin) * pre.inv_dir;
                let enter = tn.x.max(tn.y).max(tn.z).max(ray.tmin);
                let exit = widen_exit(tf.x.min(tf.y).min(tf.z).min(ray.tmax));
                let octant = if enter <= exit { enter } else { f32::INFINITY };
                if core != octant && !(core.is_nan() && octant.is_nan()) {
                    return violation!(
                        "ray {i} {ray:?}, node {k}: ray_aabb gives {core}, the octant copy {o} gives {octant}"
                    );
                }
            }
        }
    }
    Ok(())
}

/// Whether closest hit `hit` (scene ids) agrees with brute force's `(t, prim)`
/// for `ray` under the agreement rule, and whether the reference hit is one a
/// walk may miss. A walk may miss the reference hit (it never finds a closer
/// one) only under the face-plane convention, or where the reference hit is not
/// on its primitive at all; and the closest-hit walk, which prunes what lies at
/// or past the best distance so far (at first `tmax`), may also miss a reference
/// hit within the rounding of `tmax`: the exact hit can lie at `tmax`, outside
/// the open interval, and which side `t` rounds to is not defined.
fn closest_hit_agrees(
    nodes: &[prism_core::gpu::BvhNode],
    prims: &[prism_core::gpu::Primitive],
    scene: &Scene,
    ray: &Ray,
    hit: &Hit,
    (t, prim): (f32, u32),
) -> (bool, bool) {
    let hit_ref = prim != Hit::NO_PRIM;
    let culled = hit_ref
        && (in_face_plane(nodes, prims, ray, t, prim) || off_primitive_box(scene, ray, t, prim));
    let at_tmax = hit_ref
        && (f64::from(ray.tmax) - f64::from(t)).abs()
            <= T_ROUNDING * f64::from(t.abs().max(ray.tmax.abs()));
    let missed = hit_ref && (!hit.is_hit() || hit.t > t);
    let agrees =
        (missed && (culled || at_tmax)) || classify(ray, hit, t, prim) != Agreement::Mismatch;
    (agrees, culled)
}

/// [`compare_with_brute_force`] for the backend's current traversal.
fn compare_traversal(
    backend: &mut CpuBackend,
    scene: &Scene,
    rays: &[Ray],
    reference: &[(f32, u32)],
) -> Result<(), Violation> {
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut occluded = vec![false; rays.len()];
    if let Err(e) = backend.intersect(rays, &mut hits) {
        return violation!("intersect of {} valid rays failed: {e}", rays.len());
    }
    if let Err(e) = backend.occluded(rays, &mut occluded) {
        return violation!("occluded of {} valid rays failed: {e}", rays.len());
    }
    let (nodes, prims) = backend
        .accel()
        .map(|a| (a.nodes(), a.primitives()))
        .unwrap_or_default();
    let all = rays.iter().zip(&hits).zip(&occluded).zip(reference);
    for (i, (((ray, hit), &occ), &(t, prim))) in all.enumerate() {
        if hit.is_hit()
            && !(hit.t > ray.tmin
                && hit.t < ray.tmax
                && (hit.prim as usize) < scene.primitive_count())
        {
            return violation!("ray {i} {ray:?}: hit {hit:?} outside the ray or the scene");
        }
        let (agrees, culled) = closest_hit_agrees(nodes, prims, scene, ray, hit, (t, prim));
        if !agrees {
            return violation!(
                "ray {i} {ray:?}: intersect gave {hit:?}, brute force gives t = {t} on prim {prim}"
            );
        }
        let hit_ref = prim != Hit::NO_PRIM;
        if occ != hit_ref && !(hit_ref && culled) {
            return violation!(
                "ray {i} {ray:?}: occluded = {occ}, brute force gives t = {t} on prim {prim}"
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Meshes

/// [`parse_obj`] on arbitrary bytes.
pub fn mesh_obj(data: &[u8]) -> Result<(), Violation> {
    check_parsed(parse_obj(data, "fuzz.obj"), "fuzz.obj")
}

/// [`parse_ply`] on arbitrary bytes.
pub fn mesh_ply(data: &[u8]) -> Result<(), Violation> {
    check_parsed(parse_ply(data, "fuzz.ply"), "fuzz.ply")
}

/// A parse result: [`Error::Parse`] naming the file, or a mesh that is well formed,
/// builds into a scene (or names its bad vertex) and traces like brute force.
fn check_parsed(parsed: Result<Mesh, Error>, name: &str) -> Result<(), Violation> {
    let mesh = match parsed {
        Ok(mesh) => mesh,
        Err(Error::Parse { path, message, .. }) if path == name && !message.is_empty() => {
            return Ok(());
        }
        Err(e) => return violation!("{name}: unexpected error {e:?}"),
    };
    if mesh.triangles.is_empty() {
        return violation!("{name}: parsed without error but has no triangles");
    }
    let n = mesh.positions.len();
    if let Some(t) = mesh
        .triangles
        .iter()
        .position(|t| t.iter().any(|&i| i as usize >= n))
    {
        return violation!("{name}: triangle {t} has an index out of range ({n} vertices)");
    }
    let (scene, camera) = match crate::mesh_scene(&mesh, Material::lambertian(Vec3::splat(0.7))) {
        Ok(sc) => sc,
        Err(Error::VertexNotFinite {
            vertex, position, ..
        }) => {
            let p = mesh.positions.get(vertex).copied();
            let used = mesh
                .triangles
                .iter()
                .flatten()
                .any(|&i| i as usize == vertex);
            if used && p.is_some_and(|p| !p.is_finite() && same_bits(p.to_array(), position)) {
                return Ok(());
            }
            return violation!("{name}: VertexNotFinite names vertex {vertex}, which is fine");
        }
        Err(e) => return violation!("{name}: mesh_scene failed unexpectedly: {e:?}"),
    };
    with_backend(|backend| {
        if let Err(e) = backend.set_scene(&scene) {
            return violation!("{name}: a parsed mesh with finite vertices was refused: {e:?}");
        }
        // Rays from the camera's eye to the centroids of the first triangles.
        let rays: Vec<Ray> = mesh
            .triangles
            .iter()
            .take(MAX_MESH_RAYS)
            .filter_map(|t| {
                let [a, b, c] = t.map(|i| mesh.positions.get(i as usize).copied());
                let centroid = (a? + b? + c?) / 3.0;
                let ray = Ray::new(camera.look_from, centroid - camera.look_from);
                ray.is_valid().then_some(ray)
            })
            .collect();
        compare_with_brute_force(backend, &scene, &rays)
    })
}

// ---------------------------------------------------------------------------
// Scenes and ray batches

/// Whether `scene` breaks a rule of [`Scene::validate`]: the spec, written
/// independently of the implementation.
fn scene_is_valid(scene: &Scene) -> bool {
    let materials = scene.materials();
    scene.primitive_count() > 0
        && materials
            .iter()
            .enumerate()
            .all(|(i, m)| m.validate(i).is_ok())
        && scene
            .primitive_materials()
            .iter()
            .all(|&m| (m as usize) < materials.len())
        && scene
            .spheres()
            .iter()
            .all(|cr| cr.truncate().is_finite() && cr.w > 0.0 && cr.w.is_finite())
        && (0..scene.triangle_count() as u32).all(|i| {
            scene.triangle(i).is_some_and(|[a, b, c]| {
                a.is_finite()
                    && b.is_finite()
                    && c.is_finite()
                    && !(scene.reject_degenerate && (b - a).cross(c - a) == Vec3::ZERO)
            })
        })
}

/// Whether the item a scene error names really is bad.
fn error_names_bad_item(scene: &Scene, e: &Error) -> bool {
    let sphere = |prim: usize| match scene.primitive(prim as u32) {
        Some(PrimRef::Sphere(s)) => scene.spheres().get(s as usize).copied(),
        _ => None,
    };
    let triangle = |prim: usize| match scene.primitive(prim as u32) {
        Some(PrimRef::Triangle(t)) => scene.triangle(t),
        _ => None,
    };
    match *e {
        Error::EmptyScene => scene.primitive_count() == 0,
        Error::MaterialInvalid { index, .. } => scene
            .materials()
            .get(index)
            .is_some_and(|m| m.validate(index).is_err()),
        Error::MaterialOutOfRange {
            primitive,
            material,
            count,
        } => {
            count == scene.materials().len()
                && material as usize >= count
                && scene.primitive_materials().get(primitive) == Some(&material)
        }
        Error::SphereCenterNotFinite { prim, center } => sphere(prim).is_some_and(|cr| {
            !cr.truncate().is_finite() && same_bits(cr.truncate().to_array(), center)
        }),
        Error::SphereRadiusInvalid { prim, radius } => sphere(prim).is_some_and(|cr| {
            !(cr.w > 0.0 && cr.w.is_finite()) && cr.w.to_bits() == radius.to_bits()
        }),
        Error::TriangleNotFinite {
            prim,
            vertex,
            position,
        } => triangle(prim)
            .and_then(|t| t.get(vertex).copied())
            .is_some_and(|p| !p.is_finite() && same_bits(p.to_array(), position)),
        Error::DegenerateTriangle { prim } => {
            scene.reject_degenerate
                && triangle(prim).is_some_and(|[a, b, c]| (b - a).cross(c - a) == Vec3::ZERO)
        }
        _ => false,
    }
}

/// Equal errors, NaN fields included (`Error`'s `PartialEq` says NaN != NaN).
fn same_error(a: &Error, b: &Error) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

fn same_bits(a: [f32; 3], b: [f32; 3]) -> bool {
    a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// A material: usually a valid one, sometimes raw values.
fn decode_material(b: &mut Bytes) -> Material {
    match b.u8() {
        0..=159 => Material::lambertian(Vec3::new(b.unit(), b.unit(), b.unit())),
        160..=191 => Material::metal(Vec3::splat(b.unit()), b.unit()),
        192..=207 => Material::dielectric(1.0 + b.unit()),
        208..=223 => Material::emissive(Vec3::splat(4.0 * b.unit())),
        _ => Material {
            albedo: b.vec3(),
            fuzz: b.f32(),
            emission: b.vec3(),
            ior: b.f32(),
            lambert: b.f32(),
            metal: b.f32(),
            dielectric: b.f32(),
        },
    }
}

/// Add one decoded mesh and check `add_mesh`'s verdict.
fn decode_mesh(b: &mut Bytes, scene: &mut Scene, material: u32) -> Result<(), Violation> {
    let positions: Vec<Vec3> = (0..b.u8() % 9).map(|_| b.vec3()).collect();
    let n = positions.len();
    let triangles: Vec<[u32; 3]> = (0..b.u8() % 6)
        .map(|_| {
            [0; 3].map(|_| match b.u8() {
                250..=255 => b.u32(),
                k => u32::from(k) % (n as u32 + 2),
            })
        })
        .collect();
    let before = scene.primitive_count();
    let bad_index = triangles.iter().flatten().any(|&i| i as usize >= n);
    let bad_vertex = triangles
        .iter()
        .flatten()
        .any(|&i| positions.get(i as usize).is_some_and(|p| !p.is_finite()));
    match scene.add_mesh(&positions, &triangles, material) {
        Ok(first) => {
            if bad_index || bad_vertex || first as usize != before {
                return violation!(
                    "add_mesh accepted {positions:?} {triangles:?} (first id {first})"
                );
            }
            if scene.primitive_count() != before + triangles.len() {
                return violation!("add_mesh added the wrong number of triangles");
            }
        }
        Err(e) => {
            let named = match e {
                Error::IndexOutOfRange {
                    triangle,
                    index,
                    vertex_count,
                    ..
                } => {
                    vertex_count == n
                        && index as usize >= n
                        && triangles.get(triangle).is_some_and(|t| t.contains(&index))
                }
                Error::VertexNotFinite {
                    vertex, position, ..
                } => positions.get(vertex).is_some_and(|p| {
                    !p.is_finite()
                        && same_bits(p.to_array(), position)
                        && triangles.iter().flatten().any(|&i| i as usize == vertex)
                }),
                _ => false,
            };
            if !named || scene.primitive_count() != before {
                return violation!(
                    "add_mesh({positions:?}, {triangles:?}) gave {e:?}, which names no bad item or added something"
                );
            }
        }
    }
    Ok(())
}

/// A point on primitive `id` picked by the next bytes (edges and corners included).
fn point_on(b: &mut Bytes, scene: &Scene, id: u32) -> Option<Vec3> {
    match scene.primitive(id)? {
        PrimRef::Triangle(t) => {
            let [p0, p1, p2] = scene.triangle(t)?;
            let (u, v) = (b.unit(), b.unit());
            let (u, v) = if u + v > 1.0 {
                (1.0 - u, 1.0 - v)
            } else {
                (u, v)
            };
            Some(p0 + u * (p1 - p0) + v * (p2 - p0))
        }
        PrimRef::Sphere(s) => {
            let cr = scene.spheres().get(s as usize)?;
            Some(cr.truncate() + cr.w * (b.vec3().normalize_or(Vec3::X)))
        }
    }
}

/// A ray: origin, then a raw direction or one aimed at a point on a primitive,
/// then a `(tmin, tmax)` pair, often the default `(0, inf)`.
fn decode_ray(b: &mut Bytes, scene: &Scene) -> Ray {
    let origin = b.vec3();
    let aim = b.u8();
    let dir = match aim {
        0..=111 => b.vec3(),
        _ => {
            let n = scene.primitive_count().max(1) as u32;
            match point_on(b, scene, u32::from(aim) % n) {
                Some(p) => p - origin,
                None => b.vec3(),
            }
        }
    };
    let (tmin, tmax) = match b.u8() % 8 {
        0..=3 => (0.0, f32::INFINITY),
        4 => (b.f32(), f32::INFINITY),
        5 => (0.0, b.f32()),
        _ => (b.f32(), b.f32()),
    };
    Ray::segment(origin, dir, tmin, tmax)
}

/// Whether every coordinate, radius and emission of `scene` is of a size real
/// scenes use; inside this domain a NaN or infinite pixel is an integrator bug,
/// outside it overflow is expected.
fn scene_is_tame(scene: &Scene) -> bool {
    let tame = |v: Vec3| v.abs().max_element() <= 1e4;
    scene
        .spheres()
        .iter()
        .all(|cr| tame(cr.truncate()) && (1e-2..=1e4).contains(&cr.w))
        && (0..scene.triangle_count() as u32)
            .all(|i| scene.triangle(i).is_some_and(|t| t.into_iter().all(tame)))
        && scene.materials().iter().all(|m| tame(m.emission))
}

/// A 3x3 render of a valid decoded scene with a decoded integrator: it must
/// succeed and, for a tame scene, hold finite non-negative radiance.
fn render_scene_check(
    backend: &mut CpuBackend,
    scene: &Scene,
    b: &mut Bytes,
) -> Result<(), Violation> {
    let settings = RenderSettings {
        integrator: Integrator::ALL[usize::from(b.u8() % 3)],
        spp: 2,
        max_depth: 3,
        ao_samples: 2,
        ao_distance: 4.0,
        ao_shadows: b.u8() & 1 == 1,
        ..Default::default()
    };
    let camera = Camera::look_at(Vec3::new(3.0, 4.0, 20.0), Vec3::ZERO, Vec3::Y, 70.0);
    let mut image = match Image::new(3, 3, PixelFormat::LinearF32) {
        Ok(i) => i,
        Err(e) => return violation!("Image::new(3, 3) failed: {e:?}"),
    };
    if let Err(e) = backend.render(&camera, &settings, &mut image, &NoProgress) {
        return violation!("render of a valid scene failed: {e:?}");
    }
    // Not compared with the binary traversal's image: in arbitrary scenes the two
    // BVHs differ where hits tie (coincident triangles) or lie off their boxes.
    if scene_is_tame(scene) {
        finite_radiance(&image).map_err(|v| Violation(format!("{v} ({settings:?})")))?;
    }
    Ok(())
}

/// Arbitrary materials, spheres, triangles and meshes; validation, BVH build and
/// `set_scene`; then a batch of arbitrary rays through `intersect` and `occluded`
/// against brute force.
pub fn scene_trace(data: &[u8]) -> Result<(), Violation> {
    let mut b = Bytes::new(data);
    let mut scene = Scene::new();
    scene.reject_degenerate = b.u8() & 1 == 1;
    let materials = b.u8() % 4;
    for _ in 0..materials {
        scene.add_material(decode_material(&mut b));
    }
    let prims = b.u8() as usize % (MAX_PRIMITIVES + 1);
    while scene.primitive_count() < prims && !b.is_empty() {
        let kind = b.u8();
        let material = match b.u8() {
            248..=255 => b.u32(),
            m => u32::from(m) % u32::from(materials.max(1)),
        };
        match kind % 8 {
            0..=3 => {
                let (v0, v1, v2) = (b.vec3(), b.vec3(), b.vec3());
                scene.add_triangle(v0, v1, v2, material);
            }
            4..=6 => {
                let (center, radius) = (b.vec3(), b.f32());
                scene.add_sphere(center, radius, material);
            }
            _ => decode_mesh(&mut b, &mut scene, material)?,
        }
    }

    let valid = scene_is_valid(&scene);
    let built = Accel::build(&scene);
    match &built {
        Ok(_) if !valid => return violation!("Accel::build accepted an invalid scene"),
        Err(e) if valid => return violation!("Accel::build refused a valid scene: {e:?}"),
        Err(e) if !error_names_bad_item(&scene, e) => {
            return violation!("Accel::build gave {e:?}, which names no bad item");
        }
        _ => {}
    }
    with_backend(|backend| {
        let set = backend.set_scene(&scene).map(|_| ());
        match (&built, set) {
            (Ok(_), Ok(())) => {}
            (Err(a), Err(b)) if same_error(a, &b) => {
                return known_good_call(backend, "a refused scene");
            }
            (built, set) => {
                return violation!("Accel::build gave {built:?} but set_scene gave {set:?}");
            }
        }
        let n = b.u8() as usize % (MAX_RAYS + 1);
        let rays: Vec<Ray> = (0..n).map(|_| decode_ray(&mut b, &scene)).collect();

        // The whole batch: refused naming the first bad ray, if there is one.
        let first_bad = rays.iter().position(|r| !r.is_valid());
        let mut hits = vec![Hit::MISS; rays.len()];
        let mut occluded = vec![false; rays.len()];
        let results = [
            ("intersect", backend.intersect(&rays, &mut hits).map(|_| ())),
            (
                "occluded",
                backend.occluded(&rays, &mut occluded).map(|_| ()),
            ),
        ];
        for (what, r) in results {
            match (first_bad, r) {
                (None, Ok(())) => {}
                (Some(i), Err(Error::InvalidRay { index, .. })) if index == i => {}
                (bad, r) => {
                    return violation!("{what}: first bad ray {bad:?}, but the call gave {r:?}");
                }
            }
        }
        // Output slices of the wrong length.
        let mut short = vec![Hit::MISS; rays.len().saturating_sub(1)];
        if !rays.is_empty() {
            match backend.intersect(&rays, &mut short) {
                Err(Error::LengthMismatch { .. }) => {}
                r => return violation!("intersect with a short output slice gave {r:?}"),
            }
        }
        let good: Vec<Ray> = rays.into_iter().filter(Ray::is_valid).collect();
        compare_with_brute_force(backend, &scene, &good)?;
        if let Some(accel) = backend.accel() {
            light_grid_agrees(accel, &scene, &good)?;
            cell_grid_agrees(accel, &scene, &good)?;
        }
        sphere_early_miss_agrees(&scene, &good)?;
        // Last, so that inputs saved before this step decode as they did.
        render_scene_check(backend, &scene, &mut b)
    })
}

// ---------------------------------------------------------------------------
// Render settings

/// Cancels after a given number of `advance` calls.
struct CancelAfter {
    limit: u64,
    calls: std::sync::atomic::AtomicU64,
}

impl Progress for CancelAfter {
    fn advance(&self, _done: u64, _total: u64) {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn cancelled(&self) -> bool {
        self.calls.load(std::sync::atomic::Ordering::Relaxed) >= self.limit
    }
}

/// A small scene of every material kind and both primitive kinds, with decoded
/// (valid) material parameters.
fn render_scene(b: &mut Bytes) -> Scene {
    let mut s = Scene::new();
    s.sky = match b.u8() % 3 {
        0 => Sky::rtiow(),
        1 => Sky::BLACK,
        _ => Sky::constant(Vec3::new(b.unit(), b.unit(), b.unit())),
    };
    s.light.position = b.vec3();
    let blend = Material::blend(
        Material::lambertian(Vec3::splat(b.unit())),
        Material::metal(Vec3::splat(b.unit()), b.unit()),
        b.unit(),
    );
    let glass_ior = b.f32();
    let glass = Material::dielectric(if glass_ior > 0.0 && glass_ior.is_finite() {
        glass_ior
    } else {
        1.5
    });
    let ids = [
        s.add_material(Material::lambertian(Vec3::splat(0.5))),
        s.add_material(blend),
        s.add_material(glass),
        s.add_material(Material::emissive(Vec3::splat(8.0 * b.unit()))),
    ];
    s.add_sphere(Vec3::new(0.0, -100.5, -1.0), 100.0, ids[0]);
    s.add_sphere(Vec3::new(0.0, 0.0, -1.0), 0.5, ids[1]);
    s.add_sphere(Vec3::new(-1.0, 0.0, -1.0), 0.5, ids[2]);
    s.add_sphere(Vec3::new(-1.0, 0.0, -1.0), 0.4, ids[2]);
    s.add_triangle(
        Vec3::new(1.0, -0.5, -2.0),
        Vec3::new(2.0, -0.5, -1.0),
        Vec3::new(1.5, 1.0, -1.5),
        ids[3],
    );
    s.add_triangle(Vec3::ZERO, Vec3::X, Vec3::X * 2.0, ids[1]);
    s
}

/// Whether every camera value is of a size a real scene uses; inside this
/// domain a NaN pixel is an integrator bug and the two CPU traversals must
/// render the same image, outside it overflow and rounding are expected.
fn camera_is_tame(c: &Camera) -> bool {
    let tame = |x: f32| x.abs() <= 1e4;
    [c.look_from, c.look_at, c.up]
        .iter()
        .all(|v| v.to_array().into_iter().all(tame))
        && c.up.length() >= 1e-3
        && tame(c.aperture)
        && tame(c.focus_distance)
        && c.focus_distance >= 1e-3
        && (c.look_from - c.look_at).length() >= 1e-3
        && c.vfov_degrees >= 1e-2
        && c.vfov_degrees <= 179.9
}

/// Arbitrary image size, settings and camera: the raw values must be refused
/// with the same typed error by every entry point that sees them; valid ones
/// render (capped to a tiny size) on the CPU backend, and cancellation mid-frame
/// is an error after which the backend still renders.
pub fn render_settings(data: &[u8]) -> Result<(), Violation> {
    let mut b = Bytes::new(data);
    let (width, height) = (b.size(1 << 16), b.size(1 << 16));
    let settings = RenderSettings {
        integrator: Integrator::ALL[usize::from(b.u8() % 3)],
        spp: b.size(RenderSettings::MAX_SPP),
        max_depth: b.size(RenderSettings::MAX_DEPTH),
        seed: b.u32(),
        ao_samples: b.size(RenderSettings::MAX_AO_SAMPLES),
        ao_distance: b.f32(),
        ao_shadows: b.u8() & 1 == 1,
        rr_depth: b.size(8),
    };
    let camera = Camera {
        look_from: b.vec3(),
        look_at: b.vec3(),
        up: b.vec3(),
        vfov_degrees: b.f32(),
        aperture: b.f32(),
        focus_distance: b.f32(),
    };
    let format = if b.u8() & 1 == 0 {
        PixelFormat::Srgba8
    } else {
        PixelFormat::LinearF32
    };
    let cancel_after = match b.u8() {
        0..=239 => None,
        k => Some(u64::from(k - 240)),
    };
    let mut scene = render_scene(&mut b);

    // The raw size: refused by Image::new exactly when checked_pixels refuses it.
    // Valid sizes are not allocated here (up to 2^30 pixels), only validated.
    let size_ok = prism_core::Image::checked_pixels(width, height);
    if let Err(e) = &size_ok {
        match Image::new(width, height, format) {
            Err(ref e2) if same_error(e2, e) => {}
            r => return violation!("checked_pixels gave {e:?} but Image::new gave {r:?}"),
        }
        if !matches!(e, Error::ImageSize { width: w, height: h, .. } if *w == width && *h == height)
        {
            return violation!("{width}x{height}: size error {e:?} does not name the size");
        }
    }
    let (w, h) = (
        width.clamp(1, MAX_RENDER_SIDE),
        height.clamp(1, MAX_RENDER_SIDE),
    );
    let mut image = match Image::new(w, h, format) {
        Ok(i) => i,
        Err(e) => return violation!("Image::new({w}, {h}) failed: {e:?}"),
    };
    // What render must say about the raw settings and the camera at the tiny size.
    let expected = settings
        .validate()
        .and_then(|()| camera.frame(w, h).map(|_| ()));
    if size_ok.is_ok() {
        // The raw size reaches the camera too (its aspect ratio); it must not panic.
        let _ = camera.frame(width, height);
    }

    with_backend(|backend| {
        // A non-finite light position is refused naming it; the frame is then
        // rendered with its non-finite coordinates at 0.
        let position = scene.light.position;
        if !position.is_finite() {
            match backend.set_scene(&scene) {
                Err(Error::SceneLightInvalid {
                    field: "light.position",
                    value,
                    ..
                }) if value
                    .iter()
                    .zip(position.to_array())
                    .all(|(a, b)| a.to_bits() == b.to_bits()) => {}
                got => {
                    return violation!(
                        "light at {position:?}: expected SceneLightInvalid, got {got:?}"
                    );
                }
            }
            scene.light.position = Vec3::from(
                position
                    .to_array()
                    .map(|v| if v.is_finite() { v } else { 0.0 }),
            );
        }
        if let Err(e) = backend.set_scene(&scene) {
            return violation!("the render scene was refused: {e:?}");
        }
        if let Err(e) = &expected {
            // Refused before any work is done, so the raw values are safe to send.
            return match backend.render(&camera, &settings, &mut image, &NoProgress) {
                Err(got) if same_error(e, &got) => known_good_render(backend, "a refused render"),
                got => violation!("expected {e:?} from render, got {got:?}"),
            };
        }
        // Valid: rendered with spp, depth and AO samples capped (the raw values
        // may ask for hours of work).
        let capped = settings_capped(&settings);
        let result = match cancel_after {
            Some(limit) => {
                let progress = CancelAfter {
                    limit,
                    calls: Default::default(),
                };
                match backend.render(&camera, &capped, &mut image, &progress) {
                    Err(Error::Cancelled) => {
                        return known_good_render(backend, "a cancelled render");
                    }
                    r => r,
                }
            }
            None => backend.render(&camera, &capped, &mut image, &NoProgress),
        };
        let stats = match result {
            Ok(s) => s,
            Err(e) => return violation!("valid capped settings {capped:?} were refused: {e:?}"),
        };
        let samples = u64::from(w) * u64::from(h) * u64::from(capped.spp);
        if stats.rays < samples {
            return violation!("{} rays reported for {samples} samples", stats.rays);
        }
        if !camera_is_tame(&camera) {
            // Rays from a lens 1e7 wide see the scene from 2^24 of its sizes
            // away, where the primitive tests round to hits off their boxes, so
            // the two traversals (different boxes) may differ; overflow is possible.
            return Ok(());
        }
        if let Err(differ) = same_with_binary_traversal(backend, &camera, &capped, &image) {
            // The traversals may part where the rule of `compare_traversal` lets
            // them (a tie, a hit off its primitive's box); every ray says which.
            every_ray_like_brute_force(backend, &scene, &camera, &capped, w, h)
                .map_err(|v| Violation(format!("{differ}, and {v} ({capped:?}, {camera:?})")))?;
        }
        finite_radiance(&image).map_err(|v| Violation(format!("{v} ({capped:?}, {camera:?})")))
    })
}

/// Every linear pixel finite and non-negative (an sRGB image has none: NaN
/// encodes as 0 there).
fn finite_radiance(image: &Image) -> Result<(), Violation> {
    let pixels = image.linear();
    match pixels
        .iter()
        .position(|p| p.iter().any(|c| !(c.is_finite() && *c >= 0.0)))
    {
        Some(i) => violation!(
            "pixel {i} = {:?} is not a finite non-negative radiance",
            pixels.get(i)
        ),
        None => Ok(()),
    }
}

/// Render again with the core's binary traversal (the backend's default is its
/// widest BVH) and require the very same pixels, bit for bit.
fn same_with_binary_traversal(
    backend: &mut CpuBackend,
    camera: &Camera,
    settings: &RenderSettings,
    image: &Image,
) -> Result<(), Violation> {
    let mut binary = image.clone();
    if let Err(e) = backend.set_traversal(Traversal::Binary) {
        return violation!("set_traversal(Binary) failed: {e}");
    }
    let result = backend.render(camera, settings, &mut binary, &NoProgress);
    if let Err(e) = backend.set_traversal(Traversal::default()) {
        return violation!("set_traversal back to the default failed: {e}");
    }
    if let Err(e) = result {
        return violation!("the binary-traversal render failed: {e:?}");
    }
    let bits = |i: &Image| -> Vec<u32> {
        match i.format() {
            PixelFormat::LinearF32 => i.linear().iter().flatten().map(|c| c.to_bits()).collect(),
            PixelFormat::Srgba8 => i.rgba8().iter().map(|p| u32::from_le_bytes(*p)).collect(),
        }
    };
    let (wide, binary) = (bits(image), bits(&binary));
    match wide.iter().zip(&binary).position(|(a, b)| a != b) {
        Some(i) => violation!(
            "wide and binary traversals render different images: value {i} is {:#x} vs {:#x}",
            wide.get(i).copied().unwrap_or_default(),
            binary.get(i).copied().unwrap_or_default()
        ),
        None => Ok(()),
    }
}

/// Render `camera`'s `width` x `height` frame again through core's integrators,
/// ray by ray: every closest-hit and any-hit query is traced with each of the
/// backend's traversals and checked against brute force under the rule of
/// [`compare_traversal`] (ties, hits off their primitive's box), then answered
/// as the backend's default traversal answers it. Where two traversals' images
/// differ, this says whether every ray they traced stays within that rule.
fn every_ray_like_brute_force(
    backend: &mut CpuBackend,
    scene: &Scene,
    camera: &Camera,
    settings: &RenderSettings,
    width: u32,
    height: u32,
) -> Result<(), Violation> {
    // Built as the backend built it: the same tree, so the same slots.
    let accel = match Accel::build(scene) {
        Ok(a) => a,
        Err(e) => return violation!("the render scene did not build: {e:?}"),
    };
    let params = match settings.params(&accel, camera, width, height) {
        Ok(p) => p,
        Err(e) => return violation!("valid settings gave no render parameters: {e:?}"),
    };
    let mut slot_of = vec![Hit::NO_PRIM; scene.primitive_count()];
    for (slot, p) in accel.primitives().iter().enumerate() {
        if let Some(s) = slot_of.get_mut(p.id() as usize) {
            *s = slot as u32;
        }
    }
    let tracer = CheckedTracer {
        accel: &accel,
        scene,
        slot_of,
        backend: RefCell::new(backend),
        first: RefCell::new(None),
    };
    for y in 0..height {
        for x in 0..width {
            prism_core::integrator::render_pixel(&tracer, &params, x, y);
        }
    }
    tracer.first.into_inner().map_or(Ok(()), Err)
}

/// The integrators' tracer of [`every_ray_like_brute_force`].
struct CheckedTracer<'a> {
    accel: &'a Accel,
    scene: &'a Scene,
    /// Slot of each scene primitive id in `accel`.
    slot_of: Vec<u32>,
    backend: RefCell<&'a mut CpuBackend>,
    /// The first query that broke the rule.
    first: RefCell<Option<Violation>>,
}

impl CheckedTracer<'_> {
    /// Check `ray` on every traversal, then answer it with the default one:
    /// (closest hit with `prim` as a slot, occluded).
    fn trace(&self, ray: &Ray) -> (Hit, bool) {
        if !ray.is_valid() {
            // Never made by the integrators from valid settings; answered by core.
            return (self.accel.intersect_slot(ray), self.accel.occluded(ray));
        }
        let mut backend = self.backend.borrow_mut();
        let rays = std::slice::from_ref(ray);
        if self.first.borrow().is_none()
            && let Err(v) = compare_with_brute_force(&mut backend, self.scene, rays)
        {
            *self.first.borrow_mut() = Some(v);
        }
        let (mut hit, mut occluded) = ([Hit::MISS], [false]);
        let answered = backend.intersect(rays, &mut hit).is_ok()
            && backend.occluded(rays, &mut occluded).is_ok();
        if !answered && self.first.borrow().is_none() {
            *self.first.borrow_mut() = Some(Violation(format!("valid ray {ray:?} refused")));
        }
        let [mut hit] = hit;
        if hit.is_hit() {
            hit.prim = self
                .slot_of
                .get(hit.prim as usize)
                .copied()
                .unwrap_or(Hit::NO_PRIM);
        }
        (hit, occluded[0])
    }
}

impl prism_core::integrator::Tracer for CheckedTracer<'_> {
    fn accel(&self) -> &Accel {
        self.accel
    }
    fn closest_slot(&self, ray: &Ray) -> Hit {
        self.trace(ray).0
    }
    fn occluded(&self, ray: &Ray) -> bool {
        self.trace(ray).1
    }
}

/// `settings` with spp, depth and AO samples capped at [`MAX_RENDER_WORK`].
fn settings_capped(s: &RenderSettings) -> RenderSettings {
    RenderSettings {
        spp: s.spp.min(MAX_RENDER_WORK),
        max_depth: s.max_depth.min(MAX_RENDER_WORK),
        ao_samples: s.ao_samples.min(MAX_RENDER_WORK),
        ..*s
    }
}

/// A valid 2x2 render of the backend's current scene, which must succeed.
fn known_good_render(backend: &mut CpuBackend, after: &str) -> Result<(), Violation> {
    let camera = Camera::look_at(Vec3::new(0.0, 0.0, 3.0), Vec3::ZERO, Vec3::Y, 40.0);
    let settings = RenderSettings {
        spp: 1,
        max_depth: 2,
        ..Default::default()
    };
    let mut image = match Image::new(2, 2, PixelFormat::Srgba8) {
        Ok(i) => i,
        Err(e) => return violation!("Image::new(2, 2) failed: {e:?}"),
    };
    match backend.render(&camera, &settings, &mut image, &NoProgress) {
        Ok(_) => Ok(()),
        Err(e) => violation!("after {after}: a valid 2x2 render failed: {e:?}"),
    }
}
