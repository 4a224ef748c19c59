//! `qdsl.GaugeField`, `read_gauge`, `write_gauge` and `smear`.

use crate::api::{
    asqtad_links, asqtad_links_gpu, hisq_links, hisq_links_gpu, link_trace, plaquette,
    read_gauge as read_gauge_file, reunitarize, tadpole_factor, unitarity_report, write_lime_gauge,
    write_milc, write_nersc, write_openqcd, Check, ChecksumPolicy, GaugeField, Gpu, LimeFlavour,
    LimeWriteOptions, MilcWriteOptions, NerscWriteOptions, Precision, ReadOptions, UnitarityCheck,
};
use crate::arrays::{gauge_from_array, gauge_to_array, link_components, C64};
use crate::device::Device;
use crate::errors::{io_error, qdsl_error, value_error, DeviceUnavailable};
use numpy::ndarray::{ArrayViewD, IxDyn};
use numpy::{PyArray1, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;

/// A gauge configuration U_μ(x) on a 4D lattice, held in f64.
///
/// `to_numpy()` gives the links as a (T, Z, Y, X, 4, 3, 3) complex128 array (μ = x, y, z,
/// t; row, column); `GaugeField.from_numpy(a)` builds one from such an array. Read from a
/// file, `format`, `precision`, `metadata` (header or record key-value pairs) and `checks`
/// (the verifications the reader performed) describe the file.
#[pyclass(module = "qdsl", name = "GaugeField", frozen)]
pub struct PyGaugeField {
    pub field: GaugeField<f64>,
    path: Option<PathBuf>,
    format: Option<String>,
    precision: Option<String>,
    metadata: Vec<(String, String)>,
    checks: Vec<String>,
}

impl PyGaugeField {
    pub fn new(field: GaugeField<f64>) -> Self {
        Self {
            field,
            path: None,
            format: None,
            precision: None,
            metadata: Vec::new(),
            checks: Vec::new(),
        }
    }
}

pub fn precision_name(p: Precision) -> &'static str {
    match p {
        Precision::Single => "f32",
        Precision::Double => "f64",
    }
}

pub fn parse_precision(name: &str) -> PyResult<Precision> {
    match name {
        "f32" | "single" => Ok(Precision::Single),
        "f64" | "double" => Ok(Precision::Double),
        other => Err(value_error(format!(
            "precision: expected \"f32\" or \"f64\", found {other:?}"
        ))),
    }
}

#[pymethods]
impl PyGaugeField {
    /// The gauge field of a (T, Z, Y, X, 4, 3, 3) complex128 array (μ = x, y, z, t).
    #[staticmethod]
    fn from_numpy(array: PyReadonlyArrayDyn<'_, C64>) -> PyResult<Self> {
        Ok(Self::new(gauge_from_array(&array)?))
    }

    /// Unit links on a lattice of extents (Lx, Ly, Lz, Lt).
    #[staticmethod]
    fn unit(dims: [usize; 4]) -> PyResult<Self> {
        let lattice = crate::api::Lattice::new(dims).map_err(|e| value_error(e.to_string()))?;
        Ok(Self::new(GaugeField::unit(lattice)))
    }

    /// Haar-random SU(3) links on a lattice of extents (Lx, Ly, Lz, Lt), from `seed`.
    #[staticmethod]
    fn random(dims: [usize; 4], seed: u64) -> PyResult<Self> {
        let lattice = crate::api::Lattice::new(dims).map_err(|e| value_error(e.to_string()))?;
        Ok(Self::new(GaugeField::random(lattice, seed)))
    }

    /// The links as a new (T, Z, Y, X, 4, 3, 3) complex128 array. One copy, which the
    /// lexicographic order makes unavoidable: the host field stores its sites in
    /// checkerboard order (even sites first, the layout of the even-odd kernels), a
    /// permutation numpy strides cannot express, so the sites are reordered in one pass
    /// straight into the array numpy then owns. `checkerboard_view()` is the copy-free
    /// alternative.
    fn to_numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArrayDyn<C64>>> {
        gauge_to_array(py, &self.field)
    }

    /// checkerboard_view() -> ndarray
    ///
    /// The links without a copy: a read-only (V, 4, 3, 3) complex128 view of this
    /// field's own host memory, site by site in qdsl's checkerboard order (the V/2 even
    /// sites, x + y + z + t even, then the odd ones; `checkerboard_coordinates()` gives
    /// each row's (x, y, z, t)), then μ = x, y, z, t, row, column. The view keeps the
    /// GaugeField alive; the GaugeField never changes, so the view stays valid.
    fn checkerboard_view<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyArrayDyn<C64>>> {
        let field = &slf.get().field;
        let data = link_components(field);
        let shape = IxDyn(&[field.lattice().volume(), 4, 3, 3]);
        let view = ArrayViewD::from_shape(shape, data).map_err(qdsl_error)?;
        // SAFETY: the base object is this frozen GaugeField, whose links are never
        // mutated or reallocated while it lives, and the array keeps it alive.
        let array = unsafe { PyArrayDyn::borrow_from_array(&view, slf.clone().into_any()) };
        let flags = PyDict::new(slf.py());
        flags.set_item("write", false)?;
        array.call_method("setflags", (), Some(&flags))?;
        Ok(array)
    }

