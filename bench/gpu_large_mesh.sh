#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (no Rust needed), from the repository root: a mesh of
# millions of triangles on the GPU backends, the same OBJ and rays as bench/cpu_large_mesh.sh.
# Staged first, where Rust is: `prism` (release, features cuda and wgpu) in $STAGE (default
# .gpu/large) and $STAGE/large.tar.xz holding what cpu_large_mesh.sh made in its $WORK:
# bunny80.instances and flat80.{primary,diffuse}.{rays,hits} (Embree's hits on the flattened
# mesh); the shared scenes in .gpu/cuda/scenes.tar.xz (bunny.obj); the Vulkan loader debs in
# .gl/. The OBJ itself (254 MB) is made here by bench/flatten_instances.py, under /tmp.
# For each backend and ray set: `prism bench --backend B --mesh ... --rays ... --hits ...
# --build fast --runs 5` (the host's SAH tree, built on every core, beside the fast tree the
# device builds); prints build ms, tree bytes a triangle, Mrays/s and agreement with Embree.
set -uo pipefail
OUT=${OUT:-/tmp/prism-gpu-out}
mkdir -p "$OUT"
C=${STAGE:-.gpu/large}
. bench/gpu_env.sh
S=/tmp/prism-scenes L=/tmp/prism-large
mkdir -p $S $L
tar -C $S -xJf .gpu/cuda/scenes.tar.xz
tar -C $L -xJf $C/large.tar.xz
export PRISM_CACHE_DIR=/tmp/prism-kernel-cache
[ -f $L/bunny80.obj ] || /usr/bin/time -f "flattened in %e s" python3 bench/flatten_instances.py \
  $S/bunny.obj $L/bunny80.instances $L/bunny80.obj
for be in ${BACKENDS:-cuda wgpu}; do
  for set in primary diffuse; do
    /usr/bin/time -f "peak host memory: %M KB, %e s" timeout 240 $C/prism bench --backend $be \
      --mesh $L/bunny80.obj --rays $L/flat80.$set.rays --hits $L/flat80.$set.hits --build fast \
      --runs ${RUNS:-5} > $OUT/large_${be}_$set.txt 2>&1
    echo "bench $be $set: exit $?"
  done
done
for f in $OUT/large_*.txt; do
  echo "-- $(basename $f .txt)"
  grep -E "^(bench|tree|agreement|peak)|^\||rror" $f | cut -c1-220
done
