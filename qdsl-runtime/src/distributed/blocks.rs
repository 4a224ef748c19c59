//! [`DistributedBlocks`]: the even-odd blocks of an operator on a decomposed lattice, so
//! that the one [`Schur`] complement (and through it every solver) runs distributed
//! unchanged.
//!
//! Each rank holds the single-process blocks of its extended lattice (the links, and the
//! clover term, scattered with their halos filled once); a hop block first fills the
//! input's halos from the neighbours ([`exchange_halos`], faces negated across an
//! antiperiodic global boundary), then runs the generated kernel on the extended lattice
//! and zeroes the output's halo sites. On every interior site the result is the
//! single-process block's, bit for bit (see [`super`] for why); the site-local blocks
//! (D_rr, D_rr⁻¹) are the single-process ones site by site. So M̂, M̂†, the source
//! preparation and the reconstruction of [`Schur`] are the single-process ones on every
//! interior site, and a solve differs from one process only in the order of its global
//! sums.
//!
//! | action | blocks of each rank | halo depth | fermion faces |
//! |---|---|---|---|
//! | Wilson | [`HopBlocks`] of [`WilsonLinks`] | 1 | the action's time boundary, spin-projected |
//! | clover, twisted mass | [`CloverBlocks`] (A scattered, halos exchanged) | 1 | the action's time boundary, spin-projected |
//! | naive staggered, asqtad, HISQ | [`HopBlocks`] of [`StaggeredLinks`] (normal form) | 1, or 3 with the Naik term | periodic (the sign is in the links) |
//! | Möbius domain wall | [`MobiusBlocks`] (5D fields: the faces carry the Ls slices; M_φ, M5, M5⁻¹ s-local) | 1 | the action's time boundary, whole sites (M_φ runs on the halo) |
//!
//! Spin-projected faces ([`DistributedBlocks::with_projected_faces`]) carry half
//! spinors (12 reals a site instead of 24) and leave the hop bit for bit.

use super::field::{DistributedField, SharedComm};
use super::{
    exchange_halos, exchange_projected_halos, halo_site_indices, zero_sites, DistributedError,
};
use crate::comm::Communicator;
use crate::linear::{SolverError, SolverField};
use crate::operator::cpu::{HopBlocks, StaggeredLinks, WilsonLinks};
use crate::operator::even_odd::{BlockFlops, Diagonal, EvenOddBlocks, Schur, SchurForm, Xpay};
use crate::operator::mobius::{MobiusBlocks, MobiusParams};
use crate::operator::CloverBlocks;
use qdsl_core::dsl::halo_spin::HaloProjections;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::dsl::Stencil;
use qdsl_core::field::distributed::SiteField;
use qdsl_core::field::{
    CloverField, ColourSpinorField, GaugeField, SiteSubset, CLOVER_BLOCK_DIM, CLOVER_BLOCK_REALS,
};
use qdsl_core::lattice::{BoundaryConditions, ExtendedLattice, HaloShape, Parity};
use qdsl_core::Real;
use qdsl_kernels::WilsonHop;
use std::sync::Mutex;

/// The time boundary the kernels of a rank run with for fermions of time boundary
/// `boundary`: periodic when t is cut (the faces crossing the global boundary carry the
/// sign, and no hop of a cut direction wraps), the fermions' own otherwise.
pub fn kernel_boundary(ext: &ExtendedLattice, boundary: TimeBoundary) -> TimeBoundary {
    if ext.decomposition().grid().is_cut(3) {
        TimeBoundary::Periodic
    } else {
        boundary
    }
}

/// The boundary conditions of fermion faces for the time boundary `boundary`.
fn face_conditions(boundary: TimeBoundary) -> BoundaryConditions {
    match boundary {
        TimeBoundary::Periodic => BoundaryConditions::periodic(),
        TimeBoundary::Antiperiodic => BoundaryConditions::antiperiodic_time(),
    }
}

