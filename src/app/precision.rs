//! The iteration precision of a solve, chosen at run time ([`Precision`]): one registry
//! ([`precisions!`] below) names every precision once — the name the command line spells,
//! how the iteration runs on the host ([`HostIteration`]: native f64 or f32 fields, or a
//! storage format emulated on f64 fields) and the marker of its device vectors, if GPUs
//! iterate in it ([`DevicePrecision`]). Everything else is generated from the rows: the
//! enum, the names and descriptions, the host solve and GCR dispatch, the rounding, the
//! device dispatch ([`Precision::on_device`]) and the preconditioner bound of GCR
//! ([`AnyPrecisionPreconditioner`]). The solution and the true residual are always f64.
//!
//! A new low-precision format is one row here, plus its storage codec: a
//! [`SpinorStorage`] marker in `qdsl_runtime::solver` (format and unit round-off) and,
//! where the kernels store vectors in it, `impl DevicePrecision for Marker {}`.

use qdsl_core::field::ColourSpinorField;
use qdsl_runtime::solver::device::{DevicePrecision, Single};
use qdsl_runtime::solver::{
    gcr, round_through, BFloat16, ConvertFrom, Fixed16, Fixed8, GcrResult, Half, LinearOperator,
    Packed20, Packed30, Posit16, Posit32, Posit8, Preconditioner, QuantizedField,
    QuantizedOperator, SolveResult, SolverError, SolverKind, SolverOptions, SpinorStorage, Tf32,
};
use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;

type F64 = ColourSpinorField<f64>;
type F32 = ColourSpinorField<f32>;

/// How the iteration of one precision runs on the host: the type of its vectors and the
/// operator on them, built from the f64 operator `high` and the f32 operator `single`.
/// Three kinds: [`NativeF64`], [`NativeF32`] and [`Emulated`]`<S>`.
pub trait HostIteration {
    /// The iteration's vectors.
    type Field;
    /// round_S of an f64 field, for the formats emulated on f64 fields (`None` for the
    /// native f64 and f32).
    const ROUNDING: Option<fn(&mut F64)>;

    /// Solves M x = b with `solver` from the guess in `x`: solution and true residual
    /// with `high` in f64, the iteration on [`Self::Field`].
    fn solve<OH, OS>(
        solver: SolverKind,
        high: &OH,
        single: &OS,
        b: &F64,
        x: &mut F64,
        opts: &SolverOptions,
    ) -> Result<SolveResult, SolverError>
    where
        OH: LinearOperator<F64> + ?Sized,
        OS: LinearOperator<F32> + ?Sized;

    /// Flexible GCR(`nkv`) right-preconditioned with `precond` ([`gcr`]): solution and
    /// true residual with `high` in f64, the GCR vectors on [`Self::Field`].
    #[allow(clippy::too_many_arguments)]
    fn gcr<OH, OS, P>(
        high: &OH,
        single: &OS,
        precond: &mut P,
        nkv: usize,
        b: &F64,
        x: &mut F64,
        opts: &SolverOptions,
    ) -> Result<GcrResult, SolverError>
    where
        OH: LinearOperator<F64> + ?Sized,
        OS: LinearOperator<F32> + ?Sized,
        P: Preconditioner<Self::Field> + ?Sized;

    /// `x` stored as an iteration vector and read back: the rounding every vector of the
    /// iteration goes through.
    fn round_trip(x: &F64) -> F64;
}

/// The iteration in f64 fields with the f64 operator itself (pure f64).
#[derive(Clone, Copy, Debug)]
pub struct NativeF64;

/// The iteration in f32 fields with the f32 operator.
#[derive(Clone, Copy, Debug)]
pub struct NativeF32;

/// The iteration in f64 fields rounded through storage format `S` after every write
/// ([`QuantizedField`]), the operator applied in f64 and its result rounded
/// ([`QuantizedOperator`]).
#[derive(Clone, Copy, Debug)]
pub struct Emulated<S>(PhantomData<S>);

impl HostIteration for NativeF64 {
    type Field = F64;
    const ROUNDING: Option<fn(&mut F64)> = None;

