//! `prism bench --scene instances --moving N [--frames F]`: the frames of a
//! game or an editor, where instances move between frames. Each frame moves
//! the first `N` instances ([`prism::scenes::instances_frame`]), applies the
//! update (`update_scene`: new instance records, the top level rebuilt) and
//! renders; the stage table has a row per stage kind, medians over `F` frames
//! after one untimed warm-up frame.

use super::bench::{median, ms};
use crate::{Bar, BenchArgs, CliError, open_backend, progress_bar, setup};
use prism::{Backend, Image, PixelFormat, RenderStats, SceneUpdate, UpdateStats};

pub(crate) fn bench_moving(a: &BenchArgs) -> Result<(), CliError> {
    let (name, scene, camera, settings, w, h) = setup(&a.scene)?;
    if !scene.is_two_level() {
        return Err(CliError::Usage(
            "--moving moves the instances of a two-level scene: use --scene instances",
        ));
    }
    let count = a.moving.unwrap_or(0);
    let frames = a.frames;
    let mut backend = open_backend(&a.scene)?;
    let mut image = Image::new(w, h, PixelFormat::Srgba8)?;
    backend.set_scene(&scene)?;
    let mut frame = |k: u32, backend: &mut Box<dyn Backend + Send>| {
        let mut update = SceneUpdate::new();
        let moves = prism::scenes::instances_frame(&scene, k, count);
        for (i, t) in &moves {
            update.set_transform(*i, *t);
        }
        let u = backend.update_scene(&update)?;
        let bar = progress_bar(format!("bench {name} {w}x{h}: moving frame {k}/{frames}"));
        let r = backend.render(&camera, &settings, &mut image, &Bar(bar.clone()))?;
        bar.finish_and_clear();
        Ok::<_, CliError>((moves.len(), u, r))
    };
    // One untimed warm-up frame: kernel compilation, caches, page faults.
    let (moved, _, _) = frame(0, &mut backend)?;
    let mut runs: Vec<(UpdateStats, RenderStats)> = Vec::new();
    for k in 1..=frames {
        let (_, u, r) = frame(k, &mut backend)?;
        runs.push((u, r));
    }
    let col = |f: &dyn Fn(&(UpdateStats, RenderStats)) -> f64| median(runs.iter().map(f).collect());
    let info = backend.info();
    println!(
        "bench {name} {w}x{h} {} spp depth {} {} on {} [{}], {moved} of {} instances moving, \
         median of {frames} frames after a warm-up ({:?})",
        settings.spp,
        settings.max_depth,
        settings.integrator.name(),
        info.name,
        info.device,
        scene.instances().len(),
        runs[0].1.timing
    );
    println!(
        "| stage | build ms | upload ms | trace ms | download ms | total ms | rays | Mrays/s |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let top = if runs.iter().all(|r| r.0.changes.top_rebuilt) {
        "top level rebuilt"
    } else {
        "top level not always rebuilt"
    };
    println!(
        "| update ({moved} moved, {top}) | {:.3} | {:.3} | | | {:.3} | | |",
        col(&|r| ms(r.0.stats.build)),
        col(&|r| ms(r.0.stats.upload)),
        col(&|r| ms(r.0.stats.total)),
    );
    println!(
        "| trace | | {:.3} | {:.3} | {:.3} | {:.3} | {} | {:.1} |",
        col(&|r| ms(r.1.upload)),
        col(&|r| ms(r.1.trace)),
        col(&|r| ms(r.1.download)),
        col(&|r| ms(r.1.total)),
        runs[0].1.rays,
        col(&|r| r.1.mrays_per_s()),
    );
    println!(
        "| frame | | | | | {:.3} | | |",
        col(&|r| ms(r.0.stats.total + r.1.total)),
    );
    Ok(())
}
