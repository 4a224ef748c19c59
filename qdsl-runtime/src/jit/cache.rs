//! Where qdsl keeps its caches, and the on-disk PTX and cubin caches.
//!
//! # Location
//!
//! The cache root is `$QDSL_CACHE_DIR` if set, else `$XDG_CACHE_HOME/qdsl`, else
//! `$HOME/.cache/qdsl` (empty variables count as unset). Inside it:
//!
//! | path | holds |
//! |---|---|
//! | `ptx/<key>.ptx` | compiled PTX, `<key>` the 32-hex-digit content hash |
//! | `cubin/<key>.cubin` | assembled cubins (what the GPU loads), keyed likewise |
//! | `failed/<name>-<key>.cu` | the source of a failed compile (and its `.log`) |
//! | `tunecache.tsv` | the autotuner's cache ([`crate::tune`]) |
//!
//! Files are written to a temporary name and renamed into place, so a reader never
//! sees a partial file and concurrent writers of the same key are harmless (same bytes).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Environment variable overriding the cache root.
pub const CACHE_DIR_ENV: &str = "QDSL_CACHE_DIR";

/// The cache root given the values of `QDSL_CACHE_DIR`, `XDG_CACHE_HOME` and `HOME`
/// (see the module doc); `None` when all three are unset or empty.
pub fn cache_root_from(
    qdsl_cache_dir: Option<&str>,
    xdg_cache_home: Option<&str>,
    home: Option<&str>,
) -> Option<PathBuf> {
    let set = |v: Option<&str>| v.filter(|s| !s.is_empty()).map(PathBuf::from);
    set(qdsl_cache_dir)
        .or_else(|| set(xdg_cache_home).map(|d| d.join("qdsl")))
        .or_else(|| set(home).map(|d| d.join(".cache").join("qdsl")))
}

/// The cache root from the process environment; the system temporary directory's
/// `qdsl-cache` when no variable is set.
pub fn cache_root() -> PathBuf {
    let var = |k: &str| std::env::var(k).ok();
    cache_root_from(
        var(CACHE_DIR_ENV).as_deref(),
        var("XDG_CACHE_HOME").as_deref(),
        var("HOME").as_deref(),
    )
    .unwrap_or_else(|| std::env::temp_dir().join("qdsl-cache"))
}

/// Writes `contents` to `path` atomically: a uniquely named temporary file in the same
/// directory (created if needed), then a rename.
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map_or("file".into(), |n| n.to_string_lossy());
    let tmp = dir.join(format!(
        ".{name}.tmp.{}.{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&tmp, contents)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// A cache of compiled artifacts: one file per key under `<root>/<kind>`, named
/// `<key>.<kind>` — PTX under `ptx/` ([`Self::ptx`]), cubins under `cubin/`
/// ([`Self::cubin`]).
#[derive(Clone, Debug)]
pub struct ArtifactCache {
    dir: PathBuf,
    kind: &'static str,
}

impl ArtifactCache {
    /// The PTX cache under cache root `root`.
    pub fn ptx(root: &Path) -> Self {
        Self::of_kind(root, "ptx")
    }

    /// The cubin cache under cache root `root`.
    pub fn cubin(root: &Path) -> Self {
        Self::of_kind(root, "cubin")
    }

    fn of_kind(root: &Path, kind: &'static str) -> Self {
        Self {
            dir: root.join(kind),
            kind,
        }
    }

    /// The file holding `key`'s artifact.
    pub fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.{}", self.kind))
    }

    /// The cached artifact of `key`, if present and readable.
    pub fn load(&self, key: &str) -> Option<Vec<u8>> {
        std::fs::read(self.path(key)).ok()
    }

    /// Stores `artifact` under `key`.
    pub fn store(&self, key: &str, artifact: &[u8]) -> io::Result<()> {
        write_atomic(&self.path(key), artifact)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_follows_the_documented_order() {
        let r = |a, b, c| cache_root_from(a, b, c);
        assert_eq!(r(Some("/q"), Some("/x"), Some("/h")), Some("/q".into()));
        assert_eq!(r(None, Some("/x"), Some("/h")), Some("/x/qdsl".into()));
        assert_eq!(r(Some(""), None, Some("/h")), Some("/h/.cache/qdsl".into()));
        assert_eq!(r(None, Some(""), Some("")), None);
    }

    #[test]
    fn stored_artifacts_load_back_and_no_temporary_file_remains() {
        let dir = tempfile::tempdir().unwrap();
        for (cache, kind) in [
            (ArtifactCache::ptx(dir.path()), "ptx"),
            (ArtifactCache::cubin(dir.path()), "cubin"),
        ] {
            assert_eq!(cache.load("k"), None);
            cache.store("k", b"// artifact\n\0\x7f").unwrap();
            assert_eq!(
                cache.load("k").as_deref(),
                Some(&b"// artifact\n\0\x7f"[..])
            );
            let names: Vec<_> = std::fs::read_dir(dir.path().join(kind))
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(names, vec![std::ffi::OsString::from(format!("k.{kind}"))]);
        }
    }
}
