//! [`DeviceCloverBlocks`]: the even-odd blocks of the Wilson-clover operator, with an
//! optional twisted mass, on device fields, and [`DeviceEvenOddClover`], their generic
//! [`Schur`] complement — the operator of [`crate::operator::EvenOddClover`], built
//! from the generated kernels.
//!
//! On parity p (q the other), with D = A + iμγ5 (A the clover field in mass
//! normalisation, A = (m + 4) + (c_sw/4) Σ σ_μν F_μν) and H the Wilson hop,
//!
//! M̂ ψ = D_pp ψ − ¼ H_pq D_qq⁻¹ H_qp ψ,
//! M̂† ψ = D†_pp ψ − ¼ (H_qp)† D†_qq⁻¹ (H_pq)† ψ,  D† = A − iμγ5.
//!
//! One application is a sequence of launches (all on the GPU's stream):
//!
//! 1. h = H^(†)_qp ψ — `wilson_hop` to q;
//! 2. D_qq⁻¹ h: μ = 0: A_qq⁻¹ h — `clover_apply` with the inverse field; μ ≠ 0:
//!    (A + iμγ5)⁻¹ = B − iμγ5 C (B = A(A² + μ²)⁻¹, C = (A² + μ²)⁻¹), so B h and C h —
//!    two `clover_apply` — then B h ∓ μ·iγ5 (C h) — `twisted_mass_twist` with xpay
//!    (x = B h, a = 1, b = ∓μ; + for the dagger);
//! 3. D_pp ψ: A_pp ψ — `clover_apply`; μ ≠ 0: A_pp ψ ± μ·iγ5 ψ — `twisted_mass_twist`
//!    with xpay (x = A_pp ψ, a = 1, b = ±μ; − for the dagger);
//! 4. out = D_pp ψ − ¼ H^(†)_pq (D_qq⁻¹ h) — `wilson_hop` to p with xpay (a = 1, b = −¼).
//!
//! The xpay knobs fuse the additions into the hop and the twist; the fused
//! `wilson_clover` spec (A ψ − ½ H ψ in one kernel) reads ψ at both parities, so it fits
//! the unpreconditioned operator, not M̂.
//!
//! Plain twisted mass without a clover term is c_sw = 0 (A = (m + 4)·1), as on the CPU.
//! Flops per application, counted as the CPU operator counts them:
//! (V/2)(f_hop + f_hop,xpay + 2 · 504) for μ = 0, (V/2)(f_hop + f_hop,xpay + 3 · 504 +
//! 2 · 48) for μ ≠ 0 (the hops' KernelInfo, [`CLOVER_APPLY_FLOPS`] per clover product,
//! [`TWIST_FLOPS`] per twist).
//!
//! The clover fields (A_pp, and A_qq⁻¹ or B and C on q) are inverted on the host in f64
//! and uploaded as 72 reals per site in the kernels' clover format ([`clover_format`]:
//! f64 beside f64 spinors, else f32); the intermediates are stored in the spinor format.

use super::even_odd::{device_spinor, device_variant, DeviceRun, HopKernels};
use super::*;
use crate::device::{DeviceField, Gpu};
use crate::distributed::device::DeviceHopDistribution;
use crate::operator::clover::{CLOVER_APPLY_FLOPS, TWIST_FLOPS};
use crate::operator::even_odd::{BlockFlops, Diagonal, EvenOddBlocks, Schur, SchurError, Xpay};
use crate::tune::Tuner;
use qdsl_core::dsl::info::ByteModels;
use qdsl_core::dsl::variant::{Region, StorageFormat};
use qdsl_core::dsl::Variant;
use qdsl_core::field::{CloverField, SiteSubset, CLOVER_SITE_REALS};
use qdsl_core::gauge::{invert_clover, invert_twisted_clover, CloverError, TwistedCloverInverse};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_kernels::{CloverApply, TwistedMassTwist, WilsonHop};
use std::sync::{Arc, Mutex, MutexGuard};

/// The name the operator's own errors give as the kernel.
const NAME: &str = "clover operator";

