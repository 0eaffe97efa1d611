//! The fractional AO ray count (`RenderSettings::ao_extra`): share 0 is the
//! integer count bit for bit, the extra rays spread evenly over the image,
//! the ray counts stay exact and the estimate stays unbiased.

use glam::Vec3;
use prism_core::integrator::{
    AO_EXTRA_BLOCK_SHIFT, ao_pattern, ao_rays_at, camera_sample, render_pixel, trace_ao,
};
use prism_core::{
    Accel, Camera, Error, Integrator, Material, RenderSettings, Scene, ao_extra_threshold,
};
use proptest::prelude::*;

/// A floor at `y = 0` under a ceiling at `y = gap`, both far wider than an AO
/// ray is long, and a camera between them looking down at the floor. An AO
/// ray from the floor of length `distance` is open exactly when its cosine to
/// the normal is below `gap / distance`; cosine sampling makes the cosine's
/// square uniform, so every floor pixel's expected AO is `(gap / distance)^2`.
fn slab(gap: f32) -> (Scene, Camera, Vec3) {
    let albedo = Vec3::new(0.8, 0.6, 0.4);
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(albedo));
    let big = 1000.0;
    for (y, flip) in [(0.0, false), (gap, true)] {
        let (a, b, c, d) = (
            Vec3::new(-big, y, -big),
            Vec3::new(big, y, -big),
            Vec3::new(big, y, big),
            Vec3::new(-big, y, big),
        );
        if flip {
            s.add_triangle(a, c, b, m);
            s.add_triangle(a, d, c, m);
        } else {
            s.add_triangle(a, b, c, m);
            s.add_triangle(a, c, d, m);
        }
    }
    let eye = Vec3::new(0.0, 0.5 * gap, 0.0);
    let camera = Camera::look_at(eye, Vec3::new(0.0, 0.0, -0.01), Vec3::NEG_Z, 60.0);
    (s, camera, albedo)
}

fn ao(ao_samples: u32, ao_extra: f32, ao_shadows: bool, distance: f32) -> RenderSettings {
    RenderSettings {
        integrator: Integrator::Ao,
        spp: 1,
        ao_samples,
        ao_extra,
        ao_shadows,
        ao_distance: distance,
        ..RenderSettings::default()
    }
}

