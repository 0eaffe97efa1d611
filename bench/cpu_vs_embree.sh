#!/usr/bin/env bash
# CPU backend next to Embree 3 on the same rays, in the same run: every ray set
# of ../shared/scenes, closest hit and occlusion, 1 thread and all threads.
# Prints a markdown table (Mrays/s, medians) with the Prism/Embree ratios.
# Usage: bench/cpu_vs_embree.sh [RUNS]   (needs ../shared and a release build;
# PRISM_BIN=path picks another prism binary, e.g. one built with CARGO_TARGET_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-7}
scenes=../shared/scenes
if [ -n "${PRISM_BIN:-}" ]; then
  prism=$PRISM_BIN
  [ -x "$prism" ] || { echo "PRISM_BIN=$prism is not an executable" >&2; exit 1; }
else
  prism=target/release/prism
  [ -x "$prism" ] || cargo build --release -q
fi
embree=${EMBREE_BENCH:-/tmp/embree_bench}
[ -x "$embree" ] || ../shared/tools/embree-bench/build.sh "$embree" >/dev/null
threads_all=$(nproc)
echo "| set | threads | Embree build ms | Prism build ms | Embree closest | Prism closest | ratio | Embree occluded | Prism occluded | ratio |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for mesh in bunny ogre; do
  for set in primary diffuse; do
    for t in 1 "$threads_all"; do
      e=$("$embree" time "$scenes/$mesh.obj" "$scenes/$mesh.$set.rays" "$t" "$runs")
      p=$("$prism" bench --backend cpu --threads "$t" --mesh "$scenes/$mesh.obj" --rays "$scenes/$mesh.$set.rays" --runs "$runs" 2>/dev/null)
      eb=$(sed -E 's/.*build_ms=([0-9.]+).*/\1/' <<<"$e"); ec=$(sed -E 's/.*closest_mrays=([0-9.]+).*/\1/' <<<"$e"); eo=$(sed -E 's/.*occluded_mrays=([0-9.]+).*/\1/' <<<"$e")
      pb=$(sed -E 's/.*build ([0-9.]+) ms.*/\1/' <<<"$p"); pc=$(sed -E 's/.*closest ([0-9.]+) Mrays.*/\1/' <<<"$p"); po=$(sed -E 's/.*occluded ([0-9.]+) Mrays.*/\1/' <<<"$p")
      rc=$(python3 -c "print(f'{$pc/$ec:.2f}')"); ro=$(python3 -c "print(f'{$po/$eo:.2f}')")
      echo "| $mesh.$set | $t | $eb | $pb | $ec | $pc | $rc | $eo | $po | $ro |"
    done
  done
done
