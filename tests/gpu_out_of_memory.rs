//! The "GPU out of memory" row of the "Bad input" table of README.md.
//!
//! Runs only where a GPU backend opens (the GPU machine, built with the `cuda`
//! and/or `wgpu` features); elsewhere it says so and passes, since the row
//! cannot occur without a device. On a GPU it fills device memory on purpose:
//! backends are opened one after another, each rendering the largest frame
//! allowed (32768 x 32768 linear pixels, 16 GiB) and kept alive, until one
//! fails. That failure must be a typed error (out of memory, or a device limit
//! refusing the frame), never a crash, and afterwards both the failing backend
//! and a fresh one must render a valid frame.

use prism::glam::Vec3;
use prism::{
    Backend, BackendChoice, Camera, Error, Image, Material, NoProgress, PixelFormat,
    RenderSettings, Scene,
};

fn scene() -> Scene {
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
    s.add_sphere(Vec3::ZERO, 1.0, m);
    s
}

fn camera() -> Camera {
    Camera::look_at(Vec3::new(0.0, 0.0, 4.0), Vec3::ZERO, Vec3::Y, 40.0)
}

/// One sample, one bounce: the frame's size is the point, not its content.
fn cheap() -> RenderSettings {
    RenderSettings {
        spp: 1,
        max_depth: 1,
        ..Default::default()
    }
}

/// A small valid render on `backend`, which must succeed.
fn small_render(backend: &mut dyn Backend, what: &str) {
    backend
        .set_scene(&scene())
        .unwrap_or_else(|e| panic!("{what}: set_scene failed: {e}"));
    let mut image = Image::new(64, 64, PixelFormat::Srgba8).expect("a 64x64 image");
    backend
        .render(&camera(), &cheap(), &mut image, &NoProgress)
        .unwrap_or_else(|e| panic!("{what}: a 64x64 render failed: {e}"));
}

/// Fill `choice`'s device with frames until a render fails (see the module docs).
/// Without `must_exhaust`, a backend that never fails after a few frames passes:
/// wgpu renders large frames in bands, so frames alone cannot fill its device.
fn exhaust(choice: BackendChoice, name: &str, must_exhaust: bool) {
    let opened = match prism::open_with_env(choice, None) {
        Ok(o) => o,
        Err(Error::BackendUnavailable { reason, .. }) => {
            eprintln!("{name}: skipped, no device: {reason}");
            return;
        }
        Err(e) => panic!("{name}: opening failed with {e:?}"),
    };
    let info = opened.backend.info();
    if info.software {
        eprintln!("{name}: skipped, {} is a software adapter", info.device);
        return;
    }
    const SIDE: u32 = 32_768;
    let frame_bytes = u64::from(SIDE) * u64::from(SIDE) * 16;
    // Enough frames to exceed any device's memory, plus slack.
    let most = if must_exhaust {
        info.max_buffer_bytes.max(frame_bytes) / frame_bytes * 2 + 16
    } else {
        3
    };
    let mut image = Image::new(SIDE, SIDE, PixelFormat::LinearF32).expect("a 16 GiB host image");
    let mut held: Vec<Box<dyn Backend + Send>> = vec![opened.backend];
    for k in 0..most {
        if held.len() <= k as usize {
            match prism::open_with_env(choice, None) {
                Ok(o) => held.push(o.backend),
                Err(Error::OutOfMemory { .. } | Error::Device { .. }) => {
                    eprintln!("{name}: backend {k} could not open for lack of memory");
                    break;
                }
                Err(e) => panic!("{name}: opening backend {k} failed with {e:?}"),
            }
        }
        let backend = held.last_mut().expect("one backend is always held");
        let result = backend
            .set_scene(&scene())
            .and_then(|_| backend.render(&camera(), &cheap(), &mut image, &NoProgress));
        match result {
            Ok(_) => continue,
            Err(e @ (Error::OutOfMemory { .. } | Error::DeviceLimit { .. })) => {
                eprintln!("{name}: frame {k} refused as expected: {e}");
                assert!(e.to_string().contains(name), "{e} does not name {name}");
                small_render(backend.as_mut(), "the backend that ran out of memory");
                drop(held);
                let mut fresh = prism::open_with_env(choice, None)
                    .unwrap_or_else(|e| panic!("{name}: reopening failed: {e}"))
                    .backend;
                small_render(fresh.as_mut(), "a fresh backend");
                return;
            }
            Err(e) => panic!("{name}: frame {k} failed with an unexpected error {e:?}"),
        }
    }
    assert!(
        !must_exhaust,
        "{name}: {} frames of {frame_bytes} bytes never exhausted the device ({})",
        held.len(),
        info.device
    );
    eprintln!(
        "{name}: {} frames rendered without running out of memory",
        held.len()
    );
}

#[test]
fn gpu_out_of_memory_is_a_typed_error_on_the_gpu_machine() {
    exhaust(BackendChoice::Cuda, "cuda", true);
    exhaust(BackendChoice::Wgpu, "wgpu", false);
}
