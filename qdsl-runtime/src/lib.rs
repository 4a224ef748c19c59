//! qdsl runtime.
