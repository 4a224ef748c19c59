//! Hand-written reference operators for the integration tests, in plain loops: dense
//! complex matrices (with a dense matrix–vector product and Gaussian elimination) and
//! the textbook 4D Wilson operator. They are the "textbook" implementations other
//! tests compare generated or optimised code against; none of them calls library
//! operator code.
#![allow(dead_code)] // each test binary uses a different subset

use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{BoundaryConditions, Lattice, Parity};
use qdsl_core::math::Gamma;
use qdsl_core::{Complex, Real};
use qdsl_runtime::solver::{LinearOperator, SolverError};

/// Complex f64.
pub type C = Complex<f64>;

/// A small deterministic generator (SplitMix64) with Box–Muller Gaussians, so that the
/// dense test matrices do not depend on library code.
pub struct TestRng(u64);

impl TestRng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        TestRng(seed)
    }

    /// Uniform in (0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// A complex Gaussian with unit variance per real part.
    pub fn gaussian(&mut self) -> C {
        let (u, v) = (self.uniform(), self.uniform());
        let r = (-2.0 * u.ln()).sqrt();
        let phi = 2.0 * std::f64::consts::PI * v;
        C::new(r * phi.cos(), r * phi.sin())
    }
}

/// A dense n × n complex matrix, row-major.
#[derive(Clone, Debug)]
pub struct Dense {
    pub n: usize,
    pub a: Vec<C>,
}

impl Dense {
    /// The matrix with entries f(i, j).
    pub fn from_fn(n: usize, f: impl Fn(usize, usize) -> C) -> Self {
        let mut a = Vec::with_capacity(n * n);
        for i in 0..n {
            for j in 0..n {
                a.push(f(i, j));
            }
        }
        Dense { n, a }
    }

    /// Entry (i, j).
    pub fn at(&self, i: usize, j: usize) -> C {
        self.a[i * self.n + j]
    }

    /// The conjugate transpose.
    pub fn adjoint(&self) -> Self {
        Self::from_fn(self.n, |i, j| self.at(j, i).conj())
    }

    /// The product self · other.
    pub fn mul(&self, other: &Dense) -> Self {
        let n = self.n;
        let mut out = vec![C::new(0.0, 0.0); n * n];
        for i in 0..n {
            for k in 0..n {
                let a = self.at(i, k);
                for j in 0..n {
                    out[i * n + j] += a * other.at(k, j);
                }
            }
        }
        Dense { n, a: out }
    }

    /// y = A x, in f64.
    pub fn matvec(&self, x: &[C]) -> Vec<C> {
        (0..self.n)
            .map(|i| (0..self.n).map(|j| self.at(i, j) * x[j]).sum())
            .collect()
    }

    /// A random unitary matrix: Gram–Schmidt (twice, for orthogonality to rounding)
    /// on the columns of G + b √n 1 with G complex Gaussian. b = 0 gives a
    /// Haar-distributed matrix; b > 0 one closer to the identity (‖G‖ ≈ 2√n).
    pub fn random_unitary(n: usize, rng: &mut TestRng, b: f64) -> Self {
        let bias = b * (n as f64).sqrt();
        let mut cols: Vec<Vec<C>> = (0..n)
            .map(|j| {
                (0..n)
                    .map(|i| rng.gaussian() + if i == j { bias } else { 0.0 })
                    .collect()
            })
            .collect();
        for j in 0..n {
            for _ in 0..2 {
                for k in 0..j {
                    let (done, rest) = cols.split_at_mut(j);
                    let (q, v) = (&done[k], &mut rest[0]);
                    let proj: C = q.iter().zip(v.iter()).map(|(q, v)| q.conj() * v).sum();
                    for (v, q) in v.iter_mut().zip(q) {
                        *v -= proj * q;
                    }
                }
            }
            let norm = cols[j].iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt();
            for z in &mut cols[j] {
                *z /= norm;
            }
        }
        Self::from_fn(n, |i, j| cols[j][i])
    }

