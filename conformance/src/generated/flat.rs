//! The generated flat cases made of random primitives: triangle soups,
//! sphere sets and both (the BVH builder and traversal on arbitrary input),
//! rays leaving surfaces (self-intersection), one scene from 1e-4 to 1e5
//! units (precision), and axis-aligned boxes met by rays with zero direction
//! components (the slab test's infinities).

use super::{
    AXIS, GenSize, GeneratedCase, MIXED, Rng, SCALE, SOUP, SPHERES, SURFACE, add_soup, add_spheres,
    grey, scatter_rays,
};
use glam::Vec3;
use prism_core::integrator::spawn_tmin;
use prism_core::scene::PrimRef;
use prism_core::{Ray, Scene};

pub(super) fn soup(seed: u32, size: GenSize) -> GeneratedCase {
    let mut rng = Rng::new(seed, SOUP);
    let mut s = Scene::new();
    let m = grey(&mut s);
    add_soup(&mut s, &mut rng, size.triangles, m);
    let rays = scatter_rays(&mut rng, size.rays, 1.0);
    GeneratedCase {
        name: format!("soup/{seed}"),
        family: "soup",
        description: format!(
            "{} random triangles in [-1,1]^3; rays from outside and inside, some non-unit, some with finite tmax",
            size.triangles
        ),
        seed,
        scene: s,
        rays,
    }
}

pub(super) fn spheres(seed: u32, size: GenSize) -> GeneratedCase {
    let mut rng = Rng::new(seed, SPHERES);
    let mut s = Scene::new();
    let m = grey(&mut s);
    add_spheres(&mut s, &mut rng, size.spheres, m);
    let mut rays = scatter_rays(&mut rng, size.rays, 1.0);
    // Rays from the centre of a sphere: the far root of the quadratic.
    let centers: Vec<Vec3> = s.spheres().iter().map(|c| c.truncate()).collect();
    if !centers.is_empty() {
        for (i, r) in rays.iter_mut().enumerate().filter(|(i, _)| i % 7 == 3) {
            // ok: `centers` is not empty.
            r.origin = centers[i % centers.len()];
        }
    }
    GeneratedCase {
        name: format!("spheres/{seed}"),
        family: "spheres",
        description: format!(
            "{} random spheres (radii 0.01 to 0.4, some nested); rays from outside, inside and sphere centres",
            s.sphere_count()
        ),
        seed,
        scene: s,
        rays,
    }
}

pub(super) fn mixed(seed: u32, size: GenSize) -> GeneratedCase {
    let mut rng = Rng::new(seed, MIXED);
    let mut s = Scene::new();
    let m = grey(&mut s);
    add_soup(&mut s, &mut rng, size.triangles / 2, m);
    add_spheres(&mut s, &mut rng, size.spheres / 2, m);
    let rays = scatter_rays(&mut rng, size.rays, 1.0);
    GeneratedCase {
        name: format!("mixed/{seed}"),
        family: "mixed",
        description: format!(
            "{} triangles and {} spheres sharing one BVH",
            s.triangle_count(),
            s.sphere_count()
        ),
        seed,
        scene: s,
        rays,
    }
}

pub(super) fn surface(seed: u32, size: GenSize) -> GeneratedCase {
    let mut rng = Rng::new(seed, SURFACE);
    let mut s = Scene::new();
    let m = grey(&mut s);
    add_soup(&mut s, &mut rng, size.triangles / 2, m);
    add_spheres(&mut s, &mut rng, size.spheres / 2, m);
    let count = s.primitive_count() as u32;
    let mut rays = Vec::with_capacity(size.rays);
    while rays.len() < size.rays && count > 0 {
        let id = rng.index(count as usize) as u32;
        let p = match s.primitive(id) {
            Some(PrimRef::Triangle(t)) => s.triangle(t).map(|[a, b, c]| {
                let (mut u, mut v) = (rng.f(), rng.f());
                if u + v > 1.0 {
                    (u, v) = (1.0 - u, 1.0 - v);
                }
                a + u * (b - a) + v * (c - a)
            }),
            Some(PrimRef::Sphere(k)) => s
                .spheres()
                .get(k as usize)
                .map(|cr| cr.truncate() + cr.w * rng.unit()),
            // The generated scenes hold triangles and spheres only.
            Some(PrimRef::Heightfield(_)) | None => None,
        };
        if let Some(p) = p {
            let d = rng.unit();
            // A point given, not found by a ray: its own magnitude alone.
            rays.push(Ray::segment(p, d, spawn_tmin(p, p), f32::INFINITY));
        }
    }
    GeneratedCase {
        name: format!("surface/{seed}"),
        family: "surface",
        description: format!(
            "rays starting on the surface of {} triangles and spheres, leaving to either side, with the \
             integrators' start distance (spawn_tmin)",
            count
        ),
        seed,
        scene: s,
        rays,
    }
}

