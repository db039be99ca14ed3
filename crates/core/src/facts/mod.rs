//! Facts: the tables and lists the rest of gpuenv is built on. The bottom layer: nothing
//! here imports from the rest of the crate.

pub mod vars;
