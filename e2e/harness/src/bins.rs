//! Where the pinned binaries are: `just kube-bins` builds them into a cache directory named after
//! the versions pinned in `e2e/kube/go.mod` and `e2e/etcd/go.mod`, which are read here at compile
//! time so the harness and the build recipe can never disagree on the directory.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

const KUBE_GO_MOD: &str = include_str!("../../kube/go.mod");
const ETCD_GO_MOD: &str = include_str!("../../etcd/go.mod");

/// The directory holding kube-apiserver, etcd and kubectl.
#[derive(Debug, Clone)]
pub struct KubeBinaries {
    dir: PathBuf,
}

impl KubeBinaries {
    /// Finds the binaries: `KUBEBUILDER_ASSETS` when it holds kube-apiserver and etcd (the envtest
    /// convention), else the cache `just kube-bins` fills.
    ///
    /// # Errors
    /// When neither place holds them, with the command that builds them.
    pub fn locate() -> Result<Self> {
        if let Some(assets) = std::env::var_os("KUBEBUILDER_ASSETS").map(PathBuf::from)
            && assets.join("kube-apiserver").is_file()
            && assets.join("etcd").is_file()
        {
            return Ok(Self { dir: assets });
        }
        let dir = cache_dir().join("kube-bins").join(format!(
            "{}-etcd-{}",
            pinned(KUBE_GO_MOD, "k8s.io/kubernetes"),
            pinned(ETCD_GO_MOD, "go.etcd.io/etcd/server/v3")
        ));
        for binary in ["kube-apiserver", "etcd"] {
            if !dir.join(binary).is_file() {
                return Err(Error::MissingBinary {
                    binary,
                    dir,
                    recipe: "kube-bins",
                });
            }
        }
        Ok(Self { dir })
    }

    /// The directory itself.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of one binary in it.
    #[must_use]
    pub fn binary(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// Where capz-rs keeps build output outside the clone (the justfile's `cache`).
#[must_use]
pub fn cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("capz-rs")
}

/// The version a wrapper module's `go.mod` requires of `module`.
pub(crate) fn pinned<'a>(go_mod: &'a str, module: &str) -> &'a str {
    go_mod
        .lines()
        .filter_map(|line| line.trim().strip_prefix("require ").or(Some(line.trim())))
        .find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some(module)).then(|| words.next()).flatten()
        })
        .unwrap_or("unknown")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pins_are_read_from_the_wrapper_modules() {
        assert!(pinned(KUBE_GO_MOD, "k8s.io/kubernetes").starts_with("v1.36."));
        assert!(pinned(ETCD_GO_MOD, "go.etcd.io/etcd/server/v3").starts_with("v3.6."));
        assert_eq!(
            pinned("require example.com/a v1.2.3\n", "example.com/a"),
            "v1.2.3"
        );
        assert_eq!(pinned("module x\n", "example.com/a"), "unknown");
    }
}
