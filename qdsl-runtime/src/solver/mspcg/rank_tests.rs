//! MSPCG on a decomposed lattice (CPU ranks, threads transport): each rank's share of a
//! grid of blocks ([`PaddedBlocks::on_rank`], the pads' links from the neighbours)
//! gives the whole lattice's preconditioner, and the outer PCG on the distributed M̂
//! reaches the single-process MSPCG's iterations (±1) and solution.

use super::tests::{preconditioner, system, true_residual, BOUNDARY};
use super::*;
use crate::comm::{run_ranks, CommConfig, ThreadComm};
use crate::distributed::{
    distributed_mobius, padded_block_links, DistributedField, RankLocal, SharedComm,
};
use crate::linear::{NormalForm, NormalOperator, SolverField};
use crate::operator::mobius::{MobiusBlocks, MobiusParams};
use crate::solver::SolverOptions;
use qdsl_core::field::distributed::scatter;
use qdsl_core::field::{ColourSpinorField, GaugeField};
use qdsl_core::lattice::decomposition::ONE_HOP_DEPTH;
use qdsl_core::lattice::{Decomposition, ExtendedLattice, Parity, ProcessGrid};
use qdsl_core::Complex;

type F64 = ColourSpinorField<f64>;
type Field<T> = DistributedField<T, ThreadComm>;

/// The vectors' extended lattice of `grid` (one-hop halos, as the distributed M̂'s).
fn fields(global: qdsl_core::lattice::Lattice, grid: [usize; 4]) -> ExtendedLattice {
    let grid = ProcessGrid::new(grid).unwrap();
    let dec = Decomposition::with_halo_depth(global, grid, ONE_HOP_DEPTH).unwrap();
    ExtendedLattice::new(dec, ONE_HOP_DEPTH).unwrap()
}

/// The whole lattice's blocks divided among the ranks of `grid`.
fn per_rank(blocks: [usize; 4], grid: [usize; 4]) -> [usize; 4] {
    std::array::from_fn(|mu| blocks[mu] / grid[mu])
}

/// This rank's MSPCG preconditioner (inner f64 here, so that the comparison is exact
/// up to the order of sums): its share of `blocks`, links with a halo of PAD, `inner`
/// iterations.
fn rank_preconditioner(
    gauge: &GaugeField<f64>,
    params: &MobiusParams,
    (ext, comm): (ExtendedLattice, &SharedComm<ThreadComm>),
    blocks: [usize; 4],
    snake: Snake,
    inner: usize,
) -> RankLocal<MultiSplitting<MobiusBlocks<f64>>> {
    let (link_ext, links) = padded_block_links(gauge, &ext, comm).unwrap();
    let grid = ext.decomposition().grid().dims();
    let on_rank = PaddedBlocks::on_rank(
        ext,
        link_ext,
        comm.rank(),
        params.ls(),
        per_rank(blocks, grid),
        Parity::Even,
    )
    .unwrap();
    let m = MultiSplitting::mobius(
        &links,
        params,
        Parity::Even,
        BOUNDARY,
        on_rank,
        snake,
        inner,
    )
    .unwrap();
    RankLocal(m)
}

fn relative_difference(a: &F64, b: &F64) -> f64 {
    let mut d = a.clone();
    SolverField::axpy(&mut d, Complex::new(-1.0, 0.0), b).unwrap();
    (d.norm_sqr() / b.norm_sqr()).sqrt()
}

/// z = P r computed rank by rank (each rank its share of the blocks, pads read from the
/// neighbours' links, no communication in the application) equals the whole lattice's
/// preconditioner with the same blocks, with and without the snake terms, on grids that
/// cut t (the antiperiodic sign in the halo's links), z and t, and x and t with local
/// extents of 2 (the pads reach through the whole neighbour).
#[test]
fn each_ranks_blocks_give_the_whole_lattices_preconditioner() {
    let (gauge, params, _, rhs) = system(0.1);
    let global = *gauge.lattice();
    for (grid, blocks) in [
        ([1, 1, 1, 2], [1, 1, 2, 2]),
        ([1, 1, 2, 2], [1, 1, 2, 2]),
        ([2, 1, 1, 2], [2, 1, 1, 4]),
    ] {
        let ext = fields(global, grid);
        for snake in [Snake::Include, Snake::Exclude] {
            let whole = {
                let m = preconditioner(&gauge, &params, blocks, snake, 3);
                let mut z = rhs.zeros_like();
                Preconditioner::<F64>::apply(&m, &mut z, &rhs).unwrap();
                z
            };
            let size = ProcessGrid::new(grid).unwrap().size();
            let parts = run_ranks(size, CommConfig::default(), |comm| {
                let comm = SharedComm::new(comm);
                let m = rank_preconditioner(&gauge, &params, (ext, &comm), blocks, snake, 3);
                let r = Field::<f64>::scatter(&rhs, ext, comm.clone()).unwrap();
                let mut z = r.zeros_like();
                m.apply(&mut z, &r).unwrap();
                z
            });
            let z = Field::gather(&parts).unwrap();
            let rel = relative_difference(&z, &whole);
            assert!(
                rel < 1e-13,
                "grid {grid:?} blocks {blocks:?} {snake:?}: {rel:e}"
            );
        }
    }
}

