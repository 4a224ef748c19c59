//! The generated CPU code of every `fused5d!` domain-wall chain of the catalog
//! ([`qdsl_kernels::domain_wall`]) against the hand-written textbook operator: random
//! links and fields, Ls = 4, 8, 12, Shamir, Möbius and zMöbius coefficients, both output
//! parities, with and without xpay, f64, f32 and fixed16 storage. The expected values
//! are written per chain from the textbook's pieces (plain loops: the Wilson hop, M5,
//! M_φ and their adjoints), M5⁻¹ and (M5†)⁻¹ by dense Gauss–Jordan inversion of the
//! textbook M5 (M5†) on one site — nothing of the closed form or the chain machinery.
//! The kernels' matrices are [`ChiralSOperator::of_piece`]'s, as a device operator binds
//! them.

use super::tests::{gauss_jordan_inverse, knobs, max_abs, max_diff, random_5d};
use super::textbook::{Textbook, C};
use super::{split_parities, ChiralSOperator, MobiusParams};
use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::fused5d::{ChiralMatrices, FusedVariant, SPiece};
use qdsl_core::dsl::variant::{OutputSites, Recon, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{DslError, Variant};
use qdsl_core::field::{ColourSpinorField, GaugeField};
use qdsl_core::lattice::{BoundaryConditions, Lattice, Parity};
use qdsl_core::Real;
use qdsl_kernels::domain_wall::*;

/// The textbook pieces on parity fields of `sites` sites per slice, and the hop between
/// parities.
struct Reference<'a> {
    tb: Textbook,
    u: &'a GaugeField<f64>,
    bcs: BoundaryConditions,
    /// The dense inverses of the textbook's M5 and M5† on one site (12 Ls × 12 Ls).
    m5_inverse: [Vec<Vec<C>>; 2],
}

impl<'a> Reference<'a> {
    fn new(params: &MobiusParams, u: &'a GaugeField<f64>) -> Self {
        let tb = Textbook::of(params);
        let n = 12 * tb.ls;
        let dense = |dagger: bool| {
            // Column j: M5 (M5†) applied to the unit vector e_j of a one-site field.
            let cols: Vec<Vec<C>> = (0..n)
                .map(|j| {
                    let mut e = vec![C::new(0.0, 0.0); n];
                    e[j] = C::new(1.0, 0.0);
                    tb.m5(&e, 1, dagger)
                })
                .collect();
            let m: Vec<Vec<C>> = (0..n)
                .map(|i| (0..n).map(|j| cols[j][i]).collect())
                .collect();
            gauss_jordan_inverse(m)
        };
        Self {
            m5_inverse: [dense(false), dense(true)],
            tb,
            u,
            bcs: BoundaryConditions::antiperiodic_time(),
        }
    }

    fn half(&self) -> usize {
        self.u.lattice().half_volume()
    }

    /// H ψ (dagger: H†) from parity `from` to the other parity: the textbook D_W with
    /// M5 = 4 is −½ H on the full lattice (zeros on the output parity's input).
    fn hop(&self, psi: &[C], from: Parity, dagger: bool) -> Vec<C> {
        let (ls, half) = (self.tb.ls, self.half());
        let offset = |p: Parity| if p == Parity::Even { 0 } else { half };
        let mut full = vec![C::new(0.0, 0.0); 2 * half * 12 * ls];
        for s in 0..ls {
            for x in 0..half * 12 {
                full[(s * 2 * half + offset(from)) * 12 + x] = psi[s * half * 12 + x];
            }
        }
        let tb = Textbook {
            m5: 4.0,
            ..self.tb.clone()
        };
        let w = tb.wilson(self.u, &self.bcs, &full, dagger);
        let to = offset(from.opposite());
        (0..ls)
            .flat_map(|s| (0..half * 12).map(move |x| (s, x)))
            .map(|(s, x)| w[(s * 2 * half + to) * 12 + x] * -2.0)
            .collect()
    }

    fn m_phi(&self, psi: &[C], dagger: bool) -> Vec<C> {
        self.tb.m_phi(psi, self.half(), dagger)
    }

