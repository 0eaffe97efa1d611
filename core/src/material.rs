//! Branchless materials: every lobe is evaluated, one random number picks one.
//!
//! A material is a mixture of three lobes (Lambert, fuzzy metal, dielectric) with
//! weights summing to at most 1, plus emission. [`scatter`] computes each lobe's
//! direction and attenuation, then selects one by comparing a single uniform
//! number with the cumulative weights. Sampling lobe `i` with probability `w_i`
//! and returning its own attenuation estimates the mixture without bias, and the
//! selects compile to conditional moves, so GPU lanes with different materials
//! never diverge on a material switch.

use crate::error::Error;
use crate::gpu::GpuMaterial;
use crate::rng::Pcg;
use crate::sampling::{cosine_hemisphere, unit_ball};
use glam::Vec3;

/// A surface description (see the module docs). Construct with the helpers and
/// [`Material::blend`]; [`Material::validate`] states the valid ranges.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Material {
    /// Base colour of the Lambert and metal lobes, each component in `[0, 1]`.
    pub albedo: Vec3,
    /// Roughness of the metal lobe in `[0, 1]` (0 = perfect mirror).
    pub fuzz: f32,
    /// Emitted radiance, each component finite and `>= 0`.
    pub emission: Vec3,
    /// Index of refraction of the dielectric lobe, finite and `> 0`.
    pub ior: f32,
    /// Weight of the Lambert lobe.
    pub lambert: f32,
    /// Weight of the metal lobe.
    pub metal: f32,
    /// Weight of the dielectric lobe.
    pub dielectric: f32,
}

impl Material {
    /// A diffuse surface.
    pub fn lambertian(albedo: Vec3) -> Self {
        Self {
            albedo,
            fuzz: 0.0,
            emission: Vec3::ZERO,
            ior: 1.5,
            lambert: 1.0,
            metal: 0.0,
            dielectric: 0.0,
        }
    }
    /// A metal, `fuzz = 0` for a mirror.
    pub fn metal(albedo: Vec3, fuzz: f32) -> Self {
        Self {
            albedo,
            fuzz,
            emission: Vec3::ZERO,
            ior: 1.5,
            lambert: 0.0,
            metal: 1.0,
            dielectric: 0.0,
        }
    }
    /// A clear dielectric (glass 1.5, water 1.33).
    pub fn dielectric(ior: f32) -> Self {
        Self {
            albedo: Vec3::ONE,
            fuzz: 0.0,
            emission: Vec3::ZERO,
            ior,
            lambert: 0.0,
            metal: 0.0,
            dielectric: 1.0,
        }
    }
    /// A light: emits `radiance`, reflects nothing.
    pub fn emissive(radiance: Vec3) -> Self {
        Self {
            albedo: Vec3::ZERO,
            fuzz: 0.0,
            emission: radiance,
            ior: 1.5,
            lambert: 0.0,
            metal: 0.0,
            dielectric: 0.0,
        }
    }
    /// `(1 - t) * a + t * b`, parameter by parameter (lobe weights included), for
    /// `t` in `[0, 1]`: e.g. a varnished diffuse surface is a blend of Lambert and metal.
    pub fn blend(a: Material, b: Material, t: f32) -> Self {
        let l = |x: f32, y: f32| x + (y - x) * t;
        Self {
            albedo: a.albedo.lerp(b.albedo, t),
            fuzz: l(a.fuzz, b.fuzz),
            emission: a.emission.lerp(b.emission, t),
            ior: l(a.ior, b.ior),
            lambert: l(a.lambert, b.lambert),
            metal: l(a.metal, b.metal),
            dielectric: l(a.dielectric, b.dielectric),
        }
    }

    /// Check ranges; `index` is the material id named in the error.
    pub fn validate(&self, index: usize) -> Result<(), Error> {
        let bad = |field, value, reason| {
            Err(Error::MaterialInvalid {
                index,
                field,
                value,
                reason,
            })
        };
        for (field, v) in [
            ("albedo.r", self.albedo.x),
            ("albedo.g", self.albedo.y),
            ("albedo.b", self.albedo.z),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return bad(
                    field,
                    v,
                    "must be in [0, 1] (a surface cannot reflect more than it receives)",
                );
            }
        }
        for (field, v) in [
            ("emission.r", self.emission.x),
            ("emission.g", self.emission.y),
            ("emission.b", self.emission.z),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return bad(field, v, "must be finite and >= 0");
            }
        }
        if !(0.0..=1.0).contains(&self.fuzz) {
            return bad("fuzz", self.fuzz, "must be in [0, 1]");
        }
        if !(self.ior > 0.0 && self.ior.is_finite()) {
            return bad("ior", self.ior, "must be finite and > 0");
        }
        for (field, v) in [
            ("lambert", self.lambert),
            ("metal", self.metal),
            ("dielectric", self.dielectric),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return bad(field, v, "lobe weights must be in [0, 1]");
            }
        }
        let sum = self.lambert + self.metal + self.dielectric;
        if sum > 1.0 + 1e-6 {
            return bad(
                "lambert + metal + dielectric",
                sum,
                "lobe weights must sum to at most 1",
            );
        }
        Ok(())
    }

    /// The buffer form.
    pub fn to_gpu(&self) -> GpuMaterial {
        GpuMaterial {
            albedo_fuzz: self.albedo.extend(self.fuzz).to_array(),
            emission_ior: self.emission.extend(self.ior).to_array(),
            lobe_weights: [self.lambert, self.metal, self.dielectric, 0.0],
        }
    }
}

