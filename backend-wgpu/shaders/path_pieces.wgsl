// Path and AO render kernels with persistent subgroups and lanes that share a pixel's
// samples, appended to the module with the lane-refill kernels (their subgroup
// operations need wgpu::Features::SUBGROUP). Same pixels as render_linear and
// render_srgb8, bit for bit. The CUDA backend's render_rows_persistent
// (prism.cu) schedules its path kernels the same way.
//
// A launch holds a GPU's worth of PATH_THREADS-wide workgroups, each of whose
// subgroups takes the next piece of the band from a counter until none is
// left: a subgroup that finishes early takes more work instead of idling
// beside a long one. A piece is `size / lanes` pixels of one tile of
// PATH_TILE_PIXELS (PATH_TILE_W wide), row by row, tile by tile, top rows
// first; lane j of a pixel traces samples j, j + lanes, ... (render_sample),
// and after each step every lane of the pixel adds the step's colours in
// sample order, so the sum is render_pixel's, added in the same order. In the
// launch's bulk a pixel takes PATH_LANES lanes where they divide spp (else
// one): its samples start together and end closer together than those of
// different pixels, and a piece takes half the steps. The last
// PATH_TAIL_64THS sixty-fourths of the tiles give a pixel as many lanes as its
// samples need (at most a subgroup), so the launch's last pieces are short.
//
// The counter is the word after the ray tally's slots (entry.wgsl), cleared
// with the tally before each band (and before each chunk a caller records).
// The loop's exit is subgroup-uniform (the piece comes from a broadcast), so
// every subgroup operation runs with the whole subgroup.

// Workgroup of the persistent path kernels: a multiple of every subgroup size
// they run with (at most 128, see WgpuBackend::path_pieces).
const PATH_THREADS: u32 = 256u;
// Lanes that share a pixel's samples in the launch's bulk (CUDA: PRISM_PATH_LANES).
const PATH_LANES: u32 = 2u;
// Sixty-fourths of the tiles, last in the order, whose pixels take as many
// lanes as their samples need (CUDA: PRISM_PATH_TAIL_64THS).
const PATH_TAIL_64THS: u32 = 4u;
// Tiles of 128 pixels, 8 wide (CUDA: PRISM_PATH_TILE_W).
const PATH_TILE_W: u32 = 8u;
const PATH_TILE_PIXELS: u32 = 128u;
const PATH_TILE_H: u32 = PATH_TILE_PIXELS / PATH_TILE_W;

// The smallest power of two >= n, at most `size`.
fn lanes_for(n: u32, size: u32) -> u32 {
    var lanes = 1u;
    loop {
        if lanes >= n || lanes >= size {
            break;
        }
        lanes = lanes << 1u;
    }
    return lanes;
}

// A band's pieces (chunk.first, chunk.count rows): how many there are and how
// a piece number maps to its pixels; the same in every lane.
struct PathPieces {
    tiles_x: u32,
    bulk_tiles: u32,
    bulk_lanes: u32,
    tail_lanes: u32,
    bulk_per_tile: u32,
    tail_per_tile: u32,
    bulk_pieces: u32,
    pieces: u32,
}

// The pieces of the band for subgroups of `size` lanes.
fn path_pieces(size: u32) -> PathPieces {
    let spp = params.spp;
    let bulk_lanes = select(1u, PATH_LANES, spp % PATH_LANES == 0u);
    let tail_lanes = lanes_for(spp, size);
    let tiles_x = (params.width + PATH_TILE_W - 1u) / PATH_TILE_W;
    let tiles = tiles_x * ((chunk.count + PATH_TILE_H - 1u) / PATH_TILE_H);
    // floor(tiles * PATH_TAIL_64THS / 64) without overflow.
    let tail_tiles = (tiles / 64u) * PATH_TAIL_64THS + ((tiles % 64u) * PATH_TAIL_64THS) / 64u;
    let bulk_tiles = tiles - tail_tiles;
    // Pieces a tile: its pixels over the pixels a piece holds (size / lanes).
    let bulk_per_tile = PATH_TILE_PIXELS * bulk_lanes / size;
    let tail_per_tile = PATH_TILE_PIXELS * tail_lanes / size;
    let bulk_pieces = bulk_tiles * bulk_per_tile;
    return PathPieces(
        tiles_x,
        bulk_tiles,
        bulk_lanes,
        tail_lanes,
        bulk_per_tile,
        tail_per_tile,
        bulk_pieces,
        bulk_pieces + tail_tiles * tail_per_tile,
    );
}

