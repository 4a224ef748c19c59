//! NCCL, loaded at run time: the transport between GPUs.
//!
//! The library is opened with `dlopen` on first use, like the driver and NVRTC
//! ([`crate::libs`]), so the workspace builds and tests without it. cudarc 0.19.10 has
//! NCCL bindings (feature `nccl`) with dynamic loading, but its loader only tries the
//! names `libnccl.so`, `libnccl.so.<CUDA major>`, `.12`, `.11`, … — never `libnccl.so.2`,
//! the soname NCCL and the PyTorch/pip wheel (`nvidia-nccl-cu12`) ship — and it panics
//! when none loads. qdsl therefore binds the dozen entry points it needs itself
//! ([`NcclLibrary`]), searching, in order:
//!
//! 1. `$QDSL_NCCL_LIB` (a path to `libnccl.so.2`);
//! 2. `libnccl.so.2`, then `libnccl.so`, through the loader's own search
//!    (`LD_LIBRARY_PATH`, the system);
//! 3. the pip wheel next to the NVIDIA wheels Python sees:
//!    `<site-packages>/nvidia/nccl/lib/libnccl.so.2`.
//!
//! A library that is not found is [`LibraryMissing`] listing every path tried and naming
//! `QDSL_NCCL_LIB`; a symbol missing from it is an error naming the symbol.
//!
//! [`NcclComm`] is one rank's communicator on one GPU: grouped `ncclSend`/`ncclRecv` of
//! face buffers on device memory and the deterministic all-reduce (an `ncclAllGather` of
//! the partial sums, added in rank order on the host; see [`super`]). Every wait polls
//! the stream and NCCL's asynchronous error until the configured timeout, then aborts
//! the communicator and reports the operation and the peers: never a hang. Creating
//! the communicator (`ncclCommInitRank` blocks until every rank joined) runs on a
//! helper thread so that it, too, ends at the timeout. So does the first contact with
//! each peer: NCCL makes its point-to-point connections (and its collective rings)
//! lazily, inside the first `ncclGroupEnd` (`ncclAllGather`) that needs them, with a
//! handshake that blocks the host until the peer takes part. [`NcclComm`] therefore
//! connects each new peer (and the collective) once, with a one-byte exchange on a
//! helper thread bounded by the timeout; later calls only enqueue, and a peer that falls
//! silent after that is caught by the stream wait. A communicator whose helper thread
//! is still blocked inside NCCL at the timeout is abandoned (never touched, aborted or
//! destroyed again), as a timed-out `ncclCommInitRank` is.

use super::{CommConfig, CommError};
use crate::libs::LibraryMissing;
use cudarc::driver::{sys, CudaStream};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The environment variable naming the NCCL library to load.
pub const NCCL_LIB_VAR: &str = "QDSL_NCCL_LIB";

/// NCCL's soname.
pub const NCCL_SONAME: &str = "libnccl.so.2";

/// `ncclUniqueId`: 128 opaque bytes, made by rank 0 and handed to every rank (over MPI
/// across nodes, through memory between threads).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct NcclUniqueId {
    /// The opaque bytes.
    pub internal: [c_char; 128],
}

impl NcclUniqueId {
    /// The 128 bytes, to broadcast ([`super::bootstrap::shared_unique_id`]).
    pub fn to_bytes(&self) -> [u8; 128] {
        self.internal.map(|c| c as u8)
    }

    /// The id of 128 broadcast bytes.
    pub fn from_bytes(bytes: [u8; 128]) -> Self {
        Self {
            internal: bytes.map(|b| b as c_char),
        }
    }
}

type Comm = *mut c_void;
type Stream = sys::CUstream;

/// `ncclInt8` and `ncclFloat64` of `ncclDataType_t`.
const NCCL_INT8: c_int = 0;
const NCCL_FLOAT64: c_int = 8;
/// `ncclSuccess` and `ncclInProgress` of `ncclResult_t`.
const NCCL_SUCCESS: c_int = 0;
const NCCL_IN_PROGRESS: c_int = 7;

