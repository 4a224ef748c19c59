//! Lowering: from the spec's terms to what the emitters generate.
//!
//! * checks the IR (one output; sources are inputs of the output's shape; links are gauge
//!   fields whose path joins x to the source site; hops of 0, 1 or 3 sites);
//! * decides between 3 × 3 colour links and dense links ([`Lowered::dense`]): a spec on
//!   `Spinor<NS, NC>` fields with NC ≠ 3, or with a `Gauge<N>` field of N ≠ 3, has dense
//!   links of N = NS · NC ([`crate::field::DenseLinkField`]) that multiply the whole
//!   spin-colour vector of the source site; spin operators then are the identity only
//!   (projectors, the twist and the clover matrix need 4 × 3 fields with 3 × 3 links);
//! * checks clover terms (a [`FieldShape::Clover`] input applied at the output site to a
//!   4 × 3 source, without links) and site-matrix terms X(x) φ(x) of dense specs (a
//!   `SiteMatrix<N>` input, [`FieldShape::site_matrix`], as the term's single link at x);
//! * recognises the projectors (1 ± γ_μ) on 4-spin sources and lowers them to
//!   half-spinor arithmetic ([`ProjectorPlan`]: project 4 × 3 → 2 × 3, link product on the
//!   12 reals, reconstruct and accumulate);
//! * derives the dagger form of every term (Γ D Γ, see [`super::variant::Variant`]);
//! * finds on which sites each input is read relative to the output parity.

use super::ir::{FieldDecl, FieldShape, Hop, Ir, Role, SpinOp, Term};
use super::spin::ProjectorPlan;
use super::{DslError, TermPart};

/// How a term's spin structure is computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpinLowering {
    /// S = 1: all `nspin` rows go through the link product (with dense links,
    /// [`Lowered::dense`], the whole spin-colour vector through one N × N product).
    Rows { nspin: usize },
    /// S = i γ5: all four rows through the link product, rows 0, 1 times i and rows 2, 3
    /// times −i (exact: swaps and signs).
    Twisted,
    /// S = 1 ± γ_μ: project to two rows, link product, reconstruct. `plan` is the
    /// operator of D, `dagger_plan` the one of Γ D Γ.
    Projected {
        plan: ProjectorPlan,
        dagger_plan: ProjectorPlan,
    },
    /// S = A(x), the clover matrix of the term's [`SpinOp::Clover`] field: both chiral
    /// 6 × 6 blocks times the source's spin pairs {0, 1} and {2, 3}. Γ A Γ = A for
    /// Γ = γ5 (A is block diagonal in chirality), so dagger leaves it unchanged.
    Clover {
        /// The clover field's name.
        field: String,
    },
}

/// A term ready for emission.
#[derive(Clone, Debug, PartialEq)]
pub struct LoweredTerm {
    /// The spec's term.
    pub term: Term,
    /// Spin structure.
    pub spin: SpinLowering,
    /// Coefficient in D.
    pub coeff: f64,
    /// Coefficient in Γ D Γ.
    pub dagger_coeff: f64,
    /// Whether the single link of a 3-site hop is a long link spanning the hop.
    pub long_link: bool,
}

/// On which sites an input field is read, relative to the output sites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadSites {
    /// Only at even distance (0): the output's own parity.
    SameParity,
    /// Only at odd distance (1, 3): the other parity.
    OtherParity,
    /// Both: the input must cover the whole lattice.
    Both,
    /// Gauge fields are always stored on the whole lattice.
    Gauge,
}

/// An input field and where it is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputUse {
    /// The declaration.
    pub decl: FieldDecl,
    /// Where it is read.
    pub reads: ReadSites,
}

/// A lowered spec.
#[derive(Clone, Debug, PartialEq)]
pub struct Lowered {
    /// The spec.
    pub ir: Ir,
    /// The output field.
    pub output: FieldDecl,
    /// The output's spins and colours.
    pub nspin: usize,
    /// Colours per spin of the output.
    pub ncolour: usize,
    /// The inputs, in declaration order.
    pub inputs: Vec<InputUse>,
    /// The terms.
    pub terms: Vec<LoweredTerm>,
    /// Whether the dagger knob is defined (4-spin fields with 3 × 3 links, or 1-spin
    /// fields with S = 1).
    pub dagger_supported: bool,
    /// `Some(N)` when the links are dense N × N matrices on the whole spin-colour vector,
    /// N = nspin · ncolour (`Gauge<N>` fields, multigrid coarse links); `None` for 3 × 3
    /// colour links applied to each spin row.
    pub dense: Option<usize>,
}

