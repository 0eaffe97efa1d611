//! Height maps: a PNG image read as a grid of column heights, the input of a
//! heightfield (a voxel city, a terrain).
//!
//! Pixel `(x, z)` (column `x` from the left, row `z` from the top) is the
//! height of cell `(x, z)`, stored at index `z * width + x`. The voxel model
//! of `shared/scenes/heightfield` reads it as unit voxels: the column over
//! `[x, x + 1] x [z, z + 1]` is full from `y = 0` up to `y = height`, so the
//! whole map spans `[0, width] x [0, max height] x [0, depth]`; a height of 0
//! is bare ground. Heights are integers as stored: scale them when building a
//! heightfield if a map's units are not voxels.
//!
//! What pixels are taken:
//!
//! | PNG colour type | height |
//! | --- | --- |
//! | grey, 8 or 16 bits | the grey value |
//! | grey and alpha, 8 or 16 bits | the grey value (alpha, and a `tRNS` transparent colour, ignored) |
//! | RGB or RGBA, 8 or 16 bits | `(77 r + 150 g + 29 b) >> 8` on the stored values (alpha ignored) |
//!
//! RGB pixels are converted whether or not they are grey (`r = g = b`, as in
//! maps saved by editors that write only colour images); the weights are the
//! ones `shared/scenes/heightfield/city512.png` is defined with. Refused,
//! with [`HeightMapProblem::NotGrey`]: indexed (palette) images, whose
//! colours are a picture's, not a height ramp, and bit depths 1, 2 and 4.
//! Heights keep the image's depth ([`HeightMap::bits`]): 0 to 255 or 0 to
//! 65,535.
//!
//! The PNG header's size is checked before any pixel is decoded: at least
//! one pixel ([`HeightMapProblem::Empty`]) and at most [`MAX_CELLS`]
//! ([`HeightMapProblem::TooLarge`]), so a header promising billions of
//! pixels over a few bytes costs nothing. Decoding is done by the `png`
//! crate (the one the `image` crate decodes PNG with), used directly because
//! it reports the stored colour type and bit depth (which the `image` crate
//! expands away before a caller sees them) and decodes row by row.
//!
//! ```no_run
//! let map = prism::height_map::load_png("city512.png")?;
//! assert_eq!((map.width, map.depth), (512, 512));
//! let tallest = map.heights.iter().max();
//! # Ok::<(), prism::Error>(())
//! ```

use crate::{Error, HeightMapProblem};
use std::io::{BufRead, Seek};
use std::path::Path;

/// The most cells (pixels) a height map may have: 2^28, a 16,384 x 16,384
/// map, 512 MiB of heights. Every cell index `z * width + x` then fits a
/// `u32`, as heightfield traversal indexes cells, with room to spare for
/// the pyramids of maximum heights built over it.
pub const MAX_CELLS: u64 = 1 << 28;

/// A grid of column heights read from an image ([module docs](self)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeightMap {
    /// Cells along x (the image's width).
    pub width: u32,
    /// Cells along z (the image's height, top row first).
    pub depth: u32,
    /// `width * depth` heights, cell `(x, z)` at index `z * width + x`.
    pub heights: Vec<u16>,
    /// The image's bit depth, 8 or 16: heights are at most `2^bits - 1`.
    pub bits: u8,
}

impl HeightMap {
    /// The height of cell `(x, z)`, or `None` outside the map.
    ///
    /// ```
    /// let map = prism::height_map::HeightMap { width: 2, depth: 1, heights: vec![3, 7], bits: 8 };
    /// assert_eq!(map.height(1, 0), Some(7));
    /// assert_eq!(map.height(2, 0), None);
    /// ```
    pub fn height(&self, x: u32, z: u32) -> Option<u16> {
        if x >= self.width || z >= self.depth {
            return None;
        }
        self.heights
            .get(z as usize * self.width as usize + x as usize)
            .copied()
    }

    /// The tallest column (0 for bare ground): the map's extent along y.
    pub fn max_height(&self) -> u16 {
        self.heights.iter().copied().max().unwrap_or(0)
    }
}

