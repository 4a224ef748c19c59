//! GPU: the device even-odd Möbius operator ([`DeviceEvenOddMobius`]) against the host
//! [`EvenOddMobius`] (whose blocks the CPU tests prove against the textbook operator and
//! a dense matrix): M̂ and M̂† of the asymmetric form in both launch plans, the
//! symmetric form, the source preparation and the reconstruction, on random 4⁴ × Ls
//! fields, f64, f32 and fixed16 storage.

use super::tests::{knobs, max_abs, max_diff};
use super::{ComplementPlan, DeviceEvenOddMobius, EvenOddMobius, MobiusParams};
use crate::device::{DeviceField, Gpu};
use crate::operator::device::DeviceRun;
use crate::operator::even_odd::EvenOddBlocks;
use crate::tune::Tuner;
use qdsl_core::dsl::variant::{Recon, StorageFormat, TimeBoundary};
use qdsl_core::dsl::Variant;
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_core::Complex;

type F64 = ColourSpinorField<f64>;

/// The relative error bound of one application in a storage format: f64 rounding, f32
/// rounding, 16-bit fixed point (ε = 2⁻¹⁵ of each site's largest component, stored
/// again for each intermediate).
fn bound(format: StorageFormat) -> f64 {
    match format {
        StorageFormat::F64 => 1e-12,
        StorageFormat::F32 => 1e-5,
        _ => 2e-3,
    }
}

struct Fixture<'a> {
    gpu: &'a Gpu,
    tuner: &'a Tuner,
    format: StorageFormat,
}

impl Fixture<'_> {
    fn cx(&self) -> DeviceRun<'_> {
        DeviceRun::new(self.gpu, self.tuner)
    }

    fn up(&self, f: &F64) -> DeviceField {
        DeviceField::from_spinor(self.gpu, f, self.format.fermion_format()).unwrap()
    }

    fn down(&self, d: &DeviceField, layout: SpinorLayout) -> F64 {
        d.to_spinor::<f64>(self.gpu, layout).unwrap()
    }
}

fn rel(got: &F64, want: &F64) -> f64 {
    max_diff(got.data(), want.data()) / max_abs(want.data())
}

fn host_apply(op: &EvenOddMobius<f64>, psi: &F64, dagger: bool) -> F64 {
    let mut out = ColourSpinorField::zeros(*psi.layout());
    op.apply_in((), &mut out, psi, dagger).unwrap();
    out
}

