//! Geometry: spheres, triangles and heightfields in structure-of-arrays form,
//! one BVH's worth.
//!
//! A [`Geometry`] is what one bottom-level tree is built over. A flat
//! [`crate::Scene`] holds one of its own (its loose primitives); a two-level
//! scene holds any number, each placed by [`crate::Instance`]s. Primitive ids
//! are given in insertion order across spheres, triangles and heightfields
//! (`add_sphere`, `add_triangle`, each triangle of `add_mesh` in order,
//! `add_heightfield`) and are what
//! [`crate::Hit::prim`] reports, so a geometry made of one OBJ file numbers its
//! triangles in file order, as the reference hits do.

use crate::error::Error;
use crate::heightfield::Heightfield;
use alloc::vec::Vec;
use glam::{Vec3, Vec4};

/// Most primitives one geometry (or flat scene) may hold: ids must fit in 31
/// bits, and the BVH's depth bound ([`crate::bvh`]) is proven for fewer than
/// `2^31` primitives.
pub const MAX_PRIMITIVES: usize = 1 << 30;

/// Where a primitive id points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrimRef {
    /// Index into the triangle arrays.
    Triangle(u32),
    /// Index into the sphere arrays.
    Sphere(u32),
    /// Index into the geometry's heightfields ([`Geometry::heightfields`]).
    Heightfield(u32),
}

/// The vertex buffer and triangles of a geometry made of exactly one indexed
/// mesh: what [`crate::SceneUpdate::set_vertices`] replaces and refits.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct MeshTopology {
    /// Vertex positions, as given.
    pub(crate) positions: Vec<Vec3>,
    /// Triangle `t` of the geometry is `indices[t]` (every index checked
    /// against `positions` when the mesh was added).
    pub(crate) indices: Vec<[u32; 3]>,
}

/// Reusable geometry: spheres, triangles and heightfields, with per-primitive
/// materials.
///
/// Built into one bottom-level BVH when a scene is built. Adding never fails
/// except in [`Geometry::add_mesh`], which checks its indices against its
/// vertices, its used vertices for being finite, and the primitive limit;
/// everything else is validated, with the offending primitive named, when the
/// scene is built.
///
/// ```
/// use prism_core::glam::Vec3;
/// use prism_core::Geometry;
///
/// // A unit quad as two triangles, material 0 of the scene it goes into.
/// let quad = Geometry::mesh(
///     &[Vec3::ZERO, Vec3::X, Vec3::new(1.0, 1.0, 0.0), Vec3::Y],
///     &[[0, 1, 2], [0, 2, 3]],
///     0,
/// )?;
/// assert_eq!(quad.triangle_count(), 2);
/// assert!(quad.is_mesh());
/// # Ok::<(), prism_core::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Geometry {
    /// Sphere centre (`xyz`) and radius (`w`).
    pub(crate) sphere_center_radius: Vec<Vec4>,
    /// Primitive id of each sphere.
    pub(crate) sphere_id: Vec<u32>,
    /// First vertex of each triangle. Vertices are gathered per triangle rather than
    /// indexed: the builder and the watertight test read all three at once.
    pub(crate) tri_v0: Vec<Vec3>,
    /// Second vertex of each triangle.
    pub(crate) tri_v1: Vec<Vec3>,
    /// Third vertex of each triangle.
    pub(crate) tri_v2: Vec<Vec3>,
    /// Primitive id of each triangle.
    pub(crate) tri_id: Vec<u32>,
    /// The heightfields ([`crate::heightfield`]), one primitive each.
    pub(crate) heightfields: Vec<Heightfield>,
    /// Material id of each primitive, by primitive id.
    pub(crate) prim_material: Vec<u32>,
    /// Where each primitive id's data lives.
    pub(crate) prim_ref: Vec<PrimRef>,
    /// Meshes added so far (for naming bad vertices and indices).
    mesh_count: usize,
    /// The indexed mesh, while the geometry is exactly one mesh added by
    /// [`Geometry::mesh`] or a first [`Geometry::add_mesh`] (its vertices can
    /// then be replaced and its tree refit).
    pub(crate) topology: Option<MeshTopology>,
}

/// The first index of `triangles` past `vertex_count` vertices, as the error
/// naming it (mesh 0: a mesh given alone, as to a device build).
pub fn check_triangle_indices(vertex_count: usize, triangles: &[[u32; 3]]) -> Result<(), Error> {
    for (t, tri) in triangles.iter().enumerate() {
        if let Some(&index) = tri.iter().find(|&&i| i as usize >= vertex_count) {
            return Err(Error::IndexOutOfRange {
                mesh: 0,
                triangle: t,
                index,
                vertex_count,
            });
        }
    }
    Ok(())
}

impl Geometry {
    /// An empty geometry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A geometry of one indexed mesh, every triangle of material `material`:
    /// the kind whose vertices [`crate::SceneUpdate::set_vertices`] can move.
    /// Fails as [`Geometry::add_mesh`] does.
    pub fn mesh(positions: &[Vec3], triangles: &[[u32; 3]], material: u32) -> Result<Self, Error> {
        let mut g = Self::new();
        g.add_mesh(positions, triangles, material)?;
        Ok(g)
    }

