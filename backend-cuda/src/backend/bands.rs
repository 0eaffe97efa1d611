//! How a frame is cut into launches, on the host alone: [`plan_bands`] splits
//! it into row bands (bounded by the bytes one band downloads, the work one
//! band does and the launch grid's limits), and [`tiles_per_block`] picks how
//! many tiles one render block takes. Pure arithmetic, tested without a GPU.

use prism_core::gpu::RenderParams;

/// Bytes of image one render band downloads at most (bands overlap the copy of
/// one band with the kernel of the next).
pub(super) const BAND_BYTES: u64 = 32 << 20;
/// Work (rays, estimated) of one render band at most, so long renders report
/// progress and can be cancelled between bands.
pub(super) const BAND_WORK: u64 = 1 << 31;

/// How a frame is split into row bands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct BandPlan {
    pub(super) rows: u32,
    pub(super) bands: u32,
    /// Bands are enqueued at most this many ahead of the host (progress and
    /// cancellation of long renders); light frames enqueue every band at once.
    pub(super) window: u32,
}

/// Largest `gridDim.y` of a launch.
pub(super) const MAX_GRID_Y: u32 = 65535;
/// Largest `gridDim.x` of a launch.
pub(super) const MAX_GRID_X: u32 = (1 << 31) - 1;

pub(super) fn plan_bands(
    width: u32,
    height: u32,
    pixel_bytes: u32,
    params: &RenderParams,
    tile_h: u32,
) -> BandPlan {
    let pixels = width as u64 * height as u64;
    let per_sample = match params.integrator {
        1 => 2 * (params.max_depth as u64 + 1),
        2 => params.ao_samples as u64 + 2,
        _ => (params.max_depth as u64).min(4),
    };
    let work = pixels * params.spp as u64 * per_sample;
    let by_bytes = (pixels * pixel_bytes as u64).div_ceil(BAND_BYTES).max(1);
    let by_work = work.div_ceil(BAND_WORK).max(1);
    let wanted = by_bytes.max(by_work).clamp(1, 1024) as u32;
    let rows = height
        .div_ceil(wanted)
        .div_ceil(tile_h)
        .saturating_mul(tile_h)
        .clamp(tile_h.min(height).max(1), height.max(1))
        // A band is one launch with gridDim.y = rows / tile_h, at most 65535.
        .min(MAX_GRID_Y.saturating_mul(tile_h.max(1)));
    let bands = height.div_ceil(rows).max(1);
    let window = if by_work > by_bytes { 2 } else { bands };
    BandPlan {
        rows,
        bands,
        window,
    }
}

/// Tiles a render block of a launch takes (`KernelConfig::render_tiles_per_block`
/// at most): as many as leave the launch's blocks filling the `resident` blocks
/// the device holds at once `min_waves` times, so that a small frame still
/// spreads over every multiprocessor; `min_waves` 0 always takes the most.
pub(super) fn tiles_per_block(
    most: u32,
    blocks_of_one_tile: u64,
    resident: u64,
    min_waves: u32,
) -> u32 {
    if min_waves == 0 {
        return most.max(1);
    }
    let fill = resident.max(1).saturating_mul(min_waves as u64);
    (blocks_of_one_tile / fill).clamp(1, most.max(1) as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(integrator: u32, spp: u32, max_depth: u32) -> RenderParams {
        RenderParams {
            integrator,
            spp,
            max_depth,
            ao_samples: 8,
            ..Default::default()
        }
    }

    #[test]
    fn render_blocks_take_fewer_tiles_where_the_frame_is_small() {
        // whitted19's bands of 1,024 rows on an H100 (132 SMs x 7 blocks):
        // 65,536 one-tile blocks fill the device 71 times.
        assert_eq!(tiles_per_block(8, 65_536, 924, 8), 8);
        // 1920 x 1080 in one band: 16,200 one-tile blocks, 17.5 fills.
        assert_eq!(tiles_per_block(8, 16_200, 924, 8), 2);
        // 512 x 512: 2,048 blocks, fewer than 8 fills: one tile a block.
        assert_eq!(tiles_per_block(8, 2_048, 924, 8), 1);
        assert_eq!(tiles_per_block(8, 0, 924, 8), 1);
        // No floor: the most, whatever the frame; never 0.
        assert_eq!(tiles_per_block(8, 2_048, 924, 0), 8);
        assert_eq!(tiles_per_block(0, 65_536, 924, 8), 1);
        assert_eq!(tiles_per_block(4, u64::MAX, 0, u32::MAX), 4);
    }

    #[test]
    fn small_frames_are_one_band() {
        let p = plan_bands(1280, 720, 16, &params(0, 30, 50), 8);
        assert_eq!(
            p,
            BandPlan {
                rows: 720,
                bands: 1,
                window: 1
            }
        );
    }

    #[test]
    fn large_frames_are_split_by_bytes_and_enqueued_at_once() {
        let p = plan_bands(8192, 8192, 4, &params(1, 1, 1), 8);
        assert_eq!(p.bands, 8);
        assert_eq!(p.rows, 1024);
        assert_eq!(p.window, 8);
    }

    #[test]
    fn heavy_frames_are_split_by_work_with_a_short_window() {
        let p = plan_bands(1920, 1080, 16, &params(0, 4096, 50), 8);
        assert!(p.bands > 8, "{p:?}");
        assert_eq!(p.window, 2);
        assert_eq!(p.rows % 8, 0);
        assert!(p.rows * p.bands >= 1080 && p.rows * (p.bands - 1) < 1080);
    }

    #[test]
    fn bands_cover_tiny_images() {
        for h in [1, 2, 7, 8, 9] {
            let p = plan_bands(3, h, 16, &params(0, 1, 1), 8);
            assert!(p.rows >= 1 && p.rows * p.bands >= h, "{h}: {p:?}");
        }
    }

    #[test]
    fn tall_frames_keep_each_launch_within_the_grid_limit() {
        for (width, height, tile_h) in [(64, 65536, 1), (64, 200_000, 1), (8, 1 << 20, 4)] {
            let p = plan_bands(width, height, 4, &params(1, 1, 1), tile_h);
            assert!(p.rows.div_ceil(tile_h) <= MAX_GRID_Y, "{height}: {p:?}");
            assert_eq!(p.rows % tile_h, 0, "{height}: {p:?}");
            assert!(p.rows * p.bands >= height, "{height}: {p:?}");
            assert!(p.rows * (p.bands - 1) < height, "{height}: {p:?}");
        }
    }
}
