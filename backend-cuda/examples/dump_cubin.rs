fn main() {
    let k = prism_cuda::compile_kernels((9, 0), &prism_cuda::KernelConfig::default()).unwrap();
    std::fs::write(std::env::args().nth(1).unwrap(), &k.cubin).unwrap();
}