/// The outcome of [`scatter`]: where the path goes next and how much it keeps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scatter {
    /// New direction (unit length).
    pub dir: Vec3,
    /// Per-channel factor for the path throughput, each in `[0, 1]`.
    pub attenuation: Vec3,
    /// Whether the Lambert lobe was chosen (`dir` cosine-distributed): the
    /// lobe whose rays are weighted against the sun's direct samples
    /// ([`crate::sun::sun_bsdf_weight`]).
    pub diffuse: bool,
}

/// Mirror `d` about the plane with unit normal `n`.
#[inline(always)]
pub fn reflect(d: Vec3, n: Vec3) -> Vec3 {
    d - 2.0 * d.dot(n) * n
}

/// Schlick's approximation of Fresnel reflectance.
#[inline(always)]
pub fn schlick(cosine: f32, eta: f32) -> f32 {
    let r0 = (1.0 - eta) / (1.0 + eta);
    let r0 = r0 * r0;
    let m = 1.0 - cosine;
    r0 + (1.0 - r0) * (m * m * m * m * m)
}

/// Sample the next direction at a surface, branch-free over material kinds.
///
/// `dir` is the unit incoming direction, `normal` the unit geometric normal
/// (either side; the side the ray came from is found here). Always consumes
/// exactly seven random numbers, in this order: lobe choice, Lambert (2),
/// metal fuzz (3), Fresnel choice.
#[inline(always)]
pub fn scatter(m: &GpuMaterial, dir: Vec3, normal: Vec3, rng: &mut Pcg) -> Scatter {
    let u_lobe = rng.next_f32();
    let (u1, u2) = (rng.next_f32(), rng.next_f32());
    let (u3, u4, u5) = (rng.next_f32(), rng.next_f32(), rng.next_f32());
    let u_fresnel = rng.next_f32();

    let albedo = Vec3::new(m.albedo_fuzz[0], m.albedo_fuzz[1], m.albedo_fuzz[2]);
    let fuzz = m.albedo_fuzz[3];
    let ior = m.emission_ior[3];
    let front = dir.dot(normal) < 0.0;
    let n = if front { normal } else { -normal };

    // Lambert: cosine-distributed about the facing normal.
    let d_lambert = cosine_hemisphere(n, u1, u2);

    // Metal: mirror direction perturbed inside a ball of radius `fuzz`; a sample
    // that ends up below the surface is absorbed.
    let mirror = reflect(dir, n);
    let fuzzed = mirror + fuzz * unit_ball(u3, u4, u5);
    let fuzzed_len2 = fuzzed.length_squared();
    let d_metal = if fuzzed_len2 > 1e-12 {
        fuzzed * (1.0 / libm::sqrtf(fuzzed_len2))
    } else {
        mirror
    };
    let metal_keep = if d_metal.dot(n) > 0.0 { 1.0 } else { 0.0 };

    // Dielectric: refract, or reflect by Schlick's probability or total internal reflection.
    let eta = if front { 1.0 / ior } else { ior };
    let cos_i = (-dir.dot(n)).min(1.0);
    let sin2_t = eta * eta * (1.0 - cos_i * cos_i);
    let r_perp = eta * (dir + cos_i * n);
    let r_par = -libm::sqrtf((1.0 - r_perp.length_squared()).abs()) * n;
    let refracted = r_perp + r_par;
    let refracted_len2 = refracted.length_squared();
    let refracted = if refracted_len2 > 1e-12 {
        refracted * (1.0 / libm::sqrtf(refracted_len2))
    } else {
        mirror
    };
    let reflects = sin2_t > 1.0 || schlick(cos_i, eta) > u_fresnel;
    let d_dielectric = if reflects { mirror } else { refracted };

    // One random number against the cumulative lobe weights.
    let c_lambert = m.lobe_weights[0];
    let c_metal = c_lambert + m.lobe_weights[1];
    let c_dielectric = c_metal + m.lobe_weights[2];
    let mut out_dir = d_lambert;
    let mut attenuation = albedo;
    if u_lobe >= c_lambert {
        out_dir = d_metal;
        attenuation = albedo * metal_keep;
    }
    if u_lobe >= c_metal {
        out_dir = d_dielectric;
        attenuation = Vec3::ONE;
    }
    if u_lobe >= c_dielectric {
        attenuation = Vec3::ZERO;
    }
    Scatter {
        dir: out_dir,
        attenuation,
        diffuse: u_lobe < c_lambert,
    }
}
