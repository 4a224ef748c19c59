//! Spin projectors P^±_μ = 1 ± γ_μ through half spinors, and the chiral projectors.
//!
//! In the DeGrand–Rossi basis γ_μ = [[0, B_μ], [B_μ†, 0]] (2×2 blocks; B_μ a signed
//! permutation, B_μ†B_μ = 1). Writing ψ = (ψ_u, ψ_d) for spins (0, 1) and (2, 3):
//!
//! (1 ± γ_μ) ψ = ( h, ±B_μ† h ),  h = ψ_u ± B_μ ψ_d,
//!
//! since ψ_d ± B_μ†ψ_u = ±B_μ†(ψ_u ± B_μψ_d). So the projected spinor is fixed by the
//! half spinor h (2 spins × 3 colours, 12 reals): the Wilson hop multiplies only h by the
//! link (projection commutes with colour matrices, U h = (Uψ)'s half spinor) and
//! reconstructs the lower spins by a signed permutation. Both steps read the gamma table
//! ([`Gamma::table`]): `h_r = ψ_r ± phase[r] ψ_{column[r]}` for r = 0, 1, and the lower
//! rows are `±phase[2+k] h_{column[2+k]}`, k = 0, 1. Phases are exact, so
//! reconstruct(project(ψ)) equals the dense product (1 ± γ_μ)ψ bit for bit.
//!
//! (No factor 1/2: P^±_μ/2 are the projectors proper; the Wilson operator uses 1 ± γ_μ.)

use super::{Gamma, HalfSpinor, Spinor};
use crate::Real;
use num_complex::Complex;

/// The sign of a spin projector 1 ± γ_μ or chiral projector (1 ± γ_5)/2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProjectorSign {
    /// 1 + γ.
    Plus,
    /// 1 − γ.
    Minus,
}

impl ProjectorSign {
    /// ±1 as a real number.
    pub fn value<T: Real>(self) -> T {
        match self {
            ProjectorSign::Plus => T::one(),
            ProjectorSign::Minus => -T::one(),
        }
    }

    /// ±z, exactly.
    fn apply<T: Real>(self, z: Complex<T>) -> Complex<T> {
        match self {
            ProjectorSign::Plus => z,
            ProjectorSign::Minus => -z,
        }
    }
}

impl<T: Real> Spinor<T> {
    /// The half spinor h of (1 ± γ_μ)ψ, h_r = ψ_r ± (γ_μ)_{r c_r} ψ_{c_r} for r = 0, 1
    /// (c_r ∈ {2, 3} the column of row r of γ_μ); see the [module documentation](self).
    ///
    /// Commutes with colour matrices: (Uψ).project(μ, ±) = U · ψ.project(μ, ±).
    ///
    /// # Panics
    ///
    /// If `mu` ≥ 4 (an index into [`Gamma::DIRECTIONS`], like a slice index).
    pub fn project(&self, mu: usize, sign: ProjectorSign) -> HalfSpinor<T> {
        let g = Gamma::DIRECTIONS[mu].table();
        HalfSpinor::from_fn(|r, a| self[r][a] + sign.apply(g.phase[r].apply(self[g.column[r]][a])))
    }

    /// The chiral projection ((1 ± γ_5)/2) ψ with γ_5 = diag(1, 1, −1, −1): keeps spins 0, 1
    /// (sign +) or 2, 3 (sign −) and zeroes the others, exactly.
    pub fn chiral_project(&self, sign: ProjectorSign) -> Spinor<T> {
        let kept = match sign {
            ProjectorSign::Plus => 0..2,
            ProjectorSign::Minus => 2..4,
        };
        Spinor::from_fn(|s, a| {
            if kept.contains(&s) {
                self[s][a]
            } else {
                Complex::new(T::zero(), T::zero())
            }
        })
    }
}

