//! The bench report: cases, results, the stdout table and the JSON document.

use super::metrics::Rates;
use super::quda::{quda_reference, speedup_over_quda};
use qdsl_core::dsl::fused5d::M5invMode;
use qdsl_core::dsl::info::ByteModels;
use qdsl_core::dsl::variant::{Recon, StorageFormat};
use qdsl_kernels::block_blas::BlockBlasMode;
use serde_json::{json, Value};
use std::fmt::Write;

/// The kernels and operators the bench measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchKernel {
    /// The Wilson hop H, one parity.
    WilsonHop,
    /// The Wilson hop on the N slices of a 5D field (the 4D hop of a domain-wall field, or
    /// N right-hand sides) with each thread walking its site's slices, the sources staged
    /// through shared memory ([`qdsl_core::dsl::variant::Slices::Walk`]); reported per
    /// slice.
    WilsonHopWalk,
    /// The naive staggered hop D, one parity.
    NaiveStaggeredHop,
    /// The improved staggered (asqtad) hop D, one parity.
    ImprovedStaggeredHop,
    /// The even-odd Wilson operator M̂ = 1 − κ² H_eo H_oe (two hops).
    WilsonEo,
    /// The even-odd Wilson-clover operator M̂ = A_ee − ¼ H_eo A_oo⁻¹ H_oe (c_sw = 1).
    CloverEo,
    /// The even-odd twisted-mass operator M̂ = D_ee − ¼ H_eo D_oo⁻¹ H_oe,
    /// D = (m + 4) + iμγ5 (no clover term).
    TwistedMassEo,
    /// Asqtad fat7 + Naik link construction (fat and long links), the whole lattice.
    AsqtadLinks,
    /// Fat7 link construction (1/8, −1/16, 1/64, −1/384), the whole lattice.
    Fat7Links,
    /// HISQ link construction (fat7, U(3) projection, HISQ fat and Naik links), the
    /// whole lattice.
    HisqLinks,
    /// [`BenchKernel::AsqtadLinks`] with the staged GPU plan (staple levels stored as
    /// fields, [`qdsl_core::dsl::paths::PlanKind::Staged`]).
    AsqtadLinksStaged,
    /// [`BenchKernel::Fat7Links`] with the staged GPU plan.
    Fat7LinksStaged,
    /// [`BenchKernel::HisqLinks`] with the staged GPU plan.
    HisqLinksStaged,
    /// The pullback through the asqtad fat and long links on the GPU (the fermion
    /// force's smearing part, `qdsl_runtime::smear::GpuPullback`), the whole lattice.
    AsqtadPullback,
    /// The pullback through the whole HISQ construction on the GPU (fat7, the U(3)
    /// projection and its derivative, the level-2 pullbacks with the ε terms:
    /// `qdsl_runtime::smear::GpuHisqForce`), the whole lattice.
    HisqPullback,
    /// The tree-level Symanzik gauge force, the whole lattice.
    SymanzikForce,
    /// One quenched Wilson heatbath sweep (f64), the whole lattice.
    WilsonHeatbath,
    /// One quenched Wilson HMC trajectory on the device (f64).
    WilsonHmc,
    /// The 4D hop alone on one parity of a 5D field (`fused5d!`; QUDA's Dslash4).
    MobiusDslash4,
    /// Möbius Dslash4pre: M_φ = b5 + c5 S on one parity of a 5D field (`fused5d!`).
    MobiusDslash4pre,
    /// Möbius Dslash4·M5inv·M5pre: the 4D hop, then M5⁻¹ and M_φ in shared memory.
    MobiusDslash4M5invM5pre,
    /// Möbius Dslash4·xpay·M5mob: the 4D hop with the M5 block as the xpay term.
    MobiusDslash4XpayM5mob,
    /// Möbius M5⁻¹ alone: the inverse of the s-direction operator (QUDA's M5inv).
    MobiusM5inv,
    /// Block inner products ⟨a_i, b_j⟩ of two sets of spinor fields on tensor cores
    /// (`mma_tile!`) in one mode; the case's `sources` is the number of vectors per set.
    BlockDot(BlockBlasMode),
    /// Block axpy y_j += Σ_i x_i A_ij of two sets of spinor fields on tensor cores
    /// (`mma_tile!` `complex_axpy`); the case's `sources` is the number of vectors per set.
    BlockAxpy(BlockBlasMode),
    /// A stage of the device coarse construction (multigrid set-up, N_v 24, 4⁴ blocks).
    Coarse(super::coarse::CoarseStage),
    /// The whole device Möbius M̂ (QUDA's MatPC): the three kernels above, one apply.
    MobiusEo,
    /// The whole device Möbius M̂ in two kernels (M_φ fused into the hop's source).
    MobiusEoTwoKernels,
    /// Möbius Dslash4·M5inv·M5pre with M5⁻¹ applied another way than the sweep (the
    /// dense rows, or the tensor cores: `mma_f16`, `mma_bf16`).
    MobiusDslash4M5invM5preWith(M5invMode),
    /// The whole device M̂ in QUDA's three kernels, M5⁻¹ applied as the mode says.
    MobiusEoWith(M5invMode),
}

