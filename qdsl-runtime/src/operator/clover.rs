//! The even-odd preconditioned Wilson-clover operator on host fields, optionally with a
//! twisted mass.
//!
//! The full operator in mass normalisation is M = D − ½ H with the site-local term
//! D = A + iμγ5 (A the clover term of [`qdsl_core::gauge::clover_field`], μ the twisted
//! mass, 0 for plain clover) and H the Wilson hop. Split by parity, with p the parity
//! solved on and q the other,
//!
//! M = [ D_pp  −½H_pq ; −½H_qp  D_qq ],
//!
//! its Schur complement on p is
//!
//! M̂ = D_pp − ¼ H_pq D_qq⁻¹ H_qp,
//!
//! and M x = b is solved by M̂ x_p = b̂_p with b̂_p = b_p + ½ H_pq D_qq⁻¹ b_q, then
//! x_q = D_qq⁻¹ (b_q + ½ H_qp x_p). D† = A − iμγ5 (A hermitian), so
//! M̂† = D†_pp − ¼ (H_qp)† D†_qq⁻¹ (H_pq)†: the same two hops with the kernels' dagger
//! knob ((H†)_pq = (H_qp)†, H† = γ5 H γ5) and −μ. Hence γ5 M̂(μ) γ5 = M̂(−μ)†. D_qq⁻¹ is
//! A_qq⁻¹ for μ = 0 and B − iμγ5 C ([`TwistedCloverInverse`]) otherwise. The parity p
//! is a parameter, as in [`super::EvenOddWilson`]. The blocks are [`CloverBlocks`]; the
//! Schur complement, its source and reconstruction are the generic [`Schur`]'s.

use super::cpu::{hop_variant, wilson_hop_flops};
use super::even_odd::{BlockFlops, Diagonal, EvenOddBlocks, Schur, SchurError, Xpay as BlockXpay};
use crate::linear::SolverError;
use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{
    CloverField, ColourSpinorField, FieldError, GaugeField, SiteSubset, SpinorLayout,
};
use qdsl_core::gauge::{clover_field, invert_clover, invert_twisted_clover, TwistedCloverInverse};
use qdsl_core::lattice::Parity;
use qdsl_core::{Complex, Real};
use qdsl_kernels::WilsonHop;
use rayon::prelude::*;

/// Flops of one site-local clover product, counted as QUDA and the `clover_apply`
/// kernel's KernelInfo do: per hermitian 6 × 6 chiral block, 6 real diagonal entries
/// times a complex (2 flops each), 15 off-diagonal entries each used twice (30 complex
/// multiplications, 6 flops) and 6 rows of 5 complex additions (2 flops):
/// 12 + 180 + 60 = 252, two blocks 504.
pub const CLOVER_APPLY_FLOPS: usize = 2 * (6 * 2 + 30 * 6 + 30 * 2);

/// Flops of adding i c γ5 ψ on a site: 12 components, each a real scaling (2 flops) and a
/// complex addition (2 flops).
pub const TWIST_FLOPS: usize = 12 * 4;

/// The inverse of the site-local term on parity q.
#[derive(Clone, Debug)]
enum DiagonalInverse<T: Real> {
    /// μ = 0: A_qq⁻¹.
    Clover(CloverField<T>),
    /// μ ≠ 0: (A_qq + iμγ5)⁻¹ = B − iμγ5 C.
    Twisted(TwistedCloverInverse<T>),
}

/// out += i c γ5 ψ on every site of Wilson fields (γ5 = diag(1, 1, −1, −1)).
fn add_twist<T: Real>(out: &mut ColourSpinorField<T>, psi: &ColourSpinorField<T>, c: f64) {
    let (plus, minus) = (
        Complex::new(T::zero(), T::from_f64(c)),
        Complex::new(T::zero(), T::from_f64(-c)),
    );
    out.data_mut()
        .par_chunks_mut(12)
        .zip(psi.data().par_chunks(12))
        .for_each(|(o, p)| {
            for (k, (o, p)) in o.iter_mut().zip(p).enumerate() {
                *o += if k < 6 { plus } else { minus } * *p;
            }
        });
}

