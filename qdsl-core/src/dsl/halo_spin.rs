//! Spin-projected faces: which projector a stencil applies to each halo of a distributed
//! field, read from the stencil's spec, so that a face can carry the projected half
//! spinor (12 reals instead of 24) and the receiver reconstruct what the kernel reads.
//!
//! A Wilson-type hop reads the source at x + μ̂ only through (1 − γ_μ) and at x − μ̂ only
//! through (1 + γ_μ) (signs flipped for the dagger: Γ (1 + s γ_μ) Γ = 1 − s γ_μ with
//! Γ = γ5). The halo site beyond the forward face of μ therefore needs only
//! h = (1 + s γ_μ) ψ (rank 2: [`ProjectorPlan`]'s two upper rows), not ψ. The receiver
//! stores
//!
//! χ = P ψ = ½ (1 + s γ_μ) ψ = ½ R h      (R: the plan's reconstruction),
//!
//! a projector (P² = P), and the unchanged hop kernel computes
//! (1 + s γ_μ) χ = 2 P P ψ = (1 + s γ_μ) ψ. In floating point: row r of the kernel's
//! projection of χ is χ_r + p_r χ_{c(r)} = h_r/2 + p_r p_{c(r)} h_r/2 = h_r/2 + h_r/2,
//! since p_r p_{c(r)} = 1 and a product by a phase in {±1, ±i} is exact (swaps and
//! signs); halving is exact (barring underflow to subnormals) and h/2 + h/2 = h, so the
//! kernel sees the very h it would compute from ψ on one process: the result is
//! bit-identical (f64, f32). Fixed-point fields store χ in their own format (a new
//! per-site norm): within that format's bound.

use super::ir::{FieldShape, Ir, Role, SpinOp};
use super::spin::ProjectorPlan;
use crate::lattice::Side;

/// The projector (1 + sign · γ_μ) a face carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FaceProjection {
    /// Direction of γ_μ.
    pub mu: usize,
    /// The sign in 1 ± γ_μ (±1).
    pub sign: i32,
}

impl FaceProjection {
    /// The lowering of (1 + sign · γ_μ) to half spinors.
    pub fn plan(self) -> ProjectorPlan {
        ProjectorPlan::new(self.mu, self.sign)
    }

    /// A short tag for kernel names: `p3m` for (1 − γ_t), `p0p` for (1 + γ_x).
    pub fn tag(self) -> String {
        format!("p{}{}", self.mu, if self.sign > 0 { 'p' } else { 'm' })
    }
}

/// The projection of each halo of a stencil's source field, by direction and side:
/// `by_side[μ][side]` is the projector every term reading the halo on `side` of μ
/// applies (`None`: some term reads the full spinor there, or the source is not a
/// 4-spin field: the face must carry whole sites).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HaloProjections {
    /// Indexed by direction, then [`Side`] (backward 0, forward 1).
    pub by_side: [[Option<FaceProjection>; 2]; 4],
}

impl HaloProjections {
    /// The projections of `ir`'s source halos, of the operator (`dagger` false) or of
    /// its adjoint through the dagger knob (every projector sign flipped).
    ///
    /// The source is the one 4-spin input field the terms read at displaced sites; a
    /// spec reading several such fields, or none, gets no projection anywhere.
    pub fn of(ir: &Ir, dagger: bool) -> Self {
        let mut out = Self::default();
        let spinor_inputs = |name: &str| {
            ir.fields.iter().any(|f| {
                f.name == name
                    && f.role == Role::In
                    && matches!(f.shape, FieldShape::Spinor { nspin: 4, .. })
            })
        };
        let mut hopped = ir
            .terms
            .iter()
            .filter(|t| t.hop.steps != 0)
            .map(|t| t.source.as_str());
        let Some(source) = hopped.next() else {
            return out;
        };
        if hopped.any(|s| s != source) || !spinor_inputs(source) {
            return out;
        }
        for mu in 0..4 {
            for side in Side::BOTH {
                let forward = side == Side::Forward;
                let mut spins = ir.terms.iter().filter(|t| {
                    t.source == source
                        && t.hop.steps != 0
                        && t.hop.mu == mu
                        && (t.hop.steps > 0) == forward
                });
                let projection = |t: &super::ir::Term| match t.spin {
                    SpinOp::Projector { mu, sign } => Some(FaceProjection {
                        mu,
                        sign: if dagger { -sign } else { sign },
                    }),
                    _ => None,
                };
                let Some(first) = spins.next() else {
                    continue;
                };
                let p = projection(first);
                if spins.all(|t| projection(t) == p) {
                    out.by_side[mu][side as usize] = p;
                }
            }
        }
        out
    }

