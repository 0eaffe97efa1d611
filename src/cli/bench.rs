//! `prism bench`: the dispatch between its modes, a scene render's stage
//! table, and the flat `--mesh --rays [--hits]` mode, whose pieces the
//! instanced mode ([`super::instanced`]) and ray files on a built-in scene
//! ([`super::replay`]) share.

use crate::{Bar, BenchArgs, CliError, SceneArgs, open_backend, progress_bar, setup};
use indicatif::{ProgressBar, ProgressStyle};
use prism::reference::AgreementCounts;
use prism::{
    Accel, Backend, Hit, Image, Material, NoProgress, PixelFormat, Ray, RenderStats, Scene, lbvh,
};
use std::path::Path;
use std::time::{Duration, Instant};

/// Milliseconds.
pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The median: the middle value, or the mean of the two middle ones.
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2],
        _ => 0.5 * (v[n / 2 - 1] + v[n / 2]),
    }
}

/// `prism bench`: a ray file (flat or instanced), moving frames, or a render.
pub(crate) fn bench(a: BenchArgs) -> Result<(), CliError> {
    if a.batch.is_some() && (a.scene.mesh.is_some() || a.instances.is_some()) {
        return Err(CliError::Usage(
            "--batch repeats the rays of a built-in --scene's ray file; a --mesh ray file is traced as it is",
        ));
    }
    match (&a.rays, &a.scene.mesh, &a.instances) {
        (Some(rays), Some(mesh), Some(instances)) => {
            super::instanced::bench_instanced(&a, mesh, instances, rays)
        }
        (Some(rays), Some(mesh), None) => bench_rays(&a, mesh, rays),
        (Some(_), None, Some(_)) => Err(CliError::Usage("--instances needs --mesh and --rays")),
        (Some(rays), None, None) => match &a.scene.scene {
            Some(name) => super::replay::bench_scene_rays(&a, name, rays),
            None => Err(CliError::Usage(
                "--rays needs --mesh (a mesh file) or --scene (a built-in scene)",
            )),
        },
        (None, _, Some(_)) => Err(CliError::Usage("--instances needs --mesh and --rays")),
        (None, _, None) if a.moving.is_some() => super::moving::bench_moving(&a),
        (None, _, None) => bench_render(&a),
    }
}

/// How long `prism bench` renders untimed frames back to back on a GPU
/// before it times any: the device's clock climbs back from idle in steps
/// over one to three seconds of steady work (bench/RESULTS.md).
const GPU_WARM_UP: Duration = Duration::from_millis(1500);

fn bench_render(a: &BenchArgs) -> Result<(), CliError> {
    let (name, scene, camera, settings, w, h) = setup(&a.scene)?;
    let mut backend = open_backend(&a.scene)?;
    let mut image = Image::new(w, h, PixelFormat::Srgba8)?;
    // Untimed warm-up: kernel compilation, caches, page faults; on a GPU,
    // frames back to back for GPU_WARM_UP, so that the timed frames run at
    // the clock the device keeps under load (after the idle of start-up the
    // driver holds it low for a second or more: wgpu's `instances` AO frame
    // read 21 ms in a fresh process, 6.6 ms once warm).
    backend.set_scene(&scene)?;
    let bar = progress_bar(format!("bench {name} {w}x{h}: warm-up"));
    let started = Instant::now();
    backend.render(&camera, &settings, &mut image, &Bar(bar.clone()))?;
    if backend.info().name != "cpu" {
        while started.elapsed() < GPU_WARM_UP {
            backend.render(&camera, &settings, &mut image, &NoProgress)?;
        }
    }
    bar.finish_and_clear();
    let mut runs: Vec<(RenderStats, RenderStats)> = Vec::new();
    for k in 1..=a.runs {
        let s = backend.set_scene(&scene)?;
        let bar = progress_bar(format!("bench {name} {w}x{h}: run {k}/{}", a.runs));
        let r = backend.render(&camera, &settings, &mut image, &Bar(bar.clone()))?;
        bar.finish_and_clear();
        runs.push((s, r));
    }
    let col = |f: &dyn Fn(&(RenderStats, RenderStats)) -> f64| median(runs.iter().map(f).collect());
    let info = backend.info();
    println!(
        "bench {name} {w}x{h} {} spp depth {} {} on {} [{}], median of {} runs ({:?})",
        settings.spp,
        settings.max_depth,
        settings.integrator.name(),
        info.name,
        info.device,
        a.runs,
        runs[0].1.timing
    );
    println!("| build ms | upload ms | trace ms | download ms | frame ms | rays | Mrays/s |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {:.2} | {:.2} | {:.3} | {:.3} | {:.3} | {} | {:.1} |",
        col(&|r| ms(r.0.build)),
        col(&|r| ms(r.0.upload)),
        col(&|r| ms(r.1.trace)),
        col(&|r| ms(r.1.download)),
        col(&|r| ms(r.1.total)),
        runs[0].1.rays,
        col(&|r| r.1.mrays_per_s()),
    );
    Ok(())
}

