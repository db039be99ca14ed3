//! The per-user download cache (`$GPUENV_HOME/downloads`, or `GPUENV_DOWNLOAD_CACHE`):
//! archives keyed by their sha256, each kept unpacked so a reinstall only links files (the
//! archive itself is removed once unpacked, unless `GPUENV_KEEP_ARCHIVES` is set), every
//! file stored once by content, partial downloads to resume, the index pages last fetched
//! (for `--offline`), and locks.
//!
//! ```text
//! archives/<sha256>      verified archives, until unpacked
//! unpacked/<sha256>/     their safe, unmapped contents, read-only (renamed into place when complete)
//! unpacked/<sha256>.seal their files' modes, sizes and sha256, checked before reuse
//! objects/<xx>/<sha256>-<mode>  each file once; unpacked trees are hard links to these
//! partial/<sha256>       downloads in progress
//! meta/<sha256 of url>   index pages and manifests
//! locks/<key>.lock
//! ```

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::Digest;

use super::objects::Objects;
use super::pathpart::Sha256;

#[derive(Debug, Clone)]
pub struct Cache {
    pub root: PathBuf,
}

impl Cache {
    pub fn new(root: impl Into<PathBuf>) -> Cache {
        Cache { root: root.into() }
    }
    pub fn archive(&self, sha256: &Sha256) -> PathBuf {
        self.root.join("archives").join(sha256.as_str())
    }
    pub fn unpacked(&self, sha256: &Sha256) -> PathBuf {
        self.root.join("unpacked").join(sha256.as_str())
    }
    /// The content-addressed store the unpacked trees link to.
    pub fn objects(&self) -> Objects {
        Objects::new(self.root.join("objects"))
    }
    /// The list of files an unpacked tree is checked against before it is reused.
    pub fn seal(&self, sha256: &Sha256) -> PathBuf {
        self.root.join("unpacked").join(format!("{sha256}.seal"))
    }
    pub fn partial(&self, sha256: &Sha256) -> PathBuf {
        self.root.join("partial").join(sha256.as_str())
    }
    pub fn meta(&self, url: &str) -> PathBuf {
        self.root
            .join("meta")
            .join(hex(&sha2::Sha256::digest(url.as_bytes())))
    }
    pub fn lock_path(&self, sha256: &Sha256) -> PathBuf {
        self.root.join("locks").join(format!("{sha256}.lock"))
    }

    /// The page last fetched from `url`: (content type, body).
    pub fn read_meta(&self, url: &str) -> Option<(String, Vec<u8>)> {
        let bytes = fs_err::read(self.meta(url)).ok()?;
        let nl = bytes.iter().position(|&b| b == b'\n')?;
        let content_type = String::from_utf8_lossy(&bytes[..nl]).into_owned();
        Some((content_type, bytes[nl + 1..].to_vec()))
    }

    pub fn write_meta(&self, url: &str, content_type: &str, body: &[u8]) -> std::io::Result<()> {
        let mut bytes = Vec::with_capacity(body.len() + content_type.len() + 1);
        bytes.extend_from_slice(content_type.replace('\n', " ").as_bytes());
        bytes.push(b'\n');
        bytes.extend_from_slice(body);
        gpuenv_core::fsutil::write_atomic(&self.meta(url), &bytes)
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The sha256 of a file, read in large blocks.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = fs_err::File::open(path)?;
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// An exclusive lock on a file, held until dropped.
pub struct FileLock {
    _file: fs_err::File,
}

/// Takes the lock at `path`, calling `waiting` first if another process holds it.
pub fn lock(path: &Path, waiting: impl FnOnce()) -> anyhow::Result<FileLock> {
    use anyhow::Context;
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir)?;
    }
    let file = fs_err::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    match file.file().try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            waiting();
            file.file()
                .lock()
                .with_context(|| format!("locking {}", path.display()))?;
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("locking {}", path.display()))
        }
    }
    Ok(FileLock { _file: file })
}
