//! Progress bars for downloads on a terminal; nothing otherwise.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::archive::Archive;

/// Progress bars on a terminal; nothing otherwise.
pub struct Progress {
    multi: Option<MultiProgress>,
}

impl Progress {
    pub fn new(enabled: bool) -> Progress {
        let multi = enabled.then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        Progress { multi }
    }

    pub fn bar(&self, a: &Archive) -> ProgressBar {
        let Some(multi) = &self.multi else {
            return ProgressBar::hidden();
        };
        let bar = multi.add(ProgressBar::new(a.size.unwrap_or(0)));
        bar.set_style(
            ProgressStyle::with_template(
                "{msg:32!} [{bar:25}] {bytes:>10}/{total_bytes:<10} {bytes_per_sec:>12}",
            )
            .expect("the template is valid")
            .progress_chars("=> "),
        );
        bar.set_message(a.component.clone());
        bar
    }
}
