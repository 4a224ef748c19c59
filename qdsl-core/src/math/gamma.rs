//! The Euclidean gamma matrices in the DeGrand–Rossi basis, and σ_μν.
//!
//! The basis of MILC and of QUDA's external interface (DESIGN.md), as listed in MILC's
//! `gammatypes.h` (rows top to bottom):
//!
//! ```text
//!  γ_x             γ_y             γ_z             γ_t             γ_5
//!  0  0  0  i      0  0  0 -1      0  0  i  0      0  0  1  0      1  0  0  0
//!  0  0  i  0      0  0  1  0      0  0  0 -i      0  0  0  1      0  1  0  0
//!  0 -i  0  0      0  1  0  0     -i  0  0  0      1  0  0  0      0  0 -1  0
//! -i  0  0  0     -1  0  0  0      0  i  0  0      0  1  0  0      0  0  0 -1
//! ```
//!
//! They are hermitian, square to 1 and anticommute, {γ_μ, γ_ν} = 2δ_μν, and
//! γ_5 = γ_x γ_y γ_z γ_t = diag(1, 1, −1, −1) (MILC's sign; QUDA's internal γ_5 has the
//! opposite sign). Every γ_μ has the block form [[0, B_μ], [B_μ†, 0]] with B_μ a 2×2
//! signed permutation, which is what spin projection (see [`super::projector`]) uses.

use super::{SpinMatrix, Spinor};
use crate::Real;
use num_complex::Complex;
use Phase::{MinusI, MinusOne, One, I};

/// A power of i, iᵏ (k = 0..4): the non-zero entries of the gamma matrices.
///
/// Multiplying by a phase only swaps and negates real and imaginary parts, so it is exact
/// in floating point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// +1 = i⁰.
    One,
    /// +i = i¹.
    I,
    /// −1 = i².
    MinusOne,
    /// −i = i³.
    MinusI,
}

impl Phase {
    /// The phase iᵏ (k taken mod 4).
    pub const fn from_power(k: u8) -> Self {
        match k % 4 {
            0 => Phase::One,
            1 => Phase::I,
            2 => Phase::MinusOne,
            _ => Phase::MinusI,
        }
    }

    /// The exponent k of iᵏ, in 0..4.
    pub const fn power(self) -> u8 {
        match self {
            Phase::One => 0,
            Phase::I => 1,
            Phase::MinusOne => 2,
            Phase::MinusI => 3,
        }
    }

    /// The product iᵏ iˡ = i^{k+l}.
    pub const fn mul(self, other: Phase) -> Phase {
        Phase::from_power(self.power() + other.power())
    }

    /// The complex conjugate (iᵏ)* = i^{−k}.
    pub const fn conj(self) -> Phase {
        Phase::from_power(4 - self.power())
    }

    /// The negative −iᵏ = i^{k+2}.
    pub const fn neg(self) -> Phase {
        Phase::from_power(self.power() + 2)
    }

    /// The phase as a complex number.
    pub fn to_complex<T: Real>(self) -> Complex<T> {
        self.apply(Complex::new(T::one(), T::zero()))
    }

    /// iᵏ z, exactly: 1·(a+ib) = a+ib, i·(a+ib) = −b+ia, −1·(a+ib) = −a−ib,
    /// −i·(a+ib) = b−ia.
    pub fn apply<T: Real>(self, z: Complex<T>) -> Complex<T> {
        match self {
            Phase::One => z,
            Phase::I => Complex::new(-z.im, z.re),
            Phase::MinusOne => -z,
            Phase::MinusI => Complex::new(z.im, -z.re),
        }
    }
}

/// A 4×4 matrix with exactly one non-zero entry per row and column, a [`Phase`]:
/// `Γ_{s, column[s]} = phase[s]`. Gamma matrices and their products are of this form, so
/// `(Γψ)_s = phase[s] ψ_{column[s]}` costs no multiplications; the code generator reads
/// the tables directly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SignedPermutation {
    /// Column of the non-zero entry of each row.
    pub column: [usize; 4],
    /// Value of the non-zero entry of each row.
    pub phase: [Phase; 4],
}

impl SignedPermutation {
    /// The identity.
    pub const IDENTITY: Self = Self {
        column: [0, 1, 2, 3],
        phase: [Phase::One; 4],
    };

    /// The product AB: `(AB)_{s, b.column[a.column[s]]} = a.phase[s] · b.phase[a.column[s]]`.
    pub const fn mul(&self, b: &Self) -> Self {
        let mut column = [0; 4];
        let mut phase = [Phase::One; 4];
        let mut s = 0;
        while s < 4 {
            let k = self.column[s];
            column[s] = b.column[k];
            phase[s] = self.phase[s].mul(b.phase[k]);
            s += 1;
        }
        Self { column, phase }
    }

    /// The product with a phase, c·Γ.
    pub const fn times(&self, c: Phase) -> Self {
        let mut phase = self.phase;
        let mut s = 0;
        while s < 4 {
            phase[s] = phase[s].mul(c);
            s += 1;
        }
        Self {
            column: self.column,
            phase,
        }
    }