impl Lowered {
    /// The input called `name`.
    pub fn input(&self, name: &str) -> Option<&InputUse> {
        self.inputs.iter().find(|i| i.decl.name == name)
    }
}

/// A term's source must be a colour-spinor input of the output's shape.
fn check_source(src: &FieldDecl, output: &FieldDecl) -> Result<(), String> {
    let name = &src.name;
    if src.role == Role::Out {
        return Err(format!(
            "`{name}` is the output; the output cannot also be read"
        ));
    }
    match src.shape {
        shape if shape.is_site_matrix() => Err(format!(
            "`{name}` is a site matrix; a source must be a colour-spinor field (the site matrix \
             multiplies one: `{name}(x) * psi(x)`)"
        )),
        FieldShape::Gauge { .. } => Err(format!(
            "`{name}` is a gauge field; a source must be a colour-spinor field (links are \
             written `{name}[mu](x)`)"
        )),
        FieldShape::Clover => Err(format!(
            "`{name}` is a clover field; a source must be a colour-spinor field (the clover \
             matrix multiplies one: `{name}(x) * psi(x)`)"
        )),
        shape if shape != output.shape => Err(format!(
            "`{name}` is a {} field but the output `{}` is a {} field",
            shape.spec_name(),
            output.name,
            output.shape.spec_name()
        )),
        _ => Ok(()),
    }
}

