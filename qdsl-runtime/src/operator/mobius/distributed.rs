//! [`DistributedMobiusBlocks`]: the even-odd blocks of the Möbius operator on one rank
//! of a lattice decomposed in 4D, the 5D fields (Ls slices per 4D site) on the rank's
//! extended lattice:
//!
//! | block | how |
//! |---|---|
//! | K_rs ψ = H_rs M_φ ψ | t = M_φ ψ (s-local chain `mobius_dslash4pre`, no halo), then the 4D Wilson hop H on every slice, distributed ([`DeviceHopBlocks`] with Ls sources: faces carry the Ls slices, spin-projected), xpay in the hop |
//! | K'_rs ψ = M_φ† (H†)_rs ψ | t = H† ψ distributed, then M_φ† (`mobius_mphi_dagger`), xpay there |
//! | D_rr = M5, D_rr⁻¹ = M5⁻¹ and adjoints | the s-local chains of [`DeviceMobiusBlocks`] |
//!
//! The fused single-GPU chains (H fused with M_φ, M5⁻¹ on the accumulator) cannot be
//! launched over sub-boxes; here the hop is its own kernel and the s-local pieces need
//! no communication, so M̂ = M5 − ¼ H M_φ M5⁻¹ H M_φ is the generic [`Schur`] complement
//! of these blocks — the operator of one GPU's [`super::DeviceEvenOddMobius`], with
//! another order of the floating-point operations (equal within rounding).

use super::device::DeviceMobiusBlocks;
use super::{ComplementPlan, MobiusParams};
use crate::device::DeviceField;
use crate::distributed::device::RankDistribution;
use crate::operator::device::{DeviceHopBlocks, DeviceRun, OperatorError};
use crate::operator::even_odd::{EvenOddBlocks, HopOf, Schur, WithHop, Xpay};
use crate::operator::HopAdjoint;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::dsl::Variant;
use qdsl_core::field::GaugeField;
use qdsl_core::format::LinkFormat;
use qdsl_core::lattice::Parity;
use qdsl_kernels::WilsonHop;
use std::sync::Mutex;

/// The Möbius blocks of one rank (module docs): the device blocks of one GPU with the
/// distributed hop ([`WithHop`]).
pub type DistributedMobiusBlocks = WithHop<DeviceMobiusBlocks, DistributedMobiusHop>;

/// The hop block of [`DistributedMobiusBlocks`]: K_rs = H_rs M_φ with H distributed,
/// M_φ the local blocks' s-local chain.
#[derive(Debug)]
pub struct DistributedMobiusHop {
    /// The distributed 4D hop on Ls slices.
    hop: DeviceHopBlocks,
    /// The intermediate field of a hop block, by the parity it holds [even, odd].
    scratch: Mutex<[Option<DeviceField>; 2]>,
}

impl DistributedMobiusBlocks {
    /// The blocks on `parity` of the rank `rank` for its links `gauge` (on its extended
    /// lattice, halos filled), `params`, the spinor and gauge formats of `formats` and
    /// the fermions' time boundary `boundary` (the faces carry its sign).
    pub fn new(
        cx: DeviceRun<'_>,
        rank: &RankDistribution,
        gauge: &GaugeField<f64>,
        params: MobiusParams,
        parity: Parity,
        (formats, boundary): (&Variant, TimeBoundary),
    ) -> Result<Self, OperatorError> {
        rank.expect_extended("links", gauge.lattice())?;
        let ls = params.ls();
        let local = DeviceMobiusBlocks::unbuilt(
            cx.gpu,
            gauge,
            params,
            parity,
            formats,
            ComplementPlan::default(),
        )?;
        local.build_local_chains(cx.gpu)?;
        let boxed = rank.variant(
            Variant {
                boundary,
                ..*formats
            },
            boundary,
        );
        let link = LinkFormat::new(boxed.gauge.link_storage(), boxed.recon.compression());
        let links = vec![DeviceField::from_gauge(cx.gpu, gauge, link)?];
        let distribution =
            rank.hop_distribution::<WilsonHop>(cx.gpu, (24, ls), boxed.spinor, boundary)?;
        let hop = DeviceHopBlocks::of::<WilsonHop>(
            cx.gpu,
            links,
            *rank.ext.extended(),
            &boxed,
            parity,
            1.0,
            -0.5,
            HopAdjoint::DaggerKnob,
        )?
        .with_sources(ls)
        .with_distribution(distribution);
        let hop = DistributedMobiusHop {
            hop,
            scratch: Mutex::new([None, None]),
        };
        Ok(WithHop::wrap(local, hop))
    }
}

impl DistributedMobiusHop {
    /// Runs `f` with the scratch field holding parity `p` (allocated on first use).
    fn with_scratch<R>(
        &self,
        local: &DeviceMobiusBlocks,
        cx: DeviceRun<'_>,
        p: Parity,
        f: impl FnOnce(&mut DeviceField) -> Result<R, OperatorError>,
    ) -> Result<R, OperatorError> {
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let slot = &mut scratch[p as usize];
        if slot.is_none() {
            *slot = Some(local.zeros(cx, p)?);
        }
        f(slot.as_mut().expect("allocated above"))
    }
}

impl HopOf<DeviceMobiusBlocks> for DistributedMobiusHop {
    /// K_rs ψ = H_rs (M_φ ψ); dagger: M_φ† ((H†)_rs ψ); xpay on the last step.
    fn hop(
        &self,
        local: &DeviceMobiusBlocks,
        cx: DeviceRun<'_>,
        r: Parity,
        out: &mut DeviceField,
        psi: &DeviceField,
        dagger: bool,
        xpay: Option<Xpay<'_, DeviceField>>,
    ) -> Result<(), OperatorError> {
        let s = r.opposite();
        if dagger {
            self.with_scratch(local, cx, r, |t| {
                self.hop.hop(cx, r, t, psi, true, None)?;
                local.apply_mphi(cx, r, out, t, true, xpay)
            })
        } else {
            self.with_scratch(local, cx, s, |t| {
                local.apply_mphi(cx, s, t, psi, false, None)?;
                self.hop.hop(cx, r, out, t, false, xpay)
            })
        }
    }
}

/// The asymmetric M̂ = M5 − ¼ H M_φ M5⁻¹ H M_φ of one rank: the generic [`Schur`]
/// complement of [`DistributedMobiusBlocks`].
pub type DistributedEvenOddMobius = Schur<DistributedMobiusBlocks>;
