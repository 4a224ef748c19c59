//! Command-line flags selecting a kernel [`Variant`].

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, ValueEnum};
use qdsl_core::dsl::variant::{
    LinkScale, LongRecon, OutputSites, Recon, Slices, StorageFormat, TimeBoundary,
};
use qdsl_core::dsl::Variant;
use qdsl_core::lattice::Parity;

/// Output sites.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SitesArg {
    /// Even sites.
    Even,
    /// Odd sites.
    Odd,
    /// All sites.
    Full,
}

/// `--precision`: a storage format of both spinors and links by its name, one of
/// [`StorageFormat::EVERY`] (f64 and f32 compute in themselves, the narrow formats in f32).
fn storage_format() -> impl TypedValueParser<Value = StorageFormat> {
    PossibleValuesParser::new(StorageFormat::EVERY.map(StorageFormat::name)).try_map(|name| {
        StorageFormat::EVERY
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| format!("unknown storage format {name:?}"))
    })
}

/// Time boundary condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BoundaryArg {
    /// Periodic.
    Periodic,
    /// Antiperiodic.
    Antiperiodic,
}

/// Gauge compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReconArg {
    /// Two rows stored, the third reconstructed.
    #[value(name = "12")]
    R12,
    /// All 18 reals.
    #[value(name = "18")]
    R18,
    /// Eight reals (the minimal SU(3) parametrisation), the matrix rebuilt in the kernel.
    #[value(name = "8")]
    R8,
}

/// Compression of the long (Naik) links of improved staggered kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LongReconArg {
    /// All 18 reals.
    #[value(name = "18")]
    R18,
    /// Rows 0, 1 of W = L/c and the phase arg(det W)/π (12 + phase).
    #[value(name = "13")]
    R13,
    /// Rows 0, 1 of V = L/(c·s) ∈ SU(3), the staggered sign s of each link computed in
    /// the kernel (12 + sign: asqtad long links, not HISQ's).
    #[value(name = "12")]
    R12,
    /// Recon 8 of W's SU(3) part and the phase (8 + phase).
    #[value(name = "9")]
    R9,
}

/// How fixed-point links are scaled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LinkScaleArg {
    /// v = q/Q: links within [−1, 1].
    Unit,
    /// v = s·q/Q with s = max |entry| of each field (smeared links; recon 18).
    Global,
}

/// `--slices`: how the slices of 5D fields map onto threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SlicesArg {
    /// One grid row per slice (s5 = blockIdx.y).
    Grid,
    /// The slices inside the block (multi-RHS: the sources of a site share its links).
    Block,
    /// Each thread walks the slices of its site, the block a 4D tile whose source rows
    /// are staged through shared memory (one-hop f32/f64 stencils).
    Walk,
}

/// The knobs of a kernel variant.
#[derive(Clone, Debug, Args)]
pub struct VariantArgs {
    /// Output sites.
    #[arg(long, value_enum, default_value = "even")]
    pub sites: SitesArg,
    /// Apply Γ D Γ (D†).
    #[arg(long)]
    pub dagger: bool,
    /// out = a·x + b·D ψ.
    #[arg(long)]
    pub xpay: bool,
    /// Storage precision of spinors and links.
    #[arg(long, default_value = "f32", value_parser = storage_format())]
    pub precision: StorageFormat,
    /// Gauge compression: 18, 12 or 8 reals per link.
    #[arg(long, value_enum, default_value = "12")]
    pub recon: ReconArg,
    /// Time boundary condition.
    #[arg(long, value_enum, default_value = "periodic")]
    pub boundary: BoundaryArg,
    /// Long-link compression (kernels with Naik links; the others refuse 13 and 9).
    #[arg(long, value_enum, default_value = "18")]
    pub long_recon: LongReconArg,
    /// Scale of fixed-point links: unit, or one global scale per field (recon 18).
    #[arg(long, value_enum, default_value = "unit")]
    pub link_scale: LinkScaleArg,
    /// Slices of 5D fields (Ls, or N right-hand sides): grid rows, inside the block, or
    /// walked by each thread of a tile.
    #[arg(long, value_enum, default_value = "grid")]
    pub slices: SlicesArg,
}

impl VariantArgs {
    /// The variant these flags select.
    pub fn variant(&self) -> Variant {
        let format = self.precision;
        // `..Variant::default()` keeps knobs added to `Variant` later at their defaults
        // (today every field is set, which clippy's needless_update would flag).
        #[allow(clippy::needless_update)]
        Variant {
            sites: match self.sites {
                SitesArg::Even => OutputSites::Parity(Parity::Even),
                SitesArg::Odd => OutputSites::Parity(Parity::Odd),
                SitesArg::Full => OutputSites::Full,
            },
            dagger: self.dagger,
            xpay: self.xpay,
            spinor: format,
            gauge: format,
            recon: match self.recon {
                ReconArg::R12 => Recon::R12,
                ReconArg::R18 => Recon::R18,
                ReconArg::R8 => Recon::R8,
            },
            boundary: match self.boundary {
                BoundaryArg::Periodic => TimeBoundary::Periodic,
                BoundaryArg::Antiperiodic => TimeBoundary::Antiperiodic,
            },
            long_recon: match self.long_recon {
                LongReconArg::R18 => LongRecon::R18,
                LongReconArg::R13 => LongRecon::R13,
                LongReconArg::R12 => LongRecon::R12,
                LongReconArg::R9 => LongRecon::R9,
            },
            link_scale: match self.link_scale {
                LinkScaleArg::Unit => LinkScale::Unit,
                LinkScaleArg::Global => LinkScale::Global,
            },
            slices: match self.slices {
                SlicesArg::Grid => Slices::Grid,
                SlicesArg::Block => Slices::InBlock,
                SlicesArg::Walk => Slices::Walk,
            },
            ..Variant::default()
        }
    }
}