/// Lowers (and checks) a spec. Errors of one term are [`DslError::InvalidTerm`], naming
/// the term and the part at fault.
pub fn lower(ir: &Ir) -> Result<Lowered, DslError> {
    let err = |reason: String| DslError::InvalidSpec {
        kernel: ir.name.clone(),
        reason,
    };
    for (k, f) in ir.fields.iter().enumerate() {
        if ir.fields[..k].iter().any(|g| g.name == f.name) {
            return Err(err(format!("field `{}` is declared twice", f.name)));
        }
    }
    let outputs: Vec<&FieldDecl> = ir.fields.iter().filter(|f| f.role == Role::Out).collect();
    let output = match outputs.as_slice() {
        [one] => (*one).clone(),
        [] => return Err(err("no output field: no statement writes a field".into())),
        _ => {
            return Err(err(format!(
                "{} output fields; a stencil has exactly one",
                outputs.len()
            )))
        }
    };
    let FieldShape::Spinor { nspin, ncolour } = output.shape else {
        return Err(err(format!(
            "output `{}` must be a colour-spinor field",
            output.name
        )));
    };
    let dense = dense_dimension(ir, nspin, ncolour).map_err(err)?;
    let link_dim = dense.unwrap_or(3);
    if ir.terms.is_empty() {
        return Err(err("the spec has no terms".into()));
    }
    let mut parities: Vec<(bool, bool)> = vec![(false, false); ir.fields.len()];
    let mut terms = Vec::with_capacity(ir.terms.len());
    for (k_term, t) in ir.terms.iter().enumerate() {
        let at = |part: TermPart| {
            move |reason: String| DslError::InvalidTerm {
                kernel: ir.name.clone(),
                term: k_term,
                part,
                reason,
            }
        };
        let whole = at(TermPart::Whole);
        if t.output != output.name {
            return Err(whole(format!(
                "term writes `{}`, not the output `{}`",
                t.output, output.name
            )));
        }
        let (k, src) = ir
            .fields
            .iter()
            .enumerate()
            .find(|(_, f)| f.name == t.source)
            .ok_or_else(|| at(TermPart::Source)(format!("unknown source field `{}`", t.source)))?;
        check_source(src, &output).map_err(at(TermPart::Source))?;
        let steps = t.hop.steps;
        if ![0, 1, -1, 3, -3].contains(&steps) || t.hop.mu >= 4 {
            return Err(whole(format!(
                "hop of {steps} sites in direction {}: the generators handle 0, ±1 and ±3",
                t.hop.mu
            )));
        }
        if steps % 2 == 0 {
            parities[k].0 = true;
        } else {
            parities[k].1 = true;
        }
        let long_link = check_path(ir, t, link_dim).map_err(whole)?;
        if let (Some(n), false) = (dense, t.spin == SpinOp::Identity) {
            return Err(whole(format!(
                "spin projectors, the twist and the clover matrix need 4 × 3 fields with 3 × 3 \
                 links; `{}` is a {} with dense {n} × {n} links",
                t.source,
                output.shape.spec_name()
            )));
        }
        if let (Some(n), 2..) = (dense, t.links.len()) {
            return Err(whole(format!(
                "a term with dense {n} × {n} links takes one link (`y[mu](x)` or \
                 `y[mu](x - mu).dagger()`), found {}",
                t.links.len()
            )));
        }
        let spin = match &t.spin {
            SpinOp::Identity => SpinLowering::Rows { nspin },
            // Γ (i γ5) Γ = i γ5 for Γ = γ5: the dagger coefficient stays c.
            SpinOp::TwistGamma5 if nspin == 4 => SpinLowering::Twisted,
            SpinOp::TwistGamma5 => {
                return Err(whole(format!(
                    "the twist i γ5 needs a 4-spin source; `{}` has {nspin}",
                    t.source
                )))
            }
            SpinOp::Clover { field } => {
                let c = check_clover(ir, t, field, nspin).map_err(whole)?;
                parities[c].0 = true;
                SpinLowering::Clover {
                    field: field.clone(),
                }
            }
            &SpinOp::Projector { mu, sign } => {
                if nspin != 4 || mu >= 4 || sign.abs() != 1 {
                    return Err(whole(format!(
                        "the projector (1 ± γ_{mu}) needs a 4-spin source; `{}` has {nspin}",
                        t.source
                    )));
                }
                // Γ (1 + s γ_μ) Γ with Γ = γ5 is 1 − s γ_μ (γ5 anticommutes with γ_μ).
                SpinLowering::Projected {
                    plan: ProjectorPlan::new(mu, sign),
                    dagger_plan: ProjectorPlan::new(mu, -sign),
                }
            }
        };
        // Γ = ε(x) for one spin: ε(x) ε(x + n μ̂) = (−1)^n.
        let dagger_coeff = if nspin == 1 && steps % 2 != 0 {
            -t.coeff
        } else {
            t.coeff
        };
        terms.push(LoweredTerm {
            term: t.clone(),
            spin,
            coeff: t.coeff,
            dagger_coeff,
            long_link,
        });
    }
    let inputs = ir
        .fields
        .iter()
        .zip(&parities)
        .filter(|(f, _)| f.role == Role::In)
        .map(|(f, &(even, odd))| InputUse {
            decl: f.clone(),
            reads: match (f.shape, even, odd) {
                (FieldShape::Gauge { .. }, _, _) => ReadSites::Gauge,
                (_, true, true) => ReadSites::Both,
                (_, false, true) => ReadSites::OtherParity,
                _ => ReadSites::SameParity,
            },
        })
        .collect();
    let dagger_supported = (nspin == 4 && dense.is_none())
        || (nspin == 1
            && terms
                .iter()
                .all(|t| matches!(t.spin, SpinLowering::Rows { .. })));
    Ok(Lowered {
        ir: ir.clone(),
        output: output.clone(),
        nspin,
        ncolour,
        inputs,
        terms,
        dagger_supported,
        dense,
    })
}

/// The dense dimension N = `nspin` · `ncolour` when links on `Spinor<nspin, ncolour>`
/// fields are dense N × N matrices: NC ≠ 3, or a link field (`Gauge<N>`) among `shapes`
/// with N ≠ 3; `None` for 3 × 3 colour links. Site matrices (`SiteMatrix<N>`) do not
/// decide it: they need a dense spec.
pub fn dense_links(
    nspin: usize,
    ncolour: usize,
    shapes: impl IntoIterator<Item = FieldShape>,
) -> Option<usize> {
    let dense_link = |s: FieldShape| matches!(s, FieldShape::Gauge { ncolour, per_site } if per_site != 1 && ncolour != 3);
    (ncolour != 3 || shapes.into_iter().any(dense_link)).then_some(nspin * ncolour)
}

