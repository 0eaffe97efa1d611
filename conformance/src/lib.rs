//! `prism_conformance` (package `prism-rt-conformance`): the proof behind "pick any backend, get the same answer".
//!
//! The suite takes its backends and cases from the caller (the `prism` facade
//! supplies its built-in scenes, the shared meshes with Embree's reference hits,
//! and every backend it can open) and checks:
//!
//! - **Hits** ([`hits`]): every backend's `intersect` and `occluded` on every
//!   reference ray set, against Embree's hits under prism-core's agreement rule
//!   (ties counted and reported), and every pair of backends against each other.
//! - **Generated cases** ([`generated`]): random triangle soups and sphere sets,
//!   rays through shared edges and vertices, rays leaving surfaces, scenes from
//!   1e-4 to 1e5 units, axis-parallel rays, degenerate meshes; CPU brute force
//!   with prism-core's own intersection functions is the oracle.
//! - **Instances**: Embree's instanced ray sets (`.ihits`, instance ids
//!   compared) like the flat ones; generated two-level cases (random
//!   geometries under random rotations, non-uniform scales and translations,
//!   random masks) against [`generated::instanced_brute_force`]; and refit
//!   cases ([`generated::RefitCase`]): a mesh's vertices moved through
//!   `update_scene`, every backend's hits against its own fresh build.
//! - **Images** ([`images`]): every scene with every integrator, same seed and
//!   sample count on every backend; per pair, mean absolute error, RMSE, the
//!   share of pixels off by more than 2/255, and a converged comparison of tile
//!   means at a higher sample count.
//! - **Determinism**: a backend rendering the same frame twice gives the same bits;
//!   its 8-bit output is its linear output encoded.
//!
//! Thresholds live in [`thresholds`], each with its reason. [`report::write_html`]
//! writes the report a person reads.
//!
//! ```
//! use prism_conformance::{Candidate, Cases, Config, run};
//!
//! // The CPU backend against the generated cases' brute-force oracle.
//! let cpu = prism_cpu::CpuBackend::new().expect("the CPU backend always opens");
//! let candidates = vec![Candidate::opened("cpu", Box::new(cpu))];
//! let report = run(candidates, &Cases::default(), &Config::quick(), &mut |line| {
//!     eprintln!("{line}")
//! });
//! assert!(report.passed(), "{}", report.summary());
//!
//! // With no backend nothing is checked, and that fails.
//! let report = run(Vec::new(), &Cases::default(), &Config::quick(), &mut |_| {});
//! assert!(!report.passed());
//! ```

#![deny(missing_docs)]

pub mod generated;
pub mod hits;
pub mod images;
pub mod report;
pub mod thresholds;

use generated::{GenSize, GeneratedCase, RefitCase, brute_force};
use hits::{
    Answers, FacePlanes, HitCheck, Instanced, REFERENCE_TIE_LIMIT, Reference, compare,
    face_plane_misses, origin_scales, trace,
};
use images::{PixelMetrics, TileMetrics};
use prism_core::{
    Backend, Camera, Image, Integrator, NoProgress, PixelFormat, Ray, RenderSettings, Scene,
    SceneUpdate,
};
use std::time::{Duration, Instant};

pub use report::{ReportError, write_html};

/// A backend offered to the suite.
pub struct Candidate {
    /// Name (`cpu`, `cuda`, `wgpu`).
    pub name: String,
    /// The opened backend, or why it could not be opened.
    pub opened: Result<Box<dyn Backend>, String>,
    /// When the backend cannot be opened: fail (it was asked for by name) rather
    /// than report it skipped.
    pub required: bool,
}

impl Candidate {
    /// An opened backend.
    pub fn opened(name: impl Into<String>, backend: Box<dyn Backend>) -> Self {
        Candidate {
            name: name.into(),
            opened: Ok(backend),
            required: false,
        }
    }
}

/// A ray set with Embree's reference hits.
#[derive(Clone, Debug, Default)]
pub struct RaySet {
    /// Name (`primary`, `diffuse`).
    pub name: String,
    /// The rays.
    pub rays: Vec<Ray>,
    /// Embree's `(t, prim)` per ray; `prim == Hit::NO_PRIM` for a miss.
    pub reference: Vec<(f32, u32)>,
    /// For an instanced set (`.ihits`), Embree's instance per ray
    /// (`Hit::NO_INSTANCE` for a miss): compared too. `None` for a flat set.
    pub instances: Option<Vec<u32>>,
}

/// A mesh and its reference ray sets: the mesh alone (a flat scene), or the
/// mesh placed by many instances (a two-level scene, `bunny-x1000`).
#[derive(Clone, Debug)]
pub struct MeshRays {
    /// Name (`bunny`, `bunny-x1000`).
    pub name: String,
    /// The mesh as a scene (triangles numbered as the reference numbers them;
    /// for an instanced set, one geometry placed once per reference instance,
    /// in the reference's order).
    pub scene: Scene,
    /// Its ray sets.
    pub sets: Vec<RaySet>,
}

/// A scene to render on every backend with every integrator.
#[derive(Clone, Debug)]
pub struct ImageCase {
    /// Name (`rtiow`).
    pub name: String,
    /// The scene.
    pub scene: Scene,
    /// The camera.
    pub camera: Camera,
    /// The scene's own settings (depth, AO distance, its integrator); the suite
    /// sets the integrator, sample count and seed.
    pub settings: RenderSettings,
    /// The scene's own width (only its aspect ratio is used).
    pub width: u32,
    /// The scene's own height.
    pub height: u32,
}

