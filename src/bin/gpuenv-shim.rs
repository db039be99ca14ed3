//! The gpuenv proxy, installed as `$GPUENV_HOME/shims/<tool>` and as each view's
//! `bin/nvcc` / `bin/hipcc`. All of its logic is `gpuenv_core::proxy`; this links nothing else.

fn main() -> std::process::ExitCode {
    gpuenv_core::proxy::main()
}
