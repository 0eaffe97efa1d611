//! The persistent path kernels (shaders/path_pieces.wgsl, hardware adapters
//! with subgroups) against the tile kernels and against core: the same rays
//! and the same pixels, for sample counts that take each of their lane
//! layouts (one lane a pixel, two, and the tail's up to a subgroup) and image
//! sizes that leave tiles part-filled.

mod common;

use common::{open_backend, render_scene};
use prism_core::glam::Vec3;
use prism_core::integrator::render_pixel;
use prism_core::{Accel, Backend, Image, Integrator, NoProgress, PixelFormat, RenderSettings};
use prism_wgpu::WgpuOptions;

/// Largest difference between two linear images' colour channels, relative to
/// the brighter pixel, and the share of pixels whose channels are equal bit for bit.
fn difference(a: &[[f32; 4]], b: &[[f32; 4]]) -> (f32, f64) {
    assert_eq!(a.len(), b.len());
    let mut worst = 0.0f32;
    let mut same = 0usize;
    for (p, q) in a.iter().zip(b) {
        let d = (0..3).map(|k| (p[k] - q[k]).abs()).fold(0.0, f32::max);
        let scale = 1.0
            + (0..3)
                .map(|k| p[k].abs().max(q[k].abs()))
                .fold(0.0, f32::max);
        worst = worst.max(d / scale);
        same += usize::from(p[..3] == q[..3]);
    }
    (worst, same as f64 / a.len() as f64)
}

#[test]
fn persistent_path_kernels_give_the_tile_kernels_pixels() {
    let Some(mut pieces) = open_backend(WgpuOptions::default()) else {
        return;
    };
    if !pieces.persistent_path() {
        assert!(
            !std::env::var("PRISM_REQUIRE_LANE_REFILL").is_ok_and(|v| v == "1"),
            "PRISM_REQUIRE_LANE_REFILL=1 but the persistent path kernels are not used on {} \
             (subgroup max size {})",
            pieces.adapter(),
            pieces.subgroup_max_size()
        );
        eprintln!(
            "SKIPPED: no persistent path kernels on {} (software adapter or no subgroups); \
             set PRISM_REQUIRE_LANE_REFILL=1 to fail instead",
            pieces.adapter()
        );
        return;
    }
    let mut tiles = open_backend(WgpuOptions {
        persistent_path: false,
        ..Default::default()
    })
    .expect("second backend");
    assert!(!tiles.persistent_path());
    let (scene, camera) = render_scene();
    pieces.set_scene(&scene).expect("set_scene");
    tiles.set_scene(&scene).expect("set_scene");
    let accel = Accel::build(&scene).expect("accel");
    // spp 1 and 3: a lane a pixel (two do not divide them); 4: two lanes a
    // pixel in the bulk; 40: two in the bulk, 32 in the tail. 67 x 37 leaves
    // the 8 x 16 tiles part-filled at the right and bottom.
    for (spp, w, h) in [(1, 67, 37), (3, 64, 48), (4, 67, 37), (40, 40, 24)] {
        let settings = RenderSettings {
            integrator: Integrator::Path,
            spp,
            max_depth: 8,
            seed: 7,
            ..Default::default()
        };
        let mut a = Image::new(w, h, PixelFormat::LinearF32).expect("image");
        let mut b = Image::new(w, h, PixelFormat::LinearF32).expect("image");
        let sa = pieces
            .render(&camera, &settings, &mut a, &NoProgress)
            .expect("render");
        let sb = tiles
            .render(&camera, &settings, &mut b, &NoProgress)
            .expect("render");
        // The same paths: the same rays, exactly.
        assert_eq!(sa.rays, sb.rays, "spp {spp}, {w} x {h}: ray counts");
        // The same sums in the same order; the shader compiler may fuse the
        // shading's products differently in the two kernels, so the last bits
        // of a pixel may move, and rarely a flipped decision moves one sample.
        let (worst, same) = difference(a.linear(), b.linear());
        eprintln!(
            "spp {spp}, {w} x {h}: {} rays, {:.2}% of pixels the same bits, worst {worst:.2e}",
            sa.rays,
            100.0 * same
        );
        assert!(
            same >= 0.9,
            "spp {spp}: only {:.1}% of pixels the same bits",
            100.0 * same
        );
        let params = settings.params(&accel, &camera, w, h).expect("params");
        // Every pixel of the persistent frame near core's (a pixel is written
        // by its first lane only: a wrong lane or tile would show here).
        let mut far = 0usize;
        for (i, p) in a.linear().iter().enumerate() {
            let (x, y) = (i as u32 % w, i as u32 / w);
            let (c, _) = render_pixel(&accel, &params, x, y);
            let d = (Vec3::new(p[0], p[1], p[2]) - c).abs().max_element();
            far += usize::from(d > 1e-3 * (1.0 + c.max_element()));
            assert!(p[3] == 1.0, "spp {spp}: pixel {i} alpha {}", p[3]);
        }
        assert!(
            far * 20 <= a.linear().len(),
            "spp {spp}, {w} x {h}: {far} pixels off core's"
        );
    }
}

