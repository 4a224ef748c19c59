//! [`DistributedField`]: one rank's part of a colour-spinor field of a decomposed lattice,
//! as a Krylov vector ([`SolverField`]): the solvers run on it unchanged, their global
//! sums going through the communicator.
//!
//! # Invariant: halo sites are zero
//! The part lives on the rank's [`ExtendedLattice`]; only its interior sites carry the
//! field. Every operation keeps the halo sites zero: scattering leaves them zero, the
//! vector operations are linear (zero halos stay zero), and the distributed blocks
//! ([`super::DistributedBlocks`]) exchange halos into a scratch copy of the input and
//! zero the halo sites of their output. So a vector is never stale and never carries
//! another rank's data, and the linear algebra can run over the whole contiguous array.
//!
//! # Reductions
//! ‖y‖² and ⟨y, x⟩ sum this rank's interior sites in a fixed order and add the ranks'
//! partials in rank order ([`super::reduce`]): every rank gets the same bits, so every
//! rank takes the same branches of a solver (α, β, the stopping test), and the solve is
//! reproducible run to run. A communication failure (a peer that died: the transport's
//! timeout) is a [`SolverError`] naming the peer, never a hang.

use super::reduce::{inner_product_over, interior_sites, norm_sqr_over};
use super::DistributedError;
use crate::comm::Communicator;
use crate::linear::{ConvertFrom, SolverError, SolverField};
use qdsl_core::field::distributed::{gather, scatter};
use qdsl_core::field::ColourSpinorField;
use qdsl_core::lattice::ExtendedLattice;
use qdsl_core::{Complex, Real};
use std::sync::{Arc, Mutex, MutexGuard};

/// This rank's communicator, shared by the rank's fields and operators (reductions and
/// halo exchanges are collectives issued one at a time, in program order).
pub struct SharedComm<C>(Arc<Mutex<C>>);

impl<C> Clone for SharedComm<C> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<C: Communicator> SharedComm<C> {
    /// Shares `comm`.
    pub fn new(comm: C) -> Self {
        Self(Arc::new(Mutex::new(comm)))
    }

