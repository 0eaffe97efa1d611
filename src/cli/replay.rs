//! `prism bench --scene NAME --rays FILE [--hits FILE]`: a ray file (such as
//! a bounce that `prism render --record` wrote) traced on a built-in scene by
//! `intersect` alone, timed in Mrays/s, and its hits checked against the
//! recorded ones (`.hits`; `.ihits` for a two-level scene).

use super::bench::{check_reference_length, median, read_some_rays, refuse_render_settings};
use crate::{BenchArgs, CliError, open_backend};
use indicatif::{ProgressBar, ProgressStyle};
use prism::reference::AgreementCounts;
use prism::{Hit, Ray};
use prism_conformance::hits::{instance_agreement, origin_scales};
use std::path::Path;

/// The recorded hits, in the form the scene's kind calls for.
enum Reference {
    Flat(Vec<(f32, u32)>),
    Instanced(Vec<(f32, u32, u32)>),
}

impl Reference {
    /// Whether hit `i` is the recorded one bit for bit (the same `t`, the
    /// same primitive and instance, or both a miss).
    fn identical(&self, i: usize, hit: &Hit) -> bool {
        let (t, prim, instance) = match self {
            Reference::Flat(r) => (r[i].0, r[i].1, None),
            Reference::Instanced(r) => (r[i].0, r[i].1, Some(r[i].2)),
        };
        if prim == Hit::NO_PRIM || !hit.is_hit() {
            return prim == Hit::NO_PRIM && !hit.is_hit();
        }
        t.to_bits() == hit.t.to_bits()
            && prim == hit.prim
            && instance.is_none_or(|k| k == hit.instance)
    }
}

pub(crate) fn bench_scene_rays(
    a: &BenchArgs,
    name: &str,
    rays_path: &Path,
) -> Result<(), CliError> {
    refuse_render_settings(
        &a.scene,
        "--rays traces the ray file as it is: --width, --height, --spp, --depth, --seed, \
         --integrator and --ao-* apply to renders only",
    )?;
    let preset = prism::builtin_scene(name)?;
    let two_level = preset.scene.is_two_level();
    let rays = read_some_rays(rays_path)?;
    // The reference is read and checked before any timing, so that a wrong
    // file fails at once.
    let reference = match &a.hits {
        Some(hits_path) => {
            let ext = hits_path.extension().and_then(|e| e.to_str());
            let (reference, len) = match (two_level, ext) {
                (false, Some("hits")) => {
                    let r = prism::rays::read_hits(hits_path)?;
                    let len = r.len();
                    (Reference::Flat(r), len)
                }
                (true, Some("ihits")) => {
                    let r = prism::rays::read_instance_hits(hits_path)?;
                    let len = r.len();
                    (Reference::Instanced(r), len)
                }
                (false, _) => {
                    return Err(CliError::Usage(
                        "--hits: this scene is flat: give its .hits file (t, primitive)",
                    ));
                }
                (true, _) => {
                    return Err(CliError::Usage(
                        "--hits: this scene is two-level: give its .ihits file (t, primitive, instance)",
                    ));
                }
            };
            check_reference_length(hits_path, len, rays_path, rays.len())?;
            Some((hits_path, reference))
        }
        None => None,
    };
    let mut backend = open_backend(&a.scene)?;
    let bar = ProgressBar::new(u64::from(a.runs) + 1).with_style(
        ProgressStyle::with_template(
            "{spinner} {msg} [{bar:40}] {pos}/{len} runs {elapsed_precise}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(format!(
        "tracing {} rays of {} on {name}",
        rays.len(),
        rays_path.display()
    ));
    let build = backend.set_scene(&preset.scene)?.build;
    // The file's rays, repeated to --batch rays a call when asked.
    let batch = a.batch.map_or(rays.len(), |b| (b as usize).max(rays.len()));
    let traced: std::borrow::Cow<[Ray]> = if batch > rays.len() {
        rays.iter()
            .copied()
            .cycle()
            .take(batch)
            .collect::<Vec<_>>()
            .into()
    } else {
        rays.as_slice().into()
    };
    let mut all_hits = vec![Hit::MISS; traced.len()];
    // One untimed warm-up, as for a render.
    backend.intersect(&traced, &mut all_hits)?;
    bar.inc(1);
    let mut rates = Vec::new();
    for _ in 0..a.runs {
        let s = backend.intersect(&traced, &mut all_hits)?;
        rates.push(traced.len() as f64 / s.trace.as_secs_f64() / 1e6);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let hits = &all_hits[..rays.len()];
    let info = backend.info();
    println!(
        "bench {name} {} ({} rays a call) on {} [{}], median of {}: build {:.1} ms, closest {:.2} Mrays/s",
        rays_path.display(),
        traced.len(),
        info.name,
        info.device,
        a.runs,
        build.as_secs_f64() * 1e3,
        median(rates)
    );
    if let Some((hits_path, reference)) = &reference {
        judge(info.name, hits_path, &preset.scene, &rays, hits, reference)?;
    }
    Ok(())
}

/// Print how the hits compare with the recorded ones, failing on any
/// mismatch (a tie, another surface at the same `t` within rounding, is
/// reported, not failed).
fn judge(
    backend: &str,
    hits_path: &Path,
    scene: &prism::Scene,
    rays: &[Ray],
    hits: &[Hit],
    reference: &Reference,
) -> Result<(), CliError> {
    let c: AgreementCounts = match reference {
        Reference::Flat(r) => AgreementCounts::compare(rays, hits, r),
        Reference::Instanced(r) => {
            instance_agreement(rays, hits, r, &origin_scales(scene, rays, r))
        }
    };
    let identical = (0..hits.len())
        .filter(|&i| reference.identical(i, &hits[i]))
        .count();
    println!(
        "agreement with {}: {} rays, {} identical, {} match, {} ties, {} mismatches (first: {:?})",
        hits_path.display(),
        c.total,
        identical,
        c.matches,
        c.ties,
        c.mismatches,
        c.first_mismatch
    );
    if !c.passed() {
        return Err(CliError::Disagrees {
            backend: backend.to_string(),
            hits: hits_path.display().to_string(),
            mismatches: c.mismatches,
            total: c.total,
            occluded: 0,
        });
    }
    Ok(())
}
