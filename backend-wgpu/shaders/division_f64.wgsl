// Division in the ray set-up of the intersection tests, correctly rounded as
// core's (see division.wgsl, which this file replaces on adapters with 64-bit
// floats).
//
// The f64 quotient of two f32 values is within a few f64 ulps (2^-52 relative)
// of the exact one, even where the adapter's f64 division is not itself
// correctly rounded; an exact quotient of two 24-bit significands is either on
// an f32 rounding midpoint or about 2^-49 relative away from it, so rounding
// the f64 result to f32 gives the correctly rounded f32 quotient.

fn div_rn(a: f32, b: f32) -> f32 {
    return f32(f64(a) / f64(b));
}
