//! `intersect` and `occluded` on every ray set of the shared scenes agree with
//! Embree's reference hits (prism_core::reference's rule), on the CPU backend.
//!
//! The scenes are read from `prism::conformance::default_scenes_dir()`
//! (`$PRISM_SCENES`, else `../shared/scenes` beside this checkout). Where they
//! are absent the Embree tests say so and pass, unless `PRISM_REQUIRE_SCENES=1`
//! (CI sets it): then they fail, as does `builtin_cases` finding no ray sets.

use prism::conformance::{builtin_cases, default_scenes_dir, scenes_required};
use prism::{Backend, Hit, Material};
use std::path::PathBuf;

fn shared() -> Option<PathBuf> {
    let dir = default_scenes_dir();
    if dir.join("bunny.obj").exists() {
        return Some(dir);
    }
    assert!(
        !scenes_required(),
        "PRISM_REQUIRE_SCENES=1 but {} holds no bunny.obj",
        dir.display()
    );
    eprintln!(
        "SKIPPED: {} is absent (the reference meshes and hits live there); \
         set PRISM_SCENES to their directory, and PRISM_REQUIRE_SCENES=1 to fail instead",
        dir.display()
    );
    None
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

/// `builtin_cases` finds the shared ray sets (and under `PRISM_REQUIRE_SCENES=1`
/// a missing directory fails its notes rather than being skipped).
#[test]
fn builtin_cases_find_the_shared_ray_sets() {
    let cases = builtin_cases(None);
    if shared().is_none() {
        assert!(cases.meshes.is_empty());
        assert!(
            cases.notes.iter().all(|n| !n.fails),
            "without PRISM_REQUIRE_SCENES a missing directory is no failure: {:?}",
            cases.notes
        );
        return;
    }
    assert!(cases.notes.is_empty(), "{:?}", cases.notes);
    let mut names: Vec<String> = cases
        .meshes
        .iter()
        .flat_map(|m| m.sets.iter().map(move |s| format!("{}.{}", m.name, s.name)))
        .collect();
    names.sort();
    for want in [
        "bunny.diffuse",
        "bunny.primary",
        "ogre.diffuse",
        "ogre.primary",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
    }
    for m in &cases.meshes {
        for s in &m.sets {
            assert!(!s.rays.is_empty(), "{}.{}", m.name, s.name);
            assert_eq!(s.rays.len(), s.reference.len(), "{}.{}", m.name, s.name);
        }
    }
}

#[test]
fn obj_triangle_ids_follow_file_order() {
    let obj = b"v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\nf -4 -3 -1\n";
    let m = prism::mesh::parse_obj(obj, "fan.obj").expect("parse");
    // The quad fans into (v0 v1 v2), (v0 v2 v3); the third face, (v0 v1 v3),
    // differs from both, so a swap of any two would show.
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
        [glam::Vec3::ZERO, glam::Vec3::X, glam::Vec3::Y]
    );
}
