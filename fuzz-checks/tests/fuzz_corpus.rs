//! Replays every committed fuzz corpus file (`fuzz/corpus/<target>/*`) through
//! the check its fuzz target runs (`prism_fuzz_checks`), on stable `cargo test`:
//! crashes found by fuzzing stay fixed.

use std::path::Path;

/// Every file of one target's corpus, through its check; all failures reported.
fn replay(target: &str) {
    let (_, check) = prism_fuzz_checks::TARGETS
        .into_iter()
        .find(|(name, _)| *name == target)
        .unwrap_or_else(|| panic!("no check named {target}"));
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "{}: the corpus has no files",
        dir.display()
    );
    let failures: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let data = std::fs::read(path).expect("corpus file");
            check(&data)
                .err()
                .map(|v| format!("{}: {v}", path.display()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} corpus files of {target} fail:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn mesh_obj_corpus() {
    replay("mesh_obj");
}

#[test]
fn mesh_ply_corpus() {
    replay("mesh_ply");
}

#[test]
fn scene_trace_corpus() {
    replay("scene_trace");
}

#[test]
fn render_settings_corpus() {
    replay("render_settings");
}

#[test]
fn height_map_png_corpus() {
    replay("height_map_png");
}

/// Every fuzz target has a test above and a corpus directory.
#[test]
fn every_target_is_replayed() {
    let source = include_str!("fuzz_corpus.rs");
    for (name, _) in prism_fuzz_checks::TARGETS {
        assert!(
            source.contains(&format!("replay(\"{name}\")")),
            "fuzz target {name} has no replay test"
        );
        let manifest = include_str!("../../fuzz/Cargo.toml");
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "fuzz target {name} is missing from fuzz/Cargo.toml"
        );
    }
}

/// The face-plane excuse counts only the boxes on the path to the hit
/// primitive: each box holds the next, the last holds the primitive, and a
/// ray lying in a face plane of a box off that path is not excused.
#[test]
fn face_plane_excuse_uses_the_path_to_the_primitive() {
    use glam::Vec3;
    use prism_core::{Accel, Material, Ray, Scene};
    use prism_fuzz_checks::{boxes_to_primitive, in_face_plane};
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
    // Two well separated rows of spheres, so the root splits them.
    for i in 0..8 {
        scene.add_sphere(Vec3::new(i as f32 * 3.0, 0.0, 0.0), 1.0, m);
        scene.add_sphere(Vec3::new(i as f32 * 3.0, 100.0, 0.0), 1.0, m);
    }
    let accel = Accel::build(&scene).expect("spheres build");
    let (nodes, prims) = (accel.nodes(), accel.primitives());
    let contains = |outer: &([f32; 4], [f32; 4]), inner: &([f32; 4], [f32; 4])| {
        (0..3).all(|k| outer.0[k] <= inner.0[k] && inner.1[k] <= outer.1[k])
    };
    for prim in 0..16u32 {
        let path = boxes_to_primitive(nodes, prims, prim);
        assert!(path.len() >= 2, "prim {prim}: path {path:?}");
        assert!(
            path.windows(2).all(|w| contains(&w[0], &w[1])),
            "prim {prim}"
        );
        let c = scene.spheres()[prim as usize];
        let last = path.last().expect("non-empty");
        assert!(
            (0..3).all(|k| last.0[k] <= c[k] - 1.0 && c[k] + 1.0 <= last.1[k]),
            "prim {prim}: leaf box {last:?} does not hold its sphere"
        );
    }
    assert!(boxes_to_primitive(nodes, prims, 99).is_empty());
    // A ray along x (not moving along y) in the top face plane of sphere 0's
    // leaf box lies in a face plane on sphere 0's path; sphere 1 (y = 100) has
    // no box face at that height on its path, though the tree holds one.
    let top = boxes_to_primitive(nodes, prims, 0)
        .last()
        .expect("non-empty")
        .1[1];
    let ray = Ray::new(Vec3::new(-10.0, top, 0.0), Vec3::X);
    assert!(in_face_plane(nodes, prims, &ray, 10.0, 0));
    assert!(!in_face_plane(nodes, prims, &ray, 10.0, 1));
    let any_box = nodes
        .iter()
        .any(|n| n.left_hi[1] == top || n.right_hi[1] == top);
    assert!(any_box, "the tree holds the face plane");
}
