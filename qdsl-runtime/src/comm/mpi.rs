//! MPI, loaded at run time: the [`Bootstrap`] of a multi-process launch (`mpirun -n P`),
//! which carries one thing — NCCL's 128-byte unique id from rank 0 to every rank
//! ([`super::bootstrap::shared_unique_id`]); halos and reductions then go through NCCL.
//!
//! Like NCCL ([`super::nccl`]), the library is opened with `dlopen`, so qdsl builds and
//! runs without MPI. Searched, in order: `$QDSL_MPI_LIB`, then `libmpi.so.40` (Open MPI
//! 3–5), `libmpi.so.12` (MPICH 3–4, Intel MPI, MVAPICH, Cray MPICH), `libmpich.so.12`,
//! `libmpi.so`. It is opened with `RTLD_GLOBAL`: Open MPI's components, themselves
//! `dlopen`ed by `MPI_Init`, resolve their symbols against it. A missing library is
//! [`LibraryMissing`] listing every path tried and naming `QDSL_MPI_LIB`.
//!
//! # Handles are not ABI
//! `MPI_COMM_WORLD` and `MPI_BYTE` are macros: MPICH and its derivatives define them as
//! the integers `0x44000000` and `0x4c00010d` (`MPI_Comm`, `MPI_Datatype` are `int`);
//! Open MPI as the addresses of the globals `ompi_mpi_comm_world` and `ompi_mpi_byte`
//! (the types are pointers). The loader asks `MPI_Get_library_version` (callable before
//! `MPI_Init`) which family the library is ([`MpiAbi::from_version`]) and binds the
//! handle-taking calls with that family's types.
//!
//! # No hangs
//! `MPI_Init_thread` asks for `MPI_THREAD_SERIALIZED`, so that [`MpiWorld`]'s broadcast
//! can run on a helper thread while the caller waits at most the configured timeout: a
//! rank that died leaves the others with [`CommError::Timeout`] naming the root (the
//! launcher then ends the job), never waiting forever.

use super::bootstrap::Bootstrap;
use super::{CommConfig, CommError};
use crate::libs::LibraryMissing;
use std::ffi::{c_char, c_int, c_void};
use std::path::PathBuf;
use std::sync::{mpsc, OnceLock};

/// The environment variable naming the MPI library's path.
pub const MPI_LIB_VAR: &str = "QDSL_MPI_LIB";

/// MPICH's `MPI_COMM_WORLD` (mpi.h of MPICH, Intel MPI, MVAPICH: the MPICH ABI).
pub const MPICH_COMM_WORLD: c_int = 0x4400_0000;
/// MPICH's `MPI_BYTE`.
pub const MPICH_BYTE: c_int = 0x4c00_010d;
/// `MPI_THREAD_SERIALIZED` (2 in both families).
const MPI_THREAD_SERIALIZED: c_int = 2;
/// `MPI_SUCCESS`.
const MPI_SUCCESS: c_int = 0;
/// The largest `MPI_MAX_LIBRARY_VERSION_STRING` of the families (MPICH's 8192).
const VERSION_BUFFER: usize = 8192;

/// Which family's handles a library uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MpiAbi {
    /// MPICH and its ABI-compatible derivatives: integer handles.
    Mpich,
    /// Open MPI: handles are addresses of its predefined objects.
    OpenMpi,
}

impl MpiAbi {
    /// The family of the library whose `MPI_Get_library_version` says `version`; an
    /// unknown family is an error quoting the string.
    pub fn from_version(version: &str) -> Result<Self, CommError> {
        // Open MPI first: its string may mention MPICH nowhere, but be explicit.
        if version.contains("Open MPI") {
            return Ok(Self::OpenMpi);
        }
        let mpich = ["MPICH", "Intel(R) MPI", "MVAPICH"];
        if mpich.iter().any(|m| version.contains(m)) {
            return Ok(Self::Mpich);
        }
        Err(CommError::Call {
            rank: 0,
            call: "MPI_Get_library_version".into(),
            message: format!(
                "an MPI library of unknown family ({:?}); qdsl knows the handles of Open MPI \
                 and of the MPICH ABI (MPICH, Intel MPI, MVAPICH, Cray MPICH)",
                version.lines().next().unwrap_or("")
            ),
        })
    }
}

/// The library candidates in search order (module docs).
pub fn candidates() -> Vec<PathBuf> {
    let mut c = Vec::new();
    if let Some(p) = std::env::var_os(MPI_LIB_VAR).filter(|p| !p.is_empty()) {
        c.push(PathBuf::from(p));
    }
    for name in [
        "libmpi.so.40",
        "libmpi.so.12",
        "libmpich.so.12",
        "libmpi.so",
    ] {
        c.push(PathBuf::from(name));
    }
    c
}

