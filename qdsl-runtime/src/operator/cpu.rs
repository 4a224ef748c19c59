//! The even-odd blocks of hop operators M = d + h K on host fields ([`HopBlocks`] of a
//! [`HostHop`]: the generated CPU kernels, `apply_cpu`, rayon over sites) and the
//! operators they make with the generic [`Schur`]:
//!
//! * [`EvenOddWilson`]: M̂ = 1 − κ² H_pq H_qp on parity p (q the other parity), two
//!   Wilson hops, the second with xpay (a = 1, b = −κ²). M̂† = 1 − κ² H†_pq H†_qp uses the
//!   dagger knob (H† = γ5 H γ5, i.e. (H†)_pq = (H_qp)†).
//! * [`EvenOddStaggered`]: MILC's even-odd staggered normal operator
//!   A = 4m² − D_pq D_qp = (M†M)_pp, M = 2m + D, D anti-Hermitian with the phases in the
//!   links (naive or improved/asqtad hops). A is Hermitian positive definite, so
//!   A† = A; CG on A solves the staggered system on one parity as MILC does.

use super::even_odd::{BlockFlops, Diagonal, EvenOddBlocks, Schur, SchurForm, Xpay as BlockXpay};
use crate::linear::{SolverError, SolverField};
use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::variant::{OutputSites, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{DslError, KernelInfo, Stencil, Variant};
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::Parity;
use qdsl_core::{Complex, Real};
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

/// A hop kernel K on host fields of `Self::Real`: out_r = K_rs ψ_s, or a·x + b·K_rs ψ_s
/// with xpay, the generated CPU code of a stencil and the links it reads. Implement it
/// for a new stencil to make it an even-odd operator ([`HopBlocks`]).
pub trait HostHop: Send + Sync {
    /// The compute (and storage) precision.
    type Real: Real;

    /// out = K ψ (or a·x + b·K ψ) for `variant` (output parity, dagger, xpay, formats).
    fn apply(
        &self,
        variant: &Variant,
        out: &mut ColourSpinorField<Self::Real>,
        psi: &ColourSpinorField<Self::Real>,
        xpay: Option<Xpay<'_, Self::Real>>,
    ) -> Result<(), DslError>;

    /// Flops per output site of `variant`, from the kernel's KernelInfo.
    fn flops_per_site(&self, variant: &Variant) -> usize;

    /// The layout of the fields K acts on, restricted to `subset`.
    fn layout(&self, subset: SiteSubset) -> SpinorLayout;

    /// How K's adjoint is applied.
    fn adjoint(&self) -> HopAdjoint;
}

/// How the adjoint of a hop kernel K is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HopAdjoint {
    /// The kernel's dagger knob: (K†)_rs = (K_sr)† (Wilson: H† = γ5 H γ5).
    DaggerKnob,
    /// K† = −K (staggered D): the plain kernel, its coefficient negated.
    AntiHermitian,
}

/// The Wilson hop H ψ(x) = Σ_μ [(1 − γ_μ) U_μ(x) ψ(x+μ̂) + (1 + γ_μ) U_μ†(x−μ̂) ψ(x−μ̂)]
/// with its links U (recon 18 on the host).
#[derive(Clone, Debug)]
pub struct WilsonLinks<T: Real>(pub GaugeField<T>);

impl<T: Real> HostHop for WilsonLinks<T> {
    type Real = T;

    fn apply(
        &self,
        variant: &Variant,
        out: &mut ColourSpinorField<T>,
        psi: &ColourSpinorField<T>,
        xpay: Option<Xpay<'_, T>>,
    ) -> Result<(), DslError> {
        WilsonHop.apply_cpu(variant, out, psi, &self.0, xpay)
    }

    /// 1320, 1392 with xpay (the KernelInfo).
    fn flops_per_site(&self, variant: &Variant) -> usize {
        WilsonHop::info(variant).map_or(0, |i| i.flops_per_site)
    }

    fn layout(&self, subset: SiteSubset) -> SpinorLayout {
        SpinorLayout::wilson(*self.0.lattice(), subset)
    }

    fn adjoint(&self) -> HopAdjoint {
        HopAdjoint::DaggerKnob
    }
}

/// The even-odd blocks of M = d + h K on host fields: a scalar diagonal D_rr = d and the
/// off-diagonal blocks D_rs = h K_rs of a hop kernel K ([`HostHop`]). Wilson:
/// d = 1, h = −κ, K = H; staggered: d = 2m, h = 1, K = D.
#[derive(Clone, Debug)]
pub struct HopBlocks<H> {
    hop: H,
    coefficient: f64,
    diagonal: f64,
    parity: Parity,
    boundary: TimeBoundary,
    /// Right-hand sides: the fields hold this many slices, each hopped on its own (1:
    /// 4D fields).
    sources: usize,
}

