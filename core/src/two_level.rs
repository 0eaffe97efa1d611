//! The two levels of a scene with instances: the geometries' trees (bottom
//! level), the instance records and the tree over their world boxes (top
//! level), the walk through both, and the refit of a geometry's tree.
//!
//! A walk starts in the top tree with the world ray. At a leaf it meets one
//! instance: if the ray's mask shares a bit with the instance's, the ray is
//! carried into object space by the instance's world-to-object rows
//! ([`object_ray`]) and walks the geometry's tree from its root, exactly as a
//! flat walk does, with the closest hit so far as its `tmax` (the direction is
//! not renormalised, so `t` is the same in both spaces). The hit keeps the
//! instance's index.

use crate::aabb::Aabb;
use crate::accel::triangle_record;
use crate::bvh::{COST_INTERSECT, COST_TRAVERSAL, sphere_bounds};
use crate::error::{Error, try_vec};
use crate::geometry::MeshTopology;
use crate::gpu::{
    BvhNode, EMPTY_CHILD, GpuInstance, KIND_HEIGHTFIELD, KIND_SPHERE, Primitive,
    TRAVERSAL_STACK_SIZE,
};
use crate::heightfield::Heightfields;
use crate::instance::{
    Instance, VACANT, from_rows, gpu_instance, rows, world_bounds, world_to_object,
};
use crate::intersect::{RayPre, ray_aabb_rows};
use crate::outline::Outline;
use crate::ray::{Hit, Ray};
use crate::top_level::{SAH_MAX_INSTANCES, TopLevelBuild, TopScratch, build_top};
use crate::traverse::{any_hit_at, closest_hit_at};
use crate::update::UpdateScratch;
use alloc::vec::Vec;
use glam::Vec3;

/// One geometry's tree inside [`crate::Accel`]'s arrays.
#[derive(Clone, Debug)]
pub(crate) struct Blas {
    /// First node (its root) and number of nodes in `Accel::nodes`.
    pub(crate) node_base: u32,
    pub(crate) node_count: u32,
    /// First slot and number of slots in `Accel::primitives`.
    pub(crate) prim_base: u32,
    pub(crate) prim_count: u32,
    /// Object-space bounds of the geometry.
    pub(crate) bounds: Aabb,
    /// Depth of the deepest leaf.
    pub(crate) depth: u32,
    /// SAH cost ([`sah_cost`]) of the tree as last built from scratch.
    pub(crate) built_cost: f32,
    /// The indexed mesh, when the geometry is one (its vertices can move).
    pub(crate) topology: Option<MeshTopology>,
    /// The slots and nodes lag the mesh's vertices (a device refit them).
    pub(crate) stale: bool,
    /// The boxes its instances' world boxes are made from (set where the
    /// world boxes are worked out afresh: at build and after new vertices).
    pub(crate) outline: Outline,
}

impl Blas {
    pub(crate) fn new(
        node_base: u32,
        node_count: u32,
        prim_base: u32,
        prim_count: u32,
        bounds: Aabb,
        depth: u32,
        topology: Option<MeshTopology>,
    ) -> Self {
        Blas {
            node_base,
            node_count,
            prim_base,
            prim_count,
            bounds,
            depth,
            built_cost: 0.0,
            topology,
            stale: false,
            outline: Outline::whole(bounds),
        }
    }

    /// The world box of an instance of this geometry placed by `transform`:
    /// by the outline when `outlined` ([`outlined`]), else by the bounds.
    #[inline]
    pub(crate) fn world_box(&self, transform: &glam::Affine3A, outlined: bool) -> Aabb {
        if outlined {
            self.outline.world_box(transform, &self.bounds)
        } else {
            world_bounds(transform, &self.bounds)
        }
    }

    /// Root node of the tree.
    #[inline]
    pub(crate) fn root(&self) -> u32 {
        self.node_base
    }

