//! Global sums of distributed host fields: each rank sums its interior sites in a fixed
//! order ([`qdsl_core::reduce::ordered_sum_by_index`] over the interior sites,
//! lexicographic), then [`Communicator::all_reduce_sum_f64`] adds the partials in rank
//! order. The result is the same bits on every rank and in every run for a given process
//! grid; against one process it differs only by the summation order (a different grid
//! is a different order).

use super::DistributedError;
use crate::comm::Communicator;
use qdsl_core::field::distributed::SiteField;
use qdsl_core::field::{ColourSpinorField, FieldError};
use qdsl_core::lattice::ExtendedLattice;
use qdsl_core::reduce::ordered_sum_by_index;
use qdsl_core::{Complex, Real};

/// Indices (within the field's subset) of the interior sites of `ext` the field holds,
/// lexicographic: the sites every global sum of this rank runs over.
pub fn interior_sites<T: Real>(field: &ColourSpinorField<T>, ext: &ExtendedLattice) -> Vec<usize> {
    ext.interior()
        .into_iter()
        .filter_map(|c| field.index_of(c))
        .collect()
}

fn widen<T: Real>(z: Complex<T>) -> Complex<f64> {
    Complex::new(z.re.to_f64(), z.im.to_f64())
}

/// ‖ψ‖² = Σ over every rank's interior sites (all s-slices, spins, colours) of |ψ|², in
/// f64, deterministic (see the module docs). Every rank calls it together.
pub fn norm_sqr<T: Real, C: Communicator>(
    comm: &mut C,
    psi: &ColourSpinorField<T>,
    ext: &ExtendedLattice,
) -> Result<f64, DistributedError> {
    norm_sqr_over(comm, psi, &interior_sites(psi, ext))
}

/// [`norm_sqr`] over this rank's `sites` (from [`interior_sites`], computed once).
pub fn norm_sqr_over<T: Real, C: Communicator>(
    comm: &mut C,
    psi: &ColourSpinorField<T>,
    sites: &[usize],
) -> Result<f64, DistributedError> {
    let partial = ordered_sum_by_index(sites.len(), |k| {
        (0..psi.layout().ls())
            .map(|s| {
                psi.site(s, sites[k])
                    .iter()
                    .map(|&z| widen(z).norm_sqr())
                    .sum::<f64>()
            })
            .sum::<f64>()
    });
    Ok(comm.all_reduce_sum_f64("global norm", &[partial])?[0])
}

/// ⟨ψ, χ⟩ = Σ over every rank's interior sites of ψ* χ (conjugate-linear in ψ), in f64,
/// deterministic. The layouts must agree. Every rank calls it together.
pub fn inner_product<T: Real, C: Communicator>(
    comm: &mut C,
    psi: &ColourSpinorField<T>,
    chi: &ColourSpinorField<T>,
    ext: &ExtendedLattice,
) -> Result<Complex<f64>, DistributedError> {
    inner_product_over(comm, psi, chi, &interior_sites(psi, ext))
}

/// [`inner_product`] over this rank's `sites` (from [`interior_sites`]).
pub fn inner_product_over<T: Real, C: Communicator>(
    comm: &mut C,
    psi: &ColourSpinorField<T>,
    chi: &ColourSpinorField<T>,
    sites: &[usize],
) -> Result<Complex<f64>, DistributedError> {
    if psi.layout() != chi.layout() {
        return Err(DistributedError::Distribution(
            FieldError::LayoutMismatch {
                expected: psi.layout().to_string(),
                found: chi.layout().to_string(),
            }
            .into(),
        ));
    }
    let partial = ordered_sum_by_index(sites.len(), |k| {
        (0..psi.layout().ls())
            .map(|s| {
                let (p, c) = (psi.site(s, sites[k]), chi.site(s, sites[k]));
                p.iter()
                    .zip(c)
                    .map(|(&a, &b)| widen(a).conj() * widen(b))
                    .sum::<Complex<f64>>()
            })
            .sum::<Complex<f64>>()
    });
    let sum = comm.all_reduce_sum_f64("global inner product", &[partial.re, partial.im])?;
    Ok(Complex::new(sum[0], sum[1]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::{run_ranks, CommConfig};
    use qdsl_core::field::distributed::scatter;
    use qdsl_core::field::{SiteSubset, SpinorLayout};
    use qdsl_core::lattice::{Decomposition, Lattice, Lattice5D, Parity, ProcessGrid};

    fn ext(global: Lattice, grid: [usize; 4]) -> ExtendedLattice {
        let d = Decomposition::new(global, ProcessGrid::new(grid).unwrap()).unwrap();
        ExtendedLattice::new(d, 1).unwrap()
    }

    /// On a 5D one-parity field (halos filled with garbage, which must not count): the
    /// global norm and inner product are the same bits on every rank and in a second run,
    /// agree with the single-process sums to 1e-14 relative, and are exact on a field of
    /// small integers (every partial sum exact, so the order cannot matter).
    #[test]
    fn global_sums_are_deterministic_and_equal_the_single_process_sums() {
        let global = Lattice::new([4, 4, 4, 8]).unwrap();
        let layout = SpinorLayout::domain_wall(
            Lattice5D::new(global.dims(), 2).unwrap(),
            SiteSubset::Single(Parity::Even),
        );
        let psi = ColourSpinorField::<f64>::gaussian(layout, 81);
        let chi = ColourSpinorField::<f64>::gaussian(layout, 82);
        let ints = ColourSpinorField::<f64>::from_fn(layout, |s, x, spin, a| {
            Complex::new((x[0] + 2 * x[3] + s) as f64, (spin + a) as f64 - 3.0)
        });
        for grid in [[1, 1, 1, 2], [2, 2, 2, 2]] {
            let e = ext(global, grid);
            let run = || {
                run_ranks(
                    e.decomposition().size(),
                    CommConfig::default(),
                    |mut comm| {
                        let r = comm.rank();
                        let mut parts = [&psi, &chi, &ints].map(|f| scatter(f, &e, r).unwrap());
                        for p in &mut parts {
                            // Halo sites hold garbage: only interiors may count.
                            let n = p.layout().sites_per_slice();
                            for i in 0..n {
                                if e.local_of_ext(p.layout().coords_of_site(i)).is_none() {
                                    p.site_mut(0, i).fill(Complex::new(1e30, 1e30));
                                }
                            }
                        }
                        let n = norm_sqr(&mut comm, &parts[0], &e).unwrap();
                        let d = inner_product(&mut comm, &parts[0], &parts[1], &e).unwrap();
                        let k = norm_sqr(&mut comm, &parts[2], &e).unwrap();
                        (n.to_bits(), d.re.to_bits(), d.im.to_bits(), k)
                    },
                )
            };
            let first = run();
            assert!(
                first.iter().all(|x| *x == first[0]),
                "{grid:?}: ranks differ"
            );
            assert_eq!(run(), first, "{grid:?}: runs differ");
            let (n, re, im, k) = first[0];
            let single = psi.norm_sqr();
            assert!((f64::from_bits(n) - single).abs() <= 1e-14 * single);
            let dot = psi.dot(&chi).unwrap();
            let got = Complex::new(f64::from_bits(re), f64::from_bits(im));
            assert!((got - dot).norm() <= 1e-13 * single);
            assert_eq!(k, ints.norm_sqr(), "{grid:?}");
        }
    }
}
