//! Replays every committed fuzz corpus file (`fuzz/corpus/<target>/*`) through
//! the check its fuzz target runs (`prism::fuzz_checks`), on stable `cargo test`:
//! crashes found by fuzzing stay fixed.

use std::path::Path;

/// Every file of one target's corpus, through its check; all failures reported.
fn replay(target: &str) {
    let (_, check) = prism::fuzz_checks::TARGETS
        .into_iter()
        .find(|(name, _)| *name == target)
        .unwrap_or_else(|| panic!("no check named {target}"));
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
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

/// Every fuzz target has a test above and a corpus directory.
#[test]
fn every_target_is_replayed() {
    let source = include_str!("fuzz_corpus.rs");
    for (name, _) in prism::fuzz_checks::TARGETS {
        assert!(
            source.contains(&format!("replay(\"{name}\")")),
            "fuzz target {name} has no replay test"
        );
        let manifest = include_str!("../fuzz/Cargo.toml");
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "fuzz target {name} is missing from fuzz/Cargo.toml"
        );
    }
}
