//! Updates of a two-level scene without a rebuild: instances moved, masked,
//! added and removed, meshes given new vertices (their trees refit) or
//! rebuilt. [`crate::Accel::update`] applies a [`SceneUpdate`] to the host's
//! copy and says what changed ([`Changes`]), so that each backend uploads
//! only that.
//!
//! # Refit or rebuild
//!
//! New vertices keep a mesh's tree and recompute its boxes bottom-up (a
//! refit): some ten times cheaper than a build, and as good as one while the
//! mesh keeps its shape (a skinned character walking). When the vertices
//! travel far from where the tree was built (an explosion, a cloth folding
//! over), the boxes overlap more and more and every ray pays for it.
//! [`crate::Accel::geometry_sah`] gives the tree's SAH cost against that of
//! its last full build: the expected node steps and primitive tests of a ray,
//! so the ratio is the slowdown a ray sees. A ratio above about 1.3 is where a
//! rebuild ([`SceneUpdate::rebuild`]) usually pays for itself within a few
//! frames: a rebuild costs some ten refits, while every ray of every frame
//! pays the ratio (a rule of thumb; the break-even point is the frame's ray
//! count times the ratio's excess against the build's time).

use crate::aabb::Aabb;
use crate::accel::{Accel, offset_nodes};
use crate::bvh::{Bvh, Fork, Sequential};
use crate::error::{Error, try_vec};
use crate::gpu::{BvhNode, EMPTY_CHILD, GpuInstance, Primitive};
use crate::instance::{Instance, MAX_INSTANCES, VACANT};
use crate::outline::Outline;
use crate::two_level::{
    Blas, HostInstance, MeshSlots, TwoLevel, outlined, primitive_bounds, refit, sah_cost,
};
use alloc::vec::Vec;
use glam::{Affine3A, Vec3};

/// What changes in a two-level scene between two frames; applied in one call
/// ([`crate::Backend::update_scene`], [`crate::Accel::update`]) that checks
/// everything first and leaves the scene as it was when anything is wrong.
///
/// Within one update, removals come first, then additions (which take the
/// lowest free indices, then new ones at the end), then new transforms and
/// masks, then new vertices and rebuilds; the top tree is rebuilt once at the
/// end when any instance moved, came or went.
///
/// ```
/// use prism_core::glam::{Affine3A, Vec3};
/// use prism_core::{Accel, Geometry, Instance, Material, Ray, Scene, SceneUpdate};
///
/// let mut scene = Scene::new();
/// let m = scene.add_material(Material::lambertian(Vec3::ONE));
/// let mut ball = Geometry::new();
/// ball.add_sphere(Vec3::ZERO, 1.0, m);
/// let ball = scene.add_geometry(ball);
/// scene.add_instance(Instance::new(ball, Affine3A::from_translation(Vec3::new(0.0, 0.0, -5.0))));
/// let mut accel = Accel::build(&scene)?;
///
/// // Next frame: the ball moves away, a second one comes in.
/// let mut update = SceneUpdate::new();
/// update.set_transform(0, Affine3A::from_translation(Vec3::new(0.0, 0.0, -9.0)));
/// update.add_instance(Instance::new(ball, Affine3A::from_translation(Vec3::new(0.0, 3.0, -5.0))));
/// let changes = accel.update(&update)?;
/// assert_eq!(changes.added, vec![1]);
/// let hit = accel.intersect(&Ray::new(Vec3::ZERO, Vec3::NEG_Z));
/// assert!((hit.t - 8.0).abs() < 1e-5);
/// # Ok::<(), prism_core::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct SceneUpdate<'a> {
    pub(crate) remove: Vec<u32>,
    pub(crate) add: Vec<Instance>,
    pub(crate) transforms: Vec<(u32, Affine3A)>,
    pub(crate) masks: Vec<(u32, u8)>,
    pub(crate) vertices: Vec<(u32, &'a [Vec3])>,
    pub(crate) rebuild: Vec<u32>,
}

impl<'a> SceneUpdate<'a> {
    /// An update that changes nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of moves ([`SceneUpdate::set_transform`] calls) in the update.
    pub fn move_count(&self) -> usize {
        self.transforms.len()
    }

    /// Whether the update changes nothing.
    pub fn is_empty(&self) -> bool {
        self.remove.is_empty()
            && self.add.is_empty()
            && self.transforms.is_empty()
            && self.masks.is_empty()
            && self.vertices.is_empty()
            && self.rebuild.is_empty()
    }

