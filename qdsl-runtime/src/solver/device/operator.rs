//! [`DeviceOperator`]: the device even-odd Wilson, Wilson-clover (twisted) and staggered
//! operators (the generic [`Schur`] of [`crate::operator::DeviceHopBlocks`] and
//! [`crate::operator::DeviceCloverBlocks`]) bound to a [`DeviceContext`], as the solvers'
//! [`LinearOperator`] on [`DeviceVector`]s.
//!
//! * Wilson: M̂ = 1 − κ² H_pq H_qp on parity p, M̂† through the kernels' dagger knob;
//!   (V/2)(1320 + 1392) flops per application.
//! * Wilson-clover with twisted mass μ (0 for plain clover, c_sw = 0 for plain twisted
//!   mass): M̂ = D_pp − ¼ H_pq D_qq⁻¹ H_qp, D = A + iμγ5 in mass normalisation, the
//!   CPU [`crate::operator::EvenOddClover`]; M̂† with the dagger hops and −μ. Clover
//!   fields are stored in the compute precision (f64 for f64 vectors, else f32).
//! * Staggered: MILC's A = 4m² − D_pq D_qp (Hermitian, A† = A); naive (one link field)
//!   or improved (fat and long links), phases and time boundary folded into the links.
//! * Möbius domain wall: the asymmetric M̂ = M5 − ¼ H_pq M_φ M5⁻¹ H_qp M_φ on 5D vectors
//!   ([`crate::operator::mobius::DeviceEvenOddMobius`], the host
//!   [`crate::operator::mobius::EvenOddMobius`]); the full operator from its blocks.
//!
//! M†M is the trait's default (M, then M†, through a temporary). The kernels read and
//! write the vectors' own storage format: f64 and f32 compute in that precision; the
//! narrow formats (fixed16, f16) are decoded inline on load, computed in f32 and encoded
//! on store (one f32 norm per site for fixed point), so a narrow operator moves half the
//! bytes of an f32 one; packed20 (computed in f32, links f32) and packed30 (computed in
//! f64, links f64) spinors likewise, with 2/3 and 1/2 of the spinor bytes of f32 and f64. Wilson and clover links are stored in the same format (SU(3)
//! entries lie in [−1, 1], which fixed point holds exactly); staggered fat and long
//! links, whose entries are not bounded by 1, stay f32 for the narrow formats.

use super::context::DeviceContext;
use super::precision::DevicePrecision;
use super::vector::DeviceVector;
use crate::device::{DeviceError, DeviceField};
use crate::distributed::device::RankDistribution;
use crate::operator::cpu::StaggeredLinks;
use crate::operator::device::{DeviceRun, HopKernels, OperatorError};
use crate::operator::even_odd::Xpay;
use crate::operator::mobius::{
    ComplementPlan, DeviceEvenOddMobius, DistributedEvenOddMobius, DistributedMobiusBlocks,
    MobiusParams,
};
use crate::operator::{DeviceEvenOddClover, DeviceEvenOddHop, EvenOddBlocks, Schur};
use crate::solver::{LinearOperator, SolverError};
use qdsl_core::dsl::fused5d::M5invMode;
use qdsl_core::dsl::storage::divide_by_global_scale;
use qdsl_core::dsl::variant::{LinkScale, Recon, Slices, StorageFormat, TimeBoundary, Variant};
use qdsl_core::field::{CloverField, GaugeField};
use qdsl_core::format::{Compression, LinkFormat};
use qdsl_core::lattice::{Lattice, Parity};
use std::marker::PhantomData;
use std::sync::Arc;

/// The generic [`Schur`] operator of one action's device blocks (boxed: each holds many
/// kernels).
#[derive(Debug)]
enum Kernels {
    /// Wilson, staggered: hop blocks.
    Hop(Box<DeviceEvenOddHop>),
    /// Clover, twisted mass/clover.
    Clover(Box<DeviceEvenOddClover>),
    /// Möbius domain wall (5D vectors).
    Mobius(Box<DeviceEvenOddMobius>),
    /// Möbius domain wall on one rank of a decomposed lattice.
    DistributedMobius(Box<DistributedEvenOddMobius>),
}

