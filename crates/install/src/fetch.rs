//! Fetching over HTTP(S) or from `file://` mirrors: index pages (kept in the cache for
//! `--offline`), and archives unpacked in the cache (downloaded by `download.rs`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::error::Context as _;
use indicatif::ProgressBar;
use reqwest::blocking::Client;
use reqwest::Url;
use rustix::fs::FileType;

use super::cache::Refused;
use super::cache::{self, Cache};
use super::dir::{kind, trusted_owner, Dir, Stat, Untrusted};
use super::fault::{chain, check_status, classify, first_line, Fault};
use super::hooks::Hooks;
use super::{seal, unpack, Archive};
use gpuenv_core::context::{vars, Context};
use gpuenv_core::outside;
use gpuenv_core::ui;

pub(super) const ATTEMPTS: u32 = 4;
pub(super) const BUF: usize = 1 << 20;

/// Network settings read from the context once.
#[derive(Debug, Clone, Default)]
pub struct Net {
    pub https_proxy: Option<String>,
    pub http_proxy: Option<String>,
    pub no_proxy: Option<String>,
    pub timeout: Option<Duration>,
}

impl Net {
    pub fn from_ctx(ctx: &Context) -> Net {
        let first = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| ctx.var_nonempty(n))
                .map(str::to_string)
        };
        Net {
            https_proxy: first(&[
                vars::HTTPS_PROXY,
                vars::https_proxy,
                vars::ALL_PROXY,
                vars::all_proxy,
            ]),
            http_proxy: first(&[
                vars::HTTP_PROXY,
                vars::http_proxy,
                vars::ALL_PROXY,
                vars::all_proxy,
            ]),
            no_proxy: first(&[vars::NO_PROXY, vars::no_proxy]),
            timeout: ctx
                .var_nonempty(vars::GPUENV_HTTP_TIMEOUT)
                .and_then(|s| s.parse::<f64>().ok())
                .map(Duration::from_secs_f64),
        }
    }
}

/// A fetched page: where it came from after redirects (links resolve against it).
#[derive(Debug, Clone)]
pub struct Page {
    pub url: Url,
    pub content_type: String,
    pub body: Vec<u8>,
}

impl Page {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

pub struct Fetcher {
    net: Net,
    client: OnceLock<Result<Client, ClientError>>,
    pub cache: Cache,
    pub offline: bool,
    pub hooks: Hooks,
    /// Keep each archive after it is unpacked (`GPUENV_KEEP_ARCHIVES`). A reinstall needs
    /// only the unpacked tree, whose files installed toolchains share, so by default the
    /// archive goes once its tree is sealed.
    pub keep_archives: bool,
    /// Bytes fetched from the network (not from the cache), for the summary.
    pub fetched: AtomicU64,
    /// The cache's users lock ([`Cache::using`]), taken at the first archive and held as
    /// long as the fetcher lives: until what it unpacked is linked into a toolchain.
    using: Mutex<Option<cache::FileLock>>,
}

impl Fetcher {
    pub fn new(net: Net, cache: Cache, offline: bool, hooks: Hooks) -> Fetcher {
        Fetcher {
            net,
            client: OnceLock::new(),
            cache,
            offline,
            hooks,
            keep_archives: false,
            fetched: AtomicU64::new(0),
            using: Mutex::new(None),
        }
    }

    /// Takes the cache's users lock once, before any archive's own lock (a prune takes
    /// them in the same order), so a `cache prune` waits for this install to finish.
    fn use_cache(&self, bar: &ProgressBar) -> crate::Result<()> {
        let mut using = self.using.lock().expect("no worker panics holding it");
        if using.is_none() {
            *using = Some(
                self.cache
                    .using(|| bar.set_message("waiting for `gpuenv cache prune` to finish"))?,
            );
        }
        Ok(())
    }

    pub(super) fn client(&self, url: &Url) -> Result<&Client, Fault> {
        self.client
            .get_or_init(|| build_client(&self.net))
            .as_ref()
            .map_err(|e| Fault::Transfer {
                url: url.to_string(),
                message: e.to_string(),
            })
    }

    /// An index page or manifest (`kind`, which caps its size). `file://` URLs read the
    /// file, or list the directory as HTML links; with `--offline` the copy kept from the
    /// last fetch is used.
    pub fn page(&self, url: &Url, accept: &str, kind: outside::Kind) -> Result<Page, Fault> {
        if url.scheme() == "file" {
            return local_page(url, kind);
        }
        if self.offline {
            let (content_type, body) = self
                .cache
                .read_meta(url.as_str(), kind.limit())
                .ok_or_else(|| Fault::NotCached {
                    url: url.to_string(),
                })?;
            return Ok(Page {
                url: url.clone(),
                content_type,
                body,
            });
        }
        let page = retry(|| {
            let resp = self
                .client(url)?
                .get(url.clone())
                .header(reqwest::header::ACCEPT, accept)
                .send()
                .map_err(|e| classify(url, &e))?;
            check_status(url, resp.status())?;
            let final_url = resp.url().clone();
            let content_type = resp
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            let body = capped(resp, url, kind)?;
            self.fetched.fetch_add(body.len() as u64, Ordering::Relaxed);
            Ok(Page {
                url: final_url,
                content_type,
                body,
            })
        })?;
        // Kept for --offline; failing to keep it only costs that.
        let _ = self
            .cache
            .write_meta(url.as_str(), &page.content_type, &page.body);
        Ok(page)
    }

