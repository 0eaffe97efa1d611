//! Unit tests of the heightfield value type and walk (the property tests against triangles are in core/tests/heightfield.rs).

use super::*;
use crate::Ray;

fn walk(hf: &Heightfield, ray: &Ray) -> Option<HeightfieldHit> {
    let desc = hf.descriptor(0);
    ray_heightfield(&RayPre::new(ray), &desc, hf.pyramid(), ray.tmin, ray.tmax)
}

#[test]
fn pyramid_levels_hold_the_maxima() {
    let heights: Vec<f32> = (0..5 * 3).map(|i| ((i * 7) % 11) as f32).collect();
    let hf = Heightfield::new(5, 3, 1.0, &heights).unwrap(); // ok: test, valid
    assert_eq!(hf.levels(), 4);
    assert_eq!(hf.level(1).map(<[f32]>::len), Some(3 * 2));
    assert_eq!(hf.level(3), Some(&[10.0][..]));
    assert_eq!(hf.level(4), None);
    let l1 = hf.level(1).unwrap(); // ok: test
    for j in 0..2u32 {
        for i in 0..3u32 {
            let mut m = 0.0f32;
            for z in 2 * j..(2 * j + 2).min(3) {
                for x in 2 * i..(2 * i + 2).min(5) {
                    m = m.max(heights[(z * 5 + x) as usize]);
                }
            }
            assert_eq!(l1[(j * 3 + i) as usize], m);
        }
    }
    assert_eq!(Heightfield::new(1, 1, 1.0, &[2.0]).unwrap().levels(), 1); // ok: test
    assert_eq!(level_count(512, 512), 10);
    assert_eq!(level_count(513, 2), 11);
    assert_eq!(level_count(1 << 30, 1), 31);
}

#[test]
fn bad_grids_name_the_problem_and_the_cell() {
    assert_eq!(
        Heightfield::new(0, 3, 1.0, &[]),
        Err(Error::HeightfieldEmpty { width: 0, depth: 3 })
    );
    assert_eq!(
        Heightfield::new(2, 2, 1.0, &[1.0; 3]),
        Err(Error::HeightfieldSamples {
            width: 2,
            depth: 2,
            given: 3
        })
    );
    assert!(matches!(
        Heightfield::new(1 << 16, 1 << 15, 1.0, &[]),
        Err(Error::HeightfieldTooLarge { .. })
    ));
    assert_eq!(
        Heightfield::new(2, 2, 1.0, &[1.0, 2.0, -1.0, 0.0]),
        Err(Error::HeightfieldHeightInvalid {
            x: 0,
            z: 1,
            height: -1.0
        })
    );
    let nan = Heightfield::new(2, 1, 1.0, &[1.0, f32::NAN]);
    assert!(matches!(
        nan,
        Err(Error::HeightfieldHeightInvalid { x: 1, z: 0, .. })
    ));
    for cs in [0.0, -1.0, f32::NAN, f32::INFINITY, 1e38] {
        assert!(matches!(
            Heightfield::new(8, 1, cs, &[1.0; 8]),
            Err(Error::HeightfieldParameterInvalid {
                field: "cell_size",
                ..
            })
        ));
    }
    assert!(matches!(
        Heightfield::from_u16(1, 1, 1.0, &[3], 0.0),
        Err(Error::HeightfieldParameterInvalid {
            field: "height_scale",
            ..
        })
    ));
    // A scale that makes a sample's height overflow names the cell.
    assert_eq!(
        Heightfield::from_u16(2, 1, 1.0, &[0, 65535], 1e35),
        Err(Error::HeightfieldHeightInvalid {
            x: 1,
            z: 0,
            height: f32::INFINITY
        })
    );
    let hf = Heightfield::from_u8(2, 1, 0.5, &[4, 10], 0.25).unwrap(); // ok: test
    assert_eq!(hf.heights(), &[1.0, 2.5]);
}

#[test]
fn a_ray_from_above_hits_the_top_and_one_from_the_side_the_wall() {
    // x: 0 1 2 3, heights 1 0 3 2, one row.
    let hf = Heightfield::new(4, 1, 1.0, &[1.0, 0.0, 3.0, 2.0]).unwrap(); // ok: test
    let down = walk(&hf, &Ray::new(Vec3::new(2.5, 10.0, 0.5), Vec3::NEG_Y)).unwrap(); // ok: test
    assert_eq!((down.t, down.cell, down.face), (7.0, 2, FACE_TOP));
    // Into the empty cell 1 and on to the wall of cell 2.
    let side = walk(
        &hf,
        &Ray::new(Vec3::new(1.5, 2.5, 0.5), Vec3::new(1.0, -1.0, 0.0)),
    )
    .unwrap(); // ok: test
    assert_eq!((side.cell, side.face), (2, FACE_NEG_X));
    assert!((side.t - 0.5).abs() < 1e-6);
    // From inside column 3 it leaves through its top.
    let inside = walk(&hf, &Ray::new(Vec3::new(3.5, 1.0, 0.5), Vec3::Y)).unwrap(); // ok: test
    assert_eq!((inside.t, inside.cell, inside.face), (1.0, 3, FACE_TOP));
    // Over everything, and beside the grid: misses.
    assert!(walk(&hf, &Ray::new(Vec3::new(-1.0, 3.5, 0.5), Vec3::X)).is_none());
    assert!(walk(&hf, &Ray::new(Vec3::new(0.5, 5.0, 1.5), Vec3::NEG_Y)).is_none());
    // Down the plane x = 2 between cells 1 (empty) and 2 (3 high): the
    // edge of cell 2's top, as the triangles see it.
    let edge = walk(&hf, &Ray::new(Vec3::new(2.0, 10.0, 0.5), Vec3::NEG_Y)).unwrap(); // ok: test
    assert_eq!((edge.t, edge.cell, edge.face), (7.0, 2, FACE_TOP));
    // Level with the top of cell 2 exactly: its wall's top edge.
    let level = walk(&hf, &Ray::new(Vec3::new(-1.0, 3.0, 0.5), Vec3::X)).unwrap(); // ok: test
    assert_eq!((level.t, level.cell, level.face), (3.0, 2, FACE_NEG_X));
}