/// The even-odd blocks of the Wilson-clover operator with twisted mass μ on host fields:
/// D_rr = A_rr + iμγ5 (site-local, D_qq⁻¹ precomputed) and D_rs = −½ H_rs, the
/// generated Wilson hop (module docs).
#[derive(Clone, Debug)]
pub struct CloverBlocks<T: Real> {
    gauge: GaugeField<T>,
    /// A_pp.
    clover: CloverField<T>,
    /// D_qq⁻¹.
    inverse: DiagonalInverse<T>,
    mu: f64,
    parity: Parity,
    boundary: TimeBoundary,
    /// Right-hand sides: the fields hold this many slices (1: 4D fields).
    sources: usize,
}

impl<T: Real> CloverBlocks<T> {
    /// The blocks on `parity` from links, a full-lattice clover field A (e.g. one read
    /// from another code) and the twist μ. An error if A is not on the full lattice or
    /// D_qq = A_qq + iμγ5 is not invertible.
    pub fn new(
        gauge: GaugeField<T>,
        a: &CloverField<T>,
        mu: f64,
        parity: Parity,
        boundary: TimeBoundary,
    ) -> Result<Self, SolverError> {
        if a.lattice() != gauge.lattice() {
            return Err(SolverError::field(FieldError::LatticeMismatch {
                expected: *gauge.lattice(),
                found: *a.lattice(),
            }));
        }
        let clover = a.restrict(parity).map_err(SolverError::field)?;
        let a_qq = a.restrict(parity.opposite()).map_err(SolverError::field)?;
        let inverse = if mu == 0.0 {
            DiagonalInverse::Clover(invert_clover(&a_qq).map_err(SolverError::operator)?)
        } else {
            DiagonalInverse::Twisted(
                invert_twisted_clover(&a_qq, mu).map_err(SolverError::operator)?,
            )
        };
        Ok(Self {
            gauge,
            clover,
            inverse,
            mu,
            parity,
            boundary,
            sources: 1,
        })
    }

    /// The same blocks on fields of `n` right-hand sides (the slices of 5D fields; the
    /// links and clover fields shared).
    pub fn with_sources(self, n: usize) -> Self {
        Self {
            sources: n.max(1),
            ..self
        }
    }

    /// The same blocks in precision U (links, A and D⁻¹ rounded; nothing re-inverted).
    pub fn cast<U: Real>(&self) -> CloverBlocks<U> {
        CloverBlocks {
            gauge: self.gauge.cast(),
            clover: self.clover.cast(),
            inverse: match &self.inverse {
                DiagonalInverse::Clover(a) => DiagonalInverse::Clover(a.cast()),
                DiagonalInverse::Twisted(t) => DiagonalInverse::Twisted(TwistedCloverInverse {
                    b: t.b.cast(),
                    c: t.c.cast(),
                    mu: t.mu,
                }),
            },
            mu: self.mu,
            parity: self.parity,
            boundary: self.boundary,
            sources: self.sources,
        }
    }

    /// The Wilson layout of parity `r` (with the sources as slices).
    pub fn layout(&self, r: Parity) -> SpinorLayout {
        let l = SpinorLayout::wilson(*self.gauge.lattice(), SiteSubset::Single(r));
        SpinorLayout::new(*l.lattice(), self.sources, l.subset(), 4, 3).unwrap_or(l)
    }

    /// The twist of D (dagger = false) or D† (dagger = true): ±μ.
    fn twist(&self, dagger: bool) -> f64 {
        if dagger {
            -self.mu
        } else {
            self.mu
        }
    }
}

impl<T: Real> EvenOddBlocks for CloverBlocks<T> {
    type Field = ColourSpinorField<T>;
    type Context<'c> = ();
    type Error = SolverError;

    fn parity(&self) -> Parity {
        self.parity
    }

    fn zeros(&self, (): (), r: Parity) -> Result<Self::Field, SolverError> {
        Ok(ColourSpinorField::zeros(self.layout(r)))
    }

    fn expect_field(&self, r: Parity, field: &Self::Field) -> Result<(), SolverError> {
        self.layout(r)
            .expect_same(field.layout())
            .map_err(SolverError::field)
    }

