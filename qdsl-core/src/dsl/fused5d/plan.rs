//! A [`Chain`] and a [`FusedVariant`] → the kernel IR of one fused kernel.
//!
//! The hop's stencil is planned as today ([`crate::dsl::kernel_ir::plan`]); a chain
//! without a hop starts from the frame of the identity stencil out(x) = ψ(x). Then:
//! s5 = threadIdx.y (block.y = Ls), whole blocks of sites (no early return: every
//! thread reaches every barrier), one shared buffer `column` of 24 reals per thread
//! (the block's s-columns; none for the hop alone), and
//! * each piece acting on the hop's source, inside every term right after the source
//!   load: the thread's record ψ(y, s5) to `column`, a barrier, the piece's row
//!   r = Σ_s' A₊(s5, s') P₊ column[s'] + A₋(s5, s') P₋ column[s'] ([`ChiralRow`]), a
//!   barrier (the buffer is reused by the next term);
//! * each piece acting on the result, a stage storing the accumulator to `column`, a
//!   barrier, a stage with the row into the accumulator (and a barrier where the buffer
//!   is used again) — except M5⁻¹ (M5⁻†), which the variant's `m5inv` knob
//!   ([`M5invMode`]) applies in place on the column: solved from M5's (M5†'s) matrices in
//!   O(Ls) ([`ChiralSolve`], the sweep), or multiplied on the tensor cores ([`ChiralMma`],
//!   `mma_f16`, `mma_bf16`), the next piece reading the column as it is; `dense` applies
//!   the inverse's rows like any other piece;
//! * the xpay operand's piece: x(io) to `column`, a barrier, its row into `xr`, which the
//!   epilogue then reads (out = a · (X x) + b · acc).
//!
//! Sparse pieces (M5, M_φ and adjoints) read column[s5 − 1], column[s5], column[s5 + 1]
//! (mod Ls) and the matching entries of their matrices (Ls ≥ 3; with Ls = 2 the two
//! neighbours coincide and the row is read dense). The matrices are kernel parameters
//! ([`KernelParam::ChiralMatrices`], after every stencil parameter). Then the passes
//! ([`crate::dsl::kernel_ir::passes`]) run as for any stencil.

use super::{Chain, FusedVariant, M5invMode, SOp, SPiece};
use crate::dsl::emit::cuda;
use crate::dsl::interface::{CompiledKernel, Geometry, KernelParam};
use crate::dsl::ir::{FieldDecl, FieldShape, Hop, Ir, Role, SpinOp, Term};
use crate::dsl::kernel_ir::{
    self, passes, ChiralMma, ChiralRow, ChiralSolve, Constant, DeviceLib, KernelIr, Load, LoadAt,
    Param, Reads, RowDest, RowReach, Scaling, SharedBuffer, Stage, StageKind, Stmt, Value,
};
use crate::dsl::knob_space::{Extents, LaunchSpace};
use crate::dsl::lower::{lower, Lowered};
use crate::dsl::variant::{fnv1a, Variant};
use crate::dsl::DslError;

/// The shared buffer of the block's s-columns.
const COLUMN: &str = "column";
/// Reals of a Wilson spinor record.
const SPINOR_REALS: usize = 24;

/// The `extern "C"` name: `<chain name>_<16 hex digits of the variant's hash>` (the hash
/// of [`FusedVariant::canonical`], which includes Ls).
pub fn kernel_name(chain: &Chain, v: &FusedVariant) -> String {
    format!("{}_{:016x}", chain.name, fnv1a(v.canonical().as_bytes()))
}

