//! The knobs of one spec: a [`Variant`] selects output sites, dagger, xpay, storage
//! formats, gauge compression and boundary condition at run time. Variants of a kernel
//! are values, never copies of its spec.

use crate::format::link::ScaledCompression;
use crate::format::{Compression, FermionFormat, FixedWidth, FloatWidth, LinkStorage};
use crate::lattice::Parity;
use std::fmt;

/// Which output sites a kernel computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutputSites {
    /// The V/2 sites of one parity (even-odd preconditioning).
    Parity(Parity),
    /// All V sites.
    Full,
}

/// How a field is stored in memory (host fields hold the compute type itself). The bit
/// layouts are those of [`crate::format`]: [`Self::fermion_format`] for colour-spinor
/// fields, [`Self::link_storage`] for gauge links.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StorageFormat {
    /// IEEE binary64.
    F64,
    /// IEEE binary32.
    F32,
    /// IEEE binary16 (computation in f32).
    F16,
    /// bfloat16 (computation in f32).
    BF16,
    /// 16-bit fixed point: for fermions q_i = round(v_i / norm · 32767) with one f32
    /// norm = max_i |v_i| per site; for links q = round(v · 32767), no norm.
    Fixed16,
    /// 8-bit fixed point, as [`Self::Fixed16`] with Q = 127.
    Fixed8,
    /// Colour spinors only: groups of 6 reals as 20-bit integers with a shared
    /// power-of-two scale, 16 bytes per group ([`crate::format::PackedWidth::Bits20`];
    /// computation in f32).
    Packed20,
    /// Colour spinors only: groups of 6 reals as 30-bit integers with a shared
    /// power-of-two scale, 24 bytes per group ([`crate::format::PackedWidth::Bits30`];
    /// computation in f64, which holds a 30-bit integer).
    Packed30,
}

impl StorageFormat {
    /// Bytes per real number (the per-site f32 norm of fixed-point fermions not counted:
    /// see [`Self::fermion_format`]`.bytes_per_site`).
    pub fn bytes(self) -> usize {
        match self {
            StorageFormat::F64 => 8,
            StorageFormat::F32 => 4,
            StorageFormat::F16 | StorageFormat::BF16 | StorageFormat::Fixed16 => 2,
            StorageFormat::Fixed8 => 1,
            // The stored unit of a packed record: one 32-bit word of a group.
            StorageFormat::Packed20 | StorageFormat::Packed30 => 4,
        }
    }

