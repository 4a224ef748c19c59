//! Training the transfer T of the reduced-Ls preconditioner ([`super::ReducedLs`]).
//!
//! # The objective
//!
//! For training vectors v_i (i = 1…N, each of unit norm) and the operator A = M̂†M̂ of
//! the solve, with K̂ the reduced preconditioner's inner solve and μ fixed,
//!
//! χ²(T) = (1/N) Σ_i ‖e_i‖²,  e_i = A (T† K̂ T + μ) v_i − v_i,
//!
//! which vanishes when the preconditioner inverts A on every v_i (χ² = 1 for z = 0).
//! That is the *residual* objective ([`Objective::Residual`]), for residual vectors v_i.
//! On an eigenvector of A with eigenvalue λ, where the preconditioner acts as p(λ), it
//! weighs |λ p(λ) − 1|² by the residual's component, which is λ times the error's: the low
//! modes, which T must carry, count λ² less than the high ones, where μ acts. The *error*
//! objective ([`Objective::Error`]) takes error vectors e_i = x* − x_k instead,
//!
//! χ²_E(T) = (1/N) Σ_i ‖(T† K̂ T + μ) A e_i − e_i‖²,
//!
//! which weighs every mode by its error. Both are χ² = (1/N) Σ_i ‖L P u_i − t_i‖² with
//! P = T†K̂T + μ: L = A, u_i = t_i = v_i for the residual objective, L = 1, u_i = A e_i,
//! t_i = e_i for the error objective.
//!
//! # Its gradient
//!
//! With d_i = L P u_i − t_i, w_i = T u_i, y_i = K̂ w_i, g_i = L d_i and h_i = K̂ T g_i,
//! and L and K̂ Hermitian and linear,
//!
//! δd_i = L (δT† y_i + T† K̂ δT u_i),
//! δχ² = (2/N) Re Σ_i ⟨d_i, δd_i⟩ = (2/N) Re Σ_i [⟨y_i, δT g_i⟩ + ⟨h_i, δT u_i⟩]
//!
//! (⟨d, L δT† y⟩ = ⟨δT L d, y⟩ = conj⟨y, δT g⟩ and ⟨d, L T† K̂ δT u⟩ = ⟨K̂ T L d, δT u⟩),
//! i.e. δχ² = 2 Re Σ G δt with G_{ŝ s, α β} = (1/N) Σ_i Σ_{site, c} [conj(y_i)_{ŝ α c}
//! (g_i)_{s β c} + conj(h_i)_{ŝ α c} (u_i)_{s β c}], which
//! [`super::Transfer::project_gradient`] turns into the gradient in the form's real
//! parameters. The cost per vector: two K̂ and two A applications.
//!
//! The gradient is exact for a linear Hermitian K̂ (the exact block inverse, a fixed
//! polynomial in Â; the test checks it against finite differences with such a K̂). For
//! the k inner CG iterations of MSPCG, K̂ is only approximately linear (CG's α, β depend
//! on its input); the gradient then neglects that dependence, and the minimiser's line
//! search works on the exact χ², so every accepted step lowers the true χ².
//!
//! μ enters linearly: δd_i = L u_i δμ, so ∂χ²/∂μ = (2/N) Re Σ_i ⟨g_i, u_i⟩; [`train`]
//! optimises it together with T when asked ([`TrainOptions::train_mu`]; trial points are
//! projected onto μ ≥ 0), else keeps it fixed.
//!
//! # The training vectors
//!
//! Vectors rich in the low modes that the preconditioned solve has most trouble with:
//! [`low_mode_vectors`] runs flexible PCG with a given preconditioner on A x = b from
//! x = 0 for random b and keeps the normalised residuals of its last iterations (the
//! high modes are gone from them after a few iterations) or, for the error objective,
//! the normalised errors x* − x_k of those iterations (the solve then runs on to
//! convergence for x*).
//!
//! # The minimiser
//!
//! [`train`]: L-BFGS (memory 6) with a backtracking line search (Armijo, c = 10⁻⁴,
//! halving, at most 12 trials); it stops after the given iterations, when no trial step
//! lowers χ², or when the relative decrease of χ² over an iteration is below 10⁻⁶.

