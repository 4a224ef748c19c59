//! The GPU form of MSPCG's preconditioner, checked on the host: the stacked lattice's
//! operator against every block's own local operator, the stacking's refusals and site
//! maps, and the grouped inner CG against CG on each group alone.

use super::local_operator::complement_with_cuts;
use super::tests::assembled;
use super::*;
use crate::linear::{LinearOperator, SolverError, SolverField};
use crate::operator::mobius::{MobiusBlocks, MobiusParams};
use crate::solver::SourceBatch;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{Lattice, Lattice5D, Parity};
use qdsl_core::Complex;

type F64 = ColourSpinorField<f64>;

const BOUNDARY: TimeBoundary = TimeBoundary::Antiperiodic;

/// Σ_s P_s A_s P_s x from one operator on the stacked lattice (what the GPU launches): gather,
/// M̂ then M̂† with the cuts of `snake` after each hop, the pads zeroed, scatter.
fn stacked(
    stacked: &StackedBlocks,
    gauge: &GaugeField<f64>,
    params: &MobiusParams,
    snake: Snake,
    x: &F64,
) -> F64 {
    let p = stacked.grid().parity();
    let links = stacked.gauge(gauge, BOUNDARY);
    let b = MobiusBlocks::new(links, params.clone(), p, TimeBoundary::Periodic).unwrap();
    let mut xs = F64::zeros(stacked.layout(p));
    stacked.gather(x, &mut xs);
    let (mut y, mut out) = (xs.zeros_like(), xs.zeros_like());
    let mut cut = |f: &mut F64, r: Parity| -> Result<(), SolverError> {
        if snake == Snake::Exclude {
            stacked.zero_pad(f, r);
        }
        Ok(())
    };
    complement_with_cuts(&b, (), &mut y, &xs, false, &mut cut).unwrap();
    complement_with_cuts(&b, (), &mut out, &y, true, &mut cut).unwrap();
    stacked.zero_pad(&mut out, p);
    let mut global = x.zeros_like();
    stacked.scatter(&out, &mut global);
    global
}

/// On 4×4×4×8 × Ls 4 (random links, antiperiodic time) with blocks cut in y and t
/// (1,2,1,2) and in x, z and t (2,1,2,2), the stacked operator equals every block's own
/// A_s to rounding, with and without the snake terms: joining the blocks' outer t pads
/// instead of each block's own two changes nothing the four hops keep (module docs of
/// [`super::stacked`]). The two variants differ (the cuts are applied).
#[test]
fn the_stacked_operator_is_every_blocks_local_operator() {
    let gauge = GaugeField::random(Lattice::new([4, 4, 4, 8]).unwrap(), 11);
    let params = MobiusParams::mobius(4, 1.5, 0.5, 1.8, 0.05).unwrap();
    for blocks in [[1, 2, 1, 2], [2, 1, 2, 2]] {
        let grid = PaddedBlocks::new(*gauge.lattice(), 4, blocks, Parity::Even).unwrap();
        let st = StackedBlocks::new(grid.clone()).unwrap();
        let local = grid.local_lattice();
        assert_eq!(
            st.lattice().dims(),
            [
                local.extent(0),
                local.extent(1),
                local.extent(2),
                local.extent(3) * grid.num_blocks()
            ]
        );
        assert_eq!(st.slices(), 4 * grid.num_blocks());
        let x = F64::gaussian(
            SpinorLayout::domain_wall(
                Lattice5D::new([4, 4, 4, 8], 4).unwrap(),
                SiteSubset::Single(Parity::Even),
            ),
            3,
        );
        let mut results = Vec::new();
        for snake in [Snake::Include, Snake::Exclude] {
            let m = MultiSplitting::<MobiusBlocks<f64>>::mobius(
                &gauge,
                &params,
                Parity::Even,
                BOUNDARY,
                grid.clone(),
                snake,
                1,
            )
            .unwrap();
            let want = assembled(&m, &x);
            let got = stacked(&st, &gauge, &params, snake, &x);
            let d = crate::testing::relative_distance(&got, &want);
            assert!(d < 1e-13, "{blocks:?} {snake:?}: {d:e}");
            results.push(got);
        }
        let d = crate::testing::relative_distance(&results[0], &results[1]);
        assert!(d > 1e-3, "{blocks:?}: the snake terms are missing ({d:e})");
    }
}