/// The calls that take handles, with one family's handle type `H`.
#[derive(Clone, Copy, Debug)]
pub struct HandleCalls<H: Copy> {
    /// `MPI_COMM_WORLD`.
    pub comm_world: H,
    /// `MPI_BYTE`.
    pub byte: H,
    /// `MPI_Comm_rank(comm, &rank)`.
    pub comm_rank: unsafe extern "C" fn(H, *mut c_int) -> c_int,
    /// `MPI_Comm_size(comm, &size)`.
    pub comm_size: unsafe extern "C" fn(H, *mut c_int) -> c_int,
    /// `MPI_Bcast(buffer, count, datatype, root, comm)`.
    pub bcast: unsafe extern "C" fn(*mut c_void, c_int, H, c_int, H) -> c_int,
}

/// An Open MPI handle: the address of a predefined object of the library (which stays
/// loaded for the life of the process), shared between threads as MPI shares it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OmpiHandle(pub *mut c_void);

// SAFETY: the handle is the address of an immutable predefined object of a library that
// is never unloaded; MPI allows it to be used from any thread (MPI_THREAD_SERIALIZED).
unsafe impl Send for OmpiHandle {}
// SAFETY: as above: never dereferenced by qdsl, only passed back to MPI.
unsafe impl Sync for OmpiHandle {}

/// The handle-taking calls of the library's family.
#[derive(Clone, Copy, Debug)]
pub enum FamilyCalls {
    /// Integer handles.
    Mpich(HandleCalls<c_int>),
    /// Address handles.
    OpenMpi(HandleCalls<OmpiHandle>),
}

/// The entry points qdsl uses, resolved.
#[derive(Debug)]
pub struct MpiLibrary {
    /// Where the library was found.
    pub path: String,
    /// The library's own description (`MPI_Get_library_version`).
    pub version: String,
    /// `MPI_Initialized(&flag)`.
    pub initialized: unsafe extern "C" fn(*mut c_int) -> c_int,
    /// `MPI_Init_thread(&argc, &argv, required, &provided)`.
    pub init_thread: unsafe extern "C" fn(*mut c_int, *mut c_void, c_int, *mut c_int) -> c_int,
    /// `MPI_Finalize()`.
    pub finalize: unsafe extern "C" fn() -> c_int,
    /// The calls that take handles.
    pub calls: FamilyCalls,
}

