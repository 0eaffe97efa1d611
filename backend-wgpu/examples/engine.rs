//! Prism inside an engine's frame: the engine owns its wgpu device, writes
//! camera rays in its own compute pass, has Prism trace them in the same
//! command encoder (`WgpuBackend::record_intersect`), shades the hits in its
//! own pass and submits once. Rays and hits never leave the GPU on the way.
//!
//! To check itself, the example then reads back what it needs (the rays,
//! hits and pixels, after the frame) and compares the hits with the CPU
//! backend's for the same rays (bit for bit on a software adapter such as
//! lavapipe; on a GPU, core's tolerance for `t`) and the pixels with the
//! same shading done on the host. It exits non-zero on any disagreement.
//!
//! ```text
//! cargo run --release -p prism-rt-wgpu --example engine
//! ```

use prism_core::glam::{Affine3A, Quat, Vec3};
use prism_core::reference::{t_close, t_floor};
use prism_core::{Backend, Camera, Geometry, Hit, Instance, Material, Ray, Scene};
use prism_cpu::CpuBackend;
use prism_wgpu::{WgpuBackend, WgpuOptions};
use std::process::ExitCode;
use std::sync::mpsc;

const WIDTH: u32 = 320;
const HEIGHT: u32 = 180;
const WORKGROUP: u32 = 64;

/// The engine's own shaders: camera rays in Prism's documented `Ray` layout,
/// and a shading pass over Prism's `Hit`s.
const ENGINE_WGSL: &str = r#"
struct Cam {
    origin: vec4<f32>,
    lower_left: vec4<f32>,
    horizontal: vec4<f32>,
    vertical: vec4<f32>,
    size: vec4<u32>,
}
// prism_core::Ray, 48 bytes.
struct Ray {
    origin_tmin: vec4<f32>,
    dir_tmax: vec4<f32>,
    mask: vec4<u32>,
}
// prism_core::Hit, 32 bytes.
struct Hit {
    t: f32,
    u: f32,
    v: f32,
    prim: u32,
    instance: u32,
    cell: u32,
    face: u32,
    reserved: u32,
}

@group(0) @binding(0) var<uniform> cam: Cam;
@group(0) @binding(1) var<storage, read_write> rays: array<Ray>;
@group(0) @binding(2) var<storage, read> hits: array<Hit>;
@group(0) @binding(3) var<storage, read_write> pixels: array<u32>;

@compute @workgroup_size(64)
fn camera_rays(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= cam.size.x * cam.size.y {
        return;
    }
    let s = (f32(i % cam.size.x) + 0.5) / f32(cam.size.x);
    let t = 1.0 - (f32(i / cam.size.x) + 0.5) / f32(cam.size.y);
    let dir = cam.lower_left.xyz + s * cam.horizontal.xyz + t * cam.vertical.xyz;
    let inf = bitcast<f32>(0x7f800000u);
    rays[i] = Ray(vec4<f32>(cam.origin.xyz, 0.0), vec4<f32>(dir, inf), vec4<u32>(0xffffffffu, 0u, 0u, 0u));
}

// An instance's colour, darker with distance; the sky where nothing is hit.
@compute @workgroup_size(64)
fn shade(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= cam.size.x * cam.size.y {
        return;
    }
    let hit = hits[i];
    var c = vec3<f32>(0.55, 0.7, 0.9);
    if hit.instance != 0xffffffffu {
        let k = hit.instance;
        let base = vec3<f32>(f32((k * 37u + 60u) % 256u), f32((k * 91u + 30u) % 256u), f32((k * 53u + 90u) % 256u)) / 255.0;
        c = base / (1.0 + 0.05 * hit.t);
    }
    pixels[i] = pack4x8unorm(vec4<f32>(c, 1.0));
}
"#;

/// The shading pass on the host, for the check.
fn shade(hit: &Hit) -> [f32; 3] {
    if hit.instance == Hit::NO_INSTANCE {
        return [0.55, 0.7, 0.9];
    }
    let k = hit.instance;
    let base = [
        ((k.wrapping_mul(37) + 60) % 256) as f32 / 255.0,
        ((k.wrapping_mul(91) + 30) % 256) as f32 / 255.0,
        ((k.wrapping_mul(53) + 90) % 256) as f32 / 255.0,
    ];
    base.map(|b| b / (1.0 + 0.05 * hit.t))
}