    /// Γψ: `(Γψ)_s = phase[s] ψ_{column[s]}`, exact (no rounding).
    pub fn apply<T: Real>(&self, psi: &Spinor<T>) -> Spinor<T> {
        Spinor::from_fn(|s, a| self.phase[s].apply(psi[self.column[s]][a]))
    }

    /// The dense 4×4 matrix.
    pub fn to_matrix<T: Real>(&self) -> SpinMatrix<T> {
        SpinMatrix::from_fn(|s, t| {
            if self.column[s] == t {
                self.phase[s].to_complex()
            } else {
                Complex::new(T::zero(), T::zero())
            }
        })
    }
}

/// One of the five DeGrand–Rossi gamma matrices (see the [module documentation](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Gamma {
    /// γ_x = γ_0 (direction μ = 0).
    X,
    /// γ_y = γ_1 (μ = 1).
    Y,
    /// γ_z = γ_2 (μ = 2).
    Z,
    /// γ_t = γ_3 (μ = 3).
    T,
    /// γ_5 = γ_x γ_y γ_z γ_t = diag(1, 1, −1, −1).
    Five,
}

const GAMMA_X: SignedPermutation = SignedPermutation {
    column: [3, 2, 1, 0],
    phase: [I, I, MinusI, MinusI],
};
const GAMMA_Y: SignedPermutation = SignedPermutation {
    column: [3, 2, 1, 0],
    phase: [MinusOne, One, One, MinusOne],
};
const GAMMA_Z: SignedPermutation = SignedPermutation {
    column: [2, 3, 0, 1],
    phase: [I, MinusI, MinusI, I],
};
const GAMMA_T: SignedPermutation = SignedPermutation {
    column: [2, 3, 0, 1],
    phase: [One, One, One, One],
};
const GAMMA_5: SignedPermutation = SignedPermutation {
    column: [0, 1, 2, 3],
    phase: [One, One, MinusOne, MinusOne],
};

impl Gamma {
    /// γ_μ for the directions μ = 0, 1, 2, 3 (x, y, z, t), indexable by μ.
    pub const DIRECTIONS: [Gamma; 4] = [Gamma::X, Gamma::Y, Gamma::Z, Gamma::T];

    /// The exact table of the matrix.
    pub const fn table(self) -> SignedPermutation {
        match self {
            Gamma::X => GAMMA_X,
            Gamma::Y => GAMMA_Y,
            Gamma::Z => GAMMA_Z,
            Gamma::T => GAMMA_T,
            Gamma::Five => GAMMA_5,
        }
    }

    /// The dense 4×4 matrix.
    pub fn matrix<T: Real>(self) -> SpinMatrix<T> {
        self.table().to_matrix()
    }

    /// γψ, exact: `(γψ)_s = phase[s] ψ_{column[s]}`.
    pub fn apply<T: Real>(self, psi: &Spinor<T>) -> Spinor<T> {
        self.table().apply(psi)
    }
}

