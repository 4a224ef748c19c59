//! [`ChiralSOperator`]: an operator local in x that acts in s and chirality only,
//! O = P₊ A₊ + P₋ A₋ with A± dense Ls × Ls complex matrices — M5, M_φ, M5⁻¹ and their
//! adjoints. Applied at O(Ls²) per 4D site and chirality.

use super::{MobiusError, MobiusParams};
use crate::linear::SolverError;
use qdsl_core::dsl::fused5d::cpu::apply_chiral;
use qdsl_core::dsl::fused5d::mma::apply_chiral_mma;
use qdsl_core::dsl::fused5d::{ChiralMatrices, SOp, SPiece};
use qdsl_core::dsl::mma::Operand;
use qdsl_core::field::ColourSpinorField;
use qdsl_core::{Complex, Real};
use rayon::prelude::*;

type C = Complex<f64>;

/// Complex components per 4D site of a Wilson field (4 spins × 3 colours); the first
/// half (spins 0, 1) has γ5 = +1, the second (spins 2, 3) γ5 = −1.
const SITE: usize = 12;

/// (O ψ)(x, s) = Σ_s' [A₊(s, s') P₊ + A₋(s, s') P₋] ψ(x, s'), P± = (1 ± γ5)/2: an
/// operator diagonal in x, colour and within each chirality, dense in s.
///
/// The Möbius pieces (equations in [`super`]): with the s-hop S (S₋(s, s + 1) = 1,
/// S₋(Ls − 1, 0) = −m_f; S₊(s, s − 1) = 1, S₊(0, Ls − 1) = −m_f),
/// * [`Self::m_phi`]: M_φ = b + c S, A±(s, ·) = b_s δ_s + c_s S±(s, ·);
/// * [`Self::m5`]: M5 = α + β S (α_s = b_s (4 − M5) + 1, β_s = c_s (4 − M5) − 1);
/// * [`Self::m5_inverse`]: M5⁻¹ in closed form;
/// * [`Self::adjoint`]: O† = P₊ A₊† + P₋ A₋† (P± Hermitian, commuting with A).
#[derive(Clone, Debug, PartialEq)]
pub struct ChiralSOperator {
    ls: usize,
    /// A₊, row-major (s, s').
    plus: Vec<C>,
    /// A₋, row-major (s, s').
    minus: Vec<C>,
}

/// Which chirality a matrix acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chirality {
    /// P₊ = (1 + γ5)/2 (spins 0, 1).
    Plus,
    /// P₋ = (1 − γ5)/2 (spins 2, 3).
    Minus,
}

impl ChiralSOperator {
    /// The operator with matrices A₊(s, s') = `plus(s, s')`, A₋(s, s') = `minus(s, s')`.
    pub fn from_fn(
        ls: usize,
        plus: impl Fn(usize, usize) -> C,
        minus: impl Fn(usize, usize) -> C,
    ) -> Self {
        let matrix = |f: &dyn Fn(usize, usize) -> C| {
            (0..ls * ls).map(|k| f(k / ls, k % ls)).collect::<Vec<_>>()
        };
        Self {
            ls,
            plus: matrix(&plus),
            minus: matrix(&minus),
        }
    }

    /// Ls.
    pub fn ls(&self) -> usize {
        self.ls
    }

    /// A±(s, s').
    pub fn entry(&self, chirality: Chirality, s: usize, s_prime: usize) -> C {
        match chirality {
            Chirality::Plus => self.plus[s * self.ls + s_prime],
            Chirality::Minus => self.minus[s * self.ls + s_prime],
        }
    }

    /// The s-hop S±(s, s') of `params` (a P₋ component hops from s + 1, a P₊ one from
    /// s − 1; −m_f across the wall).
    pub fn s_hop(params: &MobiusParams) -> Self {
        let ls = params.ls();
        let m = params.mass();
        let minus = move |s: usize, t: usize| {
            if t == s + 1 {
                C::new(1.0, 0.0)
            } else if s == ls - 1 && t == 0 {
                C::new(-m, 0.0)
            } else {
                C::new(0.0, 0.0)
            }
        };
        let plus = move |s: usize, t: usize| minus(t, s);
        Self::from_fn(ls, plus, minus)
    }

