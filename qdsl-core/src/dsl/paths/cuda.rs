//! The CUDA C++ emitter of a [`PathTree`]: one `extern "C"` kernel per spec, one thread
//! per link, the whole tree evaluated in registers:
//!
//! * `<name>_links(out, u, c0..c{T−1}, L0..L3)`: thread i of 4V computes one link μ at
//!   checkerboard site cb, F_μ(x) = V_root(x) of [`super::tree`], c_t = the term
//!   coefficients with their tadpole factors. A warp shares μ, so the direction loops
//!   run in step. The staged plan's kernels and the force and trace kernels map threads
//!   to (slot or μ, cb) warp by warp (`lane_site`: the lanes of 32 sites are neighbouring
//!   warps, so their links are read from memory once); the one-kernel tree smearing
//!   lane-major (μ = i / V), its f64 build being at the register limit;
//! * `<name>_to_device_layout(out, in, L0..L3)`: host-layout links rewritten in the
//!   device layout the first kernel reads ([`device_layout`]).
//!
//! Each tree node is one `__device__` function, inlined where its parent wraps it; a
//! wrap binding a new direction is a loop over the directions not yet used (by rank, so
//! the trip count is the same for every μ) and both orientations, not unrolled: the
//! source and the PTX grow with the tree, not with the number of paths. A site is
//! carried as its four coordinates packed in one 32-bit word (8 bits each, so extents up
//! to 256; [`check_extents`]); the input links are read in the device layout of
//! [`device_layout`] (each real component-major over the sites, so coalesced; 18 reals,
//! or the 14-real recon 12 + phase records of [`super::knobs`] rebuilt inline), the output
//! written in the host layout of [`crate::field::GaugeField`] (18 reals at `4·cb + μ`). Same tree and
//! precision → byte-identical source.

use super::knobs::{PathKnobs, PlanKind};
use super::spec::{Dir, Step};
use super::staged::Staging;
use super::tree::{new_names, Core, PathTree, TreeNode, Wrap};
use crate::dsl::emit::cuda::library;
use crate::dsl::interface::{
    entry_guard, Elem, Geometry, KernelInterface, KernelProgram, ParamDecl, ParamKind,
};
use crate::dsl::variant::Recon;
use crate::dsl::DslError;
use crate::real::Real;
use std::fmt::Write;

/// The largest lattice extent the packed site coordinates hold.
pub const MAX_EXTENT: usize = 256;

/// Site arithmetic on packed coordinates and the oriented link W_{d,o}.
const SITES: &str = r#"// a site: coordinates packed 8 bits each; lm1: the extents minus 1, packed alike
struct geom { int lm1, L0, L1, L2, half; };
__device__ __forceinline__ geom make_geom(int L0, int L1, int L2, int L3) {
    geom g;
    g.lm1 = (int)((unsigned)(L0 - 1) | ((unsigned)(L1 - 1) << 8) | ((unsigned)(L2 - 1) << 16) | ((unsigned)(L3 - 1) << 24));
    g.L0 = L0; g.L1 = L1; g.L2 = L2; g.half = L0 * L1 * L2 * L3 / 2;
    return g;
}
// the site p + o d (periodic)
__device__ __forceinline__ int move(const geom& g, int p, int d, int o) {
    const int sh = 8 * d;
    const int m = (g.lm1 >> sh) & 255;
    int c = ((p >> sh) & 255) + o;
    c = c < 0 ? m : (c > m ? 0 : c);
    return (int)(((unsigned)p & ~(255u << sh)) | ((unsigned)c << sh));
}
__device__ __forceinline__ int cb_index(const geom& g, int p) {
    const int c0 = p & 255, c1 = (p >> 8) & 255, c2 = (p >> 16) & 255, c3 = (p >> 24) & 255;
    const int lex = c0 + g.L0 * (c1 + g.L1 * (c2 + g.L2 * c3));
    return ((c0 + c1 + c2 + c3) & 1) * g.half + (lex >> 1);
}
__device__ __forceinline__ int pack(const int c[4]) {
    return (int)((unsigned)c[0] | ((unsigned)c[1] << 8) | ((unsigned)c[2] << 16) | ((unsigned)c[3] << 24));
}
// link d of site cb in the device layout (real k at (d * LINK_REALS + k) * volume + cb:
// a warp of neighbouring sites reads each real coalesced), decoded by the input codec
__device__ __forceinline__ mat link_at(const real* __restrict__ u, const geom& g, int cb, int d) {
    real r[LINK_REALS];
    for (int k = 0; k < LINK_REALS; k++) r[k] = u[(d * LINK_REALS + k) * (2 * g.half) + cb];
    return load_link(r, 0);
}
// thread i of lanes · volume (lanes: the slots or directions of one site): its lane and
// checkerboard site. With volume a multiple of 32, warp by warp: warp w holds the 32 sites
// of group w / lanes for lane w % lanes, so the lanes of one site run in neighbouring warps
// of a block and read their links through L1 and L2 once (lane-major, each lane swept the
// whole lattice and read the links from memory again); otherwise lane-major.
__device__ __forceinline__ void lane_site(int i, int lanes, int volume, int& lane, int& cb) {
    if ((volume & 31) == 0) {
        const int w = i >> 5;
        lane = w % lanes;
        cb = ((w / lanes) << 5) | (i & 31);
    } else {
        lane = i / volume;
        cb = i - lane * volume;
    }
}
// W_{d,o}(p): U_d(p) for o > 0, U_d(p - d)^dagger for o < 0
__device__ __forceinline__ mat wlink(const real* __restrict__ u, const geom& g, int p, int d, int o) {
    const mat m = link_at(u, g, cb_index(g, o > 0 ? p : move(g, p, d, -1)), d);
    return o > 0 ? m : adjoint(m);
}
// the k-th direction (k = 0, 1, ...) not in the bit mask used
__device__ __forceinline__ int nth_free(int used, int k) {
    int d = 0;
    for (int j = 0; j < 4; j++) if (!((used >> j) & 1)) { if (k == 0) { d = j; break; } k--; }
    return d;
}
__device__ __forceinline__ mat zero_mat() {
    mat m;
    for (int k = 0; k < 9; k++) { m.re[k] = 0; m.im[k] = 0; }
    return m;
}
// v + c q
__device__ __forceinline__ mat axpy(real c, const mat& q, const mat& v) {
    mat m;
    for (int k = 0; k < 9; k++) { m.re[k] = v.re[k] + c * q.re[k]; m.im[k] = v.im[k] + c * q.im[k]; }
    return m;
}
"#;

