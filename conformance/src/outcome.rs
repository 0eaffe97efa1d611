//! What the suite found: the [`Report`] and its rows (backends, generated
//! cases, image checks with their per-backend renders and per-pair
//! comparisons), each able to say why it fails. The HTML page drawn from it
//! lives in [`crate::report`]; the checks that fill it live in the suite's
//! driver.

use crate::hits::HitCheck;
use crate::images::{self, PixelMetrics, TileMetrics};
use crate::{Config, Note};
use prism_core::{Image, Integrator, RenderSettings};
use std::time::Duration;

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

/// One render of a sun check's noise comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SunRun {
    /// Whether next-event estimation was on.
    pub nee: bool,
    /// Samples per pixel.
    pub spp: u32,
    /// Render time, best of three, milliseconds.
    pub ms: f64,
    /// Root-mean-square error against the reference (linear, over pixels and
    /// channels), over the reference's mean.
    pub relative_rmse: f64,
}

/// A scene with a sun on one backend: next-event estimation on and off
/// converged against each other, and their noise against a reference.
#[derive(Clone, Debug)]
pub struct SunCheck {
    /// Scene name.
    pub scene: String,
    /// Backend name.
    pub backend: String,
    /// Image width of every render of the check.
    pub width: u32,
    /// Image height.
    pub height: u32,
    /// Samples per pixel of the convergence comparison.
    pub converged_spp: u32,
    /// Samples per pixel of the reference (next-event estimation on).
    pub reference_spp: u32,
    /// Largest relative difference of a tile's linear mean (any channel), off against on.
    pub max_tile_diff: f64,
    /// Largest relative difference of the whole image's linear mean (any channel).
    pub mean_diff: f64,
    /// Next-event estimation on, off at equal samples, off at equal time.
    pub runs: Vec<SunRun>,
    /// Why it failed (empty: passed).
    pub failures: Vec<String>,
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
    /// Sun checks (scenes with a sun).
    pub sun: Vec<SunCheck>,
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
        for s in &self.sun {
            out.extend(
                s.failures
                    .iter()
                    .map(|f| format!("sun {} on {}: {f}", s.scene, s.backend)),
            );
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
            + self.sun.len()
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