/// The NCCL entry points qdsl uses, resolved once.
pub struct NcclLibrary {
    /// Where the library was found.
    pub path: String,
    get_version: unsafe extern "C" fn(*mut c_int) -> c_int,
    get_unique_id: unsafe extern "C" fn(*mut NcclUniqueId) -> c_int,
    comm_init_rank: unsafe extern "C" fn(*mut Comm, c_int, NcclUniqueId, c_int) -> c_int,
    comm_destroy: unsafe extern "C" fn(Comm) -> c_int,
    comm_abort: unsafe extern "C" fn(Comm) -> c_int,
    comm_get_async_error: unsafe extern "C" fn(Comm, *mut c_int) -> c_int,
    get_error_string: unsafe extern "C" fn(c_int) -> *const c_char,
    group_start: unsafe extern "C" fn() -> c_int,
    group_end: unsafe extern "C" fn() -> c_int,
    send: unsafe extern "C" fn(*const c_void, usize, c_int, c_int, Comm, Stream) -> c_int,
    recv: unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, Comm, Stream) -> c_int,
    all_gather:
        unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, Comm, Stream) -> c_int,
}

/// The library candidates in search order (see the module docs).
pub fn candidates() -> Vec<PathBuf> {
    let mut c = Vec::new();
    if let Some(p) = std::env::var_os(NCCL_LIB_VAR).filter(|p| !p.is_empty()) {
        c.push(PathBuf::from(p));
    }
    c.push(PathBuf::from(NCCL_SONAME));
    c.push(PathBuf::from("libnccl.so"));
    if let Some(nvidia) = crate::libs::wheel_dir().and_then(|d| d.parent().map(PathBuf::from)) {
        c.push(nvidia.join("nccl/lib").join(NCCL_SONAME));
    }
    c
}

impl NcclLibrary {
    /// The library, loaded and resolved once per process (see the module docs for the
    /// search); the same error on every call when it is missing.
    pub fn get() -> Result<&'static NcclLibrary, CommError> {
        static LIB: OnceLock<Result<NcclLibrary, CommError>> = OnceLock::new();
        LIB.get_or_init(Self::load).as_ref().map_err(Clone::clone)
    }

    fn load() -> Result<Self, CommError> {
        let mut tried = Vec::new();
        for path in candidates() {
            tried.push(path.display().to_string());
            // SAFETY: loading NCCL runs its initialisers, which have no preconditions.
            if let Ok(lib) = unsafe { libloading::Library::new(&path) } {
                // Kept loaded for the life of the process: the symbols below point into it.
                let lib: &'static libloading::Library = Box::leak(Box::new(lib));
                return Self::resolve(lib, path.display().to_string());
            }
        }
        Err(CommError::Library(LibraryMissing {
            library: NCCL_SONAME.into(),
            tried: tried.join(", "),
            hint: format!(
                "set {NCCL_LIB_VAR} to the path of {NCCL_SONAME} (PyTorch's pip install ships \
                 one under site-packages/nvidia/nccl/lib)"
            ),
        }))
    }

    fn resolve(lib: &'static libloading::Library, path: String) -> Result<Self, CommError> {
        fn sym<F: Copy>(
            lib: &'static libloading::Library,
            path: &str,
            name: &str,
        ) -> Result<F, CommError> {
            // SAFETY: each symbol is declared with NCCL's C signature (nccl.h, 2.18+).
            unsafe { lib.get::<F>(name.as_bytes()) }
                .map(|s| *s)
                .map_err(|e| CommError::Call {
                    rank: 0,
                    call: format!("resolving {name} in {path}"),
                    message: e.to_string(),
                })
        }
        Ok(Self {
            get_version: sym(lib, &path, "ncclGetVersion")?,
            get_unique_id: sym(lib, &path, "ncclGetUniqueId")?,
            comm_init_rank: sym(lib, &path, "ncclCommInitRank")?,
            comm_destroy: sym(lib, &path, "ncclCommDestroy")?,
            comm_abort: sym(lib, &path, "ncclCommAbort")?,
            comm_get_async_error: sym(lib, &path, "ncclCommGetAsyncError")?,
            get_error_string: sym(lib, &path, "ncclGetErrorString")?,
            group_start: sym(lib, &path, "ncclGroupStart")?,
            group_end: sym(lib, &path, "ncclGroupEnd")?,
            send: sym(lib, &path, "ncclSend")?,
            recv: sym(lib, &path, "ncclRecv")?,
            all_gather: sym(lib, &path, "ncclAllGather")?,
            path,
        })
    }

    /// NCCL's version code (e.g. 22703 for 2.27.3).
    pub fn version(&self) -> Result<i32, CommError> {
        let mut v = 0;
        // SAFETY: v is a valid out-pointer.
        self.check(0, "ncclGetVersion", unsafe { (self.get_version)(&mut v) })?;
        Ok(v)
    }

    /// A fresh unique id (rank 0 makes it; every rank passes it to [`NcclComm::init`]).
    pub fn unique_id(&self) -> Result<NcclUniqueId, CommError> {
        let mut id = NcclUniqueId { internal: [0; 128] };
        // SAFETY: id is a valid out-pointer.
        self.check(0, "ncclGetUniqueId", unsafe {
            (self.get_unique_id)(&mut id)
        })?;
        Ok(id)
    }

    fn message(&self, code: c_int) -> String {
        // SAFETY: ncclGetErrorString returns a static NUL-terminated string.
        let s = unsafe { (self.get_error_string)(code) };
        if s.is_null() {
            format!("NCCL error {code}")
        } else {
            // SAFETY: non-null, NUL-terminated (above).
            format!(
                "{} (NCCL error {code})",
                unsafe { CStr::from_ptr(s) }.to_string_lossy()
            )
        }
    }

    fn check(&self, rank: usize, call: &str, code: c_int) -> Result<(), CommError> {
        if code == NCCL_SUCCESS {
            return Ok(());
        }
        Err(CommError::Call {
            rank,
            call: call.into(),
            message: self.message(code),
        })
    }
}

