//! The link-smearing rows of `qdsl check`: [`AsqtadFat`], [`AsqtadLong`] and [`Fat7`] run
//! on the GPU ([`GpuSmearer`]) and on the CPU (the plan's host runner) in f64 and f32, on
//! lat.sample.l8 with MILC's phases folded in and u0 = 0.502; the gauge forces of
//! [`WilsonGauge`] and [`SymanzikGauge`] ([`GpuGaugeForce`] against the CPU force) on the
//! thin links at β = [`FORCE_BETA`]; the relative error ‖F_gpu − F_cpu‖/‖F_cpu‖ over all
//! link components against the precision's bound. HISQ: [`qdsl_runtime::smear::hisq_links_gpu`] against
//! `qdsl_kernels::hisq_links` on the thin links at ε = [`HISQ_EPSILON_NAIK`], one row for
//! the fat links X (`hisq_links_fat`) and one for the long links L (`hisq_links_long`).
//! The three smearing specs again with the thin links in recon 12 + phase (variant
//! `input=recon12`): the GPU kernels rebuild the links inline, the CPU side smears the
//! links rebuilt the same way ([`LinkPaths::smear_cpu_with`]), so both sides see the same
//! rounded input. The rows without `plan=` run the one-kernel tree ([`PlanKind::Tree`], a
//! knob); the asqtad fat, fat7 and HISQ rows again with the staged GPU plan, the default
//! (variant `plan=staged`, [`PlanKind::Staged`]: the staple levels stored as fields, one
//! link direction at a time), in recon 18 and recon 12 + phase (HISQ: the thin links
//! encoded on the host, W on the device; the CPU side rounds the thin links as the
//! kernels do, not W, whose rebuilt row 2 differs by rounding of the precision).
//! The pullback through asqtad fat, fat7, HISQ's second level and the Naik term
//! (`asqtad_fat_pullback`, `fat7_pullback`, `hisq_fat_pullback`, `asqtad_long_pullback`:
//! [`GpuPullback`], the gather plan without atomics, against `fermion_force::pullback`,
//! the fermion force's smearing part)
//! for a random smeared-link gradient. The pullback through the whole HISQ construction
//! (`hisq_pullback`: [`GpuHisqForce`], the U(3) projection's derivative included, against
//! `rhmc::StaggeredSmearing::pullback` in f64 from the inputs rounded to the row's
//! precision) for random fat- and long-link gradients at ε = [`HISQ_EPSILON_NAIK`].

use super::report::{bound, relative_error, CheckRow, Outcome};
use qdsl_core::dsl::paths::knobs::emulate_input;
use qdsl_core::dsl::paths::{fermion_force, GaugeAction, LinkPaths, PathKnobs, PlanKind};
use qdsl_core::dsl::variant::{Recon, StorageFormat};
use qdsl_core::field::GaugeField;
use qdsl_core::io::{read_gauge, ReadOptions};
use qdsl_core::Complex;
use qdsl_kernels::{
    fold_staggered_phases, hisq_links, AsqtadFat, AsqtadLong, Fat7, HisqFat, SymanzikGauge,
    WilsonGauge,
};
use qdsl_runtime::device::Gpu;
use qdsl_runtime::rhmc::StaggeredSmearing;
use qdsl_runtime::smear::hisq::HisqGpu;
use qdsl_runtime::smear::{GpuGaugeForce, GpuHisqForce, GpuPullback, GpuReal, GpuSmearer};
use std::path::Path;

/// MILC's tadpole factor for lat.sample.l8 (the one fat.l8 and long.l8 were built with).
pub const SMEAR_U0: f64 = 0.502;

/// The coupling of the force rows (the force is linear in β).
pub const FORCE_BETA: f64 = 5.7;

/// The Naik-term correction ε of the HISQ rows (non-zero, so that the ε terms applied
/// inside the GPU kernels, as term coefficients, are compared too).
pub const HISQ_EPSILON_NAIK: f64 = -0.05;

/// The configuration the rows run on, relative to the data directory.
const CONFIG: &str = "milc/lat.sample.l8";

fn components<T: GpuReal>(f: &GaugeField<T>) -> Vec<Complex<f64>> {
    f.links()
        .iter()
        .flat_map(|m| m.0.iter().flatten().copied())
        .map(|z| Complex::new(z.re.to_f64(), z.im.to_f64()))
        .collect()
}

/// GPU versus CPU relative error of spec `S` in precision `T` on thin links `u`, the
/// input links stored as recon `input` on both sides.
fn compare<S: LinkPaths, T: GpuReal>(
    gpu: &Gpu,
    u: &GaugeField<f64>,
    input: Recon,
) -> Result<f64, String> {
    compare_knobs::<S, T>(
        gpu,
        u,
        PathKnobs::with_input(input).with_plan(PlanKind::Tree),
    )
}