impl BenchKernel {
    /// The name used in labels (the catalog name for hops).
    pub fn name(self) -> &'static str {
        match self {
            BenchKernel::WilsonHop => "wilson_hop",
            BenchKernel::WilsonHopWalk => "wilson_hop_walk",
            BenchKernel::NaiveStaggeredHop => "naive_staggered_hop",
            BenchKernel::ImprovedStaggeredHop => "improved_staggered_hop",
            BenchKernel::WilsonEo => "wilson_eo",
            BenchKernel::CloverEo => "clover_eo",
            BenchKernel::TwistedMassEo => "twisted_mass_eo",
            BenchKernel::AsqtadLinks => "asqtad_links",
            BenchKernel::Fat7Links => "fat7_links",
            BenchKernel::HisqLinks => "hisq_links",
            BenchKernel::AsqtadLinksStaged => "asqtad_links_staged",
            BenchKernel::Fat7LinksStaged => "fat7_links_staged",
            BenchKernel::HisqLinksStaged => "hisq_links_staged",
            BenchKernel::AsqtadPullback => "asqtad_pullback",
            BenchKernel::HisqPullback => "hisq_pullback",
            BenchKernel::SymanzikForce => "symanzik_force",
            BenchKernel::WilsonHeatbath => "wilson_heatbath",
            BenchKernel::WilsonHmc => "wilson_hmc",
            BenchKernel::MobiusDslash4 => "mobius_dslash4",
            BenchKernel::MobiusDslash4pre => "mobius_dslash4pre",
            BenchKernel::MobiusDslash4M5invM5pre => "mobius_dslash4_m5inv_m5pre",
            BenchKernel::MobiusDslash4XpayM5mob => "mobius_dslash4_xpay_m5mob",
            BenchKernel::MobiusM5inv => "mobius_m5inv",
            BenchKernel::BlockDot(mode) => mode.kernel_name(),
            BenchKernel::BlockAxpy(mode) => mode.axpy_kernel_name(),
            BenchKernel::Coarse(stage) => stage.name(),
            BenchKernel::MobiusEo => "mobius_eo",
            BenchKernel::MobiusEoTwoKernels => "mobius_eo_2k",
            BenchKernel::MobiusDslash4M5invM5preWith(m) => match m {
                M5invMode::Sweep => "mobius_dslash4_m5inv_m5pre",
                M5invMode::Dense => "mobius_dslash4_m5inv_m5pre_dense",
                M5invMode::MmaF16 => "mobius_dslash4_m5inv_m5pre_mma_f16",
                M5invMode::MmaBf16 => "mobius_dslash4_m5inv_m5pre_mma_bf16",
            },
            BenchKernel::MobiusEoWith(m) => match m {
                M5invMode::Sweep => "mobius_eo",
                M5invMode::Dense => "mobius_eo_dense",
                M5invMode::MmaF16 => "mobius_eo_mma_f16",
                M5invMode::MmaBf16 => "mobius_eo_mma_bf16",
            },
        }
    }

    /// A Möbius chain: its `sources` are the Ls slices of one 5D field.
    pub fn is_mobius(self) -> bool {
        matches!(
            self,
            BenchKernel::MobiusDslash4
                | BenchKernel::MobiusDslash4pre
                | BenchKernel::MobiusDslash4M5invM5pre
                | BenchKernel::MobiusDslash4XpayM5mob
                | BenchKernel::MobiusM5inv
                | BenchKernel::MobiusEo
                | BenchKernel::MobiusEoTwoKernels
                | BenchKernel::MobiusDslash4M5invM5preWith(_)
                | BenchKernel::MobiusEoWith(_)
        )
    }
}

