//! The wgpu backend on the fast tree (`BuildQuality::Fast`, which `set_scene`
//! builds on the device for a flat triangle mesh) against core's walk of the
//! same tree and Embree's reference hits.
//!
//! Without an adapter this test prints why and passes, unless
//! `PRISM_REQUIRE_WGPU=1` (CI sets it): then it fails.

use prism_core::glam::Vec3;
use prism_core::reference::AgreementCounts;
use prism_core::{Accel, Backend, BuildQuality, Error, Hit, Material, Ray};
use prism_wgpu::{WgpuBackend, WgpuOptions};
use std::path::PathBuf;

/// `intersect` and `occluded` on bunny's fast tree, every 16th ray of both
/// sets (lavapipe stays under a few seconds): closest hits agree with
/// Embree's and equal core's on the same tree; any hit equals core's.
#[test]
fn fast_tree_traces_the_reference_hits() {
    let gpu = match WgpuBackend::new(WgpuOptions {
        allow_software: true,
        ..Default::default()
    }) {
        Ok(b) => Some(b),
        Err(e) => {
            let required = std::env::var("PRISM_REQUIRE_WGPU").is_ok_and(|v| v == "1");
            assert!(
                !required && matches!(e, Error::BackendUnavailable { .. }),
                "no usable wgpu adapter: {e}"
            );
            eprintln!("SKIPPED: no wgpu adapter: {e}; PRISM_REQUIRE_WGPU=1 makes this a failure");
            None
        }
    };
    let Some(mut gpu) = gpu else { return };
    let dir = std::env::var_os("PRISM_SCENES")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/scenes"));
    if !dir.join("bunny.obj").exists() {
        assert!(
            !std::env::var("PRISM_REQUIRE_SCENES").is_ok_and(|v| v == "1"),
            "PRISM_REQUIRE_SCENES=1 but {} holds no bunny.obj",
            dir.display()
        );
        eprintln!("SKIPPED: no shared scenes");
        return;
    }
    let mesh = prism::mesh::load_mesh(dir.join("bunny.obj")).expect("read obj");
    let (mut scene, _) =
        prism::mesh_scene(&mesh, Material::lambertian(Vec3::splat(0.5))).expect("mesh");
    scene.build_quality = BuildQuality::Fast;
    gpu.set_scene(&scene).expect("set_scene");
    let accel = Accel::build(&scene).expect("core's Accel");
    assert_eq!(accel.build_quality(), BuildQuality::Fast);
    for set in ["primary", "diffuse"] {
        let all = prism::rays::read_rays(dir.join(format!("bunny.{set}.rays"))).expect("rays");
        let all_ref = prism::rays::read_hits(dir.join(format!("bunny.{set}.hits"))).expect("hits");
        let rays: Vec<Ray> = all.iter().step_by(16).copied().collect();
        let reference: Vec<(f32, u32)> = all_ref.iter().step_by(16).copied().collect();
        let mut hits = vec![Hit::MISS; rays.len()];
        gpu.intersect(&rays, &mut hits).expect("intersect");
        let counts = AgreementCounts::compare(&rays, &hits, &reference);
        eprintln!("bunny.{set} on the fast tree vs Embree: {counts:?}");
        assert!(counts.passed(), "bunny.{set}: {counts:?}");
        let core: Vec<(f32, u32)> = rays
            .iter()
            .map(|r| {
                let h = accel.intersect(r);
                (h.t, h.prim)
            })
            .collect();
        assert!(
            AgreementCounts::compare(&rays, &hits, &core).passed(),
            "bunny.{set}: differs from core on the same tree"
        );
        let mut occ = vec![false; rays.len()];
        gpu.occluded(&rays, &mut occ).expect("occluded");
        let differ = occ
            .iter()
            .zip(&rays)
            .filter(|(o, r)| **o != accel.occluded(r))
            .count();
        assert_eq!(differ, 0, "bunny.{set}: any hit differs from core's");
    }
}
