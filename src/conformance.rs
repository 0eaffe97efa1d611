//! The conformance suite with the facade's backends and cases: the built-in
//! scenes, the shared meshes with Embree's reference hits, and every backend this
//! build can open. See [`prism_conformance`] for the checks themselves.
//!
//! ```no_run
//! use prism::conformance::{Options, run_suite};
//!
//! let report = run_suite(&Options { quick: true, ..Default::default() }, &mut |line| eprintln!("{line}"));
//! prism::conformance::write_html(&report, std::path::Path::new("conformance-report"))?;
//! assert!(report.passed(), "{}", report.summary());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use prism_conformance::*;

use crate::{BackendChoice, Material};
use std::path::{Path, PathBuf};

/// What to run.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Backends asked for by name (each must open, or the suite fails); `None`:
    /// every backend, those that cannot be opened reported as skipped.
    pub backends: Option<Vec<BackendChoice>>,
    /// The shorter configuration ([`Config::quick`]).
    pub quick: bool,
    /// Directory of the reference meshes, rays and hits; `None`: [`default_scenes_dir`]
    /// (and a missing directory is reported as skipped rather than failed, unless
    /// [`scenes_required`]).
    pub scenes: Option<PathBuf>,
}

/// The backends this build knows, in the order the report lists them.
pub const ALL_BACKENDS: [BackendChoice; 3] =
    [BackendChoice::Cpu, BackendChoice::Wgpu, BackendChoice::Cuda];

fn backend_name(choice: BackendChoice) -> &'static str {
    match choice {
        BackendChoice::Auto => "auto",
        BackendChoice::Cpu => "cpu",
        BackendChoice::Cuda => "cuda",
        BackendChoice::Wgpu => "wgpu",
    }
}

/// Open every backend of `requested` (or all of [`ALL_BACKENDS`]). A wgpu backend
/// is opened by name, so a software adapter (lavapipe) counts. `PRISM_BACKEND` is
/// not consulted: the suite checks each backend on its own. `Auto` names no
/// backend: asked for, it is a candidate that cannot open (so the suite fails).
pub fn candidates(requested: Option<&[BackendChoice]>) -> Vec<Candidate> {
    let (list, required) = match requested {
        Some(r) => (r.to_vec(), true),
        None => (ALL_BACKENDS.to_vec(), false),
    };
    list.into_iter()
        .map(|choice| Candidate {
            name: backend_name(choice).to_string(),
            opened: match choice {
                BackendChoice::Auto => Err(
                    "auto picks a backend; the suite checks backends named cpu, wgpu or cuda"
                        .into(),
                ),
                _ => crate::open_with_env(choice, None)
                    .map(|o| o.backend as Box<dyn crate::Backend>)
                    .map_err(|e| match e {
                        crate::Error::BackendUnavailable { reason, .. } => reason,
                        e => e.to_string(),
                    }),
            },
            required,
        })
        .collect()
}

/// `$PRISM_SCENES` when set and not empty, else `shared/scenes` beside the
/// source checkout this crate was built from (`<checkout>/../shared/scenes`, an
/// absolute path fixed at build time, whatever the current directory).
pub fn default_scenes_dir() -> PathBuf {
    std::env::var_os("PRISM_SCENES")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/scenes"))
}

/// Whether `PRISM_REQUIRE_SCENES=1`: then a missing [`default_scenes_dir`] is a
/// failure (of [`builtin_cases`], and of the shared-scene tests) instead of a
/// skip.
pub fn scenes_required() -> bool {
    std::env::var("PRISM_REQUIRE_SCENES").is_ok_and(|v| v == "1")
}

/// Every built-in scene as an image case.
pub fn image_cases() -> Vec<ImageCase> {
    ["rtiow", "whitted19", "cornell", "sunlit"]
        .iter()
        .filter_map(|n| crate::scenes::by_name(n).ok())
        .map(|p| ImageCase {
            name: p.name.to_string(),
            scene: p.scene,
            camera: p.camera,
            settings: p.settings,
            width: p.width,
            height: p.height,
        })
        .collect()
}

