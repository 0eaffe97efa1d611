//! A traversal that counts its work: node steps and primitive tests, per ray
//! kind, for the pre-pass that estimates a frame's cost.
//!
//! It walks core's binary tree exactly as [`crate::Accel::intersect_slot`] and
//! [`crate::Accel::occluded`] do (same box test, same child order, same leaf
//! tests, same two-level walk) and so finds the same hits (the tests check
//! it), but it is a separate copy: the counters would slow core's hot walks,
//! which stay as they are. It takes the runtime axis permutation
//! ([`crate::traverse::primitive_hit`]) instead of the hot walk's compiled one,
//! which gives the same results at a small cost the pre-pass can afford.

use crate::accel::Accel;
use crate::gpu::{BvhNode, GpuInstance, Primitive, TRAVERSAL_STACK_SIZE};
use crate::heightfield::Heightfields;
use crate::integrator::Tracer;
use crate::intersect::{RayPre, ray_aabb_rows};
use crate::ray::{Hit, Ray};
use crate::traverse::primitive_hit;
use crate::two_level::object_ray;
use core::cell::Cell;

/// Work done by some rays: how many, how many tree nodes they stepped through
/// (each step tests a node's two child boxes) and how many primitives they
/// tested. `f64` so that counts scaled from a pre-pass to a frame keep their
/// fractions.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counts {
    /// Rays traced.
    pub rays: f64,
    /// Node steps (an instance entered counts as one more step).
    pub node_steps: f64,
    /// Primitive tests (a heightfield's whole walk counts as one).
    pub prim_tests: f64,
}

impl Counts {
    /// No work.
    pub const ZERO: Counts = Counts {
        rays: 0.0,
        node_steps: 0.0,
        prim_tests: 0.0,
    };

    /// Node steps and primitive tests together: the traversal work the time
    /// model charges per step ([`crate::tune::TimeModel`]).
    #[inline]
    pub fn steps(&self) -> f64 {
        self.node_steps + self.prim_tests
    }

    /// Every count times `k`.
    #[inline]
    pub fn scaled(&self, k: f64) -> Counts {
        Counts {
            rays: self.rays * k,
            node_steps: self.node_steps * k,
            prim_tests: self.prim_tests * k,
        }
    }

    /// The sum of two counts.
    #[inline]
    pub fn plus(&self, o: &Counts) -> Counts {
        Counts {
            rays: self.rays + o.rays,
            node_steps: self.node_steps + o.node_steps,
            prim_tests: self.prim_tests + o.prim_tests,
        }
    }
}

/// One unit of a walk's work, as the counted walks report it to a [`WalkLog`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Visit {
    /// A step through node `i` of the scene's (bottom-level) tree.
    Node(u32),
    /// A step through node `i` of the tree over the instances.
    Top(u32),
    /// Instance `i` entered (counted as a node step).
    Instance(u32),
    /// A test of the primitive in leaf slot `i`.
    Prim(u32),
}

/// Where a counted walk reports its work: [`Counts`] keep totals; a log of
/// the visits themselves tells which nodes a group of rays shares (what a
/// SIMT device's memory traffic depends on).
pub trait WalkLog {
    /// One more unit of work.
    fn visit(&mut self, v: Visit);
}

/// Integer counters of one walk, added into a [`Counts`] afterwards.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    nodes: u64,
    prims: u64,
}

impl WalkLog for Tally {
    #[inline(always)]
    fn visit(&mut self, v: Visit) {
        match v {
            Visit::Prim(_) => self.prims += 1,
            _ => self.nodes += 1,
        }
    }
}

/// Closest hit (`Hit::prim` the leaf slot, as [`Accel::intersect_slot`]) and
/// the work it took.
pub fn counted_closest(accel: &Accel, ray: &Ray) -> (Hit, Counts) {
    let mut tally = Tally::default();
    let hit = logged_closest(accel, ray, &mut tally);
    (hit, counts(tally))
}

