//! The lanes' walks against core's walk.

use super::*;
use glam::Vec3;
use prism_core::heightfield::Heightfield;
use prism_core::rng::Pcg;

/// A walk of a batch over one heightfield (`walk8`, `walk16`).
type LaneWalk = fn(&GpuHeightfield, &[f32], &[Ray], &mut dyn FnMut(usize, Option<HeightfieldHit>));

/// Both lane widths this CPU runs give core's walk, exactly, on random
/// height maps and rays of every kind (misses, segments, rays parallel
/// to an axis, rays through corners, hidden by their mask).
#[test]
fn every_lane_width_gives_cores_walk() {
    let mut rng = Pcg { state: 3 };
    let mut r = move || rng.next_f32();
    for case in 0..20 {
        let (w, d) = (1 + (r() * 40.0) as u32, 1 + (r() * 40.0) as u32);
        let cs = [1.0, 0.5, 0.37][case % 3];
        let heights: Vec<f32> = (0..w * d)
            .map(|_| {
                if r() < 0.3 {
                    0.0
                } else {
                    (r() * 8.0).floor() * 0.5
                }
            })
            .collect();
        let hf = Heightfield::new(w, d, cs, &heights).expect("valid heights"); // ok: a test map of finite heights >= 0
        let record = hf.descriptor(0);
        let ext = hf.size();
        let rays: Vec<Ray> = (0..3000)
            .map(|k| {
                let o = Vec3::new(r(), r(), r()) * 1.6 * ext - Vec3::splat(0.3 * ext);
                let target = Vec3::new(r(), r() * 0.3, r()) * ext;
                let ray = match k % 5 {
                    0 => Ray::new(o, Vec3::new(0.0, -1.0, r() - 0.5)),
                    1 => Ray::new(o.floor(), Vec3::new(1.0, -0.5, 1.0)),
                    2 => Ray::segment(o, target - o, r(), 0.5 + r()),
                    _ => Ray::new(o, target - o),
                };
                if k % 41 == 0 {
                    ray.with_mask(0x100)
                } else {
                    ray
                }
            })
            .collect();
        let core: Vec<Option<HeightfieldHit>> = rays
            .iter()
            .map(|ray| {
                (ray.mask & 0xFF != 0)
                    .then(|| {
                        let pre = RayPre::new(ray);
                        ray_heightfield(&pre, &record, hf.pyramid(), ray.tmin, ray.tmax)
                    })
                    .flatten()
            })
            .collect();
        assert!(walkable(&record, hf.pyramid()));
        let mut walks: Vec<(&str, LaneWalk)> = Vec::new();
        if available() {
            // SAFETY (of the call below): AVX2 is available.
            walks.push(("8 lanes", |h, hs, rs, p| unsafe { walk8(h, hs, rs, p) }));
        }
        if available16() {
            // SAFETY (of the call below): AVX-512F, AVX2 and BMI2 are available.
            walks.push(("16 lanes", |h, hs, rs, p| unsafe { walk16(h, hs, rs, p) }));
        }
        for (name, walk) in walks {
            let mut got: Vec<Option<Option<HeightfieldHit>>> = vec![None; rays.len()];
            walk(&record, hf.pyramid(), &rays, &mut |i, h| {
                assert!(got[i].is_none(), "{name}: ray {i} answered twice");
                got[i] = Some(h);
            });
            for (i, (g, c)) in got.iter().zip(&core).enumerate() {
                assert_eq!(
                    g.as_ref(),
                    Some(c),
                    "{name}, case {case}, ray {i}: {:?}",
                    rays[i]
                );
            }
        }
    }
}