/// D_qq⁻¹ on the device.
#[derive(Debug)]
enum DeviceInverse {
    /// μ = 0: A_qq⁻¹.
    Clover(DeviceField),
    /// μ ≠ 0: B and C of D_qq⁻¹ = B − iμγ5 C.
    Twisted { b: DeviceField, c: DeviceField },
}

/// The site-local kernels on one parity: A ψ (`clover_apply`) and a x + b·iγ5 ψ
/// (`twisted_mass_twist` with xpay; compiled only for μ ≠ 0).
#[derive(Debug)]
struct SiteLocal {
    clover: DeviceStencil,
    twist: Option<DeviceStencil>,
}

impl SiteLocal {
    fn new(
        gpu: &Gpu,
        base: &Variant,
        parity: Parity,
        twisted: bool,
    ) -> Result<Self, OperatorError> {
        // Site-local: every site of the parity, also on a decomposed lattice's extended
        // one (the base variant's sub-box region is the hops').
        let local = |xpay| Variant {
            region: Region::Whole,
            ..device_variant(base, parity, false, xpay)
        };
        let clover = DeviceStencil::of::<CloverApply>(gpu, &local(false))?;
        let twist = if twisted {
            Some(DeviceStencil::of::<TwistedMassTwist>(gpu, &local(true))?)
        } else {
            None
        };
        Ok(Self { clover, twist })
    }

    /// out = a·x + b·iγ5 ψ.
    #[allow(clippy::too_many_arguments)]
    fn twist(
        &self,
        gpu: &Gpu,
        tuner: &Tuner,
        lattice: &Lattice,
        out: &mut DeviceField,
        psi: &DeviceField,
        x: &DeviceField,
        b: f64,
    ) -> Result<(), OperatorError> {
        let twist = self.twist.as_ref().ok_or_else(|| OperatorError::Field {
            kernel: NAME.into(),
            field: "twist".into(),
            expected: "a twisted operator (μ ≠ 0)".into(),
            found: "μ = 0".into(),
        })?;
        let xpay = DeviceXpay { a: 1.0, x, b };
        twist.run(
            gpu,
            tuner,
            lattice,
            StencilArgs::new(out, &[psi]).xpay(Some(&xpay)),
        )
    }
}

/// Uploads a single-parity clover field in `variant`'s clover format.
fn upload_clover(
    gpu: &Gpu,
    a: &CloverField<f64>,
    variant: &Variant,
) -> Result<DeviceField, OperatorError> {
    let format = DeviceFormat::Fermion(clover_format(variant).fermion_format());
    let layout =
        DeviceLayout::new(format, CLOVER_SITE_REALS, a.sites()).map_err(DeviceError::from)?;
    Ok(DeviceField::upload(gpu, layout, a.data())?)
}

/// D_qq⁻¹ on the host (f64), before the upload.
#[derive(Debug)]
enum HostInverse {
    /// μ = 0: A_qq⁻¹.
    Clover(CloverField<f64>),
    /// μ ≠ 0: D_qq⁻¹ = B − iμγ5 C.
    Twisted(TwistedCloverInverse<f64>),
}

/// The site-local terms of M̂ on the host: A_pp and D_qq⁻¹.
#[derive(Debug)]
struct HostTerms {
    a_pp: CloverField<f64>,
    inverse: HostInverse,
}

impl HostTerms {
    /// A_pp and D_qq⁻¹ = (A_qq + iμγ5)⁻¹ from the full-lattice clover field `a`; an error
    /// naming the field if `a` is not on the full lattice, μ is not finite or D_qq is
    /// singular.
    fn new(a: &CloverField<f64>, mu: f64, parity: Parity) -> Result<Self, OperatorError> {
        let field_error = |field: &str, expected: &str, found: String| OperatorError::Field {
            kernel: NAME.into(),
            field: field.into(),
            expected: expected.into(),
            found,
        };
        if a.subset() != SiteSubset::Full {
            return Err(field_error(
                "clover",
                "a clover field on the full lattice",
                format!("{:?}", a.subset()),
            ));
        }
        if !mu.is_finite() {
            return Err(field_error("mu", "a finite twist", mu.to_string()));
        }
        let restrict = |p: Parity| {
            a.restrict(p).map_err(|e| {
                field_error(
                    "clover",
                    "a clover field on the full lattice",
                    e.to_string(),
                )
            })
        };
        let (a_pp, a_qq) = (restrict(parity)?, restrict(parity.opposite())?);
        let singular =
            |e: CloverError| field_error("clover", "an invertible A_qq + iμγ5", e.to_string());
        let inverse = if mu == 0.0 {
            HostInverse::Clover(invert_clover(&a_qq).map_err(singular)?)
        } else {
            HostInverse::Twisted(invert_twisted_clover(&a_qq, mu).map_err(singular)?)
        };
        Ok(Self { a_pp, inverse })
    }
}