use super::reduced::{transfer_error, with_ls};
use super::{Preconditioner, Transfer};
use crate::linear::{real, LinearOperator, SolverError, SolverField};
use qdsl_core::field::ColourSpinorField;
use std::borrow::Cow;

type F64 = ColourSpinorField<f64>;

/// What χ² measures (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Objective {
    /// ‖A P v − v‖² over residual vectors v.
    Residual,
    /// ‖P A e − e‖² over error vectors e.
    Error,
}

impl Objective {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Residual => "residual",
            Self::Error => "error",
        }
    }

    /// From its name.
    pub fn from_name(name: &str) -> Result<Self, String> {
        match name {
            "residual" => Ok(Self::Residual),
            "error" => Ok(Self::Error),
            other => Err(format!(
                "training objective {other:?}: expected \"residual\" or \"error\""
            )),
        }
    }
}

/// The training vectors with the objective they are for.
#[derive(Clone, Debug)]
pub struct TrainingSet {
    /// What χ² measures.
    pub objective: Objective,
    /// Unit vectors: residuals or errors, as the objective says.
    pub vectors: Vec<F64>,
}

impl TrainingSet {
    /// The number of vectors.
    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    /// u_i = A v_i for the error objective, v_i itself for the residual one (χ² =
    /// (1/N) Σ ‖L P u_i − v_i‖², module docs).
    fn input<'v, A: LinearOperator<F64> + ?Sized>(
        &self,
        a: &A,
        v: &'v F64,
    ) -> Result<Cow<'v, F64>, SolverError> {
        match self.objective {
            Objective::Residual => Ok(Cow::Borrowed(v)),
            Objective::Error => {
                let mut u = v.zeros_like();
                a.apply(&mut u, v)?;
                Ok(Cow::Owned(u))
            }
        }
    }

    /// out = L x: A x for the residual objective, x for the error one.
    fn outer<A: LinearOperator<F64> + ?Sized>(
        &self,
        a: &A,
        out: &mut F64,
        x: &F64,
    ) -> Result<(), SolverError> {
        match self.objective {
            Objective::Residual => a.apply(out, x),
            Objective::Error => SolverField::copy_from(out, x),
        }
    }
}

/// One vector through the reduced preconditioner without μ: w = T v, y = K̂ w, z = T† y.
struct Lifted {
    w: F64,
    y: F64,
    z: F64,
}

fn lift<K: Preconditioner<F64> + ?Sized>(
    k: &K,
    transfer: &Transfer,
    v: &F64,
) -> Result<Lifted, SolverError> {
    let hat = with_ls(v.layout(), transfer.ls_hat());
    let mut w = F64::zeros(hat);
    transfer.apply(&mut w, v).map_err(transfer_error)?;
    let mut y = F64::zeros(hat);
    k.apply(&mut y, &w)?;
    let mut z = v.zeros_like();
    transfer.apply_dagger(&mut z, &y).map_err(transfer_error)?;
    Ok(Lifted { w, y, z })
}

/// χ² of the set's objective and, when asked, its gradient in the transfer's real
/// parameters followed by ∂χ²/∂μ = (2/N) Re Σ_i ⟨g_i, u_i⟩ (module docs).
pub fn chi2<A, K>(
    a: &A,
    k: &K,
    transfer: &Transfer,
    mu: f64,
    set: &TrainingSet,
    gradient: bool,
) -> Result<(f64, Option<Vec<f64>>), SolverError>
where
    A: LinearOperator<F64> + ?Sized,
    K: Preconditioner<F64> + ?Sized,
{
    let n = set.len().max(1) as f64;
    let mut g_mat =
        vec![[[qdsl_core::Complex::new(0.0, 0.0); 4]; 4]; transfer.ls_hat() * transfer.ls()];
    let mut sum = 0.0;
    let mut d_mu = 0.0;
    for v in &set.vectors {
        let u = set.input(a, v)?;
        let Lifted { mut w, y, mut z } = lift(k, transfer, &u)?;
        SolverField::axpy(&mut z, real(mu), &u)?;
        let mut d = v.zeros_like();
        set.outer(a, &mut d, &z)?;
        SolverField::axpy(&mut d, real(-1.0), v)?;
        sum += SolverField::norm_sqr(&d)?;
        if gradient {
            let mut g = v.zeros_like();
            set.outer(a, &mut g, &d)?;
            d_mu += 2.0 * SolverField::dot(&g, &u)?.re;
            transfer
                .accumulate_outer(&mut g_mat, &y, &g)
                .map_err(transfer_error)?;
            transfer.apply(&mut w, &g).map_err(transfer_error)?;
            let mut h = y.zeros_like();
            k.apply(&mut h, &w)?;
            transfer
                .accumulate_outer(&mut g_mat, &h, &u)
                .map_err(transfer_error)?;
        }
    }
    let grad = gradient.then(|| {
        transfer
            .project_gradient(&g_mat)
            .into_iter()
            .chain([d_mu])
            .map(|x| x / n)
            .collect()
    });
    Ok((sum / n, grad))
}

