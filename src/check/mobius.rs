//! The Möbius rows of `qdsl check`:
//!
//! * every `fused5d!` chain of [`qdsl_kernels::domain_wall::chains`] (QUDA's M̂ kernels,
//!   the MSPCG kernels, the even-odd blocks) on the GPU against its generated CPU code
//!   ([`qdsl_core::dsl::fused5d::cpu::apply`], the hop the generated CPU Wilson hop) on
//!   random links and fields: Ls 12, both output parities, with and without xpay (only
//!   with it where the chain names an xpay piece), f64 recon 18, f32 and fixed16
//!   recon 12;
//! * the device even-odd operator ([`DeviceEvenOddMobius`]: M̂ in QUDA's three kernels and
//!   in two, M̂†, the symmetric M̂ and M̂†) against the host [`EvenOddMobius`] on MILC's
//!   lat.sample.l8 at Ls 8 in f64, f32 and fixed16 (rows `mobius_eo`), and M̂, M̂† with the
//!   tensor-core M5⁻¹ (f16, bf16) against the host M̂ emulating it, f32 and fixed16;
//! * the chains that list the tensor-core M5⁻¹ with it (`m5inv=mma_f16`, `mma_bf16`), Ls
//!   12 and 16, f32 and fixed16, against the CPU's emulation of the same roundings.
//!
//! Möbius b5 = 1.5, c5 = 0.5, M5 = 1.8, m_f = 0.01 throughout.

use super::report::{relative_error, CheckRow, Outcome};
use super::run::{as_c64, err, operator_outcome, outcome, read};
use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::fused5d::{cpu, FusedVariant, M5invMode, SPiece};
use qdsl_core::dsl::variant::{OutputSites, Recon, StorageFormat, TimeBoundary};
use qdsl_core::dsl::Variant;
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::format::LinkFormat;
use qdsl_core::io::ReadOptions;
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_core::Real;
use qdsl_kernels::domain_wall::{chains, FusedEntry};
use qdsl_kernels::WilsonHop;
use qdsl_runtime::device::{DeviceField, Gpu};
use qdsl_runtime::operator::device::{device_spinor, DeviceRun, DeviceStencil, StencilArgs};
use qdsl_runtime::operator::even_odd::EvenOddBlocks;
use qdsl_runtime::operator::mobius::{
    ChiralSOperator, ComplementPlan, DeviceChainMatrices, DeviceEvenOddMobius, EvenOddMobius,
    MobiusParams,
};
use qdsl_runtime::operator::DeviceXpay;
use qdsl_runtime::tune::Tuner;
use std::path::Path;

const LS_CHAINS: usize = 12;
const LS_OPERATOR: usize = 8;

fn params(ls: usize) -> Result<MobiusParams, String> {
    MobiusParams::mobius(ls, 1.5, 0.5, 1.8, 0.01).map_err(err)
}

/// The storage formats of the rows.
const FORMATS: [(StorageFormat, Recon); 3] = [
    (StorageFormat::F64, Recon::R18),
    (StorageFormat::F32, Recon::R12),
    (StorageFormat::Fixed16, Recon::R12),
];