    /// Move instance `instance` to `transform` (object to world).
    pub fn set_transform(&mut self, instance: u32, transform: Affine3A) -> &mut Self {
        self.transforms.push((instance, transform));
        self
    }

    /// Give instance `instance` the visibility mask `mask`.
    pub fn set_mask(&mut self, instance: u32, mask: u8) -> &mut Self {
        self.masks.push((instance, mask));
        self
    }

    /// Give the mesh of geometry `geometry` new vertex positions, as many as
    /// it has (same triangles); its tree is refit. Every position must be
    /// finite.
    pub fn set_vertices(&mut self, geometry: u32, positions: &'a [Vec3]) -> &mut Self {
        self.vertices.push((geometry, positions));
        self
    }

    /// Build geometry `geometry`'s tree afresh over its current primitives
    /// (after many refits, see the [module docs](self)).
    pub fn rebuild(&mut self, geometry: u32) -> &mut Self {
        self.rebuild.push(geometry);
        self
    }

    /// Place one more instance; [`Changes::added`] gives its index.
    pub fn add_instance(&mut self, instance: Instance) -> &mut Self {
        self.add.push(instance);
        self
    }

    /// Place many more instances. Fails, adding nothing to the update, when
    /// it would add more than [`MAX_INSTANCES`] (checked from the iterator's
    /// length before any instance is read).
    pub fn add_instances<I>(&mut self, instances: I) -> Result<&mut Self, Error>
    where
        I: IntoIterator<Item = Instance>,
        I::IntoIter: ExactSizeIterator,
    {
        let iter = instances.into_iter();
        let count = self.add.len().saturating_add(iter.len());
        if count > MAX_INSTANCES {
            return Err(Error::TooManyInstances {
                count,
                limit: MAX_INSTANCES,
            });
        }
        self.add
            .try_reserve(iter.len())
            .map_err(|_| Error::HostOutOfMemory {
                what: "instances",
                bytes: (iter.len() as u64).saturating_mul(size_of::<Instance>() as u64),
            })?;
        self.add.extend(iter);
        Ok(self)
    }

    /// Remove instance `instance`; its index becomes free for a later
    /// addition.
    pub fn remove_instance(&mut self, instance: u32) -> &mut Self {
        self.remove.push(instance);
        self
    }
}

/// What an update changed, for a backend to upload only that.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// The indices the added instances were given, in the order they were added.
    pub added: Vec<u32>,
    /// The instance records that changed lie in this range of
    /// [`crate::Accel::instances`] (it may hold unchanged ones too); `None`
    /// when none did. The array may have grown (see [`Changes::resized`]).
    pub instances: Option<core::ops::Range<u32>>,
    /// Whether the instance array changed length (added past its end).
    pub resized: bool,
    /// Whether the top tree was rebuilt ([`crate::Accel::top_nodes`]).
    pub top_rebuilt: bool,
    /// Geometries whose vertices changed: their slots and nodes (refit on the
    /// host, or left for the device, see [`RefitOn`]).
    pub refit: Vec<u32>,
    /// Whether a geometry was rebuilt: every geometry's nodes, slots and
    /// slot materials may have moved, and every instance record with them.
    pub rebuilt: bool,
}

/// Where [`crate::Accel::update_with`] refits a geometry's tree after new
/// vertices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RefitOn {
    /// On the host: the slots and nodes of [`crate::Accel`] are made current
    /// (and a backend uploads them).
    #[default]
    Host,
    /// By the backend, in its own copy of the trees (a GPU on its device, the
    /// CPU backend in its wide trees): the host keeps the new vertices and the
    /// geometry's new bounds (for the top tree), and leaves its slots and
    /// nodes as they were until [`crate::Accel::refresh`].
    Device,
}

/// New vertices for a geometry, checked against its mesh.
fn check_vertices(levels: &TwoLevel, geometry: u32, positions: &[Vec3]) -> Result<(), Error> {
    let Some(blas) = levels.blas.get(geometry as usize) else {
        return Err(Error::UnknownGeometry {
            geometry,
            count: levels.blas.len(),
        });
    };
    let Some(topology) = blas.topology.as_ref() else {
        return Err(Error::NotAMesh { geometry });
    };
    if positions.len() != topology.positions.len() {
        return Err(Error::VertexCountMismatch {
            geometry,
            given: positions.len(),
            expected: topology.positions.len(),
        });
    }
    if let Some(vertex) = positions.iter().position(|p| !p.is_finite()) {
        return Err(Error::in_geometry(
            geometry as usize,
            Error::VertexNotFinite {
                mesh: 0,
                triangle: topology
                    .indices
                    .iter()
                    .position(|t| t.contains(&(vertex as u32)))
                    .unwrap_or(usize::MAX),
                vertex,
                // ok: `position` found `vertex` in `positions`.
                position: positions[vertex].to_array(),
            },
        ));
    }
    Ok(())
}

