#!/usr/bin/env bash
# Here (Rust available): build and stage everything bench/gpu_final.sh runs on a GPU
# machine that has no Rust: the prism CLI, the CUDA GPU tests and benchmark, the
# wgpu benchmark, and the shared scenes (xz), in .gpu/ (ignored by git).
# The Vulkan loader debs go in .gl/; copy .gpu/ and .gl/ there with the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
G=.gpu
mkdir -p $G/bin
cargo build --release -q
cp target/release/prism $G/bin/prism
CARGO_TARGET_DIR=${CUDA_TARGET_DIR:-/tmp/target-cuda} bash backend-cuda/bench/prepare_gpu.sh >/dev/null
cp .gpu/cuda/bin/* $G/bin/
rm -f .gpu/cuda/scenes.tar.xz
cargo build --release -q -p prism-rt-wgpu --example wgpu_bench
cp target/release/examples/wgpu_bench $G/bin/wgpu_bench
# Test binaries that need a GPU: the out-of-memory row of the bad-input table and
# the conformance suite's broken-CUDA-kernel test.
newest() { ls -t target/release/deps/"$1"-* | grep -v '\.d$' | head -1; }
cargo test --release -q --test gpu_out_of_memory --test conformance --no-run 2>/dev/null
cp "$(newest gpu_out_of_memory)" $G/bin/gpu_out_of_memory
cp "$(newest conformance)" $G/bin/conformance_tests
# The wgpu backend's tests, on the GPU's own adapter (lane refill runs there only).
cargo test --release -q -p prism-rt-wgpu --test adapter --test instances --test persistent_path \
  --test render_tiles --test resident --no-run 2>/dev/null
cp "$(newest adapter)" $G/bin/wgpu_adapter_tests
cp "$(newest instances)" $G/bin/wgpu_instances_tests
cp "$(newest persistent_path)" $G/bin/wgpu_persistent_path_tests
cp "$(newest render_tiles)" $G/bin/wgpu_render_tiles_tests
cp "$(newest resident)" $G/bin/wgpu_resident_tests
strip --strip-debug $G/bin/*
# The meshes, ray sets and reference hits, and the instanced sets (instances/);
# an archive staged without the instanced sets is made again.
staged() { [ -f $G/scenes.tar.xz ] && [ "$(tar -tJf $G/scenes.tar.xz | grep -c '^instances/bunny-x1000.instances$')" = 1 ]; }
staged || tar -C ../shared/scenes -cJf $G/scenes.tar.xz $(cd ../shared/scenes && ls *.obj *.rays *.hits instances/bunny-x1000.*)
git rev-parse --short HEAD > $G/commit
git status --short -- core backend-* src conformance > $G/dirty
du -sh $G