    fn m5(&self, psi: &[C], dagger: bool) -> Vec<C> {
        self.tb.m5(psi, self.half(), dagger)
    }

    /// M5⁻¹ ψ (dagger: (M5†)⁻¹ ψ) by the dense inverse, site by site.
    fn m5_inverse(&self, psi: &[C], dagger: bool) -> Vec<C> {
        let (ls, half) = (self.tb.ls, self.half());
        let inv = &self.m5_inverse[usize::from(dagger)];
        let at = |s: usize, x: usize, k: usize| (s * half + x) * 12 + k;
        let mut out = vec![C::new(0.0, 0.0); psi.len()];
        for x in 0..half {
            let v: Vec<C> = (0..12 * ls).map(|i| psi[at(i / 12, x, i % 12)]).collect();
            for (i, row) in inv.iter().enumerate() {
                out[at(i / 12, x, i % 12)] = row.iter().zip(&v).map(|(a, b)| a * b).sum();
            }
        }
        out
    }
}

/// One chain: its name, whether it hops, the generated CPU code and the textbook value
/// (ψ on `from`, the result before xpay) and, for xpay, the operand's piece.
struct Case {
    name: &'static str,
    hops: bool,
    expected: fn(&Reference, &[C], Parity) -> Vec<C>,
    /// `Some(dagger)`: the xpay operand goes through M5 (M5†), and the chain needs xpay;
    /// `None`: the operand is x itself.
    xpay_m5: Option<bool>,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "mobius_dslash4",
            hops: true,
            expected: |r, psi, q| r.hop(psi, q, false),
            xpay_m5: None,
        },
        Case {
            name: "mobius_dslash4pre",
            hops: false,
            expected: |r, psi, _| r.m_phi(psi, false),
            xpay_m5: None,
        },
        Case {
            name: "mobius_dslash4_m5inv_m5pre",
            hops: true,
            expected: |r, psi, q| r.m_phi(&r.m5_inverse(&r.hop(psi, q, false), false), false),
            xpay_m5: None,
        },
        Case {
            name: "mobius_dslash4_xpay_m5mob",
            hops: true,
            expected: |r, psi, q| r.hop(psi, q, false),
            xpay_m5: Some(false),
        },
        Case {
            name: "mobius_m5pre_m5inv_dslash4_m5pre",
            hops: true,
            expected: |r, psi, q| {
                let h = r.hop(&r.m_phi(psi, false), q, false);
                r.m_phi(&r.m5_inverse(&h, false), false)
            },
            xpay_m5: None,
        },
        Case {
            name: "mspcg_mphi_dag_dw_dag",
            hops: true,
            expected: |r, psi, q| r.m_phi(&r.hop(psi, q, true), true),
            xpay_m5: None,
        },
        Case {
            name: "mspcg_m5inv_dag_mphi_dag_dw_dag",
            hops: true,
            expected: |r, psi, q| r.m5_inverse(&r.m_phi(&r.hop(psi, q, true), true), true),
            xpay_m5: None,
        },
        Case {
            name: "mspcg_m5inv_dag_m5inv_dw",
            hops: true,
            expected: |r, psi, q| r.m5_inverse(&r.m5_inverse(&r.hop(psi, q, false), false), true),
            xpay_m5: None,
        },
        Case {
            name: "mobius_hop_m5pre",
            hops: true,
            expected: |r, psi, q| r.hop(&r.m_phi(psi, false), q, false),
            xpay_m5: None,
        },
        Case {
            name: "mobius_mphidag_dslash4dag_xpay_m5dag",
            hops: true,
            expected: |r, psi, q| r.m_phi(&r.hop(psi, q, true), true),
            xpay_m5: Some(true),
        },
        Case {
            name: "mobius_mphi_dagger",
            hops: false,
            expected: |r, psi, _| r.m_phi(psi, true),
            xpay_m5: None,
        },
        Case {
            name: "mobius_m5",
            hops: false,
            expected: |r, psi, _| r.m5(psi, false),
            xpay_m5: None,
        },
        Case {
            name: "mobius_m5_dagger",
            hops: false,
            expected: |r, psi, _| r.m5(psi, true),
            xpay_m5: None,
        },
        Case {
            name: "mobius_m5inv",
            hops: false,
            expected: |r, psi, _| r.m5_inverse(psi, false),
            xpay_m5: None,
        },
        Case {
            name: "mobius_m5inv_dagger",
            hops: false,
            expected: |r, psi, _| r.m5_inverse(psi, true),
            xpay_m5: None,
        },
    ]
}

