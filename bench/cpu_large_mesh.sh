#!/usr/bin/env bash
# The CPU backend on a mesh of millions of triangles next to Embree 3, same OBJ and rays,
# one thread: COUNT placements of ../shared/scenes/bunny.obj (embree_bench inst-gen), flattened
# into one OBJ, with primary and diffuse ray sets and Embree's hits made for it (embree_bench
# gen). Everything it makes goes to $WORK (default /tmp/prism-large-mesh), never into the repo.
# Prints Prism's build ms, Mrays/s, agreement and tree bytes a triangle, Embree's build ms and
# Mrays/s, and each process's peak memory (GNU time).
# Usage: bench/cpu_large_mesh.sh [COUNT=80 (5.56M triangles)] [RUNS=3]
# PRISM_BIN=path picks the prism binary; EMBREE_BENCH=path the embree_bench binary.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-80}
runs=${2:-3}
work=${WORK:-/tmp/prism-large-mesh}
mkdir -p "$work"
prism=${PRISM_BIN:-target/release/prism}
[ -x "$prism" ] || cargo build --release -q --bin prism
embree=${EMBREE_BENCH:-/tmp/embree_bench}
[ -x "$embree" ] || ../shared/tools/embree-bench/build.sh "$embree" >/dev/null
mesh=$work/bunny$count.obj
if ! [ -f "$mesh" ]; then
  "$embree" inst-gen ../shared/scenes/bunny.obj "$count" 5 "$work/bunny$count" >/dev/null
  python3 bench/flatten_instances.py ../shared/scenes/bunny.obj "$work/bunny$count.instances" "$mesh"
  "$embree" gen "$mesh" "$work/flat$count"
fi
for set in primary diffuse; do
  rays=$work/flat$count.$set.rays
  /usr/bin/time -f "prism peak memory: %M KB" "$prism" bench --backend cpu --threads 1 --mesh "$mesh" \
    --rays "$rays" --hits "$work/flat$count.$set.hits" --runs "$runs" 2>&1 | grep -E "^(bench|tree|agreement|prism peak)"
  /usr/bin/time -f "embree peak memory: %M KB" "$embree" time "$mesh" "$rays" 1 "$runs" 2>&1
done
