use super::*;
use crate::tune;
use qdsl_core::dsl::variant::Recon;
use qdsl_core::dsl::Stencil;
use qdsl_core::format::FermionFormat;
use qdsl_core::lattice::Parity;
use qdsl_kernels::{ImprovedStaggeredHop, WilsonHop};

fn shape(sites: usize, subs: usize, reals: usize, real_bytes: usize) -> FieldShapeCheck {
    FieldShapeCheck {
        sites,
        subs,
        reals,
        real_bytes,
    }
}

/// Hand-written shapes on 4³×6 (V = 384): Wilson even output, f32 recon 12:
/// out and ψ 192 sites × 24 f32, U 384 sites × 4 × 12 f32; the full-lattice output
/// reads ψ on all 384 sites; improved staggered f64 has fat and long 384 × 4 × 18.
#[test]
fn expected_shapes_by_hand() {
    let lat = Lattice::new([4, 4, 4, 6]).unwrap();
    let v = Variant {
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        recon: Recon::R12,
        ..Variant::default()
    };
    let got = expected_shapes(&WilsonHop::ir(), &v, &lat).unwrap();
    let want = vec![
        ("out".to_string(), shape(192, 1, 24, 4)),
        ("psi".to_string(), shape(192, 1, 24, 4)),
        ("u".to_string(), shape(384, 4, 12, 4)),
    ];
    assert_eq!(got, want);
    let full = Variant {
        sites: OutputSites::Full,
        ..v
    };
    let got = expected_shapes(&WilsonHop::ir(), &full, &lat).unwrap();
    assert_eq!((got[0].1.sites, got[1].1.sites), (384, 384));
    let got = expected_shapes(&ImprovedStaggeredHop::ir(), &Variant::default(), &lat).unwrap();
    let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["out", "chi", "fat", "long"]);
    assert_eq!(got[1].1, shape(192, 1, 6, 8));
    assert_eq!(got[3].1, shape(384, 4, 18, 8));
    assert_eq!(output_sites(&v, &lat), 192);
    assert_eq!(output_sites(&full, &lat), 384);
    assert_eq!(formats_key(&v), "spinor=f32 gauge=f32 recon=12");
}

/// Wilson-clover on 4³×6, odd output, f32 recon 12: ψ is read at both parities (384
/// sites), the clover field on the 192 output sites × 72 f32 (the compute precision),
/// and with f64 spinors 72 f64; a 72-real f32 device layout passes the check; 5D
/// spinors hold Ls slices.
#[test]
fn clover_fields_have_the_compute_precision_on_output_sites() {
    let lat = Lattice::new([4, 4, 4, 6]).unwrap();
    let v = Variant {
        sites: OutputSites::Parity(Parity::Odd),
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        recon: Recon::R12,
        ..Variant::default()
    };
    let got = expected_shapes(&qdsl_kernels::WilsonClover::ir(), &v, &lat).unwrap();
    let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["out", "psi", "u", "a"]);
    assert_eq!(got[1].1, shape(384, 1, 24, 4));
    assert_eq!(got[3].1, shape(192, 1, 72, 4));
    let f64_full = Variant {
        sites: OutputSites::Full,
        ..Variant::default()
    };
    let got = expected_shapes(&qdsl_kernels::CloverApply::ir(), &f64_full, &lat).unwrap();
    assert_eq!(got[2].1, shape(384, 1, 72, 8));
    let layout = DeviceLayout::new(DeviceFormat::Fermion(FermionFormat::F32), 72, 192).unwrap();
    assert_eq!(shape(192, 1, 72, 4).check(&layout), Ok(()));
    // 5D (Ls = 3): the spinors hold 3 slices, the 4D clover and gauge fields do not.
    let (uses, reals) = field_uses(&qdsl_kernels::WilsonClover::ir()).unwrap();
    let five = shapes(&uses, reals, &v, &lat, 3);
    assert_eq!(five[0], shape(3 * 192, 1, 24, 4));
    assert_eq!(five[1], shape(3 * 384, 1, 24, 4));
    assert_eq!(five[2], shape(384, 4, 12, 4));
    assert_eq!(five[3], shape(192, 1, 72, 4));
}

