//! The traversal-ready scene ([`Accel`]): validated, trees built, primitives in
//! leaf order; what every backend uploads.

use crate::aabb::Aabb;
use crate::bvh::{Bvh, Fork, Sequential, sphere_bounds, triangle_bounds};
use crate::error::{Error, try_vec};
use crate::geometry::{Geometry, PrimRef};
use crate::gpu::{BvhNode, EMPTY_CHILD, GpuHeightfield, GpuInstance, GpuMaterial, Primitive};
use crate::heightfield::Heightfields;
use crate::lbvh::BuildQuality;
use crate::ray::{Hit, Ray};
use crate::scene::{PointLight, Scene, Sky};
use crate::sun::Sun;
use crate::traverse::{any_hit, closest_hit};
use crate::two_level::{Blas, TwoLevel};
use alloc::boxed::Box;
use alloc::vec::Vec;
use glam::Vec3;

/// A scene made ready for tracing: validated, BVHs built, primitives in leaf order.
///
/// This is what every backend uploads: [`Accel::nodes`], [`Accel::primitives`],
/// [`Accel::slot_materials`] and [`Accel::materials`] are the device buffers,
/// for a two-level scene also [`Accel::top_nodes`] and
/// [`Accel::instances`], and for a scene with heightfields
/// [`Accel::heightfields`] and [`Accel::heightfield_heights`]. The fields are private so that the BVH invariants
/// (depth bound, valid child indices) hold for every `Accel` that exists.
///
/// A flat scene's `nodes` are its one tree. A two-level scene's `nodes` are
/// its geometries' trees one after the other (each with indices into the
/// whole arrays, so a tree's walk is a flat walk from its root), and
/// `top_nodes` is the tree over the instances, whose leaves each hold one
/// instance index.
///
/// ```
/// use prism_core::glam::Vec3;
/// use prism_core::{Accel, Material, Ray, Scene};
///
/// let mut scene = Scene::new();
/// let grey = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
/// let ball = scene.add_sphere(Vec3::new(0.0, 0.0, -5.0), 1.0, grey);
/// let accel = Accel::build(&scene)?;
/// let hit = accel.intersect(&Ray::new(Vec3::ZERO, Vec3::NEG_Z));
/// assert_eq!(hit.prim, ball); // the scene's id, not the leaf slot
/// assert_eq!(hit.instance, 0); // a flat scene is one implicit instance
/// assert!((hit.t - 4.0).abs() < 1e-5);
/// assert!(!accel.occluded(&Ray::new(Vec3::ZERO, Vec3::Z)));
/// # Ok::<(), prism_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Accel {
    pub(crate) nodes: Vec<BvhNode>,
    pub(crate) prims: Vec<Primitive>,
    pub(crate) slot_material: Vec<u32>,
    materials: Vec<GpuMaterial>,
    /// One record per heightfield, by [`Primitive::heightfield_index`].
    pub(crate) heightfields: Vec<GpuHeightfield>,
    /// Every heightfield's pyramid of heights, one after the other.
    pub(crate) heights: Vec<f32>,
    pub(crate) bounds: Aabb,
    pub(crate) depth: u32,
    sky: Sky,
    light: PointLight,
    sun: Option<Sun>,
    /// The top level, for a two-level scene.
    pub(crate) levels: Option<Box<TwoLevel>>,
    /// Which trees the geometries have (and get again when rebuilt).
    pub(crate) quality: BuildQuality,
}

/// One geometry's tree as built: nodes with indices local to it, primitive
/// records and materials in its leaf order, its bounds and depth.
pub(crate) struct BuiltTree {
    pub(crate) bvh: Bvh,
    pub(crate) prims: Vec<Primitive>,
    pub(crate) slot_material: Vec<u32>,
    pub(crate) bounds: Aabb,
}

/// The primitive record of a triangle, as every tree stores it: a zero-area
/// triangle is stored as three copies of `v0`, so that its edge functions are
/// exactly 0 and `ray_triangle` rejects it (det == 0) and it is never hit.
/// Stored as given, a collinear triangle is hit by rays through its line, at
/// rounding-noise barycentrics and a wrong `t`.
#[inline]
pub(crate) fn triangle_record(id: u32, v0: Vec3, v1: Vec3, v2: Vec3) -> Primitive {
    let (v1, v2) = if (v1 - v0).cross(v2 - v0) == Vec3::ZERO {
        (v0, v0)
    } else {
        (v1, v2)
    };
    Primitive::triangle(id, v0.into(), v1.into(), v2.into())
}

