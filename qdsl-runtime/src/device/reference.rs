//! CPU references for device fields, independent of the generated CUDA:
//!
//! * [`encode_image`] / [`decode_image`]: the exact bytes a device field must hold,
//!   computed with `qdsl_core::format` record by record and placed at
//!   [`DeviceLayout::byte_offset`]. A GPU upload must reproduce them bit for bit
//!   (the lead's GPU check compares them).
//! * [`emulate`]: the fixed-point and recon-12 arithmetic of the generated kernels
//!   (`super::codegen`), written out line for line in Rust, so that the CPU tests can
//!   check it bit for bit against `qdsl_core::format` (the float widths are hardware
//!   conversions, `cvt.rn`, checked on the GPU).

use super::format::DeviceFormat;
use super::layout::DeviceLayout;
use qdsl_core::format::{FormatError, LinkSign, SuCheck};
use qdsl_core::math::ColourMatrix;
use qdsl_core::Real;

/// The contents of a device field: the value arrays and the per-site norms.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceImage {
    /// [`DeviceLayout::value_bytes`] bytes (padding zero).
    pub values: Vec<u8>,
    /// One norm per site for fixed-point fermions, else empty.
    pub norms: Vec<f32>,
}

/// Errors of the reference conversion.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The host array's length is not sites · records · reals.
    #[error("host data has {found} reals, expected {expected} ({sites} sites × {records} records × {reals} reals)")]
    Length {
        /// Expected length.
        expected: usize,
        /// Given length.
        found: usize,
        /// Sites.
        sites: usize,
        /// Records per site.
        records: usize,
        /// Reals per record.
        reals: usize,
    },
    /// The format refused a record.
    #[error("site {site}, record {record}: {source}")]
    Format {
        /// Site index.
        site: usize,
        /// Record within the site (μ for links).
        record: usize,
        /// The format's error.
        source: FormatError,
    },
    /// The format is not supported on the device.
    #[error(transparent)]
    Unsupported(#[from] super::format::UnsupportedFormat),
}

/// Bytes of one record in qdsl-core's record format, and where its stored reals start.
fn record_shape(layout: &DeviceLayout) -> (usize, usize) {
    let head = if layout.format.has_norm() { 4 } else { 0 };
    (head + layout.stored_reals * layout.real_bytes, head)
}

fn check_len(layout: &DeviceLayout, found: usize) -> Result<(), ImageError> {
    let expected = layout.sites * layout.subs * layout.host_reals;
    if found == expected {
        Ok(())
    } else {
        Err(ImageError::Length {
            expected,
            found,
            sites: layout.sites,
            records: layout.subs,
            reals: layout.host_reals,
        })
    }
}

/// The device image of host data (host order, as f64) in `layout`'s format.
pub fn encode_image(layout: &DeviceLayout, host: &[f64]) -> Result<DeviceImage, ImageError> {
    check_len(layout, host.len())?;
    let (record_bytes, head) = record_shape(layout);
    let mut image = DeviceImage {
        values: vec![0; layout.value_bytes()],
        norms: vec![
            0.0;
            if layout.format.has_norm() {
                layout.sites
            } else {
                0
            }
        ],
    };
    let mut record = vec![0u8; record_bytes];
    let n = layout.host_reals;
    for site in 0..layout.sites {
        for sub in 0..layout.subs {
            let start = (site * layout.subs + sub) * n;
            let reals = &host[start..start + n];
            let err = |source| ImageError::Format {
                site,
                record: sub,
                source,
            };
            match layout.format {
                DeviceFormat::Fermion(f) => f.encode(reals, &mut record).map_err(err)?,
                DeviceFormat::Link(l) => {
                    let mut r = [0.0; 18];
                    r.copy_from_slice(reals);
                    let m = ColourMatrix::from_reals(&r);
                    l.encode_checked(&m, LinkSign::Plus, SuCheck::Skip, &mut record)
                        .map_err(err)?
                }
            }
            if head == 4 {
                image.norms[site] =
                    f32::from_le_bytes([record[0], record[1], record[2], record[3]]);
            }
            for k in 0..layout.stored_reals {
                let at = layout.byte_offset(site, sub, k);
                let from = head + k * layout.real_bytes;
                image.values[at..at + layout.real_bytes]
                    .copy_from_slice(&record[from..from + layout.real_bytes]);
            }
        }
    }
    Ok(image)
}