    /// Short name (`f64`, `f32`, `f16`, `bf16`, `fixed16`, `fixed8`), as
    /// [`crate::format`] names the same layouts.
    pub fn name(self) -> &'static str {
        self.fermion_format().name()
    }

    /// Whether the format is a compute type itself (f64, f32): fields are then read and
    /// written without conversion.
    pub fn is_native(self) -> bool {
        matches!(self, StorageFormat::F64 | StorageFormat::F32)
    }

    /// The compute type of kernels whose colour spinors are stored in this format, as the
    /// format that holds it: f64 for f64, f32 for every other format (the narrow ones are
    /// decoded to f32 on load and encoded on store). Clover fields are stored in it.
    pub fn compute(self) -> StorageFormat {
        match self {
            StorageFormat::F64 | StorageFormat::Packed30 => StorageFormat::F64,
            _ => StorageFormat::F32,
        }
    }

    /// The colour-spinor site layout of this format in [`crate::format`].
    pub fn fermion_format(self) -> FermionFormat {
        match self {
            StorageFormat::F64 => FermionFormat::F64,
            StorageFormat::F32 => FermionFormat::F32,
            StorageFormat::F16 => FermionFormat::F16,
            StorageFormat::BF16 => FermionFormat::BF16,
            StorageFormat::Fixed16 => FermionFormat::FIXED16,
            StorageFormat::Fixed8 => FermionFormat::FIXED8,
            StorageFormat::Packed20 => FermionFormat::PACKED20,
            StorageFormat::Packed30 => FermionFormat::PACKED30,
        }
    }

    /// The per-real gauge-link storage of this format in [`crate::format`] (fixed point
    /// with step 1/Q and no norm).
    pub fn link_storage(self) -> LinkStorage {
        match self {
            StorageFormat::F64 => LinkStorage::Float(FloatWidth::F64),
            StorageFormat::F32 => LinkStorage::Float(FloatWidth::F32),
            StorageFormat::F16 => LinkStorage::Float(FloatWidth::F16),
            StorageFormat::BF16 => LinkStorage::Float(FloatWidth::BF16),
            StorageFormat::Fixed16 => LinkStorage::Fixed(FixedWidth::Bits16),
            StorageFormat::Fixed8 => LinkStorage::Fixed(FixedWidth::Bits8),
            // Spinor-only formats (refused as gauge storage): their compute type's.
            StorageFormat::Packed20 => LinkStorage::Float(FloatWidth::F32),
            StorageFormat::Packed30 => LinkStorage::Float(FloatWidth::F64),
        }
    }

    /// The compute types, stored as themselves; [`Variant::all`] ranges over these.
    pub const ALL: [StorageFormat; 2] = [StorageFormat::F64, StorageFormat::F32];

    /// Every colour-spinor format, in the order of the `spinor`/`gauge` knob values:
    /// [`Self::EVERY`], then the spinor-only packed formats (whose gauge knob values no
    /// spec allows).
    pub const SPINOR: [StorageFormat; 8] = [
        StorageFormat::F64,
        StorageFormat::F32,
        StorageFormat::F16,
        StorageFormat::BF16,
        StorageFormat::Fixed16,
        StorageFormat::Fixed8,
        StorageFormat::Packed20,
        StorageFormat::Packed30,
    ];

    /// Whether the format stores colour spinors only (packed20, packed30: groups of 6
    /// reals sharing an exponent), not gauge links.
    pub fn spinor_only(self) -> bool {
        matches!(self, StorageFormat::Packed20 | StorageFormat::Packed30)
    }

    /// The gauge format beside colour spinors in this format where one setting names
    /// both (bench and check cases, the device operators' SU(3) links): the format
    /// itself, the compute type for the spinor-only formats.
    pub fn links_beside(self) -> StorageFormat {
        if self.spinor_only() {
            self.compute()
        } else {
            self
        }
    }

    /// Every format of both fields, in the order of the `spinor`/`gauge` knob values. The narrow ones
    /// (f16, bf16, fixed16, fixed8) compute in f32: the CUDA emitter decodes them on load
    /// and encodes on store, the CPU path round-trips fields through [`crate::format`].
    pub const EVERY: [StorageFormat; 6] = [
        StorageFormat::F64,
        StorageFormat::F32,
        StorageFormat::F16,
        StorageFormat::BF16,
        StorageFormat::Fixed16,
        StorageFormat::Fixed8,
    ];
}

/// Gauge-link compression: how many reals of each SU(3) link are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Recon {
    /// All 18 reals (any 3 × 3 complex matrix, e.g. smeared U(3) links).
    R18,
    /// Rows 0 and 1 (12 reals); row 2 = conj(row 0 × row 1), valid for SU(3) links.
    R12,
    /// QUDA's 8 reals: arg v00/π, arg v20/π, v01, v02, v10; the rest rebuilt from
    /// unitarity and det = 1 ([`crate::format::Compression::Recon8`]), SU(3) links only.
    R8,
}

impl Recon {
    /// Reals stored per link.
    pub fn reals(self) -> usize {
        match self {
            Recon::R18 => 18,
            Recon::R12 => 12,
            Recon::R8 => 8,
        }
    }

    /// The same compression in [`crate::format`].
    pub fn compression(self) -> Compression {
        match self {
            Recon::R18 => Compression::Full,
            Recon::R12 => Compression::Recon12,
            Recon::R8 => Compression::Recon8,
        }
    }

    /// The compressions both generators support; [`Variant::all`] ranges over these.
    pub const ALL: [Recon; 2] = [Recon::R18, Recon::R12];

    /// Every compression, in the order of the `recon` knob values (recon 8 runs on the
    /// CPU path only).
    pub const EVERY: [Recon; 3] = [Recon::R18, Recon::R12, Recon::R8];
}

