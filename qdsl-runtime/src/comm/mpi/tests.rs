//! The MPI bootstrap against in-process fakes of the two handle families: threads stand
//! for processes; the Open MPI fake gives each "process" its own `ompi_mpi_comm_world`
//! object (as separate address spaces would), so the fake knows the caller's rank from
//! the handle it is passed — which also proves the handle reaches every call.

use super::*;
use crate::comm::bootstrap::shared_unique_id;
use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Ranks of the Open MPI fake (one "comm world" object each).
const RANKS: usize = 4;
/// Fake error code for a wrong handle.
const BAD_HANDLE: c_int = 5;

/// Each rank's `ompi_mpi_comm_world` and the one `ompi_mpi_byte`.
static WORLDS: [u8; RANKS] = [0; RANKS];
static BYTE: u8 = 0;

/// Root's bytes by round, and each rank's count of rounds.
type Posted = (BTreeMap<usize, Vec<u8>>, [usize; RANKS]);

/// The broadcasts posted; each rank counts its rounds.
struct Board {
    posted: Mutex<Posted>,
    ready: Condvar,
}

static BOARD: Board = Board {
    posted: Mutex::new((BTreeMap::new(), [0; RANKS])),
    ready: Condvar::new(),
};

/// How many ranks the fake world has (set by the test before its ranks start).
static SIZE: Mutex<usize> = Mutex::new(0);

fn rank_of(h: OmpiHandle) -> Option<usize> {
    let base = WORLDS.as_ptr() as usize;
    let at = (h.0 as usize).checked_sub(base)?;
    (at < RANKS).then_some(at)
}

unsafe extern "C" fn initialized(flag: *mut c_int) -> c_int {
    // Every fake process starts uninitialised.
    unsafe { *flag = 0 };
    MPI_SUCCESS
}

unsafe extern "C" fn init_thread(
    _: *mut c_int,
    _: *mut c_void,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    unsafe { *provided = required };
    MPI_SUCCESS
}

unsafe extern "C" fn finalize() -> c_int {
    MPI_SUCCESS
}

unsafe extern "C" fn ompi_rank(comm: OmpiHandle, rank: *mut c_int) -> c_int {
    match rank_of(comm) {
        Some(r) => {
            unsafe { *rank = r as c_int };
            MPI_SUCCESS
        }
        None => BAD_HANDLE,
    }
}

unsafe extern "C" fn ompi_size(comm: OmpiHandle, size: *mut c_int) -> c_int {
    if rank_of(comm).is_none() {
        return BAD_HANDLE;
    }
    unsafe { *size = *SIZE.lock().unwrap() as c_int };
    MPI_SUCCESS
}

/// Root posts its bytes for its next round; the others wait (at most 5 s) for the root's
/// post of their next round and copy it.
unsafe extern "C" fn ompi_bcast(
    buf: *mut c_void,
    count: c_int,
    datatype: OmpiHandle,
    root: c_int,
    comm: OmpiHandle,
) -> c_int {
    let Some(rank) = rank_of(comm) else {
        return BAD_HANDLE;
    };
    if datatype.0 != std::ptr::addr_of!(BYTE) as *mut c_void {
        return BAD_HANDLE;
    }
    let bytes = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), count as usize) };
    let mut board = BOARD.posted.lock().unwrap();
    let round = board.1[rank];
    board.1[rank] += 1;
    if rank == root as usize {
        board.0.insert(round, bytes.to_vec());
        BOARD.ready.notify_all();
        return MPI_SUCCESS;
    }
    let (board, _) = BOARD
        .ready
        .wait_timeout_while(board, Duration::from_secs(5), |b| !b.0.contains_key(&round))
        .unwrap();
    match board.0.get(&round) {
        Some(data) => {
            bytes.copy_from_slice(data);
            MPI_SUCCESS
        }
        None => BAD_HANDLE,
    }
}

/// Rank `rank`'s fake Open MPI library.
fn ompi(rank: usize) -> &'static MpiLibrary {
    Box::leak(Box::new(MpiLibrary {
        path: "fake".into(),
        version: "Open MPI v5.0.0 (fake)".into(),
        initialized,
        init_thread,
        finalize,
        calls: FamilyCalls::OpenMpi(HandleCalls {
            comm_world: OmpiHandle(std::ptr::addr_of!(WORLDS[rank]) as *mut c_void),
            byte: OmpiHandle(std::ptr::addr_of!(BYTE) as *mut c_void),
            comm_rank: ompi_rank,
            comm_size: ompi_size,
            bcast: ompi_bcast,
        }),
    }))
}

fn config(seconds: f64) -> CommConfig {
    CommConfig {
        timeout: Duration::from_secs_f64(seconds),
    }
}

/// The tests sharing the fake world run one at a time, each on a fresh board of `size`
/// ranks.
static SERIAL: Mutex<()> = Mutex::new(());

fn fresh_world(size: usize) -> std::sync::MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    *SIZE.lock().unwrap() = size;
    let mut board = BOARD.posted.lock().unwrap();
    board.0.clear();
    board.1 = [0; RANKS];
    guard
}