// The subgroup's next piece (the same in every lane): its number, at least
// `pieces` once the band is done.
fn claim_piece(lane: u32) -> u32 {
    var piece = 0u;
    if lane == ballot_first(subgroupBallot(true)) {
        piece = atomicAdd(&ray_count[2u * RAY_TALLY_SLOTS], 1u);
    }
    return subgroupBroadcastFirst(piece);
}

// A pixel of a piece, as its first lane stores it.
struct PiecePixel {
    store: bool,
    // Its index in the band's output.
    at: u32,
    color: vec3<f32>,
}

// Piece `piece` (below b.pieces) of the band, by the whole subgroup: each
// lane traces its samples of its pixel, adding its rays to `rays`; the
// pixel's first lane returns the pixel's colour to store.
fn path_piece(b: PathPieces, piece: u32, lane: u32, size: u32, rays: ptr<function, u32>) -> PiecePixel {
    let spp = params.spp;
    let bulk = piece < b.bulk_pieces;
    let lanes = select(b.tail_lanes, b.bulk_lanes, bulk);
    let per_tile = select(b.tail_per_tile, b.bulk_per_tile, bulk);
    let p = select(piece - b.bulk_pieces, piece, bulk);
    let tile = select(b.bulk_tiles, 0u, bulk) + p / per_tile;
    // Which of its pixel's lanes this one is, and the pixel's first lane.
    let share = lane & (lanes - 1u);
    let first_lane = lane - share;
    // This lane's pixel: the tile's `thread`-th, row by row.
    let thread = (p % per_tile) * (size / lanes) + lane / lanes;
    let x = (tile % b.tiles_x) * PATH_TILE_W + thread % PATH_TILE_W;
    let row = (tile / b.tiles_x) * PATH_TILE_H + thread / PATH_TILE_W;
    let inside = x < params.width && row < chunk.count;
    let steps = (spp + lanes - 1u) / lanes;
    var sum = vec3<f32>(0.0);
    for (var k = 0u; k < steps; k++) {
        let sample_index = k * lanes + share;
        var c = vec3<f32>(0.0);
        if inside && sample_index < spp {
            let r = render_sample(x, chunk.first + row, sample_index, tile_masks_walk());
            c = r.color;
            *rays += r.rays;
        }
        for (var i = 0u; i < lanes; i++) {
            let ci = subgroupShuffle(c, first_lane + i);
            if k * lanes + i < spp {
                sum += ci;
            }
        }
    }
    return PiecePixel(inside && share == 0u, row * params.width + x, sum * (1.0 / f32(spp)));
}

// The path integrator's pixels of the band, linear RGBA f32 (alpha 1), by
// persistent subgroups (render_linear's pixels).
@compute @workgroup_size(PATH_THREADS)
fn render_path_pieces_linear(
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) size: u32,
    @builtin(local_invocation_index) local: u32,
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let b = path_pieces(size);
    var rays = 0u;
    loop {
        let piece = claim_piece(lane);
        if piece >= b.pieces {
            break;
        }
        let px = path_piece(b, piece, lane, size, &rays);
        if px.store {
            out_quads[px.at] = bitcast<vec4<u32>>(vec4<f32>(px.color, 1.0));
        }
    }
    count_rays(rays, local, group, groups);
}

// The same, sRGB 8-bit RGBA packed in a u32 (render_srgb8's pixels). The loop
// is written out in both: an entry point may see the output binding through
// one view only (entry.wgsl), so the store cannot move into a shared function.
@compute @workgroup_size(PATH_THREADS)
fn render_path_pieces_srgb8(
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) size: u32,
    @builtin(local_invocation_index) local: u32,
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let b = path_pieces(size);
    var rays = 0u;
    loop {
        let piece = claim_piece(lane);
        if piece >= b.pieces {
            break;
        }
        let px = path_piece(b, piece, lane, size, &rays);
        if px.store {
            out_words[px.at] = encode_srgba8(px.color);
        }
    }
    count_rays(rays, local, group, groups);
}

// AO render kernels by persistent subgroups that share their pixels' AO rays
// (the CUDA backend's render_rows_ao). A tile workgroup lasts its slowest
// invocation's camera ray and AO rays in turn, so a frame ended with its
// heaviest workgroups running alone and its time moved from frame to frame on
// identical work. Here a subgroup takes `size` pixels of a 16 x 8 tile (the AO
// count's block, ao_rays_at) from the counter, traces their camera rays one a
// lane, then spreads the AO rays of the pixels it hit over all its lanes,
// pixel by pixel; the last AO_TAIL_64THS sixty-fourths of the tiles go in
// pieces of AO_TAIL_PIXELS pixels, so the launch ends within a few AO rays of
// its last piece's start. Same pixels as render_linear and render_srgb8, bit
// for bit: AO ray i of a pixel jumps the pixel's generator ahead by 2i numbers
// (pcg_advance), the open rays are counted, and the shadow ray and colour are
// the pixel's own lane's. Camera and shadow rays walk the tree (no tile masks).
const AO_TILE_W: u32 = 16u;
const AO_TILE_H: u32 = 8u;
const AO_TAIL_64THS: u32 = 4u;
const AO_TAIL_PIXELS: u32 = 8u;

