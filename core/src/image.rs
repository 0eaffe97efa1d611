//! Images: linear float radiance, or 8-bit sRGB for display and download.

use crate::error::Error;
use crate::gpu::Srgb8Slot;
use alloc::vec::Vec;
use glam::Vec3;

/// Largest width or height accepted.
pub const MAX_IMAGE_DIMENSION: u32 = 1 << 16;
/// Largest pixel count accepted (a 32768 x 32768 image).
pub const MAX_IMAGE_PIXELS: u64 = 1 << 30;

/// How an [`Image`] stores its pixels. Backends write the format asked for, so
/// an 8-bit frame never crosses the bus as floats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PixelFormat {
    /// Linear RGB radiance as `f32`, `a` = 1 (HDR, EXR output, comparisons).
    LinearF32,
    /// sRGB-encoded 8-bit RGBA, `a` = 255 (display, PNG output).
    Srgba8,
}

/// A rendered frame: `width x height` pixels, row-major from the top-left.
#[derive(Clone, Debug, PartialEq)]
pub struct Image {
    width: u32,
    height: u32,
    format: PixelFormat,
    linear: Vec<[f32; 4]>,
    rgba8: Vec<[u8; 4]>,
}

impl Image {
    /// A black image. Fails with [`Error::ImageSize`] on a zero side, a side over
    /// 65,536, more than 2^30 pixels, or when the host cannot allocate it.
    pub fn new(width: u32, height: u32, format: PixelFormat) -> Result<Image, Error> {
        let n = Self::checked_pixels(width, height)?;
        let oom = Error::ImageSize {
            width,
            height,
            reason: "not enough host memory for the image",
        };
        let mut img = Image {
            width,
            height,
            format,
            linear: Vec::new(),
            rgba8: Vec::new(),
        };
        match format {
            PixelFormat::LinearF32 => {
                img.linear.try_reserve_exact(n).map_err(|_| oom)?;
                img.linear.resize(n, [0.0, 0.0, 0.0, 1.0]);
            }
            PixelFormat::Srgba8 => {
                img.rgba8.try_reserve_exact(n).map_err(|_| oom)?;
                img.rgba8.resize(n, [0, 0, 0, 255]);
            }
        }
        Ok(img)
    }

    /// Pixel count of a `width x height` image, or the error [`Image::new`] would give.
    pub fn checked_pixels(width: u32, height: u32) -> Result<usize, Error> {
        if width == 0 || height == 0 {
            return Err(Error::ImageSize {
                width,
                height,
                reason: "width and height must be at least 1",
            });
        }
        if width > MAX_IMAGE_DIMENSION || height > MAX_IMAGE_DIMENSION {
            return Err(Error::ImageSize {
                width,
                height,
                reason: "width and height must be at most 65536",
            });
        }
        let n = width as u64 * height as u64;
        if n > MAX_IMAGE_PIXELS {
            return Err(Error::ImageSize {
                width,
                height,
                reason: "more than 2^30 pixels",
            });
        }
        Ok(n as usize)
    }

    /// Width in pixels.
    #[inline]
    pub fn width(&self) -> u32 {
        self.width
    }
    /// Height in pixels.
    #[inline]
    pub fn height(&self) -> u32 {
        self.height
    }
    /// Storage format.
    #[inline]
    pub fn format(&self) -> PixelFormat {
        self.format
    }
    /// `width * height`.
    #[inline]
    pub fn pixel_count(&self) -> usize {
        self.width as usize * self.height as usize
    }
    /// Linear pixels (empty unless the format is [`PixelFormat::LinearF32`]).
    #[inline]
    pub fn linear(&self) -> &[[f32; 4]] {
        &self.linear
    }
    /// Linear pixels, writable.
    #[inline]
    pub fn linear_mut(&mut self) -> &mut [[f32; 4]] {
        &mut self.linear
    }
    /// 8-bit pixels (empty unless the format is [`PixelFormat::Srgba8`]).
    #[inline]
    pub fn rgba8(&self) -> &[[u8; 4]] {
        &self.rgba8
    }
    /// 8-bit pixels, writable.
    #[inline]
    pub fn rgba8_mut(&mut self) -> &mut [[u8; 4]] {
        &mut self.rgba8
    }

