#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (no Rust needed), from the repository root: the
# WGSL camera, reflection and shadow candidate masks (backend-wgpu/shaders/
# camera_masks.wgsl) against CUDA's. Staged first in .gpu/city: `prism` (release,
# features cuda and wgpu) and `commit`; the shared scenes in .gpu/cuda/scenes.tar.xz;
# the Vulkan loader debs in .gl/. Runs:
#   1. whitted19 (Whitted) and whitted19 with AO and shadows through `prism render` on
#      wgpu with masks and without (PRISM_WGPU_CAMERA_MASKS=0): the PNGs must be equal,
#   2. `prism bench --scene S --backend B --runs 9` for S in whitted19, cornell, rtiow
#      and B in cuda, wgpu, and wgpu without masks (only whitted19 takes them: cornell
#      and rtiow are path traced, whose kernels read no masks on either backend).
# Logs go to $OUT; a table of trace ms (median of 9) and wgpu / CUDA ratios comes last.
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

# 1. The same pixels with masks and without.
for kind in whitted ao; do
  args=(--scene whitted19 --backend wgpu --width 2048 --height 2048)
  [ $kind = ao ] && args+=(--integrator ao --ao-shadows --spp 4)
  timeout 60 $C/prism render "${args[@]}" --out $OUT/w19_${kind}_masks.png > $OUT/render_${kind}_masks.txt 2>&1
  PRISM_WGPU_CAMERA_MASKS=0 timeout 60 $C/prism render "${args[@]}" --out $OUT/w19_${kind}_tree.png > $OUT/render_${kind}_tree.txt 2>&1
  if cmp -s $OUT/w19_${kind}_masks.png $OUT/w19_${kind}_tree.png; then
    echo "whitted19 $kind 2048x2048 wgpu: masks and tree images equal" | tee -a $OUT/images.txt
  else
    echo "whitted19 $kind 2048x2048 wgpu: IMAGES DIFFER (or a render failed, see render_${kind}_*.txt)" | tee -a $OUT/images.txt
  fi
done

# 2. Trace times.
trace_ms() { grep -E '^\| [0-9]' "$1" | tail -1 | awk -F'|' '{gsub(/ /, "", $4); print $4}'; }
for scene in whitted19 cornell rtiow; do
  timeout 60 $C/prism bench --scene $scene --backend cuda --runs 9 > $OUT/bench_${scene}_cuda.txt 2>&1
  echo "bench $scene cuda: exit $?"
  timeout 60 $C/prism bench --scene $scene --backend wgpu --runs 9 > $OUT/bench_${scene}_wgpu.txt 2>&1
  echo "bench $scene wgpu: exit $?"
  PRISM_WGPU_CAMERA_MASKS=0 timeout 60 $C/prism bench --scene $scene --backend wgpu --runs 9 > $OUT/bench_${scene}_wgpu_nomask.txt 2>&1
  echo "bench $scene wgpu without masks: exit $?"
done

echo "==== images ===="
cat $OUT/images.txt
echo "==== prism bench, trace ms (median of 9) ===="
echo "| scene | CUDA | wgpu | wgpu / CUDA | wgpu without masks | its / CUDA |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for scene in whitted19 cornell rtiow; do
  c=$(trace_ms $OUT/bench_${scene}_cuda.txt)
  w=$(trace_ms $OUT/bench_${scene}_wgpu.txt)
  n=$(trace_ms $OUT/bench_${scene}_wgpu_nomask.txt)
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "?" }'; }
  echo "| $scene | ${c:-?} | ${w:-?} | $(ratio "$w" "$c") | ${n:-?} | $(ratio "$n" "$c") |"
done
for f in $OUT/bench_*.txt; do grep -qiE "rror|panick" $f && { echo "-- $(basename $f .txt):"; grep -iE "rror|panick" $f | head -3; }; done
exit 0
