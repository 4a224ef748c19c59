//! The CUDA C++ emitter: a lowered spec and a [`Variant`] → the source of one
//! `extern "C" __global__` kernel, for NVRTC. [`compile`] plans the kernel IR
//! ([`crate::dsl::kernel_ir`]), runs its passes and prints it ([`print`]); the printer
//! makes no decisions (term order, prefetch, scale deferral are passes). Dense-link
//! stencils (`dense`) are still printed directly.
//!
//! The generated kernel runs one thread per output site with 32-bit indices, and one
//! grid row (blockIdx.y) per fifth-dimension slice of 5D colour-spinor fields: slice s
//! of a field of N sites per slice is its sites s·N .. s·N + N (the
//! [`crate::field::SpinorLayout`] order), `n_out` counts one slice, gauge and clover
//! fields are 4D and shared by the slices. The thread computes its coordinates from its checkerboard index (no neighbour tables),
//! waits on its grid dependency (`griddepcontrol.wait`: the runtime launches stencils as
//! programmatic dependents of the kernel before them, and nothing above the wait touches
//! memory), then for
//! each term (all unrolled): the neighbour's index, the source load in 16-byte chunks
//! (the [`crate::dsl::layout`] structure of arrays, coalesced across a warp), the spin
//! projection to a half spinor where the term has 1 ± γ_μ, the link product on the 12
//! reals (links reconstructed inline for recon 12: row 2 = conj(row 0 × row 1)), and the
//! reconstruction into the accumulator, times the boundary sign for hops that wrap an
//! antiperiodic time boundary (a term whose hop leaves its Dirichlet block is skipped). A
//! clover term loads the 72 packed reals of the output site's clover matrix (in the
//! compute precision) and multiplies both chiral 6 × 6 blocks, unpacking the hermitian
//! storage inline. Every knob is resolved while generating: the source holds them as compile-time constants only. Same lowered spec and variant → byte-identical
//! source.
//!
//! Kernel parameters, in order: the fields in declaration order (chunk pointers named
//! `f_<field>`, so that no field name collides with a C++ keyword; a colour-spinor field
//! in fixed16/fixed8 is followed by its f32 norms `norm_<field>`, one per site), then for xpay `x` (and `norm_xpay_x`), `a, b`, then `L0, L1, L2, L3` (the lattice
//! extents), `n_out` (number of output sites), and one stride per field (output, inputs,
//! x) in chunk units ([`crate::dsl::layout`]).
//!
//! | module | emits |
//! |---|---|
//! | this one | the kernel IR's frame: device library, constants, signature, prologue, stages, epilogue |
//! | `stmt` | the kernel IR's statements |
//! | [`library`] | the shared device library: complex, 3 × 3 matrices, transport, clover, lattice indexing, link-path codecs |
//! | `storage` | how fields are read and written: chunk loads/stores, narrow-format decode/encode, link reconstruction (recon 12/8) |
//! | `long_link` | compressed long links (recon 13, 12 + sign, 9 of L = c·W): parameters, phase load or sign, decode |
//! | `term` | text pieces of terms: neighbour wraps, site indices, phase arithmetic, comments |
//! | `dense` | dense-link (multigrid coarse) stencils, printed directly |
//! | [`face`] | the face pack/unpack kernels of distributed fields, from their codecs |

mod chiral_mma;
mod dense;
pub mod face;
pub mod library;
mod long_link;
mod stmt;
mod storage;
mod term;
mod walk;

use crate::dsl::codec::ArgOwner;
use crate::dsl::interface::{CompiledKernel, Geometry, KernelParam};
use crate::dsl::kernel_ir::{
    self, passes, Bounds, DeviceLib, FifthIndex, KernelField, KernelIr, Prologue,
};
use crate::dsl::knob_space::LaunchSpace;
use crate::dsl::layout::SoaLayout;
use crate::dsl::lower::Lowered;
use crate::dsl::variant::{DirichletBlocks, Region, Variant};
use crate::dsl::DslError;
pub(crate) use term::{describe_link, describe_term};

/// The kernel's `extern "C"` name: `<name>_<16 hex digits of the variant's stable hash>`.
pub fn kernel_name(name: &str, variant: &Variant) -> String {
    format!("{name}_{:016x}", variant.stable_hash())
}

