//! A chain on host fields: the CPU reference of the fused kernels, run from the same
//! [`Chain`] the kernels are planned from. The pieces are applied one after the other in
//! the chain's order (right to left) on whole 5D fields, each s-local piece as the
//! dense product of its matrices ([`apply_chiral`]), the hop by the caller's function
//! (the hop's generated `apply_cpu`); with a tensor-core `m5inv` mode, M5⁻¹ on the
//! result as the tensor cores compute it ([`super::mma::apply_chiral_mma`]). As on the device, the inputs are read as the
//! variant stores them, the intermediate values stay in the compute type T, and the
//! output is rounded through the spinor format.

use super::{Chain, ChiralMatrices, FusedVariant, SOp, SPiece};
use crate::dsl::cpu::Xpay;
use crate::dsl::storage::round_spinor_field;
use crate::dsl::variant::Variant;
use crate::dsl::DslError;
use crate::field::{ColourSpinorField, SpinorLayout};
use crate::Real;
use num_complex::Complex;
use rayon::prelude::*;
use std::borrow::Cow;

/// Complex components per 4D site of a Wilson field; the first half (spins 0, 1) has
/// γ5 = +1.
const SITE: usize = 12;
const HALF: usize = 6;

/// The hop of a chain: out = H ψ for a variant (the spec's dagger, no xpay, spinors in
/// the compute type).
pub type HopFn<'a, T> = dyn FnMut(&Variant, &mut ColourSpinorField<T>, &ColourSpinorField<T>) -> Result<(), DslError>
    + 'a;

/// That `layout` is a 5D Wilson field of `ls` slices (what the s-direction matrices act
/// on); else an error naming `kernel`, the expected and the found shape.
pub(crate) fn check_chiral_field(
    kernel: &str,
    ls: usize,
    layout: &SpinorLayout,
) -> Result<(), DslError> {
    if layout.ls() != ls || layout.site_len() != SITE {
        return Err(DslError::FieldMismatch {
            kernel: kernel.into(),
            field: "psi".into(),
            expected: format!("a 5D Wilson field (12 components per site) of Ls = {ls}"),
            found: format!(
                "Ls = {} with {} components per site",
                layout.ls(),
                layout.site_len()
            ),
        });
    }
    Ok(())
}

/// (O ψ)(x, s) = Σ_s' [A₊(s, s') P₊ + A₋(s, s') P₋] ψ(x, s'), on 5D Wilson fields of
/// `m.ls` slices (any site subset), the matrices rounded to T; rayon over the output
/// slices. `kernel` names the caller in errors.
pub fn apply_chiral<T: Real>(
    kernel: &str,
    m: &ChiralMatrices,
    psi: &ColourSpinorField<T>,
) -> Result<ColourSpinorField<T>, DslError> {
    let layout = *psi.layout();
    check_chiral_field(kernel, m.ls, &layout)?;
    let ls = m.ls;
    let narrow = |z: &Complex<f64>| Complex::new(T::from_f64(z.re), T::from_f64(z.im));
    let plus: Vec<Complex<T>> = m.plus.iter().map(narrow).collect();
    let minus: Vec<Complex<T>> = m.minus.iter().map(narrow).collect();
    let slice_len = layout.sites_per_slice() * SITE;
    let input = psi.data();
    let mut out = ColourSpinorField::zeros(layout);
    out.data_mut()
        .par_chunks_mut(slice_len)
        .enumerate()
        .for_each(|(s, out_s)| {
            let zero = Complex::new(T::zero(), T::zero());
            for t in 0..ls {
                let (ap, am) = (plus[s * ls + t], minus[s * ls + t]);
                // The sparse pieces' zeros (M5, M_φ: three entries per row) are skipped.
                if ap == zero && am == zero {
                    continue;
                }
                let psi_t = &input[t * slice_len..(t + 1) * slice_len];
                for (o, p) in out_s.chunks_exact_mut(SITE).zip(psi_t.chunks_exact(SITE)) {
                    for c in 0..HALF {
                        o[c] += ap * p[c];
                        o[HALF + c] += am * p[HALF + c];
                    }
                }
            }
        });
    Ok(out)
}