    /// D_rs = −½ H_rs; (D†)_rs = −½ (H†)_rs.
    fn hop_coefficient(&self, _: bool) -> f64 {
        -0.5
    }

    /// out_r = H^(†)_rs ψ_s (or a·x + b·H ψ), the generated Wilson hop.
    fn hop(
        &self,
        (): (),
        r: Parity,
        out: &mut Self::Field,
        psi: &Self::Field,
        dagger: bool,
        xpay: Option<BlockXpay<'_, Self::Field>>,
    ) -> Result<(), SolverError> {
        let variant = hop_variant::<T>(r, dagger, xpay.is_some(), self.boundary);
        let xpay = xpay.map(|x| Xpay {
            a: T::from_f64(x.a),
            x: x.x,
            b: T::from_f64(x.b),
        });
        WilsonHop
            .apply_cpu(&variant, out, psi, &self.gauge, xpay)
            .map_err(SolverError::operator)
    }

    fn diagonal(&self) -> Diagonal {
        Diagonal::Local
    }

    /// out = D_pp ψ = A_pp ψ + iμγ5 ψ (or D†_pp ψ with −μ); only on p.
    fn apply_diagonal(
        &self,
        (): (),
        r: Parity,
        out: &mut Self::Field,
        psi: &Self::Field,
        dagger: bool,
    ) -> Result<(), SolverError> {
        if r != self.parity {
            return Err(SchurError::MissingBlock("D_qq (only its inverse is held)").into());
        }
        self.clover.apply(out, psi).map_err(SolverError::field)?;
        if self.mu != 0.0 {
            add_twist(out, psi, self.twist(dagger));
        }
        Ok(())
    }

    /// out = D_qq⁻¹ ψ: A_qq⁻¹ ψ, or B ψ − iμγ5 C ψ (D†_qq⁻¹: +iμγ5 C ψ); only on q.
    fn apply_diagonal_inverse(
        &self,
        (): (),
        r: Parity,
        out: &mut Self::Field,
        psi: &Self::Field,
        dagger: bool,
    ) -> Result<(), SolverError> {
        if r == self.parity {
            return Err(SchurError::MissingBlock("D_pp⁻¹ (only D_pp is held)").into());
        }
        match &self.inverse {
            DiagonalInverse::Clover(a_inv) => a_inv.apply(out, psi).map_err(SolverError::field),
            DiagonalInverse::Twisted(t) => {
                t.b.apply(out, psi).map_err(SolverError::field)?;
                let mut c_psi = ColourSpinorField::zeros(*psi.layout());
                t.c.apply(&mut c_psi, psi).map_err(SolverError::field)?;
                add_twist(out, &c_psi, -self.twist(dagger));
                Ok(())
            }
        }
    }

    /// V/2 per source.
    fn sites(&self) -> usize {
        self.sources * self.gauge.lattice().half_volume()
    }

    /// The hops' KernelInfo; one clover product for A_pp (and a twist), one for A_qq⁻¹
    /// or two (B and C) and a twist for (A_qq + iμγ5)⁻¹.
    fn flops_per_site(&self) -> BlockFlops {
        let flops = |xpay| wilson_hop_flops::<T>(self.parity, xpay, self.boundary);
        let (diagonal, inverse) = match self.inverse {
            DiagonalInverse::Clover(_) => (CLOVER_APPLY_FLOPS, CLOVER_APPLY_FLOPS),
            DiagonalInverse::Twisted(_) => (
                CLOVER_APPLY_FLOPS + TWIST_FLOPS,
                2 * CLOVER_APPLY_FLOPS + TWIST_FLOPS,
            ),
        };
        BlockFlops {
            hop: flops(false),
            hop_xpay: flops(true),
            diagonal,
            inverse,
        }
    }
}

/// The even-odd preconditioned Wilson-clover operator on parity p, with twisted mass μ:
///
/// M̂ ψ_p = D_pp ψ_p − ¼ H_pq D_qq⁻¹ H_qp ψ_p,  D = A + iμγ5
///
/// (module docs): [`Schur`] of the [`CloverBlocks`] D_rr = A_rr + iμγ5, D_rs = −½ H_rs.
pub type EvenOddClover<T> = Schur<CloverBlocks<T>>;

