//! A `fused5d!` chain's s-operator matrices on the device: each piece's A₊, A₋
//! ([`ChiralSOperator::of_piece`] → [`ChiralMatrices::kernel_reals`], 4 Ls² reals; M5's
//! and M5†'s followed by the O(Ls) solve's coefficients,
//! [`ChiralMatrices::sweep_reals`]) copied once in the kernel's compute type, bound by piece through
//! [`StencilArgs::matrices`](crate::operator::device::StencilArgs::matrices).
//!
//! [`ChiralMatrices::kernel_reals`]: qdsl_core::dsl::fused5d::ChiralMatrices::kernel_reals
//! [`ChiralMatrices::sweep_reals`]: qdsl_core::dsl::fused5d::ChiralMatrices::sweep_reals

use super::{ChiralSOperator, MobiusParams};
use crate::device::gpu::driver;
use crate::device::kernel::ReadBuffer;
use crate::device::{DeviceError, Gpu};
use cudarc::driver::CudaSlice;
use qdsl_core::dsl::fused5d::{SOp, SPiece};

/// The matrices of a chain's pieces, in f64 (f64 storage) or f32 (every other format).
pub struct DeviceChainMatrices {
    pieces: Vec<SPiece>,
    buffers: Buffers,
}

enum Buffers {
    F64(Vec<CudaSlice<f64>>),
    F32(Vec<CudaSlice<f32>>),
}

impl DeviceChainMatrices {
    /// Uploads the matrices of `pieces` for `params` (with M5 for each M5⁻¹: the kernel's
    /// solve operand, [`SPiece::solve_operand`]); `wide`: in f64, else f32.
    pub fn upload(
        gpu: &Gpu,
        params: &MobiusParams,
        pieces: &[SPiece],
        wide: bool,
    ) -> Result<Self, DeviceError> {
        let stream = gpu.backend().stream();
        // A kernel applies M5⁻¹ by solving M5 (Chain::kernel_matrices): both go up.
        let mut all: Vec<SPiece> = Vec::new();
        for p in pieces.iter().flat_map(|&p| [p, p.solve_operand()]) {
            if !all.contains(&p) {
                all.push(p);
            }
        }
        let pieces = &all;
        let reals = pieces.iter().map(|&p| {
            let m = ChiralSOperator::of_piece(params, p).kernel_matrices();
            let mut reals = m.kernel_reals();
            if p.op == SOp::M5 {
                // M5 (M5†) is what a kernel solves for M5⁻¹ (M5⁻†): the sweeps'
                // coefficients follow its matrices.
                reals.extend(m.sweep_reals(p.dagger));
            }
            reals
        });
        let what = "uploading a fused chain's matrices";
        let buffers = match wide {
            true => Buffers::F64(
                reals
                    .map(|r| stream.clone_htod(&r).map_err(driver(what)))
                    .collect::<Result<_, _>>()?,
            ),
            false => Buffers::F32(
                reals
                    .map(|r| {
                        let r: Vec<f32> = r.iter().map(|&z| z as f32).collect();
                        stream.clone_htod(&r).map_err(driver(what))
                    })
                    .collect::<Result<_, _>>()?,
            ),
        };
        Ok(Self {
            pieces: pieces.to_vec(),
            buffers,
        })
    }

    /// Each piece with its buffer, as a launch binds them.
    pub fn bindings(&self) -> Vec<(SPiece, &dyn ReadBuffer)> {
        let bufs: Vec<&dyn ReadBuffer> = match &self.buffers {
            Buffers::F64(b) => b.iter().map(|b| b as _).collect(),
            Buffers::F32(b) => b.iter().map(|b| b as _).collect(),
        };
        self.pieces.iter().copied().zip(bufs).collect()
    }
}
