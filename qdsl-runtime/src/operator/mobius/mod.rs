//! Möbius domain-wall fermions (Brower–Neff–Orginos) on host fields: the parameters
//! ([`MobiusParams`]), the s-direction operators M5, M_φ and M5⁻¹ as per-chirality
//! Ls × Ls matrices ([`ChiralSOperator`]), and the even-odd blocks ([`MobiusBlocks`]) that
//! make the preconditioned operator through the generic [`Schur`](super::Schur) complement.
//!
//! # The operator
//!
//! A 5D field ψ(x, s), s = 0 … Ls − 1, each slice a 4D Wilson field. With the chiral
//! projectors P± = (1 ± γ5)/2 (qdsl's γ5 = diag(1, 1, −1, −1)) and the s-hop
//!
//! (S ψ)(s) = P₋ ψ(s + 1) + P₊ ψ(s − 1),  ψ(Ls) ≡ −m_f ψ(0),  ψ(−1) ≡ −m_f ψ(Ls − 1)
//!
//! (the quark mass m_f couples the two walls), the Möbius operator is
//!
//! D ψ(s) = (b_s D_W + 1) ψ(s) + (c_s D_W − 1) (S ψ)(s)
//!        = D_W [(b_s + c_s S) ψ](s) + [(1 − S) ψ](s),
//!
//! with D_W = (4 − M5) − ½ H the Wilson operator of negative mass −M5 (the domain-wall
//! height M5 > 0) and H the Wilson hop, H ψ(x) = Σ_μ [(1 − γ_μ) U_μ(x) ψ(x + μ̂) +
//! (1 + γ_μ) U_μ†(x − μ̂) ψ(x − μ̂)], diagonal in s. Splitting D_W,
//!
//! D = M5 − ½ H M_φ,  M_φ = b + c S,  M5 = (4 − M5)(b + c S) + 1 − S = α + β S,
//!
//! α_s = b_s (4 − M5) + 1, β_s = c_s (4 − M5) − 1: M5 is site-local in x and acts in s
//! and chirality only (the even-odd diagonal block), ½ H M_φ hops in x (the off-diagonal
//! blocks, h = −½, K = H M_φ). Shamir's domain wall is b = 1, c = 0 (M_φ = 1,
//! M5 = (5 − M5) − S); Möbius has constant b, c (b − c = 1 keeps the Shamir kernel's
//! scale, b + c = α the Möbius scale); zMöbius lets b_s, c_s depend on s (complex).
//!
//! Conventions of the other codes (facts read from their sources, not code):
//! * **Grid** (`CayleyFermion5D`): the same operator, Mooee = M5 (diagonal bee = α, off
//!   diagonal −cee with cee = −β, the mass corners −m_f), Meooe = D_W-hop ∘ (b + c S).
//! * **QUDA** (`DiracMobius`, `dslash_domain_wall_m5.cuh`): its `m5` is −M5 and its D5 is
//!   2S (spin projection (1 ∓ γ5) without the ½: "0.5 from gamma matrices"); Dslash4pre is
//!   b + ½ c D5 = M_φ, Dslash5 (DSLASH5_MOBIUS) is 1 + κ_s D5 = 2κ_b M5 with
//!   κ_b = 1/(2(b(4 − M5) + 1)), and M = Dslash5 − κ_b D4 Dslash4pre = 2κ_b D. QUDA's
//!   M5⁻¹ is (2κ_b M5)⁻¹ with κ = κ_b/κ_c = −β/α and the denominator 1 + κ^Ls m_f, as in
//!   [`ChiralSOperator::m5_inverse`]. QUDA's spin basis has the opposite sign of γ5 to
//!   qdsl's DeGrand–Rossi γ5, so the projector each code calls P₋ keeps the opposite spin
//!   components; in each code's own γ5 the structure is the one above (P₋ hops to s + 1,
//!   the 4D quark field is q = P₋ψ(0) + P₊ψ(Ls − 1)).
//!
//! # Even-odd preconditioning (4D checkerboard, every s of a site on its parity)
//!
//! [`EvenOddMobius`] with [`crate::operator::SchurForm::Complement`] is QUDA's asymmetric
//! MatPC (up to its factor 2κ_b): M̂ = M5 − ¼ H_pq M_φ M5⁻¹ H_qp M_φ; with
//! [`crate::operator::SchurForm::Symmetric`] it is the symmetric one,
//! M̂_sym = 1 − ¼ M5⁻¹ H_pq M_φ M5⁻¹ H_qp M_φ. Both solve D ψ = η through the
//! [`Schur`](super::Schur)'s source preparation and reconstruction, and M̂† uses M_φ†, (M5⁻¹)† and
//! H† = γ5 H γ5.
//!
//! (The M_φ here is the factor of the Möbius MSPCG preconditioner of Tu, Clark, Jung and
//! Mawhinney; QUDA calls it Dslash4pre / M5pre, Grid Meo5D.)
//!
//! Hermiticity: R5 S R5 = S† and γ5 D_W γ5 = D_W† give γ5 R5 D γ5 R5 =
//! [(b + c S) D_W + 1 − S]† — the operator with the hop and M_φ in the other order. D is
//! γ5 R5-Hermitian only at c = 0 (Shamir): D_W and P± do not commute. The tests assert
//! both statements.
//!
//! # The fused kernels (`fused5d!`)
//!
//! The chains of `qdsl_kernels::domain_wall` (QUDA's three kernels of the asymmetric M̂,
//! Dslash4pre fused into the hop's source, the MSPCG kernels) are `fused5d!` specs
//! ([`qdsl_core::dsl::fused5d`]): one 4D hop planned as a stencil with s5 = threadIdx.y
//! and whole blocks, the s-local pieces as rows of their Ls × Ls matrices on the block's
//! s-column in shared memory (barriers between stages), the matrices kernel parameters
//! bound by name to [`ChiralSOperator::of_piece`]'s [`ChiralSOperator::kernel_matrices`].
//! Their generated CPU code is tested against the textbook operator of the tests
//! (`fused_tests`), and [`crate::operator::device::DeviceStencil::fused`] launches them
//! on the GPU; [`DeviceMobiusBlocks`] are the even-odd blocks on device fields, and
//! [`DeviceEvenOddMobius`] runs M̂ through QUDA's three chains (or two), M̂† through two,
//! and the symmetric form, source preparation and reconstruction through the generic
//! [`Schur`](super::Schur). The tensor-core M5⁻¹ is the chains' `m5inv` knob
//! ([`DeviceMobiusBlocks::with_m5inv`], [`MobiusBlocks::with_m5inv`]).

mod blocks;
mod device;
mod device_matrices;
mod distributed;
mod params;
mod physical;
mod s_operator;

#[cfg(test)]
mod device_tests;
#[cfg(test)]
mod fused_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod textbook;

pub use blocks::{EvenOddMobius, MobiusBlocks};
pub use device::{ComplementPlan, DeviceEvenOddMobius, DeviceMobiusBlocks};
pub use device_matrices::DeviceChainMatrices;
pub use distributed::{DistributedEvenOddMobius, DistributedMobiusBlocks, DistributedMobiusHop};
pub use params::{MobiusError, MobiusParams};
pub use physical::{join_parities, midpoint_field, split_parities, wall_field};
pub use s_operator::{ChiralSOperator, Chirality};