// `rng` advanced by `steps` numbers at once: the generator's affine step
// (state * a + c, wrapping) composed `steps` times by squaring.
// mirrors prism_core::rng::Pcg::advance
fn pcg_advance(rng: ptr<function, Pcg>, steps: u32) {
    var mult = 747796405u;
    var plus = 2891336453u;
    var acc_mult = 1u;
    var acc_plus = 0u;
    var n = steps;
    loop {
        if n == 0u {
            break;
        }
        if (n & 1u) != 0u {
            acc_mult *= mult;
            acc_plus = acc_plus * mult + plus;
        }
        plus = (mult + 1u) * plus;
        mult *= mult;
        n = n >> 1u;
    }
    (*rng).state = acc_mult * (*rng).state + acc_plus;
}

// Set bits of `ballot` among lanes [lo, hi).
fn ballot_count_range(ballot: vec4<u32>, lo: u32, hi: u32) -> u32 {
    var count = 0u;
    for (var w = 0u; w < 4u; w++) {
        let a = clamp(lo, 32u * w, 32u * w + 32u) - 32u * w;
        let c = clamp(hi, 32u * w, 32u * w + 32u) - 32u * w;
        if c > a {
            let width = c - a;
            let bits = select((1u << width) - 1u, 0xffffffffu, width >= 32u);
            count += countOneBits(ballot[w] & (bits << a));
        }
    }
    return count;
}

// A band's AO pieces for subgroups of `size` lanes; the same in every lane.
struct AoPieces {
    tiles_x: u32,
    bulk_tiles: u32,
    bulk_size: u32,
    tail_size: u32,
    bulk_pieces: u32,
    pieces: u32,
}

fn ao_pieces(size: u32) -> AoPieces {
    let tiles_x = (params.width + AO_TILE_W - 1u) / AO_TILE_W;
    let tiles = tiles_x * ((chunk.count + AO_TILE_H - 1u) / AO_TILE_H);
    let tail_tiles = (tiles / 64u) * AO_TAIL_64THS + ((tiles % 64u) * AO_TAIL_64THS) / 64u;
    let bulk_tiles = tiles - tail_tiles;
    // Subgroup sizes are powers of two up to 128 (WgpuBackend::path_pieces),
    // so both divide a tile's 128 pixels.
    let bulk_size = min(size, AO_TILE_W * AO_TILE_H);
    let tail_size = min(AO_TAIL_PIXELS, bulk_size);
    let bulk_pieces = bulk_tiles * (AO_TILE_W * AO_TILE_H / bulk_size);
    return AoPieces(
        tiles_x,
        bulk_tiles,
        bulk_size,
        tail_size,
        bulk_pieces,
        bulk_pieces + tail_tiles * (AO_TILE_W * AO_TILE_H / tail_size),
    );
}