/// The bounds of `positions`.
fn positions_bounds(positions: &[Vec3]) -> Aabb {
    positions.iter().fold(Aabb::EMPTY, |b, &p| b.grow(p))
}

impl Accel {
    /// Apply `update`, refitting on the host ([`RefitOn::Host`]); see
    /// [`Accel::update_with`].
    pub fn update(&mut self, update: &SceneUpdate) -> Result<Changes, Error> {
        self.update_with(update, RefitOn::Host)
    }

    /// Apply `update` to a two-level scene and say what changed. Everything
    /// is checked first: on an error (naming the bad item) the scene is as it
    /// was. [`Error::NotTwoLevel`] for a flat scene.
    ///
    /// The work arrays of an update are kept from one update to the next, so
    /// that an engine's frames allocate nothing once the scene has stopped
    /// growing.
    pub fn update_with(&mut self, update: &SceneUpdate, refit: RefitOn) -> Result<Changes, Error> {
        self.update_in(update, refit, None::<&Sequential>)
    }

    /// [`Accel::update_with`], with the work of large updates spread through
    /// `fork` (a thread pool's `join`, see [`Fork`]): the new records and
    /// world boxes of at least [`FORK_MIN_MOVES`] moved instances, and the
    /// top tree's build. The result is the same, bit for bit.
    pub fn update_with_fork<F: Fork>(
        &mut self,
        update: &SceneUpdate,
        refit: RefitOn,
        fork: &F,
    ) -> Result<Changes, Error> {
        self.update_in(update, refit, Some(fork))
    }

    fn update_in<F: Fork>(
        &mut self,
        update: &SceneUpdate,
        refit: RefitOn,
        fork: Option<&F>,
    ) -> Result<Changes, Error> {
        let material_count = self.materials().len();
        let quality = self.quality;
        let Some(levels) = self.levels.as_deref_mut() else {
            return Err(Error::NotTwoLevel);
        };
        if levels.placement_stale {
            levels.replace_all(fork)?;
        }
        let mut scratch = core::mem::take(&mut levels.scratch);
        let result = apply(
            &mut self.nodes,
            &mut self.prims,
            &mut self.slot_material,
            levels,
            &mut scratch,
            update,
            refit,
            material_count,
            fork,
            quality,
        );
        levels.scratch = scratch;
        let changes = result?;
        if changes.top_rebuilt {
            levels.rebuild_top_with(fork)?;
        }
        self.depth = levels.blas.iter().map(|b| b.depth).max().unwrap_or(0);
        self.bounds = levels.world_bounds();
        Ok(changes)
    }

    /// Make every geometry tree that a device refit ([`RefitOn::Device`])
    /// left behind on the host current again (its slots from its vertices,
    /// its boxes refit).
    ///
    /// Moves a device placed ([`crate::placement`]) are not made current
    /// here: see [`Accel::try_refresh`].
    pub fn refresh(&mut self) {
        if let Some(levels) = self.levels.as_deref_mut() {
            for blas in &mut levels.blas {
                if blas.stale {
                    refresh_geometry(&mut self.nodes, &mut self.prims, blas);
                }
            }
        }
    }

    /// [`Accel::refresh`], and the instance records, world boxes and top tree
    /// made current after moves a device placed
    /// ([`Accel::commit_device_moves`]). Fails only when the host runs out
    /// of memory for the top tree (the scene then stays stale, and the next
    /// call tries again).
    pub fn try_refresh(&mut self) -> Result<(), Error> {
        self.refresh();
        if let Some(levels) = self.levels.as_deref_mut()
            && levels.placement_stale
        {
            levels.replace_all(None::<&Sequential>)?;
            self.bounds = levels.world_bounds();
        }
        Ok(())
    }

