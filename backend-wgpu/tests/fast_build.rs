//! The fast and clustered trees built on the device (`shaders/fast_build.wgsl`,
//! `shaders/clustered_build.wgsl`) against core's (`prism_core::lbvh`,
//! `prism_core::ploc`, the source of truth): the same slot order and nodes, on
//! random triangle soups, an indexed mesh, sizes around the workgroup, the
//! clustered build's one-workgroup tail and the sort tile, ogre and bunny; and
//! `set_scene` of a flat mesh asking for either tree traces the same hits as
//! core's walk of core's tree.
//!
//! Without an adapter each test prints why and passes, unless
//! `PRISM_REQUIRE_WGPU=1`; without the shared scenes the scene tests skip,
//! unless `PRISM_REQUIRE_SCENES=1`.

use prism_core::bvh::triangle_bounds;
use prism_core::glam::Vec3;
use prism_core::gpu::BvhNode;
use prism_core::{Accel, Backend, BuildQuality, Error, Hit, Material, Ray, Scene, lbvh, ploc};
use prism_wgpu::{WgpuBackend, WgpuOptions};
use proptest::prelude::*;
use std::path::PathBuf;

/// A software-allowed backend, or `None` (the test skips) where there is no
/// adapter and `PRISM_REQUIRE_WGPU` is not 1.
fn gpu_or_skip() -> Option<WgpuBackend> {
    match WgpuBackend::new(WgpuOptions {
        allow_software: true,
        ..Default::default()
    }) {
        Ok(b) => Some(b),
        Err(e) => {
            let required = std::env::var("PRISM_REQUIRE_WGPU").is_ok_and(|v| v == "1");
            assert!(
                !required && matches!(e, Error::BackendUnavailable { .. }),
                "no usable wgpu adapter: {e}"
            );
            eprintln!("SKIPPED: no wgpu adapter: {e}; PRISM_REQUIRE_WGPU=1 makes this a failure");
            None
        }
    }
}

/// The shared scenes' directory, or `None` (the test skips) without them,
/// unless `PRISM_REQUIRE_SCENES=1`.
fn scenes_or_skip() -> Option<PathBuf> {
    let dir = std::env::var_os("PRISM_SCENES")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/scenes"));
    if dir.join("bunny.obj").exists() {
        return Some(dir);
    }
    assert!(
        !std::env::var("PRISM_REQUIRE_SCENES").is_ok_and(|v| v == "1"),
        "PRISM_REQUIRE_SCENES=1 but {} holds no bunny.obj",
        dir.display()
    );
    eprintln!("SKIPPED: no shared scenes");
    None
}

/// The first difference between the device's nodes and core's: indices and
/// counts bit for bit, box coordinates as floats (a zero's sign may differ
/// where a min or max met +0 and -0).
fn node_difference(device: &[BvhNode], core: &[BvhNode]) -> Option<String> {
    if device.len() != core.len() {
        return Some(format!("{} nodes, core has {}", device.len(), core.len()));
    }
    for (i, (d, c)) in device.iter().zip(core).enumerate() {
        let rows = |n: &BvhNode| [n.left_lo, n.left_hi, n.right_lo, n.right_hi];
        for (r, (dr, cr)) in rows(d).iter().zip(rows(c)).enumerate() {
            if dr[..3] != cr[..3] || dr[3].to_bits() != cr[3].to_bits() {
                return Some(format!("node {i} row {r}: device {dr:?}, core {cr:?}"));
            }
        }
    }
    None
}