/// Decodes a device image into host-order reals of `T`, with `qdsl_core::format`.
pub fn decode_image<T: Real>(
    layout: &DeviceLayout,
    image: &DeviceImage,
) -> Result<Vec<T>, ImageError> {
    let (record_bytes, head) = record_shape(layout);
    let n = layout.host_reals;
    let mut out = vec![T::zero(); layout.sites * layout.subs * n];
    let mut record = vec![0u8; record_bytes];
    for site in 0..layout.sites {
        for sub in 0..layout.subs {
            if head == 4 {
                record[..4].copy_from_slice(&image.norms[site].to_le_bytes());
            }
            for k in 0..layout.stored_reals {
                let at = layout.byte_offset(site, sub, k);
                let to = head + k * layout.real_bytes;
                record[to..to + layout.real_bytes]
                    .copy_from_slice(&image.values[at..at + layout.real_bytes]);
            }
            let start = (site * layout.subs + sub) * n;
            let dst = &mut out[start..start + n];
            let err = |source| ImageError::Format {
                site,
                record: sub,
                source,
            };
            match layout.format {
                DeviceFormat::Fermion(f) => f.decode(&record, dst).map_err(err)?,
                DeviceFormat::Link(l) => {
                    let m = l.decode::<T>(&record, LinkSign::Plus).map_err(err)?;
                    dst.copy_from_slice(&m.to_reals());
                }
            }
        }
    }
    Ok(out)
}

/// The generated kernels' fixed-point and recon-12 arithmetic, line for line.
pub mod emulate {
    use qdsl_core::format::FixedWidth;
    use qdsl_core::Real;

    /// `__double2float_ru(m)` for m ≥ 0: the smallest f32 ≥ m (+∞ beyond `f32::MAX`).
    pub fn double2float_ru(m: f64) -> f32 {
        let f = m as f32;
        if (f as f64) < m {
            f32::from_bits(f.to_bits() + 1)
        } else {
            f
        }
    }

    /// The fixed-point fermion encode of `qdsl_encode_record`: (norm, q_k).
    pub fn fixed_fermion_encode(w: FixedWidth, r: &[f64]) -> (f32, Vec<i32>) {
        let q = w.max_int();
        let m = r.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let norm = double2float_ru(m);
        let c = if norm > 0.0 {
            q as f64 / norm as f64
        } else {
            0.0
        };
        let ints = r
            .iter()
            .map(|x| ((x * c).round_ties_even() as i32).clamp(-q, q))
            .collect();
        (norm, ints)
    }

    /// The fixed-point decode of `qdsl_decode_record` in T: `scale = (T)norm · inv_q`
    /// (or `inv_q` for links, `norm` = None), r_k = (T)q_k · scale.
    pub fn fixed_decode<T: Real>(w: FixedWidth, norm: Option<f32>, q: &[i32]) -> Vec<T> {
        let inv_q = w.inv_max::<T>();
        let scale = norm.map_or(inv_q, |n| T::from_f64(n as f64) * inv_q);
        q.iter().map(|&q| T::from_f64(q as f64) * scale).collect()
    }

    /// The fixed-point link encode: q = round_half_even(v · Q) (range checked apart).
    pub fn fixed_link_encode(w: FixedWidth, v: f64) -> i32 {
        (v * w.max_int() as f64).round_ties_even() as i32
    }

    /// Row 2 of recon 12 as the generated code computes it, from the 12 reals of rows 0
    /// and 1: for (i, j) = (1, 2), (2, 0), (0, 1): p = a_i b_j, q = a_j b_i (expanded),
    /// c = (p.re − q.re, −(p.im − q.im)).
    pub fn recon12_row2<T: Real>(r: &[T; 12]) -> [T; 6] {
        let mut out = [T::zero(); 6];
        for (k, (i, j)) in [(1, 2), (2, 0), (0, 1)].into_iter().enumerate() {
            let (ar, ai, bjr, bji) = (r[2 * i], r[2 * i + 1], r[6 + 2 * j], r[7 + 2 * j]);
            let (ajr, aji, bir, bii) = (r[2 * j], r[2 * j + 1], r[6 + 2 * i], r[7 + 2 * i]);
            let (pr, pi) = (ar * bjr - ai * bji, ar * bji + ai * bjr);
            let (qr, qi) = (ajr * bir - aji * bii, ajr * bii + aji * bir);
            out[2 * k] = pr - qr;
            out[2 * k + 1] = -(pi - qi);
        }
        out
    }
}

#[cfg(test)]
mod tests;