/// Runs the catalog chain `name`'s generated CPU code.
#[allow(clippy::too_many_arguments)]
fn run_generated<T: Real>(
    name: &str,
    v: &FusedVariant,
    m: &dyn Fn(SPiece) -> ChiralMatrices,
    out: &mut ColourSpinorField<T>,
    psi: &ColourSpinorField<T>,
    u: &GaugeField<T>,
    xpay: Option<Xpay<'_, T>>,
) -> Result<(), DslError> {
    match name {
        "mobius_dslash4" => MobiusDslash4.apply_cpu(v, m, out, psi, u, xpay),
        "mobius_dslash4pre" => MobiusDslash4pre.apply_cpu(v, m, out, psi, xpay),
        "mobius_dslash4_m5inv_m5pre" => MobiusDslash4M5invM5pre.apply_cpu(v, m, out, psi, u, xpay),
        "mobius_dslash4_xpay_m5mob" => MobiusDslash4XpayM5mob.apply_cpu(v, m, out, psi, u, xpay),
        "mobius_m5pre_m5inv_dslash4_m5pre" => {
            MobiusM5preM5invDslash4M5pre.apply_cpu(v, m, out, psi, u, xpay)
        }
        "mspcg_mphi_dag_dw_dag" => MspcgMphiDagDwDag.apply_cpu(v, m, out, psi, u, xpay),
        "mspcg_m5inv_dag_mphi_dag_dw_dag" => {
            MspcgM5invDagMphiDagDwDag.apply_cpu(v, m, out, psi, u, xpay)
        }
        "mspcg_m5inv_dag_m5inv_dw" => MspcgM5invDagM5invDw.apply_cpu(v, m, out, psi, u, xpay),
        "mobius_hop_m5pre" => MobiusHopM5pre.apply_cpu(v, m, out, psi, u, xpay),
        "mobius_mphidag_dslash4dag_xpay_m5dag" => {
            MobiusMphidagDslash4dagXpayM5dag.apply_cpu(v, m, out, psi, u, xpay)
        }
        "mobius_mphi_dagger" => MobiusMphiDagger.apply_cpu(v, m, out, psi, xpay),
        "mobius_m5" => MobiusM5.apply_cpu(v, m, out, psi, xpay),
        "mobius_m5_dagger" => MobiusM5Dagger.apply_cpu(v, m, out, psi, xpay),
        "mobius_m5inv" => MobiusM5inv.apply_cpu(v, m, out, psi, xpay),
        "mobius_m5inv_dagger" => MobiusM5invDagger.apply_cpu(v, m, out, psi, xpay),
        other => panic!("no case for chain {other}"),
    }
}

/// The chain's generated CPU result in precision T (storage `format`), as f64 data.
#[allow(clippy::too_many_arguments)]
fn generated<T: Real>(
    case: &Case,
    v: &FusedVariant,
    params: &MobiusParams,
    u: &GaugeField<f64>,
    psi: &ColourSpinorField<f64>,
    x: &ColourSpinorField<f64>,
    (a, b): (f64, f64),
) -> Vec<C> {
    let matrices = |p: SPiece| ChiralSOperator::of_piece(params, p).kernel_matrices();
    let (psi_t, x_t, u_t) = (psi.cast::<T>(), x.cast::<T>(), u.cast::<T>());
    let mut out = ColourSpinorField::<T>::zeros(*x.layout());
    let xpay = v.variant.xpay.then(|| Xpay {
        a: T::from_f64(a),
        x: &x_t,
        b: T::from_f64(b),
    });
    run_generated(case.name, v, &matrices, &mut out, &psi_t, &u_t, xpay)
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
    out.cast::<f64>().data().to_vec()
}