    /// The projection of the halo on `side` of μ.
    pub fn halo(&self, mu: usize, side: Side) -> Option<FaceProjection> {
        self.by_side[mu][side as usize]
    }

    /// The projection of the face a rank sends towards `side` of μ: the neighbour there
    /// stores it in its halo on the opposite side.
    pub fn sent(&self, mu: usize, side: Side) -> Option<FaceProjection> {
        self.halo(mu, side.opposite())
    }

    /// Whether no halo is projected.
    pub fn is_none(&self) -> bool {
        self.by_side.iter().flatten().all(Option::is_none)
    }
}

/// The half spinor h = (1 + s γ_μ) ψ of one site (24 reals: spin, colour, re/im) as
/// `plan` lowers it, 12 reals: h_r = ψ_r + p_r ψ_{c(r)} — the reference of the
/// generated pack kernels' arithmetic.
pub fn project_site<T: crate::real::Real>(psi: &[T; 24], plan: &ProjectorPlan) -> [T; 12] {
    let mut h = [T::zero(); 12];
    for r in 0..2 {
        let (c, p) = plan.project[r];
        for a in 0..3 {
            let (re, im) = times_phase(psi[6 * c + 2 * a], psi[6 * c + 2 * a + 1], p);
            h[6 * r + 2 * a] = psi[6 * r + 2 * a] + re;
            h[6 * r + 2 * a + 1] = psi[6 * r + 2 * a + 1] + im;
        }
    }
    h
}

/// χ = ½ R h, the projected site a receiver stores (module docs): χ_r = h_r/2 (r = 0,
/// 1), χ_s = p_s h_{c(s)}/2 (s = 2, 3) — the reference of the unpack kernels.
pub fn reconstruct_half_site<T: crate::real::Real>(h: &[T; 12], plan: &ProjectorPlan) -> [T; 24] {
    let half = T::from_f64(0.5);
    let mut chi = [T::zero(); 24];
    for k in 0..12 {
        chi[k] = h[k] * half;
    }
    for (k2, &(r, p)) in plan.reconstruct.iter().enumerate() {
        for a in 0..3 {
            let (re, im) = times_phase(h[6 * r + 2 * a], h[6 * r + 2 * a + 1], p);
            chi[6 * (2 + k2) + 2 * a] = re * half;
            chi[6 * (2 + k2) + 2 * a + 1] = im * half;
        }
    }
    chi
}

