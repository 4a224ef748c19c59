//! `qdsl.solve` and `qdsl.SolveResult`: the runtime's Krylov solvers (CG, CGNR, CGNE,
//! BiCGStab; f64 or f64–f32 mixed precision with reliable updates) on an Operator's
//! even-odd system, on the host or the GPU.

use crate::api::{
    join_parities, split_parities, Convergence, DeviceVector, Double, LinearOperator, ResidualKind,
    SolveResult, SolverError, SolverField, SolverKind, SolverOptions,
};
use crate::arrays::C64;
use crate::errors::{qdsl_error, value_error, SolverNotConverged};
use crate::operator::{GpuOperator, PyOperator, F64};
use numpy::{PyArray1, PyArrayDyn, PyReadonlyArrayDyn};
use pyo3::prelude::*;

/// out = M̂ ψ (dagger: M̂† ψ) on the GPU: ψ uploaded, out downloaded.
pub fn gpu_apply(gpu: &GpuOperator, psi: &F64, dagger: bool) -> Result<F64, SolverError> {
    let x = DeviceVector::<Double>::upload(&gpu.ctx, psi).map_err(SolverError::field)?;
    let mut y =
        DeviceVector::<Double>::upload(&gpu.ctx, &psi.zeros_like()).map_err(SolverError::field)?;
    if dagger {
        gpu.double.apply_dagger(&mut y, &x)?;
    } else {
        gpu.double.apply(&mut y, &x)?;
    }
    y.download(*psi.layout()).map_err(SolverError::field)
}

/// (out_e, out_o) = M (ψ_e, ψ_o) (dagger: M†) on the GPU, the full operator
/// ([`crate::api::DeviceOperator::apply_full`]; clover and twisted mass take the operator
/// on the odd sites too): both halves uploaded, both downloaded.
pub fn gpu_full(
    gpu: &GpuOperator,
    psi: (&F64, &F64),
    dagger: bool,
) -> Result<(F64, F64), SolverError> {
    let up = |f: &F64| DeviceVector::<Double>::upload(&gpu.ctx, f).map_err(SolverError::field);
    let (e, o) = (up(psi.0)?, up(psi.1)?);
    let (mut out_e, mut out_o) = (e.zeros_like(), o.zeros_like());
    gpu.double
        .apply_full(gpu.odd.as_ref(), (&mut out_e, &mut out_o), (&e, &o), dagger)?;
    let down =
        |v: &DeviceVector<Double>, f: &F64| v.download(*f.layout()).map_err(SolverError::field);
    Ok((down(&out_e, psi.0)?, down(&out_o, psi.1)?))
}

