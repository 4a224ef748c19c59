//! Open and Schrödinger-functional (SF) time boundaries of Wilson and Wilson-clover
//! quarks, as openQCD defines them (its boundary types 0, open, and 1, SF; type 2,
//! open-SF, is SF for the quarks with its own c_F' at the far end).
//!
//! # The operator (openQCD `modules/dirac/Dw_dble.c`, `modules/sw_term/sw_term.c`,
//! `modules/tcharge/ftensor.c`; Lüscher, Schaefer, arXiv:1206.2809)
//!
//! On a lattice of L_t time slices x0 = 0, …, L_t − 1 the quark fields **vanish** on
//!
//! * x0 = 0 and x0 = L_t − 1 with open boundaries (the gauge field is open at x0 = 0 and
//!   at T = L_t − 1; openQCD stores the time links U_t(x) of x0 = L_t − 1 as zero),
//! * x0 = 0 with SF boundaries (x0 = 0 holds the boundary gauge field, the far boundary
//!   x0 = T = L_t is the same slice after the wrap; openQCD's separate boundary field C'
//!   at T, which the clover term of x0 = T − 1 sees, is [`OpenBoundary::sf_fields`], see
//!   [`super::SfBoundaryFields`]),
//!
//! so the operator acts on the active slices between and no hop crosses the boundary:
//! with ψ = 0 on the vanishing slices the Wilson hop's (1 ∓ γ_t) terms to them drop out,
//! which is the lattice form of P₊ψ = 0 at x0 = 0 and P₋ψ = 0 at x0 = T. The O(a)
//! boundary improvement adds (c_F − 1) to the diagonal on the active slice next to each
//! boundary: in mass normalisation, D = A − ½ H with
//!
//! A(x) = (m + 4 + (c_F − 1) δ_{x0,1} + (c_F' − 1) δ_{x0,x0'})·1 + (i c_sw/2) Σ σ_μν F̂_μν(x)
//!
//! where x0' = L_t − 2 (open) or L_t − 1 (SF), and c_F' = c_F for open boundaries (and
//! openQCD's type 1). The field strength F̂ on the active slices is the ordinary four-leaf
//! clover of [`super::clover_field`]: openQCD's `ftensor` keeps all four leaves at every
//! active point (the leaves of x0 = 1 reach x0 = 0, those of x0 = L_t − 2 reach L_t − 1,
//! never the zero links). openQCD sets the SW term to unity on the vanishing slices.
//!
//! # How qdsl expresses it: through the fields, not the kernels
//!
//! * [`OpenBoundary::hop_links`]: a copy of the links with every link that has an end on
//!   a vanishing slice set to zero, so the generated hops (any backend, uncompressed
//!   links) connect no vanishing site to anything: the operator is block diagonal, D on
//!   the active slices and the site term alone on the vanishing ones (1, or 1 + iμγ5
//!   with a twisted mass: decoupled, and zero on a source that is zero there).
//! * [`OpenBoundary::improve_clover`]: the clover field made the unit matrix on the
//!   vanishing slices (openQCD's choice; any invertible block decouples) and shifted by
//!   (c_F − 1) on the improvement slices.
//! * [`OpenBoundary::project`]: a quark field set to zero on the vanishing slices (a
//!   source there would otherwise be copied into the solution unchanged).
//!
//! The zero links need uncompressed (recon 18) links: recon 12 and 8 rebuild SU(3)
//! matrices, and [`crate::format::LinkFormat::encode`] refuses to store a link that is
//! not in SU(3) with them ([`crate::format::FormatError::NotSpecialUnitary`]). The solve's
//! operators, host and device, use recon 18.

use super::{FieldStrengthTrace, SfBoundaryFields};
use crate::field::{
    CloverField, ColourSpinorField, GaugeField, SiteSubset, CLOVER_BLOCK_DIM, CLOVER_BLOCK_REALS,
};
use crate::lattice::Lattice;
use crate::math::ColourMatrix;
use crate::Real;
use std::fmt;
use thiserror::Error;

/// Which boundary the quarks have in time (space stays periodic).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpenBoundaryKind {
    /// openQCD type 0: quark fields vanish on x0 = 0 and x0 = L_t − 1.
    Open,
    /// openQCD types 1 and 2 (SF, open-SF): quark fields vanish on x0 = 0.
    Sf,
}

