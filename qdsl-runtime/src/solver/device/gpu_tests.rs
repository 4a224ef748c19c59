//! Device solver tests that need a GPU: ignored where there is none (see `crate::testing`).
//! Run them on the GPU machine:
//! `cargo test --release -p qdsl-runtime --lib solver::device::gpu_tests`.
//!
//! References are independent of the device code: BLAS against plain f64 arithmetic on
//! the downloaded operands, conversions against qdsl-core's formats (host casts and
//! [`QuantizedField`]), solves against the CPU solve and a residual recomputed with
//! the CPU operator.

use super::*;
use crate::solver::{
    ConvertFrom, Fixed16, Half, Packed20, Packed30, QuantizedField, SolverField, SpinorStorage,
};
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_core::Complex;
use std::sync::Arc;

use crate::testing::context;

fn even_wilson() -> SpinorLayout {
    SpinorLayout::wilson(
        Lattice::new([4, 4, 4, 6]).unwrap(),
        SiteSubset::Single(Parity::Even),
    )
}

fn c(re: f64, im: f64) -> Complex<f64> {
    Complex::new(re, im)
}

/// ‖u − v‖ and ‖v‖ of host fields.
fn distance(u: &ColourSpinorField<f64>, v: &ColourSpinorField<f64>) -> f64 {
    u.data()
        .iter()
        .zip(v.data())
        .map(|(a, b)| (*a - *b).norm_sqr())
        .sum::<f64>()
        .sqrt()
}

fn norm(u: &ColourSpinorField<f64>) -> f64 {
    u.data().iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt()
}

/// a·x + b·y on the host in f64.
fn host_axpby(
    a: Complex<f64>,
    x: &ColourSpinorField<f64>,
    b: Complex<f64>,
    y: &ColourSpinorField<f64>,
) -> ColourSpinorField<f64> {
    let data = x
        .data()
        .iter()
        .zip(y.data())
        .map(|(x, y)| a * *x + b * *y)
        .collect();
    ColourSpinorField::from_data(*x.layout(), data).unwrap()
}

/// One BLAS check: name, the operation on y, the expected y, the error bound.
type BlasCase<'a, P> = (
    &'static str,
    Box<dyn Fn(&mut DeviceVector<P>) + 'a>,
    ColourSpinorField<f64>,
    f64,
);

/// Every BLAS operation of precision P on random fields equals the f64 host
/// computation on the downloaded (already rounded) operands to 8 u (|a|‖x‖ + |b|‖y‖):
/// one rounding per stored component (fixed point: relative to the site's largest,
/// ≤ √24 of them per site), plus the compute precision's.
fn check_blas<P: DevicePrecision>(ctx: &Arc<DeviceContext>) {
    let layout = even_wilson();
    let name = P::FORMAT.name();
    let x = DeviceVector::<P>::upload(ctx, &ColourSpinorField::<f64>::gaussian(layout, 1)).unwrap();
    let y0 =
        DeviceVector::<P>::upload(ctx, &ColourSpinorField::<f64>::gaussian(layout, 2)).unwrap();
    let (xh, yh) = (x.download(layout).unwrap(), y0.download(layout).unwrap());
    let bound = |a: f64, b: f64| 8.0 * P::UNIT_ROUNDOFF * (a * norm(&xh) + b * norm(&yh));
    let a = c(0.75, -1.25);
    let fresh = || {
        let mut y = y0.zeros_like();
        y.copy_from(&y0).unwrap();
        y
    };
    let cases: [BlasCase<P>; 3] = [
        (
            "axpy",
            Box::new(|y| y.axpy(a, &x).unwrap()),
            host_axpby(a, &xh, c(1.0, 0.0), &yh),
            bound(a.norm(), 1.0),
        ),
        (
            "xpay",
            Box::new(|y| y.xpay(&x, a).unwrap()),
            host_axpby(c(1.0, 0.0), &xh, a, &yh),
            bound(1.0, a.norm()),
        ),
        (
            "scale",
            Box::new(|y| y.scale(a)),
            host_axpby(c(0.0, 0.0), &xh, a, &yh),
            bound(0.0, a.norm()),
        ),
    ];
    for (op, run, want, tol) in cases {
        let mut y = fresh();
        run(&mut y);
        let got = y.download(layout).unwrap();
        let err = distance(&got, &want);
        assert!(err <= tol, "{name} {op}: error {err:e} > bound {tol:e}");
    }
    let mut y = fresh();
    assert_eq!(y.download(layout).unwrap(), yh, "{name} copy is exact");
    y.set_zero();
    assert_eq!(y.norm_sqr().unwrap(), 0.0, "{name} set_zero");
    // Reductions of the stored values in f64: as accurate as f64 sums.
    let n2: f64 = xh.data().iter().map(|z| z.norm_sqr()).sum();
    assert!(
        (x.norm_sqr().unwrap() - n2).abs() <= 1e-12 * n2,
        "{name} norm"
    );
    let d: Complex<f64> = xh
        .data()
        .iter()
        .zip(yh.data())
        .map(|(x, y)| x.conj() * *y)
        .sum();
    let got = x.dot(&y0).unwrap();
    assert!(
        (got - d).norm() <= 1e-12 * norm(&xh) * norm(&yh),
        "{name} dot {got:?} {d:?}"
    );
    assert!(ctx.error().is_none(), "{:?}", ctx.error());
}

