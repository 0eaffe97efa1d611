//! 8-bit sRGB encoding: core's curve (`linear_to_srgb8`, a `powf` per channel)
//! against the table every backend encodes through (`Srgb8Table::encode`),
//! on the same million linear values. `cargo bench -p prism-rt-core --bench srgb8`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use prism_core::image::{Srgb8Table, linear_to_srgb8};
use std::hint::black_box;

/// A million linear values spread over [0, 1.25), as a rendered frame's
/// channels are (a few above 1), in a scrambled order.
fn values() -> Vec<f32> {
    let n = 1u32 << 20;
    (0..n)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 12) as f32 / (1u32 << 20) as f32 * 1.25)
        .collect()
}

fn encode(c: &mut Criterion) {
    let values = values();
    let table = Srgb8Table::new();
    let mut out = vec![0u8; values.len()];
    let mut group = c.benchmark_group("srgb8");
    group.throughput(Throughput::Elements(values.len() as u64));
    group.bench_function("curve (powf)", |b| {
        b.iter(|| {
            for (o, &v) in out.iter_mut().zip(black_box(&values)) {
                *o = linear_to_srgb8(v);
            }
            black_box(&out);
        })
    });
    group.bench_function("table", |b| {
        b.iter(|| {
            for (o, &v) in out.iter_mut().zip(black_box(&values)) {
                *o = table.encode(v);
            }
            black_box(&out);
        })
    });
    group.finish();
    // Building the table, once per backend.
    c.bench_function("srgb8 table build", |b| {
        b.iter(|| black_box(Srgb8Table::new()))
    });
}

criterion_group!(benches, encode);
criterion_main!(benches);
