//! Fuzz target `render_settings`: see [`prism_fuzz_checks::render_settings`] for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(v) = prism_fuzz_checks::render_settings(data) {
        panic!("render_settings: {v}");
    }
});
