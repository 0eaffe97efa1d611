//! The data behind the frame-budget time model: views of `prism animate`'s
//! scenes (the path's views, and the same views turned 180 degrees) and of
//! the calibration scene, each rendered with AO at several ray counts on one
//! or more backends (best of three after a warm-up, by the backend's trace
//! clock), beside the work of the same frame counted on the host.
//!
//! The work is counted from whole warps' worth of pixels (16 x 2, the
//! pixels a CUDA AO warp or a WGSL subgroup takes together), a quarter of
//! the frame's warps, so that besides the totals the time model charges
//! (rays, node steps and primitive tests per ray kind) it gives what a SIMT
//! device pays: each warp's slowest camera ray, its AO rays dealt over the
//! 32 lanes in rounds (each round as long as its longest ray), and the
//! distinct nodes and primitives a warp's camera rays or a round's AO rays
//! touch (its memory traffic).
//!
//! Prints one CSV row a frame and backend. Usage: model_views [BACKENDS]
//! [WIDTH HEIGHT] (a comma-separated list: cuda, 1920 1080; PRISM_SCENES
//! names the shared scenes directory; `none`: the work alone, no frames).

use glam::Vec3;
use prism::tune::calibration_scene;
use prism::tune::scenes::{by_name, path_camera};
use prism_core::integrator::{Tracer, render_pixel};
use prism_core::ray::{Hit, Ray};
use prism_core::tune::{Knobs, Visit, WalkLog, logged_closest, logged_occluded};
use prism_core::{
    Accel, Camera, Image, Integrator, NoProgress, PixelFormat, RenderSettings, Scene,
};
use rayon::prelude::*;
use std::cell::RefCell;
use std::path::PathBuf;
use std::process::ExitCode;

/// AO ray counts rendered (with shadows), and one without shadows.
const AO_COUNTS: [u32; 4] = [2, 8, 32, 64];
const AO_NO_SHADOW: u32 = 16;
/// AO rays counted a pixel (ray `i` of a pixel is the same for any count).
const AO_COUNTED: u32 = 64;
/// Warp rows counted: one in `ROW_STRIDE`.
const ROW_STRIDE: u32 = 4;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One query's work: kind (0 camera, 1 AO, 2 shadow), its visits, and for
/// a camera ray whether it hit.
struct Query {
    kind: u8,
    visits: Vec<Visit>,
    hit: bool,
}

#[derive(Default)]
struct Log(Vec<Visit>);

impl WalkLog for Log {
    fn visit(&mut self, v: Visit) {
        self.0.push(v);
    }
}

struct Recorder<'a> {
    accel: &'a Accel,
    log: RefCell<Vec<Query>>,
}

impl Recorder<'_> {
    fn push(&self, kind: u8, log: Log, hit: bool, ray: &Ray) {
        let octant = (ray.dir.x < 0.0) as u32
            | ((ray.dir.y < 0.0) as u32) << 1
            | ((ray.dir.z < 0.0) as u32) << 2;
        // The octant copy a GPU walk reads: the node index tagged with it.
        let visits = log
            .0
            .into_iter()
            .map(|v| match v {
                Visit::Node(i) => Visit::Node(i | octant << 28),
                other => other,
            })
            .collect();
        self.log.borrow_mut().push(Query { kind, visits, hit });
    }
}

impl Tracer for Recorder<'_> {
    fn accel(&self) -> &Accel {
        self.accel
    }
    fn closest_slot(&self, ray: &Ray) -> Hit {
        let mut log = Log::default();
        let hit = logged_closest(self.accel, ray, &mut log);
        self.push(0, log, hit.prim != Hit::NO_PRIM, ray);
        hit
    }
    fn occluded(&self, ray: &Ray) -> bool {
        let mut log = Log::default();
        let found = logged_occluded(self.accel, ray, &mut log);
        self.push(1, log, found, ray);
        found
    }
    fn light_blocked(&self, ray: &Ray) -> bool {
        let mut log = Log::default();
        let found = logged_occluded(self.accel, ray, &mut log);
        self.push(2, log, found, ray);
        found
    }
}

/// One lane's pixel: its camera ray, AO rays and shadow ray.
#[derive(Default)]
struct Lane {
    cam: Vec<Visit>,
    hit: bool,
    ao: Vec<Vec<Visit>>,
    shadow: Option<Vec<Visit>>,
}

fn lanes_of(
    accel: &Accel,
    settings: &RenderSettings,
    camera: &Camera,
    (w, h): (u32, u32),
    gx: u32,
    gy: u32,
) -> Vec<Lane> {
    let params = settings.params(accel, camera, w, h).expect("valid view"); // ok: example
    let rec = Recorder {
        accel,
        log: RefCell::new(Vec::new()),
    };
    let mut lanes = Vec::with_capacity(32);
    for ly in 0..2 {
        for lx in 0..16 {
            let (x, y) = (gx * 16 + lx, gy * 2 + ly);
            if x >= w || y >= h {
                continue;
            }
            rec.log.borrow_mut().clear();
            render_pixel(&rec, &params, x, y);
            let mut lane = Lane::default();
            for q in rec.log.borrow_mut().drain(..) {
                match q.kind {
                    0 => {
                        lane.cam = q.visits;
                        lane.hit = q.hit;
                    }
                    1 => lane.ao.push(q.visits),
                    _ => lane.shadow = Some(q.visits),
                }
            }
            lanes.push(lane);
        }
    }
    lanes
}