    /// The tree's nodes, as a range of `Accel::nodes`.
    #[inline]
    pub(crate) fn node_range(&self) -> core::ops::Range<usize> {
        self.node_base as usize..(self.node_base + self.node_count) as usize
    }

    /// The tree's slots, as a range of `Accel::primitives`.
    #[inline]
    pub(crate) fn prim_range(&self) -> core::ops::Range<usize> {
        self.prim_base as usize..(self.prim_base + self.prim_count) as usize
    }
}

/// An instance as the host keeps it: one cache line (the transform as rows),
/// a third less than an [`Instance`], which a frame that moves every instance
/// writes in full.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct HostInstance {
    rows: [[f32; 4]; 3],
    pub(crate) geometry: u32,
    user_id: u32,
    material: u32,
    pub(crate) mask: u8,
    /// False for a removed instance.
    pub(crate) live: bool,
    /// False while a device placed the instance's latest move and the host's
    /// record and world box lag it ([`TwoLevel::replace_all`]).
    pub(crate) placed: bool,
}

impl HostInstance {
    /// A removed instance.
    pub(crate) const VACANT: HostInstance = HostInstance {
        rows: [[0.0; 4]; 3],
        geometry: 0,
        user_id: 0,
        material: u32::MAX,
        mask: 0,
        live: false,
        placed: true,
    };

    /// The instance, if live.
    #[inline]
    pub(crate) fn get(&self) -> Option<Instance> {
        self.live.then(|| Instance {
            transform: from_rows(self.rows),
            geometry: self.geometry,
            mask: self.mask,
            user_id: self.user_id,
            material: (self.material != u32::MAX).then_some(self.material),
        })
    }

    /// The object-to-world transform.
    #[inline]
    pub(crate) fn transform(&self) -> glam::Affine3A {
        from_rows(self.rows)
    }

    /// Move the instance to `transform`.
    #[inline]
    pub(crate) fn set_transform(&mut self, transform: &glam::Affine3A) {
        self.rows = rows(transform);
    }

    /// Move the instance to `transform` as a device placed it: its record
    /// and world box on the host lag until [`TwoLevel::replace_all`].
    #[inline]
    pub(crate) fn set_device_transform(&mut self, transform: &glam::Affine3A) {
        self.rows = rows(transform);
        self.placed = false;
    }

    /// The material override, or [`GpuInstance::NO_MATERIAL`].
    #[inline]
    pub(crate) fn material(&self) -> u32 {
        self.material
    }
}

impl From<&Instance> for HostInstance {
    #[inline]
    fn from(inst: &Instance) -> Self {
        HostInstance {
            rows: rows(&inst.transform),
            geometry: inst.geometry,
            user_id: inst.user_id,
            material: inst.material.unwrap_or(u32::MAX),
            mask: inst.mask,
            live: true,
            placed: true,
        }
    }
}

/// The top level of a two-level [`crate::Accel`].
#[derive(Clone, Debug)]
pub(crate) struct TwoLevel {
    /// Every geometry's tree.
    pub(crate) blas: Vec<Blas>,
    /// The instances as placed, by index.
    pub(crate) instances: Vec<HostInstance>,
    /// Device records, by index.
    pub(crate) records: Vec<GpuInstance>,
    /// World box of each instance, by index (empty: removed).
    pub(crate) world: Vec<Aabb>,
    /// The tree over the live instances; a leaf is one instance index.
    pub(crate) top: Vec<BvhNode>,
    /// Depth of `top`.
    pub(crate) top_depth: u32,
    /// How `top` is built.
    pub(crate) build: TopLevelBuild,
    /// An update's work arrays, kept between updates.
    pub(crate) scratch: UpdateScratch,
    /// The top builder's work arrays, kept between builds.
    pub(crate) top_scratch: TopScratch,
    /// `records`, `world` and `top` lag moves a device placed
    /// ([`crate::placement`]); [`TwoLevel::replace_all`] makes them current.
    pub(crate) placement_stale: bool,
}

