//! The extension module `qdsl._native` of the Python package `qdsl` (python/qdsl): gauge
//! and fermion files, operators, solvers, smearing and correlators of qdsl on numpy
//! arrays. The Python package re-exports everything; its docstrings are the ones here.
//!
//! | module | holds |
//! |---|---|
//! | [`api`] | every item used from the qdsl crates (one place to fix paths) |
//! | [`arrays`] | numpy arrays (lexicographic) ↔ host fields (checkerboard order) |
//! | [`errors`] | the Python exceptions and the conversion of the Rust errors |
//! | [`device`] | `device="cpu"|"gpu"` |
//! | [`gauge`] | `GaugeField`, `read_gauge`, `write_gauge`, `smear` |
//! | [`fermion`] | `read_fermion`, `write_fermion` |
//! | [`operator`] | `Operator` and its constructors (`wilson`, `clover`, …) |
//! | [`solve`] | `solve`, `SolveResult` |
//! | [`correlator`] | `pion_correlator` |

mod api;
mod arrays;
mod correlator;
mod device;
mod errors;
mod fermion;
mod gauge;
mod operator;
mod solve;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("QdslError", py.get_type::<errors::QdslError>())?;
    m.add(
        "DeviceUnavailable",
        py.get_type::<errors::DeviceUnavailable>(),
    )?;
    m.add(
        "SolverNotConverged",
        py.get_type::<errors::SolverNotConverged>(),
    )?;
    m.add("FileFormatError", errors::file_format_error(py)?)?;
    m.add_class::<gauge::PyGaugeField>()?;
    m.add_class::<operator::PyOperator>()?;
    m.add_class::<solve::PySolveResult>()?;
    m.add_function(wrap_pyfunction!(gauge::read_gauge, m)?)?;
    m.add_function(wrap_pyfunction!(gauge::write_gauge, m)?)?;
    m.add_function(wrap_pyfunction!(gauge::smear, m)?)?;
    m.add_function(wrap_pyfunction!(fermion::read_fermion, m)?)?;
    m.add_function(wrap_pyfunction!(fermion::write_fermion, m)?)?;
    m.add_function(wrap_pyfunction!(operator::wilson, m)?)?;
    m.add_function(wrap_pyfunction!(operator::clover, m)?)?;
    m.add_function(wrap_pyfunction!(operator::twisted_mass, m)?)?;
    m.add_function(wrap_pyfunction!(operator::staggered, m)?)?;
    m.add_function(wrap_pyfunction!(operator::asqtad, m)?)?;
    m.add_function(wrap_pyfunction!(operator::hisq, m)?)?;
    m.add_function(wrap_pyfunction!(solve::solve, m)?)?;
    m.add_function(wrap_pyfunction!(correlator::pion_correlator, m)?)?;
    m.add_function(wrap_pyfunction!(device::gpu_available, m)?)?;
    Ok(())
}
