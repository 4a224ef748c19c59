//! `qdsl.Operator`: the fermion operators of qdsl's runtime on numpy arrays, built by
//! `wilson`, `clover`, `twisted_mass`, `staggered`, `asqtad` and `hisq`.
//!
//! Each holds the runtime's even-odd operator on the even sites (the generic Schur
//! complement of `qdsl_runtime::operator`) in f64 and f32 on the host and, with
//! `device="gpu"`, in f64 and f32 on the GPU. The full operator M comes from the same
//! blocks (`Schur::apply_full`; clover and twisted mass from the complements on both
//! parities), on the operator's device.

use crate::api::{
    asqtad_links, clover_field, fold_staggered_phases, hisq_links, join_parities, prepared_links,
    split_parities, tadpole_factor, wilson_mass, Action, ColourSpinorField, DeviceContext,
    DeviceOperator, Double, EvenOddClover, EvenOddStaggered, EvenOddWilson, GaugeField,
    LinearOperator, Parity, SolverError, SolverField, StaggeredLinks, TimeBoundary,
};
use crate::api::{EvenOddBlocks, Schur, Single, Xpay};
use crate::arrays::{fermion_from_array, fermion_to_array, spins_of, C64};
use crate::device::{gpu_context, Device};
use crate::errors::{qdsl_error, value_error};
use crate::gauge::PyGaugeField;
use numpy::{PyArrayDyn, PyReadonlyArrayDyn};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Arc;

pub type F64 = ColourSpinorField<f64>;
type F32 = ColourSpinorField<f32>;

/// The parity the even-odd operators act on.
pub const PARITY: Parity = Parity::Even;

/// What the bindings need of a host Schur complement M̂ in f64.
pub trait HostSchur: LinearOperator<F64> + Send + Sync {
    /// (out_e, out_o) = M (ψ_e, ψ_o) (dagger: M†).
    fn full(
        &self,
        out: (&mut F64, &mut F64),
        psi: (&F64, &F64),
        dagger: bool,
    ) -> Result<(), SolverError>;
    /// b̂ = η_e − D_eo D_oo⁻¹ η_o (the normal form: times the scalar diagonal).
    fn source(&self, eta_e: &F64, eta_o: &F64) -> Result<F64, SolverError>;
    /// ψ_o = D_oo⁻¹ (η_o − D_oe ψ_e).
    fn odd(&self, psi_e: &F64, eta_o: &F64) -> Result<F64, SolverError>;
}

impl<B> HostSchur for Schur<B>
where
    B: EvenOddBlocks<Field = F64, Error = SolverError> + Send + Sync,
    for<'c> B: EvenOddBlocks<Context<'c> = ()>,
{
    fn full(
        &self,
        out: (&mut F64, &mut F64),
        psi: (&F64, &F64),
        dagger: bool,
    ) -> Result<(), SolverError> {
        self.apply_full(out, psi, dagger)
    }
    fn source(&self, eta_e: &F64, eta_o: &F64) -> Result<F64, SolverError> {
        self.prepare_source(eta_e, eta_o)
    }
    fn odd(&self, psi_e: &F64, eta_o: &F64) -> Result<F64, SolverError> {
        self.reconstruct(psi_e, eta_o)
    }
}

/// Clover and twisted mass: the blocks of a Schur complement on parity p hold D_pp and
/// D_qq⁻¹ only, so M on both parities takes the blocks of the complements on both
/// parities, out_r = D_rr ψ_r + h K_rs ψ_s with those of parity r. M̂ and the source
/// preparation and reconstruction are the even complement's.
pub struct CloverBothParities {
    pub even: EvenOddClover<f64>,
    pub odd: EvenOddClover<f64>,
}

impl LinearOperator<F64> for CloverBothParities {
    fn apply(&self, out: &mut F64, psi: &F64) -> Result<(), SolverError> {
        self.even.apply(out, psi)
    }
    fn apply_dagger(&self, out: &mut F64, psi: &F64) -> Result<(), SolverError> {
        self.even.apply_dagger(out, psi)
    }
    fn flops_per_apply(&self) -> u64 {
        LinearOperator::flops_per_apply(&self.even)
    }
}