/// Whether a scene of `slots` instance indices built as `build` boxes its
/// instances by their geometries' outlines ([`Outline::world_box`]): where
/// its top tree is a SAH tree, built for the fastest walks, and a placement
/// may cost a few more box transforms. A Morton top tree (built for frames
/// that move thousands of instances, and the only kind a device places,
/// [`crate::placement`]) boxes each by its geometry's bounds alone, one
/// transform a placement. Counted in slots, live or not, which never shrink,
/// so that a scene switches at most once, from outlines to bounds.
#[inline]
pub(crate) fn outlined(build: TopLevelBuild, slots: usize) -> bool {
    match build {
        TopLevelBuild::Auto => slots <= SAH_MAX_INSTANCES,
        TopLevelBuild::Sah => true,
        TopLevelBuild::Morton => false,
    }
}

impl TwoLevel {
    /// The top level over `instances` (validated by the scene) of the trees
    /// `blas`.
    pub(crate) fn build(
        blas: Vec<Blas>,
        instances: &[Instance],
        build: TopLevelBuild,
    ) -> Result<TwoLevel, Error> {
        let n = instances.len();
        let mut levels = TwoLevel {
            blas,
            instances: try_vec(n, "instances")?,
            records: try_vec(n, "instance records")?,
            world: try_vec(n, "instance bounds")?,
            top: Vec::new(),
            top_depth: 0,
            build,
            scratch: UpdateScratch::default(),
            top_scratch: TopScratch::default(),
            placement_stale: false,
        };
        let outlined = outlined(build, n);
        for (i, inst) in instances.iter().enumerate() {
            let (record, world) = levels.place(i, inst, outlined)?;
            levels.instances.push(HostInstance::from(inst));
            levels.records.push(record);
            levels.world.push(world);
        }
        levels.rebuild_top()?;
        Ok(levels)
    }

    /// The device record and world box of `inst` as instance `index`, boxed
    /// by its geometry's outline when `outlined` (see [`outlined`]).
    pub(crate) fn place(
        &self,
        index: usize,
        inst: &Instance,
        outlined: bool,
    ) -> Result<(GpuInstance, Aabb), Error> {
        let material = inst.material.unwrap_or(GpuInstance::NO_MATERIAL);
        self.place_parts(
            index,
            &inst.transform,
            inst.geometry,
            inst.mask,
            material,
            outlined,
        )
    }

    /// Whether placements now box instances by their outlines ([`outlined`]).
    #[inline]
    pub(crate) fn outlined_now(&self) -> bool {
        outlined(self.build, self.instances.len())
    }

    /// [`TwoLevel::place`] from the instance's parts (`material`:
    /// [`GpuInstance::NO_MATERIAL`] for none).
    #[inline]
    pub(crate) fn place_parts(
        &self,
        index: usize,
        transform: &glam::Affine3A,
        geometry: u32,
        mask: u8,
        material: u32,
        outlined: bool,
    ) -> Result<(GpuInstance, Aabb), Error> {
        let blas = self
            .blas
            .get(geometry as usize)
            .ok_or(Error::GeometryOutOfRange {
                instance: index,
                geometry,
                count: self.blas.len(),
            })?;
        let inv = world_to_object(index, transform)?;
        Ok((
            gpu_instance(transform, mask, material, &inv, blas.root()),
            blas.world_box(transform, outlined),
        ))
    }

    /// [`TwoLevel::place_parts`] for live instance `index` moved to
    /// `transform`, with its own parts, boxed by the rule of the scene now.
    #[inline]
    pub(crate) fn place_moved(
        &self,
        index: usize,
        transform: &glam::Affine3A,
    ) -> Result<(GpuInstance, Aabb), Error> {
        let h = &self.instances[index];
        let outlined = self.outlined_now();
        self.place_parts(index, transform, h.geometry, h.mask, h.material(), outlined)
    }

