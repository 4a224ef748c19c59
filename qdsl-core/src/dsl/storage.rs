//! Storage emulation for the CPU path: a field "stored" in a narrow format is the host
//! field rounded through that format's exact byte encoding ([`crate::format`]), so the
//! CPU reference of a variant sees the same values the device decodes.
//!
//! * colour-spinor site (N = 2·nspin·ncolour reals, spin-major, re/im):
//!   v ↦ decode(encode(v)) with [`FermionFormat`] (fixed point: one f32 norm per site,
//!   q_i = round(v_i/norm · Q), v̂_i = q_i · norm/Q);
//! * gauge link: U ↦ decode(encode(U)) with [`LinkFormat`] = storage × compression
//!   (recon 12 / 8 rebuild the link from 12 / 8 stored reals, checked to be SU(3)).
//!
//! * gauge link with a global scale ([`super::variant::LinkScale::Global`], fixed
//!   point): U ↦ s·decode(encode(U/s)), s = max |entry| of the field
//!   ([`round_gauge_field_scaled`]);
//! * long links of improved staggered kernels (`long_recon` 13/12/9): L ↦
//!   decode(encode(L)) with [`ScaledLinkFormat`] and the field's scale
//!   ([`round_long_field`]).
//!
//! Values a format cannot hold (f16 overflow, non-finite fixed point, non-SU(3) links
//! under compression) are errors, never silent infinities.

use super::codec::global_link_scale;
use super::long_links::LONG_LINK_STEPS;
use super::Variant;
use crate::field::{ColourSpinorField, GaugeField};
use crate::format::link::{
    round_scaled_field, ScaledLinkError, ScaledLinkFormat, SCALED_TOLERANCE,
};
use crate::format::{FermionFormat, FormatError, LinkFormat, LinkSign};
use crate::Real;
use num_complex::Complex;
use rayon::prelude::*;

/// Rounds one site of complex components through `format`: decode(encode(site)).
pub fn round_site<T: Real>(
    format: FermionFormat,
    site: &mut [Complex<T>],
) -> Result<(), FormatError> {
    let mut reals: Vec<T> = site.iter().flat_map(|z| [z.re, z.im]).collect();
    let mut bytes = vec![0u8; format.bytes_per_site(reals.len())];
    format.encode(&reals, &mut bytes)?;
    format.decode(&bytes, &mut reals)?;
    for (z, pair) in site.iter_mut().zip(reals.chunks_exact(2)) {
        *z = Complex::new(pair[0], pair[1]);
    }
    Ok(())
}

/// Rounds every site of `field` through `format` (in parallel over sites); the first
/// failing site's error is returned.
pub fn round_spinor_field<T: Real>(
    format: FermionFormat,
    field: &mut ColourSpinorField<T>,
) -> Result<(), FormatError> {
    let site_len = field.layout().site_len();
    field
        .data_mut()
        .par_chunks_mut(site_len)
        .try_for_each(|site| round_site(format, site))
}

/// Rounds every link of `u` through `format` (sign +1; compressed formats check that
/// each link is SU(3) to [`crate::format::SuCheck::DEFAULT_TOLERANCE`]).
pub fn round_gauge_field<T: Real>(
    format: LinkFormat,
    u: &mut GaugeField<T>,
) -> Result<(), FormatError> {
    u.links_mut().par_iter_mut().try_for_each(|link| {
        let mut bytes = vec![0u8; format.bytes_per_link()];
        format.encode(link, LinkSign::Plus, &mut bytes)?;
        *link = format.decode(&bytes, LinkSign::Plus)?;
        Ok(())
    })
}

/// Rounds every link of `u` through `format` with the field's global scale
/// s = [`global_link_scale`]: U ↦ s·decode(encode(fl(U·fl(1/s)))) in `T`, as the kernel
/// decodes s·q/Q (the stored U/s lies in [−1, 1], so fixed point fits whatever the
/// entries). Returns s, the value of the kernel's `scale_<field>` parameter. Compressed
/// formats check U/s to be SU(3), which it is not for s ≠ 1: the global scale is for
/// recon 18 (smeared links).
pub fn round_gauge_field_scaled<T: Real>(
    format: LinkFormat,
    u: &mut GaugeField<T>,
) -> Result<f64, FormatError> {
    let s = divide_by_global_scale(u);
    round_gauge_field(format, u)?;
    let scale = T::from_f64(s);
    u.links_mut()
        .par_iter_mut()
        .for_each(|link| *link = link.scale(scale));
    Ok(s)
}

/// Replaces `u` by U/s, each link scaled by fl(1/s) in `T`, s = [`global_link_scale`]
/// (returned): what a gauge field with a global scale stores in the unit-scale link
/// format — the CPU path ([`round_gauge_field_scaled`]) and the device upload encode the
/// same values, and the kernel multiplies by s (`scale_<field>`).
pub fn divide_by_global_scale<T: Real>(u: &mut GaugeField<T>) -> f64 {
    let s = global_link_scale(u);
    let inv = T::from_f64(1.0 / s);
    u.links_mut()
        .par_iter_mut()
        .for_each(|link| *link = link.scale(inv));
    s
}

