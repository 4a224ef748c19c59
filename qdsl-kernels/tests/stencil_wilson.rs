//! The generated Wilson hop against a hand-written textbook Wilson hop, the free-field
//! spectrum, γ5-hermiticity and gauge covariance.
// The textbook operators are written as index loops on purpose (as in a paper).
#![allow(clippy::needless_range_loop)]

mod stencil_support;

use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::variant::{OutputSites, Recon, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{Stencil, Variant};
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::format::{FermionFormat, LinkFormat, LinkSign};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_core::math::ColourMatrix;
use qdsl_core::Complex;
use qdsl_kernels::WilsonHop;
use stencil_support::*;

/// Textbook Wilson hop on the full lattice:
/// out(x) = Σ_μ (1 − s γ_μ) U_μ(x) ψ(x+μ̂) b(x,+μ) + (1 + s γ_μ) U_μ†(x−μ̂) ψ(x−μ̂) b(x,−μ),
/// with s = −1 for the dagger form γ5 H γ5 (s = +1 otherwise) and b the boundary sign.
fn textbook_hop(u: &GaugeField<f64>, psi: &Plain, dagger: bool, antiperiodic: bool) -> Plain {
    let lat = *u.lattice();
    let g = gammas();
    let s = if dagger { -1.0 } else { 1.0 };
    let mut out = vec![vec![[C::new(0.0, 0.0); 3]; 4]; lat.volume()];
    for lex in 0..lat.volume() {
        let x = lat.coords_of_lex(lex);
        for mu in 0..4 {
            for (dir, proj_sign) in [(1isize, -s), (-1isize, s)] {
                let (y, wraps) = lat.shift(x, mu, dir);
                let sign = if antiperiodic && mu == 3 && wraps != 0 {
                    -1.0
                } else {
                    1.0
                };
                let link: ColourMatrix<f64> = if dir == 1 {
                    *u.link_at(x, mu)
                } else {
                    u.link_at(y, mu).adjoint()
                };
                // U ψ(y) for each spin.
                let mut v = [[C::new(0.0, 0.0); 3]; 4];
                for sp in 0..4 {
                    for a in 0..3 {
                        for b in 0..3 {
                            v[sp][a] += link.0[a][b] * psi[lat.lex_index(y)][sp][b];
                        }
                    }
                }
                // (1 + proj_sign γ_μ) v.
                for sp in 0..4 {
                    for a in 0..3 {
                        let mut z = v[sp][a];
                        for t in 0..4 {
                            z += g[mu][sp][t] * v[t][a] * proj_sign;
                        }
                        out[lex][sp][a] += z * sign;
                    }
                }
            }
        }
    }
    out
}

fn lattice() -> Lattice {
    Lattice::new([4, 2, 4, 6]).unwrap()
}

fn output_parity(v: &Variant) -> Option<Parity> {
    match v.sites {
        OutputSites::Parity(p) => Some(p),
        OutputSites::Full => None,
    }
}

/// Runs the generated hop for a variant, in precision T, from full-lattice inputs.
fn run<T: qdsl_core::Real>(
    v: &Variant,
    u: &GaugeField<f64>,
    psi: &Plain,
    x: &Plain,
    (a, b): (f64, f64),
) -> ColourSpinorField<T> {
    let lat = *u.lattice();
    let out_subset = subset_of(output_parity(v));
    let in_subset = match out_subset {
        SiteSubset::Single(p) => SiteSubset::Single(p.opposite()),
        SiteSubset::Full => SiteSubset::Full,
    };
    let psi_f = from_plain(psi, SpinorLayout::wilson(lat, in_subset)).cast::<T>();
    let x_f = from_plain(x, SpinorLayout::wilson(lat, out_subset)).cast::<T>();
    let mut out = ColourSpinorField::<T>::zeros(SpinorLayout::wilson(lat, out_subset));
    let xpay = v.xpay.then_some(Xpay {
        a: T::from_f64(a),
        x: &x_f,
        b: T::from_f64(b),
    });
    WilsonHop
        .apply_cpu(v, &mut out, &psi_f, &u.cast::<T>(), xpay)
        .unwrap();
    out
}

/// Every variant (sites × dagger × xpay × f32/f64 × recon 18/12 × boundary) equals the
/// textbook hop to rounding on a random SU(3) field and a random spinor.
#[test]
fn generated_hop_equals_textbook_hop_for_every_variant() {
    let lat = lattice();
    let u = random_gauge(lat, 1);
    let psi = to_plain(&ColourSpinorField::gaussian(
        SpinorLayout::wilson(lat, SiteSubset::Full),
        2,
    ));
    let x = to_plain(&ColourSpinorField::gaussian(
        SpinorLayout::wilson(lat, SiteSubset::Full),
        3,
    ));
    let (a, b) = (0.7, -0.35);
    let mut checked = 0;
    for v in Variant::all() {
        let ap = v.boundary == TimeBoundary::Antiperiodic;
        let mut want = textbook_hop(&u, &psi, v.dagger, ap);
        if v.xpay {
            for (w, xs) in want.iter_mut().zip(&x) {
                for (ws, xss) in w.iter_mut().zip(xs) {
                    for (z, xz) in ws.iter_mut().zip(xss) {
                        *z = *xz * a + *z * b;
                    }
                }
            }
        }
        let (err, tol) = match v.spinor {
            StorageFormat::F64 => (
                rel_diff(&run::<f64>(&v, &u, &psi, &x, (a, b)), &want),
                1e-13,
            ),
            // f32 and the narrow formats (which compute in f32).
            _ => (rel_diff(&run::<f32>(&v, &u, &psi, &x, (a, b)), &want), 3e-6),
        };
        assert!(err < tol, "{v}: relative error {err:e}");
        checked += 1;
    }
    assert_eq!(checked, 96);
}

/// Recon 12 rebuilds row 2 from rows 0 and 1: on a non-unitary field the recon-12 result
/// differs from recon 18 (the knob really acts), on SU(3) links it does not.
#[test]
fn recon12_assumes_su3_links() {
    let lat = lattice();
    let psi = to_plain(&ColourSpinorField::gaussian(
        SpinorLayout::wilson(lat, SiteSubset::Full),
        2,
    ));
    let v18 = Variant {
        sites: OutputSites::Full,
        ..Variant::default()
    };
    let v12 = Variant {
        recon: Recon::R12,
        ..v18
    };
    let m = random_matrices(lat, 4);
    let want = textbook_hop(&m, &psi, false, false);
    assert!(rel_diff(&run::<f64>(&v18, &m, &psi, &psi, (0.0, 0.0)), &want) < 1e-13);
    assert!(rel_diff(&run::<f64>(&v12, &m, &psi, &psi, (0.0, 0.0)), &want) > 1e-2);
}

/// Free field: M = (4 + m) − H/2 on a plane wave e^{ip·x} u satisfies
/// (M − α)² + β² = 0 with α = m + Σ_μ(1 − cos p_μ), β² = Σ_μ sin² p_μ, i.e. its eigenvalues
/// are α ± iβ; with antiperiodic time p_t = (2n + 1)π/L_t.
#[test]
fn free_field_plane_waves_have_the_wilson_spectrum() {
    let lat = Lattice::new([4, 4, 6, 8]).unwrap();
    let unit = GaugeField::<f64>::unit(lat);
    let mass = 0.13;
    for (boundary, nt) in [
        (TimeBoundary::Periodic, 2.0),
        (TimeBoundary::Antiperiodic, 3.0),
    ] {
        let lt = lat.extent(3) as f64;
        let pt = if boundary == TimeBoundary::Periodic {
            2.0 * nt * std::f64::consts::PI / lt
        } else {
            (2.0 * nt + 1.0) * std::f64::consts::PI / lt
        };
        let p = [
            2.0 * std::f64::consts::PI / 4.0,
            0.0,
            4.0 * std::f64::consts::PI / 6.0,
            pt,
        ];
        let spin_colour: Vec<C> = (0..12)
            .map(|k| C::new(1.0 + k as f64, 0.5 - k as f64 * 0.3))
            .collect();
        let layout = SpinorLayout::wilson(lat, SiteSubset::Full);
        let wave = ColourSpinorField::<f64>::from_fn(layout, |_, x, s, a| {
            let phase: f64 = (0..4).map(|m| p[m] * x[m] as f64).sum();
            Complex::from_polar(1.0, phase) * spin_colour[3 * s + a]
        });
        let v = Variant {
            sites: OutputSites::Full,
            xpay: true,
            boundary,
            ..Variant::default()
        };
        let apply = |f: &ColourSpinorField<f64>| {
            let mut out = ColourSpinorField::zeros(layout);
            WilsonHop
                .apply_cpu(
                    &v,
                    &mut out,
                    f,
                    &unit,
                    Some(Xpay {
                        a: 4.0 + mass,
                        x: f,
                        b: -0.5,
                    }),
                )
                .unwrap();
            out
        };
        let m1 = apply(&wave);
        let m2 = apply(&m1);
        let alpha = mass + p.iter().map(|q| 1.0 - q.cos()).sum::<f64>();
        let beta2: f64 = p.iter().map(|q| q.sin().powi(2)).sum();
        let mut worst = 0.0f64;
        for ((z2, z1), z0) in m2.data().iter().zip(m1.data()).zip(wave.data()) {
            let r = z2 - z1 * (2.0 * alpha) + z0 * (alpha * alpha + beta2);
            worst = worst.max(r.norm() / z0.norm());
        }
        assert!(worst < 1e-12, "{boundary:?}: residual {worst:e}");
        // The wave is not an eigenvector of a wrong spectrum: β² matters.
        let wrong = m2.data()[0] - m1.data()[0] * (2.0 * alpha) + wave.data()[0] * (alpha * alpha);
        assert!(wrong.norm() > 1e-3);
    }
}

/// The dagger knob gives the adjoint: ⟨φ, H_eo ψ⟩ = ⟨H†_oe φ, ψ⟩ for random fields and
/// links, both boundaries; and H† = γ5 H γ5 (γ5 = diag(1, 1, −1, −1)).
#[test]
fn dagger_knob_is_the_adjoint_and_gamma5_conjugation() {
    let lat = lattice();
    let u = random_gauge(lat, 8);
    for boundary in [TimeBoundary::Periodic, TimeBoundary::Antiperiodic] {
        let even = SpinorLayout::wilson(lat, SiteSubset::Single(Parity::Even));
        let odd = SpinorLayout::wilson(lat, SiteSubset::Single(Parity::Odd));
        let psi = ColourSpinorField::<f64>::gaussian(odd, 9);
        let phi = ColourSpinorField::<f64>::gaussian(even, 10);
        let d = Variant {
            boundary,
            ..Variant::default()
        };
        let ddag = Variant {
            sites: OutputSites::Parity(Parity::Odd),
            dagger: true,
            ..d
        };
        let mut h_psi = ColourSpinorField::zeros(even);
        WilsonHop.apply_cpu(&d, &mut h_psi, &psi, &u, None).unwrap();
        let mut hdag_phi = ColourSpinorField::zeros(odd);
        WilsonHop
            .apply_cpu(&ddag, &mut hdag_phi, &phi, &u, None)
            .unwrap();
        let (l, r) = (inner(&phi, &h_psi), inner(&hdag_phi, &psi));
        assert!(
            (l - r).norm() < 1e-12 * l.norm(),
            "{boundary:?}: {l} vs {r}"
        );
        // γ5 H γ5 ψ.
        let g5 = |f: &ColourSpinorField<f64>| {
            let layout = *f.layout();
            ColourSpinorField::from_fn(layout, |_, x, s, a| {
                let z = f.get(0, x, s, a).unwrap();
                if s < 2 {
                    z
                } else {
                    -z
                }
            })
        };
        let mut h_g5 = ColourSpinorField::zeros(even);
        WilsonHop
            .apply_cpu(&d, &mut h_g5, &g5(&psi), &u, None)
            .unwrap();
        let mut hdag_psi = ColourSpinorField::zeros(even);
        WilsonHop
            .apply_cpu(
                &Variant { dagger: true, ..d },
                &mut hdag_psi,
                &psi,
                &u,
                None,
            )
            .unwrap();
        let lhs = g5(&h_g5);
        let diff: f64 = lhs
            .data()
            .iter()
            .zip(hdag_psi.data())
            .map(|(a, b)| (a - b).norm())
            .fold(0.0, f64::max);
        assert!(diff < 1e-12, "{diff:e}");
    }
}

/// Gauge covariance: H[U^g] (g ψ) = g H[U] ψ with U^g_μ(x) = g(x) U_μ(x) g(x+μ̂)†.
#[test]
fn hop_is_gauge_covariant() {
    let lat = lattice();
    let u = random_gauge(lat, 11);
    let g = random_transform(lat, 12);
    let ug = transform_links(&g, &u);
    let rotate = |f: &ColourSpinorField<f64>| transform_field(&g, f);
    for v in [
        Variant {
            boundary: TimeBoundary::Antiperiodic,
            ..Variant::default()
        },
        Variant {
            sites: OutputSites::Full,
            dagger: true,
            ..Variant::default()
        },
    ] {
        let (out_l, in_l) = match v.sites {
            OutputSites::Full => (SiteSubset::Full, SiteSubset::Full),
            OutputSites::Parity(p) => (SiteSubset::Single(p), SiteSubset::Single(p.opposite())),
        };
        let psi = ColourSpinorField::<f64>::gaussian(SpinorLayout::wilson(lat, in_l), 13);
        let mut a = ColourSpinorField::zeros(SpinorLayout::wilson(lat, out_l));
        WilsonHop
            .apply_cpu(&v, &mut a, &rotate(&psi), &ug, None)
            .unwrap();
        let mut b = ColourSpinorField::zeros(SpinorLayout::wilson(lat, out_l));
        WilsonHop.apply_cpu(&v, &mut b, &psi, &u, None).unwrap();
        let diff = max_abs_diff(&a, &rotate(&b));
        assert!(diff < 1e-12, "{v}: {diff:e}");
    }
}

/// Wrong fields are errors naming the field, never panics.
#[test]
fn mismatched_fields_are_reported() {
    let lat = lattice();
    let u = GaugeField::<f64>::unit(lat);
    let even = SpinorLayout::wilson(lat, SiteSubset::Single(Parity::Even));
    let psi = ColourSpinorField::<f64>::zeros(even);
    let mut out = ColourSpinorField::<f64>::zeros(even);
    let err = WilsonHop
        .apply_cpu(&Variant::default(), &mut out, &psi, &u, None)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("field `psi`: expected 4×2×4×6 × Ls 1, odd sites"),
        "{err}"
    );
    let v = Variant {
        xpay: true,
        ..Variant::default()
    };
    let odd = ColourSpinorField::<f64>::zeros(even.with_subset(SiteSubset::Single(Parity::Odd)));
    let err = WilsonHop
        .apply_cpu(&v, &mut out, &odd, &u, None)
        .unwrap_err();
    assert!(err.to_string().contains("xpay"), "{err}");
    let other = GaugeField::<f64>::unit(Lattice::new([2, 2, 2, 2]).unwrap());
    let err = WilsonHop
        .apply_cpu(&Variant::default(), &mut out, &odd, &other, None)
        .unwrap_err();
    assert!(err.to_string().contains("field `u`"), "{err}");
}