/// The rank's share must be whole blocks, and the links' halo deep enough: clear
/// errors naming the values.
#[test]
fn a_ranks_block_grid_refuses_shallow_links_and_bad_tilings() {
    let (gauge, ..) = system(0.1);
    let ext = fields(*gauge.lattice(), [1, 1, 1, 2]);
    // Links with the fields' one-hop halo: too shallow for the pads.
    let err = PaddedBlocks::on_rank(ext, ext, 0, 4, [1, 1, 1, 1], Parity::Even).unwrap_err();
    assert!(err.to_string().contains("1 deep"), "{err}");
    let deep = ExtendedLattice::new(*ext.decomposition(), PAD).unwrap();
    let err = PaddedBlocks::on_rank(ext, deep, 2, 4, [1, 1, 1, 1], Parity::Even).unwrap_err();
    assert!(err.to_string().contains("rank 2 of a 2-rank grid"), "{err}");
    // The rank's local t extent is 4: 4 blocks of 1 would mix parities.
    let err = PaddedBlocks::on_rank(ext, deep, 0, 4, [1, 1, 1, 4], Parity::Even).unwrap_err();
    assert!(err.to_string().contains("direction t"), "{err}");
    // One block on the rank, t padded by the cut: stackable.
    let grid = PaddedBlocks::on_rank(ext, deep, 1, 4, [1, 1, 1, 1], Parity::Even).unwrap();
    assert!(grid.is_padded(3) && !grid.is_padded(0));
    assert_eq!(grid.local_lattice().dims(), [4, 4, 4, 8]);
    assert!(StackedBlocks::new(grid).is_ok());
}

/// The outer PCG of `qdsl solve --solver mspcg --grid`: the same function on the
/// distributed M̂†M̂ (f64) with each rank's share of the blocks (2 ranks, two blocks
/// each; one inner iteration, for the test's time) reaches the single-process MSPCG's
/// outer iterations (±1) and solution, and its true residual (recomputed in f64 on the
/// whole lattice) meets the tolerance. (Several inner iterations and more grids end to
/// end: `qdsl::app::mobius_grid`'s tests.)
#[test]
fn mspcg_on_ranks_matches_one_process() {
    let (gauge, params, op, rhs) = system(0.1);
    let global = *gauge.lattice();
    let opts = SolverOptions::with_tolerance(1e-8);
    let blocks = [1, 1, 2, 2];
    let normal = NormalOperator::new(&op, NormalForm::MdagM);
    let m = preconditioner(&gauge, &params, blocks, Snake::Include, 1);
    let mut x_one = rhs.zeros_like();
    let one = pcg(&normal, &normal, &m, &rhs, &mut x_one, &opts).unwrap();
    assert!(one.result.is_converged());
    let grid = [1, 1, 1, 2];
    let ext = fields(global, grid);
    let size = ProcessGrid::new(grid).unwrap().size();
    let outcomes = run_ranks(size, CommConfig::default(), |comm| {
        let comm = SharedComm::new(comm);
        let links = scatter(&gauge, &ext, comm.rank()).unwrap();
        let d = distributed_mobius(
            links,
            params.clone(),
            Parity::Even,
            BOUNDARY,
            ext,
            comm.clone(),
        )
        .unwrap();
        let a = NormalOperator::new(&d, NormalForm::MdagM);
        let p = rank_preconditioner(&gauge, &params, (ext, &comm), blocks, Snake::Include, 1);
        let b = Field::<f64>::scatter(&rhs, ext, comm.clone()).unwrap();
        let mut x = b.zeros_like();
        let out = pcg(&a, &a, &p, &b, &mut x, &opts).unwrap();
        (out, x)
    });
    let iterations: Vec<usize> = outcomes.iter().map(|(o, _)| o.result.iterations).collect();
    assert!(
        iterations.iter().all(|&i| i == iterations[0]),
        "{iterations:?}"
    );
    let (out, _) = &outcomes[0];
    assert!(out.result.is_converged() && out.breakdown.is_none());
    assert!(
        out.result.iterations.abs_diff(one.result.iterations) <= 1,
        "grid {grid:?}: {} outer iterations, {} on one process",
        out.result.iterations,
        one.result.iterations
    );
    let parts: Vec<Field<f64>> = outcomes.into_iter().map(|(_, x)| x).collect();
    let x = Field::gather(&parts).unwrap();
    assert!(true_residual(&normal, &x, &rhs) <= 1e-8);
    let rel = relative_difference(&x, &x_one);
    assert!(rel < 1e-6, "grid {grid:?}: x differs by {rel:e}");
}
