//! [`MobiusBlocks`]: the even-odd blocks of the Möbius operator D = M5 − ½ H M_φ on host
//! 5D fields, and [`EvenOddMobius`], its Schur complement (equations in [`super`]).

use super::{ChiralSOperator, MobiusError, MobiusParams};
use crate::linear::SolverError;
use crate::operator::cpu::{hop_variant, wilson_hop_flops, HostHop, WilsonLinks};
use crate::operator::even_odd::{BlockFlops, Diagonal, EvenOddBlocks, Schur, SchurForm, Xpay};
use qdsl_core::dsl::cpu::Xpay as KernelXpay;
use qdsl_core::dsl::fused5d::mma::real_matrices;
use qdsl_core::dsl::fused5d::M5invMode;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{Lattice5D, Parity};
use qdsl_core::Real;

/// The blocks of the Möbius operator on parity p (q the other):
///
/// D_rr = M5 = α + β S (site-local, dense in s: [`Diagonal::Local`]),
/// D_rs = −½ H_rs M_φ (h = −½, K_rs = H_rs M_φ: M_φ = b + c S, then the Wilson hop on
/// every slice),
///
/// with the adjoint blocks (D†)_rr = M5†, (D†)_rs = −½ M_φ† (H†)_rs (the hop's dagger
/// knob, H† = γ5 H γ5). D_rr⁻¹ = M5⁻¹ in closed form ([`ChiralSOperator::m5_inverse`]).
///
/// The hop is the generated CPU Wilson hop run on the 5D field (each slice the 4D
/// stencil, the links shared by the slices); M_φ, M5 and M5⁻¹ are dense Ls × Ls
/// products per chirality.
#[derive(Clone, Debug)]
pub struct MobiusBlocks<T: Real> {
    links: WilsonLinks<T>,
    params: MobiusParams,
    lattice: Lattice5D,
    parity: Parity,
    boundary: TimeBoundary,
    m_phi: [ChiralSOperator; 2],
    m5: [ChiralSOperator; 2],
    m5_inverse: [ChiralSOperator; 2],
    /// How M5⁻¹ is applied: the dense product, or (`mma_*`) as the tensor cores of the
    /// fused chains compute it.
    m5inv: M5invMode,
}

/// [operator, adjoint]
fn with_adjoint(op: ChiralSOperator) -> [ChiralSOperator; 2] {
    let adjoint = op.adjoint();
    [op, adjoint]
}

impl<T: Real> MobiusBlocks<T> {
    /// The blocks for links `gauge`, `params`, the Schur complement's parity and the
    /// fermions' time boundary.
    pub fn new(
        gauge: GaugeField<T>,
        params: MobiusParams,
        parity: Parity,
        boundary: TimeBoundary,
    ) -> Result<Self, MobiusError> {
        let lattice = Lattice5D::new(gauge.lattice().dims(), params.ls())
            .map_err(|_| MobiusError::Ls(params.ls()))?;
        Ok(Self {
            links: WilsonLinks(gauge),
            m_phi: with_adjoint(ChiralSOperator::m_phi(&params)),
            m5: with_adjoint(ChiralSOperator::m5(&params)),
            m5_inverse: with_adjoint(ChiralSOperator::m5_inverse(&params)),
            params,
            lattice,
            parity,
            boundary,
            m5inv: M5invMode::Sweep,
        })
    }

    /// The blocks with M5⁻¹ (and M5⁻†) applied as `mode` says: `mma_f16`, `mma_bf16` as the
    /// tensor-core chains compute it (operands rounded, f32 accumulation: the sloppy
    /// operator of a mixed-precision solve), the SIMT modes as the exact dense product.
    /// An error where the tensor cores cannot apply M5⁻¹ (complex zMöbius coefficients,
    /// Ls > 16).
    pub fn with_m5inv(mut self, mode: M5invMode) -> Result<Self, MobiusError> {
        if mode.operand().is_some() {
            for m in &self.m5_inverse {
                real_matrices("MobiusBlocks", &m.kernel_matrices())
                    .map_err(|e| MobiusError::TensorCore(e.to_string()))?;
            }
        }
        self.m5inv = mode;
        Ok(self)
    }

    /// How M5⁻¹ is applied.
    pub fn m5inv_mode(&self) -> M5invMode {
        self.m5inv
    }

    /// out = M5⁻¹ ψ (dagger: M5⁻†), or a·x + b·(that), in the blocks' mode.
    fn inverse(
        &self,
        out: &mut ColourSpinorField<T>,
        psi: &ColourSpinorField<T>,
        dagger: bool,
        xpay: Option<(f64, &ColourSpinorField<T>, f64)>,
    ) -> Result<(), SolverError> {
        let m = self.m5_inverse(dagger);
        match self.m5inv.operand() {
            Some(op) => m.apply_tensor_core(op, out, psi, xpay),
            None => m.apply(out, psi, xpay),
        }
    }

