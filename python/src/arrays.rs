//! numpy arrays of lattice fields and the host fields they come from.
//!
//! Arrays are in the lexicographic order of external files and of physics codes: a gauge
//! field has shape (T, Z, Y, X, 4, 3, 3) (direction μ = x, y, z, t, then row and column
//! of U_μ(x)); a fermion field (T, Z, Y, X, 4, 3) (spin, colour) or, for a staggered
//! colour vector, (T, Z, Y, X, 3); all complex128. Host fields store sites in
//! checkerboard order (even sites first), so going between the two reorders the sites:
//! one pass over the data, written straight into the array numpy then owns (no further
//! copy). Inputs are read in place when they are C-contiguous complex128 arrays.

use crate::api::{ColourSpinorField, Complex, GaugeField, Lattice, SiteSubset, SpinorLayout};
use crate::errors::value_error;
use numpy::{PyArray1, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::prelude::*;

pub type C64 = Complex<f64>;

/// The array (in lexicographic order) of the checkerboard-ordered `per_site` values
/// per site of `lattice`, with `shape` after the four lattice axes.
fn lex_array<'py>(
    py: Python<'py>,
    lattice: &Lattice,
    per_site: &[usize],
    cb_data: &[C64],
) -> PyResult<Bound<'py, PyArrayDyn<C64>>> {
    let n: usize = per_site.iter().product();
    let volume = lattice.volume();
    let mut lex = Vec::with_capacity(volume * n);
    for l in 0..volume {
        let cb = lattice.lex_to_cb(l);
        lex.extend_from_slice(&cb_data[cb * n..(cb + 1) * n]);
    }
    let [lx, ly, lz, lt] = lattice.dims();
    let mut shape = vec![lt, lz, ly, lx];
    shape.extend_from_slice(per_site);
    PyArray1::from_vec(py, lex).reshape(shape)
}

/// The lattice extents [Lx, Ly, Lz, Lt] of an array shaped (T, Z, Y, X, …).
fn lattice_of(shape: &[usize], what: &str) -> PyResult<Lattice> {
    if shape.len() < 4 {
        return Err(value_error(format!(
            "{what}: expected an array of shape (T, Z, Y, X, ...), found shape {shape:?}"
        )));
    }
    Lattice::new([shape[3], shape[2], shape[1], shape[0]]).map_err(|e| {
        value_error(format!(
            "{what}: the lattice (T, Z, Y, X) = {:?} is not valid: {e}",
            &shape[..4]
        ))
    })
}

/// The values of `array` (shape (T, Z, Y, X) + `per_site`) in checkerboard order.
fn cb_data(
    array: &PyReadonlyArrayDyn<'_, C64>,
    per_site: &[usize],
    what: &str,
) -> PyResult<(Lattice, Vec<C64>)> {
    let shape = array.shape();
    let lattice = lattice_of(shape, what)?;
    if &shape[4..] != per_site {
        return Err(value_error(format!(
            "{what}: expected an array of shape (T, Z, Y, X, {}), found shape {shape:?}",
            per_site
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let n: usize = per_site.iter().product();
    let mut out = vec![C64::new(0.0, 0.0); lattice.volume() * n];
    let copy = |out: &mut [C64], lex: &[C64]| {
        for (l, values) in lex.chunks_exact(n).enumerate() {
            let cb = lattice.lex_to_cb(l);
            out[cb * n..(cb + 1) * n].copy_from_slice(values);
        }
    };
    match array.as_slice() {
        Ok(lex) => copy(&mut out, lex),
        Err(_) => copy(
            &mut out,
            &array.as_array().iter().copied().collect::<Vec<_>>(),
        ),
    }
    Ok((lattice, out))
}

/// The links of a gauge field as they lie in its memory, without a copy: per
/// checkerboard site, μ = x, y, z, t, then the 3 × 3 matrix row by row.
pub fn link_components(field: &GaugeField<f64>) -> &[C64] {
    let links = field.links();
    // SAFETY: ColourMatrix<f64> is repr(transparent) over [[Complex<f64>; 3]; 3] and
    // Complex<f64> is repr(C): the links are 9 · len contiguous Complex<f64>, borrowed
    // for as long as `field`.
    unsafe { std::slice::from_raw_parts(links.as_ptr().cast::<C64>(), links.len() * 9) }
}

/// The (T, Z, Y, X, 4, 3, 3) array of a gauge field: the links reordered in one pass.
pub fn gauge_to_array<'py>(
    py: Python<'py>,
    field: &GaugeField<f64>,
) -> PyResult<Bound<'py, PyArrayDyn<C64>>> {
    lex_array(py, field.lattice(), &[4, 3, 3], link_components(field))
}

/// The gauge field of a (T, Z, Y, X, 4, 3, 3) array.
pub fn gauge_from_array(array: &PyReadonlyArrayDyn<'_, C64>) -> PyResult<GaugeField<f64>> {
    let (lattice, data) = cb_data(array, &[4, 3, 3], "gauge field")?;
    let mut field = GaugeField::unit(lattice);
    for (link, values) in field.links_mut().iter_mut().zip(data.chunks_exact(9)) {
        for (i, row) in link.0.iter_mut().enumerate() {
            row.copy_from_slice(&values[3 * i..3 * i + 3]);
        }
    }
    Ok(field)
}

/// The components per site after the lattice axes: (3,) for one spin, (4, 3) for four.
pub fn site_shape(spins: usize) -> Vec<usize> {
    if spins == 1 {
        vec![3]
    } else {
        vec![spins, 3]
    }
}

/// The (T, Z, Y, X, [4,] 3) array of a full-lattice fermion field.
pub fn fermion_to_array<'py>(
    py: Python<'py>,
    field: &ColourSpinorField<f64>,
) -> PyResult<Bound<'py, PyArrayDyn<C64>>> {
    let layout = field.layout();
    lex_array(
        py,
        layout.lattice(),
        &site_shape(layout.nspin()),
        field.data(),
    )
}

/// The full-lattice fermion field of an array shaped (T, Z, Y, X, 4, 3) (`spins` = 4) or
/// (T, Z, Y, X, 3) (`spins` = 1).
pub fn fermion_from_array(
    array: &PyReadonlyArrayDyn<'_, C64>,
    spins: usize,
    what: &str,
) -> PyResult<ColourSpinorField<f64>> {
    let (lattice, data) = cb_data(array, &site_shape(spins), what)?;
    let layout = if spins == 1 {
        SpinorLayout::staggered(lattice, SiteSubset::Full)
    } else {
        SpinorLayout::wilson(lattice, SiteSubset::Full)
    };
    ColourSpinorField::from_data(layout, data).map_err(|e| value_error(format!("{what}: {e}")))
}

/// The number of spins of a fermion array: 4 for (T, Z, Y, X, 4, 3), 1 for
/// (T, Z, Y, X, 3).
pub fn spins_of(array: &PyReadonlyArrayDyn<'_, C64>, what: &str) -> PyResult<usize> {
    match array.shape() {
        [_, _, _, _, 4, 3] => Ok(4),
        [_, _, _, _, 3] => Ok(1),
        shape => Err(value_error(format!(
            "{what}: expected shape (T, Z, Y, X, 4, 3) (Dirac) or (T, Z, Y, X, 3) (colour \
             vector), found {shape:?}"
        ))),
    }
}
