//! The `prism` command line: render, bench, info, conformance, animate.

// `CliError` holds a `prism::Error`, whose largest variants (a transform's
// twelve floats, a ray's eight) pass clippy's size bound for `Err`. It is the
// command line's one error, returned once per run to `main` and printed, so
// its size costs nothing there.
#![allow(clippy::result_large_err)]

use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use prism::{
    Backend, BackendChoice, Camera, Error, Image, Integrator, Material, OpenOptions, PixelFormat,
    Progress, RenderSettings, Scene, Sun,
};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

mod cli;

use cli::bench::{bench, ms};

#[derive(Parser)]
#[command(
    name = "prism",
    version,
    about = "Prism: one ray tracing core, CPU, CUDA and wgpu backends that agree"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Render a built-in scene or a mesh to PNG (or linear EXR); with --record,
    /// also write every bounce's rays and hits of the frame's paths.
    Render(RenderArgs),
    /// Time a scene render (stage table), moving frames of a two-level scene, or a
    /// ray file on a mesh, an instanced set or a built-in scene (a recorded
    /// bounce: Mrays/s, hits checked), median of N runs.
    Bench(BenchArgs),
    /// List the backends found, their devices, and why any was skipped.
    Info,
    /// Check every backend against Embree's hits, a brute-force oracle and each
    /// other; write an HTML report. Exits non-zero when anything fails.
    Conformance(ConformanceArgs),
    /// Render a camera path under a frame budget, AO rays and shadows chosen
    /// per frame, beside the same path with the start's settings kept;
    /// write frames.csv, fixed.csv and plot.svg.
    Animate(cli::animate::AnimateArgs),
}

