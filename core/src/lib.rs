//! `prism_core` (package `prism-rt-core`): the single source of truth of Prism.
//!
//! Everything a backend needs to trace rays lives here, in `#![no_std]` + `alloc`
//! Rust: the scene as structure-of-arrays ([`scene`]), the binned-SAH BVH
//! ([`bvh`]) and its flattened GPU layout ([`gpu`]), intersection and traversal
//! ([`intersect`], [`traverse`]), heightfields and their walk
//! ([`heightfield`]), candidate lists for rays through one point
//! ([`point_grid`]) and for camera rays ([`camera_bounds`]), PCG random numbers ([`rng`]), sampling
//! ([`sampling`]), branchless materials ([`material`]), the sun ([`sun`]), the thin-lens camera
//! ([`camera`]), the integrators ([`integrator`]), frame budgets ([`tune`]) and the [`Backend`] trait.
//!
//! GPU kernels (CUDA, WGSL) mirror these functions one for one, with the same
//! names and the same operation order, so every backend traces the same paths.
//!
//! ```
//! use prism_core::{Scene, Material, Ray, Hit, Accel};
//! use glam::Vec3;
//!
//! let mut scene = Scene::new();
//! let red = scene.add_material(Material::lambertian(Vec3::new(0.8, 0.1, 0.1)));
//! scene.add_sphere(Vec3::new(0.0, 0.0, -3.0), 1.0, red);
//! let accel = Accel::build(&scene)?;
//! let hit = accel.intersect(&Ray::new(Vec3::ZERO, Vec3::NEG_Z));
//! assert!(hit.is_hit());
//! assert!((hit.t - 2.0).abs() < 1e-5);
//! # Ok::<(), prism_core::Error>(())
//! ```
#![no_std]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod aabb;
pub mod accel;
pub mod backend;
pub mod bvh;
pub mod camera;
pub mod camera_bounds;
pub mod cell_grid;
pub mod error;
pub mod geometry;
pub mod gpu;
pub mod heightfield;
pub mod image;
pub mod instance;
pub mod integrator;
pub mod intersect;
pub mod lbvh;
pub mod material;
pub mod outline;
pub mod placement;
pub mod ploc;
pub mod point_grid;
pub mod ray;
pub mod reference;
pub mod rng;
pub mod sampling;
pub mod scene;
pub mod sun;
pub mod top_level;
pub mod traverse;
pub mod tune;
pub mod two_level;
pub mod update;

pub use aabb::Aabb;
pub use backend::{
    Backend, BackendInfo, Integrator, NoProgress, Progress, RenderSettings, RenderStats,
    TimingSource, TreeBytes, UpdateStats, ao_extra_threshold,
};
pub use camera::Camera;
pub use error::{Error, HeightMapProblem, ResourceProblem};
pub use geometry::Geometry;
pub use glam;
pub use heightfield::{Heightfield, face_normal};
pub use image::{Image, PixelFormat};
pub use instance::Instance;
pub use lbvh::BuildQuality;
pub use material::Material;
pub use placement::GpuMove;
pub use ray::{Hit, Ray};
pub use scene::{PointLight, Scene, Sky};
pub use sun::Sun;
pub use top_level::TopLevelBuild;
pub use traverse::Accel;
pub use update::{Changes, GeometrySah, RefitOn, SceneUpdate};
