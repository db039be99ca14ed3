//! Downloading one archive into the cache: streamed to a partial file while its sha256 is
//! computed, resumed with `Range` after a short body (the part already there is hashed
//! again), retried a bounded number of times, renamed into place only when the hash matches.

use std::io::{Read, Seek, Write};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use indicatif::ProgressBar;
use reqwest::{StatusCode, Url};
use rustix::fs::FileType;
use sha2::{Digest, Sha256};

use super::cache::hex;
use super::dir::{kind, trusted_owner};
use super::fault::{chain, check_status, classify, first_line, Fault};
use super::fetch::{no_such_file, Fetcher, ATTEMPTS, BUF};
use super::Archive;
use gpuenv_core::ui;

impl Fetcher {
    /// Downloads `a` to `dest`, checking its sha256 before `dest` appears.
    pub(super) fn download(
        &self,
        a: &Archive,
        dest: &Path,
        bar: &ProgressBar,
    ) -> Result<(), Fault> {
        let key = a.sha256.as_str();
        let partials = self
            .cache
            .made("partial")
            .map_err(|e| Fault::io(&self.cache.partial(&a.sha256), e))?;
        let part = partials.join(key);
        // Only a download of the user's (or root's) own is resumed: a link planted at its
        // name, or another user's file, goes (itself, never what a link leads to).
        match partials.stat(key).map_err(|e| Fault::io(&part, e))? {
            Some(st) if kind(&st) == FileType::RegularFile && trusted_owner(st.st_uid) => {}
            Some(_) => partials.remove_file(key).map_err(|e| Fault::io(&part, e))?,
            None => {}
        }
        if a.url.scheme() == "file" {
            copy_local(a, &part, bar)?;
        } else {
            if self.offline {
                return Err(Fault::NotCached {
                    url: a.url.to_string(),
                });
            }
            let mut restarted = false;
            let mut attempt = 1;
            loop {
                let resumed = fs_err::metadata(&part).is_ok_and(|m| m.len() > 0);
                match self.try_download(a, &part, bar) {
                    Ok(()) => break,
                    // The partial file is checked again: a bad one is dropped and the
                    // whole file fetched once more.
                    Err(Fault::HashMismatch { .. }) if resumed && !restarted => {
                        restarted = true;
                    }
                    Err(f) if f.is_transient() && attempt < ATTEMPTS => {
                        bar.suspend(|| {
                            ui::warn(format!(
                                "{}; retrying ({}/{ATTEMPTS})",
                                first_line(&f),
                                attempt + 1
                            ))
                        });
                        std::thread::sleep(Duration::from_millis(200 << attempt));
                        attempt += 1;
                    }
                    Err(f) => return Err(f),
                }
            }
        }
        fs_err::rename(&part, dest).map_err(|e| Fault::io(dest, e))
    }

    fn try_download(&self, a: &Archive, part: &Path, bar: &ProgressBar) -> Result<(), Fault> {
        let url = &a.url;
        use fs_err::os::unix::fs::OpenOptionsExt;
        let mut file = fs_err::OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(part)
            .map_err(|e| Fault::io(part, e))?;
        let mut have = file.metadata().map_err(|e| Fault::io(part, e))?.len();
        let mut hasher = Sha256::new();
        if have > 0 {
            hash_prefix(&mut file, part, &mut hasher)?;
        }
        let mut req = self.client(url)?.get(url.clone());
        if have > 0 {
            req = req.header(reqwest::header::RANGE, format!("bytes={have}-"));
        }
        let mut resp = req.send().map_err(|e| classify(url, &e))?;
        match resp.status() {
            StatusCode::PARTIAL_CONTENT if have > 0 => {}
            StatusCode::RANGE_NOT_SATISFIABLE if have > 0 => {
                // Everything is here already, or the part is bad: the hash decides below.
                drop(resp);
                return finish(a, part, hasher, have);
            }
            s if s.is_success() => {
                // The server sent the whole file (no resume): start over.
                if have > 0 {
                    file.set_len(0).map_err(|e| Fault::io(part, e))?;
                    hasher = Sha256::new();
                    have = 0;
                }
            }
            s => check_status(url, s)?,
        }
        let body_len = resp.content_length();
        bar.set_length(a.size.or(body_len.map(|l| l + have)).unwrap_or(0));
        bar.set_position(have);
        let mut buf = vec![0u8; BUF];
        let mut got = 0u64;
        let mut writer = std::io::BufWriter::with_capacity(BUF, &mut file);
        loop {
            let n = match resp.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    writer.flush().map_err(|e| Fault::io(part, e))?;
                    return Err(read_fault(url, &e, got, body_len));
                }
            };
            writer
                .write_all(&buf[..n])
                .map_err(|e| Fault::io(part, e))?;
            hasher.update(&buf[..n]);
            got += n as u64;
            if let Err(f) = over_size(a, have + got) {
                drop(writer);
                let _ = fs_err::remove_file(part);
                return Err(f);
            }
            self.fetched.fetch_add(n as u64, Ordering::Relaxed);
            bar.inc(n as u64);
            self.hooks.checkpoint("download");
        }
        writer.flush().map_err(|e| Fault::io(part, e))?;
        drop(writer);
        if let Some(want) = body_len.filter(|&w| got < w) {
            return Err(Fault::ShortBody {
                url: url.to_string(),
                got: have + got,
                want: have + want,
            });
        }
        finish(a, part, hasher, have + got)
    }
}

