//! What a generated kernel is, besides its text: a [`CompiledKernel`] carries its source
//! together with its interface — the entry name, every parameter in signature order with
//! what binds to it ([`KernelParam`]), its launch geometry and the hash of its source.
//! The emitter that prints the signature returns this list, so the argument order is
//! written down once: the runtime's launcher binds by walking it.

use super::codec::{ArgOwner, ExtraArg};
use super::knob_space::{CompileSpace, KnobSpace, LaunchSpace};
use super::variant::fnv1a;

/// One parameter of a generated stencil kernel, in the order of its signature:
///
/// ```text
/// f_<field> for every field in declaration order (the output non-const), each
///   followed by the extra arguments of its storage codec (norm_<field> of a
///   fixed-point colour spinor, scale_<field> of a fixed-point gauge field with a
///   global link scale), each compressed long field (long recon 13/9) by
///   phase_<field>, and by scale_<field>,
/// [xpay_x, [its codec's extra arguments], xpay_a, xpay_b] (xpay only; a, b in the
///   compute type),
/// L0, L1, L2, L3, n_out,
/// stride_<field> for every field in declaration order,
/// [stride_xpay_x]                     (xpay only)
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KernelParam {
    /// The output field's chunk pointer `f_<name>`.
    Output(String),
    /// The chunk pointer `f_<name>` of input `index` (inputs counted in declaration order).
    Input {
        /// Field name.
        name: String,
        /// Position among the inputs.
        index: usize,
    },
    /// An extra argument of a field's storage codec (the per-site norms of a fixed-point
    /// colour spinor, `norm_<field>`; the global scale of a fixed-point gauge field,
    /// `scale_<field>`): name, declaration and kind are the codec's
    /// ([`crate::dsl::codec::ExtraArg`]).
    Extra {
        /// The argument.
        arg: ExtraArg,
        /// The field's name (`xpay_x` for the xpay operand).
        field: String,
        /// Whose argument it is.
        owner: ArgOwner,
    },
    /// `phase_<name>`, the phases t = arg(det W)/π of the compressed long field `long`
    /// (position among the compressed long fields, L = c·W); recon 13 and 9 only.
    LongPhase {
        /// Field name.
        name: String,
        /// Position among the compressed long fields.
        long: usize,
    },
    /// `scale_<name>`, the scale c of the compressed long field `long` (compute type).
    LongScale {
        /// Field name.
        name: String,
        /// Position among the compressed long fields.
        long: usize,
    },
    /// `xpay_x`, the chunk pointer of x in out = a·x + b·D ψ.
    XpayX,
    /// `xpay_a` (compute type).
    XpayA,
    /// `xpay_b` (compute type).
    XpayB,
    /// `L<mu>`, the lattice extent in direction μ.
    Extent(usize),
    /// `n_out`, the number of output sites (with [`crate::dsl::variant::Region::SubBox`]:
    /// the launch's threads, [`crate::lattice::SiteBox::threads`]).
    NOut,
    /// `sign`, the factor a face kernel packs with (−1 across an antiperiodic global
    /// boundary; compute type).
    FaceSign,
    /// `parity`, the parity of a face kernel's field.
    Parity,
    /// `box_lo<mu>`, the lowest corner of the launch's box in direction μ
    /// ([`crate::dsl::variant::Region::SubBox`]).
    BoxLo(usize),
    /// `box_n<mu>`, the extent of the launch's box in direction μ
    /// ([`crate::dsl::variant::Region::SubBox`]).
    BoxExtent(usize),
    /// `stride_<name>` of the output field, in chunk units.
    OutputStride(String),
    /// `stride_<name>` of input `index`, in chunk units.
    InputStride {
        /// Field name.
        name: String,
        /// Position among the inputs.
        index: usize,
    },
    /// `stride_xpay_x`.
    XpayStride,
    /// `chiral_<piece>`: the matrices A± of an s-local piece of a `fused5d!` chain,
    /// 4 Ls² reals in the compute type ([`crate::dsl::fused5d::ChiralMatrices`]).
    ChiralMatrices(crate::dsl::fused5d::SPiece),
    /// `walk_ls`, the number of fifth-dimension slices a walking kernel loops over
    /// ([`crate::dsl::variant::Slices::Walk`]).
    Slices,
}