impl HostSchur for CloverBothParities {
    fn full(
        &self,
        out: (&mut F64, &mut F64),
        psi: (&F64, &F64),
        dagger: bool,
    ) -> Result<(), SolverError> {
        let parities = [
            (self.even.blocks(), Parity::Even, out.0, psi.0, psi.1),
            (self.odd.blocks(), Parity::Odd, out.1, psi.1, psi.0),
        ];
        for (blocks, r, out, psi_r, psi_s) in parities {
            let mut d_psi = psi_r.zeros_like();
            blocks.apply_diagonal((), r, &mut d_psi, psi_r, dagger)?;
            let xpay = Xpay {
                a: 1.0,
                x: &d_psi,
                b: blocks.hop_coefficient(dagger),
            };
            blocks.hop((), r, out, psi_s, dagger, Some(xpay))?;
        }
        Ok(())
    }
    fn source(&self, eta_e: &F64, eta_o: &F64) -> Result<F64, SolverError> {
        self.even.prepare_source(eta_e, eta_o)
    }
    fn odd(&self, psi_e: &F64, eta_o: &F64) -> Result<F64, SolverError> {
        self.even.reconstruct(psi_e, eta_o)
    }
}

/// The GPU operators M̂ in f64 and f32, with their context; clover and twisted mass also
/// hold the f64 operator on the odd sites, whose blocks give the odd row of the full M.
pub struct GpuOperator {
    pub ctx: Arc<DeviceContext>,
    pub double: DeviceOperator<Double>,
    pub single: DeviceOperator<Single>,
    pub odd: Option<DeviceOperator<Double>>,
}

/// A fermion operator M and its even-odd preconditioned form M̂ on the even sites.
///
/// * Wilson: M = 1 − κ H, M̂ = 1 − κ² H_eo H_oe.
/// * Clover / twisted mass (mass normalisation): M = A + iμγ5 − ½ H with
///   A = (m + 4) + (c_sw/2) σ·F, m = 1/(2κ) − 4; M̂ = A_ee + iμγ5 − ¼ H_eo (A + iμγ5)_oo⁻¹ H_oe.
/// * Staggered, asqtad, HISQ: M = 2m + D (phases and time boundary in the links),
///   M̂ = 4m² − D_eo D_oe (MILC's Hermitian positive-definite even-odd operator).
///
/// H ψ(x) = Σ_μ [(1 − γ_μ) U_μ(x) ψ(x+μ̂) + (1 + γ_μ) U_μ†(x−μ̂) ψ(x−μ̂)] (DeGrand–Rossi
/// γ, γ5 = diag(1, 1, −1, −1)). Fields are arrays of shape (T, Z, Y, X, 4, 3) (Wilson
/// family) or (T, Z, Y, X, 3) (staggered family); even-site fields have the same shape
/// with zeros on the odd sites.
#[pyclass(module = "qdsl", name = "Operator", frozen)]
pub struct PyOperator {
    pub action: Action,
    pub parameters: Vec<(&'static str, f64)>,
    pub boundary: TimeBoundary,
    pub device: Device,
    pub spins: usize,
    pub dims: [usize; 4],
    pub host: Box<dyn HostSchur>,
    pub host_single: Box<dyn LinearOperator<F32> + Send + Sync>,
    pub gpu: Option<GpuOperator>,
}

fn parse_boundary(name: &str) -> PyResult<TimeBoundary> {
    match name {
        "antiperiodic" => Ok(TimeBoundary::Antiperiodic),
        "periodic" => Ok(TimeBoundary::Periodic),
        other => Err(value_error(format!(
            "boundary: expected \"antiperiodic\" or \"periodic\", found {other:?}"
        ))),
    }
}

fn positive(name: &str, x: f64) -> PyResult<f64> {
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(value_error(format!(
            "{name} must be a positive finite number, found {x}"
        )))
    }
}

fn non_negative(name: &str, x: f64) -> PyResult<f64> {
    if x.is_finite() && x >= 0.0 {
        Ok(x)
    } else {
        Err(value_error(format!(
            "{name} must be a finite number ≥ 0, found {x}"
        )))
    }
}

fn device_error(e: impl std::fmt::Display) -> PyErr {
    qdsl_error(format!("building the GPU operator: {e}"))
}

