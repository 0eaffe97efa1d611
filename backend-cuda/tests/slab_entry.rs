//! The render kernels take the slab test's entry distance as an integer
//! maximum of the floats' bits (`PRISM_SLAB_INT_ENTRY` in
//! `kernels/intersect.cuh`). These properties check on the host, with no GPU,
//! that this gives core's values for every input those kernels can pass:
//! `tmin` is +0 or positive and nothing is NaN.
//!
//! They also check `ray_aabb_octant`, the slab test on the tree's octant copies
//! (`KernelConfig::octant_trees`): bounds swapped on every axis where the ray's
//! `inv_dir` is negative, near planes read without a per-axis min/max.

use glam::Vec3;
use prism_core::Ray;
use prism_core::intersect::{RayPre, SLAB_EXIT_SCALE, ray_aabb, widen_exit};
use proptest::prelude::*;

/// The kernels' entry: `max(max3(nx, ny, nz), tmin)` on the bits as `i32`
/// (`__vimax3_s32` and `max`).
fn int_entry(nx: f32, ny: f32, nz: f32, tmin: f32) -> f32 {
    let bits = |x: f32| x.to_bits() as i32;
    f32::from_bits(bits(nx).max(bits(ny)).max(bits(nz)).max(bits(tmin)) as u32)
}

/// The render kernels' `ray_aabb<TMIN_NONNEG = true>`, step for step.
fn kernel_ray_aabb(pre: &RayPre, lo: Vec3, hi: Vec3, tmin: f32, tmax: f32) -> f32 {
    let t0 = (lo - pre.origin) * pre.inv_dir;
    let t1 = (hi - pre.origin) * pre.inv_dir;
    let (n, f) = (t0.min(t1), t0.max(t1));
    let t_enter = int_entry(n.x, n.y, n.z, tmin);
    let t_exit = f.x.min(f.y).min(f.z).min(tmax) * SLAB_EXIT_SCALE;
    if t_enter <= t_exit {
        t_enter
    } else {
        f32::INFINITY
    }
}

/// The kernels' `ray_aabb_octant`, step for step, on the box as the octant
/// copy for this ray stores it (`octant_copies`: `lo` and `hi` swapped on each
/// axis with a negative `inv_dir`). `nonneg` is its TMIN_NONNEG.
fn kernel_ray_aabb_octant(
    pre: &RayPre,
    lo: Vec3,
    hi: Vec3,
    tmin: f32,
    tmax: f32,
    nonneg: bool,
) -> f32 {
    let (mut nb, mut fb) = (lo, hi);
    for axis in 0..3 {
        if pre.inv_dir[axis] < 0.0 {
            (nb[axis], fb[axis]) = (hi[axis], lo[axis]);
        }
    }
    let n = (nb - pre.origin) * pre.inv_dir;
    let f = (fb - pre.origin) * pre.inv_dir;
    let exit = f.x.min(f.y).min(f.z).min(tmax);
    let (t_enter, t_exit) = if nonneg {
        (int_entry(n.x, n.y, n.z, tmin), exit * SLAB_EXIT_SCALE)
    } else {
        (n.x.max(n.y).max(n.z).max(tmin), widen_exit(exit))
    };
    if t_enter <= t_exit {
        t_enter
    } else {
        f32::INFINITY
    }
}

/// A ray from `origin` along `dir` (+x if zero) over `(tmin, tmin + span)` and a
/// box from `lo` of extent `|size|`: the ray's constants, the box's `hi`, `tmax`.
fn slab_case(
    origin: Vec3,
    dir: Vec3,
    lo: Vec3,
    size: Vec3,
    tmin: f32,
    span: f32,
) -> (RayPre, Vec3, f32) {
    let dir = if dir == Vec3::ZERO { Vec3::X } else { dir };
    let tmax = tmin + span;
    let pre = RayPre::new(&Ray::segment(origin, dir, tmin, tmax));
    (pre, lo + size.abs(), tmax)
}

/// Any float but NaN: every class (zeros of both signs, subnormals, infinities).
fn not_nan() -> impl Strategy<Value = f32> {
    prop_oneof![
        any::<f32>().prop_filter("not NaN", |x| !x.is_nan()),
        Just(0.0f32),
        Just(-0.0f32),
        Just(f32::INFINITY),
        Just(f32::NEG_INFINITY),
        -1e3f32..1e3f32,
    ]
}

/// A `tmin` the integrators use: +0 (camera rays) or positive (spawn offsets).
fn tmin_nonneg() -> impl Strategy<Value = f32> {
    prop_oneof![
        Just(0.0f32),
        0.0f32..1e3,
        f32::MIN_POSITIVE..f32::MAX,
        Just(f32::from_bits(1)),
    ]
}

fn coordinate() -> impl Strategy<Value = f32> {
    prop_oneof![-10.0f32..10.0, -1e4f32..1e4, Just(0.0f32), Just(1.0f32)]
}

