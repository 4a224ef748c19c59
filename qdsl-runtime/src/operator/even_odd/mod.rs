//! The operator-composition layer: an operator given by its even-odd blocks
//! ([`EvenOddBlocks`]) and the one Schur complement built on them ([`Schur`]), for host
//! fields and device fields alike (after Grid's `FermionOperator`: Meooe, Mooee,
//! MooeeInv).
//!
//! An operator on the whole lattice, split by parity — p the parity solved on, q the
//! other — is
//!
//! M = [ D_pp  D_pq ; D_qp  D_qq ],  D_rs = h K_rs (r ≠ s),
//!
//! with site-local diagonal blocks D_rr and off-diagonal blocks a coefficient h times a
//! hop kernel K (a generated stencil, e.g. the Wilson hop H: h = −κ). Its Schur
//! complement on p,
//!
//! M̂ = D_pp − D_pq D_qq⁻¹ D_qp,
//!
//! solves M ψ = η through
//!
//! b̂ = η_p − D_pq D_qq⁻¹ η_q,  M̂ ψ_p = b̂,  ψ_q = D_qq⁻¹ (η_q − D_qp ψ_p).
//!
//! [`Schur`] writes M̂, M̂†, the source preparation and the solution reconstruction once,
//! over the blocks; each action supplies only its blocks:
//!
//! | action | blocks | D_rr | h K_rs | M̂ |
//! |---|---|---|---|---|
//! | Wilson | [`super::HopBlocks`] of [`super::WilsonLinks`] | 1 | −κ H | 1 − κ² H_pq H_qp |
//! | clover, twisted mass/clover | [`super::CloverBlocks`] | A + iμγ5 | −½ H | D_pp − ¼ H_pq D_qq⁻¹ H_qp |
//! | staggered, asqtad, HISQ | [`super::HopBlocks`] of [`super::StaggeredLinks`] | 2m | D | (normal form) 4m² − D_pq D_qp |
//! | any stencil K | [`super::HopBlocks`] of a [`super::HostHop`] | d | h K | d − (h²/d) K_pq K_qp |
//!
//! (device: [`super::device::DeviceHopBlocks`], [`super::device::DeviceCloverBlocks`]).
//!
//! The symmetric form ([`SchurForm::Symmetric`]) is D_pp⁻¹ M̂ = 1 − D_pp⁻¹ D_pq D_qq⁻¹ D_qp
//! (QUDA's symmetric MatPC), with the source D_pp⁻¹ b̂ and the same reconstruction; its
//! adjoint is 1 − D†_pq (D†_qq)⁻¹ D†_qp (D†_pp)⁻¹.
//!
//! Where both diagonal blocks are the same number d, [`SchurForm::TimesDqq`] gives the
//! normal form d M̂ = d² − D_pq D_qp: for staggered fermions, M = 2m + D with D
//! anti-Hermitian, that is MILC's A = 4m² − D_pq D_qp = (M†M)_pp, Hermitian positive
//! definite; its prepared source d b̂ = (M†η)_p.
//!
//! The adjoint uses (D†)_rs = h' K'_rs: the hop's dagger knob (H† = γ5 H γ5, h' = h) for
//! the Wilson family; the plain hop with h' = −h for the anti-Hermitian staggered D.
//!
//! Fusion: every off-diagonal block is launched as the hop kernel's xpay form
//! out = a·x + b·K ψ, so M̂ is two hops (plus the local terms) as hand-written operators
//! launch it, with the same coefficients (a = 1, b = −κ² for Wilson).

mod schur;
mod with_hop;

pub use schur::{Schur, SchurError, SchurForm};
pub use with_hop::{HopOf, WithHop};

use qdsl_core::lattice::Parity;

/// The xpay operands of a hop: out = a·x + b·K ψ.
#[derive(Debug)]
pub struct Xpay<'a, F> {
    /// The factor of x.
    pub a: f64,
    /// The field x (on the output's parity).
    pub x: &'a F,
    /// The factor of K ψ.
    pub b: f64,
}

// Copy for every field type (the derive would ask F: Copy; only a reference is held),
// so that a distributed hop can pass the operands to each of its launches.
impl<F> Clone for Xpay<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F> Copy for Xpay<'_, F> {}

/// How a diagonal block D_rr acts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Diagonal {
    /// D_rr = d·1 on both parities (Wilson d = 1, staggered d = 2m): no launch, folded
    /// into the hops' xpay factors.
    Scalar(f64),
    /// A site-local operator (clover, twisted mass): applied and inverted by the blocks.
    Local,
}