    /// Work out the record and world box of every instance a device moved
    /// from its transform again, and the top tree, after moves a device
    /// placed (the same arithmetic, so the same bits as the device's: a
    /// device places only under a Morton top tree, which boxes an instance
    /// by its geometry's bounds, see [`outlined`]). The other instances keep
    /// theirs, as the device does.
    pub(crate) fn replace_all<F: crate::bvh::Fork>(
        &mut self,
        fork: Option<&F>,
    ) -> Result<(), Error> {
        for i in 0..self.instances.len() {
            let h = self.instances[i];
            if !h.live || h.placed {
                continue;
            }
            let (record, world) =
                self.place_parts(i, &h.transform(), h.geometry, h.mask, h.material(), false)?;
            self.records[i] = record;
            self.world[i] = world;
            self.instances[i].placed = true;
        }
        self.rebuild_top_with(fork)?;
        self.placement_stale = false;
        Ok(())
    }

    /// Remove instance `index` (its record seen by no ray, its box empty).
    pub(crate) fn vacate(&mut self, index: usize) {
        self.instances[index] = HostInstance::VACANT;
        self.records[index] = VACANT;
        self.world[index] = Aabb::EMPTY;
    }

    /// Rebuild the top tree from the live instances' world boxes.
    pub(crate) fn rebuild_top(&mut self) -> Result<(), Error> {
        self.rebuild_top_with(None::<&crate::bvh::Sequential>)
    }

    /// [`TwoLevel::rebuild_top`], its work spread through `fork` if given.
    pub(crate) fn rebuild_top_with<F: crate::bvh::Fork>(
        &mut self,
        fork: Option<&F>,
    ) -> Result<(), Error> {
        self.top_depth = build_top(
            &self.world,
            self.build,
            &mut self.top_scratch,
            &mut self.top,
            fork,
        )?;
        Ok(())
    }

    /// Union of the live instances' world boxes.
    pub(crate) fn world_bounds(&self) -> Aabb {
        self.world.iter().fold(Aabb::EMPTY, |a, b| a.union(*b))
    }

    /// Closest hit over both levels; `Hit::prim` is the slot.
    pub(crate) fn closest_hit(
        &self,
        nodes: &[BvhNode],
        prims: &[Primitive],
        hf: Heightfields<'_>,
        ray: &Ray,
    ) -> Hit {
        let mut best = Hit {
            t: ray.tmax,
            ..Hit::MISS
        };
        self.walk_top(ray, best.t, |index, record, tmax| {
            let object = object_ray(record, ray, tmax);
            let hit = closest_hit_at(nodes, record.root() as usize, prims, hf, &object);
            if hit.is_hit() {
                best = Hit {
                    instance: index,
                    ..hit
                };
            }
            (best.t, false)
        });
        if !best.is_hit() {
            best.t = f32::INFINITY;
        }
        best
    }

    /// Whether anything the ray sees lies on it, over both levels.
    pub(crate) fn any_hit(
        &self,
        nodes: &[BvhNode],
        prims: &[Primitive],
        hf: Heightfields<'_>,
        ray: &Ray,
    ) -> bool {
        let mut found = false;
        self.walk_top(ray, ray.tmax, |_, record, tmax| {
            let object = object_ray(record, ray, tmax);
            found = any_hit_at(nodes, record.root() as usize, prims, hf, &object);
            (tmax, found)
        });
        found
    }

