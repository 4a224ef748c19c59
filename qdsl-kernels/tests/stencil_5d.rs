//! 5D fields: any spec runs on colour-spinor fields with Ls > 1 slices, each slice s
//! computed by the 4D stencil reading the sources' slice s (links and clover fields 4D,
//! shared). The generated CPU code is compared with a textbook 5D loop (the Wilson hop
//! written out per slice) and with the 4D kernel applied slice by slice (itself
//! textbook-tested in stencil_wilson.rs and stencil_clover.rs); the CUDA runs slice
//! blockIdx.y.

mod stencil_support;

use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::variant::{OutputSites, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{DslError, Stencil, Variant};
use qdsl_core::field::{CloverField, ColourSpinorField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_kernels::{CloverApply, WilsonHop};
use stencil_support::*;

const LS: usize = 3;

fn lattice() -> Lattice {
    Lattice::new([4, 2, 2, 4]).unwrap()
}

fn layout(ls: usize, subset: SiteSubset) -> SpinorLayout {
    SpinorLayout::new(lattice(), ls, subset, 4, 3).unwrap()
}

/// Slice `s` of a 5D field as a 4D field.
fn slice(f: &ColourSpinorField<f64>, s: usize) -> ColourSpinorField<f64> {
    let l = f.layout();
    let l4 = layout(1, l.subset());
    ColourSpinorField::from_fn(l4, |_, x, sp, a| f.get(s, x, sp, a).unwrap())
}

/// Slice `s` of a full-lattice 5D field as a plain full-lattice field.
fn plain_slice(f: &ColourSpinorField<f64>, s: usize) -> Plain {
    to_plain(&slice(f, s))
}

fn variants() -> Vec<Variant> {
    let mut out = Vec::new();
    for sites in [OutputSites::Parity(Parity::Odd), OutputSites::Full] {
        for dagger in [false, true] {
            for xpay in [false, true] {
                out.push(Variant {
                    sites,
                    dagger,
                    xpay,
                    boundary: if dagger {
                        TimeBoundary::Antiperiodic
                    } else {
                        TimeBoundary::Periodic
                    },
                    ..Variant::default()
                });
            }
        }
    }
    out
}

/// The Wilson hop on a 5D field equals, on every slice, the textbook hop of that slice
/// (and a·x_s + b·H ψ_s with xpay), for odd and full output, dagger, both boundaries.
#[test]
fn wilson_hop_on_5d_fields_equals_the_textbook_per_slice() {
    let lat = lattice();
    let u = random_gauge(lat, 81);
    let psi_full = ColourSpinorField::<f64>::gaussian(layout(LS, SiteSubset::Full), 82);
    let x_full = ColourSpinorField::<f64>::gaussian(layout(LS, SiteSubset::Full), 83);
    let (a, b) = (0.6, -0.5);
    for v in variants() {
        let sub = subset_of(match v.sites {
            OutputSites::Parity(p) => Some(p),
            OutputSites::Full => None,
        });
        let src_sub = match sub {
            SiteSubset::Single(p) => SiteSubset::Single(p.opposite()),
            SiteSubset::Full => SiteSubset::Full,
        };
        let restrict = |f: &ColourSpinorField<f64>, to: SiteSubset| {
            ColourSpinorField::from_fn(layout(LS, to), |s, x, sp, c| f.get(s, x, sp, c).unwrap())
        };
        let psi = restrict(&psi_full, src_sub);
        let x = restrict(&x_full, sub);
        let mut out = ColourSpinorField::zeros(layout(LS, sub));
        let xpay = v.xpay.then_some(Xpay { a, x: &x, b });
        WilsonHop.apply_cpu(&v, &mut out, &psi, &u, xpay).unwrap();
        for s in 0..LS {
            let h = textbook_wilson_hop(
                &u,
                &plain_slice(&psi_full, s),
                v.dagger,
                v.boundary == TimeBoundary::Antiperiodic,
                None,
            );
            let xs = plain_slice(&x_full, s);
            let want: Plain = if v.xpay {
                h.iter()
                    .zip(&xs)
                    .map(|(hs, xs)| {
                        hs.iter()
                            .zip(xs)
                            .map(|(p, q)| std::array::from_fn(|c| q[c] * a + p[c] * b))
                            .collect()
                    })
                    .collect()
            } else {
                h
            };
            let err = rel_diff(&slice(&out, s), &want);
            assert!(err < 1e-14, "{v} slice {s}: {err:e}");
        }
    }
}

/// clover_apply on a 5D field (f32) equals the 4D kernel on each slice with the same
/// (4D) clover field: the s-index is carried, the clover field shared.
#[test]
fn clover_apply_on_5d_fields_equals_the_4d_kernel_per_slice() {
    let lat = lattice();
    let sub = SiteSubset::Single(Parity::Even);
    let psi = ColourSpinorField::<f64>::gaussian(layout(LS, sub), 84);
    let mut a = CloverField::<f64>::zeros(lat, sub);
    for (k, r) in a.data_mut().iter_mut().enumerate() {
        *r = ((k * 37 % 101) as f64) / 50.0 - 1.0;
    }
    let v = Variant {
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        ..Variant::default()
    };
    let mut out = ColourSpinorField::<f32>::zeros(layout(LS, sub));
    CloverApply
        .apply_cpu(&v, &mut out, &psi.cast::<f32>(), &a.cast::<f32>(), None)
        .unwrap();
    let out = out.cast::<f64>();
    for s in 0..LS {
        let mut want = ColourSpinorField::<f32>::zeros(layout(1, sub));
        CloverApply
            .apply_cpu(
                &v,
                &mut want,
                &slice(&psi, s).cast::<f32>(),
                &a.cast::<f32>(),
                None,
            )
            .unwrap();
        assert_eq!(
            max_abs_diff(&slice(&out, s), &want.cast::<f64>()),
            0.0,
            "slice {s}"
        );
    }
}

/// Sources and output of different Ls are rejected, naming the field and both layouts.
#[test]
fn mismatched_ls_is_an_error() {
    let lat = lattice();
    let u = random_gauge(lat, 85);
    let psi = ColourSpinorField::<f64>::gaussian(layout(2, SiteSubset::Single(Parity::Odd)), 86);
    let mut out = ColourSpinorField::zeros(layout(LS, SiteSubset::Single(Parity::Even)));
    match WilsonHop.apply_cpu(&Variant::default(), &mut out, &psi, &u, None) {
        Err(DslError::FieldMismatch { field, .. }) => assert_eq!(field, "psi"),
        other => panic!("expected a field mismatch, got {other:?}"),
    }
}

/// The CUDA kernel takes its slice from blockIdx.y and offsets the source and output
/// indices by whole slices (one parity: `half` sites; the full lattice: 2 · half).
#[test]
fn cuda_indexes_slices_by_grid_row() {
    let src = WilsonHop::cuda_source(&Variant::default()).unwrap();
    assert!(src.contains("const int s5 = blockIdx.y;"), "{src}");
    assert!(src.contains("const int io = s5 * n_out + i;"));
    assert!(src.contains("const int n = s5 * half + "));
    let full = WilsonHop::cuda_source(&Variant {
        sites: OutputSites::Full,
        ..Variant::default()
    })
    .unwrap();
    assert!(full.contains("const int n = s5 * 2 * half + "));
}
