//! [`DeviceMobiusBlocks`]: the even-odd blocks of the Möbius operator D = M5 − ½ H M_φ
//! on device 5D fields, launched as `fused5d!` chains of [`qdsl_kernels::domain_wall`],
//! and [`DeviceEvenOddMobius`], their generic [`Schur`] complement — the operator of the
//! host [`super::EvenOddMobius`] (equations in [`super`]).
//!
//! The blocks (r the output parity, s the other), one chain each:
//!
//! | block | chain |
//! |---|---|
//! | K_rs = H_rs M_φ (h = −½), with xpay a·x + b·K ψ | `mobius_hop_m5pre` |
//! | K'_rs = M_φ† (H†)_rs (the adjoint's hop) | `mspcg_mphi_dag_dw_dag` |
//! | D_rr = M5, D†_rr = M5† | `mobius_m5`, `mobius_m5_dagger` |
//! | D_rr⁻¹ = M5⁻¹ (with xpay: the symmetric form), (D†_rr)⁻¹ | `mobius_m5inv`, `mobius_m5inv_dagger` |
//!
//! so the symmetric form, the source preparation b̂ = η_p + ½ H_pq M_φ M5⁻¹ η_q, the
//! reconstruction ψ_q = M5⁻¹ (η_q + ½ H_qp M_φ ψ_p) and the full operator are the
//! [`Schur`]'s, written once for every action. The asymmetric M̂ and M̂† themselves are
//! fused further ([`EvenOddBlocks::apply_complement_fused`]):
//!
//! * M̂ ψ = M5 ψ − ¼ H_pq t, t = M_φ M5⁻¹ H_qp M_φ ψ: [`ComplementPlan::Quda`] in QUDA's
//!   three kernels (t₁ = M_φ ψ — `mobius_dslash4pre`; t = M_φ M5⁻¹ H t₁ —
//!   `mobius_dslash4_m5inv_m5pre`; M5 ψ − ¼ H t — `mobius_dslash4_xpay_m5mob`), or
//!   [`ComplementPlan::SourceFused`] in two, the first M_φ on the hop's source
//!   (`mobius_m5pre_m5inv_dslash4_m5pre`, then `mobius_dslash4_xpay_m5mob`);
//! * M̂† ψ = M5† ψ − ¼ M_φ† (H†)_pq t, t = (M5†)⁻¹ M_φ† (H†)_qp ψ: two kernels
//!   (`mspcg_m5inv_dag_mphi_dag_dw_dag`, then `mobius_mphidag_dslash4dag_xpay_m5dag`).
//!
//! The s-operators' matrices (M5, M_φ, M5⁻¹ and their adjoints, from the f64
//! [`ChiralSOperator`]) are uploaded once in the kernels' compute type and bound by
//! piece to every launch ([`DeviceChainMatrices`]). Spinors are stored in the variant's
//! spinor format (f64, f32, fixed16, …), links in its gauge format and compression.

use super::blocks::mobius_block_flops;
use super::{ChiralSOperator, DeviceChainMatrices, MobiusParams};
use crate::device::{DeviceField, Gpu};
use crate::distributed::device::DeviceHopDistribution;
use crate::operator::device::{
    device_spinor, BoxLaunch, DeviceRun, DeviceStencil, OperatorError, StencilArgs,
};
use crate::operator::even_odd::{BlockFlops, Diagonal, EvenOddBlocks, Schur, SchurForm, Xpay};
use crate::operator::DeviceXpay;
use qdsl_core::dsl::fused5d::mma::real_matrices;
use qdsl_core::dsl::fused5d::{FusedVariant, M5invMode, SOp, SPiece};
use qdsl_core::dsl::variant::{OutputSites, Region};
use qdsl_core::dsl::Variant;
use qdsl_core::field::GaugeField;
use qdsl_core::format::LinkFormat;
use qdsl_core::lattice::{Lattice, Parity, SiteBox};
use qdsl_kernels::domain_wall::*;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

/// How the asymmetric M̂ is launched (M̂† is two kernels either way).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ComplementPlan {
    /// QUDA's three kernels: Dslash4pre, Dslash4·M5inv·M5pre, Dslash4·xpay·M5mob.
    #[default]
    Quda,
    /// Two kernels: M_φ fused into the hop's source (M5pre·M5inv·Dslash4·M5pre), then
    /// Dslash4·xpay·M5mob.
    SourceFused,
}

