//! An exclusive lock between processes: a lock file created with `create_new`.
//!
//! Creating a file with `O_CREAT | O_EXCL` succeeds for exactly one caller, on every
//! local filesystem, so the file's existence is the lock. The holder writes its process
//! id into it and removes it on drop. A lock file older than `stale_after` is taken to be
//! left behind by a crashed process and is removed.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// A held lock; released (its file removed) on drop.
#[derive(Debug)]
pub struct FileLock {
    path: PathBuf,
}

/// The lock could not be taken in time.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another holder kept it for longer than the timeout.
    #[error("timed out after {waited:?} waiting for the lock {}", path.display())]
    Timeout {
        /// The lock file.
        path: PathBuf,
        /// How long we waited.
        waited: Duration,
    },
    /// The lock file could not be created for another reason.
    #[error("cannot create the lock {}: {source}", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl FileLock {
    /// Takes the lock `path`, retrying every few milliseconds for up to `timeout`.
    pub fn acquire(
        path: &Path,
        timeout: Duration,
        stale_after: Duration,
    ) -> Result<Self, LockError> {
        let start = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            match OpenOptions::new().write(true).create_new(true).open(path) {
                Ok(mut f) => {
                    let _ = writeln!(f, "{}", std::process::id());
                    return Ok(Self {
                        path: path.to_path_buf(),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    if is_stale(path, stale_after) {
                        eprintln!(
                            "qdsl: warning: removing the stale lock {} (older than {stale_after:?})",
                            path.display()
                        );
                        let _ = std::fs::remove_file(path);
                        continue;
                    }
                }
                Err(source) => {
                    return Err(LockError::Io {
                        path: path.to_path_buf(),
                        source,
                    })
                }
            }
            if start.elapsed() >= timeout {
                return Err(LockError::Timeout {
                    path: path.to_path_buf(),
                    waited: start.elapsed(),
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }
}

fn is_stale(path: &Path, stale_after: Duration) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age > stale_after)
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_excludes_others_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.lock");
        let long = Duration::from_secs(3600);
        let held = FileLock::acquire(&p, Duration::ZERO, long).unwrap();
        let e = FileLock::acquire(&p, Duration::from_millis(20), long).unwrap_err();
        assert!(matches!(e, LockError::Timeout { .. }), "{e}");
        drop(held);
        assert!(!p.exists());
        FileLock::acquire(&p, Duration::ZERO, long).unwrap();
    }

    #[test]
    fn a_stale_lock_is_broken() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.lock");
        std::fs::write(&p, "12345\n").unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let lock = FileLock::acquire(&p, Duration::ZERO, Duration::from_millis(10));
        assert!(lock.is_ok());
    }
}
