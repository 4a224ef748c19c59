//! The `mma_tile!` spec as data: the problem, the MMA instruction and its types, the
//! split-precision mode, the scaling, how operands are staged and loaded into
//! fragments, and the compile knobs (tile depth, warps per block, pipeline depth).

/// The problem a tile kernel solves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Problem {
    /// c_ij = Σ_k a_ik b_jk for i < m, j < n over a long k: A (m × K) and B (n × K) are
    /// sets of vectors stored one after another (k contiguous), the k-tiles are spread
    /// over the grid, each block writes its partial m × n sum, and a second kernel adds
    /// the blocks' partials in f64 in a fixed order (the result does not depend on the
    /// order the blocks ran in). The block inner products of block BLAS.
    Inner,
    /// c_ij = Σ_x conj(a_i(x)) b_j(x) for complex vectors stored as interleaved (re, im)
    /// rows of K = 2L reals: the real product of `Inner` with the n rows of B followed by
    /// n rotated rows b'_j = (im, −re) formed from the staged B tile (never stored), so
    /// Re c_ij = Σ a·b_j and Im c_ij = Σ a·b'_j (four real products per complex one);
    /// the reduce kernel writes c as m × n interleaved complex values.
    ComplexInner,
    /// Many `ComplexInner` products in one launch: product p has its own m rows of A and
    /// n rows of B (offset p · batch_a and p · batch_b values from the first's) and its
    /// own m × n result, c[p][i][j] = Σ_x conj(a_pi(x)) b_pj(x). The multigrid set-up's
    /// V†UV: one product per coarse site and link, summed over the block's face.
    BatchedComplexInner,
    /// Block axpy y_j(x) += Σ_i x_i(x) A_ij for m complex vectors x_i and n complex
    /// vectors y_j (stored like the inner products' sets: vector after vector, interleaved
    /// (re, im)) and an m × n complex matrix A: per component x the real product of the
    /// row (Re x_0, Im x_0, Re x_1, …) (K = 2m) with the 2m × 2n real matrix of A,
    /// B[2i][2j] = Re A_ij, B[2i+1][2j] = −Im A_ij, B[2i][2j+1] = Im A_ij,
    /// B[2i+1][2j+1] = Re A_ij, whose columns (2j, 2j+1) are (Re, Im) of y_j's update.
    /// The components are spread over the grid, `tile_k` of them per warp and step; one
    /// kernel, no reduction.
    ComplexAxpy,
}

impl Problem {
    /// The spec's word.
    pub fn name(self) -> &'static str {
        match self {
            Problem::Inner => "inner",
            Problem::ComplexInner => "complex_inner",
            Problem::BatchedComplexInner => "batched_complex_inner",
            Problem::ComplexAxpy => "complex_axpy",
        }
    }

    /// Whether the vectors are complex (the rotated rows of B, a complex result).
    pub fn is_complex(self) -> bool {
        matches!(
            self,
            Problem::ComplexInner | Problem::BatchedComplexInner | Problem::ComplexAxpy
        )
    }

    /// Whether the problem is a block axpy (one kernel, the components over the grid).
    pub fn is_axpy(self) -> bool {
        self == Problem::ComplexAxpy
    }

    /// Whether one launch computes a batch of products.
    pub fn is_batched(self) -> bool {
        self == Problem::BatchedComplexInner
    }

    /// Columns of the real product for n vectors b_j: n, or 2n for complex vectors.
    pub fn real_n(self, n: usize) -> usize {
        match self {
            Problem::Inner => n,
            Problem::ComplexInner | Problem::BatchedComplexInner | Problem::ComplexAxpy => 2 * n,
        }
    }
}

/// The operand type the tensor core multiplies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    /// IEEE binary16 (11 significant bits, largest finite 65504).
    F16,
    /// bfloat16 (8 significant bits, binary32's exponent range).
    Bf16,
    /// TensorFloat-32 (11 significant bits, binary32's exponent range; stored as f32).
    Tf32,
    /// binary32: the SIMT mode's operands (FMA on the CUDA cores, [`Shape::Simt`]).
    F32,
    /// binary64 (DMMA).
    F64,
}

