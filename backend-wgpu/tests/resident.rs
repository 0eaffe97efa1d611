//! The backend inside an engine, on a real adapter (lavapipe in CI): built
//! from the test's own device with `WgpuBackend::from_device` (no second
//! device), batches recorded into the test's encoder from its own buffers
//! (`record_intersect` / `record_occluded`) giving the host calls' bytes and
//! core's hits, on flat and two-level scenes, in one dispatch and in many,
//! each refusal of a buffer that does not fit, and frames recorded into the
//! test's textures (`record_render`) equal to `render`'s.
//!
//! Without an adapter these tests print why and pass, unless
//! `PRISM_REQUIRE_WGPU=1` (CI sets it). The tests share one device and one
//! backend, so each pipeline is compiled once per run.

use prism_core::glam::{Affine3A, Quat, Vec3};
use prism_core::rng::Pcg;
use prism_core::{
    Backend, Error, Geometry, Hit, Image, Instance, Material, NoProgress, PixelFormat, Ray,
    RenderSettings, ResourceProblem, Scene,
};
use prism_wgpu::{WgpuBackend, WgpuOptions};
use std::sync::{Mutex, OnceLock, mpsc};

mod common;

/// The test's own device, as an engine's: the first hardware adapter, else a
/// software one; `None` (after printing SKIPPED) where there is none.
fn open_device(
    limits: impl Fn(&wgpu::Adapter) -> wgpu::Limits,
) -> Option<(wgpu::Device, wgpu::Queue)> {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends();
    let instance = wgpu::Instance::new(desc);
    let mut adapters = pollster::block_on(instance.enumerate_adapters(backends()));
    adapters.sort_by_key(|a| a.get_info().device_type == wgpu::DeviceType::Cpu);
    let Some(adapter) = adapters.into_iter().next() else {
        let required = std::env::var("PRISM_REQUIRE_WGPU").is_ok_and(|v| v == "1");
        assert!(!required, "no wgpu adapter and PRISM_REQUIRE_WGPU=1");
        eprintln!("SKIPPED: no wgpu adapter");
        return None;
    };
    // An engine that turned subgroups on where the adapter has them (Prism
    // then records its lane-refill and persistent path kernels): with
    // PRISM_ENGINE_SUBGROUPS=1 (the GPU runs), else a device of no features.
    let subgroups = std::env::var("PRISM_ENGINE_SUBGROUPS").is_ok_and(|v| v == "1");
    let desc = wgpu::DeviceDescriptor {
        label: Some("engine"),
        required_limits: limits(&adapter),
        required_features: if subgroups {
            adapter.features() & wgpu::Features::SUBGROUP
        } else {
            wgpu::Features::empty()
        },
        ..Default::default()
    };
    Some(pollster::block_on(adapter.request_device(&desc)).expect("request_device"))
}

/// Vulkan, Metal, DX12, as the backend searches (`WGPU_BACKEND` overrides).
fn backends() -> wgpu::Backends {
    wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY)
}

/// The engine of these tests: its device and queue, and Prism on them.
struct Engine {
    device: wgpu::Device,
    queue: wgpu::Queue,
    prism: WgpuBackend,
}

/// Run `f` with the shared engine; returns without calling it when there is
/// no adapter.
fn with_engine(f: impl FnOnce(&mut Engine)) {
    static SHARED: OnceLock<Mutex<Option<Engine>>> = OnceLock::new();
    let shared = SHARED.get_or_init(|| {
        Mutex::new(open_device(|a| a.limits()).map(|(device, queue)| {
            let prism =
                WgpuBackend::from_device(device.clone(), queue.clone(), WgpuOptions::default())
                    .expect("from_device");
            Engine {
                device,
                queue,
                prism,
            }
        }))
    });
    // A failed test poisons the mutex; the engine itself stays usable.
    let mut guard = shared.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(e) = guard.as_mut() {
        f(e);
    }
}