fn wilson_family(
    gauge: &GaugeField<f64>,
    action: Action,
    kappa: f64,
    csw: f64,
    mu: f64,
    boundary: TimeBoundary,
    device: Device,
) -> PyResult<PyOperator> {
    let kappa = positive("kappa", kappa)?;
    let csw = non_negative("csw", csw)?;
    if !mu.is_finite() {
        return Err(value_error(format!("mu must be finite, found {mu}")));
    }
    let dims = gauge.lattice().dims();
    let (host, host_single, parameters): (
        Box<dyn HostSchur>,
        Box<dyn LinearOperator<F32> + Send + Sync>,
        _,
    ) = if action == Action::Wilson {
        (
            Box::new(EvenOddWilson::new(gauge.clone(), kappa, PARITY, boundary)),
            Box::new(EvenOddWilson::new(
                gauge.cast::<f32>(),
                kappa,
                PARITY,
                boundary,
            )),
            vec![("kappa", kappa)],
        )
    } else {
        let a = clover_field(gauge, wilson_mass(kappa), csw);
        let complement = |parity| {
            EvenOddClover::from_clover(gauge.clone(), &a, mu, parity, boundary).map_err(qdsl_error)
        };
        let (even, odd) = (complement(PARITY)?, complement(PARITY.opposite())?);
        let single = even.cast::<f32>();
        (
            Box::new(CloverBothParities { even, odd }),
            Box::new(single),
            vec![("kappa", kappa), ("csw", csw), ("mu", mu)],
        )
    };
    let gpu = match device {
        Device::Cpu => None,
        Device::Gpu => {
            let ctx = gpu_context()?;
            let gpu = if action == Action::Wilson {
                GpuOperator {
                    double: DeviceOperator::wilson(&ctx, gauge, kappa, PARITY, boundary)
                        .map_err(device_error)?,
                    single: DeviceOperator::wilson(&ctx, gauge, kappa, PARITY, boundary)
                        .map_err(device_error)?,
                    odd: None,
                    ctx,
                }
            } else {
                let a = clover_field(gauge, wilson_mass(kappa), csw);
                GpuOperator {
                    double: DeviceOperator::clover(&ctx, gauge, &a, mu, PARITY, boundary)
                        .map_err(device_error)?,
                    single: DeviceOperator::clover(&ctx, gauge, &a, mu, PARITY, boundary)
                        .map_err(device_error)?,
                    odd: Some(
                        DeviceOperator::clover(&ctx, gauge, &a, mu, PARITY.opposite(), boundary)
                            .map_err(device_error)?,
                    ),
                    ctx,
                }
            };
            Some(gpu)
        }
    };
    Ok(PyOperator {
        action,
        parameters,
        boundary,
        device,
        spins: 4,
        dims,
        host,
        host_single,
        gpu,
    })
}

fn staggered_family(
    gauge: &GaugeField<f64>,
    action: Action,
    mass: f64,
    u0: f64,
    epsilon_naik: f64,
    boundary: TimeBoundary,
    device: Device,
) -> PyResult<PyOperator> {
    let mass = non_negative("mass", mass)?;
    let u0 = positive("u0", u0)?;
    if !epsilon_naik.is_finite() {
        return Err(value_error(format!(
            "epsilon_naik must be finite, found {epsilon_naik}"
        )));
    }
    let thin = prepared_links(gauge, action, boundary, u0);
    let smearing =
        |e: &dyn std::fmt::Display| qdsl_error(format!("{} smearing: {e}", action.name()));
    let links = match action {
        Action::Asqtad => {
            let (fat, long) = asqtad_links(&thin, u0).map_err(|e| smearing(&e))?;
            StaggeredLinks::Improved { fat, long }
        }
        Action::Hisq => {
            let (fat, long) = hisq_links(&thin, epsilon_naik).map_err(|e| smearing(&e))?;
            StaggeredLinks::Improved { fat, long }
        }
        _ => StaggeredLinks::Naive(fold_staggered_phases(&thin)),
    };
    let mut parameters = vec![("mass", mass)];
    match action {
        Action::Hisq => parameters.push(("epsilon_naik", epsilon_naik)),
        _ => parameters.push(("u0", u0)),
    }
    let gpu = match device {
        Device::Cpu => None,
        Device::Gpu => {
            let ctx = gpu_context()?;
            Some(GpuOperator {
                double: DeviceOperator::staggered(&ctx, &links, mass, PARITY)
                    .map_err(device_error)?,
                single: DeviceOperator::staggered(&ctx, &links, mass, PARITY)
                    .map_err(device_error)?,
                odd: None,
                ctx,
            })
        }
    };
    Ok(PyOperator {
        action,
        parameters,
        boundary,
        device,
        spins: 1,
        dims: gauge.lattice().dims(),
        host_single: Box::new(EvenOddStaggered::new(links.cast::<f32>(), mass, PARITY)),
        host: Box::new(EvenOddStaggered::new(links, mass, PARITY)),
        gpu,
    })
}

