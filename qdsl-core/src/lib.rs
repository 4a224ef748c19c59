//! # qdsl-core
//!
//! Everything a lattice QCD code needs before any kernel exists:
//!
//! * [`math`] — complex numbers, SU(3)/U(3) colour matrices, colour vectors, Dirac spinors
//!   and half spinors, the DeGrand–Rossi gamma matrices, spin projectors and σ_μν;
//! * [`lattice`] — 4D (and 5D) geometry: lexicographic and even-odd site indexing,
//!   neighbours at distance 1 and 3, boundary phases, sub-domain blocks;
//! * [`field`] — host fields (gauge, colour-spinor, colour-vector) and the portable,
//!   seeded random generator that fills them;
//! * [`gauge`] — gauge utilities: plaquette, rectangle, link trace, unitarity,
//!   reunitarisation, gauge transformations;
//! * [`format`] — storage formats ("bang per bit"): floating point, fixed point,
//!   bit-packed spinors, gauge compression, each with its documented error bound;
//! * [`io`] — gauge-configuration files: MILC v5, NERSC, ILDG/SciDAC LIME, openQCD;
//! * [`dsl`] — the kernel DSL's IR, lowering passes and the CUDA and Rust emitters.
//!
//! Conventions (DESIGN.md): DeGrand–Rossi gamma basis with γ5 = γ_x γ_y γ_z γ_t =
//! diag(1, 1, −1, −1); external files are lexicographic with x fastest; host fields are
//! indexed by checkerboard index (even sites first).

pub mod dsl;
pub mod field;
pub mod format;
#[cfg(feature = "full")]
pub mod gauge;
#[cfg(feature = "full")]
pub mod io;
pub mod lattice;
pub mod math;
pub mod rational;
pub mod real;
pub mod reduce;

pub use num_complex::Complex;
pub use real::Real;
