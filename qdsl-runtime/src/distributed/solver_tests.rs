//! The solvers on distributed operators and vectors (threads transport): the distributed
//! M̂ equals the single-process M̂ bit for bit, and CG, BiCGStab, CGNR and multi-shift
//! CG — the same functions, unchanged — reach the single-process iteration count (±1)
//! and true residual on 2 and 4 ranks, for Wilson, clover, twisted clover and improved
//! staggered (Naik: halo depth 3), on grids that cut t.

use super::{
    distributed_clover, distributed_mobius, distributed_staggered, distributed_wilson,
    DistributedField, SharedComm,
};
use crate::comm::{run_ranks, CommConfig, ThreadComm};
use crate::linear::{LinearOperator, SolverField};
use crate::operator::cpu::{EvenOddStaggered, EvenOddWilson, StaggeredLinks};
use crate::operator::mobius::{EvenOddMobius, MobiusParams};
use crate::operator::EvenOddClover;
use crate::solver::{multishift_cg, SolveResult, SolverKind, SolverOptions};
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::distributed::{gather, scatter};
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::gauge::clover_field;
use qdsl_core::lattice::decomposition::{NAIK_DEPTH, ONE_HOP_DEPTH};
use qdsl_core::lattice::{Decomposition, ExtendedLattice, Lattice, Parity, ProcessGrid};
use std::time::Duration;

type Field<T> = DistributedField<T, ThreadComm>;

/// Grids of 2 and 4 ranks; all cut t (the antiperiodic boundary on the faces), the
/// others also x or z.
const GRIDS: [[usize; 4]; 3] = [[1, 1, 1, 2], [2, 1, 1, 2], [1, 1, 2, 2]];

const PARITY: Parity = Parity::Even;

fn extended(global: Lattice, grid: [usize; 4], depth: usize) -> ExtendedLattice {
    let grid = ProcessGrid::new(grid).unwrap();
    let dec = Decomposition::with_halo_depth(global, grid, depth).unwrap();
    ExtendedLattice::new(dec, depth).unwrap()
}

/// A rank's high- and low-precision operators.
type Build<'a, OH, OL> = &'a (dyn Fn(ExtendedLattice, SharedComm<ThreadComm>) -> (OH, OL) + Sync);

/// What a distributed solve returned: rank 0's result (every rank's is checked equal)
/// and the gathered solution.
struct Outcome {
    result: SolveResult,
    x: ColourSpinorField<f64>,
}

/// Solves M̂ x = b with `solver` (f64 solution, f32 iteration with reliable updates) on
/// every rank of `ext`'s grid; asserts that every rank reports the same result.
fn solve_distributed<OH, OL>(
    ext: ExtendedLattice,
    build: Build<'_, OH, OL>,
    b: &ColourSpinorField<f64>,
    solver: SolverKind,
    opts: &SolverOptions,
) -> Outcome
where
    OH: LinearOperator<Field<f64>>,
    OL: LinearOperator<Field<f32>>,
{
    let ranks = run_ranks(ext.decomposition().size(), CommConfig::default(), |comm| {
        let comm = SharedComm::new(comm);
        let (high, low) = build(ext, comm.clone());
        let b = Field::scatter(b, ext, comm).unwrap();
        let mut x = b.zeros_like();
        let result = solver
            .solve::<_, Field<f32>, _, _>(&high, &low, &b, &mut x, opts)
            .unwrap();
        (result, x.part().clone())
    });
    let first = &ranks[0].0;
    for (rank, (result, _)) in ranks.iter().enumerate() {
        assert_eq!(result.iterations, first.iterations, "rank {rank}");
        assert_eq!(
            result.true_residual.to_bits(),
            first.true_residual.to_bits(),
            "rank {rank}: the global sums must be the same bits on every rank"
        );
    }
    let parts: Vec<_> = ranks.iter().map(|(_, x)| x.clone()).collect();
    Outcome {
        result: first.clone(),
        x: gather(&parts, &ext).unwrap(),
    }
}

