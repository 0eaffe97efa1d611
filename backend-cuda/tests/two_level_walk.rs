//! The two-level kernels walk both levels in one loop of steps
//! (`kernels/two_level.cuh`): a step that enters an instance keeps the rest
//! of its top node's step (`next`), and the step that leaves the instance
//! carries it out, where core's `TwoLevel::closest_hit` / `any_hit` finish an
//! instance's walk inside the top node's step. This checks on the host, with
//! no GPU, that the kernels' steps, transcribed here one for one (the box
//! and primitive tests are core's own, which the kernels mirror), find core's
//! hits bit for bit, ties included (the same order of visits), and core's
//! occlusion, over random scenes with masks, non-uniform scales and thousands
//! of instances.

use prism_core::glam::{Affine3A, Quat, Vec3};
use prism_core::gpu::{BvhNode, GpuInstance, Primitive, TRAVERSAL_STACK_SIZE};
use prism_core::intersect::{RayPre, ray_aabb_rows};
use prism_core::rng::Pcg;
use prism_core::traverse::ray_primitive;
use prism_core::two_level::object_ray;
use prism_core::{Accel, Geometry, Hit, Instance, Material, Ray, Scene, TopLevelBuild};

const NO_INSTANCE: u32 = u32::MAX;

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
    stack: [u32; 2 * TRAVERSAL_STACK_SIZE],
}

impl<'a> Walk<'a> {
    /// two_level_begin
    fn begin(accel: &'a Accel, ray: &Ray) -> Self {
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

    /// leave_instance
    fn leave(&mut self) -> bool {
        self.inst = NO_INSTANCE;
        self.sp = self.top_sp;
        self.pre = self.world;
        if self.next_instance {
            self.next_instance = false;
            if self.next_t < self.best.t && self.enter(self.next_index) {
                self.next_t = f32::INFINITY;
                return true;
            }
            return self.top_next(f32::INFINITY, 0, f32::INFINITY, 0);
        }
        self.top_next(f32::INFINITY, 0, self.next_t, self.next_index)
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

    /// two_level_closest_step
    fn closest_step(&mut self) -> bool {
        let top = self.inst == NO_INSTANCE;
        let Some(n) = self.node_at(top) else {
            return if top { false } else { self.leave() };
        };
        let tmin = self.ray.tmin;
        let tl = ray_aabb_rows(&self.pre, &n.left_lo, &n.left_hi, tmin, self.best.t);
        let tr = ray_aabb_rows(&self.pre, &n.right_lo, &n.right_hi, tmin, self.best.t);
        let (l, r) = (
            (n.left_index(), n.left_count()),
            (n.right_index(), n.right_count()),
        );
        let swap = tr < tl;
        let (mut t_near, (near, near_count)) = if swap { (tr, r) } else { (tl, l) };
        let (mut t_far, (far, far_count)) = if swap { (tl, l) } else { (tr, r) };
        if top {
            if near_count > 0 {
                if t_near < self.best.t && self.enter(near) {
                    (self.next_index, self.next_t, self.next_instance) =
                        (far, t_far, far_count > 0);
                    return true;
                }
                t_near = f32::INFINITY;
            }
            if far_count > 0 {
                if t_far < self.best.t && self.enter(far) {
                    (self.next_index, self.next_t, self.next_instance) = (near, t_near, false);
                    return true;
                }
                t_far = f32::INFINITY;
            }
        } else if near_count > 0 || far_count > 0 {
            let (mut a, mut a_count, mut b, mut b_count) = (0, 0, 0, 0);
            if near_count > 0 {
                if t_near < self.best.t {
                    (a, a_count) = (near, near_count);
                }
                t_near = f32::INFINITY;
            }
            let t_far_leaf = t_far;
            if far_count > 0 {
                (b, b_count) = (far, far_count);
                t_far = f32::INFINITY;
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
                let p = &self.prims()[a as usize];
                if let Some((t, u, v)) = ray_primitive(&self.pre, p, tmin, self.best.t) {
                    self.best = Hit::new(t, u, v, a, self.inst);
                }
                a += 1;
                a_count -= 1;
            }
        }
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

    /// top_step (the any-hit walk's)
    fn top_step(&mut self) -> bool {
        let Some(n) = self.node_at(true) else {
            return false;
        };
        let tmin = self.ray.tmin;
        let tl = ray_aabb_rows(&self.pre, &n.left_lo, &n.left_hi, tmin, self.best.t);
        let tr = ray_aabb_rows(&self.pre, &n.right_lo, &n.right_hi, tmin, self.best.t);
        let (l, r) = (
            (n.left_index(), n.left_count()),
            (n.right_index(), n.right_count()),
        );
        let swap = tr < tl;
        let (mut t_near, (near, near_count)) = if swap { (tr, r) } else { (tl, l) };
        let (mut t_far, (far, far_count)) = if swap { (tl, l) } else { (tr, r) };
        if near_count > 0 {
            if t_near < self.best.t && self.enter(near) {
                (self.next_index, self.next_t, self.next_instance) = (far, t_far, far_count > 0);
                return true;
            }
            t_near = f32::INFINITY;
        }
        if far_count > 0 {
            if t_far < self.best.t && self.enter(far) {
                (self.next_index, self.next_t, self.next_instance) = (near, t_near, false);
                return true;
            }
            t_far = f32::INFINITY;
        }
        self.top_next(t_near, near, t_far, far)
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
}

/// closest_hit_instances: `prim` the slot.
fn closest(accel: &Accel, ray: &Ray) -> Hit {
    let mut w = Walk::begin(accel, ray);
    while w.closest_step() {}
    let mut h = w.best;
    if !h.is_hit() {
        h.t = f32::INFINITY;
    }
    h
}

/// any_hit_instances
fn any(accel: &Accel, ray: &Ray) -> bool {
    let mut w = Walk::begin(accel, ray);
    loop {
        let r = if w.inst == NO_INSTANCE {
            if w.top_step() { None } else { Some(false) }
        } else {
            w.instance_any_step()
        };
        if let Some(answer) = r {
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
            let got = closest(&accel, &ray);
            assert_eq!(
                bytemuck::bytes_of(&got),
                bytemuck::bytes_of(&want),
                "seed {seed}: {ray:?}"
            );
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
    // The lines of kernels/two_level.cuh that the steps above transcribe
    // where core's walk has no counterpart: a change there must be made here.
    let source = include_str!("../kernels/two_level.cuh");
    for line in [
        "w.next_instance = far_count > 0;",
        "w.next_t = t_near;",
        "const u32 floor = top ? 0u : w.top_sp;",
        "if (w.sp - floor < PRISM_TRAVERSAL_STACK_SIZE) {",
        "w.sp = w.top_sp;",
        "return top_next(w, stack, PRISM_INF, 0, w.next_t, w.next_index);",
        "if (w.next_t < w.best.t && enter_instance<K>(w, s, w.next_index)) {",
    ] {
        assert!(source.contains(line), "two_level.cuh no longer has: {line}");
    }
}
