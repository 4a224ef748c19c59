//! The textbook Möbius domain-wall operator, hand-written in plain loops over the full 5D
//! lattice (test support: never generated, and independent of [`super::ChiralSOperator`]
//! and the generated kernels; the 4D Wilson hop is the textbook hop of the operator
//! tests, itself plain loops).
//!
//! Fields are `Vec<Complex<f64>>` in the 5D layout of the library's fields on the full
//! lattice: index ((s · V + cb) · 4 + σ) · 3 + a.
//!
//! D ψ(s) = D_W [b_s ψ(s) + c_s (S ψ)(s)] + ψ(s) − (S ψ)(s),
//! (S ψ)(s) = P₋ ψ(s + 1) + P₊ ψ(s − 1), ψ(Ls) ≡ −m_f ψ(0), ψ(−1) ≡ −m_f ψ(Ls − 1),
//! D_W = (4 − M5) − ½ H, P± = (1 ± γ5)/2;
//! D† ψ = (b* + S† c*) D_W† ψ + ψ − S† ψ,  D_W† = (4 − M5) − ½ γ5 H γ5,
//! (S† ψ)(s) = P₋ ψ(s − 1) + P₊ ψ(s + 1) with the same −m_f across the wall.

#![allow(clippy::needless_range_loop)] // index loops mirror the formulas' indices

use crate::operator::tests::textbook_wilson_hop;
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::BoundaryConditions;
use qdsl_core::math::Gamma;
use qdsl_core::Complex;

pub(crate) type C = Complex<f64>;

/// The parameters, spelled out (no validation: the tests pass sensible values).
#[derive(Clone, Debug)]
pub(crate) struct Textbook {
    pub ls: usize,
    pub b: Vec<C>,
    pub c: Vec<C>,
    pub m5: f64,
    pub mass: f64,
}

impl Textbook {
    /// The parameters of a [`super::MobiusParams`].
    pub fn of(p: &super::MobiusParams) -> Self {
        Self {
            ls: p.ls(),
            b: p.b5().to_vec(),
            c: p.c5().to_vec(),
            m5: p.m5(),
            mass: p.mass(),
        }
    }
}

/// γ5 as a dense 4 × 4 matrix (diag(1, 1, −1, −1)).
fn gamma5() -> [[C; 4]; 4] {
    Gamma::Five.matrix::<f64>().0
}

/// (P± φ) for one spinor at a site (12 components), P± = (1 ± γ5)/2 as a dense product.
fn chiral(sign: f64, phi: &[C]) -> Vec<C> {
    let g5 = gamma5();
    let mut out = vec![C::new(0.0, 0.0); 12];
    for s in 0..4 {
        for t in 0..4 {
            let id = if s == t { 1.0 } else { 0.0 };
            let p = (C::new(id, 0.0) + g5[s][t] * sign) * 0.5;
            for a in 0..3 {
                out[s * 3 + a] += p * phi[t * 3 + a];
            }
        }
    }
    out
}

/// γ5 on a 4D field.
fn gamma5_field(psi: &[C]) -> Vec<C> {
    let g5 = gamma5();
    let mut out = vec![C::new(0.0, 0.0); psi.len()];
    for site in 0..psi.len() / 12 {
        for s in 0..4 {
            for a in 0..3 {
                out[site * 12 + s * 3 + a] = g5[s][s] * psi[site * 12 + s * 3 + a];
            }
        }
    }
    out
}

impl Textbook {
    /// S ψ (`dagger`: S† ψ) on the 5D field, `sites` 4D sites per slice.
    pub fn s_hop(&self, psi: &[C], sites: usize, dagger: bool) -> Vec<C> {
        let (ls, n) = (self.ls, sites * 12);
        let mut out = vec![C::new(0.0, 0.0); psi.len()];
        for s in 0..ls {
            // (slice, factor) read by P₋ and by P₊.
            let up = if s + 1 < ls {
                (s + 1, 1.0)
            } else {
                (0, -self.mass)
            };
            let down = if s > 0 {
                (s - 1, 1.0)
            } else {
                (ls - 1, -self.mass)
            };
            let (minus_from, plus_from) = if dagger { (down, up) } else { (up, down) };
            for x in 0..sites {
                let site = |t: usize| &psi[t * n + x * 12..t * n + x * 12 + 12];
                let pm = chiral(-1.0, site(minus_from.0));
                let pp = chiral(1.0, site(plus_from.0));
                for k in 0..12 {
                    out[s * n + x * 12 + k] = pm[k] * minus_from.1 + pp[k] * plus_from.1;
                }
            }
        }
        out
    }

    /// D_W ψ on every slice (`dagger`: D_W† = (4 − M5) − ½ γ5 H γ5).
    pub fn wilson(
        &self,
        u: &GaugeField<f64>,
        bc: &BoundaryConditions,
        psi: &[C],
        dagger: bool,
    ) -> Vec<C> {
        let n = u.lattice().volume() * 12;
        let mut out = Vec::with_capacity(psi.len());
        for s in 0..self.ls {
            let slice = &psi[s * n..(s + 1) * n];
            let h = if dagger {
                gamma5_field(&textbook_wilson_hop(u, &gamma5_field(slice), bc))
            } else {
                textbook_wilson_hop(u, slice, bc)
            };
            for k in 0..n {
                out.push(slice[k] * (4.0 - self.m5) - h[k] * 0.5);
            }
        }
        out
    }