/// Build the tree of one validated geometry; its heightfields' records are
/// numbered from `heightfield_base` (the heightfields of the geometries
/// before it, [`heightfield_arrays`]).
pub(crate) fn build_tree<F: Fork>(
    g: &Geometry,
    fork: Option<&F>,
    heightfield_base: u32,
    quality: BuildQuality,
) -> Result<BuiltTree, Error> {
    // ok (indexing below): `add_sphere`, `add_triangle` and `add_heightfield`
    // push each `PrimRef` with the entries it points at, `prim_material` has
    // one entry per primitive, and `bvh.order` is a permutation of `0..n`.
    let n = g.primitive_count();
    // Every per-primitive array is reserved fallibly: a scene the host has
    // not the memory to build is Error::HostOutOfMemory, not an abort.
    // The records' array, which the SAH build also works in before they are
    // written (see `Bvh::try_build_boxes_of`).
    let mut prims = try_vec(n, "primitives")?;
    prims.resize(n, Primitive::default());
    let (bvh, tree_bounds) = match quality {
        // The SAH builder reads each box once, into its own array: no array
        // of boxes (24 bytes a primitive of memory to fault in).
        BuildQuality::Sah => {
            Bvh::try_build_boxes_of(n, |id| primitive_box(g, id), fork, &mut prims)?
        }
        BuildQuality::Fast | BuildQuality::Clustered => {
            let mut bounds = try_vec(n, "primitive bounds")?;
            bounds.extend((0..n as u32).map(|id| primitive_box(g, id)));
            let bvh = build_bvh::<Sequential>(&bounds, None, quality)?;
            // The same box as the union in slot order (up to the sign of a
            // zero bound), without a primitive's box computed again.
            let tree_bounds = bounds.iter().fold(Aabb::EMPTY, |a, &b| a.union(b));
            (bvh, tree_bounds)
        }
    };
    tree_of(g, bvh, heightfield_base, tree_bounds, prims)
}

/// The primitive records and materials of geometry `g` in the slot order of
/// `bvh` (a permutation of its primitives), with its bounds `tree_bounds`;
/// the records are written into `prims` (any `n` records, or empty).
pub(crate) fn tree_of(
    g: &Geometry,
    bvh: Bvh,
    heightfield_base: u32,
    tree_bounds: Aabb,
    mut prims: Vec<Primitive>,
) -> Result<BuiltTree, Error> {
    let n = g.primitive_count();
    // Written in input order, each record to its slot: the geometry's arrays
    // are read front to back, and the random accesses are stores, which do
    // not stall the loop as the loads of a gather in slot order did.
    // ok (indexing): `bvh.order` is a permutation of `0..n` (built so, or
    // checked by `Accel::build_with_tree`), so ids and slots are below `n`.
    let mut slot_of = try_vec(n, "primitive slots")?;
    slot_of.resize(n, 0u32);
    for (slot, &id) in (0u32..).zip(&bvh.order) {
        slot_of[id as usize] = slot;
    }
    if prims.len() != n {
        prims = try_vec(n, "primitives")?;
        prims.resize(n, Primitive::default());
    }
    let mut slot_material = try_vec(n, "primitive materials")?;
    slot_material.resize(n, 0);
    for (id, &slot) in (0u32..).zip(&slot_of) {
        prims[slot as usize] = match g.prim_ref[id as usize] {
            PrimRef::Triangle(t) => {
                let t = t as usize;
                triangle_record(id, g.tri_v0[t], g.tri_v1[t], g.tri_v2[t])
            }
            PrimRef::Sphere(s) => {
                let cr = g.sphere_center_radius[s as usize];
                Primitive::sphere(id, cr.truncate().into(), cr.w)
            }
            PrimRef::Heightfield(h) => {
                let hf = &g.heightfields[h as usize];
                let b = hf.tree_bounds();
                Primitive::heightfield(
                    id,
                    b.min.into(),
                    b.max.into(),
                    heightfield_base + h,
                    hf.size(),
                )
            }
        };
        slot_material[slot as usize] = g.prim_material[id as usize];
    }
    Ok(BuiltTree {
        bvh,
        prims,
        slot_material,
        bounds: tree_bounds,
    })
}