/// Packed spinors are checked by their stored 32-bit words: a packed20 Wilson site is 4
/// groups × 4 words, packed30 4 × 6, a packed30 staggered site 1 × 6, each matching the
/// runtime's packed device layout; the clover field beside packed30 is f64 (its compute
/// type), beside packed20 f32.
#[test]
fn packed_spinors_are_checked_by_their_words() {
    let lat = Lattice::new([4, 4, 4, 6]).unwrap();
    for (spinor, words, clover_bytes) in [
        (StorageFormat::Packed20, 16, 4),
        (StorageFormat::Packed30, 24, 8),
    ] {
        let v = Variant {
            spinor,
            gauge: spinor.compute(),
            ..Variant::default()
        };
        let got = expected_shapes(&qdsl_kernels::WilsonClover::ir(), &v, &lat).unwrap();
        assert_eq!(got[0].1, shape(192, 1, words, 4), "{spinor:?}");
        assert_eq!(got[3].1, shape(192, 1, 72, clover_bytes), "{spinor:?}");
        let layout =
            DeviceLayout::new(DeviceFormat::Fermion(spinor.fermion_format()), 24, 192).unwrap();
        assert_eq!(got[0].1.check(&layout), Ok(()), "{spinor:?}");
    }
    let v = Variant {
        spinor: StorageFormat::Packed30,
        gauge: StorageFormat::F64,
        ..Variant::default()
    };
    let got = expected_shapes(&ImprovedStaggeredHop::ir(), &v, &lat).unwrap();
    assert_eq!(got[1].1, shape(192, 1, 6, 4));
}

/// max |a − b| / max |b| over two host fields of one layout.
fn rel_err<T: qdsl_core::Real>(
    a: &qdsl_core::field::ColourSpinorField<T>,
    b: &qdsl_core::field::ColourSpinorField<T>,
) -> f64 {
    let (mut d, mut m) = (0.0f64, 0.0f64);
    for (x, y) in a.data().iter().zip(b.data()) {
        let (dr, di) = ((x.re - y.re).to_f64(), (x.im - y.im).to_f64());
        d = d.max(dr.hypot(di));
        m = m.max(y.re.to_f64().hypot(y.im.to_f64()));
    }
    d / m
}

