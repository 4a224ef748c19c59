//! `plan`: a lowered spec and a variant → the straightforward [`KernelIr`]: the terms in
//! spec order, every load decoded and scaled where it is read, no prefetch. The passes
//! ([`super::passes::PASSES`]) then optimise it.

use super::{
    Accumulate, Bounds, Cond, Constant, DeviceLib, Epilogue, FifthIndex, KernelField, KernelIr,
    Load, LoadAt, Param, Prologue, Reads, RealType, Reconstruct, Rows, Scaling, Stage, StageKind,
    Stmt, TermReads, Value,
};
use crate::dsl::codec::ArgOwner;
use crate::dsl::emit::cuda::{describe_link, describe_term, kernel_name, param_decls};
use crate::dsl::info::flops_per_site;
use crate::dsl::interface::KernelParam;
use crate::dsl::ir::{FieldShape, Role};
use crate::dsl::layout::SoaLayout;
use crate::dsl::lower::{Lowered, LoweredTerm, ReadSites, SpinLowering};
use crate::dsl::variant::{OutputSites, Recon, StorageFormat, TimeBoundary, Variant};
use crate::dsl::DslError;
use crate::field::CLOVER_SITE_REALS;
use crate::lattice::Parity;

/// The kernel IR of one variant of a 3-colour stencil, before the passes. The caller has
/// checked the variant against the spec ([`crate::dsl::emit::cuda::compile`]).
pub fn plan(lowered: &Lowered, variant: &Variant) -> Result<KernelIr, DslError> {
    let ir = &lowered.ir;
    let name = kernel_name(&ir.name, variant);
    let ns = lowered.nspin;
    let fields = kernel_fields(lowered, variant);
    let real = match variant.spinor.compute() {
        StorageFormat::F64 => RealType::F64,
        _ => RealType::F32,
    };
    let out_parity = match variant.sites {
        OutputSites::Parity(Parity::Even) => 0,
        OutputSites::Parity(Parity::Odd) => 1,
        OutputSites::Full => -1,
    };
    let mut library = vec![
        DeviceLib::Complex,
        DeviceLib::GridDependencyWait,
        DeviceLib::Storage,
        DeviceLib::Codecs {
            spinor: variant.spinor,
            gauge: variant.gauge,
            recon: variant.recon,
            long_recon: variant.long_recon,
        },
        DeviceLib::Transport,
    ];
    if lowered
        .terms
        .iter()
        .any(|t| matches!(t.spin, SpinLowering::Clover { .. }))
    {
        library.push(DeviceLib::Clover);
    }
    if variant.region == crate::dsl::variant::Region::SubBox {
        library.push(DeviceLib::BoxSite);
    }
    let stages = lowered
        .terms
        .iter()
        .enumerate()
        .map(|(k, t)| term_stage(lowered, variant, &fields, out_parity, k, t))
        .collect::<Result<Vec<_>, _>>()?;
    let out = lowered.output.name.clone();
    Ok(KernelIr {
        header: header(&name, lowered, variant),
        name,
        real,
        library,
        constants: constants(variant, out_parity),
        params: params(lowered, variant, &fields),
        fields,
        shared: Vec::new(),
        prologue: Prologue {
            out_parity,
            fifth: FifthIndex::of(variant.slices),
            checkerboard_index: lowered
                .terms
                .iter()
                .any(|t| t.term.links.iter().any(|l| l.at == 0)),
            spins: ns,
            bounds: Bounds::Return,
            region: variant.region,
        },
        stages,
        epilogue: Epilogue {
            spins: ns,
            xpay: variant.xpay.then(|| Load {
                value: Value::XpayX,
                field: out.clone(),
                at: LoadAt::Site {
                    site: "io",
                    dest: "xr",
                },
                reads: Reads::Once,
                scaling: Scaling::Applied,
            }),
            out,
            xpay_in_registers: false,
        },
        walk: None,
    })
}

