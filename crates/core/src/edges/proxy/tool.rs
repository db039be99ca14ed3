//! Which program a tool name runs here, for the proxy and `gpuenv which`.

use super::*;

/// Where a tool comes from.
#[derive(Debug)]
pub enum Tool<'a> {
    /// The real program of an active toolchain.
    Active(&'a Active, PathBuf),
    /// A registered system toolchain's own program (Debian's `/usr/bin/rocminfo`), when
    /// no toolchain of its kind is active: run as it was before gpuenv.
    System { toolchain: String, program: PathBuf },
}

/// The program `tool` runs here: the first active toolchain's that has it, else a system
/// toolchain's own. The proxy runs it and `gpuenv which` names it: one lookup for both.
pub fn find_tool<'a>(tool: &str, active: &'a ActiveSet, registry: &Registry) -> Option<Tool<'a>> {
    if let Some((t, real)) = active
        .toolchains
        .iter()
        .find_map(|t| Some((t, t.entry.tool(tool)?)))
    {
        return Some(Tool::Active(t, real));
    }
    registry
        .toolchains
        .iter()
        .filter(|(_, e)| e.system.is_some() && active.get(e.kind).is_none())
        .find_map(|(name, e)| {
            Some(Tool::System {
                toolchain: name.to_string(),
                program: e.tool(tool)?,
            })
        })
}
