//! MSPCG tests: A_s against dense matrices of the global operator (with snake terms: the
//! block of M̂†M̂; without: the masked Dirichlet product), hermiticity, positivity
//! (Cholesky), block-diagonality; the outer PCG against CG, its gain from the block
//! preconditioner, and the fallback after a broken preconditioner.

use super::*;
use crate::linear::{LinearOperator, NormalForm, NormalOperator, SolverError, SolverField};
use crate::operator::even_odd::{EvenOddBlocks, Xpay};
use crate::operator::mobius::{EvenOddMobius, MobiusBlocks, MobiusParams};
use crate::solver::{cg, Convergence, SolverOptions};
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_core::Complex;
use std::cell::Cell;

type F64 = ColourSpinorField<f64>;
type C64 = Complex<f64>;

pub(super) const BOUNDARY: TimeBoundary = TimeBoundary::Antiperiodic;

fn setup(dims: [usize; 4], ls: usize, mass: f64) -> (GaugeField<f64>, MobiusParams) {
    let gauge = GaugeField::random(Lattice::new(dims).unwrap(), 7);
    (
        gauge,
        MobiusParams::mobius(ls, 1.5, 0.5, 1.8, mass).unwrap(),
    )
}

fn global_op(gauge: &GaugeField<f64>, params: &MobiusParams) -> EvenOddMobius<f64> {
    EvenOddMobius::asymmetric(gauge.clone(), params.clone(), Parity::Even, BOUNDARY).unwrap()
}

pub(super) fn preconditioner(
    gauge: &GaugeField<f64>,
    params: &MobiusParams,
    blocks: [usize; 4],
    snake: Snake,
    inner: usize,
) -> MultiSplitting<MobiusBlocks<f64>> {
    let grid = PaddedBlocks::new(*gauge.lattice(), params.ls(), blocks, Parity::Even).unwrap();
    MultiSplitting::mobius(gauge, params, Parity::Even, BOUNDARY, grid, snake, inner).unwrap()
}

/// Σ_s P_s A_s P_s x: the block-diagonal operator assembled from the local A_s.
pub(super) fn assembled(m: &MultiSplitting<MobiusBlocks<f64>>, x: &F64) -> F64 {
    let grid = m.grid();
    let layout = grid.local_layout(Parity::Even);
    let (mut xl, mut yl) = (F64::zeros(layout), F64::zeros(layout));
    let mut out = x.zeros_like();
    for s in 0..grid.num_blocks() {
        let a_s = LocalNormal::new(&m.locals()[s], grid, m.snake());
        grid.gather(s, x, &mut xl);
        a_s.apply(&mut yl, &xl).unwrap();
        grid.scatter(s, &yl, &mut out);
    }
    out
}

/// The block of each even site (index in the even-parity field).
fn block_of_sites(grid: &PaddedBlocks, layout: &qdsl_core::field::SpinorLayout) -> Vec<usize> {
    let d = qdsl_core::lattice::BlockDecomposition::new(grid.domain_lattice(), grid.block_dims())
        .unwrap();
    (0..layout.sites_per_slice())
        .map(|i| d.block_of(layout.coords_of_site(i)))
        .collect()
}

/// The components (flat indices) of a field that lie on sites of block `s`.
fn block_components(
    blocks: &[usize],
    layout: &qdsl_core::field::SpinorLayout,
    s: usize,
) -> Vec<usize> {
    (0..layout.len())
        .filter(|&k| blocks[(k / layout.site_len()) % layout.sites_per_slice()] == s)
        .collect()
}

fn unit(layout: qdsl_core::field::SpinorLayout, k: usize) -> F64 {
    let mut e = F64::zeros(layout);
    e.data_mut()[k] = C64::new(1.0, 0.0);
    e
}

/// x ← P_s x (zero off block s).
fn project(x: &mut F64, blocks: &[usize], s: usize) {
    let layout = *x.layout();
    for (k, z) in x.data_mut().iter_mut().enumerate() {
        if blocks[(k / layout.site_len()) % layout.sites_per_slice()] != s {
            *z = C64::new(0.0, 0.0);
        }
    }
}