/// GPU: the Wilson hop on a 5D field (Ls = 3, odd output, f32,
/// recon 12: one grid row per slice) and the Wilson-clover operator with Dirichlet
/// walls (blocks 2 × 4 × 2 × 3, full lattice, f64, dagger, xpay) equal the generated
/// CPU code on the same fields.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn five_d_and_dirichlet_launches_match_the_cpu() {
    use qdsl_core::dsl::cpu::Xpay;
    use qdsl_core::dsl::variant::DirichletBlocks;
    use qdsl_core::field::SpinorLayout;
    use qdsl_core::field::{CloverField, ColourSpinorField, GaugeField, SiteSubset};
    let (gpu, _dir) = crate::testing::gpu();
    let lat = Lattice::new([4, 4, 4, 6]).unwrap();
    let u = GaugeField::random(lat, 31);
    // 5D Wilson hop.
    let v = Variant {
        sites: OutputSites::Parity(Parity::Odd),
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        recon: Recon::R12,
        ..Variant::default()
    };
    let ls = 3;
    let layout = |p: Parity| SpinorLayout::new(lat, ls, SiteSubset::Single(p), 4, 3).unwrap();
    let psi = ColourSpinorField::<f64>::gaussian(layout(Parity::Even), 32).cast::<f32>();
    let u32f = u.cast::<f32>();
    let mut cpu = ColourSpinorField::<f32>::zeros(layout(Parity::Odd));
    WilsonHop
        .apply_cpu(&v, &mut cpu, &psi, &u32f, None)
        .unwrap();
    let d_psi = DeviceField::from_spinor(&gpu, &psi, FermionFormat::F32).unwrap();
    let d_u = DeviceField::from_gauge(
        &gpu,
        &u32f,
        LinkFormat::new(v.gauge.link_storage(), v.recon.compression()),
    )
    .unwrap();
    let n4 = lat.half_volume();
    let mut d_out = device_spinor(&gpu, v.spinor, 24, ls * n4).unwrap();
    let hop = DeviceStencil::of::<WilsonHop>(&gpu, &v).unwrap();
    hop.launch(
        &gpu,
        &lat,
        StencilLaunch::default_build(tune::LaunchConfig::default_for(n4)),
        StencilArgs::new(&mut d_out, &[&d_psi, &d_u]),
    )
    .unwrap();
    let got = d_out.to_spinor::<f32>(&gpu, layout(Parity::Odd)).unwrap();
    let err = rel_err(&got, &cpu);
    assert!(err < 1e-5, "5D Wilson hop: {err:e}");
    // Dirichlet Wilson-clover.
    let v = Variant {
        sites: OutputSites::Full,
        dagger: true,
        xpay: true,
        dirichlet: Some(DirichletBlocks {
            block: [2, 4, 2, 3],
        }),
        ..Variant::default()
    };
    let full = SpinorLayout::wilson(lat, SiteSubset::Full);
    let psi = ColourSpinorField::<f64>::gaussian(full, 33);
    let x = ColourSpinorField::<f64>::gaussian(full, 34);
    let mut a = CloverField::<f64>::zeros(lat, SiteSubset::Full);
    for (k, r) in a.data_mut().iter_mut().enumerate() {
        *r = if k % 36 < 6 {
            4.0
        } else {
            ((k * 37 % 101) as f64) / 200.0 - 0.25
        };
    }
    let mut cpu = ColourSpinorField::<f64>::zeros(full);
    let xpay = Xpay {
        a: 0.5,
        x: &x,
        b: -1.5,
    };
    qdsl_kernels::WilsonClover
        .apply_cpu(&v, &mut cpu, &psi, &u, &a, Some(xpay))
        .unwrap();
    let d_psi = DeviceField::from_spinor(&gpu, &psi, FermionFormat::F64).unwrap();
    let d_x = DeviceField::from_spinor(&gpu, &x, FermionFormat::F64).unwrap();
    let d_u = DeviceField::from_gauge(
        &gpu,
        &u,
        LinkFormat::new(v.gauge.link_storage(), v.recon.compression()),
    )
    .unwrap();
    let clover =
        DeviceLayout::new(DeviceFormat::Fermion(FermionFormat::F64), 72, lat.volume()).unwrap();
    let d_a = DeviceField::upload(&gpu, clover, a.data()).unwrap();
    let mut d_out = device_spinor(&gpu, v.spinor, 24, lat.volume()).unwrap();
    let op = DeviceStencil::of::<qdsl_kernels::WilsonClover>(&gpu, &v).unwrap();
    let dx = DeviceXpay {
        a: 0.5,
        x: &d_x,
        b: -1.5,
    };
    op.launch(
        &gpu,
        &lat,
        StencilLaunch::default_build(tune::LaunchConfig::default_for(lat.volume())),
        StencilArgs::new(&mut d_out, &[&d_psi, &d_u, &d_a]).xpay(Some(&dx)),
    )
    .unwrap();
    let got = d_out.to_spinor::<f64>(&gpu, full).unwrap();
    let err = rel_err(&got, &cpu);
    assert!(err < 1e-13, "Dirichlet Wilson-clover: {err:e}");
}

