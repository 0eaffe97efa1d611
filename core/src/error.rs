//! The one error type of Prism. Every variant names the offending item.

use alloc::string::String;

/// What went wrong, and with what.
///
/// Library code returns this instead of panicking: bad scene data, bad settings,
/// unusable backends and device failures all land here. After an error the
/// backend stays usable; the next valid call succeeds.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The scene has no primitives.
    #[error("the scene is empty: add at least one sphere, triangle or heightfield")]
    EmptyScene,
    /// A sphere's centre is NaN or infinite.
    #[error("primitive {prim} (sphere): centre {center:?} is not finite")]
    SphereCenterNotFinite {
        /// Scene primitive id of the sphere.
        prim: usize,
        /// The centre given.
        center: [f32; 3],
    },
    /// A sphere's radius is not a positive finite number.
    #[error("primitive {prim} (sphere): radius {radius} must be positive and finite")]
    SphereRadiusInvalid {
        /// Scene primitive id of the sphere.
        prim: usize,
        /// The radius given.
        radius: f32,
    },
    /// A vertex position used by a mesh triangle is NaN or infinite.
    #[error(
        "mesh {mesh}: triangle {triangle} uses vertex {vertex} at {position:?}, which is not finite"
    )]
    VertexNotFinite {
        /// Mesh index (order of `add_mesh`).
        mesh: usize,
        /// The first triangle (index inside the mesh) that uses the vertex.
        triangle: usize,
        /// Vertex index inside the mesh.
        vertex: usize,
        /// The position given.
        position: [f32; 3],
    },
    /// A triangle added with `add_triangle` has a NaN or infinite vertex.
    #[error("primitive {prim} (triangle): vertex {vertex} at {position:?} is not finite")]
    TriangleNotFinite {
        /// Scene primitive id of the triangle.
        prim: usize,
        /// Which vertex (0, 1, 2).
        vertex: usize,
        /// The position given.
        position: [f32; 3],
    },
    /// A triangle refers to a vertex the mesh does not have.
    #[error(
        "mesh {mesh}: triangle {triangle} uses vertex {index}, but the mesh has {vertex_count} vertices"
    )]
    IndexOutOfRange {
        /// Mesh index.
        mesh: usize,
        /// Triangle index inside the mesh.
        triangle: usize,
        /// The bad vertex index.
        index: u32,
        /// Vertices in the mesh.
        vertex_count: usize,
    },
    /// A triangle has zero area (collinear or repeated vertices).
    #[error(
        "primitive {prim} (triangle): degenerate (zero area), refused because Scene::reject_degenerate is set"
    )]
    DegenerateTriangle {
        /// Scene primitive id of the triangle.
        prim: usize,
    },
    /// A primitive names a material the scene does not have.
    #[error("primitive {primitive}: material {material} does not exist (the scene has {count})")]
    MaterialOutOfRange {
        /// Scene primitive id.
        primitive: usize,
        /// The bad material id.
        material: u32,
        /// Materials in the scene.
        count: usize,
    },
    /// A material parameter is out of its valid range.
    #[error("material {index}: {field} = {value} is invalid: {reason}")]
    MaterialInvalid {
        /// Material index.
        index: usize,
        /// Field name.
        field: &'static str,
        /// The value given.
        value: f32,
        /// What the valid range is.
        reason: &'static str,
    },
    /// The scene holds more primitives than a BVH can index.
    #[error("the scene has {count} primitives; at most {limit} are supported")]
    TooManyPrimitives {
        /// Primitives given.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// An image of zero width or height, a side over 65,536 or more than 2^30
    /// pixels, or one the host has not the memory for.
    #[error("image size {width}x{height} is invalid: {reason}")]
    ImageSize {
        /// Width asked for.
        width: u32,
        /// Height asked for.
        height: u32,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The scene's sky or key light has an unusable value.
    #[error("scene {field} = {value:?} is invalid: {reason}")]
    SceneLightInvalid {
        /// `sky.horizon`, `sky.zenith`, `light.color` or `light.position`.
        field: &'static str,
        /// The value given.
        value: [f32; 3],
        /// The valid range.
        reason: &'static str,
    },
    /// The scene's sun has an unusable value.
    #[error("scene {field} = {value} is invalid: {reason}")]
    SunInvalid {
        /// `sun.center.x` (`.y`, `.z`), `sun.radius`, `sun.color.r` (`.g`,
        /// `.b`), `sun.intensity` or `sun.color * sun.intensity`.
        field: &'static str,
        /// The value given.
        value: f32,
        /// The valid range.
        reason: &'static str,
    },
    /// A render setting is out of range.
    #[error("render setting {field} = {value} is invalid: {reason}")]
    Setting {
        /// Setting name.
        field: &'static str,
        /// The value given (as f64, exact for every u32 and f32).
        value: f64,
        /// The valid range.
        reason: &'static str,
    },
    /// A camera parameter is unusable.
    #[error("camera: {reason}")]
    Camera {
        /// What is wrong.
        reason: &'static str,
    },
    /// A ray has a NaN or infinite origin or direction, a zero direction, a
    /// `tmin` that is not finite, a NaN `tmax`, or `tmin > tmax` (an infinite
    /// `tmax` is fine).
    #[error(
        "ray {index} is invalid: {ray:?} (needs finite origin/direction, non-zero direction, finite tmin <= tmax)"
    )]
    InvalidRay {
        /// Index in the batch.
        index: usize,
        /// The ray as `[ox, oy, oz, tmin, dx, dy, dz, tmax]`.
        ray: [f32; 8],
    },
    /// Input and output slices of a batch call differ in length.
    #[error("{what}: {inputs} rays but {outputs} output slots")]
    LengthMismatch {
        /// Which call.
        what: &'static str,
        /// Rays given.
        inputs: usize,
        /// Output slots given.
        outputs: usize,
    },
    /// `render`, `intersect` or `occluded` before `set_scene`.
    #[error("no scene: call set_scene first")]
    NoScene,
    /// A backend cannot be used on this machine.
    #[error("backend {backend} is unavailable: {reason}")]
    BackendUnavailable {
        /// Backend name.
        backend: &'static str,
        /// Why (missing driver, no adapter, ...).
        reason: String,
    },
    /// The host has not the memory for an array core builds for a scene (its
    /// primitives, its BVH); nothing of the call is kept.
    #[error("not enough host memory: {bytes} bytes for {what}")]
    HostOutOfMemory {
        /// What was being allocated.
        what: &'static str,
        /// How many bytes.
        bytes: u64,
    },
    /// The device ran out of memory.
    #[error("backend {backend}: out of device memory allocating {bytes} bytes for {what}")]
    OutOfMemory {
        /// Backend name.
        backend: &'static str,
        /// What was being allocated.
        what: &'static str,
        /// How many bytes.
        bytes: u64,
    },
    /// A request exceeds a device limit.
    #[error("backend {backend}: {what} needs {needed}, the device allows {limit}")]
    DeviceLimit {
        /// Backend name.
        backend: &'static str,
        /// What exceeded the limit.
        what: &'static str,
        /// Amount needed.
        needed: u64,
        /// Device limit.
        limit: u64,
    },
    /// A device call failed (launch failure, device lost, driver error).
    #[error("backend {backend}: {operation} failed: {message}")]
    Device {
        /// Backend name.
        backend: &'static str,
        /// What was being done.
        operation: &'static str,
        /// The driver's message.
        message: String,
    },
    /// A GPU kernel or shader failed to compile.
    #[error("backend {backend}: compiling {source_name} failed:\n{log}")]
    Compile {
        /// Backend name.
        backend: &'static str,
        /// Kernel or shader file.
        source_name: String,
        /// The compiler's log.
        log: String,
    },
    /// A file could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// A mesh or scene file is malformed.
    #[error("{path}{}: {message}", line.map(|l| alloc::format!(":{l}")).unwrap_or_default())]
    Parse {
        /// The file.
        path: String,
        /// 1-based line, where known.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// A height-map image cannot be read, or is not a grid of heights the
    /// loader takes (the facade's `prism::height_map`).
    #[error("height map {path}: {problem}")]
    HeightMap {
        /// The file.
        path: String,
        /// What is wrong with it.
        problem: HeightMapProblem,
    },
    /// An unknown scene, integrator or backend name.
    #[error("unknown {what} '{name}' (known: {known})")]
    UnknownName {
        /// What kind of name.
        what: &'static str,
        /// The name given.
        name: String,
        /// The names that exist.
        known: &'static str,
    },
    /// A scene with more instances than an instance index can name.
    #[error("the scene has {count} instances; at most {limit} are supported")]
    TooManyInstances {
        /// Instances given (or there would be).
        count: usize,
        /// The limit ([`crate::instance::MAX_INSTANCES`]).
        limit: usize,
    },
    /// A two-level scene (one with geometries) also holds primitives of its
    /// own; they belong in a geometry placed by an instance.
    #[error(
        "the scene has geometries and {count} primitives of its own: put them in a Geometry and place it with an Instance"
    )]
    LoosePrimitives {
        /// The scene's own primitives.
        count: usize,
    },
    /// A geometry without primitives.
    #[error("geometry {geometry} is empty: add at least one sphere, triangle or heightfield")]
    EmptyGeometry {
        /// Geometry id.
        geometry: usize,
    },
    /// A problem inside one geometry of a two-level scene (the inner error
    /// names the primitive, by its id within the geometry).
    #[error("geometry {geometry}: {source}")]
    InGeometry {
        /// Geometry id.
        geometry: usize,
        /// What is wrong there.
        source: alloc::boxed::Box<Error>,
    },
    /// An instance places a geometry the scene does not have.
    #[error("instance {instance}: geometry {geometry} does not exist (the scene has {count})")]
    GeometryOutOfRange {
        /// Instance index.
        instance: usize,
        /// The bad geometry id.
        geometry: u32,
        /// Geometries in the scene.
        count: usize,
    },
    /// An instance's material override names a material the scene does not have.
    #[error("instance {instance}: material {material} does not exist (the scene has {count})")]
    InstanceMaterialOutOfRange {
        /// Instance index.
        instance: usize,
        /// The bad material id.
        material: u32,
        /// Materials in the scene.
        count: usize,
    },
    /// An instance's transform is not finite, or singular or nearly so.
    #[error("instance {instance}: transform {transform:?} {reason}")]
    TransformInvalid {
        /// Instance index.
        instance: usize,
        /// The transform as rows `(m00 m01 m02 tx)`, `(m10 ...)`, `(m20 ...)`.
        transform: [[f32; 4]; 3],
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An update names an instance the scene does not have (never added, or
    /// removed).
    #[error("instance {instance} does not exist ({reason})")]
    InstanceOutOfRange {
        /// The instance index given.
        instance: u32,
        /// Why: past the last instance, or removed.
        reason: &'static str,
    },
    /// An update names a geometry the scene does not have.
    #[error("geometry {geometry} does not exist (the scene has {count})")]
    UnknownGeometry {
        /// The geometry id given.
        geometry: u32,
        /// Geometries in the scene.
        count: usize,
    },
    /// New vertices for a geometry that is not one indexed mesh.
    #[error("geometry {geometry} is not one indexed mesh, so its vertices cannot be replaced")]
    NotAMesh {
        /// Geometry id.
        geometry: u32,
    },
    /// New vertices whose count differs from the mesh's.
    #[error("geometry {geometry}: {given} new vertices for a mesh of {expected}")]
    VertexCountMismatch {
        /// Geometry id.
        geometry: u32,
        /// Vertices given.
        given: usize,
        /// Vertices the mesh has.
        expected: usize,
    },
    /// An update for a flat scene: updates move instances and geometries of
    /// a two-level scene.
    #[error(
        "the scene is flat: place its geometry with an instance to move it (updates need a two-level scene)"
    )]
    NotTwoLevel,
    /// The caller's progress sink asked to stop.
    #[error("cancelled")]
    Cancelled,
    /// A heightfield without cells (a width or depth of 0).
    #[error("heightfield of {width}x{depth} cells is empty: width and depth must be at least 1")]
    HeightfieldEmpty {
        /// Cells along x.
        width: u32,
        /// Cells along z.
        depth: u32,
    },
    /// A heightfield with more cells than a cell index can name
    /// ([`crate::heightfield::MAX_HEIGHTFIELD_CELLS`]).
    #[error("heightfield of {width}x{depth} cells is too large: at most {limit} cells")]
    HeightfieldTooLarge {
        /// Cells along x.
        width: u32,
        /// Cells along z.
        depth: u32,
        /// The limit on `width * depth`.
        limit: usize,
    },
    /// A heightfield's samples do not fill its grid: there must be `width *
    /// depth` of them, row by row (`z * width + x`).
    #[error("heightfield of {width}x{depth} cells: {given} samples given, {} needed", *width as u64 * *depth as u64)]
    HeightfieldSamples {
        /// Cells along x.
        width: u32,
        /// Cells along z.
        depth: u32,
        /// Samples given.
        given: usize,
    },
    /// A column height is NaN, infinite or negative (after the height scale,
    /// for integer samples).
    #[error("heightfield cell ({x}, {z}): height {height} must be finite and >= 0")]
    HeightfieldHeightInvalid {
        /// The cell's column along x.
        x: u32,
        /// The cell's row along z.
        z: u32,
        /// The height it would have.
        height: f32,
    },
    /// A heightfield's cell size or height scale is unusable.
    #[error("heightfield {field} = {value} is invalid: {reason}")]
    HeightfieldParameterInvalid {
        /// `cell_size` or `height_scale`.
        field: &'static str,
        /// The value given.
        value: f32,
        /// The valid range.
        reason: &'static str,
    },
    /// The heightfields of a scene hold together more height entries (their
    /// pyramids of maximum heights) than a device offset can address.
    #[error(
        "the scene's heightfields hold {entries} height entries; at most {limit} are supported"
    )]
    HeightfieldDataTooLarge {
        /// Entries needed.
        entries: u64,
        /// The limit (`u32::MAX`).
        limit: u64,
    },
    /// A frame-budget calibration could not fit its time model from the
    /// frames it measured.
    #[error("calibration of the {what} failed: {reason}")]
    Calibration {
        /// What was calibrated (`"time model"`, a backend's name).
        what: String,
        /// Why it failed.
        reason: &'static str,
    },
    /// A backend cannot trace something the scene holds (a kind of geometry
    /// its kernels do not walk), and refuses the scene rather than give
    /// wrong answers. The backends of this workspace trace every kind of
    /// geometry core has; the variant is there for backends that do not.
    #[error("backend {backend} does not support {what} yet; the CPU backend does")]
    Unsupported {
        /// Backend name.
        backend: &'static str,
        /// What it cannot trace (`"heightfield"`).
        what: &'static str,
    },
    /// A device buffer or texture of the caller's, handed to a backend to
    /// read or write on the device, does not fit the call: it lacks a usage,
    /// is too small, or its offset, size or format breaks the documented
    /// layout. Nothing was recorded.
    #[error("backend {backend}: {resource} {problem}")]
    ResourceUnfit {
        /// Backend name.
        backend: &'static str,
        /// Which of the call's resources (`"rays buffer"`, `"hits buffer"`,
        /// `"target texture"`, ...).
        resource: &'static str,
        /// What is wrong with it.
        problem: ResourceProblem,
    },
}

