//! Archives built by the tests: tar.xz (hostile ones too: raw names bypass the tar crate's
//! own checks), zip wheels, and the sha256 of anything.
#![allow(dead_code)]

use std::io::Write;

use sha2::{Digest, Sha256};

#[derive(Debug, Clone)]
pub enum Item {
    File(String, Vec<u8>, u32),
    Dir(String),
    Symlink(String, String),
    HardLink(String, String),
}

pub fn file(path: &str, body: impl Into<Vec<u8>>) -> Item {
    Item::File(path.into(), body.into(), 0o644)
}

pub fn exe(path: &str, body: impl Into<Vec<u8>>) -> Item {
    Item::File(path.into(), body.into(), 0o755)
}

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A tar stream with the names exactly as given (`../x` and `/etc/x` included).
pub fn tar(items: &[Item]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for item in items {
        let mut h = tar::Header::new_gnu();
        let (name, body, link): (&str, &[u8], Option<&str>) = match item {
            Item::File(p, body, mode) => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(*mode);
                (p, body, None)
            }
            Item::Dir(p) => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                (p, &[], None)
            }
            Item::Symlink(p, t) => {
                h.set_entry_type(tar::EntryType::Symlink);
                h.set_mode(0o777);
                (p, &[], Some(t))
            }
            Item::HardLink(p, t) => {
                h.set_entry_type(tar::EntryType::Link);
                h.set_mode(0o644);
                (p, &[], Some(t))
            }
        };
        assert!(name.len() < 100, "keep test names short: {name}");
        let gnu = h.as_gnu_mut().unwrap();
        gnu.name = [0; 100];
        gnu.name[..name.len()].copy_from_slice(name.as_bytes());
        if let Some(t) = link {
            gnu.linkname = [0; 100];
            gnu.linkname[..t.len()].copy_from_slice(t.as_bytes());
        }
        h.set_size(body.len() as u64);
        h.set_mtime(1_700_000_000);
        h.set_cksum();
        b.append(&h, body).unwrap();
    }
    b.into_inner().unwrap()
}

/// xz with `threads` > 1 writes several blocks, which decode in parallel.
pub fn xz(bytes: &[u8], threads: u32, level: u32) -> Vec<u8> {
    let stream = liblzma::stream::MtStreamBuilder::new()
        .threads(threads)
        .preset(level)
        .block_size(if threads > 1 { 8 << 20 } else { 0 })
        .encoder()
        .unwrap();
    let mut enc = liblzma::write::XzEncoder::new_stream(Vec::new(), stream);
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

pub fn tar_xz(items: &[Item]) -> Vec<u8> {
    xz(&tar(items), 1, 1)
}

/// A zip (a wheel) with unix modes.
pub fn zip(items: &[Item]) -> Vec<u8> {
    let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for item in items {
        match item {
            Item::File(p, body, mode) => {
                let o = zip::write::SimpleFileOptions::default()
                    .compression_method(zip::CompressionMethod::Deflated)
                    .unix_permissions(*mode);
                z.start_file(p.as_str(), o).unwrap();
                z.write_all(body).unwrap();
            }
            Item::Dir(p) => {
                z.add_directory(p.as_str(), zip::write::SimpleFileOptions::default())
                    .unwrap();
            }
            Item::Symlink(p, t) => {
                z.add_symlink(
                    p.as_str(),
                    t.as_str(),
                    zip::write::SimpleFileOptions::default(),
                )
                .unwrap();
            }
            Item::HardLink(..) => panic!("zip has no hard links"),
        }
    }
    z.finish().unwrap().into_inner()
}
