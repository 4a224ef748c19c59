//! Applications built on the operators and solvers, kept apart from their command-line
//! front ends so that tests and other programs can call them.
//!
//! | module | holds |
//! |---|---|
//! | [`solve`] | `qdsl solve`: build an even-odd operator from a gauge configuration and solve |
//! | [`propagator`] | point-source propagators on the full lattice from even-odd solves |
//! | [`correlator`] | `qdsl correlator`: the pion two-point function and effective mass |
//! | [`precision_study`] | CGNR with the iteration in f64 … packed30: the Gruber et al. table and plot |
//! | [`mobius`] | Möbius domain-wall solves (CGNR on the asymmetric M̂), the 4D propagator, pion and midpoint correlators, m_res |
//! | [`mspcg_device`] | MSPCG's preconditioner on the GPU (stacked blocks; inner f32, fixed16 or fixed8; tensor-core M5⁻¹) |
//! | [`mspcg_reduced`] | reduced-Ls MSPCG: training the transfer T, the solve with a trained or loaded T |
//! | [`sap_gcr`] | SAP+GCR (static or adaptive) on the full Wilson-clover system, its JSON report, and the parameter and precision studies |
//! | [`precision`] | the registry of iteration precisions chosen at run time (f64 … posit32): names, host emulation, device markers, the dispatch of a solve |
//! | [`generate`] | `qdsl generate`: quenched heatbath/HMC runs with checkpoints, history and resumption |
//! | [`history`] | a solve's convergence history as JSON and as an SVG plot |

pub mod correlator;
pub mod generate;
pub mod history;
pub mod mobius;
pub mod mobius_device;
pub mod mobius_grid;
pub mod mobius_mspcg;
pub mod mspcg_device;
pub mod mspcg_reduced;
pub mod precision;
pub mod precision_study;
pub mod propagator;
pub mod sap_gcr;
pub mod solve;
