//! SAP and SAP+GCR against dense matrices on tiny lattices (the block operator as the
//! explicit restriction of M, exact block solves as a dense block Gauss–Seidel sweep),
//! and solves on a real configuration.

use super::*;
use crate::operator::even_odd::tests::{dense_wilson, Dense};
use crate::operator::FullClover;
use crate::solver::gcr::{gcr, Identity, Preconditioner};
use crate::solver::{Convergence, SolverOptions};
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::GaugeField;
use qdsl_core::gauge::clover_field;
use qdsl_core::io::{read_gauge, ReadOptions};
use qdsl_core::lattice::Lattice;
use qdsl_core::Complex;

type C = Complex<f64>;
type F64 = ColourSpinorField<f64>;

const BC: TimeBoundary = TimeBoundary::Antiperiodic;

/// M on a random gauge field with its dense matrix (the textbook hop and the clover
/// product, [`dense_wilson`]).
fn operator_and_dense(dims: [usize; 4], mass: f64, seed: u64) -> (FullClover<f64>, Dense) {
    let u = GaugeField::<f64>::random(Lattice::new(dims).unwrap(), seed);
    let a = clover_field(&u, mass, 1.1);
    let dense = dense_wilson(&u, Some((&a, 0.0)), 0.0);
    (FullClover::new(u, mass, 1.1, BC), dense)
}

/// The component indices (12 per site) of the sites where `keep(site)` holds.
fn components(blocks: &SchwarzBlocks, keep: impl Fn(usize) -> bool) -> Vec<usize> {
    (0..blocks.layout().lattice().volume())
        .filter(|&i| keep(i))
        .flat_map(|i| i * 12..(i + 1) * 12)
        .collect()
}

/// The submatrix M[idx, idx].
fn restrict(m: &Dense, idx: &[usize]) -> Dense {
    let a = idx
        .iter()
        .flat_map(|&i| idx.iter().map(move |&j| m.a[i * m.n + j]))
        .collect();
    Dense { n: idx.len(), a }
}

fn rel_diff(a: &[C], b: &[C]) -> f64 {
    let d: f64 = a.iter().zip(b).map(|(x, y)| (x - y).norm_sqr()).sum();
    let n: f64 = b.iter().map(|y| y.norm_sqr()).sum();
    (d / n).sqrt()
}

/// P_c M P_c (M on a field masked to colour c, then masked) equals, on every block Λ of
/// colour c, the explicit restriction M[Λ, Λ] of the dense matrix applied to ψ_Λ — on a
/// 4 × 4 × 2 × 2 lattice in 2⁴ blocks (2 × 2 blocks in x, y: diagonal neighbours share a
/// colour; one block in z and t: hops wrap inside the block).
#[test]
fn block_operator_is_the_dense_restriction() {
    let (op, dense) = operator_and_dense([4, 4, 2, 2], 0.1, 3);
    let blocks = SchwarzBlocks::new(Lattice::new([4, 4, 2, 2]).unwrap(), [2; 4]).unwrap();
    assert_eq!(blocks.num_blocks(), 4);
    for c in Colour::CYCLE {
        let mut psi = F64::gaussian(blocks.layout(), 9);
        blocks.mask(&mut psi, c);
        let mut got = psi.zeros_like();
        op.apply(&mut got, &psi).unwrap();
        blocks.mask(&mut got, c);
        let mut want = vec![C::new(0.0, 0.0); psi.data().len()];
        for b in (0..blocks.num_blocks()).filter(|&b| blocks.colour(b) == c) {
            let idx = components(&blocks, |i| blocks.block_of_site(i) == b);
            let psi_b: Vec<C> = idx.iter().map(|&i| psi.data()[i]).collect();
            for (&i, v) in idx.iter().zip(restrict(&dense, &idx).mul(&psi_b)) {
                want[i] = v;
            }
        }
        let e = rel_diff(got.data(), &want);
        assert!(e < 1e-13, "{c:?}: {e:e}");
    }
}

