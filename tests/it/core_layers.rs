//! gpuenv-core is built in layers, each a folder of crates/core/src, and a module imports
//! only its own layer and those below it. `crate_boundaries.rs` checks the same one level
//! up (the proxy links the core alone); this reads every `crate::` path in the core, and
//! in the CLI (`src/cli`), whose commands import only its support module, never each other;
//! and no production file of the workspace is over 500 lines (unit tests go to a `tests.rs`);
//! gpuenv-install's public surface is a deliberate list (lib.rs's `pub use`s and the few
//! namespaces named here), with no `anyhow`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom first. Root files are the base utilities and the process handle;
/// every other module sits in its layer's folder.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "base",
        &[
            "byte_search",
            "diagnostic",
            "ui",
            "finding",
            "fsutil",
            "outside",
            "named",
            "passwd",
            "path_list",
            "pathpart",
            "quote",
            "stamp",
            "test_support",
            "find_diagnostic",
            "diagnostics",
            "user_file",
        ],
    ),
    ("facts", &["facts"]),
    ("context", &["context", "ask"]),
    ("store", &["store"]),
    ("project", &["project"]),
    ("plan", &["plan"]),
    ("edges", &["edges"]),
];

/// The layer (index into LAYERS) a top-level module of the core belongs to.
fn layer_of(top: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, tops)| tops.contains(&top))
}

fn core_src() -> PathBuf {
    workspace().join("crates/core/src")
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs_err::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `plan/guard/locate.rs` is `plan::guard::locate`; `plan/mod.rs` is `plan`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The unit the cycle check counts: a layer's module (`plan::resolve`), a layer's own
/// `mod.rs` (`store`), or a base module (`ui`).
fn node(path: &[String], modules: &BTreeSet<Vec<String>>) -> String {
    let top = &path[0];
    if path.len() >= 2 && modules.contains(&path[..2].to_vec()) && top != &path[1] {
        format!("{top}::{}", path[1])
    } else {
        top.clone()
    }
}

/// Each line's code without its `//` comment (the code has no `//` inside strings that
/// matters here).
fn code_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => l[..i].to_string(),
            None => l.to_string(),
        })
        .collect()
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths a `crate::…` or `super::…` use-tree names, starting at `rest` (after the
/// `::`), each as its leading segments; groups (`{a, b::c}`) are expanded. Returns the
/// paths and how many bytes of `rest` were read.
fn paths(rest: &str, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let bytes = rest.as_bytes();
    let mut i = 0;
    let mut path = prefix.to_vec();
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i < bytes.len() && bytes[i] == b'{' {
            i += 1;
            loop {
                while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b',') {
                    i += 1;
                }
                if i >= bytes.len() || bytes[i] == b'}' {
                    return i + 1;
                }
                i += paths(&rest[i..], &path, out);
            }
        }
        let start = i;
        while i < bytes.len() && is_ident(bytes[i] as char) {
            i += 1;
        }
        let segment = &rest[start..i];
        match segment {
            "" | "self" => {}
            "super" => {
                path.pop();
            }
            s => path.push(s.to_string()),
        }
        if rest[i..].starts_with("::") && path.len() < 8 {
            i += 2;
            continue;
        }
        // The rest of this path (`as x`, deeper segments) does not change its module.
        while i < bytes.len() && !matches!(bytes[i], b',' | b'}' | b';' | b'(' | b')' | b' ') {
            i += 1;
        }
        out.push(path);
        return i;
    }
}

struct Import {
    file: String,
    line: usize,
    from: Vec<String>,
    to: Vec<String>,
}

fn imports() -> (Vec<Import>, BTreeSet<Vec<String>>) {
    imports_in(&core_src(), "crates/core/src")
}

