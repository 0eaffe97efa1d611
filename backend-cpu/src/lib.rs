//! `prism_cpu` (package `prism-rt-cpu`): the CPU backend of Prism.
//!
//! Traces with prism-core's intersection arithmetic and integrators on every core
//! through a dedicated rayon pool: renders are split into bands of [`TILE`] rows
//! processed tile by tile (neighbouring rays share BVH nodes in cache), ray batches
//! into chunks of [`RAY_CHUNK`] rays. Nothing is allocated in the per-ray loop.
//!
//! Core's binary BVH is collapsed into a wide one, picked at run time: 8 children
//! per node tested with AVX2 on x86-64 CPUs that have it (`bvh8`), else 4 with
//! 128-bit SIMD ([`wide`]). Both give core's answers (see [`Traversal`]); the
//! binary BVH itself stays available as [`Traversal::Binary`].
//!
//! Two-level scenes (geometries placed by instances, see [`prism_core::Scene`])
//! have every geometry's tree and the tree over the instances collapsed alike
//! (the 8-wide tree over the instances boxes each one more closely than
//! core's, from its geometry's outline); a ray enters an instance through
//! core's own [`prism_core::two_level::object_ray`] (or the same arithmetic
//! on the same numbers), so its hits are core's.
//! [`Backend::update_scene`] applies an update to core's scene and then
//! redoes only what changed in the wide trees: a refit mesh's tree is refit
//! straight from its new vertices (core's own copy of it is brought up to
//! date only where it is read), changed instance records are written again,
//! the instances' tree is collapsed again when core rebuilt it.
//!
//! ```
//! use prism_core::{Backend, Camera, Image, Material, NoProgress, PixelFormat, RenderSettings, Scene};
//! use prism_core::glam::Vec3;
//!
//! let mut scene = Scene::new();
//! let grey = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
//! scene.add_sphere(Vec3::ZERO, 1.0, grey);
//! let mut cpu = prism_cpu::CpuBackend::new()?;
//! cpu.set_scene(&scene)?;
//! let camera = Camera::look_at(Vec3::new(0.0, 0.0, 4.0), Vec3::ZERO, Vec3::Y, 40.0);
//! let mut image = Image::new(32, 24, PixelFormat::Srgba8)?;
//! let stats = cpu.render(&camera, &RenderSettings::default(), &mut image, &NoProgress)?;
//! assert!(stats.rays >= 32 * 24);
//! # Ok::<(), prism_core::Error>(())
//! ```
#![deny(missing_docs)]

#[cfg(target_arch = "x86_64")]
pub mod bvh8;
mod collapse;
#[cfg(target_arch = "x86_64")]
mod heightfield8;
mod instances;
mod leaves;
mod refit;
mod trees;
pub mod wide;

use prism_core::backend::check_batch;
use prism_core::bvh::{FORK_MIN_PRIMITIVES, RayonFork};
use prism_core::cell_grid::CellGrid;
use prism_core::image::Srgb8Table;
use prism_core::integrator::render_pixel;
use prism_core::point_grid::{PointGrid, build_point_grid};
use prism_core::update::GeometrySah;
use prism_core::{
    Accel, Backend, BackendInfo, Camera, Error, Hit, Image, PixelFormat, Progress, Ray, RefitOn,
    RenderSettings, RenderStats, Scene, SceneUpdate, TimingSource, TreeBytes, UpdateStats,
};
use rayon::prelude::*;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;
use trees::{Scratch, Wide, WideTracer};

/// Tile edge in pixels: a 16x16 tile's rays stay coherent enough to share BVH
/// nodes in L1/L2, and 16 rows per band give rayon enough bands to balance.
pub const TILE: u32 = 16;
/// Rays per work item of `intersect`/`occluded`: large enough to amortise
/// scheduling, small enough to balance 2 to 128 threads.
pub const RAY_CHUNK: usize = 2048;