fn vec3() -> impl Strategy<Value = Vec3> {
    (coordinate(), coordinate(), coordinate()).prop_map(|(x, y, z)| Vec3::new(x, y, z))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn integer_entry_is_the_float_maximum(
        nx in not_nan(), ny in not_nan(), nz in not_nan(), tmin in tmin_nonneg()
    ) {
        let float = nx.max(ny).max(nz).max(tmin);
        let int = int_entry(nx, ny, nz, tmin);
        // The same value; a zero may differ in sign only, which no comparison sees.
        prop_assert!(int == float, "int {int:e}, float {float:e}");
        prop_assert!(float == 0.0 || int.to_bits() == float.to_bits());
    }

    #[test]
    fn render_slab_test_gives_cores_entry(
        origin in vec3(), dir in vec3(), lo in vec3(), size in vec3(),
        tmin in prop_oneof![Just(0.0f32), 1e-6f32..10.0],
        span in prop_oneof![1e-3f32..100.0, Just(f32::INFINITY)]
    ) {
        // Coordinates of 0 and 1 are common, so rays often start on a face or
        // an edge of the box, and direction components are often zero.
        let (pre, hi, tmax) = slab_case(origin, dir, lo, size, tmin, span);
        let core = ray_aabb(&pre, lo, hi, tmin, tmax);
        let kernel = kernel_ray_aabb(&pre, lo, hi, tmin, tmax);
        prop_assert!(core == kernel, "core {core:e}, kernel {kernel:e}");
        let octant = kernel_ray_aabb_octant(&pre, lo, hi, tmin, tmax, true);
        prop_assert!(core == octant, "core {core:e}, octant copy {octant:e}");
    }

    #[test]
    fn octant_slab_test_gives_cores_entry_for_any_tmin(
        origin in vec3(), dir in vec3(), lo in vec3(), size in vec3(),
        tmin in prop_oneof![Just(0.0f32), Just(-0.0f32), -10.0f32..10.0, Just(f32::NEG_INFINITY)],
        span in prop_oneof![Just(0.0f32), 1e-3f32..100.0, Just(f32::INFINITY)]
    ) {
        // The form for rays of any tmin (wgpu's traversals of a small tree,
        // batch rays included).
        let (pre, hi, tmax) = slab_case(origin, dir, lo, size, tmin, span);
        let core = ray_aabb(&pre, lo, hi, tmin, tmax);
        let octant = kernel_ray_aabb_octant(&pre, lo, hi, tmin, tmax, false);
        prop_assert!(
            core == octant || (core.is_nan() && octant.is_nan()),
            "core {core:e}, octant copy {octant:e}"
        );
    }
}

/// The absent child of a node (both bounds at +inf) is missed in every octant copy.
#[test]
fn absent_child_is_missed_in_every_octant() {
    let inf = Vec3::splat(f32::INFINITY);
    for octant in 0..8 {
        let axis = |k: usize| if octant & (1 << k) != 0 { -1.0 } else { 1.0 };
        let ray = Ray::new(
            Vec3::new(0.5, -2.0, 3.0),
            Vec3::new(axis(0), axis(1), axis(2)),
        );
        let pre = RayPre::new(&ray);
        assert_eq!(ray_aabb(&pre, inf, inf, 0.0, f32::INFINITY), f32::INFINITY);
        for nonneg in [true, false] {
            let t = kernel_ray_aabb_octant(&pre, inf, inf, 0.0, f32::INFINITY, nonneg);
            assert_eq!(t, f32::INFINITY, "octant {octant}");
        }
    }
}

/// Cases an unsigned comparison of the bits gets wrong, kept as plain checks.
#[test]
fn negative_values_and_boxes_behind_the_ray() {
    let entries = [
        (0.0, f32::NEG_INFINITY, 0.0, 0.0),
        (-0.0, -1.0, -0.0, 0.0),
        (-3.0, 2.0, f32::NEG_INFINITY, 0.5),
        (f32::INFINITY, -f32::MAX, -1e-45, 0.0),
    ];
    for (nx, ny, nz, tmin) in entries {
        let float = nx.max(ny).max(nz).max(tmin);
        assert_eq!(int_entry(nx, ny, nz, tmin), float, "{nx} {ny} {nz} {tmin}");
    }
    // A box wholly behind a ray that starts on the plane of its far face.
    let ray = Ray::segment(Vec3::ZERO, Vec3::Z, 0.0, 30.0);
    let pre = RayPre::new(&ray);
    let (lo, hi) = (Vec3::new(0.0, 0.0, -5.5), Vec3::new(0.0, 0.0, -1.1));
    assert_eq!(
        kernel_ray_aabb(&pre, lo, hi, 0.0, 30.0),
        ray_aabb(&pre, lo, hi, 0.0, 30.0)
    );
    assert_eq!(ray_aabb(&pre, lo, hi, 0.0, 30.0), f32::INFINITY);
}
