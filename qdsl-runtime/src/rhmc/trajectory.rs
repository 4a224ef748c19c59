//! RHMC trajectories: the gauge levels of [`Hmc`] as the inner time scales, the
//! staggered flavours' rational forces on the outer one.
//!
//! H = K + S_g[U] + Σ_f φ_f† r_f(A_f) φ_f, r_f ≈ x^(−n_f/4) (n_f = 2 for the light pair,
//! 1 for the strange quark: one even-parity field of a staggered flavour has det A =
//! det M, four tastes), the pseudofermions drawn as φ_f = h_f(A_f) ξ with h_f ≈ x^(n_f/8)
//! and ξ Gaussian of density e^{−ξ†ξ}, so that φ† r(A) φ = ξ†ξ up to the approximation
//! errors. Per outer step of size ε (the inner levels over each position sub-step):
//!
//! * leapfrog: P += ε/2 F_f; gauge(ε); P += ε/2 F_f;
//! * Omelyan 2MN: P += λε F_f; gauge(ε/2); P += (1 − 2λ)ε F_f; gauge(ε/2); P += λε F_f.

use super::{RhmcError, SmearingPullback, StaggeredFermion};
use qdsl_core::field::{
    ColourSpinorField, GaugeField, RandomStream, SiteSubset, SpinorLayout, StreamDomain,
};
use qdsl_core::gauge::generate::{Hmc, Integrator, Momenta, TrajectoryResult, OMELYAN_LAMBDA};
use qdsl_core::rational::PartialFraction;
use rayon::prelude::*;

/// One staggered flavour (or degenerate pair) of the RHMC.
#[derive(Clone, Debug)]
pub struct Flavour {
    /// Its operator A = (M†M)_pp.
    pub fermion: StaggeredFermion,
    /// r ≈ x^(−n_f/4): the action and the force.
    pub action: PartialFraction,
    /// h ≈ x^(n_f/8): the heatbath φ = h(A) ξ.
    pub heatbath: PartialFraction,
}

/// Rational hybrid Monte Carlo: gauge levels inside, flavours outside.
#[derive(Clone, Debug)]
pub struct Rhmc {
    /// The gauge action's time scales (their τ is not used: each runs over the outer
    /// position sub-steps).
    pub gauge: Hmc,
    /// The flavours.
    pub flavours: Vec<Flavour>,
    /// Outer steps per trajectory.
    pub steps: usize,
    /// The outer integrator.
    pub integrator: Integrator,
    /// The trajectory length τ.
    pub tau: f64,
}

/// The pseudofermion fields, one per flavour.
pub type Pseudofermions = Vec<ColourSpinorField<f64>>;

impl Rhmc {
    /// The pseudofermions of trajectory `trajectory`: φ_f = h_f(A_f) ξ_f with ξ_f of
    /// density e^{−ξ†ξ} (the unit-variance Gaussian field of the seed mixed with the
    /// trajectory and the flavour, scaled by 1/√2).
    pub fn pseudofermions(
        &self,
        u: &GaugeField<f64>,
        seed: u64,
        trajectory: u64,
    ) -> Result<(Pseudofermions, f64), RhmcError> {
        let mut phis = Vec::with_capacity(self.flavours.len());
        let mut xi_norm = 0.0;
        for (k, f) in self.flavours.iter().enumerate() {
            let layout =
                SpinorLayout::staggered(*u.lattice(), SiteSubset::Single(f.fermion.parity));
            let mix = RandomStream::new(seed, StreamDomain::User(1), trajectory * 64 + k as u64)
                .next_u64();
            let mut xi = ColourSpinorField::<f64>::gaussian(layout, mix);
            for z in xi.data_mut() {
                *z *= std::f64::consts::FRAC_1_SQRT_2;
            }
            xi_norm += xi.norm_sqr();
            phis.push(f.fermion.apply_rational(u, &xi, &f.heatbath)?);
        }
        Ok((phis, xi_norm))
    }