/// Every fake process joins MPI, learns its rank and size, and gets rank 0's unique id
/// through `shared_unique_id` (the same code the NCCL launch runs); twice, so rounds
/// stay matched.
#[test]
fn every_mpi_rank_gets_rank_zeros_unique_id() {
    let _serial = fresh_world(RANKS);
    let ids: Vec<Vec<[u8; 128]>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..RANKS)
            .map(|r| {
                s.spawn(move || {
                    let mut world = MpiWorld::init_with(ompi(r), config(10.0)).unwrap();
                    assert_eq!((world.rank(), world.size()), (r, RANKS));
                    (0..2u8)
                        .map(|k| {
                            shared_unique_id(&mut world, || {
                                Ok(std::array::from_fn(|i| (i as u8).wrapping_mul(7) ^ k))
                            })
                            .unwrap()
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for k in 0..2u8 {
        let want: [u8; 128] = std::array::from_fn(|i| (i as u8).wrapping_mul(7) ^ k);
        for (r, got) in ids.iter().enumerate() {
            assert_eq!(got[k as usize], want, "rank {r}, round {k}");
        }
    }
}

/// A root that never broadcasts (a dead process) ends the others' wait at the timeout,
/// naming it; a root outside the world is refused naming both.
#[test]
fn a_silent_mpi_root_times_out_naming_it() {
    let _serial = fresh_world(2);
    let mut world = MpiWorld::init_with(ompi(1), config(0.2)).unwrap();
    let mut id = [0u8; 128];
    match world.broadcast_bytes(0, &mut id) {
        Err(CommError::Timeout { rank, peer, .. }) => assert_eq!((rank, peer), (1, 0)),
        other => panic!("expected a timeout, got {other:?}"),
    }
    match world.broadcast_bytes(5, &mut id) {
        Err(e @ CommError::BadRequest { .. }) => {
            let m = e.to_string();
            assert!(m.contains("root rank 5") && m.contains("2 ranks"), "{m}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// The family comes from the library's own description; an unknown one is an error
/// quoting it.
#[test]
fn the_handle_family_comes_from_the_library_version() {
    for (text, abi) in [
        (
            "Open MPI v4.1.5, package: Open MPI builder Distribution",
            MpiAbi::OpenMpi,
        ),
        (
            "MPICH Version:      4.1.2\nMPICH Release date: …",
            MpiAbi::Mpich,
        ),
        ("Intel(R) MPI Library 2021.10 for Linux* OS", MpiAbi::Mpich),
        ("MVAPICH2 Version      :\t2.3.7", MpiAbi::Mpich),
        ("MPI VERSION    : CRAY MPICH version 8.1.25", MpiAbi::Mpich),
    ] {
        assert_eq!(MpiAbi::from_version(text).unwrap(), abi, "{text}");
    }
    let e = MpiAbi::from_version("Spectrum X 1.0")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("Spectrum X 1.0") && e.contains("unknown family"),
        "{e}"
    );
}

/// Without MPI on the machine (this one), loading is an error listing every path tried
/// and naming QDSL_MPI_LIB; with an MPI installed, the family is recognised.
#[test]
fn a_missing_mpi_is_an_error_naming_what_was_tried() {
    let c = candidates();
    assert!(c.iter().any(|p| p == &PathBuf::from("libmpi.so.40")));
    assert!(c.iter().any(|p| p == &PathBuf::from("libmpi.so.12")));
    match MpiLibrary::get() {
        Ok(lib) => assert!(
            MpiAbi::from_version(&lib.version).is_ok(),
            "{}",
            lib.version
        ),
        Err(e) => {
            let m = e.to_string();
            assert!(m.contains("libmpi.so could not be loaded"), "{m}");
            assert!(m.contains("tried: ") && m.contains("libmpi.so.40"), "{m}");
            assert!(m.contains(MPI_LIB_VAR), "{m}");
        }
    }
}

/// With a real MPI (QDSL_MPI_LIB, e.g. the `mpich` pip wheel's
/// `mpich-*.data/data/lib/libmpi.so.12` with its `mpich/` directory on LD_LIBRARY_PATH), one
/// process started without a launcher is rank 0 of 1 (MPI's singleton start) and gets
/// its own unique id back through the broadcast; under `mpirun -n P` every process gets
/// rank 0's.
#[test]
#[ignore = "needs an MPI library (QDSL_MPI_LIB): run with --ignored"]
fn a_real_mpi_bootstraps_the_unique_id() {
    let lib = MpiLibrary::get().unwrap();
    println!(
        "{} ({})",
        lib.path,
        lib.version.lines().next().unwrap_or("")
    );
    let mut world = MpiWorld::init(config(30.0)).unwrap();
    let (rank, size) = (world.rank(), world.size());
    let want: [u8; 128] = std::array::from_fn(|i| i as u8 ^ 0x5a);
    let got = shared_unique_id(&mut world, || Ok(want)).unwrap();
    assert_eq!(got, want, "rank {rank} of {size}");
    println!("rank {rank} of {size}: the unique id arrived");
}