/// The chains the blocks launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kernel {
    /// K = H M_φ.
    Hop,
    /// K' = M_φ† H†.
    HopDagger,
    /// M5 (dagger: M5†).
    M5(bool),
    /// M5⁻¹ (dagger: (M5†)⁻¹).
    M5Inverse(bool),
    /// M_φ (QUDA's Dslash4pre).
    Dslash4pre,
    /// M_φ M5⁻¹ H.
    Dslash4M5invM5pre,
    /// M_φ M5⁻¹ H M_φ.
    M5preM5invDslash4M5pre,
    /// a · M5 x + b · H ψ.
    Dslash4XpayM5mob,
    /// (M5†)⁻¹ M_φ† H†.
    M5invDagMphiDagDslash4Dag,
    /// a · M5† x + b · M_φ† H† ψ.
    MphiDagDslash4DagXpayM5Dag,
    /// M_φ† (the s-local half of the distributed adjoint hop).
    MphiDagger,
}

impl Kernel {
    fn entry(self) -> FusedEntry {
        match self {
            Kernel::Hop => FusedEntry::of::<MobiusHopM5pre>(),
            Kernel::HopDagger => FusedEntry::of::<MspcgMphiDagDwDag>(),
            Kernel::M5(false) => FusedEntry::of::<MobiusM5>(),
            Kernel::M5(true) => FusedEntry::of::<MobiusM5Dagger>(),
            Kernel::M5Inverse(false) => FusedEntry::of::<MobiusM5inv>(),
            Kernel::M5Inverse(true) => FusedEntry::of::<MobiusM5invDagger>(),
            Kernel::Dslash4pre => FusedEntry::of::<MobiusDslash4pre>(),
            Kernel::Dslash4M5invM5pre => FusedEntry::of::<MobiusDslash4M5invM5pre>(),
            Kernel::M5preM5invDslash4M5pre => FusedEntry::of::<MobiusM5preM5invDslash4M5pre>(),
            Kernel::Dslash4XpayM5mob => FusedEntry::of::<MobiusDslash4XpayM5mob>(),
            Kernel::M5invDagMphiDagDslash4Dag => FusedEntry::of::<MspcgM5invDagMphiDagDwDag>(),
            Kernel::MphiDagDslash4DagXpayM5Dag => {
                FusedEntry::of::<MobiusMphidagDslash4dagXpayM5dag>()
            }
            Kernel::MphiDagger => FusedEntry::of::<MobiusMphiDagger>(),
        }
    }
}

/// A field of the fused complement's launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// ψ on p (read only).
    Psi,
    /// The result on p.
    Out,
    /// A spare field on p.
    SpareP,
    /// A spare field on q.
    SpareQ,
}

/// One launch of the fused complement: `kernel` writing parity p (`to_p`) or q, from
/// `from` into `to`, with xpay (x = ψ, a = 1, b = [`COMPLEMENT_XPAY_B`]) or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Launch {
    kernel: Kernel,
    pub(crate) to_p: bool,
    pub(crate) from: Slot,
    pub(crate) to: Slot,
    pub(crate) xpay: bool,
}

#[cfg(test)]
impl Launch {
    /// The catalog name of the launched chain.
    pub(crate) fn chain_name(&self) -> String {
        self.kernel.entry().name
    }
}

/// b of the last launch's xpay: M̂ ψ = M5 ψ − ¼ H t (h² = ¼).
pub(crate) const COMPLEMENT_XPAY_B: f64 = -0.25;

/// The xpay of a complement launch: out = ψ + b·(chain), b = [`COMPLEMENT_XPAY_B`].
fn complement_xpay(psi: &DeviceField) -> Xpay<'_, DeviceField> {
    Xpay {
        a: 1.0,
        x: psi,
        b: COMPLEMENT_XPAY_B,
    }
}

