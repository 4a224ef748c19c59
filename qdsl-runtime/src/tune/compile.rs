//! Compile knobs of the stencil kernels: the register cap.
//!
//! A kernel using r registers per thread fits at most ⌊65536 / (32·r)⌋ warps on one
//! multiprocessor (64 K registers, 64 warps on sm_80/sm_90), so a latency-bound kernel
//! with many registers runs at low occupancy (the fixed16 Wilson hop: 96 registers, 21
//! warps, 31 %). Capping registers raises occupancy at the price of spills. The caps of
//! [`REGISTER_CAPS`] are the occupancy steps worth trying:
//!
//! | cap | 32 | 40 | 48 | 64 | 80 | 96 | 128 |
//! |---|---|---|---|---|---|---|---|
//! | warps / SM | 64 | 51 | 42 | 32 | 25 | 21 | 16 |
//!
//! (values in between buy no warp step worth a separate build; above 128 the cap only
//! matters for f64 kernels, which are bandwidth-bound anyway). A cap at or above the
//! uncapped build's own count changes nothing, so [`compile_knobs`] drops those.
//!
//! The prefetch build (`-DQDSL_PREFETCH=1`) turns on the generated `#if QDSL_PREFETCH`
//! blocks of a stencil kernel: each term asks L2 for the next term's records before its
//! own loads, more reads in flight at the price of the addresses' registers (the fixed16
//! Wilson hop: 89 → 108 registers). Its links-only form (`-DQDSL_PREFETCH_LINKS_ONLY=1`
//! as well) leaves out the source records: each source site is read by up to eight
//! neighbours' terms and mostly hits in L2 already, so its prefetch is mostly spent
//! instructions and address registers (H100 harness, fixed16 Wilson hop at 32⁴, 96
//! registers: 63.4 → 62.3 µs). Both are tried uncapped and at 128 and 96 registers.
//!
//! A knob travels through the tuner as its label ([`CompileKnob::label`], the tune
//! cache's `compile` column): `""` (shown `-`) for the default build, `maxnreg=R`,
//! `prefetch`, `prefetch-links`, each of the two with `+maxnreg=R`.

use qdsl_core::dsl::CompileSpace;
use std::fmt;

pub use qdsl_core::dsl::knob_space::PREFETCH_MACRO;

/// The register caps tried (see the module doc for why these).
pub const REGISTER_CAPS: [u32; 7] = [32, 40, 48, 64, 80, 96, 128];

/// The register caps tried with the prefetch build.
pub const PREFETCH_CAPS: [Option<u32>; 3] = [None, Some(128), Some(96)];

/// Prefix of a register-cap label.
const MAXNREG: &str = "maxnreg=";

/// The NVRTC define that turns the prefetch blocks on.
pub const PREFETCH_DEFINE: &str = "-DQDSL_PREFETCH=1";

/// The NVRTC define that, with [`PREFETCH_DEFINE`], leaves the source records out of the
/// prefetch blocks.
pub const PREFETCH_LINKS_ONLY_DEFINE: &str = "-DQDSL_PREFETCH_LINKS_ONLY=1";

/// What a prefetch build asks L2 for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PrefetchScope {
    /// The next term's source and link records (`prefetch`).
    Records,
    /// Its link records only (`prefetch-links`).
    Links,
}

impl PrefetchScope {
    /// Both scopes, in the order tried.
    pub const ALL: [Self; 2] = [Self::Records, Self::Links];

    /// The label (before `+maxnreg=R` when capped).
    pub const fn label(self) -> &'static str {
        match self {
            Self::Records => "prefetch",
            Self::Links => "prefetch-links",
        }
    }
}

/// One compile variant of a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CompileKnob {
    /// The build as generated, registers chosen by the assembler.
    Default,
    /// At most this many registers per thread (PTX `.maxnreg`, see
    /// [`crate::jit::register_cap`]).
    MaxRegisters(u32),
    /// A prefetch build ([`PREFETCH_DEFINE`], [`PREFETCH_LINKS_ONLY_DEFINE`] for
    /// [`PrefetchScope::Links`]), with an optional register cap.
    Prefetch(PrefetchScope, Option<u32>),
}

/// A compile label that is no knob.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown compile knob {found:?} (expected \"\", \"{MAXNREG}R\", \"prefetch\", \"prefetch-links\", or one of the two with \"+{MAXNREG}R\", R ≥ 1)"
)]
pub struct UnknownCompileKnob {
    /// The label found.
    pub found: String,
}

impl CompileKnob {
    /// The label: `""` for [`Self::Default`], `maxnreg=R` for a cap, `prefetch`,
    /// `prefetch-links`, `prefetch+maxnreg=R`, `prefetch-links+maxnreg=R`.
    pub fn label(&self) -> String {
        match self {
            Self::Default => String::new(),
            Self::MaxRegisters(r) => format!("{MAXNREG}{r}"),
            Self::Prefetch(scope, None) => scope.label().to_string(),
            Self::Prefetch(scope, Some(r)) => format!("{}+{MAXNREG}{r}", scope.label()),
        }
    }