/// The field helpers of a staged plan ([`super::staged`]): slot indices of (μ, used) and
/// component-major field loads and stores with 64-bit offsets.
const STAGED: &str = r#"// the slot of (mu, used) among the C(3, k) slots of one mu of a node with k bound
// directions: the rank of the used directions other than mu among the k-subsets of the
// other three (as 3-bit masks in increasing order)
__device__ __forceinline__ int field_slot(int mu, int used, int k) {
    int m = 0, b = 0;
    for (int j = 0; j < 4; j++) if (j != mu) { if ((used >> j) & 1) m |= 1 << b; b++; }
    int rank = 0;
    for (int s = 0; s < m; s++) rank += __popc(s) == k;
    return rank;
}
// the inverse of field_slot: the used directions (mu included) of slot s of one mu
__device__ __forceinline__ int slot_used(int s, int k, int mu) {
    int rank = s, m = 0;
    for (; m < 8; m++) if (__popc(m) == k) { if (rank == 0) break; rank--; }
    int used = 1 << mu, b = 0;
    for (int j = 0; j < 4; j++) if (j != mu) { if ((m >> b) & 1) used |= 1 << j; b++; }
    return used;
}
// slot s of a field at site p: real k at (s * 18 + k) * volume + cb (a warp of
// neighbouring sites reads each real coalesced)
__device__ __forceinline__ mat field_load(const real* __restrict__ f, const geom& g, int s, int p) {
    const unsigned long long volume = 2ull * (unsigned long long)g.half, cb = (unsigned long long)cb_index(g, p);
    const real* q = f + 18ull * (unsigned long long)s * volume + cb;
    mat m;
    for (int k = 0; k < 9; k++) { m.re[k] = q[(2 * k) * volume]; m.im[k] = q[(2 * k + 1) * volume]; }
    return m;
}
__device__ __forceinline__ void field_store(real* __restrict__ f, int volume, int s, int cb, const mat& m) {
    const unsigned long long v = (unsigned long long)volume;
    real* q = f + 18ull * (unsigned long long)s * v + (unsigned long long)cb;
    for (int k = 0; k < 9; k++) { q[(2 * k) * v] = m.re[k]; q[(2 * k + 1) * v] = m.im[k]; }
}
"#;

/// What the kernel writes per link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Epilogue {
    /// The smeared link F_μ(x) (`<name>_links(out, u, c…, L…)`).
    Links,
    /// The gauge force c_F · TA[U_μ(x) Σ_μ(x)†] of the staple sum Σ the tree computes
    /// (`<kernel>(out, u, c…, cf, L…)`, kernel named by the caller).
    Force,
    /// The real number Re tr[U_μ(x) Σ_μ(x)†] of each link, written at the thread's index
    /// μ·V + cb (`<kernel>(out, u, c…, L…)`, kernel named by the caller): summed over the
    /// links, the action's loops ([`crate::gauge::generate::TermTraces`]).
    Trace,
}

/// The entry name of a spec's smearing kernel.
pub fn links_kernel(name: &str) -> String {
    format!("{name}_links")
}

/// The interface of the kernel `kernel` of a tree with `terms` coefficients: `out`, `u`,
/// `c0..`, (`cf` for the force), `L0..L3`, one thread per link (4V).
pub fn interface(kernel: &str, terms: usize, real: Elem, epilogue: Epilogue) -> KernelInterface {
    let p = |name: &str, kind: ParamKind| ParamDecl::new(name, kind);
    let mut params = vec![
        p("out", ParamKind::write(real)),
        p("u", ParamKind::read(real)),
    ];
    params.extend((0..terms).map(|k| p(&format!("c{k}"), ParamKind::real(real))));
    if epilogue == Epilogue::Force {
        params.push(p("cf", ParamKind::real(real)));
    }
    params.extend((0..4).map(|k| p(&format!("L{k}"), ParamKind::I32)));
    KernelInterface {
        name: kernel.to_string(),
        params,
        geometry: Geometry::linear(),
    }
}

