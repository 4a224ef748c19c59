//! Byte-level helpers shared by every format: byte order, stored precision, bounds-checked
//! endian readers, real-number encoding, and whole-file reads and writes.

use super::IoError;
use std::path::Path;

/// Byte order of multi-byte numbers in a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// Most significant byte first (ILDG, SciDAC, LIME headers, NERSC `IEEE32BIG`).
    Big,
    /// Least significant byte first (openQCD, MILC written on x86).
    Little,
}

impl ByteOrder {
    /// The other byte order.
    pub fn swapped(self) -> Self {
        match self {
            ByteOrder::Big => ByteOrder::Little,
            ByteOrder::Little => ByteOrder::Big,
        }
    }

    /// Lower-case name ("big-endian", "little-endian").
    pub fn name(self) -> &'static str {
        match self {
            ByteOrder::Big => "big-endian",
            ByteOrder::Little => "little-endian",
        }
    }
}

/// Precision of the reals stored in a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Precision {
    /// IEEE-754 binary32 (4 bytes).
    Single,
    /// IEEE-754 binary64 (8 bytes).
    Double,
}

impl Precision {
    /// Bytes of one stored real.
    pub fn bytes(self) -> usize {
        match self {
            Precision::Single => 4,
            Precision::Double => 8,
        }
    }

    /// Short name of the stored type ("f32", "f64").
    pub fn name(self) -> &'static str {
        match self {
            Precision::Single => "f32",
            Precision::Double => "f64",
        }
    }

    /// Bits of one stored real (the ILDG `<precision>` value).
    pub fn bits(self) -> usize {
        8 * self.bytes()
    }

    /// Machine epsilon of the stored type, 2⁻²³ or 2⁻⁵², as f64.
    pub fn epsilon(self) -> f64 {
        match self {
            Precision::Single => f32::EPSILON as f64,
            Precision::Double => f64::EPSILON,
        }
    }
}

/// Reads a whole file.
pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>, IoError> {
    std::fs::read(path).map_err(|source| IoError::Os {
        path: path.to_path_buf(),
        action: "read the file",
        source,
    })
}

/// Writes a whole file (creating or truncating it).
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), IoError> {
    std::fs::write(path, bytes).map_err(|source| IoError::Os {
        path: path.to_path_buf(),
        action: "write the file",
        source,
    })
}

/// A file's bytes together with its path, so that every bounds failure names the file.
#[derive(Clone, Copy)]
pub(crate) struct Bytes<'a, 'p> {
    pub data: &'a [u8],
    pub path: &'p Path,
}

impl<'a, 'p> Bytes<'a, 'p> {
    /// Wraps a file's bytes.
    pub fn new(data: &'a [u8], path: &'p Path) -> Self {
        Self { data, path }
    }

    /// Length in bytes as u64.
    pub fn len(&self) -> u64 {
        self.data.len() as u64
    }

    /// `len` bytes at `offset`, or [`IoError::Truncated`] naming `what`.
    pub fn slice(&self, offset: u64, len: u64, what: &str) -> Result<&'a [u8], IoError> {
        let available = self.len().saturating_sub(offset);
        if offset > self.len() || len > available {
            return Err(IoError::Truncated {
                path: self.path.to_path_buf(),
                what: what.to_string(),
                offset,
                expected: len,
                found: available,
            });
        }
        // Both bounds are ≤ data.len(), which fits usize.
        let (start, end) = (offset as usize, (offset + len) as usize);
        Ok(&self.data[start..end])
    }

    /// A fixed-size array at `offset`.
    pub fn array<const N: usize>(&self, offset: u64, what: &str) -> Result<[u8; N], IoError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.slice(offset, N as u64, what)?);
        Ok(a)
    }

    /// A u16 at `offset` in the given byte order.
    pub fn u16(&self, offset: u64, order: ByteOrder, what: &str) -> Result<u16, IoError> {
        let a = self.array::<2>(offset, what)?;
        Ok(match order {
            ByteOrder::Big => u16::from_be_bytes(a),
            ByteOrder::Little => u16::from_le_bytes(a),
        })
    }

    /// A u32 at `offset` in the given byte order.
    pub fn u32(&self, offset: u64, order: ByteOrder, what: &str) -> Result<u32, IoError> {
        Ok(u32_from(self.array::<4>(offset, what)?, order))
    }

    /// An i32 at `offset` in the given byte order.
    pub fn i32(&self, offset: u64, order: ByteOrder, what: &str) -> Result<i32, IoError> {
        Ok(self.u32(offset, order, what)? as i32)
    }

    /// A u64 at `offset` in the given byte order.
    pub fn u64(&self, offset: u64, order: ByteOrder, what: &str) -> Result<u64, IoError> {
        let a = self.array::<8>(offset, what)?;
        Ok(match order {
            ByteOrder::Big => u64::from_be_bytes(a),
            ByteOrder::Little => u64::from_le_bytes(a),
        })
    }

    /// An f64 at `offset` in the given byte order.
    pub fn f64(&self, offset: u64, order: ByteOrder, what: &str) -> Result<f64, IoError> {
        Ok(f64::from_bits(self.u64(offset, order, what)?))
    }
}

