//! What the generated CPU code (see [`super::emit::rust`]) calls: the checks of the
//! fields against the variant ([`Context`]), the storage emulation of narrow formats, and
//! the lane engine ([`engine`]) that runs the spec's terms ([`terms`]) over the output
//! sites with neighbours from a cached table ([`table`]).
//!
//! Colour-spinor fields may be 5D (Ls slices, [`SpinorLayout::ls`]): the output and every
//! colour-spinor input share one Ls, each slice s is computed with the 4D stencil reading
//! the sources' slice s (gauge and clover fields are 4D, shared by the slices).

mod engine;
mod lanes;
mod table;
mod terms;

pub use engine::{Job, LaneEngine, SITES_PER_TASK};
pub use table::{table, Displacement, NeighbourTable};
pub use terms::{LinkRead, Term, TermSpin};

use super::knobs::KnobSet;
use super::lower::ReadSites;
use super::storage::{round_gauge_field_for, round_long_field, round_spinor_field};
use super::variant::{DirichletBlocks, OutputSites, Recon, TimeBoundary, Variant};
use super::DslError;
use crate::field::{CloverField, ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use crate::format::link::ScaledLinkFormat;
use crate::format::FormatError;
use crate::lattice::{BlockDecomposition, BoundaryConditions, Coords, Lattice};
use crate::Real;
use num_complex::Complex;
use std::borrow::Cow;

/// The xpay operands: out = a · x + b · (D ψ).
#[derive(Clone, Copy, Debug)]
pub struct Xpay<'a, T: Real> {
    /// The factor a of x.
    pub a: T,
    /// The field x (same layout as the output).
    pub x: &'a ColourSpinorField<T>,
    /// The factor b of D ψ.
    pub b: T,
}

/// What the generated code needs to know about one call: the kernel, the variant, the
/// lattice and the output layout.
#[derive(Clone, Copy, Debug)]
pub struct Context {
    kernel: &'static str,
    variant: Variant,
    lattice: Lattice,
    out: SpinorLayout,
}

impl Context {
    /// Checks the variant against the knob values the spec allows, and the output field
    /// and the xpay operands against the variant (output sites, any Ls, the spec's spins
    /// and colours, xpay present exactly when the knob is on, dagger only where defined).
    pub fn new<T: Real>(
        kernel: &'static str,
        variant: &Variant,
        out: &SpinorLayout,
        (nspin, ncolour): (usize, usize),
        xpay: Option<&Xpay<'_, T>>,
        dagger_supported: bool,
        knobs: &KnobSet,
    ) -> Result<Self, DslError> {
        knobs.check(kernel, variant)?;
        let mismatch = |field: &str, expected: String, found: String| DslError::FieldMismatch {
            kernel: kernel.into(),
            field: field.into(),
            expected,
            found,
        };
        let subset = match variant.sites {
            OutputSites::Parity(p) => SiteSubset::Single(p),
            OutputSites::Full => SiteSubset::Full,
        };
        let expected = SpinorLayout::new(*out.lattice(), out.ls(), subset, nspin, ncolour)
            .map_err(|e| mismatch("out", "a valid layout".into(), e.to_string()))?;
        if *out != expected {
            return Err(mismatch("out", expected.to_string(), out.to_string()));
        }
        match (variant.xpay, xpay) {
            (true, Some(xp)) if *xp.x.layout() != expected => {
                return Err(mismatch(
                    "xpay x",
                    expected.to_string(),
                    xp.x.layout().to_string(),
                ))
            }
            (true, None) => {
                return Err(mismatch(
                    "xpay",
                    "operands (the xpay knob is on)".into(),
                    "none".into(),
                ))
            }
            (false, Some(_)) => {
                return Err(mismatch(
                    "xpay",
                    "no operands (the xpay knob is off)".into(),
                    "operands".into(),
                ))
            }
            _ => {}
        }
        if variant.dagger && !dagger_supported {
            return Err(DslError::UnsupportedVariant {
                kernel: kernel.into(),
                knob: "dagger",
                reason: "Γ D Γ is defined for 4-spin fields and for 1-spin fields without spin operators".into(),
            });
        }
        if let Some(DirichletBlocks { block }) = variant.dirichlet {
            BlockDecomposition::new(*out.lattice(), block).map_err(|e| {
                DslError::UnsupportedVariant {
                    kernel: kernel.into(),
                    knob: "dirichlet",
                    reason: format!("Dirichlet blocks {block:?}: {e}"),
                }
            })?;
        }
        Ok(Context {
            kernel,
            variant: *variant,
            lattice: *out.lattice(),
            out: *out,
        })
    }