/// The dense link dimension N of a spec ([`dense_links`]), after checking that every
/// link field is `Gauge<N>` and every site matrix `SiteMatrix<N>` (and that a spec with
/// 3 × 3 links has no site matrix); `None` for the 3-colour path.
fn dense_dimension(ir: &Ir, nspin: usize, ncolour: usize) -> Result<Option<usize>, String> {
    let spinor = FieldShape::Spinor { nspin, ncolour }.spec_name();
    let matrices = ir.fields.iter().filter_map(|f| match f.shape {
        FieldShape::Gauge { ncolour, .. } => Some((f, ncolour)),
        _ => None,
    });
    let Some(n) = dense_links(nspin, ncolour, ir.fields.iter().map(|f| f.shape)) else {
        return match matrices.clone().find(|(f, _)| f.shape.is_site_matrix()) {
            Some((f, _)) => Err(site_matrix_needs_dense(&f.name, &spinor)),
            None => Ok(None),
        };
    };
    for (f, dim) in matrices {
        if dim != n {
            let shape = FieldShape::Gauge {
                ncolour: n,
                per_site: if f.shape.is_site_matrix() { 1 } else { 4 },
            };
            return Err(format!(
                "`{}` is {}, but matrices on {spinor} fields are dense {n} × {n} matrices \
                 on the whole spin-colour vector: declare it `{}`",
                f.name,
                f.shape.spec_name(),
                shape.spec_name()
            ));
        }
    }
    Ok(Some(n))
}

/// The refusal of site matrix `field` in a spec on `spinor` fields with 3 × 3 links.
pub fn site_matrix_needs_dense(field: &str, spinor: &str) -> String {
    format!(
        "the site matrix `{field}` needs a dense spec (`Spinor<NS, NC>` fields with NC ≠ 3 \
         or `Gauge<N>` links), but the fields are {spinor} with 3 × 3 links; the clover \
         term of 4 × 3 fields is a `Clover` field"
    )
}

/// Checks a clover term c · A(x) · src(x): `field` is a clover input, the source a 4-spin
/// field read at x, no links. Returns the clover field's index.
fn check_clover(ir: &Ir, t: &Term, field: &str, nspin: usize) -> Result<usize, String> {
    let k = ir
        .fields
        .iter()
        .position(|f| f.name == field && f.shape == FieldShape::Clover && f.role == Role::In)
        .ok_or_else(|| format!("`{field}` is not a clover input"))?;
    if nspin != 4 {
        return Err(format!(
            "the clover matrix `{field}` acts on 4-spin sources; `{}` has {nspin}",
            t.source
        ));
    }
    if t.hop.steps != 0 || !t.links.is_empty() {
        return Err(format!(
            "the clover matrix `{field}` is site-local: write `{field}(x) * {}(x)` without links or hops",
            t.source
        ));
    }
    Ok(k)
}

