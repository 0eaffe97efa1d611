// Buffer structs shared with the host: mirrors of prism_core::gpu.
//
// Every size and offset is checked at compile time against the numbers the host
// passes in as -D definitions (generated from prism_core::gpu::layouts() and
// core::mem::offset_of!), so a layout change in core that is not mirrored here
// fails to compile instead of reading garbage.
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;

// ---- constants of prism_core, passed in by the host (see src/kernels.rs) ----
// mirrors prism_core::gpu::TRAVERSAL_STACK_SIZE, EMPTY_CHILD, KIND_TRIANGLE, KIND_SPHERE,
//   KIND_HEIGHTFIELD, HEIGHTFIELD_MAX_LEVELS
// mirrors prism_core::intersect::MIN_DIR_COMPONENT, SLAB_EXIT_SCALE, SLAB_EXIT_SCALE_NEGATIVE,
//   SPHERE_EARLY_MISS_MARGIN, SPHERE_LEFT_BEHIND_SCALE
// mirrors prism_core::integrator::{SHADOW_KEEP, PHONG_*, WHITTED_LOCAL}
// mirrors prism_core::ray::Hit::NO_PRIM, NO_INSTANCE, prism_core::gpu::GpuInstance::NO_MATERIAL
#if !defined(PRISM_TRAVERSAL_STACK_SIZE) || !defined(PRISM_RAY_TALLY_SLOTS)
#error "compile through prism_cuda::compile_kernels: the core constants are passed as -D options"
#endif

// mirrors prism_core::gpu::BvhNode
struct __align__(16) BvhNode {
    float4 left_lo;   // min.xyz, w = child index bits
    float4 left_hi;   // max.xyz, w = primitive count bits (0 = inner node)
    float4 right_lo;
    float4 right_hi;
};

// mirrors prism_core::gpu::Primitive
struct __align__(16) Primitive {
    float4 a;  // v0.xyz | center.xyz, w = scene id bits
    float4 b;  // v1.xyz | (radius, 1 / radius, size), w = kind bits
    float4 c;  // v2.xyz | 0
};

// mirrors prism_core::gpu::GpuHeightfield
struct __align__(16) GpuHeightfield {
    uint4 dims;               // width, depth, level count, 0
    float4 scale;             // cell size, 1 / cell size, largest height, size
    uint4 level_offset[8];    // first entry of level k in the height array: [k / 4] component k % 4
};

// mirrors prism_core::gpu::GpuMaterial
struct __align__(16) GpuMaterial {
    float4 albedo_fuzz;
    float4 emission_ior;
    float4 lobe_weights;
};

// mirrors prism_core::gpu::GpuRay
struct __align__(16) GpuRay {
    float4 origin_tmin;
    float4 dir_tmax;
    uint4 mask;  // x = visibility mask, yzw = 0
};

// mirrors prism_core::gpu::GpuInstance
struct __align__(16) GpuInstance {
    float4 world_to_object[3];  // rows (m_k0, m_k1, m_k2, t_k)
    float4 info;                // root node, mask, material override (bits), scale
};

// mirrors prism_core::gpu::GpuCamera
struct __align__(16) GpuCamera {
    float4 origin_lens;
    float4 lower_left;
    float4 horizontal;
    float4 vertical;
    float4 u;
    float4 v;
};

// mirrors prism_core::gpu::RenderParams
struct __align__(16) RenderParams {
    GpuCamera camera;
    float4 sky_horizon;
    float4 sky_zenith;
    float4 light_position;
    float4 light_color;
    u32 width;
    u32 height;
    u32 spp;
    u32 max_depth;
    u32 seed;
    u32 integrator;
    u32 ao_samples;
    u32 ao_shadows;
    float ao_distance;
    u32 rr_depth;
    u32 prim_count;
    u32 opaque_zero;  // always 0 (used by the WGSL kernels; unused here)
    float4 sun_center_radius;  // w = 0: no sun
    float4 sun_radiance;       // w = 1: next-event estimation on
    u32 ao_extra;              // fractional AO count: pixels whose pattern is below it trace one more
    u32 pad0;                  // always 0: pad0..pad2 fill the row to 16 bytes
    u32 pad1;
    u32 pad2;
};

// mirrors prism_core::ray::Hit (two 16-byte rows; the traversals carry the
// first four fields and the instance, and the kernels store the rows whole;
// cell and face name a heightfield's column and side, 0 for triangles and
// spheres: a walk carries them in u and v, heightfield.cuh, and store_hit
// writes them here)
struct __align__(16) Hit {
    float t;
    float u;
    float v;
    u32 prim;
    u32 instance;
    u32 cell;
    u32 face;
    u32 reserved;
};

