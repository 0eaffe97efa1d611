//! Height maps from PNG: every accepted pixel format gives its heights, every
//! refused file an `Error::HeightMap` naming it with the reason, and the
//! shared city map has the size and heights its README gives.

use image::{ImageBuffer, Luma, LumaA, Rgb, Rgba};
use prism::height_map::{HeightMap, MAX_CELLS, decode_png, load_png};
use prism::{Error, HeightMapProblem};
use std::io::Cursor;
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// `image` encoded as PNG bytes.
fn encode<P: image::PixelWithColorType>(image: &ImageBuffer<P, Vec<P::Subpixel>>) -> Vec<u8>
where
    [P::Subpixel]: image::EncodableLayout,
{
    let mut bytes = Vec::new();
    image
        .write_to(&mut Cursor::new(&mut bytes), image::ImageFormat::Png)
        .expect("encoding a PNG in memory");
    bytes
}

fn decode(bytes: &[u8]) -> Result<HeightMap, Error> {
    decode_png(Cursor::new(bytes), "mem.png", MAX_CELLS)
}

/// The problem of a refused file, checking that the error names `path`.
fn problem(result: Result<HeightMap, Error>, path: &str) -> HeightMapProblem {
    match result {
        Err(Error::HeightMap { path: p, problem }) => {
            assert_eq!(p, path);
            let message = Error::HeightMap {
                path: p,
                problem: problem.clone(),
            }
            .to_string();
            assert!(message.contains(path), "{message}");
            problem
        }
        other => panic!("expected a height-map error naming {path}, got {other:?}"),
    }
}

#[test]
fn grey_images_are_their_heights() {
    let g8 = ImageBuffer::from_fn(3, 2, |x, z| Luma([(x + 3 * z) as u8 * 40]));
    let map = decode(&encode(&g8)).expect("grey 8");
    assert_eq!((map.width, map.depth, map.bits), (3, 2, 8));
    assert_eq!(map.heights, [0, 40, 80, 120, 160, 200]);
    assert_eq!(map.height(2, 1), Some(200));
    assert_eq!(map.max_height(), 200);

    let g16 = ImageBuffer::from_fn(2, 2, |x, z| {
        Luma([[0u16, 1000, 40_000, 65_535][(x + 2 * z) as usize]])
    });
    let map = decode(&encode(&g16)).expect("grey 16");
    assert_eq!(map.bits, 16);
    assert_eq!(map.heights, [0, 1000, 40_000, 65_535]);

    let ga = ImageBuffer::from_fn(2, 1, |x, _| LumaA([7 + x as u8, 255 * x as u8]));
    assert_eq!(
        decode(&encode(&ga)).expect("grey and alpha").heights,
        [7, 8]
    );
    let ga16 = ImageBuffer::from_fn(1, 1, |_, _| LumaA([300u16, 0]));
    assert_eq!(
        decode(&encode(&ga16)).expect("grey and alpha 16").heights,
        [300]
    );
}

#[test]
fn colour_images_take_the_weighted_grey() {
    let rgb = ImageBuffer::from_fn(3, 1, |x, _| {
        Rgb([[50u8, 50, 50], [255, 0, 0], [10, 200, 30]][x as usize])
    });
    let map = decode(&encode(&rgb)).expect("RGB 8");
    let w = |r: u32, g: u32, b: u32| ((77 * r + 150 * g + 29 * b) >> 8) as u16;
    assert_eq!(map.heights, [50, w(255, 0, 0), w(10, 200, 30)]);
    assert_eq!(map.bits, 8);

    let rgba16 = ImageBuffer::from_fn(2, 1, |x, _| {
        Rgba([[65_535u16, 65_535, 65_535, 0], [1000, 2000, 3000, 65_535]][x as usize])
    });
    let map = decode(&encode(&rgba16)).expect("RGBA 16");
    assert_eq!(map.heights, [65_535, w(1000, 2000, 3000)]);
    assert_eq!(map.bits, 16);
}

#[test]
fn interlaced_images_are_put_back_in_place() {
    let map = load_png(data("interlaced_grey8_5x3.png")).expect("interlaced");
    assert_eq!((map.width, map.depth), (5, 3));
    for z in 0..3 {
        for x in 0..5 {
            assert_eq!(map.height(x, z), Some((x + 10 * z) as u16), "({x}, {z})");
        }
    }
    let plain = load_png(data("grey8_4x2.png")).expect("grey8_4x2");
    assert_eq!(plain.heights, (0..8).collect::<Vec<u16>>());
}

