//! Fuzz target `mesh_obj`: see [`prism_fuzz_checks::mesh_obj`] for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(v) = prism_fuzz_checks::mesh_obj(data) {
        panic!("mesh_obj: {v}");
    }
});