/// The single-process solve of the same system.
fn solve_single<OH, OL>(
    high: &OH,
    low: &OL,
    b: &ColourSpinorField<f64>,
    solver: SolverKind,
    opts: &SolverOptions,
) -> Outcome
where
    OH: LinearOperator<ColourSpinorField<f64>>,
    OL: LinearOperator<ColourSpinorField<f32>>,
{
    let mut x = b.zeros_like();
    let result = solver
        .solve::<_, ColourSpinorField<f32>, _, _>(high, low, b, &mut x, opts)
        .unwrap();
    Outcome { result, x }
}

/// The distributed solve converged like the single-process one: iterations ±1, true
/// residuals below the tolerance and within a factor 2 of each other, solutions equal to
/// `x_tol` relative.
fn assert_same_solve(d: &Outcome, s: &Outcome, tol: f64, x_tol: f64, what: &str) {
    let (rd, rs) = (&d.result, &s.result);
    assert!(rs.is_converged() && rd.is_converged(), "{what}: {rd:?}");
    assert!(
        rd.iterations.abs_diff(rs.iterations) <= 1,
        "{what}: {} iterations distributed, {} on one rank",
        rd.iterations,
        rs.iterations
    );
    assert!(rd.true_residual <= tol && rs.true_residual <= tol, "{what}");
    let ratio = rd.true_residual / rs.true_residual;
    assert!(
        (0.5..=2.0).contains(&ratio),
        "{what}: true residual {:e} distributed, {:e} on one rank",
        rd.true_residual,
        rs.true_residual
    );
    let mut diff = d.x.clone();
    diff.axpy(qdsl_core::Complex::new(-1.0, 0.0), &s.x).unwrap();
    let rel = (diff.norm_sqr() / s.x.norm_sqr()).sqrt();
    assert!(rel <= x_tol, "{what}: solutions differ by {rel:e}");
    eprintln!(
        "{what}: {} / {} iterations, true residual {:.3e} / {:.3e}, ‖Δx‖/‖x‖ = {rel:.1e}",
        rd.iterations, rs.iterations, rd.true_residual, rs.true_residual
    );
}

fn mixed(tol: f64) -> SolverOptions {
    SolverOptions::with_tolerance(tol)
}

/// Asserts equal bits in every component.
fn assert_bits_equal(a: &ColourSpinorField<f64>, b: &ColourSpinorField<f64>, what: &str) {
    assert_eq!(a.layout(), b.layout(), "{what}");
    let same = a
        .data()
        .iter()
        .zip(b.data())
        .all(|(x, y)| x.re.to_bits() == y.re.to_bits() && x.im.to_bits() == y.im.to_bits());
    assert!(same, "{what}: not bit-identical");
    assert!(a.norm_sqr() > 0.0, "{what}: a zero result proves nothing");
}

/// M̂ ψ and M̂† ψ applied distributed (gathered) and on one process.
fn apply_both<O: LinearOperator<Field<f64>>>(
    ext: ExtendedLattice,
    build: &(dyn Fn(ExtendedLattice, SharedComm<ThreadComm>) -> O + Sync),
    psi: &ColourSpinorField<f64>,
) -> [ColourSpinorField<f64>; 2] {
    let ranks = run_ranks(ext.decomposition().size(), CommConfig::default(), |comm| {
        let comm = SharedComm::new(comm);
        let op = build(ext, comm.clone());
        let psi = Field::scatter(psi, ext, comm).unwrap();
        let (mut out, mut out_dagger) = (psi.zeros_like(), psi.zeros_like());
        op.apply(&mut out, &psi).unwrap();
        op.apply_dagger(&mut out_dagger, &psi).unwrap();
        [out.part().clone(), out_dagger.part().clone()]
    });
    [0, 1].map(|k| {
        let parts: Vec<_> = ranks.iter().map(|r| r[k].clone()).collect();
        gather(&parts, &ext).unwrap()
    })
}