/// Every `crate::`/`super::` import of the crate whose sources are `src` (shown as `shown`),
/// and the module path of each file. The crate roots (`lib.rs`, `main.rs`) and other
/// crates' roots under `src/bin` are left out: a root declares and re-exports the modules.
fn imports_in(src: &Path, shown: &str) -> (Vec<Import>, BTreeSet<Vec<String>>) {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.retain(|f| !f.strip_prefix(src).unwrap().starts_with("bin"));
    files.sort();
    let modules: BTreeSet<Vec<String>> = files
        .iter()
        .map(|f| module_path(f.strip_prefix(src).unwrap()))
        .collect();
    let mut found = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(src).unwrap();
        if rel == Path::new("lib.rs") || rel == Path::new("main.rs") {
            continue; // the root declares the layers and re-exports their public paths
        }
        let from = module_path(rel);
        let text = fs_err::read_to_string(file).unwrap();
        let code = code_lines(&text);
        // `super` inside the file's inline `mod tests` is the file's own module.
        let tests_from = code
            .iter()
            .position(|l| l.trim_start().starts_with("mod tests"))
            .unwrap_or(usize::MAX);
        for (n, line) in code.iter().enumerate() {
            for (pos, _) in line
                .match_indices("crate::")
                .chain(line.match_indices("super::"))
            {
                let before = line[..pos].chars().next_back();
                if before.is_some_and(|c| is_ident(c) || c == '$' || c == ':') {
                    continue;
                }
                let prefix = if line[pos..].starts_with("crate") {
                    Vec::new()
                } else if n > tests_from {
                    from.clone()
                } else {
                    from[..from.len() - 1].to_vec()
                };
                // A use-tree may span lines: read on from here.
                let rest: String = code[n..].join("\n");
                let mut targets = Vec::new();
                paths(&rest[pos + 7..], &prefix, &mut targets);
                for to in targets.into_iter().filter(|t| !t.is_empty()) {
                    found.push(Import {
                        file: format!("{shown}/{}", rel.display()),
                        line: n + 1,
                        from: from.clone(),
                        to,
                    });
                }
            }
        }
    }
    (found, modules)
}

