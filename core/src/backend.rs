//! The [`Backend`] trait every device implements, and what it takes and returns.

use crate::camera::Camera;
use crate::error::Error;
use crate::gpu::RenderParams;
use crate::image::Image;
use crate::ray::{Hit, Ray};
use crate::scene::Scene;
use crate::traverse::Accel;
use crate::update::{Changes, GeometrySah, SceneUpdate};
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;
use glam::Vec4;

/// Which light transport algorithm `render` runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Integrator {
    /// Unidirectional path tracing with sky, sun and emissive lights, Russian roulette.
    #[default]
    Path = 0,
    /// Whitted: key light with hard shadows, Phong, mirror bounces to a fixed depth.
    Whitted = 1,
    /// Ambient occlusion: primary hit, `ao_samples` occlusion rays, optional shadow ray.
    Ao = 2,
}

impl Integrator {
    /// Every integrator, in `u32` order.
    pub const ALL: [Integrator; 3] = [Integrator::Path, Integrator::Whitted, Integrator::Ao];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Integrator::Path => "path",
            Integrator::Whitted => "whitted",
            Integrator::Ao => "ao",
        }
    }

    /// Look an integrator up by [`Integrator::name`] (ASCII case and
    /// surrounding spaces ignored).
    pub fn from_name(name: &str) -> Result<Integrator, Error> {
        Self::ALL
            .into_iter()
            .find(|i| i.name().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| Error::UnknownName {
                what: "integrator",
                name: name.into(),
                known: "path, whitted, ao",
            })
    }
}

/// How to render a frame (the image size comes from the [`Image`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RenderSettings {
    /// Algorithm.
    pub integrator: Integrator,
    /// Samples per pixel, `1..=MAX_SPP`.
    pub spp: u32,
    /// Path: maximum path length. Whitted: mirror bounces. `1..=MAX_DEPTH`.
    pub max_depth: u32,
    /// Frame seed: with pixel and sample index it fixes every random number.
    pub seed: u32,
    /// AO: occlusion rays per primary hit, `1..=MAX_AO_SAMPLES`.
    pub ao_samples: u32,
    /// AO: a fractional part of the AO ray count, `[0, 1)`. This share of the
    /// pixels trace `ao_samples + 1` AO rays, the rest `ao_samples`; which
    /// pixels is a fixed pattern of 16 x 8 pixel blocks that spreads them
    /// evenly over the image ([`crate::integrator::ao_rays_at`]; whole blocks
    /// so that a GPU's warps each trace one count). Each pixel
    /// divides by its own count, so the image stays unbiased. It makes the AO
    /// cost continuous: a frame budget meets its target exactly instead of one
    /// whole ray a pixel below it. 0 (the default) is the plain integer count.
    pub ao_extra: f32,
    /// AO: length of an occlusion ray, finite and `> 0`.
    pub ao_distance: f32,
    /// AO: also trace a shadow ray to the key light.
    pub ao_shadows: bool,
    /// Path: depth from which Russian roulette may end a path.
    pub rr_depth: u32,
    /// Path: sample the scene's sun directly at every surface (next-event
    /// estimation, weighted against the scattered rays by multiple importance
    /// sampling). Off, only rays that happen to meet the sun see it: the same
    /// image in expectation, far noisier for a small sun. No effect without a
    /// sun.
    pub sun_nee: bool,
}

impl Default for RenderSettings {
    fn default() -> Self {
        Self {
            integrator: Integrator::Path,
            spp: 16,
            max_depth: 8,
            seed: 0,
            ao_samples: 8,
            ao_extra: 0.0,
            ao_distance: 1.0,
            ao_shadows: false,
            rr_depth: 3,
            sun_nee: true,
        }
    }
}

impl RenderSettings {
    /// Most samples per pixel.
    pub const MAX_SPP: u32 = 1 << 16;
    /// Most bounces.
    pub const MAX_DEPTH: u32 = 1024;
    /// Most AO rays per pixel sample.
    pub const MAX_AO_SAMPLES: u32 = 1024;

