//! The iteration precision of a mixed-precision solve, chosen at run time:
//! [`LowPrecision`] names it and dispatches a solve to the field type that emulates it
//! (the solution and the true residual are always f64).

use qdsl_core::field::ColourSpinorField;
use qdsl_runtime::solver::{
    gcr, BFloat16, Fixed16, Fixed8, GcrResult, Half, LinearOperator, Packed20, Packed30, Posit16,
    Posit32, Posit8, Preconditioner, QuantizedField, QuantizedOperator, SolveResult, SolverError,
    SolverKind, SolverOptions, SpinorStorage, Tf32,
};
use std::fmt;
use std::str::FromStr;

type F64 = ColourSpinorField<f64>;

/// The precision the Krylov iteration stores its vectors in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LowPrecision {
    /// Pure f64.
    F64,
    /// f32 (native host fields and operator).
    F32,
    /// TF32: f32 exponent, 10 mantissa bits (emulated).
    Tf32,
    /// bfloat16 (emulated).
    Bf16,
    /// IEEE half (emulated).
    F16,
    /// 16-bit fixed point with a per-site norm (emulated).
    Fixed16,
    /// 8-bit fixed point with a per-site norm (emulated).
    Fixed8,
    /// 20-bit packed groups of 6 with a shared exponent (emulated).
    Packed20,
    /// 30-bit packed groups of 6 with a shared exponent (emulated).
    Packed30,
    /// posit8, es = 0 (emulated, [`Posit8`]).
    Posit8,
    /// posit16, es = 1 (emulated, [`Posit16`]).
    Posit16,
    /// posit32, es = 2 (emulated, [`Posit32`]).
    Posit32,
}

impl LowPrecision {
    /// Every precision, widest first within each family.
    pub const ALL: [LowPrecision; 12] = [
        LowPrecision::F64,
        LowPrecision::F32,
        LowPrecision::Tf32,
        LowPrecision::Bf16,
        LowPrecision::F16,
        LowPrecision::Fixed16,
        LowPrecision::Fixed8,
        LowPrecision::Packed20,
        LowPrecision::Packed30,
        LowPrecision::Posit8,
        LowPrecision::Posit16,
        LowPrecision::Posit32,
    ];