/// out = chain ψ, or a · (X x) + b · chain ψ with xpay (X the chain's xpay piece, or
/// 1): the pieces right of the hop on ψ, the hop (`hop`, present exactly when the chain
/// has one), the pieces left of it; `matrices` gives each s-local piece's matrices for
/// the variant's Ls. Fields are checked (Ls, shapes; the hop checks its own).
#[allow(clippy::too_many_arguments)]
pub fn apply<T: Real>(
    chain: &Chain,
    v: &FusedVariant,
    matrices: &dyn Fn(SPiece) -> ChiralMatrices,
    hop: Option<&mut HopFn<'_, T>>,
    out: &mut ColourSpinorField<T>,
    psi: &ColourSpinorField<T>,
    xpay: Option<Xpay<'_, T>>,
) -> Result<(), DslError> {
    chain.check(v)?;
    let kernel = chain.name.as_str();
    let mismatch = |field: &str, expected: String, found: String| DslError::FieldMismatch {
        kernel: kernel.into(),
        field: field.into(),
        expected,
        found,
    };
    if xpay.is_some() != v.variant.xpay {
        return Err(mismatch(
            "xpay",
            format!(
                "xpay operands exactly when the xpay knob is on ({})",
                v.variant.xpay
            ),
            if xpay.is_some() { "operands" } else { "none" }.to_string(),
        ));
    }
    let piece = |p: SPiece| -> Result<ChiralMatrices, DslError> {
        let m = matrices(p);
        if m.ls != v.ls || m.plus.len() != v.ls * v.ls || m.minus.len() != v.ls * v.ls {
            return Err(mismatch(
                &p.param_name(),
                format!("Ls × Ls matrices with Ls = {}", v.ls),
                format!(
                    "Ls = {} with {} and {} entries",
                    m.ls,
                    m.plus.len(),
                    m.minus.len()
                ),
            ));
        }
        Ok(m)
    };
    let stored = |name: &str, f: &ColourSpinorField<T>| -> Result<ColourSpinorField<T>, DslError> {
        let format = v.variant.spinor;
        let mut copy = f.clone();
        if !format.is_native() {
            round_spinor_field(format.codec().fermion(), &mut copy).map_err(|e| {
                DslError::Storage {
                    kernel: kernel.into(),
                    field: name.into(),
                    format: format.name().into(),
                    detail: e.to_string(),
                }
            })?;
        }
        Ok(copy)
    };
    for (name, f) in [("out", out.layout()), ("psi", psi.layout())] {
        if f.ls() != v.ls {
            return Err(mismatch(
                name,
                format!("Ls = {}", v.ls),
                format!("Ls = {}", f.ls()),
            ));
        }
    }
    let mut src = stored("psi", psi)?;
    for p in chain.source_pieces() {
        src = apply_chiral(kernel, &piece(p)?, &src)?;
    }
    let mut result = match (chain.hop_position(), hop) {
        (Some(_), Some(hop)) => {
            let hop_variant = Variant {
                dagger: chain.hop_dagger(),
                xpay: false,
                spinor: v.variant.spinor.compute(),
                ..v.variant
            };
            let mut t = ColourSpinorField::zeros(*out.layout());
            hop(&hop_variant, &mut t, &src)?;
            t
        }
        (None, None) => {
            if src.layout() != out.layout() {
                return Err(mismatch(
                    "out",
                    format!("psi's layout {:?}", src.layout()),
                    format!("{:?}", out.layout()),
                ));
            }
            src
        }
        (Some(_), None) => {
            return Err(DslError::InvalidSpec {
                kernel: kernel.into(),
                reason: "the chain has a hop but no hop function was given".into(),
            })
        }
        (None, Some(_)) => {
            return Err(DslError::InvalidSpec {
                kernel: kernel.into(),
                reason: "a hop function was given but the chain has no hop".into(),
            })
        }
    };
    for p in chain.result_pieces() {
        result = match v.m5inv.operand() {
            // The tensor-core M5⁻¹, its rounding emulated.
            Some(op) if p.op == SOp::M5Inv => {
                super::mma::apply_chiral_mma(kernel, op, &piece(p)?, &result)?
            }
            _ => apply_chiral(kernel, &piece(p)?, &result)?,
        };
    }
    if let Some(x) = xpay {
        if x.x.layout() != out.layout() {
            return Err(mismatch(
                "xpay_x",
                format!("the output's layout {:?}", out.layout()),
                format!("{:?}", x.x.layout()),
            ));
        }
        let xs = stored("xpay_x", x.x)?;
        let xs = match chain.xpay {
            Some(p) => Cow::Owned(apply_chiral(kernel, &piece(p)?, &xs)?),
            None => Cow::Borrowed(&xs),
        };
        result
            .data_mut()
            .par_iter_mut()
            .zip(xs.data().par_iter())
            .for_each(|(r, &xv)| *r = xv * x.a + *r * x.b);
    }
    if out.layout() != result.layout() {
        return Err(mismatch(
            "out",
            format!("{:?}", result.layout()),
            format!("{:?}", out.layout()),
        ));
    }
    *out = stored("out", &result)?;
    Ok(())
}
