#!/usr/bin/env bash
# On the GPU machine, from the repository root, with .gpu/cuda staged by
# prepare_gpu.sh: the CPU-only compile test, the GPU tests (core and Embree
# agreement, renders, errors, fault recovery, cache; two-level scenes,
# updates, the device refit), the benchmark (the default kernel
# configuration: rtiow, whitted19, the trace kernels, bunny-x1000, a moving
# frame of 10,000 instances, ogre's refit on the device), the SASS of the
# default kernels and an Nsight Compute look at the hottest kernels. Logs go to
# $OUT; tables last. Some 4 to 5 minutes on an H100 with SKIP_NCU=1.
#   BENCH_ARGS  arguments of gpu_bench (default: none; --sweep runs every
#               kernel configuration, which takes far longer)
#   TWO_LEVEL_CONFIGS  configurations whose two-level trace kernels are
#               measured after the benchmark (gpu_bench --config list; "" for
#               none)
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
export PRISM_SCENES=$S PRISM_REQUIRE_SCENES=1 PRISM_CACHE_DIR=/tmp/prism-kernel-cache
echo "commit $(cat $G/commit 2>/dev/null) $(cat $G/dirty 2>/dev/null | tr '\n' ' ') date $(date -u +%F)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout 120 $G/bin/compile --nocapture > "$OUT/tests.log" 2>&1; echo "compile test: exit $?"
  timeout ${TEST_TIMEOUT:-300} $G/bin/gpu --test-threads 6 --nocapture >> "$OUT/tests.log" 2>&1; echo "gpu tests: exit $?"
  timeout ${TEST_TIMEOUT:-300} $G/bin/gpu_instances --test-threads 4 --nocapture > "$OUT/tests_two_level.log" 2>&1
  echo "gpu two-level tests: exit $?"
  grep -hE "^test |test result|panicked|SKIPPED" "$OUT/tests.log" "$OUT/tests_two_level.log"
  grep -hE "vs Embree|rays gpu|fault reported|differ from core|refit .* on the device" "$OUT/tests.log" "$OUT/tests_two_level.log" | head -60
fi
timeout ${BENCH_TIMEOUT:-300} $G/bin/gpu_bench --scenes $S --out "$OUT" ${BENCH_ARGS:-} > "$OUT/bench.log" 2>&1
bench_rc=$?
echo "bench: exit $bench_rc"
# The two-level trace kernels under a few other build choices, one
# compilation each (some 30 s on the H100 machine): register bounds of 8
# blocks an SM and the flat kernels' one, and lane refill at 24 idle lanes.
configs=${TWO_LEVEL_CONFIGS-"default,-DPRISM_INSTANCE_TRACE_MIN_BLOCKS=8,-DPRISM_INSTANCE_TRACE_MIN_BLOCKS=1,refill24"}
if [ -n "$configs" ]; then
  timeout ${BENCH_TIMEOUT:-300} $G/bin/gpu_bench --scenes $S --parts instances --repeats 10 --config "$configs" \
    > "$OUT/bench_two_level.log" 2>&1
  echo "two-level configurations: exit $?"
fi
if [ "${SASS:-0}" = 1 ] && [ -f "$OUT/prism_default.cubin" ] && command -v cuobjdump > /dev/null; then
  cuobjdump -sass "$OUT/prism_default.cubin" > "$OUT/sass.txt" 2>&1
  # Instructions, local loads/stores and global loads per kernel.
  awk '/Function :/ {f=$3} /\/\*[0-9a-f]+\*\// && f {n[f]++; if ($0 ~ /LDL/) l[f]++; if ($0 ~ /STL/) s[f]++; if ($0 ~ /LDG/) g[f]++}
       END {for (k in n) printf "sass %-22s %6d instr %4d LDL %4d STL %4d LDG\n", k, n[k], l[k], s[k], g[k]}' "$OUT/sass.txt"
