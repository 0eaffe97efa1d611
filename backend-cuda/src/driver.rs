//! A thin, owned layer over the CUDA driver API as cudarc loads it at run time.
//!
//! cudarc's `sys` functions resolve their symbol on first call and panic when it
//! is missing, so [`load_driver`] checks the library and every symbol this
//! crate uses before anything else calls into it. Every handle here is freed by
//! its `Drop`, with this crate's context current (see `DeviceState` in
//! `backend/device.rs`); every driver status becomes a [`prism_core::Error`].

use cudarc::driver::sys;
use prism_core::Error;
use std::ffi::{CStr, CString, c_void};
use std::ptr;

/// Backend name used in errors.
pub(crate) const BACKEND: &str = "cuda";

/// Every driver entry point this crate calls, by the symbol name cudarc loads.
const DRIVER_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDeviceTotalMem_v2",
    "cuCtxCreate_v4",
    "cuCtxDestroy_v2",
    "cuCtxPushCurrent_v2",
    "cuCtxPopCurrent_v2",
    "cuCtxSynchronize",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuStreamWaitEvent",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemsetD32Async",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuModuleLoadData",
    "cuModuleUnload",
    "cuModuleGetFunction",
    "cuModuleGetGlobal_v2",
    "cuFuncGetAttribute",
    "cuOccupancyMaxActiveBlocksPerMultiprocessor",
    "cuLaunchKernel",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuEventElapsedTime_v2",
    "cuGetErrorName",
    "cuGetErrorString",
];

fn unavailable(reason: impl Into<String>) -> Error {
    Error::BackendUnavailable {
        backend: BACKEND,
        reason: reason.into(),
    }
}

/// Check that libcuda can be loaded and has every symbol this crate uses, then
/// initialise the driver. Never panics, whatever the machine has.
pub(crate) fn load_driver() -> Result<(), Error> {
    // SAFETY: is_culib_present only tries to dlopen candidate library names and
    // drops what it opened; it touches no other state.
    if !unsafe { sys::is_culib_present() } {
        return Err(unavailable(
            "no NVIDIA driver: libcuda.so could not be loaded (install the NVIDIA driver, or put its directory on LD_LIBRARY_PATH)",
        ));
    }
    // SAFETY: the library was just found, so culib() loads it instead of panicking.
    let lib = unsafe { sys::culib() };
    for name in DRIVER_SYMBOLS {
        // SAFETY: only looks the symbol up; the pointer type is never called here.
        let found = unsafe { lib.get::<unsafe extern "C" fn()>(name.as_bytes()) }.is_ok();
        if !found {
            return Err(unavailable(format!(
                "the NVIDIA driver is too old: libcuda.so has no {name} (a driver for CUDA 13.0 or newer is needed)"
            )));
        }
    }
    // SAFETY: cuInit has no preconditions; its symbol was checked above.
    let r = unsafe { sys::cuInit(0) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(unavailable(format!(
            "the CUDA driver did not initialise: {}",
            error_text(r)
        )));
    }
    Ok(())
}

/// `CUDA_ERROR_X: description` for a status code.
pub(crate) fn error_text(r: sys::CUresult) -> String {
    let mut name: *const std::ffi::c_char = ptr::null();
    let mut text: *const std::ffi::c_char = ptr::null();
    // SAFETY: both calls only write a pointer to a static string (or leave it null).
    unsafe {
        let _ = sys::cuGetErrorName(r, &mut name);
        let _ = sys::cuGetErrorString(r, &mut text);
    }
    let read = |p: *const std::ffi::c_char| {
        if p.is_null() {
            None
        } else {
            // SAFETY: the driver returns NUL-terminated static strings.
            Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        }
    };
    match (read(name), read(text)) {
        (Some(n), Some(t)) => format!("{n}: {t}"),
        (Some(n), None) => n,
        _ => format!("CUresult {}", r as i32),
    }
}

/// Turn a driver status into a `Result`; out-of-memory becomes [`Error::OutOfMemory`].
pub(crate) fn check(operation: &'static str, r: sys::CUresult) -> Result<(), Error> {
    match r {
        sys::CUresult::CUDA_SUCCESS => Ok(()),
        sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => Err(Error::OutOfMemory {
            backend: BACKEND,
            what: operation,
            bytes: 0,
        }),
        _ => Err(Error::Device {
            backend: BACKEND,
            operation,
            message: error_text(r),
        }),
    }
}

