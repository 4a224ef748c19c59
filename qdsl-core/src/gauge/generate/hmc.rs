//! Quenched hybrid Monte Carlo with nested time scales.
//!
//! Fields: links U and momenta P_μ(x) ∈ su(3) (anti-hermitian, traceless; stored in a
//! [`GaugeField`] as container). The Hamiltonian is
//!
//! H = K + S[U],  K = −½ Σ_{x,μ} tr P_μ(x)² = ½ Σ ‖P‖²_F,  S = Σ_levels S_level[U],
//!
//! with the equations of motion U̇ = P U, Ṗ = F[U], F_μ(x) = −(β/3) TA[U_μ(x) Σ_μ(x)†]
//! the force of each level's action ([`force_cpu`]; the force convention of
//! [`crate::dsl::paths::force`]: dS/dt = tr[X F] for U → e^{tX} U, so dH/dt = 0).
//!
//! A trajectory: momenta drawn with density ∝ e^{−K} (P = i√2 H, H from
//! [`gaussian_su3_algebra`], i.e. each of the 8 algebra components with variance 2, since
//! −½ tr P² = ¼ Σ_a h_a²), then molecular dynamics for time τ, then Metropolis: accept
//! with probability min(1, e^{−ΔH}).
//!
//! **Nested integration** ([`Level`]s, outermost first, Sexton–Weingarten): level k with
//! n_k steps integrates over time h in steps ε = h/n_k; each step updates P with level
//! k's force and, in between, runs level k + 1 over the "position" sub-step (the
//! innermost level updates U ← e^{εP} U, [`ColourMatrix::exp`]). Per step of size ε:
//!
//! * leapfrog: P += ε/2 F; inner(ε); P += ε/2 F;
//! * Omelyan 2MN (Omelyan, Mryglod and Folk, Comput. Phys. Commun. 151 (2003) 272):
//!   P += λε F; inner(ε/2); P += (1 − 2λ)ε F; inner(ε/2); P += λε F,
//!   λ = 0.1931833275037836, which minimises the norm of the leading error.
//!
//! Both are symmetric (time-reversible) and symplectic, second order: ΔH = O(ε²) per
//! trajectory and ⟨ΔH⟩ = O(ε⁴) in equilibrium.

use super::GenerateError;
use crate::dsl::paths::force::{force_cpu, ForcePlan};
use crate::dsl::paths::ActionSpec;
use crate::field::{gaussian_su3_algebra, GaugeField, RandomStream, StreamDomain};
use crate::lattice::Lattice;
use crate::reduce::ordered_sum_by_index;
use num_complex::Complex;
use rayon::prelude::*;

/// Omelyan's 2MN parameter λ (Omelyan, Mryglod and Folk 2003, eq. 31, the "minimum norm"
/// value).
pub const OMELYAN_LAMBDA: f64 = 0.193_183_327_503_783_6;

/// A second-order symmetric integrator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Integrator {
    /// Leapfrog (Störmer–Verlet): one force evaluation per step.
    Leapfrog,
    /// Omelyan's 2MN: two force evaluations per step, ~10× smaller error coefficient.
    Omelyan,
}

/// Where a level's force F_μ(x) = −(β/3) TA[U_μ(x) Σ_μ(x)†] is computed: the CPU
/// ([`force_cpu`], the default) or another back end (qdsl-runtime's GPU force plugs in
/// here). Implementations must compute the force of `plan` with the convention of
/// [`crate::dsl::paths::force`].
pub trait ForceBackend: std::fmt::Debug {
    /// The force of every link of `u` for the action of `plan` at coupling `beta`.
    fn force(
        &self,
        plan: &ForcePlan,
        u: &GaugeField<f64>,
        beta: f64,
    ) -> Result<GaugeField<f64>, GenerateError>;
}

/// The CPU force ([`force_cpu`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuForce;