/// Something the caller could not provide, and whether that fails the suite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// What is missing (`reference ray sets`).
    pub what: String,
    /// Why.
    pub reason: String,
    /// Whether it fails the suite (it was asked for explicitly).
    pub fails: bool,
}

/// The caller's cases.
#[derive(Clone, Debug, Default)]
pub struct Cases {
    /// Meshes with reference ray sets.
    pub meshes: Vec<MeshRays>,
    /// Scenes to render.
    pub images: Vec<ImageCase>,
    /// What could not be provided.
    pub notes: Vec<Note>,
}

/// How much work the suite does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// A shorter run (fewer rays, smaller images).
    pub quick: bool,
    /// Image width; the height follows each scene's aspect ratio.
    pub image_width: u32,
    /// Samples per pixel of the per-pixel comparison and the determinism check.
    pub spp: u32,
    /// Samples per pixel of the converged comparison (0: skip it).
    pub converged_spp: u32,
    /// Image width of the converged comparison.
    pub converged_width: u32,
    /// Tile edge of the converged comparison, in pixels.
    pub tile: u32,
    /// Frame seed.
    pub seed: u32,
    /// Use every `ray_stride`-th ray of each reference ray set.
    pub ray_stride: usize,
    /// Size of the generated cases.
    pub generated: GenSize,
    /// Path depth and Whitted bounces are capped at this (the presets go deeper
    /// than a comparison needs).
    pub max_depth: u32,
}

impl Config {
    /// Everything: all reference rays, 128-pixel-wide images.
    pub fn full() -> Self {
        Config {
            quick: false,
            image_width: 128,
            spp: 8,
            converged_spp: 64,
            converged_width: 96,
            tile: 8,
            seed: 7,
            ray_stride: 1,
            generated: GenSize {
                seeds: 3,
                rays: 4096,
                triangles: 400,
                spheres: 64,
            },
            max_depth: 12,
        }
    }

    /// A quick run: every 8th reference ray, 64-pixel-wide images, one seed.
    pub fn quick() -> Self {
        Config {
            quick: true,
            image_width: 64,
            spp: 4,
            converged_spp: 32,
            converged_width: 48,
            tile: 8,
            seed: 7,
            ray_stride: 8,
            generated: GenSize {
                seeds: 1,
                rays: 2048,
                triangles: 200,
                spheres: 32,
            },
            max_depth: 8,
        }
    }
}

/// How a backend took part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendStatus {
    /// Opened and checked.
    Used,
    /// Could not be opened; not asked for by name.
    Skipped(String),
    /// Could not be opened although asked for by name: a failure.
    Missing(String),
}

/// A backend as the report lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendRow {
    /// Name.
    pub name: String,
    /// Device description (empty when not opened).
    pub device: String,
    /// A software implementation of a GPU API (lavapipe).
    pub software: bool,
    /// How it took part.
    pub status: BackendStatus,
}

/// One generated case and every backend's check on it.
#[derive(Clone, Debug)]
pub struct GeneratedRow {
    /// Case name.
    pub name: String,
    /// Family.
    pub family: &'static str,
    /// What it holds.
    pub description: String,
    /// Seed.
    pub seed: u32,
    /// Primitives in the scene.
    pub primitives: usize,
    /// Rays traced.
    pub rays: usize,
    /// Rays the oracle says hit.
    pub oracle_hits: usize,
    /// One check per backend.
    pub checks: Vec<HitCheck>,
}

/// One backend's renders of one image case.
#[derive(Clone, Debug)]
pub struct BackendRender {
    /// Backend name.
    pub backend: String,
    /// The frame at [`Config::spp`], linear.
    pub image: Option<Image>,
    /// The converged frame at [`Config::converged_spp`], linear.
    pub converged: Option<Image>,
    /// `Ok` when a second render gave the same bits; else where they differ.
    pub determinism: Option<Result<(), images::PixelDifference>>,
    /// Largest 8-bit difference between the `Srgba8` frame and the encoded linear one.
    pub srgb8_levels: Option<u8>,
    /// The first linear frame (`"frame"` or `"converged frame"`) holding a NaN,
    /// infinite or negative channel, and where.
    pub bad_radiance: Option<(&'static str, images::BadRadiance)>,
    /// A call failed.
    pub error: Option<String>,
    /// Milliseconds of the first render.
    pub render_ms: f64,
}

impl BackendRender {
    /// Why this backend's renders fail (empty when they pass).
    pub fn failures(&self) -> Vec<String> {
        let mut why = Vec::new();
        if let Some(e) = &self.error {
            why.push(format!("render failed: {e}"));
        }
        if let Some(Err(d)) = &self.determinism {
            why.push(format!(
                "not deterministic: {} pixels differ between two renders (first at {:?})",
                d.count, d.first
            ));
        }
        if let Some(l) = self.srgb8_levels.filter(|&l| !images::srgb8_ok(l)) {
            why.push(format!(
                "Srgba8 frame is {l} levels from its own linear frame encoded"
            ));
        }
        if let Some((which, b)) = &self.bad_radiance {
            why.push(format!(
                "{} pixels of the {which} are NaN, infinite or negative (first at {:?}: {:?})",
                b.count, b.first, b.value
            ));
        }
        why
    }
}

/// Two backends' renders compared.
#[derive(Clone, Debug)]
pub struct PairCheck {
    /// First backend.
    pub a: String,
    /// Second backend.
    pub b: String,
    /// Per-pixel metrics at [`Config::spp`].
    pub pixels: PixelMetrics,
    /// Converged tile metrics.
    pub tiles: Option<TileMetrics>,
    /// Why the pair fails (empty when it passes).
    pub failures: Vec<String>,
}

/// One scene with one integrator on every backend.
#[derive(Clone, Debug)]
pub struct ImageCheck {
    /// Scene name.
    pub scene: String,
    /// Integrator.
    pub integrator: Integrator,
    /// The settings rendered with (at [`Config::spp`]).
    pub settings: RenderSettings,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// Converged size.
    pub converged_size: (u32, u32),
    /// Converged samples per pixel (0: no converged comparison).
    pub converged_spp: u32,
    /// Per backend.
    pub renders: Vec<BackendRender>,
    /// Per pair of backends that both rendered.
    pub pairs: Vec<PairCheck>,
}

impl ImageCheck {
    /// `scene/integrator`.
    pub fn name(&self) -> String {
        format!("{}/{}", self.scene, self.integrator.name())
    }

