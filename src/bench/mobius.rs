//! `qdsl bench` rows of the Möbius domain-wall chains (`fused5d!`): the 4D hop alone on
//! the 5D field (QUDA's Dslash4) and M5⁻¹ alone (QUDA's M5inv); QUDA's three fused
//! kernels of the asymmetric M̂ — Dslash4pre (M_φ), Dslash4·M5inv·M5pre and
//! Dslash4·xpay·M5mob — on one parity of a 5D field with Ls slices, each timed alone;
//! their sum is one application of M̂ (QUDA's MatPC); and the whole device M̂
//! ([`DeviceEvenOddMobius`]) applied at once, in QUDA's three kernels (`mobius_eo`) and
//! in two (`mobius_eo_2k`); the middle kernel and the whole M̂ again with the
//! tensor-core M5⁻¹ (`…_mma_f16`, `…_mma_bf16`: HMMA on the block's s-columns) beside the
//! sweep's rows.
//!
//! Rates are per 5D site: Grid's convention of 1320 flops per 5D site for the 4D hop
//! (the s-local pieces' flops are not counted), and the minimal byte model of the hop on
//! Ls slices — each slice's spinor read once and written once, the links once for all Ls
//! ([`per_source_minimal_bytes`]); the s-local chain (Dslash4pre) moves spinors only.

use super::metrics::{per_source_minimal_bytes, rates};
use super::report::{BenchCase, BenchKernel, BenchResult, CopyBandwidth};
use super::run::{as_driver, BATCH};
use qdsl_core::dsl::fused5d::{FusedVariant, M5invMode};
use qdsl_core::dsl::info::ByteModels;
use qdsl_core::dsl::variant::{OutputSites, StorageFormat};
use qdsl_core::dsl::{Stencil, Variant};
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::format::LinkFormat;
use qdsl_core::lattice::Parity;
use qdsl_kernels::domain_wall::{
    FusedEntry, MobiusDslash4, MobiusDslash4M5invM5pre, MobiusDslash4XpayM5mob, MobiusDslash4pre,
    MobiusM5inv,
};
use qdsl_kernels::WilsonHop;
use qdsl_runtime::device::{DeviceField, Gpu};
use qdsl_runtime::operator::device::DeviceRun;
use qdsl_runtime::operator::device::{device_spinor, DeviceStencil, StencilArgs};
use qdsl_runtime::operator::even_odd::EvenOddBlocks;
use qdsl_runtime::operator::mobius::{
    ComplementPlan, DeviceChainMatrices, DeviceEvenOddMobius, MobiusParams,
};
use qdsl_runtime::operator::DeviceXpay;
use qdsl_runtime::tune::Tuner;
use std::time::Instant;

/// The Möbius parameters of the rows (QUDA's dslash_test defaults are alike: the timing
/// does not depend on the values): b5 = 1.5, c5 = 0.5, M5 = 1.8, m_f = 0.01.
const B5: f64 = 1.5;
const C5: f64 = 0.5;
const M5: f64 = 1.8;
const MASS: f64 = 0.01;

/// Flops per 5D site of the 4D Wilson hop (Grid's count).
const HOP_FLOPS_PER_5D_SITE: usize = 1320;

/// The catalog chain a Möbius bench kernel runs.
fn entry(kernel: BenchKernel) -> Option<FusedEntry> {
    match kernel {
        BenchKernel::MobiusDslash4 => Some(FusedEntry::of::<MobiusDslash4>()),
        BenchKernel::MobiusM5inv => Some(FusedEntry::of::<MobiusM5inv>()),
        BenchKernel::MobiusDslash4pre => Some(FusedEntry::of::<MobiusDslash4pre>()),
        BenchKernel::MobiusDslash4M5invM5pre | BenchKernel::MobiusDslash4M5invM5preWith(_) => {
            Some(FusedEntry::of::<MobiusDslash4M5invM5pre>())
        }
        BenchKernel::MobiusDslash4XpayM5mob => Some(FusedEntry::of::<MobiusDslash4XpayM5mob>()),
        _ => None,
    }
}

