//! The even-odd blocks of hop operators M = d + h K on device fields
//! ([`DeviceHopBlocks`]: the Wilson and staggered hops, or any stencil), the hop kernels
//! they launch ([`HopKernels`], shared with the clover blocks), and the launch context
//! of device blocks ([`DeviceRun`]). The Schur complement on them is the generic
//! [`Schur`]: [`DeviceEvenOddHop`].

use crate::device::gpu::Build;
use crate::device::{DeviceError, DeviceField, DeviceLayout, Gpu};
use crate::distributed::device::DeviceHopDistribution;
use crate::operator::cpu::HopAdjoint;
use crate::operator::even_odd::{
    BlockFlops, Diagonal, EvenOddBlocks, Schur, SchurError, SchurForm, Xpay,
};
use crate::tune::Tuner;
use qdsl_core::dsl::variant::{OutputSites, StorageFormat};
use qdsl_core::dsl::{KernelInfo, Stencil, Variant};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_kernels::{ImprovedStaggeredHop, NaiveStaggeredHop, WilsonHop};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use super::*;

/// The hop variant of a device operator: parity, dagger, xpay and the given formats.
pub(super) fn device_variant(base: &Variant, sites: Parity, dagger: bool, xpay: bool) -> Variant {
    Variant {
        sites: OutputSites::Parity(sites),
        dagger,
        xpay,
        ..*base
    }
}

/// A zero spinor field of `reals` reals per site on `sites` sites in `format`.
pub fn device_spinor(
    gpu: &Gpu,
    format: StorageFormat,
    reals: usize,
    sites: usize,
) -> Result<DeviceField, DeviceError> {
    let f = crate::device::DeviceFormat::Fermion(format.fermion_format());
    let layout = DeviceLayout::new(f, reals, sites)?;
    DeviceField::zeros(gpu, layout)
}

/// What device blocks need to launch besides the fields: the GPU and the tuner.
#[derive(Clone, Copy, Debug)]
pub struct DeviceRun<'a> {
    /// The GPU (its stream queues every launch).
    pub gpu: &'a Gpu,
    /// The tuner of the launches.
    pub tuner: &'a Tuner,
}

impl<'a> DeviceRun<'a> {
    /// Launches on `gpu` tuned by `tuner`.
    pub fn new(gpu: &'a Gpu, tuner: &'a Tuner) -> Self {
        Self { gpu, tuner }
    }
}

/// Compiles one variant of a stencil.
type MakeKernel = fn(&Gpu, &Variant) -> Result<DeviceStencil, OperatorError>;

/// Generates one variant of a stencil (its source and interface).
type GenerateKernel =
    fn(&Variant) -> Result<qdsl_core::dsl::CompiledKernel, qdsl_core::dsl::DslError>;

/// The variants of one hop kernel an even-odd operator launches, by (output parity,
/// dagger, xpay): the four of M̂ (to q, to p with xpay; plain and dagger) compiled at
/// construction, the others (source preparation, reconstruction, the full operator) on
/// first use.
pub(crate) struct HopKernels {
    make: MakeKernel,
    generate: GenerateKernel,
    base: Variant,
    /// The parity of the Schur complement.
    pub(crate) parity: Parity,
    /// Whether the adjoint launches the dagger knob (else the plain kernels).
    dagger_knob: bool,
    built: Mutex<HashMap<(Parity, bool, bool), Arc<DeviceStencil>>>,
}

impl fmt::Debug for HopKernels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HopKernels")
            .field("base", &self.base)
            .field("parity", &self.parity)
            .finish()
    }
}

impl HopKernels {
    /// The kernels of stencil `S` in the formats of `base` for the Schur complement on
    /// `parity`.
    pub(crate) fn new<S: Stencil>(
        gpu: &Gpu,
        base: &Variant,
        parity: Parity,
        dagger_knob: bool,
    ) -> Result<Self, OperatorError> {
        let kernels = Self::unbuilt::<S>(base, parity, dagger_knob);
        kernels.preload(gpu)?;
        for dagger in [false, true] {
            kernels.get(gpu, parity.opposite(), dagger, false)?;
            kernels.get(gpu, parity, dagger, true)?;
        }
        Ok(kernels)
    }