    /// Every failure of this check, each on one line.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for r in &self.renders {
            for why in r.failures() {
                out.push(format!("image {} on {}: {why}", self.name(), r.backend));
            }
        }
        for p in &self.pairs {
            if !p.failures.is_empty() {
                out.push(format!(
                    "image {}: {} vs {}: {}",
                    self.name(),
                    p.a,
                    p.b,
                    p.failures.join(", ")
                ));
            }
        }
        out
    }

    /// Whether everything passed.
    pub fn passed(&self) -> bool {
        self.failures().is_empty()
    }
}

/// Everything the suite found.
#[derive(Clone, Debug)]
pub struct Report {
    /// The configuration run.
    pub config: Config,
    /// Backends offered.
    pub backends: Vec<BackendRow>,
    /// What the caller could not provide.
    pub notes: Vec<Note>,
    /// Generated cases.
    pub generated: Vec<GeneratedRow>,
    /// Reference ray sets: each backend against Embree, then pairs of backends.
    pub ray_sets: Vec<HitCheck>,
    /// `(mesh, set, rays, reference hits)` of each reference ray set checked.
    pub ray_set_sizes: Vec<(String, String, usize, usize)>,
    /// The meshes of [`Report::ray_set_sizes`] traced as two-level scenes
    /// (the instanced sets, `bunny-x1000`).
    pub two_level_meshes: Vec<String>,
    /// Image checks.
    pub images: Vec<ImageCheck>,
    /// Time per section: generated, ray sets, images.
    pub timings: Vec<(&'static str, Duration)>,
}

impl Report {
    /// Every failure, in the order the report lists them, one line each.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for b in &self.backends {
            if let BackendStatus::Missing(why) = &b.status {
                out.push(format!(
                    "backend {} was asked for but cannot be opened: {why}",
                    b.name
                ));
            }
        }
        for n in self.notes.iter().filter(|n| n.fails) {
            out.push(format!("{}: {}", n.what, n.reason));
        }
        for g in &self.generated {
            out.extend(g.checks.iter().filter_map(HitCheck::failure));
        }
        out.extend(self.ray_sets.iter().filter_map(HitCheck::failure));
        for i in &self.images {
            out.extend(i.failures());
        }
        out
    }

    /// Whether nothing failed.
    pub fn passed(&self) -> bool {
        self.failures().is_empty()
    }

    /// Number of checks run (hit checks, image pairs, backend renders).
    pub fn check_count(&self) -> usize {
        self.generated.iter().map(|g| g.checks.len()).sum::<usize>()
            + self.ray_sets.len()
            + self
                .images
                .iter()
                .map(|i| i.pairs.len() + i.renders.len())
                .sum::<usize>()
    }

    /// Names of the backends used.
    pub fn used_backends(&self) -> Vec<&str> {
        self.backends
            .iter()
            .filter(|b| b.status == BackendStatus::Used)
            .map(|b| b.name.as_str())
            .collect()
    }

    /// One line: `PASS` or `FAIL`, the backends, the counts, and what was left
    /// out (skipped backends, no reference ray sets, a quick run).
    pub fn summary(&self) -> String {
        let failures = self.failures();
        let verdict = if failures.is_empty() { "PASS" } else { "FAIL" };
        let skipped: Vec<&str> = self
            .backends
            .iter()
            .filter(|b| matches!(b.status, BackendStatus::Skipped(_)))
            .map(|b| b.name.as_str())
            .collect();
        let mut s = format!(
            "{verdict}: {} checks on {} ({} failures)",
            self.check_count(),
            match self.used_backends().join(", ") {
                b if b.is_empty() => "no backend".to_string(),
                b => b,
            },
            failures.len()
        );
        if !skipped.is_empty() {
            s.push_str(&format!("; skipped: {}", skipped.join(", ")));
        }
        if self.ray_set_sizes.is_empty() {
            s.push_str("; no reference ray sets");
        }
        if self.config.quick {
            s.push_str("; quick run");
        }
        s
    }
}