/// The box of primitive `id` of `g` (a valid id).
#[inline]
fn primitive_box(g: &Geometry, id: u32) -> Aabb {
    // ok (indexing): `id` is below the geometry's primitive count, and each
    // `PrimRef` points at an entry pushed with it.
    match g.prim_ref[id as usize] {
        PrimRef::Triangle(t) => {
            let t = t as usize;
            triangle_bounds(g.tri_v0[t], g.tri_v1[t], g.tri_v2[t])
        }
        PrimRef::Sphere(s) => {
            let cr = g.sphere_center_radius[s as usize];
            sphere_bounds(cr.truncate(), cr.w)
        }
        PrimRef::Heightfield(h) => g.heightfields[h as usize].tree_bounds(),
    }
}

/// The tree of `quality` over primitives given by their boxes (the SAH tree's
/// large subtrees through `fork` where given; the fast tree is one pass each
/// and takes no fork).
pub(crate) fn build_bvh<F: Fork>(
    bounds: &[Aabb],
    fork: Option<&F>,
    quality: BuildQuality,
) -> Result<Bvh, Error> {
    match (quality, fork) {
        (BuildQuality::Fast, _) => crate::lbvh::build(bounds),
        (BuildQuality::Clustered, _) => crate::ploc::build(bounds),
        (BuildQuality::Sah, Some(fork)) => Bvh::try_build_with(bounds, fork),
        (BuildQuality::Sah, None) => Bvh::try_build(bounds),
    }
}

/// The heightfields of `geometries`, in order: one record each, and their
/// pyramids one after the other in one height array (what
/// [`Accel::heightfields`] and [`Accel::heightfield_heights`] hold). Fails
/// when the array would pass what a `u32` offset addresses
/// ([`Error::HeightfieldDataTooLarge`]) or the host has not the memory.
pub(crate) fn heightfield_arrays<'a>(
    geometries: impl Iterator<Item = &'a Geometry> + Clone,
) -> Result<(Vec<GpuHeightfield>, Vec<f32>), Error> {
    let all = geometries.flat_map(|g| g.heightfields.iter());
    let entries: u64 = all.clone().map(|h| h.pyramid().len() as u64).sum();
    if entries > u32::MAX as u64 {
        return Err(Error::HeightfieldDataTooLarge {
            entries,
            limit: u32::MAX as u64,
        });
    }
    let mut records = try_vec(all.clone().count(), "heightfield records")?;
    let mut heights = try_vec(entries as usize, "heightfield heights")?;
    for h in all {
        // ok: the total was checked against u32::MAX above.
        records.push(h.descriptor(heights.len() as u32));
        heights.extend_from_slice(h.pyramid());
    }
    Ok((records, heights))
}

/// `nodes` with every inner child index moved by `node_base` and every leaf's
/// first slot by `prim_base` (absent children stay absent).
pub(crate) fn offset_nodes(
    nodes: &[BvhNode],
    node_base: u32,
    prim_base: u32,
) -> impl Iterator<Item = BvhNode> + '_ {
    let moved = move |index: u32, count: u32| {
        if index == EMPTY_CHILD {
            index
        } else if count == 0 {
            index + node_base
        } else {
            index + prim_base
        }
    };
    nodes.iter().map(move |n| {
        let mut n = *n;
        n.left_lo[3] = f32::from_bits(moved(n.left_index(), n.left_count()));
        n.right_lo[3] = f32::from_bits(moved(n.right_index(), n.right_count()));
        n
    })
}

impl Accel {
    /// Validate `scene` and build its BVHs on the calling thread. The error names
    /// the first bad item.
    pub fn build(scene: &Scene) -> Result<Accel, Error> {
        Self::build_in(scene, None::<&Sequential>)
    }

    /// [`Accel::build`], with the BVHs' large subtrees built through `fork`
    /// (see [`Fork`]; `rayon::join` uses every core of the current pool). The
    /// result is the same as [`Accel::build`]'s, bit for bit.
    pub fn build_with<F: Fork>(scene: &Scene, fork: &F) -> Result<Accel, Error> {
        Self::build_in(scene, Some(fork))
    }

