//! A frame's path-traced rays, recorded bounce by bounce in the ray and hit
//! files of `shared/scenes` ([`crate::rays`]): `bounceK.rays` holds the rays
//! of every path's `K`-th closest-hit query (bounce 0: the camera rays), and
//! `bounceK.hits` (`bounceK.ihits` for a two-level scene: with the instance)
//! their closest hits; occlusion queries, where the integrator makes any, go
//! to `shadowK.rays` (`K`: the closest-hit queries the path had made before
//! it, less one). Each file lists pixel by pixel (row-major from the top
//! left), and within a pixel sample by sample, the paths that reached it.
//!
//! The paths are core's own: every sample is
//! [`prism_core::integrator::camera_sample`] then
//! [`prism_core::integrator::trace_path`], run with a [`Tracer`] that answers
//! from the CPU backend's scene and writes down each query, so the files hold
//! exactly the rays the path integrator traces for the frame (every backend
//! traces the same paths). Replaying a file through `intersect` gives the
//! recorded hits (`prism bench --scene NAME --rays DIR/bounce1.rays --hits
//! DIR/bounce1.hits`), a tie apart: the hits are those of core's binary tree,
//! which the CPU backend walks with [`prism_cpu::Traversal::Binary`].
//!
//! ```no_run
//! use prism::{NoProgress, RenderSettings};
//!
//! let preset = prism::scenes::by_name("cornell")?;
//! let settings = RenderSettings { spp: 1, max_depth: 4, ..preset.settings };
//! let recorded = prism::record::record_frame(
//!     &preset.scene, &preset.camera, &settings, 64, 64, "rec".as_ref(), &NoProgress,
//! )?;
//! println!("{} camera rays, {} second bounces", recorded.bounces[0], recorded.bounces[1]);
//! # Ok::<(), prism::Error>(())
//! ```

use crate::{Backend, Camera, Error, Hit, Integrator, Progress, Ray, RenderSettings, Scene};
use prism_core::Accel;
use prism_core::gpu::RenderParams;
use prism_core::integrator::{Tracer, camera_sample, trace_path};
use rayon::prelude::*;
use std::cell::RefCell;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Paths traced between two writes to the files (and progress reports): a
/// few megabytes of records at a time, whatever the frame's size.
const BATCH_PATHS: u64 = 1 << 16;

/// What a recording wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    /// Rays per bounce: `bounces[k]` rays in `bounceK.rays`.
    pub bounces: Vec<u64>,
    /// Occlusion rays per bounce: `shadows[k]` rays in `shadowK.rays` (empty
    /// when the integrator made no occlusion query).
    pub shadows: Vec<u64>,
    /// Whether the hit files are `.ihits` (a two-level scene).
    pub instanced: bool,
}

impl Recorded {
    /// Every ray written, closest-hit and occlusion queries.
    pub fn rays(&self) -> u64 {
        self.bounces.iter().chain(&self.shadows).sum()
    }
}

/// The file of bounce `k`'s rays in `dir`.
pub fn bounce_rays(dir: &Path, k: usize) -> PathBuf {
    dir.join(format!("bounce{k}.rays"))
}

/// The file of bounce `k`'s closest hits in `dir` (`.ihits` when `instanced`).
pub fn bounce_hits(dir: &Path, k: usize, instanced: bool) -> PathBuf {
    let ext = if instanced { "ihits" } else { "hits" };
    dir.join(format!("bounce{k}.{ext}"))
}

/// The file of the occlusion rays made after bounce `k`'s hit, in `dir`.
pub fn shadow_rays(dir: &Path, k: usize) -> PathBuf {
    dir.join(format!("shadow{k}.rays"))
}

/// One path's queries, in the order it made them.
#[derive(Default)]
struct PathLog {
    /// Closest-hit queries: the `k`-th is bounce `k`. Hits name primitives
    /// by leaf slot, as the integrator sees them.
    closest: Vec<(Ray, Hit)>,
    /// Occlusion queries, with the bounce they followed.
    shadow: Vec<(usize, Ray)>,
}

/// A [`Tracer`] that answers as `inner` does and logs every query of the
/// path being traced (a fresh log per path).
struct Recording<'a, T: ?Sized> {
    inner: &'a T,
    log: RefCell<PathLog>,
}

impl<T: Tracer + ?Sized> Recording<'_, T> {
    fn log_shadow(&self, ray: &Ray) {
        let mut log = self.log.borrow_mut();
        let bounce = log.closest.len().saturating_sub(1);
        log.shadow.push((bounce, *ray));
    }
}

