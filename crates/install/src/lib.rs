//! Installing toolchains: a source (NVIDIA's redist manifests, NVIDIA's wheels on a Python
//! package index, or gpuenv's own manifest) says which archives make a release; they are
//! fetched into the download cache and checked against their sha256, unpacked safely,
//! assembled into a temp dir under `toolchains/`, renamed into place and registered, all
//! under a per-toolchain lock.

pub mod add;
pub mod assemble;
pub mod cache;
pub mod confine;
pub mod dir;
pub mod download;
pub mod fault;
pub mod fetch;
pub mod hooks;
mod install;
pub mod lock;
pub mod objects;
pub mod pathpart;
pub mod prune;
pub mod record;
pub mod retire;
pub mod seal;
pub mod source;
pub mod stub;
pub mod therock;
pub mod torch;
pub mod torch_rocm;
pub mod unpack;

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

pub use fault::Fault;
use gpuenv_core::diagnostic::{Diagnostic, Find, Hinted};
use gpuenv_core::home::Home;
use gpuenv_core::toolchain::{Kind, Spec, Version};
use gpuenv_core::ui::{self, Report};
pub use install::{install, install_recorded, Installed};
pub use reqwest::Url;
pub use source::Source;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    TarXz,
    TarGz,
    Tar,
    Zip,
}

impl Format {
    /// From a file name: `.tar.xz`/`.txz`, `.tar.gz`/`.tgz`, `.tar`, `.zip`/`.whl`.
    pub fn from_name(name: &str) -> Option<Format> {
        let n = name.to_ascii_lowercase();
        let ends = |s: &[&str]| s.iter().any(|e| n.ends_with(e));
        if ends(&[".tar.xz", ".txz"]) {
            Some(Format::TarXz)
        } else if ends(&[".tar.gz", ".tgz"]) {
            Some(Format::TarGz)
        } else if ends(&[".tar"]) {
            Some(Format::Tar)
        } else if ends(&[".zip", ".whl"]) {
            Some(Format::Zip)
        } else {
            None
        }
    }
}

/// How an archive's entries map into the toolchain root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mapping {
    /// NVIDIA's redist archive: one top directory holding `bin/`, `include/`, `lib/`, ….
    Redist,
    /// A wheel: `nvidia/<package>/{bin,include,lib,…}`.
    Wheel,
    /// Strip this path prefix; entries outside it are left out.
    Strip(String),
    /// A runtime wheel of AMD's ROCm (TheRock): `_rocm_sdk_<package>/…` folded into the root.
    TheRock,
    /// TheRock's `rocm-sdk-devel` wheel: its `_devel.tar` expanded over the runtime packages.
    TheRockDevel,
}

/// One archive of a release.
#[derive(Debug, Clone)]
pub struct Archive {
    pub component: String,
    pub version: String,
    pub url: Url,
    pub sha256: pathpart::Sha256,
    pub size: Option<u64>,
    pub format: Format,
    pub mapping: Mapping,
}

impl Archive {
    pub fn file_name(&self) -> String {
        self.url
            .path_segments()
            .and_then(|mut s| s.next_back().map(str::to_string))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| self.url.to_string())
    }
}

/// What a source says a release is made of.
#[derive(Debug, Clone)]
pub struct Plan {
    pub name: String,
    pub kind: Kind,
    pub version: Version,
    pub source: &'static str,
    pub archives: Vec<Archive>,
    /// NVIDIA's pieces: assemble the runfile layout and write version.json.
    pub cuda_layout: bool,
    /// Trees laid out like a CUDA wheel's (`include/`, `lib/`) whose files the toolchain
    /// links to rather than downloads: the NVIDIA wheels a torch venv already has.
    pub linked: Vec<torch::Linked>,
    /// The gpuenv manifest it comes from, if it does: the record keeps it, so an uninstall
    /// can name the command that installs it again.
    pub manifest: Option<Url>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    Minimal,
    #[default]
    Default,
}

impl gpuenv_core::named::Named for Profile {
    const ALL: &'static [Profile] = &[Profile::Minimal, Profile::Default];
    fn name(self) -> &'static str {
        match self {
            Profile::Minimal => "minimal",
            Profile::Default => "default",
        }
    }
    fn help(self) -> &'static str {
        match self {
            Profile::Minimal => "What `nvcc -c` needs: nvcc, cudart, cccl (plus crt and nvvm from 13.0)",
            Profile::Default => "Minimal plus what a PyTorch CUDA extension includes: cuBLAS, cuSPARSE, cuSOLVER, cuRAND, cuFFT",
        }
    }
}

/// The components asked for.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub profile: Profile,
    pub components: Vec<String>,
}

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

#[derive(Debug, thiserror::Error)]
#[error("GPUENV_HOME ({}) is read-only: cannot create a file in {} ({cause})", home.display(), dir.display())]
pub struct ReadOnlyHome {
    pub home: PathBuf,
    pub dir: PathBuf,
    pub cause: std::io::Error,
}

impl Diagnostic for ReadOnlyHome {
    fn hints(&self) -> Vec<String> {
        vec![format!(
            "make it writable (`chmod u+w {}`), or set GPUENV_HOME to a directory you can write",
            self.home.display()
        )]
    }
}