/// An even-odd operator M̂ = D_pp − D_pq D_qq⁻¹ D_qp (staggered: A = 4m² − D_pq D_qp),
/// the [`Schur`] of device blocks, bound to a device context, on device vectors of
/// precision `P` (see the module doc).
#[derive(Debug)]
pub struct DeviceOperator<P> {
    ctx: Arc<DeviceContext>,
    kernels: Kernels,
    precision: PhantomData<P>,
}

/// The kernels' spinor storage format for vectors of `P`: the vectors' own.
fn kernel_format<P: DevicePrecision>() -> Result<StorageFormat, OperatorError> {
    StorageFormat::SPINOR
        .into_iter()
        .find(|f| f.fermion_format() == P::FORMAT)
        .ok_or_else(|| OperatorError::Field {
            kernel: "device operator".into(),
            field: "vector format".into(),
            expected: "a storage format the stencil kernels generate".into(),
            found: P::FORMAT.name().into(),
        })
}

/// The link storage beside spinors in `spinor`: the same format where links are SU(3)
/// (`unitary`), else f64 for f64 and f32 for everything narrower; the compute type
/// beside the spinor-only packed formats (f32 for packed20, f64 for packed30).
fn link_format(spinor: StorageFormat, unitary: bool) -> StorageFormat {
    match spinor {
        StorageFormat::F64 | StorageFormat::F32 => spinor,
        _ if spinor.spinor_only() => spinor.compute(),
        _ if unitary => spinor,
        _ => StorageFormat::F32,
    }
}

/// The formats of the Wilson-family kernels for vectors of `P`: spinors and SU(3) links
/// in the vectors' format, recon 18, the time `boundary` applied by the kernels.
fn wilson_variant<P: DevicePrecision>(boundary: TimeBoundary) -> Result<Variant, OperatorError> {
    let format = kernel_format::<P>()?;
    Ok(Variant {
        spinor: format,
        gauge: link_format(format, true),
        recon: Recon::R18,
        boundary,
        ..Variant::default()
    })
}

/// How the kernels of an operator on `sources` right-hand sides map them onto threads:
/// grid rows for one source (the kernels of a 4D solve, unchanged), the slices inside
/// the block for several (the links read once for all sources).
pub fn slices_for(sources: usize) -> Slices {
    if sources > 1 {
        Slices::InBlock
    } else {
        Slices::Grid
    }
}

/// Uploads links in `format`, recon 18.
fn upload_links(
    ctx: &DeviceContext,
    links: &GaugeField<f64>,
    format: StorageFormat,
) -> Result<DeviceField, DeviceError> {
    DeviceField::from_gauge(
        ctx.gpu(),
        links,
        LinkFormat::new(format.link_storage(), Compression::Full),
    )
}

/// [`upload_links`] of the Wilson links while, on another thread, the Wilson hop kernels
/// of `variant` on `parity` are compiled and loaded (their compilation would otherwise
/// wait for the link conversion's own kernel), so that building the operator finds them
/// loaded.
fn upload_wilson_links(
    ctx: &DeviceContext,
    gauge: &GaugeField<f64>,
    variant: &Variant,
    parity: Parity,
) -> Result<DeviceField, OperatorError> {
    std::thread::scope(|scope| {
        let hops = scope.spawn(|| {
            HopKernels::prebuild::<qdsl_kernels::WilsonHop>(ctx.gpu(), variant, parity, true)
        });
        let links = upload_links(ctx, gauge, variant.gauge);
        hops.join().map_err(|_| DeviceError::Driver {
            what: "the thread building the Wilson hop kernels".into(),
            message: "panicked".into(),
        })??;
        Ok(links?)
    })
}

impl<P: DevicePrecision> DeviceOperator<P> {
    /// The bytes this rank sends per application of M̂ on a decomposed lattice: the faces
    /// of its two hops (Möbius: of the Ls slices); 0 on one GPU.
    pub fn face_bytes_per_apply(&self) -> usize {
        let per_hop = match &self.kernels {
            Kernels::Hop(k) => k.blocks().face_bytes(),
            Kernels::Clover(k) => k.blocks().face_bytes(),
            Kernels::Mobius(_) => 0,
            Kernels::DistributedMobius(k) => k.blocks().hop_block().face_bytes(),
        };
        2 * per_hop
    }