impl<H: HostHop> HopBlocks<H> {
    /// The blocks of M = d + h K on `parity` (the parity of the Schur complement), the
    /// hop kernels run with the time `boundary`.
    pub fn new(hop: H, d: f64, h: f64, parity: Parity, boundary: TimeBoundary) -> Self {
        Self {
            hop,
            coefficient: h,
            diagonal: d,
            parity,
            boundary,
            sources: 1,
        }
    }

    /// The same blocks on fields of `n` right-hand sides (the slices of 5D fields, no
    /// s-coupling: every source hopped by the same links in one kernel call).
    pub fn with_sources(self, n: usize) -> Self {
        Self {
            sources: n.max(1),
            ..self
        }
    }

    /// The hop kernel.
    pub fn hop_kernel(&self) -> &H {
        &self.hop
    }

    /// The layout of the fields on parity `r`.
    pub fn layout(&self, r: Parity) -> SpinorLayout {
        let l = self.hop.layout(SiteSubset::Single(r));
        if self.sources == 1 {
            return l;
        }
        SpinorLayout::new(
            *l.lattice(),
            self.sources,
            l.subset(),
            l.nspin(),
            l.ncolour(),
        )
        .unwrap_or(l)
    }

    fn variant(&self, r: Parity, dagger: bool, xpay: bool) -> Variant {
        let dagger = dagger && self.hop.adjoint() == HopAdjoint::DaggerKnob;
        hop_variant::<H::Real>(r, dagger, xpay, self.boundary)
    }
}

impl<H: HostHop> EvenOddBlocks for HopBlocks<H> {
    type Field = ColourSpinorField<H::Real>;
    type Context<'c> = ();
    type Error = SolverError;

    fn parity(&self) -> Parity {
        self.parity
    }

    fn zeros(&self, (): (), r: Parity) -> Result<Self::Field, SolverError> {
        Ok(ColourSpinorField::zeros(self.layout(r)))
    }

    fn expect_field(&self, r: Parity, field: &Self::Field) -> Result<(), SolverError> {
        self.layout(r)
            .expect_same(field.layout())
            .map_err(SolverError::field)
    }

    fn hop_coefficient(&self, dagger: bool) -> f64 {
        match self.hop.adjoint() {
            HopAdjoint::AntiHermitian if dagger => -self.coefficient,
            _ => self.coefficient,
        }
    }

    fn hop(
        &self,
        (): (),
        r: Parity,
        out: &mut Self::Field,
        psi: &Self::Field,
        dagger: bool,
        xpay: Option<BlockXpay<'_, Self::Field>>,
    ) -> Result<(), SolverError> {
        let variant = self.variant(r, dagger, xpay.is_some());
        let xpay = xpay.map(|x| Xpay {
            a: H::Real::from_f64(x.a),
            x: x.x,
            b: H::Real::from_f64(x.b),
        });
        self.hop
            .apply(&variant, out, psi, xpay)
            .map_err(SolverError::operator)
    }

    fn diagonal(&self) -> Diagonal {
        Diagonal::Scalar(self.diagonal)
    }

    /// out = d ψ.
    fn apply_diagonal(
        &self,
        (): (),
        _: Parity,
        out: &mut Self::Field,
        psi: &Self::Field,
        _: bool,
    ) -> Result<(), SolverError> {
        out.copy_from(psi)?;
        out.scale(Complex::new(self.diagonal, 0.0));
        Ok(())
    }

    /// out = ψ/d.
    fn apply_diagonal_inverse(
        &self,
        (): (),
        _: Parity,
        out: &mut Self::Field,
        psi: &Self::Field,
        _: bool,
    ) -> Result<(), SolverError> {
        out.copy_from(psi)?;
        out.scale(Complex::new(1.0 / self.diagonal, 0.0));
        Ok(())
    }

    /// V/2 per source.
    fn sites(&self) -> usize {
        self.sources * self.layout(self.parity).lattice().half_volume()
    }

    fn flops_per_site(&self) -> BlockFlops {
        BlockFlops {
            hop: self
                .hop
                .flops_per_site(&self.variant(self.parity, false, false)),
            hop_xpay: self
                .hop
                .flops_per_site(&self.variant(self.parity, false, true)),
            ..BlockFlops::default()
        }
    }
}

impl<H: HostHop> Schur<HopBlocks<H>> {
    /// The layout of the parity M̂ acts on.
    pub fn layout(&self) -> SpinorLayout {
        self.blocks().layout(self.parity())
    }
}

impl<H: HostHop + Clone> Schur<HopBlocks<H>> {
    /// The same operator on `n` right-hand sides at once (fields of `n` slices,
    /// [`HopBlocks::with_sources`]).
    pub fn with_sources(&self, n: usize) -> Self {
        Schur::with_form(self.blocks().clone().with_sources(n), self.form())
    }
}

