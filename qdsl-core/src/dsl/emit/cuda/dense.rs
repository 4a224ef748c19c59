//! The CUDA kernel of a dense spec ([`Lowered::dense`]): links are N × N complex
//! matrices on the whole spin-colour vector (N = N_s · N_c, e.g. 48 for a 2 × 24
//! multigrid coarse operator), f64 or f32 storage only.
//!
//! One thread per output site (and one grid row per fifth-dimension slice, as in the
//! 3-colour kernels). The thread first resolves every term's geometry — the source
//! site, the link's site, the coefficient with the antiperiodic wrap sign, and whether a
//! Dirichlet wall drops the term — then loops over the N output rows r (never unrolled,
//! `#pragma unroll 1`: unrolled rows would hold every term's loads at once) and, per
//! term, over the N columns c (unrolled for N ≤ 4, else by 4: fully unrolled columns let
//! the compiler keep every term's source in registers across rows, which spills from
//! N = 8 on):
//!
//! out_r(x) = Σ_k c_k Σ_c L^k_{rc} φ_c(x + n_k μ̂_k),   L = Y (or Y†: L_{rc} = conj(Y_{cr})),
//!
//! storing each row as it is finished (with xpay: a · x_r + b · out_r). Registers stay
//! O(terms), independent of N; the source site is re-read per row from L1/L2.
//!
//! Memory: every field uses the chunked structure of arrays of [`crate::dsl::layout`]:
//! complex component k of a spinor record (k = σ N_c + a) is reals 2k, 2k + 1, i.e.
//! chunk ⌊2k/R⌋ at offset 2k mod R (R reals per chunk); a dense link field stores
//! Y_μ(x) row-major as a record of 2N² reals, the four directions one after the other
//! (chunk μ · C + c of the link site's checkerboard index, C chunks per link), like a
//! gauge field; a site-matrix field (`SiteMatrix<N>`) stores X(x) as the one record of
//! its site, read as the link μ = 0 of the output site itself (X(x) φ(x) is a term with
//! one link at x and no hop). Offsets are 64-bit (a 32⁴ lattice of 48 × 48 links has 2·10¹⁰ reals).
//!
//! Kernel parameters, in order: the fields in declaration order (`f_<field>`: the output
//! `real*`, spinor inputs `const real*`, link inputs `const greal*` in the gauge storage
//! type), then for xpay `xpay_x, xpay_a, xpay_b`, then `L0, L1, L2, L3`, `n_out`, and one
//! stride per field (and `stride_xpay_x`) in chunk units — the order of the 3-colour
//! kernels without fixed-point norms.

use super::term::{displaced, link_site, shift_and_wrap, source_index};
use super::{
    arithmetic_helpers, dependency_wait, dependency_wait_helper, header, kernel_name, Src,
};
use crate::dsl::dense::check_dense_variant;
use crate::dsl::interface::{CompiledKernel, KernelParam};
use crate::dsl::ir::{FieldShape, Role};
use crate::dsl::kernel_ir::FifthIndex;
use crate::dsl::layout::SoaLayout;
use crate::dsl::lower::{Lowered, LoweredTerm, ReadSites};
use crate::dsl::variant::{OutputSites, Slices, StorageFormat, TimeBoundary, Variant};
use crate::dsl::DslError;
use crate::lattice::Parity;

/// Column loops are fully unrolled up to this N, by 4 beyond.
const FULL_UNROLL_MAX: usize = 4;

/// The C++ type of one real of `format` (f64 or f32, checked by the caller).
fn real_type(format: StorageFormat) -> &'static str {
    match format {
        StorageFormat::F64 => "double",
        _ => "float",
    }
}

/// The dense loads index whole 16-byte chunks ([`crate::dsl::layout`]): an f32 vector of
/// N complex numbers with N odd (and its N × N links) would end in an 8-byte tail.
fn check_whole_chunks(kernel: &str, n: usize, variant: &Variant) -> Result<(), DslError> {
    let f32 = [variant.spinor, variant.gauge].contains(&StorageFormat::F32);
    if f32 && n % 2 == 1 {
        return Err(DslError::UnsupportedVariant {
            kernel: kernel.into(),
            knob: "spinor",
            reason: format!(
                "f32 storage: the CUDA code of a dense spec needs an even N (found {n}): its records are read in 16-byte chunks"
            ),
        });
    }
    Ok(())
}