    /// The SAH cost of geometry `geometry`'s tree now and as last built from
    /// scratch: their ratio is how much slower a ray walks it since (see the
    /// [module docs](self) for when a rebuild pays). `None` for a flat scene,
    /// a geometry past the last, or a tree whose refit was left to a device
    /// (see [`Accel::refresh`]).
    pub fn geometry_sah(&self, geometry: u32) -> Option<GeometrySah> {
        let blas = self.levels.as_ref()?.blas.get(geometry as usize)?;
        if blas.stale {
            return None;
        }
        Some(GeometrySah {
            current: sah_cost(&self.nodes, blas.root(), blas.bounds),
            built: blas.built_cost,
        })
    }
}

/// The SAH cost of a geometry's tree now, and as last built from scratch
/// ([`Accel::geometry_sah`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GeometrySah {
    /// Expected node steps plus primitive tests of a ray through the
    /// geometry's box, for the tree as it is.
    pub current: f32,
    /// The same for the tree as last built from scratch.
    pub built: f32,
}

impl GeometrySah {
    /// `current / built`: how much slower a ray walks the tree than just after
    /// its build (1 for a fresh tree).
    pub fn ratio(&self) -> f32 {
        self.current / self.built
    }
}

/// `v` emptied and filled with `n` copies of `value`, keeping its room.
fn refill<T: Clone>(v: &mut Vec<T>, n: usize, value: T, what: &'static str) -> Result<(), Error> {
    v.clear();
    v.try_reserve(n).map_err(|_| Error::HostOutOfMemory {
        what,
        bytes: (n as u64).saturating_mul(size_of::<T>() as u64),
    })?;
    v.resize(n, value);
    Ok(())
}

/// An instance's new device record and world box, worked out before anything
/// changes (its new transform is the update's, or its addition's).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Placed {
    index: u32,
    /// Which addition (`< update.add.len()`) or transform (the rest) of the
    /// update it comes from.
    source: u32,
    /// The instance's geometry, mask and material override as they stand
    /// at this entry (a later transform of the same instance keeps them).
    geometry: u32,
    material: u32,
    mask: u8,
    record: GpuInstance,
    world: Aabb,
}

/// The work arrays of an update, kept between updates.
#[derive(Clone, Debug, Default)]
pub(crate) struct UpdateScratch {
    /// Whether each instance is live after the removals and additions.
    live: Vec<bool>,
    /// One past each instance's latest entry in `placed` (0: unchanged).
    latest: Vec<u32>,
    /// New states of added and moved instances.
    placed: Vec<Placed>,
    /// New records and world boxes of moves worked out on several threads.
    moved: Vec<(GpuInstance, Aabb)>,
    /// One bit an instance, for repeated moves ([`crate::placement`]).
    pub(crate) marks: Vec<u64>,
}

