//! Compressed long links on the device ([`DeviceLongLinks`]): a field of links L = c·W,
//! W ∈ U(3), encoded on the host with [`ScaledLinkFormat`] (recon 13, 12 + sign or 9)
//! and uploaded in the layout the CUDA emitter reads (qdsl-core's
//! `dsl/emit/cuda/long_link.rs`):
//!
//! ```text
//! record  f_<name>:      the record reals of link (cb site i, μ), a recon-12 (recon 13,
//!                        12 + sign) or recon-8 (recon 9) link field in the gauge storage,
//!                        at DeviceLayout::byte_offset(i, μ, k)
//! phase   phase_<name>:  recon 13 and 9: their last real, t = arg(det W)/π, element
//!                        μ·stride + i (one stored real); recon 12 + sign has none (the
//!                        kernel computes each link's staggered sign s)
//! scale   scale_<name>:  c, a kernel parameter in the compute type (signed for
//!                        recon 12 + sign: L = c·s·V)
//! ```

use super::format::DeviceFormat;
use super::gpu::{driver, DeviceError, Gpu};
use super::layout::DeviceLayout;
use super::reference::DeviceImage;
use super::DeviceField;
use cudarc::driver::CudaSlice;
use qdsl_core::dsl::long_links::LONG_LINK_STEPS;
use qdsl_core::dsl::Variant;
use qdsl_core::field::GaugeField;
use qdsl_core::format::link::{
    ScaledCompression, ScaledLinkError, ScaledLinkFormat, SCALED_TOLERANCE,
};
use qdsl_core::format::{Compression, FormatError, LinkFormat};
use qdsl_core::lattice::Coords;
use qdsl_core::Real;