#[derive(Args, Clone)]
struct SceneArgs {
    /// Built-in scene: rtiow, whitted19, cornell, instances, sunlit, city, city-triangles
    /// (default rtiow).
    #[arg(long, conflicts_with = "mesh")]
    scene: Option<String>,
    /// This mesh (.obj or .ply) instead of a built-in scene (rendered; traced by `bench --rays`).
    #[arg(long)]
    mesh: Option<PathBuf>,
    /// This height map (8- or 16-bit PNG; RGB as grey 77/150/29) instead of a built-in
    /// scene, seen as the city is: unit columns under a sun.
    #[arg(long, conflicts_with_all = ["scene", "mesh"])]
    heightfield: Option<PathBuf>,
    /// Backend: auto, cpu, cuda, wgpu (PRISM_BACKEND, when set and not empty, overrides).
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Image width (default: the scene's; 512 for a mesh).
    #[arg(long)]
    width: Option<u32>,
    /// Image height (default: the scene's; 512 for a mesh).
    #[arg(long)]
    height: Option<u32>,
    /// Samples per pixel (default: the scene's; 4 for a mesh).
    #[arg(long)]
    spp: Option<u32>,
    /// Maximum path depth, or mirror bounces for whitted (default: the scene's;
    /// refused with ao, which traces no bounces).
    #[arg(long)]
    depth: Option<u32>,
    /// Frame seed.
    #[arg(long, default_value_t = 0)]
    seed: u32,
    /// Integrator: path, whitted, ao (default: the scene's; ao for a mesh).
    #[arg(long)]
    integrator: Option<String>,
    /// AO rays per sample (ao integrator only; default 8).
    #[arg(long)]
    ao_samples: Option<u32>,
    /// Fractional part of the AO ray count, in [0, 1): this share of the
    /// pixels (in 16 x 8 blocks) traces one more AO ray (ao integrator only;
    /// default 0).
    #[arg(long)]
    ao_extra: Option<f32>,
    /// AO ray length (ao integrator only; default 1, for a mesh a tenth of its
    /// bounding box's diagonal).
    #[arg(long)]
    ao_distance: Option<f32>,
    /// AO also traces a shadow ray to the key light (ao integrator only).
    #[arg(long)]
    ao_shadows: bool,
    /// Light the scene with a sun: a sphere at x,y,z of this radius and
    /// radiance (white, times --sun-color), sampled directly by the path
    /// integrator; replaces the scene's own sun (e.g. sunlit's). Example:
    /// --sun 60,80,40,4,150.
    #[arg(long, value_parser = parse_sun, allow_hyphen_values = true)]
    sun: Option<[f32; 5]>,
    /// The colour the sun's radiance is multiplied by (r,g,b; with --sun or a
    /// scene that has a sun).
    #[arg(long, value_parser = parse_rgb)]
    sun_color: Option<[f32; 3]>,
    /// Find the sun only by chance hits (no next-event estimation), to compare
    /// against the default, which samples it directly (path integrator only).
    #[arg(long)]
    no_sun_nee: bool,
    /// Worker threads of the CPU backend, whenever it is the backend that opens
    /// (0 = all cores); ignored, with a warning, when a GPU backend opens.
    #[arg(long, default_value_t = 0)]
    threads: usize,
}

#[derive(Args)]
struct RenderArgs {
    #[command(flatten)]
    scene: SceneArgs,
    /// Output file: .png (sRGB 8-bit) or .exr (linear float); checked before rendering.
    #[arg(long, default_value = "prism.png")]
    out: PathBuf,
    /// Also record the frame's paths into this directory (made if missing;
    /// files of an earlier recording there are replaced), traced on the CPU
    /// whatever the backend: bounceK.rays (the rays of every path's K-th
    /// closest-hit query, bounce 0 the camera rays; 32 bytes a ray, as in
    /// shared/scenes) and bounceK.hits (t, primitive; .ihits with the instance
    /// for a two-level scene), pixel by pixel then sample by sample. Path
    /// integrator only. Replay with bench --scene NAME --rays DIR/bounceK.rays.
    #[arg(long)]
    record: Option<PathBuf>,
}

#[derive(Args)]
struct BenchArgs {
    #[command(flatten)]
    scene: SceneArgs,
    /// Runs to take the median of (at least 1).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Trace this ray file instead of rendering: on --mesh (closest and any
    /// hit), or on the built-in --scene (closest hit alone: a bounce that
    /// render --record wrote, or any .rays file).
    #[arg(long)]
    rays: Option<PathBuf>,
    /// Reference hits for --rays (.hits; .ihits with --instances or a two-level
    /// --scene): report agreement (match, tie, mismatch); exits non-zero when
    /// closest hits (or, on --mesh, occlusion) disagree.
    #[arg(long, requires = "rays")]
    hits: Option<PathBuf>,
    /// With --rays on a built-in --scene: trace the file's rays repeated to this
    /// many a call, so that a GPU is filled as by an engine's frame of rays (the
    /// rate is the kernel's, from the device clock; hits are checked on the first
    /// copy).
    #[arg(long, requires = "rays", value_parser = clap::value_parser!(u64).range(1..=(1 << 26)))]
    batch: Option<u64>,
    /// Place --mesh once per transform of this .instances file (in file order)
    /// and trace --rays on that two-level scene; --hits is then an .ihits file
    /// (instance ids compared too).
    #[arg(long, requires = "rays")]
    instances: Option<PathBuf>,
    /// Time moving frames of a two-level scene: move this many instances each
    /// frame, update the scene (top level rebuilt), render.
    #[arg(long, conflicts_with_all = ["rays", "mesh"])]
    moving: Option<u32>,
    /// Frames to take the median of with --moving (after one warm-up frame).
    #[arg(long, default_value_t = 20, requires = "moving",
          value_parser = clap::value_parser!(u32).range(1..))]
    frames: u32,
    /// With --mesh --rays: also trace the same rays on another tree (`fast`:
    /// Morton codes, built on the device by the GPU backends, by core on the
    /// host by the CPU; `clustered`: the Morton order clustered pair by pair,
    /// built on the device by CUDA and wgpu) and report its build ms, SAH cost and
    /// Mrays/s beside the SAH tree's, with their ratios.
    #[arg(long, value_enum, requires = "rays", conflicts_with = "instances")]
    build: Option<TreeChoice>,
}

/// The trees `prism bench --build` compares with the host's SAH tree.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum TreeChoice {
    /// The fast Morton-code tree (`BuildQuality::Fast`).
    Fast,
    /// The clustered tree (`BuildQuality::Clustered`).
    Clustered,
}

impl TreeChoice {
    /// The name `--build` takes, which the tables print.
    pub(crate) fn name(self) -> &'static str {
        match self {
            TreeChoice::Fast => "fast",
            TreeChoice::Clustered => "clustered",
        }
    }

    /// The build quality this choice names.
    pub(crate) fn quality(self) -> prism::BuildQuality {
        match self {
            TreeChoice::Fast => prism::BuildQuality::Fast,
            TreeChoice::Clustered => prism::BuildQuality::Clustered,
        }
    }
}