/// The meshes of `dir` with their ray sets: every `M.S.rays` with a `M.S.hits`
/// and a mesh `M.obj` (or `M.ply`). A file that is there but cannot be read, a
/// set whose files disagree in length, and an empty set (which would check
/// nothing) are failing notes; a mesh that cannot be loaded is one note however
/// many sets it has.
pub fn mesh_cases(dir: &Path) -> (Vec<MeshRays>, Vec<Note>) {
    let mut notes = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            notes.push(Note {
                what: "reference ray sets".into(),
                reason: format!("{}: {e}", dir.display()),
                fails: true,
            });
            return (Vec::new(), notes);
        }
    };
    let mut sets: Vec<(String, String)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter_map(|f| {
            let stem = f.strip_suffix(".rays")?;
            // The set is the last dot's part: mesh names may hold dots.
            let (mesh, set) = stem.rsplit_once('.')?;
            Some((mesh.to_string(), set.to_string()))
        })
        .collect();
    sets.sort();
    let mut meshes: Vec<MeshRays> = Vec::new();
    let mut unloadable: Vec<String> = Vec::new();
    for (mesh, set) in sets {
        if unloadable.contains(&mesh) {
            continue;
        }
        if meshes.last().is_none_or(|m| m.name != mesh) {
            let path = ["obj", "ply"]
                .iter()
                .map(|ext| dir.join(format!("{mesh}.{ext}")))
                .find(|p| p.exists());
            let loaded = match path {
                Some(p) => crate::mesh::load_mesh(&p).and_then(|m| {
                    crate::mesh_scene(&m, Material::lambertian(glam::Vec3::splat(0.7)))
                }),
                None => Err(crate::Error::Io {
                    path: dir.join(format!("{mesh}.obj")).display().to_string(),
                    message: "no mesh for these ray sets".into(),
                }),
            };
            match loaded {
                Ok((scene, _)) => meshes.push(MeshRays {
                    name: mesh.clone(),
                    scene,
                    sets: Vec::new(),
                }),
                Err(e) => {
                    notes.push(Note {
                        what: format!("mesh {mesh}"),
                        reason: e.to_string(),
                        fails: true,
                    });
                    unloadable.push(mesh);
                    continue;
                }
            }
        }
        let Some(m) = meshes.last_mut().filter(|m| m.name == mesh) else {
            continue;
        };
        let rays = crate::rays::read_rays(dir.join(format!("{mesh}.{set}.rays")));
        let hits = crate::rays::read_hits(dir.join(format!("{mesh}.{set}.hits")));
        match (rays, hits) {
            (Ok(rays), Ok(_)) if rays.is_empty() => notes.push(Note {
                what: format!("ray set {mesh}/{set}"),
                reason: "no rays: the set checks nothing".into(),
                fails: true,
            }),
            (Ok(rays), Ok(reference)) if rays.len() == reference.len() => m.sets.push(RaySet {
                name: set,
                rays,
                reference,
                instances: None,
            }),
            (Ok(rays), Ok(reference)) => notes.push(Note {
                what: format!("ray set {mesh}/{set}"),
                reason: format!("{} rays but {} reference hits", rays.len(), reference.len()),
                fails: true,
            }),
            (Err(e), _) | (_, Err(e)) => notes.push(Note {
                what: format!("ray set {mesh}/{set}"),
                reason: e.to_string(),
                fails: true,
            }),
        }
    }
    meshes.retain(|m| !m.sets.is_empty());
    (meshes, notes)
}

