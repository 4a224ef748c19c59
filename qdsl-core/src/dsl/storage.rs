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
//! * long links of improved staggered kernels (`long_recon` 13/12/9): L ↦
//!   decode(encode(L)) with [`ScaledLinkFormat`] and the field's scale
//!   ([`round_long_field`]).
//!
//! Values a format cannot hold (f16 overflow, non-finite fixed point, non-SU(3) links
//! under compression) are errors, never silent infinities.

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
