//! The link-path bench cases, rated with MILC's and QUDA's flop counts:
//!
//! * asqtad fat7 + Naik links (the [`AsqtadFat`] and [`AsqtadLong`] kernels, one after
//!   the other) on the whole lattice, [`MILC_ASQTAD_FLOPS_PER_SITE`] = 62,640 flops per
//!   site; bytes per site: the four thin links read once and the four fat and four long
//!   links written once, 12 · 18 reals (4 · 14 + 8 · 18 with the thin links in recon 12 +
//!   phase, the case's `recon12`, [`PathKnobs`]);
//! * fat7 links (the [`Fat7`] kernel) on the whole lattice, rated with qdsl's own count
//!   `Fat7::info().flops_per_site` ([`qdsl_core::dsl::paths::LinkPathsInfo`]: 198 flops
//!   per 3 × 3 complex product of the CPU plan with sub-path reuse, plus 36 per coefficient
//!   multiply-add into the sum; MILC and QUDA publish no separate fat7 count); bytes per
//!   site: four thin links read and four fat links written, 8 · 18 reals (4 · 14 + 4 · 18
//!   in recon 12);
//! * HISQ links (the [`Fat7`] kernel, the U(3) projection, then the [`HisqFat`] and
//!   [`AsqtadLong`] kernels with the ε terms, [`HisqGpu::enqueue_with`]: everything on the
//!   GPU, host transfers not timed), rated with qdsl's own count [`hisq_flops_per_site`]:
//!   the three plans' `flops_per_site` plus four links × [`PROJECT_FLOPS_PER_LINK`];
//!   bytes per site as asqtad: four thin links read, four fat and four long links
//!   written, 12 · 18 reals (the projected W is intermediate); every level's input in
//!   recon 18 or 12 + phase (`hisq_links_staged f32 recon12`: the thin links encoded on
//!   the host, W on the device);
//! * the tree-level Symanzik gauge force ([`SymanzikGauge`] through [`GpuGaugeForce`]:
//!   one kernel: the staple sum Σ in registers, then F = −(β/3) TA[U Σ†]),
//!   [`MILC_SYMANZIK_FORCE_FLOPS_PER_SITE`] = 153,004 flops per site; bytes per site: the
//!   four links read once and the four force matrices written once, 8 · 18 reals; recon
//!   18 only.
//!
//! * the pullback through the asqtad fat and long links (`asqtad_pullback`,
//!   [`GpuPullback`]: the fermion force's smearing part, the gather plan without atomics
//!   at its default launches), rated with the products the plan computes
//!   (`ReversePlan::products_per_site`); bytes per site: per kernel the thin links and
//!   the smeared-link gradient read and the thin-link gradient written, 24 · 18 reals
//!   (the chain's scratch fields, ~24 slot-sweeps of 18 reals per site, not counted).
//! * the pullback through the whole HISQ construction (`hisq_pullback`,
//!   [`GpuHisqForce`]: fat7 and the projection forward, then the `HisqFat` and
//!   `AsqtadLong` pullbacks with the ε terms, the U(3) projection's derivative and the
//!   fat7 pullback, all on the GPU at their default launches), rated with
//!   [`hisq_pullback_flops_per_site`]; bytes per site 80 · 18 reals
//!   ([`hisq_pullback_bytes_per_site`]).
//!
//! Each link case runs with the one-kernel tree (`asqtad_links`, `fat7_links`,
//! `hisq_links`: [`PlanKind::Tree`], a knob) and with the staged GPU plan, the default
//! (`asqtad_links_staged`, `fat7_links_staged`, `hisq_links_staged`: the inner staple
//! levels stored as fields, one link direction at a time, [`PlanKind::Staged`]), rated
//! with the same flop and byte counts so that the rows compare by time; the staged plan's
//! own traffic (its fields, ~3.5 kB per site in f32 for asqtad) is in
//! `qdsl_core::dsl::paths::staged`'s model, not in these byte counts.
//!
//! Both byte models alike. Sites are all V sites (both parities). The flop counts are
//! the established ones above, not the arithmetic the GPU trees execute (which recompute
//! sub-staples at the neighbours, [`qdsl_core::dsl::paths::tree`]). Every kernel runs at
//! its tuned launch (the bench's tuner; the tuning, on the first call, is reported as the
//! tune time, the compilation of the kernels as the JIT time). Time: the median of up to
//! [`MAX_REPS`] whole constructions after up to [`MAX_WARMUP`].

