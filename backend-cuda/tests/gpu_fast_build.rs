//! The fast and clustered trees built on the device against core's
//! (`prism_core::lbvh` and `prism_core::ploc`, the source of truth): the same
//! slots, nodes and primitive records; and the scene traced on them against
//! Embree's reference hits and core's walk of the same tree. Each test skips, saying so, where there is no CUDA device
//! (`PRISM_REQUIRE_CUDA=1` makes that a failure).

mod common;

use common::*;
use prism_core::backend::Backend;
use prism_core::bvh::triangle_bounds;
use prism_core::glam::Vec3;
use prism_core::gpu::BvhNode;
use prism_core::reference::AgreementCounts;
use prism_core::rng::Pcg;
use prism_core::{Accel, BuildQuality, Hit, Material, Scene, lbvh, ploc};

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
            let same = dr[..3] == cr[..3] && dr[3].to_bits() == cr[3].to_bits();
            if !same {
                return Some(format!("node {i} row {r}: device {dr:?}, core {cr:?}"));
            }
        }
    }
    None
}

/// Build `positions`/`triangles` on the device as `quality` and check it is
/// core's tree.
fn check_mesh(
    gpu: &mut prism_cuda::CudaBackend,
    what: &str,
    positions: &[Vec3],
    triangles: &[[u32; 3]],
    quality: BuildQuality,
) {
    let boxes: Vec<_> = triangles
        .iter()
        .map(|t| {
            let v = |i: u32| positions[i as usize];
            triangle_bounds(v(t[0]), v(t[1]), v(t[2]))
        })
        .collect();
    let (device, core) = if quality == BuildQuality::Clustered {
        let device = gpu
            .build_clustered_tree(positions, triangles)
            .unwrap_or_else(|e| panic!("{what}: device build failed: {e}"));
        let core = ploc::build(&boxes).expect("core's clustered tree");
        let Some(device) = device else {
            // Too deep for the stack: core falls back to the radix tree.
            let radix = lbvh::build(&boxes).expect("core's fast tree");
            assert_eq!(
                core.order, radix.order,
                "{what}: too deep, yet not the radix tree"
            );
            eprintln!("{what}: the clustered tree is too deep on the device and in core");
            return;
        };
        (device, core)
    } else {
        let device = gpu
            .build_fast_tree(positions, triangles)
            .unwrap_or_else(|e| panic!("{what}: device build failed: {e}"));
        (device, lbvh::build(&boxes).expect("core's fast tree"))
    };
    let first_order = device
        .order
        .iter()
        .zip(&core.order)
        .position(|(d, c)| d != c);
    assert_eq!(
        first_order, None,
        "{what}: slot order differs from core's at slot {first_order:?}"
    );
    if let Some(d) = node_difference(&device.nodes, &core.nodes) {
        panic!("{what}: {d}");
    }
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
    for t in triangles {
        let v = |i: u32| positions[i as usize];
        scene.add_triangle(v(t[0]), v(t[1]), v(t[2]), m);
    }
    scene.build_quality = quality;
    let accel = Accel::build(&scene).expect("core's Accel");
    let prims_differ = device
        .prims
        .iter()
        .zip(accel.primitives())
        .position(|(d, c)| bytemuck::bytes_of(d) != bytemuck::bytes_of(c));
    assert_eq!(
        prims_differ, None,
        "{what}: primitive record differs from core's at slot {prims_differ:?}"
    );
    eprintln!(
        "{what} ({quality:?}): {} triangles, {} nodes, the same tree as core's ({:.3} ms on the device)",
        triangles.len(),
        device.nodes.len(),
        device.device_ms
    );
}

/// A random soup with repeats: triangles sharing centres (equal codes, told
/// apart by slot), slivers, a few zero-area ones.
fn random_mesh(seed: u32, n: usize) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let mut rng = Pcg::for_path(seed, 7, 0);
    let mut f = || rng.next_f32();
    let mut positions = Vec::new();
    let mut triangles = Vec::new();
    for i in 0..n {
        let c = if i % 5 == 0 {
            Vec3::new((i % 3) as f32, 0.0, 0.0)
        } else {
            Vec3::new(f(), f(), f()) * 100.0
        };
        let a = c + Vec3::new(f(), f(), f());
        let b = if i % 17 == 0 {
            a
        } else {
            c + Vec3::new(f(), f(), f())
        };
        let base = positions.len() as u32;
        positions.extend([c, a, b]);
        triangles.push([base, base + 1, base + 2]);
    }
    (positions, triangles)
}