fi
if [ "${SKIP_NCU:-0}" != 1 ] && command -v ncu > /dev/null; then
  # Per-kernel summaries and, where this ncu can print it, the executed count and
  # stalls of every SASS instruction of the render kernels.
  #   NCU_RUNS    "kernel|gpu_bench arguments;..."   NCU_CONFIG  a gpu_bench --config name
  sections="--section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section InstructionStats"
  runs=${NCU_RUNS:-"prism_render_path_spheres|--parts rtiow --frames 1;prism_render_whitted_spheres|--parts whitted --frames 1;prism_intersect_triangles|--parts trace --sets bunny.diffuse --repeats 1;prism_intersect_instances_triangles|--parts instances --repeats 1"}
  extra=""; [ -n "${NCU_CONFIG:-}" ] && extra="--config $NCU_CONFIG"
  IFS=';' read -ra list <<< "$runs"
  for k in "${list[@]}"; do
    name=${k%%|*}; args=${k#*|}
    timeout 150 ncu --clock-control none --kernel-name "$name" --launch-skip 1 --launch-count 1 $sections \
      --section SourceCounters -o /tmp/ncu_$name $G/bin/gpu_bench --scenes $S $args $extra > /tmp/ncu_$name.log 2>&1
    echo "ncu $name: exit $?"
    ncu -i /tmp/ncu_$name.ncu-rep --page details >> "$OUT/ncu.txt" 2>&1
    case $name in prism_render*)
      ncu -i /tmp/ncu_$name.ncu-rep --page source --csv --print-source sass > "$OUT/$name.sass.csv" 2>&1 || echo "no source page";;
    esac
  done
  grep -E "prism_|Duration|Registers Per|Achieved Occupancy|Compute \(SM\) Throughput|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Avg. Active Threads|Executed Instructions  " "$OUT/ncu.txt" | sed 's/  */ /g'
fi
rm -f "$OUT/prism_default.cubin"
echo "---- bench ----"
grep -E "^== |rtiow 1280|whitted19 8192|\.diffuse:|\.primary:|moving frame|refit ogre|mismatch at ray" "$OUT/bench.log" | cut -c1-300
sed -n '/^Mrays\/s of the trace kernels/,$p' "$OUT/bench.log"
if [ -f "$OUT/bench_two_level.log" ]; then
  echo
  echo "Two-level trace kernels by configuration (Mrays/s closest / any, 4M resident rays):"
  echo "| config | bunny-x1000.diffuse | bunny-x1000.primary | regs (intersect_instances_triangles) |"
  echo "|---|---|---|---|"
  awk '/^== / {name=$2; sub(":", "", name)}
       / prism_intersect_instances_triangles / {regs[name]=$2}
       /bunny-x1000\.diffuse: / {match($0, /= [0-9]+ Mrays\/s/); c=substr($0, RSTART+2, RLENGTH-10); match($0, /occluded [0-9.]+ ms = [0-9]+/); o=substr($0, RSTART, RLENGTH); sub(/.*= /, "", o); d[name]=c " / " o; order[++n]=name}
       /bunny-x1000\.primary: / {match($0, /= [0-9]+ Mrays\/s/); c=substr($0, RSTART+2, RLENGTH-10); match($0, /occluded [0-9.]+ ms = [0-9]+/); o=substr($0, RSTART, RLENGTH); sub(/.*= /, "", o); p[name]=c " / " o}
       END {for (i = 1; i <= n; i++) {k=order[i]; printf "| %s | %s | %s | %s |\n", k, d[k], p[k], regs[k]}}' "$OUT/bench_two_level.log"
fi
# What ran, in one table.
result() { grep -h "^test result" "$1" 2>/dev/null | sed -E 's/.* ([0-9]+) passed; ([0-9]+) failed.*/\1 passed, \2 failed;/' | paste -sd' ' -; }
echo
echo "| check | result |"
echo "|---|---|"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  echo "| compile test, then gpu tests (gpu.rs) | $(result "$OUT/tests.log") |"
  echo "| two-level gpu tests (gpu_instances.rs) | $(result "$OUT/tests_two_level.log") |"
fi
echo "| gpu_bench | exit $bench_rc |"