/// The site maps: every global site of the parity appears once, block s holds the
/// stacked single-parity range [s V_ℓ/2, (s+1) V_ℓ/2) (the slices of the batched
/// reductions), gather then scatter is the identity; t uncut with several blocks is
/// refused, naming the blocks.
#[test]
fn the_stacked_sites_cover_the_lattice_once_and_blocks_are_contiguous() {
    let lattice = Lattice::new([4, 4, 4, 8]).unwrap();
    let grid = PaddedBlocks::new(lattice, 2, [2, 1, 1, 2], Parity::Odd).unwrap();
    let st = StackedBlocks::new(grid.clone()).unwrap();
    let half_local = grid.local_lattice().half_volume();
    for p in [Parity::Even, Parity::Odd] {
        let map = st.global_sites(p);
        let mut seen = vec![0; lattice.half_volume()];
        for (i, &g) in map.iter().enumerate() {
            if let Ok(g) = usize::try_from(g) {
                seen[g] += 1;
                let block = i / half_local;
                let gl = SpinorLayout::wilson(lattice, SiteSubset::Single(p));
                let d = qdsl_core::lattice::BlockDecomposition::new(lattice, grid.block_dims())
                    .unwrap();
                assert_eq!(d.block_of(gl.coords_of_site(g)), block, "site {i}");
            }
        }
        assert!(seen.iter().all(|&n| n == 1), "{p:?}: {seen:?}");
    }
    let layout = SpinorLayout::domain_wall(
        Lattice5D::new(lattice.dims(), 2).unwrap(),
        SiteSubset::Single(Parity::Odd),
    );
    let x = F64::gaussian(layout, 5);
    let mut xs = F64::zeros(st.layout(Parity::Odd));
    st.gather(&x, &mut xs);
    let mut back = x.zeros_like();
    st.scatter(&xs, &mut back);
    assert_eq!(back.data(), x.data());
    let uncut = PaddedBlocks::new(lattice, 2, [2, 1, 1, 1], Parity::Even).unwrap();
    let e = StackedBlocks::new(uncut).unwrap_err();
    assert!(e.to_string().contains("[2, 1, 1, 1]"), "{e}");
    let one = PaddedBlocks::new(lattice, 2, [1, 1, 1, 1], Parity::Even).unwrap();
    assert_eq!(StackedBlocks::new(one).unwrap().lattice(), lattice);
}

/// The boxes where the local operator's stages run: with reach 0 each block's box holds
/// exactly the stacked sites that map to the block; with reach 1 its box holds every
/// site one hop from one of them (and only sites of the block's own local lattice);
/// with reach 2 (the pads) the whole local lattice.
#[test]
fn the_reach_boxes_hold_the_blocks_and_their_neighbours() {
    let lattice = Lattice::new([4, 4, 4, 8]).unwrap();
    let grid = PaddedBlocks::new(lattice, 2, [2, 1, 1, 2], Parity::Even).unwrap();
    let st = StackedBlocks::new(grid.clone()).unwrap();
    let stacked = st.lattice();
    let local_t = grid.local_lattice().extent(3);
    let contains = |b: &qdsl_core::lattice::SiteBox, c: qdsl_core::lattice::Coords| {
        (0..4).all(|mu| c[mu] >= b.lo[mu] && c[mu] < b.lo[mu] + b.n[mu])
    };
    let [inside, near, whole] = [0, 1, 2].map(|r| st.reach_boxes(r));
    for p in [Parity::Even, Parity::Odd] {
        let layout = SpinorLayout::wilson(stacked, SiteSubset::Single(p));
        for (i, &g) in st.global_sites(p).iter().enumerate() {
            let c = layout.coords_of_site(i);
            let block = c[3] / local_t;
            let boxes: Vec<usize> = (0..inside.len())
                .filter(|&s| contains(&inside[s], c))
                .collect();
            assert_eq!(
                boxes,
                if g >= 0 { vec![block] } else { vec![] },
                "site {c:?}"
            );
            assert!(contains(&whole[block], c), "{c:?}");
            for mu in 0..4 {
                for step in [1, -1] {
                    let n = stacked.shift(c, mu, step).0;
                    if g >= 0 {
                        assert!(contains(&near[block], n), "{n:?} next to {c:?}");
                    }
                }
            }
        }
    }
    for s in 0..st.num_blocks() {
        for mu in 0..3 {
            assert_eq!(whole[s].n[mu], stacked.extent(mu));
        }
        assert_eq!((whole[s].lo[3], whole[s].n[3]), (s * local_t, local_t));
        assert_eq!(near[s].n, [4, 4, 4, 6]);
    }
}