/// [`compare`] with the staged GPU plan ([`PlanKind::Staged`]).
fn compare_staged<S: LinkPaths, T: GpuReal>(
    gpu: &Gpu,
    u: &GaugeField<f64>,
    input: Recon,
) -> Result<f64, String> {
    compare_knobs::<S, T>(
        gpu,
        u,
        PathKnobs::with_input(input).with_plan(PlanKind::Staged),
    )
}

/// GPU versus CPU relative error of spec `S` in precision `T` on thin links `u` with
/// `knobs` (the CPU side smears the input as the knobs store it).
fn compare_knobs<S: LinkPaths, T: GpuReal>(
    gpu: &Gpu,
    u: &GaugeField<f64>,
    knobs: PathKnobs,
) -> Result<f64, String> {
    let v = fold_staggered_phases(&u.cast::<T>());
    let g = GpuSmearer::<T>::with_knobs::<S>(gpu, knobs)
        .map_err(|e| e.to_string())?
        .smear(gpu, &v, SMEAR_U0)
        .map_err(|e| e.to_string())?;
    let c = S::smear_cpu_with(&v, SMEAR_U0, &knobs).map_err(|e| e.to_string())?;
    Ok(relative_error(&components(&g), &components(&c)))
}

/// GPU versus CPU relative error of the pullback through spec `S` (the thin-link
/// gradient of a smeared-link gradient: the fermion force's smearing part) in precision
/// `T` on thin links `u`, for the smeared-link gradient G = a random field of seed 41.
fn compare_pullback<S: LinkPaths, T: GpuReal>(
    gpu: &Gpu,
    u: &GaugeField<f64>,
) -> Result<f64, String> {
    let v = fold_staggered_phases(&u.cast::<T>());
    let g = GaugeField::<f64>::random(*u.lattice(), 41).cast::<T>();
    let got = GpuPullback::<T>::new::<S>(gpu)
        .map_err(|e| e.to_string())?
        .pullback(gpu, &v, SMEAR_U0, &g)
        .map_err(|e| e.to_string())?;
    let want = fermion_force::pullback(&S::plan().map_err(|e| e.to_string())?, &v, SMEAR_U0, &g)
        .map_err(|e| e.to_string())?;
    Ok(relative_error(&components(&got), &components(&want)))
}

/// GPU versus host relative error of the pullback through the HISQ construction in
/// precision `T` on thin links `u` at ε = [`HISQ_EPSILON_NAIK`], for fat- and long-link
/// gradients = random fields of seeds 41 and 42; the host computes in f64 from the same
/// inputs rounded to `T`, so only the arithmetic differs.
fn compare_hisq_pullback<T: GpuReal>(gpu: &Gpu, u: &GaugeField<f64>) -> Result<f64, String> {
    let u = u.cast::<T>();
    let g_fat = GaugeField::<f64>::random(*u.lattice(), 41).cast::<T>();
    let g_long = GaugeField::<f64>::random(*u.lattice(), 42).cast::<T>();
    let got = GpuHisqForce::<T>::new(gpu)
        .map_err(|e| e.to_string())?
        .pullback(gpu, &u, HISQ_EPSILON_NAIK, &g_fat, &g_long)
        .map_err(|e| e.to_string())?;
    let smearing = StaggeredSmearing::Hisq {
        epsilon_naik: HISQ_EPSILON_NAIK,
    };
    let links = smearing
        .links(&u.cast::<f64>())
        .map_err(|e| e.to_string())?;
    let want = smearing
        .pullback(&links, &g_fat.cast::<f64>(), &g_long.cast::<f64>())
        .map_err(|e| e.to_string())?;
    Ok(relative_error(&components(&got), &components(&want)))
}

/// GPU versus CPU relative error of the gauge force of action `A` in precision `T` on
/// links `u` at β = [`FORCE_BETA`].
fn compare_force<A: GaugeAction, T: GpuReal>(
    gpu: &Gpu,
    u: &GaugeField<f64>,
) -> Result<f64, String> {
    let v = u.cast::<T>();
    let g = GpuGaugeForce::<T>::new::<A>(gpu)
        .map_err(|e| e.to_string())?
        .force(gpu, &v, FORCE_BETA)
        .map_err(|e| e.to_string())?;
    let c = A::force_cpu(&v, FORCE_BETA).map_err(|e| e.to_string())?;
    Ok(relative_error(&components(&g), &components(&c)))
}