use super::metrics::rates;
use super::report::BenchKernel;
use super::report::{BenchCase, BenchResult, CopyBandwidth};
use qdsl_core::dsl::info::ByteModels;
use qdsl_core::dsl::paths::force::MILC_SYMANZIK_FORCE_FLOPS_PER_SITE;
use qdsl_core::dsl::paths::info::MILC_ASQTAD_FLOPS_PER_SITE;
use qdsl_core::dsl::paths::plan::MATMUL_FLOPS;
use qdsl_core::dsl::paths::reverse::ReversePlan;
use qdsl_core::dsl::paths::{LinkPaths, LinkPathsInfo, PathKnobs, PlanKind};
use qdsl_core::dsl::variant::{Recon, StorageFormat};
use qdsl_core::field::GaugeField;
use qdsl_kernels::{fold_staggered_phases, AsqtadFat, AsqtadLong, Fat7, HisqFat, SymanzikGauge};
use qdsl_runtime::device::{DeviceError, Gpu};
use qdsl_runtime::smear::hisq::HisqGpu;
use qdsl_runtime::smear::{GpuGaugeForce, GpuHisqForce, GpuPullback, GpuReal, GpuSmearer};
use qdsl_runtime::tune::Tuner;
use std::time::Instant;

/// Tadpole factor of the bench (MILC's value for lat.sample.l8; timing does not depend
/// on it).
const U0: f64 = 0.502;

/// At most this many untimed constructions before timing.
pub const MAX_WARMUP: usize = 3;

/// At most this many timed constructions (the median is reported).
pub const MAX_REPS: usize = 20;

/// The Naik correction ε of the HISQ case (a charm-like value; timing does not depend
/// on it).
const EPSILON_NAIK: f64 = -0.1;

/// Coupling of the force bench (timing does not depend on it).
const BETA: f64 = 5.7;

/// Bytes per site of 4 thin links of `input_reals` reals read and `out` links of 18
/// reals written, `bytes` per real, in both models.
fn link_bytes(input_reals: usize, out: usize, bytes: usize) -> ByteModels {
    let b = (4 * input_reals + out * 18) * bytes;
    ByteModels {
        quda: b,
        minimal: b,
    }
}

/// Reals per thin link read with input compression `recon`: 18, or 14 for recon 12 +
/// phase ([`qdsl_core::dsl::paths::knobs::RECON12_PHASE_REALS`]).
fn input_reals(recon: Recon) -> usize {
    PathKnobs::with_input(recon).input_reals()
}

/// Bytes per site of the asqtad case: 4 thin links of `input_reals` reals in, 8 links of
/// 18 reals out, `bytes` per real.
pub fn asqtad_bytes_per_site(bytes: usize, input_reals: usize) -> ByteModels {
    link_bytes(input_reals, 8, bytes)
}

/// Bytes per site of the fat7 case: 4 thin links of `input_reals` reals in, 4 fat links
/// of 18 reals out.
pub fn fat7_bytes_per_site(bytes: usize, input_reals: usize) -> ByteModels {
    link_bytes(input_reals, 4, bytes)
}

/// Bytes per site of the HISQ case: 4 thin links of `input_reals` reals in, 4 fat and 4
/// long out, 18 reals each, as asqtad.
pub fn hisq_bytes_per_site(bytes: usize, input_reals: usize) -> ByteModels {
    link_bytes(input_reals, 8, bytes)
}

/// Flops of one 3 × 3 complex product as the projection kernel writes it
/// (`mul`/`adjoint_mul`): 9 entries × 3 terms × (4 multiplies + 4 adds into the real and
/// imaginary sums, the first add into 0 included).
const PROJECT_MATMUL: usize = 9 * 3 * 8;

/// Flops of one cofactor C_ij (`cofactor`): two complex 2 × 2 cross terms, 4 multiplies
/// and 3 adds for the real part and the same for the imaginary part.
const PROJECT_COFACTOR: usize = 2 * (4 + 3);

/// Flops of one complex determinant det = Σ_j m_0j C_0j: 3 cofactors and 3 complex
/// multiply-adds (4 multiplies, 4 adds).
const PROJECT_DET: usize = 3 * (PROJECT_COFACTOR + 8);

