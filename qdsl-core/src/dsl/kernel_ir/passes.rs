//! The optimisations, as named passes over the [`KernelIr`]: [`PASSES`] lists them in the
//! order [`crate::dsl::emit::cuda::compile`] runs them. Each is a function from IR to IR;
//! none changes what the kernel computes beyond rounding.

use super::{
    BuildFlag, FifthIndex, KernelIr, Load, Reads, Scaling, Stage, StageKind, Stmt, TermReads, Value,
};
use crate::dsl::variant::StorageFormat;

/// A named pass.
pub struct Pass {
    /// The pass's name (`qdsl emit --kernel-ir` prints the IR after all of them).
    pub name: &'static str,
    /// The transformation.
    pub run: fn(&mut KernelIr),
}

/// The passes, in order: the term order first (the prefetch build asks for the records
/// of the next term in the final order).
pub const PASSES: &[Pass] = &[
    Pass {
        name: "long-links-first",
        run: long_links_first,
    },
    Pass {
        name: "fixed-point-scale-deferral",
        run: defer_fixed_point_scales,
    },
    Pass {
        name: "links-cached-across-slices",
        run: links_cached_across_slices,
    },
    Pass {
        name: "prefetch-build",
        run: prefetch_build,
    },
];

/// Runs every pass of [`PASSES`] on `ir`.
pub fn run_all(ir: &mut KernelIr) {
    for pass in PASSES {
        (pass.run)(ir);
    }
}

/// The term order: the terms that read a long (Naik) link first, then the others, each
/// group in spec order (a stable partition of the term stages). The sum is the same up
/// to rounding; the order only changes what the compiler makes of the straight-line
/// code. Measured on the H100 (standalone harness, 32⁴, improved staggered hop, f32, long
/// links in recon 12 + sign, two runs of four): the eight Naik terms ahead of the
/// one-link terms took 177.9–178.9 µs against 179.6–180.6 µs in spec order (72 against
/// 78 registers; with the arithmetic removed, the loads alone 177.6–177.8 against
/// 178.2–178.4 µs: the bandwidth floor of the access pattern). Kernels without long links
/// keep the spec order — among them 3-site hops along paths of three links, which in f64
/// spill when moved ahead (a test spec: 184 bytes at 255 registers).
pub fn long_links_first(ir: &mut KernelIr) {
    let long = |s: &Stage| matches!(&s.kind, StageKind::Term(t) if t.long_link);
    let (first, rest): (Vec<Stage>, Vec<Stage>) = ir.stages.drain(..).partition(long);
    ir.stages = first.into_iter().chain(rest).collect();
}

/// Links cached across slices: with the slices of a site in the block
/// ([`FifthIndex::ThreadY`], [`FifthIndex::BlockY`]) every link is read by each slice's
/// warps, so a link read once per 4D launch is read Ls (or block.y) times here: its
/// loads take the default cache path instead of the evict-first one, so that the
/// block's other warps find it in L1. Measured on the H200 (ncu, 32⁴, Möbius
/// Dslash4·xpay·M5mob, Ls 12, f32): L1 hit rate 15.6 %, L2 throughput 75 % with the
/// links streamed.
pub fn links_cached_across_slices(ir: &mut KernelIr) {
    if ir.prologue.fifth == FifthIndex::GridY {
        return;
    }
    for stage in &mut ir.stages {
        visit_stmts_mut(&mut stage.body, &mut |s| {
            if let Stmt::Load(Load {
                value: Value::Link(_),
                reads,
                ..
            }) = s
            {
                *reads = Reads::Shared;
            }
        });
    }
}

