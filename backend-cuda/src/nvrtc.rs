//! NVRTC, loaded at run time: check it is there, report its version, compile a
//! program made of in-memory files to a cubin.

use crate::driver::BACKEND;
use cudarc::nvrtc::sys;
use prism_core::Error;
use std::ffi::{CStr, CString, c_char};
use std::ptr;

/// Every NVRTC entry point this crate calls.
const NVRTC_SYMBOLS: &[&str] = &[
    "nvrtcVersion",
    "nvrtcCreateProgram",
    "nvrtcCompileProgram",
    "nvrtcDestroyProgram",
    "nvrtcGetCUBINSize",
    "nvrtcGetCUBIN",
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
    "nvrtcGetErrorString",
];

/// Check that libnvrtc can be loaded and has every symbol used here; returns its
/// version `(major, minor)`. Never panics.
pub fn nvrtc_version() -> Result<(u32, u32), Error> {
    let unavailable = |reason: String| Error::BackendUnavailable {
        backend: BACKEND,
        reason,
    };
    // SAFETY: is_culib_present only tries to dlopen candidate library names.
    if !unsafe { sys::is_culib_present() } {
        return Err(unavailable(
            "NVRTC not found: libnvrtc.so could not be loaded (install the CUDA toolkit's NVRTC, or \
             `pip install nvidia-cuda-nvrtc` and put its nvidia/cu13/lib directory on LD_LIBRARY_PATH)"
                .into(),
        ));
    }
    // SAFETY: the library was just found, so culib() loads it instead of panicking.
    let lib = unsafe { sys::culib() };
    for name in NVRTC_SYMBOLS {
        // SAFETY: only looks the symbol up.
        if unsafe { lib.get::<unsafe extern "C" fn()>(name.as_bytes()) }.is_err() {
            return Err(unavailable(format!(
                "libnvrtc.so has no {name}: NVRTC 12 or newer is needed"
            )));
        }
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: writes two ints; the symbol was checked above.
    let r = unsafe { sys::nvrtcVersion(&mut major, &mut minor) };
    if r != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(unavailable(format!(
            "nvrtcVersion failed: {}",
            result_text(r)
        )));
    }
    Ok((major.max(0) as u32, minor.max(0) as u32))
}

fn result_text(r: sys::nvrtcResult) -> String {
    // SAFETY: returns a pointer to a static NUL-terminated string (or null).
    let p = unsafe { sys::nvrtcGetErrorString(r) };
    if p.is_null() {
        format!("nvrtcResult {}", r as i32)
    } else {
        // SAFETY: see above.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// A compiled program: the cubin and NVRTC's log (ptxas' resource report with
/// `--ptxas-options=-v`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Compiled {
    pub cubin: Vec<u8>,
    pub log: String,
}

struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: destroys the program this value owns.
        let _ = unsafe { sys::nvrtcDestroyProgram(&mut self.0) };
    }
}

impl Program {
    fn log(&self) -> String {
        let mut size = 0usize;
        // SAFETY: writes one size for a live program.
        if unsafe { sys::nvrtcGetProgramLogSize(self.0, &mut size) }
            != sys::nvrtcResult::NVRTC_SUCCESS
            || size == 0
        {
            return String::new();
        }
        let mut buf = vec![0u8; size];
        // SAFETY: buf holds `size` bytes as NVRTC asked.
        if unsafe { sys::nvrtcGetProgramLog(self.0, buf.as_mut_ptr().cast::<c_char>()) }
            != sys::nvrtcResult::NVRTC_SUCCESS
        {
            return String::new();
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).trim_end().to_owned()
    }
}

/// Compile `main` (name, source) with `headers` (include name, source) available
/// to `#include "name"`, using `options`. Errors carry NVRTC's log.
pub(crate) fn compile(
    main: (&str, &str),
    headers: &[(&str, String)],
    options: &[String],
) -> Result<Compiled, Error> {
    let compile_error = |log: String| Error::Compile {
        backend: BACKEND,
        source_name: main.0.to_owned(),
        log,
    };
    let cstr = |s: &str, what: &str| {
        CString::new(s).map_err(|_| compile_error(format!("{what} {s:?} contains a NUL byte")))
    };
    let src = CString::new(main.1)
        .map_err(|_| compile_error(format!("{} contains a NUL byte", main.0)))?;
    let name = cstr(main.0, "file name")?;
    let mut header_src = Vec::with_capacity(headers.len());
    let mut header_names = Vec::with_capacity(headers.len());
    for (n, s) in headers {
        header_names.push(cstr(n, "header name")?);
        header_src.push(
            CString::new(s.as_str())
                .map_err(|_| compile_error(format!("{n} contains a NUL byte")))?,
        );
    }
    let header_src_ptrs: Vec<*const c_char> = header_src.iter().map(|c| c.as_ptr()).collect();
    let header_name_ptrs: Vec<*const c_char> = header_names.iter().map(|c| c.as_ptr()).collect();
    let opts: Vec<CString> = options
        .iter()
        .map(|o| cstr(o, "option"))
        .collect::<Result<_, _>>()?;
    let opt_ptrs: Vec<*const c_char> = opts.iter().map(|c| c.as_ptr()).collect();

    let mut raw: sys::nvrtcProgram = ptr::null_mut();
    // SAFETY: every pointer is a NUL-terminated string that outlives the call;
    // the two header arrays have headers.len() entries.
    let r = unsafe {
        sys::nvrtcCreateProgram(
            &mut raw,
            src.as_ptr(),
            name.as_ptr(),
            headers.len() as i32,
            header_src_ptrs.as_ptr(),
            header_name_ptrs.as_ptr(),
        )
    };
    if r != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(compile_error(format!(
            "nvrtcCreateProgram failed: {}",
            result_text(r)
        )));
    }
    let prog = Program(raw);
    // SAFETY: the program is live; the options array has opt_ptrs.len() strings.
    let r = unsafe { sys::nvrtcCompileProgram(prog.0, opt_ptrs.len() as i32, opt_ptrs.as_ptr()) };
    let log = prog.log();
    if r != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(compile_error(format!("{}\n{log}", result_text(r))));
    }
    let mut size = 0usize;
    // SAFETY: writes one size for a compiled program.
    let r = unsafe { sys::nvrtcGetCUBINSize(prog.0, &mut size) };
    if r != sys::nvrtcResult::NVRTC_SUCCESS || size == 0 {
        return Err(compile_error(format!(
            "no cubin produced ({}); the architecture option must name a real GPU (sm_XY)\n{log}",
            result_text(r)
        )));
    }
    let mut cubin = vec![0u8; size];
    // SAFETY: cubin holds `size` bytes as NVRTC asked.
    let r = unsafe { sys::nvrtcGetCUBIN(prog.0, cubin.as_mut_ptr().cast::<c_char>()) };
    if r != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(compile_error(format!(
            "nvrtcGetCUBIN failed: {}",
            result_text(r)
        )));
    }
    Ok(Compiled { cubin, log })
}