    /// The kernels as [`Self::new`] describes them, none compiled yet.
    /// Whether the adjoint launches the dagger knob.
    pub(crate) fn dagger_knob(&self) -> bool {
        self.dagger_knob
    }

    fn unbuilt<S: Stencil>(base: &Variant, parity: Parity, dagger_knob: bool) -> Self {
        Self {
            make: DeviceStencil::of::<S>,
            generate: S::compiled,
            base: *base,
            parity,
            dagger_knob,
            built: Mutex::new(HashMap::new()),
        }
    }

    /// Compiles and loads (into `gpu`'s module map) the kernels [`Self::new`] would
    /// build for the same arguments, so that a later [`Self::new`] finds them loaded:
    /// for compiling while the links are still being converted and uploaded.
    pub(crate) fn prebuild<S: Stencil>(
        gpu: &Gpu,
        base: &Variant,
        parity: Parity,
        dagger_knob: bool,
    ) -> Result<(), OperatorError> {
        Self::unbuilt::<S>(base, parity, dagger_knob).preload(gpu)
    }

    /// Compiles and loads the first builds of M̂'s four kernels (to q, to p with xpay;
    /// plain and dagger) in parallel ([`Gpu::preload`]), so that making them is lookups.
    fn preload(&self, gpu: &Gpu) -> Result<(), OperatorError> {
        let q = self.parity.opposite();
        let daggers: &[bool] = if self.dagger_knob {
            &[false, true]
        } else {
            &[false]
        };
        let mut kernels = Vec::new();
        for &dagger in daggers {
            for (r, xpay) in [(q, false), (self.parity, true)] {
                kernels.push((self.generate)(&device_variant(
                    &self.base, r, dagger, xpay,
                ))?);
            }
        }
        let builds: Vec<_> = kernels
            .iter()
            .map(|k| (k, DeviceStencil::initial_build(k)))
            .collect();
        let requests: Vec<Build<'_>> = builds
            .iter()
            .map(|(k, (extra, cap))| Build {
                name: &k.name,
                source: &k.source,
                extra,
                cap: *cap,
            })
            .collect();
        Ok(gpu.preload(&requests)?)
    }

    /// The kernel writing parity `r` (dagger: the adjoint's, xpay: out = a·x + b·K ψ).
    pub(crate) fn get(
        &self,
        gpu: &Gpu,
        r: Parity,
        dagger: bool,
        xpay: bool,
    ) -> Result<Arc<DeviceStencil>, OperatorError> {
        let dagger = dagger && self.dagger_knob;
        let mut built = self.built.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = built.get(&(r, dagger, xpay)) {
            return Ok(Arc::clone(k));
        }
        let k = Arc::new((self.make)(
            gpu,
            &device_variant(&self.base, r, dagger, xpay),
        )?);
        built.insert((r, dagger, xpay), Arc::clone(&k));
        Ok(k)
    }

    /// The KernelInfo of M̂'s hops: to q, and to p with xpay (plain).
    pub(crate) fn infos(&self) -> [Option<KernelInfo>; 2] {
        let built = self.built.lock().unwrap_or_else(|p| p.into_inner());
        let q = self.parity.opposite();
        [(q, false), (self.parity, true)]
            .map(|(r, xpay)| built.get(&(r, false, xpay)).map(|k| k.info().clone()))
    }

    /// Flops per site of M̂'s hops (to q; to p with xpay).
    pub(crate) fn flops(&self) -> (usize, usize) {
        let [q, p] = self.infos().map(|i| i.map_or(0, |i| i.flops_per_site));
        (q, p)
    }

