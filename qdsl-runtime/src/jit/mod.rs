//! JIT compilation: CUDA C++ source → PTX or cubin with NVRTC, cached on disk.
//!
//! * **Options**: `--std=c++17 -default-device --gpu-architecture=compute_XY`, then the
//!   kernel's own ([`Jit::options`]). `XY` is the device's own architecture, or any
//!   [`Arch`] for offline checks (NVRTC needs no GPU). The virtual architecture makes
//!   NVRTC stop at the PTX, which the driver assembles once at load
//!   ([`Arch::virtual_name`]).
//! * **Cache**: PTX is stored under `<cache root>/ptx/<key>.ptx` (root: see [`cache`]),
//!   key = FNV-1a-128 of (source, every option, arch, NVRTC version) ([`Jit::cache_key`]),
//!   so a change of any of them recompiles.
//! * **Failures**: a rejected program returns [`JitError::Compile`] with NVRTC's log, and
//!   its source is written to `failed/<name>-<key>.cu` (under `$QDSL_DUMP_DIR` if set,
//!   else under the cache root), whose path the error names.
//! * **What the GPU loads**: [`Jit::compile_cubin`] compiles for the real
//!   architecture `sm_XY` so that NVRTC assembles the cubin itself (cached under
//!   `cubin/`); loading it is then a copy, where PTX would be assembled a second time by
//!   the driver's JIT, which serialises concurrent loads (measured on the H100: the
//!   README's first GPU solve set up in 1.2 s instead of 2.5 s). Register caps (compile
//!   knobs of the full search) are the cached PTX with a `.maxnreg` directive
//!   ([`register_cap`]), assembled by the driver: one ptxas run per cap instead of a
//!   whole NVRTC compilation.
//! * **Dumps**: with `$QDSL_DUMP_DIR=dir`, every compiled (or cache-loaded) program is
//!   written to `dir/<name>.cu` and `dir/<name>.ptx`.

mod arch;
pub mod cache;
mod nvrtc;
pub mod ptxas;
pub mod register_cap;
pub mod trace;

pub use arch::{Arch, InvalidArch};
pub use cache::ArtifactCache;

use crate::hash::StableHasher;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Environment variable naming the directory every generated `.cu` and `.ptx` is dumped to.
pub const DUMP_DIR_ENV: &str = "QDSL_DUMP_DIR";

/// Errors of JIT compilation.
#[derive(Debug, thiserror::Error)]
pub enum JitError {
    /// NVRTC cannot be loaded or run.
    #[error("NVRTC is not available: {0}")]
    Unavailable(String),
    /// The source contains a NUL byte, which no C++ source may contain.
    #[error("the source of {name} contains a NUL byte at offset {offset}")]
    InvalidSource {
        /// The program's name.
        name: String,
        /// Byte offset of the first NUL.
        offset: usize,
    },
    /// NVRTC rejected the program.
    #[error("NVRTC failed to compile {name} for {arch} (source written to {}):\n{log}", source_file.display())]
    Compile {
        /// The program's name.
        name: String,
        /// The architecture compiled for.
        arch: Arch,
        /// Where the failing source was written.
        source_file: PathBuf,
        /// NVRTC's log.
        log: String,
    },
    /// A file of the cache or dump directory could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// A cubin assembled by NVRTC for a real architecture, and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledCubin {
    /// The program's name.
    pub name: String,
    /// The cubin's bytes.
    pub cubin: Vec<u8>,
    /// Its cache key (32 hex digits).
    pub key: String,
    /// `true` if it was read from the cache rather than compiled.
    pub from_cache: bool,
}

/// Compiled PTX and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledPtx {
    /// The program's name.
    pub name: String,
    /// The PTX text.
    pub ptx: String,
    /// Its cache key (32 hex digits).
    pub key: String,
    /// `true` if it was read from the cache rather than compiled.
    pub from_cache: bool,
}

/// Counts of cache hits and NVRTC compilations of one [`Jit`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JitStats {
    /// Programs served from the PTX cache.
    pub hits: usize,
    /// Programs compiled by NVRTC.
    pub compiles: usize,
}

/// How much of one kind of work was done: how many times, in how long (wall clock,
/// summed over threads).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// How many.
    pub count: usize,
    /// Their summed wall-clock time.
    pub time: Duration,
}

impl Work {
    /// `self − earlier`: the work done since `earlier` was read.
    pub fn since(&self, earlier: Work) -> Work {
        Work {
            count: self.count.saturating_sub(earlier.count),
            time: self.time.saturating_sub(earlier.time),
        }
    }
}

impl std::fmt::Display for Work {
    /// `3 in 1.234 s`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} in {:.3} s", self.count, self.time.as_secs_f64())
    }
}

/// A thread-safe [`Work`] counter.
#[derive(Debug, Default)]
pub struct WorkCounter {
    count: AtomicUsize,
    nanos: AtomicU64,
}