/// A two-level scene: a cube and a sphere, placed as a floor and a ring of
/// turned, stretched copies.
fn scene() -> Result<Scene, prism_core::Error> {
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::splat(0.6)));
    let corners: Vec<Vec3> = (0..8)
        .map(|i| Vec3::new((i & 1) as f32, (i >> 1 & 1) as f32, (i >> 2 & 1) as f32) - 0.5)
        .collect();
    let faces = [
        [0, 2, 3],
        [0, 3, 1],
        [4, 5, 7],
        [4, 7, 6],
        [0, 1, 5],
        [0, 5, 4],
        [2, 6, 7],
        [2, 7, 3],
        [0, 4, 6],
        [0, 6, 2],
        [1, 3, 7],
        [1, 7, 5],
    ];
    let cube = s.add_geometry(Geometry::mesh(&corners, &faces, m)?);
    let mut ball = Geometry::new();
    ball.add_sphere(Vec3::ZERO, 0.5, m);
    let ball = s.add_geometry(ball);
    s.add_instance(Instance::new(
        cube,
        Affine3A::from_scale_rotation_translation(
            Vec3::new(16.0, 0.2, 16.0),
            Quat::IDENTITY,
            Vec3::new(0.0, -0.1, 0.0),
        ),
    ));
    for k in 0..10 {
        let a = k as f32 * std::f32::consts::TAU / 10.0;
        let at = Vec3::new(3.0 * a.cos(), 0.6, 3.0 * a.sin());
        let (geometry, scale) = if k % 2 == 0 {
            (cube, Vec3::new(0.8, 1.2, 0.8))
        } else {
            (ball, Vec3::new(1.0, 1.6, 1.0))
        };
        let turn = Quat::from_rotation_y(a) * Quat::from_rotation_x(0.3 * k as f32);
        s.add_instance(Instance::new(
            geometry,
            Affine3A::from_scale_rotation_translation(scale, turn, at),
        ));
    }
    Ok(s)
}

/// The engine's device: a hardware adapter if there is one, else a software
/// one (lavapipe), with the adapter's own limits.
fn open_device() -> Result<(wgpu::Device, wgpu::Queue, wgpu::AdapterInfo), String> {
    let backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY);
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    let instance = wgpu::Instance::new(desc);
    let mut adapters = pollster::block_on(instance.enumerate_adapters(backends));
    adapters.sort_by_key(|a| a.get_info().device_type == wgpu::DeviceType::Cpu);
    let adapter = adapters
        .into_iter()
        .next()
        .ok_or("no wgpu adapter (is a Vulkan driver installed?)")?;
    let info = adapter.get_info();
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("engine"),
        required_limits: adapter.limits(),
        ..Default::default()
    }))
    .map_err(|e| e.to_string())?;
    Ok((device, queue, info))
}

