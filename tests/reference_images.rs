//! Small renders of every built-in scene (and each integrator on rtiow) on the
//! CPU backend, compared with stored reference images.
//!
//! Tolerance: mean absolute error at most 0.5/255 and at most 0.5% of channels
//! off by more than 2/255. The CPU backend is deterministic (libm in pure Rust,
//! no fast-math), so on x86-64 the images are identical; the margin admits other
//! targets whose float rounding differs in rare paths, and nothing more: a
//! changed sampler, material or camera moves far more pixels than that.
//!
//! Set `PRISM_BLESS=1` to rewrite the references after an intended change.

use prism::{Backend, Image, Integrator, NoProgress, PixelFormat};
use std::path::PathBuf;

const MAX_MAE: f64 = 0.5 / 255.0;
const MAX_SHARE_OFF: f64 = 0.005;

fn check(name: &str, scene: &str, integrator: Option<Integrator>, spp: u32) {
    let preset = prism::scenes::by_name(scene).expect("built-in scene");
    let mut settings = preset.settings;
    if let Some(i) = integrator {
        settings.integrator = i;
    }
    settings.spp = spp;
    settings.max_depth = settings.max_depth.min(8);
    let (w, h) = (96, 96 * preset.height / preset.width);
    let mut cpu = prism_cpu::CpuBackend::new().expect("cpu backend");
    cpu.set_scene(&preset.scene).expect("scene");
    let mut image = Image::new(w, h, PixelFormat::Srgba8).expect("image");
    cpu.render(&preset.camera, &settings, &mut image, &NoProgress)
        .expect("render");
    let got = image.to_rgba8_bytes().expect("8-bit bytes");

    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/reference")
        .join(format!("{name}.png"));
    if std::env::var("PRISM_BLESS").is_ok_and(|v| v == "1") {
        image::save_buffer(&path, &got, w, h, image::ExtendedColorType::Rgba8)
            .expect("write reference");
        return;
    }
    let want = image::open(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (PRISM_BLESS=1 writes it)", path.display()));
    let want = want.to_rgba8();
    assert_eq!(
        (want.width(), want.height()),
        (w, h),
        "{name}: reference size"
    );
    let (mut sum, mut off, mut n) = (0.0f64, 0usize, 0usize);
    for (a, b) in got.chunks_exact(4).zip(want.as_raw().chunks_exact(4)) {
        for c in 0..3 {
            let d = (a[c] as f64 - b[c] as f64).abs() / 255.0;
            sum += d;
            off += (d > 2.0 / 255.0) as usize;
            n += 1;
        }
    }
    let (mae, share) = (sum / n as f64, off as f64 / n as f64);
    assert!(
        mae <= MAX_MAE && share <= MAX_SHARE_OFF,
        "{name}: mean abs error {:.3}/255, {:.3}% channels off by > 2/255 (limits {:.1}/255, {:.1}%)",
        mae * 255.0,
        share * 100.0,
        MAX_MAE * 255.0,
        MAX_SHARE_OFF * 100.0
    );
}

#[test]
fn rtiow_path() {
    check("rtiow_path", "rtiow", None, 8);
}

#[test]
fn rtiow_whitted() {
    check("rtiow_whitted", "rtiow", Some(Integrator::Whitted), 1);
}

#[test]
fn rtiow_ao() {
    check("rtiow_ao", "rtiow", Some(Integrator::Ao), 4);
}

#[test]
fn whitted19() {
    check("whitted19", "whitted19", None, 1);
}

#[test]
fn cornell_path() {
    check("cornell_path", "cornell", None, 16);
}