#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn blas_matches_host_arithmetic_to_the_formats_bound() {
    let (ctx, _dir) = context();
    check_blas::<Double>(&ctx);
    check_blas::<Single>(&ctx);
    check_blas::<Fixed16>(&ctx);
    check_blas::<Half>(&ctx);
}

/// Conversions round like qdsl-core: f64 → f32 is the host cast, f32 → f64 exact,
/// f64 → fixed16 and f64 → f16 equal the host emulation [`QuantizedField`] bit for bit.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn conversions_round_like_the_host_formats() {
    let (ctx, _dir) = context();
    let layout = even_wilson();
    let host = ColourSpinorField::<f64>::gaussian(layout, 3);
    let d = DeviceVector::<Double>::upload(&ctx, &host).unwrap();
    let s = DeviceVector::<Single>::converted(&d);
    assert_eq!(
        s.download(layout).unwrap(),
        host.cast::<f32>().cast::<f64>()
    );
    let mut back = d.zeros_like();
    back.convert_from(&s).unwrap();
    assert_eq!(
        back.download(layout).unwrap(),
        host.cast::<f32>().cast::<f64>()
    );
    let q = DeviceVector::<Fixed16>::converted(&d);
    assert_eq!(
        &q.download(layout).unwrap(),
        QuantizedField::<Fixed16>::new(host.clone()).field()
    );
    let h = DeviceVector::<Half>::converted(&d);
    assert_eq!(
        &h.download(layout).unwrap(),
        QuantizedField::<Half>::new(host.clone()).field()
    );
    assert!(ctx.error().is_none(), "{:?}", ctx.error());
}

/// The sticky error: an f16 overflow in `scale` (which cannot return it) makes the next
/// norm NaN and is readable, with its cause, from the context.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn a_failure_in_an_infallible_method_is_sticky_and_makes_norms_nan() {
    let (ctx, _dir) = context();
    let layout = even_wilson();
    let mut h =
        DeviceVector::<Half>::upload(&ctx, &ColourSpinorField::<f64>::gaussian(layout, 4)).unwrap();
    h.scale(c(1e6, 0.0));
    assert!(h.norm_sqr().unwrap().is_nan());
    let e = ctx.take_error().expect("the overflow was recorded");
    assert!(e.contains("beyond the format's range"), "{e}");
}