    /// The image as sRGB 8-bit RGBA bytes, converting linear pixels if needed
    /// (the same bytes as [`encode_srgba8`] on each pixel).
    ///
    /// Large images encode through an [`Srgb8Table`] (17x faster a channel than
    /// the curve once its 12,000 encodings are paid), small ones through the
    /// curve itself; both give the same bytes. Fails with [`Error::ImageSize`]
    /// when the host cannot allocate the 4 bytes a pixel, as [`Image::new`] does.
    pub fn to_rgba8_bytes(&self) -> Result<Vec<u8>, Error> {
        let n = self.linear.len().max(self.rgba8.len());
        let mut out = Vec::new();
        out.try_reserve_exact(n.saturating_mul(4))
            .map_err(|_| Error::ImageSize {
                width: self.width,
                height: self.height,
                reason: "not enough host memory for the 8-bit copy of the image",
            })?;
        match self.format {
            PixelFormat::Srgba8 => out.extend(self.rgba8.iter().flatten()),
            PixelFormat::LinearF32 if self.linear.len() >= TABLE_ENCODE_MIN_PIXELS => {
                let table = Srgb8Table::new();
                out.extend(
                    self.linear
                        .iter()
                        .flat_map(|p| table.encode_srgba8(Vec3::new(p[0], p[1], p[2]))),
                );
            }
            PixelFormat::LinearF32 => out.extend(
                self.linear
                    .iter()
                    .flat_map(|p| encode_srgba8(Vec3::new(p[0], p[1], p[2]))),
            ),
        }
        Ok(out)
    }
}

/// One linear channel to 8-bit sRGB: clamp to `[0, 1]`, the sRGB transfer
/// curve, round to nearest. NaN encodes as 0.
#[inline]
pub fn linear_to_srgb8(c: f32) -> u8 {
    let c = if c > 0.0 { c.min(1.0) } else { 0.0 };
    let s = if c <= 0.003_130_8 {
        12.92 * c
    } else {
        1.055 * libm::powf(c, 1.0 / 2.4) - 0.055
    };
    (s * 255.0 + 0.5) as u8
}

/// A linear colour to an sRGB 8-bit RGBA pixel with alpha 255.
#[inline]
pub fn encode_srgba8(c: Vec3) -> [u8; 4] {
    [
        linear_to_srgb8(c.x),
        linear_to_srgb8(c.y),
        linear_to_srgb8(c.z),
        255,
    ]
}

/// Slots of an [`Srgb8Table`] per unit of linear value.
///
/// 4096 makes a slot (2.4e-4 wide) narrower than the closest two steps of
/// [`linear_to_srgb8`], which lie 1 / (255 * 12.92) = 3.0e-4 apart where the
/// curve is steepest (its linear segment), so a slot holds at most one step.
/// A power of two, so that `c * 4096` is exact and the slot index is its floor.
pub const SRGB8_TABLE_SLOTS: u32 = 4096;

/// Pixels from which [`Image::to_rgba8_bytes`] builds an [`Srgb8Table`]: the
/// table costs about 12,000 curve encodings, as many as 4,000 pixels at three
/// a pixel, so from four times that it takes most of the encoding's time off.
const TABLE_ENCODE_MIN_PIXELS: usize = 16_384;

/// `step` of a slot without a step: above every clamped value.
const NO_STEP: f32 = 2.0;