impl WorkCounter {
    /// Counts one piece of work that began at `start`.
    pub fn add(&self, start: Instant) {
        let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// The work counted so far.
    pub fn get(&self) -> Work {
        Work {
            count: self.count.load(Ordering::Relaxed),
            time: Duration::from_nanos(self.nanos.load(Ordering::Relaxed)),
        }
    }
}

/// The NVRTC compiler with its PTX cache.
#[derive(Debug)]
pub struct Jit {
    root: PathBuf,
    ptx_cache: ArtifactCache,
    cubin_cache: ArtifactCache,
    dump_dir: Option<PathBuf>,
    nvrtc_version: (i32, i32),
    hits: AtomicUsize,
    compiles: AtomicUsize,
    nvrtc: WorkCounter,
}

impl Jit {
    /// A JIT caching under `cache_root` and dumping to `dump_dir` (if any); fails when
    /// NVRTC cannot be loaded.
    pub fn new(cache_root: &Path, dump_dir: Option<PathBuf>) -> Result<Self, JitError> {
        let nvrtc_version = nvrtc::version().map_err(JitError::Unavailable)?;
        Ok(Self {
            root: cache_root.to_path_buf(),
            ptx_cache: ArtifactCache::ptx(cache_root),
            cubin_cache: ArtifactCache::cubin(cache_root),
            dump_dir,
            nvrtc_version,
            hits: AtomicUsize::new(0),
            compiles: AtomicUsize::new(0),
            nvrtc: WorkCounter::default(),
        })
    }

    /// A JIT with the documented locations: [`cache::cache_root`] and `$QDSL_DUMP_DIR`.
    pub fn from_env() -> Result<Self, JitError> {
        let dump = std::env::var_os(DUMP_DIR_ENV)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from);
        Self::new(&cache::cache_root(), dump)
    }

    /// NVRTC's version (major, minor).
    pub fn nvrtc_version(&self) -> (i32, i32) {
        self.nvrtc_version
    }

    /// The cache root.
    pub fn cache_root(&self) -> &Path {
        &self.root
    }

    /// Cache hits and compilations so far.
    pub fn stats(&self) -> JitStats {
        JitStats {
            hits: self.hits.load(Ordering::Relaxed),
            compiles: self.compiles.load(Ordering::Relaxed),
        }
    }

    /// The NVRTC compilations so far and their summed time (cache hits excluded).
    pub fn nvrtc_work(&self) -> Work {
        self.nvrtc.get()
    }

    /// The full NVRTC option list: `--std=c++17`, `-default-device`,
    /// `--gpu-architecture=compute_XY` ([`Arch::virtual_name`]), then `extra` in order.
    pub fn options(arch: Arch, extra: &[String]) -> Vec<String> {
        let mut o = vec![
            "--std=c++17".to_string(),
            "-default-device".to_string(),
            format!("--gpu-architecture={}", arch.virtual_name()),
        ];
        o.extend(extra.iter().cloned());
        o.extend(experiment_defines());
        o
    }

    /// The cache key of compiling `source` with `options` for `arch` with NVRTC
    /// `nvrtc_version`: FNV-1a-128 over the length-prefixed fields, as 32 hex digits.
    pub fn cache_key(
        source: &str,
        options: &[String],
        arch: Arch,
        nvrtc_version: (i32, i32),
    ) -> String {
        let mut h = StableHasher::new();
        h.write_field(b"qdsl-ptx-v1");
        h.write_field(source.as_bytes());
        h.write_field(&(options.len() as u64).to_le_bytes());
        for o in options {
            h.write_field(o.as_bytes());
        }
        h.write_field(arch.to_string().as_bytes());
        h.write_field(format!("{}.{}", nvrtc_version.0, nvrtc_version.1).as_bytes());
        h.hex()
    }

    /// Compiles `source` (program `name`, usually the kernel's name) for `arch` with the
    /// kernel's `extra` options, or loads it from the cache: the PTX (for reading,
    /// ptxas reports and offline checks; the GPU loads [`Self::compile_cubin`]'s).
    pub fn compile(
        &self,
        name: &str,
        source: &str,
        arch: Arch,
        extra: &[String],
    ) -> Result<CompiledPtx, JitError> {
        let options = Self::options(arch, extra);
        let (ptx, key, from_cache) =
            self.artifact(name, source, arch, &options, nvrtc::Output::Ptx)?;
        let ptx = String::from_utf8(ptx).map_err(|_| {
            JitError::Unavailable(format!("NVRTC returned PTX of {name} that is not UTF-8"))
        })?;
        if let Some(dir) = &self.dump_dir {
            write_file(&dir.join(format!("{name}.cu")), source)?;
            write_file(&dir.join(format!("{name}.ptx")), &ptx)?;
        }
        Ok(CompiledPtx {
            name: name.into(),
            ptx,
            key,
            from_cache,
        })
    }