/// One variant of a dense spec with N × N links (`n`): its source and interface.
pub(super) fn compile(
    lowered: &Lowered,
    variant: &Variant,
    n: usize,
) -> Result<CompiledKernel, DslError> {
    let ir = &lowered.ir;
    check_dense_variant(&ir.name, n, variant)?;
    check_whole_chunks(&ir.name, n, variant)?;
    let name = kernel_name(&ir.name, variant);
    let spinor = SoaLayout::new(2 * n, variant.spinor);
    let link = SoaLayout::new(2 * n * n, variant.gauge);
    let mut s = Src(String::new(), 0);
    header(&mut s, &name, lowered, variant);
    s.line(
        0,
        &format!(
            "// dense {n} x {n} links on {} fields: one thread per site, a loop over the rows",
            lowered.output.shape.spec_name()
        ),
    );
    s.line(0, &format!("typedef {} real;", real_type(variant.spinor)));
    s.line(
        0,
        &format!(
            "typedef {} greal; // link storage",
            real_type(variant.gauge)
        ),
    );
    arithmetic_helpers(&mut s);
    dependency_wait_helper(&mut s);
    accessors(&mut s);
    let params = signature(&mut s, lowered, variant, &name);
    s.line(0, "{");
    coordinates(&mut s, variant);
    for (k, t) in lowered.terms.iter().enumerate() {
        term_geometry(&mut s, lowered, variant, k, t);
    }
    dependency_wait(&mut s);
    s.line(1, "#pragma unroll 1");
    s.line(
        1,
        &format!("for (int r = 0; r < {n}; r++) {{ // output row r = spin * Nc + colour"),
    );
    s.line(2, "cplx acc = cplx{0, 0};");
    for (k, t) in lowered.terms.iter().enumerate() {
        term_row(&mut s, variant, n, &spinor, &link, k, t);
    }
    let out = &lowered.output.name;
    let rpc = spinor.reals_per_chunk();
    if variant.xpay {
        s.line(
            2,
            &format!("const cplx xr = ld_c<{rpc}>(xpay_x, 0, r, io, stride_xpay_x);"),
        );
        s.line(
            2,
            "acc = cplx{xpay_a * xr.re + xpay_b * acc.re, xpay_a * xr.im + xpay_b * acc.im};",
        );
    }
    s.line(
        2,
        &format!("st_c<{rpc}>(f_{out}, r, io, stride_{out}, acc);"),
    );
    s.line(1, "}");
    s.line(0, "}");
    Ok(CompiledKernel {
        name,
        source: s.0,
        params,
        geometry: super::geometry(0, FifthIndex::of(variant.slices)),
    })
}

/// Loads and stores of one complex component of a chunked record.
fn accessors(s: &mut Src) {
    s.0.push_str(
        r#"// Complex component k of record i of a chunked structure of arrays (R reals per chunk,
// chunk c of record i at c * stride + i; chunk0 the record's first chunk in the array).
template <int R, typename T> __device__ __forceinline__ cplx ld_c(const T* f, long long chunk0, int k, int i, int stride) {
    const T* p = f + ((chunk0 + (2 * k) / R) * (long long)stride + i) * R + (2 * k) % R;
    return cplx{(real)p[0], (real)p[1]};
}
template <int R> __device__ __forceinline__ void st_c(real* f, int k, int i, int stride, cplx z) {
    real* p = f + ((long long)((2 * k) / R) * stride + i) * R + (2 * k) % R;
    p[0] = z.re; p[1] = z.im;
}

"#,
    );
}

