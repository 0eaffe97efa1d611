//! The WGSL mirrors against prism-core, with no adapter needed: struct layouts
//! (computed by naga) against `prism_core::gpu::layouts()`, shared constants,
//! the `// mirrors` comments, and naga validation of the whole module.

use naga::proc::Layouter;
use naga::{Module, TypeInner};
use prism_wgpu::ShaderSource;
use std::mem::{offset_of, size_of};

fn module() -> (ShaderSource, Module) {
    let source = ShaderSource::assemble(None);
    let module = match naga::front::wgsl::parse_str(&source.text) {
        Ok(m) => m,
        Err(e) => panic!("WGSL does not parse:\n{}", e.emit_to_string(&source.text)),
    };
    (source, module)
}

/// `(size, [(member, offset)])` of the WGSL struct `name`.
fn wgsl_struct(module: &Module, layouter: &Layouter, name: &str) -> (u32, Vec<(String, u32)>) {
    let (handle, ty) = module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no struct {name} in the WGSL"));
    let TypeInner::Struct { members, span } = &ty.inner else {
        panic!("{name} is not a struct")
    };
    assert_eq!(
        layouter[handle].size, *span,
        "{name}: layouter size and struct span differ"
    );
    let members = members
        .iter()
        .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
        .collect();
    (*span, members)
}

#[test]
fn wgsl_struct_layouts_match_core() {
    let (_, module) = module();
    let mut layouter = Layouter::default();
    layouter.update(module.to_ctx()).expect("layouts");
    for (name, size, fields) in prism_core::gpu::layouts() {
        let (wgsl_size, members) = wgsl_struct(&module, &layouter, name);
        assert_eq!(
            wgsl_size as usize, size,
            "{name}: WGSL size {wgsl_size}, Rust size {size}"
        );
        let rust: Vec<(String, u32)> = fields
            .iter()
            .map(|(f, o)| (f.to_string(), *o as u32))
            .collect();
        assert_eq!(
            members, rust,
            "{name}: WGSL members/offsets differ from prism_core::gpu"
        );
    }
    // The register-side Ray and Hit have the bytes of core's Ray and Hit too
    // (Hit: its five words; store_hit writes the padding of its second row).
    let (size, members) = wgsl_struct(&module, &layouter, "Hit");
    assert_eq!(size as usize, offset_of!(prism_core::Hit, instance) + 4);
    let hit = [
        ("t", offset_of!(prism_core::Hit, t)),
        ("u", offset_of!(prism_core::Hit, u)),
        ("v", offset_of!(prism_core::Hit, v)),
        ("prim", offset_of!(prism_core::Hit, prim)),
        ("instance", offset_of!(prism_core::Hit, instance)),
    ];
    assert_eq!(
        members,
        hit.map(|(n, o)| (n.to_string(), o as u32)).to_vec()
    );
    // The frame's cones (camera_masks.wgsl), a uniform: the layout of the
    // host's FrameCones (backend-wgpu/src/camera_masks.rs asserts the same
    // numbers of its repr(C) struct).
    let (size, members) = wgsl_struct(&module, &layouter, "FrameCones");
    assert_eq!(size, 2080);
    assert_eq!(
        members,
        [("info", 0), ("angle", 16), ("cones", 32), ("balls", 1056)]
            .map(|(n, o)| (n.to_string(), o))
            .to_vec()
    );
    let (size, members) = wgsl_struct(&module, &layouter, "Ray");
    assert_eq!(size as usize, size_of::<prism_core::Ray>());
    let ray = [
        ("origin", offset_of!(prism_core::Ray, origin)),
        ("tmin", offset_of!(prism_core::Ray, tmin)),
        ("dir", offset_of!(prism_core::Ray, dir)),
        ("tmax", offset_of!(prism_core::Ray, tmax)),
        ("mask", offset_of!(prism_core::Ray, mask)),
    ];
    assert_eq!(
        members,
        ray.map(|(n, o)| (n.to_string(), o as u32)).to_vec()
    );
}

#[test]
fn wgsl_module_validates() {
    let (source, module) = module();
    let mut validator = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::default(),
    );
    if let Err(e) = validator.validate(&module) {
        panic!(
            "WGSL does not validate:\n{}",
            e.emit_to_string(&source.text)
        );
    }
    for entry in [
        "render_linear",
        "render_srgb8",
        "intersect_main",
        "occluded_main",
    ] {
        assert!(
            module.entry_points.iter().any(|e| e.name == entry),
            "entry point {entry} missing"
        );
    }
}