/// The operator on device vectors equals the CPU operator (independent generated Rust
/// code, f64) applied to the downloaded input: M̂ and M̂† of Wilson in every vector
/// precision, to 16 u ‖M̂ x‖ plus f32 arithmetic (narrow formats compute in f32).
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn operators_match_the_cpu_operator_in_every_precision() {
    let (ctx, _dir) = context();
    let gauge = GaugeField::<f64>::random(Lattice::new([4, 4, 4, 8]).unwrap(), 5);
    let boundary = qdsl_core::dsl::variant::TimeBoundary::Antiperiodic;
    let cpu = crate::operator::EvenOddWilson::new(gauge.clone(), 0.12, Parity::Even, boundary);
    fn check<P: DevicePrecision>(
        ctx: &Arc<DeviceContext>,
        gauge: &GaugeField<f64>,
        cpu: &crate::operator::EvenOddWilson<f64>,
    ) {
        use crate::solver::LinearOperator;
        let boundary = qdsl_core::dsl::variant::TimeBoundary::Antiperiodic;
        let op = DeviceOperator::<P>::wilson(ctx, gauge, 0.12, Parity::Even, boundary).unwrap();
        let layout = cpu.layout();
        let x =
            DeviceVector::<P>::upload(ctx, &ColourSpinorField::<f64>::gaussian(layout, 9)).unwrap();
        let xh = x.download(layout).unwrap();
        let mut y = x.zeros_like();
        for dagger in [false, true] {
            let mut want = xh.zeros_like();
            if dagger {
                op.apply_dagger(&mut y, &x).unwrap();
                cpu.apply_dagger(&mut want, &xh).unwrap();
            } else {
                op.apply(&mut y, &x).unwrap();
                cpu.apply(&mut want, &xh).unwrap();
            }
            let err = distance(&y.download(layout).unwrap(), &want) / norm(&want);
            let bound = 16.0 * P::UNIT_ROUNDOFF.max(Single::UNIT_ROUNDOFF * 64.0);
            let bound = if P::FORMAT == Double::FORMAT {
                1e-13
            } else {
                bound
            };
            assert!(
                err <= bound,
                "{} dagger={dagger}: {err:e} > {bound:e}",
                P::FORMAT.name()
            );
        }
        assert_eq!(
            op.flops_per_apply(),
            (layout.lattice().half_volume() * (1320 + 1392)) as u64
        );
    }
    check::<Double>(&ctx, &gauge, &cpu);
    check::<Single>(&ctx, &gauge, &cpu);
    check::<Fixed16>(&ctx, &gauge, &cpu);
    check::<Half>(&ctx, &gauge, &cpu);
    // Packed spinors read and written by the kernels themselves (no conversion).
    check::<Packed20>(&ctx, &gauge, &cpu);
    check::<Packed30>(&ctx, &gauge, &cpu);
    assert!(ctx.error().is_none(), "{:?}", ctx.error());
}

