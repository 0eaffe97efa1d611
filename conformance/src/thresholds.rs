//! Every threshold of the suite, in one place, each with the reason for its value.
//!
//! The hit rule itself (same primitive, `t` within 1e-4 relative, ties allowed)
//! lives in `prism_core::reference`; the numbers here say how many of each
//! outcome a check may see, and how far two images may differ.

use prism_core::reference::T_REL_TOLERANCE;

/// Whether `count` is within `limit` (a function, so that a limit of 0 reads
/// the same as any other).
#[inline]
pub fn within(count: usize, limit: usize) -> bool {
    count <= limit
}

/// A threshold as the report lists it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Threshold {
    /// Name (the constant's name).
    pub name: &'static str,
    /// Value.
    pub value: f64,
    /// Unit or meaning of the value.
    pub unit: &'static str,
    /// Why the value is what it is.
    pub reason: &'static str,
}

/// Hits: relative tolerance on `t` (prism-core's rule, repeated here for the report).
pub const HIT_T_REL: f32 = T_REL_TOLERANCE;

/// Hits: mismatches a check may see (against Embree, the brute-force oracle or
/// another backend).
pub const MAX_HIT_MISMATCHES: usize = 0;

/// Hits: largest share of rays that may be ties.
pub const MAX_TIE_SHARE: f64 = 0.0002;

/// Any-hit: rays whose `occluded` answer may differ from the reference's hit/miss.
pub const MAX_OCCLUDED_DISAGREEMENTS: usize = 0;

/// Hits: largest difference of a barycentric coordinate (`u` or `v`) between two
/// answers that name the same triangle.
pub const UV_TOLERANCE: f32 = 1e-3;

/// Images: the per-pixel level the "pixels off" share counts, in display units
/// (sRGB-encoded, 1 = full scale).
pub const PIXEL_OFF_LEVEL: f32 = 2.0 / 255.0;

/// Images: largest share of pixels off by more than [`PIXEL_OFF_LEVEL`] in any channel.
pub const MAX_PIXELS_OFF_SHARE: f64 = 0.02;

/// Images: largest mean absolute error, display units.
pub const MAX_MAE: f64 = 2.0 / 255.0;

/// Images: largest root-mean-square error, display units.
pub const MAX_RMSE: f64 = 0.05;

/// Converged images: largest difference of a tile's mean (per channel, display units).
pub const MAX_TILE_MEAN_DIFF: f64 = 3.0 / 255.0;

/// Converged images: largest difference of the whole images' means (signed
/// bias, per channel, display units).
pub const MAX_IMAGE_MEAN_DIFF: f64 = 0.5 / 255.0;

/// sRGB output: largest difference in 8-bit levels between a backend's `Srgba8`
/// frame and its own linear frame encoded by prism-core. Zero: every backend
/// encodes through core's `Srgb8Table`, which equals core's curve for every `f32`.
pub const MAX_SRGB8_LEVELS: u8 = 0;

/// Sun: largest relative difference of a tile's linear mean between next-event
/// estimation on and off at the sun check's high sample count.
pub const MAX_SUN_TILE_MEAN_DIFF: f64 = 0.15;

/// Sun: largest relative difference of the whole image's linear mean between
/// next-event estimation on and off.
pub const MAX_SUN_IMAGE_MEAN_DIFF: f64 = 0.03;

/// Sun: the linear level below which a tile mean's difference is taken
/// relative to this level instead of the mean itself.
pub const SUN_TILE_FLOOR: f64 = 0.05;