    /// The parameters.
    pub fn params(&self) -> &MobiusParams {
        &self.params
    }

    /// The links.
    pub fn gauge(&self) -> &GaugeField<T> {
        &self.links.0
    }

    /// The fermions' time boundary.
    pub fn boundary(&self) -> TimeBoundary {
        self.boundary
    }

    /// The layout of the 5D fields on `subset`.
    pub fn layout(&self, subset: SiteSubset) -> SpinorLayout {
        SpinorLayout::domain_wall(self.lattice, subset)
    }

    /// M_φ = b + c S (`dagger`: M_φ†).
    pub fn m_phi(&self, dagger: bool) -> &ChiralSOperator {
        &self.m_phi[usize::from(dagger)]
    }

    /// M5 (`dagger`: M5†).
    pub fn m5(&self, dagger: bool) -> &ChiralSOperator {
        &self.m5[usize::from(dagger)]
    }

    /// M5⁻¹ (`dagger`: (M5†)⁻¹).
    pub fn m5_inverse(&self, dagger: bool) -> &ChiralSOperator {
        &self.m5_inverse[usize::from(dagger)]
    }

    /// out_r = H_rs ψ_s (dagger: (H†)_rs ψ_s), or a·x + b·H ψ, on 5D fields.
    fn wilson_hop(
        &self,
        r: Parity,
        out: &mut ColourSpinorField<T>,
        psi: &ColourSpinorField<T>,
        dagger: bool,
        xpay: Option<Xpay<'_, ColourSpinorField<T>>>,
    ) -> Result<(), SolverError> {
        let variant = hop_variant::<T>(r, dagger, xpay.is_some(), self.boundary);
        let xpay = xpay.map(|x| KernelXpay {
            a: T::from_f64(x.a),
            x: x.x,
            b: T::from_f64(x.b),
        });
        self.links
            .apply(&variant, out, psi, xpay)
            .map_err(SolverError::operator)
    }
}

impl<T: Real> EvenOddBlocks for MobiusBlocks<T> {
    type Field = ColourSpinorField<T>;
    type Context<'c> = ();
    type Error = SolverError;

    fn parity(&self) -> Parity {
        self.parity
    }

    fn zeros(&self, (): (), r: Parity) -> Result<Self::Field, SolverError> {
        Ok(ColourSpinorField::zeros(self.layout(SiteSubset::Single(r))))
    }

    fn expect_field(&self, r: Parity, field: &Self::Field) -> Result<(), SolverError> {
        self.layout(SiteSubset::Single(r))
            .expect_same(field.layout())
            .map_err(SolverError::field)
    }

    /// h = −½ (D_rs = −½ H_rs M_φ; the adjoint's blocks carry the same h).
    fn hop_coefficient(&self, _: bool) -> f64 {
        -0.5
    }

    /// K_rs ψ = H_rs M_φ ψ (one M_φ on parity s, then the hop); dagger:
    /// K'_rs ψ = M_φ† (H†)_rs ψ (the hop, then M_φ† with the xpay).
    fn hop(
        &self,
        (): (),
        r: Parity,
        out: &mut Self::Field,
        psi: &Self::Field,
        dagger: bool,
        xpay: Option<Xpay<'_, Self::Field>>,
    ) -> Result<(), SolverError> {
        if dagger {
            let mut t = self.zeros((), r)?;
            self.wilson_hop(r, &mut t, psi, true, None)?;
            self.m_phi(true)
                .apply(out, &t, xpay.map(|x| (x.a, x.x, x.b)))
        } else {
            let mut t = self.zeros((), r.opposite())?;
            self.m_phi(false).apply(&mut t, psi, None)?;
            self.wilson_hop(r, out, &t, false, xpay)
        }
    }

    fn diagonal(&self) -> Diagonal {
        Diagonal::Local
    }

    /// out = M5 ψ (dagger: M5† ψ).
    fn apply_diagonal(
        &self,
        (): (),
        _: Parity,
        out: &mut Self::Field,
        psi: &Self::Field,
        dagger: bool,
    ) -> Result<(), SolverError> {
        self.m5(dagger).apply(out, psi, None)
    }

    /// out = M5⁻¹ ψ (dagger: (M5†)⁻¹ ψ).
    fn apply_diagonal_inverse(
        &self,
        (): (),
        _: Parity,
        out: &mut Self::Field,
        psi: &Self::Field,
        dagger: bool,
    ) -> Result<(), SolverError> {
        self.inverse(out, psi, dagger, None)
    }

