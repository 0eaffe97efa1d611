// Bindings and compute entry points. Host side: backend-wgpu/src/lib.rs.
//
// group(0): the scene, uploaded once by set_scene, the frame's parameters, and
// the sRGB encoding table.
// group(1): one call's work: which rows or rays, the ray input, the output.

@group(0) @binding(0) var<uniform> params: RenderParams;
@group(0) @binding(1) var<storage, read> nodes: array<BvhNode>;
@group(0) @binding(2) var<storage, read> prims: array<Primitive>;
@group(0) @binding(3) var<storage, read> slot_materials: array<u32>;
@group(0) @binding(4) var<storage, read> materials: array<GpuMaterial>;
// prism_core::image::Srgb8Table: (step bits, base) per slot, read by image.wgsl.
@group(0) @binding(5) var<storage, read> srgb8_table: array<vec2<u32>>;

// Where a two-level scene's parts lie in `nodes` (two_level.wgsl); zero for
// a flat scene.
struct Levels {
    // The first instance record: the geometries' trees end here.
    instance_base: u32,
    // Instance records (prism_core::Accel::instances().len()).
    instance_count: u32,
    // Root of the tree over the instances.
    top_root: u32,
    // One past that tree's last node.
    top_end: u32,
}

@group(0) @binding(6) var<uniform> levels: Levels;

// A pinhole frame's cones and bounding spheres for its tiles' candidate masks
// (camera_masks.wgsl), written by the host before each frame whose render
// kernels have CAMERA_MASKS; a uniform, since the storage buffers are at the
// count an adapter may stop at (8), and 2 KiB fit any uniform binding.
struct FrameCones {
    // Cones (at most 64), which bounce masks to find (LIST_REFLECTIONS,
    // LIST_SHADOWS), 0, 0.
    info: vec4<u32>,
    // The tiles' half angle in radians, rounded up (REFLECTION_MAX_ANGLE when
    // the frame has no bounce masks), 0, 0, 0.
    angle: vec4<f32>,
    // Per slot: the unit axis from the eye and the least cosine
    // (prism_core::camera_bounds::camera_cones).
    cones: array<vec4<f32>, 64>,
    // Per slot: the bounding sphere, centre and radius
    // (prism_core::camera_bounds::bounding_balls).
    balls: array<vec4<f32>, 64>,
}

@group(0) @binding(7) var<uniform> frame_cones: FrameCones;