/// Checks that a term's links are gauge inputs of `dim` × `dim` links (3, or the dense
/// N) in the hop's direction forming a path from x to x + steps μ̂; returns whether the
/// path is one long link.
fn check_path(ir: &Ir, t: &Term, dim: usize) -> Result<bool, String> {
    let site_matrix = |name: &str| {
        ir.field(name)
            .is_some_and(|f| f.shape == FieldShape::site_matrix(dim) && f.role == Role::In)
    };
    if let Some(l) = t.links.iter().find(|l| site_matrix(&l.field)) {
        let alone = t.links.len() == 1 && t.hop == Hop { mu: 0, steps: 0 };
        if !alone || l.mu != 0 || l.at != 0 || l.dagger {
            return Err(format!(
                "the site matrix `{}` is site-local: write `{}(x) * {}(x)` without links or hops",
                l.field, l.field, t.source
            ));
        }
        return Ok(false);
    }
    for l in &t.links {
        match ir.field(&l.field) {
            Some(f) if f.shape == FieldShape::links(dim) && f.role == Role::In => {}
            _ if dim == 3 => return Err(format!("`{}` is not a 3-colour gauge input", l.field)),
            _ => return Err(format!("`{}` is not a Gauge<{dim}> input", l.field)),
        }
        if l.mu != t.hop.mu {
            return Err(format!(
                "link in direction {} on a hop in direction {}",
                l.mu, t.hop.mu
            ));
        }
    }
    let steps = t.hop.steps;
    if t.links.len() == 1 && steps.abs() == 3 {
        let l = &t.links[0];
        let ok = if steps > 0 {
            !l.dagger && l.at == 0
        } else {
            l.dagger && l.at == -3
        };
        return if ok {
            Ok(true)
        } else {
            Err(format!(
                "the long link of a {steps}-site hop must be L(x) or L(x − 3μ̂)†"
            ))
        };
    }
    let mut p = 0;
    for l in &t.links {
        let next = if l.dagger {
            (l.at == p - 1).then_some(p - 1)
        } else {
            (l.at == p).then_some(p + 1)
        };
        p = next.ok_or_else(|| {
            format!(
                "link at x{:+}μ̂ does not continue the path from x to the source",
                l.at
            )
        })?;
    }
    if p != steps {
        return Err(format!(
            "the link path ends at x{p:+}μ̂, the source is at x{steps:+}μ̂"
        ));
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsl::info::flops_per_site;
    use crate::dsl::ir::LinkRef;

    fn field(name: &str, shape: FieldShape, role: Role) -> FieldDecl {
        FieldDecl {
            name: name.into(),
            shape,
            role,
        }
    }

    fn link(mu: usize, at: i32, dagger: bool) -> LinkRef {
        LinkRef {
            field: "u".into(),
            mu,
            at,
            dagger,
        }
    }

    /// The Wilson hop written by hand as IR (what `stencil!` builds from the catalog spec).
    fn wilson() -> Ir {
        let spinor = FieldShape::Spinor {
            nspin: 4,
            ncolour: 3,
        };
        let mut terms = Vec::new();
        for mu in 0..4 {
            for (steps, sign, l) in [(1, -1, link(mu, 0, false)), (-1, 1, link(mu, -1, true))] {
                terms.push(Term {
                    output: "out".into(),
                    coeff: 1.0,
                    spin: SpinOp::Projector { mu, sign },
                    links: vec![l],
                    source: "psi".into(),
                    hop: Hop { mu, steps },
                });
            }
        }
        Ir {
            name: "wilson_hop".into(),
            doc: String::new(),
            fields: vec![
                field("out", spinor, Role::Out),
                field("psi", spinor, Role::In),
                field("u", FieldShape::links(3), Role::In),
            ],
            terms,
            knobs: Default::default(),
        }
    }

    #[test]
    fn wilson_projectors_are_lowered_to_half_spinors() {
        let l = lower(&wilson()).unwrap();
        assert_eq!(l.terms.len(), 8);
        for t in &l.terms {
            let SpinLowering::Projected { plan, dagger_plan } = t.spin else {
                panic!("not projected")
            };
            assert_eq!(plan.sign, -dagger_plan.sign, "dagger flips the projector");
            assert_eq!(t.coeff, t.dagger_coeff);
        }
        assert_eq!(
            l.input("psi").map(|i| i.reads),
            Some(ReadSites::OtherParity)
        );
        assert_eq!(l.input("u").map(|i| i.reads), Some(ReadSites::Gauge));
        assert!(l.dagger_supported);
        assert_eq!(flops_per_site(&l, false), 1320);
    }

    #[test]
    fn malformed_ir_is_rejected_with_reasons() {
        let reason = |ir: &Ir| match lower(ir) {
            Err(e) => e.spec_reason().expect("a spec error").to_string(),
            other => panic!("expected an error, got {other:?}"),
        };
        let mut ir = wilson();
        ir.terms[0].hop.steps = 2;
        assert!(reason(&ir).contains("hop of 2 sites"));
        let mut ir = wilson();
        ir.terms[1].links[0].at = 0;
        assert!(reason(&ir).contains("does not continue the path"));
        let mut ir = wilson();
        ir.fields[0].role = Role::In;
        assert!(reason(&ir).contains("no output"));
        let mut ir = wilson();
        ir.fields[1].shape = FieldShape::Spinor {
            nspin: 1,
            ncolour: 3,
        };
        assert!(reason(&ir)
            .contains("`psi` is a ColourVector field but the output `out` is a Spinor field"));
        let mut ir = wilson();
        ir.fields.push(field("psi", FieldShape::links(3), Role::In));
        assert!(reason(&ir).contains("declared twice"));
    }

    /// A clover term: read at the output's parity, unchanged by dagger, 504 flops (QUDA's
    /// count); on a hop, or with links, it is rejected as not site-local.
    #[test]
    fn clover_terms_are_site_local() {
        let spinor = FieldShape::Spinor {
            nspin: 4,
            ncolour: 3,
        };
        let term = Term {
            output: "out".into(),
            coeff: 1.0,
            spin: SpinOp::Clover { field: "a".into() },
            links: vec![],
            source: "psi".into(),
            hop: Hop { mu: 0, steps: 0 },
        };
        let mut ir = Ir {
            name: "clover".into(),
            doc: String::new(),
            fields: vec![
                field("out", spinor, Role::Out),
                field("psi", spinor, Role::In),
                field("a", FieldShape::Clover, Role::In),
                field("u", FieldShape::links(3), Role::In),
            ],
            terms: vec![term],
            knobs: Default::default(),
        };
        let l = lower(&ir).unwrap();
        assert_eq!(l.input("a").map(|i| i.reads), Some(ReadSites::SameParity));
        assert_eq!(l.terms[0].dagger_coeff, 1.0);
        assert_eq!(flops_per_site(&l, false), 504);
        ir.terms[0].hop.steps = 1;
        ir.terms[0].links = vec![link(0, 0, false)];
        match lower(&ir) {
            Err(e) => assert!(e.spec_reason().unwrap().contains("site-local")),
            other => panic!("expected an error, got {other:?}"),
        }
    }

    /// A coarse hop on `Spinor<ns, nc>` with links `Gauge<dim>`: a forward and a backward
    /// hop in direction 1.
    fn coarse(ns: usize, nc: usize, dim: usize) -> Ir {
        let sp = FieldShape::Spinor {
            nspin: ns,
            ncolour: nc,
        };
        let term = |steps: i32, l: LinkRef| Term {
            output: "out".into(),
            coeff: 1.0,
            spin: SpinOp::Identity,
            links: vec![l],
            source: "phi".into(),
            hop: Hop { mu: 1, steps },
        };
        Ir {
            name: "coarse".into(),
            doc: String::new(),
            fields: vec![
                field("out", sp, Role::Out),
                field("phi", sp, Role::In),
                field("u", FieldShape::links(dim), Role::In),
            ],
            terms: vec![term(1, link(1, 0, false)), term(-1, link(1, -1, true))],
            knobs: Default::default(),
        }
    }

    /// Dense links: N = NS · NC for `Spinor<2, 24>` with `Gauge<48>` (8N² − 2N flops per
    /// product, 2N per accumulation after the first, no dagger); the 3-colour path keeps
    /// `Gauge` links on any NS; wrong link dimensions, spin operators and link products
    /// on dense fields are refused with reasons.
    #[test]
    fn dense_links_act_on_the_whole_spin_colour_vector() {
        let l = lower(&coarse(2, 24, 48)).unwrap();
        assert_eq!(l.dense, Some(48));
        assert!(!l.dagger_supported);
        assert_eq!(
            flops_per_site(&l, false),
            2 * (8 * 48 * 48 - 2 * 48) + 2 * 48
        );
        assert_eq!(lower(&coarse(1, 8, 8)).unwrap().dense, Some(8));
        assert!(
            lower(&coarse(1, 8, 8)).unwrap().dagger_supported,
            "ε(x) for one spin"
        );
        assert_eq!(lower(&coarse(2, 3, 6)).unwrap().dense, Some(6));
        assert_eq!(lower(&coarse(2, 3, 3)).unwrap().dense, None);
        let reason = |ir: &Ir| match lower(ir) {
            Err(e) => e.spec_reason().expect("a spec error").to_string(),
            other => panic!("expected an error, got {other:?}"),
        };
        assert!(reason(&coarse(2, 24, 24)).contains("declare it `Gauge<48>`"));
        let mut ir = coarse(4, 6, 24);
        ir.terms[0].spin = SpinOp::Projector { mu: 1, sign: -1 };
        assert!(reason(&ir).contains("need 4 × 3 fields with 3 × 3 links"));
        let mut ir = coarse(2, 4, 8);
        ir.terms[0].links.push(link(1, 1, false));
        ir.terms[0].hop.steps = 2;
        assert!(reason(&ir).contains("hop of 2 sites"));
        let mut ir = coarse(2, 4, 8);
        ir.terms[0].links = vec![link(1, 0, false), link(1, 0, true)];
        ir.terms[0].hop.steps = 0;
        assert!(reason(&ir).contains("takes one link"));
    }

    /// A site matrix on a dense spec: X(x) φ(x) is one N × N product (8N² − 2N flops)
    /// plus its accumulation, read at x, its field stored whole (like links); a wrong N,
    /// a hop, an adjoint or a 3 × 3 spec are refused with reasons.
    #[test]
    fn site_matrices_are_site_local_dense_products() {
        let site = |dim: usize| {
            let mut ir = coarse(2, 4, 8);
            ir.fields
                .push(field("xm", FieldShape::site_matrix(dim), Role::In));
            ir.terms.push(Term {
                output: "out".into(),
                coeff: 1.0,
                spin: SpinOp::Identity,
                links: vec![LinkRef {
                    field: "xm".into(),
                    mu: 0,
                    at: 0,
                    dagger: false,
                }],
                source: "phi".into(),
                hop: Hop { mu: 0, steps: 0 },
            });
            ir
        };
        let l = lower(&site(8)).unwrap();
        assert_eq!(l.dense, Some(8));
        assert_eq!(l.input("xm").map(|i| i.reads), Some(ReadSites::Gauge));
        assert_eq!(flops_per_site(&l, false), 3 * (8 * 64 - 16) + 2 * 16);
        let reason = |ir: &Ir| match lower(ir) {
            Err(e) => e.spec_reason().expect("a spec error").to_string(),
            other => panic!("expected an error, got {other:?}"),
        };
        assert!(reason(&site(6)).contains("declare it `SiteMatrix<8>`"));
        for edit in [
            |t: &mut Term| t.hop.steps = 1,
            |t: &mut Term| t.links[0].dagger = true,
            |t: &mut Term| t.links[0].at = 1,
        ] {
            let mut ir = site(8);
            edit(&mut ir.terms[2]);
            assert!(reason(&ir).contains("is site-local"), "{}", reason(&ir));
        }
        let mut ir = coarse(4, 3, 3);
        ir.fields
            .push(field("xm", FieldShape::site_matrix(12), Role::In));
        assert!(reason(&ir).contains("needs a dense spec"));
    }

    /// Staggered (one spin, no spin operator): Γ = ε(x) flips odd hops, keeps local terms.
    #[test]
    fn one_spin_dagger_flips_odd_hops_only() {
        let cv = FieldShape::Spinor {
            nspin: 1,
            ncolour: 3,
        };
        let term = |steps: i32, links: Vec<LinkRef>| Term {
            output: "out".into(),
            coeff: 0.5,
            spin: SpinOp::Identity,
            links,
            source: "chi".into(),
            hop: Hop { mu: 2, steps },
        };
        let ir = Ir {
            name: "t".into(),
            doc: String::new(),
            fields: vec![
                field("out", cv, Role::Out),
                field("chi", cv, Role::In),
                field("u", FieldShape::links(3), Role::In),
            ],
            terms: vec![
                term(0, vec![]),
                term(3, vec![link(2, 0, false)]),
                term(-1, vec![link(2, -1, true)]),
            ],
            knobs: Default::default(),
        };
        let l = lower(&ir).unwrap();
        let dc: Vec<f64> = l.terms.iter().map(|t| t.dagger_coeff).collect();
        assert_eq!(dc, vec![0.5, -0.5, -0.5]);
        assert!(l.terms[1].long_link);
        assert_eq!(l.input("chi").map(|i| i.reads), Some(ReadSites::Both));
        // Local term: no links, 0 flops of its own beyond accumulation and the 0.5 scale.
        // Naive count: term 0: scale 6 + acc 6; term 1: 66 + 6 + 6; term 2: 66 + 6 + 6;
        // minus the first accumulation 6.
        assert_eq!(flops_per_site(&l, false), 12 + 78 + 78 - 6);
    }
}
