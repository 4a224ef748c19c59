//! The shape of a colour-spinor field: lattice, Ls, site subset, spins and colours.

use super::FieldError;
use crate::lattice::{Coords, Lattice, Lattice5D, Parity};
use std::fmt;

/// Largest number of complex components a field may hold: an allocation of
/// `Complex<f64>` (16 bytes each) must stay below `isize::MAX` bytes.
const MAX_COMPONENTS: usize = isize::MAX as usize / 16;

/// The sites a field lives on: the whole lattice, or one parity (even-odd
/// preconditioned vectors live on one parity).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SiteSubset {
    /// All V sites, stored in checkerboard order (even sites first).
    Full,
    /// The V/2 sites of one parity, stored by their index within that parity.
    Single(Parity),
}

/// The layout of a colour-spinor field ψ_{s, x, σ, a}: a 4D lattice, a fifth dimension of
/// extent Ls ≥ 1, a site subset, `nspin` spin and `ncolour` colour components.
///
/// Storage is one contiguous array of complex numbers indexed
///
/// offset(s, i, σ, a) = ((s · N_sites + i) · nspin + σ) · ncolour + a,
///
/// with s the fifth-dimension slice (slowest), i the site index within the subset (the
/// checkerboard index for [`SiteSubset::Full`], the index within the parity for
/// [`SiteSubset::Single`]), σ the spin and a the colour (fastest). Common shapes:
/// Wilson 4 × 3, staggered 1 × 3, domain wall 4 × 3 × Ls, multigrid coarse 2 × N_c.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SpinorLayout {
    lattice: Lattice,
    ls: usize,
    subset: SiteSubset,
    nspin: usize,
    ncolour: usize,
}

impl SpinorLayout {
    /// A general layout. Rejects `nspin` or `ncolour` = 0, Ls = 0, a 5D volume beyond
    /// the 32-bit site index ([`Lattice5D::new`]) and more complex components than an
    /// `f64` field could allocate.
    pub fn new(
        lattice: Lattice,
        ls: usize,
        subset: SiteSubset,
        nspin: usize,
        ncolour: usize,
    ) -> Result<Self, FieldError> {
        Lattice5D::new(lattice.dims(), ls)?;
        if nspin == 0 || ncolour == 0 {
            return Err(FieldError::EmptyComponents { nspin, ncolour });
        }
        let layout = Self {
            lattice,
            ls,
            subset,
            nspin,
            ncolour,
        };
        let sites = layout.sites_per_slice() * ls;
        let per_site = nspin.saturating_mul(ncolour);
        match sites.checked_mul(per_site) {
            Some(n) if n <= MAX_COMPONENTS => Ok(layout),
            _ => Err(FieldError::TooLarge { sites, per_site }),
        }
    }

    /// A 4D Wilson-type field: 4 spins × 3 colours, Ls = 1.
    pub fn wilson(lattice: Lattice, subset: SiteSubset) -> Self {
        Self::valid_small(lattice, 1, subset, 4)
    }

    /// A 4D staggered field (colour vectors): 1 spin × 3 colours, Ls = 1.
    pub fn staggered(lattice: Lattice, subset: SiteSubset) -> Self {
        Self::valid_small(lattice, 1, subset, 1)
    }

    /// A 5D domain-wall field: 4 spins × 3 colours on each of the Ls slices.
    pub fn domain_wall(lattice: Lattice5D, subset: SiteSubset) -> Self {
        Self::valid_small(*lattice.four(), lattice.ls(), subset, 4)
    }

    /// Layouts with 3 colours and at most 4 spins on an already validated (5D) lattice:
    /// the component count is at most 12 · MAX_SITES, which always fits.
    fn valid_small(lattice: Lattice, ls: usize, subset: SiteSubset, nspin: usize) -> Self {
        Self {
            lattice,
            ls,
            subset,
            nspin,
            ncolour: 3,
        }
    }

    /// The 4D lattice.
    pub fn lattice(&self) -> &Lattice {
        &self.lattice
    }