/// Compression of the long (Naik) links of improved staggered kernels: the gauge fields
/// read only on hops of three sites. Long links are a uniform real multiple of U(3)
/// matrices, L = c·W ([`crate::format::link::ScaledLinkFormat`]); fat links and every
/// other gauge field keep [`Variant::recon`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum LongRecon {
    /// All 18 reals (as [`Variant::recon`] = 18).
    #[default]
    R18,
    /// Rows 0, 1 of W = L/c and arg(det W)/π ([`ScaledCompression::Recon13`]).
    R13,
    /// Rows 0, 1 of V = L/(c·s) ∈ SU(3), the staggered sign s of each link computed from
    /// its coordinates in the kernel, no phase stored ([`ScaledCompression::Recon12`]):
    /// asqtad's long links, QUDA's "12 + phase".
    R12,
    /// Recon 8 of W's SU(3) part and arg(det W)/π ([`ScaledCompression::Recon9`]).
    R9,
}

impl LongRecon {
    /// Reals stored per link: 18, 13, 12, 9.
    pub fn reals(self) -> usize {
        match self.compression() {
            Some(c) => c.reals(),
            None => 18,
        }
    }

    /// The scaled compression in [`crate::format`], `None` for recon 18.
    pub fn compression(self) -> Option<ScaledCompression> {
        match self {
            LongRecon::R18 => None,
            LongRecon::R13 => Some(ScaledCompression::Recon13),
            LongRecon::R12 => Some(ScaledCompression::Recon12),
            LongRecon::R9 => Some(ScaledCompression::Recon9),
        }
    }

    /// Every value, in the order 18, 13, 12, 9.
    pub const EVERY: [LongRecon; 4] = [
        LongRecon::R18,
        LongRecon::R13,
        LongRecon::R12,
        LongRecon::R9,
    ];
}

/// How the fixed-point reals of gauge fields (other than compressed long links, which
/// carry their own scale c, [`LongRecon`]) map to values:
///
/// ```text
/// Unit:   v = q / Q                  (|v| ≤ 1: thin links, recon 12/8)
/// Global: v = s · q / Q,  s = max |entry| over the field
/// ```
///
/// the global scale s stored with the field and passed to the kernel as `scale_<field>`
/// (QUDA's fat-link fixed point): smeared links with entries beyond 1 (MILC's fat
/// links reach 8.3) fit. Float formats ignore it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum LinkScale {
    /// v = q/Q.
    #[default]
    Unit,
    /// v = s·q/Q with one s per field.
    Global,
}

impl LinkScale {
    /// Short name: "unit", "global".
    pub fn name(self) -> &'static str {
        match self {
            LinkScale::Unit => "unit",
            LinkScale::Global => "global",
        }
    }

    /// Every value, in the order unit, global.
    pub const EVERY: [LinkScale; 2] = [LinkScale::Unit, LinkScale::Global];
}

/// The fermion boundary condition in time (space is periodic).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeBoundary {
    /// ψ(x + L_t t̂) = ψ(x).
    Periodic,
    /// ψ(x + L_t t̂) = −ψ(x): hops that wrap in t an odd number of times change sign.
    Antiperiodic,
}

/// Dirichlet walls between sub-domains: the blocks of extents `block` b_μ that tile the
/// lattice from the origin (a [`crate::lattice::BlockDecomposition`]; each b_μ divides
/// L_μ). A term whose source x + n μ̂ lies in another block than x,
/// ⌊x_μ / b_μ⌋ ≠ ⌊(x + n μ̂)_μ / b_μ⌋ (after the periodic wrap), is dropped: the
/// Schwarz-block operator, block diagonal over the blocks. A direction whose block
/// extent is the lattice extent keeps its (periodic or antiperiodic) wrap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DirichletBlocks {
    /// Block extents b_μ, μ = x, y, z, t.
    pub block: [usize; 4],
}

impl DirichletBlocks {
    /// Whether the hop x → y = x + n μ̂ in direction μ (y already wrapped; coordinates
    /// x_μ, y_μ) stays in x's block.
    pub fn keeps(&self, x_mu: usize, y_mu: usize, mu: usize) -> bool {
        x_mu.checked_div(self.block[mu]) == y_mu.checked_div(self.block[mu])
    }
}