    /// checkerboard_coordinates() -> ndarray
    ///
    /// The (x, y, z, t) of each row of `checkerboard_view()`: an int64 array of shape
    /// (V, 4).
    fn checkerboard_coordinates<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Bound<'py, PyArrayDyn<i64>>> {
        let lattice = self.field.lattice();
        let coords: Vec<i64> = (0..lattice.volume())
            .flat_map(|cb| lattice.coords_of_cb(cb).map(|c| c as i64))
            .collect();
        PyArray1::from_vec(py, coords).reshape(vec![lattice.volume(), 4])
    }

    /// The lattice extents (Lx, Ly, Lz, Lt).
    #[getter]
    fn dims(&self) -> [usize; 4] {
        self.field.lattice().dims()
    }

    /// The average plaquette P = ⟨Re tr U_□⟩/3 over all sites and the six planes (1 on
    /// unit links).
    fn plaquette(&self) -> f64 {
        plaquette(&self.field).average
    }

    /// MILC's (ss, st): ⟨Re tr U_□⟩ over the space-space and the space-time planes (3 on
    /// unit links); P = (ss + st)/6.
    fn plaquette_milc(&self) -> (f64, f64) {
        let p = plaquette(&self.field);
        (p.spatial, p.temporal)
    }

    /// The link trace ⟨Re tr U_μ(x)⟩/3 (1 on unit links).
    fn link_trace(&self) -> f64 {
        link_trace(&self.field)
    }

    /// The largest ‖U†U − 1‖_F over the links.
    fn unitarity_deviation(&self) -> f64 {
        unitarity_report(&self.field).max_unitarity
    }

    /// The file read, or None.
    #[getter]
    fn path(&self) -> Option<String> {
        self.path.as_ref().map(|p| p.to_string_lossy().into_owned())
    }

    /// The file's format ("MILC v5", "NERSC 4D_SU3_GAUGE_3x3", …), or None.
    #[getter]
    fn format(&self) -> Option<String> {
        self.format.clone()
    }

    /// The stored precision, "f32" or "f64", or None.
    #[getter]
    fn precision(&self) -> Option<String> {
        self.precision.clone()
    }

    /// The header or record key-value pairs of the file, in file order.
    #[getter]
    fn metadata(&self) -> Vec<(String, String)> {
        self.metadata.clone()
    }

    /// The verifications the reader performed (checksums, recorded observables, links).
    #[getter]
    fn checks(&self) -> Vec<String> {
        self.checks.clone()
    }

    fn __repr__(&self) -> String {
        let [x, y, z, t] = self.field.lattice().dims();
        match (&self.path, &self.format) {
            (Some(p), Some(f)) => {
                format!(
                    "<qdsl.GaugeField {x}x{y}x{z}x{t} from {} ({f})>",
                    p.display()
                )
            }
            _ => format!("<qdsl.GaugeField {x}x{y}x{z}x{t}>"),
        }
    }
}

/// read_gauge(path, *, unitarity_tol=None, reunitarize=False, ignore_checksum=False, smeared=False)
///
/// Reads a gauge configuration in any supported format (MILC v5 and older, NERSC,
/// ILDG/SciDAC LIME, openQCD), recognised from the content. Every checksum and recorded
/// observable is verified; links must be finite and unitary to within `unitarity_tol`
/// (default: the limit of the stored precision and the volume). `reunitarize=True`
/// projects the links back onto SU(3) after reading (the limit is then not enforced
/// unless `unitarity_tol` is given); `ignore_checksum=True` reads a file whose checksum
/// disagrees (recorded in `checks`); `smeared=True` reads non-unitary (fat/long) links.
///
/// Raises FileFormatError (file, record, expected, found) for a file that cannot be read.
#[pyfunction]
#[pyo3(signature = (path, *, unitarity_tol=None, reunitarize=false, ignore_checksum=false, smeared=false))]
pub fn read_gauge(
    py: Python<'_>,
    path: PathBuf,
    unitarity_tol: Option<f64>,
    reunitarize: bool,
    ignore_checksum: bool,
    smeared: bool,
) -> PyResult<PyGaugeField> {
    let unitarity = match (unitarity_tol, reunitarize || smeared) {
        (Some(t), _) => UnitarityCheck::Within(t),
        (None, true) => UnitarityCheck::Off,
        (None, false) => UnitarityCheck::ForPrecision,
    };
    let options = ReadOptions {
        unitarity,
        checksum: if ignore_checksum {
            ChecksumPolicy::Warn
        } else {
            ChecksumPolicy::Verify
        },
    };
    let file = py
        .detach(|| read_gauge_file(&path, &options))
        .map_err(|e| io_error(py, &e, &path))?;
    let mut field = file.field;
    if reunitarize {
        self::reunitarize(&mut field)
            .map_err(|e| qdsl_error(format!("{}: {e}", path.display())))?;
    }
    Ok(PyGaugeField {
        field,
        path: Some(file.path),
        format: Some(file.format.to_string()),
        precision: Some(precision_name(file.precision).to_string()),
        metadata: file.metadata,
        checks: file.checks.iter().map(Check::to_string).collect(),
    })
}