/// Flops per link of the U(3) projection kernel `u3_project`
/// ([`qdsl_core::dsl::paths::project`]) on its regular path (p > 0, link accepted),
/// counted from the kernel's text: every real +, −, ×, ÷ as written (sums from 0
/// included, constants like `2 * third` included) is one flop, each sqrt, rsqrt, acos
/// and cos one flop; fabs, fmax, fmin, comparisons and index arithmetic none. As written,
/// so an upper bound on what the compiled kernel executes: the compiler may fold the
/// adds into 0 (18 per product), `2 * third` (1) and drop the unused imaginary parts of
/// det A's cofactors (3 × 7).
///
/// | step | flops |
/// |---|---|
/// | V /= max\|V\| (18 ÷), ‖V‖² (9 × (2 × + 2 +)) | 54 |
/// | rsqrt, V ×= 1/‖V‖ | 1 + 18 |
/// | Q = V†V | 216 |
/// | m = tr Q / 3, A = Q − m | 3 + 3 |
/// | p = ‖A‖² / 6 | 36 + 1 |
/// | det A (cofactor form: real part, 3 × (14 + 4)) | 54 |
/// | √p, r = det A / (2p√p), φ = acos r / 3 | 1 + 3 + 2 |
/// | g₀ = m + 2√p cos φ, g₁ = m + 2√p cos(φ + 2·(2π/3)) | 4 + 6 |
/// | det V | 66 |
/// | g₂ = \|det V\|² / (g₀g₁), threshold · g₀ | 5 + 1 |
/// | √g₀, √g₁, √g₂; u, v, w | 3 + 9 |
/// | d = w(uv − w); f₀, f₁, f₂ | 3 + 7 + 7 + 1 |
/// | Q² | 216 |
/// | H = f₀ + f₁Q + f₂Q² (9 × 2 × 3, + 3) | 57 |
/// | W₀ = V H | 216 |
/// | det W₀, \|det W₀\|² | 66 + 3 |
/// | W = (W₀ + W₀^(−†))/2: 9 × (cofactor 14 + C/det 8 + average 4) | 234 |
/// | total | 1296 |
pub const PROJECT_FLOPS_PER_LINK: usize = (18 + 9 * 4)
    + (1 + 18)
    + PROJECT_MATMUL
    + (3 + 3)
    + (9 * 4 + 1)
    + 3 * (PROJECT_COFACTOR + 4)
    + (1 + 3 + 2)
    + (4 + 6)
    + PROJECT_DET
    + (5 + 1)
    + (3 + 9)
    + (3 + 7 + 7 + 1)
    + PROJECT_MATMUL
    + (9 * 2 * 3 + 3)
    + PROJECT_MATMUL
    + (PROJECT_DET + 3)
    + 9 * (PROJECT_COFACTOR + 8 + 4);

/// Flops per site of the HISQ construction from the flop counts of its three plans:
/// fat7 + `HisqFat` + `AsqtadLong` + 4 · [`PROJECT_FLOPS_PER_LINK`].
pub fn hisq_flops_per_site(
    fat7: &LinkPathsInfo,
    fat: &LinkPathsInfo,
    long: &LinkPathsInfo,
) -> usize {
    fat7.flops_per_site + fat.flops_per_site + long.flops_per_site + 4 * PROJECT_FLOPS_PER_LINK
}

/// Bytes per site of the gauge-force case: 8 matrices (4 links in, 4 forces out).
pub fn force_bytes_per_site(bytes: usize) -> ByteModels {
    link_bytes(18, 4, bytes)
}

/// The compile, tune and run times of a case.
struct Timings {
    /// Median time of one construction.
    time_us: f64,
    /// Compiling (or loading from the cache) its kernels.
    jit_ms: f64,
    /// The first call, which tunes the launches.
    tune_ms: f64,
}

/// The result of a case timed as `t` on the lattice of `u`.
fn result(
    case: &BenchCase,
    u: &GaugeField<f64>,
    t: Timings,
    flops_per_site: usize,
    bytes: ByteModels,
    copy: &CopyBandwidth,
) -> BenchResult {
    let sites = u.lattice().volume();
    BenchResult {
        label: case.label(),
        extent: u.lattice().dims()[0],
        sites,
        time_us: t.time_us,
        flops_per_site,
        bytes,
        rates: rates(
            sites,
            flops_per_site,
            bytes,
            t.time_us,
            Some(copy.kernel_gbs),
        ),
        compile: "-".into(),
        launch: match plan_of(case.kernel) {
            PlanKind::Tree => "one thread per link, tuned",
            PlanKind::Staged => "staged: a pass per stored staple level, then per link; tuned",
        }
        .into(),
        jit_ms: t.jit_ms,
        tune_ms: t.tune_ms,
    }
}

/// The smearers of a link case in `T` (compiled), its flops per site and bytes per site.
type LinkCase<T> = (Vec<GpuSmearer<T>>, usize, ByteModels);

/// The GPU plan a link case runs: staged for the `…Staged` cases, else the tree.
fn plan_of(kernel: BenchKernel) -> PlanKind {
    match kernel {
        BenchKernel::AsqtadLinksStaged
        | BenchKernel::Fat7LinksStaged
        | BenchKernel::HisqLinksStaged => PlanKind::Staged,
        _ => PlanKind::Tree,
    }
}