/// The even-odd blocks of the Wilson-clover operator with twisted mass μ on device
/// fields (module docs): D_pp = A_pp + iμγ5, D_qq⁻¹ (uploaded), D_rs = −½ H_rs; the
/// device counterpart of [`crate::operator::CloverBlocks`].
#[derive(Debug)]
pub struct DeviceCloverBlocks {
    hops: HopKernels,
    /// Site-local kernels on p and on q.
    local_p: SiteLocal,
    local_q: SiteLocal,
    gauge: DeviceField,
    /// A_pp.
    clover: DeviceField,
    inverse: DeviceInverse,
    lattice: Lattice,
    mu: f64,
    spinor: StorageFormat,
    /// Two intermediates of the twisted terms (B ψ and C ψ; A ψ), μ ≠ 0 only.
    twisted: Option<Mutex<[DeviceField; 2]>>,
    /// Right-hand sides: the fields hold this many slices (1: 4D fields).
    sources: usize,
    /// On a decomposed lattice: the halo exchange and sub-box launches of each hop.
    distribution: Option<Arc<DeviceHopDistribution>>,
}

impl DeviceCloverBlocks {
    /// The blocks of one rank of a decomposed lattice (built on its extended lattice
    /// with a [`qdsl_core::dsl::variant::Region::SubBox`] base variant, the clover term
    /// of the halo sites a unit matrix): every hop exchanges its input's halos and
    /// launches its sub-box kernels through `distribution`; the site-local blocks run on
    /// every extended site (zero on the halo sites of the vectors).
    pub fn with_distribution(self, distribution: Arc<DeviceHopDistribution>) -> Self {
        Self {
            distribution: Some(distribution),
            ..self
        }
    }

    /// The blocks on `parity` with the uploaded links `gauge`, the full-lattice clover
    /// field `a` (e.g. [`qdsl_core::gauge::clover_field`]) and twist `mu` (0 for plain
    /// clover); `formats` gives the spinor and gauge storage, the compression and the
    /// time boundary. D_qq⁻¹ is computed here on the host in f64. An error if `a` is not
    /// on the full lattice or D_qq is singular.
    pub fn new(
        gpu: &Gpu,
        gauge: DeviceField,
        a: &CloverField<f64>,
        mu: f64,
        parity: Parity,
        formats: &Variant,
    ) -> Result<Self, OperatorError> {
        let terms = HostTerms::new(a, mu, parity)?;
        let inverse = match &terms.inverse {
            HostInverse::Clover(a_inv) => {
                DeviceInverse::Clover(upload_clover(gpu, a_inv, formats)?)
            }
            HostInverse::Twisted(t) => DeviceInverse::Twisted {
                b: upload_clover(gpu, &t.b, formats)?,
                c: upload_clover(gpu, &t.c, formats)?,
            },
        };
        let twisted = mu != 0.0;
        let lattice = *a.lattice();
        let half = lattice.half_volume();
        let spinor = || device_spinor(gpu, formats.spinor, 24, half);
        Ok(Self {
            hops: HopKernels::new::<WilsonHop>(gpu, formats, parity, true)?,
            local_p: SiteLocal::new(gpu, formats, parity, twisted)?,
            local_q: SiteLocal::new(gpu, formats, parity.opposite(), twisted)?,
            gauge,
            clover: upload_clover(gpu, &terms.a_pp, formats)?,
            inverse,
            lattice,
            mu,
            spinor: formats.spinor,
            twisted: if twisted {
                Some(Mutex::new([spinor()?, spinor()?]))
            } else {
                None
            },
            sources: 1,
            distribution: None,
        })
    }