/// The reliable-update solve with packed inner vectors runs its inner operator on the
/// packed vectors directly (the stencil kernels read and write packed20/packed30, no
/// conversion around each application): CG on the normal equations of even-odd Wilson
/// (κ = 0.12, antiperiodic time, a random 4⁴×8 field) with f64 outer and packed inner
/// vectors reaches a 1e−10 true residual, recomputed with the CPU f64 operator; and the
/// inner packed20 operator is as accurate as the f32 one applied through the conversion
/// (both computed in f32; the packed output rounding is 2⁻¹⁹ of a group's max).
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn packed_reliable_update_cg_runs_on_packed_kernels() {
    use crate::solver::{cg, LinearOperator, NormalForm, NormalOperator, SolverOptions};
    let (ctx, _dir) = context();
    let gauge = GaugeField::<f64>::random(Lattice::new([4, 4, 4, 8]).unwrap(), 6);
    let boundary = qdsl_core::dsl::variant::TimeBoundary::Antiperiodic;
    let cpu = crate::operator::EvenOddWilson::new(gauge.clone(), 0.12, Parity::Even, boundary);
    let layout = cpu.layout();
    fn solve<P: DevicePrecision>(
        ctx: &Arc<DeviceContext>,
        gauge: &GaugeField<f64>,
        cpu: &crate::operator::EvenOddWilson<f64>,
    ) {
        let boundary = qdsl_core::dsl::variant::TimeBoundary::Antiperiodic;
        let layout = cpu.layout();
        let high =
            DeviceOperator::<Double>::wilson(ctx, gauge, 0.12, Parity::Even, boundary).unwrap();
        let low = DeviceOperator::<P>::wilson(ctx, gauge, 0.12, Parity::Even, boundary).unwrap();
        let source = ColourSpinorField::<f64>::gaussian(layout, 21);
        let mut b_host = source.zeros_like();
        cpu.apply_dagger(&mut b_host, &source).unwrap();
        let b = DeviceVector::<Double>::upload(ctx, &b_host).unwrap();
        let mut x = b.zeros_like();
        let opts = SolverOptions {
            tolerance: 1e-10,
            max_iterations: 5000,
            ..SolverOptions::default()
        };
        let (hn, ln) = (
            NormalOperator::new(&high, NormalForm::MdagM),
            NormalOperator::new(&low, NormalForm::MdagM),
        );
        let name = P::FORMAT.name();
        let result = cg::<_, DeviceVector<P>, _, _>(&hn, &ln, &b, &mut x, &opts).unwrap();
        assert!(result.is_converged(), "{name}: {result:?}");
        assert!(result.reliable_updates > 0, "{name}: {result:?}");
        let xh = x.download(layout).unwrap();
        let (mut t, mut r) = (xh.zeros_like(), xh.zeros_like());
        cpu.apply(&mut t, &xh).unwrap();
        cpu.apply_dagger(&mut r, &t).unwrap();
        let res = distance(&r, &b_host) / norm(&b_host);
        assert!(res <= 1e-10, "{name}: true residual {res:e}");
        println!("{name}: {result:?}, true residual {res:e}");
    }
    solve::<Packed20>(&ctx, &gauge, &cpu);
    solve::<Packed30>(&ctx, &gauge, &cpu);
    // The packed20 operator against the f32 operator through the conversion, on the
    // same packed input.
    let x = DeviceVector::<Packed20>::upload(&ctx, &ColourSpinorField::<f64>::gaussian(layout, 9))
        .unwrap();
    let direct =
        DeviceOperator::<Packed20>::wilson(&ctx, &gauge, 0.12, Parity::Even, boundary).unwrap();
    let converting = converting::ConvertingOperator::<_, Single>::new(
        DeviceOperator::<Single>::wilson(&ctx, &gauge, 0.12, Parity::Even, boundary).unwrap(),
    );
    let (mut y1, mut y2) = (x.zeros_like(), x.zeros_like());
    direct.apply(&mut y1, &x).unwrap();
    converting.apply(&mut y2, &x).unwrap();
    let (y1, y2) = (y1.download(layout).unwrap(), y2.download(layout).unwrap());
    let err = distance(&y1, &y2) / norm(&y2);
    assert!(err <= 1e-5, "packed20 direct vs converted: {err:e}");
    assert!(ctx.error().is_none(), "{:?}", ctx.error());
}

