//! The proxy as a process: what it sets up at start (it runs without std's start-up), and
//! the exec of what `plan` decided.

use std::ffi::OsString;

use super::{plan, ProxyError, Refused};
use crate::context::Context;
use crate::diagnostic::Find;
use crate::ui;

/// The proxy's entry point: plan from `argv` and the process's environment, then exec.
/// Returns the exit status when it cannot exec: 1 when the guard refused, else 2. `find`
/// is the hint registry errors are rendered with (`hints::FIND`, which the binary hands in).
pub fn main(argv: Vec<OsString>, find: &[Find]) -> u8 {
    start_up();
    let ctx = match Context::from_process() {
        Ok(ctx) => {
            if let Some(level) = ctx
                .var_nonempty(crate::context::vars::GPUENV_LOG)
                .and_then(ui::Level::parse)
            {
                ui::set_level(level);
            }
            crate::ask::configure(&ctx);
            ctx
        }
        Err(e) => {
            ui::error(&e, find);
            return 2;
        }
    };
    let self_exe = std::env::current_exe().unwrap_or_default();
    let result = plan(argv, &ctx, &self_exe).and_then(|exec| {
        let source = crate::edges::session::exec(&exec);
        Err(ProxyError::Exec {
            program: exec.program,
            source,
        })
    });
    let status = match result {
        Ok(()) => 0,
        Err(ProxyError::Refused(Refused(refusal))) => {
            ui::error(&*refusal, find);
            1
        }
        Err(ProxyError::Stale(stale)) => {
            ui::error(&*stale, find);
            1
        }
        Err(e) => {
            ui::error(&e, find);
            2
        }
    };
    let _ = std::io::Write::flush(&mut std::io::stdout());
    status
}

/// What std's start-up does for a Rust `main` and the proxy still needs, as the proxy binary
/// starts without it (see src/bin/gpuenv-shim.rs): a closed fd 0-2 opened on /dev/null (so
/// no file the proxy opens becomes the tool's stdout, and the tool gets what it got before),
/// and SIGPIPE ignored (an error printed to a closed pipe is not a kill; the exec gives the
/// tool the default back).
fn start_up() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: `fds` is a valid array of 3 pollfd; `open` gets a NUL-terminated path; the
    // signal disposition is a plain constant.
    unsafe {
        if libc::poll(fds.as_mut_ptr(), 3, 0) != -1 {
            for pfd in fds.iter().filter(|p| p.revents & libc::POLLNVAL != 0) {
                // The lowest free fd is the closed one, as fds 0-2 are handled in order.
                if libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) != pfd.fd {
                    libc::abort();
                }
            }
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}
