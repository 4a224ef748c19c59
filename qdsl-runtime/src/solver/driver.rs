//! Bookkeeping shared by the Krylov solvers: option checks, the zero and non-finite
//! source, the residual history and progress, and reliable updates.
//!
//! The solution x lives in the high precision H. The iteration runs in the low
//! precision L and accumulates its corrections in x_L; a *reliable update* folds
//! x ← x + x_L, recomputes the true residual r_H = b − M x in H and restarts the
//! iterated residual from it (r_L ← r_H). One is triggered when the iterated residual has
//! dropped below δ times its largest value since the previous one (van der Vorst and Ye),
//! or when a check is overdue (twice the mean interval between checks so far: the stall
//! watchdog); and one always checks an iterated residual that has reached the
//! tolerance, so that convergence is declared on the true residual only. A check that
//! fails to lower the best true residual so far by a factor max(½, √δ) (a healthy
//! update has lowered it by about δ) while the iterated residual had run below the true
//! one (by 10 %) is *stalled* (a flat true residual beside a flat iterated one is
//! the method's own plateau, not an exhausted precision). The solve ends with
//! [`Convergence::Stagnation`] after more than
//! [`SolverOptions::max_stalled_checks`] stalled checks since the last progress, once as many
//! iterations (twice as many for BiCGStab) have passed since the last progress as the
//! solve took to make it: an exhausted precision never resumes, while an erratic
//! iteration (BiCGStab near criticality) has long flat stretches and then goes on
//! converging.
//!
//! The low-precision iteration works on the *normalized* residual r_L = r/s, s = ‖r‖ at
//! the last update (so that formats of limited range, f16 above all, never meet
//! residuals near their underflow), and x_L is the correction in those units:
//! x ← x + s x_L. The solvers see ‖r_L‖² in these units; the history, the progress
//! and the tolerance use the true scale.

use super::{
    Breakdown, Convergence, ConvertFrom, LinearOperator, Progress, ResidualKind, ResidualRecord,
    SolveResult, SolverError, SolverField, SolverOptions,
};
use crate::linear::real;
use std::time::Instant;

/// A check's iterated residual below this fraction of the true one means the iteration
/// has lost track of the truth (module docs): iterated and true residual of one iterate
/// agree to the low precision's rounding while it is sound, so 10 % apart is not noise.
const RAN_AHEAD: f64 = 0.9;

/// How a solve starts: finished at once (zero or non-finite source, or an initial guess
/// that already solves it), or running from the iterated residual r_L with ‖r_L‖².
pub(crate) enum Start<'a, H, L, O: ?Sized> {
    /// The solve is over before the first iteration.
    Done(SolveResult),
    /// Iterate from `residual` (r_L = b − M x₀ in L), of squared norm `r2`.
    Running {
        /// The driver of the running solve.
        driver: Driver<'a, H, L, O>,
        /// r_L.
        residual: L,
        /// ‖r_L‖².
        r2: f64,
    },
}

/// What the solver does after an iteration.
pub(crate) enum Step {
    /// Iterate on from r_L with ‖r_L‖² = `r2`.
    Continue {
        /// ‖r_L‖² (normalized units) to iterate on.
        r2: f64,
        /// `Some(c)` when r_L was just replaced by the normalized true residual: the
        /// units changed by c = s_old/s_new, so vectors in residual units kept from
        /// before (p, v) must be multiplied by c, inner products with r by c, and squared
        /// norms of old residuals by c².
        rescale: Option<f64>,
    },
    /// Stop with this outcome.
    Stop(Convergence),
}

/// The state of a running solve other than the solver's own vectors.
pub(crate) struct Driver<'a, H, L, O: ?Sized> {
    op: &'a O,
    b: &'a H,
    opts: &'a SolverOptions,
    start: Instant,
    b_norm: f64,
    /// s: r_L = r/s.
    scale: f64,
    /// x_L: the correction accumulated since the last reliable update, in units of s.
    x_low: L,
    /// r_H = b − M x, and scratch for x_L in H.
    r_high: H,
    x_low_high: H,
    /// max ‖r_L‖ since the last update, the best true ‖r‖² so far, and the consecutive
    /// true residuals that failed to lower it by max(½, √δ).
    r_max: f64,
    best_true: f64,
    stalled: usize,
    /// The iteration of the last check that made progress, and the patience factor
    /// (see [`Driver::set_patience`]).
    progress_at: usize,
    patience: usize,
    /// True-residual checks after the initial one, and the iteration of the last.
    checks: usize,
    last_check: usize,
    iterations: usize,
    reliable_updates: usize,
    applications: usize,
    flops: u64,
    history: Vec<ResidualRecord>,
}