impl KernelParam {
    /// The parameter's name in the generated source.
    pub fn cuda_name(&self) -> String {
        match self {
            KernelParam::Output(n) | KernelParam::Input { name: n, .. } => format!("f_{n}"),
            KernelParam::Extra { arg, field, .. } => arg.cuda_name(field),
            KernelParam::LongPhase { name, .. } => format!("phase_{name}"),
            KernelParam::LongScale { name, .. } => format!("scale_{name}"),
            KernelParam::XpayX => "xpay_x".into(),
            KernelParam::XpayA => "xpay_a".into(),
            KernelParam::XpayB => "xpay_b".into(),
            KernelParam::Extent(mu) => format!("L{mu}"),
            KernelParam::NOut => "n_out".into(),
            KernelParam::FaceSign => "sign".into(),
            KernelParam::Parity => "parity".into(),
            KernelParam::BoxLo(mu) => format!("box_lo{mu}"),
            KernelParam::BoxExtent(mu) => format!("box_n{mu}"),
            KernelParam::OutputStride(n) | KernelParam::InputStride { name: n, .. } => {
                format!("stride_{n}")
            }
            KernelParam::XpayStride => "stride_xpay_x".into(),
            KernelParam::ChiralMatrices(p) => p.param_name(),
            KernelParam::Slices => "walk_ls".into(),
        }
    }
}

/// The element type of a buffer parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Elem {
    /// Bytes (`unsigned char*`: formatted field storage).
    U8,
    /// `int`.
    I32,
    /// `long long` (64-bit integer sums).
    I64,
    /// `float`.
    F32,
    /// `double`.
    F64,
}

impl Elem {
    /// The real type of `bytes` bytes (4: f32, 8: f64).
    pub fn real(bytes: usize) -> Option<Elem> {
        match bytes {
            4 => Some(Elem::F32),
            8 => Some(Elem::F64),
            _ => None,
        }
    }
}

/// What one kernel parameter takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// A device pointer to `elem`s, written when `write`, possibly null when `nullable`
    /// (the kernel then does not dereference it).
    Buffer {
        /// Element type.
        elem: Elem,
        /// The kernel writes through it (a non-const pointer).
        write: bool,
        /// Null is a valid value.
        nullable: bool,
    },
    /// A 32-bit integer.
    I32,
    /// A 64-bit integer (`long`).
    I64,
    /// A single-precision real.
    F32,
    /// A double-precision real.
    F64,
}

impl ParamKind {
    /// A const buffer of `elem`.
    pub const fn read(elem: Elem) -> Self {
        ParamKind::Buffer {
            elem,
            write: false,
            nullable: false,
        }
    }

    /// A written buffer of `elem`.
    pub const fn write(elem: Elem) -> Self {
        ParamKind::Buffer {
            elem,
            write: true,
            nullable: false,
        }
    }

    /// This buffer kind, null allowed.
    pub const fn or_null(self) -> Self {
        match self {
            ParamKind::Buffer { elem, write, .. } => ParamKind::Buffer {
                elem,
                write,
                nullable: true,
            },
            k => k,
        }
    }

    /// The real scalar of `elem` (f32 or f64; i32 for the others).
    pub const fn real(elem: Elem) -> Self {
        match elem {
            Elem::F64 => ParamKind::F64,
            Elem::F32 => ParamKind::F32,
            _ => ParamKind::I32,
        }
    }
}

/// One parameter of a kernel signature: its name in the source and what it takes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ParamDecl {
    /// The name in the signature (what arguments are bound by).
    pub name: String,
    /// What it takes.
    pub kind: ParamKind,
}

impl ParamDecl {
    /// A parameter `name` of `kind`.
    pub fn new(name: impl Into<String>, kind: ParamKind) -> Self {
        Self {
            name: name.into(),
            kind,
        }
    }
}

/// The block of a kernel: chosen by the tuner in 1 to 3 dimensions, or fixed by the
/// source (a shared-memory reduction written for one block size).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockShape {
    /// Tunable, in this many dimensions (1–3).
    Tunable(u8),
    /// Fixed at (x, y, z).
    Fixed([u32; 3]),
}