/// The launches of M̂ in `plan` (dagger: of M̂†), in order (module docs).
pub(crate) fn complement_launches(plan: ComplementPlan, dagger: bool) -> Vec<Launch> {
    let l = |kernel, to_p, from, to, xpay| Launch {
        kernel,
        to_p,
        from,
        to,
        xpay,
    };
    if dagger {
        return vec![
            l(
                Kernel::M5invDagMphiDagDslash4Dag,
                false,
                Slot::Psi,
                Slot::SpareQ,
                false,
            ),
            l(
                Kernel::MphiDagDslash4DagXpayM5Dag,
                true,
                Slot::SpareQ,
                Slot::Out,
                true,
            ),
        ];
    }
    let last = l(
        Kernel::Dslash4XpayM5mob,
        true,
        Slot::SpareQ,
        Slot::Out,
        true,
    );
    match plan {
        ComplementPlan::Quda => vec![
            l(Kernel::Dslash4pre, true, Slot::Psi, Slot::SpareP, false),
            l(
                Kernel::Dslash4M5invM5pre,
                false,
                Slot::SpareP,
                Slot::SpareQ,
                false,
            ),
            last,
        ],
        ComplementPlan::SourceFused => vec![
            l(
                Kernel::M5preM5invDslash4M5pre,
                false,
                Slot::Psi,
                Slot::SpareQ,
                false,
            ),
            last,
        ],
    }
}

/// Runs `launches` on the fields (host or device): `launch(l, source, destination, x)`
/// with x = ψ where the launch has xpay.
pub(crate) fn run_launches<F, E>(
    launches: &[Launch],
    psi: &F,
    out: &mut F,
    spare_p: &mut F,
    spare_q: &mut F,
    mut launch: impl FnMut(&Launch, &F, &mut F, Option<&F>) -> Result<(), E>,
) -> Result<(), E> {
    for l in launches {
        let x = l.xpay.then_some(psi);
        match (l.from, l.to) {
            (Slot::Psi, Slot::SpareP) => launch(l, psi, spare_p, x)?,
            (Slot::Psi, Slot::SpareQ) => launch(l, psi, spare_q, x)?,
            (Slot::SpareP, Slot::SpareQ) => launch(l, spare_p, spare_q, x)?,
            (Slot::SpareQ, Slot::Out) => launch(l, spare_q, out, x)?,
            (from, to) => unreachable!("no launch of the plans goes from {from:?} to {to:?}"),
        }
    }
    Ok(())
}

/// Every s-local piece: M5, M_φ, M5⁻¹ and their adjoints.
fn all_pieces() -> Vec<SPiece> {
    [SOp::M5, SOp::MPhi, SOp::M5Inv]
        .into_iter()
        .flat_map(|op| [false, true].map(|dagger| SPiece { op, dagger }))
        .collect()
}

/// The even-odd blocks of the Möbius operator on device 5D fields (module docs): the
/// device counterpart of [`super::MobiusBlocks`].
pub struct DeviceMobiusBlocks {
    gauge: DeviceField,
    matrices: DeviceChainMatrices,
    params: MobiusParams,
    lattice: Lattice,
    parity: Parity,
    /// Spinor and gauge formats, compression, time boundary.
    formats: Variant,
    plan: ComplementPlan,
    /// How the chains that list it apply M5⁻¹ (the sweep, the dense rows, the tensor
    /// cores).
    m5inv: M5invMode,
    flops: BlockFlops,
    /// On one rank of a decomposed lattice: the formats of the chains launched over
    /// boxes of sites (the sub-box region, the rank's kernel boundary).
    box_formats: Option<Variant>,
    /// The chains built so far, by (chain, output parity, xpay, over boxes).
    built: Mutex<HashMap<ChainKey, Arc<DeviceStencil>>>,
}

/// A built chain's key: the chain, its output parity, xpay, launched over boxes.
type ChainKey = (Kernel, Parity, bool, bool);

impl fmt::Debug for DeviceMobiusBlocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceMobiusBlocks")
            .field("params", &self.params)
            .field("parity", &self.parity)
            .field("formats", &self.formats)
            .field("plan", &self.plan)
            .finish()
    }
}

impl DeviceMobiusBlocks {
    /// The blocks on `parity` for links `gauge` (uploaded here in `formats`' gauge
    /// storage and compression), `params`, the spinor format and time boundary of
    /// `formats`, and M̂'s launch `plan`; the kernels of M̂ and M̂† are compiled now, the
    /// others on first use.
    pub fn new(
        gpu: &Gpu,
        gauge: &GaugeField<f64>,
        params: MobiusParams,
        parity: Parity,
        formats: &Variant,
        plan: ComplementPlan,
    ) -> Result<Self, OperatorError> {
        Self::with_m5inv(gpu, gauge, params, parity, formats, plan, M5invMode::Sweep)
    }

