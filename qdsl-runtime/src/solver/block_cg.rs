//! Conjugate gradient on N right-hand sides at once: the sources are the slices of one
//! field ([`SourceBatch`]), so that every iteration applies the operator once to all of
//! them (the multi-RHS hop reads the links once for all N), while each source keeps its
//! own scalars and its own convergence.

use super::{
    Breakdown, Convergence, ConvertFrom, LinearOperator, ResidualKind, ResidualRecord, SolveResult,
    SolverError, SolverField, SolverOptions,
};
use qdsl_core::Complex;
use std::time::Instant;

/// A field holding N right-hand sides (the slices of a 5D field with no s-coupling):
/// the [`SolverField`] operations act on all of them as one vector; these act per
/// source, with one coefficient or one result per source, accumulated in f64.
pub trait SourceBatch: SolverField {
    /// N, the number of sources.
    fn sources(&self) -> usize;

    /// ‖y_k‖² of each source k.
    fn norm_sqr_each(&self) -> Vec<f64>;

    /// ⟨y_k, x_k⟩ of each source k (conjugate-linear in y = `self`).
    fn dot_each(&self, x: &Self) -> Result<Vec<Complex<f64>>, SolverError>;

    /// y_k ← a_k x_k + y_k for each source k.
    fn axpy_each(&mut self, a: &[Complex<f64>], x: &Self) -> Result<(), SolverError>;

    /// y_k ← x_k + a_k y_k for each source k.
    fn xpay_each(&mut self, x: &Self, a: &[Complex<f64>]) -> Result<(), SolverError>;
}

/// A list of per-source values whose length is not the batch's number of sources.
#[derive(Debug, thiserror::Error)]
#[error("{found} per-source coefficients for a batch of {sources} sources")]
pub struct SourceCountMismatch {
    /// Coefficients given.
    pub found: usize,
    /// Sources in the batch.
    pub sources: usize,
}

/// An error unless `found` coefficients fit a batch of `sources` sources.
pub(crate) fn expect_sources(found: usize, sources: usize) -> Result<(), SolverError> {
    if found == sources {
        return Ok(());
    }
    Err(SolverError::field(SourceCountMismatch { found, sources }))
}

fn real(a: f64) -> Complex<f64> {
    Complex::new(a, 0.0)
}

/// Where one source stands.
#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    /// Iterating.
    Active,
    /// Its iterated residual met the pass's target: it stops updating until the next
    /// true residual.
    Resting,
    /// Finished with this outcome.
    Done(Convergence),
}

/// Solves A x_k = b_k for the N sources of `b` at once (A Hermitian positive definite,
/// diagonal in the sources) by conjugate gradients, starting from the guess in `x`.
///
/// Per source k, in passes of the low precision L with `op_low` (r = b − A x recomputed
/// in the high precision H with `op_high` at the start of each pass):
///
/// α_k = ‖r_k‖²/⟨p_k, A p_k⟩,  e_k ← e_k + α_k p_k,  r_k ← r_k − α_k (A p)_k,
/// β_k = ‖r_k,new‖²/‖r_k‖²,  p_k ← r_k + β_k p_k,
///
/// one application of A per iteration for all sources. A source whose iterated residual
/// reaches its pass target rests (α_k = β_k = 0: x_k, r_k unchanged) while the others go
/// on. At the end of a pass x ← x + e in H and the true residuals are recomputed; a
/// source converges when ‖b_k − A x_k‖ ≤ tolerance · ‖b_k‖. In one precision (L = H) a
/// pass targets the tolerance itself, so each source's iterations are those of a
/// separate CG; with L narrower, a pass targets max(tolerance · ‖b_k‖,
/// δ · ‖r_k‖) (δ = [`SolverOptions::reliable_delta`]), defect correction with restarts.
/// A source stops on convergence, on a pass that does not halve its true residual
/// (stagnation), on breakdown (⟨p_k, A p_k⟩ ≤ 0 or non-finite), or when the iteration
/// limit is reached. Returns one result per source: its iterations (those it was
/// active), its true residual and history; the operator applications and time are the
/// batch's.
pub fn block_cg<H, L, OH, OL>(
    op_high: &OH,
    op_low: &OL,
    b: &H,
    x: &mut H,
    opts: &SolverOptions,
) -> Result<Vec<SolveResult>, SolverError>
where
    H: SourceBatch + ConvertFrom<L>,
    L: SourceBatch + ConvertFrom<H>,
    OH: LinearOperator<H> + ?Sized,
    OL: LinearOperator<L> + ?Sized,
{
    opts.check::<H, L>()?;
    let tolerances = vec![opts.tolerance; b.sources()];
    block_cg_to(op_high, op_low, b, x, opts, &tolerances)
}