/// How the fifth-dimension slices of a 5D field (the Ls slices of a domain-wall field,
/// or N right-hand sides batched as slices with no s-coupling) map onto the threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Slices {
    /// One grid row per slice: s5 = blockIdx.y (grid.y = Ls). The rows run one after
    /// another, so each slice re-reads the links of every site from DRAM.
    #[default]
    Grid,
    /// The slices inside the block: s5 = blockIdx.y · blockDim.y + threadIdx.y (block.y
    /// a divisor of Ls, a launch knob). The slices of a site run together, so the links
    /// come from DRAM once for the block.y slices of a block (the multi-right-hand-side
    /// hop: the link bytes divide by block.y, the spinor bytes stay).
    InBlock,
    /// Each thread walks all slices of its site: the block is a 4D tile of whole x rows
    /// (block.x = L0/2, block.y = 8 or 16 rows of 2 × block.y/8 × 4 in y, z, t), keeps its
    /// links in registers for every slice, and each slice's source rows — the tile's and
    /// its halo's — are copied into shared memory (two slices in flight, `cp.async`), so
    /// that the neighbours come from L2 3.5–4.5 times per site instead of 8
    /// ([`crate::dsl::kernel_ir::walk`]). One-hop stencils on f32/f64 spinors with f32/f64
    /// links (recon 18 or 12), one output parity.
    Walk,
}

/// Which output sites one launch computes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Region {
    /// Every site of the output parity: thread i → the i-th site (`n_out` = the
    /// parity's sites).
    #[default]
    Whole,
    /// The sites of the output parity in a box `[box_lo, box_lo + box_n)` of the
    /// lattice, given at launch ([`crate::lattice::SiteBox`] is the thread → site map):
    /// the interior and the exterior slabs of a distributed operator on a rank's
    /// extended lattice ([`crate::lattice::ExtendedLattice::launch_boxes`]). Output and
    /// source indices use the lattice extents `L0..L3` as for [`Region::Whole`]; only the
    /// sites computed change. Needs a one-parity output.
    SubBox,
}

/// One variant of a kernel: every knob.
///
/// * `sites`: output parity (the inputs read at odd distance live on the other parity)
///   or the full lattice;
/// * `dagger`: apply Γ D Γ instead of D, with Γ = γ5 for 4-spin fields (every projector
///   1 ∓ γ_μ becomes 1 ± γ_μ) and Γ = ε(x) = (−1)^{x+y+z+t} for 1-spin fields (terms of
///   odd hop length change sign). For γ5- and ε-hermitian operators (Wilson, staggered)
///   this is D†;
/// * `xpay`: out = a·x + b·(D ψ) instead of out = D ψ;
/// * `spinor`, `gauge`: storage formats of the colour-spinor and gauge fields (computation
///   runs in the spinor format's precision);
/// * `recon`: gauge compression; `boundary`: time boundary condition;
/// * `dirichlet`: Dirichlet walls between blocks (the Schwarz-block operator), or none;
/// * `long_recon`: compression of the long links of improved staggered kernels (the
///   gauge fields read on 3-site hops); other gauge fields follow `recon`;
/// * `link_scale`: fixed-point gauge reals in units of 1/Q or of s/Q, s one global
///   scale per field ([`LinkScale`]);
/// * `slices`: how the slices of 5D fields map onto threads ([`Slices`]);
/// * `region`: the whole output parity or a box of it given at launch ([`Region`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Variant {
    /// Output sites.
    pub sites: OutputSites,
    /// Γ D Γ instead of D (D† for the catalog's operators).
    pub dagger: bool,
    /// out = a·x + b·D ψ.
    pub xpay: bool,
    /// Storage format of colour-spinor fields; also the compute precision.
    pub spinor: StorageFormat,
    /// Storage format of gauge fields.
    pub gauge: StorageFormat,
    /// Gauge compression.
    pub recon: Recon,
    /// Time boundary condition of the fermion fields.
    pub boundary: TimeBoundary,
    /// Dirichlet walls between blocks (none: the whole lattice is one domain).
    pub dirichlet: Option<DirichletBlocks>,
    /// Compression of the long links (gauge fields read on 3-site hops).
    pub long_recon: LongRecon,
    /// Scale of fixed-point gauge fields (compressed long links excepted).
    pub link_scale: LinkScale,
    /// Fifth-dimension slices: grid rows, or inside the block (multi-RHS).
    pub slices: Slices,
    /// The output sites of one launch: the whole parity or a box of it.
    pub region: Region,
}

