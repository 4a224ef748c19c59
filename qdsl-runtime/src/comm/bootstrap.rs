//! Starting the GPU communicator of many processes: who am I (rank, size, which GPU of
//! my node), and NCCL's unique id handed from rank 0 to every rank — over MPI across
//! nodes, through memory between the threads of one process.
//!
//! # The multi-node path (designed here, tested on one node)
//! `mpirun -n P qdsl solve … --grid …` starts P processes. Each one
//!
//! 1. reads its place from the launcher's environment ([`LaunchPlace::from_env`]: Open
//!    MPI's `OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK}`, MPICH/Hydra's
//!    `PMI_{RANK,SIZE}` and `MPI_LOCALRANKID`, Slurm's `SLURM_{PROCID,NTASKS,LOCALID}`),
//!    and checks that the grid has exactly P ranks and that its node has a GPU for its
//!    local rank ([`LaunchPlace::gpu`]);
//! 2. opens that GPU;
//! 3. obtains the NCCL unique id with [`shared_unique_id`]: rank 0 makes it
//!    (`ncclGetUniqueId`), a [`Bootstrap`] broadcasts its 128 bytes, every rank
//!    receives them — the only thing MPI carries;
//! 4. joins the NCCL communicator (`NcclComm::init(stream, P, rank, id, config)`), through
//!    which every halo exchange and every reduction then goes.
//!
//! The [`Bootstrap`] for MPI is [`super::mpi::MpiWorld`]: `MPI_Init_thread`,
//! `MPI_Comm_rank/size`, `MPI_Bcast` and `MPI_Finalize` bound at run time from
//! `libmpi.so` (as NCCL is bound, so that qdsl builds without MPI), the handles
//! (`MPI_COMM_WORLD`, `MPI_BYTE`: not ABI) taken by the family `MPI_Get_library_version`
//! names. It is tested against in-process fakes (no MPI library is installed here); the
//! threads of one process use [`ThreadComm`] as their bootstrap. The steps above are the
//! same code for both.

use super::{CommError, Communicator, Incoming, Outgoing, ThreadComm};

/// The ranks before any GPU communicator exists: enough to broadcast a few bytes.
pub trait Bootstrap {
    /// This rank.
    fn rank(&self) -> usize;

    /// The number of ranks.
    fn size(&self) -> usize;

    /// Every rank's `bytes` become root's (MPI_Bcast). Every rank calls it together; a
    /// root that never sends ends the wait at the timeout, naming it.
    fn broadcast_bytes(&mut self, root: usize, bytes: &mut [u8]) -> Result<(), CommError>;
}

/// The tag of the broadcast's messages.
const BROADCAST_TAG: u32 = 0xb00;

impl Bootstrap for ThreadComm {
    fn rank(&self) -> usize {
        Communicator::rank(self)
    }

    fn size(&self) -> usize {
        Communicator::size(self)
    }

    fn broadcast_bytes(&mut self, root: usize, bytes: &mut [u8]) -> Result<(), CommError> {
        let (rank, size) = (Communicator::rank(self), Communicator::size(self));
        if root >= size {
            return Err(CommError::BadRequest {
                rank,
                operation: "broadcast".into(),
                what: format!("root rank {root} is outside the communicator of {size} ranks"),
            });
        }
        if rank == root {
            let sends = (0..size)
                .filter(|&p| p != root)
                .map(|peer| Outgoing {
                    peer,
                    tag: BROADCAST_TAG,
                    data: bytes.to_vec(),
                })
                .collect();
            self.exchange::<u8>("broadcast", sends, &[])?;
        } else {
            let recv = Incoming {
                peer: root,
                tag: BROADCAST_TAG,
                len: bytes.len(),
            };
            let got = self.exchange::<u8>("broadcast", Vec::new(), &[recv])?;
            bytes.copy_from_slice(&got[0]);
        }
        Ok(())
    }
}