/// [`block_cg`] with tolerance `tolerances[k]` for source k (checked by the caller; an
/// infinite one ends that source at once, x_k unchanged).
pub(crate) fn block_cg_to<H, L, OH, OL>(
    op_high: &OH,
    op_low: &OL,
    b: &H,
    x: &mut H,
    opts: &SolverOptions,
    tolerances: &[f64],
) -> Result<Vec<SolveResult>, SolverError>
where
    H: SourceBatch + ConvertFrom<L>,
    L: SourceBatch + ConvertFrom<H>,
    OH: LinearOperator<H> + ?Sized,
    OL: LinearOperator<L> + ?Sized,
{
    let start = Instant::now();
    let n = b.sources();
    expect_sources(tolerances.len(), n)?;
    let b_norm: Vec<f64> = b.norm_sqr_each().iter().map(|r2| r2.sqrt()).collect();
    let mixed = L::UNIT_ROUNDOFF > H::UNIT_ROUNDOFF;
    // A zero source has the solution x_k = 0, whatever the guess.
    if b_norm.contains(&0.0) {
        let guess = {
            let mut g = x.zeros_like();
            g.copy_from(x)?;
            g
        };
        let clear: Vec<_> = b_norm
            .iter()
            .map(|&bn| real(if bn == 0.0 { -1.0 } else { 0.0 }))
            .collect();
        x.axpy_each(&clear, &guess)?;
    }
    let mut state = vec![State::Active; n];
    let mut iterations = vec![0usize; n];
    let mut history: Vec<Vec<ResidualRecord>> = vec![Vec::new(); n];
    let mut best_true = vec![f64::INFINITY; n];
    let (mut applications, mut flops) = (0usize, 0u64);
    let mut r_high = b.zeros_like();
    let mut true_r2 = vec![0.0; n];
    let mut total = 0usize;
    loop {
        // r = b − A x in H; per source: converged, stagnated, or on to another pass.
        op_high.apply(&mut r_high, x)?;
        r_high.xpay(b, real(-1.0))?;
        applications += 1;
        flops += op_high.flops_per_apply();
        true_r2 = r_high.norm_sqr_each();
        for k in 0..n {
            if matches!(state[k], State::Done(_)) {
                continue;
            }
            let rel = relative(true_r2[k], b_norm[k]);
            history[k].push(ResidualRecord {
                iteration: iterations[k],
                residual: rel,
                kind: ResidualKind::True,
            });
            state[k] = if !true_r2[k].is_finite() {
                State::Done(Convergence::Breakdown(Breakdown::NonFinite {
                    quantity: "true ‖b − M x‖²",
                }))
            } else if b_norm[k] == 0.0 || rel <= tolerances[k] {
                State::Done(Convergence::Converged)
            } else if true_r2[k] > 0.25 * best_true[k] {
                State::Done(Convergence::Stagnation)
            } else if total >= opts.max_iterations {
                State::Done(Convergence::MaxIterations)
            } else {
                State::Active
            };
            best_true[k] = best_true[k].min(true_r2[k]);
        }
        if !state.contains(&State::Active) {
            break;
        }
        // One pass in L on the correction e: A e = r.
        let target: Vec<f64> = (0..n)
            .map(|k| {
                let tol = tolerances[k] * b_norm[k];
                let t = if mixed {
                    tol.max(opts.reliable_delta * true_r2[k].sqrt())
                } else {
                    tol
                };
                t * t
            })
            .collect();
        let mut r = L::converted(&r_high);
        let mut e = r.zeros_like();
        let mut p = r.zeros_like();
        p.copy_from(&r)?;
        let mut ap = r.zeros_like();
        let mut r2 = r.norm_sqr_each();
        while state.contains(&State::Active) && total < opts.max_iterations {
            op_low.apply(&mut ap, &p)?;
            applications += 1;
            flops += op_low.flops_per_apply();
            total += 1;
            let p_ap = p.dot_each(&ap)?;
            let mut alpha = vec![real(0.0); n];
            for k in 0..n {
                if state[k] != State::Active {
                    continue;
                }
                let d = p_ap[k].re;
                if !d.is_finite() {
                    let quantity = "⟨p, A p⟩";
                    state[k] =
                        State::Done(Convergence::Breakdown(Breakdown::NonFinite { quantity }));
                } else if d <= 0.0 {
                    state[k] = State::Done(Convergence::Breakdown(Breakdown::NotPositiveDefinite));
                } else {
                    alpha[k] = real(r2[k] / d);
                }
            }
            e.axpy_each(&alpha, &p)?;
            let minus: Vec<_> = alpha.iter().map(|a| -a).collect();
            r.axpy_each(&minus, &ap)?;
            let r2_new = r.norm_sqr_each();
            let mut beta = vec![real(0.0); n];
            for k in 0..n {
                if state[k] != State::Active {
                    continue;
                }
                iterations[k] += 1;
                history[k].push(ResidualRecord {
                    iteration: iterations[k],
                    residual: relative(r2_new[k], b_norm[k]),
                    kind: ResidualKind::Iterated,
                });
                if r2_new[k] <= target[k] || !r2_new[k].is_finite() {
                    state[k] = State::Resting;
                } else {
                    beta[k] = real(r2_new[k] / r2[k]);
                }
            }
            p.xpay_each(&r, &beta)?;
            r2 = r2_new;
        }
        // x ← x + e; the sources of the pass (resting, or cut by the limit) are checked.
        x.axpy(real(1.0), &H::converted(&e))?;
        for s in state.iter_mut() {
            if *s == State::Resting {
                *s = State::Active;
            }
        }
    }
    let elapsed = start.elapsed();
    Ok((0..n)
        .map(|k| SolveResult {
            convergence: match state[k] {
                State::Done(c) => c,
                State::Active | State::Resting => Convergence::MaxIterations,
            },
            iterations: iterations[k],
            reliable_updates: 0,
            true_residual: relative(true_r2[k], b_norm[k]),
            elapsed,
            operator_applications: applications,
            operator_flops: flops,
            history: std::mem::take(&mut history[k]),
        })
        .collect())
}