    fn with_kernels(ctx: &Arc<DeviceContext>, kernels: Kernels) -> Self {
        Self {
            ctx: Arc::clone(ctx),
            kernels,
            precision: PhantomData,
        }
    }

    /// The operator of any device hop blocks (e.g. a user-defined stencil's
    /// [`crate::operator::DeviceHopBlocks`]) on vectors of `P` (the blocks' spinor format
    /// must be `P`'s).
    pub fn of_hops(ctx: &Arc<DeviceContext>, op: DeviceEvenOddHop) -> Self {
        Self::with_kernels(ctx, Kernels::Hop(Box::new(op)))
    }

    /// Even-odd Wilson M̂ = 1 − κ² H_pq H_qp on `parity` with thin links `gauge`
    /// (recon 18) and the time `boundary` applied by the kernels.
    pub fn wilson(
        ctx: &Arc<DeviceContext>,
        gauge: &GaugeField<f64>,
        kappa: f64,
        parity: Parity,
        boundary: TimeBoundary,
    ) -> Result<Self, OperatorError> {
        Self::wilson_on_sources(ctx, gauge, kappa, parity, boundary, 1)
    }

    /// [`Self::wilson`] on vectors of `sources` right-hand sides (their slices; the
    /// multi-RHS hop kernels, [`slices_for`]).
    pub fn wilson_on_sources(
        ctx: &Arc<DeviceContext>,
        gauge: &GaugeField<f64>,
        kappa: f64,
        parity: Parity,
        boundary: TimeBoundary,
        sources: usize,
    ) -> Result<Self, OperatorError> {
        let variant = Variant {
            slices: slices_for(sources),
            ..wilson_variant::<P>(boundary)?
        };
        let lattice = *gauge.lattice();
        let links = upload_wilson_links(ctx, gauge, &variant, parity)?;
        let k = Schur::wilson(ctx.gpu(), links, lattice, kappa, parity, &variant)?
            .with_sources(sources);
        Ok(Self::with_kernels(ctx, Kernels::Hop(Box::new(k))))
    }

    /// Even-odd Wilson-clover M̂ = D_pp − ¼ H_pq D_qq⁻¹ H_qp, D = A + iμγ5, on `parity`
    /// with thin links `gauge` (recon 18), the full-lattice clover field `clover` (A in
    /// mass normalisation, [`qdsl_core::gauge::clover_field`]), the twist `mu` (0: plain
    /// clover) and the time `boundary` applied by the kernels. D_qq⁻¹ is computed on the
    /// host in f64; an error if D_qq is singular.
    pub fn clover(
        ctx: &Arc<DeviceContext>,
        gauge: &GaugeField<f64>,
        clover: &CloverField<f64>,
        mu: f64,
        parity: Parity,
        boundary: TimeBoundary,
    ) -> Result<Self, OperatorError> {
        Self::clover_on_sources(ctx, gauge, clover, mu, parity, boundary, 1)
    }

    /// [`Self::clover`] on vectors of `sources` right-hand sides (their slices; the
    /// multi-RHS kernels, [`slices_for`]).
    pub fn clover_on_sources(
        ctx: &Arc<DeviceContext>,
        gauge: &GaugeField<f64>,
        clover: &CloverField<f64>,
        mu: f64,
        parity: Parity,
        boundary: TimeBoundary,
        sources: usize,
    ) -> Result<Self, OperatorError> {
        let variant = Variant {
            slices: slices_for(sources),
            ..wilson_variant::<P>(boundary)?
        };
        let links = upload_wilson_links(ctx, gauge, &variant, parity)?;
        let mut k = Schur::clover(ctx.gpu(), links, clover, mu, parity, &variant)?;
        if sources > 1 {
            k = k.with_sources(ctx.gpu(), sources)?;
        }
        Ok(Self::with_kernels(ctx, Kernels::Clover(Box::new(k))))
    }

    /// Staggered A = 4m² − D_pq D_qp on `parity` with `links` (phases and boundary
    /// folded in).
    pub fn staggered(
        ctx: &Arc<DeviceContext>,
        links: &StaggeredLinks<f64>,
        mass: f64,
        parity: Parity,
    ) -> Result<Self, OperatorError> {
        Self::staggered_on_sources(ctx, links, mass, parity, 1)
    }

