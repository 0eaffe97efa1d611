//! Every kernel compiles through the backend's own code path (NVRTC, sm_90),
//! with no GPU and no driver. NVRTC runs on a CPU-only machine; where it is
//! absent the test says so and passes, unless `PRISM_REQUIRE_NVRTC=1` (CI), where
//! a missing NVRTC fails it.

use prism_cuda::{
    KERNEL_HEIGHTFIELDS_ONLY, KERNEL_NAMES, KernelConfig, compile_kernels, nvrtc_version,
};

/// NVRTC's version, or `None` (after saying why) when the test should skip.
fn nvrtc_or_skip() -> Option<(u32, u32)> {
    match nvrtc_version() {
        Ok(v) => Some(v),
        Err(e) => {
            let required = std::env::var("PRISM_REQUIRE_NVRTC").is_ok_and(|v| v == "1");
            assert!(
                !required,
                "PRISM_REQUIRE_NVRTC=1 but NVRTC is unavailable: {e}"
            );
            eprintln!(
                "SKIPPED: NVRTC is unavailable ({e}); set PRISM_REQUIRE_NVRTC=1 to make this a failure"
            );
            None
        }
    }
}

fn compile_and_check(config: &KernelConfig) {
    let k = match compile_kernels((9, 0), config) {
        Ok(k) => k,
        Err(e) => panic!("kernels do not compile with {config:?}:\n{e}"),
    };
    assert!(
        k.cubin.starts_with(b"\x7fELF"),
        "NVRTC did not return a cubin"
    );
    let reports = k.ptxas_reports();
    if reports.is_empty() {
        // Some NVRTC builds (the CUDA 13.0 toolkit's) return no ptxas report
        // for -v at all (KernelResources::ptxas); the cubin above is the check.
        eprintln!("NVRTC gave no ptxas report; registers and spills not listed");
        return;
    }
    for name in KERNEL_NAMES.into_iter().chain(KERNEL_HEIGHTFIELDS_ONLY) {
        let r = reports.iter().find(|r| r.name == name);
        assert!(r.is_some(), "ptxas reported nothing for {name}:\n{}", k.log);
    }
    eprintln!("{config:?}");
    for r in &reports {
        eprintln!(
            "  {:<22} {:>3} registers, {:>4} B stack, {:>3} B spill stores, {:>3} B spill loads",
            r.name, r.registers, r.stack_frame, r.spill_stores, r.spill_loads
        );
    }
}

#[test]
fn every_kernel_compiles_for_sm_90() {
    let Some(v) = nvrtc_or_skip() else { return };
    eprintln!("NVRTC {}.{}", v.0, v.1);
    compile_and_check(&KernelConfig::default());
}

#[test]
fn every_kernel_variant_compiles_for_sm_90() {
    if nvrtc_or_skip().is_none() {
        return;
    }
    // The other branches of the build-time switches.
    let d = KernelConfig::default();
    compile_and_check(&KernelConfig {
        persistent: !d.persistent,
        path_regen: !d.path_regen,
        path_defer: if d.path_defer == 0 { 16 } else { 0 },
        persistent_path: !d.persistent_path,
        trace_refill: if d.trace_refill == 0 { 16 } else { 0 },
        occluded_refill: if d.occluded_refill == 0 { 16 } else { 0 },
        lobe_branches: !d.lobe_branches,
        tree_checked_on_upload: !d.tree_checked_on_upload,
        whitted_skips_camera_rng: !d.whitted_skips_camera_rng,
        extra_options: vec![
            "-DPRISM_SLAB_INT_ENTRY=0".into(),
            "-DPRISM_LEAF_BRANCH=0".into(),
            "-DPRISM_SPHERE_LEFT_BEHIND=0".into(),
            "-DPRISM_TRACE_SHARDS=1".into(),
            "-DPRISM_CAMERA_LIST=0".into(),
            "-DPRISM_INSTANCE_TRACE_MIN_BLOCKS=8".into(),
        ],
        ..d.clone()
    });
}

#[test]
fn every_persistent_path_layout_compiles_for_sm_90() {
    if nvrtc_or_skip().is_none() {
        return;
    }
    // One lane a pixel and no tail, as against the default's shared pixels and tail.
    compile_and_check(&KernelConfig {
        path_lanes: 1,
        path_tail_64ths: 0,
        ..KernelConfig::default()
    });
}

#[test]
fn a_broken_kernel_is_a_compile_error_with_the_log() {
    if nvrtc_or_skip().is_none() {
        return;
    }
    let bad = KernelConfig {
        extra_options: vec!["--no-such-option".into()],
        ..Default::default()
    };
    match compile_kernels((9, 0), &bad) {
        Err(prism_core::Error::Compile { log, .. }) => assert!(!log.is_empty()),
        other => panic!("expected a compile error, got {other:?}"),
    }
    // A syntax error in a header: NVRTC's log names the file and the line.
    let patch: prism_cuda::SourcePatch = std::sync::Arc::new(|name: &str, src: &str| {
        if name == "rng.cuh" {
            src.replace("return (word >> 22) ^ word;", "return (word >> 22) ^ word")
        } else {
            src.to_owned()
        }
    });
    match prism_cuda::compile_kernels_patched((9, 0), &KernelConfig::default(), Some(&patch)) {
        Err(prism_core::Error::Compile {
            source_name, log, ..
        }) => {
            assert_eq!(source_name, "prism.cu");
            assert!(log.contains("rng.cuh"), "{log}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}
