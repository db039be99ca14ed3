//! A small HTTP/1.1 server on 127.0.0.1 for install tests: serves byte strings by path,
//! honours `Range: bytes=N-`, and can cut a response short or send it slowly. It records
//! every request (method, path, Range header, body bytes sent). With [`Server::accept_puts`]
//! it is also a store: a PUT keeps the body at its path, as a build cache's HTTP backend
//! expects.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Hit {
    pub method: String,
    pub path: String,
    pub range: Option<String>,
    pub accept: Option<String>,
    pub status: u16,
    pub sent: usize,
}

#[derive(Default)]
struct State {
    routes: HashMap<String, (Vec<u8>, String)>,
    /// path -> (body bytes to send before closing, how many more responses to cut)
    cuts: HashMap<String, (usize, usize)>,
    /// path -> pause between 64 KiB chunks
    slow: HashMap<String, Duration>,
    /// path -> where a 302 sends the client
    redirects: HashMap<String, String>,
    log: Vec<Hit>,
    /// PUT stores the body at its path (else PUT is answered 405).
    puts: bool,
    /// Paths answered with a body that never ends.
    endless: Vec<String>,
    /// path -> the error status every request for it gets
    failing: HashMap<String, u16>,
}

pub struct Server {
    pub port: u16,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl Server {
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (state.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if sp.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let st = st.clone();
                std::thread::spawn(move || {
                    let _ = serve(conn, &st);
                });
            }
        });
        Server { port, state, stop }
    }

    pub fn url(&self, path: &str) -> String {
        format!(
            "http://127.0.0.1:{}/{}",
            self.port,
            path.trim_start_matches('/')
        )
    }

    pub fn put(&self, path: &str, body: impl Into<Vec<u8>>, content_type: &str) {
        let path = format!("/{}", path.trim_start_matches('/'));
        self.state
            .lock()
            .unwrap()
            .routes
            .insert(path, (body.into(), content_type.to_string()));
    }

    /// From now on a PUT stores its body at its path, served by later GETs.
    pub fn accept_puts(&self) {
        self.state.lock().unwrap().puts = true;
    }

    pub fn remove(&self, path: &str) {
        let path = format!("/{}", path.trim_start_matches('/'));
        self.state.lock().unwrap().routes.remove(&path);
    }

    /// The next `times` responses for `path` send `after` body bytes, then close.
    pub fn cut(&self, path: &str, after: usize, times: usize) {
        let path = format!("/{}", path.trim_start_matches('/'));
        self.state.lock().unwrap().cuts.insert(path, (after, times));
    }

    /// Responses for `path` pause this long after each 64 KiB.
    pub fn slow(&self, path: &str, pause: Duration) {
        let path = format!("/{}", path.trim_start_matches('/'));
        self.state.lock().unwrap().slow.insert(path, pause);
    }

    /// Requests for `path` are answered with a 302 to `to` (a path on this server).
    /// Answers `path` with 200 and a body that never ends (no length; zeros until the client
    /// hangs up), as a hostile mirror would.
    pub fn endless(&self, path: &str) {
        self.state.lock().unwrap().endless.push(path.to_string());
    }

    /// Requests for `path` are answered with `status` (a 500 of a broken mirror), until
    /// [`Server::heal`].
    pub fn fail(&self, path: &str, status: u16) {
        let path = format!("/{}", path.trim_start_matches('/'));
        self.state.lock().unwrap().failing.insert(path, status);
    }

    pub fn heal(&self, path: &str) {
        let path = format!("/{}", path.trim_start_matches('/'));
        self.state.lock().unwrap().failing.remove(&path);
    }

    pub fn redirect(&self, path: &str, to: &str) {
        let path = format!("/{}", path.trim_start_matches('/'));
        let to = format!("/{}", to.trim_start_matches('/'));
        self.state.lock().unwrap().redirects.insert(path, to);
    }

    pub fn log(&self) -> Vec<Hit> {
        self.state.lock().unwrap().log.clone()
    }

    /// Requests for paths ending with `suffix`.
    pub fn hits(&self, suffix: &str) -> Vec<Hit> {
        self.log()
            .into_iter()
            .filter(|h| h.path.ends_with(suffix))
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(conn: TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("/").to_string();
    let path = target.split(['?', '#']).next().unwrap_or("/").to_string();
    let mut range = None;
    let mut accept = None;
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            match k.trim().to_ascii_lowercase().as_str() {
                "range" => range = Some(v.trim().to_string()),
                "accept" => accept = Some(v.trim().to_string()),
                "content-length" => length = v.trim().parse().unwrap_or(0),
                _ => {}
            }
        }
    }
    let redirect = state.lock().unwrap().redirects.get(&path).cloned();
    let (route, cut, pause) = {
        let mut st = state.lock().unwrap();
        let route = st.routes.get(&path).cloned();
        let cut = match st.cuts.get_mut(&path) {
            Some((after, times)) if *times > 0 => {
                *times -= 1;
                Some(*after)
            }
            _ => None,
        };
        (route, cut, st.slow.get(&path).copied())
    };
    let mut out = conn;
    // Logged before the body goes out, and counted as it goes, so a client that has read
    // everything finds its request complete in the log.
    let hit = {
        let mut st = state.lock().unwrap();
        st.log.push(Hit {
            method: method.clone(),
            path: path.clone(),
            range: range.clone(),
            accept,
            status: 0,
            sent: 0,
        });
        st.log.len() - 1
    };
    let set = |status: u16, sent: usize| {
        let mut st = state.lock().unwrap();
        st.log[hit].status = status;
        st.log[hit].sent = sent;
    };
    if method == "PUT" {
        let mut body = vec![0; length];
        std::io::Read::read_exact(&mut reader, &mut body)?;
        let stored = {
            let mut st = state.lock().unwrap();
            if st.puts {
                st.routes
                    .insert(path.clone(), (body, "application/octet-stream".into()));
            }
            st.puts
        };
        let status = if stored { 201 } else { 405 };
        set(status, 0);
        let reason = if stored {
            "Created"
        } else {
            "Method Not Allowed"
        };
        write!(
            out,
            "HTTP/1.1 {status} {reason}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )?;
        let _ = out.flush();
        let _ = out.shutdown(std::net::Shutdown::Both);
        return Ok(());
    }
    if state.lock().unwrap().endless.contains(&path) {
        set(200, 0);
        write!(
            out,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
        )?;
        let chunk = vec![b' '; 64 * 1024];
        let mut sent = 0;
        while out.write_all(&chunk).is_ok() {
            sent += chunk.len();
            set(200, sent);
        }
        return Ok(());
    }
    let failing = state.lock().unwrap().failing.get(&path).copied();
    if let Some(status) = failing {
        set(status, 0);
        write!(
            out,
            "HTTP/1.1 {status} Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )?;
        let _ = out.flush();
        let _ = out.shutdown(std::net::Shutdown::Both);
        return Ok(());
    }
    if let Some(to) = redirect {
        set(302, 0);
        write!(
            out,
            "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )?;
        let _ = out.flush();
        let _ = out.shutdown(std::net::Shutdown::Both);
        return Ok(());
    }
    match route {
        None => {
            set(404, 0);
            let body = b"not found\n";
            write!(
                out,
                "HTTP/1.1 404 Not Found\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )?;
            out.write_all(body)?;
        }
        Some((body, content_type)) => {
            let start = range
                .as_deref()
                .and_then(|r| r.strip_prefix("bytes="))
                .and_then(|r| r.split('-').next())
                .and_then(|s| s.parse::<usize>().ok());
            let (status, slice) = match start {
                Some(s) if s >= body.len() => {
                    set(416, 0);
                    write!(out, "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", body.len())?;
                    (416, &body[0..0])
                }
                Some(s) => {
                    set(206, 0);
                    write!(out, "HTTP/1.1 206 Partial Content\r\nContent-Type: {content_type}\r\nContent-Range: bytes {s}-{}/{}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len() - 1, body.len(), body.len() - s)?;
                    (206, &body[s..])
                }
                None => {
                    set(200, 0);
                    write!(out, "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nAccept-Ranges: bytes\r\nConnection: close\r\n\r\n", body.len())?;
                    (200, &body[..])
                }
            };
            let mut sent = 0;
            if method != "HEAD" {
                let limit = cut.unwrap_or(slice.len()).min(slice.len());
                for chunk in slice[..limit].chunks(64 * 1024) {
                    if let Some(p) = pause {
                        std::thread::sleep(p);
                    }
                    sent += chunk.len();
                    set(status, sent);
                    if out.write_all(chunk).is_err() {
                        break;
                    }
                }
            }
        }
    }
    let _ = out.flush();
    // Closing the socket ends a cut response early: the client sees a short body.
    let _ = out.shutdown(std::net::Shutdown::Both);
    Ok(())
}