/// σ_μν = (i/2)[γ_μ, γ_ν] (for μ ≠ ν it equals iγ_μγ_ν; σ_μμ = 0). In this basis
/// σ_xy = diag(1, −1, 1, −1) and σ_zt = diag(−1, 1, 1, −1). σ_μν is hermitian, σ_νμ = −σ_μν, and commutes with γ_5
/// (it is block diagonal in the two chiralities). Computed exactly (entries 0, ±1, ±i).
pub fn sigma<T: Real>(mu: Gamma, nu: Gamma) -> SpinMatrix<T> {
    let half_i = Complex::new(T::zero(), T::from_f64(0.5));
    mu.matrix::<T>()
        .commutator(&nu.matrix())
        .scale_complex(half_i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::test_support::Lcg;

    /// The matrices as printed in MILC's gammatypes.h, as (re, im) per entry.
    fn milc_matrix(g: Gamma) -> SpinMatrix<f64> {
        let (o, p, m, i, j) = ((0.0, 0.0), (1.0, 0.0), (-1.0, 0.0), (0.0, 1.0), (0.0, -1.0));
        let rows = match g {
            Gamma::X => [[o, o, o, i], [o, o, i, o], [o, j, o, o], [j, o, o, o]],
            Gamma::Y => [[o, o, o, m], [o, o, p, o], [o, p, o, o], [m, o, o, o]],
            Gamma::Z => [[o, o, i, o], [o, o, o, j], [j, o, o, o], [o, i, o, o]],
            Gamma::T => [[o, o, p, o], [o, o, o, p], [p, o, o, o], [o, p, o, o]],
            Gamma::Five => [[p, o, o, o], [o, p, o, o], [o, o, m, o], [o, o, o, m]],
        };
        SpinMatrix::from_fn(|s, t| Complex::new(rows[s][t].0, rows[s][t].1))
    }

    fn diag(d: [f64; 4]) -> SpinMatrix<f64> {
        SpinMatrix::from_fn(|s, t| Complex::new(if s == t { d[s] } else { 0.0 }, 0.0))
    }

    const ALL: [Gamma; 5] = [Gamma::X, Gamma::Y, Gamma::Z, Gamma::T, Gamma::Five];

    #[test]
    fn tables_are_milc_degrand_rossi() {
        for g in ALL {
            assert_eq!(g.matrix::<f64>(), milc_matrix(g), "{g:?}");
        }
    }

    /// Hermiticity, γ² = 1, {γ_μ, γ_ν} = 2δ_μν (γ_5 included), and
    /// γ_5 = γ_x γ_y γ_z γ_t = diag(1, 1, −1, −1), by dense products and by the exact
    /// table product.
    #[test]
    fn clifford_algebra() {
        let one = SpinMatrix::<f64>::identity();
        for (a, &ga) in ALL.iter().enumerate() {
            let m = ga.matrix::<f64>();
            assert_eq!(m.adjoint(), m, "{ga:?} hermitian");
            assert_eq!(m * m, one, "{ga:?}² = 1");
            assert_eq!(ga.table().mul(&ga.table()), SignedPermutation::IDENTITY);
            for (b, &gb) in ALL.iter().enumerate() {
                let expect = if a == b {
                    one + one
                } else {
                    SpinMatrix::zero()
                };
                assert_eq!(m.anticommutator(&gb.matrix()), expect, "{{{ga:?}, {gb:?}}}");
            }
        }
        let [x, y, z, t] = Gamma::DIRECTIONS.map(|g| g.matrix::<f64>());
        assert_eq!(x * y * z * t, diag([1.0, 1.0, -1.0, -1.0]));
        let product = Gamma::X
            .table()
            .mul(&Gamma::Y.table())
            .mul(&Gamma::Z.table())
            .mul(&Gamma::T.table());
        assert_eq!(product, Gamma::Five.table());
    }

    /// γ_μ = [[0, B], [B†, 0]]: rows 0, 1 read spins 2, 3 and rows 2, 3 read spins 0, 1
    /// (what the half-spinor projection relies on).
    #[test]
    fn directions_are_off_diagonal_in_chirality() {
        for g in Gamma::DIRECTIONS {
            let c = g.table().column;
            assert!(c[0] >= 2 && c[1] >= 2 && c[2] < 2 && c[3] < 2, "{g:?}");
        }
    }

    /// Applying the table equals the dense product exactly, for f32 and f64.
    fn check_apply<T: Real>() {
        let mut rng = Lcg::new(41);
        let psi = rng.spinor::<T>();
        for g in ALL {
            assert_eq!(g.apply(&psi), g.matrix::<T>() * psi, "{g:?}");
        }
        // γ_μ γ_μ ψ = ψ exactly.
        for g in ALL {
            assert_eq!(g.apply(&g.apply(&psi)), psi);
        }
    }

    #[test]
    fn apply_f32() {
        check_apply::<f32>();
    }

    #[test]
    fn apply_f64() {
        check_apply::<f64>();
    }

    #[test]
    fn phase_arithmetic() {
        let z = Complex::new(2.0, -3.0);
        for k in 0..4u8 {
            let p = Phase::from_power(k);
            let c = Complex::new(0.0, 1.0).powu(k as u32);
            assert_eq!(p.to_complex::<f64>(), c);
            assert_eq!(p.apply(z), c * z);
            assert_eq!(p.conj().to_complex::<f64>(), c.conj());
            assert_eq!(p.neg().to_complex::<f64>(), -c);
            for l in 0..4u8 {
                let q = Phase::from_power(l);
                assert_eq!(p.mul(q).to_complex::<f64>(), c * q.to_complex::<f64>());
            }
        }
    }

    /// σ_μν: hand-computed σ_xy and σ_zt (from the MILC matrices: γ_xγ_y =
    /// diag(−i, i, −i, i), γ_zγ_t = diag(i, −i, −i, i)), hermitian, antisymmetric in μν,
    /// equal to iγ_μγ_ν for μ ≠ ν, and commuting with γ_5.
    #[test]
    fn sigma_munu() {
        assert_eq!(
            sigma::<f64>(Gamma::X, Gamma::Y),
            diag([1.0, -1.0, 1.0, -1.0])
        );
        assert_eq!(
            sigma::<f64>(Gamma::Z, Gamma::T),
            diag([-1.0, 1.0, 1.0, -1.0])
        );
        let g5 = Gamma::Five.matrix::<f64>();
        let i = Complex::new(0.0, 1.0);
        for mu in Gamma::DIRECTIONS {
            assert_eq!(sigma::<f64>(mu, mu), SpinMatrix::zero());
            for nu in Gamma::DIRECTIONS {
                let s = sigma::<f64>(mu, nu);
                assert_eq!(s.adjoint(), s);
                assert_eq!(sigma::<f64>(nu, mu), -s);
                assert_eq!(s.commutator(&g5), SpinMatrix::zero());
                if mu != nu {
                    assert_eq!(s, (mu.matrix() * nu.matrix()).scale_complex(i));
                    assert_eq!(s * s, SpinMatrix::identity());
                    let table = mu.table().mul(&nu.table()).times(Phase::I);
                    assert_eq!(table.to_matrix::<f64>(), s);
                }
            }
        }
    }
}