/// The most an archive whose source gives no size may be: NVIDIA's largest (cuBLAS) is
/// about 1 GiB.
const MAX_ARCHIVE: u64 = 8 << 30;

/// Past the size the manifest gives (or [`MAX_ARCHIVE`]): an endless reply stops here.
fn over_size(a: &Archive, len: u64) -> Result<(), Fault> {
    let limit = a.size.unwrap_or(MAX_ARCHIVE);
    if len > limit {
        return Err(Fault::TooLarge {
            url: a.url.to_string(),
            limit,
            what: match a.size {
                Some(_) => "the archive (past the size its source gives)".into(),
                None => "the archive".into(),
            },
        });
    }
    Ok(())
}

/// Checks the size and hash of a complete download; a bad file is removed.
fn finish(a: &Archive, part: &Path, hasher: Sha256, len: u64) -> Result<(), Fault> {
    if let Some(size) = a.size.filter(|&s| len < s) {
        return Err(Fault::ShortBody {
            url: a.url.to_string(),
            got: len,
            want: size,
        });
    }
    let got = hex(&hasher.finalize());
    if a.sha256.as_str() != got {
        let _ = fs_err::remove_file(part);
        return Err(Fault::HashMismatch {
            url: a.url.to_string(),
            want: a.sha256.to_string(),
            got,
        });
    }
    Ok(())
}

fn hash_prefix(file: &mut fs_err::File, path: &Path, hasher: &mut Sha256) -> Result<(), Fault> {
    file.seek(std::io::SeekFrom::Start(0))
        .map_err(|e| Fault::io(path, e))?;
    let mut buf = vec![0u8; BUF];
    loop {
        let n = file.read(&mut buf).map_err(|e| Fault::io(path, e))?;
        if n == 0 {
            return Ok(());
        }
        hasher.update(&buf[..n]);
    }
}

fn copy_local(a: &Archive, part: &Path, bar: &ProgressBar) -> Result<(), Fault> {
    let src = a.url.to_file_path().map_err(|()| no_such_file(&a.url))?;
    // Opened without blocking (a FIFO named like the archive does not hang) and checked.
    let mut input = {
        use fs_err::os::unix::fs::OpenOptionsExt;
        fs_err::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&src)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => no_such_file(&a.url),
                _ => Fault::io(&src, e),
            })?
    };
    let meta = input.metadata().map_err(|e| Fault::io(&src, e))?;
    if let Some(what) = gpuenv_core::fsutil::not_regular(&meta) {
        return Err(Fault::Io {
            path: src.display().to_string(),
            message: format!("it is {what}, not a regular file"),
        });
    }
    let mut out = {
        use fs_err::os::unix::fs::OpenOptionsExt;
        fs_err::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(part)
            .map_err(|e| Fault::io(part, e))?
    };
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; BUF];
    let mut len = 0u64;
    bar.set_length(a.size.unwrap_or(0));
    loop {
        let n = input.read(&mut buf).map_err(|e| Fault::io(&src, e))?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n]).map_err(|e| Fault::io(part, e))?;
        hasher.update(&buf[..n]);
        len += n as u64;
        if let Err(f) = over_size(a, len) {
            let _ = fs_err::remove_file(part);
            return Err(f);
        }
        bar.inc(n as u64);
    }
    if let Some(want) = a.size.filter(|&s| len < s) {
        let _ = fs_err::remove_file(part);
        return Err(Fault::ShortFile {
            path: src.display().to_string(),
            got: len,
            want,
        });
    }
    finish(a, part, hasher, len)
}

fn read_fault(url: &Url, e: &std::io::Error, got: u64, want: Option<u64>) -> Fault {
    let message = chain(e);
    let url = url.to_string();
    if e.kind() == std::io::ErrorKind::TimedOut || message.contains("timed out") {
        return Fault::Timeout { url };
    }
    match want {
        Some(want) if got < want => Fault::ShortBody { url, got, want },
        _ => Fault::Transfer { url, message },
    }
}