    /// Σ_s-slice coefficient times field: out(s) = f_s ψ(s).
    fn per_slice(&self, f: &[C], psi: &[C], conj: bool) -> Vec<C> {
        let n = psi.len() / self.ls;
        psi.iter()
            .enumerate()
            .map(|(k, z)| {
                let c = f[k / n];
                z * if conj { c.conj() } else { c }
            })
            .collect()
    }

    /// The Möbius operator D ψ (`dagger`: D† ψ) on the full 5D lattice.
    pub fn apply(
        &self,
        u: &GaugeField<f64>,
        bc: &BoundaryConditions,
        psi: &[C],
        dagger: bool,
    ) -> Vec<C> {
        let sites = u.lattice().volume();
        if dagger {
            let w = self.wilson(u, bc, psi, true);
            let bw = self.per_slice(&self.b, &w, true);
            let scw = self.s_hop(&self.per_slice(&self.c, &w, true), sites, true);
            let sp = self.s_hop(psi, sites, true);
            (0..psi.len())
                .map(|k| bw[k] + scw[k] + psi[k] - sp[k])
                .collect()
        } else {
            let sp = self.s_hop(psi, sites, false);
            let b = self.per_slice(&self.b, psi, false);
            let c = self.per_slice(&self.c, &sp, false);
            let phi: Vec<C> = b.iter().zip(&c).map(|(x, y)| x + y).collect();
            let w = self.wilson(u, bc, &phi, false);
            (0..psi.len()).map(|k| w[k] + psi[k] - sp[k]).collect()
        }
    }

    /// M5 ψ = (4 − M5)(b + c S) ψ + (1 − S) ψ on `sites` sites per slice (`dagger`: M5†).
    pub fn m5(&self, psi: &[C], sites: usize, dagger: bool) -> Vec<C> {
        let four = 4.0 - self.m5;
        if dagger {
            let b = self.per_slice(&self.b, psi, true);
            let sc = self.s_hop(&self.per_slice(&self.c, psi, true), sites, true);
            let sp = self.s_hop(psi, sites, true);
            (0..psi.len())
                .map(|k| (b[k] + sc[k]) * four + psi[k] - sp[k])
                .collect()
        } else {
            let sp = self.s_hop(psi, sites, false);
            let b = self.per_slice(&self.b, psi, false);
            let c = self.per_slice(&self.c, &sp, false);
            (0..psi.len())
                .map(|k| (b[k] + c[k]) * four + psi[k] - sp[k])
                .collect()
        }
    }

    /// M_φ ψ = (b + c S) ψ (`dagger`: b* + S† c*).
    pub fn m_phi(&self, psi: &[C], sites: usize, dagger: bool) -> Vec<C> {
        let b = self.per_slice(&self.b, psi, dagger);
        let c = if dagger {
            self.s_hop(&self.per_slice(&self.c, psi, true), sites, true)
        } else {
            self.per_slice(&self.c, &self.s_hop(psi, sites, false), false)
        };
        b.iter().zip(&c).map(|(x, y)| x + y).collect()
    }

    /// M5⁻¹ ψ for constant b, c in QUDA's closed form: with α = b(4 − M5) + 1,
    /// κ = (1 − c(4 − M5))/α, on P₋ (M5⁻¹)(s, s') = κ^{(s'−s) mod Ls} (−m_f if s' < s) /
    /// (α (1 + m_f κ^Ls)), on P₊ the same with s − s' (−m_f if s' > s).
    pub fn m5_inverse(&self, psi: &[C], sites: usize) -> Vec<C> {
        let (ls, n) = (self.ls, sites * 12);
        let four = 4.0 - self.m5;
        let alpha = self.b[0] * four + 1.0;
        let kappa = (-(self.c[0] * four) + 1.0) / alpha;
        let den = alpha * (kappa.powu(ls as u32) * self.mass + 1.0);
        let mut out = vec![C::new(0.0, 0.0); psi.len()];
        for s in 0..ls {
            for t in 0..ls {
                let minus = kappa.powu(((t + ls - s) % ls) as u32)
                    * if t < s { -self.mass } else { 1.0 }
                    / den;
                let plus = kappa.powu(((s + ls - t) % ls) as u32)
                    * if t > s { -self.mass } else { 1.0 }
                    / den;
                for x in 0..sites {
                    let src = &psi[t * n + x * 12..t * n + x * 12 + 12];
                    let (pm, pp) = (chiral(-1.0, src), chiral(1.0, src));
                    for k in 0..12 {
                        out[s * n + x * 12 + k] += pm[k] * minus + pp[k] * plus;
                    }
                }
            }
        }
        out
    }
}