    /// out_r = K ψ (or a·x + b·K ψ) with the extra inputs `links` after ψ, the global
    /// scales of globally scaled links in `link_scales` (empty for the others), over the
    /// sites of `site_box` only for a [`qdsl_core::dsl::variant::Region::SubBox`] base
    /// variant (a distributed operator's launches).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn hop(
        &self,
        cx: DeviceRun<'_>,
        lattice: &Lattice,
        (links, link_scales): (&[&DeviceField], &[f64]),
        r: Parity,
        out: &mut DeviceField,
        psi: &DeviceField,
        dagger: bool,
        xpay: Option<Xpay<'_, DeviceField>>,
        site_box: Option<&BoxLaunch<'_>>,
    ) -> Result<(), OperatorError> {
        let kernel = self.get(cx.gpu, r, dagger, xpay.is_some())?;
        let mut inputs: Vec<&DeviceField> = vec![psi];
        inputs.extend_from_slice(links);
        let xpay = xpay.map(|x| DeviceXpay {
            a: x.a,
            x: x.x,
            b: x.b,
        });
        let mut args = StencilArgs::new(out, &inputs)
            .xpay(xpay.as_ref())
            .link_scales(link_scales);
        if let Some(b) = site_box {
            args = args.within(b);
        }
        kernel.run(cx.gpu, cx.tuner, lattice, args)
    }
}

/// The even-odd blocks of M = d + h K on device fields: a scalar diagonal d and the hop
/// kernel K of any stencil with its links (Wilson: d = 1, h = −κ; staggered: d = 2m,
/// h = 1), the device counterpart of [`crate::operator::HopBlocks`].
#[derive(Debug)]
pub struct DeviceHopBlocks {
    kernels: HopKernels,
    links: Vec<DeviceField>,
    /// The global scale of each link field stored with one (`link_scale = global`),
    /// in declaration order; empty otherwise.
    link_scales: Vec<f64>,
    lattice: Lattice,
    diagonal: f64,
    coefficient: f64,
    adjoint: HopAdjoint,
    spinor: StorageFormat,
    reals: usize,
    /// Right-hand sides: the fields hold this many slices (1: 4D fields).
    sources: usize,
    /// On a decomposed lattice: the halo exchange and the sub-box launches of each hop
    /// (the lattice is then the rank's extended lattice).
    distribution: Option<Arc<DeviceHopDistribution>>,
}

impl DeviceHopBlocks {
    /// The bytes this rank sends per hop on a decomposed lattice (its faces); 0 on one
    /// GPU.
    pub fn face_bytes(&self) -> usize {
        face_bytes(self.distribution.as_deref())
    }

    /// The blocks of M = d + h K for the stencil `S` reading ψ then `links`, the spinor
    /// and link storage, compression and boundary of `formats`, on `parity`.
    #[allow(clippy::too_many_arguments)]
    pub fn of<S: Stencil>(
        gpu: &Gpu,
        links: Vec<DeviceField>,
        lattice: Lattice,
        formats: &Variant,
        parity: Parity,
        d: f64,
        h: f64,
        adjoint: HopAdjoint,
    ) -> Result<Self, OperatorError> {
        let (_, reals) = field_uses(&S::ir())?;
        let knob = adjoint == HopAdjoint::DaggerKnob;
        Ok(Self {
            kernels: HopKernels::new::<S>(gpu, formats, parity, knob)?,
            links,
            link_scales: Vec::new(),
            lattice,
            diagonal: d,
            coefficient: h,
            adjoint,
            spinor: formats.spinor,
            reals,
            sources: 1,
            distribution: None,
        })
    }

    /// The same blocks on fields of `n` right-hand sides (5D fields of n slices; build
    /// the blocks with `formats.slices` = [`qdsl_core::dsl::variant::Slices::InBlock`] so
    /// that the hop kernels
    /// read the links once for all sources).
    pub fn with_sources(self, n: usize) -> Self {
        Self {
            sources: n.max(1),
            ..self
        }
    }

    /// The blocks of one rank of a decomposed lattice: every hop exchanges its input's
    /// halos and launches its sub-box kernels through `distribution` (the blocks must
    /// have been built on the rank's extended lattice with a
    /// [`qdsl_core::dsl::variant::Region::SubBox`] base variant).
    pub fn with_distribution(self, distribution: Arc<DeviceHopDistribution>) -> Self {
        Self {
            distribution: Some(distribution),
            ..self
        }
    }