/// The Dirichlet product without snakes on the global lattice, by masks:
/// M̂_D x = M5 x − ¼ P_s K_pq P_s M5⁻¹ P_s K_qp x (x on block s), and M̂_D† alike.
fn dirichlet_complement(
    b: &MobiusBlocks<f64>,
    x: &F64,
    mask_p: &[usize],
    mask_q: &[usize],
    s: usize,
    dagger: bool,
) -> F64 {
    let (p, q) = (Parity::Even, Parity::Odd);
    let mut t = b.zeros((), q).unwrap();
    b.hop((), q, &mut t, x, dagger, None).unwrap();
    project(&mut t, mask_q, s);
    let mut u = t.zeros_like();
    b.apply_diagonal_inverse((), q, &mut u, &t, dagger).unwrap();
    let mut d = x.zeros_like();
    b.apply_diagonal((), p, &mut d, x, dagger).unwrap();
    let mut y = x.zeros_like();
    let xpay = Xpay {
        a: 1.0,
        x: &d,
        b: -0.25,
    };
    b.hop((), p, &mut y, &u, dagger, Some(xpay)).unwrap();
    project(&mut y, mask_p, s);
    y
}

/// Cholesky of a dense Hermitian matrix (row-major n × n): Some(min pivot) when it is
/// positive definite, None otherwise.
fn cholesky_min_pivot(a: &[C64], n: usize) -> Option<f64> {
    let mut l = vec![C64::new(0.0, 0.0); n * n];
    let mut min = f64::INFINITY;
    for j in 0..n {
        let mut d = a[j * n + j].re;
        for k in 0..j {
            d -= l[j * n + k].norm_sqr();
        }
        if d <= 0.0 {
            return None;
        }
        min = min.min(d);
        let dj = d.sqrt();
        l[j * n + j] = C64::new(dj, 0.0);
        for i in j + 1..n {
            let mut v = a[i * n + j];
            for k in 0..j {
                v -= l[i * n + k] * l[j * n + k].conj();
            }
            l[i * n + j] = v * (1.0 / dj);
        }
    }
    Some(min)
}

/// On 2×2×2×8 × Ls 2 (antiperiodic time) with blocks 1,1,1,2 (b_t = 4, L_t − b_t = 4: no
/// four-hop path runs around the lattice): A_s with snake terms equals the block of the
/// dense M̂†M̂, column by column; without snake terms it equals the masked Dirichlet
/// product P_s M̂_D†M̂_D P_s and differs from the block; both are Hermitian and positive
/// definite (Cholesky); the assembled operator has no entries between blocks.
#[test]
fn local_operator_matches_dense_restriction() {
    let (gauge, params) = setup([2, 2, 2, 8], 2, 0.1);
    let op = global_op(&gauge, &params);
    let normal = NormalOperator::new(&op, NormalForm::MdagM);
    let layout = op.blocks().layout(SiteSubset::Single(Parity::Even));
    let odd = op.blocks().layout(SiteSubset::Single(Parity::Odd));
    let with = preconditioner(&gauge, &params, [1, 1, 1, 2], Snake::Include, 1);
    let without = preconditioner(&gauge, &params, [1, 1, 1, 2], Snake::Exclude, 1);
    let mask_p = block_of_sites(with.grid(), &layout);
    let mask_q = block_of_sites(with.grid(), &odd);
    let mut snake_norm = 0.0;
    for s in 0..with.grid().num_blocks() {
        let idx = block_components(&mask_p, &layout, s);
        let n = idx.len();
        assert_eq!(n, 16 * 2 * 12);
        let (mut dense_with, mut dense_without) =
            (vec![C64::default(); n * n], vec![C64::default(); n * n]);
        for (j, &kj) in idx.iter().enumerate() {
            let e = unit(layout, kj);
            let mut column = e.zeros_like();
            normal.apply(&mut column, &e).unwrap();
            let y = dirichlet_complement(op.blocks(), &e, &mask_p, &mask_q, s, false);
            let dirichlet = dirichlet_complement(op.blocks(), &y, &mask_p, &mask_q, s, true);
            let a_with = assembled(&with, &e);
            let a_without = assembled(&without, &e);
            for k in 0..layout.len() {
                let in_block = mask_p[(k / layout.site_len()) % layout.sites_per_slice()] == s;
                if in_block {
                    let err = (a_with.data()[k] - column.data()[k]).norm();
                    assert!(err < 1e-12, "snake: column {kj} row {k}: {err:e}");
                    let err = (a_without.data()[k] - dirichlet.data()[k]).norm();
                    assert!(err < 1e-12, "no snake: column {kj} row {k}: {err:e}");
                    snake_norm += (a_with.data()[k] - a_without.data()[k]).norm_sqr();
                } else {
                    assert_eq!(a_with.data()[k], C64::default(), "coupling between blocks");
                    assert_eq!(
                        a_without.data()[k],
                        C64::default(),
                        "coupling between blocks"
                    );
                }
            }
            for (i, &ki) in idx.iter().enumerate() {
                dense_with[i * n + j] = a_with.data()[ki];
                dense_without[i * n + j] = a_without.data()[ki];
            }
        }
        for dense in [&dense_with, &dense_without] {
            for i in 0..n {
                for j in 0..n {
                    let err = (dense[i * n + j] - dense[j * n + i].conj()).norm();
                    assert!(err < 1e-12, "not Hermitian at ({i}, {j}): {err:e}");
                }
            }
            let pivot = cholesky_min_pivot(dense, n).expect("A_s is positive definite");
            assert!(pivot > 1e-6, "{pivot:e}");
        }
    }
    assert!(
        snake_norm.sqrt() > 1e-2,
        "snake terms missing: {snake_norm:e}"
    );
}

