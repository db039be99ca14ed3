//! What only a trusted toolchain file may do, read through accessors that give it only
//! once `trust::settle` found exactly these bytes trusted: run a program it names
//! (`host-compiler`, a build cache), relax the guard, set `[env]`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{ArchPolicy, Location, ProjectFile, TorchCheck};
use crate::facts::build_cache::BuildCache;

impl ProjectFile {
    /// The keys it sets that only a trusted file may (see [`Self::held_back`]).
    pub fn needs_trust(&self) -> bool {
        !self.privileged_keys().is_empty()
    }

    /// What it sets that is not applied because the file is not trusted, named as in the
    /// file: `host-compiler`, `[build] cache`, `[torch] check`, `[env]`. A cache turned off
    /// and the strictest guard apply without trust: they run nothing and relax nothing.
    pub fn held_back(&self) -> Vec<&'static str> {
        if self.trusted {
            return Vec::new();
        }
        self.privileged_keys()
    }

    fn privileged_keys(&self) -> Vec<&'static str> {
        let mut keys = Vec::new();
        if self.host_compiler.is_some() {
            keys.push("host-compiler");
        }
        if self
            .build_cache
            .as_ref()
            .is_some_and(|(c, _)| *c != BuildCache::Off)
        {
            keys.push("[build] cache");
        }
        if self
            .build_archs
            .as_ref()
            .is_some_and(|(a, _)| *a == ArchPolicy::Add)
        {
            keys.push("[build] archs");
        }
        if self.torch_check.is_some_and(|c| c != TorchCheck::Minor) {
            keys.push("[torch] check");
        }
        if !self.env.is_empty() {
            keys.push("[env]");
        }
        if self.torch_index.is_some() {
            keys.push("[torch] index");
        }
        keys
    }

    pub fn is_trusted(&self) -> bool {
        self.trusted
    }

    /// Records whether the bytes it was parsed from are the ones the user trusted.
    pub(crate) fn set_trusted(&mut self, trusted: bool) {
        self.trusted = trusted;
    }

    /// `host-compiler`, when trusted: a relative path (`./cc.sh`) is taken from the file's
    /// directory and given absolute; a bare command (`g++-11`) is looked up on PATH.
    pub fn host_compiler(&self) -> Option<(String, &Location)> {
        let (command, at) = self.host_compiler.as_ref().filter(|_| self.trusted)?;
        let path = Path::new(command);
        if !command.contains('/') || path.is_absolute() {
            return Some((command.clone(), at));
        }
        let dir = self.path.parent().unwrap_or(Path::new("/"));
        // `components` drops the `.` of `./cc.sh`.
        let absolute: PathBuf = dir.join(path).components().collect();
        Some((absolute.to_string_lossy().into_owned(), at))
    }

    /// `[build] cache`: `off` always applies; a cache program only when trusted.
    pub fn build_cache(&self) -> Option<(BuildCache, &Location)> {
        let (cache, at) = self.build_cache.as_ref()?;
        (*cache == BuildCache::Off || self.trusted).then_some((*cache, at))
    }

    /// `[build] archs`: `warn` and `off` always apply (they only speak or keep quiet; an
    /// untrusted file's arch pins are its own anyway); `add` only when trusted, else `warn`.
    pub fn archs_policy(&self) -> (ArchPolicy, Option<&Location>) {
        match &self.build_archs {
            Some((ArchPolicy::Add, _)) if !self.trusted => (ArchPolicy::Warn, None),
            Some((policy, at)) => (*policy, Some(at)),
            None => (ArchPolicy::Warn, None),
        }
    }

    /// `[build] archs` as written, applied or not: what `gpuenv show` says is held back.
    pub fn archs_written(&self) -> Option<(ArchPolicy, &Location)> {
        self.build_archs.as_ref().map(|(policy, at)| (*policy, at))
    }

    /// `[torch] index = "auto"`, when trusted: it makes pip and uv download from another
    /// index.
    pub fn torch_index(&self) -> Option<&Location> {
        self.torch_index.as_ref().filter(|_| self.trusted)
    }

    /// `[torch] check`: `minor` (the strictest) always applies; a relaxation only when
    /// trusted.
    pub fn torch_check(&self) -> Option<TorchCheck> {
        self.torch_check
            .filter(|c| *c == TorchCheck::Minor || self.trusted)
    }

    /// `[env]`, when trusted and not empty.
    pub fn env(&self) -> Option<&BTreeMap<String, String>> {
        Some(&self.env).filter(|e| self.trusted && !e.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::toolchain::Kind;

    fn parse_ok(text: &str) -> ProjectFile {
        super::super::parse(Path::new("/p/gpuenv.toml"), text).unwrap()
    }

    #[test]
    fn until_trusted_it_selects_and_never_runs_relaxes_or_sets() {
        let text =
            "[toolchain]\ncuda = \"12.4\"\ncuda-arch = [\"8.0\"]\nhost-compiler = \"./cc.sh\"\n\
                    [build]\ncache = \"ccache\"\narchs = \"add\"\n[torch]\ncheck = \"off\"\n[env]\nA = \"1\"\n";
        let mut f = parse_ok(text);
        assert!(f.pin(Kind::Cuda).is_some());
        assert_eq!(f.cuda_arch, ["8.0"]);
        assert_eq!(
            f.held_back(),
            [
                "host-compiler",
                "[build] cache",
                "[build] archs",
                "[torch] check",
                "[env]"
            ]
        );
        assert_eq!(f.archs_policy(), (ArchPolicy::Warn, None));
        assert_eq!(f.archs_written().map(|(p, _)| p), Some(ArchPolicy::Add));
        assert_eq!(f.host_compiler(), None);
        assert_eq!(f.build_cache(), None);
        assert_eq!(f.torch_check(), None);
        assert_eq!(f.env(), None);

        f.set_trusted(true);
        assert!(f.held_back().is_empty());
        // A relative compiler is the file's, given absolute.
        assert_eq!(f.host_compiler().unwrap().0, "/p/cc.sh");
        assert_eq!(f.build_cache().unwrap().0, BuildCache::Ccache);
        assert_eq!(f.archs_policy().0, ArchPolicy::Add);
        assert_eq!(f.archs_policy().1.map(|at| at.line), Some(7));
        assert_eq!(f.torch_check(), Some(TorchCheck::Off));
        assert_eq!(f.env().unwrap()["A"], "1");
    }

    #[test]
    fn what_runs_nothing_and_relaxes_nothing_applies_untrusted() {
        let f = parse_ok("[build]\ncache = \"off\"\narchs = \"off\"\n[torch]\ncheck = \"minor\"\n");
        assert!(!f.needs_trust());
        assert_eq!(f.archs_policy().0, ArchPolicy::Off);
        assert_eq!(f.build_cache().unwrap().0, BuildCache::Off);
        assert_eq!(f.torch_check(), Some(TorchCheck::Minor));
    }
}
