//! Spin algebra for the generators: the DeGrand–Rossi γ matrices as sparse tables, and
//! the lowering of a projector (1 ± γ_μ) to half-spinor arithmetic.
//!
//! In the DeGrand–Rossi basis every γ_μ has exactly one non-zero entry per row, a phase
//! in {1, i, −1, −i}, and maps the upper spins {0, 1} to the lower spins {2, 3}:
//!
//! ```text
//! γ_x = [ 0  0  0  i ]   γ_y = [ 0  0  0 −1 ]   γ_z = [ 0  0  i  0 ]   γ_t = [ 0 0 1 0 ]
//!       [ 0  0  i  0 ]         [ 0  0  1  0 ]         [ 0  0  0 −i ]         [ 0 0 0 1 ]
//!       [ 0 −i  0  0 ]         [ 0  1  0  0 ]         [−i  0  0  0 ]         [ 1 0 0 0 ]
//!       [−i  0  0  0 ]         [−1  0  0  0 ]         [ 0  i  0  0 ]         [ 0 1 0 0 ]
//! ```
//!
//! with γ5 = γ_x γ_y γ_z γ_t = diag(1, 1, −1, −1) (MILC's sign; QUDA's γ5 is the negative).

/// A phase in {1, i, −1, −i}: the complex number `re + i·im` with re, im ∈ {−1, 0, 1}.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Phase {
    /// Real part.
    pub re: i32,
    /// Imaginary part.
    pub im: i32,
}

impl Phase {
    /// The phase 1.
    pub const ONE: Phase = Phase { re: 1, im: 0 };
    /// The phase i.
    pub const I: Phase = Phase { re: 0, im: 1 };

    /// The product of two phases, (a + ib)(c + id) = (ac − bd) + i(ad + bc).
    pub const fn mul(self, o: Phase) -> Phase {
        Phase {
            re: self.re * o.re - self.im * o.im,
            im: self.re * o.im + self.im * o.re,
        }
    }

    /// The phase times a real sign ±1.
    pub const fn times(self, sign: i32) -> Phase {
        Phase {
            re: self.re * sign,
            im: self.im * sign,
        }
    }
}

/// One row of a sparse γ matrix: (γ_μ)_{s, col} = phase, all other entries of row s zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GammaRow {
    /// The column of the non-zero entry.
    pub col: usize,
    /// The entry.
    pub phase: Phase,
}

const fn row(col: usize, re: i32, im: i32) -> GammaRow {
    GammaRow {
        col,
        phase: Phase { re, im },
    }
}

/// The DeGrand–Rossi γ_μ, μ = x, y, z, t, row by row (see the module docs).
pub const GAMMA: [[GammaRow; 4]; 4] = [
    [row(3, 0, 1), row(2, 0, 1), row(1, 0, -1), row(0, 0, -1)],
    [row(3, -1, 0), row(2, 1, 0), row(1, 1, 0), row(0, -1, 0)],
    [row(2, 0, 1), row(3, 0, -1), row(0, 0, -1), row(1, 0, 1)],
    [row(2, 1, 0), row(3, 1, 0), row(0, 1, 0), row(1, 1, 0)],
];

/// The lowering of P = (1 + sign · γ_μ) acting on a 4-spin field to half-spinor
/// arithmetic (P has rank 2).
///
/// Project: h_r = ψ_r + (sign · g_r) ψ_{c(r)} for the upper rows r = 0, 1, where row r of
/// γ_μ has its entry g_r in column c(r) ∈ {2, 3}. The SU(3) product then acts on the
/// 2 × 3 half spinor h (12 reals instead of 24). Reconstruct: (Pψ)_r = h_r for r = 0, 1
/// and (Pψ)_s = (sign · g_s) h_{c(s)} for s = 2, 3, because γ_μ² = 1 gives c(c(s)) = s and
/// g_s g_{c(s)} = 1, so (sign · g_s) h_{c(s)} = (sign · g_s) ψ_{c(s)} + ψ_s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProjectorPlan {
    /// Direction μ.
    pub mu: usize,
    /// The sign in 1 ± γ_μ.
    pub sign: i32,
    /// For half row r = 0, 1: (the partner spin c(r), the phase sign · g_r).
    pub project: [(usize, Phase); 2],
    /// For lower spin s = 2, 3: (the half row c(s), the phase sign · g_s).
    pub reconstruct: [(usize, Phase); 2],
}