/// A device buffer of a grouped exchange: `bytes` bytes at device address `ptr`, to or
/// from rank `peer`.
#[derive(Clone, Copy, Debug)]
pub struct DeviceMessage {
    /// The other rank.
    pub peer: usize,
    /// Device address (`CUdeviceptr`).
    pub ptr: u64,
    /// Length in bytes.
    pub bytes: usize,
}

/// One rank's NCCL communicator on one GPU, issuing on `stream` (see the module docs).
pub struct NcclComm {
    lib: &'static NcclLibrary,
    comm: Comm,
    /// Whether the communicator may still be used (and must be destroyed).
    state: std::cell::Cell<CommState>,
    /// The peers whose point-to-point connections NCCL has made (see the module docs).
    connected: std::cell::RefCell<std::collections::BTreeSet<usize>>,
    /// Whether the collective (the all-gather's ring) has been connected.
    collective_connected: std::cell::Cell<bool>,
    rank: usize,
    size: usize,
    config: CommConfig,
    stream: Arc<CudaStream>,
}

/// The life of a communicator after an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CommState {
    /// Usable; destroyed on drop.
    Live,
    /// `ncclCommAbort` ended its operations and freed it (never destroyed again).
    Aborted,
    /// A helper thread is still blocked inside NCCL with it (a first contact that timed
    /// out): never used, aborted or destroyed again.
    Abandoned,
}

// SAFETY: an NCCL communicator may be used from any one thread at a time.
unsafe impl Send for NcclComm {}

/// The stream handle, moved to a first-contact helper thread.
struct SendStream(Stream);
// SAFETY: a CUDA stream handle may be used from any thread of its context.
unsafe impl Send for SendStream {}

/// The raw communicator pointer, moved to the helper thread that creates it.
struct SendComm(Comm);
// SAFETY: see NcclComm.
unsafe impl Send for SendComm {}