    /// d_s δ_ss' + e_s S(s, s') for per-slice coefficients d, e.
    fn diagonal_plus_hop(
        params: &MobiusParams,
        d: impl Fn(usize) -> C,
        e: impl Fn(usize) -> C,
    ) -> Self {
        let hop = Self::s_hop(params);
        let row = |chirality| {
            let hop = &hop;
            let (d, e) = (&d, &e);
            move |s: usize, t: usize| {
                let diag = if s == t { d(s) } else { C::new(0.0, 0.0) };
                diag + e(s) * hop.entry(chirality, s, t)
            }
        };
        Self::from_fn(params.ls(), row(Chirality::Plus), row(Chirality::Minus))
    }

    /// M_φ = b + c S (QUDA's Dslash4pre / M5pre, Grid's Meo5D factor).
    pub fn m_phi(params: &MobiusParams) -> Self {
        Self::diagonal_plus_hop(params, |s| params.b5()[s], |s| params.c5()[s])
    }

    /// M5 = α + β S = (4 − M5)(b + c S) + 1 − S, the site-local part of the Möbius
    /// operator (QUDA's DSLASH5_MOBIUS is 2κ_b M5).
    pub fn m5(params: &MobiusParams) -> Self {
        Self::diagonal_plus_hop(params, |s| params.alpha(s), |s| params.beta(s))
    }

    /// M5⁻¹ in closed form. On each chirality M5 = α + β S = α (1 − K S) with α, K
    /// diagonal in s, k_s = −β_s/α_s (QUDA's κ = κ_b/κ_c for constant coefficients).
    /// (K S)^Ls = −m_f Π_s k_s on every slice (the walk around the fifth dimension
    /// crosses the wall once), so
    ///
    /// (1 − K S)⁻¹ = Σ_{n=0}^{Ls−1} (K S)^n / (1 + m_f Π_s k_s),  M5⁻¹ = (1 − K S)⁻¹ α⁻¹,
    ///
    /// with, on P₋, (K S)^n(s, s + n mod Ls) = k_s k_{s+1} ⋯ k_{s+n−1} (times −m_f if
    /// s + n ≥ Ls), and on P₊, where the walk goes down, (K S)^n(s, s − n mod Ls) =
    /// k_s k_{s−1} ⋯ k_{s−n+1} (times −m_f if s − n < 0). Every entry is nonzero: M5⁻¹ is
    /// dense in s, O(Ls²) per site and chirality.
    pub fn m5_inverse(params: &MobiusParams) -> Self {
        let ls = params.ls();
        let m = params.mass();
        let den = params.wall_denominator();
        let entry = |down: bool, s: usize, t: usize| {
            // n steps from s to t in the walk's direction.
            let n = if down {
                (s + ls - t) % ls
            } else {
                (t + ls - s) % ls
            };
            let mut value = C::new(1.0, 0.0);
            for j in 0..n {
                let slice = if down {
                    (s + ls - j) % ls
                } else {
                    (s + j) % ls
                };
                value *= params.k(slice);
            }
            let crosses = if down { t > s } else { t < s };
            if crosses {
                value *= -m;
            }
            value / (den * params.alpha(t))
        };
        Self::from_fn(ls, |s, t| entry(true, s, t), |s, t| entry(false, s, t))
    }

    /// The operator of a `fused5d!` piece (M5, M_φ or M5⁻¹, or the adjoint of one) for
    /// `params`: what a fused kernel's [`KernelParam::ChiralMatrices`] parameter of that
    /// piece is bound to.
    ///
    /// [`KernelParam::ChiralMatrices`]: qdsl_core::dsl::KernelParam::ChiralMatrices
    pub fn of_piece(params: &MobiusParams, piece: SPiece) -> Self {
        let op = match piece.op {
            SOp::M5 => Self::m5(params),
            SOp::MPhi => Self::m_phi(params),
            SOp::M5Inv => Self::m5_inverse(params),
        };
        if piece.dagger {
            op.adjoint()
        } else {
            op
        }
    }

