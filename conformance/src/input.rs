//! What the caller hands the suite: the backends to check ([`Candidate`]),
//! the cases no generator can make ([`Cases`]: meshes with Embree's reference
//! hits, scenes to render, what could not be provided) and how much work to
//! do ([`Config`]). Kept apart from the suite's findings so that a caller
//! reads its side of the contract in one place.

use crate::generated::GenSize;
use prism_core::{Backend, Camera, Ray, RenderSettings, Scene};

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
