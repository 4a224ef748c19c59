//! The CUDA C++ of quenched HMC's field updates, the GPU twins of [`Hmc`](super::Hmc)'s
//! steps (one program, `hmc_f64`, independent of the action; the force is the action's
//! tree kernel, [`crate::dsl::paths::force`]):
//!
//! | kernel | what it does |
//! |---|---|
//! | `hmc_momenta(p, seed, trajectory, L0..L3)` | P_μ(x) = i√2 H, H the Gaussian su(3) element of [`gaussian_su3_algebra`](crate::field::gaussian_su3_algebra) drawn from the stream [`StreamDomain::HmcMomenta`], index trajectory · 4V + 4 lex(x) + μ: the CPU's [`Hmc::momenta`](super::Hmc::momenta) |
//! | `hmc_kick(p, f, dt, n)` | P ← P + dt F over n reals |
//! | `hmc_drift(u, p, dt, L0..L3)` | U_μ(x) ← exp(dt P_μ(x)) U_μ(x) ([`ColourMatrix::exp`](crate::math::ColourMatrix::exp)'s closed form and series) |
//! | `hmc_norms(out, p, n)` | out_i = ‖P_i‖²_F of link i (K = ½ Σ_i out_i) |
//! | `hmc_block_sums(out, in, n)` | out_b = Σ of in over block b of [`SUM_BLOCK`] entries (shared-memory tree) |
//!
//! Layouts: links `u` in the device layout of
//! [`device_layout`](crate::dsl::paths::cuda::device_layout) (what the force kernel
//! reads), momenta and forces in the host layout (18 reals at 4·cb + μ: what the force
//! kernel writes). The momenta are the CPU's draws to rounding (the Box–Muller transform
//! uses the portable ln, sin and cos of [`super::cuda`]); the exponential calls CUDA's
//! `acos`, `sin`, `cos` where the CPU calls the platform's, so trajectories agree to
//! rounding.

use super::cuda::{lit, random_library};
use crate::dsl::emit::cuda::library;
use crate::dsl::interface::{Elem, Geometry, KernelInterface, KernelProgram, ParamDecl, ParamKind};
use crate::field::StreamDomain;
use std::f64::consts::SQRT_2;

/// Threads per block of `hmc_block_sums` (the kernel's shared array has this size).
pub const SUM_BLOCK: usize = 256;

/// The program's name.
pub const HMC_PROGRAM: &str = "hmc_f64";

/// Below this c₁ = tr Q²/2 the exponential sums the series (the CPU's `SERIES_BELOW_C1`).
const SERIES_BELOW_C1: f64 = 0.02;

/// Below this |w| ξ₀(w) = sin w / w is its series (the CPU's `XI0_SERIES_BELOW`).
const XI0_SERIES_BELOW: f64 = 0.05;

fn lattice_params(params: &mut Vec<ParamDecl>) {
    params.extend((0..4).map(|k| ParamDecl::new(format!("L{k}"), ParamKind::I32)));
}

/// The interfaces of the program's kernels.
pub fn hmc_interfaces() -> Vec<KernelInterface> {
    let p = |name: &str, kind: ParamKind| ParamDecl::new(name, kind);
    let real = Elem::F64;
    let kernel = |name: &str, params: Vec<ParamDecl>| KernelInterface {
        name: name.to_string(),
        params,
        geometry: Geometry::linear(),
    };
    let mut momenta = vec![
        p("p", ParamKind::write(real)),
        p("seed", ParamKind::I64),
        p("trajectory", ParamKind::I64),
    ];
    lattice_params(&mut momenta);
    let kick = vec![
        p("p", ParamKind::write(real)),
        p("f", ParamKind::read(real)),
        p("dt", ParamKind::F64),
        p("n", ParamKind::I32),
    ];
    let mut drift = vec![
        p("u", ParamKind::write(real)),
        p("p", ParamKind::read(real)),
        p("dt", ParamKind::F64),
    ];
    lattice_params(&mut drift);
    let norms = vec![
        p("out", ParamKind::write(real)),
        p("p", ParamKind::read(real)),
        p("n", ParamKind::I32),
    ];
    let sums = vec![
        p("out", ParamKind::write(real)),
        p("in", ParamKind::read(real)),
        p("n", ParamKind::I32),
    ];
    vec![
        kernel("hmc_momenta", momenta),
        kernel("hmc_kick", kick),
        kernel("hmc_drift", drift),
        kernel("hmc_norms", norms),
        kernel("hmc_block_sums", sums),
    ]
}

