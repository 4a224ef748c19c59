//! [`WithHop`]: even-odd blocks that are another set of blocks' in everything but the
//! hop — the shape of an operator whose site-local blocks run unchanged while its hop is
//! replaced (e.g. the Möbius blocks of one rank of a decomposed lattice: the s-local
//! M5, M5⁻¹ of one GPU, the 4D hop exchanging halos,
//! [`crate::operator::mobius::DistributedMobiusBlocks`]).
//!
//! D_rr, D_rr⁻¹ (and its xpay form), h, the fields, the sites and the flop counts are
//! `local`'s; D_rs = h K_rs with K_rs the [`HopOf`]'s. A fused complement of `local`
//! would launch `local`'s own hops, so [`WithHop`] never fuses it: [`super::Schur`]
//! composes M̂ from the blocks one by one, unless the hop fuses M̂ in launches of its
//! own ([`HopOf::fuses_complement`]).

use super::{BlockFlops, Diagonal, EvenOddBlocks, Xpay};
use qdsl_core::lattice::Parity;

/// The hop K_rs of [`WithHop`] blocks over local blocks `B` (which it may use, e.g. for
/// their s-local pieces).
pub trait HopOf<B: EvenOddBlocks> {
    /// out_r = K_rs ψ_s (dagger: K'_rs ψ_s), or a·x + b·K ψ with `xpay`, `local` the
    /// wrapped blocks.
    #[allow(clippy::too_many_arguments)]
    fn hop(
        &self,
        local: &B,
        cx: B::Context<'_>,
        r: Parity,
        out: &mut B::Field,
        psi: &B::Field,
        dagger: bool,
        xpay: Option<Xpay<'_, B::Field>>,
    ) -> Result<(), B::Error>;

    /// Whether this hop applies the whole M̂ (and M̂†) of `local` in fused launches of
    /// its own ([`Self::apply_complement_fused`]); by default not: [`super::Schur`]
    /// composes M̂ from the blocks.
    fn fuses_complement(&self, _local: &B) -> bool {
        false
    }

    /// out = M̂ ψ (dagger: M̂† ψ) in this hop's fused launches, with spare fields on q
    /// and p; called only where [`Self::fuses_complement`].
    fn apply_complement_fused(
        &self,
        _local: &B,
        _cx: B::Context<'_>,
        _out: &mut B::Field,
        _psi: &B::Field,
        _spare: (&mut B::Field, &mut B::Field),
        _dagger: bool,
    ) -> Result<(), B::Error> {
        Err(super::SchurError::MissingBlock("a fused complement").into())
    }
}

/// The blocks `local` with the hop `hop` (module docs).
#[derive(Debug)]
pub struct WithHop<B, H> {
    local: B,
    hop: H,
}

impl<B, H> WithHop<B, H> {
    /// `local`'s blocks with the hop `hop`.
    pub fn wrap(local: B, hop: H) -> Self {
        Self { local, hop }
    }

    /// The wrapped blocks.
    pub fn local(&self) -> &B {
        &self.local
    }

    /// The hop.
    pub fn hop_block(&self) -> &H {
        &self.hop
    }
}

impl<B: EvenOddBlocks, H: HopOf<B>> EvenOddBlocks for WithHop<B, H> {
    type Field = B::Field;
    type Context<'c> = B::Context<'c>;
    type Error = B::Error;

    fn parity(&self) -> Parity {
        self.local.parity()
    }

    fn zeros(&self, cx: Self::Context<'_>, r: Parity) -> Result<B::Field, B::Error> {
        self.local.zeros(cx, r)
    }

    fn expect_field(&self, r: Parity, field: &B::Field) -> Result<(), B::Error> {
        self.local.expect_field(r, field)
    }

    fn hop_coefficient(&self, dagger: bool) -> f64 {
        self.local.hop_coefficient(dagger)
    }

    /// The [`HopOf`]'s K_rs.
    fn hop(
        &self,
        cx: Self::Context<'_>,
        r: Parity,
        out: &mut B::Field,
        psi: &B::Field,
        dagger: bool,
        xpay: Option<Xpay<'_, B::Field>>,
    ) -> Result<(), B::Error> {
        self.hop.hop(&self.local, cx, r, out, psi, dagger, xpay)
    }

    fn diagonal(&self) -> Diagonal {
        self.local.diagonal()
    }

    fn apply_diagonal(
        &self,
        cx: Self::Context<'_>,
        r: Parity,
        out: &mut B::Field,
        psi: &B::Field,
        dagger: bool,
    ) -> Result<(), B::Error> {
        self.local.apply_diagonal(cx, r, out, psi, dagger)
    }

