//! Image metrics: how far two renders of the same scene, camera, seed and sample
//! count are apart, per pixel and over converged tiles.
//!
//! Everything is measured in display units: the linear radiance clamped to
//! `[0, 1]` and sRGB-encoded, as a float (1 = full scale), so "two levels" means
//! what a person would see in the 8-bit PNG.

use crate::thresholds::{
    MAX_IMAGE_MEAN_DIFF, MAX_MAE, MAX_PIXELS_OFF_SHARE, MAX_RMSE, MAX_SRGB8_LEVELS,
    MAX_TILE_MEAN_DIFF, PIXEL_OFF_LEVEL,
};
use prism_core::image::encode_srgba8;
use prism_core::{Image, PixelFormat};

/// One linear channel in display units: clamped to `[0, 1]`, sRGB transfer curve
/// (the curve of `prism_core::image::linear_to_srgb8`, without the rounding).
/// NaN counts as 0.
pub fn display(c: f32) -> f32 {
    let c = if c > 0.0 { c.min(1.0) } else { 0.0 };
    if c <= 0.003_130_8 {
        12.92 * c
    } else {
        1.055 * c.powf(1.0 / 2.4) - 0.055
    }
}

/// An image in display units, RGB per pixel.
fn display_rgb(image: &Image) -> Vec<[f32; 3]> {
    match image.format() {
        PixelFormat::LinearF32 => image
            .linear()
            .iter()
            .map(|p| [display(p[0]), display(p[1]), display(p[2])])
            .collect(),
        PixelFormat::Srgba8 => image
            .rgba8()
            .iter()
            .map(|p| {
                [
                    p[0] as f32 / 255.0,
                    p[1] as f32 / 255.0,
                    p[2] as f32 / 255.0,
                ]
            })
            .collect(),
    }
}

/// Per-pixel comparison of two images of one size.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PixelMetrics {
    /// Mean absolute error over pixels and channels.
    pub mae: f64,
    /// Root-mean-square error over pixels and channels.
    pub rmse: f64,
    /// Share of pixels off by more than [`PIXEL_OFF_LEVEL`] in some channel.
    pub pixels_off: f64,
    /// Largest channel difference of any pixel.
    pub max_diff: f64,
}

/// Comparison of two converged images over tiles.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TileMetrics {
    /// Largest difference of a tile mean (any channel).
    pub max_tile_diff: f64,
    /// The tile where it happens, `(x, y)` in tiles.
    pub worst_tile: (u32, u32),
    /// Largest signed difference of the whole images' means (any channel; `a - b`).
    pub mean_diff: f64,
}

/// Why two images cannot be compared.
fn same_size(a: &Image, b: &Image) -> Result<(), String> {
    if a.width() != b.width() || a.height() != b.height() {
        return Err(format!(
            "sizes differ: {}x{} and {}x{}",
            a.width(),
            a.height(),
            b.width(),
            b.height()
        ));
    }
    Ok(())
}

/// Per-pixel metrics of `a` against `b`.
pub fn pixel_metrics(a: &Image, b: &Image) -> Result<PixelMetrics, String> {
    same_size(a, b)?;
    let (da, db) = (display_rgb(a), display_rgb(b));
    let n = da.len().max(1) as f64;
    let (mut abs, mut sq, mut off, mut max) = (0.0f64, 0.0f64, 0usize, 0.0f64);
    for (p, q) in da.iter().zip(&db) {
        let mut pixel_max = 0.0f32;
        for c in 0..3 {
            let d = (p[c] - q[c]).abs();
            abs += d as f64;
            sq += (d as f64) * (d as f64);
            pixel_max = pixel_max.max(d);
        }
        off += (pixel_max > PIXEL_OFF_LEVEL) as usize;
        max = max.max(pixel_max as f64);
    }
    Ok(PixelMetrics {
        mae: abs / (3.0 * n),
        rmse: (sq / (3.0 * n)).sqrt(),
        pixels_off: off as f64 / n,
        max_diff: max,
    })
}