    /// The same blocks on fields of `n` right-hand sides (5D fields of n slices; the
    /// links and clover fields shared; build them with `formats.slices` =
    /// [`qdsl_core::dsl::variant::Slices::InBlock`] so that the kernels read the links
    /// and clover fields once for all sources).
    pub fn with_sources(self, gpu: &Gpu, n: usize) -> Result<Self, OperatorError> {
        let n = n.max(1);
        let sites = n * self.lattice.half_volume();
        let twisted = match self.twisted {
            Some(_) => Some(Mutex::new([
                device_spinor(gpu, self.spinor, 24, sites)?,
                device_spinor(gpu, self.spinor, 24, sites)?,
            ])),
            None => None,
        };
        Ok(Self {
            sources: n,
            twisted,
            ..self
        })
    }

    /// The twisted mass μ (0 for plain clover).
    pub fn mu(&self) -> f64 {
        self.mu
    }

    /// The twist of D (dagger = false) or D† (dagger = true): ±μ.
    fn twist(&self, dagger: bool) -> f64 {
        if dagger {
            -self.mu
        } else {
            self.mu
        }
    }

    /// The intermediates of the twisted terms.
    fn twisted_scratch(&self) -> Result<MutexGuard<'_, [DeviceField; 2]>, OperatorError> {
        let scratch = self.twisted.as_ref().ok_or_else(|| OperatorError::Field {
            kernel: NAME.into(),
            field: "twist".into(),
            expected: "a twisted operator (μ ≠ 0)".into(),
            found: "μ = 0".into(),
        })?;
        Ok(scratch.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Bytes per output site of one application of M̂, both byte models: the sum over
    /// the launched kernels (two hops, the clover products, the twists) of what each
    /// one's KernelInfo counts (the intermediates are written and read back, as they
    /// run).
    pub fn bytes_per_site(&self) -> ByteModels {
        // D_qq⁻¹ of a twisted operator takes a second clover product (B and C).
        let second_q = match self.inverse {
            DeviceInverse::Twisted { .. } => Some(self.local_q.clover.info().bytes),
            DeviceInverse::Clover(_) => None,
        };
        let (p, q) = (&self.local_p, &self.local_q);
        let hops = self.hops.infos().into_iter().flatten().map(|i| i.bytes);
        let local = [&q.clover, &p.clover]
            .into_iter()
            .chain(q.twist.iter().chain(p.twist.iter()))
            .map(|k| k.info().bytes);
        hops.chain(local).chain(second_q).sum()
    }
}

impl DeviceCloverBlocks {
    /// The bytes this rank sends per hop on a decomposed lattice (its faces); 0 on one
    /// GPU.
    pub fn face_bytes(&self) -> usize {
        super::even_odd::face_bytes(self.distribution.as_deref())
    }
}

impl EvenOddBlocks for DeviceCloverBlocks {
    type Field = DeviceField;
    type Context<'c> = DeviceRun<'c>;
    type Error = OperatorError;

    fn parity(&self) -> Parity {
        self.hops.parity
    }

    fn zeros(&self, cx: DeviceRun<'_>, _: Parity) -> Result<DeviceField, OperatorError> {
        let sites = self.sources * self.lattice.half_volume();
        Ok(device_spinor(cx.gpu, self.spinor, 24, sites)?)
    }

    /// The kernels check every field they are given.
    fn expect_field(&self, _: Parity, _: &DeviceField) -> Result<(), OperatorError> {
        Ok(())
    }

    /// D_rs = −½ H_rs; (D†)_rs = −½ (H†)_rs.
    fn hop_coefficient(&self, _: bool) -> f64 {
        -0.5
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
        let links: (&[&DeviceField], &[f64]) = (&[&self.gauge], &[]);
        match &self.distribution {
            None => self
                .hops
                .hop(cx, &self.lattice, links, r, out, psi, dagger, xpay, None),
            Some(d) => {
                let key = d.launch_key(cx.gpu, out, xpay, dagger);
                let knob = dagger && self.hops.dagger_knob();
                d.apply(cx, r, psi, knob, key, |b, psi| {
                    self.hops
                        .hop(cx, &self.lattice, links, r, out, psi, dagger, xpay, Some(b))
                })
            }
        }
    }

