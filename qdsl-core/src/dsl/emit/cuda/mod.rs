//! The CUDA C++ emitter: a lowered spec and a [`Variant`] → the source of one
//! `extern "C" __global__` kernel, for NVRTC.
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
//! | this one | the kernel: signature, site coordinates, accumulator, xpay and store |
//! | `storage` | how fields are read and written: chunk loads/stores, narrow-format decode/encode, link reconstruction (recon 12/8) |
//! | `long_link` | compressed long links (recon 13, 12 + sign, 9 of L = c·W): parameters, phase load or sign, decode |
//! | `term` | one term: neighbour, source load, spin projection, link product, accumulation |

mod dense;
mod long_link;
mod storage;
mod term;

use crate::dsl::info::flops_per_site;
use crate::dsl::interface::{CompiledKernel, KernelParam, LaunchGeometry};
use crate::dsl::ir::{FieldShape, Role};
use crate::dsl::layout::SoaLayout;
use crate::dsl::lower::{Lowered, SpinLowering};
use crate::dsl::variant::{
    DirichletBlocks, OutputSites, Recon, StorageFormat, TimeBoundary, Variant,
};
use crate::dsl::DslError;
use crate::field::CLOVER_SITE_REALS;
use crate::format::link::ScaledCompression;
use crate::lattice::Parity;
use term::{emit_term, TermContext};

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
    src.0.push_str(
        r#"struct cplx { real re, im; };
__device__ __forceinline__ cplx c_add(cplx a, cplx b) { return {a.re + b.re, a.im + b.im}; }
__device__ __forceinline__ cplx c_sub(cplx a, cplx b) { return {a.re - b.re, a.im - b.im}; }
__device__ __forceinline__ cplx c_scale(real s, cplx a) { return {s * a.re, s * a.im}; }
// a b
__device__ __forceinline__ cplx c_mul(cplx a, cplx b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
// conj(a) b
__device__ __forceinline__ cplx c_conj_mul(cplx a, cplx b) { return {a.re * b.re + a.im * b.im, a.re * b.im - a.im * b.re}; }
// acc + a b
__device__ __forceinline__ cplx c_fma(cplx acc, cplx a, cplx b) { return {acc.re + a.re * b.re - a.im * b.im, acc.im + a.re * b.im + a.im * b.re}; }
// acc + conj(a) b
__device__ __forceinline__ cplx c_conj_fma(cplx acc, cplx a, cplx b) { return {acc.re + a.re * b.re + a.im * b.im, acc.im + a.re * b.im - a.im * b.re}; }

"#,
    );
}

/// `qdsl_grid_dependency_wait()`, after the arithmetic helpers: `griddepcontrol.wait`
/// on sm_90 and later. A kernel launched as a programmatic dependent (the runtime does so
/// for stencils) may start while the kernel before it is still running; the wait returns
/// once that kernel has finished and its writes are visible, and is a no-op otherwise.
fn dependency_wait_helper(src: &mut Src) {
    src.0.push_str(
        r#"// Programmatic dependent launch: waits for the kernel this one depends on to finish
// (sm_90+; a no-op for a normal launch).
__device__ __forceinline__ void qdsl_grid_dependency_wait() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

"#,
    );
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
    src.0.push_str(
        r#"// v <- U v (DAGGER: v <- U^dagger v) for each of K rows.
template <int K, bool DAGGER> __device__ __forceinline__ void transport(cplx (&v)[K][3], const cplx (&m)[3][3]) {
#pragma unroll
    for (int k = 0; k < K; k++) {
        cplx w[3];
#pragma unroll
        for (int a = 0; a < 3; a++) {
            w[a] = DAGGER ? c_conj_mul(m[0][a], v[k][0]) : c_mul(m[a][0], v[k][0]);
#pragma unroll
            for (int b = 1; b < 3; b++) { w[a] = DAGGER ? c_conj_fma(w[a], m[b][a], v[k][b]) : c_fma(w[a], m[a][b], v[k][b]); }
        }
#pragma unroll
        for (int a = 0; a < 3; a++) { v[k][a] = w[a]; }
    }
}
"#,
    );
}