/// A u32 from four bytes in the given order.
pub(crate) fn u32_from(a: [u8; 4], order: ByteOrder) -> u32 {
    match order {
        ByteOrder::Big => u32::from_be_bytes(a),
        ByteOrder::Little => u32::from_le_bytes(a),
    }
}

/// The consecutive 32-bit words of `bytes` (whose length is a multiple of 4) read in the
/// given order; a trailing partial word is ignored.
pub(crate) fn u32_words(bytes: &[u8], order: ByteOrder) -> impl Iterator<Item = u32> + '_ {
    bytes.chunks_exact(4).map(move |c| {
        let mut a = [0u8; 4];
        a.copy_from_slice(c);
        u32_from(a, order)
    })
}

/// The raw bits of one stored real (`chunk` holds exactly `precision.bytes()` bytes),
/// zero-extended to 64 bits for single precision.
pub(crate) fn decode_real_bits(chunk: &[u8], precision: Precision, order: ByteOrder) -> u64 {
    match precision {
        Precision::Single => {
            let mut a = [0u8; 4];
            a.copy_from_slice(chunk);
            u32_from(a, order) as u64
        }
        Precision::Double => {
            let mut a = [0u8; 8];
            a.copy_from_slice(chunk);
            match order {
                ByteOrder::Big => u64::from_be_bytes(a),
                ByteOrder::Little => u64::from_le_bytes(a),
            }
        }
    }
}

/// Decodes one stored real (exact: f32 widens to f64 without rounding).
pub(crate) fn decode_real(chunk: &[u8], precision: Precision, order: ByteOrder) -> f64 {
    let bits = decode_real_bits(chunk, precision, order);
    match precision {
        Precision::Single => f32::from_bits(bits as u32) as f64,
        Precision::Double => f64::from_bits(bits),
    }
}

/// Appends one real in the stored precision (f64 → f32 rounds to nearest).
pub(crate) fn encode_real(x: f64, precision: Precision, order: ByteOrder, out: &mut Vec<u8>) {
    match (precision, order) {
        (Precision::Single, ByteOrder::Big) => out.extend_from_slice(&(x as f32).to_be_bytes()),
        (Precision::Single, ByteOrder::Little) => out.extend_from_slice(&(x as f32).to_le_bytes()),
        (Precision::Double, ByteOrder::Big) => out.extend_from_slice(&x.to_be_bytes()),
        (Precision::Double, ByteOrder::Little) => out.extend_from_slice(&x.to_le_bytes()),
    }
}

/// Appends a u32 in the given order.
pub(crate) fn encode_u32(x: u32, order: ByteOrder, out: &mut Vec<u8>) {
    match order {
        ByteOrder::Big => out.extend_from_slice(&x.to_be_bytes()),
        ByteOrder::Little => out.extend_from_slice(&x.to_le_bytes()),
    }
}

/// Up to the first 16 bytes of `data` in hex, for messages about unrecognised content.
pub(crate) fn hex_preview(data: &[u8]) -> String {
    if data.is_empty() {
        return "none (empty file)".to_string();
    }
    data.iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endian_readers_agree_with_hand_assembled_values() {
        let data = [0x45, 0x67, 0x89, 0xab, 0x00, 0x01, 0x80, 0x00];
        let b = Bytes::new(&data, Path::new("x"));
        assert_eq!(b.u32(0, ByteOrder::Big, "m").unwrap(), 0x456789ab);
        assert_eq!(b.u32(0, ByteOrder::Little, "m").unwrap(), 0xab896745);
        assert_eq!(b.u16(6, ByteOrder::Big, "f").unwrap(), 0x8000);
        assert_eq!(b.u64(0, ByteOrder::Big, "q").unwrap(), 0x456789ab_00018000);
        let err = b.u32(6, ByteOrder::Big, "tail").unwrap_err().to_string();
        assert!(
            err.contains("expected 4 bytes, found 2") && err.contains("offset 6"),
            "{err}"
        );
        assert!(b.slice(u64::MAX, 1, "far").is_err());
        assert!(b.slice(9, 0, "past the end").is_err());
        assert_eq!(b.slice(8, 0, "at the end").unwrap(), &[] as &[u8]);
    }

    #[test]
    fn reals_round_trip_in_both_orders_and_precisions() {
        for p in [Precision::Single, Precision::Double] {
            for o in [ByteOrder::Big, ByteOrder::Little] {
                let mut v = Vec::new();
                encode_real(-1.5, p, o, &mut v);
                assert_eq!(v.len(), p.bytes());
                assert_eq!(decode_real(&v, p, o), -1.5);
            }
        }
        // 1.0f32 = 0x3f800000.
        let mut v = Vec::new();
        encode_real(1.0, Precision::Single, ByteOrder::Big, &mut v);
        assert_eq!(v, [0x3f, 0x80, 0, 0]);
    }
}