/// Fills the halos of this rank's part of links (or of a clover field: any site field)
/// from its neighbours, once, with periodic boundary conditions (links carry no boundary
/// sign; staggered phases and signs are folded in before scattering). Every rank calls
/// it together.
pub fn fill_link_halos<F, C>(
    comm: &SharedComm<C>,
    part: &mut F,
    ext: &ExtendedLattice,
) -> Result<(), DistributedError>
where
    F: SiteField,
    F::Elem: 'static,
    C: Communicator,
{
    exchange_halos(
        &mut *comm.lock(),
        part,
        ext,
        HaloShape::Faces,
        &BoundaryConditions::periodic(),
        "link halos",
    )
}

/// Sets the clover term of every halo site of this rank's part to A = 1. The clover term
/// is site-local, so no interior site reads a halo site's A; the halo sites of every
/// distributed field are zero, so D_rr and D_rr⁻¹ there only ever see zeros. The unit
/// term just keeps D_qq = A_qq + iμγ5 invertible on every extended site, which the
/// single-process blocks' set-up (inverting D_qq site by site) requires.
pub fn unit_clover_on_halo_sites<T: Real>(clover: &mut CloverField<T>, ext: &ExtendedLattice) {
    let lattice = *clover.lattice();
    for lex in 0..lattice.volume() {
        let c = lattice.coords_of_lex(lex);
        if ext.local_of_ext(c).is_some() {
            continue;
        }
        let Some(i) = SiteField::index_of(clover, c) else {
            continue;
        };
        let site = clover.site_mut(i);
        site.fill(T::zero());
        for block in site.chunks_exact_mut(CLOVER_BLOCK_REALS) {
            block[..CLOVER_BLOCK_DIM].fill(T::one());
        }
    }
}

/// The even-odd blocks of an operator on a decomposed lattice (module docs): one rank's
/// single-process blocks `B` on its extended lattice, and the halo exchange before
/// every hop.
pub struct DistributedBlocks<B: EvenOddBlocks, C> {
    local: B,
    ext: ExtendedLattice,
    comm: SharedComm<C>,
    /// The boundary conditions of the fermion faces.
    faces: BoundaryConditions,
    /// Spare extended fields of each parity [even, odd], for the hop inputs with halos.
    scratch: Mutex<[Vec<B::Field>; 2]>,
    /// The halo sites of a field of each parity [even, odd], zeroed after each hop.
    halo_sites: [Vec<usize>; 2],
    /// Spin-projected faces: the projections of the hop's halos, of the operator and
    /// of its dagger ([`Self::with_projected_faces`]); `None`: whole sites.
    projections: Option<[HaloProjections; 2]>,
}

fn slot(r: Parity) -> usize {
    match r {
        Parity::Even => 0,
        Parity::Odd => 1,
    }
}

