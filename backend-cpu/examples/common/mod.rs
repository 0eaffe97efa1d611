//! What the CPU backend's benchmark examples share: the shared scenes' OBJ
//! rule, a mesh as a flat scene, their binary files' words, and the
//! process's CPU time. Each
//! example uses a part of it.
#![allow(dead_code)]

use glam::Vec3;

/// A mesh by the rule of `shared/scenes/README.md` (tobj's fans, file order).
pub fn load_obj(path: &str) -> Result<(Vec<Vec3>, Vec<[u32; 3]>), String> {
    let options = tobj::LoadOptions {
        triangulate: true,
        single_index: false,
        ignore_points: true,
        ignore_lines: true,
    };
    let (models, _) = tobj::load_obj(path, &options).map_err(|e| format!("{path}: {e}"))?;
    let (mut positions, mut triangles) = (Vec::new(), Vec::new());
    for model in models {
        let m = model.mesh;
        let base = positions.len() as u32;
        positions.extend(
            m.positions
                .chunks_exact(3)
                .map(|p| Vec3::new(p[0], p[1], p[2])),
        );
        triangles.extend(
            m.indices
                .chunks_exact(3)
                .map(|t| [base + t[0], base + t[1], base + t[2]]),
        );
    }
    Ok((positions, triangles))
}

/// A flat scene of one mesh (`positions`, `triangles`) in one grey material.
pub fn flat_mesh_scene(
    positions: &[Vec3],
    triangles: &[[u32; 3]],
) -> Result<prism_core::Scene, String> {
    let mut scene = prism_core::Scene::new();
    let m = scene.add_material(prism_core::Material::lambertian(Vec3::ONE));
    scene
        .add_mesh(positions, triangles, m)
        .map_err(|e| e.to_string())?;
    Ok(scene)
}

/// The little-endian `u32`/`f32` words of a file.
pub fn words(path: &str) -> Result<Vec<u32>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    Ok(bytes
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect())
}

/// Seconds of CPU time the process has used (all its threads).
#[cfg(unix)]
pub fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call to fill.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) } == 0;
    if ok {
        ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
    } else {
        f64::NAN
    }
}

/// CPU time is not read on this platform.
#[cfg(not(unix))]
pub fn cpu_seconds() -> f64 {
    f64::NAN
}
