//! `--grid Px,Py,Pz,Pt`: the lattice decomposed over ranks (see
//! [`crate::app::solve::solve_on_grid`]).

use clap::Args;
use qdsl_core::lattice::ProcessGrid;

/// The process-grid flag of the commands that run decomposed.
#[derive(Debug, Args)]
pub struct GridArgs {
    /// Decompose the lattice over a process grid Px,Py,Pz,Pt (e.g. 1,1,1,2: t cut in
    /// two): the gauge file is read once and scattered, every rank holds its local
    /// lattice with halos, the solver runs unchanged with deterministic global sums. On
    /// the CPU every rank is a thread; on GPUs one rank per GPU with NCCL between them
    /// (more ranks than GPUs, or no NCCL library, is refused), or with
    /// QDSL_GRID_TRANSPORT=host every rank on GPU 0 with faces through the host.
    /// Each Pμ must divide Lμ into even local extents, at least 3 in cut directions with
    /// the Naik term (asqtad, HISQ). `QDSL_COMM_TIMEOUT` (seconds) bounds every wait for a
    /// peer.
    #[arg(long, value_parser = parse_grid)]
    pub grid: Option<ProcessGrid>,
}

fn parse_grid(text: &str) -> Result<ProcessGrid, String> {
    ProcessGrid::parse(text).map_err(|e| e.to_string())
}
