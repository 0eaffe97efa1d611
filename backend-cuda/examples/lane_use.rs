//! How busy a warp's lanes are while the path kernel traverses the BVH, worked
//! out on the CPU from core's own traversal (no GPU needed).
//!
//! ```text
//! lane_use [SPP] [ROW_STEP]     (defaults 4 and 4: every 4th row of tiles)
//! ```
//!
//! Core renders `rtiow` (1280x720, depth 50) tile by tile, as the CUDA path
//! kernel lays its threads out (16x8 tiles, warps of 32 consecutive threads),
//! and counts the node steps of every path segment. A warp steps through the
//! tree in lock step, so one of its traversals costs as many steps as its
//! longest ray; lanes whose path has ended, or whose ray is done, wait. The
//! table gives, per bounce, the node steps the lanes need against the steps
//! their warps take, and the same for two ways of keeping more lanes busy:
//! packing a tile's live paths into its first warps after every bounce, and
//! starting a pixel's next sample as soon as its path ends; and the most any
//! regrouping without sorting can give: the whole frame's live paths packed
//! into full warps after every bounce, as a wavefront tracer would. A last line models
//! a 4-wide tree made by collapsing core's (each node takes its children's
//! children), traversed nearest child first: its node steps, warp steps and box
//! tests, and how many hits differ from core's.

#[path = "../tests/common/mod.rs"]
mod common;

use common::rtiow;
use prism_core::gpu::{BvhNode, EMPTY_CHILD, TRAVERSAL_STACK_SIZE};
use prism_core::integrator::{Tracer, render_pixel};
use prism_core::intersect::{RayPre, ray_aabb_rows};
use prism_core::traverse::ray_primitive;
use prism_core::{Accel, Hit, Ray, RenderSettings};
use std::cell::RefCell;

const TILE_W: u32 = 16;
const TILE_H: u32 = 8;
const WARPS: usize = (TILE_W * TILE_H / 32) as usize;

/// Core's closest_hit loop (prism_core::traverse), counting its node steps.
fn closest_hit_steps(accel: &Accel, ray: &Ray) -> (Hit, u32) {
    let (nodes, prims) = (accel.nodes(), accel.primitives());
    let pre = RayPre::new(ray);
    let tmin = ray.tmin;
    let mut best = Hit::MISS;
    best.t = ray.tmax;
    let leaf = |first: u32, count: u32, best: &mut Hit| {
        for k in first..first + count {
            if let Some((t, u, v)) = ray_primitive(&pre, &prims[k as usize], tmin, best.t) {
                *best = Hit::new(t, u, v, k, 0);
            }
        }
    };
    let mut stack = [0u32; TRAVERSAL_STACK_SIZE];
    let (mut sp, mut node, mut steps) = (0usize, 0usize, 0u32);
    while let Some(n) = nodes.get(node) {
        steps += 1;
        let tl = ray_aabb_rows(&pre, &n.left_lo, &n.left_hi, tmin, best.t);
        let tr = ray_aabb_rows(&pre, &n.right_lo, &n.right_hi, tmin, best.t);
        let (l, r) = (
            (tl, n.left_index(), n.left_count()),
            (tr, n.right_index(), n.right_count()),
        );
        let ((mut t_near, near, near_count), (mut t_far, far, far_count)) =
            if tr < tl { (r, l) } else { (l, r) };
        if near_count > 0 {
            if t_near < best.t {
                leaf(near, near_count, &mut best);
            }
            t_near = f32::INFINITY;
        }
        if far_count > 0 {
            if t_far < best.t {
                leaf(far, far_count, &mut best);
            }
            t_far = f32::INFINITY;
        }
        let (go_near, go_far) = (t_near < best.t, t_far < best.t);
        if go_near && go_far {
            stack[sp] = far; // ok: core's builder bounds the depth below the stack size
            sp += 1;
            node = near as usize;
        } else if go_near {
            node = near as usize;
        } else if go_far {
            node = far as usize;
        } else if sp > 0 {
            sp -= 1;
            node = stack[sp] as usize;
        } else {
            break;
        }
    }
    if !best.is_hit() {
        best.t = f32::INFINITY;
    }
    (best, steps)
}