/// [`Accel::update_with`] up to the top tree's rebuild (which the caller
/// runs when `Changes::top_rebuilt` says so).
#[allow(clippy::too_many_arguments)]
fn apply<F: Fork>(
    nodes: &mut Vec<BvhNode>,
    prims: &mut [Primitive],
    slot_material: &mut [u32],
    levels: &mut TwoLevel,
    scratch: &mut UpdateScratch,
    update: &SceneUpdate,
    refit: RefitOn,
    material_count: usize,
    fork: Option<&F>,
    quality: crate::lbvh::BuildQuality,
) -> Result<Changes, Error> {
    if update.remove.is_empty() && update.add.is_empty() && update.rebuild.is_empty() {
        return apply_moves(nodes, prims, levels, scratch, update, refit, fork);
    }
    let mut changes = Changes::default();
    // --- Check, and work out the new instance states aside. ----------------
    let old_len = levels.instances.len();
    let free_after_removal = {
        refill(&mut scratch.live, old_len, false, "instance list")?;
        for (l, inst) in scratch.live.iter_mut().zip(&levels.instances) {
            *l = inst.live;
        }
        for &i in &update.remove {
            match scratch.live.get_mut(i as usize) {
                None => {
                    return Err(Error::InstanceOutOfRange {
                        instance: i,
                        reason: "past the last instance",
                    });
                }
                Some(false) => {
                    return Err(Error::InstanceOutOfRange {
                        instance: i,
                        reason: "removed, or removed twice in one update",
                    });
                }
                Some(l) => *l = false,
            }
        }
        scratch.live.iter().filter(|l| !**l).count()
    };
    let live_count = old_len - free_after_removal;
    let total = live_count.saturating_add(update.add.len());
    if total > MAX_INSTANCES {
        return Err(Error::TooManyInstances {
            count: total,
            limit: MAX_INSTANCES,
        });
    }
    scratch.placed.clear();
    scratch
        .placed
        .try_reserve(update.add.len() + update.transforms.len())
        .map_err(|_| Error::HostOutOfMemory {
            what: "instance updates",
            bytes: ((update.add.len() + update.transforms.len()) * size_of::<Placed>()) as u64,
        })?;
    // Additions take the lowest free indices, then new ones at the end.
    let mut free_cursor = 0usize;
    let mut next = old_len as u32;
    for (source, inst) in update.add.iter().enumerate() {
        while free_cursor < old_len && scratch.live[free_cursor] {
            free_cursor += 1;
        }
        let index = if free_cursor < old_len {
            free_cursor += 1;
            (free_cursor - 1) as u32
        } else {
            next += 1;
            next - 1
        };
        inst.validate(index as usize, levels.blas.len(), material_count)?;
        let (record, world) = levels.place(index as usize, inst, levels.outlined_now())?;
        scratch.placed.push(Placed {
            index,
            source: source as u32,
            geometry: inst.geometry,
            material: inst.material.unwrap_or(GpuInstance::NO_MATERIAL),
            mask: inst.mask,
            record,
            world,
        });
        changes.added.push(index);
        // Taken: the cursor must not hand it out again.
        if (index as usize) < old_len {
            scratch.live[index as usize] = true;
        }
    }
    let new_len = next as usize;
    scratch.live.resize(new_len, true);
    let live = &scratch.live;
    let check_live = |i: u32| -> Result<(), Error> {
        match live.get(i as usize) {
            Some(true) => Ok(()),
            Some(false) => Err(Error::InstanceOutOfRange {
                instance: i,
                reason: "removed",
            }),
            None => Err(Error::InstanceOutOfRange {
                instance: i,
                reason: "past the last instance",
            }),
        }
    };
    if !update.transforms.is_empty() {
        refill(&mut scratch.latest, new_len, 0, "instance update list")?;
        for (k, p) in scratch.placed.iter().enumerate() {
            scratch.latest[p.index as usize] = k as u32 + 1;
        }
    }
    for (k, &(i, transform)) in update.transforms.iter().enumerate() {
        check_live(i)?;
        // The instance's parts as they stand: an earlier entry's, or the scene's.
        let (geometry, mask, material) = match scratch.latest[i as usize] {
            0 => {
                let h = &levels.instances[i as usize];
                (h.geometry, h.mask, h.material())
            }
            k => {
                let p = &scratch.placed[k as usize - 1];
                (p.geometry, p.mask, p.material)
            }
        };
        let (record, world) = levels.place_parts(
            i as usize,
            &transform,
            geometry,
            mask,
            material,
            levels.outlined_now(),
        )?;
        scratch.placed.push(Placed {
            index: i,
            source: (update.add.len() + k) as u32,
            geometry,
            material,
            mask,
            record,
            world,
        });
        scratch.latest[i as usize] = scratch.placed.len() as u32;
    }
    for &(i, _) in &update.masks {
        check_live(i)?;
    }
    for &(g, positions) in &update.vertices {
        check_vertices(levels, g, positions)?;
    }
    for &g in &update.rebuild {
        if g as usize >= levels.blas.len() {
            return Err(Error::UnknownGeometry {
                geometry: g,
                count: levels.blas.len(),
            });
        }
    }
    // Room for the longer arrays, before anything changes.
    let grow = new_len.saturating_sub(old_len);
    let room = |what| Error::HostOutOfMemory {
        what,
        bytes: (grow as u64) * size_of::<GpuInstance>() as u64,
    };
    levels
        .instances
        .try_reserve(grow)
        .map_err(|_| room("instances"))?;
    levels
        .records
        .try_reserve(grow)
        .map_err(|_| room("instance records"))?;
    levels
        .world
        .try_reserve(grow)
        .map_err(|_| room("instance bounds"))?;
    if !update.rebuild.is_empty() {
        // The one step that allocates much: done before anything changes.
        let stale: Vec<u32> = update.rebuild.clone();
        for &g in &stale {
            let blas = &mut levels.blas[g as usize];
            if blas.stale {
                refresh_geometry(nodes, prims, blas);
            }
        }
        rebuild_geometries(
            nodes,
            prims,
            slot_material,
            levels,
            &update.rebuild,
            quality,
        )?;
        changes.rebuilt = true;
    }
    // --- Apply (nothing below fails). ---------------------------------------
    let mut touched = (u32::MAX, 0u32);
    let mut touch = |i: u32| touched = (touched.0.min(i), touched.1.max(i + 1));
    if changes.rebuilt {
        touch(0);
    }
    for &i in &update.remove {
        levels.vacate(i as usize);
        touch(i);
    }
    levels.instances.resize(new_len, HostInstance::VACANT);
    levels.records.resize(new_len, VACANT);
    levels.world.resize(new_len, Aabb::EMPTY);
    changes.resized = new_len != old_len;
    for p in &scratch.placed {
        let host = &mut levels.instances[p.index as usize];
        match update.add.get(p.source as usize) {
            Some(added) => *host = HostInstance::from(added),
            // ok: a transform's `source` is `add.len()` plus its index in
            // `transforms`; an added instance's entry came before it.
            None => host.set_transform(&update.transforms[p.source as usize - update.add.len()].1),
        }
        // The root as it is now: a geometry rebuilt in this same update
        // moved its tree after `p.record` was worked out.
        let mut record = p.record;
        record.info[0] = f32::from_bits(levels.blas[p.geometry as usize].root());
        levels.records[p.index as usize] = record;
        levels.world[p.index as usize] = p.world;
        touch(p.index);
    }
    let moved =
        !update.remove.is_empty() || !update.add.is_empty() || !update.transforms.is_empty();
    finish(
        nodes,
        prims,
        levels,
        update,
        refit,
        &mut changes,
        touched,
        moved,
        new_len,
    );
    Ok(changes)
}

