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
  # Flatten: every placement's vertices (row-major 3x4 transforms, 12 f32 each), then every
  # placement's faces, so triangle k of placement i is number i * triangles + k.
  python3 - ../shared/scenes/bunny.obj "$work/bunny$count.instances" "$mesh" <<'PY'
import struct, sys
mesh, inst, out = sys.argv[1:4]
V, F = [], []
for line in open(mesh):
    if line.startswith('v '):
        V.append(tuple(float(x) for x in line.split()[1:4]))
    elif line.startswith('f '):
        idx = [int(w.split('/')[0]) for w in line.split()[1:]]
        idx = [len(V) + k if k < 0 else k - 1 for k in idx]
        F += [(idx[0], idx[i], idx[i + 1]) for i in range(1, len(idx) - 1)]
data = open(inst, 'rb').read()
n = len(data) // 48
with open(out, 'w') as o:
    for i in range(n):
        M = struct.unpack_from('12f', data, 48 * i)
        o.write(''.join('v %.9g %.9g %.9g\n' % (M[0]*x + M[1]*y + M[2]*z + M[3], M[4]*x + M[5]*y + M[6]*z + M[7],
                                               M[8]*x + M[9]*y + M[10]*z + M[11]) for (x, y, z) in V))
    for i in range(n):
        b = i * len(V) + 1
        o.write(''.join('f %d %d %d\n' % (a + b, c + b, d + b) for (a, c, d) in F))
PY
  "$embree" gen "$mesh" "$work/flat$count"
fi
for set in primary diffuse; do
  rays=$work/flat$count.$set.rays
  /usr/bin/time -f "prism peak memory: %M KB" "$prism" bench --backend cpu --threads 1 --mesh "$mesh" \
    --rays "$rays" --hits "$work/flat$count.$set.hits" --runs "$runs" 2>&1 | grep -E "^(bench|tree|agreement|prism peak)"
  /usr/bin/time -f "embree peak memory: %M KB" "$embree" time "$mesh" "$rays" 1 "$runs" 2>&1
done
