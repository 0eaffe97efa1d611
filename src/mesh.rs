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
///
/// The extension and the kind of file are checked before anything is read, so
/// an unknown format, a directory or a FIFO / device (`/dev/zero`, which would
/// never end) is refused at once with an error naming the path.
pub fn load_mesh(path: impl AsRef<Path>) -> Result<Mesh, Error> {
    type Parse = fn(&[u8], &str) -> Result<Mesh, Error>;
    let path = path.as_ref();
    let name = path.display().to_string();
    let parse: Parse = match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("obj") => parse_obj,
        Some("ply") => parse_ply,
        _ => {
            return Err(Error::Parse {
                path: name,
                line: None,
                message: "unknown mesh format: expected .obj or .ply".into(),
            });
        }
    };
    let io = |message: String| Error::Io {
        path: name.clone(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| io(e.to_string()))?;
    if !meta.is_file() {
        return Err(io("not a regular file".into()));
    }
    let bytes = std::fs::read(path).map_err(|e| io(e.to_string()))?;
    parse(&bytes, &name)
}

/// Parse OBJ text. `name` is used in error messages.
///
/// Only positions and faces count: texture coordinates, normals and
/// parameter-space vertices (`vt`, `vn`, `vp`) and the texture and normal
/// indices of faces (`f 1/2/3`) are ignored, as the numbering rule of the
/// reference hits says, so a file whose texture or normal data is broken or
/// missing still loads by its positions.
///
/// While parsing, tobj keeps about 100 bytes for every face line (some 13 times
/// the size of a file of triangles, at most 26 times for one-vertex faces); the
/// mesh it returns takes 12 bytes a vertex and 12 a triangle.
pub fn parse_obj(bytes: &[u8], name: &str) -> Result<Mesh, Error> {
    let options = tobj::LoadOptions {
        triangulate: true,
        single_index: false,
        ignore_points: true,
        ignore_lines: true,
    };
    let text = positions_only(bytes);
    let bytes = text.as_slice();
    prescan_obj(bytes, name)?;
    let (models, _materials) = guarded(name, "OBJ", || {
        let mut reader = std::io::BufReader::new(bytes);
        tobj::load_obj_buf(&mut reader, &options, |_| {
            Err(tobj::LoadError::OpenFileFailed)
        })
        .map_err(|e| Error::Parse {
            path: name.into(),
            line: None,
            message: format!("malformed OBJ: {e}"),
        })
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
                // ok: chunks of exactly 3.
                .map(|p| Vec3::new(p[0], p[1], p[2])),
        );
        for tri in m.indices.chunks_exact(3) {
            let mut t = [0u32; 3];
            for (k, &i) in tri.iter().enumerate() {
                // ok: `tri` is a chunk of exactly 3.
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
///
/// Items are read straight into small typed records (a vertex is 16 bytes, a
/// face its index list), and every other element into a record of no size, so
/// the memory a file takes is a small multiple of its own size whatever its
/// header declares.
pub fn parse_ply(bytes: &[u8], name: &str) -> Result<Mesh, Error> {
    use ply_rs_bw::parser::{Parser, Reader};
    use ply_rs_bw::ply::Property;
    let bad = |message: String| Error::Parse {
        path: name.into(),
        line: None,
        message,
    };
    prescan_ply(bytes, name)?;
    let (vertices, faces) = guarded(name, "PLY", || {
        let malformed = |e: ply_rs_bw::parser::ParseError| bad(format!("malformed PLY: {e}"));
        let mut reader = Reader::new(std::io::BufReader::new(bytes));
        let vertex_parser = Parser::<PlyVertex>::new();
        let face_parser = Parser::<PlyFace>::new();
        let skip_parser = Parser::<PlySkip>::new();
        let header = vertex_parser.read_header(&mut reader).map_err(malformed)?;
        let (mut vertices, mut faces) = (Vec::new(), Vec::new());
        for element in header.elements.values() {
            match element.name.as_str() {
                "vertex" => {
                    vertices = vertex_parser
                        .read_payload_for_element(&mut reader, element, &header)
                        .map_err(malformed)?;
                }
                "face" => {
                    faces = face_parser
                        .read_payload_for_element(&mut reader, element, &header)
                        .map_err(malformed)?;
                }
                _ => {
                    // Read past it; a record of no size takes no memory.
                    skip_parser
                        .read_payload_for_element(&mut reader, element, &header)
                        .map_err(malformed)?;
                }
            }
        }
        Ok((vertices, faces))
    })?;
    let mut mesh = Mesh::default();
    mesh.positions.reserve_exact(vertices.len());
    for (i, v) in vertices.iter().enumerate() {
        if let Some(k) = (0..3).find(|&k| v.set & (1 << k) == 0) {
            // ok: `k` < 3.
            let axis = ["x", "y", "z"][k];
            return Err(bad(format!("vertex {i}: missing or non-numeric '{axis}'")));
        }
        mesh.positions.push(Vec3::from(v.xyz));
    }
    drop(vertices);
    for (f, face) in faces.iter().enumerate() {
        let idx: Vec<i64> = match &face.indices {
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
        let n = mesh.positions.len();
        let to_u32 = |x: i64| {
            u32::try_from(x)
                .ok()
                .filter(|&i| (i as usize) < n)
                .ok_or_else(|| {
                    bad(format!(
                        "face {f}: vertex index {x} out of range ({n} vertices)"
                    ))
                })
        };
        // ok: `idx` has at least 3 entries (checked above).
        let v0 = to_u32(idx[0])?;
        for w in idx[1..].windows(2) {
            mesh.triangles.push([v0, to_u32(w[0])?, to_u32(w[1])?]);
        }
    }
    check_mesh(&mesh, name)?;
    Ok(mesh)
}

/// A PLY `vertex` item: its `x`, `y`, `z` (bit `k` of `set` says axis `k` was
/// given as a number). Other properties (normals, colours) are not kept.
struct PlyVertex {
    xyz: [f32; 3],
    set: u8,
}

impl ply_rs_bw::ply::PropertyAccess for PlyVertex {
    fn new() -> Self {
        PlyVertex {
            xyz: [0.0; 3],
            set: 0,
        }
    }

    fn set_property(
        &mut self,
        name: &str,
        property: ply_rs_bw::ply::Property,
    ) -> ply_rs_bw::ply::PropertyAccessResult {
        use ply_rs_bw::ply::{Property, PropertyAccessResult};
        let Some(k) = ["x", "y", "z"].iter().position(|&a| a == name) else {
            return PropertyAccessResult::Ignored;
        };
        // Through f64, exact for every PLY scalar, then rounded once to f32.
        let value = match property {
            Property::Float(v) => v as f64,
            Property::Double(v) => v,
            Property::Char(v) => v as f64,
            Property::UChar(v) => v as f64,
            Property::Short(v) => v as f64,
            Property::UShort(v) => v as f64,
            Property::Int(v) => v as f64,
            Property::UInt(v) => v as f64,
            // A list where a coordinate belongs: reported as non-numeric.
            _ => return PropertyAccessResult::Ignored,
        };
        // ok: `k` < 3 (a position in a 3-array).
        self.xyz[k] = value as f32;
        self.set |= 1 << k;
        PropertyAccessResult::Set
    }
}

/// A PLY `face` item: its `vertex_indices` list (`vertex_index` when that is
/// the only one given), as read.
struct PlyFace {
    indices: Option<ply_rs_bw::ply::Property>,
    /// Whether `indices` came from `vertex_indices`, which wins over `vertex_index`.
    preferred: bool,
}

impl ply_rs_bw::ply::PropertyAccess for PlyFace {
    fn new() -> Self {
        PlyFace {
            indices: None,
            preferred: false,
        }
    }

    fn set_property(
        &mut self,
        name: &str,
        property: ply_rs_bw::ply::Property,
    ) -> ply_rs_bw::ply::PropertyAccessResult {
        use ply_rs_bw::ply::PropertyAccessResult;
        match name {
            "vertex_indices" => {
                self.indices = Some(property);
                self.preferred = true;
                PropertyAccessResult::Set
            }
            "vertex_index" if !self.preferred => {
                self.indices = Some(property);
                PropertyAccessResult::Set
            }
            _ => PropertyAccessResult::Ignored,
        }
    }
}

/// An item of any other element, read and dropped.
struct PlySkip;

impl ply_rs_bw::ply::PropertyAccess for PlySkip {
    fn new() -> Self {
        PlySkip
    }
}

/// Every index in range and at least one triangle; a failure is
/// [`Error::Parse`] naming the file. (The parsers refuse out-of-range indices
/// themselves, naming the line or face; this is the backstop.)
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
            return Err(Error::Parse {
                path: name.into(),
                line: None,
                message: format!("triangle {t}: vertex index {i} out of range ({n} vertices)"),
            });
        }
    }
    Ok(())
}

/// Run a third-party parser, turning a panic inside it into [`Error::Parse`].
///
/// tobj and ply-rs-bw read well-formed files correctly but do not promise never
/// to panic on hostile bytes (tobj, for one, multiplies face indices without
/// overflow checks). The cases known to panic, hang or exhaust memory are refused
/// before parsing by [`prescan_obj`] and [`prescan_ply`]; this guard is the
/// backstop for any case still unknown, so that a bad file is an error and never
/// unwinds into the host. (A host built with `panic = "abort"` cannot catch a
/// panic at all; there, the prescans are the protection.)
fn guarded<T>(
    name: &str,
    format: &str,
    parse: impl FnOnce() -> Result<T, Error>,
) -> Result<T, Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(parse)).unwrap_or_else(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown failure".into());
        Err(Error::Parse {
            path: name.into(),
            line: None,
            message: format!("malformed {format}: the parser failed ({what})"),
        })
    })
}