/// The steps every update ends with, none of which fails: new masks, new
/// vertices (refit here or left to the device, new world boxes), and what
/// changed: the range of touched records (`touched`, extended here), whether
/// the top tree must be rebuilt (`moved`: an instance moved, came or went).
#[allow(clippy::too_many_arguments)]
fn finish(
    nodes: &mut [BvhNode],
    prims: &mut [Primitive],
    levels: &mut TwoLevel,
    update: &SceneUpdate,
    refit: RefitOn,
    changes: &mut Changes,
    mut touched: (u32, u32),
    moved: bool,
    new_len: usize,
) {
    let mut touch = |i: u32| touched = (touched.0.min(i), touched.1.max(i + 1));
    for &(i, mask) in &update.masks {
        levels.instances[i as usize].mask = mask;
        levels.records[i as usize].info[1] = f32::from_bits(mask as u32);
        touch(i);
    }
    let mut top_dirty = moved;
    for &(g, positions) in &update.vertices {
        let blas = &mut levels.blas[g as usize];
        if let Some(topology) = blas.topology.as_mut() {
            topology.positions.copy_from_slice(positions);
        }
        blas.stale = true;
        blas.bounds = positions_bounds(positions);
        // The outline follows the refit tree; a tree a device refits lags
        // its vertices on the host, so its instances are boxed by the
        // vertices' bounds alone.
        blas.outline = if refit == RefitOn::Host {
            refresh_geometry(nodes, prims, blas);
            Outline::of_tree(nodes, blas.root(), blas.bounds)
        } else {
            Outline::whole(blas.bounds)
        };
        changes.refit.push(g);
        // Every instance of the geometry has a new world box.
        let blas = &levels.blas[g as usize];
        let outlined = outlined(levels.build, levels.instances.len());
        for (world, inst) in levels.world.iter_mut().zip(&levels.instances) {
            if inst.live && inst.geometry == g {
                *world = blas.world_box(&inst.transform(), outlined);
            }
        }
        top_dirty = true;
    }
    if changes.rebuilt {
        top_dirty = true;
        touch(0);
        touch(new_len.saturating_sub(1) as u32);
    }
    changes.top_rebuilt = top_dirty;
    if touched.0 < touched.1 {
        changes.instances = Some(touched.0..touched.1.min(new_len as u32));
    }
}

/// Smallest number of moved instances whose new records
/// [`Accel::update_with_fork`] works out on several threads: below it a
/// frame's placements take some tens of microseconds, which a task switch
/// would eat.
pub const FORK_MIN_MOVES: usize = 2048;

/// Fewest moves of a piece of a forked update's placements: a list is halved
/// until its pieces are shorter than twice this. Some 512 placements take 30
/// to 50 microseconds on one core, several times a task's start on a pool;
/// 10,000 moves make 16 pieces, work for a 16-core host's threads (pieces of
/// 1,024 to 2,047 made 8).
pub const FORK_MOVES_PIECE: usize = 512;