    /// out = a·x + b·M5⁻¹ ψ (QUDA's M5invXpay).
    fn apply_diagonal_inverse_xpay(
        &self,
        (): (),
        _: Parity,
        out: &mut Self::Field,
        psi: &Self::Field,
        dagger: bool,
        xpay: Xpay<'_, Self::Field>,
    ) -> Result<(), SolverError> {
        self.inverse(out, psi, dagger, Some((xpay.a, xpay.x, xpay.b)))
    }

    /// V/2 4D sites (each with Ls slices: the flops below are per 4D site).
    fn sites(&self) -> usize {
        self.lattice.four().half_volume()
    }

    /// [`mobius_block_flops`].
    fn flops_per_site(&self) -> BlockFlops {
        mobius_block_flops::<T>(&self.params, self.parity, self.boundary)
    }
}

/// Flops per 4D site of the Möbius blocks (host and device count alike): Ls × (Wilson
/// hop of `T` + dense M_φ) for the hops, Ls × the dense M5 or M5⁻¹.
pub(super) fn mobius_block_flops<T: Real>(
    params: &MobiusParams,
    parity: Parity,
    boundary: TimeBoundary,
) -> BlockFlops {
    let ls = params.ls();
    let s_op = ChiralSOperator::m5(params).flops_per_site(false);
    let hop = |xpay| wilson_hop_flops::<T>(parity, xpay, boundary);
    BlockFlops {
        hop: ls * (hop(false) + s_op),
        hop_xpay: ls * (hop(true) + s_op),
        diagonal: ls * s_op,
        inverse: ls * s_op,
    }
}

/// The even-odd preconditioned Möbius operator on parity p: [`Schur`] of
/// [`MobiusBlocks`]. [`EvenOddMobius::asymmetric`] is QUDA's asymmetric MatPC (up to its
/// factor 2κ_b),
///
/// M̂ ψ_p = M5 ψ_p − ¼ H_pq M_φ M5⁻¹ H_qp M_φ ψ_p,
///
/// [`EvenOddMobius::symmetric`] the symmetric one,
///
/// M̂_sym ψ_p = ψ_p − ¼ M5⁻¹ H_pq M_φ M5⁻¹ H_qp M_φ ψ_p = M5⁻¹ M̂ ψ_p,
///
/// both with M̂†, source preparation and reconstruction from [`Schur`].
pub type EvenOddMobius<T> = Schur<MobiusBlocks<T>>;

impl<T: Real> EvenOddMobius<T> {
    /// The asymmetric M̂ = M5 − ¼ H_pq M_φ M5⁻¹ H_qp M_φ.
    pub fn asymmetric(
        gauge: GaugeField<T>,
        params: MobiusParams,
        parity: Parity,
        boundary: TimeBoundary,
    ) -> Result<Self, MobiusError> {
        Ok(Schur::complement(MobiusBlocks::new(
            gauge, params, parity, boundary,
        )?))
    }

    /// The symmetric M̂_sym = 1 − ¼ M5⁻¹ H_pq M_φ M5⁻¹ H_qp M_φ.
    pub fn symmetric(
        gauge: GaugeField<T>,
        params: MobiusParams,
        parity: Parity,
        boundary: TimeBoundary,
    ) -> Result<Self, MobiusError> {
        Ok(Schur::with_form(
            MobiusBlocks::new(gauge, params, parity, boundary)?,
            SchurForm::Symmetric,
        ))
    }

    /// The same operator with its links and fields in precision U (the f32 iteration of
    /// a mixed-precision solve).
    pub fn cast<U: Real>(&self) -> EvenOddMobius<U> {
        let b = self.blocks();
        let blocks = MobiusBlocks {
            links: WilsonLinks(b.gauge().cast()),
            params: b.params.clone(),
            lattice: b.lattice,
            parity: b.parity,
            boundary: b.boundary,
            m_phi: b.m_phi.clone(),
            m5: b.m5.clone(),
            m5_inverse: b.m5_inverse.clone(),
            m5inv: b.m5inv,
        };
        Schur::with_form(blocks, self.form())
    }

    /// The same operator with M5⁻¹ applied as `mode` says ([`MobiusBlocks::with_m5inv`]).
    pub fn with_m5inv(&self, mode: M5invMode) -> Result<Self, MobiusError> {
        let blocks = self.blocks().clone().with_m5inv(mode)?;
        Ok(Schur::with_form(blocks, self.form()))
    }
}
