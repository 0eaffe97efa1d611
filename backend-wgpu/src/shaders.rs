//! The WGSL sources, assembled into one module in a fixed order.
//!
//! WGSL has no `#include`, so the files of `backend-wgpu/shaders/` are
//! concatenated, each after a marker line naming it; [`ShaderSource::locate`]
//! maps a line of the whole back to its file, so compiler messages name the
//! file and line a person edits.
//!
//! Naming: a free function of `prism-core` keeps its name (`ray_triangle`,
//! `scatter`, `render_pixel`); a method becomes `type_method` in snake case
//! (`Pcg::next_f32` is `pcg_next_f32`, `RayPre::new` is `ray_pre_new`). Every
//! mirror carries a comment `// mirrors prism_core::module::name`.

/// The shader files, in the order they are concatenated (each may use what the
/// files before it declare; WGSL resolves module-scope names in any order, the
/// order only keeps the source readable top-down).
pub const SHADER_FILES: [(&str, &str); 17] = [
    ("types.wgsl", include_str!("../shaders/types.wgsl")),
    ("math.wgsl", include_str!("../shaders/math.wgsl")),
    ("division.wgsl", include_str!("../shaders/division.wgsl")),
    ("rng.wgsl", include_str!("../shaders/rng.wgsl")),
    ("sampling.wgsl", include_str!("../shaders/sampling.wgsl")),
    ("intersect.wgsl", include_str!("../shaders/intersect.wgsl")),
    ("traverse.wgsl", include_str!("../shaders/traverse.wgsl")),
    (
        "heightfield.wgsl",
        include_str!("../shaders/heightfield.wgsl"),
    ),
    ("two_level.wgsl", include_str!("../shaders/two_level.wgsl")),
    (
        "point_grid.wgsl",
        include_str!("../shaders/point_grid.wgsl"),
    ),
    ("cell_grid.wgsl", include_str!("../shaders/cell_grid.wgsl")),
    (
        "camera_masks.wgsl",
        include_str!("../shaders/camera_masks.wgsl"),
    ),
    ("material.wgsl", include_str!("../shaders/material.wgsl")),
    ("camera.wgsl", include_str!("../shaders/camera.wgsl")),
    ("image.wgsl", include_str!("../shaders/image.wgsl")),
    (
        "integrator.wgsl",
        include_str!("../shaders/integrator.wgsl"),
    ),
    ("entry.wgsl", include_str!("../shaders/entry.wgsl")),
];

/// The text that replaces `division.wgsl` on adapters with 64-bit floats:
/// correctly rounded division and square root, as core's.
pub const DIVISION_F64: &str = include_str!("../shaders/division_f64.wgsl");

/// The lane-refill batch kernels, appended to the module where the adapter has
/// subgroup operations (see [`ModuleConfig::lane_refill`]).
pub const REFILL: (&str, &str) = ("refill.wgsl", include_str!("../shaders/refill.wgsl"));

/// The persistent path render kernels, appended with [`REFILL`] (they use its
/// subgroup helpers and the same `SUBGROUP` feature).
pub const PATH_PIECES: (&str, &str) = (
    "path_pieces.wgsl",
    include_str!("../shaders/path_pieces.wgsl"),
);

/// Largest traversal stack a module is compiled with: a two-level walk keeps
/// one stack for both trees, each less than
/// [`prism_core::gpu::TRAVERSAL_STACK_SIZE`] deep.
pub const MAX_STACK_ENTRIES: u32 = 2 * prism_core::gpu::TRAVERSAL_STACK_SIZE as u32;