impl ForceBackend for CpuForce {
    fn force(
        &self,
        plan: &ForcePlan,
        u: &GaugeField<f64>,
        beta: f64,
    ) -> Result<GaugeField<f64>, GenerateError> {
        Ok(force_cpu(plan, u, beta)?)
    }
}

/// One time scale: an action (its force), its coupling, the steps per outer sub-step
/// and the integrator.
#[derive(Clone, Debug)]
pub struct Level {
    /// The action's force plan.
    pub plan: ForcePlan,
    /// Where the force is computed ([`CpuForce`] unless [`Level::with_backend`]).
    pub backend: std::rc::Rc<dyn ForceBackend>,
    /// β of this action.
    pub beta: f64,
    /// Steps per trajectory (outermost level) or per sub-step of the level above.
    pub steps: usize,
    /// The integrator of this level.
    pub integrator: Integrator,
}

impl Level {
    /// A level of `action` at `beta` with `steps` steps of `integrator`; an error for an
    /// invalid spec, zero steps or a non-finite β.
    pub fn new(
        action: &ActionSpec,
        beta: f64,
        steps: usize,
        integrator: Integrator,
    ) -> Result<Self, GenerateError> {
        if steps == 0 {
            return Err(GenerateError::Parameter {
                name: "steps",
                expected: "at least 1 step per level".into(),
                found: "0".into(),
            });
        }
        if !beta.is_finite() {
            return Err(GenerateError::Parameter {
                name: "beta",
                expected: "a finite number".into(),
                found: beta.to_string(),
            });
        }
        Ok(Self {
            plan: ForcePlan::new(action)?,
            backend: std::rc::Rc::new(CpuForce),
            beta,
            steps,
            integrator,
        })
    }

    /// The same level with its force computed by `backend`.
    pub fn with_backend(self, backend: std::rc::Rc<dyn ForceBackend>) -> Self {
        Self { backend, ..self }
    }
}

/// Quenched HMC: the levels (outermost first) and the trajectory length τ.
#[derive(Clone, Debug)]
pub struct Hmc {
    /// The time scales, outermost (fewest steps, most expensive force) first.
    pub levels: Vec<Level>,
    /// The trajectory length τ.
    pub tau: f64,
}

/// The outcome of one trajectory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrajectoryResult {
    /// ΔH = H(end) − H(start) of the proposal.
    pub delta_h: f64,
    /// Whether the proposal was accepted.
    pub accepted: bool,
}

/// Momenta P_μ(x) ∈ su(3), one per link (a [`GaugeField`] used as container).
pub type Momenta = GaugeField<f64>;

impl Hmc {
    /// HMC over `levels` with trajectory length `tau`; an error for no levels or a
    /// non-positive τ.
    pub fn new(levels: Vec<Level>, tau: f64) -> Result<Self, GenerateError> {
        if levels.is_empty() {
            return Err(GenerateError::Parameter {
                name: "levels",
                expected: "at least one time scale".into(),
                found: "none".into(),
            });
        }
        if !(tau.is_finite() && tau > 0.0) {
            return Err(GenerateError::Parameter {
                name: "tau",
                expected: "a finite positive trajectory length".into(),
                found: tau.to_string(),
            });
        }
        Ok(Self { levels, tau })
    }

    /// S[U] = Σ_levels β_level S_level[U].
    pub fn action(&self, u: &GaugeField<f64>) -> Result<f64, GenerateError> {
        self.levels
            .iter()
            .map(|l| Ok(l.plan.action.action(u, l.beta)?))
            .sum()
    }

