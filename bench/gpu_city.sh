#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (no Rust needed), from the repository root: the
# heightfield and sun figures of both GPU backends in one run. Staged here first
# in .gpu/city: `prism` (release, stripped), the CUDA test binaries `cuda_gpu` and
# `cuda_gpu_heightfield`, the wgpu test binary `wgpu_heightfield`, city512.png, and
# rec.tar.xz (bounce0/1 .rays and .hits of `prism render --scene city --spp 1
# --record DIR`); the shared scenes in .gpu/cuda/scenes.tar.xz; the Vulkan loader
# debs in .gl/. Runs:
#   1. the CUDA tests (every GPU test; heightfields against core) and the wgpu
#      heightfield tests on the NVIDIA adapter,
#   2. the city's recorded primary and bounce-1 rays replayed on CUDA and wgpu,
#      4M rays a call, heightfield against the same columns as triangles,
#   3. the city frame (500x500, 64 spp, depth 50, the sun sampled) on both, and
#      rtiow on CUDA (the path integrator's speed with the sun code in it),
#   4. `prism conformance --quick` on cpu, cuda and wgpu.
# Logs go to $OUT; the table comes last.
set -uo pipefail
OUT=${OUT:-/tmp/prism-gpu-out}
mkdir -p "$OUT"
C=.gpu/city
S=/tmp/prism-scenes
mkdir -p $S /tmp/rec
tar -C $S -xJf .gpu/cuda/scenes.tar.xz
tar -C /tmp/rec -xJf $C/rec.tar.xz
. bench/gpu_env.sh
export PRISM_SCENES=$S PRISM_CITY_MAP=$C/city512.png PRISM_CACHE_DIR=/tmp/prism-kernel-cache
export PRISM_REQUIRE_CUDA=1 PRISM_REQUIRE_WGPU=1 PRISM_REQUIRE_SCENES=1 PROPTEST_RNG_SEED=20261126
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $OUT/device.txt
echo "commit $(cat $C/commit)" | tee -a $OUT/device.txt
P=$C/prism
timeout 240 $C/cuda_gpu_heightfield > $OUT/cuda_heightfield.txt 2>&1; echo "cuda heightfield tests: exit $?"
timeout 120 $C/wgpu_heightfield > $OUT/wgpu_heightfield.txt 2>&1; echo "wgpu heightfield tests: exit $?"
timeout 300 $C/cuda_gpu > $OUT/cuda_gpu.txt 2>&1; echo "cuda gpu tests: exit $?"
for be in cuda wgpu; do
  for b in 0 1; do
    timeout 120 $P bench --backend $be --scene city --rays /tmp/rec/bounce$b.rays --hits /tmp/rec/bounce$b.hits \
      --batch 4194304 --runs 9 > $OUT/city_${be}_b$b.txt 2>&1; echo "city $be bounce$b: exit $?"
    timeout 180 $P bench --backend $be --scene city-triangles --rays /tmp/rec/bounce$b.rays \
      --batch 4194304 --runs 9 > $OUT/tris_${be}_b$b.txt 2>&1; echo "city-triangles $be bounce$b: exit $?"
  done
  timeout 180 $P bench --backend $be --scene city --runs 5 > $OUT/frame_city_$be.txt 2>&1; echo "city frame $be: exit $?"
  timeout 120 $P bench --backend $be --scene city --runs 5 --no-sun-nee > $OUT/frame_city_nonee_$be.txt 2>&1; echo "city frame no NEE $be: exit $?"
done
timeout 120 $P bench --backend cuda --scene rtiow --runs 7 > $OUT/frame_rtiow_cuda.txt 2>&1; echo "rtiow frame cuda: exit $?"
timeout 120 $P render --backend cuda --scene city --out $OUT/city_cuda.png > $OUT/render_city.txt 2>&1; echo "city render: exit $?"
timeout 400 $P conformance --backends cpu,cuda,wgpu --quick --out $OUT/conformance > $OUT/conformance.txt 2>&1; echo "conformance: exit $?"
echo "==== tests ===="
grep -hE "test result|panicked|FAILED" $OUT/cuda_heightfield.txt $OUT/wgpu_heightfield.txt $OUT/cuda_gpu.txt | head -20
echo "==== replays ===="
cat $OUT/city_*.txt $OUT/tris_*.txt | grep -E "^bench|agreement|rror"
echo "==== frames ===="
cat $OUT/frame_*.txt | grep -vE "^\s*$" | tail -40
echo "==== conformance ===="
tail -5 $OUT/conformance.txt