/// Checks that installs can write where they must (GPUENV_HOME and its `toolchains/`)
/// before anything is fetched, so a read-only home is said as such.
pub fn writable_home(home: &Home) -> Result<(), ReadOnlyHome> {
    let read_only = |dir: &Path, cause: std::io::Error| ReadOnlyHome {
        home: home.root.clone(),
        dir: dir.to_path_buf(),
        cause,
    };
    for dir in [home.root.clone(), home.toolchains()] {
        let attempt = fs_err::create_dir_all(&dir).and_then(|()| tempfile::tempfile_in(&dir));
        match attempt {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
                ) =>
            {
                return Err(read_only(&dir, e))
            }
            // Anything else is reported where it happens, with its own message.
            Err(_) => {}
        }
    }
    Ok(())
}

/// `name` as the name of a toolchain, checked before it names anything on disk.
pub fn checked_name(name: &str) -> Result<Spec> {
    let bad = |e: &dyn std::fmt::Display| {
        Hinted::new(e.to_string()).hint("`gpuenv list` shows the registered names")
    };
    pathpart::part("toolchain name", name).map_err(|e| bad(&e))?;
    Ok(name.parse().map_err(|e| bad(&e))?)
}

/// The lock that serialises installs and uninstalls of one toolchain.
pub fn lock_toolchain(home: &Home, name: &str) -> Result<cache::FileLock> {
    checked_name(name)?;
    cache::lock(&home.toolchains().join(format!(".{name}.lock")), || {
        ui::info(format!("waiting for another gpuenv working on {name}"))
    })
}

gpuenv_core::diagnostics!(
    /// gpuenv-install's error types that have hints (see `gpuenv_core::diagnostic`).
    pub fn find_diagnostic: fault::Fault, ReadOnlyHome, cache::Refused, lock::LockError
);

/// The finders for every error an install can return: its own and gpuenv-core's.
pub const FIND: &[Find] = &[find_diagnostic, gpuenv_core::hints::find];

/// Chooses the release `spec` names from the first source that has it; when none has, the
/// error gives each source's reason.
pub fn plan(sources: &[Box<dyn Source + '_>], spec: &Spec, sel: &Selection) -> Result<Plan> {
    let serving: Vec<&Box<dyn Source + '_>> =
        sources.iter().filter(|s| s.serves(spec.kind)).collect();
    if serving.is_empty() {
        let names: Vec<&str> = sources.iter().map(|s| s.name()).collect();
        bail!(Hinted::new(format!(
            "the source{} {} cannot install {}",
            if names.len() > 1 { "s" } else { "" },
            names.join(", "),
            spec.kind
        ))
        .hint(match spec.kind {
            Kind::Rocm =>
                format!("`gpuenv install {spec}` (AMD's ROCm wheels), or `--manifest <path|url>`"),
            Kind::Cuda => format!("`gpuenv install {spec}` (NVIDIA's archives and wheels)"),
        }));
    }
    let sources = serving;
    let mut reasons = Vec::new();
    for (i, s) in sources.iter().enumerate() {
        match s.plan(spec, sel) {
            Ok(p) => return Ok(p),
            Err(e) if sources.len() == 1 => return Err(e),
            Err(e) => {
                // Say why before falling back, so a source that was never reached
                // (an unreachable host, a proxy) does not go unnoticed: one note, which
                // `-q` leaves out (should every source fail, the error gives each reason).
                if let Some(next) = sources.get(i + 1) {
                    let text = format!("{e:#}");
                    let why = text.lines().next().unwrap_or_default();
                    ui::info(format!(
                        "the {} source cannot install {spec} ({why}); trying {}",
                        s.name(),
                        next.name()
                    ));
                }
                reasons.push((s.name(), e));
            }
        }
    }
    let mut msg = format!("no source could install {spec}:");
    let mut hints = Vec::new();
    for (name, e) in &reasons {
        let report = Report::of(e.as_ref(), FIND);
        msg.push_str(&format!(
            "\n  {name}: {}",
            report.inline().replace('\n', "\n    ")
        ));
        hints.extend(report.hints.into_iter().map(|h| format!("{h} ({name})")));
    }
    let mut err = Hinted::new(msg);
    for h in hints {
        err = err.hint(h);
    }
    if !reasons.is_empty() && reasons.iter().all(|(_, e)| fault::is_network_failure(e)) {
        err = err.caused_by(fault::Unreachable);
    }
    bail!(err)
}

/// The name of the path under which a `--manifest` or mirror value is read: a URL as is,
/// anything else a path (relative to `cwd`).
pub fn location(cwd: &Path, value: &str, dir: bool) -> Result<Url> {
    if let Ok(url) = Url::parse(value) {
        if matches!(url.scheme(), "http" | "https" | "file") {
            let mut url = url;
            if dir && !url.path().ends_with('/') {
                url.set_path(&format!("{}/", url.path()));
            }
            return Ok(url);
        }
    }
    let path = cwd.join(value);
    let url = if dir {
        Url::from_directory_path(&path)
    } else {
        Url::from_file_path(&path)
    };
    url.map_err(|()| anyhow::anyhow!("{} is not a usable path", path.display()))
}