/// Every threshold, for the report.
pub const ALL: [Threshold; 15] = [
    Threshold {
        name: "HIT_T_REL",
        value: HIT_T_REL as f64,
        unit: "relative t",
        reason: "DESIGN.md's agreement rule, defined once in prism_core::reference: Embree and Prism use \
                 different (equally valid) watertight tests, so t agrees to about 1e-6 relative; 1e-4 leaves \
                 room for f32 rounding at grazing angles without hiding a wrong surface.",
    },
    Threshold {
        name: "MAX_HIT_MISMATCHES",
        value: MAX_HIT_MISMATCHES as f64,
        unit: "rays",
        reason: "A wrong primitive at a different distance, or a hit where the reference misses (and the \
                 reverse), is a bug: two correct ray tracers may disagree only on ties.",
    },
    Threshold {
        name: "MAX_TIE_SHARE",
        value: MAX_TIE_SHARE,
        unit: "share of rays",
        reason: "Ties happen only for rays through an edge, a vertex or a fold whose two sides are within \
                 the tolerance: at most 3 in each 262,144-ray set of the shared meshes (0.001%), on every \
                 backend. 0.02% (52 rays of a full set, 6 of a quick run's eighth) leaves room for that; \
                 more means ids scrambled among coplanar neighbours, which the tie rule would otherwise \
                 hide. Applies to the reference sets; generated cases are built to tie.",
    },
    Threshold {
        name: "MAX_OCCLUDED_DISAGREEMENTS",
        value: MAX_OCCLUDED_DISAGREEMENTS as f64,
        unit: "rays",
        reason: "occluded must say 'hit' exactly when the reference finds a hit: any-hit traversal ends \
                 early but tests the same primitives with the same functions.",
    },
    Threshold {
        name: "UV_TOLERANCE",
        value: UV_TOLERANCE as f64,
        unit: "barycentric",
        reason: "Same triangle, same ray: u and v come from the same edge functions on every backend and \
                 agree to about 1e-6; 1e-3 allows grazing hits (tiny determinant) but catches swapped or \
                 mis-scaled barycentrics, which shading would show only faintly.",
    },
    Threshold {
        name: "PIXEL_OFF_LEVEL",
        value: PIXEL_OFF_LEVEL as f64,
        unit: "display units",
        reason: "Two sRGB 8-bit levels: float rounding alone moves a pixel by at most one level after \
                 encoding, so a pixel off by more followed a different path.",
    },
    Threshold {
        name: "MAX_PIXELS_OFF_SHARE",
        value: MAX_PIXELS_OFF_SHARE,
        unit: "share of pixels",
        reason: "Paths diverge where rounding flips a decision (a grazing hit, Russian roulette, a lobe \
                 choice at the edge of its interval); with a few samples per pixel that touches at most a \
                 percent or so of pixels. A mirror that differs in an operation moves most pixels.",
    },
    Threshold {
        name: "MAX_MAE",
        value: MAX_MAE,
        unit: "display units",
        reason: "Rounding and the rare divergent path keep the mean absolute error well under one 8-bit \
                 level; two levels on average is a visible, systematic difference.",
    },
    Threshold {
        name: "MAX_RMSE",
        value: MAX_RMSE,
        unit: "display units, RMS",
        reason: "RMSE weighs the divergent pixels: a divergent path can change its pixel by up to full \
                 scale. 0.05 is reached by 0.25% of pixels off by full scale, or 2% off by a third of \
                 it (RMSE = sqrt(share) x difference), so it bounds large divergences more tightly than \
                 the pixels-off share does; a broken material or traversal raises it far above.",
    },
    Threshold {
        name: "MAX_TILE_MEAN_DIFF",
        value: MAX_TILE_MEAN_DIFF,
        unit: "display units",
        reason: "At the higher sample count divergent paths average out within a tile, so tile means of \
                 two backends tracing the same paths agree to about a level; three levels on a whole tile \
                 is a bias (a lobe, a light or a surface computed differently) the per-pixel metrics \
                 could hide under their allowance for divergent paths.",
    },
    Threshold {
        name: "MAX_IMAGE_MEAN_DIFF",
        value: MAX_IMAGE_MEAN_DIFF,
        unit: "display units",
        reason: "Over the whole converged image divergent paths cancel; half a level of signed difference \
                 in the mean is a systematic brightening or darkening.",
    },
    Threshold {
        name: "MAX_SRGB8_LEVELS",
        value: MAX_SRGB8_LEVELS as f64,
        unit: "8-bit levels",
        reason: "A backend's Srgba8 frame is its linear frame encoded on the device, through the table \
                 prism-core builds from its own curve (Srgb8Table), which equals the curve for every f32: \
                 the bytes must be core's.",
    },
    Threshold {
        name: "MAX_SUN_TILE_MEAN_DIFF",
        value: MAX_SUN_TILE_MEAN_DIFF,
        unit: "relative, linear",
        reason: "Chance hits on a sun 4 degrees in radius are a heavy-tailed estimator (a diffuse ray meets the sun \
                 once in some 200, and caustics through glass and the sun in a fuzzy metal are rarer still): \
                 at the quick run's 8,192 spp on 32x18 pixels (8x8 tiles of 64 pixels) its tiles were measured \
                 up to 8-9% from next-event estimation's. 15% leaves room for that noise; a lost or doubled \
                 light (a MIS weight that does not sum to one, a shadow ray that ignores its blocker) moves a lit \
                 tile by far more.",
    },
    Threshold {
        name: "MAX_SUN_IMAGE_MEAN_DIFF",
        value: MAX_SUN_IMAGE_MEAN_DIFF,
        unit: "relative, linear",
        reason: "Over the whole image the noise averages down: measured 1.2% at the quick run's sample count. 3% \
                 catches a systematic brightening or darkening of the sun's light (double counting gives +100% \
                 where the sun lights, a missing MIS weight on one strategy some -1% to -50%).",
    },
    Threshold {
        name: "SUN_TILE_FLOOR",
        value: SUN_TILE_FLOOR,
        unit: "linear radiance",
        reason: "Tiles darker than this (shadows lit only by the dim sky) are compared against this level, so that \
                 noise on a near-black mean does not become a large ratio; it is about a tenth of the sunlit \
                 ground's radiance.",
    },
];