    /// U diag(d) V† for unitary U, V: singular values d (condition number
    /// max d / min d).
    pub fn with_singular_values(u: &Dense, d: &[f64], v: &Dense) -> Self {
        let ud = Self::from_fn(u.n, |i, j| u.at(i, j) * d[j]);
        ud.mul(&v.adjoint())
    }

    /// A random non-normal complex matrix M = U Σ (U W)† with singular values Σ spread
    /// geometrically over [1/cond, 1] (condition number exactly `cond`, to rounding),
    /// U Haar-random and W a random unitary near the identity, so that the spectrum of
    /// M (that of Σ W†) lies near the positive real axis, as a Wilson-type operator's
    /// lies in the right half-plane. (With U and V independent the eigenvalues would
    /// surround the origin, where no short-recurrence Krylov method converges.)
    pub fn random_with_condition(n: usize, cond: f64, seed: u64) -> Self {
        let mut rng = TestRng::new(seed);
        let u = Self::random_unitary(n, &mut rng, 0.0);
        let w = Self::random_unitary(n, &mut rng, 3.0);
        Self::with_singular_values(&u, &geometric(n, cond), &u.mul(&w))
    }

    /// A random Hermitian positive-definite matrix U diag(λ) U† with eigenvalues λ
    /// spread geometrically over [1/cond, 1].
    pub fn random_hpd(n: usize, cond: f64, seed: u64) -> Self {
        let mut rng = TestRng::new(seed);
        let u = Self::random_unitary(n, &mut rng, 0.0);
        Self::with_singular_values(&u, &geometric(n, cond), &u)
    }

    /// A + σ 1.
    pub fn shifted(&self, sigma: f64) -> Self {
        Self::from_fn(self.n, |i, j| {
            self.at(i, j)
                + if i == j {
                    C::new(sigma, 0.0)
                } else {
                    C::new(0.0, 0.0)
                }
        })
    }

    /// x solving A x = b by Gaussian elimination with partial pivoting, in f64.
    pub fn solve(&self, b: &[C]) -> Vec<C> {
        let n = self.n;
        let mut a = self.a.clone();
        let mut x = b.to_vec();
        for col in 0..n {
            let pivot = (col..n)
                .max_by(|&p, &q| a[p * n + col].norm().total_cmp(&a[q * n + col].norm()))
                .unwrap();
            if pivot != col {
                for j in 0..n {
                    a.swap(col * n + j, pivot * n + j);
                }
                x.swap(col, pivot);
            }
            let d = a[col * n + col];
            for row in col + 1..n {
                let f = a[row * n + col] / d;
                for j in col..n {
                    let v = a[col * n + j];
                    a[row * n + j] -= f * v;
                }
                let v = x[col];
                x[row] -= f * v;
            }
        }
        for row in (0..n).rev() {
            let s: C = (row + 1..n).map(|j| a[row * n + j] * x[j]).sum();
            x[row] = (x[row] - s) / a[row * n + row];
        }
        x
    }
}

/// n values spread geometrically from 1 down to 1/cond.
pub fn geometric(n: usize, cond: f64) -> Vec<f64> {
    (0..n)
        .map(|i| cond.powf(-(i as f64) / (n - 1) as f64))
        .collect()
}

/// The components of a field as complex f64.
pub fn to_c64<T: Real>(psi: &ColourSpinorField<T>) -> Vec<C> {
    psi.data()
        .iter()
        .map(|z| C::new(z.re.to_f64(), z.im.to_f64()))
        .collect()
}

/// ‖x‖ of a plain vector.
pub fn norm(x: &[C]) -> f64 {
    x.iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt()
}

/// ‖b − A x‖/‖b‖ computed with the dense product in f64.
pub fn dense_residual(a: &Dense, x: &[C], b: &[C]) -> f64 {
    let ax = a.matvec(x);
    let r: Vec<C> = b.iter().zip(&ax).map(|(b, ax)| b - ax).collect();
    norm(&r) / norm(b)
}

