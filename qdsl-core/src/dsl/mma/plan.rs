//! A spec and a [`MmaVariant`] → the [`MmaPlan`] of one kernel: how the m × n output is
//! cut into instruction tiles and shared among the warps, what shared memory holds, and
//! the kernel's name. The CUDA emitter ([`super::cuda`]) prints a plan; the CPU path
//! ([`super::cpu`]) follows the same k-tiles.

use super::spec::{Fragments, Input, MmaSpec, Scaling, Staging};
use crate::dsl::variant::fnv1a;
use crate::dsl::DslError;

/// One variant of a spec: the problem's sizes, the input precision and the compile
/// knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MmaVariant {
    /// Rows of A (vectors a_i).
    pub m: usize,
    /// Rows of B (vectors b_j).
    pub n: usize,
    /// Precision of A and B in global memory.
    pub input: Input,
    /// The k-extent of one staged tile.
    pub tile_k: usize,
    /// Warps per block.
    pub warps: usize,
    /// Pipeline depth.
    pub stages: usize,
}

impl MmaVariant {
    /// The canonical text: `m=16 n=32 input=f32 tile_k=64 warps=4 stages=2`.
    pub fn canonical(&self) -> String {
        format!(
            "m={} n={} input={} tile_k={} warps={} stages={}",
            self.m,
            self.n,
            self.input.name(),
            self.tile_k,
            self.warps,
            self.stages
        )
    }
}

/// Values of a staged row beyond tile_k (shifts consecutive rows across shared-memory
/// banks; 16 bytes for f32, 32 for f64, keeping every row 16-byte aligned).
pub const ROW_PAD: usize = 4;
/// 16-bit values of a rounded row beyond tile_k (16 bytes: `ldmatrix` rows stay aligned
/// and consecutive rows start 4 banks apart).
pub const ROW_PAD_16: usize = 8;

/// What one kernel does, derived from the spec and the variant.
#[derive(Clone, Debug, PartialEq)]
pub struct MmaPlan {
    /// The spec.
    pub spec: MmaSpec,
    /// The variant.
    pub variant: MmaVariant,
    /// The `extern "C"` name of the tile kernel.
    pub name: String,
    /// Instruction tiles along m and n: (m / M_i, n / N_i).
    pub tiles: (usize, usize),
    /// Instruction tiles each warp owns (warp w owns tiles w, w + warps, …, numbered
    /// row-major over (tile row, tile column)); SIMT: 32, one thread tile per thread.
    pub tiles_per_warp: usize,
    /// The SIMT mode's thread tiles ([`super::simt`]); `None` on the tensor cores. With
    /// it, `tiles` counts thread tiles: (along m, along n') for inner products,
    /// (component lanes, column groups) for a block axpy.
    pub simt: Option<SimtTile>,
}

/// A SIMT thread's share of the output ([`super::simt`]): a `rows` × `cols` register
/// tile of f32 accumulators (at most 32), and `groups` threads splitting each k-tile
/// between them (inner products: thread group g sums values g · tile_k / groups ..
/// (g + 1) · tile_k / groups of every k-tile; 1 for a block axpy).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SimtTile {
    /// Rows of the thread's tile (of A's m; a block axpy's components).
    pub rows: usize,
    /// Columns of the thread's tile (of the real product's n').
    pub cols: usize,
    /// Thread groups splitting each k-tile.
    pub groups: usize,
}

impl SimtTile {
    /// Values of k one thread sums in f32 per k-tile: tile_k / groups.
    pub fn chunk(&self, tile_k: usize) -> usize {
        tile_k / self.groups
    }
}

impl MmaPlan {
    /// Threads per block.
    pub fn threads(&self) -> usize {
        32 * self.variant.warps
    }

    /// Input values of one staged row (tile_k + [`ROW_PAD`]).
    pub fn staged_row(&self) -> usize {
        self.variant.tile_k + ROW_PAD
    }

    /// 16-bit values of one rounded row (tile_k + [`ROW_PAD_16`]).
    pub fn rounded_row(&self) -> usize {
        self.variant.tile_k + ROW_PAD_16
    }

    /// Rows of a staged tile: the m rows of A then the n rows of B.
    pub fn rows(&self) -> usize {
        self.variant.m + self.variant.n
    }

    /// Columns of the real product: n, or 2n for complex vectors.
    pub fn real_n(&self) -> usize {
        self.spec.problem.real_n(self.variant.n)
    }

