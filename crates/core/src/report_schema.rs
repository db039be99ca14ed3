//! The version of gpuenv's machine-readable output (`check --json`, `doctor --json`,
//! `audit --json`, `torch index --json`): one schema, documented in docs/json.md and checked
//! in as docs/gpuenv-output.schema.json. A field is added within a version; removing or
//! changing one makes the next version.

/// `"schema"` in every `--json` object.
pub const VERSION: &str = "gpuenv-output/1";
