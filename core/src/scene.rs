//! The scene: its geometry, materials, sky and key light.
//!
//! A scene is *flat* or *two-level*. A flat scene holds its primitives itself
//! (`add_sphere`, `add_triangle`, `add_mesh`, `add_heightfield`) and is traced
//! through one BVH; it
//! behaves as one implicit instance (index 0) of its own geometry with the
//! identity transform. A two-level scene holds reusable [`Geometry`] (each with
//! its own BVH, the bottom level) placed by [`Instance`]s (a transform, a mask
//! and ids; a tree over their world boxes is the top level), as in Embree,
//! OptiX and DXR. Primitive ids count within their geometry (the scene's own
//! primitives for a flat scene) and are what [`crate::Hit::prim`] reports.

use crate::error::Error;
use crate::geometry::Geometry;
pub use crate::geometry::{MAX_PRIMITIVES, PrimRef};
use crate::heightfield::Heightfield;
use crate::instance::{Instance, MAX_INSTANCES};
use crate::lbvh::BuildQuality;
use crate::material::Material;
use crate::sun::Sun;
use crate::top_level::TopLevelBuild;
use alloc::vec::Vec;
use glam::{Vec3, Vec4};

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

/// A scene: geometry (its own primitives, or geometries placed by instances),
/// materials, sky and one key light. See the [module docs](self) for flat and
/// two-level scenes.
///
/// Adding never fails except in [`Scene::add_mesh`], which checks its indices
/// against its vertices, its used vertices for being finite, and the primitive
/// limit, and [`Scene::add_instances`], which checks the instance limit;
/// everything else is validated, with the offending item named, when an
/// [`crate::Accel`] is built.
///
/// ```
/// use prism_core::glam::{Affine3A, Vec3};
/// use prism_core::{Accel, Geometry, Instance, Material, Ray, Scene};
///
/// let mut scene = Scene::new();
/// let grey = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
/// let mut ball = Geometry::new();
/// ball.add_sphere(Vec3::ZERO, 1.0, grey);
/// let ball = scene.add_geometry(ball);
/// // Two balls: one at z = -5 (mask bit 0), one twice as large at z = -20 (bit 1).
/// let near = Affine3A::from_translation(Vec3::new(0.0, 0.0, -5.0));
/// scene.add_instance(Instance::new(ball, near).with_mask(0b01));
/// let far = Affine3A::from_scale_rotation_translation(
///     Vec3::splat(2.0), Default::default(), Vec3::new(0.0, 0.0, -20.0));
/// scene.add_instance(Instance::new(ball, far).with_mask(0b10));
/// let accel = Accel::build(&scene)?;
/// let hit = accel.intersect(&Ray::new(Vec3::ZERO, Vec3::NEG_Z));
/// assert_eq!((hit.instance, hit.prim), (0, 0));
/// assert!((hit.t - 4.0).abs() < 1e-5);
/// // A ray whose mask shares no bit with the first instance's sees the second.
/// let hit = accel.intersect(&Ray::new(Vec3::ZERO, Vec3::NEG_Z).with_mask(0b10));
/// assert_eq!(hit.instance, 1);
/// assert!((hit.t - 18.0).abs() < 1e-4);
/// # Ok::<(), prism_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Scene {
    /// The scene's own primitives (a flat scene's geometry).
    pub(crate) own: Geometry,
    /// Reusable geometry, placed by `instances`.
    pub(crate) geometries: Vec<Geometry>,
    /// Placements of `geometries`, by instance index.
    pub(crate) instances: Vec<Instance>,
    /// Materials, by material id.
    pub(crate) materials: Vec<Material>,
    /// Refuse zero-area triangles when building (off by default: such triangles
    /// are never hit, and keeping them keeps file ids stable).
    pub reject_degenerate: bool,
    /// The sky.
    pub sky: Sky,
    /// The key light.
    pub light: PointLight,
    /// A sun lighting the path integrator, if any ([`Sun`]).
    pub sun: Option<Sun>,
    /// How the tree over the instances is built, at first and after every
    /// update that moves them.
    pub top_level_build: TopLevelBuild,
    /// Which tree each geometry gets ([`BuildQuality`]): the host's SAH tree
    /// (the default), or the fast Morton-code tree a GPU backend builds on
    /// the device.
    pub build_quality: BuildQuality,
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
            own: Geometry::new(),
            geometries: Vec::new(),
            instances: Vec::new(),
            materials: Vec::new(),
            reject_degenerate: false,
            sky: Sky::rtiow(),
            light: PointLight {
                position: Vec3::ONE,
                color: Vec3::ONE,
            },
            sun: None,
            top_level_build: TopLevelBuild::Auto,
            build_quality: BuildQuality::Sah,
        }
    }

    /// Add a material; returns its id.
    pub fn add_material(&mut self, material: Material) -> u32 {
        self.materials.push(material);
        (self.materials.len() - 1) as u32
    }

    /// Add a sphere of the scene's own; returns its primitive id.
    pub fn add_sphere(&mut self, center: Vec3, radius: f32, material: u32) -> u32 {
        self.own.add_sphere(center, radius, material)
    }

    /// Add a triangle of the scene's own; returns its primitive id.
    pub fn add_triangle(&mut self, v0: Vec3, v1: Vec3, v2: Vec3, material: u32) -> u32 {
        self.own.add_triangle(v0, v1, v2, material)
    }

    /// Add an indexed triangle mesh of the scene's own; returns the primitive id
    /// of its first triangle (the others follow in order).
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
        self.own.add_mesh(positions, triangles, material)
    }

    /// Add a heightfield of the scene's own ([`crate::heightfield`]), in the
    /// scene's object space as it is (cells from the origin along `+x` and
    /// `+z`); returns its primitive id. To place it elsewhere, or many times,
    /// put it in a [`Geometry`] placed by instances.
    pub fn add_heightfield(&mut self, heightfield: Heightfield, material: u32) -> u32 {
        self.own.add_heightfield(heightfield, material)
    }

    /// Add a reusable geometry; returns its geometry id (what
    /// [`Instance::geometry`] names). A scene with geometries is two-level.
    pub fn add_geometry(&mut self, geometry: Geometry) -> u32 {
        self.geometries.push(geometry);
        (self.geometries.len() - 1) as u32
    }

    /// Place a geometry; returns the instance index (what
    /// [`crate::Hit::instance`] reports). The instance is checked when the
    /// scene is built.
    pub fn add_instance(&mut self, instance: Instance) -> u32 {
        self.instances.push(instance);
        (self.instances.len() - 1) as u32
    }

    /// Place many instances; returns the index of the first (the others follow
    /// in order). Fails, adding nothing, when the scene would hold more than
    /// [`MAX_INSTANCES`] (checked from the iterator's length before any
    /// instance is read) or the host has not the memory for them.
    pub fn add_instances<I>(&mut self, instances: I) -> Result<u32, Error>
    where
        I: IntoIterator<Item = Instance>,
        I::IntoIter: ExactSizeIterator,
    {
        let iter = instances.into_iter();
        let count = self.instances.len().saturating_add(iter.len());
        if count > MAX_INSTANCES {
            return Err(Error::TooManyInstances {
                count,
                limit: MAX_INSTANCES,
            });
        }
        self.instances
            .try_reserve(iter.len())
            .map_err(|_| Error::HostOutOfMemory {
                what: "instances",
                bytes: (iter.len() as u64).saturating_mul(size_of::<Instance>() as u64),
            })?;
        let first = self.instances.len() as u32;
        self.instances.extend(iter);
        Ok(first)
    }

    /// Whether the scene is two-level (it has geometries placed by instances).
    #[inline]
    pub fn is_two_level(&self) -> bool {
        !self.geometries.is_empty()
    }

    /// The scene's own primitives (a flat scene's geometry).
    #[inline]
    pub fn own_geometry(&self) -> &Geometry {
        &self.own
    }

    /// The reusable geometries, by geometry id.
    #[inline]
    pub fn geometries(&self) -> &[Geometry] {
        &self.geometries
    }

    /// The instances, by instance index.
    #[inline]
    pub fn instances(&self) -> &[Instance] {
        &self.instances
    }

    /// Number of the scene's own primitives (spheres, triangles and
    /// heightfields).
    #[inline]
    pub fn primitive_count(&self) -> usize {
        self.own.primitive_count()
    }

    /// Number of the scene's own spheres.
    #[inline]
    pub fn sphere_count(&self) -> usize {
        self.own.sphere_count()
    }

    /// Number of the scene's own triangles.
    #[inline]
    pub fn triangle_count(&self) -> usize {
        self.own.triangle_count()
    }

    /// Number of heightfields, the scene's own and its geometries' together
    /// (a backend whose kernels do not walk them refuses a scene with any).
    pub fn heightfield_count(&self) -> usize {
        self.own.heightfield_count()
            + self
                .geometries
                .iter()
                .map(Geometry::heightfield_count)
                .sum::<usize>()
    }

    /// The materials, by id.
    #[inline]
    pub fn materials(&self) -> &[Material] {
        &self.materials
    }

    /// Material id of each of the scene's own primitives, by primitive id.
    #[inline]
    pub fn primitive_materials(&self) -> &[u32] {
        self.own.primitive_materials()
    }

    /// Where one of the scene's own primitive ids points, if the id exists.
    #[inline]
    pub fn primitive(&self, id: u32) -> Option<PrimRef> {
        self.own.primitive(id)
    }

    /// The scene's own sphere centres and radii (`xyz`, `w`), by sphere index.
    #[inline]
    pub fn spheres(&self) -> &[Vec4] {
        self.own.spheres()
    }

    /// The scene's own triangle vertices, by triangle index.
    #[inline]
    pub fn triangle(&self, index: u32) -> Option<[Vec3; 3]> {
        self.own.triangle(index)
    }

    /// Check the sky, the key light, the sun, every material, every primitive, every
    /// geometry and every instance; the first problem found is returned,
    /// naming the item (a geometry's primitive inside
    /// [`Error::InGeometry`]).
    pub fn validate(&self) -> Result<(), Error> {
        if self.is_two_level() {
            if self.own.primitive_count() > 0 {
                return Err(Error::LoosePrimitives {
                    count: self.own.primitive_count(),
                });
            }
        } else if self.own.primitive_count() == 0 {
            return Err(Error::EmptyScene);
        }
        if self.instances.len() > MAX_INSTANCES {
            return Err(Error::TooManyInstances {
                count: self.instances.len(),
                limit: MAX_INSTANCES,
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
        if let Some(sun) = &self.sun {
            sun.validate()?;
        }
        for (i, m) in self.materials.iter().enumerate() {
            m.validate(i)?;
        }
        self.own
            .validate(self.materials.len(), self.reject_degenerate)?;
        for (g, geometry) in self.geometries.iter().enumerate() {
            if geometry.primitive_count() == 0 {
                return Err(Error::EmptyGeometry { geometry: g });
            }
            geometry
                .validate(self.materials.len(), self.reject_degenerate)
                .map_err(|e| Error::in_geometry(g, e))?;
        }
        for (i, instance) in self.instances.iter().enumerate() {
            instance.validate(i, self.geometries.len(), self.materials.len())?;
        }
        Ok(())
    }
}
