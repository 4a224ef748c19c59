//! The walking thread map of 5D hops ([`Slices::Walk`]): each thread owns one output
//! site and walks every fifth-dimension slice of it.
//!
//! A block is a 4D tile of whole x rows of the output parity: block.x = L0/2 threads
//! along x, block.y = R rows, the rows a TY × TZ × TT = 2 × R/8 × 4 box in (y, z, t)
//! (R = 8 or 16, a launch knob). Before the slice loop each thread loads the links of
//! all its terms into registers (read once per launch, reused for every slice) and
//! computes where in shared memory each term's source record lies. For slice s the
//! block copies the source rows its hops read — its own rows and one row beyond each
//! face in y, z and t; the x neighbours are in the own rows, which are whole — into a
//! shared-memory stage with `cp.async`, slice s + 1 in flight while s is computed. The
//! terms then read their sources from the stage, with the arithmetic of the plain
//! kernel. Global reads per 5D site: (own + halo rows)/own rows of source records
//! (4.5 for R = 8, 3.5 for R = 16) against 8 for the rows × slices map, which the
//! neighbours reach through L2; one output write; the links once per tile.
//!
//! Measured (f32 Wilson hop on a 32⁴ × 12 field, one parity; BENCHMARKS.md 2026-11-27 (g)
//! and 2026-11-29 (d)): on the standalone harness (`bench/harness/hop5d.cu`) 628 µs
//! against 810 µs for the rows map on an H100, 488–494 against 682–729 µs on an H200;
//! this generated kernel 505 µs against the generated rows map's 652 µs on an H200
//! (65.7 % of copy in issue 16's byte model, against 50.9 %). DRAM-bound on ~25 % more
//! DRAM traffic than the model, most likely halo rows that have left L2 when the next
//! wave of tiles needs them.
//!
//! [`stage_through_shared`] restages a planned, optimised kernel IR: it checks that the
//! stencil is one whose terms are all one-hop reads of one source (one output parity,
//! f32/f64 spinors and links, recon 18 or 12, no Dirichlet walls, the whole parity),
//! drops the prefetch stages, and rewrites each term: the neighbour and its index become
//! [`Stmt::WalkSource`], the source load reads the stage ([`LoadAt::Staged`]), each
//! link's site and load become [`Stmt::WalkLink`]. The printer
//! ([`crate::dsl::emit::cuda`]) prints the tile map, the hoisted links, the copies and
//! the slice loop around the stages and the epilogue from the [`WalkPlan`].

use super::{FifthIndex, KernelIr, LoadAt, Stage, StageKind, Stmt, Value};
use crate::dsl::ir::LinkRef;
use crate::dsl::lower::ReadSites;
use crate::dsl::variant::{OutputSites, Recon, Region, Slices, Variant};
use crate::dsl::DslError;

/// Slices in flight: the one computed and the one being copied.
pub const STAGES: usize = 2;

/// The rows per block (block.y) a walking kernel is launched with.
pub const BLOCK_ROWS: [u32; 2] = [8, 16];

/// The tile's extent in y (rows along y per block).
pub const TILE_Y: u32 = 2;

/// The tile's extent in t.
pub const TILE_T: u32 = 4;

/// The tile of `rows` rows (a [`BLOCK_ROWS`] value): extents (TY, TZ, TT) in y, z, t,
/// [`TILE_Y`] × rows/([`TILE_Y`] [`TILE_T`]) × [`TILE_T`].
pub const fn tile(rows: u32) -> [u32; 3] {
    [TILE_Y, rows / (TILE_Y * TILE_T), TILE_T]
}

/// Rows copied per slice for a tile (TY, TZ, TT): its own and one beyond each face.
pub const fn copied_rows([ty, tz, tt]: [u32; 3]) -> u32 {
    ty * tz * tt + 2 * (tz * tt + ty * tt + ty * tz)
}

/// The largest ratio of copied to own rows over [`BLOCK_ROWS`] (4.5 at 8 rows): the
/// shared memory per thread is this many records per stage.
pub fn copies_per_thread() -> f64 {
    BLOCK_ROWS
        .iter()
        .map(|&r| f64::from(copied_rows(tile(r))) / f64::from(r))
        .fold(0.0, f64::max)
}

/// One term of a walking kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkTerm {
    /// The hop's direction.
    pub mu: usize,
    /// The hop's steps (±1).
    pub steps: i32,
    /// Whether the term flips sign across the antiperiodic time boundary.
    pub tracks_wraps: bool,
    /// The links of its product, in spec order (loaded before the slice loop).
    pub links: Vec<LinkRef>,
}

/// What the printer needs of a walking kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkPlan {
    /// The staged source field.
    pub source: String,
    /// The terms, in stage order ([`Stmt::WalkSource`] and [`Stmt::WalkLink`] index it).
    pub terms: Vec<WalkTerm>,
}

