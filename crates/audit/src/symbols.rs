//! The symbols an extension takes from torch's libraries, against those the installed torch
//! defines. A prebuilt extension (flash-attention's wheels) built for another torch loads
//! with `undefined symbol: _ZN3c105Error…` at import; the dynamic symbol tables say so
//! before anything is imported. ELF does not bind an undefined symbol to a library, so the
//! symbols "from torch" are those named in torch's C++ namespaces (`c10::`, `at::`,
//! `torch::`, `caffe2::`) or torch's Python glue (`THP…`).

use std::collections::HashSet;

use object::{Object as _, ObjectSymbol as _, ReadRef};

use crate::finding::{Finding, Status};
use crate::AuditError;

/// torch's libraries an extension links, as `torch/lib` holds them.
pub const TORCH_LIBS: &[&str] = &[
    "libc10.so",
    "libtorch_cpu.so",
    "libtorch_cuda.so",
    "libtorch_python.so",
    "libtorch.so",
    "libc10_cuda.so",
];

/// How many missing symbols the message names.
const SHOWN: usize = 5;

/// The dynamic symbols `data` leaves undefined (what it needs from its libraries).
pub fn undefined<'d, R: ReadRef<'d>>(data: R) -> Result<Vec<String>, AuditError> {
    let file = object::File::parse(data).map_err(AuditError::Elf)?;
    let mut out: Vec<String> = file
        .dynamic_symbols()
        .filter(|s| s.is_undefined())
        .filter_map(|s| s.name().ok().filter(|n| !n.is_empty()).map(str::to_string))
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// The dynamic symbols `data` defines (what it gives the objects that link it).
pub fn defined<'d, R: ReadRef<'d>>(data: R, into: &mut HashSet<String>) -> Result<(), AuditError> {
    let file = object::File::parse(data).map_err(AuditError::Elf)?;
    for s in file.dynamic_symbols().filter(|s| !s.is_undefined()) {
        if let Ok(name) = s.name() {
            into.insert(name.to_string());
        }
    }
    Ok(())
}

/// [`undefined`] of a file, through a cache: only its headers and dynamic symbols are read.
pub fn undefined_in_file(file: std::fs::File) -> Result<Vec<String>, AuditError> {
    undefined(&object::ReadCache::new(file))
}

/// [`defined`] of a file, through a cache (a 1 GB libtorch_cuda costs its `.dynsym`).
pub fn defined_in_file(file: std::fs::File, into: &mut HashSet<String>) -> Result<(), AuditError> {
    defined(&object::ReadCache::new(file), into)
}

/// The Itanium C++ name in words (`c10::Error::Error(…)`), or the name as it is.
pub fn demangle(name: &str) -> String {
    cpp_demangle::Symbol::new(name)
        .ok()
        .and_then(|s| s.demangle(&Default::default()).ok())
        .unwrap_or_else(|| name.to_string())
}

/// Whether an undefined symbol is one torch's libraries give.
pub fn from_torch(name: &str) -> bool {
    if name.starts_with("THP") {
        return true;
    }
    if !name.starts_with("_Z") {
        return false;
    }
    let words = demangle(name);
    let words = [
        "typeinfo for ",
        "vtable for ",
        "typeinfo name for ",
        "VTT for ",
    ]
    .iter()
    .find_map(|p| words.strip_prefix(p))
    .unwrap_or(&words);
    // A function's own name, not its parameters: `foo(c10::Half)` is not torch's.
    let head = words.split('(').next().unwrap_or(words);
    let head = head.rsplit(' ').next().unwrap_or(head);
    ["c10::", "at::", "torch::", "caffe2::", "THP"]
        .iter()
        .any(|ns| head.starts_with(ns))
}

/// Nothing to compare with (no torch found, the object's symbols unreadable).
pub fn skipped(why: String) -> Finding {
    Finding::new("torch-symbols", Status::Skip, why)
}

/// One of torch's libraries could not be read (not a regular file, damaged).
pub fn unreadable(why: String) -> Finding {
    Finding::new("torch-symbols", Status::Warn, why)
}

/// The finding: each symbol the extension takes from torch that `torch_defines` lacks.
pub fn check(undefined: &[String], torch: &str, torch_defines: &HashSet<String>) -> Finding {
    let wanted: Vec<&String> = undefined.iter().filter(|n| from_torch(n)).collect();
    let missing: Vec<&&String> = wanted
        .iter()
        .filter(|n| !torch_defines.contains(n.as_str()))
        .collect();
    if missing.is_empty() {
        return Finding::new(
            "torch-symbols",
            Status::Ok,
            format!(
                "torch {torch} defines all {} symbols it takes from torch's libraries",
                wanted.len()
            ),
        );
    }
    let shown: Vec<String> = missing
        .iter()
        .take(SHOWN)
        .map(|n| format!("{} ({n})", demangle(n)))
        .collect();
    let more = match missing.len().saturating_sub(SHOWN) {
        0 => String::new(),
        n => format!("; and {n} more"),
    };
    Finding::new(
        "torch-symbols",
        Status::Error,
        format!(
            "it was built for another torch: torch {torch} does not define {} of the {} symbols it takes from torch's libraries, so importing it fails with `undefined symbol`: {}{more}",
            missing.len(),
            wanted.len(),
            shown.join("; ")
        ),
    )
    .hint(format!(
        "install the build of the extension made for torch {torch} (a prebuilt wheel names its torch, e.g. `+cu12torch2.4`), or rebuild it against this torch: `pip install --no-build-isolation --no-binary <package> --force-reinstall <package>`; or install the torch it was built for"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torchs_namespaces_are_torchs_and_the_c_library_is_not() {
        assert!(from_torch("_ZN3c105ErrorC1ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"));
        assert!(from_torch(
            "_ZN2at4_ops10add_Tensor4callERKNS_6TensorES4_RKN3c106ScalarE"
        ));
        assert!(from_torch("_ZTIN3c1011StorageImplE"));
        assert!(from_torch("THPVariable_Wrap"));
        assert!(!from_torch("memcpy"));
        assert!(!from_torch("_ZNSt6vectorIiSaIiEE9push_backERKi"));
        assert_eq!(
            demangle("_ZN2at4_ops10add_Tensor4callERKNS_6TensorES4_RKN3c106ScalarE"),
            "at::_ops::add_Tensor::call(at::Tensor const&, at::Tensor const&, c10::Scalar const&)"
        );
    }
}