/// The first way the device's tree of `quality` over a mesh differs from
/// core's, if any.
fn tree_difference(
    gpu: &mut WgpuBackend,
    positions: &[Vec3],
    triangles: &[[u32; 3]],
    quality: BuildQuality,
) -> Option<String> {
    let boxes: Vec<_> = triangles
        .iter()
        .map(|t| {
            let v = |i: u32| positions[i as usize];
            triangle_bounds(v(t[0]), v(t[1]), v(t[2]))
        })
        .collect();
    let (device, core) = if quality == BuildQuality::Clustered {
        let core = ploc::build(&boxes).expect("core's clustered tree");
        match gpu.build_clustered_tree(positions, triangles) {
            Ok(Some(t)) => (t, core),
            Ok(None) => {
                // Too deep for the stack: core takes the radix tree.
                let radix = lbvh::build(&boxes).expect("core's fast tree");
                return (core.order != radix.order)
                    .then(|| "too deep on the device, not in core".to_string());
            }
            Err(e) => return Some(format!("device build failed: {e}")),
        }
    } else {
        match gpu.build_fast_tree(positions, triangles) {
            Ok(t) => (t, lbvh::build(&boxes).expect("core's fast tree")),
            Err(e) => return Some(format!("device build failed: {e}")),
        }
    };
    if let Some(slot) = device
        .order
        .iter()
        .zip(&core.order)
        .position(|(d, c)| d != c)
    {
        return Some(format!("slot order differs from core's at slot {slot}"));
    }
    if device.order.len() != core.order.len() {
        return Some(format!(
            "{} slots, core has {}",
            device.order.len(),
            core.order.len()
        ));
    }
    node_difference(&device.nodes, &core.nodes)
}

/// Panic naming `what` if the device's fast or clustered tree is not core's.
fn check_mesh(gpu: &mut WgpuBackend, what: &str, positions: &[Vec3], triangles: &[[u32; 3]]) {
    for quality in [BuildQuality::Fast, BuildQuality::Clustered] {
        if let Some(d) = tree_difference(gpu, positions, triangles, quality) {
            panic!("{what} ({} triangles, {quality:?}): {d}", triangles.len());
        }
    }
}

/// A soup of `n` triangles from `coords` (nine a triangle, in [0, 1)), with
/// repeats: every fifth shares one of three centres (equal codes, told apart
/// by slot), every seventeenth has two equal corners (zero area).
fn soup(coords: &[f32], n: usize) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let mut positions = Vec::with_capacity(3 * n);
    let mut triangles = Vec::with_capacity(n);
    for i in 0..n {
        let f = |k: usize| coords[(9 * i + k) % coords.len()];
        let c = if i % 5 == 0 {
            Vec3::new((i % 3) as f32, 0.0, 0.0)
        } else {
            Vec3::new(f(0), f(1), f(2)) * 100.0
        };
        let a = c + Vec3::new(f(3), f(4), f(5));
        let b = if i % 17 == 0 {
            a
        } else {
            c + Vec3::new(f(6), f(7), f(8))
        };
        let base = positions.len() as u32;
        positions.extend([c, a, b]);
        triangles.push([base, base + 1, base + 2]);
    }
    (positions, triangles)
}

/// A grid of `w` x `h` quads as an indexed mesh (vertices shared between
/// triangles), bent so that it is not flat.
fn grid_mesh(w: u32, h: u32) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let mut positions = Vec::new();
    for y in 0..=h {
        for x in 0..=w {
            let (fx, fy) = (x as f32 * 0.37, y as f32 * 0.21);
            positions.push(Vec3::new(fx, (fx * 0.7).sin() * (fy * 1.3).cos(), fy));
        }
    }
    let at = |x: u32, y: u32| y * (w + 1) + x;
    let mut triangles = Vec::new();
    for y in 0..h {
        for x in 0..w {
            triangles.push([at(x, y), at(x + 1, y), at(x + 1, y + 1)]);
            triangles.push([at(x, y), at(x + 1, y + 1), at(x, y + 1)]);
        }
    }
    (positions, triangles)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Random soups of 2 to 600 triangles (one or more workgroups, a count
    /// rarely a multiple of 256; the clustered build's tail alone, or rounds
    /// on the whole device first), scaled and moved over many magnitudes (the
    /// Morton scale's division sees extents from 1e-4 to 1e6): the device's
    /// fast and clustered trees are core's.
    #[test]
    fn device_fast_tree_is_cores_on_random_soups(
        n in 2usize..600,
        coords in prop::collection::vec(0.0f32..1.0, 9..200),
        scale_exp in -6i32..5,
        scale_mantissa in 1.0f32..2.0,
        offset in -1e3f32..1e3,
    ) {
        let Some(mut gpu) = gpu_or_skip() else { return Ok(()) };
        let (mut p, t) = soup(&coords, n);
        let scale = scale_mantissa * 10f32.powi(scale_exp);
        for v in &mut p {
            *v = *v * scale + Vec3::splat(offset);
        }
        for quality in [BuildQuality::Fast, BuildQuality::Clustered] {
            let d = tree_difference(&mut gpu, &p, &t, quality);
            prop_assert!(d.is_none(), "{n} triangles, {quality:?}: {}", d.unwrap_or_default());
        }
    }
}