/// Which BVH `render`, `intersect` and `occluded` walk (the answers are the same).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Traversal {
    /// The fastest wide BVH this CPU runs: the 8-wide AVX2 BVH of `bvh8` on
    /// x86-64 CPUs with AVX2, else [`Traversal::Wide4`].
    #[default]
    Wide,
    /// The 4-wide BVH of [`wide`] (128-bit SIMD, any CPU).
    Wide4,
    /// prism-core's binary BVH, exactly as the GPU kernels walk it.
    Binary,
}

/// Whether `intersect` and `occluded` walk coherent rays eight at a time: eight
/// rays in a row of a batch on a flat scene whose directions lie within a few
/// degrees of each other and whose origins lie close together (camera rays of
/// neighbouring pixels, shadow rays from neighbouring points toward one
/// light), walked together through the 8-wide BVH (x86-64 with AVX2). The
/// answers are the same as every ray's alone: its closest hit, with core's
/// `t`, `u` and `v` (bench/RESULTS.md gives the speed of each).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RayPackets {
    /// Packets where a few of a batch's packets, walked both ways first,
    /// cost less than their rays alone: camera rays over surfaces a few
    /// pixels or more across (1.3-1.6x as many rays a second on the shared
    /// meshes), not over triangles far smaller than a pixel (where every
    /// ray of a packet meets its own leaves).
    #[default]
    Auto,
    /// Packets wherever eight rays in a row are coherent.
    Always,
    /// Every ray alone.
    Never,
}

/// The CPU backend.
pub struct CpuBackend {
    accel: Option<Accel>,
    wide: Wide,
    /// The candidate lists around the scene's light, for a scene of at most
    /// `POINT_GRID_MAX_PRIMS` primitives: the wide traversals' shadow rays
    /// test the few primitives of their cell instead of walking the tree.
    light_grid: Option<PointGrid>,
    /// The scene's uniform grid where core's cost model expects it to beat
    /// the tree ([`prism_core::cell_grid`]): render rays' closest hits walk it.
    cell_grid: Option<CellGrid>,
    /// A flat scene that is one heightfield (and a CPU with AVX2): the wide
    /// traversals' ray batches walk it many rays at once in SIMD lanes
    /// (`heightfield8`: 16 with AVX2, 32 with AVX-512), core's walk in each
    /// lane.
    lone_heightfield: Option<LoneHeightfield>,
    /// Whether such a scene's batches go to the lanes (the default) or to
    /// the wide traversals (core's walk at the tree's leaf, one ray at a
    /// time), for comparison: the answers are the same.
    heightfield_lanes: bool,
    /// Whether `intersect` and `occluded` walk eight coherent rays in a row
    /// together through the 8-wide BVH (see [`RayPackets`]).
    ray_packets: RayPackets,
    traversal: Traversal,
    pool: rayon::ThreadPool,
    threads: usize,
    /// The 8-bit encoding as a table: the same bytes as `encode_srgba8`
    /// without three `powf` per pixel.
    srgb8: Srgb8Table,
}

impl CpuBackend {
    /// A backend using every core ([`CpuBackend::with_threads`]`(0)`).
    pub fn new() -> Result<Self, Error> {
        Self::with_threads(0)
    }