/// Static SAP whose MR block solves are run to convergence (400 steps at a heavy mass).
fn exact_sap(op: &FullClover<f64>, block: [usize; 4]) -> Sap<f64, &FullClover<f64>> {
    let lattice = *op.layout().lattice();
    let params = SapParams {
        block,
        ncy: 1,
        nmr: 400,
        ..SapParams::default()
    };
    Sap::new(op, lattice, params).unwrap()
}

/// On a one-block lattice one cycle with exact block solves is M⁻¹: z = M⁻¹ η against
/// Gaussian elimination of the dense matrix.
#[test]
fn one_block_with_exact_solves_is_the_inverse() {
    let (op, dense) = operator_and_dense([2, 2, 2, 2], 1.0, 4);
    let mut sap = exact_sap(&op, [2; 4]);
    let eta = F64::gaussian(op.layout(), 2);
    let mut z = eta.zeros_like();
    sap.precondition(&mut z, &eta).unwrap();
    let e = rel_diff(z.data(), &dense.solve(eta.data()));
    assert!(e < 1e-11, "{e:e}");
}

/// On two blocks (black, white) one cycle with exact block solves is the block
/// Gauss–Seidel sweep z_B = M_BB⁻¹ η_B, ρ = η − M z_B, z_W = M_WW⁻¹ ρ_W, done densely.
#[test]
fn two_blocks_with_exact_solves_are_block_gauss_seidel() {
    let (op, dense) = operator_and_dense([4, 2, 2, 2], 1.0, 5);
    let mut sap = exact_sap(&op, [2; 4]);
    let eta = F64::gaussian(op.layout(), 3);
    let mut z = eta.zeros_like();
    sap.precondition(&mut z, &eta).unwrap();
    let blocks = sap.blocks().clone();
    let black = components(&blocks, |i| {
        blocks.colour(blocks.block_of_site(i)) == Colour::Black
    });
    let white = components(&blocks, |i| {
        blocks.colour(blocks.block_of_site(i)) == Colour::White
    });
    let mut want = vec![C::new(0.0, 0.0); eta.data().len()];
    let eta_b: Vec<C> = black.iter().map(|&i| eta.data()[i]).collect();
    for (&i, v) in black.iter().zip(restrict(&dense, &black).solve(&eta_b)) {
        want[i] = v;
    }
    let m_z = dense.mul(&want);
    let rho_w: Vec<C> = white.iter().map(|&i| eta.data()[i] - m_z[i]).collect();
    for (&i, v) in white.iter().zip(restrict(&dense, &white).solve(&rho_w)) {
        want[i] = v;
    }
    let e = rel_diff(z.data(), &want);
    assert!(e < 1e-11, "{e:e}");
}

/// GCR(4) (restarting several times) on the dense 192 × 192 system of a 2⁴ lattice
/// reaches the direct solve, unpreconditioned and with SAP; the f32-iterated solve too.
#[test]
fn gcr_matches_the_direct_solve() {
    let (op, dense) = operator_and_dense([2, 2, 2, 2], 0.2, 6);
    let b = F64::gaussian(op.layout(), 4);
    let want = dense.solve(b.data());
    let opts = SolverOptions::with_tolerance(1e-12);
    let mut x = b.zeros_like();
    let out = gcr(&op, &op, &mut Identity, 4, &b, &mut x, &opts).unwrap();
    assert!(out.result.is_converged(), "{:?}", out.result.convergence);
    assert!(out.restarts >= 2, "{}", out.restarts);
    assert!(rel_diff(x.data(), &want) < 1e-10);
    let params = SapParams {
        block: [2, 2, 2, 2],
        ncy: 2,
        nmr: 3,
        ..SapParams::default()
    };
    let mut sap = Sap::new(&op, *op.layout().lattice(), params).unwrap();
    let mut x = b.zeros_like();
    let out = gcr(&op, &op, &mut sap, 4, &b, &mut x, &opts).unwrap();
    assert!(out.result.is_converged());
    assert!(rel_diff(x.data(), &want) < 1e-10);
    let op32 = op.cast::<f32>();
    let mut sap32 = Sap::new(&op32, *op.layout().lattice(), params).unwrap();
    let mut x = b.zeros_like();
    let out =
        gcr::<F64, ColourSpinorField<f32>, _, _, _>(&op, &op32, &mut sap32, 4, &b, &mut x, &opts)
            .unwrap();
    assert!(out.result.is_converged() && out.result.reliable_updates > 0);
    assert!(rel_diff(x.data(), &want) < 1e-10);
}

