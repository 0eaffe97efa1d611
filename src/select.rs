//! Run-time backend selection: `open(BackendChoice)`, with `PRISM_BACKEND` to override.

use prism_core::{Backend, Error};
use std::fmt;

/// Which backend to open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendChoice {
    /// CUDA, else a hardware wgpu adapter, else the CPU.
    #[default]
    Auto,
    /// The CPU backend (always available).
    Cpu,
    /// The CUDA backend.
    Cuda,
    /// The wgpu backend; when asked for by name, software adapters (lavapipe) count.
    Wgpu,
}

impl BackendChoice {
    /// Parse `auto`, `cpu`, `cuda` or `wgpu`.
    pub fn from_name(name: &str) -> Result<Self, Error> {
        match name.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "cpu" => Ok(Self::Cpu),
            "cuda" => Ok(Self::Cuda),
            "wgpu" => Ok(Self::Wgpu),
            _ => Err(Error::UnknownName {
                what: "backend",
                name: name.into(),
                known: "auto, cpu, cuda, wgpu",
            }),
        }
    }
}

/// One backend that selection tried, and why it was taken or skipped.
#[derive(Clone, Debug)]
pub struct Attempt {
    /// Backend name.
    pub backend: &'static str,
    /// `Ok(device)` when taken, `Err(reason)` when skipped.
    pub outcome: Result<String, String>,
}

/// An opened backend and the story of how it was chosen.
pub struct Opened {
    /// The backend.
    pub backend: Box<dyn Backend + Send>,
    /// Every backend tried, in order.
    pub attempts: Vec<Attempt>,
    /// Set when `PRISM_BACKEND` overrode the caller's choice.
    pub overridden_by_env: Option<String>,
}

impl Opened {
    /// A human-readable account: which backend was taken and why others were skipped.
    pub fn report(&self) -> String {
        let mut s = String::new();
        if let Some(v) = &self.overridden_by_env {
            s.push_str(&format!(
                "PRISM_BACKEND={v} overrides the requested backend\n"
            ));
        }
        for a in &self.attempts {
            match &a.outcome {
                Ok(dev) => s.push_str(&format!("{:>5}: using {dev}\n", a.backend)),
                Err(why) => s.push_str(&format!("{:>5}: skipped: {why}\n", a.backend)),
            }
        }
        s.trim_end().to_string()
    }
}

impl fmt::Debug for Opened {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Opened")
            .field("backend", &self.backend.info())
            .field("attempts", &self.attempts)
            .finish()
    }
}

/// How to open a backend, beyond which one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Worker threads of the CPU backend, whenever it is the backend that opens
    /// (asked for by name, or reached by `Auto`); 0 means one per core. GPU
    /// backends ignore it.
    pub cpu_threads: usize,
}

/// The value of `PRISM_BACKEND` when it is set and not blank: the override
/// [`open`] and [`open_with`] apply. An unset, empty or all-blank variable is
/// no override.
pub fn env_override() -> Option<String> {
    std::env::var("PRISM_BACKEND")
        .ok()
        .filter(|v| !v.trim().is_empty())
}

/// Open a backend; `PRISM_BACKEND` (auto, cpu, cuda, wgpu), when set and not
/// blank, wins (see [`env_override`]).
pub fn open(choice: BackendChoice) -> Result<Opened, Error> {
    open_with(choice, &OpenOptions::default())
}

/// [`open`] with [`OpenOptions`]; `PRISM_BACKEND` wins as in [`open`].
pub fn open_with(choice: BackendChoice, options: &OpenOptions) -> Result<Opened, Error> {
    open_with_env_and_options(choice, env_override().as_deref(), options)
}

/// [`open`] with the override given explicitly instead of read from the environment.
pub fn open_with_env(choice: BackendChoice, env_override: Option<&str>) -> Result<Opened, Error> {
    open_with_env_and_options(choice, env_override, &OpenOptions::default())
}

