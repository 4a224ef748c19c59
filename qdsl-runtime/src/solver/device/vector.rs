//! [`DeviceVector`]: a Krylov vector on the GPU — [`SolverField`] and [`ConvertFrom`]
//! for device fields in every [`DevicePrecision`], so that the generic solvers run on
//! the GPU unchanged.
//!
//! BLAS (copy, zero, axpy, xpay, scale, conversion) is the kernel of
//! [`super::blas_source`]; ‖y‖² and ⟨y, x⟩ are [`DeviceField::norm2`] and
//! [`DeviceField::dot`]: decoded and accumulated in f64, in a deterministic two-level
//! reduction (fixed-order block sums, then one block over the partials). Failures of
//! the infallible methods follow the sticky-error scheme of [`super::context`].

use super::blas::{axpby, copy, slice_axpby, Axpby};
use super::context::DeviceContext;
use super::precision::DevicePrecision;
use crate::device::{DeviceError, DeviceField, DeviceFormat, DeviceLayout};
use crate::solver::block_cg::expect_sources;
use crate::solver::{ConvertFrom, SolverError, SolverField, SourceBatch};
use qdsl_core::field::{ColourSpinorField, SpinorLayout};
use qdsl_core::Complex;
use std::marker::PhantomData;
use std::sync::Arc;

/// A colour-spinor field on the GPU stored in precision `P`, sharing a
/// [`DeviceContext`] with the other vectors and operators of its solve.
#[derive(Debug)]
pub struct DeviceVector<P> {
    ctx: Arc<DeviceContext>,
    layout: DeviceLayout,
    /// Right-hand sides: the sites are this many equal slices ([`SourceBatch`]).
    sources: usize,
    /// `None` after a failed allocation (see the module doc).
    field: Option<DeviceField>,
    precision: PhantomData<P>,
}

/// The error of an operation on a vector whose allocation failed.
fn poisoned(ctx: &DeviceContext) -> DeviceError {
    DeviceError::Shape(format!(
        "the device vector has no memory: {}",
        ctx.error()
            .unwrap_or_else(|| "its allocation failed".to_string())
    ))
}

impl<P: DevicePrecision> DeviceVector<P> {
    /// The device layout of `reals` reals per site on `sites` sites in format `P`.
    pub fn layout_of(reals: usize, sites: usize) -> Result<DeviceLayout, DeviceError> {
        Ok(DeviceLayout::new(
            DeviceFormat::Fermion(P::FORMAT),
            reals,
            sites,
        )?)
    }

    /// A zero vector of `reals` reals per site on `sites` sites.
    pub fn zeros(
        ctx: &Arc<DeviceContext>,
        reals: usize,
        sites: usize,
    ) -> Result<Self, DeviceError> {
        let layout = Self::layout_of(reals, sites)?;
        let field = DeviceField::zeros(ctx.gpu(), layout)?;
        Ok(Self::wrap(ctx, field))
    }

    /// A vector holding `field` (whose format must be `P`'s).
    fn wrap(ctx: &Arc<DeviceContext>, field: DeviceField) -> Self {
        Self {
            ctx: Arc::clone(ctx),
            layout: *field.layout(),
            sources: 1,
            field: Some(field),
            precision: PhantomData,
        }
    }

    /// Uploads a host field, rounded to `P` on the GPU; its Ls slices are the vector's
    /// sources ([`SourceBatch`]).
    pub fn upload<T: qdsl_core::Real>(
        ctx: &Arc<DeviceContext>,
        host: &ColourSpinorField<T>,
    ) -> Result<Self, DeviceError> {
        let field = DeviceField::from_spinor_with(ctx.gpu(), Some(ctx.tuner()), host, P::FORMAT)?;
        Ok(Self::wrap(ctx, field).in_slices(host.layout().ls()))
    }

    /// The same vector read as `n` right-hand sides: its sites are n equal slices. An
    /// error unless n divides the sites.
    pub fn with_sources(self, n: usize) -> Result<Self, DeviceError> {
        if n == 0 || !self.layout.sites.is_multiple_of(n) {
            return Err(DeviceError::Shape(format!(
                "{n} sources in a vector of {} sites",
                self.layout.sites
            )));
        }
        Ok(self.in_slices(n))
    }

    /// `self` with `n` sources (n dividing the sites, as every caller ensures).
    fn in_slices(mut self, n: usize) -> Self {
        self.sources = n.max(1);
        self
    }

    /// y_s ← a_s·x_s + b_s·y_s per source s (either term optional, as in [`Self::blas`]).
    fn blas_each(
        &mut self,
        x: &DeviceField,
        a: &[Complex<f64>],
        b: &[Complex<f64>],
    ) -> Result<(), DeviceError> {
        let (xl, yl) = (x.layout(), self.layout);
        if (xl.sites, xl.host_reals) != (yl.sites, yl.host_reals) {
            return Err(DeviceError::Shape(format!(
                "vectors of {} and {} sites with {} and {} reals per site",
                yl.sites, xl.sites, yl.host_reals, xl.host_reals
            )));
        }
        if a.len() != self.sources || b.len() != self.sources {
            return Err(DeviceError::Shape(format!(
                "{} and {} coefficients for {} sources",
                a.len(),
                b.len(),
                self.sources
            )));
        }
        let coefficients: Vec<f64> = a
            .iter()
            .zip(b)
            .flat_map(|(a, b)| [a.re, a.im, b.re, b.im])
            .collect();
        let ctx = Arc::clone(&self.ctx);
        let sources = self.sources;
        slice_axpby(&ctx, self.field_mut()?, x, &coefficients, sources)
    }

