//! The counting walk against core's walks, and the controller on synthetic
//! devices.

use super::*;
use crate::accel::Accel;
use crate::geometry::Geometry;
use crate::instance::Instance;
use crate::material::Material;
use crate::ray::Ray;
use crate::scene::Scene;
use alloc::vec::Vec;
use glam::{Affine3A, Vec3};
use proptest::prelude::*;

fn v3(extent: f32) -> impl Strategy<Value = Vec3> {
    (-extent..extent, -extent..extent, -extent..extent).prop_map(|(x, y, z)| Vec3::new(x, y, z))
}

/// Triangles near the origin and a few spheres, flat or as one geometry
/// placed by `placements` instances.
fn scene(tris: &[(Vec3, Vec3, Vec3)], spheres: &[(Vec3, f32)], placements: &[Vec3]) -> Scene {
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
    if placements.is_empty() {
        for &(a, b, c) in tris {
            s.add_triangle(a, a + b, a + c, m);
        }
        for &(c, r) in spheres {
            s.add_sphere(c, r, m);
        }
    } else {
        let mut g = Geometry::new();
        for &(a, b, c) in tris {
            g.add_triangle(a, a + b, a + c, m);
        }
        for &(c, r) in spheres {
            g.add_sphere(c, r, m);
        }
        let g = s.add_geometry(g);
        for &p in placements {
            s.add_instance(Instance::new(g, Affine3A::from_translation(p)));
        }
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The counting walks find what core's walks find: the same closest hit
    /// (slot, instance, t, u, v) and the same occlusion, flat and two-level,
    /// and count at least one node step for a ray that enters the scene.
    #[test]
    fn counting_walk_finds_core_hits(
        tris in prop::collection::vec((v3(4.0), v3(1.0), v3(1.0)), 1..40),
        spheres in prop::collection::vec((v3(4.0), 0.05f32..1.0), 0..4),
        placements in prop::collection::vec(v3(6.0), 0..4),
        rays in prop::collection::vec((v3(8.0), v3(1.0), 0.0f32..0.5, 0.5f32..30.0), 32),
    ) {
        let accel = Accel::build(&scene(&tris, &spheres, &placements)).unwrap(); // ok: test, valid inputs
        for (o, d, tmin, tmax) in rays {
            if d.length() < 1e-3 { continue; }
            let ray = Ray::segment(o, d, tmin, tmax);
            let (hit, c) = counted_closest(&accel, &ray);
            let want = accel.intersect_slot(&ray);
            prop_assert_eq!(hit, want);
            prop_assert_eq!(c.rays, 1.0);
            let (found, _) = counted_occluded(&accel, &ray);
            prop_assert_eq!(found, accel.occluded(&ray));
            if want.is_hit() {
                prop_assert!(c.node_steps >= 1.0 && c.prim_tests >= 1.0);
            }
        }
    }
}

/// A workload of `pixels` pixels: camera rays of `steps_p` steps, a hit
/// share `hit` with AO rays of `steps_o` steps, shadow rays of `steps_s`.
fn workload(pixels: f64, hit: f64, steps_p: f64, steps_o: f64, steps_s: f64) -> Workload {
    let c = |rays: f64, steps: f64| Counts {
        rays,
        node_steps: rays * steps * 0.6,
        prim_tests: rays * steps * 0.4,
    };
    Workload {
        pixels,
        primary: c(pixels, steps_p),
        ao_per_ray: c(pixels * hit, steps_o),
        shadow: c(pixels * hit, steps_s),
        probe_pixels: 1,
    }
}

const CALIBRATED: TimeModel = TimeModel {
    coefficients: [0.5, 4e-5, 2e-6, 1e-5, 1.5e-6],
};

/// Run `frames` frames of `work(frame)` on a device whose true time is
/// `truth` (plus `offset_ms`); returns each frame's measured time and plan.
fn run(
    truth: &TimeModel,
    offset_ms: f64,
    target_ms: f64,
    frames: usize,
    work: impl Fn(usize) -> Workload,
) -> Vec<(f64, Choice)> {
    run_views(|_| *truth, offset_ms, target_ms, frames, work)
}

/// [`run`] on a device whose true time model changes with the frame
/// (`truth(frame)`): a view whose work the calibrated model prices wrong
/// by another factor than the view before.
fn run_views(
    truth: impl Fn(usize) -> TimeModel,
    offset_ms: f64,
    target_ms: f64,
    frames: usize,
    work: impl Fn(usize) -> Workload,
) -> Vec<(f64, Choice)> {
    let mut c = Controller::new(CALIBRATED, TunerConfig::default()).unwrap(); // ok: test, valid inputs
    (0..frames)
        .map(|f| {
            let w = work(f);
            let choice = c.plan(&w, target_ms).unwrap().choice(); // ok: test, valid inputs
            let measured = truth(f).predict_ms(&w.frame(choice.knobs)) + offset_ms;
            c.observe_work(&w, &choice, measured);
            (measured, choice)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// On a device whose every constant differs from the calibrated one (by
    /// a common factor of 0.3 to 3 and each by up to 30% more) and that adds
    /// a fixed offset of up to a tenth of the budget, the measured time is
    /// within 0.2% of the target from the 25th frame on, at any budget
    /// from one AO ray up (the fractional AO count makes the time
    /// continuous, so no budget is a whole ray's step away from the nearest
    /// knobs).
    #[test]
    fn controller_converges_on_a_synthetic_device(
        common in 0.3f64..3.0,
        each in prop::array::uniform5(1.0f64..1.3),
        offset_share in 0.0f64..0.1,
        steps in (10.0f64..60.0, 5.0f64..40.0, 5.0f64..80.0),
        hit in 0.3f64..1.0,
        mean_ao in 1.0f64..200.0,
        shadows in any::<bool>(),
    ) {
        let truth = TimeModel {
            coefficients: core::array::from_fn(|i| CALIBRATED.coefficients[i] * common * each[i]),
        };
        let w = workload(76_800.0, hit, steps.0, steps.1, steps.2);
        // A target that the true device meets with these knobs.
        let base = truth.predict_ms(&w.frame(Knobs::with_mean(mean_ao, shadows)));
        let target = base / (1.0 - offset_share);
        let offset = target * offset_share;
        let frames = run(&truth, offset, target, 40, |_| w);
        for (f, (measured, choice)) in frames.iter().enumerate().skip(24) {
            let err = (measured - target).abs() / target;
            prop_assert!(err <= 0.002, "frame {f}: {measured} ms for {target} ms ({:.3}%), {choice:?}", 100.0 * err);
        }
    }

    /// The knobs of a mean AO count hold it to `f32` precision, with the
    /// fraction in `[0, 1)` and at least one whole ray.
    #[test]
    fn knobs_hold_the_mean(mean in 0.0f64..2000.0, shadows in any::<bool>()) {
        let k = Knobs::with_mean(mean, shadows);
        prop_assert!(k.ao_rays >= 1);
        prop_assert!((0.0..1.0).contains(&k.ao_extra));
        prop_assert!((k.mean_ao() - mean.max(1.0)).abs() <= 1e-7 * mean.max(1.0), "{k:?} for {mean}");
        prop_assert_eq!(k.shadows, shadows);
        let settings = k.apply(&crate::RenderSettings::default());
        prop_assert!(settings.ao_extra == k.ao_extra && settings.ao_samples == k.ao_rays);
    }
}

/// A sudden change of view (far more work per AO ray, as after a 180-degree
/// turn toward dense geometry) is met on the frame itself: the pre-pass's
/// workload changes the knobs before the frame is rendered.
#[test]
fn a_sudden_turn_stays_on_target() {
    let truth = TimeModel {
        coefficients: CALIBRATED.coefficients.map(|c| c * 1.7),
    };
    let target = 60.0;
    let frames = run(&truth, 1.0, target, 30, |f| {
        if f < 15 {
            workload(76_800.0, 0.4, 20.0, 10.0, 20.0)
        } else {
            workload(76_800.0, 0.95, 45.0, 30.0, 60.0)
        }
    });
    let (after, choice) = frames[15];
    assert!(
        (after - target).abs() <= 0.05 * target,
        "{after} ms, {choice:?}"
    );
    assert!(choice.knobs.mean_ao() < frames[14].1.knobs.mean_ao());
}

/// A turn to work the model prices at half the rate of the view before
/// (the device 1.7x the model before the turn, 0.85x after: the ogre
/// path's turn on an H200) misses on the turn's own frame, but the frame
/// after it is on target: the turn is a cut, and the correction restarts
/// from the turn frame's ratio instead of creeping toward it a clamped
/// fifth at a time. Moving frames before it are no cut.
#[test]
fn the_frame_after_a_cut_is_on_target() {
    let scaled = |k: f64| TimeModel {
        coefficients: CALIBRATED.coefficients.map(|c| c * k),
    };
    let target = 60.0;
    let turn = 15;
    let work = |f: usize| {
        if f < turn {
            // A moving view: 1% more work a frame.
            let k = 1.0 + 0.01 * f as f64;
            workload(76_800.0, 0.7, 30.0 * k, 20.0 * k, 40.0)
        } else {
            workload(76_800.0, 0.6, 12.0, 8.0, 40.0)
        }
    };
    let truth = |f: usize| scaled(if f < turn { 1.7 } else { 0.85 });
    let mut c = Controller::new(CALIBRATED, TunerConfig::default()).unwrap(); // ok: test, valid inputs
    for f in 0..turn {
        assert!(!c.is_cut(&work(f)), "frame {f} is no cut");
        let choice = c.plan(&work(f), target).unwrap().choice(); // ok: test, valid inputs
        let measured = truth(f).predict_ms(&work(f).frame(choice.knobs));
        c.observe_work(&work(f), &choice, measured);
    }
    assert!(c.is_cut(&work(turn)));
    let frames = run_views(truth, 0.0, target, 30, work);
    let on_turn = (frames[turn].0 - target).abs() / target;
    assert!(on_turn > 0.3, "the turn's own frame: {on_turn}");
    for (f, (measured, choice)) in frames.iter().enumerate().skip(turn + 1) {
        let err = (measured - target).abs() / target;
        assert!(err <= 0.01, "frame {f}: {measured} ms ({choice:?})");
    }
    // Without the cut the correction takes several frames to follow.
    let mut slow = Controller::new(CALIBRATED, TunerConfig::default()).unwrap(); // ok: test, valid inputs
    let mut after = 0.0;
    for f in 0..=turn + 1 {
        let choice = slow.plan(&work(f), target).unwrap().choice(); // ok: test, valid inputs
        after = truth(f).predict_ms(&work(f).frame(choice.knobs));
        slow.observe(&choice, after);
    }
    assert!((after - target).abs() / target > 0.1, "{after}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// On a device that prices the AO rays and the rest of the frame each
    /// by its own factor of the model's (0.3x to 5x each, so that one AO
    /// ray may cost from a fifteenth to fifteen times what the model says
    /// against the rest), at any budget from one and a half AO rays up,
    /// with shadows or without, the frames are within 5% of the target from
    /// the 12th frame on and within 1% from the 40th.
    #[test]
    fn two_factors_converge_on_a_device_that_prices_each_part_apart(
        rest in 0.3f64..5.0,
        ao in 0.3f64..5.0,
        steps in (10.0f64..60.0, 5.0f64..40.0, 5.0f64..80.0),
        hit in 0.3f64..1.0,
        mean_ao in 1.5f64..100.0,
        shadows in any::<bool>(),
    ) {
        let w = workload(76_800.0, hit, steps.0, steps.1, steps.2);
        // Shadows always worth their rays, or never: one setting throughout
        // (a frame that switches is predicted by the other setting's
        // correction, a_mispriced_shadow_ray_does_not_swap_the_knobs).
        let config = TunerConfig { shadow_worth: if shadows { 1000 } else { 0 }, ..TunerConfig::default() };
        let c0 = Controller::new(CALIBRATED, config).unwrap(); // ok: test, valid inputs
        let truth = |knobs: Knobs| {
            let p = c0.predict(&w, knobs);
            rest * (p.model_ms - p.model_ao_ms) + ao * p.model_ao_ms
        };
        let target = truth(Knobs::with_mean(mean_ao, shadows));
        let mut c = c0;
        for f in 0..60 {
            let choice = c.plan(&w, target).unwrap().choice(); // ok: test, valid inputs
            let measured = truth(choice.knobs);
            c.observe_work(&w, &choice, measured);
            let err = (measured - target).abs() / target;
            let bound = if f >= 40 { 0.01 } else if f >= 12 { 0.05 } else { f64::INFINITY };
            prop_assert!(err <= bound, "frame {f}: {measured} ms for {target} ms ({:.3}%), {choice:?}", 100.0 * err);
        }
    }
}

/// A device whose frame costs 4.5x the model's time but for the AO rays,
/// which cost 0.64x theirs (wgpu's two-level frames on an H200: camera and
/// shadow rays over thousands of instances dearer, against the
/// calibration, than its AO rays), with frames that jitter by up to 0.8%:
/// from the fourth frame on the frames hold the budget within 1% on
/// average and 5% at worst (0.55% and 1.25% here). A single factor on the
/// whole frame prices each AO ray 4x too dear there, so that each frame
/// closes only a few percent of the gap: 3.0% and 19% on this device
/// (`SPLIT_RIDGE` raised until the two factors are one).
#[test]
fn a_mispriced_ao_ray_is_told_from_the_rest() {
    let w = workload(76_800.0, 0.7, 30.0, 20.0, 40.0);
    let c0 = Controller::new(CALIBRATED, TunerConfig::default()).unwrap(); // ok: test, valid inputs
    let truth = |knobs: Knobs| {
        let p = c0.predict(&w, knobs);
        4.5 * (p.model_ms - p.model_ao_ms) + 0.64 * p.model_ao_ms
    };
    // A budget the device meets with three AO rays and shadows.
    let target = truth(Knobs::with_mean(3.0, true));
    let mut c = c0;
    let mut errors = Vec::new();
    for f in 0..100 {
        let choice = c.plan(&w, target).unwrap().choice(); // ok: test, valid inputs
        let jitter = 1.0 + 0.008 * libm::sin(2.399_963 * f as f64);
        let measured = truth(choice.knobs) * jitter;
        c.observe_work(&w, &choice, measured);
        if f >= 3 {
            errors.push((measured - target).abs() / target);
        }
    }
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    let worst = errors.iter().cloned().fold(0.0, f64::max);
    assert!(mean <= 0.01 && worst <= 0.05, "mean {mean}, worst {worst}");
}

/// A device whose shadow rays cost far more than the model says (a fixed
/// extra time on every frame with shadows), at a budget that two AO rays
/// without shadows fit but one with them does not, though the model,
/// corrected on frames without them, says it does: the knobs settle on one
/// shadow setting instead of swapping it every frame (each frame's ratio
/// throwing the next's correction), and the frames hold the budget. With
/// one correction for both settings they swap (wgpu's two-level shadow
/// rays at 8 ms on an H200: 34.6% off the budget on average).
#[test]
fn a_mispriced_shadow_ray_does_not_swap_the_knobs() {
    let truth = TimeModel {
        coefficients: CALIBRATED.coefficients.map(|c| c * 1.5),
    };
    let w = workload(76_800.0, 0.7, 30.0, 20.0, 40.0);
    let off = |mean: f64| truth.predict_ms(&w.frame(Knobs::with_mean(mean, false)));
    let target = off(3.0);
    let one_on = truth.predict_ms(&w.frame(Knobs::new(1, true)));
    let extra = 1.5 * target - one_on;
    // The model times the no-shadow frames' ratio (1.5) prices one ray with
    // shadows under the budget.
    assert!(1.5 * CALIBRATED.predict_ms(&w.frame(Knobs::new(1, true))) < target);
    let mut c = Controller::new(CALIBRATED, TunerConfig::default()).unwrap(); // ok: test, valid inputs
    let mut frames = Vec::new();
    for _ in 0..40 {
        let choice = c.plan(&w, target).unwrap().choice(); // ok: test, valid inputs
        let measured = truth.predict_ms(&w.frame(choice.knobs))
            + if choice.knobs.shadows { extra } else { 0.0 };
        c.observe_work(&w, &choice, measured);
        frames.push((measured, choice));
    }
    let swaps = frames[10..]
        .windows(2)
        .filter(|p| p[0].1.knobs.shadows != p[1].1.knobs.shadows)
        .count();
    assert_eq!(swaps, 0, "{:?}", &frames[10..14]);
    for (f, (measured, choice)) in frames.iter().enumerate().skip(15) {
        let err = (measured - target).abs() / target;
        assert!(
            err <= 0.005,
            "frame {f}: {measured} for {target} ({choice:?})"
        );
    }
}

/// Shift is symmetric, zero on the same work and at most one.
#[test]
fn shift_measures_a_change_of_kind() {
    let a = workload(76_800.0, 0.7, 30.0, 20.0, 40.0);
    let b = workload(76_800.0, 0.6, 12.0, 8.0, 40.0);
    assert_eq!(a.shift(&a), 0.0);
    assert_eq!(a.shift(&b), b.shift(&a));
    assert!((a.shift(&b) - 0.6).abs() < 1e-12, "{}", a.shift(&b));
    // Twice the pixels with the same kind of work is no shift.
    let c = workload(153_600.0, 0.7, 30.0, 20.0, 40.0);
    assert!(a.shift(&c) < 1e-12);
    assert_eq!(a.shift(&Workload::default()), 1.0);
}

/// A budget below the cheapest knobs is `Plan::Unreachable`, naming them and
/// their time; a bad target is an error naming it.
#[test]
fn unreachable_budget_is_a_typed_result() {
    let c = Controller::new(CALIBRATED, TunerConfig::default()).unwrap(); // ok: test, valid inputs
    let w = workload(76_800.0, 0.9, 40.0, 20.0, 30.0);
    let cheapest = c.predict(&w, Knobs::CHEAPEST).corrected_ms;
    let plan = c.plan(&w, cheapest * 0.5).unwrap(); // ok: test, valid inputs
    match plan {
        // ok: test, valid inputs
        Plan::Unreachable {
            cheapest: choice,
            target_ms,
        } => {
            assert_eq!(choice.knobs, Knobs::CHEAPEST);
            assert_eq!(target_ms, cheapest * 0.5);
            assert!(choice.corrected_ms > target_ms);
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
    assert!(matches!(c.plan(&w, cheapest * 1.5).unwrap(), Plan::Fits(_))); // ok: test, valid inputs
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            c.plan(&w, bad),
            Err(crate::Error::Setting {
                field: "target_ms",
                ..
            })
        ));
    }
}

/// A budget above the dearest knobs gives the dearest knobs.
#[test]
fn generous_budget_takes_the_most_quality() {
    let c = Controller::new(CALIBRATED, TunerConfig::default()).unwrap(); // ok: test, valid inputs
    let w = workload(1000.0, 0.9, 40.0, 20.0, 30.0);
    let choice = c.plan(&w, 1e6).unwrap().choice(); // ok: test, valid inputs
    assert_eq!(choice.knobs, Knobs::new(256, true));
}

/// The estimate of a frame from a pre-pass at the frame's own resolution
/// is the frame's count: the probe scaled by one.
#[test]
fn estimate_at_full_resolution_counts_every_ray() {
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
    s.add_sphere(Vec3::new(0.0, 0.0, -3.0), 1.0, m);
    s.add_triangle(
        Vec3::new(-5.0, -1.0, -8.0),
        Vec3::new(5.0, -1.0, -8.0),
        Vec3::new(0.0, -1.0, 2.0),
        m,
    );
    let accel = Accel::build(&s).unwrap(); // ok: test, valid inputs
    let camera = crate::Camera::look_at(Vec3::ZERO, Vec3::new(0.0, 0.0, -1.0), Vec3::Y, 60.0);
    let w = estimate(&accel, &camera, (16, 12), 1.0, 16 * 12).unwrap(); // ok: test, valid inputs
    assert_eq!(w.probe_pixels, 192);
    assert_eq!(w.primary.rays, 192.0);
    let hits = w.shadow.rays;
    assert!(hits > 0.0 && hits < 192.0, "{hits}");
    assert_eq!(w.ao_per_ray.rays, hits);
    assert!(w.primary.node_steps >= 192.0);
    let f = w.frame(Knobs::new(8, true));
    assert_eq!(f.occlusion.rays, 9.0 * hits);
}

proptest! {
    /// The pre-pass size stays within the frame, holds at least one pixel,
    /// keeps the frame's aspect ratio to within a pixel, and comes near the
    /// pixel count asked for when the frame is large enough.
    #[test]
    fn probe_size_fits_the_frame(w in 1u32..4000, h in 1u32..4000, pixels in 1u32..20_000) {
        let (pw, ph) = probe_size(w, h, pixels);
        prop_assert!((1..=w).contains(&pw) && (1..=h).contains(&ph));
        if pw < w && ph < h && pw > 1 && ph > 1 {
            let aspect = w as f64 / h as f64;
            prop_assert!((pw as f64 - ph as f64 * aspect).abs() <= 0.5 + aspect);
            let got = (pw * ph) as f64;
            prop_assert!(got >= 0.5 * pixels as f64 - 2.0 * (pw + ph) as f64, "{pw}x{ph} for {pixels}");
        }
    }
}

/// Run `frames` frames on a device whose true time is the calibrated
/// model's times `drift(frame)` (a ratio the feedback must track), every
/// frame of the same work; returns each frame's measured time.
fn run_drifting(
    config: TunerConfig,
    target_ms: f64,
    frames: usize,
    drift: impl Fn(usize) -> f64,
) -> Vec<f64> {
    let mut c = Controller::new(CALIBRATED, config).unwrap(); // ok: test, valid inputs
    let w = workload(76_800.0, 0.8, 30.0, 15.0, 30.0);
    (0..frames)
        .map(|f| {
            let choice = c.plan(&w, target_ms).unwrap().choice(); // ok: test, valid inputs
            let measured = CALIBRATED.predict_ms(&w.frame(choice.knobs)) * drift(f);
            c.observe(&choice, measured);
            measured
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A device whose time drifts smoothly from the model's (a slow wave of
    /// amplitude up to 10%, as along a camera path: at most 1.05% a frame)
    /// with one outlier frame (up to 60% slower, another process stealing
    /// the device): with rate 1 and the adaptive clamp, every frame but the
    /// outlier and the one after it lands within 1.5% of the target (the
    /// wave's change over one frame), and the one after it within 5%,
    /// where the fixed 20% clamp at rate 1 lets the outlier throw that frame
    /// (checked for outliers of 25% and more).
    #[test]
    fn adaptive_clamp_tracks_drift_and_resists_outliers(
        amplitude in 0.0f64..0.1,
        period in 60.0f64..150.0,
        phase in 0.0f64..6.3,
        outlier in 0.0f64..0.6,
        at in 15usize..50,
    ) {
        let drift = |f: usize| {
            let wave = 1.0 + amplitude * libm::sin(phase + core::f64::consts::TAU * f as f64 / period);
            if f == at { wave * (1.0 + outlier) } else { wave }
        };
        let target = 20.0;
        let fast = TunerConfig { feedback_rate: 1.0, adaptive_clamp: true, ..TunerConfig::default() };
        let times = run_drifting(fast, target, 60, drift);
        let err = |m: f64| (m - target).abs() / target;
        for (f, &m) in times.iter().enumerate().skip(8) {
            if f == at { continue; }
            let bound = if f == at + 1 { 0.05 } else { 0.015 };
            prop_assert!(err(m) <= bound, "frame {f}: {m:.3} ms ({:.2}%)", 100.0 * err(m));
        }
        if outlier >= 0.25 {
            let fixed = TunerConfig { feedback_rate: 1.0, ..TunerConfig::default() };
            let thrown = run_drifting(fixed, target, 60, drift)[at + 1];
            prop_assert!(err(thrown) > 0.1, "the fixed clamp held {thrown:.3} ms");
        }
    }
}

/// A lasting change of the device (25% slower from frame 20 on) passes the
/// adaptive clamp within a few frames: back within 1% of the target by the
/// sixth frame after it.
#[test]
fn adaptive_clamp_follows_a_lasting_change() {
    let fast = TunerConfig {
        feedback_rate: 1.0,
        adaptive_clamp: true,
        ..TunerConfig::default()
    };
    let times = run_drifting(fast, 20.0, 40, |f| if f < 20 { 1.0 } else { 1.25 });
    for (f, m) in times.iter().enumerate().skip(26) {
        assert!((m - 20.0).abs() <= 0.2, "frame {f}: {m} ms");
    }
}
