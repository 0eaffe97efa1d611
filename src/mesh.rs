//! Mesh files: OBJ (tobj) and PLY (ply-rs-bw) to an indexed triangle list.
//!
//! Triangles are numbered in file order and faces with more than three vertices
//! are fan-triangulated, `(v0, vi, vi+1)`: the rule of `shared/scenes/README.md`,
//! so primitive ids match the reference hits computed with it.

use crate::Error;
use glam::Vec3;
use std::path::Path;

/// An indexed triangle mesh.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mesh {
    /// Vertex positions.
    pub positions: Vec<Vec3>,
    /// Triangles as indices into `positions`, in file order.
    pub triangles: Vec<[u32; 3]>,
}

impl Mesh {
    /// Bounds of the vertices used by triangles.
    pub fn bounds(&self) -> prism_core::Aabb {
        self.triangles
            .iter()
            .flatten()
            .filter_map(|&i| self.positions.get(i as usize))
            .fold(prism_core::Aabb::EMPTY, |b, &p| b.grow(p))
    }
}

/// Load an `.obj` or `.ply` file (chosen by extension).
pub fn load_mesh(path: impl AsRef<Path>) -> Result<Mesh, Error> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Error::Io {
        path: name.clone(),
        message: e.to_string(),
    })?;
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("obj") => parse_obj(&bytes, &name),
        Some("ply") => parse_ply(&bytes, &name),
        _ => Err(Error::Parse {
            path: name,
            line: None,
            message: "unknown mesh format: expected .obj or .ply".into(),
        }),
    }
}

/// Parse OBJ text. `name` is used in error messages.
pub fn parse_obj(bytes: &[u8], name: &str) -> Result<Mesh, Error> {
    let options = tobj::LoadOptions {
        triangulate: true,
        single_index: false,
        ignore_points: true,
        ignore_lines: true,
    };
    let mut reader = std::io::BufReader::new(bytes);
    let (models, _materials) = tobj::load_obj_buf(&mut reader, &options, |_| {
        Err(tobj::LoadError::OpenFileFailed)
    })
    .map_err(|e| Error::Parse {
        path: name.into(),
        line: None,
        message: format!("malformed OBJ: {e}"),
    })?;
    let mut mesh = Mesh::default();
    for model in models {
        let m = model.mesh;
        let base = mesh.positions.len();
        if m.positions.len() % 3 != 0 || m.indices.len() % 3 != 0 {
            return Err(Error::Parse {
                path: name.into(),
                line: None,
                message: "malformed OBJ: ragged vertex or face data".into(),
            });
        }
        mesh.positions.extend(
            m.positions
                .chunks_exact(3)
                .map(|p| Vec3::new(p[0], p[1], p[2])),
        );
        for tri in m.indices.chunks_exact(3) {
            let mut t = [0u32; 3];
            for (k, &i) in tri.iter().enumerate() {
                t[k] = u32::try_from(base + i as usize).map_err(|_| Error::Parse {
                    path: name.into(),
                    line: None,
                    message: "more than 2^32 vertices".into(),
                })?;
            }
            mesh.triangles.push(t);
        }
    }
    check_mesh(&mesh, name)?;
    Ok(mesh)
}

/// Parse a PLY file (ASCII or binary): `vertex` elements with `x y z`, `face`
/// elements with a `vertex_indices` (or `vertex_index`) list.
pub fn parse_ply(bytes: &[u8], name: &str) -> Result<Mesh, Error> {
    use ply_rs_bw::parser::Parser;
    use ply_rs_bw::ply::{DefaultElement, Property};
    let bad = |message: String| Error::Parse {
        path: name.into(),
        line: None,
        message,
    };
    let parser = Parser::<DefaultElement>::new();
    let mut reader = std::io::BufReader::new(bytes);
    let ply = parser
        .read_ply(&mut reader)
        .map_err(|e| bad(format!("malformed PLY: {e}")))?;
    let scalar = |p: Option<&Property>| -> Option<f64> {
        Some(match p? {
            Property::Float(v) => *v as f64,
            Property::Double(v) => *v,
            Property::Char(v) => *v as f64,
            Property::UChar(v) => *v as f64,
            Property::Short(v) => *v as f64,
            Property::UShort(v) => *v as f64,
            Property::Int(v) => *v as f64,
            Property::UInt(v) => *v as f64,
            _ => return None,
        })
    };
    let mut mesh = Mesh::default();
    for (i, v) in ply
        .payload
        .get("vertex")
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let c = |k: &str| {
            scalar(v.get(k)).ok_or_else(|| bad(format!("vertex {i}: missing or non-numeric '{k}'")))
        };
        mesh.positions
            .push(Vec3::new(c("x")? as f32, c("y")? as f32, c("z")? as f32));
    }
    for (f, face) in ply
        .payload
        .get("face")
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let list = face
            .get("vertex_indices")
            .or_else(|| face.get("vertex_index"));
        let idx: Vec<i64> = match list {
            Some(Property::ListChar(l)) => l.iter().map(|&x| x as i64).collect(),
            Some(Property::ListUChar(l)) => l.iter().map(|&x| x as i64).collect(),
            Some(Property::ListShort(l)) => l.iter().map(|&x| x as i64).collect(),
            Some(Property::ListUShort(l)) => l.iter().map(|&x| x as i64).collect(),
            Some(Property::ListInt(l)) => l.iter().map(|&x| x as i64).collect(),
            Some(Property::ListUInt(l)) => l.iter().map(|&x| x as i64).collect(),
            _ => {
                return Err(bad(format!(
                    "face {f}: missing integer 'vertex_indices' list"
                )));
            }
        };
        if idx.len() < 3 {
            return Err(bad(format!(
                "face {f}: {} vertices, need at least 3",
                idx.len()
            )));
        }
        let to_u32 = |x: i64| {
            u32::try_from(x).map_err(|_| bad(format!("face {f}: vertex index {x} out of range")))
        };
        let v0 = to_u32(idx[0])?;
        for w in idx[1..].windows(2) {
            mesh.triangles.push([v0, to_u32(w[0])?, to_u32(w[1])?]);
        }
    }
    check_mesh(&mesh, name)?;
    Ok(mesh)
}

/// Every index in range and at least one triangle.
fn check_mesh(mesh: &Mesh, name: &str) -> Result<(), Error> {
    if mesh.triangles.is_empty() {
        return Err(Error::Parse {
            path: name.into(),
            line: None,
            message: "no triangles".into(),
        });
    }
    let n = mesh.positions.len();
    for (t, tri) in mesh.triangles.iter().enumerate() {
        if let Some(&i) = tri.iter().find(|&&i| i as usize >= n) {
            return Err(Error::IndexOutOfRange {
                mesh: 0,
                triangle: t,
                index: i,
                vertex_count: n,
            });
        }
    }
    Ok(())
}