    /// A backend using `threads` worker threads (0 = one per core the process
    /// may use, by `std::thread::available_parallelism`, whatever
    /// `RAYON_NUM_THREADS` says).
    pub fn with_threads(threads: usize) -> Result<Self, Error> {
        let threads = match threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("prism-cpu-{i}"))
            .build()
            .map_err(|e| Error::BackendUnavailable {
                backend: "cpu",
                reason: e.to_string(),
            })?;
        let threads = pool.current_num_threads();
        Ok(Self {
            accel: None,
            wide: Wide::none(),
            light_grid: None,
            cell_grid: None,
            lone_heightfield: None,
            heightfield_lanes: true,
            ray_packets: RayPackets::Auto,
            traversal: Traversal::Wide,
            pool,
            threads,
            srgb8: Srgb8Table::new(),
        })
    }

    /// Worker threads in use.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Choose the BVH that `render`, `intersect` and `occluded` walk (answers are
    /// the same). With a scene set, its wide BVH is built here (unless it is
    /// built already); where the host has not the memory for it the error is
    /// [`Error::HostOutOfMemory`] and the traversal stays as it was.
    pub fn set_traversal(&mut self, traversal: Traversal) -> Result<(), Error> {
        if let Some(accel) = &mut self.accel
            && self.wide.kind() != Wide::kind_for(traversal)
        {
            // The collapse reads core's trees: made current first.
            accel.refresh();
            self.wide = Wide::build(accel, traversal)?;
        }
        self.traversal = traversal;
        Ok(())
    }

    /// The scene as traced, once `set_scene` succeeded, its trees current:
    /// where an update left core's copy of a refit mesh's slots and nodes
    /// behind (the wide trees are refit on their own, see
    /// [`Backend::update_scene`]), they are brought up to date here first
    /// ([`Accel::refresh`]).
    pub fn accel(&mut self) -> Option<&Accel> {
        let accel = self.accel.as_mut()?;
        accel.refresh();
        Some(accel)
    }

    /// Whether the batches of a scene that is one heightfield are walked many
    /// rays at once in SIMD lanes (`true`, the default, where the CPU has
    /// AVX2) or one ray at a time through the wide trees (`false`). The
    /// answers are the same, bit for bit; the lanes are several times faster
    /// (bench/RESULTS.md). For comparisons and benchmarks.
    pub fn set_heightfield_lanes(&mut self, on: bool) {
        self.heightfield_lanes = on;
        self.lone_heightfield = self
            .accel
            .as_ref()
            .and_then(LoneHeightfield::of)
            .filter(|_| on);
    }

    /// Whether `intersect` and `occluded` walk coherent rays eight at a time
    /// through the 8-wide BVH ([`RayPackets`]; [`RayPackets::Auto`] by
    /// default). The answers are the same either way.
    pub fn set_ray_packets(&mut self, packets: RayPackets) {
        self.ray_packets = packets;
    }

    /// The traversal the calls walk: the one chosen, or core's binary trees
    /// while no wide BVH is built (one that an update could not bring up to
    /// date is dropped; see `update_scene`).
    fn walked(&self) -> Traversal {
        if Wide::kind_for(self.traversal) != self.wide.kind() {
            Traversal::Binary
        } else {
            self.traversal
        }
    }

    /// The candidate lists around the scene's light that the wide traversals'
    /// shadow rays use ([`prism_core::point_grid`]), for a scene of at most
    /// [`prism_core::point_grid::POINT_GRID_MAX_PRIMS`] primitives.
    pub fn light_grid(&self) -> Option<&PointGrid> {
        self.light_grid.as_ref()
    }

    /// The uniform grid the current scene's render rays walk with the wide
    /// traversal ([`prism_core::cell_grid`]), where core's cost model expects
    /// it to beat the tree.
    pub fn cell_grid(&self) -> Option<&CellGrid> {
        self.cell_grid.as_ref()
    }
}

impl Backend for CpuBackend {
    fn info(&self) -> BackendInfo {
        BackendInfo {
            name: "cpu",
            device: format!("{} ({} threads)", cpu_model(), self.threads),
            max_buffer_bytes: isize::MAX as u64,
            software: false,
        }
    }

    fn set_scene(&mut self, scene: &Scene) -> Result<RenderStats, Error> {
        let start = Instant::now();
        // Build before dropping the old scene: a bad scene leaves the backend as it was.
        // A scene large enough to fork has its BVH's subtrees built on this backend's
        // threads (the same tree as a one-thread build); a smaller one is built here,
        // as handing work to the pool costs more than such a build, and so is every
        // scene on one thread: forked halves build into node lists of their own that
        // are then copied into their parent's (a 5.6M-triangle mesh took 1.2 s more).
        let primitives = scene.primitive_count()
            + scene
                .geometries()
                .iter()
                .map(|g| g.primitive_count())
                .sum::<usize>();
        let accel = if primitives >= FORK_MIN_PRIMITIVES && self.threads() > 1 {
            self.pool.install(|| Accel::build_with(scene, &RayonFork))?
        } else {
            Accel::build(scene)?
        };
        // The wide BVH too is built before anything is replaced.
        let wide = Wide::build(&accel, self.traversal)?;
        // The light grid and the cell grid are built over one flat tree and
        // its primitives in world space: a two-level scene has neither (its
        // slots are in object space, and its nodes hold many trees).
        let (light_grid, cell_grid) = if accel.is_two_level() {
            (None, None)
        } else {
            (
                build_point_grid(accel.light().position, accel.primitives()),
                CellGrid::build(accel.primitives()).filter(|g| g.worthwhile(accel.nodes())),
            )
        };
        self.wide = wide;
        self.light_grid = light_grid;
        self.cell_grid = cell_grid;
        self.lone_heightfield = LoneHeightfield::of(&accel).filter(|_| self.heightfield_lanes);
        let build = start.elapsed();
        self.accel = Some(accel);
        Ok(RenderStats {
            build,
            total: start.elapsed(),
            ..Default::default()
        })
    }