/// GPU versus CPU relative error of the HISQ fat links X (`long` false) or long links L
/// (`long` true) in precision `T` on thin links `u` at ε = [`HISQ_EPSILON_NAIK`].
fn compare_hisq<T: GpuReal>(gpu: &Gpu, u: &GaugeField<f64>, long: bool) -> Result<f64, String> {
    compare_hisq_knobs::<T>(gpu, u, long, PathKnobs::default().with_plan(PlanKind::Tree))
}

/// [`compare_hisq`] with the smearings' GPU plan `knobs.plan` and the thin links stored
/// as `knobs.input` (the CPU side builds HISQ from the thin links rebuilt the same way:
/// the phases folded in, the records rebuilt, the phases folded out again, ±1 being its
/// own inverse).
fn compare_hisq_knobs<T: GpuReal>(
    gpu: &Gpu,
    u: &GaugeField<f64>,
    long: bool,
    knobs: PathKnobs,
) -> Result<f64, String> {
    let v = u.cast::<T>();
    let hisq = HisqGpu::<T>::with_knobs(gpu, knobs).map_err(|e| e.to_string())?;
    let (gx, gl) = (|| {
        let mut bufs = hisq.buffers(gpu, v.lattice())?;
        hisq.upload(gpu, &mut bufs, &v)?;
        hisq.enqueue(gpu, &mut bufs, HISQ_EPSILON_NAIK)?;
        hisq.finish(gpu, &bufs)
    })()
    .map_err(|e| e.to_string())?;
    let rounded = emulate_input(&fold_staggered_phases(&v), &knobs, "hisq thin links")
        .map_err(|e| e.to_string())?;
    let (cx, cl) = hisq_links(&fold_staggered_phases(&rounded), HISQ_EPSILON_NAIK)
        .map_err(|e| e.to_string())?;
    let (g, c) = if long { (gl, cl) } else { (gx, cx) };
    Ok(relative_error(&components(&g), &components(&c)))
}

