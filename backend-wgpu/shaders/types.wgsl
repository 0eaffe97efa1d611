// Buffer structs: the mirrors of prism_core::gpu, plus the register-only values
// (Ray, Hit) that the traversal passes around.
//
// Every buffer struct is built from 16-byte rows, as in core; tests/layout.rs
// computes these layouts with naga and checks each size and member offset
// against prism_core::gpu::layouts().

// mirrors prism_core::gpu::TRAVERSAL_STACK_SIZE
const TRAVERSAL_STACK_SIZE: u32 = 64u;
// The module is compiled per scene with the next five lines rewritten
// (ShaderSource::assemble_for): the traversal stack as long as the scene's BVH
// is deep (two levels: as both trees together), the primitive kinds the scene
// holds, whether `nodes` holds the tree's eight octant copies
// (prism_core::gpu::octant_copies; see traverse.wgsl), whether
// `slot_materials` carries the light grid (see point_grid.wgsl), and whether
// the scene has two levels (instances; see two_level.wgsl). The values here
// are the general ones of a flat scene.
const STACK_ENTRIES: u32 = 64u;
const SCENE_KINDS: u32 = 3u;
const OCTANT_COPIES: u32 = 0u;
const LIGHT_GRID: u32 = 0u;
const TWO_LEVEL: u32 = 0u;
// Whether the render kernels' closest hits walk the scene's cell grid, which
// then lies in `slot_materials` (cell_grid.wgsl); 0 (the general value): they
// walk the tree.
const CELL_GRID: u32 = 0u;
// Whether the scene may have a sun (1, the general value) or has none (0:
// integrator.wgsl's has_sun is then false at compile time).
const SUN: u32 = 1u;
// Whether the Whitted and AO render kernels' camera rays, first mirror rays
// and shadow rays from camera hits test their tile's candidates
// (camera_masks.wgsl, from the frame's cones in `frame_cones`); 0 (the
// general value): they walk the tree.
const CAMERA_MASKS: u32 = 0u;
// SCENE_KINDS values: spheres only, triangles only, both (or an empty scene),
// each with SCENE_HEIGHTFIELDS where the scene holds a heightfield (only then
// is heightfield.wgsl's walk reached, and the heightfields' data lie after the
// slot materials).
const SCENE_SPHERES: u32 = 1u;
const SCENE_TRIANGLES: u32 = 2u;
const SCENE_MIXED: u32 = 3u;
const SCENE_HEIGHTFIELDS: u32 = 4u;
// mirrors prism_core::gpu::EMPTY_CHILD
const EMPTY_CHILD: u32 = 0xffffffffu;
// mirrors prism_core::gpu::KIND_TRIANGLE
const KIND_TRIANGLE: u32 = 0u;
// mirrors prism_core::gpu::KIND_SPHERE
const KIND_SPHERE: u32 = 1u;
// mirrors prism_core::gpu::KIND_HEIGHTFIELD
const KIND_HEIGHTFIELD: u32 = 2u;
// mirrors prism_core::gpu::HEIGHTFIELD_MAX_LEVELS
const HEIGHTFIELD_MAX_LEVELS: u32 = 32u;
// mirrors prism_core::ray::Hit::NO_PRIM
const NO_PRIM: u32 = 0xffffffffu;
// mirrors prism_core::ray::Hit::NO_INSTANCE
const NO_INSTANCE: u32 = 0xffffffffu;
// mirrors prism_core::gpu::GpuInstance::NO_MATERIAL
const NO_MATERIAL: u32 = 0xffffffffu;
// prism_core::ray::Ray::ALL: the mask of a ray that sees every instance.
const RAY_ALL: u32 = 0xffffffffu;
// The mask of a flat scene's one implicit instance
// (prism_core::traverse::Accel::intersect_slot).
const FLAT_MASK: u32 = 0xffu;

// mirrors prism_core::gpu::BvhNode
struct BvhNode {
    left_lo: vec4<f32>,
    left_hi: vec4<f32>,
    right_lo: vec4<f32>,
    right_hi: vec4<f32>,
}

// mirrors prism_core::gpu::Primitive
struct Primitive {
    a: vec4<f32>,
    b: vec4<f32>,
    c: vec4<f32>,
}

