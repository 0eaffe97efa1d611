//! [`KernelConfig`]: the kernels' build-time choices (block shapes, register
//! budgets, scheduling variants and what a scene upload holds) and their
//! checks.

use prism_core::Error;

/// Build-time choices of the kernels: block shapes, register budgets and the
/// scheduling variants. The defaults are the fastest measured on an H100
/// (bench/RESULTS.md). Every configuration computes the same hits and rays,
/// and the same pixels except with `path_regen` or `path_defer`, whose
/// differently laid out shading lets NVRTC contract other `a * b + c` into
/// FMAs (pixels can then differ in their last bits), and with `octant_trees`
/// on or off, whose render traversals take a node's children in different
/// orders (a hit can then differ where two primitives tie at exactly the same
/// `t`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelConfig {
    /// Threads per block of `prism_intersect` / `prism_occluded` (a multiple of 32, at most 1024).
    pub trace_threads: u32,
    /// Blocks per multiprocessor the trace kernels are compiled to fit
    /// (`__launch_bounds__`, which caps registers at 65536 / (threads * blocks)); 1 = no constraint.
    pub trace_min_blocks: u32,
    /// Pixels per render block, `[width, height]`; the product is a multiple of 32, at most 1024.
    /// The persistent path kernels take `path_threads` instead (see `persistent_path`).
    pub render_tile: [u32; 2],
    /// Blocks per multiprocessor the render kernels are compiled to fit; 1 = no constraint.
    /// The persistent path kernels take `path_min_blocks` instead.
    pub render_min_blocks: u32,
    /// The most tiles of `render_tile` pixels a render block renders, one
    /// below the other, a pixel of each in turn on every thread (1..=16): a
    /// thread's fixed costs (its indices, the frame's constants, the ray
    /// tally) are shared by that many pixels, and a frame has that many times
    /// fewer blocks. A launch takes fewer where its blocks would fill the
    /// device fewer than `render_min_waves` times. 8: whitted19 2.01 -> 1.76
    /// ms on an H100, with `overlap_bands` (2: 1.86, 4: 1.79; without
    /// overlapped bands, where each band's last blocks leave the device idle,
    /// 4 was best: 1.87, 2: 1.91, 8: 1.90). The persistent path kernels
    /// ignore it.
    pub render_tiles_per_block: u32,
    /// [`KernelConfig::render_tiles_per_block`] for the AO kernels (1..=16),
    /// by default 1: an AO pixel costs what the geometry under it asks (nothing on the
    /// background, every AO ray on a surface), and blocks of several tiles
    /// leave a frame's last heavy blocks running alone on a few
    /// multiprocessors, by a margin that moves from frame to frame. The
    /// first view of `prism animate`'s path, 1920x1080, 48 AO rays, 100
    /// frames on an H200 (`examples/ao_jitter.rs`), mean kernel time and
    /// frame-to-frame jitter, 1 tile against the 2 that `render_min_waves`
    /// left of 8: ogre 3.65 against 4.91 ms, 2.4% against 5.0%; crowd 7.76
    /// against 8.90 ms, 1.3% against 1.8%; instances 58.9 against 60.6 ms,
    /// 0.4% against 0.7%.
    pub ao_tiles_per_block: u32,
    /// How many times over a render launch's blocks must fill the blocks the
    /// device holds at once before its blocks take several tiles (8): a small
    /// frame keeps one tile a block and so every multiprocessor busy. 0: every
    /// launch takes `render_tiles_per_block`.
    pub render_min_waves: u32,
    /// Trace kernels run persistent warps (as many blocks as each kernel keeps
    /// resident on the device) that take their rays from global counters,
    /// instead of one thread per ray.
    pub persistent: bool,
    /// With `persistent`: `prism_intersect` refills a warp's finished lanes with
    /// new rays once this many (1..=32) are done, claiming them from one of 16
    /// ray ranges with a counter each (prism.cu, `PRISM_TRACE_SHARDS`); 0 takes
    /// 32-ray batches per warp from one counter.
    pub trace_refill: u32,
    /// The same for `prism_occluded`.
    pub occluded_refill: u32,
    /// The path kernel starts a pixel's next sample as soon as its path ends.
    pub path_regen: bool,
    /// The path kernel decouples BVH traversal from shading within a warp and
    /// shades once this many lanes (1..=32) are ready; 0 turns it off.
    pub path_defer: u32,
    /// The path kernels run persistent warps: each takes the next 32 pixels
    /// (one warp's share of a tile) from a counter until the frame is done,
    /// instead of each block rendering its own tile, so warps that finish
    /// early take more work and the launch ends within one piece of its last
    /// start. The same pixels either way. With `path_defer` or `path_regen`
    /// the tree's path kernels keep tiles (their warps vote across a tile's
    /// lanes, or run a pixel's samples on one lane).
    pub persistent_path: bool,
    /// With `persistent_path`: lanes that share each pixel's samples (a power
    /// of two up to 32), where they divide the frame's samples per pixel (else
    /// one lane a pixel). Each traces every `path_lanes`-th sample and the
    /// pixel's first lane adds their colours in sample order, so the pixels are
    /// the same; a piece of the frame is then `32 / path_lanes` pixels, and the
    /// paths a warp traces side by side start from fewer pixels and end closer
    /// together.
    pub path_lanes: u32,
    /// With `persistent_path`: the sixty-fourths of a launch's tiles (its last,
    /// in piece order) whose pixels take as many lanes as their samples need (up
    /// to 32), so that the launch's last pieces are short. 0..=64.
    pub path_tail_64ths: u32,
    /// With `persistent_path`: threads per block of the persistent path
    /// kernels, which are launched as rows of `path_threads` (a multiple of 32,
    /// at most 1024) whatever `render_tile` is: their warps take their pixels
    /// from the counter, not from the block's tile.
    pub path_threads: u32,
    /// With `persistent_path`: blocks per multiprocessor the persistent path
    /// kernels are compiled to fit; 1 = no constraint.
    pub path_min_blocks: u32,
    /// The AO kernels run persistent warps (launched as the path kernels'
    /// rows of `path_threads`): a warp takes 32 pixels from a counter (fewer
    /// in the launch's last tiles), traces their camera rays and spreads the
    /// AO rays of the pixels it hit over all its lanes. The launch ends within
    /// a few AO rays of its last piece's start instead of a whole render
    /// block's, and lanes over the sky take their neighbours' rays. The same
    /// pixels either way. `ao_tiles_per_block` is for the tile kernels.
    pub persistent_ao: bool,
    /// `scatter` evaluates only the lobe it picks (branches) instead of every
    /// lobe (core's branchless form): the same directions and weights, with the
    /// sines, cube root and square roots of the other lobes left out.
    pub lobe_branches: bool,
    /// The BVH's leaf ranges and child indices, and every heightfield's levels,
    /// are checked once on the host when a scene is uploaded, so the kernels
    /// skip core's per-leaf, per-node and per-height-entry range checks.
    pub tree_checked_on_upload: bool,
    /// The Whitted kernel skips the camera's four random numbers when they cannot
    /// matter (one sample per pixel, pinhole camera): it keeps no generator after
    /// the camera ray.
    pub whitted_skips_camera_rng: bool,
    /// The render kernels traverse eight copies of a small tree, one per ray
    /// direction octant, each with its boxes' bounds swapped so that every
    /// axis's near plane comes first and each node's children in the order a ray
    /// of that octant visits them: the slab test then needs no per-axis min/max
    /// (the same values as core's) and the node step no comparison of the two
    /// children's entry distances (the hits are core's except where two
    /// primitives tie at exactly the same `t`; see
    /// [`prism_core::gpu::near_first_octant_copies`]). Trees of more than
    /// [`prism_core::gpu::OCTANT_COPIES_MAX_NODES`] nodes are traversed as they are. Both sets of
    /// render kernels are always compiled; this decides what a scene upload
    /// holds and so which set runs.
    pub octant_trees: bool,
    /// Scenes of at most [`prism_core::point_grid::POINT_GRID_MAX_PRIMS`]
    /// primitives get candidate lists around their light
    /// ([`prism_core::point_grid`]): the Whitted and AO kernels' shadow rays
    /// then test the few candidates of the cell they arrive from instead of
    /// walking the tree, with the same answers. The kernels are the same either
    /// way; this decides what a scene upload holds.
    pub light_grid: bool,
    /// Scenes whose primitives suit a uniform grid better than the tree, by
    /// core's cost model ([`prism_core::cell_grid::CellGrid::worthwhile`]),
    /// get one when the tree's octant copies are uploaded too: the render
    /// kernels' closest hits then walk the cells a ray crosses (any-hit rays
    /// still walk the tree), with the same hits except where two primitives
    /// tie at exactly the same `t`. The kernels are the same either way; this
    /// decides what a scene upload holds.
    pub cell_grid: bool,
    /// Frames of a pinhole camera, in scenes of at most
    /// [`prism_core::camera_bounds::CAMERA_BOUNDS_MAX_PRIMS`] primitives, get
    /// a cone from the eye around each primitive
    /// ([`prism_core::camera_bounds`]) and, before the render kernels, a mask
    /// per tile of [`prism_core::camera_bounds::CAMERA_MASK_TILE`] pixels of
    /// the primitives its camera rays can meet (`prism_camera_masks`): camera
    /// rays test those instead of walking the tree, with the same hits except
    /// where two primitives tie at exactly the same `t`. The kernels are the
    /// same either way; this decides what a frame uploads and launches.
    pub camera_cones: bool,
    /// With [`Self::camera_cones`], `prism_camera_masks` also finds each
    /// tile's reflection candidates
    /// ([`prism_core::camera_bounds::reflection_candidates`]): the Whitted
    /// integrator's first mirror ray off a camera hit tests those instead of
    /// walking the tree, with the same hits except where two primitives tie
    /// at exactly the same `t`. The kernels are the same either way.
    pub reflection_masks: bool,
    /// With [`Self::camera_cones`], `prism_camera_masks` also finds each
    /// tile's shadow candidates
    /// ([`prism_core::camera_bounds::shadow_candidates`]): the shadow ray
    /// towards the light from a camera hit (Whitted, and ambient occlusion
    /// with shadows) tests those instead of the light's cell or the tree,
    /// with the same answer. The kernels are the same either way.
    pub shadow_masks: bool,
    /// A frame of several bands (see `render`'s stage table) launches every
    /// other band on a second stream, so that the blocks of one band start
    /// while the last blocks of the one before still run, instead of the
    /// device idling at each band's end: whitted19's eight bands 1.87 -> 1.79
    /// ms on an H100 with 4 tiles a block (the same frame in one band: 1.79).
    /// The persistent path kernels' bands stay on one stream (they share a
    /// work counter). The kernels are the same either way.
    pub overlap_bands: bool,
    /// Further NVRTC options, appended last (for experiments).
    pub extra_options: Vec<String>,
}

