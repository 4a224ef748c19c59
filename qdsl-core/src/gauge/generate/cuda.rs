//! The CUDA C++ of the quenched heatbath and over-relaxation: one kernel per action and
//! colouring, `<action>_heatbath_<colouring>`, that updates the links of one direction μ
//! and one colour of the [`Colouring`] in place, one thread per site.
//!
//! The kernel is the GPU twin of [`Heatbath`](super::Heatbath)'s link update, emitted
//! from the same definitions:
//!
//! * the staple sum Σ_μ(x) is the force's staple tree ([`ForcePlan::tree`], the node
//!   functions of [`crate::dsl::paths::cuda`]), read from the links in the device layout;
//! * the random numbers are [`RandomStream`](crate::field::RandomStream)'s: Philox-4x32-10
//!   with the same key, counter words and word order, the same 53-bit uniforms, and
//!   qdsl's portable logarithm, sine and cosine (`portable_math`) written out with the
//!   constants of the Rust code, so the GPU draws the numbers the CPU draws for the same
//!   (seed, sweep, link);
//! * the SU(2) samplers, the subgroup projection and product and the reunitarisation are
//!   [`su2`](super::su2) and [`ColourMatrix::reunitarize`] operation for operation.
//!
//! The staple sum is accumulated in the tree's order rather than the CPU's path order,
//! so a GPU sweep equals the CPU sweep to rounding, not bit for bit (an accept/reject
//! decision could in principle flip on a last-bit difference; at probability ~1e-16 per
//! draw it does not happen in practice).
//!
//! Signature (one thread per checkerboard site, 0 ≤ cb < V; threads whose μ-link is not
//! of colour `colour` return at once):
//!
//! `<kernel>(real* u, c0..c{T−1}, real beta, long seed, long sweep, int mu, int colour,
//! int overrelax, int L0..L3)`
//!
//! `u` the links in the device layout of [`device_layout`](crate::dsl::paths::cuda::device_layout),
//! c_k the staple tree's term coefficients ([`crate::dsl::paths::PathTree::coefficients`]
//! at tadpole factor 1), `overrelax` ≠ 0 for an over-relaxation step (no random numbers).

use super::heatbath::MIN_PROJECTED_NORM;
use super::staples::Colouring;
use super::su2::{KENNEDY_PENDLETON_MIN_ALPHA, SUBGROUPS};
use crate::dsl::interface::{Elem, Geometry, KernelInterface, KernelProgram, ParamDecl, ParamKind};
use crate::dsl::paths::cuda::prelude;
use crate::dsl::paths::{ForcePlan, PathKnobs};
use crate::dsl::DslError;
use crate::field::portable_math::INV_FACTORIAL;
use crate::field::StreamDomain;
use std::f64::consts::{FRAC_PI_4, LN_2, SQRT_2};
use std::fmt::Write;

/// The entry name of the heatbath kernel of `action` with `colouring`.
pub fn heatbath_kernel(action: &str, colouring: Colouring) -> String {
    format!("{action}_heatbath_{}", colouring.tag())
}

/// The interface of [`heatbath_kernel`] for a staple tree of `terms` coefficients (f64).
pub fn heatbath_interface(kernel: &str, terms: usize) -> KernelInterface {
    let p = |name: &str, kind: ParamKind| ParamDecl::new(name, kind);
    let mut params = vec![p("u", ParamKind::write(Elem::F64))];
    params.extend((0..terms).map(|k| p(&format!("c{k}"), ParamKind::F64)));
    params.push(p("beta", ParamKind::F64));
    params.push(p("seed", ParamKind::I64));
    params.push(p("sweep", ParamKind::I64));
    for name in ["mu", "colour", "overrelax"] {
        params.push(p(name, ParamKind::I32));
    }
    params.extend((0..4).map(|k| p(&format!("L{k}"), ParamKind::I32)));
    KernelInterface {
        name: kernel.to_string(),
        params,
        geometry: Geometry::linear(),
    }
}