/// Every application of the device operator against the host one; returns the worst
/// relative error.
#[allow(clippy::too_many_arguments)]
fn compare(
    fx: &Fixture<'_>,
    u: &GaugeField<f64>,
    params: &MobiusParams,
    variant: &Variant,
    label: &str,
) -> f64 {
    let ls = params.ls();
    let lat = *u.lattice();
    let layout = |p: Parity| SpinorLayout::new(lat, ls, SiteSubset::Single(p), 4, 3).unwrap();
    let (p, q) = (Parity::Even, Parity::Odd);
    let boundary = TimeBoundary::Antiperiodic;
    let psi = F64::gaussian(layout(p), 11);
    let eta_q = F64::gaussian(layout(q), 12);
    let d_psi = fx.up(&psi);
    let d_eta_q = fx.up(&eta_q);
    let tol = bound(fx.format);
    let mut worst = 0.0f64;
    let mut check = |what: &str, got: &F64, want: &F64| {
        let e = rel(got, want);
        worst = worst.max(e);
        assert!(e < tol, "{label} {what}: relative error {e:e} ≥ {tol:e}");
    };
    let host = EvenOddMobius::asymmetric(u.clone(), params.clone(), p, boundary).unwrap();
    for plan in [ComplementPlan::Quda, ComplementPlan::SourceFused] {
        let dev =
            DeviceEvenOddMobius::asymmetric(fx.gpu, u, params.clone(), p, variant, plan).unwrap();
        for dagger in [false, true] {
            let mut out = dev.blocks().zeros(fx.cx(), p).unwrap();
            dev.apply_in(fx.cx(), &mut out, &d_psi, dagger).unwrap();
            check(
                &format!("{plan:?} M̂ dagger {dagger}"),
                &fx.down(&out, layout(p)),
                &host_apply(&host, &psi, dagger),
            );
        }
        // b̂ = η_p − D_pq M5⁻¹ η_q and ψ_q = M5⁻¹(η_q − D_qp ψ_p).
        let b = dev.prepare_source_in(fx.cx(), &d_psi, &d_eta_q).unwrap();
        check(
            "prepared source",
            &fx.down(&b, layout(p)),
            &host.prepare_source(&psi, &eta_q).unwrap(),
        );
        let r = dev.reconstruct_in(fx.cx(), &d_psi, &d_eta_q).unwrap();
        check(
            "reconstruction",
            &fx.down(&r, layout(q)),
            &host.reconstruct(&psi, &eta_q).unwrap(),
        );
    }
    let host_sym = EvenOddMobius::symmetric(u.clone(), params.clone(), p, boundary).unwrap();
    let dev_sym = DeviceEvenOddMobius::symmetric(fx.gpu, u, params.clone(), p, variant).unwrap();
    for dagger in [false, true] {
        let mut out = dev_sym.blocks().zeros(fx.cx(), p).unwrap();
        dev_sym.apply_in(fx.cx(), &mut out, &d_psi, dagger).unwrap();
        check(
            &format!("symmetric M̂ dagger {dagger}"),
            &fx.down(&out, layout(p)),
            &host_apply(&host_sym, &psi, dagger),
        );
    }
    // ⟨φ, M̂ψ⟩ = ⟨M̂†φ, ψ⟩ on the device (f64 only: an identity of the exact operator).
    if fx.format == StorageFormat::F64 {
        let dev = DeviceEvenOddMobius::asymmetric(
            fx.gpu,
            u,
            params.clone(),
            p,
            variant,
            ComplementPlan::SourceFused,
        )
        .unwrap();
        let phi = F64::gaussian(layout(p), 13);
        let (mut m_psi, mut mdag_phi) = (
            dev.blocks().zeros(fx.cx(), p).unwrap(),
            dev.blocks().zeros(fx.cx(), p).unwrap(),
        );
        dev.apply_in(fx.cx(), &mut m_psi, &d_psi, false).unwrap();
        dev.apply_in(fx.cx(), &mut mdag_phi, &fx.up(&phi), true)
            .unwrap();
        let dot = |a: &F64, b: &F64| -> Complex<f64> {
            a.data()
                .iter()
                .zip(b.data())
                .map(|(x, y)| x.conj() * y)
                .sum()
        };
        let lhs = dot(&phi, &fx.down(&m_psi, layout(p)));
        let rhs = dot(&fx.down(&mdag_phi, layout(p)), &psi);
        assert!(
            (lhs - rhs).norm() < 1e-10 * lhs.norm(),
            "{label}: ⟨φ, M̂ψ⟩ = {lhs} but ⟨M̂†φ, ψ⟩ = {rhs}"
        );
    }
    worst
}

/// GPU: the device M̂, M̂† (QUDA's three kernels and the two-kernel plan), the symmetric
/// form, source preparation and reconstruction equal the host [`EvenOddMobius`] within
/// the storage format's bound ([`bound`]) on random 4⁴ × Ls links and fields: Ls = 8
/// and 12, Shamir, Möbius and zMöbius coefficients, f64 recon 18, f32 recon 12 and
/// fixed16 recon 12; and ⟨φ, M̂ψ⟩ = ⟨M̂†φ, ψ⟩ in f64.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn the_device_even_odd_mobius_equals_the_host_one() {
    let (ctx, _dir) = crate::testing::context();
    let (gpu, tuner) = (ctx.gpu(), ctx.tuner());
    let u = GaugeField::<f64>::random(Lattice::new([4, 4, 4, 4]).unwrap(), 61);
    for (format, recon) in [
        (StorageFormat::F64, Recon::R18),
        (StorageFormat::F32, Recon::R12),
        (StorageFormat::Fixed16, Recon::R12),
    ] {
        let fx = Fixture { gpu, tuner, format };
        let variant = Variant {
            spinor: format,
            gauge: format,
            recon,
            boundary: TimeBoundary::Antiperiodic,
            ..Variant::default()
        };
        let mut worst = 0.0f64;
        for ls in [8, 12] {
            for (name, params) in knobs(ls) {
                let label = format!("{name} Ls {ls} {}", format.name());
                worst = worst.max(compare(&fx, &u, &params, &variant, &label));
            }
        }
        println!("{}: worst relative error {worst:.2e}", format.name());
    }
}
