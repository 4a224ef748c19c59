//! The open- and SF-boundary operator rows of `qdsl check`: the device even-odd clover
//! operator M̂ = D_ee − ¼ H_eo D_oo⁻¹ H_oe built from openQCD's boundary fields
//! ([`OpenBoundary::clover_fields`]: hop links zero across the boundary, the clover field
//! the unit matrix on the vanishing slices and shifted by c_F − 1 next to them) against
//! the host [`EvenOddClover`] of the same fields, on openQCD's own open-boundary
//! configuration `openqcd/gauge.bc_0.bin`: Wilson (c_sw = 0, open, c_F = 1), clover
//! (c_sw = 1.978, open, c_F = 1.3) and clover with SF boundaries (c_F = 1.3,
//! c_F' = 0.9), M̂ and M̂†, f64 and f32 (recon 18: the zero links are not SU(3)).

use super::report::{relative_error, CheckRow};
use super::run::{as_c64, err, outcome, read};
use qdsl_core::dsl::variant::{Recon, StorageFormat, TimeBoundary};
use qdsl_core::dsl::Variant;
use qdsl_core::field::{CloverField, ColourSpinorField, GaugeField};
use qdsl_core::format::{Compression, LinkFormat};
use qdsl_core::gauge::{FieldStrengthTrace, OpenBoundary};
use qdsl_core::io::ReadOptions;
use qdsl_core::lattice::Parity;
use qdsl_core::Real;
use qdsl_runtime::device::{DeviceField, Gpu};
use qdsl_runtime::operator::device::device_spinor;
use qdsl_runtime::operator::{DeviceRun, EvenOddClover, Schur};
use qdsl_runtime::solver::LinearOperator;
use qdsl_runtime::tune::Tuner;
use std::path::Path;

/// The configuration the rows run on.
const FILE: &str = "openqcd/gauge.bc_0.bin";

/// The bare mass of the rows (κ = 1/(2m + 8) ≈ 0.1266).
const MASS: f64 = -0.05;

/// ‖M̂_gpu ψ − M̂_cpu ψ‖/‖M̂_cpu ψ‖ (or M̂†) in compute type T for the boundary fields
/// `hops` and `clover` (parity even, no twist).
fn compare<T: Real>(
    gpu: &Gpu,
    tuner: &Tuner,
    hops: &GaugeField<f64>,
    clover: &CloverField<f64>,
    format: StorageFormat,
    dagger: bool,
) -> Result<f64, String> {
    let lat = *hops.lattice();
    let parity = Parity::Even;
    // No link crosses the time boundary: the wrap sign is moot (as in the solve).
    let wrap = TimeBoundary::Periodic;
    let host = EvenOddClover::from_clover(hops.clone(), clover, 0.0, parity, wrap)
        .map_err(err)?
        .cast::<T>();
    let psi = ColourSpinorField::<f64>::gaussian(host.layout(), 41).cast::<T>();
    let mut want = ColourSpinorField::<T>::zeros(host.layout());
    if dagger {
        host.apply_dagger(&mut want, &psi).map_err(err)?;
    } else {
        host.apply(&mut want, &psi).map_err(err)?;
    }
    let formats = Variant {
        spinor: format,
        gauge: format,
        recon: Recon::R18,
        boundary: wrap,
        ..Variant::default()
    };
    let links = LinkFormat::new(format.link_storage(), Compression::Full);
    let d_links = DeviceField::from_gauge(gpu, &hops.cast::<T>(), links).map_err(err)?;
    let op = Schur::clover(gpu, d_links, clover, 0.0, parity, &formats).map_err(err)?;
    let d_psi = DeviceField::from_spinor(gpu, &psi, format.fermion_format()).map_err(err)?;
    let mut d_out = device_spinor(gpu, format, 24, lat.half_volume()).map_err(err)?;
    op.apply_in(DeviceRun::new(gpu, tuner), &mut d_out, &d_psi, dagger)
        .map_err(err)?;
    let got = d_out.to_spinor::<T>(gpu, host.layout()).map_err(err)?;
    Ok(relative_error(&as_c64(&got), &as_c64(&want)))
}

/// The rows (module docs); a row that cannot run says why.
pub fn check_open_boundary_operators(gpu: &Gpu, tuner: &Tuner, dir: &Path) -> Vec<CheckRow> {
    let row = |kernel: &str, variant: String, outcome| CheckRow {
        kernel: kernel.into(),
        variant,
        data: FILE.into(),
        outcome,
    };
    let gauge = match read(dir, FILE, &ReadOptions::default()) {
        Ok(gauge) => gauge,
        Err(e) => {
            let failed = super::report::Outcome::Failed(e);
            return vec![row("clover_eo open", "-".into(), failed)];
        }
    };
    let cases = [
        ("wilson_eo open", 0.0, OpenBoundary::open(1.0)),
        ("clover_eo open", 1.978, OpenBoundary::open(1.3)),
        ("clover_eo sf", 1.978, OpenBoundary::sf(1.3, 0.9)),
    ];
    let mut rows = Vec::new();
    for (kernel, c_sw, boundary) in cases {
        let (hops, clover) =
            match boundary.clover_fields(&gauge, MASS, c_sw, FieldStrengthTrace::Keep) {
                Ok(fields) => fields,
                Err(e) => {
                    rows.push(row(
                        kernel,
                        "-".into(),
                        super::report::Outcome::Failed(e.to_string()),
                    ));
                    continue;
                }
            };
        for format in [StorageFormat::F64, StorageFormat::F32] {
            for dagger in [false, true] {
                let r = match format {
                    StorageFormat::F64 => {
                        compare::<f64>(gpu, tuner, &hops, &clover, format, dagger)
                    }
                    _ => compare::<f32>(gpu, tuner, &hops, &clover, format, dagger),
                };
                let variant = format!(
                    "{} even m={MASS} c_sw={c_sw} {boundary} {} recon=18",
                    if dagger { "M̂†" } else { "M̂" },
                    format.name()
                );
                rows.push(row(kernel, variant, outcome(format, r)));
            }
        }
    }
    rows
}