fn storage_buffer(device: &wgpu::Device, size: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("engine storage"),
        size,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

/// Read `size` bytes of `buffer` from `offset` back to the host (the test's
/// own readback; Prism reads nothing back).
fn read_back(e: &Engine, buffer: &wgpu::Buffer, offset: u64, size: u64) -> Vec<u8> {
    let staging = e.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("engine readback"),
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = e.device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(buffer, offset, &staging, 0, size);
    e.queue.submit([encoder.finish()]);
    let (tx, rx) = mpsc::channel();
    staging
        .slice(..)
        .map_async(wgpu::MapMode::Read, move |r| tx.send(r).expect("send"));
    e.device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("poll");
    rx.recv().expect("mapped").expect("map");
    let bytes = staging
        .slice(..)
        .get_mapped_range()
        .expect("range")
        .to_vec();
    staging.unmap();
    bytes
}

fn rng_f(r: &mut Pcg) -> f32 {
    r.next_f32() * 2.0 - 1.0
}

fn v3(r: &mut Pcg, e: f32) -> Vec3 {
    Vec3::new(rng_f(r), rng_f(r), rng_f(r)) * e
}

/// Spheres and triangles scattered in a box, no two at the same place.
fn flat_scene(r: &mut Pcg) -> Scene {
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
    for k in 0..120 {
        let c = v3(r, 6.0);
        if k % 3 == 0 {
            s.add_sphere(c, 0.1 + 0.5 * r.next_f32(), m);
        } else {
            s.add_triangle(c, c + v3(r, 1.0), c + v3(r, 1.0), m);
        }
    }
    s
}

/// Geometries placed by instances with rotations, scales and masks.
fn two_level_scene(r: &mut Pcg) -> Scene {
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
    for _ in 0..3 {
        let mut g = Geometry::new();
        for k in 0..30 {
            let c = v3(r, 2.0);
            if k % 4 == 0 {
                g.add_sphere(c, 0.1 + 0.4 * r.next_f32(), m);
            } else {
                g.add_triangle(c, c + v3(r, 0.8), c + v3(r, 0.8), m);
            }
        }
        s.add_geometry(g);
    }
    for i in 0..24u32 {
        let axis = v3(r, 1.0).try_normalize().unwrap_or(Vec3::Y);
        let scale = Vec3::new(0.5, 1.0, 1.5) * (0.6 + r.next_f32());
        let t = Affine3A::from_scale_rotation_translation(
            scale,
            Quat::from_axis_angle(axis, rng_f(r) * 3.0),
            v3(r, 10.0),
        );
        let mask = if i % 5 == 0 { 0x02 } else { 0xFF };
        s.add_instance(Instance::new(i % 3, t).with_mask(mask));
    }
    s
}

/// Rays from around the scene towards its middle, some segments, some with
/// masks that miss a few instances.
fn rays(r: &mut Pcg, n: usize) -> Vec<Ray> {
    (0..n)
        .map(|i| {
            let o = v3(r, 20.0);
            let d = v3(r, 4.0) - o;
            let d = if d == Vec3::ZERO { Vec3::X } else { d };
            let ray = if i % 7 == 0 {
                Ray::segment(o, d, 0.2, 0.6)
            } else {
                Ray::new(o, d)
            };
            if i % 11 == 0 {
                ray.with_mask(0x01)
            } else {
                ray
            }
        })
        .collect()
}

/// Write `rays` into a fresh buffer of the engine at `offset`; the buffer
/// is `pad` bytes longer than that.
fn upload_rays(e: &Engine, rays: &[Ray], offset: u64, pad: u64) -> wgpu::Buffer {
    let bytes: &[u8] = bytemuck::cast_slice(rays);
    let buffer = storage_buffer(&e.device, offset + bytes.len() as u64 + pad);
    e.queue.write_buffer(&buffer, offset, bytes);
    buffer
}

/// Trace `rays` recorded into one encoder of the engine's (the rays and the
/// outputs placed at `offset` in their buffers) and check the hits and flags
/// against the host calls' bit for bit, and against core's walk.
fn check_recorded(e: &mut Engine, rays: &[Ray], offset: u64, what: &str) -> usize {
    let n = rays.len();
    let ray_buf = upload_rays(e, rays, offset, 0);
    let hit_buf = storage_buffer(&e.device, offset + 32 * n as u64);
    let flag_buf = storage_buffer(&e.device, offset + 4 * n as u64);
    let mut encoder = e.device.create_command_encoder(&Default::default());
    e.prism
        .record_intersect(
            &mut encoder,
            ray_buf.slice(offset..),
            hit_buf.slice(offset..),
            n as u32,
        )
        .expect("record_intersect");
    e.prism
        .record_occluded(
            &mut encoder,
            ray_buf.slice(offset..),
            flag_buf.slice(offset..),
            n as u32,
        )
        .expect("record_occluded");
    e.queue.submit([encoder.finish()]);
    let got_hits = read_back(e, &hit_buf, offset, 32 * n as u64);
    let got_flags = read_back(e, &flag_buf, offset, 4 * n as u64);

    let mut hits = vec![Hit::MISS; n];
    let mut occluded = vec![false; n];
    e.prism.intersect(rays, &mut hits).expect("intersect");
    e.prism.occluded(rays, &mut occluded).expect("occluded");
    assert!(
        got_hits == bytemuck::cast_slice::<Hit, u8>(&hits),
        "{what}: recorded hits differ from intersect's"
    );
    let flags: &[u32] = bytemuck::cast_slice(&got_flags);
    for (i, (f, o)) in flags.iter().zip(&occluded).enumerate() {
        assert_eq!(*f, u32::from(*o), "{what} ray {i}: occluded flag");
    }
    // Core's walk: bit for bit on software adapters (where the other tests
    // of this crate hold the same), the same hit or miss on GPUs.
    let accel = e.prism.accel().expect("scene").clone();
    let exact = e.prism.info().software;
    let mut hit_count = 0;
    for (i, ray) in rays.iter().enumerate() {
        let (want, got) = (accel.intersect(ray), hits[i]);
        hit_count += usize::from(want.is_hit());
        if exact {
            assert_eq!(
                (want.t.to_bits(), want.prim, want.instance),
                (got.t.to_bits(), got.prim, got.instance),
                "{what} ray {i}: core {want:?}, recorded {got:?}"
            );
            assert_eq!(accel.occluded(ray), occluded[i], "{what} ray {i}");
        } else {
            assert_eq!(want.is_hit(), got.is_hit(), "{what} ray {i}");
        }
    }
    hit_count
}

#[test]
fn from_device_shares_the_callers_device() {
    with_engine(|e| {
        assert!(
            e.prism.device() == &e.device,
            "Prism opened a device of its own"
        );
        assert!(e.prism.queue() == &e.queue, "Prism uses a queue of its own");
    });
    // A backend of its own on the same device, dropped: the engine's device
    // goes on working.
    let Some((device, queue)) = open_device(|a| a.limits()) else {
        return;
    };
    let prism = WgpuBackend::from_device(device.clone(), queue.clone(), WgpuOptions::default())
        .expect("from_device");
    assert!(prism.device() == &device);
    drop(prism);
    let buffer = storage_buffer(&device, 64);
    queue.write_buffer(&buffer, 0, &[7u8; 64]);
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.clear_buffer(&buffer, 0, Some(16));
    queue.submit([encoder.finish()]);
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("the engine's device outlives the backend");
}

#[test]
fn from_device_refuses_a_device_below_prisms_limits() {
    // WebGPU's downlevel defaults allow four storage buffers a stage; the
    // shaders bind eight.
    let Some((device, queue)) = open_device(|_| wgpu::Limits::downlevel_defaults()) else {
        return;
    };
    match WgpuBackend::from_device(device, queue, WgpuOptions::default()) {
        Err(Error::DeviceLimit {
            what,
            needed,
            limit,
            ..
        }) => {
            assert!(what.contains("storage buffers"), "{what}");
            assert_eq!((needed, limit), (8, 4));
        }
        Err(other) => panic!("expected DeviceLimit, got {other}"),
        Ok(_) => panic!("a device of 4 storage buffers a stage was accepted"),
    }
}

#[test]
fn recorded_batches_match_intersect_on_a_flat_scene() {
    with_engine(|e| {
        let mut r = Pcg { state: 11 };
        e.prism.set_scene(&flat_scene(&mut r)).expect("scene");
        let rays = rays(&mut r, 2000);
        let hits = check_recorded(e, &rays, 0, "flat");
        assert!(hits > 300, "only {hits} hits compared");
    });
}

#[test]
fn recorded_batches_match_intersect_on_a_two_level_scene() {
    with_engine(|e| {
        let mut r = Pcg { state: 12 };
        e.prism.set_scene(&two_level_scene(&mut r)).expect("scene");
        assert!(e.prism.module_config().two_level);
        let rays = rays(&mut r, 2000);
        // At an aligned offset inside the engine's buffers.
        let offset = e.device.limits().min_storage_buffer_offset_alignment as u64 * 3;
        let hits = check_recorded(e, &rays, offset, "two-level");
        assert!(hits > 300, "only {hits} hits compared");
    });
}

#[test]
fn recorded_batches_split_into_chunks_give_the_same_hits() {
    let Some((device, queue)) = open_device(|a| a.limits()) else {
        return;
    };
    // Chunks of at most 700 rays (rounded down to the offset alignment):
    // several dispatches in one encoder, each with its own chunk uniform.
    let options = WgpuOptions {
        max_chunk_bytes: Some(700 * 48),
        ..Default::default()
    };
    let prism = WgpuBackend::from_device(device.clone(), queue.clone(), options).expect("backend");
    let mut e = Engine {
        device,
        queue,
        prism,
    };
    let mut r = Pcg { state: 13 };
    e.prism.set_scene(&two_level_scene(&mut r)).expect("scene");
    let rays = rays(&mut r, 3001);
    check_recorded(&mut e, &rays, 0, "chunked");
}

/// What recording `count` rays from `rays` into `out` gives, and that the
/// engine's encoder is still good afterwards.
fn record(
    e: &mut Engine,
    rays: wgpu::BufferSlice<'_>,
    out: wgpu::BufferSlice<'_>,
    count: u32,
    occluded: bool,
) -> Result<(), Error> {
    let mut encoder = e.device.create_command_encoder(&Default::default());
    let result = if occluded {
        e.prism.record_occluded(&mut encoder, rays, out, count)
    } else {
        e.prism.record_intersect(&mut encoder, rays, out, count)
    };
    // A refused call recorded nothing: the encoder finishes and runs.
    e.queue.submit([encoder.finish()]);
    e.device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("poll");
    result
}

fn unfit(result: Result<(), Error>) -> (&'static str, ResourceProblem) {
    match result {
        Err(Error::ResourceUnfit {
            resource, problem, ..
        }) => (resource, problem),
        other => panic!("expected ResourceUnfit, got {other:?}"),
    }
}

#[test]
fn unfit_buffers_are_refused_by_name() {
    with_engine(|e| {
        let mut r = Pcg { state: 14 };
        e.prism.set_scene(&flat_scene(&mut r)).expect("scene");
        let n = 64u32;
        let rays = upload_rays(e, &rays(&mut r, n as usize), 0, 0);
        let hits = storage_buffer(&e.device, 32 * n as u64);
        let flags = storage_buffer(&e.device, 4 * n as u64);

        // Wrong usage: a hits buffer the shaders cannot write.
        let copy_only = e.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("copy only"),
            size: 32 * n as u64,
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let (name, problem) = unfit(record(e, rays.slice(..), copy_only.slice(..), n, false));
        assert_eq!(name, "hits buffer");
        assert_eq!(problem, ResourceProblem::MissingUsage { usage: "STORAGE" });
        let (name, _) = unfit(record(e, copy_only.slice(..), flags.slice(..), n, true));
        assert_eq!(name, "rays buffer");

        // Too small: a count past the rays given, and an output too short.
        let (name, problem) = unfit(record(e, rays.slice(..), hits.slice(..), n + 1, false));
        assert_eq!(name, "rays buffer");
        assert_eq!(
            problem,
            ResourceProblem::TooSmall {
                needed: 48 * (n as u64 + 1),
                size: 48 * n as u64,
            }
        );
        let (name, problem) = unfit(record(
            e,
            rays.slice(..),
            flags.slice(..4 * (n as u64 - 1)),
            n,
            true,
        ));
        assert_eq!(name, "occluded buffer");
        assert!(matches!(problem, ResourceProblem::TooSmall { .. }));

        // Misaligned: an offset off the device's storage alignment.
        let alignment = e.device.limits().min_storage_buffer_offset_alignment as u64;
        let off = alignment / 2;
        assert!(off >= 4, "storage offset alignment {alignment}");
        for (rays_off, hits_off, name) in [(off, 0, "rays buffer"), (0, off, "hits buffer")] {
            let (got, problem) = unfit(record(
                e,
                rays.slice(rays_off..),
                hits.slice(hits_off..),
                1,
                false,
            ));
            assert_eq!(got, name);
            assert_eq!(
                problem,
                ResourceProblem::Misaligned {
                    offset: off,
                    alignment
                }
            );
        }

        // Count mismatch: a slice that is not a whole number of records (the
        // caller's record size is not the documented one).
        let (name, problem) = unfit(record(
            e,
            rays.slice(..40 * n as u64),
            hits.slice(..),
            n / 2,
            false,
        ));
        assert_eq!(name, "rays buffer");
        assert_eq!(
            problem,
            ResourceProblem::PartialRecord {
                size: 40 * n as u64,
                record: 48
            }
        );

        // One buffer for rays and results.
        let both = storage_buffer(&e.device, 48 * n as u64);
        let (name, problem) = unfit(record(e, both.slice(..), both.slice(..), n / 2, false));
        assert_eq!(name, "hits buffer");
        assert_eq!(
            problem,
            ResourceProblem::SameBuffer {
                other: "rays buffer"
            }
        );

        // Zero rays: nothing to do, nothing refused.
        record(e, rays.slice(..), hits.slice(..), 0, false).expect("zero rays");
    });
}

#[test]
fn recording_before_a_scene_is_refused() {
    let Some((device, queue)) = open_device(|a| a.limits()) else {
        return;
    };
    let prism = WgpuBackend::from_device(device.clone(), queue.clone(), WgpuOptions::default())
        .expect("backend");
    let mut e = Engine {
        device,
        queue,
        prism,
    };
    let rays = storage_buffer(&e.device, 48 * 4);
    let hits = storage_buffer(&e.device, 32 * 4);
    assert_eq!(
        record(&mut e, rays.slice(..), hits.slice(..), 4, false),
        Err(Error::NoScene)
    );
}

/// `target` (of `bytes_per_pixel`) back on the host, row after row.
fn read_texture(e: &Engine, target: &wgpu::Texture, bytes_per_pixel: u32) -> Vec<u8> {
    let (w, h) = (target.width(), target.height());
    let row = w * bytes_per_pixel;
    let padded = row.next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
    let staging = storage_buffer(&e.device, (padded * h) as u64);
    let mut encoder = e.device.create_command_encoder(&Default::default());
    encoder.copy_texture_to_buffer(
        target.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &staging,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(padded),
                rows_per_image: Some(h),
            },
        },
        target.size(),
    );
    e.queue.submit([encoder.finish()]);
    let bytes = read_back(e, &staging, 0, (padded * h) as u64);
    bytes
        .chunks(padded as usize)
        .flat_map(|r| r[..row as usize].to_vec())
        .collect()
}

