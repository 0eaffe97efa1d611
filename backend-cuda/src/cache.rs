//! On-disk cache of compiled kernels.
//!
//! Key: SHA-256 over every (patched) source file, the NVRTC options, the NVRTC
//! version, the device name and its architecture. Directory: `$PRISM_CACHE_DIR`,
//! else `$XDG_CACHE_HOME/prism`, else `~/.cache/prism`. An entry is
//! `MAGIC | sha256(payload) | payload`, payload = `cubin length (u64 LE) | cubin | log`,
//! written to a temporary file and renamed into place. Any failure (no home, a
//! read-only disk, a corrupt or truncated entry) only means compiling again:
//! the cache is never fatal.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"PRISMCU1";

/// The cache directory, if one can be named.
pub fn cache_dir() -> Option<PathBuf> {
    let non_empty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(d) = non_empty("PRISM_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = non_empty("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("prism"));
    }
    non_empty("HOME").map(|h| PathBuf::from(h).join(".cache").join("prism"))
}

/// The cache key of one compilation.
pub(crate) fn key(
    files: &[(&str, String)],
    options: &[String],
    nvrtc_version: (u32, u32),
    device_name: &str,
    arch: (u32, u32),
) -> String {
    let mut h = Sha256::new();
    for (name, src) in files {
        h.update(name.as_bytes());
        h.update([0]);
        h.update((src.len() as u64).to_le_bytes());
        h.update(src.as_bytes());
    }
    for o in options {
        h.update(o.as_bytes());
        h.update([0]);
    }
    h.update(format!(
        "nvrtc {}.{}\0device {device_name}\0sm_{}{}",
        nvrtc_version.0, nvrtc_version.1, arch.0, arch.1
    ));
    let digest = h.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sm{}{}-{}", arch.0, arch.1, &hex[..40])
}

fn path_of(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.cubin"))
}

/// The cached `(cubin, log)` for `key` in `dir`, if present and intact.
pub(crate) fn load(dir: &Path, key: &str) -> Option<(Vec<u8>, String)> {
    let bytes = std::fs::read(path_of(dir, key)).ok()?;
    decode(&bytes)
}

fn decode(bytes: &[u8]) -> Option<(Vec<u8>, String)> {
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    let (sum, payload) = (rest.get(..32)?, rest.get(32..)?);
    if Sha256::digest(payload).as_slice() != sum {
        return None;
    }
    let len = u64::from_le_bytes(payload.get(..8)?.try_into().ok()?);
    let len = usize::try_from(len).ok()?;
    let cubin = payload.get(8..8usize.checked_add(len)?)?.to_vec();
    let log = String::from_utf8_lossy(payload.get(8 + len..)?).into_owned();
    Some((cubin, log))
}

fn encode(cubin: &[u8], log: &str) -> Vec<u8> {
    let mut payload = Vec::with_capacity(8 + cubin.len() + log.len());
    payload.extend_from_slice(&(cubin.len() as u64).to_le_bytes());
    payload.extend_from_slice(cubin);
    payload.extend_from_slice(log.as_bytes());
    let mut out = Vec::with_capacity(MAGIC.len() + 32 + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&Sha256::digest(&payload));
    out.extend_from_slice(&payload);
    out
}

/// Store `(cubin, log)` under `key` in `dir`; failures are ignored (see the module docs).
pub(crate) fn store(dir: &Path, key: &str, cubin: &[u8], log: &str) {
    let path = path_of(dir, key);
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let tmp = dir.join(format!(".{key}.{}.tmp", std::process::id()));
    if std::fs::write(&tmp, encode(cubin, log)).is_ok() && std::fs::rename(&tmp, &path).is_ok() {
        return;
    }
    let _ = std::fs::remove_file(&tmp);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_corruption_is_detected() {
        let e = encode(b"\x7fELF cubin bytes", "ptxas info");
        assert_eq!(
            decode(&e),
            Some((b"\x7fELF cubin bytes".to_vec(), "ptxas info".to_owned()))
        );
        for cut in [0, 5, 20, 40, e.len() - 1] {
            assert_eq!(decode(&e[..cut]), None, "truncated at {cut}");
        }
        let mut flipped = e.clone();
        let last = flipped.len() - 3;
        flipped[last] ^= 1;
        assert_eq!(decode(&flipped), None);
    }

    #[test]
    fn keys_depend_on_everything() {
        let files = vec![("a.cu", "x".to_owned())];
        let opts = vec!["-DX=1".to_owned()];
        let k = key(&files, &opts, (13, 0), "H100", (9, 0));
        assert_ne!(
            k,
            key(&[("a.cu", "y".to_owned())], &opts, (13, 0), "H100", (9, 0))
        );
        assert_ne!(
            k,
            key(&files, &["-DX=2".to_owned()], (13, 0), "H100", (9, 0))
        );
        assert_ne!(k, key(&files, &opts, (13, 1), "H100", (9, 0)));
        assert_ne!(k, key(&files, &opts, (13, 0), "H200", (9, 0)));
        assert_ne!(k, key(&files, &opts, (13, 0), "H100", (8, 9)));
        assert!(k.starts_with("sm90-"));
    }
}