/// Refuse render settings in a mode that traces a ray file as it is.
pub(crate) fn refuse_render_settings(s: &SceneArgs, mode: &'static str) -> Result<(), CliError> {
    let render_only = s.width.is_some()
        || s.height.is_some()
        || s.spp.is_some()
        || s.depth.is_some()
        || s.seed != 0
        || s.integrator.is_some()
        || s.ao_samples.is_some()
        || s.ao_extra.is_some()
        || s.ao_distance.is_some()
        || s.ao_shadows;
    if render_only {
        return Err(CliError::Usage(mode));
    }
    Ok(())
}

/// The rays of `path`, at least one.
pub(crate) fn read_some_rays(path: &Path) -> Result<Vec<Ray>, CliError> {
    let rays = prism::rays::read_rays(path)?;
    if rays.is_empty() {
        return Err(CliError::NoRays {
            path: path.display().to_string(),
        });
    }
    Ok(rays)
}

/// A reference of `len` entries for `rays`: one per ray, or the error that
/// says they are not the same ray set.
pub(crate) fn check_reference_length(
    hits_path: &Path,
    len: usize,
    rays_path: &Path,
    rays: usize,
) -> Result<(), CliError> {
    if len != rays {
        return Err(CliError::HitsLength {
            hits: hits_path.display().to_string(),
            hit_count: len,
            rays: rays_path.display().to_string(),
            ray_count: rays,
        });
    }
    Ok(())
}

/// What timing a ray file gave: per run, the scene's build and both
/// traversals' rates, and the answers of the last run.
pub(crate) struct RayRuns {
    /// Build ms per run.
    pub build: Vec<f64>,
    /// Closest-hit Mrays/s per run.
    pub closest: Vec<f64>,
    /// Any-hit Mrays/s per run.
    pub occluded: Vec<f64>,
    /// Closest hits.
    pub hits: Vec<Hit>,
    /// Any-hit answers.
    pub occ: Vec<bool>,
}