/// What is wrong with a caller's device resource ([`Error::ResourceUnfit`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResourceProblem {
    /// It was created without a usage the call needs.
    MissingUsage {
        /// The usage needed, as the device API names it (`"STORAGE"`).
        usage: &'static str,
    },
    /// It holds fewer bytes than the call's records need.
    TooSmall {
        /// Bytes needed from its offset.
        needed: u64,
        /// Bytes it holds from its offset.
        size: u64,
    },
    /// Its offset is not a multiple of the device's binding alignment.
    Misaligned {
        /// The offset given, in bytes.
        offset: u64,
        /// The alignment the device needs, in bytes.
        alignment: u64,
    },
    /// Its size is not a whole number of records: the count of records it
    /// holds does not match the documented record size.
    PartialRecord {
        /// Bytes it holds from its offset.
        size: u64,
        /// Bytes of one record.
        record: u64,
    },
    /// It is the same buffer as another of the call's, which the device
    /// cannot bind for reading and writing in one dispatch.
    SameBuffer {
        /// The other resource.
        other: &'static str,
    },
    /// A texture of a format or dimension the call cannot write.
    Format {
        /// What it is.
        found: String,
        /// What the call accepts.
        expected: &'static str,
    },
}

impl core::fmt::Display for ResourceProblem {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ResourceProblem::MissingUsage { usage } => {
                write!(f, "lacks the usage {usage}")
            }
            ResourceProblem::TooSmall { needed, size } => {
                write!(f, "holds {size} bytes, {needed} are needed")
            }
            ResourceProblem::Misaligned { offset, alignment } => write!(
                f,
                "starts at byte {offset}, which is not a multiple of the device's {alignment}-byte binding alignment"
            ),
            ResourceProblem::PartialRecord { size, record } => write!(
                f,
                "holds {size} bytes, not a whole number of {record}-byte records"
            ),
            ResourceProblem::SameBuffer { other } => {
                write!(f, "is the same buffer as the {other}")
            }
            ResourceProblem::Format { found, expected } => {
                write!(f, "is {found}; the call needs {expected}")
            }
        }
    }
}

