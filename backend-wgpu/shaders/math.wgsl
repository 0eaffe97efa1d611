// The scalar and vector helpers of Rust's f32 and of glam's Vec3 that core
// uses, written out so that the operation order matches (WGSL's builtins
// `normalize` and `length` may be evaluated differently).

// f32::INFINITY (WGSL has no literal for it, and naga does not fold bitcasts).
fn f32_infinity() -> f32 {
    return bitcast<f32>(0x7f800000u);
}

// mirrors f32::is_finite
fn f32_is_finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

// mirrors f32::is_nan (on the bits: a compiler may assume `x != x` is false)
fn f32_is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

// mirrors f32::min: a NaN operand gives the other one. WGSL's `min` (SPIR-V
// FMin) leaves which operand a NaN gives undefined.
fn f32_min(a: f32, b: f32) -> f32 {
    return select(select(min(a, b), a, f32_is_nan(b)), b, f32_is_nan(a));
}

// mirrors f32::max: a NaN operand gives the other one (see f32_min).
fn f32_max(a: f32, b: f32) -> f32 {
    return select(select(max(a, b), a, f32_is_nan(b)), b, f32_is_nan(a));
}

// a * b rounded on its own, never fused with a following add. WGSL allows a
// compiler to contract a * b + c into one FMA (NVIDIA's Vulkan driver does);
// core never does. The product passes through an integer OR with
// `params.opaque_zero`, a uniform the host always sets to 0 but the compiler
// cannot see, so the multiply must be done, and rounded, by itself. One integer
// op per product; used where core's exact bits matter (intersect.wgsl).
fn mul_rn(a: f32, b: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(a * b) | params.opaque_zero);
}

// `s * v` per component, each product rounded on its own (see mul_rn).
fn mul3_rn(s: f32, v: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(mul_rn(s, v.x), mul_rn(s, v.y), mul_rn(s, v.z));
}

// glam Vec3::dot, (x * rx) + (y * ry) + (z * rz), with unfused products (see
// mul_rn): WGSL's dot() may be evaluated in any order and fused.
fn dot_rn(a: vec3<f32>, b: vec3<f32>) -> f32 {
    return (mul_rn(a.x, b.x) + mul_rn(a.y, b.y)) + mul_rn(a.z, b.z);
}

// mirrors f32::copysign
fn f32_copysign(x: f32, sign: f32) -> f32 {
    return bitcast<f32>((bitcast<u32>(x) & 0x7fffffffu) | (bitcast<u32>(sign) & 0x80000000u));
}

// mirrors glam::Vec3::length
fn vec3_length(v: vec3<f32>) -> f32 {
    return sqrt(dot(v, v));
}

// mirrors glam::Vec3::length_recip
fn vec3_length_recip(v: vec3<f32>) -> f32 {
    return 1.0 / vec3_length(v);
}

// mirrors glam::Vec3::normalize
fn vec3_normalize(v: vec3<f32>) -> vec3<f32> {
    return v * vec3_length_recip(v);
}

// mirrors glam::Vec3::normalize_or
fn vec3_normalize_or(v: vec3<f32>, fallback: vec3<f32>) -> vec3<f32> {
    let rcp = vec3_length_recip(v);
    if f32_is_finite(rcp) && rcp > 0.0 {
        return v * rcp;
    }
    return fallback;
}

// mirrors glam::Vec3::normalize_or_zero
fn vec3_normalize_or_zero(v: vec3<f32>) -> vec3<f32> {
    return vec3_normalize_or(v, vec3<f32>(0.0));
}

// mirrors glam::Vec3::max_element
fn vec3_max_element(v: vec3<f32>) -> f32 {
    let a = select(v.y, v.x, v.x > v.y);
    return select(v.z, a, a > v.z);
}

// mirrors libm::cbrtf (for the inputs core gives it: [0, 1)): a bit-level first
// guess refined by three Newton steps, accurate to about one ulp in f32.
fn cbrtf(x: f32) -> f32 {
    if x == 0.0 || !f32_is_finite(x) {
        return x;
    }
    let ax = abs(x);
    var y = bitcast<f32>(bitcast<u32>(ax) / 3u + 709958130u);
    y = y - (y * y * y - ax) / (3.0 * y * y);
    y = y - (y * y * y - ax) / (3.0 * y * y);
    y = y - (y * y * y - ax) / (3.0 * y * y);
    return f32_copysign(y, x);
}