/// Node steps and primitive tests of a walk.
fn split(v: &[Visit]) -> (u32, u32) {
    let p = v.iter().filter(|x| matches!(x, Visit::Prim(_))).count() as u32;
    (v.len() as u32 - p, p)
}

/// The steps of a group of walks run in lockstep (a SIMT device): each
/// iteration one node step on every lane still walking, then the longest
/// of the lanes' leaf tests at that node.
fn lockstep(walks: &[&Vec<Visit>]) -> f64 {
    // Per walk, the primitive tests after each node step.
    let per: Vec<Vec<u32>> = walks
        .iter()
        .map(|w| {
            let mut v: Vec<u32> = Vec::new();
            for x in w.iter() {
                match x {
                    Visit::Prim(_) => {
                        if let Some(last) = v.last_mut() {
                            *last += 1;
                        } else {
                            v.push(1);
                        }
                    }
                    _ => v.push(0),
                }
            }
            v
        })
        .collect();
    let iters = per.iter().map(Vec::len).max().unwrap_or(0);
    (0..iters)
        .map(|i| {
            1.0 + per
                .iter()
                .filter_map(|v| v.get(i))
                .copied()
                .max()
                .unwrap_or(0) as f64
        })
        .sum()
}

/// Distinct nodes and distinct primitives over a group of walks.
fn distinct<'a>(walks: impl Iterator<Item = &'a Vec<Visit>>) -> (f64, f64) {
    let mut all: Vec<Visit> = walks.flatten().copied().collect();
    all.sort_unstable();
    all.dedup();
    let p = all.iter().filter(|x| matches!(x, Visit::Prim(_))).count();
    ((all.len() - p) as f64, p as f64)
}

/// Feature columns, in the order of the CSV header after `ms`.
const COLUMNS: &str = "pixels,cam_node,cam_prim,cam_warpmax,hits,ao_rays,ao_node,ao_prim,ao_roundmax,ao_lanemax,sh_rays,sh_node,sh_prim,sh_warpmax,ao_rounds,warps,cam_dnodes,cam_dprims,ao_dnodes,ao_dprims,sh_dnodes,sh_dprims,cam_lock,ao_lock,sh_lock,ao_deeprounds,ao_deeprays,cam_deepwarps,cam_deeprays";
const FEATURES: usize = 29;

/// Whether a walk leaves the top of the tree: more than two node steps, or
/// a primitive test.
fn deep(w: &[Visit]) -> bool {
    w.len() > 2 || w.iter().any(|v| matches!(v, Visit::Prim(_)))
}

/// One warp's features for `n` AO rays.
fn warp_features(lanes: &[Lane], n: usize, shadows: bool) -> [f64; FEATURES] {
    let mut f = [0.0f64; FEATURES];
    let mut cam_max = 0u32;
    let mut sh_max = 0u32;
    let mut ao_lane_max = 0u32;
    let mut rays: Vec<&Vec<Visit>> = Vec::new();
    let mut shadow_walks: Vec<&Vec<Visit>> = Vec::new();
    for l in lanes {
        let (a, b) = split(&l.cam);
        f[0] += 1.0;
        f[1] += a as f64;
        f[2] += b as f64;
        cam_max = cam_max.max(a + b);
        if l.hit {
            f[4] += 1.0;
            let mut lane_sum = 0;
            for walk in l.ao.iter().take(n) {
                let (a, b) = split(walk);
                f[5] += 1.0;
                f[6] += a as f64;
                f[7] += b as f64;
                rays.push(walk);
                lane_sum += a + b;
            }
            ao_lane_max = ao_lane_max.max(lane_sum);
            if let (true, Some(walk)) = (shadows, &l.shadow) {
                let (a, b) = split(walk);
                f[10] += 1.0;
                f[11] += a as f64;
                f[12] += b as f64;
                sh_max = sh_max.max(a + b);
                shadow_walks.push(walk);
            }
        }
    }
    f[3] = cam_max as f64;
    for round in rays.chunks(32) {
        f[23] += lockstep(round);
        let d = round.iter().filter(|w| deep(w)).count();
        f[25] += (d > 0) as u32 as f64;
        f[26] += d as f64;
        f[8] += round.iter().map(|w| w.len()).max().unwrap_or(0) as f64;
        let (dn, dp) = distinct(round.iter().copied());
        f[18] += dn;
        f[19] += dp;
        f[14] += 1.0;
    }
    f[9] = ao_lane_max as f64;
    f[13] = sh_max as f64;
    f[15] = 1.0;
    let (dn, dp) = distinct(lanes.iter().map(|l| &l.cam));
    f[16] = dn;
    f[17] = dp;
    let d = lanes.iter().filter(|l| deep(&l.cam)).count();
    f[27] = (d > 0) as u32 as f64;
    f[28] = d as f64;
    f[22] = lockstep(&lanes.iter().map(|l| &l.cam).collect::<Vec<_>>());
    f[24] = lockstep(&shadow_walks);
    let (dn, dp) = distinct(shadow_walks.into_iter());
    f[20] = dn;
    f[21] = dp;
    f
}

