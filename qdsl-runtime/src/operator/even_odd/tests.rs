//! The generic Schur complement against dense linear algebra: on a 2³×4 lattice the full
//! operator M is built as a dense matrix from hand-written operators (the textbook hops
//! of `operator::tests`, the clover term, the mass), and M̂ = M_pp − M_pq M_qq⁻¹ M_qp is
//! formed densely (Gaussian elimination for M_qq⁻¹); then prepare + solve + reconstruct
//! must give M ψ = η, checked with the dense M.

use crate::operator::tests::{textbook_staggered_hop, textbook_wilson_hop};
use crate::operator::{EvenOddBlocks, EvenOddClover, EvenOddStaggered, EvenOddWilson};
use crate::operator::{HopBlocks, Schur, StaggeredLinks};
use crate::solver::{cg, cgnr, LinearOperator, SolverError, SolverField, SolverOptions};
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::gauge::clover_field;
use qdsl_core::lattice::{BoundaryConditions, Lattice, Parity};
use qdsl_core::Complex;

type C = Complex<f64>;
type Field = ColourSpinorField<f64>;

fn lattice() -> Lattice {
    Lattice::new([2, 2, 2, 4]).expect("valid lattice")
}

/// A dense matrix, row-major (shared with the SAP tests).
pub(crate) struct Dense {
    pub(crate) n: usize,
    pub(crate) a: Vec<C>,
}

impl Dense {
    /// The matrix of the linear map `apply` on vectors of length n (column j = apply(e_j)).
    pub(crate) fn of(n: usize, apply: impl Fn(&[C]) -> Vec<C>) -> Self {
        let mut a = vec![C::new(0.0, 0.0); n * n];
        for j in 0..n {
            let mut e = vec![C::new(0.0, 0.0); n];
            e[j] = C::new(1.0, 0.0);
            for (i, v) in apply(&e).into_iter().enumerate() {
                a[i * n + j] = v;
            }
        }
        Self { n, a }
    }

    /// The sub-matrix of rows `rows` and columns `cols`.
    pub(crate) fn block(&self, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>) -> Self {
        let n = rows.len();
        let mut a = Vec::with_capacity(n * cols.len());
        for i in rows {
            a.extend_from_slice(&self.a[i * self.n + cols.start..i * self.n + cols.end]);
        }
        Self { n, a }
    }

    /// The conjugate transpose.
    pub(crate) fn adjoint(&self) -> Self {
        let n = self.n;
        let a = (0..n * n)
            .map(|k| self.a[(k % n) * n + k / n].conj())
            .collect();
        Self { n, a }
    }

    pub(crate) fn mul(&self, x: &[C]) -> Vec<C> {
        self.a
            .chunks(x.len())
            .map(|row| row.iter().zip(x).map(|(a, b)| a * b).sum())
            .collect()
    }

    /// x with self · x = b, by Gaussian elimination with partial pivoting.
    pub(crate) fn solve(&self, b: &[C]) -> Vec<C> {
        let n = self.n;
        let (mut a, mut x) = (self.a.clone(), b.to_vec());
        for k in 0..n {
            let pivot = (k..n)
                .max_by(|&i, &j| a[i * n + k].norm().total_cmp(&a[j * n + k].norm()))
                .expect("a row");
            for j in 0..n {
                a.swap(k * n + j, pivot * n + j);
            }
            x.swap(k, pivot);
            for i in k + 1..n {
                let f = a[i * n + k] / a[k * n + k];
                for j in k..n {
                    let akj = a[k * n + j];
                    a[i * n + j] -= f * akj;
                }
                let xk = x[k];
                x[i] -= f * xk;
            }
        }
        for k in (0..n).rev() {
            let s: C = (k + 1..n).map(|j| a[k * n + j] * x[j]).sum();
            x[k] = (x[k] - s) / a[k * n + k];
        }
        x
    }
}

/// The dense Schur complement applied to ψ: M_pp ψ − M_pq M_qq⁻¹ M_qp ψ.
fn dense_schur(m: &Dense, p: Parity, psi: &[C]) -> Vec<C> {
    let half = m.n / 2;
    let (rp, rq) = match p {
        Parity::Even => (0..half, half..m.n),
        Parity::Odd => (half..m.n, 0..half),
    };
    let m_pp = m.block(rp.clone(), rp.clone());
    let m_pq = m.block(rp.clone(), rq.clone());
    let m_qp = m.block(rq.clone(), rp);
    let m_qq = m.block(rq.clone(), rq);
    let z = m_qq.solve(&m_qp.mul(psi));
    m_pp.mul(psi)
        .iter()
        .zip(m_pq.mul(&z))
        .map(|(a, b)| a - b)
        .collect()
}