    fn render(
        &mut self,
        camera: &Camera,
        settings: &RenderSettings,
        image: &mut Image,
        progress: &dyn Progress,
    ) -> Result<RenderStats, Error> {
        let start = Instant::now();
        let traversal = self.walked();
        let accel = self.accel.as_mut().ok_or(Error::NoScene)?;
        // Shading reads core's slots (a refit mesh's may lag its vertices).
        accel.refresh();
        let accel = &*accel;
        let (width, height) = (image.width(), image.height());
        let params = settings.params(accel, camera, width, height)?;
        let wide_tracer = WideTracer {
            accel,
            wide: &self.wide,
            light_grid: self.light_grid.as_ref(),
            cell_grid: self.cell_grid.as_ref(),
        };
        let srgb8 = &self.srgb8;
        let rays = AtomicU64::new(0);
        let bands_done = AtomicU64::new(0);
        // The largest count reported so far. Workers finish bands in any order,
        // so each reports under this lock and only a count above the last one:
        // the values `progress` sees only grow, and the last is `bands`.
        let reported = Mutex::new(0u64);
        let cancelled = AtomicBool::new(false);
        let bands = height.div_ceil(TILE) as u64;
        let band_len = (width * TILE) as usize;

        // One band: TILE rows, walked tile by tile; `write` stores pixel `i` of the band.
        let run_band = |band: usize, mut write: Box<dyn FnMut(usize, glam::Vec3) + '_>| {
            if cancelled.load(Ordering::Relaxed) || progress.cancelled() {
                cancelled.store(true, Ordering::Relaxed);
                return;
            }
            let y0 = band as u32 * TILE;
            let y1 = (y0 + TILE).min(height);
            let mut band_rays = 0u64;
            for x0 in (0..width).step_by(TILE as usize) {
                for y in y0..y1 {
                    for x in x0..(x0 + TILE).min(width) {
                        let (c, r) = match traversal {
                            Traversal::Wide | Traversal::Wide4 => {
                                render_pixel(&wide_tracer, &params, x, y)
                            }
                            Traversal::Binary => render_pixel(accel, &params, x, y),
                        };
                        band_rays += r as u64;
                        write(((y - y0) * width + x) as usize, c);
                    }
                }
            }
            rays.fetch_add(band_rays, Ordering::Relaxed);
            let done = bands_done.fetch_add(1, Ordering::Relaxed) + 1;
            let mut last = reported.lock().unwrap_or_else(|p| p.into_inner());
            if done > *last {
                *last = done;
                progress.advance(done, bands);
            }
        };