    /// The blocks with the global scales s of their links (`formats.link_scale` global:
    /// the link fields hold U/s, [`qdsl_core::dsl::storage::divide_by_global_scale`]).
    pub fn with_link_scales(self, link_scales: Vec<f64>) -> Self {
        Self {
            link_scales,
            ..self
        }
    }
}

impl EvenOddBlocks for DeviceHopBlocks {
    type Field = DeviceField;
    type Context<'c> = DeviceRun<'c>;
    type Error = OperatorError;

    fn parity(&self) -> Parity {
        self.kernels.parity
    }

    fn zeros(&self, cx: DeviceRun<'_>, _: Parity) -> Result<DeviceField, OperatorError> {
        let sites = self.sources * self.lattice.half_volume();
        Ok(device_spinor(cx.gpu, self.spinor, self.reals, sites)?)
    }

    /// The kernels check every field they are given.
    fn expect_field(&self, _: Parity, _: &DeviceField) -> Result<(), OperatorError> {
        Ok(())
    }

    fn hop_coefficient(&self, dagger: bool) -> f64 {
        match self.adjoint {
            HopAdjoint::AntiHermitian if dagger => -self.coefficient,
            _ => self.coefficient,
        }
    }

    fn hop(
        &self,
        cx: DeviceRun<'_>,
        r: Parity,
        out: &mut DeviceField,
        psi: &DeviceField,
        dagger: bool,
        xpay: Option<Xpay<'_, DeviceField>>,
    ) -> Result<(), OperatorError> {
        let links: Vec<&DeviceField> = self.links.iter().collect();
        let links = (links.as_slice(), self.link_scales.as_slice());
        match &self.distribution {
            None => self
                .kernels
                .hop(cx, &self.lattice, links, r, out, psi, dagger, xpay, None),
            // The faces carry the projectors of the kernel that runs: the dagger knob's
            // only where the adjoint launches it.
            Some(d) => d.apply(
                cx,
                r,
                psi,
                dagger && self.kernels.dagger_knob(),
                d.launch_key(cx.gpu, out, xpay, dagger),
                |b, psi| {
                    self.kernels
                        .hop(cx, &self.lattice, links, r, out, psi, dagger, xpay, Some(b))
                },
            ),
        }
    }

    fn diagonal(&self) -> Diagonal {
        Diagonal::Scalar(self.diagonal)
    }

    /// Not launched: the scalar diagonal is folded into the hops' xpay.
    fn apply_diagonal(
        &self,
        _: DeviceRun<'_>,
        _: Parity,
        _: &mut DeviceField,
        _: &DeviceField,
        _: bool,
    ) -> Result<(), OperatorError> {
        Err(SchurError::MissingBlock("a kernel for the scalar diagonal").into())
    }

    /// Not launched: the scalar diagonal is folded into the hops' xpay.
    fn apply_diagonal_inverse(
        &self,
        _: DeviceRun<'_>,
        _: Parity,
        _: &mut DeviceField,
        _: &DeviceField,
        _: bool,
    ) -> Result<(), OperatorError> {
        Err(SchurError::MissingBlock("a kernel for the scalar diagonal").into())
    }

    /// V/2 per source.
    fn sites(&self) -> usize {
        self.sources * self.lattice.half_volume()
    }

    fn flops_per_site(&self) -> BlockFlops {
        let (hop, hop_xpay) = self.kernels.flops();
        BlockFlops {
            hop,
            hop_xpay,
            ..BlockFlops::default()
        }
    }
}

/// The even-odd operator of hop blocks on device fields ([`DeviceHopBlocks`]): Wilson
/// M̂ = 1 − κ² H_pq H_qp, MILC's staggered A = 4m² − D_pq D_qp, or that of any stencil.
pub type DeviceEvenOddHop = Schur<DeviceHopBlocks>;