struct Live {
    name: String,
    backend: Box<dyn Backend>,
}

/// Open backends into the report's rows. A name given twice fails as a note
/// and its second backend is not used: the report names its images by backend.
fn take_backends(
    candidates: Vec<Candidate>,
    rows: &mut Vec<BackendRow>,
    notes: &mut Vec<Note>,
) -> Vec<Live> {
    let mut live = Vec::new();
    for c in candidates {
        if rows.iter().any(|r| r.name == c.name) {
            notes.push(Note {
                what: format!("backend {}", c.name),
                reason: "given twice: each backend is checked once".into(),
                fails: true,
            });
            continue;
        }
        match c.opened {
            Ok(backend) => {
                let info = backend.info();
                rows.push(BackendRow {
                    name: c.name.clone(),
                    device: info.device,
                    software: info.software,
                    status: BackendStatus::Used,
                });
                live.push(Live {
                    name: c.name,
                    backend,
                });
            }
            Err(why) => rows.push(BackendRow {
                name: c.name,
                device: String::new(),
                software: false,
                status: if c.required {
                    BackendStatus::Missing(why)
                } else {
                    BackendStatus::Skipped(why)
                },
            }),
        }
    }
    live
}

/// Run every check of `cases` and the generated cases on every opened backend.
///
/// Never panics on a backend's failure: an error from a call fails that check
/// and the suite goes on. A ray set with no rays, or with another number of
/// reference hits than rays, fails as a note and is not traced. `log` hears
/// one line per step (for a progress display), starting with every backend's
/// status and every note of `cases`, failing or not.
pub fn run(
    candidates: Vec<Candidate>,
    cases: &Cases,
    config: &Config,
    log: &mut dyn FnMut(&str),
) -> Report {
    let mut report = Report {
        config: *config,
        backends: Vec::new(),
        notes: cases.notes.clone(),
        generated: Vec::new(),
        ray_sets: Vec::new(),
        ray_set_sizes: Vec::new(),
        two_level_meshes: Vec::new(),
        images: Vec::new(),
        timings: Vec::new(),
    };
    let mut live = take_backends(candidates, &mut report.backends, &mut report.notes);
    if live.is_empty() {
        report.notes.push(Note {
            what: "backends".into(),
            reason: "no backend opened: nothing was checked".into(),
            fails: true,
        });
    }
    for b in &report.backends {
        match &b.status {
            BackendStatus::Used => log(&format!("backend {}: {}", b.name, b.device)),
            BackendStatus::Skipped(w) => log(&format!("backend {}: skipped: {w}", b.name)),
            BackendStatus::Missing(w) => log(&format!("backend {}: MISSING: {w}", b.name)),
        }
    }
    for n in &report.notes {
        log(&format!(
            "{}{}: {}",
            if n.fails { "FAILED: " } else { "note: " },
            n.what,
            n.reason
        ));
    }

    let start = Instant::now();
    match config.generated.check() {
        Ok(()) => {
            for case in generated::cases(config.generated) {
                if case.rays.is_empty() {
                    let reason = "no rays: the case checks nothing".to_string();
                    log(&format!("FAILED: generated case {}: {reason}", case.name));
                    report.notes.push(Note {
                        what: format!("generated case {}", case.name),
                        reason,
                        fails: true,
                    });
                    continue;
                }
                report.generated.push(run_generated(&case, &mut live, log));
            }
        }
        Err(reason) => {
            log(&format!("FAILED: generated cases: {reason}"));
            report.notes.push(Note {
                what: "generated cases".into(),
                reason,
                fails: true,
            });
        }
    }
    if config.generated.check().is_ok() {
        for case in generated::refit_cases(config.generated) {
            report.generated.push(run_refit(&case, &mut live, log));
        }
    }
    report.timings.push(("generated cases", start.elapsed()));

    let start = Instant::now();
    for mesh in &cases.meshes {
        run_mesh(mesh, config, &mut live, &mut report, log);
    }
    report.timings.push(("reference ray sets", start.elapsed()));

    let start = Instant::now();
    for case in &cases.images {
        run_images(case, config, &mut live, &mut report, log);
    }
    report.timings.push(("images", start.elapsed()));
    report
}

