// Materials: the mirror of prism_core::material (core is branchless; see scatter).

// mirrors prism_core::material::Scatter
struct Scatter {
    dir: vec3<f32>,
    attenuation: vec3<f32>,
    // Whether the Lambert lobe was chosen.
    diffuse: bool,
}

// mirrors prism_core::material::reflect
fn reflect(d: vec3<f32>, n: vec3<f32>) -> vec3<f32> {
    return d - 2.0 * dot(d, n) * n;
}

// mirrors prism_core::material::schlick
fn schlick(cosine: f32, eta: f32) -> f32 {
    var r0 = (1.0 - eta) / (1.0 + eta);
    r0 = r0 * r0;
    let m = 1.0 - cosine;
    return r0 + (1.0 - r0) * (m * m * m * m * m);
}

// The metal lobe of scatter: the mirror direction perturbed inside a ball of
// radius `fuzz`; a sample that ends up below the surface is absorbed (w = 0,
// else w = 1).
fn metal_dir(dir: vec3<f32>, n: vec3<f32>, fuzz: f32, u3: f32, u4: f32, u5: f32) -> vec4<f32> {
    let mirror = reflect(dir, n);
    let fuzzed = mirror + fuzz * unit_ball(u3, u4, u5);
    let fuzzed_len2 = dot(fuzzed, fuzzed);
    var d = mirror;
    if fuzzed_len2 > 1e-12 {
        d = fuzzed * (1.0 / sqrt(fuzzed_len2));
    }
    return vec4<f32>(d, select(0.0, 1.0, dot(d, n) > 0.0));
}

// The dielectric lobe of scatter: refract, or reflect by Schlick's probability
// or total internal reflection.
fn dielectric_dir(dir: vec3<f32>, n: vec3<f32>, front: bool, ior: f32, u_fresnel: f32) -> vec3<f32> {
    let mirror = reflect(dir, n);
    let eta = select(ior, 1.0 / ior, front);
    let cos_i = min(-dot(dir, n), 1.0);
    let sin2_t = eta * eta * (1.0 - cos_i * cos_i);
    let r_perp = eta * (dir + cos_i * n);
    let r_par = -sqrt(abs(1.0 - dot(r_perp, r_perp))) * n;
    var refracted = r_perp + r_par;
    let refracted_len2 = dot(refracted, refracted);
    if refracted_len2 > 1e-12 {
        refracted = refracted * (1.0 / sqrt(refracted_len2));
    } else {
        refracted = mirror;
    }
    let reflects = sin2_t > 1.0 || schlick(cos_i, eta) > u_fresnel;
    return select(refracted, mirror, reflects);
}

// mirrors prism_core::material::scatter
//
// Always consumes seven random numbers: lobe choice, Lambert (2), metal fuzz (3),
// Fresnel choice. Core evaluates every lobe and selects one (branchless, for its
// SIMD lanes); here an invocation evaluates only the lobe it picks, with the same
// expressions, so the direction and attenuation are the same.
fn scatter(m: GpuMaterial, dir: vec3<f32>, normal: vec3<f32>, rng: ptr<function, Pcg>) -> Scatter {
    let u_lobe = pcg_next_f32(rng);
    let u1 = pcg_next_f32(rng);
    let u2 = pcg_next_f32(rng);
    let u3 = pcg_next_f32(rng);
    let u4 = pcg_next_f32(rng);
    let u5 = pcg_next_f32(rng);
    let u_fresnel = pcg_next_f32(rng);

    let albedo = m.albedo_fuzz.xyz;
    let fuzz = m.albedo_fuzz.w;
    let ior = m.emission_ior.w;
    let front = dot(dir, normal) < 0.0;
    let n = select(-normal, normal, front);

    // One random number against the cumulative lobe weights: the last lobe whose
    // threshold u_lobe reaches wins (past the dielectric one, the path is absorbed
    // but keeps the dielectric direction).
    let c_lambert = m.lobe_weights.x;
    let c_metal = c_lambert + m.lobe_weights.y;
    let c_dielectric = c_metal + m.lobe_weights.z;
    var out_dir: vec3<f32>;
    var attenuation: vec3<f32>;
    if u_lobe >= c_metal {
        out_dir = dielectric_dir(dir, n, front, ior, u_fresnel);
        attenuation = vec3<f32>(1.0);
    } else if u_lobe >= c_lambert {
        let metal = metal_dir(dir, n, fuzz, u3, u4, u5);
        out_dir = metal.xyz;
        attenuation = albedo * metal.w;
    } else {
        // Lambert: cosine-distributed about the facing normal.
        out_dir = cosine_hemisphere(n, u1, u2);
        attenuation = albedo;
    }
    if u_lobe >= c_dielectric {
        attenuation = vec3<f32>(0.0);
    }
    return Scatter(out_dir, attenuation, u_lobe < c_lambert);
}