/// The persistent AO kernels (subgroups that share their pixels' AO rays)
/// against the tile kernels: the same rays, so the same ray count and the
/// same pixels (an AO ray given another's random numbers, traced twice or
/// counted for another pixel moves a pixel far off).
#[test]
fn persistent_ao_kernels_give_the_tile_kernels_pixels() {
    let Some(mut pieces) = open_backend(WgpuOptions::default()) else {
        return;
    };
    if !pieces.persistent_ao() {
        assert!(
            !std::env::var("PRISM_REQUIRE_LANE_REFILL").is_ok_and(|v| v == "1"),
            "PRISM_REQUIRE_LANE_REFILL=1 but the persistent AO kernels are not used on {}",
            pieces.adapter()
        );
        eprintln!(
            "SKIPPED: no persistent AO kernels on {} (software adapter or no subgroups)",
            pieces.adapter()
        );
        return;
    }
    let mut tiles = open_backend(WgpuOptions {
        persistent_ao: false,
        ..Default::default()
    })
    .expect("second backend");
    assert!(!tiles.persistent_ao());
    let (scene, camera) = render_scene();
    pieces.set_scene(&scene).expect("set_scene");
    tiles.set_scene(&scene).expect("set_scene");
    // (spp, AO rays, shadows, fractional count, size): 8 rays, several
    // pixels' rays a round; 37, a pixel's rays over two rounds of 32 lanes;
    // a fractional count (pixels of one piece with different counts) and
    // several samples; 67 x 37 leaves tiles and pieces part-filled.
    for (spp, ao_samples, ao_shadows, ao_extra, w, h) in [
        (1, 8, false, 0.0, 67, 37),
        (1, 37, true, 0.0, 64, 48),
        (2, 5, true, 0.37, 67, 37),
        (3, 1, false, 0.9, 40, 24),
    ] {
        let settings = RenderSettings {
            integrator: Integrator::Ao,
            spp,
            ao_samples,
            ao_shadows,
            ao_extra,
            ao_distance: 1.0,
            seed: 7,
            ..Default::default()
        };
        let mut a = Image::new(w, h, PixelFormat::LinearF32).expect("image");
        let mut b = Image::new(w, h, PixelFormat::LinearF32).expect("image");
        let sa = pieces
            .render(&camera, &settings, &mut a, &NoProgress)
            .expect("render");
        let sb = tiles
            .render(&camera, &settings, &mut b, &NoProgress)
            .expect("render");
        assert_eq!(sa.rays, sb.rays, "{settings:?}: ray counts");
        let (worst, same) = difference(a.linear(), b.linear());
        eprintln!(
            "AO spp {spp}, {ao_samples} rays: {:.2}% of pixels the same bits, worst {worst:.2e}",
            100.0 * same
        );
        assert!(worst <= 1e-5, "{settings:?}: worst difference {worst}");
        assert!(
            same >= 0.99,
            "{settings:?}: {:.1}% the same bits",
            100.0 * same
        );
    }
}
