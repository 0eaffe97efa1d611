//! The scene: primitives as structure-of-arrays, materials, sky and key light.
//!
//! Primitive ids are given in insertion order across spheres and triangles
//! (`add_sphere`, `add_triangle`, and each triangle of `add_mesh` in order) and
//! are what [`crate::Hit::prim`] reports. A scene made of one OBJ file therefore
//! numbers its triangles in file order, as the reference hits do.

use crate::error::Error;
use crate::material::Material;
use alloc::vec::Vec;
use glam::{Vec3, Vec4};

/// Most primitives one scene may hold: ids must fit in 31 bits, and the BVH's
/// depth bound ([`crate::bvh`]) is proven for fewer than `2^31` primitives.
pub const MAX_PRIMITIVES: usize = 1 << 30;

/// Where a primitive id points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrimRef {
    /// Index into the triangle arrays.
    Triangle(u32),
    /// Index into the sphere arrays.
    Sphere(u32),
}

/// A sky that is a vertical gradient: `horizon` at `dir.y = -1`, `zenith` at `dir.y = +1`.
///
/// The names follow *Ray Tracing in One Weekend*, whose sky this is: `horizon`
/// is the colour straight down, and a level ray sees the average of the two.
/// Constant skies set both to the same colour; a black sky lights nothing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sky {
    /// Colour looking straight down (`dir.y = -1`).
    pub horizon: Vec3,
    /// Colour looking straight up (`dir.y = +1`).
    pub zenith: Vec3,
}

impl Sky {
    /// No light from the sky.
    pub const BLACK: Sky = Sky {
        horizon: Vec3::ZERO,
        zenith: Vec3::ZERO,
    };

    /// One colour in every direction.
    #[inline]
    pub fn constant(color: Vec3) -> Self {
        Self {
            horizon: color,
            zenith: color,
        }
    }

    /// The gradient of *Ray Tracing in One Weekend*: white to light blue.
    #[inline]
    pub fn rtiow() -> Self {
        Self {
            horizon: Vec3::ONE,
            zenith: Vec3::new(0.5, 0.7, 1.0),
        }
    }
}

/// A point light, used by the Whitted integrator and AO shadow rays.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PointLight {
    /// Position in world space.
    pub position: Vec3,
    /// Colour (linear RGB; 1 = full intensity, no falloff).
    pub color: Vec3,
}

/// A scene: spheres and triangles in structure-of-arrays form, materials, sky and
/// one key light. Spheres and triangles share one BVH ([`crate::Accel`]).
///
/// Adding never fails except in [`Scene::add_mesh`], which checks its indices
/// against its vertices, its used vertices for being finite, and the primitive
/// limit; everything else is validated, with the offending primitive named, when
/// an [`crate::Accel`] is built.
#[derive(Clone, Debug)]
pub struct Scene {
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
    /// Material id of each primitive, by primitive id.
    pub(crate) prim_material: Vec<u32>,
    /// Where each primitive id's data lives.
    pub(crate) prim_ref: Vec<PrimRef>,
    /// Materials, by material id.
    pub(crate) materials: Vec<Material>,
    /// Meshes added so far (for naming bad vertices and indices).
    mesh_count: usize,
    /// Refuse zero-area triangles when building (off by default: such triangles
    /// are never hit, and keeping them keeps file ids stable).
    pub reject_degenerate: bool,
    /// The sky.
    pub sky: Sky,
    /// The key light.
    pub light: PointLight,
}

impl Default for Scene {
    fn default() -> Self {
        Self::new()
    }
}

impl Scene {
    /// An empty scene with the RTIOW sky and a white light at `(1, 1, 1)`.
    pub fn new() -> Self {
        Self {
            sphere_center_radius: Vec::new(),
            sphere_id: Vec::new(),
            tri_v0: Vec::new(),
            tri_v1: Vec::new(),
            tri_v2: Vec::new(),
            tri_id: Vec::new(),
            prim_material: Vec::new(),
            prim_ref: Vec::new(),
            materials: Vec::new(),
            mesh_count: 0,
            reject_degenerate: false,
            sky: Sky::rtiow(),
            light: PointLight {
                position: Vec3::ONE,
                color: Vec3::ONE,
            },
        }
    }

    /// Add a material; returns its id.
    pub fn add_material(&mut self, material: Material) -> u32 {
        self.materials.push(material);
        (self.materials.len() - 1) as u32
    }

    /// Add a sphere; returns its primitive id.
    pub fn add_sphere(&mut self, center: Vec3, radius: f32, material: u32) -> u32 {
        let id = self.prim_ref.len() as u32;
        self.prim_ref
            .push(PrimRef::Sphere(self.sphere_id.len() as u32));
        self.sphere_center_radius.push(center.extend(radius));
        self.sphere_id.push(id);
        self.prim_material.push(material);
        id
    }

    /// Add a triangle; returns its primitive id.
    pub fn add_triangle(&mut self, v0: Vec3, v1: Vec3, v2: Vec3, material: u32) -> u32 {
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
    /// scene would pass [`MAX_PRIMITIVES`] ([`Error::TooManyPrimitives`]), or when
    /// the host has not the memory for it ([`Error::HostOutOfMemory`]).
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
        self.mesh_count += 1;
        let first = self.prim_ref.len() as u32;
        for tri in triangles {
            // ok: every index was checked against `positions.len()` above.
            let [a, b, c] = tri.map(|i| positions[i as usize]);
            self.add_triangle(a, b, c, material);
        }
        Ok(first)
    }

    /// Number of primitives (spheres and triangles).
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

    /// The materials, by id.
    #[inline]
    pub fn materials(&self) -> &[Material] {
        &self.materials
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

    /// Check the sky, the key light, every material and every primitive; the
    /// first problem found is returned, naming the item.
    pub fn validate(&self) -> Result<(), Error> {
        if self.prim_ref.is_empty() {
            return Err(Error::EmptyScene);
        }
        if self.prim_ref.len() > MAX_PRIMITIVES {
            return Err(Error::TooManyPrimitives {
                count: self.prim_ref.len(),
                limit: MAX_PRIMITIVES,
            });
        }
        // The sky and the key light: colours finite and >= 0 (a NaN there
        // would turn every pixel that sees it NaN), the position finite.
        for (field, c) in [
            ("sky.horizon", self.sky.horizon),
            ("sky.zenith", self.sky.zenith),
            ("light.color", self.light.color),
        ] {
            if !c.to_array().iter().all(|v| *v >= 0.0 && v.is_finite()) {
                return Err(Error::SceneLightInvalid {
                    field,
                    value: c.to_array(),
                    reason: "every channel must be finite and >= 0",
                });
            }
        }
        if !self.light.position.is_finite() {
            return Err(Error::SceneLightInvalid {
                field: "light.position",
                value: self.light.position.to_array(),
                reason: "must be finite",
            });
        }
        for (i, m) in self.materials.iter().enumerate() {
            m.validate(i)?;
        }
        for (id, &m) in self.prim_material.iter().enumerate() {
            if m as usize >= self.materials.len() {
                return Err(Error::MaterialOutOfRange {
                    primitive: id,
                    material: m,
                    count: self.materials.len(),
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
            // ok: `add_triangle` pushes the three vertex arrays and `tri_id` together.
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
            if self.reject_degenerate && (b - a).cross(c - a) == Vec3::ZERO {
                return Err(Error::DegenerateTriangle {
                    prim: self.tri_id[t] as usize,
                });
            }
        }
        Ok(())
    }
}