/// p · (re + i im) for a phase p ∈ {±1, ±i}, exactly.
fn times_phase<T: crate::real::Real>(re: T, im: T, p: super::spin::Phase) -> (T, T) {
    match (p.re, p.im) {
        (1, 0) => (re, im),
        (-1, 0) => (-re, -im),
        (0, 1) => (-im, re),
        _ => (im, -re),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsl::ir::{FieldDecl, Hop, Term};
    use crate::dsl::knobs::KnobSet;

    fn field(name: &str, nspin: usize, role: Role) -> FieldDecl {
        FieldDecl {
            name: name.into(),
            shape: FieldShape::Spinor { nspin, ncolour: 3 },
            role,
        }
    }

    fn term(spin: SpinOp, mu: usize, steps: i32) -> Term {
        Term {
            output: "out".into(),
            coeff: 1.0,
            spin,
            links: Vec::new(),
            source: "psi".into(),
            hop: Hop { mu, steps },
        }
    }

    fn ir(nspin: usize, terms: Vec<Term>) -> Ir {
        Ir {
            name: "test".into(),
            doc: String::new(),
            fields: vec![
                field("out", nspin, Role::Out),
                field("psi", nspin, Role::In),
            ],
            terms,
            knobs: KnobSet::default(),
        }
    }

    fn wilson_like() -> Ir {
        let mut terms = Vec::new();
        for mu in 0..4 {
            terms.push(term(SpinOp::Projector { mu, sign: -1 }, mu, 1));
            terms.push(term(SpinOp::Projector { mu, sign: 1 }, mu, -1));
        }
        ir(4, terms)
    }

    /// The Wilson hop reads x + μ̂ through 1 − γ_μ and x − μ̂ through 1 + γ_μ; its
    /// dagger the opposite; a face carries its receiver's halo projection.
    #[test]
    fn wilson_halos_carry_the_projector_of_their_hop() {
        let h = HaloProjections::of(&wilson_like(), false);
        let d = HaloProjections::of(&wilson_like(), true);
        for mu in 0..4 {
            assert_eq!(
                h.halo(mu, Side::Forward),
                Some(FaceProjection { mu, sign: -1 })
            );
            assert_eq!(
                h.halo(mu, Side::Backward),
                Some(FaceProjection { mu, sign: 1 })
            );
            assert_eq!(h.sent(mu, Side::Forward), h.halo(mu, Side::Backward));
            assert_eq!(
                d.halo(mu, Side::Forward),
                Some(FaceProjection { mu, sign: 1 })
            );
        }
    }

    /// A halo also read without projector, a mixed projector, a 1-spin source: whole
    /// sites.
    #[test]
    fn halos_read_unprojected_carry_whole_sites() {
        let mut mixed = wilson_like();
        mixed.terms.push(term(SpinOp::Identity, 2, 1));
        mixed
            .terms
            .push(term(SpinOp::Projector { mu: 1, sign: 1 }, 3, -1));
        let h = HaloProjections::of(&mixed, false);
        assert_eq!(h.halo(2, Side::Forward), None);
        assert_eq!(h.halo(3, Side::Backward), None);
        assert!(h.halo(2, Side::Backward).is_some());
        let staggered = ir(1, vec![term(SpinOp::Identity, 0, 1)]);
        assert!(HaloProjections::of(&staggered, false).is_none());
    }

    /// χ = ½ R h is a projector's image: projecting χ again gives h back exactly (the
    /// bit-identity argument of the module docs), for every direction and sign, in f32
    /// and f64, on values with full mantissas.
    #[test]
    fn projecting_the_stored_half_gives_the_half_spinor_back_exactly() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        for mu in 0..4 {
            for sign in [-1, 1] {
                let plan = ProjectorPlan::new(mu, sign);
                for _ in 0..50 {
                    let psi64: [f64; 24] = std::array::from_fn(|_| next());
                    let h = project_site(&psi64, &plan);
                    let again = project_site(&reconstruct_half_site(&h, &plan), &plan);
                    assert_eq!(h.map(f64::to_bits), again.map(f64::to_bits));
                    let psi32: [f32; 24] = psi64.map(|x| x as f32);
                    let h = project_site(&psi32, &plan);
                    let again = project_site(&reconstruct_half_site(&h, &plan), &plan);
                    assert_eq!(h.map(f32::to_bits), again.map(f32::to_bits));
                }
                // χ = P ψ with P = ½(1 + s γ_μ) (dense): for ψ = e_k, χ is column k.
                let g = crate::dsl::spin::GAMMA[mu];
                for k in 0..4 {
                    let mut psi = [0.0f64; 24];
                    psi[6 * k] = 1.0;
                    let chi = reconstruct_half_site(&project_site(&psi, &plan), &plan);
                    for s in 0..4 {
                        let mut want = (if s == k { 0.5 } else { 0.0 }, 0.0);
                        if g[s].col == k {
                            want.0 += 0.5 * f64::from(sign * g[s].phase.re);
                            want.1 += 0.5 * f64::from(sign * g[s].phase.im);
                        }
                        assert_eq!((chi[6 * s], chi[6 * s + 1]), want, "mu {mu} s {s} k {k}");
                    }
                }
            }
        }
    }
}