/// Times the chain of `case` (Ls = `case.sources`) on one parity of `u`'s lattice.
pub(super) fn bench_chain(
    gpu: &Gpu,
    tuner: &Tuner,
    u: &GaugeField<f64>,
    case: &BenchCase,
    copy: &CopyBandwidth,
    warmup: usize,
    reps: usize,
) -> Result<BenchResult, String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let plan = match case.kernel {
        BenchKernel::MobiusEo => Some((ComplementPlan::Quda, M5invMode::Sweep)),
        BenchKernel::MobiusEoTwoKernels => Some((ComplementPlan::SourceFused, M5invMode::Sweep)),
        BenchKernel::MobiusEoWith(mode) => Some((ComplementPlan::Quda, mode)),
        _ => None,
    };
    if let Some(plan) = plan {
        return bench_operator(gpu, tuner, u, case, copy, (warmup, reps), plan);
    }
    let m5inv = match case.kernel {
        BenchKernel::MobiusDslash4M5invM5preWith(mode) => mode,
        _ => M5invMode::Sweep,
    };
    let e = entry(case.kernel)
        .ok_or_else(|| format!("{} is not a Möbius chain", case.kernel.name()))?;
    let ls = case.sources.ok_or("a Möbius row needs its Ls")?;
    let lat = *u.lattice();
    let half = lat.half_volume();
    let chain = (e.chain)();
    let hop = chain.hop_position().is_some();
    let xpay = chain.xpay.is_some();
    let out_parity = Parity::Odd;
    let from = if hop { Parity::Even } else { out_parity };
    let v = FusedVariant {
        variant: Variant {
            sites: OutputSites::Parity(out_parity),
            xpay,
            spinor: case.format,
            gauge: case.format,
            recon: case.recon,
            ..Variant::default()
        },
        ls,
        m5inv,
    };
    let params = MobiusParams::mobius(ls, B5, C5, M5, MASS).map_err(|e| err(&e))?;
    let layout = |p: Parity| SpinorLayout::new(lat, ls, SiteSubset::Single(p), 4, 3);
    let psi = ColourSpinorField::<f64>::gaussian(layout(from).map_err(|e| err(&e))?, 7);
    let x = ColourSpinorField::<f64>::gaussian(layout(out_parity).map_err(|e| err(&e))?, 8);
    let fermion = case.format.fermion_format();
    let d_psi = DeviceField::from_spinor(gpu, &psi, fermion).map_err(|e| err(&e))?;
    let d_x = DeviceField::from_spinor(gpu, &x, fermion).map_err(|e| err(&e))?;
    let lf = LinkFormat::new(case.format.link_storage(), case.recon.compression());
    let d_u = DeviceField::from_gauge(gpu, u, lf).map_err(|e| err(&e))?;
    let mut d_out = device_spinor(gpu, case.format, 24, ls * half).map_err(|e| err(&e))?;
    // The pieces' matrices in the compute type (f64 for f64 storage, else f32).
    let device_matrices = DeviceChainMatrices::upload(
        gpu,
        &params,
        &chain.matrices(),
        case.format == StorageFormat::F64,
    )
    .map_err(|e| err(&e))?;
    let matrices = device_matrices.bindings();
    let t0 = Instant::now();
    let kernel = DeviceStencil::fused(gpu, &chain, (e.hop)(), &v).map_err(|e| err(&e))?;
    let jit_ms = t0.elapsed().as_secs_f64() * 1e3;
    let inputs: Vec<&DeviceField> = match hop {
        true => vec![&d_psi, &d_u],
        false => vec![&d_psi],
    };
    let dx = DeviceXpay {
        a: 1.0,
        x: &d_x,
        b: -0.25,
    };
    let mut args = StencilArgs::new(&mut d_out, &inputs)
        .xpay(xpay.then_some(&dx))
        .matrices(&matrices);
    let t0 = Instant::now();
    let cfg = kernel
        .tuned_config(gpu, tuner, &lat, args.reborrow())
        .map_err(|e| err(&e))?;
    let tune_ms = t0.elapsed().as_secs_f64() * 1e3;
    let time_us = gpu
        .time_us(warmup, reps, || {
            for _ in 0..BATCH {
                kernel
                    .launch(gpu, &lat, cfg, args.reborrow())
                    .map_err(as_driver("launching a fused chain"))?;
            }
            Ok(())
        })
        .map_err(|e| err(&e))?
        / BATCH as f64;
    let site_bytes = case.format.codec().site_bytes(24);
    let hop_info = kernel.info();
    let (flops, minimal) = match hop {
        true => (
            HOP_FLOPS_PER_5D_SITE,
            per_source_minimal_bytes(hop_info.bytes.minimal, site_bytes, ls),
        ),
        false => (0, 2 * site_bytes),
    };
    let xpay_bytes = if xpay { site_bytes } else { 0 };
    let bytes = ByteModels {
        minimal: minimal + xpay_bytes,
        ..hop_info.bytes
    };
    let sites = half * ls;
    Ok(BenchResult {
        label: case.label(),
        extent: lat.dims()[0],
        sites,
        time_us,
        flops_per_site: flops,
        bytes,
        rates: rates(sites, flops, bytes, time_us, Some(copy.best_gbs())),
        compile: cfg.compile.to_string(),
        launch: cfg.launch.to_string(),
        jit_ms,
        tune_ms,
    })
}