/// The kernel IR of one variant of `chain` after the passes; `hop` is the lowered spec
/// the chain's hop is bound to (`None` exactly when the chain has no hop). Errors for a
/// variant the chain does not support ([`Chain::check`]) or a hop that is not a 4-spin,
/// 3-colour stencil with 3 × 3 links.
pub fn kernel_ir(
    chain: &Chain,
    hop: Option<&Lowered>,
    v: &FusedVariant,
) -> Result<KernelIr, DslError> {
    chain.check(v)?;
    let invalid = |reason: String| DslError::InvalidSpec {
        kernel: chain.name.clone(),
        reason,
    };
    let mut k = match (chain.hop_position(), hop) {
        (Some(_), Some(lowered)) => {
            if lowered.nspin != 4 || lowered.ncolour != 3 || lowered.dense.is_some() {
                return Err(invalid(format!(
                    "the hop `{}` must act on 4-spin, 3-colour fields with 3 × 3 links",
                    lowered.ir.name
                )));
            }
            let hop_variant = Variant {
                dagger: chain.hop_dagger(),
                ..v.variant
            };
            cuda::check_variant(lowered, &hop_variant)?;
            kernel_ir::plan(lowered, &hop_variant)?
        }
        (None, None) => identity_frame(chain, &v.variant)?,
        (Some(_), None) => return Err(invalid("the chain's hop has no stencil".into())),
        (None, Some(l)) => {
            return Err(invalid(format!(
                "a stencil `{}` is bound but no piece of the chain is the hop",
                l.ir.name
            )))
        }
    };
    k.name = kernel_name(chain, v);
    k.header = header(chain, v, &k.name, hop);
    k.constants.push(Constant {
        ty: "int",
        name: "LS",
        value: v.ls.to_string(),
        comment: Some("fifth-dimension extent: blockDim.y"),
    });
    k.prologue.fifth = kernel_ir::FifthIndex::ThreadY;
    k.prologue.bounds = kernel_ir::Bounds::WholeBlocks;
    // The s-columns are shared only where an s-local piece reads them: the hop alone
    // (`mobius_dslash4`) needs no shared memory.
    let s_local = !chain.source_pieces().is_empty()
        || !chain.result_pieces().is_empty()
        || chain.xpay.is_some();
    if s_local {
        k.shared = vec![SharedBuffer {
            name: COLUMN.into(),
            elems_per_thread: SPINOR_REALS,
        }];
    }
    let row = |piece: SPiece, dest| {
        Stmt::ChiralRow(ChiralRow {
            buffer: COLUMN.into(),
            matrix: piece.param_name(),
            piece: piece.to_string(),
            reach: if piece.op.is_sparse() && v.ls >= 3 {
                RowReach::Neighbours
            } else {
                RowReach::Dense
            },
            dest,
        })
    };
    // Pieces on the hop's source: inside every term, after the source load.
    let source: Vec<Stmt> = chain
        .source_pieces()
        .into_iter()
        .flat_map(|p| {
            [
                Stmt::SharedStore {
                    buffer: COLUMN.into(),
                    src: "r",
                    reals: SPINOR_REALS,
                },
                Stmt::Barrier,
                row(p, RowDest::Reals("r")),
                Stmt::Barrier,
            ]
        })
        .collect();
    if !source.is_empty() {
        for stage in &mut k.stages {
            if matches!(stage.kind, StageKind::Term(_)) {
                insert_after_source_load(&mut stage.body, &source);
            }
        }
    }
    // Pieces on the result; a barrier after a row only where the buffer is used again.
    // M5⁻¹ is solved in place on the column (whose value the next piece then reads).
    let result = chain.result_pieces();
    let mut column_current = false;
    for (n, &p) in result.iter().enumerate() {
        let reused = n + 1 < result.len() || chain.xpay.is_some();
        if !column_current {
            k.stages.push(Stage {
                kind: StageKind::Custom(format!("{p}: the accumulator to shared memory")),
                body: vec![Stmt::SharedStoreAcc {
                    buffer: COLUMN.into(),
                    spins: 4,
                }],
                barrier: true,
            });
        }
        let in_place = match (p.op, v.m5inv) {
            (SOp::M5Inv, M5invMode::Sweep) => Some((
                format!("{p}: solved in place on the column"),
                Stmt::ChiralSolve(ChiralSolve {
                    buffer: COLUMN.into(),
                    matrix: p.solve_operand().param_name(),
                    piece: p.to_string(),
                    dagger: p.dagger,
                }),
            )),
            (SOp::M5Inv, mode) => mode.operand().map(|operand| {
                (
                    format!("{p}: on the tensor cores, in place on the column"),
                    Stmt::ChiralMma(ChiralMma {
                        buffer: COLUMN.into(),
                        matrix: p.param_name(),
                        piece: p.to_string(),
                        operand,
                    }),
                )
            }),
            _ => None,
        };
        if let Some((what, body)) = in_place {
            k.stages.push(Stage {
                kind: StageKind::Custom(what),
                body: vec![body],
                barrier: true,
            });
            column_current = true;
        } else {
            k.stages.push(Stage {
                kind: StageKind::Custom(format!("{p}: its row into the accumulator")),
                body: vec![row(p, RowDest::Accumulator)],
                barrier: reused,
            });
            column_current = false;
        }
    }
    if column_current {
        k.stages.push(Stage {
            kind: StageKind::Custom("the solved column into the accumulator".into()),
            body: vec![Stmt::SharedLoadAcc {
                buffer: COLUMN.into(),
                spins: 4,
            }],
            barrier: chain.xpay.is_some(),
        });
    }
    // The xpay operand's piece.
    if let (Some(p), Some(load)) = (chain.xpay, k.epilogue.xpay.clone()) {
        k.stages.push(Stage {
            kind: StageKind::Custom(format!("{p}: the xpay operand to shared memory")),
            body: vec![
                Stmt::Load(load),
                Stmt::SharedStore {
                    buffer: COLUMN.into(),
                    src: "xr",
                    reals: SPINOR_REALS,
                },
            ],
            barrier: true,
        });
        k.stages.push(Stage {
            kind: StageKind::Custom(format!("{p}: its row into the xpay operand")),
            body: vec![row(p, RowDest::Reals("xr"))],
            barrier: false,
        });
        k.epilogue.xpay_in_registers = true;
    }
    // The matrices, after every stencil parameter.
    k.params
        .extend(chain.kernel_matrices(v.m5inv).into_iter().map(|p| Param {
            decl: format!("const real* __restrict__ {}", p.param_name()),
            role: KernelParam::ChiralMatrices(p),
        }));
    if let Some(op) = v.m5inv.operand() {
        k.library.push(DeviceLib::Mma16(op));
    }
    passes::run_all(&mut k);
    Ok(k)
}

