//! Write the kernels' cubin as NVRTC compiles it for sm_90 with the default
//! configuration, to read with `cuobjdump -res-usage` or `-sass` (registers,
//! stack, spills, instructions) on a machine with no GPU: NVRTC alone is
//! needed (`pip install nvidia-cuda-nvrtc`, its `nvidia/cu13/lib` on
//! `LD_LIBRARY_PATH`), and `cuobjdump` comes from `pip install
//! nvidia-cuda-cuobjdump`.
//!
//! Usage: `cargo run --release -p prism-rt-cuda --example dump_cubin OUT.cubin`

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(out) = std::env::args().nth(1) else {
        eprintln!("usage: dump_cubin OUT.cubin");
        return ExitCode::from(2);
    };
    let kernels = match prism_cuda::compile_kernels((9, 0), &prism_cuda::KernelConfig::default()) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = std::fs::write(&out, &kernels.cubin) {
        eprintln!("error: cannot write {out}: {e}");
        return ExitCode::FAILURE;
    }
    println!("{out}: {} bytes", kernels.cubin.len());
    ExitCode::SUCCESS
}