/// The best scale of T and (if asked) μ for the given vectors: χ² is quadratic in
/// (σ, μ) when T is replaced by √σ T, because the inner solve is homogeneous
/// (K̂(c w) = c K̂ w for c > 0; CG from zero is): with a_i = L T†K̂T u_i and b_i = L u_i
/// (the objective's L and u_i, module docs),
///
/// χ²(σ, μ) = (1/N) Σ_i ‖σ a_i + μ b_i − t_i‖²,
///
/// minimised in closed form (2 × 2 normal equations, or σ alone with μ fixed). Cost per
/// vector: one K̂ and two A applications.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// σ: T is to be multiplied by √σ.
    pub sigma: f64,
    /// μ (the given one unless fitted).
    pub mu: f64,
    /// χ² before (σ = 1 and the given μ) and after.
    pub chi2: (f64, f64),
}

/// Fits σ (and μ when `fit_mu`, μ ≥ 0) as [`Calibration`] says; σ ≤ 0 or a non-finite
/// fit (a preconditioner that the vectors cannot scale) leaves σ = 1 and μ as given.
pub fn calibrate<A, K>(
    a: &A,
    k: &K,
    transfer: &Transfer,
    mu: f64,
    set: &TrainingSet,
    fit_mu: bool,
) -> Result<Calibration, SolverError>
where
    A: LinearOperator<F64> + ?Sized,
    K: Preconditioner<F64> + ?Sized,
{
    // Sums of ⟨a,a⟩, Re⟨a,b⟩, ⟨b,b⟩, Re⟨a,v⟩, Re⟨b,v⟩, ⟨v,v⟩.
    let mut m = [0.0f64; 6];
    for v in &set.vectors {
        let u = set.input(a, v)?;
        let z = lift(k, transfer, &u)?.z;
        let mut av = v.zeros_like();
        set.outer(a, &mut av, &z)?;
        let mut bv = v.zeros_like();
        set.outer(a, &mut bv, &u)?;
        m[0] += SolverField::norm_sqr(&av)?;
        m[1] += SolverField::dot(&av, &bv)?.re;
        m[2] += SolverField::norm_sqr(&bv)?;
        m[3] += SolverField::dot(&av, v)?.re;
        m[4] += SolverField::dot(&bv, v)?.re;
        m[5] += SolverField::norm_sqr(v)?;
    }
    let n = set.len().max(1) as f64;
    let chi2 = |sigma: f64, mu: f64| {
        (sigma * sigma * m[0] + 2.0 * sigma * mu * m[1] + mu * mu * m[2]
            - 2.0 * sigma * m[3]
            - 2.0 * mu * m[4]
            + m[5])
            / n
    };
    let (sigma, fitted_mu) = if fit_mu {
        let det = m[0] * m[2] - m[1] * m[1];
        let sigma = (m[3] * m[2] - m[4] * m[1]) / det;
        let fitted = (m[0] * m[4] - m[1] * m[3]) / det;
        if sigma > 0.0 && fitted >= 0.0 {
            (sigma, fitted)
        } else {
            // Outside σ > 0, μ ≥ 0 (a quadratic's constrained minimum then lies on the
            // boundary μ = 0): σ alone at μ = 0.
            (m[3] / m[0], 0.0)
        }
    } else {
        ((m[3] - mu * m[1]) / m[0], mu)
    };
    let before = chi2(1.0, mu);
    if !(sigma.is_finite() && sigma > 0.0 && fitted_mu.is_finite()) {
        return Ok(Calibration {
            sigma: 1.0,
            mu,
            chi2: (before, before),
        });
    }
    Ok(Calibration {
        sigma,
        mu: fitted_mu,
        chi2: (before, chi2(sigma, fitted_mu)),
    })
}