impl<T, B, C> DistributedBlocks<B, C>
where
    T: Real,
    B: EvenOddBlocks<Field = ColourSpinorField<T>, Error = SolverError>,
    B::Context<'static>: Default,
    C: Communicator,
{
    /// The blocks of this rank: `local` are the single-process blocks on `ext`'s extended
    /// lattice, their kernels run with [`kernel_boundary`]`(ext, boundary)` and their
    /// links' halos filled ([`fill_link_halos`]); `boundary` is the fermions' time
    /// boundary (the sign of the faces crossing the global time boundary).
    pub fn new(
        local: B,
        ext: ExtendedLattice,
        comm: SharedComm<C>,
        boundary: TimeBoundary,
    ) -> Result<Self, DistributedError> {
        let probe = |r: Parity| {
            local
                .zeros(Default::default(), r)
                .map_err(|e| DistributedError::Operator(e.to_string()))
        };
        let (even, odd) = (probe(Parity::Even)?, probe(Parity::Odd)?);
        if even.layout().lattice() != ext.extended() {
            return Err(DistributedError::WrongLattice {
                what: "blocks",
                expected: ext.extended().to_string(),
                found: even.layout().lattice().to_string(),
            });
        }
        let halo_sites = [&even, &odd].map(|f| halo_site_indices(f.layout(), &ext));
        Ok(Self {
            local,
            ext,
            comm,
            faces: face_conditions(boundary),
            scratch: Mutex::new([Vec::new(), Vec::new()]),
            halo_sites,
            projections: None,
        })
    }

    /// The same blocks exchanging spin-projected faces (half spinors: half the bytes,
    /// the hop bit for bit; [`exchange_projected_halos`]): `projections` are those of
    /// the hop kernel K_rs reading the exchanged input directly, of the operator and of
    /// its dagger (e.g. [`HaloProjections::of`] the Wilson hop's spec). Only for blocks
    /// whose hop applies the projected stencil to the exchanged field itself (Wilson,
    /// clover): an operator that first mixes spins of the input on the halo (Möbius's
    /// M_φ before its hop: P± does not commute with 1 ± γ_μ) must send whole sites.
    pub fn with_projected_faces(self, projections: [HaloProjections; 2]) -> Self {
        Self {
            projections: Some(projections),
            ..self
        }
    }

    /// The single-process blocks of this rank.
    pub fn local(&self) -> &B {
        &self.local
    }

    /// The rank's extended lattice.
    pub fn extended(&self) -> &ExtendedLattice {
        &self.ext
    }

    /// This rank's part of the global field `global` as a vector of these blocks.
    pub fn scatter(
        &self,
        global: &ColourSpinorField<T>,
    ) -> Result<DistributedField<T, C>, DistributedError> {
        DistributedField::scatter(global, self.ext, self.comm.clone())
    }

    fn wrap(&self, part: ColourSpinorField<T>) -> Result<DistributedField<T, C>, SolverError> {
        DistributedField::from_part(part, self.ext, self.comm.clone()).map_err(SolverError::field)
    }

    /// ψ with its halos filled from the neighbours, in a spare field of ψ's parity.
    fn with_halos(
        &self,
        psi: &DistributedField<T, C>,
        dagger: bool,
    ) -> Result<ColourSpinorField<T>, SolverError> {
        let SiteSubset::Single(r) = psi.part().layout().subset() else {
            return Err(SolverError::field(DistributedError::Operator(
                "a hop block takes a field on one parity, found one on both".into(),
            )));
        };
        let spare = self.lock_scratch()[slot(r)].pop();
        let mut halo = match spare {
            Some(f) => f,
            None => self.local.zeros(Default::default(), r)?,
        };
        halo.copy_from(psi.part())?;
        let operation = "distributed hop: halo exchange";
        let comm = &mut *self.comm.lock();
        match &self.projections {
            None => exchange_halos(
                comm,
                &mut halo,
                &self.ext,
                HaloShape::Faces,
                &self.faces,
                operation,
            ),
            Some(p) => {
                let p = &p[usize::from(dagger)];
                exchange_projected_halos(comm, &mut halo, &self.ext, &self.faces, p, operation)
                    .map(|_| ())
            }
        }
        .map_err(SolverError::field)?;
        Ok(halo)
    }

    fn lock_scratch(&self) -> std::sync::MutexGuard<'_, [Vec<ColourSpinorField<T>>; 2]> {
        // Spare fields hold no invariant: a poisoned lock is harmless.
        self.scratch.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The xpay operands on the rank's parts.
fn local_xpay<'a, T: Real, C>(
    x: Option<Xpay<'a, DistributedField<T, C>>>,
) -> Option<Xpay<'a, ColourSpinorField<T>>>
where
    C: Communicator,
{
    x.map(|x| Xpay {
        a: x.a,
        x: x.x.part(),
        b: x.b,
    })
}