fn run_generated(
    case: &GeneratedCase,
    live: &mut [Live],
    log: &mut dyn FnMut(&str),
) -> GeneratedRow {
    let oracle = brute_force(&case.scene, &case.rays);
    let pairs = Reference::pairs(&oracle.hits);
    let uv = Reference::uvs(&oracle.hits);
    let instances = Reference::instances_of(&oracle.hits);
    let scales = origin_scales(&case.scene, &case.rays, &triples(&oracle.hits));
    let planes = FacePlanes::new(&case.scene);
    let reference = Reference {
        name: "brute force",
        hits: &pairs,
        uv: Some(&uv),
        occluded: &oracle.occluded,
        tie_limit: None,
        face_planes: planes.as_ref(),
        also_excused: None,
        instances: Some(Instanced {
            ids: &instances,
            scales: &scales,
        }),
    };
    let mut row = GeneratedRow {
        name: case.name.clone(),
        family: case.family,
        description: case.description.clone(),
        seed: case.seed,
        primitives: placed_primitives(&case.scene),
        rays: case.rays.len(),
        oracle_hits: oracle.hits.iter().filter(|h| h.is_hit()).count(),
        checks: Vec::new(),
    };
    let mut answers: Vec<Option<Answers>> = Vec::new();
    // Per backend, the rays excused against the oracle by the face-plane convention.
    let mut excused: Vec<Vec<bool>> = Vec::new();
    for b in live.iter_mut() {
        let result = b
            .backend
            .set_scene(&case.scene)
            .and_then(|_| trace(b.backend.as_mut(), &case.rays));
        let check = match &result {
            Ok(a) => compare(&case.name, &b.name, &case.rays, a, &reference),
            Err(e) => HitCheck::failed_call(&case.name, &b.name, "brute force", e.to_string()),
        };
        log(&format!(
            "generated {} on {}: {}",
            case.name,
            b.name,
            verdict(&check)
        ));
        row.checks.push(check);
        excused.push(match &result {
            Ok(a) => face_plane_misses(&case.rays, a, &reference),
            Err(_) => Vec::new(),
        });
        answers.push(result.ok());
    }
    // Backends against each other: exactly the rule, except on rays where either
    // was excused against the oracle by the face-plane convention.
    for i in 0..live.len() {
        for j in i + 1..live.len() {
            let (Some(Some(a)), Some(Some(b))) = (answers.get(i), answers.get(j)) else {
                continue;
            };
            let pairs = Reference::pairs(&b.hits);
            let uv = Reference::uvs(&b.hits);
            let instances = Reference::instances_of(&b.hits);
            let scales = origin_scales(&case.scene, &case.rays, &triples(&b.hits));
            let either: Vec<bool> = (0..case.rays.len())
                .map(|k| {
                    let of = |x: usize| excused.get(x).and_then(|e| e.get(k)) == Some(&true);
                    of(i) || of(j)
                })
                .collect();
            let check = compare(
                &case.name,
                &live[i].name,
                &case.rays,
                a,
                &Reference {
                    name: &live[j].name,
                    hits: &pairs,
                    uv: Some(&uv),
                    occluded: &b.occluded,
                    tie_limit: None,
                    face_planes: None,
                    also_excused: Some(&either),
                    instances: Some(Instanced {
                        ids: &instances,
                        scales: &scales,
                    }),
                },
            );
            log(&format!(
                "generated {}: {} vs {}: {}",
                case.name,
                live[i].name,
                live[j].name,
                verdict(&check)
            ));
            row.checks.push(check);
        }
    }
    row
}

/// `(t, prim, instance)` of each hit.
fn triples(hits: &[prism_core::Hit]) -> Vec<(f32, u32, u32)> {
    hits.iter().map(|h| (h.t, h.prim, h.instance)).collect()
}

/// Primitives a ray may meet: a flat scene's own, or every instance's
/// geometry's, counted once per instance.
pub fn placed_primitives(scene: &Scene) -> usize {
    if !scene.is_two_level() {
        return scene.primitive_count();
    }
    scene
        .instances()
        .iter()
        .filter_map(|i| scene.geometries().get(i.geometry as usize))
        .map(|g| g.primitive_count())
        .sum()
}

/// One refit case on every backend: the scene set, the mesh's vertices moved
/// frame by frame through `update_scene`, the rays traced; then the same
/// scene built afresh with the last frame's vertices (`set_scene`) and traced
/// again. The refit answers must agree with the fresh build's under the
/// agreement rule, instances included (ties counted).
fn run_refit(case: &RefitCase, live: &mut [Live], log: &mut dyn FnMut(&str)) -> GeneratedRow {
    let last = case.frames.last().unwrap_or(&case.initial);
    let fresh_scene = case.scene(last);
    let mut row = GeneratedRow {
        name: case.name.clone(),
        family: "refit",
        description: case.description.clone(),
        seed: case.seed,
        primitives: placed_primitives(&fresh_scene),
        rays: case.rays.len(),
        oracle_hits: 0,
        checks: Vec::new(),
    };
    for b in live.iter_mut() {
        let refit = b
            .backend
            .set_scene(&case.scene(&case.initial))
            .and_then(|_| {
                for frame in &case.frames {
                    let mut update = SceneUpdate::new();
                    update.set_vertices(case.geometry, frame);
                    b.backend.update_scene(&update)?;
                }
                trace(b.backend.as_mut(), &case.rays)
            });
        let fresh = b
            .backend
            .set_scene(&fresh_scene)
            .and_then(|_| trace(b.backend.as_mut(), &case.rays));
        let check = match (refit, fresh) {
            (Ok(a), Ok(f)) => {
                row.oracle_hits = f.hits.iter().filter(|h| h.is_hit()).count();
                let pairs = Reference::pairs(&f.hits);
                let uv = Reference::uvs(&f.hits);
                let instances = Reference::instances_of(&f.hits);
                let scales = origin_scales(&fresh_scene, &case.rays, &triples(&f.hits));
                compare(
                    &case.name,
                    &b.name,
                    &case.rays,
                    &a,
                    &Reference {
                        name: "a fresh build",
                        hits: &pairs,
                        uv: Some(&uv),
                        occluded: &f.occluded,
                        tie_limit: None,
                        face_planes: None,
                        also_excused: None,
                        instances: Some(Instanced {
                            ids: &instances,
                            scales: &scales,
                        }),
                    },
                )
            }
            (Err(e), _) | (_, Err(e)) => {
                HitCheck::failed_call(&case.name, &b.name, "a fresh build", e.to_string())
            }
        };
        log(&format!(
            "refit {} on {} vs a fresh build: {}",
            case.name,
            b.name,
            verdict(&check)
        ));
        row.checks.push(check);
    }
    row
}