/// Closest hit (as [`counted_closest`]), each unit of its work reported to
/// `log`.
pub fn logged_closest<L: WalkLog>(accel: &Accel, ray: &Ray, tally: &mut L) -> Hit {
    let hf = accel.heightfield_set();
    match &accel.levels {
        None if ray.mask & 0xFF == 0 => Hit::MISS,
        None => closest_at(&accel.nodes, 0, &accel.prims, hf, ray, tally),
        Some(l) => {
            let mut best = Hit {
                t: ray.tmax,
                ..Hit::MISS
            };
            walk_top(
                &l.top,
                &l.records,
                ray,
                ray.tmax,
                tally,
                |index, record, tmax, tally| {
                    let object = object_ray(record, ray, tmax);
                    let hit = closest_at(
                        &accel.nodes,
                        record.root() as usize,
                        &accel.prims,
                        hf,
                        &object,
                        tally,
                    );
                    if hit.is_hit() {
                        best = Hit {
                            instance: index,
                            ..hit
                        };
                    }
                    (best.t, false)
                },
            );
            if !best.is_hit() {
                best.t = f32::INFINITY;
            }
            best
        }
    }
}

/// Whether anything lies on the ray (as [`Accel::occluded`]) and the work it
/// took.
pub fn counted_occluded(accel: &Accel, ray: &Ray) -> (bool, Counts) {
    let mut tally = Tally::default();
    let found = logged_occluded(accel, ray, &mut tally);
    (found, counts(tally))
}

/// Whether anything lies on the ray (as [`counted_occluded`]), each unit of
/// its work reported to `log`.
pub fn logged_occluded<L: WalkLog>(accel: &Accel, ray: &Ray, tally: &mut L) -> bool {
    let hf = accel.heightfield_set();
    match &accel.levels {
        None => ray.mask & 0xFF != 0 && any_at(&accel.nodes, 0, &accel.prims, hf, ray, tally),
        Some(l) => {
            let mut found = false;
            walk_top(
                &l.top,
                &l.records,
                ray,
                ray.tmax,
                tally,
                |_, record, tmax, tally| {
                    let object = object_ray(record, ray, tmax);
                    found = any_at(
                        &accel.nodes,
                        record.root() as usize,
                        &accel.prims,
                        hf,
                        &object,
                        tally,
                    );
                    (tmax, found)
                },
            );
            found
        }
    }
}

#[inline]
fn counts(t: Tally) -> Counts {
    Counts {
        rays: 1.0,
        node_steps: t.nodes as f64,
        prim_tests: t.prims as f64,
    }
}

/// The children of a node ordered near to far: `(t, index, count)` each.
#[inline(always)]
fn ordered(pre: &RayPre, n: &BvhNode, tmin: f32, tmax: f32) -> ((f32, u32, u32), (f32, u32, u32)) {
    let tl = ray_aabb_rows(pre, &n.left_lo, &n.left_hi, tmin, tmax);
    let tr = ray_aabb_rows(pre, &n.right_lo, &n.right_hi, tmin, tmax);
    let l = (tl, n.left_index(), n.left_count());
    let r = (tr, n.right_index(), n.right_count());
    if tr < tl { (r, l) } else { (l, r) }
}

/// Pop the next node, or `None` when the stack is empty.
#[inline(always)]
fn next_node(
    go: (bool, bool),
    near: u32,
    far: u32,
    stack: &mut [u32; TRAVERSAL_STACK_SIZE],
    sp: &mut usize,
) -> Option<usize> {
    match go {
        (true, true) => {
            if *sp < TRAVERSAL_STACK_SIZE {
                // ok: `sp` is checked against the stack size.
                stack[*sp] = far;
                *sp += 1;
            }
            Some(near as usize)
        }
        (true, false) => Some(near as usize),
        (false, true) => Some(far as usize),
        (false, false) if *sp > 0 => {
            *sp -= 1;
            // ok: `sp` was at least 1.
            Some(stack[*sp] as usize)
        }
        _ => None,
    }
}

