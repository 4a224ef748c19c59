//! Möbius domain-wall chains (`fused5d!`): the 4D Wilson hop H ([`crate::WilsonHop`]) on
//! every slice of a 5D field, fused with the s-local pieces M5 = α + β S, M_φ = b + c S
//! and M5⁻¹ (per chirality Ls × Ls matrices, kernel parameters; the equations are in
//! `qdsl_runtime::operator::mobius`). Ls is a knob of every chain
//! ([`qdsl_core::dsl::fused5d::FusedVariant`]); constant, per-slice (zMöbius) and Shamir
//! coefficients are values of the matrices.
//!
//! The hop alone on the 5D field is [`MobiusDslash4`] (QUDA's Dslash4).
//!
//! QUDA's asymmetric even-odd operator M̂ = M5 − ¼ H M_φ M5⁻¹ H M_φ in three kernels:
//! t₁ = M_φ ψ ([`MobiusDslash4pre`]), t₂ = M_φ M5⁻¹ H t₁ ([`MobiusDslash4M5invM5pre`]),
//! M̂ ψ = M5 ψ − ¼ H t₂ ([`MobiusDslash4XpayM5mob`] with a = 1, b = −¼); or in two, with
//! the first M_φ fused into the hop's source ([`MobiusM5preM5invDslash4M5pre`]). The
//! MSPCG preconditioner's kernels (Tu, Clark, Jung, Mawhinney, eq. 16): M_φ†D_w†
//! ([`MspcgMphiDagDwDag`]), M5^−†M_φ†D_w† ([`MspcgM5invDagMphiDagDwDag`]), M5^−†M5^−1 D_w
//! ([`MspcgM5invDagM5invDw`]), M_φ M5^−1 D_w and M_φ (the kernels
//! [`MobiusDslash4M5invM5pre`] and [`MobiusDslash4pre`]).
//!
//! The adjoint M̂† = M5† − ¼ M_φ† H† (M5†)⁻¹ M_φ† H† in two kernels:
//! t = (M5†)⁻¹ M_φ† H† ψ ([`MspcgM5invDagMphiDagDwDag`]), M̂† ψ = M5† ψ − ¼ M_φ† H† t
//! ([`MobiusMphidagDslash4dagXpayM5dag`]). The even-odd blocks themselves (what the
//! generic Schur complement launches for the symmetric form, source preparation and
//! reconstruction): K = H M_φ ([`MobiusHopM5pre`]; its adjoint M_φ† H† is
//! [`MspcgMphiDagDwDag`]), M5, M5†, M5⁻¹ and (M5†)⁻¹ ([`MobiusM5`], [`MobiusM5Dagger`],
//! [`MobiusM5inv`], [`MobiusM5invDagger`]).
//!
//! The chains with M5⁻¹ on the hop's result list how a variant may apply it
//! (`m5inv = [...]`, the knob [`qdsl_core::dsl::fused5d::M5invMode`]): the O(Ls) sweep
//! (the default), the dense rows, or the dense real inverse on the tensor cores
//! (`mma_f16`, `mma_bf16`: HMMA m16n8k16 with per-column scaling, Ls ≤ 16, real b5, c5).
//!
//! Here D_w stands for the hop H:
//! its mass term and −½ are folded into the xpay coefficients and matrices by the caller.

use crate::WilsonHop;
use qdsl_core::dsl::fused5d::{Chain, Fused5d, FusedVariant};
use qdsl_core::dsl::kernel_ir::KernelIr;
use qdsl_core::dsl::{CompiledKernel, DslError, Ir};
use qdsl_macros::fused5d;

fused5d! {
    /// The 4D hop alone on every slice of a 5D field: out(s) = (H ψ)(s) (QUDA's Dslash4,
    /// `dslash_test --dslash-type mobius --test Dslash`; the links read once for all Ls).
    pub mobius_dslash4(Dw = WilsonHop) = Dw;
}

fused5d! {
    /// QUDA's Dslash4pre: out(s) = (M_φ ψ)(s) = b_s ψ(s) + c_s (S ψ)(s).
    pub mobius_dslash4pre() = M5pre;
}

fused5d! {
    /// QUDA's Dslash4·M5inv·M5pre: out = M_φ M5⁻¹ H ψ (the hop, then the dense M5⁻¹,
    /// then M_φ, on the accumulator in shared memory).
    pub mobius_dslash4_m5inv_m5pre(Dw = WilsonHop, m5inv = [sweep, dense, mma_f16, mma_bf16]) = M5pre * M5inv * Dw;
}

fused5d! {
    /// QUDA's Dslash4·xpay·M5mob: out = a · M5 x + b · H ψ (the xpay operand through M5;
    /// M̂ ψ = M5 ψ − ¼ H t₂ with x = ψ, a = 1, b = −¼).
    pub mobius_dslash4_xpay_m5mob(Dw = WilsonHop, xpay = M5mob) = Dw;
}

