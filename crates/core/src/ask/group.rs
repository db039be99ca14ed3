//! A probe's process group: killed when its question is over, and by SIGINT, SIGTERM or
//! SIGHUP to gpuenv while it waits (a group of its own no longer gets the terminal's
//! Ctrl-C).

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Once;

/// Process groups of programs being asked now, for the signal handler (0: a free slot).
static GROUPS: [AtomicI32; 16] = [const { AtomicI32::new(0) }; 16];

/// A program's process group, killed when the question is over (answered or timed out):
/// nothing a probe started outlives it.
pub(super) struct Group(libc::pid_t);

impl Group {
    pub(super) fn new(pgid: libc::pid_t) -> Group {
        // With more than 16 at once, the signal handler misses the latest (they are still
        // killed at their deadline or answer).
        let _ = GROUPS.iter().any(|s| {
            s.compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        });
        Group(pgid)
    }

    pub(super) fn kill(&self) {
        // SAFETY: kill(2) with a negative pid signals that process group. While any member
        // lives the id is not reused; once none does, only a process that made itself a
        // group leader under a reused pid could be hit, in the moment before this call.
        unsafe {
            libc::kill(-self.0, libc::SIGKILL);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
        for s in &GROUPS {
            let _ = s.compare_exchange(self.0, 0, Ordering::SeqCst, Ordering::SeqCst);
        }
    }
}

/// SIGINT, SIGTERM and SIGHUP blocked on this thread while it lives (pending ones arrive
/// when it is dropped). The handler is installed first.
pub(super) struct Held(libc::sigset_t);

impl Held {
    pub(super) fn new() -> Held {
        static HANDLER: Once = Once::new();
        HANDLER.call_once(install_handler);
        // SAFETY: sigset_t is plain data; the calls only read and write these sets.
        unsafe {
            let (mut set, mut old): (libc::sigset_t, libc::sigset_t) =
                (std::mem::zeroed(), std::mem::zeroed());
            libc::sigemptyset(&mut set);
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::sigaddset(&mut set, sig);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            Held(old)
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: puts back the mask saved by `new`.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut());
        }
    }
}

/// On SIGINT, SIGTERM or SIGHUP: kill every group being asked, then die of the signal as
/// before. Only where the signal's action is the default (a shell that ignores SIGINT for
/// its hook keeps it ignored).
fn install_handler() {
    extern "C" fn handler(sig: libc::c_int) {
        for s in &GROUPS {
            let pgid = s.load(Ordering::SeqCst);
            if pgid > 0 {
                // SAFETY: kill(2) is async-signal-safe.
                unsafe {
                    libc::kill(-pgid, libc::SIGKILL);
                }
            }
        }
        // SAFETY: signal(2) back to the default and raise(3) are async-signal-safe.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: sigaction(2) with valid pointers; the handler only calls
        // async-signal-safe functions.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                || old.sa_sigaction != libc::SIG_DFL
            {
                continue;
            }
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut new.sa_mask);
            libc::sigaction(sig, &new, std::ptr::null_mut());
        }
    }
}