fn wilson_global() -> (Lattice, GaugeField<f64>) {
    let global = Lattice::new([4, 4, 4, 8]).unwrap();
    (global, GaugeField::<f64>::random(global, 71))
}

fn staggered_global() -> (Lattice, StaggeredLinks<f64>) {
    // Local extents ≥ 3 (the Naik term's halo) on every grid of GRIDS.
    let global = Lattice::new([8, 4, 8, 8]).unwrap();
    let links = StaggeredLinks::Improved {
        fat: GaugeField::<f64>::random(global, 72),
        long: GaugeField::<f64>::random(global, 73),
    };
    (global, links)
}

/// A rank's part of the links (scattered, halos zero).
fn part(
    u: &GaugeField<f64>,
    ext: &ExtendedLattice,
    comm: &SharedComm<ThreadComm>,
) -> GaugeField<f64> {
    scatter(u, ext, comm.rank()).unwrap()
}

fn staggered_part(
    links: &StaggeredLinks<f64>,
    ext: &ExtendedLattice,
    comm: &SharedComm<ThreadComm>,
) -> StaggeredLinks<f64> {
    match links {
        StaggeredLinks::Naive(u) => StaggeredLinks::Naive(part(u, ext, comm)),
        StaggeredLinks::Improved { fat, long } => StaggeredLinks::Improved {
            fat: part(fat, ext, comm),
            long: part(long, ext, comm),
        },
    }
}

/// The distributed M̂ and M̂† of Wilson (antiperiodic t), clover, twisted clover and
/// improved staggered equal the single-process ones bit for bit on every grid: each
/// interior site sees the same operands in the same order.
#[test]
fn distributed_even_odd_operators_equal_the_single_process_ones_bit_for_bit() {
    let (global, u) = wilson_global();
    let anti = TimeBoundary::Antiperiodic;
    let (kappa, mass, csw, mu) = (0.11, 0.5 / 0.11 - 4.0, 1.2, 0.05);
    let a = clover_field(&u, mass, csw);
    let psi = ColourSpinorField::<f64>::gaussian(
        SpinorLayout::wilson(global, SiteSubset::Single(PARITY)),
        74,
    );
    let wilson = EvenOddWilson::<f64>::new(u.clone(), kappa, PARITY, anti);
    let clover = EvenOddClover::<f64>::from_clover(u.clone(), &a, mu, PARITY, anti).unwrap();
    let single = |op: &dyn LinearOperator<ColourSpinorField<f64>>| {
        let (mut out, mut dag) = (psi.zeros_like(), psi.zeros_like());
        op.apply(&mut out, &psi).unwrap();
        op.apply_dagger(&mut dag, &psi).unwrap();
        [out, dag]
    };
    let (sg, links) = staggered_global();
    let chi = ColourSpinorField::<f64>::gaussian(
        SpinorLayout::staggered(sg, SiteSubset::Single(PARITY)),
        75,
    );
    let staggered = EvenOddStaggered::<f64>::new(links.clone(), 0.1, PARITY);
    let (mut s_out, mut s_dag) = (chi.zeros_like(), chi.zeros_like());
    staggered.apply(&mut s_out, &chi).unwrap();
    staggered.apply_dagger(&mut s_dag, &chi).unwrap();
    for grid in GRIDS {
        let ext = extended(global, grid, ONE_HOP_DEPTH);
        let got = apply_both(
            ext,
            &|ext, comm| {
                distributed_wilson(part(&u, &ext, &comm), kappa, PARITY, anti, ext, comm).unwrap()
            },
            &psi,
        );
        for (g, w) in got.iter().zip(single(&wilson)) {
            assert_bits_equal(g, &w, &format!("Wilson {grid:?}"));
        }
        let got = apply_both(
            ext,
            &|ext, comm| {
                let a_part = scatter(&a, &ext, comm.rank()).unwrap();
                distributed_clover(part(&u, &ext, &comm), a_part, mu, PARITY, anti, ext, comm)
                    .unwrap()
            },
            &psi,
        );
        for (g, w) in got.iter().zip(single(&clover)) {
            assert_bits_equal(g, &w, &format!("twisted clover {grid:?}"));
        }
        let ext3 = extended(sg, grid, NAIK_DEPTH);
        let got = apply_both(
            ext3,
            &|ext, comm| {
                distributed_staggered(staggered_part(&links, &ext, &comm), 0.1, PARITY, ext, comm)
                    .unwrap()
            },
            &chi,
        );
        assert_bits_equal(&got[0], &s_out, &format!("improved staggered {grid:?}"));
        assert_bits_equal(&got[1], &s_dag, &format!("improved staggered † {grid:?}"));
    }
}

