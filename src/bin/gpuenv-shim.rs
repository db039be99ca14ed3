//! The gpuenv proxy, installed as `$GPUENV_HOME/shims/<tool>` and as each view's
//! `bin/nvcc` / `bin/hipcc`; the shell hook also runs it for each prompt after a change
//! (`gpuenv-shim hook-env`, `gpuenv_core::shell::by_proxy`). All of its logic is
//! `gpuenv_core::proxy` (its errors are rendered with `gpuenv_core::hints`); this links
//! nothing else.
//!
//! It starts as C's `main`, without std's start-up: that start-up reads /proc/self/maps for
//! a stack-overflow guard and maps a signal stack, about 0.1 ms of every compiler call, for
//! a process that execs the real tool right away. What of it matters here (fds 0-2 open,
//! SIGPIPE ignored) `proxy::main` does itself.
#![no_main]

use std::ffi::{c_char, c_int, CStr, OsStr, OsString};

use std::os::unix::ffi::OsStrExt;

#[unsafe(no_mangle)]
extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    let args: Vec<OsString> = (0..usize::try_from(argc).unwrap_or(0))
        // SAFETY: the C runtime passes `argc` pointers to NUL-terminated strings.
        .map(|i| unsafe { CStr::from_ptr(*argv.add(i)) })
        .map(|arg| OsStr::from_bytes(arg.to_bytes()).to_os_string())
        .collect();
    // The shell hook's prompt (`gpuenv-shim hook-env --shell bash`), else a tool's call.
    let status = match gpuenv_core::shell::by_proxy::prompt_call(&args) {
        Some(shell) => gpuenv_core::shell::by_proxy::main(shell, gpuenv_core::hints::FIND),
        None => gpuenv_core::proxy::main(args, gpuenv_core::hints::FIND),
    };
    c_int::from(status)
}
