//! MILC's staggered signs.
//!
//! Staggered kernels take the staggered phases and the antiperiodic time boundary folded
//! into their links (DESIGN.md): the one-link link U_μ(x) becomes η_μ(x)·U_μ(x), times −1
//! for μ = t on the last time slice, with
//!
//! ```text
//! η_x(x) = (−1)^t,   η_y(x) = (−1)^(t+x),   η_z(x) = (−1)^(t+x+y),   η_t(x) = 1.
//! ```
//!
//! A link of n steps in direction μ from x — the product of the n folded one-link links
//! along x, x + μ̂, …, x + (n−1)μ̂, as the Naik link (n = 3) of asqtad is built — carries
//! the product of their signs. η_μ does not depend on x_μ, so the n phases are equal, and
//! the boundary flips the links of the path that start on the last time slice, of which
//! there are ⌊(x_t + n)/L_t⌋ for 0 ≤ x_t < L_t:
//!
//! ```text
//! s_μ^(n)(x) = η_μ(x)^n · (−1)^w,   w = ⌊(x_t + n)/L_t⌋ for μ = t, else w = 0.
//! ```
//!
//! For an SU(3) thin field the folded n-step link is s·V with V ∈ SU(3), so knowing s
//! from the coordinates makes two rows of V enough to store it (the long-link
//! compression recon 12 + sign, [`crate::format::link::ScaledCompression::Recon12`]).
//! The CUDA emitter computes the same sign in the kernel (`staggered_sign` there, from
//! the coordinates of the term's site and the link's offset).

use super::{Coords, Lattice};

/// MILC's staggered phase η_μ(x) ∈ {+1, −1} (module docs).
pub fn staggered_phase(c: Coords, mu: usize) -> i32 {
    let [x, y, _, t] = c;
    let exponent = match mu {
        0 => t,
        1 => t + x,
        2 => t + x + y,
        _ => 0,
    };
    parity_sign(exponent)
}

/// The sign s_μ^(n)(x) ∈ {+1, −1} of a folded staggered link of `steps` = n steps in
/// direction `mu` from `c` on `lattice` (staggered phases and the antiperiodic time
/// boundary, module docs).
pub fn staggered_link_sign(lattice: &Lattice, c: Coords, mu: usize, steps: usize) -> i32 {
    let eta = if !steps.is_multiple_of(2) {
        staggered_phase(c, mu)
    } else {
        1
    };
    let wraps = if mu == 3 {
        (c[3] + steps) / lattice.extent(3)
    } else {
        0
    };
    eta * parity_sign(wraps)
}

/// (−1)^k.
fn parity_sign(k: usize) -> i32 {
    if k.is_multiple_of(2) {
        1
    } else {
        -1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// η at a few sites by hand: at the origin every η is 1; at t = 1 η_x = η_y = η_z =
    /// −1; at x = 1 only η_y and η_z flip; at y = 1 only η_z; z never enters; η_t ≡ 1;
    /// at (1, 1, 5, 2): η_x = (−1)², η_y = (−1)³, η_z = (−1)⁴.
    #[test]
    fn phases_by_hand() {
        let eta = |c| [0, 1, 2, 3].map(|mu| staggered_phase(c, mu));
        assert_eq!(eta([0, 0, 0, 0]), [1, 1, 1, 1]);
        assert_eq!(eta([0, 0, 0, 1]), [-1, -1, -1, 1]);
        assert_eq!(eta([1, 0, 0, 0]), [1, -1, -1, 1]);
        assert_eq!(eta([0, 1, 0, 0]), [1, 1, -1, 1]);
        assert_eq!(eta([0, 0, 1, 0]), [1, 1, 1, 1]);
        assert_eq!(eta([1, 1, 5, 2]), [1, -1, 1, 1]);
    }

    /// The sign of an n-step link is the product of the folded one-link signs along its
    /// path, written out link by link here (η_μ(x + kμ̂) and the last-slice flip of each
    /// link), for every site of a 4 × 4 × 4 × 6 lattice, every direction and n = 1…4.
    #[test]
    fn link_sign_is_the_product_along_the_path() {
        let lat = Lattice::new([4, 4, 4, 6]).unwrap();
        let dims = lat.dims();
        for cb in 0..lat.volume() {
            let c = lat.coords_of_cb(cb);
            for mu in 0..4 {
                for n in 1..=4 {
                    let mut product = 1;
                    let mut y = c;
                    for _ in 0..n {
                        let flip = mu == 3 && y[3] + 1 == dims[3];
                        product *= staggered_phase(y, mu) * if flip { -1 } else { 1 };
                        y[mu] = (y[mu] + 1) % dims[mu];
                    }
                    assert_eq!(
                        staggered_link_sign(&lat, c, mu, n),
                        product,
                        "{c:?} mu {mu} n {n}"
                    );
                }
            }
        }
    }

    /// On L_t = 2 a three-step t link starting at t = 1 crosses the boundary twice (the
    /// links at t = 1 and at t = 1 again): no flip; from t = 0 once.
    #[test]
    fn short_time_extent_counts_every_crossing() {
        let lat = Lattice::new([2, 2, 2, 2]).unwrap();
        assert_eq!(staggered_link_sign(&lat, [0, 0, 0, 1], 3, 3), 1);
        assert_eq!(staggered_link_sign(&lat, [0, 0, 0, 0], 3, 3), -1);
    }
}
