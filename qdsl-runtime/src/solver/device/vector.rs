//! [`DeviceVector`]: a Krylov vector on the GPU — [`SolverField`] and [`ConvertFrom`]
//! for device fields in every [`DevicePrecision`], so that the generic solvers run on
//! the GPU unchanged.
//!
//! BLAS (copy, zero, axpy, xpay, scale, conversion) is the kernel of
//! [`super::blas_source`]; ‖y‖² and ⟨y, x⟩ are [`DeviceField::norm2`] and
//! [`DeviceField::dot`]: decoded and accumulated in f64, in a deterministic two-level
//! reduction (fixed-order block sums, then one block over the partials). Failures of
//! the infallible methods follow the sticky-error scheme of [`super::context`].

use super::blas::{axpby, copy, Axpby};
use super::context::DeviceContext;
use super::precision::DevicePrecision;
use crate::device::{DeviceError, DeviceField, DeviceFormat, DeviceLayout};
use crate::solver::{ConvertFrom, SolverError, SolverField};
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
            field: Some(field),
            precision: PhantomData,
        }
    }

    /// Uploads a host field, rounded to `P` on the GPU.
    pub fn upload<T: qdsl_core::Real>(
        ctx: &Arc<DeviceContext>,
        host: &ColourSpinorField<T>,
    ) -> Result<Self, DeviceError> {
        let field = DeviceField::from_spinor_with(ctx.gpu(), Some(ctx.tuner()), host, P::FORMAT)?;
        Ok(Self::wrap(ctx, field))
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

    /// A reduction, NaN while the context holds an error.
    fn reduce(
        &self,
        f: impl FnOnce(&DeviceField) -> Result<Complex<f64>, DeviceError>,
    ) -> Result<Complex<f64>, DeviceError> {
        let nan = Complex::new(f64::NAN, f64::NAN);
        let value = f(self.field()?)?;
        Ok(if self.ctx.check() { value } else { nan })
    }
}

impl<P: DevicePrecision> SolverField for DeviceVector<P> {
    const UNIT_ROUNDOFF: f64 = P::UNIT_ROUNDOFF;

    /// A zero vector of the same shape; on allocation failure a vector without memory
    /// (the failure recorded in the context).
    fn zeros_like(&self) -> Self {
        match DeviceField::zeros(self.ctx.gpu(), self.layout) {
            Ok(field) => Self::wrap(&self.ctx, field),
            Err(e) => {
                self.ctx.record(&e);
                Self {
                    ctx: Arc::clone(&self.ctx),
                    layout: self.layout,
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
            Ok(mut y) => {
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
                    field: None,
                    precision: PhantomData,
                }
            }
        }
    }
}