/// Times one application of the whole device M̂ = M5 − ¼ H M_φ M5⁻¹ H M_φ
/// ([`DeviceEvenOddMobius`] in `plan`'s kernels, each tuned) on the even parity of `u`'s
/// lattice with Ls = `case.sources`. Per 5D site: Grid's 2 · 1320 flops (the two hops),
/// and the sum of the launched kernels' bytes (each hop in the minimal model of
/// [`per_source_minimal_bytes`], the xpay operand once more, QUDA's plan the
/// Dslash4pre's spinor in and out).
fn bench_operator(
    gpu: &Gpu,
    tuner: &Tuner,
    u: &GaugeField<f64>,
    case: &BenchCase,
    copy: &CopyBandwidth,
    (warmup, reps): (usize, usize),
    (plan, m5inv): (ComplementPlan, M5invMode),
) -> Result<BenchResult, String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let ls = case.sources.ok_or("a Möbius row needs its Ls")?;
    let lat = *u.lattice();
    let params = MobiusParams::mobius(ls, B5, C5, M5, MASS).map_err(|e| err(&e))?;
    let formats = Variant {
        spinor: case.format,
        gauge: case.format,
        recon: case.recon,
        ..Variant::default()
    };
    let t0 = Instant::now();
    let op = DeviceEvenOddMobius::asymmetric_with_m5inv(
        gpu,
        u,
        params,
        Parity::Even,
        &formats,
        plan,
        m5inv,
    )
    .map_err(|e| err(&e))?;
    let jit_ms = t0.elapsed().as_secs_f64() * 1e3;
    let layout =
        SpinorLayout::new(lat, ls, SiteSubset::Single(Parity::Even), 4, 3).map_err(|e| err(&e))?;
    let psi = ColourSpinorField::<f64>::gaussian(layout, 7);
    let d_psi =
        DeviceField::from_spinor(gpu, &psi, case.format.fermion_format()).map_err(|e| err(&e))?;
    let cx = DeviceRun::new(gpu, tuner);
    let mut d_out = op.blocks().zeros(cx, Parity::Even).map_err(|e| err(&e))?;
    let t0 = Instant::now();
    op.apply_in(cx, &mut d_out, &d_psi, false)
        .map_err(|e| err(&e))?;
    let tune_ms = t0.elapsed().as_secs_f64() * 1e3;
    let time_us = gpu
        .time_us(warmup, reps, || {
            for _ in 0..BATCH {
                op.apply_in(cx, &mut d_out, &d_psi, false)
                    .map_err(as_driver("applying the device Möbius M̂"))?;
            }
            Ok(())
        })
        .map_err(|e| err(&e))?
        / BATCH as f64;
    let site_bytes = case.format.codec().site_bytes(24);
    let hop = WilsonHop::info(&Variant {
        sites: OutputSites::Parity(Parity::Even),
        ..formats
    })
    .map_err(|e| err(&e))?
    .bytes;
    let one_hop = ByteModels {
        minimal: per_source_minimal_bytes(hop.minimal, site_bytes, ls),
        ..hop
    };
    let spinor = |n: usize| ByteModels {
        quda: n * site_bytes,
        minimal: n * site_bytes,
    };
    let dslash4pre = match plan {
        ComplementPlan::Quda => spinor(2),
        ComplementPlan::SourceFused => spinor(0),
    };
    let bytes = one_hop + one_hop + spinor(1) + dslash4pre;
    let flops = 2 * HOP_FLOPS_PER_5D_SITE;
    let sites = lat.half_volume() * ls;
    Ok(BenchResult {
        label: case.label(),
        extent: lat.dims()[0],
        sites,
        time_us,
        flops_per_site: flops,
        bytes,
        rates: rates(sites, flops, bytes, time_us, Some(copy.best_gbs())),
        compile: "-".into(),
        launch: format!("{plan:?} plan, M5inv {}, each kernel tuned", m5inv.name()),
        jit_ms,
        tune_ms,
    })
}