impl Schur<DeviceHopBlocks> {
    /// The same operator on fields of `n` right-hand sides
    /// ([`DeviceHopBlocks::with_sources`]).
    pub fn with_sources(self, n: usize) -> Self {
        let (blocks, form) = self.into_parts();
        Schur::with_form(blocks.with_sources(n), form)
    }

    /// The same operator on one rank of a decomposed lattice
    /// ([`DeviceHopBlocks::with_distribution`]).
    pub fn with_distribution(self, distribution: Arc<DeviceHopDistribution>) -> Self {
        let (blocks, form) = self.into_parts();
        Schur::with_form(blocks.with_distribution(distribution), form)
    }

    /// Wilson M̂ = 1 − κ² H_pq H_qp (see [`crate::operator::EvenOddWilson`]) on `parity`
    /// with the uploaded links `gauge`; `formats` gives the storage formats, the
    /// compression and the time boundary (its sites, dagger and xpay are set per hop).
    pub fn wilson(
        gpu: &Gpu,
        gauge: DeviceField,
        lattice: Lattice,
        kappa: f64,
        parity: Parity,
        formats: &Variant,
    ) -> Result<Self, OperatorError> {
        let blocks = DeviceHopBlocks::of::<WilsonHop>(
            gpu,
            vec![gauge],
            lattice,
            formats,
            parity,
            1.0,
            -kappa,
            HopAdjoint::DaggerKnob,
        )?;
        Ok(Schur::complement(blocks))
    }

    /// Staggered A = 4m² − D_pq D_qp (see [`crate::operator::EvenOddStaggered`]) on
    /// `parity`: `links` = `[U]` (naive) or `[fat, long]` (improved), recon 18, the spinor
    /// and gauge storage formats taken from `formats`.
    pub fn staggered(
        gpu: &Gpu,
        links: Vec<DeviceField>,
        lattice: Lattice,
        mass: f64,
        parity: Parity,
        formats: &Variant,
    ) -> Result<Self, OperatorError> {
        Self::staggered_scaled(gpu, (links, Vec::new()), lattice, mass, parity, formats)
    }

    /// [`Self::staggered`] with fixed-point links stored with a global scale
    /// (`formats.link_scale` global): `links` holds each field's U/s
    /// ([`qdsl_core::dsl::storage::divide_by_global_scale`]) and its scale s.
    pub fn staggered_scaled(
        gpu: &Gpu,
        (links, link_scales): (Vec<DeviceField>, Vec<f64>),
        lattice: Lattice,
        mass: f64,
        parity: Parity,
        formats: &Variant,
    ) -> Result<Self, OperatorError> {
        let base = Variant {
            spinor: formats.spinor,
            gauge: formats.gauge,
            link_scale: formats.link_scale,
            slices: formats.slices,
            region: formats.region,
            ..Variant::default()
        };
        let (d, adjoint) = (2.0 * mass, HopAdjoint::AntiHermitian);
        let blocks = match links.len() {
            1 => DeviceHopBlocks::of::<NaiveStaggeredHop>(
                gpu, links, lattice, &base, parity, d, 1.0, adjoint,
            )?,
            2 => DeviceHopBlocks::of::<ImprovedStaggeredHop>(
                gpu, links, lattice, &base, parity, d, 1.0, adjoint,
            )?,
            n => {
                return Err(OperatorError::Field {
                    kernel: "staggered operator".into(),
                    field: "links".into(),
                    expected: "1 (naive) or 2 (fat, long) gauge fields".into(),
                    found: n.to_string(),
                })
            }
        };
        // Hop blocks have a scalar diagonal: the normal form exists.
        Ok(Schur::with_form(
            blocks.with_link_scales(link_scales),
            SchurForm::TimesDqq,
        ))
    }
}

/// The bytes a rank sends per hop through `distribution` (0 without one: one GPU).
pub(crate) fn face_bytes(distribution: Option<&DeviceHopDistribution>) -> usize {
    distribution.map_or(0, |d| d.hop().face_bytes())
}