/// GPU: a chain of 12 Wilson hops on 16⁴ (f32, recon 12), each
/// reading the field the previous one wrote (even → odd → even …, every hop an xpay
/// a·x + b·Hψ so the values stay bounded), launched as programmatic dependents gives
/// bit for bit the result of plain stream-ordered launches: every kernel waits for the
/// one before it before reading its output. (A load above the wait would read fields
/// still being written: the chain makes every hop depend on the previous one.)
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn dependent_launches_give_the_stream_ordered_result() {
    use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
    let (gpu, _dir) = crate::testing::gpu();
    let lat = Lattice::new([16, 16, 16, 16]).unwrap();
    let u = GaugeField::<f64>::random(lat, 41).cast::<f32>();
    let layout = |p: Parity| SpinorLayout::wilson(lat, SiteSubset::Single(p));
    let variant = |p: Parity| Variant {
        sites: OutputSites::Parity(p),
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        recon: Recon::R12,
        xpay: true,
        ..Variant::default()
    };
    let d_u = DeviceField::from_gauge(
        &gpu,
        &u,
        LinkFormat::new(StorageFormat::F32.link_storage(), Recon::R12.compression()),
    )
    .unwrap();
    let hops = [Parity::Even, Parity::Odd]
        .map(|p| DeviceStencil::of::<WilsonHop>(&gpu, &variant(p)).unwrap());
    let host_x = [Parity::Even, Parity::Odd]
        .map(|p| ColourSpinorField::<f64>::gaussian(layout(p), 42 + p as u64).cast::<f32>());
    let x = host_x
        .each_ref()
        .map(|f| DeviceField::from_spinor(&gpu, f, FermionFormat::F32).unwrap());
    let n = lat.half_volume();
    let cfg = tune::LaunchConfig::default_for(n);
    let chain = |dependent: bool| {
        gpu.set_dependent_launch(dependent);
        // fields[0] (even) starts as x_even; hop k writes the other parity from it.
        let mut fields = [
            DeviceField::from_spinor(&gpu, &host_x[0], FermionFormat::F32).unwrap(),
            device_spinor(&gpu, StorageFormat::F32, 24, n).unwrap(),
        ];
        for k in 0..12 {
            let out_parity = (k + 1) % 2; // odd, even, odd, …
            let (a, b) = fields.split_at_mut(1);
            let (src, dst) = if out_parity == 1 {
                (&a[0], &mut b[0])
            } else {
                (&b[0], &mut a[0])
            };
            let xp = DeviceXpay {
                a: 0.5,
                x: &x[out_parity],
                b: 0.0625,
            };
            hops[out_parity]
                .launch(
                    &gpu,
                    &lat,
                    StencilLaunch::default_build(cfg),
                    StencilArgs::new(dst, &[src, &d_u]).xpay(Some(&xp)),
                )
                .unwrap();
        }
        fields[0].download::<f32>(&gpu).unwrap()
    };
    let default = gpu.dependent_launch();
    let ordered = chain(false);
    let dependent = chain(true);
    gpu.set_dependent_launch(default);
    assert!(ordered.iter().all(|v| v.is_finite()));
    assert!(ordered.iter().any(|&v| v != 0.0));
    let differing = ordered
        .iter()
        .zip(&dependent)
        .filter(|(a, b)| a != b)
        .count();
    assert_eq!(
        differing,
        0,
        "dependent launches changed {differing} of {} reals",
        ordered.len()
    );
}

/// Device layouts (pure values, no GPU) pass or fail the check, and a mismatch
/// names both shapes; narrow storage passes by its width (the kernels decode it).
#[test]
fn field_checks_name_expected_and_found() {
    let f32_spinor = DeviceLayout::new(DeviceFormat::Fermion(FermionFormat::F32), 24, 192).unwrap();
    assert_eq!(shape(192, 1, 24, 4).check(&f32_spinor), Ok(()));
    let (expected, found) = shape(192, 1, 24, 8).check(&f32_spinor).unwrap_err();
    assert_eq!(expected, "192 sites × 1 × 24 reals of 8 bytes");
    assert_eq!(found, "192 sites × 1 × 24 reals of 4 bytes (f32)");
    let fixed = DeviceLayout::new(DeviceFormat::Fermion(FermionFormat::FIXED16), 24, 192).unwrap();
    assert_eq!(shape(192, 1, 24, 2).check(&fixed), Ok(()));
    assert!(shape(192, 1, 24, 4).check(&fixed).is_err());
    let links = DeviceLayout::new(
        DeviceFormat::Link(LinkFormat::new(
            StorageFormat::F32.link_storage(),
            Recon::R12.compression(),
        )),
        0,
        384,
    )
    .unwrap();
    assert_eq!(shape(384, 4, 12, 4).check(&links), Ok(()));
    assert!(shape(384, 4, 18, 4).check(&links).is_err());
}