/// ‖x − y‖/‖y‖.
pub fn relative_difference(x: &[C], y: &[C]) -> f64 {
    let d: Vec<C> = x.iter().zip(y).map(|(x, y)| x - y).collect();
    norm(&d) / norm(y)
}

/// The layout of the dense tests: a 2⁴ lattice with 4 spins × 3 colours, 192
/// components.
pub fn small_layout() -> SpinorLayout {
    SpinorLayout::wilson(Lattice::new([2; 4]).unwrap(), SiteSubset::Full)
}

/// A dense matrix acting on the flattened components of a colour-spinor field, the
/// product computed in f64 and rounded to the field's precision. With `nan` set, every
/// output carries a NaN (to test breakdown detection).
pub struct DenseOperator {
    pub m: Dense,
    pub m_dagger: Dense,
    pub nan: bool,
}

impl DenseOperator {
    /// The operator of matrix `m`.
    pub fn new(m: Dense) -> Self {
        let m_dagger = m.adjoint();
        DenseOperator {
            m,
            m_dagger,
            nan: false,
        }
    }

    fn product<T: Real>(
        &self,
        m: &Dense,
        out: &mut ColourSpinorField<T>,
        input: &ColourSpinorField<T>,
    ) -> Result<(), SolverError> {
        let len = input.data().len();
        if len != m.n || out.data().len() != m.n {
            let message = format!("dense operator of size {} on a field of {len}", m.n);
            return Err(SolverError::Operator(message.into()));
        }
        let y = m.matvec(&to_c64(input));
        for (o, y) in out.data_mut().iter_mut().zip(y) {
            *o = Complex::new(T::from_f64(y.re), T::from_f64(y.im));
        }
        if self.nan {
            out.data_mut()[7] = Complex::new(T::nan(), T::zero());
        }
        Ok(())
    }
}

impl<T: Real> LinearOperator<ColourSpinorField<T>> for DenseOperator {
    fn apply(
        &self,
        out: &mut ColourSpinorField<T>,
        input: &ColourSpinorField<T>,
    ) -> Result<(), SolverError> {
        self.product(&self.m, out, input)
    }

    fn apply_dagger(
        &self,
        out: &mut ColourSpinorField<T>,
        input: &ColourSpinorField<T>,
    ) -> Result<(), SolverError> {
        self.product(&self.m_dagger, out, input)
    }

    fn flops_per_apply(&self) -> u64 {
        8 * (self.m.n * self.m.n) as u64
    }
}

/// The textbook Wilson operator M = 1 − κ H on a full-lattice Wilson field, with
///
/// (H ψ)(x) = Σ_μ [(1 − s γ_μ) U_μ(x) ψ(x+μ̂) b(x,+μ) + (1 + s γ_μ) U_μ†(x−μ̂) ψ(x−μ̂) b(x,−μ)],
///
/// s = +1 for M and s = −1 for M† = γ5 M γ5 (b: the boundary sign of the hop). Plain
/// loops over sites, directions, spins and colours; γ_μ from qdsl-core's DeGrand–Rossi
/// tables as dense matrices. Links and fields are stored in precision T; the arithmetic
/// runs in f64 and the result is rounded to T.
pub struct WilsonOperator<T: Real> {
    pub gauge: GaugeField<T>,
    pub kappa: f64,
    pub boundary: BoundaryConditions,
}

