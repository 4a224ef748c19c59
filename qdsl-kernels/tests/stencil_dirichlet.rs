//! Dirichlet walls between sub-domains (the knob `dirichlet: Some(DirichletBlocks)`): the
//! generated Wilson hop equals a textbook loop that skips every hop from x to a site of
//! another block, for every output subset, dagger, xpay and precision; the result is block
//! diagonal; blocks that do not tile the lattice are errors; the CUDA guards each hop and
//! compiles with NVRTC.

mod nvrtc;
mod stencil_support;

use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::variant::{DirichletBlocks, OutputSites, Recon, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{DslError, Stencil, Variant};
use qdsl_core::field::{ColourSpinorField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_kernels::{WilsonClover, WilsonHop};
use stencil_support::*;

/// Blocks of 2 × 2 × 4 × 2 on 4 × 2 × 4 × 4: walls in x and t; y and z blocks span the
/// lattice (periodic there).
const BLOCK: [usize; 4] = [2, 2, 4, 2];

fn lattice() -> Lattice {
    Lattice::new([4, 2, 4, 4]).unwrap()
}

fn dirichlet() -> Option<DirichletBlocks> {
    Some(DirichletBlocks { block: BLOCK })
}

/// H ψ (or a·x + b·H ψ) by the generated code, in precision T.
fn run<T: qdsl_core::Real>(
    v: &Variant,
    u: &qdsl_core::field::GaugeField<f64>,
    psi: &Plain,
    x: &Plain,
    (a, b): (f64, f64),
) -> ColourSpinorField<T> {
    let lat = lattice();
    let (sub, src_sub) = match v.sites {
        OutputSites::Parity(p) => (SiteSubset::Single(p), SiteSubset::Single(p.opposite())),
        OutputSites::Full => (SiteSubset::Full, SiteSubset::Full),
    };
    let psi = from_plain(psi, SpinorLayout::wilson(lat, src_sub)).cast::<T>();
    let x = from_plain(x, SpinorLayout::wilson(lat, sub)).cast::<T>();
    let mut out = ColourSpinorField::<T>::zeros(SpinorLayout::wilson(lat, sub));
    let xpay = v.xpay.then(|| Xpay {
        a: T::from_f64(a),
        x: &x,
        b: T::from_f64(b),
    });
    WilsonHop
        .apply_cpu(v, &mut out, &psi, &u.cast::<T>(), xpay)
        .unwrap();
    out
}

/// The Schwarz-block Wilson hop equals the textbook loop with the crossing hops skipped.
#[test]
fn dirichlet_hop_equals_textbook_for_every_variant() {
    let lat = lattice();
    let u = random_gauge(lat, 91);
    let full = SpinorLayout::wilson(lat, SiteSubset::Full);
    let psi = to_plain(&ColourSpinorField::<f64>::gaussian(full, 92));
    let x = to_plain(&ColourSpinorField::<f64>::gaussian(full, 93));
    let coeffs = (1.1, -0.5);
    for sites in [
        OutputSites::Parity(Parity::Even),
        OutputSites::Parity(Parity::Odd),
        OutputSites::Full,
    ] {
        for dagger in [false, true] {
            for xpay in [false, true] {
                for (prec, recon) in [
                    (StorageFormat::F64, Recon::R18),
                    (StorageFormat::F32, Recon::R12),
                ] {
                    let v = Variant {
                        sites,
                        dagger,
                        xpay,
                        spinor: prec,
                        gauge: prec,
                        recon,
                        boundary: TimeBoundary::Periodic,
                        dirichlet: dirichlet(),
                        long_recon: Default::default(),
                        link_scale: Default::default(),
                        slices: Default::default(),
                        region: Default::default(),
                    };
                    let h = textbook_wilson_hop(&u, &psi, dagger, false, Some(BLOCK));
                    let want: Plain = if xpay {
                        h.iter()
                            .zip(&x)
                            .map(|(hs, xs)| {
                                hs.iter()
                                    .zip(xs)
                                    .map(|(p, q)| {
                                        std::array::from_fn(|c| q[c] * coeffs.0 + p[c] * coeffs.1)
                                    })
                                    .collect()
                            })
                            .collect()
                    } else {
                        h
                    };
                    let err = match prec {
                        StorageFormat::F64 => {
                            rel_diff(&run::<f64>(&v, &u, &psi, &x, coeffs), &want)
                        }
                        _ => rel_diff(&run::<f32>(&v, &u, &psi, &x, coeffs), &want),
                    };
                    let tol = if prec == StorageFormat::F64 {
                        1e-14
                    } else {
                        2e-6
                    };
                    assert!(err < tol, "{v}: {err:e}");
                }
            }
        }
    }
    // The walls matter: the periodic hop differs.
    let v = Variant {
        sites: OutputSites::Full,
        dirichlet: dirichlet(),
        ..Variant::default()
    };
    let periodic = textbook_wilson_hop(&u, &psi, false, false, None);
    assert!(rel_diff(&run::<f64>(&v, &u, &psi, &x, coeffs), &periodic) > 0.1);
}

/// Block diagonal: ψ supported on one block gives D ψ supported on the same block
/// (Wilson-clover with a unit clover field, full lattice).
#[test]
fn dirichlet_operator_is_block_diagonal() {
    let lat = lattice();
    let u = random_gauge(lat, 94);
    let full = SpinorLayout::wilson(lat, SiteSubset::Full);
    let in_block = |x: [usize; 4]| (0..4).all(|mu| x[mu] / BLOCK[mu] == 0);
    let g = ColourSpinorField::<f64>::gaussian(full, 95);
    let psi = ColourSpinorField::from_fn(full, |s, x, sp, c| {
        if in_block(x) {
            g.get(s, x, sp, c).unwrap()
        } else {
            C::new(0.0, 0.0)
        }
    });
    let mut a = qdsl_core::field::CloverField::<f64>::zeros(lat, SiteSubset::Full);
    for i in 0..a.sites() {
        for b in 0..2 {
            for r in 0..6 {
                a.site_mut(i)[36 * b + r] = 4.0;
            }
        }
    }
    let v = Variant {
        sites: OutputSites::Full,
        dirichlet: dirichlet(),
        ..Variant::default()
    };
    let mut out = ColourSpinorField::zeros(full);
    WilsonClover
        .apply_cpu(&v, &mut out, &psi, &u, &a, None)
        .unwrap();
    let (mut inside, mut outside) = (0.0f64, 0.0f64);
    for x in lat.sites_lex() {
        for sp in 0..4 {
            for c in 0..3 {
                let z = out.get(0, x, sp, c).unwrap().norm();
                if in_block(x) {
                    inside = inside.max(z);
                } else {
                    outside = outside.max(z);
                }
            }
        }
    }
    assert!(inside > 1.0 && outside == 0.0, "{inside} {outside}");
}

/// Blocks that do not divide the lattice are an error naming the knob; a zero extent is
/// rejected by the CUDA emitter.
#[test]
fn blocks_must_tile_the_lattice() {
    let lat = lattice();
    let u = random_gauge(lat, 96);
    let full = SpinorLayout::wilson(lat, SiteSubset::Full);
    let psi = ColourSpinorField::<f64>::gaussian(full, 97);
    let mut out = ColourSpinorField::zeros(full);
    let v = Variant {
        sites: OutputSites::Full,
        dirichlet: Some(DirichletBlocks {
            block: [3, 2, 4, 2],
        }),
        ..Variant::default()
    };
    match WilsonHop.apply_cpu(&v, &mut out, &psi, &u, None) {
        Err(DslError::UnsupportedVariant { knob, reason, .. }) => {
            assert_eq!(knob, "dirichlet");
            assert!(reason.contains("[3, 2, 4, 2]"), "{reason}");
        }
        other => panic!("expected an error, got {other:?}"),
    }
    let zero = Variant {
        dirichlet: Some(DirichletBlocks {
            block: [0, 2, 4, 2],
        }),
        ..Variant::default()
    };
    assert!(WilsonHop::cuda_source(&zero).is_err());
}

/// The CUDA guards each hop by its block test (x and t walls alike; with antiperiodic
/// time, the t wrap is cut by the wall) and compiles with NVRTC for sm_80 and sm_90
/// (ignored where the build found no NVRTC).
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn dirichlet_cuda_guards_hops_and_compiles() {
    let variants = [
        Variant {
            dirichlet: dirichlet(),
            ..Variant::default()
        },
        Variant {
            sites: OutputSites::Full,
            dagger: true,
            xpay: true,
            spinor: StorageFormat::F32,
            gauge: StorageFormat::F32,
            recon: Recon::R12,
            boundary: TimeBoundary::Antiperiodic,
            dirichlet: dirichlet(),
            long_recon: Default::default(),
            link_scale: Default::default(),
            slices: Default::default(),
            region: Default::default(),
        },
    ];
    let src = WilsonHop::cuda_source(&variants[0]).unwrap();
    assert!(src.contains("if (x[0] / 2 == y[0] / 2) {"), "{src}");
    assert!(src.contains("if (x[3] / 2 == y[3] / 2) {"));
    assert!(src.contains("if (x[2] / 4 == y[2] / 4) {"));
    let nv = nvrtc::Nvrtc::load().unwrap_or_else(|why| panic!("NVRTC: {why}"));
    for arch in ["sm_80", "sm_90"] {
        let mut program = String::new();
        for v in &variants {
            program.push_str(&format!(
                "namespace variant_{:016x} {{\n{}}}\n",
                v.stable_hash(),
                WilsonHop::cuda_source(v).unwrap()
            ));
        }
        let ptx = nv
            .compile(&program, &format!("dirichlet_{arch}"), arch)
            .unwrap_or_else(|log| panic!("{arch}:\n{log}"));
        for v in &variants {
            assert!(ptx.contains(&format!(".entry {}(", WilsonHop::kernel_name(v))));
        }
    }
}
