// PCG random numbers, u32 only, exactly as prism_core::rng (WGSL u32
// arithmetic wraps like Rust's wrapping_mul / wrapping_add).

// mirrors prism_core::rng::pcg_hash
fn pcg_hash(input: u32) -> u32 {
    let state = input * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

// mirrors prism_core::rng::path_seed
fn path_seed(pixel: u32, sample_index: u32, frame_seed: u32) -> u32 {
    return pcg_hash(pixel ^ pcg_hash(sample_index ^ pcg_hash(frame_seed)));
}

// mirrors prism_core::rng::Pcg
struct Pcg {
    state: u32,
}

// mirrors prism_core::rng::Pcg::for_path
fn pcg_for_path(pixel: u32, sample_index: u32, frame_seed: u32) -> Pcg {
    return Pcg(path_seed(pixel, sample_index, frame_seed));
}

// mirrors prism_core::rng::Pcg::next_u32
fn pcg_next_u32(rng: ptr<function, Pcg>) -> u32 {
    (*rng).state = (*rng).state * 747796405u + 2891336453u;
    let s = (*rng).state;
    let word = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
    return (word >> 22u) ^ word;
}

// mirrors prism_core::rng::Pcg::next_f32
fn pcg_next_f32(rng: ptr<function, Pcg>) -> f32 {
    return f32(pcg_next_u32(rng) >> 8u) * (1.0 / 16777216.0);
}