/// Training knobs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrainOptions {
    /// L-BFGS iterations at most.
    pub iterations: usize,
    /// Whether μ is trained together with T (else it stays fixed).
    pub train_mu: bool,
}

/// What training did.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainReport {
    /// χ² at the start and after every accepted iteration.
    pub chi2: Vec<f64>,
    /// χ² (and gradient) evaluations.
    pub evaluations: usize,
    /// Why it stopped.
    pub stop: &'static str,
    /// μ at the end (the given one unless trained).
    pub mu: f64,
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Minimises χ² over T (and μ with [`TrainOptions::train_mu`]; module docs) from
/// `transfer`'s current parameters and `mu`, leaving the minimiser in `transfer` and
/// [`TrainReport::mu`].
pub fn train<A, K>(
    a: &A,
    k: &K,
    transfer: &mut Transfer,
    mu: f64,
    set: &TrainingSet,
    opts: &TrainOptions,
    mut progress: impl FnMut(usize, f64),
) -> Result<TrainReport, SolverError>
where
    A: LinearOperator<F64> + ?Sized,
    K: Preconditioner<F64> + ?Sized,
{
    const MEMORY: usize = 6;
    let n_t = transfer.params().len();
    // x = (T's parameters, μ); g = ∇χ², its μ component zero when μ stays fixed.
    let eval = |transfer: &mut Transfer, x: &[f64]| {
        transfer.set_params(&x[..n_t]);
        if x[n_t] < 0.0 {
            // μ < 0 would make the preconditioner indefinite: not a trial point.
            return Ok((f64::INFINITY, vec![0.0; x.len()]));
        }
        let (f, g) = chi2(a, k, transfer, x[n_t], set, true)?;
        let mut g = g.expect("gradient asked for");
        if !opts.train_mu {
            g[n_t] = 0.0;
        }
        Ok::<_, SolverError>((f, g))
    };
    let mut x = transfer.params();
    x.push(mu);
    let (mut f, mut g) = eval(transfer, &x)?;
    let mut report = TrainReport {
        chi2: vec![f],
        evaluations: 1,
        stop: "iteration limit",
        mu,
    };
    progress(0, f);
    let mut pairs: Vec<(Vec<f64>, Vec<f64>, f64)> = Vec::new();
    for iter in 1..=opts.iterations {
        // Two-loop recursion: d = −H g.
        let mut q = g.clone();
        let mut alphas = Vec::with_capacity(pairs.len());
        for (s, y, rho) in pairs.iter().rev() {
            let alpha = rho * dot(s, &q);
            q.iter_mut().zip(y).for_each(|(q, y)| *q -= alpha * y);
            alphas.push(alpha);
        }
        let gamma = match pairs.last() {
            Some((s, y, _)) => dot(s, y) / dot(y, y),
            // First step: move T's parameters by 5 % of their norm.
            None => {
                let t_norm = dot(&x[..n_t], &x[..n_t]).sqrt();
                0.05 * t_norm / dot(&g, &g).sqrt().max(f64::MIN_POSITIVE)
            }
        };
        q.iter_mut().for_each(|q| *q *= gamma);
        for ((s, y, rho), alpha) in pairs.iter().zip(alphas.iter().rev()) {
            let beta = rho * dot(y, &q);
            q.iter_mut()
                .zip(s)
                .for_each(|(q, s)| *q += (alpha - beta) * s);
        }
        let mut d: Vec<f64> = q.iter().map(|q| -q).collect();
        let mut slope = dot(&g, &d);
        if slope.is_nan() || slope >= 0.0 {
            pairs.clear();
            d = g.iter().map(|g| -gamma.abs().max(1e-12) * g).collect();
            slope = dot(&g, &d);
        }
        let mut step = 1.0;
        let mut accepted = None;
        for _ in 0..12 {
            let mut trial: Vec<f64> = x.iter().zip(&d).map(|(x, d)| x + step * d).collect();
            // Projected onto μ ≥ 0: a step that would push μ below 0 stops it at 0.
            trial[n_t] = trial[n_t].max(0.0);
            let (f_new, g_new) = eval(transfer, &trial)?;
            report.evaluations += 1;
            if f_new.is_finite() && f_new <= f + 1e-4 * step * slope {
                accepted = Some((trial, f_new, g_new));
                break;
            }
            step *= 0.5;
        }
        let Some((x_new, f_new, g_new)) = accepted else {
            report.stop = "no step lowers χ²";
            break;
        };
        let s: Vec<f64> = x_new.iter().zip(&x).map(|(a, b)| a - b).collect();
        let y: Vec<f64> = g_new.iter().zip(&g).map(|(a, b)| a - b).collect();
        let sy = dot(&s, &y);
        if sy > 0.0 {
            if pairs.len() == MEMORY {
                pairs.remove(0);
            }
            pairs.push((s, y, 1.0 / sy));
        }
        let decrease = (f - f_new) / f.max(f64::MIN_POSITIVE);
        x = x_new;
        f = f_new;
        g = g_new;
        report.chi2.push(f);
        progress(iter, f);
        if decrease < 1e-6 {
            report.stop = "χ² stalled";
            break;
        }
    }
    transfer.set_params(&x[..n_t]);
    report.mu = x[n_t];
    Ok(report)
}

