#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (no Rust needed), from the repository root: the
# path kernels without the sun's code, the frame-budget tuner and the WGSL cell
# grid in one run. Staged first in .gpu/city: `prism` (release, cuda and wgpu),
# `gpu_bench` (backend-cuda's example) and `cuda_gpu` (backend-cuda's tests/gpu.rs,
# release), and `commit`; the shared scenes in .gpu/cuda/scenes.tar.xz; the Vulkan
# loader debs in .gl/. Runs:
#   1. gpu_bench's rtiow frame with the default (persistent) path kernels and with
#      tile-path: the same pixels (image hashes) and each one's time,
#   2. the CUDA test of the path kernels with the sun against core,
#   3. rtiow, whitted19 and cornell through `prism bench` on cuda and wgpu (the
#      wgpu frames walk the cell grid where core's cost model picks it),
#   4. bench/gpu_animate.sh (the frame budgets of both backends).
# Logs go to $OUT; short tables come last.
set -uo pipefail
OUT=${OUT:-/tmp/prism-gpu-out}
mkdir -p "$OUT"
C=.gpu/city
S=/tmp/prism-scenes
mkdir -p $S
tar -C $S -xJf .gpu/cuda/scenes.tar.xz
. bench/gpu_env.sh
export PRISM_SCENES=$S PRISM_CACHE_DIR=/tmp/prism-kernel-cache
export PRISM_REQUIRE_CUDA=1 PRISM_REQUIRE_SCENES=1
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $OUT/device.txt
echo "commit $(cat $C/commit)" | tee -a $OUT/device.txt
timeout 200 $C/gpu_bench --parts rtiow --frames 15 --config default,tile-path --out /tmp > $OUT/rtiow_variants.txt 2>&1
echo "gpu_bench rtiow default, tile-path: exit $?"
timeout 60 $C/cuda_gpu --exact path_kernels_with_the_sun_match_core --nocapture > $OUT/sun_test.txt 2>&1
echo "cuda sun test: exit $?"
for scene in rtiow whitted19 cornell; do
  for be in cuda wgpu; do
    timeout 40 $C/prism bench --scene $scene --backend $be --runs 9 > $OUT/bench_${scene}_$be.txt 2>&1
    echo "bench $scene $be: exit $?"
  done
done
OUT=$OUT/animate timeout 260 bash bench/gpu_animate.sh > $OUT/animate.txt 2>&1
echo "animate: exit $?"
echo "==== rtiow, default against tile-path ===="
grep -E "^\| (config|default|tile-path)" $OUT/rtiow_variants.txt | cut -d'|' -f2,4,5,10,11
echo "==== sun test ===="
grep -E "test result|panicked|sunlit" $OUT/sun_test.txt | head -6
echo "==== prism bench (trace ms) ===="
for f in $OUT/bench_*.txt; do echo "-- $(basename $f .txt)"; grep -E "^\||rror" $f | tail -2; done
echo "==== frame budgets ===="
sed -n '/==== calibrations/,$p' $OUT/animate.txt