#[test]
fn no_module_of_the_core_imports_a_layer_above_its_own() {
    let (found, _) = imports();
    assert!(
        found.len() > 100,
        "the scan found only {} imports",
        found.len()
    );
    let mut wrong = Vec::new();
    for i in &found {
        let own = layer_of(&i.from[0]).unwrap_or_else(|| {
            panic!(
                "{}: `{}` is in no layer of tests/it/core_layers.rs",
                i.file, i.from[0]
            )
        });
        match layer_of(&i.to[0]) {
            None => wrong.push(format!(
                "{}:{}: crate::{} is not a layer or a base module: name the layer (crate::plan::resolve, not crate::resolve)",
                i.file,
                i.line,
                i.to.join("::")
            )),
            Some(theirs) if theirs > own => wrong.push(format!(
                "{}:{}: {} ({}) imports crate::{} ({}), a layer above its own",
                i.file,
                i.line,
                i.from.join("::"),
                LAYERS[own].0,
                i.to.join("::"),
                LAYERS[theirs].0
            )),
            Some(_) => {}
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

#[test]
fn the_modules_of_the_core_import_each_other_without_a_cycle() {
    let (found, modules) = imports();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for i in &found {
        let (a, b) = (node(&i.from, &modules), node(&i.to, &modules));
        graph.entry(b.clone()).or_default();
        if a != b {
            graph.entry(a).or_default().insert(b);
        }
    }
    let cycles = cycles(&graph);
    assert!(graph.len() > 20, "the graph has only {:?}", graph.keys());
    assert!(cycles.is_empty(), "\n{}", cycles.join("\n"));
}

/// The file (module path) that defines `path`: the longest of its prefixes that is a file.
fn file_of(path: &[String], modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))
}

/// The cycles among the files of the crate at `src`, each as the files around it. A
/// module and the modules inside it (`store/mod.rs` and `store/home.rs`) are one unit
/// whose parent declares and re-exports its children; every other import between two
/// files is an edge.
fn file_cycles(src: &Path, shown: &str) -> Vec<String> {
    let (found, modules) = imports_in(src, shown);
    let inside = |a: &[String], b: &[String]| a.len() <= b.len() && b[..a.len()] == *a;
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut files: BTreeMap<Vec<String>, String> = BTreeMap::new();
    for i in &found {
        let Some(to) = file_of(&i.to, &modules) else {
            continue;
        };
        if inside(&to, &i.from) || inside(&i.from, &to) {
            continue;
        }
        let name = |m: &[String]| m.join("::");
        files
            .entry(i.from.clone())
            .or_insert_with(|| i.file.clone());
        graph.entry(name(&to)).or_default();
        graph.entry(name(&i.from)).or_default().insert(name(&to));
    }
    cycles(&graph)
}

/// Depth-first search; a back edge closes a cycle, printed as the path around it.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        cycles: &mut Vec<String>,
    ) {
        if let Some(at) = stack.iter().position(|s| s == n) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(n.to_string());
            cycles.push(cycle.join(" -> "));
            return;
        }
        if !done.insert(n.to_string()) {
            return;
        }
        stack.push(n.to_string());
        for m in graph.get(n).into_iter().flatten() {
            visit(m, graph, stack, done, cycles);
        }
        stack.pop();
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for n in graph.keys() {
        visit(n, graph, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

#[test]
fn the_files_of_each_crate_import_each_other_without_a_cycle() {
    let mut found = Vec::new();
    for (src, shown) in [
        (workspace().join("src"), "src"),
        (core_src(), "crates/core/src"),
        (workspace().join("crates/install/src"), "crates/install/src"),
        (workspace().join("crates/doctor/src"), "crates/doctor/src"),
        (workspace().join("crates/audit/src"), "crates/audit/src"),
    ] {
        found.extend(
            file_cycles(&src, shown)
                .into_iter()
                .map(|c| format!("{shown}: {c}")),
        );
    }
    assert!(found.is_empty(), "\n{}", found.join("\n"));
}

#[test]
fn the_file_check_sees_a_cycle_between_two_sibling_files() {
    let dir = std::env::temp_dir().join(format!("core-layers-{}", std::process::id()));
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(p, text).unwrap();
    };
    write("lib.rs", "pub mod store;\n");
    write(
        "store/mod.rs",
        "mod registry;\nmod cache;\npub use registry::Registry;\n",
    );
    write(
        "store/registry.rs",
        "use super::cache::Cache;\npub struct Registry;\n",
    );
    write(
        "store/cache.rs",
        "use crate::store::{registry::Registry, Thing};\npub struct Cache;\n",
    );
    let with_cycle = file_cycles(&dir, "x");
    write("store/registry.rs", "pub struct Registry;\n");
    let without = file_cycles(&dir, "x");
    fs_err::remove_dir_all(&dir).unwrap();
    assert_eq!(
        with_cycle,
        ["store::cache -> store::registry -> store::cache"],
        "the parent's re-export of its children is no cycle; the siblings' imports are"
    );
    assert!(without.is_empty(), "{without:?}");
}

/// State a `static` can hold and change after start: a global by another name.
const SETTABLE: &[&str] = &[
    "OnceLock",
    "OnceCell",
    "LazyLock",
    "Lazy<",
    "Mutex",
    "RwLock",
    "Atomic",
    "static mut",
];

/// `file:line` of each `static` under `dir` that can be set while the program runs.
fn settable_statics(dir: &Path, shown: &str) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let text = fs_err::read_to_string(&file).unwrap();
        for (n, code) in code_lines(&text).iter().enumerate() {
            let code = code.trim_start();
            let is_static = code.starts_with("static ") || code.starts_with("pub static ");
            if is_static && SETTABLE.iter().any(|s| code.contains(s)) {
                let rel = file.strip_prefix(dir).unwrap().display();
                found.push(format!("{shown}/{rel}:{}: {code}", n + 1));
            }
        }
    }
    found
}

/// Which copy of the compatibility data is in effect depends on the gpuenv home (and its
/// upstreams): the session owns that value and hands it down as an argument, so two homes
/// in one process (a test, a proxy started from another home's view) never share it.
#[test]
fn the_facts_in_effect_are_handed_down_never_kept_process_wide() {
    // The mirror of PyTorch's indexes is a setting, not a copy of the data; it stays
    // process-wide until it too is handed down.
    let allowed = [
        "crates/core/src/facts/wheel_base.rs:10: static BASE: OnceLock<String> = OnceLock::new();",
    ];
    let found: Vec<String> = settable_statics(&core_src().join("facts"), "crates/core/src/facts")
        .into_iter()
        .filter(|f| !allowed.contains(&f.as_str()))
        .collect();
    assert!(
        found.is_empty(),
        "keep the facts in a value (facts::InEffect, owned by the Session) and pass `&Facts` down:\n{}",
        found.join("\n")
    );
    let mut readers = Vec::new();
    for (src, shown) in [
        (workspace().join("src"), "src"),
        (workspace().join("crates"), "crates"),
    ] {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for file in files {
            let text = fs_err::read_to_string(&file).unwrap();
            for (n, code) in code_lines(&text).iter().enumerate() {
                if ["facts::current(", "set_candidates(", "facts::loaded("]
                    .iter()
                    .any(|g| code.contains(g))
                {
                    let rel = file.strip_prefix(&src).unwrap().display();
                    readers.push(format!("{shown}/{rel}:{}: {}", n + 1, code.trim()));
                }
            }
        }
    }
    assert!(
        readers.is_empty(),
        "take the facts as an argument (`Session::facts`, `Inputs::facts`), not from a global:\n{}",
        readers.join("\n")
    );
}