/// [`linear_to_srgb8`] as a table lookup, equal to it for every `f32`.
///
/// The encoding is a staircase of 256 levels over `[0, 1]`. Cut `[0, 1)` into
/// [`SRGB8_TABLE_SLOTS`] equal slots (plus one for `1.0` itself); each slot
/// starts at some level and steps up by one at most once, so a slot is its
/// start level and the smallest value at which it steps. A lookup is a clamp,
/// a multiply, one 8-byte load and a compare, where the curve costs a `powf`;
/// and because the table is built from [`linear_to_srgb8`] itself, a device
/// that encodes through the same table writes exactly core's bytes, which no
/// device `pow` promises.
///
/// ```
/// use prism_core::image::{linear_to_srgb8, Srgb8Table};
///
/// let table = Srgb8Table::new();
/// for c in [-1.0, 0.0, 0.0031308, 0.2, 0.5, 0.99, 1.0, 7.0, f32::NAN] {
///     assert_eq!(table.encode(c), linear_to_srgb8(c));
/// }
/// // The device buffer: SRGB8_TABLE_SLOTS + 1 slots of 8 bytes.
/// assert_eq!(bytemuck::cast_slice::<_, u8>(table.slots()).len(), 4097 * 8);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Srgb8Table {
    slots: Vec<Srgb8Slot>,
}

impl Default for Srgb8Table {
    fn default() -> Self {
        Self::new()
    }
}

impl Srgb8Table {
    /// Build the table from [`linear_to_srgb8`]: two encodings per slot, and a
    /// bisection over the `f32` bit patterns of the slots that hold a step
    /// (positive floats order as their bits): 8,193 encodings at the slots'
    /// ends and a bisection of at most 30 for each of the 255 slots with a
    /// step, about 12,000 in all.
    pub fn new() -> Srgb8Table {
        let n = SRGB8_TABLE_SLOTS;
        let mut slots = Vec::with_capacity(n as usize + 1);
        for i in 0..n {
            // Both ends are exact: i and i + 1 are below 2^24, the scale a power of two.
            let first = i as f32 / n as f32;
            let end = (i + 1) as f32 / n as f32;
            let last = f32::from_bits(end.to_bits() - 1);
            let base = linear_to_srgb8(first);
            let top = linear_to_srgb8(last);
            debug_assert!(top <= base.saturating_add(1), "slot {i} holds two steps");
            let step = if top == base {
                NO_STEP
            } else {
                // Invariant: encode(lo) == base < encode(hi).
                let (mut lo, mut hi) = (first.to_bits(), last.to_bits());
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2;
                    if linear_to_srgb8(f32::from_bits(mid)) > base {
                        hi = mid;
                    } else {
                        lo = mid;
                    }
                }
                f32::from_bits(hi)
            };
            slots.push(Srgb8Slot {
                step: step.to_bits(),
                base: base as u32,
            });
        }
        // The last slot holds 1.0 alone.
        slots.push(Srgb8Slot {
            step: NO_STEP.to_bits(),
            base: linear_to_srgb8(1.0) as u32,
        });
        Srgb8Table { slots }
    }

    /// The slots, `SRGB8_TABLE_SLOTS + 1` of them, to upload to a device.
    #[inline]
    pub fn slots(&self) -> &[Srgb8Slot] {
        &self.slots
    }

    /// One linear channel to 8-bit sRGB, the same value as [`linear_to_srgb8`].
    /// The device kernels mirror this.
    #[inline]
    pub fn encode(&self, c: f32) -> u8 {
        let c = if c > 0.0 { c.min(1.0) } else { 0.0 };
        // c * 4096 is exact (a power of two), so the cast is its floor: 0..=4096.
        match self.slots.get((c * SRGB8_TABLE_SLOTS as f32) as usize) {
            Some(slot) => (slot.base + (c >= f32::from_bits(slot.step)) as u32) as u8,
            None => linear_to_srgb8(c),
        }
    }

    /// A linear colour to an sRGB 8-bit RGBA pixel with alpha 255, the same
    /// bytes as [`encode_srgba8`].
    #[inline]
    pub fn encode_srgba8(&self, c: Vec3) -> [u8; 4] {
        [self.encode(c.x), self.encode(c.y), self.encode(c.z), 255]
    }
}