/// Set `scene` and trace `rays` through `intersect` and `occluded`: one
/// untimed warm-up, then `runs` timed runs (each with its own `set_scene`).
pub(crate) fn time_rays(
    backend: &mut dyn Backend,
    scene: &Scene,
    rays: &[Ray],
    runs: u32,
    label: String,
) -> Result<RayRuns, CliError> {
    let mut r = RayRuns {
        build: Vec::new(),
        closest: Vec::new(),
        occluded: Vec::new(),
        hits: vec![Hit::MISS; rays.len()],
        occ: vec![false; rays.len()],
    };
    let bar = ProgressBar::new(u64::from(runs) + 1).with_style(
        ProgressStyle::with_template(
            "{spinner} {msg} [{bar:40}] {pos}/{len} runs {elapsed_precise}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(label);
    // One untimed warm-up, as for a render.
    backend.set_scene(scene)?;
    backend.intersect(rays, &mut r.hits)?;
    backend.occluded(rays, &mut r.occ)?;
    bar.inc(1);
    for _ in 0..runs {
        r.build.push(ms(backend.set_scene(scene)?.build));
        let s = backend.intersect(rays, &mut r.hits)?;
        r.closest
            .push(rays.len() as f64 / s.trace.as_secs_f64() / 1e6);
        let s = backend.occluded(rays, &mut r.occ)?;
        r.occluded
            .push(rays.len() as f64 / s.trace.as_secs_f64() / 1e6);
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(r)
}

/// Print the agreement of a run's answers with a reference, and fail when
/// any closest hit mismatches or any any-hit answer disagrees with
/// whether the reference hits.
pub(crate) fn judge_agreement(
    backend: &str,
    hits_path: &Path,
    c: &AgreementCounts,
    occ: &[bool],
    reference_hits: impl Iterator<Item = bool>,
) -> Result<(), CliError> {
    let occ_bad = occ
        .iter()
        .zip(reference_hits)
        .filter(|(o, r)| **o != *r)
        .count();
    println!(
        "agreement with {}: {} rays, {} match, {} ties, {} mismatches (first: {:?}); occluded disagrees on {}",
        hits_path.display(),
        c.total,
        c.matches,
        c.ties,
        c.mismatches,
        c.first_mismatch,
        occ_bad
    );
    if !c.passed() || occ_bad > 0 {
        return Err(CliError::Disagrees {
            backend: backend.to_string(),
            hits: hits_path.display().to_string(),
            mismatches: c.mismatches,
            total: c.total,
            occluded: occ_bad,
        });
    }
    Ok(())
}

fn bench_rays(a: &BenchArgs, mesh_path: &Path, rays_path: &Path) -> Result<(), CliError> {
    refuse_render_settings(
        &a.scene,
        "--rays traces the ray file as it is: --width, --height, --spp, --depth, --seed, \
         --integrator and --ao-* apply to renders only",
    )?;
    let mesh = prism::mesh::load_mesh(mesh_path)?;
    let (scene, _) = prism::mesh_scene(&mesh, Material::lambertian(glam::Vec3::splat(0.7)))?;
    let rays = read_some_rays(rays_path)?;
    // The reference is read and checked before any timing, so that a wrong
    // file fails at once.
    let reference = match &a.hits {
        Some(hits_path) => {
            let reference = prism::rays::read_hits(hits_path)?;
            check_reference_length(hits_path, reference.len(), rays_path, rays.len())?;
            Some((hits_path, reference))
        }
        None => None,
    };
    let mut backend = open_backend(&a.scene)?;
    let label = format!("tracing {} rays of {}", rays.len(), rays_path.display());
    let r = time_rays(backend.as_mut(), &scene, &rays, a.runs, label)?;
    let info = backend.info();
    println!(
        "bench {} {} ({} tris, {} rays) on {} [{}], median of {}: build {:.1} ms, closest {:.2} Mrays/s, occluded {:.2} Mrays/s",
        mesh_path.display(),
        rays_path.display(),
        mesh.triangles.len(),
        rays.len(),
        info.name,
        info.device,
        a.runs,
        median(r.build.clone()),
        median(r.closest.clone()),
        median(r.occluded.clone())
    );
    print_tree_bytes(backend.as_ref(), mesh.triangles.len());
    if let Some((hits_path, reference)) = &reference {
        let c = AgreementCounts::compare(&rays, &r.hits, reference);
        judge_agreement(
            info.name,
            hits_path,
            &c,
            &r.occ,
            reference.iter().map(|h| h.1 != Hit::NO_PRIM),
        )?;
    }
    if let Some(choice) = a.build {
        let mut fast_scene = scene.clone();
        fast_scene.build_quality = choice.quality();
        let name = choice.name();
        let label = format!("tracing {} rays on the {name} tree", rays.len());
        let f = time_rays(backend.as_mut(), &fast_scene, &rays, a.runs, label)?;
        // The SAH cost of each tree as core builds it (the device builds the
        // same tree).
        let (accel, fast_accel) = (Accel::build(&scene)?, Accel::build(&fast_scene)?);
        let (sah, fast_sah) = (
            lbvh::sah_cost(accel.nodes()),
            lbvh::sah_cost(fast_accel.nodes()),
        );
        // The work a ray of these takes on each tree (core's counting walk):
        // closer to the trace speed than the SAH cost, which assumes rays
        // spread evenly.
        let (w0, w1) = (work_a_ray(&accel, &rays), work_a_ray(&fast_accel, &rays));
        let (b0, b1) = (median(r.build), median(f.build));
        let (c0, c1) = (median(r.closest), median(f.closest));
        let (o0, o1) = (median(r.occluded), median(f.occluded));
        println!(
            "| tree | build ms | SAH cost | node steps + primitive tests a ray | closest Mrays/s | occluded Mrays/s |"
        );
        println!("|---|---:|---:|---:|---:|---:|");
        println!("| SAH (host) | {b0:.2} | {sah:.1} | {w0:.2} | {c0:.2} | {o0:.2} |");
        println!("| {name} | {b1:.2} | {fast_sah:.1} | {w1:.2} | {c1:.2} | {o1:.2} |");
        println!(
            "| {name} / SAH | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
            b1 / b0,
            fast_sah / sah,
            w1 / w0,
            c1 / c0,
            o1 / o0
        );
        if let Some((hits_path, reference)) = &reference {
            let c = AgreementCounts::compare(&rays, &f.hits, reference);
            judge_agreement(
                info.name,
                hits_path,
                &c,
                &f.occ,
                reference.iter().map(|h| h.1 != Hit::NO_PRIM),
            )?;
        }
    }
    Ok(())
}

/// Node steps plus primitive tests a closest-hit ray of `rays` takes on
/// `accel`'s tree, by core's counting walk.
fn work_a_ray(accel: &Accel, rays: &[Ray]) -> f64 {
    let work: f64 = rays
        .iter()
        .map(|r| {
            let (_, c) = prism_core::tune::counting::counted_closest(accel, r);
            c.node_steps + c.prim_tests
        })
        .sum();
    work / rays.len().max(1) as f64
}

/// Print the memory of each tree `backend` keeps over a scene of `triangles`
/// triangles: bytes of nodes and leaves, and bytes a triangle (the figure
/// Embree and OptiX quote for theirs).
pub(crate) fn print_tree_bytes(backend: &dyn Backend, triangles: usize) {
    let per_triangle = |bytes: u64| bytes as f64 / triangles.max(1) as f64;
    for t in backend.tree_bytes() {
        println!(
            "tree {}: {:.1} MB ({:.1} MB nodes, {:.1} MB leaves), {:.1} bytes a triangle",
            t.tree,
            t.total() as f64 / 1e6,
            t.nodes as f64 / 1e6,
            t.leaves as f64 / 1e6,
            per_triangle(t.total())
        );
    }
}
