//! Ray and hit files of `shared/scenes`: little-endian `f32 x 8` per ray, and
//! `(t: f32, prim: u32)` per hit.

use crate::Error;
use prism_core::Ray;
use std::path::Path;

fn read(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| Error::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// Read a `.rays` file.
pub fn read_rays(path: impl AsRef<Path>) -> Result<Vec<Ray>, Error> {
    let path = path.as_ref();
    let bytes = read(path)?;
    if bytes.len() % 32 != 0 {
        return Err(Error::Parse {
            path: path.display().to_string(),
            line: None,
            message: format!(
                "{} bytes is not a whole number of 32-byte rays",
                bytes.len()
            ),
        });
    }
    Ok(bytes
        .chunks_exact(32)
        .map(|c| {
            // ok: `c` is a 32-byte chunk and `k` is at most 7.
            let f =
                |k: usize| f32::from_le_bytes([c[4 * k], c[4 * k + 1], c[4 * k + 2], c[4 * k + 3]]);
            Ray::segment(
                glam::Vec3::new(f(0), f(1), f(2)),
                glam::Vec3::new(f(4), f(5), f(6)),
                f(3),
                f(7),
            )
        })
        .collect())
}

/// Read a `.hits` file as `(t, prim)` pairs (`prim = u32::MAX` for a miss).
pub fn read_hits(path: impl AsRef<Path>) -> Result<Vec<(f32, u32)>, Error> {
    let path = path.as_ref();
    let bytes = read(path)?;
    if bytes.len() % 8 != 0 {
        return Err(Error::Parse {
            path: path.display().to_string(),
            line: None,
            message: format!("{} bytes is not a whole number of 8-byte hits", bytes.len()),
        });
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| {
            (
                f32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
            )
        })
        .collect())
}