impl MpiLibrary {
    /// The library, loaded and resolved once per process (module docs); the same error
    /// on every call when it is missing.
    pub fn get() -> Result<&'static MpiLibrary, CommError> {
        static LIB: OnceLock<Result<MpiLibrary, CommError>> = OnceLock::new();
        LIB.get_or_init(Self::load).as_ref().map_err(Clone::clone)
    }

    fn load() -> Result<Self, CommError> {
        let mut tried = Vec::new();
        for path in candidates() {
            tried.push(path.display().to_string());
            let flags = libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL;
            // SAFETY: loading MPI runs its initialisers, which have no preconditions
            // (MPI_Init is called later, explicitly).
            if let Ok(lib) = unsafe { libloading::os::unix::Library::open(Some(&path), flags) } {
                // Kept loaded for the life of the process: the symbols and Open MPI's
                // handles point into it.
                let lib: &'static libloading::os::unix::Library = Box::leak(Box::new(lib));
                return Self::resolve(lib, path.display().to_string());
            }
        }
        Err(CommError::Library(LibraryMissing {
            library: "libmpi.so".into(),
            tried: tried.join(", "),
            hint: format!(
                "set {MPI_LIB_VAR} to the path of the MPI library mpirun belongs to (Open MPI: \
                 libmpi.so.40; MPICH, Intel MPI: libmpi.so.12)"
            ),
        }))
    }

    fn resolve(
        lib: &'static libloading::os::unix::Library,
        path: String,
    ) -> Result<Self, CommError> {
        /// The symbol `name` as a value of type `F` (a function pointer with the MPI
        /// standard's C signature, or the address of a predefined object).
        fn sym<F: Copy>(
            lib: &'static libloading::os::unix::Library,
            path: &str,
            name: &str,
        ) -> Result<F, CommError> {
            // SAFETY: every caller names an MPI symbol (MPI-3.0 and later) and the type
            // of its C declaration; the library stays loaded for the process.
            unsafe { lib.get::<F>(name.as_bytes()) }
                .map(|s| *s)
                .map_err(|e| CommError::Call {
                    rank: 0,
                    call: format!("resolving {name} in {path}"),
                    message: e.to_string(),
                })
        }
        type GetVersion = unsafe extern "C" fn(*mut c_char, *mut c_int) -> c_int;
        let get_version: GetVersion = sym(lib, &path, "MPI_Get_library_version")?;
        let mut buffer = vec![0u8; VERSION_BUFFER];
        let mut len: c_int = 0;
        // SAFETY: the buffer holds MPI_MAX_LIBRARY_VERSION_STRING bytes of either family.
        let code = unsafe { get_version(buffer.as_mut_ptr().cast(), &mut len) };
        if code != MPI_SUCCESS {
            return Err(CommError::Call {
                rank: 0,
                call: format!("MPI_Get_library_version of {path}"),
                message: format!("error code {code}"),
            });
        }
        let len = usize::try_from(len).unwrap_or(0).min(VERSION_BUFFER);
        let version = String::from_utf8_lossy(&buffer[..len])
            .trim_end_matches('\0')
            .trim()
            .to_string();
        let calls = match MpiAbi::from_version(&version)? {
            MpiAbi::Mpich => FamilyCalls::Mpich(HandleCalls {
                comm_world: MPICH_COMM_WORLD,
                byte: MPICH_BYTE,
                comm_rank: sym(lib, &path, "MPI_Comm_rank")?,
                comm_size: sym(lib, &path, "MPI_Comm_size")?,
                bcast: sym(lib, &path, "MPI_Bcast")?,
            }),
            MpiAbi::OpenMpi => FamilyCalls::OpenMpi(HandleCalls {
                comm_world: OmpiHandle(sym::<*mut c_void>(lib, &path, "ompi_mpi_comm_world")?),
                byte: OmpiHandle(sym::<*mut c_void>(lib, &path, "ompi_mpi_byte")?),
                comm_rank: sym(lib, &path, "MPI_Comm_rank")?,
                comm_size: sym(lib, &path, "MPI_Comm_size")?,
                bcast: sym(lib, &path, "MPI_Bcast")?,
            }),
        };
        Ok(Self {
            initialized: sym(lib, &path, "MPI_Initialized")?,
            init_thread: sym(lib, &path, "MPI_Init_thread")?,
            finalize: sym(lib, &path, "MPI_Finalize")?,
            calls,
            version,
            path,
        })
    }

    /// An error unless `code` is `MPI_SUCCESS`.
    fn check(rank: usize, call: &str, code: c_int) -> Result<(), CommError> {
        if code == MPI_SUCCESS {
            return Ok(());
        }
        Err(CommError::Call {
            rank,
            call: call.into(),
            message: format!("MPI error code {code}"),
        })
    }

    fn rank_and_size(&self) -> Result<(usize, usize), CommError> {
        let (mut rank, mut size): (c_int, c_int) = (-1, -1);
        // SAFETY: MPI is initialised (MpiWorld::init); the out-pointers are valid.
        let (a, b) = unsafe {
            match self.calls {
                FamilyCalls::Mpich(c) => (
                    (c.comm_rank)(c.comm_world, &mut rank),
                    (c.comm_size)(c.comm_world, &mut size),
                ),
                FamilyCalls::OpenMpi(c) => (
                    (c.comm_rank)(c.comm_world, &mut rank),
                    (c.comm_size)(c.comm_world, &mut size),
                ),
            }
        };
        Self::check(0, "MPI_Comm_rank(MPI_COMM_WORLD)", a)?;
        Self::check(0, "MPI_Comm_size(MPI_COMM_WORLD)", b)?;
        match (usize::try_from(rank), usize::try_from(size)) {
            (Ok(r), Ok(s)) if r < s => Ok((r, s)),
            _ => Err(CommError::Call {
                rank: 0,
                call: "MPI_Comm_rank/MPI_Comm_size".into(),
                message: format!("rank {rank} of {size} ranks"),
            }),
        }
    }

    /// MPI_Bcast of `bytes` from `root` over MPI_COMM_WORLD.
    fn bcast(&self, rank: usize, root: usize, bytes: &mut [u8]) -> Result<(), CommError> {
        let bad = |what: String| CommError::BadRequest {
            rank,
            operation: "MPI broadcast".into(),
            what,
        };
        let count = c_int::try_from(bytes.len())
            .map_err(|_| bad(format!("{} bytes exceed MPI's int count", bytes.len())))?;
        let root = c_int::try_from(root).map_err(|_| bad(format!("root rank {root}")))?;
        let buf = bytes.as_mut_ptr().cast::<c_void>();
        // SAFETY: MPI is initialised; buf holds count bytes for the whole call.
        let code = unsafe {
            match self.calls {
                FamilyCalls::Mpich(c) => (c.bcast)(buf, count, c.byte, root, c.comm_world),
                FamilyCalls::OpenMpi(c) => (c.bcast)(buf, count, c.byte, root, c.comm_world),
            }
        };
        Self::check(rank, "MPI_Bcast(MPI_BYTE, MPI_COMM_WORLD)", code)
    }
}