/// The module with f64 division (adapters with SHADER_F64) validates too.
#[test]
fn wgsl_module_with_f64_division_validates() {
    let source = ShaderSource::assemble_with(None, true);
    assert!(source.text.contains("f64(a) / f64(b)"));
    let module = match naga::front::wgsl::parse_str(&source.text) {
        Ok(m) => m,
        Err(e) => panic!("WGSL does not parse:\n{}", e.emit_to_string(&source.text)),
    };
    let mut validator = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::FLOAT64,
    );
    if let Err(e) = validator.validate(&module) {
        panic!(
            "WGSL does not validate:\n{}",
            e.emit_to_string(&source.text)
        );
    }
}

/// A scalar constant of the module, as f64.
fn constant(module: &Module, name: &str) -> f64 {
    let (_, c) = module
        .constants
        .iter()
        .find(|(_, c)| c.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no const {name} in the WGSL"));
    match module.global_expressions[c.init] {
        naga::Expression::Literal(naga::Literal::F32(v)) => v as f64,
        naga::Expression::Literal(naga::Literal::U32(v)) => v as f64,
        ref e => panic!("const {name} is not a scalar literal: {e:?}"),
    }
}

#[test]
fn wgsl_constants_match_core() {
    use prism_core::{camera_bounds, gpu, integrator, intersect};
    let (_, module) = module();
    let exact = [
        ("TRAVERSAL_STACK_SIZE", gpu::TRAVERSAL_STACK_SIZE as f64),
        ("EMPTY_CHILD", gpu::EMPTY_CHILD as f64),
        ("KIND_TRIANGLE", gpu::KIND_TRIANGLE as f64),
        ("KIND_SPHERE", gpu::KIND_SPHERE as f64),
        ("KIND_HEIGHTFIELD", gpu::KIND_HEIGHTFIELD as f64),
        ("HEIGHTFIELD_MAX_LEVELS", gpu::HEIGHTFIELD_MAX_LEVELS as f64),
        ("FACE_TOP", prism_core::heightfield::FACE_TOP as f64),
        ("FACE_BOTTOM", prism_core::heightfield::FACE_BOTTOM as f64),
        ("FACE_NEG_X", prism_core::heightfield::FACE_NEG_X as f64),
        ("FACE_POS_X", prism_core::heightfield::FACE_POS_X as f64),
        ("FACE_NEG_Z", prism_core::heightfield::FACE_NEG_Z as f64),
        ("FACE_POS_Z", prism_core::heightfield::FACE_POS_Z as f64),
        ("NO_PRIM", prism_core::Hit::NO_PRIM as f64),
        ("NO_INSTANCE", prism_core::Hit::NO_INSTANCE as f64),
        ("RAY_ALL", prism_core::Ray::ALL as f64),
        (
            "NO_MATERIAL",
            prism_core::gpu::GpuInstance::NO_MATERIAL as f64,
        ),
        ("MIN_DIR_COMPONENT", intersect::MIN_DIR_COMPONENT as f64),
        ("SLAB_EXIT_SCALE", intersect::SLAB_EXIT_SCALE as f64),
        (
            "SLAB_EXIT_SCALE_NEGATIVE",
            intersect::SLAB_EXIT_SCALE_NEGATIVE as f64,
        ),
        (
            "SPHERE_LEFT_BEHIND_SCALE",
            intersect::SPHERE_LEFT_BEHIND_SCALE as f64,
        ),
        (
            "SPHERE_EARLY_MISS_MARGIN",
            intersect::SPHERE_EARLY_MISS_MARGIN as f64,
        ),
        ("SHADOW_KEEP", integrator::SHADOW_KEEP as f64),
        ("PHONG_AMBIENT", integrator::PHONG_AMBIENT as f64),
        ("PHONG_DIFFUSE", integrator::PHONG_DIFFUSE as f64),
        ("PHONG_SPECULAR", integrator::PHONG_SPECULAR as f64),
        ("PHONG_EXPONENT", integrator::PHONG_EXPONENT as f64),
        ("WHITTED_LOCAL", integrator::WHITTED_LOCAL as f64),
        (
            "COSINE_HEMISPHERE_MIN_LEN2",
            prism_core::sampling::COSINE_HEMISPHERE_MIN_LEN2 as f64,
        ),
        (
            "CAMERA_BOUNDS_MAX_PRIMS",
            camera_bounds::CAMERA_BOUNDS_MAX_PRIMS as f64,
        ),
        ("CAMERA_MASK_TILE", camera_bounds::CAMERA_MASK_TILE as f64),
        (
            "REFLECTION_BOUNDS_MARGIN",
            camera_bounds::REFLECTION_BOUNDS_MARGIN as f32 as f64,
        ),
        (
            "REFLECTION_MAX_ANGLE",
            camera_bounds::REFLECTION_MAX_ANGLE as f32 as f64,
        ),
        (
            "SHADOW_MAX_CANDIDATES",
            camera_bounds::SHADOW_MAX_CANDIDATES as f64,
        ),
        ("TAU", core::f32::consts::TAU as f64),
        ("PI", core::f32::consts::PI as f64),
        (
            "SRGB8_TABLE_SLOTS",
            prism_core::image::SRGB8_TABLE_SLOTS as f64,
        ),
    ];
    for (name, want) in exact {
        // Both sides are f32 or u32 values, so equality is exact.
        assert_eq!(
            constant(&module, name),
            want,
            "const {name} differs from prism-core"
        );
    }
}

/// `CamelCase` to `snake_case`.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Every `// mirrors prism_core::path::name` comment of every WGSL file sits on
/// the declaration of that name: `fn name`, `fn type_method` for
/// `Type::method`, `struct Name`, `const NAME`.
#[test]
fn mirror_comments_name_their_declarations() {
    let mut mirrored = 0;
    let files = prism_wgpu::SHADER_FILES.into_iter().chain([
        prism_wgpu::REFILL,
        ("division_f64.wgsl", prism_wgpu::DIVISION_F64),
    ]);
    for (file, text) in files {
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(path) = line.trim().strip_prefix("// mirrors prism_core::") else {
                continue;
            };
            let path = path
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .next()
                .unwrap_or_default();
            let segments: Vec<&str> = path.split("::").collect();
            let decl = lines[i + 1..]
                .iter()
                .map(|l| l.trim())
                .find(|l| !l.starts_with("//"))
                .unwrap_or_else(|| {
                    panic!("{file}:{}: mirror comment at the end of the file", i + 1)
                });
            let last = segments[segments.len() - 1];
            let expected = if last
                .chars()
                .all(|c| c.is_uppercase() || c == '_' || c.is_ascii_digit())
            {
                format!("const {last}:")
            } else if last.chars().next().is_some_and(|c| c.is_uppercase()) {
                format!("struct {last} {{")
            } else if segments.len() >= 2
                && segments[segments.len() - 2]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_uppercase())
            {
                format!("fn {}_{}(", snake(segments[segments.len() - 2]), last)
            } else {
                format!("fn {last}(")
            };
            // Methods that core names after their type (Hit::MISS, Ray::new) follow the same rule.
            let expected = expected
                .replace("fn hit_MISS(", "fn hit_miss(")
                .replace("const MISS:", "fn hit_miss(");
            assert!(
                decl.starts_with(&expected),
                "{file}:{}: `// mirrors prism_core::{path}` is followed by `{decl}`, expected `{expected}...`",
                i + 1
            );
            mirrored += 1;
        }
    }
    assert!(mirrored >= 40, "only {mirrored} mirror comments found");
}