/// The clover product v ← A v on a packed site ([`crate::field::CloverField`]), after the
/// arithmetic helpers; emitted only for specs with a clover term.
fn clover_helper(src: &mut Src) {
    src.0.push_str(
        r#"// v <- A v for a packed clover site a: chiral block b (spins 2b, 2b + 1, row r = 3 s' + colour)
// holds reals 36 b + r (the real diagonal), then the strictly-lower entries (r, c), r > c, row
// by row as (re, im) at 36 b + 6 + r (r - 1) + 2 c; the upper entries are their conjugates.
__device__ __forceinline__ void clover_mul(cplx (&v)[4][3], const real* a) {
    cplx w[4][3];
#pragma unroll
    for (int b = 0; b < 2; b++) {
        const real* blk = a + 36 * b;
#pragma unroll
        for (int r = 0; r < 6; r++) {
            cplx acc = c_scale(blk[r], v[2 * b + r / 3][r % 3]);
#pragma unroll
            for (int c = 0; c < 6; c++) {
                const cplx vc = v[2 * b + c / 3][c % 3];
                if (c < r) { const int o = 6 + r * (r - 1) + 2 * c; acc = c_fma(acc, cplx{blk[o], blk[o + 1]}, vc); }
                if (c > r) { const int o = 6 + c * (c - 1) + 2 * r; acc = c_conj_fma(acc, cplx{blk[o], blk[o + 1]}, vc); }
            }
            w[2 * b + r / 3][r % 3] = acc;
        }
    }
#pragma unroll
    for (int q = 0; q < 4; q++) { for (int c = 0; c < 3; c++) { v[q][c] = w[q][c]; } }
}
"#,
    );
}

/// The order in which the kernel computes the terms (indices into `lowered.terms`): the
/// terms that read a long (Naik) link first ([`LoweredTerm::long_link`]), then the
/// others, each group in spec order. The sum is the same up to rounding; the order only
/// changes what the compiler makes of the straight-line code. Measured on the H100
/// (standalone harness, 32⁴, improved staggered hop, f32, long links in recon 12 + sign,
/// two runs of four): the eight Naik terms ahead of the one-link terms took 177.9–178.9 µs
/// against 179.6–180.6 µs in spec order (72 against 78 registers; with the arithmetic
/// removed, the loads alone 177.6–177.8 against 178.2–178.4 µs: the bandwidth floor of
/// the access pattern). Kernels without long links keep the spec order — among them
/// 3-site hops along paths of three links, which in f64 spill when moved ahead (a test
/// spec: 184 bytes at 255 registers).
///
/// [`LoweredTerm::long_link`]: crate::dsl::lower::LoweredTerm::long_link
fn emission_order(lowered: &Lowered) -> Vec<usize> {
    let long = |k: &usize| lowered.terms[*k].long_link;
    let n = lowered.terms.len();
    (0..n)
        .filter(long)
        .chain((0..n).filter(|k| !long(k)))
        .collect()
}

/// A field of the kernel: its name, device layout and shape; a compressed long field
/// ([`long_link`]) has its compression and, as layout, its link record's.
struct FieldInfo {
    name: String,
    layout: SoaLayout,
    shape: FieldShape,
    long: Option<ScaledCompression>,
}

/// The CUDA source of one variant (see the module docs). Errors for knobs the spec does
/// not support (dagger on a spec without Γ D Γ).
pub fn emit(lowered: &Lowered, variant: &Variant) -> Result<String, DslError> {
    compile(lowered, variant).map(|k| k.source)
}