impl<T: Tracer + ?Sized> Tracer for Recording<'_, T> {
    fn accel(&self) -> &Accel {
        self.inner.accel()
    }
    fn closest_slot(&self, ray: &Ray) -> Hit {
        let hit = self.inner.closest_slot(ray);
        self.log.borrow_mut().closest.push((*ray, hit));
        hit
    }
    fn occluded(&self, ray: &Ray) -> bool {
        self.log_shadow(ray);
        self.inner.occluded(ray)
    }
    fn light_blocked(&self, ray: &Ray) -> bool {
        self.log_shadow(ray);
        self.inner.light_blocked(ray)
    }
}

/// The files being written, opened as their bounce first appears.
struct Files<'a> {
    dir: &'a Path,
    instanced: bool,
    bounces: Vec<(BufWriter<File>, BufWriter<File>)>,
    shadows: Vec<BufWriter<File>>,
    recorded: Recorded,
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

fn create(path: PathBuf) -> Result<BufWriter<File>, Error> {
    File::create(&path)
        .map(BufWriter::new)
        .map_err(|e| io_error(&path, e))
}

fn write_ray(out: &mut BufWriter<File>, ray: &Ray) -> std::io::Result<()> {
    for f in ray.record() {
        out.write_all(&f.to_le_bytes())?;
    }
    Ok(())
}

impl Files<'_> {
    /// Append one path's queries; `accel` maps leaf slots to primitive ids.
    fn append(&mut self, accel: &Accel, log: &PathLog) -> Result<(), Error> {
        for (k, (ray, hit)) in log.closest.iter().enumerate() {
            if self.bounces.len() <= k {
                let rays = create(bounce_rays(self.dir, k))?;
                let hits = create(bounce_hits(self.dir, k, self.instanced))?;
                self.bounces.push((rays, hits));
                self.recorded.bounces.push(0);
            }
            let (rays, hits) = &mut self.bounces[k]; // ok: pushed above when missing.
            let (prim, instance) = match accel.primitives().get(hit.prim as usize) {
                Some(p) => (p.id(), hit.instance),
                None => (Hit::NO_PRIM, Hit::NO_INSTANCE),
            };
            let t = if prim == Hit::NO_PRIM {
                f32::INFINITY
            } else {
                hit.t
            };
            let mut record = t.to_le_bytes().to_vec();
            record.extend_from_slice(&prim.to_le_bytes());
            if self.instanced {
                record.extend_from_slice(&instance.to_le_bytes());
            }
            write_ray(rays, ray).map_err(|e| io_error(&bounce_rays(self.dir, k), e))?;
            hits.write_all(&record)
                .map_err(|e| io_error(&bounce_hits(self.dir, k, self.instanced), e))?;
            self.recorded.bounces[k] += 1;
        }
        for (k, ray) in &log.shadow {
            while self.shadows.len() <= *k {
                self.shadows
                    .push(create(shadow_rays(self.dir, self.shadows.len()))?);
                self.recorded.shadows.push(0);
            }
            write_ray(&mut self.shadows[*k], ray)
                .map_err(|e| io_error(&shadow_rays(self.dir, *k), e))?;
            self.recorded.shadows[*k] += 1;
        }
        Ok(())
    }

    fn finish(self) -> Result<Recorded, Error> {
        for (k, (mut rays, mut hits)) in self.bounces.into_iter().enumerate() {
            rays.flush()
                .map_err(|e| io_error(&bounce_rays(self.dir, k), e))?;
            hits.flush()
                .map_err(|e| io_error(&bounce_hits(self.dir, k, self.instanced), e))?;
        }
        for (k, mut s) in self.shadows.into_iter().enumerate() {
            s.flush()
                .map_err(|e| io_error(&shadow_rays(self.dir, k), e))?;
        }
        Ok(self.recorded)
    }
}

/// Whether `name` is one of the files a recording writes (`bounce<K>.rays`,
/// `.hits`, `.ihits`, `shadow<K>.rays`).
fn is_recorded_file(name: &str) -> bool {
    let (stem, ext) = match name.rsplit_once('.') {
        Some(s) => s,
        None => return false,
    };
    let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match (stem.strip_prefix("bounce"), stem.strip_prefix("shadow")) {
        (Some(k), _) => number(k) && matches!(ext, "rays" | "hits" | "ihits"),
        (_, Some(k)) => number(k) && ext == "rays",
        _ => false,
    }
}

