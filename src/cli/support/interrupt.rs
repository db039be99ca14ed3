//! Ctrl-C during an install says what it left: a toolchain is built aside and renamed into
//! place only when complete, and downloads resume, so an interrupted one installed nothing
//! and the same command picks up where it stopped. Then the status a shell gives SIGINT.

use std::sync::atomic::{AtomicBool, Ordering};

const NOTHING: &[u8] = b"\ngpuenv: interrupted; nothing installed; run it again to resume\n";
const SOME: &[u8] = b"\ngpuenv: interrupted; what was said to be installed stays, nothing else was installed; run it again to resume\n";

/// Set once a toolchain of this command is in place.
static INSTALLED_SOME: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    let text = if INSTALLED_SOME.load(Ordering::SeqCst) {
        SOME
    } else {
        NOTHING
    };
    // SAFETY: write(2) and _exit(2) are async-signal-safe; the atomic load is lock-free.
    unsafe {
        libc::write(2, text.as_ptr().cast(), text.len());
        libc::_exit(i32::from(super::status::INTERRUPTED));
    }
}

/// From now on, Ctrl-C says what was left; a SIGINT the caller ignores stays ignored.
pub fn say_what_is_left() {
    // SAFETY: signal(2) with a handler that only calls async-signal-safe functions.
    unsafe {
        let previous = libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
        if previous == libc::SIG_IGN {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
        }
    }
}

/// A toolchain is in place: an interrupt from now on no longer says "nothing installed".
pub fn installed_one() {
    INSTALLED_SOME.store(true, Ordering::SeqCst);
}