/// Every catalog chain's generated CPU code equals the textbook chain (see the module
/// docs) for every knob listed there.
#[test]
fn every_chain_equals_the_textbook() {
    let lattice = Lattice::new([4, 2, 2, 4]).unwrap();
    let u = GaugeField::<f64>::random(lattice, 5);
    let all = cases();
    assert_eq!(all.len(), chains().len(), "a catalog chain without a case");
    let mut worst = [0.0f64; 3];
    let mut count = 0;
    for ls in [4, 8, 12] {
        for (pname, params) in knobs(ls) {
            if pname == "mobius-heavy" {
                continue;
            }
            let r = Reference::new(&params, &u);
            let (even, odd) = split_parities(&random_5d(&u, ls, 17)).unwrap();
            let (xe, xo) = split_parities(&random_5d(&u, ls, 23)).unwrap();
            for out_parity in [Parity::Even, Parity::Odd] {
                let pick = |p: Parity, e: &ColourSpinorField<f64>, o: &ColourSpinorField<f64>| {
                    if p == Parity::Even {
                        e.clone()
                    } else {
                        o.clone()
                    }
                };
                let x = pick(out_parity, &xe, &xo);
                for case in &all {
                    let from = if case.hops {
                        out_parity.opposite()
                    } else {
                        out_parity
                    };
                    let psi = pick(from, &even, &odd);
                    let chain_value = (case.expected)(&r, psi.data(), from);
                    for xpay in [false, true] {
                        if case.xpay_m5.is_some() && !xpay {
                            continue;
                        }
                        let (a, b) = (0.7, -0.25);
                        let want: Vec<C> = if xpay {
                            let xx = match case.xpay_m5 {
                                Some(dagger) => r.m5(x.data(), dagger),
                                None => x.data().to_vec(),
                            };
                            xx.iter()
                                .zip(&chain_value)
                                .map(|(xv, cv)| xv * a + cv * b)
                                .collect()
                        } else {
                            chain_value.clone()
                        };
                        for (format, recon, tol) in [
                            (StorageFormat::F64, Recon::R18, 1e-13),
                            (StorageFormat::F32, Recon::R12, 5e-6),
                            (StorageFormat::Fixed16, Recon::R12, 5e-4),
                        ] {
                            let v = FusedVariant {
                                variant: Variant {
                                    sites: OutputSites::Parity(out_parity),
                                    xpay,
                                    spinor: format,
                                    gauge: format,
                                    recon,
                                    boundary: TimeBoundary::Antiperiodic,
                                    ..Variant::default()
                                },
                                ls,
                                m5inv: Default::default(),
                            };
                            let got = match format {
                                StorageFormat::F64 => {
                                    generated::<f64>(case, &v, &params, &u, &psi, &x, (a, b))
                                }
                                _ => generated::<f32>(case, &v, &params, &u, &psi, &x, (a, b)),
                            };
                            let err = max_diff(&got, &want) / max_abs(&want);
                            let slot = &mut worst[match format {
                                StorageFormat::F64 => 0,
                                StorageFormat::F32 => 1,
                                _ => 2,
                            }];
                            *slot = slot.max(err);
                            count += 1;
                            assert!(
                                err < tol,
                                "{} {pname} Ls {ls} {out_parity:?} xpay {xpay} {}: {err:e}",
                                case.name,
                                format.name()
                            );
                        }
                    }
                }
            }
        }
    }
    println!(
        "{count} chain runs; worst relative error: f64 {:.1e}, f32 {:.1e}, fixed16 {:.1e}",
        worst[0], worst[1], worst[2]
    );
}