#[test]
fn faces_make_closed_boxes_and_visible_ones_skip_buried_sides() {
    let hf = Heightfield::new(2, 1, 1.0, &[2.0, 1.0]).unwrap(); // ok: test
    let all = hf.column_faces(FaceSet::All);
    assert_eq!(all.len(), 12);
    let visible = hf.column_faces(FaceSet::Visible);
    // The +x side of cell 0 keeps its part above cell 1; cell 1's -x side goes.
    assert_eq!(visible.len(), 11);
    let wall = visible
        .iter()
        .find(|f| f.cell == 0 && f.face == FACE_POS_X)
        .unwrap(); // ok: test
    assert!(wall.corners.iter().all(|c| c.y >= 1.0));
    assert!(!visible.iter().any(|f| f.cell == 1 && f.face == FACE_NEG_X));
    // Outward winding: each quad's normal is its face's.
    for f in &all {
        let [a, b, c, _] = f.corners;
        let n = (b - a).cross(c - a).normalize();
        assert_eq!(n, face_normal(f.face), "{f:?}");
    }
}

/// `start_level_of_run` is `floor(log2(a / b)) - 1` within
/// `0..=below_root`, for the exact quotient (no division's rounding).
#[test]
fn the_start_level_is_one_below_the_runs_power_of_two() {
    for (a, b, level) in [
        (f32::NAN, 1.0, 0),
        (-8.0, 1.0, 0),
        (0.0, 1.0, 0),
        (1.0e-40, 1.0e-41, 0),
        (3.99, 1.0, 0),
        (4.0, 1.0, 1),
        (7.99, 1.0, 1),
        (8.0, 1.0, 2),
        (72.0, 1.0, 5),
        (125.0, 1.73, 5),
        (6.0, 1.5, 1),
        (5.999_999_5, 1.5, 0),
        (1.0e9, 1.0, 8),
        (f32::INFINITY, 1.0, 8),
        (1.0, 0.0, 8),
        (1.0, 1.0e-40, 8),
    ] {
        assert_eq!(start_level_of_run(a, b, 8), level, "{a} / {b}");
    }
    assert_eq!(start_level_of_run(72.0, 1.0, 0), 0);
    // Against the quotient in f64 (exact enough away from powers of two).
    let mut rng = crate::rng::Pcg { state: 9 };
    for _ in 0..10_000 {
        let a = 2.0f32.powf(rng.next_f32() * 40.0 - 20.0);
        let b = 2.0f32.powf(rng.next_f32() * 40.0 - 20.0);
        let q = (f64::from(a) / f64::from(b)).log2().floor() as i32 - 1;
        assert_eq!(
            start_level_of_run(a, b, 30),
            q.clamp(0, 30) as u32,
            "{a} / {b}"
        );
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// The first crossing's distance does not depend on the level the walk
    /// starts at: from every level below the root, the walk finds a crossing
    /// where `ray_heightfield` does, at the same `t` (the face named may
    /// differ on a tie, another face at that `t`).
    #[test]
    fn every_start_level_gives_the_same_crossing(
        w in 1u32..40,
        d in 1u32..40,
        seed in 0u32..u32::MAX,
        o in proptest::array::uniform3(-0.3f32..1.3),
        target in proptest::array::uniform3(0.0f32..1.0),
        steep in proptest::bool::ANY,
    ) {
        let mut rng = crate::rng::Pcg { state: seed };
        let heights: Vec<f32> = (0..w * d)
            .map(|_| if rng.next_f32() < 0.3 { 0.0 } else { (rng.next_f32() * 12.0).floor() * 0.5 })
            .collect();
        let hf = Heightfield::new(w, d, 0.5, &heights).unwrap(); // ok: finite heights >= 0
        let ext = hf.bounds().max.max(Vec3::splat(0.5));
        let origin = Vec3::from(o) * ext * Vec3::new(1.0, if steep { 6.0 } else { 1.0 }, 1.0);
        let ray = Ray::new(origin, Vec3::from(target) * ext - origin);
        let desc = hf.descriptor(0);
        let pre = RayPre::new(&ray);
        let expected = ray_heightfield(&pre, &desc, hf.pyramid(), ray.tmin, ray.tmax);
        let walk = Walk::new(&pre, &desc, hf.pyramid()).unwrap(); // ok: a valid record
        if let WalkStart::Cell { x, z, .. } = walk.start(ray.tmin, ray.tmax) {
            for level in 0..walk.top.max(1) {
                proptest::prop_assert_eq!(
                    walk.walk(x, z, level, ray.tmin, ray.tmax).map(|h| h.t),
                    expected.map(|h| h.t),
                    "from level {}",
                    level
                );
            }
        }
    }
}
