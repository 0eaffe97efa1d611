//! Hit checks: a backend's `intersect` and `occluded` against a reference
//! (Embree's hits, the brute-force oracle, or another backend), under
//! prism-core's agreement rule.

use crate::thresholds::{
    MAX_HIT_MISMATCHES, MAX_OCCLUDED_DISAGREEMENTS, MAX_TIE_SHARE, UV_TOLERANCE, within,
};
use prism_core::intersect::MIN_DIR_COMPONENT;
use prism_core::reference::{Agreement, AgreementCounts, classify};
use prism_core::{Accel, Backend, Hit, Ray, Scene};
use std::time::Instant;

/// What a backend answered for one batch.
#[derive(Clone, Debug, Default)]
pub struct Answers {
    /// Closest hits.
    pub hits: Vec<Hit>,
    /// Any-hit answers.
    pub occluded: Vec<bool>,
    /// Milliseconds `intersect` took (wall clock around the call).
    pub intersect_ms: f64,
    /// Milliseconds `occluded` took.
    pub occluded_ms: f64,
}

/// Run `intersect` and `occluded` on `rays` (the scene must already be set).
pub fn trace(backend: &mut dyn Backend, rays: &[Ray]) -> Result<Answers, prism_core::Error> {
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut occluded = vec![false; rays.len()];
    let start = Instant::now();
    backend.intersect(rays, &mut hits)?;
    let intersect_ms = start.elapsed().as_secs_f64() * 1e3;
    let start = Instant::now();
    backend.occluded(rays, &mut occluded)?;
    let occluded_ms = start.elapsed().as_secs_f64() * 1e3;
    Ok(Answers {
        hits,
        occluded,
        intersect_ms,
        occluded_ms,
    })
}

/// The boxes a BVH holds each primitive in, root to leaf: what the slab test's
/// face-plane convention needs.
///
/// prism-core clamps a zero direction component to `±1e-30` (as Embree does), so
/// a ray that does not move along an axis and lies exactly in a box's face plane
/// on that axis is inside the box for one of its two faces and outside for the
/// other, by the sign of the zero. Traversal may then cull a primitive that the
/// primitive test alone would hit on that face (an edge in the plane). The core
/// documents this as a measure-zero convention; against the brute-force oracle,
/// such a miss is counted apart and not a failure, but only when the ray lies in
/// a face plane of a box on the way to the primitive it missed. Two backends
/// are compared exactly except on rays where either was excused so against the
/// oracle: each walks its own tree (the CPU's 8-wide BVH tests a subset of these
/// boxes), so which face plane culls a primitive may differ.
#[derive(Clone, Debug, Default)]
pub struct FacePlanes {
    /// Boxes from the root to each primitive id's leaf.
    paths: Vec<Vec<BoxRows>>,
}

/// A BVH box as its `(lo, hi)` node rows.
type BoxRows = ([f32; 4], [f32; 4]);

impl FacePlanes {
    /// The boxes of the BVH prism-core builds for `scene` (the one every backend
    /// traverses); `None` when the scene does not build.
    pub fn new(scene: &Scene) -> Option<FacePlanes> {
        let accel = Accel::build(scene).ok()?;
        let (nodes, prims) = (accel.nodes(), accel.primitives());
        let mut paths = vec![Vec::new(); scene.primitive_count()];
        let mut stack: Vec<(usize, Vec<BoxRows>)> = vec![(0, Vec::new())];
        while let Some((node, path)) = stack.pop() {
            let Some(n) = nodes.get(node) else {
                continue;
            };
            let children = [
                (n.left_lo, n.left_hi, n.left_index(), n.left_count()),
                (n.right_lo, n.right_hi, n.right_index(), n.right_count()),
            ];
            for (lo, hi, index, count) in children {
                let mut p = path.clone();
                p.push((lo, hi));
                if count == 0 {
                    // An inner child (or, with both bounds infinite, no child).
                    if lo[0].is_finite() && (index as usize) < nodes.len() && index as usize != node
                    {
                        stack.push((index as usize, p));
                    }
                    continue;
                }
                let slots = index as usize..(index as usize + count as usize).min(prims.len());
                for slot in slots {
                    if let Some(q) = prims.get(slot).and_then(|s| paths.get_mut(s.id() as usize)) {
                        *q = p.clone();
                    }
                }
            }
        }
        Some(FacePlanes { paths })
    }