        self.pool.install(|| match image.format() {
            PixelFormat::LinearF32 => image
                .linear_mut()
                .par_chunks_mut(band_len)
                .enumerate()
                .for_each(|(b, px)| {
                    run_band(b, Box::new(|i, c| px[i] = [c.x, c.y, c.z, 1.0]));
                }),
            PixelFormat::Srgba8 => image
                .rgba8_mut()
                .par_chunks_mut(band_len)
                .enumerate()
                .for_each(|(b, px)| {
                    run_band(b, Box::new(|i, c| px[i] = srgb8.encode_srgba8(c)));
                }),
        });
        if cancelled.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        let trace = start.elapsed();
        Ok(RenderStats {
            trace,
            total: trace,
            rays: rays.into_inner(),
            timing: TimingSource::HostClock,
            ..Default::default()
        })
    }

    fn intersect(&mut self, rays: &[Ray], hits: &mut [Hit]) -> Result<RenderStats, Error> {
        let start = Instant::now();
        check_batch("intersect", rays, hits.len())?;
        let traversal = self.walked();
        let accel = current(&mut self.accel, traversal)?;
        if let Some(lone) = self
            .lone_heightfield
            .filter(|_| traversal != Traversal::Binary)
        {
            return Ok(
                lone.trace(accel, &self.pool, start, rays, hits, |h| match h {
                    Some(h) => Hit::heightfield(h.t, lone.id, 0, h.cell, h.face),
                    None => Hit::MISS,
                }),
            );
        }
        let (wide, prims, hf) = (&self.wide, accel.primitives(), accel.heightfield_set());
        let packets = traversal == Traversal::Wide
            && match self.ray_packets {
                RayPackets::Auto => wide.packets_pay(prims, hf, rays, true),
                RayPackets::Always => true,
                RayPackets::Never => false,
            };
        Ok(trace_batch(
            &self.pool,
            start,
            rays,
            hits,
            |rays, hits, scratch| match traversal {
                Traversal::Wide | Traversal::Wide4 => {
                    wide.intersect_many(prims, hf, rays, hits, packets, scratch)
                }
                Traversal::Binary => {
                    for (hit, ray) in hits.iter_mut().zip(rays) {
                        *hit = accel.intersect(ray);
                    }
                }
            },
        ))
    }

    fn occluded(&mut self, rays: &[Ray], occluded: &mut [bool]) -> Result<RenderStats, Error> {
        let start = Instant::now();
        check_batch("occluded", rays, occluded.len())?;
        let traversal = self.walked();
        let accel = current(&mut self.accel, traversal)?;
        if let Some(lone) = self
            .lone_heightfield
            .filter(|_| traversal != Traversal::Binary)
        {
            return Ok(lone.trace(accel, &self.pool, start, rays, occluded, |h| h.is_some()));
        }
        let (wide, prims, hf) = (&self.wide, accel.primitives(), accel.heightfield_set());
        let packets = traversal == Traversal::Wide
            && match self.ray_packets {
                RayPackets::Auto => wide.packets_pay(prims, hf, rays, false),
                RayPackets::Always => true,
                RayPackets::Never => false,
            };
        Ok(trace_batch(
            &self.pool,
            start,
            rays,
            occluded,
            |rays, occluded, scratch| match traversal {
                Traversal::Wide | Traversal::Wide4 => {
                    wide.occluded_many(prims, hf, rays, occluded, packets, scratch)
                }
                Traversal::Binary => {
                    for (o, ray) in occluded.iter_mut().zip(rays) {
                        *o = accel.occluded(ray);
                    }
                }
            },
        ))
    }

    /// Core applies the update to its copy of the scene, leaving the refit
    /// of a mesh's tree to this backend ([`RefitOn::Device`]: core keeps the
    /// new vertices and bounds, its own slots and nodes lag them until
    /// [`Accel::refresh`]); the wide BVH then does only what changed (see
    /// `Wide::update`), its refit trees refit straight from the new
    /// vertices. Core's trees are brought up to date only where they are
    /// read: a collapse, a render (shading reads the slots), the binary
    /// traversal, [`Backend::geometry_sah`], [`CpuBackend::accel`]. Should
    /// the host not have the memory for the wide BVH's part, the update
    /// still stands and the wide BVH is dropped: the backend walks core's
    /// trees (the same answers) until a later update or
    /// [`CpuBackend::set_traversal`] builds it again.
    fn update_scene(&mut self, update: &SceneUpdate) -> Result<UpdateStats, Error> {
        let start = Instant::now();
        let accel = self.accel.as_mut().ok_or(Error::NoScene)?;
        // Large updates on the backend's threads (the same result as one
        // thread's, Accel::update_with_fork).
        let changes = self
            .pool
            .install(|| accel.update_with_fork(update, RefitOn::Device, &RayonFork))?;
        let current = self.wide.kind() == Wide::kind_for(self.traversal);
        if changes.rebuilt || !current {
            // A collapse reads core's trees.
            accel.refresh();
        }
        let accel = &*accel;
        let wide = if current {
            self.wide.update(accel, &changes)
        } else {
            Wide::build(accel, self.traversal).map(|w| self.wide = w)
        };
        if wide.is_err() {
            self.wide = Wide::none();
        }
        let build = start.elapsed();
        Ok(UpdateStats {
            changes,
            stats: RenderStats {
                build,
                total: start.elapsed(),
                ..Default::default()
            },
        })
    }

    /// Core's figure, from its trees brought up to date first (a device
    /// refit leaves them behind, and core gives none for such a tree).
    fn geometry_sah(&mut self, geometry: u32) -> Option<GeometrySah> {
        let accel = self.accel.as_mut()?;
        accel.refresh();
        accel.geometry_sah(geometry)
    }

    /// Core's tree (kept for shading and the binary walk; the layout the GPU
    /// backends upload) and the wide tree the batches walk, if any.
    fn tree_bytes(&self) -> Vec<TreeBytes> {
        let Some(accel) = &self.accel else {
            return Vec::new();
        };
        core::iter::once(accel.tree_bytes())
            .chain(self.wide.tree_bytes())
            .collect()
    }
}

