//! A box of lattice sites and the thread → site map of a launch over one parity of it:
//! the sites a [`Region::SubBox`](crate::dsl::variant::Region::SubBox) kernel computes.
//!
//! # The thread → site map (one definition: the generated CUDA prints the same steps)
//! For the box `[lo, lo + n)` and output parity p, thread i computes the site x = lo + c,
//! c the mixed-radix digits (c₀ fastest) of a box index, paired along a direction of even
//! extent so that every thread has a site of the parity:
//!
//! * n₀ even (pairs along x): c the digits of 2i in (n₀, n₁, n₂, n₃); then
//!   x₀ += (x₀ + x₁ + x₂ + x₃ + p) mod 2;
//! * else n₁ even (pairs along y; the slabs of odd depth across x): c₀ = i mod n₀,
//!   j = ⌊i / n₀⌋, c₁ = 2 (j mod n₁/2), (c₂, c₃) the digits of ⌊j / (n₁/2)⌋ in (n₂, n₃);
//!   then x₁ += (x₀ + x₁ + x₂ + x₃ + p) mod 2;
//! * else (no pairing): c the digits of i, and the thread is idle unless
//!   x₀ + x₁ + x₂ + x₃ ≡ p (mod 2).
//!
//! Each pair of sites (x, x + ê_π) along the pairing direction π holds one site of each
//! parity, so the [`SiteBox::threads`] = |box|/2 threads cover the parity-p sites once
//! each. Two boxes of the same extents whose corners have the same parity (a rank's
//! boundary slab and its neighbour's halo slab: the same global sites) map thread i to
//! corresponding sites: the order of a face buffer.

use super::Coords;

/// The sites `lo ≤ x < lo + n` (per direction) of a lattice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SiteBox {
    /// The lowest corner.
    pub lo: Coords,
    /// The extents (0 in some direction: an empty box).
    pub n: Coords,
}

impl SiteBox {
    /// The box `lo ≤ x < hi` (empty where `hi ≤ lo` in some direction).
    pub fn between(lo: Coords, hi: Coords) -> Self {
        Self {
            lo,
            n: std::array::from_fn(|mu| hi[mu].saturating_sub(lo[mu])),
        }
    }

    /// The number of sites.
    pub fn volume(&self) -> usize {
        self.n.iter().product()
    }

    /// Whether the box holds no site.
    pub fn is_empty(&self) -> bool {
        self.volume() == 0
    }

    /// Whether `x` lies in the box.
    pub fn contains(&self, x: Coords) -> bool {
        (0..4).all(|mu| x[mu] >= self.lo[mu] && x[mu] < self.lo[mu] + self.n[mu])
    }

    /// The direction the map pairs sites along (module docs): 0 with n₀ even, else 1
    /// with n₁ even, else none.
    pub fn pairing(&self) -> Option<usize> {
        (0..2).find(|&mu| self.n[mu].is_multiple_of(2))
    }

    /// The threads of a launch over one parity of the box (the kernel's `n_out`): |box|/2
    /// when the map pairs sites, else |box| (half of them idle).
    pub fn threads(&self) -> usize {
        match self.pairing() {
            Some(_) => self.volume() / 2,
            None => self.volume(),
        }
    }

    /// The site thread `i` (< [`Self::threads`]) computes for output parity `parity`, or
    /// `None` when the thread is idle (module docs).
    pub fn site_of_thread(&self, i: usize, parity: usize) -> Option<Coords> {
        let n = self.n;
        let mut c = [0; 4];
        let mut r = match self.pairing() {
            Some(0) => {
                let r = 2 * i;
                c[0] = r % n[0];
                c[1] = (r / n[0]) % n[1];
                r / n[0] / n[1]
            }
            Some(_) => {
                c[0] = i % n[0];
                let j = i / n[0];
                c[1] = 2 * (j % (n[1] / 2));
                j / (n[1] / 2)
            }
            None => {
                c[0] = i % n[0];
                c[1] = (i / n[0]) % n[1];
                i / n[0] / n[1]
            }
        };
        c[2] = r % n[2];
        r /= n[2];
        c[3] = r;
        let mut x: Coords = std::array::from_fn(|mu| self.lo[mu] + c[mu]);
        let wrong = (x.iter().sum::<usize>() + parity) % 2;
        match self.pairing() {
            Some(pi) => {
                x[pi] += wrong;
                Some(x)
            }
            None => (wrong == 0).then_some(x),
        }
    }