fn verdict(check: &HitCheck) -> String {
    format!(
        "{} ({} match, {} ties, {} mismatches, occluded off on {}{})",
        if check.passed() { "ok" } else { "FAILED" },
        check.counts.matches,
        check.counts.ties,
        check.counts.mismatches,
        check.occluded_disagreements,
        if check.face_plane > 0 {
            format!(", {} face-plane", check.face_plane)
        } else {
            String::new()
        }
    )
}

/// A reference ray set, thinned to every `ray_stride`-th ray.
struct Subset {
    group: String,
    rays: Vec<Ray>,
    reference: Vec<(f32, u32)>,
    instances: Option<Vec<u32>>,
}

fn run_mesh(
    mesh: &MeshRays,
    config: &Config,
    live: &mut [Live],
    report: &mut Report,
    log: &mut dyn FnMut(&str),
) {
    let stride = config.ray_stride.max(1);
    // A set with no rays checks nothing, and one whose reference holds another
    // number of hits is not that set's reference: each fails the suite as a
    // note, and is not traced.
    let mut usable = Vec::new();
    for s in &mesh.sets {
        let problem = if s.rays.is_empty() {
            Some("no rays: the set checks nothing".to_string())
        } else if s.rays.len() != s.reference.len() {
            Some(format!(
                "{} rays but {} reference hits",
                s.rays.len(),
                s.reference.len()
            ))
        } else {
            s.instances
                .as_ref()
                .filter(|i| i.len() != s.rays.len())
                .map(|i| format!("{} rays but {} reference instances", s.rays.len(), i.len()))
        };
        match problem {
            Some(reason) => {
                log(&format!("ray set {}/{}: {reason}", mesh.name, s.name));
                report.notes.push(Note {
                    what: format!("ray set {}/{}", mesh.name, s.name),
                    reason,
                    fails: true,
                });
            }
            None => usable.push(s),
        }
    }
    let sets: Vec<Subset> = usable
        .iter()
        .map(|s| Subset {
            group: format!("{}/{}", mesh.name, s.name),
            rays: s.rays.iter().step_by(stride).copied().collect(),
            reference: s.reference.iter().step_by(stride).copied().collect(),
            instances: s
                .instances
                .as_ref()
                .map(|i| i.iter().step_by(stride).copied().collect()),
        })
        .collect();
    if mesh.scene.is_two_level() && !sets.is_empty() {
        report.two_level_meshes.push(mesh.name.clone());
    }
    for (s, sub) in usable.iter().zip(&sets) {
        report.ray_set_sizes.push((
            mesh.name.clone(),
            s.name.clone(),
            sub.rays.len(),
            sub.reference.len(),
        ));
    }
    // Every backend's answers, kept for the pairwise comparison.
    let mut answers: Vec<Vec<Option<Answers>>> = Vec::new();
    for b in live.iter_mut() {
        let mut per_set = Vec::new();
        let scene = b.backend.set_scene(&mesh.scene);
        for Subset {
            group,
            rays,
            reference,
            instances,
        } in &sets
        {
            let result = match &scene {
                Ok(_) => trace(b.backend.as_mut(), rays),
                Err(e) => Err(e.clone()),
            };
            let scales = match instances {
                Some(ids) => {
                    let t: Vec<(f32, u32, u32)> = reference
                        .iter()
                        .zip(ids)
                        .map(|(&(t, p), &i)| (t, p, i))
                        .collect();
                    origin_scales(&mesh.scene, rays, &t)
                }
                None => Vec::new(),
            };
            let check = match &result {
                Ok(a) => {
                    let occ = Reference::occluded_from(reference);
                    compare(
                        group,
                        &b.name,
                        rays,
                        a,
                        &Reference {
                            name: "Embree",
                            hits: reference,
                            uv: None,
                            occluded: &occ,
                            tie_limit: REFERENCE_TIE_LIMIT,
                            face_planes: None,
                            also_excused: None,
                            instances: instances.as_deref().map(|ids| Instanced {
                                ids,
                                scales: scales.as_slice(),
                            }),
                        },
                    )
                }
                Err(e) => HitCheck::failed_call(group, &b.name, "Embree", e.to_string()),
            };
            log(&format!(
                "rays {group} on {} vs Embree: {} [{:.0} + {:.0} ms]",
                b.name,
                verdict(&check),
                check.intersect_ms,
                check.occluded_ms
            ));
            report.ray_sets.push(check);
            per_set.push(result.ok());
        }
        answers.push(per_set);
    }
    for i in 0..live.len() {
        for j in i + 1..live.len() {
            for (k, Subset { group, rays, .. }) in sets.iter().enumerate() {
                let (Some(Some(a)), Some(Some(b))) = (
                    answers.get(i).and_then(|v| v.get(k)),
                    answers.get(j).and_then(|v| v.get(k)),
                ) else {
                    continue;
                };
                let pairs = Reference::pairs(&b.hits);
                let uv = Reference::uvs(&b.hits);
                let instances = Reference::instances_of(&b.hits);
                let scales = origin_scales(&mesh.scene, rays, &triples(&b.hits));
                let check = compare(
                    group,
                    &live[i].name,
                    rays,
                    a,
                    &Reference {
                        name: &live[j].name,
                        hits: &pairs,
                        uv: Some(&uv),
                        occluded: &b.occluded,
                        tie_limit: REFERENCE_TIE_LIMIT,
                        face_planes: None,
                        also_excused: None,
                        instances: Some(Instanced {
                            ids: &instances,
                            scales: &scales,
                        }),
                    },
                );
                log(&format!(
                    "rays {group}: {} vs {}: {}",
                    live[i].name,
                    live[j].name,
                    verdict(&check)
                ));
                report.ray_sets.push(check);
            }
        }
    }
}

