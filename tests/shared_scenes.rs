//! `intersect` and `occluded` on every ray set of `../shared/scenes` agree with
//! Embree's reference hits (prism_core::reference's rule), on the CPU backend.

use prism::{Backend, Hit, Material};
use std::path::PathBuf;

fn shared() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/scenes");
    if dir.join("bunny.obj").exists() {
        Some(dir)
    } else {
        eprintln!(
            "skipped: {} is absent (the reference meshes and hits live there)",
            dir.display()
        );
        None
    }
}

fn check(mesh: &str) {
    let Some(dir) = shared() else { return };
    let m = prism::mesh::load_mesh(dir.join(format!("{mesh}.obj"))).expect("mesh");
    let (scene, _) = prism::mesh_scene(&m, Material::lambertian(glam::Vec3::ONE)).expect("scene");
    let mut cpu = prism_cpu::CpuBackend::new().expect("cpu");
    cpu.set_scene(&scene).expect("set_scene");
    for set in ["primary", "diffuse"] {
        let rays = prism::rays::read_rays(dir.join(format!("{mesh}.{set}.rays"))).expect("rays");
        let reference =
            prism::rays::read_hits(dir.join(format!("{mesh}.{set}.hits"))).expect("hits");
        assert_eq!(rays.len(), reference.len());
        let mut hits = vec![Hit::MISS; rays.len()];
        cpu.intersect(&rays, &mut hits).expect("intersect");
        let c = prism::reference::AgreementCounts::compare(&rays, &hits, &reference);
        eprintln!(
            "{mesh}.{set}: {} match, {} ties, {} mismatches",
            c.matches, c.ties, c.mismatches
        );
        assert!(
            c.passed(),
            "{mesh}.{set}: {c:?}, first mismatch ray {:?}",
            c.first_mismatch.map(|i| (rays[i], hits[i], reference[i]))
        );
        assert!(
            c.ties * 10_000 < c.total,
            "{mesh}.{set}: too many ties ({})",
            c.ties
        );
        let mut occ = vec![false; rays.len()];
        cpu.occluded(&rays, &mut occ).expect("occluded");
        let bad = occ
            .iter()
            .zip(&reference)
            .filter(|(o, r)| **o != (r.1 != Hit::NO_PRIM))
            .count();
        assert_eq!(
            bad, 0,
            "{mesh}.{set}: occluded disagrees with the reference on {bad} rays"
        );
    }
}

#[test]
fn bunny_agrees_with_embree() {
    check("bunny");
}

#[test]
fn ogre_agrees_with_embree() {
    check("ogre");
}

#[test]
fn obj_triangle_ids_follow_file_order() {
    let obj = b"v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\nf -4 -2 -1\n";
    let m = prism::mesh::parse_obj(obj, "fan.obj").expect("parse");
    // The quad fans into (v0 v1 v2), (v0 v2 v3); the third face comes after it.
    assert_eq!(m.triangles.len(), 3);
    let p = |t: usize, k: usize| m.positions[m.triangles[t][k] as usize];
    assert_eq!(
        [p(0, 0), p(0, 1), p(0, 2)],
        [
            glam::Vec3::ZERO,
            glam::Vec3::X,
            glam::Vec3::new(1.0, 1.0, 0.0)
        ]
    );
    assert_eq!(
        [p(1, 0), p(1, 1), p(1, 2)],
        [
            glam::Vec3::ZERO,
            glam::Vec3::new(1.0, 1.0, 0.0),
            glam::Vec3::Y
        ]
    );
    assert_eq!(
        [p(2, 0), p(2, 1), p(2, 2)],
        [
            glam::Vec3::ZERO,
            glam::Vec3::new(1.0, 1.0, 0.0),
            glam::Vec3::Y
        ]
    );
}
