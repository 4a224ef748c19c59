//! The 4D quark fields of the 5D theory: the 5D source of a 4D source, the 4D quark
//! field at the walls and at the midpoint of the fifth dimension, and the parity split of
//! 5D fields.
//!
//! With the conventions of [`super`] (P₋ hops to s + 1), the 4D quark field is
//!
//! q(x) = P₋ ψ(x, 0) + P₊ ψ(x, Ls − 1)
//!
//! (Grid's ExportPhysicalFermionSolution; in QUDA's spin basis, whose γ5 has the other
//! sign, the same statement in its own γ5). A 4D source b enters as the 5D source
//!
//! η = D₋ (P₋ b δ_{s,0} + P₊ b δ_{s,Ls−1}),  D₋ ψ(s) = ψ(s) − c_s D_W ψ(s)
//!
//! (Grid's ImportPhysicalFermionSource; D₋ = 1 for Shamir), so that q = D_eff⁻¹ b up to
//! a contact term at the source, D_eff the 4D effective (overlap-like) operator of mass
//! m_f. The midpoint field q_mid(x) = P₋ ψ(x, Ls/2) + P₊ ψ(x, Ls/2 − 1) is the
//! projection across the cut between s = Ls/2 − 1 and Ls/2, the analogue of q across the
//! wall; ⟨J5q P⟩ = Σ_x tr[q_mid† q_mid] measures the explicit chiral symmetry breaking
//! (the residual mass m_res = Σ_x⟨J5q(x, t) P(0)⟩ / Σ_x⟨P(x, t) P(0)⟩).

use super::MobiusBlocks;
use crate::linear::SolverError;
use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::variant::OutputSites;
use qdsl_core::dsl::Variant;
use qdsl_core::field::{ColourSpinorField, FieldError, SiteSubset, SpinorLayout};
use qdsl_core::lattice::Parity;
use qdsl_core::{Complex, Real};
use qdsl_kernels::WilsonHop;

/// Components per 4D site of a Wilson field; spins 0, 1 (the first 6) have γ5 = +1.
const SITE: usize = 12;
const HALF: usize = 6;

/// The (even, odd) halves of a full-lattice field with any Ls (each slice in
/// checkerboard order, even sites first).
pub fn split_parities<T: Real>(
    full: &ColourSpinorField<T>,
) -> Result<(ColourSpinorField<T>, ColourSpinorField<T>), FieldError> {
    let layout = full.layout().with_subset(SiteSubset::Full);
    layout.expect_same(full.layout())?;
    let slice = layout.sites_per_slice() * layout.site_len();
    let half = slice / 2;
    let part = |p: Parity| {
        let offset = if p == Parity::Even { 0 } else { half };
        let data = full
            .data()
            .chunks_exact(slice)
            .flat_map(|s| s[offset..offset + half].iter().copied())
            .collect();
        ColourSpinorField::from_data(layout.with_subset(SiteSubset::Single(p)), data)
    };
    Ok((part(Parity::Even)?, part(Parity::Odd)?))
}

/// The full-lattice field (any Ls) whose halves are `even` and `odd`.
pub fn join_parities<T: Real>(
    even: &ColourSpinorField<T>,
    odd: &ColourSpinorField<T>,
) -> Result<ColourSpinorField<T>, FieldError> {
    let layout = even.layout().with_subset(SiteSubset::Full);
    layout
        .with_subset(SiteSubset::Single(Parity::Even))
        .expect_same(even.layout())?;
    layout
        .with_subset(SiteSubset::Single(Parity::Odd))
        .expect_same(odd.layout())?;
    let half = layout.sites_per_slice() / 2 * layout.site_len();
    let data = even
        .data()
        .chunks_exact(half)
        .zip(odd.data().chunks_exact(half))
        .flat_map(|(e, o)| e.iter().chain(o).copied())
        .collect();
    ColourSpinorField::from_data(layout, data)
}

/// The 4D field P₋ ψ(s_minus) + P₊ ψ(s_plus) of a full-lattice 5D field.
fn project_slices<T: Real>(
    psi: &ColourSpinorField<T>,
    s_minus: usize,
    s_plus: usize,
) -> Result<ColourSpinorField<T>, FieldError> {
    let l = *psi.layout();
    let four = SpinorLayout::wilson(*l.lattice(), l.subset());
    let n = l.sites_per_slice() * SITE;
    let data = (0..n)
        .map(|k| {
            let s = if k % SITE < HALF { s_plus } else { s_minus };
            psi.data()[s * n + k]
        })
        .collect();
    ColourSpinorField::from_data(four, data)
}

/// q = P₋ ψ(0) + P₊ ψ(Ls − 1), the 4D quark field of a 5D solution.
pub fn wall_field<T: Real>(psi: &ColourSpinorField<T>) -> Result<ColourSpinorField<T>, FieldError> {
    project_slices(psi, 0, psi.layout().ls() - 1)
}

/// q_mid = P₋ ψ(Ls/2) + P₊ ψ(Ls/2 − 1), the midpoint field of a 5D solution (Ls even).
pub fn midpoint_field<T: Real>(
    psi: &ColourSpinorField<T>,
) -> Result<ColourSpinorField<T>, FieldError> {
    let ls = psi.layout().ls();
    project_slices(psi, ls / 2, ls / 2 - 1)
}

impl<T: Real> MobiusBlocks<T> {
    /// D₋ ψ(s) = ψ(s) − c_s D_W ψ(s), D_W = (4 − M5) − ½ H, on a full-lattice 5D field.
    pub fn d_minus(&self, psi: &ColourSpinorField<T>) -> Result<ColourSpinorField<T>, SolverError> {
        self.layout(SiteSubset::Full)
            .expect_same(psi.layout())
            .map_err(SolverError::field)?;
        let variant = Variant {
            sites: OutputSites::Full,
            ..crate::operator::cpu::hop_variant::<T>(Parity::Even, false, false, self.boundary())
        };
        let mut h = ColourSpinorField::zeros(*psi.layout());
        let none: Option<Xpay<'_, T>> = None;
        WilsonHop
            .apply_cpu(&variant, &mut h, psi, self.gauge(), none)
            .map_err(SolverError::operator)?;
        let n = psi.layout().sites_per_slice() * SITE;
        let four = 4.0 - self.params().m5();
        let mut out = ColourSpinorField::zeros(*psi.layout());
        for (k, o) in out.data_mut().iter_mut().enumerate() {
            let c = self.params().c5()[k / n];
            let c = Complex::new(T::from_f64(c.re), T::from_f64(c.im));
            let (p, hk) = (psi.data()[k], h.data()[k]);
            let dw = p * T::from_f64(four) - hk * T::from_f64(0.5);
            *o = p - c * dw;
        }
        Ok(out)
    }

    /// η = D₋ (P₋ b δ_{s,0} + P₊ b δ_{s,Ls−1}), the 5D source of the 4D source `b` (a
    /// full-lattice Wilson field).
    pub fn source_5d(&self, b: &ColourSpinorField<T>) -> Result<ColourSpinorField<T>, SolverError> {
        let four = SpinorLayout::wilson(*self.gauge().lattice(), SiteSubset::Full);
        four.expect_same(b.layout()).map_err(SolverError::field)?;
        let layout = self.layout(SiteSubset::Full);
        let ls = layout.ls();
        let n = four.sites_per_slice() * SITE;
        let mut walls = ColourSpinorField::zeros(layout);
        for k in 0..n {
            let s = if k % SITE < HALF { ls - 1 } else { 0 };
            walls.data_mut()[s * n + k] = b.data()[k];
        }
        self.d_minus(&walls)
    }
}