/// `traverse::closest_hit_at` with counters.
fn closest_at<L: WalkLog>(
    nodes: &[BvhNode],
    root: usize,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    ray: &Ray,
    tally: &mut L,
) -> Hit {
    let pre = RayPre::new(ray);
    let tmin = ray.tmin;
    let mut best = Hit {
        t: ray.tmax,
        ..Hit::MISS
    };
    let mut stack = [0u32; TRAVERSAL_STACK_SIZE];
    let mut sp = 0usize;
    let mut node = root;
    while let Some(n) = nodes.get(node) {
        tally.visit(Visit::Node(node as u32));
        let ((mut t_near, near, near_count), (mut t_far, far, far_count)) =
            ordered(&pre, n, tmin, best.t);
        for (t, index, count) in [
            (&mut t_near, near, near_count),
            (&mut t_far, far, far_count),
        ] {
            if count > 0 {
                if *t < best.t {
                    leaf_closest(&pre, prims, hf, index, count, tmin, &mut best, tally);
                }
                *t = f32::INFINITY;
            }
        }
        let go = (t_near < best.t, t_far < best.t);
        match next_node(go, near, far, &mut stack, &mut sp) {
            Some(next) => node = next,
            None => break,
        }
    }
    if !best.is_hit() {
        best.t = f32::INFINITY;
    }
    best
}

#[allow(
    clippy::too_many_arguments,
    reason = "the walk's state, as in traverse"
)]
#[inline(always)]
fn leaf_closest<L: WalkLog>(
    pre: &RayPre,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    first: u32,
    count: u32,
    tmin: f32,
    best: &mut Hit,
    tally: &mut L,
) {
    let first = first as usize;
    let Some(leaf) = prims.get(first..first + count as usize) else {
        return;
    };
    for (k, p) in leaf.iter().enumerate() {
        tally.visit(Visit::Prim((first + k) as u32));
        if let Some(h) = primitive_hit(pre, p, hf, (first + k) as u32, tmin, best.t) {
            *best = h;
        }
    }
}

/// `traverse::any_hit_at` with counters.
fn any_at<L: WalkLog>(
    nodes: &[BvhNode],
    root: usize,
    prims: &[Primitive],
    hf: Heightfields<'_>,
    ray: &Ray,
    tally: &mut L,
) -> bool {
    let pre = RayPre::new(ray);
    let (tmin, tmax) = (ray.tmin, ray.tmax);
    let mut stack = [0u32; TRAVERSAL_STACK_SIZE];
    let mut sp = 0usize;
    let mut node = root;
    while let Some(n) = nodes.get(node) {
        tally.visit(Visit::Node(node as u32));
        let tl = ray_aabb_rows(&pre, &n.left_lo, &n.left_hi, tmin, tmax);
        let tr = ray_aabb_rows(&pre, &n.right_lo, &n.right_hi, tmin, tmax);
        let (l_index, l_count, r_index, r_count) = (
            n.left_index(),
            n.left_count(),
            n.right_index(),
            n.right_count(),
        );
        let mut go_left = tl < f32::INFINITY;
        let mut go_right = tr < f32::INFINITY;
        for (go, index, count) in [
            (&mut go_left, l_index, l_count),
            (&mut go_right, r_index, r_count),
        ] {
            if *go && count > 0 {
                let first = index as usize;
                let Some(leaf) = prims.get(first..first + count as usize) else {
                    return false;
                };
                for (k, p) in leaf.iter().enumerate() {
                    tally.visit(Visit::Prim((first + k) as u32));
                    if primitive_hit(&pre, p, hf, (first + k) as u32, tmin, tmax).is_some() {
                        return true;
                    }
                }
                *go = false;
            }
        }
        let (near, far, go) = if tr < tl {
            (r_index, l_index, (go_right, go_left))
        } else {
            (l_index, r_index, (go_left, go_right))
        };
        match next_node(go, near, far, &mut stack, &mut sp) {
            Some(next) => node = next,
            None => return false,
        }
    }
    false
}