/// Two cut directions (3 × 3 blocks of 2 in x and t on 6×2×2×6, antiperiodic, L − b = 4):
/// A_s x_s = P_s M̂†M̂ x_s for random x_s on a corner block (its pads wrap the lattice and
/// cross the time boundary) and an interior one.
#[test]
fn local_operator_matches_projected_normal_with_two_cut_directions() {
    let (gauge, params) = setup([6, 2, 2, 6], 3, 0.05);
    let op = global_op(&gauge, &params);
    let normal = NormalOperator::new(&op, NormalForm::MdagM);
    let layout = op.blocks().layout(SiteSubset::Single(Parity::Even));
    let with = preconditioner(&gauge, &params, [3, 1, 1, 3], Snake::Include, 1);
    let mask = block_of_sites(with.grid(), &layout);
    for s in [0, 4, 8] {
        let mut x = F64::gaussian(layout, 11 + s as u64);
        project(&mut x, &mask, s);
        let mut expected = x.zeros_like();
        normal.apply(&mut expected, &x).unwrap();
        project(&mut expected, &mask, s);
        let got = assembled(&with, &x);
        let mut diff = got.clone();
        SolverField::axpy(&mut diff, C64::new(-1.0, 0.0), &expected).unwrap();
        let rel = (diff.norm_sqr() / expected.norm_sqr()).sqrt();
        assert!(rel < 1e-13, "block {s}: {rel:e}");
    }
}

/// Bad block counts are clear errors.
#[test]
fn block_grid_refuses_bad_tilings() {
    let lat = Lattice::new([4, 4, 4, 8]).unwrap();
    let err = PaddedBlocks::new(lat, 4, [3, 1, 1, 1], Parity::Even).unwrap_err();
    assert!(err.to_string().contains("direction x"), "{err}");
    // Blocks of odd extent (4 / 4 = 1) would mix parities.
    assert!(PaddedBlocks::new(lat, 4, [4, 1, 1, 1], Parity::Even).is_err());
    assert!(PaddedBlocks::new(lat, 4, [1, 1, 0, 1], Parity::Even).is_err());
    let grid = PaddedBlocks::new(lat, 4, [1, 2, 1, 2], Parity::Even).unwrap();
    assert_eq!(grid.local_lattice().dims(), [4, 6, 4, 8]);
    assert_eq!(grid.num_blocks(), 4);
}

/// The system of the solver tests: M̂†M̂ x = M̂† b on 4×4×4×8 × Ls 4.
pub(super) fn system(mass: f64) -> (GaugeField<f64>, MobiusParams, EvenOddMobius<f64>, F64) {
    let (gauge, params) = setup([4, 4, 4, 8], 4, mass);
    let op = global_op(&gauge, &params);
    let layout = op.blocks().layout(SiteSubset::Single(Parity::Even));
    let b = F64::gaussian(layout, 3);
    let mut rhs = b.zeros_like();
    op.apply_dagger(&mut rhs, &b).unwrap();
    (gauge, params, op, rhs)
}

pub(super) fn true_residual(a: &impl LinearOperator<F64>, x: &F64, b: &F64) -> f64 {
    let mut r = x.zeros_like();
    a.apply(&mut r, x).unwrap();
    SolverField::axpy(&mut r, C64::new(-1.0, 0.0), b).unwrap();
    (r.norm_sqr() / b.norm_sqr()).sqrt()
}

