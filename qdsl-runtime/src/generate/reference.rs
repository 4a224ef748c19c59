//! The physics reference of generation on the GPU: quenched Wilson ensembles at the
//! β of [`WILSON_PLAQUETTES`] (heatbath + over-relaxation, [`GpuHeatbath`], from a cold
//! start) and each run's average plaquette against the published value
//! ([`PlaquetteVerdict`]: autocorrelation-aware error, pass/fail). On 16⁴ one update
//! (1 HB + 4 OR sweeps and a plaquette) takes a few ms on an H100, so the default
//! 200 + 1000 updates per β take seconds (`qdsl generate-reference`).

use super::{DeviceGauge, DevicePlaquette, GpuHeatbath};
use crate::device::Gpu;
use qdsl_core::dsl::paths::GaugeAction;
use qdsl_core::field::GaugeField;
use qdsl_core::gauge::generate::reference::{
    measure_chain, PlaquetteVerdict, PublishedPlaquette, WILSON_PLAQUETTES,
};
use qdsl_core::gauge::generate::{GenerateError, Heatbath};
use qdsl_core::gauge::plaquette;
use qdsl_core::lattice::Lattice;
use qdsl_kernels::WilsonGauge;

/// The run of one reference ensemble.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReferenceRun {
    /// The lattice (the literature's comparison: 16⁴).
    pub lattice: Lattice,
    /// Thermalisation updates from the cold start (not measured).
    pub therm: u64,
    /// Measured updates.
    pub measured: u64,
    /// Over-relaxation sweeps per heatbath sweep.
    pub or_per_hb: usize,
    /// The seed of the heatbath streams.
    pub seed: u64,
}

impl ReferenceRun {
    /// 16⁴, 200 + 1000 updates of 1 HB + 4 OR, seed 2026.
    pub fn default_16() -> Self {
        ReferenceRun {
            lattice: Lattice::new([16; 4]).expect("16^4 is a lattice"),
            therm: 200,
            measured: 1000,
            or_per_hb: 4,
            seed: 2026,
        }
    }
}

/// The verdict of one reference ensemble at `published.beta`, generated on `gpu`.
pub fn wilson_reference_gpu(
    gpu: &Gpu,
    run: &ReferenceRun,
    published: PublishedPlaquette,
) -> Result<PlaquetteVerdict, GenerateError> {
    let hb = GpuHeatbath::new(gpu, &WilsonGauge::spec(), published.beta, run.lattice)?;
    let mut u =
        DeviceGauge::upload(gpu, &GaugeField::unit(run.lattice)).map_err(super::kernels::device)?;
    let measure = DevicePlaquette::new(gpu)?;
    let series = measure_chain(
        &mut u,
        run.therm,
        run.measured,
        |u, n| {
            hb.heatbath_sweep(gpu, u, run.seed, n)?;
            for _ in 0..run.or_per_hb {
                hb.overrelaxation_sweep(gpu, u)?;
            }
            Ok(())
        },
        |u| measure.plaquette(gpu, u),
    )?;
    Ok(PlaquetteVerdict::new(&series, published))
}

/// The verdict of one reference ensemble generated on the CPU (the same chain as
/// [`wilson_reference_gpu`]; an hour per β at 16⁴ on a few cores, so for small lattices).
pub fn wilson_reference_cpu(
    run: &ReferenceRun,
    published: PublishedPlaquette,
) -> Result<PlaquetteVerdict, GenerateError> {
    let hb = Heatbath::new(&WilsonGauge::spec(), published.beta, run.lattice)?;
    let mut u = GaugeField::<f64>::unit(run.lattice);
    let series = measure_chain::<_, GenerateError>(
        &mut u,
        run.therm,
        run.measured,
        |u, n| {
            hb.heatbath_sweep(u, run.seed, n);
            for _ in 0..run.or_per_hb {
                hb.overrelaxation_sweep(u);
            }
            Ok(())
        },
        |u| Ok(plaquette(u).average),
    )?;
    Ok(PlaquetteVerdict::new(&series, published))
}

/// The three published β of [`WILSON_PLAQUETTES`], each run on the GPU if given, else
/// on the CPU; `report` sees each verdict as it comes.
pub fn wilson_references(
    gpu: Option<&Gpu>,
    run: &ReferenceRun,
    mut report: impl FnMut(&PlaquetteVerdict),
) -> Result<Vec<PlaquetteVerdict>, GenerateError> {
    let mut out = Vec::new();
    for published in WILSON_PLAQUETTES {
        let v = match gpu {
            Some(gpu) => wilson_reference_gpu(gpu, run, published)?,
            None => wilson_reference_cpu(run, published)?,
        };
        report(&v);
        out.push(v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::gpu;

    /// The three reference ensembles on 16⁴ (200 + 1000 updates of 1 HB + 4 OR from cold)
    /// on the GPU agree with the published plaquettes (4 σ + 5e-4); well under a minute
    /// on an H100.
    #[test]
    #[ignore = "needs a CUDA GPU: cargo test --release -p qdsl-runtime --lib generate::reference -- --include-ignored --nocapture"]
    fn published_wilson_plaquettes_on_16_to_the_4() {
        let (gpu, _dir) = gpu();
        let start = std::time::Instant::now();
        let verdicts =
            wilson_references(Some(&gpu), &ReferenceRun::default_16(), |v| println!("{v}"))
                .unwrap();
        println!("{:.1} s", start.elapsed().as_secs_f64());
        assert_eq!(verdicts.len(), 3);
        for v in verdicts {
            assert!(v.pass, "{v}");
            assert_eq!(v.measurements, 1000);
        }
    }
}
