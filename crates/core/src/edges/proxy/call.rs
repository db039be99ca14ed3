//! One call of the proxy, read from its command line: the tool it was started as, a
//! `+spec` for this call, how many proxies led to it, and where it was started from.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{Exec, ProxyError, DEPTH_VAR, MAX_DEPTH};
use crate::context::{vars, Context};
use crate::plan::guard;
use crate::store::toolchain::{Kind, Spec};

pub struct Call {
    /// argv[0]'s file name: the tool to run.
    pub tool: String,
    /// The arguments after argv[0] and the `+spec`.
    pub args: Vec<OsString>,
    /// `nvcc +cuda-11.8 …`: the toolchain for this call.
    pub spec: Option<Spec>,
    /// `GPUENV_SHIM_DEPTH`: how many proxies led to this one.
    depth: u32,
    /// The path it was started as: argv[0] with a `/`, else the first `tool` on PATH.
    pub invoked: Option<PathBuf>,
    /// The kind whose compiler driver the tool is (nvcc: CUDA), if it is one.
    pub compiler_of: Option<Kind>,
}

impl Call {
    /// Reads `argv` (argv[0] included). A loop of proxies, a bad `+spec`, or a `+spec` of
    /// another kind than the compiler driver started are errors.
    pub fn parse(mut argv: Vec<OsString>, ctx: &Context) -> Result<Call, ProxyError> {
        let argv0 = PathBuf::from(if argv.is_empty() {
            OsString::new()
        } else {
            argv.remove(0)
        });
        let tool = argv0
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let depth: u32 = ctx.var(DEPTH_VAR).and_then(|d| d.parse().ok()).unwrap_or(0);
        if depth >= MAX_DEPTH {
            return Err(ProxyError::Loop { tool, depth });
        }
        let spec = match argv
            .first()
            .and_then(|a| a.to_str())
            .and_then(|a| a.strip_prefix('+'))
        {
            Some(spec) => Some(
                spec.parse::<Spec>()
                    .map_err(|source| ProxyError::BadOverride {
                        tool: tool.clone(),
                        spec: spec.to_string(),
                        source,
                    })?,
            ),
            None => None,
        };
        if spec.is_some() {
            argv.remove(0);
        }
        // The compiler driver of one kind never runs from a toolchain of another.
        let compiler_of = Kind::ALL.into_iter().find(|k| k.compiler() == tool);
        if let (Some(spec), Some(kind)) = (&spec, compiler_of) {
            if spec.kind != kind {
                return Err(ProxyError::WrongKind {
                    tool,
                    spec: spec.clone(),
                    kind,
                });
            }
        }
        Ok(Call {
            invoked: invoked_path(&argv0, &tool, ctx),
            tool,
            args: argv,
            spec,
            depth,
            compiler_of,
        })
    }

    /// The kinds a resolution for this call looks at: the `+spec`'s, else the compiler
    /// driver's, else all.
    pub fn kinds(&self) -> Vec<Kind> {
        match (&self.spec, self.compiler_of) {
            (Some(spec), _) => vec![spec.kind],
            (None, Some(kind)) => vec![kind],
            (None, None) => Kind::ALL.to_vec(),
        }
    }

    /// Whether the arguments only ask the tool something (`--version`): nothing compiles.
    pub fn is_query(&self) -> bool {
        super::args::is_query(&self.args)
    }

    /// The exec of `program` with this call's arguments and `env`, the depth counted one up
    /// (a toolchain whose tool leads back to a proxy stops at `MAX_DEPTH`).
    pub fn exec(
        self,
        program: PathBuf,
        env: impl IntoIterator<Item = (String, Option<OsString>)>,
    ) -> Exec {
        let mut env: Vec<_> = env.into_iter().collect();
        env.push((
            DEPTH_VAR.to_string(),
            Some((self.depth + 1).to_string().into()),
        ));
        Exec {
            program,
            args: self.args,
            env,
        }
    }
}

/// The path this proxy was started as: argv[0] if it has a `/`, else the first `tool` on
/// PATH, which is what the shell ran.
fn invoked_path(argv0: &Path, tool: &str, ctx: &Context) -> Option<PathBuf> {
    if argv0.as_os_str().to_string_lossy().contains('/') {
        Some(ctx.cwd.join(argv0))
    } else {
        guard::find_on_path(ctx.var_os(vars::PATH), tool)
    }
}
