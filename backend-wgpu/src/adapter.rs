//! Finding adapters: which graphics APIs are searched, what [`adapters`] lists
//! ([`AdapterSummary`]), and the order in which [`WgpuBackend::new`](crate::WgpuBackend::new)
//! prefers hardware adapters.

use crate::device::Lifecycle;

/// One adapter as [`adapters`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterSummary {
    /// Adapter name, e.g. "NVIDIA H100 80GB HBM3" or "llvmpipe (LLVM 15.0.6, 256 bits)".
    pub name: String,
    /// Graphics API: Vulkan, Metal, Dx12.
    pub api: String,
    /// Device type: DiscreteGpu, IntegratedGpu, VirtualGpu, Cpu, Other.
    pub device_type: String,
    /// Driver name and version.
    pub driver: String,
    /// Whether this is a software implementation (device type Cpu).
    pub software: bool,
}

impl std::fmt::Display for AdapterSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}, {})", self.name, self.api, self.device_type)
    }
}

pub(crate) fn summary(info: &wgpu::AdapterInfo) -> AdapterSummary {
    AdapterSummary {
        name: info.name.clone(),
        api: format!("{:?}", info.backend),
        device_type: format!("{:?}", info.device_type),
        driver: format!("{} {}", info.driver, info.driver_info)
            .trim()
            .to_string(),
        software: info.device_type == wgpu::DeviceType::Cpu,
    }
}

/// The graphics APIs searched: Vulkan, Metal, DX12 (not GL, whose compute
/// support is partial); the `WGPU_BACKEND` environment variable overrides.
pub(crate) fn searched_backends() -> wgpu::Backends {
    wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY)
}

pub(crate) fn new_instance() -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = searched_backends();
    wgpu::Instance::new(desc)
}

/// Every adapter wgpu finds on this machine (none when no driver is installed).
pub fn adapters() -> Vec<AdapterSummary> {
    // An instance is made and dropped here too, so under the same lock as a
    // backend's (see `Lifecycle`).
    let _lifecycle = Lifecycle::acquire();
    let instance = new_instance();
    pollster::block_on(instance.enumerate_adapters(searched_backends()))
        .iter()
        .map(|a| summary(&a.get_info()))
        .collect()
}

/// Preference among hardware adapters: discrete, integrated, virtual, other.
pub(crate) fn adapter_rank(info: &wgpu::AdapterInfo) -> u32 {
    match info.device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    }
}
