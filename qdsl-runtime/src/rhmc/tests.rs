//! The fermion force against fourth-order finite differences of the action, for asqtad
//! and HISQ, the plain inverse and a rational form.

use super::*;
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::gauge::generate::Hmc;
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_core::rational::PartialFraction;

fn lattice() -> Lattice {
    Lattice::new([4, 4, 4, 4]).unwrap()
}

/// U_μ(x) → e^{tX_μ(x)} U_μ(x).
fn moved(u: &GaugeField<f64>, x: &GaugeField<f64>, t: f64) -> GaugeField<f64> {
    let mut out = u.clone();
    for (o, m) in out.links_mut().iter_mut().zip(x.links()) {
        *o = m.scale(t).exp() * *o;
    }
    out
}

/// f'(0) by [8(f(h) − f(−h)) − (f(2h) − f(−2h))]/12h, h = 1e−3.
fn derivative(f: impl Fn(f64) -> f64) -> f64 {
    let h = 1e-3;
    (8.0 * (f(h) - f(-h)) - (f(2.0 * h) - f(-2.0 * h))) / (12.0 * h)
}

fn fermion(smearing: StaggeredSmearing, parity: Parity) -> StaggeredFermion {
    StaggeredFermion {
        smearing,
        mass: 0.2,
        parity,
        tolerance: 1e-13,
    }
}

/// The fermions and actions of the finite-difference tests: S = φ†A⁻¹φ for asqtad
/// (u0 = 0.9, even φ) and a two-shift rational form for HISQ (ε = −0.1, odd φ).
fn cases() -> Vec<(StaggeredFermion, PartialFraction)> {
    let inverse = PartialFraction {
        norm: 0.0,
        residues: vec![1.0],
        shifts: vec![0.0],
    };
    let rational = PartialFraction {
        norm: 0.3,
        residues: vec![0.7, 0.2],
        shifts: vec![0.05, 0.8],
    };
    vec![
        (
            fermion(StaggeredSmearing::Asqtad { u0: 0.9 }, Parity::Even),
            inverse,
        ),
        (
            fermion(StaggeredSmearing::Hisq { epsilon_naik: -0.1 }, Parity::Odd),
            rational,
        ),
    ]
}

/// dS/dt along a random su(3) direction X equals Σ tr[X F] of the force, to 1e−8
/// relative (measured 1.7e−10 asqtad, 1.1e−10 HISQ; CG at 1e−13, the fourth-order
/// difference), for S = φ†A⁻¹φ (asqtad u0 = 0.9,
/// even φ) and a two-shift rational form (HISQ with ε = −0.1, odd φ), on a rough 4⁴
/// field (weak field of width 0.4).
#[test]
fn fermion_force_matches_finite_differences() {
    let u = GaugeField::<f64>::weak(lattice(), 21, 0.4);
    for (f, r) in cases() {
        let r = &r;
        let layout = SpinorLayout::staggered(lattice(), SiteSubset::Single(f.parity));
        let phi = ColourSpinorField::<f64>::gaussian(layout, 4);
        let force = f.force(&u, &phi, r).unwrap();
        let x = Hmc::momenta(lattice(), 5, 0);
        let exact: f64 = x
            .links()
            .iter()
            .zip(force.links())
            .map(|(x, f)| (*x * *f).trace().re)
            .sum();
        let fd = derivative(|t| f.action(&moved(&u, &x, t), &phi, r).unwrap());
        assert!(
            (fd - exact).abs() < 1e-8 * exact.abs(),
            "{:?}: finite difference {fd}, force {exact}",
            f.smearing
        );
    }
}

/// The GPU pull-back (the generated pullback kernels; HISQ with the U(3) projection's
/// derivative on the device).
mod gpu {
    use super::*;
    use crate::smear::GpuHisqForce;
    use qdsl_core::dsl::paths::fermion_force::zero_field;

    /// max |a − b| over max |b|, over all link components.
    fn rel(a: &GaugeField<f64>, b: &GaugeField<f64>) -> f64 {
        let (mut d, mut m) = (0.0f64, 0.0f64);
        for (x, y) in a.links().iter().zip(b.links()) {
            d = d.max((*x - *y).max_abs_component());
            m = m.max(y.max_abs_component());
        }
        d / m
    }