/// Wilson (antiperiodic t) with BiCGStab and CGNR, f64–f32 with reliable updates: 2 and
/// 4 ranks reach one rank's iteration count (±1) and true residual.
#[test]
fn distributed_wilson_solves_match_the_single_process_solves() {
    let (global, u) = wilson_global();
    let (kappa, anti, tol) = (0.12, TimeBoundary::Antiperiodic, 1e-9);
    let b = ColourSpinorField::<f64>::gaussian(
        SpinorLayout::wilson(global, SiteSubset::Single(PARITY)),
        76,
    );
    let high = EvenOddWilson::<f64>::new(u.clone(), kappa, PARITY, anti);
    let low = EvenOddWilson::<f32>::new(u.cast(), kappa, PARITY, anti);
    let build = |ext: ExtendedLattice, comm: SharedComm<ThreadComm>| {
        let links = part(&u, &ext, &comm);
        (
            distributed_wilson(links.clone(), kappa, PARITY, anti, ext, comm.clone()).unwrap(),
            distributed_wilson(links.cast::<f32>(), kappa, PARITY, anti, ext, comm).unwrap(),
        )
    };
    for solver in [SolverKind::BiCgStab, SolverKind::Cgnr] {
        let single = solve_single(&high, &low, &b, solver, &mixed(tol));
        for grid in GRIDS {
            let ext = extended(global, grid, ONE_HOP_DEPTH);
            let d = solve_distributed(ext, &build, &b, solver, &mixed(tol));
            assert_same_solve(&d, &single, tol, 1e-6, &format!("Wilson {solver} {grid:?}"));
        }
    }
}

/// Clover and twisted clover (c_sw = 1.2, μ = 0.05; antiperiodic t) with BiCGStab,
/// f64–f32: the distributed solves match one rank's.
#[test]
fn distributed_clover_solves_match_the_single_process_solves() {
    let (global, u) = wilson_global();
    let (kappa, csw, anti, tol) = (0.12, 1.2, TimeBoundary::Antiperiodic, 1e-9);
    let mass = 0.5 / kappa - 4.0;
    let a = clover_field(&u, mass, csw);
    let b = ColourSpinorField::<f64>::gaussian(
        SpinorLayout::wilson(global, SiteSubset::Single(PARITY)),
        77,
    );
    for mu in [0.0, 0.05] {
        let high = EvenOddClover::<f64>::from_clover(u.clone(), &a, mu, PARITY, anti).unwrap();
        let low = high.cast::<f32>();
        let single = solve_single(&high, &low, &b, SolverKind::BiCgStab, &mixed(tol));
        let build = |ext: ExtendedLattice, comm: SharedComm<ThreadComm>| {
            let (links, a_part) = (
                part(&u, &ext, &comm),
                scatter(&a, &ext, comm.rank()).unwrap(),
            );
            let high = distributed_clover(
                links.clone(),
                a_part.clone(),
                mu,
                PARITY,
                anti,
                ext,
                comm.clone(),
            )
            .unwrap();
            let low = distributed_clover(
                links.cast::<f32>(),
                a_part.cast::<f32>(),
                mu,
                PARITY,
                anti,
                ext,
                comm,
            )
            .unwrap();
            (high, low)
        };
        for grid in GRIDS {
            let ext = extended(global, grid, ONE_HOP_DEPTH);
            let d = solve_distributed(ext, &build, &b, SolverKind::BiCgStab, &mixed(tol));
            let what = format!("clover μ = {mu} {grid:?}");
            assert_same_solve(&d, &single, tol, 1e-6, &what);
        }
    }
}

