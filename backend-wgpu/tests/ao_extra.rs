//! The AO kernel's fractional ray count (`RenderSettings::ao_extra`,
//! shaders/integrator.wgsl `ao_rays_at`) on a real adapter (lavapipe in CI)
//! against prism-core: the same pixels take the extra ray, so images and ray
//! counts are core's.
//!
//! Without an adapter these tests print why and pass, unless
//! `PRISM_REQUIRE_WGPU=1` (CI sets it): then they fail.

mod common;

use common::render_scene;
use prism_core::glam::Vec3;
use prism_core::integrator::render_pixel;
use prism_core::{Accel, Backend, Image, Integrator, NoProgress, PixelFormat, RenderSettings};
use prism_wgpu::{WgpuBackend, WgpuOptions};

const W: u32 = 64;
const H: u32 = 48;

/// Open a backend (see [`common::open_backend`]).
fn open() -> Option<WgpuBackend> {
    common::open_backend(WgpuOptions::default())
}

/// For shares 0, 0.37 and 0.9, one and two samples, with and without
/// shadows: the GPU's linear image within the adapter tests' AO tolerances of
/// core's (95% of the pixels within 1e-3, mean error under 1e-2) and its ray
/// count exactly core's. The extra rays do reach the GPU: a share of 0.37
/// adds rays over share 0, as in core.
#[test]
fn fractional_ao_matches_core() {
    let Some(mut gpu) = open() else { return };
    let (scene, camera) = render_scene();
    gpu.set_scene(&scene).expect("set_scene");
    let accel = Accel::build(&scene).expect("scene");
    let mut rays_at_zero = None;
    for (ao_extra, spp, ao_shadows) in [
        (0.0, 1, true),
        (0.37, 1, true),
        (0.37, 2, false),
        (0.9, 1, false),
    ] {
        let s = RenderSettings {
            integrator: Integrator::Ao,
            spp,
            ao_samples: 3,
            ao_extra,
            ao_distance: 1.5,
            ao_shadows,
            seed: 5,
            ..Default::default()
        };
        let params = s.params(&accel, &camera, W, H).expect("params");
        let mut core_rays = 0u64;
        let core: Vec<Vec3> = (0..H)
            .flat_map(|y| (0..W).map(move |x| (x, y)))
            .map(|(x, y)| {
                let (c, r) = render_pixel(&accel, &params, x, y);
                core_rays += u64::from(r);
                c
            })
            .collect();
        let mut image = Image::new(W, H, PixelFormat::LinearF32).expect("image");
        let stats = gpu
            .render(&camera, &s, &mut image, &NoProgress)
            .expect("render");
        let what = format!("ao_extra {ao_extra}, {spp} spp, shadows {ao_shadows}");
        let (mut close, mut sum) = (0usize, 0.0f64);
        for (g, c) in image.linear().iter().zip(&core) {
            assert!(g.iter().all(|v| v.is_finite()), "{what}: pixel {g:?}");
            let d = (Vec3::new(g[0], g[1], g[2]) - *c).abs().max_element();
            close += usize::from(d <= 1e-3 * (1.0 + c.max_element()));
            sum += d as f64;
        }
        let n = core.len() as f64;
        eprintln!(
            "{what}: {:.2}% within 1e-3, mean abs error {:.2e}, rays gpu {} core {core_rays}",
            100.0 * close as f64 / n,
            sum / n,
            stats.rays
        );
        assert!(close as f64 / n >= 0.95 && sum / n < 1e-2, "{what}");
        assert_eq!(stats.rays, core_rays, "{what}: ray count");
        if ao_extra == 0.0 {
            rays_at_zero = Some(stats.rays);
        } else if spp == 1 && ao_shadows {
            assert!(stats.rays > rays_at_zero.expect("share 0 first"), "{what}");
        }
    }
}