/// Fixed16 links with a global scale (`staggered_fixed_links`) on MILC's asqtad links of
/// its 8⁴ sample (fat.l8 reaches 8.3, which unit-scale fixed point cannot hold): the
/// device A of fixed16 vectors equals the CPU operator (independent generated Rust, f64)
/// on the links rounded as the device stores them (s·decode(encode(U/s)),
/// [`qdsl_core::dsl::storage::round_gauge_field_scaled`]) to the fixed16-vector bound of
/// [`operators_match_the_cpu_operator_in_every_precision`]; and the CPU operator on those
/// rounded links is within the links' own rounding (measured here, printed) of the exact
/// one. f32 vectors are refused by name.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn asqtad_fixed16_links_with_a_global_scale_match_the_cpu_operator() {
    use crate::operator::cpu::StaggeredLinks;
    use crate::operator::EvenOddStaggered;
    use crate::solver::LinearOperator;
    use qdsl_core::dsl::storage::round_gauge_field_scaled;
    use qdsl_core::format::{Compression, LinkFormat, LinkStorage};
    use qdsl_core::io::{read_gauge, ReadOptions};
    let (ctx, _dir) = context();
    let read = |name: &str| {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/data/milc")
            .join(name);
        read_gauge(path, &ReadOptions::smeared_links())
            .unwrap()
            .field
    };
    let (fat, long) = (read("fat.l8"), read("long.l8"));
    let links = StaggeredLinks::Improved {
        fat: fat.clone(),
        long: long.clone(),
    };
    let rounded = |u: &GaugeField<f64>| {
        // The device uploads the f64 field: round in f64, as the upload encodes.
        let mut r = u.clone();
        let f = LinkFormat::new(LinkStorage::FIXED16, Compression::Full);
        round_gauge_field_scaled(f, &mut r).unwrap();
        r
    };
    let mass = 0.1;
    let exact = EvenOddStaggered::new(links.clone(), mass, Parity::Even);
    let stored = EvenOddStaggered::new(
        StaggeredLinks::Improved {
            fat: rounded(&fat),
            long: rounded(&long),
        },
        mass,
        Parity::Even,
    );
    let op =
        DeviceOperator::<Fixed16>::staggered_fixed_links(&ctx, &links, mass, Parity::Even).unwrap();
    let layout = exact.layout();
    let x = DeviceVector::<Fixed16>::upload(&ctx, &ColourSpinorField::<f64>::gaussian(layout, 9))
        .unwrap();
    let xh = x.download(layout).unwrap();
    let mut y = x.zeros_like();
    op.apply(&mut y, &x).unwrap();
    let (mut want, mut want_exact) = (xh.zeros_like(), xh.zeros_like());
    stored.apply(&mut want, &xh).unwrap();
    exact.apply(&mut want_exact, &xh).unwrap();
    let err = distance(&y.download(layout).unwrap(), &want) / norm(&want);
    let bound = 16.0 * Fixed16::UNIT_ROUNDOFF.max(Single::UNIT_ROUNDOFF * 64.0);
    assert!(err <= bound, "{err:e} > {bound:e}");
    // The links' rounding: each real within s/(2Q) (+ roundings), here s ≤ 8.3.
    let links_err = distance(&want, &want_exact) / norm(&want_exact);
    println!("fixed16 links with a global scale: ‖ΔA x‖/‖A x‖ = {links_err:e}");
    assert!(links_err > 0.0 && links_err < 1e-3, "{links_err:e}");
    let refused =
        match DeviceOperator::<Single>::staggered_fixed_links(&ctx, &links, mass, Parity::Even) {
            Ok(_) => panic!("f32 vectors are refused"),
            Err(e) => e.to_string(),
        };
    assert!(refused.contains("fixed16 or fixed8"), "{refused}");
    assert!(ctx.error().is_none(), "{:?}", ctx.error());
}

/// CG on MILC's asqtad A (8⁴ sample, m = 0.05) with the iteration in fixed16 vectors and
/// fixed16 links with a global scale (`staggered_fixed_links`), reliable updates against
/// the f64 device operator, reaches a 1e−10 true residual recomputed with the CPU f64
/// operator (the decisive check), and agrees with the CPU solve (the same system in f64,
/// also to 1e−10): two solutions with relative residuals ≤ 1e−10 differ by at most
/// 2κ·1e−10; the allowance 1e−5 assumes κ(A) ≤ 5·10⁴ (4m² = 0.01 at the bottom of the
/// spectrum, ‖D‖² of a few hundred at the top) — a loose check, printed.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn asqtad_solve_with_fixed16_links_agrees_with_the_cpu_solve() {
    use crate::operator::cpu::StaggeredLinks;
    use crate::operator::EvenOddStaggered;
    use crate::solver::{cg, LinearOperator, SolverOptions};
    use qdsl_core::io::{read_gauge, ReadOptions};
    let (ctx, _dir) = context();
    let read = |name: &str| {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/data/milc")
            .join(name);
        read_gauge(path, &ReadOptions::smeared_links())
            .unwrap()
            .field
    };
    let links = StaggeredLinks::Improved {
        fat: read("fat.l8"),
        long: read("long.l8"),
    };
    let mass = 0.05;
    let cpu = EvenOddStaggered::new(links.clone(), mass, Parity::Even);
    let layout = cpu.layout();
    let b_host = ColourSpinorField::<f64>::gaussian(layout, 22);
    let opts = SolverOptions {
        tolerance: 1e-10,
        max_iterations: 5000,
        ..SolverOptions::default()
    };
    let mut x_cpu = b_host.zeros_like();
    let r = cg(&cpu, &cpu, &b_host, &mut x_cpu, &opts).unwrap();
    assert!(r.is_converged(), "{r:?}");
    let high = DeviceOperator::<Double>::staggered(&ctx, &links, mass, Parity::Even).unwrap();
    let low =
        DeviceOperator::<Fixed16>::staggered_fixed_links(&ctx, &links, mass, Parity::Even).unwrap();
    let b = DeviceVector::<Double>::upload(&ctx, &b_host).unwrap();
    let mut x = b.zeros_like();
    let result = cg::<_, DeviceVector<Fixed16>, _, _>(&high, &low, &b, &mut x, &opts).unwrap();
    assert!(result.is_converged(), "{result:?}");
    assert!(result.reliable_updates > 0, "{result:?}");
    println!("fixed16 links + vectors: {result:?}");
    let xh = x.download(layout).unwrap();
    let mut ax = xh.zeros_like();
    cpu.apply(&mut ax, &xh).unwrap();
    let res = distance(&ax, &b_host) / norm(&b_host);
    assert!(res <= 1e-10 * 1.01, "true residual {res:e}");
    let diff = distance(&xh, &x_cpu) / norm(&x_cpu);
    println!("‖x_gpu − x_cpu‖/‖x_cpu‖ = {diff:e}");
    assert!(diff <= 1e-5, "device vs CPU solution {diff:e}");
    assert!(ctx.error().is_none(), "{:?}", ctx.error());
}