/// The catalog entry's info: 1320 flops; bytes per site under both models, hand-counted:
/// QUDA f32 recon 12: (8·(24 + 12) + 24)·4 = 1248; minimal: (24 + 8·12 + 24)·4 = 576.
#[test]
fn wilson_info_counts() {
    let v = Variant {
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        recon: Recon::R12,
        ..Variant::default()
    };
    let info = WilsonHop::info(&v).unwrap();
    assert_eq!(info.name, "wilson_hop");
    assert_eq!(info.flops_per_site, 1320);
    assert_eq!((info.bytes.quda, info.bytes.minimal), (1248, 576));
    // f64 recon 18 with xpay: QUDA (8·(24 + 18) + 24 + 24)·8 = 3072.
    let v = Variant {
        xpay: true,
        ..Variant::default()
    };
    let info = WilsonHop::info(&v).unwrap();
    assert_eq!(info.bytes.quda, 3072);
    assert_eq!(info.flops_per_site, 1320 + 72);
    assert!(info.knobs.contains(&("dagger", vec!["false", "true"])));
    assert!(info.knobs.contains(&("recon", vec!["18", "12", "8"])));
    assert_eq!(info.bytes_by_format.len(), 6 * 6 * 3);
    // Narrow formats, QUDA model = out + 8 · (site + link): fixed16 site = 4-byte norm +
    // 24 · 2 = 52, fixed16 recon-8 link = 16: 52 + 8 · 68 = 596; f16 site 48, f16
    // recon-12 link 24: 48 + 8 · 72 = 624.
    for (spinor, gauge, recon, quda) in [
        (
            StorageFormat::Fixed16,
            StorageFormat::Fixed16,
            Recon::R8,
            596,
        ),
        (StorageFormat::F16, StorageFormat::F16, Recon::R12, 624),
    ] {
        let v = Variant {
            spinor,
            gauge,
            recon,
            ..Variant::default()
        };
        assert_eq!(WilsonHop::info(&v).unwrap().bytes.quda, quda, "{v}");
    }
}

