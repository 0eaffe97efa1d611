#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (no Rust needed), from the repository root: the
# two-level figures of both GPU backends in one run. Staged here first:
#   CARGO_TARGET_DIR=... bash backend-cuda/bench/prepare_gpu.sh   (.gpu/cuda)
#   CARGO_TARGET_DIR=... bash backend-wgpu/bench/prepare_gpu.sh   (.gpu/wgpu)
#   bash bench/stage_two_level.sh                                  (.gpu/bin: prism, soak)
# and the Vulkan loader debs in .gl/ (see bench/gpu_final.sh). Runs:
#   1. backend-cuda/bench/gpu_check.sh (CUDA tests, bunny-x1000, the moving frame,
#      ogre's device refit; SKIP_NCU=1, no extra kernel configurations by default),
#   2. backend-wgpu/bench/gpu_instances.sh (wgpu two-level tests on every ray,
#      bunny-x1000 batches; FLAT=0 ADAPTER_TESTS=0 by default),
#   3. the soak (tests/soak.rs) on the CPU, CUDA and wgpu: host and device memory,
#   4. `prism bench --scene instances --moving 1024` on CUDA and wgpu.
# Logs go to $OUT (one tarball); the tables come last.
#   PARTS  which of cuda,wgpu,soak,moving to run (default: all)
set -uo pipefail
OUT=${OUT:-/tmp/prism-gpu-out}
mkdir -p "$OUT"
PARTS=${PARTS:-cuda,wgpu,soak,moving}
has() { [[ ",$PARTS," == *",$1,"* ]]; }
L=/tmp/prism-two-level-logs
mkdir -p $L
if has cuda; then
  OUT=$L SKIP_NCU=1 TWO_LEVEL_CONFIGS=${TWO_LEVEL_CONFIGS-""} bash backend-cuda/bench/gpu_check.sh > $L/cuda.txt 2>&1
  echo "cuda check: exit $?"
fi
[ -f .gpu/wgpu/scenes.tar.xz ] || cp .gpu/cuda/scenes.tar.xz .gpu/wgpu/
if has wgpu; then
  OUT=$L FLAT=${FLAT:-0} ADAPTER_TESTS=${ADAPTER_TESTS:-0} bash backend-wgpu/bench/gpu_instances.sh > $L/wgpu.txt 2>&1
  echo "wgpu check: exit $?"
fi
# Both backends through the facade: the CUDA libraries and the Vulkan loader.
. bench/gpu_env.sh
export PRISM_CACHE_DIR=/tmp/prism-kernel-cache
if has soak; then
  PRISM_SOAK=1 timeout ${SOAK_TIMEOUT:-300} .gpu/bin/soak --nocapture > $L/soak.txt 2>&1
  echo "soak: exit $?"
fi
if has moving; then
  for be in cuda wgpu; do
    timeout 60 .gpu/bin/prism bench --backend $be --scene instances --moving 1024 --frames 20 > $L/moving_$be.txt 2>&1
    echo "moving frames ($be): exit $?"
  done
fi
echo "==== CUDA ===="
sed -n '/^---- bench ----/,$p' $L/cuda.txt 2>/dev/null | cut -c1-260
grep -E "exit|test result" $L/cuda.txt 2>/dev/null
echo "==== wgpu ===="
grep -E "exit|test result" $L/wgpu.txt 2>/dev/null
sed -n '/^---- wgpu, bunny-x1000/,$p' $L/wgpu.txt 2>/dev/null
echo "==== soak ===="
grep -E "^soak|test result|panicked" $L/soak.txt 2>/dev/null
echo "==== moving frames (prism bench) ===="
cat $L/moving_*.txt 2>/dev/null | grep -v "^\s*$" | tail -40
tar -C $L -czf "$OUT/two_level_logs.tgz" .