/// The scene, for a batch walked by `traversal`: core's trees brought up to
/// date first where it walks them ([`Traversal::Binary`]). The wide walks
/// need not: a refit mesh's leaves are all packets, which hold their own
/// vertices and ids, so they never read its lagging slots.
fn current(accel: &mut Option<Accel>, traversal: Traversal) -> Result<&Accel, Error> {
    let accel = accel.as_mut().ok_or(Error::NoScene)?;
    if traversal == Traversal::Binary {
        accel.refresh();
    }
    Ok(accel)
}

/// `trace(rays, out)` over chunks of [`RAY_CHUNK`] rays across `pool` (one
/// traversal stack a chunk), and the stats of the call begun at `start`: the
/// one loop of `intersect` and `occluded`, which differ only in what a ray
/// gives.
fn trace_batch<T: Send>(
    pool: &rayon::ThreadPool,
    start: Instant,
    rays: &[Ray],
    out: &mut [T],
    trace: impl Fn(&[Ray], &mut [T], &mut Scratch) + Sync,
) -> RenderStats {
    pool.install(|| {
        out.par_chunks_mut(RAY_CHUNK)
            .zip(rays.par_chunks(RAY_CHUNK))
            .for_each(|(o, r)| trace(r, o, &mut Scratch::new()))
    });
    let trace = start.elapsed();
    RenderStats {
        trace,
        total: trace,
        rays: rays.len() as u64,
        ..Default::default()
    }
}

/// A flat scene that is one heightfield, whose ray batches the lanes of
/// `heightfield8` walk: its record and its primitive id.
#[derive(Clone, Copy, Debug)]
struct LoneHeightfield {
    record: usize,
    id: u32,
}

impl LoneHeightfield {
    /// The scene's heightfield where `accel` is a flat scene of that one
    /// primitive and this CPU runs the lanes (x86-64 with AVX2).
    fn of(accel: &Accel) -> Option<Self> {
        let [p] = accel.primitives() else {
            return None;
        };
        if accel.is_two_level() || p.kind() != prism_core::gpu::KIND_HEIGHTFIELD {
            return None;
        }
        let record = p.heightfield_index() as usize;
        let hf = accel.heightfields().get(record)?;
        #[cfg(target_arch = "x86_64")]
        if heightfield8::available() && heightfield8::walkable(hf, accel.heightfield_heights()) {
            return Some(LoneHeightfield { record, id: p.id() });
        }
        let _ = hf;
        None
    }