pub(super) fn scaled(seed: u32, scale: f32, size: GenSize) -> GeneratedCase {
    let mut rng = Rng::new(seed, SCALE);
    let mut s = Scene::new();
    let m = grey(&mut s);
    // The scene sits 4 of its own sizes from the world origin, so the origin's
    // rounding (relative to the coordinates) matters as it does in real scenes.
    let offset = Vec3::new(4.0, -2.0, 3.0) * scale;
    let mut unit = Scene::new();
    add_soup(&mut unit, &mut rng, size.triangles / 2, m);
    add_spheres(&mut unit, &mut rng, size.spheres / 2, m);
    for id in 0..unit.primitive_count() as u32 {
        match unit.primitive(id) {
            Some(PrimRef::Triangle(t)) => {
                if let Some([a, b, c]) = unit.triangle(t) {
                    s.add_triangle(
                        a * scale + offset,
                        b * scale + offset,
                        c * scale + offset,
                        m,
                    );
                }
            }
            Some(PrimRef::Sphere(k)) => {
                if let Some(cr) = unit.spheres().get(k as usize) {
                    s.add_sphere(cr.truncate() * scale + offset, cr.w * scale, m);
                }
            }
            // The generated scenes hold triangles and spheres only.
            Some(PrimRef::Heightfield(_)) | None => {}
        }
    }
    let rays = scatter_rays(&mut rng, size.rays, 1.0)
        .into_iter()
        .map(|r| {
            // t is in units of dir: scale the origin only, so t scales too.
            let dir = r.dir * scale;
            Ray::segment(r.origin * scale + offset, dir, r.tmin, r.tmax)
        })
        .collect();
    GeneratedCase {
        name: format!("scale/{scale:e}"),
        family: "scale",
        description: format!(
            "a soup of triangles and spheres scaled by {scale:e} and moved {:.1e} from the origin; rays and \
             directions scaled alike",
            offset.length()
        ),
        seed,
        scene: s,
        rays,
    }
}

/// Two triangles of an axis-aligned quad `[lo, hi]` (flat along `axis`).
fn add_quad(s: &mut Scene, lo: Vec3, hi: Vec3, m: u32) {
    let d = hi - lo;
    let (a, b) = if d.x == 0.0 {
        (Vec3::Y * d, Vec3::Z * d)
    } else if d.y == 0.0 {
        (Vec3::X * d, Vec3::Z * d)
    } else {
        (Vec3::X * d, Vec3::Y * d)
    };
    s.add_triangle(lo, lo + a, lo + a + b, m);
    s.add_triangle(lo, lo + a + b, lo + b, m);
}

/// Twelve triangles of the box `[lo, hi]`.
fn add_box(s: &mut Scene, lo: Vec3, hi: Vec3, m: u32) {
    for axis in 0..3 {
        for side in [lo[axis], hi[axis]] {
            let mut a = lo;
            let mut b = hi;
            a[axis] = side;
            b[axis] = side;
            add_quad(s, a, b, m);
        }
    }
}

pub(super) fn axis(seed: u32, size: GenSize) -> GeneratedCase {
    let mut rng = Rng::new(seed, AXIS);
    let mut s = Scene::new();
    let m = grey(&mut s);
    // Unit boxes on an integer lattice, some touching, some apart; flat quads
    // (zero-thickness bounding boxes) between them; a few spheres.
    for i in -2..2 {
        for j in -2..2 {
            for k in -2..2 {
                let lo = Vec3::new(i as f32, j as f32, k as f32);
                match rng.index(4) {
                    0 => add_box(&mut s, lo, lo + Vec3::ONE, m),
                    1 => add_box(&mut s, lo + 0.25, lo + 0.75, m),
                    2 => add_quad(&mut s, lo, lo + Vec3::new(1.0, 1.0, 0.0), m),
                    _ => {
                        s.add_sphere(lo + 0.5, 0.5, m);
                    }
                }
            }
        }
    }
    let dirs = [
        Vec3::X,
        Vec3::NEG_X,
        Vec3::Y,
        Vec3::NEG_Y,
        Vec3::Z,
        Vec3::NEG_Z,
        // Not normalised: with lattice origins every operation of the tests is
        // exact, so even rays that only touch an edge have one right answer.
        Vec3::new(1.0, 1.0, 0.0),
        Vec3::new(0.0, -1.0, 1.0),
        Vec3::new(-1.0, 0.0, -1.0),
    ];
    let mut rays = Vec::with_capacity(size.rays);
    for k in 0..size.rays {
        // ok: `dirs` is a non-empty constant list.
        let d = dirs[k % dirs.len()];
        // Coordinates are dyadic, so every operation of the tests is exact. On an
        // axis the ray does not move along, a quarter of the origins lie in the
        // lattice or quarter planes (the boxes' face planes, where the slab
        // test's face-plane convention decides), the rest on odd multiples of
        // 1/64 (never a face plane); on the other axes, anywhere dyadic.
        let odd64 = |rng: &mut Rng| ((2 * rng.index(160) + 1) as f32 - 160.0) / 64.0;
        let quarter = |rng: &mut Rng| (rng.index(17) as f32 - 8.0) * 0.25;
        let mut p = Vec3::ZERO;
        for k in 0..3 {
            p[k] = match (d[k] == 0.0, rng.index(8)) {
                (true, 0) => rng.index(5) as f32 - 2.0,
                (true, 1) => quarter(&mut rng),
                (false, k) if k % 2 == 0 => quarter(&mut rng),
                _ => odd64(&mut rng),
            };
        }
        rays.push(Ray::new(p - 4.0 * d, d));
    }
    GeneratedCase {
        name: format!("axis/{seed}"),
        family: "axis",
        description: format!(
            "axis-aligned boxes, flat quads and spheres on an integer lattice ({} primitives); rays along \
             the axes and axis diagonals (zero direction components), a quarter of them lying in box face \
             planes; all coordinates dyadic, so every operation is exact",
            s.primitive_count()
        ),
        seed,
        scene: s,
        rays,
    }
}
