//! Gauge-field generation on the GPU, in f64:
//!
//! | item | what it is |
//! |---|---|
//! | [`GpuHeatbath`], [`DeviceGauge`] | the heatbath and over-relaxation sweeps of [`qdsl_core::gauge::generate::Heatbath`] as generated kernels updating links kept on the device (the same random streams: a GPU sweep equals the CPU sweep to rounding) |
//! | [`GpuHmc`], [`DeviceMomenta`] | whole quenched HMC trajectories on the device: momenta, kicks with the action's force kernels, U ← e^{εP} U, K and S reduced on the device, the CPU's schedule ([`qdsl_core::gauge::generate::Hmc`]) |
//! | [`HmcKernels`], [`DeviceTraces`] | the field kernels and reductions; the action's per-term trace kernels (action, plaquette) |
//! | [`GpuForce`] | the force back end of the CPU's HMC: each force evaluation on the GPU, the rest on the CPU |
//! | [`reference`] | the physics reference: quenched Wilson ensembles at β = 5.7, 6.0, 6.2 against the published plaquettes |

mod force;
mod heatbath;
mod hmc;
mod kernels;
pub mod reference;

pub use force::GpuForce;
pub use heatbath::{heatbath_program, DeviceGauge, GpuHeatbath};
pub use hmc::{DeviceMomenta, GpuHmc};
pub use kernels::{DevicePlaquette, DeviceTraces, HmcKernels};