    fn diagonal(&self) -> Diagonal {
        Diagonal::Local
    }

    /// D_pp ψ: A_pp ψ — `clover_apply`; μ ≠ 0: A_pp ψ ± μ·iγ5 ψ — `twisted_mass_twist`
    /// with xpay (x = A_pp ψ, a = 1, b = ±μ; − for the dagger). Only on p.
    fn apply_diagonal(
        &self,
        cx: DeviceRun<'_>,
        r: Parity,
        out: &mut DeviceField,
        psi: &DeviceField,
        dagger: bool,
    ) -> Result<(), OperatorError> {
        if r != self.parity() {
            return Err(SchurError::MissingBlock("D_qq (only its inverse is held)").into());
        }
        let (gpu, tuner, lattice) = (cx.gpu, cx.tuner, &self.lattice);
        let clover = &self.local_p.clover;
        if self.mu == 0.0 {
            return clover.run(
                gpu,
                tuner,
                lattice,
                StencilArgs::new(out, &[psi, &self.clover]),
            );
        }
        let mut scratch = self.twisted_scratch()?;
        let a_psi = &mut scratch[0];
        clover.run(
            gpu,
            tuner,
            lattice,
            StencilArgs::new(a_psi, &[psi, &self.clover]),
        )?;
        let twist = self.twist(dagger);
        self.local_p
            .twist(gpu, tuner, lattice, out, psi, a_psi, twist)
    }

    /// D_qq⁻¹ ψ: μ = 0: A_qq⁻¹ ψ — `clover_apply` with the inverse field; μ ≠ 0:
    /// (A + iμγ5)⁻¹ = B − iμγ5 C, so B ψ and C ψ — two `clover_apply` — then
    /// B ψ ∓ μ·iγ5 (C ψ) — `twisted_mass_twist` with xpay (x = B ψ, a = 1, b = ∓μ; + for
    /// the dagger). Only on q.
    fn apply_diagonal_inverse(
        &self,
        cx: DeviceRun<'_>,
        r: Parity,
        out: &mut DeviceField,
        psi: &DeviceField,
        dagger: bool,
    ) -> Result<(), OperatorError> {
        if r == self.parity() {
            return Err(SchurError::MissingBlock("D_pp⁻¹ (only D_pp is held)").into());
        }
        let (gpu, tuner, lattice) = (cx.gpu, cx.tuner, &self.lattice);
        let clover = &self.local_q.clover;
        match &self.inverse {
            DeviceInverse::Clover(a_inv) => {
                clover.run(gpu, tuner, lattice, StencilArgs::new(out, &[psi, a_inv]))
            }
            DeviceInverse::Twisted { b, c } => {
                let mut scratch = self.twisted_scratch()?;
                let [b_psi, c_psi] = &mut *scratch;
                clover.run(gpu, tuner, lattice, StencilArgs::new(b_psi, &[psi, b]))?;
                clover.run(gpu, tuner, lattice, StencilArgs::new(c_psi, &[psi, c]))?;
                let twist = -self.twist(dagger);
                self.local_q
                    .twist(gpu, tuner, lattice, out, c_psi, b_psi, twist)
            }
        }
    }

    /// V/2 per source.
    fn sites(&self) -> usize {
        self.sources * self.lattice.half_volume()
    }

