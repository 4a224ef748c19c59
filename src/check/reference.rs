//! The CPU reference of a catalog kernel: the generated `apply_cpu` of the kernel named,
//! with the fields passed in declaration order.

use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::{DslError, Variant};
use qdsl_core::field::{CloverField, ColourSpinorField, DenseLinkField, GaugeField};
use qdsl_core::Real;
use qdsl_kernels::{
    CloverApply, CoarseHop, CoarseOp, ImprovedStaggeredHop, NaiveStaggeredHop, TwistedMassTwist,
    WilsonClover, WilsonHop,
};

/// Errors of the CPU reference.
#[derive(Debug, thiserror::Error)]
pub enum ReferenceError {
    /// The catalog kernel has no binding here.
    #[error("no CPU reference binding for kernel {0:?} (kernels with one: {KNOWN})")]
    Unknown(String),
    /// The wrong number of gauge fields.
    #[error("{kernel} takes {expected} gauge fields, {found} given")]
    Links {
        /// Kernel.
        kernel: String,
        /// Gauge fields the kernel takes.
        expected: usize,
        /// Given.
        found: usize,
    },
    /// A clover kernel called without its clover field.
    #[error("{0} takes a clover field, none given")]
    NoClover(String),
    /// The kernel rejected the call.
    #[error(transparent)]
    Dsl(#[from] DslError),
}

/// The kernels with a CPU reference binding in [`apply_cpu`] (the dense-link kernels
/// `coarse_hop` and `coarse_op` have their own, [`apply_cpu_dense`]).
pub const KNOWN: &str = "wilson_hop, naive_staggered_hop, improved_staggered_hop, \
                         twisted_mass_twist, wilson_clover, clover_apply";

/// Checks that `links` holds `expected` link fields.
fn want_links(kernel: &str, expected: usize, found: usize) -> Result<(), ReferenceError> {
    if found == expected {
        Ok(())
    } else {
        Err(ReferenceError::Links {
            kernel: kernel.into(),
            expected,
            found,
        })
    }
}

/// out = D src (or a·x + b·D src) for the catalog kernel `kernel` with dense fields
/// `links` in declaration order: `coarse_hop`, out(x) = Σ_μ [Y⁺_μ(x) φ(x + μ̂) +
/// Y⁻_μ(x − μ̂)† φ(x − μ̂)] with links = [Y⁺, Y⁻]; `coarse_op`, out(x) = X(x) φ(x) −
/// Σ_μ [Y⁺_μ(x) φ(x + μ̂) + Y⁻_μ(x − μ̂)† φ(x − μ̂)] with links = [X, Y⁺, Y⁻] (X a
/// site-matrix field).
pub fn apply_cpu_dense<T: Real>(
    kernel: &str,
    variant: &Variant,
    out: &mut ColourSpinorField<T>,
    src: &ColourSpinorField<T>,
    links: &[&DenseLinkField<T>],
    xpay: Option<Xpay<'_, T>>,
) -> Result<(), ReferenceError> {
    match kernel {
        "coarse_hop" => {
            want_links(kernel, 2, links.len())?;
            CoarseHop.apply_cpu(variant, out, src, links[0], links[1], xpay)?
        }
        "coarse_op" => {
            want_links(kernel, 3, links.len())?;
            CoarseOp.apply_cpu(variant, out, src, links[0], links[1], links[2], xpay)?
        }
        other => return Err(ReferenceError::Unknown(other.into())),
    }
    Ok(())
}

/// out = D src (or a·x + b·D src) for the catalog kernel `kernel`, with `links` its
/// gauge fields in declaration order and `clover` its clover field (kernels with one).
pub fn apply_cpu<T: Real>(
    kernel: &str,
    variant: &Variant,
    out: &mut ColourSpinorField<T>,
    src: &ColourSpinorField<T>,
    links: &[&GaugeField<T>],
    clover: Option<&CloverField<T>>,
    xpay: Option<Xpay<'_, T>>,
) -> Result<(), ReferenceError> {
    let clover = || clover.ok_or_else(|| ReferenceError::NoClover(kernel.into()));
    let want = |n: usize| want_links(kernel, n, links.len());
    match kernel {
        "wilson_hop" => {
            want(1)?;
            WilsonHop.apply_cpu(variant, out, src, links[0], xpay)?
        }
        "naive_staggered_hop" => {
            want(1)?;
            NaiveStaggeredHop.apply_cpu(variant, out, src, links[0], xpay)?
        }
        "improved_staggered_hop" => {
            want(2)?;
            ImprovedStaggeredHop.apply_cpu(variant, out, src, links[0], links[1], xpay)?
        }
        "twisted_mass_twist" => {
            want(0)?;
            TwistedMassTwist.apply_cpu(variant, out, src, xpay)?
        }
        "wilson_clover" => {
            want(1)?;
            WilsonClover.apply_cpu(variant, out, src, links[0], clover()?, xpay)?
        }
        "clover_apply" => {
            want(0)?;
            CloverApply.apply_cpu(variant, out, src, clover()?, xpay)?
        }
        other => return Err(ReferenceError::Unknown(other.into())),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use qdsl_core::field::{DenseKind, SiteSubset, SpinorLayout};
    use qdsl_core::lattice::{Lattice, Parity};

    /// On unit links a constant colour vector χ gives D χ = Σ_μ (χ − χ) = 0 for naive
    /// staggered, and the Wilson hop of a constant spinor is 8ψ (periodic): the binding
    /// reaches the right kernels with the right fields.
    #[test]
    fn bindings_reach_the_kernels() {
        let lat = Lattice::new([4; 4]).unwrap();
        let u = GaugeField::<f64>::unit(lat);
        let v = Variant::default();
        let w = |s| SpinorLayout::wilson(lat, SiteSubset::Single(s));
        let psi = ColourSpinorField::from_fn(w(Parity::Odd), |_, _, s, a| {
            qdsl_core::Complex::new((s * 3 + a) as f64, 1.0)
        });
        let mut out = ColourSpinorField::zeros(w(Parity::Even));
        apply_cpu("wilson_hop", &v, &mut out, &psi, &[&u], None, None).unwrap();
        for (o, p) in out.data().iter().zip(psi.data()) {
            assert!((o - p * 8.0).norm() < 1e-12);
        }
        let st = |s| SpinorLayout::staggered(lat, SiteSubset::Single(s));
        let chi = ColourSpinorField::from_fn(st(Parity::Odd), |_, _, _, a| {
            qdsl_core::Complex::new(a as f64 + 1.0, 0.0)
        });
        let mut out = ColourSpinorField::zeros(st(Parity::Even));
        apply_cpu(
            "improved_staggered_hop",
            &v,
            &mut out,
            &chi,
            &[&u, &u],
            None,
            None,
        )
        .unwrap();
        assert!(out.norm_sqr() < 1e-24);
        let e = apply_cpu(
            "improved_staggered_hop",
            &v,
            &mut out,
            &chi,
            &[&u],
            None,
            None,
        );
        assert!(matches!(
            e,
            Err(ReferenceError::Links {
                expected: 2,
                found: 1,
                ..
            })
        ));
        let e = apply_cpu("clover", &v, &mut out, &chi, &[&u], None, None).unwrap_err();
        assert!(e.to_string().contains("no CPU reference binding"), "{e}");
        let e = apply_cpu("clover_apply", &v, &mut out, &psi, &[], None, None).unwrap_err();
        assert!(matches!(e, ReferenceError::NoClover(_)), "{e}");
    }

    /// With unit links (Y⁺ = Y⁻ = 1) the coarse hop of a constant 2 × 24 field φ is
    /// Σ_μ (φ + φ) = 8φ on a periodic lattice; with xpay, a·φ + b·8φ. One link field
    /// only is refused. The coarse operator with X = 3 is (3 − 8) φ.
    #[test]
    fn dense_binding_reaches_the_coarse_kernels() {
        let lat = Lattice::new([2, 2, 2, 4]).unwrap();
        let mut one = DenseLinkField::<f64>::zeros(lat, 48).unwrap();
        for cb in 0..lat.volume() {
            for mu in 0..4 {
                for r in 0..48 {
                    one.link_mut(cb, mu)[r * 48 + r] = qdsl_core::Complex::new(1.0, 0.0);
                }
            }
        }
        let layout = |p| SpinorLayout::new(lat, 1, SiteSubset::Single(p), 2, 24).unwrap();
        let phi = ColourSpinorField::from_fn(layout(Parity::Odd), |_, _, s, a| {
            qdsl_core::Complex::new((s * 24 + a) as f64, -1.0)
        });
        let v = Variant::default();
        let mut out = ColourSpinorField::zeros(layout(Parity::Even));
        apply_cpu_dense("coarse_hop", &v, &mut out, &phi, &[&one, &one], None).unwrap();
        for (o, p) in out.data().iter().zip(phi.data()) {
            assert!((o - p * 8.0).norm() < 1e-12);
        }
        let x = ColourSpinorField::from_fn(layout(Parity::Even), |_, _, s, a| {
            qdsl_core::Complex::new((s * 24 + a) as f64, -1.0)
        });
        let xv = Variant {
            xpay: true,
            ..Variant::default()
        };
        let xpay = Xpay {
            a: 0.5,
            x: &x,
            b: 2.0,
        };
        apply_cpu_dense("coarse_hop", &xv, &mut out, &phi, &[&one, &one], Some(xpay)).unwrap();
        for (o, p) in out.data().iter().zip(phi.data()) {
            assert!((o - p * 16.5).norm() < 1e-12);
        }
        let e = apply_cpu_dense("coarse_hop", &v, &mut out, &phi, &[&one], None).unwrap_err();
        assert!(
            matches!(
                e,
                ReferenceError::Links {
                    expected: 2,
                    found: 1,
                    ..
                }
            ),
            "{e}"
        );
        // The coarse operator with X = 3 · 1: X φ − 8 φ = −5 φ (its source covers the
        // whole lattice); without X (two fields) it is refused.
        let mut three = DenseLinkField::<f64>::zeros_of(DenseKind::SiteMatrix, lat, 48).unwrap();
        for cb in 0..lat.volume() {
            for r in 0..48 {
                three.link_mut(cb, 0)[r * 48 + r] = qdsl_core::Complex::new(3.0, 0.0);
            }
        }
        let full = SpinorLayout::new(lat, 1, SiteSubset::Full, 2, 24).unwrap();
        let phi_full = ColourSpinorField::from_fn(full, |_, _, s, a| {
            qdsl_core::Complex::new((s * 24 + a) as f64, -1.0)
        });
        let links = [&three, &one, &one];
        apply_cpu_dense("coarse_op", &v, &mut out, &phi_full, &links, None).unwrap();
        for (o, p) in out.data().iter().zip(phi.data()) {
            assert!((o + p * 5.0).norm() < 1e-12, "{o} vs {p}");
        }
        let e = apply_cpu_dense("coarse_op", &v, &mut out, &phi_full, &links[1..], None);
        assert!(matches!(
            e,
            Err(ReferenceError::Links {
                expected: 3,
                found: 2,
                ..
            })
        ));
        let e = apply_cpu_dense("wilson_hop", &v, &mut out, &phi, &[], None).unwrap_err();
        assert!(matches!(e, ReferenceError::Unknown(_)), "{e}");
    }
}
