#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (no Rust needed), from the repository root: the
# frame-budget figures of both GPU backends. Staged here first: a release `prism`
# in .gpu/city/prism (and the commit in .gpu/city/commit), the shared scenes in
# .gpu/cuda/scenes.tar.xz, the Vulkan loader debs in .gl/. Runs `prism animate`
# at 1920x1080 over 100 frames with budgets of 8 and 16 ms on cuda and wgpu, for
# the scenes ogre, crowd (456k triangles) and instances; each calibrates once per
# backend (cached in $PRISM_CACHE_DIR, measured afresh by the first run with
# --recalibrate). Prints a table: per backend, scene and budget, the four goal
# figures (mean |measured-target|/target, worst frame, mean |corrected
# prediction-measured|/measured, pre-pass share of the budget; frames 4..100)
# for the tuned run and the fixed-settings baseline. Logs, CSVs and plots go
# to $OUT. About 3 minutes on an H100/H200.
set -uo pipefail
OUT=${OUT:-/tmp/prism-animate-out}
mkdir -p "$OUT"
C=.gpu/city
S=/tmp/prism-scenes
mkdir -p $S
tar -C $S -xJf .gpu/cuda/scenes.tar.xz
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -z "${VK_DRIVER_FILES:-}" ] && [ -f $icd ] && export VK_DRIVER_FILES=$icd
export PRISM_SCENES=$S PRISM_CACHE_DIR=/tmp/prism-kernel-cache
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $OUT/device.txt
[ -f $C/commit ] && echo "commit $(cat $C/commit)" | tee -a $OUT/device.txt
P=$C/prism
for be in cuda wgpu; do
  first=--recalibrate
  for scene in ogre crowd instances; do
    for budget in 8 16; do
      d=$OUT/${be}_${scene}_${budget}ms
      timeout 120 $P animate --backend $be --scene $scene --width 1920 --height 1080 \
        --frames 100 --budget-ms $budget --out $d $first > $d.txt 2>&1
      echo "animate $be $scene ${budget} ms: exit $?"
      first=
    done
  done
done
echo "==== calibrations ===="
grep -h "^calibration" $OUT/*_ogre_8ms.txt
echo "==== frame budgets (frames 4..100; goals: 2%, 5%, 1%, 5%) ===="
printf "%-6s %-10s %6s %-6s %11s %17s %12s %10s\n" backend scene budget run "mean |err|" "worst @frame" "pred. err" pre-pass
for be in cuda wgpu; do
  for scene in ogre crowd instances; do
    for budget in 8 16; do
      f=$OUT/${be}_${scene}_${budget}ms.txt
      grep -E "^(tuned|fixed) " "$f" 2>/dev/null | while read -r run mean worst frame pred pre; do
        printf "%-6s %-10s %4s ms %-6s %11s %10s %6s %12s %10s\n" $be $scene $budget $run $mean $worst "$frame" $pred $pre
      done
      grep -h "unreachable" "$f" 2>/dev/null | sed "s/^/  $be $scene $budget ms: /"
    done
  done
done