    /// Extent of the fifth dimension (1 for 4D fields).
    pub fn ls(&self) -> usize {
        self.ls
    }

    /// The sites the field lives on.
    pub fn subset(&self) -> SiteSubset {
        self.subset
    }

    /// Number of spin components per site.
    pub fn nspin(&self) -> usize {
        self.nspin
    }

    /// Number of colour components per spin.
    pub fn ncolour(&self) -> usize {
        self.ncolour
    }

    /// The same layout on a different site subset.
    pub fn with_subset(&self, subset: SiteSubset) -> Self {
        Self { subset, ..*self }
    }

    /// Number of sites per s-slice: V for the full lattice, V/2 for one parity.
    pub fn sites_per_slice(&self) -> usize {
        match self.subset {
            SiteSubset::Full => self.lattice.volume(),
            SiteSubset::Single(_) => self.lattice.half_volume(),
        }
    }

    /// Complex components per site, nspin · ncolour.
    pub fn site_len(&self) -> usize {
        self.nspin * self.ncolour
    }

    /// Total number of complex components, Ls · N_sites · nspin · ncolour.
    pub fn len(&self) -> usize {
        self.ls * self.sites_per_slice() * self.site_len()
    }

    /// Always false: a valid layout has at least one site and one component.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Checkerboard index of the site with index `i` within the subset.
    pub fn cb_of_site(&self, i: usize) -> usize {
        match self.subset {
            SiteSubset::Full => i,
            SiteSubset::Single(p) => self.lattice.join_cb(p, i),
        }
    }

    /// Coordinates of the site with index `i` within the subset.
    pub fn coords_of_site(&self, i: usize) -> Coords {
        self.lattice.coords_of_cb(self.cb_of_site(i))
    }

    /// Index within the subset of the site at `coords`: an error for coordinates outside
    /// the lattice or, for a single-parity field, a site of the other parity.
    pub fn site_of_coords(&self, coords: Coords) -> Result<usize, FieldError> {
        let cb = self
            .lattice
            .lex_to_cb(self.lattice.checked_lex_index(coords)?);
        match self.subset {
            SiteSubset::Full => Ok(cb),
            SiteSubset::Single(expected) => {
                let (found, i) = self.lattice.split_cb(cb);
                if found == expected {
                    Ok(i)
                } else {
                    Err(FieldError::WrongParity {
                        coords,
                        expected,
                        found,
                    })
                }
            }
        }
    }

    /// Offset of component (s, i, σ, a) in the storage array (see the type's docs).
    /// Indices are not checked here; [`Self::checked_offset`] checks them.
    #[inline]
    pub fn offset(&self, s: usize, site: usize, spin: usize, colour: usize) -> usize {
        ((s * self.sites_per_slice() + site) * self.nspin + spin) * self.ncolour + colour
    }

    /// Offset of the component at (s, coords, σ, a), every index checked.
    pub fn checked_offset(
        &self,
        s: usize,
        coords: Coords,
        spin: usize,
        colour: usize,
    ) -> Result<usize, FieldError> {
        check_index("s-slice", s, self.ls)?;
        check_index("spin", spin, self.nspin)?;
        check_index("colour", colour, self.ncolour)?;
        let site = self.site_of_coords(coords)?;
        Ok(self.offset(s, site, spin, colour))
    }

    /// The stream index of the site (s, coords) for the random generator: s · V + lex(x),
    /// the 5D lexicographic index, independent of subset and storage order.
    pub fn lex5_index(&self, s: usize, coords: Coords) -> u64 {
        (s * self.lattice.volume() + self.lattice.lex_index(coords)) as u64
    }

    /// Checks that `other` has the same layout.
    pub fn expect_same(&self, other: &Self) -> Result<(), FieldError> {
        if self == other {
            Ok(())
        } else {
            Err(FieldError::LayoutMismatch {
                expected: self.to_string(),
                found: other.to_string(),
            })
        }
    }
}

/// `Ok` when `index < limit`, else [`FieldError::IndexOutOfRange`].
fn check_index(what: &'static str, index: usize, limit: usize) -> Result<(), FieldError> {
    if index < limit {
        Ok(())
    } else {
        Err(FieldError::IndexOutOfRange { what, index, limit })
    }
}