/// The kernels, flop count and byte model of the link case `kernel` with the thin
/// links read as `recon` (18, or 12 + phase).
fn link_case<T: GpuReal>(
    gpu: &Gpu,
    kernel: BenchKernel,
    recon: Recon,
) -> Result<LinkCase<T>, DeviceError> {
    let knobs = PathKnobs::with_input(recon).with_plan(plan_of(kernel));
    let new =
        |smearer: Result<GpuSmearer<T>, qdsl_runtime::smear::SmearGpuError>| smearer.map_err(shape);
    match kernel {
        BenchKernel::AsqtadLinks | BenchKernel::AsqtadLinksStaged => Ok((
            {
                // The two smearings' kernels compiled in one parallel batch first.
                gpu.preload_programs(&[
                    GpuSmearer::<T>::program::<AsqtadFat>(knobs).map_err(shape)?,
                    GpuSmearer::<T>::program::<AsqtadLong>(knobs).map_err(shape)?,
                ])?;
                vec![
                    new(GpuSmearer::with_knobs::<AsqtadFat>(gpu, knobs))?,
                    new(GpuSmearer::with_knobs::<AsqtadLong>(gpu, knobs))?,
                ]
            },
            MILC_ASQTAD_FLOPS_PER_SITE,
            asqtad_bytes_per_site(T::BYTES, input_reals(recon)),
        )),
        BenchKernel::Fat7Links | BenchKernel::Fat7LinksStaged => Ok((
            vec![new(GpuSmearer::with_knobs::<Fat7>(gpu, knobs))?],
            Fat7::info()
                .map_err(|e| DeviceError::Shape(e.to_string()))?
                .flops_per_site,
            fat7_bytes_per_site(T::BYTES, input_reals(recon)),
        )),
        other => Err(DeviceError::Shape(format!(
            "{} is not a link-construction case",
            other.name()
        ))),
    }
}

fn run<T: GpuReal>(
    gpu: &Gpu,
    tuner: &Tuner,
    u: &GaugeField<f64>,
    case: &BenchCase,
    copy: &CopyBandwidth,
    warmup: usize,
    reps: usize,
) -> Result<BenchResult, DeviceError> {
    let v = fold_staggered_phases(&u.cast::<T>());
    let t0 = Instant::now();
    let (smearers, flops_per_site, bytes) = link_case::<T>(gpu, case.kernel, case.recon)?;
    let jit_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut bufs = Vec::with_capacity(smearers.len());
    for s in &smearers {
        let mut b = s.buffers(gpu, u.lattice())?;
        s.upload(gpu, &mut b, &v)?;
        bufs.push(b);
    }
    let mut construct = || {
        for (s, b) in smearers.iter().zip(bufs.iter_mut()) {
            s.enqueue_with(gpu, Some(tuner), b, U0)?;
        }
        Ok(())
    };
    let t1 = Instant::now();
    construct()?;
    synchronize(gpu)?;
    let tune_ms = t1.elapsed().as_secs_f64() * 1e3;
    // One construction per sample (one launch per kernel, milliseconds long); the sample
    // counts are capped.
    let time_us = gpu.time_us(warmup.min(MAX_WARMUP), reps.min(MAX_REPS), construct)?;
    let t = Timings {
        time_us,
        jit_ms,
        tune_ms,
    };
    Ok(result(case, u, t, flops_per_site, bytes, copy))
}

/// The qdsl flop count of the HISQ case: [`hisq_flops_per_site`] of the three plans.
fn hisq_case_flops() -> Result<usize, DeviceError> {
    let info = |i: Result<LinkPathsInfo, qdsl_core::dsl::DslError>| {
        i.map_err(|e| DeviceError::Shape(e.to_string()))
    };
    Ok(hisq_flops_per_site(
        &info(Fat7::info())?,
        &info(HisqFat::info())?,
        &info(AsqtadLong::info())?,
    ))
}

fn run_hisq<T: GpuReal>(
    gpu: &Gpu,
    tuner: &Tuner,
    u: &GaugeField<f64>,
    case: &BenchCase,
    copy: &CopyBandwidth,
    warmup: usize,
    reps: usize,
) -> Result<BenchResult, DeviceError> {
    let flops_per_site = hisq_case_flops()?;
    let t0 = Instant::now();
    let knobs = PathKnobs::with_input(case.recon).with_plan(plan_of(case.kernel));
    let hisq = HisqGpu::<T>::with_knobs(gpu, knobs).map_err(shape)?;
    let jit_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut bufs = hisq.buffers(gpu, u.lattice()).map_err(shape)?;
    hisq.upload(gpu, &mut bufs, &u.cast::<T>()).map_err(shape)?;
    let mut construct = || {
        hisq.enqueue_with(gpu, Some(tuner), &mut bufs, EPSILON_NAIK)
            .map_err(shape)
    };
    let t1 = Instant::now();
    construct()?;
    synchronize(gpu)?;
    let tune_ms = t1.elapsed().as_secs_f64() * 1e3;
    let time_us = gpu.time_us(warmup.min(MAX_WARMUP), reps.min(MAX_REPS), construct)?;
    let t = Timings {
        time_us,
        jit_ms,
        tune_ms,
    };
    Ok(result(
        case,
        u,
        t,
        flops_per_site,
        hisq_bytes_per_site(T::BYTES, input_reals(case.recon)),
        copy,
    ))
}