    /// The extra NVRTC options of the build.
    pub fn nvrtc_options(&self) -> Vec<String> {
        match self {
            Self::Prefetch(PrefetchScope::Records, _) => vec![PREFETCH_DEFINE.to_string()],
            Self::Prefetch(PrefetchScope::Links, _) => vec![
                PREFETCH_DEFINE.to_string(),
                PREFETCH_LINKS_ONLY_DEFINE.to_string(),
            ],
            _ => Vec::new(),
        }
    }

    /// The register cap of the build, if any.
    pub fn register_cap(&self) -> Option<u32> {
        match *self {
            Self::Default => None,
            Self::MaxRegisters(r) => Some(r),
            Self::Prefetch(_, cap) => cap,
        }
    }

    /// The knob of `label` (the inverse of [`Self::label`]; `-`, the cache's empty
    /// string, is also the default).
    pub fn parse(label: &str) -> Result<Self, UnknownCompileKnob> {
        let unknown = || UnknownCompileKnob {
            found: label.into(),
        };
        let cap = |l: &str| {
            l.strip_prefix(MAXNREG)
                .and_then(|r| r.parse::<u32>().ok())
                .filter(|&r| r > 0)
        };
        if matches!(label, "" | "-") {
            return Ok(Self::Default);
        }
        // The longer label first: "prefetch" is a prefix of "prefetch-links".
        let prefetch = [PrefetchScope::Links, PrefetchScope::Records]
            .into_iter()
            .find_map(|p| label.strip_prefix(p.label()).map(|rest| (p, rest)));
        match prefetch {
            Some((scope, "")) => Some(Self::Prefetch(scope, None)),
            Some((scope, rest)) => rest
                .strip_prefix('+')
                .and_then(cap)
                .map(|r| Self::Prefetch(scope, Some(r))),
            None => cap(label).map(Self::MaxRegisters),
        }
        .ok_or_else(unknown)
    }
}

impl fmt::Display for CompileKnob {
    /// The label, `none` for the default build (for tables).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Default => write!(f, "none"),
            k => write!(f, "{}", k.label()),
        }
    }
}

/// The one build compiled for a kernel on first use under the launch policy
/// ([`crate::tune::TunePolicy::Launch`]; also used untuned), given its compile knobs:
/// for a kernel with the prefetch knob (a source with prefetch blocks) the links-only
/// prefetch build, uncapped (`prefetch-links`), else the default build. Why: in the H100 tables of `BENCHMARKS.md` (2026-11-26, 24⁴ and 32⁴) the
/// winner of the full search was a links-only prefetch build (uncapped or capped at 128
/// registers) for every Wilson hop and most staggered hops, and a 128 cap only matters
/// where the uncapped build needs more; the full search (`QDSL_TUNE=full`) remains for
/// the last per cent.
pub fn heuristic_knob(space: &CompileSpace) -> CompileKnob {
    if space.prefetch {
        CompileKnob::Prefetch(PrefetchScope::Links, None)
    } else {
        CompileKnob::Default
    }
}