fn milc_l8() -> GaugeField<f64> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/milc/lat.sample.l8");
    read_gauge(path, &ReadOptions::default())
        .expect("lat.sample.l8")
        .field
}

/// On MILC's lat.sample.l8 (Wilson-clover, m = −0.1, c_sw = 1): GCR(16) preconditioned
/// by SAP(4⁴, ncy 4, nmr 4) reaches a true residual ≤ 1e-10 (recomputed here) in fewer than half the
/// outer iterations of GCR(16) without preconditioning (19 against 250 when written).
#[test]
fn sap_gcr_beats_gcr_on_a_real_configuration() {
    let u = milc_l8();
    let lattice = *u.lattice();
    let op = FullClover::new(u, -0.1, 1.0, BC);
    let b = F64::gaussian(op.layout(), 7);
    let opts = SolverOptions::with_tolerance(1e-10);
    let residual = |x: &F64| {
        let mut r = x.zeros_like();
        op.apply(&mut r, x).unwrap();
        r.xpay(&b, C::new(-1.0, 0.0)).unwrap();
        (r.norm_sqr() / b.norm_sqr()).sqrt()
    };
    let mut x = b.zeros_like();
    let plain = gcr(&op, &op, &mut Identity, 16, &b, &mut x, &opts).unwrap();
    assert!(plain.result.is_converged() && residual(&x) <= 1e-10);
    let mut sap = Sap::new(&op, lattice, SapParams::default()).unwrap();
    let mut x = b.zeros_like();
    let out = gcr(&op, &op, &mut sap, 16, &b, &mut x, &opts).unwrap();
    assert!(out.result.is_converged(), "{:?}", out.result.convergence);
    let r = residual(&x);
    assert!(r <= 1e-10, "{r:e}");
    assert!(
        2 * out.result.iterations < plain.result.iterations,
        "SAP {} against plain {}",
        out.result.iterations,
        plain.result.iterations
    );
    assert_eq!(sap.stats().applications, out.result.iterations);
    assert_eq!(sap.stats().cycles, 4 * out.result.iterations);
}

/// MR on the blocks of one colour (4 × 2 × 2 × 2 in 2⁴ blocks: one black block): static
/// MR does nmr steps; adaptive does none when the block residual is below the
/// tolerance from the start (criterion 3), one when it is below after one step, exactly k when any step counts as stalled (criterion 1
/// with fraction → 0), and never early when nothing stalls (fraction 1, tolerance 0);
/// every step lowers the block residual.
#[test]
fn mr_steps_follow_the_adaptive_criteria() {
    let (op, _) = operator_and_dense([4, 2, 2, 2], 0.3, 9);
    let blocks = SchwarzBlocks::new(*op.layout().lattice(), [2; 4]).unwrap();
    let rho = F64::gaussian(op.layout(), 4);
    let steps = |stopping: Option<MrStopping>| {
        let mut delta = rho.zeros_like();
        let work = mr::solve_blocks(
            &op,
            &blocks,
            Colour::Black,
            &rho,
            &mut delta,
            6,
            stopping.as_ref(),
            Reduction::F64,
            None,
        )
        .unwrap();
        // r = ρ − M_Λ δ on the block is below ρ.
        let mut m_delta = rho.zeros_like();
        op.apply(&mut m_delta, &delta).unwrap();
        let mut r = rho.clone();
        r.axpy(C::new(-1.0, 0.0), &m_delta).unwrap();
        blocks.mask(&mut r, Colour::Black);
        let mut rho_b = rho.clone();
        blocks.mask(&mut rho_b, Colour::Black);
        assert!(r.norm_sqr() <= rho_b.norm_sqr());
        (
            work.block_steps,
            r.norm_sqr().sqrt(),
            rho_b.norm_sqr().sqrt(),
        )
    };
    let stop = |min_steps, stall_fraction, tolerance| {
        Some(MrStopping {
            min_steps,
            stall_fraction,
            tolerance,
            relative_tolerance: 0.0,
        })
    };
    let (n, _, rho_norm) = steps(None);
    assert_eq!(n, 6);
    let (n, one_step, _) = steps(stop(1, 1e-12, 0.0));
    assert_eq!(n, 1);
    assert_eq!(steps(stop(2, 1.0, 1.01 * rho_norm)).0, 0);
    assert_eq!(steps(stop(2, 1.0, 1.01 * one_step)).0, 1);
    assert_eq!(steps(stop(2, 1e-12, 0.0)).0, 2);
    assert_eq!(steps(stop(3, 1e-12, 0.0)).0, 3);
    assert_eq!(steps(stop(2, 1.0, 0.0)).0, 6);
}

