// Branchless materials: every lobe is evaluated, one random number picks one
// (the mirror of prism_core::material).

// mirrors prism_core::material::Scatter
struct Scatter {
    dir: vec3<f32>,
    attenuation: vec3<f32>,
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

// mirrors prism_core::material::scatter
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

    // Lambert: cosine-distributed about the facing normal.
    let d_lambert = cosine_hemisphere(n, u1, u2);

    // Metal: mirror direction perturbed inside a ball of radius `fuzz`; a sample
    // that ends up below the surface is absorbed.
    let mirror = reflect(dir, n);
    let fuzzed = mirror + fuzz * unit_ball(u3, u4, u5);
    let fuzzed_len2 = dot(fuzzed, fuzzed);
    var d_metal = mirror;
    if fuzzed_len2 > 1e-12 {
        d_metal = fuzzed * (1.0 / sqrt(fuzzed_len2));
    }
    let metal_keep = select(0.0, 1.0, dot(d_metal, n) > 0.0);

    // Dielectric: refract, or reflect by Schlick's probability or total internal reflection.
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
    let d_dielectric = select(refracted, mirror, reflects);

    // One random number against the cumulative lobe weights.
    let c_lambert = m.lobe_weights.x;
    let c_metal = c_lambert + m.lobe_weights.y;
    let c_dielectric = c_metal + m.lobe_weights.z;
    var out_dir = d_lambert;
    var attenuation = albedo;
    if u_lobe >= c_lambert {
        out_dir = d_metal;
        attenuation = albedo * metal_keep;
    }
    if u_lobe >= c_metal {
        out_dir = d_dielectric;
        attenuation = vec3<f32>(1.0);
    }
    if u_lobe >= c_dielectric {
        attenuation = vec3<f32>(0.0);
    }
    return Scatter(out_dir, attenuation);
}
