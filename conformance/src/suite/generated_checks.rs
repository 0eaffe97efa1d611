//! The generated cases' checks: each backend against the brute-force oracle
//! (and every pair of backends against each other), and each refit case's
//! moved scene against the same scene built afresh.

use super::{Live, triples, verdict};
use crate::GeneratedRow;
use crate::generated::{GeneratedCase, RefitCase, brute_force};
use crate::hits::{
    Answers, FacePlanes, HitCheck, Instanced, Reference, compare, face_plane_misses, origin_scales,
    trace,
};
use prism_core::{Scene, SceneUpdate};

pub(super) fn run_generated(
    case: &GeneratedCase,
    live: &mut [Live],
    log: &mut dyn FnMut(&str),
) -> GeneratedRow {
    let oracle = brute_force(&case.scene, &case.rays);
    let pairs = Reference::pairs(&oracle.hits);
    let uv = Reference::uvs(&oracle.hits);
    let instances = Reference::instances_of(&oracle.hits);
    let scales = origin_scales(&case.scene, &case.rays, &triples(&oracle.hits));
    let planes = FacePlanes::new(&case.scene);
    let reference = Reference {
        name: "brute force",
        hits: &pairs,
        uv: Some(&uv),
        occluded: &oracle.occluded,
        tie_limit: None,
        face_planes: planes.as_ref(),
        also_excused: None,
        instances: Some(Instanced {
            ids: &instances,
            scales: &scales,
        }),
    };
    let mut row = GeneratedRow {
        name: case.name.clone(),
        family: case.family,
        description: case.description.clone(),
        seed: case.seed,
        primitives: placed_primitives(&case.scene),
        rays: case.rays.len(),
        oracle_hits: oracle.hits.iter().filter(|h| h.is_hit()).count(),
        checks: Vec::new(),
    };
    let mut answers: Vec<Option<Answers>> = Vec::new();
    // Per backend, the rays excused against the oracle by the face-plane convention.
    let mut excused: Vec<Vec<bool>> = Vec::new();
    for b in live.iter_mut() {
        let result = b
            .backend
            .set_scene(&case.scene)
            .and_then(|_| trace(b.backend.as_mut(), &case.rays));
        let check = match &result {
            Ok(a) => compare(&case.name, &b.name, &case.rays, a, &reference),
            Err(e) => HitCheck::failed_call(&case.name, &b.name, "brute force", e.to_string()),
        };
        log(&format!(
            "generated {} on {}: {}",
            case.name,
            b.name,
            verdict(&check)
        ));
        row.checks.push(check);
        excused.push(match &result {
            Ok(a) => face_plane_misses(&case.rays, a, &reference),
            Err(_) => Vec::new(),
        });
        answers.push(result.ok());
    }
    // Backends against each other: exactly the rule, except on rays where either
    // was excused against the oracle by the face-plane convention.
    for i in 0..live.len() {
        for j in i + 1..live.len() {
            let (Some(Some(a)), Some(Some(b))) = (answers.get(i), answers.get(j)) else {
                continue;
            };
            let pairs = Reference::pairs(&b.hits);
            let uv = Reference::uvs(&b.hits);
            let instances = Reference::instances_of(&b.hits);
            let scales = origin_scales(&case.scene, &case.rays, &triples(&b.hits));
            let either: Vec<bool> = (0..case.rays.len())
                .map(|k| {
                    let of = |x: usize| excused.get(x).and_then(|e| e.get(k)) == Some(&true);
                    of(i) || of(j)
                })
                .collect();
            let check = compare(
                &case.name,
                &live[i].name,
                &case.rays,
                a,
                &Reference {
                    name: &live[j].name,
                    hits: &pairs,
                    uv: Some(&uv),
                    occluded: &b.occluded,
                    tie_limit: None,
                    face_planes: None,
                    also_excused: Some(&either),
                    instances: Some(Instanced {
                        ids: &instances,
                        scales: &scales,
                    }),
                },
            );
            log(&format!(
                "generated {}: {} vs {}: {}",
                case.name,
                live[i].name,
                live[j].name,
                verdict(&check)
            ));
            row.checks.push(check);
        }
    }
    row
}

/// Primitives a ray may meet: a flat scene's own, or every instance's
/// geometry's, counted once per instance.
pub fn placed_primitives(scene: &Scene) -> usize {
    if !scene.is_two_level() {
        return scene.primitive_count();
    }
    scene
        .instances()
        .iter()
        .filter_map(|i| scene.geometries().get(i.geometry as usize))
        .map(|g| g.primitive_count())
        .sum()
}

/// One refit case on every backend: the scene set, the mesh's vertices moved
/// frame by frame through `update_scene`, the rays traced; then the same
/// scene built afresh with the last frame's vertices (`set_scene`) and traced
/// again. The refit answers must agree with the fresh build's under the
/// agreement rule, instances included (ties counted).
pub(super) fn run_refit(
    case: &RefitCase,
    live: &mut [Live],
    log: &mut dyn FnMut(&str),
) -> GeneratedRow {
    let last = case.frames.last().unwrap_or(&case.initial);
    let fresh_scene = case.scene(last);
    let mut row = GeneratedRow {
        name: case.name.clone(),
        family: "refit",
        description: case.description.clone(),
        seed: case.seed,
        primitives: placed_primitives(&fresh_scene),
        rays: case.rays.len(),
        oracle_hits: 0,
        checks: Vec::new(),
    };
    for b in live.iter_mut() {
        let refit = b
            .backend
            .set_scene(&case.scene(&case.initial))
            .and_then(|_| {
                for frame in &case.frames {
                    let mut update = SceneUpdate::new();
                    update.set_vertices(case.geometry, frame);
                    b.backend.update_scene(&update)?;
                }
                trace(b.backend.as_mut(), &case.rays)
            });
        let fresh = b
            .backend
            .set_scene(&fresh_scene)
            .and_then(|_| trace(b.backend.as_mut(), &case.rays));
        let check = match (refit, fresh) {
            (Ok(a), Ok(f)) => {
                row.oracle_hits = f.hits.iter().filter(|h| h.is_hit()).count();
                let pairs = Reference::pairs(&f.hits);
                let uv = Reference::uvs(&f.hits);
                let instances = Reference::instances_of(&f.hits);
                let scales = origin_scales(&fresh_scene, &case.rays, &triples(&f.hits));
                compare(
                    &case.name,
                    &b.name,
                    &case.rays,
                    &a,
                    &Reference {
                        name: "a fresh build",
                        hits: &pairs,
                        uv: Some(&uv),
                        occluded: &f.occluded,
                        tie_limit: None,
                        face_planes: None,
                        also_excused: None,
                        instances: Some(Instanced {
                            ids: &instances,
                            scales: &scales,
                        }),
                    },
                )
            }
            (Err(e), _) | (_, Err(e)) => {
                HitCheck::failed_call(&case.name, &b.name, "a fresh build", e.to_string())
            }
        };
        log(&format!(
            "refit {} on {} vs a fresh build: {}",
            case.name,
            b.name,
            verdict(&check)
        ));
        row.checks.push(check);
    }
    row
}