    /// Whether `ray` lies in a face plane, on an axis it does not move along, of
    /// a box on the way to `prim`, at the hit distance `t` (within the reach of
    /// the clamped component, `2e-30 t`).
    pub fn excuses(&self, ray: &Ray, t: f32, prim: u32) -> bool {
        let Some(path) = self.paths.get(prim as usize) else {
            return false;
        };
        let reach = 2.0 * MIN_DIR_COMPONENT * t.abs();
        (0..3).any(|k| {
            ray.dir[k].abs() < MIN_DIR_COMPONENT
                && path.iter().any(|(lo, hi)| {
                    (ray.origin[k] - lo[k]).abs() <= reach || (ray.origin[k] - hi[k]).abs() <= reach
                })
        })
    }
}

/// The reference side of a comparison.
pub struct Reference<'a> {
    /// Who answered (`Embree`, `brute force`, a backend name).
    pub name: &'a str,
    /// `(t, prim)` per ray; `prim == Hit::NO_PRIM` for a miss.
    pub hits: &'a [(f32, u32)],
    /// Barycentrics per ray, where the reference has them.
    pub uv: Option<&'a [(f32, f32)]>,
    /// Any-hit answers per ray.
    pub occluded: &'a [bool],
    /// Largest share of ties allowed, or `None` for no limit (cases built to tie).
    pub tie_limit: Option<f64>,
    /// Misses the face-plane convention explains (see [`FacePlanes`]); `None`
    /// for references that follow the convention themselves (Embree, backends).
    pub face_planes: Option<&'a FacePlanes>,
    /// Rays to count apart as face-plane rays whatever the answers (two
    /// backends compared where either was excused against the oracle: their
    /// trees differ, the CPU's 8-wide one testing fewer boxes, so which face
    /// plane culls a primitive may differ too); `None`: no such rays.
    pub also_excused: Option<&'a [bool]>,
    /// The instance of each reference hit and the scene's placements
    /// (instanced sets, two-level cases, another backend's answers on them):
    /// see [`Instanced`]. `None`: not compared (flat references, whose hits
    /// all name instance 0).
    pub instances: Option<Instanced<'a>>,
}

/// The instance side of a reference on a two-level scene.
#[derive(Clone, Copy, Debug)]
pub struct Instanced<'a> {
    /// The instance of each reference hit (`Hit::NO_INSTANCE` for a miss): a
    /// hit of the same primitive at the same `t` on another instance is a
    /// tie, not a match.
    pub ids: &'a [u32],
    /// Per ray, the magnitude whose rounding bounds how well the reference
    /// hit's `t` is known ([`origin_scales`]).
    pub scales: &'a [f32],
}

/// Per ray, the scale of the instanced agreement rule's floor (core's
/// [`prism_core::reference::instance_scales`], which says why).
pub use prism_core::reference::instance_scales as origin_scales;

impl<'a> Reference<'a> {
    /// `(t, prim)` pairs of `hits`, the form a reference takes.
    pub fn pairs(hits: &[Hit]) -> Vec<(f32, u32)> {
        hits.iter().map(|h| (h.t, h.prim)).collect()
    }
    /// The instance of each of `hits`.
    pub fn instances_of(hits: &[Hit]) -> Vec<u32> {
        hits.iter().map(|h| h.instance).collect()
    }
    /// `(u, v)` pairs of `hits`.
    pub fn uvs(hits: &[Hit]) -> Vec<(f32, f32)> {
        hits.iter().map(|h| (h.u, h.v)).collect()
    }
    /// The any-hit answers Embree's closest hits imply: hit exactly where they hit.
    pub fn occluded_from(hits: &[(f32, u32)]) -> Vec<bool> {
        hits.iter().map(|&(_, p)| p != Hit::NO_PRIM).collect()
    }
}