    /// [`Self::new`] with M5⁻¹ applied as `m5inv` says in the chains that list it
    /// (`mma_f16`, `mma_bf16`: on the tensor cores, the sloppy operator of a
    /// mixed-precision solve). An error where the mode cannot apply: complex (zMöbius)
    /// matrices or Ls > 16 on the tensor cores, f64 spinors.
    pub fn with_m5inv(
        gpu: &Gpu,
        gauge: &GaugeField<f64>,
        params: MobiusParams,
        parity: Parity,
        formats: &Variant,
        plan: ComplementPlan,
        m5inv: M5invMode,
    ) -> Result<Self, OperatorError> {
        let mut blocks = Self::unbuilt(gpu, gauge, params, parity, formats, plan)?;
        if m5inv.operand().is_some() {
            let inverse = ChiralSOperator::m5_inverse(&blocks.params);
            for m in [
                inverse.kernel_matrices(),
                inverse.adjoint().kernel_matrices(),
            ] {
                real_matrices("DeviceMobiusBlocks", &m)?;
            }
        }
        blocks.m5inv = m5inv;
        let q = parity.opposite();
        let first: &[(Kernel, Parity, bool)] = match plan {
            ComplementPlan::Quda => &[
                (Kernel::Dslash4pre, parity, false),
                (Kernel::Dslash4M5invM5pre, q, false),
            ],
            ComplementPlan::SourceFused => &[(Kernel::M5preM5invDslash4M5pre, q, false)],
        };
        let rest = [
            (Kernel::Dslash4XpayM5mob, parity, true),
            (Kernel::M5invDagMphiDagDslash4Dag, q, false),
            (Kernel::MphiDagDslash4DagXpayM5Dag, parity, true),
        ];
        let kernels: Vec<ChainKey> = first
            .iter()
            .chain(&rest)
            .map(|&(k, r, xpay)| (k, r, xpay, false))
            .collect();
        blocks.build_chain_keys(gpu, &kernels)?;
        Ok(blocks)
    }

    /// Compiles and loads the s-local chains a distributed M̂ and M̂† launch (the hop is
    /// not fused with them there: [`super::DistributedMobiusBlocks`]), in parallel, so
    /// that the first application finds them built: M5 and M5† on p, M5⁻¹ and (M5†)⁻¹ on
    /// q, M_φ on both parities, M_φ† on q and with xpay on p.
    pub(crate) fn build_local_chains(&self, gpu: &Gpu) -> Result<(), OperatorError> {
        let (p, q) = (self.parity, self.parity.opposite());
        self.build_chain_keys(
            gpu,
            &[
                (Kernel::M5(false), p, false, false),
                (Kernel::M5(true), p, false, false),
                (Kernel::M5Inverse(false), q, false, false),
                (Kernel::M5Inverse(true), q, false, false),
                (Kernel::Dslash4pre, p, false, false),
                (Kernel::Dslash4pre, q, false, false),
                (Kernel::MphiDagger, q, false, false),
                (Kernel::MphiDagger, p, true, false),
            ],
        )
    }

    /// Builds every chain of `keys` not built yet, one thread each (NVRTC compiles in
    /// parallel; [`Self::kernel`] holds no lock while it compiles). Returns the first
    /// error.
    fn build_chain_keys(&self, gpu: &Gpu, keys: &[ChainKey]) -> Result<(), OperatorError> {
        std::thread::scope(|scope| {
            let threads: Vec<_> = keys
                .iter()
                .map(|&key| scope.spawn(move || self.kernel(gpu, key)))
                .collect();
            threads.into_iter().try_for_each(|t| {
                t.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                    .map(|_| ())
            })
        })
    }

    /// The blocks with no chain compiled yet (each on first use): what the distributed
    /// blocks use for their s-local pieces ([`super::DistributedMobiusBlocks`]).
    pub(crate) fn unbuilt(
        gpu: &Gpu,
        gauge: &GaugeField<f64>,
        params: MobiusParams,
        parity: Parity,
        formats: &Variant,
        plan: ComplementPlan,
    ) -> Result<Self, OperatorError> {
        let link = LinkFormat::new(formats.gauge.link_storage(), formats.recon.compression());
        let wide = formats.spinor.compute() == qdsl_core::dsl::variant::StorageFormat::F64;
        Ok(Self {
            gauge: DeviceField::from_gauge(gpu, gauge, link)?,
            matrices: DeviceChainMatrices::upload(gpu, &params, &all_pieces(), wide)?,
            flops: mobius_block_flops::<f64>(&params, parity, formats.boundary),
            lattice: *gauge.lattice(),
            params,
            parity,
            formats: *formats,
            plan,
            m5inv: M5invMode::Sweep,
            box_formats: None,
            built: Mutex::new(HashMap::new()),
        })
    }