/// Number of CUDA devices.
pub(crate) fn device_count() -> Result<usize, Error> {
    let mut n = 0;
    // SAFETY: writes one int.
    check("cuDeviceGetCount", unsafe { sys::cuDeviceGetCount(&mut n) })?;
    Ok(n.max(0) as usize)
}

/// Driver version as (major, minor).
pub(crate) fn driver_version() -> Result<(u32, u32), Error> {
    let mut v = 0;
    // SAFETY: writes one int.
    check("cuDriverGetVersion", unsafe {
        sys::cuDriverGetVersion(&mut v)
    })?;
    let v = v.max(0) as u32;
    Ok((v / 1000, (v % 1000) / 10))
}

/// What the backend needs to know about its device.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct DeviceProps {
    pub name: String,
    pub arch: (u32, u32),
    pub sms: u32,
    pub max_threads_per_sm: u32,
    pub total_mem: u64,
}

/// A device handle (an ordinal checked against the device count).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Device(sys::CUdevice);

impl Device {
    pub(crate) fn get(ordinal: usize) -> Result<Device, Error> {
        let mut d: sys::CUdevice = 0;
        let ordinal =
            i32::try_from(ordinal).map_err(|_| unavailable("device ordinal out of range"))?;
        // SAFETY: writes one device handle.
        check("cuDeviceGet", unsafe { sys::cuDeviceGet(&mut d, ordinal) })?;
        Ok(Device(d))
    }

    fn attribute(self, a: sys::CUdevice_attribute) -> Result<i32, Error> {
        let mut v = 0;
        // SAFETY: writes one int for a valid device handle.
        check("cuDeviceGetAttribute", unsafe {
            sys::cuDeviceGetAttribute(&mut v, a, self.0)
        })?;
        Ok(v)
    }

    pub(crate) fn props(self) -> Result<DeviceProps, Error> {
        let mut buf = [0 as std::ffi::c_char; 256];
        // SAFETY: the driver writes at most `len` bytes including the NUL.
        check("cuDeviceGetName", unsafe {
            sys::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as i32, self.0)
        })?;
        let bytes: Vec<u8> = buf
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        let name = String::from_utf8_lossy(&bytes).into_owned();
        use sys::CUdevice_attribute::*;
        let major = self.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = self.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let sms = self.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        let max_threads_per_sm =
            self.attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?;
        let mut total = 0usize;
        // SAFETY: writes one size.
        check("cuDeviceTotalMem", unsafe {
            sys::cuDeviceTotalMem_v2(&mut total, self.0)
        })?;
        Ok(DeviceProps {
            name,
            arch: (major.max(0) as u32, minor.max(0) as u32),
            sms: sms.max(1) as u32,
            max_threads_per_sm: max_threads_per_sm.max(32) as u32,
            total_mem: total as u64,
        })
    }
}

/// A CUDA context owned by this crate (not the device's primary context), so a
/// kernel fault that poisons it can be recovered from by creating a new one
/// without touching the application's own CUDA state.
pub(crate) struct Context(sys::CUcontext);

impl Context {
    pub(crate) fn create(device: Device) -> Result<Context, Error> {
        let mut ctx: sys::CUcontext = ptr::null_mut();
        // SAFETY: null creation parameters ask for a plain context; on success the
        // new context is current on this thread and is popped right below.
        check("cuCtxCreate", unsafe {
            sys::cuCtxCreate_v4(&mut ctx, ptr::null_mut(), 0, device.0)
        })?;
        let owned = Context(ctx);
        let mut popped: sys::CUcontext = ptr::null_mut();
        // SAFETY: pops the context cuCtxCreate pushed, restoring the caller's stack.
        check("cuCtxPopCurrent", unsafe {
            sys::cuCtxPopCurrent_v2(&mut popped)
        })?;
        Ok(owned)
    }

    /// Make this context current until the guard drops (push/pop, so the
    /// application's current context is restored afterwards).
    pub(crate) fn enter(&self) -> Result<CtxGuard, Error> {
        // SAFETY: the handle is a live context owned by self.
        check("cuCtxPushCurrent", unsafe {
            sys::cuCtxPushCurrent_v2(self.0)
        })?;
        Ok(CtxGuard(()))
    }

    /// Push without a guard; the context's destruction pops it (used by drops).
    pub(crate) fn push_for_teardown(&self) {
        // SAFETY: see `enter`; the matching pop happens in cuCtxDestroy.
        let _ = unsafe { sys::cuCtxPushCurrent_v2(self.0) };
    }