    /// Check every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |field, value: f64, reason| {
            Err(Error::Setting {
                field,
                value,
                reason,
            })
        };
        if !(1..=Self::MAX_SPP).contains(&self.spp) {
            return bad("spp", self.spp as f64, "must be in 1..=65536");
        }
        if !(1..=Self::MAX_DEPTH).contains(&self.max_depth) {
            return bad("max_depth", self.max_depth as f64, "must be in 1..=1024");
        }
        if !(1..=Self::MAX_AO_SAMPLES).contains(&self.ao_samples) {
            return bad("ao_samples", self.ao_samples as f64, "must be in 1..=1024");
        }
        if !(0.0..1.0).contains(&self.ao_extra) {
            return bad("ao_extra", self.ao_extra as f64, "must be in [0, 1)");
        }
        if !(self.ao_distance > 0.0 && self.ao_distance.is_finite()) {
            return bad(
                "ao_distance",
                self.ao_distance as f64,
                "must be finite and > 0",
            );
        }
        Ok(())
    }

    /// The per-frame parameter block for an image of `width x height` pixels.
    pub fn params(
        &self,
        accel: &Accel,
        camera: &Camera,
        width: u32,
        height: u32,
    ) -> Result<RenderParams, Error> {
        self.validate()?;
        Image::checked_pixels(width, height)?;
        let sky = accel.sky();
        let light = accel.light();
        let (sun_center_radius, sun_radiance) = accel
            .sun()
            .map_or((Vec4::ZERO, Vec4::ZERO), |s| s.rows(self.sun_nee));
        Ok(RenderParams {
            camera: camera.frame(width, height)?,
            sky_horizon: sky.horizon.extend(0.0).to_array(),
            sky_zenith: sky.zenith.extend(0.0).to_array(),
            light_position: light.position.extend(0.0).to_array(),
            light_color: light.color.extend(0.0).to_array(),
            width,
            height,
            spp: self.spp,
            max_depth: self.max_depth,
            seed: self.seed,
            integrator: self.integrator as u32,
            ao_samples: self.ao_samples,
            ao_shadows: self.ao_shadows as u32,
            ao_extra: ao_extra_threshold(self.ao_extra),
            pad0: 0,
            pad1: 0,
            pad2: 0,
            ao_distance: self.ao_distance,
            rr_depth: self.rr_depth,
            prim_count: accel.primitives().len() as u32,
            opaque_zero: 0,
            sun_center_radius: sun_center_radius.to_array(),
            sun_radiance: sun_radiance.to_array(),
        })
    }
}

/// [`RenderSettings::ao_extra`] as the pixel pattern's threshold
/// ([`RenderParams::ao_extra`]): `f * 2^32`, rounded down, so that a pixel
/// whose pattern value (a `u32`) is below it traces one more AO ray. An
/// integer compare gives every backend the same pixels; 0 gives none. A
/// share outside `[0, 1)` (refused by [`RenderSettings::validate`]) is
/// clamped to it.
#[inline]
pub fn ao_extra_threshold(share: f32) -> u32 {
    // `as` saturates: NaN and negatives to 0, 2^32 and above to u32::MAX.
    (share as f64 * 4_294_967_296.0) as u32
}

/// Where a backend's stage times come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimingSource {
    /// Host wall clock around waited device work.
    #[default]
    HostClock,
    /// CUDA events recorded on the stream.
    DeviceEvents,
    /// GPU timestamp queries (wgpu).
    TimestampQueries,
}

/// Stage times and work done by one call; every backend fills the same fields
/// (zero where a stage does not apply), so every backend prints the same table.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RenderStats {
    /// BVH build on the host, with whatever a backend derives from it there
    /// (the CUDA backend's octant copies and light grid).
    pub build: Duration,
    /// Host to device copies.
    pub upload: Duration,
    /// Tracing and shading.
    pub trace: Duration,
    /// Device to host copies.
    pub download: Duration,
    /// The whole call.
    pub total: Duration,
    /// Rays traced (primary, bounce, shadow and AO rays).
    pub rays: u64,
    /// Where the times come from.
    pub timing: TimingSource,
}

impl RenderStats {
    /// Million rays per second over the trace stage.
    pub fn mrays_per_s(&self) -> f64 {
        let s = self.trace.as_secs_f64();
        if s > 0.0 {
            self.rays as f64 / s / 1e6
        } else {
            0.0
        }
    }
}

/// The memory one of a backend's trees over the current scene takes, in bytes:
/// how a user weighs a tree layout against a scene's size (bytes per triangle,
/// as Embree and OptiX report theirs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TreeBytes {
    /// Which tree: core's binary tree as every GPU backend uploads it, or a
    /// backend's own (the CPU's 8-wide tree).
    pub tree: &'static str,
    /// Its nodes (the instances' tree's too, for a two-level scene).
    pub nodes: u64,
    /// What its leaves point at: primitive records or triangle packets, with
    /// their ids, materials and instance records.
    pub leaves: u64,
}

impl TreeBytes {
    /// Nodes and leaves together.
    #[inline]
    pub fn total(&self) -> u64 {
        self.nodes + self.leaves
    }
}

/// What [`Backend::update_scene`] did, and what it cost.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UpdateStats {
    /// What changed, among it the indices the added instances were given
    /// ([`Changes::added`]).
    pub changes: Changes,
    /// `build`: the host's work (checks, new instance records, refits made on
    /// the host, the top tree); `upload`: the copies to the device and any
    /// work there (a refit made on the device); `total`: the whole call.
    pub stats: RenderStats,
}