/// The kernels' M5⁻¹ and (M5⁻¹)† matrices are the dense inverses of the textbook's M5
/// and M5† (every coefficient set, Ls = 4, 8, 12): what `chiral_m5inv[_dagger]` binds.
#[test]
fn m5_inverse_matrices_are_dense_inverses_of_the_textbook() {
    let u = GaugeField::<f64>::unit(Lattice::new([2, 2, 2, 2]).unwrap());
    for ls in [4, 8, 12] {
        for (pname, params) in knobs(ls) {
            let r = Reference::new(&params, &u);
            for dagger in [false, true] {
                let m = ChiralSOperator::of_piece(
                    &params,
                    SPiece {
                        op: qdsl_core::dsl::fused5d::SOp::M5Inv,
                        dagger,
                    },
                )
                .kernel_matrices();
                let inv = &r.m5_inverse[usize::from(dagger)];
                // Spin 0 colour 0 is P₊, spin 2 colour 0 is P₋: rows s·12 + k.
                for s in 0..ls {
                    for t in 0..ls {
                        let plus = inv[s * 12][t * 12];
                        let minus = inv[s * 12 + 6][t * 12 + 6];
                        assert!(
                            (m.plus[s * ls + t] - plus).norm() < 1e-12,
                            "{pname} Ls {ls} dagger {dagger} +({s},{t})"
                        );
                        assert!(
                            (m.minus[s * ls + t] - minus).norm() < 1e-12,
                            "{pname} Ls {ls} dagger {dagger} -({s},{t})"
                        );
                    }
                }
            }
            // M5 and M_φ (and adjoints) are what the sparse kernels assume.
            for op in [
                qdsl_core::dsl::fused5d::SOp::M5,
                qdsl_core::dsl::fused5d::SOp::MPhi,
            ] {
                for dagger in [false, true] {
                    let m =
                        ChiralSOperator::of_piece(&params, SPiece { op, dagger }).kernel_matrices();
                    assert!(
                        m.is_tridiagonal_periodic(),
                        "{pname} {op:?} dagger {dagger}"
                    );
                }
            }
        }
    }
}