/// Tile means in display units: `(tiles_x, tiles_y, means)` with `means` row-major.
pub fn tile_means(image: &Image, tile: u32) -> (u32, u32, Vec<[f64; 3]>) {
    let tile = tile.max(1);
    let (w, h) = (image.width(), image.height());
    let (tx, ty) = (w.div_ceil(tile), h.div_ceil(tile));
    let mut sums = vec![([0.0f64; 3], 0u32); (tx * ty) as usize];
    for (i, p) in display_rgb(image).iter().enumerate() {
        let (x, y) = (i as u32 % w, i as u32 / w);
        // ok: `x < w` and `y < h`, so the tile index is below `tx * ty`.
        let (s, n) = &mut sums[((y / tile) * tx + x / tile) as usize];
        for c in 0..3 {
            s[c] += p[c] as f64;
        }
        *n += 1;
    }
    let means = sums
        .into_iter()
        .map(|(s, n)| s.map(|v| v / n.max(1) as f64))
        .collect();
    (tx, ty, means)
}

/// Tile metrics of `a` against `b` with square tiles of `tile` pixels.
pub fn tile_metrics(a: &Image, b: &Image, tile: u32) -> Result<TileMetrics, String> {
    same_size(a, b)?;
    let (tx, _, ma) = tile_means(a, tile);
    let (_, _, mb) = tile_means(b, tile);
    let mut m = TileMetrics::default();
    let mut total = [0.0f64; 3];
    for (i, (p, q)) in ma.iter().zip(&mb).enumerate() {
        for c in 0..3 {
            let d = p[c] - q[c];
            total[c] += d;
            if d.abs() > m.max_tile_diff {
                m.max_tile_diff = d.abs();
                m.worst_tile = (i as u32 % tx, i as u32 / tx);
            }
        }
    }
    // Whole-image means, weighting tiles by their pixel count.
    let (da, db) = (display_rgb(a), display_rgb(b));
    let n = da.len().max(1) as f64;
    for c in 0..3 {
        let sa: f64 = da.iter().map(|p| p[c] as f64).sum();
        let sb: f64 = db.iter().map(|p| p[c] as f64).sum();
        let d = (sa - sb) / n;
        if d.abs() > m.mean_diff.abs() {
            m.mean_diff = d;
        }
    }
    Ok(m)
}

/// Pixels of a linear frame that no integrator produces: a channel that is NaN,
/// infinite or negative. The display metrics clamp such a channel to 0 (and
/// core's 8-bit encoder does too), so without this check a NaN where the
/// reference is dark would pass as a match.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BadRadiance {
    /// Pixels with such a channel.
    pub count: usize,
    /// The first of them `(x, y)`, row-major.
    pub first: (u32, u32),
    /// Its value.
    pub value: [f32; 4],
}

/// The pixels of `image` with a NaN, infinite or negative channel, if any
/// (`None` for an 8-bit frame, which has no such values).
pub fn bad_radiance(image: &Image) -> Option<BadRadiance> {
    if image.format() != PixelFormat::LinearF32 {
        return None;
    }
    let w = image.width().max(1) as usize;
    let bad = |p: &[f32; 4]| p.iter().any(|&c| !(c.is_finite() && c >= 0.0));
    let mut pixels = image.linear().iter().enumerate().filter(|(_, p)| bad(p));
    let (i, &value) = pixels.next()?;
    Some(BadRadiance {
        count: 1 + pixels.count(),
        first: ((i % w) as u32, (i / w) as u32),
        value,
    })
}

/// Where two images that should be identical differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PixelDifference {
    /// Pixels that differ (all of them when the sizes or formats differ).
    pub count: usize,
    /// The first differing pixel `(x, y)`, row-major; `None` when the sizes or
    /// formats differ.
    pub first: Option<(u32, u32)>,
}

