#!/usr/bin/env bash
# Build the CUDA backend's GPU test and benchmark binaries here and stage them,
# with the shared scenes (xz-compressed), in .gpu/cuda/ (ignored by git) for a GPU
# machine that has no Rust toolchain. Run from the repository root; then run
# backend-cuda/bench/gpu_check.sh there with .gpu/cuda carried along.
set -euo pipefail
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/tmp/target-cuda}
cargo build -p prism-rt-cuda --release --tests --examples
G=.gpu/cuda
mkdir -p $G/bin
newest() { ls -t "$CARGO_TARGET_DIR"/release/deps/"$1"-* | grep -v '\.d$' | head -1; }
cp "$(newest gpu)" $G/bin/gpu
cp "$(newest gpu_instances)" $G/bin/gpu_instances
cp "$(newest compile)" $G/bin/compile
cp "$CARGO_TARGET_DIR/release/examples/gpu_bench" $G/bin/gpu_bench
strip --strip-debug $G/bin/*
scenes=${PRISM_SCENES:-../shared/scenes}
# The meshes, ray sets and reference hits, and the instanced sets (instances/).
# A staged archive without the instanced sets is made again.
staged() { [ -f $G/scenes.tar.xz ] && [ "$(tar -tJf $G/scenes.tar.xz | grep -c '^instances/bunny-x1000.instances$')" = 1 ]; }
if ! staged; then
  tar -C "$scenes" -cJf $G/scenes.tar.xz $(cd "$scenes" && ls *.obj *.rays *.hits instances/bunny-x1000.*)
fi
echo "$(git rev-parse --short HEAD) (backend-cuda at $(git log -1 --format=%h -- backend-cuda))" > $G/commit
git status --short -- backend-cuda > $G/dirty
du -sh $G