/// An open or SF time boundary with its improvement coefficients (module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpenBoundary {
    /// Open or SF.
    pub kind: OpenBoundaryKind,
    /// c_F at x0 = 1.
    pub c_f: f64,
    /// c_F' at the far active slice (x0 = L_t − 2 open, L_t − 1 SF); c_F for open
    /// boundaries.
    pub c_f_prime: f64,
    /// SF only: openQCD's boundary gauge fields C (x0 = 0) and C' (x0 = T), which the
    /// clover term of x0 = 1 and x0 = L_t − 1 sees ([`SfBoundaryFields`]); `None`: the
    /// stored spatial links of x0 = 0 serve as both (C' = C).
    pub sf_fields: Option<SfBoundaryFields>,
}

/// Why a boundary does not fit a lattice or its coefficients are unusable.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum OpenBoundaryError {
    /// Too few time slices for two boundaries and an interior.
    #[error(
        "{kind} boundaries need at least 4 time slices (two boundary slices and an \
         interior), found L_t = {found}"
    )]
    TooShort {
        /// The boundary.
        kind: OpenBoundaryKind,
        /// L_t.
        found: usize,
    },
    /// c_F or c_F' is not finite.
    #[error("the boundary improvement coefficient {name} must be finite, found {found}")]
    NotFinite {
        /// "c_F" or "c_F'".
        name: &'static str,
        /// The value given.
        found: f64,
    },
    /// SF boundary fields were given to open boundaries.
    #[error("the SF boundary fields φ, φ' apply to sf boundaries, not to open ones")]
    FieldsOnOpen,
    /// The clover field is not a full-lattice field of the boundary's lattice.
    #[error("the clover field must cover the full lattice {expected}, found {found}")]
    CloverField {
        /// The lattice expected.
        expected: String,
        /// What the field holds.
        found: String,
    },
}

impl fmt::Display for OpenBoundaryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OpenBoundaryKind::Open => "open",
            OpenBoundaryKind::Sf => "SF",
        })
    }
}

impl fmt::Display for OpenBoundary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            OpenBoundaryKind::Open => write!(f, "open time boundaries, c_F = {}", self.c_f),
            OpenBoundaryKind::Sf => {
                write!(
                    f,
                    "SF time boundaries, c_F = {}, c_F' = {}",
                    self.c_f, self.c_f_prime
                )?;
                match &self.sf_fields {
                    Some(b) => write!(f, ", φ = {:?}, φ' = {:?}", b.phi, b.phi_prime),
                    None => Ok(()),
                }
            }
        }
    }
}

impl OpenBoundary {
    /// Open boundaries with coefficient `c_f` at both ends.
    pub fn open(c_f: f64) -> Self {
        Self {
            kind: OpenBoundaryKind::Open,
            c_f,
            c_f_prime: c_f,
            sf_fields: None,
        }
    }

    /// SF boundaries with `c_f` at x0 = 1 and `c_f_prime` at x0 = L_t − 1.
    pub fn sf(c_f: f64, c_f_prime: f64) -> Self {
        Self {
            kind: OpenBoundaryKind::Sf,
            c_f,
            c_f_prime,
            sf_fields: None,
        }
    }

    /// The same boundary with openQCD's SF boundary gauge fields (SF only: [`Self::check`]
    /// refuses them on open boundaries).
    pub fn with_sf_fields(self, fields: SfBoundaryFields) -> Self {
        Self {
            sf_fields: Some(fields),
            ..self
        }
    }

    /// `Ok` if the coefficients (and SF angles) are finite, SF fields come only with SF
    /// boundaries, and `lattice` has L_t ≥ 4.
    pub fn check(&self, lattice: &Lattice) -> Result<(), OpenBoundaryError> {
        let angles = self.sf_fields.map(|b| [b.phi, b.phi_prime]);
        if angles.is_some() && self.kind == OpenBoundaryKind::Open {
            return Err(OpenBoundaryError::FieldsOnOpen);
        }
        let angles = angles.iter().flatten().flatten().map(|&a| ("φ", a));
        for (name, found) in [("c_F", self.c_f), ("c_F'", self.c_f_prime)]
            .into_iter()
            .chain(angles)
        {
            if !found.is_finite() {
                return Err(OpenBoundaryError::NotFinite { name, found });
            }
        }
        let found = lattice.dims()[3];
        if found < 4 {
            return Err(OpenBoundaryError::TooShort {
                kind: self.kind,
                found,
            });
        }
        Ok(())
    }