/// How any kernel is launched: one thread per work item of a 1- to 3-D index space, the
/// block shape, the largest grid the kernel covers (a grid-stride loop covers the rest;
/// `u32::MAX` for none) and the dynamic shared memory of a block as a function of it:
/// `shared_per_thread · threads + shared_fixed` bytes; and what the tuner may vary
/// ([`KnobSpace`]: builds, block extents, grid sizes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Geometry {
    /// The block.
    pub block: BlockShape,
    /// Largest grid per dimension.
    pub max_grid: [u32; 3],
    /// Dynamic shared memory per thread of a block, in bytes.
    pub shared_per_thread: u32,
    /// Dynamic shared memory per block besides, in bytes.
    pub shared_fixed: u32,
    /// The knob space the tuner enumerates candidates from.
    pub knobs: KnobSpace,
}

impl Geometry {
    /// One thread per item along x, a tunable 1-D block (default 128 threads, the
    /// extents of [`LaunchSpace::linear`]), no shared memory, no compile knobs.
    pub const fn linear() -> Self {
        Geometry {
            block: BlockShape::Tunable(1),
            max_grid: [u32::MAX, 65_535, 65_535],
            shared_per_thread: 0,
            shared_fixed: 0,
            knobs: KnobSpace::linear(128),
        }
    }

    /// A generated stencil's: one thread per output site along x, the fifth-dimension
    /// slices of 5D fields along y, a tunable 1-D block, and `shared_per_thread` bytes of
    /// dynamic shared memory per thread (0 for every `stencil!` kernel today); register
    /// caps as compile knobs (the prefetch knob is declared by the source,
    /// [`CompiledKernel::knobs`]).
    pub const fn per_site(shared_per_thread: u32) -> Self {
        let mut g = Geometry {
            shared_per_thread,
            ..Geometry::linear()
        };
        g.knobs.compile.register_caps = true;
        g
    }

    /// This geometry with the launch space `launch`.
    pub const fn with_launch_space(mut self, launch: LaunchSpace) -> Self {
        self.knobs.launch = launch;
        self
    }

    /// This geometry with the compile knobs `compile`.
    pub const fn with_compile_space(mut self, compile: CompileSpace) -> Self {
        self.knobs.compile = compile;
        self
    }

    /// This geometry with a tunable block in `dims` dimensions (1–3) from `launch`.
    pub const fn with_tunable_block(mut self, dims: u8, launch: LaunchSpace) -> Self {
        self.block = BlockShape::Tunable(dims);
        self.knobs.launch = launch;
        self
    }

    /// This geometry with at most `blocks` blocks along x (a grid-stride kernel).
    pub const fn with_max_grid_x(mut self, blocks: u32) -> Self {
        self.max_grid[0] = blocks;
        self
    }

    /// This geometry with the block fixed at `block` threads along x (also the launch
    /// space's default block).
    pub const fn with_fixed_block(mut self, block: u32) -> Self {
        self.block = BlockShape::Fixed([block, 1, 1]);
        self.knobs.launch.default_block = [block, 1, 1];
        self
    }

    /// The block of untuned launches: [`Self::block`] of the launch space's default.
    pub fn default_block(&self) -> [u32; 3] {
        self.block(self.knobs.launch.default_block)
    }

    /// The block of a launch given the tuner's (or the default) choice `tuned`: the
    /// fixed block if there is one, else `tuned` with the unused dimensions set to 1.
    pub fn block(&self, tuned: [u32; 3]) -> [u32; 3] {
        match self.block {
            BlockShape::Fixed(b) => b,
            BlockShape::Tunable(d) => {
                let mut b = [1; 3];
                for (k, x) in b.iter_mut().enumerate().take(usize::from(d.clamp(1, 3))) {
                    *x = tuned[k].max(1);
                }
                b
            }
        }
    }

    /// The grid covering `work` items per dimension in blocks of `block`:
    /// ⌈work_k / block_k⌉ (at least 1, at most `max_grid`).
    pub fn grid(&self, work: [usize; 3], block: [u32; 3]) -> [u32; 3] {
        let mut g = [1; 3];
        for k in 0..3 {
            let n = work[k].max(1).div_ceil(block[k].max(1) as usize);
            g[k] = u32::try_from(n)
                .unwrap_or(u32::MAX)
                .min(self.max_grid[k])
                .max(1);
        }
        g
    }