/// The builds of a kernel's compile knobs `space` to tune, default first: where the
/// space has register caps, every cap of [`REGISTER_CAPS`] below `uncapped_registers`
/// (the default build's count; all caps when unknown), then, where it has the prefetch
/// knob, the prefetch builds of both scopes with the caps of [`PREFETCH_CAPS`] (kept
/// capped even without the register-cap knob: they are prefetch builds).
pub fn compile_knobs(space: &CompileSpace, uncapped_registers: Option<u32>) -> Vec<CompileKnob> {
    let prefetch_builds = PrefetchScope::ALL
        .into_iter()
        .filter(|_| space.prefetch)
        .flat_map(|scope| {
            PREFETCH_CAPS
                .into_iter()
                .map(move |cap| CompileKnob::Prefetch(scope, cap))
        });
    std::iter::once(CompileKnob::Default)
        .chain(
            REGISTER_CAPS
                .into_iter()
                .filter(|_| space.register_caps)
                .filter(|&c| uncapped_registers.is_none_or(|r| c < r))
                .map(CompileKnob::MaxRegisters),
        )
        .chain(prefetch_builds)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stencil's compile knobs: register caps, and prefetch if `prefetch`.
    fn stencil(prefetch: bool) -> CompileSpace {
        CompileSpace {
            register_caps: true,
            prefetch,
        }
    }

    #[test]
    fn labels_round_trip_and_bad_labels_are_named() {
        assert_eq!(CompileKnob::Default.label(), "");
        assert_eq!(CompileKnob::MaxRegisters(64).label(), "maxnreg=64");
        use PrefetchScope::{Links, Records};
        assert_eq!(CompileKnob::Prefetch(Records, None).label(), "prefetch");
        assert_eq!(
            CompileKnob::Prefetch(Records, Some(96)).label(),
            "prefetch+maxnreg=96"
        );
        assert_eq!(CompileKnob::Prefetch(Links, None).label(), "prefetch-links");
        assert_eq!(
            CompileKnob::Prefetch(Links, Some(128)).label(),
            "prefetch-links+maxnreg=128"
        );
        for k in compile_knobs(&stencil(true), None) {
            assert_eq!(CompileKnob::parse(&k.label()), Ok(k));
        }
        assert_eq!(CompileKnob::parse("-"), Ok(CompileKnob::Default));
        for bad in [
            "maxnreg=0",
            "maxnreg=",
            "maxnreg=x",
            "maxrregcount=64",
            "64",
            "prefetch+",
            "prefetch+maxnreg=0",
            "prefetchmaxnreg=96",
            "prefetch+96",
            "prefetch-links+",
            "prefetch-link",
            "prefetch-links96",
            "prefetch+links",
        ] {
            assert_eq!(
                CompileKnob::parse(bad),
                Err(UnknownCompileKnob { found: bad.into() })
            );
        }
        assert_eq!(CompileKnob::Default.to_string(), "none");
        assert_eq!(CompileKnob::MaxRegisters(40).to_string(), "maxnreg=40");
    }

    #[test]
    fn only_caps_below_the_uncapped_count_are_tried() {
        use CompileKnob::{Default, MaxRegisters as M};
        // The fixed16 Wilson hop's 96 registers (H100 profile): six caps below it.
        assert_eq!(
            compile_knobs(&stencil(false), Some(96)),
            vec![Default, M(32), M(40), M(48), M(64), M(80)]
        );
        assert_eq!(compile_knobs(&stencil(false), Some(32)), vec![Default]);
        assert_eq!(
            compile_knobs(&stencil(false), Some(33)),
            vec![Default, M(32)]
        );
        assert_eq!(
            compile_knobs(&stencil(false), None).len(),
            1 + REGISTER_CAPS.len()
        );
        // Sources with prefetch blocks add the three prefetch builds of each scope.
        use CompileKnob::Prefetch as P;
        use PrefetchScope::{Links, Records};
        assert_eq!(
            compile_knobs(&stencil(true), Some(33)),
            vec![
                Default,
                M(32),
                P(Records, None),
                P(Records, Some(128)),
                P(Records, Some(96)),
                P(Links, None),
                P(Links, Some(128)),
                P(Links, Some(96)),
            ]
        );
    }

    #[test]
    fn the_heuristic_build_is_links_only_prefetch_where_the_source_has_it() {
        let with = format!("#if {PREFETCH_MACRO}\n#endif\n");
        let knob = heuristic_knob(&stencil(false).with_prefetch_of(&with));
        assert_eq!(knob, CompileKnob::Prefetch(PrefetchScope::Links, None));
        // It is a point of the full search, so a full tuning's cache entry covers it.
        assert!(compile_knobs(&stencil(true), Some(200)).contains(&knob));
        assert_eq!(
            heuristic_knob(&stencil(false).with_prefetch_of("extern \"C\" __global__ void k() {}")),
            CompileKnob::Default
        );
        // A kernel without compile knobs has the default build only.
        assert_eq!(
            compile_knobs(&CompileSpace::NONE, Some(255)),
            vec![CompileKnob::Default]
        );
        assert_eq!(heuristic_knob(&CompileSpace::NONE), CompileKnob::Default);
        // Prefetch without register caps: the prefetch builds, no plain caps.
        let prefetch_only = CompileSpace {
            register_caps: false,
            prefetch: true,
        };
        let builds = compile_knobs(&prefetch_only, Some(255));
        assert_eq!(builds.len(), 1 + 6);
        assert!(!builds
            .iter()
            .any(|k| matches!(k, CompileKnob::MaxRegisters(_))));
    }

    #[test]
    fn builds_map_to_options_and_caps() {
        assert!(CompileKnob::Default.nvrtc_options().is_empty());
        assert_eq!(CompileKnob::Default.register_cap(), None);
        assert_eq!(CompileKnob::MaxRegisters(80).register_cap(), Some(80));
        assert!(CompileKnob::MaxRegisters(80).nvrtc_options().is_empty());
        let p = CompileKnob::Prefetch(PrefetchScope::Records, Some(96));
        assert_eq!(
            (p.nvrtc_options(), p.register_cap()),
            (vec![PREFETCH_DEFINE.to_string()], Some(96))
        );
        let l = CompileKnob::Prefetch(PrefetchScope::Links, None);
        assert_eq!(
            (l.nvrtc_options(), l.register_cap()),
            (
                vec![
                    PREFETCH_DEFINE.to_string(),
                    PREFETCH_LINKS_ONLY_DEFINE.to_string()
                ],
                None
            )
        );
        assert!(PREFETCH_DEFINE.contains(PREFETCH_MACRO));
        assert!(PREFETCH_LINKS_ONLY_DEFINE.contains(PREFETCH_MACRO));
    }
}