    /// [`Self::staggered`] on vectors of `sources` right-hand sides (their slices; the
    /// multi-RHS hop kernels, [`slices_for`]).
    pub fn staggered_on_sources(
        ctx: &Arc<DeviceContext>,
        links: &StaggeredLinks<f64>,
        mass: f64,
        parity: Parity,
        sources: usize,
    ) -> Result<Self, OperatorError> {
        let spinor = kernel_format::<P>()?;
        let formats = Variant {
            spinor,
            gauge: link_format(spinor, false),
            slices: slices_for(sources),
            ..Variant::default()
        };
        let op = Self::staggered_in(ctx, links, mass, parity, &formats)?;
        Ok(match op.kernels {
            Kernels::Hop(k) => {
                Self::with_kernels(ctx, Kernels::Hop(Box::new(k.with_sources(sources))))
            }
            clover => Self::with_kernels(ctx, clover),
        })
    }

    /// [`Self::staggered`] with the links in the vectors' own fixed-point format (fixed16,
    /// fixed8) and a global scale per field, as QUDA stores fat links: each field U is
    /// uploaded as U/s, s = max |entry| (smeared links reach beyond 1), and the kernels
    /// decode s·q/Q. Vectors in a float format are refused (their links need no scale).
    pub fn staggered_fixed_links(
        ctx: &Arc<DeviceContext>,
        links: &StaggeredLinks<f64>,
        mass: f64,
        parity: Parity,
    ) -> Result<Self, OperatorError> {
        let spinor = kernel_format::<P>()?;
        let formats = Variant {
            spinor,
            gauge: spinor,
            link_scale: LinkScale::Global,
            ..Variant::default()
        };
        if let Some(reason) = formats.link_scale_conflict() {
            return Err(OperatorError::Field {
                kernel: "staggered operator".into(),
                field: "vector format".into(),
                expected: "fixed16 or fixed8 vectors (fixed-point links)".into(),
                found: reason,
            });
        }
        Self::staggered_in(ctx, links, mass, parity, &formats)
    }

    /// The asymmetric even-odd Möbius operator M̂ = M5 − ¼ H_pq M_φ M5⁻¹ H_qp M_φ on
    /// parity p ([`DeviceEvenOddMobius`]: QUDA's three fused kernels, M̂† in two) on 5D
    /// vectors of `P` (one source: Ls × V/2 sites), the links in the Wilson family's
    /// formats (recon 18), the time `boundary` applied by the hop, M5⁻¹ applied as
    /// `m5inv` says (the sweep; `mma_f16`, `mma_bf16` on the tensor cores for the
    /// iteration operator of a mixed solve: an error for f64 vectors, zMöbius or Ls > 16).
    pub fn mobius(
        ctx: &Arc<DeviceContext>,
        gauge: &GaugeField<f64>,
        params: MobiusParams,
        parity: Parity,
        boundary: TimeBoundary,
        m5inv: M5invMode,
    ) -> Result<Self, OperatorError> {
        let formats = wilson_variant::<P>(boundary)?;
        let k = DeviceEvenOddMobius::asymmetric_with_m5inv(
            ctx.gpu(),
            gauge,
            params,
            parity,
            &formats,
            ComplementPlan::Quda,
            m5inv,
        )?;
        Ok(Self::with_kernels(ctx, Kernels::Mobius(Box::new(k))))
    }

    /// The Möbius complement's blocks and launches, for an operator of [`Self::mobius`]
    /// (None for the other actions): what applies M̂ block by block with steps between
    /// the hops (MSPCG's Dirichlet cuts).
    pub fn mobius_complement(&self) -> Option<&DeviceEvenOddMobius> {
        match &self.kernels {
            Kernels::Mobius(k) => Some(k),
            _ => None,
        }
    }

    /// The context.
    pub fn context(&self) -> &Arc<DeviceContext> {
        &self.ctx
    }