/// What one compiled module is specialised for.
///
/// The backend compiles one module per configuration it meets (the scene
/// decides every field but the first two, so that a scene of spheres runs no
/// triangle code, a shallow tree zero-fills a short stack and a flat scene
/// runs no two-level code) and keeps them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ModuleConfig {
    /// `division_f64.wgsl` instead of `division.wgsl` (needs `SHADER_F64`).
    pub f64_division: bool,
    /// Append [`REFILL`] and [`PATH_PIECES`], whose subgroup operations need
    /// `SUBGROUP`.
    pub lane_refill: bool,
    /// `STACK_ENTRIES`: the traversal stack's length; at least the scene's BVH
    /// depth ([`prism_core::Accel::depth`]; two levels: plus the top tree's,
    /// [`prism_core::Accel::top_depth`]), at most [`MAX_STACK_ENTRIES`].
    pub stack_entries: u32,
    /// `SCENE_KINDS`: 1 spheres only, 2 triangles only, 3 both; plus 4
    /// where the scene holds a heightfield (the only modules that walk one,
    /// heightfield.wgsl, and whose `slot_materials` carries the heightfields
    /// after the slot materials).
    pub scene_kinds: u32,
    /// `OCTANT_COPIES`: the scene's `nodes` buffer holds the tree's eight
    /// near-first octant copies ([`prism_core::gpu::near_first_octant_copies`]),
    /// and traversals start at their ray's copy, read each box's near planes
    /// without a min/max and take each node's children in slot order.
    pub octant_copies: bool,
    /// `LIGHT_GRID`: the scene's `slot_materials` buffer carries the light
    /// grid after the slot materials ([`prism_core::point_grid`]; see
    /// `point_grid.wgsl`), and the Whitted and AO shadow rays read it.
    pub light_grid: bool,
    /// `TWO_LEVEL`: the scene has instances ([`prism_core::Accel::is_two_level`]):
    /// its `nodes` buffer holds the geometries' trees, the instance records
    /// and the tree over the instances, and every walk is `two_level.wgsl`'s.
    pub two_level: bool,
    /// `SUN`: the scene has a sun ([`prism_core::Accel::sun`]). Without one
    /// the path kernel carries none of the sun's code (its hit test, next
    /// event and weights), which the shader compiler would otherwise keep
    /// in registers around every bounce.
    pub sun: bool,
    /// `CELL_GRID`: the scene's `slot_materials` buffer carries core's cell
    /// grid ([`prism_core::cell_grid`]; layout in `cell_grid.wgsl`), and the
    /// render kernels' closest hits walk it instead of the tree.
    /// [`ModuleConfig::for_accel`] sets it for a flat scene the grid may
    /// serve; the upload keeps it only where core builds a grid and its cost
    /// model expects the grid to beat the tree, and a frame whose rays may
    /// start too far away to walk it runs the module without it.
    pub cell_grid: bool,
    /// `CAMERA_MASKS`: the Whitted and AO render kernels read their pixel's
    /// tile's candidate masks, which `camera_masks_main` finds from the
    /// frame's cones before them ([`prism_core::camera_bounds`];
    /// `camera_masks.wgsl`), and their camera rays, first mirror rays and
    /// shadow rays from camera hits test those instead of walking the tree. Never set by [`ModuleConfig::for_accel`]:
    /// a frame sets it where it writes cones (a pinhole camera, a flat scene
    /// of at most [`prism_core::camera_bounds::CAMERA_BOUNDS_MAX_PRIMS`]
    /// primitives without a heightfield, as the CUDA backend's condition).
    pub camera_masks: bool,
}

impl ModuleConfig {
    /// The configuration right for any scene.
    pub const GENERAL: ModuleConfig = ModuleConfig {
        f64_division: false,
        lane_refill: false,
        stack_entries: prism_core::gpu::TRAVERSAL_STACK_SIZE as u32,
        scene_kinds: 3,
        octant_copies: false,
        light_grid: false,
        two_level: false,
        sun: true,
        cell_grid: false,
        camera_masks: false,
    };

    /// The stack length for `accel`: its tree's depth (two levels: both
    /// trees' depths together) rounded up to a power of two, 8 to
    /// [`MAX_STACK_ENTRIES`].
    pub fn stack_entries_for(accel: &prism_core::Accel) -> u32 {
        let depth = accel.depth().saturating_add(accel.top_depth());
        depth.clamp(1, MAX_STACK_ENTRIES).next_power_of_two().max(8)
    }

    /// `self` narrowed to `accel`: its primitive kinds, a stack of the
    /// tree's depth (two levels: both trees' depths together) rounded up to a
    /// power of two (8 to [`MAX_STACK_ENTRIES`]), so that few distinct modules
    /// arise, and for a flat scene octant copies for a tree of at most
    /// [`prism_core::gpu::OCTANT_COPIES_MAX_NODES`] nodes and a light grid
    /// for at most [`prism_core::point_grid::POINT_GRID_MAX_PRIMS`]
    /// primitives. Both are built over one flat tree: a two-level scene has
    /// neither (its geometries' trees are walked in object space, where a
    /// ray's octant and the light's position differ from instance to
    /// instance).
    ///
    /// The cell grid ([`prism_core::cell_grid`]) is asked for on a flat
    /// scene with octant copies (as the CUDA backend, whose grid kernels
    /// walk them for shadow rays), no heightfield and at most
    /// [`prism_core::cell_grid::CELL_GRID_MAX_PRIMS`] primitives; the
    /// upload then builds it and keeps it only where core's cost model
    /// ([`prism_core::cell_grid::CellGrid::worthwhile`]) picks it.
    ///
    /// Core's camera candidate masks ([`prism_core::camera_bounds`]) are a
    /// frame's choice, not the scene's ([`ModuleConfig::camera_masks`]): this
    /// keeps `self`'s.
    pub fn for_accel(self, accel: &prism_core::Accel) -> ModuleConfig {
        let mut kinds = 0u32;
        for p in accel.primitives() {
            kinds |= match p.kind() {
                prism_core::gpu::KIND_SPHERE => 1,
                prism_core::gpu::KIND_HEIGHTFIELD => 4,
                _ => 2,
            };
            if kinds == 7 {
                break;
            }
        }
        let two_level = accel.is_two_level();
        let octant_copies =
            !two_level && accel.nodes().len() <= prism_core::gpu::OCTANT_COPIES_MAX_NODES;
        ModuleConfig {
            stack_entries: Self::stack_entries_for(accel),
            scene_kinds: if kinds == 0 { 3 } else { kinds },
            octant_copies,
            // The heightfields' data take the light grid's place in
            // `slot_materials` (heightfield.wgsl); core builds no light grid
            // for a scene holding one anyway.
            light_grid: !two_level
                && kinds & 4 == 0
                && accel.primitives().len() <= prism_core::point_grid::POINT_GRID_MAX_PRIMS,
            two_level,
            sun: accel.sun().is_some(),
            // CellGrid::build makes no grid for a heightfield or more
            // primitives; the cost model is the upload's (it needs the grid).
            cell_grid: octant_copies
                && kinds & 4 == 0
                && accel.primitives().len() <= prism_core::cell_grid::CELL_GRID_MAX_PRIMS,
            ..self
        }
    }
}