/// Source text being built, one indented line at a time; the second field is a number
/// of indentation levels added to every line (the body of a conditional term).
struct Src(String, usize);

impl Src {
    fn line(&mut self, indent: usize, text: &str) {
        for _ in 0..indent + self.1 {
            self.0.push_str("    ");
        }
        self.0.push_str(text);
        self.0.push('\n');
    }
}

/// The complex arithmetic every kernel source starts with, for compute type `real`.
fn arithmetic_helpers(src: &mut Src) {
    src.0.push_str(library::COMPLEX);
}

/// `qdsl_grid_dependency_wait()`, after the arithmetic helpers: `griddepcontrol.wait`
/// on sm_90 and later. A kernel launched as a programmatic dependent (the runtime does so
/// for stencils) may start while the kernel before it is still running; the wait returns
/// once that kernel has finished and its writes are visible, and is a no-op otherwise.
fn dependency_wait_helper(src: &mut Src) {
    src.0.push_str(library::GRID_DEPENDENCY_WAIT);
}

/// The kernel's wait on its grid dependency, placed after the index arithmetic and before
/// the first load or store: everything above it may overlap the previous kernel.
fn dependency_wait(s: &mut Src) {
    s.line(
        1,
        "qdsl_grid_dependency_wait(); // no global memory is touched above this line",
    );
}

/// The colour transport v ← U v (or U† v) of K colour vectors, after the storage
/// helpers.
fn transport_helper(src: &mut Src) {
    src.0.push_str(library::TRANSPORT);
}

/// The clover product v ← A v on a packed site ([`crate::field::CloverField`]), after the
/// arithmetic helpers; emitted only for specs with a clover term.
fn clover_helper(src: &mut Src) {
    src.0.push_str(library::CLOVER);
}

/// The CUDA source of one variant (see the module docs). Errors for knobs the spec does
/// not support (dagger on a spec without Γ D Γ).
pub fn emit(lowered: &Lowered, variant: &Variant) -> Result<String, DslError> {
    compile(lowered, variant).map(|k| k.source)
}

/// Checks `variant` against the spec: its knobs, long-link compression, dagger and
/// Dirichlet blocks.
pub(crate) fn check_variant(lowered: &Lowered, variant: &Variant) -> Result<(), DslError> {
    let ir = &lowered.ir;
    ir.knobs.check(&ir.name, variant)?;
    crate::dsl::long_links::check_long_recon(ir, variant)?;
    if let Some(reason) = variant.link_scale_conflict() {
        return Err(DslError::UnsupportedVariant {
            kernel: ir.name.clone(),
            knob: "link_scale",
            reason,
        });
    }
    if variant.dagger && !lowered.dagger_supported {
        return Err(DslError::UnsupportedVariant {
            kernel: ir.name.clone(),
            knob: "dagger",
            reason:
                "Γ D Γ is defined for 4-spin fields and for 1-spin fields without spin operators"
                    .into(),
        });
    }
    if variant.slices == crate::dsl::variant::Slices::Walk && lowered.dense.is_some() {
        return Err(DslError::UnsupportedVariant {
            kernel: ir.name.clone(),
            knob: "slices",
            reason: "slices=walk: dense-link stencils map one thread per site and slice".into(),
        });
    }
    if variant.region == Region::SubBox {
        let reason = if lowered.dense.is_some() {
            Some("dense-link stencils cover the whole parity".to_string())
        } else if variant.sites == crate::dsl::variant::OutputSites::Full {
            Some("a box of sites needs a one-parity output".to_string())
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(DslError::UnsupportedVariant {
                kernel: ir.name.clone(),
                knob: "region",
                reason,
            });
        }
    }
    if let Some(DirichletBlocks { block }) = variant.dirichlet {
        if block.contains(&0) {
            return Err(DslError::UnsupportedVariant {
                kernel: ir.name.clone(),
                knob: "dirichlet",
                reason: format!("Dirichlet blocks {block:?}: a block extent is 0"),
            });
        }
    }
    Ok(())
}