    /// Add a sphere; returns its primitive id.
    pub fn add_sphere(&mut self, center: Vec3, radius: f32, material: u32) -> u32 {
        self.topology = None;
        let id = self.prim_ref.len() as u32;
        self.prim_ref
            .push(PrimRef::Sphere(self.sphere_id.len() as u32));
        self.sphere_center_radius.push(center.extend(radius));
        self.sphere_id.push(id);
        self.prim_material.push(material);
        id
    }

    /// A geometry of one heightfield of material `material` (its primitive
    /// id is 0): terrain or a voxel city to place with instances.
    pub fn heightfield(heightfield: Heightfield, material: u32) -> Self {
        let mut g = Self::new();
        g.add_heightfield(heightfield, material);
        g
    }

    /// Add a heightfield (one primitive, in the geometry's tree as its box;
    /// its cells and faces are named by the hits on it); returns its primitive
    /// id. It was checked when it was made ([`Heightfield::new`]).
    pub fn add_heightfield(&mut self, heightfield: Heightfield, material: u32) -> u32 {
        self.topology = None;
        let id = self.prim_ref.len() as u32;
        self.prim_ref
            .push(PrimRef::Heightfield(self.heightfields.len() as u32));
        self.heightfields.push(heightfield);
        self.prim_material.push(material);
        id
    }

    /// Add a triangle; returns its primitive id.
    pub fn add_triangle(&mut self, v0: Vec3, v1: Vec3, v2: Vec3, material: u32) -> u32 {
        self.topology = None;
        self.push_triangle(v0, v1, v2, material)
    }

    fn push_triangle(&mut self, v0: Vec3, v1: Vec3, v2: Vec3, material: u32) -> u32 {
        let id = self.prim_ref.len() as u32;
        self.prim_ref
            .push(PrimRef::Triangle(self.tri_id.len() as u32));
        self.tri_v0.push(v0);
        self.tri_v1.push(v1);
        self.tri_v2.push(v2);
        self.tri_id.push(id);
        self.prim_material.push(material);
        id
    }