/// Training vectors (module docs): for each source b, `iterations` flexible PCG
/// iterations (Polak–Ribière β, as [`super::pcg`]) on A x = b from x = 0 with `precond`;
/// of the last `keep` iterations the normalised residuals r_k ([`Objective::Residual`])
/// or errors x* − x_k ([`Objective::Error`]: the solve runs on until ‖r‖ ≤ 10⁻⁸ ‖b‖, at
/// most 20 times `iterations` in all, and its last iterate is x*).
pub fn low_mode_vectors<A, P>(
    a: &A,
    precond: &P,
    sources: &[F64],
    iterations: usize,
    keep: usize,
    objective: Objective,
) -> Result<TrainingSet, SolverError>
where
    A: LinearOperator<F64> + ?Sized,
    P: Preconditioner<F64> + ?Sized,
{
    let unit = |mut v: F64| -> Result<Option<F64>, SolverError> {
        let norm = SolverField::norm_sqr(&v)?.sqrt();
        Ok((norm.is_finite() && norm > 0.0).then(|| {
            SolverField::scale(&mut v, real(1.0 / norm));
            v
        }))
    };
    let limit = match objective {
        Objective::Residual => iterations,
        Objective::Error => 20 * iterations.max(1),
    };
    let mut vectors = Vec::new();
    for b in sources {
        let b_norm = SolverField::norm_sqr(b)?.sqrt();
        let mut x = b.zeros_like();
        let mut r = b.clone();
        let mut z = b.zeros_like();
        precond.apply(&mut z, &r)?;
        let mut p = z.clone();
        let mut rz = SolverField::dot(&r, &z)?.re;
        let mut ap = b.zeros_like();
        let mut r_old = b.zeros_like();
        let mut kept = Vec::new();
        for j in 1..=limit {
            a.apply(&mut ap, &p)?;
            let pap = SolverField::dot(&p, &ap)?.re;
            if !(pap.is_finite() && pap > 0.0 && rz.is_finite() && rz > 0.0) {
                break;
            }
            let alpha = rz / pap;
            SolverField::axpy(&mut x, real(alpha), &p)?;
            SolverField::copy_from(&mut r_old, &r)?;
            SolverField::axpy(&mut r, real(-alpha), &ap)?;
            if j + keep > iterations && j <= iterations {
                kept.push(match objective {
                    Objective::Residual => r.clone(),
                    Objective::Error => x.clone(),
                });
            }
            let converged = SolverField::norm_sqr(&r)?.sqrt() <= 1e-8 * b_norm;
            if j >= iterations && (objective == Objective::Residual || converged) {
                break;
            }
            precond.apply(&mut z, &r)?;
            let rz_new = SolverField::dot(&r, &z)?.re;
            let beta = (rz_new - SolverField::dot(&r_old, &z)?.re) / rz;
            rz = rz_new;
            SolverField::xpay(&mut p, &z, real(beta))?;
        }
        for mut v in kept {
            if objective == Objective::Error {
                // e_k = x* − x_k.
                SolverField::xpay(&mut v, &x, real(-1.0))?;
            }
            vectors.extend(unit(v)?);
        }
    }
    Ok(TrainingSet { objective, vectors })
}