    /// out = M_φ ψ (dagger: M_φ† ψ) on parity `r`, or a·x + b·(that) with `xpay`:
    /// s-local, every site of the field's lattice.
    pub(crate) fn apply_mphi(
        &self,
        cx: DeviceRun<'_>,
        r: Parity,
        out: &mut DeviceField,
        psi: &DeviceField,
        dagger: bool,
        xpay: Option<Xpay<'_, DeviceField>>,
    ) -> Result<(), OperatorError> {
        let k = if dagger {
            Kernel::MphiDagger
        } else {
            Kernel::Dslash4pre
        };
        self.run(cx, k, r, out, psi, xpay)
    }

    /// The parameters.
    pub fn params(&self) -> &MobiusParams {
        &self.params
    }

    /// The launch plan of M̂.
    pub fn plan(&self) -> ComplementPlan {
        self.plan
    }

    /// How the chains that list it apply M5⁻¹.
    pub fn m5inv(&self) -> M5invMode {
        self.m5inv
    }

    /// Sites of a 5D field on one parity: Ls × V/2.
    fn field_sites(&self) -> usize {
        self.params.ls() * self.lattice.half_volume()
    }

    /// The chain `k` writing parity `r` (with xpay or not), over boxes of sites or the
    /// whole parity, built on first use. Over boxes its variant is `box_formats` on one
    /// rank of a decomposed lattice, else the blocks' formats with the sub-box region.
    fn kernel(
        &self,
        gpu: &Gpu,
        (k, r, xpay, boxed): ChainKey,
    ) -> Result<Arc<DeviceStencil>, OperatorError> {
        let key = (k, r, xpay, boxed);
        let formats = match (boxed, self.box_formats) {
            (false, _) => self.formats,
            (true, Some(f)) => f,
            (true, None) => Variant {
                region: Region::SubBox,
                ..self.formats
            },
        };
        if let Some(s) = self
            .built
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok(Arc::clone(s));
        }
        let e = k.entry();
        let chain = (e.chain)();
        let m5inv = if chain.m5inv_modes().contains(&self.m5inv) {
            self.m5inv
        } else {
            M5invMode::Sweep
        };
        let v = FusedVariant {
            variant: Variant {
                sites: OutputSites::Parity(r),
                xpay,
                dagger: false,
                ..formats
            },
            ls: self.params.ls(),
            m5inv,
        };
        let s = Arc::new(DeviceStencil::fused(gpu, &chain, (e.hop)(), &v)?);
        self.built
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, Arc::clone(&s));
        Ok(s)
    }

    /// out_r = chain `k` of ψ, or a·x + b·(chain ψ) with `xpay` (tuned launch).
    fn run(
        &self,
        cx: DeviceRun<'_>,
        k: Kernel,
        r: Parity,
        out: &mut DeviceField,
        psi: &DeviceField,
        xpay: Option<Xpay<'_, DeviceField>>,
    ) -> Result<(), OperatorError> {
        let kernel = self.kernel(cx.gpu, (k, r, xpay.is_some(), false))?;
        self.launch(cx, (k, &kernel), out, psi, xpay, None)
    }

    /// Queues `kernel` (the chain `k`) on ψ into out, with xpay, over `site_box` or the
    /// whole parity (tuned launch).
    fn launch(
        &self,
        cx: DeviceRun<'_>,
        (k, kernel): (Kernel, &DeviceStencil),
        out: &mut DeviceField,
        psi: &DeviceField,
        xpay: Option<Xpay<'_, DeviceField>>,
        site_box: Option<&BoxLaunch<'_>>,
    ) -> Result<(), OperatorError> {
        let hops = (k.entry().chain)().hop_position().is_some();
        let inputs: Vec<&DeviceField> = match hops {
            true => vec![psi, &self.gauge],
            false => vec![psi],
        };
        let dx = xpay.map(|x| DeviceXpay {
            a: x.a,
            x: x.x,
            b: x.b,
        });
        let matrices = self.matrices.bindings();
        let mut args = StencilArgs::new(out, &inputs)
            .xpay(dx.as_ref())
            .matrices(&matrices);
        if let Some(b) = site_box {
            args = args.within(b);
        }
        kernel.run(cx.gpu, cx.tuner, &self.lattice, args)
    }

    /// The blocks of one rank of a decomposed lattice, whose chains with a hop run over
    /// boxes of sites in `box_formats` ([`Self::apply_complement_chains`]).
    pub(crate) fn with_box_formats(self, box_formats: Variant) -> Self {
        Self {
            box_formats: Some(box_formats),
            ..self
        }
    }

    /// Builds, in parallel, the chains [`Self::apply_complement_chains`] launches:
    /// M_φ on p and, over boxes, QUDA's two hop chains of M̂ and the two of M̂†.
    pub(crate) fn build_distributed_chains(&self, gpu: &Gpu) -> Result<(), OperatorError> {
        let keys: Vec<ChainKey> = [false, true]
            .into_iter()
            .flat_map(|dagger| complement_launches(ComplementPlan::Quda, dagger))
            .map(|l| {
                let boxed = (l.kernel.entry().chain)().hop_position().is_some();
                (l.kernel, self.launch_parity(&l), l.xpay, boxed)
            })
            .collect();
        self.build_chain_keys(gpu, &keys)
    }

    /// M̂† ψ (this operator's two chains, [`complement_launches`]) computed only where
    /// it is needed: the first chain (writing q into `t_q`) over the boxes `near`, the
    /// second (writing p into `out`, xpay with ψ) over the boxes `inside`; the other
    /// sites of `t_q` and `out` are left as they were. With `near` the sites within one
    /// hop of `inside`, `out` is exact on `inside` (MSPCG's local operator: the sites each
    /// stage needs, [`crate::solver::mspcg::StackedBlocks::reach_boxes`]).
    pub(crate) fn apply_complement_dagger_within(
        &self,
        cx: DeviceRun<'_>,
        (out, psi): (&mut DeviceField, &DeviceField),
        t_q: &mut DeviceField,
        (near, inside): (&[SiteBox], &[SiteBox]),
    ) -> Result<(), OperatorError> {
        let stream = cx.gpu.backend().stream();
        for l in complement_launches(self.plan, true) {
            let r = self.launch_parity(&l);
            let kernel = self.kernel(cx.gpu, (l.kernel, r, l.xpay, true))?;
            let xpay = || l.xpay.then(|| complement_xpay(psi));
            match (l.from, l.to) {
                (Slot::Psi, Slot::SpareQ) => {
                    for b in near {
                        let b = BoxLaunch { sites: *b, stream };
                        self.launch(cx, (l.kernel, &kernel), t_q, psi, xpay(), Some(&b))?;
                    }
                }
                (Slot::SpareQ, Slot::Out) => {
                    for b in inside {
                        let b = BoxLaunch { sites: *b, stream };
                        self.launch(cx, (l.kernel, &kernel), out, t_q, xpay(), Some(&b))?;
                    }
                }
                (from, to) => unreachable!("M̂† has no launch from {from:?} to {to:?}"),
            }
        }
        Ok(())
    }

    /// The output parity of a complement launch.
    fn launch_parity(&self, l: &Launch) -> Parity {
        if l.to_p {
            self.parity
        } else {
            self.parity.opposite()
        }
    }

    /// M̂ ψ (dagger: M̂† ψ) in fused chains with the spare fields `t_q`, `t_p`: on one
    /// GPU (`distribution` none) in this operator's plan; on one rank of a decomposed
    /// lattice in QUDA's chains — the s-local M_φ over the rank's whole extended lattice,
    /// each chain with a hop through `distribution`: its input's faces exchanged while
    /// the chain runs over the interior box, then over the exterior slabs (a chain
    /// computes whole sites: the hop, then its s-local pieces on the block's slices).
    pub(crate) fn apply_complement_chains(
        &self,
        cx: DeviceRun<'_>,
        distribution: Option<&DeviceHopDistribution>,
        (out, psi): (&mut DeviceField, &DeviceField),
        (t_q, t_p): (&mut DeviceField, &mut DeviceField),
        dagger: bool,
    ) -> Result<(), OperatorError> {
        let plan = match distribution {
            Some(_) => ComplementPlan::Quda,
            None => self.plan,
        };
        let launches = complement_launches(plan, dagger);
        run_launches(&launches, psi, out, t_p, t_q, |l, src, dst, x| {
            let r = self.launch_parity(l);
            let xpay = || x.map(complement_xpay);
            let hop = distribution.and_then(|d| {
                let chain = (l.kernel.entry().chain)();
                chain.hop_position().map(|_| (d, chain.hop_dagger()))
            });
            match hop {
                None => self.run(cx, l.kernel, r, dst, src, xpay()),
                Some((d, hop_dagger)) => {
                    let kernel = self.kernel(cx.gpu, (l.kernel, r, l.xpay, true))?;
                    // Eager: the chains' launches are not keyed for graphs.
                    d.apply(cx, r, src, hop_dagger, None, |b, halo| {
                        self.launch(cx, (l.kernel, &kernel), dst, halo, xpay(), Some(b))
                    })
                }
            }
        })
    }
}

