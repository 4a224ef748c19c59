//! Helpers shared by the integration tests: the real test data and scratch directories.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};

/// Path of a file under `tests/data/` (the real configurations and their provenance).
pub fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// The bytes of a file under `tests/data/`.
pub fn sample(rel: &str) -> Vec<u8> {
    std::fs::read(data(rel)).unwrap()
}

/// A scratch directory under the system temp dir, unique to this process and `name`,
/// removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("qdsl-test-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// Path of a file inside the directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes `bytes` to a file of the directory and returns its path.
    pub fn put(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.file(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