impl Operand {
    /// The spec's word.
    pub fn name(self) -> &'static str {
        match self {
            Operand::F16 => "f16",
            Operand::Bf16 => "bf16",
            Operand::Tf32 => "tf32",
            Operand::F32 => "f32",
            Operand::F64 => "f64",
        }
    }

    /// Parses a spec word.
    pub fn from_name(s: &str) -> Option<Self> {
        Some(match s {
            "f16" => Operand::F16,
            "bf16" => Operand::Bf16,
            "tf32" => Operand::Tf32,
            "f32" => Operand::F32,
            "f64" => Operand::F64,
            _ => return None,
        })
    }

    /// The unit roundoff u of rounding to nearest into the type: 2^−p for p significant
    /// bits (|rn(a) − a| ≤ u |a| in the normal range).
    pub fn unit_roundoff(self) -> f64 {
        match self {
            Operand::F16 | Operand::Tf32 => 2f64.powi(-11),
            Operand::Bf16 => 2f64.powi(-8),
            Operand::F32 => 2f64.powi(-24),
            Operand::F64 => 2f64.powi(-53),
        }
    }

    /// Whether the type is 16 bits wide (two per 32-bit register; `ldmatrix` loads it).
    pub fn is_16_bit(self) -> bool {
        matches!(self, Operand::F16 | Operand::Bf16)
    }
}

/// The accumulator type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Accumulator {
    /// binary32.
    F32,
    /// binary64 (DMMA).
    F64,
}

impl Accumulator {
    /// The spec's word.
    pub fn name(self) -> &'static str {
        match self {
            Accumulator::F32 => "f32",
            Accumulator::F64 => "f64",
        }
    }

    /// The C type.
    pub fn c_type(self) -> &'static str {
        match self {
            Accumulator::F32 => "float",
            Accumulator::F64 => "double",
        }
    }
}

/// The warp-level MMA instruction shape (`mma.sync.aligned.mMnNkK`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// m16n8k16: f16 or bf16 operands, f32 accumulator.
    M16N8K16,
    /// m16n8k8: tf32 operands, f32 accumulator.
    M16N8K8,
    /// m8n8k4: f64 operands and accumulator (DMMA).
    M8N8K4,
    /// No tensor-core instruction: f32 FMA on the CUDA cores (`fmaf`), f32 operands and
    /// accumulator. Each thread owns a register tile of the output made of 4 × 4 blocks
    /// (a float4 of A's rows times a float4 of B's columns per k), read from an f32,
    /// k-major copy of the staged tile in shared memory ([`super::simt`]); its "shape"
    /// (4, 4, 4) is that granule: m, n and tile_k multiples of 4.
    Simt,
}

impl Shape {
    /// The spec's word.
    pub fn name(self) -> &'static str {
        match self {
            Shape::M16N8K16 => "m16n8k16",
            Shape::M16N8K8 => "m16n8k8",
            Shape::M8N8K4 => "m8n8k4",
            Shape::Simt => "simt",
        }
    }

    /// Parses a spec word.
    pub fn from_name(s: &str) -> Option<Self> {
        Some(match s {
            "m16n8k16" => Shape::M16N8K16,
            "m16n8k8" => Shape::M16N8K8,
            "m8n8k4" => Shape::M8N8K4,
            "simt" => Shape::Simt,
            _ => return None,
        })
    }

    /// (m, n, k) of one instruction (SIMT: the 4 × 4 × 4 granule of a thread's tile).
    pub fn mnk(self) -> (usize, usize, usize) {
        match self {
            Shape::M16N8K16 => (16, 8, 16),
            Shape::M16N8K8 => (16, 8, 8),
            Shape::M8N8K4 => (8, 8, 4),
            Shape::Simt => (4, 4, 4),
        }
    }

    /// The operand and accumulator types the shape takes (PTX ISA, `mma.sync` on
    /// sm_80+): m16n8k16 f16/bf16 → f32, m16n8k8 tf32 → f32, m8n8k4 f64 → f64; SIMT
    /// f32 → f32 (`fmaf`).
    pub fn accepts(self, a: Operand, c: Accumulator) -> bool {
        matches!(
            (self, a, c),
            (
                Shape::M16N8K16,
                Operand::F16 | Operand::Bf16,
                Accumulator::F32
            ) | (Shape::M16N8K8, Operand::Tf32, Accumulator::F32)
                | (Shape::M8N8K4, Operand::F64, Accumulator::F64)
                | (Shape::Simt, Operand::F32, Accumulator::F32)
        )
    }

    /// Whether the "instruction" is f32 FMA on the CUDA cores, not a tensor core's.
    pub fn is_simt(self) -> bool {
        self == Shape::Simt
    }
}

