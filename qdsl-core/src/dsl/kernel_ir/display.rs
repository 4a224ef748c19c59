//! The kernel IR as text (`qdsl emit KERNEL --kernel-ir`): one line per parameter,
//! constant, buffer and statement, nested statements indented.

use super::{
    Accumulate, BuildFlag, Cond, DeviceLib, KernelIr, Load, LoadAt, Reconstruct, RowDest, RowReach,
    Rows, Stage, StageKind, Stmt,
};
use crate::dsl::emit::cuda::describe_link;
use crate::dsl::spin::Phase;
use std::fmt::{self, Display, Formatter, Write};

impl Display for KernelIr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(f, "kernel {} (real = {})", self.name, self.real.c_type())?;
        let lib: Vec<String> = self.library.iter().map(library).collect();
        writeln!(f, "library: {}", lib.join(", "))?;
        for c in &self.constants {
            writeln!(f, "const {} {} = {}", c.ty, c.name, c.value)?;
        }
        writeln!(f, "fields:")?;
        for x in &self.fields {
            let long = x.long.map_or(String::new(), |c| format!(", long {c:?}"));
            writeln!(
                f,
                "  {}: {:?}, {} reals of {}{long}",
                x.name,
                x.shape,
                x.layout.reals,
                x.layout.format.name()
            )?;
        }
        writeln!(f, "params:")?;
        for p in &self.params {
            writeln!(f, "  {:?}: {}", p.role, p.decl)?;
        }
        for b in &self.shared {
            writeln!(
                f,
                "shared {}: {} reals per thread of the block",
                b.name, b.elems_per_thread
            )?;
        }
        let p = &self.prologue;
        let parity = match p.out_parity {
            -1 => "full lattice".to_string(),
            q => format!("parity {q}"),
        };
        writeln!(
            f,
            "prologue: site per thread ({parity}{}), s5 = {:?}, bounds {:?}{}, acc[{}][3] = 0",
            match p.region {
                crate::dsl::variant::Region::Whole => "",
                crate::dsl::variant::Region::SubBox => ", in the launch's box",
            },
            p.fifth,
            p.bounds,
            if p.checkerboard_index { ", cb" } else { "" },
            p.spins
        )?;
        for s in &self.stages {
            write!(f, "{s}")?;
        }
        let e = &self.epilogue;
        write!(f, "epilogue: ")?;
        match (&e.xpay, e.xpay_in_registers) {
            (Some(_), true) => write!(f, "xpay a·xr + b·acc, ")?,
            (Some(x), false) => write!(f, "xpay a·{} + b·acc, ", load(x))?,
            (None, _) => {}
        }
        writeln!(f, "store {}[io] <- acc ({} spins)", e.out, e.spins)
    }
}

impl Display for Stage {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            StageKind::Term(t) => format!(
                "term {}{}",
                t.index,
                if t.long_link { " (long link)" } else { "" }
            ),
            StageKind::Prefetch { index } => format!("prefetch of term {index}"),
            StageKind::Custom(name) => name.clone(),
        };
        writeln!(f, "stage {kind}:")?;
        let mut text = String::new();
        for s in &self.body {
            stmt(&mut text, 1, s)?;
        }
        f.write_str(&text)?;
        if self.barrier {
            writeln!(f, "  barrier")?;
        }
        Ok(())
    }
}

fn library(lib: &DeviceLib) -> String {
    match lib {
        DeviceLib::Complex => "complex".into(),
        DeviceLib::GridDependencyWait => "grid-dependency-wait".into(),
        DeviceLib::Storage => "storage".into(),
        DeviceLib::Codecs {
            spinor,
            gauge,
            recon,
            long_recon,
        } => format!(
            "codecs(spinor {}, gauge {}, recon {}, long {:?})",
            spinor.name(),
            gauge.name(),
            recon.reals(),
            long_recon
        ),
        DeviceLib::Transport => "transport".into(),
        DeviceLib::Clover => "clover".into(),
        DeviceLib::BoxSite => "box-site".into(),
        DeviceLib::Mma16(op) => format!("mma-{}", op.name()),
        DeviceLib::Walk => "walk".into(),
    }
}

fn load(l: &Load) -> String {
    let at = match &l.at {
        LoadAt::Site { site, dest } => format!("{dest} <- {}[{site}]", l.field),
        LoadAt::Staged { dest } => format!("{dest} <- staged {}[n] of this slice", l.field),
        LoadAt::Link { mu, at } => format!("m <- {}[{mu}] at x {at:+}·mu{mu}", l.field),
    };
    format!(
        "load {:?} {at} (reads {:?}, scale {:?})",
        l.value, l.reads, l.scaling
    )
}

fn rows(r: Rows) -> String {
    match r {
        Rows::Half => "h[2]".into(),
        Rows::Full(n) => format!("v[{n}]"),
    }
}

