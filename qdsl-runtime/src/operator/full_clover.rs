//! The unpreconditioned (full-lattice) Wilson-clover operator on host fields, the
//! operator the Schwarz alternating procedure ([`crate::solver::sap`]) decomposes into
//! blocks.
//!
//! In mass normalisation
//!
//! M ψ(x) = A(x) ψ(x) − ½ (H ψ)(x),
//! (H ψ)(x) = Σ_μ [(1 − γ_μ) U_μ(x) ψ(x+μ̂) + (1 + γ_μ) U_μ†(x−μ̂) ψ(x−μ̂)],
//!
//! with the clover term A = (m + 4)·1 + (i c_sw/2) Σ_{μ<ν} σ_μν F̂_μν
//! ([`qdsl_core::gauge::clover_field`]); c_sw = 0 gives Wilson's M = (m + 4)(1 − κ H),
//! κ = 1/(2m + 8). A is hermitian and H† = γ5 H γ5, so M† = A − ½ H† (the kernel's
//! dagger knob). H is the generated Wilson hop writing all V sites (`OutputSites::Full`)
//! with xpay: M ψ = 1·(A ψ) + (−½)·H ψ in one kernel call after the clover product.

use super::clover::CLOVER_APPLY_FLOPS;
use super::cpu::storage_format;
use crate::linear::{LinearOperator, SolverError};
use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::variant::{OutputSites, TimeBoundary};
use qdsl_core::dsl::{KernelInfo, Stencil, Variant};
use qdsl_core::field::SpinorLayout;
use qdsl_core::field::{CloverField, ColourSpinorField, FieldError, GaugeField, SiteSubset};
use qdsl_core::gauge::clover_field;
use qdsl_core::Real;
use qdsl_kernels::WilsonHop;

/// The full-lattice Wilson-clover operator M = A − ½ H on host fields of precision T
/// (module docs).
#[derive(Clone, Debug)]
pub struct FullClover<T: Real> {
    gauge: GaugeField<T>,
    /// A on every site.
    clover: CloverField<T>,
    boundary: TimeBoundary,
}

impl<T: Real> FullClover<T> {
    /// M for links `gauge`, bare mass m, clover coefficient c_sw (0: Wilson) and time
    /// boundary.
    pub fn new(gauge: GaugeField<T>, mass: f64, c_sw: f64, boundary: TimeBoundary) -> Self {
        let clover = clover_field(&gauge, mass, c_sw);
        Self {
            gauge,
            clover,
            boundary,
        }
    }

    /// M from links and a full-lattice clover field A (e.g. one read from another code).
    /// An error if A is not on the full lattice of the links.
    pub fn from_clover(
        gauge: GaugeField<T>,
        clover: CloverField<T>,
        boundary: TimeBoundary,
    ) -> Result<Self, SolverError> {
        if clover.lattice() != gauge.lattice() || clover.subset() != SiteSubset::Full {
            return Err(SolverError::field(FieldError::LatticeMismatch {
                expected: *gauge.lattice(),
                found: *clover.lattice(),
            }));
        }
        Ok(Self {
            gauge,
            clover,
            boundary,
        })
    }

    /// The same operator in precision U (links and A rounded).
    pub fn cast<U: Real>(&self) -> FullClover<U> {
        FullClover {
            gauge: self.gauge.cast(),
            clover: self.clover.cast(),
            boundary: self.boundary,
        }
    }

    /// The full-lattice Wilson layout M acts on.
    pub fn layout(&self) -> SpinorLayout {
        SpinorLayout::wilson(*self.gauge.lattice(), SiteSubset::Full)
    }

    /// The links.
    pub fn gauge(&self) -> &GaugeField<T> {
        &self.gauge
    }

    /// The time boundary of the hops.
    pub fn boundary(&self) -> TimeBoundary {
        self.boundary
    }

    fn variant(&self, dagger: bool) -> Variant {
        Variant {
            sites: OutputSites::Full,
            dagger,
            xpay: true,
            spinor: storage_format::<T>(),
            gauge: storage_format::<T>(),
            boundary: self.boundary,
            ..Variant::default()
        }
    }

    /// out = A ψ − ½ H^(†) ψ.
    fn run(
        &self,
        out: &mut ColourSpinorField<T>,
        psi: &ColourSpinorField<T>,
        dagger: bool,
    ) -> Result<(), SolverError> {
        let mut a_psi = ColourSpinorField::zeros(*psi.layout());
        self.clover
            .apply(&mut a_psi, psi)
            .map_err(SolverError::field)?;
        let xpay = Xpay {
            a: T::one(),
            x: &a_psi,
            b: T::from_f64(-0.5),
        };
        WilsonHop
            .apply_cpu(&self.variant(dagger), out, psi, &self.gauge, Some(xpay))
            .map_err(SolverError::operator)
    }
}

impl<T: Real> LinearOperator<ColourSpinorField<T>> for FullClover<T> {
    fn apply(
        &self,
        out: &mut ColourSpinorField<T>,
        psi: &ColourSpinorField<T>,
    ) -> Result<(), SolverError> {
        self.run(out, psi, false)
    }

    fn apply_dagger(
        &self,
        out: &mut ColourSpinorField<T>,
        psi: &ColourSpinorField<T>,
    ) -> Result<(), SolverError> {
        self.run(out, psi, true)
    }

    /// V (hop with xpay, from the KernelInfo, + one clover product) per site.
    fn flops_per_apply(&self) -> u64 {
        let hop = WilsonHop::info(&self.variant(false)).map_or(0, |i: KernelInfo| i.flops_per_site);
        (self.gauge.lattice().volume() * (hop + CLOVER_APPLY_FLOPS)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::tests::textbook_wilson_hop;
    use qdsl_core::lattice::{BoundaryConditions, Lattice};

    /// M ψ and M† ψ against the textbook hop and the clover product done by hand:
    /// A ψ − ½ H ψ, and ⟨χ, M ψ⟩ = ⟨M† χ, ψ⟩.
    #[test]
    fn matches_the_textbook_operator_and_its_adjoint() {
        let lat = Lattice::new([4, 2, 2, 4]).unwrap();
        let u = GaugeField::<f64>::random(lat, 11);
        let op = FullClover::new(u.clone(), 0.1, 1.3, TimeBoundary::Antiperiodic);
        let psi = ColourSpinorField::<f64>::gaussian(op.layout(), 1);
        let chi = ColourSpinorField::<f64>::gaussian(op.layout(), 2);
        let mut got = ColourSpinorField::zeros(op.layout());
        op.apply(&mut got, &psi).unwrap();
        let h = textbook_wilson_hop(&u, psi.data(), &BoundaryConditions::antiperiodic_time());
        let mut a_psi = ColourSpinorField::zeros(op.layout());
        clover_field(&u, 0.1, 1.3).apply(&mut a_psi, &psi).unwrap();
        let err = got
            .data()
            .iter()
            .zip(a_psi.data().iter().zip(&h))
            .map(|(g, (a, h))| (g - (a - h * 0.5)).norm())
            .fold(0.0, f64::max);
        assert!(err < 1e-12, "{err:e}");
        let mut m_dag_chi = ColourSpinorField::zeros(op.layout());
        op.apply_dagger(&mut m_dag_chi, &chi).unwrap();
        let lhs = chi.dot(&got).unwrap();
        let rhs = m_dag_chi.dot(&psi).unwrap();
        assert!((lhs - rhs).norm() < 1e-10 * lhs.norm(), "{lhs} {rhs}");
    }
}