impl Default for KernelConfig {
    fn default() -> Self {
        Self {
            trace_threads: 128,
            trace_min_blocks: 1,
            render_tile: [16, 8],
            render_min_blocks: 7,
            render_tiles_per_block: 8,
            ao_tiles_per_block: 1,
            render_min_waves: 8,
            persistent: true,
            trace_refill: 16,
            occluded_refill: 16,
            path_regen: false,
            path_defer: 0,
            persistent_path: true,
            path_lanes: 2,
            path_tail_64ths: 4,
            path_threads: 256,
            path_min_blocks: 4,
            persistent_ao: true,
            lobe_branches: true,
            tree_checked_on_upload: true,
            whitted_skips_camera_rng: true,
            octant_trees: true,
            light_grid: true,
            cell_grid: true,
            camera_cones: true,
            reflection_masks: true,
            shadow_masks: true,
            overlap_bands: true,
            extra_options: Vec::new(),
        }
    }
}

impl KernelConfig {
    /// Check the block shapes and budgets.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |field: &'static str, value: u32, reason: &'static str| {
            Err(Error::Setting {
                field,
                value: value as f64,
                reason,
            })
        };
        if self.trace_threads == 0
            || !self.trace_threads.is_multiple_of(32)
            || self.trace_threads > 1024
        {
            return bad(
                "trace_threads",
                self.trace_threads,
                "must be a multiple of 32 in 32..=1024",
            );
        }
        let [w, h] = self.render_tile;
        let n = w.saturating_mul(h);
        if w == 0 || h == 0 || !n.is_multiple_of(32) || n > 1024 {
            return bad(
                "render_tile",
                n,
                "width * height must be a multiple of 32 in 32..=1024",
            );
        }
        if self.trace_min_blocks == 0 || self.trace_min_blocks > 32 {
            return bad(
                "trace_min_blocks",
                self.trace_min_blocks,
                "must be in 1..=32",
            );
        }
        if self.render_min_blocks == 0 || self.render_min_blocks > 32 {
            return bad(
                "render_min_blocks",
                self.render_min_blocks,
                "must be in 1..=32",
            );
        }
        if self.render_tiles_per_block == 0 || self.render_tiles_per_block > 16 {
            return bad(
                "render_tiles_per_block",
                self.render_tiles_per_block,
                "must be in 1..=16",
            );
        }
        if self.ao_tiles_per_block == 0 || self.ao_tiles_per_block > 16 {
            return bad(
                "ao_tiles_per_block",
                self.ao_tiles_per_block,
                "must be in 1..=16",
            );
        }
        if self.path_threads == 0
            || !self.path_threads.is_multiple_of(32)
            || self.path_threads > 1024
        {
            return bad(
                "path_threads",
                self.path_threads,
                "must be a multiple of 32 in 32..=1024",
            );
        }
        if self.path_min_blocks == 0 || self.path_min_blocks > 32 {
            return bad("path_min_blocks", self.path_min_blocks, "must be in 1..=32");
        }
        if self.trace_refill > 32 {
            return bad("trace_refill", self.trace_refill, "must be in 0..=32");
        }
        if self.occluded_refill > 32 {
            return bad("occluded_refill", self.occluded_refill, "must be in 0..=32");
        }
        if self.path_defer > 32 {
            return bad("path_defer", self.path_defer, "must be in 0..=32");
        }
        if !self.path_lanes.is_power_of_two() || self.path_lanes > 32 {
            return bad(
                "path_lanes",
                self.path_lanes,
                "must be a power of two in 1..=32",
            );
        }
        if self.path_tail_64ths > 64 {
            return bad("path_tail_64ths", self.path_tail_64ths, "must be in 0..=64");
        }
        Ok(())
    }

    /// Threads per render block (saturating: [`KernelConfig::validate`]
    /// refuses tiles of more than 1,024 threads).
    pub fn render_threads(&self) -> u32 {
        self.render_tile[0].saturating_mul(self.render_tile[1])
    }

    /// Whether the render kernel of integrator `integrator` (0 path, 1
    /// Whitted, 2 AO) runs persistent warps, launched in blocks of
    /// `path_threads`: the path kernels with `persistent_path`, except the
    /// tree's (not the grid's, `grid` false) with `path_defer` or `path_regen`,
    /// and the AO kernels with `persistent_ao` (prism.cu's
    /// PRISM_PERSISTENT_ROWS).
    pub fn persistent_rows(&self, integrator: u32, grid: bool) -> bool {
        (self.persistent_path
            && integrator == 0
            && !((self.path_defer > 0 || self.path_regen) && !grid))
            || (self.persistent_ao && integrator == 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_is_valid_and_bad_ones_are_refused() {
        KernelConfig::default().validate().unwrap(); // ok: test code
        let bad = KernelConfig {
            trace_threads: 100,
            ..Default::default()
        };
        assert!(matches!(
            bad.validate(),
            Err(Error::Setting {
                field: "trace_threads",
                ..
            })
        ));
        let bad = KernelConfig {
            render_tile: [3, 3],
            ..Default::default()
        };
        assert!(bad.validate().is_err());
        for (threads, min_blocks) in [(0, 4), (100, 4), (2048, 1), (256, 0), (256, 33)] {
            let bad = KernelConfig {
                path_threads: threads,
                path_min_blocks: min_blocks,
                ..Default::default()
            };
            assert!(
                matches!(
                    bad.validate(),
                    Err(Error::Setting {
                        field: "path_threads" | "path_min_blocks",
                        ..
                    })
                ),
                "{threads} {min_blocks}"
            );
        }
        for tiles in [0, 17] {
            let bad = KernelConfig {
                render_tiles_per_block: tiles,
                ..Default::default()
            };
            assert!(
                matches!(
                    bad.validate(),
                    Err(Error::Setting {
                        field: "render_tiles_per_block",
                        ..
                    })
                ),
                "{tiles}"
            );
            let bad = KernelConfig {
                ao_tiles_per_block: tiles,
                ..Default::default()
            };
            assert!(
                matches!(
                    bad.validate(),
                    Err(Error::Setting {
                        field: "ao_tiles_per_block",
                        ..
                    })
                ),
                "{tiles}"
            );
        }
        for (lanes, tail) in [(0, 4), (3, 4), (64, 4), (2, 65)] {
            let bad = KernelConfig {
                path_lanes: lanes,
                path_tail_64ths: tail,
                ..Default::default()
            };
            assert!(
                matches!(
                    bad.validate(),
                    Err(Error::Setting {
                        field: "path_lanes" | "path_tail_64ths",
                        ..
                    })
                ),
                "{lanes} {tail}"
            );
        }
    }
}