/// What a backend runs on.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BackendInfo {
    /// Backend name: `cpu`, `cuda`, `wgpu`.
    pub name: &'static str,
    /// Device description (CPU model and threads, GPU name and driver).
    pub device: String,
    /// Largest single buffer the device accepts, in bytes.
    pub max_buffer_bytes: u64,
    /// Whether this is a software implementation of a GPU API (e.g. lavapipe).
    pub software: bool,
}

/// Progress of a long call, and the caller's chance to cancel it.
///
/// `advance` may be called from several threads; implementations must be cheap.
pub trait Progress: Sync {
    /// `done` of `total` work units are finished (monotonic per call).
    fn advance(&self, done: u64, total: u64);
    /// Return true to stop the call early with [`Error::Cancelled`].
    fn cancelled(&self) -> bool {
        false
    }
}

/// A [`Progress`] that ignores progress and never cancels.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn advance(&self, _done: u64, _total: u64) {}
}

/// A ray tracing device. Object safe: hold a `Box<dyn Backend>` chosen at run time.
///
/// Every method returns `Result`; after an error the backend stays usable.
pub trait Backend {
    /// Name, device and limits.
    fn info(&self) -> BackendInfo;

    /// Validate `scene`, build its BVH (in core, identically on every backend) and
    /// upload it. Replaces the previous scene. Stats: `build`, `upload`, `total`.
    fn set_scene(&mut self, scene: &Scene) -> Result<RenderStats, Error>;

    /// Render a whole frame into `image` (its size and format say what to make).
    fn render(
        &mut self,
        camera: &Camera,
        settings: &RenderSettings,
        image: &mut Image,
        progress: &dyn Progress,
    ) -> Result<RenderStats, Error>;

    /// Closest hit of every ray; `hits[i]` answers `rays[i]`.
    ///
    /// Each ray is answered on its own; their order changes only the speed.
    /// A GPU backend gives neighbouring rays to the lanes of one warp, which
    /// wait for the longest walk among them. Rays that start near each other
    /// and head the same way in neighbouring slots trace faster. Incoherent
    /// rays (bounces, baking) sorted by origin, then by direction, ran
    /// 1.05-1.18x faster on an H200 (bench/RESULTS.md, "Rays in another
    /// order"). The backends keep the caller's order: sorting on the device
    /// cost about what it saved.
    fn intersect(&mut self, rays: &[Ray], hits: &mut [Hit]) -> Result<RenderStats, Error>;

    /// Whether anything lies on each ray; `occluded[i]` answers `rays[i]`.
    fn occluded(&mut self, rays: &[Ray], occluded: &mut [bool]) -> Result<RenderStats, Error>;

    /// Apply `update` to the two-level scene of the last `set_scene` (see
    /// [`SceneUpdate`]), uploading only what changed: new instance records
    /// and the top tree, a mesh's new vertices and its refit tree.
    ///
    /// [`Error::NoScene`] before `set_scene`, [`Error::NotTwoLevel`] for a
    /// flat scene, and the update's own errors, naming the bad item; after
    /// any error the scene is as it was.
    fn update_scene(&mut self, update: &SceneUpdate) -> Result<UpdateStats, Error>;

    /// The SAH cost of geometry `geometry`'s tree now against its last build
    /// from scratch ([`crate::Accel::geometry_sah`]): how much a refit tree
    /// has degraded. `None` without a two-level scene or for a geometry past
    /// the last.
    fn geometry_sah(&mut self, geometry: u32) -> Option<GeometrySah>;

    /// The memory each tree this backend keeps over the current scene takes
    /// ([`crate::Accel::tree_bytes`] for core's layout, which the GPU backends
    /// upload as it is); empty before `set_scene`, and from a backend that does
    /// not report it.
    fn tree_bytes(&self) -> Vec<TreeBytes> {
        Vec::new()
    }
}

/// Check a batch before tracing: equal lengths, every ray valid. Shared by all
/// backends so that they refuse the same input with the same error.
pub fn check_batch(what: &'static str, rays: &[Ray], outputs: usize) -> Result<(), Error> {
    if rays.len() != outputs {
        return Err(Error::LengthMismatch {
            what,
            inputs: rays.len(),
            outputs,
        });
    }
    // One pass without a branch a ray (`&` over every ray), the search for
    // the first bad one only where there is one: a batch is checked before
    // every trace, and valid batches are the rule.
    if !rays.iter().fold(true, |ok, r| ok & r.is_valid())
        && let Some(index) = rays.iter().position(|r| !r.is_valid())
    {
        // ok: `index` was found by `position` over `rays`.
        let r = rays[index];
        return Err(Error::InvalidRay {
            index,
            ray: [
                r.origin.x, r.origin.y, r.origin.z, r.tmin, r.dir.x, r.dir.y, r.dir.z, r.tmax,
            ],
        });
    }
    Ok(())
}