/// Flops per site of the asqtad pullback: 198 per matrix product the two gather plans
/// compute ([`gather_products_per_link`], four links per site), additions not counted.
fn pullback_flops_per_site() -> Result<usize, DeviceError> {
    let products =
        gather_products_per_link::<AsqtadFat>()? + gather_products_per_link::<AsqtadLong>()?;
    Ok(4 * MATMUL_FLOPS * products)
}

/// Matrix products per link of spec `S`'s pull-back, the gather plan that [`GpuPullback`]
/// runs (`ReversePlan::products_per_site` / 4: the chain's levels, adjoints and gather,
/// the loose terms' loops).
fn gather_products_per_link<S: LinkPaths>() -> Result<usize, DeviceError> {
    let plan = ReversePlan::new(&S::spec()).map_err(|e| DeviceError::Shape(e.to_string()))?;
    Ok(plan.products_per_site() / 4)
}

/// Times the pullback through the asqtad fat and long links (default launches: the
/// kernels accumulate, so they are not tuned), a random smeared-link gradient for both.
fn run_pullback<T: GpuReal>(
    gpu: &Gpu,
    u: &GaugeField<f64>,
    case: &BenchCase,
    copy: &CopyBandwidth,
    warmup: usize,
    reps: usize,
) -> Result<BenchResult, DeviceError> {
    let v = fold_staggered_phases(&u.cast::<T>());
    let g = GaugeField::<f64>::random(*u.lattice(), 41).cast::<T>();
    let t0 = Instant::now();
    let kernels = [
        GpuPullback::<T>::new::<AsqtadFat>(gpu).map_err(shape)?,
        GpuPullback::<T>::new::<AsqtadLong>(gpu).map_err(shape)?,
    ];
    let jit_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut bufs = Vec::with_capacity(2);
    for k in &kernels {
        let mut b = k.buffers(gpu, u.lattice())?;
        k.upload(gpu, &mut b, &v, &g)?;
        bufs.push(b);
    }
    let mut construct = || {
        for (k, b) in kernels.iter().zip(bufs.iter_mut()) {
            k.enqueue(gpu, b, U0)?;
        }
        Ok(())
    };
    let t1 = Instant::now();
    construct()?;
    synchronize(gpu)?;
    let tune_ms = t1.elapsed().as_secs_f64() * 1e3;
    let time_us = gpu.time_us(warmup.min(MAX_WARMUP), reps.min(MAX_REPS), construct)?;
    let t = Timings {
        time_us,
        jit_ms,
        tune_ms,
    };
    // Bytes: per kernel the thin links and the smeared-link gradient read, the thin-link
    // gradient written: 2 · (4 + 8) · 18 reals; as `link_bytes(18, 20)`.
    Ok(result(
        case,
        u,
        t,
        pullback_flops_per_site()?,
        link_bytes(18, 20, T::BYTES),
        copy,
    ))
}

/// Matrix products of the U(3) projection's derivative per link (`u3_project_pullback`):
/// Q², B = G_W†V̂, G_W R, QB, BQ and V̂(M + M†); its eigenvalue part is the projection's.
pub const PROJECT_PULLBACK_PRODUCTS_PER_LINK: usize = 6;

/// Flops per site of the HISQ pullback: 198 per matrix product of the three pullbacks'
/// gather plans ([`gather_products_per_link`] of `Fat7`, `HisqFat`, `AsqtadLong`) and of
/// the projection's derivative ([`PROJECT_PULLBACK_PRODUCTS_PER_LINK`]), four links per
/// site, plus the forward levels it recomputes: fat7's `flops_per_site` and two
/// projections' worth of [`PROJECT_FLOPS_PER_LINK`] (the forward one, and the
/// derivative's shared eigenvalue part, over-counted by its Newton step), additions of
/// the pullbacks not counted.
pub fn hisq_pullback_flops_per_site(products_per_link: usize, fat7: &LinkPathsInfo) -> usize {
    4 * MATMUL_FLOPS * (products_per_link + PROJECT_PULLBACK_PRODUCTS_PER_LINK)
        + fat7.flops_per_site
        + 2 * 4 * PROJECT_FLOPS_PER_LINK
}

