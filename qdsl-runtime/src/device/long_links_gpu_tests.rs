//! GPU test of compressed long links (returns early, printing why, where there is no
//! GPU): the device improved staggered hop with long recon 13, 12 + sign and 9 on MILC's
//! fat.l8 and long.l8 against the CPU hop, which rounds the long links through the same
//! format.

use super::*;
use crate::backend::Backend;
use crate::operator::device::{device_spinor, DeviceStencil, StencilArgs, StencilLaunch};
use crate::tune::LaunchConfig;
use qdsl_core::dsl::storage::round_long_field;
use qdsl_core::dsl::variant::{LongRecon, OutputSites, StorageFormat};
use qdsl_core::field::{ColourSpinorField, SiteSubset, SpinorLayout};
use qdsl_core::format::{FermionFormat, LinkStorage};
use qdsl_core::io::{read_gauge, ReadOptions};
use qdsl_core::lattice::Parity;
use qdsl_kernels::ImprovedStaggeredHop;
use std::path::PathBuf;

use crate::testing::gpu;

fn milc(name: &str) -> GaugeField<f64> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/milc")
        .join(name);
    read_gauge(path, &ReadOptions::smeared_links())
        .expect("MILC smeared links")
        .field
}

/// ‖a − b‖ / ‖b‖.
fn rel_diff(a: &ColourSpinorField<f64>, b: &ColourSpinorField<f64>) -> f64 {
    let mut d = a.clone();
    d.axpy(-1.0, b).expect("same layout");
    (d.norm_sqr() / b.norm_sqr()).sqrt()
}

/// The device improved staggered hop (f32, even output) with long recon 13, 12 + sign
/// and 9 on MILC's fat.l8 + long.l8 matches the CPU hop run in f32, which rounds the long
/// links through the same compression, to relative error 1e-5 (f32 arithmetic, different
/// summation order and f32 decode on the device: ~1e-6 expected). MILC's long links are
/// c·s·SU(3) with s the staggered sign of qdsl's convention (recon 12 + sign accepts
/// them, with c < 0: asqtad's Naik coefficient). The scale parameter is really read:
/// launched with c = 1 instead of the field's c (|c| ≈ 1/24) the result is off by more
/// than 1e-2. A launch without the phases and scale is refused by name. The CPU
/// references are computed before the GPU check, so they also run without a GPU.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn improved_staggered_long_recon_matches_the_cpu_on_milc_links() {
    let (fat, long) = (milc("fat.l8"), milc("long.l8"));
    let lat = *fat.lattice();
    let chi = ColourSpinorField::<f64>::gaussian(
        SpinorLayout::staggered(lat, SiteSubset::Single(Parity::Odd)),
        31,
    );
    let out_layout = SpinorLayout::staggered(lat, SiteSubset::Single(Parity::Even));
    // CPU references (also run without a GPU): the f32 hop on the rounded long links.
    let refs = [LongRecon::R13, LongRecon::R12, LongRecon::R9].map(|long_recon| {
        let v = Variant {
            sites: OutputSites::Parity(Parity::Even),
            spinor: StorageFormat::F32,
            gauge: StorageFormat::F32,
            long_recon,
            ..Variant::default()
        };
        let c = round_long_field(&v, &mut long.clone())
            .expect("MILC long links are c·U(3), and c·s·SU(3)")
            .expect("a scale for a compressed long recon");
        if long_recon == LongRecon::R12 {
            assert!(c < 0.0, "asqtad's Naik coefficient is negative: {c}");
        }
        let mut cpu = ColourSpinorField::<f32>::zeros(out_layout);
        ImprovedStaggeredHop
            .apply_cpu(&v, &mut cpu, &chi.cast(), &fat.cast(), &long.cast(), None)
            .unwrap();
        (v, c, cpu.cast::<f64>())
    });
    let (gpu, _dir) = gpu();
    let half = lat.half_volume();
    let d_chi = DeviceField::from_spinor(&gpu, &chi, FermionFormat::F32).unwrap();
    let full = LinkFormat::new(
        LinkStorage::Float(qdsl_core::format::FloatWidth::F32),
        Compression::Full,
    );
    let d_fat = DeviceField::from_gauge(&gpu, &fat, full).unwrap();
    let spare = gpu
        .alloc::<u8>("a spare phase array", 4 * 4 * lat.volume())
        .unwrap();
    for (v, c, cpu) in &refs {
        // GPU: the same links encoded on the host and uploaded.
        let format = scaled_format(v).unwrap();
        let d_long = DeviceLongLinks::upload(&gpu, &long, format, *c).unwrap();
        let stencil = DeviceStencil::of::<ImprovedStaggeredHop>(&gpu, v).unwrap();
        let choice = StencilLaunch::default_build(LaunchConfig::covering(half, 128, 0));
        let inputs = [&d_chi, &d_fat, d_long.record()];
        let run = |args: LongLinkArgs<'_>| {
            let mut d_out = device_spinor(&gpu, StorageFormat::F32, 6, half).unwrap();
            stencil
                .launch(
                    &gpu,
                    &lat,
                    choice,
                    StencilArgs::new(&mut d_out, &inputs).long(&[args]),
                )
                .unwrap();
            gpu.backend().synchronize().unwrap();
            d_out.to_spinor::<f64>(&gpu, out_layout).unwrap()
        };
        let err = rel_diff(&run(d_long.args()), cpu);
        assert!(err < 1e-5, "{v}: relative error {err:e}");
        let wrong = LongLinkArgs {
            scale: 1.0,
            ..d_long.args()
        };
        let err = rel_diff(&run(wrong), cpu);
        assert!(err > 1e-2, "{v}: scale 1 gave relative error {err:e}");
        let mut d_out = device_spinor(&gpu, StorageFormat::F32, 6, half).unwrap();
        let refused = stencil
            .launch(&gpu, &lat, choice, StencilArgs::new(&mut d_out, &inputs))
            .unwrap_err()
            .to_string();
        assert!(refused.contains("compressed long fields"), "{refused}");
        // Phases where the compression has none, or none where it has them: refused.
        let phases = d_long.args().phase;
        let other = LongLinkArgs {
            phase: if phases.is_some() { None } else { Some(&spare) },
            ..d_long.args()
        };
        let refused = stencil
            .launch(
                &gpu,
                &lat,
                choice,
                StencilArgs::new(&mut d_out, &inputs).long(&[other]),
            )
            .unwrap_err()
            .to_string();
        assert!(refused.contains("phases"), "{refused}");
    }
}
