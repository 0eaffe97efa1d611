//! A frame large enough that each render workgroup takes several tiles, one
//! below the other (`TILES_PER_GROUP`, entry.wgsl), gives core's pixels: a
//! tile or row placed wrongly would show as pixels of another place.

mod common;

use common::{open_backend, render_scene};
use prism_core::integrator::render_pixel;
use prism_core::{Accel, Backend, Image, Integrator, NoProgress, PixelFormat, RenderSettings};
use prism_wgpu::WgpuOptions;

#[test]
fn workgroups_of_several_tiles_give_cores_pixels() {
    // One submission for the whole frame, also on a software adapter (whose
    // default submissions are a few rows).
    let Some(mut gpu) = open_backend(WgpuOptions {
        samples_per_submit: Some(1 << 26),
        ..Default::default()
    }) else {
        return;
    };
    let (scene, camera) = render_scene();
    gpu.set_scene(&scene).expect("set_scene");
    let accel = Accel::build(&scene).expect("accel");
    // 2,304 x 1,025 sRGB pixels: one dispatch (9.4 MB, below the banding
    // threshold) of 144 x 129 one-tile workgroups of 16 x 8, 18,576 in all,
    // which the host gives two tiles each; the last row of tiles is part-filled.
    let (w, h) = (2304, 1025);
    let settings = RenderSettings {
        integrator: Integrator::Whitted,
        spp: 1,
        max_depth: 2,
        ..Default::default()
    };
    let mut image = Image::new(w, h, PixelFormat::Srgba8).expect("image");
    gpu.render(&camera, &settings, &mut image, &NoProgress)
        .expect("render");
    let params = settings.params(&accel, &camera, w, h).expect("params");
    // Every 7th pixel of every 3rd row, and every pixel of the last two rows.
    let mut checked = 0usize;
    let mut off = 0usize;
    for y in 0..h {
        let every = if y + 2 >= h { 1 } else { 7 };
        if y % 3 != 0 && y + 2 < h {
            continue;
        }
        for x in (0..w).step_by(every) {
            let (c, _) = render_pixel(&accel, &params, x, y);
            let want = prism_core::image::encode_srgba8(c);
            let got = image.rgba8()[(y * w + x) as usize];
            let close = want.iter().zip(got).all(|(a, b)| a.abs_diff(b) <= 1);
            checked += 1;
            off += usize::from(!close);
        }
    }
    eprintln!("{checked} pixels checked, {off} off core's by more than one level");
    assert!(
        off * 200 <= checked,
        "{off} of {checked} pixels off core's by more than one level"
    );
}