/// The NCCL unique id every rank joins with: made by rank 0 with `make` (only there:
/// `ncclGetUniqueId`, which opens a socket on rank 0's host) and broadcast. A failure of
/// `make` on rank 0 is reported there; the others then time out naming rank 0.
pub fn shared_unique_id<B: Bootstrap>(
    bootstrap: &mut B,
    make: impl FnOnce() -> Result<[u8; 128], CommError>,
) -> Result<[u8; 128], CommError> {
    let mut id = [0u8; 128];
    if bootstrap.rank() == 0 {
        id = make()?;
    }
    bootstrap.broadcast_bytes(0, &mut id)?;
    Ok(id)
}

/// A process's place in a launch: its rank among `size`, and its rank among the
/// processes of its node (which GPU it drives).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchPlace {
    /// The global rank.
    pub rank: usize,
    /// The number of ranks.
    pub size: usize,
    /// The rank among the processes of this node.
    pub local_rank: usize,
}

/// Why a launch cannot go on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// A launcher variable that is not a number.
    #[error("the launcher set {var}={value:?}, not a rank number")]
    NotANumber {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// The rank is not below the size.
    #[error("the launcher says rank {rank} of {size} ranks")]
    RankOutOfRange {
        /// The rank.
        rank: usize,
        /// The size.
        size: usize,
    },
    /// The grid's ranks and the launched processes differ.
    #[error(
        "the process grid has {grid} ranks but {launched} processes were launched \
         (mpirun -n must equal Px·Py·Pz·Pt)"
    )]
    WrongProcessCount {
        /// Ranks of the grid.
        grid: usize,
        /// Processes launched.
        launched: usize,
    },
    /// More processes on this node than GPUs.
    #[error(
        "rank {rank} is process {local_rank} of its node, which has {gpus} GPU{plural}: one \
         process per GPU (launch at most {gpus} per node)"
    )]
    NoGpuLeft {
        /// The global rank.
        rank: usize,
        /// Its rank on the node.
        local_rank: usize,
        /// GPUs on the node.
        gpus: usize,
        /// "s" or "".
        plural: &'static str,
    },
}

/// The launchers' variables, (rank, size, local rank), in the order they are tried.
const LAUNCHERS: [(&str, &str, &str); 3] = [
    (
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE",
        "OMPI_COMM_WORLD_LOCAL_RANK",
    ),
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
    ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
];

impl LaunchPlace {
    /// The single process of a run without a launcher.
    pub const ALONE: LaunchPlace = LaunchPlace {
        rank: 0,
        size: 1,
        local_rank: 0,
    };