    /// Wait for all work; an error here means the context is unusable (a sticky
    /// fault such as an illegal address) or the device was lost.
    pub(crate) fn synchronize(&self) -> Result<(), Error> {
        // SAFETY: called with this context current.
        check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: destroys the context this value owns; if it is current on this
        // thread it is popped as well. Errors cannot be reported from drop.
        let _ = unsafe { sys::cuCtxDestroy_v2(self.0) };
    }
}

/// Pops the context pushed by [`Context::enter`].
pub(crate) struct CtxGuard(());

impl Drop for CtxGuard {
    fn drop(&mut self) {
        let mut popped: sys::CUcontext = ptr::null_mut();
        // SAFETY: pops the context pushed by `enter` on this thread.
        let _ = unsafe { sys::cuCtxPopCurrent_v2(&mut popped) };
    }
}

/// Device memory. Allocated and freed with the owning context current.
pub(crate) struct DeviceBuffer {
    ptr: sys::CUdeviceptr,
    bytes: usize,
}

impl DeviceBuffer {
    /// Allocate `bytes` (at least 16). Contents are undefined until written;
    /// nothing reads a buffer before the device or an upload fills it.
    pub(crate) fn alloc(bytes: usize, what: &'static str) -> Result<DeviceBuffer, Error> {
        let bytes = bytes.max(16);
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: writes one device pointer.
        let r = unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) };
        match r {
            sys::CUresult::CUDA_SUCCESS => Ok(DeviceBuffer { ptr, bytes }),
            sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => Err(Error::OutOfMemory {
                backend: BACKEND,
                what,
                bytes: bytes as u64,
            }),
            _ => Err(Error::Device {
                backend: BACKEND,
                operation: "cuMemAlloc",
                message: error_text(r),
            }),
        }
    }

    /// Device address.
    pub(crate) fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// Size in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Copy `data` to the start of the buffer, in stream order, and wait for
    /// the stream: `data` is pageable host memory, which the driver may still
    /// read after an asynchronous copy returns, so the copy is complete before
    /// the caller can free or change it.
    pub(crate) fn upload(&mut self, stream: &Stream, data: &[u8]) -> Result<(), Error> {
        if data.len() > self.bytes {
            return Err(Error::Device {
                backend: BACKEND,
                operation: "upload",
                message: format!("{} bytes do not fit a buffer of {}", data.len(), self.bytes),
            });
        }
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: the destination holds at least data.len() bytes (checked above);
        // the source slice is valid for reads of its length, and stays borrowed
        // until the stream is synchronised below, after the copy has run.
        let copied = unsafe {
            sys::cuMemcpyHtoDAsync_v2(self.ptr, data.as_ptr().cast(), data.len(), stream.0)
        };
        let synced = stream.synchronize();
        check("cuMemcpyHtoDAsync", copied)?;
        synced
    }

    /// Copy the first `out.len()` bytes to `out`, waiting for completion.
    pub(crate) fn download(&self, stream: &Stream, out: &mut [u8]) -> Result<(), Error> {
        self.download_from(stream, 0, out)
    }

    /// Copy `out.len()` bytes from byte `offset` on to `out`, waiting for
    /// completion.
    pub(crate) fn download_from(
        &self,
        stream: &Stream,
        offset: usize,
        out: &mut [u8],
    ) -> Result<(), Error> {
        if offset
            .checked_add(out.len())
            .is_none_or(|end| end > self.bytes)
        {
            return Err(Error::Device {
                backend: BACKEND,
                operation: "download",
                message: format!(
                    "{} bytes from byte {offset} asked of a buffer of {}",
                    out.len(),
                    self.bytes
                ),
            });
        }
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: the source holds at least offset + out.len() bytes (checked
        // above); `out` is valid for writes; the stream is synchronised before
        // `out` is given back.
        check("cuMemcpyDtoHAsync", unsafe {
            sys::cuMemcpyDtoHAsync_v2(
                out.as_mut_ptr().cast(),
                self.ptr + offset as u64,
                out.len(),
                stream.0,
            )
        })?;
        stream.synchronize()
    }

    /// Set the first `words` 32-bit words to `value`.
    pub(crate) fn fill_u32(
        &mut self,
        stream: &Stream,
        value: u32,
        words: usize,
    ) -> Result<(), Error> {
        let words = words.min(self.bytes / 4);
        // SAFETY: writes `words` words inside the allocation.
        check("cuMemsetD32Async", unsafe {
            sys::cuMemsetD32Async(self.ptr, value, words, stream.0)
        })
    }
}