/// The outcome of `qdsl.solve`.
///
/// `solution` is the solution (full lattice, or the even sites for `even_odd=True`);
/// `converged`, `convergence` (how it ended), `iterations`, `reliable_updates`,
/// `true_residual` (‖b̂ − M̂ x‖/‖b̂‖ of the even-odd system, recomputed in f64), `elapsed`
/// (seconds), `operator_applications`, and the residual history: `history` (a list of
/// (iteration, relative residual, "iterated"|"true")), `history_iterations` and
/// `history_residuals` (numpy arrays of the same).
#[pyclass(module = "qdsl", name = "SolveResult", frozen, get_all)]
pub struct PySolveResult {
    solution: Py<PyArrayDyn<C64>>,
    converged: bool,
    convergence: String,
    iterations: usize,
    reliable_updates: usize,
    true_residual: f64,
    elapsed: f64,
    operator_applications: usize,
    solver: String,
    precision: String,
    device: String,
    history: Vec<(usize, f64, &'static str)>,
    history_iterations: Py<PyArray1<usize>>,
    history_residuals: Py<PyArray1<f64>>,
}

#[pymethods]
impl PySolveResult {
    fn __repr__(&self) -> String {
        format!(
            "<qdsl.SolveResult {} {}: {} after {} iterations, true residual {:.3e}>",
            self.solver, self.precision, self.convergence, self.iterations, self.true_residual
        )
    }
}

fn parse_solver(name: Option<&str>, op: &PyOperator) -> PyResult<SolverKind> {
    match name {
        // M̂ is Hermitian positive definite for the staggered family only.
        None if op.spins == 1 => Ok(SolverKind::Cg),
        None => Ok(SolverKind::BiCgStab),
        Some(name) => name
            .parse()
            .map_err(|e| value_error(format!("solver: {e}"))),
    }
}

/// Solves M̂ x = b (x₀ = 0) on the operator's device.
fn solve_even(
    op: &PyOperator,
    kind: SolverKind,
    mixed: bool,
    b: &F64,
    opts: &SolverOptions,
) -> Result<(SolveResult, F64), SolverError> {
    match &op.gpu {
        None => {
            let mut x = b.zeros_like();
            let result = if mixed {
                kind.solve(op.host.as_ref(), op.host_single.as_ref(), b, &mut x, opts)?
            } else {
                kind.solve(op.host.as_ref(), op.host.as_ref(), b, &mut x, opts)?
            };
            Ok((result, x))
        }
        Some(gpu) => {
            let up =
                |f: &F64| DeviceVector::<Double>::upload(&gpu.ctx, f).map_err(SolverError::field);
            let db = up(b)?;
            let mut dx = up(&b.zeros_like())?;
            let result = if mixed {
                kind.solve(&gpu.double, &gpu.single, &db, &mut dx, opts)?
            } else {
                kind.solve(&gpu.double, &gpu.double, &db, &mut dx, opts)?
            };
            Ok((
                result,
                dx.download(*b.layout()).map_err(SolverError::field)?,
            ))
        }
    }
}

/// solve(op, b, *, solver=None, tol=1e-10, maxiter=10000, precision="f64", even_odd=False, reliable_delta=0.1) -> SolveResult
///
/// Solves M ψ = b on every site (`even_odd=False`: b̂ = op.prepare_source(b), M̂ ψ_e = b̂
/// solved, ψ = op.reconstruct(ψ_e, b)) or M̂ x = b on the even sites (`even_odd=True`,
/// b zero on the odd sites). `solver` is "cg" (Hermitian positive-definite M̂: the
/// staggered family, the default there), "cgnr", "cgne" or "bicgstab" (the default for
/// the Wilson family); `tol` the target ‖b̂ − M̂ x‖/‖b̂‖; `precision` "f64", or "f32" for
/// an f32 iteration with f64 reliable updates. The even-odd solve runs on the operator's
/// device; source preparation and reconstruction on the host.
///
/// Raises SolverNotConverged (with `.result`, the SolveResult and its history) when the
/// solve ends without converging.
#[pyfunction]
#[pyo3(signature = (op, b, *, solver=None, tol=1e-10, maxiter=10000, precision="f64", even_odd=false, reliable_delta=0.1))]
#[allow(clippy::too_many_arguments)]
pub fn solve<'py>(
    py: Python<'py>,
    op: &PyOperator,
    b: PyReadonlyArrayDyn<'py, C64>,
    solver: Option<&str>,
    tol: f64,
    maxiter: usize,
    precision: &str,
    even_odd: bool,
    reliable_delta: f64,
) -> PyResult<PySolveResult> {
    let kind = parse_solver(solver, op)?;
    let mixed = match precision {
        "f64" => false,
        "f32" => true,
        other => {
            return Err(value_error(format!(
                "precision: expected \"f64\" or \"f32\" (f32 iteration, f64 reliable \
                 updates), found {other:?}"
            )))
        }
    };
    let opts = SolverOptions {
        max_iterations: maxiter,
        reliable_delta,
        polak_ribiere: mixed,
        ..SolverOptions::with_tolerance(tol)
    };
    let outcome = if even_odd {
        let b = op.even_field(&b, "b")?;
        py.detach(|| solve_even(op, kind, mixed, &b, &opts))
            .map(|(result, x)| (result, x, None))
    } else {
        let eta = op.field(&b, "b")?;
        py.detach(|| -> Result<_, SolverError> {
            let (eta_e, eta_o) = split_parities(&eta).map_err(SolverError::field)?;
            let b_hat = op.host.source(&eta_e, &eta_o)?;
            let (result, x_e) = solve_even(op, kind, mixed, &b_hat, &opts)?;
            let x_o = op.host.odd(&x_e, &eta_o)?;
            let psi = join_parities(&x_e, &x_o).map_err(SolverError::field)?;
            Ok((result, x_e, Some(psi)))
        })
    };
    let (result, x_even, full) = outcome.map_err(qdsl_error)?;
    let solution = match full {
        Some(psi) => crate::arrays::fermion_to_array(py, &psi)?,
        None => op.even_array(py, &x_even)?,
    };
    let history: Vec<(usize, f64, &'static str)> = result
        .history
        .iter()
        .map(|r| {
            let kind = match r.kind {
                ResidualKind::Iterated => "iterated",
                ResidualKind::True => "true",
            };
            (r.iteration, r.residual, kind)
        })
        .collect();
    let out = PySolveResult {
        solution: solution.unbind(),
        converged: result.convergence == Convergence::Converged,
        convergence: result.convergence.to_string(),
        iterations: result.iterations,
        reliable_updates: result.reliable_updates,
        true_residual: result.true_residual,
        elapsed: result.elapsed.as_secs_f64(),
        operator_applications: result.operator_applications,
        solver: kind.name().to_string(),
        precision: precision.to_string(),
        device: op.device.name().to_string(),
        history_iterations: PyArray1::from_iter(py, history.iter().map(|h| h.0)).unbind(),
        history_residuals: PyArray1::from_iter(py, history.iter().map(|h| h.1)).unbind(),
        history,
    };
    if out.converged {
        return Ok(out);
    }
    let message = format!(
        "{} ({}) did not converge: {} after {} iterations, true residual {:.3e} (tol {tol:e})",
        out.solver, out.precision, out.convergence, out.iterations, out.true_residual
    );
    let err = SolverNotConverged::new_err(message);
    err.value(py).setattr("result", Py::new(py, out)?)?;
    Err(err)
}
