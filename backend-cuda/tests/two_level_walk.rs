//! The two-level kernels walk both levels in one loop of steps
//! (`kernels/two_level.cuh`): a node step that meets an instance leaves its
//! entry to the lane's next step (ENTER) and keeps the rest of its top node's
//! step (`next`), and the step that leaves the instance carries it out, where
//! core's `TwoLevel::closest_hit` / `any_hit` finish an instance's walk
//! inside the top node's step; the leaves of a node step may have a step of
//! their own (LEAF, `two_level_leaf.cuh`). This checks on the host, with no
//! GPU, that the kernels' steps, transcribed here one for one (the box and
//! primitive tests are core's own, which the kernels mirror), find core's
//! hits bit for bit, ties included (the same order of visits), and core's
//! occlusion, over random scenes with masks, non-uniform scales and
//! thousands of instances. The batch kernels' waits (a lane's entry or
//! leaves held back until more lanes of its warp have theirs) only delay a
//! lane's steps, never reorder them.

use prism_core::glam::{Affine3A, Quat, Vec3};
use prism_core::gpu::{BvhNode, GpuInstance, Primitive, TRAVERSAL_STACK_SIZE};
use prism_core::intersect::{RayPre, ray_aabb_rows};
use prism_core::rng::Pcg;
use prism_core::traverse::ray_primitive;
use prism_core::two_level::object_ray;
use prism_core::{Accel, Geometry, Hit, Instance, Material, Ray, Scene, TopLevelBuild};

const NO_INSTANCE: u32 = u32::MAX;

/// A lane's phase between two steps (PRISM_PHASE_*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Step,
    Enter,
    Leaf,
}

/// A node's child as a node step sees it: entry distance, (index, count).
type Child = (f32, (u32, u32));

/// The kernels' TwoLevelWalk.
struct Walk<'a> {
    accel: &'a Accel,
    ray: Ray,
    /// The ray of the level the walk is in (at the top, the world ray's).
    pre: RayPre,
    world: RayPre,
    best: Hit,
    node: u32,
    sp: usize,
    top_sp: usize,
    inst: u32,
    next_index: u32,
    next_t: f32,
    next_instance: bool,
    phase: Phase,
    /// PRISM_TWO_LEVEL_LEAF_WAIT > 0: leaves in a phase of their own.
    leaf_phase: bool,
    leaf_count: u32,
    pend_index: u32,
    pend_count: u32,
    pend_t: f32,
    stack: [u32; 2 * TRAVERSAL_STACK_SIZE],
}

impl<'a> Walk<'a> {
    /// two_level_begin
    fn begin(accel: &'a Accel, ray: &Ray, leaf_phase: bool) -> Self {
        let world = RayPre::new(ray);
        let mut best = Hit::MISS;
        best.t = ray.tmax;
        Walk {
            accel,
            ray: *ray,
            pre: world,
            world,
            best,
            node: 0,
            sp: 0,
            top_sp: 0,
            inst: NO_INSTANCE,
            next_index: 0,
            next_t: f32::INFINITY,
            next_instance: false,
            phase: Phase::Step,
            leaf_phase,
            leaf_count: 0,
            pend_index: 0,
            pend_count: 0,
            pend_t: f32::INFINITY,
            stack: [0; 2 * TRAVERSAL_STACK_SIZE],
        }
    }