fused5d! {
    /// Dslash4pre fused into the hop's source: out = M_φ M5⁻¹ H M_φ ψ (each neighbour's
    /// s-column through M_φ in shared memory).
    pub mobius_m5pre_m5inv_dslash4_m5pre(Dw = WilsonHop, m5inv = [sweep, dense, mma_f16, mma_bf16]) = M5pre * M5inv * Dw * M5pre;
}

fused5d! {
    /// MSPCG: out = M_φ† H† ψ.
    pub mspcg_mphi_dag_dw_dag(Dw = WilsonHop) = Mphi.dagger() * Dw.dagger();
}

fused5d! {
    /// MSPCG: out = (M5⁻¹)† M_φ† H† ψ.
    pub mspcg_m5inv_dag_mphi_dag_dw_dag(Dw = WilsonHop, m5inv = [sweep, dense, mma_f16, mma_bf16]) = M5inv.dagger() * Mphi.dagger() * Dw.dagger();
}

fused5d! {
    /// MSPCG: out = (M5⁻¹)† M5⁻¹ H ψ.
    pub mspcg_m5inv_dag_m5inv_dw(Dw = WilsonHop, m5inv = [sweep, dense, mma_f16, mma_bf16]) = M5inv.dagger() * M5inv * Dw;
}

fused5d! {
    /// The hop block of the even-odd Möbius operator: out = H M_φ ψ (K_rs, with
    /// D_rs = −½ K_rs; M_φ on each neighbour's s-column, then the hop).
    pub mobius_hop_m5pre(Dw = WilsonHop) = Dw * M5pre;
}

fused5d! {
    /// The adjoint's last kernel of M̂†: out = a · M5† x + b · M_φ† H† ψ
    /// (M̂† ψ = M5† ψ − ¼ M_φ† H† t with x = ψ, a = 1, b = −¼).
    pub mobius_mphidag_dslash4dag_xpay_m5dag(Dw = WilsonHop, xpay = M5.dagger()) = Mphi.dagger() * Dw.dagger();
}

fused5d! {
    /// The adjoint of Dslash4pre: out = M_φ† ψ, or a · x + b · M_φ† ψ — the s-local half
    /// of the adjoint hop block M_φ† H† when the hop runs on its own (the distributed
    /// Möbius blocks: the 4D hop exchanges faces, the s-local pieces need none).
    pub mobius_mphi_dagger() = Mphi.dagger();
}

fused5d! {
    /// The diagonal block: out = M5 ψ = α ψ + β S ψ.
    pub mobius_m5() = M5;
}

fused5d! {
    /// The adjoint diagonal block: out = M5† ψ.
    pub mobius_m5_dagger() = M5.dagger();
}

fused5d! {
    /// The inverse diagonal block: out = M5⁻¹ ψ (dense in s), or a · x + b · M5⁻¹ ψ (the
    /// symmetric form's last step).
    pub mobius_m5inv(m5inv = [sweep, dense, mma_f16, mma_bf16]) = M5inv;
}

fused5d! {
    /// The adjoint's inverse diagonal block: out = (M5†)⁻¹ ψ.
    pub mobius_m5inv_dagger(m5inv = [sweep, dense, mma_f16, mma_bf16]) = M5inv.dagger();
}

/// One `fused5d!` chain of the catalog, with its generators.
#[derive(Clone, Debug)]
pub struct FusedEntry {
    /// The chain's name.
    pub name: String,
    /// The chain.
    pub chain: fn() -> Chain,
    /// The spec of its hop, if it has one.
    pub hop: fn() -> Option<Ir>,
    /// A variant's kernel IR after the passes.
    pub kernel_ir: fn(&FusedVariant) -> Result<KernelIr, DslError>,
    /// A variant's kernel with its interface.
    pub compiled: fn(&FusedVariant) -> Result<CompiledKernel, DslError>,
}

impl FusedEntry {
    /// The entry of the spec `F`.
    pub fn of<F: Fused5d>() -> Self {
        FusedEntry {
            name: F::chain().name,
            chain: F::chain,
            hop: F::hop,
            kernel_ir: F::kernel_ir,
            compiled: F::compiled,
        }
    }
}

/// Every domain-wall chain of the catalog.
pub fn chains() -> Vec<FusedEntry> {
    vec![
        FusedEntry::of::<MobiusDslash4>(),
        FusedEntry::of::<MobiusDslash4pre>(),
        FusedEntry::of::<MobiusDslash4M5invM5pre>(),
        FusedEntry::of::<MobiusDslash4XpayM5mob>(),
        FusedEntry::of::<MobiusM5preM5invDslash4M5pre>(),
        FusedEntry::of::<MspcgMphiDagDwDag>(),
        FusedEntry::of::<MspcgM5invDagMphiDagDwDag>(),
        FusedEntry::of::<MspcgM5invDagM5invDw>(),
        FusedEntry::of::<MobiusHopM5pre>(),
        FusedEntry::of::<MobiusMphidagDslash4dagXpayM5dag>(),
        FusedEntry::of::<MobiusM5>(),
        FusedEntry::of::<MobiusM5Dagger>(),
        FusedEntry::of::<MobiusM5inv>(),
        FusedEntry::of::<MobiusM5invDagger>(),
        FusedEntry::of::<MobiusMphiDagger>(),
    ]
}