/// What goes wrong encoding or uploading a long-link field.
#[derive(Debug, thiserror::Error)]
pub enum LongLinkError {
    /// A link could not be encoded.
    #[error(
        "long link U_{mu} at site {coords:?} (checkerboard index {site}) in {format}: {source}"
    )]
    Encode {
        /// Checkerboard index of the site.
        site: usize,
        /// Its coordinates.
        coords: Coords,
        /// Direction.
        mu: usize,
        /// The format, e.g. "f32/recon13".
        format: String,
        /// The format's error (boxed: it is large).
        source: Box<FormatError>,
    },
    /// The field is not what the compression needs (c·U(3); c·s·SU(3) for recon 12 +
    /// sign): the scale search names the link.
    #[error(transparent)]
    Scale(#[from] ScaledLinkError),
    /// The device side failed (layout, allocation, copy).
    #[error(transparent)]
    Device(#[from] DeviceError),
}

/// The scaled format of `variant`'s long links: its gauge storage with its `long_recon`
/// compression; `None` for long recon 18 (plain gauge fields).
pub fn scaled_format(variant: &Variant) -> Option<ScaledLinkFormat> {
    let compression = variant.long_recon.compression()?;
    Some(ScaledLinkFormat::new(
        variant.gauge.link_storage(),
        compression,
    ))
}

/// The link format whose device layout holds the record of `format`: recon 12 for
/// recon 13 (rows 0, 1 of W) and recon 12 + sign (rows 0, 1 of V), recon 8 for recon 9
/// (recon 8 of V), in the same storage.
pub fn record_format(format: ScaledLinkFormat) -> LinkFormat {
    let compression = match format.compression {
        ScaledCompression::Recon13 | ScaledCompression::Recon12 => Compression::Recon12,
        ScaledCompression::Recon9 => Compression::Recon8,
    };
    LinkFormat::new(format.storage, compression)
}

/// The host image of a long-link field: the record field's bytes and, for recon 13 and
/// 9, the phase array (4·stride stored reals, padding zero).
#[derive(Clone, Debug, PartialEq)]
pub struct LongLinkImage {
    /// Layout of the record field.
    pub layout: DeviceLayout,
    /// The record field's bytes (no norms).
    pub record: DeviceImage,
    /// The phase array's bytes, real μ·stride + i at byte (μ·stride + i)·b; `None` for
    /// recon 12 + sign.
    pub phase: Option<Vec<u8>>,
}

/// Encodes every link of `u` (checkerboard order, 4 links per site) with `format` and
/// the field's scale `scale` (c, from the compression's
/// [`field_scale`](ScaledCompression::field_scale); each link is encoded with its
/// [`link_scale`](ScaledCompression::link_scale)) and scatters the stored reals into the
/// record layout and the phase array (module docs).
pub fn encode_long_links<T: Real>(
    u: &GaugeField<T>,
    format: ScaledLinkFormat,
    scale: f64,
) -> Result<LongLinkImage, LongLinkError> {
    let lattice = *u.lattice();
    let layout = DeviceLayout::new(
        DeviceFormat::Link(record_format(format)),
        0,
        lattice.volume(),
    )
    .map_err(DeviceError::from)?;
    let b = layout.real_bytes;
    let record_reals = format.compression.record_reals();
    let mut values = vec![0u8; layout.value_bytes()];
    let mut phase = format
        .compression
        .stores_phase()
        .then(|| vec![0u8; 4 * layout.stride * b]);
    let mut bytes = vec![0u8; format.bytes_per_link()];
    for (k, link) in u.links().iter().enumerate() {
        let (site, mu) = (k / 4, k % 4);
        let coords = lattice.coords_of_cb(site);
        let c = format
            .compression
            .link_scale(scale, &lattice, coords, mu, LONG_LINK_STEPS);
        format
            .encode(link, c, &mut bytes)
            .map_err(|source| LongLinkError::Encode {
                site,
                coords,
                mu,
                format: format.name(),
                source: Box::new(source),
            })?;
        let (record, t) = bytes.split_at(record_reals * b);
        for (r, real) in record.chunks_exact(b).enumerate() {
            let at = layout.byte_offset(site, mu, r);
            values[at..at + b].copy_from_slice(real);
        }
        if let Some(phase) = phase.as_mut() {
            let at = (mu * layout.stride + site) * b;
            phase[at..at + b].copy_from_slice(t);
        }
    }
    Ok(LongLinkImage {
        layout,
        record: DeviceImage {
            values,
            norms: Vec::new(),
        },
        phase,
    })
}

/// A compressed long-link field on the GPU: the record field (`f_<name>`), the phase
/// array (`phase_<name>`, recon 13 and 9) and the scale c (`scale_<name>`).
#[derive(Debug)]
pub struct DeviceLongLinks {
    record: DeviceField,
    phase: Option<CudaSlice<u8>>,
    scale: f64,
}

/// The extra kernel arguments of one compressed long field: its phase array (recon 13
/// and 9) and scale.
#[derive(Clone, Copy, Debug)]
pub struct LongLinkArgs<'a> {
    /// `phase_<name>`; `None` for recon 12 + sign.
    pub phase: Option<&'a CudaSlice<u8>>,
    /// `scale_<name>` (c), converted to the compute type at launch.
    pub scale: f64,
}

impl DeviceLongLinks {
    /// Encodes `u` = c·W with `format` and `scale` = c on the host
    /// ([`encode_long_links`]) and copies the record and the phase array to the GPU.
    pub fn upload<T: Real>(
        gpu: &Gpu,
        u: &GaugeField<T>,
        format: ScaledLinkFormat,
        scale: f64,
    ) -> Result<Self, LongLinkError> {
        let image = encode_long_links(u, format, scale)?;
        let record = DeviceField::from_image(gpu, image.layout, &image.record)?;
        let phase = match &image.phase {
            Some(bytes) => {
                let what = format!("the phases of a {} long-link field", format.name());
                let mut phase = gpu.alloc::<u8>(&what, bytes.len())?;
                gpu.backend()
                    .stream()
                    .memcpy_htod(bytes, &mut phase)
                    .map_err(driver("copying long-link phases to the GPU"))?;
                Some(phase)
            }
            None => None,
        };
        Ok(Self {
            record,
            phase,
            scale,
        })
    }

    /// Uploads `u` in `variant`'s long-link compression with the field scale the
    /// compression finds on it ([`ScaledCompression::field_scale`], every link checked:
    /// c·U(3) for recon 13 and 9, c·s·SU(3) for recon 12 + sign); `None` for long recon
    /// 18, whose links are a plain gauge field.
    pub fn upload_for<T: Real>(
        gpu: &Gpu,
        u: &GaugeField<T>,
        variant: &Variant,
    ) -> Result<Option<Self>, LongLinkError> {
        let Some(format) = scaled_format(variant) else {
            return Ok(None);
        };
        let scale = format
            .compression
            .field_scale(u, LONG_LINK_STEPS, SCALED_TOLERANCE)?;
        Self::upload(gpu, u, format, scale).map(Some)
    }