#[test]
fn device_fast_tree_is_cores_on_random_meshes() {
    let Some(mut gpu) = gpu_or_skip() else { return };
    for quality in [BuildQuality::Fast, BuildQuality::Clustered] {
        // 4097 and 100,000: rounds on the whole device before the one-block
        // tail of the clustered build (4096 clusters at most).
        for (seed, n) in [
            (1u32, 2usize),
            (2, 3),
            (3, 9),
            (4, 1000),
            (5, 4097),
            (6, 100_000),
        ] {
            let (p, t) = random_mesh(seed, n);
            check_mesh(
                &mut gpu,
                &format!("random mesh {seed} ({n} triangles)"),
                &p,
                &t,
                quality,
            );
        }
        // On a ground that spans them: two triangles whose sort keys take
        // the large bit (prism_core::lbvh::sort_key).
        for (seed, n) in [(7u32, 1000usize), (8, 4097)] {
            let (mut p, mut t) = random_mesh(seed, n);
            let base = p.len() as u32;
            p.extend([
                Vec3::new(-10.0, -1.0, -10.0),
                Vec3::new(110.0, -1.0, -10.0),
                Vec3::new(110.0, -1.0, 110.0),
                Vec3::new(-10.0, -1.0, 110.0),
            ]);
            t.extend([[base, base + 2, base + 1], [base, base + 3, base + 2]]);
            check_mesh(
                &mut gpu,
                &format!("random mesh {seed} ({n} triangles) on a ground"),
                &p,
                &t,
                quality,
            );
        }
    }
}

#[test]
fn device_fast_tree_is_cores_on_bunny_and_ogre() {
    let Some(dir) = scenes_dir() else {
        eprintln!("SKIPPED: no shared scenes");
        return;
    };
    let Some(mut gpu) = gpu_or_skip() else { return };
    for quality in [BuildQuality::Fast, BuildQuality::Clustered] {
        for mesh in ["bunny", "ogre"] {
            let m = prism::mesh::load_mesh(dir.join(format!("{mesh}.obj"))).expect("mesh");
            check_mesh(&mut gpu, mesh, &m.positions, &m.triangles, quality);
        }
    }
}

/// `set_scene` of a flat mesh asking for the fast or clustered tree builds
/// it on the device; its hits agree with Embree's reference and equal core's
/// walk of core's tree of that quality bit for bit, and any-hit agrees with
/// core's.
#[test]
fn device_fast_tree_traces_the_reference_hits() {
    let Some(dir) = scenes_dir() else {
        eprintln!("SKIPPED: no shared scenes");
        return;
    };
    let Some(mut gpu) = gpu_or_skip() else { return };
    for quality in [BuildQuality::Fast, BuildQuality::Clustered] {
        for mesh in ["bunny", "ogre"] {
            let mut scene = mesh_scene(&dir.join(format!("{mesh}.obj"))).expect("mesh");
            scene.build_quality = quality;
            let stats = gpu.set_scene(&scene).expect("set_scene");
            let accel = Accel::build(&scene).expect("core's Accel");
            for set in ["primary", "diffuse"] {
                let rays = load_rays(&dir.join(format!("{mesh}.{set}.rays"))).expect("rays");
                let reference = load_hits(&dir.join(format!("{mesh}.{set}.hits"))).expect("hits");
                let mut hits = vec![Hit::MISS; rays.len()];
                gpu.intersect(&rays, &mut hits).expect("intersect");
                let counts = AgreementCounts::compare(&rays, &hits, &reference);
                eprintln!(
                    "{mesh}.{set} on the device-built {quality:?} tree (build {:.3} ms) vs Embree: {counts:?}",
                    stats.build.as_secs_f64() * 1e3
                );
                assert!(counts.passed(), "{mesh}.{set}: {counts:?}");
                let core: Vec<Hit> = rays.iter().map(|r| accel.intersect(r)).collect();
                let differ = hits
                    .iter()
                    .zip(&core)
                    .filter(|(g, c)| bytemuck::bytes_of(*g) != bytemuck::bytes_of(*c))
                    .count();
                assert_eq!(
                    differ, 0,
                    "{mesh}.{set}: hits differ from core's on the {quality:?} tree"
                );
                let mut occ = vec![false; rays.len()];
                gpu.occluded(&rays, &mut occ).expect("occluded");
                let occ_differ = occ
                    .iter()
                    .zip(&rays)
                    .filter(|(o, r)| **o != accel.occluded(r))
                    .count();
                assert_eq!(occ_differ, 0, "{mesh}.{set}: any-hit differs from core's");
            }
        }
    }
}
