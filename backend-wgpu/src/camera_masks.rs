//! A frame's cones for the render kernels' tile candidate masks
//! ([`prism_core::camera_bounds`]; `shaders/camera_masks.wgsl`): which frames
//! get them and the `FrameCones` uniform (entry.wgsl) they are written into.

use prism_core::camera_bounds;
use prism_core::gpu::RenderParams;
use prism_core::{Accel, Integrator};

/// `FrameCones` of entry.wgsl: a uniform of 16-byte rows, as WGSL lays out
/// `vec4` arrays in a uniform (its size and offsets are checked against naga
/// in tests/layout.rs).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct FrameCones {
    /// Cones, which bounce masks to find (`LIST_REFLECTIONS`,
    /// `LIST_SHADOWS`), 0, 0.
    pub info: [u32; 4],
    /// The tiles' half angle in radians, rounded up, then 0, 0, 0.
    pub angle: [f32; 4],
    /// Per slot: unit axis and least cosine ([`camera_bounds::camera_cones`]).
    pub cones: [[f32; 4]; camera_bounds::CAMERA_BOUNDS_MAX_PRIMS],
    /// Per slot: bounding sphere ([`camera_bounds::bounding_balls`]).
    pub balls: [[f32; 4]; camera_bounds::CAMERA_BOUNDS_MAX_PRIMS],
}

// The layout tests/layout.rs finds for entry.wgsl's FrameCones.
const _: () = {
    use std::mem::offset_of;
    assert!(std::mem::size_of::<FrameCones>() == 2080);
    assert!(offset_of!(FrameCones, info) == 0);
    assert!(offset_of!(FrameCones, angle) == 16);
    assert!(offset_of!(FrameCones, cones) == 32);
    assert!(offset_of!(FrameCones, balls) == 1056);
};

/// Bytes of [`FrameCones`]: the size of the uniform buffer the scene group
/// binds at binding 7.
pub(crate) const FRAME_CONES_BYTES: u64 = std::mem::size_of::<FrameCones>() as u64;

/// Bytes of one tile's masks as `camera_masks_main` (entry.wgsl) writes them:
/// camera, reflection and shadow candidates, 64 bits each, and 8 bytes of
/// padding (two 16-byte rows, which the render kernels load whole).
pub(crate) const MASK_TILE_BYTES: u64 = 32;

/// The tiles of [`camera_bounds::CAMERA_MASK_TILE`] pixels of a `width` x
/// `height` frame (entry.wgsl's `mask_tiles`, across times down).
pub(crate) fn mask_tiles(width: u32, height: u32) -> u64 {
    let tile = camera_bounds::CAMERA_MASK_TILE;
    width.div_ceil(tile) as u64 * height.div_ceil(tile) as u64
}

/// camera_masks.wgsl's `LIST_REFLECTIONS` and `LIST_SHADOWS`.
const LIST_REFLECTIONS: u32 = 1;
const LIST_SHADOWS: u32 = 2;

/// The cones of a frame of `width` x `height` pixels with `params` of the
/// scene `accel`, for tiles of [`camera_bounds::CAMERA_MASK_TILE`] pixels, or
/// `None` where its render kernel takes no masks: the integrator is the path
/// tracer (its later bounces dominate; the CUDA path kernels read none
/// either), the scene has two levels (its slots are in object space) or a
/// heightfield, or [`camera_bounds::camera_cones`] makes none (a lens, more
/// than [`camera_bounds::CAMERA_BOUNDS_MAX_PRIMS`] primitives, a degenerate
/// camera or primitive). The same conditions as the CUDA backend's, which
/// also finds the reflection and shadow masks of every such frame.
pub(crate) fn frame_cones(
    accel: &Accel,
    integrator: Integrator,
    params: &RenderParams,
    (width, height): (u32, u32),
) -> Option<FrameCones> {
    if !matches!(integrator, Integrator::Whitted | Integrator::Ao)
        || accel.is_two_level()
        || !accel.heightfields().is_empty()
    {
        return None;
    }
    let tile = [camera_bounds::CAMERA_MASK_TILE; 2];
    let prims = accel.primitives();
    let cones = camera_bounds::camera_cones(&params.camera, width, height, tile, prims)?;
    let balls = camera_bounds::bounding_balls(prims);
    if cones.len() != balls.len() || cones.len() > camera_bounds::CAMERA_BOUNDS_MAX_PRIMS {
        return None;
    }
    // The tiles' half angle, rounded up; none: every mirror and shadow ray
    // of the frame walks the tree (as the CUDA backend's).
    let angle = match camera_bounds::tile_half_angle(&params.camera, width, height, tile) {
        Some(Some(a)) => (a as f32).next_up(),
        _ => camera_bounds::REFLECTION_MAX_ANGLE as f32,
    };
    let mut frame = FrameCones {
        info: [cones.len() as u32, LIST_REFLECTIONS | LIST_SHADOWS, 0, 0],
        angle: [angle, 0.0, 0.0, 0.0],
        cones: [[0.0; 4]; camera_bounds::CAMERA_BOUNDS_MAX_PRIMS],
        balls: [[0.0; 4]; camera_bounds::CAMERA_BOUNDS_MAX_PRIMS],
    };
    frame.cones[..cones.len()].copy_from_slice(&cones);
    frame.balls[..balls.len()].copy_from_slice(&balls);
    Some(frame)
}
