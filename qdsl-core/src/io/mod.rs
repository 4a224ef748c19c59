//! Gauge-configuration files.
