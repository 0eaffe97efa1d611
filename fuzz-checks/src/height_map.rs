//! The `height_map_png` check: the height-map loader on arbitrary bytes,
//! its heights against the `image` crate's decoding of the same file.

use crate::Violation;
use prism::height_map::{HeightMap, decode_png};
use prism_core::{Error, HeightMapProblem};
use std::io::Cursor;

/// Most cells a fuzzed map may have: the loader's own limit lowered, so
/// that a header's size is checked against it and decoding stays fast.
pub const MAX_HEIGHT_MAP_CELLS: u64 = 1 << 16;

/// [`decode_png`] on arbitrary bytes: an [`Error::HeightMap`] naming the
/// file whose problem matches the header, or a map whose size is the
/// header's, within the limit, and whose every height is what the `image`
/// crate decodes there (the grey, or `(77 r + 150 g + 29 b) >> 8`), wherever
/// `image` decodes the file too.
pub fn height_map_png(data: &[u8]) -> Result<(), Violation> {
    const NAME: &str = "fuzz.png";
    let map = match decode_png(Cursor::new(data), NAME, MAX_HEIGHT_MAP_CELLS) {
        Ok(map) => map,
        Err(Error::HeightMap { path, problem }) if path == NAME => {
            return check_problem(&problem);
        }
        Err(e) => return violation!("{NAME}: unexpected error {e:?}"),
    };
    let cells = u64::from(map.width) * u64::from(map.depth);
    if cells == 0 || cells > MAX_HEIGHT_MAP_CELLS || map.heights.len() as u64 != cells {
        return violation!(
            "a {}x{} map of {} heights (limit {MAX_HEIGHT_MAP_CELLS})",
            map.width,
            map.depth,
            map.heights.len()
        );
    }
    if !matches!(map.bits, 8 | 16) {
        return violation!("a map of {} bits", map.bits);
    }
    if map.bits == 8 && map.max_height() > 255 {
        return violation!("an 8-bit map reaching {}", map.max_height());
    }
    compare_with_image(data, &map)
}

/// A refusal's problem agrees with itself: an empty map has a zero side, a
/// large one the cell count of its sides, above the limit.
fn check_problem(problem: &HeightMapProblem) -> Result<(), Violation> {
    match problem {
        HeightMapProblem::Empty { width, depth } if *width != 0 && *depth != 0 => {
            violation!("{width}x{depth} refused as empty")
        }
        HeightMapProblem::TooLarge {
            width,
            depth,
            cells,
            limit,
        } if *cells != u64::from(*width) * u64::from(*depth)
            || *cells <= *limit
            || *limit != MAX_HEIGHT_MAP_CELLS =>
        {
            violation!("{width}x{depth} ({cells} cells) refused as above {limit}")
        }
        _ => Ok(()),
    }
}

/// Where the `image` crate decodes `data` too, every height is its grey.
fn compare_with_image(data: &[u8], map: &HeightMap) -> Result<(), Violation> {
    let Ok(image) = image::load_from_memory_with_format(data, image::ImageFormat::Png) else {
        return Ok(());
    };
    if (image.width(), image.height()) != (map.width, map.depth) {
        return violation!(
            "a {}x{} map where image decodes {}x{}",
            map.width,
            map.depth,
            image.width(),
            image.height()
        );
    }
    let colour = image.color().has_color();
    // Samples as 16-bit values at the map's depth (image keeps 8-bit
    // images 8-bit, 16-bit ones 16-bit).
    let samples: Vec<[u16; 3]> = if map.bits == 16 {
        image.to_rgb16().pixels().map(|p| p.0).collect()
    } else {
        image
            .to_rgb8()
            .pixels()
            .map(|p| p.0.map(u16::from))
            .collect()
    };
    for (i, (s, &h)) in samples.iter().zip(&map.heights).enumerate() {
        let expected = if colour {
            ((77 * u32::from(s[0]) + 150 * u32::from(s[1]) + 29 * u32::from(s[2])) >> 8) as u16
        } else {
            s[0]
        };
        if h != expected {
            return violation!(
                "cell {i}: height {h}, image decodes {s:?} ({}), so {expected}",
                if colour { "colour" } else { "grey" }
            );
        }
    }
    Ok(())
}
