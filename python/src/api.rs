//! Every item of the qdsl crates the bindings use, imported in this one module: when a
//! path moves (e.g. `qdsl::app` into the root package), only this file changes.

pub use qdsl::app::correlator::{measure, parse_normalisation, CorrelatorConfig};
pub use qdsl::app::precision::Precision as IterationPrecision;
pub use qdsl::app::propagator::{join_parities, prepared_links, split_parities, SolveSettings};
pub use qdsl::app::solve::{tadpole_factor, wilson_mass, Action, FermionBoundary, SolveBackend};
pub use qdsl_core::dsl::variant::TimeBoundary;
pub use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
pub use qdsl_core::gauge::{clover_field, link_trace, plaquette, reunitarize, unitarity_report};
pub use qdsl_core::io::lime_gauge::{write_lime_gauge, LimeWriteOptions};
pub use qdsl_core::io::milc::{write_milc, MilcWriteOptions};
pub use qdsl_core::io::nersc::{write_nersc, NerscWriteOptions};
pub use qdsl_core::io::openqcd::write_openqcd;
pub use qdsl_core::io::{
    read_fermion, read_gauge, write_fermion, Check, ChecksumPolicy, FermionFileFormat,
    FermionWriteOptions, IoError, LimeFlavour, Precision, ReadOptions, UnitarityCheck,
};
pub use qdsl_core::lattice::{Lattice, Parity};
pub use qdsl_core::Complex;
pub use qdsl_kernels::{asqtad_links, fold_staggered_phases, hisq_links};
pub use qdsl_runtime::backend::BackendChoice;
pub use qdsl_runtime::device::gpu::Gpu;
pub use qdsl_runtime::operator::even_odd::Xpay;
pub use qdsl_runtime::operator::{
    EvenOddBlocks, EvenOddClover, EvenOddStaggered, EvenOddWilson, Schur, StaggeredLinks,
};
pub use qdsl_runtime::smear::{asqtad_links_gpu, hisq_links_gpu};
pub use qdsl_runtime::solver::device::{
    DeviceContext, DeviceOperator, DeviceVector, Double, Single,
};
pub use qdsl_runtime::solver::{
    Convergence, LinearOperator, ResidualKind, SolveResult, SolverError, SolverField, SolverKind,
    SolverOptions,
};