/// Read a height map from a PNG file ([module docs](self) for what is taken).
/// Every error is [`Error::HeightMap`] naming the file.
pub fn load_png(path: impl AsRef<Path>) -> Result<HeightMap, Error> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| Error::HeightMap {
        path: name.clone(),
        problem: HeightMapProblem::Unreadable {
            message: e.to_string(),
        },
    })?;
    decode_png(std::io::BufReader::new(file), &name, MAX_CELLS)
}

/// Read a height map from PNG data in `reader`, taking at most `max_cells`
/// cells (at most [`MAX_CELLS`] whatever is asked); `name` is the file the
/// errors name.
///
/// ```
/// use prism::{Error, HeightMapProblem};
/// let err = prism::height_map::decode_png(std::io::Cursor::new(b"not a png"), "x.png", 100);
/// assert!(matches!(err, Err(Error::HeightMap { problem: HeightMapProblem::Decode { .. }, .. })));
/// ```
pub fn decode_png<R: BufRead + Seek>(
    reader: R,
    name: &str,
    max_cells: u64,
) -> Result<HeightMap, Error> {
    let fail = |problem| Error::HeightMap {
        path: name.to_string(),
        problem,
    };
    let decode = |e: png::DecodingError| match e {
        png::DecodingError::IoError(e) if e.kind() != std::io::ErrorKind::UnexpectedEof => {
            fail(HeightMapProblem::Unreadable {
                message: e.to_string(),
            })
        }
        e => fail(HeightMapProblem::Decode {
            message: e.to_string(),
        }),
    };
    let mut reader = reader;
    if let Some((width, depth)) = zero_size(&mut reader).map_err(|e| {
        fail(HeightMapProblem::Unreadable {
            message: e.to_string(),
        })
    })? {
        return Err(fail(HeightMapProblem::Empty { width, depth }));
    }
    let mut decoder = png::Decoder::new(reader);
    // Samples as stored: no palette expansion, no alpha made from `tRNS`,
    // 16-bit samples kept (big-endian).
    decoder.set_transformations(png::Transformations::IDENTITY);
    let info = decoder.read_header_info().map_err(decode)?;
    let (width, depth) = (info.width, info.height);
    let (color, bit_depth, interlaced) = (info.color_type, info.bit_depth, info.interlaced);
    let cells = u64::from(width) * u64::from(depth);
    if cells == 0 {
        return Err(fail(HeightMapProblem::Empty { width, depth }));
    }
    let limit = max_cells.min(MAX_CELLS);
    if cells > limit {
        return Err(fail(HeightMapProblem::TooLarge {
            width,
            depth,
            cells,
            limit,
        }));
    }
    let bits = match bit_depth {
        png::BitDepth::Eight => 8,
        png::BitDepth::Sixteen => 16,
        other => {
            return Err(fail(HeightMapProblem::NotGrey {
                found: format!("{}-bit {}", other as u8, color_name(color)),
            }));
        }
    };
    let channels = match color {
        png::ColorType::Grayscale => 1,
        png::ColorType::GrayscaleAlpha => 2,
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        png::ColorType::Indexed => {
            return Err(fail(HeightMapProblem::NotGrey {
                found: "an indexed (palette) image".into(),
            }));
        }
    };
    let pixel_bytes = channels * usize::from(bits / 8);
    let mut reader = decoder.read_info().map_err(decode)?;
    let cells = cells as usize; // ok: at most MAX_CELLS, 2^28.
    let out_of_memory = |_| Error::HostOutOfMemory {
        what: "height map",
        bytes: (cells as u64).saturating_mul(2),
    };
    let mut heights: Vec<u16> = Vec::new();
    heights.try_reserve_exact(cells).map_err(out_of_memory)?;
    let row_len = width as usize;
    if interlaced {
        // Adam7 spreads every pass over the whole image: decoded whole (up
        // to 8 bytes a cell), then converted.
        let size = reader.output_buffer_size().ok_or_else(|| {
            fail(HeightMapProblem::TooLarge {
                width,
                depth,
                cells: cells as u64,
                limit,
            })
        })?;
        let mut frame: Vec<u8> = Vec::new();
        frame
            .try_reserve_exact(size)
            .map_err(|_| Error::HostOutOfMemory {
                what: "height map image",
                bytes: size as u64,
            })?;
        frame.resize(size, 0);
        let out = reader.next_frame(&mut frame).map_err(decode)?;
        let stride = out.line_size;
        for z in 0..depth as usize {
            let row = frame
                .get(z * stride..z * stride + row_len * pixel_bytes)
                .ok_or_else(|| short_row(&fail, z))?;
            push_row(&mut heights, row, channels, bits);
        }
    } else {
        for z in 0..depth as usize {
            let row = reader.next_row().map_err(decode)?;
            let row = row
                .as_ref()
                .and_then(|r| r.data().get(..row_len * pixel_bytes))
                .ok_or_else(|| short_row(&fail, z))?;
            push_row(&mut heights, row, channels, bits);
        }
    }
    // The image data must end as it should (its checksums and end of
    // stream), so that a file cut short is refused even where every row was
    // already decoded.
    reader.finish().map_err(decode)?;
    Ok(HeightMap {
        width,
        depth,
        heights,
        bits,
    })
}