/// The full operator on the GPU, [`DeviceOperator::apply_full`], against the host full
/// operator in f64 on a random 4³×6 field, M and M†: Wilson (M = 1 − κH) and staggered
/// (M = 2m + D) through the host [`crate::operator::Schur::apply_full`]; clover and
/// twisted clover (M = A + iμγ5 − ½H) row by row from the host complements on both
/// parities (D_rr ψ_r − ½ H_rs ψ_s, with each parity's own blocks). A clover operator
/// without its other parity is refused.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn full_operators_match_the_host_full_operators() {
    use crate::operator::cpu::StaggeredLinks;
    use crate::operator::even_odd::Xpay;
    use crate::operator::{EvenOddBlocks, EvenOddClover, EvenOddStaggered, EvenOddWilson};
    use qdsl_core::dsl::variant::TimeBoundary;
    let (ctx, _dir) = context();
    let lattice = Lattice::new([4, 4, 4, 6]).unwrap();
    let gauge = GaugeField::<f64>::random(lattice, 13);
    let boundary = TimeBoundary::Antiperiodic;
    let (even, odd) = (Parity::Even, Parity::Odd);
    let full = |spins: usize, seed: u64| {
        let layout = if spins == 1 {
            SpinorLayout::staggered(lattice, SiteSubset::Full)
        } else {
            SpinorLayout::wilson(lattice, SiteSubset::Full)
        };
        let psi = ColourSpinorField::<f64>::gaussian(layout, seed);
        let half = lattice.half_volume() * layout.site_len();
        let part = |p, data: &[Complex<f64>]| {
            ColourSpinorField::from_data(layout.with_subset(SiteSubset::Single(p)), data.to_vec())
                .unwrap()
        };
        (
            part(even, &psi.data()[..half]),
            part(odd, &psi.data()[half..]),
        )
    };
    let device_full = |op: &DeviceOperator<Double>,
                       other: Option<&DeviceOperator<Double>>,
                       psi: &(ColourSpinorField<f64>, ColourSpinorField<f64>),
                       dagger: bool| {
        let up = |f: &ColourSpinorField<f64>| DeviceVector::<Double>::upload(&ctx, f).unwrap();
        let (e, o) = (up(&psi.0), up(&psi.1));
        let (mut oe, mut oo) = (e.zeros_like(), o.zeros_like());
        op.apply_full(other, (&mut oe, &mut oo), (&e, &o), dagger)
            .unwrap();
        (
            oe.download(*psi.0.layout()).unwrap(),
            oo.download(*psi.1.layout()).unwrap(),
        )
    };
    let close = |name: &str,
                 got: &(ColourSpinorField<f64>, ColourSpinorField<f64>),
                 want: &(ColourSpinorField<f64>, ColourSpinorField<f64>)| {
        let err = (distance(&got.0, &want.0).powi(2) + distance(&got.1, &want.1).powi(2)).sqrt()
            / (norm(&want.0).powi(2) + norm(&want.1).powi(2)).sqrt();
        assert!(err < 1e-13, "{name}: {err:e}");
    };

    let psi = full(4, 3);
    let host = EvenOddWilson::new(gauge.clone(), 0.12, even, boundary);
    let op = DeviceOperator::<Double>::wilson(&ctx, &gauge, 0.12, even, boundary).unwrap();
    for dagger in [false, true] {
        let mut want = (psi.0.zeros_like(), psi.1.zeros_like());
        host.apply_full((&mut want.0, &mut want.1), (&psi.0, &psi.1), dagger)
            .unwrap();
        close(
            &format!("wilson dagger={dagger}"),
            &device_full(&op, None, &psi, dagger),
            &want,
        );
    }

    let links = StaggeredLinks::Naive(phased(&gauge));
    let psi_s = full(1, 4);
    let host = EvenOddStaggered::new(links.clone(), 0.1, even);
    let op = DeviceOperator::<Double>::staggered(&ctx, &links, 0.1, even).unwrap();
    for dagger in [false, true] {
        let mut want = (psi_s.0.zeros_like(), psi_s.1.zeros_like());
        host.apply_full((&mut want.0, &mut want.1), (&psi_s.0, &psi_s.1), dagger)
            .unwrap();
        close(
            &format!("staggered dagger={dagger}"),
            &device_full(&op, None, &psi_s, dagger),
            &want,
        );
    }

    for mu in [0.0, 0.15] {
        let a = qdsl_core::gauge::clover_field(&gauge, -0.2, 1.3);
        let host = |p| EvenOddClover::from_clover(gauge.clone(), &a, mu, p, boundary).unwrap();
        let (host_e, host_o) = (host(even), host(odd));
        let dev = |p| DeviceOperator::<Double>::clover(&ctx, &gauge, &a, mu, p, boundary).unwrap();
        let (op_e, op_o) = (dev(even), dev(odd));
        for dagger in [false, true] {
            let mut want = (psi.0.zeros_like(), psi.1.zeros_like());
            for (blocks, r, out, psi_r, psi_s) in [
                (host_e.blocks(), even, &mut want.0, &psi.0, &psi.1),
                (host_o.blocks(), odd, &mut want.1, &psi.1, &psi.0),
            ] {
                let mut d_psi = psi_r.zeros_like();
                blocks
                    .apply_diagonal((), r, &mut d_psi, psi_r, dagger)
                    .unwrap();
                let xpay = Xpay {
                    a: 1.0,
                    x: &d_psi,
                    b: blocks.hop_coefficient(dagger),
                };
                blocks.hop((), r, out, psi_s, dagger, Some(xpay)).unwrap();
            }
            let got = device_full(&op_e, Some(&op_o), &psi, dagger);
            close(&format!("clover μ={mu} dagger={dagger}"), &got, &want);
        }
        let (e, o) = (
            DeviceVector::<Double>::upload(&ctx, &psi.0).unwrap(),
            DeviceVector::<Double>::upload(&ctx, &psi.1).unwrap(),
        );
        let (mut oe, mut oo) = (e.zeros_like(), o.zeros_like());
        let refused = op_e.apply_full(None, (&mut oe, &mut oo), (&e, &o), false);
        assert!(refused.unwrap_err().to_string().contains("other parity"));
    }
    assert!(ctx.error().is_none(), "{:?}", ctx.error());
}