/// The operator `make` builds from the gauge field, the parsed `boundary` and `device`,
/// outside the GIL: what every constructor below shares.
fn build(
    py: Python<'_>,
    gauge: &PyGaugeField,
    boundary: &str,
    device: &str,
    make: impl FnOnce(&GaugeField<f64>, TimeBoundary, Device) -> PyResult<PyOperator> + Send,
) -> PyResult<PyOperator> {
    let (boundary, device) = (parse_boundary(boundary)?, Device::parse(device)?);
    py.detach(|| make(&gauge.field, boundary, device))
}

/// wilson(gauge, kappa, *, boundary="antiperiodic", device="cpu") -> Operator
///
/// Wilson fermions: M = 1 − κ H, M̂ = 1 − κ² H_eo H_oe on the even sites.
#[pyfunction]
#[pyo3(signature = (gauge, kappa, *, boundary="antiperiodic", device="cpu"))]
pub fn wilson(
    py: Python<'_>,
    gauge: &PyGaugeField,
    kappa: f64,
    boundary: &str,
    device: &str,
) -> PyResult<PyOperator> {
    build(py, gauge, boundary, device, |u, b, d| {
        wilson_family(u, Action::Wilson, kappa, 0.0, 0.0, b, d)
    })
}

/// clover(gauge, kappa, csw, *, mu=0.0, boundary="antiperiodic", device="cpu") -> Operator
///
/// Wilson-clover (twisted clover for μ ≠ 0) fermions in the mass normalisation:
/// M = A + iμγ5 − ½ H, A = (m + 4) + (c_sw/2) σ·F, m = 1/(2κ) − 4 (at c_sw = μ = 0 it is
/// (m + 4) times the Wilson M); M̂ = D_ee − ¼ H_eo D_oo⁻¹ H_oe, D = A + iμγ5.
#[pyfunction]
#[pyo3(signature = (gauge, kappa, csw, *, mu=0.0, boundary="antiperiodic", device="cpu"))]
pub fn clover(
    py: Python<'_>,
    gauge: &PyGaugeField,
    kappa: f64,
    csw: f64,
    mu: f64,
    boundary: &str,
    device: &str,
) -> PyResult<PyOperator> {
    let action = if mu == 0.0 {
        Action::Clover
    } else {
        Action::TwistedMass
    };
    build(py, gauge, boundary, device, |u, b, d| {
        wilson_family(u, action, kappa, csw, mu, b, d)
    })
}

/// twisted_mass(gauge, kappa, mu, *, csw=0.0, boundary="antiperiodic", device="cpu") -> Operator
///
/// Twisted-mass fermions: `clover(gauge, kappa, csw, mu=mu)`.
#[pyfunction]
#[pyo3(signature = (gauge, kappa, mu, *, csw=0.0, boundary="antiperiodic", device="cpu"))]
pub fn twisted_mass(
    py: Python<'_>,
    gauge: &PyGaugeField,
    kappa: f64,
    mu: f64,
    csw: f64,
    boundary: &str,
    device: &str,
) -> PyResult<PyOperator> {
    build(py, gauge, boundary, device, |u, b, d| {
        wilson_family(u, Action::TwistedMass, kappa, csw, mu, b, d)
    })
}

/// staggered(gauge, mass, *, u0=1.0, boundary="antiperiodic", device="cpu") -> Operator
///
/// Naive staggered fermions: M = 2m + D with the links U/u0, MILC's phases and the time
/// boundary folded in; M̂ = 4m² − D_eo D_oe.
#[pyfunction]
#[pyo3(signature = (gauge, mass, *, u0=1.0, boundary="antiperiodic", device="cpu"))]
pub fn staggered(
    py: Python<'_>,
    gauge: &PyGaugeField,
    mass: f64,
    u0: f64,
    boundary: &str,
    device: &str,
) -> PyResult<PyOperator> {
    build(py, gauge, boundary, device, |u, b, d| {
        staggered_family(u, Action::Staggered, mass, u0, 0.0, b, d)
    })
}