/// The settings an image check renders `integrator` with.
pub fn image_settings(
    case: &ImageCase,
    integrator: Integrator,
    spp: u32,
    config: &Config,
) -> RenderSettings {
    let own = case.settings;
    let mut s = RenderSettings {
        integrator,
        spp,
        seed: config.seed,
        ..own
    };
    if integrator != own.integrator {
        s.max_depth = match integrator {
            Integrator::Path => 8,
            Integrator::Whitted => 2,
            Integrator::Ao => 1,
        };
    }
    s.max_depth = s.max_depth.clamp(1, config.max_depth.max(1));
    if integrator == Integrator::Ao {
        s.ao_samples = 4;
        s.ao_shadows = true;
    }
    s
}

fn size_for(case: &ImageCase, width: u32) -> (u32, u32) {
    let w = width.max(1);
    let h = (w as u64 * case.height.max(1) as u64 / case.width.max(1) as u64)
        .clamp(1, u64::from(u32::MAX)) as u32;
    (w, h)
}

fn render(
    backend: &mut dyn Backend,
    camera: &Camera,
    settings: &RenderSettings,
    (w, h): (u32, u32),
    format: PixelFormat,
) -> Result<(Image, f64), prism_core::Error> {
    let mut image = Image::new(w, h, format)?;
    let start = Instant::now();
    backend.render(camera, settings, &mut image, &NoProgress)?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    // A backend may not hand back another image than the one it was given:
    // the checks below compare frames of the size and format asked for.
    if (image.width(), image.height(), image.format()) != (w, h, format) {
        return Err(prism_core::Error::Device {
            backend: "conformance",
            operation: "render",
            message: format!(
                "asked for a {w}x{h} {format:?} frame, the backend returned a {}x{} {:?} one",
                image.width(),
                image.height(),
                image.format()
            ),
        });
    }
    Ok((image, ms))
}