/// The instruction: shape, operand type, accumulator type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Instruction {
    /// The shape.
    pub shape: Shape,
    /// The type of A and B.
    pub operand: Operand,
    /// The type of C and D.
    pub accumulator: Accumulator,
}

/// Precision splitting of each operand: a = a_hi + a_lo with a_hi = rn(a),
/// a_lo = rn(a − a_hi), and a·b ≈ a_hi b_hi + a_hi b_lo + a_lo b_hi (three MMAs, the
/// lo·lo term dropped): 3×BF16 reaches 16-bit fixed-point accuracy, 3×TF32 f32's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Split {
    /// One MMA per product, the operands rounded once.
    One,
    /// Three MMAs per product.
    Three,
}

impl Split {
    /// MMAs per product.
    pub fn mmas(self) -> usize {
        match self {
            Split::One => 1,
            Split::Three => 3,
        }
    }
}

/// How operands are scaled into the operand type's range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scaling {
    /// Not scaled (bf16, tf32 and f64 have at least binary32's exponent range).
    None,
    /// Per k-tile and operand, the block's max |a| found first: the tile is multiplied by
    /// 2^(15 − e) where max |a| = f · 2^e, f ∈ [0.5, 1), so every value is below 2^15
    /// (f16's largest finite is 65504); the accumulator is kept in units of the current
    /// tile's scale (rescaled by a power of two, exactly, when it changes) and divided
    /// by it at the end.
    BlockMax,
}

/// How a k-tile travels from global to shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Staging {
    /// Plain loads and stores by every thread, one buffer (pipeline depth 1).
    Direct,
    /// `cp.async` 16-byte copies into a ring of `stages` buffers: the next tiles load
    /// while this one is multiplied.
    CpAsync,
}

/// How fragments are formed from the staged tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fragments {
    /// Each thread reads its fragment elements from the staged input values and rounds
    /// (and splits) them in registers.
    Explicit,
    /// The block first rounds (and splits) the staged tile into 16-bit shared arrays, then
    /// `ldmatrix` loads the fragments (16-bit operands only).
    Ldmatrix,
}

/// The precision of the vectors in global memory (what the kernel reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Input {
    /// binary32.
    F32,
    /// binary64.
    F64,
}

impl Input {
    /// The spec's word.
    pub fn name(self) -> &'static str {
        match self {
            Input::F32 => "f32",
            Input::F64 => "f64",
        }
    }

    /// Bytes of one value.
    pub fn bytes(self) -> usize {
        match self {
            Input::F32 => 4,
            Input::F64 => 8,
        }
    }

    /// The C type.
    pub fn c_type(self) -> &'static str {
        match self {
            Input::F32 => "float",
            Input::F64 => "double",
        }
    }
}

/// A `mma_tile!` spec.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MmaSpec {
    /// Snake-case name.
    pub name: String,
    /// The doc comment (the computation's equation).
    pub doc: String,
    /// The problem.
    pub problem: Problem,
    /// The instruction.
    pub instruction: Instruction,
    /// Precision splitting.
    pub split: Split,
    /// Scaling into the operand type's range.
    pub scaling: Scaling,
    /// Global → shared staging.
    pub staging: Staging,
    /// Shared → fragments.
    pub fragments: Fragments,
    /// The rows of A (vectors a_i) a variant may have: m.
    pub m: Vec<usize>,
    /// The rows of B (vectors b_j) a variant may have: n.
    pub n: Vec<usize>,
    /// The input precisions a variant may have.
    pub input: Vec<Input>,
    /// Compile knob: the k-extent of one staged tile.
    pub tile_k: Vec<usize>,
    /// Compile knob: warps per block.
    pub warps: Vec<usize>,
    /// Compile knob: pipeline depth (staged tiles in flight).
    pub stages: Vec<usize>,
}

