//! The even-odd preconditioned operators on host fields, built from the generated CPU
//! kernels (`apply_cpu`, rayon over sites).
//!
//! * [`EvenOddWilson`]: M̂ = 1 − κ² H_pq H_qp on parity p (q the other parity), two
//!   Wilson hops, the second with xpay (a = 1, b = −κ²). M̂† = 1 − κ² H†_pq H†_qp uses the
//!   dagger knob (H† = γ5 H γ5, i.e. (H†)_pq = (H_qp)†).
//! * [`EvenOddStaggered`]: MILC's even-odd staggered normal operator
//!   A = 4m² − D_pq D_qp = (M†M)_pp, M = 2m + D, D anti-Hermitian with the phases in the
//!   links (naive or improved/asqtad hops). A is Hermitian positive definite, so
//!   A† = A; CG on A solves the staggered system on one parity as MILC does.

use crate::solver::{LinearOperator, SolverError};
use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::variant::{OutputSites, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{KernelInfo, Stencil, Variant};
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::Parity;
use qdsl_core::Real;
use qdsl_kernels::{ImprovedStaggeredHop, NaiveStaggeredHop, WilsonHop};

/// The storage format whose compute type is `T` (8-byte reals: f64, else f32).
pub fn storage_format<T: Real>() -> StorageFormat {
    if T::BYTES == 8 {
        StorageFormat::F64
    } else {
        StorageFormat::F32
    }
}

/// Flops per output site of the host Wilson hop of `T` on `sites` (with or without
/// xpay), from the kernel's KernelInfo.
pub fn wilson_hop_flops<T: Real>(sites: Parity, xpay: bool, boundary: TimeBoundary) -> usize {
    WilsonHop::info(&hop_variant::<T>(sites, false, xpay, boundary))
        .map(|i: KernelInfo| i.flops_per_site)
        .unwrap_or(0)
}

/// The hop variant writing `sites` for host fields of `T` (recon 18, the default: host
/// links are stored whole).
pub fn hop_variant<T: Real>(
    sites: Parity,
    dagger: bool,
    xpay: bool,
    boundary: TimeBoundary,
) -> Variant {
    // Recon 18 is the default.
    Variant {
        sites: OutputSites::Parity(sites),
        dagger,
        xpay,
        spinor: storage_format::<T>(),
        gauge: storage_format::<T>(),
        boundary,
        ..Variant::default()
    }
}

/// Checks that `field` lives on parity `p` of `expected`'s lattice and shape.
fn expect_parity(
    expected: &SpinorLayout,
    field: &SpinorLayout,
    p: Parity,
) -> Result<(), SolverError> {
    expected
        .with_subset(SiteSubset::Single(p))
        .expect_same(field)
        .map_err(SolverError::field)
}

/// Flops of a two-hop even-odd operator on parity p: two hops of V/2 sites, the second
/// with xpay: (V/2)·(f_hop + f_hop,xpay).
fn two_hop_flops(volume: usize, hop: usize, hop_xpay: usize) -> u64 {
    (volume / 2 * (hop + hop_xpay)) as u64
}

/// The even-odd preconditioned Wilson operator on parity p:
///
/// M̂ ψ_p = ψ_p − κ² H_pq H_qp ψ_p,
///
/// the Schur complement of M = 1 − κ H (κ = 1/(2m + 8)) on parity p.
#[derive(Clone, Debug)]
pub struct EvenOddWilson<T: Real> {
    gauge: GaugeField<T>,
    kappa: f64,
    parity: Parity,
    boundary: TimeBoundary,
}

impl<T: Real> EvenOddWilson<T> {
    /// M̂ on `parity` for links `gauge`, hopping parameter κ and time boundary.
    pub fn new(gauge: GaugeField<T>, kappa: f64, parity: Parity, boundary: TimeBoundary) -> Self {
        Self {
            gauge,
            kappa,
            parity,
            boundary,
        }
    }

    /// The Wilson layout of the parity M̂ acts on.
    pub fn layout(&self) -> SpinorLayout {
        SpinorLayout::wilson(*self.gauge.lattice(), SiteSubset::Single(self.parity))
    }

    /// out = ψ − κ² H^(†)_pq H^(†)_qp ψ (dagger: the γ5-conjugated hops).
    fn apply_with(
        &self,
        out: &mut ColourSpinorField<T>,
        psi: &ColourSpinorField<T>,
        dagger: bool,
    ) -> Result<(), SolverError> {
        let (p, q) = (self.parity, self.parity.opposite());
        let layout = self.layout();
        expect_parity(&layout, psi.layout(), p)?;
        expect_parity(&layout, out.layout(), p)?;
        let mut tmp = ColourSpinorField::zeros(layout.with_subset(SiteSubset::Single(q)));
        WilsonHop
            .apply_cpu(
                &hop_variant::<T>(q, dagger, false, self.boundary),
                &mut tmp,
                psi,
                &self.gauge,
                None,
            )
            .map_err(SolverError::operator)?;
        let xpay = Xpay {
            a: T::one(),
            x: psi,
            b: T::from_f64(-self.kappa * self.kappa),
        };
        WilsonHop
            .apply_cpu(
                &hop_variant::<T>(p, dagger, true, self.boundary),
                out,
                &tmp,
                &self.gauge,
                Some(xpay),
            )
            .map_err(SolverError::operator)
    }
}

impl<T: Real> LinearOperator<ColourSpinorField<T>> for EvenOddWilson<T> {
    /// out = M̂ ψ.
    fn apply(
        &self,
        out: &mut ColourSpinorField<T>,
        input: &ColourSpinorField<T>,
    ) -> Result<(), SolverError> {
        self.apply_with(out, input, false)
    }

    /// out = M̂† ψ = ψ − κ² (γ5 H γ5)_pq (γ5 H γ5)_qp ψ.
    fn apply_dagger(
        &self,
        out: &mut ColourSpinorField<T>,
        input: &ColourSpinorField<T>,
    ) -> Result<(), SolverError> {
        self.apply_with(out, input, true)
    }

    /// (V/2)(1320 + 1320 + 3·24) = (V/2)·2712 flops.
    fn flops_per_apply(&self) -> u64 {
        let flops = |xpay| wilson_hop_flops::<T>(self.parity, xpay, self.boundary);
        two_hop_flops(self.gauge.lattice().volume(), flops(false), flops(true))
    }
}

/// The links of a staggered hop, phases folded in (MILC conventions).
#[derive(Clone, Debug)]
pub enum StaggeredLinks<T: Real> {
    /// Naive staggered: one-hop links U.
    Naive(GaugeField<T>),
    /// Improved staggered (asqtad, HISQ): fat one-hop and long (Naik) three-hop links.
    Improved {
        /// Fat links.
        fat: GaugeField<T>,
        /// Long links.
        long: GaugeField<T>,
    },
}

impl<T: Real> StaggeredLinks<T> {
    /// The gauge field that fixes the lattice.
    fn lattice_links(&self) -> &GaugeField<T> {
        match self {
            StaggeredLinks::Naive(u) => u,
            StaggeredLinks::Improved { fat, .. } => fat,
        }
    }

    /// out = D χ (or a·x + b·D χ), the generated kernel of these links.
    pub fn hop(
        &self,
        variant: &Variant,
        out: &mut ColourSpinorField<T>,
        chi: &ColourSpinorField<T>,
        xpay: Option<Xpay<'_, T>>,
    ) -> Result<(), SolverError> {
        match self {
            StaggeredLinks::Naive(u) => NaiveStaggeredHop.apply_cpu(variant, out, chi, u, xpay),
            StaggeredLinks::Improved { fat, long } => {
                ImprovedStaggeredHop.apply_cpu(variant, out, chi, fat, long, xpay)
            }
        }
        .map_err(SolverError::operator)
    }

    /// Flops per output site of the hop (570 naive, 1146 improved; +18 with xpay).
    pub fn flops_per_site(&self, variant: &Variant) -> usize {
        match self {
            StaggeredLinks::Naive(_) => NaiveStaggeredHop::info(variant),
            StaggeredLinks::Improved { .. } => ImprovedStaggeredHop::info(variant),
        }
        .map(|i| i.flops_per_site)
        .unwrap_or(0)
    }
}

/// MILC's even-odd staggered normal operator on parity p:
///
/// A ψ_p = 4m² ψ_p − D_pq D_qp ψ_p = ((2m + D)†(2m + D) ψ)_p,
///
/// Hermitian and positive definite (D† = −D). Time boundary: periodic in the kernel,
/// the antiperiodic sign being folded into the links with the phases.
#[derive(Clone, Debug)]
pub struct EvenOddStaggered<T: Real> {
    links: StaggeredLinks<T>,
    mass: f64,
    parity: Parity,
}

impl<T: Real> EvenOddStaggered<T> {
    /// A on `parity` for `links` and quark mass m.
    pub fn new(links: StaggeredLinks<T>, mass: f64, parity: Parity) -> Self {
        Self {
            links,
            mass,
            parity,
        }
    }

    /// The staggered layout of the parity A acts on.
    pub fn layout(&self) -> SpinorLayout {
        SpinorLayout::staggered(
            *self.links.lattice_links().lattice(),
            SiteSubset::Single(self.parity),
        )
    }
}

impl<T: Real> LinearOperator<ColourSpinorField<T>> for EvenOddStaggered<T> {
    /// out = 4m² ψ − D_pq (D_qp ψ).
    fn apply(
        &self,
        out: &mut ColourSpinorField<T>,
        psi: &ColourSpinorField<T>,
    ) -> Result<(), SolverError> {
        let (p, q) = (self.parity, self.parity.opposite());
        let layout = self.layout();
        expect_parity(&layout, psi.layout(), p)?;
        expect_parity(&layout, out.layout(), p)?;
        let periodic = TimeBoundary::Periodic;
        let mut tmp = ColourSpinorField::zeros(layout.with_subset(SiteSubset::Single(q)));
        self.links.hop(
            &hop_variant::<T>(q, false, false, periodic),
            &mut tmp,
            psi,
            None,
        )?;
        let xpay = Xpay {
            a: T::from_f64(4.0 * self.mass * self.mass),
            x: psi,
            b: -T::one(),
        };
        self.links.hop(
            &hop_variant::<T>(p, false, true, periodic),
            out,
            &tmp,
            Some(xpay),
        )
    }

    /// A is Hermitian: A† = A.
    fn apply_dagger(
        &self,
        out: &mut ColourSpinorField<T>,
        psi: &ColourSpinorField<T>,
    ) -> Result<(), SolverError> {
        self.apply(out, psi)
    }

    /// (V/2)(f_hop + f_hop,xpay): 1146 + 1164 per site for asqtad.
    fn flops_per_apply(&self) -> u64 {
        let v = |xpay| hop_variant::<T>(self.parity, false, xpay, TimeBoundary::Periodic);
        two_hop_flops(
            self.links.lattice_links().lattice().volume(),
            self.links.flops_per_site(&v(false)),
            self.links.flops_per_site(&v(true)),
        )
    }
}
