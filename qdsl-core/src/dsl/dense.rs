//! The dense-link path shared by both emitters: which variants it supports, and the
//! typed helpers the generated CPU code of a dense spec calls.
//!
//! A spec is dense when its links are `Gauge<N>` fields with N = N_s · N_c acting on
//! the whole spin-colour vector of a `Spinor<NS, NC>` site
//! ([`super::lower::Lowered::dense`],
//! [`crate::field::DenseLinkField`]), e.g. a multigrid coarse operator
//!
//! out(x) = Σ_k c_k · L_k(x) · φ(x + n_k μ̂_k),   L_k = Y_μ(x) or Y_μ(x − n μ̂)† or 1,
//!
//! or, for a site-local term (n_k = 0), L_k = X(x), a `SiteMatrix<N>` field
//! ([`crate::field::DenseKind::SiteMatrix`]),
//!
//! with (Y φ)_r = Σ_c Y_{rc} φ_c over the N components r, c = σ · N_c + a.

pub use super::cpu::Geometry;
use super::cpu::Xpay;
use super::variant::{Recon, Variant};
use super::DslError;
use crate::field::{ColourSpinorField, DenseKind, DenseLinkField};
use crate::lattice::{Coords, Lattice};
use crate::Real;
use num_complex::Complex;
use rayon::prelude::*;

/// Checks that `variant` is one the dense path generates: f64 or f32 storage of the
/// spinor and link fields (narrow formats are refused: they would need a per-link norm
/// over N² entries) and recon 18 (dense links are not SU(3): nothing to reconstruct).
/// `n` is the link dimension N, for the message.
pub fn check_dense_variant(kernel: &str, n: usize, variant: &Variant) -> Result<(), DslError> {
    let unsupported = |knob: &'static str, reason: String| DslError::UnsupportedVariant {
        kernel: kernel.into(),
        knob,
        reason,
    };
    for (knob, format) in [("spinor", variant.spinor), ("gauge", variant.gauge)] {
        if !format.is_native() {
            return Err(unsupported(
                knob,
                format!(
                    "{} storage: dense {n} × {n} link specs are generated for f64 and f32 only",
                    format.name()
                ),
            ));
        }
    }
    if variant.recon != Recon::R18 {
        return Err(unsupported(
            "recon",
            format!("dense {n} × {n} links are stored whole (recon 18)"),
        ));
    }
    Ok(())
}

/// Checks a dense input of `kind` (links of a `Gauge<N>` field, or the matrices of a
/// `SiteMatrix<N>` field): the output's lattice, N × N matrices, the kind.
pub fn check_links<T: Real>(
    kernel: &str,
    name: &str,
    y: &DenseLinkField<T>,
    lattice: &Lattice,
    n: usize,
    kind: DenseKind,
) -> Result<(), DslError> {
    let what = |kind: DenseKind| match kind {
        DenseKind::Links => "dense links",
        DenseKind::SiteMatrix => "site matrices",
    };
    if y.lattice() != lattice || y.n() != n || y.kind() != kind {
        return Err(DslError::FieldMismatch {
            kernel: kernel.into(),
            field: name.into(),
            expected: format!("{n} × {n} {} on {lattice}", what(kind)),
            found: format!("{0} × {0} {1} on {2}", y.n(), what(y.kind()), y.lattice()),
        });
    }
    Ok(())
}

/// acc += coeff · v for N-vectors (a term without links).
#[inline]
pub fn add_scaled<T: Real>(acc: &mut [Complex<T>], v: &[Complex<T>], coeff: T) {
    for (a, z) in acc.iter_mut().zip(v) {
        *a += z * coeff;
    }
}

/// Runs `body(s, x, acc)` for every slice s and output site x in parallel (rayon),
/// `acc` the site's N components starting at zero, then stores out_s(x) = acc, or
/// a · x_s(x) + b · acc with xpay. The caller checked the layouts
/// ([`super::cpu::Context::new`]).
pub fn run<T: Real>(
    out: &mut ColourSpinorField<T>,
    xpay: Option<Xpay<'_, T>>,
    body: impl Fn(usize, Coords, &mut [Complex<T>]) + Sync,
) {
    let layout = *out.layout();
    let (n, sites) = (layout.site_len(), layout.sites_per_slice());
    out.data_mut()
        .par_chunks_mut(n)
        .enumerate()
        .for_each(|(k, site)| {
            let (s, i) = (k / sites, k % sites);
            let mut acc = vec![Complex::new(T::zero(), T::zero()); n];
            body(s, layout.coords_of_site(i), &mut acc);
            for (r, z) in site.iter_mut().enumerate() {
                *z = match &xpay {
                    Some(xp) => xp.x.site(s, i)[r] * xp.a + acc[r] * xp.b,
                    None => acc[r],
                };
            }
        });
}