/// Sizes at the edges: 2 and 3 triangles, one past a workgroup (257), one
/// past a sort tile (4097), 64 tiles (the most whose scatter scans the
/// histograms itself) and one past them (a scan dispatch of its own), and
/// an indexed mesh of 2 x 40 x 37 triangles;
/// every triangle on one point (all codes equal), and a flat soup on a plane.
#[test]
fn device_fast_tree_is_cores_at_edge_sizes() {
    let Some(mut gpu) = gpu_or_skip() else { return };
    let coords: Vec<f32> = (0..997)
        .map(|i| ((i * 7919) % 1009) as f32 / 1009.0)
        .collect();
    for n in [2usize, 3, 255, 256, 257, 4097, 64 * 4096, 64 * 4096 + 1] {
        let (p, t) = soup(&coords, n);
        check_mesh(&mut gpu, &format!("soup of {n}"), &p, &t);
    }
    let (p, t) = grid_mesh(40, 37);
    check_mesh(&mut gpu, "indexed grid", &p, &t);
    // Every centre equal: one code for all, the tree from the slots alone.
    let p = vec![Vec3::ZERO, Vec3::X, Vec3::Y];
    let t = vec![[0, 1, 2]; 300];
    check_mesh(&mut gpu, "300 copies of one triangle", &p, &t);
    // A flat mesh: no extent on y (a Morton scale of 0 there).
    let (mut p, t) = grid_mesh(20, 9);
    for v in &mut p {
        v.y = 2.5;
    }
    check_mesh(&mut gpu, "flat grid", &p, &t);
    // A soup on a ground that spans it: two triangles whose sort keys take
    // the large bit (prism_core::lbvh::sort_key).
    let (mut p, mut t) = soup(&coords, 1000);
    let base = p.len() as u32;
    p.extend([
        Vec3::new(-10.0, -1.0, -10.0),
        Vec3::new(110.0, -1.0, -10.0),
        Vec3::new(110.0, -1.0, 110.0),
        Vec3::new(-10.0, -1.0, 110.0),
    ]);
    t.extend([[base, base + 2, base + 1], [base, base + 3, base + 2]]);
    check_mesh(&mut gpu, "soup on a ground", &p, &t);
}

/// Fewer than two triangles is a typed error naming the setting; an index
/// past the vertices names the triangle; `set_scene` of one triangle asking
/// for the fast tree gets core's (built on the host) and traces it.
#[test]
fn device_fast_build_refuses_what_it_cannot_build() {
    let Some(mut gpu) = gpu_or_skip() else { return };
    let p = vec![Vec3::ZERO, Vec3::X, Vec3::Y];
    for t in [vec![], vec![[0u32, 1, 2]]] {
        match gpu.build_fast_tree(&p, &t) {
            Err(Error::Setting { field, value, .. }) => {
                assert_eq!(field, "triangles of a fast build on the device");
                assert_eq!(value, t.len() as f64);
            }
            other => panic!("{} triangles: {other:?}", t.len()),
        }
    }
    match gpu.build_fast_tree(&p, &[[0, 1, 2], [0, 1, 3]]) {
        Err(Error::IndexOutOfRange {
            triangle, index, ..
        }) => assert_eq!((triangle, index), (1, 3)),
        other => panic!("index 3 of 3 vertices: {other:?}"),
    }
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
    scene.add_triangle(Vec3::ZERO, Vec3::X, Vec3::Y, m);
    scene.build_quality = BuildQuality::Fast;
    gpu.set_scene(&scene).expect("set_scene of one triangle");
    let ray = Ray::new(Vec3::new(0.2, 0.2, 1.0), Vec3::NEG_Z);
    let mut hits = [Hit::MISS];
    gpu.intersect(&[ray], &mut hits).expect("intersect");
    assert_eq!(hits[0].prim, 0, "{:?}", hits[0]);
}

