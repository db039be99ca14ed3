fn main() -> std::process::ExitCode {
    gpuenv::cli::main()
}
