//! The quality knobs a frame budget turns, and their order of quality.

/// What the controller chooses per frame: the AO rays per camera hit (a
/// whole count and a fractional part) and whether the key light casts
/// shadows. Quality grows with both; AO is never switched off below one ray
/// (the `ao` integrator traces at least one,
/// [`crate::RenderSettings::ao_samples`]).
///
/// The fractional part makes the AO cost continuous: at 1920x1080 one AO ray
/// a pixel is a large share of an 8 ms frame, and whole counts alone would
/// land up to that share below the budget.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Knobs {
    /// Whole AO rays per camera hit, `1..=max`.
    pub ao_rays: u32,
    /// Share of the pixels that trace one more AO ray, `[0, 1)`
    /// ([`crate::RenderSettings::ao_extra`]).
    pub ao_extra: f32,
    /// Trace a shadow ray to the key light at every camera hit.
    pub shadows: bool,
}

impl Knobs {
    /// The cheapest knobs: one AO ray, no shadows.
    pub const CHEAPEST: Knobs = Knobs {
        ao_rays: 1,
        ao_extra: 0.0,
        shadows: false,
    };

    /// The largest `f32` below 1: the most [`Knobs::ao_extra`] may be.
    pub const MAX_EXTRA: f32 = 1.0 - f32::EPSILON / 2.0;

    /// Knobs of `ao_rays` whole AO rays, with or without shadows.
    #[inline]
    pub const fn new(ao_rays: u32, shadows: bool) -> Knobs {
        Knobs {
            ao_rays,
            ao_extra: 0.0,
            shadows,
        }
    }

    /// Knobs of a mean of `mean_ao` AO rays per camera hit (at least 1): its
    /// whole part as [`Knobs::ao_rays`], the rest as [`Knobs::ao_extra`]
    /// (held below 1 where `f32` rounding would reach it). A mean that is not
    /// finite, or below 1, takes 1.
    #[inline]
    pub fn with_mean(mean_ao: f64, shadows: bool) -> Knobs {
        let mean = if mean_ao.is_finite() {
            mean_ao.max(1.0)
        } else {
            1.0
        };
        let whole = libm::floor(mean);
        Knobs {
            // Saturates above u32::MAX; callers clamp the mean to their most.
            ao_rays: whole as u32,
            ao_extra: ((mean - whole) as f32).min(Self::MAX_EXTRA),
            shadows,
        }
    }

    /// The mean AO rays per camera hit: `ao_rays + ao_extra`.
    #[inline]
    pub fn mean_ao(&self) -> f64 {
        self.ao_rays as f64 + self.ao_extra as f64
    }

    /// A quality score that orders knobs: AO rays count one each (the
    /// fractional part its share), shadows count `shadow_worth` AO rays (a
    /// hard shadow changes the picture more than one more AO ray once there
    /// are a few).
    #[inline]
    pub fn quality(&self, shadow_worth: u32) -> f64 {
        self.mean_ao()
            + if self.shadows {
                shadow_worth as f64
            } else {
                0.0
            }
    }

    /// These knobs applied to AO settings (one sample a pixel, the AO
    /// integrator; distance and seed kept).
    #[inline]
    pub fn apply(&self, base: &crate::RenderSettings) -> crate::RenderSettings {
        crate::RenderSettings {
            integrator: crate::Integrator::Ao,
            spp: 1,
            ao_samples: self.ao_rays,
            ao_extra: self.ao_extra,
            ao_shadows: self.shadows,
            ..*base
        }
    }
}