/// One chain variant on the GPU and on the CPU (compute type T), the inputs rounded to
/// the storage format first: ‖gpu − cpu‖/‖cpu‖.
fn compare_chain<T: Real>(
    gpu: &Gpu,
    tuner: &Tuner,
    e: &FusedEntry,
    v: &FusedVariant,
    u: &GaugeField<f64>,
    seed: u64,
) -> Result<f64, String> {
    let chain = (e.chain)();
    let hop = (e.hop)();
    if let Some(ir) = &hop {
        if ir.name != "wilson_hop" {
            return Err(format!(
                "the reference knows the Wilson hop, not {}",
                ir.name
            ));
        }
    }
    let OutputSites::Parity(out_parity) = v.variant.sites else {
        return Err("a chain writes one parity".into());
    };
    let from = if hop.is_some() {
        out_parity.opposite()
    } else {
        out_parity
    };
    let lat = *u.lattice();
    let layout = |p: Parity| SpinorLayout::new(lat, v.ls, SiteSubset::Single(p), 4, 3);
    let format = v.variant.spinor;
    let fermion = format.fermion_format();
    // Inputs as stored: uploaded, then read back (the CPU sees the rounded values).
    let stored =
        |f: ColourSpinorField<f64>| -> Result<(DeviceField, ColourSpinorField<T>), String> {
            let d = DeviceField::from_spinor(gpu, &f, fermion).map_err(err)?;
            let h = d.to_spinor::<T>(gpu, *f.layout()).map_err(err)?;
            Ok((d, h))
        };
    let (d_psi, psi) = stored(ColourSpinorField::gaussian(
        layout(from).map_err(err)?,
        seed,
    ))?;
    let (d_x, x) = stored(ColourSpinorField::gaussian(
        layout(out_parity).map_err(err)?,
        seed + 1,
    ))?;
    let link = LinkFormat::new(
        v.variant.gauge.link_storage(),
        v.variant.recon.compression(),
    );
    let d_u = DeviceField::from_gauge(gpu, u, link).map_err(err)?;
    // The CPU hop rounds the links through the variant's format and recon itself, as the
    // device stores them (rounding here first would round twice: fixed16 links are then
    // off SU(3) by more than recon 12 accepts).
    let u_t = u.cast::<T>();
    let params = params(v.ls)?;
    let (a, b) = (1.0, -0.25);
    // The CPU.
    let matrices = |p: SPiece| ChiralSOperator::of_piece(&params, p).kernel_matrices();
    let mut want = ColourSpinorField::<T>::zeros(*x.layout());
    let mut wilson = |hv: &Variant, o: &mut ColourSpinorField<T>, s: &ColourSpinorField<T>| {
        WilsonHop.apply_cpu(hv, o, s, &u_t, None)
    };
    let cpu_hop: Option<&mut cpu::HopFn<'_, T>> = match hop {
        Some(_) => Some(&mut wilson),
        None => None,
    };
    let xpay = v.variant.xpay.then(|| Xpay {
        a: T::from_f64(a),
        x: &x,
        b: T::from_f64(b),
    });
    cpu::apply(&chain, v, &matrices, cpu_hop, &mut want, &psi, xpay).map_err(err)?;
    // The GPU.
    let wide = format.compute() == StorageFormat::F64;
    let device_matrices =
        DeviceChainMatrices::upload(gpu, &params, &chain.matrices(), wide).map_err(err)?;
    let bindings = device_matrices.bindings();
    let kernel = DeviceStencil::fused(gpu, &chain, (e.hop)(), v).map_err(err)?;
    let mut d_out = device_spinor(gpu, format, 24, v.ls * lat.half_volume()).map_err(err)?;
    let inputs: Vec<&DeviceField> = match chain.hop_position() {
        Some(_) => vec![&d_psi, &d_u],
        None => vec![&d_psi],
    };
    let dx = DeviceXpay { a, x: &d_x, b };
    kernel
        .run(
            gpu,
            tuner,
            &lat,
            StencilArgs::new(&mut d_out, &inputs)
                .xpay(v.variant.xpay.then_some(&dx))
                .matrices(&bindings),
        )
        .map_err(err)?;
    let got = d_out.to_spinor::<T>(gpu, *want.layout()).map_err(err)?;
    Ok(relative_error(&as_c64(&got), &as_c64(&want)))
}