/// The module with lane refill, specialised for a shallow scene of spheres,
/// its octant copies and its light grid and no sun, validates with subgroup
/// operations, and the specialisation rewrote its constants.
#[test]
fn wgsl_module_with_refill_and_specialisation_validates() {
    let config = prism_wgpu::ModuleConfig {
        f64_division: true,
        lane_refill: true,
        stack_entries: 8,
        scene_kinds: 1,
        octant_copies: true,
        light_grid: true,
        two_level: false,
        sun: false,
        cell_grid: true,
        camera_masks: true,
    };
    let source = ShaderSource::assemble_for(None, &config);
    assert!(source.text.contains("const STACK_ENTRIES: u32 = 8u;"));
    assert!(source.text.contains("const SCENE_KINDS: u32 = 1u;"));
    assert!(source.text.contains("const OCTANT_COPIES: u32 = 1u;"));
    assert!(source.text.contains("const LIGHT_GRID: u32 = 1u;"));
    assert!(source.text.contains("const TWO_LEVEL: u32 = 0u;"));
    assert!(source.text.contains("const SUN: u32 = 0u;"));
    assert!(source.text.contains("const CELL_GRID: u32 = 1u;"));
    assert!(source.text.contains("const CAMERA_MASKS: u32 = 1u;"));
    validate_with_refill(&source);
    // A two-level scene's module: the longest stack, the two-level walks.
    let two_level = prism_wgpu::ModuleConfig {
        stack_entries: prism_wgpu::MAX_STACK_ENTRIES,
        scene_kinds: 2,
        octant_copies: false,
        light_grid: false,
        two_level: true,
        cell_grid: false,
        ..config
    };
    let source = ShaderSource::assemble_for(None, &two_level);
    assert!(source.text.contains("const STACK_ENTRIES: u32 = 128u;"));
    assert!(source.text.contains("const TWO_LEVEL: u32 = 1u;"));
    validate_with_refill(&source);
}

