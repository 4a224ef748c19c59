//! The emitters: lowered spec → CUDA C++ source ([`cuda`]) or CPU Rust tokens ([`rust`]).

pub mod cuda;
pub mod dense_rust;
pub mod rust;