/// One variant as a [`CompiledKernel`]: the source of [`emit`] with its entry name, its
/// parameters in signature order (the list the signature is printed from) and its
/// launch geometry.
pub fn compile(lowered: &Lowered, variant: &Variant) -> Result<CompiledKernel, DslError> {
    let ir = &lowered.ir;
    ir.knobs.check(&ir.name, variant)?;
    crate::dsl::long_links::check_long_recon(ir, variant)?;
    if variant.dagger && !lowered.dagger_supported {
        return Err(DslError::UnsupportedVariant {
            kernel: ir.name.clone(),
            knob: "dagger",
            reason:
                "Γ D Γ is defined for 4-spin fields and for 1-spin fields without spin operators"
                    .into(),
        });
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
    if let Some(n) = lowered.dense {
        return dense::compile(lowered, variant, n);
    }
    let name = kernel_name(&ir.name, variant);
    let (ns, nc) = (lowered.nspin, lowered.ncolour);
    let spinor_reals = 2 * ns * nc;
    // The compute precision: clover fields are stored in it.
    let compute = match variant.spinor {
        StorageFormat::F64 => StorageFormat::F64,
        _ => StorageFormat::F32,
    };
    let fields: Vec<FieldInfo> = ir
        .fields
        .iter()
        .map(|f| {
            let long = variant
                .long_recon
                .compression()
                .filter(|_| crate::dsl::long_links::is_long(ir, &f.name));
            let layout = match (f.shape, long) {
                (FieldShape::Gauge { .. }, Some(c)) => long_link::record_layout(c, variant.gauge),
                (FieldShape::Spinor { .. }, _) => SoaLayout::new(spinor_reals, variant.spinor),
                (FieldShape::Gauge { .. }, None) => {
                    SoaLayout::new(variant.recon.reals(), variant.gauge)
                }
                (FieldShape::Clover, _) => SoaLayout::new(CLOVER_SITE_REALS, compute),
            };
            FieldInfo {
                name: f.name.clone(),
                layout,
                shape: f.shape,
                long,
            }
        })
        .collect();
    let out_layout = SoaLayout::new(spinor_reals, variant.spinor);
    let real = match variant.spinor {
        StorageFormat::F64 => "double",
        _ => "float",
    };
    let mut s = Src(String::new(), 0);
    header(&mut s, &name, lowered, variant);
    s.line(0, &format!("typedef {real} real;"));
    arithmetic_helpers(&mut s);
    dependency_wait_helper(&mut s);
    storage::storage_helpers(&mut s);
    storage::narrow_helpers(&mut s, variant);
    transport_helper(&mut s);
    if lowered
        .terms
        .iter()
        .any(|t| matches!(t.spin, SpinLowering::Clover { .. }))
    {
        clover_helper(&mut s);
    }
    s.line(0, "");
    // Knobs as compile-time constants.
    s.line(
        0,
        "// The variant's knobs (already resolved in the code below).",
    );
    let out_parity = match variant.sites {
        OutputSites::Parity(Parity::Even) => 0,
        OutputSites::Parity(Parity::Odd) => 1,
        OutputSites::Full => -1,
    };
    s.line(
        0,
        &format!("constexpr int OUT_PARITY = {out_parity}; // -1: full lattice"),
    );
    s.line(0, &format!("constexpr bool DAGGER = {};", variant.dagger));
    s.line(0, &format!("constexpr bool XPAY = {};", variant.xpay));
    s.line(
        0,
        &format!("constexpr bool RECON12 = {};", variant.recon == Recon::R12),
    );
    s.line(
        0,
        &format!(
            "constexpr bool ANTIPERIODIC_T = {};",
            variant.boundary == TimeBoundary::Antiperiodic
        ),
    );
    s.line(0, "");
    // Signature.
    let mut params = Vec::new();
    let (mut inputs, mut longs) = (0, 0);
    for f in &fields {
        let output = ir.field(&f.name).map(|d| d.role) == Some(Role::Out);
        let base = format!("f_{}", f.name);
        let name = f.name.clone();
        let decls = match f.long {
            Some(c) => long_link::pointer_params(&base, c, &f.layout),
            None => storage::pointer_params(
                &base,
                &f.layout,
                output,
                !matches!(f.shape, FieldShape::Gauge { .. }),
            ),
        };
        let roles = match (output, f.long) {
            (true, _) => vec![
                KernelParam::Output(name.clone()),
                KernelParam::OutputNorm(name),
            ],
            (false, None) => {
                let index = inputs;
                vec![
                    KernelParam::Input {
                        name: name.clone(),
                        index,
                    },
                    KernelParam::InputNorm { name, index },
                ]
            }
            (false, Some(c)) => {
                let (index, long) = (inputs, longs);
                longs += 1;
                let mut roles = vec![KernelParam::Input {
                    name: name.clone(),
                    index,
                }];
                if c.stores_phase() {
                    roles.push(KernelParam::LongPhase {
                        name: name.clone(),
                        long,
                    });
                }
                roles.push(KernelParam::LongScale { name, long });
                roles
            }
        };
        inputs += usize::from(!output);
        // The declarations come in the order of the roles (the pointer first, then its
        // norms, or its phases and scale).
        params.extend(roles.into_iter().zip(decls));
    }
    if variant.xpay {
        let decls = storage::pointer_params("xpay_x", &out_layout, false, true);
        params.extend(
            [KernelParam::XpayX, KernelParam::XpayNorm]
                .into_iter()
                .zip(decls),
        );
    }
    let names: Vec<(&str, bool)> = fields
        .iter()
        .map(|f| {
            (
                f.name.as_str(),
                ir.field(&f.name).map(|d| d.role) == Some(Role::Out),
            )
        })
        .collect();
    let params = kernel_signature(&mut s, &name, params, &names, variant.xpay);
    s.line(0, "{");
    s.line(1, "const int i = blockIdx.x * blockDim.x + threadIdx.x;");
    s.line(1, "if (i >= n_out) return;");
    s.line(
        1,
        "const int s5 = blockIdx.y; // fifth-dimension slice: grid.y = Ls (1 for 4D fields)",
    );
    s.line(
        1,
        "const int io = s5 * n_out + i; // the output's index: slice s5 of n_out sites",
    );
    s.line(1, "const int L[4] = {L0, L1, L2, L3};");
    s.line(1, "const int half = (L0 * L1 * L2 * L3) >> 1;");
    if out_parity < 0 {
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
    site_coordinates(&mut s);
    if lowered
        .terms
        .iter()
        .any(|t| t.term.links.iter().any(|l| l.at == 0))
    {
        s.line(
            1,
            "const int cb = parity * half + idx; // this site's checkerboard index",
        );
    }
    dependency_wait(&mut s);
    s.line(1, &format!("cplx acc[{ns}][3];"));
    s.line(1, "#pragma unroll");
    s.line(1, &format!("for (int s = 0; s < {ns}; s++) {{ acc[s][0] = acc[s][1] = acc[s][2] = cplx{{0, 0}}; }}"));
    let cx = TermContext {
        lowered,
        variant,
        fields: &fields,
        out_parity,
        ns,
    };
    // The terms in emission order; the prefetch build (a tuner knob) asks for the next
    // term's records before each term. Terms keep their spec numbers in the comments.
    let order = emission_order(lowered);
    if let Some(&k) = order.first() {
        term::emit_prefetch(&mut s, &cx, k, &lowered.terms[k]);
    }
    for (pos, &k) in order.iter().enumerate() {
        if let Some(&next) = order.get(pos + 1) {
            term::emit_prefetch(&mut s, &cx, next, &lowered.terms[next]);
        }
        emit_term(&mut s, &cx, k, &lowered.terms[k])?;
    }
    // Store.
    let out = &lowered.output.name;
    s.line(1, &format!("real o[{spinor_reals}];"));
    if variant.xpay {
        let xpay_x = ("xpay_x", &out_layout);
        storage::load_site(
            &mut s,
            1,
            xpay_x,
            "io",
            "xr",
            storage::Reads::Once,
            storage::Scaling::Applied,
        );
    }
    s.line(1, "#pragma unroll");
    s.line(1, &format!("for (int q = 0; q < {ns}; q++) {{"));
    s.line(2, "#pragma unroll");
    s.line(2, "for (int a = 0; a < 3; a++) {");
    if variant.xpay {
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
    storage::store_site(&mut s, 1, &format!("f_{out}"), &out_layout, "io", "o");
    s.line(0, "}");
    Ok(CompiledKernel {
        name,
        source: s.0,
        params,
        geometry: LaunchGeometry::SITE_PER_THREAD,
    })
}

/// The kernel's opening comment: its name, the spec it came from, the spec's doc (the
/// operator's equation), the variant and the flop count per site.
fn header(s: &mut Src, name: &str, lowered: &Lowered, variant: &Variant) {
    let ir = &lowered.ir;
    s.line(0, &format!("// {name}"));
    s.line(
        0,
        &format!(
            "// Generated by qdsl from the stencil spec `{}`. Do not edit.",
            ir.name
        ),
    );
    for l in ir.doc.lines() {
        s.line(0, &format!("//{}", l.trim_end()));
    }
    s.line(0, &format!("// variant: {}", variant.canonical()));
    s.line(
        0,
        &format!(
            "// flops per site: {}",
            flops_per_site(lowered, variant.xpay)
        ),
    );
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

/// Prints `extern "C" __global__ void <name>(…)`: the field pointers `params` (and the
/// xpay operand pointer, when the caller added it), then what every stencil kernel takes
/// after them — the xpay factors a and b (with xpay), the lattice extents, the number of
/// output sites, and the chunk stride of each field in `fields` (name, whether it is the
/// output; and of the xpay operand). Returns the parameters in signature order. Shared by
/// the 3-colour and the dense emitters.
fn kernel_signature(
    s: &mut Src,
    name: &str,
    mut params: Vec<(KernelParam, String)>,
    fields: &[(&str, bool)],
    xpay: bool,
) -> Vec<KernelParam> {
    if xpay {
        params.push((KernelParam::XpayA, "const real xpay_a".into()));
        params.push((KernelParam::XpayB, "const real xpay_b".into()));
    }
    let extents = "const int L0, const int L1, const int L2, const int L3";
    params.push((KernelParam::Extent(0), extents.into()));
    params.push((KernelParam::NOut, "const int n_out".into()));
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
    s.line(0, &format!("extern \"C\" __global__ void {name}("));
    for (k, (_, p)) in params.iter().enumerate() {
        let end = if k + 1 == params.len() { ")" } else { "," };
        s.line(1, &format!("{p}{end}"));
    }
    // The four extents share one declaration line.
    params
        .into_iter()
        .flat_map(|(p, _)| match p {
            KernelParam::Extent(_) => (0..4).map(KernelParam::Extent).collect(),
            p => vec![p],
        })
        .collect()
}