    /// S_g[U] + Σ_f φ_f† r_f(A_f) φ_f.
    pub fn action(&self, u: &GaugeField<f64>, phis: &Pseudofermions) -> Result<f64, RhmcError> {
        let mut s = self.gauge.action(u)?;
        for (f, phi) in self.flavours.iter().zip(phis) {
            s += f.fermion.action(u, phi, &f.action)?;
        }
        Ok(s)
    }

    /// Molecular dynamics for time τ from (U, P), in place (the smearings pulled back on
    /// the host).
    pub fn integrate(
        &self,
        u: &mut GaugeField<f64>,
        p: &mut Momenta,
        phis: &Pseudofermions,
    ) -> Result<(), RhmcError> {
        let backs: Vec<&dyn SmearingPullback> = self
            .flavours
            .iter()
            .map(|f| &f.fermion.smearing as &dyn SmearingPullback)
            .collect();
        self.integrate_with(u, p, phis, &backs)
    }

    /// [`Self::integrate`] with flavour f's smearing pulled back by `backs[f]` (e.g. on
    /// the GPU: [`super::GpuSmearingPullback`]).
    pub fn integrate_with(
        &self,
        u: &mut GaugeField<f64>,
        p: &mut Momenta,
        phis: &Pseudofermions,
        backs: &[&dyn SmearingPullback],
    ) -> Result<(), RhmcError> {
        if backs.len() != self.flavours.len() {
            return Err(RhmcError::Links(format!(
                "expected a pull-back per flavour ({}), found {}",
                self.flavours.len(),
                backs.len()
            )));
        }
        let eps = self.tau / self.steps as f64;
        for _ in 0..self.steps {
            match self.integrator {
                Integrator::Leapfrog => {
                    self.kick(eps / 2.0, u, p, phis, backs)?;
                    self.gauge.integrate_for(eps, u, p)?;
                    self.kick(eps / 2.0, u, p, phis, backs)?;
                }
                Integrator::Omelyan => {
                    self.kick(OMELYAN_LAMBDA * eps, u, p, phis, backs)?;
                    self.gauge.integrate_for(eps / 2.0, u, p)?;
                    self.kick((1.0 - 2.0 * OMELYAN_LAMBDA) * eps, u, p, phis, backs)?;
                    self.gauge.integrate_for(eps / 2.0, u, p)?;
                    self.kick(OMELYAN_LAMBDA * eps, u, p, phis, backs)?;
                }
            }
        }
        Ok(())
    }

    /// P += dt Σ_f F_f[U].
    fn kick(
        &self,
        dt: f64,
        u: &GaugeField<f64>,
        p: &mut Momenta,
        phis: &Pseudofermions,
        backs: &[&dyn SmearingPullback],
    ) -> Result<(), RhmcError> {
        for ((f, phi), back) in self.flavours.iter().zip(phis).zip(backs) {
            let force = f.fermion.force_with(u, phi, &f.action, *back)?;
            p.links_mut()
                .par_iter_mut()
                .zip(force.links().par_iter())
                .for_each(|(p, f)| *p += f.scale(dt));
        }
        Ok(())
    }

    /// One trajectory: momenta and pseudofermions drawn, MD, Metropolis with
    /// probability min(1, e^{−ΔH}) (the streams of [`Hmc::trajectory`]); U is replaced
    /// by the proposal if it is accepted.
    pub fn trajectory(
        &self,
        u: &mut GaugeField<f64>,
        seed: u64,
        trajectory: u64,
    ) -> Result<TrajectoryResult, RhmcError> {
        let mut p = Hmc::momenta(*u.lattice(), seed, trajectory);
        let (phis, _) = self.pseudofermions(u, seed, trajectory)?;
        let h0 = Hmc::kinetic(&p) + self.action(u, &phis)?;
        let mut proposal = u.clone();
        self.integrate(&mut proposal, &mut p, &phis)?;
        let h1 = Hmc::kinetic(&p) + self.action(&proposal, &phis)?;
        let delta_h = h1 - h0;
        let r = RandomStream::new(seed, StreamDomain::HmcAccept, trajectory).uniform();
        let accepted = delta_h <= 0.0 || r < (-delta_h).exp();
        if accepted {
            *u = proposal;
        }
        Ok(TrajectoryResult { delta_h, accepted })
    }
}
