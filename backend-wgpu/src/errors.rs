//! How device errors become [`Error`]s: every call runs inside wgpu's error
//! scopes ([`Scopes`], [`WgpuBackend::guarded`]), errors that escape to the
//! uncaptured-error handler are reported by the call they happened in, and a
//! lost device makes every later call say the backend must be recreated.

use crate::{BACKEND_NAME, WgpuBackend};
use prism_core::Error;
use std::panic::{AssertUnwindSafe, catch_unwind};

pub(crate) fn device_error(operation: &'static str, message: impl Into<String>) -> Error {
    Error::Device {
        backend: BACKEND_NAME,
        operation,
        message: message.into(),
    }
}

impl WgpuBackend {
    /// Fail if the device was lost: the backend must then be recreated.
    pub(crate) fn check_usable(&self, operation: &'static str) -> Result<(), Error> {
        let lost = self
            .lost
            .lock()
            .map(|l| l.clone())
            .unwrap_or_else(|p| p.into_inner().clone());
        match lost {
            Some(why) => Err(device_error(
                operation,
                format!("the GPU device was lost ({why}); create a new WgpuBackend"),
            )),
            None => Ok(()),
        }
    }

    /// Report and clear errors that escaped the error scopes.
    fn take_uncaptured(&self, operation: &'static str) -> Result<(), Error> {
        let mut u = self.uncaptured.lock().unwrap_or_else(|p| p.into_inner());
        if u.is_empty() {
            return Ok(());
        }
        let message = u.join("; ");
        u.clear();
        Err(device_error(operation, message))
    }

    /// Run `f` inside error scopes: out-of-memory, validation and internal
    /// errors of the device become [`Error`]s, as do errors that reach the
    /// uncaptured-error handler during the call. Errors recorded there before
    /// the call are discarded on entry, so that none is blamed on this call.
    pub(crate) fn guarded<T>(
        &mut self,
        operation: &'static str,
        f: impl FnOnce(&mut Self) -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.check_usable(operation)?;
        self.uncaptured
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        let device = self.device.clone();
        let scopes = Scopes::push(&device);
        let result = f(self);
        let ScopeErrors {
            oom,
            validation,
            internal,
        } = scopes.pop();
        if result.is_err() || internal.is_some() || validation.is_some() || oom.is_some() {
            // Let a pending device-lost callback run, so that a lost device is
            // reported as such rather than as the validation error it causes.
            let _ = catch_unwind(AssertUnwindSafe(|| device.poll(wgpu::PollType::Poll)));
            self.check_usable(operation)?;
        }
        if oom.is_some() {
            return Err(Error::OutOfMemory {
                backend: BACKEND_NAME,
                what: operation,
                bytes: 0,
            });
        }
        if let Some(e) = validation.or(internal) {
            return Err(device_error(operation, e.to_string()));
        }
        self.check_usable(operation)?;
        self.take_uncaptured(operation)?;
        result
    }
}

/// The three error scopes of a device (out of memory, validation, internal),
/// pushed together so that no kind of error escapes to the uncaptured-error
/// handler.
pub(crate) struct Scopes {
    oom: wgpu::ErrorScopeGuard,
    validation: wgpu::ErrorScopeGuard,
    internal: wgpu::ErrorScopeGuard,
}

/// What each of [`Scopes`] caught.
pub(crate) struct ScopeErrors {
    pub(crate) oom: Option<wgpu::Error>,
    pub(crate) validation: Option<wgpu::Error>,
    pub(crate) internal: Option<wgpu::Error>,
}

impl ScopeErrors {
    /// [`Error::OutOfMemory`] naming `what` if the out-of-memory scope caught
    /// an error (the allocation's size is not reported by wgpu).
    pub(crate) fn out_of_memory(&self, what: &'static str) -> Result<(), Error> {
        match self.oom {
            Some(_) => Err(Error::OutOfMemory {
                backend: BACKEND_NAME,
                what,
                bytes: 0,
            }),
            None => Ok(()),
        }
    }
}

impl Scopes {
    pub(crate) fn push(device: &wgpu::Device) -> Scopes {
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
        Scopes {
            oom,
            validation,
            internal,
        }
    }

    /// Pop the scopes, innermost first.
    pub(crate) fn pop(self) -> ScopeErrors {
        let internal = pollster::block_on(self.internal.pop());
        let validation = pollster::block_on(self.validation.pop());
        let oom = pollster::block_on(self.oom.pop());
        ScopeErrors {
            oom,
            validation,
            internal,
        }
    }
}

/// Run `f` in error scopes: out of memory becomes [`Error::OutOfMemory`], a
/// validation or internal error [`Error::Device`], each naming `operation`.
pub(crate) fn scoped<T>(
    device: &wgpu::Device,
    operation: &'static str,
    f: impl FnOnce() -> Result<T, Error>,
) -> Result<T, Error> {
    let scopes = Scopes::push(device);
    let result = f();
    let errors = scopes.pop();
    errors.out_of_memory(operation)?;
    if let Some(e) = errors.validation.or(errors.internal) {
        return Err(device_error(operation, e.to_string()));
    }
    result
}
