//! MSPCG: the multi-splitting preconditioned CG of Tu, Clark, Jung and Mawhinney for the
//! even-odd Möbius domain-wall normal equations M̂†M̂ x = M̂†b, on a virtual block grid
//! of one process, or on each rank's share of it on a decomposed lattice ([`BlockDomain`]).
//!
//! | item | what it is |
//! |---|---|
//! | [`PaddedBlocks`], [`BlockDomain`] | the block grid on the whole lattice or a rank's, each block's padded local lattice, gather/scatter |
//! | [`LocalNormal`], [`Snake`] | A_s: M̂†M̂ on one block with Dirichlet boundaries, with or without the snake terms |
//! | [`Preconditioner`], [`fixed_cg`], [`MultiSplitting`] | z = Σ_s P_s CG_k(A_s; P_s r): k inner CG iterations per block from a zero guess |
//! | [`StackedBlocks`] | the blocks' padded lattices stacked along t: one launch applies every block's A_s (the GPU form) |
//! | [`DeviceMultiSplitting`] | the preconditioner on the GPU: every block at once on the stacked lattice, inner vectors in f32, fixed16 or fixed8 |
//! | [`pcg`], [`PcgResult`], [`PreconditionerBreakdown`] | the outer flexible PCG (Polak–Ribière), reliable updates, fallback to CG |
//! | [`Transfer`], [`TransferForm`] | T: spin × s map from Ls to a reduced L̂s (spin or chiral form), saved to and loaded from a file |
//! | [`ReducedLs`] | the reduced-Ls preconditioner z = (T† K̂ T + μ) r, K̂ the block solves on L̂s slices |
//! | [`training`] | χ² = (1/N) Σ ‖A (T† K̂ T + μ) v_i − v_i‖², its analytic gradient, L-BFGS, low-mode training vectors |
//!
//! The outer iteration is generic over the field and operator types (host and device
//! vectors); the Dirichlet complement ([`LocalNormal`] on the host, the stacked blocks
//! on the device) is one definition over any even-odd blocks
//! ([`crate::operator::EvenOddBlocks`]).

mod block_grid;
mod device;
mod local_operator;
mod pcg;
mod preconditioner;
mod reduced;
mod stacked;
pub mod training;
mod transfer;

#[cfg(test)]
mod device_gpu_tests;
#[cfg(test)]
mod fcg_tests;
#[cfg(test)]
mod rank_tests;
#[cfg(test)]
mod reduced_tests;
#[cfg(test)]
mod stacked_tests;
#[cfg(test)]
mod tests;

pub use block_grid::{BlockDomain, BlockGridError, PaddedBlocks, PAD};
pub use device::{DeviceMspcgError, DeviceMultiSplitting, StackedNormal};
pub use local_operator::{LocalNormal, Snake};
pub use pcg::{pcg, PcgResult, PreconditionerBreakdown, PreconditionerFault};
pub use preconditioner::{fixed_cg, fixed_cg_grouped, Identity, MultiSplitting, Preconditioner};
pub use reduced::{with_ls, ReducedLs};
pub use stacked::StackedBlocks;
pub use transfer::{
    LoadedTransfer, SpinMatrix, Transfer, TransferError, TransferForm, TransferStart,
};