/// The rendered image's pixels and the rays of each.
fn render(accel: &Accel, cam: &Camera, s: &RenderSettings, (w, h): (u32, u32)) -> Vec<(Vec3, u32)> {
    let params = s.params(accel, cam, w, h).expect("valid settings");
    (0..h)
        .flat_map(|y| (0..w).map(move |x| (x, y)))
        .map(|(x, y)| render_pixel(accel, &params, x, y))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Share 0: every pixel traces `ao_samples` AO rays, and the image and ray
    /// counts are, bit for bit, those of the integer integrator (each pixel's
    /// camera sample through `trace_ao` with `ao_samples`, what `render_pixel`
    /// ran before the fractional count existed).
    #[test]
    fn share_zero_is_the_integer_count_bit_for_bit(
        n in 1u32..12, shadows in any::<bool>(), seed in any::<u32>(), gap in 0.2f32..2.0,
    ) {
        let (scene, cam, _) = slab(gap);
        let accel = Accel::build(&scene).expect("valid scene");
        let settings = RenderSettings { seed, ..ao(n, 0.0, shadows, 1.0) };
        let params = settings.params(&accel, &cam, 24, 16).expect("valid settings");
        prop_assert_eq!(params.ao_extra, 0);
        for y in 0..16 {
            for x in 0..24 {
                prop_assert_eq!(ao_rays_at(&params, x, y), n);
                let (ray, mut rng) = camera_sample(&params, x, y, 0);
                let (want, want_rays) = trace_ao(&accel, &params, ray, &mut rng, n);
                let (got, got_rays) = render_pixel(&accel, &params, x, y);
                prop_assert_eq!(got.to_array().map(f32::to_bits), want.to_array().map(f32::to_bits));
                prop_assert_eq!(got_rays, want_rays);
            }
        }
    }

    /// The blocks that trace one more ray are a share `f` of any grid of
    /// blocks, to within a tenth of its width plus height (a discrepancy
    /// that grows with the sides, not the area: no clumps, no empty bands),
    /// and of any rectangle cut from it.
    #[test]
    fn extra_blocks_spread_evenly(
        w in 1u32..300, h in 1u32..300, f in 0.0f32..1.0, corner in (0u32..500, 0u32..500),
    ) {
        let threshold = ao_extra_threshold(f);
        for (x0, y0) in [(0, 0), corner] {
            let extra = (y0..y0 + h)
                .flat_map(|y| (x0..x0 + w).map(move |x| (x, y)))
                .filter(|&(x, y)| ao_pattern(x, y) < threshold)
                .count() as f64;
            let want = f as f64 * (w * h) as f64;
            prop_assert!((extra - want).abs() <= 0.1 * (w + h) as f64 + 2.0,
                "{extra} extra blocks of {w}x{h} at ({x0}, {y0}), want {want:.1}");
        }
    }

    /// Every pixel of a 16 x 8 block (the GPUs' render tile) traces the same
    /// count: `ao_samples`, plus one where the block's pattern value is
    /// below the threshold.
    #[test]
    fn a_block_traces_one_count(
        n in 1u32..64, f in 0.0f32..1.0, block in (0u32..500, 0u32..500), pixels in prop::collection::vec((0u32..16, 0u32..8), 8),
    ) {
        let (scene, cam, _) = slab(1.0);
        let accel = Accel::build(&scene).expect("valid scene");
        let params = ao(n, f, false, 1.0).params(&accel, &cam, 4, 4).expect("valid settings");
        prop_assert_eq!(AO_EXTRA_BLOCK_SHIFT, (4, 3));
        let want = n + u32::from(ao_pattern(block.0, block.1) < ao_extra_threshold(f));
        for (dx, dy) in pixels {
            prop_assert_eq!(ao_rays_at(&params, block.0 * 16 + dx, block.1 * 8 + dy), want);
        }
    }

    /// Every pixel's AO is the open share of its own rays: on the slab, where
    /// each floor pixel expects `(gap / distance)^2`, the mean over the image
    /// matches it with the fractional count as with whole counts (within
    /// five standard deviations of the mean), the pixels with the extra ray
    /// included alone; dividing by `ao_samples` would miss it by `f / n` of
    /// the value. The reported rays are exactly one camera ray, the pixel's
    /// AO rays and the shadow ray per pixel.
    #[test]
    fn fractional_count_is_unbiased_and_counted_exactly(
        n in 1u32..4, f in 0.05f32..0.95, open in 0.3f32..0.9, shadows in any::<bool>(), seed in any::<u32>(),
    ) {
        let distance = 1.0;
        let gap = open.sqrt() * distance;
        let (scene, cam, albedo) = slab(gap);
        let accel = Accel::build(&scene).expect("valid scene");
        // 8 x 16 blocks of 16 x 8 pixels.
        let (w, h) = (128u32, 128u32);
        let expect = (gap / distance) as f64 * (gap / distance) as f64;
        for (share, extra_only) in [(0.0, false), (f, false), (f, true)] {
            let settings = RenderSettings { seed, ..ao(n, share, shadows, distance) };
            let params = settings.params(&accel, &cam, w, h).expect("valid settings");
            let pixels = render(&accel, &cam, &settings, (w, h));
            let (mut sum, mut count, mut var) = (0.0f64, 0.0f64, 0.0f64);
            for (i, (c, rays)) in pixels.iter().enumerate() {
                let (x, y) = (i as u32 % w, i as u32 / w);
                let k = ao_rays_at(&params, x, y);
                prop_assert_eq!(*rays, 1 + k + shadows as u32, "pixel ({}, {})", x, y);
                if extra_only && k == n {
                    continue;
                }
                // The light is above the ceiling: a shadowed floor keeps SHADOW_KEEP.
                let keep = if shadows { prism_core::integrator::SHADOW_KEEP } else { 1.0 };
                sum += (c.x / (albedo.x * keep)) as f64;
                count += 1.0;
                var += expect * (1.0 - expect) / k as f64;
            }
            prop_assume!(count > 0.0, "no block took the extra ray");
            let mean = sum / count;
            let sigma = var.sqrt() / count;
            prop_assert!((mean - expect).abs() <= 5.0 * sigma + 1e-4,
                "share {share} (extra only: {extra_only}): mean {mean:.4}, expected {expect:.4} +- {sigma:.4}");
        }
    }

    /// A share outside `[0, 1)` is refused, naming `ao_extra`.
    #[test]
    fn bad_shares_are_refused(bad in prop_oneof![
        Just(f32::NAN), Just(1.0f32), Just(f32::INFINITY), Just(-0.0001f32), -1e9f32..-1e-30, 1.0f32..1e9,
    ]) {
        let settings = ao(4, bad, false, 1.0);
        match settings.validate() {
            Err(Error::Setting { field, .. }) => prop_assert_eq!(field, "ao_extra"),
            other => prop_assert!(false, "{bad}: {other:?}"),
        }
        let (scene, cam, _) = slab(1.0);
        let accel = Accel::build(&scene).expect("valid scene");
        let refused = matches!(settings.params(&accel, &cam, 4, 4), Err(Error::Setting { field: "ao_extra", .. }));
        prop_assert!(refused, "params took ao_extra {}", bad);
    }
}

/// The threshold is `f * 2^32` rounded down, 0 for 0 and below 2^32 for the
/// largest share below 1, so a share of 0 picks no pixel and any share below
/// 1 leaves some pixel at the whole count.
#[test]
fn threshold_ends() {
    assert_eq!(ao_extra_threshold(0.0), 0);
    assert_eq!(ao_extra_threshold(0.5), 1 << 31);
    assert_eq!(ao_extra_threshold(0.25), 1 << 30);
    let top = 1.0 - f32::EPSILON / 2.0;
    assert_eq!(ao_extra_threshold(top), u32::MAX - 255);
}