/// asqtad(gauge, mass, *, u0=None, boundary="antiperiodic", device="cpu") -> Operator
///
/// Asqtad fermions: M = 2m + D with MILC's asqtad fat and long links of tadpole factor
/// u0 (default P^{1/4}, P the plaquette, MILC's convention); M̂ = 4m² − D_eo D_oe.
#[pyfunction]
#[pyo3(signature = (gauge, mass, *, u0=None, boundary="antiperiodic", device="cpu"))]
pub fn asqtad(
    py: Python<'_>,
    gauge: &PyGaugeField,
    mass: f64,
    u0: Option<f64>,
    boundary: &str,
    device: &str,
) -> PyResult<PyOperator> {
    build(py, gauge, boundary, device, |u, b, d| {
        staggered_family(u, Action::Asqtad, mass, tadpole_factor(u, u0), 0.0, b, d)
    })
}

/// hisq(gauge, mass, *, epsilon_naik=0.0, boundary="antiperiodic", device="cpu") -> Operator
///
/// HISQ fermions: M = 2m + D with MILC's HISQ links (fat7, U(3) projection, asqtad
/// paths; u0 = 1) and the Naik correction ε; M̂ = 4m² − D_eo D_oe.
#[pyfunction]
#[pyo3(signature = (gauge, mass, *, epsilon_naik=0.0, boundary="antiperiodic", device="cpu"))]
pub fn hisq(
    py: Python<'_>,
    gauge: &PyGaugeField,
    mass: f64,
    epsilon_naik: f64,
    boundary: &str,
    device: &str,
) -> PyResult<PyOperator> {
    build(py, gauge, boundary, device, |u, b, d| {
        staggered_family(u, Action::Hisq, mass, 1.0, epsilon_naik, b, d)
    })
}

impl PyOperator {
    /// The full-lattice field of an argument array, checked against the operator.
    pub fn field(&self, array: &PyReadonlyArrayDyn<'_, C64>, what: &str) -> PyResult<F64> {
        let spins = spins_of(array, what)?;
        if spins != self.spins {
            return Err(value_error(format!(
                "{what}: the {} operator acts on fields of {} spin(s), found an array of {spins}",
                self.action.name(),
                self.spins
            )));
        }
        let field = fermion_from_array(array, spins, what)?;
        if field.layout().lattice().dims() != self.dims {
            return Err(value_error(format!(
                "{what}: the operator's lattice is {:?} (x, y, z, t), the array's {:?}",
                self.dims,
                field.layout().lattice().dims()
            )));
        }
        Ok(field)
    }

    /// The even sites of an argument array; an error if an odd site is not zero.
    pub fn even_field(&self, array: &PyReadonlyArrayDyn<'_, C64>, what: &str) -> PyResult<F64> {
        let (even, odd) = split_parities(&self.field(array, what)?).map_err(qdsl_error)?;
        if odd.data().iter().any(|z| z.norm_sqr() != 0.0) {
            return Err(value_error(format!(
                "{what}: an even-site field must be zero on the odd sites (use \
                 prepare_source for a source on every site)"
            )));
        }
        Ok(even)
    }

    /// The array of an even-site field (zeros on the odd sites).
    pub fn even_array<'py>(
        &self,
        py: Python<'py>,
        even: &F64,
    ) -> PyResult<Bound<'py, PyArrayDyn<C64>>> {
        let odd = F64::zeros(
            even.layout()
                .with_subset(crate::api::SiteSubset::Single(Parity::Odd)),
        );
        fermion_to_array(py, &join_parities(even, &odd).map_err(qdsl_error)?)
    }
}

