//! `qdsl.pion_correlator`: the point-source propagator and the pion correlator of
//! `qdsl::app::correlator` (the `qdsl correlator` program's measurement).

use crate::api::{
    measure, parse_normalisation, Action, CorrelatorConfig, FermionBoundary, IterationPrecision,
    SolveSettings, SolverKind, SolverOptions,
};
use crate::arrays::fermion_to_array;
use crate::errors::{qdsl_error, value_error};
use crate::gauge::PyGaugeField;
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// pion_correlator(gauge, action, *, kappa=None, mass=None, u0=None, epsilon_naik=None, csw=None, mu=None, boundary="antiperiodic", cf=None, cf_prime=None, origin=(0, 0, 0, 0), solver=None, tol=1e-10, maxiter=10000, precision="f64", normalisation="none") -> dict
///
/// The pion correlator C(t) = Σ_{x: t} Σ_columns Σ_components |S(x, x₀)|² of the
/// point-source propagator S at `origin` (x, y, z, t) for `action` "wilson" (κ),
/// "clover" (κ, c_sw), "twisted-mass" (κ, μ, c_sw; the charged pion), "staggered",
/// "asqtad" (m, u0; asqtad default u0 = P^{1/4}) or "hisq" (m, ε_Naik), on the host.
/// `boundary` "antiperiodic", "periodic", or openQCD's "open" / "sf" (Wilson-like
/// actions; c_F `cf`, c_F' `cf_prime`; the source must lie between the boundary
/// slices, and C(t) is meaningful only away from them). `normalisation` "none" or "milc" (MILC's point-source print-out: divided by (Lx Ly Lz)²). Returns a dict:
/// "correlator" (C(t), t = 0 … Lt − 1 from the source), "effective_mass"
/// (ln C(t)/C(t+1), NaN where undefined), "propagator" (the columns, shape
/// (3, T, Z, Y, X, 3) or (12, T, Z, Y, X, 4, 3)), "parameters", "solves", "iterations",
/// "worst_residual".
#[pyfunction]
#[pyo3(signature = (gauge, action, *, kappa=None, mass=None, u0=None, epsilon_naik=None,
    csw=None, mu=None, boundary="antiperiodic", cf=None, cf_prime=None, origin=[0, 0, 0, 0], solver=None, tol=1e-10, maxiter=10000,
    precision="f64", normalisation="none"))]
#[allow(clippy::too_many_arguments)]
pub fn pion_correlator<'py>(
    py: Python<'py>,
    gauge: &PyGaugeField,
    action: &str,
    kappa: Option<f64>,
    mass: Option<f64>,
    u0: Option<f64>,
    epsilon_naik: Option<f64>,
    csw: Option<f64>,
    mu: Option<f64>,
    boundary: &str,
    cf: Option<f64>,
    cf_prime: Option<f64>,
    origin: [usize; 4],
    solver: Option<&str>,
    tol: f64,
    maxiter: usize,
    precision: &str,
    normalisation: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let action: Action = action
        .parse()
        .map_err(|e| value_error(format!("action: {e}")))?;
    let boundary = FermionBoundary::from_flags(boundary, cf, cf_prime)
        .map_err(|e| value_error(format!("boundary: {e}")))?;
    let solver = match solver {
        Some(name) => name
            .parse()
            .map_err(|e| value_error(format!("solver: {e}")))?,
        None if action.is_wilson_like() => SolverKind::BiCgStab,
        None => SolverKind::Cg,
    };
    let precision = match precision {
        "f64" => IterationPrecision::F64,
        "f32" => IterationPrecision::F32,
        other => {
            return Err(value_error(format!(
                "precision: expected \"f64\" or \"f32\", found {other:?}"
            )))
        }
    };
    let normalisation = parse_normalisation(normalisation)
        .map_err(|e| value_error(format!("normalisation: {e}")))?;
    let dims = gauge.field.lattice().dims();
    if origin.iter().zip(dims).any(|(&x, l)| x >= l) {
        return Err(value_error(format!(
            "origin {origin:?} is outside the lattice {dims:?}"
        )));
    }
    let config = CorrelatorConfig {
        action,
        kappa,
        mass,
        u0,
        epsilon_naik,
        csw,
        mu,
        clover_trace: Default::default(),
        boundary,
        origin,
        settings: SolveSettings {
            solver,
            precision,
            options: SolverOptions {
                max_iterations: maxiter,
                polak_ribiere: precision != IterationPrecision::F64,
                ..SolverOptions::with_tolerance(tol)
            },
        },
        normalisation,
    };
    let report = py
        .detach(|| measure(&gauge.field, &config))
        .map_err(qdsl_error)?;
    let numpy = py.import("numpy")?;
    let columns = report
        .propagator
        .columns
        .iter()
        .map(|c| fermion_to_array(py, c))
        .collect::<PyResult<Vec<_>>>()?;
    let out = PyDict::new(py);
    out.set_item("correlator", PyArray1::from_vec(py, report.correlator))?;
    out.set_item(
        "effective_mass",
        PyArray1::from_iter(
            py,
            report.effective_mass.iter().map(|m| m.unwrap_or(f64::NAN)),
        ),
    )?;
    out.set_item("propagator", numpy.getattr("stack")?.call1((columns,))?)?;
    out.set_item("parameters", report.parameters)?;
    out.set_item("normalisation", normalisation.name())?;
    out.set_item("solves", report.solves)?;
    out.set_item("iterations", report.iterations)?;
    out.set_item("worst_residual", report.worst_residual)?;
    Ok(out)
}
