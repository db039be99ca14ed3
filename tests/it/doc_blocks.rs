//! Every shell block of README.md and docs/*.md is either run by a test or says why not:
//! the line before its fence is `<!-- run by tests/NAME.rs -->` (a test file that exists and
//! reads that document) or `<!-- not run by a test…: REASON -->`; a block of
//! docs/clusters.md whose first line is `# as root` or `# as a user` is run by
//! tests/it/cluster_doc.rs. A new block without either fails here.

use std::path::Path;

const SHELL_FENCES: [&str; 4] = ["```sh", "```bash", "```shell", "```console"];

#[test]
fn every_shell_block_in_the_docs_is_run_by_a_test_or_says_why_not() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs = vec![root.join("README.md")];
    let mut others: Vec<_> = fs_err::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    others.sort();
    docs.extend(others);
    let mut problems = Vec::new();
    let mut blocks = 0;
    for doc in &docs {
        let name = doc.strip_prefix(root).unwrap().display().to_string();
        let text = fs_err::read_to_string(doc).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !SHELL_FENCES.contains(&line.trim_end()) {
                continue;
            }
            blocks += 1;
            let at = format!("{name}:{}", i + 1);
            let first = lines.get(i + 1).copied().unwrap_or_default();
            if name == "docs/clusters.md" && (first == "# as root" || first == "# as a user") {
                continue;
            }
            let before = if i > 0 { lines[i - 1].trim() } else { "" };
            let Some(mark) = before
                .strip_prefix("<!-- ")
                .and_then(|m| m.strip_suffix(" -->"))
            else {
                problems.push(format!("{at}: no `<!-- run by tests/NAME.rs -->` or `<!-- not run by a test: REASON -->` before the block"));
                continue;
            };
            if let Some(test) = mark.strip_prefix("run by ") {
                let file = root.join(test);
                let reads_it = fs_err::read_to_string(&file).is_ok_and(|t| {
                    let base = Path::new(&name)
                        .file_name()
                        .unwrap()
                        .to_string_lossy()
                        .into_owned();
                    t.contains(&base)
                });
                if !reads_it {
                    problems.push(format!("{at}: {test} does not exist or never reads {name}"));
                }
            } else if let Some(rest) = mark.strip_prefix("not run by a test") {
                let reason = rest.split_once(':').map(|(_, r)| r.trim()).unwrap_or("");
                if reason.len() < 10 {
                    problems.push(format!("{at}: `not run by a test` without a reason"));
                }
            } else {
                problems.push(format!("{at}: unknown mark {mark:?}"));
            }
        }
    }
    assert!(blocks > 30, "only {blocks} shell blocks found");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