/// The heatbath program of `plan` with `colouring`, in f64: the source of
/// [`heatbath_cuda`] and the kernel's interface.
pub fn heatbath_program(plan: &ForcePlan, colouring: Colouring) -> Result<KernelProgram, DslError> {
    let kernel = heatbath_kernel(&plan.action.name, colouring);
    Ok(KernelProgram {
        name: kernel.clone(),
        source: heatbath_cuda(plan, colouring)?,
        options: Vec::new(),
        kernels: vec![heatbath_interface(&kernel, plan.tree.spec.terms.len())],
    })
}

/// A C++ double literal that reads back as exactly `x` (Rust's shortest round-trip form).
pub(super) fn lit(x: f64) -> String {
    format!("{x:?}")
}

/// Philox-4x32-10 and the stream of [`crate::field::RandomStream`]: key = the seed's two
/// words, counter = [block, domain, index mod 2³², index / 2³²], words read c₀ first.
pub(super) fn random_library() -> String {
    let mut s = String::from(
        r#"// Philox-4x32-10 streams (qdsl_core::field::RandomStream)
struct rstream { unsigned key[2]; unsigned ctr[4]; unsigned buf[4]; int next; };
__device__ __forceinline__ rstream rstream_new(unsigned long long seed, unsigned domain, unsigned long long index) {
    rstream s;
    s.key[0] = (unsigned)seed; s.key[1] = (unsigned)(seed >> 32);
    s.ctr[0] = 0; s.ctr[1] = domain; s.ctr[2] = (unsigned)index; s.ctr[3] = (unsigned)(index >> 32);
    s.next = 4;
    return s;
}
__device__ __forceinline__ void philox_block(const unsigned key[2], const unsigned ctr[4], unsigned out[4]) {
    unsigned c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        if (round > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
        const unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;
        const unsigned n0 = (unsigned)(p1 >> 32) ^ c1 ^ k0, n1 = (unsigned)p1;
        const unsigned n2 = (unsigned)(p0 >> 32) ^ c3 ^ k1, n3 = (unsigned)p0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}
__device__ __forceinline__ unsigned next_u32(rstream& s) {
    if (s.next == 4) { philox_block(s.key, s.ctr, s.buf); s.ctr[0] += 1; s.next = 0; }
    return s.buf[s.next++];
}
__device__ __forceinline__ unsigned long long next_u64(rstream& s) {
    const unsigned long long hi = next_u32(s);
    return (hi << 32) | next_u32(s);
}
// k 2^-53 in [0, 1) and (k + 1) 2^-53 in (0, 1], k the upper 53 bits of next_u64
__device__ __forceinline__ double uniform(rstream& s) { return (double)(next_u64(s) >> 11) * (1.0 / 9007199254740992.0); }
__device__ __forceinline__ double uniform_open_closed(rstream& s) { return (double)((next_u64(s) >> 11) + 1) * (1.0 / 9007199254740992.0); }
"#,
    );
    let _ = write!(
        s,
        r#"// qdsl's portable ln (field::portable_math::ln): x = 2^e m, ln m = 2 atanh((m - 1)/(m + 1))
__device__ __forceinline__ double portable_ln(double x) {{
    long long e_bias = 0;
    if (x < {min_positive}) {{ x *= 4503599627370496.0; e_bias = -52; }}
    const unsigned long long bits = (unsigned long long)__double_as_longlong(x);
    long long e = (long long)((bits >> 52) & 0x7ff) - 1023 + e_bias;
    double m = __longlong_as_double((long long)((bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull));
    if (m >= {sqrt2}) {{ m *= 0.5; e += 1; }}
    const double d = m - 1.0;
    const double t = d / (2.0 + d);
    const double t2 = t * t;
    double series = 1.0 / 23.0;
    for (int k = 10; k >= 0; k--) series = series * t2 + 1.0 / (double)(2 * k + 1);
    const double ln_m = 2.0 * t * series;
    const double ln2_hi = __longlong_as_double(0x3fe62e42fee00000ll);
    const double ln2_lo = {ln2} - ln2_hi;
    const double ef = (double)e;
    return ef * ln2_hi + (ef * ln2_lo + ln_m);
}}
// -ln u, u in (0, 1]
__device__ __forceinline__ double exponential(rstream& s) {{ return -portable_ln(uniform_open_closed(s)); }}
// (sin 2 pi u, cos 2 pi u) for u in [0, 1) (field::portable_math::sin_cos_turns)
__device__ __forceinline__ void sin_cos_turns(double u, double& sin_out, double& cos_out) {{
    const double inv_factorial[20] = {{{factorials}}};
    const double v = 8.0 * u;
    const double octant = floor(v);
    const double r = v - octant;
    const unsigned o = (unsigned)octant & 7u;
    const double theta = ((o & 1u) == 0 ? r : 1.0 - r) * {pi4};
    const double t2 = theta * theta;
    double sn = 0.0, cs = 0.0;
    for (int k = 9; k >= 0; k--) {{
        const double sign = (k & 1) == 0 ? 1.0 : -1.0;
        sn = sn * t2 + sign * inv_factorial[2 * k + 1];
        cs = cs * t2 + sign * inv_factorial[2 * k];
    }}
    sn = theta * sn;
    switch (o) {{
    case 0: sin_out = sn; cos_out = cs; break;
    case 1: sin_out = cs; cos_out = sn; break;
    case 2: sin_out = cs; cos_out = -sn; break;
    case 3: sin_out = sn; cos_out = -cs; break;
    case 4: sin_out = -sn; cos_out = -cs; break;
    case 5: sin_out = -cs; cos_out = -sn; break;
    case 6: sin_out = -cs; cos_out = sn; break;
    default: sin_out = -sn; cos_out = cs; break;
    }}
}}
"#,
        min_positive = lit(f64::MIN_POSITIVE),
        sqrt2 = lit(SQRT_2),
        ln2 = lit(LN_2),
        pi4 = lit(FRAC_PI_4),
        factorials = INV_FACTORIAL.map(lit).join(", "),
    );
    s
}

/// The SU(2) subgroup update of [`super::su2`] and [`super::Heatbath`]'s link update.
fn su2_library(domain: u32) -> String {
    let subgroups: Vec<String> = SUBGROUPS
        .iter()
        .map(|(i, j)| format!("{{{i}, {j}}}"))
        .collect();
    format!(
        r#"// quaternions a0 + i a.sigma (su2::Quaternion)
__device__ __forceinline__ void quat_mul(const double a[4], const double b[4], double c[4]) {{
    c[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    c[1] = a[0] * b[1] + b[0] * a[1] - (a[2] * b[3] - a[3] * b[2]);
    c[2] = a[0] * b[2] + b[0] * a[2] - (a[3] * b[1] - a[1] * b[3]);
    c[3] = a[0] * b[3] + b[0] * a[3] - (a[1] * b[2] - a[2] * b[1]);
}}
// x0 with density sqrt(1 - x0^2) exp(alpha x0): Kennedy-Pendleton (alpha >= {kp}), else Creutz
__device__ __forceinline__ double sample_x0(double alpha, rstream& s) {{
    if (alpha >= {kp}) {{
        for (;;) {{
            const double y1 = exponential(s);
            const double y2 = exponential(s);
            double sn, cs;
            sin_cos_turns(uniform(s), sn, cs);
            const double delta = (y1 + cs * cs * y2) / alpha;
            const double v = uniform(s);
            if (v * v <= 1.0 - delta / 2.0) return 1.0 - delta;
        }}
    }}
    for (;;) {{
        const double u = uniform(s);
        double x0;
        if (alpha > 1e-300) {{
            const double span = -expm1(-2.0 * alpha);
            x0 = 1.0 + log1p(-(1.0 - u) * span) / alpha;
        }} else {{
            x0 = 2.0 * u - 1.0;
        }}
        const double v = uniform(s);
        if (v * v <= 1.0 - x0 * x0) return x0;
    }}
}}
// X in SU(2) with density exp(alpha Re tr X / 2) (su2::heatbath_su2)
__device__ __forceinline__ void heatbath_su2(double alpha, rstream& s, double x[4]) {{
    const double x0 = sample_x0(alpha, s);
    const double r = sqrt(fmax(1.0 - x0 * x0, 0.0));
    const double cos_theta = 2.0 * uniform(s) - 1.0;
    const double sin_theta = sqrt(fmax(1.0 - cos_theta * cos_theta, 0.0));
    double sin_phi, cos_phi;
    sin_cos_turns(uniform(s), sin_phi, cos_phi);
    x[0] = x0; x[1] = r * sin_theta * cos_phi; x[2] = r * sin_theta * sin_phi; x[3] = r * cos_theta;
}}
// U <- R U, R = M(q) in rows and columns (i, j)
__device__ __forceinline__ void left_multiply(const double q[4], int i, int j, mat& u) {{
    const double r00re = q[0], r00im = q[3], r01re = q[2], r01im = q[1];
    const double r10re = -q[2], r10im = q[1], r11re = q[0], r11im = -q[3];
    for (int c = 0; c < 3; c++) {{
        const double ire = u.re[3 * i + c], iim = u.im[3 * i + c], jre = u.re[3 * j + c], jim = u.im[3 * j + c];
        u.re[3 * i + c] = (r00re * ire - r00im * iim) + (r01re * jre - r01im * jim);
        u.im[3 * i + c] = (r00re * iim + r00im * ire) + (r01re * jim + r01im * jre);
        u.re[3 * j + c] = (r10re * ire - r10im * iim) + (r11re * jre - r11im * jim);
        u.im[3 * j + c] = (r10re * iim + r10im * ire) + (r11re * jim + r11im * jre);
    }}
}}
// Gram-Schmidt on rows 0 and 1, row 2 = conj(row 0 x row 1) (ColourMatrix::reunitarize)
__device__ __forceinline__ mat reunitarize(const mat& a) {{
    mat m;
    double n0 = 0.0;
    for (int c = 0; c < 3; c++) n0 += a.re[c] * a.re[c] + a.im[c] * a.im[c];
    const double s0 = 1.0 / sqrt(n0);
    for (int c = 0; c < 3; c++) {{ m.re[c] = a.re[c] * s0; m.im[c] = a.im[c] * s0; }}
    double dre = 0.0, dim = 0.0;
    for (int c = 0; c < 3; c++) {{
        dre += m.re[c] * a.re[3 + c] + m.im[c] * a.im[3 + c];
        dim += m.re[c] * a.im[3 + c] - m.im[c] * a.re[3 + c];
    }}
    double n1 = 0.0;
    for (int c = 0; c < 3; c++) {{
        m.re[3 + c] = a.re[3 + c] - (m.re[c] * dre - m.im[c] * dim);
        m.im[3 + c] = a.im[3 + c] - (m.re[c] * dim + m.im[c] * dre);
        n1 += m.re[3 + c] * m.re[3 + c] + m.im[3 + c] * m.im[3 + c];
    }}
    const double s1 = 1.0 / sqrt(n1);
    for (int c = 0; c < 3; c++) {{ m.re[3 + c] *= s1; m.im[3 + c] *= s1; }}
    for (int c = 0; c < 3; c++) {{
        const int p = (c + 1) % 3, q = (c + 2) % 3;
        m.re[6 + c] = (m.re[p] * m.re[3 + q] - m.im[p] * m.im[3 + q]) - (m.re[q] * m.re[3 + p] - m.im[q] * m.im[3 + p]);
        m.im[6 + c] = -((m.re[p] * m.im[3 + q] + m.im[p] * m.re[3 + q]) - (m.re[q] * m.im[3 + p] + m.im[q] * m.re[3 + p]));
    }}
    return m;
}}
// the three Cabibbo-Marinari subgroups: heatbath (overrelax == 0) or reflection, then reunitarisation
__device__ __forceinline__ mat update_link(mat u, const mat& a, double beta, int overrelax, rstream& s) {{
    const int sub[3][2] = {{{subgroups}}};
    for (int n = 0; n < 3; n++) {{
        const int i = sub[n][0], j = sub[n][1];
        const mat w = mul(u, a);
        double q[4] = {{(w.re[4 * i] + w.re[4 * j]) / 2.0, (w.im[3 * i + j] + w.im[3 * j + i]) / 2.0,
                        (w.re[3 * i + j] - w.re[3 * j + i]) / 2.0, (w.im[4 * i] - w.im[4 * j]) / 2.0}};
        const double k = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
        if (k < {min_norm}) continue;
        const double vdag[4] = {{q[0] * (1.0 / k), -(q[1] * (1.0 / k)), -(q[2] * (1.0 / k)), -(q[3] * (1.0 / k))}};
        double r[4];
        if (overrelax) {{
            quat_mul(vdag, vdag, r);
        }} else {{
            double x[4];
            heatbath_su2(2.0 * beta * k / 3.0, s, x);
            quat_mul(x, vdag, r);
        }}
        left_multiply(r, i, j, u);
    }}
    return reunitarize(u);
}}
// the heatbath streams (StreamDomain::Heatbath)
constexpr unsigned HEATBATH_DOMAIN = {domain}u;
"#,
        kp = lit(KENNEDY_PENDLETON_MIN_ALPHA),
        subgroups = subgroups.join(", "),
        min_norm = lit(MIN_PROJECTED_NORM),
    )
}

/// The CUDA C++ of the heatbath kernel of `plan` with `colouring` (f64).
pub fn heatbath_cuda(plan: &ForcePlan, colouring: Colouring) -> Result<String, DslError> {
    let tree = &plan.tree;
    let mut s = prelude::<f64>(tree, &PathKnobs::default())?;
    s.push_str(&random_library());
    s.push_str(&su2_library(StreamDomain::Heatbath.tag()));
    s.push_str(colouring.cuda());
    let terms = tree.spec.terms.len();
    let coeff_params: Vec<String> = (0..terms).map(|k| format!("real c{k}")).collect();
    let coeff_list: Vec<String> = (0..terms).map(|k| format!("c{k}")).collect();
    let _ = write!(
        s,
        r#"extern "C" __global__ void {kernel}(real* __restrict__ u, {coeffs}, real beta, long long seed, long long sweep, int mu, int colour, int overrelax, int L0, int L1, int L2, int L3) {{
    const int volume = L0 * L1 * L2 * L3;
    const int cb = blockIdx.x * blockDim.x + threadIdx.x;
    if (cb >= volume) return;
    const lattice lat = {{{{L0, L1, L2, L3}}}};
    int x[4];
    coords_of_cb(lat, cb, x);
    if (link_colour(x, mu) != colour) return;
    const geom g = make_geom(L0, L1, L2, L3);
    const coeffs c = {{{{{coeff_list}}}}};
    // the staple sum of U_mu(x); no link of this colour and direction occurs in it
    const mat sigma = {tree_name}_node0(u, g, c, pack(x), mu, 1 << mu);
    // the stream of link (x, mu) in this sweep: index sweep 4V + 4 lex(x) + mu
    const unsigned long long lex = (unsigned long long)(x[0] + L0 * (x[1] + L1 * (x[2] + L2 * x[3])));
    const unsigned long long index = (unsigned long long)sweep * (4ull * (unsigned long long)volume) + 4ull * lex + (unsigned long long)mu;
    rstream s = rstream_new((unsigned long long)seed, HEATBATH_DOMAIN, index);
    const mat v = update_link(link_at(u, g, cb, mu), adjoint(sigma), beta, overrelax, s);
    real r[18];
    store(r, v);
    for (int k = 0; k < 18; k++) u[(mu * 18 + k) * volume + cb] = r[k];
}}
"#,
        kernel = heatbath_kernel(&plan.action.name, colouring),
        coeffs = coeff_params.join(", "),
        coeff_list = coeff_list.join(", "),
        tree_name = tree.spec.name,
    );
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gauge::generate::test_actions::{symanzik, wilson};

    /// The declared interface is the source's signature, for both colourings; the
    /// constants are the Rust ones, written to round-trip.
    #[test]
    fn interface_matches_the_source() {
        for (action, colouring) in [
            (wilson(), Colouring::Parity),
            (symanzik(), Colouring::Mod2Mod4),
        ] {
            let plan = ForcePlan::new(&action).unwrap();
            let p = heatbath_program(&plan, colouring).unwrap();
            assert_eq!(p.signature_mismatches(), Vec::<String>::new());
            assert!(p.source.contains(&format!("HEATBATH_DOMAIN = {}u", 5)));
            assert!(p.source.contains("1.4142135623730951"));
            assert!(p.name.ends_with(colouring.tag()));
        }
        assert_eq!(lit(0.5), "0.5");
        assert_eq!(lit(1e-300), "1e-300");
        assert_eq!(lit(2.0), "2.0");
    }
}