    /// The archive's contents unpacked in the cache, downloading and checking it first when
    /// needed. Concurrent processes wanting the same archive take turns. Nothing in the
    /// cache is followed through a link or reused from another user.
    pub fn unpacked(&self, a: &Archive, bar: &ProgressBar) -> crate::Result<PathBuf> {
        self.use_cache(bar)?;
        let key = a.sha256.as_str();
        let trees = self.cache.made("unpacked")?;
        let dir = trees.join(key);
        let list = trees.join(format!("{key}{}", cache::SEAL));
        let objects = self.cache.objects();
        let is_tree = |st: &Option<Stat>| {
            st.as_ref()
                .is_some_and(|st| kind(st) == FileType::Directory)
        };
        if is_tree(&trees.stat(key)?) && seal::verify(&dir, &list, &objects).is_ok() {
            return Ok(dir);
        }
        let _lock = self.cache.lock(&a.sha256, || {
            bar.set_message(format!("{} (waiting for another gpuenv)", a.component))
        })?;
        let found = trees.stat(key)?;
        if is_tree(&found) {
            match seal::verify(&dir, &list, &objects) {
                Ok(()) => return Ok(dir),
                // Unpacked by a gpuenv that kept no list: unpacked again quietly.
                Err(seal::Changed::NoList) => {}
                Err(changed) => {
                    let why = match changed {
                        seal::Changed::Foreign(..) => "is not reused",
                        _ => "was changed after it was unpacked",
                    };
                    bar.suspend(|| {
                        ui::warn(format!(
                            "the unpacked {} in the download cache ({}) {why}: {changed}; unpacking it again",
                            a.file_name(),
                            dir.display()
                        ))
                    })
                }
            }
        }
        // A tree that is not as it was unpacked, or a link planted at its name (removed
        // itself, never followed).
        if let Some(st) = found {
            if let Err(e) = trees.remove_tree(key) {
                // Another user's, in a shared cache whose sticky bit keeps it theirs.
                if !trusted_owner(st.st_uid) {
                    let path = dir.clone();
                    return Err(Refused::from(Untrusted::Owner {
                        path,
                        uid: st.st_uid,
                    })
                    .into());
                }
                return Err(e)
                    .with_context(|| format!("replacing {} in the download cache", dir.display()));
            }
        }
        let (archives, fresh) = self.archive(a, bar)?;
        let file = archives.join(key);
        for name in trees.names()? {
            let name = name.to_string_lossy();
            if [".tmp-", ".old-"]
                .iter()
                .any(|p| name.starts_with(&format!("{p}{key}@")))
            {
                // Left by a killed process: we hold the archive's lock.
                let _ = trees.remove_tree(name.as_ref());
            }
        }
        let tmp = crate::dir::temp_dir(trees.path(), key)?;
        bar.set_message(format!("{} (unpacking)", a.component));
        let (label, url) = (a.file_name(), a.url.to_string());
        let result = unpack::unpack(&file, a.format, tmp.path(), &label, &url, &self.hooks);
        if let Err(e) = result {
            // A corrupt archive is dropped so the next attempt fetches it again.
            if fresh || matches!(e, Fault::CorruptArchive { .. }) {
                let _ = archives.remove_file(key);
            }
            return Err(e.into());
        }
        // Readable by others like the archive's own directories (a temp dir is private), so
        // what root unpacks in a shared cache serves every user.
        let readable = std::os::unix::fs::PermissionsExt::from_mode(0o755);
        fs_err::set_permissions(tmp.path(), readable)?;
        seal::seal(tmp.path(), &list, &objects)?;
        fs_err::rename(tmp.keep(), &dir)?;
        if !self.keep_archives {
            // The sealed tree is what a reinstall uses; failing to remove only costs disk.
            let _ = archives.remove_file(key);
        }
        Ok(dir)
    }