    /// The place the first launcher whose rank and size variables are both set gives
    /// (`get` reads a variable: `std::env::var` in production, a map in tests); without
    /// a launcher, [`Self::ALONE`]. A missing local rank is taken as the rank (one node).
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Self, LaunchError> {
        let number = |var: &'static str| -> Result<Option<usize>, LaunchError> {
            match get(var) {
                None => Ok(None),
                Some(value) => value
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|_| LaunchError::NotANumber { var, value }),
            }
        };
        for (rank_var, size_var, local_var) in LAUNCHERS {
            let (Some(rank), Some(size)) = (number(rank_var)?, number(size_var)?) else {
                continue;
            };
            if rank >= size {
                return Err(LaunchError::RankOutOfRange { rank, size });
            }
            let local_rank = number(local_var)?.unwrap_or(rank);
            return Ok(Self {
                rank,
                size,
                local_rank,
            });
        }
        Ok(Self::ALONE)
    }

    /// The GPU this process drives on a node of `gpus` GPUs, after checking that the
    /// grid of `grid_ranks` ranks is what was launched: its local rank.
    pub fn gpu(&self, grid_ranks: usize, gpus: usize) -> Result<usize, LaunchError> {
        if grid_ranks != self.size {
            return Err(LaunchError::WrongProcessCount {
                grid: grid_ranks,
                launched: self.size,
            });
        }
        if self.local_rank >= gpus {
            return Err(LaunchError::NoGpuLeft {
                rank: self.rank,
                local_rank: self.local_rank,
                gpus,
                plural: if gpus == 1 { "" } else { "s" },
            });
        }
        Ok(self.local_rank)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::{run_ranks, CommConfig};
    use std::collections::HashMap;
    use std::time::Duration;

    /// The stand-in for ncclGetUniqueId: 128 bytes that differ from zero.
    fn fake_id() -> Result<[u8; 128], CommError> {
        Ok(std::array::from_fn(|k| (k * 7 + 3) as u8))
    }

    /// Four ranks (threads standing in for MPI processes): every rank ends with rank 0's
    /// id, and only rank 0 made one.
    #[test]
    fn every_rank_gets_rank_zeros_unique_id() {
        let got = run_ranks(4, CommConfig::default(), |mut comm| {
            let rank = Bootstrap::rank(&comm);
            let mut made = false;
            let id = shared_unique_id(&mut comm, || {
                made = true;
                fake_id()
            })
            .unwrap();
            (id, made, rank)
        });
        for (id, made, rank) in got {
            assert_eq!(id, fake_id().unwrap(), "rank {rank}");
            assert_eq!(made, rank == 0, "rank {rank}");
        }
    }

    /// Rank 0 fails to make the id: it reports its own error, and the others time out
    /// naming rank 0 instead of waiting forever.
    #[test]
    fn a_root_that_fails_ends_the_others_wait_naming_it() {
        let quick = CommConfig {
            timeout: Duration::from_millis(200),
        };
        let got = run_ranks(3, quick, |mut comm| {
            shared_unique_id(&mut comm, || {
                Err(CommError::Call {
                    rank: 0,
                    call: "ncclGetUniqueId".into(),
                    message: "no network interface".into(),
                })
            })
            .map_err(|e| e.to_string())
        });
        assert!(got[0].as_ref().unwrap_err().contains("ncclGetUniqueId"));
        for (rank, r) in got.iter().enumerate().skip(1) {
            let e = r.as_ref().unwrap_err();
            assert!(
                e.contains(&format!("rank {rank}")) && e.contains("rank 0"),
                "{e}"
            );
        }
    }

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    /// Open MPI, MPICH and Slurm variables give the place; none gives one process; bad
    /// values are errors naming the variable.
    #[test]
    fn the_launch_place_comes_from_the_launchers_variables() {
        let ompi = env(&[
            ("OMPI_COMM_WORLD_RANK", "5"),
            ("OMPI_COMM_WORLD_SIZE", "8"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
        ]);
        let place = LaunchPlace::from_env(ompi).unwrap();
        assert_eq!((place.rank, place.size, place.local_rank), (5, 8, 1));
        let mpich = env(&[("PMI_RANK", "2"), ("PMI_SIZE", "4")]);
        let place = LaunchPlace::from_env(mpich).unwrap();
        assert_eq!((place.rank, place.size, place.local_rank), (2, 4, 2));
        let slurm = env(&[
            ("SLURM_PROCID", "6"),
            ("SLURM_NTASKS", "16"),
            ("SLURM_LOCALID", "2"),
        ]);
        assert_eq!(LaunchPlace::from_env(slurm).unwrap().local_rank, 2);
        assert_eq!(LaunchPlace::from_env(env(&[])).unwrap(), LaunchPlace::ALONE);
        let bad = LaunchPlace::from_env(env(&[("PMI_RANK", "x"), ("PMI_SIZE", "4")]));
        assert!(bad.unwrap_err().to_string().contains("PMI_RANK=\"x\""));
        let out = LaunchPlace::from_env(env(&[("PMI_RANK", "4"), ("PMI_SIZE", "4")]));
        assert_eq!(out, Err(LaunchError::RankOutOfRange { rank: 4, size: 4 }));
    }

    /// The GPU is the local rank; a grid that does not match the launch, or more processes
    /// on a node than GPUs, is refused naming the counts.
    #[test]
    fn each_process_drives_the_gpu_of_its_local_rank() {
        let place = LaunchPlace {
            rank: 5,
            size: 8,
            local_rank: 1,
        };
        assert_eq!(place.gpu(8, 4), Ok(1));
        let e = place.gpu(4, 4).unwrap_err().to_string();
        assert!(e.contains("4 ranks but 8 processes"), "{e}");
        let e = place.gpu(8, 1).unwrap_err().to_string();
        assert!(e.contains("process 1 of its node, which has 1 GPU:"), "{e}");
    }
}