    /// The whole HISQ pull-back on the GPU (fat7, projection, level-2 pullbacks with the
    /// ε terms, the projection's derivative, the fat7 pullback) equals the host's
    /// `StaggeredSmearing::pullback` (Lyapunov-checked derivative, finite-difference
    /// checked chain) for random G_X, G_L on a rough 4⁴ field: f64 to 1e−11, f32 to
    /// 1e−4 relative.
    #[test]
    #[ignore = "needs a CUDA GPU: cargo test -p qdsl-runtime --lib rhmc::tests::gpu -- --include-ignored"]
    fn gpu_hisq_pullback_matches_the_host() {
        let (gpu, _dir) = crate::testing::gpu();
        let u = GaugeField::<f64>::weak(lattice(), 21, 0.4);
        let (g_fat, g_long) = (
            GaugeField::<f64>::random(lattice(), 3),
            GaugeField::<f64>::random(lattice(), 4),
        );
        let smearing = StaggeredSmearing::Hisq { epsilon_naik: -0.1 };
        let links = smearing.links(&u).unwrap();
        let want = smearing.pullback(&links, &g_fat, &g_long).unwrap();
        let got = GpuHisqForce::<f64>::new(&gpu)
            .unwrap()
            .pullback(&gpu, &u, -0.1, &g_fat, &g_long)
            .unwrap();
        let r = rel(&got, &want);
        assert!(r < 1e-11, "HISQ pullback f64: {r:e}");
        let got32 = GpuHisqForce::<f32>::new(&gpu)
            .unwrap()
            .pullback(
                &gpu,
                &u.cast::<f32>(),
                -0.1,
                &g_fat.cast::<f32>(),
                &g_long.cast::<f32>(),
            )
            .unwrap()
            .cast::<f64>();
        let r = rel(&got32, &want);
        assert!(r < 1e-4, "HISQ pullback f32: {r:e}");
        // A zero gradient pulls back to zero (nothing left over from the accumulation).
        let zero = zero_field(lattice());
        let z = GpuHisqForce::<f64>::new(&gpu)
            .unwrap()
            .pullback(&gpu, &u, -0.1, &zero, &zero)
            .unwrap();
        assert!(z.links().iter().all(|l| l.max_abs_component() == 0.0));
    }

    /// dS/dt along a random su(3) direction equals Σ tr[X F] for the force with the
    /// smearing pulled back on the GPU, to 1e−8 relative, for S = φ†A⁻¹φ (asqtad, u0 =
    /// 0.9) and the two-shift rational form (HISQ, ε = −0.1), as the host test
    /// `fermion_force_matches_finite_differences`; and the GPU force equals the host's
    /// to 1e−11.
    #[test]
    #[ignore = "needs a CUDA GPU: cargo test -p qdsl-runtime --lib rhmc::tests::gpu -- --include-ignored"]
    fn gpu_fermion_force_matches_finite_differences() {
        let (gpu, _dir) = crate::testing::gpu();
        let u = GaugeField::<f64>::weak(lattice(), 21, 0.4);
        for (f, r) in cases() {
            let back = GpuSmearingPullback::new(&gpu, f.smearing).unwrap();
            let layout = SpinorLayout::staggered(lattice(), SiteSubset::Single(f.parity));
            let phi = ColourSpinorField::<f64>::gaussian(layout, 4);
            let force = f.force_with(&u, &phi, &r, &back).unwrap();
            let host = f.force(&u, &phi, &r).unwrap();
            let dev = rel(&force, &host);
            assert!(
                dev < 1e-11,
                "{:?}: GPU against host force {dev:e}",
                f.smearing
            );
            let x = Hmc::momenta(lattice(), 5, 0);
            let exact: f64 = x
                .links()
                .iter()
                .zip(force.links())
                .map(|(x, f)| (*x * *f).trace().re)
                .sum();
            let fd = derivative(|t| f.action(&moved(&u, &x, t), &phi, &r).unwrap());
            assert!(
                (fd - exact).abs() < 1e-8 * exact.abs(),
                "{:?}: finite difference {fd}, GPU force {exact}",
                f.smearing
            );
        }
    }

    /// A pull-back compiled for another smearing is refused by name.
    #[test]
    #[ignore = "needs a CUDA GPU: cargo test -p qdsl-runtime --lib rhmc::tests::gpu -- --include-ignored"]
    fn a_pullback_of_another_smearing_is_refused() {
        let (gpu, _dir) = crate::testing::gpu();
        let back = GpuSmearingPullback::new(&gpu, StaggeredSmearing::Asqtad { u0: 1.0 }).unwrap();
        let f = fermion(StaggeredSmearing::Hisq { epsilon_naik: 0.0 }, Parity::Even);
        let phi = ColourSpinorField::<f64>::gaussian(
            SpinorLayout::staggered(lattice(), SiteSubset::Single(Parity::Even)),
            4,
        );
        let (_, r) = &cases()[0];
        let e = f
            .force_with(&GaugeField::unit(lattice()), &phi, r, &back)
            .unwrap_err()
            .to_string();
        assert!(e.contains("Asqtad") && e.contains("Hisq"), "{e}");
    }
}

mod trajectories {
    use super::*;
    use qdsl_core::dsl::paths::GaugeAction;
    use qdsl_core::gauge::generate::{max_link_difference, negate, Integrator, Level};
    use qdsl_core::rational::remez;
    use qdsl_kernels::WilsonGauge;

