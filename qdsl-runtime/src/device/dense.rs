//! Dense link fields on the device ([`DenseLinkField`]: Y_μ(x) ∈ C^{N×N}, the links of
//! the multigrid coarse operator, or one site matrix X(x) per site), in the layout the
//! dense CUDA kernels read (`qdsl_core::dsl::emit::cuda`'s dense path).
//!
//! A site holds S records (S = [`DenseKind::per_site`]: μ = 0…3 for links, 1 for a site
//! matrix) of 2N² reals, Y_μ(x) row-major with the real and imaginary parts
//! interleaved: real 2(rN + c) + j of record (x, μ) is Re/Im Y_μ(x)_{rc}. They are cut
//! into chunks like every device field ([`DeviceLayout`]), so that real k of record
//! (cb, μ) lies at byte
//!
//! offset(cb, μ, k) = ((μ · C + ⌊k/P⌋) · stride + cb) · W + (k mod P) · b,
//!
//! the gauge rule of the chunked structure of arrays. Only the native formats f64 and
//! f32 are stored (the dense kernels read nothing else); the device format is the plain
//! float format with S records per site ([`dense_link_layout`]). The image is built on
//! the host and copied as it is: a conversion kernel would hold a whole 2N²-real record
//! per thread.

use super::field::DeviceField;
use super::format::DeviceFormat;
use super::gpu::{DeviceError, Gpu};
use super::layout::DeviceLayout;
use super::reference::{decode_image, encode_image};
use qdsl_core::dsl::variant::StorageFormat;
use qdsl_core::field::{DenseKind, DenseLinkField};
use qdsl_core::lattice::Lattice;
use qdsl_core::{Complex, Real};

/// The layout of a dense field of `kind` (N × N matrices, `kind.per_site()` per site) on
/// `sites` sites stored as `format` (f64 or f32; an error naming the format for any
/// other).
pub fn dense_link_layout(
    n: usize,
    kind: DenseKind,
    sites: usize,
    format: StorageFormat,
) -> Result<DeviceLayout, DeviceError> {
    if !matches!(format, StorageFormat::F64 | StorageFormat::F32) {
        return Err(DeviceError::Shape(format!(
            "dense link fields are stored as f64 or f32, not {}",
            format.name()
        )));
    }
    let reals = 2 * n * n;
    let layout = DeviceLayout::new(DeviceFormat::Fermion(format.fermion_format()), reals, sites)?;
    Ok(DeviceLayout {
        subs: kind.per_site(),
        ..layout
    })
}

impl DeviceField {
    /// Uploads a dense link or site-matrix field, stored as `format` (f64 or f32): the
    /// records of [`dense_link_layout`] of its kind, rounded to `format` on the host.
    pub fn from_dense_links<T: Real>(
        gpu: &Gpu,
        field: &DenseLinkField<T>,
        format: StorageFormat,
    ) -> Result<Self, DeviceError> {
        let layout = dense_link_layout(field.n(), field.kind(), field.lattice().volume(), format)?;
        let host: Vec<f64> = field
            .data()
            .iter()
            .flat_map(|z| [z.re.to_f64(), z.im.to_f64()])
            .collect();
        let image = encode_image(&layout, &host)
            .map_err(|e| DeviceError::Shape(format!("encoding dense links: {e}")))?;
        Self::from_image(gpu, layout, &image)
    }