/// Make `dir` ready for a recording: created if missing, and cleared of the
/// files of an earlier recording (only those: `bounce<K>.*` and
/// `shadow<K>.rays`), so that no stale bounce outlives a shorter frame.
/// Refused (naming `dir`) when it is a file or cannot be written.
pub fn prepare_dir(dir: &Path) -> Result<(), Error> {
    let fail = |message: String| Error::Io {
        path: dir.display().to_string(),
        message,
    };
    if dir.exists() && !dir.is_dir() {
        return Err(fail(
            "not a directory: a recording writes its files there".into(),
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| fail(e.to_string()))?;
    for entry in std::fs::read_dir(dir).map_err(|e| fail(e.to_string()))? {
        let entry = entry.map_err(|e| fail(e.to_string()))?;
        if entry.file_name().to_str().is_some_and(is_recorded_file) {
            std::fs::remove_file(entry.path()).map_err(|e| io_error(&entry.path(), e))?;
        }
    }
    // Probe that files can be made there before any tracing.
    let probe = dir.join(".prism-record-probe");
    File::create(&probe).map_err(|e| fail(format!("cannot write there: {e}")))?;
    std::fs::remove_file(&probe).map_err(|e| io_error(&probe, e))?;
    Ok(())
}

/// Record the path integrator's rays for a `width x height` frame of `scene`
/// seen by `camera` with `settings` into `dir` ([module docs](self)), on the
/// CPU (every core), reporting progress in rows. `settings.integrator` must
/// be [`Integrator::Path`]. `dir` is prepared with [`prepare_dir`].
pub fn record_frame(
    scene: &Scene,
    camera: &Camera,
    settings: &RenderSettings,
    width: u32,
    height: u32,
    dir: &Path,
    progress: &dyn Progress,
) -> Result<Recorded, Error> {
    if settings.integrator != Integrator::Path {
        return Err(Error::Setting {
            field: "integrator",
            value: settings.integrator as u32 as f64,
            reason: "a recording follows the path integrator's paths: render with integrator path",
        });
    }
    let mut cpu = prism_cpu::CpuBackend::new()?;
    cpu.set_scene(scene)?;
    let accel = cpu.accel().ok_or(Error::NoScene)?;
    let params = settings.params(accel, camera, width, height)?;
    prepare_dir(dir)?;
    record_params(accel, &params, dir, progress)
}

/// [`record_frame`] for frame parameters already worked out over `accel`.
fn record_params(
    accel: &Accel,
    params: &RenderParams,
    dir: &Path,
    progress: &dyn Progress,
) -> Result<Recorded, Error> {
    let (width, height) = (params.width, params.height);
    let mut files = Files {
        dir,
        instanced: accel.is_two_level(),
        bounces: Vec::new(),
        shadows: Vec::new(),
        recorded: Recorded {
            instanced: accel.is_two_level(),
            ..Recorded::default()
        },
    };
    let paths_per_row = u64::from(width) * u64::from(params.spp.max(1));
    let rows_per_batch = (BATCH_PATHS / paths_per_row.max(1)).clamp(1, u64::from(height)) as u32;
    let mut y0 = 0;
    while y0 < height {
        if progress.cancelled() {
            return Err(Error::Cancelled);
        }
        let y1 = y0.saturating_add(rows_per_batch).min(height);
        let pixels: Vec<(u32, u32)> = (y0..y1)
            .flat_map(|y| (0..width).map(move |x| (x, y)))
            .collect();
        // Each pixel's paths on the pool, written in pixel order.
        let logs: Vec<Vec<PathLog>> = pixels
            .par_iter()
            .map(|&(x, y)| {
                (0..params.spp)
                    .map(|sample| {
                        let (ray, mut rng) = camera_sample(params, x, y, sample);
                        let tracer = Recording {
                            inner: accel,
                            log: RefCell::new(PathLog::default()),
                        };
                        trace_path(&tracer, params, ray, &mut rng);
                        tracer.log.into_inner()
                    })
                    .collect()
            })
            .collect();
        for log in logs.iter().flatten() {
            files.append(accel, log)?;
        }
        progress.advance(u64::from(y1), u64::from(height));
        y0 = y1;
    }
    files.finish()
}

#[cfg(test)]
mod tests {
    use super::is_recorded_file;

    #[test]
    fn only_recorded_files_are_cleared() {
        for name in [
            "bounce0.rays",
            "bounce12.hits",
            "bounce3.ihits",
            "shadow1.rays",
        ] {
            assert!(is_recorded_file(name), "{name}");
        }
        for name in [
            "bounce.rays",
            "bounce1.png",
            "shadow1.hits",
            "bounce1",
            "notes.txt",
            "bouncex.rays",
        ] {
            assert!(!is_recorded_file(name), "{name}");
        }
    }
}
