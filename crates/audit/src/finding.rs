//! A finding of the audit: the core's one finding type, rendered to text or JSON by
//! `report`.

pub use gpuenv_core::finding::{Finding, Status};
