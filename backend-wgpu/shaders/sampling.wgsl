// Warping uniform numbers to directions and points; branch-free as in core.

// mirrors core::f32::consts::TAU (rounds to the same f32)
const TAU: f32 = 6.283185307179586;
// mirrors core::f32::consts::PI (rounds to the same f32, half of TAU)
const PI: f32 = 3.141592653589793;

// mirrors prism_core::sampling::polar_angle
fn polar_angle(u: f32) -> f32 {
    let phi = TAU * u;
    return select(phi, phi - TAU, phi > PI);
}

// mirrors prism_core::sampling::unit_sphere
fn unit_sphere(u1: f32, u2: f32) -> vec3<f32> {
    let z = 1.0 - 2.0 * u1;
    let r = sqrt(max(1.0 - z * z, 0.0));
    let phi = polar_angle(u2);
    return vec3<f32>(r * cos(phi), r * sin(phi), z);
}

// mirrors prism_core::sampling::unit_ball
fn unit_ball(u1: f32, u2: f32, u3: f32) -> vec3<f32> {
    return unit_sphere(u1, u2) * cbrtf(u3);
}

// mirrors prism_core::sampling::unit_disk
fn unit_disk(u1: f32, u2: f32) -> vec2<f32> {
    let r = sqrt(u1);
    let phi = polar_angle(u2);
    return vec2<f32>(r * cos(phi), r * sin(phi));
}

// mirrors prism_core::sampling::COSINE_HEMISPHERE_MIN_LEN2
const COSINE_HEMISPHERE_MIN_LEN2: f32 = 1e-5;

// mirrors prism_core::sampling::cosine_hemisphere
fn cosine_hemisphere(n: vec3<f32>, u1: f32, u2: f32) -> vec3<f32> {
    let d = n + unit_sphere(u1, u2);
    let len2 = dot(d, d);
    if len2 > COSINE_HEMISPHERE_MIN_LEN2 {
        return d * (1.0 / sqrt(len2));
    }
    return n;
}

// mirrors prism_core::sampling::orthonormal_basis (Duff et al. 2017; the sign
// from n.z's bits, as Rust's copysign). Returns t and b as the columns of a
// 3x2 matrix.
fn orthonormal_basis(n: vec3<f32>) -> mat2x3<f32> {
    let sign = f32_copysign(1.0, n.z);
    let a = -1.0 / (sign + n.z);
    let b = n.x * n.y * a;
    return mat2x3<f32>(
        vec3<f32>(1.0 + sign * n.x * n.x * a, sign * b, -sign * n.x),
        vec3<f32>(b, sign + n.y * n.y * a, -n.y),
    );
}

// mirrors prism_core::sampling::cone_one_minus_cos
fn cone_one_minus_cos(sin2: f32) -> f32 {
    return sin2 / (1.0 + sqrt(max(1.0 - sin2, 0.0)));
}

// mirrors prism_core::sampling::uniform_cone
fn uniform_cone(axis: vec3<f32>, one_minus_cos: f32, u1: f32, u2: f32) -> vec3<f32> {
    let z = u1 * one_minus_cos;
    let cos_theta = 1.0 - z;
    let sin_theta = sqrt(max(z * (2.0 - z), 0.0));
    let phi = polar_angle(u2);
    let tb = orthonormal_basis(axis);
    return tb[0] * (sin_theta * cos(phi)) + tb[1] * (sin_theta * sin(phi)) + axis * cos_theta;
}