impl<T: Real> EvenOddClover<T> {
    /// M̂ on `parity` for links `gauge`, bare mass m (M = A − ½H, A = (m + 4) + clover),
    /// clover coefficient c_sw and time boundary, without twist. An error if A_qq is not
    /// invertible.
    pub fn new(
        gauge: GaugeField<T>,
        mass: f64,
        c_sw: f64,
        parity: Parity,
        boundary: TimeBoundary,
    ) -> Result<Self, SolverError> {
        let a = clover_field(&gauge, mass, c_sw);
        Self::from_clover(gauge, &a, 0.0, parity, boundary)
    }

    /// The twisted-clover M̂ (M = A + iμγ5 − ½H) on `parity`; μ = 0 is [`Self::new`].
    pub fn twisted(
        gauge: GaugeField<T>,
        mass: f64,
        c_sw: f64,
        mu: f64,
        parity: Parity,
        boundary: TimeBoundary,
    ) -> Result<Self, SolverError> {
        let a = clover_field(&gauge, mass, c_sw);
        Self::from_clover(gauge, &a, mu, parity, boundary)
    }

    /// M̂ on `parity` from links, a full-lattice clover field A and the twist μ
    /// ([`CloverBlocks::new`]).
    pub fn from_clover(
        gauge: GaugeField<T>,
        a: &CloverField<T>,
        mu: f64,
        parity: Parity,
        boundary: TimeBoundary,
    ) -> Result<Self, SolverError> {
        Ok(Schur::complement(CloverBlocks::new(
            gauge, a, mu, parity, boundary,
        )?))
    }

    /// The same operator in precision U (links, A and D⁻¹ rounded; nothing re-inverted).
    pub fn cast<U: Real>(&self) -> EvenOddClover<U> {
        Schur::complement(self.blocks().cast())
    }

    /// The same operator on `n` right-hand sides at once (fields of `n` slices,
    /// [`CloverBlocks::with_sources`]).
    pub fn with_sources(&self, n: usize) -> Self {
        Schur::complement(self.blocks().clone().with_sources(n))
    }

    /// The Wilson layout of the parity M̂ acts on.
    pub fn layout(&self) -> SpinorLayout {
        self.blocks().layout(self.parity())
    }