/// MPI_COMM_WORLD of an initialised MPI: this process's rank and the number of processes,
/// and the broadcast NCCL's unique id needs (a [`Bootstrap`]). Finalises MPI when
/// dropped if it initialised it.
#[derive(Debug)]
pub struct MpiWorld {
    lib: &'static MpiLibrary,
    rank: usize,
    size: usize,
    config: CommConfig,
    owns_init: bool,
    /// A broadcast timed out: its thread may still be inside MPI, so MPI is not
    /// finalised (the process is expected to end with the error).
    stuck: bool,
}

impl MpiWorld {
    /// Initialises MPI (`MPI_Init_thread`, `MPI_THREAD_SERIALIZED`; unless the process
    /// already did) from the library [`MpiLibrary::get`] finds; waits are bounded by
    /// `config`'s timeout.
    pub fn init(config: CommConfig) -> Result<Self, CommError> {
        Self::init_with(MpiLibrary::get()?, config)
    }

    /// The same with a given library (the tests pass an in-process fake).
    pub fn init_with(lib: &'static MpiLibrary, config: CommConfig) -> Result<Self, CommError> {
        let mut flag: c_int = 0;
        // SAFETY: MPI_Initialized may be called at any time.
        MpiLibrary::check(0, "MPI_Initialized", unsafe {
            (lib.initialized)(&mut flag)
        })?;
        let owns_init = flag == 0;
        if owns_init {
            let mut provided: c_int = 0;
            // SAFETY: null argc/argv are allowed since MPI-2.
            let code = unsafe {
                (lib.init_thread)(
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    MPI_THREAD_SERIALIZED,
                    &mut provided,
                )
            };
            MpiLibrary::check(0, "MPI_Init_thread", code)?;
            if provided < MPI_THREAD_SERIALIZED {
                return Err(CommError::Call {
                    rank: 0,
                    call: "MPI_Init_thread".into(),
                    message: format!(
                        "the library provides thread level {provided}, qdsl needs \
                         MPI_THREAD_SERIALIZED ({MPI_THREAD_SERIALIZED}) to bound its waits"
                    ),
                });
            }
        }
        let (rank, size) = lib.rank_and_size()?;
        Ok(Self {
            lib,
            rank,
            size,
            config,
            owns_init,
            stuck: false,
        })
    }
}

impl Bootstrap for MpiWorld {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    /// MPI_Bcast on a helper thread; the caller waits at most the timeout, then reports
    /// the root as the rank waited for (the helper stays blocked in MPI: the process
    /// should end, which makes the launcher end the job).
    fn broadcast_bytes(&mut self, root: usize, bytes: &mut [u8]) -> Result<(), CommError> {
        if root >= self.size {
            return Err(CommError::BadRequest {
                rank: self.rank,
                operation: "MPI broadcast".into(),
                what: format!(
                    "root rank {root} is outside MPI_COMM_WORLD of {} ranks",
                    self.size
                ),
            });
        }
        let (lib, rank) = (self.lib, self.rank);
        let mut data = bytes.to_vec();
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name(format!("qdsl-mpi-bcast-{rank}"))
            .spawn(move || {
                let result = lib.bcast(rank, root, &mut data).map(|()| data);
                let _ = tx.send(result);
            })
            .map_err(|e| CommError::Call {
                rank,
                call: "starting the MPI broadcast thread".into(),
                message: e.to_string(),
            })?;
        match rx.recv_timeout(self.config.timeout) {
            Ok(Ok(data)) => {
                bytes.copy_from_slice(&data);
                Ok(())
            }
            Ok(Err(e)) => Err(e),
            Err(_) => {
                self.stuck = true;
                Err(CommError::Timeout {
                    rank,
                    peer: root,
                    operation: "MPI broadcast of NCCL's unique id".into(),
                    seconds: self.config.timeout.as_secs_f64(),
                })
            }
        }
    }
}

impl Drop for MpiWorld {
    fn drop(&mut self) {
        if self.owns_init && !self.stuck {
            // SAFETY: MPI was initialised by this value; nothing else uses it after.
            unsafe {
                (self.lib.finalize)();
            }
        }
    }
}

#[cfg(test)]
mod tests;