/// Bytes per site of the HISQ pullback, in link fields of 18 reals: the forward levels
/// (fat7: 4 read, 4 written; the copy of V, the in-place projection and W's layout
/// rewrite: 8 each), the three pullbacks (each the links, the smeared-link gradient and
/// the thin-link gradient: 12) and the projection's derivative (V and G_W read, G_V
/// written: 12) — 80 links per site, `link_bytes(18, 76)`.
pub fn hisq_pullback_bytes_per_site(bytes: usize) -> ByteModels {
    link_bytes(18, 76, bytes)
}

/// The spread of the thin links the HISQ pull-back row differentiates at (near-unit
/// links, U = exp(iεH)): the U(3) projection's derivative needs every fat7 link well
/// away from singular, which the bench's random links are not (their fat7 sums are far
/// from unitary and some nearly singular). The time does not depend on the values.
const HISQ_PULLBACK_EPSILON: f64 = 0.3;

/// Times the pullback through the HISQ construction (default launches: the pullbacks
/// accumulate) at near-unit thin links on `u`'s lattice ([`HISQ_PULLBACK_EPSILON`]),
/// random fat- and long-link gradients.
fn run_hisq_pullback<T: GpuReal>(
    gpu: &Gpu,
    u: &GaugeField<f64>,
    case: &BenchCase,
    copy: &CopyBandwidth,
    warmup: usize,
    reps: usize,
) -> Result<BenchResult, DeviceError> {
    let products = gather_products_per_link::<Fat7>()?
        + gather_products_per_link::<HisqFat>()?
        + gather_products_per_link::<AsqtadLong>()?;
    let flops = hisq_pullback_flops_per_site(
        products,
        &Fat7::info().map_err(|e| DeviceError::Shape(e.to_string()))?,
    );
    let (g_fat, g_long) = (
        GaugeField::<f64>::random(*u.lattice(), 41).cast::<T>(),
        GaugeField::<f64>::random(*u.lattice(), 42).cast::<T>(),
    );
    let thin = GaugeField::<f64>::weak(*u.lattice(), 43, HISQ_PULLBACK_EPSILON).cast::<T>();
    let t0 = Instant::now();
    let force = GpuHisqForce::<T>::new(gpu).map_err(shape)?;
    let jit_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut bufs = force.buffers(gpu, u.lattice()).map_err(shape)?;
    force
        .upload(gpu, &mut bufs, &thin, &g_fat, &g_long)
        .map_err(shape)?;
    let mut construct = || force.enqueue(gpu, &mut bufs, EPSILON_NAIK).map_err(shape);
    let t1 = Instant::now();
    construct()?;
    synchronize(gpu)?;
    let tune_ms = t1.elapsed().as_secs_f64() * 1e3;
    let time_us = gpu.time_us(warmup.min(MAX_WARMUP), reps.min(MAX_REPS), construct)?;
    force.finish(gpu, &bufs).map_err(shape)?;
    let t = Timings {
        time_us,
        jit_ms,
        tune_ms,
    };
    Ok(result(
        case,
        u,
        t,
        flops,
        hisq_pullback_bytes_per_site(T::BYTES),
        copy,
    ))
}

fn run_force<T: GpuReal>(
    gpu: &Gpu,
    tuner: &Tuner,
    u: &GaugeField<f64>,
    case: &BenchCase,
    copy: &CopyBandwidth,
    warmup: usize,
    reps: usize,
) -> Result<BenchResult, DeviceError> {
    let v = u.cast::<T>();
    let t0 = Instant::now();
    let force = GpuGaugeForce::<T>::new::<SymanzikGauge>(gpu).map_err(shape)?;
    let jit_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut bufs = force.buffers(gpu, u.lattice())?;
    force.upload(gpu, &mut bufs, &v)?;
    let mut construct = || force.enqueue_with(gpu, Some(tuner), &mut bufs, BETA);
    let t1 = Instant::now();
    construct()?;
    synchronize(gpu)?;
    let tune_ms = t1.elapsed().as_secs_f64() * 1e3;
    let time_us = gpu.time_us(warmup.min(MAX_WARMUP), reps.min(MAX_REPS), construct)?;
    let t = Timings {
        time_us,
        jit_ms,
        tune_ms,
    };
    Ok(result(
        case,
        u,
        t,
        MILC_SYMANZIK_FORCE_FLOPS_PER_SITE,
        force_bytes_per_site(T::BYTES),
        copy,
    ))
}

/// Waits for the GPU's stream.
fn synchronize(gpu: &Gpu) -> Result<(), DeviceError> {
    use qdsl_runtime::backend::Backend;
    gpu.backend()
        .synchronize()
        .map_err(|e| DeviceError::Driver {
            what: "waiting for the link-path kernels".into(),
            message: e.to_string(),
        })
}