/// The item of a spec an error is about (the macro reports it at that item's value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Item {
    /// `problem`.
    Problem,
    /// `mma`.
    Mma,
    /// `split`.
    Split,
    /// `scaling`.
    Scaling,
    /// `staging`.
    Staging,
    /// `fragments`.
    Fragments,
    /// `m`.
    M,
    /// `n`.
    N,
    /// `input`.
    Input,
    /// `tile_k`.
    TileK,
    /// `warps`.
    Warps,
    /// `stages`.
    Stages,
}

impl Item {
    /// Every item, in the order a spec writes them.
    pub const ALL: [Item; 12] = [
        Item::Problem,
        Item::Mma,
        Item::Split,
        Item::Scaling,
        Item::Staging,
        Item::Fragments,
        Item::M,
        Item::N,
        Item::Input,
        Item::TileK,
        Item::Warps,
        Item::Stages,
    ];

    /// The item's key in the spec.
    pub fn key(self) -> &'static str {
        match self {
            Item::Problem => "problem",
            Item::Mma => "mma",
            Item::Split => "split",
            Item::Scaling => "scaling",
            Item::Staging => "staging",
            Item::Fragments => "fragments",
            Item::M => "m",
            Item::N => "n",
            Item::Input => "input",
            Item::TileK => "tile_k",
            Item::Warps => "warps",
            Item::Stages => "stages",
        }
    }

    /// The item of a key.
    pub fn from_key(key: &str) -> Option<Item> {
        Item::ALL.into_iter().find(|i| i.key() == key)
    }
}

/// A malformed spec: the item at fault (and the value of a list at fault) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    /// The item at fault.
    pub item: Item,
    /// The position of the value at fault in the item's list, if it is one value (for
    /// `mma`: 1 the operand type, 2 the accumulator type of `shape(operand -> acc)`).
    pub index: Option<usize>,
    /// Why.
    pub reason: String,
}

