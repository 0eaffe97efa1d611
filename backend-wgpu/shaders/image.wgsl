// sRGB encoding of the 8-bit output; mirrors prism_core::image.

// Slots of core's Srgb8Table per unit of linear value (prism_core::image::SRGB8_TABLE_SLOTS).
const SRGB8_TABLE_SLOTS: f32 = 4096.0;

// mirrors prism_core::image::linear_to_srgb8
//
// As core's Srgb8Table::encode computes it: the slot of `c` gives its level and
// the value where the level steps up by one. `srgb8_table` (entry.wgsl) holds
// core's table; WGSL's pow would round some levels differently.
fn linear_to_srgb8(c_in: f32) -> u32 {
    // NaN compares false, so it encodes as 0 as in core.
    var c = 0.0;
    if c_in > 0.0 {
        c = min(c_in, 1.0);
    }
    // c * 4096 is exact (a power of two), so the conversion gives the slot: 0..=4096.
    let slot = srgb8_table[u32(c * SRGB8_TABLE_SLOTS)];
    return slot.y + select(0u, 1u, c >= bitcast<f32>(slot.x));
}

// mirrors prism_core::image::encode_srgba8, packed as the little-endian bytes
// r, g, b, 255 of one u32 (the byte order of Image::rgba8).
fn encode_srgba8(c: vec3<f32>) -> u32 {
    return linear_to_srgb8(c.x) | (linear_to_srgb8(c.y) << 8u) | (linear_to_srgb8(c.z) << 16u) | (255u << 24u);
}