/// The fields with their device layouts: spinors in the spinor format, clover fields in
/// the compute precision, gauge fields in the gauge format and compression (a long field
/// with a compressed long recon: its link record's layout).
fn kernel_fields(lowered: &Lowered, variant: &Variant) -> Vec<KernelField> {
    let ir = &lowered.ir;
    let spinor_reals = 2 * lowered.nspin * lowered.ncolour;
    let compute = variant.spinor.compute();
    ir.fields
        .iter()
        .map(|f| {
            let long = variant
                .long_recon
                .compression()
                .filter(|_| crate::dsl::long_links::is_long(ir, &f.name));
            let layout = match (f.shape, long) {
                (FieldShape::Gauge { .. }, Some(c)) => {
                    SoaLayout::new(c.record_reals(), variant.gauge)
                }
                (FieldShape::Spinor { .. }, _) => SoaLayout::new(spinor_reals, variant.spinor),
                (FieldShape::Gauge { .. }, None) => {
                    SoaLayout::new(variant.recon.reals(), variant.gauge)
                }
                (FieldShape::Clover, _) => SoaLayout::new(CLOVER_SITE_REALS, compute),
            };
            // A compressed long field carries its own phases and scale (below).
            let extra = match (f.shape, long) {
                (_, Some(_)) => &[],
                (FieldShape::Gauge { .. }, None) => {
                    layout.format.codec().args(false, variant.link_scale)
                }
                _ => layout.format.codec().args(true, variant.link_scale),
            };
            KernelField {
                name: f.name.clone(),
                layout,
                shape: f.shape,
                long,
                extra,
            }
        })
        .collect()
}

/// The kernel's opening comment: its name, the spec it came from, the spec's doc (the
/// operator's equation), the variant and the flop count per site.
pub(crate) fn header(name: &str, lowered: &Lowered, variant: &Variant) -> Vec<String> {
    let ir = &lowered.ir;
    let mut lines = vec![
        format!(" {name}"),
        format!(
            " Generated by qdsl from the stencil spec `{}`. Do not edit.",
            ir.name
        ),
    ];
    lines.extend(ir.doc.lines().map(|l| l.trim_end().to_string()));
    lines.push(format!(" variant: {}", variant.canonical()));
    lines.push(format!(
        " flops per site: {}",
        flops_per_site(lowered, variant.xpay)
    ));
    lines
}

/// The variant's knobs as compile-time constants.
fn constants(variant: &Variant, out_parity: i32) -> Vec<Constant> {
    let c = |ty, name, value: String, comment| Constant {
        ty,
        name,
        value,
        comment,
    };
    vec![
        c(
            "int",
            "OUT_PARITY",
            out_parity.to_string(),
            Some("-1: full lattice"),
        ),
        c("bool", "DAGGER", variant.dagger.to_string(), None),
        c("bool", "XPAY", variant.xpay.to_string(), None),
        c(
            "bool",
            "RECON12",
            (variant.recon == Recon::R12).to_string(),
            None,
        ),
        c(
            "bool",
            "ANTIPERIODIC_T",
            (variant.boundary == TimeBoundary::Antiperiodic).to_string(),
            None,
        ),
    ]
}