    /// Checks a colour-spinor input: the output's lattice, shape and Ls, and the
    /// subset its reads need (the other parity for odd hops, the same for local terms,
    /// the full lattice when both are read or the output is the full lattice).
    pub fn check_spinor(
        &self,
        name: &str,
        layout: &SpinorLayout,
        reads: ReadSites,
    ) -> Result<(), DslError> {
        let expected = self.out.with_subset(self.read_subset(reads));
        if *layout != expected {
            return Err(DslError::FieldMismatch {
                kernel: self.kernel.into(),
                field: name.into(),
                expected: expected.to_string(),
                found: layout.to_string(),
            });
        }
        Ok(())
    }

    /// The sites an input read at `reads` must hold: the other parity for odd hops, the
    /// same for local terms, the full lattice when both are read or the output is full.
    fn read_subset(&self, reads: ReadSites) -> SiteSubset {
        match (self.out.subset(), reads) {
            (SiteSubset::Single(p), ReadSites::OtherParity) => SiteSubset::Single(p.opposite()),
            (SiteSubset::Single(p), ReadSites::SameParity) => SiteSubset::Single(p),
            _ => SiteSubset::Full,
        }
    }

    /// Checks a clover input: the output's lattice and the subset its (site-local) reads
    /// need, the output's parity or the full lattice.
    pub fn check_clover<T: Real>(
        &self,
        name: &str,
        a: &CloverField<T>,
        reads: ReadSites,
    ) -> Result<(), DslError> {
        let subset = self.read_subset(reads);
        if *a.lattice() != self.lattice || a.subset() != subset {
            return Err(DslError::FieldMismatch {
                kernel: self.kernel.into(),
                field: name.into(),
                expected: format!("a clover field on {} ({subset:?})", self.lattice),
                found: format!("a clover field on {} ({:?})", a.lattice(), a.subset()),
            });
        }
        Ok(())
    }

    /// Checks that a gauge field lives on the output's lattice.
    pub fn check_gauge<T: Real>(&self, name: &str, u: &GaugeField<T>) -> Result<(), DslError> {
        if *u.lattice() != self.lattice {
            return Err(DslError::FieldMismatch {
                kernel: self.kernel.into(),
                field: name.into(),
                expected: format!("a gauge field on {}", self.lattice),
                found: format!("a gauge field on {}", u.lattice()),
            });
        }
        Ok(())
    }