/// The new record and world box of every move into `out` (one entry each),
/// the halves of a long list through `fork`; the first refused transform (in
/// the list's order) is the error.
fn place_moves<F: Fork>(
    levels: &TwoLevel,
    moves: &[(u32, Affine3A)],
    out: &mut [(GpuInstance, Aabb)],
    fork: &F,
) -> Result<(), Error> {
    if moves.len() < 2 * FORK_MOVES_PIECE {
        for (&(i, transform), slot) in moves.iter().zip(out.iter_mut()) {
            *slot = levels.place_moved(i as usize, &transform)?;
        }
        return Ok(());
    }
    let mid = moves.len() / 2;
    let (first, second) = out.split_at_mut(mid);
    let (a, b) = fork.join(
        || place_moves(levels, &moves[..mid], first, fork),
        || place_moves(levels, &moves[mid..], second, fork),
    );
    a.and(b)
}

/// Whether instance `i` exists and is live, or the error naming it.
#[inline]
fn live_instance(levels: &TwoLevel, i: u32) -> Result<(), Error> {
    match levels.instances.get(i as usize) {
        Some(h) if h.live => Ok(()),
        Some(_) => Err(Error::InstanceOutOfRange {
            instance: i,
            reason: "removed",
        }),
        None => Err(Error::InstanceOutOfRange {
            instance: i,
            reason: "past the last instance",
        }),
    }
}

/// Each move's new record and world box written as it is worked out, and
/// put back from the instance's old transform if a later transform is
/// refused.
fn move_in_place(
    levels: &mut TwoLevel,
    update: &SceneUpdate,
    touched: &mut (u32, u32),
) -> Result<(), Error> {
    for (k, &(i, transform)) in update.transforms.iter().enumerate() {
        // Checked here rather than in a pass of its own: one read of the
        // instance a move (a frame may move every instance).
        let placed =
            live_instance(levels, i).and_then(|()| levels.place_moved(i as usize, &transform));
        match placed {
            Ok((record, world)) => {
                levels.records[i as usize] = record;
                levels.world[i as usize] = world;
                *touched = (touched.0.min(i), touched.1.max(i + 1));
            }
            Err(e) => {
                // Put back every record written so far, from the old transforms.
                for &(j, _) in &update.transforms[..k] {
                    let old = levels.instances[j as usize].transform();
                    // ok (never fails): the old transform was accepted before.
                    if let Ok((record, world)) = levels.place_moved(j as usize, &old) {
                        levels.records[j as usize] = record;
                        levels.world[j as usize] = world;
                    }
                }
                return Err(e);
            }
        }
    }
    Ok(())
}

/// [`apply`] for an update that only moves and masks existing instances and
/// gives meshes new vertices (an engine's usual frame): each new record and
/// world box is written as it is worked out, and put back from the instance's
/// old transform if a later transform is refused, instead of being staged
/// (staging a frame that moves 100,000 instances doubles its memory traffic).
fn apply_moves<F: Fork>(
    nodes: &mut [BvhNode],
    prims: &mut [Primitive],
    levels: &mut TwoLevel,
    scratch: &mut UpdateScratch,
    update: &SceneUpdate,
    refit: RefitOn,
    fork: Option<&F>,
) -> Result<Changes, Error> {
    // Everything but the transforms first: the transforms' step is the last
    // that can fail, so that undoing it undoes everything.
    for &(i, _) in &update.masks {
        live_instance(levels, i)?;
    }
    for &(g, positions) in &update.vertices {
        check_vertices(levels, g, positions)?;
    }
    let mut touched = (u32::MAX, 0u32);
    match fork {
        Some(fork) if update.transforms.len() >= FORK_MIN_MOVES => {
            for &(i, _) in &update.transforms {
                live_instance(levels, i)?;
            }
            // Worked out on the pool's threads, one entry a transform, then
            // written (in order, so a repeated instance keeps its last move).
            refill(
                &mut scratch.moved,
                update.transforms.len(),
                (VACANT, Aabb::EMPTY),
                "instance moves",
            )?;
            place_moves(levels, &update.transforms, &mut scratch.moved, fork)?;
            for (&(i, _), &(record, world)) in update.transforms.iter().zip(&scratch.moved) {
                levels.records[i as usize] = record;
                levels.world[i as usize] = world;
                touched = (touched.0.min(i), touched.1.max(i + 1));
            }
        }
        _ => move_in_place(levels, update, &mut touched)?,
    }
    for &(i, transform) in &update.transforms {
        levels.instances[i as usize].set_transform(&transform);
    }
    let mut changes = Changes::default();
    let new_len = levels.instances.len();
    let moved = !update.transforms.is_empty();
    finish(
        nodes,
        prims,
        levels,
        update,
        refit,
        &mut changes,
        touched,
        moved,
        new_len,
    );
    Ok(changes)
}

