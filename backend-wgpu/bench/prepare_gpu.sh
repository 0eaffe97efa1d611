#!/usr/bin/env bash
# Build the wgpu backend's benchmark and test binaries here (release) and stage
# them, with the shared scenes and the instanced sets (xz-compressed), in
# .gpu/wgpu/ (ignored by git) for a GPU machine that has no Rust toolchain. Run
# from the repository root; then run backend-wgpu/bench/gpu_instances.sh there
# with .gpu/wgpu and the Vulkan loader debs (.gl/, see bench/gpu_final.sh)
# carried along.
set -euo pipefail
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/tmp/target-wgpu}
cargo build -p prism-rt-wgpu --release --example wgpu_bench
cargo test -p prism-rt-wgpu --release --no-run
G=.gpu/wgpu
mkdir -p $G/bin
newest() { ls -t "$CARGO_TARGET_DIR"/release/deps/"$1"-* | grep -v '\.d$' | head -1; }
cp "$CARGO_TARGET_DIR/release/examples/wgpu_bench" $G/bin/wgpu_bench
cp "$(newest adapter)" $G/bin/wgpu_adapter_tests
cp "$(newest instances)" $G/bin/wgpu_instances_tests
strip --strip-debug $G/bin/*
scenes=${PRISM_SCENES:-../shared/scenes}
# The meshes, ray sets and reference hits, and the instanced sets (instances/).
staged() { [ -f $G/scenes.tar.xz ] && [ "$(tar -tJf $G/scenes.tar.xz | grep -c '^instances/bunny-x1000.instances$')" = 1 ]; }
if ! staged; then
  tar -C "$scenes" -cJf $G/scenes.tar.xz $(cd "$scenes" && ls *.obj *.rays *.hits instances/bunny-x1000.*)
fi
echo "$(git rev-parse --short HEAD) (backend-wgpu at $(git log -1 --format=%h -- backend-wgpu))" > $G/commit
git status --short -- core backend-wgpu > $G/dirty
du -sh $G
