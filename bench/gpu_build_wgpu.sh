#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (no Rust needed), from the repository root:
# the fast tree built on the device by wgpu (shaders/fast_build.wgsl) beside
# CUDA's (kernels/fast_build.cuh), on bunny and ogre. Staged first in
# .gpu/city: `prism` (release, --features cuda,wgpu), optionally the wgpu test
# binary `wgpu_fast_build` (backend-wgpu/tests/fast_build.rs) and `commit`; the
# shared scenes in .gpu/cuda/scenes.tar.xz; the Vulkan loader debs in .gl/.
# Staging, where Rust is: `cargo build --release` (default features: cuda and
# wgpu), then `cargo test --release -p prism-rt-wgpu --test fast_build --no-run`
# and copy the newest target/release/deps/fast_build-* to .gpu/city/wgpu_fast_build.
# Builds nothing (STAGE names another staging folder than .gpu/city). Runs:
#   1. (if staged) the wgpu device-build tests on the NVIDIA adapter: the
#      device's tree equal to core's on random soups, edge sizes and bunny,
#      and bunny.diffuse traced on it equal to core's hits,
#   2. `prism bench --build fast --runs 20` on the four shared ray sets, on
#      cuda and on wgpu: the host's SAH tree against the device-built fast
#      tree (build ms: median of 20 after a warm-up; the fast tree's is the
#      device's, CUDA events / wgpu timestamp queries), SAH cost, closest and
#      occluded Mrays/s on the same rays, and the ratios; every run's hits
#      checked against Embree's.
# Logs go to $OUT; the tables come last, then wgpu's build ms over CUDA's.
set -uo pipefail
OUT=${OUT:-/tmp/prism-gpu-out}
mkdir -p "$OUT"
C=${STAGE:-.gpu/city}
S=/tmp/prism-scenes
mkdir -p $S
tar -C $S -xJf .gpu/cuda/scenes.tar.xz
. bench/gpu_env.sh
export PRISM_SCENES=$S PRISM_CACHE_DIR=/tmp/prism-kernel-cache
export PRISM_REQUIRE_CUDA=1 PRISM_REQUIRE_WGPU=1 PRISM_REQUIRE_SCENES=1 PROPTEST_RNG_SEED=20261126
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $OUT/device.txt
echo "commit $(cat $C/commit 2>/dev/null)" | tee -a $OUT/device.txt
if [ -x $C/wgpu_fast_build ]; then
  timeout 120 $C/wgpu_fast_build --nocapture --test-threads 1 > $OUT/wgpu_fast_build.txt 2>&1
  echo "wgpu device build tests: exit $?"
fi
for be in cuda wgpu; do
  for m in bunny ogre; do
    for r in primary diffuse; do
      timeout 150 $C/prism bench --backend $be --mesh $S/$m.obj --rays $S/$m.$r.rays --hits $S/$m.$r.hits \
        --build fast --runs 20 > $OUT/build_${be}_${m}_$r.txt 2>&1
      echo "bench $be $m.$r: exit $?"
    done
  done
done
echo "==== tests ===="
[ -f $OUT/wgpu_fast_build.txt ] && grep -hE "test result|panicked|^test |differ" $OUT/wgpu_fast_build.txt | head -20
echo "==== trees (build ms: median of 20; fast = device build) ===="
for f in $OUT/build_*.txt; do
  echo "-- $(basename $f .txt)"
  grep -E "^\||agreement|rror" $f
done
echo "==== device build ms, wgpu / CUDA (from the primary runs) ===="
fast_ms() { grep -E "^\| fast \|" "$OUT/build_$1_$2_primary.txt" | awk -F'|' '{gsub(/ /,"",$3); print $3}'; }
for m in bunny ogre; do
  c=$(fast_ms cuda $m); w=$(fast_ms wgpu $m)
  echo "$m: cuda $c ms, wgpu $w ms, ratio $(awk -v w="$w" -v c="$c" 'BEGIN { if (c > 0) printf "%.2f", w / c; else print "n/a" }')"
done