/// The kernel IR of one variant of a 3-colour stencil after every pass of
/// [`passes::PASSES`] — what [`compile`] prints. Errors as [`compile`]; dense-link specs
/// (still printed directly, `dense`) have no kernel IR yet.
pub fn kernel_ir(lowered: &Lowered, variant: &Variant) -> Result<KernelIr, DslError> {
    check_variant(lowered, variant)?;
    if lowered.dense.is_some() {
        return Err(DslError::UnsupportedVariant {
            kernel: lowered.ir.name.clone(),
            knob: "kernel IR",
            reason: "dense-link stencils are printed without a kernel IR".into(),
        });
    }
    let mut k = kernel_ir::plan(lowered, variant)?;
    passes::run_all(&mut k);
    kernel_ir::walk::stage_through_shared(&mut k, variant)?;
    Ok(k)
}

/// One variant as a [`CompiledKernel`]: the source of [`emit`] with its entry name, its
/// parameters in signature order (the list the signature is printed from) and its
/// launch geometry. Plans the kernel IR, runs the passes and prints it ([`print`]).
pub fn compile(lowered: &Lowered, variant: &Variant) -> Result<CompiledKernel, DslError> {
    check_variant(lowered, variant)?;
    if let Some(n) = lowered.dense {
        return dense::compile(lowered, variant, n);
    }
    Ok(print(&kernel_ir(lowered, variant)?))
}

/// Prints a kernel IR as CUDA: header, `real`, the device library pieces, the constants,
/// the signature, then the body — shared-memory slices, prologue, stages (each followed
/// by `__syncthreads()` where it ends with a barrier) and epilogue.
pub fn print(k: &KernelIr) -> CompiledKernel {
    let mut s = Src(String::new(), 0);
    for l in &k.header {
        s.line(0, &format!("//{l}"));
    }
    s.line(0, &format!("typedef {} real;", k.real.c_type()));
    for lib in &k.library {
        library(&mut s, *lib);
    }
    s.line(0, "");
    s.line(
        0,
        "// The variant's knobs (already resolved in the code below).",
    );
    for c in &k.constants {
        let comment = c.comment.map_or(String::new(), |c| format!(" // {c}"));
        s.line(
            0,
            &format!("constexpr {} {} = {};{comment}", c.ty, c.name, c.value),
        );
    }
    if banded(&k.prologue) {
        let record = k
            .field(&k.epilogue.out)
            .map_or(BAND_RECORD_BYTES, |f| f.layout.record_bytes().max(1));
        s.line(
            0,
            "#ifndef QDSL_BAND_SITES // the sweep order's budget (band_order)",
        );
        s.line(
            0,
            &format!(
                "#define QDSL_BAND_SITES {}",
                BAND_SITES as usize * BAND_RECORD_BYTES / record
            ),
        );
        s.line(0, "#endif");
    }
    s.line(0, "");
    let params: Vec<(KernelParam, String)> = k
        .params
        .iter()
        .map(|p| (p.role.clone(), p.decl.clone()))
        .collect();
    let params = print_signature(&mut s, &k.name, params);
    s.line(0, "{");
    if let Some(plan) = &k.walk {
        walk::body(&mut s, k, plan);
        s.line(0, "}");
        return CompiledKernel {
            name: k.name.clone(),
            source: s.0,
            params,
            geometry: walk::geometry(k, plan),
        };
    }
    shared_buffers(&mut s, k);
    prologue(&mut s, &k.prologue);
    for stage in &k.stages {
        stmt::print_body(&mut s, 1, &stage.body, k);
        if stage.barrier {
            s.line(1, "__syncthreads();");
        }
    }
    epilogue(&mut s, k);
    s.line(0, "}");
    CompiledKernel {
        name: k.name.clone(),
        source: s.0,
        params,
        geometry: geometry(
            u32::try_from(k.shared_bytes([1, 1, 1])).unwrap_or(u32::MAX),
            k.prologue.fifth,
        ),
    }
}