// mirrors prism_core::point_grid::PointGridCell
struct __align__(16) PointGridCell {
    u32 count;  // candidates in `slots`, or PRISM_POINT_GRID_FULL
    u32 slots[7];
};

// The scene buffers as one kernel parameter. Host twin: `SceneArgs` in src/kernels.rs.
struct SceneView {
    const BvhNode* nodes;
    const Primitive* prims;
    const u32* slot_materials;
    const GpuMaterial* materials;
    u32 node_count;
    u32 prim_count;
    u32 material_count;
    // 1: `nodes` holds the tree's eight octant copies (node_count nodes each;
    // see traverse.cuh), the first being the tree itself; the host then
    // launches the render kernels named *_octants.
    u32 octants;
    // The candidate lists around the scene's light (see point_grid.cuh), or
    // null, and the square of the longest shadow segment they answer for.
    const PointGridCell* light_grid;
    float light_reach_squared;
    // The uniform grid (see cell_grid.cuh): how many large primitives it keeps
    // apart, its cell offsets (null when the scene has no grid), the cells'
    // slot lists, the large primitives' slots, its lower corner, a cell's size
    // and its reciprocal, and the cells along each axis.
    u32 grid_large_count;
    const u32* grid_offsets;
    const u32* grid_slots;
    const u32* grid_large;
    float grid_lo[3];
    float grid_cell[3];
    float grid_inv_cell[3];
    u32 grid_res[3];
    // For scenes of spheres only: each listed sphere's centre and radius, in
    // the order of grid_slots and of grid_large (or null), so that a walk
    // reads a sphere with one load and its slot only when it is hit.
    const float4* grid_balls;
    const float4* grid_large_balls;
    // For a pinhole frame of a scene of at most 64 primitives: the camera
    // candidates of each tile of PRISM_CAMERA_MASK_TILE pixels, row by row,
    // found before the frame (see camera_bounds.cuh); null otherwise, and
    // camera rays walk the tree. Then the tiles per row and the rows of tiles.
    const u64* camera_masks;
    u32 camera_mask_tiles[2];
    // A two-level scene's instance records and the tree over them (whose
    // leaves hold one instance index each); null for a flat scene. `nodes`
    // and `prims` then hold every geometry's tree and slots (see
    // two_level.cuh).
    const GpuInstance* instances;
    const BvhNode* top_nodes;
    u32 instance_count;
    u32 top_node_count;
    // The heightfields' records (prism_core::Accel::heightfields) and every
    // heightfield's pyramid of maximum heights (Accel::heightfield_heights),
    // with their counts; one zero element each when the scene has none.
    const GpuHeightfield* heightfields;
    const float* heights;
    u32 heightfield_count;
    u32 height_count;
};

// offsetof in a constant expression: NVRTC has no <cstddef>, and its front end
// (EDG) offers __INTADDR__ for the classic null-pointer form.
#ifdef __CUDACC_RTC__
#define PRISM_OFFSETOF(T, f) __INTADDR__(&((T*)0)->f)
#else
#include <cstddef>
#define PRISM_OFFSETOF(T, f) offsetof(T, f)
#endif