/// The outcome of one backend on one batch against one reference.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HitCheck {
    /// Which batch (`bunny/primary`, `soup/3`, ...).
    pub group: String,
    /// The backend checked.
    pub backend: String,
    /// The reference it was checked against.
    pub against: String,
    /// Match, tie and mismatch counts of `intersect`.
    pub counts: AgreementCounts,
    /// Rays naming the same triangle with barycentrics further apart than
    /// [`UV_TOLERANCE`] (only where the reference has barycentrics).
    pub uv_mismatches: usize,
    /// Whether barycentrics were compared (the reference has them).
    pub uv_checked: bool,
    /// Rays where `occluded` disagrees with the reference.
    pub occluded_disagreements: usize,
    /// Rays whose reference hit was missed under the face-plane convention
    /// (see [`FacePlanes`]): counted, not failures.
    pub face_plane: usize,
    /// Largest share of ties allowed (`None`: no limit).
    pub tie_limit: Option<f64>,
    /// The first problem, described for a person.
    pub first_problem: Option<String>,
    /// The call failed with this error.
    pub error: Option<String>,
    /// `intersect` milliseconds.
    pub intersect_ms: f64,
    /// `occluded` milliseconds.
    pub occluded_ms: f64,
}

impl HitCheck {
    /// A check that could not run because a call failed.
    pub fn failed_call(group: &str, backend: &str, against: &str, error: String) -> HitCheck {
        HitCheck {
            group: group.into(),
            backend: backend.into(),
            against: against.into(),
            first_problem: Some(format!("call failed: {error}")),
            error: Some(error),
            ..Default::default()
        }
    }

    /// Ties as a share of the rays compared.
    pub fn tie_share(&self) -> f64 {
        if self.counts.total == 0 {
            0.0
        } else {
            self.counts.ties as f64 / self.counts.total as f64
        }
    }

    /// Whether every count is within its threshold and nothing failed.
    pub fn passed(&self) -> bool {
        self.error.is_none()
            && within(self.counts.mismatches, MAX_HIT_MISMATCHES)
            && within(self.occluded_disagreements, MAX_OCCLUDED_DISAGREEMENTS)
            && self.uv_mismatches == 0
            && self.tie_limit.is_none_or(|l| self.tie_share() <= l)
    }

    /// One line saying why the check failed, or `None` when it passed.
    pub fn failure(&self) -> Option<String> {
        if self.passed() {
            return None;
        }
        let mut line = format!(
            "hits {} on {} vs {}: {}",
            self.group,
            self.backend,
            self.against,
            self.reasons().join(", ")
        );
        if let Some(p) = self.first_problem.as_ref().filter(|_| self.error.is_none()) {
            line.push_str(&format!("; first: {p}"));
        }
        Some(line)
    }

    /// Why the check fails, one reason each (empty when it passes).
    pub fn reasons(&self) -> Vec<String> {
        let mut why = Vec::new();
        if let Some(e) = &self.error {
            why.push(format!("error: {e}"));
        }
        if !within(self.counts.mismatches, MAX_HIT_MISMATCHES) {
            why.push(format!("{} mismatches", self.counts.mismatches));
        }
        if !within(self.occluded_disagreements, MAX_OCCLUDED_DISAGREEMENTS) {
            why.push(format!(
                "occluded disagrees on {} rays",
                self.occluded_disagreements
            ));
        }
        if self.uv_mismatches > 0 {
            why.push(format!(
                "barycentrics differ on {} rays",
                self.uv_mismatches
            ));
        }
        if let Some(l) = self.tie_limit.filter(|&l| self.tie_share() > l) {
            why.push(format!(
                "{:.3}% ties (limit {:.3}%)",
                100.0 * self.tie_share(),
                100.0 * l
            ));
        }
        why
    }
}

fn describe_ray(i: usize, r: &Ray) -> String {
    format!(
        "ray {i} (origin {:?}, dir {:?}, t in ({:e}, {:e}))",
        r.origin.to_array(),
        r.dir.to_array(),
        r.tmin,
        r.tmax
    )
}

fn describe_hit(t: f32, prim: u32) -> String {
    if prim == Hit::NO_PRIM {
        "a miss".into()
    } else {
        format!("prim {prim} at t = {t:e}")
    }
}

/// Rays the face-plane convention excuses in `answers` against `reference`:
/// the answer misses the reference hit (a miss, or a farther hit), the ray lies
/// in a face plane of a box on the way to it (see [`FacePlanes`]), and the
/// any-hit answer says the same as the closest hit. All `false` when the
/// reference has no [`FacePlanes`].
pub fn face_plane_misses(rays: &[Ray], answers: &Answers, reference: &Reference<'_>) -> Vec<bool> {
    let n = rays.len().min(answers.hits.len()).min(reference.hits.len());
    (0..n)
        .map(|i| {
            // ok: `i < n`, the shortest of the three slices.
            let (t, p) = reference.hits[i];
            let h = answers.hits[i];
            let missed = p != Hit::NO_PRIM
                && (!h.is_hit() || h.t > t)
                && classify(&rays[i], &h, t, p) == Agreement::Mismatch;
            missed
                && answers.occluded.get(i) == Some(&h.is_hit())
                && reference
                    .face_planes
                    .is_some_and(|f| f.excuses(&rays[i], t, p))
        })
        .collect()
}