// Piece `piece` (below b.pieces) of the band, by the whole subgroup; this
// lane's pixel's colour to store, if it has one.
fn ao_piece(b: AoPieces, piece: u32, lane: u32, size: u32, rays: ptr<function, u32>) -> PiecePixel {
    let bulk = piece < b.bulk_pieces;
    let psize = select(b.tail_size, b.bulk_size, bulk);
    let per_tile = AO_TILE_W * AO_TILE_H / psize;
    let p = select(piece - b.bulk_pieces, piece, bulk);
    let tile = select(b.bulk_tiles, 0u, bulk) + p / per_tile;
    let t = (p % per_tile) * psize + lane;
    let x = (tile % b.tiles_x) * AO_TILE_W + t % AO_TILE_W;
    let row = (tile / b.tiles_x) * AO_TILE_H + t / AO_TILE_W;
    let y = chunk.first + row;
    let inside = lane < psize && x < params.width && row < chunk.count;
    let masks = tile_masks_walk();
    var sum = vec3<f32>(0.0);
    for (var sample_index = 0u; sample_index < params.spp; sample_index++) {
        // The pixel's camera ray and surface (trace_ao's head).
        var rng = Pcg(0u);
        var ray: Ray;
        var hit: Hit;
        hit.prim = NO_PRIM;
        var surf: ShadingPoint;
        var n = vec3<f32>(0.0);
        var spawn = 0.0;
        var samples = 0u;
        if inside {
            rng = pcg_for_path(y * params.width + x, sample_index, params.seed);
            let jx0 = pcg_next_f32(&rng);
            let jy0 = pcg_next_f32(&rng);
            let l1 = pcg_next_f32(&rng);
            let l2 = pcg_next_f32(&rng);
            let jitter = params.spp > 1u;
            let s = (f32(x) + select(0.5, jx0, jitter)) / f32(params.width);
            let tt = 1.0 - (f32(y) + select(0.5, jy0, jitter)) / f32(params.height);
            ray = camera_ray(params.camera, s, tt, l1, l2);
            hit = render_or_listed_hit(ray, 0u, masks);
            *rays += 1u;
            if hit_is_hit(hit) {
                surf = shading_point(ray, hit);
                n = select(-surf.n, surf.n, dot(surf.n, ray.dir) < 0.0);
                spawn = spawn_tmin(surf.p, ray.origin);
                samples = ao_rays_at(x, y);
            }
        }
        // This lane's pixel's AO rays are jobs [first, end) of the subgroup's.
        let end = subgroupInclusiveAdd(samples);
        let first = end - samples;
        let jobs = subgroupShuffle(end, size - 1u);
        var open = 0u;
        for (var base = 0u; base < jobs; base += size) {
            let j = base + lane;
            // The lane whose pixel job j belongs to: the first with end > j.
            var owner = 0u;
            for (var step = size >> 1u; step > 0u; step = step >> 1u) {
                let e = subgroupShuffle(end, owner + step - 1u);
                owner += select(0u, step, e <= j);
            }
            let owner_first = subgroupShuffle(first, owner);
            let op = subgroupShuffle(surf.p, owner);
            let on = subgroupShuffle(n, owner);
            let osize = subgroupShuffle(surf.size, owner);
            let ospawn = subgroupShuffle(spawn, owner);
            var orng = Pcg(subgroupShuffle(rng.state, owner));
            var clear = false;
            if j < jobs {
                pcg_advance(&orng, 2u * (j - owner_first));
                let u1 = pcg_next_f32(&orng);
                let u2 = pcg_next_f32(&orng);
                let d = cosine_hemisphere(on, u1, u2);
                let tmin = ospawn + surface_margin(osize, dot(d, on));
                clear = !accel_occluded(ray_segment(op, d, tmin, params.ao_distance));
                *rays += 1u;
            }
            let cleared = subgroupBallot(clear);
            let lo = max(first, base);
            let hi = min(end, base + size);
            if lo < hi {
                open += ballot_count_range(cleared, lo - base, hi - base);
            }
        }
        var c = vec3<f32>(0.0);
        if inside {
            if !hit_is_hit(hit) {
                c = sky_color(ray.dir);
            } else {
                let keep = ao_shadow_keep(surf, n, spawn, masks.shadow);
                *rays += select(0u, 1u, params.ao_shadows != 0u);
                let ao = f32(open) / f32(samples);
                c = surf.material.albedo_fuzz.xyz * (ao * keep) + surf.material.emission_ior.xyz;
            }
        }
        sum += c;
    }
    return PiecePixel(inside, row * params.width + x, sum * (1.0 / f32(params.spp)));
}

// The AO integrator's pixels of the band, linear RGBA f32 (alpha 1), by
// persistent subgroups (render_linear's pixels).
@compute @workgroup_size(PATH_THREADS)
fn render_ao_pieces_linear(
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) size: u32,
    @builtin(local_invocation_index) local: u32,
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let b = ao_pieces(size);
    var rays = 0u;
    loop {
        let piece = claim_piece(lane);
        if piece >= b.pieces {
            break;
        }
        let px = ao_piece(b, piece, lane, size, &rays);
        if px.store {
            out_quads[px.at] = bitcast<vec4<u32>>(vec4<f32>(px.color, 1.0));
        }
    }
    count_rays(rays, local, group, groups);
}

// The same, sRGB 8-bit RGBA packed in a u32 (render_srgb8's pixels).
@compute @workgroup_size(PATH_THREADS)
fn render_ao_pieces_srgb8(
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) size: u32,
    @builtin(local_invocation_index) local: u32,
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let b = ao_pieces(size);
    var rays = 0u;
    loop {
        let piece = claim_piece(lane);
        if piece >= b.pieces {
            break;
        }
        let px = ao_piece(b, piece, lane, size, &rays);
        if px.store {
            out_words[px.at] = encode_srgba8(px.color);
        }
    }
    count_rays(rays, local, group, groups);
}