/// A scene, its AO ray length and its named views.
type Job = (String, Scene, f32, Vec<(String, Camera)>);

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let names = args.first().map_or("cuda", String::as_str);
    let w: u32 = args.get(1).map_or(Ok(1920), |a| a.parse())?;
    let h: u32 = args.get(2).map_or(Ok(1080), |a| a.parse())?;
    let scenes =
        PathBuf::from(std::env::var("PRISM_SCENES").unwrap_or_else(|_| "../shared/scenes".into()));
    let mut backends = Vec::new();
    for name in names.split(',').filter(|n| *n != "none") {
        backends.push((
            name,
            prism::open(prism::BackendChoice::from_name(name)?)?.backend,
        ));
    }

    let mut jobs: Vec<Job> = Vec::new();
    for name in ["ogre", "crowd"] {
        let anim = by_name(name, &scenes)?;
        let mut views = Vec::new();
        for f in [0u32, 33, 66, 99] {
            views.push((format!("f{f}"), path_camera(&anim, f, 100, None)));
        }
        for f in [33u32, 66, 99] {
            views.push((format!("t{f}"), path_camera(&anim, f, 100, Some(0))));
        }
        jobs.push((name.into(), anim.scene, anim.ao_distance, views));
    }
    let (scene, cal_views) = calibration_scene()?;
    let mut views = Vec::new();
    for (i, c) in cal_views.iter().enumerate() {
        views.push((format!("c{i}"), *c));
        // Turned about the vertical at the same pitch, as the path's turn.
        let (eye, at) = (c.look_from, c.look_at);
        let turned = eye + Vec3::new(eye.x - at.x, at.y - eye.y, eye.z - at.z);
        views.push((
            format!("ct{i}"),
            Camera::look_at(eye, turned, Vec3::Y, 50.0),
        ));
    }
    jobs.push(("calibration".into(), scene, 0.5, views));

    println!("backend,scene,view,ao,shadows,ms,{COLUMNS}");
    let mut image = Image::new(w, h, PixelFormat::Srgba8)?;
    for (name, scene, ao_distance, views) in &jobs {
        let accel = Accel::build(scene)?;
        for (_, backend) in &mut backends {
            backend.set_scene(scene)?;
        }
        let base = RenderSettings {
            ao_distance: *ao_distance,
            ..RenderSettings::default()
        };
        let counting = RenderSettings {
            integrator: Integrator::Ao,
            spp: 1,
            ao_samples: AO_COUNTED,
            ao_shadows: true,
            ao_distance: *ao_distance,
            ..RenderSettings::default()
        };
        let groups: Vec<(u32, u32)> = (0..h.div_ceil(2))
            .filter(|gy| gy % ROW_STRIDE == 0)
            .flat_map(|gy| (0..w.div_ceil(16)).map(move |gx| (gx, gy)))
            .collect();
        let scale = h.div_ceil(2) as f64 / groups.len() as f64 * w.div_ceil(16) as f64;
        let mut settings: Vec<(u32, bool)> = AO_COUNTS.iter().map(|&n| (n, true)).collect();
        settings.push((AO_NO_SHADOW, false));
        for (view, camera) in views {
            // Each warp's features for every setting, summed over the warps.
            let sums: Vec<[f64; FEATURES]> = groups
                .par_iter()
                .map(|&(gx, gy)| {
                    let lanes = lanes_of(&accel, &counting, camera, (w, h), gx, gy);
                    settings
                        .iter()
                        .map(|&(n, sh)| warp_features(&lanes, n as usize, sh))
                        .collect::<Vec<_>>()
                })
                .reduce(
                    || vec![[0.0; FEATURES]; settings.len()],
                    |mut a, b| {
                        for (x, y) in a.iter_mut().zip(&b) {
                            for (p, q) in x.iter_mut().zip(y) {
                                *p += q;
                            }
                        }
                        a
                    },
                );
            for (&(n, shadows), f) in settings.iter().zip(&sums) {
                let s = Knobs::new(n, shadows).apply(&base);
                let cols: Vec<String> = f.iter().map(|x| format!("{:.0}", x * scale)).collect();
                if backends.is_empty() {
                    // `none`: the work alone.
                    println!(
                        "none,{name},{view},{n},{},0,{}",
                        shadows as u8,
                        cols.join(",")
                    );
                }
                for (backend_name, backend) in &mut backends {
                    backend.render(camera, &s, &mut image, &NoProgress)?;
                    let mut best = f64::INFINITY;
                    for _ in 0..3 {
                        let stats = backend.render(camera, &s, &mut image, &NoProgress)?;
                        best = best.min(stats.trace.as_secs_f64() * 1e3);
                    }
                    println!(
                        "{backend_name},{name},{view},{n},{},{best:.4},{}",
                        shadows as u8,
                        cols.join(",")
                    );
                }
            }
        }
    }
    Ok(())
}