/// GPU: the multi-right-hand-side hops (slices inside the block, tuned block.y) on N =
/// 8 sources equal N one-source launches of the grid-row kernel bit for bit (the same
/// arithmetic per site and source), for the Wilson hop (f32 recon 12, f64 recon 18)
/// and the improved staggered hop (f32), with every block.y the launch space offers;
/// a block.y that does not divide N is refused.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn multi_rhs_hops_equal_single_source_hops() {
    use qdsl_core::dsl::variant::Slices;
    use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
    let (gpu, _dir) = crate::testing::gpu();
    let lat = Lattice::new([8, 4, 4, 8]).unwrap();
    let (u, long) = (
        GaugeField::<f64>::random(lat, 51),
        GaugeField::<f64>::random(lat, 52),
    );
    let n = 8;
    let n4 = lat.half_volume();
    let cases = [
        (StorageFormat::F32, Recon::R12, false),
        (StorageFormat::F64, Recon::R18, false),
        (StorageFormat::F32, Recon::R18, true),
    ];
    for (format, recon, staggered) in cases {
        let single = Variant {
            sites: OutputSites::Parity(Parity::Odd),
            spinor: format,
            gauge: format,
            recon,
            ..Variant::default()
        };
        let batched = Variant {
            slices: Slices::InBlock,
            ..single
        };
        let (spins, reals) = if staggered { (1, 6) } else { (4, 24) };
        let layout =
            |ls, p: Parity| SpinorLayout::new(lat, ls, SiteSubset::Single(p), spins, 3).unwrap();
        let psi = ColourSpinorField::<f64>::gaussian(layout(n, Parity::Even), 53);
        let lf = LinkFormat::new(format.link_storage(), recon.compression());
        let d_u = DeviceField::from_gauge(&gpu, &u, lf).unwrap();
        let d_long = DeviceField::from_gauge(&gpu, &long, lf).unwrap();
        let make = |v: &Variant| match staggered {
            true => DeviceStencil::of::<ImprovedStaggeredHop>(&gpu, v).unwrap(),
            false => DeviceStencil::of::<WilsonHop>(&gpu, v).unwrap(),
        };
        let (hop_n, hop_1) = (make(&batched), make(&single));
        let links: Vec<&DeviceField> = if staggered {
            vec![&d_u, &d_long]
        } else {
            vec![&d_u]
        };
        // The N one-source results.
        let per = layout(1, Parity::Odd).len();
        let mut want = Vec::new();
        for k in 0..n {
            let psi_k = ColourSpinorField::from_data(
                layout(1, Parity::Even),
                psi.data()[k * per..(k + 1) * per].to_vec(),
            )
            .unwrap();
            let d_psi = DeviceField::from_spinor(&gpu, &psi_k, format.fermion_format()).unwrap();
            let mut d_out = device_spinor(&gpu, format, reals, n4).unwrap();
            let mut inputs = vec![&d_psi];
            inputs.extend(links.iter().copied());
            hop_1
                .launch(
                    &gpu,
                    &lat,
                    StencilLaunch::default_build(tune::LaunchConfig::default_for(n4)),
                    StencilArgs::new(&mut d_out, &inputs),
                )
                .unwrap();
            let got = d_out
                .to_spinor::<f64>(&gpu, layout(1, Parity::Odd))
                .unwrap();
            want.extend_from_slice(got.data());
        }
        let d_psi = DeviceField::from_spinor(&gpu, &psi, format.fermion_format()).unwrap();
        let mut inputs = vec![&d_psi];
        inputs.extend(links.iter().copied());
        let geometry = hop_n.geometry();
        for y in [1, 2, 4, 8] {
            let mut d_out = device_spinor(&gpu, format, reals, n * n4).unwrap();
            let cfg = tune::LaunchConfig::of(&geometry, [n4, n, 1], [32, y, 1], None, 0);
            hop_n
                .launch(
                    &gpu,
                    &lat,
                    StencilLaunch::default_build(cfg),
                    StencilArgs::new(&mut d_out, &inputs),
                )
                .unwrap();
            let got = d_out
                .to_spinor::<f64>(&gpu, layout(n, Parity::Odd))
                .unwrap();
            assert!(
                got.data() == want.as_slice(),
                "{format:?} recon {recon:?} staggered {staggered} block.y {y}"
            );
        }
        // block.y = 3 does not divide 8.
        let mut d_out = device_spinor(&gpu, format, reals, n * n4).unwrap();
        let cfg = tune::LaunchConfig::of(&geometry, [n4, n, 1], [32, 3, 1], None, 0);
        let e = hop_n
            .launch(
                &gpu,
                &lat,
                StencilLaunch::default_build(cfg),
                StencilArgs::new(&mut d_out, &inputs),
            )
            .unwrap_err();
        assert!(e.to_string().contains("dividing the 8 slices"), "{e}");
        // The tuned launch (per 5D volume) also matches.
        let tuner = crate::tune::Tuner::new(&_dir.path().join("tune.tsv"), gpu.fingerprint("test"))
            .with_default_policy(crate::tune::TunePolicy::Full)
            .with_progress(false);
        let mut d_out = device_spinor(&gpu, format, reals, n * n4).unwrap();
        hop_n
            .run(&gpu, &tuner, &lat, StencilArgs::new(&mut d_out, &inputs))
            .unwrap();
        let got = d_out
            .to_spinor::<f64>(&gpu, layout(n, Parity::Odd))
            .unwrap();
        assert!(got.data() == want.as_slice(), "tuned {format:?}");
    }
}
