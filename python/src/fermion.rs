//! `read_fermion` and `write_fermion`: colour vectors, Dirac fermions and propagators in
//! SciDAC/QIO LIME and qdsl's own format.

use crate::api::{read_fermion as read_fermion_file, write_fermion as write_fermion_file};
use crate::api::{FermionFileFormat, FermionWriteOptions};
use crate::arrays::{fermion_from_array, fermion_to_array, spins_of, C64};
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

/// write_fermion(path, data, format="scidac", *, precision="f64", info="written by qdsl")
///
/// Writes fermion columns: `data` of shape (T, Z, Y, X, 3) or (T, Z, Y, X, 4, 3) (one
/// vector), or with a leading column axis (a propagator's 3 or 12 columns), in `format`
/// "scidac" (USQCD records, big-endian) or "qdsl" (JSON header + little-endian payload),
/// stored in `precision` "f32" or "f64".
#[pyfunction]
#[pyo3(signature = (path, data, format="scidac", *, precision="f64", info="written by qdsl"))]
pub fn write_fermion(
    py: Python<'_>,
    path: PathBuf,
    data: &Bound<'_, PyArrayDyn<C64>>,
    format: &str,
    precision: &str,
    info: &str,
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
    let rank = data.ndim();
    let is_column = |rank| {
        rank == 5 && data.shape()[4] == 3 || rank == 6 && data.shape()[4..] == [4, 3]
    };
    let arrays: Vec<Bound<'_, PyArrayDyn<C64>>> = if is_column(rank) {
        vec![data.clone()]
    } else if is_column(rank - 1) {
        (0..data.shape()[0])
            .map(|i| {
                data.as_any().get_item(i)?
                    .cast_into::<PyArrayDyn<C64>>()
                    .map_err(PyErr::from)
            })
            .collect::<PyResult<_>>()?
    } else {
        return Err(value_error(format!(
            "data: expected shape ([columns,] T, Z, Y, X, 3) or ([columns,] T, Z, Y, X, 4, 3), \
             found {:?}",
            data.shape()
        )));
    };
    let columns = arrays
        .iter()
        .map(|a| {
            let a = a.readonly();
            let spins = spins_of(&a, "data")?;
            fermion_from_array(&a, spins, "data")
        })
        .collect::<PyResult<Vec<_>>>()?;
    py.detach(|| write_fermion_file(&path, format, &columns, &options))
        .map_err(|e| io_error(py, &e, &path))
}