/// The parameters in signature order: each field's pointers (and norms, or a long
/// field's phases and scale) in declaration order, the xpay operand, then what every
/// stencil takes ([`crate::dsl::emit::cuda::trailing_params`]).
fn params(lowered: &Lowered, variant: &Variant, fields: &[KernelField]) -> Vec<Param> {
    let ir = &lowered.ir;
    let mut params = Vec::new();
    let (mut inputs, mut longs) = (0, 0);
    let is_out = |f: &KernelField| ir.field(&f.name).map(|d| d.role) == Some(Role::Out);
    for f in fields {
        let output = is_out(f);
        let name = f.name.clone();
        let owner = match output {
            true => ArgOwner::Output,
            false => ArgOwner::Input(inputs),
        };
        let mut roles = vec![match output {
            true => KernelParam::Output(name.clone()),
            false => KernelParam::Input {
                name: name.clone(),
                index: inputs,
            },
        }];
        match f.long {
            Some(c) => {
                let long = longs;
                longs += 1;
                if c.stores_phase() {
                    roles.push(KernelParam::LongPhase {
                        name: name.clone(),
                        long,
                    });
                }
                roles.push(KernelParam::LongScale { name, long });
            }
            None => roles.extend(f.extra.iter().map(|a| a.param(&name, owner))),
        }
        inputs += usize::from(!output);
        // The declarations come in the order of the roles (the pointer first, then its
        // norms, or its phases and scale).
        params.extend(
            roles
                .into_iter()
                .zip(param_decls(f, owner))
                .map(|(role, decl)| Param { role, decl }),
        );
    }
    if variant.xpay {
        let out = SoaLayout::new(2 * lowered.nspin * lowered.ncolour, variant.spinor);
        let decls = crate::dsl::emit::cuda::site_pointer_params("xpay_x", &out);
        let extra = out.format.codec().args(true, variant.link_scale);
        let roles = std::iter::once(KernelParam::XpayX)
            .chain(extra.iter().map(|a| a.param("xpay_x", ArgOwner::XpayX)));
        params.extend(roles.zip(decls).map(|(role, decl)| Param { role, decl }));
    }
    let names: Vec<(&str, bool)> = fields
        .iter()
        .map(|f| (f.name.as_str(), is_out(f)))
        .collect();
    let rest = crate::dsl::emit::cuda::trailing_params(&names, variant.xpay, variant.region);
    params.extend(rest.into_iter().map(|(role, decl)| Param { role, decl }));
    params
}

/// The stage of term `k`: acc += c · S · L · src(x + n μ̂), every load applied where it
/// is read.
fn term_stage(
    lowered: &Lowered,
    variant: &Variant,
    fields: &[KernelField],
    out_parity: i32,
    k: usize,
    t: &LoweredTerm,
) -> Result<Stage, DslError> {
    let ir = &lowered.ir;
    let ns = lowered.nspin;
    let term = &t.term;
    let invalid = |reason: String| DslError::InvalidSpec {
        kernel: ir.name.clone(),
        reason,
    };
    if !fields.iter().any(|f| f.name == term.source) {
        return Err(invalid(format!("unknown source `{}`", term.source)));
    }
    let reads = lowered
        .input(&term.source)
        .map(|i| i.reads)
        .unwrap_or(ReadSites::Both);
    let (mu, steps) = (term.hop.mu, term.hop.steps);
    let tracks_wraps = variant.boundary == TimeBoundary::Antiperiodic && mu == 3 && steps != 0;
    let mut inner = vec![
        Stmt::SourceIndex {
            reads,
            parity_output: out_parity >= 0,
        },
        Stmt::Load(Load {
            value: Value::Source,
            field: term.source.clone(),
            at: LoadAt::Site {
                site: "n",
                dest: "r",
            },
            reads: Reads::Shared,
            scaling: Scaling::Applied,
        }),
        Stmt::Spinor { spins: ns },
    ];
    let rows = spin_stmts(&mut inner, t, variant.dagger, ns, fields).map_err(invalid)?;
    let scaled_by = link_scopes(&mut inner, &term.links, rows, fields)?;
    let coeff = if variant.dagger {
        t.dagger_coeff
    } else {
        t.coeff
    };
    // A coefficient ±1 becomes the sign of the accumulation.
    let (sign, scale) = if coeff.abs() == 1.0 {
        (coeff as i32, 1.0)
    } else {
        (1, coeff)
    };
    let reconstruct = match &t.spin {
        &SpinLowering::Projected { plan, dagger_plan } => {
            Reconstruct::Projected(if variant.dagger { dagger_plan } else { plan })
        }
        _ => Reconstruct::Rows(ns),
    };
    inner.push(Stmt::Accumulate(Accumulate {
        reconstruct,
        sign,
        scale,
        wraps: tracks_wraps,
        scaled_by,
    }));
    // Dirichlet walls: the term is dropped where the hop leaves x's block.
    let inner = match variant.dirichlet {
        Some(d) if steps != 0 => vec![Stmt::If {
            cond: Cond::SameDirichletBlock {
                mu,
                block: d.block[mu],
            },
            body: inner,
        }],
        _ => inner,
    };
    let mut body = vec![Stmt::Neighbour {
        mu,
        steps,
        tracks_wraps,
    }];
    body.extend(inner);
    Ok(Stage {
        kind: StageKind::Term(TermReads {
            index: k,
            long_link: t.long_link,
            source: term.source.clone(),
            hop: (mu, steps),
            reads,
            links: term.links.clone(),
        }),
        body: vec![Stmt::Scope {
            comment: Some(format!("term {k}: {}", describe_term(t, variant.dagger))),
            body,
        }],
        barrier: false,
    })
}

