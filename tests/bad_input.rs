//! One test per row of the "Bad input" table of README.md: each bad input gets
//! the typed error that names the offending item, and afterwards the backend
//! still works (the next valid call succeeds).
//!
//! This binary's allocator refuses any single allocation over [`HOST_LIMIT`],
//! standing in for a host with less memory than a huge image needs, so that the
//! "image too large for memory" row is tested without touching gigabytes.

use prism::glam::Vec3;
use prism::mesh::{load_mesh, parse_obj, parse_ply};
use prism::{
    Backend, BackendChoice, Camera, Error, Hit, Image, Material, NoProgress, PixelFormat, Ray,
    RenderSettings, Scene,
};
use std::alloc::{GlobalAlloc, Layout, System};

/// Largest single allocation this test binary's "host" grants.
const HOST_LIMIT: usize = 1 << 30;

/// [`System`], refusing allocations over [`HOST_LIMIT`] the way an exhausted
/// host does (a null pointer, which `try_reserve` reports as an error).
struct SmallHost;

// SAFETY: forwards to `System` unchanged, or returns null, which the
// `GlobalAlloc` contract allows for any request.
unsafe impl GlobalAlloc for SmallHost {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > HOST_LIMIT {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's layout contract is passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > HOST_LIMIT {
            return std::ptr::null_mut();
        }
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > HOST_LIMIT {
            return std::ptr::null_mut();
        }
        // SAFETY: as for `dealloc`; `new_size` is the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static HOST: SmallHost = SmallHost;

// ---------------------------------------------------------------------------
// Helpers

/// The CPU backend through the facade (ignoring `PRISM_BACKEND`).
fn cpu() -> Box<dyn Backend + Send> {
    prism::open_with_env(BackendChoice::Cpu, None)
        .expect("the CPU backend always opens")
        .backend
}

/// A valid scene: a unit sphere at the origin (primitive 0) and a triangle at
/// `z = -5` (primitive 1).
fn good_scene() -> Scene {
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
    s.add_sphere(Vec3::ZERO, 1.0, m);
    s.add_triangle(
        Vec3::new(-1.0, -1.0, -5.0),
        Vec3::new(1.0, -1.0, -5.0),
        Vec3::new(0.0, 1.0, -5.0),
        m,
    );
    s
}

/// A ray down -z from `z = 5`: hits the sphere at `t = 4`.
fn good_ray() -> Ray {
    Ray::new(Vec3::new(0.0, 0.0, 5.0), Vec3::NEG_Z)
}

fn camera() -> Camera {
    Camera::look_at(Vec3::new(0.0, 0.0, 5.0), Vec3::ZERO, Vec3::Y, 40.0)
}

fn settings() -> RenderSettings {
    RenderSettings {
        spp: 2,
        max_depth: 3,
        ..Default::default()
    }
}

/// The ray of [`good_ray`] still hits the sphere on `backend` (its scene is
/// [`good_scene`]).
fn assert_traces_good_scene(backend: &mut dyn Backend, after: &str) {
    let mut hits = [Hit::MISS];
    backend
        .intersect(&[good_ray()], &mut hits)
        .unwrap_or_else(|e| panic!("after {after}: intersect failed: {e}"));
    assert_eq!(hits[0].prim, 0, "after {after}: {:?}", hits[0]);
    assert!(
        (hits[0].t - 4.0).abs() < 1e-5,
        "after {after}: {:?}",
        hits[0]
    );
}

/// The backend still works after an error: it keeps tracing its current scene,
/// and a new valid scene, a batch and a render all succeed.
fn assert_usable(backend: &mut dyn Backend, after: &str) {
    backend
        .set_scene(&good_scene())
        .unwrap_or_else(|e| panic!("after {after}: set_scene failed: {e}"));
    assert_traces_good_scene(backend, after);
    let mut occluded = [false];
    backend
        .occluded(&[good_ray()], &mut occluded)
        .unwrap_or_else(|e| panic!("after {after}: occluded failed: {e}"));
    assert!(occluded[0], "after {after}");
    let mut image = Image::new(4, 3, PixelFormat::Srgba8).expect("a 4x3 image");
    let stats = backend
        .render(&camera(), &settings(), &mut image, &NoProgress)
        .unwrap_or_else(|e| panic!("after {after}: render failed: {e}"));
    assert!(stats.rays >= 4 * 3 * 2, "after {after}: {stats:?}");
}

/// `set_scene` of `scene` fails with `expected`, and the backend keeps its
/// previous scene and stays usable.
fn assert_scene_refused(scene: &Scene, expected: Error) {
    let mut backend = cpu();
    backend.set_scene(&good_scene()).expect("the good scene");
    let got = backend.set_scene(scene).expect_err("a bad scene");
    assert_eq!(format!("{got:?}"), format!("{expected:?}"));
    assert!(!got.to_string().is_empty());
    assert_traces_good_scene(backend.as_mut(), "a refused scene");
    assert_usable(backend.as_mut(), "a refused scene");
}

/// `render` with `settings` on a backend holding the good scene fails with an
/// error naming `field`, and the backend stays usable.
fn assert_setting_refused(settings: RenderSettings, field: &str) {
    let mut backend = cpu();
    backend.set_scene(&good_scene()).expect("the good scene");
    let mut image = Image::new(4, 3, PixelFormat::Srgba8).expect("a 4x3 image");
    match backend.render(&camera(), &settings, &mut image, &NoProgress) {
        Err(Error::Setting { field: f, .. }) if f == field => {}
        other => panic!("{settings:?}: expected Error::Setting for {field}, got {other:?}"),
    }
    assert_usable(backend.as_mut(), "refused settings");
}

/// A file under the test's temporary directory holding `bytes`.
fn temp_file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("prism-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("temp file");
    path
}

// ---------------------------------------------------------------------------
// Geometry

#[test]
fn nan_or_infinite_mesh_vertex_names_mesh_and_vertex() {
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut scene = good_scene();
        let positions = [Vec3::ZERO, Vec3::X, Vec3::new(0.0, bad, 0.0)];
        let before = scene.primitive_count();
        let err = scene
            .add_mesh(&positions, &[[0, 1, 2]], 0)
            .expect_err("a non-finite vertex");
        match err {
            Error::VertexNotFinite {
                mesh: 0,
                triangle: 0,
                vertex: 2,
                position,
            } => assert_eq!(position[1].to_bits(), bad.to_bits()),
            other => panic!("{bad}: {other:?}"),
        }
        assert_eq!(
            scene.primitive_count(),
            before,
            "a refused mesh adds nothing"
        );
        // The scene is still valid and traces.
        let mut backend = cpu();
        backend
            .set_scene(&scene)
            .expect("the scene without the mesh");
        assert_usable(backend.as_mut(), "a refused mesh");
    }
}