/// `source` parses and validates with f64 and subgroup operations, and has
/// the refill entry points.
fn validate_with_refill(source: &ShaderSource) {
    let module = match naga::front::wgsl::parse_str(&source.text) {
        Ok(m) => m,
        Err(e) => panic!("WGSL does not parse:\n{}", e.emit_to_string(&source.text)),
    };
    let mut validator = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::FLOAT64 | naga::valid::Capabilities::SUBGROUP,
    );
    validator.subgroup_stages(naga::valid::ShaderStages::COMPUTE);
    validator.subgroup_operations(naga::valid::SubgroupOperationSet::all());
    if let Err(e) = validator.validate(&module) {
        panic!(
            "WGSL does not validate:\n{}",
            e.emit_to_string(&source.text)
        );
    }
    for entry in ["intersect_refill", "occluded_refill", "intersect_main"] {
        assert!(
            module.entry_points.iter().any(|e| e.name == entry),
            "entry point {entry} missing"
        );
    }
}

/// A scene's configuration: its kinds, and a stack at least as long as its
/// tree is deep, a power of two from 8 to 64.
#[test]
fn module_config_follows_the_scene() {
    use glam::Vec3;
    use prism_core::{Accel, Material, Scene};
    let general = prism_wgpu::ModuleConfig::GENERAL;
    let mut spheres = Scene::new();
    let m = spheres.add_material(Material::lambertian(Vec3::ONE));
    for i in 0..200 {
        spheres.add_sphere(Vec3::new(i as f32, 0.0, 0.0), 0.4, m);
    }
    let mut triangles = Scene::new();
    let m = triangles.add_material(Material::lambertian(Vec3::ONE));
    triangles.add_triangle(Vec3::ZERO, Vec3::X, Vec3::Y, m);
    let mut mixed = spheres.clone();
    mixed.add_triangle(Vec3::ZERO, Vec3::X, Vec3::Y, m);
    for (scene, kinds) in [(spheres, 1), (triangles, 2), (mixed, 3)] {
        let accel = Accel::build(&scene).expect("scene");
        let c = general.for_accel(&accel);
        assert_eq!(c.scene_kinds, kinds);
        assert!(c.stack_entries >= accel.depth() && c.stack_entries.is_power_of_two());
        assert!((8..=64).contains(&c.stack_entries));
        assert_eq!((c.f64_division, c.lane_refill), (false, false));
        assert!(c.octant_copies, "a small tree gets its octant copies");
        assert!(!c.two_level);
    }
    // A tree of more than OCTANT_COPIES_MAX_NODES nodes is read as it is.
    let mut large = Scene::new();
    let m = large.add_material(Material::lambertian(Vec3::ONE));
    for i in 0..2 * prism_core::gpu::OCTANT_COPIES_MAX_NODES {
        large.add_sphere(Vec3::new(i as f32, (i % 7) as f32, 0.0), 0.4, m);
    }
    let accel = Accel::build(&large).expect("scene");
    assert!(accel.nodes().len() > prism_core::gpu::OCTANT_COPIES_MAX_NODES);
    assert!(!general.for_accel(&accel).octant_copies);
    // A small two-level scene: the two-level walks with a stack for both
    // trees, and neither flat-only accelerator.
    let mut two = Scene::new();
    let m = two.add_material(Material::lambertian(Vec3::ONE));
    let mut g = prism_core::Geometry::new();
    for i in 0..50 {
        g.add_sphere(Vec3::new(i as f32, 0.0, 0.0), 0.4, m);
    }
    let g = two.add_geometry(g);
    for i in 0..40 {
        let at = glam::Affine3A::from_translation(Vec3::new(0.0, 3.0 * i as f32, 0.0));
        two.add_instance(prism_core::Instance::new(g, at));
    }
    let accel = Accel::build(&two).expect("scene");
    let c = general.for_accel(&accel);
    assert!(c.two_level && !c.octant_copies && !c.light_grid);
    assert_eq!(c.scene_kinds, 1);
    assert!(c.stack_entries >= accel.depth() + accel.top_depth());
    assert!(c.stack_entries.is_power_of_two() && c.stack_entries <= prism_wgpu::MAX_STACK_ENTRIES);
}
