//! Face kernels of a distributed colour-spinor field on a rank's extended lattice
//! ([`crate::lattice::ExtendedLattice`]): **pack** copies the sites of one parity in a
//! boundary slab (every fifth-dimension slice) into a contiguous face buffer in the wire
//! format, times a sign (−1 where the face crosses an antiperiodic global boundary:
//! [`crate::field::distributed::face_negated`]); **unpack** copies a received buffer into
//! the halo slab of the field.
//!
//! The slab is a box ([`crate::lattice::SiteBox`], `box_lo`, `box_n`) walked by
//! `box_site`; thread k of slice s5 reads or writes entry `s5 · n_out + k` of the buffer,
//! a field of `n_out · Ls` sites in the wire format's [`SoaLayout`] (stride
//! `stride_face`). A rank's boundary slab and its neighbour's halo slab have the same
//! extents and corner parity, so entry k is the same global site on both sides.
//!
//! | field → wire | how a site moves |
//! |---|---|
//! | the same fixed-point format | its raw words and norm, each stored integer negated for sign −1 (exact) |
//! | any other pair | decoded to the compute type, times the sign, encoded (exact for f64/f32, f16/bf16; fixed-point wire from a float field recomputes the per-site norm: fixed16 faces of an f32 field halve the bytes, within fixed16's bound) |
//!
//! A face of a Wilson-type hop can carry the spin-projected half spinor instead
//! ([`FaceKernel::projection`], [`crate::dsl::halo_spin`]): 12 reals per site on the wire,
//! half the bytes, still bit-identical in f64 and f32.
//!
//! The field holds one parity (the source of an even-odd hop): site x of slice s5 is
//! element `s5 · half + lex(x)/2`.

use super::library::{BOX_SITE, COMPLEX};
use super::term::phase_add;
use super::{print_signature, storage, Src};
use crate::dsl::codec::{chunks, fixed_q, words, ArgOwner, ExtraArg};
use crate::dsl::halo_spin::FaceProjection;
use crate::dsl::interface::{CompiledKernel, Geometry, KernelParam};
use crate::dsl::kernel_ir::{Reads, Scaling};
use crate::dsl::layout::SoaLayout;
use crate::dsl::spin::ProjectorPlan;
use crate::dsl::variant::{LongRecon, Recon, StorageFormat};
use crate::dsl::DslError;

/// Which way a face kernel copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaceDirection {
    /// Boundary slab of the field → face buffer (times the sign).
    Pack,
    /// Face buffer → halo slab of the field.
    Unpack,
}

/// One face kernel: `reals` reals per site (24 for a Wilson spinor, 6 for a staggered
/// one), the field's storage format, the buffer's (wire) format and the direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FaceKernel {
    /// Reals per site and slice.
    pub reals: usize,
    /// The field's storage format.
    pub field: StorageFormat,
    /// The face buffer's format.
    pub wire: StorageFormat,
    /// Pack or unpack.
    pub direction: FaceDirection,
    /// The spin projection the face carries (4-spin sites of 24 reals only): pack
    /// sends the half spinor h = (1 + s γ_μ) ψ (12 reals), unpack stores χ = ½ R h,
    /// what the hop kernel's own projection turns back into h exactly
    /// ([`crate::dsl::halo_spin`]). `None`: whole sites.
    pub projection: Option<FaceProjection>,
}

impl FaceKernel {
    /// The kernel's `extern "C"` name, e.g. `qdsl_face_pack_r24_f32_fixed16`.
    pub fn name(&self) -> String {
        let dir = match self.direction {
            FaceDirection::Pack => "pack",
            FaceDirection::Unpack => "unpack",
        };
        let projected = self
            .projection
            .map_or(String::new(), |p| format!("_{}", p.tag()));
        format!(
            "qdsl_face_{dir}_r{}_{}_{}{projected}",
            self.reals,
            self.field.name(),
            self.wire.name()
        )
    }

    /// Reals per site in the face buffer: 12 for a projected face, else the field's.
    pub fn wire_reals(&self) -> usize {
        if self.projection.is_some() {
            HALF_SPINOR_REALS
        } else {
            self.reals
        }
    }

    /// Whether a site moves as raw words and a signed norm (the same fixed-point format).
    fn raw(&self) -> bool {
        self.field == self.wire && fixed_q(self.field).is_some() && self.projection.is_none()
    }