impl DeviceBuffer {
    /// Set `words` 32-bit words from word `first` on to `value` (stream-ordered).
    pub(crate) fn fill_u32_from(
        &mut self,
        stream: &Stream,
        value: u32,
        first: usize,
        words: usize,
    ) -> Result<(), Error> {
        let first = first.min(self.bytes / 4);
        let words = words.min(self.bytes / 4 - first);
        // SAFETY: writes `words` words from word `first`, inside the allocation.
        check("cuMemsetD32Async", unsafe {
            sys::cuMemsetD32Async(self.ptr + 4 * first as u64, value, words, stream.0)
        })
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: frees the allocation this value owns; the owning context is
        // current (entry points hold a CtxGuard, DeviceState's drop pushes it).
        let _ = unsafe { sys::cuMemFree_v2(self.ptr) };
    }
}

/// Page-locked host memory (not write-combined: the host reads it back).
pub(crate) struct PinnedBuffer {
    ptr: *mut u8,
    bytes: usize,
}

impl PinnedBuffer {
    pub(crate) fn alloc(bytes: usize, what: &'static str) -> Result<PinnedBuffer, Error> {
        let bytes = bytes.max(16);
        let mut p: *mut c_void = ptr::null_mut();
        // SAFETY: writes one host pointer.
        let r = unsafe { sys::cuMemHostAlloc(&mut p, bytes, 0) };
        match r {
            sys::CUresult::CUDA_SUCCESS if !p.is_null() => {
                // SAFETY: p points to `bytes` fresh bytes; zeroing them means the
                // slice views below never expose uninitialised memory.
                unsafe { ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
                Ok(PinnedBuffer {
                    ptr: p.cast(),
                    bytes,
                })
            }
            // Page-locked host memory ran out: the host's, not the device's.
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                Err(Error::HostOutOfMemory {
                    what,
                    bytes: bytes as u64,
                })
            }
            _ => Err(Error::Device {
                backend: BACKEND,
                operation: "cuMemHostAlloc",
                message: error_text(r),
            }),
        }
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    /// `len` bytes from `offset`, or `None` outside the buffer. Callers first
    /// wait for the copies that write this range; other ranges may still be
    /// written by the device meanwhile, which is why no whole-buffer view exists.
    pub(crate) fn range(&self, offset: usize, len: usize) -> Option<&[u8]> {
        if offset.checked_add(len)? > self.bytes {
            return None;
        }
        // SAFETY: the range lies inside the allocation, whose bytes were zeroed
        // at allocation and are only written by completed device copies; &self
        // rules out host writes while the slice lives.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.add(offset), len) })
    }

    /// `len` bytes from `offset` to write, or `None` outside the buffer.
    /// Callers write a range only while no device copy reads it (staging
    /// buffers are written before their copies are enqueued, and again only
    /// after those copies have been waited for).
    pub(crate) fn range_mut(&mut self, offset: usize, len: usize) -> Option<&mut [u8]> {
        if offset.checked_add(len)? > self.bytes {
            return None;
        }
        // SAFETY: the range lies inside the allocation (checked above), whose
        // bytes were zeroed at allocation; &mut self rules out other host
        // views while the slice lives, and the caller's contract rules out
        // device copies of the range meanwhile.
        Some(unsafe { std::slice::from_raw_parts_mut(self.ptr.add(offset), len) })
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        // SAFETY: frees the allocation this value owns (context current, see DeviceBuffer).
        let _ = unsafe { sys::cuMemFreeHost(self.ptr.cast()) };
    }
}

/// A non-blocking stream.
pub(crate) struct Stream(sys::CUstream);

impl Stream {
    pub(crate) fn create() -> Result<Stream, Error> {
        let mut s: sys::CUstream = ptr::null_mut();
        // SAFETY: writes one stream handle.
        check("cuStreamCreate", unsafe {
            sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)
        })?;
        Ok(Stream(s))
    }

    pub(crate) fn raw(&self) -> sys::CUstream {
        self.0
    }

    pub(crate) fn synchronize(&self) -> Result<(), Error> {
        // SAFETY: waits on a live stream.
        check("cuStreamSynchronize", unsafe {
            sys::cuStreamSynchronize(self.0)
        })
    }