    /// Walk the top tree with the world ray, nearer child first, calling
    /// `visit(index, record, tmax)` for each instance whose box the ray enters
    /// before `tmax` and whose mask it shares; `visit` returns the new `tmax`
    /// and whether to stop.
    #[inline(always)]
    fn walk_top(
        &self,
        ray: &Ray,
        tmax: f32,
        mut visit: impl FnMut(u32, &GpuInstance, f32) -> (f32, bool),
    ) {
        let pre = RayPre::new(ray);
        let tmin = ray.tmin;
        let mut tmax = tmax;
        let mut stack = [0u32; TRAVERSAL_STACK_SIZE];
        let mut sp = 0usize;
        let mut node = 0usize;
        let mut enter = |index: u32, tmax: &mut f32| -> bool {
            let Some(record) = self.records.get(index as usize) else {
                return false;
            };
            if ray.mask & record.mask() == 0 {
                return false;
            }
            let (t, stop) = visit(index, record, *tmax);
            *tmax = t;
            stop
        };
        while let Some(n) = self.top.get(node) {
            let tl = ray_aabb_rows(&pre, &n.left_lo, &n.left_hi, tmin, tmax);
            let tr = ray_aabb_rows(&pre, &n.right_lo, &n.right_hi, tmin, tmax);
            let (l_index, l_count, r_index, r_count) = (
                n.left_index(),
                n.left_count(),
                n.right_index(),
                n.right_count(),
            );
            let swap = tr < tl;
            let (mut t_near, near_index, near_count) = if swap {
                (tr, r_index, r_count)
            } else {
                (tl, l_index, l_count)
            };
            let (mut t_far, far_index, far_count) = if swap {
                (tl, l_index, l_count)
            } else {
                (tr, r_index, r_count)
            };
            // Instances (leaves of one) are entered right away, nearest first.
            if near_count > 0 {
                if t_near < tmax && enter(near_index, &mut tmax) {
                    return;
                }
                t_near = f32::INFINITY;
            }
            if far_count > 0 {
                if t_far < tmax && enter(far_index, &mut tmax) {
                    return;
                }
                t_far = f32::INFINITY;
            }
            let go_near = t_near < tmax;
            let go_far = t_far < tmax;
            if go_near && go_far {
                // ok: `sp` is checked against the stack size.
                if sp < TRAVERSAL_STACK_SIZE {
                    stack[sp] = far_index;
                    sp += 1;
                }
                node = near_index as usize;
            } else if go_near {
                node = near_index as usize;
            } else if go_far {
                node = far_index as usize;
            } else if sp > 0 {
                // ok: `sp` was at least 1.
                sp -= 1;
                node = stack[sp] as usize;
            } else {
                break;
            }
        }
    }
}

/// `ray` carried into the object space of `instance` (its world-to-object
/// rows), over `(ray.tmin, tmax)`. Each row is `((r.x o.x + r.y o.y) + r.z
/// o.z) + r.w` for a point and the same without `r.w` for the direction, every
/// product rounded on its own (the GPU mirrors keep them unfused), so every
/// backend enters an instance with the same ray.
#[inline(always)]
pub fn object_ray(instance: &GpuInstance, ray: &Ray, tmax: f32) -> Ray {
    let [r0, r1, r2] = instance.world_to_object;
    let (o, d) = (ray.origin, ray.dir);
    let point = |r: [f32; 4]| ((r[0] * o.x + r[1] * o.y) + r[2] * o.z) + r[3];
    let vector = |r: [f32; 4]| (r[0] * d.x + r[1] * d.y) + r[2] * d.z;
    Ray::segment(
        Vec3::new(point(r0), point(r1), point(r2)),
        Vec3::new(vector(r0), vector(r1), vector(r2)),
        ray.tmin,
        tmax,
    )
    .with_mask(ray.mask)
}

/// The point `p` carried into the object space of `instance`, as
/// [`object_ray`] carries a ray's origin.
#[inline(always)]
pub fn object_point(instance: &GpuInstance, p: Vec3) -> Vec3 {
    let [r0, r1, r2] = instance.world_to_object;
    let point = |r: [f32; 4]| ((r[0] * p.x + r[1] * p.y) + r[2] * p.z) + r[3];
    Vec3::new(point(r0), point(r1), point(r2))
}