/// A child of a 4-wide node: its box, and a leaf's primitive range (`count` > 0)
/// or an inner node's index in [`WideTree::nodes`] (`count` == 0).
struct WideChild {
    lo: [f32; 4],
    hi: [f32; 4],
    index: u32,
    count: u32,
}

/// A 4-wide tree collapsed from core's binary one: a node's inner children are
/// replaced by their own children.
struct WideTree {
    nodes: Vec<Vec<WideChild>>,
}

impl WideTree {
    fn collapse(accel: &Accel) -> WideTree {
        let mut tree = WideTree { nodes: Vec::new() };
        tree.add(accel.nodes(), 0);
        tree
    }

    /// Add the wide node of binary node `n` (and, first, its subtree); its index.
    fn add(&mut self, nodes: &[BvhNode], n: usize) -> u32 {
        let children = |b: &BvhNode| {
            [
                (b.left_lo, b.left_hi, b.left_index(), b.left_count()),
                (b.right_lo, b.right_hi, b.right_index(), b.right_count()),
            ]
            .into_iter()
            .filter(|c| c.2 != EMPTY_CHILD)
        };
        let mut out = Vec::new();
        for (lo, hi, index, count) in children(&nodes[n]) {
            if count > 0 {
                out.push(WideChild {
                    lo,
                    hi,
                    index,
                    count,
                });
                continue;
            }
            for (lo, hi, index, count) in children(&nodes[index as usize]) {
                let index = if count > 0 {
                    index
                } else {
                    self.add(nodes, index as usize)
                };
                out.push(WideChild {
                    lo,
                    hi,
                    index,
                    count,
                });
            }
        }
        self.nodes.push(out);
        (self.nodes.len() - 1) as u32
    }

    fn root(&self) -> u32 {
        (self.nodes.len() - 1) as u32
    }
}

/// Closest hit over a [`WideTree`]: every child box of a node tested, leaves
/// intersected nearest first, the nearest inner child visited next and the
/// others pushed. Its hit, node steps and box tests.
fn wide_closest_hit_steps(accel: &Accel, tree: &WideTree, ray: &Ray) -> (Hit, u32, u32) {
    let prims = accel.primitives();
    let pre = RayPre::new(ray);
    let tmin = ray.tmin;
    let mut best = Hit::MISS;
    best.t = ray.tmax;
    let mut stack: Vec<(u32, f32)> = Vec::new();
    let (mut node, mut steps, mut boxes) = (tree.root(), 0u32, 0u32);
    loop {
        steps += 1;
        let mut entered: Vec<(f32, &WideChild)> = Vec::new();
        for c in &tree.nodes[node as usize] {
            boxes += 1;
            let t = ray_aabb_rows(&pre, &c.lo, &c.hi, tmin, best.t);
            if t < best.t {
                entered.push((t, c));
            }
        }
        entered.sort_by(|a, b| a.0.total_cmp(&b.0));
        for &(t, c) in entered.iter().filter(|e| e.1.count > 0) {
            if t < best.t {
                for k in c.index..c.index + c.count {
                    if let Some((t, u, v)) = ray_primitive(&pre, &prims[k as usize], tmin, best.t) {
                        best = Hit::new(t, u, v, k, 0);
                    }
                }
            }
        }
        let mut inner = entered.iter().filter(|e| e.1.count == 0 && e.0 < best.t);
        let next = inner.next();
        let rest: Vec<(u32, f32)> = inner.map(|e| (e.1.index, e.0)).collect();
        stack.extend(rest.into_iter().rev());
        if let Some(&(_, c)) = next {
            node = c.index;
            continue;
        }
        match std::iter::from_fn(|| stack.pop()).find(|&(_, t)| t < best.t) {
            Some((n, _)) => node = n,
            None => break,
        }
    }
    if !best.is_hit() {
        best.t = f32::INFINITY;
    }
    (best, steps, boxes)
}