/// What is wrong with a height-map image ([`Error::HeightMap`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeightMapProblem {
    /// The file cannot be opened or read.
    #[error("cannot read it: {message}")]
    Unreadable {
        /// The operating system's message.
        message: String,
    },
    /// The bytes are not a PNG image, or its data is damaged or cut short.
    #[error("cannot decode it as PNG: {message}")]
    Decode {
        /// The decoder's message.
        message: String,
    },
    /// The image has no pixels.
    #[error("it is {width}x{depth}: a height map needs at least one pixel")]
    Empty {
        /// Width in pixels (cells along x).
        width: u32,
        /// Height in pixels (cells along z).
        depth: u32,
    },
    /// The image has more pixels than the loader takes.
    #[error("it is {width}x{depth}, {cells} cells; at most {limit} are supported")]
    TooLarge {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        depth: u32,
        /// `width * depth`.
        cells: u64,
        /// The most cells taken.
        limit: u64,
    },
    /// The pixels are not heights: a palette image, or a bit depth other
    /// than 8 or 16.
    #[error("it is {found}: a height map is 8- or 16-bit grey, grey and alpha, RGB or RGBA")]
    NotGrey {
        /// What it is (`"an indexed (palette) image"`, `"4-bit grey"`).
        found: String,
    },
}

impl Error {
    /// `error` inside geometry `geometry` ([`Error::InGeometry`]).
    pub(crate) fn in_geometry(geometry: usize, error: Error) -> Error {
        Error::InGeometry {
            geometry,
            source: alloc::boxed::Box::new(error),
        }
    }
}

/// An empty vector with room for `n` items, or [`Error::HostOutOfMemory`]
/// naming `what` where the host cannot allocate it (where `Vec::with_capacity`
/// would abort).
pub(crate) fn try_vec<T>(n: usize, what: &'static str) -> Result<alloc::vec::Vec<T>, Error> {
    let mut v = alloc::vec::Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error::HostOutOfMemory {
        what,
        bytes: (n as u64).saturating_mul(core::mem::size_of::<T>() as u64),
    })?;
    Ok(v)
}
