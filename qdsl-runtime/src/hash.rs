//! A stable content hash: 128-bit FNV-1a.
//!
//! Cache keys must be identical across processes, Rust releases and machines, which
//! `std`'s `DefaultHasher` does not promise. FNV-1a-128 does:
//!
//! h₀ = 0x6c62272e07bb014262b821756295c58d, h ← (h ⊕ byte) · p mod 2¹²⁸,
//! p = 2⁸⁸ + 2⁸ + 0x3b.
//!
//! It is not cryptographic; it only has to make accidental collisions between cache
//! entries negligible (2⁻⁶⁴ birthday bound).

/// FNV-1a-128 offset basis.
const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
/// FNV-1a-128 prime, 2⁸⁸ + 2⁸ + 0x3b.
const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;

/// Incremental FNV-1a-128 hasher.
#[derive(Clone, Copy, Debug)]
pub struct StableHasher {
    state: u128,
}

impl Default for StableHasher {
    fn default() -> Self {
        Self::new()
    }
}

impl StableHasher {
    /// A hasher in the initial state h₀.
    pub fn new() -> Self {
        Self { state: OFFSET }
    }

    /// Feeds raw bytes: h ← (h ⊕ b) · p for each byte b.
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.state = (self.state ^ u128::from(b)).wrapping_mul(PRIME);
        }
    }

    /// Feeds one field of a composite key: its length as 8 little-endian bytes, then its
    /// bytes, so that ("ab", "c") and ("a", "bc") hash differently.
    pub fn write_field(&mut self, bytes: &[u8]) {
        self.write(&(bytes.len() as u64).to_le_bytes());
        self.write(bytes);
    }

    /// The hash value.
    pub fn finish(&self) -> u128 {
        self.state
    }

    /// The hash as 32 lower-case hex digits.
    pub fn hex(&self) -> String {
        format!("{:032x}", self.state)
    }
}

/// FNV-1a-128 of `bytes`.
pub fn fnv1a_128(bytes: &[u8]) -> u128 {
    let mut h = StableHasher::new();
    h.write(bytes);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Published FNV-1a-128 test vectors (the FNV reference test suite).
    #[test]
    fn matches_published_vectors() {
        assert_eq!(fnv1a_128(b""), 0x6c62272e07bb014262b821756295c58d);
        assert_eq!(fnv1a_128(b"a"), 0xd228cb696f1a8caf78912b704e4a8964);
        assert_eq!(fnv1a_128(b"foobar"), 0x343e1662793c64bf6f0d3597ba446f18);
    }

    #[test]
    fn fields_are_length_prefixed() {
        let mut a = StableHasher::new();
        a.write_field(b"ab");
        a.write_field(b"c");
        let mut b = StableHasher::new();
        b.write_field(b"a");
        b.write_field(b"bc");
        assert_ne!(a.finish(), b.finish());
        assert_eq!(a.hex().len(), 32);
    }
}