    /// The communicator, for one collective.
    pub fn lock(&self) -> MutexGuard<'_, C> {
        // A poisoned lock only means another user panicked mid-call; the communicator
        // holds no invariant a later call could break (its messages are matched by tag).
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.lock().rank()
    }

    /// Whether `other` is the same communicator.
    pub fn same(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// One rank's part of a colour-spinor field (any layout: Wilson, staggered, 5D; one
/// parity or both) on its extended lattice, halo sites zero (module docs), with the
/// communicator its reductions use.
pub struct DistributedField<T: Real, C> {
    part: ColourSpinorField<T>,
    ext: ExtendedLattice,
    /// The interior sites of `part`, as indices within its subset (shared by the fields
    /// made from this one).
    interior: Arc<[usize]>,
    comm: SharedComm<C>,
}

impl<T: Real, C: Communicator> DistributedField<T, C> {
    /// The rank's part `part` (on `ext`'s extended lattice); its halo sites are set to
    /// zero. An error if `part` does not live on the extended lattice.
    pub fn from_part(
        mut part: ColourSpinorField<T>,
        ext: ExtendedLattice,
        comm: SharedComm<C>,
    ) -> Result<Self, DistributedError> {
        if part.layout().lattice() != ext.extended() {
            return Err(DistributedError::WrongLattice {
                what: "field part",
                expected: ext.extended().to_string(),
                found: part.layout().lattice().to_string(),
            });
        }
        super::zero_halo_sites(&mut part, &ext);
        let interior = interior_sites(&part, &ext).into();
        Ok(Self {
            part,
            ext,
            interior,
            comm,
        })
    }

    /// This rank's part of the global field `global` ([`scatter`]); every rank holds
    /// `global` (read once, shared between the threads of one process).
    pub fn scatter(
        global: &ColourSpinorField<T>,
        ext: ExtendedLattice,
        comm: SharedComm<C>,
    ) -> Result<Self, DistributedError> {
        let part = scatter(global, &ext, comm.rank())?;
        Self::from_part(part, ext, comm)
    }

    /// The global field from every rank's part, in rank order ([`gather`]).
    pub fn gather(parts: &[Self]) -> Result<ColourSpinorField<T>, DistributedError> {
        let Some(first) = parts.first() else {
            return Err(
                qdsl_core::field::distributed::DistributionError::WrongPartCount {
                    expected: 1,
                    found: 0,
                }
                .into(),
            );
        };
        let fields: Vec<ColourSpinorField<T>> = parts.iter().map(|p| p.part.clone()).collect();
        Ok(gather(&fields, &first.ext)?)
    }

    /// The part on the extended lattice (halo sites zero).
    pub fn part(&self) -> &ColourSpinorField<T> {
        &self.part
    }

    /// The part, to be written by a kernel; the caller restores the invariant (zero halo
    /// sites) before the field is used as a vector again.
    pub(crate) fn part_mut(&mut self) -> &mut ColourSpinorField<T> {
        &mut self.part
    }

    /// The rank's extended lattice.
    pub fn extended(&self) -> &ExtendedLattice {
        &self.ext
    }

    /// The communicator.
    pub fn comm(&self) -> &SharedComm<C> {
        &self.comm
    }

    /// A field of the same shape holding `part` (same lattice and subset).
    fn with_part<U: Real>(&self, part: ColourSpinorField<U>) -> DistributedField<U, C> {
        DistributedField {
            part,
            ext: self.ext,
            interior: Arc::clone(&self.interior),
            comm: self.comm.clone(),
        }
    }

    /// An error unless `x` is on the same ranks' lattice with the same communicator.
    fn expect_same<U: Real>(&self, x: &DistributedField<U, C>) -> Result<(), SolverError> {
        if self.ext != x.ext || !self.comm.same(&x.comm) {
            return Err(SolverError::field(DistributedError::Operator(format!(
                "vectors of different decompositions or communicators: grid {} and {}",
                self.ext.decomposition().grid(),
                x.ext.decomposition().grid()
            ))));
        }
        Ok(())
    }
}

impl<T: Real, C: Communicator + Send> SolverField for DistributedField<T, C> {
    const UNIT_ROUNDOFF: f64 = <ColourSpinorField<T> as SolverField>::UNIT_ROUNDOFF;

    fn zeros_like(&self) -> Self {
        self.with_part(self.part.zeros_like())
    }

    fn copy_from(&mut self, x: &Self) -> Result<(), SolverError> {
        self.expect_same(x)?;
        self.part.copy_from(&x.part)
    }

    fn set_zero(&mut self) {
        SolverField::set_zero(&mut self.part);
    }

    /// The global ‖y‖² (a collective: every rank calls it together).
    fn norm_sqr(&self) -> Result<f64, SolverError> {
        norm_sqr_over(&mut *self.comm.lock(), &self.part, &self.interior)
            .map_err(SolverError::field)
    }

    /// The global ⟨y, x⟩ (a collective).
    fn dot(&self, x: &Self) -> Result<Complex<f64>, SolverError> {
        self.expect_same(x)?;
        inner_product_over(&mut *self.comm.lock(), &self.part, &x.part, &self.interior)
            .map_err(SolverError::field)
    }

    fn axpy(&mut self, a: Complex<f64>, x: &Self) -> Result<(), SolverError> {
        self.expect_same(x)?;
        SolverField::axpy(&mut self.part, a, &x.part)
    }

    fn xpay(&mut self, x: &Self, a: Complex<f64>) -> Result<(), SolverError> {
        self.expect_same(x)?;
        self.part.xpay(&x.part, a)
    }

    fn scale(&mut self, a: Complex<f64>) {
        SolverField::scale(&mut self.part, a);
    }
}

impl<H: Real, L: Real, C: Communicator> ConvertFrom<DistributedField<H, C>>
    for DistributedField<L, C>
{
    fn convert_from(&mut self, x: &DistributedField<H, C>) -> Result<(), SolverError> {
        self.expect_same(x)?;
        self.part.convert_from(&x.part)
    }

    fn converted(x: &DistributedField<H, C>) -> Self {
        x.with_part(x.part.cast::<L>())
    }
}