/// Rounds the gauge field `u` (not a compressed long field) as `variant` stores it:
/// through [`round_gauge_field_scaled`] when its gauge codec scales links
/// ([`super::codec::Codec::scales_links`]), returning the global scale s, else through
/// [`round_gauge_field`] (returning `None`).
pub fn round_gauge_field_for<T: Real>(
    variant: &Variant,
    u: &mut GaugeField<T>,
) -> Result<Option<f64>, FormatError> {
    let codec = variant.gauge.codec();
    let format = codec.link(variant.recon);
    if codec.scales_links(variant.link_scale) {
        round_gauge_field_scaled(format, u).map(Some)
    } else {
        round_gauge_field(format, u).map(|()| None)
    }
}

/// Rounds the long-link field `u` of a spec run with `variant` through its `long_recon`
/// compression, as the device decodes it: c = the compression's
/// [`field_scale`](crate::format::link::ScaledCompression::field_scale) (checked: every
/// link c·U(3), for recon 12 + sign c·s·SU(3) with s its staggered sign, to
/// [`SCALED_TOLERANCE`], else the error names the link), then L ↦ decode(encode(L)) in
/// [`ScaledLinkFormat`] (`variant.gauge`'s storage). Returns c, the value of the kernel's
/// `scale_<field>` parameter; `None` (and `u` untouched) for long recon 18. The CPU path
/// emulates compressed long links by running on the rounded field (exact for f32/f64
/// gauge storage; narrow gauge formats would round twice).
pub fn round_long_field<T: Real>(
    variant: &Variant,
    u: &mut GaugeField<T>,
) -> Result<Option<f64>, ScaledLinkError> {
    let Some(compression) = variant.long_recon.compression() else {
        return Ok(None);
    };
    let scale = compression.field_scale(u, LONG_LINK_STEPS, SCALED_TOLERANCE)?;
    let format = ScaledLinkFormat::new(variant.gauge.codec().link_storage(), compression);
    round_scaled_field(format, u, scale, LONG_LINK_STEPS)?;
    Ok(Some(scale))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Compression, FixedWidth, LinkStorage};

    /// Hand-computed fixed16 site: v = (1, −0.5, 0.25, 0.1) → norm 1, q = round(v·32767)
    /// = (32767, −16384 (ties to even of −16383.5), 8192 (8191.75), 3277 (3276.7)), so
    /// v̂ = q/32767.
    #[test]
    fn fixed16_site_matches_hand_rounding() {
        let mut site = [Complex::new(1.0f64, -0.5), Complex::new(0.25, 0.1)];
        round_site(FermionFormat::FIXED16, &mut site).unwrap();
        let q = 32767.0;
        let want = [1.0, -16384.0 / q, 8192.0 / q, 3277.0 / q];
        let got = [site[0].re, site[0].im, site[1].re, site[1].im];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-15, "{got:?} vs {want:?}");
        }
    }

    /// f16 has the step 2^−10 at 1: 1 + 2^−12 (a quarter step) rounds down to 1, and
    /// 1 + 3·2^−12 (three quarters) up to 1 + 2^−10; 70000 ≥ 65520 overflows.
    #[test]
    fn f16_site_rounds_to_eleven_bits_and_rejects_overflow() {
        let mut site = [Complex::new(
            1.0 + 2f64.powi(-12),
            1.0 + 3.0 * 2f64.powi(-12),
        )];
        round_site(FermionFormat::F16, &mut site).unwrap();
        assert_eq!(site[0], Complex::new(1.0, 1.0 + 2f64.powi(-10)));
        let mut big = [Complex::new(70000.0f64, 0.0)];
        assert!(matches!(
            round_site(FermionFormat::F16, &mut big),
            Err(FormatError::Overflow { .. })
        ));
    }

    /// Hand-computed global scale in fixed8: one entry 2 − 2i makes s = 2; the entry 1
    /// stores q = round(1/2 · 127) = round(63.5) = 64 (ties to even) and decodes to
    /// 2·64/127; −2 stores −127 and decodes to −2 exactly; 0.3 → q = round(19.05) = 19.
    #[test]
    fn fixed8_global_scale_matches_hand_rounding() {
        let lattice = crate::lattice::Lattice::new([2, 2, 2, 2]).unwrap();
        let mut u = GaugeField::<f64>::random(lattice, 9);
        u.link_mut(3, 1).0[0][0] = Complex::new(1.0, 0.3);
        u.link_mut(3, 1).0[2][1] = Complex::new(2.0, -2.0);
        let f = LinkFormat::new(LinkStorage::Fixed(FixedWidth::Bits8), Compression::Full);
        assert_eq!(round_gauge_field_scaled(f, &mut u).unwrap(), 2.0);
        let l = u.link(3, 1);
        let near = |a: f64, b: f64| (a - b).abs() < 1e-14;
        assert!(near(l.0[0][0].re, 2.0 * 64.0 / 127.0), "{}", l.0[0][0].re);
        assert!(near(l.0[0][0].im, 2.0 * 19.0 / 127.0), "{}", l.0[0][0].im);
        assert!(near(l.0[2][1].re, 2.0) && near(l.0[2][1].im, -2.0));
    }

    /// MILC's fat links (tests/data/milc/fat.l8, entries up to 8.3) do not fit unit-scale
    /// fixed point, and do with the global scale s = max |entry|. Each real then lies within
    /// s·(1/(2Q) + roundings) of the file's (the bound of [`LinkStorage::element_bound`]
    /// scaled by s), and the largest error comes close to s/(2Q) (the scale is really s,
    /// not 1). The naive staggered hop with these links (phases folded in, MILC),
    /// (D ψ)(x) = Σ_μ [U_μ(x) ψ(x+μ̂) − U_μ(x−μ̂)† ψ(x−μ̂)], written out here in f64 on the
    /// rounded and on the original links, differs by at most Σ over the 8 hops and 3
    /// colours of |ΔU_ab|·|ψ_b| ≤ 8·3·√2·e·max|ψ_b|, e the per-real bound.
    #[cfg(feature = "full")]
    #[test]
    fn milc_fat_links_fit_fixed_point_with_a_global_scale() {
        use crate::format::Compression;
        use crate::io::{read_gauge, ReadOptions};
        use crate::math::ColourVector;
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/milc/fat.l8");
        let fat = read_gauge(path, &ReadOptions::smeared_links())
            .expect("fat.l8")
            .field;
        let s = global_link_scale(&fat);
        assert!(s > 1.0, "MILC's fat links reach beyond 1: {s}");
        let lat = *fat.lattice();
        let mut rng = crate::format::testing::TestRng::new(5);
        let psi: Vec<ColourVector<f64>> = (0..lat.volume())
            .map(|_| ColourVector::from_fn(|_| Complex::new(rng.symmetric(), rng.symmetric())))
            .collect();
        let hop = |u: &GaugeField<f64>, x: usize| {
            (0..4).fold(ColourVector::zero(), |acc, mu| {
                let (fwd, bwd) = (lat.neighbour_cb(x, mu, 1), lat.neighbour_cb(x, mu, -1));
                acc + (*u.link(x, mu) * psi[fwd]) - u.link(bwd, mu).adjoint_mul_vector(&psi[bwd])
            })
        };
        let psi_max = psi
            .iter()
            .flat_map(|v| v.0)
            .map(|z| z.norm())
            .fold(0.0, f64::max);
        for width in [FixedWidth::Bits16, FixedWidth::Bits8] {
            let storage = LinkStorage::Fixed(width);
            let format = LinkFormat::new(storage, Compression::Full);
            assert!(matches!(
                round_gauge_field(format, &mut fat.clone()),
                Err(FormatError::OutOfRange { .. })
            ));
            let mut rounded = fat.clone();
            assert_eq!(round_gauge_field_scaled(format, &mut rounded).unwrap(), s);
            let e = s * storage.element_bound::<f64>(true) + s * 4.0 * f64::EPSILON;
            let err = (rounded.links().iter().zip(fat.links()))
                .map(|(a, b)| (*a - *b).max_abs_component())
                .fold(0.0, f64::max);
            let half_step = s / (2.0 * f64::from(width.max_int()));
            assert!(err <= e, "{width:?}: {err} > {e}");
            assert!(
                err > 0.9 * half_step,
                "{width:?}: {err} vs s/(2Q) {half_step}"
            );
            let bound = 8.0 * 3.0 * 2f64.sqrt() * e * psi_max;
            let worst = (0..lat.volume())
                .map(|x| {
                    let d = hop(&rounded, x) - hop(&fat, x);
                    d.0.iter().map(|z| z.norm()).fold(0.0, f64::max)
                })
                .fold(0.0, f64::max);
            assert!(worst <= bound, "{width:?}: hop error {worst} > {bound}");
            assert!(worst > 0.0);
        }
    }

    /// A link rounded through fixed8/recon18 has every real on the grid k/127.
    #[test]
    fn fixed8_links_land_on_the_grid() {
        let lattice = crate::lattice::Lattice::new([4, 4, 4, 4]).unwrap();
        let mut u = GaugeField::<f64>::random(lattice, 7);
        let f = LinkFormat::new(LinkStorage::Fixed(FixedWidth::Bits8), Compression::Full);
        round_gauge_field(f, &mut u).unwrap();
        for x in u.links().iter().flat_map(|l| l.to_reals()) {
            let k = x * 127.0;
            assert!((k - k.round()).abs() < 1e-12, "{x}");
        }
    }
}