/// GPU: every catalog chain launched on the device ([`DeviceStencil::fused`], blocks of
/// 8 sites × Ls, the matrices bound by name) equals its generated CPU code on the same
/// fields: 4⁴ × 6 random links, Möbius b5 = 1.5, c5 = 0.5 and zMöbius, Ls = 8 and 12,
/// both parities, f64 recon 18 and f32 recon 12 (xpay where the chain needs it).
///
/// [`DeviceStencil::fused`]: crate::operator::device::DeviceStencil::fused
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn every_chain_on_the_gpu_equals_the_cpu() {
    use crate::device::DeviceField;
    use crate::operator::device::{device_spinor, DeviceStencil, StencilArgs, StencilLaunch};
    use crate::operator::DeviceXpay;
    use crate::tune::LaunchConfig;
    use qdsl_core::field::{SiteSubset, SpinorLayout};
    use qdsl_core::format::LinkFormat;
    let (gpu, _dir) = crate::testing::gpu();
    let lat = Lattice::new([4, 4, 4, 6]).unwrap();
    let u = GaugeField::<f64>::random(lat, 41);
    let n4 = lat.half_volume();
    for ls in [8, 12] {
        for (pname, params) in knobs(ls) {
            if pname == "shamir" || pname == "mobius-heavy" {
                continue;
            }
            let layout =
                |p: Parity| SpinorLayout::new(lat, ls, SiteSubset::Single(p), 4, 3).unwrap();
            for out_parity in [Parity::Even, Parity::Odd] {
                for (format, recon) in [
                    (StorageFormat::F64, Recon::R18),
                    (StorageFormat::F32, Recon::R12),
                ] {
                    for e in chains() {
                        let chain = (e.chain)();
                        let from = if chain.hop_position().is_some() {
                            out_parity.opposite()
                        } else {
                            out_parity
                        };
                        let xpay = chain.xpay.is_some();
                        let v = FusedVariant {
                            variant: Variant {
                                sites: OutputSites::Parity(out_parity),
                                xpay,
                                spinor: format,
                                gauge: format,
                                recon,
                                boundary: TimeBoundary::Antiperiodic,
                                ..Variant::default()
                            },
                            ls,
                            m5inv: Default::default(),
                        };
                        let psi = ColourSpinorField::<f64>::gaussian(layout(from), 42);
                        let x = ColourSpinorField::<f64>::gaussian(layout(out_parity), 43);
                        let (a, b) = (1.0, -0.25);
                        let case = cases().into_iter().find(|c| c.name == e.name).unwrap();
                        let want = match format {
                            StorageFormat::F64 => {
                                generated::<f64>(&case, &v, &params, &u, &psi, &x, (a, b))
                            }
                            _ => generated::<f32>(&case, &v, &params, &u, &psi, &x, (a, b)),
                        };
                        let fermion = format.fermion_format();
                        let (d_psi, d_x, d_u) = match format {
                            StorageFormat::F64 => (
                                DeviceField::from_spinor(&gpu, &psi, fermion).unwrap(),
                                DeviceField::from_spinor(&gpu, &x, fermion).unwrap(),
                                DeviceField::from_gauge(
                                    &gpu,
                                    &u,
                                    LinkFormat::new(format.link_storage(), recon.compression()),
                                )
                                .unwrap(),
                            ),
                            _ => (
                                DeviceField::from_spinor(&gpu, &psi.cast::<f32>(), fermion)
                                    .unwrap(),
                                DeviceField::from_spinor(&gpu, &x.cast::<f32>(), fermion).unwrap(),
                                DeviceField::from_gauge(
                                    &gpu,
                                    &u.cast::<f32>(),
                                    LinkFormat::new(format.link_storage(), recon.compression()),
                                )
                                .unwrap(),
                            ),
                        };
                        let device_matrices = super::DeviceChainMatrices::upload(
                            &gpu,
                            &params,
                            &chain.matrices(),
                            format == StorageFormat::F64,
                        )
                        .unwrap();
                        let matrices = device_matrices.bindings();
                        let mut d_out = device_spinor(&gpu, format, 24, ls * n4).unwrap();
                        let kernel = DeviceStencil::fused(&gpu, &chain, (e.hop)(), &v).unwrap();
                        let inputs: Vec<&DeviceField> = if chain.hop_position().is_some() {
                            vec![&d_psi, &d_u]
                        } else {
                            vec![&d_psi]
                        };
                        let dx = DeviceXpay { a, x: &d_x, b };
                        let launch = LaunchConfig {
                            block: [8, ls as u32, 1],
                            grid: [(n4 / 8) as u32, 1, 1],
                            shared_bytes: 0,
                        };
                        kernel
                            .launch(
                                &gpu,
                                &lat,
                                StencilLaunch::default_build(launch),
                                StencilArgs::new(&mut d_out, &inputs)
                                    .xpay(xpay.then_some(&dx))
                                    .matrices(&matrices),
                            )
                            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
                        let got: Vec<C> = match format {
                            StorageFormat::F64 => d_out
                                .to_spinor::<f64>(&gpu, layout(out_parity))
                                .unwrap()
                                .data()
                                .to_vec(),
                            _ => d_out
                                .to_spinor::<f32>(&gpu, layout(out_parity))
                                .unwrap()
                                .cast::<f64>()
                                .data()
                                .to_vec(),
                        };
                        let err = max_diff(&got, &want) / max_abs(&want);
                        let tol = if format == StorageFormat::F64 {
                            1e-13
                        } else {
                            1e-5
                        };
                        assert!(
                            err < tol,
                            "{} {pname} Ls {ls} {out_parity:?} {}: {err:e}",
                            e.name,
                            format.name()
                        );
                    }
                }
            }
        }
    }
}