/// A surface normal `n` in the object space of `instance`, carried into the
/// world: the transpose of the world-to-object part (not normalised).
#[inline(always)]
pub fn world_normal(instance: &GpuInstance, n: Vec3) -> Vec3 {
    let [r0, r1, r2] = instance.world_to_object;
    Vec3::new(
        (r0[0] * n.x + r1[0] * n.y) + r2[0] * n.z,
        (r0[1] * n.x + r1[1] * n.y) + r2[1] * n.z,
        (r0[2] * n.x + r1[2] * n.y) + r2[2] * n.z,
    )
}

/// The box of one primitive record.
#[inline(always)]
pub(crate) fn primitive_bounds(p: &Primitive) -> Aabb {
    let xyz = |r: [f32; 4]| Vec3::new(r[0], r[1], r[2]);
    if p.kind() == KIND_SPHERE {
        sphere_bounds(xyz(p.a), p.b[0])
    } else if p.kind() == KIND_HEIGHTFIELD {
        Aabb {
            min: xyz(p.a),
            max: xyz(p.b),
        }
    } else {
        let (a, b, c) = (xyz(p.a), xyz(p.b), xyz(p.c));
        Aabb {
            min: a.min(b).min(c),
            max: a.max(b).max(c),
        }
    }
}

/// A mesh geometry's triangles as its slots hold them, for [`refit`] to
/// rewrite the slots from the mesh's vertices.
pub(crate) struct MeshSlots<'a> {
    /// The mesh.
    pub(crate) mesh: &'a MeshTopology,
    /// The geometry's slots (a range of the primitive array).
    pub(crate) slots: core::ops::Range<usize>,
}

/// Recompute the boxes of the tree whose nodes are `nodes[range]` (indices
/// into all of `nodes`, every inner child after its parent, as core's builder
/// makes them) bottom-up from the primitive records `prims`; the shape stays.
/// For a geometry of one indexed mesh (`mesh`), each leaf's slots are first
/// rewritten from the mesh's current vertices (the record of the triangle of
/// the slot's id), in the same pass: a slot is read and written once, while
/// its cache line is at hand. Returns the root's box.
///
/// The slots' triangles are gathered first, in slot order, by a loop that
/// does nothing else: a slot's id names a triangle anywhere in the mesh, and
/// a loop that only fetches them keeps many such fetches in flight at once.
pub(crate) fn refit(
    nodes: &mut [BvhNode],
    range: core::ops::Range<usize>,
    prims: &mut [Primitive],
    mesh: Option<MeshSlots>,
) -> Aabb {
    let mut gathered = Vec::new();
    if let Some(m) = &mesh {
        let slots = prims.get(m.slots.clone()).unwrap_or_default();
        // Without the memory for the list, each slot fetches its own triangle.
        if gathered.try_reserve_exact(slots.len()).is_ok() {
            // ok: a mesh geometry's primitive ids are its triangle indices.
            gathered.extend(slots.iter().map(|p| m.mesh.indices[p.id() as usize]));
        }
    }
    let mesh = mesh.as_ref().map(|m| (m, gathered.as_slice()));
    let first = range.start;
    for i in range.rev() {
        let Some(&n) = nodes.get(i) else { continue };
        let left = child_box(nodes, prims, mesh, n.left_index(), n.left_count());
        let right = child_box(nodes, prims, mesh, n.right_index(), n.right_count());
        let node = &mut nodes[i];
        if let Some(b) = left {
            set_rows(&mut node.left_lo, &mut node.left_hi, &b);
        }
        if let Some(b) = right {
            set_rows(&mut node.right_lo, &mut node.right_hi, &b);
        }
    }
    nodes.get(first).map_or(Aabb::EMPTY, node_box)
}