/// write_gauge(path, gauge, format="scidac", *, precision="f64")
///
/// Writes `gauge` as a `format` file: "scidac" or "ildg" (LIME, big-endian), "milc" (v5,
/// always f32), "nersc" (3×3 storage) or "openqcd" (always f64). `precision` is "f32" or
/// "f64" for the formats that have a choice. Checksums and header observables are
/// computed from the links.
#[pyfunction]
#[pyo3(signature = (path, gauge, format="scidac", *, precision="f64"))]
pub fn write_gauge(
    py: Python<'_>,
    path: PathBuf,
    gauge: &PyGaugeField,
    format: &str,
    precision: &str,
) -> PyResult<()> {
    let precision = parse_precision(precision)?;
    let field = &gauge.field;
    let lime = |flavour| LimeWriteOptions {
        flavour,
        precision,
        ..LimeWriteOptions::default()
    };
    let result = match format {
        "scidac" => py.detach(|| write_lime_gauge(&path, field, &lime(LimeFlavour::Scidac))),
        "ildg" => py.detach(|| write_lime_gauge(&path, field, &lime(LimeFlavour::Ildg))),
        "milc" => py.detach(|| write_milc(&path, field, &MilcWriteOptions::default())),
        "nersc" => py.detach(|| {
            write_nersc(
                &path,
                field,
                &NerscWriteOptions {
                    precision,
                    ..NerscWriteOptions::default()
                },
            )
        }),
        "openqcd" => py.detach(|| write_openqcd(&path, field)),
        other => {
            return Err(value_error(format!(
                "format: expected \"scidac\", \"ildg\", \"milc\", \"nersc\" or \"openqcd\", \
                 found {other:?}"
            )))
        }
    };
    result.map_err(|e| io_error(py, &e, &path))
}

/// smear(gauge, kind, *, u0=None, epsilon_naik=0.0, device="cpu") -> (fat, long)
///
/// The improved-staggered links of the thin links `gauge`, MILC's recipes: `kind`
/// "asqtad" (tadpole factor `u0`, default P^{1/4}) or "hisq" (Naik correction
/// `epsilon_naik`; u0 = 1). The staggered phases and the antiperiodic time boundary
/// are folded into the returned links, as MILC stores them. `device="gpu"` smears with
/// the generated CUDA kernels (DeviceUnavailable without a GPU). Returns a dict with
/// the fat and long links as GaugeFields and the u0 used.
#[pyfunction]
#[pyo3(signature = (gauge, kind, *, u0=None, epsilon_naik=0.0, device="cpu"))]
pub fn smear<'py>(
    py: Python<'py>,
    gauge: &PyGaugeField,
    kind: &str,
    u0: Option<f64>,
    epsilon_naik: f64,
    device: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let device = Device::parse(device)?;
    let thin = &gauge.field;
    let (fat, long, u0) = match kind {
        "asqtad" => {
            if epsilon_naik != 0.0 {
                return Err(value_error("epsilon_naik applies to kind=\"hisq\" only"));
            }
            let u0 = tadpole_factor(thin, u0);
            let (fat, long) = match device {
                Device::Cpu => py
                    .detach(|| asqtad_links(thin, u0))
                    .map_err(|e| qdsl_error(format!("asqtad smearing: {e}")))?,
                Device::Gpu => {
                    let gpu = open_gpu()?;
                    py.detach(|| asqtad_links_gpu(&gpu, thin, u0))
                        .map_err(|e| qdsl_error(format!("asqtad smearing on the GPU: {e}")))?
                }
            };
            (fat, long, u0)
        }
        "hisq" => {
            if u0.is_some_and(|u| u != 1.0) {
                return Err(value_error("HISQ takes no tadpole factor (u0 = 1)"));
            }
            let (fat, long) = match device {
                Device::Cpu => py
                    .detach(|| hisq_links(thin, epsilon_naik))
                    .map_err(|e| qdsl_error(format!("HISQ smearing: {e}")))?,
                Device::Gpu => {
                    let gpu = open_gpu()?;
                    py.detach(|| hisq_links_gpu(&gpu, None, thin, epsilon_naik))
                        .map_err(|e| qdsl_error(format!("HISQ smearing on the GPU: {e}")))?
                }
            };
            (fat, long, 1.0)
        }
        other => {
            return Err(value_error(format!(
                "kind: expected \"asqtad\" or \"hisq\", found {other:?} (APE and stout \
                 smearing are not in qdsl)"
            )))
        }
    };
    let out = PyDict::new(py);
    out.set_item("fat", PyGaugeField::new(fat))?;
    out.set_item("long", PyGaugeField::new(long))?;
    out.set_item("u0", u0)?;
    Ok(out)
}

fn open_gpu() -> PyResult<Gpu> {
    Gpu::open(0).map_err(|e| DeviceUnavailable::new_err(format!("no usable GPU: {e}")))
}