    fn solve<OH, OS>(
        solver: SolverKind,
        high: &OH,
        _single: &OS,
        b: &F64,
        x: &mut F64,
        opts: &SolverOptions,
    ) -> Result<SolveResult, SolverError>
    where
        OH: LinearOperator<F64> + ?Sized,
        OS: LinearOperator<F32> + ?Sized,
    {
        solver.solve::<F64, F64, _, _>(high, high, b, x, opts)
    }

    fn gcr<OH, OS, P>(
        high: &OH,
        _single: &OS,
        precond: &mut P,
        nkv: usize,
        b: &F64,
        x: &mut F64,
        opts: &SolverOptions,
    ) -> Result<GcrResult, SolverError>
    where
        OH: LinearOperator<F64> + ?Sized,
        OS: LinearOperator<F32> + ?Sized,
        P: Preconditioner<F64> + ?Sized,
    {
        gcr::<F64, F64, _, _, _>(high, high, precond, nkv, b, x, opts)
    }

    fn round_trip(x: &F64) -> F64 {
        x.clone()
    }
}

impl HostIteration for NativeF32 {
    type Field = F32;
    const ROUNDING: Option<fn(&mut F64)> = None;

    fn solve<OH, OS>(
        solver: SolverKind,
        high: &OH,
        single: &OS,
        b: &F64,
        x: &mut F64,
        opts: &SolverOptions,
    ) -> Result<SolveResult, SolverError>
    where
        OH: LinearOperator<F64> + ?Sized,
        OS: LinearOperator<F32> + ?Sized,
    {
        solver.solve::<F64, F32, _, _>(high, single, b, x, opts)
    }

    fn gcr<OH, OS, P>(
        high: &OH,
        single: &OS,
        precond: &mut P,
        nkv: usize,
        b: &F64,
        x: &mut F64,
        opts: &SolverOptions,
    ) -> Result<GcrResult, SolverError>
    where
        OH: LinearOperator<F64> + ?Sized,
        OS: LinearOperator<F32> + ?Sized,
        P: Preconditioner<F32> + ?Sized,
    {
        gcr::<F64, F32, _, _, _>(high, single, precond, nkv, b, x, opts)
    }

    fn round_trip(x: &F64) -> F64 {
        F64::converted(&F32::converted(x))
    }
}

impl<S: SpinorStorage> HostIteration for Emulated<S> {
    type Field = QuantizedField<S>;
    const ROUNDING: Option<fn(&mut F64)> = Some(round_through::<S>);

    fn solve<OH, OS>(
        solver: SolverKind,
        high: &OH,
        _single: &OS,
        b: &F64,
        x: &mut F64,
        opts: &SolverOptions,
    ) -> Result<SolveResult, SolverError>
    where
        OH: LinearOperator<F64> + ?Sized,
        OS: LinearOperator<F32> + ?Sized,
    {
        let low = QuantizedOperator(high);
        solver.solve::<F64, QuantizedField<S>, _, _>(high, &low, b, x, opts)
    }

    fn gcr<OH, OS, P>(
        high: &OH,
        _single: &OS,
        precond: &mut P,
        nkv: usize,
        b: &F64,
        x: &mut F64,
        opts: &SolverOptions,
    ) -> Result<GcrResult, SolverError>
    where
        OH: LinearOperator<F64> + ?Sized,
        OS: LinearOperator<F32> + ?Sized,
        P: Preconditioner<QuantizedField<S>> + ?Sized,
    {
        let low = QuantizedOperator(high);
        gcr::<F64, QuantizedField<S>, _, _, _>(high, &low, precond, nkv, b, x, opts)
    }

    fn round_trip(x: &F64) -> F64 {
        QuantizedField::<S>::new(x.clone()).field().clone()
    }
}

/// What runs with the device vectors of a precision ([`Precision::on_device`]): one
/// generic body for every precision GPUs iterate in.
pub trait DeviceIteration {
    /// What the job returns.
    type Output;
    /// Pure f64: the f64 operator is the iteration's.
    fn pure(self) -> Self::Output;
    /// The iteration on device vectors of `P`, mixed with f64 through reliable updates.
    fn mixed<P: DevicePrecision>(self) -> Self::Output;
}