/// The rows of every smearing spec and gauge force whose name `wanted` accepts, in f64
/// and f32.
pub fn check_smearing(gpu: &Gpu, dir: &Path, wanted: &dyn Fn(&str) -> bool) -> Vec<CheckRow> {
    type Compare = fn(&Gpu, &GaugeField<f64>) -> Result<f64, String>;
    let smear = format!("u0={SMEAR_U0}");
    let force = format!("beta={FORCE_BETA}");
    let hisq = format!("eps={HISQ_EPSILON_NAIK}");
    let smear12 = format!("{smear} input=recon12");
    let staged = format!("{smear} plan=staged");
    let staged12 = format!("{smear} input=recon12 plan=staged");
    let hisq_staged = format!("{hisq} plan=staged");
    let hisq_staged12 = format!("{hisq} input=recon12 plan=staged");
    let specs: [(String, &str, Compare, Compare); 23] = [
        (
            AsqtadFat::spec().name,
            &smear,
            |g, u| compare::<AsqtadFat, f64>(g, u, Recon::R18),
            |g, u| compare::<AsqtadFat, f32>(g, u, Recon::R18),
        ),
        (
            AsqtadLong::spec().name,
            &smear,
            |g, u| compare::<AsqtadLong, f64>(g, u, Recon::R18),
            |g, u| compare::<AsqtadLong, f32>(g, u, Recon::R18),
        ),
        (
            Fat7::spec().name,
            &smear,
            |g, u| compare::<Fat7, f64>(g, u, Recon::R18),
            |g, u| compare::<Fat7, f32>(g, u, Recon::R18),
        ),
        (
            AsqtadFat::spec().name,
            &smear12,
            |g, u| compare::<AsqtadFat, f64>(g, u, Recon::R12),
            |g, u| compare::<AsqtadFat, f32>(g, u, Recon::R12),
        ),
        (
            AsqtadLong::spec().name,
            &smear12,
            |g, u| compare::<AsqtadLong, f64>(g, u, Recon::R12),
            |g, u| compare::<AsqtadLong, f32>(g, u, Recon::R12),
        ),
        (
            Fat7::spec().name,
            &smear12,
            |g, u| compare::<Fat7, f64>(g, u, Recon::R12),
            |g, u| compare::<Fat7, f32>(g, u, Recon::R12),
        ),
        (
            "hisq_links_fat".into(),
            &hisq,
            |g, u| compare_hisq::<f64>(g, u, false),
            |g, u| compare_hisq::<f32>(g, u, false),
        ),
        (
            "hisq_links_long".into(),
            &hisq,
            |g, u| compare_hisq::<f64>(g, u, true),
            |g, u| compare_hisq::<f32>(g, u, true),
        ),
        (
            AsqtadFat::spec().name,
            &staged,
            |g, u| compare_staged::<AsqtadFat, f64>(g, u, Recon::R18),
            |g, u| compare_staged::<AsqtadFat, f32>(g, u, Recon::R18),
        ),
        (
            Fat7::spec().name,
            &staged,
            |g, u| compare_staged::<Fat7, f64>(g, u, Recon::R18),
            |g, u| compare_staged::<Fat7, f32>(g, u, Recon::R18),
        ),
        (
            AsqtadFat::spec().name,
            &staged12,
            |g, u| compare_staged::<AsqtadFat, f64>(g, u, Recon::R12),
            |g, u| compare_staged::<AsqtadFat, f32>(g, u, Recon::R12),
        ),
        (
            Fat7::spec().name,
            &staged12,
            |g, u| compare_staged::<Fat7, f64>(g, u, Recon::R12),
            |g, u| compare_staged::<Fat7, f32>(g, u, Recon::R12),
        ),
        (
            "hisq_links_fat".into(),
            &hisq_staged,
            |g, u| compare_hisq_knobs::<f64>(g, u, false, PathKnobs::default()),
            |g, u| compare_hisq_knobs::<f32>(g, u, false, PathKnobs::default()),
        ),
        (
            "hisq_links_long".into(),
            &hisq_staged,
            |g, u| compare_hisq_knobs::<f64>(g, u, true, PathKnobs::default()),
            |g, u| compare_hisq_knobs::<f32>(g, u, true, PathKnobs::default()),
        ),
        (
            "hisq_links_fat".into(),
            &hisq_staged12,
            |g, u| compare_hisq_knobs::<f64>(g, u, false, PathKnobs::with_input(Recon::R12)),
            |g, u| compare_hisq_knobs::<f32>(g, u, false, PathKnobs::with_input(Recon::R12)),
        ),
        (
            "hisq_links_long".into(),
            &hisq_staged12,
            |g, u| compare_hisq_knobs::<f64>(g, u, true, PathKnobs::with_input(Recon::R12)),
            |g, u| compare_hisq_knobs::<f32>(g, u, true, PathKnobs::with_input(Recon::R12)),
        ),
        (
            format!("{}_pullback", AsqtadFat::spec().name),
            &smear,
            compare_pullback::<AsqtadFat, f64>,
            compare_pullback::<AsqtadFat, f32>,
        ),
        (
            format!("{}_pullback", Fat7::spec().name),
            &smear,
            compare_pullback::<Fat7, f64>,
            compare_pullback::<Fat7, f32>,
        ),
        (
            format!("{}_pullback", HisqFat::spec().name),
            &smear,
            compare_pullback::<HisqFat, f64>,
            compare_pullback::<HisqFat, f32>,
        ),
        (
            format!("{}_pullback", AsqtadLong::spec().name),
            &smear,
            compare_pullback::<AsqtadLong, f64>,
            compare_pullback::<AsqtadLong, f32>,
        ),
        (
            "hisq_pullback".into(),
            &hisq,
            compare_hisq_pullback::<f64>,
            compare_hisq_pullback::<f32>,
        ),
        (
            format!("{}_force", WilsonGauge::spec().name),
            &force,
            compare_force::<WilsonGauge, f64>,
            compare_force::<WilsonGauge, f32>,
        ),
        (
            format!("{}_force", SymanzikGauge::spec().name),
            &force,
            compare_force::<SymanzikGauge, f64>,
            compare_force::<SymanzikGauge, f32>,
        ),
    ];
    let specs: Vec<_> = specs.into_iter().filter(|s| wanted(&s.0)).collect();
    if specs.is_empty() {
        return Vec::new();
    }
    let thin = read_gauge(dir.join(CONFIG), &ReadOptions::default())
        .map(|g| g.field)
        .map_err(|e| format!("reading {CONFIG}: {e}"));
    let mut rows = Vec::new();
    for (name, knob, f64_run, f32_run) in specs {
        for (format, run) in [(StorageFormat::F64, f64_run), (StorageFormat::F32, f32_run)] {
            let outcome = match &thin {
                Ok(u) => match run(gpu, u) {
                    Ok(error) => Outcome::Compared {
                        error,
                        bound: bound(format),
                    },
                    Err(e) => Outcome::Failed(e),
                },
                Err(e) => Outcome::Failed(e.clone()),
            };
            rows.push(CheckRow {
                kernel: name.clone(),
                variant: format!("{} {knob}", format.name()),
                data: CONFIG.into(),
                outcome,
            });
        }
    }
    rows
}