/// The interface of [`layout_kernel_name`]: `out`, `in`, `L0..L3`, one thread per link.
pub fn layout_interface(name: &str, real: Elem) -> KernelInterface {
    let p = |name: &str, kind: ParamKind| ParamDecl::new(name, kind);
    let mut params = vec![
        p("out", ParamKind::write(real)),
        p("in", ParamKind::read(real)),
    ];
    params.extend((0..4).map(|k| p(&format!("L{k}"), ParamKind::I32)));
    KernelInterface {
        name: layout_kernel_name(name),
        params,
        geometry: Geometry::linear(),
    }
}

/// Errors unless every extent of `dims` fits the packed coordinates (≤ [`MAX_EXTENT`])
/// and the kernels' 32-bit real indices (4 · 18 · V < 2³¹).
pub fn check_extents(kernel: &str, dims: [usize; 4]) -> Result<(), DslError> {
    let err = |reason: String| DslError::UnsupportedVariant {
        kernel: kernel.to_string(),
        knob: "lattice",
        reason,
    };
    if let Some(l) = dims.iter().find(|&&l| l == 0 || l > MAX_EXTENT) {
        return Err(err(format!(
            "expected extents 1..={MAX_EXTENT}, found {l} in {dims:?}"
        )));
    }
    let volume: usize = dims.iter().product();
    if 4 * 18 * volume > i32::MAX as usize {
        return Err(err(format!(
            "expected at most {} sites (32-bit indices), found {volume} in {dims:?}",
            i32::MAX as usize / 72
        )));
    }
    Ok(())
}

/// [`emit_with`]'s source as the program `program` with its kernel's interface.
pub fn program<T: Real>(
    tree: &PathTree,
    knobs: &PathKnobs,
    program: &str,
) -> Result<KernelProgram, DslError> {
    let source = emit_with::<T>(tree, knobs)?;
    let real = real_elem::<T>(&tree.spec.name)?;
    let terms = tree.spec.terms.len();
    let mut kernels = Vec::new();
    let mut links = interface(&links_kernel(&tree.spec.name), terms, real, Epilogue::Links);
    if knobs.plan == PlanKind::Staged {
        for node in Staging::new(tree).passes() {
            kernels.push(with_box(pass_interface(
                &pass_kernel_name(&tree.spec.name, node),
                terms,
                real,
            )));
        }
        links
            .params
            .insert(2, ParamDecl::new("f", ParamKind::read(real)));
        for (k, name) in ["mu0", "nmu"].into_iter().enumerate() {
            links
                .params
                .insert(3 + terms + k, ParamDecl::new(name, ParamKind::I32));
        }
        links = with_box(links);
    }
    kernels.push(links);
    kernels.push(layout_interface(&tree.spec.name, real));
    if knobs.input == Recon::R12 {
        kernels.push(KernelInterface {
            name: encode_kernel_name(&tree.spec.name),
            ..layout_interface(&tree.spec.name, real)
        });
    }
    Ok(KernelProgram {
        name: program.to_string(),
        source,
        options: Vec::new(),
        kernels,
    })
}

/// `interface` with the box parameters of the staged smearing kernels appended
/// ([`BOX_PARAMS`]: `O0..O3`, `B0..B3`, after `L3`).
fn with_box(mut interface: KernelInterface) -> KernelInterface {
    for prefix in ["O", "B"] {
        interface
            .params
            .extend((0..4).map(|k| ParamDecl::new(format!("{prefix}{k}"), ParamKind::I32)));
    }
    interface
}

/// The interface of a staged plan's pass kernel: `f` (the fields of one μ, written),
/// `u`, `c0..`, `mu`, `L0..L3`, one thread per slot of direction `mu` and site.
pub fn pass_interface(kernel: &str, terms: usize, real: Elem) -> KernelInterface {
    let p = |name: &str, kind: ParamKind| ParamDecl::new(name, kind);
    let mut params = vec![
        p("f", ParamKind::write(real)),
        p("u", ParamKind::read(real)),
    ];
    params.extend((0..terms).map(|k| p(&format!("c{k}"), ParamKind::real(real))));
    params.push(p("mu", ParamKind::I32));
    params.extend((0..4).map(|k| p(&format!("L{k}"), ParamKind::I32)));
    KernelInterface {
        name: kernel.to_string(),
        params,
        geometry: Geometry::linear(),
    }
}

/// The interface element of `T`, or an error naming `kernel`.
pub fn real_elem<T: Real>(kernel: &str) -> Result<Elem, DslError> {
    Elem::real(T::BYTES).ok_or_else(|| DslError::UnsupportedVariant {
        kernel: kernel.to_string(),
        knob: "precision",
        reason: format!("expected a 4- or 8-byte real, found {} bytes", T::BYTES),
    })
}

/// The CUDA C++ source of a tree for real type `T`, links uncompressed, the default plan
/// ([`PlanKind::Staged`]).
pub fn emit<T: Real>(tree: &PathTree) -> Result<String, DslError> {
    emit_with::<T>(tree, &PathKnobs::default())
}