/// Rewrite a mesh geometry's slots from its vertices and refit its boxes
/// (one pass over the tree, see [`refit`]).
fn refresh_geometry(nodes: &mut [BvhNode], prims: &mut [Primitive], blas: &mut Blas) {
    let mesh = blas.topology.as_ref().map(|mesh| MeshSlots {
        mesh,
        slots: blas.prim_range(),
    });
    let bounds = refit(nodes, blas.node_range(), prims, mesh);
    blas.bounds = bounds;
    blas.stale = false;
}

/// Build the trees of `geometries` afresh over their current slots, and lay
/// every tree out again (node counts may change), moving the instances' roots.
fn rebuild_geometries(
    nodes: &mut Vec<BvhNode>,
    prims: &mut [Primitive],
    slot_material: &mut [u32],
    levels: &mut TwoLevel,
    geometries: &[u32],
    quality: crate::lbvh::BuildQuality,
) -> Result<(), Error> {
    // New trees first (fallible), then the layout.
    let mut fresh: Vec<Option<Bvh>> = try_vec(levels.blas.len(), "geometry trees")?;
    fresh.resize_with(levels.blas.len(), || None);
    for &g in geometries {
        let blas = &levels.blas[g as usize];
        let slots = &prims[blas.prim_range()];
        let mut boxes = try_vec(slots.len(), "primitive bounds")?;
        boxes.extend(slots.iter().map(primitive_bounds));
        fresh[g as usize] = Some(crate::accel::build_bvh(
            &boxes,
            None::<&crate::bvh::Sequential>,
            quality,
        )?);
    }
    let total: usize = levels
        .blas
        .iter()
        .zip(&fresh)
        .map(|(b, f)| f.as_ref().map_or(b.node_count as usize, |f| f.nodes.len()))
        .sum();
    let mut laid = try_vec(total, "BVH nodes")?;
    for (blas, tree) in levels.blas.iter_mut().zip(&fresh) {
        let base = laid.len() as u32;
        match tree {
            None => {
                // Inner indices move with the tree; leaf slots stay.
                let shift = base.wrapping_sub(blas.node_base);
                laid.extend(nodes[blas.node_range()].iter().map(|n| {
                    let mut n = *n;
                    for (lo, count) in [
                        (&mut n.left_lo, n.left_hi[3]),
                        (&mut n.right_lo, n.right_hi[3]),
                    ] {
                        let index = lo[3].to_bits();
                        if count.to_bits() == 0 && index != EMPTY_CHILD {
                            lo[3] = f32::from_bits(index.wrapping_add(shift));
                        }
                    }
                    n
                }));
            }
            Some(tree) => {
                // Slots in the new leaf order.
                let range = blas.prim_range();
                let old: Vec<(Primitive, u32)> = prims[range.clone()]
                    .iter()
                    .copied()
                    .zip(slot_material[range.clone()].iter().copied())
                    .collect();
                for (k, &o) in tree.order.iter().enumerate() {
                    let (p, m) = old[o as usize];
                    prims[range.start + k] = p;
                    slot_material[range.start + k] = m;
                }
                laid.extend(offset_nodes(&tree.nodes, base, blas.prim_base));
                blas.node_count = tree.nodes.len() as u32;
                blas.depth = tree.depth;
            }
        }
        blas.node_base = base;
    }
    *nodes = laid;
    for (g, tree) in fresh.iter().enumerate() {
        if tree.is_some() {
            let blas = &mut levels.blas[g];
            blas.built_cost = sah_cost(nodes, blas.root(), blas.bounds);
        }
    }
    for (record, inst) in levels.records.iter_mut().zip(&levels.instances) {
        if inst.live {
            record.info[0] = f32::from_bits(levels.blas[inst.geometry as usize].root());
        }
    }
    Ok(())
}
