//! The "GPU out of memory" row of the "Bad input" table of README.md.
//!
//! Opt-in: runs only with `PRISM_GPU_OOM=1`, on a machine with a GPU (built
//! with the `cuda` and/or `wgpu` features), since it fills device memory on
//! purpose and needs a 16 GiB frame in host memory; otherwise it says so and
//! passes. With `PRISM_GPU_OOM=1` at least one GPU backend must open on a
//! hardware device.
//!
//! Backends are opened one after another, each rendering the largest frame
//! allowed (32768 x 32768 linear pixels, 16 GiB) and kept alive. Every frame
//! either renders completely (sampled pixels, poisoned with NaN before the
//! call, must come back finite) or is refused with a typed error (out of
//! memory, or a device limit refusing the frame), never a crash; after a
//! refusal both the failing backend and a fresh one must render a valid frame.
//!
//! CUDA holds each frame on the device, so its frames must exhaust the device
//! and be refused. wgpu renders large frames in bands, so frames alone cannot
//! fill its device: three frames, each complete or refused as above.

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

const SIDE: u32 = 32_768;

/// Pixels sampled to check a frame was written: three columns of every 512th
/// row, and the last row's ends.
fn samples() -> Vec<usize> {
    let side = SIDE as usize;
    (0..side)
        .step_by(512)
        .flat_map(|y| [0, side / 2, side - 1].map(|x| y * side + x))
        .chain([side * (side - 1), side * side - 1])
        .collect()
}

/// Fill `choice`'s device with frames (see the module docs). Returns false when
/// the backend has no hardware device here.
fn exhaust(choice: BackendChoice, name: &str, must_exhaust: bool) -> bool {
    let opened = match prism::open_with_env(choice, None) {
        Ok(o) => o,
        Err(Error::BackendUnavailable { reason, .. }) => {
            eprintln!("{name}: skipped, no device: {reason}");
            return false;
        }
        Err(e) => panic!("{name}: opening failed with {e:?}"),
    };
    let info = opened.backend.info();
    if info.software {
        eprintln!("{name}: skipped, {} is a software adapter", info.device);
        return false;
    }
    let frame_bytes = u64::from(SIDE) * u64::from(SIDE) * 16;
    // CUDA: enough frames to exceed any device's memory, plus slack.
    let most = if must_exhaust {
        info.max_buffer_bytes.max(frame_bytes) / frame_bytes * 2 + 16
    } else {
        3
    };
    let mut image = Image::new(SIDE, SIDE, PixelFormat::LinearF32).unwrap_or_else(|e| {
        panic!("PRISM_GPU_OOM=1 needs a 16 GiB frame in host memory, and it was refused: {e}")
    });
    let samples = samples();
    let mut held: Vec<Box<dyn Backend + Send>> = vec![opened.backend];
    for k in 0..most {
        if held.len() <= k as usize {
            match prism::open_with_env(choice, None) {
                Ok(o) => held.push(o.backend),
                Err(e @ (Error::OutOfMemory { .. } | Error::Device { .. })) => {
                    assert!(
                        !must_exhaust,
                        "{name}: backend {k} could not open ({e}) before any frame was refused"
                    );
                    eprintln!("{name}: backend {k} could not open for lack of memory: {e}");
                    break;
                }
                Err(e) => panic!("{name}: opening backend {k} failed with {e:?}"),
            }
        }
        for &i in &samples {
            image.linear_mut()[i] = [f32::NAN; 4];
        }
        let backend = held.last_mut().expect("one backend is always held");
        let result = backend
            .set_scene(&scene())
            .and_then(|_| backend.render(&camera(), &cheap(), &mut image, &NoProgress));
        match result {
            Ok(_) => {
                let unwritten = samples
                    .iter()
                    .filter(|&&i| image.linear()[i].iter().any(|c| !c.is_finite()))
                    .count();
                assert_eq!(
                    unwritten,
                    0,
                    "{name}: frame {k} rendered without error, but {unwritten} of {} sampled pixels are not finite",
                    samples.len()
                );
                eprintln!("{name}: frame {k} rendered completely");
            }
            Err(
                e @ (Error::OutOfMemory { .. }
                | Error::DeviceLimit { .. }
                | Error::HostOutOfMemory { .. }),
            ) => {
                // The pinned host copy of a frame may run out before the device.
                eprintln!("{name}: frame {k} refused as expected: {e}");
                if !matches!(e, Error::HostOutOfMemory { .. }) {
                    assert!(e.to_string().contains(name), "{e} does not name {name}");
                }
                small_render(backend.as_mut(), "the backend that ran out of memory");
                drop(held);
                let mut fresh = prism::open_with_env(choice, None)
                    .unwrap_or_else(|e| panic!("{name}: reopening failed: {e}"))
                    .backend;
                small_render(fresh.as_mut(), "a fresh backend");
                return true;
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
    for (k, backend) in held.iter_mut().enumerate() {
        small_render(backend.as_mut(), &format!("{name} backend {k}"));
    }
    eprintln!(
        "{name}: {} frames of {frame_bytes} bytes rendered completely, in bands",
        held.len()
    );
    true
}

#[test]
fn gpu_out_of_memory_is_a_typed_error() {
    if std::env::var("PRISM_GPU_OOM").ok().as_deref() != Some("1") {
        eprintln!(
            "SKIPPED: set PRISM_GPU_OOM=1 to run this test on a machine with a GPU \
             (it fills device memory on purpose and needs 16 GiB of host memory)"
        );
        return;
    }
    let cuda = exhaust(BackendChoice::Cuda, "cuda", true);
    let wgpu = exhaust(BackendChoice::Wgpu, "wgpu", false);
    assert!(
        cuda || wgpu,
        "PRISM_GPU_OOM=1 but no GPU backend opened on a hardware device"
    );
}