/// MR criterion 4 on the four black 2⁴ blocks of 4 × 4 × 2 × 4: static MR with k steps
/// gives each block's residual ratio ‖r_k‖/‖r_0‖ (block norms); with a relative tolerance
/// between measured ratios (criteria 1–3 off) each block stops at the first step whose
/// ratio is at or below it, so the step count summed over blocks is known in advance.
#[test]
fn mr_stops_each_block_at_its_relative_tolerance() {
    let (op, _) = operator_and_dense([4, 4, 2, 4], 0.3, 13);
    let blocks = SchwarzBlocks::new(*op.layout().lattice(), [2; 4]).unwrap();
    let rho = F64::gaussian(op.layout(), 7);
    let black: Vec<usize> = (0..blocks.num_blocks())
        .filter(|&b| blocks.colour(b) == Colour::Black)
        .collect();
    assert!(black.len() >= 2);
    let solve = |nmr, stopping: Option<MrStopping>| {
        let mut delta = rho.zeros_like();
        let work = mr::solve_blocks(
            &op,
            &blocks,
            Colour::Black,
            &rho,
            &mut delta,
            nmr,
            stopping.as_ref(),
            Reduction::F64,
            None,
        )
        .unwrap();
        let mut r = rho.zeros_like();
        op.apply(&mut r, &delta).unwrap();
        r.xpay(&rho, C::new(-1.0, 0.0)).unwrap();
        blocks.mask(&mut r, Colour::Black);
        (work.block_steps, blocks.norms(&r, Reduction::F64))
    };
    let start = blocks.norms(&rho, Reduction::F64);
    // ratio[k - 1][b]: block b after k static steps.
    let ratio: Vec<Vec<f64>> = (1..=6)
        .map(|k| {
            let norms = solve(k, None).1;
            (0..norms.len())
                .map(|b| (norms[b] / start[b]).sqrt())
                .collect()
        })
        .collect();
    let mut tried = 0;
    for k in 1..5 {
        let level = 0.5 * (ratio[k][black[0]] + ratio[k - 1][black[0]]);
        let expected: usize = black
            .iter()
            .map(|&b| (0..6).find(|&j| ratio[j][b] <= level).map_or(6, |j| j + 1))
            .sum();
        let stopping = MrStopping {
            min_steps: 1,
            stall_fraction: 1.0,
            tolerance: 0.0,
            relative_tolerance: level,
        };
        let (steps, _) = solve(6, Some(stopping));
        assert_eq!(steps, expected, "level {level}, ratios {ratio:?}");
        tried += usize::from(expected < 6 * black.len());
    }
    assert!(tried >= 3, "{ratio:?}");
}