/// Improved staggered (fat and Naik links: halo depth 3, 3-hop faces) with CG, f64–f32:
/// the distributed solves match one rank's; multi-shift CG (three shifts, refined) too.
#[test]
fn distributed_staggered_solves_match_the_single_process_solves() {
    let (global, links) = staggered_global();
    let (mass, tol) = (0.2, 1e-9);
    let b = ColourSpinorField::<f64>::gaussian(
        SpinorLayout::staggered(global, SiteSubset::Single(PARITY)),
        78,
    );
    let high = EvenOddStaggered::<f64>::new(links.clone(), mass, PARITY);
    let low = EvenOddStaggered::<f32>::new(links.cast(), mass, PARITY);
    let single = solve_single(&high, &low, &b, SolverKind::Cg, &mixed(tol));
    let build = |ext: ExtendedLattice, comm: SharedComm<ThreadComm>| {
        let local = staggered_part(&links, &ext, &comm);
        (
            distributed_staggered(local.clone(), mass, PARITY, ext, comm.clone()).unwrap(),
            distributed_staggered(local.cast::<f32>(), mass, PARITY, ext, comm).unwrap(),
        )
    };
    let shifts = [0.0, 0.05, 0.3];
    let mut single_shifts = vec![b.zeros_like(); 3];
    let single_ms = multishift_cg::<_, ColourSpinorField<f32>, _, _>(
        &high,
        &low,
        &b,
        &shifts,
        &mut single_shifts,
        &mixed(tol),
    )
    .unwrap();
    for grid in GRIDS {
        let ext = extended(global, grid, NAIK_DEPTH);
        let d = solve_distributed(ext, &build, &b, SolverKind::Cg, &mixed(tol));
        assert_same_solve(&d, &single, tol, 1e-6, &format!("staggered CG {grid:?}"));
        let ranks = run_ranks(ext.decomposition().size(), CommConfig::default(), |comm| {
            let comm = SharedComm::new(comm);
            let (high, low) = build(ext, comm.clone());
            let b = Field::scatter(&b, ext, comm).unwrap();
            let mut xs = vec![b.zeros_like(), b.zeros_like(), b.zeros_like()];
            let result = multishift_cg::<_, Field<f32>, _, _>(
                &high,
                &low,
                &b,
                &shifts,
                &mut xs,
                &mixed(tol),
            )
            .unwrap();
            (
                result,
                xs.iter().map(|x| x.part().clone()).collect::<Vec<_>>(),
            )
        });
        let result = &ranks[0].0;
        assert!(result.is_converged(), "{grid:?}");
        assert!(
            result
                .multishift
                .iterations
                .abs_diff(single_ms.multishift.iterations)
                <= 1,
            "multi-shift {grid:?}: {} vs {}",
            result.multishift.iterations,
            single_ms.multishift.iterations
        );
        for k in 0..3 {
            let parts: Vec<_> = ranks.iter().map(|r| r.1[k].clone()).collect();
            let mut x = gather(&parts, &ext).unwrap();
            x.axpy(qdsl_core::Complex::new(-1.0, 0.0), &single_shifts[k])
                .unwrap();
            let rel = (x.norm_sqr() / single_shifts[k].norm_sqr()).sqrt();
            assert!(
                rel <= 1e-6,
                "multi-shift σ = {} {grid:?}: {rel:e}",
                shifts[k]
            );
            assert!(result.shifts[k].true_residual <= tol);
        }
    }
}