    /// The hops' KernelInfo; 504 per clover product and 48 per twist (module docs).
    fn flops_per_site(&self) -> BlockFlops {
        let (hop, hop_xpay) = self.hops.flops();
        let (diagonal, inverse) = match self.inverse {
            DeviceInverse::Clover(_) => (CLOVER_APPLY_FLOPS, CLOVER_APPLY_FLOPS),
            DeviceInverse::Twisted { .. } => (
                CLOVER_APPLY_FLOPS + TWIST_FLOPS,
                2 * CLOVER_APPLY_FLOPS + TWIST_FLOPS,
            ),
        };
        BlockFlops {
            hop,
            hop_xpay,
            diagonal,
            inverse,
        }
    }
}

/// M̂ = D_pp − ¼ H_pq D_qq⁻¹ H_qp, D = A + iμγ5, on device fields (module docs): the
/// generic [`Schur`] of [`DeviceCloverBlocks`].
pub type DeviceEvenOddClover = Schur<DeviceCloverBlocks>;

impl Schur<DeviceCloverBlocks> {
    /// The same operator on fields of `n` right-hand sides
    /// ([`DeviceCloverBlocks::with_sources`]).
    pub fn with_sources(self, gpu: &Gpu, n: usize) -> Result<Self, OperatorError> {
        let (blocks, form) = self.into_parts();
        Ok(Schur::with_form(blocks.with_sources(gpu, n)?, form))
    }

    /// The same operator on one rank of a decomposed lattice
    /// ([`DeviceCloverBlocks::with_distribution`]).
    pub fn with_distribution(self, distribution: Arc<DeviceHopDistribution>) -> Self {
        let (blocks, form) = self.into_parts();
        Schur::with_form(blocks.with_distribution(distribution), form)
    }

    /// M̂ of [`DeviceCloverBlocks::new`].
    pub fn clover(
        gpu: &Gpu,
        gauge: DeviceField,
        a: &CloverField<f64>,
        mu: f64,
        parity: Parity,
        formats: &Variant,
    ) -> Result<Self, OperatorError> {
        Ok(Schur::complement(DeviceCloverBlocks::new(
            gpu, gauge, a, mu, parity, formats,
        )?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::linear::LinearOperator;
    use crate::operator::EvenOddClover;
    use qdsl_core::dsl::variant::{Recon, StorageFormat, TimeBoundary};
    use qdsl_core::field::{ColourSpinorField, GaugeField};
    use qdsl_core::format::{Compression, LinkFormat};
    use qdsl_core::gauge::clover_field;
    use qdsl_core::io::{read_gauge, ReadOptions};
    use std::path::Path;

    fn lattice() -> Lattice {
        Lattice::new([4, 4, 4, 6]).unwrap()
    }

    /// The diagonal entries (reals 0..6 of both packed blocks) of every site.
    fn diagonals(a: &CloverField<f64>) -> Vec<f64> {
        a.data()
            .chunks(36)
            .flat_map(|block| block[..6].to_vec())
            .collect()
    }

    /// With c_sw = 0, A = (m + 4)·1 on any links, so A_pp = m + 4, A_qq⁻¹ = 1/(m + 4) and,
    /// twisted, B = (m + 4)/((m + 4)² + μ²), C = 1/((m + 4)² + μ²) on the diagonal, zero
    /// off it; A_pp and D_qq⁻¹ live on V/2 sites.
    #[test]
    fn host_terms_of_a_constant_clover_field_are_analytic() {
        let (m, mu) = (-0.3, 0.25);
        let a = clover_field(&GaugeField::<f64>::random(lattice(), 3), m, 0.0);
        let d = m + 4.0;
        let close = |got: &CloverField<f64>, diag: f64| {
            assert_eq!(got.sites(), lattice().half_volume());
            assert!(diagonals(got).iter().all(|x| (x - diag).abs() < 1e-14));
            let off = got
                .data()
                .chunks(36)
                .flat_map(|block| block[6..].iter())
                .fold(0.0f64, |m, x| m.max(x.abs()));
            assert!(off < 1e-14, "off-diagonal entry {off:e}");
        };
        let plain = HostTerms::new(&a, 0.0, Parity::Odd).unwrap();
        close(&plain.a_pp, d);
        match &plain.inverse {
            HostInverse::Clover(inv) => close(inv, 1.0 / d),
            HostInverse::Twisted(_) => panic!("μ = 0 gave a twisted inverse"),
        }
        let twisted = HostTerms::new(&a, mu, Parity::Even).unwrap();
        close(&twisted.a_pp, d);
        match &twisted.inverse {
            HostInverse::Twisted(t) => {
                close(&t.b, d / (d * d + mu * mu));
                close(&t.c, 1.0 / (d * d + mu * mu));
            }
            HostInverse::Clover(_) => panic!("μ ≠ 0 gave a plain inverse"),
        }
    }

    /// A clover field on one parity, a non-finite μ and a singular A_qq (m = −4, c_sw = 0:
    /// A = 0) are errors naming the field, what was expected and what was found.
    #[test]
    fn host_terms_refuse_half_fields_infinite_twists_and_singular_blocks() {
        let a = clover_field(&GaugeField::<f64>::unit(lattice()), 0.1, 1.0);
        let half = a.restrict(Parity::Odd).unwrap();
        let e = HostTerms::new(&half, 0.0, Parity::Even)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("clover operator: field clover: expected a clover field on the full lattice, found Single(Odd)"),
            "{e}"
        );
        let e = HostTerms::new(&a, f64::NAN, Parity::Even)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "clover operator: field mu: expected a finite twist, found NaN"
        );
        let zero = clover_field(&GaugeField::<f64>::unit(lattice()), -4.0, 0.0);
        let e = HostTerms::new(&zero, 0.0, Parity::Even)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "clover operator: field clover: expected an invertible A_qq + iμγ5, found "
            ),
            "{e}"
        );
        assert!(e.contains("singular"), "{e}");
        // With a twist, A = 0 is invertible: D = iμγ5, D⁻¹ = −iγ5/μ (B = 0, C = 1/μ²).
        let t = HostTerms::new(&zero, 0.5, Parity::Even).unwrap();
        match t.inverse {
            HostInverse::Twisted(t) => {
                assert!(diagonals(&t.c).iter().all(|x| (x - 4.0).abs() < 1e-12));
                assert!(t.b.data().iter().all(|x| x.abs() < 1e-12));
            }
            HostInverse::Clover(_) => panic!("μ ≠ 0 gave a plain inverse"),
        }
    }

