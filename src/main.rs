//! The `gpuenv` binary: the command line in `cli`.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