/// The chain rows (module docs) on `dims`.
fn chain_rows(
    gpu: &Gpu,
    tuner: &Tuner,
    dims: [usize; 4],
    seed: u64,
    wanted: &dyn Fn(&str) -> bool,
) -> Vec<CheckRow> {
    let mut rows = Vec::new();
    let u = Lattice::new(dims)
        .map_err(err)
        .map(|lat| GaugeField::<f64>::random(lat, seed));
    for e in chains().iter().filter(|e| wanted(&e.name)) {
        let u = match &u {
            Ok(u) => u,
            Err(why) => {
                rows.push(row(
                    &e.name,
                    "-".into(),
                    "random",
                    Outcome::Failed(why.clone()),
                ));
                continue;
            }
        };
        let xpays: &[bool] = match (e.chain)().xpay {
            Some(_) => &[true],
            None => &[false, true],
        };
        for (format, recon) in FORMATS {
            for parity in [Parity::Even, Parity::Odd] {
                for &xpay in xpays {
                    let v = FusedVariant {
                        variant: Variant {
                            sites: OutputSites::Parity(parity),
                            xpay,
                            spinor: format,
                            gauge: format,
                            recon,
                            boundary: TimeBoundary::Antiperiodic,
                            ..Variant::default()
                        },
                        ls: LS_CHAINS,
                        m5inv: Default::default(),
                    };
                    let r = match format.compute() {
                        StorageFormat::F64 => compare_chain::<f64>(gpu, tuner, e, &v, u, seed),
                        _ => compare_chain::<f32>(gpu, tuner, e, &v, u, seed),
                    };
                    rows.push(row(&e.name, v.canonical(), "random", outcome(format, r)));
                }
            }
        }
        // The tensor-core M5⁻¹ where the chain lists it: against the CPU's emulation of
        // the same roundings (f16 / bf16 operands, per-column scaling, f32 sums), Ls 12
        // and 16, f32 and fixed16 recon 12, even parity.
        for mode in [M5invMode::MmaF16, M5invMode::MmaBf16] {
            if !(e.chain)().m5inv_modes().contains(&mode) {
                continue;
            }
            for (format, recon) in TENSOR_CORE_FORMATS {
                for ls in [12, 16] {
                    let v = FusedVariant {
                        variant: Variant {
                            sites: OutputSites::Parity(Parity::Even),
                            xpay: xpays[0],
                            spinor: format,
                            gauge: format,
                            recon,
                            boundary: TimeBoundary::Antiperiodic,
                            ..Variant::default()
                        },
                        ls,
                        m5inv: mode,
                    };
                    let r = compare_chain::<f32>(gpu, tuner, e, &v, u, seed);
                    let outcome = with_operand_rounding(outcome(format, r), mode);
                    rows.push(row(&e.name, v.canonical(), "random", outcome));
                }
            }
        }
    }
    rows
}

/// The tensor-core rows' allowance on top of the format's: the GPU and the CPU round the
/// same M5⁻¹ operands to f16/bf16 only where the f32 values they round agree; the hop
/// before M5⁻¹ sums in another order, and where its f32 output straddles an f16/bf16
/// rounding boundary the two round one operand apart: one operand step (f16 2⁻¹⁰, bf16
/// 2⁻⁷ relative), at a few components — far from the O(1) of a wrong term. (The
/// tensor-core M5⁻¹ itself is checked against a dense f64 inverse within its bound in
/// qdsl-core's `fused5d::mma_tests`.)
fn with_operand_rounding(outcome: Outcome, mode: M5invMode) -> Outcome {
    let step = match mode {
        M5invMode::MmaF16 => 2f64.powi(-10),
        M5invMode::MmaBf16 => 2f64.powi(-7),
        _ => 0.0,
    };
    match outcome {
        Outcome::Compared { error, bound } => Outcome::Compared {
            error,
            bound: bound + step,
        },
        other => other,
    }
}

/// The formats of the tensor-core rows (the mma M5⁻¹ is a sloppy f32-compute piece).
const TENSOR_CORE_FORMATS: [(StorageFormat, Recon); 2] = [
    (StorageFormat::F32, Recon::R12),
    (StorageFormat::Fixed16, Recon::R12),
];

/// What the operator rows apply.
#[derive(Clone, Copy, Debug)]
enum Form {
    Asymmetric(ComplementPlan),
    Symmetric,
    /// The asymmetric M̂ in QUDA's kernels with the tensor-core M5⁻¹, against the host
    /// M̂ whose M5⁻¹ emulates the same rounding.
    TensorCore(M5invMode),
}

