//! Gauge-field generation on the GPU, in f64:
//!
//! | item | what it is |
//! |---|---|
//! | [`GpuHeatbath`], [`DeviceGauge`] | the heatbath and over-relaxation sweeps of [`qdsl_core::gauge::generate::Heatbath`] as generated kernels updating links kept on the device (the same random streams: a GPU sweep equals the CPU sweep to rounding) |
//! | [`GpuForce`] | the force back end of quenched HMC ([`qdsl_core::gauge::generate::Hmc`]): each force evaluation on the GPU, the rest of the trajectory on the CPU |

mod force;
mod heatbath;

pub use force::GpuForce;
pub use heatbath::{heatbath_program, DeviceGauge, GpuHeatbath};