    /// [`Accel::build`] of a flat scene with a tree built elsewhere (a GPU
    /// backend's build of the scene's [`BuildQuality`] on the device):
    /// the scene is validated and its primitive records laid out in the
    /// tree's slot order, as for a tree core builds. `bvh.depth` is not
    /// trusted: it is measured here.
    ///
    /// Refuses, with [`Error::Device`] naming the defect, a two-level scene,
    /// an `order` that is not a permutation of the scene's primitives, and a
    /// tree that breaks the layout's rules ([`crate::gpu::check_tree`]), or
    /// leaves a slot in no leaf or two, or is deeper than
    /// [`crate::gpu::TRAVERSAL_STACK_SIZE`] allows.
    pub fn build_with_tree(scene: &Scene, bvh: Bvh) -> Result<Accel, Error> {
        let bad = |message: alloc::string::String| Error::Device {
            backend: "core",
            operation: "taking a tree built elsewhere",
            message,
        };
        scene.validate()?;
        if scene.is_two_level() {
            return Err(bad(
                "the scene is two-level; only a flat scene's tree is taken".into(),
            ));
        }
        let n = scene.own.primitive_count();
        if bvh.order.len() != n {
            return Err(bad(alloc::format!(
                "the tree orders {} primitives, the scene has {n}",
                bvh.order.len()
            )));
        }
        let mut seen = try_vec(n, "tree check: slots")?;
        seen.resize(n, false);
        for (slot, &id) in bvh.order.iter().enumerate() {
            match seen.get_mut(id as usize) {
                Some(s) if !*s => *s = true,
                _ => {
                    return Err(bad(alloc::format!(
                        "slot {slot} holds primitive {id}, which is out of range or in another slot"
                    )));
                }
            }
        }
        crate::gpu::check_tree(&bvh.nodes, n).map_err(|d| bad(alloc::format!("{d}")))?;
        let depth = crate::lbvh::leaf_depth(&bvh.nodes, n).map_err(|m| bad(m.into()))?;
        let bvh = Bvh { depth, ..bvh };
        let (heightfields, heights) = heightfield_arrays(core::iter::once(&scene.own))?;
        let tree_bounds =
            (0..n as u32).fold(Aabb::EMPTY, |a, id| a.union(primitive_box(&scene.own, id)));
        let tree = tree_of(&scene.own, bvh, 0, tree_bounds, Vec::new())?;
        let mut materials = try_vec(scene.materials.len(), "materials")?;
        materials.extend(scene.materials.iter().map(|m| m.to_gpu()));
        Ok(Accel {
            nodes: tree.bvh.nodes,
            prims: tree.prims,
            slot_material: tree.slot_material,
            materials,
            heightfields,
            heights,
            bounds: tree.bounds,
            depth: tree.bvh.depth,
            sky: scene.sky,
            light: scene.light,
            sun: scene.sun,
            levels: None,
            quality: scene.build_quality,
        })
    }

    fn build_in<F: Fork>(scene: &Scene, fork: Option<&F>) -> Result<Accel, Error> {
        scene.validate()?;
        let mut materials = try_vec(scene.materials.len(), "materials")?;
        materials.extend(scene.materials.iter().map(|m| m.to_gpu()));
        if !scene.is_two_level() {
            let (heightfields, heights) = heightfield_arrays(core::iter::once(&scene.own))?;
            let tree = build_tree(&scene.own, fork, 0, scene.build_quality)?;
            return Ok(Accel {
                nodes: tree.bvh.nodes,
                prims: tree.prims,
                slot_material: tree.slot_material,
                materials,
                heightfields,
                heights,
                bounds: tree.bounds,
                depth: tree.bvh.depth,
                sky: scene.sky,
                light: scene.light,
                sun: scene.sun,
                levels: None,
                quality: scene.build_quality,
            });
        }
        // Two levels: every geometry's tree, one after the other.
        let (heightfields, heights) = heightfield_arrays(scene.geometries.iter())?;
        let mut heightfield_base = 0u32;
        let trees = scene
            .geometries
            .iter()
            .map(|g| {
                let tree = build_tree(g, fork, heightfield_base, scene.build_quality);
                heightfield_base += g.heightfield_count() as u32;
                tree
            })
            .collect::<Result<Vec<_>, _>>()?;
        let node_total: usize = trees.iter().map(|t| t.bvh.nodes.len()).sum();
        let prim_total: usize = trees.iter().map(|t| t.prims.len()).sum();
        let mut nodes = try_vec(node_total, "BVH nodes")?;
        let mut prims = try_vec(prim_total, "primitives")?;
        let mut slot_material = try_vec(prim_total, "primitive materials")?;
        let mut blas = try_vec(trees.len(), "geometry trees")?;
        let mut depth = 0;
        for (tree, geometry) in trees.into_iter().zip(&scene.geometries) {
            let (node_base, prim_base) = (nodes.len() as u32, prims.len() as u32);
            nodes.extend(offset_nodes(&tree.bvh.nodes, node_base, prim_base));
            prims.extend_from_slice(&tree.prims);
            slot_material.extend_from_slice(&tree.slot_material);
            depth = depth.max(tree.bvh.depth);
            blas.push(Blas::new(
                node_base,
                tree.bvh.nodes.len() as u32,
                prim_base,
                tree.prims.len() as u32,
                tree.bounds,
                tree.bvh.depth,
                geometry.topology.clone(),
            ));
        }
        let mut accel = Accel {
            nodes,
            prims,
            slot_material,
            materials,
            heightfields,
            heights,
            bounds: Aabb::EMPTY,
            depth,
            sky: scene.sky,
            light: scene.light,
            sun: scene.sun,
            levels: None,
            quality: scene.build_quality,
        };
        for b in &mut blas {
            b.built_cost = crate::two_level::sah_cost(&accel.nodes, b.root(), b.bounds);
            b.outline = crate::outline::Outline::of_tree(&accel.nodes, b.root(), b.bounds);
        }
        let levels = TwoLevel::build(blas, &scene.instances, scene.top_level_build)?;
        accel.bounds = levels.world_bounds();
        accel.levels = Some(Box::new(levels));
        Ok(accel)
    }