/// The device even-odd operator against the host one: ‖gpu − cpu‖/‖cpu‖ of M̂ψ (M̂†ψ).
fn compare_operator(
    gpu: &Gpu,
    tuner: &Tuner,
    u: &GaugeField<f64>,
    form: Form,
    (format, recon): (StorageFormat, Recon),
    dagger: bool,
) -> Result<f64, String> {
    let params = params(LS_OPERATOR)?;
    let (p, boundary) = (Parity::Even, TimeBoundary::Antiperiodic);
    let formats = Variant {
        spinor: format,
        gauge: format,
        recon,
        boundary,
        ..Variant::default()
    };
    let (host, dev) = match form {
        Form::Asymmetric(plan) => (
            EvenOddMobius::asymmetric(u.clone(), params.clone(), p, boundary),
            DeviceEvenOddMobius::asymmetric(gpu, u, params, p, &formats, plan),
        ),
        Form::Symmetric => (
            EvenOddMobius::symmetric(u.clone(), params.clone(), p, boundary),
            DeviceEvenOddMobius::symmetric(gpu, u, params, p, &formats),
        ),
        Form::TensorCore(mode) => (
            EvenOddMobius::asymmetric(u.clone(), params.clone(), p, boundary)
                .and_then(|h| h.with_m5inv(mode)),
            DeviceEvenOddMobius::asymmetric_with_m5inv(
                gpu,
                u,
                params,
                p,
                &formats,
                ComplementPlan::Quda,
                mode,
            ),
        ),
    };
    let (host, dev) = (host.map_err(err)?, dev.map_err(err)?);
    let layout = host.blocks().layout(SiteSubset::Single(p));
    let psi = ColourSpinorField::<f64>::gaussian(layout, 5);
    let mut want = ColourSpinorField::zeros(layout);
    host.apply_in((), &mut want, &psi, dagger).map_err(err)?;
    let cx = DeviceRun::new(gpu, tuner);
    let d_psi = DeviceField::from_spinor(gpu, &psi, format.fermion_format()).map_err(err)?;
    let mut d_out = dev.blocks().zeros(cx, p).map_err(err)?;
    dev.apply_in(cx, &mut d_out, &d_psi, dagger).map_err(err)?;
    let got = d_out.to_spinor::<f64>(gpu, layout).map_err(err)?;
    Ok(relative_error(got.data(), want.data()))
}

fn row(kernel: &str, variant: String, data: &str, outcome: Outcome) -> CheckRow {
    CheckRow {
        kernel: kernel.into(),
        variant,
        data: data.into(),
        outcome,
    }
}

/// The operator rows (module docs) on MILC's lat.sample.l8 in `dir`.
fn operator_rows(gpu: &Gpu, tuner: &Tuner, dir: &Path) -> Vec<CheckRow> {
    const FILE: &str = "milc/lat.sample.l8";
    let u = match read(dir, FILE, &ReadOptions::default()) {
        Ok(u) => u,
        Err(e) => return vec![row("mobius_eo", "-".into(), FILE, Outcome::Failed(e))],
    };
    let mut rows = Vec::new();
    let forms = [
        ("M̂ (3 kernels)", Form::Asymmetric(ComplementPlan::Quda)),
        (
            "M̂ (2 kernels)",
            Form::Asymmetric(ComplementPlan::SourceFused),
        ),
        ("M̂_sym", Form::Symmetric),
    ];
    let tensor_core = [
        ("M̂ (mma_f16)", Form::TensorCore(M5invMode::MmaF16)),
        ("M̂ (mma_bf16)", Form::TensorCore(M5invMode::MmaBf16)),
    ];
    let all = forms
        .iter()
        .flat_map(|&f| FORMATS.map(|formats| (f, formats)))
        .chain(
            tensor_core
                .iter()
                .flat_map(|&f| TENSOR_CORE_FORMATS.map(|formats| (f, formats))),
        );
    for ((name, form), formats) in all {
        {
            for dagger in [false, true] {
                let r = compare_operator(gpu, tuner, &u, form, formats, dagger);
                let variant = format!(
                    "{name}{} even Ls={LS_OPERATOR} b5=1.5 c5=0.5 M5=1.8 m=0.01 {} recon={}",
                    if dagger { "†" } else { "" },
                    formats.0.name(),
                    formats.1.reals()
                );
                let mut outcome = operator_outcome(formats.0, r);
                if let Form::TensorCore(mode) = form {
                    outcome = with_operand_rounding(outcome, mode);
                }
                rows.push(row("mobius_eo", variant, FILE, outcome));
            }
        }
    }
    rows
}

/// Every Möbius row whose name `wanted` accepts: the chains on random links of `dims`,
/// then (`mobius_eo`) the operator on the real configuration.
pub fn check_mobius(
    gpu: &Gpu,
    tuner: &Tuner,
    dims: [usize; 4],
    seed: u64,
    dir: &Path,
    wanted: &dyn Fn(&str) -> bool,
) -> Vec<CheckRow> {
    let mut rows = chain_rows(gpu, tuner, dims, seed, wanted);
    if wanted("mobius_eo") {
        rows.extend(operator_rows(gpu, tuner, dir));
    }
    rows
}