/// Adaptive SAP with up to 60 cycles stops its cycles once one no longer lowers ‖ρ‖
/// (here: every block below τ‖η‖/N, so a cycle changes nothing), with a true residual
/// below τ; static SAP runs all 60.
#[test]
fn adaptive_cycles_stop_when_the_residual_stops_falling() {
    let (op, _) = operator_and_dense([4, 2, 2, 2], 1.0, 10);
    let lattice = *op.layout().lattice();
    let eta = F64::gaussian(op.layout(), 5);
    let params = SapParams {
        block: [2; 4],
        ncy: 60,
        nmr: 8,
        adaptive: Some(AdaptiveSap {
            outer_tolerance: 1e-8,
            stall_fraction: 1.0,
            cycle_fraction: 1.0,
            block_tolerance: 0.0,
            ..AdaptiveSap::default()
        }),
        ..SapParams::default()
    };
    let mut sap = Sap::new(&op, lattice, params).unwrap();
    let mut z = eta.zeros_like();
    sap.precondition(&mut z, &eta).unwrap();
    let cycles = sap.stats().cycles;
    assert!((2..60).contains(&cycles), "{cycles}");
    let mut r = eta.zeros_like();
    op.apply(&mut r, &z).unwrap();
    r.xpay(&eta, C::new(-1.0, 0.0)).unwrap();
    assert!((r.norm_sqr() / eta.norm_sqr()).sqrt() < 1e-8);
    let mut fixed = Sap::new(
        &op,
        lattice,
        SapParams {
            adaptive: None,
            ..params
        },
    )
    .unwrap();
    fixed.precondition(&mut z, &eta).unwrap();
    assert_eq!(fixed.stats().cycles, 60);
}

/// The cycle rule with a fraction: ‖ρ_j‖ after j static cycles (MR never stopping early)
/// gives the ratios ‖ρ_j‖/‖ρ_{j−1}‖; adaptive SAP with γ_cy stops after exactly the
/// first cycle whose ratio exceeds γ_cy (γ_cy between two measured ratios), its z
/// equal to static SAP's with that many cycles; γ_cy above every ratio runs all cycles.
#[test]
fn adaptive_cycles_stop_at_the_first_cycle_above_the_fraction() {
    let (op, _) = operator_and_dense([4, 4, 2, 2], 0.05, 12);
    let lattice = *op.layout().lattice();
    let eta = F64::gaussian(op.layout(), 6);
    let static_params = |ncy| SapParams {
        block: [2; 4],
        ncy,
        nmr: 3,
        adaptive: None,
        ..SapParams::default()
    };
    let run = |params: SapParams| {
        let mut sap = Sap::new(&op, lattice, params).unwrap();
        let mut z = eta.zeros_like();
        sap.precondition(&mut z, &eta).unwrap();
        let mut r = eta.zeros_like();
        op.apply(&mut r, &z).unwrap();
        r.xpay(&eta, C::new(-1.0, 0.0)).unwrap();
        (z, r.norm_sqr().sqrt(), sap.stats().cycles)
    };
    let mut norms = vec![eta.norm_sqr().sqrt()];
    for ncy in 1..=6 {
        norms.push(run(static_params(ncy)).1);
    }
    let ratios: Vec<f64> = norms.windows(2).map(|w| w[1] / w[0]).collect();
    assert!(ratios.iter().all(|&q| q < 1.0), "{ratios:?}");
    let adaptive = |gamma: f64| SapParams {
        adaptive: Some(AdaptiveSap {
            stall_fraction: 1.0,
            outer_tolerance: 1e-30,
            cycle_fraction: gamma,
            block_tolerance: 0.0,
            ..AdaptiveSap::default()
        }),
        ..static_params(6)
    };
    let mut sorted = ratios.clone();
    sorted.sort_by(f64::total_cmp);
    let mut tried = 0;
    for pair in sorted.windows(2) {
        if pair[1] - pair[0] < 1e-6 {
            continue;
        }
        let gamma = 0.5 * (pair[0] + pair[1]);
        let first = ratios.iter().position(|&q| q > gamma).unwrap();
        let (z, _, cycles) = run(adaptive(gamma));
        assert_eq!(cycles, first + 1, "γ_cy {gamma}, ratios {ratios:?}");
        let (z_static, _, _) = run(static_params(first + 1));
        let mut diff = z.clone();
        diff.axpy(C::new(-1.0, 0.0), &z_static).unwrap();
        assert!(diff.norm_sqr() <= 1e-24 * z.norm_sqr());
        tried += 1;
    }
    assert!(tried >= 2, "{ratios:?}");
    let top = sorted.last().unwrap();
    assert_eq!(run(adaptive((top + 1.0) / 2.0)).2, 6);
}