impl<T: Real> WilsonOperator<T> {
    /// (H_s ψ)(x) on the full lattice, ψ given in checkerboard order (even sites first,
    /// [σ][a] per site) as complex f64: s = +1 for H, −1 for H† = γ5 H γ5. Index loops
    /// on purpose: they mirror the formula's indices.
    #[allow(clippy::needless_range_loop)]
    pub fn hop(&self, psi: &[C], s: f64) -> Vec<C> {
        let lat = *self.gauge.lattice();
        let gammas: Vec<[[C; 4]; 4]> = Gamma::DIRECTIONS
            .iter()
            .map(|g| g.matrix::<f64>().0)
            .collect();
        let get = |cb: usize, spin: usize, colour: usize| psi[(cb * 4 + spin) * 3 + colour];
        let mut result = vec![C::new(0.0, 0.0); psi.len()];
        for cb in 0..lat.volume() {
            let x = lat.coords_of_cb(cb);
            let mut hop = [[C::new(0.0, 0.0); 3]; 4];
            for mu in 0..4 {
                for (dir, proj) in [(1isize, -s), (-1isize, s)] {
                    let (y, _) = lat.shift(x, mu, dir);
                    let sign = self.boundary.hop_sign(&lat, x, mu, dir);
                    let ycb = lat.cb_index(y);
                    // The link U_μ(x) forwards, U_μ†(x−μ̂) backwards, in f64.
                    let link = |a: usize, b: usize| -> C {
                        let z = if dir == 1 {
                            self.gauge.link_at(x, mu).0[a][b]
                        } else {
                            self.gauge.link_at(y, mu).0[b][a].conj()
                        };
                        C::new(z.re.to_f64(), z.im.to_f64())
                    };
                    // (U ψ(y))_{σ,a}
                    let mut u_psi = [[C::new(0.0, 0.0); 3]; 4];
                    for spin in 0..4 {
                        for a in 0..3 {
                            for b in 0..3 {
                                u_psi[spin][a] += link(a, b) * get(ycb, spin, b);
                            }
                        }
                    }
                    // (1 + proj γ_μ) U ψ(y), times the boundary sign.
                    for spin in 0..4 {
                        for a in 0..3 {
                            let mut v = u_psi[spin][a];
                            for tau in 0..4 {
                                v += gammas[mu][spin][tau] * proj * u_psi[tau][a];
                            }
                            hop[spin][a] += v * sign;
                        }
                    }
                }
            }
            for spin in 0..4 {
                for a in 0..3 {
                    result[(cb * 4 + spin) * 3 + a] = hop[spin][a];
                }
            }
        }
        result
    }

    /// out = (1 − κ H_s) ψ with s = +1 (M) or −1 (M†).
    fn wilson(
        &self,
        out: &mut ColourSpinorField<T>,
        psi: &ColourSpinorField<T>,
        s: f64,
    ) -> Result<(), SolverError> {
        let layout = SpinorLayout::wilson(*self.gauge.lattice(), SiteSubset::Full);
        layout
            .expect_same(psi.layout())
            .map_err(SolverError::field)?;
        layout
            .expect_same(out.layout())
            .map_err(SolverError::field)?;
        let psi = to_c64(psi);
        let h = self.hop(&psi, s);
        for ((o, p), h) in out.data_mut().iter_mut().zip(psi).zip(h) {
            let r = p - h * self.kappa;
            *o = Complex::new(T::from_f64(r.re), T::from_f64(r.im));
        }
        Ok(())
    }
}

impl<T: Real> LinearOperator<ColourSpinorField<T>> for WilsonOperator<T> {
    fn apply(
        &self,
        out: &mut ColourSpinorField<T>,
        input: &ColourSpinorField<T>,
    ) -> Result<(), SolverError> {
        self.wilson(out, input, 1.0)
    }

    fn apply_dagger(
        &self,
        out: &mut ColourSpinorField<T>,
        input: &ColourSpinorField<T>,
    ) -> Result<(), SolverError> {
        self.wilson(out, input, -1.0)
    }

    /// 1320 flops per site for H (the standard count) plus 48 for 1 − κ H.
    fn flops_per_apply(&self) -> u64 {
        1368 * self.gauge.lattice().volume() as u64
    }
}