    /// The memory of core's tree over this scene as every GPU backend
    /// uploads it: the nodes (the instances' tree's too), and the leaves'
    /// primitive records and slot materials, with the instance records and
    /// heightfields of a scene that has them.
    pub fn tree_bytes(&self) -> crate::backend::TreeBytes {
        use core::mem::size_of_val;
        let top: &[BvhNode] = self.top_nodes();
        let nodes = size_of_val(self.nodes.as_slice()) + size_of_val(top);
        let leaves = size_of_val(self.prims.as_slice())
            + size_of_val(self.slot_material.as_slice())
            + size_of_val(self.instances())
            + size_of_val(self.heightfields.as_slice())
            + size_of_val(self.heights.as_slice());
        crate::backend::TreeBytes {
            tree: "core binary (GPU upload layout)",
            nodes: nodes as u64,
            leaves: leaves as u64,
        }
    }

    /// BVH nodes, root first (two levels: every geometry's tree, see the type's
    /// docs).
    #[inline]
    pub fn nodes(&self) -> &[BvhNode] {
        &self.nodes
    }
    /// Primitives in leaf order ("slots").
    #[inline]
    pub fn primitives(&self) -> &[Primitive] {
        &self.prims
    }
    /// Material id of each slot.
    #[inline]
    pub fn slot_materials(&self) -> &[u32] {
        &self.slot_material
    }
    /// The heightfields' records ([`crate::heightfield`]), by
    /// [`Primitive::heightfield_index`]: the geometries' in order (a flat
    /// scene: its own), each geometry's in the order they were added.
    #[inline]
    pub fn heightfields(&self) -> &[GpuHeightfield] {
        &self.heightfields
    }
    /// Every heightfield's pyramid of maximum heights, one after the other,
    /// as [`GpuHeightfield::level_offset`] places them.
    #[inline]
    pub fn heightfield_heights(&self) -> &[f32] {
        &self.heights
    }
    /// The heightfields as the walks read them (records and heights).
    #[inline]
    pub fn heightfield_set(&self) -> Heightfields<'_> {
        Heightfields {
            descriptors: &self.heightfields,
            heights: &self.heights,
        }
    }
    /// Materials in buffer form, by material id.
    #[inline]
    pub fn materials(&self) -> &[GpuMaterial] {
        &self.materials
    }
    /// Bounds of the whole scene (two levels: of the instances' world boxes).
    #[inline]
    pub fn bounds(&self) -> Aabb {
        self.bounds
    }
    /// Depth of the deepest leaf (two levels: of the deepest geometry tree;
    /// always below [`crate::gpu::TRAVERSAL_STACK_SIZE`]).
    #[inline]
    pub fn depth(&self) -> u32 {
        self.depth
    }
    /// The sky.
    #[inline]
    pub fn sky(&self) -> Sky {
        self.sky
    }
    /// The key light.
    #[inline]
    pub fn light(&self) -> PointLight {
        self.light
    }
    /// The sun, if the scene has one.
    #[inline]
    pub fn sun(&self) -> Option<Sun> {
        self.sun
    }

    /// Which trees the geometries have ([`crate::Scene::build_quality`]).
    #[inline]
    pub fn build_quality(&self) -> BuildQuality {
        self.quality
    }

    /// Whether the scene is two-level (see [`crate::Scene`]).
    #[inline]
    pub fn is_two_level(&self) -> bool {
        self.levels.is_some()
    }

    /// The tree over the instances (empty for a flat scene); a leaf holds one
    /// instance index (`count == 1`).
    #[inline]
    pub fn top_nodes(&self) -> &[BvhNode] {
        self.levels.as_ref().map_or(&[], |l| &l.top)
    }

    /// Depth of the tree over the instances (0 for a flat scene).
    #[inline]
    pub fn top_depth(&self) -> u32 {
        self.levels.as_ref().map_or(0, |l| l.top_depth)
    }

    /// The instances' device records, by instance index (empty for a flat
    /// scene; a removed instance's record is seen by no ray).
    #[inline]
    pub fn instances(&self) -> &[GpuInstance] {
        self.levels.as_ref().map_or(&[], |l| &l.records)
    }

    /// The instance at `index` as placed (`None` for a flat scene, an index
    /// past the last, or a removed instance).
    #[inline]
    pub fn instance(&self, index: u32) -> Option<crate::Instance> {
        self.levels.as_ref()?.instances.get(index as usize)?.get()
    }

    /// Number of geometries (1 for a flat scene: its own).
    #[inline]
    pub fn geometry_count(&self) -> usize {
        self.levels.as_ref().map_or(1, |l| l.blas.len())
    }

    /// Root node of geometry `geometry`'s tree in [`Accel::nodes`].
    #[inline]
    pub fn geometry_root(&self, geometry: u32) -> Option<u32> {
        self.geometry_nodes(geometry).map(|r| r.start as u32)
    }

    /// The nodes of geometry `geometry`'s tree: a range of [`Accel::nodes`]
    /// (its root first; a flat scene's one geometry is all of them).
    #[inline]
    pub fn geometry_nodes(&self, geometry: u32) -> Option<core::ops::Range<usize>> {
        match &self.levels {
            None => (geometry == 0).then_some(0..self.nodes.len()),
            Some(l) => l.blas.get(geometry as usize).map(Blas::node_range),
        }
    }

    /// The slots of geometry `geometry`: a range of [`Accel::primitives`].
    #[inline]
    pub fn geometry_slots(&self, geometry: u32) -> Option<core::ops::Range<usize>> {
        match &self.levels {
            None => (geometry == 0).then_some(0..self.prims.len()),
            Some(l) => l.blas.get(geometry as usize).map(Blas::prim_range),
        }
    }

    /// The triangles of geometry `geometry`'s mesh, by primitive id, and its
    /// current vertices (`None` unless the geometry is one indexed mesh of a
    /// two-level scene): what a device needs to rewrite the slots of a mesh
    /// from new vertices (slot `s` holds triangle `primitives()[s].id()`).
    #[inline]
    pub fn geometry_mesh(&self, geometry: u32) -> Option<(&[[u32; 3]], &[Vec3])> {
        let t = self
            .levels
            .as_ref()?
            .blas
            .get(geometry as usize)?
            .topology
            .as_ref()?;
        Some((&t.indices, &t.positions))
    }

    /// Closest hit; `Hit::prim` is the primitive id within its geometry,
    /// `Hit::instance` the instance (0 for a flat scene).
    #[inline]
    pub fn intersect(&self, ray: &Ray) -> Hit {
        let mut hit = self.intersect_slot(ray);
        if hit.is_hit() {
            // ok: the traversals only return slots of `prims`.
            hit.prim = self.prims[hit.prim as usize].id();
        }
        hit
    }

    /// Closest hit; `Hit::prim` is the leaf slot (what the integrators shade
    /// with), `Hit::instance` the instance.
    #[inline]
    pub fn intersect_slot(&self, ray: &Ray) -> Hit {
        let hf = self.heightfield_set();
        match &self.levels {
            None if ray.mask & 0xFF == 0 => Hit::MISS,
            None => closest_hit(&self.nodes, &self.prims, hf, ray),
            Some(l) => l.closest_hit(&self.nodes, &self.prims, hf, ray),
        }
    }

    /// Whether anything the ray sees lies on it within `(tmin, tmax)`.
    #[inline]
    pub fn occluded(&self, ray: &Ray) -> bool {
        let hf = self.heightfield_set();
        match &self.levels {
            None => ray.mask & 0xFF != 0 && any_hit(&self.nodes, &self.prims, hf, ray),
            Some(l) => l.any_hit(&self.nodes, &self.prims, hf, ray),
        }
    }
}