/// One bench case: kernel, storage format (spinor and gauge) and gauge compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BenchCase {
    /// What runs.
    pub kernel: BenchKernel,
    /// Storage format of spinors and links (links in the compute type beside the
    /// spinor-only packed formats: [`StorageFormat::links_beside`]).
    pub format: StorageFormat,
    /// Gauge compression.
    pub recon: Recon,
    /// `Some(N)`: the hop on N right-hand sides in one kernel (the slices of a 5D field
    /// inside the block, [`qdsl_core::dsl::variant::Slices::InBlock`]), reported per
    /// source; `None`: the one-source kernel. For a Möbius chain
    /// ([`BenchKernel::is_mobius`]) its Ls, reported per 5D kernel call.
    pub sources: Option<usize>,
}

impl BenchCase {
    /// `<kernel> <format> recon<N>`, the key of the QUDA table; ` sources<N>` appended
    /// for the multi-right-hand-side rows.
    pub fn label(&self) -> String {
        if let BenchKernel::Coarse(stage) = self.kernel {
            return format!("{} nc24 block4", stage.name());
        }
        if let (BenchKernel::BlockDot(_) | BenchKernel::BlockAxpy(_), Some(n)) =
            (self.kernel, self.sources)
        {
            return format!("{} {} vectors{n}", self.kernel.name(), self.format.name());
        }
        let sources = match (self.sources, self.kernel.is_mobius()) {
            (Some(ls), true) => format!(" ls{ls}"),
            (Some(n), false) => format!(" sources{n}"),
            (None, _) => String::new(),
        };
        format!(
            "{} {} recon{}{sources}",
            self.kernel.name(),
            self.format.name(),
            self.recon.reals()
        )
    }
}

/// The numbers of right-hand sides of the multi-RHS rows.
pub const BENCH_SOURCES: [usize; 4] = [1, 4, 8, 12];