#[test]
fn nan_or_infinite_triangle_vertex_names_primitive_and_corner() {
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut scene = good_scene();
        scene.add_triangle(Vec3::ZERO, Vec3::X, Vec3::new(bad, 0.0, 0.0), 0);
        assert_scene_refused(
            &scene,
            Error::TriangleNotFinite {
                prim: 2,
                vertex: 2,
                position: [bad, 0.0, 0.0],
            },
        );
    }
}

#[test]
fn nan_or_infinite_sphere_centre_names_primitive() {
    for bad in [f32::NAN, f32::INFINITY] {
        let mut scene = good_scene();
        scene.add_sphere(Vec3::new(1.0, bad, 0.0), 1.0, 0);
        assert_scene_refused(
            &scene,
            Error::SphereCenterNotFinite {
                prim: 2,
                center: [1.0, bad, 0.0],
            },
        );
    }
}

#[test]
fn negative_zero_or_nan_radius_names_primitive() {
    for radius in [-1.0, 0.0, f32::NAN, f32::INFINITY] {
        let mut scene = good_scene();
        scene.add_sphere(Vec3::ONE, radius, 0);
        assert_scene_refused(&scene, Error::SphereRadiusInvalid { prim: 2, radius });
    }
}

#[test]
fn vertex_index_out_of_range_names_mesh_triangle_and_index() {
    let mut scene = good_scene();
    scene
        .add_mesh(&[Vec3::ZERO, Vec3::X, Vec3::Y], &[[0, 1, 2]], 0)
        .expect("mesh 0 is fine");
    let err = scene
        .add_mesh(&[Vec3::ZERO, Vec3::X, Vec3::Y], &[[0, 1, 2], [2, 1, 3]], 0)
        .expect_err("index 3 of 3 vertices");
    assert_eq!(
        err,
        Error::IndexOutOfRange {
            mesh: 1,
            triangle: 1,
            index: 3,
            vertex_count: 3
        }
    );
    let mut backend = cpu();
    backend
        .set_scene(&scene)
        .expect("the scene without the bad mesh");
    assert_usable(backend.as_mut(), "an index out of range");
}