impl Default for Variant {
    /// Even output parity, no dagger, no xpay, f64, recon 18, periodic, long recon 18.
    fn default() -> Self {
        Variant {
            sites: OutputSites::Parity(Parity::Even),
            dagger: false,
            xpay: false,
            spinor: StorageFormat::F64,
            gauge: StorageFormat::F64,
            recon: Recon::R18,
            boundary: TimeBoundary::Periodic,
            dirichlet: None,
            long_recon: LongRecon::R18,
            link_scale: LinkScale::Unit,
            slices: Slices::Grid,
            region: Region::Whole,
        }
    }
}

impl Variant {
    /// A canonical one-line description, e.g.
    /// `sites=even dagger=0 xpay=0 spinor=f32 gauge=f32 recon=12 boundary=antiperiodic`.
    /// The stable hash is computed from this string, so it never changes across Rust
    /// versions or platforms.
    pub fn canonical(&self) -> String {
        let sites = match self.sites {
            OutputSites::Parity(Parity::Even) => "even",
            OutputSites::Parity(Parity::Odd) => "odd",
            OutputSites::Full => "full",
        };
        let boundary = match self.boundary {
            TimeBoundary::Periodic => "periodic",
            TimeBoundary::Antiperiodic => "antiperiodic",
        };
        // Appended only with walls: the names (and hashes) of other variants are unchanged.
        let walls = match self.dirichlet {
            Some(DirichletBlocks {
                block: [a, b, c, d],
            }) => format!(" dirichlet={a}x{b}x{c}x{d}"),
            None => String::new(),
        };
        // Appended only for compressed long links, likewise.
        let long = match self.long_recon {
            LongRecon::R18 => String::new(),
            l => format!(" long_recon={}", l.reals()),
        };
        let scale = match self.link_scale {
            LinkScale::Unit => String::new(),
            s => format!(" link_scale={}", s.name()),
        };
        let slices = match self.slices {
            Slices::Grid => "",
            Slices::InBlock => " slices=block",
            Slices::Walk => " slices=walk",
        };
        let region = match self.region {
            Region::Whole => "",
            Region::SubBox => " region=box",
        };
        format!(
            "sites={sites} dagger={} xpay={} spinor={} gauge={} recon={} boundary={boundary}{walls}{long}{scale}{slices}{region}",
            self.dagger as u8,
            self.xpay as u8,
            self.spinor.name(),
            self.gauge.name(),
            self.recon.reals()
        )
    }

    /// Why `link_scale` does not fit the other knobs, if so: a global scale needs
    /// fixed-point gauge storage (floats hold any scale) and recon 18 (U/s of a
    /// compressed link is no longer SU(3)).
    pub fn link_scale_conflict(&self) -> Option<String> {
        if self.link_scale == LinkScale::Unit {
            return None;
        }
        if self.gauge.is_native() || matches!(self.gauge, StorageFormat::F16 | StorageFormat::BF16)
        {
            return Some(format!(
                "link_scale = global needs fixed-point gauge storage, not {}",
                self.gauge.name()
            ));
        }
        (self.recon != Recon::R18).then(|| {
            format!(
                "link_scale = global needs recon 18, not {} (U/s is not SU(3))",
                self.recon.reals()
            )
        })
    }

    /// A stable 64-bit hash of the variant (FNV-1a of [`Self::canonical`]), the key of
    /// tune caches and part of generated kernel names.
    pub fn stable_hash(&self) -> u64 {
        fnv1a(self.canonical().as_bytes())
    }