impl<'a, H, L, O> Driver<'a, H, L, O>
where
    H: SolverField + ConvertFrom<L>,
    L: SolverField + ConvertFrom<H>,
    O: LinearOperator<H> + ?Sized,
{
    /// Checks the options, handles the zero source (x ← 0, converged at once), a
    /// non-finite source or initial residual (breakdown, x unchanged) and an initial
    /// guess that already meets the tolerance; otherwise computes r = b − M x₀.
    pub(crate) fn start(
        op: &'a O,
        b: &'a H,
        x: &mut H,
        opts: &'a SolverOptions,
    ) -> Result<Start<'a, H, L, O>, SolverError> {
        opts.check::<H, L>()?;
        let start = Instant::now();
        let b2 = b.norm_sqr()?;
        if b2 == 0.0 {
            x.set_zero();
            let mut result = SolveResult::zero_source();
            result.elapsed = start.elapsed();
            return Ok(Start::Done(result));
        }
        let r_high = b.zeros_like();
        let mut driver = Driver {
            op,
            b,
            opts,
            start,
            b_norm: b2.sqrt(),
            scale: 1.0,
            x_low: L::converted(&r_high),
            x_low_high: b.zeros_like(),
            r_high,
            r_max: 0.0,
            best_true: f64::INFINITY,
            stalled: 0,
            progress_at: 0,
            patience: 1,
            checks: 0,
            last_check: 0,
            iterations: 0,
            reliable_updates: 0,
            applications: 0,
            flops: 0,
            history: Vec::new(),
        };
        if !b2.is_finite() {
            let done = driver.stopped(
                Breakdown::NonFinite {
                    quantity: "‖b‖²"
                },
                f64::NAN,
            );
            return Ok(Start::Done(done));
        }
        let r2 = driver.true_residual(x)?;
        if !r2.is_finite() {
            let quantity = "‖b − M x₀‖²";
            let done = driver.stopped(Breakdown::NonFinite { quantity }, f64::NAN);
            return Ok(Start::Done(done));
        }
        if driver.reached(r2) {
            let residual = r2.sqrt() / driver.b_norm;
            return Ok(Start::Done(driver.result(Convergence::Converged, residual)));
        }
        driver.r_max = r2.sqrt();
        driver.best_true = r2;
        let mut residual = driver.x_low.zeros_like();
        let r2 = driver.normalize_into(&mut residual, r2)?;
        Ok(Start::Running {
            driver,
            residual,
            r2,
        })
    }

    /// Stagnation is declared only after `patience · k` iterations without progress, k the
    /// iteration of the last progress (default 1). Methods without a minimisation
    /// property (BiCGStab) have long flat stretches of the residual on nearly singular,
    /// indefinite operators and then resume, which an exhausted precision never does:
    /// they ask for more patience.
    pub(crate) fn set_patience(&mut self, patience: usize) {
        self.patience = patience;
    }

    /// Whether the iteration limit is reached.
    pub(crate) fn at_limit(&self) -> bool {
        self.iterations >= self.opts.max_iterations
    }

    /// Counts one application of the low-precision operator, of `flops` flops.
    pub(crate) fn applied(&mut self, flops: u64) {
        self.applications += 1;
        self.flops += flops;
    }

    /// x_L, the correction accumulated in L since the last reliable update.
    pub(crate) fn x_low(&mut self) -> &mut L {
        &mut self.x_low
    }

    /// Whether a residual of ‖r_L‖² = `r2` in normalized units meets the tolerance.
    pub(crate) fn meets_tolerance(&self, r2: f64) -> bool {
        self.reached(r2 * self.scale * self.scale)
    }

    /// s ← ‖r_H‖ (‖r_H‖² = `r2`), r_L ← r_H/s; returns ‖r_L‖² as rounded in L.
    fn normalize_into(&mut self, r: &mut L, r2: f64) -> Result<f64, SolverError> {
        self.scale = r2.sqrt();
        self.r_high.scale(real(1.0 / self.scale));
        r.convert_from(&self.r_high)?;
        r.norm_sqr()
    }

    /// Whether ‖r‖ ≤ tolerance · ‖b‖ for ‖r‖² = `r2`.
    fn reached(&self, r2: f64) -> bool {
        r2.sqrt() <= self.opts.tolerance * self.b_norm
    }

    /// r_H ← b − M x (one application in H); records and returns ‖r_H‖².
    fn true_residual(&mut self, x: &H) -> Result<f64, SolverError> {
        self.op.apply(&mut self.r_high, x)?;
        self.r_high.xpay(self.b, real(-1.0))?;
        self.applications += 1;
        self.flops += self.op.flops_per_apply();
        let r2 = self.r_high.norm_sqr()?;
        self.record(r2, ResidualKind::True);
        Ok(r2)
    }

    fn record(&mut self, r2: f64, kind: ResidualKind) {
        self.history.push(ResidualRecord {
            iteration: self.iterations,
            residual: r2.sqrt() / self.b_norm,
            kind,
        });
    }

    /// x ← x + s x_L, x_L ← 0.
    fn fold(&mut self, x: &mut H) -> Result<(), SolverError> {
        self.x_low_high.convert_from(&self.x_low)?;
        x.axpy(real(self.scale), &self.x_low_high)?;
        self.x_low.set_zero();
        Ok(())
    }

    /// Ends an iteration whose iterated residual r_L has ‖r_L‖² = `r2`: records it,
    /// reports progress, and replaces r_L by the true residual when the δ criterion or
    /// the stall watchdog asks for it or the iterated residual has reached the
    /// tolerance. Stops on convergence of the true residual, stagnation or a non-finite
    /// residual.
    pub(crate) fn step(&mut self, x: &mut H, r: &mut L, r2_low: f64) -> Result<Step, SolverError> {
        self.iterations += 1;
        if !r2_low.is_finite() {
            return Ok(Step::Stop(Convergence::Breakdown(Breakdown::NonFinite {
                quantity: "‖r‖²",
            })));
        }
        let r2 = r2_low * self.scale * self.scale;
        self.record(r2, ResidualKind::Iterated);
        if let Some(progress) = &self.opts.progress {
            progress(&Progress {
                iteration: self.iterations,
                max_iterations: self.opts.max_iterations,
                residual: r2.sqrt() / self.b_norm,
                tolerance: self.opts.tolerance,
            });
        }
        let r_norm = r2.sqrt();
        self.r_max = self.r_max.max(r_norm);
        let converged = self.reached(r2);
        let updates = self.opts.reliable_delta > 0.0;
        let reliable = updates && r_norm < self.opts.reliable_delta * self.r_max;
        // Stall watchdog: a check is overdue after twice the mean interval between the
        // checks so far (the iterated residual of an exhausted low precision can keep
        // creeping down without ever dropping by 1/δ).
        let overdue = updates
            && self.checks > 0
            && self.iterations - self.last_check > 2 * self.last_check / self.checks;
        if !(converged || reliable || overdue) {
            return Ok(Step::Continue {
                r2: r2_low,
                rescale: None,
            });
        }
        self.fold(x)?;
        let true_r2 = self.true_residual(x)?;
        self.checks += 1;
        self.last_check = self.iterations;
        if !true_r2.is_finite() {
            return Ok(Step::Stop(Convergence::Breakdown(Breakdown::NonFinite {
                quantity: "true ‖b − M x‖²",
            })));
        }
        if self.reached(true_r2) {
            return Ok(Step::Stop(Convergence::Converged));
        }
        if !converged {
            self.reliable_updates += 1;
        }
        // Progress: ‖r‖ at most f = max(½, √δ) times the best so far. A check without
        // progress is *stalled* only when the iteration ran ahead of the truth — its
        // iterated residual below [`RAN_AHEAD`] times the true one: the low precision
        // has lost track. A true residual that merely stays flat beside an iterated one that is
        // flat too is the iteration's own plateau (CG on an ill-conditioned normal
        // operator: the residual is not what CG minimises), not exhaustion: it neither
        // counts nor clears the stalled checks. Stagnation needs more than
        // `max_stalled_checks` stalled checks since the last progress *and* `patience`
        // times as many iterations since the last progress as the progress before it
        // took.
        let factor = self.opts.reliable_delta.sqrt().max(0.5);
        let ran_ahead = r2 < RAN_AHEAD * RAN_AHEAD * true_r2;
        if true_r2 <= factor * factor * self.best_true {
            self.stalled = 0;
            self.progress_at = self.iterations;
        } else if ran_ahead {
            self.stalled += 1;
            let patient = self.iterations - self.progress_at >= self.patience * self.progress_at;
            if self.stalled > self.opts.max_stalled_checks && patient {
                return Ok(Step::Stop(Convergence::Stagnation));
            }
        }
        self.best_true = self.best_true.min(true_r2);
        self.r_max = true_r2.sqrt();
        let old_scale = self.scale;
        let r2_low = self.normalize_into(r, true_r2)?;
        Ok(Step::Continue {
            r2: r2_low,
            rescale: Some(old_scale / self.scale),
        })
    }

    /// Ends the solve: unless it broke down, folds x_L into x; recomputes the true
    /// residual of the returned x (unless the last step just did) and builds the result.
    /// After a breakdown x_L (possibly non-finite) is dropped: x is the solution of the
    /// last check.
    pub(crate) fn finish(
        mut self,
        x: &mut H,
        convergence: Convergence,
    ) -> Result<SolveResult, SolverError> {
        // Every iteration records its iterated residual, so a true residual recorded
        // last is that of x as it is now.
        let residual = match (convergence, self.history.last()) {
            (_, Some(last)) if last.kind == ResidualKind::True => last.residual,
            (Convergence::Breakdown(_), _) => self.true_residual(x)?.sqrt() / self.b_norm,
            _ => {
                self.fold(x)?;
                self.true_residual(x)?.sqrt() / self.b_norm
            }
        };
        Ok(self.result(convergence, residual))
    }

    /// A result with no further work (x as it is).
    fn stopped(self, breakdown: Breakdown, residual: f64) -> SolveResult {
        self.result(Convergence::Breakdown(breakdown), residual)
    }

    fn result(self, convergence: Convergence, true_residual: f64) -> SolveResult {
        SolveResult {
            convergence,
            iterations: self.iterations,
            reliable_updates: self.reliable_updates,
            true_residual,
            elapsed: self.start.elapsed(),
            operator_applications: self.applications,
            operator_flops: self.flops,
            history: self.history,
        }
    }
}