impl<T, B, C> EvenOddBlocks for DistributedBlocks<B, C>
where
    T: Real,
    B: EvenOddBlocks<Field = ColourSpinorField<T>, Error = SolverError>,
    B::Context<'static>: Default,
    C: Communicator,
{
    type Field = DistributedField<T, C>;
    type Context<'c> = ();
    type Error = SolverError;

    fn parity(&self) -> Parity {
        self.local.parity()
    }

    fn zeros(&self, (): (), r: Parity) -> Result<Self::Field, SolverError> {
        self.wrap(self.local.zeros(Default::default(), r)?)
    }

    fn expect_field(&self, r: Parity, field: &Self::Field) -> Result<(), SolverError> {
        if *field.extended() != self.ext {
            return Err(SolverError::field(DistributedError::WrongLattice {
                what: "field",
                expected: self.ext.extended().to_string(),
                found: field.extended().extended().to_string(),
            }));
        }
        self.local.expect_field(r, field.part())
    }

    fn hop_coefficient(&self, dagger: bool) -> f64 {
        self.local.hop_coefficient(dagger)
    }

    /// out_r = K_rs ψ_s on every interior site (ψ's halos exchanged first), halo sites
    /// zero.
    fn hop(
        &self,
        (): (),
        r: Parity,
        out: &mut Self::Field,
        psi: &Self::Field,
        dagger: bool,
        xpay: Option<Xpay<'_, Self::Field>>,
    ) -> Result<(), SolverError> {
        let halo = self.with_halos(psi, dagger)?;
        let s = r.opposite();
        let result = self.local.hop(
            Default::default(),
            r,
            out.part_mut(),
            &halo,
            dagger,
            local_xpay(xpay),
        );
        zero_sites(out.part_mut(), &self.halo_sites[slot(r)]);
        self.lock_scratch()[slot(s)].push(halo);
        result
    }

    fn diagonal(&self) -> Diagonal {
        self.local.diagonal()
    }

    fn apply_diagonal(
        &self,
        (): (),
        r: Parity,
        out: &mut Self::Field,
        psi: &Self::Field,
        dagger: bool,
    ) -> Result<(), SolverError> {
        self.local
            .apply_diagonal(Default::default(), r, out.part_mut(), psi.part(), dagger)
    }

    fn apply_diagonal_inverse(
        &self,
        (): (),
        r: Parity,
        out: &mut Self::Field,
        psi: &Self::Field,
        dagger: bool,
    ) -> Result<(), SolverError> {
        self.local
            .apply_diagonal_inverse(Default::default(), r, out.part_mut(), psi.part(), dagger)
    }

    fn apply_diagonal_inverse_xpay(
        &self,
        (): (),
        r: Parity,
        out: &mut Self::Field,
        psi: &Self::Field,
        dagger: bool,
        xpay: Xpay<'_, Self::Field>,
    ) -> Result<(), SolverError> {
        let xpay = Xpay {
            a: xpay.a,
            x: xpay.x.part(),
            b: xpay.b,
        };
        self.local.apply_diagonal_inverse_xpay(
            Default::default(),
            r,
            out.part_mut(),
            psi.part(),
            dagger,
            xpay,
        )
    }

    /// The sites of one parity of the global lattice: flops count the whole operator.
    fn sites(&self) -> usize {
        self.ext.decomposition().global().half_volume()
    }

    fn flops_per_site(&self) -> BlockFlops {
        self.local.flops_per_site()
    }
}

/// The even-odd operator of a decomposed lattice on one rank: [`Schur`] of
/// [`DistributedBlocks`].
pub type DistributedSchur<B, C> = Schur<DistributedBlocks<B, C>>;

/// The distributed even-odd Wilson M̂ = 1 − κ² H_pq H_qp on parity p (as
/// [`crate::operator::EvenOddWilson`]); `links` is this rank's part of the links
/// (scattered, halos zero: they are filled here). Every rank calls it together.
pub fn distributed_wilson<T: Real, C: Communicator>(
    mut links: GaugeField<T>,
    kappa: f64,
    parity: Parity,
    boundary: TimeBoundary,
    ext: ExtendedLattice,
    comm: SharedComm<C>,
) -> Result<DistributedSchur<HopBlocks<WilsonLinks<T>>, C>, DistributedError> {
    fill_link_halos(&comm, &mut links, &ext)?;
    let local = HopBlocks::new(
        WilsonLinks(links),
        1.0,
        -kappa,
        parity,
        kernel_boundary(&ext, boundary),
    );
    Ok(Schur::complement(
        DistributedBlocks::new(local, ext, comm, boundary)?
            .with_projected_faces(wilson_projections()),
    ))
}