    /// Rows of a rounded 16-bit tile (`ldmatrix`): A's m, then the real product's
    /// columns (B's rows and, for complex vectors, their rotations).
    pub fn rounded_rows(&self) -> usize {
        self.variant.m + self.real_n()
    }

    /// Bytes of dynamic shared memory: the ring of staged tiles, the rounded (hi, and lo
    /// when split) 16-bit tiles with `ldmatrix`, and two pairs of block maxima with
    /// scaling.
    pub fn shared_bytes(&self) -> usize {
        let v = &self.variant;
        if self.spec.problem.is_axpy() {
            return super::axpy::shared_bytes(self);
        }
        let staged = v.stages * self.rows() * self.staged_row() * v.input.bytes();
        if self.simt.is_some() {
            return staged + super::simt::transposed_bytes(self);
        }
        let rounded = match self.spec.fragments {
            Fragments::Ldmatrix => {
                self.spec.split.mmas().min(2) * self.rounded_rows() * self.rounded_row() * 2
            }
            Fragments::Explicit => 0,
        };
        let maxima = match self.spec.scaling {
            Scaling::BlockMax => 4 * 4,
            Scaling::None => 0,
        };
        staged + rounded + maxima
    }

    /// Doubles of one block's partial record: m × (real product's columns).
    pub fn partial_len(&self) -> usize {
        self.variant.m * self.real_n()
    }

    /// The `extern "C"` name of the kernel adding the blocks' partials.
    pub fn reduce_name(&self) -> String {
        format!("{}_reduce", self.name)
    }

    /// Real flops of the product counted once: 2 m n' K for n' columns of the real
    /// product (complex vectors: 8 m n L for L complex components, K = 2L); the split
    /// modes execute 3× as many on the tensor cores.
    pub fn flops(&self, k: usize) -> f64 {
        2.0 * (self.variant.m * self.real_n()) as f64 * k as f64
    }
}

/// The `extern "C"` name: `<spec name>_<16 hex digits of the variant's hash>`.
pub fn kernel_name(spec: &MmaSpec, v: &MmaVariant) -> String {
    format!("{}_{:016x}", spec.name, fnv1a(v.canonical().as_bytes()))
}

/// The plan of one variant, or why the spec does not support it: every value must be
/// one the spec lists, and the instruction tiles must divide evenly among the warps.
pub fn plan(spec: &MmaSpec, v: &MmaVariant) -> Result<MmaPlan, DslError> {
    spec.validate().map_err(|e| DslError::InvalidSpec {
        kernel: spec.name.clone(),
        reason: format!("`{}`: {}", e.item.key(), e.reason),
    })?;
    let unsupported = |knob, reason: String| DslError::UnsupportedVariant {
        kernel: spec.name.clone(),
        knob,
        reason,
    };
    for (knob, value, list) in [
        ("m", v.m, &spec.m),
        ("n", v.n, &spec.n),
        ("tile_k", v.tile_k, &spec.tile_k),
        ("warps", v.warps, &spec.warps),
        ("stages", v.stages, &spec.stages),
    ] {
        if !list.contains(&value) {
            return Err(unsupported(
                knob,
                format!("{value} is not one of the spec's {list:?}"),
            ));
        }
    }
    if !spec.input.contains(&v.input) {
        return Err(unsupported(
            "input",
            format!("{} is not one of the spec's inputs", v.input.name()),
        ));
    }
    if spec.staging == Staging::CpAsync && !(v.tile_k * v.input.bytes()).is_multiple_of(16) {
        return Err(unsupported(
            "tile_k",
            format!(
                "cp.async copies 16 bytes: tile_k {} of {} is not a whole number of them",
                v.tile_k,
                v.input.name()
            ),
        ));
    }
    if spec.instruction.shape.is_simt() {
        return super::simt::plan(spec, v);
    }
    let (im, inn, ik) = spec.instruction.shape.mnk();
    if spec.problem.is_axpy() {
        return super::axpy::plan(spec, v, (im, inn, ik));
    }
    let tiles = (v.m / im, spec.problem.real_n(v.n) / inn);
    let count = tiles.0 * tiles.1;
    if !count.is_multiple_of(v.warps) {
        return Err(unsupported(
            "warps",
            format!(
                "{count} instruction tiles ({} × {}) do not divide among {} warps",
                tiles.0, tiles.1, v.warps
            ),
        ));
    }
    Ok(MmaPlan {
        spec: spec.clone(),
        variant: *v,
        name: kernel_name(spec, v),
        tiles,
        tiles_per_warp: count / v.warps,
        simt: None,
    })
}