impl EvenOddBlocks for DeviceMobiusBlocks {
    type Field = DeviceField;
    type Context<'c> = DeviceRun<'c>;
    type Error = OperatorError;

    fn parity(&self) -> Parity {
        self.parity
    }

    fn zeros(&self, cx: DeviceRun<'_>, _: Parity) -> Result<DeviceField, OperatorError> {
        Ok(device_spinor(
            cx.gpu,
            self.formats.spinor,
            24,
            self.field_sites(),
        )?)
    }

    /// The kernels check every field they are given.
    fn expect_field(&self, _: Parity, _: &DeviceField) -> Result<(), OperatorError> {
        Ok(())
    }

    /// h = −½ (D_rs = −½ H_rs M_φ; the adjoint's blocks carry the same h).
    fn hop_coefficient(&self, _: bool) -> f64 {
        -0.5
    }

    /// K_rs ψ = H_rs M_φ ψ (`mobius_hop_m5pre`); dagger: M_φ† (H†)_rs ψ
    /// (`mspcg_mphi_dag_dw_dag`); xpay after the chain.
    fn hop(
        &self,
        cx: DeviceRun<'_>,
        r: Parity,
        out: &mut DeviceField,
        psi: &DeviceField,
        dagger: bool,
        xpay: Option<Xpay<'_, DeviceField>>,
    ) -> Result<(), OperatorError> {
        let k = if dagger {
            Kernel::HopDagger
        } else {
            Kernel::Hop
        };
        self.run(cx, k, r, out, psi, xpay)
    }

