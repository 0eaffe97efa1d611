//! Ray, hit and instance files of `shared/scenes`: little-endian `f32 x 8` per
//! ray, `(t: f32, prim: u32)` per hit, `(t: f32, prim: u32, instance: u32)`
//! per instanced hit, and a row-major `3 x 4` object-to-world matrix (`f32 x
//! 12`) per instance.

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

/// The little-endian words of a file whose size must be a whole number of
/// `record`-byte records of `what`.
fn words(path: &Path, record: usize, what: &str) -> Result<Vec<[u8; 4]>, Error> {
    let bytes = read(path)?;
    if bytes.len() % record != 0 {
        return Err(Error::Parse {
            path: path.display().to_string(),
            line: None,
            message: format!(
                "{} bytes is not a whole number of {record}-byte {what}",
                bytes.len()
            ),
        });
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect())
}

/// Read a `.ihits` file (instanced hits) as `(t, prim, instance)` triples
/// (`prim = instance = u32::MAX` for a miss).
pub fn read_instance_hits(path: impl AsRef<Path>) -> Result<Vec<(f32, u32, u32)>, Error> {
    let w = words(path.as_ref(), 12, "instanced hits")?;
    Ok(w.chunks_exact(3)
        .map(|h| {
            (
                f32::from_le_bytes(h[0]),
                u32::from_le_bytes(h[1]),
                u32::from_le_bytes(h[2]),
            )
        })
        .collect())
}

/// Read a `.instances` file: one object-to-world transform per instance.
/// Every transform is returned as given; a scene built from them refuses a
/// non-finite or singular one, naming the instance.
pub fn read_instances(path: impl AsRef<Path>) -> Result<Vec<glam::Affine3A>, Error> {
    let w = words(path.as_ref(), 48, "instance transforms")?;
    Ok(w.chunks_exact(12)
        .map(|m| {
            let f = |k: usize| f32::from_le_bytes(m[k]);
            prism_core::instance::from_rows([
                [f(0), f(1), f(2), f(3)],
                [f(4), f(5), f(6), f(7)],
                [f(8), f(9), f(10), f(11)],
            ])
        })
        .collect())
}

/// Write rays as a `.rays` file (their masks are not part of the format).
pub fn write_rays(path: impl AsRef<Path>, rays: &[Ray]) -> Result<(), Error> {
    let path = path.as_ref();
    let mut bytes = Vec::with_capacity(rays.len() * 32);
    for r in rays {
        for f in r.record() {
            bytes.extend_from_slice(&f.to_le_bytes());
        }
    }
    std::fs::write(path, bytes).map_err(|e| Error::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}