/// ‖r‖/‖b‖ from ‖r‖² (0 for a zero source).
fn relative(r2: f64, b_norm: f64) -> f64 {
    if b_norm == 0.0 {
        0.0
    } else {
        r2.sqrt() / b_norm
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::EvenOddWilson;
    use crate::solver::{cg, NormalForm, NormalOperator};
    use qdsl_core::dsl::variant::TimeBoundary;
    use qdsl_core::field::{ColourSpinorField, GaugeField, SpinorLayout};
    use qdsl_core::lattice::{Lattice, Parity};

    const SOURCES: usize = 3;

    /// M̂ of the even-odd Wilson operator on a random 4⁴ configuration (κ = 0.12), on
    /// one source and on `SOURCES` at once.
    fn operators() -> (EvenOddWilson<f64>, EvenOddWilson<f64>) {
        let lat = Lattice::new([4; 4]).unwrap();
        let gauge = GaugeField::<f64>::random(lat, 11);
        let one = EvenOddWilson::new(gauge, 0.12, Parity::Even, TimeBoundary::Antiperiodic);
        let batch = one.with_sources(SOURCES);
        (one, batch)
    }

    /// Source k of a batch as a one-source field.
    fn source(f: &ColourSpinorField<f64>, k: usize, one: SpinorLayout) -> ColourSpinorField<f64> {
        let n = one.len();
        ColourSpinorField::from_data(one, f.data()[k * n..(k + 1) * n].to_vec()).unwrap()
    }

    /// ‖b_k − A x_k‖/‖b_k‖ with A = M̂†M̂ applied to source k alone.
    fn residual(
        a: &dyn LinearOperator<ColourSpinorField<f64>>,
        x: &ColourSpinorField<f64>,
        b: &ColourSpinorField<f64>,
    ) -> f64 {
        let mut ax = b.zeros_like();
        a.apply(&mut ax, x).unwrap();
        ax.xpay(b, real(-1.0)).unwrap();
        (ax.norm_sqr() / b.norm_sqr()).sqrt()
    }

    /// f64 block CG on M̂†M̂: every source's solution satisfies A x_k = b_k to the
    /// tolerance (checked with the one-source operator), and its iterations are those
    /// of a separate CG solve of that source (±1).
    #[test]
    fn each_source_solves_its_system_in_the_iterations_of_a_separate_cg() {
        let (one, batch) = operators();
        let a1 = NormalOperator::new(&one, NormalForm::MdagM);
        let an = NormalOperator::new(&batch, NormalForm::MdagM);
        let b = ColourSpinorField::<f64>::gaussian(batch.layout(), 12);
        let mut x = b.zeros_like();
        let opts = SolverOptions::with_tolerance(1e-10);
        let results = block_cg(&an, &an, &b, &mut x, &opts).unwrap();
        assert_eq!(results.len(), SOURCES);
        for (k, r) in results.iter().enumerate() {
            assert!(r.is_converged(), "source {k}: {:?}", r.convergence);
            let (bk, xk) = (source(&b, k, one.layout()), source(&x, k, one.layout()));
            let res = residual(&a1, &xk, &bk);
            assert!(res <= 1.01e-10, "source {k}: {res:e}");
            assert!(
                (r.true_residual - res).abs() < 1e-12,
                "{} {res}",
                r.true_residual
            );
            let mut x1 = bk.zeros_like();
            let single = cg(&a1, &a1, &bk, &mut x1, &opts).unwrap();
            assert!(
                r.iterations.abs_diff(single.iterations) <= 1,
                "source {k}: {} batched, {} alone",
                r.iterations,
                single.iterations
            );
            assert!(r.iterations > 10, "{}", r.iterations);
        }
    }

    /// f64 solution, f32 iteration (defect correction): every source converges to a
    /// tolerance f32 alone cannot reach; a zero source gets x = 0 after no iteration.
    #[test]
    fn mixed_precision_and_a_zero_source() {
        let (one, batch) = operators();
        let batch32 = EvenOddWilson::<f32>::new(
            GaugeField::<f64>::random(Lattice::new([4; 4]).unwrap(), 11).cast(),
            0.12,
            Parity::Even,
            TimeBoundary::Antiperiodic,
        )
        .with_sources(SOURCES);
        let (an, an32) = (
            NormalOperator::new(&batch, NormalForm::MdagM),
            NormalOperator::new(&batch32, NormalForm::MdagM),
        );
        let mut b = ColourSpinorField::<f64>::gaussian(batch.layout(), 13);
        let n = one.layout().len();
        b.data_mut()[n..2 * n]
            .iter_mut()
            .for_each(|z| *z = Complex::new(0.0, 0.0));
        let mut x = ColourSpinorField::<f64>::gaussian(batch.layout(), 14);
        let opts = SolverOptions::with_tolerance(1e-11);
        let results =
            block_cg::<_, ColourSpinorField<f32>, _, _>(&an, &an32, &b, &mut x, &opts).unwrap();
        let a1 = NormalOperator::new(&one, NormalForm::MdagM);
        for k in [0, 2] {
            assert!(results[k].is_converged(), "{k}: {:?}", results[k]);
            let res = residual(
                &a1,
                &source(&x, k, one.layout()),
                &source(&b, k, one.layout()),
            );
            assert!(res <= 1.01e-11, "source {k}: {res:e}");
        }
        assert!(results[1].is_converged());
        assert_eq!(results[1].iterations, 0);
        assert_eq!(source(&x, 1, one.layout()).norm_sqr(), 0.0);
    }

    /// CGNR on N sources: each solves M̂ x_k = b_k itself (checked with the one-source
    /// M̂) in the iterations of a separate CGNR (±1 per round).
    #[test]
    fn block_cgnr_solves_each_source_like_cgnr() {
        let (one, batch) = operators();
        let b = ColourSpinorField::<f64>::gaussian(batch.layout(), 16);
        let mut x = b.zeros_like();
        let opts = SolverOptions::with_tolerance(1e-10);
        let results = crate::solver::block_cgnr(&batch, &batch, &b, &mut x, &opts).unwrap();
        for (k, r) in results.iter().enumerate() {
            let (bk, xk) = (source(&b, k, one.layout()), source(&x, k, one.layout()));
            let res = residual(&one, &xk, &bk);
            assert!(
                r.is_converged() && res <= 1e-10,
                "source {k}: {res:e} {:?}",
                r.convergence
            );
            assert!(
                (r.true_residual - res).abs() <= 1e-13,
                "{} {res}",
                r.true_residual
            );
            let mut x1 = bk.zeros_like();
            let single = crate::solver::cgnr(&one, &one, &bk, &mut x1, &opts).unwrap();
            assert!(
                r.iterations.abs_diff(single.iterations) <= 2,
                "source {k}: {} batched, {} alone",
                r.iterations,
                single.iterations
            );
        }
    }

    /// Per-source coefficients must number the sources.
    #[test]
    fn coefficient_count_is_checked() {
        let (_, batch) = operators();
        let mut y = ColourSpinorField::<f64>::gaussian(batch.layout(), 15);
        let x = y.clone();
        let e = y.axpy_each(&[real(1.0)], &x).unwrap_err();
        assert!(
            e.to_string()
                .contains("1 per-source coefficients for a batch of 3"),
            "{e}"
        );
        assert_eq!(y.norm_sqr_each().len(), SOURCES);
        let want: f64 = y.norm_sqr_each().iter().sum();
        assert!((want - y.norm_sqr()).abs() <= 1e-12 * want);
    }
}