/// The launch geometry of a kernel using `shared_bytes` of shared memory per thread:
/// one thread per output site along x with register caps as compile knobs; with the
/// slices in the block ([`FifthIndex::BlockY`]) also a tunable block.y, a divisor of Ls
/// ([`LaunchSpace::slices_in_block`]).
pub(super) fn geometry(shared_bytes: u32, fifth: FifthIndex) -> Geometry {
    let g = Geometry::per_site(shared_bytes);
    match fifth {
        FifthIndex::BlockY => g.with_tunable_block(2, LaunchSpace::slices_in_block()),
        FifthIndex::GridY | FifthIndex::ThreadY | FifthIndex::Walk => g,
    }
}

/// Prints one piece of the device library.
fn library(s: &mut Src, lib: DeviceLib) {
    match lib {
        DeviceLib::Complex => arithmetic_helpers(s),
        DeviceLib::GridDependencyWait => dependency_wait_helper(s),
        DeviceLib::Storage => storage::storage_helpers(s),
        DeviceLib::Codecs {
            spinor,
            gauge,
            recon,
            long_recon,
        } => storage::narrow_helpers(s, spinor, gauge, recon, long_recon),
        DeviceLib::Transport => transport_helper(s),
        DeviceLib::Clover => clover_helper(s),
        DeviceLib::BoxSite => s.0.push_str(library::BOX_SITE),
        DeviceLib::Mma16(op) => crate::dsl::mma::cuda::operand_helpers(&mut s.0, op),
        DeviceLib::Walk => s.0.push_str(library::WALK),
    }
}

/// The kernel's slices of its dynamic shared memory, one per buffer, each
/// `elems_per_thread` reals for every thread of the block.
fn shared_buffers(s: &mut Src, k: &KernelIr) {
    if k.shared.is_empty() {
        return;
    }
    s.line(
        1,
        "extern __shared__ real qdsl_shared[]; // sized at launch from the block",
    );
    s.line(
        1,
        "const int block_threads = blockDim.x * blockDim.y * blockDim.z;",
    );
    let mut offset = 0;
    for b in &k.shared {
        s.line(
            1,
            &format!(
                "real* const {} = qdsl_shared + {offset} * block_threads; // {} reals per thread",
                b.name, b.elems_per_thread
            ),
        );
        offset += b.elems_per_thread;
    }
}

/// The index prologue: this thread's output site i, its slice s5 and index io, the
/// lattice, parity and coordinates, cb, the grid-dependency wait and the accumulator.
fn prologue(s: &mut Src, p: &Prologue) {
    if p.region == Region::SubBox {
        return box_prologue(s, p);
    }
    let banded = banded(p);
    let sweep = if banded { "i_sweep" } else { "i" };
    s.line(
        1,
        &format!("const int {sweep} = blockIdx.x * blockDim.x + threadIdx.x;"),
    );
    if p.bounds == Bounds::Return {
        s.line(1, &format!("if ({sweep} >= n_out) return;"));
    }
    fifth_index(s, p.fifth);
    if banded {
        band_order(s);
    }
    s.line(
        1,
        "const int io = s5 * n_out + i; // the output's index: slice s5 of n_out sites",
    );
    s.line(1, "const int L[4] = {L0, L1, L2, L3};");
    s.line(1, "const int half = (L0 * L1 * L2 * L3) >> 1;");
    if p.out_parity < 0 {
        s.line(1, "const int parity = i >= half ? 1 : 0;");
        s.line(1, "const int idx = i - parity * half;");
    } else {
        s.line(1, "const int parity = OUT_PARITY;");
        s.line(1, "const int idx = i;");
    }
    s.line(
        1,
        "// Coordinates: lex = 2 idx or 2 idx + 1, whichever has this parity (L0 is even).",
    );
    site_coordinates(s);
    if p.checkerboard_index {
        s.line(
            1,
            "const int cb = parity * half + idx; // this site's checkerboard index",
        );
    }
    dependency_wait(s);
    zero_accumulator(s, p.spins);
}