#[test]
fn unreadable_and_undecodable_files_are_refused() {
    let missing = data("no-such-map.png");
    let path = missing.display().to_string();
    assert!(matches!(
        problem(load_png(&missing), &path),
        HeightMapProblem::Unreadable { .. }
    ));
    assert!(matches!(
        problem(decode(b"GIF89a, not a PNG"), "mem.png"),
        HeightMapProblem::Decode { .. }
    ));
    let truncated = data("truncated.png");
    assert!(matches!(
        problem(load_png(&truncated), &truncated.display().to_string()),
        HeightMapProblem::Decode { .. }
    ));
    // Cut anywhere, a valid map is refused, never read short.
    let good = std::fs::read(data("grey8_4x2.png")).expect("grey8_4x2.png");
    for len in 0..good.len() - 12 {
        let r = decode(&good[..len]);
        assert!(
            matches!(r, Err(Error::HeightMap { .. })),
            "cut at {len}: {r:?}"
        );
    }
}

#[test]
fn empty_and_huge_headers_are_refused_before_decoding() {
    let zero = data("zero_width.png");
    assert_eq!(
        problem(load_png(&zero), &zero.display().to_string()),
        HeightMapProblem::Empty { width: 0, depth: 4 }
    );
    // 10^12 cells over a few bytes: refused from the header alone.
    let huge = data("huge_header.png");
    assert_eq!(
        problem(load_png(&huge), &huge.display().to_string()),
        HeightMapProblem::TooLarge {
            width: 1_000_000,
            depth: 1_000_000,
            cells: 1_000_000_000_000,
            limit: MAX_CELLS,
        }
    );
    // A caller's lower limit holds too; a higher one is held to MAX_CELLS.
    let g = encode(&ImageBuffer::from_fn(4, 4, |_, _| Luma([1u8])));
    assert!(matches!(
        problem(decode_png(Cursor::new(&g), "g.png", 15), "g.png"),
        HeightMapProblem::TooLarge {
            cells: 16,
            limit: 15,
            ..
        }
    ));
    assert!(decode_png(Cursor::new(&g), "g.png", 16).is_ok());
    assert!(matches!(
        problem(
            decode_png(
                Cursor::new(&std::fs::read(&huge).expect("huge")),
                "h.png",
                u64::MAX
            ),
            "h.png"
        ),
        HeightMapProblem::TooLarge {
            limit: MAX_CELLS,
            ..
        }
    ));
}

#[test]
fn palette_and_low_bit_depth_images_are_refused() {
    let encode_raw = |color: png::ColorType, depth: png::BitDepth, palette: bool, data: &[u8]| {
        let mut bytes = Vec::new();
        {
            let mut e = png::Encoder::new(&mut bytes, 2, 1);
            e.set_color(color);
            e.set_depth(depth);
            if palette {
                e.set_palette(vec![0u8, 0, 0, 255, 255, 255]);
            }
            let mut w = e.write_header().expect("header");
            w.write_image_data(data).expect("data");
        }
        bytes
    };
    let indexed = encode_raw(png::ColorType::Indexed, png::BitDepth::Eight, true, &[0, 1]);
    match problem(decode(&indexed), "mem.png") {
        HeightMapProblem::NotGrey { found } => assert!(found.contains("palette"), "{found}"),
        p => panic!("{p:?}"),
    }
    let grey4 = encode_raw(
        png::ColorType::Grayscale,
        png::BitDepth::Four,
        false,
        &[0x1f],
    );
    match problem(decode(&grey4), "mem.png") {
        HeightMapProblem::NotGrey { found } => assert_eq!(found, "4-bit grey"),
        p => panic!("{p:?}"),
    }
}

/// `shared/scenes/heightfield/city512.png` as its README describes it.
#[test]
fn city512_is_the_described_city() {
    let dir = prism::conformance::default_scenes_dir();
    let path = dir.join("heightfield/city512.png");
    if !path.exists() {
        assert!(
            !prism::conformance::scenes_required(),
            "PRISM_REQUIRE_SCENES=1 but {} is absent",
            path.display()
        );
        eprintln!("SKIPPED: {} is absent", path.display());
        return;
    }
    let map = load_png(&path).expect("city512.png");
    assert_eq!((map.width, map.depth, map.bits), (512, 512, 8));
    assert_eq!(map.heights.len(), 512 * 512);
    assert_eq!(map.max_height(), 125);
    let raised = map.heights.iter().filter(|&&h| h > 0).count();
    let share = raised as f64 / map.heights.len() as f64;
    assert!(
        (0.605..0.615).contains(&share),
        "{raised} raised columns ({share})"
    );
}