fn shape(e: qdsl_runtime::smear::SmearGpuError) -> DeviceError {
    match e {
        qdsl_runtime::smear::SmearGpuError::Device(d) => d,
        other => DeviceError::Shape(other.to_string()),
    }
}

/// Times the link construction of the case (asqtad fat + long, fat7, or HISQ fat + long)
/// of `u` in the case's precision (f32 or f64; other formats are refused with the
/// reason) with the thin links in the case's recon (18 or 12 + phase; recon 8 is
/// refused).
pub fn bench_links(
    gpu: &Gpu,
    tuner: &Tuner,
    u: &GaugeField<f64>,
    case: &BenchCase,
    copy: &CopyBandwidth,
    warmup: usize,
    reps: usize,
) -> Result<BenchResult, String> {
    let hisq = matches!(
        case.kernel,
        BenchKernel::HisqLinks | BenchKernel::HisqLinksStaged
    );
    if case.recon == Recon::R8 {
        return Err(format!(
            "{} reads its thin links in recon18 or recon12, not recon{}",
            case.kernel.name(),
            case.recon.reals()
        ));
    }
    let pullback = case.kernel == BenchKernel::AsqtadPullback;
    let hisq_pullback = case.kernel == BenchKernel::HisqPullback;
    if (pullback || hisq_pullback) && case.recon != Recon::R18 {
        return Err(format!(
            "{} reads its thin links in recon18, not recon{}",
            case.kernel.name(),
            case.recon.reals()
        ));
    }
    match case.format {
        StorageFormat::F64 if hisq_pullback => {
            run_hisq_pullback::<f64>(gpu, u, case, copy, warmup, reps)
        }
        StorageFormat::F32 if hisq_pullback => {
            run_hisq_pullback::<f32>(gpu, u, case, copy, warmup, reps)
        }
        StorageFormat::F64 if pullback => run_pullback::<f64>(gpu, u, case, copy, warmup, reps),
        StorageFormat::F32 if pullback => run_pullback::<f32>(gpu, u, case, copy, warmup, reps),
        StorageFormat::F64 if hisq => run_hisq::<f64>(gpu, tuner, u, case, copy, warmup, reps),
        StorageFormat::F32 if hisq => run_hisq::<f32>(gpu, tuner, u, case, copy, warmup, reps),
        StorageFormat::F64 => run::<f64>(gpu, tuner, u, case, copy, warmup, reps),
        StorageFormat::F32 => run::<f32>(gpu, tuner, u, case, copy, warmup, reps),
        other => return Err(refused(case.kernel.name(), other)),
    }
    .map_err(|e| e.to_string())
}

/// Times the tree-level Symanzik gauge force of `u` in the case's precision (f32 or f64;
/// other formats are refused with the reason).
pub fn bench_symanzik_force(
    gpu: &Gpu,
    tuner: &Tuner,
    u: &GaugeField<f64>,
    case: &BenchCase,
    copy: &CopyBandwidth,
    warmup: usize,
    reps: usize,
) -> Result<BenchResult, String> {
    if case.recon != Recon::R18 {
        return Err(format!(
            "the Symanzik gauge force reads its links in recon18, not recon{}",
            case.recon.reals()
        ));
    }
    match case.format {
        StorageFormat::F64 => run_force::<f64>(gpu, tuner, u, case, copy, warmup, reps),
        StorageFormat::F32 => run_force::<f32>(gpu, tuner, u, case, copy, warmup, reps),
        other => return Err(refused("the Symanzik gauge force", other)),
    }
    .map_err(|e| e.to_string())
}