/// The index prologue of a [`Region::SubBox`] kernel (one output parity): thread → site
/// of the box `[box_lo, box_lo + box_n)` by [`crate::lattice::SiteBox`]'s map (threads
/// without a site of the output parity return; with [`Bounds::WholeBlocks`], a fused
/// chain's barriers, the launcher guarantees there are none), then `i` = the site's
/// index within its parity and `io` = s5 · half + i, so that the terms and the epilogue
/// read as in the whole-parity kernel.
fn box_prologue(s: &mut Src, p: &Prologue) {
    s.line(
        1,
        "const int thread = blockIdx.x * blockDim.x + threadIdx.x;",
    );
    if p.bounds == Bounds::Return {
        s.line(1, "if (thread >= n_out) return;");
    }
    fifth_index(s, p.fifth);
    s.line(1, "const int L[4] = {L0, L1, L2, L3};");
    s.line(1, "const int half = (L0 * L1 * L2 * L3) >> 1;");
    s.line(1, "const int parity = OUT_PARITY;");
    s.line(1, "int x[4];");
    s.line(1, "{");
    s.line(2, "const int lo[4] = {box_lo0, box_lo1, box_lo2, box_lo3};");
    s.line(2, "const int n[4] = {box_n0, box_n1, box_n2, box_n3};");
    match p.bounds {
        Bounds::Return => s.line(
            2,
            "if (!box_site(thread, parity, lo, n, x)) return; // idle: no site of this parity",
        ),
        // Barriers follow: the launcher runs whole blocks of a box whose map pairs
        // sites, so every thread has a site (box_site is true).
        Bounds::WholeBlocks => s.line(
            2,
            "box_site(thread, parity, lo, n, x); // whole blocks of a paired box: every thread has a site",
        ),
    }
    s.line(1, "}");
    s.line(
        1,
        "const int i = (x[0] + L0 * (x[1] + L1 * (x[2] + L2 * x[3]))) >> 1; // the site's index in its parity",
    );
    s.line(
        1,
        "const int io = s5 * half + i; // the output's index: slice s5 of half sites",
    );
    if p.checkerboard_index {
        s.line(
            1,
            "const int cb = parity * half + i; // this site's checkerboard index",
        );
    }
    dependency_wait(s);
    zero_accumulator(s, p.spins);
}

/// `cplx acc[spins][3]`, zeroed.
fn zero_accumulator(s: &mut Src, ns: usize) {
    s.line(1, &format!("cplx acc[{ns}][3];"));
    s.line(1, "#pragma unroll");
    s.line(1, &format!("for (int s = 0; s < {ns}; s++) {{ acc[s][0] = acc[s][1] = acc[s][2] = cplx{{0, 0}}; }}"));
}

/// Whether the kernel sweeps its sites in z-bands ([`band_order`]): one output parity
/// of the whole lattice, the slices of a site in the block.
fn banded(p: &Prologue) -> bool {
    p.out_parity >= 0 && p.fifth != FifthIndex::GridY && p.region != Region::SubBox
}

/// The sites in z-bands: thread `i_sweep` → output site `i` (one parity), sweeping
/// the sites of B z-planes for every t before the next B planes, B the largest
/// power-of-two divisor step of L2 with L0 · L1 · B · (slices in flight) ≤
/// [`BAND_SITES`].
///
/// Why: with every slice of a site in flight together (block.y = Ls, or the multi-RHS
/// slices in the block), one t-plane of the lexicographic sweep is Ls times the 4D
/// one's bytes, and the neighbour at t ± 1 — read two t-planes apart — falls out of L2
/// (32⁴ × Ls 12 in f32: ~38 MB a plane). In bands of B planes the reuse distance is
/// B/L2 of that, for the price of re-reading the band edges' z-neighbours. A
/// bijection of [0, n_out): B = L2 is the lexicographic order.
fn band_order(s: &mut Src) {
    for line in [
        "// Sweep order: bands of B z-planes, every t of a band before the next band (L2 reuse of t +- 1).",
        "int band_b = L2;",
        "while ((band_b & 1) == 0 && L0 * L1 * band_b * (int)(gridDim.y * blockDim.y) > QDSL_BAND_SITES) { band_b >>= 1; }",
        "int i = i_sweep;",
        "if (i_sweep < n_out) {",
        "    const int hx = L0 >> 1, per_t = hx * L1 * band_b, per_band = per_t * L3;",
        "    const int band = i_sweep / per_band, r = i_sweep - band * per_band;",
        "    const int t = r / per_t, w = r - t * per_t;",
        "    const int xh = w % hx, x1 = (w / hx) % L1, zl = w / (hx * L1);",
        "    i = xh + hx * (x1 + L1 * (band * band_b + zl + L2 * t));",
        "}",
    ] {
        s.line(1, line);
    }
}

