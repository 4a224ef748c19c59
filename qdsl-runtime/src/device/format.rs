//! What a device field stores: a fermion format or a gauge-link format of qdsl-core.

use qdsl_core::format::fermion::GROUP_REALS;
use qdsl_core::format::{
    FermionFormat, FixedWidth, FloatWidth, LinkFormat, LinkStorage, PackedWidth,
};
use std::fmt;

/// How one stored real is held on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StoredReal {
    /// An IEEE float of this width.
    Float(FloatWidth),
    /// A fixed-point integer of this width.
    Fixed(FixedWidth),
    /// Bit-packed groups of 6 reals of this width: the stored units are the groups'
    /// little-endian 32-bit words ([`PACKED_WORD_BYTES`] bytes each), 4 per packed20 group
    /// and 6 per packed30 group, in the word order of [`qdsl_core::format`]'s byte record.
    Packed(PackedWidth),
}

/// Bytes of one stored unit of a packed format: a 32-bit word of a group.
pub const PACKED_WORD_BYTES: usize = 4;

impl StoredReal {
    /// Bytes of one stored unit (a real; a 32-bit word for the packed formats).
    pub fn bytes(self) -> usize {
        match self {
            StoredReal::Float(w) => w.bytes(),
            StoredReal::Fixed(w) => w.bytes(),
            StoredReal::Packed(_) => PACKED_WORD_BYTES,
        }
    }
}

/// The storage format of a device field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceFormat {
    /// A colour-spinor (or colour-vector) field: per site, N reals in this format.
    Fermion(FermionFormat),
    /// A gauge field: per site, 4 links (μ = 0…3) in this format.
    Link(LinkFormat),
}

/// A format the device fields do not implement yet.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("device fields do not support the format {format} (supported: f64, f32, f16, bf16, fixed16, fixed8, packed20, packed30; links with recon18, recon12 or recon8)")]
pub struct UnsupportedFormat {
    /// The format's name.
    pub format: String,
}

impl DeviceFormat {
    /// The format's name, e.g. "f32", "fixed16/recon12".
    pub fn name(&self) -> String {
        match self {
            DeviceFormat::Fermion(f) => f.name().to_string(),
            DeviceFormat::Link(l) => l.name(),
        }
    }

    /// How each stored unit is held (every format of [`qdsl_core::format`] has a device
    /// form; the `Result` is kept for formats added there later).
    pub fn stored_real(&self) -> Result<StoredReal, UnsupportedFormat> {
        match *self {
            DeviceFormat::Fermion(FermionFormat::Float(w)) => Ok(StoredReal::Float(w)),
            DeviceFormat::Fermion(FermionFormat::Fixed(w)) => Ok(StoredReal::Fixed(w)),
            DeviceFormat::Fermion(FermionFormat::Packed(w)) => Ok(StoredReal::Packed(w)),
            DeviceFormat::Link(l) => Ok(match l.storage {
                LinkStorage::Float(w) => StoredReal::Float(w),
                LinkStorage::Fixed(w) => StoredReal::Fixed(w),
            }),
        }
    }

    /// Records per site: 4 links for gauge fields, 1 for fermions.
    pub fn records_per_site(&self) -> usize {
        match self {
            DeviceFormat::Fermion(_) => 1,
            DeviceFormat::Link(_) => 4,
        }
    }

    /// Host reals per record: `fermion_reals` for fermions, 18 for links.
    pub fn host_reals(&self, fermion_reals: usize) -> usize {
        match self {
            DeviceFormat::Fermion(_) => fermion_reals,
            DeviceFormat::Link(_) => 18,
        }
    }

    /// Stored units per record: the host reals for float and fixed-point fermions, the
    /// 32-bit words of the ⌈N/6⌉ groups for packed fermions (N = `fermion_reals`), 18, 12
    /// or 8 reals for links.
    pub fn stored_reals(&self, fermion_reals: usize) -> usize {
        match self {
            DeviceFormat::Fermion(FermionFormat::Packed(w)) => {
                fermion_reals.div_ceil(GROUP_REALS) * w.group_bytes() / PACKED_WORD_BYTES
            }
            DeviceFormat::Fermion(_) => fermion_reals,
            DeviceFormat::Link(l) => l.compression.reals(),
        }
    }

    /// Whether each site carries an f32 norm (fixed-point fermions).
    pub fn has_norm(&self) -> bool {
        matches!(self, DeviceFormat::Fermion(FermionFormat::Fixed(_)))
    }
}

impl fmt::Display for DeviceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// The precision of the plain host-order array uploaded before (or downloaded after) the
/// conversion kernel: the host field's own type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HostReal {
    /// `double`.
    F64,
    /// `float`.
    F32,
}

impl HostReal {
    /// The precision of a host field of `T` (by its size).
    pub fn of<T: qdsl_core::Real>() -> Self {
        if T::BYTES == 8 {
            HostReal::F64
        } else {
            HostReal::F32
        }
    }

    /// The CUDA type.
    pub fn cuda_type(self) -> &'static str {
        match self {
            HostReal::F64 => "double",
            HostReal::F32 => "float",
        }
    }
}