/// The size a PNG header gives, where it has no pixels (which the `png` crate
/// refuses as a malformed header without saying why): the header chunk
/// (`IHDR`) is always the first, its width and height the first two
/// big-endian words of its data. Leaves `reader` where it was.
fn zero_size<R: BufRead + Seek>(reader: &mut R) -> std::io::Result<Option<(u32, u32)>> {
    let start = reader.stream_position()?;
    let mut head = [0u8; 24];
    let mut filled = 0;
    while filled < head.len() {
        match reader.read(&mut head[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    reader.seek(std::io::SeekFrom::Start(start))?;
    if filled < head.len() || head[..8] != *b"\x89PNG\r\n\x1a\n" || head[12..16] != *b"IHDR" {
        return Ok(None);
    }
    let word = |i: usize| u32::from_be_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
    let (width, depth) = (word(16), word(20));
    Ok((width == 0 || depth == 0).then_some((width, depth)))
}

/// The error for row `z` missing or shorter than the header says.
fn short_row(fail: &impl Fn(HeightMapProblem) -> Error, z: usize) -> Error {
    fail(HeightMapProblem::Decode {
        message: format!("row {z} is missing or shorter than the header's width"),
    })
}

/// A PNG colour type as the errors name it.
fn color_name(color: png::ColorType) -> &'static str {
    match color {
        png::ColorType::Grayscale => "grey",
        png::ColorType::GrayscaleAlpha => "grey and alpha",
        png::ColorType::Rgb => "RGB",
        png::ColorType::Rgba => "RGBA",
        png::ColorType::Indexed => "indexed (palette)",
    }
}

/// The grey of an RGB sample: `(77 r + 150 g + 29 b) >> 8` (the weights sum
/// to 256, so the result stays within the samples' range).
fn grey(r: u16, g: u16, b: u16) -> u16 {
    ((77 * u32::from(r) + 150 * u32::from(g) + 29 * u32::from(b)) >> 8) as u16
}

/// Append the heights of one decoded row: `channels` samples of `bits` bits
/// (16-bit samples big-endian, as PNG stores them) a pixel.
fn push_row(heights: &mut Vec<u16>, row: &[u8], channels: usize, bits: u8) {
    let sample = |px: &[u8], c: usize| match bits {
        16 => u16::from_be_bytes([px[2 * c], px[2 * c + 1]]),
        _ => u16::from(px[c]),
    };
    let pixel_bytes = channels * usize::from(bits / 8);
    // ok (the indexing in `sample`): each chunk holds `channels` samples.
    heights.extend(row.chunks_exact(pixel_bytes).map(|px| match channels {
        1 | 2 => sample(px, 0),
        _ => grey(sample(px, 0), sample(px, 1), sample(px, 2)),
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grey_weights_keep_the_range() {
        assert_eq!(grey(255, 255, 255), 255);
        assert_eq!(grey(65535, 65535, 65535), 65535);
        assert_eq!(grey(0, 0, 0), 0);
        assert_eq!(grey(100, 0, 0), 30);
    }
}