    /// Compiles and assembles `source` for the real architecture `arch` (NVRTC runs
    /// ptxas itself, so that loading the module is a copy, not a second assembly by the
    /// driver), with at most `cap` registers per thread (`--maxrregcount`) if given, or
    /// loads the cubin from the cache.
    pub fn compile_cubin(
        &self,
        name: &str,
        source: &str,
        arch: Arch,
        extra: &[String],
        cap: Option<u32>,
    ) -> Result<CompiledCubin, JitError> {
        let options = Self::cubin_options(arch, extra, cap);
        let (cubin, key, from_cache) =
            self.artifact(name, source, arch, &options, nvrtc::Output::Cubin)?;
        if let Some(dir) = &self.dump_dir {
            write_file(&dir.join(format!("{name}.cu")), source)?;
        }
        Ok(CompiledCubin {
            name: name.into(),
            cubin,
            key,
            from_cache,
        })
    }

    /// The full option list of a cubin build: `--std=c++17`, `-default-device`,
    /// `--gpu-architecture=sm_XY`, `extra` in order, then `--maxrregcount=R` if capped.
    pub fn cubin_options(arch: Arch, extra: &[String], cap: Option<u32>) -> Vec<String> {
        let mut o = vec![
            "--std=c++17".to_string(),
            "-default-device".to_string(),
            format!("--gpu-architecture={arch}"),
        ];
        o.extend(extra.iter().cloned());
        o.extend(experiment_defines());
        o.extend(cap.map(|r| format!("--maxrregcount={r}")));
        o
    }

    /// `output` of compiling `source` with `options`, from its cache or NVRTC (timed and
    /// stored): (bytes, cache key, whether it came from the cache).
    fn artifact(
        &self,
        name: &str,
        source: &str,
        arch: Arch,
        options: &[String],
        output: nvrtc::Output,
    ) -> Result<(Vec<u8>, String, bool), JitError> {
        if let Some(offset) = source.bytes().position(|b| b == 0) {
            return Err(JitError::InvalidSource {
                name: name.into(),
                offset,
            });
        }
        let cache = match output {
            nvrtc::Output::Ptx => &self.ptx_cache,
            nvrtc::Output::Cubin => &self.cubin_cache,
        };
        let key = Self::cache_key(source, options, arch, self.nvrtc_version);
        // Threads of one process that want the same artifact (the ranks of a `--grid`
        // run, each with its own GPU and `Jit`) wait for the first one's compile and then
        // read its result from the cache, instead of each compiling it.
        let in_flight = compile_lock(&cache.path(&key));
        let _compiling = in_flight.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(bytes) = cache.load(&key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok((bytes, key, true));
        }
        let start = Instant::now();
        let bytes = self.compile_uncached(name, source, arch, options, &key, output)?;
        self.nvrtc.add(start);
        trace::event("nvrtc", name, start);
        self.compiles.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = cache.store(&key, &bytes) {
            eprintln!(
                "qdsl: warning: cannot write the JIT cache {}: {e}",
                cache.path(&key).display()
            );
        }
        Ok((bytes, key, false))
    }

    fn compile_uncached(
        &self,
        name: &str,
        source: &str,
        arch: Arch,
        options: &[String],
        key: &str,
        output: nvrtc::Output,
    ) -> Result<Vec<u8>, JitError> {
        match nvrtc::compile(source, name, options, output) {
            Ok(ptx) => Ok(ptx),
            Err(nvrtc::Failure::Unavailable(why)) => Err(JitError::Unavailable(why)),
            Err(nvrtc::Failure::Rejected(log)) => {
                let dir = self
                    .dump_dir
                    .as_deref()
                    .unwrap_or(&self.root)
                    .join("failed");
                let stem = format!("{}-{}", sanitize(name), &key[..16]);
                let source_file = dir.join(format!("{stem}.cu"));
                write_file(&source_file, source)?;
                let log_text = format!("// options: {}\n{log}", options.join(" "));
                write_file(&dir.join(format!("{stem}.log")), &log_text)?;
                Err(JitError::Compile {
                    name: name.into(),
                    arch,
                    source_file,
                    log,
                })
            }
        }
    }
}

/// The process-wide lock of the cache file `path`: held while the artifact is looked up
/// and, on a miss, compiled and stored, so that one process compiles each artifact once
/// however many threads ask for it at the same time. (Separate processes still may each
/// compile it; the cache's atomic writes keep that correct.)
fn compile_lock(path: &Path) -> std::sync::Arc<std::sync::Mutex<()>> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    let mut locks = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    locks.entry(path.to_path_buf()).or_default().clone()
}

/// A file name made of `name`'s letters, digits, `_`, `-` and `.` (others become `_`).
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_-.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn write_file(path: &Path, contents: &str) -> Result<(), JitError> {
    cache::write_atomic(path, contents.as_bytes()).map_err(|source| JitError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The environment variable of extra `-D` options for every kernel compile, for A/B
/// experiments on the GPU without a rebuild (e.g. `QDSL_NVRTC_DEFINES="QDSL_BAND_SITES=32768"`;
/// whitespace-separated `NAME=VALUE` or `NAME`). Part of the compile cache key.
pub const NVRTC_DEFINES_ENV: &str = "QDSL_NVRTC_DEFINES";

/// `-DNAME=VALUE` for each word of [`NVRTC_DEFINES_ENV`].
fn experiment_defines() -> Vec<String> {
    std::env::var(NVRTC_DEFINES_ENV)
        .map(|v| v.split_whitespace().map(|d| format!("-D{d}")).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