/// What the command line reports: Prism's errors, and its own.
#[derive(Debug, thiserror::Error)]
enum CliError {
    /// An error of the library.
    #[error(transparent)]
    Prism(#[from] Error),
    /// `--out` names a format this build cannot write.
    #[error("--out {path}: cannot write {found}: use .png (sRGB 8-bit) or .exr (linear float)")]
    OutFormat { path: String, found: String },
    /// `--out` is in a directory that does not exist.
    #[error("--out {path}: the directory {dir} does not exist")]
    OutDir { path: String, dir: String },
    /// `--out` cannot be written: it is a directory, or creating it fails.
    #[error("--out {path}: cannot write it: {reason}")]
    OutUnwritable { path: String, reason: String },
    /// Settings given for an integrator that the render does not use.
    #[error("{flags} {verb} not apply to the {integrator} integrator, which this render uses")]
    NotForIntegrator {
        flags: String,
        /// "does" or "do", as `flags` names one or more.
        verb: &'static str,
        integrator: &'static str,
    },
    /// A mesh too small or too large to frame: its render's camera and AO
    /// distance come from its size.
    #[error(
        "--mesh {path}: its bounding box's diagonal is {diagonal}: a mesh render places the \
         camera and sets the AO distance by the mesh's size, so it needs a finite size above \
         zero (bench --rays traces any mesh)"
    )]
    MeshExtent { path: String, diagonal: f32 },
    /// Opening the backend that `PRISM_BACKEND` chose, in place of `--backend`, failed.
    #[error("PRISM_BACKEND={value} (overriding --backend {flag}): {source}")]
    Overridden {
        value: String,
        flag: String,
        source: Error,
    },
    /// Arguments that do not go together.
    #[error("{0}")]
    Usage(&'static str),
    /// `--rays` names a file with no rays: there is nothing to time.
    #[error("--rays {path} holds no rays")]
    NoRays { path: String },
    /// `--hits` does not hold one reference hit per ray of `--rays`.
    #[error(
        "--hits {hits} holds {hit_count} reference hits, but --rays {rays} holds {ray_count} rays: \
         they must be the same ray set"
    )]
    HitsLength {
        hits: String,
        hit_count: usize,
        rays: String,
        ray_count: usize,
    },
    /// The backend's answers disagree with `--hits`.
    #[error(
        "{backend} disagrees with {hits}: closest hit mismatches on {mismatches} of {total} rays, \
         occlusion on {occluded}"
    )]
    Disagrees {
        backend: String,
        hits: String,
        mismatches: usize,
        total: usize,
        occluded: usize,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Render(a) => render(a),
        Command::Bench(a) => bench(a),
        Command::Info => info(),
        Command::Conformance(a) => return conformance(a),
        Command::Animate(a) => cli::animate::animate(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Whether `path` is a writable image name: a `.png` or `.exr` file (either case)
/// in a directory that exists, that can be opened for writing (probed without
/// changing it: an existing file is opened and left as it is, a new one is
/// created and removed again). Returns whether it is EXR. Checked before the
/// render, so that a long render is never thrown away for want of a place to
/// write it.
fn check_out(path: &Path) -> Result<bool, CliError> {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let exr = match ext.as_deref() {
        Some("png") => false,
        Some("exr") => true,
        other => {
            return Err(CliError::OutFormat {
                path: path.display().to_string(),
                found: other.map_or_else(|| "a file without extension".into(), |e| format!(".{e}")),
            });
        }
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(CliError::OutDir {
            path: path.display().to_string(),
            dir: dir.display().to_string(),
        });
    }
    let unwritable = |reason: String| CliError::OutUnwritable {
        path: path.display().to_string(),
        reason,
    };
    if path.is_dir() {
        return Err(unwritable("it is a directory".into()));
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| unwritable(e.to_string()))?;
    if !existed {
        std::fs::remove_file(path).map_err(|e| unwritable(e.to_string()))?;
    }
    Ok(exr)
}

/// `n` comma-separated numbers, for the sun's flags.
fn parse_floats<const N: usize>(text: &str, what: &str) -> Result<[f32; N], String> {
    let values = text
        .split(',')
        .map(|v| v.trim().parse::<f32>().map_err(|e| format!("{v:?}: {e}")))
        .collect::<Result<Vec<f32>, String>>()?;
    values
        .try_into()
        .map_err(|v: Vec<f32>| format!("expected {what} ({N} numbers), got {} numbers", v.len()))
}

fn parse_sun(text: &str) -> Result<[f32; 5], String> {
    parse_floats(text, "x,y,z,radius,radiance")
}

fn parse_rgb(text: &str) -> Result<[f32; 3], String> {
    parse_floats(text, "r,g,b")
}

/// The scene, camera, settings and size the arguments describe. Settings for an
/// integrator the render does not use are refused, not ignored.
fn setup(a: &SceneArgs) -> Result<(String, Scene, Camera, RenderSettings, u32, u32), CliError> {
    let (name, scene, camera, mut settings, w, h) = match &a.mesh {
        Some(path) => {
            let mesh = prism::mesh::load_mesh(path)?;
            let (scene, camera) =
                prism::mesh_scene(&mesh, Material::lambertian(glam::Vec3::splat(0.7)))?;
            let diagonal = mesh.bounds().diagonal();
            if !(diagonal.is_finite() && diagonal > 0.0) {
                return Err(CliError::MeshExtent {
                    path: path.display().to_string(),
                    diagonal,
                });
            }
            let settings = RenderSettings {
                integrator: Integrator::Ao,
                spp: 4,
                ao_distance: 0.1 * diagonal,
                ..Default::default()
            };
            (
                path.display().to_string(),
                scene,
                camera,
                settings,
                512,
                512,
            )
        }
        None => {
            let p = match &a.heightfield {
                Some(path) => {
                    let map = prism::height_map::load_png(path)?;
                    prism::city::height_map_preset(
                        "heightfield",
                        &map,
                        prism::city::Columns::Heightfield,
                    )?
                }
                None => prism::builtin_scene(a.scene.as_deref().unwrap_or("rtiow"))?,
            };
            (
                p.name.to_string(),
                p.scene,
                p.camera,
                p.settings,
                p.width,
                p.height,
            )
        }
    };
    let mut scene = scene;
    if let Some([x, y, z, radius, radiance]) = a.sun {
        scene.sun = Some(Sun::new(
            glam::Vec3::new(x, y, z),
            radius,
            glam::Vec3::ONE,
            radiance,
        ));
    }
    if let Some(rgb) = a.sun_color {
        match &mut scene.sun {
            Some(sun) => sun.color = glam::Vec3::from_array(rgb),
            None => {
                return Err(CliError::Usage(
                    "--sun-color needs --sun or a scene with a sun",
                ));
            }
        }
    }
    settings.sun_nee = !a.no_sun_nee;
    if let Some(i) = &a.integrator {
        settings.integrator = Integrator::from_name(i)?;
    }
    settings.spp = a.spp.unwrap_or(settings.spp);
    settings.max_depth = a.depth.unwrap_or(settings.max_depth);
    settings.seed = a.seed;
    settings.ao_samples = a.ao_samples.unwrap_or(settings.ao_samples);
    settings.ao_extra = a.ao_extra.unwrap_or(settings.ao_extra);
    settings.ao_distance = a.ao_distance.unwrap_or(settings.ao_distance);
    settings.ao_shadows |= a.ao_shadows;
    let refused: &[(&str, bool)] = if settings.integrator == Integrator::Ao {
        &[
            ("--depth", a.depth.is_some()),
            ("--no-sun-nee", a.no_sun_nee),
        ]
    } else {
        &[
            ("--ao-samples", a.ao_samples.is_some()),
            ("--ao-extra", a.ao_extra.is_some()),
            ("--ao-distance", a.ao_distance.is_some()),
            ("--ao-shadows", a.ao_shadows),
            (
                "--no-sun-nee",
                a.no_sun_nee && settings.integrator != Integrator::Path,
            ),
        ]
    };
    let given: Vec<&str> = refused.iter().filter(|f| f.1).map(|f| f.0).collect();
    if !given.is_empty() {
        return Err(CliError::NotForIntegrator {
            flags: given.join(", "),
            verb: if given.len() == 1 { "does" } else { "do" },
            integrator: settings.integrator.name(),
        });
    }
    Ok((
        name,
        scene,
        camera,
        settings,
        a.width.unwrap_or(w),
        a.height.unwrap_or(h),
    ))
}

/// Open the backend the arguments ask for (`PRISM_BACKEND` overriding, as in
/// [`prism::open`]), saying which was taken. `--threads` applies whenever the
/// CPU backend is the one that opens; a warning says so when a GPU backend did.
fn open_backend(a: &SceneArgs) -> Result<Box<dyn Backend + Send>, CliError> {
    // An error of the backend `PRISM_BACKEND` chose says so, since the user
    // may have asked for another with --backend.
    let overridden = |source: Error| match prism::env_override() {
        Some(value) => CliError::Overridden {
            value,
            flag: a.backend.clone(),
            source,
        },
        None => CliError::Prism(source),
    };
    let choice = BackendChoice::from_name(&a.backend)?;
    let opened = prism::open_with(
        choice,
        &OpenOptions {
            cpu_threads: a.threads,
        },
    )
    .map_err(overridden)?;
    eprintln!("{}", opened.report());
    let name = opened.backend.info().name;
    if a.threads > 0 && name != "cpu" {
        eprintln!(
            "warning: --threads {} ignored: it sets the CPU backend's threads, and the {name} backend opened",
            a.threads
        );
    }
    Ok(opened.backend)
}

/// A progress bar on stderr (hidden when stderr is not a terminal).
struct Bar(ProgressBar);

impl Progress for Bar {
    fn advance(&self, done: u64, total: u64) {
        self.0.set_length(total);
        self.0.set_position(done);
    }
}

/// A progress bar on stderr saying `message` (hidden when stderr is not a terminal).
fn progress_bar(message: String) -> ProgressBar {
    let bar = ProgressBar::new(0).with_style(
        ProgressStyle::with_template(
            "{spinner} {msg} [{bar:40}] {percent}% {elapsed_precise} (eta {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(message);
    bar
}

fn render(a: RenderArgs) -> Result<(), CliError> {
    let exr = check_out(&a.out)?;
    let (name, scene, camera, settings, w, h) = setup(&a.scene)?;
    // The recording's directory and integrator are checked before the
    // render, so that a long render is never thrown away for them.
    if let Some(dir) = &a.record {
        if settings.integrator != Integrator::Path {
            return Err(CliError::Usage(
                "--record follows the path integrator's paths: render with --integrator path",
            ));
        }
        prism::record::prepare_dir(dir)?;
    }
    let mut backend = open_backend(&a.scene)?;
    let mut image = Image::new(
        w,
        h,
        if exr {
            PixelFormat::LinearF32
        } else {
            PixelFormat::Srgba8
        },
    )?;
    let start = Instant::now();
    let scene_stats = backend.set_scene(&scene)?;
    let bar = progress_bar(format!("rendering {name} {w}x{h}"));
    let stats = backend.render(&camera, &settings, &mut image, &Bar(bar.clone()))?;
    bar.finish_and_clear();
    let elapsed = start.elapsed();
    save(&image, &a.out)?;
    println!(
        "{name} {w}x{h} {} spp {} on {} [{}]: {:.2} s (build {:.1} ms, trace {:.2} s), {:.1} Mrays/s -> {}",
        settings.spp,
        settings.integrator.name(),
        backend.info().name,
        backend.info().device,
        elapsed.as_secs_f64(),
        ms(scene_stats.build),
        stats.trace.as_secs_f64(),
        stats.mrays_per_s(),
        a.out.display()
    );
    if let Some(dir) = &a.record {
        cli::record::record(dir, &name, &scene, &camera, &settings, w, h)?;
    }
    Ok(())
}

fn save(image: &Image, path: &Path) -> Result<(), Error> {
    let io = |e: image::ImageError| Error::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    match image.format() {
        PixelFormat::LinearF32 => {
            let data: Vec<f32> = image.linear().iter().flatten().copied().collect();
            let buf = image::Rgba32FImage::from_raw(image.width(), image.height(), data)
                .ok_or_else(|| Error::Io {
                    path: path.display().to_string(),
                    message: "image size mismatch".into(),
                })?;
            image::DynamicImage::ImageRgba32F(buf)
                .save(path)
                .map_err(io)
        }
        PixelFormat::Srgba8 => image::save_buffer(
            path,
            &image.to_rgba8_bytes()?,
            image.width(),
            image.height(),
            image::ExtendedColorType::Rgba8,
        )
        .map_err(io),
    }
}

fn info() -> Result<(), CliError> {
    for choice in [BackendChoice::Cuda, BackendChoice::Wgpu, BackendChoice::Cpu] {
        match prism::open_with_env(choice, None) {
            Ok(o) => {
                let i = o.backend.info();
                // The CPU backend's limit is the address space's (isize::MAX).
                let max_buffer = if i.max_buffer_bytes >= isize::MAX as u64 {
                    "no buffer limit".to_string()
                } else {
                    format!("max buffer {} MiB", i.max_buffer_bytes >> 20)
                };
                // Auto selection skips software GPU adapters (prism::open).
                let software = if i.software && choice != BackendChoice::Cpu {
                    " [software: auto skips it; use --backend wgpu]"
                } else {
                    ""
                };
                println!("{:>5}: {}{software} ({max_buffer})", i.name, i.device);
            }
            Err(e) => println!(
                "{:>5}: not available: {}",
                format!("{choice:?}").to_lowercase(),
                match e {
                    Error::BackendUnavailable { reason, .. } => reason,
                    e => e.to_string(),
                }
            ),
        }
    }
    // The override `render` and `bench` apply: set and not blank.
    if let Some(v) = prism::env_override() {
        match BackendChoice::from_name(&v) {
            Ok(_) => println!("PRISM_BACKEND={v} overrides --backend"),
            Err(e) => {
                println!("PRISM_BACKEND={v} is invalid, so render and bench refuse to run: {e}")
            }
        }
    }
    Ok(())
}

#[derive(Args)]
struct ConformanceArgs {
    /// Directory for the report (index.html and images).
    #[arg(long)]
    out: PathBuf,
    /// Backends to check, comma-separated (cpu, wgpu, cuda); each must open.
    /// Default: every backend, reporting those that cannot open as skipped.
    #[arg(long, value_delimiter = ',')]
    backends: Option<Vec<String>>,
    /// A shorter run: fewer reference rays, smaller images, one seed.
    #[arg(long)]
    quick: bool,
    /// Reference meshes, rays and hits (default: $PRISM_SCENES, else the
    /// shared/scenes directory beside the source checkout this binary was built
    /// from; a missing default directory is reported, and fails only under
    /// PRISM_REQUIRE_SCENES=1).
    #[arg(long)]
    scenes: Option<PathBuf>,
}

fn conformance(a: ConformanceArgs) -> ExitCode {
    let backends = match a.backends.as_ref().map(|names| {
        names
            .iter()
            .map(|n| match BackendChoice::from_name(n)? {
                BackendChoice::Auto => Err(Error::UnknownName {
                    what: "backend for --backends",
                    name: n.clone(),
                    known: "cpu, wgpu, cuda",
                }),
                c => Ok(c),
            })
            .collect::<Result<Vec<_>, Error>>()
    }) {
        Some(Err(e)) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
        Some(Ok(list)) => {
            // Each backend once: the report names its images by backend.
            if let Some((k, _)) = list
                .iter()
                .enumerate()
                .find(|(k, c)| list[..*k].contains(c))
            {
                let name = a.backends.as_ref().map_or("", |n| n[k].as_str());
                eprintln!("error: --backends lists {name} more than once");
                return ExitCode::FAILURE;
            }
            Some(list)
        }
        None => None,
    };
    let options = prism::conformance::Options {
        backends,
        quick: a.quick,
        scenes: a.scenes,
    };
    // The report's directory is made before the run, so that a place it cannot
    // be written fails at once, not after the whole suite.
    let img = a.out.join("img");
    if let Err(e) = std::fs::create_dir_all(&img) {
        eprintln!(
            "error: --out {}: cannot write the report there: {e}",
            a.out.display()
        );
        return ExitCode::FAILURE;
    }
    let start = Instant::now();
    let report = prism::conformance::run_suite(&options, &mut |line| eprintln!("  {line}"));
    println!(
        "{} in {:.1} s",
        report.summary(),
        start.elapsed().as_secs_f64()
    );
    match prism::conformance::write_html(&report, &a.out) {
        Ok(index) => eprintln!("report: {}", index.display()),
        Err(e) => {
            eprintln!("error: writing the report: {e}");
            return ExitCode::FAILURE;
        }
    }
    match report.failures().first() {
        None => ExitCode::SUCCESS,
        Some(first) => {
            eprintln!("first failure: {first}");
            ExitCode::FAILURE
        }
    }
}