/// The budget of [`band_order`]: site-slices of one t-plane of a band (both parities)
/// for an output record of [`BAND_RECORD_BYTES`], scaled by the output record's bytes
/// (`QDSL_BAND_SITES`, a define the compile may override). 2¹⁶ keeps a band's plane of
/// a one-parity f32 Wilson field (in + out, 192 bytes a site) near 6 MB, a few planes
/// well inside the 50 MB L2 of an H100 or H200.
pub const BAND_SITES: u32 = 1 << 16;

/// The output record the [`BAND_SITES`] budget is written for: an f32 Wilson spinor.
pub const BAND_RECORD_BYTES: usize = 96;

/// `const int s5 = …`: the thread's fifth-dimension slice ([`FifthIndex`]).
fn fifth_index(s: &mut Src, fifth: FifthIndex) {
    s.line(
        1,
        match fifth {
            FifthIndex::GridY => {
                "const int s5 = blockIdx.y; // fifth-dimension slice: grid.y = Ls (1 for 4D fields)"
            }
            FifthIndex::ThreadY => "const int s5 = threadIdx.y; // fifth-dimension slice: block.y = Ls",
            FifthIndex::BlockY => {
                "const int s5 = blockIdx.y * blockDim.y + threadIdx.y; // fifth-dimension slice: block.y divides Ls, the slices of a site share its links"
            }
            // A walking kernel prints its own frame (walk::body), never this prologue.
            FifthIndex::Walk => "// the slices are walked in a loop (walk::body)",
        },
    );
}

/// The epilogue: `o` = acc (with xpay, a·x + b·acc), stored to the output at io.
fn epilogue(s: &mut Src, k: &KernelIr) {
    let e = &k.epilogue;
    let Some(out) = k.field(&e.out) else {
        return;
    };
    s.line(1, &format!("real o[{}];", out.layout.reals));
    if let Some(x) = e.xpay.as_ref().filter(|_| !e.xpay_in_registers) {
        stmt::print_load(s, 1, x, k);
    }
    s.line(1, "#pragma unroll");
    s.line(1, &format!("for (int q = 0; q < {}; q++) {{", e.spins));
    s.line(2, "#pragma unroll");
    s.line(2, "for (int a = 0; a < 3; a++) {");
    if e.xpay.is_some() {
        s.line(
            3,
            "o[6 * q + 2 * a] = xpay_a * xr[6 * q + 2 * a] + xpay_b * acc[q][a].re;",
        );
        s.line(
            3,
            "o[6 * q + 2 * a + 1] = xpay_a * xr[6 * q + 2 * a + 1] + xpay_b * acc[q][a].im;",
        );
    } else {
        s.line(3, "o[6 * q + 2 * a] = acc[q][a].re;");
        s.line(3, "o[6 * q + 2 * a + 1] = acc[q][a].im;");
    }
    s.line(2, "}");
    s.line(1, "}");
    storage::store_site(s, 1, &format!("f_{}", e.out), &out.layout, "io", "o");
}

/// The parameter declarations of a field: its chunk pointer `f_<name>`, then a
/// fixed-point colour spinor's norms, or a long field's phases and scale.
pub(crate) fn param_decls(f: &KernelField, owner: ArgOwner) -> Vec<String> {
    let base = format!("f_{}", f.name);
    match f.long {
        Some(c) => long_link::pointer_params(&base, c, &f.layout),
        None => std::iter::once(storage::pointer_param(
            &base,
            &f.layout,
            owner == ArgOwner::Output,
        ))
        .chain(f.extra.iter().map(|a| a.cuda_decl(&f.name, owner)))
        .collect(),
    }
}

/// The declarations of the xpay operand's pointer `base` and its codec's extra
/// arguments (fixed point: its norms).
pub(crate) fn site_pointer_params(base: &str, layout: &SoaLayout) -> Vec<String> {
    let extra = layout.format.codec().site_args();
    std::iter::once(storage::pointer_param(base, layout, false))
        .chain(extra.iter().map(|a| a.cuda_decl(base, ArgOwner::XpayX)))
        .collect()
}

