//! The wide BVH of the current scene: which width this CPU walks, how it is
//! built and brought up to date after an update, and the integrators' view
//! of it ([`WideTracer`]).

#[cfg(target_arch = "x86_64")]
use crate::bvh8;
use crate::{Traversal, wide};
use prism_core::cell_grid::CellGrid;
use prism_core::gpu::Primitive;
use prism_core::heightfield::Heightfields;
use prism_core::point_grid::{PointGrid, any_hit_listed};
use prism_core::{Accel, Changes, Error, Hit, Ray};
use std::cell::RefCell;

/// The wide BVH that [`Traversal::Wide`] and [`Traversal::Wide4`] walk.
#[derive(Clone, Debug)]
pub(crate) enum Wide {
    /// 8-wide, AVX2 (x86-64 CPUs that have it).
    #[cfg(target_arch = "x86_64")]
    Eight(bvh8::Bvh8),
    /// 4-wide, 128-bit SIMD (any CPU); empty for [`Traversal::Binary`].
    Four(wide::WideBvh),
}

impl Wide {
    /// No wide BVH (nothing to walk; the backend walks core's trees).
    pub(crate) fn none() -> Self {
        Wide::Four(wide::WideBvh::default())
    }

    /// The BVH `traversal` walks on this CPU, built from `accel`.
    pub(crate) fn build(accel: &Accel, traversal: Traversal) -> Result<Self, Error> {
        #[cfg(target_arch = "x86_64")]
        if traversal == Traversal::Wide
            && let Some(b) = bvh8::Bvh8::build(accel)?
        {
            return Ok(Wide::Eight(b));
        }
        // The binary traversal needs no wide BVH; an empty one costs nothing.
        Ok(match traversal {
            Traversal::Binary => Wide::none(),
            _ => Wide::Four(wide::WideBvh::build(accel)?),
        })
    }

    /// The memory of this BVH (none for [`Traversal::Binary`], which walks
    /// core's tree).
    pub(crate) fn tree_bytes(&self) -> Option<prism_core::TreeBytes> {
        match self {
            #[cfg(target_arch = "x86_64")]
            Wide::Eight(b) => Some(b.tree_bytes()),
            Wide::Four(w) if w.is_empty() => None,
            Wide::Four(w) => Some(w.tree_bytes()),
        }
    }

    /// Which BVH this is: 8, 4, or 0 for none.
    pub(crate) fn kind(&self) -> u8 {
        match self {
            #[cfg(target_arch = "x86_64")]
            Wide::Eight(_) => 8,
            Wide::Four(w) if w.is_empty() => 0,
            Wide::Four(_) => 4,
        }
    }

    /// The [`Wide::kind`] that [`Wide::build`] gives for `traversal` on this CPU.
    pub(crate) fn kind_for(traversal: Traversal) -> u8 {
        match traversal {
            #[cfg(target_arch = "x86_64")]
            Traversal::Wide if bvh8::available() => 8,
            Traversal::Wide | Traversal::Wide4 => 4,
            Traversal::Binary => 0,
        }
    }

    /// Bring the BVH up to date with `accel` after an update that changed
    /// `changes`, doing only what changed: every tree again after a
    /// geometry's rebuild (its nodes and slots moved; `accel` must be
    /// current then, see [`Accel::refresh`]), else the refit geometries'
    /// trees refit straight from their meshes' new vertices (core's slots
    /// and nodes may lag them, [`prism_core::RefitOn::Device`]), the changed
    /// instance records written again and the instances' tree collapsed
    /// again when core rebuilt it. On an error the BVH is partly updated:
    /// the caller drops it.
    pub(crate) fn update(&mut self, accel: &Accel, changes: &Changes) -> Result<(), Error> {
        if self.kind() == 0 {
            return Ok(());
        }
        if changes.rebuilt {
            *self = match self {
                #[cfg(target_arch = "x86_64")]
                Wide::Eight(_) => Wide::build(accel, Traversal::Wide)?,
                Wide::Four(_) => Wide::build(accel, Traversal::Wide4)?,
            };
            return Ok(());
        }
        let records = changes
            .instances
            .as_ref()
            .map(|r| r.start as usize..r.end as usize);
        macro_rules! apply {
            ($b:expr) => {{
                for &g in &changes.refit {
                    // Only a mesh's vertices move.
                    let (triangles, positions) = accel
                        .geometry_mesh(g)
                        .ok_or(Error::NotAMesh { geometry: g })?;
                    $b.refit(g, triangles, positions)?;
                }
                if let Some(range) = records {
                    $b.update_records(accel, range)?;
                }
                if changes.top_rebuilt {
                    $b.collapse_top(accel)?;
                }
            }};
        }
        match self {
            #[cfg(target_arch = "x86_64")]
            Wide::Eight(b) => apply!(b),
            Wide::Four(w) => apply!(w),
        }
        Ok(())
    }

    #[inline(always)]
    pub(crate) fn intersect(
        &self,
        prims: &[Primitive],
        hf: Heightfields<'_>,
        ray: &Ray,
        scratch: &mut Scratch,
    ) -> Hit {
        let _ = &scratch;
        match self {
            #[cfg(target_arch = "x86_64")]
            Wide::Eight(b) => b.intersect(prims, hf, ray, &mut scratch.stack8),
            Wide::Four(w) => w.intersect(prims, hf, ray),
        }
    }