#[pymethods]
impl PyOperator {
    /// out = M x (dagger: M† x) on the full lattice, on the operator's device.
    #[pyo3(signature = (x, *, dagger=false))]
    fn apply<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArrayDyn<'py, C64>,
        dagger: bool,
    ) -> PyResult<Bound<'py, PyArrayDyn<C64>>> {
        let psi = self.field(&x, "x")?;
        let out = py.detach(|| -> Result<F64, SolverError> {
            let (e, o) = split_parities(&psi).map_err(SolverError::field)?;
            let (oe, oo) = match &self.gpu {
                None => {
                    let (mut oe, mut oo) = (e.zeros_like(), o.zeros_like());
                    self.host.full((&mut oe, &mut oo), (&e, &o), dagger)?;
                    (oe, oo)
                }
                Some(gpu) => crate::solve::gpu_full(gpu, (&e, &o), dagger)?,
            };
            join_parities(&oe, &oo).map_err(SolverError::field)
        });
        fermion_to_array(py, &out.map_err(qdsl_error)?)
    }

    /// out = M̂ x (dagger: M̂† x) on the even sites; x and out are full-lattice arrays that
    /// are zero on the odd sites. Runs on the operator's device.
    #[pyo3(signature = (x, *, dagger=false))]
    fn apply_even_odd<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArrayDyn<'py, C64>,
        dagger: bool,
    ) -> PyResult<Bound<'py, PyArrayDyn<C64>>> {
        let psi = self.even_field(&x, "x")?;
        let out = py.detach(|| -> Result<F64, SolverError> {
            match &self.gpu {
                None => {
                    let mut out = psi.zeros_like();
                    if dagger {
                        self.host.apply_dagger(&mut out, &psi)?;
                    } else {
                        self.host.apply(&mut out, &psi)?;
                    }
                    Ok(out)
                }
                Some(gpu) => crate::solve::gpu_apply(gpu, &psi, dagger),
            }
        });
        self.even_array(py, &out.map_err(qdsl_error)?)
    }

    /// The even-site right-hand side b̂ of M̂ x = b̂ for M ψ = η: b̂ = η_e − D_eo D_oo⁻¹ η_o
    /// (staggered, MILC's normal form: b̂ = 2m η_e − D_eo η_o); x is then ψ_e.
    fn prepare_source<'py>(
        &self,
        py: Python<'py>,
        eta: PyReadonlyArrayDyn<'py, C64>,
    ) -> PyResult<Bound<'py, PyArrayDyn<C64>>> {
        let eta = self.field(&eta, "eta")?;
        let b = py.detach(|| -> Result<F64, SolverError> {
            let (e, o) = split_parities(&eta).map_err(SolverError::field)?;
            self.host.source(&e, &o)
        });
        self.even_array(py, &b.map_err(qdsl_error)?)
    }

    /// The solution ψ of M ψ = η on every site from its even sites ψ_e (the solution of
    /// M̂ ψ_e = prepare_source(η)): ψ_o = D_oo⁻¹ (η_o − D_oe ψ_e).
    fn reconstruct<'py>(
        &self,
        py: Python<'py>,
        psi_even: PyReadonlyArrayDyn<'py, C64>,
        eta: PyReadonlyArrayDyn<'py, C64>,
    ) -> PyResult<Bound<'py, PyArrayDyn<C64>>> {
        let psi_e = self.even_field(&psi_even, "psi_even")?;
        let eta = self.field(&eta, "eta")?;
        let psi = py.detach(|| -> Result<F64, SolverError> {
            let (_, eta_o) = split_parities(&eta).map_err(SolverError::field)?;
            let psi_o = self.host.odd(&psi_e, &eta_o)?;
            join_parities(&psi_e, &psi_o).map_err(SolverError::field)
        });
        fermion_to_array(py, &psi.map_err(qdsl_error)?)
    }

    /// The action: "wilson", "clover", "twisted-mass", "staggered", "asqtad" or "hisq".
    #[getter]
    fn action(&self) -> &'static str {
        self.action.name()
    }

    /// The operator's parameters (κ, c_sw, μ; or m, u0, ε_Naik).
    #[getter]
    fn parameters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in &self.parameters {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// "cpu" or "gpu": where apply, apply_even_odd and solve run (prepare_source and
    /// reconstruct run on the host).
    #[getter]
    fn device(&self) -> &'static str {
        self.device.name()
    }

    /// The time boundary of the fermions.
    #[getter]
    fn boundary(&self) -> &'static str {
        match self.boundary {
            TimeBoundary::Periodic => "periodic",
            TimeBoundary::Antiperiodic => "antiperiodic",
        }
    }

    /// The shape of the fields it acts on: (T, Z, Y, X, 4, 3) or (T, Z, Y, X, 3).
    #[getter]
    fn field_shape(&self) -> Vec<usize> {
        let [x, y, z, t] = self.dims;
        let mut shape = vec![t, z, y, x];
        shape.extend(crate::arrays::site_shape(self.spins));
        shape
    }

    fn __repr__(&self) -> String {
        let params: Vec<String> = self
            .parameters
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!(
            "<qdsl.Operator {} {} {} time, device={}>",
            self.action.name(),
            params.join(", "),
            self.boundary(),
            self.device.name()
        )
    }
}