fn rel_diff(a: &[C], b: &[C]) -> f64 {
    let d: f64 = a.iter().zip(b).map(|(x, y)| (x - y).norm_sqr()).sum();
    let n: f64 = b.iter().map(|y| y.norm_sqr()).sum();
    (d / n).sqrt()
}

/// The dense full Wilson-family matrix M = A + iμγ5 − ½ H (mass normalisation; A the
/// clover field, `None` for M = 1 − κ H with κ = `kappa`).
pub(crate) fn dense_wilson(
    u: &GaugeField<f64>,
    clover: Option<(&qdsl_core::field::CloverField<f64>, f64)>,
    kappa: f64,
) -> Dense {
    let lat = *u.lattice();
    let bc = BoundaryConditions::antiperiodic_time();
    let layout = SpinorLayout::wilson(lat, SiteSubset::Full);
    Dense::of(lat.volume() * 12, |e| {
        let h = textbook_wilson_hop(u, e, &bc);
        match clover {
            None => e.iter().zip(&h).map(|(x, h)| x - h * kappa).collect(),
            Some((a, mu)) => {
                let psi = Field::from_data(layout, e.to_vec()).expect("a full field");
                let mut a_psi = Field::zeros(layout);
                a.apply(&mut a_psi, &psi).expect("clover product");
                a_psi
                    .data()
                    .iter()
                    .zip(e)
                    .zip(&h)
                    .enumerate()
                    .map(|(k, ((a, x), h))| {
                        let g5 = if (k / 3) % 4 < 2 { 1.0 } else { -1.0 };
                        a + C::new(0.0, mu * g5) * x - h * 0.5
                    })
                    .collect()
            }
        }
    })
}

/// The dense full staggered matrix M = 2m + D.
fn dense_staggered(fat: &GaugeField<f64>, long: Option<&GaugeField<f64>>, mass: f64) -> Dense {
    let n = fat.lattice().volume() * 3;
    Dense::of(n, |e| {
        let d = textbook_staggered_hop(fat, long, e);
        e.iter()
            .zip(&d)
            .map(|(x, d)| x * (2.0 * mass) + d)
            .collect()
    })
}

/// M̂ and M̂† of `op` on a Gaussian field equal the dense Schur complements of M and M†
/// (times `scale`: 2m for the staggered normal form) to 1e-12.
fn assert_matches_dense<B>(op: &Schur<B>, m: &Dense, layout: SpinorLayout, scale: f64, what: &str)
where
    Schur<B>: LinearOperator<Field>,
    B: EvenOddBlocks<Field = Field, Error = SolverError>,
{
    let p = op.parity();
    let psi = Field::gaussian(layout, 5);
    for dagger in [false, true] {
        let dense = if dagger {
            m.adjoint()
        } else {
            Dense {
                n: m.n,
                a: m.a.clone(),
            }
        };
        let want: Vec<C> = dense_schur(&dense, p, psi.data())
            .into_iter()
            .map(|z| z * scale)
            .collect();
        let mut got = Field::zeros(layout);
        if dagger {
            op.apply_dagger(&mut got, &psi).unwrap();
        } else {
            op.apply(&mut got, &psi).unwrap();
        }
        let e = rel_diff(got.data(), &want);
        assert!(e < 1e-12, "{what} {p:?} dagger={dagger}: {e:e}");
    }
}

/// Wilson (κ = 0.13), twisted clover (m = −0.2, c_sw = 1.3, μ = 0.15) and naive and
/// improved staggered (m = 0.07, normal form 2m·M̂) on both parities: the generic Schur
/// equals the dense Schur complement.
#[test]
fn generic_schur_equals_the_dense_schur_complement() {
    let lat = lattice();
    let u = GaugeField::<f64>::random(lat, 3);
    let bc = TimeBoundary::Antiperiodic;
    let kappa = 0.13;
    let wilson = dense_wilson(&u, None, kappa);
    let (mass, c_sw, mu) = (-0.2, 1.3, 0.15);
    let a = clover_field(&u, mass, c_sw);
    let clover = dense_wilson(&u, Some((&a, mu)), 0.0);
    let long = GaugeField::<f64>::random(lat, 4);
    let m = 0.07;
    for p in [Parity::Even, Parity::Odd] {
        let op = EvenOddWilson::new(u.clone(), kappa, p, bc);
        assert_matches_dense(&op, &wilson, op.layout(), 1.0, "wilson");
        let op = EvenOddClover::from_clover(u.clone(), &a, mu, p, bc).unwrap();
        assert_matches_dense(&op, &clover, op.layout(), 1.0, "twisted clover");
        for improved in [false, true] {
            let links = if improved {
                StaggeredLinks::Improved {
                    fat: u.clone(),
                    long: long.clone(),
                }
            } else {
                StaggeredLinks::Naive(u.clone())
            };
            let dense = dense_staggered(&u, improved.then_some(&long), m);
            let op = EvenOddStaggered::new(links, m, p);
            assert_matches_dense(&op, &dense, op.layout(), 2.0 * m, "staggered");
        }
    }
}

