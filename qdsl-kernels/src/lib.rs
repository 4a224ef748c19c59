//! # qdsl-kernels
//!
//! The kernel catalog: the library's operators, each written once as a `stencil!` spec.
//! Every variant (parity, dagger, xpay, formats, recon, boundary) is a knob of the one
//! spec ([`qdsl_core::dsl::Variant`]).
//!
//! | kernel | operator |
//! |---|---|
//! | [`WilsonHop`] | the Wilson hopping term H (DESIGN.md conventions) |
//! | [`NaiveStaggeredHop`] | the naive staggered hop with phases folded into the links |
//! | [`ImprovedStaggeredHop`] | fat one-hop + long three-hop links (asqtad, HISQ) |

mod staggered;
mod wilson;

pub use staggered::{ImprovedStaggeredHop, NaiveStaggeredHop};
pub use wilson::WilsonHop;
