//! Run-time backend selection.

use prism::{BackendChoice, Error};

#[test]
fn cpu_by_name_always_opens() {
    let o = prism::open_with_env(BackendChoice::Cpu, None).expect("cpu");
    assert_eq!(o.backend.info().name, "cpu");
    assert!(o.report().contains("cpu: using"));
}

#[test]
fn auto_reports_every_backend_it_tried() {
    let o = prism::open_with_env(BackendChoice::Auto, None).expect("auto always finds the cpu");
    let names: Vec<_> = o.attempts.iter().map(|a| a.backend).collect();
    // Auto tries in order CUDA, wgpu, CPU and stops at the first that opens.
    let taken = o.backend.info().name;
    let expected: Vec<_> = ["cuda", "wgpu", "cpu"]
        .into_iter()
        .take_while(|n| *n != taken)
        .chain([taken])
        .collect();
    assert_eq!(names, expected);
    for a in &o.attempts[..o.attempts.len() - 1] {
        assert!(
            a.outcome.as_ref().is_err_and(|why| !why.trim().is_empty()),
            "{} was skipped, so it needs a reason: {:?}",
            a.backend,
            a.outcome
        );
    }
}

#[test]
fn env_override_wins_and_is_reported() {
    let o = prism::open_with_env(BackendChoice::Auto, Some("cpu")).expect("cpu");
    assert_eq!(o.backend.info().name, "cpu");
    assert!(o.report().contains("PRISM_BACKEND=cpu"));
}

#[test]
fn unknown_backend_name_is_a_typed_error() {
    match prism::open_with_env(BackendChoice::Auto, Some("vulkan9")) {
        Err(Error::UnknownName {
            what: "backend",
            name,
            ..
        }) => assert_eq!(name, "vulkan9"),
        other => panic!("expected UnknownName, got {other:?}"),
    }
}

#[test]
fn cpu_threads_apply_whenever_the_cpu_backend_opens() {
    let options = prism::OpenOptions { cpu_threads: 1 };
    let one_thread = |o: &prism::Opened| o.backend.info().device.ends_with("(1 threads)");
    let o = prism::open_with_env_and_options(BackendChoice::Cpu, None, &options).expect("cpu");
    assert!(one_thread(&o), "{}", o.report());
    // The override picks the CPU: the option still applies.
    let o =
        prism::open_with_env_and_options(BackendChoice::Wgpu, Some("cpu"), &options).expect("cpu");
    assert!(one_thread(&o), "{}", o.report());
    // Auto applies it when it ends on the CPU.
    let o = prism::open_with_env_and_options(BackendChoice::Auto, None, &options).expect("auto");
    if o.backend.info().name == "cpu" {
        assert!(one_thread(&o), "{}", o.report());
    }
}
