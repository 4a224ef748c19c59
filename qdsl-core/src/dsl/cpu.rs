//! The typed helpers that the generated CPU code (see [`super::emit::rust`]) calls: field
//! checks, site iteration (rayon over output sites), hops with boundary signs, links with
//! gauge compression, spin projection and reconstruction. The generated code is straight
//! line per term; these helpers hold the per-operation arithmetic once.
//!
//! Colour-spinor fields may be 5D (Ls slices, [`SpinorLayout::ls`]): the output and every
//! colour-spinor input share one Ls, each slice s is computed with the 4D stencil reading
//! the sources' slice s (gauge and clover fields are 4D, shared by the slices).

use super::knobs::KnobSet;
use super::lower::ReadSites;
use super::spin::{Phase, ProjectorPlan};
use super::storage::{round_gauge_field, round_spinor_field};
use super::variant::{DirichletBlocks, OutputSites, Recon, TimeBoundary, Variant};
use super::DslError;
use crate::field::{
    clover_apply_site, CloverField, ColourSpinorField, GaugeField, SiteSubset, SpinorLayout,
};
use crate::format::{FormatError, LinkFormat};
use crate::lattice::{BlockDecomposition, BoundaryConditions, Coords, Lattice};
use crate::math::{ColourMatrix, ColourVector, SpinColourVector};
use crate::Real;
use num_complex::Complex;
use rayon::prelude::*;
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
    geo: Geometry,
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
            geo: Geometry::new(*out.lattice(), variant),
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

    /// The 72 packed reals of the clover field at site `y` (whose subset was checked).
    #[inline]
    pub fn clover_site<'a, T: Real>(&self, a: &'a CloverField<T>, y: Coords) -> &'a [T] {
        let cb = self.lattice.cb_index(y);
        let i = match a.subset() {
            SiteSubset::Full => cb,
            SiteSubset::Single(_) => self.lattice.split_cb(cb).1,
        };
        a.site(i)
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

    /// The site x + steps · μ̂ (periodically wrapped) and the boundary factor of the hop
    /// ([`Geometry::hop`]: 0 across a Dirichlet wall, −1 for an odd number of
    /// antiperiodic wraps, else 1).
    #[inline]
    pub fn hop<T: Real>(&self, x: Coords, mu: usize, steps: isize) -> (Coords, T) {
        self.geo.hop(x, mu, steps)
    }

    /// The site x + steps · μ̂, periodically wrapped (where a link lives).
    #[inline]
    pub fn shift(&self, x: Coords, mu: usize, steps: isize) -> Coords {
        self.geo.shift(x, mu, steps)
    }

    /// The components of the site at `y` of slice `s` of an input field (whose subset and
    /// Ls were checked).
    #[inline]
    pub fn site<'a, T: Real>(
        &self,
        field: &'a ColourSpinorField<T>,
        s: usize,
        y: Coords,
    ) -> &'a [Complex<T>] {
        self.geo.site(field, s, y)
    }

    /// The link U_μ(y) as the variant stores it: with recon 12 row 2 is rebuilt as
    /// conj(row 0 × row 1), as the device does (for narrow gauge formats and recon 8 the
    /// field comes from [`Self::stored_gauge`], already rebuilt); `dagger` gives U_μ(y)†.
    #[inline]
    pub fn link<T: Real>(
        &self,
        u: &GaugeField<T>,
        y: Coords,
        mu: usize,
        dagger: bool,
    ) -> ColourMatrix<T> {
        let mut m = *u.link_at(y, mu);
        // Narrow formats and recon 8 were rebuilt by [`Self::stored_gauge`] already.
        if self.variant.recon == Recon::R12 && self.variant.gauge.is_native() {
            let r2 = ColourVector(m.0[0]).cross(&ColourVector(m.0[1])).conj();
            m.0[2] = r2.0;
        }
        if dagger {
            m.adjoint()
        } else {
            m
        }
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
        round_spinor_field(format.fermion_format(), &mut copy)
            .map_err(|e| self.storage_error(name, format.name().to_string(), e))?;
        Ok(Cow::Owned(copy))
    }

    /// A gauge input as the variant stores it: the field itself for f64/f32 with recon
    /// 18/12 (recon 12 is rebuilt in [`Self::link`]), else a copy with every link rounded
    /// through storage × compression ([`super::storage::round_gauge_field`]).
    pub fn stored_gauge<'a, T: Real>(
        &self,
        name: &str,
        u: &'a GaugeField<T>,
    ) -> Result<Cow<'a, GaugeField<T>>, DslError> {
        let v = &self.variant;
        if v.gauge.is_native() && v.recon != Recon::R8 {
            return Ok(Cow::Borrowed(u));
        }
        let format = LinkFormat::new(v.gauge.link_storage(), v.recon.compression());
        let mut copy = u.clone();
        round_gauge_field(format, &mut copy)
            .map_err(|e| self.storage_error(name, format.name(), e))?;
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

    /// [`Self::for_each_site`] with storage emulation: the xpay x is read as stored
    /// ([`Self::stored_spinor`]) and the output is written in the spinor format (each
    /// site rounded through it; fixed point computes the site's norm), so the result
    /// equals what the device stores, to the compute type's rounding.
    pub fn run<T: Real, const NS: usize>(
        &self,
        out_name: &str,
        out: &mut ColourSpinorField<T>,
        xpay: Option<Xpay<'_, T>>,
        body: impl Fn(usize, Coords, &mut [ColourVector<T>; NS]) + Sync,
    ) -> Result<(), DslError> {
        let x = match &xpay {
            Some(xp) => Some(self.stored_spinor("xpay x", xp.x)?),
            None => None,
        };
        let xpay = match (xpay, &x) {
            (Some(xp), Some(x)) => Some(Xpay { x, ..xp }),
            _ => None,
        };
        self.for_each_site(out, xpay, body);
        let format = self.variant.spinor;
        if !format.is_native() {
            round_spinor_field(format.fermion_format(), out)
                .map_err(|e| self.storage_error(out_name, format.name().to_string(), e))?;
        }
        Ok(())
    }

    /// Runs `body(s, x, acc)` for every slice s and output site x in parallel (rayon),
    /// with `acc` starting at zero, then stores out_s(x) = acc, or a·x_s(x) + b·acc with
    /// xpay.
    pub fn for_each_site<T: Real, const NS: usize>(
        &self,
        out: &mut ColourSpinorField<T>,
        xpay: Option<Xpay<'_, T>>,
        body: impl Fn(usize, Coords, &mut [ColourVector<T>; NS]) + Sync,
    ) {
        let layout = self.out;
        let n = layout.sites_per_slice();
        out.data_mut()
            .par_chunks_mut(NS * 3)
            .enumerate()
            .for_each(|(k, site)| {
                let (s, i) = (k / n, k % n);
                let mut acc = [ColourVector::zero(); NS];
                body(s, layout.coords_of_site(i), &mut acc);
                for (k, z) in site.iter_mut().enumerate() {
                    let d = acc[k / 3].0[k % 3];
                    *z = match &xpay {
                        Some(xp) => xp.x.site(s, i)[k] * xp.a + d * xp.b,
                        None => d,
                    };
                }
            });
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

/// The rows ψ_σ (σ = 0..NS) of a site's components (spin-major, 3 colours).
#[inline]
pub fn rows<T: Real, const NS: usize>(site: &[Complex<T>]) -> [ColourVector<T>; NS] {
    std::array::from_fn(|s| ColourVector([site[3 * s], site[3 * s + 1], site[3 * s + 2]]))
}

/// z · v for a phase z ∈ {±1, ±i}, computed exactly (no multiplications).
#[inline]
pub fn phase_mul<T: Real>(p: Phase, v: &ColourVector<T>) -> ColourVector<T> {
    ColourVector::from_fn(|a| {
        let z = v.0[a];
        let (re, im) = match (p.re, p.im) {
            (1, 0) => (z.re, z.im),
            (-1, 0) => (-z.re, -z.im),
            (0, 1) => (-z.im, z.re),
            _ => (z.im, -z.re),
        };
        Complex::new(re, im)
    })
}

/// The half spinor h_r = ψ_r + (sign · g_r) ψ_{c(r)}, r = 0, 1 (see [`ProjectorPlan`]).
#[inline]
pub fn project<T: Real>(psi: &[ColourVector<T>; 4], plan: &ProjectorPlan) -> [ColourVector<T>; 2] {
    std::array::from_fn(|r| {
        let (c, p) = plan.project[r];
        psi[r] + phase_mul(p, &psi[c])
    })
}

/// The link product applied to each row: w_r = M h_r.
#[inline]
pub fn transport<T: Real, const K: usize>(
    m: &ColourMatrix<T>,
    h: [ColourVector<T>; K],
) -> [ColourVector<T>; K] {
    h.map(|v| *m * v)
}

/// acc += c · P w for a projected term: acc_r += c w_r (r = 0, 1), acc_s += c (sign · g_s)
/// w_{c(s)} (s = 2, 3).
#[inline]
pub fn reconstruct_add<T: Real>(
    acc: &mut [ColourVector<T>; 4],
    w: &[ColourVector<T>; 2],
    plan: &ProjectorPlan,
    c: T,
) {
    acc[0] += w[0] * c;
    acc[1] += w[1] * c;
    for (k, &(r, p)) in plan.reconstruct.iter().enumerate() {
        acc[2 + k] += phase_mul(p, &w[r]) * c;
    }
}

/// v ← i γ5 v in the DeGrand–Rossi basis: v_0, v_1 times i, v_2, v_3 times −i (exact).
#[inline]
pub fn twist_gamma5<T: Real>(v: [ColourVector<T>; 4]) -> [ColourVector<T>; 4] {
    let (i, minus_i) = (Phase { re: 0, im: 1 }, Phase { re: 0, im: -1 });
    std::array::from_fn(|s| phase_mul(if s < 2 { i } else { minus_i }, &v[s]))
}

/// The clover product (A v)_{σ a} = Σ_{σ' b} A_{(σ a),(σ' b)} v_{σ' b} for the packed site
/// `a` ([`clover_apply_site`]: both chiral 6 × 6 blocks).
#[inline]
pub fn clover<T: Real>(a: &[T], v: [ColourVector<T>; 4]) -> [ColourVector<T>; 4] {
    clover_apply_site(a, &SpinColourVector(v)).0
}

/// acc_σ += c · w_σ for every row.
#[inline]
pub fn add_rows<T: Real, const NS: usize>(
    acc: &mut [ColourVector<T>; NS],
    w: &[ColourVector<T>; NS],
    c: T,
) {
    for (a, v) in acc.iter_mut().zip(w) {
        *a += *v * c;
    }
}
