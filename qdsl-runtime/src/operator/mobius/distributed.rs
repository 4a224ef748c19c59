//! [`DistributedMobiusBlocks`]: the even-odd blocks of the Möbius operator on one rank
//! of a lattice decomposed in 4D, the 5D fields (Ls slices per 4D site) on the rank's
//! extended lattice.
//!
//! **M̂ and M̂† (the iteration's operator): QUDA's fused chains over boxes.** Where every
//! interior and exterior box pairs its sites (an even extent along x or y: whole blocks,
//! every thread a site), M̂ runs the three kernels of one GPU's plan: M_φ over the
//! whole extended lattice (s-local), then each chain with a hop — `Dslash4·M5inv·M5pre`
//! and `Dslash4·xpay·M5mob` (M̂†: their two adjoint chains) — through the hop's
//! distribution: its input's faces (Ls slices, spin-projected) exchanged while the
//! chain runs over the interior box, then over each exterior slab once its faces are
//! in. A chain computes whole sites (the hop, then its s-local pieces on the block's
//! slices), so a box launch is the whole-parity kernel restricted to the box
//! ([`DeviceMobiusBlocks::apply_complement_chains`]).
//!
//! **The blocks one by one** (the source preparation, the reconstruction; M̂ where a
//! box does not pair its sites, or with [`RankDistribution::fused_chains`] off):
//!
//! | block | how |
//! |---|---|
//! | K_rs ψ = H_rs M_φ ψ | t = M_φ ψ (s-local chain `mobius_dslash4pre`, no halo), then the 4D Wilson hop H on every slice, distributed ([`DeviceHopBlocks`] with Ls sources: faces carry the Ls slices, spin-projected), xpay in the hop |
//! | K'_rs ψ = M_φ† (H†)_rs ψ | t = H† ψ distributed, then M_φ† (`mobius_mphi_dagger`), xpay there |
//! | D_rr = M5, D_rr⁻¹ = M5⁻¹ and adjoints | the s-local chains of [`DeviceMobiusBlocks`] |
//!
//! so that M̂ = M5 − ¼ H M_φ M5⁻¹ H M_φ is the generic [`Schur`] complement of these
//! blocks — the operator of one GPU's [`super::DeviceEvenOddMobius`], with another order
//! of the floating-point operations (equal within rounding).

use super::device::DeviceMobiusBlocks;
use super::{ComplementPlan, MobiusParams};
use crate::device::DeviceField;
use crate::distributed::device::{DeviceHopDistribution, RankDistribution};
use crate::operator::device::{DeviceHopBlocks, DeviceRun, OperatorError};
use crate::operator::even_odd::{EvenOddBlocks, HopOf, Schur, WithHop, Xpay};
use crate::operator::HopAdjoint;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::dsl::Variant;
use qdsl_core::field::GaugeField;
use qdsl_core::format::LinkFormat;
use qdsl_core::lattice::Parity;
use qdsl_kernels::WilsonHop;
use std::sync::{Arc, Mutex};

/// The Möbius blocks of one rank (module docs): the device blocks of one GPU with the
/// distributed hop ([`WithHop`]).
pub type DistributedMobiusBlocks = WithHop<DeviceMobiusBlocks, DistributedMobiusHop>;

/// The hop block of [`DistributedMobiusBlocks`]: K_rs = H_rs M_φ with H distributed,
/// M_φ the local blocks' s-local chain.
#[derive(Debug)]
pub struct DistributedMobiusHop {
    /// The distributed 4D hop on Ls slices.
    hop: DeviceHopBlocks,
    /// Where M̂ runs as fused chains over the boxes: the hop's distribution.
    fused: Option<Arc<DeviceHopDistribution>>,
    /// The intermediate field of a hop block, by the parity it holds [even, odd].
    scratch: Mutex<[Option<DeviceField>; 2]>,
}

impl DistributedMobiusHop {
    /// The bytes this rank sends per hop (the faces of the Ls slices).
    pub fn face_bytes(&self) -> usize {
        self.hop.face_bytes()
    }
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
        let boxed = rank.variant(
            Variant {
                boundary,
                ..*formats
            },
            boundary,
        );
        let local = DeviceMobiusBlocks::unbuilt(
            cx.gpu,
            gauge,
            params,
            parity,
            formats,
            ComplementPlan::default(),
        )?
        .with_box_formats(boxed);
        let link = LinkFormat::new(boxed.gauge.link_storage(), boxed.recon.compression());
        let links = vec![DeviceField::from_gauge(cx.gpu, gauge, link)?];
        let distribution =
            rank.hop_distribution::<WilsonHop>(cx.gpu, (24, ls), boxed.spinor, boundary)?;
        let boxes = distribution.hop().boxes();
        let fused = rank.fused_chains
            && std::iter::once(&boxes.interior)
                .chain(boxes.exterior.iter().flat_map(|(_, slabs)| slabs))
                .all(|b| b.is_empty() || b.pairing().is_some());
        if fused {
            local.build_distributed_chains(cx.gpu)?;
        } else {
            local.build_local_chains(cx.gpu)?;
        }
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
        .with_distribution(Arc::clone(&distribution));
        let hop = DistributedMobiusHop {
            hop,
            fused: fused.then_some(distribution),
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
    fn fuses_complement(&self, _local: &DeviceMobiusBlocks) -> bool {
        self.fused.is_some()
    }

    /// M̂ ψ in QUDA's fused chains, each hop chain over the interior box during the
    /// exchange of its input's faces, then over the exterior slabs
    /// ([`DeviceMobiusBlocks::apply_complement_chains`]).
    fn apply_complement_fused(
        &self,
        local: &DeviceMobiusBlocks,
        cx: DeviceRun<'_>,
        out: &mut DeviceField,
        psi: &DeviceField,
        spare: (&mut DeviceField, &mut DeviceField),
        dagger: bool,
    ) -> Result<(), OperatorError> {
        let Some(distribution) = &self.fused else {
            return Err(crate::operator::even_odd::SchurError::MissingBlock(
                "a fused complement (the boxes do not pair their sites)",
            )
            .into());
        };
        local.apply_complement_chains(cx, Some(distribution), (out, psi), spare, dagger)
    }

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
