#!/usr/bin/env bash
# On a machine with a GPU (no Rust needed), from the repository root, with
# .gpu/wgpu staged by backend-wgpu/bench/prepare_gpu.sh and the Vulkan loader
# debs in .gl/: the wgpu backend's two-level tests on the GPU's own adapter
# (every ray of the instanced sets, lane refill required), the flat adapter
# tests (ADAPTER_TESTS=0 leaves them out), wgpu_bench --instances (bunny-x1000,
# 4M-ray batches: closest and any hit, Mrays/s, every hit against Embree and
# core) and, for comparison, the flat bunny and ogre batches in one dispatch
# (FLAT=0 leaves them out). Logs go to $OUT; the tables come last. Some two
# minutes on an H100.
set -uo pipefail
OUT=${OUT:-/tmp/prism-gpu-out}
mkdir -p "$OUT"
. bench/gpu_env.sh
G=.gpu/wgpu
S=/tmp/prism-scenes-wgpu
mkdir -p $S && tar -C $S -xJf $G/scenes.tar.xz
export PRISM_SCENES=$S PRISM_REQUIRE_SCENES=1 PRISM_REQUIRE_WGPU=1
echo "commit $(cat $G/commit) dirty: $(tr '\n' ' ' < $G/dirty) date $(date -u +%F)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>/dev/null
PRISM_FULL_RAYS=1 PRISM_REQUIRE_LANE_REFILL=1 timeout 300 $G/bin/wgpu_instances_tests --nocapture \
  > "$OUT/wgpu_instances_tests.log" 2>&1
echo "wgpu two-level tests: exit $?"
if [ "${ADAPTER_TESTS:-1}" = 1 ]; then
  PRISM_FULL_RAYS=1 PRISM_REQUIRE_LANE_REFILL=1 timeout 300 $G/bin/wgpu_adapter_tests --nocapture \
    > "$OUT/wgpu_adapter_tests.log" 2>&1
  echo "wgpu adapter tests: exit $?"
fi
grep -hE "^test |test result|panicked|bunny-x1000|SKIPPED" "$OUT"/wgpu_*_tests.log
timeout 300 $G/bin/wgpu_bench --scenes $S --instances --runs ${RUNS:-5} > "$OUT/wgpu_bench_instances.log" 2>&1
echo "wgpu_bench --instances: exit $?"
if [ "${FLAT:-1}" = 1 ]; then
  timeout 300 $G/bin/wgpu_bench --scenes $S --rays-only --no-overlap --runs ${RUNS:-5} > "$OUT/wgpu_bench_flat.log" 2>&1
  echo "wgpu_bench --rays-only --no-overlap: exit $?"
fi
echo "---- wgpu, flat batches (one dispatch) ----"
[ -f "$OUT/wgpu_bench_flat.log" ] && grep -E "^default batch|CHECK FAILED" "$OUT/wgpu_bench_flat.log" | sort -u | cut -c1-200
echo "---- wgpu, bunny-x1000 ----"
grep -E "CHECK FAILED|first ray not core|core's walk|set_scene" "$OUT/wgpu_bench_instances.log" | sort -u | cut -c1-240
sed -n '/^==== summary/,$p' "$OUT/wgpu_bench_instances.log" | sed -n '/^| instanced set/,$p'
