//! `prism render --record DIR`: the frame's paths written bounce by bounce
//! ([`prism::record`]), on the CPU, with a progress bar.

use crate::{Bar, CliError, progress_bar};
use prism::{Camera, RenderSettings, Scene};
use std::path::Path;

/// Record the frame just rendered into `dir` and say what was written.
pub(crate) fn record(
    dir: &Path,
    name: &str,
    scene: &Scene,
    camera: &Camera,
    settings: &RenderSettings,
    width: u32,
    height: u32,
) -> Result<(), CliError> {
    let bar = progress_bar(format!("recording {name} {width}x{height} on the cpu"));
    let recorded = prism::record::record_frame(
        scene,
        camera,
        settings,
        width,
        height,
        dir,
        &Bar(bar.clone()),
    )?;
    bar.finish_and_clear();
    let ext = if recorded.instanced { "ihits" } else { "hits" };
    println!(
        "recorded {} rays in {} bounces -> {}/bounce{{0..{}}}.{{rays,{ext}}}",
        recorded.rays(),
        recorded.bounces.len(),
        dir.display(),
        recorded.bounces.len().saturating_sub(1),
    );
    for (k, n) in recorded.bounces.iter().enumerate() {
        println!("  bounce{k}: {n} rays");
    }
    for (k, n) in recorded.shadows.iter().enumerate() {
        println!("  shadow{k}: {n} occlusion rays");
    }
    Ok(())
}
