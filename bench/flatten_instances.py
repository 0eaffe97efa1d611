#!/usr/bin/env python3
"""Flatten an instanced set into one OBJ: every placement's vertices (row-major
3x4 object-to-world transforms, 12 f32 each, the shared scenes' .instances
format), then every placement's faces, so triangle k of placement i is number
i * triangles + k. Used by bench/cpu_large_mesh.sh and bench/gpu_large_mesh.sh
to make a mesh of millions of triangles that is never committed.

Usage: flatten_instances.py MESH.obj FILE.instances OUT.obj
"""
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