/// The instanced sets of `dir/instances`: every `P.instances` with its `P.S.rays`
/// and `P.S.ihits` (`bunny-x1000.primary.rays`), where `P` is a mesh of `dir`
/// and `-xN` (`bunny-x1000` places `dir/bunny.obj` 1,000 times). Each becomes a
/// two-level scene ([`crate::instanced_scene`]) whose reference carries
/// Embree's instance ids. Problems are failing notes, as for [`mesh_cases`]; a
/// `dir` without `instances/` has none.
pub fn instanced_cases(dir: &Path) -> (Vec<MeshRays>, Vec<Note>) {
    let mut notes = Vec::new();
    let idir = dir.join("instances");
    let Ok(entries) = std::fs::read_dir(&idir) else {
        return (Vec::new(), notes);
    };
    let mut prefixes: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter_map(|f| f.strip_suffix(".instances").map(str::to_string))
        .collect();
    prefixes.sort();
    let mut out = Vec::new();
    for prefix in prefixes {
        let note = |reason: String| Note {
            what: format!("instanced set {prefix}"),
            reason,
            fails: true,
        };
        let mesh_name = prefix.rsplit_once("-x").map_or(prefix.as_str(), |(m, _)| m);
        let mesh_path = ["obj", "ply"]
            .iter()
            .map(|ext| dir.join(format!("{mesh_name}.{ext}")))
            .find(|p| p.exists());
        let Some(mesh_path) = mesh_path else {
            notes.push(note(format!(
                "no mesh {mesh_name}.obj in {}",
                dir.display()
            )));
            continue;
        };
        let scene = crate::mesh::load_mesh(&mesh_path).and_then(|mesh| {
            let transforms = crate::rays::read_instances(idir.join(format!("{prefix}.instances")))?;
            crate::instanced_scene(
                &mesh,
                &transforms,
                Material::lambertian(glam::Vec3::splat(0.7)),
            )
        });
        let scene = match scene {
            Ok(s) => s,
            Err(e) => {
                notes.push(note(e.to_string()));
                continue;
            }
        };
        let mut m = MeshRays {
            name: prefix.clone(),
            scene,
            sets: Vec::new(),
        };
        for set in ["primary", "diffuse"] {
            let rays_path = idir.join(format!("{prefix}.{set}.rays"));
            if !rays_path.exists() {
                continue;
            }
            let rays = crate::rays::read_rays(&rays_path);
            let hits = crate::rays::read_instance_hits(idir.join(format!("{prefix}.{set}.ihits")));
            match (rays, hits) {
                (Ok(rays), Ok(hits)) if !rays.is_empty() && rays.len() == hits.len() => {
                    m.sets.push(RaySet {
                        name: set.into(),
                        rays,
                        reference: hits.iter().map(|&(t, p, _)| (t, p)).collect(),
                        instances: Some(hits.iter().map(|h| h.2).collect()),
                    })
                }
                (Ok(rays), Ok(hits)) => notes.push(Note {
                    what: format!("ray set {prefix}/{set}"),
                    reason: format!("{} rays but {} reference hits", rays.len(), hits.len()),
                    fails: true,
                }),
                (Err(e), _) | (_, Err(e)) => notes.push(Note {
                    what: format!("ray set {prefix}/{set}"),
                    reason: e.to_string(),
                    fails: true,
                }),
            }
        }
        if !m.sets.is_empty() {
            out.push(m);
        }
    }
    (out, notes)
}

/// The built-in cases: every preset scene, and the reference ray sets of
/// `scenes` (or of [`default_scenes_dir`], where a missing directory is a
/// non-failing note unless [`scenes_required`]).
pub fn builtin_cases(scenes: Option<&Path>) -> Cases {
    let explicit = scenes.is_some();
    let required = explicit || scenes_required();
    let dir = scenes.map_or_else(default_scenes_dir, Path::to_path_buf);
    let (meshes, mut notes) = if dir.is_dir() || explicit {
        let (mut meshes, mut notes) = mesh_cases(&dir);
        let (instanced, more) = instanced_cases(&dir);
        meshes.extend(instanced);
        notes.extend(more);
        (meshes, notes)
    } else {
        (
            Vec::new(),
            vec![Note {
                what: "reference ray sets".into(),
                reason: format!(
                    "{} not found (set PRISM_SCENES or --scenes to check against Embree's hits){}",
                    dir.display(),
                    if required {
                        "; PRISM_REQUIRE_SCENES=1 makes this a failure"
                    } else {
                        ""
                    }
                ),
                fails: required,
            }],
        )
    };
    if meshes.is_empty() && notes.is_empty() {
        notes.push(Note {
            what: "reference ray sets".into(),
            reason: format!("no M.S.rays files in {}", dir.display()),
            fails: required,
        });
    }
    Cases {
        meshes,
        images: image_cases(),
        notes,
    }
}

/// Run the suite on the backends and cases `options` describe.
pub fn run_suite(options: &Options, log: &mut dyn FnMut(&str)) -> Report {
    let config = if options.quick {
        Config::quick()
    } else {
        Config::full()
    };
    let cases = builtin_cases(options.scenes.as_deref());
    run(
        candidates(options.backends.as_deref()),
        &cases,
        &config,
        log,
    )
}
