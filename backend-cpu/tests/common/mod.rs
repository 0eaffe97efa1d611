//! Helpers shared by the CPU backend's integration tests.

/// The facade's built-in scenes (`prism::scenes`), compiled in from their
/// source, which needs only core: a dev-dependency on the facade would keep
/// these tests from building whenever another backend does not. The file
/// names `crate::Error` and `crate::procedural`, which each test that uses it
/// imports at its root.
#[allow(dead_code)]
#[path = "../../../src/scenes.rs"]
pub mod scenes;

/// The facade's meshes made in code (`prism::procedural`), which the
/// `instances` scene places; compiled in from their source like `scenes`.
#[allow(dead_code)]
#[path = "../../../src/procedural.rs"]
pub mod procedural;

use prism_core::{Backend, Image, NoProgress, PixelFormat, RenderSettings};
use prism_cpu::{CpuBackend, Traversal};
use scenes::Preset;

/// How many pixels of `preset` rendered by `cpu` (its scene already set) with
/// `settings` at `width` x `height` differ between the wide traversal and the
/// binary BVH, which walks neither the cell grid nor the light grid.
pub fn pixels_wide_and_binary_differ(
    cpu: &mut CpuBackend,
    preset: &Preset,
    settings: &RenderSettings,
    (width, height): (u32, u32),
) -> usize {
    let mut frames = Vec::new();
    for traversal in [Traversal::Wide, Traversal::Binary] {
        cpu.set_traversal(traversal).expect("traversal");
        let mut img = Image::new(width, height, PixelFormat::LinearF32).expect("image");
        cpu.render(&preset.camera, settings, &mut img, &NoProgress)
            .expect("render");
        frames.push(img.linear().to_vec());
    }
    frames[0]
        .iter()
        .zip(&frames[1])
        .filter(|(a, b)| a != b)
        .count()
}
