//! GPU tests of MSPCG's device preconditioner (ignored where there is no GPU): the
//! stacked blocks' inner CG on the device against the host's block-by-block
//! preconditioner, in f32, and the narrower inner formats and the tensor-core M5⁻¹
//! within their rounding.

use super::*;
use crate::operator::mobius::{MobiusBlocks, MobiusParams};
use crate::solver::device::{DevicePrecision, DeviceVector, Double, Single};
use crate::solver::{Fixed16, Fixed8, SolverField};
use qdsl_core::dsl::fused5d::M5invMode;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{Lattice, Lattice5D, Parity};

type F64 = ColourSpinorField<f64>;

const BOUNDARY: TimeBoundary = TimeBoundary::Antiperiodic;

/// z = P r on the device with inner vectors in `P`.
fn device_z<P: DevicePrecision>(
    ctx: &std::sync::Arc<crate::solver::device::DeviceContext>,
    (gauge, params): (&GaugeField<f64>, &MobiusParams),
    grid: PaddedBlocks,
    (snake, m5inv): (Snake, M5invMode),
    r: &F64,
) -> F64 {
    let m = DeviceMultiSplitting::<P>::mobius(ctx, gauge, params, BOUNDARY, grid, snake, 3, m5inv)
        .unwrap();
    let r_dev = DeviceVector::<Double>::upload(ctx, r)
        .and_then(|v| v.with_sources(1))
        .unwrap();
    let mut z = DeviceVector::<Double>::zeros(ctx, 24, r_dev.layout().sites).unwrap();
    m.apply(&mut z, &r_dev).unwrap();
    assert!(ctx.take_error().is_none());
    z.download(*r.layout()).unwrap()
}

/// On 4×4×4×8 × Ls 4 (random links, antiperiodic time, m_f 0.05), blocks 1,2,1,2 and
/// 2,1,1,2, three inner iterations: the device preconditioner (every block at once on
/// the stacked lattice, f32 inner vectors) equals the host's (block by block, f32) to
/// f32 rounding, with and without the snake terms. fixed16 and fixed8 inner vectors
/// and the tensor-core M5⁻¹ (mma_f16, mma_bf16) differ from it by more than f32
/// rounding and less than their formats' bounds, so they are applied and sound.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn the_gpu_preconditioner_is_the_hosts() {
    let (ctx, _dir) = crate::testing::context();
    let lattice = Lattice::new([4, 4, 4, 8]).unwrap();
    let gauge = GaugeField::random(lattice, 7);
    let params = MobiusParams::mobius(4, 1.5, 0.5, 1.8, 0.05).unwrap();
    let layout = SpinorLayout::domain_wall(
        Lattice5D::new(lattice.dims(), 4).unwrap(),
        SiteSubset::Single(Parity::Even),
    );
    let r = F64::gaussian(layout, 5);
    let system = (&gauge, &params);
    for blocks in [[1, 2, 1, 2], [2, 1, 1, 2]] {
        let grid = PaddedBlocks::new(lattice, 4, blocks, Parity::Even).unwrap();
        for snake in [Snake::Include, Snake::Exclude] {
            let host = MultiSplitting::<MobiusBlocks<f32>>::mobius(
                &gauge,
                &params,
                Parity::Even,
                BOUNDARY,
                grid.clone(),
                snake,
                3,
            )
            .unwrap();
            let mut want = r.zeros_like();
            host.apply(&mut want, &r).unwrap();
            let sweep = (snake, M5invMode::Sweep);
            let got = device_z::<Single>(&ctx, system, grid.clone(), sweep, &r);
            let d = crate::testing::relative_distance(&got, &want);
            println!("{blocks:?} {snake:?}: f32 device against host {d:.3e}");
            assert!(d < 2e-5, "{blocks:?} {snake:?}: {d:e}");
            let narrow = [
                (
                    "fixed16",
                    device_z::<Fixed16>(&ctx, system, grid.clone(), sweep, &r),
                    2e-3,
                ),
                (
                    "fixed8",
                    device_z::<Fixed8>(&ctx, system, grid.clone(), sweep, &r),
                    0.3,
                ),
                (
                    "mma_f16",
                    device_z::<Single>(&ctx, system, grid.clone(), (snake, M5invMode::MmaF16), &r),
                    1e-2,
                ),
                (
                    "mma_bf16",
                    device_z::<Single>(&ctx, system, grid.clone(), (snake, M5invMode::MmaBf16), &r),
                    5e-2,
                ),
            ];
            for (name, z, bound) in narrow {
                let d = crate::testing::relative_distance(&z, &want);
                println!("{blocks:?} {snake:?}: {name} device against host f32 {d:.3e}");
                assert!(d > 1e-6 && d < bound, "{blocks:?} {snake:?} {name}: {d:e}");
            }
        }
    }
}
