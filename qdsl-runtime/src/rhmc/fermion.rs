//! A staggered pseudofermion with a rational action, on the host:
//!
//! S_f = φ† r(A) φ,  r(x) = α₀ + Σ_i α_i/(x + β_i),  A = (M†M)_pp = 4m² − D_pq D_qp,
//!
//! φ on parity p, M = 2m + D with the smeared links of a [`StaggeredSmearing`]. One
//! multi-shift CG gives X_i = (A + β_i)⁻¹ φ; the force is the sum over i of α_i times the
//! outer-product gradient ([`staggered_gradient`]) of X_i and Y_i = D_qp X_i, pulled back
//! through the smearing and projected: F = TA[U' Ĝ†] ([`force_from_gradient`]).

use super::links::{SmearedLinks, SmearingPullback, StaggeredSmearing};
use super::RhmcError;
use crate::operator::{EvenOddBlocks, EvenOddStaggered, StaggeredLinks};
use crate::solver::{multishift_cg, SolverField, SolverOptions};
use qdsl_core::dsl::paths::fermion_force::{force_from_gradient, staggered_gradient, zero_field};
use qdsl_core::field::{ColourSpinorField, GaugeField};
use qdsl_core::lattice::{Coords, Parity};
use qdsl_core::math::ColourVector;
use qdsl_core::rational::PartialFraction;
use qdsl_core::Complex;

/// One flavour's fermion operator: smearing, mass, the parity of φ and the solver
/// tolerance (relative residual of every shift).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StaggeredFermion {
    /// The smearing (asqtad or HISQ).
    pub smearing: StaggeredSmearing,
    /// The quark mass m.
    pub mass: f64,
    /// The parity p of the pseudofermion.
    pub parity: Parity,
    /// The multi-shift CG's tolerance.
    pub tolerance: f64,
}

impl StaggeredFermion {
    /// A = 4m² − D_pq D_qp for the links.
    pub fn operator(&self, links: &SmearedLinks) -> EvenOddStaggered<f64> {
        EvenOddStaggered::new(
            StaggeredLinks::Improved {
                fat: links.fat.clone(),
                long: links.long.clone(),
            },
            self.mass,
            self.parity,
        )
    }

    /// X_i = (A + β_i)⁻¹ φ for the shifts of `r`; an error if a shift did not converge.
    fn solve(
        &self,
        op: &EvenOddStaggered<f64>,
        phi: &ColourSpinorField<f64>,
        r: &PartialFraction,
    ) -> Result<Vec<ColourSpinorField<f64>>, RhmcError> {
        let mut x: Vec<_> = r.shifts.iter().map(|_| phi.zeros_like()).collect();
        let opts = SolverOptions::with_tolerance(self.tolerance);
        let result = multishift_cg(op, op, phi, &r.shifts, &mut x, &opts)?;
        if !result.is_converged() {
            return Err(RhmcError::NotConverged {
                tolerance: self.tolerance,
            });
        }
        Ok(x)
    }

    /// r(A) φ = α₀ φ + Σ_i α_i X_i (the heatbath φ = r(A) ξ with r ≈ x^{1/4} or x^{1/8}).
    pub fn apply_rational(
        &self,
        u: &GaugeField<f64>,
        phi: &ColourSpinorField<f64>,
        r: &PartialFraction,
    ) -> Result<ColourSpinorField<f64>, RhmcError> {
        let links = self.smearing.links(u)?;
        let x = self.solve(&self.operator(&links), phi, r)?;
        let mut out = phi.clone();
        SolverField::scale(&mut out, Complex::new(r.norm, 0.0));
        for (a, xi) in r.residues.iter().zip(&x) {
            out.axpy(*a, xi)?;
        }
        Ok(out)
    }

    /// S_f = φ† r(A) φ = α₀ |φ|² + Σ_i α_i Re φ† X_i.
    pub fn action(
        &self,
        u: &GaugeField<f64>,
        phi: &ColourSpinorField<f64>,
        r: &PartialFraction,
    ) -> Result<f64, RhmcError> {
        let links = self.smearing.links(u)?;
        let x = self.solve(&self.operator(&links), phi, r)?;
        let mut s = r.norm * phi.norm_sqr();
        for (a, xi) in r.residues.iter().zip(&x) {
            s += a * phi.dot(xi)?.re;
        }
        Ok(s)
    }

    /// The force of S_f: F_μ(x) = TA[U'_μ(x) Ĝ_μ(x)†] with dS_f/dt = tr[X F] for
    /// U → e^{tX} U (the convention of the gauge force, so P ← P + ε F), the smearing
    /// pulled back on the host.
    pub fn force(
        &self,
        u: &GaugeField<f64>,
        phi: &ColourSpinorField<f64>,
        r: &PartialFraction,
    ) -> Result<GaugeField<f64>, RhmcError> {
        self.force_with(u, phi, r, &self.smearing)
    }

    /// [`Self::force`] with the pull-back through the smearing done by `back` (the host,
    /// or the GPU: [`super::GpuSmearingPullback`]), which must be this fermion's
    /// smearing.
    pub fn force_with(
        &self,
        u: &GaugeField<f64>,
        phi: &ColourSpinorField<f64>,
        r: &PartialFraction,
        back: &dyn SmearingPullback,
    ) -> Result<GaugeField<f64>, RhmcError> {
        if back.smearing() != self.smearing {
            return Err(RhmcError::Links(format!(
                "the force of a {:?} fermion expected its own smearing's pull-back, found {:?}'s",
                self.smearing,
                back.smearing()
            )));
        }
        let links = self.smearing.links(u)?;
        let op = self.operator(&links);
        let x = self.solve(&op, phi, r)?;
        let lat = *u.lattice();
        let (mut g_fat, mut g_long) = (zero_field(lat), zero_field(lat));
        let q = self.parity.opposite();
        let p_index = usize::from(self.parity != Parity::Even);
        for (a, xi) in r.residues.iter().zip(&x) {
            let mut y = op.blocks().zeros((), q)?;
            op.blocks().hop((), q, &mut y, xi, false, None)?;
            let z = |c: Coords| {
                let on_p = c.iter().sum::<usize>() % 2 == p_index;
                let f = if on_p { xi } else { &y };
                ColourVector::from_fn(|k| f.get(0, c, 0, k).unwrap_or_default())
            };
            staggered_gradient(&mut g_fat, 1, p_index, *a, z);
            staggered_gradient(&mut g_long, 3, p_index, *a, z);
        }
        let g = back.pullback(u, &links, &g_fat, &g_long)?;
        Ok(force_from_gradient(&links.phased, &g))
    }
}