impl fmt::Display for SiteSubset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SiteSubset::Full => write!(f, "full lattice"),
            SiteSubset::Single(Parity::Even) => write!(f, "even sites"),
            SiteSubset::Single(Parity::Odd) => write!(f, "odd sites"),
        }
    }
}

impl fmt::Display for SpinorLayout {
    /// E.g. `4×4×4×8 × Ls 16, even sites, 4 spins × 3 colours`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} × Ls {}, {}, {} spins × {} colours",
            self.lattice, self.ls, self.subset, self.nspin, self.ncolour
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_validation_and_messages() {
        let lat = Lattice::new([4, 4, 4, 8]).unwrap();
        assert!(matches!(
            SpinorLayout::new(lat, 1, SiteSubset::Full, 0, 3),
            Err(FieldError::EmptyComponents {
                nspin: 0,
                ncolour: 3
            })
        ));
        assert!(matches!(
            SpinorLayout::new(lat, 0, SiteSubset::Full, 4, 3),
            Err(FieldError::Geometry(_))
        ));
        assert!(matches!(
            SpinorLayout::new(lat, 1, SiteSubset::Full, usize::MAX / 2, 3),
            Err(FieldError::TooLarge { .. })
        ));
        let l = SpinorLayout::new(lat, 2, SiteSubset::Single(Parity::Odd), 2, 24).unwrap();
        assert_eq!(l.len(), 2 * 256 * 2 * 24);
        assert_eq!(
            l.to_string(),
            "4×4×4×8 × Ls 2, odd sites, 2 spins × 24 colours"
        );
        let err = l.checked_offset(0, [0, 0, 0, 0], 0, 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "site [0, 0, 0, 0] has Even parity, but the field holds only Odd sites"
        );
        let err = l.checked_offset(2, [1, 0, 0, 0], 0, 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "s-slice index 2 is out of range: the field has 2"
        );
        let err = l.checked_offset(0, [1, 0, 0, 8], 0, 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "coordinate 8 in direction t is outside the lattice extent 8"
        );
        let err = SpinorLayout::wilson(lat, SiteSubset::Full)
            .expect_same(&l)
            .unwrap_err();
        assert!(err
            .to_string()
            .contains("expected 4×4×4×8 × Ls 1, full lattice, 4 spins"));
    }

    /// The offset formula, checked on hand-computed positions: on a 2⁴ lattice the odd
    /// site (1,0,0,0) has lex 1, cb = 8 + 0, index 0 within the odd parity.
    #[test]
    fn offsets_follow_the_documented_order() {
        let lat = Lattice::new([2, 2, 2, 2]).unwrap();
        let full = SpinorLayout::new(lat, 3, SiteSubset::Full, 4, 3).unwrap();
        // s = 2, cb = 8, spin 1, colour 2: ((2·16 + 8)·4 + 1)·3 + 2 = 485.
        assert_eq!(full.checked_offset(2, [1, 0, 0, 0], 1, 2).unwrap(), 485);
        let odd = full.with_subset(SiteSubset::Single(Parity::Odd));
        // s = 2, i = 0: ((2·8 + 0)·4 + 1)·3 + 2 = 197.
        assert_eq!(odd.checked_offset(2, [1, 0, 0, 0], 1, 2).unwrap(), 197);
        assert_eq!(odd.coords_of_site(0), [1, 0, 0, 0]);
        assert_eq!(odd.lex5_index(2, [1, 0, 0, 0]), 2 * 16 + 1);
        let mut seen = vec![false; odd.len()];
        for s in 0..3 {
            for i in 0..odd.sites_per_slice() {
                for spin in 0..4 {
                    for c in 0..3 {
                        let o = odd
                            .checked_offset(s, odd.coords_of_site(i), spin, c)
                            .unwrap();
                        assert!(!seen[o]);
                        seen[o] = true;
                    }
                }
            }
        }
        assert!(seen.into_iter().all(|x| x));
    }
}