impl MmaSpec {
    /// Checks the spec: the instruction's types, the split and scaling the types allow,
    /// `ldmatrix` for 16-bit operands only, the staging's pipeline depths, and every
    /// knob list non-empty with values the instruction tiles (m a multiple of the
    /// instruction's m, n of its n, tile_k of its k and of 16 bytes of input, 1–32
    /// warps).
    pub fn validate(&self) -> Result<(), SpecError> {
        let at = |item, reason: String| {
            Err(SpecError {
                item,
                index: None,
                reason,
            })
        };
        let at_value = |item, index, reason: String| {
            Err(SpecError {
                item,
                index: Some(index),
                reason,
            })
        };
        let bad = |list: &[usize], ok: &dyn Fn(usize) -> bool| {
            list.iter().position(|&v| !ok(v)).map(|k| (k, list[k]))
        };
        let Instruction {
            shape,
            operand,
            accumulator,
        } = self.instruction;
        if !shape.accepts(operand, accumulator) {
            // The type at fault (`index`: 1 the operand, 2 the accumulator) where the shape
            // takes one operand type: SIMT is f32 → f32, and f32 operands are SIMT's only.
            let index = if shape.is_simt() {
                Some(if operand != Operand::F32 { 1 } else { 2 })
            } else if operand == Operand::F32 {
                Some(1)
            } else {
                None
            };
            return Err(SpecError {
                item: Item::Mma,
                index,
                reason: format!(
                    "{} does not take {} → {}: the shapes are m16n8k16 (f16 or bf16 → f32), \
                     m16n8k8 (tf32 → f32), m8n8k4 (f64 → f64) and simt (f32 → f32, FMA on the \
                     CUDA cores)",
                    shape.name(),
                    operand.name(),
                    accumulator.name()
                ),
            });
        }
        if self.split == Split::Three && !matches!(operand, Operand::Bf16 | Operand::Tf32) {
            return at(
                Item::Split,
                format!(
                    "split 3 is 3×BF16 or 3×TF32; {} operands are not split",
                    operand.name()
                ),
            );
        }
        match (operand, self.scaling) {
            (Operand::F16, Scaling::None) => {
                return at(
                    Item::Scaling,
                    "f16 operands overflow above 65504 and lose bits below 2⁻¹⁴: \
                     write `scaling: block_max`"
                        .into(),
                )
            }
            (Operand::Bf16 | Operand::Tf32 | Operand::F32 | Operand::F64, Scaling::BlockMax) => {
                return at(
                    Item::Scaling,
                    format!(
                        "{} has binary32's exponent range or more: scaling buys nothing, \
                         write `scaling: none`",
                        operand.name()
                    ),
                )
            }
            _ => {}
        }
        if self.problem == Problem::ComplexAxpy
            && (self.staging != Staging::Direct || self.fragments != Fragments::Explicit)
        {
            return at(
                Item::Staging,
                "a block axpy reads X into fragments straight from global memory: \
                 `staging: direct` with explicit fragments"
                    .into(),
            );
        }
        if self.fragments == Fragments::Ldmatrix && shape.is_simt() {
            return at(
                Item::Fragments,
                "SIMT has no fragments: each thread reads its register tile from the f32 \
                 k-major tile in shared memory; write `fragments: explicit` or leave it out"
                    .into(),
            );
        }
        if self.fragments == Fragments::Ldmatrix && !operand.is_16_bit() {
            return at(
                Item::Fragments,
                format!(
                    "`ldmatrix` loads 16-bit operands; {} fragments are loaded explicitly",
                    operand.name()
                ),
            );
        }
        let (im, inn, ik) = shape.mnk();
        for (item, list) in [
            (Item::M, &self.m),
            (Item::N, &self.n),
            (Item::TileK, &self.tile_k),
            (Item::Warps, &self.warps),
            (Item::Stages, &self.stages),
        ] {
            if list.is_empty() {
                return at(item, format!("`{}` needs at least one value", item.key()));
            }
        }
        if self.input.is_empty() {
            return at(Item::Input, "`input` needs at least one precision".into());
        }
        for (item, list, step, what) in [
            (Item::M, &self.m, im, "the instruction's m"),
            (Item::N, &self.n, inn, "the instruction's n"),
        ] {
            if let Some((k, v)) = bad(list, &|v| v > 0 && v % step == 0) {
                return at_value(
                    item,
                    k,
                    format!("{v} is not a positive multiple of {what} ({step})"),
                );
            }
        }
        // A tile row is copied in 16-byte pieces: tile_k a multiple of 16 / 4 = 4 values
        // (f32 input) or 2 (f64); every instruction's k is a multiple of 4 already.
        if let Some((k, v)) = bad(&self.tile_k, &|v| v > 0 && v % ik == 0 && v <= 256) {
            return at_value(
                Item::TileK,
                k,
                format!("tile_k {v} is not a multiple of the instruction's k ({ik}) in 1..=256"),
            );
        }
        if let Some((k, v)) = bad(&self.warps, &|v| (1..=32).contains(&v)) {
            return at_value(
                Item::Warps,
                k,
                format!("{v} warps: a block has 1 to 32 warps"),
            );
        }
        match self.staging {
            Staging::Direct => {
                if let Some((k, v)) = bad(&self.stages, &|v| v == 1) {
                    return at_value(
                        Item::Stages,
                        k,
                        format!(
                            "direct staging has one buffer (stages = 1), found {v}; \
                             `staging: cp_async` pipelines 2 or more"
                        ),
                    );
                }
            }
            Staging::CpAsync => {
                if let Some((k, v)) = bad(&self.stages, &|v| (2..=8).contains(&v)) {
                    return at_value(
                        Item::Stages,
                        k,
                        format!("cp.async pipelines 2 to 8 stages, found {v}"),
                    );
                }
            }
        }
        Ok(())
    }

    /// The mode in words, e.g. `3×BF16 m16n8k16`, `DMMA m8n8k4` or `f32 SIMT (FMA)`.
    pub fn mode(&self) -> String {
        let i = self.instruction;
        if i.shape.is_simt() {
            return "f32 SIMT (FMA)".into();
        }
        let ty = match i.operand {
            Operand::F64 => "DMMA".to_string(),
            o => o.name().to_uppercase(),
        };
        let split = match self.split {
            Split::One => String::new(),
            Split::Three => "3×".into(),
        };
        format!("{split}{ty} {}", i.shape.name())
    }
}