/// Fixed-point scale deferral: a term's arithmetic is linear in its source record and in
/// each link, so the fixed-point scales (the source's s = fl(norm · fl(1/Q)), a link's
/// fl(1/Q)) need not multiply every decoded real at the load: the loads of source and
/// links keep the stored integers ([`Scaling::Deferred`]) and the accumulation's
/// multiply-add takes the product of the factors once (its `scaled_by` already names
/// every load of the term) — the same value to f32 rounding, a multiply per real fewer.
/// A source that only enters the spin projection's pairwise sums and differences stays
/// biased ([`Scaling::Biased`]: the decoder's subtract saved, every step exact).
pub fn defer_fixed_point_scales(ir: &mut KernelIr) {
    let formats: Vec<(String, StorageFormat)> = ir
        .fields
        .iter()
        .map(|f| (f.name.clone(), f.layout.format))
        .collect();
    let format = |name: &str| formats.iter().find(|(n, _)| n == name).map(|f| f.1);
    for stage in &mut ir.stages {
        // A term whose source passes through shared memory (a `fused5d!` piece acting on
        // the hop's source) combines the records of several threads: scales applied.
        if !matches!(stage.kind, StageKind::Term(_))
            || any_stmt(&stage.body, &|s| matches!(s, Stmt::SharedStore { .. }))
        {
            continue;
        }
        let projected = any_stmt(&stage.body, &|s| matches!(s, Stmt::Project { .. }));
        let mut biased_source = None;
        visit_stmts_mut(&mut stage.body, &mut |s| match s {
            Stmt::Load(Load {
                value: Value::Source,
                field,
                scaling,
                ..
            }) => {
                let fixed = format(field).filter(|f| is_fixed(*f));
                *scaling = match fixed {
                    Some(f) if projected => {
                        biased_source = Some(f);
                        Scaling::Biased
                    }
                    _ => Scaling::Deferred,
                };
            }
            Stmt::Load(Load {
                value: Value::Link(_),
                scaling,
                ..
            }) => *scaling = Scaling::Deferred,
            _ => {}
        });
        if let Some(f) = biased_source {
            visit_stmts_mut(&mut stage.body, &mut |s| {
                if let Stmt::Project { biased, .. } = s {
                    *biased = Some(f);
                }
            });
        }
    }
}