/// The CUDA C++ source of a tree for real type `T` with the input links stored as
/// `knobs.input` says (the output stays 18 reals). Errors for knob values that do not
/// apply ([`PathKnobs::validate`]).
pub fn emit_with<T: Real>(tree: &PathTree, knobs: &PathKnobs) -> Result<String, DslError> {
    if knobs.plan == PlanKind::Staged {
        return emit_staged::<T>(&Staging::new(tree), knobs);
    }
    let name = &tree.spec.name;
    let mut s = prelude::<T>(tree, knobs)?;
    let links = links_kernel(name);
    s.push_str(&entry_guard(&links, &kernel(tree, &links, Epilogue::Links)));
    push_layout_kernels(&mut s, name, knobs);
    Ok(s)
}

/// The CUDA C++ source of a staged plan ([`super::staged`]): the node functions, one
/// `<name>_pass<node>(f, u, c…, mu, L…, O…, B…)` per materialised node (in
/// [`Staging::passes`] order, each one thread per slot of direction `mu` and site), the
/// root kernel `<name>_links(out, u, f, c…, mu0, nmu, L…, O…, B…)` (the links of
/// directions mu0 .. mu0 + nmu − 1: one μ after that μ's passes, or all four when there
/// are none) and the layout kernel. The passes and the root compute the sites of the
/// box with corner `O0..O3` and extents `B0..B3` ([`BOX_PARAMS`]): the whole lattice on
/// one GPU, a rank's own sites in the standard decomposed smearing.
pub fn emit_staged<T: Real>(staging: &Staging, knobs: &PathKnobs) -> Result<String, DslError> {
    let tree = &staging.tree;
    let mut s = prelude_staged::<T>(tree, knobs, Some(staging))?;
    let name = &tree.spec.name;
    for node in staging.passes() {
        s.push_str(&entry_guard(
            &pass_kernel_name(name, node),
            &pass_kernel(tree, staging, node),
        ));
    }
    let links = links_kernel(name);
    s.push_str(&entry_guard(
        &links,
        &root_kernel(tree, &links, Epilogue::Links, true),
    ));
    push_layout_kernels(&mut s, name, knobs);
    Ok(s)
}

/// Appends the layout kernel and (recon 12) the encoding kernel, each in its entry guard.
fn push_layout_kernels(s: &mut String, name: &str, knobs: &PathKnobs) {
    s.push_str(&entry_guard(
        &layout_kernel_name(name),
        &layout_kernel(name),
    ));
    s.push_str(&entry_guard(
        &encode_kernel_name(name),
        &encode_kernel(name, knobs),
    ));
}

/// The entry name of a spec's layout kernel.
pub fn layout_kernel_name(name: &str) -> String {
    format!("{name}_to_device_layout")
}

/// `<name>_to_device_layout(out, in, L0..L3)`: links in the host layout (`LINK_REALS`
/// reals at `(4·cb + d)·LINK_REALS`) rewritten in the device layout of [`device_layout`],
/// one thread per link (for links made on the device, HISQ's W).
fn layout_kernel(name: &str) -> String {
    format!(
        r#"extern "C" __global__ void {}(real* __restrict__ out, const real* __restrict__ in, int L0, int L1, int L2, int L3) {{
    const int volume = L0 * L1 * L2 * L3;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 4 * volume) return;
    const int d = i / volume, cb = i - d * volume;
    for (int k = 0; k < LINK_REALS; k++) out[(d * LINK_REALS + k) * volume + cb] = in[(4 * cb + d) * LINK_REALS + k];
}}
"#,
        layout_kernel_name(name)
    )
}

/// The entry name of a recon-12 program's encoding kernel.
pub fn encode_kernel_name(name: &str) -> String {
    format!("{name}_encode_device_layout")
}

/// With recon 12 + phase input, `<name>_encode_device_layout(out, in, L0..L3)`: unitary
/// links in the host layout, 18 reals each (links made on the device, HISQ's W), encoded
/// as the kernels read them — rows 0 and 1, then λ = det L / |det L| (det = Σ_j L_0j C_0j
/// by cofactors, in `real`) — in the device layout, one thread per link; the records of
/// [`super::knobs::encode_link`] up to the rounding of λ. Empty for recon 18.
fn encode_kernel(name: &str, knobs: &PathKnobs) -> String {
    if knobs.input != Recon::R12 {
        return String::new();
    }
    format!(
        r#"extern "C" __global__ void {}(real* __restrict__ out, const real* __restrict__ in, int L0, int L1, int L2, int L3) {{
    const int volume = L0 * L1 * L2 * L3;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 4 * volume) return;
    const int d = i / volume, cb = i - d * volume;
    const mat m = load(in + 18 * (4 * cb + d));
    real dre = 0, dim = 0, cre, cim;
    for (int j = 0; j < 3; j++) {{
        cofactor(m, 0, j, &cre, &cim);
        dre += m.re[j] * cre - m.im[j] * cim;
        dim += m.re[j] * cim + m.im[j] * cre;
    }}
    const real n = sqrt(dre * dre + dim * dim);
    real r[LINK_REALS];
    for (int k = 0; k < 6; k++) {{ r[2 * k] = m.re[k]; r[2 * k + 1] = m.im[k]; }}
    r[12] = dre / n;
    r[13] = dim / n;
    for (int k = 0; k < LINK_REALS; k++) out[(d * LINK_REALS + k) * volume + cb] = r[k];
}}
"#,
        encode_kernel_name(name)
    )
}