/// A path segment: binary node steps, and the 4-wide tree's steps and box tests.
#[derive(Clone, Copy)]
struct Segment {
    steps: u32,
    wide_steps: u32,
    wide_boxes: u32,
}

/// A tracer that records, per sample, the node steps of each path segment.
struct StepRecorder<'a> {
    accel: &'a Accel,
    wide: &'a WideTree,
    /// Hits of the 4-wide tree that differ from core's.
    wide_differ: std::cell::Cell<u64>,
    /// The camera position: a ray starting within the lens of it begins a sample.
    eye: glam::Vec3,
    samples: RefCell<Vec<Vec<Segment>>>,
}

impl Tracer for StepRecorder<'_> {
    fn accel(&self) -> &Accel {
        self.accel
    }
    fn closest_slot(&self, ray: &Ray) -> Hit {
        let (hit, steps) = closest_hit_steps(self.accel, ray);
        let core = self.accel.intersect_slot(ray);
        assert!(hit.prim == core.prim && hit.t.to_bits() == core.t.to_bits());
        let (wide, wide_steps, wide_boxes) = wide_closest_hit_steps(self.accel, self.wide, ray);
        if wide.prim != core.prim || wide.t.to_bits() != core.t.to_bits() {
            self.wide_differ.set(self.wide_differ.get() + 1);
        }
        let mut s = self.samples.borrow_mut();
        if (ray.origin - self.eye).length() < 0.2 || s.is_empty() {
            s.push(Vec::new());
        }
        s.last_mut().unwrap().push(Segment {
            steps,
            wide_steps,
            wide_boxes,
        }); // ok: pushed above when empty
        hit
    }
    fn occluded(&self, ray: &Ray) -> bool {
        self.accel.occluded(ray)
    }
}

/// Steps taken by a group of lanes in lock step: its longest traversal.
fn lock_step(steps: impl Iterator<Item = u32>) -> u64 {
    steps.max().unwrap_or(0) as u64
}