    /// Downloads the vector as a host f64 field of host layout `layout`.
    pub fn download(&self, layout: SpinorLayout) -> Result<ColourSpinorField<f64>, DeviceError> {
        self.field()?
            .to_spinor_with(self.ctx.gpu(), Some(self.ctx.tuner()), layout)
    }

    /// The context.
    pub fn context(&self) -> &Arc<DeviceContext> {
        &self.ctx
    }

    /// The device layout.
    pub fn layout(&self) -> &DeviceLayout {
        &self.layout
    }

    /// The device field; an error if its allocation failed.
    pub fn field(&self) -> Result<&DeviceField, DeviceError> {
        self.field.as_ref().ok_or_else(|| poisoned(&self.ctx))
    }

    /// The device field, mutable; an error if its allocation failed.
    pub fn field_mut(&mut self) -> Result<&mut DeviceField, DeviceError> {
        let ctx = &self.ctx;
        self.field.as_mut().ok_or_else(|| poisoned(ctx))
    }

    /// y ← a·x + b·y on this vector's field, x of any precision.
    fn blas(
        &mut self,
        x: Option<(Complex<f64>, &DeviceField)>,
        b: Option<Complex<f64>>,
    ) -> Result<(), DeviceError> {
        if let Some((_, xf)) = x {
            let (xl, yl) = (xf.layout(), &self.layout);
            if (xl.sites, xl.host_reals) != (yl.sites, yl.host_reals) {
                return Err(DeviceError::Shape(format!(
                    "vectors of {} and {} sites with {} and {} reals per site",
                    yl.sites, xl.sites, yl.host_reals, xl.host_reals
                )));
            }
        }
        let ctx = Arc::clone(&self.ctx);
        axpby(&ctx, self.field_mut()?, Axpby { x, y: b })
    }

    /// y ← round(x): a byte copy between equal layouts, the BLAS conversion otherwise.
    fn assign(&mut self, x: &DeviceField) -> Result<(), DeviceError> {
        if x.layout() == &self.layout {
            let ctx = Arc::clone(&self.ctx);
            copy(&ctx, self.field_mut()?, x)
        } else {
            self.blas(Some((Complex::new(1.0, 0.0), x)), None)
        }
    }

    /// [`Self::blas`] with the error recorded in the context (infallible methods).
    fn blas_or_record(&mut self, b: Option<Complex<f64>>) {
        if let Err(e) = self.blas(None, b) {
            self.ctx.record(&e);
        }
    }

    /// A reduction (global over the ranks of a distributed context: every rank calls
    /// it together, even with an error recorded), NaN while the context holds an error.
    fn reduce(
        &self,
        f: impl FnOnce(&DeviceField) -> Result<Complex<f64>, DeviceError>,
    ) -> Result<Complex<f64>, DeviceError> {
        let nan = Complex::new(f64::NAN, f64::NAN);
        let local = f(self.field()?)?;
        let global = self
            .ctx
            .global("device reduction", vec![local.re, local.im])?;
        let value = Complex::new(global[0], global[1]);
        Ok(if self.ctx.check() { value } else { nan })
    }

    /// Per-source sums made global (see [`Self::reduce`]).
    fn global_each(&self, local: Vec<Complex<f64>>) -> Result<Vec<Complex<f64>>, DeviceError> {
        let flat: Vec<f64> = local.iter().flat_map(|z| [z.re, z.im]).collect();
        let global = self.ctx.global("device reductions per source", flat)?;
        Ok(global
            .chunks_exact(2)
            .map(|z| Complex::new(z[0], z[1]))
            .collect())
    }
}

impl<P: DevicePrecision> SolverField for DeviceVector<P> {
    const UNIT_ROUNDOFF: f64 = P::UNIT_ROUNDOFF;

    /// A zero vector of the same shape; on allocation failure a vector without memory
    /// (the failure recorded in the context).
    fn zeros_like(&self) -> Self {
        match DeviceField::zeros(self.ctx.gpu(), self.layout) {
            Ok(field) => Self::wrap(&self.ctx, field).in_slices(self.sources),
            Err(e) => {
                self.ctx.record(&e);
                Self {
                    ctx: Arc::clone(&self.ctx),
                    layout: self.layout,
                    sources: self.sources,
                    field: None,
                    precision: PhantomData,
                }
            }
        }
    }

    /// A byte copy: exact in every format.
    fn copy_from(&mut self, x: &Self) -> Result<(), SolverError> {
        self.assign(x.field().map_err(SolverError::field)?)
            .map_err(SolverError::field)
    }