#define PRISM_CHECK_SIZE(T) \
    static_assert(sizeof(T) == PRISM_LAYOUT_##T##_SIZE, "sizeof(" #T ") differs from prism_core::gpu")
#define PRISM_CHECK_FIELD(T, f) \
    static_assert(PRISM_OFFSETOF(T, f) == PRISM_LAYOUT_##T##_##f, #T "." #f " offset differs from prism_core::gpu")

PRISM_CHECK_SIZE(BvhNode);
PRISM_CHECK_FIELD(BvhNode, left_lo);
PRISM_CHECK_FIELD(BvhNode, left_hi);
PRISM_CHECK_FIELD(BvhNode, right_lo);
PRISM_CHECK_FIELD(BvhNode, right_hi);

PRISM_CHECK_SIZE(Primitive);
PRISM_CHECK_FIELD(Primitive, a);
PRISM_CHECK_FIELD(Primitive, b);
PRISM_CHECK_FIELD(Primitive, c);

PRISM_CHECK_SIZE(GpuHeightfield);
PRISM_CHECK_FIELD(GpuHeightfield, dims);
PRISM_CHECK_FIELD(GpuHeightfield, scale);
PRISM_CHECK_FIELD(GpuHeightfield, level_offset);

PRISM_CHECK_SIZE(GpuMaterial);
PRISM_CHECK_FIELD(GpuMaterial, albedo_fuzz);
PRISM_CHECK_FIELD(GpuMaterial, emission_ior);
PRISM_CHECK_FIELD(GpuMaterial, lobe_weights);

PRISM_CHECK_SIZE(GpuRay);
PRISM_CHECK_FIELD(GpuRay, origin_tmin);
PRISM_CHECK_FIELD(GpuRay, dir_tmax);
PRISM_CHECK_FIELD(GpuRay, mask);

PRISM_CHECK_SIZE(GpuInstance);
PRISM_CHECK_FIELD(GpuInstance, world_to_object);
PRISM_CHECK_FIELD(GpuInstance, info);

PRISM_CHECK_SIZE(GpuCamera);
PRISM_CHECK_FIELD(GpuCamera, origin_lens);
PRISM_CHECK_FIELD(GpuCamera, lower_left);
PRISM_CHECK_FIELD(GpuCamera, horizontal);
PRISM_CHECK_FIELD(GpuCamera, vertical);
PRISM_CHECK_FIELD(GpuCamera, u);
PRISM_CHECK_FIELD(GpuCamera, v);

PRISM_CHECK_SIZE(RenderParams);
PRISM_CHECK_FIELD(RenderParams, camera);
PRISM_CHECK_FIELD(RenderParams, sky_horizon);
PRISM_CHECK_FIELD(RenderParams, sky_zenith);
PRISM_CHECK_FIELD(RenderParams, light_position);
PRISM_CHECK_FIELD(RenderParams, light_color);
PRISM_CHECK_FIELD(RenderParams, width);
PRISM_CHECK_FIELD(RenderParams, height);
PRISM_CHECK_FIELD(RenderParams, spp);
PRISM_CHECK_FIELD(RenderParams, max_depth);
PRISM_CHECK_FIELD(RenderParams, seed);
PRISM_CHECK_FIELD(RenderParams, integrator);
PRISM_CHECK_FIELD(RenderParams, ao_samples);
PRISM_CHECK_FIELD(RenderParams, ao_shadows);
PRISM_CHECK_FIELD(RenderParams, ao_distance);
PRISM_CHECK_FIELD(RenderParams, rr_depth);
PRISM_CHECK_FIELD(RenderParams, prim_count);
PRISM_CHECK_FIELD(RenderParams, opaque_zero);
PRISM_CHECK_FIELD(RenderParams, sun_center_radius);
PRISM_CHECK_FIELD(RenderParams, sun_radiance);
PRISM_CHECK_FIELD(RenderParams, ao_extra);
PRISM_CHECK_FIELD(RenderParams, pad0);
PRISM_CHECK_FIELD(RenderParams, pad1);
PRISM_CHECK_FIELD(RenderParams, pad2);

PRISM_CHECK_SIZE(Hit);
PRISM_CHECK_FIELD(Hit, t);
PRISM_CHECK_FIELD(Hit, u);
PRISM_CHECK_FIELD(Hit, v);
PRISM_CHECK_FIELD(Hit, prim);
PRISM_CHECK_FIELD(Hit, instance);
PRISM_CHECK_FIELD(Hit, cell);
PRISM_CHECK_FIELD(Hit, face);

PRISM_CHECK_SIZE(SceneView);
PRISM_CHECK_FIELD(SceneView, nodes);
PRISM_CHECK_FIELD(SceneView, prims);
PRISM_CHECK_FIELD(SceneView, slot_materials);
PRISM_CHECK_FIELD(SceneView, materials);
PRISM_CHECK_FIELD(SceneView, node_count);
PRISM_CHECK_FIELD(SceneView, prim_count);
PRISM_CHECK_FIELD(SceneView, material_count);
PRISM_CHECK_FIELD(SceneView, light_grid);
PRISM_CHECK_FIELD(SceneView, light_reach_squared);
PRISM_CHECK_FIELD(SceneView, grid_large_count);
PRISM_CHECK_FIELD(SceneView, grid_offsets);
PRISM_CHECK_FIELD(SceneView, grid_slots);
PRISM_CHECK_FIELD(SceneView, grid_large);
PRISM_CHECK_FIELD(SceneView, grid_lo);
PRISM_CHECK_FIELD(SceneView, grid_cell);
PRISM_CHECK_FIELD(SceneView, grid_inv_cell);
PRISM_CHECK_FIELD(SceneView, grid_res);
PRISM_CHECK_FIELD(SceneView, grid_balls);
PRISM_CHECK_FIELD(SceneView, grid_large_balls);
PRISM_CHECK_FIELD(SceneView, camera_masks);
PRISM_CHECK_FIELD(SceneView, camera_mask_tiles);
PRISM_CHECK_FIELD(SceneView, instances);
PRISM_CHECK_FIELD(SceneView, top_nodes);
PRISM_CHECK_FIELD(SceneView, instance_count);
PRISM_CHECK_FIELD(SceneView, top_node_count);
PRISM_CHECK_FIELD(SceneView, heightfields);
PRISM_CHECK_FIELD(SceneView, heights);
PRISM_CHECK_FIELD(SceneView, heightfield_count);
PRISM_CHECK_FIELD(SceneView, height_count);

PRISM_CHECK_SIZE(PointGridCell);
PRISM_CHECK_FIELD(PointGridCell, count);
PRISM_CHECK_FIELD(PointGridCell, slots);

// ---- three-component vectors with glam's semantics ----
// glam's Vec3 operations, written out so that each keeps glam's operation order.
struct V3 {
    float x, y, z;
};

__device__ __forceinline__ V3 v3(float x, float y, float z) { return V3{x, y, z}; }
__device__ __forceinline__ V3 v3s(float s) { return V3{s, s, s}; }
__device__ __forceinline__ V3 xyz(float4 a) { return V3{a.x, a.y, a.z}; }
__device__ __forceinline__ V3 operator+(V3 a, V3 b) { return V3{a.x + b.x, a.y + b.y, a.z + b.z}; }
__device__ __forceinline__ V3 operator-(V3 a, V3 b) { return V3{a.x - b.x, a.y - b.y, a.z - b.z}; }
__device__ __forceinline__ V3 operator-(V3 a) { return V3{-a.x, -a.y, -a.z}; }
__device__ __forceinline__ V3 operator*(V3 a, V3 b) { return V3{a.x * b.x, a.y * b.y, a.z * b.z}; }
__device__ __forceinline__ V3 operator*(V3 a, float s) { return V3{a.x * s, a.y * s, a.z * s}; }
__device__ __forceinline__ V3 operator*(float s, V3 a) { return V3{s * a.x, s * a.y, s * a.z}; }
__device__ __forceinline__ V3& operator+=(V3& a, V3 b) { a = a + b; return a; }
__device__ __forceinline__ V3& operator*=(V3& a, V3 b) { a = a * b; return a; }
__device__ __forceinline__ V3& operator*=(V3& a, float s) { a = a * s; return a; }

// glam Vec3::dot: (x * rx) + (y * ry) + (z * rz)
__device__ __forceinline__ float dot(V3 a, V3 b) { return (a.x * b.x) + (a.y * b.y) + (a.z * b.z); }
// glam Vec3::dot with every product rounded on its own (no FMA contraction):
// core's exact bits, for the intersection tests.
__device__ __forceinline__ float dot_rn(V3 a, V3 b) {
    return (__fmul_rn(a.x, b.x) + __fmul_rn(a.y, b.y)) + __fmul_rn(a.z, b.z);
}
// glam Vec3::cross
__device__ __forceinline__ V3 cross(V3 a, V3 b) {
    return V3{a.y * b.z - b.y * a.z, a.z * b.x - b.z * a.x, a.x * b.y - b.x * a.y};
}
__device__ __forceinline__ float length_squared(V3 a) { return dot(a, a); }
// glam Vec3::length: sqrt(dot(self, self))
__device__ __forceinline__ float length(V3 a) { return sqrtf(dot(a, a)); }
// glam Vec3::normalize: self * (1 / length)
__device__ __forceinline__ V3 normalize(V3 a) { return a * (1.0f / length(a)); }
// glam Vec3::normalize_or: rcp = 1 / length; finite and > 0 ? self * rcp : fallback
__device__ __forceinline__ V3 normalize_or(V3 a, V3 fallback) {
    const float rcp = 1.0f / length(a);
    return (isfinite(rcp) && rcp > 0.0f) ? a * rcp : fallback;
}
__device__ __forceinline__ V3 normalize_or_zero(V3 a) { return normalize_or(a, v3s(0.0f)); }
// glam Vec3::abs
__device__ __forceinline__ V3 vabs(V3 a) { return V3{fabsf(a.x), fabsf(a.y), fabsf(a.z)}; }
// glam Vec3::max (component-wise; the callers' values are never NaN)
__device__ __forceinline__ V3 vmax(V3 a, V3 b) { return V3{fmaxf(a.x, b.x), fmaxf(a.y, b.y), fmaxf(a.z, b.z)}; }
// glam Vec3::max_element: max(max(x, y), z) with `a > b ? a : b`
__device__ __forceinline__ float max_element(V3 a) {
    const float m = a.x > a.y ? a.x : a.y;
    return m > a.z ? m : a.z;
}

// mirrors prism_core::ray::Ray: origin + t * dir for t in (tmin, tmax).
struct Ray {
    V3 origin;
    float tmin;
    V3 dir;
    float tmax;
};

// mirrors prism_core::ray::Ray::segment
__device__ __forceinline__ Ray ray_segment(V3 origin, V3 dir, float tmin, float tmax) {
    return Ray{origin, tmin, dir, tmax};
}

// mirrors prism_core::ray::Ray::at
__device__ __forceinline__ V3 ray_at(const Ray& r, float t) { return r.origin + t * r.dir; }