    /// Möbius M̂ (as [`Self::mobius`]) on one rank of a decomposed lattice (see
    /// [`Self::wilson_distributed`]): the 5D vectors (Ls slices) live on the rank's
    /// extended lattice, the 4D hop is distributed (faces of Ls slices, spin-projected),
    /// the s-local pieces need no halo ([`DistributedMobiusBlocks`]).
    pub fn mobius_distributed(
        ctx: &Arc<DeviceContext>,
        rank: &RankDistribution,
        gauge: &GaugeField<f64>,
        params: MobiusParams,
        parity: Parity,
        boundary: TimeBoundary,
    ) -> Result<Self, OperatorError> {
        let formats = wilson_variant::<P>(boundary)?;
        let cx = DeviceRun::new(ctx.gpu(), ctx.tuner());
        let blocks =
            DistributedMobiusBlocks::new(cx, rank, gauge, params, parity, (&formats, boundary))?;
        Ok(Self::with_kernels(
            ctx,
            Kernels::DistributedMobius(Box::new(Schur::complement(blocks))),
        ))
    }

    /// The staggered operator with links in `formats` (globally scaled links uploaded as
    /// U/s with their scales).
    fn staggered_in(
        ctx: &Arc<DeviceContext>,
        links: &StaggeredLinks<f64>,
        mass: f64,
        parity: Parity,
        formats: &Variant,
    ) -> Result<Self, OperatorError> {
        let (host, lattice): (Vec<&GaugeField<f64>>, Lattice) = match links {
            StaggeredLinks::Naive(u) => (vec![u], *u.lattice()),
            StaggeredLinks::Improved { fat, long } => (vec![fat, long], *fat.lattice()),
        };
        let scaled = formats.gauge.codec().scales_links(formats.link_scale);
        let (mut device, mut scales) = (Vec::new(), Vec::new());
        for l in host {
            if scaled {
                let mut unit = l.clone();
                scales.push(divide_by_global_scale(&mut unit));
                device.push(upload_links(ctx, &unit, formats.gauge)?);
            } else {
                device.push(upload_links(ctx, l, formats.gauge)?);
            }
        }
        let k =
            Schur::staggered_scaled(ctx.gpu(), (device, scales), lattice, mass, parity, formats)?;
        Ok(Self::with_kernels(ctx, Kernels::Hop(Box::new(k))))
    }

    /// Wilson M̂ (as [`Self::wilson`]) on one rank of a decomposed lattice: `gauge` is
    /// the rank's part of the links on its extended lattice, halos filled
    /// ([`crate::distributed::fill_link_halos`]); every hop exchanges its input's faces
    /// through `rank`'s transport and launches the sub-box kernels. The vectors live on
    /// the extended lattice with zero halo sites; the context's global sum
    /// ([`DeviceContext::distributed`]) makes their reductions global.
    pub fn wilson_distributed(
        ctx: &Arc<DeviceContext>,
        rank: &RankDistribution,
        gauge: &GaugeField<f64>,
        kappa: f64,
        parity: Parity,
        boundary: TimeBoundary,
    ) -> Result<Self, OperatorError> {
        rank.expect_extended("links", gauge.lattice())?;
        let variant = rank.variant(wilson_variant::<P>(boundary)?, boundary);
        let lattice = *rank.ext.extended();
        let links = upload_links(ctx, gauge, variant.gauge)?;
        let d = rank.hop_distribution::<qdsl_kernels::WilsonHop>(
            ctx.gpu(),
            (24, 1),
            variant.spinor,
            boundary,
        )?;
        let k =
            Schur::wilson(ctx.gpu(), links, lattice, kappa, parity, &variant)?.with_distribution(d);
        Ok(Self::with_kernels(ctx, Kernels::Hop(Box::new(k))))
    }