    /// The archive in the cache's `archives/`, checked against its sha256 (downloaded when it
    /// is missing, damaged, a link or another user's), and whether it was downloaded now.
    fn archive(&self, a: &Archive, bar: &ProgressBar) -> crate::Result<(Dir, bool)> {
        let key = a.sha256.as_str();
        let archives = self.cache.made("archives")?;
        let file = archives.join(key);
        match archives.stat(key)? {
            Some(st) if kind(&st) == FileType::RegularFile && trusted_owner(st.st_uid) => {
                // Checked again before extracting: the cache may have been damaged since.
                let got = cache::sha256_file(&file)?;
                if a.sha256.as_str() == got {
                    return Ok((archives, false));
                }
                ui::warn(format!(
                    "the cached {} is damaged (sha256 {got}); fetching it again",
                    file.display()
                ));
                archives.remove_file(key)?;
            }
            // A link, or another user's file: never used.
            Some(_) => archives.remove_file(key)?,
            None => {}
        }
        self.download(a, &file, bar)?;
        Ok((archives, true))
    }
}

/// A missing local file is not an HTTP 404: the message names the path.
pub(super) fn no_such_file(url: &Url) -> Fault {
    match url.to_file_path() {
        Ok(path) => Fault::NoSuchFile {
            path: path.display().to_string(),
        },
        Err(()) => Fault::NoSuchFile {
            path: url.to_string(),
        },
    }
}

/// The body of `resp`, read up to the cap of `kind` and refused past it: an endless reply
/// costs that much memory, never more.
fn capped(
    resp: reqwest::blocking::Response,
    url: &Url,
    kind: outside::Kind,
) -> Result<Vec<u8>, Fault> {
    use std::io::Read;
    let limit = kind.limit();
    let mut body = Vec::new();
    resp.take(limit + 1)
        .read_to_end(&mut body)
        .map_err(|e| read_fault(url, &e))?;
    if body.len() as u64 > limit {
        return Err(too_large(url, kind));
    }
    Ok(body)
}

pub(super) fn too_large(url: &Url, kind: outside::Kind) -> Fault {
    Fault::TooLarge {
        url: url.to_string(),
        limit: kind.limit(),
        what: format!("the {}", kind.name()),
    }
}

fn read_fault(url: &Url, e: &std::io::Error) -> Fault {
    let message = chain(e);
    if e.kind() == std::io::ErrorKind::TimedOut || message.contains("timed out") {
        return Fault::Timeout {
            url: url.to_string(),
        };
    }
    Fault::Transfer {
        url: url.to_string(),
        message,
    }
}

fn local_page(url: &Url, kind: outside::Kind) -> Result<Page, Fault> {
    let not_found = || no_such_file(url);
    let path = url.to_file_path().map_err(|()| not_found())?;
    if path.is_dir() {
        // A directory lists its entries as links, like a web server's index page.
        let mut names: Vec<String> = fs_err::read_dir(&path)
            .map_err(|e| Fault::io(&path, e))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let mut html = String::from("<html><body>\n");
        for n in names {
            html.push_str(&format!("<a href=\"{n}\">{n}</a>\n"));
        }
        html.push_str("</body></html>\n");
        let mut dir_url = url.clone();
        if !dir_url.path().ends_with('/') {
            dir_url.set_path(&format!("{}/", dir_url.path()));
        }
        return Ok(Page {
            url: dir_url,
            content_type: "text/html".into(),
            body: html.into_bytes(),
        });
    }
    let body = outside::read(&path, kind).map_err(|e| match e.why {
        _ if e.is_missing() => not_found(),
        outside::Why::TooLarge { .. } => too_large(url, kind),
        why => Fault::Io {
            path: path.display().to_string(),
            message: why.to_string(),
        },
    })?;
    let content_type = if path.extension().is_some_and(|e| e == "json") {
        "application/json"
    } else {
        "text/html"
    };
    Ok(Page {
        url: url.clone(),
        content_type: content_type.into(),
        body,
    })
}

/// The HTTP client cannot be set up; kept (as text: reqwest's errors cannot be cloned) for
/// every download that asks for the client.
#[derive(Debug, thiserror::Error)]
enum ClientError {
    #[error("the proxy {proxy} is not a URL: {message}")]
    Proxy { proxy: String, message: String },
    #[error("cannot set up HTTPS: {0}")]
    Tls(String),
}

fn build_client(net: &Net) -> Result<Client, ClientError> {
    let mut b = Client::builder()
        .user_agent(concat!("gpuenv/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(20))
        // Per read, not for the whole body: big archives take as long as they take.
        .timeout(net.timeout.unwrap_or(Duration::from_secs(60)))
        .no_proxy();
    let no_proxy = net
        .no_proxy
        .as_deref()
        .and_then(reqwest::NoProxy::from_string);
    for (proxy, https) in [(&net.https_proxy, true), (&net.http_proxy, false)] {
        if let Some(p) = proxy {
            let proxy = if https {
                reqwest::Proxy::https(p)
            } else {
                reqwest::Proxy::http(p)
            }
            .map_err(|e| ClientError::Proxy {
                proxy: p.clone(),
                message: e.to_string(),
            })?;
            b = b.proxy(proxy.no_proxy(no_proxy.clone()));
        }
    }
    b.build().map_err(|e| ClientError::Tls(e.to_string()))
}

fn retry<T>(mut f: impl FnMut() -> Result<T, Fault>) -> Result<T, Fault> {
    let mut attempt = 1;
    loop {
        match f() {
            // Said only with -v: the failure, if it stays, is said once (an error, or
            // the one note before the next source is tried).
            Err(fault) if fault.is_transient() && attempt < ATTEMPTS => {
                ui::verbose(format!(
                    "{}; retrying ({}/{ATTEMPTS})",
                    first_line(&fault),
                    attempt + 1
                ));
                std::thread::sleep(Duration::from_millis(200 << attempt));
                attempt += 1;
            }
            other => return other,
        }
    }
}
