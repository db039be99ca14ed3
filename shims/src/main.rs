//! The gpuenv proxy (`nvcc`, `hipcc` and the other toolchain tools). For now it only says
//! it is not ready; the proxy issue fills it in: resolve, guard, exec.

fn main() -> std::process::ExitCode {
    eprintln!("gpuenv-shim: the proxy is not built yet; run the tool through `gpuenv run <spec> -- <tool>`");
    std::process::ExitCode::from(2)
}