    fn set_zero(&mut self) {
        self.blas_or_record(None);
    }

    /// NaN while the context holds an error (see [`super::context`]); a failed
    /// reduction is an error.
    fn norm_sqr(&self) -> Result<f64, SolverError> {
        let (gpu, tuner) = (self.ctx.gpu(), Some(self.ctx.tuner()));
        self.reduce(|f| f.norm2_with(gpu, tuner).map(|n| Complex::new(n, 0.0)))
            .map(|v| v.re)
            .map_err(SolverError::field)
    }

    fn dot(&self, x: &Self) -> Result<Complex<f64>, SolverError> {
        let (gpu, tuner) = (self.ctx.gpu(), Some(self.ctx.tuner()));
        let xf = x.field().map_err(SolverError::field)?;
        self.reduce(|f| f.dot_with(xf, gpu, tuner))
            .map_err(SolverError::field)
    }

    fn axpy(&mut self, a: Complex<f64>, x: &Self) -> Result<(), SolverError> {
        let one = Complex::new(1.0, 0.0);
        self.blas(Some((a, x.field().map_err(SolverError::field)?)), Some(one))
            .map_err(SolverError::field)
    }

    fn xpay(&mut self, x: &Self, a: Complex<f64>) -> Result<(), SolverError> {
        let one = Complex::new(1.0, 0.0);
        self.blas(Some((one, x.field().map_err(SolverError::field)?)), Some(a))
            .map_err(SolverError::field)
    }

    fn scale(&mut self, a: Complex<f64>) {
        self.blas_or_record(Some(a));
    }
}

/// The sources are the slices of the vector (sites s·n .. (s + 1)·n); per-source sums
/// in f64 on the GPU ([`DeviceField::reduce_slices`]), per-source coefficients through
/// the per-slice BLAS kernel ([`super::blas_source::slice_blas_program`]).
impl<P: DevicePrecision> SourceBatch for DeviceVector<P> {
    fn sources(&self) -> usize {
        self.sources
    }

    /// NaN per source while the context holds an error.
    fn norm_sqr_each(&self) -> Vec<f64> {
        let nan = vec![f64::NAN; self.sources];
        let sums = self
            .field()
            .and_then(|f| f.reduce_slices(self.ctx.gpu(), None, self.sources))
            .and_then(|v| self.global_each(v));
        match sums {
            Ok(v) if self.ctx.check() => v.into_iter().map(|c| c.re).collect(),
            Ok(_) => nan,
            Err(e) => {
                self.ctx.record(&e);
                nan
            }
        }
    }

    fn dot_each(&self, x: &Self) -> Result<Vec<Complex<f64>>, SolverError> {
        let xf = x.field().map_err(SolverError::field)?;
        let v = self
            .field()
            .and_then(|f| f.reduce_slices(self.ctx.gpu(), Some(xf), self.sources))
            .and_then(|v| self.global_each(v))
            .map_err(SolverError::field)?;
        Ok(if self.ctx.check() {
            v
        } else {
            vec![Complex::new(f64::NAN, f64::NAN); self.sources]
        })
    }

    fn axpy_each(&mut self, a: &[Complex<f64>], x: &Self) -> Result<(), SolverError> {
        expect_sources(a.len(), self.sources)?;
        let one = vec![Complex::new(1.0, 0.0); self.sources];
        self.blas_each(x.field().map_err(SolverError::field)?, a, &one)
            .map_err(SolverError::field)
    }

    fn xpay_each(&mut self, x: &Self, a: &[Complex<f64>]) -> Result<(), SolverError> {
        expect_sources(a.len(), self.sources)?;
        let one = vec![Complex::new(1.0, 0.0); self.sources];
        self.blas_each(x.field().map_err(SolverError::field)?, &one, a)
            .map_err(SolverError::field)
    }
}

impl<P: DevicePrecision, Q: DevicePrecision> ConvertFrom<DeviceVector<Q>> for DeviceVector<P> {
    /// y ← round_P(x) on the GPU.
    fn convert_from(&mut self, x: &DeviceVector<Q>) -> Result<(), SolverError> {
        self.assign(x.field().map_err(SolverError::field)?)
            .map_err(SolverError::field)
    }

    /// round_P(x) in a new vector; on failure a vector without memory (the failure
    /// recorded in the context).
    fn converted(x: &DeviceVector<Q>) -> Self {
        let (reals, sites) = (x.layout.host_reals, x.layout.sites);
        match Self::zeros(&x.ctx, reals, sites) {
            Ok(y) => {
                let mut y = y.in_slices(x.sources);
                if let Err(e) = y.convert_from(x) {
                    x.ctx.record(&e);
                }
                y
            }
            Err(e) => {
                x.ctx.record(&e);
                Self {
                    ctx: Arc::clone(&x.ctx),
                    layout: Self::layout_of(reals, sites).unwrap_or(x.layout),
                    sources: x.sources,
                    field: None,
                    precision: PhantomData,
                }
            }
        }
    }
}