    /// A flavour of mass m with r ≈ x^(−nf/4), h ≈ x^(nf/8) from the Remez code, 8
    /// shifts on [4m², 4m² + 240] (relative errors ~1e−5: few shifts keep the tests
    /// fast; any rational r defines an exact HMC for φ† r(A) φ) (A's spectrum for unitary links: ‖D‖ ≤ 4 (2 · 15/8 +
    /// 2/24) for asqtad at u0 = 1).
    fn flavour(mass: f64, nf: i32) -> Flavour {
        let (lo, hi) = (4.0 * mass * mass, 4.0 * mass * mass + 240.0);
        Flavour {
            fermion: StaggeredFermion {
                smearing: StaggeredSmearing::Asqtad { u0: 1.0 },
                mass,
                parity: Parity::Even,
                tolerance: 1e-12,
            },
            action: remez(-nf, 4, SHIFTS, lo, hi).unwrap().function,
            heatbath: remez(nf, 8, SHIFTS, lo, hi).unwrap().function,
        }
    }

    const SHIFTS: usize = 8;

    /// 2+1 asqtad flavours (m = 0.2, 0.3) and the Wilson gauge action at β = 5.0 on the
    /// inner level (2 leapfrog steps per outer sub-step); τ = 0.5.
    fn rhmc(steps: usize, integrator: Integrator) -> Rhmc {
        let level = Level::new(&WilsonGauge::spec(), 5.0, 2, Integrator::Leapfrog).unwrap();
        Rhmc {
            gauge: Hmc::new(vec![level], 1.0).unwrap(),
            flavours: vec![flavour(0.2, 2), flavour(0.3, 1)],
            steps,
            integrator,
            tau: 0.5,
        }
    }

    fn start() -> GaugeField<f64> {
        GaugeField::<f64>::weak(lattice(), 31, 0.3)
    }

    /// With every flavour's smearing pulled back on the GPU
    /// ([`GpuSmearingPullback`]): forward for τ, momenta negated, forward again returns
    /// to the start to 1e−10 (links and momenta), and the forward trajectory equals the
    /// host's to 1e−10 (leapfrog, 2 steps).
    #[test]
    #[ignore = "needs a CUDA GPU: cargo test -p qdsl-runtime --lib rhmc::tests -- --include-ignored"]
    fn gpu_force_trajectories_are_reversible_and_match_the_host() {
        let (gpu, _dir) = crate::testing::gpu();
        let r = rhmc(2, Integrator::Leapfrog);
        let kernels: Vec<GpuSmearingPullback> = r
            .flavours
            .iter()
            .map(|f| GpuSmearingPullback::new(&gpu, f.fermion.smearing).unwrap())
            .collect();
        let backs: Vec<&dyn SmearingPullback> =
            kernels.iter().map(|k| k as &dyn SmearingPullback).collect();
        let u0 = start();
        let (phis, _) = r.pseudofermions(&u0, 5, 0).unwrap();
        let p0 = Hmc::momenta(lattice(), 5, 0);
        let (mut u, mut p) = (u0.clone(), p0.clone());
        r.integrate_with(&mut u, &mut p, &phis, &backs).unwrap();
        let (mut uh, mut ph) = (u0.clone(), p0.clone());
        r.integrate(&mut uh, &mut ph, &phis).unwrap();
        let (du, dp) = (max_link_difference(&u, &uh), max_link_difference(&p, &ph));
        assert!(du < 1e-10 && dp < 1e-10, "GPU against host: {du} {dp}");
        assert!(max_link_difference(&u, &u0) > 0.05);
        negate(&mut p);
        r.integrate_with(&mut u, &mut p, &phis, &backs).unwrap();
        negate(&mut p);
        let (du, dp) = (max_link_difference(&u, &u0), max_link_difference(&p, &p0));
        assert!(du < 1e-10 && dp < 1e-10, "reversibility: {du} {dp}");
        assert!(r
            .integrate_with(&mut u, &mut p, &phis, &backs[..1])
            .is_err());
    }

    /// The heatbath: φ† r(A) φ = ξ†ξ to the approximations' accuracy: |r h² − 1| ≤
    /// e_r + 2 e_h (to first order) for every eigenvalue, e the stated errors.
    #[test]
    fn heatbath_action_equals_the_gaussian_norm() {
        let r = rhmc(2, Integrator::Leapfrog);
        let u = start();
        let (phis, xi_norm) = r.pseudofermions(&u, 3, 0).unwrap();
        let s_f = r.action(&u, &phis).unwrap() - r.gauge.action(&u).unwrap();
        let bound: f64 = [(0.2, 2), (0.3, 1)]
            .iter()
            .map(|&(m, nf)| {
                let (lo, hi) = (4.0 * m * m, 4.0 * m * m + 240.0);
                let e_r = remez(-nf, 4, SHIFTS, lo, hi).unwrap().error;
                let e_h = remez(nf, 8, SHIFTS, lo, hi).unwrap().error;
                e_r + 2.0 * e_h
            })
            .fold(0.0, f64::max);
        let dev = (s_f / xi_norm - 1.0).abs();
        assert!(
            dev < 1.1 * bound && bound < 1e-3,
            "{s_f} {xi_norm}: {dev:e}, bound {bound:e}"
        );
    }