/// Largest face index magnitude accepted in an OBJ file: Prism indexes vertices
/// with `u32`, and tobj computes `3 * index` and `2 * index` unchecked, which this
/// bound keeps far from overflow.
const OBJ_MAX_INDEX: i64 = u32::MAX as i64;

/// The OBJ text as tobj should see it: `vt`, `vn` and `vp` lines emptied and
/// each index of an `f` or `l` line cut to its vertex part (`7/3/2` to `7`),
/// every line kept in place so that line numbers stay the file's. A line that
/// is not UTF-8 is kept as it is, for tobj to refuse; so is an index with no
/// vertex part (`/3`), which stays malformed.
fn positions_only(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let Ok(text) = std::str::from_utf8(line) else {
            out.extend_from_slice(line);
            continue;
        };
        let mut words = text.split_whitespace();
        match words.next() {
            Some("vt" | "vn" | "vp") => {}
            Some(keyword @ ("f" | "l")) => {
                out.extend_from_slice(keyword.as_bytes());
                for word in words {
                    let vertex = word.split('/').next().unwrap_or_default();
                    out.push(b' ');
                    let kept = if vertex.is_empty() { word } else { vertex };
                    out.extend_from_slice(kept.as_bytes());
                }
            }
            _ => {
                out.extend_from_slice(line);
                continue;
            }
        }
        if line.ends_with(b"\n") {
            out.push(b'\n');
        }
    }
    out
}