/// The default cases: Wilson hop f32 recon 12 and 18, f64 recon 18 and 12, 16-bit fixed
/// recon 12 and 18, packed20 spinors (f32 links) recon 12 and 18, packed30 (f64 links)
/// recon 18; naive staggered f32 and packed20; improved staggered f32, f64, 16-bit fixed,
/// packed20 and packed30; M̂ f32 recon 12 and 18, f64 recon 18, packed20 recon 12,
/// packed30 recon 18; the clover and twisted-mass M̂ f32 recon 12, f64 recon 18; asqtad, fat7 and HISQ link smearing and the Symanzik
/// gauge force f32 and f64, asqtad and fat7 also f32 from recon-12 thin links; asqtad,
/// fat7 and HISQ with the staged GPU plan f32 and f64 (asqtad also from recon 12); the
/// pullback through the asqtad links f32 and f64; the
/// Wilson hop f32 recon 12 and the improved staggered hop f32 on N = 1, 4, 8, 12
/// right-hand sides in one kernel ([`BENCH_SOURCES`], per source); QUDA's three fused
/// Möbius M̂ kernels at Ls 12 and 16, f32 and 16-bit fixed, recon 12, the middle one and
/// the whole M̂ also with the tensor-core M5⁻¹ (f16, bf16); the tensor-core block
/// inner products of 16, 32 and 64 f32 spinor fields in f64 DMMA, 3×TF32, bf16 and
/// 3×BF16, and of f64 fields in DMMA (`sources` = vectors per set). Cases
/// whose format the emitter lacks are reported as
/// skipped.
pub fn default_cases() -> Vec<BenchCase> {
    use BenchKernel::*;
    use StorageFormat::{Fixed16, Packed20, Packed30, F32, F64};
    let c = |kernel, format, recon| BenchCase {
        kernel,
        format,
        recon,
        sources: None,
    };
    let batched = |kernel, format, recon| {
        BENCH_SOURCES.map(|n| BenchCase {
            sources: Some(n),
            ..c(kernel, format, recon)
        })
    };
    let mut cases = vec![
        c(WilsonHop, F32, Recon::R12),
        c(WilsonHop, F32, Recon::R18),
        c(WilsonHop, F64, Recon::R18),
        c(WilsonHop, F64, Recon::R12),
        c(WilsonHop, Fixed16, Recon::R12),
        c(WilsonHop, Fixed16, Recon::R18),
        c(WilsonHop, Packed20, Recon::R12),
        c(WilsonHop, Packed20, Recon::R18),
        c(WilsonHop, Packed30, Recon::R18),
        c(NaiveStaggeredHop, F32, Recon::R18),
        c(ImprovedStaggeredHop, F32, Recon::R18),
        c(ImprovedStaggeredHop, F64, Recon::R18),
        c(ImprovedStaggeredHop, Fixed16, Recon::R18),
        c(NaiveStaggeredHop, Packed20, Recon::R18),
        c(ImprovedStaggeredHop, Packed20, Recon::R18),
        c(ImprovedStaggeredHop, Packed30, Recon::R18),
        c(WilsonEo, F32, Recon::R12),
        c(WilsonEo, F32, Recon::R18),
        c(WilsonEo, F64, Recon::R18),
        c(WilsonEo, Packed20, Recon::R12),
        c(WilsonEo, Packed30, Recon::R18),
        c(CloverEo, F32, Recon::R12),
        c(CloverEo, F64, Recon::R18),
        c(TwistedMassEo, F32, Recon::R12),
        c(TwistedMassEo, F64, Recon::R18),
        c(AsqtadLinks, F32, Recon::R18),
        c(AsqtadLinks, F64, Recon::R18),
        c(Fat7Links, F32, Recon::R18),
        c(Fat7Links, F64, Recon::R18),
        c(AsqtadLinks, F32, Recon::R12),
        c(Fat7Links, F32, Recon::R12),
        c(HisqLinks, F32, Recon::R18),
        c(HisqLinks, F64, Recon::R18),
        c(AsqtadLinksStaged, F32, Recon::R18),
        c(AsqtadLinksStaged, F64, Recon::R18),
        c(AsqtadLinksStaged, F32, Recon::R12),
        c(Fat7LinksStaged, F32, Recon::R18),
        c(Fat7LinksStaged, F64, Recon::R18),
        c(Fat7LinksStaged, F32, Recon::R12),
        c(HisqLinksStaged, F32, Recon::R18),
        c(HisqLinksStaged, F64, Recon::R18),
        c(HisqLinksStaged, F32, Recon::R12),
        c(AsqtadPullback, F32, Recon::R18),
        c(AsqtadPullback, F64, Recon::R18),
        c(HisqPullback, F32, Recon::R18),
        c(HisqPullback, F64, Recon::R18),
        c(SymanzikForce, F32, Recon::R18),
        c(SymanzikForce, F64, Recon::R18),
        c(WilsonHeatbath, F64, Recon::R18),
        c(WilsonHmc, F64, Recon::R18),
    ];
    cases.extend(batched(WilsonHop, F32, Recon::R12));
    // The walking hop on Ls = 4, 8, 12, 16 slices: at 12 and 16 the 5D hop of the
    // Möbius rows (N × the per-slice time), in the minimal byte model of issue 16.
    cases.extend([4, 8, 12, 16].map(|n| BenchCase {
        sources: Some(n),
        ..c(WilsonHopWalk, F32, Recon::R12)
    }));
    cases.extend(batched(ImprovedStaggeredHop, F32, Recon::R18));
    for ls in [12, 16] {
        for format in [F32, Fixed16] {
            for kernel in [
                MobiusDslash4,
                MobiusM5inv,
                MobiusDslash4pre,
                MobiusDslash4M5invM5pre,
                MobiusDslash4XpayM5mob,
                MobiusEo,
                MobiusEoTwoKernels,
                // The M5⁻¹ of the fused M̂ as dense Ls × Ls rows, SIMT and on the tensor
                // cores, against the sweep above.
                MobiusDslash4M5invM5preWith(M5invMode::Dense),
                MobiusEoWith(M5invMode::Dense),
                MobiusDslash4M5invM5preWith(M5invMode::MmaF16),
                MobiusDslash4M5invM5preWith(M5invMode::MmaBf16),
                MobiusEoWith(M5invMode::MmaF16),
                MobiusEoWith(M5invMode::MmaBf16),
            ] {
                cases.push(BenchCase {
                    sources: Some(ls),
                    ..c(kernel, format, Recon::R12)
                });
            }
        }
    }
    // Block inner products of 16, 32, 64 f32 spinor fields in each mode (and f64 fields
    // in f64 DMMA).
    for mode in BlockBlasMode::ALL {
        for n in [16, 32, 64] {
            cases.push(BenchCase {
                sources: Some(n),
                ..c(BlockDot(mode), F32, Recon::R18)
            });
        }
    }
    for n in [16, 32, 64] {
        cases.push(BenchCase {
            sources: Some(n),
            ..c(BlockDot(BlockBlasMode::F64), F64, Recon::R18)
        });
    }
    // Block axpy of 16, 32, 64 f32 spinor fields in each mode (and f64 in DMMA).
    for mode in BlockBlasMode::ALL {
        for n in [16, 32, 64] {
            cases.push(BenchCase {
                sources: Some(n),
                ..c(BlockAxpy(mode), F32, Recon::R18)
            });
        }
    }
    for n in [16, 32, 64] {
        cases.push(BenchCase {
            sources: Some(n),
            ..c(BlockAxpy(BlockBlasMode::F64), F64, Recon::R18)
        });
    }
    // The device coarse construction's stages.
    for stage in super::coarse::CoarseStage::ALL {
        cases.push(c(Coarse(stage), F64, Recon::R18));
    }
    cases
}

