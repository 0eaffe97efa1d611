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
pub const SHADER_FILES: [(&str, &str); 12] = [
    ("types.wgsl", include_str!("../shaders/types.wgsl")),
    ("math.wgsl", include_str!("../shaders/math.wgsl")),
    ("division.wgsl", include_str!("../shaders/division.wgsl")),
    ("rng.wgsl", include_str!("../shaders/rng.wgsl")),
    ("sampling.wgsl", include_str!("../shaders/sampling.wgsl")),
    ("intersect.wgsl", include_str!("../shaders/intersect.wgsl")),
    ("traverse.wgsl", include_str!("../shaders/traverse.wgsl")),
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
        let mut text = String::new();
        let mut files = Vec::with_capacity(SHADER_FILES.len());
        let mut line = 1u32;
        for (name, original) in SHADER_FILES {
            let original = if f64_division && name == "division.wgsl" {
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