/// Refuse OBJ face indices that tobj would mishandle, naming the line: absolute
/// indices beyond [`OBJ_MAX_INDEX`], and relative (negative) indices that reach
/// before the first `v` line (tobj turns those into huge `usize` values and
/// overflows on them). Runs on [`positions_only`]'s text, where faces hold
/// vertex indices alone. Anything else is left to tobj.
fn prescan_obj(bytes: &[u8], name: &str) -> Result<(), Error> {
    use std::io::BufRead;
    // `v` lines so far.
    let mut defined = 0i64;
    for (n, line) in std::io::BufReader::new(bytes).lines().enumerate() {
        // tobj stops with an error at the same unreadable line.
        let Ok(line) = line else { break };
        let mut words = line.split_whitespace();
        match words.next() {
            Some("v") => defined += 1,
            Some("f") | Some("l") => {
                for word in words {
                    // Unparsable indices are tobj's to report.
                    let Ok(x) = word.parse::<i64>() else { continue };
                    if x > OBJ_MAX_INDEX || (x < 0 && x.unsigned_abs() > defined as u64) {
                        return Err(Error::Parse {
                            path: name.into(),
                            line: Some(n + 1),
                            message: format!(
                                "vertex index {x} out of range ({defined} defined so far)"
                            ),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Refuse PLY headers that declare more items than the file can hold: every
/// element must fit in the bytes after `end_header` (each item takes at least
/// one byte, a newline in ASCII or a property in binary). ply-rs-bw would
/// otherwise loop over the declared count, and a binary element without
/// properties reads nothing per item, so `element e 4000000000` made it spin and
/// allocate without end. Malformed headers are left to ply-rs-bw to report.
fn prescan_ply(bytes: &[u8], name: &str) -> Result<(), Error> {
    let mut offset = 0usize;
    let mut declared: Vec<(usize, String, u64)> = Vec::new();
    for (n, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
        offset += line.len();
        let text = String::from_utf8_lossy(line);
        let mut words = text.split_whitespace();
        match words.next() {
            Some("element") => {
                let element = words.next().unwrap_or_default().to_string();
                if let Some(Ok(count)) = words.next().map(str::parse::<u64>) {
                    declared.push((n + 1, element, count));
                }
            }
            Some("end_header") => {
                let payload = (bytes.len() - offset) as u64;
                let mut total = 0u64;
                for (line, element, count) in declared {
                    total = total.saturating_add(count);
                    if total > payload {
                        return Err(Error::Parse {
                            path: name.into(),
                            line: Some(line),
                            message: format!(
                                "element '{element}' declares {count} items, more than the {payload} bytes after the header can hold"
                            ),
                        });
                    }
                }
                return Ok(());
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_parser_becomes_a_parse_error() {
        let r: Result<(), Error> = guarded("x.obj", "OBJ", || panic!("index overflow"));
        match r {
            Err(Error::Parse { path, message, .. }) => {
                assert_eq!(path, "x.obj");
                assert!(message.contains("index overflow"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(guarded("x.obj", "OBJ", || Ok(7)), Ok(7));
    }

    #[test]
    fn obj_indices_tobj_would_overflow_on_are_refused_by_line() {
        // Each of these makes tobj 4.0.5 panic on arithmetic overflow (debug
        // builds) when it multiplies the index: relative indices before the
        // first vertex, and absolute ones near `isize::MAX`.
        for (src, line) in [
            ("v 0 0 0\nv 1 0 0\nv 0 1 0\nvn 0 0 1\nf 1 -99 3\n", 5),
            ("v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nf 1/1 -5/1 3/1\n", 5),
            (
                "v 0 0 0\nv 1 0 0\nv 0 1 0\nvn 0 0 1\n# c\nf 1//1 9223372036854775807//1 3//1\n",
                6,
            ),
        ] {
            match parse_obj(src.as_bytes(), "x.obj") {
                Err(Error::Parse { line: Some(l), .. }) => assert_eq!(l, line, "{src}"),
                other => panic!("{src}: {other:?}"),
            }
        }
    }

    #[test]
    fn obj_texture_and_normal_data_is_ignored() {
        // Broken or missing texture and normal data: out-of-range and
        // relative indices, a one-value `vt` (valid OBJ, which tobj 4.0.5
        // refuses), normal indices with no `vn` line. The reference numbering
        // ignores them all, so each loads as the plain file does.
        let plain = parse_obj(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nf 1 2 3 4\n", "p.obj")
            .expect("plain quad"); // ok: test, a valid file
        assert_eq!(plain.triangles, [[0, 1, 2], [0, 2, 3]]);
        for src in [
            "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvt 0 0\nf 1/9 2/9 3/9 4/9\n",
            "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvt 0.5\nf 1 2 3 4\n",
            "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvn 0 0 1\nf 1//7 2//7 3//7 4//7\n",
            "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nf 1//-99 2//1 3/-5/2 4/1/1\r\n",
            "v 0 0 0\nvt 0 0 0\nv 1 0 0\nvp 0.5\nv 0 1 0\nvn 0 0 1\nv 1 1 0\nf 1/1/1 2/1/1 3/1/1 4/1/1",
        ] {
            assert_eq!(
                parse_obj(src.as_bytes(), "t.obj").as_ref(),
                Ok(&plain),
                "{src:?}"
            );
        }
        // Line numbers stay the file's: the bad vertex index is on line 4.
        match parse_obj(b"vt 0 0\nv 0 0 0\nvn 0 0 1\nf 1/1 -2/1 1/1\n", "t.obj") {
            Err(Error::Parse { line: Some(4), .. }) => {}
            other => panic!("{other:?}"),
        }
        // An index with no vertex part is still malformed.
        assert!(parse_obj(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf /1 2 3\n", "t.obj").is_err());
    }

    #[test]
    fn ply_items_read_into_vertices_and_fan_triangles() {
        // ASCII: integer and float coordinates, extra vertex properties (a
        // list among them), an element of another name before the faces,
        // and both index list names (`vertex_indices` wins).
        let ascii = b"ply\nformat ascii 1.0\nelement vertex 4\nproperty int x\nproperty float y\nproperty list uchar float extra\nproperty double z\nelement edge 2\nproperty int a\nproperty list uchar int b\nelement face 2\nproperty list uchar uint vertex_index\nproperty list uchar int vertex_indices\nend_header\n0 0 2 7 7 0\n1 0 0 0\n1 1.5 1 9 0\n0 1 0 -2.25\n5 2 0 1\n6 0\n3 3 2 1 3 0 1 2\n0 4 0 1 2 3\n";
        let mesh = parse_ply(ascii, "a.ply").expect("valid ASCII PLY"); // ok: test, a valid file
        assert_eq!(
            mesh.positions,
            [
                Vec3::new(0.0, 0.0, 0.0),
                Vec3::new(1.0, 0.0, 0.0),
                Vec3::new(1.0, 1.5, 0.0),
                Vec3::new(0.0, 1.0, -2.25)
            ]
        );
        assert_eq!(mesh.triangles, [[0, 1, 2], [0, 1, 2], [0, 2, 3]]);

        // Binary big-endian: double coordinates rounded once to f32, a colour,
        // ushort-counted uint lists under `vertex_index` alone.
        let mut be = b"ply\nformat binary_big_endian 1.0\nelement vertex 3\nproperty double x\nproperty double y\nproperty double z\nproperty uchar red\nelement face 1\nproperty list ushort uint vertex_index\nend_header\n".to_vec();
        for (p, red) in [
            ([0.1f64, 0.0, 0.0], 1u8),
            ([1.0, 2.0, 3.0], 2),
            ([-1.0, 0.5, 1e-3], 3),
        ] {
            for c in p {
                be.extend_from_slice(&c.to_be_bytes());
            }
            be.push(red);
        }
        be.extend_from_slice(&3u16.to_be_bytes());
        for i in [2u32, 0, 1] {
            be.extend_from_slice(&i.to_be_bytes());
        }
        let mesh = parse_ply(&be, "b.ply").expect("valid binary PLY"); // ok: test, a valid file
        assert_eq!(
            mesh.positions,
            [
                Vec3::new(0.1f64 as f32, 0.0, 0.0),
                Vec3::new(1.0, 2.0, 3.0),
                Vec3::new(-1.0, 0.5, 1e-3f64 as f32)
            ]
        );
        assert_eq!(mesh.triangles, [[2, 0, 1]]);
    }

    #[test]
    fn ply_vertices_and_faces_without_their_properties_are_named() {
        let no_z = b"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n0 0\n1 0\n0 1\n3 0 1 2\n";
        let list_y = b"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty list uchar float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n0 1 0 0\n1 1 0 0\n0 1 1 0\n3 0 1 2\n";
        let float_list = b"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nelement face 1\nproperty list uchar float vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n";
        let two = b"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n2 0 1\n";
        let far = b"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 -1\n";
        for (ply, expected) in [
            (&no_z[..], "vertex 0: missing or non-numeric 'z'"),
            (&list_y[..], "vertex 0: missing or non-numeric 'y'"),
            (
                &float_list[..],
                "face 0: missing integer 'vertex_indices' list",
            ),
            (&two[..], "face 0: 2 vertices, need at least 3"),
            (
                &far[..],
                "face 0: vertex index -1 out of range (3 vertices)",
            ),
        ] {
            match parse_ply(ply, "x.ply") {
                Err(Error::Parse { message, .. }) => assert_eq!(message, expected),
                other => panic!("{expected}: {other:?}"),
            }
        }
    }

    #[test]
    fn ply_counts_past_the_file_are_refused() {
        let ply = b"ply\nformat binary_little_endian 1.0\nelement nothing 4000000000\nend_header\n";
        match parse_ply(ply, "x.ply") {
            Err(Error::Parse {
                line: Some(3),
                message,
                ..
            }) => assert!(message.contains("'nothing'"), "{message}"),
            other => panic!("{other:?}"),
        }
    }
}