    /// The name [`FromStr`] accepts: "f64", "f32", "tf32", "bf16", "f16", "fixed16",
    /// "fixed8", "packed20", "packed30", "posit8", "posit16", "posit32".
    pub fn name(self) -> &'static str {
        match self {
            LowPrecision::F64 => "f64",
            LowPrecision::F32 => "f32",
            LowPrecision::Tf32 => "tf32",
            LowPrecision::Bf16 => "bf16",
            LowPrecision::F16 => "f16",
            LowPrecision::Fixed16 => "fixed16",
            LowPrecision::Fixed8 => "fixed8",
            LowPrecision::Packed20 => "packed20",
            LowPrecision::Packed30 => "packed30",
            LowPrecision::Posit8 => "posit8",
            LowPrecision::Posit16 => "posit16",
            LowPrecision::Posit32 => "posit32",
        }
    }

    /// Solves M x = b with `solver` from the guess in `x`: the solution and the true
    /// residual with `high` in f64, the iteration in this precision — with `single` for
    /// f32, and for the emulated formats with round_S(M ψ) computed by `high`
    /// ([`QuantizedOperator`]).
    pub fn solve<OH, OS>(
        self,
        solver: SolverKind,
        high: &OH,
        single: &OS,
        b: &F64,
        x: &mut F64,
        opts: &SolverOptions,
    ) -> Result<SolveResult, SolverError>
    where
        OH: LinearOperator<F64>,
        OS: LinearOperator<ColourSpinorField<f32>>,
    {
        /// The iteration stored in format S.
        fn stored<S: qdsl_runtime::solver::SpinorStorage, OH: LinearOperator<F64>>(
            solver: SolverKind,
            high: &OH,
            b: &F64,
            x: &mut F64,
            opts: &SolverOptions,
        ) -> Result<SolveResult, SolverError> {
            let low = QuantizedOperator(high);
            solver.solve::<F64, QuantizedField<S>, _, _>(high, &low, b, x, opts)
        }
        match self {
            LowPrecision::F64 => solver.solve(high, high, b, x, opts),
            LowPrecision::F32 => solver.solve(high, single, b, x, opts),
            LowPrecision::Tf32 => stored::<Tf32, _>(solver, high, b, x, opts),
            LowPrecision::Bf16 => stored::<BFloat16, _>(solver, high, b, x, opts),
            LowPrecision::F16 => stored::<Half, _>(solver, high, b, x, opts),
            LowPrecision::Fixed16 => stored::<Fixed16, _>(solver, high, b, x, opts),
            LowPrecision::Fixed8 => stored::<Fixed8, _>(solver, high, b, x, opts),
            LowPrecision::Packed20 => stored::<Packed20, _>(solver, high, b, x, opts),
            LowPrecision::Packed30 => stored::<Packed30, _>(solver, high, b, x, opts),
            LowPrecision::Posit8 => stored::<Posit8, _>(solver, high, b, x, opts),
            LowPrecision::Posit16 => stored::<Posit16, _>(solver, high, b, x, opts),
            LowPrecision::Posit32 => stored::<Posit32, _>(solver, high, b, x, opts),
        }
    }

    /// Solves M x = b by flexible GCR(`nkv`) right-preconditioned with `precond`
    /// ([`gcr`]): solution and true residual with `high` in f64, the GCR vectors in this
    /// precision (f32 with `single`, the emulated formats with round_S(M ψ) by `high`).
    #[allow(clippy::too_many_arguments)]
    pub fn gcr<OH, OS, P>(
        self,
        high: &OH,
        single: &OS,
        precond: &mut P,
        nkv: usize,
        b: &F64,
        x: &mut F64,
        opts: &SolverOptions,
    ) -> Result<GcrResult, SolverError>
    where
        OH: LinearOperator<F64>,
        OS: LinearOperator<ColourSpinorField<f32>>,
        P: AnyPrecisionPreconditioner + ?Sized,
    {
        /// The GCR vectors stored in format S.
        fn stored<S: SpinorStorage, OH: LinearOperator<F64>, P>(
            high: &OH,
            precond: &mut P,
            nkv: usize,
            b: &F64,
            x: &mut F64,
            opts: &SolverOptions,
        ) -> Result<GcrResult, SolverError>
        where
            P: Preconditioner<QuantizedField<S>> + ?Sized,
        {
            let low = QuantizedOperator(high);
            gcr::<F64, QuantizedField<S>, _, _, _>(high, &low, precond, nkv, b, x, opts)
        }
        match self {
            LowPrecision::F64 => gcr(high, high, precond, nkv, b, x, opts),
            LowPrecision::F32 => gcr(high, single, precond, nkv, b, x, opts),
            LowPrecision::Tf32 => stored::<Tf32, _, _>(high, precond, nkv, b, x, opts),
            LowPrecision::Bf16 => stored::<BFloat16, _, _>(high, precond, nkv, b, x, opts),
            LowPrecision::F16 => stored::<Half, _, _>(high, precond, nkv, b, x, opts),
            LowPrecision::Fixed16 => stored::<Fixed16, _, _>(high, precond, nkv, b, x, opts),
            LowPrecision::Fixed8 => stored::<Fixed8, _, _>(high, precond, nkv, b, x, opts),
            LowPrecision::Packed20 => stored::<Packed20, _, _>(high, precond, nkv, b, x, opts),
            LowPrecision::Packed30 => stored::<Packed30, _, _>(high, precond, nkv, b, x, opts),
            LowPrecision::Posit8 => stored::<Posit8, _, _>(high, precond, nkv, b, x, opts),
            LowPrecision::Posit16 => stored::<Posit16, _, _>(high, precond, nkv, b, x, opts),
            LowPrecision::Posit32 => stored::<Posit32, _, _>(high, precond, nkv, b, x, opts),
        }
    }

    /// round_S for the emulated formats (f64 fields rounded through S), `None` for f64
    /// and f32 (native).
    pub fn rounding(self) -> Option<fn(&mut F64)> {
        use qdsl_runtime::solver::round_through;
        match self {
            LowPrecision::F64 | LowPrecision::F32 => None,
            LowPrecision::Tf32 => Some(round_through::<Tf32>),
            LowPrecision::Bf16 => Some(round_through::<BFloat16>),
            LowPrecision::F16 => Some(round_through::<Half>),
            LowPrecision::Fixed16 => Some(round_through::<Fixed16>),
            LowPrecision::Fixed8 => Some(round_through::<Fixed8>),
            LowPrecision::Packed20 => Some(round_through::<Packed20>),
            LowPrecision::Packed30 => Some(round_through::<Packed30>),
            LowPrecision::Posit8 => Some(round_through::<Posit8>),
            LowPrecision::Posit16 => Some(round_through::<Posit16>),
            LowPrecision::Posit32 => Some(round_through::<Posit32>),
        }
    }
}

/// A preconditioner for the GCR vectors of every [`LowPrecision`] (SAP converts any of
/// them into its own precision).
pub trait AnyPrecisionPreconditioner:
    Preconditioner<F64>
    + Preconditioner<ColourSpinorField<f32>>
    + Preconditioner<QuantizedField<Tf32>>
    + Preconditioner<QuantizedField<BFloat16>>
    + Preconditioner<QuantizedField<Half>>
    + Preconditioner<QuantizedField<Fixed16>>
    + Preconditioner<QuantizedField<Fixed8>>
    + Preconditioner<QuantizedField<Packed20>>
    + Preconditioner<QuantizedField<Packed30>>
    + Preconditioner<QuantizedField<Posit8>>
    + Preconditioner<QuantizedField<Posit16>>
    + Preconditioner<QuantizedField<Posit32>>
{
}

impl<P> AnyPrecisionPreconditioner for P where
    P: Preconditioner<F64>
        + Preconditioner<ColourSpinorField<f32>>
        + Preconditioner<QuantizedField<Tf32>>
        + Preconditioner<QuantizedField<BFloat16>>
        + Preconditioner<QuantizedField<Half>>
        + Preconditioner<QuantizedField<Fixed16>>
        + Preconditioner<QuantizedField<Fixed8>>
        + Preconditioner<QuantizedField<Packed20>>
        + Preconditioner<QuantizedField<Packed30>>
        + Preconditioner<QuantizedField<Posit8>>
        + Preconditioner<QuantizedField<Posit16>>
        + Preconditioner<QuantizedField<Posit32>>
{
}

impl fmt::Display for LowPrecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LowPrecision {
    type Err = String;

    /// One of the names of [`LowPrecision::name`] (ASCII case ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|p| p.name()).collect();
                format!(
                    "unknown precision {s:?}: expected one of {}",
                    names.join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in LowPrecision::ALL {
            assert_eq!(p.name().parse::<LowPrecision>(), Ok(p));
        }
        assert_eq!("TF32".parse::<LowPrecision>(), Ok(LowPrecision::Tf32));
        assert!("f8"
            .parse::<LowPrecision>()
            .unwrap_err()
            .contains("packed30"));
    }
}
