//! The columns of a [`Heightfield`] as explicit faces and triangles: the
//! reference its walk is held to, and the triangle version of a height map
//! that benchmarks and scenes trace beside it.

use super::{FACE_BOTTOM, FACE_NEG_X, FACE_NEG_Z, FACE_POS_X, FACE_POS_Z, FACE_TOP, Heightfield};
use alloc::vec::Vec;
use glam::Vec3;

impl Heightfield {
    /// The columns as explicit faces, quads of four corners in order (two
    /// triangles each: corners 0, 1, 2 and 0, 2, 3), with outward winding
    /// (counter-clockwise seen from outside).
    ///
    /// `FaceSet::All`: all six faces of every column above 0, each column's
    /// box whole: what the walk is held to. `FaceSet::Visible`: only what can
    /// be seen from outside the columns: a side against a neighbour at least
    /// as tall is left out, one against a lower neighbour keeps only its part
    /// above that neighbour, and tops and bottoms stay (the same surface, as
    /// seen from outside, in fewer and smaller faces: a fair triangle version
    /// of the heightfield).
    pub fn column_faces(&self, set: FaceSet) -> Vec<ColumnFace> {
        let mut out = Vec::new();
        let h = |x: i64, z: i64| -> f32 {
            if x < 0 || z < 0 {
                return 0.0;
            }
            self.height(x as u32, z as u32).unwrap_or(0.0)
        };
        for z in 0..self.depth {
            for x in 0..self.width {
                let top = h(x as i64, z as i64);
                if top <= 0.0 {
                    continue;
                }
                let cell = z * self.width + x;
                let (x0, x1) = (self.plane(x), self.plane(x + 1));
                let (z0, z1) = (self.plane(z), self.plane(z + 1));
                let mut push = |face: u32, corners: [Vec3; 4]| {
                    out.push(ColumnFace {
                        cell,
                        face,
                        corners,
                    })
                };
                let v = Vec3::new;
                push(
                    FACE_TOP,
                    [
                        v(x0, top, z0),
                        v(x0, top, z1),
                        v(x1, top, z1),
                        v(x1, top, z0),
                    ],
                );
                push(
                    FACE_BOTTOM,
                    [
                        v(x0, 0.0, z0),
                        v(x1, 0.0, z0),
                        v(x1, 0.0, z1),
                        v(x0, 0.0, z1),
                    ],
                );
                let (xi, zi) = (x as i64, z as i64);
                let sides = [
                    (FACE_NEG_X, h(xi - 1, zi)),
                    (FACE_POS_X, h(xi + 1, zi)),
                    (FACE_NEG_Z, h(xi, zi - 1)),
                    (FACE_POS_Z, h(xi, zi + 1)),
                ];
                for (face, neighbour) in sides {
                    let lo = match set {
                        FaceSet::All => 0.0,
                        FaceSet::Visible if neighbour >= top => continue,
                        FaceSet::Visible => neighbour,
                    };
                    let corners = match face {
                        FACE_NEG_X => {
                            [v(x0, lo, z0), v(x0, lo, z1), v(x0, top, z1), v(x0, top, z0)]
                        }
                        FACE_POS_X => {
                            [v(x1, lo, z0), v(x1, top, z0), v(x1, top, z1), v(x1, lo, z1)]
                        }
                        FACE_NEG_Z => {
                            [v(x0, lo, z0), v(x0, top, z0), v(x1, top, z0), v(x1, lo, z0)]
                        }
                        _ => [v(x0, lo, z1), v(x1, lo, z1), v(x1, top, z1), v(x0, top, z1)],
                    };
                    push(face, corners);
                }
            }
        }
        out
    }

    /// The faces [`Heightfield::column_faces`] gives for `set` as a triangle
    /// mesh, two triangles a face (corners 0, 1, 2 and 0, 2, 3), without the
    /// bottoms unless `bottoms`: they face the ground plane `y = 0`, which no
    /// ray from above reaches through a column.
    pub fn column_mesh(&self, set: FaceSet, bottoms: bool) -> ColumnMesh {
        let faces = self.column_faces(set);
        let faces = faces.iter().filter(|f| bottoms || f.face != FACE_BOTTOM);
        let mut mesh = ColumnMesh::default();
        for f in faces {
            let q = mesh.positions.len() as u32;
            mesh.positions.extend_from_slice(&f.corners);
            mesh.triangles.push([q, q + 1, q + 2]);
            mesh.triangles.push([q, q + 2, q + 3]);
            mesh.names.push((f.cell, f.face));
            mesh.names.push((f.cell, f.face));
        }
        mesh
    }
}

/// Which faces [`Heightfield::column_faces`] gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaceSet {
    /// Every face of every column above 0.
    All,
    /// The faces that can be seen from outside the columns, trimmed to the
    /// part above a lower neighbour.
    Visible,
}

/// One face of a column ([`Heightfield::column_faces`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColumnFace {
    /// The cell, `z * width + x`.
    pub cell: u32,
    /// Which face ([`FACE_TOP`] and the others).
    pub face: u32,
    /// Its corners, counter-clockwise seen from outside.
    pub corners: [Vec3; 4],
}

/// A heightfield's columns as triangles ([`Heightfield::column_mesh`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ColumnMesh {
    /// Four corners a face, in [`ColumnFace::corners`]' order.
    pub positions: Vec<Vec3>,
    /// Three indices into `positions` a triangle, two triangles a face.
    pub triangles: Vec<[u32; 3]>,
    /// The `(cell, face)` each triangle belongs to, by triangle index: the
    /// walk's answer for a ray that meets it.
    pub names: Vec<(u32, u32)>,
}