/// Links in the host layout (`reals` per link, link `4·cb + d`, [`crate::field::GaugeField`]'s
/// order) rewritten in the kernels' device layout: real k of link (cb, d) at
/// `(d·reals + k)·V + cb`, so that a warp of neighbouring sites reads each real of its
/// links in one coalesced access. Errors unless `host` holds 4V links of `reals` reals.
pub fn device_layout<T: Copy>(host: &[T], reals: usize, volume: usize) -> Result<Vec<T>, String> {
    if reals == 0 || host.len() != 4 * volume * reals {
        return Err(format!(
            "expected 4 · {volume} links of {reals} reals ({} reals), found {}",
            4 * volume * reals,
            host.len()
        ));
    }
    let mut out = Vec::with_capacity(host.len());
    for d in 0..4 {
        for k in 0..reals {
            out.extend((0..volume).map(|cb| host[(4 * cb + d) * reals + k]));
        }
    }
    Ok(out)
}

/// The inverse of [`device_layout`]: links in the device layout (real k of link (cb, d) at
/// `(d·reals + k)·V + cb`) rewritten in the host layout (link `4·cb + d`). Errors unless
/// `device` holds 4V links of `reals` reals.
pub fn host_layout<T: Copy>(device: &[T], reals: usize, volume: usize) -> Result<Vec<T>, String> {
    if reals == 0 || device.len() != 4 * volume * reals {
        return Err(format!(
            "expected 4 · {volume} links of {reals} reals ({} reals), found {}",
            4 * volume * reals,
            device.len()
        ));
    }
    let mut out = Vec::with_capacity(device.len());
    for cb in 0..volume {
        for d in 0..4 {
            out.extend((0..reals).map(|k| device[(d * reals + k) * volume + cb]));
        }
    }
    Ok(out)
}

/// The type definitions, the library and the node functions of a tree.
pub(crate) fn prelude<T: Real>(tree: &PathTree, knobs: &PathKnobs) -> Result<String, DslError> {
    prelude_staged::<T>(tree, knobs, None)
}

/// [`prelude`] with the node functions of `staging` (field loads, part functions) and
/// the field helpers ([`STAGED`]) when given.
fn prelude_staged<T: Real>(
    tree: &PathTree,
    knobs: &PathKnobs,
    staging: Option<&Staging>,
) -> Result<String, DslError> {
    knobs.validate(&tree.spec.name)?;
    let real = match T::BYTES {
        4 => "float",
        8 => "double",
        other => {
            return Err(DslError::UnsupportedVariant {
                kernel: tree.spec.name.clone(),
                knob: "precision",
                reason: format!("expected a 4- or 8-byte real, found {other} bytes"),
            })
        }
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// link_paths! `{}`: {} terms, displacement {}, {} matrix products per link, one thread per link",
        tree.spec.name,
        tree.spec.terms.len(),
        tree.displacement,
        tree.products_per_link()
    );
    if knobs.input == Recon::R12 {
        s.push_str("// input links: recon 12 + phase, 14 reals per link\n");
    }
    let _ = writeln!(s, "typedef {real} real;");
    s.push_str(library::MATRIX);
    s.push_str(library::LATTICE);
    s.push_str(match knobs.input {
        Recon::R12 => library::LINK12,
        _ => library::LINK18,
    });
    let _ = writeln!(s, "constexpr int LINK_REALS = {};", knobs.input_reals());
    s.push_str(SITES);
    let _ = writeln!(s, "struct coeffs {{ real c[{}]; }};", tree.spec.terms.len());
    if let Some(st) = staging {
        let _ = writeln!(
            s,
            "// staged: {} launches, {} matrix products per site, {} field slots of 18 reals per site",
            st.launches(),
            st.products_per_site(),
            st.slots
        );
        s.push_str(STAGED);
    }
    Ok(s + &node_functions(tree, staging))
}

/// The library part of a link-path program for real type `T`: the real type, the matrix,
/// lattice and link-codec library (`knobs.input`), the site helpers, the coefficient
/// struct of `terms` terms and, with `fields`, the staged field helpers. `header` is the
/// first comment line.
pub(crate) fn library_prelude<T: Real>(
    kernel: &str,
    header: &str,
    terms: usize,
    knobs: &PathKnobs,
    fields: bool,
) -> Result<String, DslError> {
    knobs.validate(kernel)?;
    let real = match T::BYTES {
        4 => "float",
        8 => "double",
        other => {
            return Err(DslError::UnsupportedVariant {
                kernel: kernel.to_string(),
                knob: "precision",
                reason: format!("expected a 4- or 8-byte real, found {other} bytes"),
            })
        }
    };
    let mut s = format!("// {header}\n");
    if knobs.input == Recon::R12 {
        s.push_str("// input links: recon 12 + phase, 14 reals per link\n");
    }
    let _ = writeln!(s, "typedef {real} real;");
    s.push_str(library::MATRIX);
    s.push_str(library::LATTICE);
    s.push_str(match knobs.input {
        Recon::R12 => library::LINK12,
        _ => library::LINK18,
    });
    let _ = writeln!(s, "constexpr int LINK_REALS = {};", knobs.input_reals());
    s.push_str(SITES);
    let _ = writeln!(s, "struct coeffs {{ real c[{terms}]; }};");
    if fields {
        s.push_str(STAGED);
    }
    Ok(s)
}