/// `extern "C" __global__ void <name>(…)` (see the module docs for the order).
fn signature(s: &mut Src, lowered: &Lowered, variant: &Variant, name: &str) -> Vec<KernelParam> {
    let ir = &lowered.ir;
    let mut params = Vec::new();
    let mut index = 0;
    for f in &ir.fields {
        let n = f.name.clone();
        params.push(match (f.role, f.shape) {
            (Role::Out, _) => (
                KernelParam::Output(n),
                format!("real* __restrict__ f_{}", f.name),
            ),
            (Role::In, shape) => {
                index += 1;
                let ty = match shape {
                    FieldShape::Gauge { .. } => "greal",
                    _ => "real",
                };
                (
                    KernelParam::Input {
                        name: n,
                        index: index - 1,
                    },
                    format!("const {ty}* __restrict__ f_{}", f.name),
                )
            }
        });
    }
    if variant.xpay {
        params.push((KernelParam::XpayX, "const real* __restrict__ xpay_x".into()));
    }
    let names: Vec<(&str, bool)> = ir
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.role == Role::Out))
        .collect();
    super::kernel_signature(s, name, params, &names, variant.xpay, variant.region)
}

/// The thread's output index and coordinates, as in the 3-colour kernels.
fn coordinates(s: &mut Src, variant: &Variant) {
    s.line(1, "const int i = blockIdx.x * blockDim.x + threadIdx.x;");
    s.line(1, "if (i >= n_out) return;");
    match variant.slices {
        // A walk is refused for dense stencils (check_variant).
        Slices::Grid | Slices::Walk => {
            s.line(1, "const int s5 = blockIdx.y; // fifth-dimension slice")
        }
        Slices::InBlock => s.line(
            1,
            "const int s5 = blockIdx.y * blockDim.y + threadIdx.y; // fifth-dimension slice: block.y divides Ls",
        ),
    }
    s.line(1, "const int io = s5 * n_out + i; // the output's index");
    s.line(1, "const int L[4] = {L0, L1, L2, L3};");
    s.line(1, "const int half = (L0 * L1 * L2 * L3) >> 1;");
    match variant.sites {
        OutputSites::Full => {
            s.line(1, "const int parity = i >= half ? 1 : 0;");
            s.line(1, "const int idx = i - parity * half;");
        }
        OutputSites::Parity(p) => {
            let p = if p == Parity::Even { 0 } else { 1 };
            s.line(1, &format!("const int parity = {p};"));
            s.line(1, "const int idx = i;");
        }
    }
    super::site_coordinates(s);
    s.line(
        1,
        "const int cb = parity * half + idx; // this site's checkerboard index",
    );
}

/// The geometry of term `k`: `nb<k>` its source index, `ln<k>` its link's checkerboard
/// index, `cf<k>` its coefficient times the boundary sign, `on<k>` (Dirichlet only)
/// whether the hop stays in x's block.
fn term_geometry(s: &mut Src, lowered: &Lowered, variant: &Variant, k: usize, t: &LoweredTerm) {
    let (mu, steps) = (t.term.hop.mu, t.term.hop.steps);
    let coeff = if variant.dagger {
        t.dagger_coeff
    } else {
        t.coeff
    };
    let signed = variant.boundary == TimeBoundary::Antiperiodic && mu == 3 && steps != 0;
    let walled = variant
        .dirichlet
        .filter(|_| steps != 0)
        .map(|d| d.block[mu]);
    s.line(1, &format!("int nb{k};"));
    if !t.term.links.is_empty() {
        s.line(1, &format!("int ln{k};"));
    }
    if walled.is_some() {
        s.line(1, &format!("bool on{k};"));
    }
    let cf = if signed {
        format!("real cf{k};")
    } else {
        format!("const real cf{k} = real({coeff:?});")
    };
    s.line(1, &cf);
    s.line(
        1,
        &format!("{{ // term {k}: {}", describe(lowered, t, coeff)),
    );
    s.line(2, "int y[4] = {x[0], x[1], x[2], x[3]};");
    if signed {
        s.line(2, "bool wraps = false;");
    }
    let flip = if signed { " wraps = !wraps;" } else { "" };
    shift_and_wrap(s, 2, "y", mu, steps, flip);
    if signed {
        s.line(
            2,
            &format!("cf{k} = wraps ? real({:?}) : real({coeff:?});", -coeff),
        );
    }
    if let Some(b) = walled {
        s.line(2, &format!("on{k} = x[{mu}] / {b} == y[{mu}] / {b};"));
    }
    let reads = lowered
        .input(&t.term.source)
        .map(|i| i.reads)
        .unwrap_or(ReadSites::Both);
    let parity_output = matches!(variant.sites, OutputSites::Parity(_));
    s.line(
        2,
        &format!("nb{k} = {};", source_index(reads, parity_output)),
    );
    if let Some(l) = t.term.links.first() {
        link_site(s, 2, &format!("ln{k}"), l);
    }
    s.line(1, "}");
}