#[test]
fn the_statics_check_sees_a_global_set_once() {
    let dir = std::env::temp_dir().join(format!("core-statics-{}", std::process::id()));
    fs_err::create_dir_all(&dir).unwrap();
    fs_err::write(
        dir.join("copies.rs"),
        "const FILE: &str = \"x\";\nstatic EMBEDDED: Facts = Facts {};\n// static A: OnceLock<u8>\nstatic LOADED: OnceLock<Loaded> = OnceLock::new();\n",
    )
    .unwrap();
    let found = settable_statics(&dir, "x");
    fs_err::remove_dir_all(&dir).unwrap();
    assert_eq!(
        found,
        ["x/copies.rs:4: static LOADED: OnceLock<Loaded> = OnceLock::new();"]
    );
}

/// The CLI's own layers (`src/cli`): `mod.rs` parses and dispatches, each command is a file
/// of `commands/`, and what commands share is in `support/`. Each way a file of the CLI at
/// `src` breaks that: a command that imports another command, `support` that imports a
/// command, or a file that imports from `mod.rs` anything but the parser (`Cli`).
fn cli_layer_problems(src: &Path, shown: &str) -> (usize, Vec<String>) {
    let (found, _) = imports_in(src, shown);
    let mut wrong = Vec::new();
    let mut seen = 0;
    for i in found
        .iter()
        .filter(|i| i.from.first().is_some_and(|c| c == "cli"))
    {
        seen += 1;
        let to = format!("crate::{}", i.to.join("::"));
        let at = format!("{}:{}", i.file, i.line);
        match (i.from.get(1).map(String::as_str), i.to.get(1).map(String::as_str)) {
            // The root dispatches to the commands and uses support: that is its job.
            (None, _) => {}
            (Some("commands"), Some("commands")) if i.to.get(2) != i.from.get(2) => wrong.push(
                format!("{at}: the command {} imports {to}, another command's: move what both need to crate::cli::support", i.from.join("::")),
            ),
            (Some("support"), Some("commands")) => wrong.push(format!(
                "{at}: {} (support) imports {to}, a command: support is below the commands",
                i.from.join("::")
            )),
            (_, Some("commands" | "support" | "Cli")) => {}
            (_, other) => wrong.push(format!(
                "{at}: {} imports {to} from src/cli/mod.rs, which only parses and dispatches: a helper goes to crate::cli::support ({other:?})",
                i.from.join("::")
            )),
        }
    }
    (seen, wrong)
}

#[test]
fn no_command_imports_another_and_the_cli_root_serves_no_helpers() {
    let (seen, wrong) = cli_layer_problems(&workspace().join("src"), "src");
    assert!(seen > 50, "the scan found only {seen} imports in src/cli");
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

#[test]
fn the_cli_check_sees_a_command_importing_another_and_a_helper_in_the_root() {
    let dir = std::env::temp_dir().join(format!("cli-layers-{}", std::process::id()));
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(p, text).unwrap();
    };
    write("main.rs", "mod cli;\n");
    write(
        "cli/mod.rs",
        "mod commands;\nmod support;\nuse commands::list;\npub struct Cli;\nfn session() {}\n",
    );
    write("cli/commands/mod.rs", "pub mod list;\npub mod show;\n");
    write(
        "cli/commands/list.rs",
        "use crate::cli::support::{self, session};\nuse crate::cli::Cli;\nuse super::show::Row;\n",
    );
    write(
        "cli/commands/show.rs",
        "use crate::cli::session;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
    );
    write("cli/support/mod.rs", "use crate::cli::commands::list;\n");
    let (_, wrong) = cli_layer_problems(&dir, "x");
    fs_err::remove_dir_all(&dir).unwrap();
    let lines: Vec<&str> = wrong
        .iter()
        .map(|w| w.split(": ").next().unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            "x/cli/commands/list.rs:3",
            "x/cli/commands/show.rs:1",
            "x/cli/support/mod.rs:1"
        ],
        "{wrong:#?}"
    );
}