    /// The record field (the kernel's `f_<name>` input).
    pub fn record(&self) -> &DeviceField {
        &self.record
    }

    /// The phase array and the scale, for [`crate::operator::device::DeviceStencil`].
    pub fn args(&self) -> LongLinkArgs<'_> {
        LongLinkArgs {
            phase: self.phase.as_ref(),
            scale: self.scale,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qdsl_core::dsl::variant::{LongRecon, StorageFormat};
    use qdsl_core::format::{FixedWidth, FloatWidth, LinkStorage};
    use qdsl_core::lattice::Lattice;
    use qdsl_core::math::ColourMatrix;
    use qdsl_core::Complex;
    use std::f64::consts::PI;

    /// Every link c·diag(e^{iα}, e^{iβ}, e^{iγ}) on 2⁴ (V = 16, stride 32).
    fn diagonal_field(c: f64, angles: [f64; 3]) -> GaugeField<f64> {
        let lat = Lattice::new([2, 2, 2, 2]).unwrap();
        let mut u = GaugeField::<f64>::unit(lat);
        let mut m = ColourMatrix::<f64>::zero();
        for (a, &th) in angles.iter().enumerate() {
            m.0[a][a] = Complex::from_polar(c, th);
        }
        u.links_mut().iter_mut().for_each(|l| *l = m);
        u
    }

    fn f32_at(bytes: &[u8], at: usize) -> f32 {
        f32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
    }

    /// The f32 record of every link μ at each of `sites` holds rows 0, 1 of
    /// diag(e^{iα}, e^{iβ}, e^{iγ}) (`angles`): 1 + 0i … at W₀₀ = e^{iα}, W₁₁ = e^{iβ},
    /// zeros elsewhere, at the recon-12 offsets (3 float4 chunks per link, stride 32).
    fn assert_diagonal_rows(img: &LongLinkImage, angles: [f64; 3], sites: &[usize]) {
        let mut w = [0.0f64; 12];
        (w[0], w[1]) = (angles[0].cos(), angles[0].sin());
        (w[8], w[9]) = (angles[1].cos(), angles[1].sin());
        for &site in sites {
            for mu in 0..4 {
                for (k, &want) in w.iter().enumerate() {
                    let at = ((mu * 3 + k / 4) * 32 + site) * 16 + (k % 4) * 4;
                    let got = f32_at(&img.record.values, at);
                    assert_eq!(got, want as f32, "{site} {mu} {k}");
                }
            }
        }
    }

    /// f32 recon 13 of L = −0.25·diag(e^{0.3i}, e^{−0.5i}, e^{1.1i}) with c = −0.25 (W =
    /// diag(e^{iα}, …)): the record is rows 0, 1 of W, by hand (1 + 0i … at W₀₀ = e^{0.3i},
    /// W₁₁ = e^{−0.5i}, zeros elsewhere) at the recon-12 offsets (3 float4 chunks per link),
    /// the phase t = (0.3 − 0.5 + 1.1)/π at element μ·32 + i.
    #[test]
    fn recon13_f32_record_and_phase_by_hand() {
        let (c, angles) = (-0.25, [0.3, -0.5, 1.1]);
        let u = diagonal_field(c, angles);
        let format = ScaledLinkFormat::new(
            LinkStorage::Float(FloatWidth::F32),
            ScaledCompression::Recon13,
        );
        let img = encode_long_links(&u, format, c).unwrap();
        assert_eq!((img.layout.stride, img.layout.stored_reals), (32, 12));
        assert_eq!(img.record.values.len(), 4 * 3 * 32 * 16);
        let phase = img.phase.as_ref().expect("recon 13 stores phases");
        assert_eq!(phase.len(), 4 * 32 * 4);
        assert_diagonal_rows(&img, angles, &[0, 7, 15]);
        let t = angles.iter().sum::<f64>() / PI;
        for site in [0, 7, 15] {
            for mu in 0..4 {
                assert_eq!(f32_at(phase, (mu * 32 + site) * 4), t as f32);
            }
        }
        // Padding sites 16..32 stay zero.
        assert_eq!(f32_at(phase, (2 * 32 + 20) * 4), 0.0);
    }

    /// fixed16 recon 9: the record is the 8 reals of recon 8 (16 bytes, one uint4 chunk
    /// per link) and the phase word is the fixed-point t: round(t·32767) for
    /// t = (0.2 + 0.4 − 0.3)/π (c = 1).
    #[test]
    fn recon9_fixed16_record_shape_and_phase_word() {
        let angles = [0.2, 0.4, -0.3];
        let u = diagonal_field(1.0, angles);
        let format = ScaledLinkFormat::new(
            LinkStorage::Fixed(FixedWidth::Bits16),
            ScaledCompression::Recon9,
        );
        let img = encode_long_links(&u, format, 1.0).unwrap();
        assert_eq!(img.layout.stored_reals, 8);
        assert_eq!((img.layout.chunk_bytes, img.layout.chunks()), (16, 1));
        let t = angles.iter().sum::<f64>() / PI;
        let q = (t * 32767.0).round() as i16;
        let at = (3 * 32 + 9) * 2;
        let phase = img.phase.as_ref().expect("recon 9 stores phases");
        assert_eq!(i16::from_le_bytes([phase[at], phase[at + 1]]), q);
    }

    /// f32 recon 12 + sign of L_μ(x) = c·s_μ(x)·D, D = diag(e^{0.3i}, e^{−0.5i}, e^{0.2i}) ∈
    /// SU(3), c = −0.25, s the staggered sign of 3-site links on 2⁴: the field scale found
    /// is c itself (negative), every record holds rows 0, 1 of D whatever the link's sign,
    /// at the recon-12 offsets, and there is no phase array.
    #[test]
    fn recon12_sign_f32_record_by_hand() {
        let angles = [0.3, -0.5, 0.2];
        let d = diagonal_field(1.0, angles);
        let lat = *d.lattice();
        let c = -0.25;
        let u = GaugeField::from_fn(lat, |x, mu| {
            let s = qdsl_core::lattice::staggered_link_sign(&lat, x, mu, 3);
            d.link_at(x, mu).scale(c * f64::from(s))
        });
        let comp = ScaledCompression::Recon12;
        let found = comp
            .field_scale(&u, LONG_LINK_STEPS, SCALED_TOLERANCE)
            .unwrap();
        assert!((found - c).abs() < 1e-15, "{found}");
        let format = ScaledLinkFormat::new(LinkStorage::Float(FloatWidth::F32), comp);
        let img = encode_long_links(&u, format, found).unwrap();
        assert!(img.phase.is_none());
        assert_eq!((img.layout.stride, img.layout.stored_reals), (32, 12));
        let sites: Vec<usize> = (0..16).collect();
        assert_diagonal_rows(&img, angles, &sites);
        // Some links carry s = −1 on 2⁴ (η and the time boundary), some +1.
        let signs: Vec<i32> = (0..16)
            .map(|i| qdsl_core::lattice::staggered_link_sign(&lat, lat.coords_of_cb(i), 1, 3))
            .collect();
        assert!(signs.contains(&1) && signs.contains(&-1), "{signs:?}");
    }

    /// A link that is not finite is named with its site, direction and format.
    #[test]
    fn a_bad_link_is_named() {
        let mut u = diagonal_field(1.0, [0.0; 3]);
        u.links_mut()[4 * 5 + 2].0[1][1] = Complex::new(f64::NAN, 0.0);
        let v = Variant {
            gauge: StorageFormat::F32,
            long_recon: LongRecon::R13,
            ..Variant::default()
        };
        let format = scaled_format(&v).unwrap();
        let e = encode_long_links(&u, format, 1.0).unwrap_err().to_string();
        assert!(
            e.contains("U_2") && e.contains("index 5") && e.contains("f32/recon13"),
            "{e}"
        );
        assert!(scaled_format(&Variant::default()).is_none());
        assert_eq!(record_format(format).compression, Compression::Recon12);
    }
}

#[cfg(test)]
#[path = "long_links_gpu_tests.rs"]
mod gpu_tests;