    /// Whether quark fields vanish on time slice `x0` of `lt` slices.
    pub fn vanishes(&self, x0: usize, lt: usize) -> bool {
        x0 == 0 || (self.kind == OpenBoundaryKind::Open && x0 + 1 == lt)
    }

    /// The improvement coefficient on time slice `x0` of `lt` slices: c_F on x0 = 1,
    /// c_F' on the far active slice, `None` elsewhere.
    pub fn improvement(&self, x0: usize, lt: usize) -> Option<f64> {
        let far = match self.kind {
            OpenBoundaryKind::Open => lt - 2,
            OpenBoundaryKind::Sf => lt - 1,
        };
        if x0 == 1 {
            Some(self.c_f)
        } else if x0 == far {
            Some(self.c_f_prime)
        } else {
            None
        }
    }

    /// The links of the hops: `gauge` with every link U_μ(x) whose site x or x + μ̂ lies
    /// on a vanishing slice set to zero (module docs).
    pub fn hop_links<T: Real>(&self, gauge: &GaugeField<T>) -> GaugeField<T> {
        let lattice = *gauge.lattice();
        let lt = lattice.dims()[3];
        GaugeField::from_fn(lattice, |c, mu| {
            let end = lattice.shift(c, mu, 1).0;
            if self.vanishes(c[3], lt) || self.vanishes(end[3], lt) {
                ColourMatrix::zero()
            } else {
                *gauge.link_at(c, mu)
            }
        })
    }

    /// Makes a full-lattice clover field A (mass normalisation) the one of the boundary:
    /// the unit matrix on the vanishing slices, A + (c_F − 1)·1 on the improvement slices.
    pub fn improve_clover<T: Real>(
        &self,
        clover: &mut CloverField<T>,
    ) -> Result<(), OpenBoundaryError> {
        let lattice = *clover.lattice();
        if clover.subset() != SiteSubset::Full {
            return Err(OpenBoundaryError::CloverField {
                expected: lattice.to_string(),
                found: format!("the {:?} sites of {lattice}", clover.subset()),
            });
        }
        self.check(&lattice)?;
        let lt = lattice.dims()[3];
        for cb in 0..lattice.volume() {
            let x0 = lattice.coords_of_cb(cb)[3];
            let site = clover.site_mut(cb);
            if self.vanishes(x0, lt) {
                site.fill(T::zero());
                for block in site.chunks_exact_mut(CLOVER_BLOCK_REALS) {
                    block[..CLOVER_BLOCK_DIM].fill(T::one());
                }
            } else if let Some(c_f) = self.improvement(x0, lt) {
                let shift = T::from_f64(c_f - 1.0);
                for block in site.chunks_exact_mut(CLOVER_BLOCK_REALS) {
                    for d in &mut block[..CLOVER_BLOCK_DIM] {
                        *d += shift;
                    }
                }
            }
        }
        Ok(())
    }

    /// Sets a quark field (any subset, any number of spins) to zero on the vanishing
    /// slices.
    pub fn project<T: Real>(&self, psi: &mut ColourSpinorField<T>) {
        let layout = *psi.layout();
        let lt = layout.lattice().dims()[3];
        for s in 0..layout.ls() {
            for i in 0..layout.sites_per_slice() {
                if self.vanishes(layout.coords_of_site(i)[3], lt) {
                    psi.site_mut(s, i)
                        .fill(num_complex::Complex::new(T::zero(), T::zero()));
                }
            }
        }
    }
}

impl OpenBoundary {
    /// The two fields of the Wilson-clover operator D = A − ½ H with this boundary, from
    /// the thin links `gauge`, the bare mass m, c_sw (0: Wilson in mass normalisation)
    /// and the field strength's `trace` convention: the links of the hops
    /// ([`Self::hop_links`]) and the full-lattice A ([`super::clover_field_with`] of the
    /// unmodified links, or with SF boundary fields [`SfBoundaryFields::clover_field`],
    /// then [`Self::improve_clover`]).
    pub fn clover_fields(
        &self,
        gauge: &GaugeField<f64>,
        mass: f64,
        c_sw: f64,
        trace: FieldStrengthTrace,
    ) -> Result<(GaugeField<f64>, CloverField<f64>), OpenBoundaryError> {
        self.check(gauge.lattice())?;
        let mut a = match &self.sf_fields {
            Some(fields) => fields.clover_field(gauge, mass, c_sw, trace),
            None => super::clover_field_with(gauge, mass, c_sw, trace),
        };
        self.improve_clover(&mut a)?;
        Ok((self.hop_links(gauge), a))
    }
}