    /// Momenta with density ∝ e^{−K}: P_μ(x) = i√2 H, H = [`gaussian_su3_algebra`] of the
    /// stream ([`StreamDomain::HmcMomenta`], index trajectory · 4V + 4 · lex(x) + μ).
    pub fn momenta(lattice: Lattice, seed: u64, trajectory: u64) -> Momenta {
        let links = 4 * lattice.volume() as u64;
        let i_sqrt2 = Complex::new(0.0, std::f64::consts::SQRT_2);
        GaugeField::par_from_fn(lattice, |x, mu| {
            let index = trajectory
                .wrapping_mul(links)
                .wrapping_add(4 * lattice.lex_index(x) as u64 + mu as u64);
            let mut s = RandomStream::new(seed, StreamDomain::HmcMomenta, index);
            gaussian_su3_algebra(&mut s).scale_complex(i_sqrt2)
        })
    }

    /// K = −½ Σ tr P² = ½ Σ ‖P‖²_F (P anti-hermitian), summed in a fixed order.
    pub fn kinetic(p: &Momenta) -> f64 {
        let links = p.links();
        0.5 * ordered_sum_by_index(links.len(), |i| links[i].norm_sqr())
    }

    /// Molecular dynamics for time τ from (U, P), in place.
    pub fn integrate(&self, u: &mut GaugeField<f64>, p: &mut Momenta) -> Result<(), GenerateError> {
        self.integrate_state(&mut CpuState { hmc: self, u, p })
    }

    /// Molecular dynamics for time τ of any field state (the CPU's (U, P), or fields on
    /// a device): the nested schedule of the levels, calling the state's kicks and
    /// drifts.
    pub fn integrate_state(&self, state: &mut dyn MdState) -> Result<(), GenerateError> {
        self.integrate_level(0, self.tau, state)
    }

    /// Molecular dynamics for time `h` (not τ) from (U, P), in place: the levels as the
    /// inner time scales of an outer integrator (RHMC's fermion level).
    pub fn integrate_for(
        &self,
        h: f64,
        u: &mut GaugeField<f64>,
        p: &mut Momenta,
    ) -> Result<(), GenerateError> {
        self.integrate_level(0, h, &mut CpuState { hmc: self, u, p })
    }

    fn integrate_level(
        &self,
        k: usize,
        h: f64,
        state: &mut dyn MdState,
    ) -> Result<(), GenerateError> {
        let level = &self.levels[k];
        let eps = h / level.steps as f64;
        for _ in 0..level.steps {
            match level.integrator {
                Integrator::Leapfrog => {
                    state.kick(k, eps / 2.0)?;
                    self.drift(k, eps, state)?;
                    state.kick(k, eps / 2.0)?;
                }
                Integrator::Omelyan => {
                    state.kick(k, OMELYAN_LAMBDA * eps)?;
                    self.drift(k, eps / 2.0, state)?;
                    state.kick(k, (1.0 - 2.0 * OMELYAN_LAMBDA) * eps)?;
                    self.drift(k, eps / 2.0, state)?;
                    state.kick(k, OMELYAN_LAMBDA * eps)?;
                }
            }
        }
        Ok(())
    }

    /// The position sub-step of level k over time dt: level k + 1, or U ← e^{dt P} U.
    fn drift(&self, k: usize, dt: f64, state: &mut dyn MdState) -> Result<(), GenerateError> {
        if k + 1 < self.levels.len() {
            return self.integrate_level(k + 1, dt, state);
        }
        state.drift(dt)
    }

    /// The Metropolis decision of trajectory `trajectory`: accept with probability
    /// min(1, e^{−ΔH}) (the uniform from [`StreamDomain::HmcAccept`], index trajectory); a
    /// NaN ΔH is rejected.
    pub fn metropolis(seed: u64, trajectory: u64, delta_h: f64) -> bool {
        let r = RandomStream::new(seed, StreamDomain::HmcAccept, trajectory).uniform();
        delta_h <= 0.0 || r < (-delta_h).exp()
    }