/// The node functions of a tree (children first), with a staging's field loads and part
/// functions when given.
fn node_functions(tree: &PathTree, staging: Option<&Staging>) -> String {
    let mut s = String::new();
    let mut emitter = NodeEmitter {
        tree,
        staging,
        out: Vec::new(),
        preorder: 0,
    };
    emitter.node(&tree.root, 0);
    // A child's id is above its parent's: define the children first.
    for n in emitter.out.iter().rev() {
        s.push_str(n);
    }
    s
}

/// The kernel `kernel` of a tree (after [`prelude`]).
pub(crate) fn kernel(tree: &PathTree, kernel: &str, epilogue: Epilogue) -> String {
    root_kernel(tree, kernel, epilogue, false)
}

/// The kernel evaluating the tree's root per link; `staged`: it reads the materialised
/// nodes from the fields `f` (after [`prelude_staged`] with a staging).
fn root_kernel(tree: &PathTree, kernel: &str, epilogue: Epilogue, staged: bool) -> String {
    // The staged root runs the links of directions mu0 .. mu0 + nmu − 1.
    let (fparam, farg, mu_param, links, mu) = if staged {
        (
            "const real* __restrict__ f, ",
            "f, ",
            ", int mu0, int nmu",
            "nmu * sites",
            "int mu, b;\n    lane_site(i, nmu, sites, mu, b);\n    mu += mu0;",
        )
    } else {
        (
            "",
            "",
            "",
            "4 * volume",
            if epilogue == Epilogue::Links {
                // The one-kernel tree smearings sit at the register limit in f64 (fat7
                // on sm_80 spills with the warp-by-warp map): lane-major.
                "const int mu = i / volume, cb = i - mu * volume;"
            } else {
                "int mu, cb;\n    lane_site(i, 4, volume, mu, cb);"
            },
        )
    };
    let terms = tree.spec.terms.len();
    let coeff_params: Vec<String> = (0..terms).map(|k| format!("real c{k}")).collect();
    let coeff_list: Vec<String> = (0..terms).map(|k| format!("c{k}")).collect();
    let force_param = match epilogue {
        Epilogue::Force => ", real cf",
        Epilogue::Links | Epilogue::Trace => "",
    };
    let write = match epilogue {
        Epilogue::Links => "    store(out + 18 * (4 * cb + mu), v);\n".to_string(),
        Epilogue::Force => "    store(out + 18 * (4 * cb + mu), scaled_ta(mul(link_at(u, g, cb, mu), adjoint(v)), cf));\n".to_string(),
        Epilogue::Trace => "    const mat w = link_at(u, g, cb, mu);\n    real t = 0;\n    for (int k = 0; k < 9; k++) t += w.re[k] * v.re[k] + w.im[k] * v.im[k];\n    out[mu * volume + cb] = t;\n".to_string(),
    };
    format!(
        r#"extern "C" __global__ void {kernel}(real* __restrict__ out, const real* __restrict__ u, {fparam}{}{force_param}{mu_param}, int L0, int L1, int L2, int L3{box_params}) {{
    const int volume = L0 * L1 * L2 * L3;
{sites}    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= {links}) return;
    {mu}
{site}    const coeffs c = {{{{{}}}}};
    const mat v = {}_node0({farg}u, g, c, pack(x), mu, 1 << mu);
{write}}}
"#,
        coeff_params.join(", "),
        coeff_list.join(", "),
        tree.spec.name,
        box_params = if staged { BOX_PARAMS } else { "" },
        sites = if staged { BOX_SITES } else { "" },
        site = if staged { BOX_SITE } else { LATTICE_SITE },
    )
}

/// The extra parameters of the staged kernels: the box of sites they compute, its
/// lowest corner `O0..O3` and extents `B0..B3` (the whole lattice: 0 and `L0..L3`).
const BOX_PARAMS: &str = ", int O0, int O1, int O2, int O3, int B0, int B1, int B2, int B3";

/// The box's site count, what a staged kernel's threads range over with its lanes.
const BOX_SITES: &str = "    const int sites = B0 * B1 * B2 * B3;\n";

/// Thread's site in a staged kernel: box index `b` in the box's checkerboard order
/// (B0 even), shifted by the box's corner; `cb` its index on the lattice. For the
/// whole lattice the order is the lattice's own.
const BOX_SITE: &str = "    const geom g = make_geom(L0, L1, L2, L3);
    const lattice box = {{B0, B1, B2, B3}};
    int x[4];
    coords_of_cb(box, b, x);
    x[0] += O0; x[1] += O1; x[2] += O2; x[3] += O3;
    const int cb = cb_index(g, pack(x));
";

/// Thread's site in a kernel over the whole lattice: checkerboard index `cb`.
const LATTICE_SITE: &str = "    const lattice lat = {{L0, L1, L2, L3}};
    const geom g = make_geom(L0, L1, L2, L3);
    int x[4];
    coords_of_cb(lat, cb, x);
";