/// Staggered links with MILC's phases folded in, written here: η_x = (−1)^t,
/// η_y = (−1)^{t+x}, η_z = (−1)^{t+x+y}, η_t = 1 (any phases would do for comparing
/// two implementations of the same operator).
fn phased(gauge: &GaugeField<f64>) -> GaugeField<f64> {
    GaugeField::from_fn(*gauge.lattice(), |c, mu| {
        let exponent = match mu {
            0 => c[3],
            1 => c[3] + c[0],
            2 => c[3] + c[0] + c[1],
            _ => 0,
        };
        let eta = if exponent % 2 == 0 { 1.0 } else { -1.0 };
        gauge.link_at(c, mu).scale(eta)
    })
}

/// Source s of a batched host field.
type Slice<'a> = dyn Fn(&ColourSpinorField<f64>, usize) -> Vec<Complex<f64>> + 'a;

/// GPU: the per-source operations of device vectors holding N = 5 sources (f64, f32,
/// fixed16) against f64 arithmetic on the downloaded slices: ‖y_s‖², ⟨y_s, x_s⟩,
/// y_s ← a_s x_s + y_s and y_s ← x_s + a_s y_s with a different complex a_s per source.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn per_source_operations_match_host_arithmetic() {
    use crate::solver::SourceBatch;
    let (ctx, _dir) = context();
    let n = 5;
    let one = even_wilson();
    let layout =
        SpinorLayout::new(*one.lattice(), n, one.subset(), one.nspin(), one.ncolour()).unwrap();
    let per = one.len();
    let slice = |f: &ColourSpinorField<f64>, s: usize| f.data()[s * per..(s + 1) * per].to_vec();
    let a: Vec<Complex<f64>> = (0..n)
        .map(|s| c(0.5 - 0.25 * s as f64, 0.125 * s as f64))
        .collect();
    fn check<P: DevicePrecision>(
        ctx: &Arc<DeviceContext>,
        layout: SpinorLayout,
        a: &[Complex<f64>],
        tol: f64,
        slice: &Slice<'_>,
    ) {
        let n = a.len();
        let (xh, yh) = (
            ColourSpinorField::<f64>::gaussian(layout, 61),
            ColourSpinorField::<f64>::gaussian(layout, 62),
        );
        let x = DeviceVector::<P>::upload(ctx, &xh).unwrap();
        let mut y = DeviceVector::<P>::upload(ctx, &yh).unwrap();
        assert_eq!(x.sources(), n);
        // The stored operands (rounded to P) are the reference's inputs.
        let (xs, ys) = (x.download(layout).unwrap(), y.download(layout).unwrap());
        let norms = y.norm_sqr_each();
        let dots = y.dot_each(&x).unwrap();
        for s in 0..n {
            let (xv, yv) = (slice(&xs, s), slice(&ys, s));
            let n2: f64 = yv.iter().map(|z| z.norm_sqr()).sum();
            let d: Complex<f64> = yv.iter().zip(&xv).map(|(y, x)| y.conj() * x).sum();
            assert!(
                (norms[s] - n2).abs() <= 1e-12 * n2,
                "{} ‖y_{s}‖²",
                P::FORMAT.name()
            );
            assert!(
                (dots[s] - d).norm() <= 1e-12 * n2,
                "{} ⟨y_{s}, x_{s}⟩",
                P::FORMAT.name()
            );
        }
        let mut z = y.zeros_like();
        z.copy_from(&y).unwrap();
        z.axpy_each(a, &x).unwrap();
        let mut w = y.zeros_like();
        w.copy_from(&y).unwrap();
        w.xpay_each(&x, a).unwrap();
        let (zh, wh) = (z.download(layout).unwrap(), w.download(layout).unwrap());
        for (s, &a_s) in a.iter().enumerate() {
            let (xv, yv) = (slice(&xs, s), slice(&ys, s));
            let axpy: Vec<_> = xv.iter().zip(&yv).map(|(x, y)| a_s * x + y).collect();
            let xpay: Vec<_> = xv.iter().zip(&yv).map(|(x, y)| x + a_s * y).collect();
            for (got, want, what) in [(slice(&zh, s), axpy, "axpy"), (slice(&wh, s), xpay, "xpay")]
            {
                let d: f64 = got.iter().zip(&want).map(|(g, w)| (g - w).norm_sqr()).sum();
                let m: f64 = want.iter().map(|w| w.norm_sqr()).sum();
                assert!(
                    (d / m).sqrt() <= tol,
                    "{} {what} source {s}: {:e}",
                    P::FORMAT.name(),
                    (d / m).sqrt()
                );
            }
        }
        assert!(y.axpy_each(&a[..1], &x).is_err() || n == 1);
        assert!(ctx.error().is_none(), "{:?}", ctx.error());
    }
    check::<Double>(&ctx, layout, &a, 1e-15, &slice);
    check::<Single>(&ctx, layout, &a, 1e-6, &slice);
    check::<Fixed16>(&ctx, layout, &a, 1e-3, &slice);
}
