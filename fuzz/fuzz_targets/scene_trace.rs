//! Fuzz target `scene_trace`: see [`prism_fuzz_checks::scene_trace`] for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(v) = prism_fuzz_checks::scene_trace(data) {
        panic!("scene_trace: {v}");
    }
});