    fn diagonal(&self) -> Diagonal {
        Diagonal::Local
    }

    /// out = M5 ψ (dagger: M5† ψ).
    fn apply_diagonal(
        &self,
        cx: DeviceRun<'_>,
        r: Parity,
        out: &mut DeviceField,
        psi: &DeviceField,
        dagger: bool,
    ) -> Result<(), OperatorError> {
        self.run(cx, Kernel::M5(dagger), r, out, psi, None)
    }

    /// out = M5⁻¹ ψ (dagger: (M5†)⁻¹ ψ).
    fn apply_diagonal_inverse(
        &self,
        cx: DeviceRun<'_>,
        r: Parity,
        out: &mut DeviceField,
        psi: &DeviceField,
        dagger: bool,
    ) -> Result<(), OperatorError> {
        self.run(cx, Kernel::M5Inverse(dagger), r, out, psi, None)
    }

    /// out = a·x + b·M5⁻¹ ψ (dagger: (M5†)⁻¹).
    fn apply_diagonal_inverse_xpay(
        &self,
        cx: DeviceRun<'_>,
        r: Parity,
        out: &mut DeviceField,
        psi: &DeviceField,
        dagger: bool,
        xpay: Xpay<'_, DeviceField>,
    ) -> Result<(), OperatorError> {
        self.run(cx, Kernel::M5Inverse(dagger), r, out, psi, Some(xpay))
    }

    fn fuses_complement(&self) -> bool {
        true
    }