    /// NVRTC compiles, for sm_90, every kernel variant the operator loads on parity p =
    /// even in each solver precision (f64, f32, fixed16, f16; links in the same format,
    /// recon 18, antiperiodic): the hops to q and to p with xpay, plain and dagger, and
    /// `clover_apply` and the xpay twist on both parities.
    #[test]
    #[cfg_attr(
        not(qdsl_nvrtc),
        ignore = "needs NVRTC and ptxas (not found when the tests were built)"
    )]
    fn every_kernel_variant_compiles_for_every_solver_precision() {
        use crate::jit::Arch;
        use qdsl_core::dsl::Stencil;
        let root = tempfile::tempdir().unwrap();
        let jit = crate::testing::jit(root.path());
        type Source = fn(&Variant) -> Result<String, qdsl_core::dsl::DslError>;
        type Kernel = (Source, fn(&Variant) -> String, Variant);
        let (p, q) = (Parity::Even, Parity::Odd);
        for spinor in [
            StorageFormat::F64,
            StorageFormat::F32,
            StorageFormat::Fixed16,
            StorageFormat::F16,
        ] {
            let base = Variant {
                spinor,
                gauge: spinor,
                recon: Recon::R18,
                boundary: TimeBoundary::Antiperiodic,
                ..Variant::default()
            };
            let hop = |r, dagger, xpay| -> Kernel {
                let v = device_variant(&base, r, dagger, xpay);
                (WilsonHop::cuda_source, WilsonHop::kernel_name, v)
            };
            let mut kernels = vec![hop(q, false, false), hop(p, false, true)];
            kernels.extend([hop(q, true, false), hop(p, true, true)]);
            for r in [p, q] {
                let (clover, twist) = (
                    device_variant(&base, r, false, false),
                    device_variant(&base, r, false, true),
                );
                kernels.push((CloverApply::cuda_source, CloverApply::kernel_name, clover));
                kernels.push((
                    TwistedMassTwist::cuda_source,
                    TwistedMassTwist::kernel_name,
                    twist,
                ));
            }
            for (source, kernel_name, v) in kernels {
                let (src, name) = (source(&v).unwrap(), kernel_name(&v));
                let ptx = jit
                    .compile(&name, &src, Arch::SM_90, &[])
                    .unwrap_or_else(|e| panic!("{}: {e}", spinor.name()));
                assert!(ptx.ptx.contains(&format!(".entry {name}")), "{name}");
            }
        }
    }

    /// ‖a − b‖/‖b‖ of host fields.
    fn rel_err(a: &ColourSpinorField<f64>, b: &ColourSpinorField<f64>) -> f64 {
        let (mut d, mut n) = (0.0, 0.0);
        for (x, y) in a.data().iter().zip(b.data()) {
            d += (x - y).norm_sqr();
            n += y.norm_sqr();
        }
        (d / n).sqrt()
    }

    /// GPU: the device M̂ and M̂† equal the CPU [`EvenOddClover`]
    /// (independent host code, f64) on a random 4³×6 field and on MILC's real 4⁴
    /// configuration `lat.sample.l4444`, for clover (c_sw = 1.2), twisted clover (μ = 0.1)
    /// and plain twisted mass (c_sw = 0, μ = 0.2), both parities' operators, f64 to 1e-13
    /// and f32 (links, clover fields and spinors rounded) to 2e-5; the flop counts agree
    /// with the CPU operator's.
    #[test]
    #[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
    fn device_clover_matches_the_cpu_operator() {
        let (gpu, dir) = crate::testing::gpu();
        let tuner = Tuner::new(&dir.path().join("tune.tsv"), gpu.fingerprint("test"))
            .with_enabled(false)
            .with_progress(false);
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/milc/lat.sample.l4444");
        let real = read_gauge(&path, &ReadOptions::default()).unwrap().field;
        let boundary = TimeBoundary::Antiperiodic;
        let (mass, cases) = (-0.2, [(1.2, 0.0), (1.2, 0.1), (0.0, 0.2)]);
        for (name, gauge) in [
            ("random", GaugeField::random(lattice(), 11)),
            ("l4444", real),
        ] {
            for (k, &(c_sw, mu)) in cases.iter().enumerate() {
                let parity = if k % 2 == 0 {
                    Parity::Even
                } else {
                    Parity::Odd
                };
                let a = clover_field(&gauge, mass, c_sw);
                let cpu =
                    EvenOddClover::from_clover(gauge.clone(), &a, mu, parity, boundary).unwrap();
                let psi = ColourSpinorField::<f64>::gaussian(cpu.layout(), 17 + k as u64);
                for (spinor, bound) in [(StorageFormat::F64, 1e-13), (StorageFormat::F32, 2e-5)] {
                    let formats = Variant {
                        spinor,
                        gauge: spinor,
                        recon: Recon::R18,
                        boundary,
                        ..Variant::default()
                    };
                    let links = LinkFormat::new(spinor.link_storage(), Compression::Full);
                    let d_u = DeviceField::from_gauge(&gpu, &gauge, links).unwrap();
                    let op = Schur::clover(&gpu, d_u, &a, mu, parity, &formats).unwrap();
                    assert_eq!(op.flops_per_apply(), cpu.flops_per_apply(), "{name} {k}");
                    let d_psi =
                        DeviceField::from_spinor(&gpu, &psi, spinor.fermion_format()).unwrap();
                    let mut d_out =
                        device_spinor(&gpu, spinor, 24, gauge.lattice().half_volume()).unwrap();
                    for dagger in [false, true] {
                        let mut want = ColourSpinorField::zeros(cpu.layout());
                        if dagger {
                            cpu.apply_dagger(&mut want, &psi).unwrap();
                        } else {
                            cpu.apply(&mut want, &psi).unwrap();
                        }
                        let cx = DeviceRun::new(&gpu, &tuner);
                        op.apply_in(cx, &mut d_out, &d_psi, dagger).unwrap();
                        let got = d_out.to_spinor::<f64>(&gpu, cpu.layout()).unwrap();
                        let err = rel_err(&got, &want);
                        assert!(
                            err <= bound,
                            "{name} c_sw={c_sw} μ={mu} {} dagger={dagger}: {err:e} > {bound:e}",
                            spinor.name()
                        );
                    }
                }
            }
        }
    }
}
