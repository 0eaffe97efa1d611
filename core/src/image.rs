//! Images: linear float radiance, or 8-bit sRGB for display and download.

use crate::error::Error;
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
    /// A black image. Fails on a zero or oversized dimension, or when the host
    /// cannot allocate it.
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

    /// The image as sRGB 8-bit RGBA bytes, converting linear pixels if needed.
    pub fn to_rgba8_bytes(&self) -> Vec<u8> {
        match self.format {
            PixelFormat::Srgba8 => self.rgba8.iter().flatten().copied().collect(),
            PixelFormat::LinearF32 => self
                .linear
                .iter()
                .flat_map(|p| encode_srgba8(Vec3::new(p[0], p[1], p[2])))
                .collect(),
        }
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
