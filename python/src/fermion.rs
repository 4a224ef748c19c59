//! `read_fermion` and `write_fermion`: colour vectors, Dirac fermions and propagators in
//! SciDAC/QIO LIME and qdsl's own format.

use crate::api::{read_fermion as read_fermion_file, write_fermion as write_fermion_file};
use crate::api::{FermionFileFormat, FermionWriteOptions};
use crate::arrays::{fermion_from_array, fermion_to_array, C64};
use crate::errors::{io_error, value_error};
use crate::gauge::{parse_precision, precision_name};
use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;

/// read_fermion(path) -> dict
///
/// Reads a fermion file (SciDAC/QIO LIME or qdsl's format, recognised from the content;
/// checksums verified). Returns a dict: "data", the columns as a complex128 array of
/// shape (columns, T, Z, Y, X, 3) for colour vectors or (columns, T, Z, Y, X, 4, 3) for
/// Dirac fermions (one column for a vector, 3 or 12 for a propagator: column σ·3 + b for
/// source spin σ, colour b); "kind" ("colour-vector" or "dirac-fermion"), "format",
/// "precision" ("f32" or "f64"), "metadata" (key-value pairs) and "path".
///
/// Raises FileFormatError (file, record, expected, found) for a file that cannot be read.
#[pyfunction]
pub fn read_fermion<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let file = py
        .detach(|| read_fermion_file(&path))
        .map_err(|e| io_error(py, &e, &path))?;
    let columns = file
        .columns
        .iter()
        .map(|c| fermion_to_array(py, c))
        .collect::<PyResult<Vec<_>>>()?;
    let numpy = py.import("numpy")?;
    let data = numpy.getattr("stack")?.call1((columns,))?;
    let out = PyDict::new(py);
    out.set_item("data", data)?;
    out.set_item("kind", file.kind.name())?;
    out.set_item("format", file.format.to_string())?;
    out.set_item("precision", precision_name(file.precision))?;
    out.set_item("metadata", file.metadata)?;
    out.set_item("path", file.path)?;
    Ok(out)
}

/// write_fermion(path, data, format="scidac", *, precision="f64", info="written by qdsl", kind=None)
///
/// Writes fermion columns: `data` of shape (T, Z, Y, X, 3) or (T, Z, Y, X, 4, 3) (one
/// vector), or with a leading column axis (a propagator's 3 or 12 columns), in `format`
/// "scidac" (USQCD records, big-endian) or "qdsl" (JSON header + little-endian payload),
/// stored in `precision` "f32" or "f64". An array of rank 6 ending in (4, 3) is one
/// Dirac fermion unless `kind="colour-vector"` (a staggered propagator with X = 4).
#[pyfunction]
#[pyo3(signature = (path, data, format="scidac", *, precision="f64", info="written by qdsl", kind=None))]
pub fn write_fermion(
    py: Python<'_>,
    path: PathBuf,
    data: &Bound<'_, PyArrayDyn<C64>>,
    format: &str,
    precision: &str,
    info: &str,
    kind: Option<&str>,
) -> PyResult<()> {
    let format = match format {
        "scidac" => FermionFileFormat::Scidac,
        "qdsl" => FermionFileFormat::Qdsl,
        other => {
            return Err(value_error(format!(
                "format: expected \"scidac\" or \"qdsl\", found {other:?}"
            )))
        }
    };
    let options = FermionWriteOptions {
        precision: parse_precision(precision)?,
        info: info.to_string(),
    };
    let shape = data.shape().to_vec();
    // The rank of one column: 5 for a colour vector (T, Z, Y, X, 3), 6 for a Dirac
    // fermion (T, Z, Y, X, 4, 3). Rank 6 with trailing (4, 3) is a Dirac fermion unless
    // `kind` says colour vectors (a staggered propagator with X = 4).
    let column_rank = match (kind, shape.len(), &shape[shape.len().saturating_sub(2)..]) {
        (Some("colour-vector"), 5 | 6, [.., 3]) => 5,
        (Some("dirac-fermion"), 6 | 7, [4, 3]) => 6,
        (None, 5, [.., 3]) => 5,
        (None, 6 | 7, [4, 3]) => 6,
        (None, 6, [.., 3]) => 5,
        (Some(k), ..) if k != "colour-vector" && k != "dirac-fermion" => {
            return Err(value_error(format!(
                "kind: expected \"colour-vector\" or \"dirac-fermion\", found {k:?}"
            )))
        }
        _ => {
            return Err(value_error(format!(
                "data: expected shape ([columns,] T, Z, Y, X, 3) (colour vectors) or \
                 ([columns,] T, Z, Y, X, 4, 3) (Dirac fermions), found {shape:?}"
            )))
        }
    };
    let arrays: Vec<Bound<'_, PyArrayDyn<C64>>> = if shape.len() == column_rank {
        vec![data.clone()]
    } else {
        (0..shape[0])
            .map(|i| {
                data.as_any()
                    .get_item(i)?
                    .cast_into::<PyArrayDyn<C64>>()
                    .map_err(PyErr::from)
            })
            .collect::<PyResult<_>>()?
    };
    let columns = arrays
        .iter()
        .map(|a| {
            let a = a.readonly();
            fermion_from_array(&a, if column_rank == 5 { 1 } else { 4 }, "data")
        })
        .collect::<PyResult<Vec<_>>>()?;
    py.detach(|| write_fermion_file(&path, format, &columns, &options))
        .map_err(|e| io_error(py, &e, &path))
}