    /// Every combination of the knobs (3 site choices × dagger × xpay × 2 formats (the
    /// gauge stored like the spinor) × 2 recons × 2 boundaries = 96 variants).
    pub fn all() -> Vec<Variant> {
        let mut out = Vec::new();
        for sites in [
            OutputSites::Parity(Parity::Even),
            OutputSites::Parity(Parity::Odd),
            OutputSites::Full,
        ] {
            for dagger in [false, true] {
                for xpay in [false, true] {
                    for format in StorageFormat::ALL {
                        for recon in Recon::ALL {
                            for boundary in [TimeBoundary::Periodic, TimeBoundary::Antiperiodic] {
                                out.push(Variant {
                                    sites,
                                    dagger,
                                    xpay,
                                    spinor: format,
                                    gauge: format,
                                    recon,
                                    boundary,
                                    dirichlet: None,
                                    long_recon: LongRecon::R18,
                                    link_scale: LinkScale::Unit,
                                    slices: Slices::Grid,
                                    region: Region::Whole,
                                });
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

/// The 64-bit FNV-1a hash: h ← (h ⊕ byte) · 0x100000001b3, from 0xcbf29ce484222325.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn fnv1a_matches_published_test_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x85944171f73967e8);
    }

    /// Dirichlet blocks of extent 2 in x: 1 → 2 leaves block 0 for block 1, 2 → 3 and the
    /// wrap 3 → 0 of a block spanning the lattice stay; the name carries the extents.
    #[test]
    fn dirichlet_blocks_keep_hops_within_a_block() {
        let d = DirichletBlocks {
            block: [2, 4, 4, 8],
        };
        assert!(!d.keeps(1, 2, 0));
        assert!(d.keeps(2, 3, 0));
        assert!(
            !d.keeps(3, 0, 0),
            "a wrap crosses the face of a smaller block"
        );
        assert!(d.keeps(3, 0, 1), "the block spans y: the wrap stays inside");
        let v = Variant {
            dirichlet: Some(d),
            ..Variant::default()
        };
        assert!(v
            .canonical()
            .ends_with("boundary=periodic dirichlet=2x4x4x8"));
    }

    /// Compressed long links name themselves (and so hash differently); recon 18 keeps
    /// the name it had before the knob existed.
    #[test]
    fn long_recon_is_in_the_name_only_when_compressed() {
        let base = Variant::default();
        let names = LongRecon::EVERY.map(|long_recon| Variant { long_recon, ..base }.canonical());
        assert_eq!(names[0], base.canonical());
        assert_eq!(names[1], format!("{} long_recon=13", base.canonical()));
        assert_eq!(names[2], format!("{} long_recon=12", base.canonical()));
        assert_eq!(names[3], format!("{} long_recon=9", base.canonical()));
        assert_eq!(LongRecon::EVERY.map(LongRecon::reals), [18, 13, 12, 9]);
        // Long recon 12 + sign is not the (fat-link) recon 12 knob: another name.
        let v12 = Variant {
            long_recon: LongRecon::R12,
            ..base
        };
        let r12 = Variant {
            recon: Recon::R12,
            ..base
        };
        assert_ne!(v12.canonical(), r12.canonical());
        let v9 = Variant {
            long_recon: LongRecon::R9,
            ..base
        };
        assert_ne!(v9.stable_hash(), base.stable_hash());
    }

    /// A global link scale names itself; the unit scale keeps the name it had before the
    /// knob existed.
    #[test]
    fn link_scale_is_in_the_name_only_when_global() {
        let base = Variant::default();
        let global = Variant {
            link_scale: LinkScale::Global,
            ..base
        };
        assert_eq!(
            global.canonical(),
            format!("{} link_scale=global", base.canonical())
        );
        assert_ne!(global.stable_hash(), base.stable_hash());
        // Only fixed-point recon-18 gauge fields take the scale.
        assert!(global
            .link_scale_conflict()
            .unwrap()
            .contains("fixed-point"));
        let fixed = Variant {
            gauge: StorageFormat::Fixed8,
            ..global
        };
        assert_eq!(fixed.link_scale_conflict(), None);
        let r12 = Variant {
            recon: Recon::R12,
            ..fixed
        };
        assert!(r12.link_scale_conflict().unwrap().contains("recon 18"));
        assert_eq!(Variant::default().link_scale_conflict(), None);
    }

    #[test]
    fn every_variant_has_its_own_canonical_name_and_hash() {
        let all = Variant::all();
        assert_eq!(all.len(), 96);
        let names: HashSet<String> = all.iter().map(|v| v.canonical()).collect();
        let hashes: HashSet<u64> = all.iter().map(|v| v.stable_hash()).collect();
        assert_eq!(names.len(), 96);
        assert_eq!(hashes.len(), 96);
        assert_eq!(
            Variant::default().canonical(),
            "sites=even dagger=0 xpay=0 spinor=f64 gauge=f64 recon=18 boundary=periodic"
        );
    }
}