/// A site- and slice-dependent positive diagonal operator: the groups (slices j mod 2)
/// are independent, and CG needs more than one iteration on each.
struct Diagonal;

impl LinearOperator<F64> for Diagonal {
    fn apply(&self, out: &mut F64, x: &F64) -> Result<(), SolverError> {
        let n = x.data().len() / x.layout().ls();
        for (k, (o, z)) in out.data_mut().iter_mut().zip(x.data()).enumerate() {
            let w = 1.0 + ((k % n) % 7) as f64 * 0.3 + (k / n) as f64;
            *o = *z * w;
        }
        Ok(())
    }
    fn apply_dagger(&self, out: &mut F64, x: &F64) -> Result<(), SolverError> {
        self.apply(out, x)
    }
    fn flops_per_apply(&self) -> u64 {
        0
    }
}

/// The grouped inner CG equals CG on each group alone (the other groups' slices zero),
/// group by group, and a group with r = 0 stays at x = 0 while the others iterate.
#[test]
fn grouped_cg_is_cg_on_each_group_alone() {
    let layout = SpinorLayout::domain_wall(
        Lattice5D::new([4, 2, 2, 2], 4).unwrap(),
        SiteSubset::Single(Parity::Even),
    );
    let b = F64::gaussian(layout, 9);
    let n = b.data().len() / 4;
    let mut x = b.zeros_like();
    assert_eq!(fixed_cg_grouped(&Diagonal, &b, &mut x, 3, 2).unwrap(), 3);
    for g in 0..2 {
        let mut bg = b.clone();
        for (k, z) in bg.data_mut().iter_mut().enumerate() {
            if (k / n) % 2 != g {
                *z = Complex::new(0.0, 0.0);
            }
        }
        let mut xg = b.zeros_like();
        fixed_cg(&Diagonal, &bg, &mut xg, 3).unwrap();
        for (k, (a, w)) in x.data().iter().zip(xg.data()).enumerate() {
            if (k / n) % 2 == g {
                assert!((a - w).norm() < 1e-12 * w.norm().max(1.0), "group {g}, {k}");
            }
        }
    }
    // Group 1 empty: it stays zero, group 0 as before.
    let mut b0 = b.clone();
    for (k, z) in b0.data_mut().iter_mut().enumerate() {
        if (k / n) % 2 == 1 {
            *z = Complex::new(0.0, 0.0);
        }
    }
    let mut x0 = b.zeros_like();
    fixed_cg_grouped(&Diagonal, &b0, &mut x0, 3, 2).unwrap();
    assert_eq!(x0.norm_sqr_each()[1], 0.0);
    assert_eq!(x0.norm_sqr_each()[3], 0.0);
    assert!((x0.norm_sqr_each()[0] - x.norm_sqr_each()[0]).abs() < 1e-12);
    assert!(fixed_cg_grouped(&Diagonal, &b, &mut x, 3, 3).is_err());
}
