#!/usr/bin/env bash
# On the GPU machine, from the repository root, with .gpu/cuda staged by
# prepare_gpu.sh: the CPU-only compile test, the GPU tests (core and Embree
# agreement, renders, errors, fault recovery, cache), the benchmark (with
# --sweep: every kernel configuration), the SASS of the default kernels and an
# Nsight Compute look at the two hottest kernels. Logs go to $OUT; a table last.
#   BENCH_ARGS  arguments of gpu_bench (default: --sweep)
#   SKIP_TESTS=1, SKIP_NCU=1 to leave those out
set -uo pipefail
OUT=${OUT:-/tmp/prism-gpu-out}
mkdir -p "$OUT"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export PATH="/usr/local/cuda/bin:$PATH"
export PRISM_REQUIRE_CUDA=1 PRISM_REQUIRE_NVRTC=1
G=.gpu/cuda
S=/tmp/prism-scenes
mkdir -p $S
tar -C $S -xJf $G/scenes.tar.xz 2>/dev/null || python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" $G/scenes.tar.xz $S
export PRISM_SCENES_DIR=$S PRISM_CACHE_DIR=/tmp/prism-kernel-cache
echo "commit $(cat $G/commit 2>/dev/null) $(cat $G/dirty 2>/dev/null | tr '\n' ' ') date $(date -u +%F)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout 120 $G/bin/compile --nocapture > "$OUT/compile.log" 2>&1; echo "compile test: exit $?"
  timeout ${TEST_TIMEOUT:-240} $G/bin/gpu --test-threads 6 --nocapture > "$OUT/tests.log" 2>&1; echo "gpu tests: exit $?"
  grep -E "^test |test result|panicked|SKIPPED" "$OUT/tests.log"
  grep -E "vs Embree|rays gpu|fault reported" "$OUT/tests.log" | head -40
fi
timeout ${BENCH_TIMEOUT:-240} $G/bin/gpu_bench --scenes $S --out "$OUT" ${BENCH_ARGS:---sweep} > "$OUT/bench.log" 2>&1
echo "bench: exit $?"
if [ -f "$OUT/prism_default.cubin" ] && command -v cuobjdump > /dev/null; then
  cuobjdump -sass "$OUT/prism_default.cubin" > "$OUT/sass.txt" 2>&1
  rm -f "$OUT/prism_default.cubin"
  # Instructions, local loads/stores and global loads per kernel.
  awk '/Function :/ {f=$3} /\/\*[0-9a-f]+\*\// && f {n[f]++; if ($0 ~ /LDL/) l[f]++; if ($0 ~ /STL/) s[f]++; if ($0 ~ /LDG/) g[f]++}
       END {for (k in n) printf "sass %-22s %6d instr %4d LDL %4d STL %4d LDG\n", k, n[k], l[k], s[k], g[k]}' "$OUT/sass.txt"
fi
if [ "${SKIP_NCU:-0}" != 1 ] && command -v ncu > /dev/null; then
  sections="--section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section MemoryWorkloadAnalysis"
  timeout 150 ncu --clock-control none --kernel-name prism_intersect --launch-skip 1 --launch-count 1 $sections \
    $G/bin/gpu_bench --scenes $S --parts trace --sets bunny.diffuse --repeats 1 > "$OUT/ncu_intersect.txt" 2>&1
  echo "ncu intersect: exit $?"
  timeout 150 ncu --clock-control none --kernel-name prism_render_path --launch-skip 1 --launch-count 1 $sections \
    $G/bin/gpu_bench --parts rtiow --frames 1 > "$OUT/ncu_path.txt" 2>&1
  echo "ncu path: exit $?"
  grep -E "Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Local Memory|L1/TEX Hit|L2 Hit|Block Limit" "$OUT/ncu_intersect.txt" "$OUT/ncu_path.txt" | sed 's/  */ /g'
fi
echo "---- bench ----"
grep -E "^== |rtiow 1280|whitted19 8192|\.diffuse:|\.primary:" "$OUT/bench.log" | cut -c1-230
sed -n '/^Mrays\/s of the trace kernels/,$p' "$OUT/bench.log"