    fn record(&self, index: u32) -> Option<&'a GpuInstance> {
        self.accel.instances().get(index as usize)
    }

    /// enter_instance
    fn enter(&mut self, index: u32) -> bool {
        let Some(r) = self.record(index) else {
            return false;
        };
        if self.ray.mask & r.mask() == 0 {
            return false;
        }
        let object = object_ray(r, &self.ray, self.best.t);
        self.pre = RayPre::new(&object);
        self.node = r.root();
        self.inst = index;
        self.top_sp = self.sp;
        true
    }

    /// top_next
    fn top_next(&mut self, t_near: f32, near: u32, t_far: f32, far: u32) -> bool {
        let (go_near, go_far) = (t_near < self.best.t, t_far < self.best.t);
        if go_near && go_far {
            if self.sp < TRAVERSAL_STACK_SIZE {
                self.stack[self.sp] = far;
                self.sp += 1;
            }
            self.node = near;
        } else if go_near {
            self.node = near;
        } else if go_far {
            self.node = far;
        } else if self.sp > 0 {
            self.sp -= 1;
            self.node = self.stack[self.sp];
        } else {
            return false;
        }
        true
    }

    /// top_meets_instance: true when an instance is to be entered (ENTER).
    fn top_meets_instance(
        &mut self,
        t_near: &mut f32,
        (near, near_count): (u32, u32),
        t_far: &mut f32,
        (far, far_count): (u32, u32),
    ) -> bool {
        if near_count > 0 {
            if *t_near < self.best.t {
                self.node = near;
                (self.next_index, self.next_t, self.next_instance) = (far, *t_far, far_count > 0);
                self.phase = Phase::Enter;
                return true;
            }
            *t_near = f32::INFINITY;
        }
        if far_count > 0 {
            if *t_far < self.best.t {
                self.node = far;
                (self.next_index, self.next_t, self.next_instance) = (near, *t_near, false);
                self.phase = Phase::Enter;
                return true;
            }
            *t_far = f32::INFINITY;
        }
        false
    }

    /// enter_step
    fn enter_step(&mut self) -> bool {
        self.phase = Phase::Step;
        loop {
            if self.enter(self.node) {
                return true;
            }
            if !self.next_instance {
                return self.top_next(f32::INFINITY, 0, self.next_t, self.next_index);
            }
            self.next_instance = false;
            // The kernel's `!(w.next_t < w.best.t)`: a NaN stops too.
            let nearer = self.next_t < self.best.t;
            if !nearer {
                return self.top_next(f32::INFINITY, 0, f32::INFINITY, 0);
            }
            self.node = self.next_index;
            self.next_t = f32::INFINITY;
        }
    }

    /// leave_instance
    fn leave(&mut self) -> bool {
        self.inst = NO_INSTANCE;
        self.sp = self.top_sp;
        self.pre = self.world;
        if self.next_instance {
            self.next_instance = false;
            if self.next_t < self.best.t {
                self.node = self.next_index;
                self.next_t = f32::INFINITY;
                self.phase = Phase::Enter;
                return true;
            }
            return self.top_next(f32::INFINITY, 0, f32::INFINITY, 0);
        }
        self.top_next(f32::INFINITY, 0, self.next_t, self.next_index)
    }

    /// level_next
    fn level_next(&mut self, top: bool, t_near: f32, near: u32, t_far: f32, far: u32) -> bool {
        let floor = if top { 0 } else { self.top_sp };
        let (go_near, go_far) = (t_near < self.best.t, t_far < self.best.t);
        if go_near && go_far {
            if self.sp - floor < TRAVERSAL_STACK_SIZE {
                self.stack[self.sp] = far;
                self.sp += 1;
            }
            self.node = near;
        } else if go_near {
            self.node = near;
        } else if go_far {
            self.node = far;
        } else if self.sp > floor {
            self.sp -= 1;
            self.node = self.stack[self.sp];
        } else {
            return if top { false } else { self.leave() };
        }
        true
    }

    fn node_at(&self, top: bool) -> Option<BvhNode> {
        let nodes = if top {
            self.accel.top_nodes()
        } else {
            self.accel.nodes()
        };
        nodes.get(self.node as usize).copied()
    }

    fn prims(&self) -> &'a [Primitive] {
        self.accel.primitives()
    }

    /// The node's children near to far: (t, (index, count)) each.
    fn children(&self, n: &BvhNode) -> (Child, Child) {
        let tmin = self.ray.tmin;
        let tl = ray_aabb_rows(&self.pre, &n.left_lo, &n.left_hi, tmin, self.best.t);
        let tr = ray_aabb_rows(&self.pre, &n.right_lo, &n.right_hi, tmin, self.best.t);
        let (l, r) = (
            (n.left_index(), n.left_count()),
            (n.right_index(), n.right_count()),
        );
        if tr < tl {
            ((tr, r), (tl, l))
        } else {
            ((tl, l), (tr, r))
        }
    }

    /// closest_primitive
    fn closest_primitive(&mut self, slot: u32) {
        let p = &self.prims()[slot as usize];
        if let Some((t, u, v)) = ray_primitive(&self.pre, p, self.ray.tmin, self.best.t) {
            self.best = Hit::new(t, u, v, slot, self.inst);
        }
    }

    /// leaves_closest
    fn leaves_closest(
        &mut self,
        t_near: &mut f32,
        (near, near_count): (u32, u32),
        t_far: &mut f32,
        (far, far_count): (u32, u32),
    ) {
        let (mut a, mut a_count, mut b, mut b_count) = (0, 0, 0, 0);
        if near_count > 0 {
            if *t_near < self.best.t {
                (a, a_count) = (near, near_count);
            }
            *t_near = f32::INFINITY;
        }
        let t_far_leaf = *t_far;
        if far_count > 0 {
            (b, b_count) = (far, far_count);
            *t_far = f32::INFINITY;
        }
        loop {
            if a_count == 0 {
                // The kernel's `!(t_far_leaf < best.t)`: a NaN stops too.
                let far_leaf_nearer = t_far_leaf < self.best.t;
                if b_count == 0 || !far_leaf_nearer {
                    break;
                }
                (a, a_count, b_count) = (b, b_count, 0);
            }
            self.closest_primitive(a);
            a += 1;
            a_count -= 1;
        }
    }

    /// leaf_end
    fn leaf_end(&mut self) -> bool {
        self.phase = Phase::Step;
        let t = if self.pend_count == 0 {
            self.pend_t
        } else {
            f32::INFINITY
        };
        self.level_next(false, f32::INFINITY, 0, t, self.pend_index)
    }

    /// leaf_begin
    fn leaf_begin(
        &mut self,
        t_near: f32,
        (near, near_count): (u32, u32),
        t_far: f32,
        (far, far_count): (u32, u32),
    ) -> bool {
        let (mut first, mut count) = (0, 0);
        (self.pend_index, self.pend_count, self.pend_t) = (0, 0, f32::INFINITY);
        if near_count > 0 {
            if t_near < self.best.t {
                (first, count) = (near, near_count);
            }
            if far_count == 0 {
                (self.pend_index, self.pend_t) = (far, t_far);
            } else {
                (self.pend_index, self.pend_count, self.pend_t) = (far, far_count, t_far);
            }
        } else {
            if t_far < self.best.t {
                (first, count) = (far, far_count);
            }
            (self.pend_index, self.pend_t) = (near, t_near);
        }
        if count == 0 && !(self.pend_count > 0 && self.pend_t < self.best.t) {
            return self.leaf_end();
        }
        self.node = first;
        self.leaf_count = count;
        self.phase = Phase::Leaf;
        true
    }

    /// leaf_step
    fn leaf_step(&mut self) -> bool {
        loop {
            if self.leaf_count == 0 {
                let nearer = self.pend_t < self.best.t;
                if self.pend_count == 0 || !nearer {
                    break;
                }
                self.node = self.pend_index;
                self.leaf_count = self.pend_count;
                self.pend_count = 0;
                self.pend_t = f32::INFINITY;
            }
            self.closest_primitive(self.node);
            self.node += 1;
            self.leaf_count -= 1;
        }
        self.leaf_end()
    }

    /// closest_node_step
    fn closest_node_step(&mut self) -> bool {
        let top = self.inst == NO_INSTANCE;
        let Some(n) = self.node_at(top) else {
            return if top { false } else { self.leave() };
        };
        let ((mut t_near, near), (mut t_far, far)) = self.children(&n);
        if top {
            if self.top_meets_instance(&mut t_near, near, &mut t_far, far) {
                return true;
            }
        } else if near.1 > 0 || far.1 > 0 {
            if self.leaf_phase {
                return self.leaf_begin(t_near, near, t_far, far);
            }
            self.leaves_closest(&mut t_near, near, &mut t_far, far);
        }
        self.level_next(top, t_near, near.0, t_far, far.0)
    }

    /// two_level_closest_step (every phase run: the waits only delay a lane)
    fn closest_step(&mut self) -> bool {
        if self.phase == Phase::Enter && !self.enter_step() {
            return false;
        }
        if self.phase == Phase::Step && !self.closest_node_step() {
            return false;
        }
        if self.phase == Phase::Leaf {
            return self.leaf_step();
        }
        true
    }

    /// top_step (the any-hit walk's)
    fn top_step(&mut self) -> bool {
        let Some(n) = self.node_at(true) else {
            return false;
        };
        let ((mut t_near, near), (mut t_far, far)) = self.children(&n);
        if self.top_meets_instance(&mut t_near, near, &mut t_far, far) {
            return true;
        }
        self.top_next(t_near, near.0, t_far, far.0)
    }

    /// instance_any_step: Some(answer) when the whole walk is over.
    fn instance_any_step(&mut self) -> Option<bool> {
        let over = |w: &mut Self| if w.leave() { None } else { Some(false) };
        let Some(n) = self.node_at(false) else {
            return over(self);
        };
        let tmin = self.ray.tmin;
        let tl = ray_aabb_rows(&self.pre, &n.left_lo, &n.left_hi, tmin, self.best.t);
        let tr = ray_aabb_rows(&self.pre, &n.right_lo, &n.right_hi, tmin, self.best.t);
        let (mut go_left, mut go_right) = (tl < f32::INFINITY, tr < f32::INFINITY);
        let mut leaves = Vec::new();
        for (go, index, count) in [
            (&mut go_left, n.left_index(), n.left_count()),
            (&mut go_right, n.right_index(), n.right_count()),
        ] {
            if *go && count > 0 {
                leaves.extend(index..index + count);
                *go = false;
            }
        }
        for a in leaves {
            let p = &self.prims()[a as usize];
            if ray_primitive(&self.pre, p, tmin, self.best.t).is_some() {
                return Some(true);
            }
        }
        let swap = tr < tl;
        let (near, far) = if swap {
            (n.right_index(), n.left_index())
        } else {
            (n.left_index(), n.right_index())
        };
        let (go_near, go_far) = if swap {
            (go_right, go_left)
        } else {
            (go_left, go_right)
        };
        if go_near && go_far {
            if self.sp - self.top_sp < TRAVERSAL_STACK_SIZE {
                self.stack[self.sp] = far;
                self.sp += 1;
            }
            self.node = near;
        } else if go_near {
            self.node = near;
        } else if go_far {
            self.node = far;
        } else if self.sp > self.top_sp {
            self.sp -= 1;
            self.node = self.stack[self.sp];
        } else {
            return over(self);
        }
        None
    }

    /// two_level_any_step: Some(answer) when the whole walk is over.
    fn any_step(&mut self) -> Option<bool> {
        if self.phase == Phase::Enter && !self.enter_step() {
            return Some(false);
        }
        if self.inst == NO_INSTANCE {
            return if self.top_step() { None } else { Some(false) };
        }
        self.instance_any_step()
    }
}