/// Why a format is refused.
fn refused(what: &str, format: StorageFormat) -> String {
    format!("{what} runs in f64/f32, not {}", format.name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use qdsl_core::dsl::paths::knobs::RECON12_PHASE_REALS;

    /// 12 links × 18 reals: 864 bytes in f32, 1728 in f64 (800 in f32 with the thin links
    /// in recon 12 + phase); 24⁴ sites in 1 ms at 62,640
    /// flops per site: 331,776 · 62,640 / (10⁻³ s · 10⁹) = 20,782.44864 GFLOP/s.
    #[test]
    fn bytes_and_rate_of_the_asqtad_case() {
        assert_eq!(asqtad_bytes_per_site(4, 18).minimal, 864);
        assert_eq!(asqtad_bytes_per_site(8, 18).quda, 1728);
        // Recon 12 + phase: (4 · 14 + 8 · 18) · 4 = 800 bytes in f32.
        assert_eq!(asqtad_bytes_per_site(4, RECON12_PHASE_REALS).minimal, 800);
        assert_eq!(input_reals(Recon::R12), 14);
        let r = rates(
            24usize.pow(4),
            MILC_ASQTAD_FLOPS_PER_SITE,
            asqtad_bytes_per_site(4, 18),
            1000.0,
            None,
        );
        assert!((r.gflops - 20_782.448_64).abs() < 1e-6, "{}", r.gflops);
    }

    /// Fat7: 8 links × 18 reals, 576 bytes in f32, 1152 in f64 (512 in f32 from recon 12 +
    /// phase); its flop count is at
    /// least 198 per 3 × 3 complex product of the plan and below MILC's asqtad count,
    /// whose paths are fat7's plus the Lepage and Naik terms.
    #[test]
    fn bytes_and_flops_of_the_fat7_case() {
        assert_eq!(fat7_bytes_per_site(4, 18).minimal, 576);
        assert_eq!(fat7_bytes_per_site(8, 18).quda, 1152);
        // Recon 12 + phase: (4 · 14 + 4 · 18) · 4 = 512 bytes in f32.
        assert_eq!(fat7_bytes_per_site(4, 14).minimal, 512);
        let info = Fat7::info().unwrap();
        assert_eq!(info.flops_per_site % 2, 0);
        assert!(info.flops_per_site >= 198 * info.products_with_reuse);
        assert!(info.flops_per_site < MILC_ASQTAD_FLOPS_PER_SITE);
    }

    /// The projection's count adds up to the table's 1296 flops per link (the matrix
    /// products 3 × 216, the determinants 66 each, the Newton step's 234), and the HISQ
    /// total is the three schedules plus 4 × 1296 = 5184: with made-up schedule counts
    /// 1000 + 2000 + 3000, 11,184. HISQ's byte model is asqtad's: 864 bytes in f32, 1728
    /// in f64.
    #[test]
    fn flops_and_bytes_of_the_hisq_case() {
        assert_eq!(PROJECT_MATMUL, 216);
        assert_eq!(PROJECT_DET, 66);
        assert_eq!(PROJECT_FLOPS_PER_LINK, 1296);
        let info = |flops_per_site| LinkPathsInfo {
            name: "test".into(),
            paths_per_site: 0,
            products_with_reuse: 0,
            products_without_reuse: 0,
            flops_per_site,
            gpu_products: 0,
        };
        assert_eq!(
            hisq_flops_per_site(&info(1000), &info(2000), &info(3000)),
            11_184
        );
        let total = hisq_case_flops().unwrap();
        let fat7 = Fat7::info().unwrap().flops_per_site;
        assert_eq!(
            total,
            fat7 + HisqFat::info().unwrap().flops_per_site
                + AsqtadLong::info().unwrap().flops_per_site
                + 5184
        );
        // The second level alone (HisqFat has fat7's paths plus Lepage, AsqtadLong the
        // Naik term) costs more than fat7.
        assert!(total > 2 * fat7 + 5184, "{total} vs fat7 {fat7}");
        assert_eq!(hisq_bytes_per_site(4, 18).minimal, 864);
        assert_eq!(hisq_bytes_per_site(8, 18).quda, 1728);
        // Recon 12 + phase thin links: (4 · 14 + 8 · 18) · 4 = 800 bytes in f32.
        assert_eq!(hisq_bytes_per_site(4, 14).minimal, 800);
    }

    /// The HISQ pullback's count: with 100 products per link and a made-up fat7 count of
    /// 1000, 4 · 198 · (100 + 6) + 1000 + 8 · 1296 = 95,320; its bytes 80 links × 18
    /// reals: 5760 in f32, 11,520 in f64.
    #[test]
    fn flops_and_bytes_of_the_hisq_pullback_case() {
        let fat7 = LinkPathsInfo {
            name: "test".into(),
            paths_per_site: 0,
            products_with_reuse: 0,
            products_without_reuse: 0,
            flops_per_site: 1000,
            gpu_products: 0,
        };
        assert_eq!(hisq_pullback_flops_per_site(100, &fat7), 95_320);
        assert_eq!(hisq_pullback_bytes_per_site(4).minimal, 5760);
        assert_eq!(hisq_pullback_bytes_per_site(8).quda, 11_520);
    }

    /// 8 matrices × 18 reals: 576 bytes in f32, 1152 in f64; 32⁴ sites in 2 ms at 153,004
    /// flops per site: 1,048,576 · 153,004 / (2·10⁻³ s · 10⁹) = 80,218.161152 GFLOP/s.
    #[test]
    fn bytes_and_rate_of_the_force_case() {
        assert_eq!(force_bytes_per_site(4).minimal, 576);
        assert_eq!(force_bytes_per_site(8).quda, 1152);
        let r = rates(
            32usize.pow(4),
            MILC_SYMANZIK_FORCE_FLOPS_PER_SITE,
            force_bytes_per_site(8),
            2000.0,
            None,
        );
        assert!((r.gflops - 80_218.161_152).abs() < 1e-6, "{}", r.gflops);
    }
}