/// A function that may rewrite a shader file before compilation: called with
/// the file name (`"rng.wgsl"`) and its text, it returns the text to compile.
///
/// Tests use it to break a mirror on purpose and check that the conformance
/// checks notice.
pub type SourcePatch = Box<dyn Fn(&str, &str) -> String + Send + Sync>;

/// The assembled WGSL module and where each file landed in it.
#[derive(Clone, Debug)]
pub struct ShaderSource {
    /// The whole module.
    pub text: String,
    /// `(file name, first line, line count)`, lines 1-based in `text`.
    pub files: Vec<(&'static str, u32, u32)>,
}

impl ShaderSource {
    /// Concatenate [`SHADER_FILES`], passing each through `patch` first.
    pub fn assemble(patch: Option<&SourcePatch>) -> ShaderSource {
        Self::assemble_with(patch, false)
    }

    /// [`ShaderSource::assemble`], with `division.wgsl` replaced by
    /// [`DIVISION_F64`] (before `patch`) when `f64_division` is set; the module
    /// then needs `wgpu::Features::SHADER_F64`.
    pub fn assemble_with(patch: Option<&SourcePatch>, f64_division: bool) -> ShaderSource {
        Self::assemble_for(
            patch,
            &ModuleConfig {
                f64_division,
                ..ModuleConfig::GENERAL
            },
        )
    }

    /// The module for `config`: [`ShaderSource::assemble_with`], plus the
    /// refill kernels if asked for (wgpu 30's WGSL takes subgroup operations
    /// without an `enable` directive), then `STACK_ENTRIES`, `SCENE_KINDS`,
    /// `OCTANT_COPIES`, `LIGHT_GRID`, `TWO_LEVEL`, `SUN`, `CELL_GRID` and `CAMERA_MASKS`
    /// (types.wgsl) rewritten in place (line numbers do not move).
    pub fn assemble_for(patch: Option<&SourcePatch>, config: &ModuleConfig) -> ShaderSource {
        let mut text = String::new();
        let mut files = Vec::with_capacity(SHADER_FILES.len() + 2);
        let mut line = 1u32;
        let subgroups = config
            .lane_refill
            .then_some([REFILL, PATH_PIECES])
            .into_iter()
            .flatten();
        for (name, original) in SHADER_FILES.into_iter().chain(subgroups) {
            let original = if config.f64_division && name == "division.wgsl" {
                DIVISION_F64
            } else {
                original
            };
            let body = match patch {
                Some(p) => p(name, original),
                None => original.to_string(),
            };
            text.push_str("// ---- ");
            text.push_str(name);
            text.push_str(" ----\n");
            line += 1;
            let count = body.lines().count() as u32;
            files.push((name, line, count));
            text.push_str(&body);
            if !body.ends_with('\n') {
                text.push('\n');
            }
            line += count;
        }
        let general = ModuleConfig::GENERAL;
        for (name, general, value) in [
            ("STACK_ENTRIES", general.stack_entries, config.stack_entries),
            ("SCENE_KINDS", general.scene_kinds, config.scene_kinds),
            (
                "OCTANT_COPIES",
                general.octant_copies as u32,
                config.octant_copies as u32,
            ),
            (
                "LIGHT_GRID",
                general.light_grid as u32,
                config.light_grid as u32,
            ),
            (
                "TWO_LEVEL",
                general.two_level as u32,
                config.two_level as u32,
            ),
            ("SUN", general.sun as u32, config.sun as u32),
            (
                "CELL_GRID",
                general.cell_grid as u32,
                config.cell_grid as u32,
            ),
            (
                "CAMERA_MASKS",
                general.camera_masks as u32,
                config.camera_masks as u32,
            ),
        ] {
            text = text.replace(
                &format!("const {name}: u32 = {general}u;"),
                &format!("const {name}: u32 = {value}u;"),
            );
        }
        ShaderSource { text, files }
    }

    /// The file and 1-based line in it of line `line` of the whole module.
    pub fn locate(&self, line: u32) -> Option<(&'static str, u32)> {
        self.files
            .iter()
            .find(|(_, first, count)| line >= *first && line < first + count)
            .map(|(name, first, _)| (*name, line - first + 1))
    }
}
