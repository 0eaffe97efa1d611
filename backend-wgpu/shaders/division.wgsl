// Division in the ray set-up of the intersection tests (intersect.wgsl).
//
// Core's `/` is correctly rounded (IEEE 754). WGSL's may be off by up to
// 2.5 ulp (the NVIDIA Vulkan driver's are): that moves the watertight
// test's shear, so a ray through a shared edge or vertex may hit the other
// triangle, or neither at a mesh's border, and it moves slab distances by more
// than core's margin covers. On adapters with 64-bit floats the host swaps this
// file for `division_f64.wgsl` (WgpuOptions::f64_division), whose results are
// core's exactly; this file is the fallback: the adapter's own f32 operations.

fn div_rn(a: f32, b: f32) -> f32 {
    return a / b;
}
