//! `prism_conformance` (package `prism-rt-conformance`): the proof behind "pick any backend, get the same answer".
//!
//! The suite takes its backends and cases from the caller (the `prism` facade
//! supplies its built-in scenes, the shared meshes with Embree's reference hits,
//! and every backend it can open) and checks:
//!
//! - **Hits** ([`hits`]): every backend's `intersect` and `occluded` on every
//!   reference ray set, against Embree's hits under prism-core's agreement rule
//!   (ties counted and reported), and every pair of backends against each other.
//! - **Generated cases** ([`generated`]): random triangle soups and sphere sets,
//!   rays through shared edges and vertices, rays leaving surfaces, scenes from
//!   1e-4 to 1e5 units, axis-parallel rays, degenerate meshes; CPU brute force
//!   with prism-core's own intersection functions is the oracle.
//! - **Instances**: Embree's instanced ray sets (`.ihits`, instance ids
//!   compared) like the flat ones; generated two-level cases (random
//!   geometries under random rotations, non-uniform scales and translations,
//!   random masks) against [`generated::instanced_brute_force`]; and refit
//!   cases ([`generated::RefitCase`]): a mesh's vertices moved through
//!   `update_scene`, every backend's hits against its own fresh build.
//! - **Images** ([`images`]): every scene with every integrator, same seed and
//!   sample count on every backend; per pair, mean absolute error, RMSE, the
//!   share of pixels off by more than 2/255, and a converged comparison of tile
//!   means at a higher sample count.
//! - **Sun**: for a scene with a sun, on each backend, next-event estimation
//!   on and off converge to the same image, and their error against a
//!   reference of many samples at equal samples and at equal time.
//! - **Determinism**: a backend rendering the same frame twice gives the same bits;
//!   its 8-bit output is its linear output encoded.
//!
//! Thresholds live in [`thresholds`], each with its reason. [`report::write_html`]
//! writes the report a person reads.
//!
//! ```
//! use prism_conformance::{Candidate, Cases, Config, run};
//!
//! // The CPU backend against the generated cases' brute-force oracle.
//! let cpu = prism_cpu::CpuBackend::new().expect("the CPU backend always opens");
//! let candidates = vec![Candidate::opened("cpu", Box::new(cpu))];
//! let report = run(candidates, &Cases::default(), &Config::quick(), &mut |line| {
//!     eprintln!("{line}")
//! });
//! assert!(report.passed(), "{}", report.summary());
//!
//! // With no backend nothing is checked, and that fails.
//! let report = run(Vec::new(), &Cases::default(), &Config::quick(), &mut |_| {});
//! assert!(!report.passed());
//! ```

#![deny(missing_docs)]

pub mod generated;
pub mod hits;
pub mod images;
mod input;
mod outcome;
pub mod report;
mod suite;
mod sun_report;
pub mod thresholds;

pub use input::{Candidate, Cases, Config, ImageCase, MeshRays, Note, RaySet};
pub use outcome::{
    BackendRender, BackendRow, BackendStatus, GeneratedRow, ImageCheck, PairCheck, Report,
    SunCheck, SunRun,
};
pub use report::{ReportError, write_html};
pub use suite::{image_settings, placed_primitives, run};
