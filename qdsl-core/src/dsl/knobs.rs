//! The knob values a spec allows: a spec may restrict a knob (e.g. staggered links with
//! phases folded in are not SU(3), so recon 12 does not apply to them) with
//! `#[knobs(recon = [18])]`; unlisted knobs allow every value.

use super::variant::{OutputSites, Recon, StorageFormat, TimeBoundary, Variant};
use super::DslError;
use crate::lattice::Parity;
use proc_macro2::TokenStream;
use quote::quote;

/// The spellings of the storage formats, in the order of [`StorageFormat::SPINOR`].
const FORMATS: [&str; 8] = [
    "f64", "f32", "f16", "bf16", "fixed16", "fixed8", "packed20", "packed30",
];

/// For each knob, which of its values the spec allows, in the order of
/// [`KnobSet::VALUES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KnobSet {
    /// even, odd, full.
    pub sites: [bool; 3],
    /// false, true.
    pub dagger: [bool; 2],
    /// false, true.
    pub xpay: [bool; 2],
    /// f64, f32, f16, bf16, fixed16, fixed8, packed20, packed30.
    pub spinor: [bool; 8],
    /// f64, f32, f16, bf16, fixed16, fixed8, packed20, packed30 (the spinor-only packed
    /// formats never allowed).
    pub gauge: [bool; 8],
    /// 18, 12, 8.
    pub recon: [bool; 3],
    /// periodic, antiperiodic.
    pub boundary: [bool; 2],
    /// off, blocks (Dirichlet walls of any block size).
    pub dirichlet: [bool; 2],
}

impl Default for KnobSet {
    /// Every value of every knob.
    fn default() -> Self {
        KnobSet {
            sites: [true; 3],
            dagger: [true; 2],
            xpay: [true; 2],
            spinor: [true; 8],
            gauge: StorageFormat::SPINOR.map(|f| !f.spinor_only()),
            recon: [true; 3],
            boundary: [true; 2],
            dirichlet: [true; 2],
        }
    }
}

impl KnobSet {
    /// The knobs and the spellings of their values, as `#[knobs(...)]` writes them.
    pub const VALUES: [(&'static str, &'static [&'static str]); 8] = [
        ("sites", &["even", "odd", "full"]),
        ("dagger", &["false", "true"]),
        ("xpay", &["false", "true"]),
        ("spinor", &FORMATS),
        ("gauge", &FORMATS),
        ("recon", &["18", "12", "8"]),
        ("boundary", &["periodic", "antiperiodic"]),
        ("dirichlet", &["off", "blocks"]),
    ];

    /// The allowed-value flags of knob `name` (None for an unknown knob).
    pub fn flags_mut(&mut self, name: &str) -> Option<&mut [bool]> {
        Some(match name {
            "sites" => &mut self.sites[..],
            "dagger" => &mut self.dagger[..],
            "xpay" => &mut self.xpay[..],
            "spinor" => &mut self.spinor[..],
            "gauge" => &mut self.gauge[..],
            "recon" => &mut self.recon[..],
            "boundary" => &mut self.boundary[..],
            "dirichlet" => &mut self.dirichlet[..],
            _ => return None,
        })
    }

    /// The index of each knob's value in a variant, in the order of [`Self::VALUES`].
    fn indices(v: &Variant) -> [usize; 8] {
        let fmt = |f: StorageFormat| {
            StorageFormat::SPINOR
                .iter()
                .position(|&g| g == f)
                .unwrap_or_default()
        };
        [
            match v.sites {
                OutputSites::Parity(Parity::Even) => 0,
                OutputSites::Parity(Parity::Odd) => 1,
                OutputSites::Full => 2,
            },
            v.dagger as usize,
            v.xpay as usize,
            fmt(v.spinor),
            fmt(v.gauge),
            match v.recon {
                Recon::R18 => 0,
                Recon::R12 => 1,
                Recon::R8 => 2,
            },
            match v.boundary {
                TimeBoundary::Periodic => 0,
                TimeBoundary::Antiperiodic => 1,
            },
            v.dirichlet.is_some() as usize,
        ]
    }

    /// Ok when every knob of `v` has an allowed value; else which knob and value not.
    pub fn check(&self, kernel: &str, v: &Variant) -> Result<(), DslError> {
        let flags: [&[bool]; 8] = [
            &self.sites,
            &self.dagger,
            &self.xpay,
            &self.spinor,
            &self.gauge,
            &self.recon,
            &self.boundary,
            &self.dirichlet,
        ];
        for ((k, &(name, values)), f) in Self::indices(v).iter().zip(&Self::VALUES).zip(flags) {
            if !f[*k] {
                let allowed: Vec<&str> = values
                    .iter()
                    .zip(f)
                    .filter(|(_, &ok)| ok)
                    .map(|(v, _)| *v)
                    .collect();
                return Err(DslError::UnsupportedVariant {
                    kernel: kernel.into(),
                    knob: name,
                    reason: format!(
                        "{name} = {} is excluded by the spec; allowed: {}",
                        values[*k],
                        allowed.join(", ")
                    ),
                });
            }
        }
        Ok(())
    }

    /// Rust tokens that rebuild this value.
    pub fn rebuild_tokens(&self) -> TokenStream {
        let KnobSet {
            sites,
            dagger,
            xpay,
            spinor,
            gauge,
            recon,
            boundary,
            dirichlet,
        } = self;
        quote!(::qdsl_core::dsl::knobs::KnobSet {
            sites: [#(#sites),*],
            dagger: [#(#dagger),*],
            xpay: [#(#xpay),*],
            spinor: [#(#spinor),*],
            gauge: [#(#gauge),*],
            recon: [#(#recon),*],
            boundary: [#(#boundary),*],
            dirichlet: [#(#dirichlet),*],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restricted_knobs_reject_variants_by_name() {
        let mut k = KnobSet::default();
        assert!(Variant::all().iter().all(|v| k.check("t", v).is_ok()));
        if let Some(f) = k.flags_mut("recon") {
            f[1] = false;
        }
        let v12 = Variant {
            recon: Recon::R12,
            ..Variant::default()
        };
        let err = k.check("t", &v12).unwrap_err();
        assert_eq!(
            err.to_string(),
            "kernel `t` does not support recon: recon = 12 is excluded by the spec; allowed: 18, 8"
        );
        assert!(k.check("t", &Variant::default()).is_ok());
        assert_eq!(
            Variant::all()
                .iter()
                .filter(|v| k.check("t", v).is_ok())
                .count(),
            48
        );
        assert!(k.flags_mut("colour").is_none());
    }
}