    fn apply_diagonal_inverse(
        &self,
        cx: Self::Context<'_>,
        r: Parity,
        out: &mut B::Field,
        psi: &B::Field,
        dagger: bool,
    ) -> Result<(), B::Error> {
        self.local.apply_diagonal_inverse(cx, r, out, psi, dagger)
    }

    fn apply_diagonal_inverse_xpay(
        &self,
        cx: Self::Context<'_>,
        r: Parity,
        out: &mut B::Field,
        psi: &B::Field,
        dagger: bool,
        xpay: Xpay<'_, B::Field>,
    ) -> Result<(), B::Error> {
        self.local
            .apply_diagonal_inverse_xpay(cx, r, out, psi, dagger, xpay)
    }

    /// Never `local`'s own fused complement (it would launch its own hops, module
    /// docs); the hop's, where it has one ([`HopOf::fuses_complement`]).
    fn fuses_complement(&self) -> bool {
        self.hop.fuses_complement(&self.local)
    }

    fn apply_complement_fused(
        &self,
        cx: Self::Context<'_>,
        out: &mut Self::Field,
        psi: &Self::Field,
        spare: (&mut Self::Field, &mut Self::Field),
        dagger: bool,
    ) -> Result<(), Self::Error> {
        self.hop
            .apply_complement_fused(&self.local, cx, out, psi, spare, dagger)
    }

    fn sites(&self) -> usize {
        self.local.sites()
    }

    fn flops_per_site(&self) -> BlockFlops {
        self.local.flops_per_site()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linear::{LinearOperator, SolverError, SolverField};
    use crate::operator::cpu::{EvenOddWilson, HopBlocks, WilsonLinks};
    use crate::operator::even_odd::Schur;
    use qdsl_core::dsl::variant::TimeBoundary;
    use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
    use qdsl_core::lattice::Lattice;

    type Blocks = HopBlocks<WilsonLinks<f64>>;
    type F = ColourSpinorField<f64>;

    /// K_rs = 2·(the local K_rs): a hop that is not the local one.
    struct Doubled;

    impl HopOf<Blocks> for Doubled {
        fn hop(
            &self,
            local: &Blocks,
            (): (),
            r: Parity,
            out: &mut F,
            psi: &F,
            dagger: bool,
            xpay: Option<Xpay<'_, F>>,
        ) -> Result<(), SolverError> {
            let mut twice = psi.clone();
            SolverField::scale(&mut twice, qdsl_core::Complex::new(2.0, 0.0));
            local.hop((), r, out, &twice, dagger, xpay)
        }
    }

    /// Wrapping Wilson's blocks with K → 2K gives the Wilson M̂ of κ → 2κ (M̂ = 1 − κ²
    /// H H: the hop is the wrapper's, everything else the local blocks'), for M̂ and M̂†;
    /// the wrapper never fuses the complement.
    #[test]
    fn the_wrapped_blocks_are_the_local_ones_but_for_the_hop() {
        let lattice = Lattice::new([4, 4, 4, 4]).unwrap();
        let u = GaugeField::<f64>::random(lattice, 3);
        let (kappa, p, bc) = (0.06, Parity::Even, TimeBoundary::Antiperiodic);
        let local = HopBlocks::new(WilsonLinks(u.clone()), 1.0, -kappa, p, bc);
        let wrapped = Schur::complement(WithHop::wrap(local, Doubled));
        assert!(!wrapped.blocks().fuses_complement());
        let reference = EvenOddWilson::<f64>::new(u, 2.0 * kappa, p, bc);
        let psi = F::gaussian(SpinorLayout::wilson(lattice, SiteSubset::Single(p)), 4);
        for dagger in [false, true] {
            let (mut a, mut b) = (psi.zeros_like(), psi.zeros_like());
            if dagger {
                wrapped.apply_dagger(&mut a, &psi).unwrap();
                reference.apply_dagger(&mut b, &psi).unwrap();
            } else {
                wrapped.apply(&mut a, &psi).unwrap();
                reference.apply(&mut b, &psi).unwrap();
            }
            let mut d = a.clone();
            SolverField::axpy(&mut d, qdsl_core::Complex::new(-1.0, 0.0), &b).unwrap();
            assert!(
                d.norm_sqr().sqrt() <= 1e-13 * b.norm_sqr().sqrt(),
                "dagger {dagger}"
            );
        }
    }
}