    /// Checks the pair of formats: a real count the layouts accept, one compute type
    /// for both (f64 only with f64), at most one narrow format unless they are equal.
    fn check(&self) -> Result<(), DslError> {
        let unsupported = |reason: String| DslError::UnsupportedVariant {
            kernel: self.name(),
            knob: "face formats",
            reason,
        };
        if self.reals == 0 || !self.reals.is_multiple_of(2) {
            return Err(unsupported(format!(
                "a site of {} reals (expected a positive even count)",
                self.reals
            )));
        }
        if let Some(p) = self.projection {
            if self.reals != SPINOR_REALS || p.mu >= 4 || p.sign.abs() != 1 {
                return Err(unsupported(format!(
                    "the projection (1 {} γ_{}) of sites of {} reals (expected 4-spin sites of {SPINOR_REALS} reals, μ < 4)",
                    if p.sign > 0 { '+' } else { '-' },
                    p.mu,
                    self.reals
                )));
            }
        }
        if self.field.compute() != self.wire.compute() {
            return Err(unsupported(format!(
                "field {} and wire {} compute in different precisions",
                self.field.name(),
                self.wire.name()
            )));
        }
        if self.field != self.wire && !self.field.is_native() && !self.wire.is_native() {
            return Err(unsupported(format!(
                "two different narrow formats ({} and {})",
                self.field.name(),
                self.wire.name()
            )));
        }
        Ok(())
    }

    /// The kernel's source, parameters and launch geometry (one thread per buffer entry
    /// along x, Ls slices along grid.y). Parameters, in order: the source's pointer and
    /// norms (pack: the field `f_field`; unpack: the buffer `f_face`), the destination's
    /// (written), for pack the sign, then `L0..L3`, `n_out` (the slab's threads),
    /// `box_lo0..3`, `box_n0..3`, `parity` (the field's), `stride_field`, `stride_face`.
    pub fn compile(&self) -> Result<CompiledKernel, DslError> {
        self.check()?;
        let field = SoaLayout::new(self.reals, self.field);
        let wire = SoaLayout::new(self.wire_reals(), self.wire);
        let real = match self.field.compute() {
            StorageFormat::F64 => "double",
            _ => "float",
        };
        let name = self.name();
        let mut s = Src(String::new(), 0);
        s.line(0, &format!("// {name}"));
        s.line(
            0,
            "// Generated by qdsl: a face kernel of a distributed field (qdsl_core::dsl::emit::cuda::face). Do not edit.",
        );
        s.line(0, &format!("typedef {real} real;"));
        s.0.push_str(COMPLEX);
        storage::storage_helpers(&mut s);
        let (narrow, other) = if self.wire.is_native() {
            (self.field, self.wire)
        } else {
            (self.wire, self.field)
        };
        storage::narrow_helpers(&mut s, narrow, other, Recon::R18, LongRecon::R18);
        s.0.push_str(BOX_SITE);
        let ((src_base, src_layout), (dst_base, dst_layout)) = match self.direction {
            FaceDirection::Pack => (("f_field", &field), ("f_face", &wire)),
            FaceDirection::Unpack => (("f_face", &wire), ("f_field", &field)),
        };
        let mut params = site_params(src_base, src_layout, false);
        params.extend(site_params(dst_base, dst_layout, true));
        if self.direction == FaceDirection::Pack {
            params.push((KernelParam::FaceSign, "const real sign".into()));
        }
        params.push((
            KernelParam::Extent(0),
            "const int L0, const int L1, const int L2, const int L3".into(),
        ));
        params.push((KernelParam::NOut, "const int n_out".into()));
        params.push((
            KernelParam::BoxLo(0),
            "const int box_lo0, const int box_lo1, const int box_lo2, const int box_lo3".into(),
        ));
        params.push((
            KernelParam::BoxExtent(0),
            "const int box_n0, const int box_n1, const int box_n2, const int box_n3".into(),
        ));
        params.push((KernelParam::Parity, "const int parity".into()));
        let (field_stride, face_stride) = match self.direction {
            FaceDirection::Pack => (
                KernelParam::InputStride {
                    name: "field".into(),
                    index: 0,
                },
                KernelParam::OutputStride("face".into()),
            ),
            FaceDirection::Unpack => (
                KernelParam::OutputStride("field".into()),
                KernelParam::InputStride {
                    name: "face".into(),
                    index: 0,
                },
            ),
        };
        params.push((field_stride, "const int stride_field".into()));
        params.push((face_stride, "const int stride_face".into()));
        s.line(0, "");
        let params = print_signature(&mut s, &name, params);
        s.line(0, "{");
        s.line(
            1,
            "const int thread = blockIdx.x * blockDim.x + threadIdx.x;",
        );
        s.line(1, "if (thread >= n_out) return;");
        s.line(
            1,
            "const int s5 = blockIdx.y; // fifth-dimension slice: grid.y = Ls (1 for 4D fields)",
        );
        s.line(1, "const int half = (L0 * L1 * L2 * L3) >> 1;");
        s.line(1, "int x[4];");
        s.line(1, "{");
        s.line(2, "const int lo[4] = {box_lo0, box_lo1, box_lo2, box_lo3};");
        s.line(2, "const int n[4] = {box_n0, box_n1, box_n2, box_n3};");
        s.line(
            2,
            "if (!box_site(thread, parity, lo, n, x)) return; // idle",
        );
        s.line(1, "}");
        s.line(
            1,
            "const int site = s5 * half + ((x[0] + L0 * (x[1] + L1 * (x[2] + L2 * x[3]))) >> 1); // in the field",
        );
        s.line(
            1,
            "const int slot = s5 * n_out + thread; // in the face buffer",
        );
        let (src_at, dst_at) = match self.direction {
            FaceDirection::Pack => ("site", "slot"),
            FaceDirection::Unpack => ("slot", "site"),
        };
        let sign = self.direction == FaceDirection::Pack;
        if let Some(p) = self.projection {
            let plan = p.plan();
            match self.direction {
                FaceDirection::Pack => {
                    storage::load_site(
                        &mut s,
                        1,
                        (src_base, src_layout),
                        src_at,
                        "v",
                        Reads::Once,
                        Scaling::Applied,
                    );
                    project(&mut s, &plan);
                    storage::store_site(&mut s, 1, dst_base, dst_layout, dst_at, "h");
                }
                FaceDirection::Unpack => {
                    storage::load_site(
                        &mut s,
                        1,
                        (src_base, src_layout),
                        src_at,
                        "h",
                        Reads::Once,
                        Scaling::Applied,
                    );
                    reconstruct_half(&mut s, &plan);
                    storage::store_site(&mut s, 1, dst_base, dst_layout, dst_at, "v");
                }
            }
        } else if self.raw() {
            raw_copy(&mut s, (src_base, dst_base), &field, (src_at, dst_at), sign);
        } else {
            storage::load_site(
                &mut s,
                1,
                (src_base, src_layout),
                src_at,
                "v",
                Reads::Once,
                Scaling::Applied,
            );
            if sign {
                s.line(1, "#pragma unroll");
                s.line(
                    1,
                    &format!(
                        "for (int k = 0; k < {}; k++) {{ v[k] *= sign; }}",
                        self.reals
                    ),
                );
            }
            storage::store_site(&mut s, 1, dst_base, dst_layout, dst_at, "v");
        }
        s.line(0, "}");
        Ok(CompiledKernel {
            name,
            source: s.0,
            params,
            geometry: Geometry::per_site(0),
        })
    }
}

