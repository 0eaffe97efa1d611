//! `capi/include/prism.h` is what cbindgen makes of the crate today.

use std::path::Path;

#[test]
fn header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen reads the crate")
        .write(&mut generated);
    let path = dir.join("include/prism.h");
    let committed = std::fs::read(&path).unwrap_or_default();
    if committed != generated {
        if std::env::var_os("PRISM_WRITE_HEADER").is_some() {
            std::fs::write(&path, &generated).expect("write the header");
            return;
        }
        panic!(
            "{} is out of date: run `PRISM_WRITE_HEADER=1 cargo test -p prism-rt-c --test header` and commit it",
            path.display()
        );
    }
}
