//! Fuzz target `height_map_png`: see [`prism_fuzz_checks::height_map_png`] for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(v) = prism_fuzz_checks::height_map_png(data) {
        panic!("height_map_png: {v}");
    }
});
