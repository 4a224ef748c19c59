//! Packed spinors (packed20, packed30: groups of 6 reals as 20- or 30-bit integers with a
//! shared power-of-two scale) in the stencil kernels. The generated CPU hop on packed
//! spinors equals the textbook hop applied to the input as the format stores it (each
//! site rounded through qdsl_core::format's byte encoding, the one definition the device
//! codec follows), with the output rounded through it too; it differs from the hop of
//! the exact spinors by a nonzero amount below the format's resolution; every output group lies on
//! its packed grid. The CUDA source reads and writes the packed words and takes no
//! extra argument.

mod stencil_support;

use qdsl_core::dsl::variant::{OutputSites, Recon, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{KernelParam, Stencil, Variant};
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::format::{FermionFormat, LinkFormat, LinkSign, PackedWidth};
use qdsl_core::lattice::Lattice;
use qdsl_kernels::{ImprovedStaggeredHop, WilsonHop};
use stencil_support::*;

fn lattice() -> Lattice {
    Lattice::new([4, 2, 4, 6]).unwrap()
}

/// The packed formats with their widths and an upper bound on the relative error of a
/// hop on packed inputs against the exact hop (a few units of 1/Q).
const PACKED: [(StorageFormat, PackedWidth, f64); 2] = [
    (StorageFormat::Packed20, PackedWidth::Bits20, 2e-5),
    (StorageFormat::Packed30, PackedWidth::Bits30, 2e-8),
];

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

/// Links as the CPU path of `gauge` with `recon` reads them: f64/f32 are compute types
/// (the links as given, recon 12 exact on SU(3)), other formats round-tripped.
fn stored_links(u: &GaugeField<f64>, gauge: StorageFormat, recon: Recon) -> GaugeField<f64> {
    if gauge.is_native() {
        return u.clone();
    }
    let lf = LinkFormat::new(gauge.link_storage(), recon.compression());
    GaugeField::from_fn(*u.lattice(), |c, mu| {
        let mut bytes = vec![0u8; lf.bytes_per_link()];
        lf.encode(u.link_at(c, mu), LinkSign::Plus, &mut bytes)
            .unwrap();
        lf.decode::<f64>(&bytes, LinkSign::Plus).unwrap()
    })
}

/// Every group of 6 reals of every site lies on its packed grid: v = q·2^k with k the
/// format's scale exponent of the group's max and |q| ≤ Q an integer (computed here from
/// the definition, not through the encoder).
fn assert_on_grid(out: &Plain, w: PackedWidth, what: &str) {
    for site in out {
        let reals: Vec<f64> = site.iter().flatten().flat_map(|z| [z.re, z.im]).collect();
        for group in reals.chunks(6) {
            let m = group.iter().fold(0.0f64, |m, r| m.max(r.abs()));
            if m == 0.0 {
                continue;
            }
            let k = w.scale_exponent(m).unwrap();
            for r in group {
                let q = r / 2f64.powi(k);
                assert!(
                    q == q.round() && q.abs() <= w.max_int() as f64,
                    "{what}: {r} is not q·2^{k} with an integer |q| ≤ Q"
                );
            }
        }
    }
}

/// The Wilson hop on packed spinors (full lattice and a parity; dagger, xpay and
/// antiperiodic time; links in f64 recon 18, f32 and fixed16 recon 12).
#[test]
fn packed_wilson_hop_equals_the_textbook_hop_on_stored_spinors() {
    let lat = lattice();
    let u = random_gauge(lat, 71);
    let full = SpinorLayout::wilson(lat, SiteSubset::Full);
    let psi = to_plain(&ColourSpinorField::<f64>::gaussian(full, 72));
    let x = to_plain(&ColourSpinorField::<f64>::gaussian(full, 73));
    let (a, b) = (0.75, -0.125);
    for (spinor, w, resolution) in PACKED {
        let ff = spinor.fermion_format();
        assert_eq!(ff, FermionFormat::Packed(w));
        for (gauge, recon) in [
            (StorageFormat::F64, Recon::R18),
            (StorageFormat::F32, Recon::R12),
            (StorageFormat::Fixed16, Recon::R12),
        ] {
            for (dagger, xpay, boundary) in [
                (false, false, TimeBoundary::Periodic),
                (true, true, TimeBoundary::Antiperiodic),
            ] {
                let v = Variant {
                    sites: OutputSites::Full,
                    spinor,
                    gauge,
                    recon,
                    dagger,
                    xpay,
                    boundary,
                    ..Variant::default()
                };
                let ap = boundary == TimeBoundary::Antiperiodic;
                let u_stored = stored_links(&u, gauge, recon);
                let psi_stored: Plain = psi.iter().map(|s| stored_site(ff, s)).collect();
                let x_stored: Plain = x.iter().map(|s| stored_site(ff, s)).collect();
                let hop = |u: &GaugeField<f64>, p: &Plain, x: &Plain| -> Plain {
                    let h = textbook_wilson_hop(u, p, dagger, ap, None);
                    if !xpay {
                        return h;
                    }
                    h.iter()
                        .zip(x)
                        .map(|(hs, xs)| {
                            hs.iter()
                                .zip(xs)
                                .map(|(hc, xc)| std::array::from_fn(|c| xc[c] * a + hc[c] * b))
                                .collect()
                        })
                        .collect()
                };
                let want: Plain = hop(&u_stored, &psi_stored, &x_stored)
                    .iter()
                    .map(|s| stored_site(ff, s))
                    .collect();
                let x_f = from_plain(&x, full);
                let xp = xpay.then_some(qdsl_core::dsl::cpu::Xpay { a, x: &x_f, b });
                let mut out = ColourSpinorField::<f64>::zeros(full);
                WilsonHop
                    .apply_cpu(&v, &mut out, &from_plain(&psi, full), &u, xp)
                    .unwrap();
                let err = rel_diff(&out, &want);
                assert!(err < 1e-12, "{v}: {err:e} from the stored textbook hop");
                // Against the hop of the exact spinors (links as stored): the spinor
                // format's own error.
                let vs_exact = rel_diff(&out, &hop(&u_stored, &psi, &x));
                assert!(
                    vs_exact > 0.0 && vs_exact < resolution,
                    "{v}: {vs_exact:e} from the exact hop"
                );
                assert_on_grid(&to_plain(&out), w, &v.to_string());
            }
        }
    }
}

/// The improved staggered hop on packed colour vectors (6 reals: one group per site),
/// fat and long links in f64, f32 and f16.
#[test]
fn packed_staggered_hop_equals_the_textbook_hop_on_stored_vectors() {
    let lat = Lattice::new([4, 4, 4, 6]).unwrap();
    let fat = random_matrices(lat, 81);
    let long = random_matrices(lat, 82);
    let full = SpinorLayout::staggered(lat, SiteSubset::Full);
    let chi = to_plain(&ColourSpinorField::<f64>::gaussian(full, 83));
    for (spinor, w, resolution) in PACKED {
        let ff = spinor.fermion_format();
        for gauge in [StorageFormat::F64, StorageFormat::F32, StorageFormat::F16] {
            let v = Variant {
                sites: OutputSites::Full,
                spinor,
                gauge,
                ..Variant::default()
            };
            let (fat_s, long_s) = (
                stored_links(&fat, gauge, Recon::R18),
                stored_links(&long, gauge, Recon::R18),
            );
            let chi_stored: Plain = chi.iter().map(|s| stored_site(ff, s)).collect();
            let want: Plain = textbook_improved_staggered_hop(&fat_s, &long_s, &chi_stored)
                .iter()
                .map(|s| stored_site(ff, s))
                .collect();
            let mut out = ColourSpinorField::<f64>::zeros(full);
            ImprovedStaggeredHop
                .apply_cpu(&v, &mut out, &from_plain(&chi, full), &fat, &long, None)
                .unwrap();
            let err = rel_diff(&out, &want);
            assert!(err < 1e-12, "{v}: {err:e} from the stored textbook hop");
            let exact = textbook_improved_staggered_hop(&fat_s, &long_s, &chi);
            let vs_exact = rel_diff(&out, &exact);
            assert!(
                vs_exact > 0.0 && vs_exact < resolution,
                "{v}: {vs_exact:e} from the exact hop"
            );
            assert_on_grid(&to_plain(&out), w, &v.to_string());
        }
    }
}

/// The CUDA source of a packed variant computes in the format's compute type (f32 for
/// packed20, f64 for packed30), reads and writes whole packed records (the group
/// decoder and encoder over the site's words, 4 or 6 uint4 chunks of a Wilson site) and
/// declares no extra argument (the exponents are inline); packed links are refused by
/// knob name; the byte model counts 64 or 96 bytes per Wilson site.
#[test]
fn packed_sources_read_whole_records_and_take_no_extra_argument() {
    for (spinor, real, words) in [
        (StorageFormat::Packed20, "float", 16),
        (StorageFormat::Packed30, "double", 24),
    ] {
        let v = Variant {
            spinor,
            gauge: StorageFormat::F32,
            xpay: true,
            ..Variant::default()
        };
        let k = WilsonHop::compiled(&v).unwrap();
        let name = spinor.name();
        assert!(
            k.source.contains(&format!("typedef {real} real;")),
            "{name}"
        );
        assert!(k.source.contains(&format!("decode_{name}<24>(")), "{name}");
        assert!(
            k.source.contains(&format!("encode_{name}<24>(ow, ")),
            "{name}"
        );
        assert!(
            k.source.contains(&format!("unsigned ow[{words}];")),
            "{name}"
        );
        assert!(
            k.source.contains("uint4* __restrict__ f_out"),
            "{name}: chunks of 16 bytes"
        );
        assert!(
            !k.params
                .iter()
                .any(|p| matches!(p, KernelParam::Extra { .. })),
            "{name}: {:?}",
            k.params
        );
        assert!(!k.source.contains("norm_"), "{name}");
        // The byte model: (packed − f32) = n·(site − 96) with n the spinor sites a site
        // moves, n = (f32 − f16)/(96 − 48) (the links are f32 in all three).
        let site: i64 = if spinor == StorageFormat::Packed20 {
            64
        } else {
            96
        };
        let bytes = |spinor| {
            WilsonHop::info(&Variant { spinor, ..v })
                .unwrap()
                .bytes
                .quda as i64
        };
        let (f32_bytes, f16_bytes) = (bytes(StorageFormat::F32), bytes(StorageFormat::F16));
        let n = (f32_bytes - f16_bytes) / 48;
        assert!(n > 0);
        assert_eq!(bytes(spinor), f32_bytes + n * (site - 96), "{name}");
        let packed_links = Variant { gauge: spinor, ..v };
        let err = WilsonHop::compiled(&packed_links).unwrap_err().to_string();
        assert!(err.contains("gauge"), "{err}");
        assert!(err.contains(name), "{err}");
    }
}