/// Row r of term `k`: acc += cf<k> · Σ_c L_{rc} φ_c (or cf<k> · φ_r without a link).
fn term_row(
    s: &mut Src,
    variant: &Variant,
    n: usize,
    spinor: &SoaLayout,
    link: &SoaLayout,
    k: usize,
    t: &LoweredTerm,
) {
    let src = &t.term.source;
    let rpc = spinor.reals_per_chunk();
    let mut indent = 2;
    if variant.dirichlet.is_some() && t.term.hop.steps != 0 {
        s.line(2, &format!("if (on{k}) {{"));
        indent = 3;
    }
    match t.term.links.first() {
        None => {
            s.line(
                indent,
                &format!(
                    "acc = c_add(acc, c_scale(cf{k}, ld_c<{rpc}>(f_{src}, 0, r, nb{k}, stride_{src})));"
                ),
            );
        }
        Some(l) => {
            let (y, mu) = (&l.field, l.mu);
            let (grpc, chunk0) = (link.reals_per_chunk(), mu * link.chunks());
            let (entry, fma) = if l.dagger {
                (format!("c * {n} + r"), "c_conj_fma")
            } else {
                (format!("r * {n} + c"), "c_fma")
            };
            s.line(indent, "{");
            s.line(indent + 1, "cplx w = cplx{0, 0};");
            if n <= FULL_UNROLL_MAX {
                s.line(indent + 1, "#pragma unroll");
            } else {
                s.line(indent + 1, "#pragma unroll 4");
            }
            s.line(
                indent + 1,
                &format!(
                    "for (int c = 0; c < {n}; c++) {{ w = {fma}(w, ld_c<{grpc}>(f_{y}, {chunk0}, {entry}, ln{k}, stride_{y}), ld_c<{rpc}>(f_{src}, 0, c, nb{k}, stride_{src})); }}"
                ),
            );
            s.line(indent + 1, &format!("acc = c_add(acc, c_scale(cf{k}, w));"));
            s.line(indent, "}");
        }
    }
    if indent == 3 {
        s.line(2, "}");
    }
}

/// A one-line description of a term as generated: `+1 * y[0](x - mu0).dagger() * phi(x - mu0)`,
/// or `+1 * xm(x) * phi(x)` for a site matrix.
fn describe(lowered: &Lowered, t: &LoweredTerm, coeff: f64) -> String {
    let site_matrix = |name: &str| {
        lowered
            .ir
            .field(name)
            .is_some_and(|f| f.shape.is_site_matrix())
    };
    let link = t
        .term
        .links
        .first()
        .map(|l| {
            if site_matrix(&l.field) {
                return format!("{}(x) * ", l.field);
            }
            format!(
                "{}[{}]({}){} * ",
                l.field,
                l.mu,
                displaced(l.at, l.mu),
                if l.dagger { ".dagger()" } else { "" }
            )
        })
        .unwrap_or_default();
    format!(
        "{coeff:+} * {link}{}({})",
        t.term.source,
        displaced(t.term.hop.steps, t.term.hop.mu)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f32 dense records must be whole 16-byte chunks: N odd is refused naming N, N even
    /// and f64 pass.
    #[test]
    fn odd_n_in_f32_is_refused() {
        let f32 = Variant {
            spinor: StorageFormat::F32,
            gauge: StorageFormat::F32,
            ..Variant::default()
        };
        let e = check_whole_chunks("coarse", 3, &f32)
            .unwrap_err()
            .to_string();
        assert!(e.contains("even N (found 3)"), "{e}");
        assert!(check_whole_chunks("coarse", 48, &f32).is_ok());
        let f64 = Variant {
            spinor: StorageFormat::F64,
            gauge: StorageFormat::F64,
            ..Variant::default()
        };
        assert!(check_whole_chunks("coarse", 3, &f64).is_ok());
    }
}