/// The HMC program ([`hmc_cuda`] and [`hmc_interfaces`]).
pub fn hmc_program() -> KernelProgram {
    KernelProgram {
        name: HMC_PROGRAM.to_string(),
        source: hmc_cuda(),
        options: Vec::new(),
        kernels: hmc_interfaces(),
    }
}

/// The CUDA C++ of the HMC kernels (f64).
pub fn hmc_cuda() -> String {
    let mut s = String::from("// quenched HMC field updates (qdsl_core::gauge::generate::Hmc), f64\ntypedef double real;\n");
    s.push_str(library::MATRIX);
    s.push_str(library::LATTICE);
    s.push_str(&random_library());
    s.push_str(&format!(
        r#"constexpr unsigned MOMENTA_DOMAIN = {domain}u;
// complex helpers on (re, im) pairs
struct cx {{ double re, im; }};
__device__ __forceinline__ cx cx_mul(cx a, cx b) {{ return {{a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}}; }}
__device__ __forceinline__ cx cx_add(cx a, cx b) {{ return {{a.re + b.re, a.im + b.im}}; }}
__device__ __forceinline__ cx cx_sub(cx a, cx b) {{ return {{a.re - b.re, a.im - b.im}}; }}
__device__ __forceinline__ cx cx_scale(cx a, double s) {{ return {{a.re * s, a.im * s}}; }}
__device__ __forceinline__ cx cx_div(cx a, double s) {{ return {{a.re / s, a.im / s}}; }}
__device__ __forceinline__ cx m_at(const mat& m, int i, int j) {{ return {{m.re[3 * i + j], m.im[3 * i + j]}}; }}
// (z1, z2): Box-Muller from u1 in (0, 1] then u2 in [0, 1) (RandomStream::gaussian_pair)
__device__ __forceinline__ void gaussian_pair(rstream& s, double& z1, double& z2) {{
    const double u1 = uniform_open_closed(s);
    const double u2 = uniform(s);
    const double r = sqrt(-2.0 * portable_ln(u1));
    double sn, cs;
    sin_cos_turns(u2, sn, cs);
    z1 = r * cs; z2 = r * sn;
}}
// P = i sqrt2 H, H = sum_a h_a lambda_a / 2 (field::gaussian_su3_algebra)
extern "C" __global__ void hmc_momenta(real* __restrict__ p, long long seed, long long trajectory, int L0, int L1, int L2, int L3) {{
    const int volume = L0 * L1 * L2 * L3;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 4 * volume) return;
    const int mu = i / volume, cb = i - mu * volume;
    const lattice lat = {{{{L0, L1, L2, L3}}}};
    int x[4];
    coords_of_cb(lat, cb, x);
    const unsigned long long lex = (unsigned long long)(x[0] + L0 * (x[1] + L1 * (x[2] + L2 * x[3])));
    const unsigned long long index = (unsigned long long)trajectory * (4ull * (unsigned long long)volume) + 4ull * lex + (unsigned long long)mu;
    rstream s = rstream_new((unsigned long long)seed, MOMENTA_DOMAIN, index);
    double h[9];
    h[0] = 0.0;
    for (int a = 1; a < 9; a += 2) gaussian_pair(s, h[a], h[a + 1]);
    const double r3 = sqrt(3.0);
    mat m;
    for (int k = 0; k < 9; k++) {{ m.re[k] = 0.0; m.im[k] = 0.0; }}
    m.re[0] = (h[3] + h[8] / r3) / 2.0;
    m.re[4] = (-h[3] + h[8] / r3) / 2.0;
    m.re[8] = (-2.0 * h[8] / r3) / 2.0;
    m.re[1] = h[1] / 2.0; m.im[1] = -h[2] / 2.0;
    m.re[2] = h[4] / 2.0; m.im[2] = -h[5] / 2.0;
    m.re[5] = h[6] / 2.0; m.im[5] = -h[7] / 2.0;
    m.re[3] = m.re[1]; m.im[3] = -m.im[1];
    m.re[6] = m.re[2]; m.im[6] = -m.im[2];
    m.re[7] = m.re[5]; m.im[7] = -m.im[5];
    const double s2 = {sqrt2};
    mat q;
    for (int k = 0; k < 9; k++) {{ q.re[k] = m.re[k] * 0.0 - m.im[k] * s2; q.im[k] = m.re[k] * s2 + m.im[k] * 0.0; }}
    store(p + 18 * (4 * cb + mu), q);
}}
// p += dt f over n reals
extern "C" __global__ void hmc_kick(real* __restrict__ p, const real* __restrict__ f, real dt, int n) {{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = p[i] + f[i] * dt;
}}
// e^X for X in su(3) (ColourMatrix::exp: Cayley-Hamilton, Morningstar-Peardon)
__device__ __forceinline__ mat su3_exp(const mat& xin) {{
    mat x;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {{
            x.re[3 * i + j] = (xin.re[3 * i + j] - xin.re[3 * j + i]) * 0.5;
            x.im[3 * i + j] = (xin.im[3 * i + j] + xin.im[3 * j + i]) * 0.5;
        }}
    const cx t = cx_div(cx_add(cx_add(m_at(x, 0, 0), m_at(x, 1, 1)), m_at(x, 2, 2)), 3.0);
    for (int i = 0; i < 3; i++) {{ x.re[4 * i] -= t.re; x.im[4 * i] -= t.im; }}
    mat q;
    for (int k = 0; k < 9; k++) {{ q.re[k] = x.im[k]; q.im[k] = -x.re[k]; }}
    double n2 = 0.0;
    for (int k = 0; k < 9; k++) n2 += q.re[k] * q.re[k] + q.im[k] * q.im[k];
    const double c1 = n2 * 0.5;
    // det q = q0 . (q1 x q2)
    cx det = {{0.0, 0.0}};
    for (int c = 0; c < 3; c++) {{
        const int a = (c + 1) % 3, b = (c + 2) % 3;
        const cx cross = cx_sub(cx_mul(m_at(q, 1, a), m_at(q, 2, b)), cx_mul(m_at(q, 1, b), m_at(q, 2, a)));
        det = cx_add(det, cx_mul(m_at(q, 0, c), cross));
    }}
    const double c0 = det.re;
    cx f[3];
    if (c1 < {series_below}) {{
        const double r = sqrt(c1 + c1);
        double a = 1.0, b = 0.0, c = 0.0;
        cx term = {{1.0, 0.0}};
        f[0] = term; f[1] = {{0.0, 0.0}}; f[2] = {{0.0, 0.0}};
        for (int n = 1; n < 64; n++) {{
            const double a1 = c * c0, b1 = a + c * c1, c1n = b;
            a = a1; b = b1; c = c1n;
            term = cx_div(cx_mul(term, cx{{0.0, 1.0}}), (double)n);
            f[0] = cx_add(f[0], cx_scale(term, a));
            f[1] = cx_add(f[1], cx_scale(term, b));
            f[2] = cx_add(f[2], cx_scale(term, c));
            const double size = (fabs(term.re) + fabs(term.im)) * (fabs(a) + fabs(b) * r + fabs(c) * r * r);
            if (size < {eps} * 1e-3) break;
        }}
    }} else {{
        const bool negative = c0 < 0.0;
        const double c0a = fabs(c0);
        const double c0_max = 2.0 * pow(c1 / 3.0, 1.5);
        const double theta = acos(fmin(c0a / c0_max, 1.0));
        const double u = sqrt(c1 / 3.0) * cos(theta / 3.0);
        const double w = sqrt(c1) * sin(theta / 3.0);
        const double u2 = u * u, w2 = w * w;
        const double xi0 = fabs(w) < {xi0_below} ? 1.0 - w2 / 6.0 * (1.0 - w2 / 20.0 * (1.0 - w2 / 42.0)) : sin(w) / w;
        const double cos_w = cos(w);
        const cx e2iu = {{cos(u + u), sin(u + u)}};
        const cx emiu = {{cos(u), -sin(u)}};
        const cx h0 = cx_add(cx_scale(e2iu, u2 - w2), cx_mul(emiu, cx{{8.0 * u2 * cos_w, 2.0 * u * (3.0 * u2 + w2) * xi0}}));
        const cx h1 = cx_sub(cx_scale(e2iu, 2.0 * u), cx_mul(emiu, cx{{2.0 * u * cos_w, -(3.0 * u2 - w2) * xi0}}));
        const cx h2 = cx_sub(e2iu, cx_mul(emiu, cx{{cos_w, 3.0 * u * xi0}}));
        const double den = 9.0 * u2 - w2;
        f[0] = cx_div(h0, den); f[1] = cx_div(h1, den); f[2] = cx_div(h2, den);
        if (negative) {{
            f[0].im = -f[0].im;
            f[1].re = -f[1].re;
            f[2].im = -f[2].im;
        }}
    }}
    const mat qq = mul(q, q);
    mat e;
    for (int k = 0; k < 9; k++) {{
        const cx v = cx_add(cx_mul(m_at(q, k / 3, k % 3), f[1]), cx_mul(m_at(qq, k / 3, k % 3), f[2]));
        e.re[k] = v.re; e.im[k] = v.im;
    }}
    for (int i = 0; i < 3; i++) {{ e.re[4 * i] += f[0].re; e.im[4 * i] += f[0].im; }}
    return e;
}}
// U_mu(x) <- exp(dt P_mu(x)) U_mu(x); u in the device layout, p in the host layout
extern "C" __global__ void hmc_drift(real* __restrict__ u, const real* __restrict__ p, real dt, int L0, int L1, int L2, int L3) {{
    const int volume = L0 * L1 * L2 * L3;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 4 * volume) return;
    const int mu = i / volume, cb = i - mu * volume;
    mat x = load(p + 18 * (4 * cb + mu));
    for (int k = 0; k < 9; k++) {{ x.re[k] *= dt; x.im[k] *= dt; }}
    real r[18];
    for (int k = 0; k < 18; k++) r[k] = u[(mu * 18 + k) * volume + cb];
    const mat v = mul(su3_exp(x), load(r));
    store(r, v);
    for (int k = 0; k < 18; k++) u[(mu * 18 + k) * volume + cb] = r[k];
}}
// out_i = |P_i|^2 (Frobenius), link i of the host layout
extern "C" __global__ void hmc_norms(real* __restrict__ out, const real* __restrict__ p, int n) {{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double s = 0.0;
    for (int k = 0; k < 18; k++) s += p[18 * i + k] * p[18 * i + k];
    out[i] = s;
}}
// out_b = sum of in[{block} b ...], a shared-memory tree (blockDim.x = {block})
extern "C" __global__ void hmc_block_sums(real* __restrict__ out, const real* __restrict__ in, int n) {{
    __shared__ double part[{block}];
    const int i = blockIdx.x * {block} + threadIdx.x;
    part[threadIdx.x] = i < n ? in[i] : 0.0;
    __syncthreads();
    for (int h = {block} / 2; h > 0; h /= 2) {{
        if ((int)threadIdx.x < h) part[threadIdx.x] += part[threadIdx.x + h];
        __syncthreads();
    }}
    if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}}
"#,
        domain = StreamDomain::HmcMomenta.tag(),
        sqrt2 = lit(SQRT_2),
        series_below = lit(SERIES_BELOW_C1),
        xi0_below = lit(XI0_SERIES_BELOW),
        eps = lit(f64::EPSILON),
        block = SUM_BLOCK,
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every declared interface is its source's signature; the constants are the CPU's.
    #[test]
    fn interfaces_match_the_source() {
        let p = hmc_program();
        assert_eq!(p.signature_mismatches(), Vec::<String>::new());
        assert_eq!(p.kernels.len(), 5);
        assert!(p.source.contains(&format!(
            "MOMENTA_DOMAIN = {}u",
            StreamDomain::HmcMomenta.tag()
        )));
        assert!(p.source.contains("__shared__ double part[256]"));
    }
}