/// The copy roofline measurement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CopyBandwidth {
    /// Bytes copied per run.
    pub bytes: usize,
    /// cuMemcpyDtoD, read + write GB/s.
    pub memcpy_gbs: f64,
    /// A float4 grid-stride copy kernel, read + write GB/s.
    pub kernel_gbs: f64,
}

impl CopyBandwidth {
    /// The roofline: the better of the two.
    pub fn best_gbs(&self) -> f64 {
        self.memcpy_gbs.max(self.kernel_gbs)
    }
}

/// One measured case at one lattice size.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchResult {
    /// The case's label.
    pub label: String,
    /// L of the L⁴ lattice.
    pub extent: usize,
    /// Output sites (V/2).
    pub sites: usize,
    /// Median time per application in µs.
    pub time_us: f64,
    /// Flops per output site.
    pub flops_per_site: usize,
    /// Bytes per output site, both models.
    pub bytes: ByteModels,
    /// The rates.
    pub rates: Rates,
    /// The tuned compile knob (register cap: `none`, `maxnreg=R`; `-` where there is
    /// none to tune), as text.
    pub compile: String,
    /// The tuned launch(es), as text.
    pub launch: String,
    /// Wall time of the first compile-and-load (JIT, or the PTX cache) in ms.
    pub jit_ms: f64,
    /// Wall time of tuning (or the tune-cache lookup) in ms.
    pub tune_ms: f64,
}

/// A case not run, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Skipped {
    /// The case's label.
    pub label: String,
    /// L of the L⁴ lattice.
    pub extent: usize,
    /// Why.
    pub reason: String,
}

/// Everything one `qdsl bench` run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchReport {
    /// The device description.
    pub device: String,
    /// Seconds since the Unix epoch at the start.
    pub unix_time: u64,
    /// The copy roofline.
    pub copy: CopyBandwidth,
    /// The measured cases.
    pub results: Vec<BenchResult>,
    /// The skipped cases.
    pub skipped: Vec<Skipped>,
}