/// ψ = (ψ_p, ψ_q) from η by prepare, a solve of M̂ ψ_p = b̂ (CGNR, or CG for the
/// Hermitian staggered normal form) and reconstruct; returns ‖M ψ − η‖/‖η‖ with the
/// dense M.
fn full_solve_residual<B>(op: &Schur<B>, m: &Dense, hermitian: bool) -> f64
where
    Schur<B>: LinearOperator<Field>,
    B: EvenOddBlocks<Field = Field, Error = SolverError, Context<'static> = ()>,
{
    let p = op.parity();
    let q = p.opposite();
    let zeros = |r| op.blocks().zeros((), r).unwrap();
    let (mut eta_p, mut eta_q) = (zeros(p), zeros(q));
    let eta = Field::gaussian(eta_p.layout().with_subset(SiteSubset::Full), 8);
    let half = eta.data().len() / 2;
    let (even, odd) = eta.data().split_at(half);
    let (data_p, data_q) = if p == Parity::Even {
        (even, odd)
    } else {
        (odd, even)
    };
    eta_p.data_mut().copy_from_slice(data_p);
    eta_q.data_mut().copy_from_slice(data_q);
    let b = op.prepare_source(&eta_p, &eta_q).unwrap();
    let mut psi_p = b.zeros_like();
    let opts = SolverOptions::with_tolerance(1e-12);
    let result = if hermitian {
        cg(op, op, &b, &mut psi_p, &opts)
    } else {
        cgnr(op, op, &b, &mut psi_p, &opts)
    }
    .unwrap();
    assert!(result.is_converged(), "{result:?}");
    let psi_q = op.reconstruct(&psi_p, &eta_q).unwrap();
    let mut psi = psi_p.data().to_vec();
    if p == Parity::Even {
        psi.extend_from_slice(psi_q.data());
    } else {
        psi = [psi_q.data(), psi_p.data()].concat();
    }
    rel_diff(&m.mul(&psi), eta.data())
}

/// prepare + solve + reconstruct solves the full system M ψ = η for Wilson, clover,
/// twisted clover and staggered (naive and improved, the normal form), on both parities:
/// ‖M ψ − η‖/‖η‖ ≤ 1e-9 with the dense M.
#[test]
fn prepare_solve_reconstruct_solves_the_full_system() {
    let lat = lattice();
    let u = GaugeField::<f64>::random(lat, 6);
    let bc = TimeBoundary::Antiperiodic;
    let kappa = 0.11;
    let wilson = dense_wilson(&u, None, kappa);
    let mass = 0.1;
    let a = clover_field(&u, mass, 1.1);
    let long = GaugeField::<f64>::random(lat, 7);
    for p in [Parity::Even, Parity::Odd] {
        let op = EvenOddWilson::new(u.clone(), kappa, p, bc);
        let r = full_solve_residual(&op, &wilson, false);
        assert!(r < 1e-9, "wilson {p:?}: {r:e}");
        for mu in [0.0, 0.2] {
            let dense = dense_wilson(&u, Some((&a, mu)), 0.0);
            let op = EvenOddClover::from_clover(u.clone(), &a, mu, p, bc).unwrap();
            let r = full_solve_residual(&op, &dense, false);
            assert!(r < 1e-9, "clover μ={mu} {p:?}: {r:e}");
        }
        for improved in [false, true] {
            let links = if improved {
                StaggeredLinks::Improved {
                    fat: u.clone(),
                    long: long.clone(),
                }
            } else {
                StaggeredLinks::Naive(u.clone())
            };
            let m = 0.3;
            let dense = dense_staggered(&u, improved.then_some(&long), m);
            let op = EvenOddStaggered::new(links, m, p);
            let r = full_solve_residual(&op, &dense, true);
            assert!(r < 1e-9, "staggered improved={improved} {p:?}: {r:e}");
        }
    }
}