#[test]
fn every_file_of_the_gpuenv_package_opens_with_a_doc_line() {
    let src = workspace().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 40, "only {} files under src/", files.len());
    let bare: Vec<String> = files
        .iter()
        .filter(|f| !fs_err::read_to_string(f).unwrap().starts_with("//!"))
        .map(|f| f.strip_prefix(&src).unwrap().display().to_string())
        .collect();
    assert!(
        bare.is_empty(),
        "these files of src/ open with no `//!` line saying what they hold: {bare:?}"
    );
}

/// Every file of `srcs` over `max` lines, as `file: N lines`, and every `tests.rs` whose
/// parent does not declare it `#[cfg(test)] mod tests;`. A `tests.rs` so declared holds a
/// module's unit tests, not production code, and may be as long as its tests are.
fn long_files(srcs: &[PathBuf], max: usize) -> Vec<String> {
    let mut found = Vec::new();
    for src in srcs {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        files.sort();
        for file in files {
            let shown = file.strip_prefix(workspace()).unwrap_or(&file).display();
            if file.file_name().is_some_and(|n| n == "tests.rs") {
                let dir = file.parent().unwrap();
                let parent = [dir.with_extension("rs"), dir.join("mod.rs")]
                    .into_iter()
                    .find(|p| p.is_file());
                let declared = parent.is_some_and(|p| {
                    fs_err::read_to_string(p)
                        .unwrap()
                        .contains("#[cfg(test)]\nmod tests;")
                });
                if !declared {
                    found.push(format!("{shown}: not declared `#[cfg(test)] mod tests;`"));
                }
                continue;
            }
            let lines = fs_err::read_to_string(&file).unwrap().lines().count();
            if lines > max {
                found.push(format!("{shown}: {lines} lines"));
            }
        }
    }
    found
}

#[test]
fn no_production_file_is_over_500_lines() {
    let ws = workspace();
    let mut srcs = vec![ws.join("src")];
    for krate in fs_err::read_dir(ws.join("crates")).unwrap() {
        srcs.push(krate.unwrap().path().join("src"));
    }
    assert!(srcs.len() >= 5, "{srcs:?}");
    let long = long_files(&srcs, 500);
    assert!(
        long.is_empty(),
        "split these where they hold two things, or move their unit tests to a sibling \
         tests.rs (`foo.rs` + `foo/tests.rs`, declared `#[cfg(test)] mod tests;`):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_length_check_counts_lines_and_lets_declared_unit_tests_be_long() {
    let dir = std::env::temp_dir().join(format!("long-files-{}", std::process::id()));
    let _ = fs_err::remove_dir_all(&dir);
    let write = |rel: &str, text: String| {
        let path = dir.join(rel);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, text).unwrap();
    };
    let lines = |n: usize| "x\n".repeat(n);
    write("src/short.rs", lines(500));
    write("src/long.rs", lines(501));
    write(
        "src/ok.rs",
        format!("{}#[cfg(test)]\nmod tests;\n", lines(10)),
    );
    write("src/ok/tests.rs", lines(900));
    write("src/hidden.rs", lines(10));
    write("src/hidden/tests.rs", lines(20));
    let found = long_files(&[dir.join("src")], 500);
    fs_err::remove_dir_all(&dir).unwrap();
    let found: Vec<String> = found
        .iter()
        .map(|f| {
            f.rsplit_once("/src/")
                .map_or(f.clone(), |(_, r)| r.to_string())
        })
        .collect();
    assert_eq!(
        found,
        [
            "hidden/tests.rs: not declared `#[cfg(test)] mod tests;`",
            "long.rs: 501 lines"
        ],
        "{found:#?}"
    );
}