/// One site rounded through a fermion format's byte encoding (qdsl_core::format).
fn stored_site(format: FermionFormat, site: &[[C; 3]]) -> Vec<[C; 3]> {
    let reals: Vec<f64> = site.iter().flatten().flat_map(|z| [z.re, z.im]).collect();
    let mut bytes = vec![0u8; format.bytes_per_site(reals.len())];
    format.encode(&reals, &mut bytes).unwrap();
    let mut back = vec![0.0f64; reals.len()];
    format.decode(&bytes, &mut back).unwrap();
    back.chunks_exact(6)
        .map(|s| std::array::from_fn(|a| C::new(s[2 * a], s[2 * a + 1])))
        .collect()
}

/// Narrow storage formats (f16, bf16, fixed16, fixed8 fermions; the same or f32 links with
/// recon 18, 12 and 8): the generated hop equals the textbook hop applied to the inputs as
/// the format stores them (sites and links round-tripped through the qdsl_core::format
/// byte encodings), with the output rounded through the format too. Independently, it
/// differs from the exact hop by a nonzero amount below the format's resolution, and a
/// fixed8 output site lies on its grid v = k · norm/127 with norm = max |v|.
#[test]
fn narrow_formats_equal_the_textbook_hop_on_stored_fields() {
    let lat = lattice();
    let u = random_gauge(lat, 41);
    let full = SpinorLayout::wilson(lat, SiteSubset::Full);
    let psi = to_plain(&ColourSpinorField::<f64>::gaussian(full, 42));
    let exact = textbook_hop(&u, &psi, false, false);
    // (format, upper bound on the relative error against the exact hop)
    for (spinor, resolution) in [
        (StorageFormat::F16, 4e-3),
        (StorageFormat::BF16, 3e-2),
        (StorageFormat::Fixed16, 1e-3),
        (StorageFormat::Fixed8, 1e-1),
    ] {
        for (gauge, recon) in [
            (spinor, Recon::R18),
            (spinor, Recon::R12),
            (StorageFormat::F32, Recon::R8),
        ] {
            let v = Variant {
                sites: OutputSites::Full,
                spinor,
                gauge,
                recon,
                ..Variant::default()
            };
            let ff = spinor.fermion_format();
            let lf = LinkFormat::new(gauge.link_storage(), recon.compression());
            let u_stored = GaugeField::from_fn(lat, |c, mu| {
                let mut bytes = vec![0u8; lf.bytes_per_link()];
                lf.encode(u.link_at(c, mu), LinkSign::Plus, &mut bytes)
                    .unwrap();
                lf.decode::<f64>(&bytes, LinkSign::Plus).unwrap()
            });
            let psi_stored: Plain = psi.iter().map(|s| stored_site(ff, s)).collect();
            let want: Plain = textbook_hop(&u_stored, &psi_stored, false, false)
                .iter()
                .map(|s| stored_site(ff, s))
                .collect();
            let mut out = ColourSpinorField::<f64>::zeros(full);
            WilsonHop
                .apply_cpu(&v, &mut out, &from_plain(&psi, full), &u, None)
                .unwrap();
            let err = rel_diff(&out, &want);
            assert!(
                err < 1e-12,
                "{v}: relative difference {err:e} from the stored textbook hop"
            );
            let vs_exact = rel_diff(&out, &exact);
            assert!(
                vs_exact > 0.0 && vs_exact < resolution,
                "{v}: {vs_exact:e} from the exact hop"
            );
            if spinor == StorageFormat::Fixed8 {
                for site in to_plain(&out) {
                    let reals: Vec<f64> =
                        site.iter().flatten().flat_map(|z| [z.re, z.im]).collect();
                    let norm = reals.iter().fold(0.0f64, |m, r| m.max(r.abs()));
                    for r in reals {
                        let k = r * 127.0 / norm;
                        assert!(
                            (k - k.round()).abs() < 1e-4,
                            "{v}: {r} is not on the grid of {norm}"
                        );
                    }
                }
            }
        }
    }
}

