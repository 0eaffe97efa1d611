//! Fuzz target `mesh_ply`: see [`prism_fuzz_checks::mesh_ply`] for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(v) = prism_fuzz_checks::mesh_ply(data) {
        panic!("mesh_ply: {v}");
    }
});