    /// Downloads a dense N × N field of `kind` on `lattice` (the inverse of
    /// [`Self::from_dense_links`]).
    pub fn to_dense_links<T: Real>(
        &self,
        gpu: &Gpu,
        lattice: Lattice,
        n: usize,
        kind: DenseKind,
    ) -> Result<DenseLinkField<T>, DeviceError> {
        let layout = *self.layout();
        let p = kind.per_site();
        if layout.subs != p || layout.host_reals != 2 * n * n || layout.sites != lattice.volume() {
            return Err(DeviceError::Shape(format!(
                "a dense {n} × {n} field of {p} matrices per site on {} sites cannot be read from a field of {} sites × {} records × {} reals",
                lattice.volume(),
                layout.sites,
                layout.subs,
                layout.host_reals
            )));
        }
        let reals = decode_image::<T>(&layout, &self.image(gpu)?)
            .map_err(|e| DeviceError::Shape(format!("decoding dense links: {e}")))?;
        let mut out = DenseLinkField::zeros_of(kind, lattice, n)
            .map_err(|e| DeviceError::Shape(e.to_string()))?;
        let volume = lattice.volume();
        for cb in 0..volume {
            for mu in 0..p {
                let start = (p * cb + mu) * 2 * n * n;
                for (z, r) in out
                    .link_mut(cb, mu)
                    .iter_mut()
                    .zip(reals[start..start + 2 * n * n].chunks_exact(2))
                {
                    *z = Complex::new(r[0], r[1]);
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qdsl_core::dsl::layout::SoaLayout;
    use qdsl_core::field::DenseLinkField;

    /// The layout agrees with the emitter's: 48 × 48 f32 links have 4608 reals per
    /// record in chunks of 4 reals (16 bytes), as `SoaLayout::new(2N², f32)` reads them,
    /// and real k of record (cb, μ) lies where the dense kernel's `ld_c` reads it:
    /// ((μ C + ⌊k/R⌋) stride + cb) R + k mod R reals from the start.
    #[test]
    fn layout_is_the_emitters_chunked_gauge_layout() {
        for (format, bytes) in [(StorageFormat::F32, 4), (StorageFormat::F64, 8)] {
            let sites = 80;
            let l = dense_link_layout(48, DenseKind::Links, sites, format).unwrap();
            let soa = SoaLayout::new(2 * 48 * 48, format);
            assert_eq!((l.subs, l.host_reals, l.stored_reals), (4, 4608, 4608));
            assert_eq!(l.real_bytes, bytes);
            assert_eq!(l.reals_per_chunk(), soa.reals_per_chunk());
            assert_eq!(l.chunks(), soa.chunks());
            assert_eq!(l.stride, 96);
            let r = 16 / bytes;
            for (cb, mu, k) in [(0, 0, 0), (7, 2, 4607), (79, 3, 1001), (33, 1, 6)] {
                let c = 4608 / r;
                let reals = ((mu * c + k / r) * 96 + cb) * r + k % r;
                assert_eq!(l.byte_offset(cb, mu, k), reals * bytes, "{cb} {mu} {k}");
            }
        }
        let e = dense_link_layout(48, DenseKind::Links, 16, StorageFormat::F16).unwrap_err();
        assert!(e.to_string().contains("f64 or f32, not f16"), "{e}");
    }

    /// A site-matrix field has one record of 2N² reals per site: real k of site cb at
    /// (⌊k/R⌋ stride + cb) R + k mod R reals, the link rule with μ = 0 only (what the
    /// dense kernel reads for `xm(x)`: chunk0 0, the output site's cb).
    #[test]
    fn site_matrix_layout_has_one_record_per_site() {
        let l = dense_link_layout(8, DenseKind::SiteMatrix, 16, StorageFormat::F64).unwrap();
        assert_eq!((l.subs, l.host_reals), (1, 128));
        assert_eq!((l.chunks(), l.stride), (64, 32));
        for (cb, k) in [(0, 0), (15, 127), (3, 9)] {
            assert_eq!(l.byte_offset(cb, 0, k), ((k / 2 * 32 + cb) * 2 + k % 2) * 8);
        }
        let lat = Lattice::new([2, 2, 2, 2]).unwrap();
        let x = DenseLinkField::<f64>::random_of(DenseKind::SiteMatrix, lat, 8, 4).unwrap();
        let host: Vec<f64> = x.data().iter().flat_map(|z| [z.re, z.im]).collect();
        let image = encode_image(&l, &host).unwrap();
        let at = |o: usize| f64::from_le_bytes(image.values[o..o + 8].try_into().unwrap());
        let z = x.link(11, 0)[3 * 8 + 5];
        assert_eq!(at(l.byte_offset(11, 0, 2 * (3 * 8 + 5))), z.re);
        assert_eq!(decode_image::<f64>(&l, &image).unwrap(), host);
    }

    /// The host image of a random field holds Y_μ(x)_{rc} at the offsets of the module
    /// docs, and decodes back exactly (f64).
    #[test]
    fn image_places_every_entry() {
        let lat = Lattice::new([2, 2, 2, 2]).unwrap();
        let y = DenseLinkField::<f64>::random(lat, 4, 9).unwrap();
        let l = dense_link_layout(4, DenseKind::Links, lat.volume(), StorageFormat::F64).unwrap();
        let host: Vec<f64> = y.data().iter().flat_map(|z| [z.re, z.im]).collect();
        let image = encode_image(&l, &host).unwrap();
        let at = |o: usize| f64::from_le_bytes(image.values[o..o + 8].try_into().unwrap());
        for (cb, mu, r, c) in [(0, 0, 0, 0), (5, 3, 2, 1), (15, 1, 3, 3)] {
            let z = y.link(cb, mu)[r * 4 + c];
            let k = 2 * (r * 4 + c);
            // 32 reals per record in chunks of 2 f64: chunk k/2, stride 32.
            let re = ((mu * 16 + k / 2) * 32 + cb) * 16;
            assert_eq!(at(re), z.re);
            assert_eq!(at(re + 8), z.im);
        }
        let back = decode_image::<f64>(&l, &image).unwrap();
        assert_eq!(back, host);
    }
}