/// The prefetch build (a tuner knob, `-DQDSL_PREFETCH`): before each term, and once
/// before the first, a stage under `#if QDSL_PREFETCH` asks L2 for the next term's
/// source record (not in the links-only build, `-DQDSL_PREFETCH_LINKS_ONLY`) and link
/// records, so that more of the kernel's reads are in flight; nothing is read into
/// registers. Runs after the term order.
pub fn prefetch_build(ir: &mut KernelIr) {
    let terms: Vec<TermReads> = ir
        .stages
        .iter()
        .filter_map(|s| match &s.kind {
            StageKind::Term(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    let Some(first) = terms.first() else {
        return;
    };
    let parity_output = ir.prologue.out_parity >= 0;
    let mut stages = vec![prefetch_stage(&ir.fields, first, parity_output)];
    let mut next = terms.iter().skip(1);
    for stage in ir.stages.drain(..) {
        if matches!(stage.kind, StageKind::Term(_)) {
            if let Some(t) = next.next() {
                stages.push(prefetch_stage(&ir.fields, t, parity_output));
            }
        }
        stages.push(stage);
    }
    ir.stages = stages;
}

/// The prefetch stage of term `t`: its source record at y, then each link's record.
fn prefetch_stage(fields: &[super::KernelField], t: &TermReads, parity_output: bool) -> Stage {
    let known = |name: &str| fields.iter().any(|f| f.name == name);
    let mut body = vec![Stmt::Build {
        flag: BuildFlag::NotLinksOnly,
        body: vec![Stmt::Scope {
            comment: None,
            body: vec![
                Stmt::Neighbour {
                    mu: t.hop.0,
                    steps: t.hop.1,
                    tracks_wraps: false,
                },
                Stmt::SourceIndex {
                    reads: t.reads,
                    parity_output,
                },
                Stmt::PrefetchSite {
                    field: t.source.clone(),
                },
            ],
        }],
    }];
    body.extend(
        t.links
            .iter()
            .filter(|l| known(&l.field))
            .map(|l| Stmt::Scope {
                comment: None,
                body: vec![
                    Stmt::LinkSite(l.clone()),
                    Stmt::PrefetchLink {
                        field: l.field.clone(),
                        mu: l.mu,
                    },
                ],
            }),
    );
    Stage {
        kind: StageKind::Prefetch { index: t.index },
        body: vec![Stmt::Build {
            flag: BuildFlag::Prefetch,
            body: vec![Stmt::Scope {
                comment: Some(format!("term {}'s records into L2", t.index)),
                body,
            }],
        }],
        barrier: false,
    }
}

fn is_fixed(f: StorageFormat) -> bool {
    f.codec().fixed_q().is_some()
}

/// Whether any statement (at any depth) satisfies `p`.
pub fn any_stmt(body: &[Stmt], p: &dyn Fn(&Stmt) -> bool) -> bool {
    body.iter()
        .any(|s| p(s) || children(s).is_some_and(|c| any_stmt(c, p)))
}

/// The statements nested in `s`.
fn children(s: &Stmt) -> Option<&[Stmt]> {
    match s {
        Stmt::Scope { body, .. } | Stmt::Build { body, .. } | Stmt::If { body, .. } => Some(body),
        _ => None,
    }
}

/// Calls `f` on every statement, depth first in print order.
pub fn visit_stmts_mut(body: &mut [Stmt], f: &mut dyn FnMut(&mut Stmt)) {
    for s in body {
        f(s);
        if let Stmt::Scope { body, .. } | Stmt::Build { body, .. } | Stmt::If { body, .. } = s {
            visit_stmts_mut(body, f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsl::ir::{FieldDecl, FieldShape, Hop, Ir, LinkRef, Role, SpinOp, Term};
    use crate::dsl::kernel_ir::{plan, Scaling};
    use crate::dsl::lower::lower;
    use crate::dsl::variant::{Recon, Variant};

    fn field(name: &str, shape: FieldShape, role: Role) -> FieldDecl {
        FieldDecl {
            name: name.into(),
            shape,
            role,
        }
    }

    /// A hop written by hand: per direction a one-link term through `fat` and a
    /// three-site term through the long field `long`, one-link terms first in the spec;
    /// with `spin4`, 4-spin fields and (1 − γ_μ) projectors on the one-link terms.
    fn hop(spin4: bool) -> Ir {
        let ns = if spin4 { 4 } else { 1 };
        let spinor = FieldShape::Spinor {
            nspin: ns,
            ncolour: 3,
        };
        let mut terms = Vec::new();
        for (name, steps) in [("fat", 1), ("long", 3)] {
            for mu in 0..4 {
                let projected = spin4 && steps == 1;
                terms.push(Term {
                    output: "out".into(),
                    coeff: 0.5,
                    spin: if projected {
                        SpinOp::Projector { mu, sign: -1 }
                    } else {
                        SpinOp::Identity
                    },
                    links: vec![LinkRef {
                        field: name.into(),
                        mu,
                        at: 0,
                        dagger: false,
                    }],
                    source: "psi".into(),
                    hop: Hop { mu, steps },
                });
            }
        }
        Ir {
            name: "test_hop".into(),
            doc: String::new(),
            fields: vec![
                field("out", spinor, Role::Out),
                field("psi", spinor, Role::In),
                field("fat", FieldShape::links(3), Role::In),
                field("long", FieldShape::links(3), Role::In),
            ],
            terms,
            knobs: Default::default(),
        }
    }

    fn planned(ir: &Ir, variant: &Variant) -> KernelIr {
        plan(&lower(ir).unwrap(), variant).unwrap()
    }

    fn term_order(k: &KernelIr) -> Vec<usize> {
        k.stages
            .iter()
            .filter_map(|s| match &s.kind {
                StageKind::Term(t) => Some(t.index),
                _ => None,
            })
            .collect()
    }

    fn loads(k: &KernelIr) -> Vec<Load> {
        let mut out = Vec::new();
        for s in &k.stages {
            let mut body = s.body.clone();
            visit_stmts_mut(&mut body, &mut |st| {
                if let Stmt::Load(l) = st {
                    out.push(l.clone());
                }
            });
        }
        out
    }

    /// The plan keeps spec order (fat terms 0–3, long terms 4–7); the pass moves the four
    /// long-link terms ahead, each group in spec order.
    #[test]
    fn long_links_first_orders_long_terms_ahead_stably() {
        let mut k = planned(&hop(false), &Variant::default());
        assert_eq!(term_order(&k), [0, 1, 2, 3, 4, 5, 6, 7]);
        long_links_first(&mut k);
        assert_eq!(term_order(&k), [4, 5, 6, 7, 0, 1, 2, 3]);
        // A spec without long links keeps its order.
        let mut ir = hop(false);
        ir.terms.retain(|t| t.hop.steps == 1);
        let mut k = planned(&ir, &Variant::default());
        long_links_first(&mut k);
        assert_eq!(term_order(&k), [0, 1, 2, 3]);
    }

    /// Before the pass every load applies its scale; after it, the sources and links of
    /// the terms keep their integers (Deferred), a projected fixed-point source stays
    /// biased and its projection knows, and the accumulation names the source and the
    /// link as the loads whose factors it takes; the xpay operand is untouched.
    #[test]
    fn scale_deferral_moves_fixed_point_scales_into_the_accumulation() {
        let v = Variant {
            spinor: crate::dsl::variant::StorageFormat::Fixed16,
            gauge: crate::dsl::variant::StorageFormat::Fixed16,
            recon: Recon::R12,
            xpay: true,
            ..Variant::default()
        };
        let mut k = planned(&hop(true), &v);
        assert!(loads(&k).iter().all(|l| l.scaling == Scaling::Applied));
        defer_fixed_point_scales(&mut k);
        for s in &k.stages {
            let StageKind::Term(t) = &s.kind else {
                continue;
            };
            let mut seen = Vec::new();
            let mut body = s.body.clone();
            visit_stmts_mut(&mut body, &mut |st| match st {
                Stmt::Load(l) => seen.push((l.value, l.scaling)),
                Stmt::Project { biased, .. } => {
                    assert_eq!(*biased, Some(crate::dsl::variant::StorageFormat::Fixed16))
                }
                Stmt::Accumulate(a) => {
                    assert_eq!(a.scaled_by, [Value::Source, Value::Link(0)]);
                    assert_eq!(a.scale, 0.5, "the coefficient stays in the factor");
                }
                _ => {}
            });
            let source = if t.hop.1 == 1 {
                Scaling::Biased
            } else {
                Scaling::Deferred
            };
            assert_eq!(
                seen,
                [(Value::Source, source), (Value::Link(0), Scaling::Deferred)],
                "term {}",
                t.index
            );
        }
        let xpay = k.epilogue.xpay.as_ref().expect("xpay load");
        assert_eq!(xpay.scaling, Scaling::Applied);
        // The printed accumulation multiplies by the norm-derived scale and fl(1/Q).
        let src = crate::dsl::emit::cuda::print(&k).source;
        assert!(src.contains("const real tf = real(0.5) * r_scale * inv_q_fixed16();"));
        assert!(src.contains("decode_q_fixed16<24, true>(r, r_w);"));
    }

    /// After the term order, the prefetch pass puts a prefetch of the first term ahead of
    /// everything and one of the next term before each term: P(a) P(b) T(a) P(c) T(b) …
    #[test]
    fn prefetch_asks_for_the_next_term_before_each_term() {
        let mut k = planned(&hop(false), &Variant::default());
        long_links_first(&mut k);
        prefetch_build(&mut k);
        let kinds: Vec<String> = k
            .stages
            .iter()
            .map(|s| match &s.kind {
                StageKind::Term(t) => format!("T{}", t.index),
                StageKind::Prefetch { index } => format!("P{index}"),
                StageKind::Custom(c) => c.clone(),
            })
            .collect();
        assert_eq!(
            kinds.join(" "),
            "P4 P5 T4 P6 T5 P7 T6 P0 T7 P1 T0 P2 T1 P3 T2 T3"
        );
        // Each prefetch is under the build flag and names the term's source and link.
        let StageKind::Prefetch { index } = k.stages[0].kind else {
            panic!()
        };
        assert_eq!(index, 4);
        assert!(any_stmt(&k.stages[0].body, &|s| matches!(
            s,
            Stmt::PrefetchLink { field, mu: 0 } if field == "long"
        )));
        assert!(any_stmt(&k.stages[0].body, &|s| matches!(
            s,
            Stmt::PrefetchSite { field } if field == "psi"
        )));
    }

    /// Links read once per 4D launch stream (evict first); with the slices in the block
    /// each link is read by every slice's warps, so its loads keep the default path.
    #[test]
    fn links_take_the_cached_path_only_when_slices_share_them() {
        let link_reads = |k: &KernelIr| {
            let mut reads = Vec::new();
            for stage in &k.stages {
                let mut body = stage.body.clone();
                visit_stmts_mut(&mut body, &mut |s| {
                    if let Stmt::Load(Load {
                        value: Value::Link(_),
                        reads: r,
                        ..
                    }) = s
                    {
                        reads.push(*r);
                    }
                });
            }
            reads
        };
        let ir = hop(true);
        let mut k = planned(&ir, &Variant::default());
        assert!(link_reads(&k).contains(&Reads::Once));
        let before = link_reads(&k);
        links_cached_across_slices(&mut k);
        assert_eq!(link_reads(&k), before, "one slice per grid row: unchanged");
        let mut k = planned(
            &ir,
            &Variant {
                slices: crate::dsl::variant::Slices::InBlock,
                ..Variant::default()
            },
        );
        assert_eq!(k.prologue.fifth, FifthIndex::BlockY);
        links_cached_across_slices(&mut k);
        let after = link_reads(&k);
        assert_eq!(after.len(), before.len());
        assert!(after.iter().all(|&r| r == Reads::Shared), "{after:?}");
    }

    /// The declared list runs in the order the prefetch needs (after the term order).
    #[test]
    fn passes_are_declared_in_order() {
        let names: Vec<&str> = PASSES.iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            [
                "long-links-first",
                "fixed-point-scale-deferral",
                "links-cached-across-slices",
                "prefetch-build"
            ]
        );
    }
}
