//! FM-15 (the driver side): a forward-compatibility `libcuda` on `LD_LIBRARY_PATH` (a CUDA
//! install's `compat/`, as NGC containers switch it on) against the kernel driver. The
//! loader takes the first `libcuda.so.1` on `LD_LIBRARY_PATH`: a compat one newer than the
//! kernel driver is forward compatibility in effect; an older one gives error 803 ("system
//! has unsupported display driver / cuda driver combination") and no devices.

use std::path::Path;

use super::driver::read_driver;
use super::{Check, Finding, Inputs, Notes, Status};
use gpuenv_core::context::vars;
use gpuenv_core::facts::compat_note as note;
use gpuenv_core::facts::driver_dirs::{is_driver_dir, libcuda_version};
use gpuenv_core::facts::lookup::driver_key;
use gpuenv_core::fsutil;

pub const CHECK: Check = Check {
    id: "FM-15",
    name: "driver-compat",
};

/// The `libcuda` a driver directory holds: its version (from the file `libcuda.so.1`
/// points at, else a `libcuda.so.<version>` beside it), `Ok(None)` when it holds none. Only
/// names and links are read: nothing is opened, so a FIFO or a device there cannot block.
pub fn libcuda_in(dir: &Path) -> std::io::Result<Option<String>> {
    let meta = fs_err::metadata(dir)?;
    if !meta.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            "not a directory",
        ));
    }
    if let Ok(target) = fs_err::read_link(dir.join("libcuda.so.1")) {
        if let Some(v) = target
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(libcuda_version)
        {
            return Ok(Some(v.to_string()));
        }
    }
    let mut found: Vec<String> = fs_err::read_dir(dir)?
        .flatten()
        .filter_map(|e| libcuda_version(e.file_name().to_str()?).map(str::to_string))
        .collect();
    found.sort_by_key(|v| driver_key(v));
    Ok(found.pop())
}

pub fn run(inputs: &Inputs) -> Finding {
    let m = &inputs.machine;
    let mut notes = Notes::default();
    // The first driver directory holding a libcuda is what the loader takes.
    let mut wins = None;
    for entry in m.path_list(vars::LD_LIBRARY_PATH) {
        if !is_driver_dir(entry.as_ref()) {
            continue;
        }
        match libcuda_in(Path::new(&entry)) {
            Ok(Some(v)) => {
                wins = Some((entry, v));
                break;
            }
            Ok(None) => notes.seen(format!("{entry}: no libcuda")),
            Err(e) => {
                notes.problem(
                    Status::Warn,
                    format!(
                        "the driver directory {entry} on LD_LIBRARY_PATH cannot be read: {}",
                        fsutil::io_reason(&e)
                    ),
                );
                notes.hint(format!("remove {entry} from LD_LIBRARY_PATH, or make it the directory of a driver's libraries"));
            }
        }
    }
    let Some((dir, compat)) = wins else {
        return notes.finish(
            CHECK,
            "no forward-compatibility libcuda on LD_LIBRARY_PATH: programs use the driver's own",
        );
    };
    let driver = match read_driver(m) {
        Ok(d) => d,
        Err(why) => {
            notes.seen(format!("libcuda {compat} from {dir}"));
            return match notes.is_clean() {
                true => CHECK.skip(format!("libcuda {compat} from {dir} is first on LD_LIBRARY_PATH; the kernel driver cannot be compared: {why}")),
                false => notes.finish(CHECK, ""),
            };
        }
    };
    notes.seen(format!(
        "kernel driver {} (from {}); libcuda {compat} from {dir}, first on LD_LIBRARY_PATH",
        driver.text, driver.from
    ));
    // Decided as the NVIDIA Container Toolkit decides: the library's own note first.
    let lib = Path::new(&dir).join(format!("libcuda.so.{compat}"));
    let note = match note::read(&lib) {
        Ok(n) => n,
        Err(e) => {
            notes.seen(format!(
                "its note cannot be read ({e}): the driver versions decide"
            ));
            None
        }
    };
    let decision = note::decide(note.as_ref(), Some(&compat), Some(&driver.text), None);
    notes.seen(match &note {
        Some(n) => format!(
            "{}: CUDA {}, host driver branches {:?}",
            note::SECTION,
            n.cuda,
            n.driver
        ),
        None => format!("no {} note: the driver majors decide", note::SECTION),
    });
    let (c, k) = (driver_key(&compat), driver_key(&driver.text));
    if c < k {
        notes.problem(
            Status::Error,
            format!(
                "the forward-compatibility libcuda {compat} in {dir} is older than the kernel driver {}: it wins on LD_LIBRARY_PATH, and CUDA programs fail with error 803 (unsupported display driver / cuda driver combination) and see no devices",
                driver.text
            ),
        );
        notes.hint(format!(
            "remove {dir} from LD_LIBRARY_PATH: the driver's own libcuda {} is then used (forward compatibility is for a driver older than the toolkit)",
            driver.text
        ));
        return notes.finish(CHECK, "");
    }
    if c > k && !decision.use_compat {
        notes.problem(
            Status::Error,
            format!(
                "the forward-compatibility libcuda {compat} in {dir} does not run on kernel driver {}: {} (the NVIDIA Container Toolkit would not use it; CUDA programs fail with error 803)",
                driver.text, decision.why
            ),
        );
        notes.hint(format!(
            "remove {dir} from LD_LIBRARY_PATH, or update the driver to a branch its note lists"
        ));
        return notes.finish(CHECK, "");
    }
    let summary = if c > k {
        format!(
            "forward compatibility in effect: libcuda {compat} from {dir} on kernel driver {} ({}; it works on data-center GPUs only; elsewhere CUDA says 804)",
            driver.text, decision.why
        )
    } else {
        format!(
            "libcuda {compat} from {dir} is the kernel driver's own version ({})",
            driver.text
        )
    };
    notes.finish(CHECK, summary)
}
