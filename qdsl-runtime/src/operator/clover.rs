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
//! is a parameter, as in [`super::EvenOddWilson`].

use super::cpu::{hop_variant, wilson_hop_flops};
use crate::solver::{LinearOperator, SolverError};
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

/// The even-odd preconditioned Wilson-clover operator on parity p, with twisted mass μ:
///
/// M̂ ψ_p = D_pp ψ_p − ¼ H_pq D_qq⁻¹ H_qp ψ_p,  D = A + iμγ5
///
/// (module docs), holding the links, A restricted to p and D⁻¹ restricted to q.
#[derive(Clone, Debug)]
pub struct EvenOddClover<T: Real> {
    gauge: GaugeField<T>,
    clover: CloverField<T>,
    inverse: DiagonalInverse<T>,
    mu: f64,
    parity: Parity,
    boundary: TimeBoundary,
}

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

    /// M̂ on `parity` from links, a full-lattice clover field A (e.g. one read from
    /// another code) and the twist μ. An error if A is not on the full lattice or
    /// D_qq = A_qq + iμγ5 is not invertible.
    pub fn from_clover(
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
        })
    }

    /// The same operator in precision U (links, A and D⁻¹ rounded; nothing re-inverted).
    pub fn cast<U: Real>(&self) -> EvenOddClover<U> {
        EvenOddClover {
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
        }
    }

    /// The Wilson layout of the parity M̂ acts on.
    pub fn layout(&self) -> SpinorLayout {
        SpinorLayout::wilson(*self.gauge.lattice(), SiteSubset::Single(self.parity))
    }

    /// The parity M̂ acts on.
    pub fn parity(&self) -> Parity {
        self.parity
    }

    /// The twisted mass μ (0 for plain clover).
    pub fn mu(&self) -> f64 {
        self.mu
    }

    /// The twist of D (dagger = false) or D† (dagger = true): ±μ.
    fn twist(&self, dagger: bool) -> f64 {
        if dagger {
            -self.mu
        } else {
            self.mu
        }
    }

    /// out = D_pp ψ = A_pp ψ + iμγ5 ψ (or D†_pp ψ with −μ).
    fn diagonal(
        &self,
        out: &mut ColourSpinorField<T>,
        psi: &ColourSpinorField<T>,
        dagger: bool,
    ) -> Result<(), SolverError> {
        self.clover.apply(out, psi).map_err(SolverError::field)?;
        if self.mu != 0.0 {
            add_twist(out, psi, self.twist(dagger));
        }
        Ok(())
    }

    /// out = D_qq⁻¹ ψ: A_qq⁻¹ ψ, or B ψ − iμγ5 C ψ (D†_qq⁻¹: +iμγ5 C ψ).
    fn diagonal_inverse(
        &self,
        out: &mut ColourSpinorField<T>,
        psi: &ColourSpinorField<T>,
        dagger: bool,
    ) -> Result<(), SolverError> {
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

    /// out_r = a·x_r + b·H^(†)_rs ψ_s on output parity r, the generated Wilson hop.
    fn hop(
        &self,
        r: Parity,
        out: &mut ColourSpinorField<T>,
        psi: &ColourSpinorField<T>,
        dagger: bool,
        xpay: Option<Xpay<'_, T>>,
    ) -> Result<(), SolverError> {
        let variant = hop_variant::<T>(r, dagger, xpay.is_some(), self.boundary);
        WilsonHop
            .apply_cpu(&variant, out, psi, &self.gauge, xpay)
            .map_err(SolverError::operator)
    }

    /// A field of parity `r` on this operator's lattice, zero.
    fn zeros(&self, r: Parity) -> ColourSpinorField<T> {
        ColourSpinorField::zeros(self.layout().with_subset(SiteSubset::Single(r)))
    }

    /// out = D^(†)_pp ψ − ¼ H^(†)_pq D^(†)_qq⁻¹ H^(†)_qp ψ.
    fn apply_with(
        &self,
        out: &mut ColourSpinorField<T>,
        psi: &ColourSpinorField<T>,
        dagger: bool,
    ) -> Result<(), SolverError> {
        let q = self.parity.opposite();
        let expected = self.layout();
        expected
            .expect_same(psi.layout())
            .map_err(SolverError::field)?;
        expected
            .expect_same(out.layout())
            .map_err(SolverError::field)?;
        let mut h = self.zeros(q);
        self.hop(q, &mut h, psi, dagger, None)?;
        let mut dh = self.zeros(q);
        self.diagonal_inverse(&mut dh, &h, dagger)?;
        let mut d_psi = self.zeros(self.parity);
        self.diagonal(&mut d_psi, psi, dagger)?;
        let xpay = Xpay {
            a: T::one(),
            x: &d_psi,
            b: T::from_f64(-0.25),
        };
        self.hop(self.parity, out, &dh, dagger, Some(xpay))
    }

    /// The preconditioned source b̂_p = b_p + ½ H_pq D_qq⁻¹ b_q of M x = b.
    pub fn prepare_source(
        &self,
        b_p: &ColourSpinorField<T>,
        b_q: &ColourSpinorField<T>,
    ) -> Result<ColourSpinorField<T>, SolverError> {
        let mut d_inv_b = self.zeros(self.parity.opposite());
        self.diagonal_inverse(&mut d_inv_b, b_q, false)?;
        let mut out = self.zeros(self.parity);
        let xpay = Xpay {
            a: T::one(),
            x: b_p,
            b: T::from_f64(0.5),
        };
        self.hop(self.parity, &mut out, &d_inv_b, false, Some(xpay))?;
        Ok(out)
    }

    /// The other parity of the solution, x_q = D_qq⁻¹ (b_q + ½ H_qp x_p), from the
    /// solution x_p of M̂ x_p = b̂_p.
    pub fn reconstruct(
        &self,
        x_p: &ColourSpinorField<T>,
        b_q: &ColourSpinorField<T>,
    ) -> Result<ColourSpinorField<T>, SolverError> {
        let q = self.parity.opposite();
        let mut rhs = self.zeros(q);
        let xpay = Xpay {
            a: T::one(),
            x: b_q,
            b: T::from_f64(0.5),
        };
        self.hop(q, &mut rhs, x_p, false, Some(xpay))?;
        let mut x_q = self.zeros(q);
        self.diagonal_inverse(&mut x_q, &rhs, false)?;
        Ok(x_q)
    }
}

