//! The proxy as a process: what it sets up at start (it runs without std's start-up), and
//! the exec of what `plan` decided.

use std::ffi::{CStr, CString, OsString};
use std::os::unix::ffi::OsStrExt;

use super::{plan, ProxyError, Refused};
use crate::context::Context;
use crate::diagnostic::Find;
use crate::plan::exec::Exec;
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
        let source = exec_raw(&exec);
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
pub(crate) fn start_up() {
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
    // musl reads /etc/passwd alone: an LDAP or SSSD account is asked of NSS through getent.
    #[cfg(target_env = "musl")]
    crate::passwd::ask_nss_with(getent_passwd);
}

/// What `getent passwd <uid>` prints (the system's C library, through NSS), for a static
/// musl build; `None` when it is missing, fails or takes longer than five seconds.
#[cfg_attr(not(target_env = "musl"), allow(dead_code))]
fn getent_passwd(uid: u32) -> Option<Vec<u8>> {
    let mut getent = std::process::Command::new("getent");
    getent.args(["passwd", &uid.to_string()]);
    crate::ask::output_within(&mut getent, std::time::Duration::from_secs(5))
        .ok()
        .filter(|a| a.status.success())
        .map(|a| a.stdout)
}

extern "C" {
    /// The process's environment, as the C library keeps it.
    static environ: *const *const libc::c_char;
}

/// Replaces the proxy with `exec`'s program, as `session::exec` does (SIGPIPE back to its
/// default, the program's path as `argv[0]`, the environment with `exec.env`'s changes, the
/// last change of a name winning), without copying the whole environment into a map and
/// back: the inherited entries are passed on as the very strings the C library holds.
/// Returns only when the exec failed. (The proxy runs one thread and sets no variable, so
/// `environ` does not change under it.)
pub(crate) fn exec_raw(exec: &Exec) -> std::io::Error {
    let nul = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a nul byte in an argument or variable",
        )
    };
    let c = |b: &[u8]| CString::new(b).ok();
    let Some(program) = c(exec.program.as_os_str().as_bytes()) else {
        return nul();
    };
    let mut args = vec![program];
    for a in &exec.args {
        let Some(a) = c(a.as_bytes()) else {
            return nul();
        };
        args.push(a);
    }
    // The last change of each name, in order of names.
    let mut changes: Vec<(&[u8], Option<&OsString>)> = Vec::with_capacity(exec.env.len());
    for (k, v) in exec.env.iter().rev() {
        if !changes.iter().any(|(n, _)| *n == k.as_bytes()) {
            changes.push((k.as_bytes(), v.as_ref()));
        }
    }
    changes.sort_by(|a, b| a.0.cmp(b.0));
    let mut set = Vec::with_capacity(changes.len());
    for (k, v) in &changes {
        if let Some(v) = v {
            let Some(entry) = c(&[k, &b"="[..], v.as_bytes()].concat()) else {
                return nul();
            };
            set.push(entry);
        }
    }
    let mut envp: Vec<*const libc::c_char> = Vec::with_capacity(64 + set.len());
    // SAFETY: `environ` is a NULL-terminated array of NUL-terminated strings that nothing
    // changes while the proxy runs; each entry is only read, and only up to its NUL.
    unsafe {
        let mut at = environ;
        while !at.is_null() && !(*at).is_null() {
            let entry = CStr::from_ptr(*at).to_bytes();
            let name = entry.split(|b| *b == b'=').next().unwrap_or_default();
            if changes.binary_search_by(|(n, _)| (*n).cmp(name)).is_err() {
                envp.push(*at);
            }
            at = at.add(1);
        }
    }
    envp.extend(set.iter().map(|e| e.as_ptr()));
    envp.push(std::ptr::null());
    let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    // SAFETY: `argv` and `envp` are NULL-terminated arrays of pointers to NUL-terminated
    // strings that outlive the call (`args`, `set`, `environ`); SIGPIPE's disposition is a
    // plain constant.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::execve(argv[0], argv.as_ptr(), envp.as_ptr());
    }
    std::io::Error::last_os_error()
}