    /// Wilson-clover M̂ (as [`Self::clover`]) on one rank of a decomposed lattice (see
    /// [`Self::wilson_distributed`]); `clover` is the rank's part of A on its extended
    /// lattice, a unit matrix on the halo sites (no interior site reads them; it keeps
    /// D_qq invertible there).
    pub fn clover_distributed(
        ctx: &Arc<DeviceContext>,
        rank: &RankDistribution,
        (gauge, clover): (&GaugeField<f64>, &CloverField<f64>),
        mu: f64,
        parity: Parity,
        boundary: TimeBoundary,
    ) -> Result<Self, OperatorError> {
        rank.expect_extended("links", gauge.lattice())?;
        rank.expect_extended("clover field", clover.lattice())?;
        let variant = rank.variant(wilson_variant::<P>(boundary)?, boundary);
        let links = upload_links(ctx, gauge, variant.gauge)?;
        let d = rank.hop_distribution::<qdsl_kernels::WilsonHop>(
            ctx.gpu(),
            (24, 1),
            variant.spinor,
            boundary,
        )?;
        let k = Schur::clover(ctx.gpu(), links, clover, mu, parity, &variant)?.with_distribution(d);
        Ok(Self::with_kernels(ctx, Kernels::Clover(Box::new(k))))
    }

    /// Staggered A (as [`Self::staggered`]) on one rank of a decomposed lattice (see
    /// [`Self::wilson_distributed`]); `links` are the rank's parts on its extended
    /// lattice (of halo depth 3 for improved links: the Naik term), halos filled, phases
    /// and boundary folded in (the faces are periodic).
    pub fn staggered_distributed(
        ctx: &Arc<DeviceContext>,
        rank: &RankDistribution,
        links: &StaggeredLinks<f64>,
        mass: f64,
        parity: Parity,
    ) -> Result<Self, OperatorError> {
        let (host, needed): (Vec<&GaugeField<f64>>, usize) = match links {
            StaggeredLinks::Naive(u) => (vec![u], 1),
            StaggeredLinks::Improved { fat, long } => (vec![fat, long], 3),
        };
        if rank.ext.depth() < needed {
            return Err(OperatorError::Field {
                kernel: "distributed staggered operator".into(),
                field: "halo depth".into(),
                expected: format!("at least {needed} (the longest hop)"),
                found: rank.ext.depth().to_string(),
            });
        }
        for l in &host {
            rank.expect_extended("links", l.lattice())?;
        }
        let spinor = kernel_format::<P>()?;
        let periodic = TimeBoundary::Periodic;
        let formats = rank.variant(
            Variant {
                spinor,
                gauge: link_format(spinor, false),
                ..Variant::default()
            },
            periodic,
        );
        let device = host
            .into_iter()
            .map(|l| upload_links(ctx, l, formats.gauge))
            .collect::<Result<Vec<_>, _>>()?;
        let lattice = *rank.ext.extended();
        let d = rank.hop_distribution::<qdsl_kernels::ImprovedStaggeredHop>(
            ctx.gpu(),
            (6, 1),
            spinor,
            periodic,
        )?;
        let k = Schur::staggered(ctx.gpu(), device, lattice, mass, parity, &formats)?
            .with_distribution(d);
        Ok(Self::with_kernels(ctx, Kernels::Hop(Box::new(k))))
    }

    /// out ← M in (dagger: M† in), in the vectors' storage format.
    fn run(
        &self,
        out: &mut DeviceVector<P>,
        input: &DeviceVector<P>,
        dagger: bool,
    ) -> Result<(), OperatorError> {
        let cx = DeviceRun::new(self.ctx.gpu(), self.ctx.tuner());
        let (o, i) = (out.field_mut()?, input.field()?);
        match &self.kernels {
            Kernels::Hop(k) => k.apply_in(cx, o, i, dagger),
            Kernels::Clover(k) => k.apply_in(cx, o, i, dagger),
            Kernels::Mobius(k) => k.apply_in(cx, o, i, dagger),
            Kernels::DistributedMobius(k) => k.apply_in(cx, o, i, dagger),
        }
    }
}

/// The row r of the full clover operator with the blocks of the complement on r:
/// out_r = D_rr ψ_r − ½ H_rs ψ_s (dagger: D†_rr, H†).
fn clover_row(
    k: &DeviceEvenOddClover,
    cx: DeviceRun<'_>,
    out: &mut DeviceField,
    psi: (&DeviceField, &DeviceField),
    dagger: bool,
) -> Result<(), OperatorError> {
    let b = k.blocks();
    let r = b.parity();
    let mut d_psi = b.zeros(cx, r)?;
    b.apply_diagonal(cx, r, &mut d_psi, psi.0, dagger)?;
    let xpay = Xpay {
        a: 1.0,
        x: &d_psi,
        b: b.hop_coefficient(dagger),
    };
    b.hop(cx, r, out, psi.1, dagger, Some(xpay))
}