impl ProjectorPlan {
    /// The plan of (1 + sign · γ_μ) (sign = ±1, μ < 4).
    pub const fn new(mu: usize, sign: i32) -> Self {
        let g = GAMMA[mu];
        ProjectorPlan {
            mu,
            sign,
            project: [
                (g[0].col, g[0].phase.times(sign)),
                (g[1].col, g[1].phase.times(sign)),
            ],
            reconstruct: [
                (g[2].col, g[2].phase.times(sign)),
                (g[3].col, g[3].phase.times(sign)),
            ],
        }
    }
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // matrices written with explicit indices
mod tests {
    use super::*;

    type Dense = [[Phase; 4]; 4];
    const ZERO: Phase = Phase { re: 0, im: 0 };

    fn dense(mu: usize) -> Dense {
        let mut m = [[ZERO; 4]; 4];
        for (s, r) in GAMMA[mu].iter().enumerate() {
            m[s][r.col] = r.phase;
        }
        m
    }

    fn mul(a: &Dense, b: &Dense) -> Dense {
        let mut m = [[ZERO; 4]; 4];
        for i in 0..4 {
            for j in 0..4 {
                let (mut re, mut im) = (0, 0);
                for k in 0..4 {
                    let p = a[i][k].mul(b[k][j]);
                    re += p.re;
                    im += p.im;
                }
                m[i][j] = Phase { re, im };
            }
        }
        m
    }

    /// Clifford algebra {γ_μ, γ_ν} = 2 δ_μν, hermiticity, and γ5 = diag(1, 1, −1, −1).
    #[test]
    fn tables_are_the_degrand_rossi_gammas() {
        for mu in 0..4 {
            for nu in 0..4 {
                let (ab, ba) = (mul(&dense(mu), &dense(nu)), mul(&dense(nu), &dense(mu)));
                for i in 0..4 {
                    for j in 0..4 {
                        let want = if mu == nu && i == j { 2 } else { 0 };
                        assert_eq!(ab[i][j].re + ba[i][j].re, want);
                        assert_eq!(ab[i][j].im + ba[i][j].im, 0);
                    }
                }
            }
            let g = dense(mu);
            for i in 0..4 {
                for j in 0..4 {
                    assert_eq!(g[i][j].re, g[j][i].re);
                    assert_eq!(g[i][j].im, -g[j][i].im, "γ_{mu} is hermitian");
                }
            }
        }
        let g5 = mul(&mul(&dense(0), &dense(1)), &mul(&dense(2), &dense(3)));
        for i in 0..4 {
            for j in 0..4 {
                let want = if i != j {
                    0
                } else if i < 2 {
                    1
                } else {
                    -1
                };
                assert_eq!((g5[i][j].re, g5[i][j].im), (want, 0));
            }
        }
    }

    /// Reconstructing the projected half spinor gives P ψ row by row, for basis
    /// vectors ψ = e_k (so the plan equals the dense 1 ± γ_μ exactly).
    #[test]
    fn projector_plan_reproduces_the_dense_projector() {
        for mu in 0..4 {
            for sign in [-1, 1] {
                let plan = ProjectorPlan::new(mu, sign);
                let g = dense(mu);
                for k in 0..4 {
                    // h_r for ψ = e_k.
                    let h: Vec<Phase> = (0..2)
                        .map(|r| {
                            let (c, ph) = plan.project[r];
                            let own = if r == k { Phase::ONE } else { ZERO };
                            let other = if c == k { ph } else { ZERO };
                            Phase {
                                re: own.re + other.re,
                                im: own.im + other.im,
                            }
                        })
                        .collect();
                    for s in 0..4 {
                        let got = if s < 2 {
                            h[s]
                        } else {
                            let (c, ph) = plan.reconstruct[s - 2];
                            ph.mul(h[c])
                        };
                        let delta = if s == k { 1 } else { 0 };
                        let want = Phase {
                            re: delta + sign * g[s][k].re,
                            im: sign * g[s][k].im,
                        };
                        assert_eq!(got, want, "mu {mu} sign {sign} row {s} col {k}");
                    }
                }
            }
        }
    }
}
