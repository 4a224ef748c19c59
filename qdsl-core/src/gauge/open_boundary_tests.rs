//! The defining properties of [`OpenBoundary`]: which slices vanish and which carry c_F
//! (openQCD's `sw_term.c` and `Dw_dble.c`), which links the hops lose, the clover
//! field's boundary diagonal, the projection.

use super::{clover_field, OpenBoundary, OpenBoundaryError, OpenBoundaryKind};
use crate::field::{
    unpack_clover_block, CloverField, ColourSpinorField, GaugeField, SiteSubset, SpinorLayout,
    CLOVER_BLOCK_REALS,
};
use crate::lattice::Lattice;
use crate::math::ColourMatrix;

fn lattice() -> Lattice {
    Lattice::new([2, 2, 2, 6]).unwrap()
}

#[test]
fn open_and_sf_slices_follow_openqcd() {
    let lt = 6;
    let open = OpenBoundary::open(1.3);
    let vanishing: Vec<usize> = (0..lt).filter(|&t| open.vanishes(t, lt)).collect();
    assert_eq!(vanishing, [0, 5]);
    let improved: Vec<(usize, f64)> = (0..lt)
        .filter_map(|t| open.improvement(t, lt).map(|c| (t, c)))
        .collect();
    assert_eq!(improved, [(1, 1.3), (4, 1.3)]);

    let sf = OpenBoundary::sf(1.1, 0.9);
    let vanishing: Vec<usize> = (0..lt).filter(|&t| sf.vanishes(t, lt)).collect();
    assert_eq!(vanishing, [0]);
    let improved: Vec<(usize, f64)> = (0..lt)
        .filter_map(|t| sf.improvement(t, lt).map(|c| (t, c)))
        .collect();
    assert_eq!(improved, [(1, 1.1), (5, 0.9)]);
    assert_eq!(sf.kind, OpenBoundaryKind::Sf);
    assert_eq!(
        open.to_string(),
        "open time boundaries, c_F = 1.3",
        "the report names the boundary"
    );
}

#[test]
fn hop_links_lose_exactly_the_links_touching_a_vanishing_slice() {
    let lat = lattice();
    let u = GaugeField::<f64>::random(lat, 3);
    for (b, expect_zero) in [
        (
            OpenBoundary::open(1.0),
            // open: links on slices 0 and 5, time links 4 → 5 and 5 → 0 (and 0 → 1).
            &(|c: [usize; 4], mu: usize| c[3] == 0 || c[3] == 5 || (mu == 3 && c[3] == 4))
                as &dyn Fn([usize; 4], usize) -> bool,
        ),
        (
            OpenBoundary::sf(1.0, 1.0),
            // SF: links on slice 0, time links 5 → 0.
            &(|c: [usize; 4], mu: usize| c[3] == 0 || (mu == 3 && c[3] == 5)),
        ),
    ] {
        let h = b.hop_links(&u);
        for cb in 0..lat.volume() {
            let c = lat.coords_of_cb(cb);
            for mu in 0..4 {
                if expect_zero(c, mu) {
                    assert_eq!(*h.link(cb, mu), ColourMatrix::zero(), "{b}: {c:?} μ={mu}");
                } else {
                    assert_eq!(h.link(cb, mu), u.link(cb, mu), "{b}: {c:?} μ={mu}");
                }
            }
        }
    }
}

#[test]
fn clover_is_unit_on_vanishing_and_shifted_by_cf_minus_one_on_improvement_slices() {
    let lat = lattice();
    let u = GaugeField::<f64>::random(lat, 5);
    let (mass, csw, cf) = (0.1, 1.7, 1.3);
    let plain = clover_field(&u, mass, csw);
    let b = OpenBoundary::open(cf);
    let (links, a) = b.clover_fields(&u, mass, csw).unwrap();
    assert_eq!(links, b.hop_links(&u));
    for cb in 0..lat.volume() {
        let x0 = lat.coords_of_cb(cb)[3];
        for (blk, (got, was)) in a
            .site(cb)
            .chunks_exact(CLOVER_BLOCK_REALS)
            .zip(plain.site(cb).chunks_exact(CLOVER_BLOCK_REALS))
            .enumerate()
        {
            let (got, was) = (unpack_clover_block(got), unpack_clover_block(was));
            for r in 0..6 {
                for c in 0..6 {
                    let expected = match x0 {
                        0 | 5 => f64::from(u8::from(r == c)).into(),
                        1 | 4 if r == c => was[r][c] + (cf - 1.0),
                        _ => was[r][c],
                    };
                    assert!(
                        (got[r][c] - expected).norm() < 1e-15,
                        "site {cb} (x0 = {x0}) block {blk} ({r}, {c})"
                    );
                }
            }
        }
    }
}

#[test]
fn project_zeroes_vanishing_slices_of_any_subset() {
    let lat = lattice();
    let b = OpenBoundary::open(1.0);
    for subset in [
        SiteSubset::Full,
        SiteSubset::Single(crate::lattice::Parity::Odd),
    ] {
        let layout = SpinorLayout::wilson(lat, subset);
        let mut psi = ColourSpinorField::<f64>::gaussian(layout, 9);
        let before = psi.clone();
        b.project(&mut psi);
        for i in 0..layout.sites_per_slice() {
            let x0 = layout.coords_of_site(i)[3];
            if x0 == 0 || x0 == 5 {
                assert!(psi.site(0, i).iter().all(|z| z.norm() == 0.0));
            } else {
                assert_eq!(psi.site(0, i), before.site(0, i));
            }
        }
    }
}

#[test]
fn bad_lattices_coefficients_and_fields_are_errors() {
    let short = Lattice::new([4, 4, 4, 2]).unwrap();
    let u = GaugeField::<f64>::unit(short);
    assert!(matches!(
        OpenBoundary::open(1.0).clover_fields(&u, 0.1, 1.0),
        Err(OpenBoundaryError::TooShort { found: 2, .. })
    ));
    let u = GaugeField::<f64>::unit(lattice());
    let err = OpenBoundary::sf(1.0, f64::NAN)
        .clover_fields(&u, 0.1, 1.0)
        .unwrap_err();
    assert!(err.to_string().contains("c_F'"), "{err}");
    let mut half =
        CloverField::<f64>::zeros(lattice(), SiteSubset::Single(crate::lattice::Parity::Even));
    assert!(matches!(
        OpenBoundary::open(1.0).improve_clover(&mut half),
        Err(OpenBoundaryError::CloverField { .. })
    ));
}

/// The zero links of the hops survive uncompressed storage exactly and are refused, not
/// silently rebuilt into SU(3), by the compressed formats (recon 12 and 8 check that a
/// link is in SU(3) before storing it).
#[test]
fn zero_links_store_in_recon18_and_are_refused_by_recon12_and_recon8() {
    use crate::format::{Compression, FloatWidth, FormatError, LinkFormat, LinkSign, LinkStorage};
    let zero = ColourMatrix::<f64>::zero();
    for compression in Compression::ALL {
        let format = LinkFormat::new(LinkStorage::Float(FloatWidth::F32), compression);
        let mut bytes = vec![0u8; format.bytes_per_link()];
        let stored = format.encode(&zero, LinkSign::Plus, &mut bytes);
        match compression {
            Compression::Full => {
                stored.unwrap();
                let back: ColourMatrix<f32> = format.decode(&bytes, LinkSign::Plus).unwrap();
                assert_eq!(back, ColourMatrix::zero());
            }
            _ => assert!(
                matches!(stored, Err(FormatError::NotSpecialUnitary { .. })),
                "{compression:?}: {stored:?}"
            ),
        }
    }
}