/// The Wilson hop's halo projections, of the operator and of its dagger: the faces of
/// the Wilson-type blocks travel as half spinors.
fn wilson_projections() -> [HaloProjections; 2] {
    [false, true].map(|dagger| HaloProjections::of(&WilsonHop::ir(), dagger))
}

/// The distributed staggered normal operator A = 4m² − D_pq D_qp on parity p (as
/// [`crate::operator::EvenOddStaggered`]; phases and the time boundary folded into the
/// links, the faces periodic); `links` this rank's part (halos filled here; `ext` of
/// depth 3 for improved links). Every rank calls it together.
pub fn distributed_staggered<T: Real, C: Communicator>(
    links: StaggeredLinks<T>,
    mass: f64,
    parity: Parity,
    ext: ExtendedLattice,
    comm: SharedComm<C>,
) -> Result<DistributedSchur<HopBlocks<StaggeredLinks<T>>, C>, DistributedError> {
    let links = match links {
        StaggeredLinks::Naive(mut u) => {
            fill_link_halos(&comm, &mut u, &ext)?;
            StaggeredLinks::Naive(u)
        }
        StaggeredLinks::Improved { mut fat, mut long } => {
            fill_link_halos(&comm, &mut fat, &ext)?;
            fill_link_halos(&comm, &mut long, &ext)?;
            StaggeredLinks::Improved { fat, long }
        }
    };
    let local = HopBlocks::new(links, 2.0 * mass, 1.0, parity, TimeBoundary::Periodic);
    let blocks = DistributedBlocks::new(local, ext, comm, TimeBoundary::Periodic)?;
    Ok(Schur::with_form(blocks, SchurForm::TimesDqq))
}

/// The distributed clover (twisted-clover) M̂ = D_pp − ¼ H_pq D_qq⁻¹ H_qp on parity p (as
/// [`crate::operator::EvenOddClover`]): `links` and `clover` this rank's parts of the
/// links (halos filled here) and of the full-lattice clover field A. Every rank calls it
/// together.
pub fn distributed_clover<T: Real, C: Communicator>(
    mut links: GaugeField<T>,
    mut clover: CloverField<T>,
    mu: f64,
    parity: Parity,
    boundary: TimeBoundary,
    ext: ExtendedLattice,
    comm: SharedComm<C>,
) -> Result<DistributedSchur<CloverBlocks<T>, C>, DistributedError> {
    fill_link_halos(&comm, &mut links, &ext)?;
    unit_clover_on_halo_sites(&mut clover, &ext);
    let local = CloverBlocks::new(links, &clover, mu, parity, kernel_boundary(&ext, boundary))
        .map_err(|e| DistributedError::Operator(e.to_string()))?;
    Ok(Schur::complement(
        DistributedBlocks::new(local, ext, comm, boundary)?
            .with_projected_faces(wilson_projections()),
    ))
}

/// The distributed asymmetric Möbius M̂ = M5 − ¼ H_pq M_φ M5⁻¹ H_qp M_φ on parity p (as
/// [`crate::operator::mobius::EvenOddMobius::asymmetric`]) on 5D fields: `links` this
/// rank's part of the links (halos filled here). The hop block K_rs = H_rs M_φ applies
/// the s-local M_φ to the exchanged input (halo sites included), then the 4D Wilson hop
/// on every slice; the adjoint K'_rs = M_φ† (H†)_rs; so the interior sites equal the
/// single-process blocks' bit for bit. Every rank calls it together.
pub fn distributed_mobius<T: Real, C: Communicator>(
    mut links: GaugeField<T>,
    params: MobiusParams,
    parity: Parity,
    boundary: TimeBoundary,
    ext: ExtendedLattice,
    comm: SharedComm<C>,
) -> Result<DistributedSchur<MobiusBlocks<T>, C>, DistributedError> {
    fill_link_halos(&comm, &mut links, &ext)?;
    let local = MobiusBlocks::new(links, params, parity, kernel_boundary(&ext, boundary))
        .map_err(|e| DistributedError::Operator(e.to_string()))?;
    Ok(Schur::complement(DistributedBlocks::new(
        local, ext, comm, boundary,
    )?))
}
