//! Wilson-clover: the generated CPU code of `wilson_clover` and `clover_apply` against a
//! textbook loop (a dense 12 × 12 matrix per site and the Wilson hop written out with
//! dense γ matrices), for every variant; γ5-hermiticity; gauge covariance with the clover
//! field transforming as Ω A Ω†; flop and byte counts; CUDA snapshots; NVRTC compilation.

mod nvrtc;
mod stencil_support;

use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::variant::{OutputSites, Recon, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{Stencil, Variant};
use qdsl_core::field::{
    pack_clover_block, CloverField, ColourSpinorField, GaugeField, RandomStream, SiteSubset,
    SpinorLayout, StreamDomain,
};
use qdsl_core::gauge::GaugeTransform;
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_core::Real;
use qdsl_kernels::{CloverApply, WilsonClover};
use stencil_support::*;

/// A dense 12 × 12 matrix per site, indexed [lex][3 s + a][3 t + b].
type Dense = Vec<[[C; 12]; 12]>;

/// A random hermitian clover field, block diagonal in the spin pairs {0, 1}, {2, 3}, with
/// a diagonal shift `shift` (the (m + 4) of a clover term): the dense matrices by lex
/// index. Nothing here uses the packed layout.
fn random_dense_clover(lat: Lattice, seed: u64, shift: f64) -> Dense {
    (0..lat.volume())
        .map(|lex| {
            let mut s = RandomStream::new(seed, StreamDomain::User(11), lex as u64);
            let mut a = [[C::new(0.0, 0.0); 12]; 12];
            for b in 0..2 {
                for r in 0..6 {
                    a[6 * b + r][6 * b + r] = C::new(shift + 0.3 * s.gaussian_pair().0, 0.0);
                    for c in 0..r {
                        let z = s.gaussian_complex() * 0.3;
                        a[6 * b + r][6 * b + c] = z;
                        a[6 * b + c][6 * b + r] = z.conj();
                    }
                }
            }
            a
        })
        .collect()
}

/// The packed clover field of dense block-diagonal matrices (full lattice).
fn pack(lat: Lattice, dense: &Dense) -> CloverField<f64> {
    let mut f = CloverField::zeros(lat, SiteSubset::Full);
    for x in lat.sites_lex() {
        let a = &dense[lat.lex_index(x)];
        let site = f.site_mut(lat.cb_index(x));
        for b in 0..2 {
            let block: [[C; 6]; 6] =
                std::array::from_fn(|r| std::array::from_fn(|c| a[6 * b + r][6 * b + c]));
            pack_clover_block(&block, &mut site[36 * b..36 * b + 36]);
        }
    }
    f
}

/// The clover field on the sites an output subset needs.
fn clover_on(f: &CloverField<f64>, subset: SiteSubset) -> CloverField<f64> {
    match subset {
        SiteSubset::Full => f.clone(),
        SiteSubset::Single(p) => f.restrict(p).unwrap(),
    }
}

/// The textbook Wilson-clover operator on the full lattice,
///
/// (M ψ)(x) = A(x) ψ(x) − ½ (H ψ)(x) (H: [`textbook_wilson_hop`]),
///
/// or its adjoint M† = A† − ½ H† (A = A† here) for `dagger`; `hop = 0` gives A ψ.
fn textbook(
    u: &GaugeField<f64>,
    a: &Dense,
    psi: &Plain,
    dagger: bool,
    antiperiodic: bool,
    hop: f64,
) -> Plain {
    let lat = *u.lattice();
    let h = textbook_wilson_hop(u, psi, dagger, antiperiodic, None);
    lat.sites_lex()
        .map(|x| {
            let lx = lat.lex_index(x);
            (0..4)
                .map(|sp| {
                    std::array::from_fn(|c| {
                        let ax: C = (0..12)
                            .map(|j| a[lx][3 * sp + c][j] * psi[lx][j / 3][j % 3])
                            .sum();
                        ax - h[lx][sp][c] * (0.5 * hop)
                    })
                })
                .collect()
        })
        .collect()
}

/// a·x + b·y on plain fields.
fn axpby(a: f64, x: &Plain, b: f64, y: &Plain) -> Plain {
    x.iter()
        .zip(y)
        .map(|(p, q)| {
            p.iter()
                .zip(q)
                .map(|(u, v)| std::array::from_fn(|c| u[c] * a + v[c] * b))
                .collect()
        })
        .collect()
}

/// The fields of one test lattice, in f64.
struct Setup {
    lat: Lattice,
    u: GaugeField<f64>,
    dense: Dense,
    clover: CloverField<f64>,
    psi: Plain,
    x: Plain,
}

fn setup(seed: u64) -> Setup {
    let lat = Lattice::new([4, 2, 2, 4]).unwrap();
    let full = SpinorLayout::wilson(lat, SiteSubset::Full);
    let dense = random_dense_clover(lat, seed, 4.2);
    Setup {
        lat,
        u: random_gauge(lat, seed + 1),
        clover: pack(lat, &dense),
        dense,
        psi: to_plain(&ColourSpinorField::<f64>::gaussian(full, seed + 2)),
        x: to_plain(&ColourSpinorField::<f64>::gaussian(full, seed + 3)),
    }
}

/// Every CPU variant this test runs: output sites × dagger × xpay × boundary × (f64 with
/// recon 18, f32 with recon 12).
fn variants() -> Vec<Variant> {
    let mut out = Vec::new();
    for sites in [
        OutputSites::Parity(Parity::Even),
        OutputSites::Parity(Parity::Odd),
        OutputSites::Full,
    ] {
        for dagger in [false, true] {
            for xpay in [false, true] {
                for boundary in [TimeBoundary::Periodic, TimeBoundary::Antiperiodic] {
                    for (prec, recon) in [
                        (StorageFormat::F64, Recon::R18),
                        (StorageFormat::F32, Recon::R12),
                    ] {
                        out.push(Variant {
                            sites,
                            dagger,
                            xpay,
                            spinor: prec,
                            gauge: prec,
                            recon,
                            boundary,
                            dirichlet: None,
                            long_recon: Default::default(),
                            link_scale: Default::default(),
                            slices: Default::default(),
                            region: Default::default(),
                        });
                    }
                }
            }
        }
    }
    out
}

fn subset(v: &Variant) -> SiteSubset {
    match v.sites {
        OutputSites::Parity(p) => SiteSubset::Single(p),
        OutputSites::Full => SiteSubset::Full,
    }
}

/// Runs `wilson_clover` (or `clover_apply` when `hop` is false) in precision T.
fn run<T: Real>(st: &Setup, v: &Variant, hop: bool, (xa, xb): (f64, f64)) -> ColourSpinorField<T> {
    let sub = subset(v);
    let full = SpinorLayout::wilson(st.lat, SiteSubset::Full);
    let out_layout = SpinorLayout::wilson(st.lat, sub);
    let a = clover_on(&st.clover, sub).cast::<T>();
    let u = st.u.cast::<T>();
    let x = from_plain(&st.x, out_layout).cast::<T>();
    let xpay = v.xpay.then(|| Xpay {
        a: T::from_f64(xa),
        x: &x,
        b: T::from_f64(xb),
    });
    let mut out = ColourSpinorField::<T>::zeros(out_layout);
    if hop {
        let psi = from_plain(&st.psi, full).cast::<T>();
        WilsonClover
            .apply_cpu(v, &mut out, &psi, &u, &a, xpay)
            .unwrap();
    } else {
        let psi = from_plain(&st.psi, out_layout).cast::<T>();
        CloverApply.apply_cpu(v, &mut out, &psi, &a, xpay).unwrap();
    }
    out
}

/// The textbook result of a variant (`hop`: wilson_clover, else clover_apply).
fn want(st: &Setup, v: &Variant, hop: bool, (xa, xb): (f64, f64)) -> Plain {
    let anti = v.boundary == TimeBoundary::Antiperiodic;
    let m = textbook(
        &st.u,
        &st.dense,
        &st.psi,
        v.dagger,
        anti,
        if hop { 1.0 } else { 0.0 },
    );
    if v.xpay {
        axpby(xa, &st.x, xb, &m)
    } else {
        m
    }
}

/// wilson_clover equals the textbook M (or M†, with xpay a·x + b·M ψ) for every variant.
#[test]
fn wilson_clover_equals_textbook_for_every_variant() {
    let st = setup(40);
    let coeffs = (0.7, -1.3);
    for v in variants() {
        let want = want(&st, &v, true, coeffs);
        let err = match v.spinor {
            StorageFormat::F64 => rel_diff(&run::<f64>(&st, &v, true, coeffs), &want),
            _ => rel_diff(&run::<f32>(&st, &v, true, coeffs), &want),
        };
        let tol = if v.spinor == StorageFormat::F64 {
            1e-14
        } else {
            2e-6
        };
        assert!(err < tol, "{v}: {err:e}");
    }
}

/// clover_apply equals the dense textbook A ψ for every variant (dagger: A† = A).
#[test]
fn clover_apply_equals_textbook_for_every_variant() {
    let st = setup(50);
    let coeffs = (-0.4, 2.1);
    for v in variants()
        .into_iter()
        .filter(|v| v.boundary == TimeBoundary::Periodic && v.recon == Recon::R18)
    {
        let v = Variant {
            spinor: v.spinor,
            gauge: v.spinor,
            ..v
        };
        let want = want(&st, &v, false, coeffs);
        let err = match v.spinor {
            StorageFormat::F64 => rel_diff(&run::<f64>(&st, &v, false, coeffs), &want),
            _ => rel_diff(&run::<f32>(&st, &v, false, coeffs), &want),
        };
        let tol = if v.spinor == StorageFormat::F64 {
            1e-14
        } else {
            2e-6
        };
        assert!(err < tol, "{v}: {err:e}");
    }
}

/// γ5 = diag(1, 1, −1, −1) (DeGrand–Rossi) on a full field.
fn gamma5(f: &ColourSpinorField<f64>) -> ColourSpinorField<f64> {
    let mut out = f.clone();
    for (k, z) in out.data_mut().iter_mut().enumerate() {
        if (k % 12) / 3 >= 2 {
            *z = -*z;
        }
    }
    out
}

/// M on the full lattice by the generated code.
fn apply_full(
    u: &GaugeField<f64>,
    a: &CloverField<f64>,
    psi: &ColourSpinorField<f64>,
) -> ColourSpinorField<f64> {
    let v = Variant {
        sites: OutputSites::Full,
        ..Variant::default()
    };
    let mut out = ColourSpinorField::zeros(*psi.layout());
    WilsonClover
        .apply_cpu(&v, &mut out, psi, u, a, None)
        .unwrap();
    out
}

/// γ5 M γ5 = M† for a hermitian clover field: ⟨φ, γ5 M γ5 ψ⟩ = ⟨M φ, ψ⟩ (fails if the
/// clover blocks were applied transposed or the hop signs were wrong).
#[test]
fn wilson_clover_is_gamma5_hermitian() {
    let st = setup(60);
    let full = SpinorLayout::wilson(st.lat, SiteSubset::Full);
    let phi = ColourSpinorField::<f64>::gaussian(full, 61);
    let psi = ColourSpinorField::<f64>::gaussian(full, 62);
    let lhs = inner(&phi, &gamma5(&apply_full(&st.u, &st.clover, &gamma5(&psi))));
    let rhs = inner(&apply_full(&st.u, &st.clover, &phi), &psi);
    assert!((lhs - rhs).norm() < 1e-12 * lhs.norm(), "{lhs} vs {rhs}");
    // Without γ5 the identity fails: M itself is not hermitian.
    let wrong = inner(&phi, &apply_full(&st.u, &st.clover, &psi));
    assert!((wrong - rhs).norm() > 1e-3 * rhs.norm());
}

/// M[U^g, A^g](g ψ) = g M[U, A] ψ with U^g_μ(x) = g(x) U_μ(x) g(x + μ̂)† and
/// A^g(x) = g(x) A(x) g(x)† (g acting on colour, the same for every spin).
#[test]
fn wilson_clover_is_gauge_covariant() {
    let st = setup(70);
    let g: GaugeTransform<f64> = random_transform(st.lat, 71);
    let dense_g: Dense = st
        .lat
        .sites_lex()
        .map(|x| {
            let m = g.at(st.lat.cb_index(x)).0;
            let a = &st.dense[st.lat.lex_index(x)];
            std::array::from_fn(|i| {
                std::array::from_fn(|j| {
                    let (s, ca, t, cb) = (i / 3, i % 3, j / 3, j % 3);
                    let mut z = C::new(0.0, 0.0);
                    for c in 0..3 {
                        for d in 0..3 {
                            z += m[ca][c] * a[3 * s + c][3 * t + d] * m[cb][d].conj();
                        }
                    }
                    z
                })
            })
        })
        .collect();
    let full = SpinorLayout::wilson(st.lat, SiteSubset::Full);
    let psi = from_plain(&st.psi, full);
    let lhs = apply_full(
        &transform_links(&g, &st.u),
        &pack(st.lat, &dense_g),
        &transform_field(&g, &psi),
    );
    let rhs = transform_field(&g, &apply_full(&st.u, &st.clover, &psi));
    let err = max_abs_diff(&lhs, &rhs);
    assert!(err < 1e-12, "{err:e}");
    // The untransformed clover field breaks covariance.
    let broken = apply_full(
        &transform_links(&g, &st.u),
        &st.clover,
        &transform_field(&g, &psi),
    );
    assert!(max_abs_diff(&broken, &rhs) > 1e-3);
}

/// Flops: the clover matrix 504 (2 blocks × 6 rows × 42), each projected hop scaled by −½
/// 12 + 2 × 66 + 12 + 24 = 180, the clover term's accumulation free (first term); xpay
/// 3 × 24. Bytes (QUDA model, f32, recon 12): clover_apply reads ψ (96) and A (72 × 4)
/// and writes 96; wilson_clover adds 8 × (96 + 48).
#[test]
fn flops_and_bytes_follow_the_counts() {
    let f32_r12 = Variant {
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        recon: Recon::R12,
        ..Variant::default()
    };
    let info = CloverApply::info(&f32_r12).unwrap();
    assert_eq!(info.flops_per_site, 504);
    assert_eq!(info.bytes.quda, 96 + 288 + 96);
    assert_eq!(info.bytes.minimal, 96 + 288 + 96);
    let xpay = CloverApply::info(&Variant {
        xpay: true,
        ..Variant::default()
    })
    .unwrap();
    assert_eq!(xpay.flops_per_site, 504 + 72);
    assert_eq!(xpay.bytes.quda, 3 * 192 + 576);
    let info = WilsonClover::info(&f32_r12).unwrap();
    assert_eq!(info.flops_per_site, 504 + 8 * 180);
    assert_eq!(info.bytes.quda, 96 + 288 + 8 * (96 + 48) + 96);
}

fn f32_recon12_antiperiodic() -> Variant {
    Variant {
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        recon: Recon::R12,
        boundary: TimeBoundary::Antiperiodic,
        ..Variant::default()
    }
}

fn odd_dagger_xpay_f64() -> Variant {
    Variant {
        sites: OutputSites::Parity(Parity::Odd),
        dagger: true,
        xpay: true,
        ..Variant::default()
    }
}

/// The generated CUDA of representative variants (reviewed): the packed hermitian product
/// appears once, as a helper, and the clover field is a kernel parameter with a stride.
#[test]
fn clover_cuda_snapshots() {
    let src = WilsonClover::cuda_source(&f32_recon12_antiperiodic()).unwrap();
    assert!(src.contains("clover_mul(v, ca);") && src.contains("const float4* __restrict__ f_a"));
    insta::assert_snapshot!("wilson_clover_even_f32_recon12_antiperiodic", src);
    insta::assert_snapshot!(
        "clover_apply_odd_dagger_xpay_f64",
        CloverApply::cuda_source(&odd_dagger_xpay_f64()).unwrap()
    );
    // Deterministic: the same variant gives the same bytes.
    assert_eq!(
        WilsonClover::cuda_source(&odd_dagger_xpay_f64()).unwrap(),
        WilsonClover::cuda_source(&odd_dagger_xpay_f64()).unwrap()
    );
}

type Source = fn(&Variant) -> Result<String, qdsl_core::dsl::DslError>;
type Name = fn(&Variant) -> String;

/// The variants compiled here: every fifth of [`Variant::all`] (a spread over parities,
/// dagger, xpay, precisions, recon and boundaries: NVRTC takes about 2 s of CPU per
/// clover variant), or all of them with `QDSL_NVRTC_ALL=1`.
fn nvrtc_variants() -> Vec<Variant> {
    let all = std::env::var("QDSL_NVRTC_ALL").is_ok_and(|v| v == "1");
    Variant::all()
        .into_iter()
        .enumerate()
        .filter(|(k, _)| all || k % 5 == 0)
        .map(|(_, v)| v)
        .collect()
}

/// The clover kernels compile with NVRTC for sm_80 and sm_90 (one program per kernel and
/// architecture, [`nvrtc_variants`]); ptxas reports registers and spills (printed;
/// ignored where the build found no NVRTC or ptxas).
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn clover_kernels_compile_with_nvrtc() {
    let tc = nvrtc::Toolchain::load();
    let kernels: [(&str, Source, Name); 2] = [
        (
            "wilson_clover",
            WilsonClover::cuda_source,
            WilsonClover::kernel_name,
        ),
        (
            "clover_apply",
            CloverApply::cuda_source,
            CloverApply::kernel_name,
        ),
    ];
    for (name, source, kernel_name) in kernels {
        for arch in ["sm_80", "sm_90"] {
            let variants = nvrtc_variants();
            let mut program = String::new();
            for v in &variants {
                let src = source(v).unwrap();
                program.push_str(&format!(
                    "namespace variant_{:016x} {{\n{src}}}\n",
                    v.stable_hash()
                ));
            }
            let tag = format!("{name}_{arch}");
            let entries: Vec<String> = variants.iter().map(kernel_name).collect();
            let reports = tc.compile_checked(&program, &tag, arch, &entries, false);
            assert_eq!(reports.len(), variants.len());
            let regs = reports.iter().map(|(_, r)| r.registers);
            let spills: u32 = reports
                .iter()
                .map(|(_, r)| r.spill_stores + r.spill_loads)
                .sum();
            println!(
                "{name} {arch}: {} variants, {}..{} registers, {spills} spill bytes in all",
                reports.len(),
                regs.clone().min().unwrap_or(0),
                regs.max().unwrap_or(0)
            );
        }
    }
}
