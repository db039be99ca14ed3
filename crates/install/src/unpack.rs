//! Unpacking archives (tar.xz with multi-threaded decoding, tar.gz, tar, zip) into an empty
//! directory, refusing every entry that could write outside it: absolute paths, `..`, links
//! whose target leaves the directory, and entries that would go through a link.

use std::collections::HashSet;
use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use super::confine;
use super::fault::Fault;
use super::hooks::Hooks;
use super::Format;

/// Extracts `archive` into the empty directory `dest`. `label` names it in errors, `url`
/// is where it came from.
pub fn unpack(
    archive: &Path,
    format: Format,
    dest: &Path,
    label: &str,
    url: &str,
    hooks: &Hooks,
) -> Result<(), Fault> {
    let file = fs_err::File::open(archive).map_err(|e| Fault::io(archive, e))?;
    let mut out = Extractor {
        dest: dest.to_path_buf(),
        label: label.to_string(),
        url: url.to_string(),
        links: HashSet::new(),
        count: 0,
        hooks,
    };
    let input = BufReader::with_capacity(1 << 20, file.into_parts().0);
    match format {
        Format::TarXz => out.tar(xz_decoder(input)),
        Format::TarGz => out.tar(flate2::read::GzDecoder::new(input)),
        Format::Tar => out.tar(input),
        Format::Zip => out.zip(archive),
    }
}

/// liblzma's multi-threaded decoder: archives compressed in several blocks (`xz -T0`)
/// decode on every core; single-block ones decode as fast as usual.
fn xz_decoder<R: std::io::BufRead + Send + 'static>(input: R) -> Box<dyn Read + Send> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    match liblzma::stream::MtStreamBuilder::new()
        .threads(threads.min(8))
        .timeout_ms(300)
        .memlimit_threading(1 << 30)
        .memlimit_stop(u64::MAX)
        .decoder()
    {
        Ok(stream) => Box::new(liblzma::bufread::XzDecoder::new_stream(input, stream)),
        Err(_) => Box::new(liblzma::bufread::XzDecoder::new(input)),
    }
}

struct Extractor<'a> {
    dest: PathBuf,
    label: String,
    url: String,
    /// Links created so far: nothing may be written through them.
    links: HashSet<PathBuf>,
    count: usize,
    hooks: &'a Hooks,
}

