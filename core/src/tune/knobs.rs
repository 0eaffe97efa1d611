//! The quality knobs a frame budget turns, and their order of quality.

/// What the controller chooses per frame: the AO rays per camera hit and
/// whether the key light casts shadows. Quality grows with both; AO is never
/// switched off below one ray (the `ao` integrator traces at least one,
/// [`crate::RenderSettings::ao_samples`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Knobs {
    /// AO rays per camera hit, `1..=max`.
    pub ao_rays: u32,
    /// Trace a shadow ray to the key light at every camera hit.
    pub shadows: bool,
}

impl Knobs {
    /// The cheapest knobs: one AO ray, no shadows.
    pub const CHEAPEST: Knobs = Knobs {
        ao_rays: 1,
        shadows: false,
    };

    /// Knobs of `ao_rays` AO rays, with or without shadows.
    #[inline]
    pub const fn new(ao_rays: u32, shadows: bool) -> Knobs {
        Knobs { ao_rays, shadows }
    }

    /// A quality score that orders knobs: AO rays count one each, shadows
    /// count `shadow_worth` AO rays (a hard shadow changes the picture more
    /// than one more AO ray once there are a few).
    #[inline]
    pub fn quality(&self, shadow_worth: u32) -> u32 {
        self.ao_rays + if self.shadows { shadow_worth } else { 0 }
    }

    /// These knobs applied to AO settings (one sample a pixel, the AO
    /// integrator; distance and seed kept).
    #[inline]
    pub fn apply(&self, base: &crate::RenderSettings) -> crate::RenderSettings {
        crate::RenderSettings {
            integrator: crate::Integrator::Ao,
            spp: 1,
            ao_samples: self.ao_rays,
            ao_shadows: self.shadows,
            ..*base
        }
    }
}