/// Flops per site (of one parity) of the parts of an even-odd operator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockFlops {
    /// The hop without xpay.
    pub hop: usize,
    /// The hop with xpay.
    pub hop_xpay: usize,
    /// D_rr ψ (0 for a scalar diagonal).
    pub diagonal: usize,
    /// D_rr⁻¹ ψ (0 for a scalar diagonal).
    pub inverse: usize,
}

/// The even-odd blocks of an operator M = [D_pp D_pq; D_qp D_qq], D_rs = h K_rs (module
/// docs), on fields of one parity (`Field`: host or device).
pub trait EvenOddBlocks {
    /// A field on one parity.
    type Field;
    /// What a launch needs besides the fields: `()` on the host, the GPU and the tuner
    /// ([`super::device::DeviceRun`]) on the device.
    type Context<'c>: Copy;
    /// The error of a block's application.
    type Error: From<SchurError>;

    /// The parity p the Schur complement acts on.
    fn parity(&self) -> Parity;

    /// A zero field on parity `r`.
    fn zeros(&self, cx: Self::Context<'_>, r: Parity) -> Result<Self::Field, Self::Error>;

    /// An error unless `field` is a field on parity `r` of these blocks.
    fn expect_field(&self, r: Parity, field: &Self::Field) -> Result<(), Self::Error>;

    /// The coefficient h of the off-diagonal blocks D_rs = h K_rs (dagger: h' of
    /// (D†)_rs = h' K'_rs).
    fn hop_coefficient(&self, dagger: bool) -> f64;

    /// out_r = K_rs ψ_s (dagger: K'_rs ψ_s), or a·x + b·K ψ with `xpay`; r is the
    /// output's parity, s the other.
    fn hop(
        &self,
        cx: Self::Context<'_>,
        r: Parity,
        out: &mut Self::Field,
        psi: &Self::Field,
        dagger: bool,
        xpay: Option<Xpay<'_, Self::Field>>,
    ) -> Result<(), Self::Error>;

    /// How the diagonal blocks act.
    fn diagonal(&self) -> Diagonal;

    /// out_r = D_rr ψ_r (dagger: D†_rr ψ_r); called only for [`Diagonal::Local`].
    fn apply_diagonal(
        &self,
        cx: Self::Context<'_>,
        r: Parity,
        out: &mut Self::Field,
        psi: &Self::Field,
        dagger: bool,
    ) -> Result<(), Self::Error>;

    /// out_r = D_rr⁻¹ ψ_r (dagger: (D†_rr)⁻¹ ψ_r); called only for [`Diagonal::Local`].
    fn apply_diagonal_inverse(
        &self,
        cx: Self::Context<'_>,
        r: Parity,
        out: &mut Self::Field,
        psi: &Self::Field,
        dagger: bool,
    ) -> Result<(), Self::Error>;

    /// out_r = a·x + b·D_rr⁻¹ ψ_r (dagger: (D†_rr)⁻¹): the last step of the symmetric
    /// form ([`SchurForm::Symmetric`]). Blocks without it refuse that form's application.
    fn apply_diagonal_inverse_xpay(
        &self,
        _cx: Self::Context<'_>,
        _r: Parity,
        _out: &mut Self::Field,
        _psi: &Self::Field,
        _dagger: bool,
        _xpay: Xpay<'_, Self::Field>,
    ) -> Result<(), Self::Error> {
        Err(SchurError::MissingBlock("D_rr⁻¹ with xpay (the symmetric form)").into())
    }

    /// Whether [`Self::apply_complement_fused`] applies M̂ and M̂† of the complement form
    /// (fused kernels spanning several blocks, e.g. Möbius's D_qq⁻¹ fused into the hop);
    /// else [`Schur`] launches the blocks one by one.
    fn fuses_complement(&self) -> bool {
        false
    }

    /// out = M̂ ψ = D_pp ψ − D_pq D_qq⁻¹ D_qp ψ (dagger: M̂†) in the blocks' own fused
    /// launches, with spare fields `spare_q` on q and `spare_p` on p; called only where
    /// [`Self::fuses_complement`].
    fn apply_complement_fused(
        &self,
        _cx: Self::Context<'_>,
        _out: &mut Self::Field,
        _psi: &Self::Field,
        _spare: (&mut Self::Field, &mut Self::Field),
        _dagger: bool,
    ) -> Result<(), Self::Error> {
        Err(SchurError::MissingBlock("a fused complement").into())
    }

    /// The sites of one parity (V/2).
    fn sites(&self) -> usize;

    /// Flops per site of the hops and the local terms.
    fn flops_per_site(&self) -> BlockFlops;
}

#[cfg(test)]
pub(crate) mod tests;