    /// M̂ ψ = M5 ψ − ¼ H_pq M_φ M5⁻¹ H_qp M_φ ψ in the [`ComplementPlan`]'s kernels;
    /// M̂† ψ = M5† ψ − ¼ M_φ† (H†)_pq (M5†)⁻¹ M_φ† (H†)_qp ψ in two
    /// ([`complement_launches`]).
    fn apply_complement_fused(
        &self,
        cx: DeviceRun<'_>,
        out: &mut DeviceField,
        psi: &DeviceField,
        spare: (&mut DeviceField, &mut DeviceField),
        dagger: bool,
    ) -> Result<(), OperatorError> {
        self.apply_complement_chains(cx, None, (out, psi), spare, dagger)
    }

    /// V/2 4D sites (each with Ls slices: the flops are per 4D site).
    fn sites(&self) -> usize {
        self.lattice.half_volume()
    }

    /// The host blocks' count ([`super::MobiusBlocks`]).
    fn flops_per_site(&self) -> BlockFlops {
        self.flops
    }
}

/// The even-odd preconditioned Möbius operator on device fields: [`Schur`] of
/// [`DeviceMobiusBlocks`] — [`DeviceEvenOddMobius::asymmetric`] is QUDA's asymmetric
/// MatPC (up to its factor 2κ_b), M̂ = M5 − ¼ H_pq M_φ M5⁻¹ H_qp M_φ,
/// [`DeviceEvenOddMobius::symmetric`] M̂_sym = 1 − ¼ M5⁻¹ H_pq M_φ M5⁻¹ H_qp M_φ, as
/// on the host ([`super::EvenOddMobius`]).
pub type DeviceEvenOddMobius = Schur<DeviceMobiusBlocks>;

impl DeviceEvenOddMobius {
    /// M̂† ψ computed only where it is needed: its first chain over the boxes `near`,
    /// its second over `inside`, exact on `inside` when `near` holds the sites within one
    /// hop of it ([`DeviceMobiusBlocks::apply_complement_dagger_within`]); `out` elsewhere
    /// left as it was. The asymmetric M̂ only.
    pub fn apply_dagger_within(
        &self,
        cx: DeviceRun<'_>,
        out: &mut DeviceField,
        psi: &DeviceField,
        (near, inside): (&[SiteBox], &[SiteBox]),
    ) -> Result<(), OperatorError> {
        if self.form() != SchurForm::Complement {
            return Err(OperatorError::Device(crate::device::DeviceError::Shape(
                "M̂† over boxes is the asymmetric M̂'s (the fused complement)".into(),
            )));
        }
        let q = self.blocks().parity().opposite();
        self.with_spare(cx, q, |t| {
            self.blocks()
                .apply_complement_dagger_within(cx, (out, psi), t, (near, inside))
        })
    }

    /// The asymmetric M̂ (the blocks of [`DeviceMobiusBlocks::new`]).
    pub fn asymmetric(
        gpu: &Gpu,
        gauge: &GaugeField<f64>,
        params: MobiusParams,
        parity: Parity,
        formats: &Variant,
        plan: ComplementPlan,
    ) -> Result<Self, OperatorError> {
        let blocks = DeviceMobiusBlocks::new(gpu, gauge, params, parity, formats, plan)?;
        Ok(Schur::complement(blocks))
    }

    /// The asymmetric M̂ with M5⁻¹ applied as `m5inv` says
    /// ([`DeviceMobiusBlocks::with_m5inv`]: `mma_f16`, `mma_bf16` on the tensor cores).
    pub fn asymmetric_with_m5inv(
        gpu: &Gpu,
        gauge: &GaugeField<f64>,
        params: MobiusParams,
        parity: Parity,
        formats: &Variant,
        plan: ComplementPlan,
        m5inv: M5invMode,
    ) -> Result<Self, OperatorError> {
        let blocks =
            DeviceMobiusBlocks::with_m5inv(gpu, gauge, params, parity, formats, plan, m5inv)?;
        Ok(Schur::complement(blocks))
    }

    /// The symmetric M̂_sym = M5⁻¹ M̂ (through the blocks one by one).
    pub fn symmetric(
        gpu: &Gpu,
        gauge: &GaugeField<f64>,
        params: MobiusParams,
        parity: Parity,
        formats: &Variant,
    ) -> Result<Self, OperatorError> {
        let blocks = DeviceMobiusBlocks::new(
            gpu,
            gauge,
            params,
            parity,
            formats,
            ComplementPlan::default(),
        )?;
        Ok(Schur::with_form(blocks, SchurForm::Symmetric))
    }
}