impl<T: Real> LinearOperator<ColourSpinorField<T>> for EvenOddClover<T> {
    /// out = M̂ ψ = D_pp ψ − ¼ H_pq D_qq⁻¹ H_qp ψ.
    fn apply(
        &self,
        out: &mut ColourSpinorField<T>,
        input: &ColourSpinorField<T>,
    ) -> Result<(), SolverError> {
        self.apply_with(out, input, false)
    }

    /// out = M̂† ψ = D†_pp ψ − ¼ (H_qp)† D†_qq⁻¹ (H_pq)† ψ (D† = A − iμγ5).
    fn apply_dagger(
        &self,
        out: &mut ColourSpinorField<T>,
        input: &ColourSpinorField<T>,
    ) -> Result<(), SolverError> {
        self.apply_with(out, input, true)
    }

    /// (V/2)(f_hop + f_hop,xpay + 2 · 504) without twist; with it, one more clover
    /// product (B and C) and two twists (2 · 48) per site.
    fn flops_per_apply(&self) -> u64 {
        let flops = |xpay| wilson_hop_flops::<T>(self.parity, xpay, self.boundary);
        let local = match self.inverse {
            DiagonalInverse::Clover(_) => 2 * CLOVER_APPLY_FLOPS,
            DiagonalInverse::Twisted(_) => 3 * CLOVER_APPLY_FLOPS + 2 * TWIST_FLOPS,
        };
        let per_site = flops(false) + flops(true) + local;
        (self.gauge.lattice().volume() / 2 * per_site) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
