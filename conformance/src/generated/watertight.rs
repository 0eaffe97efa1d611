//! The generated flat cases made of meshes, which aim at watertightness:
//! rays exactly through the shared edges and vertices of a tilted grid and of
//! a closed cube-sphere, and meshes with duplicate vertices, zero-area
//! triangles, slivers, needles and duplicate triangles.

use super::{DEGENERATE, GRAZING, GenSize, GeneratedCase, Rng, grey};
use glam::{Quat, Vec3};
use prism_core::{Ray, Scene};

/// An `n x n` grid of quads, two triangles each, sharing vertices; `jitter`
/// moves the interior vertices off the plane.
fn grid(n: usize, jitter: f32, rng: &mut Rng) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let mut pos = Vec::with_capacity((n + 1) * (n + 1));
    for j in 0..=n {
        for i in 0..=n {
            let x = -1.0 + 2.0 * i as f32 / n as f32;
            let y = -1.0 + 2.0 * j as f32 / n as f32;
            let interior = i > 0 && j > 0 && i < n && j < n;
            let z = if interior {
                jitter * rng.range(-1.0, 1.0)
            } else {
                0.0
            };
            pos.push(Vec3::new(x, y, z));
        }
    }
    let at = |i: usize, j: usize| (j * (n + 1) + i) as u32;
    let mut tris = Vec::with_capacity(2 * n * n);
    for j in 0..n {
        for i in 0..n {
            // Alternate the diagonal so vertices have 4 and 8 neighbours.
            if (i + j) % 2 == 0 {
                tris.push([at(i, j), at(i + 1, j), at(i + 1, j + 1)]);
                tris.push([at(i, j), at(i + 1, j + 1), at(i, j + 1)]);
            } else {
                tris.push([at(i, j), at(i + 1, j), at(i, j + 1)]);
                tris.push([at(i + 1, j), at(i + 1, j + 1), at(i, j + 1)]);
            }
        }
    }
    (pos, tris)
}

/// Points on interior shared features of a mesh: vertices, edge midpoints and
/// random points along edges, for edges shared by two triangles.
fn shared_features(pos: &[Vec3], tris: &[[u32; 3]], rng: &mut Rng, count: usize) -> Vec<Vec3> {
    let mut edges: Vec<(u32, u32)> = tris
        .iter()
        .flat_map(|t| [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])])
        .map(|(a, b)| (a.min(b), a.max(b)))
        .collect();
    edges.sort_unstable();
    let shared: Vec<(u32, u32)> = edges
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0])
        .collect();
    let mut points = Vec::with_capacity(count);
    if shared.is_empty() {
        return points;
    }
    for k in 0..count {
        // ok: `shared` is not empty, and its indices come from triangles made
        // for `pos` by this module's own mesh builders.
        let (a, b) = shared[rng.index(shared.len())];
        let (Some(&pa), Some(&pb)) = (pos.get(a as usize), pos.get(b as usize)) else {
            continue;
        };
        points.push(match k % 3 {
            0 => pa,
            1 => 0.5 * (pa + pb),
            _ => pa.lerp(pb, rng.f()),
        });
    }
    points
}

/// A random direction whose cosine with `normal` is at least `min_cos` in
/// magnitude, on the side `sign` (+1 along the normal, -1 against, 0 either).
fn direction_across(rng: &mut Rng, normal: Vec3, min_cos: f32, sign: f32) -> Vec3 {
    loop {
        let d = rng.unit();
        let c = d.dot(normal);
        if c.abs() >= min_cos && c * sign >= 0.0 {
            return d;
        }
    }
}

/// Rays crossing the surface at `targets`, from `distance` before it: never
/// closer than `min_cos` to the surface's plane (`normal`), so each ray goes
/// through the surface there rather than touching it, and a watertight test must
/// report a hit.
fn rays_through(
    targets: &[Vec3],
    normal: Vec3,
    min_cos: f32,
    rng: &mut Rng,
    distance: f32,
) -> Vec<Ray> {
    targets
        .iter()
        .map(|&p| {
            let d = direction_across(rng, normal, min_cos, 0.0);
            Ray::new(p - distance * d, d)
        })
        .collect()
}