fn texture(
    e: &Engine,
    w: u32,
    h: u32,
    format: wgpu::TextureFormat,
    usage: wgpu::TextureUsages,
) -> wgpu::Texture {
    e.device.create_texture(&wgpu::TextureDescriptor {
        label: Some("engine target"),
        size: wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format,
        usage,
        view_formats: &[],
    })
}

#[test]
fn recorded_frames_equal_render_in_the_callers_texture() {
    with_engine(|e| {
        let (scene, camera) = common::render_scene();
        let settings = RenderSettings {
            spp: 2,
            ..Default::default()
        };
        let (w, h) = (40, 28);
        let usage = wgpu::TextureUsages::STORAGE_BINDING | wgpu::TextureUsages::COPY_SRC;
        // The shared backend (one chunk) and one cutting the frame into
        // chunks of 5 rows, on the same device.
        let small = WgpuOptions {
            max_chunk_bytes: Some(5 * w as u64 * 16),
            ..Default::default()
        };
        let mut chunked =
            WgpuBackend::from_device(e.device.clone(), e.queue.clone(), small).expect("backend");
        eprintln!(
            "persistent path kernels: {} (lane refill {})",
            chunked.persistent_path(),
            chunked.lane_refill()
        );
        e.prism.set_scene(&scene).expect("scene");
        chunked.set_scene(&scene).expect("scene");
        for (format, pixels, bytes_per_pixel) in [
            (wgpu::TextureFormat::Rgba8Unorm, PixelFormat::Srgba8, 4),
            (wgpu::TextureFormat::Rgba32Float, PixelFormat::LinearF32, 16),
        ] {
            let mut image = Image::new(w, h, pixels).expect("image");
            e.prism
                .render(&camera, &settings, &mut image, &NoProgress)
                .expect("render");
            let want: Vec<u8> = match pixels {
                PixelFormat::Srgba8 => bytemuck::cast_slice(image.rgba8()).to_vec(),
                PixelFormat::LinearF32 => bytemuck::cast_slice(image.linear()).to_vec(),
            };
            for what in ["one chunk", "chunks"] {
                let target = texture(e, w, h, format, usage);
                let mut encoder = e.device.create_command_encoder(&Default::default());
                let prism = if what == "chunks" {
                    &mut chunked
                } else {
                    &mut e.prism
                };
                prism
                    .record_render(&mut encoder, &camera, &settings, &target)
                    .expect("record_render");
                e.queue.submit([encoder.finish()]);
                let got = read_texture(e, &target, bytes_per_pixel);
                assert!(
                    got == want,
                    "{format:?}, {what}: the texture differs from render's frame"
                );
            }
        }

        // Refusals: no storage binding, a format the pass does not write.
        let sampled = texture(
            e,
            w,
            h,
            wgpu::TextureFormat::Rgba8Unorm,
            wgpu::TextureUsages::TEXTURE_BINDING,
        );
        let r32 = texture(e, w, h, wgpu::TextureFormat::R32Float, usage);
        for (target, want) in [(&sampled, "MissingUsage"), (&r32, "Format")] {
            let mut encoder = e.device.create_command_encoder(&Default::default());
            let result = e
                .prism
                .record_render(&mut encoder, &camera, &settings, target);
            e.queue.submit([encoder.finish()]);
            match result {
                Err(Error::ResourceUnfit {
                    resource: "target texture",
                    problem,
                    ..
                }) => assert!(format!("{problem:?}").starts_with(want), "{problem:?}"),
                other => panic!("expected ResourceUnfit, got {other:?}"),
            }
        }
    });
}