/// Whether two images are bit-identical; otherwise where they differ.
pub fn bit_identical(a: &Image, b: &Image) -> Result<(), PixelDifference> {
    if a.width() != b.width() || a.height() != b.height() || a.format() != b.format() {
        return Err(PixelDifference {
            count: a.pixel_count().max(b.pixel_count()),
            first: None,
        });
    }
    let w = a.width().max(1);
    let differs: Vec<usize> = match a.format() {
        PixelFormat::LinearF32 => a
            .linear()
            .iter()
            .zip(b.linear())
            .enumerate()
            .filter(|(_, (p, q))| p.map(f32::to_bits) != q.map(f32::to_bits))
            .map(|(i, _)| i)
            .collect(),
        PixelFormat::Srgba8 => a
            .rgba8()
            .iter()
            .zip(b.rgba8())
            .enumerate()
            .filter(|(_, (p, q))| p != q)
            .map(|(i, _)| i)
            .collect(),
    };
    match differs.first() {
        None => Ok(()),
        Some(&i) => Err(PixelDifference {
            count: differs.len(),
            first: Some((i as u32 % w, i as u32 / w)),
        }),
    }
}

/// Largest difference in 8-bit levels between an `Srgba8` frame and a linear
/// frame encoded by prism-core.
pub fn srgb8_levels(srgb: &Image, linear: &Image) -> Result<u8, String> {
    same_size(srgb, linear)?;
    if srgb.format() != PixelFormat::Srgba8 || linear.format() != PixelFormat::LinearF32 {
        return Err("expected an Srgba8 and a LinearF32 image".into());
    }
    let mut max = 0u8;
    for (p, l) in srgb.rgba8().iter().zip(linear.linear()) {
        let e = encode_srgba8(glam::Vec3::new(l[0], l[1], l[2]));
        for c in 0..3 {
            max = max.max(p[c].abs_diff(e[c]));
        }
    }
    Ok(max)
}

/// Failing reasons of a pair's metrics (empty when they pass).
pub fn pair_failures(px: &PixelMetrics, tiles: Option<&TileMetrics>) -> Vec<String> {
    let mut why = Vec::new();
    if px.mae > MAX_MAE {
        why.push(format!(
            "MAE {:.2}/255 > {:.2}/255",
            px.mae * 255.0,
            MAX_MAE * 255.0
        ));
    }
    if px.rmse > MAX_RMSE {
        why.push(format!("RMSE {:.4} > {MAX_RMSE}", px.rmse));
    }
    if px.pixels_off > MAX_PIXELS_OFF_SHARE {
        why.push(format!(
            "{:.2}% of pixels off by > 2/255 (limit {:.2}%)",
            100.0 * px.pixels_off,
            100.0 * MAX_PIXELS_OFF_SHARE
        ));
    }
    if let Some(t) = tiles {
        if t.max_tile_diff > MAX_TILE_MEAN_DIFF {
            why.push(format!(
                "converged tile ({}, {}) mean differs by {:.2}/255 (limit {:.2}/255)",
                t.worst_tile.0,
                t.worst_tile.1,
                t.max_tile_diff * 255.0,
                MAX_TILE_MEAN_DIFF * 255.0
            ));
        }
        if t.mean_diff.abs() > MAX_IMAGE_MEAN_DIFF {
            why.push(format!(
                "converged image means differ by {:+.2}/255 (limit {:.2}/255)",
                t.mean_diff * 255.0,
                MAX_IMAGE_MEAN_DIFF * 255.0
            ));
        }
    }
    why
}