/// The even-odd preconditioned Wilson operator on parity p,
///
/// M̂ ψ_p = ψ_p − κ² H_pq H_qp ψ_p,
///
/// the Schur complement of M = 1 − κ H (κ = 1/(2m + 8)): [`Schur`] of the blocks d = 1,
/// h = −κ of the Wilson hop. M̂† = 1 − κ² H†_pq H†_qp through the dagger knob
/// ((H†)_pq = (H_qp)†, H† = γ5 H γ5). Two hops, the second with xpay (a = 1, b = −κ²).
pub type EvenOddWilson<T> = Schur<HopBlocks<WilsonLinks<T>>>;

impl<T: Real> EvenOddWilson<T> {
    /// M̂ on `parity` for links `gauge`, hopping parameter κ and time boundary.
    pub fn new(gauge: GaugeField<T>, kappa: f64, parity: Parity, boundary: TimeBoundary) -> Self {
        Schur::complement(HopBlocks::new(
            WilsonLinks(gauge),
            1.0,
            -kappa,
            parity,
            boundary,
        ))
    }
}

/// The links of a staggered hop, phases folded in (MILC conventions):
/// D χ(x) = Σ_μ [F_μ(x) χ(x+μ̂) − F_μ†(x−μ̂) χ(x−μ̂) + L_μ(x) χ(x+3μ̂) − L_μ†(x−3μ̂) χ(x−3μ̂)]
/// (no L terms for naive staggered, F = U).
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
    /// The same links in precision U.
    pub fn cast<U: Real>(&self) -> StaggeredLinks<U> {
        match self {
            StaggeredLinks::Naive(u) => StaggeredLinks::Naive(u.cast()),
            StaggeredLinks::Improved { fat, long } => StaggeredLinks::Improved {
                fat: fat.cast(),
                long: long.cast(),
            },
        }
    }

    /// The gauge field that fixes the lattice.
    fn lattice_links(&self) -> &GaugeField<T> {
        match self {
            StaggeredLinks::Naive(u) => u,
            StaggeredLinks::Improved { fat, .. } => fat,
        }
    }
}

impl<T: Real> HostHop for StaggeredLinks<T> {
    type Real = T;

    fn apply(
        &self,
        variant: &Variant,
        out: &mut ColourSpinorField<T>,
        chi: &ColourSpinorField<T>,
        xpay: Option<Xpay<'_, T>>,
    ) -> Result<(), DslError> {
        match self {
            StaggeredLinks::Naive(u) => NaiveStaggeredHop.apply_cpu(variant, out, chi, u, xpay),
            StaggeredLinks::Improved { fat, long } => {
                ImprovedStaggeredHop.apply_cpu(variant, out, chi, fat, long, xpay)
            }
        }
    }

    /// 570 naive, 1146 improved; +18 with xpay.
    fn flops_per_site(&self, variant: &Variant) -> usize {
        match self {
            StaggeredLinks::Naive(_) => NaiveStaggeredHop::info(variant),
            StaggeredLinks::Improved { .. } => ImprovedStaggeredHop::info(variant),
        }
        .map_or(0, |i| i.flops_per_site)
    }

    fn layout(&self, subset: SiteSubset) -> SpinorLayout {
        SpinorLayout::staggered(*self.lattice_links().lattice(), subset)
    }

    /// D is anti-Hermitian (the phases are in the links).
    fn adjoint(&self) -> HopAdjoint {
        HopAdjoint::AntiHermitian
    }
}

/// MILC's even-odd staggered normal operator on parity p:
///
/// A ψ_p = 4m² ψ_p − D_pq D_qp ψ_p = ((2m + D)†(2m + D) ψ)_p,
///
/// the normal form 2m·M̂ ([`crate::operator::SchurForm::TimesDqq`]) of the Schur
/// complement of M = 2m + D: [`Schur`] of the blocks d = 2m, h = 1 of the staggered hop.
/// Hermitian and positive definite (D† = −D). Time boundary: periodic in the kernel, the
/// antiperiodic sign being folded into the links with the phases.
pub type EvenOddStaggered<T> = Schur<HopBlocks<StaggeredLinks<T>>>;

impl<T: Real> EvenOddStaggered<T> {
    /// A on `parity` for `links` and quark mass m.
    pub fn new(links: StaggeredLinks<T>, mass: f64, parity: Parity) -> Self {
        let blocks = HopBlocks::new(links, 2.0 * mass, 1.0, parity, TimeBoundary::Periodic);
        // The diagonal of HopBlocks is a scalar: the normal form exists.
        Schur::with_form(blocks, SchurForm::TimesDqq)
    }
}