fn run_images(
    case: &ImageCase,
    config: &Config,
    live: &mut [Live],
    report: &mut Report,
    log: &mut dyn FnMut(&str),
) {
    let size = size_for(case, config.image_width);
    let csize = size_for(case, config.converged_width);
    let mut checks: Vec<ImageCheck> = Integrator::ALL
        .iter()
        .map(|&i| ImageCheck {
            scene: case.name.clone(),
            integrator: i,
            settings: image_settings(case, i, config.spp, config),
            width: size.0,
            height: size.1,
            converged_size: csize,
            converged_spp: config.converged_spp,
            renders: Vec::new(),
            pairs: Vec::new(),
        })
        .collect();
    for b in live.iter_mut() {
        let scene = b.backend.set_scene(&case.scene);
        for check in checks.iter_mut() {
            let mut r = BackendRender {
                backend: b.name.clone(),
                image: None,
                converged: None,
                determinism: None,
                srgb8_levels: None,
                bad_radiance: None,
                error: None,
                render_ms: 0.0,
            };
            let outcome = scene.clone().and_then(|_| {
                let be = b.backend.as_mut();
                let s = check.settings;
                let (first, ms) = render(be, &case.camera, &s, size, PixelFormat::LinearF32)?;
                r.render_ms = ms;
                let (second, _) = render(be, &case.camera, &s, size, PixelFormat::LinearF32)?;
                r.determinism = Some(images::bit_identical(&first, &second));
                let (srgb, _) = render(be, &case.camera, &s, size, PixelFormat::Srgba8)?;
                // `render` checked both frames' size and format, so the
                // comparison runs; were it refused, the render fails.
                r.srgb8_levels = Some(images::srgb8_levels(&srgb, &first).map_err(|message| {
                    prism_core::Error::Device {
                        backend: "conformance",
                        operation: "8-bit check",
                        message,
                    }
                })?);
                r.bad_radiance = images::bad_radiance(&first).map(|b| ("frame", b));
                r.image = Some(first);
                if config.converged_spp > 0 {
                    let cs = image_settings(case, check.integrator, config.converged_spp, config);
                    let (conv, _) = render(be, &case.camera, &cs, csize, PixelFormat::LinearF32)?;
                    r.bad_radiance = r
                        .bad_radiance
                        .or_else(|| images::bad_radiance(&conv).map(|b| ("converged frame", b)));
                    r.converged = Some(conv);
                }
                Ok(())
            });
            if let Err(e) = outcome {
                r.error = Some(e.to_string());
            }
            log(&format!(
                "image {} on {}: {} [{:.0} ms]",
                check.name(),
                b.name,
                match r.failures().first() {
                    None => "ok".to_string(),
                    Some(w) => format!("FAILED: {w}"),
                },
                r.render_ms
            ));
            check.renders.push(r);
        }
    }
    for check in checks.iter_mut() {
        let n = check.renders.len();
        for i in 0..n {
            for j in i + 1..n {
                let (a, b) = (&check.renders[i], &check.renders[j]);
                let (Some(ia), Some(ib)) = (&a.image, &b.image) else {
                    continue;
                };
                let pixels = images::pixel_metrics(ia, ib);
                let tiles = match (&a.converged, &b.converged) {
                    (Some(ca), Some(cb)) => Some(images::tile_metrics(ca, cb, config.tile)),
                    _ => None,
                };
                let mut failures = Vec::new();
                let pixels = pixels.unwrap_or_else(|e| {
                    failures.push(e);
                    PixelMetrics::default()
                });
                let tiles = match tiles {
                    Some(Ok(t)) => Some(t),
                    Some(Err(e)) => {
                        failures.push(e);
                        None
                    }
                    None => None,
                };
                failures.extend(images::pair_failures(&pixels, tiles.as_ref()));
                log(&format!(
                    "image {}: {} vs {}: MAE {:.3}/255, RMSE {:.4}, off {:.2}%, tile {:.2}/255 {}",
                    check.name(),
                    a.backend,
                    b.backend,
                    pixels.mae * 255.0,
                    pixels.rmse,
                    pixels.pixels_off * 100.0,
                    tiles.map_or(0.0, |t| t.max_tile_diff * 255.0),
                    if failures.is_empty() { "ok" } else { "FAILED" }
                ));
                check.pairs.push(PairCheck {
                    a: a.backend.clone(),
                    b: b.backend.clone(),
                    pixels,
                    tiles,
                    failures,
                });
            }
        }
    }
    report.images.extend(checks);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPU backend, and a configuration whose generated cases take little time.
    fn cpu_only() -> (Vec<Candidate>, Config) {
        let cpu = prism_cpu::CpuBackend::with_threads(1).expect("cpu backend");
        let config = Config {
            generated: generated::GenSize {
                seeds: 1,
                rays: 16,
                triangles: 8,
                spheres: 4,
            },
            ..Config::quick()
        };
        (vec![Candidate::opened("cpu", Box::new(cpu))], config)
    }

    #[test]
    fn a_run_without_a_backend_or_with_one_twice_fails() {
        let report = run(Vec::new(), &Cases::default(), &Config::quick(), &mut |_| {});
        assert_eq!(
            report.failures(),
            ["backends: no backend opened: nothing was checked"]
        );
        assert!(report.summary().starts_with("FAIL"), "{}", report.summary());
        let (mut candidates, config) = cpu_only();
        let again = prism_cpu::CpuBackend::with_threads(1).expect("cpu backend");
        candidates.push(Candidate::opened("cpu", Box::new(again)));
        let report = run(candidates, &Cases::default(), &config, &mut |_| {});
        assert_eq!(
            report.failures(),
            ["backend cpu: given twice: each backend is checked once"]
        );
        assert_eq!(report.backends.len(), 1);
    }

    #[test]
    fn generated_sizes_past_the_limit_fail_instead_of_aborting() {
        let (candidates, mut config) = cpu_only();
        config.generated.rays = usize::MAX;
        let report = run(candidates, &Cases::default(), &config, &mut |_| {});
        assert_eq!(
            report.failures(),
            [format!(
                "generated cases: rays = {} is above the limit {}",
                usize::MAX,
                generated::GenSize::MAX.rays
            )]
        );
        assert!(report.generated.is_empty());
        assert_eq!(generated::GenSize::MAX.check(), Ok(()));
    }

    #[test]
    fn notes_are_logged_and_missing_ray_sets_show_in_the_summary() {
        let cases = Cases {
            notes: vec![Note {
                what: "reference ray sets".into(),
                reason: "scenes not found".into(),
                fails: false,
            }],
            ..Default::default()
        };
        let mut lines = Vec::new();
        let (candidates, config) = cpu_only();
        let report = run(candidates, &cases, &config, &mut |l| {
            lines.push(l.to_string())
        });
        assert!(report.passed(), "{:?}", report.failures());
        assert!(
            lines
                .iter()
                .any(|l| l == "note: reference ray sets: scenes not found"),
            "{lines:?}"
        );
        let summary = report.summary();
        assert!(summary.starts_with("PASS"), "{summary}");
        assert!(summary.contains("; no reference ray sets"), "{summary}");
    }

    #[test]
    fn a_failing_note_is_logged_as_failed() {
        let cases = Cases {
            notes: vec![Note {
                what: "mesh bunny".into(),
                reason: "truncated".into(),
                fails: true,
            }],
            ..Default::default()
        };
        let mut lines = Vec::new();
        let (candidates, config) = cpu_only();
        let report = run(candidates, &cases, &config, &mut |l| {
            lines.push(l.to_string())
        });
        assert!(
            lines.iter().any(|l| l == "FAILED: mesh bunny: truncated"),
            "{lines:?}"
        );
        assert_eq!(report.failures(), vec!["mesh bunny: truncated".to_string()]);
    }
}
