//! The Python exceptions of `qdsl` and the conversion of the Rust errors into them.
//!
//! | exception | raised for |
//! |---|---|
//! | `QdslError` | the base class of everything below |
//! | `FileFormatError` (also an `OSError`) | a file that cannot be read or written: the message names the file, the record or header field, what was expected and what was found; `.path` is the file |
//! | `SolverNotConverged` | a solve that ended without converging; `.result` is the `SolveResult` (solution, iterations, residual history) |
//! | `DeviceUnavailable` | `device="gpu"` without a usable GPU (the reason is in the message) |
//!
//! Bad arguments (shapes, parameter values, names) are `ValueError`s.

use crate::api::IoError;
use pyo3::exceptions::{PyException, PyOSError, PyValueError};
use pyo3::prelude::*;
use std::path::Path;

pyo3::create_exception!(
    qdsl,
    QdslError,
    PyException,
    "Base class of the errors qdsl raises."
);
pyo3::create_exception!(
    qdsl,
    DeviceUnavailable,
    QdslError,
    "device=\"gpu\" was asked for but no usable GPU was found (the message says why)."
);
pyo3::create_exception!(
    qdsl,
    SolverNotConverged,
    QdslError,
    "A solve ended without converging; `.result` holds its SolveResult (solution, history)."
);

/// `FileFormatError(QdslError, OSError)`, created once per interpreter.
pub fn file_format_error(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    static CLASS: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();
    let class = CLASS.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        let builtins = py.import("builtins")?;
        let bases = (py.get_type::<QdslError>(), py.get_type::<PyOSError>());
        let namespace = pyo3::types::PyDict::new(py);
        namespace.set_item("__module__", "qdsl")?;
        namespace.set_item(
            "__doc__",
            "A file qdsl cannot read or write: the message names the file, the record or \
             header field, what was expected and what was found; `.path` is the file.",
        )?;
        Ok(builtins
            .getattr("type")?
            .call1(("FileFormatError", bases, namespace))?
            .unbind())
    })?;
    Ok(class.bind(py).clone())
}

/// The `FileFormatError` of an I/O error on `path`.
pub fn io_error(py: Python<'_>, e: &IoError, path: &Path) -> PyErr {
    match file_format_error(py).and_then(|class| {
        let err = class.call1((e.to_string(),))?;
        err.setattr("path", path.to_string_lossy().into_owned())?;
        Ok(err)
    }) {
        Ok(err) => PyErr::from_value(err),
        Err(e) => e,
    }
}

/// A `ValueError` with `message`.
pub fn value_error(message: impl Into<String>) -> PyErr {
    PyValueError::new_err(message.into())
}

/// A `QdslError` with the error's message.
pub fn qdsl_error(e: impl std::fmt::Display) -> PyErr {
    QdslError::new_err(e.to_string())
}