/// Ogre's and bunny's trees built on the device are core's; `set_scene` of bunny asking
/// for the fast tree traces every 4th ray of bunny.diffuse to the hits, bit for bit, that
/// the same backend gives on the host's SAH tree (the tree decides which triangles a ray
/// meets, the kernel each hit's bits), and to core's primitives at core's `t` up to a few
/// ulps: NVIDIA's Vulkan compiler rounds the triangle test's last bits unlike core on
/// some 5% of these rays (3,029 of 65,536 on an H200, bench/RESULTS.md), on either tree;
/// lavapipe gives core's bits.
#[test]
fn device_fast_tree_is_cores_on_ogre_and_bunny_and_traces_bunnys_hits() {
    let Some(dir) = scenes_or_skip() else { return };
    let Some(mut gpu) = gpu_or_skip() else { return };
    let ogre = prism::mesh::load_mesh(dir.join("ogre.obj")).expect("read obj");
    check_mesh(&mut gpu, "ogre", &ogre.positions, &ogre.triangles);
    let mesh = prism::mesh::load_mesh(dir.join("bunny.obj")).expect("read obj");
    check_mesh(&mut gpu, "bunny", &mesh.positions, &mesh.triangles);
    let (mut scene, _) =
        prism::mesh_scene(&mesh, Material::lambertian(Vec3::splat(0.5))).expect("mesh");
    let all = prism::rays::read_rays(dir.join("bunny.diffuse.rays")).expect("rays");
    let rays: Vec<Ray> = all.iter().step_by(4).copied().collect();
    // The same rays on the host's SAH tree first.
    scene.build_quality = BuildQuality::Sah;
    gpu.set_scene(&scene).expect("set_scene");
    let mut sah_hits = vec![Hit::MISS; rays.len()];
    gpu.intersect(&rays, &mut sah_hits).expect("intersect");
    scene.build_quality = BuildQuality::Fast;
    let stats = gpu.set_scene(&scene).expect("set_scene");
    let accel = Accel::build(&scene).expect("core's Accel");
    let uploaded = gpu.accel().expect("the uploaded scene");
    assert_eq!(uploaded.nodes().len(), accel.nodes().len());
    assert!(
        uploaded
            .nodes()
            .iter()
            .zip(accel.nodes())
            .all(|(d, c)| node_difference(&[*d], &[*c]).is_none()),
        "set_scene's tree is not core's"
    );
    let mut hits = vec![Hit::MISS; rays.len()];
    gpu.intersect(&rays, &mut hits).expect("intersect");
    let tree_differ = (0..rays.len())
        .filter(|&i| bytemuck::bytes_of(&hits[i]) != bytemuck::bytes_of(&sah_hits[i]))
        .count();
    let mut core_bits = 0;
    for (i, (h, r)) in hits.iter().zip(&rays).enumerate() {
        let c = accel.intersect(r);
        if bytemuck::bytes_of(h) == bytemuck::bytes_of(&c) {
            continue;
        }
        core_bits += 1;
        let ulps = (h.t.to_bits() as i64 - c.t.to_bits() as i64).abs();
        assert!(
            h.prim == c.prim && ulps <= 4,
            "ray {i}: device {h:?}, core {c:?}"
        );
    }
    eprintln!(
        "bunny.diffuse, {} rays on the device-built tree (build {:.3} ms, {:?}): {tree_differ} differ \
         from the SAH tree's on this adapter, {core_bits} from core's in their last bits",
        rays.len(),
        stats.build.as_secs_f64() * 1e3,
        stats.timing
    );
    assert_eq!(
        tree_differ, 0,
        "the device tree's hits differ from the SAH tree's"
    );
    assert!(hits.iter().any(|h| h.prim != Hit::MISS.prim), "no ray hit");
}