/// closest_hit_instances: `prim` the slot.
fn closest(accel: &Accel, ray: &Ray, leaf_phase: bool) -> Hit {
    let mut w = Walk::begin(accel, ray, leaf_phase);
    while w.closest_step() {}
    let mut h = w.best;
    if !h.is_hit() {
        h.t = f32::INFINITY;
    }
    h
}

/// any_hit_instances
fn any(accel: &Accel, ray: &Ray) -> bool {
    let mut w = Walk::begin(accel, ray, false);
    loop {
        if let Some(answer) = w.any_step() {
            return answer;
        }
    }
}

fn scene(seed: u32, geometries: usize, instances: usize, build: TopLevelBuild) -> Scene {
    let mut rng = Pcg { state: seed };
    let mut r = move || rng.next_f32();
    let mut s = Scene::new();
    s.top_level_build = build;
    let m = s.add_material(Material::lambertian(Vec3::ONE));
    for g in 0..geometries {
        let mut geometry = Geometry::new();
        for _ in 0..10 + (r() * 80.0) as usize {
            let c = (Vec3::new(r(), r(), r()) - 0.5) * 4.0;
            if g % 2 == 0 || r() < 0.3 {
                geometry.add_sphere(c, 0.05 + 0.4 * r(), m);
            } else {
                let e = |r: &mut dyn FnMut() -> f32| Vec3::new(r(), r(), r()) - 0.5;
                let (b, d) = (c + e(&mut r), c + e(&mut r));
                geometry.add_triangle(c, b, d, m);
            }
        }
        s.add_geometry(geometry);
    }
    // Every seventh instance a copy of the one before: ties between
    // instances, which the order of visits decides.
    let (mut last, mut last_g) = (Affine3A::IDENTITY, 0);
    for i in 0..instances {
        let (g, t) = if i % 7 == 6 {
            (last_g, last)
        } else {
            let axis = (Vec3::new(r(), r(), r()) - 0.5)
                .try_normalize()
                .unwrap_or(Vec3::Y);
            let scale = Vec3::new(0.3 + 2.7 * r(), 0.3 + 2.7 * r(), 0.3 + 2.7 * r());
            let t = (Vec3::new(r(), r(), r()) - 0.5) * 30.0;
            let t = Affine3A::from_scale_rotation_translation(
                scale,
                Quat::from_axis_angle(axis, r() * 6.0),
                t,
            );
            ((i % geometries) as u32, t)
        };
        (last, last_g) = (t, g);
        let mask = if i % 7 >= 5 {
            0xFF
        } else {
            [0xFFu8, 1, 2, 4, 0x80, 0][i % 6]
        };
        s.add_instance(Instance::new(g, t).with_mask(mask));
    }
    s
}