    /// `out[i] = answer(first crossing of rays[i])` for every ray, in
    /// chunks of [`RAY_CHUNK`] across `pool`, each chunk's rays many at a
    /// time in the lanes; the stats of the call begun at `start`. The same
    /// answers as the wide traversals' (the tree of one heightfield is one
    /// leaf, whose box holds every crossing of its walk).
    fn trace<T: Send>(
        &self,
        accel: &Accel,
        pool: &rayon::ThreadPool,
        start: Instant,
        rays: &[Ray],
        out: &mut [T],
        answer: impl Fn(Option<prism_core::heightfield::HeightfieldHit>) -> T + Sync,
    ) -> RenderStats {
        let heights = accel.heightfield_heights();
        if let Some(hf) = accel.heightfields().get(self.record) {
            pool.install(|| {
                out.par_chunks_mut(RAY_CHUNK)
                    .zip(rays.par_chunks(RAY_CHUNK))
                    .for_each(|(o, r)| {
                        #[cfg(target_arch = "x86_64")]
                        heightfield8::walk_batch(hf, heights, r, &mut |i, h| {
                            if let Some(slot) = o.get_mut(i) {
                                *slot = answer(h);
                            }
                        });
                        #[cfg(not(target_arch = "x86_64"))]
                        let _ = (hf, heights, r, o, &answer);
                    })
            });
        }
        let trace = start.elapsed();
        RenderStats {
            trace,
            total: trace,
            rays: rays.len() as u64,
            ..Default::default()
        }
    }
}

/// The CPU model name from /proc/cpuinfo where available.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use prism_core::Material;
    use prism_core::glam::Vec3;

    /// Records every `advance` call.
    struct Record(Mutex<Vec<(u64, u64)>>);

    impl Progress for Record {
        fn advance(&self, done: u64, total: u64) {
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((done, total));
        }
    }

    #[test]
    fn render_progress_only_grows_and_ends_at_the_total() {
        let mut scene = Scene::new();
        let grey = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
        scene.add_sphere(Vec3::ZERO, 1.0, grey);
        let mut cpu = CpuBackend::with_threads(4).unwrap(); // ok: unit test
        cpu.set_scene(&scene).unwrap(); // ok: unit test, one valid sphere
        let camera = Camera::look_at(Vec3::new(0.0, 0.0, 4.0), Vec3::ZERO, Vec3::Y, 40.0);
        let settings = RenderSettings {
            spp: 1,
            ..Default::default()
        };
        for _ in 0..20 {
            let mut image = Image::new(16, 40 * TILE, PixelFormat::Srgba8).unwrap(); // ok: unit test
            let record = Record(Mutex::new(Vec::new()));
            cpu.render(&camera, &settings, &mut image, &record).unwrap(); // ok: unit test
            let calls = record.0.into_inner().unwrap(); // ok: unit test
            assert!(calls.windows(2).all(|w| w[0].0 < w[1].0), "{calls:?}");
            assert_eq!(calls.last(), Some(&(40, 40)));
        }
    }

    /// A field of small spheres gets a cell grid, and the renders come from
    /// it: with its cells emptied, the image changes.
    #[test]
    fn render_rays_walk_the_cell_grid() {
        let mut scene = Scene::new();
        let grey = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
        scene.add_sphere(Vec3::new(0.0, -1000.0, 0.0), 1000.0, grey);
        for a in -6i32..6 {
            for b in -6i32..6 {
                let c = Vec3::new(a as f32 + 0.3 * (b & 1) as f32, 0.2, b as f32);
                scene.add_sphere(c, 0.2, grey);
            }
        }
        let mut cpu = CpuBackend::with_threads(2).unwrap(); // ok: unit test
        cpu.set_scene(&scene).unwrap(); // ok: unit test, a valid scene
        assert!(cpu.cell_grid().is_some(), "no grid for a sphere field");
        let camera = Camera::look_at(Vec3::new(8.0, 2.0, 3.0), Vec3::ZERO, Vec3::Y, 40.0);
        let settings = RenderSettings {
            spp: 1,
            ..Default::default()
        };
        let render = |cpu: &mut CpuBackend| {
            let mut image = Image::new(64, 48, PixelFormat::LinearF32).unwrap(); // ok: unit test
            cpu.render(&camera, &settings, &mut image, &prism_core::NoProgress)
                .unwrap(); // ok: unit test
            image.linear().to_vec()
        };
        let walked = render(&mut cpu);
        if let Some(g) = cpu.cell_grid.as_mut() {
            g.slots.clear();
        }
        assert_ne!(render(&mut cpu), walked, "the grid was not used");
    }
}