/// Möbius domain wall (Ls = 4, b5 = 1.5, c5 = 0.5, M5 = 1.8, m_f = 0.1; antiperiodic t)
/// on 5D fields whose faces carry the Ls slices: the distributed M̂ and M̂† equal the
/// single-process ones bit for bit, and CGNR (CG on M̂†M̂, f64–f32 with reliable
/// updates: the solve of `qdsl solve --action mobius`) on 2 and 4 ranks reaches one
/// rank's iteration count (±1), true residual and solution.
#[test]
fn distributed_mobius_operator_and_solve_match_the_single_process_ones() {
    let global = Lattice::new([4, 4, 4, 4]).unwrap();
    let u = GaugeField::<f64>::random(global, 81);
    let (anti, tol) = (TimeBoundary::Antiperiodic, 1e-8);
    let params = MobiusParams::mobius(4, 1.5, 0.5, 1.8, 0.1).unwrap();
    let high = EvenOddMobius::<f64>::asymmetric(u.clone(), params.clone(), PARITY, anti).unwrap();
    let low = high.cast::<f32>();
    let layout = high.blocks().layout(SiteSubset::Single(PARITY));
    let psi = ColourSpinorField::<f64>::gaussian(layout, 82);
    let (mut out, mut dag) = (psi.zeros_like(), psi.zeros_like());
    high.apply(&mut out, &psi).unwrap();
    high.apply_dagger(&mut dag, &psi).unwrap();
    let single = solve_single(&high, &low, &psi, SolverKind::Cgnr, &mixed(tol));
    let build = |ext: ExtendedLattice, comm: SharedComm<ThreadComm>| {
        let links = part(&u, &ext, &comm);
        let p = params.clone();
        (
            distributed_mobius(links.clone(), p.clone(), PARITY, anti, ext, comm.clone()).unwrap(),
            distributed_mobius(links.cast::<f32>(), p, PARITY, anti, ext, comm).unwrap(),
        )
    };
    for grid in [[1, 1, 1, 2], [1, 2, 1, 2]] {
        let ext = extended(global, grid, ONE_HOP_DEPTH);
        let got = apply_both(ext, &|ext, comm| build(ext, comm).0, &psi);
        assert_bits_equal(&got[0], &out, &format!("Möbius {grid:?}"));
        assert_bits_equal(&got[1], &dag, &format!("Möbius † {grid:?}"));
        let d = solve_distributed(ext, &build, &psi, SolverKind::Cgnr, &mixed(tol));
        assert_same_solve(&d, &single, tol, 1e-6, &format!("Möbius CGNR {grid:?}"));
    }
}

/// A rank that leaves before the solve: the others' solve ends with an error naming the
/// missing peer within the communicator's timeout, never a hang or a panic.
#[test]
fn a_dead_peer_ends_the_distributed_solve_with_an_error() {
    let (global, u) = wilson_global();
    let ext = extended(global, [1, 1, 1, 2], ONE_HOP_DEPTH);
    let b = ColourSpinorField::<f64>::gaussian(
        SpinorLayout::wilson(global, SiteSubset::Single(PARITY)),
        79,
    );
    let quick = CommConfig {
        timeout: Duration::from_millis(300),
    };
    let started = std::time::Instant::now();
    let outcomes = run_ranks(2, quick, |comm| {
        let comm = SharedComm::new(comm);
        let rank = comm.rank();
        let anti = TimeBoundary::Antiperiodic;
        let op = distributed_wilson(part(&u, &ext, &comm), 0.12, PARITY, anti, ext, comm.clone())
            .unwrap();
        if rank == 1 {
            return None;
        }
        let b = Field::scatter(&b, ext, comm).unwrap();
        let mut x = b.zeros_like();
        let solved =
            SolverKind::BiCgStab.solve::<_, Field<f64>, _, _>(&op, &op, &b, &mut x, &mixed(1e-9));
        Some(solved)
    });
    assert!(started.elapsed() < Duration::from_secs(20));
    let Some(Err(error)) = &outcomes[0] else {
        panic!(
            "rank 0's solve must fail: {:?}",
            outcomes[0].as_ref().map(|r| r.is_ok())
        );
    };
    let message = error.to_string();
    assert!(
        message.contains("rank 0") && message.contains("rank 1"),
        "{message}"
    );
}