impl NcclComm {
    /// Joins rank `rank` of `size` to the communicator of `id` on `stream`'s GPU. Every
    /// rank must call it (concurrently); a rank still missing at the timeout ends the
    /// call with [`CommError::Timeout`] (the helper thread blocked in NCCL is left behind).
    pub fn init(
        stream: Arc<CudaStream>,
        size: usize,
        rank: usize,
        id: NcclUniqueId,
        config: CommConfig,
    ) -> Result<Self, CommError> {
        let lib = NcclLibrary::get()?;
        let (tx, rx) = std::sync::mpsc::channel();
        let ctx = stream.context().clone();
        std::thread::spawn(move || {
            let result = ctx
                .bind_to_thread()
                .map_err(|e| e.to_string())
                .and_then(|()| {
                    let mut comm: Comm = std::ptr::null_mut();
                    // SAFETY: comm is a valid out-pointer; the context is current.
                    let code = unsafe {
                        (lib.comm_init_rank)(&mut comm, size as c_int, id, rank as c_int)
                    };
                    if code == NCCL_SUCCESS {
                        Ok(SendComm(comm))
                    } else {
                        Err(lib.message(code))
                    }
                });
            let _ = tx.send(result);
        });
        match rx.recv_timeout(config.timeout) {
            Ok(Ok(SendComm(comm))) => Ok(Self {
                lib,
                comm,
                state: std::cell::Cell::new(CommState::Live),
                connected: Default::default(),
                collective_connected: std::cell::Cell::new(false),
                rank,
                size,
                config,
                stream,
            }),
            Ok(Err(message)) => Err(CommError::Call {
                rank,
                call: "ncclCommInitRank".into(),
                message,
            }),
            Err(_) => Err(CommError::Timeout {
                rank,
                peer: (rank + 1) % size.max(1),
                operation: format!("ncclCommInitRank (waiting for all {size} ranks to join)"),
                seconds: config.timeout.as_secs_f64(),
            }),
        }
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The stream NCCL's operations run on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Posts every send and receive in one NCCL group on the stream and waits for them
    /// (bytes, `ncclInt8`); `operation` names the exchange in errors.
    ///
    /// # Safety
    /// Every `ptr` must be a device allocation of at least `bytes` bytes on this
    /// communicator's GPU, alive until the call returns; receive buffers must not be read
    /// or written by other work meanwhile.
    pub unsafe fn exchange(
        &self,
        operation: &str,
        sends: &[DeviceMessage],
        recvs: &[DeviceMessage],
    ) -> Result<(), CommError> {
        // SAFETY: the caller's contract, and the wait below keeps the buffers borrowed
        // until the group is done.
        let peer = unsafe { self.enqueue_exchange(sends, recvs) }?;
        self.wait(operation, peer)
    }

    /// Posts every send and receive in one NCCL group on the stream without waiting;
    /// returns the peer a later [`Self::finish`] names if the group never completes.
    ///
    /// # Safety
    /// As [`Self::exchange`], with "until the call returns" replaced by "until
    /// [`Self::finish`] (or another wait on the stream) returned".
    pub unsafe fn enqueue_exchange(
        &self,
        sends: &[DeviceMessage],
        recvs: &[DeviceMessage],
    ) -> Result<usize, CommError> {
        self.bind()?;
        let peers: Vec<usize> = sends.iter().chain(recvs).map(|m| m.peer).collect();
        self.connect(&peers)?;
        let lib = self.lib;
        let s = self.stream.cu_stream();
        self.call("ncclGroupStart", (lib.group_start)())?;
        for m in sends {
            self.call(
                "ncclSend",
                (lib.send)(
                    m.ptr as *const c_void,
                    m.bytes,
                    NCCL_INT8,
                    m.peer as c_int,
                    self.comm,
                    s,
                ),
            )?;
        }
        for m in recvs {
            self.call(
                "ncclRecv",
                (lib.recv)(
                    m.ptr as *mut c_void,
                    m.bytes,
                    NCCL_INT8,
                    m.peer as c_int,
                    self.comm,
                    s,
                ),
            )?;
        }
        self.call("ncclGroupEnd", (lib.group_end)())?;
        Ok(recvs
            .first()
            .or(sends.first())
            .map_or(self.rank, |m| m.peer))
    }

    /// Waits (bounded by the timeout, naming `peer` if it runs out) for everything
    /// enqueued on the stream, e.g. the groups of [`Self::enqueue_exchange`].
    pub fn finish(&self, operation: &str, peer: usize) -> Result<(), CommError> {
        self.bind()?;
        self.wait(operation, peer)
    }

    /// The element-wise sum of `values` over ranks, added in rank order (see [`super`]):
    /// an `ncclAllGather` of every rank's values, then the ordered sum on the host.
    pub fn all_reduce_sum_f64(
        &self,
        operation: &str,
        values: &[f64],
    ) -> Result<Vec<f64>, CommError> {
        self.bind()?;
        let n = values.len();
        let cuda = |call: &str, e: cudarc::driver::DriverError| CommError::Call {
            rank: self.rank,
            call: call.into(),
            message: e.to_string(),
        };
        let send = self
            .stream
            .clone_htod(values)
            .map_err(|e| cuda("upload", e))?;
        let mut recv = self
            .stream
            .alloc_zeros::<f64>(n * self.size)
            .map_err(|e| cuda("alloc", e))?;
        let (sp, rp) = {
            use cudarc::driver::{DevicePtr, DevicePtrMut};
            (
                send.device_ptr(&self.stream).0,
                recv.device_ptr_mut(&self.stream).0,
            )
        };
        let next = (self.rank + 1) % self.size;
        let lib = self.lib;
        let all_gather = move |comm: Comm, stream: Stream| {
            // SAFETY: both buffers live on this stream's GPU with n and n · size f64
            // until the wait below returned (abandoned: for ever, see below).
            unsafe {
                (lib.all_gather)(
                    sp as *const c_void,
                    rp as *mut c_void,
                    n,
                    NCCL_FLOAT64,
                    comm,
                    stream,
                )
            }
        };
        if self.collective_connected.get() {
            self.call(
                "ncclAllGather",
                all_gather(self.comm, self.stream.cu_stream()),
            )?;
        } else {
            // The first collective connects NCCL's ring: bounded like the first
            // point-to-point contact.
            if let Err(e) = self.bounded(operation, next, "ncclAllGather", all_gather) {
                if self.state.get() == CommState::Abandoned {
                    // The helper thread may still use them.
                    std::mem::forget((send, recv));
                }
                return Err(e);
            }
            self.collective_connected.set(true);
        }
        self.wait(operation, next)?;
        let all = self
            .stream
            .clone_dtoh(&recv)
            .map_err(|e| cuda("download", e))?;
        let parts: Vec<Vec<f64>> = all.chunks(n.max(1)).map(<[f64]>::to_vec).collect();
        Ok(super::sum_in_rank_order(
            &parts[..self.size.min(parts.len())],
        ))
    }

    fn call(&self, call: &str, code: c_int) -> Result<(), CommError> {
        self.lib.check(self.rank, call, code)
    }

    /// Makes NCCL's point-to-point connections with the `peers` not yet connected: one
    /// byte each way with every new peer in one group, issued on a helper thread bounded
    /// by the timeout (NCCL's connection handshake blocks the host until the peer takes
    /// part), then waited for on the stream. Every rank reaches this at the same exchange
    /// (the first that involves the pair), so the one-byte messages always pair up.
    fn connect(&self, peers: &[usize]) -> Result<(), CommError> {
        let new: Vec<usize> = {
            let connected = self.connected.borrow();
            let mut new: Vec<usize> = peers
                .iter()
                .copied()
                .filter(|p| !connected.contains(p))
                .collect();
            new.sort_unstable();
            new.dedup();
            new
        };
        let Some(&first) = new.first() else {
            return Ok(());
        };
        let cuda = |e: cudarc::driver::DriverError| CommError::Call {
            rank: self.rank,
            call: "allocating the connection bytes".into(),
            message: e.to_string(),
        };
        let out = self.stream.alloc_zeros::<u8>(new.len()).map_err(cuda)?;
        let mut inc = self.stream.alloc_zeros::<u8>(new.len()).map_err(cuda)?;
        let operation = format!("connecting to rank(s) {new:?} (NCCL's first contact)");
        let (op, ip) = {
            use cudarc::driver::{DevicePtr, DevicePtrMut};
            (
                out.device_ptr(&self.stream).0,
                inc.device_ptr_mut(&self.stream).0,
            )
        };
        let lib = self.lib;
        let peers = new.clone();
        let contact = self.bounded(&operation, first, "ncclGroupEnd", move |comm, stream| {
            // SAFETY: `out` and `inc` hold one byte per peer on this GPU, alive until the
            // wait below returned (abandoned: for ever, see below).
            unsafe {
                let mut code = (lib.group_start)();
                for (k, &peer) in peers.iter().enumerate() {
                    let p = peer as c_int;
                    let (o, i) = (
                        (op + k as u64) as *const c_void,
                        (ip + k as u64) as *mut c_void,
                    );
                    if code == NCCL_SUCCESS {
                        code = (lib.send)(o, 1, NCCL_INT8, p, comm, stream);
                    }
                    if code == NCCL_SUCCESS {
                        code = (lib.recv)(i, 1, NCCL_INT8, p, comm, stream);
                    }
                }
                let end = (lib.group_end)();
                if code == NCCL_SUCCESS {
                    end
                } else {
                    code
                }
            }
        });
        if self.state.get() == CommState::Abandoned {
            // The helper thread may still write them.
            std::mem::forget((out, inc));
        }
        contact?;
        self.wait(&operation, first)?;
        self.connected.borrow_mut().extend(new);
        Ok(())
    }

    /// Runs the NCCL call `f` (on the communicator and the stream) on a helper thread
    /// with this GPU current, waiting at most the timeout. A call still blocked then
    /// leaves the communicator abandoned (the thread keeps it, and everything `f`
    /// captured, for ever) and is a timeout naming `peer`.
    fn bounded(
        &self,
        operation: &str,
        peer: usize,
        call: &str,
        f: impl FnOnce(Comm, Stream) -> c_int + Send + 'static,
    ) -> Result<(), CommError> {
        let (tx, rx) = std::sync::mpsc::channel();
        let ctx = self.stream.context().clone();
        let comm = SendComm(self.comm);
        let stream = SendStream(self.stream.cu_stream());
        std::thread::spawn(move || {
            let (SendComm(comm), SendStream(stream)) = (comm, stream);
            let result = ctx.bind_to_thread().map(|()| f(comm, stream));
            let _ = tx.send(result);
        });
        match rx.recv_timeout(self.config.timeout) {
            Ok(Ok(code)) => self.call(call, code),
            Ok(Err(e)) => Err(CommError::Call {
                rank: self.rank,
                call: "binding the GPU context".into(),
                message: e.to_string(),
            }),
            Err(_) => {
                self.state.set(CommState::Abandoned);
                Err(CommError::Timeout {
                    rank: self.rank,
                    peer,
                    operation: operation.into(),
                    seconds: self.config.timeout.as_secs_f64(),
                })
            }
        }
    }

    /// Before any NCCL call: refuses a communicator aborted after a timeout (its memory is
    /// freed), and makes its GPU current on this thread (NCCL enqueues on the current
    /// device).
    fn bind(&self) -> Result<(), CommError> {
        if self.state.get() != CommState::Live {
            return Err(CommError::Call {
                rank: self.rank,
                call: "NCCL communicator".into(),
                message: "given up after an earlier timeout; create a new one".into(),
            });
        }
        self.stream
            .context()
            .bind_to_thread()
            .map_err(|e| CommError::Call {
                rank: self.rank,
                call: "binding the GPU context".into(),
                message: e.to_string(),
            })
    }

    /// Waits (bounded by the timeout, naming `peer` if it runs out, NCCL's asynchronous
    /// error polled meanwhile) until `event` has completed: the work queued before it on
    /// another stream of this GPU, e.g. a CUDA graph holding this communicator's
    /// exchanges.
    pub fn finish_at(
        &self,
        operation: &str,
        peer: usize,
        event: &cudarc::driver::CudaEvent,
    ) -> Result<(), CommError> {
        self.bind()?;
        // SAFETY: the event handle is valid while `event` lives.
        self.poll(operation, peer, "cuEventQuery", || unsafe {
            sys::cuEventQuery(event.cu_event())
        })
    }

    /// Waits for the stream, polling it and NCCL's asynchronous error; at the timeout
    /// aborts the communicator (so that the GPU work ends) and names `peer`.
    fn wait(&self, operation: &str, peer: usize) -> Result<(), CommError> {
        // SAFETY: the stream handle is valid while self.stream lives.
        self.poll(operation, peer, "cuStreamQuery", || unsafe {
            sys::cuStreamQuery(self.stream.cu_stream())
        })
    }

    /// Polls `query` (`call` names it in errors) until it reports completion, polling
    /// NCCL's asynchronous error meanwhile; at the timeout aborts the communicator (so
    /// that the GPU work ends) and names `peer`.
    fn poll(
        &self,
        operation: &str,
        peer: usize,
        call: &str,
        query: impl Fn() -> sys::CUresult,
    ) -> Result<(), CommError> {
        let started = Instant::now();
        let deadline = started + self.config.timeout;
        loop {
            match query() {
                sys::CUresult::CUDA_SUCCESS => return Ok(()),
                sys::CUresult::CUDA_ERROR_NOT_READY => {}
                other => {
                    return Err(CommError::Call {
                        rank: self.rank,
                        call: format!("{operation}: {call}"),
                        message: format!("{other:?}"),
                    })
                }
            }
            let mut async_err = NCCL_SUCCESS;
            // SAFETY: valid communicator and out-pointer.
            let code = unsafe { (self.lib.comm_get_async_error)(self.comm, &mut async_err) };
            self.call("ncclCommGetAsyncError", code)?;
            if async_err != NCCL_SUCCESS && async_err != NCCL_IN_PROGRESS {
                return Err(CommError::Call {
                    rank: self.rank,
                    call: operation.into(),
                    message: self.lib.message(async_err),
                });
            }
            if Instant::now() >= deadline {
                // SAFETY: valid communicator; aborting ends its pending operations and
                // frees it (Drop then skips ncclCommDestroy).
                unsafe { (self.lib.comm_abort)(self.comm) };
                self.state.set(CommState::Aborted);
                return Err(CommError::Timeout {
                    rank: self.rank,
                    peer,
                    operation: operation.into(),
                    seconds: self.config.timeout.as_secs_f64(),
                });
            }
            pause(started.elapsed());
        }
    }
}

/// How long a wait has spun before it sleeps between polls: a face exchange takes tens
/// of µs, and a sleep of the minimum Linux granularity (~50–80 µs with the default timer
/// slack) would add more than the exchange itself.
const SPIN: Duration = Duration::from_millis(2);

/// Between two polls of a wait that has lasted `waited`: yield the core while the wait
/// is short (the exchange is about to end), sleep once it is long (a slow or dead peer).
fn pause(waited: Duration) {
    if waited < SPIN {
        std::hint::spin_loop();
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(50));
    }
}

