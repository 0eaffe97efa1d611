#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (no Rust needed), from the repository root,
# with .gpu/ staged (wgpu_bench, CUDA gpu_bench, scenes) and the Vulkan loader
# debs in .gl/: the wgpu 4M-ray batch figures next to CUDA's, one ray set per
# process (in one process the host-side work between sets idles the GPU and its
# clock falls; see bench/RESULTS.md): one dispatch per batch with and without
# lane refill, and the default banded calls for the whole-call rate. Prints a
# table last. BIN and SCENES_TAR name other staged binaries and scenes.
set -uo pipefail
OUT=${OUT:-/tmp/prism-gpu-out}
mkdir -p "$OUT"
. bench/gpu_env.sh
B=${BIN:-.gpu/bin}
mkdir -p /tmp/prism-scenes-x && tar -C /tmp/prism-scenes-x -xJf ${SCENES_TAR:-.gpu/scenes.tar.xz}
S=$(dirname "$(find /tmp/prism-scenes-x -name bunny.obj | head -1)")
export PRISM_SCENES=$S PRISM_REQUIRE_SCENES=1 PRISM_CACHE_DIR=/tmp/prism-kernel-cache
timeout 240 $B/gpu_bench --scenes $S --out /tmp > "$OUT/cuda_bench.log" 2>&1
echo "cuda bench: exit $?"
for mesh in bunny ogre; do
  for set in diffuse primary; do
    d=/tmp/one-$mesh-$set; mkdir -p $d
    ln -sf $S/$mesh.obj $S/$mesh.$set.rays $S/$mesh.$set.hits $d/
    # One dispatch per batch (the kernel figure beside CUDA's on resident rays),
    # the same without lane refill, and the default (bands overlapping the
    # transfers: the whole-call figure).
    for mode in --no-overlap "--no-overlap --no-lane-refill" ""; do
      tag=$(echo "$mode" | tr -d ' ')
      timeout 60 $B/wgpu_bench --scenes $d --runs 5 --rays-only $mode > "$OUT/batch-$mesh-$set$tag.log" 2>&1
      echo "wgpu $mesh.$set $mode: exit $?"
      grep -h -E " batch " "$OUT/batch-$mesh-$set$tag.log" | sort -u | sed "s/^default/wgpu ${mode:-default}/" >> "$OUT/batch-table.txt"
    done
  done
done
echo "---- cuda ----"; grep -E "\.diffuse|\.primary|rtiow 1280|whitted19 8192" "$OUT/cuda_bench.log" | cut -c1-160 | head -12
echo "---- wgpu batches (one set per process) ----"
grep -h -E "vs Embree|FAIL" "$OUT"/batch-*.log | sort | uniq -c | cut -c1-200
cut -c1-200 "$OUT/batch-table.txt"
