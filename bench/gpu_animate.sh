#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (no Rust needed), from the repository root: the
# frame-budget figures of both GPU backends. Staged here first: a release `prism`
# in .gpu/city/prism (and the commit in .gpu/city/commit), the shared scenes in
# .gpu/cuda/scenes.tar.xz, the Vulkan loader debs in .gl/. Runs `prism animate`
# (fractional AO knobs) at 1920x1080 over 100 frames with budgets of 8 and 16 ms:
# cuda on ogre, crowd (456k triangles) and instances, wgpu on ogre and crowd,
# each with the default feedback (rate 0.25, fixed clamp) and the fixed-settings
# baseline; then feedback variants without the baseline on cuda ogre and crowd
# at 8 ms (rate 0.5, rate 1, rate 1 with the adaptive clamp). Each backend
# calibrates once (cached in $PRISM_CACHE_DIR, measured afresh by its first run
# with --recalibrate). Prints a table: per backend, scene, budget and feedback,
# the four goal figures (mean |measured-target|/target, worst frame, mean
# |corrected prediction-measured|/measured, pre-pass share of the budget;
# frames 4..100) for the tuned run and the fixed-settings baseline. Logs, CSVs
# and plots go to $OUT. About 4.5 minutes on an H200. CLOCK=device (default
# wall) has every run hold the frames' device time to the budget
# (`prism animate --clock`).
set -uo pipefail
OUT=${OUT:-/tmp/prism-animate-out}
mkdir -p "$OUT"
C=.gpu/city
S=/tmp/prism-scenes
mkdir -p $S
tar -C $S -xJf .gpu/cuda/scenes.tar.xz
. bench/gpu_env.sh
export PRISM_SCENES=$S PRISM_CACHE_DIR=/tmp/prism-kernel-cache
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $OUT/device.txt
[ -f $C/commit ] && echo "commit $(cat $C/commit)" | tee -a $OUT/device.txt
P=$C/prism
# One run: backend scene budget feedback-rate clamp [more flags]; its log is
# $OUT/<backend>_<scene>_<budget>ms_r<rate>_<clamp>.txt.
RUNS=()
run() {
  local be=$1 scene=$2 budget=$3 rate=$4 clamp=$5
  shift 5
  local d=$OUT/${be}_${scene}_${budget}ms_r${rate}_${clamp}
  timeout 120 $P animate --backend $be --scene $scene --width 1920 --height 1080 \
    --frames 100 --budget-ms $budget --feedback-rate $rate --feedback-clamp $clamp --clock ${CLOCK:-wall} \
    --out $d "$@" > $d.txt 2>&1
  echo "animate $be $scene ${budget} ms rate $rate $clamp: exit $?"
  RUNS+=("$be $scene $budget $rate $clamp")
}
start=$SECONDS
for be in cuda wgpu; do
  first=--recalibrate
  scenes="ogre crowd instances"
  [ $be = wgpu ] && scenes="ogre crowd"
  for scene in $scenes; do
    for budget in 8 16; do
      run $be $scene $budget 0.25 fixed $first
      first=
    done
  done
done
for scene in ogre crowd; do
  [ $scene = ogre ] && run cuda $scene 8 0.5 fixed --no-baseline
  run cuda $scene 8 1 fixed --no-baseline
  run cuda $scene 8 1 adaptive --no-baseline
done
echo "runs took $((SECONDS - start)) s"
echo "==== calibrations ===="
grep -h "^calibration" $OUT/*_ogre_8ms_r0.25_fixed.txt
echo "==== frame budgets (frames 4..100; goals: 2%, 5%, 1%, 5%) ===="
printf "%-6s %-10s %6s %-14s %-6s %11s %17s %12s %10s\n" backend scene budget "rate/clamp" run "mean |err|" "worst @frame" "pred. err" pre-pass
for r in "${RUNS[@]}"; do
  read -r be scene budget rate clamp <<< "$r"
  f=$OUT/${be}_${scene}_${budget}ms_r${rate}_${clamp}.txt
  grep -E "^(tuned|fixed) " "$f" 2>/dev/null | while read -r run mean worst frame pred pre; do
    printf "%-6s %-10s %4s ms %-14s %-6s %11s %10s %6s %12s %10s\n" $be $scene $budget "r$rate/$clamp" $run $mean $worst "$frame" $pred $pre
  done
  grep -h "unreachable" "$f" 2>/dev/null | sed "s/^/  $be $scene $budget ms: /"
done