/// The kernel with its interface: [`kernel_ir`] printed ([`cuda::print`]), launched with
/// 2-D blocks of 4D sites (x) × all Ls slices (y, [`LaunchSpace::sites_by_slices`]) and
/// 24 reals of shared memory per thread.
pub fn compile(
    chain: &Chain,
    hop: Option<&Lowered>,
    v: &FusedVariant,
) -> Result<CompiledKernel, DslError> {
    let k = kernel_ir(chain, hop, v)?;
    let mut compiled = cuda::print(&k);
    let per_thread = u32::try_from(k.shared_bytes([1, 1, 1])).unwrap_or(u32::MAX);
    compiled.geometry = Geometry::per_site(per_thread)
        .with_tunable_block(2, LaunchSpace::sites_by_slices(SITES_PER_BLOCK, 8));
    Ok(compiled)
}

/// The 4D sites per block the tuner tries: powers of two (the output's site count must
/// be a multiple of the block's: whole blocks), at most 64 (64 × Ls threads stay within
/// 1024 for Ls ≤ 16; their 24 reals of shared memory each beyond 48 KiB are opted into
/// at launch).
pub const SITES_PER_BLOCK: Extents = Extents::PowersOfTwo { min: 1, max: 64 };

/// Inserts `stmts` right after the (first) source load of a term body, looking into
/// scopes.
fn insert_after_source_load(body: &mut Vec<Stmt>, stmts: &[Stmt]) -> bool {
    for k in 0..body.len() {
        if matches!(
            &body[k],
            Stmt::Load(Load {
                value: Value::Source,
                ..
            })
        ) {
            body.splice(k + 1..k + 1, stmts.iter().cloned());
            return true;
        }
        let inner = match &mut body[k] {
            Stmt::Scope { body, .. } | Stmt::If { body, .. } | Stmt::Build { body, .. } => body,
            _ => continue,
        };
        if insert_after_source_load(inner, stmts) {
            return true;
        }
    }
    false
}

/// The stencil a chain's kernel is framed on (its fields, what each is read on): the
/// hop's spec `hop`, or for a chain without a hop the identity stencil out(x) = ψ(x).
pub fn frame_ir(chain: &Chain, hop: Option<Ir>) -> Ir {
    hop.unwrap_or_else(|| identity_ir(chain))
}

/// The identity stencil out(x) = ψ(x) of Wilson fields, named after the chain.
fn identity_ir(chain: &Chain) -> Ir {
    let spinor = FieldShape::Spinor {
        nspin: 4,
        ncolour: 3,
    };
    let decl = |name: &str, role| FieldDecl {
        name: name.into(),
        shape: spinor,
        role,
    };
    Ir {
        name: chain.name.clone(),
        doc: chain.doc.clone(),
        fields: vec![decl("out", Role::Out), decl("psi", Role::In)],
        terms: vec![Term {
            output: "out".into(),
            coeff: 1.0,
            spin: SpinOp::Identity,
            links: Vec::new(),
            source: "psi".into(),
            hop: Hop { mu: 0, steps: 0 },
        }],
        knobs: Default::default(),
    }
}

/// The frame of a chain without a hop: the identity stencil planned for the variant
/// (fields, parameters, library, epilogue), its one stage replaced by the load of ψ at
/// the output's index into the accumulator.
fn identity_frame(chain: &Chain, variant: &Variant) -> Result<KernelIr, DslError> {
    let lowered = lower(&identity_ir(chain))?;
    let mut k = kernel_ir::plan(&lowered, variant)?;
    k.stages = vec![Stage {
        kind: StageKind::Custom("psi(x, s5) into the accumulator".into()),
        body: vec![
            Stmt::Load(Load {
                value: Value::Source,
                field: "psi".into(),
                at: LoadAt::Site {
                    site: "io",
                    dest: "r",
                },
                reads: Reads::Once,
                scaling: Scaling::Applied,
            }),
            Stmt::AddReals {
                src: "r",
                coeff: 1.0,
                spins: 4,
            },
        ],
        barrier: false,
    }];
    Ok(k)
}

/// The kernel's opening comment: its name, the spec and the chain, the doc, the variant.
fn header(chain: &Chain, v: &FusedVariant, name: &str, hop: Option<&Lowered>) -> Vec<String> {
    let mut lines = vec![
        format!(" {name}"),
        format!(
            " Generated by qdsl from the fused5d spec `{}`. Do not edit.",
            chain.name
        ),
    ];
    lines.extend(chain.doc.lines().map(|l| l.trim_end().to_string()));
    lines.push(format!(
        " chain (applied right to left): {}",
        chain.describe()
    ));
    if let Some(h) = hop {
        lines.push(format!(" hop: the stencil `{}`", h.ir.name));
    }
    lines.push(format!(" variant: {}", v.canonical()));
    lines
}
