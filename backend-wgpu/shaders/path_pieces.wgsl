// Path render kernels with persistent subgroups and lanes that share a pixel's
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