    /// The grid of a launch over `work` in blocks of `block` when the tuner chose
    /// `grid_x` blocks along x: [`Self::grid`], along x at most `grid_x` where the
    /// launch space tunes the grid (a grid-stride kernel; `grid_x` is ignored otherwise,
    /// so a kernel that needs its whole grid always gets it).
    pub fn grid_tuned(&self, work: [usize; 3], block: [u32; 3], grid_x: u32) -> [u32; 3] {
        let mut g = self.grid(work, block);
        if self.knobs.launch.grid_x.is_some() {
            g[0] = g[0].min(grid_x.max(1));
        }
        g
    }

    /// The dynamic shared memory of a block of shape `block`.
    pub fn shared(&self, block: [u32; 3]) -> u32 {
        let threads = block.iter().fold(1u32, |a, &b| a.saturating_mul(b));
        self.shared_per_thread
            .saturating_mul(threads)
            .saturating_add(self.shared_fixed)
    }
}

/// The interface of a hand-written or emitted kernel besides its source: entry name,
/// parameters in signature order (bound by name), geometry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelInterface {
    /// The `extern "C"` entry name.
    pub name: String,
    /// The parameters in signature order.
    pub params: Vec<ParamDecl>,
    /// How it is launched.
    pub geometry: Geometry,
}

impl KernelInterface {
    /// The kernel's knob space (its geometry's).
    pub fn knobs(&self) -> KnobSpace {
        self.geometry.knobs
    }
}

/// The macro a per-entry build of a program defines ([`KernelProgram::entry_builds`]).
pub const ONE_ENTRY_MACRO: &str = "QDSL_ONE_ENTRY";

/// The `#if` line that keeps entry `kernel` in a whole-program build and in its own
/// per-entry build only.
fn entry_guard_line(kernel: &str) -> String {
    format!("#if !defined({ONE_ENTRY_MACRO}) || defined(QDSL_ENTRY_{kernel})")
}

/// `text` (the definition of entry `kernel`) inside its entry guard: a program whose
/// entries are all guarded is compiled entry by entry, in parallel
/// ([`KernelProgram::entry_builds`]); without the macros the guard is a no-op. Empty text
/// stays empty.
pub fn entry_guard(kernel: &str, text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    format!("{}\n{text}#endif\n", entry_guard_line(kernel))
}

/// A program of one or more kernels: source, extra NVRTC options and the kernels'
/// interfaces, with the source hash the tune keys use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelProgram {
    /// The program's name (PTX cache, dumps, error messages).
    pub name: String,
    /// The CUDA C++ source.
    pub source: String,
    /// Extra NVRTC options.
    pub options: Vec<String>,
    /// The kernels it defines.
    pub kernels: Vec<KernelInterface>,
}

impl KernelProgram {
    /// FNV-1a of the source.
    pub fn source_hash(&self) -> u64 {
        fnv1a(self.source.as_bytes())
    }

    /// The builds of a program whose source guards every kernel with [`entry_guard`]:
    /// per kernel (in declaration order), the options compiling that entry alone (the
    /// program's options, then the macros). NVRTC's time grows with the entries a build
    /// holds, so the entries compiled in parallel take about the longest one's time.
    /// `None` for a program with a single kernel or an unguarded one (one build).
    pub fn entry_builds(&self) -> Option<Vec<Vec<String>>> {
        if self.kernels.len() < 2
            || !self
                .kernels
                .iter()
                .all(|k| self.source.contains(&entry_guard_line(&k.name)))
        {
            return None;
        }
        Some(
            self.kernels
                .iter()
                .map(|k| {
                    let mut o = self.options.clone();
                    o.push(format!("-D{ONE_ENTRY_MACRO}"));
                    o.push(format!("-DQDSL_ENTRY_{}", k.name));
                    o
                })
                .collect(),
        )
    }

    /// The interface of kernel `name`.
    pub fn kernel(&self, name: &str) -> Option<&KernelInterface> {
        self.kernels.iter().find(|k| k.name == name)
    }