/// [`open_with`] with the override given explicitly instead of read from the
/// environment.
pub fn open_with_env_and_options(
    choice: BackendChoice,
    env_override: Option<&str>,
    options: &OpenOptions,
) -> Result<Opened, Error> {
    let (choice, overridden_by_env) = match env_override {
        Some(v) => (BackendChoice::from_name(v)?, Some(v.to_string())),
        None => (choice, None),
    };
    let mut attempts = Vec::new();
    let order: &[BackendChoice] = match choice {
        BackendChoice::Auto => &[BackendChoice::Cuda, BackendChoice::Wgpu, BackendChoice::Cpu],
        BackendChoice::Cpu => &[BackendChoice::Cpu],
        BackendChoice::Cuda => &[BackendChoice::Cuda],
        BackendChoice::Wgpu => &[BackendChoice::Wgpu],
    };
    let by_name = choice != BackendChoice::Auto;
    let mut last_err = None;
    for &c in order {
        let (name, result) = try_open(c, by_name, options);
        match result {
            Ok(backend) => {
                attempts.push(Attempt {
                    backend: name,
                    outcome: Ok(backend.info().device),
                });
                return Ok(Opened {
                    backend,
                    attempts,
                    overridden_by_env,
                });
            }
            Err(e) => {
                attempts.push(Attempt {
                    backend: name,
                    outcome: Err(reason(&e)),
                });
                last_err = Some(e);
            }
        }
    }
    // ok: `order` is never empty, so the loop ran and set `last_err` if it did not return.
    Err(last_err.unwrap_or(Error::NoScene))
}

fn reason(e: &Error) -> String {
    match e {
        Error::BackendUnavailable { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}

type Opening = (&'static str, Result<Box<dyn Backend + Send>, Error>);

fn try_open(choice: BackendChoice, by_name: bool, options: &OpenOptions) -> Opening {
    match choice {
        BackendChoice::Cpu | BackendChoice::Auto => (
            "cpu",
            prism_cpu::CpuBackend::with_threads(options.cpu_threads)
                .map(|b| Box::new(b) as Box<dyn Backend + Send>),
        ),
        BackendChoice::Cuda => ("cuda", open_cuda()),
        BackendChoice::Wgpu => ("wgpu", open_wgpu(by_name)),
    }
}

#[cfg(feature = "cuda")]
fn open_cuda() -> Result<Box<dyn Backend + Send>, Error> {
    prism_cuda::CudaBackend::new().map(|b| Box::new(b) as Box<dyn Backend + Send>)
}

#[cfg(not(feature = "cuda"))]
fn open_cuda() -> Result<Box<dyn Backend + Send>, Error> {
    Err(Error::BackendUnavailable {
        backend: "cuda",
        reason: "built without the `cuda` feature".into(),
    })
}

/// Whether `PRISM_WGPU_CAMERA_MASKS=0`: the wgpu backend then opens with
/// [`prism_wgpu::WgpuOptions::camera_masks`] off, so that `prism bench` can
/// measure what the masks save.
#[cfg(feature = "wgpu")]
fn wgpu_camera_masks() -> bool {
    std::env::var("PRISM_WGPU_CAMERA_MASKS").map_or(true, |v| v != "0")
}

/// Whether `PRISM_WGPU_PERSISTENT_PATH=0`: the wgpu backend then opens with
/// [`prism_wgpu::WgpuOptions::persistent_path`] off, so that `prism bench` can
/// measure what the persistent path kernels save.
#[cfg(feature = "wgpu")]
fn wgpu_persistent_path() -> bool {
    std::env::var("PRISM_WGPU_PERSISTENT_PATH").map_or(true, |v| v != "0")
}

/// Whether `PRISM_WGPU_PERSISTENT_AO=0`: the wgpu backend then opens with
/// [`prism_wgpu::WgpuOptions::persistent_ao`] off, to measure the persistent
/// AO kernels.
#[cfg(feature = "wgpu")]
fn wgpu_persistent_ao() -> bool {
    std::env::var("PRISM_WGPU_PERSISTENT_AO").map_or(true, |v| v != "0")
}

#[cfg(feature = "wgpu")]
fn open_wgpu(allow_software: bool) -> Result<Box<dyn Backend + Send>, Error> {
    let options = prism_wgpu::WgpuOptions {
        allow_software,
        camera_masks: wgpu_camera_masks(),
        persistent_path: wgpu_persistent_path(),
        persistent_ao: wgpu_persistent_ao(),
        ..Default::default()
    };
    prism_wgpu::WgpuBackend::new(options).map(|b| Box::new(b) as Box<dyn Backend + Send>)
}

#[cfg(not(feature = "wgpu"))]
fn open_wgpu(_allow_software: bool) -> Result<Box<dyn Backend + Send>, Error> {
    Err(Error::BackendUnavailable {
        backend: "wgpu",
        reason: "built without the `wgpu` feature".into(),
    })
}
