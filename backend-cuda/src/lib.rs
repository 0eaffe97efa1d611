//! `prism_cuda` (package `prism-rt-cuda`): Prism's [`prism_core::Backend`] on NVIDIA GPUs.
//!
//! - The NVIDIA driver and NVRTC are loaded at run time through cudarc: a
//!   program using this crate starts on any machine, and
//!   [`CudaBackend::new`] returns [`prism_core::Error::BackendUnavailable`]
//!   (saying why) where there is no driver, no NVRTC or no device.
//! - The kernels (`kernels/*.cu`, `*.cuh`) mirror `prism_core` function by
//!   function, same names and operation order. NVRTC compiles them for the
//!   device's own architecture when a backend is opened; the cubin is cached on
//!   disk ([`cache_dir`]), keyed by the sources, options, NVRTC version and
//!   device. [`compile_kernels`] runs the same compilation with no GPU at all.
//! - Scene buffers are uploaded once per `set_scene`; per-frame parameters go to
//!   `__constant__` memory; frames come back through pinned memory kept across
//!   frames, in the [`prism_core::Image`]'s own format (8-bit sRGB is encoded on
//!   the device). Stage times come from CUDA events.
//! - Two-level scenes (instances of geometries, ray masks) have kernels of
//!   their own, whose walk mirrors `prism_core::two_level`; the flat kernels
//!   are untouched by them. `update_scene` uploads only what changed (instance
//!   records, the tree over them, new vertices) and refits meshes with new
//!   vertices on the device. A batch of rays can stay on the device and be
//!   traced against scene after scene
//!   ([`CudaBackend::set_resident_rays`]).
//! - Every driver failure is an [`prism_core::Error`]; nothing panics. After a
//!   kernel fault that poisons the context, the next call tries a fresh
//!   context; drivers that refuse one after such a fault (CUDA 13's does) leave
//!   every later call an error that says the backend must be recreated.
//!
//! Floating point: NVRTC's defaults (IEEE division and square root, no
//! flush-to-zero) with FMA contraction on, so results differ from core's by
//! rounding only; the watertight triangle test opts out of contraction and
//! decides inside/outside exactly as core does.
//!
//! ```no_run
//! use prism_core::{Backend, Camera, Image, Material, NoProgress, PixelFormat, RenderSettings, Scene};
//! use prism_core::glam::Vec3;
//!
//! let mut gpu = prism_cuda::CudaBackend::new()?;
//! let mut scene = Scene::new();
//! let m = scene.add_material(Material::lambertian(Vec3::splat(0.5)));
//! scene.add_sphere(Vec3::new(0.0, 0.0, -3.0), 1.0, m);
//! gpu.set_scene(&scene)?;
//! let camera = Camera::look_at(Vec3::ZERO, Vec3::NEG_Z, Vec3::Y, 60.0);
//! let mut image = Image::new(320, 240, PixelFormat::Srgba8)?;
//! let stats = gpu.render(&camera, &RenderSettings::default(), &mut image, &NoProgress)?;
//! println!("{:.1} Mrays/s", stats.mrays_per_s());
//! # Ok::<(), prism_core::Error>(())
//! ```
#![deny(missing_docs)]

mod backend;
mod cache;
mod driver;
mod kernels;
mod nvrtc;

pub use backend::{
    CudaBackend, CudaOptions, DeviceTree, FrameTimes, KernelResources, MAX_LAUNCH_RAYS,
    ResidentBench,
};
pub use cache::cache_dir;
pub use kernels::{
    CAMERA_MASKS_THREADS, CompiledKernels, FAST_BUILD_THREADS, FAST_SORT_TILE, KERNEL_BASES,
    KERNEL_CAMERA_MASKS, KERNEL_FAST_BUILD, KERNEL_HEIGHTFIELDS_ONLY, KERNEL_INTERSECT,
    KERNEL_INTERSECT_INSTANCES, KERNEL_NAMES, KERNEL_OCCLUDED, KERNEL_OCCLUDED_INSTANCES,
    KERNEL_REFIT_BOXES, KERNEL_REFIT_SLOTS, KERNEL_RENDER_AO, KERNEL_RENDER_AO_GRID,
    KERNEL_RENDER_AO_INSTANCES, KERNEL_RENDER_AO_OCTANTS, KERNEL_RENDER_PATH,
    KERNEL_RENDER_PATH_GRID, KERNEL_RENDER_PATH_INSTANCES, KERNEL_RENDER_PATH_OCTANTS,
    KERNEL_RENDER_PATH_SUN, KERNEL_RENDER_PATH_SUN_GRID, KERNEL_RENDER_PATH_SUN_INSTANCES,
    KERNEL_RENDER_PATH_SUN_OCTANTS, KERNEL_RENDER_WHITTED, KERNEL_RENDER_WHITTED_GRID,
    KERNEL_RENDER_WHITTED_INSTANCES, KERNEL_RENDER_WHITTED_OCTANTS, KernelConfig, PtxasReport,
    REFIT_THREADS, SOURCES, SceneKind, SourcePatch, compile_kernels, compile_kernels_patched,
    compile_options, kernel_name, parse_ptxas_log,
};
pub use nvrtc::nvrtc_version;