impl Extractor<'_> {
    fn unsafe_entry(&self, entry: &Path, why: impl Into<String>) -> Fault {
        Fault::UnsafeArchiveEntry {
            archive: self.label.clone(),
            entry: entry.display().to_string(),
            why: why.into(),
        }
    }

    fn corrupt(&self, e: impl std::fmt::Display) -> Fault {
        Fault::CorruptArchive {
            archive: self.label.clone(),
            url: self.url.clone(),
            message: e.to_string(),
        }
    }

    /// The entry's path relative to `dest`, or why it is refused. `None`: the root itself.
    fn relative(&self, raw: &Path) -> Result<Option<PathBuf>, Fault> {
        let mut rel = PathBuf::new();
        for c in raw.components() {
            match c {
                Component::Normal(p) => rel.push(p),
                Component::CurDir => {}
                Component::ParentDir => return Err(self.unsafe_entry(raw, "it goes up with `..`")),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(self.unsafe_entry(raw, "it is an absolute path"))
                }
            }
        }
        if rel.as_os_str().is_empty() {
            return Ok(None);
        }
        for ancestor in rel.ancestors().skip(1) {
            if self.links.contains(ancestor) {
                return Err(self.unsafe_entry(
                    raw,
                    format!("it goes through the link `{}`", ancestor.display()),
                ));
            }
        }
        if self.links.contains(&rel) {
            return Err(self.unsafe_entry(raw, "it replaces a link made by an earlier entry"));
        }
        Ok(Some(rel))
    }

    /// A symlink target must be relative and lead inside `dest` from where the link is,
    /// following the links made so far.
    fn check_link_target(&self, raw: &Path, rel: &Path, target: &Path) -> Result<(), Fault> {
        if target.is_absolute() {
            return Err(self.unsafe_entry(
                raw,
                format!("it links to the absolute path `{}`", target.display()),
            ));
        }
        let from = rel.parent().unwrap_or(Path::new(""));
        confine::resolve(&self.dest, from, target).map_err(|why| {
            self.unsafe_entry(
                raw,
                format!(
                    "it links outside the archive, to `{}` ({why})",
                    target.display()
                ),
            )
        })?;
        Ok(())
    }

    /// Once every entry is out: a link made early can lead elsewhere after later links.
    fn links_stay_inside(&self) -> Result<(), Fault> {
        match confine::check_tree(&self.dest) {
            Ok(None) => Ok(()),
            Ok(Some((link, target, why))) => Err(self.unsafe_entry(
                &link,
                format!(
                    "with every link in place it links outside the archive, to `{}` ({why})",
                    target.display()
                ),
            )),
            Err(e) => Err(Fault::io(&self.dest, e)),
        }
    }

    fn mkdirs(&self, dir: &Path) -> Result<(), Fault> {
        fs_err::create_dir_all(dir).map_err(|e| Fault::io(dir, e))
    }

    /// Creates a regular file (never through an existing link: `create_new` refuses them).
    fn write_file(&mut self, rel: &Path, mode: u32, data: &mut dyn Read) -> Result<(), Fault> {
        let path = self.dest.join(rel);
        self.mkdirs(path.parent().expect("entries are below dest"))?;
        if fs_err::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            fs_err::remove_file(&path).map_err(|e| Fault::io(&path, e))?;
        }
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(file_mode(mode))
            .open(&path)
            .map_err(|e| Fault::io(&path, e))?;
        let mut w = BufWriter::with_capacity(1 << 18, file);
        std::io::copy(data, &mut w).map_err(|e| self.corrupt(e))?;
        w.flush().map_err(|e| Fault::io(&path, e))?;
        self.entry_done();
        Ok(())
    }

    fn symlink(&mut self, raw: &Path, rel: PathBuf, target: &Path) -> Result<(), Fault> {
        self.check_link_target(raw, &rel, target)?;
        let path = self.dest.join(&rel);
        self.mkdirs(path.parent().expect("entries are below dest"))?;
        if fs_err::symlink_metadata(&path).is_ok() {
            return Err(self.unsafe_entry(raw, "it replaces an earlier entry with a link"));
        }
        std::os::unix::fs::symlink(target, &path).map_err(|e| Fault::io(&path, e))?;
        self.links.insert(rel);
        self.entry_done();
        Ok(())
    }

    fn entry_done(&mut self) {
        self.count += 1;
        if self.count == 2 {
            self.hooks.checkpoint("extract");
        }
    }

    fn tar(&mut self, input: impl Read) -> Result<(), Fault> {
        let mut ar = tar::Archive::new(input);
        let entries = ar.entries().map_err(|e| self.corrupt(e))?;
        for entry in entries {
            let mut entry = entry.map_err(|e| self.corrupt(e))?;
            let raw = entry.path().map_err(|e| self.corrupt(e))?.into_owned();
            let kind = entry.header().entry_type();
            if kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
                continue;
            }
            let Some(rel) = self.relative(&raw)? else {
                continue;
            };
            let mode = entry.header().mode().unwrap_or(0o644);
            use tar::EntryType as T;
            match kind {
                T::Directory => {
                    self.mkdirs(&self.dest.join(&rel))?;
                }
                T::Regular | T::Continuous => self.write_file(&rel, mode, &mut entry)?,
                T::Symlink => {
                    let target = entry
                        .link_name()
                        .map_err(|e| self.corrupt(e))?
                        .ok_or_else(|| self.corrupt(format!("{} links to nothing", raw.display())))?
                        .into_owned();
                    self.symlink(&raw, rel, &target)?;
                }
                T::Link => {
                    let target = entry
                        .link_name()
                        .map_err(|e| self.corrupt(e))?
                        .ok_or_else(|| self.corrupt(format!("{} links to nothing", raw.display())))?
                        .into_owned();
                    let Some(target_rel) = self.relative(&target)? else {
                        return Err(self.unsafe_entry(&raw, "it hard-links the archive's root"));
                    };
                    let from = self.dest.join(&target_rel);
                    if !fs_err::symlink_metadata(&from).is_ok_and(|m| m.is_file()) {
                        return Err(self.unsafe_entry(
                            &raw,
                            format!(
                                "it hard-links `{}`, which is not an earlier file",
                                target.display()
                            ),
                        ));
                    }
                    let path = self.dest.join(&rel);
                    self.mkdirs(path.parent().expect("entries are below dest"))?;
                    let _ = fs_err::remove_file(&path);
                    fs_err::hard_link(&from, &path).map_err(|e| Fault::io(&path, e))?;
                    self.entry_done();
                }
                other => {
                    return Err(self.unsafe_entry(
                        &raw,
                        format!("it is a special file ({other:?}), which a toolkit never holds"),
                    ))
                }
            }
        }
        // Read to the end, so the compressed stream's own check (xz CRC) is verified too.
        let mut rest = ar.into_inner();
        std::io::copy(&mut rest, &mut std::io::sink()).map_err(|e| self.corrupt(e))?;
        self.links_stay_inside()
    }

    fn zip(&mut self, archive: &Path) -> Result<(), Fault> {
        let file = fs_err::File::open(archive).map_err(|e| Fault::io(archive, e))?;
        let mut z = zip::ZipArchive::new(BufReader::new(file.into_parts().0))
            .map_err(|e| self.corrupt(e))?;
        for i in 0..z.len() {
            let mut f = z.by_index(i).map_err(|e| self.corrupt(e))?;
            let raw = PathBuf::from(f.name());
            let Some(rel) = self.relative(&raw)? else {
                continue;
            };
            let mode = f.unix_mode().unwrap_or(0o644);
            if f.is_dir() {
                self.mkdirs(&self.dest.join(&rel))?;
            } else if mode & 0o170000 == 0o120000 {
                // A link's target is a path: PATH_MAX at most.
                let mut target = String::new();
                (&mut f)
                    .take(4096)
                    .read_to_string(&mut target)
                    .map_err(|e| self.corrupt(e))?;
                self.symlink(&raw, rel, Path::new(&target))?;
            } else {
                self.write_file(&rel, mode, &mut f)?;
            }
        }
        self.links_stay_inside()
    }
}

/// Readable by everyone; executable by everyone when the owner could execute it (wheels
/// ship tools as 0744). Never setuid.
fn file_mode(mode: u32) -> u32 {
    if mode & 0o100 != 0 {
        0o755
    } else {
        0o644
    }
}