    /// Whether [`Wide::intersect_many`] (`closest_hits`) or
    /// [`Wide::occluded_many`] is to walk `rays`' coherent rays eight at a
    /// time: where the 8-wide BVH's samples of them say packets pay.
    pub(crate) fn packets_pay(
        &self,
        prims: &[Primitive],
        hf: Heightfields<'_>,
        rays: &[Ray],
        closest_hits: bool,
    ) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Wide::Eight(b) => b.packets_pay(prims, hf, rays, closest_hits),
            _ => {
                let _ = (prims, hf, rays, closest_hits);
                false
            }
        }
    }

    /// `out[i]` = [`Wide::intersect`] of `rays[i]`, coherent rays eight at a
    /// time through the 8-wide BVH where `packets` allows it.
    pub(crate) fn intersect_many(
        &self,
        prims: &[Primitive],
        hf: Heightfields<'_>,
        rays: &[Ray],
        out: &mut [Hit],
        packets: bool,
        scratch: &mut Scratch,
    ) {
        #[cfg(target_arch = "x86_64")]
        if let (Wide::Eight(b), true) = (self, packets) {
            return b.intersect_many(prims, hf, rays, out, &mut scratch.stack8);
        }
        let _ = packets;
        for (hit, ray) in out.iter_mut().zip(rays) {
            *hit = self.intersect(prims, hf, ray, scratch);
        }
    }

    /// `out[i]` = [`Wide::occluded`] of `rays[i]`, coherent rays eight at a
    /// time through the 8-wide BVH where `packets` allows it.
    pub(crate) fn occluded_many(
        &self,
        prims: &[Primitive],
        hf: Heightfields<'_>,
        rays: &[Ray],
        out: &mut [bool],
        packets: bool,
        scratch: &mut Scratch,
    ) {
        #[cfg(target_arch = "x86_64")]
        if let (Wide::Eight(b), true) = (self, packets) {
            return b.occluded_many(prims, hf, rays, out, &mut scratch.stack8);
        }
        let _ = packets;
        for (o, ray) in out.iter_mut().zip(rays) {
            *o = self.occluded(prims, hf, ray, scratch);
        }
    }

    #[inline(always)]
    pub(crate) fn intersect_slot(
        &self,
        prims: &[Primitive],
        hf: Heightfields<'_>,
        ray: &Ray,
        scratch: &mut Scratch,
    ) -> Hit {
        let _ = &scratch;
        match self {
            #[cfg(target_arch = "x86_64")]
            Wide::Eight(b) => b.intersect_slot(prims, hf, ray, &mut scratch.stack8),
            Wide::Four(w) => w.intersect_slot(prims, hf, ray),
        }
    }

    #[inline(always)]
    pub(crate) fn occluded(
        &self,
        prims: &[Primitive],
        hf: Heightfields<'_>,
        ray: &Ray,
        scratch: &mut Scratch,
    ) -> bool {
        let _ = &scratch;
        match self {
            #[cfg(target_arch = "x86_64")]
            Wide::Eight(b) => b.occluded(prims, hf, ray, &mut scratch.stack8),
            Wide::Four(w) => w.occluded(prims, hf, ray),
        }
    }
}

/// Per-thread traversal memory, reused from ray to ray.
pub(crate) struct Scratch {
    #[cfg(target_arch = "x86_64")]
    stack8: Box<bvh8::Stack>,
}

impl Scratch {
    pub(crate) fn new() -> Self {
        Scratch {
            #[cfg(target_arch = "x86_64")]
            stack8: bvh8::Stack::new(),
        }
    }
}

thread_local! {
    /// The render path's [`Scratch`] (the integrators trace one ray at a time).
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::new());
}

/// The integrators' view of a scene traced through its wide BVH.
pub(crate) struct WideTracer<'a> {
    pub(crate) accel: &'a Accel,
    pub(crate) wide: &'a Wide,
    /// Flat scenes only (see where `set_scene` builds it).
    pub(crate) light_grid: Option<&'a PointGrid>,
    /// Flat scenes only (see where `set_scene` builds it).
    pub(crate) cell_grid: Option<&'a CellGrid>,
}

impl WideTracer<'_> {
    /// Run `f` with this thread's scratch (a fresh one if it is in use).
    #[inline(always)]
    fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
        SCRATCH.with(|s| match s.try_borrow_mut() {
            Ok(mut s) => f(&mut s),
            Err(_) => f(&mut Scratch::new()),
        })
    }
}

impl prism_core::integrator::Tracer for WideTracer<'_> {
    #[inline(always)]
    fn accel(&self) -> &Accel {
        self.accel
    }
    #[inline(always)]
    fn closest_slot(&self, ray: &Ray) -> Hit {
        if let Some(g) = self.cell_grid {
            if ray.mask & 0xFF == 0 {
                return Hit::MISS;
            }
            return g.closest_hit(self.accel, ray);
        }
        let (prims, hf) = (self.accel.primitives(), self.accel.heightfield_set());
        Self::with_scratch(|s| self.wide.intersect_slot(prims, hf, ray, s))
    }
    #[inline(always)]
    fn occluded(&self, ray: &Ray) -> bool {
        let (prims, hf) = (self.accel.primitives(), self.accel.heightfield_set());
        Self::with_scratch(|s| self.wide.occluded(prims, hf, ray, s))
    }
    #[inline(always)]
    fn light_blocked(&self, ray: &Ray) -> bool {
        match self.light_grid {
            Some(g) if ray.mask & 0xFF != 0 => any_hit_listed(g, self.accel.primitives(), ray)
                .unwrap_or_else(|| self.occluded(ray)),
            _ => self.occluded(ray),
        }
    }
}
