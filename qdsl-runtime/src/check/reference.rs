//! The CPU reference of a catalog kernel: the generated `apply_cpu` of the kernel named,
//! with the fields passed in declaration order.

use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::{DslError, Variant};
use qdsl_core::field::{CloverField, ColourSpinorField, GaugeField};
use qdsl_core::Real;
use qdsl_kernels::{
    CloverApply, ImprovedStaggeredHop, NaiveStaggeredHop, TwistedMassTwist, WilsonClover, WilsonHop,
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

/// The kernels with a CPU reference binding.
pub const KNOWN: &str = "wilson_hop, naive_staggered_hop, improved_staggered_hop, \
                         twisted_mass_twist, wilson_clover, clover_apply";

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
    let want = |n: usize| {
        if links.len() == n {
            Ok(())
        } else {
            Err(ReferenceError::Links {
                kernel: kernel.into(),
                expected: n,
                found: links.len(),
            })
        }
    };
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
    use qdsl_core::field::{SiteSubset, SpinorLayout};
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
}