impl<T: Real> HalfSpinor<T> {
    /// The spinor (1 ± γ_μ)ψ from its half spinor h = ψ.project(μ, ±): spins 0, 1 are h,
    /// spins 2 + k are ±(γ_μ)_{2+k, c} h_c with c = column of row 2 + k of γ_μ (in {0, 1}),
    /// i.e. the lower half ±B_μ† h.
    ///
    /// # Panics
    ///
    /// If `mu` ≥ 4 (an index into [`Gamma::DIRECTIONS`], like a slice index).
    pub fn reconstruct(&self, mu: usize, sign: ProjectorSign) -> Spinor<T> {
        let g = Gamma::DIRECTIONS[mu].table();
        Spinor::from_fn(|s, a| {
            if s < 2 {
                self[s][a]
            } else {
                sign.apply(g.phase[s].apply(self[g.column[s]][a]))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::test_support::{eps, Lcg};
    use crate::math::SpinMatrix;

    const SIGNS: [ProjectorSign; 2] = [ProjectorSign::Plus, ProjectorSign::Minus];

    /// The dense 4×4 matrix 1 ± γ_μ.
    fn dense_projector<T: Real>(mu: usize, sign: ProjectorSign) -> SpinMatrix<T> {
        let g = Gamma::DIRECTIONS[mu].matrix::<T>();
        let one = SpinMatrix::identity();
        match sign {
            ProjectorSign::Plus => one + g,
            ProjectorSign::Minus => one - g,
        }
    }

    /// reconstruct(project(ψ)) = (1 ± γ_μ)ψ bit for bit, for all μ and both signs, on
    /// random spinors; the projector is idempotent up to 2, (1 ± γ)² = 2(1 ± γ), and the
    /// two signs are complementary, P⁺ + P⁻ = 2.
    fn check_projection<T: Real>() {
        let mut rng = Lcg::new(51);
        for _ in 0..20 {
            let psi = rng.spinor::<T>();
            for mu in 0..4 {
                for sign in SIGNS {
                    let full = psi.project(mu, sign).reconstruct(mu, sign);
                    assert_eq!(
                        full,
                        dense_projector::<T>(mu, sign) * psi,
                        "mu {mu} {sign:?}"
                    );
                    let twice = full.project(mu, sign).reconstruct(mu, sign);
                    assert_eq!(twice, full.scale(T::from_f64(2.0)), "mu {mu} {sign:?}");
                }
                let plus = psi
                    .project(mu, ProjectorSign::Plus)
                    .reconstruct(mu, ProjectorSign::Plus);
                let minus = psi
                    .project(mu, ProjectorSign::Minus)
                    .reconstruct(mu, ProjectorSign::Minus);
                let sum = plus + minus - psi.scale(T::from_f64(2.0));
                assert!(sum.max_abs_component().to_f64() < 8.0 * eps::<T>());
            }
        }
    }

    #[test]
    fn projection_f32() {
        check_projection::<f32>();
    }

    #[test]
    fn projection_f64() {
        check_projection::<f64>();
    }

    /// Projection commutes with colour matrices, so U acts on the 12-real half spinor:
    /// reconstruct(U project(ψ)) = (1 ± γ_μ) U ψ.
    fn check_colour_commutes<T: Real>() {
        let mut rng = Lcg::new(52);
        let tol = 32.0 * eps::<T>();
        for _ in 0..10 {
            let (u, psi) = (rng.matrix::<T>(), rng.spinor::<T>());
            for mu in 0..4 {
                for sign in SIGNS {
                    let a = (u * psi).project(mu, sign);
                    let b = u * psi.project(mu, sign);
                    assert!((a - b).max_abs_component().to_f64() < tol);
                    let full = b.reconstruct(mu, sign);
                    let dense = dense_projector::<T>(mu, sign) * (u * psi);
                    assert!((full - dense).max_abs_component().to_f64() < tol);
                }
            }
        }
    }

    #[test]
    fn colour_commutes_f32() {
        check_colour_commutes::<f32>();
    }

    #[test]
    fn colour_commutes_f64() {
        check_colour_commutes::<f64>();
    }

    /// (1 ± γ_5)/2 against the dense matrix, and P_+ + P_- = 1.
    fn check_chiral<T: Real>() {
        let mut rng = Lcg::new(53);
        let psi = rng.spinor::<T>();
        let g5 = Gamma::Five.matrix::<T>();
        let half = num_complex::Complex::new(T::from_f64(0.5), T::zero());
        let one = SpinMatrix::identity();
        let p_plus = (one + g5).scale_complex(half);
        let p_minus = (one - g5).scale_complex(half);
        assert_eq!(psi.chiral_project(ProjectorSign::Plus), p_plus * psi);
        assert_eq!(psi.chiral_project(ProjectorSign::Minus), p_minus * psi);
        assert_eq!(
            psi.chiral_project(ProjectorSign::Plus) + psi.chiral_project(ProjectorSign::Minus),
            psi
        );
        assert_eq!(ProjectorSign::Minus.value::<T>(), -T::one());
    }

    #[test]
    fn chiral_f32() {
        check_chiral::<f32>();
    }

    #[test]
    fn chiral_f64() {
        check_chiral::<f64>();
    }
}