#[test]
fn vertex_index_out_of_range_in_a_mesh_file_is_refused() {
    // PLY: the loader checks indices itself and names the file, the face, the
    // index and the vertex count.
    let ply = b"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nelement face 2\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n3 0 1 7\n";
    assert_eq!(
        parse_ply(ply, "bad.ply"),
        Err(Error::Parse {
            path: "bad.ply".into(),
            line: None,
            message: "face 1: vertex index 7 out of range (3 vertices)".into(),
        })
    );
    // OBJ: tobj refuses the face; the error names the file.
    match parse_obj(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n", "bad.obj") {
        Err(Error::Parse { path, message, .. }) => {
            assert_eq!(path, "bad.obj");
            assert!(message.contains("out of bounds"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // A relative index reaching before the first vertex: refused by line.
    match parse_obj(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf -1 -2 -4\n", "rel.obj") {
        Err(Error::Parse {
            path,
            line: Some(4),
            message,
        }) => {
            assert_eq!(path, "rel.obj");
            assert!(message.contains("vertex index -4"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // An absolute index beyond `u32` (here `isize::MAX`): refused by line.
    match parse_obj(
        b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9223372036854775807\n",
        "big.obj",
    ) {
        Err(Error::Parse {
            path,
            line: Some(4),
            ..
        }) => assert_eq!(path, "big.obj"),
        other => panic!("{other:?}"),
    }
    // Through `load_mesh`, each file's error names its path.
    for (name, bytes) in [
        ("bad.ply", &ply[..]),
        ("bad.obj", b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n"),
    ] {
        let path = temp_file(name, bytes);
        match load_mesh(&path) {
            Err(Error::Parse { path: named, .. }) => {
                assert_eq!(named, path.display().to_string());
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    assert_usable(cpu().as_mut(), "a refused mesh file");
}

#[test]
fn empty_scene_is_refused() {
    assert_scene_refused(&Scene::new(), Error::EmptyScene);
}

#[test]
fn bad_heightfields_name_the_problem_and_the_cell() {
    use prism::Heightfield;
    assert_eq!(
        Heightfield::new(0, 4, 1.0, &[]),
        Err(Error::HeightfieldEmpty { width: 0, depth: 4 })
    );
    // The cell count is checked before any sample is read.
    assert_eq!(
        Heightfield::new(1 << 16, 1 << 15, 1.0, &[]),
        Err(Error::HeightfieldTooLarge {
            width: 1 << 16,
            depth: 1 << 15,
            limit: prism::heightfield::MAX_HEIGHTFIELD_CELLS,
        })
    );
    assert_eq!(
        Heightfield::new(3, 2, 1.0, &[1.0; 5]),
        Err(Error::HeightfieldSamples {
            width: 3,
            depth: 2,
            given: 5
        })
    );
    assert_eq!(
        Heightfield::new(3, 2, 1.0, &[1.0, 2.0, 0.0, 4.0, -0.5, 1.0]),
        Err(Error::HeightfieldHeightInvalid {
            x: 1,
            z: 1,
            height: -0.5
        })
    );
    assert!(matches!(
        Heightfield::new(2, 1, 1.0, &[f32::INFINITY, 1.0]),
        Err(Error::HeightfieldHeightInvalid { x: 0, z: 0, .. })
    ));
    for (got, field) in [
        (Heightfield::new(2, 1, 0.0, &[1.0; 2]), "cell_size"),
        (Heightfield::new(2, 1, f32::NAN, &[1.0; 2]), "cell_size"),
        (
            Heightfield::from_u16(2, 1, 1.0, &[1, 2], -1.0),
            "height_scale",
        ),
        (
            Heightfield::from_u8(2, 1, 1.0, &[1, 2], f32::INFINITY),
            "height_scale",
        ),
    ] {
        match got {
            Err(Error::HeightfieldParameterInvalid { field: f, .. }) if f == field => {}
            other => panic!("{field}: {other:?}"),
        }
    }
    // A heightfield's material is checked as any primitive's.
    let mut scene = good_scene();
    let field = Heightfield::new(2, 2, 1.0, &[1.0; 4]).expect("a valid heightfield");
    scene.add_heightfield(field, 7);
    assert_scene_refused(
        &scene,
        Error::MaterialOutOfRange {
            primitive: 2,
            material: 7,
            count: 1,
        },
    );
}

/// A scene holding a heightfield is taken by every backend (each walks it),
/// which answers as core does and stays usable.
#[test]
fn a_heightfield_scene_is_taken_by_every_backend() {
    let mut scene = good_scene();
    let field = prism::Heightfield::new(2, 2, 1.0, &[1.0, 0.0, 2.0, 3.0]).expect("valid");
    scene.add_heightfield(field, 0);
    let accel = prism::Accel::build(&scene).expect("a valid scene");
    let ray = prism::Ray::new(Vec3::new(1.5, 10.0, 1.5), Vec3::NEG_Y);
    for mut backend in every_backend() {
        let name = backend.info().name;
        backend
            .set_scene(&scene)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut hit = [prism::Hit::MISS];
        backend.intersect(&[ray], &mut hit).expect("intersect");
        assert_eq!(hit[0], accel.intersect(&ray), "{name}");
        assert_usable(backend.as_mut(), "a heightfield scene");
    }
}

#[test]
fn material_out_of_range_names_primitive_and_material() {
    let mut scene = good_scene();
    scene.add_sphere(Vec3::ONE, 1.0, 9);
    assert_scene_refused(
        &scene,
        Error::MaterialOutOfRange {
            primitive: 2,
            material: 9,
            count: 1,
        },
    );
}

#[test]
fn invalid_material_names_material_and_field() {
    let mut scene = good_scene();
    scene.add_material(Material::dielectric(f32::NAN));
    let mut backend = cpu();
    backend.set_scene(&good_scene()).expect("the good scene");
    match backend.set_scene(&scene) {
        Err(Error::MaterialInvalid {
            index: 1,
            field: "ior",
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    assert_traces_good_scene(backend.as_mut(), "an invalid material");
    assert_usable(backend.as_mut(), "an invalid material");
}

#[test]
fn invalid_sky_or_light_names_the_field() {
    type Spoil = fn(&mut Scene);
    let cases: [(&str, Spoil); 5] = [
        ("sky.horizon", |s| s.sky.horizon.y = f32::NAN),
        ("sky.zenith", |s| s.sky.zenith.x = -1.0),
        ("light.color", |s| s.light.color.z = f32::INFINITY),
        ("light.position", |s| s.light.position.x = f32::NAN),
        ("light.position", |s| s.light.position.y = f32::NEG_INFINITY),
    ];
    let mut backend = cpu();
    backend.set_scene(&good_scene()).expect("the good scene");
    for (name, spoil) in cases {
        let mut scene = good_scene();
        spoil(&mut scene);
        match backend.set_scene(&scene) {
            Err(Error::SceneLightInvalid { field, reason, .. }) => {
                assert_eq!(field, name);
                assert!(!reason.is_empty());
            }
            other => panic!("{name}: {other:?}"),
        }
        assert_traces_good_scene(backend.as_mut(), name);
    }
    assert_usable(backend.as_mut(), "an invalid sky or light");
}

#[test]
fn degenerate_triangle_is_refused_when_asked() {
    let mut scene = good_scene();
    scene.add_triangle(Vec3::ZERO, Vec3::X, Vec3::X * 2.0, 0);
    // Kept by default (never hit, ids stay stable) ...
    let mut backend = cpu();
    backend
        .set_scene(&scene)
        .expect("degenerate triangles are kept");
    // ... refused with its id when the scene asks.
    scene.reject_degenerate = true;
    assert_scene_refused(&scene, Error::DegenerateTriangle { prim: 2 });
}

// ---------------------------------------------------------------------------
// Rays

#[test]
fn invalid_ray_names_its_index() {
    let bad = [
        Ray::new(Vec3::new(f32::NAN, 0.0, 0.0), Vec3::X),
        Ray::new(Vec3::ZERO, Vec3::ZERO),
        Ray::new(Vec3::ZERO, Vec3::new(0.0, f32::INFINITY, 0.0)),
        Ray::segment(Vec3::ZERO, Vec3::X, 2.0, 1.0),
        Ray::segment(Vec3::ZERO, Vec3::X, f32::NAN, 1.0),
        Ray::segment(Vec3::ZERO, Vec3::NEG_ONE, f32::NEG_INFINITY, 1.0),
    ];
    let mut backend = cpu();
    backend.set_scene(&good_scene()).expect("the good scene");
    for ray in bad {
        let rays = [good_ray(), good_ray(), ray];
        let mut hits = [Hit::MISS; 3];
        match backend.intersect(&rays, &mut hits) {
            Err(Error::InvalidRay { index: 2, .. }) => {}
            other => panic!("{ray:?}: {other:?}"),
        }
        let mut occluded = [false; 3];
        match backend.occluded(&rays, &mut occluded) {
            Err(Error::InvalidRay { index: 2, .. }) => {}
            other => panic!("{ray:?}: {other:?}"),
        }
        assert_traces_good_scene(backend.as_mut(), "an invalid ray");
    }
    assert_usable(backend.as_mut(), "invalid rays");
}

#[test]
fn batch_length_mismatch_names_both_lengths() {
    let mut backend = cpu();
    backend.set_scene(&good_scene()).expect("the good scene");
    let mut hits = [Hit::MISS; 1];
    assert_eq!(
        backend
            .intersect(&[good_ray(), good_ray()], &mut hits)
            .unwrap_err(),
        Error::LengthMismatch {
            what: "intersect",
            inputs: 2,
            outputs: 1
        }
    );
    let mut occluded = [false; 3];
    assert_eq!(
        backend
            .occluded(&[good_ray(), good_ray()], &mut occluded)
            .unwrap_err(),
        Error::LengthMismatch {
            what: "occluded",
            inputs: 2,
            outputs: 3
        }
    );
    assert_usable(backend.as_mut(), "a length mismatch");
}

#[test]
fn calls_before_set_scene_are_refused() {
    let mut backend = cpu();
    let mut hits = [Hit::MISS];
    assert_eq!(
        backend.intersect(&[good_ray()], &mut hits).unwrap_err(),
        Error::NoScene
    );
    let mut occluded = [false];
    assert_eq!(
        backend.occluded(&[good_ray()], &mut occluded).unwrap_err(),
        Error::NoScene
    );
    let mut image = Image::new(2, 2, PixelFormat::Srgba8).expect("a 2x2 image");
    assert_eq!(
        backend
            .render(&camera(), &settings(), &mut image, &NoProgress)
            .unwrap_err(),
        Error::NoScene
    );
    assert_usable(backend.as_mut(), "a call without a scene");
}

// ---------------------------------------------------------------------------
// Images and settings

#[test]
fn zero_sized_image_names_the_size() {
    // A backend holding a scene while images are refused; it renders afterwards.
    let mut backend = cpu();
    backend.set_scene(&good_scene()).expect("the good scene");
    for (w, h) in [(0, 1), (1, 0), (0, 0)] {
        for format in [PixelFormat::Srgba8, PixelFormat::LinearF32] {
            match Image::new(w, h, format) {
                Err(Error::ImageSize { width, height, .. }) => assert_eq!((width, height), (w, h)),
                other => panic!("{w}x{h}: {other:?}"),
            }
        }
    }
    assert_traces_good_scene(backend.as_mut(), "a zero-sized image");
    assert_usable(backend.as_mut(), "a zero-sized image");
}

#[test]
fn oversized_image_dimensions_name_the_size() {
    let mut backend = cpu();
    backend.set_scene(&good_scene()).expect("the good scene");
    // Past the largest side (65536) or the largest pixel count (2^30).
    for (w, h) in [(65_537, 1), (1, u32::MAX), (65_536, 65_536)] {
        match Image::new(w, h, PixelFormat::Srgba8) {
            Err(Error::ImageSize { width, height, .. }) => assert_eq!((width, height), (w, h)),
            other => panic!("{w}x{h}: {other:?}"),
        }
    }
    assert_traces_good_scene(backend.as_mut(), "an oversized image");
    assert_usable(backend.as_mut(), "an oversized image");
}

#[test]
fn image_too_large_for_host_memory_is_refused_not_aborted() {
    // 32768 x 32768 is within the size limits, but 16 GiB of linear pixels (4
    // GiB of sRGB ones) do not fit this binary's host (HOST_LIMIT): the
    // allocation failure is an error, not an abort. The CPU backend renders
    // into the caller's image, so host memory is the CPU backend's memory.
    for format in [PixelFormat::LinearF32, PixelFormat::Srgba8] {
        match Image::new(32_768, 32_768, format) {
            Err(Error::ImageSize {
                width: 32_768,
                height: 32_768,
                reason,
            }) => assert!(reason.contains("memory"), "{reason}"),
            other => panic!("{format:?}: {other:?}"),
        }
    }
    assert_usable(cpu().as_mut(), "an image too large for memory");
}

#[cfg(unix)]
#[test]
fn scene_too_large_for_host_memory_is_refused_not_aborted() {
    // 2^24 + 2^20 spheres take about 500 MB as a scene; their BVH's node
    // array alone is 64 bytes a primitive, 1.14 GB, more than this binary's
    // host grants (HOST_LIMIT). The build reports it and keeps nothing, and
    // the backend keeps tracing the scene it had.
    let n = (1u32 << 24) + (1 << 20);
    let mut scene = Scene::new();
    let m = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
    for i in 0..n {
        let (x, z) = ((i & 4095) as f32, (i >> 12) as f32);
        scene.add_sphere(Vec3::new(x, 0.0, z), 0.25, m);
    }
    let nodes_refused = |got: Result<(), Error>, entry: &str| match got {
        Err(Error::HostOutOfMemory { what, bytes }) => {
            assert_eq!(what, "BVH nodes", "{entry}");
            assert_eq!(bytes, 64 * u64::from(n), "{entry}");
        }
        other => panic!("{entry}: {other:?}"),
    };
    let mut backend = cpu();
    backend.set_scene(&good_scene()).expect("the good scene");
    nodes_refused(backend.set_scene(&scene).map(drop), "set_scene");
    assert_traces_good_scene(backend.as_mut(), "a scene too large for host memory");
    nodes_refused(prism::Accel::build(&scene).map(drop), "Accel::build");
    drop(scene);
    let boxes = ZeroPages::new(n as usize * size_of::<prism::Aabb>());
    // SAFETY: all-zero bits are a valid `Aabb` (six `f32` zeros).
    let boxes: &[prism::Aabb] = unsafe { boxes.as_slice(n as usize) };
    nodes_refused(
        prism::bvh::Bvh::try_build(boxes).map(drop),
        "Bvh::try_build",
    );
    assert_usable(backend.as_mut(), "a scene too large for host memory");
}

#[cfg(unix)]
#[test]
fn mesh_too_large_for_host_memory_adds_nothing() {
    // 90 M triangles need 1.08 GB for each of the scene's three vertex
    // arrays, more than this binary's host grants (HOST_LIMIT). The input
    // itself lives in lazily mapped zero pages (all indices 0, one vertex).
    let n = 90_000_000;
    let triangles = ZeroPages::new(n * size_of::<[u32; 3]>());
    // SAFETY: all-zero bits are a valid `[u32; 3]`.
    let triangles: &[[u32; 3]] = unsafe { triangles.as_slice(n) };
    let mut scene = good_scene();
    let before = scene.primitive_count();
    match scene.add_mesh(&[Vec3::ZERO], triangles, 0) {
        Err(Error::HostOutOfMemory { what, bytes }) => {
            assert_eq!(what, "mesh vertices");
            assert_eq!(bytes, 36 * n as u64);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(scene.primitive_count(), before, "the mesh added nothing");
    let mut backend = cpu();
    backend.set_scene(&scene).expect("the scene as it was");
    assert_traces_good_scene(backend.as_mut(), "a mesh too large for host memory");
    assert_usable(backend.as_mut(), "a mesh too large for host memory");
}

#[cfg(unix)]
#[test]
fn more_primitives_than_the_limit_names_count_and_limit() {
    // One past MAX_PRIMITIVES, as zero pages that are never read: both entry
    // points refuse by length before touching an element.
    let limit = prism::scene::MAX_PRIMITIVES;
    let n = limit + 1;
    let triangles = ZeroPages::new(n * size_of::<[u32; 3]>());
    // SAFETY: all-zero bits are a valid `[u32; 3]`.
    let triangles: &[[u32; 3]] = unsafe { triangles.as_slice(n) };
    let mut scene = good_scene();
    assert_eq!(
        scene.add_mesh(&[], triangles, 0),
        Err(Error::TooManyPrimitives {
            count: 2 + n,
            limit
        })
    );
    assert_eq!(scene.primitive_count(), 2, "the mesh added nothing");
    let boxes = ZeroPages::new(n * size_of::<prism::Aabb>());
    // SAFETY: all-zero bits are a valid `Aabb` (six `f32` zeros).
    let boxes: &[prism::Aabb] = unsafe { boxes.as_slice(n) };
    match prism::bvh::Bvh::try_build(boxes) {
        Err(e) => assert_eq!(e, Error::TooManyPrimitives { count: n, limit }),
        Ok(_) => panic!("a tree over {n} boxes"),
    }
    let mut backend = cpu();
    backend.set_scene(&scene).expect("the scene as it was");
    assert_usable(backend.as_mut(), "too many primitives");
}

/// Zero-filled, read-only memory from an anonymous mapping that reserves
/// nothing (`MAP_NORESERVE`): pages cost memory only when touched, so an API
/// can be handed inputs longer than the host could ever hold.
#[cfg(unix)]
struct ZeroPages {
    ptr: *mut libc::c_void,
    bytes: usize,
}

#[cfg(unix)]
impl ZeroPages {
    fn new(bytes: usize) -> ZeroPages {
        // SAFETY: a fresh anonymous mapping at an address of the kernel's
        // choosing; no existing memory is affected.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        assert_ne!(ptr, libc::MAP_FAILED, "mapping {bytes} bytes of zero pages");
        ZeroPages { ptr, bytes }
    }

    /// The mapping as `len` values of `T`.
    ///
    /// # Safety
    /// All-zero bits must be a valid `T`.
    unsafe fn as_slice<T>(&self, len: usize) -> &[T] {
        assert!(len * size_of::<T>() <= self.bytes);
        assert_eq!(self.ptr as usize % align_of::<T>(), 0);
        // SAFETY: the mapping is page-aligned (checked against `T` above),
        // readable, zero-filled and at least `len * size_of::<T>()` bytes
        // (checked above, and far below `isize::MAX`); it lives as long as
        // `self`, which the returned borrow cannot outlive.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<T>(), len) }
    }
}

#[cfg(unix)]
impl Drop for ZeroPages {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `bytes` are exactly the mapping made in `new`,
        // and no slice of it outlives `self`.
        unsafe { libc::munmap(self.ptr, self.bytes) };
    }
}

#[test]
fn spp_zero_or_absurd_names_spp() {
    for spp in [0, RenderSettings::MAX_SPP + 1, u32::MAX] {
        assert_setting_refused(RenderSettings { spp, ..settings() }, "spp");
    }
}

#[test]
fn depth_zero_or_absurd_names_max_depth() {
    for max_depth in [0, RenderSettings::MAX_DEPTH + 1, u32::MAX] {
        assert_setting_refused(
            RenderSettings {
                max_depth,
                ..settings()
            },
            "max_depth",
        );
    }
}

#[test]
fn ao_samples_or_distance_out_of_range_names_the_field() {
    for ao_samples in [0, RenderSettings::MAX_AO_SAMPLES + 1] {
        assert_setting_refused(
            RenderSettings {
                ao_samples,
                ..settings()
            },
            "ao_samples",
        );
    }
    for ao_distance in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        assert_setting_refused(
            RenderSettings {
                ao_distance,
                ..settings()
            },
            "ao_distance",
        );
    }
}

#[test]
fn unusable_camera_says_why() {
    let good = camera();
    let cases = [
        Camera {
            look_from: Vec3::new(f32::NAN, 0.0, 0.0),
            ..good
        },
        Camera {
            look_at: good.look_from,
            ..good
        },
        Camera {
            up: Vec3::Z,
            ..good
        },
        Camera {
            vfov_degrees: 180.0,
            ..good
        },
        Camera {
            aperture: -1.0,
            ..good
        },
        Camera {
            focus_distance: 0.0,
            ..good
        },
        Camera {
            focus_distance: 1e20,
            ..good
        },
    ];
    let mut backend = cpu();
    backend.set_scene(&good_scene()).expect("the good scene");
    let mut image = Image::new(4, 3, PixelFormat::Srgba8).expect("a 4x3 image");
    for cam in cases {
        match backend.render(&cam, &settings(), &mut image, &NoProgress) {
            Err(Error::Camera { reason }) => assert!(!reason.is_empty()),
            other => panic!("{cam:?}: {other:?}"),
        }
    }
    assert_usable(backend.as_mut(), "an unusable camera");
}

// ---------------------------------------------------------------------------
// Files

#[test]
fn unreadable_mesh_file_names_the_path() {
    let missing = std::env::temp_dir().join("prism-no-such-dir/no-such-mesh.obj");
    match load_mesh(&missing) {
        Err(Error::Io { path, message }) => {
            assert_eq!(path, missing.display().to_string());
            assert!(!message.is_empty());
        }
        other => panic!("{other:?}"),
    }
    // A directory is not a readable file either.
    let dir = temp_file("placeholder", b"").with_file_name("dir.obj");
    std::fs::create_dir_all(&dir).expect("dir.obj");
    assert!(matches!(load_mesh(&dir), Err(Error::Io { .. })));
    // A device that never ends is refused before it is read.
    #[cfg(unix)]
    {
        let zero = temp_file("placeholder", b"").with_file_name("zero.obj");
        let _ = std::fs::remove_file(&zero);
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("zero.obj -> /dev/zero");
        match load_mesh(&zero) {
            Err(Error::Io { path, message }) => {
                assert_eq!(path, zero.display().to_string());
                assert!(message.contains("not a regular file"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
    // Neither OBJ nor PLY.
    let other = temp_file("mesh.stl", b"solid x\n");
    match load_mesh(&other) {
        Err(Error::Parse { path, .. }) => assert_eq!(path, other.display().to_string()),
        other => panic!("{other:?}"),
    }
    assert_usable(cpu().as_mut(), "an unreadable mesh file");
}

#[test]
fn truncated_mesh_file_names_the_path() {
    let obj = temp_file("truncated.obj", b"v 0 0 0\nv 1 0 0\nv 0 1");
    let ply = temp_file(
        "truncated.ply",
        b"ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
    );
    // A header promising more items than the file can hold.
    let huge = temp_file(
        "huge-count.ply",
        b"ply\nformat binary_little_endian 1.0\nelement vertex 4000000000\nproperty float x\nproperty float y\nproperty float z\nend_header\n\0\0\0\0",
    );
    let empty = temp_file("empty.obj", b"");
    for path in [&obj, &ply, &huge, &empty] {
        match load_mesh(path) {
            Err(Error::Parse {
                path: p, message, ..
            }) => {
                assert_eq!(&p, &path.display().to_string());
                assert!(!message.is_empty());
            }
            other => panic!("{}: {other:?}", path.display()),
        }
    }
    assert_usable(cpu().as_mut(), "a truncated mesh file");
}

#[test]
fn ply_items_take_memory_in_proportion_to_the_file() {
    // 2^24 items of an element without properties, and 16 MiB of padding that
    // the header's item count fits in: each item reads no bytes. Kept as
    // generic records (some 72 bytes each), they would need a single 1.2 GB
    // allocation, which this binary's host refuses by aborting; read as
    // records of no size, the file is a plain "no triangles" error.
    let count = 1usize << 24;
    let mut ply = format!("ply\nformat binary_little_endian 1.0\nelement e {count}\nend_header\n")
        .into_bytes();
    ply.resize(ply.len() + count, 0);
    match parse_ply(&ply, "padding.ply") {
        Err(Error::Parse { path, message, .. }) => {
            assert_eq!(path, "padding.ply");
            assert!(message.contains("no triangles"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // The same count of vertices, 12 bytes each in the file: 16 bytes each once
    // read, so the mesh is built without any allocation near the host's limit.
    let mut ply = format!(
        "ply\nformat binary_little_endian 1.0\nelement vertex {count}\nproperty float x\nproperty float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n"
    )
    .into_bytes();
    ply.resize(ply.len() + 12 * count, 0);
    ply.push(3);
    for i in [0i32, 1, 2] {
        ply.extend_from_slice(&i.to_le_bytes());
    }
    let mesh = parse_ply(&ply, "many-vertices.ply").expect("a valid PLY file");
    assert_eq!((mesh.positions.len(), mesh.triangles.len()), (count, 1));
    assert_usable(cpu().as_mut(), "a PLY file of many items");
}

// ---------------------------------------------------------------------------
// Backends

#[test]
fn gpu_backend_without_a_gpu_is_unavailable_and_cpu_still_opens() {
    // No override from the environment: the choice is what is tested.
    match prism::open_with_env(BackendChoice::Cuda, None) {
        Err(Error::BackendUnavailable { backend, reason }) => {
            assert_eq!(backend, "cuda");
            assert!(!reason.is_empty());
        }
        // On a machine with an NVIDIA GPU the row does not apply.
        Ok(opened) => assert_eq!(opened.backend.info().name, "cuda"),
        Err(other) => panic!("expected BackendUnavailable, got {other:?}"),
    }
    // wgpu may find a software adapter (lavapipe) when asked by name.
    match prism::open_with_env(BackendChoice::Wgpu, None) {
        Err(Error::BackendUnavailable { backend, .. }) => assert_eq!(backend, "wgpu"),
        Ok(opened) => assert_eq!(opened.backend.info().name, "wgpu"),
        Err(other) => panic!("expected BackendUnavailable, got {other:?}"),
    }
    assert_usable(cpu().as_mut(), "an unavailable GPU backend");
}

#[test]
fn unknown_backend_name_lists_the_known_ones() {
    // A backend already open while the name is refused keeps working.
    let mut backend = cpu();
    backend.set_scene(&good_scene()).expect("the good scene");
    match BackendChoice::from_name("vulkan") {
        Err(Error::UnknownName { what, name, known }) => {
            assert_eq!((what, name.as_str()), ("backend", "vulkan"));
            assert!(known.contains("cpu"));
        }
        other => panic!("{other:?}"),
    }
    // The same name through `open`, as `PRISM_BACKEND` would give it.
    match prism::open_with_env(BackendChoice::Cpu, Some("vulkan")) {
        Err(Error::UnknownName { what, name, .. }) => {
            assert_eq!((what, name.as_str()), ("backend", "vulkan"));
        }
        other => panic!("{other:?}"),
    }
    assert_traces_good_scene(backend.as_mut(), "an unknown backend name");
    assert_usable(backend.as_mut(), "an unknown backend name");
}

// ---------------------------------------------------------------------------
// Two-level scenes: instances and updates, through the `Backend` trait on
// every backend that opens here (the CPU always).

/// Every backend that opens on this machine, the CPU first.
fn every_backend() -> Vec<Box<dyn Backend + Send>> {
    let mut v = vec![cpu()];
    for choice in [BackendChoice::Cuda, BackendChoice::Wgpu] {
        if let Ok(opened) = prism::open_with_env(choice, None) {
            v.push(opened.backend);
        }
    }
    v
}

/// A two-level scene: geometry 0 a unit quad (one indexed mesh of 4
/// vertices in the plane `z = 0`), geometry 1 a unit sphere (not a mesh);
/// instance 0 the quad at `z = -5`, instance 1 the sphere at `(4, 0, -5)`,
/// instance 2 the quad at `(0, 4, -5)` seen only by rays with mask bit 1.
fn two_level_scene() -> Scene {
    use prism::glam::Affine3A;
    use prism::{Geometry, Instance};
    let mut s = Scene::new();
    let m = s.add_material(Material::lambertian(Vec3::splat(0.5)));
    let quad = Geometry::mesh(&quad_vertices(), &[[0, 1, 2], [0, 2, 3]], m).expect("a quad");
    let quad = s.add_geometry(quad);
    let mut ball = Geometry::new();
    ball.add_sphere(Vec3::ZERO, 1.0, m);
    let ball = s.add_geometry(ball);
    let at = |x, y| Affine3A::from_translation(Vec3::new(x, y, -5.0));
    s.add_instance(Instance::new(quad, at(0.0, 0.0)));
    s.add_instance(Instance::new(ball, at(4.0, 0.0)));
    s.add_instance(Instance::new(quad, at(0.0, 4.0)).with_mask(0b10));
    s
}

fn quad_vertices() -> Vec<Vec3> {
    vec![
        Vec3::new(-1.0, -1.0, 0.0),
        Vec3::new(1.0, -1.0, 0.0),
        Vec3::new(1.0, 1.0, 0.0),
        Vec3::new(-1.0, 1.0, 0.0),
    ]
}

/// Rays down -z at each instance (the last with every mask bit), and a miss.
fn two_level_rays() -> Vec<Ray> {
    let down = |x, y| Ray::new(Vec3::new(x, y, 5.0), Vec3::NEG_Z);
    vec![
        down(0.2, 0.1),
        down(4.0, 0.3),
        down(0.1, 4.2).with_mask(0b10),
        down(0.1, 4.2).with_mask(0b01),
        down(-9.0, -9.0),
    ]
}

/// Closest hits and any-hit answers of [`two_level_rays`], as text to
/// compare bit for bit.
fn two_level_answers(backend: &mut dyn Backend) -> String {
    let rays = two_level_rays();
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut occluded = vec![false; rays.len()];
    backend.intersect(&rays, &mut hits).expect("intersect");
    backend.occluded(&rays, &mut occluded).expect("occluded");
    format!("{hits:?} {occluded:?}")
}

/// The answers of [`two_level_scene`] as it is built: instance 0, 1 and 2 hit
/// by the first three rays, the masked-out quad and the miss not.
fn assert_two_level_answers(answers: &str) {
    assert!(answers.contains("instance: 0"), "{answers}");
    assert!(answers.contains("instance: 1"), "{answers}");
    assert!(answers.contains("instance: 2"), "{answers}");
    assert!(
        answers.ends_with("[true, true, true, false, false]"),
        "{answers}"
    );
}

/// On every backend holding [`two_level_scene`]: `update` is refused with an
/// error `check` accepts, the scene answers every ray as before (bit for
/// bit), a valid update then succeeds and the backend stays usable.
fn assert_update_refused(update: &prism::SceneUpdate, check: impl Fn(&Error) -> bool) {
    for mut backend in every_backend() {
        let name = backend.info().name;
        backend
            .set_scene(&two_level_scene())
            .expect("the two-level scene");
        let before = two_level_answers(backend.as_mut());
        assert_two_level_answers(&before);
        let err = backend.update_scene(update).expect_err("a bad update");
        assert!(check(&err), "{name}: {err:?}");
        assert!(!err.to_string().is_empty());
        assert_eq!(two_level_answers(backend.as_mut()), before, "{name}: {err}");
        let mut good = prism::SceneUpdate::new();
        good.set_transform(
            0,
            prism::glam::Affine3A::from_translation(Vec3::new(0.0, 0.0, -6.0)),
        );
        let stats = backend
            .update_scene(&good)
            .expect("a good update after a bad one");
        assert!(stats.changes.top_rebuilt, "{name}");
        assert_usable(backend.as_mut(), "a refused update");
    }
}

/// On every backend holding [`two_level_scene`]: `set_scene(scene)` is
/// refused with `expected`, and the two-level scene still answers as before.
fn assert_two_level_scene_refused(scene: &Scene, expected: &Error) {
    for mut backend in every_backend() {
        let name = backend.info().name;
        backend
            .set_scene(&two_level_scene())
            .expect("the two-level scene");
        let before = two_level_answers(backend.as_mut());
        let got = backend.set_scene(scene).expect_err("a bad two-level scene");
        assert_eq!(format!("{got:?}"), format!("{expected:?}"), "{name}");
        assert_eq!(two_level_answers(backend.as_mut()), before, "{name}");
        assert_usable(backend.as_mut(), "a refused two-level scene");
    }
}

#[test]
fn non_finite_or_singular_transform_names_the_instance() {
    use prism::glam::Affine3A;
    let nan = Affine3A::from_translation(Vec3::new(f32::NAN, 0.0, 0.0));
    let inf = Affine3A::from_scale(Vec3::new(1.0, f32::INFINITY, 1.0));
    let flat = Affine3A::from_scale(Vec3::new(1.0, 0.0, 1.0));
    let sliver = Affine3A::from_scale(Vec3::new(1.0, 1e-7, 1.0));
    for (t, reason) in [
        (nan, "not finite"),
        (inf, "not finite"),
        (flat, "singular"),
        (sliver, "nearly singular"),
    ] {
        // In a new scene: set_scene refuses it, naming instance 1.
        let scene = two_level_scene();
        let mut insts: Vec<_> = scene.instances().to_vec();
        insts[1].transform = t;
        let mut bad = Scene::new();
        bad.add_material(Material::lambertian(Vec3::splat(0.5)));
        for g in scene.geometries() {
            bad.add_geometry(g.clone());
        }
        bad.add_instances(insts).expect("three instances");
        let err = prism::Accel::build(&bad).expect_err("a bad transform");
        match &err {
            Error::TransformInvalid {
                instance: 1,
                transform,
                reason: r,
            } => {
                assert!(r.contains(reason), "{reason}: {err}");
                assert_eq!(
                    format!("{transform:?}"),
                    format!("{:?}", prism::instance::rows(&t))
                );
            }
            other => panic!("{reason}: {other:?}"),
        }
        assert_two_level_scene_refused(&bad, &err);
        // In an update: a move, and an addition.
        let mut update = prism::SceneUpdate::new();
        update.set_transform(2, t);
        assert_update_refused(
            &update,
            |e| matches!(e, Error::TransformInvalid { instance: 2, reason: r, .. } if r.contains(reason)),
        );
        let mut update = prism::SceneUpdate::new();
        update.add_instance(prism::Instance::new(0, t));
        assert_update_refused(
            &update,
            |e| matches!(e, Error::TransformInvalid { reason: r, .. } if r.contains(reason)),
        );
    }
}

#[test]
fn geometry_id_out_of_range_names_instance_and_geometry() {
    use prism::glam::Affine3A;
    let mut bad = two_level_scene();
    bad.add_instance(prism::Instance::new(7, Affine3A::IDENTITY));
    assert_two_level_scene_refused(
        &bad,
        &Error::GeometryOutOfRange {
            instance: 3,
            geometry: 7,
            count: 2,
        },
    );
    let mut update = prism::SceneUpdate::new();
    update.add_instance(prism::Instance::new(2, Affine3A::IDENTITY));
    assert_update_refused(&update, |e| {
        matches!(
            e,
            Error::GeometryOutOfRange {
                geometry: 2,
                count: 2,
                ..
            }
        )
    });
    // An instance's material override past the last material, likewise.
    let mut bad = two_level_scene();
    bad.add_instance(prism::Instance::new(0, Affine3A::IDENTITY).with_material(5));
    assert_two_level_scene_refused(
        &bad,
        &Error::InstanceMaterialOutOfRange {
            instance: 3,
            material: 5,
            count: 1,
        },
    );
}

#[test]
fn update_with_another_vertex_count_names_geometry_and_counts() {
    let three = quad_vertices()[..3].to_vec();
    let mut update = prism::SceneUpdate::new();
    update.set_vertices(0, &three);
    assert_update_refused(&update, |e| {
        matches!(
            e,
            Error::VertexCountMismatch {
                geometry: 0,
                given: 3,
                expected: 4
            }
        )
    });
    // Non-finite new vertices name the geometry and the vertex.
    let mut nan = quad_vertices();
    nan[2].y = f32::NAN;
    let mut update = prism::SceneUpdate::new();
    update.set_vertices(0, &nan);
    assert_update_refused(&update, |e| match e {
        Error::InGeometry {
            geometry: 0,
            source,
        } => matches!(**source, Error::VertexNotFinite { vertex: 2, .. }),
        _ => false,
    });
}

#[test]
fn more_instances_than_the_index_holds_are_refused_by_length() {
    use prism::glam::Affine3A;
    use prism::instance::MAX_INSTANCES;
    let one = prism::Instance::new(0, Affine3A::IDENTITY);
    // The length is checked before any instance is read: nothing is allocated.
    let mut scene = two_level_scene();
    match scene.add_instances(std::iter::repeat_n(one, MAX_INSTANCES)) {
        Err(Error::TooManyInstances { count, limit }) => {
            assert_eq!((count, limit), (MAX_INSTANCES + 3, MAX_INSTANCES));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(scene.instances().len(), 3, "nothing was added");
    let mut update = prism::SceneUpdate::new();
    update.add_instance(one);
    match update.add_instances(std::iter::repeat_n(one, MAX_INSTANCES)) {
        Err(Error::TooManyInstances { count, limit }) => {
            assert_eq!((count, limit), (MAX_INSTANCES + 1, MAX_INSTANCES));
        }
        other => panic!("{other:?}"),
    }
    // The update keeps its one addition, and applies.
    for mut backend in every_backend() {
        backend.set_scene(&scene).expect("the two-level scene");
        let stats = backend.update_scene(&update).expect("one addition");
        assert_eq!(stats.changes.added, vec![3]);
        assert_usable(backend.as_mut(), "too many instances");
    }
}

#[test]
fn update_naming_a_missing_or_removed_instance_names_it() {
    use prism::glam::Affine3A;
    let mut update = prism::SceneUpdate::new();
    update.set_transform(9, Affine3A::IDENTITY);
    assert_update_refused(&update, |e| {
        matches!(e, Error::InstanceOutOfRange { instance: 9, .. })
    });
    let mut update = prism::SceneUpdate::new();
    update.set_mask(3, 1);
    assert_update_refused(&update, |e| {
        matches!(e, Error::InstanceOutOfRange { instance: 3, .. })
    });
    let mut update = prism::SceneUpdate::new();
    update.remove_instance(1).remove_instance(1);
    assert_update_refused(
        &update,
        |e| matches!(e, Error::InstanceOutOfRange { instance: 1, reason } if reason.contains("removed")),
    );
    // Removed by an earlier update, then named.
    for mut backend in every_backend() {
        let name = backend.info().name;
        backend
            .set_scene(&two_level_scene())
            .expect("the two-level scene");
        let mut remove = prism::SceneUpdate::new();
        remove.remove_instance(1);
        backend.update_scene(&remove).expect("a removal");
        let before = two_level_answers(backend.as_mut());
        assert!(!before.contains("instance: 1,"), "{name}: {before}");
        for update in [
            prism::SceneUpdate::new().set_mask(1, 3).clone(),
            prism::SceneUpdate::new()
                .set_transform(1, Affine3A::IDENTITY)
                .clone(),
            prism::SceneUpdate::new().remove_instance(1).clone(),
        ] {
            match backend.update_scene(&update) {
                Err(Error::InstanceOutOfRange {
                    instance: 1,
                    reason,
                }) => assert!(reason.contains("removed"), "{name}: {reason}"),
                other => panic!("{name}: {other:?}"),
            }
            assert_eq!(two_level_answers(backend.as_mut()), before, "{name}");
        }
        assert_usable(backend.as_mut(), "an update naming a removed instance");
    }
}

#[test]
fn new_vertices_for_a_geometry_that_is_not_a_mesh_are_refused() {
    let four = quad_vertices();
    let mut update = prism::SceneUpdate::new();
    update.set_vertices(1, &four);
    assert_update_refused(&update, |e| matches!(e, Error::NotAMesh { geometry: 1 }));
    let mut update = prism::SceneUpdate::new();
    update.set_vertices(5, &four);
    assert_update_refused(&update, |e| {
        matches!(
            e,
            Error::UnknownGeometry {
                geometry: 5,
                count: 2
            }
        )
    });
    let mut update = prism::SceneUpdate::new();
    update.rebuild(2);
    assert_update_refused(&update, |e| {
        matches!(
            e,
            Error::UnknownGeometry {
                geometry: 2,
                count: 2
            }
        )
    });
}

#[test]
fn an_update_of_a_flat_scene_or_of_no_scene_is_refused() {
    use prism::glam::Affine3A;
    let mut update = prism::SceneUpdate::new();
    update.set_transform(0, Affine3A::IDENTITY);
    for mut backend in every_backend() {
        let name = backend.info().name;
        match backend.update_scene(&update) {
            Err(Error::NoScene) => {}
            other => panic!("{name}: before set_scene: {other:?}"),
        }
        backend.set_scene(&good_scene()).expect("the good scene");
        match backend.update_scene(&update) {
            Err(Error::NotTwoLevel) => {}
            other => panic!("{name}: {other:?}"),
        }
        assert_eq!(backend.geometry_sah(0), None, "{name}");
        assert_traces_good_scene(backend.as_mut(), "an update of a flat scene");
        assert_usable(backend.as_mut(), "an update of a flat scene");
    }
}