    /// A₊ and A₋ as a fused kernel takes them ([`ChiralMatrices`]).
    pub fn kernel_matrices(&self) -> ChiralMatrices {
        ChiralMatrices {
            ls: self.ls,
            plus: self.plus.clone(),
            minus: self.minus.clone(),
        }
    }

    /// O† = P₊ A₊† + P₋ A₋†.
    pub fn adjoint(&self) -> Self {
        let ls = self.ls;
        Self::from_fn(
            ls,
            |s, t| self.plus[t * ls + s].conj(),
            |s, t| self.minus[t * ls + s].conj(),
        )
    }

    /// out = O ψ, or a·x + b·O ψ with `xpay` = (a, x, b), on 5D fields (any site subset;
    /// `out`, `psi` and `x` of one layout with Ls slices): the product of the fused
    /// kernels' CPU reference ([`apply_chiral`]), rayon over the output slices.
    pub fn apply<T: Real>(
        &self,
        out: &mut ColourSpinorField<T>,
        psi: &ColourSpinorField<T>,
        xpay: Option<(f64, &ColourSpinorField<T>, f64)>,
    ) -> Result<(), SolverError> {
        self.apply_in(None, out, psi, xpay)
    }

    /// [`Self::apply`] with the product as the tensor cores compute it in `operand`
    /// (f16, bf16: [`apply_chiral_mma`], the rounding of a fused chain's `mma_*` M5⁻¹
    /// emulated); an error for complex matrices or Ls > 16.
    pub fn apply_tensor_core<T: Real>(
        &self,
        operand: Operand,
        out: &mut ColourSpinorField<T>,
        psi: &ColourSpinorField<T>,
        xpay: Option<(f64, &ColourSpinorField<T>, f64)>,
    ) -> Result<(), SolverError> {
        self.apply_in(Some(operand), out, psi, xpay)
    }

    fn apply_in<T: Real>(
        &self,
        tensor_core: Option<Operand>,
        out: &mut ColourSpinorField<T>,
        psi: &ColourSpinorField<T>,
        xpay: Option<(f64, &ColourSpinorField<T>, f64)>,
    ) -> Result<(), SolverError> {
        let layout = *psi.layout();
        layout
            .expect_same(out.layout())
            .map_err(SolverError::field)?;
        if let Some((_, x, _)) = xpay {
            layout.expect_same(x.layout()).map_err(SolverError::field)?;
        }
        if layout.ls() != self.ls || layout.site_len() != SITE {
            return Err(SolverError::operator(MobiusError::FieldShape {
                expected_ls: self.ls,
                found_ls: layout.ls(),
                found_site_len: layout.site_len(),
            }));
        }
        let result = match tensor_core {
            None => apply_chiral("s-operator", &self.kernel_matrices(), psi),
            Some(op) => apply_chiral_mma("s-operator", op, &self.kernel_matrices(), psi),
        }
        .map_err(SolverError::operator)?;
        match xpay {
            Some((a, x, b)) => {
                let (a, b) = (T::from_f64(a), T::from_f64(b));
                out.data_mut()
                    .par_iter_mut()
                    .zip(result.data().par_iter().zip(x.data().par_iter()))
                    .for_each(|(o, (&r, &xv))| *o = xv * a + r * b);
            }
            None => *out = result,
        }
        Ok(())
    }

    /// Flops per 5D site of [`Self::apply`] as a dense product: 12 components × Ls
    /// complex multiply-adds (8 flops), plus 6 per component with xpay.
    pub fn flops_per_site(&self, xpay: bool) -> usize {
        SITE * self.ls * 8 + if xpay { SITE * 6 } else { 0 }
    }
}