/// The modules gpuenv-install's lib.rs may make `pub`, and why: each is a namespace of
/// verbs the CLI calls by path, where a flat name would say nothing (`read`, `reap`) or
/// collide (two `for_venv`s). Every other module is private, and what it offers callers is
/// named one by one in lib.rs's `pub use` list (`gpuenv_install::Thing`).
const INSTALL_NAMESPACES: &[(&str, &str)] = &[
    (
        "lock",
        "gpuenv.lock: lock::load, lock::render, lock::compare",
    ),
    (
        "prune",
        "the download cache: prune::size, prune::frees, prune::prune",
    ),
    (
        "record",
        "a tree's install record: record::read, record::keep",
    ),
    ("retire", "retire::retire, retire::reap, retire::delete"),
    (
        "torch",
        "torch::cuda_of, torch::for_venv (the same verbs as torch_rocm's)",
    ),
    ("torch_rocm", "torch_rocm::rocm_of, torch_rocm::for_venv"),
];

/// Each way the lib.rs text `lib` widens the install crate's public surface past its
/// list: a `pub mod` not in [`INSTALL_NAMESPACES`], a glob `pub use`, or a listed
/// namespace that is no longer a `pub mod` (the list would go stale).
fn install_surface_problems(lib: &str, shown: &str) -> Vec<String> {
    let mut wrong = Vec::new();
    let mut public = Vec::new();
    for (n, line) in code_lines(lib).iter().enumerate() {
        let code = line.trim();
        if let Some(rest) = code.strip_prefix("pub mod ") {
            let name: String = rest.chars().take_while(|&c| is_ident(c)).collect();
            if !INSTALL_NAMESPACES.iter().any(|(m, _)| *m == name) {
                wrong.push(format!(
                    "{shown}:{}: `pub mod {name}` is not a listed namespace: make it `mod {name}` and `pub use` what callers need",
                    n + 1
                ));
            }
            public.push(name);
        } else if code.starts_with("pub use") && code.contains('*') {
            wrong.push(format!(
                "{shown}:{}: a glob `pub use` makes every item of a module public: name them",
                n + 1
            ));
        }
    }
    for (m, _) in INSTALL_NAMESPACES {
        if !public.iter().any(|p| p == m) {
            wrong.push(format!(
                "{shown}: `{m}` is a listed namespace but no `pub mod`: take it off the list"
            ));
        }
    }
    wrong
}

#[test]
fn the_install_crate_makes_public_only_its_listed_namespaces() {
    let lib = fs_err::read_to_string(workspace().join("crates/install/src/lib.rs")).unwrap();
    assert!(lib.contains("pub use"), "lib.rs has no `pub use` list");
    let wrong = install_surface_problems(&lib, "crates/install/src/lib.rs");
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

#[test]
fn the_install_surface_check_sees_an_unlisted_pub_mod_a_glob_and_a_stale_entry() {
    let lib = "\
mod dir;
pub mod cache;
pub(crate) mod fetch;
// pub mod hooks;
pub mod lock;
pub mod prune;
pub mod record;
pub mod retire;
pub mod torch;
pub use source::*;
";
    let wrong = install_surface_problems(lib, "x");
    assert_eq!(wrong.len(), 3, "{wrong:#?}");
    assert!(wrong[0].starts_with("x:2: `pub mod cache`"), "{wrong:#?}");
    assert!(wrong[1].starts_with("x:10: a glob"), "{wrong:#?}");
    assert!(wrong[2].starts_with("x: `torch_rocm`"), "{wrong:#?}");
}

/// The library speaks `InstallError`, not `anyhow`; an install is one `Job`, not a long
/// argument list.
#[test]
fn the_install_crate_has_no_anyhow_and_no_long_argument_lists() {
    let manifest = fs_err::read_to_string(workspace().join("crates/install/Cargo.toml")).unwrap();
    assert!(
        !manifest.contains("anyhow"),
        "crates/install/Cargo.toml names anyhow"
    );
    let mut files = Vec::new();
    rust_files(&workspace().join("crates/install/src"), &mut files);
    assert!(
        files.len() > 20,
        "only {} files in crates/install/src",
        files.len()
    );
    let found: Vec<String> = files
        .iter()
        .filter(|f| {
            let text = fs_err::read_to_string(f).unwrap();
            text.contains("anyhow") || text.contains("too_many_arguments")
        })
        .map(|f| f.strip_prefix(workspace()).unwrap().display().to_string())
        .collect();
    assert!(
        found.is_empty(),
        "these name anyhow or allow too_many_arguments: {found:?}"
    );
}
