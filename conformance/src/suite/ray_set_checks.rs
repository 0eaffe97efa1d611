//! The reference ray sets' checks: each set thinned by the configuration's
//! stride, every backend against Embree's hits (instance ids too, for an
//! instanced set), a flat mesh's fast and clustered trees too, then every pair
//! of backends against each other. A set that cannot be its own reference
//! fails as a note and is not traced.

use super::{Live, triples, verdict};
use crate::hits::{
    Answers, HitCheck, Instanced, REFERENCE_TIE_LIMIT, Reference, compare, origin_scales, trace,
};
use crate::{Config, MeshRays, Note, Report};
use prism_core::{BuildQuality, Error, Ray, Scene};

/// A reference ray set, thinned to every `ray_stride`-th ray.
struct Subset {
    group: String,
    rays: Vec<Ray>,
    reference: Vec<(f32, u32)>,
    instances: Option<Vec<u32>>,
}

pub(super) fn run_mesh(
    mesh: &MeshRays,
    config: &Config,
    live: &mut [Live],
    report: &mut Report,
    log: &mut dyn FnMut(&str),
) {
    let stride = config.ray_stride.max(1);
    // A set with no rays checks nothing, and one whose reference holds another
    // number of hits is not that set's reference: each fails the suite as a
    // note, and is not traced.
    let mut usable = Vec::new();
    for s in &mesh.sets {
        let problem = if s.rays.is_empty() {
            Some("no rays: the set checks nothing".to_string())
        } else if s.rays.len() != s.reference.len() {
            Some(format!(
                "{} rays but {} reference hits",
                s.rays.len(),
                s.reference.len()
            ))
        } else {
            s.instances
                .as_ref()
                .filter(|i| i.len() != s.rays.len())
                .map(|i| format!("{} rays but {} reference instances", s.rays.len(), i.len()))
        };
        match problem {
            Some(reason) => {
                log(&format!("ray set {}/{}: {reason}", mesh.name, s.name));
                report.notes.push(Note {
                    what: format!("ray set {}/{}", mesh.name, s.name),
                    reason,
                    fails: true,
                });
            }
            None => usable.push(s),
        }
    }
    let sets: Vec<Subset> = usable
        .iter()
        .map(|s| Subset {
            group: format!("{}/{}", mesh.name, s.name),
            rays: s.rays.iter().step_by(stride).copied().collect(),
            reference: s.reference.iter().step_by(stride).copied().collect(),
            instances: s
                .instances
                .as_ref()
                .map(|i| i.iter().step_by(stride).copied().collect()),
        })
        .collect();
    if mesh.scene.is_two_level() && !sets.is_empty() {
        report.two_level_meshes.push(mesh.name.clone());
    }
    for (s, sub) in usable.iter().zip(&sets) {
        report.ray_set_sizes.push((
            mesh.name.clone(),
            s.name.clone(),
            sub.rays.len(),
            sub.reference.len(),
        ));
    }
    // Every backend's answers, kept for the pairwise comparison.
    let mut answers: Vec<Vec<Option<Answers>>> = Vec::new();
    for b in live.iter_mut() {
        let mut per_set = Vec::new();
        let scene = b.backend.set_scene(&mesh.scene);
        for sub in &sets {
            let result = match &scene {
                Ok(_) => trace(b.backend.as_mut(), &sub.rays),
                Err(e) => Err(e.clone()),
            };
            let check = against_embree(&mesh.scene, &sub.group, &b.name, sub, &result);
            log(&format!(
                "rays {} on {} vs Embree: {} [{:.0} + {:.0} ms]",
                sub.group,
                b.name,
                verdict(&check),
                check.intersect_ms,
                check.occluded_ms
            ));
            report.ray_sets.push(check);
            per_set.push(result.ok());
        }
        answers.push(per_set);
    }
    // A flat mesh's fast and clustered trees (built on the device by the GPU
    // backends) against the same reference: a tree changes which triangles a
    // ray meets first, never which hit is closest.
    if !mesh.scene.is_two_level() && !sets.is_empty() {
        for (quality, tree) in [
            (BuildQuality::Fast, "fast tree"),
            (BuildQuality::Clustered, "clustered tree"),
        ] {
            let mut scene = mesh.scene.clone();
            scene.build_quality = quality;
            for b in live.iter_mut() {
                let built = b.backend.set_scene(&scene);
                for sub in &sets {
                    let group = format!("{} ({tree})", sub.group);
                    let result = match &built {
                        Ok(_) => trace(b.backend.as_mut(), &sub.rays),
                        Err(e) => Err(e.clone()),
                    };
                    let check = against_embree(&scene, &group, &b.name, sub, &result);
                    log(&format!(
                        "rays {group} on {} vs Embree: {}",
                        b.name,
                        verdict(&check)
                    ));
                    report.ray_sets.push(check);
                }
            }
        }
    }
    for i in 0..live.len() {
        for j in i + 1..live.len() {
            for (k, Subset { group, rays, .. }) in sets.iter().enumerate() {
                let (Some(Some(a)), Some(Some(b))) = (
                    answers.get(i).and_then(|v| v.get(k)),
                    answers.get(j).and_then(|v| v.get(k)),
                ) else {
                    continue;
                };
                let pairs = Reference::pairs(&b.hits);
                let uv = Reference::uvs(&b.hits);
                let instances = Reference::instances_of(&b.hits);
                let scales = origin_scales(&mesh.scene, rays, &triples(&b.hits));
                let check = compare(
                    group,
                    &live[i].name,
                    rays,
                    a,
                    &Reference {
                        name: &live[j].name,
                        hits: &pairs,
                        uv: Some(&uv),
                        occluded: &b.occluded,
                        tie_limit: REFERENCE_TIE_LIMIT,
                        face_planes: None,
                        also_excused: None,
                        instances: Some(Instanced {
                            ids: &instances,
                            scales: &scales,
                        }),
                    },
                );
                log(&format!(
                    "rays {group}: {} vs {}: {}",
                    live[i].name,
                    live[j].name,
                    verdict(&check)
                ));
                report.ray_sets.push(check);
            }
        }
    }
}

/// One backend's answers on `sub` (or the error that stopped them) against
/// Embree's hits, instance ids too for an instanced set.
fn against_embree(
    scene: &Scene,
    group: &str,
    backend: &str,
    sub: &Subset,
    result: &Result<Answers, Error>,
) -> HitCheck {
    let answers = match result {
        Ok(a) => a,
        Err(e) => return HitCheck::failed_call(group, backend, "Embree", e.to_string()),
    };
    let scales = match &sub.instances {
        Some(ids) => {
            let t: Vec<(f32, u32, u32)> = sub
                .reference
                .iter()
                .zip(ids)
                .map(|(&(t, p), &i)| (t, p, i))
                .collect();
            origin_scales(scene, &sub.rays, &t)
        }
        None => Vec::new(),
    };
    let occ = Reference::occluded_from(&sub.reference);
    compare(
        group,
        backend,
        &sub.rays,
        answers,
        &Reference {
            name: "Embree",
            hits: &sub.reference,
            uv: None,
            occluded: &occ,
            tie_limit: REFERENCE_TIE_LIMIT,
            face_planes: None,
            also_excused: None,
            instances: sub.instances.as_deref().map(|ids| Instanced {
                ids,
                scales: scales.as_slice(),
            }),
        },
    )
}