/// Restages `k` (planned and optimised for `variant`) for the walking thread map; a
/// no-op unless `variant.slices` is [`Slices::Walk`]. Errors name the knob and why the
/// stencil cannot walk.
pub fn stage_through_shared(k: &mut KernelIr, variant: &Variant) -> Result<(), DslError> {
    if variant.slices != Slices::Walk {
        return Ok(());
    }
    let refuse = |reason: String| DslError::UnsupportedVariant {
        kernel: k.name.clone(),
        knob: "slices",
        reason: format!("slices=walk: {reason}"),
    };
    if !matches!(variant.sites, OutputSites::Parity(_)) {
        return Err(refuse("the walk covers one output parity".into()));
    }
    if variant.dirichlet.is_some() || variant.region != Region::Whole {
        return Err(refuse(
            "the walk covers the whole parity without Dirichlet walls".into(),
        ));
    }
    if !variant.spinor.is_native() || !variant.gauge.is_native() {
        return Err(refuse(format!(
            "spinors and links in f32 or f64 (found spinor {}, gauge {})",
            variant.spinor.name(),
            variant.gauge.name()
        )));
    }
    if !matches!(variant.recon, Recon::R18 | Recon::R12) {
        return Err(refuse(format!(
            "links in recon 18 or 12 (found {})",
            variant.recon.reals()
        )));
    }
    k.stages.retain(|s| matches!(s.kind, StageKind::Term(_)));
    let mut source = None;
    let mut terms = Vec::new();
    for (n, stage) in k.stages.iter_mut().enumerate() {
        let StageKind::Term(t) = &stage.kind else {
            unreachable!("only term stages are kept");
        };
        if t.hop.1.abs() != 1 || t.reads != ReadSites::OtherParity {
            return Err(refuse(format!(
                "every term a one-hop read of the other parity (term {} hops {} along {})",
                t.index, t.hop.1, t.hop.0
            )));
        }
        if *source.get_or_insert_with(|| t.source.clone()) != t.source {
            return Err(refuse("one source field for every term".into()));
        }
        let term = WalkTerm {
            mu: t.hop.0,
            steps: t.hop.1,
            tracks_wraps: false,
            links: t.links.clone(),
        };
        terms.push(restage_term(stage, n, term).map_err(refuse)?);
    }
    let source = source.ok_or_else(|| refuse("a stencil with terms".into()))?;
    let field = k
        .field(&source)
        .ok_or_else(|| refuse(format!("unknown source `{source}`")))?;
    if field.layout.tail_bytes() != 0 {
        return Err(refuse(format!(
            "a source record of whole 16-byte chunks (`{source}`: {} bytes)",
            field.layout.record_bytes()
        )));
    }
    k.params.push(super::Param {
        role: crate::dsl::interface::KernelParam::Slices,
        decl: "const int walk_ls".into(),
    });
    k.prologue.fifth = FifthIndex::Walk;
    k.prologue.bounds = super::Bounds::WholeBlocks;
    k.library.push(super::DeviceLib::Walk);
    k.walk = Some(WalkPlan { source, terms });
    Ok(())
}

/// Rewrites term stage `stage` (the `n`-th) for the walk and returns its [`WalkTerm`]
/// with `tracks_wraps` filled in; errors for statements the walk cannot stage.
fn restage_term(stage: &mut Stage, n: usize, mut term: WalkTerm) -> Result<WalkTerm, String> {
    let mut trouble = None;
    rewrite(&mut stage.body, n, &mut term, &mut trouble);
    match trouble {
        Some(reason) => Err(reason),
        None => Ok(term),
    }
}

/// Rewrites the statements of term `n` in place (recursively), recording the first
/// statement the walk cannot stage in `trouble`.
fn rewrite(body: &mut Vec<Stmt>, n: usize, term: &mut WalkTerm, trouble: &mut Option<String>) {
    let mut out = Vec::with_capacity(body.len());
    for st in body.drain(..) {
        match st {
            Stmt::Neighbour { tracks_wraps, .. } => {
                term.tracks_wraps = tracks_wraps;
                out.push(Stmt::WalkSource {
                    term: n,
                    tracks_wraps,
                });
            }
            Stmt::SourceIndex { .. } | Stmt::LinkSite(_) => {}
            Stmt::Load(mut load) => match (load.value, load.at) {
                (Value::Source, LoadAt::Site { dest, .. }) => {
                    load.at = LoadAt::Staged { dest };
                    out.push(Stmt::Load(load));
                }
                (Value::Link(j), LoadAt::Link { .. }) => {
                    out.push(Stmt::WalkLink { term: n, link: j });
                }
                (value, _) => {
                    trouble.get_or_insert(format!("a term reading {value:?} (term {n})"));
                }
            },
            Stmt::Scope { comment, mut body } => {
                rewrite(&mut body, n, term, trouble);
                out.push(Stmt::Scope { comment, body });
            }
            Stmt::If { .. } | Stmt::Build { .. } => {
                trouble.get_or_insert(format!("a conditional statement in term {n}"));
            }
            Stmt::CloverMul | Stmt::Twist => {
                trouble.get_or_insert(format!("a site-local operator in term {n}"));
            }
            other => out.push(other),
        }
    }
    *body = out;
}