/// `<name>_pass<id>(f, u, c0.., mu, L0..L3)`: one thread per slot of direction `mu` and
/// site computes the closed part of materialised node `id` (its `_part` function) into
/// its field slots of the scratch of one μ.
fn pass_kernel(tree: &PathTree, staging: &Staging, node: usize) -> String {
    let st = &staging.nodes[node];
    let terms = tree.spec.terms.len();
    let coeff_params: Vec<String> = (0..terms).map(|k| format!("real c{k}")).collect();
    let coeff_list: Vec<String> = (0..terms).map(|k| format!("c{k}")).collect();
    // Names bound above the node: its closed part names none of them.
    let unused: String = (0..st.bound).map(|_| ", 0, 1").collect();
    let name = &tree.spec.name;
    format!(
        r#"extern "C" __global__ void {}(real* __restrict__ f, const real* __restrict__ u, {}, int mu, int L0, int L1, int L2, int L3{BOX_PARAMS}) {{
    const int volume = L0 * L1 * L2 * L3;
{BOX_SITES}    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= {slots} * sites) return;
    int s, b;
    lane_site(i, {slots}, sites, s, b);
{BOX_SITE}    const coeffs c = {{{{{}}}}};
    const int used = slot_used(s, {bound}, mu);
    const mat v = {}(f, u, g, c, pack(x), mu, used{unused});
    field_store(f, volume, {base} + s, cb, v);
}}
"#,
        pass_kernel_name(name, node),
        coeff_params.join(", "),
        coeff_list.join(", "),
        part_function(name, node),
        slots = st.slots_per_mu(),
        bound = st.bound,
        base = st.field.unwrap_or(0),
    )
}

/// The device function of the closed part of the staged plan's node `node` (preorder
/// index).
fn part_function(name: &str, node: usize) -> String {
    format!("{name}_part{node}")
}

/// The entry name of the pass of the staged plan's node `node` (preorder index).
pub fn pass_kernel_name(name: &str, node: usize) -> String {
    format!("{name}_pass{node}")
}

/// The C expression pair (direction, orientation) of a step: `mu`, a bound name's `dK`,
/// `oK`, sign applied.
fn step_expr(s: &Step) -> (String, String) {
    let (d, o) = match s.dir {
        Dir::Mu => ("mu".to_string(), "1".to_string()),
        Dir::Free(k) => (format!("d{k}"), format!("o{k}")),
    };
    (d, if s.forward { o } else { format!("-{o}") })
}

/// Emits the node functions of a tree, children first in the output order: one function
/// `<name>_node<id>` per node (its whole value V, or with a staging the field load of a
/// materialised node plus its open part R) and `<name>_part<id>` per materialised node
/// (its closed part F, what its pass stores). Without a staging the functions take no
/// field pointer and the source is the one-kernel tree's.
struct NodeEmitter<'a> {
    tree: &'a PathTree,
    staging: Option<&'a Staging>,
    /// Function texts; a node's id is its index here (first visit order).
    out: Vec<String>,
    /// The preorder index of the next node visited (the staging's node order).
    preorder: usize,
}

impl NodeEmitter<'_> {
    /// `, const real* __restrict__ f` (and the argument `, f`) when staged.
    fn field_param(&self) -> (&'static str, &'static str) {
        match self.staging {
            Some(_) => (", const real* __restrict__ f", ", f"),
            None => ("", ""),
        }
    }

    /// Emits node `n` and its children; returns the node's id. `bound` names are
    /// parameters `dK, oK`.
    fn node(&mut self, n: &TreeNode, bound: usize) -> usize {
        let pre = self.preorder;
        let stage = self.staging.map(|s| s.nodes[pre].clone());
        self.preorder += 1;
        let id = self.out.len();
        self.out.push(String::new());
        // A materialised node's part function comes right after it, before its children.
        let field = stage.as_ref().and_then(|s| s.field);
        if field.is_some() {
            self.out.push(String::new());
        }
        let closed_core = |k: usize| stage.as_ref().is_some_and(|s| s.closed_cores[k]);
        let closed_child = |k: usize| stage.as_ref().is_some_and(|s| s.closed_children[k]);
        let name = self.tree.spec.name.clone();
        let (fparam, farg) = self.field_param();
        let bound_params: String = (0..bound)
            .map(|k| format!(", int d{k}, int o{k}"))
            .collect();
        let mut body = String::new();
        let mut part = String::new();
        body.push_str(&match field {
            Some(slot) => format!(
                "    // the closed part from the field of {}\n    mat v = field_load(f, g, {slot} + field_slot(mu, used, {bound}), p);\n",
                pass_kernel_name(&name, pre)
            ),
            None => "    mat v = zero_mat();\n".to_string(),
        });
        part.push_str("    mat v = zero_mat();\n");
        for (k, core) in n.cores.iter().enumerate() {
            let text = core_text(self.tree, core);
            if field.is_some() && closed_core(k) {
                part.push_str(&text);
            } else {
                body.push_str(&text);
            }
        }
        let n_mu = self.tree.displacement;
        for (k, (w, child)) in n.children.iter().enumerate() {
            let (header, footer, child_bound, child_used, d, o) = match *w {
                Wrap::New(k) => (
                    format!("    #pragma unroll 1\n    for (int r{k} = 0; r{k} < 4 - __popc(used); r{k}++) {{\n    const int d{k} = nth_free(used, r{k});\n    #pragma unroll 1\n    for (int o{k} = 1; o{k} >= -1; o{k} -= 2) {{\n"),
                    "    }}\n".to_string(),
                    bound + 1,
                    format!("used | (1 << d{k})"),
                    format!("d{k}"),
                    format!("o{k}"),
                ),
                Wrap::Tied { name: k, same } => (
                    "    {\n".to_string(),
                    "    }\n".to_string(),
                    bound,
                    "used".to_string(),
                    format!("d{k}"),
                    if same { format!("o{k}") } else { format!("-o{k}") },
                ),
            };
            let child_id = self.node(child, child_bound);
            let child_args: String = (0..child_bound).map(|k| format!(", d{k}, o{k}")).collect();
            let text = format!(
                "{header}        // wrap {w:?}: W(x) V{child_id}(x + s) W(x + {n_mu} mu)^dagger\n        mat q = {name}_node{child_id}({}u, g, c, move(g, p, {d}, {o}), mu, {child_used}{child_args});\n        q = mul(wlink(u, g, p, {d}, {o}), q);\n        int e = p;\n        for (int k = 0; k < {n_mu}; k++) e = move(g, e, mu, 1);\n        q = mul(q, adjoint(wlink(u, g, e, {d}, {o})));\n        v = add(v, q);\n{footer}",
                farg.strip_prefix(", ").map_or(String::new(), |a| format!("{a}, ")),
            );
            if field.is_some() && closed_child(k) {
                part.push_str(&text);
            } else {
                body.push_str(&text);
            }
        }
        body.push_str("    return v;\n");
        part.push_str("    return v;\n");
        let signature = |function: String| {
            let fp = fparam
                .strip_prefix(", ")
                .map_or(String::new(), |p| format!("{p}, "));
            format!("__device__ __forceinline__ mat {function}({fp}const real* __restrict__ u, const geom& g, const coeffs& c, int p, int mu, int used{bound_params})")
        };
        self.out[id] = format!("{} {{\n{body}}}\n", signature(format!("{name}_node{id}")));
        if field.is_some() {
            // Named by the preorder index, as its pass kernel.
            self.out[id + 1] = format!("{} {{\n{part}}}\n", signature(part_function(&name, pre)));
        }
        id
    }
}

