//! Decoding fuzz bytes: [`Bytes`] reads any input as some value, and favours
//! the floats that break geometry code (see the crate docs).

use glam::Vec3;

/// A reader of fuzz bytes: every read succeeds, yielding zeros once the bytes
/// run out, so any input decodes to something.
#[derive(Clone, Debug)]
pub struct Bytes<'a> {
    data: &'a [u8],
}

impl<'a> Bytes<'a> {
    /// Read from `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    /// Whether every byte was read.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The next byte, or 0.
    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// The next four bytes, little-endian.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    /// A count or size: small values most often, then the limits and raw values.
    pub fn size(&mut self, limit: u32) -> u32 {
        match self.u8() {
            t @ 0..=191 => u32::from(t % 8),
            192..=207 => limit,
            208..=215 => limit.saturating_add(1),
            216..=223 => u32::MAX,
            224..=231 => limit.saturating_sub(1),
            _ => self.u32(),
        }
    }

    /// A float, favouring the values that break geometry code (see the module docs).
    pub fn f32(&mut self) -> f32 {
        let tag = self.u8();
        if tag < 192 {
            return grid(tag);
        }
        match tag - 192 {
            0 => 0.0,
            1 => -0.0,
            2 => f32::NAN,
            3 => f32::INFINITY,
            4 => f32::NEG_INFINITY,
            5 => f32::MAX,
            6 => f32::MIN,
            7 => f32::MIN_POSITIVE,
            8 => f32::from_bits(1),
            9 => -f32::from_bits(self.u32() & 0x007f_ffff),
            10 => f32::from_bits(self.u32()),
            11 => 1e30,
            12 => -1e30,
            13 => 1e-30,
            14 => 1e8,
            15 => -1e8,
            16 => f32::EPSILON,
            17 => grid(self.u8()).next_up(),
            18 => grid(self.u8()).next_down(),
            _ => {
                let base = grid(self.u8());
                let exp = i32::from(self.u8() as i8) / 4;
                base * 2f32.powi(exp)
            }
        }
    }

    /// Three floats.
    pub fn vec3(&mut self) -> Vec3 {
        Vec3::new(self.f32(), self.f32(), self.f32())
    }

    /// A number in `[0, 1]` in steps of 1/255.
    pub fn unit(&mut self) -> f32 {
        f32::from(self.u8()) / 255.0
    }
}

/// The grid of [`Bytes::f32`]: `-12 ..= 11.875` in steps of 1/8.
fn grid(tag: u8) -> f32 {
    (f32::from(tag % 192) - 96.0) / 8.0
}