fn rays(seed: u32, n: usize) -> Vec<Ray> {
    let mut rng = Pcg { state: seed ^ 0x77 };
    let mut r = move || rng.next_f32();
    (0..n)
        .map(|i| {
            let o = (Vec3::new(r(), r(), r()) - 0.5) * 50.0;
            let d = ((Vec3::new(r(), r(), r()) - 0.5) * 20.0 - o) * (0.2 + r());
            let d = if d == Vec3::ZERO { Vec3::X } else { d };
            let ray = match i % 5 {
                0 => Ray::segment(o, d, 0.3, 1.5),
                1 => Ray::segment(o, d, -1.0, f32::INFINITY),
                _ => Ray::new(o, d),
            };
            ray.with_mask([u32::MAX, 1, 6, 0x80, 0, 0x100][i % 6])
        })
        .collect()
}

#[test]
fn the_kernels_steps_find_core_s_hits_and_occlusion() {
    for (seed, instances, build) in [
        (1, 40, TopLevelBuild::Sah),
        (2, 300, TopLevelBuild::Morton),
        (3, 5000, TopLevelBuild::Auto),
    ] {
        let accel = Accel::build(&scene(seed, 3, instances, build)).unwrap();
        let mut hits = 0;
        for ray in rays(seed, 4000) {
            let want = accel.intersect_slot(&ray);
            // The leaves within the node step (the default) and in a phase
            // of their own (PRISM_TWO_LEVEL_LEAF_WAIT > 0).
            for leaf_phase in [false, true] {
                let got = closest(&accel, &ray, leaf_phase);
                assert_eq!(
                    bytemuck::bytes_of(&got),
                    bytemuck::bytes_of(&want),
                    "seed {seed}, leaf phase {leaf_phase}: {ray:?}"
                );
            }
            assert_eq!(
                any(&accel, &ray),
                accel.occluded(&ray),
                "seed {seed}: {ray:?}"
            );
            hits += want.is_hit() as usize;
        }
        assert!(hits > 100, "seed {seed}: {hits} hits");
    }
}