    /// The twisted mass μ (0 for plain clover).
    pub fn mu(&self) -> f64 {
        self.blocks().mu
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linear::LinearOperator;
    use crate::operator::EvenOddWilson;
    use qdsl_core::field::GaugeField;
    use qdsl_core::gauge::clover_field;
    use qdsl_core::lattice::Lattice;

    fn lattice() -> Lattice {
        Lattice::new([4, 4, 4, 4]).unwrap()
    }

    /// With c_sw = 0 the clover term is A = (m + 4)·1 on any gauge field, so
    /// M̂ = (m + 4) − H_pq H_qp/(4(m + 4)) = (m + 4)·(1 − κ² H_pq H_qp) with
    /// κ = 1/(2m + 8): (m + 4) times the (independently written) even-odd Wilson
    /// operator, for M̂ and M̂†, on both parities.
    #[test]
    fn zero_csw_is_a_multiple_of_even_odd_wilson() {
        let u = GaugeField::<f64>::random(lattice(), 7);
        let mass = -0.2;
        let kappa = 1.0 / (2.0 * mass + 8.0);
        for p in [Parity::Even, Parity::Odd] {
            let clover =
                EvenOddClover::new(u.clone(), mass, 0.0, p, TimeBoundary::Antiperiodic).unwrap();
            let wilson = EvenOddWilson::new(u.clone(), kappa, p, TimeBoundary::Antiperiodic);
            let psi = ColourSpinorField::gaussian(clover.layout(), 3);
            for dagger in [false, true] {
                let mut got = ColourSpinorField::zeros(clover.layout());
                let mut want = ColourSpinorField::zeros(clover.layout());
                if dagger {
                    clover.apply_dagger(&mut got, &psi).unwrap();
                    wilson.apply_dagger(&mut want, &psi).unwrap();
                } else {
                    clover.apply(&mut got, &psi).unwrap();
                    wilson.apply(&mut want, &psi).unwrap();
                }
                let err = got
                    .data()
                    .iter()
                    .zip(want.data())
                    .map(|(g, w)| (g - w * (mass + 4.0)).norm())
                    .fold(0.0, f64::max);
                assert!(err < 1e-12, "{p:?} dagger={dagger}: {err:e}");
            }
        }
    }

    /// A field on the wrong parity is an error, not a panic; so are, at construction, a
    /// clover field on another lattice, one on a single parity, and one that is not
    /// invertible (m = −4, c_sw = 0: A = 0).
    #[test]
    fn wrong_parity_lattice_and_singular_clover_are_errors() {
        let u = GaugeField::<f64>::unit(lattice());
        let bc = TimeBoundary::Periodic;
        let op =
            EvenOddClover::new(u.clone(), 0.1, 1.0, Parity::Even, TimeBoundary::Periodic).unwrap();
        let odd =
            ColourSpinorField::zeros(op.layout().with_subset(SiteSubset::Single(Parity::Odd)));
        let mut out = ColourSpinorField::zeros(op.layout());
        assert!(op.apply(&mut out, &odd).is_err());
        let other = Lattice::new([4, 4, 4, 8]).unwrap();
        let a = clover_field(&GaugeField::<f64>::unit(other), 0.1, 1.0);
        let err = EvenOddClover::from_clover(u.clone(), &a, 0.0, Parity::Even, bc)
            .unwrap_err()
            .to_string();
        assert!(err.contains("lattices differ"), "{err}");
        let half = a.restrict(Parity::Odd).unwrap();
        let u8 = GaugeField::<f64>::unit(other);
        let err = EvenOddClover::from_clover(u8, &half, 0.0, Parity::Even, bc)
            .unwrap_err()
            .to_string();
        assert!(err.contains("full lattice"), "{err}");
        let err = EvenOddClover::new(u, -4.0, 0.0, Parity::Even, TimeBoundary::Periodic)
            .unwrap_err()
            .to_string();
        assert!(err.contains("singular"), "{err}");
    }

    /// (V/2)(1320 + 1392 + 2 · 504) flops: the hops' KernelInfo and two clover products;
    /// with a twist one more clover product and two twists (+ 504 + 96).
    #[test]
    fn flops_count_hops_clover_products_and_twists() {
        let u = GaugeField::<f64>::unit(lattice());
        let bc = TimeBoundary::Periodic;
        let op = EvenOddClover::new(u.clone(), 0.1, 1.0, Parity::Odd, bc).unwrap();
        assert_eq!(CLOVER_APPLY_FLOPS, 504);
        let half = lattice().volume() / 2;
        assert_eq!(op.flops_per_apply(), (half * (1320 + 1392 + 1008)) as u64);
        let op = EvenOddClover::twisted(u, 0.1, 1.0, 0.2, Parity::Odd, bc).unwrap();
        assert_eq!(
            op.flops_per_apply(),
            (half * (1320 + 1392 + 1512 + 96)) as u64
        );
    }

    /// The f32 operator made by `cast` agrees with the f64 one to f32 rounding, twisted.
    #[test]
    fn cast_operator_agrees_to_single_precision() {
        let u = GaugeField::<f64>::random(lattice(), 2);
        let bc = TimeBoundary::Antiperiodic;
        let op = EvenOddClover::twisted(u, 0.05, 1.2, 0.3, Parity::Even, bc).unwrap();
        let op32 = op.cast::<f32>();
        let psi = ColourSpinorField::<f64>::gaussian(op.layout(), 8);
        let (mut out, mut out32) = (
            ColourSpinorField::zeros(op.layout()),
            ColourSpinorField::<f32>::zeros(op.layout()),
        );
        op.apply(&mut out, &psi).unwrap();
        op32.apply(&mut out32, &psi.cast()).unwrap();
        let (mut diff, mut norm) = (0.0f64, 0.0f64);
        for (a, b) in out.data().iter().zip(out32.data()) {
            diff += (a - qdsl_core::Complex::new(b.re as f64, b.im as f64)).norm_sqr();
            norm += a.norm_sqr();
        }
        let e = (diff / norm).sqrt();
        assert!(e < 1e-6 && e > 0.0, "{e:e}");
    }
}