/// Whether an sRGB frame is within [`MAX_SRGB8_LEVELS`] of the encoded linear frame.
// The threshold is 0 today; `<=` keeps the test right if it is ever raised.
#[allow(clippy::absurd_extreme_comparisons)]
pub fn srgb8_ok(levels: u8) -> bool {
    levels <= MAX_SRGB8_LEVELS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(w: u32, h: u32, v: f32) -> Image {
        let mut img = Image::new(w, h, PixelFormat::LinearF32).unwrap_or_else(|e| panic!("{e}"));
        for p in img.linear_mut() {
            *p = [v, v, v, 1.0];
        }
        img
    }

    #[test]
    fn bad_radiance_finds_nan_infinite_and_negative_channels() {
        let mut img = flat(4, 3, 0.25);
        assert_eq!(bad_radiance(&img), None);
        // -0 and 0 are fine; so is radiance above 1 (it is clamped for display only).
        img.linear_mut()[0] = [-0.0, 0.0, 7.5, 1.0];
        assert_eq!(bad_radiance(&img), None);
        img.linear_mut()[6] = [0.1, f32::NAN, 0.1, 1.0];
        img.linear_mut()[9] = [0.1, 0.1, -1e-9, 1.0];
        img.linear_mut()[11] = [0.1, 0.1, 0.1, f32::INFINITY];
        let found = bad_radiance(&img).unwrap_or_else(|| panic!("three bad pixels"));
        assert_eq!((found.count, found.first), (3, (2, 1)));
        assert!(found.value[1].is_nan());
        let srgb = Image::new(2, 2, PixelFormat::Srgba8).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(bad_radiance(&srgb), None);
    }

    #[test]
    fn identical_images_have_zero_metrics() {
        let a = flat(8, 8, 0.3);
        let m = pixel_metrics(&a, &a).expect("same-sized images");
        assert_eq!(m, PixelMetrics::default());
        assert!(bit_identical(&a, &a).is_ok());
        assert!(pair_failures(&m, None).is_empty());
    }

    #[test]
    fn one_bright_pixel_is_counted() {
        let a = flat(10, 10, 0.0);
        let mut b = a.clone();
        b.linear_mut()[5] = [1.0, 1.0, 1.0, 1.0];
        let m = pixel_metrics(&a, &b).expect("same-sized images");
        assert!((m.pixels_off - 0.01).abs() < 1e-9);
        assert!((m.mae - 0.01).abs() < 1e-6);
        assert!((m.rmse - 0.1).abs() < 1e-6);
        assert_eq!(
            bit_identical(&a, &b),
            Err(PixelDifference {
                count: 1,
                first: Some((5, 0))
            })
        );
    }

    #[test]
    fn a_bias_shows_in_the_tiles() {
        let a = flat(16, 16, 0.2);
        let b = flat(16, 16, 0.22);
        let t = tile_metrics(&a, &b, 8).expect("same-sized images");
        assert!(t.max_tile_diff > MAX_TILE_MEAN_DIFF);
        assert!(t.mean_diff < 0.0);
        let px = pixel_metrics(&a, &b).expect("same-sized images");
        assert!(!pair_failures(&px, Some(&t)).is_empty());
    }

    #[test]
    fn display_matches_core_encoding() {
        for i in 0..=1000 {
            let c = i as f32 / 1000.0;
            let core = prism_core::image::linear_to_srgb8(c) as f32;
            assert!((display(c) * 255.0 - core).abs() <= 0.5 + 1e-3, "{c}");
        }
    }

    #[test]
    fn srgb8_levels_measures_the_encoder() {
        let lin = flat(4, 4, 0.5);
        let mut s = Image::new(4, 4, PixelFormat::Srgba8).unwrap_or_else(|e| panic!("{e}"));
        let e = encode_srgba8(glam::Vec3::splat(0.5));
        for p in s.rgba8_mut() {
            *p = e;
        }
        assert_eq!(srgb8_levels(&s, &lin), Ok(0));
        s.rgba8_mut()[3][1] = e[1].wrapping_add(3);
        assert_eq!(srgb8_levels(&s, &lin), Ok(3));
        assert!(!srgb8_ok(3));
        // The encoders are exact: one level off is already a failure.
        assert!(srgb8_ok(0));
        assert!(!srgb8_ok(1));
    }
}