    /// One trajectory with index `trajectory` (which selects the momentum and
    /// accept/reject streams): U is replaced by the proposal if it is accepted.
    pub fn trajectory(
        &self,
        u: &mut GaugeField<f64>,
        seed: u64,
        trajectory: u64,
    ) -> Result<TrajectoryResult, GenerateError> {
        let mut p = Self::momenta(*u.lattice(), seed, trajectory);
        let h0 = Self::kinetic(&p) + self.action(u)?;
        let mut proposal = u.clone();
        self.integrate(&mut proposal, &mut p)?;
        let h1 = Self::kinetic(&p) + self.action(&proposal)?;
        let delta_h = h1 - h0;
        let accepted = Self::metropolis(seed, trajectory, delta_h);
        if accepted {
            *u = proposal;
        }
        Ok(TrajectoryResult { delta_h, accepted })
    }
}

/// The fields of molecular dynamics as the integrator sees them: [`Hmc::integrate_state`]
/// runs the nested schedule and calls these steps.
pub trait MdState {
    /// P ← P + dt F_level[U] (the force of level `level`).
    fn kick(&mut self, level: usize, dt: f64) -> Result<(), GenerateError>;
    /// U ← e^{dt P} U, link by link.
    fn drift(&mut self, dt: f64) -> Result<(), GenerateError>;
}

/// The CPU's fields: links and momenta in host memory, each level's force from its
/// back end.
struct CpuState<'a> {
    hmc: &'a Hmc,
    u: &'a mut GaugeField<f64>,
    p: &'a mut Momenta,
}

impl MdState for CpuState<'_> {
    fn kick(&mut self, level: usize, dt: f64) -> Result<(), GenerateError> {
        let level = &self.hmc.levels[level];
        let f = level.backend.force(&level.plan, self.u, level.beta)?;
        self.p
            .links_mut()
            .par_iter_mut()
            .zip(f.links().par_iter())
            .for_each(|(p, f)| *p += f.scale(dt));
        Ok(())
    }

    fn drift(&mut self, dt: f64) -> Result<(), GenerateError> {
        self.u
            .links_mut()
            .par_iter_mut()
            .zip(self.p.links().par_iter())
            .for_each(|(u, p)| *u = p.scale(dt).exp() * *u);
        Ok(())
    }
}

/// Sets every momentum to −P (the reversal of the trajectory's direction).
pub fn negate(p: &mut Momenta) {
    for m in p.links_mut() {
        *m = m.scale(-1.0);
    }
}

