#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (no Rust needed), from the repository root,
# with .gpu/ staged by bench/stage_gpu.sh and the Vulkan loader debs in .gl/:
# CUDA tests, wgpu tests (flat and two-level), CUDA and wgpu benchmarks (wgpu:
# also bunny-x1000, wgpu_bench --instances), the CLI stage tables, the conformance
# suite on CPU, CUDA and wgpu, and the GPU out-of-memory test (PRISM_GPU_OOM=1).
# Logs and the report (one tarball) go to $OUT; a summary is printed last.
set -uo pipefail
OUT=${OUT:-/tmp/prism-gpu-out}
mkdir -p "$OUT"
. bench/gpu_env.sh
B=.gpu/bin
mkdir -p /tmp/prism-scenes-x && tar -C /tmp/prism-scenes-x -xJf .gpu/scenes.tar.xz
S=$(dirname "$(find /tmp/prism-scenes-x -name bunny.obj | head -1)")
export PRISM_SCENES=$S PRISM_REQUIRE_SCENES=1 PRISM_CACHE_DIR=/tmp/prism-kernel-cache
export PRISM_REQUIRE_CUDA=1 PRISM_REQUIRE_NVRTC=1 PRISM_REQUIRE_WGPU=1
echo "commit $(cat .gpu/commit) dirty: $(tr '\n' ' ' < .gpu/dirty) date $(date -u +%F)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
# The SM clock every 250 ms, to tell a slow figure from a GPU that had not left
# its idle clock (the clocks are left as found).
nvidia-smi --query-gpu=timestamp,clocks.sm --format=csv,noheader,nounits -lms 250 > "$OUT/clocks.csv" &
CLOCKS=$!
phase() { echo "$(date +%H:%M:%S.%N | cut -c1-12) $1" >> "$OUT/phases.txt"; }
$B/prism info 2>&1 | tee "$OUT/info.txt"

# (The CPU-only kernel compile test runs in CI; here the GPU tests.)
timeout 240 $B/gpu --test-threads 6 --nocapture > "$OUT/cuda_tests.log" 2>&1; echo "cuda gpu tests: exit $?" | tee -a "$OUT/summary.txt"
grep -E "test result" "$OUT/cuda_tests.log" | tee -a "$OUT/summary.txt"

PRISM_FULL_RAYS=1 PRISM_REQUIRE_LANE_REFILL=1 timeout 120 $B/wgpu_adapter_tests --nocapture > "$OUT/wgpu_tests.log" 2>&1; echo "wgpu adapter tests: exit $?" | tee -a "$OUT/summary.txt"
grep -E "test result" "$OUT/wgpu_tests.log" | tee -a "$OUT/summary.txt"
PRISM_FULL_RAYS=1 PRISM_REQUIRE_LANE_REFILL=1 timeout 120 $B/wgpu_instances_tests --nocapture > "$OUT/wgpu_instances_tests.log" 2>&1; echo "wgpu two-level tests: exit $?" | tee -a "$OUT/summary.txt"
grep -E "test result" "$OUT/wgpu_instances_tests.log" | tee -a "$OUT/summary.txt"
# The persistent path kernels against the tile kernels, workgroups of several
# tiles, and an engine's device with subgroups (frames it records take the
# persistent kernels).
for t in persistent_path render_tiles resident; do
  PRISM_REQUIRE_LANE_REFILL=1 PRISM_ENGINE_SUBGROUPS=1 timeout 120 $B/wgpu_${t}_tests > "$OUT/wgpu_$t.log" 2>&1
  echo "wgpu $t tests: exit $?" | tee -a "$OUT/summary.txt"
  grep -E "test result" "$OUT/wgpu_$t.log" | tee -a "$OUT/summary.txt"
done

timeout 170 $B/prism conformance --out /tmp/conformance --backends cpu,cuda,wgpu --scenes $S > "$OUT/conformance.log" 2>&1
echo "conformance (cpu, cuda, wgpu): exit $?" | tee -a "$OUT/summary.txt"
tar -C /tmp -czf "$OUT/conformance.tgz" conformance
timeout 60 $B/conformance_tests --exact a_broken_cuda_triangle_test_is_caught --nocapture > "$OUT/broken_cuda.log" 2>&1
echo "broken CUDA kernel test: exit $?" | tee -a "$OUT/summary.txt"; grep "test result" "$OUT/broken_cuda.log" | tee -a "$OUT/summary.txt"
PRISM_GPU_OOM=1 timeout 120 $B/gpu_out_of_memory --exact gpu_out_of_memory_is_a_typed_error --nocapture > "$OUT/oom.log" 2>&1
echo "GPU out-of-memory test: exit $?" | tee -a "$OUT/summary.txt"; grep "test result" "$OUT/oom.log" | tee -a "$OUT/summary.txt"

phase "cuda-bench-start"
timeout 90 $B/gpu_bench --scenes $S --out /tmp > "$OUT/cuda_bench.log" 2>&1; echo "cuda bench: exit $?" | tee -a "$OUT/summary.txt"
phase "wgpu-bench-start"
timeout ${WGPU_BENCH_S:-150} $B/wgpu_bench --scenes $S --runs 5 ${WGPU_BENCH_ARGS:-} > "$OUT/wgpu_bench.log" 2>&1; echo "wgpu bench: exit $?" | tee -a "$OUT/summary.txt"
phase "wgpu-instances-start"
timeout 120 $B/wgpu_bench --scenes $S --instances --runs 5 > "$OUT/wgpu_instances.log" 2>&1; echo "wgpu bench --instances: exit $?" | tee -a "$OUT/summary.txt"
phase "cli-bench-start"

for be in cuda wgpu; do
  for sc in rtiow whitted19; do
    timeout 20 $B/prism bench --backend $be --scene $sc --runs 5 2>&1 | grep -v "skipped\|using" >> "$OUT/cli_bench.txt"
  done
done

phase "end"
kill $CLOCKS 2>/dev/null

echo "---- CLI stage tables ----"; cat "$OUT/cli_bench.txt"
echo "---- SM clock samples (MHz: count) per phase ----"
awk 'NR == FNR { split($1, t, ":"); start[++n] = t[1] * 3600 + t[2] * 60 + t[3]; name[n] = $2; next }
     { split($2, t, ":"); s = t[1] * 3600 + t[2] * 60 + t[3]; p = "before"
       for (i = 1; i <= n; i++) if (s >= start[i]) p = name[i]
       c[p " " $3 + 0]++ }
     END { for (k in c) print k ": " c[k] }' "$OUT/phases.txt" FS='[ ,]+' "$OUT/clocks.csv" | sort
echo "---- cuda bench ----"; grep -E "rtiow 1280|whitted19 8192|\.diffuse|\.primary" "$OUT/cuda_bench.log" | cut -c1-200 | head -20
echo "---- wgpu bench ----"; grep -E "batch|frame|FAIL|PASS" "$OUT/wgpu_bench.log" | cut -c1-200 | tail -40
echo "---- wgpu bench --instances ----"; sed -n '/^==== summary/,$p' "$OUT/wgpu_instances.log" | sed -n '/^| instanced set/,$p'
echo "---- conformance ----"; tail -15 "$OUT/conformance.log"
echo "---- summary ----"; cat "$OUT/summary.txt"
# Few files come back: the logs travel as one tarball beside the report's.
tar -C "$OUT" -czf /tmp/prism-logs.tgz --exclude=conformance.tgz . && mv /tmp/prism-logs.tgz "$OUT/logs.tgz" &&
  find "$OUT" -maxdepth 1 -type f ! -name '*.tgz' -delete