impl Drop for NcclComm {
    fn drop(&mut self) {
        if self.state.get() == CommState::Live {
            // SAFETY: valid communicator, destroyed once.
            unsafe { (self.lib.comm_destroy)(self.comm) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without NCCL on the machine (this one), loading is an error listing every path
    /// tried and naming QDSL_NCCL_LIB; with QDSL_NCCL_LIB set to a missing file, that path
    /// comes first. (On a machine with NCCL the load succeeds and the version is 2.x.)
    #[test]
    fn a_missing_nccl_is_an_error_naming_what_was_tried() {
        let c = candidates();
        assert!(c.iter().any(|p| p == &PathBuf::from(NCCL_SONAME)));
        match NcclLibrary::get() {
            Ok(lib) => {
                let v = lib.version().unwrap();
                assert!(
                    (20000..30000).contains(&v),
                    "NCCL version code {v} from {}",
                    lib.path
                );
            }
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains("libnccl.so.2 could not be loaded"), "{msg}");
                assert!(msg.contains("tried: "), "{msg}");
                assert!(msg.contains(NCCL_LIB_VAR), "{msg}");
                assert!(matches!(e, CommError::Library(_)));
            }
        }
    }

    /// Two (or all) GPUs of the machine as ranks of one process, one thread each: the
    /// unique id shared through memory, every rank sends its rank-stamped buffer to the
    /// next and receives from the previous in one group, and the all-reduce of
    /// order-sensitive values equals the rank-order sum on every rank.
    #[test]
    #[ignore = "needs at least 2 CUDA GPUs and libnccl.so.2 (set QDSL_NCCL_LIB); named multi_gpu_* so one-GPU runs can skip it"]
    fn multi_gpu_nccl_ring_exchange_and_ordered_all_reduce() {
        use cudarc::driver::{CudaContext, DevicePtr, DevicePtrMut};
        crate::libs::driver().unwrap();
        let lib = NcclLibrary::get().unwrap();
        let size = CudaContext::device_count().unwrap() as usize;
        assert!(size >= 2, "needs 2 GPUs, found {size}");
        let id = lib.unique_id().unwrap();
        let values = |r: usize| vec![[1e17, 1.0, -1e17, 3.5][r % 4], r as f64];
        let expected = super::super::sum_in_rank_order(&(0..size).map(values).collect::<Vec<_>>());
        std::thread::scope(|scope| {
            for rank in 0..size {
                let expected = expected.clone();
                scope.spawn(move || {
                    let ctx = CudaContext::new(rank).unwrap();
                    let stream = ctx.new_stream().unwrap();
                    let comm =
                        NcclComm::init(stream.clone(), size, rank, id, CommConfig::default())
                            .unwrap();
                    let mine: Vec<u32> = (0..1000).map(|i| (rank * 1_000_000 + i) as u32).collect();
                    let send = stream.clone_htod(&mine).unwrap();
                    let mut recv = stream.alloc_zeros::<u32>(1000).unwrap();
                    {
                        let (sp, _a) = send.device_ptr(&stream);
                        let (rp, _b) = recv.device_ptr_mut(&stream);
                        let out = DeviceMessage {
                            peer: (rank + 1) % size,
                            ptr: sp,
                            bytes: 4000,
                        };
                        let inc = DeviceMessage {
                            peer: (rank + size - 1) % size,
                            ptr: rp,
                            bytes: 4000,
                        };
                        // SAFETY: both buffers hold 1000 u32 on this GPU.
                        unsafe { comm.exchange("ring", &[out], &[inc]) }.unwrap();
                    }
                    let got = stream.clone_dtoh(&recv).unwrap();
                    let prev = (rank + size - 1) % size;
                    assert_eq!(got[7], (prev * 1_000_000 + 7) as u32);
                    let sum = comm.all_reduce_sum_f64("norm", &values(rank)).unwrap();
                    assert_eq!(sum, expected);
                });
            }
        });
    }

    /// A rank that never joins: rank 0 of a 2-rank communicator alone ends its
    /// `ncclCommInitRank` at the timeout (2 s here) with an error naming the operation,
    /// instead of hanging.
    #[test]
    #[ignore = "needs a CUDA GPU and libnccl.so.2 (set QDSL_NCCL_LIB)"]
    fn nccl_init_with_a_missing_rank_times_out() {
        use cudarc::driver::CudaContext;
        crate::libs::driver().unwrap();
        let lib = NcclLibrary::get().unwrap();
        let id = lib.unique_id().unwrap();
        let stream = CudaContext::new(0).unwrap().new_stream().unwrap();
        let config = CommConfig {
            timeout: Duration::from_secs(2),
        };
        let start = Instant::now();
        let err = NcclComm::init(stream, 2, 0, id, config)
            .err()
            .expect("must time out");
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(matches!(err, CommError::Timeout { rank: 0, .. }), "{err}");
        assert!(err.to_string().contains("ncclCommInitRank"), "{err}");
    }
}