/// Reals of a 4-spin, 3-colour site and of its half spinor.
const SPINOR_REALS: usize = 24;
const HALF_SPINOR_REALS: usize = 12;

/// `real h[12]` ← sign · (1 + s γ_μ) v as `plan` lowers it, row r = v_r + p_r v_{c(r)}
/// written with the hop kernels' own expression ([`phase_add`]), so both compute the
/// same bits ([`crate::dsl::halo_spin::project_site`] is the host reference).
fn project(s: &mut Src, plan: &ProjectorPlan) {
    s.line(
        1,
        &format!(
            "// the half spinor (1 {} gamma({})) psi",
            sign_char(plan.sign),
            plan.mu
        ),
    );
    s.line(1, "cplx sp[4][3];");
    s.line(1, "#pragma unroll");
    s.line(
        1,
        "for (int q = 0; q < 4; q++) { for (int a = 0; a < 3; a++) { sp[q][a] = cplx{v[6 * q + 2 * a], v[6 * q + 2 * a + 1]}; } }",
    );
    s.line(1, &format!("real h[{HALF_SPINOR_REALS}];"));
    for (r, &(c, ph)) in plan.project.iter().enumerate() {
        let sum = phase_add(&format!("sp[{r}][a]"), ph, None, &format!("sp[{c}][a]"));
        s.line(1, "#pragma unroll");
        s.line(
            1,
            &format!(
                "for (int a = 0; a < 3; a++) {{ const cplx t = {sum}; h[{} + 2 * a] = t.re * sign; h[{} + 2 * a + 1] = t.im * sign; }}",
                6 * r,
                6 * r
            ),
        );
    }
}