fn stmt(out: &mut String, d: usize, s: &Stmt) -> fmt::Result {
    let pad = "  ".repeat(d);
    let nested = |out: &mut String, head: String, body: &[Stmt]| -> fmt::Result {
        writeln!(out, "{pad}{head}")?;
        body.iter().try_for_each(|s| stmt(out, d + 1, s))
    };
    match s {
        Stmt::Scope { comment, body } => nested(
            out,
            format!(
                "scope{}",
                comment
                    .as_ref()
                    .map_or(String::new(), |c| format!(" // {c}"))
            ),
            body,
        ),
        Stmt::Build { flag, body } => {
            let flag = match flag {
                BuildFlag::Prefetch => "QDSL_PREFETCH",
                BuildFlag::NotLinksOnly => "!QDSL_PREFETCH_LINKS_ONLY",
            };
            nested(out, format!("#if {flag}"), body)
        }
        Stmt::If { cond, body } => {
            let Cond::SameDirichletBlock { mu, block } = cond;
            nested(
                out,
                format!("if same Dirichlet block (mu {mu}, extent {block})"),
                body,
            )
        }
        Stmt::Comment(c) => writeln!(out, "{pad}// {c}"),
        Stmt::Neighbour {
            mu,
            steps,
            tracks_wraps,
        } => writeln!(
            out,
            "{pad}y = x {steps:+}·mu{mu}{}",
            if *tracks_wraps {
                " (antiperiodic wraps)"
            } else {
                ""
            }
        ),
        Stmt::SourceIndex {
            reads,
            parity_output,
        } => writeln!(
            out,
            "{pad}n = index of y (reads {reads:?}, {} output)",
            if *parity_output { "parity" } else { "full" }
        ),
        Stmt::LinkSite(l) => writeln!(out, "{pad}ln = site of {}", describe_link(l)),
        Stmt::WalkSource { term, tracks_wraps } => writeln!(
            out,
            "{pad}n = shared place of walk term {term}'s source{}",
            if *tracks_wraps { " (and its wraps)" } else { "" }
        ),
        Stmt::WalkLink { term, link } => {
            writeln!(out, "{pad}m <- walk term {term}'s link {link} (in registers)")
        }
        Stmt::Load(l) => writeln!(out, "{pad}{}", load(l)),
        Stmt::Spinor { spins } => writeln!(out, "{pad}v[{spins}] <- r"),
        Stmt::Project { rows, biased } => writeln!(
            out,
            "{pad}project h <- v: h0 = v0 + ({}) v{}, h1 = v1 + ({}) v{}{}",
            phase(rows[0].1),
            rows[0].0,
            phase(rows[1].1),
            rows[1].0,
            biased.map_or(String::new(), |f| format!(" (biased {})", f.name()))
        ),
        Stmt::Twist => writeln!(out, "{pad}twist v <- i gamma5 v"),
        Stmt::CloverMul => writeln!(out, "{pad}clover v <- ca v"),
        Stmt::Transport { rows: r, dagger } => writeln!(
            out,
            "{pad}transport {} <- {} {}",
            rows(*r),
            if *dagger { "m^dagger" } else { "m" },
            rows(*r)
        ),
        Stmt::Accumulate(a) => writeln!(out, "{pad}{}", accumulate(a)),
        Stmt::PrefetchSite { field } => writeln!(out, "{pad}prefetch {field}[n]"),
        Stmt::PrefetchLink { field, mu } => writeln!(out, "{pad}prefetch {field}[{mu}] at ln"),
        Stmt::SharedStore { buffer, src, reals } => {
            writeln!(out, "{pad}shared {buffer}[thread] <- {src}[{reals}]")
        }
        Stmt::SharedLoad {
            buffer,
            dest,
            reals,
            dy,
        } => writeln!(out, "{pad}{dest}[{reals}] <- shared {buffer}[s5 {dy:+}]"),
        Stmt::AddReals { src, coeff, spins } => {
            writeln!(out, "{pad}acc[{spins}] += {coeff:?} {src}")
        }
        Stmt::Mma(op) => match op {
            super::MmaOp::Sync {
                instruction: i,
                a,
                b,
                d,
            } => writeln!(
                out,
                "{pad}mma {} {}->{}: {d} += {a} * {b}",
                i.shape.name(),
                i.operand.name(),
                i.accumulator.name()
            ),
            super::MmaOp::LoadMatrix { dest, count, addr } => {
                writeln!(out, "{pad}ldmatrix x{count} {dest} <- shared {addr}")
            }
        },
        Stmt::Barrier => writeln!(out, "{pad}barrier"),
        Stmt::SharedStoreAcc { buffer, spins } => {
            writeln!(out, "{pad}shared {buffer}[thread] <- acc[{spins}]")
        }
        Stmt::SharedLoadAcc { buffer, spins } => {
            writeln!(out, "{pad}acc[{spins}] <- shared {buffer}[thread]")
        }
        Stmt::ChiralSolve(r) => writeln!(
            out,
            "{pad}{b} <- {} {b}: solve of the cyclic bidiagonal {m}{} per component, in place",
            r.piece,
            if r.dagger { " (dagger)" } else { "" },
            m = r.matrix,
            b = r.buffer
        ),
        Stmt::ChiralMma(r) => writeln!(
            out,
            "{pad}{b} <- {} {b}: {m}± times each chirality's columns on the tensor cores (m16n8k16 {}, f32 accumulation, per-column scaling), in place",
            r.piece,
            r.operand.name(),
            m = r.matrix,
            b = r.buffer
        ),
        Stmt::ChiralRow(r) => {
            let dest = match r.dest {
                RowDest::Reals(d) => d,
                RowDest::Accumulator => "acc",
            };
            let reach = match r.reach {
                RowReach::Dense => "s' = 0..Ls",
                RowReach::Neighbours => "s' = s5-1, s5, s5+1",
            };
            writeln!(
                out,
                "{pad}{dest} <- {} row: sum over {reach} of {m}+[s5][s'] P+ {b}[s'] + {m}-[s5][s'] P- {b}[s']",
                r.piece,
                m = r.matrix,
                b = r.buffer
            )
        }
    }
}