// mirrors prism_core::gpu::GpuMaterial
struct GpuMaterial {
    albedo_fuzz: vec4<f32>,
    emission_ior: vec4<f32>,
    lobe_weights: vec4<f32>,
}

// mirrors prism_core::gpu::GpuRay
struct GpuRay {
    origin_tmin: vec4<f32>,
    dir_tmax: vec4<f32>,
    // x: the visibility mask; yzw: 0.
    mask: vec4<u32>,
}

// mirrors prism_core::gpu::GpuInstance
//
// `info`: root node, mask, material override (NO_MATERIAL: none) as bits, and
// the scale. Stored among the `nodes` (one 64-byte record is one BvhNode's
// bytes), read through instance_record (two_level.wgsl).
struct GpuInstance {
    world_to_object: array<vec4<f32>, 3>,
    info: vec4<f32>,
}

// mirrors prism_core::gpu::GpuCamera
struct GpuCamera {
    origin_lens: vec4<f32>,
    lower_left: vec4<f32>,
    horizontal: vec4<f32>,
    vertical: vec4<f32>,
    u: vec4<f32>,
    v: vec4<f32>,
}

// mirrors prism_core::gpu::RenderParams
struct RenderParams {
    camera: GpuCamera,
    sky_horizon: vec4<f32>,
    sky_zenith: vec4<f32>,
    light_position: vec4<f32>,
    light_color: vec4<f32>,
    width: u32,
    height: u32,
    spp: u32,
    max_depth: u32,
    seed: u32,
    integrator: u32,
    ao_samples: u32,
    ao_shadows: u32,
    ao_distance: f32,
    rr_depth: u32,
    prim_count: u32,
    // Always 0; mul_rn (math.wgsl) ORs it into products to keep them unfused.
    opaque_zero: u32,
    // The sun: centre xyz, radius w (0: no sun).
    sun_center_radius: vec4<f32>,
    // The sun's radiance xyz; w = 1: next-event estimation on.
    sun_radiance: vec4<f32>,
    // Fractional AO count: pixels whose pattern is below it trace one more ray.
    ao_extra: u32,
    // Always 0: fill the row to 16 bytes (an array would need a 16-byte stride).
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

// mirrors prism_core::gpu::GpuHeightfield (read from the words of the
// `slot_materials` buffer, heightfield.wgsl; named here for the layout check)
struct GpuHeightfield {
    dims: vec4<u32>,
    scale: vec4<f32>,
    level_offset: array<vec4<u32>, 8>,
}

// mirrors prism_core::ray::Ray (the 48 bytes of GpuRay: vec3 + f32 twice,
// then the mask, padded to the 16-byte alignment)
struct Ray {
    origin: vec3<f32>,
    tmin: f32,
    dir: vec3<f32>,
    tmax: f32,
    mask: u32,
}

// mirrors prism_core::ray::Hit (its first five words: store_hit writes the
// second row's cell and face, which a heightfield's hit carries in u and v,
// heightfield.wgsl, and its padding)
struct Hit {
    t: f32,
    u: f32,
    v: f32,
    // The slot in `prims` while tracing; store_hit writes the primitive id.
    prim: u32,
    instance: u32,
}

// mirrors prism_core::ray::Ray::new
fn ray_new(origin: vec3<f32>, dir: vec3<f32>) -> Ray {
    return Ray(origin, 0.0, dir, f32_infinity(), RAY_ALL);
}

// mirrors prism_core::ray::Ray::segment
fn ray_segment(origin: vec3<f32>, dir: vec3<f32>, tmin: f32, tmax: f32) -> Ray {
    return Ray(origin, tmin, dir, tmax, RAY_ALL);
}

// mirrors prism_core::ray::Ray::at
fn ray_at(ray: Ray, t: f32) -> vec3<f32> {
    return ray.origin + t * ray.dir;
}

// mirrors prism_core::ray::Hit::MISS
fn hit_miss() -> Hit {
    return Hit(f32_infinity(), 0.0, 0.0, NO_PRIM, NO_INSTANCE);
}

// mirrors prism_core::ray::Hit::is_hit
fn hit_is_hit(hit: Hit) -> bool {
    return hit.prim != NO_PRIM;
}