/// The full operator from the blocks ([`Schur::apply_full`]) is the dense M (and M†),
/// for Wilson and staggered; the Schur complement of a user-built [`HopBlocks`] (d = 2,
/// h = −0.3 of the Wilson hop) is that of its dense M.
#[test]
fn full_operator_from_blocks_and_custom_hop_blocks_match_dense() {
    let lat = lattice();
    let u = GaugeField::<f64>::random(lat, 9);
    let bc = TimeBoundary::Antiperiodic;
    let kappa = 0.12;
    let wilson = dense_wilson(&u, None, kappa);
    let m = 0.2;
    let staggered = dense_staggered(&u, None, m);
    let check = |op_full: &dyn Fn(&mut Field, &mut Field, &Field, &Field, bool),
                 layout: SpinorLayout,
                 dense: &Dense,
                 what: &str| {
        let psi = Field::gaussian(layout.with_subset(SiteSubset::Full), 2);
        let half = psi.data().len() / 2;
        let part = |r, data: &[C]| {
            Field::from_data(layout.with_subset(SiteSubset::Single(r)), data.to_vec()).unwrap()
        };
        let (e, o) = (
            part(Parity::Even, &psi.data()[..half]),
            part(Parity::Odd, &psi.data()[half..]),
        );
        for dagger in [false, true] {
            let (mut out_e, mut out_o) = (e.zeros_like(), o.zeros_like());
            op_full(&mut out_e, &mut out_o, &e, &o, dagger);
            let got = [out_e.data(), out_o.data()].concat();
            let want = if dagger {
                dense.adjoint()
            } else {
                Dense {
                    n: dense.n,
                    a: dense.a.clone(),
                }
            }
            .mul(psi.data());
            let err = rel_diff(&got, &want);
            assert!(err < 1e-13, "{what} dagger={dagger}: {err:e}");
        }
    };
    let op = EvenOddWilson::new(u.clone(), kappa, Parity::Even, bc);
    check(
        &|oe, oo, e, o, dagger| op.apply_full((oe, oo), (e, o), dagger).unwrap(),
        op.layout(),
        &wilson,
        "wilson",
    );
    let op = EvenOddStaggered::new(StaggeredLinks::Naive(u.clone()), m, Parity::Even);
    check(
        &|oe, oo, e, o, dagger| op.apply_full((oe, oo), (e, o), dagger).unwrap(),
        op.layout(),
        &staggered,
        "staggered",
    );
    // M = 2 − 0.3 H: the dense matrix of 1 − κH with κ = 0.15, times 2.
    let custom = Schur::complement(HopBlocks::new(
        crate::operator::WilsonLinks(u.clone()),
        2.0,
        -0.3,
        Parity::Odd,
        bc,
    ));
    let mut dense = dense_wilson(&u, None, 0.15);
    dense.a.iter_mut().for_each(|z| *z *= 2.0);
    assert_matches_dense(&custom, &dense, custom.layout(), 1.0, "custom");
}

/// The chain M̂ M̂† ([`crate::solver::Chain`] of M̂ and its [`crate::solver::Adjoint`]) is
/// M̂ applied after M̂†, its adjoint is itself (⟨χ, Cψ⟩ = ⟨Cχ, ψ⟩), and its flops are
/// two applications'.
#[test]
fn chain_of_the_schur_operator_and_its_adjoint() {
    use crate::solver::{Adjoint, Chain};
    let u = GaugeField::<f64>::random(lattice(), 12);
    let op = EvenOddClover::twisted(u, 0.1, 1.0, 0.2, Parity::Odd, TimeBoundary::Periodic).unwrap();
    let chain = Chain::new(&op, Adjoint(&op));
    let (psi, chi) = (
        Field::gaussian(op.layout(), 1),
        Field::gaussian(op.layout(), 2),
    );
    let (mut got, mut tmp, mut want) = (psi.zeros_like(), psi.zeros_like(), psi.zeros_like());
    chain.apply(&mut got, &psi).unwrap();
    op.apply_dagger(&mut tmp, &psi).unwrap();
    op.apply(&mut want, &tmp).unwrap();
    assert!(rel_diff(got.data(), want.data()) < 1e-15);
    let mut c_chi = chi.zeros_like();
    chain.apply_dagger(&mut c_chi, &chi).unwrap();
    let (lhs, rhs) = (chi.dot(&got).unwrap(), c_chi.dot(&psi).unwrap());
    assert!((lhs - rhs).norm() < 1e-12 * lhs.norm(), "{lhs} vs {rhs}");
    assert_eq!(chain.flops_per_apply(), 2 * op.flops_per_apply());
}
