//! The defining properties of [`OpenBoundary`]: which slices vanish and which carry c_F
//! (openQCD's `sw_term.c` and `Dw_dble.c`), which links the hops lose, the clover
//! field's boundary diagonal, the projection.

use super::{
    clover_field, FieldStrengthTrace, OpenBoundary, OpenBoundaryError, OpenBoundaryKind,
    SfBoundaryFields,
};
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
    let (links, a) = b
        .clover_fields(&u, mass, csw, FieldStrengthTrace::Keep)
        .unwrap();
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
        OpenBoundary::open(1.0).clover_fields(&u, 0.1, 1.0, FieldStrengthTrace::Keep),
        Err(OpenBoundaryError::TooShort { found: 2, .. })
    ));
    let u = GaugeField::<f64>::unit(lattice());
    let err = OpenBoundary::sf(1.0, f64::NAN)
        .clover_fields(&u, 0.1, 1.0, FieldStrengthTrace::Keep)
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

/// openQCD's SF boundary links are constant abelian SU(3) matrices:
/// C_k = diag(e^{iφ_a/L_k}) with φ₃ = −φ₁ − φ₂, so det C_k = 1, C_k C_k† = 1, and the
/// spatial plaquettes of the boundary slice are exactly 1 (no magnetic field there).
#[test]
fn sf_boundary_links_are_constant_abelian_su3() {
    let lattice = Lattice::new([4, 2, 2, 6]).unwrap();
    let fields = SfBoundaryFields::new([0.3, -1.1], [0.7, 0.2]);
    assert_eq!(fields.phi[2], 0.8);
    for k in 0..3 {
        for prime in [false, true] {
            let c = fields.link(&lattice, k, prime);
            assert!(c.unitarity_deviation() < 1e-15);
            let det = (0..3).fold(num_complex::Complex::new(1.0, 0.0), |d, a| d * c[(a, a)]);
            assert!((det - 1.0).norm() < 1e-15, "det {det}");
            let phi = if prime { fields.phi_prime } else { fields.phi };
            let want = num_complex::Complex::from_polar(1.0, phi[1] / lattice.extent(k) as f64);
            assert!((c[(1, 1)] - want).norm() < 1e-15);
            assert_eq!(c[(0, 1)], num_complex::Complex::new(0.0, 0.0));
        }
    }
    let u = fields.with_boundary_links(&GaugeField::<f64>::random(lattice, 3), true);
    for lex in 0..lattice.volume() {
        let x = lattice.coords_of_lex(lex);
        if x[3] != 0 {
            continue;
        }
        for (mu, nu) in [(0, 1), (0, 2), (1, 2)] {
            let p = (*u.link_at(x, mu) * *u.link_at(lattice.shift(x, mu, 1).0, nu))
                .mul_adjoint(u.link_at(lattice.shift(x, nu, 1).0, mu))
                .mul_adjoint(u.link_at(x, nu));
            assert!((p.trace().re / 3.0 - 1.0).abs() < 1e-14, "{x:?} {mu}{nu}");
        }
    }
}

/// The SF clover field sees C on x0 = 0 and C' on x0 = T: on every active slice it
/// equals the ordinary clover field of an extended lattice of L_t + 2 slices that holds
/// both boundaries explicitly (C on x0 = 0, the links of x0 = 1 … T − 1 copied, C' on the
/// spatial links of x0 = T, U_0(T − 1) copied; the filler slice T + 1 is out of reach of
/// the active slices' leaves). Changing φ' changes the blocks of x0 = T − 1 only; with
/// φ' = φ and C already stored on x0 = 0 the fields change nothing.
#[test]
fn sf_clover_field_sees_c_at_x0_zero_and_c_prime_at_t() {
    let lattice = Lattice::new([4, 2, 2, 6]).unwrap();
    let lt = 6;
    let u = GaugeField::<f64>::random(lattice, 19);
    let fields = SfBoundaryFields::new([0.4, -0.9], [1.3, 0.5]);
    let (mass, csw) = (-0.1, 1.7);
    let sf = OpenBoundary::sf(1.0, 1.0).with_sf_fields(fields);
    let (_, a) = sf
        .clover_fields(&u, mass, csw, FieldStrengthTrace::Keep)
        .unwrap();

    let extended = Lattice::new([4, 2, 2, lt + 2]).unwrap();
    let ext = GaugeField::from_fn(extended, |c, mu| match (c[3], mu) {
        (0, 0..=2) => fields.link(&lattice, mu, false),
        (t, 0..=2) if t == lt => fields.link(&lattice, mu, true),
        (t, _) if t < lt => *u.link_at(c, mu),
        _ => ColourMatrix::identity(),
    });
    let a_ext = clover_field(&ext, mass, csw);
    for lex in 0..lattice.volume() {
        let x = lattice.coords_of_lex(lex);
        if x[3] == 0 {
            continue;
        }
        let got = a.site(lattice.cb_index(x));
        let want = a_ext.site(extended.cb_index(x));
        let err = got
            .iter()
            .zip(want)
            .map(|(g, w)| (g - w).abs())
            .fold(0.0, f64::max);
        assert!(err < 1e-13, "{x:?}: {err:e}");
    }

    let same =
        OpenBoundary::sf(1.0, 1.0).with_sf_fields(SfBoundaryFields::new([0.4, -0.9], [0.4, -0.9]));
    let (_, a_same) = same
        .clover_fields(&u, mass, csw, FieldStrengthTrace::Keep)
        .unwrap();
    let stored_c = fields.with_boundary_links(&u, false);
    let (_, a_plain) = OpenBoundary::sf(1.0, 1.0)
        .clover_fields(&stored_c, mass, csw, FieldStrengthTrace::Keep)
        .unwrap();
    for cb in 0..lattice.volume() {
        let x0 = lattice.coords_of_cb(cb)[3];
        assert_eq!(a_same.site(cb), a_plain.site(cb), "φ' = φ, x0 = {x0}");
        let differs = a.site(cb) != a_same.site(cb);
        assert_eq!(differs, x0 == lt - 1, "only x0 = T − 1 sees φ' (x0 = {x0})");
    }
}

/// SF fields on open boundaries and non-finite angles are errors naming the cause.
#[test]
fn sf_fields_are_checked() {
    let lattice = Lattice::new([2, 2, 2, 6]).unwrap();
    let fields = SfBoundaryFields::new([0.1, 0.2], [0.3, 0.4]);
    assert_eq!(
        OpenBoundary::open(1.0)
            .with_sf_fields(fields)
            .check(&lattice),
        Err(OpenBoundaryError::FieldsOnOpen)
    );
    let nan = SfBoundaryFields::new([f64::NAN, 0.2], [0.3, 0.4]);
    assert!(matches!(
        OpenBoundary::sf(1.0, 1.0)
            .with_sf_fields(nan)
            .check(&lattice),
        Err(OpenBoundaryError::NotFinite { name: "φ", .. })
    ));
    let text = OpenBoundary::sf(1.0, 1.0)
        .with_sf_fields(fields)
        .to_string();
    assert!(text.contains("φ' = [0.3, 0.4, -0.7"), "{text}");
}