impl<P: DevicePrecision> DeviceOperator<P> {
    /// The full operator on both parities, (out_p, out_q) = M (ψ_p, ψ_q) (dagger: M†),
    /// p this operator's parity, in the vectors' storage format:
    ///
    /// * Wilson, M = 1 − κH, and staggered, M = 2m + D: the complement's own blocks
    ///   ([`Schur::apply_full_in`]); `other` is not needed.
    /// * Clover and twisted mass, M = A + iμγ5 − ½H: a complement on p holds D_pp and
    ///   D_qq⁻¹ only, so row q takes the blocks of `other`, the same operator on q:
    ///   out_r = D_rr ψ_r − ½ H_rs ψ_s with the blocks of parity r. Without `other` (or
    ///   with one on the same parity) it is an error.
    pub fn apply_full(
        &self,
        other: Option<&Self>,
        out: (&mut DeviceVector<P>, &mut DeviceVector<P>),
        psi: (&DeviceVector<P>, &DeviceVector<P>),
        dagger: bool,
    ) -> Result<(), SolverError> {
        let cx = DeviceRun::new(self.ctx.gpu(), self.ctx.tuner());
        let field = |e: DeviceError| SolverError::operator(OperatorError::from(e));
        let (out_p, out_q) = (
            out.0.field_mut().map_err(field)?,
            out.1.field_mut().map_err(field)?,
        );
        let (psi_p, psi_q) = (psi.0.field().map_err(field)?, psi.1.field().map_err(field)?);
        let result = match (&self.kernels, other.map(|o| &o.kernels)) {
            (Kernels::Hop(k), _) => k.apply_full_in(cx, (out_p, out_q), (psi_p, psi_q), dagger),
            (Kernels::Mobius(k), _) => k.apply_full_in(cx, (out_p, out_q), (psi_p, psi_q), dagger),
            (Kernels::DistributedMobius(k), _) => {
                k.apply_full_in(cx, (out_p, out_q), (psi_p, psi_q), dagger)
            }
            (Kernels::Clover(k), Some(Kernels::Clover(q)))
                if q.blocks().parity() != k.blocks().parity() =>
            {
                clover_row(k, cx, out_p, (psi_p, psi_q), dagger)
                    .and_then(|()| clover_row(q, cx, out_q, (psi_q, psi_p), dagger))
            }
            (Kernels::Clover(_), _) => Err(OperatorError::Field {
                kernel: "device clover operator".into(),
                field: "other".into(),
                expected: "the same clover operator on the other parity (its D_qq)".into(),
                found: "none, or one on the same parity".into(),
            }),
        };
        result.map_err(SolverError::operator)
    }
}

impl<P: DevicePrecision> LinearOperator<DeviceVector<P>> for DeviceOperator<P> {
    fn apply(&self, out: &mut DeviceVector<P>, input: &DeviceVector<P>) -> Result<(), SolverError> {
        self.run(out, input, false).map_err(SolverError::operator)
    }

    /// M† (the staggered A is Hermitian: A itself).
    fn apply_dagger(
        &self,
        out: &mut DeviceVector<P>,
        input: &DeviceVector<P>,
    ) -> Result<(), SolverError> {
        self.run(out, input, true).map_err(SolverError::operator)
    }

    /// Wilson (V/2)(1320 + 1392), clover (V/2)(1320 + 1392 + 2 · 504) (twisted:
    /// (V/2)(1320 + 1392 + 3 · 504 + 2 · 48)), staggered (V/2)(f_hop + f_hop,xpay): the
    /// kernels' counts (the conversions of narrow formats are vector work, not counted).
    fn flops_per_apply(&self) -> u64 {
        match &self.kernels {
            Kernels::Hop(k) => k.flops_per_apply(),
            Kernels::Clover(k) => k.flops_per_apply(),
            Kernels::Mobius(k) => k.flops_per_apply(),
            Kernels::DistributedMobius(k) => k.flops_per_apply(),
        }
    }
}