fn ratio(r: &BenchResult) -> Option<(f64, f64)> {
    quda_reference(&r.label, r.extent).map(|q| (q.time_us, speedup_over_quda(q.time_us, r.time_us)))
}

/// The stdout table; with `compare_quda`, QUDA's time and the ratio QUDA/qdsl (> 1:
/// qdsl faster) for the cases in the QUDA table.
pub fn render(report: &BenchReport, compare_quda: bool) -> String {
    let mut s = String::new();
    let c = &report.copy;
    let _ = writeln!(s, "device: {}", report.device);
    let _ = writeln!(
        s,
        "copy bandwidth (read + write, {} MiB): cuMemcpyDtoD {:.0} GB/s, float4 kernel {:.0} GB/s, roofline {:.0} GB/s",
        c.bytes >> 20,
        c.memcpy_gbs,
        c.kernel_gbs,
        c.best_gbs()
    );
    let w = report
        .results
        .iter()
        .map(|r| r.label.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let _ = write!(
        s,
        "{:w$}  {:>4}  {:>10}  {:>8}  {:>9}  {:>9}  {:>6}  {:>8}  {:>8}",
        "case", "L", "time µs", "GFLOP/s", "GB/s QUDA", "GB/s min", "%copy", "jit ms", "tune ms"
    );
    if compare_quda {
        let _ = write!(s, "  {:>8}  {:>9}", "QUDA µs", "QUDA/qdsl");
    }
    let _ = writeln!(s, "  {:>11}  launch", "compile");
    for r in &report.results {
        let _ = write!(
            s,
            "{:w$}  {:>4}  {:>10.2}  {:>8.0}  {:>9.0}  {:>9.0}  {:>6.1}  {:>8.1}  {:>8.1}",
            r.label,
            r.extent,
            r.time_us,
            r.rates.gflops,
            r.rates.gbs_quda,
            r.rates.gbs_minimal,
            100.0 * r.rates.fraction_of_copy.unwrap_or(f64::NAN),
            r.jit_ms,
            r.tune_ms
        );
        if compare_quda {
            match ratio(r) {
                Some((q, x)) => {
                    let _ = write!(s, "  {q:>8.1}  {x:>9.3}");
                }
                None => {
                    let _ = write!(s, "  {:>8}  {:>9}", "-", "-");
                }
            }
        }
        let _ = writeln!(s, "  {:>11}  {}", r.compile, r.launch);
    }
    let jit: f64 = report.results.iter().map(|r| r.jit_ms).sum();
    let tuning: f64 = report.results.iter().map(|r| r.tune_ms).sum();
    let _ = writeln!(
        s,
        "total: first-call JIT {jit:.0} ms, tuning {tuning:.0} ms"
    );
    for k in &report.skipped {
        let _ = writeln!(s, "skipped {} at {}⁴: {}", k.label, k.extent, k.reason);
    }
    s
}

/// The JSON document: device, time, copy bandwidth, one object per result (with the
/// QUDA comparison where there is one) and per skipped case.
pub fn to_json(report: &BenchReport) -> Value {
    let results: Vec<Value> = report
        .results
        .iter()
        .map(|r| {
            let q = ratio(r);
            json!({
                "case": r.label,
                "extent": r.extent,
                "sites": r.sites,
                "time_us": r.time_us,
                "flops_per_site": r.flops_per_site,
                "bytes_per_site": { "quda": r.bytes.quda, "minimal": r.bytes.minimal },
                "gflops": r.rates.gflops,
                "gbs_quda_model": r.rates.gbs_quda,
                "gbs_minimal_model": r.rates.gbs_minimal,
                "fraction_of_copy": r.rates.fraction_of_copy,
                "compile": r.compile,
                "launch": r.launch,
                "jit_ms": r.jit_ms,
                "tune_ms": r.tune_ms,
                "quda_time_us": q.map(|(t, _)| t),
                "quda_over_qdsl": q.map(|(_, x)| x),
            })
        })
        .collect();
    let skipped: Vec<Value> = report
        .skipped
        .iter()
        .map(|k| json!({ "case": k.label, "extent": k.extent, "reason": k.reason }))
        .collect();
    json!({
        "device": report.device,
        "unix_time": report.unix_time,
        "copy": {
            "bytes": report.copy.bytes,
            "memcpy_gbs": report.copy.memcpy_gbs,
            "kernel_gbs": report.copy.kernel_gbs,
            "roofline_gbs": report.copy.best_gbs(),
        },
        "results": results,
        "skipped": skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::super::metrics::rates;
    use super::*;

    fn report() -> BenchReport {
        let bytes = ByteModels {
            quda: 1440,
            minimal: 576,
        };
        let copy = CopyBandwidth {
            bytes: 1 << 29,
            memcpy_gbs: 3000.0,
            kernel_gbs: 2840.0,
        };
        let result = |label: &str, extent: usize, time_us: f64| BenchResult {
            label: label.into(),
            extent,
            sites: extent.pow(4) / 2,
            time_us,
            flops_per_site: 1320,
            bytes,
            rates: rates(
                extent.pow(4) / 2,
                1320,
                bytes,
                time_us,
                Some(copy.best_gbs()),
            ),
            compile: "maxnreg=64".into(),
            launch: "block=128 grid=4096 shared=0".into(),
            jit_ms: 250.0,
            tune_ms: 40.0,
        };
        BenchReport {
            device: "test GPU".into(),
            unix_time: 1,
            copy,
            results: vec![
                result("wilson_hop f32 recon12", 32, 109.0),
                result("wilson_hop f64 recon18", 32, 300.0),
            ],
            skipped: vec![Skipped {
                label: "wilson_hop fixed16 recon12".into(),
                extent: 32,
                reason: "not generated".into(),
            }],
        }
    }

    #[test]
    fn json_has_the_documented_shape() {
        let j = to_json(&report());
        assert_eq!(j["copy"]["roofline_gbs"], 3000.0);
        let r = &j["results"][0];
        for key in [
            "case",
            "extent",
            "sites",
            "time_us",
            "gflops",
            "gbs_quda_model",
            "gbs_minimal_model",
            "fraction_of_copy",
            "jit_ms",
            "tune_ms",
            "launch",
            "compile",
        ] {
            assert!(!r[key].is_null(), "{key} missing");
        }
        assert_eq!(r["sites"], 524288);
        assert_eq!(r["compile"], "maxnreg=64");
        assert!((r["quda_over_qdsl"].as_f64().unwrap() - 119.7 / 109.0).abs() < 1e-12);
        assert_eq!(r["quda_time_us"], 119.7);
        // No QUDA number for f64: null, not a made-up value.
        assert!(j["results"][1]["quda_time_us"].is_null());
        assert_eq!(j["skipped"][0]["reason"], "not generated");
        // The text parses back (floats to within their printed digits).
        let text = serde_json::to_string_pretty(&j).unwrap();
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["results"][0]["case"], "wilson_hop f32 recon12");
        let g = back["results"][0]["gflops"].as_f64().unwrap();
        assert!((g - 6349.175779816514).abs() < 1e-9, "{g}");
    }

    #[test]
    fn table_shows_ratios_only_when_asked() {
        let plain = render(&report(), false);
        assert!(!plain.contains("QUDA/qdsl"));
        let cmp = render(&report(), true);
        let line = cmp
            .lines()
            .find(|l| l.starts_with("wilson_hop f32 recon12"))
            .unwrap();
        assert!(line.contains("119.7") && line.contains("1.098"), "{line}");
        assert!(
            line.ends_with("   maxnreg=64  block=128 grid=4096 shared=0"),
            "{line}"
        );
        assert!(cmp.contains("    compile  launch\n"), "{cmp}");
        assert!(cmp.contains("roofline 3000 GB/s"), "{cmp}");
        assert!(
            cmp.contains("total: first-call JIT 500 ms, tuning 80 ms"),
            "{cmp}"
        );
        assert!(cmp.contains("skipped wilson_hop fixed16 recon12 at 32⁴: not generated"));
        assert_eq!(
            default_cases()[0].label(),
            "wilson_hop f32 recon12",
            "labels are the QUDA table's keys"
        );
    }
}
