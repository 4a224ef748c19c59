//! Operators on a lattice decomposed over ranks: the halo exchange of a distributed host
//! field through a [`Communicator`](crate::comm::Communicator), the distributed host hop —
//! the CPU reference the multi-GPU operators will be checked against — and deterministic
//! global sums ([`reduce`]).
//!
//! Fields live on each rank's [`ExtendedLattice`](qdsl_core::lattice::ExtendedLattice) (local lattice + halos; see
//! [`qdsl_core::field::distributed`] for scattering, gathering and face packing).
//!
//! # The generated CPU kernels run unchanged on the extended lattice
//! A hop kernel applied to fields on the extended lattice computes every extended site
//! of the output parity with its ordinary neighbour table. For an **interior** site x and
//! a hop of n ≤ depth sites in direction μ:
//!
//! * μ cut: x ± nμ̂ is a site of the extended lattice without wrapping (the margin is at
//!   least the depth), holding the neighbour's value after the exchange — with the
//!   antiperiodic sign already applied by the sender where the message crossed the
//!   global boundary ([`qdsl_core::field::distributed::face_negated`]); the kernel's own
//!   boundary factor is +1 there (no wrap).
//! * μ not cut: the extended extent is the global one, and the kernel wraps and signs
//!   exactly as on one process.
//!
//! The site's terms are therefore the single-process terms with the same operands, in
//! the same order, with at most an exactly negated operand in place of a negated product
//! (IEEE arithmetic is symmetric under sign): the interior output is **bit-identical** to
//! the single-process operator. The halo sites' outputs (read through wraps of the
//! extended lattice) are meaningless and are zeroed.
//!
//! # What the GPU path needs from the generator (next step)
//! The same kernels, on the extended lattice, with three changes, none to a term's body:
//!
//! 1. **Thread → site map over a sub-box**: `n_out` counts the sites of a box
//!    `[lo, hi)` of the extended lattice (one parity), thread i → i-th site of the box
//!    (local checkerboard index → local coordinates → + lo), output and source indices
//!    computed with the extended extents `L0..L3` as now. The interior kernel is the box
//!    `[margin + depth, margin + ℓ − depth)` in cut directions (all of ℓ elsewhere); the
//!    exterior kernels are the 2 · (cut directions) boundary slabs of `depth` layers
//!    (each launched after its own two halos arrived; slabs of different directions
//!    overlap at the edges, so the exterior runs per direction in sequence or the slabs
//!    are made disjoint by taking, for direction μ, only sites not in the slabs of
//!    directions < μ).
//! 2. **No boundary sign in cut directions**: the variant's time boundary applies only
//!    when t is not cut (the faces carry the sign); the runtime passes `Periodic` for a
//!    cut t and packs the t-faces negated.
//! 3. **Face packing kernels** from the field's codec: for each cut direction and side,
//!    gather the `depth` boundary layers of one parity (and every s-slice) into a
//!    contiguous buffer in the wire format (the field's storage format, or fixed16 with
//!    per-site norms to halve the bytes), negated where the face crosses an antiperiodic
//!    boundary; unpacking writes the halo layers of the extended field in its storage
//!    format. The order of sites in a buffer is that of
//!    [`boundary_layers`](qdsl_core::lattice::ExtendedLattice::boundary_layers) (lexicographic in slab coordinates).

mod blocks;
pub mod device;
mod field;
mod halo;
mod hop;
mod local_preconditioner;
pub mod reduce;
pub mod smear;
#[cfg(test)]
mod solver_tests;
#[cfg(test)]
mod tests;

pub use blocks::{
    distributed_clover, distributed_mobius, distributed_staggered, distributed_wilson,
    fill_link_halos, kernel_boundary, unit_clover_on_halo_sites, DistributedBlocks,
    DistributedSchur,
};
pub use field::{DistributedField, SharedComm};
pub use halo::{exchange_halos, exchange_projected_halos, face_tag};
pub use hop::{DistributedError, DistributedHop};
pub use local_preconditioner::{padded_block_links, RankLocal};

use qdsl_core::field::ColourSpinorField;
use qdsl_core::lattice::ExtendedLattice;
use qdsl_core::{Complex, Real};

/// The indices (within the subset of `layout`) of the sites outside the interior of
/// `ext`: the halo sites of a field of that layout.
pub(crate) fn halo_site_indices(
    layout: &qdsl_core::field::SpinorLayout,
    ext: &ExtendedLattice,
) -> Vec<usize> {
    (0..layout.sites_per_slice())
        .filter(|&i| ext.local_of_ext(layout.coords_of_site(i)).is_none())
        .collect()
}

/// Sets the sites `halo` (from [`halo_site_indices`]) of every s-slice of `field` to zero.
pub(crate) fn zero_sites<T: Real>(field: &mut ColourSpinorField<T>, halo: &[usize]) {
    let zero = Complex::new(T::zero(), T::zero());
    for s in 0..field.layout().ls() {
        for &i in halo {
            field.site_mut(s, i).fill(zero);
        }
    }
}

/// Sets every site of `field` outside the interior of `ext` to zero.
pub(crate) fn zero_halo_sites<T: Real>(field: &mut ColourSpinorField<T>, ext: &ExtendedLattice) {
    let halo = halo_site_indices(field.layout(), ext);
    zero_sites(field, &halo);
}
