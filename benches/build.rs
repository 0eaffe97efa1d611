//! Scene build: core's binned SAH BVH (`Accel::build`, one thread: what every
//! backend uploads) and the CPU backend's `set_scene` (that build, its subtrees
//! on the backend's threads, plus the collapse to its wide BVH) with one thread
//! and with every core, on the built-in scenes and on the shared meshes
//! (`$PRISM_SCENES`, else `../shared/scenes`) when they are there. `cargo bench --bench build`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use prism::glam::Vec3;
use prism::{Accel, Backend, Material, Scene};
use std::hint::black_box;

/// The scenes to build: the built-in ones, then the shared meshes found.
fn scenes() -> Vec<(String, Scene)> {
    let mut out: Vec<(String, Scene)> = ["rtiow", "whitted19"]
        .into_iter()
        .filter_map(|name| prism::scenes::by_name(name).ok())
        .map(|p| (p.name.to_string(), p.scene))
        .collect();
    let dir = prism::conformance::default_scenes_dir();
    for mesh in ["bunny", "ogre"] {
        let path = dir.join(format!("{mesh}.obj"));
        match prism::mesh::load_mesh(&path)
            .and_then(|m| prism::mesh_scene(&m, Material::lambertian(Vec3::splat(0.7))))
        {
            Ok((scene, _)) => out.push((mesh.to_string(), scene)),
            Err(e) => eprintln!("skipping {}: {e}", path.display()),
        }
    }
    out
}

fn build(c: &mut Criterion) {
    let scenes = scenes();
    let mut group = c.benchmark_group("accel_build");
    group.sample_size(20);
    for (name, scene) in &scenes {
        group.throughput(Throughput::Elements(scene.primitive_count() as u64));
        group.bench_function(name.as_str(), |b| {
            b.iter(|| Accel::build(black_box(scene)).map(|a| a.nodes().len()))
        });
    }
    group.finish();

    // One thread, then every core (the subtrees of large ranges on the pool).
    for threads in [1, 0] {
        let Ok(mut cpu) = prism_cpu::CpuBackend::with_threads(threads) else {
            eprintln!("skipping cpu_set_scene: no CPU backend");
            return;
        };
        let mut group = c.benchmark_group(format!("cpu_set_scene_{}t", cpu.threads()));
        group.sample_size(20);
        for (name, scene) in &scenes {
            group.throughput(Throughput::Elements(scene.primitive_count() as u64));
            group.bench_function(name.as_str(), |b| {
                b.iter(|| cpu.set_scene(black_box(scene)).map(|s| s.rays))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, build);
criterion_main!(benches);