    /// Make later work on this stream wait for `event`.
    pub(crate) fn wait(&self, event: &Event) -> Result<(), Error> {
        // SAFETY: both handles are live.
        check("cuStreamWaitEvent", unsafe {
            sys::cuStreamWaitEvent(self.0, event.0, 0)
        })
    }
}

/// Waits for a stream when dropped: a frame that fails between two launches
/// on it leaves no kernel running when the call returns.
pub(crate) struct StreamJoin(sys::CUstream);

impl StreamJoin {
    /// A guard for `stream`, which must outlive it (the backend's streams live
    /// in its device state; a guard lives within one call).
    pub(crate) fn new(stream: &Stream) -> StreamJoin {
        StreamJoin(stream.0)
    }
}

impl Drop for StreamJoin {
    fn drop(&mut self) {
        // SAFETY: the stream outlives the guard (see `new`); waiting on a live
        // stream has no other effect, and an error is one the next call on
        // the stream reports.
        let _ = unsafe { sys::cuStreamSynchronize(self.0) };
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: destroys the stream this value owns.
        let _ = unsafe { sys::cuStreamDestroy_v2(self.0) };
    }
}

/// A timing event.
pub(crate) struct Event(sys::CUevent);

impl Event {
    pub(crate) fn create() -> Result<Event, Error> {
        let mut e: sys::CUevent = ptr::null_mut();
        // SAFETY: writes one event handle.
        check("cuEventCreate", unsafe {
            sys::cuEventCreate(&mut e, sys::CUevent_flags::CU_EVENT_DEFAULT as u32)
        })?;
        Ok(Event(e))
    }

    pub(crate) fn record(&self, stream: &Stream) -> Result<(), Error> {
        // SAFETY: both handles are live.
        check("cuEventRecord", unsafe {
            sys::cuEventRecord(self.0, stream.0)
        })
    }

    pub(crate) fn synchronize(&self) -> Result<(), Error> {
        // SAFETY: waits on a live event.
        check("cuEventSynchronize", unsafe {
            sys::cuEventSynchronize(self.0)
        })
    }

    /// Milliseconds from `self` to `end` (both recorded and complete).
    pub(crate) fn elapsed_ms(&self, end: &Event) -> Result<f32, Error> {
        let mut ms = 0.0f32;
        // SAFETY: writes one float; both events are live.
        check("cuEventElapsedTime", unsafe {
            sys::cuEventElapsedTime_v2(&mut ms, self.0, end.0)
        })?;
        Ok(ms.max(0.0))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: destroys the event this value owns.
        let _ = unsafe { sys::cuEventDestroy_v2(self.0) };
    }
}

/// A loaded module (cubin).
pub(crate) struct Module(sys::CUmodule);

impl Module {
    pub(crate) fn load(image: &[u8]) -> Result<Module, Error> {
        let mut m: sys::CUmodule = ptr::null_mut();
        // SAFETY: `image` is a complete cubin (an ELF image; the driver reads
        // its length from the header and validates it) that outlives the call.
        check("cuModuleLoadData", unsafe {
            sys::cuModuleLoadData(&mut m, image.as_ptr().cast())
        })?;
        Ok(Module(m))
    }

    pub(crate) fn function(&self, name: &str) -> Result<Function, Error> {
        let c = CString::new(name).map_err(|_| Error::Device {
            backend: BACKEND,
            operation: "cuModuleGetFunction",
            message: format!("bad kernel name {name:?}"),
        })?;
        let mut f: sys::CUfunction = ptr::null_mut();
        // SAFETY: the module is live and the name NUL-terminated.
        check("cuModuleGetFunction", unsafe {
            sys::cuModuleGetFunction(&mut f, self.0, c.as_ptr())
        })?;
        Ok(Function(f))
    }

    /// Address and size of a `__device__` / `__constant__` variable.
    pub(crate) fn global(&self, name: &str) -> Result<(sys::CUdeviceptr, usize), Error> {
        let c = CString::new(name).map_err(|_| Error::Device {
            backend: BACKEND,
            operation: "cuModuleGetGlobal",
            message: format!("bad symbol name {name:?}"),
        })?;
        let mut p: sys::CUdeviceptr = 0;
        let mut bytes = 0usize;
        // SAFETY: the module is live and the name NUL-terminated.
        check("cuModuleGetGlobal", unsafe {
            sys::cuModuleGetGlobal_v2(&mut p, &mut bytes, self.0, c.as_ptr())
        })?;
        Ok((p, bytes))
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: unloads the module this value owns.
        let _ = unsafe { sys::cuModuleUnload(self.0) };
    }
}

