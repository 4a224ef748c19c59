//! The outer PCG with several kept directions (Notay's FCG(m)): each new direction is
//! A-orthogonal to the kept ones, FCG(m) with the identity is CG, and with a strongly
//! varying preconditioner (two inner iterations) it converges to the tolerance in no
//! more outer iterations than the one-direction recurrence.

use super::pcg::KeptDirections;
use super::tests::{preconditioner, system, true_residual};
use super::*;
use crate::linear::{LinearOperator, NormalForm, NormalOperator, SolverField};
use crate::solver::{cg, SolverError, SolverOptions};
use qdsl_core::field::ColourSpinorField;
use qdsl_core::lattice::Parity;

type F64 = ColourSpinorField<f64>;

fn options(directions: usize) -> SolverOptions {
    SolverOptions {
        polak_ribiere: true,
        flexible_directions: directions,
        ..SolverOptions::with_tolerance(1e-8)
    }
}

/// Re⟨x, A y⟩ / (‖x‖_A ‖y‖_A).
fn a_cosine(a: &impl LinearOperator<F64>, x: &F64, y: &F64) -> f64 {
    let (mut ax, mut ay) = (x.zeros_like(), y.zeros_like());
    a.apply(&mut ax, x).unwrap();
    a.apply(&mut ay, y).unwrap();
    let xy = SolverField::dot(x, &ay).unwrap().re;
    let xx = SolverField::dot(x, &ax).unwrap().re;
    let yy = SolverField::dot(y, &ay).unwrap().re;
    xy / (xx * yy).sqrt()
}

/// Gram–Schmidt in the A inner product through the kept directions: every new direction
/// is A-orthogonal to the m kept before it (the window), and the window slides (the
/// direction m + 1 back is not made orthogonal, and on random vectors is not).
#[test]
fn new_directions_are_a_orthogonal_to_the_kept_ones() {
    let (_, _, op, _) = system(0.02);
    let a = NormalOperator::new(&op, NormalForm::MdagM);
    let layout = op
        .blocks()
        .layout(qdsl_core::field::SiteSubset::Single(Parity::Even));
    let m = 3;
    let mut kept = KeptDirections::<F64>::new(m);
    let mut directions: Vec<F64> = Vec::new();
    for seed in 0..6 {
        let z = F64::gaussian(layout, 100 + seed);
        let mut p = z.zeros_like();
        kept.orthogonalize(&mut p, &z).unwrap();
        for (back, q) in directions.iter().rev().enumerate() {
            let c = a_cosine(&a, q, &p).abs();
            if back < m {
                assert!(
                    c < 1e-12,
                    "direction {seed}, {} back: cos_A {c:e}",
                    back + 1
                );
            } else {
                assert!(c > 1e-6, "direction {seed}, {} back: cos_A {c:e}", back + 1);
            }
        }
        let mut ap = p.zeros_like();
        a.apply(&mut ap, &p).unwrap();
        let p_ap = SolverField::dot(&p, &ap).unwrap().re;
        kept.push(&p, &ap, p_ap).unwrap();
        directions.push(p);
    }
}

/// With the identity, FCG(4) is CG: the same iterations (±1) and a true residual at the
/// tolerance.
#[test]
fn fcg_with_the_identity_is_cg() {
    let (_, _, op, rhs) = system(0.02);
    let normal = NormalOperator::new(&op, NormalForm::MdagM);
    let mut x = rhs.zeros_like();
    let plain = cg(&normal, &normal, &rhs, &mut x, &options(1)).unwrap();
    let mut x = rhs.zeros_like();
    let fcg = pcg(&normal, &normal, &Identity, &rhs, &mut x, &options(4)).unwrap();
    assert!(fcg.result.is_converged() && fcg.breakdown.is_none());
    assert!(
        fcg.result.iterations.abs_diff(plain.iterations) <= 1,
        "FCG(4) {} vs CG {}",
        fcg.result.iterations,
        plain.iterations
    );
    assert!(true_residual(&normal, &x, &rhs) <= 1e-8);
}

/// MSPCG with 2 inner iterations (a preconditioner that varies with r): FCG(4) converges
/// to the tolerance (true residual recomputed here), needs no more outer iterations
/// than FCG(1), and fewer than CG.
#[test]
fn fcg_with_a_varying_preconditioner_converges() {
    let (gauge, params, op, rhs) = system(0.02);
    let normal = NormalOperator::new(&op, NormalForm::MdagM);
    let mut x = rhs.zeros_like();
    let plain = cg(&normal, &normal, &rhs, &mut x, &options(1)).unwrap();
    let p = preconditioner(&gauge, &params, [1, 1, 2, 2], Snake::Include, 2);
    let mut outer = Vec::new();
    for m in [1, 4] {
        let mut x = rhs.zeros_like();
        let r = pcg(&normal, &normal, &p, &rhs, &mut x, &options(m)).unwrap();
        assert!(
            r.result.is_converged(),
            "FCG({m}): {:?}",
            r.result.convergence
        );
        assert!(r.breakdown.is_none(), "FCG({m}): {:?}", r.breakdown);
        assert!(true_residual(&normal, &x, &rhs) <= 1e-8);
        outer.push(r.result.iterations);
    }
    assert!(
        outer[1] <= outer[0],
        "FCG(4) {} vs FCG(1) {}",
        outer[1],
        outer[0]
    );
    assert!(
        outer[1] < plain.iterations,
        "FCG(4) {} vs CG {}",
        outer[1],
        plain.iterations
    );
}

/// No kept direction is refused before the solve starts, naming the count.
#[test]
fn zero_kept_directions_are_refused() {
    let (_, _, op, rhs) = system(0.02);
    let normal = NormalOperator::new(&op, NormalForm::MdagM);
    let mut x = rhs.zeros_like();
    match pcg(&normal, &normal, &Identity, &rhs, &mut x, &options(0)) {
        Err(e @ SolverError::InvalidFlexibleDirections { found: 0 }) => {
            assert!(e.to_string().contains("found 0"), "{e}")
        }
        other => panic!("{other:?}"),
    }
}
