//! The even-odd operators of `qdsl bench`, one application each on the even parity:
//!
//! * `wilson_eo`: M̂ = 1 − κ² H_eo H_oe (two hops, [`Schur::wilson`]);
//! * `clover_eo`: M̂ = A_ee − ¼ H_eo A_oo⁻¹ H_oe (two hops, two clover products,
//!   [`DeviceEvenOddClover`] with c_sw = 1, μ = 0);
//! * `twisted_mass_eo`: the same with D = (m + 4) + iμγ5 (c_sw = 0, μ = [`MU`]): two hops,
//!   three clover products, two twists.
//!
//! Flops per site are the operator's own count (the hops' KernelInfo plus 504 per clover
//! product and 48 per twist); bytes per site, in both byte models, the sum over the
//! launched kernels of each one's KernelInfo (every intermediate written and read back,
//! as the kernels run). No QUDA number exists for these. A row's `jit ms` is the
//! operator's construction: its kernels' JIT (or the PTX cache) and, for clover and
//! twisted mass, the clover field, its inverse (on the host, in f64) and their upload;
//! its `tune ms` is the first application, which tunes every kernel it launches.

use super::metrics::rates;
use super::report::{BenchCase, BenchKernel, BenchResult, CopyBandwidth};
use super::run::{as_driver, BenchOptions, BATCH};
use qdsl_core::dsl::info::ByteModels;
use qdsl_core::dsl::KernelInfo;
use qdsl_core::dsl::Variant;
use qdsl_core::field::GaugeField;
use qdsl_core::gauge::clover_field;
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_runtime::backend::Backend;
use qdsl_runtime::device::{DeviceField, Gpu};
use qdsl_runtime::operator::device::OperatorError;
use qdsl_runtime::operator::{DeviceEvenOddClover, DeviceEvenOddHop, DeviceRun, Schur};
use qdsl_runtime::tune::Tuner;
use std::time::Instant;

/// κ of the Wilson operator (timing does not depend on it).
const KAPPA: f64 = 0.12;
/// The bare mass of the clover and twisted-mass operators.
const MASS: f64 = 0.1;
/// The twisted mass μ of `twisted_mass_eo`.
pub const MU: f64 = 0.05;

/// One of the operators, built on the device (boxed: both hold many kernels).
enum Operator {
    Wilson(Box<DeviceEvenOddHop>),
    Clover(Box<DeviceEvenOddClover>),
}

impl Operator {
    fn apply(
        &self,
        gpu: &Gpu,
        tuner: &Tuner,
        out: &mut DeviceField,
        psi: &DeviceField,
    ) -> Result<(), OperatorError> {
        let cx = DeviceRun::new(gpu, tuner);
        match self {
            Operator::Wilson(op) => op.apply_in(cx, out, psi, false),
            Operator::Clover(op) => op.apply_in(cx, out, psi, false),
        }
    }
}

/// The inputs of one operator row: the links on the device and on the host (the clover
/// field is built from them), the lattice, the source, the output, the variant of the
/// even-parity hop with xpay and the KernelInfo of both hops (to the odd parity, back
/// with xpay).
pub(super) struct OperatorInputs<'a> {
    pub d_u: DeviceField,
    pub u: &'a GaugeField<f64>,
    pub lattice: Lattice,
    pub psi: &'a DeviceField,
    pub out: &'a mut DeviceField,
    pub variant: Variant,
    pub hops: [KernelInfo; 2],
}

/// Whether `kernel` is one of the operators of this module.
pub(super) fn is_operator(kernel: BenchKernel) -> bool {
    matches!(
        kernel,
        BenchKernel::WilsonEo | BenchKernel::CloverEo | BenchKernel::TwistedMassEo
    )
}

/// Times one application of the operator of `case` (module docs).
pub(super) fn bench_operator(
    gpu: &Gpu,
    tuner: &Tuner,
    case: &BenchCase,
    inputs: OperatorInputs<'_>,
    copy: &CopyBandwidth,
    opts: &BenchOptions,
) -> Result<BenchResult, String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let OperatorInputs {
        d_u,
        u,
        lattice,
        psi,
        out,
        variant,
        hops,
    } = inputs;
    let half = lattice.half_volume();
    let t0 = Instant::now();
    let (op, flops_per_site, bytes) = match case.kernel {
        BenchKernel::WilsonEo => {
            let op = Schur::wilson(gpu, d_u, lattice, KAPPA, Parity::Even, &variant)
                .map_err(|e| err(&e))?;
            let flops = hops[0].flops_per_site + hops[1].flops_per_site;
            let bytes = hops[0].bytes + hops[1].bytes;
            (Operator::Wilson(Box::new(op)), flops, bytes)
        }
        kernel => {
            let (c_sw, mu) = match kernel {
                BenchKernel::CloverEo => (1.0, 0.0),
                _ => (0.0, MU),
            };
            let a = clover_field(u, MASS, c_sw);
            let op =
                Schur::clover(gpu, d_u, &a, mu, Parity::Even, &variant).map_err(|e| err(&e))?;
            let flops = usize::try_from(op.flops_per_apply()).map_err(|e| err(&e))? / half;
            let bytes: ByteModels = op.blocks().bytes_per_site();
            (Operator::Clover(Box::new(op)), flops, bytes)
        }
    };
    let jit_ms = t0.elapsed().as_secs_f64() * 1e3;
    let t0 = Instant::now();
    op.apply(gpu, tuner, out, psi).map_err(|e| err(&e))?;
    gpu.backend().synchronize().map_err(|e| err(&e))?;
    let tune_ms = t0.elapsed().as_secs_f64() * 1e3;
    let time_us = gpu
        .time_us(opts.warmup, opts.reps, || {
            for _ in 0..BATCH {
                op.apply(gpu, tuner, out, psi)
                    .map_err(as_driver("applying M̂"))?;
            }
            Ok(())
        })
        .map_err(|e| err(&e))?
        / BATCH as f64;
    Ok(BenchResult {
        label: case.label(),
        extent: lattice.dims()[0],
        sites: half,
        time_us,
        flops_per_site,
        bytes,
        rates: rates(half, flops_per_site, bytes, time_us, Some(copy.best_gbs())),
        compile: "per kernel".into(),
        launch: "tuned per kernel".into(),
        jit_ms,
        tune_ms,
    })
}
