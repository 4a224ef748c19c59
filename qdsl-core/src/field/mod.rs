//! Host fields: data on the CPU, indexed by checkerboard site index (even sites first).

mod gauge_field;

pub use gauge_field::GaugeField;