/// A kernel of a loaded module (valid while the module lives).
#[derive(Clone, Copy)]
pub(crate) struct Function(sys::CUfunction);

impl Function {
    pub(crate) fn attribute(self, a: sys::CUfunction_attribute) -> Result<i32, Error> {
        let mut v = 0;
        // SAFETY: writes one int for a live function.
        check("cuFuncGetAttribute", unsafe {
            sys::cuFuncGetAttribute(&mut v, a, self.0)
        })?;
        Ok(v)
    }

    /// Resident blocks per multiprocessor at `block_threads` threads per block.
    pub(crate) fn blocks_per_sm(self, block_threads: u32) -> Result<u32, Error> {
        let mut n = 0;
        // SAFETY: writes one int for a live function.
        check("cuOccupancyMaxActiveBlocksPerMultiprocessor", unsafe {
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut n,
                self.0,
                block_threads as i32,
                0,
            )
        })?;
        Ok(n.max(0) as u32)
    }

    /// Launch on `stream`.
    ///
    /// # Safety
    /// `params` must hold one pointer per kernel parameter, in order, each to a
    /// value of exactly the parameter's type and layout, and every device
    /// pointer among them must be valid for what the kernel does with it.
    pub(crate) unsafe fn launch(
        self,
        grid: (u32, u32),
        block: (u32, u32),
        stream: &Stream,
        params: &mut [*mut c_void],
    ) -> Result<(), Error> {
        // SAFETY: forwarded to the caller's contract.
        check("cuLaunchKernel", unsafe {
            sys::cuLaunchKernel(
                self.0,
                grid.0,
                grid.1,
                1,
                block.0,
                block.1,
                1,
                0,
                stream.0,
                params.as_mut_ptr(),
                ptr::null_mut(),
            )
        })
    }
}

/// Copy `bytes` from device `src + offset` into pinned `dst + offset`, stream-ordered.
///
/// # Safety
/// Both ranges must lie inside their allocations, and `dst` must not be read
/// until the copy is complete (an event recorded after it has been waited on).
pub(crate) unsafe fn copy_to_pinned(
    dst: &mut PinnedBuffer,
    src: &DeviceBuffer,
    offset: usize,
    bytes: usize,
    stream: &Stream,
) -> Result<(), Error> {
    if offset + bytes > dst.bytes() || offset + bytes > src.bytes() {
        return Err(Error::Device {
            backend: BACKEND,
            operation: "cuMemcpyDtoHAsync",
            message: "copy range outside the buffers".into(),
        });
    }
    // SAFETY: ranges checked above; the caller waits before reading.
    check("cuMemcpyDtoHAsync", unsafe {
        sys::cuMemcpyDtoHAsync_v2(
            dst.as_mut_ptr().add(offset).cast(),
            src.ptr() + offset as u64,
            bytes,
            stream.raw(),
        )
    })
}

/// Copy `bytes` from pinned `src + src_offset` to device `dst + dst_offset`,
/// stream-ordered.
///
/// # Safety
/// `src` must not be written until the copy is complete (an event recorded
/// after it has been waited on); nothing on the device may read the
/// destination range before the copy in stream order.
pub(crate) unsafe fn copy_from_pinned(
    dst: &DeviceBuffer,
    dst_offset: usize,
    src: &PinnedBuffer,
    src_offset: usize,
    bytes: usize,
    stream: &Stream,
) -> Result<(), Error> {
    let inside = |offset: usize, size: usize| offset.checked_add(bytes).is_some_and(|e| e <= size);
    if !inside(dst_offset, dst.bytes()) || !inside(src_offset, src.bytes()) {
        return Err(Error::Device {
            backend: BACKEND,
            operation: "cuMemcpyHtoDAsync",
            message: "copy range outside the buffers".into(),
        });
    }
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: ranges checked above; the caller keeps the source unchanged
    // until the copy is complete.
    check("cuMemcpyHtoDAsync", unsafe {
        sys::cuMemcpyHtoDAsync_v2(
            dst.ptr() + dst_offset as u64,
            src.ptr.add(src_offset).cast(),
            bytes,
            stream.raw(),
        )
    })
}