    /// A colour-spinor input as the variant stores it: the field itself for f64/f32,
    /// else a copy with every site rounded through the spinor format
    /// ([`super::storage::round_spinor_field`]).
    pub fn stored_spinor<'a, T: Real>(
        &self,
        name: &str,
        field: &'a ColourSpinorField<T>,
    ) -> Result<Cow<'a, ColourSpinorField<T>>, DslError> {
        let format = self.variant.spinor;
        if format.is_native() {
            return Ok(Cow::Borrowed(field));
        }
        let mut copy = field.clone();
        round_spinor_field(format.codec().fermion(), &mut copy)
            .map_err(|e| self.storage_error(name, format.name().to_string(), e))?;
        Ok(Cow::Owned(copy))
    }

    /// A gauge input as the variant stores it: the field itself for f64/f32 with recon
    /// 18/12 (recon 12 is rebuilt in [`Self::link`]), else a copy with every link rounded
    /// through storage × compression, with the field's global scale where the variant
    /// asks for one ([`super::storage::round_gauge_field_for`]).
    pub fn stored_gauge<'a, T: Real>(
        &self,
        name: &str,
        u: &'a GaugeField<T>,
    ) -> Result<Cow<'a, GaugeField<T>>, DslError> {
        let v = &self.variant;
        if v.gauge.is_native() && v.recon != Recon::R8 {
            return Ok(Cow::Borrowed(u));
        }
        let format = v.gauge.codec().link(v.recon);
        let mut copy = u.clone();
        round_gauge_field_for(v, &mut copy)
            .map_err(|e| self.storage_error(name, format.name(), e))?;
        Ok(Cow::Owned(copy))
    }

    /// A long (Naik) gauge input as the variant stores it: with compressed long links
    /// (`long_recon` ≠ 18) a copy rounded through the compression
    /// ([`super::storage::round_long_field`]: the field's scale found and every link
    /// checked, then decode(encode(L)) per link), else as [`Self::stored_gauge`].
    pub fn stored_long_gauge<'a, T: Real>(
        &self,
        name: &str,
        u: &'a GaugeField<T>,
    ) -> Result<Cow<'a, GaugeField<T>>, DslError> {
        let v = &self.variant;
        let Some(compression) = v.long_recon.compression() else {
            return self.stored_gauge(name, u);
        };
        let mut copy = u.clone();
        round_long_field(v, &mut copy).map_err(|e| DslError::Storage {
            kernel: self.kernel.into(),
            field: name.into(),
            format: ScaledLinkFormat::new(v.gauge.codec().link_storage(), compression).name(),
            detail: e.to_string(),
        })?;
        Ok(Cow::Owned(copy))
    }

    fn storage_error(&self, field: &str, format: String, e: FormatError) -> DslError {
        DslError::Storage {
            kernel: self.kernel.into(),
            field: field.into(),
            format,
            detail: e.to_string(),
        }
    }

    /// Runs `terms` over every output site ([`engine`]): out = Σ terms, or a·x + b·Σ with
    /// xpay, the xpay x read as stored ([`Self::stored_spinor`]) and the output written
    /// in the spinor format (each site rounded through it; fixed point computes the
    /// site's norm), so the result equals what the device stores, to the compute type's
    /// rounding. `displacements` are the neighbour-table columns the terms index.
    pub fn run_terms<T: Real>(
        &self,
        out_name: &str,
        out: &mut ColourSpinorField<T>,
        xpay: Option<Xpay<'_, T>>,
        displacements: &[Displacement],
        terms: &[Term<'_, T>],
    ) -> Result<(), DslError> {
        let x = match &xpay {
            Some(xp) => Some(self.stored_spinor("xpay x", xp.x)?),
            None => None,
        };
        let xpay = match (xpay, &x) {
            (Some(xp), Some(x)) => Some(Xpay { x, ..xp }),
            _ => None,
        };
        let v = &self.variant;
        let table = table(&self.out, v.boundary, v.dirichlet, displacements);
        let job = Job {
            terms,
            table: &table,
            out: self.out,
            xpay,
            recon12: v.recon == Recon::R12 && v.gauge.is_native(),
        };
        T::apply_terms(&job, out.data_mut());
        let format = v.spinor;
        if !format.is_native() {
            round_spinor_field(format.codec().fermion(), out)
                .map_err(|e| self.storage_error(out_name, format.name().to_string(), e))?;
        }
        Ok(())
    }
}

/// The geometry of one call: the lattice, the time boundary and the Dirichlet walls of
/// the variant, and the hops of the generated terms.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    lattice: Lattice,
    bc: BoundaryConditions,
    dirichlet: Option<DirichletBlocks>,
}

impl Geometry {
    /// The geometry of `variant` on `lattice`.
    pub fn new(lattice: Lattice, variant: &Variant) -> Self {
        let bc = match variant.boundary {
            TimeBoundary::Periodic => BoundaryConditions::periodic(),
            TimeBoundary::Antiperiodic => BoundaryConditions::antiperiodic_time(),
        };
        Self {
            lattice,
            bc,
            dirichlet: variant.dirichlet,
        }
    }

    /// The site y = x + steps · μ̂ (periodically wrapped) and the hop's factor: 0 when it
    /// leaves x's Dirichlet block, −1 when it wraps the antiperiodic time boundary an
    /// odd number of times, else 1.
    #[inline]
    pub fn hop<T: Real>(&self, x: Coords, mu: usize, steps: isize) -> (Coords, T) {
        let (y, _) = self.lattice.shift(x, mu, steps);
        let walled = self.dirichlet.is_some_and(|d| !d.keeps(x[mu], y[mu], mu));
        let factor = if walled {
            0.0
        } else {
            self.bc.hop_sign(&self.lattice, x, mu, steps)
        };
        (y, T::from_f64(factor))
    }

    /// The site x + steps · μ̂, periodically wrapped (where a link lives).
    #[inline]
    pub fn shift(&self, x: Coords, mu: usize, steps: isize) -> Coords {
        self.lattice.shift(x, mu, steps).0
    }

    /// The N components of slice `s` of `field` at site y (its subset checked to hold y).
    #[inline]
    pub fn site<'a, T: Real>(
        &self,
        field: &'a ColourSpinorField<T>,
        s: usize,
        y: Coords,
    ) -> &'a [Complex<T>] {
        let cb = self.lattice.cb_index(y);
        let i = match field.layout().subset() {
            SiteSubset::Full => cb,
            SiteSubset::Single(_) => self.lattice.split_cb(cb).1,
        };
        field.site(s, i)
    }
}