/// The CUDA emitter generates every storage format and recon 8 (narrow fields decoded
/// inline; the compute type is f32 for narrow spinors, else the spinor's), and still
/// refuses, by knob name, what a spec excludes: the staggered specs allow recon 18 only.
#[test]
fn cuda_emitter_generates_narrow_formats_and_names_excluded_knobs() {
    let cases = [
        (StorageFormat::F16, StorageFormat::F64, Recon::R18, "float"),
        (
            StorageFormat::F64,
            StorageFormat::Fixed8,
            Recon::R18,
            "double",
        ),
        (StorageFormat::F64, StorageFormat::F64, Recon::R8, "double"),
    ];
    for (spinor, gauge, recon, real) in cases {
        let v = Variant {
            spinor,
            gauge,
            recon,
            ..Variant::default()
        };
        let src = WilsonHop::cuda_source(&v).unwrap();
        assert!(src.contains(&format!("typedef {real} real;")), "{v}");
    }
    let e = qdsl_kernels::NaiveStaggeredHop::cuda_source(&Variant {
        recon: Recon::R12,
        ..Variant::default()
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("recon"), "{e}");
}

/// Values a storage format cannot hold are errors naming the field: f16 overflows at
/// 65520, and recon 8 rebuilds only SU(3) links.
#[test]
fn unstorable_fields_are_reported() {
    let lat = lattice();
    let full = SpinorLayout::wilson(lat, SiteSubset::Full);
    let v = Variant {
        sites: OutputSites::Full,
        spinor: StorageFormat::F16,
        ..Variant::default()
    };
    let mut big = ColourSpinorField::<f64>::gaussian(full, 3);
    big.data_mut()[5] = Complex::new(1e5, 0.0);
    let mut out = ColourSpinorField::<f64>::zeros(full);
    let e = WilsonHop
        .apply_cpu(&v, &mut out, &big, &random_gauge(lat, 1), None)
        .unwrap_err();
    assert!(
        matches!(&e, qdsl_core::dsl::DslError::Storage { field, format, .. } if field == "psi" && format == "f16"),
        "{e}"
    );
    let v8 = Variant {
        sites: OutputSites::Full,
        recon: Recon::R8,
        ..Variant::default()
    };
    let psi = ColourSpinorField::<f64>::gaussian(full, 4);
    let e = WilsonHop
        .apply_cpu(&v8, &mut out, &psi, &random_matrices(lat, 2), None)
        .unwrap_err();
    assert!(
        matches!(&e, qdsl_core::dsl::DslError::Storage { field, .. } if field == "u"),
        "{e}"
    );
}