/// The text of one core inside a node function: its path multiplied out for every choice
/// of the core's own names, added with its coefficient.
fn core_text(tree: &PathTree, core: &Core) -> String {
    let mut body = String::new();
    let own = new_names(&core.steps, core.bound);
    let _ = writeln!(
        body,
        "    {{ // term `{}`: c{} [{}]",
        tree.spec.terms[core.term].name,
        core.term,
        core.steps
            .iter()
            .map(|s| {
                let (d, o) = step_expr(s);
                format!("({d}, {o})")
            })
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut used = "used".to_string();
    let mut indent = "        ".to_string();
    for k in core.bound..core.bound + own {
        let _ = writeln!(
            body,
            "{indent}#pragma unroll 1\n{indent}for (int r{k} = 0; r{k} < 4 - __popc({used}); r{k}++) {{\n{indent}const int d{k} = nth_free({used}, r{k});\n{indent}#pragma unroll 1\n{indent}for (int o{k} = 1; o{k} >= -1; o{k} -= 2) {{"
        );
        used = format!("({used} | (1 << d{k}))");
        indent.push_str("    ");
    }
    let _ = writeln!(body, "{indent}int y = p;");
    for (j, s) in core.steps.iter().enumerate() {
        let (d, o) = step_expr(s);
        let w = format!("wlink(u, g, y, {d}, {o})");
        if j == 0 {
            let _ = writeln!(body, "{indent}mat q = {w};");
        } else {
            let _ = writeln!(body, "{indent}q = mul(q, {w});");
        }
        if j + 1 < core.steps.len() {
            let _ = writeln!(body, "{indent}y = move(g, y, {d}, {o});");
        }
    }
    let _ = writeln!(body, "{indent}v = axpy(c.c[{}], q, v);", core.term);
    for _ in 0..own {
        indent.truncate(indent.len() - 4);
        let _ = writeln!(body, "{indent}}}}}");
    }
    body.push_str("    }\n");
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real k of link (cb, d) moves from (4·cb + d)·R + k to (d·R + k)·V + cb.
    #[test]
    fn device_layout_is_component_major() {
        let (volume, reals) = (3, 2);
        let host: Vec<usize> = (0..4 * volume * reals).collect();
        let dev = device_layout(&host, reals, volume).unwrap();
        for cb in 0..volume {
            for d in 0..4 {
                for k in 0..reals {
                    assert_eq!(
                        dev[(d * reals + k) * volume + cb],
                        host[(4 * cb + d) * reals + k]
                    );
                }
            }
        }
        assert_eq!(host_layout(&dev, reals, volume).unwrap(), host);
        let e = device_layout(&host[1..], reals, volume).unwrap_err();
        assert!(e.contains("found 23"), "{e}");
    }

    #[test]
    fn extents_beyond_the_packed_coordinates_are_refused() {
        assert!(check_extents("k", [256, 2, 4, 8]).is_ok());
        let e = check_extents("k", [4, 258, 4, 4]).unwrap_err().to_string();
        assert!(e.contains("258") && e.contains("1..=256"), "{e}");
        let e = check_extents("k", [256, 256, 256, 2])
            .unwrap_err()
            .to_string();
        assert!(e.contains("33554432"), "{e}");
    }
}