/// `two_level::TwoLevel::walk_top` with counters: `visit(index, record, tmax,
/// tally)` for each instance entered, returning the new `tmax` and whether to
/// stop.
fn walk_top<L: WalkLog>(
    top: &[BvhNode],
    records: &[GpuInstance],
    ray: &Ray,
    tmax: f32,
    tally: &mut L,
    mut visit: impl FnMut(u32, &GpuInstance, f32, &mut L) -> (f32, bool),
) {
    let pre = RayPre::new(ray);
    let tmin = ray.tmin;
    let mut tmax = tmax;
    let mut stack = [0u32; TRAVERSAL_STACK_SIZE];
    let mut sp = 0usize;
    let mut node = 0usize;
    while let Some(n) = top.get(node) {
        tally.visit(Visit::Top(node as u32));
        let ((mut t_near, near, near_count), (mut t_far, far, far_count)) =
            ordered(&pre, n, tmin, tmax);
        for (t, index, count) in [
            (&mut t_near, near, near_count),
            (&mut t_far, far, far_count),
        ] {
            if count > 0 {
                let record = records.get(index as usize).filter(|_| *t < tmax);
                if let Some(record) = record.filter(|r| ray.mask & r.mask() != 0) {
                    tally.visit(Visit::Instance(index));
                    let (t_new, stop) = visit(index, record, tmax, tally);
                    tmax = t_new;
                    if stop {
                        return;
                    }
                }
                *t = f32::INFINITY;
            }
        }
        let go = (t_near < tmax, t_far < tmax);
        match next_node(go, near, far, &mut stack, &mut sp) {
            Some(next) => node = next,
            None => break,
        }
    }
}

/// The work of the three kinds of ray an AO frame traces.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KindCounts {
    /// Camera rays (closest hit).
    pub primary: Counts,
    /// Ambient-occlusion rays (any hit).
    pub ao: Counts,
    /// Shadow rays to the key light (any hit).
    pub shadow: Counts,
}

impl KindCounts {
    /// The sum of two counts, kind by kind.
    #[inline]
    pub fn plus(&self, o: &KindCounts) -> KindCounts {
        KindCounts {
            primary: self.primary.plus(&o.primary),
            ao: self.ao.plus(&o.ao),
            shadow: self.shadow.plus(&o.shadow),
        }
    }
}

/// A [`Tracer`] over an [`Accel`] that counts each query's work by kind: the
/// AO integrator asks `closest_slot` for camera rays, `occluded` for AO rays
/// and `light_blocked` for shadow rays, so running
/// [`crate::integrator::render_pixel`] through it splits a pixel's work by
/// kind without touching the integrator.
pub struct CountingTracer<'a> {
    accel: &'a Accel,
    counts: Cell<KindCounts>,
}

impl<'a> CountingTracer<'a> {
    /// Count over `accel`, from zero.
    pub fn new(accel: &'a Accel) -> Self {
        CountingTracer {
            accel,
            counts: Cell::new(KindCounts::default()),
        }
    }

    /// Work counted so far.
    pub fn counts(&self) -> KindCounts {
        self.counts.get()
    }

    /// Add one query's work `c` to the ray kind `kind` picks.
    fn add(&self, kind: fn(&mut KindCounts) -> &mut Counts, c: Counts) {
        let mut k = self.counts.get();
        let slot = kind(&mut k);
        *slot = slot.plus(&c);
        self.counts.set(k);
    }
}

impl Tracer for CountingTracer<'_> {
    fn accel(&self) -> &Accel {
        self.accel
    }
    fn closest_slot(&self, ray: &Ray) -> Hit {
        let (hit, c) = counted_closest(self.accel, ray);
        self.add(|k| &mut k.primary, c);
        hit
    }
    fn occluded(&self, ray: &Ray) -> bool {
        let (found, c) = counted_occluded(self.accel, ray);
        self.add(|k| &mut k.ao, c);
        found
    }
    fn light_blocked(&self, ray: &Ray) -> bool {
        let (found, c) = counted_occluded(self.accel, ray);
        self.add(|k| &mut k.shadow, c);
        found
    }
}