/// A test kernel appended to fast_build.wgsl: `div_rn_exact` of each pair.
const DIVIDE_KERNEL: &str = "
@group(0) @binding(20) var<storage, read> divide_in: array<vec2<f32>>;
@group(0) @binding(21) var<storage, read_write> divide_out: array<f32>;
@compute @workgroup_size(64)
fn test_divide(@builtin(global_invocation_id) g: vec3<u32>) {
    if g.x < arrayLength(&divide_in) {
        divide_out[g.x] = div_rn_exact(divide_in[g.x].x, divide_in[g.x].y);
    }
}
";

/// `div_rn_exact` (fast_build.wgsl) of each pair on the device.
fn device_divide(gpu: &WgpuBackend, pairs: &[[f32; 2]]) -> Vec<f32> {
    use wgpu::util::DeviceExt;
    let device = gpu.device();
    let source = format!(
        "{}{DIVIDE_KERNEL}",
        include_str!("../shaders/fast_build.wgsl")
    );
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("divide test"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("divide test"),
        layout: None,
        module: &module,
        entry_point: Some("test_divide"),
        compilation_options: Default::default(),
        cache: None,
    });
    let input = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("divide in"),
        contents: bytemuck::cast_slice(pairs),
        usage: wgpu::BufferUsages::STORAGE,
    });
    let bytes = (pairs.len() * 4) as u64;
    let output = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("divide out"),
        size: bytes,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("divide readback"),
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("divide test"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 20,
                resource: input.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 21,
                resource: output.as_entire_binding(),
            },
        ],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups((pairs.len() as u32).div_ceil(64), 1, 1);
    }
    encoder.copy_buffer_to_buffer(&output, 0, &readback, 0, bytes);
    gpu.queue().submit([encoder.finish()]);
    readback.slice(..).map_async(wgpu::MapMode::Read, |r| {
        r.expect("map the readback");
    });
    device
        .poll(wgpu::PollType::Wait {
            submission_index: None,
            timeout: None,
        })
        .expect("wait");
    let out: Vec<f32> =
        bytemuck::cast_slice(&readback.slice(..).get_mapped_range().expect("mapped")).to_vec();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    /// The Morton scale's division (`div_rn_exact`) is core's `/` bit for bit
    /// on positive normal operands (core's numerator over extents of any
    /// magnitude, and arbitrary pairs), where WGSL's own `/` may be 2.5 ulp off.
    #[test]
    fn morton_scale_division_is_correctly_rounded(
        bits in prop::collection::vec((0x0080_0000u32..0x7f00_0000, 0x0080_0000u32..0x7f00_0000), 256..1024),
    ) {
        let Some(gpu) = gpu_or_skip() else { return Ok(()) };
        let numerator = lbvh::MORTON_GRID as f32 * (1.0 - 1e-6);
        let mut pairs: Vec<[f32; 2]> = bits
            .iter()
            .map(|&(a, b)| [f32::from_bits(a), f32::from_bits(b)])
            .collect();
        pairs.extend(bits.iter().map(|&(_, b)| [numerator, f32::from_bits(b)]));
        let device = device_divide(&gpu, &pairs);
        for (p, d) in pairs.iter().zip(&device) {
            let host = p[0] / p[1];
            // Quotients outside the normal range fall back to WGSL's `/`.
            if host.is_normal() {
                prop_assert_eq!(d.to_bits(), host.to_bits(), "{} / {}", p[0], p[1]);
            }
        }
    }
}