// The part of a frame or batch one dispatch covers.
struct Chunk {
    // Render: first image row of the chunk. Batches: first ray of the chunk.
    first: u32,
    // Render: rows in the chunk. Batches: rays in the chunk.
    count: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(1) @binding(0) var<uniform> chunk: Chunk;
@group(1) @binding(1) var<storage, read> rays_in: array<GpuRay>;
// The same binding seen by the render kernels with CAMERA_MASKS: the frame's
// tile masks (camera_masks.wgsl), two 16-byte rows a tile, as
// camera_masks_main wrote them (the render kernels trace no caller's rays).
@group(1) @binding(1) var<storage, read> tile_masks_in: array<vec4<u32>>;
// The output, seen as 16-byte records (linear pixels, hits) by some entry
// points and as 4-byte words (sRGB pixels, occlusion flags) by others; an
// entry point uses one view only.
@group(1) @binding(2) var<storage, read_write> out_quads: array<vec4<u32>>;
@group(1) @binding(2) var<storage, read_write> out_words: array<u32>;
// Rays traced by a render: RAY_TALLY_SLOTS 64-bit counts, each a [low word,
// high word] pair, which the host zeroes before a dispatch and sums after it.
// Workgroups spread their additions over the slots: atomics of every
// workgroup on one address wait for each other. The refill kernels use word 0
// as their work counter (refill.wgsl).
@group(1) @binding(3) var<storage, read_write> ray_count: array<atomic<u32>>;

// prism_core::Integrator of the render pipelines (0 path, 1 whitted, 2 ao).
override INTEGRATOR: u32 = 0u;
// Render workgroup: TILE_X x TILE_Y pixels (WgpuOptions::render_tile).
override TILE_X: u32 = 8u;
override TILE_Y: u32 = 8u;
// Tiles a render workgroup renders, one below the other, a pixel of each in
// turn on every invocation: an invocation's fixed costs (its indices, the
// ray tally's barrier and atomics) are shared by that many pixels, and a
// frame has that many times fewer workgroups. The host picks it per frame
// (pipelines.rs, render_tiles; the CUDA backend's render_tiles_per_block).
override TILES_PER_GROUP: u32 = 1u;
// Batch workgroup: BATCH_SIZE rays (WgpuOptions::batch_workgroup).
override BATCH_SIZE: u32 = 64u;
// Slots of the ray tally, a power of two (lib.rs, RAY_TALLY_SLOTS).
override RAY_TALLY_SLOTS: u32;

// Rays counted in this workgroup, as a 64-bit count.
var<workgroup> wg_rays_lo: atomic<u32>;
var<workgroup> wg_rays_hi: atomic<u32>;

// Add `n` to a 64-bit count kept as two atomic words (no 64-bit integers in
// WGSL). The sum is the same whatever order the additions happen in.
fn add_rays_workgroup(n: u32) {
    let old = atomicAdd(&wg_rays_lo, n);
    if old + n < old {
        atomicAdd(&wg_rays_hi, 1u);
    }
}

// Every invocation of a render workgroup calls this once (uniform control
// flow): the workgroup's rays go to its slot of the tally with one atomic pair.
fn count_rays(n: u32, local_index: u32, group: vec3<u32>, groups: vec3<u32>) {
    add_rays_workgroup(n);
    workgroupBarrier();
    if local_index == 0u {
        let lo = atomicLoad(&wg_rays_lo);
        let hi = atomicLoad(&wg_rays_hi);
        let slot = ((group.y * groups.x + group.x) & (RAY_TALLY_SLOTS - 1u)) * 2u;
        let old = atomicAdd(&ray_count[slot], lo);
        var carry = 0u;
        if old + lo < old {
            carry = 1u;
        }
        if hi + carry != 0u {
            atomicAdd(&ray_count[slot + 1u], hi + carry);
        }
    }
}

// The tiles of CAMERA_MASK_TILE pixels across and down the frame.
fn mask_tiles() -> vec2<u32> {
    return (vec2<u32>(params.width, params.height) + vec2<u32>(CAMERA_MASK_TILE - 1u)) / CAMERA_MASK_TILE;
}

// The candidate masks of pixel (x, y)'s tile (camera_masks.wgsl; pixels past
// the image's edge take the edge's tiles, and are not rendered); without
// CAMERA_MASKS none (its rays walk the tree).
fn pixel_tile_masks(x: u32, y: u32) -> TileMasks {
    if CAMERA_MASKS == 1u {
        let tiles = mask_tiles();
        let tile = min(y / CAMERA_MASK_TILE, tiles.y - 1u) * tiles.x + min(x / CAMERA_MASK_TILE, tiles.x - 1u);
        let a = tile_masks_in[2u * tile];
        let b = tile_masks_in[2u * tile + 1u];
        return TileMasks(a.xy, a.zw, b.xy);
    }
    return tile_masks_walk();
}

// The candidate masks of every tile of CAMERA_MASK_TILE pixels of the frame,
// one invocation a tile (in rows of BATCH_SIZE-wide workgroups), into two
// 16-byte rows of the output a tile: camera and reflection candidates, then
// shadow candidates and two zero words. Dispatched before a frame's render
// kernels where they have CAMERA_MASKS (camera_masks.wgsl).
@compute @workgroup_size(BATCH_SIZE)
fn camera_masks_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let tiles = mask_tiles();
    let i = batch_index(gid, groups);
    if i >= tiles.x * tiles.y {
        return;
    }
    let m = find_tile_masks((i % tiles.x) * CAMERA_MASK_TILE, (i / tiles.x) * CAMERA_MASK_TILE);
    out_quads[2u * i] = vec4<u32>(m.camera, m.reflection);
    out_quads[2u * i + 1u] = vec4<u32>(m.shadow, 0u, 0u);
}

// A pixel of each of TILES_PER_GROUP tiles per invocation; writes linear RGBA
// f32 (alpha 1).
@compute @workgroup_size(TILE_X, TILE_Y)
fn render_linear(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_id) local_id: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    var rays = 0u;
    for (var i = 0u; i < TILES_PER_GROUP; i++) {
        // The pixel's row in the chunk: tile i of the workgroup's.
        let row = (group.y * TILES_PER_GROUP + i) * TILE_Y + local_id.y;
        if gid.x < params.width && row < chunk.count {
            let y = chunk.first + row;
            let r = render_pixel(gid.x, y, pixel_tile_masks(gid.x, y));
            out_quads[row * params.width + gid.x] = bitcast<vec4<u32>>(vec4<f32>(r.color, 1.0));
            rays += r.rays;
        }
    }
    count_rays(rays, lid, group, groups);
}