/// The box of one child (`index`, `count`) of a node being refit: an inner
/// node's (refit already, as it comes after its parent), or a leaf's, its
/// slots rewritten from `mesh` first where one is given (with the triangles
/// of its slots gathered in slot order, or an empty list). `None` for an
/// absent child, or one outside the arrays (its rows stay as they are).
#[inline(always)]
fn child_box(
    nodes: &[BvhNode],
    prims: &mut [Primitive],
    mesh: Option<(&MeshSlots, &[[u32; 3]])>,
    index: u32,
    count: u32,
) -> Option<Aabb> {
    if index == EMPTY_CHILD {
        return None;
    }
    if count == 0 {
        return nodes.get(index as usize).map(node_box);
    }
    let (first, end) = (index as usize, index as usize + count as usize);
    let leaf = prims.get_mut(first..end)?;
    Some(match mesh {
        None => leaf
            .iter()
            .fold(Aabb::EMPTY, |acc, p| acc.union(primitive_bounds(p))),
        Some((m, gathered)) => {
            let at = first.wrapping_sub(m.slots.start);
            let tris = gathered.get(at..at.wrapping_add(leaf.len()));
            let mut acc = Aabb::EMPTY;
            for (k, slot) in leaf.iter_mut().enumerate() {
                let id = slot.id();
                // ok: a mesh geometry's primitive ids are its triangle
                // indices, checked against its vertex count when it was
                // made (new vertices keep the count).
                let [a, b, c] = match tris {
                    Some(t) => t[k],
                    None => m.mesh.indices[id as usize],
                };
                let p = &m.mesh.positions;
                *slot = triangle_record(id, p[a as usize], p[b as usize], p[c as usize]);
                acc = acc.union(primitive_bounds(slot));
            }
            acc
        }
    })
}

#[inline(always)]
fn set_rows(lo: &mut [f32; 4], hi: &mut [f32; 4], b: &Aabb) {
    lo[..3].copy_from_slice(&b.min.to_array());
    hi[..3].copy_from_slice(&b.max.to_array());
}

/// The union of a node's two child boxes (an absent child adds nothing).
#[inline(always)]
pub(crate) fn node_box(n: &BvhNode) -> Aabb {
    let side = |lo: [f32; 4], hi: [f32; 4], index: u32| {
        if index == EMPTY_CHILD {
            Aabb::EMPTY
        } else {
            Aabb {
                min: Vec3::new(lo[0], lo[1], lo[2]),
                max: Vec3::new(hi[0], hi[1], hi[2]),
            }
        }
    };
    side(n.left_lo, n.left_hi, n.left_index()).union(side(n.right_lo, n.right_hi, n.right_index()))
}

/// The SAH cost of the tree rooted at `root` whose nodes follow it
/// contiguously up to the last one reached (core's builders number a subtree
/// so): `COST_TRAVERSAL` per node step and `COST_INTERSECT` per primitive
/// test, each weighted by the chance that a random ray through the root's box
/// (`bounds`) enters the box (the ratio of surface areas). The cost of a
/// refit tree against that of a fresh build of the same primitives says how
/// much slower it traces (see [`crate::Accel::geometry_sah`]).
pub(crate) fn sah_cost(nodes: &[BvhNode], root: u32, bounds: Aabb) -> f32 {
    let area = bounds.half_area() as f64;
    if area.is_nan() || area <= 0.0 {
        return COST_TRAVERSAL;
    }
    let mut cost = COST_TRAVERSAL as f64;
    let mut stack = alloc::vec![root];
    while let Some(i) = stack.pop() {
        let Some(n) = nodes.get(i as usize) else {
            continue;
        };
        for (lo, hi, index, count) in [
            (n.left_lo, n.left_hi, n.left_index(), n.left_count()),
            (n.right_lo, n.right_hi, n.right_index(), n.right_count()),
        ] {
            if index == EMPTY_CHILD {
                continue;
            }
            let b = Aabb {
                min: Vec3::new(lo[0], lo[1], lo[2]),
                max: Vec3::new(hi[0], hi[1], hi[2]),
            };
            let p = b.half_area() as f64 / area;
            if count > 0 {
                cost += COST_INTERSECT as f64 * count as f64 * p;
            } else {
                cost += COST_TRAVERSAL as f64 * p;
                stack.push(index);
            }
        }
    }
    cost as f32
}