pub(super) fn grazing_grid(seed: u32, size: GenSize) -> GeneratedCase {
    let mut rng = Rng::new(seed, GRAZING);
    let mut s = Scene::new();
    let m = grey(&mut s);
    // Jitter 0.02 on cells of 1/6: faces tilt at most ~14 degrees from the
    // grid's plane, so rays at least 24 degrees off it cross, never touch.
    let (pos, tris) = grid(12, 0.02, &mut rng);
    let rot = Quat::from_axis_angle(rng.unit(), rng.range(0.0, 6.2831855));
    let pos: Vec<Vec3> = pos.iter().map(|&p| rot * p).collect();
    let added = s.add_mesh(&pos, &tris, m).is_ok();
    let n = if added { size.rays } else { 0 };
    let targets = shared_features(&pos, &tris, &mut rng, n);
    let rays = rays_through(&targets, rot * Vec3::Z, 0.4, &mut rng, 2.0);
    GeneratedCase {
        name: format!("grazing/grid/{seed}"),
        family: "grazing",
        description: format!(
            "a tilted 12x12 grid ({} triangles, interior vertices jittered off the plane); rays exactly \
             through shared vertices and edges, crossing at 24 degrees or more from both sides",
            tris.len()
        ),
        seed,
        scene: s,
        rays,
    }
}

/// A cube whose faces are `n x n` grids, projected on the unit sphere: a closed
/// mesh with shared vertices.
fn cube_sphere(n: usize) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let mut pos: Vec<Vec3> = Vec::new();
    let mut tris = Vec::new();
    let index_of = |p: Vec3, pos: &mut Vec<Vec3>| -> u32 {
        // Vertices on cube edges are shared between faces: find them exactly.
        match pos.iter().position(|q| *q == p) {
            Some(i) => i as u32,
            None => {
                pos.push(p);
                (pos.len() - 1) as u32
            }
        }
    };
    let faces = [
        (Vec3::X, Vec3::Y, Vec3::Z),
        (Vec3::NEG_X, Vec3::Z, Vec3::Y),
        (Vec3::Y, Vec3::Z, Vec3::X),
        (Vec3::NEG_Y, Vec3::X, Vec3::Z),
        (Vec3::Z, Vec3::X, Vec3::Y),
        (Vec3::NEG_Z, Vec3::Y, Vec3::X),
    ];
    for (normal, u, v) in faces {
        let corner = |i: usize, j: usize| {
            let a = -1.0 + 2.0 * i as f32 / n as f32;
            let b = -1.0 + 2.0 * j as f32 / n as f32;
            // Snap to the cube's lattice first so shared edge vertices are bit-equal.
            let p = normal + a * u + b * v;
            p.normalize()
        };
        for j in 0..n {
            for i in 0..n {
                let a = index_of(corner(i, j), &mut pos);
                let b = index_of(corner(i + 1, j), &mut pos);
                let c = index_of(corner(i + 1, j + 1), &mut pos);
                let d = index_of(corner(i, j + 1), &mut pos);
                tris.push([a, b, c]);
                tris.push([a, c, d]);
            }
        }
    }
    (pos, tris)
}

pub(super) fn grazing_closed(seed: u32, size: GenSize) -> GeneratedCase {
    let mut rng = Rng::new(seed, GRAZING + 100);
    let mut s = Scene::new();
    let m = grey(&mut s);
    let (pos, tris) = cube_sphere(6);
    let rot = Quat::from_axis_angle(rng.unit(), rng.range(0.0, 6.2831855));
    let pos: Vec<Vec3> = pos.iter().map(|&p| rot * p).collect();
    let added = s.add_mesh(&pos, &tris, m).is_ok();
    let n = if added { size.rays } else { 0 };
    let targets = shared_features(&pos, &tris, &mut rng, n);
    // Faces of a 6x6 cube-sphere are at most ~16 degrees from the sphere's
    // tangent plane: rays 45 degrees off it cross the surface. Half come from
    // outside, half start inside (half a chord before the target).
    let rays = targets
        .iter()
        .enumerate()
        .map(|(k, &p)| {
            let normal = p.normalize_or(Vec3::Z);
            if k % 2 == 0 {
                let d = direction_across(&mut rng, normal, 0.7, -1.0);
                Ray::new(p - 3.0 * d, d)
            } else {
                let d = direction_across(&mut rng, normal, 0.7, 1.0);
                Ray::new(p - d.dot(p) * d, d)
            }
        })
        .collect();
    GeneratedCase {
        name: format!("grazing/closed/{seed}"),
        family: "grazing",
        description: format!(
            "a closed, rotated cube-sphere ({} triangles); rays exactly through shared vertices and edges \
             from outside and inside: a watertight test never lets one through",
            tris.len()
        ),
        seed,
        scene: s,
        rays,
    }
}

