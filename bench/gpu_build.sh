#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (no Rust needed), from the repository root:
# the fast tree built on the device by CUDA against the host's SAH tree.
# Staged first in .gpu/gpubuild: `prism` (release, --no-default-features
# --features cuda), the CUDA test binary `cuda_fast_build`
# (backend-cuda/tests/gpu_fast_build.rs), the example `fast_build_bench`
# (backend-cuda/examples/fast_build_bench.rs) and `commit`; the shared scenes in
# .gpu/cuda/scenes.tar.xz. Builds nothing. Runs:
#   1. the device-build tests: the device's tree equal to core's (slots, nodes,
#      primitive records) on random meshes, bunny and ogre; bunny's and ogre's
#      ray sets traced on the device-built tree against Embree's hits and
#      core's walk of the same tree,
#   2. fast_build_bench: the device build's kernels alone (median of 20), each
#      tree's set_scene build step, and closest and any hit on 4M-ray
#      resident batches of the four sets on each tree,
#   3. `prism bench --build fast` on the four shared ray sets: the host's SAH
#      tree and the device-built fast tree, build ms (median of 20; the fast
#      tree's is the device's, CUDA events), SAH cost, closest and occluded
#      Mrays/s on the same rays, and the ratios.
# Logs go to $OUT; the tables come last.
set -uo pipefail
OUT=${OUT:-/tmp/prism-gpu-out}
mkdir -p "$OUT"
G=.gpu/gpubuild
S=/tmp/prism-scenes
mkdir -p $S
tar -C $S -xJf .gpu/cuda/scenes.tar.xz
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export PRISM_SCENES=$S PRISM_CACHE_DIR=/tmp/prism-kernel-cache
export PRISM_REQUIRE_CUDA=1 PRISM_REQUIRE_SCENES=1 PROPTEST_RNG_SEED=20261126
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $OUT/device.txt
echo "commit $(cat $G/commit 2>/dev/null)" | tee -a $OUT/device.txt
timeout 150 $G/cuda_fast_build --nocapture --test-threads 1 > $OUT/cuda_fast_build.txt 2>&1
echo "device build tests: exit $?"
timeout 90 $G/fast_build_bench > $OUT/fast_build_bench.txt 2>&1
echo "fast_build_bench: exit $?"
for m in bunny ogre; do
  for r in primary diffuse; do
    timeout 25 $G/prism bench --backend cuda --mesh $S/$m.obj --rays $S/$m.$r.rays --hits $S/$m.$r.hits \
      --build fast --runs 20 > $OUT/bench_${m}_$r.txt 2>&1
    echo "bench $m.$r: exit $?"
  done
done
echo "==== tests ===="
grep -hE "test result|panicked|same tree|vs Embree|^test " $OUT/cuda_fast_build.txt | head -30
echo "==== device build, resident batches ===="
cat $OUT/fast_build_bench.txt
echo "==== trees (build ms: median of 20; fast = device build) ===="
for f in $OUT/bench_*.txt; do
  echo "-- $(basename $f .txt)"
  grep -E "^\||agreement|rror" $f
done
