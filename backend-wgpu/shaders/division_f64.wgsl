// Division and square root of the intersection tests, correctly rounded as
// core's (see division.wgsl, which this file replaces on adapters with 64-bit
// floats).
//
// The f64 quotient of two f32 values is within a few f64 ulps of the exact one
// (even where the adapter's f64 division is not itself correctly rounded), and
// an exact f32 quotient is either an f32 midpoint or further than that from
// every midpoint (its distance to one is a multiple of 2^-49 relative), so
// rounding the f64 result to f32 gives the correctly rounded f32 quotient. The
// same holds for the square root of an f32.

fn div_rn(a: f32, b: f32) -> f32 {
    return f32(f64(a) / f64(b));
}

fn sqrt_rn(x: f32) -> f32 {
    return f32(sqrt(f64(x)));
}