/// The largest |component| of A − B over all links.
pub fn max_link_difference(a: &GaugeField<f64>, b: &GaugeField<f64>) -> f64 {
    a.links()
        .iter()
        .zip(b.links())
        .map(|(x, y)| (*x - *y).max_abs_component())
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gauge::generate::heatbath::Heatbath;
    use crate::gauge::generate::stats::Series;
    use crate::gauge::generate::test_actions::{plaquette_only, rectangle_only, symanzik, wilson};
    use crate::math::ColourMatrix;

    fn lattice() -> Lattice {
        Lattice::new([4, 4, 4, 4]).unwrap()
    }

    /// A 4⁴ Wilson field at β = 5.5 in equilibrium (heatbath, 30 sweeps from cold).
    fn thermalised(beta: f64) -> GaugeField<f64> {
        let hb = Heatbath::new(&wilson(), beta, lattice()).unwrap();
        let mut u = GaugeField::unit(lattice());
        for sweep in 0..30 {
            hb.heatbath_sweep(&mut u, 3, sweep);
        }
        u
    }

    fn wilson_hmc(beta: f64, steps: usize, integrator: Integrator) -> Hmc {
        Hmc::new(
            vec![Level::new(&wilson(), beta, steps, integrator).unwrap()],
            1.0,
        )
        .unwrap()
    }

    /// Momenta: anti-hermitian, traceless, ⟨K⟩ = 4 per link (8 components, ½ each).
    #[test]
    fn momenta_are_su3_with_unit_kinetic_energy_per_component() {
        let p = Hmc::momenta(lattice(), 9, 2);
        for m in p.links() {
            assert!((*m + m.adjoint()).max_abs_component() < 1e-15);
            assert!(m.trace().norm() < 1e-14);
        }
        let per_link = Hmc::kinetic(&p) / (4.0 * lattice().volume() as f64);
        // 1024 links × 8 components: standard error of the mean ≈ 0.06.
        assert!((per_link - 4.0).abs() < 0.3, "{per_link}");
        assert_ne!(p, Hmc::momenta(lattice(), 9, 3));
        assert!(p.links()[0] != ColourMatrix::identity());
    }

    /// Forward for τ = 1, momenta negated, forward again: back at the start to 1e−10
    /// (links and momenta), for leapfrog, Omelyan and a two-level nesting (the Symanzik
    /// action split into its rectangle term outside and its plaquette term inside).
    #[test]
    fn trajectories_are_reversible() {
        let u0 = thermalised(5.5);
        let nested = Hmc::new(
            vec![
                Level::new(&rectangle_only(), 5.5, 3, Integrator::Omelyan).unwrap(),
                Level::new(&plaquette_only(), 5.5, 2, Integrator::Leapfrog).unwrap(),
            ],
            1.0,
        )
        .unwrap();
        for hmc in [
            wilson_hmc(5.5, 8, Integrator::Leapfrog),
            wilson_hmc(5.5, 4, Integrator::Omelyan),
            nested,
        ] {
            let p0 = Hmc::momenta(lattice(), 1, 0);
            let (mut u, mut p) = (u0.clone(), p0.clone());
            hmc.integrate(&mut u, &mut p).unwrap();
            assert!(max_link_difference(&u, &u0) > 0.1);
            negate(&mut p);
            hmc.integrate(&mut u, &mut p).unwrap();
            negate(&mut p);
            let (du, dp) = (max_link_difference(&u, &u0), max_link_difference(&p, &p0));
            assert!(du < 1e-10 && dp < 1e-10, "{du} {dp}");
        }
    }

    /// ΔH of `draws` trajectories (fresh momenta) from each of `configs` equilibrium 4⁴
    /// Wilson fields at β = 5.5 (heatbath, 5 sweeps apart), for each step count: one
    /// series per step count, the same (U, P) starts for all.
    fn energy_violations(
        integrator: Integrator,
        steps: &[usize],
        configs: usize,
        draws: usize,
    ) -> Vec<Series> {
        let beta = 5.5;
        let hb = Heatbath::new(&wilson(), beta, lattice()).unwrap();
        let mut u = thermalised(beta);
        let mut starts = Vec::new();
        for c in 0..configs as u64 {
            for s in 0..5 {
                hb.heatbath_sweep(&mut u, 4, 100 + 5 * c + s);
            }
            starts.push(u.clone());
        }
        steps
            .iter()
            .map(|&n| {
                let hmc = wilson_hmc(beta, n, integrator);
                let mut dh = Series::default();
                for (c, u0) in starts.iter().enumerate() {
                    for draw in 0..draws {
                        let mut p = Hmc::momenta(lattice(), 77, (1000 * c + draw) as u64);
                        let mut u = u0.clone();
                        let h0 = Hmc::kinetic(&p) + hmc.action(&u).unwrap();
                        hmc.integrate(&mut u, &mut p).unwrap();
                        dh.push(Hmc::kinetic(&p) + hmc.action(&u).unwrap() - h0);
                    }
                }
                dh
            })
            .collect()
    }

    fn mean_square(s: &Series) -> f64 {
        Series::new(s.values().iter().map(|d| d * d).collect()).mean()
    }

    /// In equilibrium (a heatbath-thermalised field, fresh momenta: (U, P) ∝ e^{−H}):
    ///
    /// * ⟨ΔH²⟩ ∝ ε⁴ for both second-order integrators: the log-log slope between ε =
    ///   1/20 and 1/40 (leapfrog), 1/8 and 1/16 (Omelyan), 12 draws, is 4 ± 0.6 (a
    ///   first-order integrator gives 2);
    /// * ⟨ΔH⟩ = ⟨ΔH²⟩/2 (from ⟨e^{−ΔH}⟩ = 1 to second order) within 3 standard errors
    ///   plus 25 % for the higher orders, so ⟨ΔH⟩ ∝ ε⁴ too (the direct fit of ⟨ΔH⟩, which
    ///   needs more statistics, is the ignored test below);
    /// * ⟨e^{−ΔH}⟩ = 1 within 3 standard errors (Creutz's identity).
    #[test]
    fn energy_violation_scales_as_dt4_and_exp_minus_dh_averages_to_one() {
        for (integrator, steps) in [
            (Integrator::Leapfrog, [20, 40]),
            (Integrator::Omelyan, [8, 16]),
        ] {
            let series = energy_violations(integrator, &steps, 1, 12);
            let msq: Vec<f64> = series.iter().map(mean_square).collect();
            let slope = (msq[0] / msq[1]).ln() / 2f64.ln();
            assert!(
                (slope - 4.0).abs() < 0.6,
                "{integrator:?}: <dH^2> {msq:?}, slope {slope}"
            );
            for (dh, m2) in series.iter().zip(&msq) {
                let err = dh.binned_error(1);
                assert!(
                    (dh.mean() - m2 / 2.0).abs() < 3.0 * err + 0.25 * m2 / 2.0,
                    "{integrator:?}: <dH> {} ± {err}, <dH^2>/2 {}",
                    dh.mean(),
                    m2 / 2.0
                );
                let boltzmann = Series::new(dh.values().iter().map(|d| (-d).exp()).collect());
                let err = boltzmann.binned_error(1);
                assert!(
                    (boltzmann.mean() - 1.0).abs() < 3.0 * err,
                    "{integrator:?}: <exp(-dH)> = {} ± {err}",
                    boltzmann.mean()
                );
            }
        }
    }

    /// ⟨ΔH⟩ itself against ε⁴: a least-squares fit of ln⟨ΔH⟩ against ln ε over three step
    /// sizes (leapfrog ε = 1/12, 1/16, 1/20), 4 configurations × 50
    /// draws, has slope 4 within 3 of its standard errors (propagated from the errors of
    /// the means) + 0.3 for the ε⁶ terms. The O(ε²) fluctuations of ΔH make ⟨ΔH⟩ itself
    /// noisy (measured: leapfrog ⟨ΔH⟩ = 0.474, 0.118, 0.032, slope 5.2 ± ~0.9), which is
    /// why the default test checks ⟨ΔH²⟩ instead. Leapfrog only: Omelyan's ⟨ΔH⟩ at these
    /// statistics is below its noise (measured 0.19, −0.003, −0.020 at ε = 1/4, 1/6, 1/8).
    /// About a minute in a debug build.
    #[test]
    #[ignore = "slow (about a minute): cargo test -p qdsl-core --lib mean_energy_violation -- --ignored"]
    fn mean_energy_violation_fits_dt4() {
        let (integrator, steps) = (Integrator::Leapfrog, [12, 16, 20]);
        let series = energy_violations(integrator, &steps, 4, 50);
        let xs: Vec<f64> = steps.iter().map(|&n| (1.0 / n as f64).ln()).collect();
        let ys: Vec<f64> = series.iter().map(|s| s.mean().ln()).collect();
        // σ(ln ⟨ΔH⟩) = σ(⟨ΔH⟩)/⟨ΔH⟩ (draws independent: binned error with bins of 1).
        let sigmas: Vec<f64> = series
            .iter()
            .map(|s| s.binned_error(1) / s.mean())
            .collect();
        let (mx, my) = (xs.iter().sum::<f64>() / 3.0, ys.iter().sum::<f64>() / 3.0);
        let sxx = xs.iter().map(|x| (x - mx).powi(2)).sum::<f64>();
        let slope = xs
            .iter()
            .zip(&ys)
            .map(|(x, y)| (x - mx) * (y - my))
            .sum::<f64>()
            / sxx;
        let slope_error = xs
            .iter()
            .zip(&sigmas)
            .map(|(x, s)| ((x - mx) * s).powi(2))
            .sum::<f64>()
            .sqrt()
            / sxx;
        let means: Vec<f64> = series.iter().map(Series::mean).collect();
        assert!(
            (slope - 4.0).abs() < 3.0 * slope_error + 0.3,
            "{integrator:?}: <dH> {means:?}, slope {slope} ± {slope_error}"
        );
    }

    /// ⟨P⟩ of `action` at `beta` on 4⁴ from the heatbath (`sweeps` after 20 of
    /// thermalisation) and from HMC (Omelyan, `steps` steps, τ = 1; `sweeps` trajectories
    /// after 30), with binned errors, and the HMC acceptance.
    fn heatbath_and_hmc_plaquettes(
        action: &ActionSpec,
        beta: f64,
        steps: usize,
        sweeps: u64,
    ) -> ((f64, f64), (f64, f64), f64) {
        let lat = lattice();
        let hb = Heatbath::new(action, beta, lat).unwrap();
        let mut u = GaugeField::unit(lat);
        let mut from_hb = Series::default();
        for sweep in 0..20 + sweeps {
            hb.heatbath_sweep(&mut u, 21, sweep);
            if sweep >= 20 {
                from_hb.push(crate::gauge::plaquette(&u).average);
            }
        }
        let level = Level::new(action, beta, steps, Integrator::Omelyan).unwrap();
        let hmc = Hmc::new(vec![level], 1.0).unwrap();
        let mut u = GaugeField::unit(lat);
        let mut from_hmc = Series::default();
        let mut accepted = 0;
        for t in 0..30 + sweeps {
            let r = hmc.trajectory(&mut u, 22, t).unwrap();
            if t >= 30 {
                accepted += usize::from(r.accepted);
                from_hmc.push(crate::gauge::plaquette(&u).average);
            }
        }
        (
            (from_hb.mean(), from_hb.binned_error(10)),
            (from_hmc.mean(), from_hmc.binned_error(10)),
            accepted as f64 / sweeps as f64,
        )
    }

    /// Detailed balance: HMC and the heatbath sample the same distribution, so their ⟨P⟩
    /// agree within 3.5 combined standard errors (binned).
    fn assert_same_plaquette(action: &ActionSpec, beta: f64, steps: usize, sweeps: u64) {
        let ((p1, e1), (p2, e2), acceptance) =
            heatbath_and_hmc_plaquettes(action, beta, steps, sweeps);
        assert!(acceptance > 0.7, "{}: acceptance {acceptance}", action.name);
        assert!(
            (p1 - p2).abs() < 3.5 * (e1 * e1 + e2 * e2).sqrt(),
            "{}: heatbath {p1} ± {e1}, HMC {p2} ± {e2}",
            action.name
        );
    }

    /// Wilson at β = 5.0: the 2-colour checkerboard heatbath against HMC (150 sweeps and
    /// trajectories of 8 Omelyan steps).
    #[test]
    fn hmc_and_heatbath_give_the_same_plaquette() {
        assert_same_plaquette(&wilson(), 5.0, 8, 150);
    }

    /// Symanzik at β = 4.0: the 8-colour heatbath on the staples with rectangles against
    /// HMC (100 sweeps and trajectories of 6 Omelyan steps). Passed when last run.
    #[test]
    #[ignore = "slow (under a minute in a debug build): cargo test -p qdsl-core --lib improved_heatbath -- --ignored"]
    fn improved_heatbath_and_hmc_give_the_same_plaquette() {
        assert_same_plaquette(&symanzik(), 4.0, 6, 100);
    }
}