    /// Every kernel whose declared parameter names differ from the signature in the
    /// source ([`signature_names`]), as "name: declared [..], source [..]" (empty when
    /// the interfaces agree with the text).
    pub fn signature_mismatches(&self) -> Vec<String> {
        self.kernels
            .iter()
            .filter_map(|k| {
                let declared: Vec<&str> = k.params.iter().map(|p| p.name.as_str()).collect();
                let text = signature_names(&self.source, &k.name);
                (declared != text)
                    .then(|| format!("{}: declared {declared:?}, source {text:?}", k.name))
            })
            .collect()
    }
}

/// The parameter names of the `extern "C"` kernel `name` of `source`, read from the text
/// (empty if there is no such kernel): `const real* __restrict__ x` → `x`.
pub fn signature_names(source: &str, name: &str) -> Vec<String> {
    let head = format!("extern \"C\" __global__ void {name}(");
    let Some(start) = source.find(&head) else {
        return Vec::new();
    };
    let rest = &source[start + head.len()..];
    let end = rest.find(')').unwrap_or(rest.len());
    rest[..end]
        .split(',')
        .filter_map(|p| p.split_whitespace().last())
        .map(|p| p.trim_start_matches('*').to_string())
        .collect()
}

/// A generated kernel with its interface: what the launcher needs besides the GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledKernel {
    /// The `extern "C"` entry name.
    pub name: String,
    /// The CUDA C++ source.
    pub source: String,
    /// The parameters in signature order, each saying what binds to it.
    pub params: Vec<KernelParam>,
    /// How it is launched.
    pub geometry: Geometry,
}

impl CompiledKernel {
    /// FNV-1a of the source: the tune key's part that changes with the generated code.
    pub fn source_hash(&self) -> u64 {
        fnv1a(self.source.as_bytes())
    }

    /// The kernel's knob space: its geometry's, with the prefetch builds where the source
    /// declares them (the printer's `#if QDSL_PREFETCH` blocks,
    /// [`crate::dsl::knob_space::PREFETCH_MACRO`]).
    pub fn knobs(&self) -> KnobSpace {
        let mut k = self.geometry.knobs;
        k.compile = k.compile.with_prefetch_of(&self.source);
        k
    }

