// sRGB encoding of the 8-bit output; mirrors prism_core::image.

// mirrors prism_core::image::linear_to_srgb8
fn linear_to_srgb8(c_in: f32) -> u32 {
    // NaN compares false, so it encodes as 0 as in core.
    var c = 0.0;
    if c_in > 0.0 {
        c = min(c_in, 1.0);
    }
    var s: f32;
    if c <= 0.0031308 {
        s = 12.92 * c;
    } else {
        s = 1.055 * pow(c, 1.0 / 2.4) - 0.055;
    }
    // `as u8` saturates; pow may land an ulp above 1.
    return min(u32(s * 255.0 + 0.5), 255u);
}

// mirrors prism_core::image::encode_srgba8, packed as the little-endian bytes
// r, g, b, 255 of one u32 (the byte order of Image::rgba8).
fn encode_srgba8(c: vec3<f32>) -> u32 {
    return linear_to_srgb8(c.x) | (linear_to_srgb8(c.y) << 8u) | (linear_to_srgb8(c.z) << 16u) | (255u << 24u);
}