/// Copy `size` bytes of `buffer` to the host after the frame (the check's
/// own readback).
fn read_back(device: &wgpu::Device, buffer: &wgpu::Buffer) -> Result<Vec<u8>, String> {
    let slice = buffer.slice(..);
    let (tx, rx) = mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| e.to_string())?;
    rx.recv()
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let bytes = slice
        .get_mapped_range()
        .map_err(|e| e.to_string())?
        .to_vec();
    buffer.unmap();
    Ok(bytes)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("engine: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool, String> {
    let (device, queue, info) = open_device()?;
    println!(
        "adapter: {} ({:?}, {:?})",
        info.name, info.backend, info.device_type
    );
    let scene = scene().map_err(|e| e.to_string())?;
    // Prism on the engine's device and queue: no second device.
    let mut prism = WgpuBackend::from_device(device.clone(), queue.clone(), WgpuOptions::default())
        .map_err(|e| e.to_string())?;
    prism.set_scene(&scene).map_err(|e| e.to_string())?;

    let n = (WIDTH * HEIGHT) as u64;
    let buffer = |label, size, usage| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage,
            mapped_at_creation: false,
        })
    };
    let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
    let rays = buffer("rays", n * 48, storage);
    let hits = buffer("hits", n * 32, storage);
    let pixels = buffer("pixels", n * 4, storage);
    let camera = Camera::look_at(
        Vec3::new(0.0, 4.0, 9.0),
        Vec3::new(0.0, 0.5, 0.0),
        Vec3::Y,
        45.0,
    );
    let aspect = WIDTH as f32 / HEIGHT as f32;
    let half_h = (camera.vfov_degrees.to_radians() * 0.5).tan();
    let w = (camera.look_from - camera.look_at).normalize();
    let u = camera.up.cross(w).normalize();
    let v = w.cross(u);
    let horizontal = u * (2.0 * half_h * aspect);
    let vertical = v * (2.0 * half_h);
    let lower_left = -w - horizontal * 0.5 - vertical * 0.5;
    let cam: [f32; 20] = [
        camera.look_from.x,
        camera.look_from.y,
        camera.look_from.z,
        0.0,
        lower_left.x,
        lower_left.y,
        lower_left.z,
        0.0,
        horizontal.x,
        horizontal.y,
        horizontal.z,
        0.0,
        vertical.x,
        vertical.y,
        vertical.z,
        0.0,
        f32::from_bits(WIDTH),
        f32::from_bits(HEIGHT),
        0.0,
        0.0,
    ];
    let cam_buf = buffer(
        "camera",
        80,
        wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
    );
    queue.write_buffer(&cam_buf, 0, bytemuck::cast_slice(&cam));

    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("engine"),
        source: wgpu::ShaderSource::Wgsl(ENGINE_WGSL.into()),
    });
    let pipeline = |entry| {
        device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(entry),
            layout: None,
            module: &module,
            entry_point: Some(entry),
            compilation_options: Default::default(),
            cache: None,
        })
    };
    let (camera_pipeline, shade_pipeline) = (pipeline("camera_rays"), pipeline("shade"));
    let bind = |pipeline: &wgpu::ComputePipeline, entries: &[(u32, &wgpu::Buffer)]| {
        let entries: Vec<wgpu::BindGroupEntry> = entries
            .iter()
            .map(|&(binding, b)| wgpu::BindGroupEntry {
                binding,
                resource: b.as_entire_binding(),
            })
            .collect();
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        })
    };
    let camera_group = bind(&camera_pipeline, &[(0, &cam_buf), (1, &rays)]);
    let shade_group = bind(&shade_pipeline, &[(0, &cam_buf), (2, &hits), (3, &pixels)]);
    let groups = (n as u32).div_ceil(WORKGROUP);

    // One encoder, one submission: camera rays, Prism's trace, shading.
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&camera_pipeline);
        pass.set_bind_group(0, &camera_group, &[]);
        pass.dispatch_workgroups(groups, 1, 1);
    }
    prism
        .record_intersect(&mut encoder, rays.slice(..), hits.slice(..), n as u32)
        .map_err(|e| e.to_string())?;
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&shade_pipeline);
        pass.set_bind_group(0, &shade_group, &[]);
        pass.dispatch_workgroups(groups, 1, 1);
    }
    let frame_start = std::time::Instant::now();
    queue.submit([encoder.finish()]);
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| e.to_string())?;
    let frame = frame_start.elapsed();

    // The check: the frame's rays, hits and pixels back on the host.
    let readback = buffer(
        "readback",
        n * (48 + 32 + 4),
        wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
    );
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(&rays, 0, &readback, 0, n * 48);
    encoder.copy_buffer_to_buffer(&hits, 0, &readback, n * 48, n * 32);
    encoder.copy_buffer_to_buffer(&pixels, 0, &readback, n * 80, n * 4);
    queue.submit([encoder.finish()]);
    let bytes = read_back(&device, &readback)?;
    let (ray_bytes, rest) = bytes.split_at((n * 48) as usize);
    let (hit_bytes, pixel_bytes) = rest.split_at((n * 32) as usize);
    let gpu_rays: Vec<Ray> = ray_bytes
        .chunks_exact(48)
        .map(bytemuck::pod_read_unaligned)
        .collect();
    let gpu_hits: Vec<Hit> = hit_bytes
        .chunks_exact(32)
        .map(bytemuck::pod_read_unaligned)
        .collect();
    let gpu_pixels: Vec<u32> = pixel_bytes
        .chunks_exact(4)
        .map(bytemuck::pod_read_unaligned)
        .collect();

    let mut cpu = CpuBackend::new().map_err(|e| e.to_string())?;
    cpu.set_scene(&scene).map_err(|e| e.to_string())?;
    let mut cpu_hits = vec![Hit::MISS; n as usize];
    cpu.intersect(&gpu_rays, &mut cpu_hits)
        .map_err(|e| e.to_string())?;

    let exact = info.device_type == wgpu::DeviceType::Cpu;
    let (mut hit_count, mut hit_wrong, mut pixel_wrong) = (0usize, 0usize, 0usize);
    for (i, ((ray, want), got)) in gpu_rays.iter().zip(&cpu_hits).zip(&gpu_hits).enumerate() {
        hit_count += usize::from(want.is_hit());
        let agree = if exact {
            (
                want.t.to_bits(),
                want.u.to_bits(),
                want.v.to_bits(),
                want.prim,
                want.instance,
            ) == (
                got.t.to_bits(),
                got.u.to_bits(),
                got.v.to_bits(),
                got.prim,
                got.instance,
            )
        } else {
            want.is_hit() == got.is_hit()
                && (!want.is_hit()
                    || (want.instance == got.instance && t_close(want.t, got.t, t_floor(ray))))
        };
        if !agree {
            if hit_wrong < 5 {
                eprintln!("pixel {i}: CPU {want:?}, wgpu {got:?}");
            }
            hit_wrong += 1;
        }
        // The engine's shading of the GPU's hit against the host's, within
        // one step of 8 bits (WGSL's division is not correctly rounded).
        let want_px = shade(got).map(|c| c.clamp(0.0, 1.0) * 255.0);
        let px = gpu_pixels[i].to_le_bytes();
        if (0..3).any(|c| (px[c] as f32 - want_px[c]).abs() > 1.0) {
            pixel_wrong += 1;
        }
    }
    println!(
        "frame: {WIDTH}x{HEIGHT} camera rays written, traced by Prism ({} instances, two-level) and shaded in one submission, {:.1} ms",
        scene.instances().len(),
        frame.as_secs_f64() * 1e3
    );
    println!(
        "check: {hit_count} of {n} rays hit; hits against the CPU backend ({}): {} disagree; pixels against host shading: {} disagree",
        if exact {
            "bit for bit"
        } else {
            "same instance, t within core's tolerance"
        },
        hit_wrong,
        pixel_wrong
    );
    let ok = hit_wrong == 0 && pixel_wrong == 0 && hit_count > 0;
    println!("{}", if ok { "OK" } else { "DISAGREEMENT" });
    Ok(ok)
}