    /// The parameter names of the `extern "C"` signature of [`Self::source`], read from
    /// the text (independent of [`Self::params`]): `const real xpay_a` → `xpay_a`.
    pub fn signature_names(&self) -> Vec<String> {
        signature_names(&self.source, &self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program whose every kernel is guarded has one build per kernel (its options,
    /// then the two macros); one unguarded kernel, or a single kernel, means one build.
    #[test]
    fn entry_builds_of_guarded_programs() {
        let interface = |name: &str| KernelInterface {
            name: name.to_string(),
            params: Vec::new(),
            geometry: Geometry::linear(),
        };
        let text = |name: &str| format!("extern \"C\" __global__ void {name}() {{}}\n");
        let mut p = KernelProgram {
            name: "p".into(),
            source: format!(
                "{}{}",
                entry_guard("a", &text("a")),
                entry_guard("b", &text("b"))
            ),
            options: vec!["-DX".into()],
            kernels: vec![interface("a"), interface("b")],
        };
        assert_eq!(entry_guard("a", ""), "");
        assert_eq!(
            p.entry_builds(),
            Some(vec![
                vec![
                    "-DX".into(),
                    "-DQDSL_ONE_ENTRY".into(),
                    "-DQDSL_ENTRY_a".into()
                ],
                vec![
                    "-DX".into(),
                    "-DQDSL_ONE_ENTRY".into(),
                    "-DQDSL_ENTRY_b".into()
                ],
            ])
        );
        p.source = format!("{}{}", entry_guard("a", &text("a")), text("b"));
        assert_eq!(p.entry_builds(), None);
        p.kernels.pop();
        p.source = entry_guard("a", &text("a"));
        assert_eq!(p.entry_builds(), None);
    }

    #[test]
    fn geometry_in_one_to_three_dimensions() {
        let g = Geometry::linear();
        assert_eq!(g.block([128, 7, 9]), [128, 1, 1]);
        assert_eq!(g.grid([1000, 12, 1], [128, 1, 1]), [8, 12, 1]);
        assert_eq!(g.grid([0, 0, 0], [32, 1, 1]), [1, 1, 1]);
        let cube = Geometry {
            block: BlockShape::Tunable(3),
            shared_per_thread: 16,
            shared_fixed: 64,
            ..Geometry::linear()
        };
        assert_eq!(cube.block([8, 4, 2]), [8, 4, 2]);
        assert_eq!(cube.grid([17, 8, 3], [8, 4, 2]), [3, 2, 2]);
        assert_eq!(cube.shared([8, 4, 2]), 16 * 64 + 64);
        let plane = Geometry {
            block: BlockShape::Tunable(2),
            ..Geometry::linear()
        };
        assert_eq!(plane.block([16, 8, 4]), [16, 8, 1]);
        // A fixed block ignores the tuner; a grid-stride kernel caps the grid.
        let fixed = Geometry::linear()
            .with_fixed_block(256)
            .with_max_grid_x(1024);
        assert_eq!(fixed.block([32, 1, 1]), [256, 1, 1]);
        assert_eq!(fixed.grid([1 << 30, 1, 1], [256, 1, 1]), [1024, 1, 1]);
    }

    #[test]
    fn every_geometry_carries_its_knob_space() {
        use crate::dsl::knob_space::{Extents, LINEAR_BLOCKS};
        // The stencils': register caps, 1-D blocks of LINEAR_BLOCKS, default 128,
        // throttled; the plain 1-D kernels': no compile knobs.
        let s = Geometry::per_site(0);
        assert!(s.knobs.compile.register_caps && !s.knobs.compile.prefetch);
        assert_eq!(s.knobs.launch.block[0], Extents::List(&LINEAR_BLOCKS));
        assert!(s.knobs.launch.throttle);
        assert_eq!(s.default_block(), [128, 1, 1]);
        assert_eq!(Geometry::linear().knobs.compile, CompileSpace::NONE);
        // A fixed block is its own default.
        let r = Geometry::linear().with_fixed_block(256);
        assert_eq!(r.default_block(), [256, 1, 1]);
        // A compiled kernel adds the prefetch knob its source declares.
        let k = |source: &str| CompiledKernel {
            name: "k".into(),
            source: source.into(),
            params: vec![],
            geometry: Geometry::per_site(0),
        };
        assert!(k("#if QDSL_PREFETCH\n#endif\n").knobs().compile.prefetch);
        assert!(!k("// none").knobs().compile.prefetch);
    }

    #[test]
    fn only_a_grid_stride_kernel_takes_the_tuned_grid() {
        use crate::dsl::knob_space::Extents;
        let work = [1 << 20, 1, 1];
        let plain = Geometry::linear().with_max_grid_x(4096);
        assert_eq!(plain.grid_tuned(work, [256, 1, 1], 64), [4096, 1, 1]);
        let stride = plain.with_launch_space(
            LaunchSpace::linear(256).with_grid_x(Extents::PowersOfTwo { min: 64, max: 4096 }),
        );
        assert_eq!(stride.grid_tuned(work, [256, 1, 1], 64), [64, 1, 1]);
        // Never more blocks than the work needs.
        assert_eq!(stride.grid_tuned([1000, 1, 1], [256, 1, 1], 64), [4, 1, 1]);
    }

    #[test]
    fn a_stencil_grid_covers_every_site_of_every_slice() {
        let g = Geometry::per_site(0);
        assert_eq!(g.grid([1000, 1, 1], [128, 1, 1]), [8, 1, 1]);
        assert_eq!(g.grid([1024, 12, 1], [128, 1, 1]), [8, 12, 1]);
        // A 4D launch is one slice, whatever the caller passed for it.
        assert_eq!(g.grid([1, 0, 0], [32, 1, 1]), [1, 1, 1]);
        assert_eq!(g.shared([256, 1, 1]), 0);
        assert_eq!(Geometry::per_site(96).shared([128, 1, 1]), 96 * 128);
    }

    #[test]
    fn signature_names_are_read_from_the_text() {
        let k = CompiledKernel {
            name: "k".into(),
            source: "// k\nextern \"C\" __global__ void k(\n    float* __restrict__ f_out,\n    \
                     const int L0, const int L1,\n    const int n_out)\n{\n}\n"
                .into(),
            params: vec![],
            geometry: Geometry::per_site(0),
        };
        assert_eq!(k.signature_names(), ["f_out", "L0", "L1", "n_out"]);
        assert_eq!(k.source_hash(), fnv1a(k.source.as_bytes()));
    }
}