    /// Forward for τ, momenta negated, forward again: back at the start to 1e−10 (links
    /// and momenta), leapfrog (2 steps) and Omelyan (1 step) outside.
    #[test]
    fn trajectories_are_reversible() {
        for (integrator, steps) in [(Integrator::Leapfrog, 2), (Integrator::Omelyan, 1)] {
            let r = rhmc(steps, integrator);
            let u0 = start();
            let (phis, _) = r.pseudofermions(&u0, 5, 0).unwrap();
            let p0 = Hmc::momenta(lattice(), 5, 0);
            let (mut u, mut p) = (u0.clone(), p0.clone());
            r.integrate(&mut u, &mut p, &phis).unwrap();
            assert!(max_link_difference(&u, &u0) > 0.05);
            negate(&mut p);
            r.integrate(&mut u, &mut p, &phis).unwrap();
            negate(&mut p);
            let (du, dp) = (max_link_difference(&u, &u0), max_link_difference(&p, &p0));
            assert!(du < 1e-10 && dp < 1e-10, "{integrator:?}: {du} {dp}");
        }
    }

    /// One trajectory's ΔH from the same (U, P, φ) falls as ε² (leapfrog outside, the
    /// gauge steps scaling with it): ΔH(ε)/ΔH(ε/2) within 4 ± 1.
    #[test]
    fn energy_violation_falls_as_dt2() {
        let u0 = start();
        let dh: Vec<f64> = [2, 4]
            .iter()
            .map(|&n| {
                let r = rhmc(n, Integrator::Leapfrog);
                let (phis, _) = r.pseudofermions(&u0, 7, 0).unwrap();
                let mut p = Hmc::momenta(lattice(), 7, 0);
                let mut u = u0.clone();
                let h0 = Hmc::kinetic(&p) + r.action(&u, &phis).unwrap();
                r.integrate(&mut u, &mut p, &phis).unwrap();
                Hmc::kinetic(&p) + r.action(&u, &phis).unwrap() - h0
            })
            .collect();
        let ratio = dh[0] / dh[1];
        assert!((ratio - 4.0).abs() < 1.0, "ΔH {dh:?}, ratio {ratio}");
    }

    /// Creutz's identity ⟨e^{−ΔH}⟩ = 1 within 3 standard errors over 12 trajectories
    /// (Omelyan, 3 steps, τ = 0.5) after 6 trajectories of molecular dynamics always
    /// accepted (thermalisation from the ordered start, where ΔH is large), and an
    /// acceptance above 1/2. Measured: ⟨e^{−ΔH}⟩ = 0.996 ± 0.091, 11 of 12 accepted,
    /// |ΔH| ≤ 0.5.
    #[test]
    #[ignore = "slow (about two minutes): cargo test -p qdsl-runtime --lib rhmc -- --ignored"]
    fn exp_minus_delta_h_averages_to_one() {
        let r = rhmc(3, Integrator::Omelyan);
        let mut u = start();
        let mut boltzmann = Vec::new();
        let mut accepted = 0;
        for t in 0..6 {
            let (phis, _) = r.pseudofermions(&u, 40, t).unwrap();
            let mut p = Hmc::momenta(lattice(), 40, t);
            r.integrate(&mut u, &mut p, &phis).unwrap();
        }
        for t in 0..12 {
            let result = r.trajectory(&mut u, 41, t).unwrap();
            eprintln!(
                "trajectory {t}: ΔH {:.4} accepted {}",
                result.delta_h, result.accepted
            );
            boltzmann.push((-result.delta_h).exp());
            accepted += usize::from(result.accepted);
        }
        let n = boltzmann.len() as f64;
        let mean = boltzmann.iter().sum::<f64>() / n;
        let var = boltzmann.iter().map(|b| (b - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let err = (var / n).sqrt();
        assert!(
            (mean - 1.0).abs() < 3.0 * err.max(1e-3),
            "<exp(-dH)> = {mean} ± {err}"
        );
        assert!(
            accepted * 2 > boltzmann.len(),
            "acceptance {accepted}/{}",
            boltzmann.len()
        );
        eprintln!(
            "<exp(-dH)> = {mean} ± {err}, acceptance {accepted}/{}",
            boltzmann.len()
        );
    }
}