/// The kernel's opening comment ([`kernel_ir::plan::header`]), for the dense emitter.
fn header(s: &mut Src, name: &str, lowered: &Lowered, variant: &Variant) {
    for l in kernel_ir::plan::header(name, lowered, variant) {
        s.line(0, &format!("//{l}"));
    }
}

/// Prints `int x[4]`, the coordinates of the output site from `idx` (its index within
/// its parity) and `parity`: lex = 2 idx or 2 idx + 1, whichever has that parity (L0 is
/// even). Shared by the 3-colour and the dense emitters.
fn site_coordinates(s: &mut Src) {
    s.line(1, "int x[4];");
    s.line(1, "{");
    s.line(2, "int r = 2 * idx;");
    s.line(
        2,
        "x[0] = r % L0; r /= L0; x[1] = r % L1; r /= L1; x[2] = r % L2; x[3] = r / L2;",
    );
    s.line(2, "x[0] += (x[0] + x[1] + x[2] + x[3] + parity) & 1;");
    s.line(1, "}");
}

/// What every stencil kernel takes after its field pointers (and the xpay operand's):
/// the xpay factors a and b (with xpay), the lattice extents (one declaration), the
/// number of output sites, and the chunk stride of each field in `fields` (name, whether
/// it is the output; and of the xpay operand). Shared by the 3-colour and the dense
/// emitters.
pub(crate) fn trailing_params(
    fields: &[(&str, bool)],
    xpay: bool,
    region: Region,
) -> Vec<(KernelParam, String)> {
    let mut params = Vec::new();
    if xpay {
        params.push((KernelParam::XpayA, "const real xpay_a".into()));
        params.push((KernelParam::XpayB, "const real xpay_b".into()));
    }
    let extents = "const int L0, const int L1, const int L2, const int L3";
    params.push((KernelParam::Extent(0), extents.into()));
    params.push((KernelParam::NOut, "const int n_out".into()));
    if region == Region::SubBox {
        let corner = "const int box_lo0, const int box_lo1, const int box_lo2, const int box_lo3";
        params.push((KernelParam::BoxLo(0), corner.into()));
        let extents = "const int box_n0, const int box_n1, const int box_n2, const int box_n3";
        params.push((KernelParam::BoxExtent(0), extents.into()));
    }
    let mut index = 0;
    for &(f, output) in fields {
        let role = match output {
            true => KernelParam::OutputStride(f.into()),
            false => {
                index += 1;
                KernelParam::InputStride {
                    name: f.into(),
                    index: index - 1,
                }
            }
        };
        params.push((role, format!("const int stride_{f}")));
    }
    if xpay {
        params.push((KernelParam::XpayStride, "const int stride_xpay_x".into()));
    }
    params
}

/// Prints `extern "C" __global__ void <name>(…)` with the declarations of `params`;
/// returns the parameters in signature order (the four extents, declared together,
/// as four).
fn print_signature(
    s: &mut Src,
    name: &str,
    params: Vec<(KernelParam, String)>,
) -> Vec<KernelParam> {
    s.line(0, &format!("extern \"C\" __global__ void {name}("));
    for (k, (_, p)) in params.iter().enumerate() {
        let end = if k + 1 == params.len() { ")" } else { "," };
        s.line(1, &format!("{p}{end}"));
    }
    params
        .into_iter()
        .flat_map(|(p, _)| match p {
            KernelParam::Extent(_) => (0..4).map(KernelParam::Extent).collect(),
            KernelParam::BoxLo(_) => (0..4).map(KernelParam::BoxLo).collect(),
            KernelParam::BoxExtent(_) => (0..4).map(KernelParam::BoxExtent).collect(),
            p => vec![p],
        })
        .collect()
}

/// [`trailing_params`] after `params`, printed as the signature ([`print_signature`]).
fn kernel_signature(
    s: &mut Src,
    name: &str,
    mut params: Vec<(KernelParam, String)>,
    fields: &[(&str, bool)],
    xpay: bool,
    region: Region,
) -> Vec<KernelParam> {
    params.extend(trailing_params(fields, xpay, region));
    print_signature(s, name, params)
}