/// PCG with the identity is CG with Polak–Ribière β: the same iteration count (±1);
/// MSPCG (blocks 1,1,1,2, 6 inner f32 iterations, mixed f64–f32 outer) needs at least
/// 1.5× fewer outer iterations (1.9× measured with blocks 1,1,2,2 on this random field); every solve's true residual, recomputed here in f64, meets the
/// tolerance.
#[test]
fn pcg_with_block_preconditioner_beats_cg() {
    let (gauge, params, op, rhs) = system(0.02);
    let normal = NormalOperator::new(&op, NormalForm::MdagM);
    let single = op.cast::<f32>();
    let normal32 = NormalOperator::new(&single, NormalForm::MdagM);
    let opts = SolverOptions {
        polak_ribiere: true,
        ..SolverOptions::with_tolerance(1e-8)
    };
    let mut x = rhs.zeros_like();
    let plain = cg(&normal, &normal, &rhs, &mut x, &opts).unwrap();
    assert!(plain.is_converged());
    let mut x = rhs.zeros_like();
    let identity = pcg(&normal, &normal, &Identity, &rhs, &mut x, &opts).unwrap();
    assert!(identity.result.is_converged() && identity.breakdown.is_none());
    assert!(
        identity.result.iterations.abs_diff(plain.iterations) <= 1,
        "{} vs {}",
        identity.result.iterations,
        plain.iterations
    );
    assert!(true_residual(&normal, &x, &rhs) <= 1e-8);
    let grid = PaddedBlocks::new(*gauge.lattice(), 4, [1, 1, 1, 2], Parity::Even).unwrap();
    let m = MultiSplitting::<MobiusBlocks<f32>>::mobius(
        &gauge,
        &params,
        Parity::Even,
        BOUNDARY,
        grid,
        Snake::Include,
        6,
    )
    .unwrap();
    let mut x = rhs.zeros_like();
    let ms = pcg(&normal, &normal32, &m, &rhs, &mut x, &opts).unwrap();
    assert!(ms.result.is_converged(), "{:?}", ms.result.convergence);
    assert!(ms.breakdown.is_none());
    assert!(true_residual(&normal, &x, &rhs) <= 1e-8);
    assert!(
        3 * ms.result.iterations < 2 * plain.iterations,
        "MSPCG {} outer vs CG {}",
        ms.result.iterations,
        plain.iterations
    );
    // One z per iteration: the start's and one after each but the last.
    assert_eq!(ms.preconditioner_applications, ms.result.iterations);
}

/// A preconditioner that works `good` times and then returns NaN (or −r).
struct Broken {
    good: usize,
    calls: Cell<usize>,
    nan: bool,
}

impl Preconditioner<F64> for Broken {
    fn apply(&self, z: &mut F64, r: &F64) -> Result<(), SolverError> {
        self.calls.set(self.calls.get() + 1);
        z.copy_from(r)?;
        if self.calls.get() > self.good {
            if self.nan {
                z.data_mut()[5] = C64::new(f64::NAN, 0.0);
            } else {
                z.scale(C64::new(-1.0, 0.0));
            }
        }
        Ok(())
    }

    fn flops_per_apply(&self) -> u64 {
        0
    }
}

/// A preconditioner that breaks down (NaN in z, or ⟨r, z⟩ < 0) after 5 good applications
/// is reported with the iteration and the history so far, and the solve falls back to
/// plain CG from the last iterate and converges; no NaN reaches x.
#[test]
fn broken_preconditioner_falls_back_to_cg() {
    let (_, _, op, rhs) = system(0.1);
    let normal = NormalOperator::new(&op, NormalForm::MdagM);
    let opts = SolverOptions::with_tolerance(1e-9);
    for nan in [true, false] {
        let broken = Broken {
            good: 5,
            calls: Cell::new(0),
            nan,
        };
        let mut x = rhs.zeros_like();
        let out = pcg(&normal, &normal, &broken, &rhs, &mut x, &opts).unwrap();
        let breakdown = out.breakdown.as_ref().expect("the breakdown is reported");
        assert_eq!(breakdown.iteration, 5);
        assert_eq!(out.preconditioned_iterations, 5);
        match (nan, breakdown.fault) {
            (true, PreconditionerFault::NonFinite) => {}
            (false, PreconditionerFault::NotPositive { rz }) => assert!(rz < 0.0),
            other => panic!("wrong fault {other:?}"),
        }
        assert!(breakdown.history.len() >= 6);
        assert!(out.result.is_converged(), "{:?}", out.result.convergence);
        assert!(out.result.iterations > 5);
        assert!(x
            .data()
            .iter()
            .all(|z| z.re.is_finite() && z.im.is_finite()));
        assert!(true_residual(&normal, &x, &rhs) <= 1e-9);
        // The history goes on from the breakdown's iteration.
        assert!(out
            .result
            .history
            .windows(2)
            .all(|w| w[0].iteration <= w[1].iteration));
    }
    // A preconditioner broken from the start: the fallback is CG from x₀.
    let broken = Broken {
        good: 0,
        calls: Cell::new(0),
        nan: true,
    };
    let mut x = rhs.zeros_like();
    let out = pcg(&normal, &normal, &broken, &rhs, &mut x, &opts).unwrap();
    assert_eq!(out.breakdown.unwrap().iteration, 0);
    assert_eq!(out.result.convergence, Convergence::Converged);
}