#[test]
fn the_transcription_follows_the_kernel_source() {
    // The lines of the kernels that the steps above transcribe where core's
    // walk has no counterpart: a change there must be made here.
    let two_level = include_str!("../kernels/two_level.cuh");
    let leaf = include_str!("../kernels/two_level_leaf.cuh");
    for (source, line) in [
        (two_level, "w.next_instance = far_count > 0;"),
        (two_level, "w.next_t = t_near;"),
        (two_level, "const u32 floor = top ? 0u : w.top_sp;"),
        (
            two_level,
            "if (w.sp - floor < PRISM_TRAVERSAL_STACK_SIZE) {",
        ),
        (two_level, "w.sp = w.top_sp;"),
        (
            two_level,
            "return top_next(w, stack, PRISM_INF, 0, w.next_t, w.next_index);",
        ),
        (two_level, "if (enter_instance<K>(w, s, w.node)) {"),
        (two_level, "if (!(w.next_t < w.best.t)) {"),
        (two_level, "w.phase = PRISM_PHASE_ENTER;"),
        (
            leaf,
            "if (count == 0 && !(w.pend_count > 0 && w.pend_t < w.best.t)) {",
        ),
        (
            leaf,
            "if (t_far < w.best.t && leaf_in_range(far_index, far_count, s.prim_count)) {",
        ),
        (leaf, "if (w.pend_count == 0 || !(w.pend_t < w.best.t)) {"),
    ] {
        assert!(source.contains(line), "the kernels no longer have: {line}");
    }
}