/// A preconditioner that returns NaN from its third application on.
struct Poisoned<P> {
    inner: P,
    calls: usize,
}

impl<P: Preconditioner<F64>> Preconditioner<F64> for Poisoned<P> {
    fn apply(&mut self, z: &mut F64, r: &F64) -> Result<(), crate::linear::SolverError> {
        self.calls += 1;
        self.inner.apply(z, r)?;
        if self.calls >= 3 {
            z.data_mut()[5] = C::new(f64::NAN, 0.0);
        }
        Ok(())
    }
}

/// NaN never reaches the solution: a preconditioner that breaks down ends the solve with
/// a reported breakdown, the history of the iterations before it, and x the last
/// iterate whose true residual was computed (finite); a NaN source is refused likewise.
#[test]
fn breakdown_is_reported_and_never_reaches_the_solution() {
    let (op, _) = operator_and_dense([2, 2, 2, 2], 0.2, 8);
    let b = F64::gaussian(op.layout(), 5);
    let opts = SolverOptions::with_tolerance(1e-12);
    let params = SapParams {
        block: [2; 4],
        ..SapParams::default()
    };
    let sap = Sap::new(&op, *op.layout().lattice(), params).unwrap();
    let mut poisoned = Poisoned {
        inner: sap,
        calls: 0,
    };
    let mut x = b.zeros_like();
    let out = gcr(&op, &op, &mut poisoned, 8, &b, &mut x, &opts).unwrap();
    assert!(
        matches!(out.result.convergence, Convergence::Breakdown(_)),
        "{:?}",
        out.result.convergence
    );
    assert_eq!(out.result.iterations, 2);
    assert!(out.result.history.len() >= 3);
    assert!(x
        .data()
        .iter()
        .all(|z| z.re.is_finite() && z.im.is_finite()));
    assert!(out.result.true_residual.is_finite() && out.result.true_residual < 1.0);
    let mut bad = b.clone();
    bad.data_mut()[0] = C::new(f64::INFINITY, 0.0);
    let mut x = b.zeros_like();
    let out = gcr(&op, &op, &mut Identity, 8, &bad, &mut x, &opts).unwrap();
    assert!(matches!(out.result.convergence, Convergence::Breakdown(_)));
    assert!(x.data().iter().all(|z| z.re.is_finite()));
}

/// Bad parameters are errors naming the parameter: ncy = 0, nmr = 0, n_kv = 0, a stall
/// fraction outside (0, 1].
#[test]
fn bad_parameters_are_errors() {
    let (op, _) = operator_and_dense([2, 2, 2, 2], 0.2, 8);
    let lattice = *op.layout().lattice();
    let with = |f: &dyn Fn(&mut SapParams)| {
        let mut p = SapParams {
            block: [2; 4],
            ..SapParams::default()
        };
        f(&mut p);
        Sap::new(&op, lattice, p).err().map(|e| e.to_string())
    };
    assert!(with(&|p| p.ncy = 0).unwrap().contains("ncy = 0"));
    assert!(with(&|p| p.nmr = 0).unwrap().contains("nmr = 0"));
    let bad = AdaptiveSap {
        stall_fraction: 1.5,
        ..AdaptiveSap::default()
    };
    assert!(with(&|p| p.adaptive = Some(bad))
        .unwrap()
        .contains("stall_fraction"));
    let bad = AdaptiveSap {
        block_tolerance: -0.1,
        ..AdaptiveSap::default()
    };
    let err = with(&|p| p.adaptive = Some(bad)).unwrap();
    assert!(err.contains("block_tolerance = -0.1"), "{err}");
    let b = F64::gaussian(op.layout(), 1);
    let mut x = b.zeros_like();
    let opts = SolverOptions::default();
    let err = gcr(&op, &op, &mut Identity, 0, &b, &mut x, &opts).unwrap_err();
    assert!(err.to_string().contains("nkv"), "{err}");
}