/// `real v[24]` ← ½ R h: rows 0, 1 are h/2, rows s = 2, 3 the phase p_s times row c(s)
/// of h, halved (exact: swaps, signs and a power of two;
/// [`crate::dsl::halo_spin::reconstruct_half_site`] is the host reference).
fn reconstruct_half(s: &mut Src, plan: &ProjectorPlan) {
    s.line(
        1,
        &format!(
            "// the stored site (1 {} gamma({})) psi / 2, reconstructed from the half spinor",
            sign_char(plan.sign),
            plan.mu
        ),
    );
    s.line(1, &format!("real v[{SPINOR_REALS}];"));
    s.line(1, "#pragma unroll");
    s.line(
        1,
        &format!("for (int k = 0; k < {HALF_SPINOR_REALS}; k++) {{ v[k] = h[k] * (real)0.5; }}"),
    );
    for (k2, &(r, ph)) in plan.reconstruct.iter().enumerate() {
        let (re, im) = match (ph.re, ph.im) {
            (1, 0) => ("h[j]", "h[j + 1]"),
            (-1, 0) => ("-h[j]", "-h[j + 1]"),
            (0, 1) => ("-h[j + 1]", "h[j]"),
            _ => ("h[j + 1]", "-h[j]"),
        };
        s.line(1, "#pragma unroll");
        s.line(
            1,
            &format!(
                "for (int a = 0; a < 3; a++) {{ const int j = {} + 2 * a; v[{} + 2 * a] = ({re}) * (real)0.5; v[{} + 2 * a + 1] = ({im}) * (real)0.5; }}",
                6 * r,
                6 * (2 + k2),
                6 * (2 + k2)
            ),
        );
    }
}

fn sign_char(sign: i32) -> char {
    if sign > 0 {
        '+'
    } else {
        '-'
    }
}

/// The pointer and codec arguments (norms) of a site field at `base` (`f_field`,
/// `f_face`), written when `output`.
fn site_params(base: &str, layout: &SoaLayout, output: bool) -> Vec<(KernelParam, String)> {
    let field = base.strip_prefix("f_").unwrap_or(base);
    let (role, owner) = if output {
        (KernelParam::Output(field.into()), ArgOwner::Output)
    } else {
        (
            KernelParam::Input {
                name: field.into(),
                index: 0,
            },
            ArgOwner::Input(0),
        )
    };
    let mut params = vec![(role, storage::pointer_param(base, layout, output))];
    for arg in layout.format.codec().site_args() {
        if *arg == ExtraArg::SiteNorm {
            params.push((arg.param(field, owner), arg.cuda_decl(field, owner)));
        }
    }
    params
}

/// A fixed-point site moved as its raw words and its norm; when packing with a negative
/// sign, each stored integer negated (exact: the encoder never stores −2^(b−1), so −q is
/// representable, and the norm stays non-negative as every reader expects).
fn raw_copy(
    s: &mut Src,
    (src, dst): (&str, &str),
    layout: &SoaLayout,
    (src_at, dst_at): (&str, &str),
    sign: bool,
) {
    let (bare_src, bare_dst) = (&src[2..], &dst[2..]);
    let (n, w) = (chunks(layout), words(layout));
    let bytes = layout.format.bytes();
    let int = if bytes == 1 { "signed char" } else { "short" };
    s.line(1, &format!("unsigned w[{w}];"));
    s.line(
        1,
        &format!("load_words<{n}, true>(w, {src}, {src_at}, stride_{bare_src});"),
    );
    if sign {
        s.line(1, "if (sign < (real)0) {");
        s.line(2, &format!("unsigned nw[{w}];"));
        s.line(2, "#pragma unroll");
        s.line(
            2,
            &format!("for (int k = 0; k < {w}; k++) {{ nw[k] = 0u; }}"),
        );
        s.line(2, "#pragma unroll");
        s.line(
            2,
            &format!(
                "for (int k = 0; k < {}; k++) {{ put_raw_real<{bytes}>(nw, k, (unsigned)(-(int)({int})raw_real<{bytes}>(w, k))); }}",
                layout.reals
            ),
        );
        s.line(2, "#pragma unroll");
        s.line(
            2,
            &format!("for (int k = 0; k < {w}; k++) {{ w[k] = nw[k]; }}"),
        );
        s.line(1, "}");
    }
    s.line(
        1,
        &format!("store_words<{n}>({dst}, w, {dst_at}, stride_{bare_dst});"),
    );
    s.line(
        1,
        &format!("norm_{bare_dst}[{dst_at}] = norm_{bare_src}[{src_at}];"),
    );
}