fn main() {
    let mut args = std::env::args().skip(1);
    let spp: u32 = args.next().and_then(|s| s.parse().ok()).unwrap_or(4);
    let row_step: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(4);
    let p = rtiow();
    let accel = Accel::build(&p.scene).expect("rtiow builds");
    let settings = RenderSettings { spp, ..p.settings };
    let params = settings
        .params(&accel, &p.camera, p.width, p.height)
        .expect("rtiow settings are valid");
    let o = params.camera.origin_lens;
    let eye = glam::Vec3::new(o[0], o[1], o[2]);
    let wide = WideTree::collapse(&accel);
    let wide_differ = std::cell::Cell::new(0u64);
    // The 4-wide tree: lane steps, warp steps, box tests.
    let mut wide_total = [0u64; 3];
    // Per bounce (the last row gathers 4 and deeper): lane steps, warp steps
    // as the kernel runs, warp steps with the tile's paths packed.
    let mut by_bounce = [[0u64; 3]; 5];
    let mut regenerated = 0u64;
    // Whole-frame packing (a wavefront tracer's extend phase, rays in frame
    // order): per (sample, bounce), the live segments not yet in a full warp,
    // and the warp steps of the full ones.
    let mut frame_pending: Vec<Vec<Vec<u32>>> = vec![Vec::new(); spp as usize];
    let mut frame_packed = 0u64;
    for ty in (0..p.height / TILE_H).step_by(row_step) {
        for tx in 0..p.width / TILE_W {
            // paths[thread][sample] = each segment's counts
            let mut paths: Vec<Vec<Vec<Segment>>> = Vec::new();
            for y in ty * TILE_H..(ty + 1) * TILE_H {
                for x in tx * TILE_W..(tx + 1) * TILE_W {
                    let rec = StepRecorder {
                        accel: &accel,
                        wide: &wide,
                        wide_differ: std::cell::Cell::new(0),
                        eye,
                        samples: RefCell::new(Vec::new()),
                    };
                    render_pixel(&rec, &params, x, y);
                    wide_differ.set(wide_differ.get() + rec.wide_differ.get());
                    let samples = rec.samples.into_inner();
                    assert_eq!(samples.len(), spp as usize);
                    paths.push(samples);
                }
            }
            for s in 0..spp as usize {
                let depth = paths.iter().map(|q| q[s].len()).max().unwrap_or(0);
                for b in 0..depth {
                    let row = &mut by_bounce[b.min(4)];
                    let live: Vec<Segment> =
                        paths.iter().filter_map(|q| q[s].get(b).copied()).collect();
                    row[0] += live.iter().map(|g| g.steps as u64).sum::<u64>();
                    wide_total[0] += live.iter().map(|g| g.wide_steps as u64).sum::<u64>();
                    wide_total[2] += live.iter().map(|g| g.wide_boxes as u64).sum::<u64>();
                    for w in 0..WARPS {
                        let warp = || {
                            paths[w * 32..(w + 1) * 32]
                                .iter()
                                .filter_map(|q| q[s].get(b))
                        };
                        row[1] += lock_step(warp().map(|g| g.steps));
                        wide_total[1] += lock_step(warp().map(|g| g.wide_steps));
                    }
                    for packed in live.chunks(32) {
                        row[2] += lock_step(packed.iter().map(|g| g.steps));
                    }
                    let pending = &mut frame_pending[s];
                    if pending.len() <= b {
                        pending.resize_with(b + 1, Vec::new);
                    }
                    for g in &live {
                        pending[b].push(g.steps);
                        if pending[b].len() == 32 {
                            frame_packed += lock_step(pending[b].drain(..));
                        }
                    }
                }
            }
            for w in 0..WARPS {
                let lanes: Vec<Vec<u32>> = paths[w * 32..(w + 1) * 32]
                    .iter()
                    .map(|q| q.iter().flatten().map(|g| g.steps).collect())
                    .collect();
                let n = lanes.iter().map(Vec::len).max().unwrap_or(0);
                for i in 0..n {
                    regenerated += lock_step(lanes.iter().filter_map(|l| l.get(i).copied()));
                }
            }
        }
    }
    println!(
        "rtiow {}x{}, {spp} spp, every {row_step}th row of {TILE_W}x{TILE_H} tiles: node steps of the path kernel's traversals",
        p.width, p.height
    );
    println!(
        "| bounce | lane steps | warp steps | lanes busy | warp steps, tile packed | lanes busy |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let busy = |lane: u64, warp: u64| lane as f64 / (32.0 * warp.max(1) as f64);
    let print_row = |name: &str, row: &[u64; 3]| {
        println!(
            "| {name} | {} | {} | {:.2} | {} | {:.2} |",
            row[0],
            row[1],
            busy(row[0], row[1]),
            row[2],
            busy(row[0], row[2])
        )
    };
    let mut total = [0u64; 3];
    for (b, row) in by_bounce.iter().enumerate() {
        print_row(
            if b == 4 {
                "4+"
            } else {
                ["0", "1", "2", "3"][b]
            },
            row,
        );
        for k in 0..3 {
            total[k] += row[k];
        }
    }
    print_row("all", &total);
    frame_packed += frame_pending
        .into_iter()
        .flatten()
        .map(|rest| lock_step(rest.into_iter()))
        .sum::<u64>();
    println!(
        "whole frame packed per bounce (a wavefront tracer): {frame_packed} warp steps, lanes busy {:.2}",
        busy(total[0], frame_packed)
    );
    println!(
        "next sample started as soon as a path ends: {regenerated} warp steps, lanes busy {:.2}",
        busy(total[0], regenerated)
    );
    println!(
        "4-wide tree collapsed from core's ({} nodes against {}): {} lane steps, {} warp steps, lanes busy {:.2}, {} box tests against {} ({:.2}x); {} hits differ from core's",
        wide.nodes.len(),
        accel.nodes().len(),
        wide_total[0],
        wide_total[1],
        busy(wide_total[0], wide_total[1]),
        wide_total[2],
        2 * total[0],
        wide_total[2] as f64 / (2 * total[0]) as f64,
        wide_differ.get()
    );
}