// A pixel of each of TILES_PER_GROUP tiles per invocation; writes sRGB 8-bit
// RGBA packed in a u32.
@compute @workgroup_size(TILE_X, TILE_Y)
fn render_srgb8(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_id) local_id: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    var rays = 0u;
    for (var i = 0u; i < TILES_PER_GROUP; i++) {
        // The pixel's row in the chunk: tile i of the workgroup's.
        let row = (group.y * TILES_PER_GROUP + i) * TILE_Y + local_id.y;
        if gid.x < params.width && row < chunk.count {
            let y = chunk.first + row;
            let r = render_pixel(gid.x, y, pixel_tile_masks(gid.x, y));
            out_words[row * params.width + gid.x] = encode_srgba8(r.color);
            rays += r.rays;
        }
    }
    count_rays(rays, lid, group, groups);
}

// The ray of a batch at index `i` of the chunk.
fn batch_ray(i: u32) -> Ray {
    let r = rays_in[i];
    return Ray(r.origin_tmin.xyz, r.origin_tmin.w, r.dir_tmax.xyz, r.dir_tmax.w, r.mask.x);
}

// The flat index of an invocation in a 2D grid of BATCH_SIZE-wide workgroups.
fn batch_index(gid: vec3<u32>, groups: vec3<u32>) -> u32 {
    return gid.y * groups.x * BATCH_SIZE + gid.x;
}

// mirrors prism_core::traverse::Accel::intersect_slot
//
// A flat scene is one implicit instance of mask FLAT_MASK: a ray that shares
// no bit with it hits nothing.
fn accel_intersect_slot(ray: Ray) -> Hit {
    if TWO_LEVEL == 1u {
        return two_level_closest_hit(ray);
    }
    if (ray.mask & FLAT_MASK) == 0u {
        return hit_miss();
    }
    return closest_hit(ray);
}

// mirrors prism_core::traverse::Accel::occluded
fn accel_occluded(ray: Ray) -> bool {
    if TWO_LEVEL == 1u {
        return two_level_any_hit(ray);
    }
    return (ray.mask & FLAT_MASK) != 0u && any_hit(ray);
}

// Write the closest hit of ray `i` of the chunk as prism_core::Hit (two
// 16-byte rows), its slot in `prims` turned into the primitive id
// (prism_core::Accel::intersect). A heightfield's hit carries its face and
// cell in u and v (heightfield.wgsl): they go to the second row, and u = v = 0
// as in core.
fn store_hit(i: u32, closest: Hit) {
    var hit = closest;
    var cell = 0u;
    var face = 0u;
    if hit_is_hit(hit) {
        let p = prims[hit.prim];
        hit.prim = bitcast<u32>(p.a.w);
        if (SCENE_KINDS & SCENE_HEIGHTFIELDS) != 0u && bitcast<u32>(p.b.w) == KIND_HEIGHTFIELD {
            face = bitcast<u32>(hit.u);
            cell = bitcast<u32>(hit.v);
            hit.u = 0.0;
            hit.v = 0.0;
        }
    }
    out_quads[2u * i] = vec4<u32>(bitcast<u32>(hit.t), bitcast<u32>(hit.u), bitcast<u32>(hit.v), hit.prim);
    // The second row: instance, cell and face (0 but for a heightfield), 0.
    out_quads[2u * i + 1u] = vec4<u32>(hit.instance, cell, face, 0u);
}

// Closest hit of each ray of the chunk, as prism_core::Hit.
@compute @workgroup_size(BATCH_SIZE)
fn intersect_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = batch_index(gid, groups);
    if i >= chunk.count {
        return;
    }
    store_hit(i, accel_intersect_slot(batch_ray(i)));
}

// Whether anything lies on each ray of the chunk (1) or not (0).
@compute @workgroup_size(BATCH_SIZE)
fn occluded_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = batch_index(gid, groups);
    if i >= chunk.count {
        return;
    }
    out_words[i] = select(0u, 1u, accel_occluded(batch_ray(i)));
}