/// Compare `answers` for `rays` with `reference`.
pub fn compare(
    group: &str,
    backend: &str,
    rays: &[Ray],
    answers: &Answers,
    reference: &Reference<'_>,
) -> HitCheck {
    let n = rays.len().min(answers.hits.len()).min(reference.hits.len());
    let mut excused = face_plane_misses(rays, answers, reference);
    if let Some(also) = reference.also_excused {
        for (e, &a) in excused.iter_mut().zip(also) {
            *e |= a;
        }
    }
    let kept = |v: &[Hit]| -> Vec<Hit> {
        v.iter()
            .zip(&excused)
            .map(|(h, &e)| if e { Hit::MISS } else { *h })
            .collect()
    };
    let kept_ref: Vec<(f32, u32)> = reference
        .hits
        .iter()
        .take(n)
        .zip(&excused)
        .map(|(&r, &e)| if e { (f32::INFINITY, Hit::NO_PRIM) } else { r })
        .collect();
    let kept_hits = kept(&answers.hits[..n]);
    let mut counts = AgreementCounts::compare(&rays[..n], &kept_hits, &kept_ref);
    if let Some(inst) = reference.instances {
        let triples: Vec<(f32, u32, u32)> = kept_ref
            .iter()
            .zip(inst.ids.iter().chain(std::iter::repeat(&Hit::NO_INSTANCE)))
            .map(|(&(t, p), &i)| (t, p, i))
            .collect();
        counts = instance_agreement(&rays[..n], &kept_hits, &triples, inst.scales);
    }
    let face_plane = excused.iter().filter(|&&e| e).count();
    // Excused rays were compared as two misses: count them apart, not as matches.
    counts.matches -= face_plane;
    let mut check = HitCheck {
        group: group.into(),
        backend: backend.into(),
        against: reference.name.into(),
        uv_checked: reference.uv.is_some(),
        counts,
        face_plane,
        tie_limit: reference.tie_limit,
        intersect_ms: answers.intersect_ms,
        occluded_ms: answers.occluded_ms,
        ..Default::default()
    };
    if answers.hits.len() != rays.len() || reference.hits.len() != rays.len() {
        check.error = Some(format!(
            "{} rays, {} answers, {} reference hits",
            rays.len(),
            answers.hits.len(),
            reference.hits.len()
        ));
    }
    if let Some(i) = counts.first_mismatch {
        // ok: the first mismatch is an index of the compared prefix (`< n`).
        let (t, p) = reference.hits[i];
        let h = answers.hits[i];
        check.first_problem = Some(format!(
            "{}: {} answered {}, {} answered {}",
            describe_ray(i, &rays[i]),
            backend,
            describe_hit(h.t, h.prim),
            reference.name,
            describe_hit(t, p)
        ));
    }
    if let Some(uv) = reference.uv {
        for i in 0..n.min(uv.len()) {
            // ok: `i < n.min(uv.len())`.
            let h = answers.hits[i];
            let (t, p) = reference.hits[i];
            let same = classify(&rays[i], &h, t, p) == Agreement::Match && h.is_hit();
            let (u, v) = uv[i];
            if same && ((h.u - u).abs() > UV_TOLERANCE || (h.v - v).abs() > UV_TOLERANCE) {
                check.uv_mismatches += 1;
                if check.first_problem.is_none() {
                    check.first_problem = Some(format!(
                        "{}: prim {p}: {} gives (u, v) = ({}, {}), {} gives ({u}, {v})",
                        describe_ray(i, &rays[i]),
                        backend,
                        h.u,
                        h.v,
                        reference.name
                    ));
                }
            }
        }
    }
    let pairs = answers.occluded.iter().zip(reference.occluded).zip(rays);
    for (i, ((&got, &want), ray)) in pairs.enumerate() {
        if got != want && !excused.get(i).copied().unwrap_or(false) {
            check.occluded_disagreements += 1;
            if check.first_problem.is_none() {
                check.first_problem = Some(format!(
                    "{}: occluded = {got} on {}, {want} on {}",
                    describe_ray(i, ray),
                    backend,
                    reference.name
                ));
            }
        }
    }
    // Every array must hold one entry per ray: a shorter one would leave rays
    // unchecked. Each problem is kept, not only the last.
    let lengths = [
        ("occluded answers", Some(answers.occluded.len())),
        ("reference occlusion flags", Some(reference.occluded.len())),
        ("reference barycentrics", reference.uv.map(<[_]>::len)),
        ("excused flags", reference.also_excused.map(<[_]>::len)),
        (
            "reference instances",
            reference.instances.map(|i| i.ids.len()),
        ),
        ("origin scales", reference.instances.map(|i| i.scales.len())),
    ];
    for (what, len) in lengths {
        if let Some(len) = len.filter(|&l| l != rays.len()) {
            let problem = format!("{} rays but {len} {what}", rays.len());
            check.error = Some(match check.error.take() {
                Some(e) => format!("{e}; {problem}"),
                None => problem,
            });
        }
    }
    check
}