pub(super) fn degenerate(seed: u32, size: GenSize) -> GeneratedCase {
    let mut rng = Rng::new(seed, DEGENERATE);
    let mut s = Scene::new();
    let m = grey(&mut s);
    let mut pos: Vec<Vec3> = Vec::new();
    let mut tris: Vec<[u32; 3]> = Vec::new();
    // Points to aim at, with the normal of their surface.
    let mut targets: Vec<(Vec3, Vec3)> = Vec::new();
    let groups = (size.triangles / 8).max(4);
    for _ in 0..groups {
        let c = rng.in_box(1.0);
        let e1 = 0.2 * rng.unit();
        let e2 = 0.2 * rng.unit();
        let base = pos.len() as u32;
        // A quad whose second triangle uses duplicated vertices (same positions,
        // other indices): the seam must stay watertight.
        pos.extend([c, c + e1, c + e1 + e2, c + e2, c, c + e1 + e2]);
        tris.push([base, base + 1, base + 2]);
        tris.push([base + 4, base + 5, base + 3]);
        let n = e1.cross(e2).normalize_or(Vec3::Z);
        targets.push((c + 0.5 * (e1 + e2), n));
        targets.push((c + rng.f() * (e1 + e2), n));
        // Zero-area triangles: a repeated index, and three collinear points.
        tris.push([base, base, base + 1]);
        let k = pos.len() as u32;
        pos.extend([c, c + 0.5 * e1, c + e1]);
        tris.push([k, k + 1, k + 2]);
        // A sliver (height 1e-5 of its length) and a needle (two vertices 1e-6 apart).
        let k = pos.len() as u32;
        let w = e2 - e2.dot(e1.normalize_or(Vec3::X)) * e1.normalize_or(Vec3::X);
        let w = w.normalize_or(n.cross(e1).normalize_or(Vec3::Y));
        pos.extend([
            c + n * 0.1,
            c + n * 0.1 + e1,
            c + n * 0.1 + 0.5 * e1 + 1e-5 * w,
        ]);
        tris.push([k, k + 1, k + 2]);
        targets.push((
            c + n * 0.1 + 0.5 * e1 + 0.3e-5 * w,
            e1.cross(w).normalize_or(n),
        ));
        let k = pos.len() as u32;
        pos.extend([c - n * 0.1, c - n * 0.1 + e2, c - n * 0.1 + e2 + 1e-6 * w]);
        tris.push([k, k + 1, k + 2]);
        // The same triangle twice, and once more with the opposite winding: ties.
        let k = pos.len() as u32;
        let q = c + 0.3 * n;
        pos.extend([q, q + e1, q + e2]);
        tris.push([k, k + 1, k + 2]);
        tris.push([k, k + 1, k + 2]);
        tris.push([k, k + 2, k + 1]);
        targets.push((q + 0.25 * (e1 + e2), n));
    }
    let added = s.add_mesh(&pos, &tris, m).is_ok();
    let n = if added { size.rays } else { 0 };
    let mut rays = Vec::with_capacity(n);
    for k in 0..n {
        if k % 2 == 0 && !targets.is_empty() {
            // ok: `targets` is not empty (checked above).
            let (p, normal) = targets[rng.index(targets.len())];
            let d = direction_across(&mut rng, normal, 0.2, 0.0);
            rays.push(Ray::new(p - 2.0 * d, d));
        } else {
            let o = 3.0 * rng.unit();
            let t = rng.in_box(1.0);
            rays.push(Ray::new(o, (t - o).normalize_or(Vec3::Y)));
        }
    }
    GeneratedCase {
        name: format!("degenerate/{seed}"),
        family: "degenerate",
        description: format!(
            "{} triangles: quads split across duplicated vertices, zero-area triangles (repeated index, \
             collinear), slivers, needles, and duplicate triangles (same and opposite winding)",
            tris.len()
        ),
        seed,
        scene: s,
        rays,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generated::SMALL;
    use crate::generated::brute_force;
    use prism_core::Hit;

    #[test]
    fn grazing_rays_through_the_closed_mesh_always_hit() {
        let case = grazing_closed(1, SMALL);
        let a = brute_force(&case.scene, &case.rays);
        assert!(a.hits.iter().all(Hit::is_hit));
    }
}