    /// The sites of `parity` in the box, in thread order.
    pub fn sites_of_parity(&self, parity: usize) -> Vec<Coords> {
        if self.is_empty() {
            return Vec::new();
        }
        (0..self.threads())
            .filter_map(|i| self.site_of_thread(i, parity))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The map covers exactly the box's sites of the parity, each once, for even and
    /// odd extents along x and any corner parity.
    #[test]
    fn threads_cover_each_site_of_the_parity_once() {
        for (lo, n) in [
            ([0, 0, 0, 0], [4, 2, 2, 6]),
            ([1, 2, 0, 3], [2, 3, 1, 2]),
            ([3, 0, 1, 1], [1, 4, 2, 2]),
            ([2, 1, 1, 0], [3, 3, 3, 3]),
            ([0, 1, 2, 1], [3, 4, 2, 2]),
            ([5, 0, 1, 1], [1, 2, 3, 3]),
        ] {
            let b = SiteBox { lo, n };
            for parity in 0..2 {
                let mut got = b.sites_of_parity(parity);
                let mut expected: Vec<Coords> = Vec::new();
                for t in 0..n[3] {
                    for z in 0..n[2] {
                        for y in 0..n[1] {
                            for x in 0..n[0] {
                                let c = [lo[0] + x, lo[1] + y, lo[2] + z, lo[3] + t];
                                if c.iter().sum::<usize>() % 2 == parity {
                                    expected.push(c);
                                }
                            }
                        }
                    }
                }
                assert_eq!(got.len(), expected.len(), "{lo:?} {n:?} parity {parity}");
                got.sort();
                expected.sort();
                assert_eq!(got, expected, "{lo:?} {n:?} parity {parity}");
            }
        }
    }

    /// Boxes with an even extent along x or y need no idle thread.
    #[test]
    fn pairing_uses_every_thread() {
        for n in [[4, 3, 3, 3], [1, 4, 3, 3], [3, 2, 4, 4]] {
            let b = SiteBox {
                lo: [1, 0, 2, 1],
                n,
            };
            assert!(b.pairing().is_some());
            for parity in 0..2 {
                assert_eq!(b.sites_of_parity(parity).len(), b.threads(), "{n:?}");
            }
        }
    }

    /// A boundary slab and a halo slab of equal extents and corner parity map thread i
    /// to the same relative site.
    #[test]
    fn boxes_of_equal_shape_and_corner_parity_correspond() {
        let a = SiteBox {
            lo: [1, 2, 2, 0],
            n: [1, 4, 2, 4],
        };
        let b = SiteBox {
            lo: [6, 1, 2, 0],
            n: [1, 4, 2, 4],
        };
        for parity in 0..2 {
            for (x, y) in a
                .sites_of_parity(parity)
                .into_iter()
                .zip(b.sites_of_parity(parity))
            {
                let dx: Vec<isize> = (0..4).map(|mu| x[mu] as isize - y[mu] as isize).collect();
                assert_eq!(dx, vec![-5, 1, 0, 0]);
            }
        }
    }

    #[test]
    fn empty_box_has_no_sites() {
        let b = SiteBox::between([2, 0, 0, 0], [2, 4, 4, 4]);
        assert!(b.is_empty());
        assert_eq!(b.threads(), 0);
        assert!(b.sites_of_parity(0).is_empty());
    }
}
