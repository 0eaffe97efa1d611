//! Meshes generated in code, for the built-in scenes: indexed triangle lists
//! (positions and vertex-index triples, counter-clockwise from outside).

use glam::Vec3;

/// An indexed triangle mesh.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IndexedMesh {
    /// Vertex positions.
    pub positions: Vec<Vec3>,
    /// Triangles as vertex indices.
    pub triangles: Vec<[u32; 3]>,
}

/// A unit sphere as an icosahedron subdivided `levels` times (20 * 4^levels
/// triangles), its vertices pushed out to radius `1 + bumps(p)`.
pub fn icosphere(levels: u32, bumps: impl Fn(Vec3) -> f32) -> IndexedMesh {
    let t = (1.0 + 5f32.sqrt()) / 2.0;
    let mut positions: Vec<Vec3> = [
        (-1.0, t, 0.0),
        (1.0, t, 0.0),
        (-1.0, -t, 0.0),
        (1.0, -t, 0.0),
        (0.0, -1.0, t),
        (0.0, 1.0, t),
        (0.0, -1.0, -t),
        (0.0, 1.0, -t),
        (t, 0.0, -1.0),
        (t, 0.0, 1.0),
        (-t, 0.0, -1.0),
        (-t, 0.0, 1.0),
    ]
    .iter()
    .map(|&(x, y, z)| Vec3::new(x, y, z).normalize())
    .collect();
    let mut triangles: Vec<[u32; 3]> = vec![
        [0, 11, 5],
        [0, 5, 1],
        [0, 1, 7],
        [0, 7, 10],
        [0, 10, 11],
        [1, 5, 9],
        [5, 11, 4],
        [11, 10, 2],
        [10, 7, 6],
        [7, 1, 8],
        [3, 9, 4],
        [3, 4, 2],
        [3, 2, 6],
        [3, 6, 8],
        [3, 8, 9],
        [4, 9, 5],
        [2, 4, 11],
        [6, 2, 10],
        [8, 6, 7],
        [9, 8, 1],
    ];
    for _ in 0..levels {
        let mut midpoints = std::collections::HashMap::new();
        let mut mid = |a: u32, b: u32, positions: &mut Vec<Vec3>| -> u32 {
            *midpoints.entry((a.min(b), a.max(b))).or_insert_with(|| {
                positions.push(((positions[a as usize] + positions[b as usize]) * 0.5).normalize());
                positions.len() as u32 - 1
            })
        };
        let mut next = Vec::with_capacity(triangles.len() * 4);
        for [a, b, c] in triangles {
            let (ab, bc, ca) = (
                mid(a, b, &mut positions),
                mid(b, c, &mut positions),
                mid(c, a, &mut positions),
            );
            next.extend([[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]);
        }
        triangles = next;
    }
    for p in &mut positions {
        *p *= 1.0 + bumps(*p);
    }
    IndexedMesh {
        positions,
        triangles,
    }
}

/// A torus around +y: tube radius `minor` around a circle of radius `major`,
/// `rings` segments around the circle and `sides` around the tube.
pub fn torus(major: f32, minor: f32, rings: u32, sides: u32) -> IndexedMesh {
    let mut positions = Vec::with_capacity((rings * sides) as usize);
    for i in 0..rings {
        let u = i as f32 / rings as f32 * std::f32::consts::TAU;
        for j in 0..sides {
            let v = j as f32 / sides as f32 * std::f32::consts::TAU;
            let r = major + minor * v.cos();
            positions.push(Vec3::new(r * u.cos(), minor * v.sin(), r * u.sin()));
        }
    }
    let at = |i: u32, j: u32| (i % rings) * sides + (j % sides);
    let mut triangles = Vec::with_capacity((2 * rings * sides) as usize);
    for i in 0..rings {
        for j in 0..sides {
            let (a, b, c, d) = (at(i, j), at(i + 1, j), at(i + 1, j + 1), at(i, j + 1));
            triangles.push([a, c, b]);
            triangles.push([a, d, c]);
        }
    }
    IndexedMesh {
        positions,
        triangles,
    }
}

/// A stylised tree standing on the origin: a trunk (a `sides`-sided prism of
/// radius 0.1, height 0.6) under three stacked cones, 2 units tall in all.
pub fn tree(sides: u32) -> IndexedMesh {
    let mut mesh = IndexedMesh::default();
    let ring = |mesh: &mut IndexedMesh, y: f32, r: f32| -> u32 {
        let first = mesh.positions.len() as u32;
        for k in 0..sides {
            let a = k as f32 / sides as f32 * std::f32::consts::TAU;
            mesh.positions.push(Vec3::new(r * a.cos(), y, r * a.sin()));
        }
        first
    };
    // Trunk: two rings joined by quads.
    let (lo, hi) = (ring(&mut mesh, 0.0, 0.1), ring(&mut mesh, 0.6, 0.1));
    for k in 0..sides {
        let n = (k + 1) % sides;
        mesh.triangles.push([lo + k, hi + n, lo + n]);
        mesh.triangles.push([lo + k, hi + k, hi + n]);
    }
    // Three cones, each a ring and an apex, with a closing base fan.
    for (base, top, r) in [
        (0.5f32, 1.3f32, 0.7f32),
        (0.95, 1.7, 0.55),
        (1.35, 2.0, 0.4),
    ] {
        let first = ring(&mut mesh, base, r);
        mesh.positions.push(Vec3::new(0.0, top, 0.0));
        let apex = mesh.positions.len() as u32 - 1;
        mesh.positions.push(Vec3::new(0.0, base, 0.0));
        let centre = mesh.positions.len() as u32 - 1;
        for k in 0..sides {
            let n = (k + 1) % sides;
            mesh.triangles.push([first + k, apex, first + n]);
            mesh.triangles.push([first + k, first + n, centre]);
        }
    }
    mesh
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every mesh is closed and consistently wound: each edge is used once in
    /// each direction, so no ray leaks through and normals face out.
    #[test]
    fn meshes_are_closed_and_wound_alike() {
        for (name, mesh) in [
            ("icosphere", icosphere(2, |_| 0.0)),
            ("torus", torus(1.0, 0.3, 24, 12)),
        ] {
            let mut edges = std::collections::HashMap::new();
            for t in &mesh.triangles {
                for k in 0..3 {
                    *edges.entry((t[k], t[(k + 1) % 3])).or_insert(0) += 1;
                }
            }
            for (&(a, b), &n) in &edges {
                assert_eq!(n, 1, "{name}: edge {a}-{b} used {n} times");
                assert_eq!(
                    edges.get(&(b, a)),
                    Some(&1),
                    "{name}: edge {a}-{b} has no twin"
                );
            }
            assert!(
                mesh.triangles
                    .iter()
                    .flatten()
                    .all(|&i| (i as usize) < mesh.positions.len())
            );
        }
        assert_eq!(icosphere(2, |_| 0.0).triangles.len(), 320);
        let tree = tree(8);
        assert_eq!(tree.triangles.len(), 8 * 2 + 3 * 8 * 2);
        let top = tree.positions.iter().map(|p| p.y).fold(0.0, f32::max);
        assert_eq!(top, 2.0);
    }
}