/// The registry. Its rows: `pure` f64 first, then every mixed precision as
/// `Variant "name" host <HostIteration>, device <DevicePrecision marker | none>;`, widest
/// first within each family (the order of [`Precision::ALL`], of the studies' tables
/// and of the names in messages).
macro_rules! precisions {
    (@device none, $job:ident) => {
        None
    };
    (@device $marker:ty, $job:ident) => {
        Some($job.mixed::<$marker>())
    };
    (
        $(#[$pure_doc:meta])*
        pure $pure:ident $pure_name:literal;
        $(
            $(#[$doc:meta])*
            $variant:ident $name:literal host $host:ty, device $device:tt;
        )*
    ) => {
        /// The precision the Krylov iteration stores its vectors in (the solution and
        /// the true residual are always f64).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Precision {
            $(#[$pure_doc])*
            $pure,
            $( $(#[$doc])* $variant, )*
        }

        impl Precision {
            /// Every precision, in the registry's order.
            pub const ALL: [Precision; 1 + [$(stringify!($variant)),*].len()] =
                [Precision::$pure, $(Precision::$variant),*];

            /// The name [`FromStr`] accepts (the command line's spelling).
            pub fn name(self) -> &'static str {
                match self {
                    Precision::$pure => $pure_name,
                    $(Precision::$variant => $name,)*
                }
            }

            /// A description for summaries and JSON: "f64", or "f64–<name> (reliable
            /// updates)".
            pub fn describe(self) -> &'static str {
                match self {
                    Precision::$pure => $pure_name,
                    $(Precision::$variant => concat!("f64–", $name, " (reliable updates)"),)*
                }
            }

            /// Solves M x = b with `solver` from the guess in `x`: the solution and the
            /// true residual with `high` in f64, the iteration in this precision ([`HostIteration::solve`]:
            /// `single` for f32, round_S(M ψ) by `high` for the emulated formats).
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
                OH: LinearOperator<F64> + ?Sized,
                OS: LinearOperator<F32> + ?Sized,
            {
                match self {
                    Precision::$pure => NativeF64::solve(solver, high, single, b, x, opts),
                    $(Precision::$variant => {
                        <$host as HostIteration>::solve(solver, high, single, b, x, opts)
                    })*
                }
            }

            /// Solves M x = b by flexible GCR(`nkv`) right-preconditioned with `precond`
            /// ([`HostIteration::gcr`]): solution and true residual with `high` in f64,
            /// the GCR vectors in this precision.
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
                OH: LinearOperator<F64> + ?Sized,
                OS: LinearOperator<F32> + ?Sized,
                P: AnyPrecisionPreconditioner + ?Sized,
            {
                match self {
                    Precision::$pure => NativeF64::gcr(high, single, precond, nkv, b, x, opts),
                    $(Precision::$variant => {
                        <$host as HostIteration>::gcr(high, single, precond, nkv, b, x, opts)
                    })*
                }
            }

            /// round_S for the formats emulated on the host (f64 fields rounded through
            /// S), `None` for the native f64 and f32.
            pub fn rounding(self) -> Option<fn(&mut F64)> {
                match self {
                    Precision::$pure => NativeF64::ROUNDING,
                    $(Precision::$variant => <$host as HostIteration>::ROUNDING,)*
                }
            }

            /// `x` stored as a vector of the host iteration and read back
            /// ([`HostIteration::round_trip`]).
            pub fn round_trip(self, x: &F64) -> F64 {
                match self {
                    Precision::$pure => NativeF64::round_trip(x),
                    $(Precision::$variant => <$host as HostIteration>::round_trip(x),)*
                }
            }

            /// Runs `job` with this precision's device vectors: [`DeviceIteration::pure`]
            /// for f64, [`DeviceIteration::mixed`] with the marker of the others; `None`
            /// where GPUs do not iterate in this precision.
            pub fn on_device<J: DeviceIteration>(self, job: J) -> Option<J::Output> {
                match self {
                    Precision::$pure => Some(job.pure()),
                    $(Precision::$variant => precisions!(@device $device, job),)*
                }
            }
        }

        /// A preconditioner for the GCR vectors of every [`Precision`] (SAP converts any
        /// of them into its own precision).
        pub trait AnyPrecisionPreconditioner:
            Preconditioner<F64> $(+ Preconditioner<<$host as HostIteration>::Field>)*
        {
        }

        impl<P> AnyPrecisionPreconditioner for P where
            P: Preconditioner<F64> $(+ Preconditioner<<$host as HostIteration>::Field>)*
        {
        }
    };
}

precisions! {
    /// Pure f64.
    pure F64 "f64";
    /// f32 (native host fields and operator).
    F32 "f32" host NativeF32, device Single;
    /// TF32: f32's exponent, 10 mantissa bits (emulated).
    Tf32 "tf32" host Emulated<Tf32>, device none;
    /// bfloat16 (emulated).
    Bf16 "bf16" host Emulated<BFloat16>, device none;
    /// IEEE half (emulated on the host).
    F16 "f16" host Emulated<Half>, device Half;
    /// 16-bit fixed point with a per-site f32 norm (emulated on the host).
    Fixed16 "fixed16" host Emulated<Fixed16>, device Fixed16;
    /// 8-bit fixed point with a per-site f32 norm (emulated on the host).
    Fixed8 "fixed8" host Emulated<Fixed8>, device Fixed8;
    /// 20-bit packed groups of 6 reals with a shared exponent (emulated on the host; the
    /// device operator computes in f32).
    Packed20 "packed20" host Emulated<Packed20>, device Packed20;
    /// 30-bit packed groups of 6 reals with a shared exponent (emulated on the host; the
    /// device operator computes in f64).
    Packed30 "packed30" host Emulated<Packed30>, device Packed30;
    /// posit8, es = 0 (emulated, [`Posit8`]).
    Posit8 "posit8" host Emulated<Posit8>, device none;
    /// posit16, es = 1 (emulated, [`Posit16`]).
    Posit16 "posit16" host Emulated<Posit16>, device none;
    /// posit32, es = 2 (emulated, [`Posit32`]).
    Posit32 "posit32" host Emulated<Posit32>, device none;
}

/// Answers whether a precision has device vectors (the job of [`Precision::has_device`]).
struct HasDevice;

impl DeviceIteration for HasDevice {
    type Output = ();
    fn pure(self) {}
    fn mixed<P: DevicePrecision>(self) {}
}

impl Precision {
    /// Whether the iteration runs in a lower precision than the solution.
    pub fn is_mixed(self) -> bool {
        self != Precision::F64
    }

    /// Whether the host emulates this precision on f64 fields (every format but the
    /// native f64 and f32).
    pub fn is_emulated(self) -> bool {
        self.rounding().is_some()
    }

    /// Whether GPUs iterate in this precision ([`Self::on_device`]).
    pub fn has_device(self) -> bool {
        self.on_device(HasDevice).is_some()
    }

    /// The precision named `s` among those GPUs iterate in ([`Self::has_device`]): what
    /// `qdsl solve --precision` accepts, on every backend.
    pub fn parse_device(s: &str) -> Result<Self, String> {
        let device: Vec<_> = Self::ALL.into_iter().filter(|p| p.has_device()).collect();
        device
            .iter()
            .copied()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                let mixed: Vec<_> = device.into_iter().filter(|p| p.is_mixed()).collect();
                format!(
                    "unknown precision {s:?}: expected {} (pure), or {} (mixed with f64)",
                    Precision::F64,
                    list(&mixed)
                )
            })
    }
}

/// The names of `precisions` for messages: "f64", "f64 or f32", "f64, f32 or fixed16".
pub fn list(precisions: &[Precision]) -> String {
    match precisions {
        [] => String::new(),
        [one] => one.name().to_string(),
        [rest @ .., last] => {
            let rest: Vec<_> = rest.iter().map(|p| p.name()).collect();
            format!("{} or {last}", rest.join(", "))
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Precision {
    type Err = String;

    /// One of the names of [`Precision::name`] (ASCII case ignored).
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
mod tests;