fn phase(p: Phase) -> &'static str {
    match (p.re, p.im) {
        (1, 0) => "1",
        (-1, 0) => "-1",
        (0, 1) => "i",
        _ => "-i",
    }
}

fn accumulate(a: &Accumulate) -> String {
    let how = match a.reconstruct {
        Reconstruct::Rows(n) => format!("v[{n}]"),
        Reconstruct::Projected(p) => format!(
            "reconstruct(1 {} gamma{}) h",
            if p.sign > 0 { '+' } else { '-' },
            p.mu
        ),
    };
    let mut s = format!("acc += {}", if a.sign < 0 { "-" } else { "" });
    if a.scale != 1.0 {
        let _ = write!(s, "{:?} · ", a.scale);
    }
    if a.wraps {
        s.push_str("(-1)^wraps · ");
    }
    let _ = write!(s, "{how}");
    if !a.scaled_by.is_empty() {
        let _ = write!(s, " · left-out factors of {:?}", a.scaled_by);
    }
    s
}

#[cfg(test)]
mod tests {
    use crate::dsl::ir::{FieldDecl, FieldShape, Hop, Ir, LinkRef, Role, SpinOp, Term};
    use crate::dsl::lower::lower;
    use crate::dsl::variant::Variant;

    /// One Wilson term (1 − γ0) U_0(x) ψ(x + 0̂) after the passes, printed: the stages of
    /// its prefetch and the term, the statements in order, indented by nesting.
    #[test]
    fn a_planned_term_prints_its_statements() {
        let spinor = FieldShape::Spinor {
            nspin: 4,
            ncolour: 3,
        };
        let f = |name: &str, shape, role| FieldDecl {
            name: name.into(),
            shape,
            role,
        };
        let ir = Ir {
            name: "one_term".into(),
            doc: String::new(),
            fields: vec![
                f("out", spinor, Role::Out),
                f("psi", spinor, Role::In),
                f("u", FieldShape::links(3), Role::In),
            ],
            terms: vec![Term {
                output: "out".into(),
                coeff: 1.0,
                spin: SpinOp::Projector { mu: 0, sign: -1 },
                links: vec![LinkRef {
                    field: "u".into(),
                    mu: 0,
                    at: 0,
                    dagger: false,
                }],
                source: "psi".into(),
                hop: Hop { mu: 0, steps: 1 },
            }],
            knobs: Default::default(),
        };
        let k =
            crate::dsl::emit::cuda::kernel_ir(&lower(&ir).unwrap(), &Variant::default()).unwrap();
        let text = k.to_string();
        let term = text
            .split("stage term 0:\n")
            .nth(1)
            .and_then(|t| t.split("epilogue").next())
            .expect("a term stage");
        assert_eq!(
            term,
            "  scope // term 0: +1 * (1 - gamma(0)) * u[0](x) * psi(x + mu0)
    y = x +1·mu0
    n = index of y (reads OtherParity, parity output)
    load Source r <- psi[n] (reads Shared, scale Deferred)
    v[4] <- r
    project h <- v: h0 = v0 + (-i) v3, h1 = v1 + (-i) v2
    scope // u[0](x)
      ln = site of u[0](x)
      load Link(0) m <- u[0] at x +0·mu0 (reads Once, scale Deferred)
      transport h[2] <- m h[2]
    acc += reconstruct(1 - gamma0) h · left-out factors of [Source, Link(0)]
"
        );
        assert!(text.starts_with("kernel one_term_"));
        assert!(text.contains("stage prefetch of term 0:\n  #if QDSL_PREFETCH\n"));
        assert!(text.contains("epilogue: store out[io] <- acc (4 spins)"));
    }
}