    /// Add an indexed triangle mesh; returns the primitive id of its first triangle
    /// (the others follow in order).
    ///
    /// Fails, adding nothing, when an index is out of range or a used vertex is not
    /// finite (the error names the mesh, the triangle and the vertex), when the
    /// geometry would pass [`MAX_PRIMITIVES`] ([`Error::TooManyPrimitives`]), or when
    /// the host has not the memory for it ([`Error::HostOutOfMemory`]).
    ///
    /// The first mesh added to an empty geometry keeps its vertex buffer and
    /// triangles, so that its vertices can later be moved and its tree refit;
    /// anything added after it makes the geometry a plain collection.
    pub fn add_mesh(
        &mut self,
        positions: &[Vec3],
        triangles: &[[u32; 3]],
        material: u32,
    ) -> Result<u32, Error> {
        // The count first: a mesh refused for its size is not read.
        let count = self.prim_ref.len().saturating_add(triangles.len());
        if count > MAX_PRIMITIVES {
            return Err(Error::TooManyPrimitives {
                count,
                limit: MAX_PRIMITIVES,
            });
        }
        let mesh = self.mesh_count;
        for (t, tri) in triangles.iter().enumerate() {
            for &index in tri {
                let Some(p) = positions.get(index as usize) else {
                    return Err(Error::IndexOutOfRange {
                        mesh,
                        triangle: t,
                        index,
                        vertex_count: positions.len(),
                    });
                };
                if !p.is_finite() {
                    return Err(Error::VertexNotFinite {
                        mesh,
                        triangle: t,
                        vertex: index as usize,
                        position: p.to_array(),
                    });
                }
            }
        }
        // Room for every array first, fallibly: a mesh the host cannot hold is
        // an error, with nothing added (a reservation alone changes no content).
        let n = triangles.len();
        let oom = |what: &'static str, size: usize| Error::HostOutOfMemory {
            what,
            bytes: (n as u64).saturating_mul(size as u64),
        };
        self.tri_v0
            .try_reserve(n)
            .and_then(|()| self.tri_v1.try_reserve(n))
            .and_then(|()| self.tri_v2.try_reserve(n))
            .map_err(|_| oom("mesh vertices", 3 * size_of::<Vec3>()))?;
        self.tri_id
            .try_reserve(n)
            .map_err(|_| oom("mesh triangle ids", size_of::<u32>()))?;
        self.prim_material
            .try_reserve(n)
            .map_err(|_| oom("mesh materials", size_of::<u32>()))?;
        self.prim_ref
            .try_reserve(n)
            .map_err(|_| oom("mesh primitives", size_of::<PrimRef>()))?;
        // The first mesh of an empty geometry keeps its topology (refit);
        // a later addition drops it (`add_sphere`, `add_triangle`, here).
        let topology = if self.prim_ref.is_empty() {
            let mut kept = MeshTopology::default();
            kept.positions
                .try_reserve_exact(positions.len())
                .map_err(|_| oom("mesh vertex buffer", 0))?;
            kept.indices
                .try_reserve_exact(n)
                .map_err(|_| oom("mesh triangles", size_of::<[u32; 3]>()))?;
            kept.positions.extend_from_slice(positions);
            kept.indices.extend_from_slice(triangles);
            Some(kept)
        } else {
            None
        };
        self.mesh_count += 1;
        let first = self.prim_ref.len() as u32;
        for tri in triangles {
            // ok: every index was checked against `positions.len()` above.
            let [a, b, c] = tri.map(|i| positions[i as usize]);
            self.push_triangle(a, b, c, material);
        }
        self.topology = topology;
        Ok(first)
    }

    /// Number of primitives (spheres, triangles and heightfields).
    #[inline]
    pub fn primitive_count(&self) -> usize {
        self.prim_ref.len()
    }

    /// Number of spheres.
    #[inline]
    pub fn sphere_count(&self) -> usize {
        self.sphere_id.len()
    }

    /// Number of triangles.
    #[inline]
    pub fn triangle_count(&self) -> usize {
        self.tri_id.len()
    }

    /// Number of heightfields.
    #[inline]
    pub fn heightfield_count(&self) -> usize {
        self.heightfields.len()
    }

    /// The heightfields, by heightfield index ([`PrimRef::Heightfield`]).
    #[inline]
    pub fn heightfields(&self) -> &[Heightfield] {
        &self.heightfields
    }

    /// Whether the geometry is exactly one indexed mesh, whose vertices can be
    /// moved (see [`Geometry::add_mesh`]).
    #[inline]
    pub fn is_mesh(&self) -> bool {
        self.topology.is_some()
    }

    /// Vertices of the mesh, when [`Geometry::is_mesh`].
    #[inline]
    pub fn mesh_positions(&self) -> Option<&[Vec3]> {
        self.topology.as_ref().map(|t| t.positions.as_slice())
    }

    /// Material id of each primitive, by primitive id.
    #[inline]
    pub fn primitive_materials(&self) -> &[u32] {
        &self.prim_material
    }

    /// Where a primitive id's data lives, if the id exists.
    #[inline]
    pub fn primitive(&self, id: u32) -> Option<PrimRef> {
        self.prim_ref.get(id as usize).copied()
    }

    /// Sphere centres and radii (`xyz`, `w`), by sphere index.
    #[inline]
    pub fn spheres(&self) -> &[Vec4] {
        &self.sphere_center_radius
    }

    /// Triangle vertices, by triangle index.
    #[inline]
    pub fn triangle(&self, index: u32) -> Option<[Vec3; 3]> {
        let i = index as usize;
        Some([
            *self.tri_v0.get(i)?,
            *self.tri_v1.get(i)?,
            *self.tri_v2.get(i)?,
        ])
    }

    /// Check every primitive against `material_count` materials; the first
    /// problem found is returned, naming the primitive. An empty geometry
    /// passes (the caller decides whether that is allowed).
    pub(crate) fn validate(
        &self,
        material_count: usize,
        reject_degenerate: bool,
    ) -> Result<(), Error> {
        if self.prim_ref.len() > MAX_PRIMITIVES {
            return Err(Error::TooManyPrimitives {
                count: self.prim_ref.len(),
                limit: MAX_PRIMITIVES,
            });
        }
        for (id, &m) in self.prim_material.iter().enumerate() {
            if m as usize >= material_count {
                return Err(Error::MaterialOutOfRange {
                    primitive: id,
                    material: m,
                    count: material_count,
                });
            }
        }
        for (s, cr) in self.sphere_center_radius.iter().enumerate() {
            // ok: `add_sphere` pushes `sphere_id` and `sphere_center_radius` together.
            let prim = self.sphere_id[s] as usize;
            if !cr.truncate().is_finite() {
                return Err(Error::SphereCenterNotFinite {
                    prim,
                    center: cr.truncate().to_array(),
                });
            }
            if !(cr.w > 0.0 && cr.w.is_finite()) {
                return Err(Error::SphereRadiusInvalid { prim, radius: cr.w });
            }
        }
        for t in 0..self.tri_id.len() {
            // ok: `push_triangle` pushes the three vertex arrays and `tri_id` together.
            let (a, b, c) = (self.tri_v0[t], self.tri_v1[t], self.tri_v2[t]);
            for (k, p) in [a, b, c].into_iter().enumerate() {
                if !p.is_finite() {
                    return Err(Error::TriangleNotFinite {
                        prim: self.tri_id[t] as usize,
                        vertex: k,
                        position: p.to_array(),
                    });
                }
            }
            if reject_degenerate && (b - a).cross(c - a) == Vec3::ZERO {
                return Err(Error::DegenerateTriangle {
                    prim: self.tri_id[t] as usize,
                });
            }
        }
        Ok(())
    }
}