/// Agreement of instanced hits with a reference of `(t, prim, instance)`
/// per ray: core's rule for them
/// ([`prism_core::reference::AgreementCounts::compare_instanced`]) with
/// `scales` from [`origin_scales`].
pub fn instance_agreement(
    rays: &[Ray],
    hits: &[Hit],
    reference: &[(f32, u32, u32)],
    scales: &[f32],
) -> AgreementCounts {
    AgreementCounts::compare_instanced(rays, hits, reference, scales)
}

/// The default tie limit for reference meshes.
pub const REFERENCE_TIE_LIMIT: Option<f64> = Some(MAX_TIE_SHARE);

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3;

    fn ray() -> Ray {
        Ray::new(Vec3::ZERO, Vec3::Z)
    }

    /// A reference named "r" with no tie limit, face planes or excused rays.
    fn plain<'a>(
        hits: &'a [(f32, u32)],
        uv: Option<&'a [(f32, f32)]>,
        occluded: &'a [bool],
    ) -> Reference<'a> {
        Reference {
            name: "r",
            hits,
            uv,
            occluded,
            tie_limit: None,
            face_planes: None,
            also_excused: None,
            instances: None,
        }
    }

    fn hit(t: f32, prim: u32) -> Hit {
        Hit::new(t, 0.25, 0.5, prim, 0)
    }

    #[test]
    fn counts_matches_ties_and_mismatches() {
        let rays = vec![ray(); 4];
        let answers = Answers {
            hits: vec![hit(1.0, 3), hit(2.0, 4), hit(3.0, 5), Hit::MISS],
            occluded: vec![true, true, true, false],
            ..Default::default()
        };
        let reference = [(1.0, 3), (2.0, 9), (3.5, 5), (f32::INFINITY, Hit::NO_PRIM)];
        let occ = Reference::occluded_from(&reference);
        let c = compare("g", "b", &rays, &answers, &plain(&reference, None, &occ));
        assert_eq!(
            (c.counts.matches, c.counts.ties, c.counts.mismatches),
            (2, 1, 1)
        );
        assert!(!c.passed());
        let why = c.failure().unwrap_or_default();
        assert!(
            why.contains("1 mismatches") && why.contains("ray 2"),
            "{why}"
        );
    }

    #[test]
    fn occluded_and_uv_disagreements_fail() {
        let rays = vec![ray(); 2];
        let answers = Answers {
            hits: vec![hit(1.0, 3), hit(2.0, 4)],
            occluded: vec![true, false],
            ..Default::default()
        };
        let reference = [(1.0, 3), (2.0, 4)];
        let uv = [(0.25, 0.5), (0.5, 0.25)];
        let occ = [true, true];
        let c = compare(
            "g",
            "b",
            &rays,
            &answers,
            &plain(&reference, Some(&uv), &occ),
        );
        assert_eq!(c.counts.mismatches, 0);
        assert_eq!(c.uv_mismatches, 1);
        assert_eq!(c.occluded_disagreements, 1);
        assert!(!c.passed());
    }

    #[test]
    fn short_reference_arrays_fail_instead_of_checking_fewer_rays() {
        let rays = vec![ray(); 2];
        let answers = Answers {
            hits: vec![hit(1.0, 3), hit(2.0, 4)],
            occluded: vec![true, true],
            ..Default::default()
        };
        let reference = [(1.0, 3), (2.0, 4)];
        let uv = [(0.25, 0.5)];
        let c = compare(
            "g",
            "b",
            &rays,
            &answers,
            &plain(&reference, Some(&uv), &[]),
        );
        assert!(!c.passed());
        let e = c.error.unwrap_or_default();
        assert!(e.contains("2 rays but 0 reference occlusion flags"), "{e}");
        assert!(e.contains("2 rays but 1 reference barycentrics"), "{e}");
    }

    #[test]
    fn the_face_plane_convention_is_excused_only_in_the_face_plane() {
        let mut s = Scene::new();
        let m = s.add_material(prism_core::Material::lambertian(Vec3::ONE));
        let (a, b, c, d) = (
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(0.0, 1.0, 0.0),
            Vec3::new(0.0, 1.0, 1.0),
            Vec3::new(0.0, 0.0, 1.0),
        );
        s.add_triangle(a, b, c, m);
        s.add_triangle(a, c, d, m);
        let planes = FacePlanes::new(&s).unwrap_or_default();
        // Along +x at z = 1: in the quad's top face plane, with dir.z = 0.
        let top = Ray::new(Vec3::new(-3.0, 0.5, 1.0), Vec3::X);
        let mid = Ray::new(Vec3::new(-3.0, 0.5, 0.5), Vec3::X);
        let tilted = Ray::new(Vec3::new(-3.0, 0.5, 1.0), Vec3::new(1.0, 0.0, 1e-3));
        assert!(planes.excuses(&top, 3.0, 1));
        assert!(!planes.excuses(&mid, 3.0, 1));
        assert!(!planes.excuses(&tilted, 3.0, 1));
        // A backend that misses on `top` passes against brute force, counted
        // apart; the same miss on `mid` fails.
        let rays = [top, mid];
        let answers = Answers {
            hits: vec![Hit::MISS; 2],
            occluded: vec![false; 2],
            ..Default::default()
        };
        let reference = [(3.0, 1), (3.0, 0)];
        let occ = [true, true];
        let c = compare(
            "g",
            "b",
            &rays,
            &answers,
            &Reference {
                name: "r",
                hits: &reference,
                uv: None,
                occluded: &occ,
                tie_limit: None,
                face_planes: Some(&planes),
                also_excused: None,
                instances: None,
            },
        );
        assert_eq!(
            (c.face_plane, c.counts.mismatches, c.occluded_disagreements),
            (1, 1, 1)
        );
        assert_eq!(c.counts.first_mismatch, Some(1));
    }

    #[test]
    fn rays_excused_for_either_backend_are_counted_apart_between_them() {
        // Backend A hits prim 1 on both rays, backend B misses both: with ray 0
        // excused for B against the oracle, only ray 1 is a mismatch.
        let rays = [ray(), ray()];
        let a = Answers {
            hits: vec![hit(3.0, 1); 2],
            occluded: vec![true; 2],
            ..Default::default()
        };
        let b = [(f32::INFINITY, Hit::NO_PRIM); 2];
        let occ = [false; 2];
        let excused = [true, false];
        let c = compare(
            "g",
            "a",
            &rays,
            &a,
            &Reference {
                name: "b",
                hits: &b,
                uv: None,
                occluded: &occ,
                tie_limit: None,
                face_planes: None,
                also_excused: Some(&excused),
                instances: None,
            },
        );
        assert_eq!(
            (c.face_plane, c.counts.mismatches, c.occluded_disagreements),
            (1, 1, 1)
        );
        assert_eq!(c.counts.first_mismatch, Some(1));
    }

    #[test]
    fn too_many_ties_fail_when_limited() {
        let rays = vec![ray(); 10];
        let answers = Answers {
            hits: vec![hit(1.0, 1); 10],
            occluded: vec![true; 10],
            ..Default::default()
        };
        let reference = [(1.0, 2); 10];
        let occ = [true; 10];
        let mut r = Reference {
            name: "r",
            hits: &reference,
            uv: None,
            occluded: &occ,
            tie_limit: None,
            face_planes: None,
            also_excused: None,
            instances: None,
        };
        assert!(compare("g", "b", &rays, &answers, &r).passed());
        r.tie_limit = Some(0.5);
        assert!(!compare("g", "b", &rays, &answers, &r).passed());
    }
}
