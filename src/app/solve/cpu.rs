//! The host solve: f64 and f32 operators, the narrow formats emulated on f64 fields.

use super::Precision;
use qdsl_core::field::ColourSpinorField;
use qdsl_runtime::solver::{
    Fixed16, Fixed8, Half, LinearOperator, Packed20, Packed30, QuantizedField, QuantizedOperator,
    SolveResult, SolverError, SolverKind, SolverOptions,
};

/// Solves M̂ x = b on the host from the `x` given, iterating in `precision`: f64 with
/// `high` alone, f32 with `low`, fixed16, fixed8, f16, packed20 and packed30 with [`QuantizedOperator`]`(high)` on
/// [`QuantizedField`]s (the format's rounding emulated in f64). The solution and the
/// true residual are f64 (`high`) whatever the precision.
pub fn solve_host(
    solver: SolverKind,
    precision: Precision,
    high: &dyn LinearOperator<ColourSpinorField<f64>>,
    low: &dyn LinearOperator<ColourSpinorField<f32>>,
    b: &ColourSpinorField<f64>,
    x: &mut ColourSpinorField<f64>,
    opts: &SolverOptions,
) -> Result<SolveResult, SolverError> {
    type F64Field = ColourSpinorField<f64>;
    match precision {
        Precision::F64 => solver.solve::<_, F64Field, _, _>(high, high, b, x, opts),
        Precision::F32 => solver.solve::<_, ColourSpinorField<f32>, _, _>(high, low, b, x, opts),
        Precision::Fixed16 => {
            let low = QuantizedOperator(high);
            solver.solve::<_, QuantizedField<Fixed16>, _, _>(high, &low, b, x, opts)
        }
        Precision::Fixed8 => {
            let low = QuantizedOperator(high);
            solver.solve::<_, QuantizedField<Fixed8>, _, _>(high, &low, b, x, opts)
        }
        Precision::F16 => {
            let low = QuantizedOperator(high);
            solver.solve::<_, QuantizedField<Half>, _, _>(high, &low, b, x, opts)
        }
        Precision::Packed20 => {
            let low = QuantizedOperator(high);
            solver.solve::<_, QuantizedField<Packed20>, _, _>(high, &low, b, x, opts)
        }
        Precision::Packed30 => {
            let low = QuantizedOperator(high);
            solver.solve::<_, QuantizedField<Packed30>, _, _>(high, &low, b, x, opts)
        }
    }
}