/// The fused complement's launches ([`complement_launches`]: the chains the device
/// operator runs, their parities, sources, destinations and xpay) run with each chain's
/// generated CPU code, intermediates stored in the format.
#[allow(clippy::too_many_arguments)]
fn plan_on_the_cpu<T: Real>(
    launches: &[super::device::Launch],
    params: &MobiusParams,
    u: &GaugeField<f64>,
    psi: &ColourSpinorField<f64>,
    layout: &dyn Fn(Parity) -> qdsl_core::field::SpinorLayout,
    (format, recon): (StorageFormat, Recon),
) -> Vec<C> {
    use super::device::{run_launches, COMPLEMENT_XPAY_B};
    let matrices = |p: SPiece| ChiralSOperator::of_piece(params, p).kernel_matrices();
    let (u_t, psi_t) = (u.cast::<T>(), psi.cast::<T>());
    let zeros = |p: Parity| ColourSpinorField::<T>::zeros(layout(p));
    let (mut out, mut spare_p, mut spare_q) =
        (zeros(Parity::Even), zeros(Parity::Even), zeros(Parity::Odd));
    run_launches(
        launches,
        &psi_t,
        &mut out,
        &mut spare_p,
        &mut spare_q,
        |l, src, dst, x| {
            let r = if l.to_p { Parity::Even } else { Parity::Odd };
            let v = FusedVariant {
                variant: Variant {
                    sites: OutputSites::Parity(r),
                    xpay: l.xpay,
                    spinor: format,
                    gauge: format,
                    recon,
                    boundary: TimeBoundary::Antiperiodic,
                    ..Variant::default()
                },
                ls: params.ls(),
                m5inv: Default::default(),
            };
            let xpay = x.map(|x| Xpay {
                a: T::from_f64(1.0),
                x,
                b: T::from_f64(COMPLEMENT_XPAY_B),
            });
            run_generated(&l.chain_name(), &v, &matrices, dst, src, &u_t, xpay)
        },
    )
    .unwrap_or_else(|e| panic!("{launches:?}: {e}"));
    out.cast::<f64>().data().to_vec()
}

/// What the device M̂ launches, proven on the CPU: the launch plans of the fused
/// complement (QUDA's three kernels, the two-kernel plan; M̂† in two), each chain run by
/// its generated CPU code, equal the host [`EvenOddMobius`]'s M̂ and M̂† on random links
/// and fields: Ls = 4 and 8, every coefficient set, f64 (1e-13), f32 (1e-5) and fixed16
/// (2e-3, relative to the largest component).
#[test]
fn the_device_launch_plans_equal_the_host_operator() {
    use super::device::complement_launches;
    use super::{ComplementPlan, EvenOddMobius};
    use qdsl_core::field::{SiteSubset, SpinorLayout};
    let lattice = Lattice::new([4, 2, 2, 4]).unwrap();
    let u = GaugeField::<f64>::random(lattice, 5);
    let mut worst = [0.0f64; 3];
    for ls in [4, 8] {
        for (pname, params) in knobs(ls) {
            let host = EvenOddMobius::asymmetric(
                u.clone(),
                params.clone(),
                Parity::Even,
                TimeBoundary::Antiperiodic,
            )
            .unwrap();
            let layout =
                |p: Parity| SpinorLayout::new(lattice, ls, SiteSubset::Single(p), 4, 3).unwrap();
            let psi = ColourSpinorField::<f64>::gaussian(layout(Parity::Even), 31);
            for dagger in [false, true] {
                let mut want = ColourSpinorField::zeros(layout(Parity::Even));
                host.apply_in((), &mut want, &psi, dagger).unwrap();
                for plan in [ComplementPlan::Quda, ComplementPlan::SourceFused] {
                    let launches = complement_launches(plan, dagger);
                    for (k, (format, recon, tol)) in [
                        (StorageFormat::F64, Recon::R18, 1e-13),
                        (StorageFormat::F32, Recon::R12, 1e-5),
                        (StorageFormat::Fixed16, Recon::R12, 2e-3),
                    ]
                    .into_iter()
                    .enumerate()
                    {
                        let got = match format {
                            StorageFormat::F64 => plan_on_the_cpu::<f64>(
                                &launches,
                                &params,
                                &u,
                                &psi,
                                &layout,
                                (format, recon),
                            ),
                            _ => plan_on_the_cpu::<f32>(
                                &launches,
                                &params,
                                &u,
                                &psi,
                                &layout,
                                (format, recon),
                            ),
                        };
                        let err = max_diff(&got, want.data()) / max_abs(want.data());
                        worst[k] = worst[k].max(err);
                        assert!(
                            err < tol,
                            "{pname} Ls {ls} {plan:?} dagger {dagger} {}: {err:e}",
                            format.name()
                        );
                    }
                }
            }
        }
    }
    println!(
        "worst relative error: f64 {:.1e}, f32 {:.1e}, fixed16 {:.1e}",
        worst[0], worst[1], worst[2]
    );
}