/// The even-odd preconditioned Wilson operator on the even sites, the Schur complement
///
/// M̂ = 1 − κ² H_eo H_oe,  M̂† = 1 − κ² (H†)_eo (H†)_oe,
///
/// built from the textbook hop of [`WilsonOperator`] (ψ_e embedded in a full field with
/// zero odd sites, hopped twice, restricted to the even sites). With
/// b̂_e = b_e + κ H_eo b_o, the solution of M x = b is x_e = M̂⁻¹ b̂_e,
/// x_o = b_o + κ H_oe x_e.
pub struct WilsonEvenOdd<T: Real>(pub WilsonOperator<T>);

impl<T: Real> WilsonEvenOdd<T> {
    /// out_e = (1 − κ² (H_s)_eo (H_s)_oe) ψ_e.
    fn schur(
        &self,
        out: &mut ColourSpinorField<T>,
        psi: &ColourSpinorField<T>,
        s: f64,
    ) -> Result<(), SolverError> {
        let lat = *self.0.gauge.lattice();
        let even = SpinorLayout::wilson(lat, SiteSubset::Single(Parity::Even));
        even.expect_same(psi.layout()).map_err(SolverError::field)?;
        even.expect_same(out.layout()).map_err(SolverError::field)?;
        // Even sites come first in checkerboard order.
        let half = even.len();
        let mut full = to_c64(psi);
        full.resize(2 * half, C::new(0.0, 0.0));
        let mut once = self.0.hop(&full, s);
        once[..half].fill(C::new(0.0, 0.0));
        let twice = self.0.hop(&once, s);
        let k2 = self.0.kappa * self.0.kappa;
        for ((o, p), h) in out.data_mut().iter_mut().zip(&full[..half]).zip(twice) {
            let r = p - h * k2;
            *o = Complex::new(T::from_f64(r.re), T::from_f64(r.im));
        }
        Ok(())
    }

    /// b̂_e = b_e + κ H_eo b_o for a full-lattice source b.
    pub fn prepare(&self, b: &ColourSpinorField<f64>) -> ColourSpinorField<f64> {
        let lat = *self.0.gauge.lattice();
        let half = lat.half_volume() * 12;
        let mut odd_only = to_c64(b);
        odd_only[..half].fill(C::new(0.0, 0.0));
        let h = self.0.hop(&odd_only, 1.0);
        let data = b.data()[..half]
            .iter()
            .zip(h)
            .map(|(b, h)| b + h * self.0.kappa)
            .collect();
        let even = SpinorLayout::wilson(lat, SiteSubset::Single(Parity::Even));
        ColourSpinorField::from_data(even, data).unwrap()
    }

    /// The full solution x = (x_e, b_o + κ H_oe x_e).
    pub fn reconstruct(
        &self,
        x_even: &ColourSpinorField<f64>,
        b: &ColourSpinorField<f64>,
    ) -> ColourSpinorField<f64> {
        let half = x_even.data().len();
        let mut full = to_c64(x_even);
        full.resize(2 * half, C::new(0.0, 0.0));
        let h = self.0.hop(&full, 1.0);
        for k in half..2 * half {
            full[k] = b.data()[k] + h[k] * self.0.kappa;
        }
        ColourSpinorField::from_data(*b.layout(), full).unwrap()
    }
}

impl<T: Real> LinearOperator<ColourSpinorField<T>> for WilsonEvenOdd<T> {
    fn apply(
        &self,
        out: &mut ColourSpinorField<T>,
        input: &ColourSpinorField<T>,
    ) -> Result<(), SolverError> {
        self.schur(out, input, 1.0)
    }

    fn apply_dagger(
        &self,
        out: &mut ColourSpinorField<T>,
        input: &ColourSpinorField<T>,
    ) -> Result<(), SolverError> {
        self.schur(out, input, -1.0)
    }

    /// Two hops on half the lattice each (1320 flops per site) plus 48 per even site.
    fn flops_per_apply(&self) -> u64 {
        (1320 + 24) * self.0.gauge.lattice().volume() as u64
    }
}