/// Appends the term's spin statements after the source load (the clover product, the
/// projection to a half spinor, or the twist) and returns the rows the links transport.
/// Errors name an unknown clover field.
fn spin_stmts(
    inner: &mut Vec<Stmt>,
    t: &LoweredTerm,
    dagger: bool,
    ns: usize,
    fields: &[KernelField],
) -> Result<Rows, String> {
    Ok(match &t.spin {
        SpinLowering::Clover { field } => {
            if !fields.iter().any(|f| &f.name == field) {
                return Err(format!("unknown clover field `{field}`"));
            }
            inner.extend([
                Stmt::Comment(
                    "the clover matrix at this (output) site: index i in the output's sites".into(),
                ),
                Stmt::Load(Load {
                    value: Value::Clover,
                    field: field.clone(),
                    at: LoadAt::Site {
                        site: "i",
                        dest: "ca",
                    },
                    reads: Reads::Shared,
                    scaling: Scaling::Applied,
                }),
                Stmt::CloverMul,
            ]);
            Rows::Full(ns)
        }
        &SpinLowering::Projected { plan, dagger_plan } => {
            let p = if dagger { dagger_plan } else { plan };
            inner.push(Stmt::Project {
                rows: p.project,
                biased: None,
            });
            Rows::Half
        }
        SpinLowering::Twisted => {
            inner.push(Stmt::Twist);
            Rows::Full(ns)
        }
        SpinLowering::Rows { .. } => Rows::Full(ns),
    })
}

/// Appends the link product, rightmost link first — per link a scope with its site, its
/// load (the link of a one-link hop read once, streaming) and the transport of `rows` —
/// and returns the loads whose left-out factors the accumulation takes: the source, then
/// the links in load order.
fn link_scopes(
    inner: &mut Vec<Stmt>,
    links: &[crate::dsl::ir::LinkRef],
    rows: Rows,
    fields: &[KernelField],
) -> Result<Vec<Value>, DslError> {
    // Link product, rightmost link first; the link of a one-link hop is read once.
    let link_reads = match links.len() {
        1 => Reads::Once,
        _ => Reads::Shared,
    };
    let mut scaled_by = vec![Value::Source];
    for (j, l) in links.iter().enumerate().rev() {
        let gauge = fields
            .iter()
            .any(|f| f.name == l.field && matches!(f.shape, FieldShape::Gauge { .. }));
        if !gauge {
            return Err(DslError::InvalidSpec {
                kernel: String::new(),
                reason: format!("`{}` is not a gauge field", l.field),
            });
        }
        inner.push(Stmt::Scope {
            comment: Some(describe_link(l)),
            body: vec![
                Stmt::LinkSite(l.clone()),
                Stmt::Load(Load {
                    value: Value::Link(j),
                    field: l.field.clone(),
                    at: LoadAt::Link { mu: l.mu, at: l.at },
                    reads: link_reads,
                    scaling: Scaling::Applied,
                }),
                Stmt::Transport {
                    rows,
                    dagger: l.dagger,
                },
            ],
        });
        scaled_by.push(Value::Link(j));
    }
    Ok(scaled_by)
}
